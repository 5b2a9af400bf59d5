/* Writes the seed corpora of the fuzz targets:
 *
 *   make_seeds CORPUS_DIR
 *
 * fills CORPUS_DIR/{chunk,ring,ipc,config}/ with files named seed-*,
 * after removing the seed-* files already there (other files, such as
 * regression inputs found by fuzzing, are left alone). Chunks and rings
 * come from the real chunk builder and ring writer of this build, so
 * regenerating after a format change gives seeds of the new format. The
 * output is deterministic: sample data comes from a fixed generator and
 * the ring's creation time and id are overwritten with constants.
 *
 * Each seed starts with the mode byte its target expects (tests/fuzz/fuzz.h)
 * where the target has modes.
 */
#include "tests/fuzz/fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "core/store/chunk.h"
#include "core/util/compress.h"
#include "core/store/crc32c.h"
#include "core/store/ring.h"
#include "ipc/msg.h"
#include "ipc/proto.h"

#define T0 1700000000000000000ll
#define MS 1000000ll
#define SEC 1000000000ll

static const char *corpus;
static int nfiles;
static size_t nbytes;
static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "make_seeds: %s: %s\n", what, strerror(err));
	exit(1);
}

/* Removes the seed-* files of one target directory, creating it if needed. */
static void clean_dir(const char *target)
{
	char path[4096];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", corpus, target);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		die(path, errno);
	d = opendir(path);
	if (!d)
		die(path, errno);
	while ((e = readdir(d))) {
		char file[8192];

		if (strncmp(e->d_name, "seed-", 5) != 0)
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
		if (unlink(file) < 0)
			die(file, errno);
	}
	closedir(d);
}

/* Writes CORPUS/target/seed-name: the mode byte (when >= 0), then data. */
static void write_seed(const char *target, const char *name, int mode, const void *data,
		       size_t len)
{
	char path[4096];
	unsigned char m = (unsigned char)mode;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/seed-%s", corpus, target, name);
	f = fopen(path, "wbe");
	if (!f)
		die(path, errno);
	if ((mode >= 0 && fwrite(&m, 1, 1, f) != 1) || (len && fwrite(data, 1, len, f) != len) ||
	    fclose(f) != 0)
		die(path, EIO);
	nfiles++;
	nbytes += len + (mode >= 0);
}

/* ------------------------------------------------------------------ */
/* Chunks                                                               */

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
static void *chunk_typical(int64_t t, uint32_t nsamples, bool random_ips, size_t *len)
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
			.nr_frames = (uint16_t)(n < 3 ? FR_MAX_FRAMES : n == 3 ? FR_MAX_FRAMES + 10 : 0),
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
	bv(w, 1), bv(w, 0), bv(w, 3), bv(w, 0), bv(w, 0); /* one cpu run, no period */
	bz(w, 1), bz(w, -1);				  /* jitter: +1, -1 */
	bz(w, 0), bz(w, 0), bz(w, 0);			  /* stack */
	bz(w, 0), bz(w, 0), bz(w, 1);			  /* tid - pid */
	bv(w, 2), bv(w, 0), bv(w, 2), bv(w, 10), bv(w, 1);  /* event runs */
	bv(w, 2), bv(w, 100), bv(w, 2), bv(w, 300), bv(w, 1); /* weight runs */
	bv(w, 1), bv(w, 99), bv(w, 3);			  /* rate runs */
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
						 : 0x555555554000ull + (uint64_t)((n % 5) * 0x30000 + k * 0x90);
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

static void make_chunk_seeds(void)
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

/* ------------------------------------------------------------------ */
/* Rings                                                                */

static unsigned char *slurp(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0)
		die(path, errno);
	p = malloc((size_t)st.st_size);
	if (!p || pread(fd, p, (size_t)st.st_size, 0) != st.st_size)
		die(path, EIO);
	close(fd);
	*len = (size_t)st.st_size;
	return p;
}

