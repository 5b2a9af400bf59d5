/* Seeds of the chunk target: chunks from the real chunk builder (typical,
 * deep stacks, extreme values, counters only, application labels), raw
 * blocks, a hand-made block with label sets, and records for the builder
 * itself. */
#include "tests/fuzz/make_seeds.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/util/compress.h"
#include "core/store/crc32c.h"

#include "tests/fuzz/fuzz.h"

/* Metadata as a process tracker would answer it: pids 1000.. have a
 * binary and libc mapped, threads belong to the pid below them. */
static int meta_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	static char comm[32];

	if (pid < 1000 || pid >= 1100)
		return -ENOENT;
	snprintf(comm, sizeof(comm), "worker-%u", pid - 1000);
	out->pid = pid;
	out->uid = 1000 + pid % 3;
	out->comm = comm;
	out->exe = pid % 2 ? "/usr/bin/server" : "/usr/lib/jvm/bin/java";
	out->start_ns = T0 - 3600 * SEC + pid;
	out->build_id_len = pid % 2 ? 20 : 0;
	for (int i = 0; i < out->build_id_len; i++)
		out->build_id[i] = (uint8_t)(pid * 7 + i);
	return 0;
}

static int meta_thread(void *arg, uint32_t tid, struct fr_thread_info *out)
{
	static char name[32];

	if (tid < 1000 || tid >= 1100)
		return -ENOENT;
	snprintf(name, sizeof(name), "thread-%u", tid % 4);
	out->tid = tid;
	out->pid = tid - tid % 4;
	out->name = tid % 4 == 3 ? "" : name;
	return 0;
}

static int meta_map(void *arg, uint32_t pid, uint64_t addr, struct fr_map_info *out)
{
	if (addr >= 0x555555554000ull && addr < 0x555555554000ull + 0x200000) {
		out->start = 0x555555554000ull;
		out->end = out->start + 0x200000;
		out->pgoff = 0;
		out->path = pid % 2 ? "/usr/bin/server" : "/usr/lib/jvm/bin/java";
		out->build_id_len = 20;
		memset(out->build_id, (int)pid, 20);
		return 0;
	}
	if (addr >= 0x7ffff7c00000ull && addr < 0x7ffff7c00000ull + 0x180000) {
		out->start = 0x7ffff7c00000ull;
		out->end = out->start + 0x180000;
		out->pgoff = 0x28000;
		out->path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
		out->build_id_len = 0;
		return 0;
	}
	return -ENOENT;
}

static const struct fr_chunk_meta_ops meta = {
	.proc = meta_proc,
	.thread = meta_thread,
	.mapping = meta_map,
};

static void *seal(struct fr_chunk_builder *b, const struct fr_chunk_meta_ops *ops, size_t *len)
{
	void *buf;
	int ret = fr_chunk_builder_seal(b, ops, 12345 * MS, &buf, len);

	if (ret < 0)
		die("sealing a chunk", -ret);
	return buf;
}

/* A typical chunk: a few processes, shared stack roots, kernel frames on
 * some stacks, counters for two events. `nsamples` sets its size. */
void *chunk_typical(int64_t t, uint32_t nsamples, bool random_ips, size_t *len)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(nsamples, 1 << 20);
	uint64_t stacks[8][24];
	int depth[8], nkernel[8];

	if (!b)
		die("builder", ENOMEM);
	for (int i = 0; i < 8; i++) {
		depth[i] = 5 + (int)(rng() % 20);
		nkernel[i] = i % 3 == 0 ? 3 : 0;
		for (int k = 0; k < depth[i]; k++) {
			if (k < nkernel[i])
				stacks[i][k] = 0xffffffff81000000ull + rng() % 0x800000;
			else if (k % 3 == 0)
				stacks[i][k] = 0x7ffff7c00000ull + rng() % 0x180000;
			else
				stacks[i][k] = 0x555555554000ull + rng() % 0x200000;
		}
	}
	for (uint32_t n = 0; n < nsamples; n++) {
		int i = (int)(rng() % 8);
		uint64_t ips[24];
		struct fr_sample s = {
			.time_ns = t + (int64_t)n * 10 * MS + (int64_t)(rng() % MS),
			.pid = 1000 + (uint32_t)(i % 3) * 4,
			.cpu = (uint32_t)(rng() % 4),
			.event = n % 5 == 0 ? 10 : 0,
			.weight = n % 5 == 0 ? 250000 : 10101010,
			.rate_hz = 99,
			.nr_kernel = (uint16_t)nkernel[i],
			.nr_frames = (uint16_t)depth[i],
			.ips = stacks[i],
		};

		s.tid = s.pid + (uint32_t)(rng() % 4);
		if (random_ips) {
			for (int k = 0; k < depth[i]; k++)
				ips[k] = stacks[i][k] + rng() % 4096;
			s.ips = ips;
		}
		if (fr_chunk_builder_add(b, &s) < 0)
			die("builder_add", ENOSPC);
	}
	fr_chunk_builder_count(b, 0, 3, 1, 0);
	fr_chunk_builder_count(b, 10, 0, 0, 7);
	{
		void *buf = seal(b, &meta, len);

		fr_chunk_builder_free(b);
		return buf;
	}
}

