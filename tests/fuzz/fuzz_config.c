/* Fuzz target for the configuration parser (config/config.h).
 *
 * A config either parses, or fails with -EINVAL and a message naming the
 * source, leaving nothing allocated behind. One that parses holds values
 * inside the documented ranges (rates, dumps retention, every trigger's
 * kind, signal, percent and durations), is printed with
 * fr_config_to_json(), and that text must parse again to the same
 * configuration: the daemon prints its effective configuration for users
 * to copy into a file.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include "config/config.h"
#include "core/store/sample.h"
#include "core/util/log.h"
#include "core/store/ring.h"
#include "core/util/time.h"

#define SOURCE "fuzz.json"

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_same(const struct fr_config *a, const struct fr_config *b)
{
	FUZZ_CHECK(same_str(a->ring_path, b->ring_path), "ring.path changed");
	FUZZ_CHECK(a->ring_size == b->ring_size, "ring.size %llu became %llu",
		   (unsigned long long)a->ring_size, (unsigned long long)b->ring_size);
	FUZZ_CHECK(a->segment_size == b->segment_size, "ring.segment %llu became %llu",
		   (unsigned long long)a->segment_size, (unsigned long long)b->segment_size);
	FUZZ_CHECK(a->sync_ns == b->sync_ns || (a->sync_ns < 0 && b->sync_ns < 0),
		   "ring.sync %lld became %lld", (long long)a->sync_ns, (long long)b->sync_ns);
	FUZZ_CHECK(a->max_age_ns == b->max_age_ns, "ring.max_age %lld became %lld",
		   (long long)a->max_age_ns, (long long)b->max_age_ns);
	FUZZ_CHECK(same_str(a->socket_path, b->socket_path), "socket changed");
	FUZZ_CHECK(same_str(a->dumps_dir, b->dumps_dir) && a->dumps_keep == b->dumps_keep &&
			   a->dumps_max_bytes == b->dumps_max_bytes,
		   "dumps changed");
	FUZZ_CHECK(a->max_rate_hz == b->max_rate_hz && a->max_clients == b->max_clients,
		   "limits changed");
	FUZZ_CHECK(a->nsessions == b->nsessions, "%u sessions became %u", a->nsessions,
		   b->nsessions);
	for (uint32_t s = 0; s < a->nsessions; s++) {
		const struct fr_config_session *x = &a->sessions[s], *y = &b->sessions[s];

		FUZZ_CHECK(strcmp(x->name, y->name) == 0 && x->nevents == y->nevents &&
				   x->targets.npids == y->targets.npids &&
				   x->targets.ncomms == y->targets.ncomms &&
				   strcmp(x->targets.cgroup, y->targets.cgroup) == 0 &&
				   x->ntriggers == y->ntriggers,
			   "session %u changed", s);
		for (uint32_t t = 0; t < x->ntriggers; t++) {
			const struct fr_config_trigger *p = &x->triggers[t], *q = &y->triggers[t];

			FUZZ_CHECK(p->kind == q->kind && p->signal == q->signal &&
					   p->percent == q->percent && p->for_ns == q->for_ns &&
					   p->window_ns == q->window_ns &&
					   p->after_ns == q->after_ns &&
					   p->cooldown_ns == q->cooldown_ns,
				   "session %u trigger %u changed", s, t);
		}
		for (uint32_t e = 0; e < x->nevents; e++)
			FUZZ_CHECK(x->events[e].event == y->events[e].event &&
					   x->events[e].hz == y->events[e].hz &&
					   x->events[e].period == y->events[e].period,
				   "session %u event %u changed", s, e);
	}
}

static void check_trigger(const struct fr_config_session *x, uint32_t s, uint32_t i)
{
	const struct fr_config_trigger *t = &x->triggers[i];

	FUZZ_CHECK(t->window_ns >= FR_NS_PER_S && t->after_ns >= 0 &&
			   t->window_ns + t->after_ns <= 3600 * FR_NS_PER_S &&
			   t->cooldown_ns >= FR_NS_PER_S,
		   "session %u trigger %u: window %lld after %lld cooldown %lld", s, i,
		   (long long)t->window_ns, (long long)t->after_ns, (long long)t->cooldown_ns);
	switch (t->kind) {
	case FR_TRIGGER_SIGNAL:
		FUZZ_CHECK(t->signal == SIGUSR1 || t->signal == SIGUSR2 ||
				   (t->signal >= SIGRTMIN && t->signal <= SIGRTMAX),
			   "session %u trigger %u on signal %d", s, i, t->signal);
		FUZZ_CHECK(t->percent == 0 && t->for_ns == 0,
			   "session %u trigger %u: a signal trigger with cpu fields", s, i);
		for (uint32_t j = 0; j < i; j++)
			FUZZ_CHECK(x->triggers[j].kind != FR_TRIGGER_SIGNAL ||
					   x->triggers[j].signal != t->signal,
				   "session %u triggers %u and %u on one signal", s, j, i);
		break;
	case FR_TRIGGER_CPU_ABOVE:
		FUZZ_CHECK(t->percent >= 1 && t->percent <= 100 && t->for_ns >= FR_NS_PER_S &&
				   t->signal == 0,
			   "session %u trigger %u: cpu_above %u%% for %lld ns, signal %d", s, i,
			   t->percent, (long long)t->for_ns, t->signal);
		break;
	case FR_TRIGGER_EXIT:
		FUZZ_CHECK(t->signal == 0 && t->percent == 0 && t->for_ns == 0,
			   "session %u trigger %u: an exit trigger with other fields", s, i);
		FUZZ_CHECK(x->targets.npids || x->targets.ncomms || x->targets.cgroup[0],
			   "session %u trigger %u: an exit trigger without targets", s, i);
		break;
	case FR_TRIGGER_OOM:
		FUZZ_CHECK(t->signal == 0 && t->percent == 0 && t->for_ns == 0,
			   "session %u trigger %u: an oom trigger with other fields", s, i);
		break;
	case FR_TRIGGER_CRASH:
		FUZZ_CHECK(t->signal == 0 && t->percent == 0 && t->for_ns == 0,
			   "session %u trigger %u: a crash trigger with other fields", s, i);
		break;
	case FR_TRIGGER_PRESSURE:
		FUZZ_CHECK(t->signal == 0 && t->percent == 0 && t->for_ns >= FR_NS_PER_S &&
				   t->resource <= FR_CONFIG_PRESSURE_IO && t->full <= 1 &&
				   t->above_bp >= 1 && t->above_bp <= 10000 &&
				   !(t->full && t->resource == FR_CONFIG_PRESSURE_CPU &&
				     !x->targets.cgroup[0]),
			   "session %u trigger %u: pressure %u %u %u for %lld", s, i, t->resource,
			   t->full, t->above_bp, (long long)t->for_ns);
		break;
	default: FUZZ_CHECK(0, "session %u trigger %u of kind %u", s, i, t->kind);
	}
}

static void check_valid(const struct fr_config *cfg)
{
	FUZZ_CHECK(cfg->nsessions >= 1 && cfg->nsessions <= FR_CONFIG_MAX_SESSIONS, "%u sessions",
		   cfg->nsessions);
	FUZZ_CHECK(cfg->max_rate_hz >= 1 && cfg->max_clients >= 1, "limits out of range");
	FUZZ_CHECK(cfg->segment_size >= FR_RING_MIN_SEGMENT &&
			   cfg->segment_size <= cfg->ring_size / 2,
		   "segment %llu for ring %llu", (unsigned long long)cfg->segment_size,
		   (unsigned long long)cfg->ring_size);
	FUZZ_CHECK(cfg->dumps_keep >= 1 && cfg->dumps_keep <= 100000, "dumps.keep %u",
		   cfg->dumps_keep);
	FUZZ_CHECK(!cfg->dumps_dir ||
			   (cfg->dumps_dir[0] && strlen(cfg->dumps_dir) < FR_CONFIG_PATH_MAX),
		   "dumps.dir");
	for (uint32_t s = 0; s < cfg->nsessions; s++) {
		const struct fr_config_session *x = &cfg->sessions[s];

		FUZZ_CHECK(x->name[0] && memchr(x->name, '\0', sizeof(x->name)), "session %u name",
			   s);
		FUZZ_CHECK(x->nevents >= 1 && x->nevents <= FR_LIMIT_EVENTS,
			   "session %u has %u events", s, x->nevents);
		for (uint32_t e = 0; e < x->nevents; e++) {
			const struct fr_config_event *ev = &x->events[e];

			/* Period mode (a period of 1..2^53) has no rate. */
			FUZZ_CHECK(fr_event_has_rate(ev->event) && !ev->period
					   ? ev->hz >= 1 && ev->hz <= cfg->max_rate_hz
					   : ev->hz == 0,
				   "session %u event %u at %u Hz (limit %u)", s, e, ev->hz,
				   cfg->max_rate_hz);
			FUZZ_CHECK(ev->period <= (1ull << 53) &&
					   (!ev->period || fr_event_has_rate(ev->event)),
				   "session %u event %u period %llu", s, e,
				   (unsigned long long)ev->period);
		}
		FUZZ_CHECK(x->targets.npids <= FR_LIMIT_SESSION_PIDS &&
				   x->targets.ncomms <= FR_LIMIT_COMMS &&
				   memchr(x->targets.cgroup, '\0', sizeof(x->targets.cgroup)),
			   "session %u targets out of bounds", s);
		FUZZ_CHECK(x->ntriggers <= FR_CONFIG_MAX_TRIGGERS, "session %u has %u triggers", s,
			   x->ntriggers);
		for (uint32_t i = 0; i < x->ntriggers && i < FR_CONFIG_MAX_TRIGGERS; i++)
			check_trigger(x, s, i);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fr_config cfg, again;
	char err[512], err2[512];
	char *json;
	int ret;

	fr_log_level = FR_LOG_ERR;

	err[0] = 'x';
	ret = fr_config_parse(&cfg, (const char *)data, size, SOURCE, err, sizeof(err));
	FUZZ_CHECK(ret == 0 || ret == -EINVAL || ret == -ENOMEM, "parse returned %d", ret);
	if (ret < 0) {
		FUZZ_CHECK(strncmp(err, SOURCE ": ", strlen(SOURCE) + 2) == 0,
			   "error message \"%s\" does not name the source", err);
		FUZZ_CHECK(cfg.ring_path == NULL && cfg.socket_path == NULL &&
				   cfg.dumps_dir == NULL && cfg.nsessions == 0,
			   "a failed parse left a config behind");
		return 0;
	}
	FUZZ_CHECK(err[0] == '\0', "success with a message: %s", err);
	check_valid(&cfg);

	json = fr_config_to_json(&cfg);
	if (json) {
		ret = fr_config_parse(&again, json, strlen(json), "printed", err2, sizeof(err2));
		FUZZ_CHECK(ret == 0 || ret == -ENOMEM,
			   "the printed configuration does not parse: %s\n--- input:\n%.*s\n"
			   "--- printed:\n%s",
			   err2, (int)size, (const char *)data, json);
		if (ret == 0) {
			check_same(&cfg, &again);
			fr_config_fini(&again);
		}
		free(json);
	}
	fr_config_fini(&cfg);
	return 0;
}
