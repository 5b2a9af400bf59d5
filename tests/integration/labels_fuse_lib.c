/* A process whose libflightrec.so is a file nobody will ever read, for
 * labels_stall.sh:
 *
 *   labels_fuse_lib FILE SECONDS
 *
 * maps FILE (named libflightrec.so.N on a file system that answers opens
 * and never reads) executable, as the dynamic linker maps a library, so
 * that the recorder takes it for libflightrec and looks for the registry
 * in it; it is not linked with the real one, so that mapping is the only
 * one it finds. Then spins SECONDS in fuse_lib_spin. Prints "ready".
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

void fuse_lib_spin(int64_t until);

static volatile uint64_t sink;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) void fuse_lib_spin(int64_t until)
{
	while (now_ns() < until)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i;
}

int main(int argc, char **argv)
{
	int64_t until;
	void *m;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: labels_fuse_lib FILE SECONDS\n");
		return 2;
	}
	until = now_ns() + atoll(argv[2]) * 1000000000;
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	m = fd < 0 ? MAP_FAILED : mmap(NULL, 65536, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		perror(argv[1]);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	fuse_lib_spin(until);
	return 0;
}