/* Creation time and ring id are the only varying bytes of a ring. */
static void fix_sb(unsigned char *sb)
{
	fr_put_le64(sb + FUZZ_SB_OFF_CREATED_NS, (uint64_t)T0);
	memset(sb + FUZZ_SB_OFF_RING_ID, 0x5a, 16);
	fr_put_le32(sb + FUZZ_SB_OFF_CRC, fr_crc32c(0, sb, FUZZ_SB_OFF_CRC));
}

/* Offset of the first chunk header in `img` (a ring file) whose seq is
 * `seq`, or 0. */
static size_t find_seq(const unsigned char *img, size_t len, uint64_t seq)
{
	for (size_t off = FR_RING_SB_LEN; off + FR_CHUNK_HEADER_LEN <= len; off += 8)
		if (fr_get_le32(img + off) == FR_CHUNK_MAGIC &&
		    fr_get_le64(img + off + FUZZ_CHUNK_OFF_SEQ) == seq)
			return off;
	return 0;
}

/* A region (segment or journal) of FUZZ_RING_SEGMENT bytes holding small
 * chunks numbered `seqs` back to back (a 0 ends the list); the chunk
 * numbered `merged` stands for the `covers` numbers before it. *used is
 * how far the chunks reach. */
static unsigned char *hand_region(const int seqs[4], int merged, uint32_t covers, size_t *used)
{
	unsigned char *reg = calloc(1, FUZZ_RING_SEGMENT);

	if (!reg)
		die("region", ENOMEM);
	*used = 0;
	for (int k = 0; k < 4 && seqs[k]; k++) {
		size_t clen;
		unsigned char *c = chunk_typical(T0 + seqs[k] * SEC, 8, false, &clen);

		fr_chunk_set_seq(c, (uint64_t)seqs[k], seqs[k] == merged ? covers : 0);
		memcpy(reg + *used, c, clen);
		*used += (clen + 7) & ~(size_t)7;
		free(c);
	}
	return reg;
}

/* A FUZZ_RING_SPLIT seed of three regions: each one's data as one part. */
static void write_split_seed(const char *name, unsigned mode, unsigned char *const reg[3],
			     const size_t used[3])
{
	size_t part_len = 0;
	unsigned char *part;

	for (int i = 0; i < 3; i++)
		if (used[i] > part_len)
			part_len = used[i];
	part = malloc(3 * part_len);
	if (!part)
		die("seed", ENOMEM);
	for (int i = 0; i < 3; i++)
		memcpy(part + i * part_len, reg[i], part_len);
	write_seed("ring", name, mode, part, 3 * part_len);
	free(part);
}

