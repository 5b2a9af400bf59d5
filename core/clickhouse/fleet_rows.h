/* The rows of the fleet attach queries' answers (RowBinary, see
 * docs/clickhouse.md "Fleet queries"), read into a fleet profile: the
 * stacks query's (stack_hash UInt64, function, file Array(String), line
 * Array(UInt32), mapping, build_id Array(String)) into
 * fr_fleet_pprof_stack(), the totals query's (host String, stack_hash,
 * sum(count), sum(value) UInt64) into fr_fleet_pprof_sample(). Both are
 * fr_rb_row_fn callbacks over a struct fr_fleet_rows; the parallel arrays
 * of a stack must have one length, or the row is -EBADMSG.
 */
#ifndef FR_CORE_FLEET_ROWS_H
#define FR_CORE_FLEET_ROWS_H

#include "core/clickhouse/fleet_pprof.h"
#include "core/clickhouse/rowbinary.h"

struct fr_fleet_rows {
	struct fr_fleet_pprof *fp;
	struct fr_fleet_frame frames[FR_FLEET_MAX_FRAMES]; /* one stack's, reused */
};

int fr_fleet_stack_row(void *arg, struct fr_rb_cur *c);
int fr_fleet_sample_row(void *arg, struct fr_rb_cur *c);

#endif
