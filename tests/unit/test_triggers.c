/* Incident triggers through recorder/triggers/triggers.h, without privileges: the
 * engine runs its thread and calls a dump callback that records what it
 * was given. Sessions are built by hand (struct fr_config), so the test
 * does not depend on the configuration parser.
 *
 *   signal    a forwarded signal fires its session's trigger (and only
 *             that one) with the right window; cooldowns suppress and
 *             count; signals arriving together are each counted.
 *   after     the dump waits `after`, its window ends `after` past the
 *             fire, and a waiting dump does not hold back another.
 *   manual    synchronous on the caller's thread, window of the first
 *             trigger (or 60 s, or the one asked), -ENOENT for an unknown
 *             session, the callback's error passed back, cooldowns
 *             ignored.
 *   parsed    a configuration from fr_config_parse drives the engine.
 *   oom       a kill fires the sessions whose targets the victim is of
 *   pressure  seconds of pressure at or above the threshold for `for`
 *             fire, whatever the targets; a second below, or one that
 *             does not say (no file, no full line), ends the run
 *             (every session without targets), the fire carries the
 *             victim, a session of other targets stays quiet, cooldowns
 *             hold, and a burst past the queue is dropped, not waited on.
 *   reload    cooldowns and counters follow a session to its new index;
 *             a trigger at another index starts afresh; a pending dump
 *             follows its session, or is dropped with it.
 *
 * The engine runs on a clock of the test's (struct fr_trigger_clock):
 * time moves only when a test moves it, and fr_triggers_sync() returns
 * once the engine has acted on everything before it, so cooldowns and
 * `after` are checked to the nanosecond without sleeping. cpu_above and
 * exit triggers, which need the machine's time and processes, are in
 * test_triggers_procs.c. */
#include "recorder/triggers/triggers.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util/log.h"

#include "core/util/time.h"
#include "tests/unit/triggers_rec.h"

const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

/* ---- the engine's clock -------------------------------------------------- */

static int64_t test_mono = 1000 * FR_NS_PER_S;
static int64_t test_real = 1700000000 * FR_NS_PER_S;

static int64_t clock_mono(void *ctx)
{
	(void)ctx;
	return __atomic_load_n(&test_mono, __ATOMIC_ACQUIRE);
}

static int64_t clock_real(void *ctx)
{
	(void)ctx;
	return __atomic_load_n(&test_real, __ATOMIC_ACQUIRE);
}

static const struct fr_trigger_clock test_clock = {
	.mono_ns = clock_mono,
	.real_ns = clock_real,
};

/* Moves the test clock on by `ns` and lets the engine act on it. */
static void advance(struct fr_triggers *t, int64_t ns)
{
	__atomic_add_fetch(&test_mono, ns, __ATOMIC_ACQ_REL);
	__atomic_add_fetch(&test_real, ns, __ATOMIC_ACQ_REL);
	fr_triggers_sync(t);
}

static struct fr_triggers *start(const struct fr_config *c, struct rec *r)
{
	return start_on(c, r, &test_clock);
}

/* ---- signal -------------------------------------------------------------- */

