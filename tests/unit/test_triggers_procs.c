/* Incident triggers on the machine's own processes and time, through
 * recorder/triggers/triggers.h, beside test_triggers.c (which runs the engine on a
 * clock of its own):
 *
 *   cpu       cpu_above at 1% for 1 s fires, while a thread spins, for the
 *             whole machine, this pid, this command name and this cgroup
 *             (when its cpu.stat is readable); it does not fire for a
 *             sleeping child, nor for targets whose kinds do not all match.
 *   exit_uid  an exit trigger on a command name and a uid fires for the
 *             target user's process, not for another user's of the same
 *             name (root only: the proc connector).
 *
 * CPU time is measured against the machine's wall time and exits arrive
 * when the kernel reports them, so these wait on what the engine did,
 * with generous bounds. */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util/time.h"
#include "tests/unit/triggers_rec.h"

const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

/* ---- cpu_above ----------------------------------------------------------- */

static int spin_stop;

static void *spin(void *arg)
{
	volatile uint64_t x = 0;

	(void)arg;
	while (!__atomic_load_n(&spin_stop, __ATOMIC_RELAXED))
		x++;
	return NULL;
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* This process's cgroup v2 path when its cpu.stat can be read, else "". */
static void own_cgroup(char *dst, size_t len)
{
	static const char *roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
	char line[4096], path[8192];
	FILE *f = fopen("/proc/self/cgroup", "re");

	dst[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
			snprintf(path, sizeof(path), "%s%s/cpu.stat", roots[i], line + 3);
			/* The engine uses the cgroup2 mount; only test a
			 * cgroup whose counter is at the usual places. */
			if (access(path, R_OK) == 0 && strlen(line + 3) < len) {
				memcpy(dst, line + 3, strlen(line + 3) + 1);
				break;
			}
		}
		break;
	}
	fclose(f);
}

/* Adds a cpu_above trigger at 1% for 1 s to `s`. */
static void cpu_1pct(struct fr_config_session *s)
{
	struct fr_config_trigger *tr = add_trigger(s, FR_TRIGGER_CPU_ABOVE);

	tr->percent = 1;
	tr->for_ns = FR_NS_PER_S;
}

/* The sessions of test_cpu: this process (called `comm`, in cgroup `cg`
 * when not "") and the whole machine must fire; `sleeper`, and targets
 * this process matches only some kinds of, must not. */
static void cpu_sessions(struct fr_config *c, const char *comm, const char *cg, pid_t sleeper)
{
	struct fr_config_session *s;

	cpu_1pct(add_session(c, "machine"));
	s = add_session(c, "mypid");
	s->targets.pids[s->targets.npids++] = (uint32_t)getpid();
	cpu_1pct(s);
	s = add_session(c, "mycomm");
	snprintf(s->targets.comms[s->targets.ncomms++], FR_LIMIT_COMM_LEN, "%.15s", comm);
	cpu_1pct(s);
	if (cg[0]) {
		s = add_session(c, "mycg");
		snprintf(s->targets.cgroup, sizeof(s->targets.cgroup), "%s", cg);
		cpu_1pct(s);
	} else {
		printf("note: no readable cgroup v2 cpu.stat for this process; cgroup not tested\n");
	}
	s = add_session(c, "sleeper");
	s->targets.pids[s->targets.npids++] = (uint32_t)(sleeper > 0 ? sleeper : 1);
	cpu_1pct(s);
	/* Kinds of targets combine with AND, as in profiles: this process
	 * under another name, and the sleeper in this busy cgroup, are
	 * nobody's. */
	s = add_session(c, "mypid-othercomm");
	s->targets.pids[s->targets.npids++] = (uint32_t)getpid();
	snprintf(s->targets.comms[s->targets.ncomms++], FR_LIMIT_COMM_LEN, "no-such-comm");
	cpu_1pct(s);
	if (cg[0]) {
		s = add_session(c, "sleeper-mycg");
		s->targets.pids[s->targets.npids++] = (uint32_t)(sleeper > 0 ? sleeper : 1);
		snprintf(s->targets.cgroup, sizeof(s->targets.cgroup), "%s", cg);
		cpu_1pct(s);
	}
}

