/* Fuzz target for the chunk decoder (core/store/chunk.h).
 *
 * Checksums guard every chunk, so random mutations of an encoded chunk
 * almost never get past the crc check. The first input byte therefore
 * selects how the rest becomes a chunk:
 *
 *   FUZZ_CHUNK_AS_IS    the bytes are the chunk: exercises header and crc
 *                       checks;
 *   FUZZ_CHUNK_FIX_CRC  the bytes are a chunk whose comp_len, payload crc
 *                       and header crc are recomputed: mutated header
 *                       fields and zstd frames reach the decoder;
 *   FUZZ_CHUNK_BLOCK    20 bytes of header fields (nsamples, first_ns,
 *                       last_ns), then a raw block that is compressed and
 *                       given a valid header: mutations reach the block
 *                       decoder itself;
 *   FUZZ_CHUNK_BUILD    records of samples and counters (tests/fuzz/fuzz.h)
 *                       fed to the chunk builder, sealing whenever it is
 *                       full: every chunk it seals must decode to the
 *                       samples (in any order), counters and metadata that
 *                       went in.
 *
 * Whatever the mode, the three entry points must agree with each other,
 * and a chunk that decodes must be consistent: every id inside its table,
 * every table sorted as documented, every lookup finding what the tables
 * hold. A decoded chunk is then rebuilt from its own samples and tables
 * the way the ring merges its journal (core/store/merge.h, a group of one), and
 * the rebuilt chunk must decode to the same samples with the same
 * metadata: what the decoder accepts, the encoder can write, and merging
 * keeps it.
 */
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_chunk_app.h"
#include "tests/fuzz/fuzz_chunk_check.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/util/compress.h"
#include "core/store/crc32c.h"
#include "core/util/log.h"
#include "core/store/merge.h"

/* Rebuilding is quadratic-ish in the worst case (stack per sample); the
 * property is as well tested on small chunks. */
#define REBUILD_MAX_SAMPLES 4096

static struct fr_zstd *zstd;

static void fix_crcs(unsigned char *p, size_t len)
{
	fr_put_le32(p + FUZZ_CHUNK_OFF_PAYLOAD_CRC,
		    fr_crc32c(0, p + FR_CHUNK_HEADER_LEN, len - FR_CHUNK_HEADER_LEN));
	fr_put_le32(p + FUZZ_CHUNK_OFF_HEADER_CRC, fr_crc32c(0, p, 60));
}

/* Builds the chunk the mode asks for into a malloc'd buffer of exactly
 * *len bytes (so that any read past the end is caught). NULL to skip. */
