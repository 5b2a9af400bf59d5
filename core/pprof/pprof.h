/* Streaming pprof (profile.proto) encoder.
 *
 * Every message is encoded and handed to the output as soon as it is
 * added: protobuf allows the repeated fields of Profile (sample, mapping,
 * location, function, string_table, comment) to appear in any order and
 * interleaved, and readers index strings by order of appearance. Only the
 * intern tables (strings, functions) stay in memory, never the encoded
 * profile. The output is a gzip stream (core/util/compress.h) written to an
 * fr_write_fn sink.
 *
 * Field numbers follow github.com/google/pprof/proto/profile.proto.
 */
#ifndef FR_CORE_PPROF_H
#define FR_CORE_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "core/util/compress.h"

struct fr_pprof;

/* Starts a profile written, gzip-compressed at `gzip_level` (1..9), to
 * `sink`. Returns NULL on allocation failure. */
struct fr_pprof *fr_pprof_new(int gzip_level, fr_write_fn sink, void *arg);

/* Frees the encoder (finished or not); accepts NULL. */
void fr_pprof_free(struct fr_pprof *p);

/* Interns a string and returns its string-table index (0 is ""). */
int64_t fr_pprof_string(struct fr_pprof *p, const char *s);

/* Adds a sample value type (in the order of the sample value columns). */
void fr_pprof_sample_type(struct fr_pprof *p, const char *type, const char *unit);

/* Sets period_type and period. */
void fr_pprof_period(struct fr_pprof *p, const char *type, const char *unit, int64_t period);

/* Sets time_nanos and duration_nanos. */
void fr_pprof_time(struct fr_pprof *p, int64_t time_ns, int64_t duration_ns);

/* Sets default_sample_type. */
void fr_pprof_default_sample_type(struct fr_pprof *p, const char *type);

/* Adds a comment line. */
void fr_pprof_comment(struct fr_pprof *p, const char *text);

/* What a mapping's locations carry, for fr_pprof_mapping()'s `flags`:
 * pprof's has_filenames, has_line_numbers and has_inline_frames, each set
 * only when every symbolized location of the mapping that could have it
 * does. has_functions is set on every mapping whatever `flags` say: a
 * reader (go tool pprof) opens the file at the path of a mapping without
 * it to name its locations again, and that path may be anything on the
 * reader's machine; writers name every location instead. */
#define FR_PPROF_HAS_FUNCTIONS 1
#define FR_PPROF_HAS_FILENAMES 2
#define FR_PPROF_HAS_LINE_NUMBERS 4
#define FR_PPROF_HAS_INLINE_FRAMES 8

/* Adds a mapping and returns its id (ids start at 1). `build_id` is the hex
 * string or NULL; `flags` FR_PPROF_HAS_* (has_functions is always set). */
uint64_t fr_pprof_mapping(struct fr_pprof *p, uint64_t start, uint64_t limit, uint64_t offset,
			  const char *file, const char *build_id, int flags);

/* Returns the id of the function (name, system_name, filename), adding it
 * on first use (ids start at 1). system_name and filename may be NULL. */
uint64_t fr_pprof_function(struct fr_pprof *p, const char *name, const char *system_name,
			   const char *filename);

/* The same with the line the function starts at (0: not known). */
uint64_t fr_pprof_function_at(struct fr_pprof *p, const char *name, const char *system_name,
			      const char *filename, uint32_t start_line);

/* Adds a location and returns its id (ids start at 1). `mapping_id` 0 for
 * none; `function_id` 0 for an unsymbolized address. */
uint64_t fr_pprof_location(struct fr_pprof *p, uint64_t mapping_id, uint64_t address,
			   uint64_t function_id);

/* One Line of a location: a function and its source line (0: unknown). */
struct fr_pprof_line {
	uint64_t function_id;
	uint64_t line;
};

/* Adds a location with `nlines` lines, innermost first: the functions
 * inlined at `address`, then the one they were inlined into. Returns its
 * id (ids start at 1). */
uint64_t fr_pprof_location_lines(struct fr_pprof *p, uint64_t mapping_id, uint64_t address,
				 const struct fr_pprof_line *lines, size_t nlines);

/* A sample label: a string label when `str` is non-NULL, else numeric. */
struct fr_pprof_label {
	const char *key;
	const char *str;
	int64_t num;
};

/* Adds a sample: location ids leaf first, one value per sample type. */
void fr_pprof_sample(struct fr_pprof *p, const uint64_t *locations, size_t nlocations,
		     const int64_t *values, size_t nvalues, const struct fr_pprof_label *labels,
		     size_t nlabels);

/* Writes everything still pending and the gzip trailer. Returns 0 or the
 * first -errno of the whole profile (allocation or sink failure); after
 * an error the output is incomplete and should be discarded. */
int fr_pprof_finish(struct fr_pprof *p);

/* Bytes of uncompressed protobuf produced so far. */
uint64_t fr_pprof_raw_bytes(const struct fr_pprof *p);

#endif
