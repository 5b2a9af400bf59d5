/* Window queries: build a pprof profile from the ring.
 *
 * A request names a time window [t0, t1) in Unix nanoseconds, optional
 * pids, and a sampling rate. The chunks overlapping the window are read and
 * decoded; samples outside the window or of other pids are dropped; the
 * remaining ones are downsampled to the requested rate by a deterministic
 * hash of each sample (so the same request gives the same profile),
 * identical (stack, labels) are aggregated, addresses are symbolized, and
 * the result is streamed as gzip'ed pprof.
 */
#ifndef FR_CORE_PROFILE_H
#define FR_CORE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/compress.h"

struct fr_ring;
struct fr_symbols;

#define FR_PROFILE_MAX_PIDS 256

struct fr_profile_request {
	int64_t t0, t1;       /* window, Unix ns */
	uint32_t npids;       /* 0: every process */
	uint32_t pids[FR_PROFILE_MAX_PIDS];
	uint32_t hz;          /* wanted rate; 0: as collected */
	const char *version;  /* recorder version for the comment */
	const char *kallsyms; /* NULL: /proc/kallsyms */
	int cpu_label;        /* add a "cpu" label to samples */
};

struct fr_profile_result {
	uint64_t chunks;          /* chunks read */
	uint64_t chunks_skipped;  /* damaged or overwritten while reading */
	uint64_t samples_seen;    /* in the window and target */
	uint64_t samples_kept;    /* after downsampling */
	uint64_t stacks;          /* distinct pprof samples written */
	uint64_t lost;            /* records the kernel lost in the window */
	uint32_t hz;              /* rate of the profile */
	int64_t covered_t0;       /* first time the ring has data for */
	uint64_t bytes;           /* gzip bytes written */
	char warning[512];        /* non-empty: say this to the user */
};

/* Builds the profile for `req` from `ring` and writes it to `sink`.
 * Returns 0 and fills `res`, or -errno with a one-line message in `err`. */
int fr_profile_write(struct fr_ring *ring, const struct fr_profile_request *req,
		     fr_write_fn sink, void *sink_arg, struct fr_profile_result *res,
		     char *err, size_t errlen);

#endif