static void make_ring_seeds(void)
{
	char dir[] = "/tmp/fr-seeds-XXXXXX", path[256], err[512];
	struct fr_ring *r;
	unsigned char *img;
	size_t len, off;
	uint64_t seq, nchunks = 0;
	int ret;

	clean_dir("ring");

	/* A real ring of three 64 KiB segments, written until it has wrapped
	 * into its first segment again. */
	if (!mkdtemp(dir))
		die("mkdtemp", errno);
	snprintf(path, sizeof(path), "%s/ring", dir);
	ret = fr_ring_open(&r, path, 2 * FR_RING_SB_LEN + 3 * FUZZ_RING_SEGMENT, FUZZ_RING_SEGMENT,
			   FR_RING_CREATE, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "make_seeds: %s\n", err);
		exit(1);
	}
	fr_ring_set_sync_interval(r, -1);
	/* Past the end of the third segment, well into the first again. */
	for (size_t written = 0; written < 3 * FUZZ_RING_SEGMENT + FUZZ_RING_SEGMENT / 2;) {
		size_t clen;
		void *c = chunk_typical(T0 + (int64_t)nchunks * SEC, 40 + (uint32_t)(rng() % 40),
					true, &clen);

		ret = fr_ring_append(r, c, clen);
		if (ret < 0)
			die("fr_ring_append", -ret);
		free(c);
		written += clen;
		nchunks++;
	}
	fr_ring_close(r);
	img = slurp(path, &len);
	unlink(path);
	rmdir(dir);
	fix_sb(img);
	fix_sb(img + len - FR_RING_SB_LEN); /* its copy */
	write_seed("ring", "wrapped", FUZZ_RING_FILE, img, len);

	/* The superblock damaged, read through its copy: a flipped bit, a
	 * zeroed first page; then the copy damaged too, where only the
	 * chunks say the file was a ring. */
	{
		unsigned char *d = malloc(len);

		if (!d)
			die("seed", ENOMEM);
		memcpy(d, img, len);
		d[FUZZ_SB_OFF_SEGMENT_SIZE + 2] ^= 0x08;
		write_seed("ring", "sb-flipped", FUZZ_RING_FILE, d, len);
		memset(d, 0, FR_RING_SB_LEN);
		write_seed("ring", "sb-zeroed", FUZZ_RING_FILE, d, len);
		/* Both zeroed: no magic left anywhere, only chunk headers. */
		memset(d + len - FR_RING_SB_LEN, 0, FR_RING_SB_LEN);
		write_seed("ring", "sb-both", FUZZ_RING_FILE, d, len);
		free(d);
	}

	/* The same ring damaged as a crash and a bad disk leave it: the
	 * newest chunk torn, a header in the middle of another segment
	 * overwritten. Recovery skips both. */
	for (seq = nchunks; seq > 0; seq--)
		if ((off = find_seq(img, len, seq)))
			break;
	if (!off)
		die("finding the newest chunk", ENOENT);
	img[off + FR_CHUNK_HEADER_LEN + 20] ^= 0x55;
	if ((off = find_seq(img, len, seq - 8)))
		memset(img + off + 8, 0xee, 16);
	write_seed("ring", "damaged", FUZZ_RING_FILE, img, len);
	free(img);

	/* Small hand-placed layouts for the modes with a built-in
	 * superblock: three segments holding chunks 7-9 (plus a leftover
	 * 2 behind them), 1-3 and 4-6, each segment's data as one part. */
	{
		static const int layout[3][4] = {{7, 8, 9, 2}, {1, 2, 3, 0}, {4, 5, 6, 0}};
		unsigned char *reg[3];
		size_t used[3];

		for (int i = 0; i < 3; i++)
			reg[i] = hand_region(layout[i], 0, 0, &used[i]);
		/* bits 2-3 = 1: three segments */
		write_split_seed("split3", FUZZ_RING_SPLIT | 1 << 2, reg, used);
		/* Two segments, the first one's data only, crcs fixed up. */
		write_seed("ring", "linear2-fixcrc", FUZZ_RING_LINEAR | FUZZ_RING_FIX_CRC, reg[1],
			   used[1]);
		for (int i = 0; i < 3; i++)
			free(reg[i]);
	}

	/* A real ring with a journal, copied while its writer had a group
	 * in the journal and had merged others into its segments (as a
	 * kill -9 leaves it). */
	if (!mkdtemp(strcpy(dir, "/tmp/fr-seeds-XXXXXX")))
		die("mkdtemp", errno);
	snprintf(path, sizeof(path), "%s/ring", dir);
	ret = fr_ring_open(&r, path, 2 * FR_RING_SB_LEN + 6 * FUZZ_RING_SEGMENT, FUZZ_RING_SEGMENT,
			   FR_RING_CREATE | FR_RING_JOURNAL, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "make_seeds: %s\n", err);
		exit(1);
	}
	fr_ring_set_sync_interval(r, -1);
	fr_ring_set_group(r, INT64_MAX);
	for (int i = 0; i < 40; i++) {
		size_t clen;
		void *c = chunk_typical(T0 + (int64_t)i * SEC, 40 + (uint32_t)(rng() % 40), true,
					&clen);

		ret = fr_ring_append(r, c, clen);
		if (ret < 0)
			die("fr_ring_append", -ret);
		free(c);
	}
	img = slurp(path, &len);
	fr_ring_close(r);
	unlink(path);
	rmdir(dir);
	fix_sb(img);
	fix_sb(img + len - FR_RING_SB_LEN); /* its copy */
	write_seed("ring", "journal", FUZZ_RING_FILE, img, len);
	free(img);

	/* By hand, for the built-in superblock with a journal: the journal
	 * holds 8 (merged since), 10 and 11; segment 0 chunks 1-3, segment 1
	 * chunk 7 standing for 4-7, then 9. */
	{
		static const int layout[3][4] = {{8, 10, 11, 0}, {1, 2, 3, 0}, {7, 9, 0, 0}};
		unsigned char *reg[3];
		size_t used[3];

		for (int i = 0; i < 3; i++)
			reg[i] = hand_region(layout[i], 7, 3, &used[i]);
		write_split_seed("journal-split", FUZZ_RING_SPLIT | FUZZ_RING_JOURNAL, reg, used);
		for (int i = 0; i < 3; i++)
			free(reg[i]);
	}

	/* Files that are not rings this build can read. */
	{
		unsigned char sb[FR_RING_SB_LEN + 64];

		write_seed("ring", "not-a-ring", FUZZ_RING_FILE, "#!/bin/sh\necho hello\n", 21);
		memset(sb, 0, sizeof(sb));
		memcpy(sb, FR_RING_MAGIC, 16);
		fr_put_le32(sb + FUZZ_SB_OFF_VERSION, FR_RING_VERSION);
		fr_put_le32(sb + FUZZ_SB_OFF_SB_LEN, FR_RING_SB_LEN);
		fr_put_le64(sb + FUZZ_SB_OFF_FILE_SIZE, FR_RING_SB_LEN + 2 * FUZZ_RING_SEGMENT);
		fr_put_le64(sb + FUZZ_SB_OFF_SEGMENT_SIZE, FUZZ_RING_SEGMENT);
		fr_put_le32(sb + FUZZ_SB_OFF_NSEGMENTS, 2);
		fr_put_le32(sb + FUZZ_SB_OFF_CHUNK_VERSION, FR_CHUNK_VERSION);
		fix_sb(sb);
		/* Shorter than its superblock says. */
		write_seed("ring", "truncated", FUZZ_RING_FILE | FUZZ_RING_FIX_CRC, sb, sizeof(sb));
		fr_put_le32(sb + FUZZ_SB_OFF_CHUNK_VERSION, FR_CHUNK_VERSION + 1);
		fix_sb(sb);
		write_seed("ring", "other-chunk-version", FUZZ_RING_FILE, sb, FR_RING_SB_LEN);
	}
}

