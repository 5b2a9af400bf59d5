/* flightrec top's aggregation: a decoded profile's samples summed per
 * function, in the spirit of `go tool pprof -top`, and per process within
 * each function.
 *
 * Functions are keyed by name, as pprof's default granularity does; a
 * frame on the kernel's mapping is shown as folded stacks show it, with
 * the "_[k]" suffix, so kernel functions stay apart from user ones. Flat
 * is the value of samples whose leaf frame (first line of the first
 * location) is the function; cum is the value of samples with the function
 * anywhere on the stack, counted once per sample even under recursion.
 * A sample's process is its "pid" and "comm" labels, as the recorder
 * writes them; each function's cum is split by process so the table can
 * say where it ran.
 */
#include "tools/top/top.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/pprof/pprof_read.h"
#include "core/query/profile.h"

struct table {
	struct fr_top_row *rows;
	size_t nrows;
	uint32_t *slots; /* row index + 1; 0 empty */
	size_t mask;
};

uint64_t fr_top_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static uint32_t table_intern(struct table *t, const char *name)
{
	size_t i = fr_top_hash(name) & t->mask;

	while (t->slots[i]) {
		if (strcmp(t->rows[t->slots[i] - 1].name, name) == 0)
			return t->slots[i] - 1;
		i = (i + 1) & t->mask;
	}
	t->rows[t->nrows] = (struct fr_top_row){.name = name};
	t->slots[i] = (uint32_t)++t->nrows;
	return (uint32_t)(t->nrows - 1);
}

/* Whether location `l` is a kernel frame: on the kernel's mapping. */
static int on_kernel(const struct fr_pprof_data *d, const struct fr_pprof_rlocation *l)
{
	return l->mapping >= 0 &&
	       strcmp(d->mappings[l->mapping].filename, FR_PROFILE_KERNEL_MAPPING) == 0;
}

/* The row of every function, and of every unsymbolized location (named
 * by its address, in `buf`). A frame on the kernel mapping gets a row of
 * its own, its name with the "_[k]" suffix of folded stacks, so that the
 * table still tells kernel functions apart now that pprof gives them
 * their plain names. `buf` holds ADDR_LEN bytes per location, then room
 * for one suffixed copy of every function name; kfn_row starts all
 * UINT32_MAX. */
#define ADDR_LEN (2 + 16 + sizeof(FR_PROFILE_KERNEL_SUFFIX))
static void name_rows(struct table *t, const struct fr_pprof_data *d, uint32_t *fn_row,
		      uint32_t *kfn_row, uint32_t *loc_row, char *buf)
{
	char *knames = buf + ADDR_LEN * d->nlocations;

	for (size_t i = 0; i < d->nfunctions; i++)
		fn_row[i] = table_intern(t, d->functions[i].name);
	for (size_t i = 0; i < d->nlocations; i++) {
		const struct fr_pprof_rlocation *l = &d->locations[i];
		int kernel = on_kernel(d, l);

		/* An unsymbolized location stands for itself, named by its
		 * address */
		if (!l->nline) {
			snprintf(buf + ADDR_LEN * i, ADDR_LEN, "0x%" PRIx64 "%s", l->address,
				 kernel ? FR_PROFILE_KERNEL_SUFFIX : "");
			loc_row[i] = table_intern(t, buf + ADDR_LEN * i);
		}
		for (size_t j = 0; kernel && j < l->nline; j++) {
			uint64_t f = d->line_funcs[l->line + j];
			int n;

			if (kfn_row[f] != UINT32_MAX)
				continue;
			n = sprintf(knames, "%s%s", d->functions[f].name, FR_PROFILE_KERNEL_SUFFIX);
			kfn_row[f] = table_intern(t, knames);
			knames += n + 1;
		}
	}
}

/* ---- processes ---- */

/* The processes of the samples, interned, and the (row, process) cum
 * values: open addressing on both, grown at half full. */
struct procs {
	struct fr_top_process *v;
	size_t n, cap;
	uint32_t *slots; /* process index + 1 */
	size_t mask;
	struct pair {
		uint64_t key; /* row << 32 | process, + 1; 0 empty */
		int64_t cum;
	} * pairs;
	size_t npairs, pmask;
};

static uint64_t proc_hash(int64_t pid, const char *comm)
{
	return fr_top_hash(comm) ^ ((uint64_t)pid * 0x9e3779b97f4a7c15ULL);
}

static int procs_grow(struct procs *p)
{
	size_t cap = p->cap ? 2 * p->cap : 64;
	struct fr_top_process *v = realloc(p->v, cap * sizeof(*v));
	uint32_t *slots = calloc(2 * cap, sizeof(*slots));

	if (v)
		p->v = v;
	if (!v || !slots) {
		free(slots);
		return -ENOMEM;
	}
	free(p->slots);
	p->slots = slots;
	p->mask = 2 * cap - 1;
	p->cap = cap;
	for (size_t k = 0; k < p->n; k++) {
		size_t i = proc_hash(p->v[k].pid, p->v[k].comm) & p->mask;

		while (p->slots[i])
			i = (i + 1) & p->mask;
		p->slots[i] = (uint32_t)k + 1;
	}
	return 0;
}

