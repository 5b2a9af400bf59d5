/* A profile as a value: the aggregate of a window query
 * (core/query/profile.h), downsampled, aggregated and named, held in
 * memory for its readers. The pprof and folded-stacks writers emit it; the
 * ClickHouse rows (core/query/export_batch.c) and the thread answers
 * (core/query/thread_sample.h) read its samples directly, so nothing in
 * one process encodes a profile to decode it again.
 *
 * A sample is one row of the profile: (stack, pid, tid, cgroup[, cpu],
 * application labels) with its kept samples and a value per event, in the
 * order pprof gets them. Its stack is a list of locations, leaf first
 * (kernel frames before user ones); a location is an address on a mapping
 * with its functions, innermost first (inlined ones, then the function
 * a symbol names), or none for an address nothing names. Strings and
 * arrays handed out point into the value and live as long as it.
 */
#ifndef FR_CORE_PROFILE_VALUE_H
#define FR_CORE_PROFILE_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/query/profile.h"
#include "core/store/chunk.h"
#include "core/util/compress.h"
#include "core/util/limits.h"

struct fr_profile;

/* Builds the value of `req` from `ring`: what fr_profile_write() writes,
 * before it is written. The strings of `req` the comments use (version,
 * note, pmu_note) are copied; the rest of it is read during the call
 * alone. Returns 0 with *out (free with fr_profile_free()) and `res`
 * filled but for stacks and bytes, or -errno with a message in `err` as
 * fr_profile_write(). */
int fr_profile_build(struct fr_ring *ring, const struct fr_profile_request *req,
		     struct fr_profile **out, struct fr_profile_result *res, char *err,
		     size_t errlen);

/* Writes the value to `sink` in the format its request asked (gzip'ed
 * pprof or folded stacks). Can be called more than once. Fills `res` (may
 * be NULL) with the build's result and the stacks and bytes written.
 * Returns 0, -ENOMEM or the sink's -errno with a message in `err`. */
int fr_profile_emit(struct fr_profile *p, fr_write_fn sink, void *arg,
		    struct fr_profile_result *res, char *err, size_t errlen);

/* Frees the value; accepts NULL. */
void fr_profile_free(struct fr_profile *p);

/* The events of the value, in the request's order (cpu alone when it
 * named none): *n of them. */
const uint32_t *fr_profile_events(const struct fr_profile *p, uint32_t *n);

/* The column of `event` in fr_profile_sample.values, or -1. */
int fr_profile_event_column(const struct fr_profile *p, uint32_t event);

/* How many samples, locations and mappings the value holds: sample
 * indexes are below the first, location indexes below the second,
 * mapping indexes (non-zero) below the third. */
size_t fr_profile_nsamples(const struct fr_profile *p);
uint32_t fr_profile_nlocations(const struct fr_profile *p);
uint32_t fr_profile_nmappings(const struct fr_profile *p);

/* A label as pprof gets it: a string label when `str` is non-NULL, else
 * numeric (`num`). */
struct fr_profile_label {
	const char *key;
	const char *str;
	int64_t num;
};

/* pid, tid, comm, thread, cpu, cgroup and the application labels. */
#define FR_PROFILE_MAX_LABELS (6 + FR_CHUNK_APP_PAIRS)

struct fr_profile_sample {
	uint32_t pid, tid;
	uint32_t cpu;			 /* 0 unless the request asked cpu_label */
	const char *comm;		 /* "" unknown */
	const char *thread;		 /* "" unknown */
	const char *cgroup;		 /* NULL: the sample has none */
	uint64_t count;			 /* kept samples of every event */
	int64_t values[FR_LIMIT_EVENTS]; /* per event, as pprof's columns after count;
					  * a memory event's: its bytes (alloc_space,
					  * inuse_space for heap) */
	/* A row of the memory event (alloc, heap; no tid, no thread): its
	 * estimated alloc_objects, alloc_space, inuse_objects, inuse_space
	 * (zeros otherwise; the in-use ones of a diff may be negative). */
	bool is_mem;
	int64_t mem[4];
	uint32_t nlocs;
	const uint32_t *locs; /* location indexes, leaf first */
	/* Every label in pprof's order: pid, tid, comm, thread, [cpu as a
	 * string], [cgroup], application labels. `labels` may point into
	 * cpu_text: use the struct where it was filled. */
	size_t nlabels;
	struct fr_profile_label labels[FR_PROFILE_MAX_LABELS];
	char cpu_text[12];
};

/* Sample `i` (< fr_profile_nsamples()) into *s. */
void fr_profile_sample(const struct fr_profile *p, size_t i, struct fr_profile_sample *s);

struct fr_profile_location {
	uint64_t address; /* as pprof gets it: a kernel one is 0 in a profile limited to a uid */
	uint32_t mapping; /* for fr_profile_mapping(); 0: none */
	bool kernel;	  /* on the kernel's pseudo-mapping */
	uint32_t nlines;  /* its functions (fr_profile_line()); 0: nothing names it */
};

void fr_profile_location(const struct fr_profile *p, uint32_t loc, struct fr_profile_location *out);

/* One function of a location. `file` is the source file DWARF gives, else
 * the mapped file (FR_PROFILE_KERNEL_MAPPING for the kernel), "" for a
 * frame on no mapping. */
struct fr_profile_line {
	const char *function;
	const char *system_name; /* the symbol before demangling */
	const char *file;
	uint32_t line; /* 0: unknown */
};

/* Function `j` (< nlines, innermost first) of location `loc`. */
void fr_profile_line(const struct fr_profile *p, uint32_t loc, uint32_t j,
		     struct fr_profile_line *out);

struct fr_profile_mapping {
	uint64_t start, limit, offset;
	const char *file;     /* as pprof names it */
	const char *build_id; /* hex; "" none */
};

/* Mapping `m` (non-zero, from a location) into *out. */
void fr_profile_mapping(const struct fr_profile *p, uint32_t m, struct fr_profile_mapping *out);

#endif
