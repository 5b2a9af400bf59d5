/* Process exits from the kernel's proc connector (recorder/tracking/procwatch.h)
 * and the exit triggers built on them (recorder/triggers/triggers.h), against the
 * running kernel, without a daemon.
 *
 *   watcher  children that exit(3) (after a thread of theirs exited), die
 *            of SIGSEGV (raise) and exit(0): the callback reports each
 *            child once, pid == tgid, with the wait status waitpid saw
 *            and SIGCHLD as the signal to the parent; never the thread.
 *   engine   a session whose targets are the children's command name
 *            fires for the exit(3) and the SIGSEGV child, not for the
 *            exit(0) one, with reasons "pid N (fr-pw-target) exited with
 *            status 3" and "pid N (fr-pw-target) killed by SIGSEGV"; a
 *            session for another name never fires; a session added by a
 *            reload for one pid fires for that pid; a session for a
 *            cgroup fires for a child that moved there and exec'd (when
 *            cgroup v2 can be written here).
 *
 * Exit 0 pass, 1 fail, 77 skip (not root, no proc connector), with the
 * reason on stderr. */
#include "recorder/tracking/procwatch.h"
#include "recorder/triggers/triggers.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/util/log.h"
#include "core/util/time.h"
#include "tests/unit/check.h"

#define SKIP 77
#define NS_PER_MS ((int64_t)1000000)
#define TARGET_COMM "fr-pw-target"

/* ---- children ---------------------------------------------------------- */

enum child_kind { CHILD_EXIT3, CHILD_SEGV, CHILD_EXIT0 };

static void *short_thread(void *arg)
{
	int fd = *(int *)arg;
	uint32_t tid = (uint32_t)syscall(SYS_gettid);

	if (write(fd, &tid, sizeof(tid)) != sizeof(tid))
		_exit(100);
	return NULL;
}

/* Forks a child named TARGET_COMM that ends as `kind` says. For
 * CHILD_EXIT3, *thread_tid receives the tid of a thread it ran first. */
static pid_t spawn(enum child_kind kind, uint32_t *thread_tid)
{
	int pfd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		prctl(PR_SET_NAME, TARGET_COMM, 0, 0, 0);
		/* Long enough for the fork and rename to be read while the
		 * child lives. */
		usleep(50000);
		switch (kind) {
		case CHILD_EXIT3: {
			pthread_t th;

			if (pthread_create(&th, NULL, short_thread, &pfd[1]) != 0)
				_exit(101);
			pthread_join(th, NULL);
			usleep(20000);
			_exit(3);
		}
		case CHILD_SEGV: {
			struct rlimit none = {0, 0};

			setrlimit(RLIMIT_CORE, &none);
			signal(SIGSEGV, SIG_DFL);
			raise(SIGSEGV);
			_exit(102);
		}
		case CHILD_EXIT0: _exit(0);
		}
		_exit(103);
	}
	close(pfd[1]);
	if (pid > 0 && kind == CHILD_EXIT3) {
		uint32_t tid = 0;

		/* Read even when unwanted: the thread would die of SIGPIPE. */
		if (read(pfd[0], &tid, sizeof(tid)) != sizeof(tid))
			tid = 0;
		if (thread_tid)
			*thread_tid = tid;
	}
	close(pfd[0]);
	return pid;
}

/* ---- watcher ------------------------------------------------------------- */

struct seen {
	uint32_t pid, tgid, code, sig;
};

struct seen_list {
	struct seen e[4096];
	int n;
};

static void on_exit_seen(void *arg, uint32_t pid, uint32_t tgid, uint32_t code, uint32_t sig)
{
	struct seen_list *l = arg;

	if (l->n < (int)(sizeof(l->e) / sizeof(l->e[0])))
		l->e[l->n++] = (struct seen){pid, tgid, code, sig};
}

static const struct seen *find_seen(const struct seen_list *l, uint32_t pid)
{
	for (int i = 0; i < l->n; i++)
		if (l->e[i].pid == pid || l->e[i].tgid == pid)
			return &l->e[i];
	return NULL;
}

static int count_seen(const struct seen_list *l, uint32_t pid)
{
	int n = 0;

	for (int i = 0; i < l->n; i++)
		n += l->e[i].pid == pid || l->e[i].tgid == pid;
	return n;
}

