/* Process storms for tests/bench/blackbox_cost.sh: what recording every
 * exec and exit costs the programs that start them.
 *
 *   exec_storm exec RATE SECONDS
 *	forks a child RATE times a second (0: as fast as it can), each of
 *	which execs /bin/true, for SECONDS of wall time;
 *   exec_storm fork RATE SECONDS
 *	the same, each child exiting at once (_exit(0)) without an exec;
 *   exec_storm kill RATE SECONDS
 *	the same, each child waiting (pause) until the parent kills it with
 *	SIGTERM: a death by a signal another process sent, whose sender the
 *	black box keeps (signal_generate) for the exit.
 *
 * At most MAX_INFLIGHT children live at once (a machine too slow for the
 * rate makes it fall behind, never pile up processes); a tick late by
 * more than a second starts the count again rather than bursting.
 *
 * Prints "OPS WALL_S CPU_S": the children started (all of them reaped),
 * the wall time it took, and the CPU time of the storm (its own and its
 * children's, getrusage). Ops per second and CPU per op are what a
 * recorder's cost changes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_INFLIGHT 16

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_of(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void sleep_until(double t)
{
	struct timespec ts;
	double d = t - now();

	if (d <= 0)
		return;
	ts.tv_sec = (time_t)d;
	ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	char *const args[] = {"true", NULL};
	double rate, secs, t0, next, end;
	uint64_t ops = 0;
	int exec_mode, kill_mode, inflight = 0;

	if (argc != 4 ||
	    (strcmp(argv[1], "exec") && strcmp(argv[1], "fork") && strcmp(argv[1], "kill"))) {
		fprintf(stderr, "usage: exec_storm exec|fork|kill RATE SECONDS\n");
		return 2;
	}
	exec_mode = strcmp(argv[1], "exec") == 0;
	kill_mode = strcmp(argv[1], "kill") == 0;
	rate = atof(argv[2]);
	secs = atof(argv[3]);
	t0 = now();
	next = t0;
	end = t0 + secs;
	while (now() < end) {
		pid_t pid;

		while (inflight > 0 && waitpid(-1, NULL, WNOHANG) > 0)
			inflight--;
		if (inflight >= MAX_INFLIGHT && wait(NULL) > 0)
			inflight--;
		if (rate > 0) {
			sleep_until(next);
			next = next + 1.0 / rate < now() - 1.0 ? now() : next + 1.0 / rate;
		}
		pid = fork();
		if (pid < 0) {
			perror("fork");
			continue;
		}
		if (pid == 0) {
			if (exec_mode)
				execv("/bin/true", args);
			while (kill_mode)
				pause();
			_exit(0);
		}
		if (kill_mode)
			kill(pid, SIGTERM);
		inflight++;
		ops++;
	}
	while (inflight > 0 && wait(NULL) > 0)
		inflight--;
	printf("%llu %.3f %.3f\n", (unsigned long long)ops, now() - t0,
	       cpu_of(RUSAGE_SELF) + cpu_of(RUSAGE_CHILDREN));
	return 0;
}