static unsigned char *make_input(const uint8_t *data, size_t size, size_t *len)
{
	unsigned mode;
	unsigned char *p;

	if (size < 1)
		return NULL;
	mode = data[0] % FUZZ_CHUNK_MODES;
	data++;
	size--;

	if (mode == FUZZ_CHUNK_AS_IS ||
	    (mode == FUZZ_CHUNK_FIX_CRC && size < FR_CHUNK_HEADER_LEN)) {
		p = malloc(size ? size : 1);
		if (p && size)
			memcpy(p, data, size);
		*len = size;
		return p;
	}
	if (mode == FUZZ_CHUNK_FIX_CRC) {
		if (size - FR_CHUNK_HEADER_LEN > UINT32_MAX)
			return NULL;
		p = malloc(size);
		if (!p)
			return NULL;
		memcpy(p, data, size);
		fr_put_le32(p + FUZZ_CHUNK_OFF_COMP_LEN, (uint32_t)(size - FR_CHUNK_HEADER_LEN));
		fix_crcs(p, size);
		*len = size;
		return p;
	}

	/* FUZZ_CHUNK_BLOCK */
	if (size < FUZZ_CHUNK_BLOCK_PREFIX || size - FUZZ_CHUNK_BLOCK_PREFIX > FR_CHUNK_RAW_MAX)
		return NULL;
	{
		const unsigned char *block = data + FUZZ_CHUNK_BLOCK_PREFIX;
		size_t raw = size - FUZZ_CHUNK_BLOCK_PREFIX, cap = fr_zstd_bound(raw);
		ssize_t comp;

		if (!zstd)
			zstd = fr_zstd_new(1);
		p = malloc(FR_CHUNK_HEADER_LEN + cap);
		if (!zstd || !p) {
			free(p);
			return NULL;
		}
		comp = fr_zstd_compress(zstd, p + FR_CHUNK_HEADER_LEN, cap, block, raw);
		FUZZ_CHECK(comp > 0, "compressing %zu bytes: %zd", raw, comp);
		memset(p, 0, FR_CHUNK_HEADER_LEN);
		fr_put_le32(p, FR_CHUNK_MAGIC);
		fr_put_le16(p + FUZZ_CHUNK_OFF_VERSION, FR_CHUNK_VERSION);
		fr_put_le16(p + FUZZ_CHUNK_OFF_HEADER_LEN, FR_CHUNK_HEADER_LEN);
		fr_put_le64(p + FUZZ_CHUNK_OFF_SEQ, 1);
		memcpy(p + FUZZ_CHUNK_OFF_NSAMPLES, data, 4);
		memcpy(p + FUZZ_CHUNK_OFF_FIRST_NS, data + 4, 8);
		memcpy(p + FUZZ_CHUNK_OFF_LAST_NS, data + 12, 8);
		fr_put_le32(p + FUZZ_CHUNK_OFF_RAW_LEN, (uint32_t)raw);
		fr_put_le32(p + FUZZ_CHUNK_OFF_COMP_LEN, (uint32_t)comp);
		*len = FR_CHUNK_HEADER_LEN + (size_t)comp;
		fix_crcs(p, *len);
		return p;
	}
}

/* ------------------------------------------------------------------ */
/* Rebuilding                                                           */

static bool same_str(const struct fr_chunk *a, uint32_t ia, const struct fr_chunk *b, uint32_t ib)
{
	return strcmp(a->strings[ia], b->strings[ib]) == 0;
}

/* A sample with its stack, for comparing chunks whose samples may be
 * stored in another order than they were added. */
struct sview {
	int64_t time_ns;
	uint32_t pid, tid, cpu, event, rate_hz;
	uint64_t weight;
	uint32_t nr_kernel, nr_frames;
	const uint64_t *ips;
};

static int cmp_sview(const void *a, const void *b)
{
	const struct sview *x = a, *y = b;

#define CMP_FIELD(f)      \
	if (x->f != y->f) \
		return x->f < y->f ? -1 : 1;
	CMP_FIELD(time_ns);
	CMP_FIELD(pid);
	CMP_FIELD(tid);
	CMP_FIELD(cpu);
	CMP_FIELD(event);
	CMP_FIELD(rate_hz);
	CMP_FIELD(weight);
	CMP_FIELD(nr_kernel);
	CMP_FIELD(nr_frames);
#undef CMP_FIELD
	for (uint32_t k = 0; k < x->nr_frames; k++)
		if (x->ips[k] != y->ips[k])
			return x->ips[k] < y->ips[k] ? -1 : 1;
	return 0;
}

static struct sview *chunk_views(const struct fr_chunk *c)
{
	struct sview *v = malloc((c->nsamples ? c->nsamples : 1) * sizeof(*v));

	for (uint32_t i = 0; v && i < c->nsamples; i++) {
		const struct fr_chunk_stack *st = &c->stacks[c->stack[i]];

		v[i] = (struct sview){
			.time_ns = c->time_ns[i],
			.pid = c->pid[i],
			.tid = c->tid[i],
			.cpu = c->cpu[i],
			.event = c->event[i],
			.rate_hz = c->rate_hz[i],
			.weight = c->weight[i],
			.nr_kernel = st->nr_kernel,
			.nr_frames = st->nr_frames,
			.ips = &c->frames[st->first],
		};
	}
	return v;
}