static int test_watcher(struct fr_procwatch *w)
{
	static struct seen_list seen;
	const struct fr_procwatch_handler exits = {.exit = on_exit_seen, .arg = &seen};
	pid_t kids[3];
	int status[3];
	uint32_t tid = 0;
	int64_t end;

	kids[0] = spawn(CHILD_EXIT3, &tid);
	kids[1] = spawn(CHILD_SEGV, NULL);
	kids[2] = spawn(CHILD_EXIT0, NULL);
	for (int i = 0; i < 3; i++) {
		CHECK(kids[i] > 0, "fork: %s", strerror(errno));
		if (kids[i] <= 0 || waitpid(kids[i], &status[i], 0) != kids[i])
			return 1;
	}
	CHECK(tid != 0, "the exit(3) child did not report its thread");

	end = fr_now_mono_ns() + 5 * FR_NS_PER_S;
	while (fr_now_mono_ns() < end &&
	       !(find_seen(&seen, (uint32_t)kids[0]) && find_seen(&seen, (uint32_t)kids[1]) &&
		 find_seen(&seen, (uint32_t)kids[2]))) {
		struct pollfd pfd = {.fd = fr_procwatch_fd(w), .events = POLLIN};
		int ret;

		poll(&pfd, 1, 100);
		ret = fr_procwatch_read_events(w, &exits);
		CHECK(ret >= 0, "fr_procwatch_read_events: %s", strerror(-ret));
		if (ret < 0)
			return 1;
	}
	/* Anything late would show now. */
	usleep(100000);
	fr_procwatch_read_events(w, &exits);

	for (int i = 0; i < 3; i++) {
		const struct seen *s = find_seen(&seen, (uint32_t)kids[i]);

		CHECK(s, "no exit reported for child %d (pid %d)", i, kids[i]);
		if (!s)
			continue;
		CHECK(count_seen(&seen, (uint32_t)kids[i]) == 1, "child %d reported %d times", i,
		      count_seen(&seen, (uint32_t)kids[i]));
		CHECK(s->pid == (uint32_t)kids[i] && s->tgid == (uint32_t)kids[i],
		      "child %d: pid %u tgid %u, want %d", i, s->pid, s->tgid, kids[i]);
		CHECK(s->code == (uint32_t)status[i], "child %d: exit code 0x%x, waitpid saw 0x%x",
		      i, s->code, (unsigned)status[i]);
		CHECK(s->sig == SIGCHLD, "child %d: exit signal %u, want SIGCHLD", i, s->sig);
		printf("child %d: pid %u status 0x%x signal %u\n", i, s->pid, s->code, s->sig);
	}
	CHECK(WIFEXITED(status[0]) && WEXITSTATUS(status[0]) == 3, "child 0 status 0x%x",
	      status[0]);
	CHECK(WIFSIGNALED(status[1]) && WTERMSIG(status[1]) == SIGSEGV, "child 1 status 0x%x",
	      status[1]);
	CHECK(WIFEXITED(status[2]) && WEXITSTATUS(status[2]) == 0, "child 2 status 0x%x",
	      status[2]);
	CHECK(tid == 0 || count_seen(&seen, tid) == 0, "the exit of thread %u was reported", tid);
	printf("watcher: %d exits seen, %" PRIu64 " overruns\n", seen.n, fr_procwatch_overruns(w));
	return failures ? 1 : 0;
}

/* ---- engine ---------------------------------------------------------------- */

struct dumped {
	char session[FR_CONFIG_NAME_MAX];
	char reason[256];
	char kind[16];
	uint32_t pid;
	int64_t window;
};

static struct {
	pthread_mutex_t lock;
	struct dumped d[64];
	int n;
} rec = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int on_dump(void *arg, const struct fr_trigger_fire *f, char *path, size_t pathlen)
{
	(void)arg;
	pthread_mutex_lock(&rec.lock);
	if (rec.n < 64) {
		struct dumped *x = &rec.d[rec.n++];

		snprintf(x->session, sizeof(x->session), "%s", f->session);
		snprintf(x->reason, sizeof(x->reason), "%s", f->reason);
		snprintf(x->kind, sizeof(x->kind), "%s", f->kind);
		x->pid = f->pid;
		x->window = f->t1_ns - f->t0_ns;
	}
	pthread_mutex_unlock(&rec.lock);
	return 0;
}

/* The dump of `session` for `pid`, waiting up to `ms`; a copy in `out`. */
static int wait_dump(const char *session, uint32_t pid, int ms, struct dumped *out)
{
	int64_t end = fr_now_mono_ns() + ms * NS_PER_MS;

	do {
		pthread_mutex_lock(&rec.lock);
		for (int i = 0; i < rec.n; i++)
			if (strcmp(rec.d[i].session, session) == 0 && rec.d[i].pid == pid) {
				*out = rec.d[i];
				pthread_mutex_unlock(&rec.lock);
				return 1;
			}
		pthread_mutex_unlock(&rec.lock);
		usleep(20000);
	} while (fr_now_mono_ns() < end);
	return 0;
}

