/* Flame graph trees (serve_tree.h). Nodes live in one array, found by
 * (parent, interned name) in an open-addressing table, so folding a
 * profile is one pass over its samples whatever their number; the JSON is
 * made by keeping the largest nodes (a parent is never smaller than its
 * child, so it is kept first) and merging each parent's other children. */
#include "tools/serve/serve_tree.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/query/profile.h"
#include "core/util/grow.h"
#include "ipc/proto.h"

#define NONE UINT32_MAX

struct node {
	uint32_t name, parent, child, next, depth;
	int64_t total[2], self[2];
};

struct fr_serve_tree {
	struct node *n;
	size_t nn, ncap;
	uint32_t *slots; /* node index + 1, 0 empty */
	size_t nslots;
	char **names;
	size_t nnames, names_cap;
	uint32_t *name_slots; /* name id + 1, 0 empty */
	size_t nname_slots;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static uint64_t hash_pair(uint32_t a, uint32_t b)
{
	uint64_t h = ((uint64_t)a << 32 | b) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

static int grow_names(struct fr_serve_tree *t)
{
	size_t n = t->nname_slots ? t->nname_slots * 2 : 1024;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < t->nnames; i++) {
		size_t k = hash_str(t->names[i]) & (n - 1);

		while (s[k])
			k = (k + 1) & (n - 1);
		s[k] = (uint32_t)i + 1;
	}
	free(t->name_slots);
	t->name_slots = s;
	t->nname_slots = n;
	return 0;
}

/* The id of `name`, added when new; NONE on ENOMEM. */
static uint32_t intern(struct fr_serve_tree *t, const char *name)
{
	size_t k;

	if ((t->nnames + 1) * 2 > t->nname_slots && grow_names(t) < 0)
		return NONE;
	k = hash_str(name) & (t->nname_slots - 1);
	for (; t->name_slots[k]; k = (k + 1) & (t->nname_slots - 1))
		if (strcmp(t->names[t->name_slots[k] - 1], name) == 0)
			return t->name_slots[k] - 1;
	if (FR_GROW(t->names, &t->names_cap, t->nnames + 1, 1024) < 0)
		return NONE;
	if (!(t->names[t->nnames] = strdup(name)))
		return NONE;
	t->name_slots[k] = (uint32_t)t->nnames + 1;
	return (uint32_t)t->nnames++;
}

static int grow_nodes(struct fr_serve_tree *t)
{
	size_t n = t->nslots ? t->nslots * 2 : 4096;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 1; i < t->nn; i++) {
		size_t k = hash_pair(t->n[i].parent, t->n[i].name) & (n - 1);

		while (s[k])
			k = (k + 1) & (n - 1);
		s[k] = (uint32_t)i + 1;
	}
	free(t->slots);
	t->slots = s;
	t->nslots = n;
	return 0;
}

/* The child of `parent` named `name`, made when new. Returns its index,
 * `parent` itself when the tree is full, or NONE on ENOMEM. */
static uint32_t child(struct fr_serve_tree *t, uint32_t parent, uint32_t name)
{
	struct node *c;
	size_t k;

	if ((t->nn + 1) * 2 > t->nslots && grow_nodes(t) < 0)
		return NONE;
	k = hash_pair(parent, name) & (t->nslots - 1);
	for (; t->slots[k]; k = (k + 1) & (t->nslots - 1)) {
		c = &t->n[t->slots[k] - 1];
		if (c->parent == parent && c->name == name)
			return t->slots[k] - 1;
	}
	if (t->nn >= FR_SERVE_TREE_BUILD_MAX)
		return parent;
	if (FR_GROW(t->n, &t->ncap, t->nn + 1, 1024) < 0)
		return NONE;
	c = &t->n[t->nn];
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->parent = parent;
	c->depth = t->n[parent].depth + 1;
	c->child = NONE;
	c->next = t->n[parent].child;
	t->n[parent].child = (uint32_t)t->nn;
	t->slots[k] = (uint32_t)t->nn + 1;
	return (uint32_t)t->nn++;
}

struct fr_serve_tree *fr_serve_tree_new(void)
{
	struct fr_serve_tree *t = calloc(1, sizeof(*t));

	if (!t || !(t->n = calloc(1024, sizeof(*t->n))) || grow_nodes(t) < 0) {
		fr_serve_tree_free(t);
		return NULL;
	}
	t->ncap = 1024;
	t->nn = 1;
	t->n[0].parent = t->n[0].child = t->n[0].next = NONE;
	if ((t->n[0].name = intern(t, "all")) == NONE) {
		fr_serve_tree_free(t);
		return NULL;
	}
	return t;
}

void fr_serve_tree_free(struct fr_serve_tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nnames; i++)
		free(t->names[i]);
	free(t->names);
	free(t->name_slots);
	free(t->slots);
	free(t->n);
	free(t);
}

/* The name of the process of sample `s`: its "comm" label. */
static const char *sample_comm(const struct fr_pprof_data *pd, const struct fr_pprof_rsample *s)
{
	for (size_t k = 0; k < s->nlabel; k++) {
		const struct fr_pprof_rlabel *l = &pd->labels[s->label + k];

		if (l->str && strcmp(l->key, "comm") == 0)
			return l->str;
	}
	return "?";
}

/* Walks location `li` from its outermost line to its innermost, from node
 * *at. Returns 0 or -ENOMEM. */
