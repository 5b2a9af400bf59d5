/* The per-thread /proc readers of recorder/tracking/proc_threads.h against a proc
 * tree built in a temporary directory, and against this process's own
 * threads:
 *
 *   thread   stat (a name with spaces and parentheses), wchan, syscall of
 *            a thread under /proc/PID/task.
 *   syscall  "running", "-1 ..." (blocked outside a call), a number,
 *            and text that is none of these.
 *   wchan    "0" and names that are not identifiers say nothing.
 *   gone     a thread or process without a directory answers -ENOENT.
 *   names    states and common blocking calls by name.
 *   listing  the threads of a process, bounded by `max`.
 *   live     a thread of this test blocked in read() on a pipe reads as
 *            sleeping in read (syscall), as /proc says of it.
 *   may_read the kernel's rule for who may read a process's wchan,
 *            syscall and stack: every uid and gid the asker's, and the
 *            files its (not dumpable: root's); this process may read
 *            itself.
 */
#include "recorder/tracking/proc_threads.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/check.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[512], dir[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (slash = strchr(dir + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
	f = fopen(path, "we");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(1);
	}
}

static void test_thread(void)
{
	struct fr_proc_thread t;
	char line[64];
	int ret;

	put("100/task/101/stat", "101 (a (b) c) S 1 100 100 0 -1 4194560 1 0 0 0 31 7 0 0 20 0 "
				 "5 0 4242 1000 10\n");
	put("100/task/101/wchan", "pipe_read");
	snprintf(line, sizeof(line), "%d 0x3 0x7ffc 0x1 0 0 0 0x7ffc0 0x7f00\n", (int)SYS_read);
	put("100/task/101/syscall", line);
	ret = fr_proc_read_thread(root, 100, 101, &t);
	CHECK(ret == 0, "thread: %d", ret);
	CHECK(t.tid == 101 && strcmp(t.name, "a (b) c") == 0 && t.state == 'S' && t.ticks == 38 &&
		      t.start == 4242,
	      "tid %u name \"%s\" state %c ticks %" PRIu64 " start %" PRIu64, t.tid, t.name,
	      t.state, t.ticks, t.start);
	CHECK(strcmp(t.wchan, "pipe_read") == 0, "wchan \"%s\"", t.wchan);
	CHECK(t.syscall == SYS_read, "syscall %" PRId64 ", want read", t.syscall);

	/* No wchan nor syscall file (or no rights to them): stat alone. */
	put("100/task/102/stat", "102 (w) R 1 100 100 0 -1 0 1 0 0 0 5 5 0 0 20 0 5 0 99 1 1\n");
	ret = fr_proc_read_thread(root, 100, 102, &t);
	CHECK(ret == 0 && t.state == 'R' && t.ticks == 10 && !t.wchan[0] &&
		      t.syscall == FR_PROC_SYSCALL_UNKNOWN,
	      "stat alone: %d state %c wchan \"%s\" syscall %" PRId64, ret, t.state, t.wchan,
	      t.syscall);
}

static void test_syscall_wchan(void)
{
	struct fr_proc_thread t;

	CHECK(fr_proc_parse_syscall("running\n") == FR_PROC_SYSCALL_RUNNING, "running");
	CHECK(fr_proc_parse_syscall("-1 0x7ffc 0x7f00\n") == FR_PROC_SYSCALL_NONE, "-1");
	CHECK(fr_proc_parse_syscall("202 0x1 0x2\n") == 202, "202");
	CHECK(fr_proc_parse_syscall("7") == 7, "a bare number");
	CHECK(fr_proc_parse_syscall("") == FR_PROC_SYSCALL_UNKNOWN, "empty");
	CHECK(fr_proc_parse_syscall("12x 0") == FR_PROC_SYSCALL_UNKNOWN, "12x");
	CHECK(fr_proc_parse_syscall("-5 0") == FR_PROC_SYSCALL_UNKNOWN, "-5");

	put("200/task/201/stat", "201 (x) S 1 200 200 0 -1 0 1 0 0 0 1 1 0 0 20 0 1 0 1 1 1\n");
	put("200/task/201/wchan", "0");
	CHECK(fr_proc_read_thread(root, 200, 201, &t) == 0 && !t.wchan[0],
	      "wchan \"0\" read as \"%s\"", t.wchan);
	put("200/task/201/wchan", "bad name\033[31m");
	CHECK(fr_proc_read_thread(root, 200, 201, &t) == 0 && !t.wchan[0],
	      "a wchan that is no identifier read as \"%s\"", t.wchan);
	put("200/task/201/wchan", "do_epoll_wait\n");
	CHECK(fr_proc_read_thread(root, 200, 201, &t) == 0 && strcmp(t.wchan, "do_epoll_wait") == 0,
	      "wchan with a newline read as \"%s\"", t.wchan);
}

static void test_gone(void)
{
	struct fr_proc_thread t;

	CHECK(fr_proc_read_thread(root, 999, 999, &t) == -ENOENT, "a gone process");
	CHECK(fr_proc_read_thread(root, 100, 999, &t) == -ENOENT, "a gone thread");
}

