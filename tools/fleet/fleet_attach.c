/* flightrec fleet attach: a profile of many hosts' window from ClickHouse.
 *
 * Two queries, both aggregated by ClickHouse on the cluster-wide tables:
 * first the stacks the window's samples use (their frames, each stack
 * once), interned by core/clickhouse/fleet_pprof.c as they stream in; then the
 * totals per (host, stack), each written as one sample with a "host"
 * label as it arrives. Memory is the window's distinct stacks, never its
 * rows; the profile is the same pprof, with the same sample types, that
 * `flightrec attach` writes for the event.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clickhouse/ch_schema.h"
#include "core/clickhouse/fleet_rows.h"
#include "core/clickhouse/fleet_sql.h"
#include "core/clickhouse/rowbinary.h"
#include "core/store/sample.h"
#include "core/util/parse.h"
#include "fr_version.h"
#include "tools/fleet/fleet.h"

/* The stacks query's columns, in the order fr_fleet_stack_row() reads:
 * stack_hash, then the parallel arrays of the frames (leaf first). */
#define STACK_COLUMNS "stack_hash, any(function), any(file), any(line), any(mapping), any(build_id)"

struct fd_sink {
	int fd;
};

static int write_fd(void *arg, const void *buf, size_t len)
{
	struct fd_sink *s = arg;
	const char *p = buf;

	while (len) {
		ssize_t n = write(s->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The comments that head a fleet profile: version, window, filters. */
static void comments(const struct fleet_args *a, struct fr_fleet_pprof *fp)
{
	char line[1024], t0[64], t1[64], dur[32];
	size_t n;

	fr_fleet_pprof_comment(fp, "flightrec " FR_VERSION " fleet attach (ClickHouse)");
	snprintf(line, sizeof(line), "window %s .. %s (%s)", fr_format_time(a->t0, t0, sizeof(t0)),
		 fr_format_time(a->t1, t1, sizeof(t1)),
		 fr_format_duration(a->t1 - a->t0, dur, sizeof(dur)));
	fr_fleet_pprof_comment(fp, line);
	n = (size_t)snprintf(line, sizeof(line), "database %s on %s", a->database, a->urls[0]);
	for (uint32_t i = 0; i < a->nhosts && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s", i ? "," : "; hosts ",
				      a->hosts[i]);
	for (uint32_t i = 0; i < a->q.targets.ncomms && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s", i ? "," : "; comm ",
				      a->q.targets.comms[i]);
	for (uint32_t i = 0; i < a->q.targets.nlabels && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "; label %s=%s",
				      a->q.targets.label_keys[i], a->q.targets.label_values[i]);
	fr_fleet_pprof_comment(fp, line);
}

/* The totals per (host, stack) of the window, ClickHouse's answer kept as
 * it came in `spool`. Returns 0 or 1 after saying why. */
static int spool_totals(const struct fleet_args *a, int spool, uint64_t *bytes)
{
	struct fd_sink sink = {spool};
	struct fr_sql sql;
	int ret;

	fr_sql_init(&sql, 0);
	fr_sql_add(&sql, "SELECT host, stack_hash, sum(count), sum(value) FROM " FR_CH_SAMPLES_ALL
			 " WHERE ");
	fleet_ch_where(a, &sql);
	fr_sql_add(&sql, " GROUP BY host, stack_hash FORMAT RowBinary");
	if (sql.err) {
		fprintf(stderr, "%s: the samples query: %s\n", a->cmd, strerror(-sql.err));
		ret = 1;
	} else {
		ret = fleet_ch_query(a, sql.buf, write_fd, &sink);
	}
	fr_sql_free(&sql);
	*bytes = ret == 0 ? (uint64_t)lseek(spool, 0, SEEK_CUR) : 0;
	return ret;
}

/* Reads the spooled totals back into the profile. Returns 0 or 1. */
static int replay_totals(const struct fleet_args *a, int spool, struct fr_fleet_rows *rows)
{
	struct fr_rb_stream rs;
	static char buf[1 << 16];
	ssize_t n = 0;
	int ret = 0;

	if (lseek(spool, 0, SEEK_SET) < 0)
		return 1;
	fr_rb_stream_init(&rs, fr_fleet_sample_row, rows, 0);
	while (ret == 0 && (n = read(spool, buf, sizeof(buf))) > 0)
		ret = fr_rb_stream_feed(&rs, buf, (size_t)n);
	if (ret == 0)
		ret = n < 0 ? -errno : fr_rb_stream_end(&rs);
	fr_rb_stream_free(&rs);
	if (ret < 0)
		fprintf(stderr, "%s: ClickHouse's answer to the samples query is malformed: %s\n",
			a->cmd, strerror(-ret));
	return ret < 0;
}

static void no_samples(const struct fleet_args *a)
{
	char t0[64], t1[64];

	fprintf(stderr, "%s: no samples of %s in %s .. %s%s\n", a->cmd, fr_event_name(a->event),
		fr_format_time(a->t0, t0, sizeof(t0)), fr_format_time(a->t1, t1, sizeof(t1)),
		a->nhosts || a->q.targets.ncomms || a->q.targets.nlabels ? " matching the filters"
									 : "");
}

int fleet_profile(const struct fleet_args *a, int fd, struct fr_fleet_pprof_stats *st)
{
	struct fr_fleet_pprof_opts o = {
		.event = a->event,
		.name = fr_event_name(a->event),
		.unit = fr_event_unit(a->event),
		.t0 = a->t0,
		.t1 = a->t1,
	};
	struct fd_sink out = {fd};
	struct fr_fleet_rows *sr = calloc(1, sizeof(*sr));
	int spool = memfd_create("flightrec-fleet-totals", MFD_CLOEXEC);
	uint64_t spooled = 0;
	struct fr_sql sql;
	int ret = 1;

	fr_sql_init(&sql, 0);
	if (!sr || spool < 0) {
		fprintf(stderr, "%s: %s\n", a->cmd, sr ? strerror(errno) : "out of memory");
		goto out;
	}
	/* The totals first, kept aside: an exporter inserts a batch's
	 * stacks before its samples, so the stacks asked for afterwards
	 * include every stack these totals name, even those of a batch
	 * that landed in between. */
	if (spool_totals(a, spool, &spooled))
		goto out;
	if (!spooled) {
		no_samples(a);
		goto out;
	}
	sr->fp = fr_fleet_pprof_new(&o, write_fd, &out);
	if (!sr->fp) {
		fprintf(stderr, "%s: out of memory\n", a->cmd);
		goto out;
	}
	comments(a, sr->fp);
	/* The stacks the window uses, each once (a stack may be on several
	 * shards, and twice on one until ReplacingMergeTree merges): the
	 * samples' stack ids are found on the initiator (GLOBAL IN) and sent
	 * to every shard. */
	fr_sql_add(&sql,
		   "SELECT " STACK_COLUMNS " FROM " FR_CH_STACKS_ALL
		   " WHERE stack_hash GLOBAL IN (SELECT DISTINCT stack_hash FROM " FR_CH_SAMPLES_ALL
		   " WHERE ");
	fleet_ch_where(a, &sql);
	fr_sql_add(&sql, ") GROUP BY stack_hash FORMAT RowBinary");
	if (fleet_ch_rows(a, &sql, fr_fleet_stack_row, sr, "stacks") || replay_totals(a, spool, sr))
		goto out;
	ret = fr_fleet_pprof_finish(sr->fp, st);
	if (ret < 0) {
		fprintf(stderr, "%s: cannot write the profile: %s\n", a->cmd, strerror(-ret));
		ret = 1;
	} else if (!st->rows) {
		no_samples(a);
		ret = 1;
	}
out:
	fr_sql_free(&sql);
	if (sr)
		fr_fleet_pprof_free(sr->fp);
	free(sr);
	if (spool >= 0)
		close(spool);
	return ret;
}