/* ------------------------------------------------------------------ */
/* IPC                                                                  */

struct stream {
	unsigned char b[8192];
	size_t n;
};

static void frame_raw(struct stream *s, uint32_t len, const void *body, size_t body_len)
{
	fr_put_le32(s->b + s->n, len);
	s->n += 4;
	memcpy(s->b + s->n, body, body_len);
	s->n += body_len;
}

static void frame(struct stream *s, const char *json)
{
	frame_raw(s, (uint32_t)strlen(json), json, strlen(json));
}

/* Frames `obj` (freed) as its encoder wrote it, with "v" as a client adds
 * it to requests. */
static void frame_msg(struct stream *s, cJSON *obj, int request)
{
	char *text;

	if (!obj)
		die("out of memory", ENOMEM);
	if (request)
		cJSON_AddNumberToObject(obj, "v", FR_IPC_VERSION);
	text = cJSON_PrintUnformatted(obj);
	if (!text)
		die("out of memory", ENOMEM);
	frame(s, text);
	cJSON_free(text);
	cJSON_Delete(obj);
}

/* Every message of ipc/msg.h as its encoder writes it, so the seeds follow
 * the protocol: an attach with every member and its reply, a consume and
 * its reply, a dump and its reply. */
static void make_message_seeds(void)
{
	static struct fr_ipc_attach_req ar;
	static struct fr_ipc_attach_reply ap;
	struct fr_ipc_consume_req cr = {.hz = 999, .nevents = 2};
	struct fr_ipc_consume_reply cp = {.start_ns = 1700000000000000000LL, .nevents = 1};
	struct fr_ipc_dump_req dr = {.session = "db", .window_ns = 120000000000LL};
	struct fr_ipc_dump_reply dp = {.t0_ns = 1700000000000000000LL,
				       .t1_ns = 1700000060000000000LL};
	struct stream s;

	ar.window_ns = 60000000000LL;
	ar.hz = 99;
	ar.nevents = 2;
	ar.events[0] = FR_EVENT_CPU;
	ar.events[1] = (uint32_t)fr_event_lookup("offcpu");
	ar.targets.npids = 1;
	ar.targets.pids[0] = 1234;
	ar.targets.children = 1;
	ar.targets.ncomms = 1;
	snprintf(ar.targets.comms[0], sizeof(ar.targets.comms[0]), "postgres");
	snprintf(ar.targets.cgroup, sizeof(ar.targets.cgroup), "/system.slice/x.service");
	ar.format = FR_PROFILE_FOLDED;
	ap.samples = ap.samples_in_window = 5940;
	ap.stacks = 212;
	ap.bytes = 48211;
	ap.hz = 99;
	ap.t0_ns = 1700000000000000000LL;
	ap.t1_ns = 1700000060000000000LL;
	ap.covered_t0_ns = ap.t0_ns;
	ap.nevents = 1;
	ap.events[0] = (struct fr_ipc_event_counts){FR_EVENT_CPU, 99, 5940, 5940, 0, 1, 2};
	snprintf(ap.incomplete, sizeof(ap.incomplete), "incomplete: the recorder did not "
		 "store its last samples within 3 s");
	fr_ipc_warn(ap.warnings, &ap.nwarnings, "pid 5678 exited before the window");
	cr.events[0] = FR_EVENT_CPU;
	cr.events[1] = (uint32_t)fr_event_lookup("cycles");
	fr_ipc_warn(cp.warnings, &cp.nwarnings, "999 Hz is above the limit for users");
	cp.events[0] = (struct fr_ipc_consume_event){FR_EVENT_CPU, 999, 999};
	snprintf(dp.path, sizeof(dp.path), "/var/lib/flightrec/dumps/db-manual-h-t.pb.gz");

	s.n = 0;
	frame_msg(&s, fr_ipc_attach_req_encode(&ar), 1);
	frame_msg(&s, fr_ipc_attach_reply_encode(&ap), 0);
	frame_msg(&s, fr_ipc_consume_req_encode(&cr), 1);
	frame_msg(&s, fr_ipc_consume_reply_encode(&cp), 0);
	frame_msg(&s, fr_ipc_dump_req_encode(&dr), 1);
	frame_msg(&s, fr_ipc_dump_reply_encode(&dp), 0);
	write_seed("ipc", "messages", -1, s.b, s.n);

	/* Members each decoder refuses, one per frame. */
	s.n = 0;
	frame(&s, "{\"v\":1,\"req\":\"attach\",\"window_ns\":1.5,\"hz\":-1}");
	frame(&s, "{\"v\":1,\"req\":\"attach\",\"from_ns\":1,\"pids\":[0],\"comm\":[\"\"]}");
	frame(&s, "{\"v\":1,\"req\":\"attach\",\"window_ns\":1,\"children\":true,"
		  "\"cgroup\":\"x\",\"format\":\"svg\"}");
	frame(&s, "{\"v\":1,\"req\":\"consume\",\"events\":[\"cpu\",\"cpu\"],\"hz\":1e30}");
	frame(&s, "{\"v\":1,\"req\":\"dump\",\"session\":\"\",\"window_ns\":999}");
	frame(&s, "{\"ok\":true,\"events\":[{\"event\":\"raw:0x1\",\"hz\":4294967296}],"
		  "\"warnings\":[1],\"incomplete\":true,\"path\":7}");
	write_seed("ipc", "bad-fields", -1, s.b, s.n);
}