static void test_signal(void)
{
	struct fr_config *c = cfg_new();
	struct fr_config_trigger *tr;
	struct fr_triggers *t;
	const struct rec_fire *x;
	struct rec r;
	int64_t sent;

	rec_init(&r);
	add_session(c, "always");
	tr = add_trigger(add_session(c, "db"), FR_TRIGGER_SIGNAL);
	tr->signal = SIGUSR1;
	tr->window_ns = 5 * FR_NS_PER_S;
	tr->cooldown_ns = 1 * FR_NS_PER_S;
	tr = add_trigger(add_session(c, "web"), FR_TRIGGER_SIGNAL);
	tr->signal = SIGUSR2;
	tr->window_ns = 7 * FR_NS_PER_S;
	t = start(c, &r);

	sent = clock_real(NULL);
	fr_triggers_signal(t, SIGUSR1);
	fr_triggers_sync(t);
	CHECK(rec_count(&r) == 1, "SIGUSR1 gave %d dumps, want 1", rec_count(&r));
	if (rec_count(&r) != 1)
		goto out;
	x = &r.fires[0];
	CHECK(strcmp(x->session, "db") == 0, "SIGUSR1 dumped session %s, not db", x->session);
	CHECK(x->f.session_index == 1 && x->f.trigger_index == 0, "indexes %u/%u, want 1/0",
	      x->f.session_index, x->f.trigger_index);
	CHECK(x->f.kind && strcmp(x->f.kind, "signal") == 0, "kind %s", x->f.kind);
	CHECK(strcmp(x->f.reason, "SIGUSR1") == 0, "reason \"%s\"", x->f.reason);
	CHECK(x->has_trigger && x->trigger.kind == FR_TRIGGER_SIGNAL &&
		      x->trigger.signal == SIGUSR1,
	      "the fire does not carry its trigger");
	CHECK(x->f.fire_ns == sent, "fire time %" PRId64 ", want the signal's %" PRId64,
	      x->f.fire_ns, sent);
	CHECK(x->f.t1_ns == x->f.fire_ns && x->f.t0_ns == x->f.fire_ns - 5 * FR_NS_PER_S,
	      "window [%" PRId64 ", %" PRId64 ") for a fire at %" PRId64 ", want 5 s before it",
	      x->f.t0_ns, x->f.t1_ns, x->f.fire_ns);
	CHECK(x->f.pid == 0, "pid %u for a signal", x->f.pid);
	CHECK(!pthread_equal(x->thread, pthread_self()), "the dump ran on the caller's thread");
	CHECK(fr_triggers_last_dump(t, 1) == x->f.fire_ns,
	      "last dump of db %" PRId64 ", want %" PRId64, fr_triggers_last_dump(t, 1),
	      x->f.fire_ns);
	CHECK(fr_triggers_last_dump(t, 0) == 0, "session without triggers has a last dump");
	CHECK(fr_triggers_last_dump(t, 99) == 0 && fr_triggers_suppressed(t, 99) == 0,
	      "an index beyond the sessions answers");

	/* Inside the 1 s cooldown, to its last nanosecond: counted, not
	 * dumped. */
	advance(t, FR_NS_PER_S - 1);
	fr_triggers_signal(t, SIGUSR1);
	fr_triggers_sync(t);
	CHECK(fr_triggers_suppressed(t, 1) == 1, "suppressed %" PRIu64 ", want 1",
	      fr_triggers_suppressed(t, 1));
	CHECK(rec_count(&r) == 1, "a signal inside the cooldown dumped (%d dumps)", rec_count(&r));
	CHECK(fr_triggers_suppressed(t, 0) == 0 && fr_triggers_suppressed(t, 2) == 0,
	      "other sessions count suppressions");

	/* Once it has passed: dumps again. */
	advance(t, 1);
	fr_triggers_signal(t, SIGUSR1);
	fr_triggers_sync(t);
	CHECK(rec_count(&r) == 2, "%d dumps once the cooldown passed, want 2", rec_count(&r));
	CHECK(r.n < 2 || strcmp(r.fires[1].session, "db") == 0, "second dump of %s",
	      r.fires[1].session);
	CHECK(fr_triggers_suppressed(t, 1) == 1, "suppressed %" PRIu64 " after the cooldown",
	      fr_triggers_suppressed(t, 1));

	/* Other signal, other session; a signal nobody asked for, nothing. */
	fr_triggers_signal(t, SIGTERM);
	fr_triggers_signal(t, 0);
	fr_triggers_signal(t, 1000);
	fr_triggers_signal(t, SIGUSR2);
	fr_triggers_sync(t);
	CHECK(rec_count(&r) == 3, "%d dumps after SIGTERM and SIGUSR2, want 3", rec_count(&r));
	if (rec_count(&r) == 3) {
		x = &r.fires[2];
		CHECK(strcmp(x->session, "web") == 0 && x->f.session_index == 2 &&
			      strcmp(x->f.reason, "SIGUSR2") == 0 &&
			      x->f.t1_ns - x->f.t0_ns == 7 * FR_NS_PER_S,
		      "SIGUSR2 gave session %s index %u reason %s window %" PRId64, x->session,
		      x->f.session_index, x->f.reason, x->f.t1_ns - x->f.t0_ns);
	}

	/* Three at once, inside web's 60 s cooldown: three suppressions, not
	 * one (signals are counted, not merged). */
	fr_triggers_signal(t, SIGUSR2);
	fr_triggers_signal(t, SIGUSR2);
	fr_triggers_signal(t, SIGUSR2);
	fr_triggers_sync(t);
	CHECK(fr_triggers_suppressed(t, 2) == 3, "suppressed %" PRIu64 " of 3 SIGUSR2",
	      fr_triggers_suppressed(t, 2));
	CHECK(rec_count(&r) == 3, "%d dumps", rec_count(&r));
out:
	fr_triggers_stop(t);
	rec_fini(&r);
	free(c);
}

/* ---- after ---------------------------------------------------------------- */

static void test_after(void)
{
	struct fr_config *c = cfg_new();
	struct fr_config_trigger *tr;
	struct fr_triggers *t;
	const struct rec_fire *tail, *quick;
	struct rec r;
	int64_t sent_mono, sent_real;

	rec_init(&r);
	tr = add_trigger(add_session(c, "tail"), FR_TRIGGER_SIGNAL);
	tr->signal = SIGUSR1;
	tr->window_ns = 2 * FR_NS_PER_S;
	tr->after_ns = 1500 * NS_PER_MS;
	tr->cooldown_ns = 0;
	tr = add_trigger(add_session(c, "quick"), FR_TRIGGER_SIGNAL);
	tr->signal = SIGUSR2;
	t = start(c, &r);

	sent_mono = clock_mono(NULL);
	sent_real = clock_real(NULL);
	fr_triggers_signal(t, SIGUSR1);
	fr_triggers_sync(t);
	CHECK(rec_count(&r) == 0, "dumped before `after` passed");
	advance(t, 50 * NS_PER_MS);
	fr_triggers_signal(t, SIGUSR2);
	fr_triggers_sync(t);
	quick = rec_find(&r, "quick");
	CHECK(quick && rec_count(&r) == 1,
	      "the dump waiting for its tail held back another trigger (%d dumps)", rec_count(&r));
	advance(t, 1450 * NS_PER_MS - 1);
	CHECK(rec_count(&r) == 1, "dumped 1 ns before `after` passed");
	advance(t, 1);
	tail = rec_find(&r, "tail");
	CHECK(tail && rec_count(&r) == 2, "no dump once `after` passed (%d dumps)", rec_count(&r));
	if (tail) {
		CHECK(tail->called_mono - sent_mono == 1500 * NS_PER_MS,
		      "dumped %" PRId64 " ns after the signal, want 1500 ms (after)",
		      tail->called_mono - sent_mono);
		CHECK(tail->f.t1_ns == tail->f.fire_ns + 1500 * NS_PER_MS &&
			      tail->f.t0_ns == tail->f.fire_ns - 2 * FR_NS_PER_S,
		      "window [fire%+" PRId64 " ms, fire%+" PRId64 " ms), want [-2000, +1500)",
		      (tail->f.t0_ns - tail->f.fire_ns) / NS_PER_MS,
		      (tail->f.t1_ns - tail->f.fire_ns) / NS_PER_MS);
		CHECK(tail->f.fire_ns == sent_real,
		      "fire time %" PRId64 " ns after the signal, want the signal's time",
		      tail->f.fire_ns - sent_real);
		CHECK(fr_triggers_last_dump(t, 0) == tail->f.fire_ns, "last dump of tail");
	}
	fr_triggers_stop(t);
	rec_fini(&r);
	free(c);
}

