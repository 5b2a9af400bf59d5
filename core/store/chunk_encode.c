/* Chunk sealing, second step: the block and its frame (format in
 * core/store/chunk.h).
 *
 * With the metadata collected (core/store/chunk_meta.c), sealing sorts the
 * stacks root first (for front coding) and the samples by (cpu, time)
 * (for runs and the time grid), encodes the block and compresses it into
 * one zstd frame behind the chunk header. What each choice saves was
 * measured on real chunks: docs/performance.md, "Storage efficiency".
 */
#include "core/store/chunk.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk_int.h"
#include "core/util/compress.h"
#include "core/store/crc32c.h"
#include "core/util/le.h"
#include "core/util/log.h"
#include "core/util/time.h"

static int cmp_stacks(const void *a, const void *b, void *arg)
{
	const struct fr_chunk_builder *bl = arg;
	const struct bstack *x = &bl->stacks[*(const uint32_t *)a];
	const struct bstack *y = &bl->stacks[*(const uint32_t *)b];
	const uint64_t *fx = &bl->frames[x->first], *fy = &bl->frames[y->first];
	unsigned n = x->nr_frames < y->nr_frames ? x->nr_frames : y->nr_frames;

	for (unsigned p = 0; p < n; p++) {
		uint64_t u = ROOT_FRAME(fx, x->nr_frames, p), v = ROOT_FRAME(fy, y->nr_frames, p);

		if (u != v)
			return u < v ? -1 : 1;
	}
	if (x->nr_frames != y->nr_frames)
		return x->nr_frames < y->nr_frames ? -1 : 1;
	if (x->nr_kernel != y->nr_kernel)
		return x->nr_kernel < y->nr_kernel ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Stacks are stored sorted root first, so each shares the longest run of
 * root frames it has in common with any other stack with the one before
 * it (front coding). */
static int seal_order_stacks(struct seal *s, const struct fr_chunk_builder *b)
{
	s->stack_order = malloc(((size_t)b->nstacks + 1) * sizeof(*s->stack_order));
	s->stack_rank = malloc(((size_t)b->nstacks + 1) * sizeof(*s->stack_rank));
	if (!s->stack_order || !s->stack_rank)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->nstacks; i++)
		s->stack_order[i] = i;
	qsort_r(s->stack_order, b->nstacks, sizeof(*s->stack_order), cmp_stacks, (void *)b);
	for (uint32_t i = 0; i < b->nstacks; i++)
		s->stack_rank[s->stack_order[i]] = i;
	return 0;
}