static void make_ipc_seeds(void)
{
	struct stream s;

	clean_dir("ipc");

	s.n = 0;
	frame(&s, "{\"v\":1,\"req\":\"status\"}");
	frame(&s, "{\"v\":1,\"req\":\"attach\",\"window_ns\":60000000000,\"hz\":99,"
		  "\"pids\":[1234,5678]}");
	frame(&s, "{\"ok\":true,\"samples\":5940,\"stacks\":212,\"bytes\":48211,\"hz\":99,"
		  "\"t0_ns\":1700000000000000000,\"t1_ns\":1700000060000000000,"
		  "\"warnings\":[\"pid 5678 exited before the window\"]}");
	frame(&s, "{\"ok\":false,\"error\":\"protocol version 2 is not supported; this "
		  "daemon speaks version 1\"}");
	write_seed("ipc", "conversation", -1, s.b, s.n);

	s.n = 0;
	frame(&s, "{\"v\":1,\"req\":\"attach\",\"from_ns\":1700000000000000000,"
		  "\"to_ns\":1700000001000000000,\"hz\":0,\"pids\":[]}");
	frame_raw(&s, 100, "{\"v\":1,\"req\":", 13);
	write_seed("ipc", "truncated", -1, s.b, s.n);

	s.n = 0;
	frame_raw(&s, 0, "", 0);
	write_seed("ipc", "empty-frame", -1, s.b, s.n);

	s.n = 0;
	frame_raw(&s, FR_IPC_MAX_FRAME + 1, "{}", 2);
	write_seed("ipc", "oversize", -1, s.b, s.n);

	s.n = 0;
	frame(&s, "{}");
	frame(&s, "[1,2,{\"v\":1}]");
	write_seed("ipc", "not-an-object", -1, s.b, s.n);

	s.n = 0;
	frame_raw(&s, 16, "{\"v\":1}\0{\"v\":2}", 16);
	write_seed("ipc", "nul", -1, s.b, s.n);

	s.n = 0;
	frame(&s, "{\"v\":1,\"req\":\"status\"} {\"v\":1}");
	write_seed("ipc", "trailing", -1, s.b, s.n);

	{
		char deep[1200];
		size_t n = 0;

		n += (size_t)sprintf(deep + n, "{\"v\":1,\"x\":");
		for (int i = 0; i < 300; i++)
			deep[n++] = '[';
		n += (size_t)sprintf(deep + n, "\"\\u00e9\\ud83d\\ude00\\n\",1e308,-0.5,null,true");
		for (int i = 0; i < 300; i++)
			deep[n++] = ']';
		deep[n++] = '}';
		s.n = 0;
		frame_raw(&s, (uint32_t)n, deep, n);
		write_seed("ipc", "nested", -1, s.b, s.n);
	}
	make_message_seeds();
}

