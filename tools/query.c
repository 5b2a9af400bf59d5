/* The options that choose a profile (tools/query.h). */
#include "tools/query.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/store/sample.h"

static int take_event(const char *cmd, const char *name, struct fr_query_args *q);

/* Calls `take` for each comma-separated item of `arg`; `take` says what is
 * wrong with an item (returning non-zero) or stores it. An empty list is
 * refused with `example`. Returns 0 or EXIT_USAGE (after saying why). */
static int parse_list(const char *cmd, const char *opt, const char *arg, const char *example,
		      int (*take)(const char *cmd, const char *item, struct fr_query_args *q),
		      struct fr_query_args *q)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int ret = 0, n = 0;

	if (!copy)
		return EXIT_USAGE;
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		/* A raw event's ",config1=0x..." and ",config2=0x..." (and a
		 * misspelt ",configN=...", which it then refuses) belong to
		 * it, not to the list. */
		while (take == take_event && save && strncmp(tok, "raw:", 4) == 0 &&
		       strncmp(save, "config", 6) == 0 && strchr(save, '=') &&
		       (!strchr(save, ',') || strchr(save, '=') < strchr(save, ','))) {
			save[-1] = ',';
			strtok_r(NULL, ",", &save);
		}
		ret = take(cmd, tok, q) ? EXIT_USAGE : 0;
		n++;
	}
	if (!ret && n == 0) {
		fprintf(stderr, "%s: %s: expected %s, got \"%s\"\n", cmd, opt, example, arg);
		ret = EXIT_USAGE;
	}
	free(copy);
	return ret;
}

static int take_event(const char *cmd, const char *name, struct fr_query_args *q)
{
	int64_t id = fr_event_lookup(name);
	struct fr_event_raw raw;
	char err[256];

	if (id < 0 && strncmp(name, "raw:", 4) == 0 && strncmp(name, "raw:id=", 7) != 0) {
		/* Say what is wrong with it rather than list every event. */
		if (fr_event_raw_parse(name, &raw, err, sizeof(err)) == 0)
			fr_event_raw_id(&raw, err, sizeof(err));
		fprintf(stderr, "%s: --event: %s\n", cmd, err);
		return -1;
	}
	if (id < 0) {
		fprintf(stderr,
			"%s: --event: unknown event \"%s\" (accepted: " FR_EVENT_NAMES ")\n", cmd,
			name);
		return -1;
	}
	for (uint32_t i = 0; i < q->nevents; i++) {
		if (q->events[i] == (uint32_t)id) {
			fprintf(stderr, "%s: --event: \"%s\" is listed twice\n", cmd, name);
			return -1;
		}
	}
	if (q->nevents == FR_LIMIT_EVENTS) {
		fprintf(stderr, "%s: --event: at most %d events\n", cmd, FR_LIMIT_EVENTS);
		return -1;
	}
	q->events[q->nevents++] = (uint32_t)id;
	return 0;
}

/* A label key to split samples by: the recorder's own "cpu" (the CPU a
 * sample was taken on; off by default, it multiplies the rows), or an
 * application label's key (lib/flightrec/labels.h; one such key). */
static int take_label_key(const char *cmd, const char *key, struct fr_query_args *q)
{
	if (strcmp(key, "cpu") == 0) {
		q->by_cpu = 1;
		return 0;
	}
	if (q->targets.label_key[0] || fr_targets_set_label_key(&q->targets, key) < 0) {
		fprintf(stderr,
			"%s: --label-key: expected cpu or one application label key of 1..%d "
			"characters, got \"%s\"\n",
			cmd, FR_LIMIT_LABEL_LEN - 1, key);
		return -1;
	}
	return 0;
}

static int take_comm(const char *cmd, const char *name, struct fr_query_args *q)
{
	if (strlen(name) >= FR_LIMIT_COMM_LEN || q->targets.ncomms == FR_LIMIT_COMMS) {
		fprintf(stderr,
			"%s: --comm: expected at most %d command names of at most %d "
			"characters (as the kernel keeps them), got \"%s\"\n",
			cmd, FR_LIMIT_COMMS, FR_LIMIT_COMM_LEN - 1, name);
		return -1;
	}
	snprintf(q->targets.comms[q->targets.ncomms++], FR_LIMIT_COMM_LEN, "%s", name);
	return 0;
}