/* ---- manual ----------------------------------------------------------------- */

static void test_manual(void)
{
	struct fr_config *c = cfg_new();
	struct fr_config_trigger *tr;
	struct fr_trigger_fire f;
	struct fr_triggers *t;
	struct rec r;
	int64_t before, last_ok;
	int ret;

	rec_init(&r);
	tr = add_trigger(add_session(c, "db"), FR_TRIGGER_SIGNAL);
	tr->signal = SIGUSR1;
	tr->window_ns = 30 * FR_NS_PER_S;
	add_session(c, "bare");
	t = start(c, &r);

	ret = fr_triggers_manual(t, "nope", 0, &f, NULL, 0);
	CHECK(ret == -ENOENT, "unknown session: %d, want -ENOENT", ret);
	CHECK(rec_count(&r) == 0, "an unknown session dumped");

	before = clock_real(NULL);
	{
		char path[64] = "";

		ret = fr_triggers_manual(t, "db", 0, &f, path, sizeof(path));
		CHECK(ret == 0 && strcmp(path, "dump-of-db") == 0,
		      "manual db: %d, the callback's path \"%s\" not handed back", ret, path);
	}
	/* Synchronous: the dump is recorded when the call returns. */
	CHECK(rec_count(&r) == 1, "%d dumps when manual returned", rec_count(&r));
	if (rec_count(&r) == 1) {
		const struct rec_fire *x = &r.fires[0];

		CHECK(pthread_equal(x->thread, pthread_self()),
		      "manual dump ran on another thread");
		CHECK(strcmp(x->session, "db") == 0 && x->f.session_index == 0,
		      "manual dumped %s (%u)", x->session, x->f.session_index);
		CHECK(x->f.t1_ns - x->f.t0_ns == 30 * FR_NS_PER_S && x->f.t1_ns == x->f.fire_ns,
		      "manual window %" PRId64 " ms ending %" PRId64 " ms after the fire, want the "
		      "first trigger's 30 s ending at it",
		      (x->f.t1_ns - x->f.t0_ns) / NS_PER_MS,
		      (x->f.t1_ns - x->f.fire_ns) / NS_PER_MS);
		CHECK(x->f.fire_ns == before, "fire time %" PRId64 ", want the clock's %" PRId64,
		      x->f.fire_ns, before);
	}
	CHECK(f.session && strcmp(f.session, "db") == 0 && f.t1_ns - f.t0_ns == 30 * FR_NS_PER_S &&
		      f.kind && f.fire_ns > 0,
	      "`fire` not filled");
	CHECK(fr_triggers_last_dump(t, 0) == f.fire_ns, "last dump after a manual one");

	ret = fr_triggers_manual(t, "bare", 0, &f, NULL, 0);
	CHECK(ret == 0 && f.t1_ns - f.t0_ns == 60 * FR_NS_PER_S && f.session_index == 1,
	      "session without triggers: %d, window %" PRId64 " ms, want 60 s", ret,
	      (f.t1_ns - f.t0_ns) / NS_PER_MS);
	ret = fr_triggers_manual(t, "db", 10 * FR_NS_PER_S, &f, NULL, 0);
	CHECK(ret == 0 && f.t1_ns - f.t0_ns == 10 * FR_NS_PER_S,
	      "asked window: %d, window %" PRId64 " ms, want 10 s", ret,
	      (f.t1_ns - f.t0_ns) / NS_PER_MS);
	last_ok = f.fire_ns;
	/* No cooldown between manual dumps. */
	CHECK(rec_count(&r) == 3, "%d dumps after three manual ones", rec_count(&r));

	pthread_mutex_lock(&r.lock);
	r.fail_with = -EIO;
	pthread_mutex_unlock(&r.lock);
	ret = fr_triggers_manual(t, "db", 0, &f, NULL, 0);
	CHECK(ret == -EIO, "the callback's error came back as %d, want -EIO", ret);
	CHECK(fr_triggers_last_dump(t, 0) == last_ok, "a failed dump counts as the last dump");
	CHECK(fr_triggers_suppressed(t, 0) == 0, "manual dumps count as suppressed");

	fr_triggers_stop(t);
	rec_fini(&r);
	free(c);
}

/* A dump by hand while another of the same session is being written is
 * refused as busy, before the callback; other sessions are not held up;
 * the session is free again once the dump returns, failed or not. */
struct manual_arg {
	struct fr_triggers *t;
	int ret;
	char path[64];
};

static void *manual_thread(void *arg)
{
	struct manual_arg *a = arg;
	struct fr_trigger_fire f;

	a->ret = fr_triggers_manual(a->t, "db", 0, &f, a->path, sizeof(a->path));
	return NULL;
}

