/* Fleet profiles: stacks and per-host totals from ClickHouse rows into the
 * pprof encoder (see fleet_pprof.h). Owns the intern tables of mappings,
 * frames and stacks and the set of hosts seen. */
#include "core/clickhouse/fleet_pprof.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pprof/pprof.h"
#include "core/util/htable.h"

/* An interned byte key (a mapping, a frame or a host) and its id. */
struct knode {
	struct hnode h;
	uint64_t id;
	size_t len;
	char key[];
};

struct snode {
	struct hnode h;
	uint64_t id;
	uint32_t n;
	uint64_t locs[];
};

struct fr_fleet_pprof {
	struct fr_pprof *p;
	struct fr_fleet_pprof_opts o;
	struct htable mappings, frames, stacks, hosts;
	uint64_t missing_loc; /* the placeholder location, 0 before use */
	struct fr_fleet_pprof_stats st;
	int err;
};

static void free_node(struct hnode *n)
{
	free(n);
}

struct fr_fleet_pprof *fr_fleet_pprof_new(const struct fr_fleet_pprof_opts *o, fr_write_fn sink,
					  void *arg)
{
	struct fr_fleet_pprof *fp = calloc(1, sizeof(*fp));

	if (!fp)
		return NULL;
	fp->o = *o;
	fp->p = fr_pprof_new(o->gzip_level ? o->gzip_level : 6, sink, arg);
	if (!fp->p) {
		free(fp);
		return NULL;
	}
	/* As attach: kept samples, then the event's value, which is the
	 * default; the period is set at the end, when the mean is known. */
	fr_pprof_sample_type(fp->p, "samples", "count");
	fr_pprof_sample_type(fp->p, o->name, o->unit);
	fr_pprof_default_sample_type(fp->p, o->name);
	fr_pprof_time(fp->p, o->t0, o->t1 - o->t0);
	return fp;
}

void fr_fleet_pprof_comment(struct fr_fleet_pprof *fp, const char *text)
{
	fr_pprof_comment(fp->p, text);
}

/* The node of key `k` (`len` bytes) in `t`, added with id `*next` + 1
 * when new (*added set). NULL when out of memory. */
static struct knode *intern(struct htable *t, const char *k, size_t len, uint64_t *next, int *added)
{
	uint64_t h = fr_fnv1a(FR_FNV_OFFSET, k, len);
	struct knode *n;

	*added = 0;
	for (struct hnode *x = fr_htable_first(t, h); x; x = x->next) {
		n = (struct knode *)x;
		if (x->hash == h && n->len == len && memcmp(n->key, k, len) == 0)
			return n;
	}
	n = malloc(sizeof(*n) + len + 1);
	if (!n)
		return NULL;
	n->h.hash = h;
	n->len = len;
	memcpy(n->key, k, len);
	n->key[len] = '\0';
	if (fr_htable_insert(t, &n->h) < 0) {
		free(n);
		return NULL;
	}
	n->id = ++*next;
	*added = 1;
	return n;
}

/* "a\0b\0..." of the fields, in a malloc'd key. */
static char *join(const struct fr_fleet_str *f, size_t n, size_t *len)
{
	size_t total = 0, at = 0;
	char *k;

	for (size_t i = 0; i < n; i++)
		total += f[i].len + 1;
	k = malloc(total ? total : 1);
	if (!k)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (f[i].len) /* an empty field may have no bytes at all */
			memcpy(k + at, f[i].s, f[i].len);
		at += f[i].len;
		k[at++] = '\0';
	}
	*len = at;
	return k;
}

/* A NUL-terminated copy of `s` cut to `cap` - 1 bytes. */
static const char *cstr(struct fr_fleet_str s, char *buf, size_t cap)
{
	size_t n = s.len < cap - 1 ? s.len : cap - 1;

	if (n)
		memcpy(buf, s.s, n);
	buf[n] = '\0';
	return buf;
}

