/* A small reader for the subset of pprof (profile.proto) that a terminal
 * summary needs: string_table (6), sample (2: location_id 1, value 2, packed
 * or not), location (4: id 1, address 3, line 4 { function_id 1 }),
 * function (5: id 1, name 2), sample_type (1: type 1, unit 2) and
 * duration_nanos (10). Every other field is skipped by its wire type.
 *
 * The input is uncompressed protobuf; callers gunzip first. Every read is
 * bounds-checked and every reference (string index, location id, function
 * id) is resolved and checked, so users of struct fr_pprof_data index its
 * arrays without further checks.
 */
#ifndef FR_TOOLS_PPROF_READ_H
#define FR_TOOLS_PPROF_READ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fr_pprof_value_type {
	const char *type;
	const char *unit;
};

/* A sample: `nloc` location indices at sample_locs[loc...] (leaf first)
 * and `ntypes` values at values[val...]. */
struct fr_pprof_rsample {
	size_t loc, nloc;
	size_t val;
};

/* A location: `nline` function indices at line_funcs[line...], innermost
 * (inlined) frame first. nline is 0 for an unsymbolized address. Lines
 * without a function (function_id 0) are dropped. */
struct fr_pprof_rlocation {
	uint64_t id;
	uint64_t address;
	size_t line, nline;
};

struct fr_pprof_rfunction {
	uint64_t id;
	const char *name;
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
	size_t nfunctions;
	struct fr_pprof_rfunction *functions;
	int64_t duration_nanos;
	/* The type index named by default_sample_type, or -1 when the profile
	 * names none (or one that is not among its types). */
	ssize_t default_type;
};

/* Decodes `len` bytes of protobuf into a new fr_pprof_data the caller frees
 * with fr_pprof_data_free(). Returns 0, -EBADMSG when the input is not a
 * well-formed profile (bad wire format, truncation, a dangling or duplicate
 * id, a string index out of range, a sample whose value count differs from
 * the sample types), or -ENOMEM. */
int fr_pprof_read(const void *buf, size_t len, struct fr_pprof_data **out);

/* Frees decoded data; accepts NULL. */
void fr_pprof_data_free(struct fr_pprof_data *d);

#endif