/* Offcpu samples and the open-wait records of a seal (core/store/chunk.h,
 * "open waits"): threads blocked for hours on stacks the samples share. */
static void *chunk_open_waits(size_t *len)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(64, 1 << 20);
	const int64_t seal_ns = T0 + 900 * MS;
	uint64_t ips[3][6];

	if (!b)
		die("builder", ENOMEM);
	/* Fixed addresses: the rng's stream, and so the other seeds, stay. */
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 6; k++)
			ips[i][k] = k < 3 ? 0xffffffff81000000ull + 0x1234ull * (uint64_t)(i + k)
					  : 0x555555554000ull + 0x777ull * (uint64_t)(i * 6 + k);
	for (uint32_t n = 0; n < 24; n++) {
		int open = n >= 16;
		struct fr_sample s = {
			.time_ns = open ? seal_ns : T0 + (int64_t)n * 50 * MS,
			.pid = 2000,
			.tid = 2000 + n % 8,
			.cpu = n % 2,
			.event = open ? FR_EVENT_OFFCPU_OPEN : FR_EVENT_OFFCPU,
			.weight = open ? (uint64_t)(n - 15) * 3600 * 1000000000ull : 40000 + n,
			.nr_kernel = 3,
			.nr_frames = 6,
			.ips = ips[n % 3],
		};

		if (fr_chunk_builder_add(b, &s) < 0)
			die("builder_add", ENOSPC);
	}
	{
		void *buf = seal(b, &meta, len);

		fr_chunk_builder_free(b);
		return buf;
	}
}

/* Names over time: thread 2001 renamed every 100 ms, pid 2000's main
 * thread (its comm) once, before the first sample; and creators. */
static const char *const seed_names[] = {"A", "B"};
static struct fr_name_change seed_ren[10], seed_main[1];

static int names_thread(void *arg, uint32_t tid, struct fr_thread_info *out)
{
	if (tid < 2000 || tid > 2003)
		return -ENOENT;
	out->tid = tid;
	out->pid = 2000;
	out->name = tid == 2000 ? "main" : tid == 2001 ? seed_ren[9].name : "pool";
	/* Creators (section 2): main made 2001, which made 2002; 2003 older. */
	out->creator = tid == 2001 ? 2000 : tid == 2002 ? 2001 : 0;
	if (tid == 2001) {
		out->before = "pool";
		out->nchanges = 10;
		out->changes = seed_ren;
	} else if (tid == 2000) {
		out->before = "launcher";
		out->nchanges = 1;
		out->changes = seed_main;
	}
	return 0;
}

static void *chunk_names(size_t *len)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(64, 1 << 20);
	struct fr_chunk_meta_ops ops = meta;
	uint64_t ips[2] = {0x555555554000ull + 0x100, 0x555555554000ull + 0x40};

	if (!b)
		die("builder", ENOMEM);
	ops.thread = names_thread;
	for (int i = 0; i < 10; i++)
		seed_ren[i] = (struct fr_name_change){T0 + i * 100 * MS + 7, seed_names[i % 2]};
	seed_main[0] = (struct fr_name_change){T0 - 5 * MS, "main"};
	for (uint32_t n = 0; n < 40; n++) {
		struct fr_sample s = {
			.time_ns = T0 + (int64_t)n * 25 * MS,
			.pid = 2000,
			.tid = 2000 + n % 4,
			.cpu = n % 2,
			.event = FR_EVENT_CPU,
			.weight = 10101010,
			.rate_hz = 99,
			.nr_frames = 2,
			.ips = ips,
		};

		if (fr_chunk_builder_add(b, &s) < 0)
			die("builder_add", ENOSPC);
	}
	{
		void *buf = seal(b, &ops, len);

		fr_chunk_builder_free(b);
		return buf;
	}
}

