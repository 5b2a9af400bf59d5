/* The threads at a past moment from the ring alone (core/query/threads_at.c):
 * blocked from the latest open-wait records at or before T, unless an
 * off-CPU sample shows the thread back before T; running from cpu samples
 * of the last second; names from the chunks' tables; only the asked
 * processes, chosen by pid, command name at the time and cgroup. The ring
 * is synthetic: chunk k is sealed at T0 + k s + 0.5 s
 * with the samples since the previous seal and the records of the threads
 * blocked at the seal, as the recorder writes them. */

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/query/threads_at.h"
#include "core/store/chunk.h"
#include "core/store/ring.h"
#include "core/store/sample.h"

#include "tests/unit/fixture.h"

#define MS ((int64_t)1000000)
#define NSEALS 10

/* A blocked since 5 s before T0 and never back; B blocked from 1.2 s to
 * 3.7 s, then running until 4.5 s; C running from 8 s, blocked from 8.8 s
 * (after the seal at 8.5 s); E blocked from 5 s until it exited at 7 s
 * (no completed wait: its records just stop); W, of another process,
 * running throughout. */
#define TA TID(PID_DB, 1)
#define TB TID(PID_DB, 2)
#define TC TID(PID_DB, 3)
#define TE TID(PID_DB, 4)
#define TP TID(PID_DB, 5)
#define TW TID(PID_APP, 1)
#define OUT_A (T0 - 5 * SEC)
#define OUT_B (T0 + 1200 * MS)
#define IN_B (T0 + 3700 * MS)
#define OUT_C (T0 + 8800 * MS)
#define OUT_E (T0 + 5 * SEC)
#define EXIT_E (T0 + 7 * SEC)
#define WEB_EXEC (T0 + 9 * SEC)

static void record(struct writer *w, int64_t asof, uint32_t tid, int64_t out)
{
	w_add_ev(w, asof, PID_DB, tid, 0, FR_EVENT_OFFCPU_OPEN, 0, (uint64_t)(asof - out),
		 ST_KERNEL);
}

/* The cpu samples of the second before `seal`, every 100 ms. */
static void cpu_samples(struct writer *w, int64_t seal)
{
	for (int64_t t = seal - SEC + 50 * MS; t < seal; t += 100 * MS) {
		if (t > IN_B && t < T0 + 4500 * MS)
			w_add(w, t, PID_DB, TB, 0, 99, ST_USER);
		if (t > T0 + 8 * SEC && t < OUT_C)
			w_add(w, t, PID_DB, TC, 0, 99, ST_USER);
		w_add(w, t, PID_APP, TW, 1, 99, ST_OTHER);
		/* A shell that exec's web at WEB_EXEC, in no cgroup. */
		w_add(w, t, PID_WEB, PID_WEB, 2, 99, ST_OTHER);
	}
}

static void write_ring(struct fr_ring *r)
{
	struct writer w;

	w_init(&w, r);
	for (int k = 0; k < NSEALS; k++) {
		int64_t seal = T0 + k * SEC + 500 * MS;

		cpu_samples(&w, seal);
		if (IN_B <= seal && IN_B > seal - SEC)
			w_add_ev(&w, IN_B, PID_DB, TB, 1, FR_EVENT_OFFCPU, 0,
				 (uint64_t)(IN_B - OUT_B), ST_KERNEL);
		record(&w, seal, TA, OUT_A);
		if (OUT_B < seal && IN_B > seal)
			record(&w, seal, TB, OUT_B);
		if (OUT_C < seal)
			record(&w, seal, TC, OUT_C);
		if (OUT_E < seal && EXIT_E > seal)
			record(&w, seal, TE, OUT_E);
		/* P spins; the seal at 6.5 s found it preempted 0.1 ms before. */
		if (k == 6) {
			w_add(&w, seal - 10 * MS, PID_DB, TP, 1, 99, ST_USER);
			record(&w, seal, TP, seal - MS / 10);
		}
		w_seal(&w);
	}
	w_fini(&w);
}