/* The process of sample `s` (its index), or -ENOMEM. */
static int64_t proc_of(struct procs *p, const struct fr_pprof_data *d,
		       const struct fr_pprof_rsample *s)
{
	int64_t pid = -1;
	const char *comm = "";
	size_t i;

	for (size_t k = 0; k < s->nlabel; k++) {
		const struct fr_pprof_rlabel *l = &d->labels[s->label + k];

		if (strcmp(l->key, "pid") == 0 && !l->str)
			pid = l->num;
		else if (strcmp(l->key, "comm") == 0 && l->str)
			comm = l->str;
	}
	if (p->n == p->cap && procs_grow(p) < 0)
		return -ENOMEM;
	for (i = proc_hash(pid, comm) & p->mask; p->slots[i]; i = (i + 1) & p->mask) {
		const struct fr_top_process *x = &p->v[p->slots[i] - 1];

		if (x->pid == pid && strcmp(x->comm, comm) == 0)
			return p->slots[i] - 1;
	}
	p->v[p->n] = (struct fr_top_process){.pid = pid, .comm = comm};
	p->slots[i] = (uint32_t)++p->n;
	return (int64_t)p->n - 1;
}

static int pairs_add(struct procs *p, uint32_t row, uint32_t proc, int64_t v)
{
	uint64_t key = ((uint64_t)row << 32 | proc) + 1;
	size_t i;

	if (2 * (p->npairs + 1) > p->pmask + 1) {
		size_t cap = p->pmask ? 2 * (p->pmask + 1) : 1024;
		struct pair *g = calloc(cap, sizeof(*g));

		if (!g)
			return -ENOMEM;
		for (size_t k = 0; p->pairs && k <= p->pmask; k++) {
			if (!p->pairs[k].key)
				continue;
			for (i = p->pairs[k].key * 0x9e3779b97f4a7c15ULL >> 20 & (cap - 1);
			     g[i].key; i = (i + 1) & (cap - 1))
				;
			g[i] = p->pairs[k];
		}
		free(p->pairs);
		p->pairs = g;
		p->pmask = cap - 1;
	}
	for (i = key * 0x9e3779b97f4a7c15ULL >> 20 & p->pmask; p->pairs[i].key;
	     i = (i + 1) & p->pmask)
		if (p->pairs[i].key == key) {
			p->pairs[i].cum += v;
			return 0;
		}
	p->pairs[i] = (struct pair){.key = key, .cum = v};
	p->npairs++;
	return 0;
}

struct share_key {
	uint32_t row;
	struct fr_top_share s;
};

static int by_row_then_cum(const void *a, const void *b)
{
	const struct share_key *x = a, *y = b;

	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	if (x->s.cum != y->s.cum)
		return x->s.cum > y->s.cum ? -1 : 1;
	return x->s.process < y->s.process ? -1 : x->s.process > y->s.process;
}

/* Gives each row its processes' shares, the most first, in t->share_buf.
 * Returns 0 or -ENOMEM. */
static int set_shares(struct fr_top *t, struct procs *p)
{
	struct share_key *k = malloc((p->npairs + 1) * sizeof(*k));
	size_t n = 0;

	t->share_buf = malloc((p->npairs + 1) * sizeof(*t->share_buf));
	if (!k || !t->share_buf) {
		free(k);
		return -ENOMEM;
	}
	for (size_t i = 0; p->pairs && i <= p->pmask; i++)
		if (p->pairs[i].key)
			k[n++] = (struct share_key){
				.row = (uint32_t)((p->pairs[i].key - 1) >> 32),
				.s = {.process = (uint32_t)(p->pairs[i].key - 1),
				      .cum = p->pairs[i].cum},
			};
	qsort(k, n, sizeof(*k), by_row_then_cum);
	for (size_t i = 0; i < n; i++) {
		struct fr_top_row *r = &t->rows[k[i].row];

		t->share_buf[i] = k[i].s;
		if (!r->nshares)
			r->shares = &t->share_buf[i];
		r->nshares++;
	}
	free(k);
	return 0;
}

/* ---- aggregation ---- */

int fr_top_sample_of(const struct fr_pprof_data *d, const struct fr_pprof_rsample *s, size_t col,
		     ssize_t samples_col)
{
	if (d->values[s->val + col])
		return 1;
	for (size_t i = 0; i < d->ntypes; i++)
		if (i != col && (ssize_t)i != samples_col && d->values[s->val + i] &&
		    !(strcmp(d->types[i].type, "samples") == 0 &&
		      strcmp(d->types[i].unit, "count") == 0))
			return 0;
	return 1;
}

/* Adds sample s (of process `proc`) to the rows of its frames. Returns 0
 * or -ENOMEM. */