/* `want` (n samples, sorted here) and the samples of `c` are the same
 * multiset. */
static void check_same_samples(struct sview *want_v, uint32_t n, const struct fr_chunk *c,
			       const char *what)
{
	struct sview *got = chunk_views(c);

	FUZZ_CHECK(c->nsamples == n, "%s: %u samples, expected %u", what, c->nsamples, n);
	if (!got)
		return;
	qsort(want_v, n, sizeof(*want_v), cmp_sview);
	qsort(got, n, sizeof(*got), cmp_sview);
	for (uint32_t i = 0; i < n; i++)
		FUZZ_CHECK(cmp_sview(&want_v[i], &got[i]) == 0,
			   "%s: the samples differ (sorted, at %u: time %lld pid %u tid %u, "
			   "expected time %lld pid %u tid %u)",
			   what, i, (long long)got[i].time_ns, got[i].pid, got[i].tid,
			   (long long)want_v[i].time_ns, want_v[i].pid, want_v[i].tid);
	free(got);
}

/* Sample i of the rebuilt chunk `b` finds the same process, thread and
 * mappings in `b` as in the original chunk `a`. */
static void check_same_meta(const struct fr_chunk *a, const struct fr_chunk *b, uint32_t i)
{
	const struct fr_chunk_stack *sb = &b->stacks[b->stack[i]];
	uint32_t pid = b->pid[i], tid = b->tid[i];
	const struct fr_chunk_proc *pa = fr_chunk_find_proc(a, pid),
				   *pb = fr_chunk_find_proc(b, pid);
	const struct fr_chunk_thread *ta = fr_chunk_find_thread(a, tid),
				     *tb = fr_chunk_find_thread(b, tid);

	FUZZ_CHECK(!pa == !pb, "sample %u: process %u known in one chunk only", i, pid);
	if (pa)
		FUZZ_CHECK(pa->uid == pb->uid && pa->start_ns == pb->start_ns &&
				   same_str(a, pa->comm, b, pb->comm) &&
				   same_str(a, pa->exe, b, pb->exe) &&
				   pa->build_id_len == pb->build_id_len &&
				   memcmp(pa->build_id, pb->build_id, pa->build_id_len) == 0,
			   "sample %u: rebuilt process %u differs", i, pid);
	FUZZ_CHECK(!ta == !tb, "sample %u: thread %u known in one chunk only", i, tid);
	if (ta)
		FUZZ_CHECK(ta->pid == tb->pid && same_str(a, ta->name, b, tb->name),
			   "sample %u: rebuilt thread %u differs", i, tid);

	/* User frames are looked up in the sample's process, which is the
	 * process the builder files the stack under. */
	for (uint32_t k = sb->nr_kernel; k < sb->nr_frames; k++) {
		uint64_t addr = b->frames[sb->first + k];
		const struct fr_chunk_map *ma = fr_chunk_find_map(a, pid, addr);
		const struct fr_chunk_map *mb = fr_chunk_find_map(b, pid, addr);

		FUZZ_CHECK(!ma == !mb, "sample %u frame %u: mapping in one chunk only", i, k);
		if (ma)
			FUZZ_CHECK(ma->start == mb->start && ma->end == mb->end &&
					   ma->pgoff == mb->pgoff &&
					   same_str(a, ma->path, b, mb->path) &&
					   ma->build_id_len == mb->build_id_len &&
					   memcmp(ma->build_id, mb->build_id, ma->build_id_len) ==
						   0,
				   "sample %u frame %u: rebuilt mapping differs", i, k);
	}
}

/* Rebuilt as the ring rebuilds a group of one (core/store/merge.h): the same
 * samples, counters and metadata. */