static int add_location(struct fr_serve_tree *t, const struct fr_pprof_data *pd, uint64_t li,
			uint32_t *at)
{
	const struct fr_pprof_rlocation *loc = &pd->locations[li];
	const char *file = loc->mapping >= 0 ? pd->mappings[loc->mapping].filename : "";
	int kernel = strcmp(file, FR_PROFILE_KERNEL_MAPPING) == 0;
	char buf[512];
	uint32_t name;

	for (size_t k = loc->nline; k-- > 0;) {
		const char *fn = pd->functions[pd->line_funcs[loc->line + k]].name;

		if (kernel)
			snprintf(buf, sizeof(buf), "%s [k]", fn);
		if ((name = intern(t, kernel ? buf : fn)) == NONE ||
		    (*at = child(t, *at, name)) == NONE)
			return -ENOMEM;
	}
	if (loc->nline)
		return 0;
	/* Unsymbolized: one frame per file, not per address, or a stripped
	 * program would split into thousands of one-sample frames. */
	snprintf(buf, sizeof(buf), "[%s]", file[0] ? file : "unknown");
	if ((name = intern(t, buf)) == NONE || (*at = child(t, *at, name)) == NONE)
		return -ENOMEM;
	return 0;
}

int fr_serve_tree_add(struct fr_serve_tree *t, const struct fr_pprof_data *pd, int side,
		      ssize_t col)
{
	if (col < 0)
		col = pd->default_type >= 0 ? pd->default_type : 0;
	if ((size_t)col >= pd->ntypes)
		return 0;
	for (size_t i = 0; i < pd->nsamples; i++) {
		const struct fr_pprof_rsample *s = &pd->samples[i];
		int64_t v = pd->values[s->val + (size_t)col];
		uint32_t at = 0, name;

		if (v <= 0)
			continue;
		t->n[0].total[side] += v;
		if ((name = intern(t, sample_comm(pd, s))) == NONE ||
		    (at = child(t, at, name)) == NONE)
			return -ENOMEM;
		t->n[at].total[side] += v;
		for (size_t j = s->nloc; j-- > 0;) {
			uint32_t from = at;

			if (add_location(t, pd, pd->sample_locs[s->loc + j], &at) < 0)
				return -ENOMEM;
			/* Every node from the location's outermost line down. */
			for (uint32_t x = at; x != from; x = t->n[x].parent)
				t->n[x].total[side] += v;
		}
		t->n[at].self[side] += v;
	}
	return 0;
}

int64_t fr_serve_tree_total(const struct fr_serve_tree *t, int side)
{
	return t->n[0].total[side];
}

struct emit {
	const struct fr_serve_tree *t;
	int diff;
	double scale; /* total1 / total0, for the deltas */
	uint8_t *kept;
};

static int64_t weight(const struct emit *e, uint32_t i)
{
	return e->t->n[i].total[e->diff];
}

static double total_delta(const struct emit *e, uint32_t i)
{
	return (double)e->t->n[i].total[1] - (double)e->t->n[i].total[0] * e->scale;
}

static cJSON *node_json(const struct emit *e, const char *name, int64_t value, double delta)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddStringToObject(o, "name", name) || !fr_ipc_add_int(o, "value", value) ||
	    (e->diff && !fr_ipc_add_int(o, "delta", (int64_t)llround(delta)))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *emit_node(const struct emit *e, uint32_t i)
{
	const struct node *n = &e->t->n[i];
	double delta = e->diff ? (double)n->self[1] - (double)n->self[0] * e->scale : 0;
	double other_delta = 0;
	int64_t other = 0;
	cJSON *o, *children = cJSON_CreateArray();

	if (!children)
		return NULL;
	for (uint32_t c = n->child; c != NONE; c = e->t->n[c].next) {
		if (!weight(e, c)) {
			/* Only in the first range: its loss is its caller's. */
			if (e->diff)
				delta += total_delta(e, c);
		} else if (!e->kept[c]) {
			other += weight(e, c);
			other_delta += total_delta(e, c);
		} else if (!cJSON_AddItemToArray(children, emit_node(e, c))) {
			cJSON_Delete(children);
			return NULL;
		}
	}
	if (other && !cJSON_AddItemToArray(children, node_json(e, "(other)", other, other_delta))) {
		cJSON_Delete(children);
		return NULL;
	}
	o = node_json(e, e->t->names[n->name], weight(e, i), delta);
	if (!o) {
		cJSON_Delete(children);
		return NULL;
	}
	cJSON_AddItemToObject(o, "children", children);
	return o;
}

/* Largest first; a parent before a child of the same value. The emit
 * comes as qsort_r's argument: serve builds trees on several threads at
 * once, and a comparator reading a global set by each caller sorted one
 * tree by another's (a tree freed meanwhile: serve crashed). */
static int by_weight(const void *pa, const void *pb, void *arg)
{
	const struct emit *e = arg;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	int64_t wa = weight(e, a), wb = weight(e, b);

	if (wa != wb)
		return wa > wb ? -1 : 1;
	if (e->t->n[a].depth != e->t->n[b].depth)
		return e->t->n[a].depth < e->t->n[b].depth ? -1 : 1;
	return a < b ? -1 : a > b;
}

cJSON *fr_serve_tree_json(const struct fr_serve_tree *t, int diff)
{
	struct emit e = {.t = t, .diff = diff ? 1 : 0, .scale = 0};
	uint32_t *order = malloc(t->nn * sizeof(*order));
	cJSON *root = NULL;

	e.kept = calloc(t->nn, 1);
	if (!order || !e.kept)
		goto out;
	if (t->n[0].total[0])
		e.scale = (double)t->n[0].total[1] / (double)t->n[0].total[0];
	for (size_t i = 0; i < t->nn; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, t->nn, sizeof(*order), by_weight, &e);
	for (size_t i = 0; i < t->nn && i < FR_SERVE_TREE_NODES; i++)
		e.kept[order[i]] = 1;
	e.kept[0] = 1;
	root = emit_node(&e, 0);
out:
	free(order);
	free(e.kept);
	return root;
}