static uint64_t mapping_of(struct fr_fleet_pprof *fp, const struct fr_fleet_frame *f)
{
	struct fr_fleet_str k[2] = {f->mapping, f->build_id};
	char file[4096], bid[256];
	struct knode *n;
	size_t len;
	char *key;
	int added;

	if (!f->mapping.len && !f->build_id.len)
		return 0;
	key = join(k, 2, &len);
	uint64_t next = fp->mappings.count;

	if (!key)
		return UINT64_MAX;
	n = intern(&fp->mappings, key, len, &next, &added);
	free(key);
	if (!n)
		return UINT64_MAX;
	if (added)
		/* The frames were symbolized where they were recorded:
		 * pprof must not look for the files here. */
		n->id = fr_pprof_mapping(fp->p, 0, 0, 0, cstr(f->mapping, file, sizeof(file)),
					 f->build_id.len ? cstr(f->build_id, bid, sizeof(bid))
							 : NULL,
					 FR_PPROF_HAS_FUNCTIONS);
	return n->id;
}

/* The location of frame `f`, added on first use; 0 when out of memory. */
static uint64_t location_of(struct fr_fleet_pprof *fp, const struct fr_fleet_frame *f)
{
	char num[2][24], name[4096], file[4096];
	struct fr_fleet_str k[6] = {f->mapping, f->build_id, f->func, f->file};
	struct fr_pprof_line line;
	uint64_t next = fp->frames.count, mapping;
	struct knode *n;
	size_t len;
	char *key;
	int added;

	k[4].len = (size_t)snprintf(num[0], sizeof(num[0]), "%" PRIu64, f->line);
	k[4].s = num[0];
	k[5].len = (size_t)snprintf(num[1], sizeof(num[1]), "%" PRIx64, f->address);
	k[5].s = num[1];
	key = join(k, 6, &len);
	if (!key)
		return 0;
	n = intern(&fp->frames, key, len, &next, &added);
	free(key);
	if (!n)
		return 0;
	if (!added)
		return n->id;
	mapping = mapping_of(fp, f);
	if (mapping == UINT64_MAX)
		return 0;
	if (!f->func.len) {
		/* A frame its host did not name (hosts name them "0x" + the
		 * address): named by where it is, so that every location has
		 * a function. */
		const char *m = cstr(f->mapping, file, sizeof(file)), *base = strrchr(m, '/');

		snprintf(name, sizeof(name), "%.256s+0x%" PRIx64,
			 *m ? (base && base[1] ? base + 1 : m) : "[unknown]", f->address);
		line.function_id = fr_pprof_function(fp->p, name, NULL, NULL);
		line.line = 0;
		n->id = fr_pprof_location_lines(fp->p, mapping, f->address, &line, 1);
	} else {
		line.function_id =
			fr_pprof_function(fp->p, cstr(f->func, name, sizeof(name)), NULL,
					  f->file.len ? cstr(f->file, file, sizeof(file)) : NULL);
		line.line = f->line;
		n->id = fr_pprof_location_lines(fp->p, mapping, f->address, &line, 1);
	}
	fp->st.locations++;
	return n->id;
}

static struct snode *stack_find(struct fr_fleet_pprof *fp, uint64_t id)
{
	uint64_t h = fr_fnv1a(FR_FNV_OFFSET, &id, sizeof(id));

	for (struct hnode *x = fr_htable_first(&fp->stacks, h); x; x = x->next)
		if (x->hash == h && ((struct snode *)x)->id == id)
			return (struct snode *)x;
	return NULL;
}

