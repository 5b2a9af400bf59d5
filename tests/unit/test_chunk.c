/* Chunk codec: builder -> seal -> decode round trip with every field
 * compared, capacity limits, corruption of every byte, mutated blocks
 * re-wrapped with valid checksums, and random garbage. */
#include "core/chunk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compress.h"
#include "core/crc32c.h"

#include "tests/unit/check.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* ------------------------------------------------------------------ */
/* Fake process tracker                                                 */

#define KERNEL_BASE 0xffffffff81000000ull

struct fake_map {
	uint32_t pid;
	uint64_t start, end, pgoff;
	const char *path;
	uint8_t build_id_len;
};

static const struct fake_map fake_maps[] = {
	{100, 0x400000, 0x480000, 0, "/usr/bin/server", 20},
	{100, 0x7f0000000000, 0x7f0000200000, 0x1000, "/usr/lib/libc.so.6", 20},
	{100, 0x7f0000200000, 0x7f0000300000, 0, "/usr/lib/libm.so.6", 0},
	{200, 0x400000, 0x500000, 0x2000, "/usr/bin/worker", 8},
	{300, 0x10000, 0x20000, 0, "", 0}, /* anonymous (JIT) */
};
#define NFAKE_MAPS (sizeof(fake_maps) / sizeof(fake_maps[0]))

static int fake_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	static char comm[32], exe[64];

	(void)arg;
	if (pid != 100 && pid != 200 && pid != 300)
		return -ENOENT;
	snprintf(comm, sizeof(comm), "comm-%u", pid);
	snprintf(exe, sizeof(exe), pid == 300 ? "" : "/usr/bin/exe-%u", pid);
	out->pid = pid;
	out->uid = pid * 10;
	out->comm = comm;
	out->exe = pid == 300 ? NULL : exe;
	out->start_ns = pid == 200 ? -5 : (int64_t)pid * 1000000007;
	out->build_id_len = pid == 100 ? 20 : 0;
	for (int i = 0; i < out->build_id_len; i++)
		out->build_id[i] = (uint8_t)(pid + i);
	return 0;
}

static int fake_thread(void *arg, uint32_t tid, struct fr_thread_info *out)
{
	static char name[32];

	(void)arg;
	if (tid % 7 == 3)
		return -ENOENT;
	snprintf(name, sizeof(name), "thread-%u", tid);
	out->tid = tid;
	out->pid = tid / 10 * 10;
	out->name = tid % 5 == 0 ? "worker" : name;
	return 0;
}

static int nmapping_calls;

static int fake_mapping(void *arg, uint32_t pid, uint64_t addr, struct fr_map_info *out)
{
	(void)arg;
	nmapping_calls++;
	for (size_t i = 0; i < NFAKE_MAPS; i++) {
		const struct fake_map *m = &fake_maps[i];

		if (m->pid == pid && addr >= m->start && addr < m->end) {
			out->start = m->start;
			out->end = m->end;
			out->pgoff = m->pgoff;
			out->path = m->path;
			out->build_id_len = m->build_id_len;
			for (int k = 0; k < m->build_id_len; k++)
				out->build_id[k] = (uint8_t)(i * 16 + k);
			return 0;
		}
	}
	return -ENOENT;
}

static const struct fr_chunk_meta_ops fake_ops = {
	.proc = fake_proc,
	.thread = fake_thread,
	.mapping = fake_mapping,
};

