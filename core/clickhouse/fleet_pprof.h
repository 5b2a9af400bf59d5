/* A fleet profile: pprof built from the rows of a fleet query (stacks and
 * their per-host totals, aggregated by ClickHouse) with the same encoder
 * and the same sample types as `flightrec attach` (core/pprof/pprof.c).
 *
 * Stacks come first, each once, as its frames (already symbolized on the
 * host that recorded them): every distinct frame becomes one location,
 * every distinct (mapping, build id) one mapping, and the stack is kept
 * as its location ids under its id. Then the (host, stack) totals stream
 * through: each becomes one sample, values [samples, event value], with a
 * "host" label, so `go tool pprof -tags` splits the profile by host.
 * Memory is the distinct stacks and frames, never the sample rows.
 */
#ifndef FR_CORE_FLEET_PPROF_H
#define FR_CORE_FLEET_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "core/util/compress.h"

/* Most frames of one stack taken (deeper stacks keep their leaf end). */
#define FR_FLEET_MAX_FRAMES 256
/* Longest host name kept in a label (longer ones are cut). */
#define FR_FLEET_HOST_MAX 256

/* One frame of a stack; strings need not be NUL-terminated. */
struct fr_fleet_str {
	const char *s;
	size_t len;
};

struct fr_fleet_frame {
	struct fr_fleet_str func, file, mapping, build_id;
	uint64_t line;	  /* 0: unknown */
	uint64_t address; /* in the mapping's file; 0: unknown */
};

struct fr_fleet_pprof_opts {
	uint32_t event;	  /* enum fr_event or a raw id */
	const char *name; /* the event's column name, e.g. "cpu" */
	const char *unit; /* e.g. "nanoseconds" */
	int64_t t0, t1;	  /* the window, Unix ns */
	int gzip_level;	  /* 0: 6 */
};

struct fr_fleet_pprof;

/* What went into a finished profile. */
struct fr_fleet_pprof_stats {
	uint64_t rows;		 /* (host, stack) samples written */
	uint64_t samples;	 /* sum of their sample counts */
	uint64_t value;		 /* sum of their event values */
	uint64_t stacks;	 /* stacks interned */
	uint64_t locations;	 /* distinct frames */
	uint64_t hosts;		 /* distinct hosts among the samples */
	uint64_t missing_stacks; /* sample rows whose stack never came */
	uint64_t raw_bytes;	 /* uncompressed protobuf */
};

/* Starts a profile written to `sink`. Returns NULL when out of memory. */
struct fr_fleet_pprof *fr_fleet_pprof_new(const struct fr_fleet_pprof_opts *o, fr_write_fn sink,
					  void *arg);

/* Adds a comment line (any time before finishing). */
void fr_fleet_pprof_comment(struct fr_fleet_pprof *fp, const char *text);

/* Interns stack `id` of `n` frames, leaf first (a second stack of the same
 * id is ignored). Returns 0 or -ENOMEM. */
int fr_fleet_pprof_stack(struct fr_fleet_pprof *fp, uint64_t id, const struct fr_fleet_frame *f,
			 size_t n);

/* Adds the total of `host` on stack `id`: `count` samples worth `value`
 * (ClickHouse's UInt64 sums; pprof's int64 values stop at INT64_MAX).
 * A stack never interned gets a single "[stack not in the stacks table]"
 * frame and is counted. Returns 0 or -ENOMEM. */
int fr_fleet_pprof_sample(struct fr_fleet_pprof *fp, struct fr_fleet_str host, uint64_t id,
			  uint64_t count, uint64_t value);

/* Writes the end of the profile (and the comment on missing stacks) and
 * fills `st`. Returns 0 or the encoder's first -errno. */
int fr_fleet_pprof_finish(struct fr_fleet_pprof *fp, struct fr_fleet_pprof_stats *st);

/* Frees the builder (finished or not); accepts NULL. */
void fr_fleet_pprof_free(struct fr_fleet_pprof *fp);

#endif
