/* What the exporter counts as lost when the ring dropped samples before
 * they were shipped (recorder/export/export_ch.h): each nanosecond once, however
 * often the same batch is tried again while ClickHouse is away. */
#include "recorder/export/export_ch.h"

#include <inttypes.h>
#include <stdio.h>

#include "core/util/time.h"
#include "tests/unit/check.h"

#define S FR_NS_PER_S

static void test_retried_batch_counted_once(void)
{
	int64_t upto = 0, total = 0;

	/* The batch [10 s, 20 s) tried five times while the ring's oldest
	 * sample moves from 12 s to 30 s. */
	total += fr_export_lost_span(&upto, 10 * S, 20 * S, 12 * S);
	total += fr_export_lost_span(&upto, 10 * S, 20 * S, 12 * S);
	total += fr_export_lost_span(&upto, 10 * S, 20 * S, 15 * S);
	total += fr_export_lost_span(&upto, 10 * S, 20 * S, 30 * S);
	total += fr_export_lost_span(&upto, 10 * S, 20 * S, 30 * S);
	CHECK(total == 10 * S, "lost %" PRId64 " ns of a 10 s batch", total);
	/* The next batches: the whole of [20 s, 30 s), nothing of [30 s, 40 s). */
	total = fr_export_lost_span(&upto, 20 * S, 30 * S, 30 * S);
	CHECK(total == 10 * S, "next batch lost %" PRId64, total);
	CHECK(fr_export_lost_span(&upto, 30 * S, 40 * S, 30 * S) == 0, "kept batch counted");
	/* A ring that holds the batch: nothing. */
	upto = 0;
	CHECK(fr_export_lost_span(&upto, 10 * S, 20 * S, 5 * S) == 0 && upto == 0,
	      "a batch the ring holds counted");
}

int main(void)
{
	test_retried_batch_counted_once();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("export_lost: all checks passed\n");
	return 0;
}