static void rebuild(struct fr_chunk *c)
{
	struct fr_chunk *c2 = NULL;
	void *buf = NULL;
	size_t len;
	int ret;

	if (c->nsamples == 0 || c->nsamples > REBUILD_MAX_SAMPLES)
		return;
	FUZZ_CHECK(fr_chunk_merge_span(&c, 1, 0) == 1, "a chunk does not merge with itself alone");
	/* The builder estimates sizes generously; a chunk near the limit
	 * may not fit again, which is not a bug. */
	ret = fr_chunk_merge(&c, 1, FR_CHUNK_RAW_MAX / 2, &buf, &len);
	if (ret == -EFBIG || ret == -ENOMEM)
		goto out;
	FUZZ_CHECK(ret == 0, "merge: %d", ret);
	ret = fr_chunk_decode(buf, len, &c2);
	FUZZ_CHECK(ret == 0, "the rebuilt chunk does not decode: %d", ret);
	{
		struct fr_chunk_header h2;

		FUZZ_CHECK(fr_chunk_header_parse(buf, len, &h2) == 0, "rebuilt header");
		fuzz_check_chunk(c2, &h2);
	}
	FUZZ_CHECK(c2->hdr.clock_offset == c->hdr.clock_offset, "rebuilt clock offset");
	{
		struct sview *orig = chunk_views(c);

		if (orig)
			check_same_samples(orig, c->nsamples, c2, "rebuilt chunk");
		free(orig);
	}
	for (uint32_t i = 0; i < c2->nsamples; i++)
		check_same_meta(c, c2, i);
	FUZZ_CHECK(fuzz_app_digest(c) == fuzz_app_digest(c2),
		   "the rebuilt chunk's application labels differ");
out:
	fr_chunk_free(c2);
	free(buf);
}

/* ------------------------------------------------------------------ */
/* Encoding: FUZZ_CHUNK_BUILD                                           */

/* Small capacities, so that short inputs fill chunks and reach -ENOSPC. */
#define BUILD_MAX_SAMPLES 256
#define BUILD_MAX_RAW (64 * 1024)
#define BUILD_EVENT_SLOTS 64

/* What the builder was given for one chunk, as the decoder must return it. */
static struct {
	uint32_t n;
	struct fr_sample s[BUILD_MAX_SAMPLES];
	uint64_t ips[BUILD_MAX_SAMPLES][FR_MAX_FRAMES];
	uint32_t nevents;
	bool events_overflow;
	struct fr_chunk_event_stats events[BUILD_EVENT_SLOTS];
} want;

/* Metadata a process tracker might answer, as pure functions of the ids,
 * with gaps (-ENOENT) and empty strings. */
static char name_buf[3][32];

static int build_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	if (pid % 5 == 4)
		return -ENOENT;
	snprintf(name_buf[0], sizeof(name_buf[0]), "comm-%u", pid);
	out->pid = pid;
	out->uid = pid * 3;
	out->comm = name_buf[0];
	out->exe = pid % 2 ? "/usr/bin/x" : "";
	out->start_ns = -(int64_t)pid * 1000003;
	out->build_id_len = (uint8_t)(pid % (FR_BUILD_ID_MAX + 1));
	for (int i = 0; i < out->build_id_len; i++)
		out->build_id[i] = (uint8_t)(pid + (uint32_t)i);
	return 0;
}

static int build_thread(void *arg, uint32_t tid, struct fr_thread_info *out)
{
	if (tid % 7 == 6)
		return -ENOENT;
	snprintf(name_buf[1], sizeof(name_buf[1]), "t%u", tid);
	out->tid = tid;
	out->pid = tid / 2;
	out->name = tid % 3 ? name_buf[1] : NULL;
	return 0;
}

/* Mappings on a 64 KiB grid, different for each pid. */
static int build_map(void *arg, uint32_t pid, uint64_t addr, struct fr_map_info *out)
{
	uint64_t region = addr >> 16;

	if ((region + pid) % 3 == 0 || region == UINT64_MAX >> 16)
		return -ENOENT;
	snprintf(name_buf[2], sizeof(name_buf[2]), "/lib/lib%u.so", (unsigned)(region % 5));
	out->start = region << 16;
	out->end = out->start + 0x10000;
	out->pgoff = out->start ^ pid;
	out->path = name_buf[2];
	out->build_id_len = (uint8_t)(region % (FR_BUILD_ID_MAX + 1));
	memset(out->build_id, (int)pid, out->build_id_len);
	return 0;
}