/* One item of --hz: N (every event) or EVENT=N. */
static int take_rate(const char *cmd, const char *item, struct fr_query_args *q)
{
	const char *eq = strchr(item, '=');
	char name[FR_EVENT_NAME_MAX];
	int64_t id;
	uint64_t hz;

	if (fr_parse_u64(eq ? eq + 1 : item, 1, 1000000, &hz) < 0 ||
	    (eq && (size_t)(eq - item) >= sizeof(name))) {
		fprintf(stderr,
			"%s: --hz: expected a rate of 1..1000000 samples per second, or "
			"EVENT=RATE like cpu=99,page-faults=19, got \"%s\"\n",
			cmd, item);
		return -1;
	}
	if (!eq) {
		q->hz = hz;
		return 0;
	}
	snprintf(name, sizeof(name), "%.*s", (int)(eq - item), item);
	id = fr_event_lookup(name);
	if (id < 0) {
		fprintf(stderr, "%s: --hz: unknown event \"%s\" (accepted: " FR_EVENT_NAMES ")\n",
			cmd, name);
		return -1;
	}
	if (!fr_event_has_rate((uint32_t)id)) {
		fprintf(stderr, "%s: --hz: %s has no rate (it records every event)\n", cmd, name);
		return -1;
	}
	for (uint32_t i = 0; i < q->nrates; i++) {
		if (q->rate_event[i] == (uint32_t)id) {
			fprintf(stderr, "%s: --hz: \"%s\" is given twice\n", cmd, name);
			return -1;
		}
	}
	if (q->nrates == FR_LIMIT_EVENTS) {
		fprintf(stderr, "%s: --hz: at most %d events\n", cmd, FR_LIMIT_EVENTS);
		return -1;
	}
	q->rate_event[q->nrates] = (uint32_t)id;
	q->rate_hz[q->nrates++] = (uint32_t)hz;
	return 0;
}

/* Gives each event its --hz EVENT=N rate, listing the events named there
 * that --event did not (with no --event, cpu is not implied then: --hz
 * page-faults=19 asks page-faults alone). Returns 0 or EXIT_USAGE. */
static int finish_rates(const char *cmd, struct fr_query_args *q)
{
	memset(q->event_hz, 0, sizeof(q->event_hz));
	for (uint32_t r = 0; r < q->nrates; r++) {
		uint32_t i;

		for (i = 0; i < q->nevents && q->events[i] != q->rate_event[r]; i++)
			;
		if (i == q->nevents) {
			if (q->nevents == FR_LIMIT_EVENTS) {
				fprintf(stderr, "%s: --event and --hz: at most %d events\n", cmd,
					FR_LIMIT_EVENTS);
				return EXIT_USAGE;
			}
			q->events[q->nevents++] = q->rate_event[r];
		}
		q->event_hz[i] = q->rate_hz[r];
	}
	return 0;
}

/* Takes option `c` if it is a query option: returns 1 when taken, 0 when
 * not a query option, EXIT_USAGE (after saying why) when its value is bad. */