static const struct fake_map *fake_find(uint32_t pid, uint64_t addr)
{
	for (size_t i = 0; i < NFAKE_MAPS; i++)
		if (fake_maps[i].pid == pid && addr >= fake_maps[i].start &&
		    addr < fake_maps[i].end)
			return &fake_maps[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Sample generation                                                    */

#define NSAMPLES 3000
#define BASE_NS 1700000000000000000ll

struct stored {
	struct fr_sample s;
	uint64_t ips[FR_MAX_FRAMES];
};

static void user_frame(uint32_t pid, uint64_t *out)
{
	/* Mostly mapped addresses, some unmapped. */
	switch (rng() % 5) {
	case 0:
		*out = 0x400000 + rng() % 0x80000;
		break;
	case 1:
		*out = 0x7f0000000000 + rng() % 0x300000;
		break;
	case 2:
		*out = 0x10000 + rng() % 0x10000;
		break;
	case 3:
		*out = 0x400000 + rng() % 0x100000;
		break;
	default:
		*out = 0x12345678 + rng() % 4096; /* unmapped */
		break;
	}
	(void)pid;
}

static void make_sample(struct stored *st, int i, const struct stored *prev)
{
	static const uint32_t pids[] = {100, 200, 300, 400};
	struct fr_sample *s = &st->s;
	unsigned nk, nu;

	memset(st, 0, sizeof(*st));
	s->pid = pids[rng() % 4];
	s->tid = s->pid + (uint32_t)(rng() % 8);
	s->cpu = (uint32_t)(rng() % 64);
	s->event = (uint32_t)(rng() % FR_EVENT_COUNT);
	s->weight = rng() % 3 ? 10101010 : rng();
	s->rate_hz = rng() % 2 ? 99 : 4999;
	/* Out of order by up to 5 ms, as samples from several CPUs are. */
	s->time_ns = BASE_NS + (int64_t)i * 1000000 - (int64_t)(rng() % 5000000);
	s->ips = st->ips;
	if (prev && rng() % 3 == 0) {
		/* Repeat a stack: interned once. */
		s->pid = prev->s.pid;
		s->nr_kernel = prev->s.nr_kernel;
		s->nr_frames = prev->s.nr_frames;
		memcpy(st->ips, prev->ips, sizeof(st->ips));
		return;
	}
	switch (rng() % 6) {
	case 0:
		nk = 0;
		nu = 0;
		break;
	case 1:
		nk = (unsigned)(rng() % 20);
		nu = FR_MAX_FRAMES - nk; /* deepest */
		break;
	case 2:
		nk = 5;
		nu = 0; /* kernel only */
		break;
	default:
		nk = (unsigned)(rng() % 8);
		nu = 1 + (unsigned)(rng() % 30);
		break;
	}
	s->nr_kernel = (uint16_t)nk;
	s->nr_frames = (uint16_t)(nk + nu);
	for (unsigned k = 0; k < nk; k++)
		st->ips[k] = KERNEL_BASE + rng() % 0x1000000;
	for (unsigned k = nk; k < nk + nu; k++)
		user_frame(s->pid, &st->ips[k]);
}

/* ------------------------------------------------------------------ */
/* Checks                                                               */

static const char *str(const struct fr_chunk *c, uint32_t id)
{
	return id < c->nstrings ? c->strings[id] : "<bad id>";
}

static int cmp_stored(const void *a, const void *b)
{
	const struct stored *x = a, *y = b;
	const struct fr_sample *s = &x->s, *t = &y->s;

#define KEY(f)                          \
	if (s->f != t->f)               \
		return s->f < t->f ? -1 : 1
	KEY(time_ns);
	KEY(cpu);
	KEY(tid);
	KEY(pid);
	KEY(event);
	KEY(weight);
	KEY(rate_hz);
	KEY(nr_kernel);
	KEY(nr_frames);
#undef KEY
	return memcmp(x->ips, y->ips, s->nr_frames * sizeof(uint64_t));
}

/* Sorted copies of the input and of the decoded samples (with the decoded
 * index in `tid` of a parallel array), so that samples can be compared
 * whatever order the chunk returns them in. */
struct pairing {
	struct stored *in, *out;
	uint32_t *index; /* out[i] is decoded sample index[i] */
};

static int cmp_indexed(const void *a, const void *b, void *arg)
{
	const struct stored *v = arg;

	return cmp_stored(&v[*(const uint32_t *)a], &v[*(const uint32_t *)b]);
}

static int pair_samples(const struct fr_chunk *c, const struct stored *in, uint32_t n,
			struct pairing *pr)
{
	struct stored *dec;

	pr->in = malloc((n + 1) * sizeof(*pr->in));
	pr->out = NULL;
	pr->index = malloc((n + 1) * sizeof(*pr->index));
	dec = calloc(n + 1, sizeof(*dec));
	if (!pr->in || !pr->index || !dec) {
		free(dec);
		return -1;
	}
	memcpy(pr->in, in, n * sizeof(*in));
	for (uint32_t i = 0; i < n; i++)
		pr->in[i].s.ips = pr->in[i].ips;
	qsort(pr->in, n, sizeof(*pr->in), cmp_stored);
	for (uint32_t i = 0; i < n && i < c->nsamples; i++) {
		struct fr_sample *s = &dec[i].s;

		s->time_ns = c->time_ns[i];
		s->cpu = c->cpu[i];
		s->tid = c->tid[i];
		s->pid = c->pid[i];
		s->event = c->event[i];
		s->weight = c->weight[i];
		s->rate_hz = c->rate_hz[i];
		if (c->stack[i] < c->nstacks) {
			const struct fr_chunk_stack *st = &c->stacks[c->stack[i]];

			s->nr_kernel = (uint16_t)st->nr_kernel;
			s->nr_frames = (uint16_t)st->nr_frames;
			memcpy(dec[i].ips, &c->frames[st->first], st->nr_frames * sizeof(uint64_t));
		}
		pr->index[i] = i;
	}
	qsort_r(pr->index, n, sizeof(*pr->index), cmp_indexed, dec);
	free(dec);
	return 0;
}

static void pairing_fini(struct pairing *pr)
{
	free(pr->in);
	free(pr->index);
}

static void check_decoded(const struct fr_chunk *c, const struct stored *unsorted, uint32_t n,
			  int64_t clock_offset)
{
	int64_t tmin = INT64_MAX, tmax = INT64_MIN;
	struct pairing pr;
	const struct stored *in;

	CHECK(c->hdr.magic == FR_CHUNK_MAGIC && c->hdr.version == FR_CHUNK_VERSION,
	      "header identity");
	CHECK(c->hdr.seq == 0, "seq %llu, want 0", (unsigned long long)c->hdr.seq);
	CHECK(c->hdr.clock_offset == clock_offset, "clock_offset");
	CHECK(c->hdr.nsamples == n && c->nsamples == n, "nsamples %u/%u, want %u",
	      c->hdr.nsamples, c->nsamples, n);
	CHECK(c->nstrings >= 1 && strcmp(c->strings[0], "") == 0, "string 0 is not \"\"");
	CHECK(c->nlabelsets == 1 && c->labelsets[0].npairs == 0, "label-free chunk");
	if (c->nsamples != n || pair_samples(c, unsorted, n, &pr) < 0)
		return;
	in = pr.in;

	for (uint32_t k = 0; k < n; k++) {
		const struct fr_sample *s = &in[k].s;
		const struct fr_chunk_stack *st;
		uint32_t i = pr.index[k];

		if (s->time_ns < tmin)
			tmin = s->time_ns;
		if (s->time_ns > tmax)
			tmax = s->time_ns;
		CHECK(c->time_ns[i] == s->time_ns, "sample %u time", i);
		CHECK(c->tid[i] == s->tid, "sample %u tid", i);
		CHECK(c->pid[i] == s->pid, "sample %u pid", i);
		CHECK(c->cpu[i] == s->cpu, "sample %u cpu", i);
		CHECK(c->event[i] == s->event, "sample %u event", i);
		CHECK(c->weight[i] == s->weight, "sample %u weight", i);
		CHECK(c->rate_hz[i] == s->rate_hz, "sample %u rate", i);
		CHECK(c->labelset[i] == 0, "sample %u labelset", i);
		if (c->stack[i] >= c->nstacks) {
			CHECK(0, "sample %u stack id out of range", i);
			continue;
		}
		st = &c->stacks[c->stack[i]];
		CHECK(st->pid == s->pid, "sample %u stack pid", i);
		CHECK(st->nr_kernel == s->nr_kernel, "sample %u nr_kernel", i);
		CHECK(st->nr_frames == s->nr_frames, "sample %u nr_frames %u want %u", i,
		      st->nr_frames, s->nr_frames);
		if (st->nr_frames == s->nr_frames)
			CHECK(memcmp(&c->frames[st->first], in[k].ips,
				     s->nr_frames * sizeof(uint64_t)) == 0,
			      "sample %u frames differ", i);

		/* Processes and threads as the tracker described them. */
		const struct fr_chunk_proc *p = fr_chunk_find_proc(c, s->pid);

		if (s->pid == 400) {
			CHECK(p == NULL, "unknown pid 400 has a process entry");
		} else if (!p) {
			CHECK(0, "pid %u has no process entry", s->pid);
		} else {
			char want[64];

			snprintf(want, sizeof(want), "comm-%u", s->pid);
			CHECK(p->pid == s->pid && p->uid == s->pid * 10, "proc ids");
			CHECK(strcmp(str(c, p->comm), want) == 0, "comm %s", str(c, p->comm));
			snprintf(want, sizeof(want), "/usr/bin/exe-%u", s->pid);
			CHECK(strcmp(str(c, p->exe), s->pid == 300 ? "" : want) == 0, "exe %s",
			      str(c, p->exe));
			CHECK(p->start_ns == (s->pid == 200 ? -5 : (int64_t)s->pid * 1000000007),
			      "start_ns");
			CHECK(p->build_id_len == (s->pid == 100 ? 20 : 0), "proc build id len");
			for (int q = 0; q < p->build_id_len; q++)
				CHECK(p->build_id[q] == (uint8_t)(s->pid + q), "proc build id");
		}
		const struct fr_chunk_thread *t = fr_chunk_find_thread(c, s->tid);

		if (s->tid % 7 == 3) {
			CHECK(t == NULL, "unknown tid has a thread entry");
		} else if (!t) {
			CHECK(0, "tid %u has no thread entry", s->tid);
		} else {
			char want[32];

			snprintf(want, sizeof(want), "thread-%u", s->tid);
			CHECK(t->tid == s->tid && t->pid == s->tid / 10 * 10, "thread ids");
			CHECK(strcmp(str(c, t->name), s->tid % 5 == 0 ? "worker" : want) == 0,
			      "thread name %s", str(c, t->name));
		}

		/* Every user frame resolves to the tracker's mapping. */
		for (unsigned f = s->nr_kernel; f < s->nr_frames; f++) {
			uint64_t addr = in[k].ips[f];
			const struct fake_map *fm = fake_find(s->pid, addr);
			const struct fr_chunk_map *m = fr_chunk_find_map(c, s->pid, addr);

			if (!fm) {
				CHECK(m == NULL, "unmapped %llx has a mapping",
				      (unsigned long long)addr);
				continue;
			}
			if (!m) {
				CHECK(0, "pid %u addr %llx: no mapping", s->pid,
				      (unsigned long long)addr);
				continue;
			}
			CHECK(m->start == fm->start && m->end == fm->end && m->pgoff == fm->pgoff,
			      "mapping bounds");
			CHECK(strcmp(str(c, m->path), fm->path) == 0, "mapping path");
			CHECK(m->build_id_len == fm->build_id_len, "mapping build id len");
			for (int b = 0; b < m->build_id_len; b++)
				CHECK(m->build_id[b] ==
					      (uint8_t)((size_t)(fm - fake_maps) * 16 + (size_t)b),
				      "mapping build id");
		}
		/* Kernel frames have no mapping. */
		for (unsigned f = 0; f < s->nr_kernel; f++)
			CHECK(fr_chunk_find_map(c, s->pid, in[k].ips[f]) == NULL,
			      "kernel frame mapped");
		if (failures > 20)
			break;
	}
	pairing_fini(&pr);
	if (n) {
		CHECK(c->hdr.first_ns == tmin, "first_ns is not the earliest sample");
		CHECK(c->hdr.last_ns == tmax, "last_ns is not the latest sample");
	}
	/* Tables sorted as documented. */
	for (uint32_t i = 1; i < c->nmaps; i++)
		CHECK(c->maps[i - 1].pid < c->maps[i].pid ||
			      (c->maps[i - 1].pid == c->maps[i].pid &&
			       c->maps[i - 1].end <= c->maps[i].start),
		      "maps not sorted");
	/* Only mappings some frame touches. */
	CHECK(c->nmaps <= NFAKE_MAPS, "%u maps", c->nmaps);
}

static int cmp_pa(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

static void test_round_trip(void)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(NSAMPLES, 4u << 20);
	struct stored *in = calloc(NSAMPLES, sizeof(*in));
	struct fr_chunk *c = NULL;
	void *buf = NULL;
	size_t len = 0;
	uint32_t distinct = 0;
	int ret;

	if (!b || !in) {
		CHECK(0, "setup");
		goto out;
	}
	CHECK(fr_chunk_builder_seal(b, &fake_ops, 0, &buf, &len) == -ENODATA,
	      "empty builder sealed");
	for (int i = 0; i < NSAMPLES; i++) {
		make_sample(&in[i], i, i ? &in[i - 1] : NULL);
		ret = fr_chunk_builder_add(b, &in[i].s);
		CHECK(ret == 0, "add %d: %d", i, ret);
		if (ret)
			goto out;
	}
	/* Distinct stacks of the input. */
	for (int i = 0; i < NSAMPLES; i++) {
		int seen = 0;

		for (int j = 0; j < i && !seen; j++)
			seen = in[j].s.pid == in[i].s.pid &&
			       in[j].s.nr_kernel == in[i].s.nr_kernel &&
			       in[j].s.nr_frames == in[i].s.nr_frames &&
			       memcmp(in[j].ips, in[i].ips, in[i].s.nr_frames * 8) == 0;
		distinct += !seen;
	}
	CHECK(fr_chunk_builder_samples(b) == NSAMPLES, "builder sample count");
	fr_chunk_builder_count(b, FR_EVENT_CPU, 3, 1, 7);
	fr_chunk_builder_count(b, FR_EVENT_OFFCPU, 0, 0, 2);
	fr_chunk_builder_count(b, FR_EVENT_CPU, 10, 0, 0);

	nmapping_calls = 0;
	ret = fr_chunk_builder_seal(b, &fake_ops, -123456789, &buf, &len);
	CHECK(ret == 0, "seal: %d", ret);
	if (ret)
		goto out;
	/* One lookup per mapping touched and per distinct unmapped address,
	 * not one per frame. */
	{
		struct pa {
			uint64_t pid, addr;
		} *un = malloc((size_t)NSAMPLES * FR_MAX_FRAMES * sizeof(*un));
		size_t nun = 0;
		int want = 0, touched[NFAKE_MAPS] = {0};

		for (int i = 0; un && i < NSAMPLES; i++) {
			const struct fr_sample *s = &in[i].s;

			for (unsigned k = s->nr_kernel; k < s->nr_frames; k++) {
				const struct fake_map *fm = fake_find(s->pid, in[i].ips[k]);

				if (fm)
					touched[fm - fake_maps] = 1;
				else
					un[nun++] = (struct pa){s->pid, in[i].ips[k]};
			}
		}
		qsort(un, nun, sizeof(*un), cmp_pa);
		for (size_t i = 0; i < nun; i++)
			want += i == 0 || un[i].pid != un[i - 1].pid || un[i].addr != un[i - 1].addr;
		for (size_t m = 0; m < NFAKE_MAPS; m++)
			want += touched[m];
		free(un);
		CHECK(nmapping_calls == want, "%d mapping lookups, want %d", nmapping_calls,
		      want);
	}
	CHECK(fr_chunk_builder_samples(b) == 0, "builder not reset after seal");
	CHECK(fr_chunk_verify(buf, len) == 0, "verify of a fresh chunk");
	CHECK(fr_chunk_verify(buf, len - 1) == -EBADMSG, "verify of a short chunk");

	fr_chunk_set_seq(buf, 77, 0);
	CHECK(fr_chunk_verify(buf, len) == 0, "verify after set_seq");
	ret = fr_chunk_decode(buf, len, &c);
	CHECK(ret == 0, "decode: %d", ret);
	if (ret)
		goto out;
	CHECK(c->hdr.seq == 77, "seq after set_seq");
	c->hdr.seq = 0;
	check_decoded(c, in, NSAMPLES, -123456789);
	CHECK(c->nstacks == distinct, "%u stacks, want %u distinct", c->nstacks, distinct);
	CHECK(c->nevents == 2, "%u event counters", c->nevents);
	for (uint32_t i = 0; i < c->nevents; i++) {
		const struct fr_chunk_event_stats *e = &c->events[i];

		if (e->event == FR_EVENT_CPU)
			CHECK(e->lost == 13 && e->throttled == 1 && e->truncated == 7,
			      "cpu counters");
		else
			CHECK(e->event == FR_EVENT_OFFCPU && e->lost == 0 && e->truncated == 2,
			      "offcpu counters");
	}
	printf("round trip: %d samples, %u stacks, %u maps, %u strings, raw %u -> %u bytes\n",
	       NSAMPLES, c->nstacks, c->nmaps, c->nstrings, c->hdr.raw_len, c->hdr.comp_len);

	/* A second chunk from the same builder is independent. */
	fr_chunk_free(c);
	c = NULL;
	free(buf);
	buf = NULL;
	for (int i = 0; i < 10; i++)
		CHECK(fr_chunk_builder_add(b, &in[i].s) == 0, "add after seal");
	CHECK(fr_chunk_builder_seal(b, NULL, 5, &buf, &len) == 0, "seal without ops");
	CHECK(fr_chunk_decode(buf, len, &c) == 0, "decode second chunk");
	if (c) {
		CHECK(c->nsamples == 10 && c->nprocs == 0 && c->nthreads == 0 && c->nmaps == 0,
		      "chunk without ops has no tables");
		CHECK(c->nevents == 0, "counters carried over to the next chunk");
		struct pairing pr;

		if (c->nsamples == 10 && pair_samples(c, in, 10, &pr) == 0) {
			for (uint32_t i = 0; i < 10; i++)
				CHECK(c->time_ns[pr.index[i]] == pr.in[i].s.time_ns &&
					      c->pid[pr.index[i]] == pr.in[i].s.pid,
				      "second chunk sample %u", i);
			pairing_fini(&pr);
		}
	}
out:
	fr_chunk_free(c);
	free(buf);
	free(in);
	fr_chunk_builder_free(b);
}

static void test_counters_only(void)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(16, 65536);
	struct fr_chunk *c = NULL;
	void *buf = NULL;
	size_t len;

	fr_chunk_builder_count(b, FR_EVENT_CYCLES, 5, 6, 7);
	CHECK(fr_chunk_builder_seal(b, &fake_ops, 0, &buf, &len) == 0, "counters-only seal");
	CHECK(buf && fr_chunk_decode(buf, len, &c) == 0, "counters-only decode");
	if (c) {
		CHECK(c->nsamples == 0 && c->nevents == 1 && c->events[0].lost == 5 &&
			      c->events[0].throttled == 6 && c->events[0].truncated == 7,
		      "counters-only content");
		CHECK(c->hdr.first_ns == c->hdr.last_ns && c->hdr.first_ns > 0,
		      "counters-only chunk has no time");
	}
	fr_chunk_free(c);
	free(buf);
	fr_chunk_builder_free(b);
}

/* ------------------------------------------------------------------ */
/* Encoding: streams shaped like the recorder's, and the extremes       */

static void check_invariants(const struct fr_chunk *c);

/* Every decoded sample equals one input sample, field by field and frame
 * by frame, whatever the order. */
static void check_samples(const struct fr_chunk *c, const struct stored *in, uint32_t n,
			  const char *what)
{
	struct pairing pr;
	int bad = 0;

	CHECK(c->nsamples == n, "%s: %u samples, want %u", what, c->nsamples, n);
	if (c->nsamples != n || pair_samples(c, in, n, &pr) < 0)
		return;
	for (uint32_t k = 0; k < n && bad < 5; k++) {
		uint32_t i = pr.index[k];
		struct stored d;

		memset(&d, 0, sizeof(d));
		d.s.time_ns = c->time_ns[i];
		d.s.cpu = c->cpu[i];
		d.s.tid = c->tid[i];
		d.s.pid = c->pid[i];
		d.s.event = c->event[i];
		d.s.weight = c->weight[i];
		d.s.rate_hz = c->rate_hz[i];
		d.s.nr_kernel = (uint16_t)c->stacks[c->stack[i]].nr_kernel;
		d.s.nr_frames = (uint16_t)c->stacks[c->stack[i]].nr_frames;
		memcpy(d.ips, &c->frames[c->stacks[c->stack[i]].first],
		       d.s.nr_frames * sizeof(uint64_t));
		if (cmp_stored(&d, &pr.in[k]) != 0 || c->stacks[c->stack[i]].pid != c->pid[i]) {
			CHECK(0, "%s: sample %u (time %lld cpu %u) differs", what, k,
			      (long long)pr.in[k].s.time_ns, pr.in[k].s.cpu);
			bad++;
		}
	}
	pairing_fini(&pr);
}

/* Seals `in` in one chunk, decodes and compares it. Returns the chunk's
 * size, or 0 on failure. */
static size_t round_trip(const struct stored *in, uint32_t n, const char *what,
			 uint32_t *raw_len)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(n, 8u << 20);
	struct fr_chunk *c = NULL;
	void *buf = NULL;
	size_t len = 0;
	int ret;

	for (uint32_t i = 0; b && i < n; i++) {
		ret = fr_chunk_builder_add(b, &in[i].s);
		if (ret) {
			CHECK(0, "%s: add %u: %d", what, i, ret);
			goto out;
		}
	}
	ret = b ? fr_chunk_builder_seal(b, NULL, 0, &buf, &len) : -ENOMEM;
	CHECK(ret == 0, "%s: seal: %d", what, ret);
	if (ret == 0) {
		ret = fr_chunk_decode(buf, len, &c);
		CHECK(ret == 0, "%s: decode: %d", what, ret);
	}
	if (c) {
		check_samples(c, in, n, what);
		check_invariants(c);
		if (raw_len)
			*raw_len = c->hdr.raw_len;
	}
out:
	fr_chunk_free(c);
	free(buf);
	fr_chunk_builder_free(b);
	return c ? len : 0;
}