static const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

static void check_built(const struct fr_chunk *c)
{
	struct sview v[BUILD_MAX_SAMPLES];
	int64_t first = 0, last = 0;

	for (uint32_t i = 0; i < want.n; i++) {
		const struct fr_sample *s = &want.s[i];

		if (i == 0 || s->time_ns < first)
			first = s->time_ns;
		if (i == 0 || s->time_ns > last)
			last = s->time_ns;
		v[i] = (struct sview){
			.time_ns = s->time_ns,
			.pid = s->pid,
			.tid = s->tid,
			.cpu = s->cpu,
			.event = s->event,
			.rate_hz = s->rate_hz,
			.weight = s->weight,
			.nr_kernel = s->nr_kernel,
			.nr_frames = s->nr_frames,
			.ips = want.ips[i],
		};
	}
	check_same_samples(v, want.n, c, "sealed chunk");

	/* The samples' metadata is what the callbacks answered. */
	for (uint32_t i = 0; i < c->nsamples; i++) {
		const struct fr_chunk_stack *st = &c->stacks[c->stack[i]];
		uint32_t pid = c->pid[i], tid = c->tid[i];
		const struct fr_chunk_proc *p = fr_chunk_find_proc(c, pid);
		const struct fr_chunk_thread *t = fr_chunk_find_thread(c, tid);
		struct fr_proc_info pi = {0};
		struct fr_thread_info ti = {0};

		FUZZ_CHECK(c->labelset[i] == 0, "sample %u has labels", i);
		if (build_proc(NULL, pid, &pi) < 0) {
			FUZZ_CHECK(!p, "sample %u: process %u appeared", i, pid);
		} else {
			FUZZ_CHECK(p && p->uid == pi.uid && p->start_ns == pi.start_ns &&
					   strcmp(c->strings[p->comm], pi.comm) == 0 &&
					   strcmp(c->strings[p->exe], pi.exe) == 0 &&
					   p->build_id_len == pi.build_id_len &&
					   memcmp(p->build_id, pi.build_id, pi.build_id_len) == 0,
				   "sample %u: process %u decoded differently", i, pid);
		}
		if (build_thread(NULL, tid, &ti) < 0) {
			FUZZ_CHECK(!t, "sample %u: thread %u appeared", i, tid);
		} else {
			FUZZ_CHECK(t && t->pid == ti.pid &&
					   strcmp(c->strings[t->name], str_or_empty(ti.name)) == 0,
				   "sample %u: thread %u decoded differently", i, tid);
		}
		for (uint32_t k = st->nr_kernel; k < st->nr_frames; k++) {
			uint64_t addr = c->frames[st->first + k];
			const struct fr_chunk_map *m = fr_chunk_find_map(c, pid, addr);
			struct fr_map_info mi = {0};

			if (build_map(NULL, pid, addr, &mi) < 0) {
				FUZZ_CHECK(!m, "sample %u frame %u: a mapping appeared", i, k);
				continue;
			}
			FUZZ_CHECK(m && m->start == mi.start && m->end == mi.end &&
					   m->pgoff == mi.pgoff &&
					   strcmp(c->strings[m->path], mi.path) == 0 &&
					   m->build_id_len == mi.build_id_len &&
					   memcmp(m->build_id, mi.build_id, mi.build_id_len) == 0,
				   "sample %u frame %u: mapping decoded differently", i, k);
		}
	}
	if (want.n)
		FUZZ_CHECK(c->hdr.first_ns == first && c->hdr.last_ns == last,
			   "header span [%lld, %lld], samples [%lld, %lld]",
			   (long long)c->hdr.first_ns, (long long)c->hdr.last_ns, (long long)first,
			   (long long)last);
	if (!want.events_overflow) {
		FUZZ_CHECK(c->nevents == want.nevents, "counted %u events, decoded %u",
			   want.nevents, c->nevents);
		for (uint32_t e = 0; e < want.nevents; e++) {
			const struct fr_chunk_event_stats *x = &want.events[e];
			bool found = false;

			for (uint32_t k = 0; k < c->nevents && !found; k++)
				found = c->events[k].event == x->event &&
					c->events[k].lost == x->lost &&
					c->events[k].throttled == x->throttled &&
					c->events[k].truncated == x->truncated;
			FUZZ_CHECK(found, "counters of event %u decoded differently", x->event);
		}
	}
}