int fr_query_opt(const char *cmd, int c, const char *arg, struct fr_query_args *q)
{
	int ret;

	switch (c) {
	case FR_OPT_WINDOW: q->window_s = arg; return 1;
	case FR_OPT_FROM: q->from_s = arg; return 1;
	case FR_OPT_TO: q->to_s = arg; return 1;
	case 'o': q->out_s = arg; return 1;
	case FR_OPT_PID:
		ret = fr_parse_pid_list(arg, q->targets.pids, FR_LIMIT_PIDS, &q->targets.npids);
		if (ret == -E2BIG)
			fprintf(stderr, "%s: --pid: at most %d processes\n", cmd, FR_LIMIT_PIDS);
		else if (ret < 0)
			fprintf(stderr,
				"%s: --pid: expected process ids like 1234 or 1234,5678, "
				"got \"%s\"\n",
				cmd, arg);
		return ret < 0 ? EXIT_USAGE : 1;
	case FR_OPT_HZ:
		q->hz = 0;
		q->nrates = 0;
		return parse_list(cmd, "--hz", arg, "a rate like 99 or cpu=99,page-faults=19",
				  take_rate, q)
			       ? EXIT_USAGE
			       : 1;
	case FR_OPT_EVENT:
		q->nevents = 0;
		return parse_list(cmd, "--event", arg, "event names like cpu or cpu,offcpu",
				  take_event, q)
			       ? EXIT_USAGE
			       : 1;
	case FR_OPT_COMM:
		q->targets.ncomms = 0;
		return parse_list(cmd, "--comm", arg, "command names like postgres", take_comm, q)
			       ? EXIT_USAGE
			       : 1;
	case FR_OPT_CHILDREN: q->targets.children = 1; return 1;
	case FR_OPT_BY_CPU: q->by_cpu = 1; return 1;
	case FR_OPT_ALLOW_EMPTY: q->allow_empty = 1; return 1;
	case FR_OPT_ALLOW_LOSS: q->allow_loss = 1; return 1;
	case FR_OPT_DIFF: q->diff = 1; return 1;
	case FR_OPT_LABEL_KEY:
		return parse_list(cmd, "--label-key", arg, "label keys like cpu", take_label_key, q)
			       ? EXIT_USAGE
			       : 1;
	case FR_OPT_CGROUP:
		if (arg[0] != '/' || strlen(arg) >= FR_LIMIT_CGROUP_LEN) {
			fprintf(stderr,
				"%s: --cgroup: expected a cgroup v2 path like "
				"/system.slice/nginx.service, got \"%s\"\n",
				cmd, arg);
			return EXIT_USAGE;
		}
		snprintf(q->targets.cgroup, sizeof(q->targets.cgroup), "%s", arg);
		return 1;
	case FR_OPT_LABEL:
		if (fr_targets_add_label(&q->targets, arg) < 0) {
			fprintf(stderr,
				"%s: --label: expected KEY=VALUE (at most %d labels, %d characters "
				"each side), got \"%s\"\n",
				cmd, FR_LIMIT_LABELS, FR_LIMIT_LABEL_LEN - 1, arg);
			return EXIT_USAGE;
		}
		return 1;
	case FR_OPT_FORMAT:
		ret = fr_profile_format_parse(arg);
		if (ret < 0) {
			fprintf(stderr,
				"%s: --format: expected one of " FR_PROFILE_FORMAT_NAMES
				", got \"%s\"\n",
				cmd, arg);
			return EXIT_USAGE;
		}
		q->format = (enum fr_profile_format)ret;
		return 1;
	default: return 0;
	}
}

int fr_query_parse_when(const char *cmd, const char *opt, const char *text, int64_t now_ns,
			int64_t *unix_ns)
{
	char why[128];

	if (fr_parse_when(text, now_ns, unix_ns, why, sizeof(why)) == 0)
		return 0;
	fprintf(stderr, "%s: %s: \"%s\" is not a time%s%s%s; expected " FR_QUERY_TIME_FORMS "\n",
		cmd, opt, text, why[0] ? " (" : "", why, why[0] ? ")" : "");
	return EXIT_USAGE;
}

int fr_query_parse_duration(const char *cmd, const char *opt, const char *text, int64_t *ns)
{
	int ret = fr_parse_duration(text, ns);

	if (ret == 0 && *ns > 0)
		return 0;
	if (ret == -ERANGE)
		fprintf(stderr, "%s: %s: \"%s\" is too long a duration\n", cmd, opt, text);
	else if (ret == 0)
		fprintf(stderr, "%s: %s: must be longer than zero, got \"%s\"\n", cmd, opt, text);
	else
		fprintf(stderr,
			"%s: %s: \"%s\" is not a duration; expected one like 500ms, 10s, 5m, "
			"1h30m or 2m30s\n",
			cmd, opt, text);
	return EXIT_USAGE;
}

/* Checks that the window options make one window and parses them.
 * Returns 0 or EXIT_USAGE (after saying why). */
