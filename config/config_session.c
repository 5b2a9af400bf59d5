/* The configuration's sessions, key by key: a session's name, targets,
 * users and events (its triggers are config/config_trigger.c's), walked
 * in the order config/config.c describes. */
#include "config/config_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/parse.h"
#include "core/store/sample.h"
#include "core/util/time.h"

static void event_list(char *buf, size_t len)
{
	snprintf(buf, len, "%s", FR_EVENT_NAMES);
}

static uint32_t default_hz(const struct fr_config *cfg)
{
	/* An implicit rate follows a lowered limit rather than breaking it. */
	return cfg->max_rate_hz < DEFAULT_HZ ? cfg->max_rate_hz : DEFAULT_HZ;
}

/* "unwind" and "stack_copy" of an event whose id is set (defaults
 * already in `out`). */
static int parse_unwind(struct config_ctx *c, const cJSON *ev, const char *path,
			struct fr_config_event *out)
{
	const cJSON *mode = cJSON_GetObjectItemCaseSensitive(ev, "unwind");
	const cJSON *copy = cJSON_GetObjectItemCaseSensitive(ev, "stack_copy");
	char sub[PATH_MAX_LEN], got[64];
	uint64_t bytes;
	int ret;

	if (mode) {
		config_join(sub, path, "unwind");
		if (!cJSON_IsString(mode) || (strcmp(mode->valuestring, "dwarf") != 0 &&
					      strcmp(mode->valuestring, "fp") != 0))
			return config_fail(c, sub, "must be \"dwarf\" or \"fp\", got %s",
					   config_describe(mode, got, sizeof(got)));
		if (strcmp(mode->valuestring, "fp") == 0) {
			out->unwind = FR_CONFIG_UNWIND_FP;
		} else if (!FR_CONFIG_HAS_DWARF) {
			return config_fail(c, sub,
					   "\"dwarf\" unwinding is only supported on x86-64; "
					   "use \"fp\"");
		} else {
			out->unwind = FR_CONFIG_UNWIND_DWARF;
		}
	}
	if (out->unwind == FR_CONFIG_UNWIND_FP) {
		out->stack_copy = 0;
		if (copy) {
			config_join(sub, path, "stack_copy");
			return config_fail(c, sub,
					   "only used with \"unwind\": \"dwarf\"; leave it out "
					   "with \"fp\"");
		}
		return 0;
	}
	if (!out->stack_copy)
		out->stack_copy = FR_CONFIG_STACK_COPY_DEFAULT;
	if (!copy)
		return 0;
	config_join(sub, path, "stack_copy");
	ret = config_get_size(c, copy, sub, &bytes);
	if (ret < 0)
		return ret;
	if (bytes < FR_CONFIG_STACK_COPY_MIN || bytes > FR_CONFIG_STACK_COPY_MAX)
		return config_fail(c, sub, "must be 512B..65528B (64KiB - 8), got %s",
				   config_describe(copy, got, sizeof(got)));
	/* The kernel copies multiples of 8 bytes. */
	out->stack_copy = (uint32_t)((bytes + 7) & ~7ull);
	return 0;
}

/* Why raw event `name` was refused: how it is malformed, or that its id
 * is taken (core/store/sample_raw.c). */
static int raw_event_fail(struct config_ctx *c, const char *path, const char *name)
{
	struct fr_event_raw raw;
	char err[256];

	if (fr_event_raw_parse(name, &raw, err, sizeof(err)) == 0)
		fr_event_raw_id(&raw, err, sizeof(err));
	return config_fail(c, path, "%s", err);
}

/* "period" (period mode, instead of "hz"): a sample every N events, N
 * nanoseconds of CPU time for cpu; 1..2^53 (what a JSON number holds
 * exactly). */
static int parse_period(struct config_ctx *c, const cJSON *ev, const char *path,
			struct fr_config_session *sess, struct fr_config_event *out)
{
	const cJSON *period = cJSON_GetObjectItemCaseSensitive(ev, "period");
	char sub[PATH_MAX_LEN], got[64];
	double v;