/* Application labels (the section after the samples): two threads
 * renaming theirs, one without, and a reason label. */
static int seed_app_labels(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns, uint32_t ref,
			   struct fr_app_label *out)
{
	static char slot[24];

	if (tid % 4 == 0)
		return 0;
	if (tid % 4 == 3) {
		out[0] = (struct fr_app_label){FR_APP_REASON_KEY, "log wrapped"};
		return 1;
	}
	snprintf(slot, sizeof(slot), "%lld", (long long)((time_ns - T0) / (50 * MS)));
	out[0] = (struct fr_app_label){"endpoint", tid % 2 ? "/checkout" : "/search"};
	out[1] = (struct fr_app_label){"slot", slot};
	out[2] = (struct fr_app_label){"tenant", "42"};
	return 3;
}

static void *chunk_app_labels(size_t *len)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(64, 1 << 20);
	struct fr_chunk_meta_ops ops = meta;
	uint64_t ips[4] = {0x555555554100ull, 0x555555554200ull, 0x555555554300ull,
			   0x7ffff7c01000ull};

	if (!b)
		die("builder", ENOMEM);
	ops.app_labels = seed_app_labels;
	for (uint32_t n = 0; n < 40; n++) {
		struct fr_sample s = {
			.time_ns = T0 + (int64_t)n * 10 * MS,
			.pid = 1000,
			.tid = 1000 + n % 4,
			.cpu = n % 2,
			.weight = 10101010,
			.rate_hz = 99,
			.nr_frames = 4,
			.ips = ips,
		};

		if (fr_chunk_builder_add(b, &s) < 0)
			die("builder_add", ENOSPC);
	}
	{
		void *buf = seal(b, &ops, len);

		fr_chunk_builder_free(b);
		return buf;
	}
}

/* Stacks at and past FR_MAX_FRAMES, all-kernel and empty ones. */
static void *chunk_deep(size_t *len)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(8, 1 << 20);
	uint64_t ips[FR_MAX_FRAMES + 10];

	if (!b)
		die("builder", ENOMEM);
	for (int k = 0; k < FR_MAX_FRAMES + 10; k++)
		ips[k] = k < 40 ? 0xffffffff81000000ull + (uint64_t)k * 0x40
				: 0x555555554000ull + (uint64_t)(FR_MAX_FRAMES + 10 - k) * 0x100;
	for (int n = 0; n < 6; n++) {
		struct fr_sample s = {
			.time_ns = T0 + n * MS,
			.pid = 1001,
			.tid = 1001,
			.weight = 1,
			.rate_hz = 999,
			.nr_kernel = (uint16_t)(n == 2 ? FR_MAX_FRAMES : 40),
			.nr_frames = (uint16_t)(n < 3	 ? FR_MAX_FRAMES
						: n == 3 ? FR_MAX_FRAMES + 10
							 : 0),
			.ips = n == 5 ? NULL : ips,
		};

		if (fr_chunk_builder_add(b, &s) < 0)
			die("builder_add", ENOSPC);
	}
	{
		void *buf = seal(b, &meta, len);

		fr_chunk_builder_free(b);
		return buf;
	}
}

/* Extreme values in every column, samples out of time order, no
 * metadata. */
static void *chunk_extreme(size_t *len)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(8, 1 << 20);
	uint64_t ips[] = {UINT64_MAX, 0, 0x8000000000000000ull, 1, UINT64_MAX - 1};
	int64_t times[] = {-5 * SEC, INT64_MAX / 2, -5 * SEC, 0, -INT64_MAX / 2};

	if (!b)
		die("builder", ENOMEM);
	for (int n = 0; n < 5; n++) {
		struct fr_sample s = {
			.time_ns = times[n],
			.pid = n % 2 ? UINT32_MAX : 0,
			.tid = n % 2 ? 0 : UINT32_MAX,
			.cpu = UINT32_MAX - (uint32_t)n,
			.event = n == 4 ? 200 : (uint32_t)n,
			.weight = n == 0 ? UINT64_MAX : (uint64_t)n,
			.rate_hz = n == 1 ? UINT32_MAX : 0,
			.nr_kernel = (uint16_t)(n % 2),
			.nr_frames = (uint16_t)(5 - n),
			.ips = ips + n,
		};

		if (fr_chunk_builder_add(b, &s) < 0)
			die("builder_add", ENOSPC);
	}
	fr_chunk_builder_count(b, UINT32_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX);
	{
		void *buf = seal(b, NULL, len);

		fr_chunk_builder_free(b);
		return buf;
	}
}