int fr_query_finish(const char *cmd, struct fr_query_args *q)
{
	int64_t now;

	if (finish_rates(cmd, q))
		return EXIT_USAGE;
	if (q->targets.children && !q->targets.npids) {
		fprintf(stderr, "%s: --children goes with --pid (whose children?)\n", cmd);
		return EXIT_USAGE;
	}
	if (q->diff && (q->nevents != 1 || q->events[0] != FR_EVENT_HEAP)) {
		fprintf(stderr,
			"%s: --diff is the heap's growth over the window: it goes with "
			"--event heap alone, e.g. --event heap --from -10m --to -1m --diff\n",
			cmd);
		return EXIT_USAGE;
	}
	if (q->window_s && (q->from_s || q->to_s)) {
		fprintf(stderr, "%s: give either --window or --from/--to, not both\n", cmd);
		return EXIT_USAGE;
	}
	if (!q->window_s && !q->from_s) {
		fprintf(stderr,
			"%s: --window DURATION (or --from TIME) is required, "
			"e.g. --window 60s\n",
			cmd);
		return EXIT_USAGE;
	}
	if (q->to_s && !q->from_s) {
		fprintf(stderr, "%s: --to needs --from\n", cmd);
		return EXIT_USAGE;
	}
	/* One "now" for both ends: --from -10m --to -5m is five minutes. */
	now = fr_now_real_ns();
	if (q->window_s && fr_query_parse_duration(cmd, "--window", q->window_s, &q->window))
		return EXIT_USAGE;
	if (q->from_s && fr_query_parse_when(cmd, "--from", q->from_s, now, &q->from))
		return EXIT_USAGE;
	if (q->to_s) {
		if (fr_query_parse_when(cmd, "--to", q->to_s, now, &q->to))
			return EXIT_USAGE;
		if (q->to <= q->from) {
			char a[64], b[64];

			fprintf(stderr, "%s: --to (%s) must be later than --from (%s)\n", cmd,
				fr_format_time(q->to, a, sizeof(a)),
				fr_format_time(q->from, b, sizeof(b)));
			return EXIT_USAGE;
		}
	}
	if (q->from_s && !q->to_s && q->from >= now) {
		char a[64];

		fprintf(stderr, "%s: --from (%s) is not in the past\n", cmd,
			fr_format_time(q->from, a, sizeof(a)));
		return EXIT_USAGE;
	}
	return 0;
}

void fr_query_attach_req(const struct fr_query_args *q, struct fr_ipc_attach_req *r)
{
	memset(r, 0, sizeof(*r));
	if (q->window_s)
		r->window_ns = q->window;
	r->has_from = q->from_s != NULL;
	r->from_ns = q->from;
	r->has_to = q->to_s != NULL;
	r->to_ns = q->to;
	r->hz = (uint32_t)q->hz;
	r->by_cpu = q->by_cpu;
	r->diff = q->diff;
	r->nevents = q->nevents;
	memcpy(r->events, q->events, sizeof(r->events));
	memcpy(r->event_hz, q->event_hz, sizeof(r->event_hz));
	r->targets.npids = q->targets.npids;
	memcpy(r->targets.pids, q->targets.pids, sizeof(r->targets.pids));
	r->targets.ncomms = q->targets.ncomms;
	memcpy(r->targets.comms, q->targets.comms, sizeof(r->targets.comms));
	memcpy(r->targets.cgroup, q->targets.cgroup, sizeof(r->targets.cgroup));
	r->targets.children = q->targets.children;
	r->targets.nlabels = q->targets.nlabels;
	memcpy(r->targets.label_keys, q->targets.label_keys, sizeof(r->targets.label_keys));
	memcpy(r->targets.label_values, q->targets.label_values, sizeof(r->targets.label_values));
	memcpy(r->targets.label_key, q->targets.label_key, sizeof(r->targets.label_key));
	r->format = q->format;
}

void fr_query_consume_req(const struct fr_query_args *q, struct fr_ipc_consume_req *r)
{
	memset(r, 0, sizeof(*r));
	r->hz = (uint32_t)q->hz;
	r->nevents = q->nevents;
	memcpy(r->events, q->events, sizeof(r->events));
	memcpy(r->event_hz, q->event_hz, sizeof(r->event_hz));
}

int fr_query_refuse_series(const char *cmd, const struct fr_query_args *q)
{
	char name[FR_EVENT_NAME_MAX];

	for (uint32_t i = 0; i < q->nevents; i++) {
		if (!fr_event_is_series(q->events[i]))
			continue;
		fr_event_format(q->events[i], name, sizeof(name));
		fprintf(stderr,
			"%s: --event: %s is a series over time, not a profile: see `flightrec "
			"timeline --event %s`%s%s%s\n",
			cmd, name, name,
			fr_event_is_blackbox(q->events[i]) ? " and `flightrec events --type " : "",
			fr_event_is_blackbox(q->events[i]) ? name : "",
			fr_event_is_blackbox(q->events[i]) ? "`" : "");
		return EXIT_USAGE;
	}
	return 0;
}