	if (cJSON_GetObjectItemCaseSensitive(ev, "hz")) {
		config_join(sub, path, "hz");
		return config_fail(c, sub,
				   "give either \"hz\" (frequency mode) or \"period\" (period "
				   "mode), not both");
	}
	config_join(sub, path, "period");
	v = cJSON_IsNumber(period) ? period->valuedouble : 0;
	if (!cJSON_IsNumber(period) || v < 1 || v > 9007199254740992.0 || v != (double)(uint64_t)v)
		return config_fail(c, sub,
				   "must be a whole number of events per sample (nanoseconds "
				   "for cpu), 1..2^53, got %s",
				   config_describe(period, got, sizeof(got)));
	out->period = (uint64_t)v;
	out->hz = 0;
	sess->nevents++;
	return 0;
}

/* offcpu's "mechanism" and "min_wait" (unwind already parsed). The perf
 * mechanism copies a stack at every context switch with "dwarf": it has
 * "fp" unless "unwind" says otherwise. */
static int parse_offcpu(struct config_ctx *c, const cJSON *ev, const char *path,
			struct fr_config_event *out)
{
	const cJSON *mech = cJSON_GetObjectItemCaseSensitive(ev, "mechanism");
	const cJSON *min = cJSON_GetObjectItemCaseSensitive(ev, "min_wait");
	char sub[PATH_MAX_LEN], got[64];
	int ret;

	if (out->event != FR_EVENT_OFFCPU) {
		if (!mech && !min)
			return 0;
		config_join(sub, path, mech ? "mechanism" : "min_wait");
		return config_fail(c, sub, "only offcpu takes it; leave it out");
	}
	if (mech) {
		config_join(sub, path, "mechanism");
		if (!cJSON_IsString(mech) || (strcmp(mech->valuestring, "bpf") != 0 &&
					      strcmp(mech->valuestring, "perf") != 0))
			return config_fail(c, sub, "must be \"bpf\" or \"perf\", got %s",
					   config_describe(mech, got, sizeof(got)));
		out->mechanism = strcmp(mech->valuestring, "perf") == 0 ? FR_CONFIG_OFFCPU_PERF
									: FR_CONFIG_OFFCPU_BPF;
	}
	if (out->mechanism == FR_CONFIG_OFFCPU_PERF &&
	    !cJSON_GetObjectItemCaseSensitive(ev, "unwind")) {
		if (cJSON_GetObjectItemCaseSensitive(ev, "stack_copy")) {
			config_join(sub, path, "stack_copy");
			return config_fail(c, sub,
					   "\"perf\" copies stacks only with \"unwind\": "
					   "\"dwarf\" (a copy at every context switch); say so, or "
					   "leave \"stack_copy\" out");
		}
		out->unwind = FR_CONFIG_UNWIND_FP;
		out->stack_copy = 0;
	}
	if (!min)
		return 0;
	config_join(sub, path, "min_wait");
	if (out->mechanism != FR_CONFIG_OFFCPU_BPF)
		return config_fail(c, sub, "only used with \"mechanism\": \"bpf\"");
	ret = config_get_duration(c, min, sub, 0, "\"1ms\", \"200us\"", &out->min_wait_ns);
	if (ret < 0)
		return ret;
	if (out->min_wait_ns > FR_CONFIG_MIN_WAIT_MAX)
		return config_fail(c, sub, "must be 0..10s, got %s",
				   config_describe(min, got, sizeof(got)));
	return 0;
}

/* alloc's "mean": a size, within the library's bounds. */
static int parse_mean(struct config_ctx *c, const cJSON *ev, const char *path,
		      struct fr_config_event *out)
{
	const cJSON *mean = cJSON_GetObjectItemCaseSensitive(ev, "mean");
	char sub[PATH_MAX_LEN], got[64];
	int ret;