static void refix_header(unsigned char *p)
{
	fr_put_le32(p + FUZZ_CHUNK_OFF_HEADER_CRC, fr_crc32c(0, p, 60));
}

/* Counters only: sealed at "now", so the times are fixed afterwards. */
static void *chunk_counters(size_t *len)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(8, 1 << 20);
	unsigned char *buf;

	if (!b)
		die("builder", ENOMEM);
	for (uint32_t e = 0; e < 12; e++)
		fr_chunk_builder_count(b, e, e * 3, e % 2, e * 1000);
	buf = seal(b, &meta, len);
	fr_chunk_builder_free(b);
	fr_put_le64(buf + FUZZ_CHUNK_OFF_FIRST_NS, (uint64_t)T0);
	fr_put_le64(buf + FUZZ_CHUNK_OFF_LAST_NS, (uint64_t)T0);
	refix_header(buf);
	return buf;
}

/* The raw block of an encoded chunk, behind the FUZZ_CHUNK_BLOCK prefix. */
static unsigned char *block_seed(const unsigned char *chunk, size_t *len)
{
	uint32_t raw = fr_get_le32(chunk + FUZZ_CHUNK_OFF_RAW_LEN);
	uint32_t comp = fr_get_le32(chunk + FUZZ_CHUNK_OFF_COMP_LEN);
	unsigned char *out = malloc(FUZZ_CHUNK_BLOCK_PREFIX + (size_t)raw);

	if (!out)
		die("block", ENOMEM);
	memcpy(out, chunk + FUZZ_CHUNK_OFF_NSAMPLES, 4);
	memcpy(out + 4, chunk + FUZZ_CHUNK_OFF_FIRST_NS, 8);
	memcpy(out + 12, chunk + FUZZ_CHUNK_OFF_LAST_NS, 8);
	if (fr_zstd_decompress(out + FUZZ_CHUNK_BLOCK_PREFIX, raw, chunk + FR_CHUNK_HEADER_LEN,
			       comp) != (ssize_t)raw)
		die("decompressing a chunk just built", EBADMSG);
	*len = FUZZ_CHUNK_BLOCK_PREFIX + (size_t)raw;
	return out;
}

/* Block writer for the hand-made block below. */
struct blk {
	unsigned char b[512];
	size_t n;
};

static void bv(struct blk *w, uint64_t v)
{
	while (v >= 0x80) {
		w->b[w->n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	w->b[w->n++] = (unsigned char)v;
}

static void bstr(struct blk *w, const char *s)
{
	bv(w, strlen(s));
	memcpy(w->b + w->n, s, strlen(s));
	w->n += strlen(s);
}

static void bz(struct blk *w, int64_t v)
{
	bv(w, ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63)));
}

/* What the builder never writes: label sets. A block of the layout in
 * core/store/chunk.h with one of everything and three samples, the first two
 * labelled. Written by hand, so it follows the format only as long as
 * this function is kept up to date. */