static void test_manual_busy(void)
{
	struct fr_config *c = cfg_new();
	struct manual_arg a = {0};
	struct fr_trigger_fire f;
	struct timespec until;
	struct rec r;
	pthread_t th;
	char path[64] = "x";
	int ret;

	rec_init(&r);
	add_session(c, "db");
	add_session(c, "web");
	a.t = start(c, &r);
	snprintf(r.hold, sizeof(r.hold), "db");
	CHECK(pthread_create(&th, NULL, manual_thread, &a) == 0, "pthread_create");
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&r.lock);
	while (!r.held && pthread_cond_timedwait(&r.cond, &r.lock, &until) == 0)
		;
	CHECK(r.held, "the first dump by hand never reached the callback");
	pthread_mutex_unlock(&r.lock);

	ret = fr_triggers_manual(a.t, "db", 0, &f, path, sizeof(path));
	CHECK(ret == -EBUSY && path[0] == '\0',
	      "a second dump of db while one is written: %d \"%s\", want -EBUSY", ret, path);
	CHECK(rec_count(&r) == 1, "the busy request reached the callback (%d calls)",
	      rec_count(&r));
	ret = fr_triggers_manual(a.t, "web", 0, &f, path, sizeof(path));
	CHECK(ret == 0, "another session's dump by hand was held up: %d", ret);

	pthread_mutex_lock(&r.lock);
	r.hold[0] = '\0';
	pthread_cond_broadcast(&r.cond);
	pthread_mutex_unlock(&r.lock);
	pthread_join(th, NULL);
	CHECK(a.ret == 0 && strcmp(a.path, "dump-of-db") == 0, "the held dump: %d %s", a.ret,
	      a.path);

	/* Free again, after a success and after a failure. */
	pthread_mutex_lock(&r.lock);
	r.fail_with = -EIO;
	pthread_mutex_unlock(&r.lock);
	ret = fr_triggers_manual(a.t, "db", 0, &f, NULL, 0);
	CHECK(ret == -EIO, "db after a dump: %d, want the callback's -EIO", ret);
	ret = fr_triggers_manual(a.t, "db", 0, &f, NULL, 0);
	CHECK(ret == 0, "db after a failed dump: %d", ret);
	CHECK(rec_count(&r) == 4, "%d calls of the callback, want 4", rec_count(&r));

	fr_triggers_stop(a.t);
	rec_fini(&r);
	free(c);
}

/* ---- reload ----------------------------------------------------------------- */

static void test_reload(void)
{
	struct fr_config *c1 = cfg_new(), *c2 = cfg_new(), *c3 = cfg_new(), *c4 = cfg_new();
	struct fr_config_session *s;
	struct fr_config_trigger *tr;
	struct fr_triggers *t;
	struct rec r;
	int64_t first;

	rec_init(&r);
	tr = add_trigger(add_session(c1, "db"), FR_TRIGGER_SIGNAL);
	tr->signal = SIGUSR1;
	tr->cooldown_ns = 60 * FR_NS_PER_S;
	t = start(c1, &r);
	fr_triggers_signal(t, SIGUSR1);
	fr_triggers_sync(t);
	CHECK(rec_count(&r) == 1, "no dump before the reload");
	first = r.fires[0].f.fire_ns;
	CHECK(first > 0 && fr_triggers_last_dump(t, 0) == first, "no last dump");

	/* db moves to index 1 and keeps its cooldown and counters. */
	tr = add_trigger(add_session(c2, "new"), FR_TRIGGER_SIGNAL);
	tr->signal = SIGUSR2;
	tr = add_trigger(add_session(c2, "db"), FR_TRIGGER_SIGNAL);
	tr->signal = SIGUSR1;
	tr->cooldown_ns = 60 * FR_NS_PER_S;
	CHECK(fr_triggers_set(t, c2) == 0, "reload");
	CHECK(fr_triggers_last_dump(t, 1) == first && fr_triggers_last_dump(t, 0) == 0,
	      "last dumps after the reload: %" PRId64 ", %" PRId64 ", want 0, %" PRId64,
	      fr_triggers_last_dump(t, 0), fr_triggers_last_dump(t, 1), first);
	fr_triggers_signal(t, SIGUSR1);
	fr_triggers_sync(t);
	CHECK(fr_triggers_suppressed(t, 1) == 1,
	      "the cooldown did not survive the reload "
	      "(suppressed %" PRIu64 ")",
	      fr_triggers_suppressed(t, 1));
	CHECK(rec_count(&r) == 1, "dumped inside a cooldown kept across the reload");
	CHECK(fr_triggers_suppressed(t, 0) == 0, "the new session counts suppressions");

	/* The same signal at another index is another trigger: no cooldown. */
	s = add_session(c3, "db");
	tr = add_trigger(s, FR_TRIGGER_CPU_ABOVE);
	tr->percent = 100;
	tr->for_ns = 3600 * FR_NS_PER_S;
	tr = add_trigger(s, FR_TRIGGER_SIGNAL);
	tr->signal = SIGUSR1;
	CHECK(fr_triggers_set(t, c3) == 0, "reload");
	CHECK(fr_triggers_suppressed(t, 0) == 1, "db lost its count of suppressed fires");
	fr_triggers_signal(t, SIGUSR1);
	fr_triggers_sync(t);
	CHECK(rec_count(&r) == 2, "a trigger new at its index was held by a cooldown");
	if (rec_count(&r) == 2)
		CHECK(r.fires[1].f.trigger_index == 1 && r.fires[1].f.session_index == 0,
		      "indexes %u/%u, want 0/1", r.fires[1].f.session_index,
		      r.fires[1].f.trigger_index);

	/* A pending dump follows its session to a new index... */
	s = add_session(c4, "tail");
	tr = add_trigger(s, FR_TRIGGER_SIGNAL);
	tr->signal = SIGUSR2;
	tr->after_ns = 800 * NS_PER_MS;
	CHECK(fr_triggers_set(t, c4) == 0, "reload");
	fr_triggers_signal(t, SIGUSR2);
	fr_triggers_sync(t);
	CHECK(rec_count(&r) == 2, "dumped before `after` passed");
	memmove(&c4->sessions[1], &c4->sessions[0], sizeof(c4->sessions[0]));
	memset(&c4->sessions[0], 0, sizeof(c4->sessions[0]));
	snprintf(c4->sessions[0].name, sizeof(c4->sessions[0].name), "first");
	c4->nsessions = 2;
	CHECK(fr_triggers_set(t, c4) == 0, "reload");
	advance(t, 800 * NS_PER_MS);
	CHECK(rec_count(&r) == 3, "the pending dump was lost by a reload");
	if (rec_count(&r) == 3)
		CHECK(strcmp(r.fires[2].session, "tail") == 0 && r.fires[2].f.session_index == 1,
		      "pending dump of %s at index %u, want tail at 1", r.fires[2].session,
		      r.fires[2].f.session_index);

	/* ...and is dropped with it. */
	tr = &c4->sessions[1].triggers[0];
	tr->cooldown_ns = 0;
	CHECK(fr_triggers_set(t, c4) == 0, "reload");
	fr_triggers_signal(t, SIGUSR2);
	fr_triggers_sync(t);
	c4->nsessions = 1;
	CHECK(fr_triggers_set(t, c4) == 0, "reload");
	advance(t, 1500 * NS_PER_MS);
	CHECK(rec_count(&r) == 3, "a removed session's pending dump was written");

	fr_triggers_stop(t);
	rec_fini(&r);
	free(c1);
	free(c2);
	free(c3);
	free(c4);
}