	if (!mean)
		return 0;
	config_join(sub, path, "mean");
	if (out->event != FR_EVENT_ALLOC)
		return config_fail(c, sub, "only alloc takes it; leave it out");
	ret = config_get_size(c, mean, sub, &out->mean);
	if (ret < 0)
		return ret;
	if (out->mean < FR_CONFIG_ALLOC_MEAN_MIN || out->mean > FR_CONFIG_ALLOC_MEAN_MAX)
		return config_fail(c, sub, "must be 1 byte to 1GiB, got %s",
				   config_describe(mean, got, sizeof(got)));
	return 0;
}

static int parse_event(struct config_ctx *c, const cJSON *ev, const char *path,
		       struct fr_config_session *sess, struct fr_config *cfg)
{
	static const char *const keys[] = {"event",	 "hz",	      "period",	  "unwind",
					   "stack_copy", "mechanism", "min_wait", "mean"};
	char sub[PATH_MAX_LEN], got[64], names[sizeof(FR_EVENT_NAMES)];
	struct fr_config_event *out = &sess->events[sess->nevents];
	const cJSON *name, *hz;
	int64_t id;
	int ret;

	if (!cJSON_IsObject(ev))
		return config_fail(c, path,
				   "must be an object like {\"event\": \"cpu\", \"hz\": 99}, got %s",
				   config_describe(ev, got, sizeof(got)));
	ret = config_check_keys(c, ev, path, keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;

	config_join(sub, path, "event");
	event_list(names, sizeof(names));
	name = cJSON_GetObjectItemCaseSensitive(ev, "event");
	if (!name)
		return config_fail(c, sub, "missing; name the event to record (accepted: %s)",
				   names);
	if (!cJSON_IsString(name))
		return config_fail(c, sub, "must be an event name string, got %s",
				   config_describe(name, got, sizeof(got)));
	id = fr_event_lookup(name->valuestring);
	if (id < 0 && strncmp(name->valuestring, "raw:", 4) == 0 &&
	    strncmp(name->valuestring, "raw:id=", 7) != 0)
		return raw_event_fail(c, sub, name->valuestring);
	if (id < 0)
		return config_fail(c, sub, "unknown event %s (accepted: %s)",
				   config_describe(name, got, sizeof(got)), names);
	if (id >= FR_EVENT_OOM && id <= FR_EVENT_MEM_PRESSURE)
		return config_fail(c, sub,
				   "%s is recorded always, not by a session: see it with "
				   "`flightrec timeline --event %s`; a session dumps at OOM kills "
				   "with the trigger {\"on\": \"oom\"}",
				   name->valuestring, name->valuestring);
	for (uint32_t i = 0; i < sess->nevents; i++)
		if (sess->events[i].event == (uint32_t)id)
			return config_fail(c, sub, "\"%s\" is already listed in this session",
					   name->valuestring);
	memset(out, 0, sizeof(*out));
	out->event = (uint32_t)id;
	fr_config_event_defaults(out);
	ret = parse_unwind(c, ev, path, out);
	if (ret == 0)
		ret = parse_offcpu(c, ev, path, out);
	if (ret == 0)
		ret = parse_mean(c, ev, path, out);
	if (ret < 0)
		return ret;

	hz = cJSON_GetObjectItemCaseSensitive(ev, "hz");
	if (!fr_event_has_rate((uint32_t)id)) {
		/* offcpu records every context switch; there is no rate. */
		if ((hz || cJSON_GetObjectItemCaseSensitive(ev, "period")) &&
		    out->event == FR_EVENT_ALLOC) {
			config_join(sub, path, hz ? "hz" : "period");
			return config_fail(c, sub,
					   "alloc is sampled by bytes and takes no rate; say "
					   "\"mean\" (e.g. \"512KiB\"), leave \"%s\" out",
					   hz ? "hz" : "period");
		}
		if (hz || cJSON_GetObjectItemCaseSensitive(ev, "period")) {
			config_join(sub, path, hz ? "hz" : "period");
			return config_fail(c, sub,
					   "%s records every context switch and takes no rate; "
					   "leave \"%s\" out",
					   name->valuestring, hz ? "hz" : "period");
		}
		out->hz = 0;
		sess->nevents++;
		return 0;
	}
	if (cJSON_GetObjectItemCaseSensitive(ev, "period"))
		return parse_period(c, ev, path, sess, out);
	out->hz = default_hz(cfg);
	if (hz) {
		config_join(sub, path, "hz");
		ret = config_get_uint(c, hz, sub, 1, cfg->max_rate_hz, &out->hz);
		if (ret < 0)
			return ret;
	}
	sess->nevents++;
	return 0;
}

static int check_name(struct config_ctx *c, const cJSON *name, const char *path,
		      const struct fr_config *cfg)
{
	char got[64];
	const char *s;
	size_t len;

	if (!cJSON_IsString(name))
		return config_fail(c, path, "must be a string, got %s",
				   config_describe(name, got, sizeof(got)));
	s = name->valuestring;
	len = strlen(s);
	if (len == 0)
		return config_fail(c, path, "must not be empty");
	if (len >= FR_CONFIG_NAME_MAX)
		return config_fail(c, path, "must be at most %d characters, got %zu",
				   FR_CONFIG_NAME_MAX - 1, len);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		char shown[8];

		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-')
			continue;
		if (ch >= 0x20 && ch < 0x7f)
			snprintf(shown, sizeof(shown), "'%c'", ch);
		else
			snprintf(shown, sizeof(shown), "0x%02x", ch);
		return config_fail(c, path, "%s has the character %s (accepted: A-Z a-z 0-9 _ . -)",
				   config_describe(name, got, sizeof(got)), shown);
	}
	for (uint32_t i = 0; i < cfg->nsessions; i++)
		if (strcmp(cfg->sessions[i].name, s) == 0)
			return config_fail(c, path,
					   "\"%s\" is already the name of sessions[%" PRIu32 "]", s,
					   i);
	return 0;
}

