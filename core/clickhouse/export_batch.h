/* One export batch: the samples of a ring in one interval as the rows of
 * the ClickHouse schema (core/clickhouse/ch_schema.h, docs/clickhouse.md),
 * built without a daemon so the exporter (recorder/export/export_ch.c) and a
 * benchmark or tool that writes a synthetic fleet share one code path.
 *
 * Each event of the request is one profile of [t0, t1) at the export
 * rate (fr_profile_build(), the query side's downsampling and symbols),
 * its samples read from the value (core/query/profile_value.h) and folded
 * into rows per (event, stack, pid, comm, labels) as the pprof writer
 * would give them: threads of a process are summed. Stacks are
 * hashed over their symbolized frames; a stack not in the caller's set of
 * shipped hashes becomes a stacks row (once per batch). The rows are
 * JSONEachRow text, ready for `INSERT INTO ... FORMAT JSONEachRow`.
 */
#ifndef FR_CORE_EXPORT_BATCH_H
#define FR_CORE_EXPORT_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "core/util/limits.h"

struct fr_ring;

/* Most rows of one batch: an INSERT of up to 1048576 rows is one block,
 * so atomic; rows beyond this are dropped and counted. */
#define FR_EXPORT_MAX_ROWS 500000

/* The stack hashes already shipped: a bounded set, emptied when full or
 * when a batch of a new (UTC) day comes, so each stack is shipped again
 * each day it is used (retention drops whole days). Not thread-safe. */
struct fr_export_seen;

/* A set of at most `cap` hashes (rounded up to a power of two). Returns
 * NULL on allocation failure. */
struct fr_export_seen *fr_export_seen_new(uint32_t cap);
void fr_export_seen_free(struct fr_export_seen *s);

struct fr_export_req {
	int64_t t0, t1;	  /* the interval, Unix ns */
	const char *host; /* the host column */
	uint32_t nevents; /* 0: cpu */
	uint32_t events[FR_LIMIT_EVENTS];
	uint32_t hz; /* the export rate of rate-sampled events */
	/* As struct fr_profile_request (core/query/profile.h). */
	const char *kallsyms;
	const char *symbol_cache;
	const char *const *debug_dirs;
	uint32_t ndebug_dirs;
	size_t cache_bytes;
	int (*stop)(void *arg);
	void *stop_arg;
};

/* A growing text buffer. */
struct fr_export_text {
	char *p;
	size_t len, cap;
};

struct fr_export_batch {
	uint64_t batch_id;
	struct fr_export_text stacks;  /* JSONEachRow rows of the stacks table */
	struct fr_export_text samples; /* JSONEachRow rows of the samples table */
	uint64_t rows;		       /* in samples */
	uint64_t nstacks;	       /* in stacks */
	uint64_t samples_kept;	       /* sum of the rows' count */
	uint64_t rows_dropped;	       /* beyond FR_EXPORT_MAX_ROWS */
	uint64_t chunks_skipped;       /* damaged or overwritten while read */
	int64_t covered_t0;	       /* the ring's first time, as profiles say */
	/* The stacks of this batch not in the set: added to it by
	 * fr_export_batch_shipped() once the stacks insert succeeded. */
	uint64_t *new_hashes;
	uint32_t nnew;
};

/* The batch id of (host, t0, length): FNV-1a 64 over them. */
uint64_t fr_export_batch_id(const char *host, int64_t t0, int64_t len);

/* Builds the batch of `req` from `ring` into `b` (zeroed here; release
 * with fr_export_batch_fini()). Stacks in `seen` are not written. Returns
 * 0, or -errno with a message in `err`: fr_profile_build()'s, -ENOMEM. */
int fr_export_batch_build(struct fr_ring *ring, const struct fr_export_req *req,
			  struct fr_export_seen *seen, struct fr_export_batch *b, char *err,
			  size_t errlen);

/* The batch's stacks are in ClickHouse: remember them in `seen`. */
void fr_export_batch_shipped(const struct fr_export_batch *b, struct fr_export_seen *seen);

void fr_export_batch_fini(struct fr_export_batch *b);

struct fr_http;

/* Sends batch `b` of `host` at interval start `t0` to database `db` of
 * the server at `url`: its stacks (one INSERT), then, unless the server
 * already holds rows of its batch id at t0 (a batch whose answer was
 * lost, or sent before a kill), its samples (one INSERT, atomic: one
 * block of one partition). *duplicate is set when the samples were found
 * there and not sent. On success the stacks are added to `seen`. Returns
 * 0, or fr_http_request()'s -errno with the message in `err`. */
int fr_export_batch_ship(struct fr_http *h, const char *url, const char *db, const char *host,
			 int64_t t0, struct fr_export_batch *b, struct fr_export_seen *seen,
			 int *duplicate, char *err, size_t errlen);

#endif