/* ---- a parsed configuration --------------------------------------------- */

/* The engine takes what the configuration parser produces: signal names,
 * durations and defaults arrive as the engine expects them. */
static void test_parsed(void)
{
	static const char json[] =
		"{\"sessions\": ["
		" {\"name\": \"always\", \"events\": [{\"event\": \"cpu\", \"hz\": 99}]},"
		" {\"name\": \"db\", \"targets\": {\"comm\": [\"postgres\"]},"
		"  \"events\": [{\"event\": \"cpu\", \"hz\": 99}],"
		"  \"triggers\": [{\"on\": \"cpu_above\", \"percent\": 90, \"for\": \"10s\"},"
		"   {\"on\": \"signal\", \"signal\": \"USR2\", \"window\": \"2s\","
		"    \"after\": \"100ms\", \"cooldown\": \"1s\"}]}]}";
	struct fr_config cfg;
	struct fr_triggers *t;
	struct rec r;
	char err[512] = "";
	int ret;

	memset(&cfg, 0, sizeof(cfg));
	ret = fr_config_parse(&cfg, json, sizeof(json) - 1, "test", err, sizeof(err));
	CHECK(ret == 0, "fr_config_parse: %s", err);
	if (ret < 0)
		return;
	rec_init(&r);
	t = start(&cfg, &r);
	fr_triggers_signal(t, SIGUSR2);
	fr_triggers_sync(t);
	CHECK(rec_count(&r) == 0, "dumped before the parsed `after` of 100ms");
	advance(t, 100 * NS_PER_MS);
	CHECK(rec_count(&r) == 1, "a parsed \"USR2\" trigger did not fire on SIGUSR2");
	if (rec_count(&r) == 1) {
		const struct rec_fire *x = &r.fires[0];

		CHECK(strcmp(x->session, "db") == 0 && x->f.session_index == 1 &&
			      x->f.trigger_index == 1,
		      "fired %s %u/%u, want db 1/1", x->session, x->f.session_index,
		      x->f.trigger_index);
		CHECK(x->f.t0_ns == x->f.fire_ns - 2 * FR_NS_PER_S &&
			      x->f.t1_ns == x->f.fire_ns + 100 * NS_PER_MS,
		      "window [fire%+" PRId64 " ms, fire%+" PRId64 " ms), want [-2000, +100)",
		      (x->f.t0_ns - x->f.fire_ns) / NS_PER_MS,
		      (x->f.t1_ns - x->f.fire_ns) / NS_PER_MS);
		CHECK(x->has_trigger && x->trigger.cooldown_ns == FR_NS_PER_S, "cooldown %" PRId64,
		      x->trigger.cooldown_ns);
	}
	fr_triggers_stop(t);
	rec_fini(&r);
	fr_config_fini(&cfg);
}

/* ---- misuse ----------------------------------------------------------------- */

