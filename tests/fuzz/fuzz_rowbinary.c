/* Fuzz target for ClickHouse RowBinary answers (core/clickhouse/rowbinary.h)
 * read into a fleet profile (core/clickhouse/fleet_pprof.h): what `flightrec
 * fleet` does with the bytes a ClickHouse server (or anything listening at
 * the URL a user gave) sends back, through the same row readers
 * (core/clickhouse/fleet_rows.h).
 *
 * Input: byte 0 picks the answer's shape (even: the stacks query's rows,
 * odd: the (host, stack) totals), byte 1 the size of the pieces the bytes
 * arrive in (1..256), the rest is the answer.
 *
 * Promises: no crash, no memory error; the rows read and the outcome are
 * the same whether the answer comes whole or in pieces (a row is never
 * read from a half and its rest); errors are only the documented ones.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <string.h>

#include "core/clickhouse/fleet_pprof.h"
#include "core/clickhouse/fleet_rows.h"
#include "core/clickhouse/rowbinary.h"

static int discard(void *arg, const void *buf, size_t len)
{
	(void)arg;
	(void)buf;
	(void)len;
	return 0;
}

/* Reads the answer in pieces of `piece` bytes (0: whole). */
static int run(const uint8_t *d, size_t n, int stacks, size_t piece, uint64_t *rows)
{
	struct fr_fleet_pprof_opts o = {.name = "cpu", .unit = "nanoseconds", .t1 = 1};
	static struct fr_fleet_rows x;
	struct fr_rb_stream s;
	int ret = 0;

	x.fp = fr_fleet_pprof_new(&o, discard, NULL);
	FUZZ_CHECK(x.fp != NULL, "fr_fleet_pprof_new");
	/* A small row bound, so that the limit is reached too. */
	fr_rb_stream_init(&s, stacks ? fr_fleet_stack_row : fr_fleet_sample_row, &x, 1 << 16);
	for (size_t at = 0; at < n && ret == 0; at += piece ? piece : n) {
		size_t len = piece && n - at > piece ? piece : n - at;

		ret = fr_rb_stream_feed(&s, d + at, len);
	}
	if (ret == 0)
		ret = fr_rb_stream_end(&s);
	*rows = s.rows;
	fr_rb_stream_free(&s);
	FUZZ_CHECK(fr_fleet_pprof_finish(x.fp, NULL) == 0, "finish");
	fr_fleet_pprof_free(x.fp);
	return ret;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t rows_whole, rows_pieces;
	int stacks, whole, pieces;
	size_t piece;

	if (size < 2)
		return 0;
	stacks = !(data[0] & 1);
	piece = (size_t)data[1] + 1;
	whole = run(data + 2, size - 2, stacks, 0, &rows_whole);
	pieces = run(data + 2, size - 2, stacks, piece, &rows_pieces);
	FUZZ_CHECK(whole == 0 || whole == -EBADMSG || whole == -EFBIG, "whole: %d", whole);
	/* A row over the bound fails as soon as it is known to be one, so
	 * pieces may stop before the whole answer is looked at; otherwise
	 * the same rows are read and the same outcome reached. */
	if (whole != -EFBIG && pieces != -EFBIG) {
		FUZZ_CHECK(whole == pieces, "whole %d, in pieces of %zu %d", whole, piece, pieces);
		FUZZ_CHECK(rows_whole == rows_pieces, "%llu rows whole, %llu in pieces",
			   (unsigned long long)rows_whole, (unsigned long long)rows_pieces);
	}
	return 0;
}