/* "labels": ["key=value"...] and "label_key": "key" of "targets": which
 * samples, by the labels the program gave them (lib/flightrec/labels.h). */
static int parse_target_labels(struct config_ctx *c, const cJSON *t, const char *path,
			       struct fr_targets *tg)
{
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(t, "labels");
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(t, "label_key"), *v;
	char sub[PATH_MAX_LEN], item[PATH_MAX_LEN], got[64];
	int i = 0;

	if (labels) {
		config_join(sub, path, "labels");
		if (!cJSON_IsArray(labels) || cJSON_GetArraySize(labels) == 0 ||
		    cJSON_GetArraySize(labels) > FR_LIMIT_LABELS)
			return config_fail(c, sub,
					   "must be an array of 1..%d \"key=value\" like "
					   "[\"tenant=42\"], got %s",
					   FR_LIMIT_LABELS,
					   config_describe(labels, got, sizeof(got)));
		cJSON_ArrayForEach(v, labels) {
			config_join_index(item, sub, i++);
			if (!cJSON_IsString(v) || fr_targets_add_label(tg, v->valuestring) < 0)
				return config_fail(c, item,
						   "must be \"key=value\" with at most %d characters "
						   "each side, got %s",
						   FR_LIMIT_LABEL_LEN - 1,
						   config_describe(v, got, sizeof(got)));
		}
	}
	if (key) {
		config_join(sub, path, "label_key");
		if (!cJSON_IsString(key) || fr_targets_set_label_key(tg, key->valuestring) < 0)
			return config_fail(c, sub,
					   "must be a label key of 1..%d characters, got %s",
					   FR_LIMIT_LABEL_LEN - 1,
					   config_describe(key, got, sizeof(got)));
	}
	return 0;
}

