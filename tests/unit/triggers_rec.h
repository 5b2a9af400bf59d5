/* Shared by the trigger engine's unit tests: a dump callback that records
 * what it was given (struct rec), waits on it with generous bounds, and
 * sessions and triggers built by hand (struct fr_config), so the tests do
 * not depend on the configuration parser. */
#ifndef FR_TESTS_TRIGGERS_REC_H
#define FR_TESTS_TRIGGERS_REC_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util/log.h"
#include "recorder/triggers/triggers.h"

#include "core/util/time.h"
#include "tests/unit/check.h"

#define NS_PER_MS ((int64_t)1000000)
#define MAX_REC 64

/* ---- a dump callback that records ----------------------------------- */

struct rec_fire {
	struct fr_trigger_fire f;
	char session[FR_CONFIG_NAME_MAX];
	int has_trigger;
	struct fr_config_trigger trigger;
	int has_oom; /* an oom trigger's victim, copied */
	struct fr_trigger_oom oom;
	int has_crash; /* a crash trigger's process, copied */
	struct fr_trigger_crash crash;
	int has_pressure; /* a pressure trigger's hit, copied */
	struct fr_trigger_pressure_hit pressure;
	int64_t called_mono;
	pthread_t thread;
};

struct rec {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int n;
	struct rec_fire fires[MAX_REC];
	int fail_with;			      /* returned by the next call when non-zero */
	char hold[FR_CONFIG_NAME_MAX];	      /* a call for this session waits while set */
	int held;			      /* such a call is waiting */
	const struct fr_trigger_clock *clock; /* the engine's; NULL: the machine's */
};

static inline void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
}

static inline void rec_fini(struct rec *r)
{
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
}

static inline int on_dump(void *arg, const struct fr_trigger_fire *f, char *path, size_t pathlen)
{
	struct rec *r = arg;
	int ret;

	pthread_mutex_lock(&r->lock);
	if (r->n < MAX_REC) {
		struct rec_fire *x = &r->fires[r->n++];

		x->f = *f;
		x->f.session = NULL;
		x->f.trigger = NULL;
		snprintf(x->session, sizeof(x->session), "%s", f->session ? f->session : "(null)");
		x->has_trigger = f->trigger != NULL;
		if (f->trigger)
			x->trigger = *f->trigger;
		x->has_oom = f->oom != NULL;
		if (f->oom)
			x->oom = *f->oom;
		x->f.oom = NULL;
		x->has_crash = f->crash != NULL;
		if (f->crash)
			x->crash = *f->crash;
		x->f.crash = NULL;
		x->has_pressure = f->pressure != NULL;
		if (f->pressure)
			x->pressure = *f->pressure;
		x->f.pressure = NULL;
		x->called_mono = r->clock ? r->clock->mono_ns(r->clock->ctx) : fr_now_mono_ns();
		x->thread = pthread_self();
	}
	/* Only the first call waits: a second one reaching the callback is
	 * recorded and returns, so the test sees it rather than hangs. */
	if (r->hold[0] && !r->held && f->session && strcmp(f->session, r->hold) == 0) {
		r->held = 1;
		pthread_cond_broadcast(&r->cond);
		while (r->hold[0])
			pthread_cond_wait(&r->cond, &r->lock);
		r->held = 0;
	}
	ret = r->fail_with;
	r->fail_with = 0;
	if (path && ret == 0)
		snprintf(path, pathlen, "dump-of-%s", f->session);
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/* The CLOCK_REALTIME time `ms` from now, for pthread_cond_timedwait. */
static inline struct timespec deadline(int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= FR_NS_PER_S) {
		ts.tv_sec++;
		ts.tv_nsec -= FR_NS_PER_S;
	}
	return ts;
}

static inline int rec_count(struct rec *r)
{
	int n;

	pthread_mutex_lock(&r->lock);
	n = r->n;
	pthread_mutex_unlock(&r->lock);
	return n;
}

/* The first recorded dump of `session`, or NULL. */
static inline const struct rec_fire *rec_find(struct rec *r, const char *session)
{
	const struct rec_fire *x = NULL;

	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < r->n && !x; i++)
		if (strcmp(r->fires[i].session, session) == 0)
			x = &r->fires[i];
	pthread_mutex_unlock(&r->lock);
	return x;
}

/* Waits for up to `ms` for a dump of `session` naming process `pid` (0:
 * any). */
static inline const struct rec_fire *rec_wait_pid(struct rec *r, const char *session, uint32_t pid,
						  int ms)
{
	struct timespec ts = deadline(ms);
	const struct rec_fire *x;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		x = NULL;
		for (int i = 0; i < r->n && !x; i++)
			if (strcmp(r->fires[i].session, session) == 0 &&
			    (!pid || r->fires[i].f.pid == pid))
				x = &r->fires[i];
		if (x || pthread_cond_timedwait(&r->cond, &r->lock, &ts) != 0)
			break;
	}
	pthread_mutex_unlock(&r->lock);
	return x;
}

/* Waits for a dump of `session` for up to `ms`. */
static inline const struct rec_fire *rec_wait_session(struct rec *r, const char *session, int ms)
{
	return rec_wait_pid(r, session, 0, ms);
}

/* ---- configurations by hand -------------------------------------------- */

static inline struct fr_config *cfg_new(void)
{
	struct fr_config *c = calloc(1, sizeof(*c));

	if (!c) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return c;
}

static inline struct fr_config_session *add_session(struct fr_config *c, const char *name)
{
	struct fr_config_session *s = &c->sessions[c->nsessions++];

	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->nevents = 1;
	return s;
}

/* A trigger with the parser's defaults: window 60s, after 0, cooldown
 * 60s, for 10s. */
static inline struct fr_config_trigger *add_trigger(struct fr_config_session *s, uint32_t kind)
{
	struct fr_config_trigger *tr = &s->triggers[s->ntriggers++];

	memset(tr, 0, sizeof(*tr));
	tr->kind = kind;
	tr->window_ns = 60 * FR_NS_PER_S;
	tr->after_ns = 0;
	tr->cooldown_ns = 60 * FR_NS_PER_S;
	tr->for_ns = 10 * FR_NS_PER_S;
	return tr;
}

/* Starts the engine on `clock` (NULL: the machine's). */
/* Starts the engine on `clock` (NULL: the machine's), recording into `r`. */
static inline struct fr_triggers *start_on(const struct fr_config *c, struct rec *r,
					   const struct fr_trigger_clock *clock)
{
	struct fr_triggers *t = NULL;
	char err[256] = "";
	int ret;

	r->clock = clock;
	ret = fr_triggers_start_clock(&t, c, clock, on_dump, r, err, sizeof(err));
	CHECK(ret == 0 && t, "fr_triggers_start: %d (%s)", ret, err);
	if (!t)
		exit(1);
	return t;
}

#endif