static void test_args(void)
{
	struct fr_config *c = cfg_new();
	struct fr_triggers *t = (struct fr_triggers *)1;
	struct fr_trigger_fire f;
	char err[256] = "";

	CHECK(fr_triggers_start(&t, c, NULL, NULL, err, sizeof(err)) == -EINVAL && !t && err[0],
	      "start without a callback");
	CHECK(fr_triggers_manual(NULL, "db", 0, &f, NULL, 0) == -EINVAL, "manual on NULL");
	fr_triggers_signal(NULL, SIGUSR1);
	CHECK(fr_triggers_last_dump(NULL, 0) == 0 && fr_triggers_suppressed(NULL, 0) == 0,
	      "counters of NULL");
	fr_triggers_stop(NULL);

	/* An engine with no sessions starts, answers and stops. */
	{
		struct rec r;

		rec_init(&r);
		t = start(c, &r);
		fr_triggers_signal(t, SIGUSR1);
		CHECK(fr_triggers_manual(t, "db", 0, &f, NULL, 0) == -ENOENT,
		      "manual without sessions");
		fr_triggers_sync(t);
		CHECK(rec_count(&r) == 0, "dumps without sessions");
		fr_triggers_stop(t);
		rec_fini(&r);
	}

	/* An exit trigger starts the engine whether or not the exit watcher
	 * can be opened (without root, older kernels refuse it: logged, and
	 * exits do not fire); the other triggers work either way. */
	{
		struct fr_config_session *s = add_session(c, "crashy");
		struct fr_config_trigger *tr;
		struct rec r;

		snprintf(s->targets.comms[s->targets.ncomms++], FR_LIMIT_COMM_LEN, "fr-no-such");
		add_trigger(s, FR_TRIGGER_EXIT);
		tr = add_trigger(s, FR_TRIGGER_SIGNAL);
		tr->signal = SIGUSR1;
		rec_init(&r);
		t = start(c, &r);
		fr_triggers_signal(t, SIGUSR1);
		fr_triggers_sync(t);
		CHECK(rec_count(&r) == 1 && r.fires[0].f.trigger_index == 1,
		      "a signal trigger beside an exit trigger did not fire");
		fr_triggers_stop(t);
		rec_fini(&r);
	}
	free(c);
}

/* ---- oom ------------------------------------------------------------------ */

static struct fr_trigger_oom victim(uint32_t pid, const char *comm, const char *cgroup)
{
	struct fr_trigger_oom v = {.pid = pid, .uid = 1000, .rss = 64ull << 20};

	snprintf(v.comm, sizeof(v.comm), "%s", comm);
	snprintf(v.cgroup, sizeof(v.cgroup), "%s", cgroup);
	v.time_ns = clock_real(NULL) - 5;
	return v;
}

static void test_oom(void)
{
	struct fr_config *c = cfg_new();
	struct fr_config_session *db;
	struct fr_config_trigger *tr;
	struct fr_trigger_oom v;
	const struct rec_fire *x;
	struct fr_triggers *t;
	struct rec r;

	rec_init(&r);
	tr = add_trigger(add_session(c, "any"), FR_TRIGGER_OOM);
	tr->cooldown_ns = 10 * FR_NS_PER_S;
	db = add_session(c, "db");
	snprintf(db->targets.comms[db->targets.ncomms++], FR_LIMIT_COMM_LEN, "postgres");
	add_trigger(db, FR_TRIGGER_OOM)->cooldown_ns = 0;
	t = start(c, &r);

	v = victim(4242, "hog", "/work/hog");
	fr_triggers_oom(t, &v);
	fr_triggers_sync(t);
	CHECK(rec_count(&r) == 1, "a hog's kill gave %d dumps, want 1 (session any)",
	      rec_count(&r));
	if (rec_count(&r) >= 1) {
		x = &r.fires[0];
		CHECK(strcmp(x->session, "any") == 0 && strcmp(x->f.kind, "oom") == 0 &&
			      x->f.pid == 4242,
		      "fire: session %s kind %s pid %u", x->session, x->f.kind, x->f.pid);
		CHECK(x->has_oom && x->oom.pid == 4242 && strcmp(x->oom.comm, "hog") == 0 &&
			      strcmp(x->oom.cgroup, "/work/hog") == 0 && x->oom.rss == 64ull << 20,
		      "the fire does not carry its victim");
		CHECK(strcmp(x->f.reason, "pid 4242 (hog) killed by the OOM killer in cgroup "
					  "/work/hog, RSS 64.0 MiB") == 0,
		      "reason \"%s\"", x->f.reason);
	}
	/* postgres: both sessions; but "any" is in its cooldown. */
	v = victim(77, "postgres", "/db");
	fr_triggers_oom(t, &v);
	fr_triggers_sync(t);
	CHECK(rec_count(&r) == 2 && strcmp(r.fires[1].session, "db") == 0,
	      "postgres's kill: %d dumps, the last of %s", rec_count(&r),
	      rec_count(&r) ? r.fires[rec_count(&r) - 1].session : "none");
	CHECK(fr_triggers_suppressed(t, 0) == 1, "suppressed %" PRIu64 ", want 1",
	      fr_triggers_suppressed(t, 0));

	/* A burst past the queue: never waited on, the rest dropped. */
	advance(t, 11 * FR_NS_PER_S);
	for (int i = 0; i < 100; i++) {
		v = victim(1000 + (uint32_t)i, "postgres", "/db");
		fr_triggers_oom(t, &v);
	}
	fr_triggers_sync(t);
	CHECK(rec_count(&r) >= 4 && rec_count(&r) <= 2 + 2 * 32 && rec_count(&r) <= MAX_REC,
	      "a burst of 100 kills gave %d dumps", rec_count(&r));
	fr_triggers_oom(NULL, &v);
	fr_triggers_stop(t);
	rec_fini(&r);
	free(c);
}

/* ---- crash ---------------------------------------------------------------- */