static const struct fr_targets db = {.npids = 1, .pids = {PID_DB}};

/* Thread `tid` in the answer of fr_threads_at(r, t, db), or NULL. */
static const struct fr_thread_at *find(const struct fr_thread_at *v, size_t n, uint32_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].tid == tid)
			return &v[i];
	return NULL;
}

/* Checks the state of thread `tid` at `t` and, blocked, since when. */
static void check_at(struct fr_ring *r, int64_t t, uint32_t tid, enum fr_thread_at_state state,
		     int64_t out)
{
	struct fr_thread_at *v = NULL;
	const struct fr_thread_at *th;
	size_t n = 0;
	int ret = fr_threads_at(r, t, &db, &v, &n);

	CHECK(ret == 0, "fr_threads_at(%+" PRId64 " ms): %d", (t - T0) / MS, ret);
	th = find(v, n, tid);
	CHECK(th && th->state == state, "%+" PRId64 " ms: thread %u is %d, want %d", (t - T0) / MS,
	      tid - PID_DB, th ? (int)th->state : -1, (int)state);
	if (th && state == FR_THREAD_BLOCKED)
		CHECK(th->out_ns == out, "%+" PRId64 " ms: thread %u out at %+" PRId64 " ms",
		      (t - T0) / MS, tid - PID_DB, (th->out_ns - T0) / MS);
	free(v);
}

/* Blocked from the latest records at or before T: a seal after T does not
 * count, and a thread that blocked after the seal is not yet blocked. */
static void test_record_before_t(struct fr_ring *r)
{
	check_at(r, T0 + 3600 * MS, TB, FR_THREAD_BLOCKED, OUT_B);
	check_at(r, T0 + 5200 * MS, TA, FR_THREAD_BLOCKED, OUT_A);
	check_at(r, T0 + 9400 * MS, TC, FR_THREAD_RUNNING, 0);
	check_at(r, T0 + 9600 * MS, TC, FR_THREAD_BLOCKED, OUT_C);
	/* Listed by the seal at 6.5 s, not by the one at 7.5 s. */
	check_at(r, T0 + 7 * SEC, TE, FR_THREAD_BLOCKED, OUT_E);
	check_at(r, T0 + 7600 * MS, TE, FR_THREAD_UNKNOWN, 0);
}

/* A record of the last seal says B is blocked, but its completed wait
 * (back at 3.7 s) ended before T: it runs; a second later, with neither
 * records nor cpu samples, nothing says where it is. */
static void test_woke_before_t(struct fr_ring *r)
{
	check_at(r, T0 + 3800 * MS, TB, FR_THREAD_RUNNING, 0);
	check_at(r, T0 + 5700 * MS, TB, FR_THREAD_UNKNOWN, 0);
}

/* Off the CPU for a moment right after a cpu sample: preempted, running. */
static void test_preempted(struct fr_ring *r)
{
	check_at(r, T0 + 6501 * MS, TP, FR_THREAD_RUNNING, 0);
}

/* Only the asked processes, with the names of the chunks' tables. */
static void test_targets_and_names(struct fr_ring *r)
{
	static const struct fr_targets all, user = {.has_uid = 1, .uid = 1000};
	struct fr_thread_at *v = NULL;
	const struct fr_thread_at *a;
	size_t n = 0;

	CHECK(fr_threads_at(r, T0 + 9600 * MS, &db, &v, &n) == 0, "fr_threads_at");
	CHECK(!find(v, n, TW), "a thread of another process is listed");
	a = find(v, n, TA);
	CHECK(a && strcmp(a->name, "worker-1") == 0 && a->comm[0], "thread A named '%s' in '%s'",
	      a ? a->name : "", a ? a->comm : "");
	free(v);
	CHECK(fr_threads_at(r, T0 + 9600 * MS, &all, &v, &n) == 0, "fr_threads_at all");
	a = find(v, n, TW);
	CHECK(a && a->state == FR_THREAD_RUNNING, "all processes: W not listed running");
	CHECK(find(v, n, TA) != NULL, "all processes: A not listed");
	free(v);
	/* A user sees its own processes only: db runs as root. */
	CHECK(fr_threads_at(r, T0 + 9600 * MS, &user, &v, &n) == 0, "fr_threads_at uid");
	CHECK(find(v, n, TW) && !find(v, n, TA), "uid 1000 sees W and not root's A");
	free(v);
}