int fr_fleet_pprof_stack(struct fr_fleet_pprof *fp, uint64_t id, const struct fr_fleet_frame *f,
			 size_t n)
{
	struct snode *s;

	if (stack_find(fp, id))
		return 0;
	if (n > FR_FLEET_MAX_FRAMES)
		n = FR_FLEET_MAX_FRAMES;
	s = malloc(sizeof(*s) + n * sizeof(s->locs[0]));
	if (!s)
		return -ENOMEM;
	s->h.hash = fr_fnv1a(FR_FNV_OFFSET, &id, sizeof(id));
	s->id = id;
	s->n = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		s->locs[i] = location_of(fp, &f[i]);
		if (!s->locs[i]) {
			free(s);
			return -ENOMEM;
		}
	}
	if (fr_htable_insert(&fp->stacks, &s->h) < 0) {
		free(s);
		return -ENOMEM;
	}
	fp->st.stacks++;
	return 0;
}

int fr_fleet_pprof_sample(struct fr_fleet_pprof *fp, struct fr_fleet_str host, uint64_t id,
			  uint64_t count, uint64_t value)
{
	struct snode *s = stack_find(fp, id);
	char hbuf[FR_FLEET_HOST_MAX];
	struct fr_pprof_label label = {.key = "host", .str = cstr(host, hbuf, sizeof(hbuf))};
	int64_t values[2] = {count > INT64_MAX ? INT64_MAX : (int64_t)count,
			     value > INT64_MAX ? INT64_MAX : (int64_t)value};
	const uint64_t *locs;
	uint64_t next = fp->hosts.count;
	size_t n;
	int added;

	if (!intern(&fp->hosts, hbuf, strlen(hbuf), &next, &added))
		return -ENOMEM;
	if (s) {
		locs = s->locs;
		n = s->n;
	} else {
		if (!fp->missing_loc) {
			uint64_t f = fr_pprof_function(fp->p, "[stack not in the stacks table]",
						       NULL, NULL);
			struct fr_pprof_line line = {f, 0};

			fp->missing_loc = fr_pprof_location_lines(fp->p, 0, 0, &line, 1);
		}
		locs = &fp->missing_loc;
		n = 1;
		fp->st.missing_stacks++;
	}
	fr_pprof_sample(fp->p, locs, n, values, 2, &label, 1);
	fp->st.rows++;
	/* Sums a hostile server could overflow wrap; they only report. */
	fp->st.samples += count;
	fp->st.value += value;
	return 0;
}

int fr_fleet_pprof_finish(struct fr_fleet_pprof *fp, struct fr_fleet_pprof_stats *st)
{
	char line[160];
	uint64_t mean = fp->st.samples ? fp->st.value / fp->st.samples : 0;
	int64_t period = mean > INT64_MAX ? INT64_MAX : (int64_t)mean;
	int ret;

	/* Rows hold exact sums, not the rate each host sampled at: the
	 * period is the mean value of a sample over the fleet. */
	fr_pprof_period(fp->p, fp->o.name, fp->o.unit, period);
	snprintf(line, sizeof(line),
		 "period %" PRId64 ": the mean %s per sample over the fleet's hosts", period,
		 fp->o.name);
	fr_pprof_comment(fp->p, line);
	if (fp->st.missing_stacks) {
		snprintf(line, sizeof(line),
			 "%" PRIu64 " (host, stack) totals name a stack the stacks table does "
			 "not hold (shown as [stack not in the stacks table])",
			 fp->st.missing_stacks);
		fr_pprof_comment(fp->p, line);
	}
	ret = fr_pprof_finish(fp->p);
	fp->st.hosts = fp->hosts.count;
	fp->st.raw_bytes = fr_pprof_raw_bytes(fp->p);
	if (st)
		*st = fp->st;
	return ret;
}

void fr_fleet_pprof_free(struct fr_fleet_pprof *fp)
{
	if (!fp)
		return;
	fr_htable_fini(&fp->mappings, free_node);
	fr_htable_fini(&fp->frames, free_node);
	fr_htable_fini(&fp->stacks, free_node);
	fr_htable_fini(&fp->hosts, free_node);
	fr_pprof_free(fp->p);
	free(fp);
}
