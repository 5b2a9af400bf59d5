/* The chunk tests' fake tracker, samples and checks; see fixture_chunk.h. */
#include "tests/unit/fixture_chunk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/compress.h"
#include "core/store/crc32c.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

void rng_seed(uint64_t seed)
{
	rng_state = seed;
}

/* ------------------------------------------------------------------ */
/* Fake process tracker                                                 */

const struct fake_map fake_maps[NFAKE_MAPS] = {
	{100, 0x400000, 0x480000, 0, "/usr/bin/server", 20},
	{100, 0x7f0000000000, 0x7f0000200000, 0x1000, "/usr/lib/libc.so.6", 20},
	{100, 0x7f0000200000, 0x7f0000300000, 0, "/usr/lib/libm.so.6", 0},
	{200, 0x400000, 0x500000, 0x2000, "/usr/bin/worker", 8},
	{300, 0x10000, 0x20000, 0, "", 0}, /* anonymous (JIT) */
};

int fake_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	static char comm[32], exe[64];

	(void)arg;
	if (pid != 100 && pid != 200 && pid != 300)
		return -ENOENT;
	snprintf(comm, sizeof(comm), "comm-%u", pid);
	snprintf(exe, sizeof(exe), "/usr/bin/exe-%u", pid);
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

int fake_thread(void *arg, uint32_t tid, struct fr_thread_info *out)
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

int nmapping_calls;

int fake_mapping(void *arg, uint32_t pid, uint64_t addr, struct fr_map_info *out)
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

const struct fr_chunk_meta_ops fake_ops = {
	.proc = fake_proc,
	.thread = fake_thread,
	.mapping = fake_mapping,
};

const struct fake_map *fake_find(uint32_t pid, uint64_t addr)
{
	for (size_t i = 0; i < NFAKE_MAPS; i++)
		if (fake_maps[i].pid == pid && addr >= fake_maps[i].start &&
		    addr < fake_maps[i].end)
			return &fake_maps[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Sample generation                                                    */

void user_frame(uint32_t pid, uint64_t *out)
{
	/* Mostly mapped addresses, some unmapped. */
	switch (rng() % 5) {
	case 0: *out = 0x400000 + rng() % 0x80000; break;
	case 1: *out = 0x7f0000000000 + rng() % 0x300000; break;
	case 2: *out = 0x10000 + rng() % 0x10000; break;
	case 3: *out = 0x400000 + rng() % 0x100000; break;
	default:
		*out = 0x12345678 + rng() % 4096; /* unmapped */
		break;
	}
	(void)pid;
}

void make_sample(struct stored *st, int i, const struct stored *prev)
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

const char *str(const struct fr_chunk *c, uint32_t id)
{
	return id < c->nstrings ? c->strings[id] : "<bad id>";
}

int cmp_stored(const void *a, const void *b)
{
	const struct stored *x = a, *y = b;
	const struct fr_sample *s = &x->s, *t = &y->s;

#define KEY(f)            \
	if (s->f != t->f) \
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

static int cmp_indexed(const void *a, const void *b, void *arg)
{
	const struct stored *v = arg;

	return cmp_stored(&v[*(const uint32_t *)a], &v[*(const uint32_t *)b]);
}

int pair_samples(const struct fr_chunk *c, const struct stored *in, uint32_t n, struct pairing *pr)
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

void pairing_fini(struct pairing *pr)
{
	free(pr->in);
	free(pr->index);
}

/* The process and thread of sample `s` as the tracker described them. */
static void check_sample_meta(const struct fr_chunk *c, const struct fr_sample *s)
{
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
}

/* Every user frame of `st` resolves to the tracker's mapping, and no
 * kernel frame has one. */
static void check_sample_maps(const struct fr_chunk *c, const struct stored *st)
{
	const struct fr_sample *s = &st->s;

	for (unsigned f = s->nr_kernel; f < s->nr_frames; f++) {
		uint64_t addr = st->ips[f];
		const struct fake_map *fm = fake_find(s->pid, addr);
		const struct fr_chunk_map *m = fr_chunk_find_map(c, s->pid, addr);

		if (!fm) {
			CHECK(m == NULL, "unmapped %llx has a mapping", (unsigned long long)addr);
			continue;
		}
		if (!m) {
			CHECK(0, "pid %u addr %llx: no mapping", s->pid, (unsigned long long)addr);
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
		CHECK(fr_chunk_find_map(c, s->pid, st->ips[f]) == NULL, "kernel frame mapped");
}

void check_decoded(const struct fr_chunk *c, const struct stored *unsorted, uint32_t n,
		   int64_t clock_offset)
{
	int64_t tmin = INT64_MAX, tmax = INT64_MIN;
	struct pairing pr;
	const struct stored *in;

	/* Without names over time (no sections): the version before them. */
	CHECK(c->hdr.magic == FR_CHUNK_MAGIC && c->hdr.version == FR_CHUNK_VERSION_MIN,
	      "header identity");
	CHECK(c->hdr.seq == 0, "seq %llu, want 0", (unsigned long long)c->hdr.seq);
	CHECK(c->hdr.clock_offset == clock_offset, "clock_offset");
	CHECK(c->hdr.nsamples == n && c->nsamples == n, "nsamples %u/%u, want %u", c->hdr.nsamples,
	      c->nsamples, n);
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

		check_sample_meta(c, s);
		check_sample_maps(c, &in[k]);
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

/* ------------------------------------------------------------------ */
/* Corruption                                                           */

void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void fix_header_crc(unsigned char *p)
{
	put_le32(p + 60, fr_crc32c(0, p, 60));
}

unsigned char *wrap_block(const unsigned char *tmpl, const void *raw, size_t raw_len,
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

void check_invariants(const struct fr_chunk *c)
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