static void test_encoding(void)
{
	enum { N = 4000 };
	struct stored *in = calloc(N, sizeof(*in));
	uint64_t tree[8][FR_MAX_FRAMES];
	uint32_t raw = 0;
	size_t len;

	if (!in) {
		CHECK(0, "setup");
		return;
	}

	/* Steady cpu-clock at 999 Hz on two CPUs, handed over CPU by CPU in
	 * batches as the recorder drains them: two threads, eight stacks
	 * sharing their roots, a few with kernel frames on top, jitter of a
	 * few microseconds and some idle gaps. */
	for (int k = 0; k < 8; k++)
		for (int f = 0; f < FR_MAX_FRAMES; f++)
			tree[k][f] = 0x555555554000ull + (uint64_t)(f * 0x40) + (f < 3 ? (uint64_t)k * 8 : 0);
	{
		int64_t t[2] = {BASE_NS, BASE_NS + 333333};
		uint32_t i = 0;

		while (i < N) {
			for (uint32_t cpu = 0; cpu < 2 && i < N; cpu++) {
				for (int k = 0; k < 50 && i < N; k++, i++) {
					struct fr_sample *s = &in[i].s;
					int st = (int)(rng() % 8);

					t[cpu] += 1001001 * (rng() % 50 ? 1 : 1 + (int64_t)(rng() % 30));
					s->time_ns = t[cpu] + (int64_t)(rng() % 6000) - 3000;
					s->cpu = cpu;
					s->pid = 100;
					s->tid = 100 + cpu;
					s->event = FR_EVENT_CPU;
					s->weight = 1001001;
					s->rate_hz = 999;
					s->nr_kernel = st < 2 ? 3 : 0;
					s->nr_frames = (uint16_t)(s->nr_kernel + 12);
					for (int f = 0; f < s->nr_kernel; f++)
						in[i].ips[f] = KERNEL_BASE + 0x100 * (uint64_t)f;
					memcpy(in[i].ips + s->nr_kernel, tree[st], 12 * sizeof(uint64_t));
					s->ips = in[i].ips;
				}
			}
		}
	}
	len = round_trip(in, N, "steady", &raw);
	printf("steady 999 Hz stream: %.2f bytes/sample stored, raw %.2f\n", (double)len / N,
	       (double)raw / N);
	/* Runs, the time grid and interned stacks keep a steady stream at a
	 * few bytes a sample: the jitter (about 13 bits) dominates. */
	CHECK(len > 0 && len < 4 * N, "steady stream: %zu bytes for %d samples", len, N);

	/* The extremes: any order, equal times, times before 1970, CPUs and
	 * ids up to 2^32 - 1, a tid below its pid, pid 0, rate 0 (no time
	 * grid), varying weights and rates, empty stacks. */
	for (uint32_t i = 0; i < N; i++) {
		struct fr_sample *s = &in[i].s;
		static const uint32_t cpus[] = {0, 1, 7, 4095, UINT32_MAX - 1, UINT32_MAX};
		static const uint32_t rates[] = {0, 1, 99, 999, 4999, UINT32_MAX};

		memset(&in[i], 0, sizeof(in[i]));
		s->time_ns = i % 10 == 0 ? in[i ? i - 1 : 0].s.time_ns
					 : -5000000000ll + (int64_t)(rng() % 10000000000ull);
		s->cpu = cpus[rng() % 6];
		s->pid = i % 3 == 0 ? 0 : (uint32_t)(rng() % 3 ? 1000 + rng() % 5 : UINT32_MAX);
		s->tid = rng() % 4 ? s->pid : (uint32_t)rng();
		s->event = (uint32_t)(rng() % 3);
		s->weight = rng() % 2 ? 1000000 : rng();
		s->rate_hz = rates[rng() % 6];
		s->nr_frames = (uint16_t)(rng() % 5);
		s->nr_kernel = (uint16_t)(s->nr_frames ? rng() % (s->nr_frames + 1u) : 0);
		for (int f = 0; f < s->nr_frames; f++)
			in[i].ips[f] = rng() % 2 ? rng() : KERNEL_BASE + rng() % 64;
		s->ips = in[i].ips;
	}
	round_trip(in, N, "extremes", NULL);

	/* Many stacks with common roots: front coding stores the shared root
	 * frames once. 4000 stacks 40 to 100 frames deep, all sharing their
	 * 36 root frames and branching below. */
	for (uint32_t i = 0; i < N; i++) {
		struct fr_sample *s = &in[i].s;
		unsigned depth = 40 + (unsigned)(rng() % 61);

		memset(&in[i], 0, sizeof(in[i]));
		s->time_ns = BASE_NS + (int64_t)i * 1000;
		s->cpu = i % 4;
		s->pid = 4242;
		s->tid = 4242 + i % 16;
		s->weight = 1;
		s->rate_hz = 999;
		s->nr_frames = (uint16_t)depth;
		for (unsigned p = 0; p < depth; p++) /* root first */
			in[i].ips[depth - 1 - p] =
				p < 36 ? 0x400000 + p * 0x100 : 0x400000 + (rng() % 0x100000);
		s->ips = in[i].ips;
	}
	len = round_trip(in, N, "shared roots", &raw);
	printf("shared roots: %.1f bytes/stack raw, %.1f stored\n", (double)raw / N,
	       (double)len / N);
	/* The 34 frames below the shared ones take about 3.1 bytes each (1 MiB
	 * apart) and the four columns 4 bytes, 110 in all; storing the 36 root
	 * frames in every stack would add 72 (2 bytes each). */
	CHECK(len > 0 && raw < N * 125, "shared roots: raw %u bytes", raw);
	free(in);
}