static void seal_and_check(struct fr_chunk_builder *b)
{
	const struct fr_chunk_meta_ops ops = {
		.proc = build_proc,
		.thread = build_thread,
		.mapping = build_map,
		.app_labels = fuzz_build_app_labels,
	};
	struct fr_chunk_header h;
	struct fr_chunk *c = NULL;
	void *buf = NULL;
	size_t len = 0;
	int ret;

	FUZZ_CHECK(fr_chunk_builder_samples(b) == want.n, "builder holds %u samples, not %u",
		   fr_chunk_builder_samples(b), want.n);
	ret = fr_chunk_builder_seal(b, &ops, -42, &buf, &len);
	if (want.n == 0 && want.nevents == 0) {
		FUZZ_CHECK(ret == -ENODATA, "sealing nothing returned %d", ret);
		return;
	}
	if (ret == -ENOMEM)
		goto out;
	FUZZ_CHECK(ret == 0, "seal returned %d", ret);
	FUZZ_CHECK(fr_chunk_verify(buf, len) == 0, "a sealed chunk does not verify");
	FUZZ_CHECK(fr_chunk_header_parse(buf, len, &h) == 0, "a sealed chunk's header");
	ret = fr_chunk_decode(buf, len, &c);
	if (ret == -ENOMEM)
		goto out;
	FUZZ_CHECK(ret == 0, "a sealed chunk of %u samples does not decode: %d", want.n, ret);
	FUZZ_CHECK(c->hdr.clock_offset == -42, "clock offset");
	fuzz_check_chunk(c, &h);
	check_built(c);
	fuzz_check_built_app(c);
out:
	fr_chunk_free(c);
	free(buf);
	want.n = 0;
	want.nevents = 0;
	want.events_overflow = false;
}

static void count(struct fr_chunk_builder *b, const unsigned char *p)
{
	uint32_t event = fr_get_le32(p);
	uint64_t lost = fr_get_le64(p + 4), throttled = fr_get_le64(p + 12),
		 truncated = fr_get_le64(p + 20);
	struct fr_chunk_event_stats *e = NULL;

	fr_chunk_builder_count(b, event, lost, throttled, truncated);
	for (uint32_t i = 0; i < want.nevents; i++)
		if (want.events[i].event == event)
			e = &want.events[i];
	if (!e) {
		if (want.nevents == BUILD_EVENT_SLOTS) {
			want.events_overflow = true;
			return;
		}
		e = &want.events[want.nevents++];
		*e = (struct fr_chunk_event_stats){.event = event};
	}
	e->lost += lost;
	e->throttled += throttled;
	e->truncated += truncated;
}

