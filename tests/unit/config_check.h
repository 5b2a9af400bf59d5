/* Shared by the config tests (test_config.c, test_config_triggers.c,
 * test_config_json.c): the source named in messages, a session "a" with
 * given triggers, comparing two configs field by field, and parsing a
 * config that must be valid and must read back the same once printed. */
#ifndef FR_TESTS_CONFIG_CHECK_H
#define FR_TESTS_CONFIG_CHECK_H

#include "config/config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"

#define SRC "/etc/x.json"

/* A session "a" with the given triggers (array text, or the items of one). */
#define TRIG(arr) "{\"sessions\":[{\"name\":\"a\",\"triggers\":" arr "}]}"
#define TRIGS(items) TRIG("[" items "]")
#define T0 SRC ": sessions[0].triggers[0]"
#define ACC "USR1, USR2, RTMIN..RTMAX forms"

static inline int str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static inline int cfg_equal(const struct fr_config *a, const struct fr_config *b)
{
	if (!str_eq(a->ring_path, b->ring_path) || !str_eq(a->socket_path, b->socket_path) ||
	    a->ring_size != b->ring_size || a->segment_size != b->segment_size ||
	    a->sync_ns != b->sync_ns || a->max_rate_hz != b->max_rate_hz ||
	    a->max_clients != b->max_clients || a->max_age_ns != b->max_age_ns ||
	    a->query_memory != b->query_memory || a->memory != b->memory ||
	    a->nsessions != b->nsessions || !str_eq(a->dumps_dir, b->dumps_dir) ||
	    a->dumps_keep != b->dumps_keep || a->dumps_max_bytes != b->dumps_max_bytes ||
	    a->has_socket_group != b->has_socket_group || a->socket_gid != b->socket_gid ||
	    a->has_admin_group != b->has_admin_group || a->admin_gid != b->admin_gid ||
	    a->user_max_rate_hz != b->user_max_rate_hz || a->dumps_mode != b->dumps_mode ||
	    !str_eq(a->symbols.cache_dir, b->symbols.cache_dir) ||
	    a->symbols.cache_size != b->symbols.cache_size ||
	    a->symbols.cache_file_max != b->symbols.cache_file_max ||
	    a->symbols.ndebug_dirs != b->symbols.ndebug_dirs ||
	    a->export.enabled != b->export.enabled || !str_eq(a->export.url, b->export.url) ||
	    !str_eq(a->export.database, b->export.database) ||
	    !str_eq(a->export.user, b->export.user) ||
	    !str_eq(a->export.password_file, b->export.password_file) ||
	    !str_eq(a->export.ca_file, b->export.ca_file) ||
	    !str_eq(a->export.host, b->export.host) || a->export.batch_ns != b->export.batch_ns ||
	    a->export.hz != b->export.hz || a->export.nevents != b->export.nevents ||
	    memcmp(a->export.events, b->export.events, sizeof(a->export.events)) != 0)
		return 0;
	for (uint32_t i = 0; i < a->symbols.ndebug_dirs; i++)
		if (!str_eq(a->symbols.debug_dirs[i], b->symbols.debug_dirs[i]))
			return 0;
	for (uint32_t s = 0; s < a->nsessions; s++) {
		const struct fr_config_session *x = &a->sessions[s], *y = &b->sessions[s];

		if (strcmp(x->name, y->name) != 0 || x->nevents != y->nevents ||
		    x->targets.npids != y->targets.npids ||
		    x->targets.ncomms != y->targets.ncomms ||
		    strcmp(x->targets.cgroup, y->targets.cgroup) != 0 ||
		    memcmp(x->targets.pids, y->targets.pids,
			   x->targets.npids * sizeof(x->targets.pids[0])) != 0 ||
		    memcmp(x->targets.comms, y->targets.comms, sizeof(x->targets.comms)) != 0 ||
		    x->targets.has_uid != y->targets.has_uid || x->targets.uid != y->targets.uid ||
		    x->nusers != y->nusers ||
		    memcmp(x->users, y->users, x->nusers * sizeof(x->users[0])) != 0 ||
		    x->ntriggers != y->ntriggers)
			return 0;
		for (uint32_t t = 0; t < x->ntriggers; t++) {
			const struct fr_config_trigger *p = &x->triggers[t], *q = &y->triggers[t];

			if (p->kind != q->kind || p->signal != q->signal ||
			    p->percent != q->percent || p->for_ns != q->for_ns ||
			    p->window_ns != q->window_ns || p->after_ns != q->after_ns ||
			    p->cooldown_ns != q->cooldown_ns)
				return 0;
		}
		for (uint32_t e = 0; e < x->nevents; e++)
			if (x->events[e].event != y->events[e].event ||
			    x->events[e].hz != y->events[e].hz ||
			    x->events[e].unwind != y->events[e].unwind ||
			    x->events[e].stack_copy != y->events[e].stack_copy ||
			    x->events[e].period != y->events[e].period ||
			    x->events[e].mechanism != y->events[e].mechanism ||
			    x->events[e].min_wait_ns != y->events[e].min_wait_ns)
				return 0;
	}
	return 1;
}

static inline int is_empty(const struct fr_config *cfg)
{
	static const struct fr_config zero;

	return memcmp(cfg, &zero, sizeof(zero)) == 0;
}

/* Parses `json`, which must be valid; prints it and parses the print,
 * which must be the same configuration. Returns 0 (cfg filled) or -1. */
static inline int parse_ok(struct fr_config *cfg, const char *json, char **printed)
{
	struct fr_config back;
	char err[512];
	char *text;
	int ret;

	ret = fr_config_parse(cfg, json, strlen(json), SRC, err, sizeof(err));
	CHECK(ret == 0, "%s: %d %s", json, ret, err);
	if (ret < 0)
		return -1;
	text = fr_config_to_json(cfg);
	CHECK(text != NULL, "%s: to_json", json);
	if (!text)
		return 0;
	ret = fr_config_parse(&back, text, strlen(text), "printed", err, sizeof(err));
	CHECK(ret == 0, "%s: printed does not parse: %s\n%s", json, err, text);
	CHECK(ret == 0 && cfg_equal(cfg, &back), "%s: round trip differs:\n%s", json, text);
	fr_config_fini(&back);
	if (printed)
		*printed = text;
	else
		free(text);
	return 0;
}

#endif
