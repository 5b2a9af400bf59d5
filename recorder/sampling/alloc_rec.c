/* The allocation ring's records (recorder/sampling/alloc_rec.h). */
#include "recorder/sampling/alloc_rec.h"

#include <errno.h>
#include <string.h>

#include "flightrec/labels_abi.h"

int64_t fr_alloc_rec_len(const void *head, uint64_t pos, uint64_t room)
{
	struct fr_alloc_rec_abi h;

	memcpy(&h, head, sizeof(h));
	/* Another position: an earlier lap's record, or one being written.
	 * A zero length too: the first record of a new ring (position 0,
	 * where the memfd's zeros already read as its pos) before its
	 * writer filled it. */
	if (h.pos != pos || h.len == 0)
		return 0;
	if (h.len < sizeof(h) || h.len % 8 || h.len > room)
		return -EBADMSG;
	if (h.kind != FR_ALLOC_REC_PAD && h.len > FR_ALLOC_REC_MAX)
		return -EBADMSG;
	return h.len;
}

static int parse_alloc(const uint8_t *buf, size_t len, struct fr_alloc_rec *out)
{
	struct fr_alloc_rec_alloc_abi a;
	size_t at = sizeof(a), labels_room;

	if (len < sizeof(a))
		return -EBADMSG;
	memcpy(&a, buf, sizeof(a));
	if (a.size == 0 || a.size > FR_ALLOC_SIZE_MAX || a.mean < FR_ALLOC_MEAN_MIN ||
	    a.mean > FR_ALLOC_MEAN_MAX || a.time_ns <= 0)
		return -EBADMSG;
	if (a.labels_len > FR_BPF_LABELS_FR_MAX || a.stack_len > FR_ALLOC_STACK_COPY_MAX)
		return -EBADMSG;
	labels_room = ((size_t)a.labels_len + 7) & ~(size_t)7;
	if (labels_room > len - at || a.stack_len > len - at - labels_room)
		return -EBADMSG;
	out->time_ns = a.time_ns;
	out->tid = a.tid;
	out->addr = a.addr;
	out->size = a.size;
	out->mean = a.mean;
	out->ip = a.ip;
	out->sp = a.sp;
	out->bp = a.bp;
	if (a.labels_len) {
		struct fr_labels_record_abi r;

		/* Its header and the `size` bytes of pairs it says it has:
		 * the checker (recorder/tracking/labelsets.c) reads the rest. */
		if (a.labels_len < FR_BPF_LABELS_FR_HEAD)
			return -EBADMSG;
		memcpy(&r, buf + at, FR_BPF_LABELS_FR_HEAD);
		if ((size_t)r.size + FR_BPF_LABELS_FR_HEAD > a.labels_len)
			return -EBADMSG;
		out->labels = buf + at;
		out->labels_len = a.labels_len;
	}
	at += labels_room;
	out->stack = buf + at;
	out->stack_len = a.stack_len;
	return 0;
}

int fr_alloc_rec_parse(const void *buf, size_t len, uint64_t pos, struct fr_alloc_rec *out)
{
	struct fr_alloc_rec_abi h;
	struct fr_alloc_rec_free_abi f;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(h) || len % 8)
		return -EBADMSG;
	memcpy(&h, buf, sizeof(h));
	if (h.pos != pos || h.len != len)
		return -EBADMSG;
	out->kind = h.kind;
	out->len = h.len;
	switch (h.kind) {
	case FR_ALLOC_REC_PAD: return 0;
	case FR_ALLOC_REC_ALLOC: return parse_alloc(buf, len, out);
	case FR_ALLOC_REC_FREE:
		if (len < sizeof(f))
			return -EBADMSG;
		memcpy(&f, buf, sizeof(f));
		if (f.time_ns <= 0)
			return -EBADMSG;
		out->time_ns = f.time_ns;
		out->tid = f.tid;
		out->addr = f.addr;
		return 0;
	default: return -EBADMSG;
	}
}