static struct fr_trigger_crash crashed(uint32_t pid, const char *comm, int has_addr)
{
	struct fr_trigger_crash c = {.pid = pid,
				     .tid = pid + 1,
				     .uid = 1000,
				     .signal = SIGSEGV,
				     .code = 1,
				     .has_addr = has_addr,
				     .addr = 0x10};

	snprintf(c.comm, sizeof(c.comm), "%s", comm);
	snprintf(c.cgroup, sizeof(c.cgroup), "/work");
	c.time_ns = clock_real(NULL) - 5;
	return c;
}

/* As oom: any crash fires a session without targets, a session's targets
 * filter, cooldowns suppress, a burst is never waited on. */
static void test_crash(void)
{
	struct fr_config *c = cfg_new();
	struct fr_config_session *db;
	struct fr_config_trigger *tr;
	struct fr_trigger_crash v;
	const struct rec_fire *x;
	struct fr_triggers *t;
	struct rec r;

	rec_init(&r);
	tr = add_trigger(add_session(c, "any"), FR_TRIGGER_CRASH);
	tr->cooldown_ns = 10 * FR_NS_PER_S;
	db = add_session(c, "db");
	snprintf(db->targets.comms[db->targets.ncomms++], FR_LIMIT_COMM_LEN, "postgres");
	add_trigger(db, FR_TRIGGER_CRASH)->cooldown_ns = 0;
	/* An oom trigger is not fired by a crash. */
	add_trigger(add_session(c, "mem"), FR_TRIGGER_OOM);
	t = start(c, &r);

	v = crashed(4242, "crash_prog", 1);
	fr_triggers_crash(t, &v);
	fr_triggers_sync(t);
	CHECK(rec_count(&r) == 1, "a crash gave %d dumps, want 1 (session any)", rec_count(&r));
	if (rec_count(&r) >= 1) {
		x = &r.fires[0];
		CHECK(strcmp(x->session, "any") == 0 && strcmp(x->f.kind, "crash") == 0 &&
			      x->f.pid == 4242,
		      "fire: session %s kind %s pid %u", x->session, x->f.kind, x->f.pid);
		CHECK(x->has_crash && !x->has_oom && x->crash.pid == 4242 && x->crash.tid == 4243 &&
			      strcmp(x->crash.comm, "crash_prog") == 0 &&
			      x->crash.signal == SIGSEGV && x->crash.addr == 0x10,
		      "the fire does not carry its crash");
		CHECK(strcmp(x->f.reason, "pid 4242 (crash_prog) killed by SIGSEGV at 0x10") == 0,
		      "reason \"%s\"", x->f.reason);
	}
	/* postgres: both sessions; but "any" is in its cooldown. */
	v = crashed(77, "postgres", 0);
	fr_triggers_crash(t, &v);
	fr_triggers_sync(t);
	CHECK(rec_count(&r) == 2 && strcmp(r.fires[1].session, "db") == 0,
	      "postgres's crash: %d dumps, the last of %s", rec_count(&r),
	      rec_count(&r) ? r.fires[rec_count(&r) - 1].session : "none");
	if (rec_count(&r) == 2)
		CHECK(strcmp(r.fires[1].f.reason, "pid 77 (postgres) killed by SIGSEGV") == 0,
		      "reason without an address \"%s\"", r.fires[1].f.reason);
	CHECK(fr_triggers_suppressed(t, 0) == 1, "suppressed %" PRIu64 ", want 1",
	      fr_triggers_suppressed(t, 0));

	/* A burst past the queue: never waited on, the rest dropped. */
	advance(t, 11 * FR_NS_PER_S);
	for (int i = 0; i < 100; i++) {
		v = crashed(1000 + (uint32_t)i, "postgres", 1);
		fr_triggers_crash(t, &v);
	}
	fr_triggers_sync(t);
	CHECK(rec_count(&r) >= 4 && rec_count(&r) <= 2 + 2 * 32 && rec_count(&r) <= MAX_REC,
	      "a burst of 100 crashes gave %d dumps", rec_count(&r));
	fr_triggers_crash(NULL, &v);
	fr_triggers_stop(t);
	rec_fini(&r);
	free(c);
}

/* ---- pressure ------------------------------------------------------------- */

/* A second ending now (the test clock) with `some` and `full` ns stalled on
 * `resource`; the other resources not read. */
static struct fr_pressure_tick psi_second(uint32_t resource, uint64_t some, uint64_t full,
					  int has_full)
{
	struct fr_pressure_tick k = {0};

	k.time_ns = clock_real(NULL);
	k.mono_ns = clock_mono(NULL);
	k.interval_ns = FR_NS_PER_S;
	k.valid[resource] = 1;
	k.has_full[resource] = (uint8_t)has_full;
	k.some_ns[resource] = some;
	k.full_ns[resource] = full;
	return k;
}

/* Feeds one second and moves the clock on by one. */
static void psi_feed(struct fr_triggers *t, uint32_t resource, double some_pct, double full_pct,
		     int has_full)
{
	struct fr_pressure_tick k = psi_second(resource, (uint64_t)(some_pct * 1e7),
					       (uint64_t)(full_pct * 1e7), has_full);

	fr_triggers_pressure(t, &k);
	advance(t, FR_NS_PER_S);
}

