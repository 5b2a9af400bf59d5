/* freeze_thread TID SECONDS: stops one thread of another process (not the
 * whole process, as SIGSTOP would) for SECONDS, with ptrace's
 * PTRACE_SEIZE + PTRACE_INTERRUPT, then lets it go. Prints "frozen" once
 * the thread has stopped. For stall.sh: the recorder's ingest thread is
 * its main thread, so a frozen pid is a stalled recorder whose request
 * threads still answer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	pid_t tid;
	int status;

	if (argc != 3) {
		fprintf(stderr, "usage: freeze_thread TID SECONDS\n");
		return 2;
	}
	tid = (pid_t)atoi(argv[1]);
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0 ||
	    ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) {
		fprintf(stderr, "freeze_thread: ptrace %d: %s\n", tid, strerror(errno));
		return 1;
	}
	if (waitpid(tid, &status, __WALL) < 0) {
		fprintf(stderr, "freeze_thread: waitpid %d: %s\n", tid, strerror(errno));
		return 1;
	}
	printf("frozen\n");
	fflush(stdout);
	sleep((unsigned)atoi(argv[2]));
	if (ptrace(PTRACE_DETACH, tid, NULL, NULL) < 0) {
		fprintf(stderr, "freeze_thread: detach %d: %s\n", tid, strerror(errno));
		return 1;
	}
	return 0;
}