static void build(const uint8_t *data, size_t size)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(BUILD_MAX_SAMPLES, BUILD_MAX_RAW);
	uint64_t ips[0xff];
	size_t pos = 0;

	if (!b)
		return;
	want.n = 0;
	want.nevents = 0;
	want.events_overflow = false;
	while (pos < size) {
		const unsigned char *p = data + pos;
		struct fr_sample s;
		unsigned nr, nk;
		int ret;

		if (p[0] == FUZZ_BUILD_COUNTERS) {
			if (size - pos < FUZZ_BUILD_COUNTERS_LEN)
				break;
			count(b, p + 1);
			pos += FUZZ_BUILD_COUNTERS_LEN;
			continue;
		}
		if (size - pos < FUZZ_BUILD_SAMPLE_LEN)
			break;
		nr = p[0];
		nk = p[1];
		if (size - pos - FUZZ_BUILD_SAMPLE_LEN < nr * 8u)
			break;
		s = (struct fr_sample){
			.time_ns = (int64_t)fr_get_le64(p + 2),
			.pid = fr_get_le32(p + 10),
			.tid = fr_get_le32(p + 14),
			.cpu = fr_get_le32(p + 18),
			.event = fr_get_le32(p + 22),
			.weight = fr_get_le64(p + 26),
			.rate_hz = fr_get_le32(p + 34),
			.nr_kernel = (uint16_t)nk,
			.nr_frames = (uint16_t)nr,
			.ips = nr ? ips : NULL,
		};
		for (unsigned k = 0; k < nr; k++)
			ips[k] = fr_get_le64(p + FUZZ_BUILD_SAMPLE_LEN + 8 * k);
		pos += FUZZ_BUILD_SAMPLE_LEN + 8 * (size_t)nr;

		ret = fr_chunk_builder_add(b, &s);
		if (ret == -ENOSPC) {
			FUZZ_CHECK(want.n > 0, "the first sample of a chunk was refused");
			seal_and_check(b);
			ret = fr_chunk_builder_add(b, &s);
		}
		FUZZ_CHECK(ret == 0, "builder_add returned %d with %u samples in", ret, want.n);
		/* What the builder keeps: the leaf end of deep stacks. */
		if (nr > FR_MAX_FRAMES)
			nr = FR_MAX_FRAMES;
		if (nk > nr)
			nk = nr;
		s.nr_frames = (uint16_t)nr;
		s.nr_kernel = (uint16_t)nk;
		memcpy(want.ips[want.n], ips, nr * sizeof(*ips));
		want.s[want.n++] = s;
	}
	seal_and_check(b);
	fr_chunk_builder_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fr_chunk_header h;
	struct fr_chunk *c = NULL;
	unsigned char *p;
	size_t len = 0;
	int hret, vret, dret;

	/* Damaged input is expected here; keep the output for real failures. */
	fr_log_level = FR_LOG_ERR;

	if (size > 0 && data[0] % FUZZ_CHUNK_MODES == FUZZ_CHUNK_BUILD) {
		build(data + 1, size - 1);
		return 0;
	}
	p = make_input(data, size, &len);
	if (!p)
		return 0;

	hret = fr_chunk_header_parse(p, len, &h);
	FUZZ_CHECK(hret == 0 || hret == -EBADMSG || hret == -EPROTONOSUPPORT,
		   "header_parse returned %d", hret);
	vret = fr_chunk_verify(p, len);
	FUZZ_CHECK(vret == 0 || vret == -EBADMSG, "verify returned %d", vret);
	FUZZ_CHECK(vret < 0 || hret == 0, "verify accepts a chunk whose header fails (%d)", hret);

	dret = fr_chunk_decode(p, len, &c);
	FUZZ_CHECK(dret == 0 || dret == -EBADMSG || dret == -EPROTONOSUPPORT || dret == -ENOMEM,
		   "decode returned %d", dret);
	FUZZ_CHECK((dret == 0) == (c != NULL), "decode returned %d and chunk %p", dret, (void *)c);
	if (hret == -EPROTONOSUPPORT)
		FUZZ_CHECK(dret == -EPROTONOSUPPORT, "other version: decode returned %d", dret);
	if (dret == 0) {
		FUZZ_CHECK(hret == 0 && vret == 0,
			   "decode accepts what header_parse (%d) or "
			   "verify (%d) rejects",
			   hret, vret);
		fuzz_check_chunk(c, &h);
		rebuild(c);
	}
	fr_chunk_free(c);
	free(p);
	return 0;
}