/* "targets": {"pids": [N...], "comm": ["name"...], "cgroup": "/path",
 * "uid": USER, "labels": ["key=value"...], "label_key": "key"}. */
static int parse_targets(struct config_ctx *c, const cJSON *t, const char *path,
			 struct fr_targets *tg)
{
	static const char *const keys[] = {"pids", "comm", "cgroup", "uid", "labels", "label_key"};
	char sub[PATH_MAX_LEN], item[PATH_MAX_LEN], got[64];
	const cJSON *pids, *comm, *cgroup, *uid, *v;
	int ret, i;

	if (!cJSON_IsObject(t))
		return config_fail(c, path,
				   "must be an object like {\"comm\": [\"postgres\"]}, got %s",
				   config_describe(t, got, sizeof(got)));
	ret = config_check_keys(c, t, path, keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;
	pids = cJSON_GetObjectItemCaseSensitive(t, "pids");
	if (pids) {
		config_join(sub, path, "pids");
		if (!cJSON_IsArray(pids) || cJSON_GetArraySize(pids) == 0)
			return config_fail(c, sub,
					   "must be a non-empty array of process ids, got %s",
					   config_describe(pids, got, sizeof(got)));
		if (cJSON_GetArraySize(pids) > FR_LIMIT_SESSION_PIDS)
			return config_fail(c, sub, "at most %d pids", FR_LIMIT_SESSION_PIDS);
		i = 0;
		cJSON_ArrayForEach(v, pids) {
			config_join_index(item, sub, i++);
			ret = config_get_uint(c, v, item, 1, INT32_MAX, &tg->pids[tg->npids]);
			if (ret < 0)
				return ret;
			tg->npids++;
		}
	}
	comm = cJSON_GetObjectItemCaseSensitive(t, "comm");
	if (comm) {
		config_join(sub, path, "comm");
		if (!cJSON_IsArray(comm) || cJSON_GetArraySize(comm) == 0)
			return config_fail(c, sub,
					   "must be a non-empty array of command names, got %s",
					   config_describe(comm, got, sizeof(got)));
		if (cJSON_GetArraySize(comm) > FR_LIMIT_COMMS)
			return config_fail(c, sub, "at most %d command names", FR_LIMIT_COMMS);
		i = 0;
		cJSON_ArrayForEach(v, comm) {
			config_join_index(item, sub, i++);
			if (!cJSON_IsString(v) || !v->valuestring[0] ||
			    strlen(v->valuestring) >= FR_LIMIT_COMM_LEN)
				return config_fail(c, item,
						   "must be a command name of 1..%d characters (as "
						   "the kernel keeps it), got %s",
						   FR_LIMIT_COMM_LEN - 1,
						   config_describe(v, got, sizeof(got)));
			snprintf(tg->comms[tg->ncomms++], FR_LIMIT_COMM_LEN, "%s", v->valuestring);
		}
	}
	cgroup = cJSON_GetObjectItemCaseSensitive(t, "cgroup");
	if (cgroup) {
		config_join(sub, path, "cgroup");
		if (!cJSON_IsString(cgroup) || cgroup->valuestring[0] != '/' ||
		    strlen(cgroup->valuestring) >= FR_LIMIT_CGROUP_LEN)
			return config_fail(
				c, sub,
				"must be a cgroup v2 path like "
				"\"/system.slice/nginx.service\" (at most %d characters), got %s",
				FR_LIMIT_CGROUP_LEN - 1, config_describe(cgroup, got, sizeof(got)));
		snprintf(tg->cgroup, sizeof(tg->cgroup), "%s", cgroup->valuestring);
	}
	uid = cJSON_GetObjectItemCaseSensitive(t, "uid");
	if (uid) {
		config_join(sub, path, "uid");
		ret = config_get_id(c, uid, sub, 0, &tg->uid);
		if (ret < 0)
			return ret;
		tg->has_uid = 1;
	}
	return parse_target_labels(c, t, path, tg);
}

/* "users": [USER...], who besides root and the admin group may dump the
 * session by hand. */
static int parse_users(struct config_ctx *c, const cJSON *users, const char *path,
		       struct fr_config_session *sess)
{
	char item[PATH_MAX_LEN], got[64];
	const cJSON *v;
	int i = 0, ret;

