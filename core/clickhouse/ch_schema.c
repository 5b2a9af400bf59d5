/* The ClickHouse schema (core/clickhouse/ch_schema.h): its statements, made
 * on each shard directly (ON CLUSTER needs ZooKeeper), and retention by
 * day partitions. The tables and why they look so: docs/clickhouse.md.
 */
#include "core/clickhouse/ch_schema.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util/http.h"
#include "core/util/time.h"

/* Day partitions by the row's time (UTC days when the server runs in UTC). */
#define DAY_PARTITION "toYYYYMMDD(toDateTime(intDiv(time, 1000000000)))"

int fr_ch_name_ok(const char *name)
{
	size_t n = 0;

	if (!name ||
	    !((*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z') || *name == '_'))
		return 0;
	for (const char *p = name; *p; p++, n++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return 0;
	return n <= FR_CH_NAME_MAX;
}

static int all_table(char *buf, size_t cap, const char *db, const char *cluster, const char *all,
		     const char *local, const char *shard_key)
{
	if (!cluster)
		return snprintf(buf, cap, "CREATE VIEW IF NOT EXISTS %s.%s AS SELECT * FROM %s.%s",
				db, all, db, local);
	return snprintf(
		buf, cap,
		"CREATE TABLE IF NOT EXISTS %s.%s AS %s.%s ENGINE = Distributed(%s, %s, %s, %s)",
		db, all, db, local, cluster, db, local, shard_key);
}

int fr_ch_schema_sql(unsigned i, const char *db, const char *cluster, uint32_t ttl_days, char *buf,
		     size_t cap)
{
	struct timespec ts;
	int n;

	switch (i) {
	case 0: n = snprintf(buf, cap, "CREATE DATABASE IF NOT EXISTS %s", db); break;
	case 1:
		/* One row per (batch interval, host, event, stack, pid, comm,
		 * labels); batch_id makes a re-sent batch detectable. */
		n = snprintf(buf, cap,
			     "CREATE TABLE IF NOT EXISTS %s." FR_CH_SAMPLES " ("
			     "time UInt64, host String, event String, stack_hash UInt64, "
			     "pid UInt32, comm String, label_key Array(String), "
			     "label_value Array(String), value UInt64, count UInt64, "
			     "batch_id UInt64) ENGINE = MergeTree "
			     "PARTITION BY " DAY_PARTITION " "
			     "ORDER BY (time, host, event, stack_hash)",
			     db);
		break;
	case 2:
		/* Frames leaf first, parallel arrays; a stack is sent again each
		 * day it is used, so dropping a day never orphans a sample. */
		n = snprintf(buf, cap,
			     "CREATE TABLE IF NOT EXISTS %s." FR_CH_STACKS " ("
			     "time UInt64, stack_hash UInt64, function Array(String), "
			     "file Array(String), line Array(UInt32), mapping Array(String), "
			     "build_id Array(String)) ENGINE = ReplacingMergeTree "
			     "PARTITION BY " DAY_PARTITION " ORDER BY stack_hash",
			     db);
		break;
	case 3:
		n = snprintf(buf, cap,
			     "CREATE TABLE IF NOT EXISTS %s." FR_CH_SETTINGS " ("
			     "key String, value String, time UInt64) "
			     "ENGINE = ReplacingMergeTree(time) ORDER BY key",
			     db);
		break;
	case 4:
		n = all_table(buf, cap, db, cluster, FR_CH_SAMPLES_ALL, FR_CH_SAMPLES,
			      "cityHash64(host)");
		break;
	case 5:
		n = all_table(buf, cap, db, cluster, FR_CH_STACKS_ALL, FR_CH_STACKS, "stack_hash");
		break;
	case 6:
		clock_gettime(CLOCK_REALTIME, &ts);
		n = snprintf(buf, cap,
			     "INSERT INTO %s." FR_CH_SETTINGS " VALUES ('ttl_days', '%" PRIu32
			     "', %" PRIu64 ")",
			     db, ttl_days,
			     (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
		break;
	default: return 0;
	}
	return n < 0 || (size_t)n >= cap ? -ENOBUFS : 1;
}

int fr_ch_exec(struct fr_http *h, const char *url, const char *sql,
	       int (*sink)(void *, const void *, size_t), void *sink_arg, char *err, size_t errlen)
{
	long status;

	return fr_http_request(h, url, sql, strlen(sql), 0, sink, sink_arg, &status, err, errlen);
}

int fr_ch_init_schema(struct fr_http *h, const char *url, const char *db, const char *cluster,
		      uint32_t ttl_days, char *err, size_t errlen)
{
	char sql[1024], why[512];
	int ret;

	for (unsigned i = 0;; i++) {
		ret = fr_ch_schema_sql(i, db, cluster, ttl_days, sql, sizeof(sql));
		if (ret <= 0)
			return ret;
		ret = fr_ch_exec(h, url, sql, NULL, NULL, why, sizeof(why));
		if (ret < 0) {
			snprintf(err, errlen, "%s: %.60s...: %s", url, sql, why);
			return ret;
		}
	}
}

/* The answer of the partition query, "table\tpartition\n" lines. */
struct text {
	char buf[16384];
	size_t len;
};

static int text_sink(void *arg, const void *p, size_t len)
{
	struct text *t = arg;

	if (t->len + len >= sizeof(t->buf))
		return -EFBIG;
	memcpy(t->buf + t->len, p, len);
	t->len += len;
	t->buf[t->len] = '\0';
	return 0;
}

int fr_ch_expire(struct fr_http *h, const char *url, const char *db, int64_t now_ns,
		 uint32_t *dropped, char *err, size_t errlen)
{
	struct text t = {.len = 0};
	char sql[1024], *line, *save = NULL;
	uint64_t days;
	int ret;

	*dropped = 0;
	snprintf(sql, sizeof(sql),
		 "SELECT toUInt32OrZero(argMax(value, time)) FROM %s." FR_CH_SETTINGS
		 " WHERE key = 'ttl_days' FORMAT TabSeparated",
		 db);
	ret = fr_ch_exec(h, url, sql, text_sink, &t, err, errlen);
	if (ret < 0)
		return ret;
	days = strtoull(t.buf, NULL, 10);
	if (days == 0) /* kept forever */
		return 0;
	/* The partitions (day numbers) wholly before now minus the kept days. */
	t.len = 0;
	t.buf[0] = '\0';
	snprintf(sql, sizeof(sql),
		 "SELECT table, partition FROM system.parts WHERE database = '%s' AND active "
		 "AND table IN ('" FR_CH_SAMPLES "', '" FR_CH_STACKS "') AND "
		 "toUInt32OrZero(partition) < toYYYYMMDD(toDateTime(%" PRId64 ")) "
		 "GROUP BY table, partition FORMAT TabSeparated",
		 db, now_ns / FR_NS_PER_S - (int64_t)days * 86400);
	ret = fr_ch_exec(h, url, sql, text_sink, &t, err, errlen);
	if (ret < 0)
		return ret;
	for (line = strtok_r(t.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');

		if (!tab || strspn(tab + 1, "0123456789") != strlen(tab + 1))
			continue;
		*tab = '\0';
		snprintf(sql, sizeof(sql), "ALTER TABLE %s.%s DROP PARTITION %s", db, line,
			 tab + 1);
		ret = fr_ch_exec(h, url, sql, NULL, NULL, err, errlen);
		if (ret < 0)
			return ret;
		(*dropped)++;
	}
	return 0;
}