static int cmp_samples(const void *a, const void *b, void *arg)
{
	const struct fr_chunk_builder *bl = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (bl->time[i] != bl->time[j])
		return bl->time[i] < bl->time[j] ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Orders the samples by (cpu, time): a stable pass by cpu (the recorder
 * hands them over CPU by CPU, each in time order), then a sort of any CPU
 * whose samples are not already in time order. */
static int seal_order_samples(struct seal *s, const struct fr_chunk_builder *b)
{
	uint32_t n = b->nsamples, *tmp;
	size_t start = 0;

	s->order = malloc(((size_t)n + 1) * sizeof(*s->order));
	s->col = malloc(((size_t)n + 1) * sizeof(*s->col));
	tmp = malloc(((size_t)n + 1) * sizeof(*tmp));
	if (!s->order || !s->col || !tmp) {
		free(tmp);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		s->order[i] = i;
	/* LSD radix on the cpu, index order kept within a cpu. */
	for (unsigned shift = 0; shift < 32; shift += 8) {
		size_t count[256] = {0}, pos = 0;
		uint32_t *t;

		if (n == 0)
			break;
		for (uint32_t i = 0; i < n; i++)
			count[(b->cpu[s->order[i]] >> shift) & 255]++;
		if (count[(b->cpu[s->order[0]] >> shift) & 255] == n)
			continue;
		for (unsigned d = 0; d < 256; d++) {
			size_t c = count[d];
			count[d] = pos;
			pos += c;
		}
		for (uint32_t i = 0; i < n; i++)
			tmp[count[(b->cpu[s->order[i]] >> shift) & 255]++] = s->order[i];
		t = s->order;
		s->order = tmp;
		tmp = t;
	}
	free(tmp);
	for (size_t i = 1; i <= n; i++) {
		bool sorted = true;

		if (i < n && b->cpu[s->order[i]] == b->cpu[s->order[start]])
			continue;
		for (size_t k = start + 1; k < i && sorted; k++)
			sorted = b->time[s->order[k - 1]] <= b->time[s->order[k]];
		if (!sorted)
			qsort_r(s->order + start, i - start, sizeof(*s->order), cmp_samples,
				(void *)b);
		start = i;
	}
	return 0;
}

/* A column as runs: count, then (value, length) pairs. */
static void put_runs(struct wbuf *w, const uint64_t *v, uint32_t n)
{
	uint32_t runs = 0;

	for (uint32_t i = 0; i < n; i++)
		runs += i == 0 || v[i] != v[i - 1];
	wb_v(w, runs);
	for (uint32_t i = 0, len; i < n; i += len) {
		for (len = 1; i + len < n && v[i + len] == v[i]; len++)
			;
		wb_v(w, v[i]);
		wb_v(w, len);
	}
}

static void seal_stacks(struct seal *s, const struct fr_chunk_builder *b)
{
	struct wbuf *w = &s->block;
	uint64_t cur[FR_MAX_FRAMES], prev[FR_MAX_FRAMES];
	unsigned prev_nr = 0, prev_nu = 0;
	unsigned char *shared;
	struct pred *pr;

	/* Columns: pid index, nr_kernel, nr_frames, shared; then the frames
	 * that are not shared. */
	wb_v(w, b->nstacks);
	shared = malloc((size_t)b->nstacks + 1);
	pr = malloc(sizeof(*pr));
	if (!shared || !pr) {
		free(shared);
		free(pr);
		w->err = -ENOMEM;
		return;
	}
	pred_init(pr);
	for (uint32_t i = 0; i < b->nstacks; i++)
		wb_v(w, pid_index(s->pids, s->npids, b->stacks[s->stack_order[i]].pid));
	for (uint32_t i = 0; i < b->nstacks; i++)
		wb_v(w, b->stacks[s->stack_order[i]].nr_kernel);
	for (uint32_t i = 0; i < b->nstacks; i++)
		wb_v(w, b->stacks[s->stack_order[i]].nr_frames);
	for (uint32_t i = 0; i < b->nstacks; i++) {
		const struct bstack *st = &b->stacks[s->stack_order[i]];
		const uint64_t *f = &b->frames[st->first];
		unsigned k = 0;

		if (i > 0) {
			const struct bstack *pv = &b->stacks[s->stack_order[i - 1]];
			const uint64_t *g = &b->frames[pv->first];

			while (k < st->nr_frames && k < pv->nr_frames &&
			       ROOT_FRAME(f, st->nr_frames, k) == ROOT_FRAME(g, pv->nr_frames, k))
				k++;
		}
		shared[i] = (unsigned char)k;
		wb_v(w, k);
	}
	for (uint32_t i = 0; i < b->nstacks; i++) {
		const struct bstack *st = &b->stacks[s->stack_order[i]];
		unsigned nr = st->nr_frames, nu = nr - st->nr_kernel;

		for (unsigned p = 0; p < nr; p++)
			cur[p] = ROOT_FRAME(&b->frames[st->first], nr, p);
		for (unsigned p = shared[i]; p < nr; p++) {
			uint64_t pred =
				frame_pred(pr, cur, nu, i ? prev : NULL, prev_nr, prev_nu, p);

			wb_z(w, (int64_t)(cur[p] - pred));
			pred_update(pr, cur, nu, p);
		}
		memcpy(prev, cur, nr * sizeof(*cur));
		prev_nr = nr;
		prev_nu = nu;
	}
	free(shared);
	free(pr);
}

static void seal_samples(struct seal *s, const struct fr_chunk_builder *b, int64_t first_ns)
{
	struct wbuf *w = &s->block;
	const uint32_t *o = s->order;
	uint32_t n = b->nsamples, runs = 0;

	wb_v(w, n);
	/* CPU runs: cpu (gap after the previous), length, grid period, time
	 * of the first sample. */
	for (uint32_t i = 0; i < n; i++)
		runs += i == 0 || b->cpu[o[i]] != b->cpu[o[i - 1]];
	wb_v(w, runs);
	for (uint32_t i = 0, len; i < n; i += len) {
		uint32_t cpu = b->cpu[o[i]];

		for (len = 1; i + len < n && b->cpu[o[i + len]] == cpu; len++)
			;
		wb_v(w, i == 0 ? cpu : cpu - b->cpu[o[i - 1]] - 1);
		wb_v(w, len);
		wb_v(w, b->rate[o[i]] ? FR_NS_PER_S / b->rate[o[i]] : 0);
		wb_v(w, (uint64_t)b->time[o[i]] - (uint64_t)first_ns);
	}
	/* Time: each sample after the first of its CPU as a whole number of
	 * periods (one column) and the jitter around it (another). */
	for (int pass = 0; pass < 2; pass++) {
		uint64_t period = 0;

		for (uint32_t i = 0; i < n; i++) {
			uint64_t d, k;

			if (i == 0 || b->cpu[o[i]] != b->cpu[o[i - 1]]) {
				period = b->rate[o[i]] ? FR_NS_PER_S / b->rate[o[i]] : 0;
				continue;
			}
			d = (uint64_t)b->time[o[i]] - (uint64_t)b->time[o[i - 1]];
			k = period ? (d + period / 2) / period : 0;
			if (pass == 0 && period)
				wb_v(w, k);
			else if (pass == 1)
				wb_z(w, (int64_t)(d - k * period));
		}
	}
	/* Stack ids as the difference from the previous sample's: samples
	 * of one thread in a row tend to have similar stacks, which the
	 * sorted stack table numbers close together. */
	for (uint32_t i = 0, prev = 0; i < n; i++) {
		uint32_t id = s->stack_rank[b->stack[o[i]]];

		wb_z(w, (int64_t)id - (int64_t)prev);
		prev = id;
	}
	for (uint32_t i = 0; i < n; i++)
		wb_z(w, (int64_t)b->tid[o[i]] - (int64_t)b->stacks[b->stack[o[i]]].pid);
	for (uint32_t i = 0; i < n; i++)
		s->col[i] = b->event[o[i]];
	put_runs(w, s->col, n);
	for (uint32_t i = 0; i < n; i++)
		s->col[i] = b->weight[o[i]];
	put_runs(w, s->col, n);
	for (uint32_t i = 0; i < n; i++)
		s->col[i] = b->rate[o[i]];
	put_runs(w, s->col, n);
	for (uint32_t i = 0; i < n; i++)
		s->col[i] = s->stack_ls[b->stack[o[i]]];
	put_runs(w, s->col, n);
}

/* The label set of each stack's samples: its process's (a sample's pid is
 * its stack's). */
static int seal_stack_labelsets(struct seal *s, const struct fr_chunk_builder *b)
{
	s->stack_ls = calloc((size_t)b->nstacks + 1, sizeof(*s->stack_ls));
	if (!s->stack_ls)
		return -ENOMEM;
	for (uint32_t i = 0; s->nlabelsets && i < b->nstacks; i++)
		s->stack_ls[i] = s->pid_ls[pid_index(s->pids, s->npids, b->stacks[i].pid)];
	return 0;
}

static void seal_block(struct seal *s, const struct fr_chunk_builder *b, int64_t first_ns)
{
	struct wbuf *w = &s->block;
	uint32_t prev = 0;

	wb_reserve(w, b->raw_est + s->strs.blob.len + s->bids.blob.len + s->procs.len +
			      s->threads.len + s->maps.len + s->names.len + s->creators.len +
			      31 * (size_t)s->nlabelsets + 64);

	chunk_strtab_write(w, &s->strs, 0);
	chunk_strtab_write(w, &s->bids, 1);
	wb_v(w, s->npids);
	for (size_t i = 0; i < s->npids; i++) {
		wb_v(w, i == 0 ? s->pids[0] : s->pids[i] - prev - 1);
		prev = s->pids[i];
	}
	wb_v(w, s->nprocs);
	wb_bytes(w, s->procs.p, s->procs.len);
	wb_v(w, s->nthreads);
	wb_bytes(w, s->threads.p, s->threads.len);
	wb_v(w, s->nmaps);
	wb_bytes(w, s->maps.p, s->maps.len);
	seal_stacks(s, b);

	/* Label sets after the empty set 0, each pair that is there. */
	wb_v(w, s->nlabelsets);
	for (uint32_t i = 0; i < s->nlabelsets; i++) {
		const struct lset *l = &s->ls[i];

		wb_v(w, (l->pid != 0) + (l->ppid != 0) + (l->cgroup != 0));
		if (l->pid) {
			wb_v(w, (uint64_t)s->pid_key);
			wb_v(w, l->pid);
		}
		if (l->cgroup) {
			wb_v(w, (uint64_t)s->cgroup_key);
			wb_v(w, l->cgroup);
		}
		if (l->ppid) {
			wb_v(w, (uint64_t)s->ppid_key);
			wb_v(w, l->ppid);
		}
	}

	wb_v(w, b->nevents);
	for (uint32_t i = 0; i < b->nevents; i++) {
		wb_v(w, b->events[i].event);
		wb_v(w, b->events[i].lost);
		wb_v(w, b->events[i].throttled);
		wb_v(w, b->events[i].truncated);
	}
	seal_samples(s, b, first_ns);

	/* Sections (version 3), by increasing id. */
	if (s->nnames) {
		wb_v(w, FR_CHUNK_SECTION_NAMES);
		wb_v(w, fr_varint_len(s->nnames) + s->names.len);
		wb_v(w, s->nnames);
		wb_bytes(w, s->names.p, s->names.len);
	}
	if (s->ncreators) {
		wb_v(w, FR_CHUNK_SECTION_CREATORS);
		wb_v(w, fr_varint_len(s->ncreators) + s->creators.len);
		wb_v(w, s->ncreators);
		wb_bytes(w, s->creators.p, s->creators.len);
	}
}

/* Compresses the encoded block into a new chunk, header first: *out
 * (malloc'd) and *out_len. Returns 0, -ENOMEM, -EFBIG (too large for the
 * format) or a compression error. */
static int seal_frame(struct seal *s, struct fr_chunk_builder *b, int64_t first_ns, int64_t last_ns,
		      int64_t clock_offset, void **out, size_t *out_len)
{
	struct fr_chunk_header h;
	unsigned char *buf = NULL, *shrunk;
	ssize_t comp;
	int ret;

	if (!b->zstd) {
		b->zstd = fr_zstd_new(b->level);
		if (!b->zstd)
			return -ENOMEM;
	}
	buf = malloc(FR_CHUNK_HEADER_LEN + fr_zstd_bound(s->block.len));
	if (!buf)
		return -ENOMEM;
	comp = fr_zstd_compress(b->zstd, buf + FR_CHUNK_HEADER_LEN, fr_zstd_bound(s->block.len),
				s->block.p, s->block.len);
	if (comp < 0) {
		ret = (int)comp;
		goto err_free;
	}
	if ((size_t)comp > FR_CHUNK_COMP_MAX) {
		ret = -EFBIG;
		goto err_free;
	}

	h = (struct fr_chunk_header){
		.magic = FR_CHUNK_MAGIC,
		/* Without sections, readable by the builds before them. */
		.version = s->nnames || s->ncreators || s->app_section || b->ngaps
				   ? FR_CHUNK_VERSION
				   : FR_CHUNK_VERSION_MIN,
		.header_len = FR_CHUNK_HEADER_LEN,
		.seq = 0,
		.first_ns = first_ns,
		.last_ns = last_ns,
		.nsamples = b->nsamples,
		.raw_len = (uint32_t)s->block.len,
		.comp_len = (uint32_t)comp,
		.covers = 0,
		.clock_offset = clock_offset,
		.payload_crc = fr_crc32c(0, buf + FR_CHUNK_HEADER_LEN, (size_t)comp),
	};
	chunk_header_write(buf, &h);

	shrunk = realloc(buf, FR_CHUNK_HEADER_LEN + (size_t)comp);
	if (shrunk)
		buf = shrunk;
	*out = buf;
	*out_len = FR_CHUNK_HEADER_LEN + (size_t)comp;
	return 0;
err_free:
	free(buf);
	return ret;
}

/* Section 4, the gaps, after the application labels' section. Returns 0
 * or -ENOMEM. */
static int seal_gaps(struct seal *s, const struct fr_chunk_builder *b, int64_t first_ns)
{
	struct wbuf g = {0};

	if (!b->ngaps)
		return 0;
	wb_v(&g, b->ngaps);
	for (uint32_t i = 0; i < b->ngaps; i++) {
		const struct fr_chunk_gap *x = &b->gaps[i];

		wb_v(&g, x->kind);
		wb_v(&g, x->event);
		wb_v(&g, x->count);
		wb_z(&g, (int64_t)((uint64_t)x->from_ns - (uint64_t)first_ns));
		wb_v(&g, (uint64_t)x->to_ns - (uint64_t)x->from_ns);
	}
	wb_v(&s->block, FR_CHUNK_SECTION_GAPS);
	wb_v(&s->block, g.len);
	wb_bytes(&s->block, g.p, g.len);
	free(g.p);
	return g.err ? g.err : s->block.err;
}

int fr_chunk_builder_seal(struct fr_chunk_builder *b, const struct fr_chunk_meta_ops *ops,
			  int64_t clock_offset, void **out, size_t *out_len)
{
	struct seal s;
	int64_t first_ns, last_ns;
	int ret;

	*out = NULL;
	*out_len = 0;
	if (b->nsamples == 0 && b->nevents == 0 && b->ngaps == 0)
		return -ENODATA;
	memset(&s, 0, sizeof(s));

	if (b->nsamples) {
		first_ns = b->first_ns;
		last_ns = b->last_ns;
	} else {
		/* Counters alone still need a place in time to be found. */
		first_ns = last_ns = fr_now_real_ns();
	}

	ret = chunk_seal_meta(&s, b, ops, first_ns);
	if (ret < 0)
		goto out;
	ret = seal_stack_labelsets(&s, b);
	if (ret < 0)
		goto out;
	ret = seal_order_stacks(&s, b);
	if (ret < 0)
		goto out;
	ret = seal_order_samples(&s, b);
	if (ret < 0)
		goto out;
	seal_block(&s, b, first_ns);
	ret = s.block.err;
	if (ret == 0)
		ret = chunk_app_seal(&s, b, ops);
	if (ret == 0)
		ret = seal_gaps(&s, b, first_ns);
	if (ret < 0)
		goto out;
	if (s.block.len > FR_CHUNK_RAW_MAX) {
		ret = -EFBIG;
		goto out;
	}
	ret = seal_frame(&s, b, first_ns, last_ns, clock_offset, out, out_len);
out:
	chunk_seal_fini(&s);
	chunk_builder_reset(b);
	return ret;
}
