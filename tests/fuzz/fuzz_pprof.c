/* Fuzz target for the pprof reader (core/pprof/pprof_read.h), which reads
 * profiles users hand to `flightrec top` and the profiles the exporter
 * folds into ClickHouse rows.
 *
 * Input: uncompressed protobuf.
 *
 * Promises: no crash, no memory error; a profile that reads has every
 * index in range (sample locations, line functions, location mappings,
 * labels, values), a line number for every line, and a name and a file
 * (possibly "") for every function and mapping.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>

#include "core/pprof/pprof_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fr_pprof_data *d = NULL;
	size_t nlines = 0, nvalues = 0;
	int ret = fr_pprof_read(data, size, &d);

	FUZZ_CHECK(ret == 0 || ret == -EBADMSG || ret == -ENOMEM, "returned %d", ret);
	if (ret)
		return 0;
	for (size_t i = 0; i < d->nfunctions; i++)
		FUZZ_CHECK(d->functions[i].name && d->functions[i].filename, "function %zu", i);
	for (size_t i = 0; i < d->nmappings; i++)
		FUZZ_CHECK(d->mappings[i].filename && d->mappings[i].build_id, "mapping %zu", i);
	for (size_t i = 0; i < d->nlocations; i++) {
		const struct fr_pprof_rlocation *l = &d->locations[i];

		FUZZ_CHECK(l->mapping < (ssize_t)d->nmappings, "location %zu's mapping", i);
		for (size_t j = 0; j < l->nline; j++) {
			FUZZ_CHECK(d->line_funcs[l->line + j] < d->nfunctions, "a line's function");
			/* Read, so ASan sees an array too short. */
			nlines += d->line_nums[l->line + j] != 0;
		}
	}
	for (size_t i = 0; i < d->nsamples; i++) {
		const struct fr_pprof_rsample *s = &d->samples[i];

		for (size_t j = 0; j < s->nloc; j++)
			FUZZ_CHECK(d->sample_locs[s->loc + j] < d->nlocations,
				   "a sample's location");
		FUZZ_CHECK(s->label + s->nlabel <= d->nlabels, "a sample's labels");
		for (size_t j = 0; j < d->ntypes; j++)
			nvalues += d->values[s->val + j] != 0;
		for (size_t j = 0; j < s->nlabel; j++)
			FUZZ_CHECK(d->labels[s->label + j].key, "a label's key");
	}
	(void)nlines;
	(void)nvalues;
	fr_pprof_data_free(d);
	return 0;
}
