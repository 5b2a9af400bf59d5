/* Chunk codec: the chunk header, which every other part of the codec and
 * the ring share, and look-ups in a decoded chunk. The format is
 * documented in core/store/chunk.h. The codec's other parts:
 *
 *   core/store/chunk_build.c   the builder: samples in, never allocating
 *   core/store/chunk_meta.c    sealing, first step: processes, threads, mappings,
 *                        label sets, strings and build ids
 *   core/store/chunk_encode.c  sealing, second step: block encoding and zstd
 *   core/store/chunk_decode.c  the fully validating decoder
 *
 * They share core/store/chunk_int.h.
 */
#include "core/store/chunk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk_int.h"
#include "core/store/crc32c.h"
#include "core/util/le.h"

void chunk_header_write(unsigned char *p, const struct fr_chunk_header *h)
{
	memset(p, 0, FR_CHUNK_HEADER_LEN);
	fr_put_le32(p + 0, h->magic);
	fr_put_le16(p + 4, h->version);
	fr_put_le16(p + 6, h->header_len);
	fr_put_le64(p + 8, h->seq);
	fr_put_le64(p + 16, (uint64_t)h->first_ns);
	fr_put_le64(p + 24, (uint64_t)h->last_ns);
	fr_put_le32(p + 32, h->nsamples);
	fr_put_le32(p + 36, h->raw_len);
	fr_put_le32(p + 40, h->comp_len);
	fr_put_le32(p + 44, h->covers);
	fr_put_le64(p + 48, (uint64_t)h->clock_offset);
	fr_put_le32(p + 56, h->payload_crc);
	fr_put_le32(p + 60, fr_crc32c(0, p, 60));
}

int fr_chunk_header_parse(const void *buf, size_t len, struct fr_chunk_header *h)
{
	const unsigned char *p = buf;

	if (len < FR_CHUNK_HEADER_LEN)
		return -EBADMSG;
	if (fr_get_le32(p) != FR_CHUNK_MAGIC)
		return -EBADMSG;
	if (fr_get_le32(p + 60) != fr_crc32c(0, p, 60))
		return -EBADMSG;
	h->magic = fr_get_le32(p);
	h->version = fr_get_le16(p + 4);
	h->header_len = fr_get_le16(p + 6);
	h->seq = fr_get_le64(p + 8);
	h->first_ns = (int64_t)fr_get_le64(p + 16);
	h->last_ns = (int64_t)fr_get_le64(p + 24);
	h->nsamples = fr_get_le32(p + 32);
	h->raw_len = fr_get_le32(p + 36);
	h->comp_len = fr_get_le32(p + 40);
	h->covers = fr_get_le32(p + 44);
	h->clock_offset = (int64_t)fr_get_le64(p + 48);
	h->payload_crc = fr_get_le32(p + 56);
	h->header_crc = fr_get_le32(p + 60);
	if (h->version < FR_CHUNK_VERSION_MIN || h->version > FR_CHUNK_VERSION)
		return -EPROTONOSUPPORT;
	if (h->header_len != FR_CHUNK_HEADER_LEN)
		return -EBADMSG;
	/* A ring numbers chunks from 1; no writer gets near 2^62, and a
	 * number near 2^64 would wrap the numbering of the chunks after it. */
	if (h->seq >= FR_CHUNK_SEQ_MAX)
		return -EBADMSG;
	/* A merged chunk stands for chunks numbered from 1 up. */
	if (h->covers && h->covers >= h->seq)
		return -EBADMSG;
	if (h->raw_len < RAW_FIXED || h->raw_len > FR_CHUNK_RAW_MAX)
		return -EBADMSG;
	if (h->comp_len == 0 || h->comp_len > FR_CHUNK_COMP_MAX)
		return -EBADMSG;
	/* Each sample takes at least two bytes of block (stack and tid). */
	if (h->nsamples > h->raw_len / 2)
		return -EBADMSG;
	if (h->first_ns > h->last_ns)
		return -EBADMSG;
	return 0;
}

int fr_chunk_verify(const void *buf, size_t len)
{
	struct fr_chunk_header h;
	const unsigned char *p = buf;

	if (fr_chunk_header_parse(buf, len, &h) < 0)
		return -EBADMSG;
	if (len != FR_CHUNK_HEADER_LEN + (size_t)h.comp_len)
		return -EBADMSG;
	if (fr_crc32c(0, p + FR_CHUNK_HEADER_LEN, h.comp_len) != h.payload_crc)
		return -EBADMSG;
	return 0;
}

void fr_chunk_set_seq(void *buf, uint64_t seq, uint32_t covers)
{
	unsigned char *p = buf;

	fr_put_le64(p + 8, seq);
	fr_put_le32(p + 44, covers);
	fr_put_le32(p + 60, fr_crc32c(0, p, 60));
}

/* Look-ups in a decoded chunk. */

static uint32_t label_pid(const char *v)
{
	uint64_t n = 0;

	if (v[0] < '1' || v[0] > '9')
		return 0;
	for (; *v; v++) {
		if (*v < '0' || *v > '9')
			return 0;
		n = n * 10 + (uint64_t)(*v - '0');
		if (n > UINT32_MAX)
			return 0;
	}
	return (uint32_t)n;
}

void fr_chunk_labelset_proc(const struct fr_chunk *c, uint32_t ls, struct fr_chunk_proc_labels *out)
{
	const struct fr_chunk_labelset *l = &c->labelsets[ls];

	*out = (struct fr_chunk_proc_labels){0};
	for (uint32_t k = 0; k < l->npairs; k++) {
		const char *key = c->strings[c->label_keys[l->first + k]];
		const char *val = c->strings[c->label_values[l->first + k]];

		if (strcmp(key, "cgroup") == 0)
			out->cgroup = val[0] ? val : NULL;
		else if (strcmp(key, "ppid") == 0)
			out->ppid = label_pid(val);
		else if (strcmp(key, "pid") == 0)
			out->pid = label_pid(val);
	}
}

const struct fr_chunk_proc *fr_chunk_find_proc(const struct fr_chunk *c, uint32_t pid)
{
	uint32_t lo = 0, hi = c->nprocs;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (c->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nprocs && c->procs[lo].pid == pid ? &c->procs[lo] : NULL;
}

const struct fr_chunk_thread *fr_chunk_find_thread(const struct fr_chunk *c, uint32_t tid)
{
	uint32_t lo = 0, hi = c->nthreads;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (c->threads[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nthreads && c->threads[lo].tid == tid ? &c->threads[lo] : NULL;
}

const struct fr_chunk_map *fr_chunk_find_map(const struct fr_chunk *c, uint32_t pid, uint64_t addr)
{
	uint32_t lo = 0, hi = c->nmaps;
	const struct fr_chunk_map *m;

	/* First map after (pid, addr); the candidate is the one before. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct fr_chunk_map *x = &c->maps[mid];

		if (x->pid < pid || (x->pid == pid && x->start <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	m = &c->maps[lo - 1];
	return m->pid == pid && addr >= m->start && addr < m->end ? m : NULL;
}
