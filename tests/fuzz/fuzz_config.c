/* Fuzz target for the configuration parser (config/config.h).
 *
 * A config either parses, or fails with -EINVAL and a message naming the
 * source, leaving nothing allocated behind. One that parses is printed with fr_config_to_json(),
 * and that text must parse again to the same configuration: the daemon
 * prints its effective configuration for users to copy into a file.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <string.h>

#include "config/config.h"
#include "core/sample.h"
#include "core/log.h"
#include "core/ring.h"

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
	FUZZ_CHECK(a->max_rate_hz == b->max_rate_hz && a->max_clients == b->max_clients,
		   "limits changed");
	FUZZ_CHECK(a->nsessions == b->nsessions, "%u sessions became %u", a->nsessions,
		   b->nsessions);
	for (uint32_t s = 0; s < a->nsessions; s++) {
		const struct fr_config_session *x = &a->sessions[s], *y = &b->sessions[s];

		FUZZ_CHECK(strcmp(x->name, y->name) == 0 && x->nevents == y->nevents &&
				   x->npids == y->npids && x->ncomms == y->ncomms &&
				   strcmp(x->cgroup, y->cgroup) == 0,
			   "session %u changed", s);
		for (uint32_t e = 0; e < x->nevents; e++)
			FUZZ_CHECK(x->events[e].event == y->events[e].event &&
					   x->events[e].hz == y->events[e].hz,
				   "session %u event %u changed", s, e);
	}
}

static void check_valid(const struct fr_config *cfg)
{
	FUZZ_CHECK(cfg->nsessions >= 1 && cfg->nsessions <= FR_CONFIG_MAX_SESSIONS,
		   "%u sessions", cfg->nsessions);
	FUZZ_CHECK(cfg->max_rate_hz >= 1 && cfg->max_clients >= 1, "limits out of range");
	FUZZ_CHECK(cfg->segment_size >= FR_RING_MIN_SEGMENT &&
			   cfg->segment_size <= cfg->ring_size / 2,
		   "segment %llu for ring %llu", (unsigned long long)cfg->segment_size,
		   (unsigned long long)cfg->ring_size);
	for (uint32_t s = 0; s < cfg->nsessions; s++) {
		const struct fr_config_session *x = &cfg->sessions[s];

		FUZZ_CHECK(x->name[0] && memchr(x->name, '\0', sizeof(x->name)),
			   "session %u name", s);
		FUZZ_CHECK(x->nevents >= 1 && x->nevents <= FR_CONFIG_MAX_EVENTS,
			   "session %u has %u events", s, x->nevents);
		for (uint32_t e = 0; e < x->nevents; e++)
			FUZZ_CHECK(fr_event_has_rate(x->events[e].event)
					   ? x->events[e].hz >= 1 && x->events[e].hz <= cfg->max_rate_hz
					   : x->events[e].hz == 0,
				   "session %u event %u at %u Hz (limit %u)", s, e, x->events[e].hz,
				   cfg->max_rate_hz);
		FUZZ_CHECK(x->npids <= FR_CONFIG_MAX_TARGETS && x->ncomms <= FR_CONFIG_MAX_COMMS &&
				   memchr(x->cgroup, '\0', sizeof(x->cgroup)),
			   "session %u targets out of bounds", s);
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
		FUZZ_CHECK(cfg.ring_path == NULL && cfg.socket_path == NULL && cfg.nsessions == 0,
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
