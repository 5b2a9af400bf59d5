/* flightrec fleet: profiles, tops and timelines of many hosts from the
 * ClickHouse store the recorders export to (issue 15, docs/clickhouse.md).
 * fleet.c parses the options and picks the subcommand; fleet_ch.c builds
 * the SQL and streams ClickHouse's answers; fleet_attach.c writes the
 * profile (and feeds `top`); fleet_timeline.c the timeline. */
#ifndef FR_TOOLS_FLEET_H
#define FR_TOOLS_FLEET_H

#include <stdint.h>

#include "core/clickhouse/fleet_pprof.h"
#include "core/clickhouse/rowbinary.h"
#include "core/util/limits.h"
#include "tools/query.h"

/* Most URLs, host globs and labels of one command. */
#define FLEET_MAX_URLS 8
#define FLEET_MAX_HOSTS 32
/* Longest host glob. */
#define FLEET_HOST_MAX 256

struct fleet_args {
	const char *cmd; /* "flightrec fleet attach", for messages */
	char *urls[FLEET_MAX_URLS];
	uint32_t nurls;
	const char *database, *user, *password_file, *ca_file, *out_s;
	int64_t t0, t1, timeout_ns;
	uint32_t event;
	char hosts[FLEET_MAX_HOSTS][FLEET_HOST_MAX];
	uint32_t nhosts;
	/* The options shared with attach: window, --comm, --label (in
	 * q.targets), --event, -o. */
	struct fr_query_args q;
	/* top: -n, --sort, --by host; timeline: --by host|comm, --step,
	 * --top, --json */
	const char *limit_s, *sort_s, *by_s, *step_s, *top_s;
	int json;
};

/* `flightrec fleet SUBCOMMAND ...` (argv[0] "fleet"). Returns the exit
 * status. */
int fr_cmd_fleet(int argc, char **argv);

/* Writes the fleet profile of `a` to `fd` as gzip'ed pprof, saying on
 * stderr why it could not. Returns 0 with *st filled, 1 on failure (a
 * window with no rows is a failure, after saying so). */
int fleet_profile(const struct fleet_args *a, int fd, struct fr_fleet_pprof_stats *st);

/* Prints the timeline of `a` grouped by column `by` ("host" or "comm")
 * in steps of `step` ns (0: the local timeline's default for the window)
 * with the `top` largest groups (0: its default) and "other", as the local
 * timeline's chart or, with `json`, its JSON form. Returns the exit
 * status (1 for a window with no rows, after saying so). */
int fleet_timeline(const struct fleet_args *a, const char *by, int64_t step, uint32_t top,
		   int json);

/* One fleet query on the first of a->urls that answers: `sql`'s answer
 * (RowBinary) streams to `sink`. Returns 0, or 1 after saying why. */
int fleet_ch_query(const struct fleet_args *a, const char *sql,
		   int (*sink)(void *, const void *, size_t), void *arg);

struct fr_sql;
/* fleet_ch_query() of `sql` with its RowBinary answer read row by row by
 * `row` (core/clickhouse/rowbinary.h's fr_rb_row_fn). `what` names the query
 * in messages. Returns 0, or 1 after saying why. */
int fleet_ch_rows(const struct fleet_args *a, const struct fr_sql *sql, fr_rb_row_fn row, void *arg,
		  const char *what);

/* Appends the WHERE clause of `a`'s window and filters (no "WHERE"). */
void fleet_ch_where(const struct fleet_args *a, struct fr_sql *s);

#endif