static void test_enospc(void)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(10, 1u << 20);
	struct stored st;
	void *buf = NULL;
	size_t len;
	int ret, added = 0;

	/* Sample count. */
	for (int i = 0; i < 10; i++) {
		make_sample(&st, i, NULL);
		CHECK(fr_chunk_builder_add(b, &st.s) == 0, "add %d of 10", i);
	}
	CHECK(fr_chunk_builder_add(b, &st.s) == -ENOSPC, "11th sample accepted");
	CHECK(fr_chunk_builder_samples(b) == 10, "rejected sample counted");
	CHECK(fr_chunk_builder_seal(b, NULL, 0, &buf, &len) == 0, "seal full builder");
	CHECK(fr_chunk_builder_add(b, &st.s) == 0, "add after seal");
	free(buf);
	fr_chunk_builder_free(b);

	/* Raw size budget: deep distinct stacks fill 4 KiB quickly; the first
	 * sample is accepted even when larger than the budget. */
	b = fr_chunk_builder_new(100000, 1000);
	memset(&st, 0, sizeof(st));
	st.s.ips = st.ips;
	st.s.pid = 100;
	st.s.nr_frames = FR_MAX_FRAMES;
	for (int k = 0; k < FR_MAX_FRAMES; k++)
		st.ips[k] = KERNEL_BASE + rng();
	CHECK(fr_chunk_builder_add(b, &st.s) == 0, "first oversized sample refused");
	st.ips[0]++;
	CHECK(fr_chunk_builder_add(b, &st.s) == -ENOSPC, "second oversized sample accepted");
	CHECK(fr_chunk_builder_seal(b, NULL, 0, &buf, &len) == 0, "seal oversized");
	free(buf);
	buf = NULL;
	fr_chunk_builder_free(b);
	b = fr_chunk_builder_new(100000, 4096);
	st.s.nr_frames = 4;
	for (;;) {
		st.ips[0] = rng();
		ret = fr_chunk_builder_add(b, &st.s);
		if (ret)
			break;
		added++;
	}
	CHECK(ret == -ENOSPC, "add returned %d", ret);
	CHECK(added > 20 && added < 400, "%d samples of 4-frame stacks in 4 KiB", added);
	CHECK(fr_chunk_builder_seal(b, NULL, 0, &buf, &len) == 0, "seal budget chunk");
	CHECK(len < 4096 + 64, "chunk of %zu bytes for a 4 KiB budget", len);
	free(buf);
	buf = NULL;
	/* The same stack repeated costs only its sample columns. */
	added = 0;
	while (fr_chunk_builder_add(b, &st.s) == 0)
		added++;
	CHECK(added > 300, "only %d samples of one repeated stack", added);
	fr_chunk_builder_free(b);

	/* Deeper than FR_MAX_FRAMES is cut to the leaf end. */
	b = fr_chunk_builder_new(4, 65536);
	{
		uint64_t deep[200];
		struct fr_sample s = {.pid = 1, .tid = 1, .nr_kernel = 3, .nr_frames = 200,
				      .ips = deep, .time_ns = 1};
		struct fr_chunk *c = NULL;

		for (int k = 0; k < 200; k++)
			deep[k] = 0x1000 + (uint64_t)k;
		CHECK(fr_chunk_builder_add(b, &s) == 0, "deep stack refused");
		CHECK(fr_chunk_builder_seal(b, NULL, 0, &buf, &len) == 0, "seal deep");
		CHECK(fr_chunk_decode(buf, len, &c) == 0, "decode deep");
		if (c)
			CHECK(c->stacks[0].nr_frames == FR_MAX_FRAMES &&
				      c->stacks[0].nr_kernel == 3 && c->frames[0] == 0x1000,
			      "deep stack not cut at the root end");
		fr_chunk_free(c);
		free(buf);
	}
	fr_chunk_builder_free(b);
}

/* ------------------------------------------------------------------ */
/* Corruption                                                           */

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void fix_header_crc(unsigned char *p)
{
	put_le32(p + 60, fr_crc32c(0, p, 60));
}

/* Wraps a raw block into a chunk with valid checksums, so the block
 * decoder itself is exercised. `tmpl` provides the other header fields. */