	if (!cJSON_IsArray(users) || cJSON_GetArraySize(users) == 0)
		return config_fail(c, path,
				   "must be a non-empty array of user names or uids, got %s",
				   config_describe(users, got, sizeof(got)));
	if (cJSON_GetArraySize(users) > FR_CONFIG_MAX_USERS)
		return config_fail(c, path, "at most %d users", FR_CONFIG_MAX_USERS);
	cJSON_ArrayForEach(v, users) {
		config_join_index(item, path, i++);
		ret = config_get_id(c, v, item, 0, &sess->users[sess->nusers]);
		if (ret < 0)
			return ret;
		sess->nusers++;
	}
	return 0;
}

/* A session's "events" at `path` into sess: one cpu event at the default
 * rate when there is none. Returns 0 or -EINVAL with the message set. */
/* wakeup and runqueue are recorded by offcpu's eBPF program: not beside
 * offcpu's perf mechanism in one session. */
static int check_wake_events(struct config_ctx *c, const char *path,
			     const struct fr_config_session *sess)
{
	char sub[PATH_MAX_LEN];
	int perf = -1, wake = -1;

	for (uint32_t i = 0; i < sess->nevents; i++) {
		if (sess->events[i].event == FR_EVENT_OFFCPU &&
		    sess->events[i].mechanism == FR_CONFIG_OFFCPU_PERF)
			perf = (int)i;
		if (sess->events[i].event == FR_EVENT_WAKEUP ||
		    sess->events[i].event == FR_EVENT_RUNQUEUE)
			wake = (int)i;
	}
	if (perf < 0 || wake < 0)
		return 0;
	config_join_index(sub, path, (uint32_t)wake);
	return config_fail(c, sub,
			   "%s is recorded by offcpu's eBPF program and cannot be with "
			   "\"mechanism\": \"perf\"; leave offcpu's mechanism out",
			   fr_event_name(sess->events[wake].event));
}

static int parse_events(struct config_ctx *c, const cJSON *events, const char *path,
			struct fr_config_session *sess, struct fr_config *cfg)
{
	char evpath[PATH_MAX_LEN], got[64];
	const cJSON *ev;
	int n, i, ret;

	if (!events) {
		sess->events[0].event = FR_EVENT_CPU;
		sess->events[0].hz = default_hz(cfg);
		fr_config_event_defaults(&sess->events[0]);
		sess->nevents = 1;
		return 0;
	}
	if (!cJSON_IsArray(events))
		return config_fail(
			c, path, "must be an array like [{\"event\": \"cpu\", \"hz\": 99}], got %s",
			config_describe(events, got, sizeof(got)));
	n = cJSON_GetArraySize(events);
	if (n == 0)
		return config_fail(c, path, "must list at least one event");
	if (n > FR_LIMIT_EVENTS)
		return config_fail(c, path,
				   "at most %d events per session (the value columns of one "
				   "profile), got %d",
				   FR_LIMIT_EVENTS, n);
	i = 0;
	cJSON_ArrayForEach(ev, events) {
		config_join_index(evpath, path, i++);
		ret = parse_event(c, ev, evpath, sess, cfg);
		if (ret < 0)
			return ret;
	}
	return check_wake_events(c, path, sess);
}

static int parse_session(struct config_ctx *c, const cJSON *js, const char *path,
			 struct fr_config *cfg)
{
	static const char *const keys[] = {"name", "targets", "triggers", "events", "users"};
	struct fr_config_session *sess = &cfg->sessions[cfg->nsessions];
	char sub[PATH_MAX_LEN], got[64];
	const cJSON *name;
	int ret;