/* The threads of `targets` at `t` include thread `tid` (1) or not (0). */
static int listed(struct fr_ring *r, int64_t t, const struct fr_targets *targets, uint32_t tid)
{
	struct fr_thread_at *v = NULL;
	size_t n = 0;
	int ret = fr_threads_at(r, t, targets, &v, &n), found;

	CHECK(ret == 0, "fr_threads_at(%+" PRId64 " ms): %d", (t - T0) / MS, ret);
	found = find(v, n, tid) != NULL;
	free(v);
	return found;
}

/* By command name, as the process had it at each sample's time: web was
 * a shell until WEB_EXEC; two names take either. */
static void test_comm(struct fr_ring *r)
{
	static const struct fr_targets db_comm = {.ncomms = 1, .comms = {"frtest-db"}},
				       sh = {.ncomms = 1, .comms = {"frtest-sh"}},
				       web = {.ncomms = 1, .comms = {"frtest-web"}},
				       both = {.ncomms = 2, .comms = {"frtest-app", "frtest-db"}},
				       db_user = {.ncomms = 1,
						  .comms = {"frtest-db"},
						  .has_uid = 1,
						  .uid = 1000};
	int64_t t = T0 + 9600 * MS;

	CHECK(listed(r, t, &db_comm, TA) && !listed(r, t, &db_comm, TW),
	      "--comm frtest-db: not A alone");
	CHECK(listed(r, t, &both, TA) && listed(r, t, &both, TW),
	      "--comm frtest-app,frtest-db: not A and W");
	CHECK(!listed(r, t, &db_user, TA), "uid 1000 sees root's db by its name");
	CHECK(listed(r, T0 + 8900 * MS, &sh, PID_WEB) && !listed(r, T0 + 8900 * MS, &web, PID_WEB),
	      "before its exec, web is not frtest-sh alone");
	CHECK(listed(r, t, &web, PID_WEB) && !listed(r, t, &db_comm, PID_WEB),
	      "after its exec, web is not frtest-web");
	CHECK(!listed(r, T0 + 9100 * MS + SEC, &sh, PID_WEB),
	      "a second after its exec, web is still frtest-sh");
}

/* By cgroup, from the samples' label sets: a cgroup takes its own and
 * those below it; "/" every sample with a cgroup, none without. */
static void test_cgroup(struct fr_ring *r)
{
	static const struct fr_targets db_cg = {.cgroup = CG_DB},
				       slice = {.cgroup = "/system.slice"}, root = {.cgroup = "/"},
				       other = {.cgroup = "/system.slice/db"},
				       pid_cg = {.npids = 1, .pids = {PID_DB}, .cgroup = CG_NGINX};
	int64_t t = T0 + 9600 * MS;

	CHECK(listed(r, t, &db_cg, TA) && listed(r, t, &db_cg, TC) && !listed(r, t, &db_cg, TW),
	      "--cgroup " CG_DB ": not A and C alone");
	CHECK(listed(r, t, &slice, TA) && listed(r, t, &slice, TW) &&
		      !listed(r, t, &slice, PID_WEB),
	      "--cgroup /system.slice: not A and W alone");
	CHECK(listed(r, t, &root, TW) && !listed(r, t, &root, PID_WEB), "--cgroup /: not W alone");
	CHECK(!listed(r, t, &other, TA), "a cgroup's name prefix is not its parent");
	CHECK(!listed(r, t, &pid_cg, TA) && !listed(r, t, &pid_cg, TW),
	      "pid and cgroup do not combine with AND");
}

