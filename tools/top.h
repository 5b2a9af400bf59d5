/* flightrec top: the top functions of a profile as a terminal table. */
#ifndef FR_TOOLS_TOP_H
#define FR_TOOLS_TOP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct fr_pprof_data;

/* Runs `flightrec top` with argv[0] "top". Returns the exit status: 0 ok,
 * 1 failure, 2 usage error (messages already printed). */
int fr_top_main(int argc, char **argv);

/* One function of the table: values of the chosen column and sample
 * counts, flat (leaf) and cum (anywhere on the stack, once per sample). */
struct fr_top_row {
	const char *name;
	int64_t flat, cum;
	int64_t flat_samples, cum_samples;
};

/* Aggregates decoded profile `d` by function name using value column
 * `col` (samples are counted from column `samples_col`, or one per sample
 * when it is -1). Returns the number of rows and a malloc'd array the
 * caller frees in *rows (names borrowed from `d`, or from *names, a
 * malloc'd block the caller frees too, for unsymbolized addresses and
 * for kernel functions, named "name_[k]" as in folded stacks), or
 * -ENOMEM. */
ssize_t fr_top_aggregate(const struct fr_pprof_data *d, size_t col, ssize_t samples_col,
			 struct fr_top_row **rows, char **names);

#endif