static void test_names(void)
{
	CHECK(strcmp(fr_proc_state_name('R'), "running") == 0, "R");
	CHECK(strcmp(fr_proc_state_name('S'), "sleeping") == 0, "S");
	CHECK(strcmp(fr_proc_state_name('D'), "uninterruptible") == 0, "D");
	CHECK(strcmp(fr_proc_state_name('T'), "stopped") == 0, "T");
	CHECK(strcmp(fr_proc_state_name('Z'), "zombie") == 0, "Z");
	CHECK(strcmp(fr_proc_state_name('?'), "unknown") == 0, "?");
	CHECK(strcmp(fr_proc_syscall_name(SYS_read), "read") == 0, "read");
	CHECK(strcmp(fr_proc_syscall_name(SYS_futex), "futex") == 0, "futex");
	CHECK(strcmp(fr_proc_syscall_name(SYS_clock_nanosleep), "clock_nanosleep") == 0,
	      "clock_nanosleep");
	CHECK(fr_proc_syscall_name(SYS_getpid) == NULL, "getpid is no blocking call");
	CHECK(fr_proc_syscall_name(-1) == NULL, "-1");
}

static void count(void *arg, uint32_t tid)
{
	(void)tid;
	(*(int *)arg)++;
}

static void test_listing(void)
{
	int n = 0;

	put("100/task/notatid", "");
	CHECK(fr_proc_each_tid(root, 100, 100, count, &n) == 2 && n == 2, "threads: %d", n);
	n = 0;
	CHECK(fr_proc_each_tid(root, 100, 1, count, &n) == 1 && n == 1, "bounded: %d", n);
	CHECK(fr_proc_each_tid(root, 998, 100, count, &n) == -ENOENT, "a gone process");
}

static int pipe_fds[2];
static volatile pid_t reader_tid;

static void *reader(void *arg)
{
	char c;

	(void)arg;
	reader_tid = (pid_t)syscall(SYS_gettid);
	if (read(pipe_fds[0], &c, 1) < 0)
		perror("read");
	return NULL;
}

static void test_live(void)
{
	struct timespec ms = {0, 10 * 1000 * 1000};
	struct fr_proc_thread t = {0};
	pthread_t th;
	int ret = -1;

	if (pipe(pipe_fds) < 0 || pthread_create(&th, NULL, reader, NULL) != 0) {
		CHECK(0, "cannot start the reader");
		return;
	}
	/* Until the reader is in read(): bounded by the test's timeout. */
	for (int i = 0; i < 500; i++) {
		nanosleep(&ms, NULL);
		if (!reader_tid)
			continue;
		ret = fr_proc_read_thread("/proc", (uint32_t)getpid(), (uint32_t)reader_tid, &t);
		if (ret == 0 && t.state == 'S' && t.syscall == SYS_read)
			break;
	}
	CHECK(ret == 0 && t.state == 'S', "live reader: %d state %c", ret, t.state);
	/* syscall needs ptrace rights over ourselves: we have them, unless
	 * a security module says otherwise. */
	CHECK(t.syscall == SYS_read || t.syscall == FR_PROC_SYSCALL_UNKNOWN,
	      "live reader in syscall %" PRId64 ", want read", t.syscall);
	if (write(pipe_fds[1], "x", 1) != 1)
		perror("write");
	pthread_join(th, NULL);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
}

static void test_may_read(void)
{
	uint32_t me = (uint32_t)geteuid(), mg = (uint32_t)getegid(), other = me + 1;
	char line[256];

	snprintf(line, sizeof(line), "Name:\tx\nUid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\n", me,
		 me, me, me, mg, mg, mg, mg);
	put("400/status", line);
	CHECK(fr_proc_may_read(root, 400, me, mg) == 1, "a process of the asker's ids is readable");
	CHECK(fr_proc_may_read(root, 400, me, mg + 1) == 0, "another gid is not");
	/* Set-user-ID: the effective and saved uids are someone else's. */
	snprintf(line, sizeof(line), "Uid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\n", me, other,
		 other, other, mg, mg, mg, mg);
	put("401/status", line);
	CHECK(fr_proc_may_read(root, 401, me, mg) == 0, "a set-user-ID process is not readable");
	snprintf(line, sizeof(line), "Uid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\n", me, me, me, me,
		 mg, other, other, mg);
	put("402/status", line);
	CHECK(fr_proc_may_read(root, 402, me, mg) == 0, "a set-group-ID process is not readable");
	/* All its ids the asker's, its files someone else's: not dumpable. */
	snprintf(line, sizeof(line), "Uid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\n", other, other,
		 other, other, mg, mg, mg, mg);
	put("403/status", line);
	CHECK(fr_proc_may_read(root, 403, other, mg) == 0,
	      "a process whose files are not its user's is not readable");
	put("404/status", "Name:\tx\nUid:\t1\n");
	CHECK(fr_proc_may_read(root, 404, 1, mg) == 0, "a status cut short is not readable");
	CHECK(fr_proc_may_read(root, 999, me, mg) == 0, "a gone process is not readable");
	if (getuid() == geteuid() && getgid() == getegid())
		CHECK(fr_proc_may_read("/proc", (uint32_t)getpid(), me, mg) == 1,
		      "this process may read itself");
}

int main(void)
{
	char cmd[128];

	snprintf(root, sizeof(root), "/tmp/fr-test-proc-threads-XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_thread();
	test_syscall_wchan();
	test_gone();
	test_names();
	test_listing();
	test_live();
	test_may_read();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", root);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