/* ------------------------------------------------------------------ */
/* Config                                                               */

static void config_seed(const char *name, const char *json)
{
	write_seed("config", name, -1, json, strlen(json));
}

static void make_config_seeds(void)
{
	char bom[1024];

	clean_dir("config");
	config_seed("default", fr_config_default_json);
	config_seed("empty-object", "{}");
	config_seed("everything",
		    "{\n"
		    "  \"ring\": {\"path\": \"/var/lib/flightrec/ring\", \"size\": \"1.5GiB\",\n"
		    "           \"segment\": \"4M\", \"sync\": \"off\", \"max_age\": \"36h\"},\n"
		    "  \"socket\": \"/run/flightrec/sock\",\n"
		    "  \"limits\": {\"max_rate_hz\": 2000, \"max_clients\": 1024},\n"
		    "  \"sessions\": [\n"
		    "    {\"name\": \"always\", \"events\": [{\"event\": \"cpu\", \"hz\": 49},\n"
		    "                                   {\"event\": \"offcpu\"}]},\n"
		    "    {\"name\": \"pmu.1\", \"events\": [{\"event\": \"cycles\", \"hz\": 2000},\n"
		    "        {\"event\": \"cache-misses\", \"hz\": 1e1}]},\n"
		    "    {\"name\": \"implicit_cpu\"}\n"
		    "  ]\n"
		    "}\n");
	snprintf(bom, sizeof(bom), "\xef\xbb\xbf%s", fr_config_default_json);
	config_seed("bom", bom);
	config_seed("sync-fraction",
		    "{\"ring\": {\"size\": \"1048576\", \"segment\": \"64KiB\", \"sync\": \"1.5ms\","
		    " \"max_age\": \"1.5s\"},"
		    " \"limits\": {\"max_rate_hz\": 10}}");
	config_seed("unknown-key", "{\"ring\": {\"sise\": \"1GiB\"}}");
	config_seed("hz-above-limit",
		    "{\"limits\": {\"max_rate_hz\": 100},\n"
		    " \"sessions\": [{\"name\": \"a\", \"events\": [{\"event\": \"cpu\", \"hz\": 101}]}]}");
	config_seed("targets",
		    "{\"limits\": {\"max_rate_hz\": 500},\n"
		    " \"sessions\": [{\"name\": \"db\", \"targets\": {\"pids\": [1, 4194304], \"comm\": [\"postgres\", \"pgbouncer\"],\n"
		    "   \"cgroup\": \"/system.slice/postgresql.service\"},\n"
		    "  \"events\": [{\"event\": \"offcpu\"}, {\"event\": \"raw:0x1c2\", \"hz\": 499}, {\"event\": \"page-faults\"}]}]}\n");
	config_seed("triggers",
		    "{\n"
		    "  \"dumps\": {\"dir\": \"/var/lib/flightrec/dumps\", \"keep\": 200, \"max_bytes\": \"2GiB\"},\n"
		    "  \"sessions\": [\n"
		    "    {\"name\": \"oncall\", \"triggers\": [{\"on\": \"signal\", \"signal\": \"USR1\", \"window\": \"2m\"},\n"
		    "                                    {\"on\": \"signal\", \"signal\": \"SIGRTMIN+3\", \"after\": \"10s\"}]},\n"
		    "    {\"name\": \"hot\", \"events\": [{\"event\": \"cpu\", \"hz\": 99}],\n"
		    "     \"triggers\": [{\"on\": \"cpu_above\", \"percent\": 90, \"for\": \"10s\", \"window\": \"5m\",\n"
		    "                   \"after\": \"30s\", \"cooldown\": \"15m\"}]},\n"
		    "    {\"name\": \"api\", \"targets\": {\"comm\": [\"api-server\"]},\n"
		    "     \"events\": [{\"event\": \"cpu\", \"hz\": 199}, {\"event\": \"offcpu\"}],\n"
		    "     \"triggers\": [{\"on\": \"exit\", \"window\": \"60s\", \"cooldown\": \"5m\"},\n"
		    "                  {\"on\": \"signal\", \"signal\": \"sigusr2\"}]}\n"
		    "  ]\n"
		    "}\n");
	config_seed("trigger-errors",
		    "{\"dumps\": {\"keep\": 100000},\n"
		    " \"sessions\": [{\"name\": \"a\", \"targets\": {\"pids\": [1]},\n"
		    "   \"triggers\": [{\"on\": \"signal\", \"signal\": \"RTMAX-1\", \"window\": \"59m\", \"after\": \"1m\"},\n"
		    "                {\"on\": \"cpu_above\", \"percent\": 100, \"for\": \"1s\", \"cooldown\": \"1s\"},\n"
		    "                {\"on\": \"exit\", \"signal\": \"TERM\", \"percent\": 0, \"for\": \"500ms\"}]}]}\n");
	config_seed("syntax-error", "{\n  \"ring\": {\n    \"size\": 256MiB\n  }\n}\n");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n"
				"Writes the seed-* inputs of every fuzz target under CORPUS_DIR.\n",
			argv[0]);
		return 1;
	}
	corpus = argv[1];
	if (mkdir(corpus, 0755) < 0 && errno != EEXIST)
		die(corpus, errno);
	make_chunk_seeds();
	make_ring_seeds();
	make_ipc_seeds();
	make_config_seeds();
	printf("make_seeds: wrote %d files, %zu bytes, under %s\n", nfiles, nbytes, corpus);
	return 0;
}
