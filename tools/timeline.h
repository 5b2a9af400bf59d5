/* What flightrec timeline and flightrec dump --timeline share: their
 * options (--by, --step, --top besides the query's window and event) and
 * the terminal chart of a timeline's JSON form (core/query/timeline.h). */
#ifndef FR_TOOLS_TIMELINE_H
#define FR_TOOLS_TIMELINE_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/query/timeline.h"

/* Option ids, past tools/query.h's and cmd_dump.c's. */
enum { FR_TL_OPT_BY = 2048, FR_TL_OPT_STEP, FR_TL_OPT_TOP, FR_TL_OPT_TIMELINE };

/* clang-format off */
#define FR_TIMELINE_LONGOPTS                                   \
	{"by", required_argument, NULL, FR_TL_OPT_BY},          \
	{"step", required_argument, NULL, FR_TL_OPT_STEP},      \
	{"top", required_argument, NULL, FR_TL_OPT_TOP}
/* clang-format on */

struct fr_tl_args {
	const char *by_s, *step_s, *top_s;
	struct fr_timeline_request req; /* by, label_key, step_ns, top */
};

/* Takes option `c` if it is a timeline option: 1 when taken, 0 when not
 * one, EXIT_USAGE (after saying why, prefixed with `cmd`) for a bad
 * value. */
int fr_tl_opt(const char *cmd, int c, const char *arg, struct fr_tl_args *a);

/* The grouping of a timeline of `event`: --by's, or by default by
 * process, but throttled (a cgroup's) by cgroup. */
enum fr_timeline_by fr_tl_by(const struct fr_tl_args *a, uint32_t event);

/* Whether any timeline option was given (for commands where they need
 * --timeline). */
int fr_tl_given(const struct fr_tl_args *a);

/* The chart of timeline `tl` (its JSON form, parsed) on `out`, at most
 * 80 columns: one row per step (its start, UTC HH:MM:SS, a bar stacked
 * by group, the step's value), then a legend with each group's total.
 * Returns 0, or 1 after saying on stderr that `tl` is not a timeline. */
int fr_tl_render(FILE *out, const cJSON *tl);

/* Writes the JSON form of `t` (as text) into `out` as the chart, or as
 * JSON with `json`. Returns 0 or 1 (after saying why). */
int fr_tl_print(FILE *out, const char *text, int json);

/* fr_tl_print(), the chart followed by the command that profiles its
 * busiest stretch (fr_tl_suggest()), `how` its start ("flightrec
 * attach"). */
int fr_tl_print_suggest(FILE *out, const char *text, int json, const char *how);

/* The busiest stretch of timeline `tl` (the step with the most, and the
 * steps on either side with at least half as much) and the command that
 * profiles it ("busiest 08:01:00-08:02:00 UTC; its profile:" then `how`
 * --from --to, with --event for an event other than cpu), on `out`.
 * Nothing for a timeline of nothing, or of a series (rss, pressure)
 * that is no profile. */
void fr_tl_suggest(FILE *out, const cJSON *tl, const char *how);

/* flightrec dump --timeline: the timeline of [t0, t1) of `event` from
 * `ring`, of the processes of `targets`' pids and comms (NULL: all),
 * printed as fr_tl_print() does. Returns the exit status. */
struct fr_ring;
int fr_tl_from_ring(struct fr_ring *ring, int64_t t0, int64_t t1, uint32_t event,
		    const struct fr_targets *targets, const struct fr_tl_args *a, int json);

#endif