static unsigned char *wrap_block(const unsigned char *tmpl, const void *raw, size_t raw_len,
				 uint32_t nsamples, size_t *out_len)
{
	struct fr_zstd *z = fr_zstd_new(1);
	size_t cap = fr_zstd_bound(raw_len);
	unsigned char *p = malloc(64 + cap);
	ssize_t n;

	if (!z || !p) {
		fr_zstd_free(z);
		free(p);
		return NULL;
	}
	n = fr_zstd_compress(z, p + 64, cap, raw, raw_len);
	fr_zstd_free(z);
	if (n < 0) {
		free(p);
		return NULL;
	}
	memcpy(p, tmpl, 64);
	put_le32(p + 32, nsamples);
	put_le32(p + 36, (uint32_t)raw_len);
	put_le32(p + 40, (uint32_t)n);
	put_le32(p + 56, fr_crc32c(0, p + 64, (size_t)n));
	fix_header_crc(p);
	*out_len = 64 + (size_t)n;
	return p;
}

/* Invariants a successfully decoded chunk must hold. */
static void check_invariants(const struct fr_chunk *c)
{
	for (uint32_t i = 0; i < c->nsamples; i++) {
		CHECK(c->stack[i] < c->nstacks && c->labelset[i] < c->nlabelsets,
		      "decoded sample ids out of range");
		CHECK(c->time_ns[i] >= c->hdr.first_ns && c->time_ns[i] <= c->hdr.last_ns,
		      "decoded time outside the header span");
	}
	for (uint32_t i = 0; i < c->nstacks; i++)
		CHECK(c->stacks[i].nr_kernel <= c->stacks[i].nr_frames &&
			      c->stacks[i].nr_frames <= FR_MAX_FRAMES,
		      "decoded stack shape");
	for (uint32_t i = 0; i < c->nstrings; i++)
		CHECK(strlen(c->strings[i]) <= FR_CHUNK_STRING_MAX, "string length");
	for (uint32_t i = 0; i < c->nprocs; i++)
		CHECK(c->procs[i].comm < c->nstrings && c->procs[i].exe < c->nstrings &&
			      c->procs[i].build_id_len <= FR_BUILD_ID_MAX,
		      "decoded proc ids");
	for (uint32_t i = 0; i < c->nmaps; i++)
		CHECK(c->maps[i].path < c->nstrings && c->maps[i].start < c->maps[i].end,
		      "decoded map");
	for (uint32_t i = 0; i < c->nlabelsets; i++)
		for (uint32_t k = 0; k < c->labelsets[i].npairs; k++)
			CHECK(c->label_keys[c->labelsets[i].first + k] < c->nstrings &&
				      c->label_values[c->labelsets[i].first + k] < c->nstrings,
			      "decoded label ids");
}

static void test_corruption(void)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(200, 1u << 20);
	struct stored st, prev;
	unsigned char *buf = NULL, *raw = NULL, *mut = NULL;
	struct fr_chunk *c;
	size_t len;
	int ret;

	for (int i = 0; i < 200; i++) {
		make_sample(&st, i, i ? &prev : NULL);
		fr_chunk_builder_add(b, &st.s);
		prev = st;
	}
	fr_chunk_builder_count(b, 0, 1, 2, 3);
	if (fr_chunk_builder_seal(b, &fake_ops, 0, (void **)&buf, &len) < 0) {
		CHECK(0, "seal");
		goto out;
	}

	/* Every bit of the header and a spread of payload bits. */
	for (size_t bit = 0; bit < len * 8; bit += bit < 64 * 8 ? 1 : 13) {
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		c = NULL;
		ret = fr_chunk_decode(buf, len, &c);
		CHECK(ret == -EBADMSG, "flipped bit %zu: decode returned %d", bit, ret);
		CHECK(fr_chunk_verify(buf, len) == -EBADMSG, "flipped bit %zu verified", bit);
		fr_chunk_free(c);
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		if (failures > 20)
			goto out;
	}
	/* Truncated or extended. */
	for (size_t l = 0; l < len; l += 1 + l / 4) {
		c = NULL;
		CHECK(fr_chunk_decode(buf, l, &c) == -EBADMSG, "truncated to %zu decoded", l);
	}
	c = NULL;
	mut = malloc(len + 8);
	memcpy(mut, buf, len);
	memset(mut + len, 0, 8);
	CHECK(fr_chunk_decode(mut, len + 8, &c) == -EBADMSG, "extended chunk decoded");
	free(mut);
	mut = NULL;

	/* Valid headers of other versions: the first format, and a later one. */
	for (unsigned char version = 1; version <= 3; version += 2) {
		unsigned char h[64];
		struct fr_chunk_header hdr;

		memcpy(h, buf, 64);
		h[4] = version;
		fix_header_crc(h);
		CHECK(fr_chunk_header_parse(h, 64, &hdr) == -EPROTONOSUPPORT,
		      "version %u header not reported as unsupported", version);
		mut = malloc(len);
		memcpy(mut, buf, len);
		memcpy(mut, h, 64);
		c = NULL;
		CHECK(fr_chunk_decode(mut, len, &c) == -EPROTONOSUPPORT,
		      "version %u chunk not refused as unsupported", version);
		free(mut);
		mut = NULL;
	}

	/* Mutated blocks with valid checksums: decode fails cleanly or
	 * yields a consistent chunk. */
	uint32_t raw_len = get_le32(buf + 36);

	raw = malloc(raw_len + 64);
	mut = malloc(raw_len + 64);
	if (!raw || !mut ||
	    fr_zstd_decompress(raw, raw_len, buf + 64, get_le32(buf + 40)) != (ssize_t)raw_len) {
		CHECK(0, "decompress for mutation");
		goto out;
	}
	{
		size_t l;
		unsigned char *w = wrap_block(buf, raw, raw_len, 200, &l);

		c = NULL;
		CHECK(w && fr_chunk_decode(w, l, &c) == 0, "re-wrapped block does not decode");
		fr_chunk_free(c);
		free(w);
	}
	int ok = 0, bad = 0;

	for (int iter = 0; iter < 4000; iter++) {
		size_t mlen = raw_len, l;
		unsigned char *w;
		uint32_t ns = 200;

		memcpy(mut, raw, raw_len);
		switch (iter % 5) {
		case 0: /* one random byte */
			mut[rng() % mlen] = (unsigned char)rng();
			break;
		case 1: /* a few bit flips */
			for (int k = 0; k < 3; k++)
				mut[rng() % mlen] ^= (unsigned char)(1u << (rng() % 8));
			break;
		case 2: /* truncate */
			mlen = 1 + rng() % mlen;
			break;
		case 3: /* a huge varint somewhere */
			{
				size_t at = rng() % (mlen > 10 ? mlen - 10 : 1);

				for (int k = 0; k < 10 && at + (size_t)k < mlen; k++)
					mut[at + (size_t)k] = k == 9 ? (unsigned char)(rng() & 0x7f) : 0xff;
			}
			break;
		default: /* wrong sample count in the header */
			ns = (uint32_t)(rng() % 400);
			mut[rng() % mlen] = (unsigned char)rng();
			break;
		}
		w = wrap_block(buf, mut, mlen, ns, &l);
		if (!w)
			continue;
		c = NULL;
		ret = fr_chunk_decode(w, l, &c);
		CHECK(ret == 0 || ret == -EBADMSG, "mutated block: decode returned %d", ret);
		if (ret == 0) {
			check_invariants(c);
			ok++;
		} else {
			bad++;
		}
		fr_chunk_free(c);
		free(w);
		if (failures > 20)
			break;
	}
	printf("mutated blocks: %d decoded consistently, %d rejected\n", ok, bad);
	CHECK(bad > 1000, "only %d mutated blocks rejected", bad);

	/* Random garbage, some with a valid-looking header. */
	for (int iter = 0; iter < 2000; iter++) {
		size_t l = rng() % 2000;
		unsigned char *g = malloc(l + 1);

		for (size_t i = 0; i < l; i++)
			g[i] = (unsigned char)rng();
		if (iter % 2 && l >= 64) {
			memcpy(g, buf, 16);
			put_le32(g + 40, (uint32_t)(l - 64));
			put_le32(g + 56, fr_crc32c(0, g + 64, l - 64));
			fix_header_crc(g);
		}
		c = NULL;
		ret = fr_chunk_decode(g, l, &c);
		CHECK(ret == -EBADMSG, "garbage of %zu bytes: decode returned %d", l, ret);
		fr_chunk_free(c);
		free(g);
	}
out:
	free(raw);
	free(mut);
	free(buf);
	fr_chunk_builder_free(b);
}

/* ------------------------------------------------------------------ */
/* Hand-made blocks: label sets and table checks the builder never makes */

struct blk {
	unsigned char p[512];
	size_t n;
};