static void test_pressure(void)
{
	struct fr_config *c = cfg_new();
	struct fr_config_session *s;
	struct fr_config_trigger *tr;
	const struct rec_fire *x;
	struct fr_triggers *t;
	struct rec r;

	rec_init(&r);
	/* cpu: some >= 20% for 3s; memory: full >= 5% for 1s. The session's
	 * targets do not matter: it is the machine's pressure. */
	s = add_session(c, "cpu");
	snprintf(s->targets.comms[s->targets.ncomms++], FR_LIMIT_COMM_LEN, "no-such-comm");
	tr = add_trigger(s, FR_TRIGGER_PRESSURE);
	tr->resource = FR_CONFIG_PRESSURE_CPU;
	tr->above_bp = 2000;
	tr->for_ns = 3 * FR_NS_PER_S;
	tr->cooldown_ns = 10 * FR_NS_PER_S;
	tr = add_trigger(add_session(c, "mem"), FR_TRIGGER_PRESSURE);
	tr->resource = FR_CONFIG_PRESSURE_MEMORY;
	tr->full = 1;
	tr->above_bp = 500;
	tr->for_ns = FR_NS_PER_S;
	tr->cooldown_ns = FR_NS_PER_S;
	t = start(c, &r);

	/* Two seconds above, one below, two above: no run of 3s. */
	psi_feed(t, FR_PRESSURE_CPU, 50, 0, 1);
	psi_feed(t, FR_PRESSURE_CPU, 50, 0, 1);
	psi_feed(t, FR_PRESSURE_CPU, 19.9, 0, 1);
	psi_feed(t, FR_PRESSURE_CPU, 30, 0, 1);
	psi_feed(t, FR_PRESSURE_CPU, 30, 0, 1);
	CHECK(rec_count(&r) == 0, "a broken run fired: %d dumps", rec_count(&r));
	/* Memory's seconds say nothing of the cpu trigger's run. */
	psi_feed(t, FR_PRESSURE_MEMORY, 0, 0, 1);
	psi_feed(t, FR_PRESSURE_CPU, 30, 0, 1);
	psi_feed(t, FR_PRESSURE_CPU, 30, 0, 1);
	CHECK(rec_count(&r) == 0, "a run across a second without cpu fired: %d dumps",
	      rec_count(&r));
	psi_feed(t, FR_PRESSURE_CPU, 60, 0, 1);
	CHECK(rec_count(&r) == 1, "3s above 20%% gave %d dumps, want 1", rec_count(&r));
	if (rec_count(&r) >= 1) {
		x = &r.fires[0];
		CHECK(strcmp(x->session, "cpu") == 0 && strcmp(x->f.kind, "pressure") == 0 &&
			      x->f.pid == 0,
		      "fire: session %s kind %s pid %u", x->session, x->f.kind, x->f.pid);
		CHECK(x->has_pressure && x->pressure.resource == FR_PRESSURE_CPU &&
			      !x->pressure.full && x->pressure.share > 39.9 &&
			      x->pressure.share < 40.1 && x->pressure.above == 20,
		      "the fire's pressure: %u %u %.2f %.2f", x->pressure.resource,
		      x->pressure.full, x->pressure.share, x->pressure.above);
		CHECK(strcmp(x->f.reason, "cpu pressure some 40.0% >= 20% for 3s") == 0,
		      "reason \"%s\"", x->f.reason);
	}
	/* Still above: a new run of 3s, but within the cooldown. */
	for (int i = 0; i < 3; i++)
		psi_feed(t, FR_PRESSURE_CPU, 90, 0, 1);
	CHECK(rec_count(&r) == 1 && fr_triggers_suppressed(t, 0) == 1,
	      "within the cooldown: %d dumps, %" PRIu64 " suppressed", rec_count(&r),
	      fr_triggers_suppressed(t, 0));

	/* full: a file without a full line never fires it; full >= 5% does. */
	psi_feed(t, FR_PRESSURE_MEMORY, 100, 100, 0);
	CHECK(rec_count(&r) == 1, "memory without a full line fired");
	psi_feed(t, FR_PRESSURE_MEMORY, 100, 4.99, 1);
	CHECK(rec_count(&r) == 1, "memory full 4.99%% fired");
	psi_feed(t, FR_PRESSURE_MEMORY, 100, 5, 1);
	x = rec_count(&r) == 2 ? &r.fires[1] : NULL;
	CHECK(x && strcmp(x->session, "mem") == 0 && x->has_pressure && x->pressure.full &&
		      x->pressure.resource == FR_PRESSURE_MEMORY &&
		      strcmp(x->f.reason, "memory pressure full 5.0% >= 5% for 1s") == 0,
	      "memory full 5%%: %d dumps, reason \"%s\"", rec_count(&r), x ? x->f.reason : "");
	/* A stall counted past the second's edge is all of it, no more. */
	advance(t, FR_NS_PER_S);
	{
		struct fr_pressure_tick k =
			psi_second(FR_PRESSURE_MEMORY, 3 * FR_NS_PER_S, 2 * FR_NS_PER_S, 1);

		fr_triggers_pressure(t, &k);
		fr_triggers_sync(t);
	}
	x = rec_count(&r) == 3 ? &r.fires[2] : NULL;
	CHECK(x && x->pressure.share == 100, "over a second: %d dumps, share %.2f", rec_count(&r),
	      x ? x->pressure.share : -1);
	fr_triggers_pressure(NULL, NULL);
	fr_triggers_stop(t);
	rec_fini(&r);
	free(c);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_args();
	test_parsed();
	test_signal();
	test_after();
	test_manual();
	test_manual_busy();
	test_reload();
	test_oom();
	test_crash();
	test_pressure();
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
