/* Fleet queries on ClickHouse: the WHERE clause of a command's window and
 * filters, and one query run over HTTP on the first server that answers,
 * its RowBinary answer streamed to a sink or read row by row (see tools/fleet/fleet.h).
 *
 * Every query is sent with readonly=1 (nothing a user typed could change
 * the store even if it left its literal, which fleet_sql.c prevents), a
 * max_execution_time from --timeout, and wait_end_of_query=1: ClickHouse
 * then sends the answer only once the query has finished, so a failure
 * half-way is an HTTP error, never an answer cut short that would read as
 * a smaller profile.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clickhouse/ch_schema.h"
#include "core/clickhouse/fleet_sql.h"
#include "core/clickhouse/rowbinary.h"
#include "core/store/sample.h"
#include "core/util/http.h"
#include "tools/fleet/fleet.h"
#include "core/util/time.h"

void fleet_ch_where(const struct fleet_args *a, struct fr_sql *s)
{
	fr_sql_add(s, "time >= %" PRId64 " AND time < %" PRId64 " AND event = ", a->t0, a->t1);
	fr_sql_str(s, fr_event_name(a->event));
	if (a->nhosts) {
		fr_sql_add(s, " AND (");
		for (uint32_t i = 0; i < a->nhosts; i++) {
			fr_sql_add(s, "%shost LIKE ", i ? " OR " : "");
			fr_sql_like_glob(s, a->hosts[i]);
		}
		fr_sql_add(s, ")");
	}
	if (a->q.targets.ncomms) {
		fr_sql_add(s, " AND comm IN (");
		for (uint32_t i = 0; i < a->q.targets.ncomms; i++) {
			fr_sql_add(s, "%s", i ? ", " : "");
			fr_sql_str(s, a->q.targets.comms[i]);
		}
		fr_sql_add(s, ")");
	}
	/* Every --label must be on the sample: a key and its value at the
	 * same index of the parallel arrays. */
	for (uint32_t i = 0; i < a->q.targets.nlabels; i++) {
		fr_sql_add(s, " AND arrayExists((k, v) -> k = ");
		fr_sql_str(s, a->q.targets.label_keys[i]);
		fr_sql_add(s, " AND v = ");
		fr_sql_str(s, a->q.targets.label_values[i]);
		fr_sql_add(s, ", label_key, label_value)");
	}
}

/* Whether `ret` of a request means the server was not reached, so the
 * next URL may answer instead. */
static int unreachable(int ret)
{
	return ret == -ECONNREFUSED || ret == -EHOSTUNREACH || ret == -ETIMEDOUT || ret == -EIO;
}

/* Counts the bytes a sink got, to know whether another server may still
 * be tried. */
struct counted {
	int (*sink)(void *, const void *, size_t);
	void *arg;
	uint64_t bytes;
};

static int counted_sink(void *arg, const void *buf, size_t len)
{
	struct counted *c = arg;

	c->bytes += len;
	return c->sink(c->arg, buf, len);
}

/* The URL that answered last: the next query of the command starts there
 * rather than waiting again for a server that is down. */
static uint32_t first_url;

int fleet_ch_query(const struct fleet_args *a, const char *sql,
		   int (*sink)(void *, const void *, size_t), void *arg)
{
	struct fr_http_opts o = {
		.user = a->user,
		.password_file = a->password_file,
		.ca_file = a->ca_file,
		.timeout_ms = a->timeout_ns / 1000000 + 5000,
		/* An answer is one row per distinct (host, stack), ~40
		 * bytes, and each stack once: 50 hosts x 1 h is a few MiB.
		 * 1 GiB bounds what a server (or whatever answers at the
		 * URL) can make us hold in stacks. */
		.max_response = (size_t)1 << 30,
	};
	struct counted c = {sink, arg, 0};
	struct fr_http *h = NULL;
	char err[512], url[2048];
	long status;
	int ret;

	ret = fr_http_new(&h, &o, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "%s: %s\n", a->cmd, ret == -ENOMEM ? "out of memory" : err);
		return 1;
	}
	ret = -EIO;
	for (uint32_t k = 0; k < a->nurls; k++) {
		uint32_t i = (first_url + k) % a->nurls;

		snprintf(url, sizeof(url),
			 "%s/?database=%s&max_execution_time=%" PRId64
			 "&wait_end_of_query=1&enable_http_compression=1&readonly=1",
			 a->urls[i], a->database, a->timeout_ns / FR_NS_PER_S);
		err[0] = '\0';
		ret = fr_http_request(h, url, sql, strlen(sql), 0, counted_sink, &c, &status, err,
				      sizeof(err));
		if (ret == 0) {
			first_url = i;
			break;
		}
		if (!err[0])
			snprintf(err, sizeof(err), "%s", strerror(-ret));
		if (!unreachable(ret) || c.bytes) {
			fprintf(stderr, "%s: ClickHouse at %s: %s\n", a->cmd, a->urls[i],
				ret == -EPROTO	? err
				: ret == -EFBIG ? "answer too large"
						: err);
			break;
		}
		fprintf(stderr, "%s: ClickHouse at %s: %s%s\n", a->cmd, a->urls[i], err,
			k + 1 < a->nurls ? "; trying the next URL" : "");
	}
	fr_http_free(h);
	return ret == 0 ? 0 : 1;
}

int fleet_ch_rows(const struct fleet_args *a, const struct fr_sql *sql, fr_rb_row_fn row, void *arg,
		  const char *what)
{
	struct fr_rb_stream rs;
	int ret;

	if (sql->err) {
		fprintf(stderr, "%s: the %s query: %s\n", a->cmd, what, strerror(-sql->err));
		return 1;
	}
	fr_rb_stream_init(&rs, row, arg, 0);
	ret = fleet_ch_query(a, sql->buf, fr_rb_stream_feed, &rs);
	if (ret == 0 && (ret = fr_rb_stream_end(&rs)) < 0) {
		fprintf(stderr, "%s: ClickHouse's answer to the %s query is malformed: %s\n",
			a->cmd, what, strerror(-ret));
		ret = 1;
	}
	fr_rb_stream_free(&rs);
	return ret;
}