static int count_dumps(const char *session)
{
	int n = 0;

	pthread_mutex_lock(&rec.lock);
	for (int i = 0; i < rec.n; i++)
		n += strcmp(rec.d[i].session, session) == 0;
	pthread_mutex_unlock(&rec.lock);
	return n;
}

static struct fr_config_session *add_exit_session(struct fr_config *c, const char *name)
{
	struct fr_config_session *s = &c->sessions[c->nsessions++];
	struct fr_config_trigger *tr = &s->triggers[s->ntriggers++];

	snprintf(s->name, sizeof(s->name), "%s", name);
	tr->kind = FR_TRIGGER_EXIT;
	tr->window_ns = 10 * FR_NS_PER_S;
	tr->cooldown_ns = 0;
	return s;
}

/* Where cgroup2 is mounted, or "" (as the engine finds it). */
static void cgroup2_root(char *dst, size_t len)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");

	dst[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char mnt[1024];

		if (strstr(line, " - cgroup2 ") &&
		    sscanf(line, "%*s %*s %*s %*s %1023s", mnt) == 1 && strlen(mnt) < len) {
			memcpy(dst, mnt, strlen(mnt) + 1);
			break;
		}
	}
	fclose(f);
}

/* A child that moves itself to cgroup `dir` and runs sh, which exits
 * with 5 a little later. (Events are handled asynchronously: a process
 * that is reaped within a millisecond of its exec is gone before its
 * name and cgroup can be read, and only a pid target would catch it.) */
static pid_t spawn_in_cgroup(const char *dir)
{
	pid_t pid = fork();

	if (pid == 0) {
		char path[4200];
		int fd;

		snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "0\n", 2) != 2)
			_exit(90);
		close(fd);
		execl("/bin/sh", "sh", "-c", "sleep 0.2; exit 5", (char *)NULL);
		_exit(91);
	}
	return pid;
}

/* Makes the cgroup /fr-pw-PID under the cgroup2 root: its name in
 * `cgname`, its directory in `cgdir`, or "" in `cgdir` when there is none. */
static void make_test_cgroup(char *cgname, size_t name_len, char *cgdir, size_t dir_len)
{
	char root[1024];

	cgdir[0] = '\0';
	cgroup2_root(root, sizeof(root));
	snprintf(cgname, name_len, "/fr-pw-%d", (int)getpid());
	if (root[0]) {
		snprintf(cgdir, dir_len, "%s%s", root, cgname);
		if (mkdir(cgdir, 0755) < 0) {
			printf("note: cannot create cgroup %s (%s); cgroup targets not tested\n",
			       cgdir, strerror(errno));
			cgdir[0] = '\0';
		}
	}
}

/* Children named TARGET_COMM exit with 3, die of SIGSEGV and exit with 0:
 * the first two fire the "crashy" session with their reasons, the last
 * does not, and the "nobody" session never fires. Returns the pid of the
 * first, a process outside any test cgroup. */
static pid_t check_comm_target(void)
{
	struct dumped d;
	pid_t kids[3];
	int status;

	kids[0] = spawn(CHILD_EXIT3, NULL);
	kids[1] = spawn(CHILD_SEGV, NULL);
	kids[2] = spawn(CHILD_EXIT0, NULL);
	for (int i = 0; i < 3; i++)
		if (kids[i] > 0)
			waitpid(kids[i], &status, 0);

	if (wait_dump("crashy", (uint32_t)kids[0], 5000, &d)) {
		char want[256];

		snprintf(want, sizeof(want), "pid %d (%s) exited with status 3", kids[0],
			 TARGET_COMM);
		CHECK(strcmp(d.reason, want) == 0, "reason \"%s\", want \"%s\"", d.reason, want);
		CHECK(strcmp(d.kind, "exit") == 0 && d.window == 10 * FR_NS_PER_S,
		      "kind %s window %" PRId64, d.kind, d.window);
	} else {
		CHECK(0, "no dump for the exit(3) of pid %d", kids[0]);
	}
	if (wait_dump("crashy", (uint32_t)kids[1], 5000, &d)) {
		char want[256];

		snprintf(want, sizeof(want), "pid %d (%s) killed by SIGSEGV", kids[1], TARGET_COMM);
		/* " (core dumped)" may follow, per the machine's core_pattern. */
		CHECK(strncmp(d.reason, want, strlen(want)) == 0, "reason \"%s\", want \"%s\"",
		      d.reason, want);
	} else {
		CHECK(0, "no dump for the SIGSEGV of pid %d", kids[1]);
	}
	usleep(500000);
	CHECK(!wait_dump("crashy", (uint32_t)kids[2], 0, &d), "the exit(0) child fired: %s",
	      d.reason);
	CHECK(count_dumps("crashy") == 2, "%d dumps of crashy, want 2", count_dumps("crashy"));
	CHECK(count_dumps("nobody") == 0, "a session for another name fired");
	return kids[0];
}