static void bv(struct blk *b, uint64_t v)
{
	while (v >= 0x80) {
		b->p[b->n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b->p[b->n++] = (unsigned char)v;
}

static void bs(struct blk *b, const char *s)
{
	bv(b, strlen(s));
	memcpy(b->p + b->n, s, strlen(s));
	b->n += strlen(s);
}

enum variant {
	V_GOOD,
	V_BAD_LABELSET_ID,
	V_BAD_LABEL_STRING,
	V_PROC_INDEX,
	V_MAP_WRAP,
	V_KERNEL_GT_FRAMES,
	V_TRAILING,
	V_NONEMPTY_STRING0,
	V_TIME_OUTSIDE,
	V_BIG_BUILD_ID,
	V_BUILD_ID_REF,
	V_PID_OVERFLOW,
	V_SHARED_TOO_MANY,
	V_STACK_ID,
	V_RUNS_SHORT,
	V_RUNS_LONG,
	V_CPU_OVERFLOW,
};

static void bz(struct blk *b, int64_t v)
{
	bv(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* A version 2 block of three samples: pids {1, 2}; two stacks sharing
 * their two root frames; cpu 0 on a 4 ns grid and cpu 1 without one. */
static void make_block(struct blk *b, enum variant v)
{
	b->n = 0;
	bv(b, 4); /* strings */
	bs(b, v == V_NONEMPTY_STRING0 ? "x" : "");
	bs(b, "k");
	bs(b, "v");
	bs(b, "/bin/x");
	bv(b, 1); /* build ids */
	bv(b, v == V_BIG_BUILD_ID ? 21 : 4);
	for (int i = 0; i < (v == V_BIG_BUILD_ID ? 21 : 4); i++)
		b->p[b->n++] = (unsigned char)(0xa0 + i);
	bv(b, 2); /* pids: 1, 2 */
	bv(b, 1); bv(b, 0);
	bv(b, 2); /* procs: index gap, uid, comm, exe, start, build id */
	bv(b, 0); bv(b, 0); bv(b, 1); bv(b, 3); bz(b, -7); bv(b, v == V_BUILD_ID_REF ? 2 : 1);
	bv(b, v == V_PROC_INDEX ? 1 : 0); bv(b, 0); bv(b, 1); bv(b, 3); bv(b, 0); bv(b, 0);
	bv(b, 1); /* threads: tid gap, pid - tid, name */
	bv(b, 1); bz(b, 0); bv(b, 2);
	bv(b, 2); /* maps: pid index delta, start (gap), len, pgoff, path, build id */
	bv(b, 0); bv(b, 0x1000); bv(b, 0x1000); bv(b, 0); bv(b, 3); bv(b, 0);
	bv(b, 0); bv(b, 0);
	if (v == V_MAP_WRAP)
		bv(b, UINT64_MAX - 0x1000);
	else
		bv(b, 0x1000);
	bv(b, 0x10); bv(b, 3); bv(b, 1);
	bv(b, 2); /* stacks: pid index, nr_kernel, nr_frames, shared columns */
	bv(b, 0); bv(b, 1);
	bv(b, v == V_KERNEL_GT_FRAMES ? 3 : 0); bv(b, 0);
	bv(b, 2); bv(b, 3);
	bv(b, 0); bv(b, v == V_SHARED_TOO_MANY ? 3 : 2);
	/* Frames root first: 0x11f0 (from 0), 0x1100 (from its caller); then
	 * 0x1180 (from its caller 0x1100). */
	bz(b, 0x11f0); bz(b, -0xf0);
	bz(b, 0x80);
	bv(b, 2); /* labelsets */
	bv(b, 1); bv(b, 1); bv(b, v == V_BAD_LABEL_STRING ? 4 : 2);
	bv(b, 2); bv(b, 2); bv(b, 1); bv(b, 1); bv(b, 1);
	bv(b, 0); /* events */
	bv(b, 3); /* samples */
	bv(b, 2); /* cpu runs: cpu gap, length, period, first time */
	bv(b, v == V_CPU_OVERFLOW ? UINT32_MAX : 0); bv(b, 2); bv(b, 4); bv(b, 0);
	bv(b, 0); bv(b, 1); bv(b, 0); bv(b, 5);
	bv(b, 2); /* periods: 1000 + 2 x 4 */
	bz(b, v == V_TIME_OUTSIDE ? 3 : 2); /* jitter: 1010 */
	bz(b, 0); bz(b, v == V_STACK_ID ? 2 : 1); bz(b, -1); /* stacks 0, 1, 0 */
	bz(b, 0); /* tids: pid - tid */
	if (v == V_PID_OVERFLOW)
		bz(b, 1ll << 33);
	else
		bz(b, 0);
	bz(b, 0);
	bv(b, 1); bv(b, 0); bv(b, 3); /* event runs */
	bv(b, 2); bv(b, 5); bv(b, 1); bv(b, 6); bv(b, v == V_RUNS_SHORT ? 1 : v == V_RUNS_LONG ? 3 : 2);
	bv(b, 1); bv(b, 99); bv(b, 3); /* rate */
	bv(b, 2); bv(b, 1); bv(b, 1); bv(b, v == V_BAD_LABELSET_ID ? 3 : 2); bv(b, 2);
	if (v == V_TRAILING)
		bv(b, 0);
}

static void test_handmade(void)
{
	unsigned char tmpl[64] = {0};
	struct blk blk;
	struct fr_chunk *c = NULL;
	unsigned char *w;
	size_t l;

	put_le32(tmpl, FR_CHUNK_MAGIC);
	tmpl[4] = FR_CHUNK_VERSION;
	tmpl[6] = 64;
	/* first_ns 1000, last_ns 1010 */
	tmpl[16] = 0xe8;
	tmpl[17] = 0x03;
	tmpl[24] = 0xf2;
	tmpl[25] = 0x03;

	make_block(&blk, V_GOOD);
	w = wrap_block(tmpl, blk.p, blk.n, 3, &l);
	CHECK(w && fr_chunk_decode(w, l, &c) == 0, "hand-made block does not decode");
	free(w);
	if (c) {
		static const int64_t times[] = {1000, 1010, 1005};
		static const uint32_t cpus[] = {0, 0, 1}, stacks[] = {0, 1, 0}, pids[] = {1, 2, 1};
		static const uint64_t weights[] = {5, 6, 6};

		CHECK(c->nlabelsets == 3, "%u label sets", c->nlabelsets);
		CHECK(c->labelsets[1].npairs == 1 &&
			      strcmp(c->strings[c->label_keys[c->labelsets[1].first]], "k") == 0 &&
			      strcmp(c->strings[c->label_values[c->labelsets[1].first]], "v") == 0,
		      "label set 1");
		CHECK(c->labelsets[2].npairs == 2 &&
			      strcmp(c->strings[c->label_values[c->labelsets[2].first + 1]], "k") == 0,
		      "label set 2");
		CHECK(c->nsamples == 3, "%u samples", c->nsamples);
		for (uint32_t i = 0; i < 3 && i < c->nsamples; i++) {
			CHECK(c->time_ns[i] == times[i], "sample %u time %lld", i,
			      (long long)c->time_ns[i]);
			CHECK(c->cpu[i] == cpus[i] && c->stack[i] == stacks[i] &&
				      c->pid[i] == pids[i] && c->tid[i] == pids[i],
			      "sample %u ids", i);
			CHECK(c->weight[i] == weights[i] && c->rate_hz[i] == 99 && c->event[i] == 0,
			      "sample %u runs", i);
			CHECK(c->labelset[i] == (i ? 2u : 1u), "sample %u label set", i);
		}
		CHECK(c->nstacks == 2 && c->stacks[0].nr_frames == 2 && c->stacks[1].nr_frames == 3 &&
			      c->stacks[0].pid == 1 && c->stacks[1].pid == 2,
		      "stack shapes");
		if (c->nstacks == 2) {
			const uint64_t *f0 = &c->frames[c->stacks[0].first];
			const uint64_t *f1 = &c->frames[c->stacks[1].first];

			CHECK(f0[0] == 0x1100 && f0[1] == 0x11f0, "frames of stack 0");
			CHECK(f1[0] == 0x1180 && f1[1] == 0x1100 && f1[2] == 0x11f0,
			      "frames of stack 1 (shared root)");
		}
		CHECK(c->nprocs == 2 && c->procs[0].pid == 1 && c->procs[0].start_ns == 993 &&
			      c->procs[0].build_id_len == 4 && c->procs[0].build_id[3] == 0xa3 &&
			      c->procs[1].build_id_len == 0,
		      "procs");
		CHECK(c->nthreads == 1 && c->threads[0].tid == 1 && c->threads[0].pid == 1 &&
			      strcmp(c->strings[c->threads[0].name], "v") == 0,
		      "thread");
		CHECK(c->nmaps == 2 && c->maps[1].start == 0x2000 && c->maps[1].pgoff == 0x10 &&
			      c->maps[1].build_id_len == 4 && c->maps[0].build_id_len == 0,
		      "maps");
		CHECK(fr_chunk_find_map(c, 1, 0x1100) == &c->maps[0], "find map 0");
		CHECK(fr_chunk_find_map(c, 1, 0x2fff) == &c->maps[1], "find map 1 end");
		CHECK(fr_chunk_find_map(c, 1, 0x3000) == NULL, "find past map 1");
		CHECK(fr_chunk_find_map(c, 1, 0xfff) == NULL, "find before map 0");
		CHECK(fr_chunk_find_map(c, 2, 0x1100) == NULL, "find other pid");
		CHECK(fr_chunk_find_proc(c, 2) == &c->procs[1], "find proc 2");
		CHECK(fr_chunk_find_proc(c, 3) == NULL, "find proc 3");
		CHECK(fr_chunk_find_thread(c, 1) == &c->threads[0], "find thread");
		fr_chunk_free(c);
		c = NULL;
	}
	/* The smallest block: "" and eight empty tables. */
	{
		static const unsigned char minimal[16] = {1, 0};

		w = wrap_block(tmpl, minimal, sizeof(minimal), 0, &l);
		CHECK(w && fr_chunk_decode(w, l, &c) == 0, "minimal block does not decode");
		if (c)
			CHECK(c->nstrings == 1 && c->nsamples == 0 && c->nlabelsets == 1 &&
				      fr_chunk_find_map(c, 1, 1) == NULL &&
				      fr_chunk_find_proc(c, 1) == NULL &&
				      fr_chunk_find_thread(c, 1) == NULL,
			      "minimal block content");
		free(w);
		fr_chunk_free(c);
		c = NULL;
		w = wrap_block(tmpl, minimal, 15, 0, &l);
		CHECK(w && fr_chunk_decode(w, l, &c) == -EBADMSG, "15-byte block decoded");
		free(w);
		fr_chunk_free(c);
		c = NULL;
	}
	for (int v = V_BAD_LABELSET_ID; v <= V_CPU_OVERFLOW; v++) {
		make_block(&blk, (enum variant)v);
		w = wrap_block(tmpl, blk.p, blk.n, 3, &l);
		CHECK(w && fr_chunk_decode(w, l, &c) == -EBADMSG, "variant %d decoded", v);
		free(w);
		fr_chunk_free(c);
		c = NULL;
	}
	fr_chunk_free(NULL);
	fr_chunk_builder_free(NULL);
}

/* ------------------------------------------------------------------ */
/* Label sets: the cgroup of each process                               */

/* pid 1..6: two processes share a cgroup, one has its own, one is in the
 * root cgroup, one has "" and one NULL (unknown); pid 7 is not known at
 * all. */
static const char *cgroup_of(uint32_t pid)
{
	switch (pid) {
	case 1:
	case 3:
		return "/system.slice/nginx.service";
	case 2:
		return "/user.slice/user-1000.slice/session-2.scope";
	case 4:
		return "/";
	case 5:
		return "";
	default:
		return NULL;
	}
}

static int cgroup_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	(void)arg;
	if (pid == 0 || pid > 6)
		return -ENOENT;
	out->pid = pid;
	out->comm = "c";
	out->cgroup = cgroup_of(pid);
	return 0;
}

/* The cgroup label of decoded sample i, NULL when its set is empty. */
static const char *sample_cgroup(const struct fr_chunk *c, uint32_t i, int *bad)
{
	const struct fr_chunk_labelset *ls;

	if (c->labelset[i] >= c->nlabelsets) {
		*bad = 1;
		return NULL;
	}
	ls = &c->labelsets[c->labelset[i]];
	if (ls->npairs == 0)
		return NULL;
	if (ls->npairs != 1 || strcmp(str(c, c->label_keys[ls->first]), "cgroup") != 0) {
		*bad = 1;
		return NULL;
	}
	return str(c, c->label_values[ls->first]);
}

static void test_cgroup_labels(void)
{
	const struct fr_chunk_meta_ops ops = {.proc = cgroup_proc};
	struct fr_chunk_builder *b = fr_chunk_builder_new(256, 65536);
	struct fr_chunk *c = NULL;
	uint64_t ips[2] = {0x401000, 0x402000};
	void *buf = NULL;
	size_t len = 0;
	int bad = 0, seen[8] = {0};

	if (!b) {
		CHECK(0, "setup");
		return;
	}
	/* Samples of pids 1..7 on two stacks each, interleaved across cpus. */
	for (int i = 0; i < 70; i++) {
		struct fr_sample s = {
			.time_ns = BASE_NS + i * 1000, .pid = 1 + (uint32_t)i % 7,
			.tid = 100 + (uint32_t)i % 7, .cpu = (uint32_t)i % 3, .weight = 1,
			.rate_hz = 99, .nr_frames = (uint16_t)(1 + i % 2), .ips = ips,
		};
		CHECK(fr_chunk_builder_add(b, &s) == 0, "add %d", i);
	}
	CHECK(fr_chunk_builder_seal(b, &ops, 0, &buf, &len) == 0, "seal with cgroups");
	CHECK(buf && fr_chunk_decode(buf, len, &c) == 0, "decode with cgroups");
	if (!c)
		goto out;
	/* One set per distinct path (three), plus the empty set 0. */
	CHECK(c->nlabelsets == 4, "%u label sets, want 4", c->nlabelsets);
	CHECK(c->labelsets[0].npairs == 0, "label set 0 is not empty");
	CHECK(c->nsamples == 70, "%u samples", c->nsamples);
	for (uint32_t i = 0; i < c->nsamples; i++) {
		const char *want = cgroup_of(c->pid[i]), *got = sample_cgroup(c, i, &bad);

		if (want && !*want)
			want = NULL;
		CHECK(bad == 0, "sample %u: label set %u is not {cgroup: path}", i, c->labelset[i]);
		CHECK(want ? got && strcmp(got, want) == 0 : got == NULL,
		      "sample %u of pid %u: cgroup \"%s\", want \"%s\"", i, c->pid[i],
		      got ? got : "(none)", want ? want : "(none)");
		seen[c->pid[i]]++;
		bad = 0;
	}
	for (int pid = 1; pid <= 7; pid++)
		CHECK(seen[pid] == 10, "pid %d has %d samples, want 10", pid, seen[pid]);
	/* Processes of one cgroup share its set. */
	for (uint32_t i = 0; i < c->nsamples; i++)
		for (uint32_t j = 0; j < c->nsamples; j++)
			if (c->pid[i] == 1 && c->pid[j] == 3)
				CHECK(c->labelset[i] == c->labelset[j], "pids 1 and 3 differ in set");
	fr_chunk_free(c);
	c = NULL;
	free(buf);
	buf = NULL;

	/* The next chunk of the same builder, sealed without cgroups (as a
	 * tracker that does not know them, or an older recorder, writes):
	 * no label sets, every sample in set 0. */
	for (int i = 0; i < 5; i++) {
		struct fr_sample s = {
			.time_ns = BASE_NS + i, .pid = 1, .tid = 1, .weight = 1, .rate_hz = 99,
			.nr_frames = 1, .ips = ips,
		};
		CHECK(fr_chunk_builder_add(b, &s) == 0, "add %d", i);
	}
	CHECK(fr_chunk_builder_seal(b, &fake_ops, 0, &buf, &len) == 0, "seal without cgroups");
	CHECK(buf && fr_chunk_decode(buf, len, &c) == 0, "decode without cgroups");
	if (c) {
		CHECK(c->hdr.version == 2, "format version %u, want 2", c->hdr.version);
		CHECK(c->nlabelsets == 1, "%u label sets without cgroups", c->nlabelsets);
		for (uint32_t i = 0; i < c->nsamples; i++)
			CHECK(c->labelset[i] == 0, "sample %u in label set %u", i, c->labelset[i]);
	}
out:
	fr_chunk_free(c);
	free(buf);
	fr_chunk_builder_free(b);
}

/* ------------------------------------------------------------------ */
/* Label sets: the parent of each process, and of its ancestors          */

#define NPP 2100
static struct {
	int known;
	const char *cgroup;
	uint32_t ppid;
} pp[NPP];
static int pp_calls[NPP];

static void pp_set(uint32_t pid, const char *cgroup, uint32_t ppid)
{
	pp[pid].known = 1;
	pp[pid].cgroup = cgroup;
	pp[pid].ppid = ppid;
}

static int ppid_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	(void)arg;
	if (pid < NPP)
		pp_calls[pid]++;
	if (pid >= NPP || !pp[pid].known)
		return -ENOENT;
	out->pid = pid;
	out->comm = "p";
	out->cgroup = pp[pid].cgroup;
	out->ppid = pp[pid].ppid;
	return 0;
}

/* The value of `key` in label set `ls`, or NULL. */
static const char *label_of(const struct fr_chunk *c, uint32_t ls, const char *key)
{
	const struct fr_chunk_labelset *l = &c->labelsets[ls];

	for (uint32_t k = 0; k < l->npairs; k++)
		if (strcmp(str(c, c->label_keys[l->first + k]), key) == 0)
			return str(c, c->label_values[l->first + k]);
	return NULL;
}

/* Label sets no sample refers to, each {"pid": N, "ppid": M}: how many,
 * and the parent they give `pid` in *ppid (0: none). */
static uint32_t ancestor_sets(const struct fr_chunk *c, uint32_t pid, uint32_t *ppid)
{
	uint32_t n = 0;
	char want[16];

	snprintf(want, sizeof(want), "%u", pid);
	*ppid = 0;
	for (uint32_t k = 1; k < c->nlabelsets; k++) {
		const char *p = label_of(c, k, "pid"), *parent = label_of(c, k, "ppid");
		int used = 0;

		for (uint32_t i = 0; i < c->nsamples && !used; i++)
			used = c->labelset[i] == k;
		if (!p)
			continue;
		n++;
		CHECK(!used, "label set %u with a pid is a sample's", k);
		CHECK(c->labelsets[k].npairs == 2 && parent,
		      "ancestor set %u: %u pairs, ppid %s", k, c->labelsets[k].npairs,
		      parent ? parent : "(none)");
		if (parent && strcmp(p, want) == 0) {
			CHECK(*ppid == 0, "two ancestor sets for pid %u", pid);
			*ppid = (uint32_t)strtoul(parent, NULL, 10);
		}
	}
	return n;
}

static int seal_pids(struct fr_chunk_builder *b, const uint32_t *pids, size_t n,
		     struct fr_chunk **c)
{
	const struct fr_chunk_meta_ops ops = {.proc = ppid_proc};
	uint64_t ips[1] = {0x401000};
	void *buf = NULL;
	size_t len = 0;
	int ret;

	/* Three samples of each pid, interleaved across cpus. */
	for (size_t i = 0; i < 3 * n; i++) {
		struct fr_sample s = {
			.time_ns = BASE_NS + (int64_t)i * 1000, .pid = pids[i % n],
			.tid = pids[i % n], .cpu = (uint32_t)i % 2, .weight = 1,
			.rate_hz = 99, .nr_frames = 1, .ips = ips,
		};
		CHECK(fr_chunk_builder_add(b, &s) == 0, "add %zu", i);
	}
	memset(pp_calls, 0, sizeof(pp_calls));
	ret = fr_chunk_builder_seal(b, &ops, 0, &buf, &len);
	CHECK(ret == 0, "seal with parents: %d", ret);
	if (ret == 0) {
		ret = fr_chunk_decode(buf, len, c);
		CHECK(ret == 0, "decode with parents: %d", ret);
	}
	free(buf);
	return ret;
}

static void test_ppid_labels(void)
{
	static const char *A = "/system.slice/a.service", *B = "/system.slice/b.service";
	static const uint32_t pids[] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22};
	static const struct {
		uint32_t pid;
		const char *cgroup;
		uint32_t ppid;
	} want[] = {
		{10, "/system.slice/a.service", 1}, {11, "/system.slice/a.service", 10},
		{12, "/system.slice/a.service", 10}, {13, "/system.slice/b.service", 10},
		{14, NULL, 50}, {15, "/system.slice/a.service", 0}, {16, NULL, 60},
		{17, NULL, 17}, {18, NULL, 70}, {19, NULL, 0}, {20, NULL, UINT32_MAX},
		{21, NULL, 80}, {22, NULL, 80},
	};
	/* Ancestors without samples, and the parent each set must give. */
	static const uint32_t anc[][2] = {{50, 51}, {51, 10}, {60, 61}, {61, 60}, {70, 70}};
	struct fr_chunk_builder *b = fr_chunk_builder_new(1024, 1 << 20);
	struct fr_chunk *c = NULL;
	uint32_t got, n;

	if (!b) {
		CHECK(0, "setup");
		return;
	}
	memset(pp, 0, sizeof(pp));
	pp_set(1, "/init.scope", 0);
	pp_set(10, A, 1);
	pp_set(11, A, 10);
	pp_set(12, A, 10);
	pp_set(13, B, 10);
	pp_set(14, NULL, 50);
	pp_set(50, A, 51); /* a shell between 10 and 14, never sampled */
	pp_set(51, NULL, 10);
	pp_set(15, A, 0);
	pp_set(16, "", 60);
	pp_set(60, NULL, 61); /* a cycle above 16 */
	pp_set(61, NULL, 60);
	pp_set(17, NULL, 17); /* its own parent */
	pp_set(18, NULL, 70);
	pp_set(70, NULL, 70); /* an ancestor that is its own parent */
	/* 19 is unknown */
	pp_set(20, NULL, UINT32_MAX);
	pp_set(21, NULL, 80); /* 80 is unknown: asked once, not recorded */
	pp_set(22, NULL, 80);

	if (seal_pids(b, pids, sizeof(pids) / sizeof(pids[0]), &c) < 0)
		goto out;
	for (uint32_t i = 0; i < c->nsamples; i++) {
		const char *cg = label_of(c, c->labelset[i], "cgroup");
		const char *ppid = label_of(c, c->labelset[i], "ppid");
		char num[16];
		size_t k = 0;

		while (k < sizeof(want) / sizeof(want[0]) && want[k].pid != c->pid[i])
			k++;
		CHECK(k < sizeof(want) / sizeof(want[0]), "sample %u of pid %u", i, c->pid[i]);
		if (k == sizeof(want) / sizeof(want[0]))
			continue;
		snprintf(num, sizeof(num), "%u", want[k].ppid);
		CHECK(want[k].cgroup ? cg && strcmp(cg, want[k].cgroup) == 0 : !cg,
		      "pid %u: cgroup %s", c->pid[i], cg ? cg : "(none)");
		CHECK(want[k].ppid ? ppid && strcmp(ppid, num) == 0 : !ppid,
		      "pid %u: ppid %s, want %s", c->pid[i], ppid ? ppid : "(none)",
		      want[k].ppid ? num : "(none)");
		CHECK(!label_of(c, c->labelset[i], "pid"), "pid %u: a sample with a pid label",
		      c->pid[i]);
		CHECK(c->labelsets[c->labelset[i]].npairs == (uint32_t)((cg != NULL) + (ppid != NULL)),
		      "pid %u: %u pairs", c->pid[i], c->labelsets[c->labelset[i]].npairs);
	}
	/* One set per distinct (cgroup, ppid): 11 and 12 share one, 13 (same
	 * parent, another cgroup) has its own. */
	for (uint32_t i = 0; i < c->nsamples; i++) {
		for (uint32_t j = 0; j < c->nsamples; j++) {
			if (c->pid[i] == 11 && c->pid[j] == 12)
				CHECK(c->labelset[i] == c->labelset[j], "11 and 12 in two sets");
			if (c->pid[i] == 11 && c->pid[j] == 13)
				CHECK(c->labelset[i] != c->labelset[j], "11 and 13 in one set");
		}
	}
	n = ancestor_sets(c, 0, &got);
	CHECK(n == sizeof(anc) / sizeof(anc[0]), "%u ancestor sets, want %zu", n,
	      sizeof(anc) / sizeof(anc[0]));
	for (size_t k = 0; k < sizeof(anc) / sizeof(anc[0]); k++) {
		ancestor_sets(c, anc[k][0], &got);
		CHECK(got == anc[k][1], "ancestor %u: ppid %u, want %u", anc[k][0], got, anc[k][1]);
	}
	/* Sampled processes are not ancestor sets; pid 1 has no parent. */
	for (uint32_t pid = 1; pid < 23; pid++) {
		ancestor_sets(c, pid, &got);
		CHECK(got == 0, "pid %u has an ancestor set (ppid %u)", pid, got);
	}
	/* The empty set, 10 sets of the 13 processes (11 and 12 share one,
	 * 21 and 22 another, 19 has none) and the 5 ancestors'. */
	CHECK(c->nlabelsets == 1 + 10 + 5, "%u label sets, want 16", c->nlabelsets);
	CHECK(pp_calls[80] == 1 && pp_calls[50] == 1 && pp_calls[10] == 1,
	      "the unknown parent asked %d times, 50 %d, 10 %d; want once each", pp_calls[80],
	      pp_calls[50], pp_calls[10]);
	fr_chunk_free(c);
	c = NULL;

	/* A chain of 2000 ancestors: the walk up stops, after the pids of the
	 * chunk plus 64. */
	for (uint32_t pid = 100; pid < 2099; pid++)
		pp_set(pid, NULL, pid + 1);
	pp_set(2099, NULL, 1);
	pp_set(30, NULL, 100);
	{
		const uint32_t deep[] = {30};

		if (seal_pids(b, deep, 1, &c) < 0)
			goto out;
	}
	n = ancestor_sets(c, 100, &got);
	CHECK(n == 64 + 1 && got == 101, "a deep chain: %u ancestor sets (want 65), "
	      "100's parent %u", n, got);
out:
	fr_chunk_free(c);
	fr_chunk_builder_free(b);
}

int main(void)
{
	test_round_trip();
	test_counters_only();
	test_cgroup_labels();
	test_ppid_labels();
	test_encoding();
	test_enospc();
	test_corruption();
	test_handmade();
	if (failures) {
		fprintf(stderr, "test_chunk: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
