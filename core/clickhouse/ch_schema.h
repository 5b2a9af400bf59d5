/* The ClickHouse schema flightrec exports to (docs/clickhouse.md): the
 * tables' SQL, the checks on database and cluster names, and creating it
 * on every shard (`flightrec export --init-schema`).
 *
 * ClickHouse 18.16 has no DateTime64 and no TTL clause: times are UInt64
 * Unix nanoseconds, tables are partitioned by day of their time, and
 * retention drops whole day partitions (fr_ch_expire()) older than the
 * days kept in the `settings` table.
 */
#ifndef FR_CORE_CH_SCHEMA_H
#define FR_CORE_CH_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

struct fr_http;

/* Table names, local to a shard and over the cluster. */
#define FR_CH_SAMPLES "samples"
#define FR_CH_STACKS "stacks"
#define FR_CH_SETTINGS "settings"
#define FR_CH_SAMPLES_ALL "samples_all"
#define FR_CH_STACKS_ALL "stacks_all"

/* Longest database or cluster name accepted. */
#define FR_CH_NAME_MAX 64

/* Default retention, in days, when --ttl is not given. */
#define FR_CH_TTL_DAYS_DEFAULT 30

/* Whether `name` is a plain identifier ClickHouse takes unquoted:
 * [A-Za-z_][A-Za-z0-9_]*, at most FR_CH_NAME_MAX characters. */
int fr_ch_name_ok(const char *name);

/* Statement `i` (from 0) of the schema of database `db`, in `buf`: the
 * database, the local tables, then the cluster-wide ones (Distributed
 * over `cluster`, or views of the local tables when cluster is NULL) and
 * the retention setting. Returns 1 with a statement, 0 after the last
 * one, -ENOBUFS when `cap` is too small. Every statement is idempotent
 * (IF NOT EXISTS, or a replace of the one settings row). */
int fr_ch_schema_sql(unsigned i, const char *db, const char *cluster, uint32_t ttl_days, char *buf,
		     size_t cap);

/* Runs the schema's statements on the server at `url` (http[s]://host:port,
 * no path). Returns 0 or -errno with a message naming the statement in
 * `err`. */
int fr_ch_init_schema(struct fr_http *h, const char *url, const char *db, const char *cluster,
		      uint32_t ttl_days, char *err, size_t errlen);

/* Runs one statement `sql` on `url` (POST body), its answer to `sink` as
 * fr_http_request() does. Returns as fr_http_request(). */
int fr_ch_exec(struct fr_http *h, const char *url, const char *sql,
	       int (*sink)(void *, const void *, size_t), void *sink_arg, char *err, size_t errlen);

/* Drops the day partitions of the local samples and stacks tables on `url`
 * that end before `now_ns` minus the retention days the settings table
 * holds. Sets *dropped to the partitions dropped. Returns 0 or -errno
 * with a message in `err`. */
int fr_ch_expire(struct fr_http *h, const char *url, const char *db, int64_t now_ns,
		 uint32_t *dropped, char *err, size_t errlen);

#endif