static void block_labels(struct blk *w)
{
	w->n = 0;
	/* strings */
	bv(w, 5);
	bstr(w, "");
	bstr(w, "request");
	bstr(w, "GET /index");
	bstr(w, "tenant");
	bstr(w, "blue");
	/* build ids */
	bv(w, 1);
	bv(w, 2);
	w->b[w->n++] = 0xab;
	w->b[w->n++] = 0xcd;
	/* pids: 7 */
	bv(w, 1);
	bv(w, 7);
	/* processes: pids[0], uid 0, comm 1, exe 0, started at first_ns, bid 1 */
	bv(w, 1);
	bv(w, 0), bv(w, 0), bv(w, 1), bv(w, 0), bz(w, 0), bv(w, 1);
	/* threads: tid 7 of pid 7, named 4 */
	bv(w, 1);
	bv(w, 7), bz(w, 0), bv(w, 4);
	/* mappings: pids[0], 0x1000 + 0x1000, pgoff 0, path 2, bid 1 */
	bv(w, 1);
	bv(w, 0), bv(w, 0x1000), bv(w, 0x1000), bv(w, 0), bv(w, 2), bv(w, 1);
	/* stacks: one of pids[0], a user root 0x1100 calling kernel
	 * 0xffffffff81000000; columns pidx, nr_kernel, nr_frames, shared */
	bv(w, 1);
	bv(w, 0), bv(w, 1), bv(w, 2), bv(w, 0);
	bz(w, 0x1100);	  /* root: predicted by the last user frame, 0 */
	bz(w, 0x1000000); /* kernel: predicted by the last kernel frame */
	/* labelsets (ids 1 and 2; 0 is the empty set) */
	bv(w, 2);
	bv(w, 1), bv(w, 1), bv(w, 2);
	bv(w, 2), bv(w, 1), bv(w, 2), bv(w, 3), bv(w, 4);
	/* events */
	bv(w, 1);
	bv(w, 0), bv(w, 1), bv(w, 2), bv(w, 3);
	/* samples */
	bv(w, 3);
	bv(w, 1), bv(w, 0), bv(w, 3), bv(w, 0), bv(w, 0);     /* one cpu run, no period */
	bz(w, 1), bz(w, -1);				      /* jitter: +1, -1 */
	bz(w, 0), bz(w, 0), bz(w, 0);			      /* stack */
	bz(w, 0), bz(w, 0), bz(w, 1);			      /* tid - pid */
	bv(w, 2), bv(w, 0), bv(w, 2), bv(w, 10), bv(w, 1);    /* event runs */
	bv(w, 2), bv(w, 100), bv(w, 2), bv(w, 300), bv(w, 1); /* weight runs */
	bv(w, 1), bv(w, 99), bv(w, 3);			      /* rate runs */
	bv(w, 3), bv(w, 1), bv(w, 1), bv(w, 2), bv(w, 1), bv(w, 0), bv(w, 1); /* labelsets */
}

/* FUZZ_CHUNK_BUILD records (tests/fuzz/fuzz.h). */
struct rec {
	unsigned char *b;
	size_t n, cap;
};

static void rec_bytes(struct rec *r, const void *p, size_t n)
{
	if (r->n + n > r->cap) {
		r->cap = (r->n + n) * 2;
		r->b = realloc(r->b, r->cap);
		if (!r->b)
			die("records", ENOMEM);
	}
	memcpy(r->b + r->n, p, n);
	r->n += n;
}

static void rec_u8(struct rec *r, uint8_t v)
{
	rec_bytes(r, &v, 1);
}

static void rec_u32(struct rec *r, uint32_t v)
{
	unsigned char b[4];

	fr_put_le32(b, v);
	rec_bytes(r, b, 4);
}

static void rec_u64(struct rec *r, uint64_t v)
{
	unsigned char b[8];

	fr_put_le64(b, v);
	rec_bytes(r, b, 8);
}

static void rec_sample(struct rec *r, const struct fr_sample *s)
{
	rec_u8(r, (uint8_t)s->nr_frames);
	rec_u8(r, (uint8_t)s->nr_kernel);
	rec_u64(r, (uint64_t)s->time_ns);
	rec_u32(r, s->pid);
	rec_u32(r, s->tid);
	rec_u32(r, s->cpu);
	rec_u32(r, s->event);
	rec_u64(r, s->weight);
	rec_u32(r, s->rate_hz);
	for (unsigned k = 0; k < s->nr_frames; k++)
		rec_u64(r, s->ips[k]);
}

static void rec_counters(struct rec *r, uint32_t event, uint64_t lost, uint64_t throttled,
			 uint64_t truncated)
{
	rec_u8(r, FUZZ_BUILD_COUNTERS);
	rec_u32(r, event);
	rec_u64(r, lost);
	rec_u64(r, throttled);
	rec_u64(r, truncated);
}

/* Inputs for the builder: a short busy second, and enough samples to
 * fill chunks (the target seals every BUILD_MAX_SAMPLES). */