/* A reload adds a session for one pid, alive before it. Returns 0, or
 * -1 when the child could not be made. */
static int check_reload_pid_target(struct fr_triggers *t, struct fr_config *c)
{
	struct fr_config_session *s;
	struct dumped d;
	int gate[2] = {-1, -1}, status;
	pid_t byp;

	if (pipe2(gate, O_CLOEXEC) < 0)
		return -1;
	byp = fork();
	if (byp == 0) {
		char b;

		close(gate[1]);
		if (read(gate[0], &b, 1) < 0)
			_exit(92);
		_exit(7);
	}
	close(gate[0]);
	s = add_exit_session(c, "bypid");
	s->targets.pids[s->targets.npids++] = (uint32_t)byp;
	CHECK(fr_triggers_set(t, c) == 0, "reload");
	usleep(300000);
	close(gate[1]);
	waitpid(byp, &status, 0);
	if (wait_dump("bypid", (uint32_t)byp, 5000, &d)) {
		char want[64];

		snprintf(want, sizeof(want), "pid %d (", byp);
		CHECK(strncmp(d.reason, want, strlen(want)) == 0 &&
			      strstr(d.reason, ") exited with status 7"),
		      "reason \"%s\"", d.reason);
	} else {
		CHECK(0, "no dump for pid %d, a target added by a reload", byp);
	}
	return 0;
}

/* A child in cgroup `cgdir` fires the "cg" session and not the name
 * session; `outside`, a child elsewhere, did not fire "cg". */
static void check_cgroup_target(const char *cgdir, const char *cgname, pid_t outside)
{
	struct dumped d;
	pid_t cgkid;
	int status;

	cgkid = spawn_in_cgroup(cgdir);
	waitpid(cgkid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 5,
	      "the cgroup child ended with 0x%x (90: could not move)", status);
	if (wait_dump("cg", (uint32_t)cgkid, 5000, &d)) {
		char want[128];

		snprintf(want, sizeof(want), "pid %d (sh) exited with status 5", cgkid);
		CHECK(strcmp(d.reason, want) == 0, "reason \"%s\", want \"%s\"", d.reason, want);
	} else {
		CHECK(0, "no dump for pid %d in cgroup %s", cgkid, cgname);
	}
	CHECK(!wait_dump("crashy", (uint32_t)cgkid, 0, &d),
	      "the name session fired for the cgroup child");
	CHECK(!wait_dump("cg", (uint32_t)outside, 0, &d),
	      "the cgroup session fired for a child outside it");
}

static int test_engine(void)
{
	struct fr_config *c = calloc(1, sizeof(*c));
	struct fr_config_session *s;
	struct fr_triggers *t = NULL;
	char err[256] = "", cgname[64], cgdir[1200] = "";
	pid_t outside;
	int ret;

	if (!c)
		return 1;
	s = add_exit_session(c, "crashy");
	snprintf(s->targets.comms[s->targets.ncomms++], FR_LIMIT_COMM_LEN, "%s", TARGET_COMM);
	s = add_exit_session(c, "nobody");
	snprintf(s->targets.comms[s->targets.ncomms++], FR_LIMIT_COMM_LEN, "fr-pw-nobody");

	make_test_cgroup(cgname, sizeof(cgname), cgdir, sizeof(cgdir));
	if (cgdir[0]) {
		s = add_exit_session(c, "cg");
		snprintf(s->targets.cgroup, sizeof(s->targets.cgroup), "%s", cgname);
	}

	ret = fr_triggers_start(&t, c, on_dump, NULL, err, sizeof(err));
	CHECK(ret == 0, "fr_triggers_start: %s", err);
	if (ret < 0)
		goto out;
	usleep(300000); /* the engine learns the processes alive now */

	outside = check_comm_target();
	if (check_reload_pid_target(t, c) < 0)
		goto out;
	if (cgdir[0])
		check_cgroup_target(cgdir, cgname, outside);

out:
	fr_triggers_stop(t);
	if (cgdir[0] && rmdir(cgdir) < 0)
		fprintf(stderr, "cannot remove %s: %s\n", cgdir, strerror(errno));
	free(c);
	return failures ? 1 : 0;
}

int main(void)
{
	struct fr_procwatch *w = NULL;
	char err[256] = "";
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: the proc connector needs root (CAP_NET_ADMIN)\n");
		return SKIP;
	}
	ret = fr_procwatch_open(&w, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "SKIP: %s\n", err);
		return SKIP;
	}
	ret = test_watcher(w);
	fr_procwatch_close(w);
	if (ret)
		return ret;
	return test_engine();
}
