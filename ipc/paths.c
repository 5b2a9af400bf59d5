/* The daemon's default socket path (ipc/paths.h). */
#include "ipc/paths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *fr_ipc_default_socket(void)
{
	const char *xdg;
	char *path = NULL;

	if (geteuid() == 0)
		return strdup(FR_IPC_SYSTEM_SOCKET);

	/* XDG_RUNTIME_DIR must be absolute to be used at all (basedir
	 * specification); a relative one would depend on the cwd. */
	xdg = getenv("XDG_RUNTIME_DIR");
	if (xdg && xdg[0] == '/') {
		if (asprintf(&path, "%s/flightrec.sock", xdg) < 0)
			return NULL;
		return path;
	}
	if (asprintf(&path, "/tmp/flightrec-%u/flightrec.sock", (unsigned)geteuid()) < 0)
		return NULL;
	return path;
}
