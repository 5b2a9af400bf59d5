/* Shared by the unit tests that read their output back with the
 * independent reader, `go tool pprof`. */
#ifndef FR_TESTS_GOPPROF_H
#define FR_TESTS_GOPPROF_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs `GO tool pprof ARGS FILE`, its stderr kept in TMPDIR/stderr, and
 * returns its stdout as a malloc'd string; on failure prints the command's
 * status and stderr and returns NULL. */
static inline char *fr_test_go_pprof(const char *go, const char *args, const char *file,
				     const char *tmpdir)
{
	char cmd[2048];
	char *out = NULL, *grown;
	size_t len = 0, cap = 0, n;
	FILE *f;
	int status;

	snprintf(cmd, sizeof(cmd), "'%s' tool pprof %s '%s' 2>'%s/stderr'", go, args, file, tmpdir);
	f = popen(cmd, "r");
	if (!f)
		return NULL;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			grown = realloc(out, cap);
			if (!grown)
				break;
			out = grown;
		}
		n = fread(out + len, 1, 4096, f);
		if (n == 0)
			break;
		len += n;
	}
	status = pclose(f);
	if (out)
		out[len] = '\0';
	if (status != 0) {
		fprintf(stderr, "command failed (status %d): %s\n", status, cmd);
		snprintf(cmd, sizeof(cmd), "cat '%s/stderr' >&2", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "(no stderr)\n");
		free(out);
		return NULL;
	}
	return out;
}

#endif