	if (!cJSON_IsObject(js))
		return config_fail(
			c, path,
			"must be an object like {\"name\": \"always\", \"events\": [...]}, got %s",
			config_describe(js, got, sizeof(got)));
	ret = config_check_keys(c, js, path, keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;

	config_join(sub, path, "name");
	name = cJSON_GetObjectItemCaseSensitive(js, "name");
	if (!name)
		return config_fail(c, sub, "missing; every session needs a unique name");
	ret = check_name(c, name, sub, cfg);
	if (ret < 0)
		return ret;
	memset(sess, 0, sizeof(*sess));
	snprintf(sess->name, sizeof(sess->name), "%s", name->valuestring);

	if (cJSON_GetObjectItemCaseSensitive(js, "targets")) {
		config_join(sub, path, "targets");
		ret = parse_targets(c, cJSON_GetObjectItemCaseSensitive(js, "targets"), sub,
				    &sess->targets);
		if (ret < 0)
			return ret;
	}

	if (cJSON_GetObjectItemCaseSensitive(js, "users")) {
		config_join(sub, path, "users");
		ret = parse_users(c, cJSON_GetObjectItemCaseSensitive(js, "users"), sub, sess);
		if (ret < 0)
			return ret;
	}

	if (cJSON_GetObjectItemCaseSensitive(js, "triggers")) {
		config_join(sub, path, "triggers");
		ret = config_parse_triggers(c, cJSON_GetObjectItemCaseSensitive(js, "triggers"),
					    sub, sess);
		if (ret < 0)
			return ret;
	}

	config_join(sub, path, "events");
	ret = parse_events(c, cJSON_GetObjectItemCaseSensitive(js, "events"), sub, sess, cfg);
	if (ret < 0)
		return ret;
	cfg->nsessions++;
	return 0;
}

int config_parse_sessions(struct config_ctx *c, const cJSON *sessions, struct fr_config *cfg)
{
	char path[PATH_MAX_LEN], got[64];
	const cJSON *js;
	int n, i, ret;

	if (!sessions) {
		struct fr_config_session *sess = &cfg->sessions[0];

		memset(sess, 0, sizeof(*sess));
		snprintf(sess->name, sizeof(sess->name), "%s", DEFAULT_SESSION);
		sess->events[0].event = FR_EVENT_CPU;
		sess->events[0].hz = default_hz(cfg);
		fr_config_event_defaults(&sess->events[0]);
		/* Off-CPU waits by the eBPF mechanism, cheap enough to be on
		 * by default (docs/performance.md, "Off-CPU by eBPF"). */
		sess->events[1].event = FR_EVENT_OFFCPU;
		fr_config_event_defaults(&sess->events[1]);
		/* Allocation samples of the processes that load libflightrec
		 * (nothing else pays anything), at the library's default mean. */
		sess->events[2].event = FR_EVENT_ALLOC;
		fr_config_event_defaults(&sess->events[2]);
		sess->nevents = 3;
		cfg->nsessions = 1;
		return 0;
	}
	if (!cJSON_IsArray(sessions))
		return config_fail(c, "sessions", "must be an array of sessions, got %s",
				   config_describe(sessions, got, sizeof(got)));
	n = cJSON_GetArraySize(sessions);
	if (n == 0)
		return config_fail(
			c, "sessions",
			"must list at least one session (leave the key out for the default)");
	if (n > FR_CONFIG_MAX_SESSIONS)
		return config_fail(c, "sessions", "at most %d sessions, got %d",
				   FR_CONFIG_MAX_SESSIONS, n);
	i = 0;
	cJSON_ArrayForEach(js, sessions) {
		config_join_index(path, "sessions", i++);
		ret = parse_session(c, js, path, cfg);
		if (ret < 0)
			return ret;
	}
	return 0;
}
