/* Chunk sealing, first step: the metadata of a chunk's samples.
 *
 * Sealing runs off the hot path and may allocate. This step looks up
 * processes, threads and mappings through the caller's ops, interns
 * strings and build ids, gives each distinct (cgroup, parent) of the
 * chunk's processes a label set and each of their ancestors without
 * samples a set naming its parent (so descendants can be found from chunks
 * alone, through the processes that only fork and wait). The sections it
 * encodes are written into the block by core/store/chunk_encode.c. What each
 * choice saves was measured on real chunks: docs/performance.md, "Storage
 * efficiency".
 */
#include "core/store/chunk.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk_int.h"
#include "core/util/htable.h"

/* Sizes the table's entries and slots for `cap` strings. */
static int strtab_size(struct strtab *t, size_t cap)
{
	size_t slots = 16;
	void *ent = realloc(t->ent, cap * sizeof(*t->ent));
	uint32_t *s;

	if (!ent)
		return -ENOMEM;
	t->ent = ent;
	while (slots < 2 * cap)
		slots <<= 1;
	s = calloc(slots, sizeof(*s));
	if (!s)
		return -ENOMEM;
	free(t->slots);
	t->slots = s;
	t->cap = (uint32_t)cap;
	t->mask = (uint32_t)(slots - 1);
	/* Entries interned so far find their slots again. */
	for (uint32_t id = 1; id < t->n; id++) {
		uint32_t slot = (uint32_t)fr_fnv1a(FR_FNV_OFFSET, t->blob.p + t->ent[id].off,
						   t->ent[id].len) &
				t->mask;

		while (t->slots[slot])
			slot = (slot + 1) & t->mask;
		t->slots[slot] = id + 1;
	}
	return 0;
}

int chunk_strtab_init(struct strtab *t, size_t max_strings)
{
	memset(t, 0, sizeof(*t));
	if (strtab_size(t, max_strings ? max_strings : 1) < 0)
		return -ENOMEM;
	t->ent[0].off = 0;
	t->ent[0].len = 0;
	t->n = 1;
	return 0;
}

void chunk_strtab_fini(struct strtab *t)
{
	free(t->blob.p);
	free(t->ent);
	free(t->slots);
}

/* The id of the `len` bytes at `s`, or -ENOENT with *slot the free slot
 * they would take. */
static int64_t strtab_find(const struct strtab *t, const void *s, size_t len, uint32_t *slot)
{
	uint32_t i;

	for (i = (uint32_t)fr_fnv1a(FR_FNV_OFFSET, s, len) & t->mask; t->slots[i];
	     i = (i + 1) & t->mask) {
		uint32_t id = t->slots[i] - 1;

		if (t->ent[id].len == len && memcmp(t->blob.p + t->ent[id].off, s, len) == 0)
			return id;
	}
	*slot = i;
	return -ENOENT;
}

int64_t chunk_strtab_find_n(const struct strtab *t, const void *s, size_t len)
{
	uint32_t slot;

	return len ? strtab_find(t, s, len, &slot) : 0;
}

/* Returns the id of the `len` bytes at `s` (0 when len is 0), or -ENOMEM.
 * A table given fewer strings than it is asked for grows. */
int64_t chunk_strtab_intern_n(struct strtab *t, const void *s, size_t len)
{
	uint32_t slot;
	int64_t id;

	if (len == 0)
		return 0;
	id = strtab_find(t, s, len, &slot);
	if (id >= 0)
		return id;
	if (t->n >= t->cap) {
		if (t->cap >= UINT32_MAX / 4 || strtab_size(t, 2 * (size_t)t->cap) < 0)
			return -ENOMEM;
		strtab_find(t, s, len, &slot);
	}
	wb_bytes(&t->blob, s, len);
	if (t->blob.err)
		return t->blob.err;
	t->ent[t->n].off = (uint32_t)(t->blob.len - len);
	t->ent[t->n].len = (uint32_t)len;
	t->slots[slot] = t->n + 1;
	return t->n++;
}

/* Returns the id of `s` (NULL and "" are 0), or -ENOMEM. */
static int64_t strtab_intern(struct strtab *t, const char *s)
{
	return s ? chunk_strtab_intern_n(t, s, strnlen(s, FR_CHUNK_STRING_MAX)) : 0;
}

