/* Allocates and touches memory in 1 MiB blocks until the OOM killer
 * takes it (the test runs it in a memory cgroup), or until `max_mib`
 * (default 4096) is reached, then exits 3. With a step ("oom_hog STEP_MIB
 * SECONDS"), grows by STEP_MIB each second for SECONDS, printing its
 * RSS goal each time, then waits SECONDS more, waking each second: a
 * stair for the RSS timeline. OOM_HOG_PACE_MS=N in the environment: a
 * pause of N ms before each MiB (a process that grows for a while, as a
 * leaking service does, rather than at once). OOM_HOG_GO=FILE: waits
 * (up to 30 s) for FILE to exist before it allocates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024 * 1024)

static void touch(size_t mib)
{
	const char *pace = getenv("OOM_HOG_PACE_MS");
	long ms = pace ? atol(pace) : 0;

	for (size_t i = 0; i < mib; i++) {
		if (ms > 0)
			usleep((useconds_t)ms * 1000);
		char *p = malloc(MIB);

		if (!p) {
			fprintf(stderr, "oom_hog: malloc failed after %zu MiB\n", i);
			exit(4);
		}
		memset(p, 0x5a, MIB);
	}
}

int main(int argc, char **argv)
{
	if (argc == 3) {
		size_t step = strtoul(argv[1], NULL, 10);
		unsigned secs = (unsigned)strtoul(argv[2], NULL, 10);

		for (unsigned s = 1; s <= secs; s++) {
			touch(step);
			printf("%zu\n", step * s);
			fflush(stdout);
			sleep(1);
		}
		/* Awake each second: a process that runs has its RSS sampled. */
		for (unsigned s = 0; s < secs; s++)
			sleep(1);
		return 0;
	}
	size_t max = argc > 1 ? strtoul(argv[1], NULL, 10) : 4096;

	printf("%d\n", (int)getpid());
	fflush(stdout);
	const char *go = getenv("OOM_HOG_GO");

	for (int i = 0; go && i < 3000 && access(go, F_OK) != 0; i++)
		usleep(10000);
	touch(max);
	return 3;
}