/* The default moment of a ring whose recorder stopped: its last seal. */
static void test_last(struct fr_ring *r)
{
	int64_t last = fr_threads_at_last(r);

	CHECK(last == T0 + 9500 * MS, "last seal at %+" PRId64 " ms", (last - T0) / MS);
}

/* fr_threads_hide_fn of test_answer(): hides app, and checks it is given
 * each process once, sorted. */
static void hide_app(void *arg, const uint32_t *pids, size_t n, int *hidden)
{
	int *calls = arg;

	(*calls)++;
	CHECK(n == 2 && pids[0] == PID_APP && pids[1] == PID_DB, "hide is given %zu pids", n);
	for (size_t i = 0; i < n; i++)
		hidden[i] = pids[i] == PID_APP;
}

/* The answer at 3.6 s of db and app, written and read back: A blocked
 * where its wait's records put it, with its waiting time; W on the CPU
 * on its stack; with app hidden, W cut down to what ps shows. */
static void test_answer(struct fr_ring *r)
{
	static const struct fr_targets both = {.npids = 2, .pids = {PID_DB, PID_APP}};
	int64_t t = T0 + 3600 * MS;
	char path[512], l1[64], l2[64], waiting[64];

	for (int hidden = 0; hidden < 2; hidden++) {
		struct fr_profile_request req = {.targets = both, .kallsyms = kallsyms_path};
		const char *a[] = {label(l1, sizeof(l1), "tid", TA), "state:[blocked]",
				   "stack:[blocked]",
				   label(waiting, sizeof(waiting), "waiting_ns",
					 (uint64_t)(t - OUT_A)),
				   NULL};
		const char *w[] = {label(l2, sizeof(l2), "tid", TW), NULL};
		const struct rsample *s;
		size_t nthreads = 0, nprocs = 0, nhidden = 0;
		char err[256] = "";
		int calls = 0, fd, ret;
		struct raw raw;

		snprintf(path, sizeof(path), "%s/answer-%d.pb.gz", tmpdir, hidden);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		ret = fr_threads_at_write_hiding(r, &req, t, fd, hidden ? hide_app : NULL, &calls,
						 &nthreads, &nprocs, &nhidden, err, sizeof(err));
		close(fd);
		CHECK(ret == 0 && nprocs == 2 && nhidden == (size_t)hidden && calls == hidden,
		      "answer (hidden %d): %d %s, %zu processes, %zu hidden", hidden, ret, err,
		      nprocs, nhidden);
		if (ret < 0 || raw_parse(&raw, path) < 0)
			continue;
		CHECK(raw.nsamples == (int)nthreads && nthreads >= 3, "%d samples, %zu threads",
		      raw.nsamples, nthreads);
		s = find_sample(&raw, ST_KERNEL, a);
		CHECK(s && s->v[0] == 1 && s->v[1] == t - OUT_A,
		      "A: no sample blocked on the kernel stack with its wait");
		s = find_sample(&raw, -1, w);
		CHECK(s != NULL, "no sample of W");
		if (s && hidden)
			CHECK(s->nlocs == 0 && s->v[0] == 1 && s->v[1] == 0 &&
				      strstr(s->labels, "stack:") == NULL &&
				      strstr(s->labels, "state:[running] ") != NULL,
			      "hidden W: %d frames, labels %s", s->nlocs, s->labels);
		else if (s)
			CHECK(sample_has_stack(&raw, s, &stacks[ST_OTHER]) &&
				      strstr(s->labels, "stack:[on-cpu] ") != NULL,
			      "W: not on its stack on the CPU, labels %s", s->labels);
		raw_done(&raw, 0);
	}
}

int main(void)
{
	struct fr_ring *r;

	if (fixture_init("threads-at") != 0)
		return 1;
	r = test_ring_create("threads-at");
	if (r) {
		web_exec_ns = WEB_EXEC;
		write_ring(r);
		test_record_before_t(r);
		test_woke_before_t(r);
		test_preempted(r);
		test_targets_and_names(r);
		test_comm(r);
		test_cgroup(r);
		test_last(r);
		test_answer(r);
		test_ring_done(r);
	}
	return fixture_fini();
}