int64_t chunk_strtab_intern(struct strtab *t, const char *s)
{
	return strtab_intern(t, s);
}

void chunk_strtab_write(struct wbuf *w, const struct strtab *t, uint32_t from)
{
	wb_v(w, t->n - from);
	for (uint32_t i = from; i < t->n; i++) {
		wb_v(w, t->ent[i].len);
		/* No pointer arithmetic on a blob that was never allocated. */
		if (t->ent[i].len)
			wb_bytes(w, t->blob.p + t->ent[i].off, t->ent[i].len);
	}
}

/* Sealing sorts every distinct pid and tid and every user frame of every
 * stack; with qsort's callback per comparison that was 40% of the ingest
 * cost. LSD radix sorts, 8 bits a pass, skipping passes whose digit is the
 * same for every element (the high bytes of pids and of addresses), are
 * several times faster. `tmp` has room for n elements. */
static void radix_u32(uint32_t *v, uint32_t *tmp, size_t n)
{
	uint32_t *src = v, *dst = tmp, *t;

	for (unsigned shift = 0; shift < 32; shift += 8) {
		size_t count[256] = {0}, pos = 0;

		for (size_t i = 0; i < n; i++)
			count[(src[i] >> shift) & 255]++;
		if (count[(src[0] >> shift) & 255] == n)
			continue;
		for (unsigned d = 0; d < 256; d++) {
			size_t c = count[d];
			count[d] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & 255]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

static unsigned pidaddr_digit(const struct pidaddr *e, unsigned pass)
{
	/* Passes 0..7: the address, low byte first; 8..11: the pid. */
	return pass < 8 ? (unsigned)(e->addr >> (pass * 8)) & 255
			: (e->pid >> ((pass - 8) * 8)) & 255;
}

static void radix_pidaddr(struct pidaddr *v, struct pidaddr *tmp, size_t n)
{
	struct pidaddr *src = v, *dst = tmp, *t;

	for (unsigned pass = 0; pass < 12; pass++) {
		size_t count[256] = {0}, pos = 0;

		for (size_t i = 0; i < n; i++)
			count[pidaddr_digit(&src[i], pass)]++;
		if (count[pidaddr_digit(&src[0], pass)] == n)
			continue;
		for (unsigned d = 0; d < 256; d++) {
			size_t c = count[d];
			count[d] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[pidaddr_digit(&src[i], pass)]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

static size_t sort_unique(uint32_t *v, uint32_t *tmp, size_t n)
{
	size_t k = 0;

	if (n == 0)
		return 0;
	radix_u32(v, tmp, n);
	for (size_t i = 1; i < n; i++)
		if (v[i] != v[k])
			v[++k] = v[i];
	return k + 1;
}

void chunk_seal_fini(struct seal *s)
{
	free(s->pids);
	free(s->tids);
	free(s->pairs);
	chunk_strtab_fini(&s->strs);
	chunk_strtab_fini(&s->bids);
	free(s->procs.p);
	free(s->threads.p);
	free(s->maps.p);
	free(s->names.p);
	free(s->creators.p);
	free(s->ls);
	free(s->pid_ls);
	free(s->ppids);
	free(s->ls_slots);
	free(s->anc_slots);
	free(s->stack_ls);
	free(s->stack_order);
	free(s->stack_rank);
	free(s->order);
	free(s->col);
	free(s->block.p);
}

/* Collects the distinct pids (of stacks: a sample's pid is its stack's)
 * and tids, and the (pid, address) pairs of every user frame of every
 * stack, sorted. */
static int seal_collect(struct seal *s, const struct fr_chunk_builder *b)
{
	size_t user = 0, n_ids = (size_t)b->nsamples + b->nstacks + 1;
	void *tmp;

	s->pids = malloc(n_ids * sizeof(*s->pids));
	s->tids = malloc(n_ids * sizeof(*s->tids));
	for (uint32_t i = 0; i < b->nstacks; i++)
		user += b->stacks[i].nr_frames - b->stacks[i].nr_kernel;
	s->pairs = malloc((user + 1) * sizeof(*s->pairs));
	tmp = malloc((user + 1) * sizeof(*s->pairs) > n_ids * sizeof(uint32_t)
			     ? (user + 1) * sizeof(*s->pairs)
			     : n_ids * sizeof(uint32_t));
	if (!s->pids || !s->tids || !s->pairs || !tmp) {
		free(tmp);
		return -ENOMEM;
	}

	for (uint32_t i = 0; i < b->nstacks; i++)
		s->pids[i] = b->stacks[i].pid;
	s->npids = sort_unique(s->pids, tmp, b->nstacks);
	memcpy(s->tids, b->tid, b->nsamples * sizeof(*s->tids));
	s->ntids = sort_unique(s->tids, tmp, b->nsamples);

	for (uint32_t i = 0; i < b->nstacks; i++) {
		const struct bstack *st = &b->stacks[i];

		for (unsigned k = st->nr_kernel; k < st->nr_frames; k++)
			s->pairs[s->npairs++] =
				(struct pidaddr){.pid = st->pid, .addr = b->frames[st->first + k]};
	}
	if (s->npairs)
		radix_pidaddr(s->pairs, tmp, s->npairs);
	free(tmp);
	return 0;
}

static int64_t intern_build_id(struct seal *s, uint8_t len, const uint8_t *id)
{
	return chunk_strtab_intern_n(&s->bids, id, len > FR_BUILD_ID_MAX ? FR_BUILD_ID_MAX : len);
}

/* The string id of label key `name`, interned on first use into *key.
 * Returns it or -ENOMEM. */
static int64_t label_key(struct seal *s, int64_t *key, const char *name)
{
	if (*key <= 0)
		*key = strtab_intern(&s->strs, name);
	return *key;
}

/* The string id of `v` in decimal, or -ENOMEM. */
static int64_t intern_u32(struct seal *s, uint32_t v)
{
	char num[10];
	size_t n = sizeof(num);

	do {
		num[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return chunk_strtab_intern_n(&s->strs, num + n, sizeof(num) - n);
}

/* The label set of a process in cgroup `path` (NULL or "": unknown) whose
 * parent is `ppid` (0: unknown): set 0 when both are unknown, else one set
 * per distinct (cgroup, ppid), numbered in the order first seen (pids
 * increasing). Returns the set or -ENOMEM. */
static int64_t proc_labelset(struct seal *s, const char *path, uint32_t ppid)
{
	int64_t cg = 0, pp = 0;
	uint32_t slot;

	if (path && *path) {
		if (label_key(s, &s->cgroup_key, "cgroup") < 0)
			return -ENOMEM;
		cg = strtab_intern(&s->strs, path);
	}
	if (ppid) {
		if (label_key(s, &s->ppid_key, "ppid") < 0)
			return -ENOMEM;
		pp = intern_u32(s, ppid);
	}
	if (cg < 0 || pp < 0)
		return -ENOMEM;
	if (!cg && !pp)
		return 0;
	for (slot = (uint32_t)mix((uint64_t)cg << 32, (uint64_t)pp) & s->ls_mask; s->ls_slots[slot];
	     slot = (slot + 1) & s->ls_mask) {
		const struct lset *l = &s->ls[s->ls_slots[slot] - 1];

		if (l->cgroup == cg && l->ppid == pp)
			return s->ls_slots[slot];
	}
	s->ls[s->nlabelsets++] = (struct lset){.cgroup = (uint32_t)cg, .ppid = (uint32_t)pp};
	s->ls_slots[slot] = s->nlabelsets;
	return s->nlabelsets;
}

static int seal_procs(struct seal *s, const struct fr_chunk_meta_ops *ops, int64_t first_ns)
{
	size_t slots = 16;
	int64_t prev = -1;

	/* A set per process at most, then the ancestors'. */
	while (slots < 2 * (s->npids + 1))
		slots <<= 1;
	s->ls = malloc((s->npids + s->max_anc + 1) * sizeof(*s->ls));
	s->pid_ls = calloc(s->npids + 1, sizeof(*s->pid_ls));
	s->ppids = calloc(s->npids + 1, sizeof(*s->ppids));
	s->ls_slots = calloc(slots, sizeof(*s->ls_slots));
	if (!s->ls || !s->pid_ls || !s->ppids || !s->ls_slots)
		return -ENOMEM;
	s->ls_mask = (uint32_t)(slots - 1);
	for (size_t i = 0; ops && ops->proc && i < s->npids; i++) {
		struct fr_proc_info pi;
		int64_t comm, exe, bid, ls;

		memset(&pi, 0, sizeof(pi));
		if (ops->proc(ops->arg, s->pids[i], &pi) < 0)
			continue;
		comm = strtab_intern(&s->strs, pi.comm);
		exe = strtab_intern(&s->strs, pi.exe);
		bid = intern_build_id(s, pi.build_id_len, pi.build_id);
		ls = proc_labelset(s, pi.cgroup, pi.ppid);
		if (comm < 0 || exe < 0 || bid < 0 || ls < 0)
			return -ENOMEM;
		s->pid_ls[i] = (uint32_t)ls;
		s->ppids[i] = pi.ppid;
		wb_v(&s->procs, (uint64_t)((int64_t)i - prev - 1));
		wb_v(&s->procs, pi.uid);
		wb_v(&s->procs, (uint64_t)comm);
		wb_v(&s->procs, (uint64_t)exe);
		wb_z(&s->procs, (int64_t)((uint64_t)pi.start_ns - (uint64_t)first_ns));
		wb_v(&s->procs, (uint64_t)bid);
		s->nprocs++;
		prev = (int64_t)i;
	}
	return s->procs.err;
}

/* Whether the walk up has asked about `pid` already; else notes it.
 * Returns 1 (seen), 0 (noted now) or -ENOSPC (max_anc pids noted). */
static int anc_seen(struct seal *s, uint32_t pid)
{
	uint32_t slot;

	for (slot = (uint32_t)mix(0, pid) & s->anc_mask; s->anc_slots[slot];
	     slot = (slot + 1) & s->anc_mask)
		if (s->anc_slots[slot] == pid)
			return 1;
	if (s->nanc >= s->max_anc)
		return -ENOSPC;
	s->anc_slots[slot] = pid;
	s->nanc++;
	return 0;
}

/* A process that only forks and waits (a shell, make, the `sh -c` between
 * make and a compiler) is rarely sampled, yet the descendants of a process
 * are found through it. So from each process of the chunk, the chain of
 * parents is walked up through the processes that have no samples here,
 * and each is given a set {"pid": N, "ppid": M} that no sample refers to.
 * A walk stops at a process of the chunk (its own walk goes on from
 * there), at a pid asked about before, at an unknown process or one
 * without a parent; at most max_anc pids are asked about in all, which
 * also ends cycles. Returns 0 or -ENOMEM. */
static int seal_ancestors(struct seal *s, const struct fr_chunk_meta_ops *ops)
{
	size_t slots = 16;

	while (slots < 2 * ((size_t)s->max_anc + 1))
		slots <<= 1;
	s->anc_slots = calloc(slots, sizeof(*s->anc_slots));
	if (!s->anc_slots)
		return -ENOMEM;
	s->anc_mask = (uint32_t)(slots - 1);
	for (size_t i = 0; ops && ops->proc && i < s->npids; i++) {
		uint32_t pid = s->ppids[i];

		while (pid) {
			struct fr_proc_info pi;
			size_t k = pid_index(s->pids, s->npids, pid);
			int64_t id, parent;

			if ((k < s->npids && s->pids[k] == pid) || anc_seen(s, pid) != 0)
				break;
			memset(&pi, 0, sizeof(pi));
			if (ops->proc(ops->arg, pid, &pi) < 0 || !pi.ppid)
				break;
			if (label_key(s, &s->pid_key, "pid") < 0 ||
			    label_key(s, &s->ppid_key, "ppid") < 0)
				return -ENOMEM;
			id = intern_u32(s, pid);
			parent = intern_u32(s, pi.ppid);
			if (id < 0 || parent < 0)
				return -ENOMEM;
			s->ls[s->nlabelsets++] =
				(struct lset){.pid = (uint32_t)id, .ppid = (uint32_t)parent};
			pid = pi.ppid;
		}
	}
	return 0;
}

static int seal_threads(struct seal *s, const struct fr_chunk_meta_ops *ops)
{
	int64_t prev = -1;

	for (size_t i = 0; ops && ops->thread && i < s->ntids; i++) {
		struct fr_thread_info ti;
		int64_t name;

		memset(&ti, 0, sizeof(ti));
		if (ops->thread(ops->arg, s->tids[i], &ti) < 0)
			continue;
		name = strtab_intern(&s->strs, ti.name);
		if (name < 0)
			return -ENOMEM;
		wb_v(&s->threads, (uint64_t)((int64_t)s->tids[i] - prev - 1));
		wb_z(&s->threads, (int64_t)ti.pid - (int64_t)s->tids[i]);
		wb_v(&s->threads, (uint64_t)name);
		s->nthreads++;
		chunk_seal_creator(s, s->tids[i], ti.creator);
		prev = s->tids[i];
	}
	return s->threads.err;
}

/* Walks the sorted (pid, address) pairs; a mapping found for one address
 * covers the following ones up to its end, so the ops are asked once per
 * mapping (and once per unmapped address), and the table comes out sorted
 * by (pid, start). Mappings that do not contain the address asked for or
 * overlap the previous one are inconsistent answers and left out. */
static int seal_maps(struct seal *s, const struct fr_chunk_meta_ops *ops)
{
	bool have = false;
	uint32_t cur_pid = 0, prev_pidx = 0;
	uint64_t cur_start = 0, cur_end = 0;

	for (size_t i = 0; ops && ops->mapping && i < s->npairs; i++) {
		const struct pidaddr *pa = &s->pairs[i];
		struct fr_map_info mi;
		int64_t path, bid;
		uint32_t pidx;

		if (have && pa->pid == cur_pid && pa->addr >= cur_start && pa->addr < cur_end)
			continue;
		if (i > 0 && pa->pid == s->pairs[i - 1].pid && pa->addr == s->pairs[i - 1].addr)
			continue;
		memset(&mi, 0, sizeof(mi));
		if (ops->mapping(ops->arg, pa->pid, pa->addr, &mi) < 0)
			continue;
		if (mi.start > pa->addr || mi.end <= pa->addr)
			continue;
		if (have && pa->pid == cur_pid && mi.start < cur_end)
			continue;
		path = strtab_intern(&s->strs, mi.path);
		bid = intern_build_id(s, mi.build_id_len, mi.build_id);
		if (path < 0 || bid < 0)
			return -ENOMEM;
		pidx = pid_index(s->pids, s->npids, pa->pid);
		wb_v(&s->maps, pidx - prev_pidx);
		/* Within a process, the gap after the previous mapping. */
		wb_v(&s->maps, have && pa->pid == cur_pid ? mi.start - cur_end : mi.start);
		wb_v(&s->maps, mi.end - mi.start);
		wb_v(&s->maps, mi.pgoff);
		wb_v(&s->maps, (uint64_t)path);
		wb_v(&s->maps, (uint64_t)bid);
		s->nmaps++;
		have = true;
		prev_pidx = pidx;
		cur_pid = pa->pid;
		cur_start = mi.start;
		cur_end = mi.end;
	}
	return s->maps.err;
}

int chunk_seal_meta(struct seal *s, const struct fr_chunk_builder *b,
		    const struct fr_chunk_meta_ops *ops, int64_t first_ns)
{
	size_t max_strings;
	int ret;

	ret = seal_collect(s, b);
	if (ret < 0)
		return ret;
	/* "", comm, exe, cgroup and ppid of each pid, the "cgroup", "ppid"
	 * and "pid" keys, pid and ppid of each ancestor, thread names and
	 * mapping paths, and the names over time. The walk up asks about as
	 * many pids as the chunk has, and 64 more: a few shells and managers
	 * above a chunk's processes, never all of a deep or cyclic chain. */
	s->max_anc = (uint32_t)s->npids + 64;
	max_strings = 4 + 4 * s->npids + 2 * (size_t)s->max_anc + s->ntids + s->npairs +
		      chunk_names_strings(s, ops);
	ret = chunk_strtab_init(&s->strs, max_strings);
	if (ret < 0)
		return ret;
	ret = chunk_strtab_init(&s->bids, 1 + s->npids + s->npairs);
	if (ret < 0)
		return ret;
	ret = seal_procs(s, ops, first_ns);
	if (ret < 0)
		return ret;
	ret = seal_ancestors(s, ops);
	if (ret < 0)
		return ret;
	ret = seal_threads(s, ops);
	if (ret < 0)
		return ret;
	ret = chunk_seal_names(s, ops, first_ns);
	if (ret < 0)
		return ret;
	return seal_maps(s, ops);
}
