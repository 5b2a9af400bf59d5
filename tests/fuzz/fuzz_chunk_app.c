/* The chunk target's checks of application labels (core/store/chunk.h,
 * "application labels"), apart from fuzz_chunk.c: the decoded sets stay
 * inside their tables, a merge keeps each sample's labels, and the
 * builder's chunks carry what the seal's ops gave. */
#include "tests/fuzz/fuzz_chunk_app.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/util/hash.h"
#include "tests/fuzz/fuzz.h"

/* Every application set and sample reference inside its table. */
void fuzz_check_app_sets(const struct fr_chunk *c)
{
	FUZZ_CHECK(c->napps >= 1 && c->apps[0].npairs == 0 && c->napp_strings >= 1 &&
			   c->app_strings[0][0] == 0,
		   "application set 0 must be the empty set, string 0 \"\"");
	for (uint32_t i = 1; i < c->napps; i++) {
		const struct fr_chunk_labelset *ls = &c->apps[i];

		FUZZ_CHECK(ls->npairs >= 1 && ls->npairs <= FR_CHUNK_APP_PAIRS,
			   "application set %u has %u pairs", i, ls->npairs);
		for (uint32_t k = 0; k < ls->npairs; k++) {
			FUZZ_CHECK(c->app_keys[ls->first + k] >= 1 &&
					   c->app_keys[ls->first + k] < c->napp_strings &&
					   c->app_values[ls->first + k] < c->napp_strings,
				   "application set %u pair %u out of the strings", i, k);
			(void)strlen(c->app_strings[c->app_keys[ls->first + k]]);
		}
	}
}

/* An order-free digest of (time, tid, application labels) of every
 * sample: a merge must keep each sample's labels. */
uint64_t fuzz_app_digest(const struct fr_chunk *c)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < c->nsamples; i++) {
		const struct fr_chunk_labelset *ls = &c->apps[c->app[i]];
		uint64_t h = FR_FNV_OFFSET ^ (uint64_t)c->time_ns[i] ^ ((uint64_t)c->tid[i] << 17);

		for (uint32_t k = 0; k < ls->npairs; k++) {
			const char *key = c->app_strings[c->app_keys[ls->first + k]];
			const char *value = c->app_strings[c->app_values[ls->first + k]];

			h = fr_fnv1a_step(fr_fnv1a(h, key, strlen(key)), 0x100);
			h = fr_fnv1a_step(fr_fnv1a(h, value, strlen(value)), 0x200);
		}
		sum += h * 0x9e3779b97f4a7c15ull;
	}
	return sum;
}

/* Application labels as a pure function of (tid, time): none for a
 * third of the threads, else up to three pairs. */
static int build_app(uint32_t tid, int64_t time_ns, struct fr_app_label *out, char (*buf)[24])
{
	int n = (int)(tid % 4);

	if (tid % 3 == 0)
		return 0;
	for (int k = 0; k < n; k++) {
		snprintf(buf[2 * k], 24, "key%d", k);
		snprintf(buf[2 * k + 1], 24, "%lld", (long long)((time_ns >> (4 * k)) % 7));
		out[k] = (struct fr_app_label){buf[2 * k], buf[2 * k + 1]};
	}
	return n;
}

static char app_buf[2 * FR_CHUNK_APP_PAIRS][24];

int fuzz_build_app_labels(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns, uint32_t ref,
			  struct fr_app_label *out)
{
	return build_app(tid, time_ns, out, app_buf);
}

/* Each decoded sample has the labels build_app() gives for it. */
void fuzz_check_built_app(const struct fr_chunk *c)
{
	for (uint32_t i = 0; i < c->nsamples; i++) {
		struct fr_app_label lab[FR_CHUNK_APP_PAIRS];
		char buf[2 * FR_CHUNK_APP_PAIRS][24];
		const struct fr_chunk_labelset *ls = &c->apps[c->app[i]];
		int n = build_app(c->tid[i], c->time_ns[i], lab, buf);
		bool same = ls->npairs == (uint32_t)n;

		for (int k = 0; same && k < n; k++)
			same = strcmp(c->app_strings[c->app_keys[ls->first + k]], lab[k].key) ==
				       0 &&
			       strcmp(c->app_strings[c->app_values[ls->first + k]], lab[k].value) ==
				       0;
		FUZZ_CHECK(same, "sample %u: application labels differ from what was given", i);
	}
}