static void make_build_seeds(void)
{
	struct rec r = {0};
	uint64_t ips[12];

	for (int n = 0; n < 24; n++) {
		struct fr_sample s = {
			.time_ns = T0 + n * 10 * MS - (n % 3) * MS,
			.pid = 1000 + (uint32_t)(n % 4),
			.tid = 1000 + (uint32_t)(n % 6),
			.cpu = (uint32_t)(n % 2),
			.event = n % 4 == 0 ? 10 : 0,
			.weight = 10101010,
			.rate_hz = 99,
			.nr_kernel = (uint16_t)(n % 3),
			.nr_frames = (uint16_t)(n % 12),
			.ips = ips,
		};

		for (int k = 0; k < 12; k++)
			ips[k] = k < s.nr_kernel ? 0xffffffff81000000ull + (uint64_t)(n * 64 + k)
						 : 0x555555554000ull +
							   (uint64_t)((n % 5) * 0x30000 + k * 0x90);
		rec_sample(&r, &s);
		if (n % 10 == 0)
			rec_counters(&r, (uint32_t)(n % 3), 1, 2, 3);
	}
	write_seed("chunk", "build-second", FUZZ_CHUNK_BUILD, r.b, r.n);

	r.n = 0;
	for (int n = 0; n < 300; n++) {
		struct fr_sample s = {
			.time_ns = T0 + n * MS,
			.pid = 7,
			.tid = 7 + (uint32_t)(n % 2),
			.weight = 1,
			.rate_hz = 1000,
			.nr_frames = 1,
			.ips = ips,
		};

		ips[0] = 0x400000 + (uint64_t)(n % 17) * 0x10;
		rec_sample(&r, &s);
	}
	write_seed("chunk", "build-overflow", FUZZ_CHUNK_BUILD, r.b, r.n);
	free(r.b);
}

void make_chunk_seeds(void)
{
	unsigned char *c, *blk;
	size_t len, blen;
	struct blk w;

	clean_dir("chunk");

	c = chunk_typical(T0, 60, false, &len);
	write_seed("chunk", "typical", FUZZ_CHUNK_AS_IS, c, len);
	write_seed("chunk", "typical-fixcrc", FUZZ_CHUNK_FIX_CRC, c, len);
	blk = block_seed(c, &blen);
	write_seed("chunk", "typical-block", FUZZ_CHUNK_BLOCK, blk, blen);
	free(blk);
	/* Cut short, and of another format version. */
	write_seed("chunk", "truncated", FUZZ_CHUNK_AS_IS, c, len / 2);
	fr_put_le16(c + FUZZ_CHUNK_OFF_VERSION, FR_CHUNK_VERSION + 1);
	refix_header(c);
	write_seed("chunk", "other-version", FUZZ_CHUNK_AS_IS, c, len);
	free(c);

	c = chunk_deep(&len);
	write_seed("chunk", "deep", FUZZ_CHUNK_AS_IS, c, len);
	blk = block_seed(c, &blen);
	write_seed("chunk", "deep-block", FUZZ_CHUNK_BLOCK, blk, blen);
	free(blk);
	free(c);

	c = chunk_extreme(&len);
	write_seed("chunk", "extreme-fixcrc", FUZZ_CHUNK_FIX_CRC, c, len);
	blk = block_seed(c, &blen);
	write_seed("chunk", "extreme-block", FUZZ_CHUNK_BLOCK, blk, blen);
	free(blk);
	free(c);

	c = chunk_counters(&len);
	write_seed("chunk", "counters", FUZZ_CHUNK_AS_IS, c, len);
	free(c);

	c = chunk_open_waits(&len);
	write_seed("chunk", "open-waits", FUZZ_CHUNK_AS_IS, c, len);
	blk = block_seed(c, &blen);
	write_seed("chunk", "open-waits-block", FUZZ_CHUNK_BLOCK, blk, blen);
	free(blk);
	free(c);

	c = chunk_names(&len);
	write_seed("chunk", "names", FUZZ_CHUNK_AS_IS, c, len);
	write_seed("chunk", "names-fixcrc", FUZZ_CHUNK_FIX_CRC, c, len);
	blk = block_seed(c, &blen);
	write_seed("chunk", "names-block", FUZZ_CHUNK_BLOCK, blk, blen);
	c = chunk_app_labels(&len);
	write_seed("chunk", "app-labels", FUZZ_CHUNK_AS_IS, c, len);
	write_seed("chunk", "app-labels-fixcrc", FUZZ_CHUNK_FIX_CRC, c, len);
	blk = block_seed(c, &blen);
	write_seed("chunk", "app-labels-block", FUZZ_CHUNK_BLOCK, blk, blen);
	free(blk);
	free(c);

	block_labels(&w);
	blk = malloc(FUZZ_CHUNK_BLOCK_PREFIX + w.n);
	if (!blk)
		die("block", ENOMEM);
	fr_put_le32(blk, 3);
	fr_put_le64(blk + 4, (uint64_t)T0);
	fr_put_le64(blk + 12, (uint64_t)T0 + 1);
	memcpy(blk + FUZZ_CHUNK_BLOCK_PREFIX, w.b, w.n);
	write_seed("chunk", "labels-block", FUZZ_CHUNK_BLOCK, blk, FUZZ_CHUNK_BLOCK_PREFIX + w.n);
	free(blk);

	make_build_seeds();
}
