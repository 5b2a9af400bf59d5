/* Mounts a file system that never answers an open (tests/unit/fuse_hang.h)
 * and prints its directory; unmounts it and exits on SIGTERM, which makes
 * every request still waiting on it fail. Exits 77 when it cannot mount
 * (no root or no /dev/fuse). For stop_during_dump.sh; with the argument
 * "open", opens are answered and only reads never are (labels_stall.sh
 * maps a file whose pages never come in); with "exec FILE N", every name
 * is FILE, read from it, and only its first N opens are answered (a
 * program run from there whose executable cannot be opened again). */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/fuse_hang.h"

int main(int argc, char **argv)
{
	struct fuse_hang h;
	sigset_t mask;
	int sig, ret;

	fuse_hang_answer_open = argc > 1 && strcmp(argv[1], "open") == 0;
	if (argc > 3 && strcmp(argv[1], "exec") == 0) {
		fuse_hang_file = open(argv[2], O_RDONLY | O_CLOEXEC);
		fuse_hang_opens = atoi(argv[3]);
		if (fuse_hang_file < 0) {
			perror(argv[2]);
			return 1;
		}
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	ret = fuse_hang_start(&h);
	if (ret < 0) {
		fprintf(stderr, "fuse_hold: cannot mount: %s\n", strerror(-ret));
		return 77;
	}
	printf("%s\n", h.dir);
	fflush(stdout);
	sigwait(&mask, &sig);
	fuse_hang_stop(&h);
	return 0;
}
