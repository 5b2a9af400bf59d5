/* Fuzz target for the symbol cache's Python names (core/symbols/pycodes.h),
 * a file queries read from the cache directory.
 *
 * Input: the file's bytes.
 *
 * Promises: no crash, no memory error; a parse gives 0 or -EBADMSG (or
 * -ENOMEM); what parses holds at most FR_PYCODES_MAX_CODES records sorted
 * by address, one per address, each found by fr_pycodes_find(), its
 * strings within their bounds, its lines -1 or positive; encoded again
 * and parsed, it gives the same records.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <string.h>

#include "core/symbols/pycodes.h"

static void check_rec(const struct fr_pycodes *p, const struct fr_pycode *r)
{
	uint32_t probes[] = {0, 2, 6, 100, r->nlinetable, FR_PY_NO_OFFSET};

	FUZZ_CHECK(fr_pycodes_find(p, r->code) == r, "a record not found by its address");
	FUZZ_CHECK(strlen(r->qualname) < FR_PY_NAME_MAX && strlen(r->file) < FR_PY_FILE_MAX,
		   "a name past its bound");
	FUZZ_CHECK(r->nlinetable <= FR_PY_LINETABLE_MAX, "a line table of %u bytes", r->nlinetable);
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		int32_t line =
			fr_py_line(r->kind, r->linetable, r->nlinetable, r->firstline, probes[i]);

		FUZZ_CHECK(line == -1 || line > 0 || probes[i] == FR_PY_NO_OFFSET, "line %d", line);
	}
}

static void check_again(const struct fr_pycodes *p)
{
	size_t n = fr_pycodes_count(p), len, kept;
	struct fr_pycode *v = malloc((n + 1) * sizeof(*v));
	struct fr_pycodes *q = NULL;
	uint8_t *buf = NULL;

	FUZZ_CHECK(v != NULL, "malloc");
	for (size_t i = 0; i < n; i++)
		v[i] = *fr_pycodes_at(p, i);
	FUZZ_CHECK(fr_pycodes_encode(fr_pycodes_version(p), fr_pycodes_problem(p), v, n,
				     FR_PYCODES_MAX_SIZE, &buf, &len, &kept) == 0,
		   "encode");
	FUZZ_CHECK(kept == n, "%zu of %zu records encoded", kept, n);
	FUZZ_CHECK(fr_pycodes_parse(buf, len, &q) == 0, "its own encoding does not parse");
	FUZZ_CHECK(fr_pycodes_count(q) == n &&
			   strcmp(fr_pycodes_version(q), fr_pycodes_version(p)) == 0 &&
			   strcmp(fr_pycodes_problem(q), fr_pycodes_problem(p)) == 0,
		   "another header or count");
	for (size_t i = 0; i < n; i++) {
		const struct fr_pycode *a = fr_pycodes_at(p, i), *b = fr_pycodes_at(q, i);

		FUZZ_CHECK(a->code == b->code && a->firstline == b->firstline &&
				   a->kind == b->kind && strcmp(a->qualname, b->qualname) == 0 &&
				   strcmp(a->file, b->file) == 0 &&
				   a->nlinetable == b->nlinetable &&
				   (!a->nlinetable ||
				    memcmp(a->linetable, b->linetable, a->nlinetable) == 0),
			   "record %zu differs encoded again", i);
	}
	fr_pycodes_free(q);
	free(buf);
	free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fr_pycodes *p = NULL;
	int ret = fr_pycodes_parse(data, size, &p);
	size_t n;

	FUZZ_CHECK(ret == 0 || ret == -EBADMSG || ret == -ENOMEM, "parse: %d", ret);
	if (ret < 0)
		return 0;
	n = fr_pycodes_count(p);
	FUZZ_CHECK(n <= FR_PYCODES_MAX_CODES, "%zu records", n);
	FUZZ_CHECK(strlen(fr_pycodes_version(p)) < FR_PYCODES_VERSION_MAX &&
			   strlen(fr_pycodes_problem(p)) < FR_PYCODES_PROBLEM_MAX,
		   "a header string past its bound");
	for (size_t i = 0; i < n; i++) {
		const struct fr_pycode *r = fr_pycodes_at(p, i);

		FUZZ_CHECK(!i || fr_pycodes_at(p, i - 1)->code < r->code, "not sorted at %zu", i);
		check_rec(p, r);
	}
	check_again(p);
	fr_pycodes_free(p);
	return 0;
}