static int add_sample(struct fr_top *t, struct procs *p, const struct fr_pprof_data *d, size_t s,
		      size_t col, ssize_t samples_col, const uint32_t *row_of[3], uint64_t *seen,
		      uint32_t proc)
{
	const struct fr_pprof_rsample *sm = &d->samples[s];
	int64_t v = d->values[sm->val + col];
	int64_t n = samples_col >= 0 ? d->values[sm->val + (size_t)samples_col] : 1;
	int leaf = 1;

	if (!fr_top_sample_of(d, sm, col, samples_col))
		return 0;
	t->total += v;
	t->total_samples += n;
	for (size_t k = 0; k < sm->nloc; k++) {
		const struct fr_pprof_rlocation *l = &d->locations[d->sample_locs[sm->loc + k]];
		size_t nl = l->nline ? l->nline : 1;

		for (size_t j = 0; j < nl; j++) {
			uint64_t f = l->nline ? d->line_funcs[l->line + j] : 0;
			uint32_t r = !l->nline	       ? row_of[2][l - d->locations]
				     : on_kernel(d, l) ? row_of[1][f]
						       : row_of[0][f];

			if (leaf) {
				t->rows[r].flat += v;
				t->rows[r].flat_samples += n;
				leaf = 0;
			}
			/* Recursion puts a function on a stack more than once */
			if (seen[r] != s + 1) {
				seen[r] = s + 1;
				t->rows[r].cum += v;
				t->rows[r].cum_samples += n;
				if (pairs_add(p, r, proc, v) < 0)
					return -ENOMEM;
			}
		}
	}
	return 0;
}

/* Keeps the rows some sample reached, and the processes' shares of each. */
static int finish(struct fr_top *t, struct procs *p, uint64_t *seen)
{
	size_t k = 0;

	if (set_shares(t, p) < 0)
		return -ENOMEM;
	for (size_t r = 0; r < t->nrows; r++)
		if (seen[r])
			t->rows[k++] = t->rows[r];
	t->nrows = k;
	t->processes = p->v;
	t->nprocesses = p->n;
	p->v = NULL;
	return 0;
}

int fr_top_aggregate(const struct fr_pprof_data *d, size_t col, ssize_t samples_col,
		     struct fr_top *out)
{
	size_t nkeys = 2 * d->nfunctions + d->nlocations, cap = 16;
	size_t len = ADDR_LEN * d->nlocations + 1;
	struct table t = {0};
	struct fr_top r = {0};
	struct procs p = {0};
	uint32_t *fn_row = NULL, *kfn_row = NULL, *loc_row = NULL;
	uint64_t *seen = NULL;
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (nkeys > UINT32_MAX / 4)
		return -ENOMEM;
	while (cap < nkeys * 2)
		cap *= 2;
	t.rows = calloc(nkeys + 1, sizeof(*t.rows));
	t.slots = calloc(cap, sizeof(*t.slots));
	t.mask = cap - 1;
	for (size_t i = 0; i < d->nfunctions; i++)
		len += strlen(d->functions[i].name) + sizeof(FR_PROFILE_KERNEL_SUFFIX);
	fn_row = calloc(d->nfunctions + 1, sizeof(*fn_row));
	kfn_row = malloc((d->nfunctions + 1) * sizeof(*kfn_row));
	loc_row = calloc(d->nlocations + 1, sizeof(*loc_row));
	r.names = calloc(len, 1);
	if (!t.rows || !t.slots || !fn_row || !kfn_row || !loc_row || !r.names ||
	    procs_grow(&p) < 0)
		goto out;
	memset(kfn_row, 0xff, (d->nfunctions + 1) * sizeof(*kfn_row));
	name_rows(&t, d, fn_row, kfn_row, loc_row, r.names);
	seen = calloc(t.nrows + 1, sizeof(*seen));
	if (!seen)
		goto out;
	r.rows = t.rows;
	r.nrows = t.nrows;
	t.rows = NULL;
	for (size_t s = 0; s < d->nsamples; s++) {
		const uint32_t *row_of[3] = {fn_row, kfn_row, loc_row};
		int64_t proc = proc_of(&p, d, &d->samples[s]);

		if (proc < 0 ||
		    add_sample(&r, &p, d, s, col, samples_col, row_of, seen, (uint32_t)proc) < 0)
			goto out;
	}
	if (finish(&r, &p, seen) < 0)
		goto out;
	*out = r;
	memset(&r, 0, sizeof(r));
	ret = 0;
out:
	fr_top_free(&r);
	free(t.rows);
	free(t.slots);
	free(fn_row);
	free(kfn_row);
	free(loc_row);
	free(seen);
	free(p.v);
	free(p.slots);
	free(p.pairs);
	return ret;
}

void fr_top_free(struct fr_top *t)
{
	free(t->rows);
	free(t->processes);
	free(t->names);
	free(t->share_buf);
	memset(t, 0, sizeof(*t));
}
