/* The options that choose a profile, shared by flightrec attach, dump and
 * top: which window, which events and processes, which rate, where to
 * write and in what format. */
#ifndef FR_TOOLS_QUERY_H
#define FR_TOOLS_QUERY_H

#include <stdint.h>

#include "core/query/profile.h"
#include "core/query/targets.h"
#include "ipc/msg.h"

#define EXIT_USAGE 2

/* Option ids of the flightrec commands (getopt_long values). */
/* clang-format off */
enum {
	FR_OPT_WINDOW = 256, FR_OPT_FROM, FR_OPT_TO, FR_OPT_PID, FR_OPT_HZ, FR_OPT_SOCKET,
	FR_OPT_RING, FR_OPT_INFO, FR_OPT_JSON, FR_OPT_FORMAT, FR_OPT_EVENT, FR_OPT_COMM,
	FR_OPT_CGROUP, FR_OPT_FOLLOW, FR_OPT_COUNT, FR_OPT_SESSION, FR_OPT_CHILDREN,
	FR_OPT_SORT, FR_OPT_SINCE_LAST, FR_OPT_LABEL, FR_OPT_LABEL_KEY, FR_OPT_BY_CPU,
	FR_OPT_DIFF,
	FR_OPT_ALLOW_EMPTY = 400, FR_OPT_ALLOW_LOSS,
};
/* clang-format on */

/* Options shared by attach and dump: which window, which processes, which
 * rate, where to write. */
struct fr_query_args {
	const char *window_s, *from_s, *to_s, *out_s;
	int64_t window, from, to;
	uint64_t hz; /* --hz N: every event; 0: as recorded */
	enum fr_profile_format format;
	uint32_t nevents; /* 0: cpu */
	uint32_t events[FR_LIMIT_EVENTS];
	/* --hz EVENT=N,...: as given; fr_query_finish() lists the events
	 * named here that --event did not (no --event: these are the
	 * events) and sets event_hz, the rate of events[i] (0: hz). */
	uint32_t nrates;
	uint32_t rate_event[FR_LIMIT_EVENTS], rate_hz[FR_LIMIT_EVENTS];
	uint32_t event_hz[FR_LIMIT_EVENTS];
	struct fr_targets targets; /* has_uid unused: the daemon decides */
	int by_cpu;		   /* --by-cpu, --label-key cpu: a "cpu" label */
	int allow_empty;	   /* --allow-empty: no sample is no failure */
	int allow_loss;		   /* --allow-loss: samples lost, a stall: no failure */
	int diff;		   /* --diff: the heap's growth over the window */
};

/* One option a line. */
/* clang-format off */
#define FR_QUERY_LONGOPTS                                          \
	{"window", required_argument, NULL, FR_OPT_WINDOW},        \
	{"from", required_argument, NULL, FR_OPT_FROM},            \
	{"to", required_argument, NULL, FR_OPT_TO},                \
	{"output", required_argument, NULL, 'o'},               \
	{"pid", required_argument, NULL, FR_OPT_PID},              \
	{"hz", required_argument, NULL, FR_OPT_HZ},                \
	{"event", required_argument, NULL, FR_OPT_EVENT},          \
	{"comm", required_argument, NULL, FR_OPT_COMM},            \
	{"cgroup", required_argument, NULL, FR_OPT_CGROUP},        \
	{"children", no_argument, NULL, FR_OPT_CHILDREN},          \
	{"format", required_argument, NULL, FR_OPT_FORMAT},        \
	{"label", required_argument, NULL, FR_OPT_LABEL},          \
	{"label-key", required_argument, NULL, FR_OPT_LABEL_KEY},  \
	{"by-cpu", no_argument, NULL, FR_OPT_BY_CPU},              \
	{"diff", no_argument, NULL, FR_OPT_DIFF},                  \
	{"allow-empty", no_argument, NULL, FR_OPT_ALLOW_EMPTY},    \
	{"allow-loss", no_argument, NULL, FR_OPT_ALLOW_LOSS}
/* clang-format on */

/* Takes option `c` if it is a query option: returns 1 when taken, 0 when
 * not a query option, EXIT_USAGE (after saying why, prefixed with `cmd`,
 * e.g. "flightrec attach") when its value is bad. */
int fr_query_opt(const char *cmd, int c, const char *arg, struct fr_query_args *q);

/* The examples every time option's error gives. */
#define FR_QUERY_TIME_FORMS "-10m, 13:05, 13:05:00, 2026-11-24T13:05:00+01:00 or @1732453500"

/* Parses option `opt` (e.g. "--from") of `cmd` (e.g. "flightrec attach") as a
 * time point relative to `now_ns` (fr_parse_when: relative, clock, RFC
 * 3339, Unix seconds). Returns 0, or EXIT_USAGE after saying
 * "cmd: --from: "13:61" is not a time (minutes go from 00 to 59); ...". */
int fr_query_parse_when(const char *cmd, const char *opt, const char *text, int64_t now_ns,
			int64_t *unix_ns);

/* Parses option `opt` of `cmd` as a positive duration ("1h30m", "500ms").
 * Returns 0, or EXIT_USAGE after saying why. */
int fr_query_parse_duration(const char *cmd, const char *opt, const char *text, int64_t *ns);

/* Checks that the window options make one window and parses them, and
 * gives each event its --hz rate. Returns 0 or EXIT_USAGE (after saying
 * why). */
int fr_query_finish(const char *cmd, struct fr_query_args *q);

/* Fills an attach request with the query: its window (as given: --window,
 * or --from and maybe --to), events, processes, rate and format. */
void fr_query_attach_req(const struct fr_query_args *q, struct fr_ipc_attach_req *r);

/* Fills a consume request (attach --follow) with the query's events and
 * rate. */
void fr_query_consume_req(const struct fr_query_args *q, struct fr_ipc_consume_req *r);

/* Refuses, with a message pointing to `flightrec timeline --event E`, the
 * events that are series over time rather than profiles (oom, rss,
 * memory-pressure): a profile of them would read like one of CPU. Returns
 * 0 or EXIT_USAGE (after saying why). */
int fr_query_refuse_series(const char *cmd, const struct fr_query_args *q);

#endif