static void test_cpu(void)
{
	struct fr_config *c = cfg_new();
	struct fr_triggers *t;
	struct rec r;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nspin = ncpu > 50 ? (int)(ncpu / 50) + 1 : 1;
	pthread_t spinners[64];
	char comm[64] = "", cg[256];
	const char *names[] = {"machine", "mypid", "mycomm", "mycg"};
	pid_t sleeper;

	rec_init(&r);
	if (read_line("/proc/self/comm", comm, sizeof(comm)) < 0)
		snprintf(comm, sizeof(comm), "test_triggers");
	own_cgroup(cg, sizeof(cg));
	sleeper = fork();
	if (sleeper == 0) {
		pause();
		_exit(0);
	}
	CHECK(sleeper > 0, "fork: %s", strerror(errno));

	cpu_sessions(c, comm, cg, sleeper);

	if (nspin > 64)
		nspin = 64;
	for (int i = 0; i < nspin; i++)
		pthread_create(&spinners[i], NULL, spin, NULL);
	/* CPU time is measured against the machine's wall time. */
	t = start_on(c, &r, NULL);

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct rec_fire *x;

		if (strcmp(names[i], "mycg") == 0 && !cg[0])
			continue;
		x = rec_wait_session(&r, names[i], 8000);
		CHECK(x,
		      "cpu_above 1%% for 1s of session %s did not fire in 8 s while %d thread(s) "
		      "spun",
		      names[i], nspin);
		if (!x)
			continue;
		CHECK(strcmp(x->f.kind, "cpu_above") == 0, "kind %s", x->f.kind);
		CHECK(strncmp(x->f.reason, "cpu ", 4) == 0 && strstr(x->f.reason, "% >= 1% for 1s"),
		      "session %s: reason \"%s\", want \"cpu N%% >= 1%% for 1s\"", names[i],
		      x->f.reason);
		CHECK(x->f.t1_ns - x->f.t0_ns == 60 * FR_NS_PER_S, "window of %s", names[i]);
	}
	CHECK(!rec_find(&r, "sleeper"), "cpu_above fired for a process that sleeps");
	CHECK(!rec_find(&r, "mypid-othercomm"),
	      "cpu_above fired for a pid whose command name is not the session's");
	CHECK(!rec_find(&r, "sleeper-mycg"),
	      "cpu_above counted the cgroup's other processes for a pid target");
	__atomic_store_n(&spin_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nspin; i++)
		pthread_join(spinners[i], NULL);
	fr_triggers_stop(t);
	if (sleeper > 0) {
		kill(sleeper, SIGKILL);
		waitpid(sleeper, NULL, 0);
	}
	rec_fini(&r);
	free(c);
}

/* ---- exit triggers and the uid of their targets ------------------------ */

/* Forks a process that takes `uid` (unless 0), renames itself `comm` and
 * exits with status 3, and leaves it unreaped: the engine reads a
 * process's uid from /proc, which a zombie still shows, so how far the
 * engine lags behind (a loaded machine) does not matter. Returns its pid,
 * or -1. */
static pid_t spawn_exit(const char *comm, uid_t uid)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (uid && (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
			    setresuid(uid, uid, uid) < 0))
			_exit(100);
		prctl(PR_SET_NAME, comm, 0, 0, 0);
		_exit(3);
	}
	return pid;
}

/* Reaps `pid`; whether it exited with status 3. */
static int reaped(pid_t pid)
{
	int status;

	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 3;
}

static pid_t exit_badly(const char *comm, uid_t uid)
{
	pid_t pid = spawn_exit(comm, uid);

	return reaped(pid) ? pid : -1;
}

/* A command-name target restricted to a uid: another user's process of the
 * same name exiting badly does not fire the trigger (anyone may call a
 * process anything), the target user's does. Needs the proc connector,
 * that is root. */
static void test_exit_uid(void)
{
	struct fr_config *c;
	struct fr_config_session *s;
	struct fr_triggers *t;
	const struct rec_fire *x;
	struct rec r;
	pid_t victim, other, marker;
	int ready = 0;

	if (geteuid() != 0) {
		printf("skip test_exit_uid: exit triggers need root (the proc connector)\n");
		return;
	}
	c = cfg_new();
	s = add_session(c, "victim");
	snprintf(s->targets.comms[s->targets.ncomms++], FR_LIMIT_COMM_LEN, "frvictimsvc");
	s->targets.has_uid = 1;
	s->targets.uid = 0;
	add_trigger(s, FR_TRIGGER_EXIT);
	/* Exits are handled one at a time in the order the kernel reports
	 * them, so once a marker's exit has fired, every exit before it has
	 * been judged. */
	s = add_session(c, "marker");
	snprintf(s->targets.comms[s->targets.ncomms++], FR_LIMIT_COMM_LEN, "frmarker");
	add_trigger(s, FR_TRIGGER_EXIT)->cooldown_ns = 0;
	rec_init(&r);
	t = start_on(c, &r, NULL);

	/* The watcher is live once a marker fires. */
	for (int i = 0; i < 50 && !ready; i++) {
		CHECK(exit_badly("frmarker", 0) > 0, "marker process");
		ready = rec_wait_session(&r, "marker", 200) != NULL;
	}
	CHECK(ready, "the exit watcher never reported a marker's exit");
	if (!ready)
		goto out;

	other = spawn_exit("frvictimsvc", 65534);
	CHECK(other > 0, "a process of uid 65534 named frvictimsvc");
	marker = exit_badly("frmarker", 0);
	CHECK(marker > 0, "marker process");
	CHECK(rec_wait_pid(&r, "marker", (uint32_t)marker, 10000),
	      "the marker after the other user's process was not seen");
	CHECK(rec_find(&r, "victim") == NULL && fr_triggers_suppressed(t, 0) == 0,
	      "another uid's process named like the target fired the exit trigger");
	CHECK(reaped(other), "the process of uid 65534 did not exit with status 3");

	victim = spawn_exit("frvictimsvc", 0);
	CHECK(victim > 0, "a root process named frvictimsvc");
	x = rec_wait_session(&r, "victim", 10000);
	CHECK(x && x->f.pid == (uint32_t)victim, "the target's own exit did not fire (pid %u)",
	      x ? x->f.pid : 0);
	CHECK(reaped(victim), "the root process did not exit with status 3");
out:
	fr_triggers_stop(t);
	rec_fini(&r);
	free(c);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_cpu();
	test_exit_uid();
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
