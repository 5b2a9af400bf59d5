/* Application labels in profiles (the sets a chunk stores, core/store/
 * chunk.h "application labels"): each chunk's sets made the profile's, so
 * rows split by them and pprof samples carry them as string labels under
 * the program's own keys. The recorder's labels (pid, tid, comm, thread,
 * cpu, cgroup) are names the library and the recorder refuse as keys, and
 * the recorder's own reason is "flightrec.labels": the two never collide.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/query/profile_int.h"
#include "core/query/profile_value.h"
#include "core/util/grow.h"

static uint64_t app_hash_of(void *ctx, uint32_t i)
{
	return ((struct builder *)ctx)->apps[i].hash;
}

static int app_grow_idx(struct builder *b)
{
	uint32_t cap = b->app_idx.cap ? b->app_idx.cap * 2 : 256;
	uint32_t *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->app_idx.cap; i++) {
		uint32_t v = b->app_idx.slots[i], s;

		if (!v)
			continue;
		for (s = (uint32_t)app_hash_of(b, v - 1) & (cap - 1); slots[s];
		     s = (s + 1) & (cap - 1))
			;
		slots[s] = v;
	}
	free(b->app_idx.slots);
	b->app_idx.slots = slots;
	b->app_idx.cap = cap;
	return 0;
}

/* Whether the set of `n` pairs (string indexes) passes the request's
 * label filter: every key=value asked, and the key asked. */
static bool app_filter(const struct builder *b, const uint32_t *pairs, uint32_t n)
{
	const struct fr_targets *t = &b->req->targets;
	bool key = !t->label_key[0];

	for (uint32_t k = 0; k < n && !key; k++)
		key = strcmp(b->strs[pairs[2 * k]], t->label_key) == 0;
	if (!key)
		return false;
	for (uint32_t f = 0; f < t->nlabels && f < FR_LIMIT_LABELS; f++) {
		bool found = false;

		for (uint32_t k = 0; k < n && !found; k++)
			found = strcmp(b->strs[pairs[2 * k]], t->label_keys[f]) == 0 &&
				strcmp(b->strs[pairs[2 * k + 1]], t->label_values[f]) == 0;
		if (!found)
			return false;
	}
	return true;
}

/* The profile's set (>= 1) of `n` pairs of string indexes, or -ENOMEM. */
static int64_t app_intern(struct builder *b, const uint32_t *pairs, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;
	uint32_t slot;

	for (uint32_t k = 0; k < 2 * n; k++)
		h = fr_mix64(h ^ pairs[k]);
	if ((b->app_idx.n + 1) * 2 > b->app_idx.cap && app_grow_idx(b) < 0)
		return -ENOMEM;
	for (slot = (uint32_t)h & (b->app_idx.cap - 1); b->app_idx.slots[slot];
	     slot = (slot + 1) & (b->app_idx.cap - 1)) {
		const struct gapp *a = &b->apps[b->app_idx.slots[slot] - 1];

		if (a->hash == h && a->n == n &&
		    memcmp(&b->app_pairs[a->first], pairs, 2 * n * sizeof(*pairs)) == 0)
			return b->app_idx.slots[slot];
	}
	if (FR_GROW(b->apps, &b->apps_cap, b->napps + 1, 64) < 0)
		return -ENOMEM;
	if (b->napp_pairs + 2 * n > b->app_pairs_cap) {
		uint32_t cap = b->app_pairs_cap ? b->app_pairs_cap * 2 : 256;
		uint32_t *p;

		while (cap < b->napp_pairs + 2 * n)
			cap *= 2;
		p = realloc(b->app_pairs, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		b->app_pairs = p;
		b->app_pairs_cap = cap;
	}
	memcpy(&b->app_pairs[b->napp_pairs], pairs, 2 * n * sizeof(*pairs));
	b->apps[b->napps] = (struct gapp){.first = b->napp_pairs,
					  .n = n,
					  .hash = h,
					  .ok = app_filter(b, pairs, n)};
	b->napp_pairs += 2 * n;
	b->app_idx.slots[slot] = ++b->napps;
	b->app_idx.n++;
	return b->napps;
}

int profile_app_chunk(struct builder *b, const struct fr_chunk *c)
{
	if (c->napps > b->chunk_app_cap) {
		uint32_t *m = realloc(b->chunk_app, c->napps * sizeof(*m));

		if (!m)
			return -ENOMEM;
		b->chunk_app = m;
		b->chunk_app_cap = c->napps;
	}
	if (c->napps)
		b->chunk_app[0] = 0;
	for (uint32_t k = 1; k < c->napps; k++) {
		const struct fr_chunk_labelset *ls = &c->apps[k];
		uint32_t pairs[2 * FR_CHUNK_APP_PAIRS], n = 0;
		int64_t id;

		for (uint32_t j = 0; j < ls->npairs && n < FR_CHUNK_APP_PAIRS; j++, n++) {
			int64_t key =
				profile_intern_str(b, c->app_strings[c->app_keys[ls->first + j]]);
			int64_t val =
				profile_intern_str(b, c->app_strings[c->app_values[ls->first + j]]);

			if (key < 0 || val < 0)
				return -ENOMEM;
			pairs[2 * n] = (uint32_t)key;
			pairs[2 * n + 1] = (uint32_t)val;
		}
		id = app_intern(b, pairs, n);
		if (id < 0)
			return -ENOMEM;
		b->chunk_app[k] = (uint32_t)id;
	}
	return 0;
}

uint32_t profile_app_of(const struct builder *b, const struct fr_chunk *c, uint32_t i)
{
	return c->app && c->app[i] < c->napps && c->app[i] < b->chunk_app_cap
		       ? b->chunk_app[c->app[i]]
		       : 0;
}

bool profile_app_ok(const struct builder *b, const struct fr_chunk *c, uint32_t i)
{
	uint32_t app;

	if (!fr_targets_labels_given(&b->req->targets))
		return true;
	app = profile_app_of(b, c, i);
	return app && b->apps[app - 1].ok;
}

size_t profile_app_labels(const struct builder *b, uint32_t app, struct fr_profile_label *out,
			  size_t max)
{
	const struct gapp *a;
	size_t n = 0;

	if (app == 0 || app > b->napps)
		return 0;
	a = &b->apps[app - 1];
	for (uint32_t k = 0; k < a->n && n < max; k++, n++)
		out[n] = (struct fr_profile_label){
			.key = b->strs[b->app_pairs[a->first + 2 * k]],
			.str = b->strs[b->app_pairs[a->first + 2 * k + 1]]};
	return n;
}

void profile_app_free(struct builder *b)
{
	free(b->apps);
	free(b->app_pairs);
	free(b->app_idx.slots);
	free(b->chunk_app);
}
