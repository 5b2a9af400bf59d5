/* A reader for pprof (profile.proto): string_table (6), sample (2:
 * location_id 1, value 2, packed or not; label 3 { key 1, str 2, num 3,
 * num_unit 4 }), mapping (3: id 1, memory_start 2, memory_limit 3,
 * file_offset 4, filename 5, build_id 6), location (4: id 1, mapping_id 2,
 * address 3, line 4 { function_id 1, line 2 }), function (5: id 1, name 2,
 * filename 4, start_line 5),
 * sample_type (1: type 1, unit 2), time_nanos (9), duration_nanos (10),
 * period_type (11: type 1, unit 2), period (12), comment (13: string
 * indices, packed or not) and default_sample_type (14). Every other field
 * (drop_frames, keep_frames, the mapping's has_* flags, a function's
 * system_name) is skipped by its wire type.
 *
 * The input is uncompressed protobuf; callers gunzip first. Every read is
 * bounds-checked and every reference (string index, location id, function
 * id) is resolved and checked, so users of struct fr_pprof_data index its
 * arrays without further checks.
 */
#ifndef FR_CORE_PPROF_READ_H
#define FR_CORE_PPROF_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fr_pprof_value_type {
	const char *type;
	const char *unit;
};

/* A sample label. `str` is NULL for a numeric label (string index 0) and
 * `num_unit` NULL when the label names no unit (index 0); `key` is always
 * set ("" for index 0). */
struct fr_pprof_rlabel {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit;
};

/* A sample: `nloc` location indices at sample_locs[loc...] (leaf first),
 * `ntypes` values at values[val...] and `nlabel` labels at
 * labels[label...], in the order of the message. */
struct fr_pprof_rsample {
	size_t loc, nloc;
	size_t val;
	size_t label, nlabel;
};

/* A location: `nline` function indices at line_funcs[line...], innermost
 * (inlined) frame first. nline is 0 for an unsymbolized address. Lines
 * without a function (function_id 0) are dropped. `mapping` is the index
 * into mappings of its mapping_id, or -1 when it names none (id 0). */
struct fr_pprof_rlocation {
	uint64_t id;
	uint64_t address;
	size_t line, nline;
	ssize_t mapping;
};

/* A mapping; `filename` and `build_id` are "" when unset. */
struct fr_pprof_rmapping {
	uint64_t id;
	uint64_t memory_start, memory_limit, file_offset;
	const char *filename;
	const char *build_id;
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct fr_pprof_rfunction {
	uint64_t id;
	const char *name;
	const char *filename; /* "" when unset */
	int64_t start_line;   /* 0 when unset */
};

struct fr_pprof_data {
	size_t nstrings;
	char **strings; /* NUL-terminated copies, in table order */
	size_t ntypes;
	struct fr_pprof_value_type *types;
	size_t nsamples;
	struct fr_pprof_rsample *samples;
	uint64_t *sample_locs; /* indices into locations */
	int64_t *values;
	size_t nlocations;
	struct fr_pprof_rlocation *locations;
	uint64_t *line_funcs; /* indices into functions */
	int64_t *line_nums;   /* each line's number (0: unknown), parallel to line_funcs */
	size_t nfunctions;
	struct fr_pprof_rfunction *functions;
	size_t nlabels;
	struct fr_pprof_rlabel *labels; /* every sample's, by fr_pprof_rsample.label */
	size_t nmappings;
	struct fr_pprof_rmapping *mappings; /* in the order of the message */
	size_t ncomments;
	const char **comments; /* in the order of the message */
	/* period_type's strings are NULL when the profile has no period_type. */
	struct fr_pprof_value_type period_type;
	int64_t period;
	int64_t time_nanos;
	int64_t duration_nanos;
	/* The type index named by default_sample_type, or -1 when the profile
	 * names none (or one that is not among its types). */
	ssize_t default_type;
};

/* Decodes `len` bytes of protobuf into a new fr_pprof_data the caller frees
 * with fr_pprof_data_free(). Returns 0, -EBADMSG when the input is not a
 * well-formed profile (bad wire format, truncation, a dangling or duplicate
 * location, function or mapping id, a string index out of range anywhere, a
 * sample whose value count differs from the sample types), or -ENOMEM.
 * Every pointer in the result points into d->strings. */
int fr_pprof_read(const void *buf, size_t len, struct fr_pprof_data **out);

/* Frees decoded data; accepts NULL. */
void fr_pprof_data_free(struct fr_pprof_data *d);

#endif
