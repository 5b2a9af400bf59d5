/* Finding a ring's chunks when it is opened (see core/store/ring.h, RECOVERY):
 * scanning the segments by checksums and sequence numbers, checking the
 * newest payloads, and reading back the journal's current group.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/store/crc32c.h"
#include "core/util/grow.h"
#include "core/util/log.h"
#include "core/store/ring_int.h"

struct cand {
	struct fr_ring_ref ref;
	bool verified;
	bool damaged; /* header intact, payload not: counted, dropped later */
};

struct scan {
	struct cand *c;
	size_t n, cap;
	unsigned char *segbuf; /* one segment, for resyncing */
	uint64_t max_seq;
	bool any_seq;
	/* Per segment: where its scan met an all-zero header (the end of its
	 * data, or a zeroed page), or NO_ZERO_STOP. */
	uint64_t *zero_stop;
};

#define NO_ZERO_STOP UINT64_MAX

static int scan_add(struct scan *s, const struct fr_ring_ref *ref)
{
	if (FR_GROW(s->c, &s->cap, s->n + 1, 256) < 0)
		return -ENOMEM;
	s->c[s->n].ref = *ref;
	s->c[s->n].verified = false;
	s->c[s->n].damaged = false;
	s->n++;
	return 0;
}

/* A header at `off` within the segment that parses and whose chunk fits
 * in the rest of the segment. */
static bool header_ok(const struct fr_ring *r, const unsigned char *p, uint64_t off,
		      struct fr_chunk_header *h)
{
	if (fr_chunk_header_parse(p, FR_CHUNK_HEADER_LEN, h) < 0)
		return false;
	return FR_CHUNK_HEADER_LEN + (uint64_t)h->comp_len <= r->segment_size - off;
}

/* Scans segment `seg` from offset `start`. An all-zero header normally
 * ends the segment's data; with `zeros_are_damage` it is searched past
 * like any other bad header. */
static int scan_segment(struct fr_ring *r, struct scan *s, uint32_t seg, uint64_t start,
			bool zeros_are_damage)
{
	uint64_t base = seg_base(r, seg), off = start, last_seq = 0;
	bool have_last = false, loaded = false;
	int ret;

	while (off + FR_CHUNK_HEADER_LEN <= r->segment_size) {
		unsigned char hbuf[FR_CHUNK_HEADER_LEN];
		const unsigned char *hp;
		struct fr_chunk_header h;
		struct fr_ring_ref ref;

		if (loaded) {
			hp = s->segbuf + off;
		} else {
			ssize_t n = fr_pread_full(r->fd, hbuf, sizeof(hbuf), base + off);

			if (n < 0)
				return (int)n;
			if ((size_t)n < sizeof(hbuf))
				memset(hbuf + n, 0, sizeof(hbuf) - (size_t)n);
			hp = hbuf;
		}
		/* Never written: the end of this segment's data (or a zeroed
		 * page, which ring_recover() looks past when chunks are missing). */
		if (!zeros_are_damage && all_zero(hp, FR_CHUNK_HEADER_LEN)) {
			s->zero_stop[seg] = off;
			break;
		}
		if (!header_ok(r, hp, off, &h)) {
			bool found = false;

			/* Search forward for the next valid header. */
			if (!loaded) {
				ssize_t n = fr_pread_full(r->fd, s->segbuf, r->segment_size, base);

				if (n < 0)
					return (int)n;
				if ((size_t)n < r->segment_size)
					memset(s->segbuf + n, 0, r->segment_size - (size_t)n);
				loaded = true;
			}
			for (off += 8; off + FR_CHUNK_HEADER_LEN <= r->segment_size; off += 8) {
				if (fr_get_le32(s->segbuf + off) == FR_CHUNK_MAGIC &&
				    header_ok(r, s->segbuf + off, off, &h)) {
					found = true;
					break;
				}
			}
			if (!found)
				break;
		}
		/* Sequence numbers increase within a segment's current use;
		 * a lower one is a leftover of its previous use. */
		if (have_last && h.seq <= last_seq)
			break;
		have_last = true;
		last_seq = h.seq;
		if (!s->any_seq || h.seq > s->max_seq)
			s->max_seq = h.seq;
		s->any_seq = true;

		ref = ring_ref_of(&h, base + off);
		ret = scan_add(s, &ref);
		if (ret < 0)
			return ret;
		if (loaded) {
			/* The payload is in memory already: check it now. A damaged
			 * chunk stays a candidate, marked, so its sequence number is
			 * not mistaken for a hole. */
			if (fr_chunk_verify(s->segbuf + off, ref.len) < 0) {
				s->c[s->n - 1].damaged = true;
				r->corrupt++;
			} else {
				s->c[s->n - 1].verified = true;
			}
		}
		off += align8(ref.len);
	}
	return 0;
}

static int cmp_cand_seq(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return (x->ref.seq > y->ref.seq) - (x->ref.seq < y->ref.seq);
}

/* Checks payloads of the newest chunks, newest first, dropping damaged
 * ones (s->c sorted by seq). */
static int verify_tail(struct fr_ring *r, struct scan *s)
{
	uint64_t checked = 0;
	unsigned char *buf = malloc(r->segment_size);

	if (!buf)
		return -ENOMEM;
	for (size_t i = s->n; i-- > 0 && checked < VERIFY_TAIL_BYTES;) {
		struct cand *c = &s->c[i];
		ssize_t n;

		checked += c->ref.len;
		if (c->verified || c->damaged)
			continue;
		n = fr_pread_full(r->fd, buf, c->ref.len, c->ref.offset);
		if (n < 0) {
			free(buf);
			return (int)n;
		}
		if ((size_t)n != c->ref.len || fr_chunk_verify(buf, c->ref.len) < 0) {
			if (!c->damaged)
				r->corrupt++;
			c->damaged = true;
			continue;
		}
		c->verified = true;
	}
	free(buf);
	return 0;
}

/* Reads the whole journal into a malloc'd buffer (bytes past the end of a
 * truncated file read as zeroes). Returns 0 or -errno. */
int ring_journal_load(struct fr_ring *r, unsigned char **out)
{
	unsigned char *buf = malloc(r->journal_size);
	ssize_t n;

	*out = NULL;
	if (!buf)
		return -ENOMEM;
	n = fr_pread_full(r->fd, buf, r->journal_size, FR_RING_SB_LEN);
	if (n < 0) {
		free(buf);
		return (int)n;
	}
	if ((uint64_t)n < r->journal_size)
		memset(buf + n, 0, r->journal_size - (uint64_t)n);
	*out = buf;
	return 0;
}

/* The first valid chunk header at or after `off` (8-byte aligned) in the
 * journal image `buf` whose chunk lies inside the journal: its offset, with
 * the header in *h, or UINT64_MAX. The journal is circular and overwritten
 * in place, so leftovers lie between chunks: every aligned offset is
 * looked at. */
uint64_t ring_journal_next(const struct fr_ring *r, const unsigned char *buf, uint64_t off,
			   struct fr_chunk_header *h)
{
	for (; off + FR_CHUNK_HEADER_LEN <= r->journal_size; off += 8)
		if (fr_chunk_header_parse(buf + off, FR_CHUNK_HEADER_LEN, h) == 0 &&
		    FR_CHUNK_HEADER_LEN + (uint64_t)h->comp_len <= r->journal_size - off)
			return off;
	return UINT64_MAX;
}

/* The offset after the chunk of header `h` at `off`. */
uint64_t ring_journal_after(uint64_t off, const struct fr_chunk_header *h)
{
	return off + align8(FR_CHUNK_HEADER_LEN + (uint64_t)h->comp_len);
}

/* Reads the whole journal: its intact chunks numbered above `main_max`
 * (the newest intact chunk of the segments) become the group, in sequence
 * order. Damaged ones among them are counted, and so are numbers missing
 * between them. The journal cursor resumes after the chunk with the
 * highest number, and the numbering after every number seen. */
static int journal_recover(struct fr_ring *r, uint64_t main_max)
{
	struct scan js = {0};
	struct fr_chunk_header h;
	unsigned char *buf;
	uint64_t top_seq = 0, top_end = 0;
	size_t keep = 0;
	int ret = ring_journal_load(r, &buf);

	if (ret < 0)
		return ret;
	for (uint64_t off = ring_journal_next(r, buf, 0, &h); off != UINT64_MAX;
	     off = ring_journal_next(r, buf, ring_journal_after(off, &h), &h)) {
		struct fr_ring_ref ref = ring_ref_of(&h, FR_RING_SB_LEN + off);

		if (h.seq > top_seq) {
			top_seq = h.seq;
			top_end = ring_journal_after(off, &h);
		}
		if (h.seq <= main_max)
			continue; /* merged since */
		ref.covers = 0;
		ret = scan_add(&js, &ref);
		if (ret < 0)
			goto out;
		js.c[js.n - 1].damaged = fr_chunk_verify(buf + off, ref.len) < 0;
	}
	if (js.n > 1)
		qsort(js.c, js.n, sizeof(*js.c), cmp_cand_seq);
	/* One chunk per number (an intact one first), the numbers missing
	 * between them and the damaged ones counted. */
	for (size_t i = 0; i < js.n; i++) {
		struct cand *c = js.c;

		if (keep && c[keep - 1].ref.seq == c[i].ref.seq) {
			if (c[keep - 1].damaged && !c[i].damaged)
				c[keep - 1] = c[i];
			continue;
		}
		if (keep && c[i].ref.seq > c[keep - 1].ref.seq + 1)
			r->corrupt += c[i].ref.seq - c[keep - 1].ref.seq - 1;
		c[keep++] = c[i];
	}
	for (size_t i = 0; i < keep; i++) {
		if (js.c[i].damaged) {
			r->corrupt++;
			continue;
		}
		ret = ring_jidx_push(r, &js.c[i].ref);
		if (ret < 0)
			goto out;
	}
	if (top_seq >= r->next_seq)
		r->next_seq = top_seq + 1;
	r->jcur = top_end >= r->journal_size ? 0 : top_end;
	r->group_start = fr_now_mono_ns();
	r->group_due = r->jcount > 0;
out:
	free(js.c);
	free(buf);
	return ret;
}

/* Scans every segment into s, s->c sorted by sequence number, looking past
 * zeros where chunks are missing (below). Returns 0 or -errno. */
static int scan_segments(struct fr_ring *r, struct scan *s)
{
	int ret;

	for (uint32_t seg = 0; seg < r->nsegments; seg++) {
		s->zero_stop[seg] = NO_ZERO_STOP;
		ret = scan_segment(r, s, seg, 0, false);
		if (ret < 0)
			return ret;
	}
	if (s->n > 1)
		qsort(s->c, s->n, sizeof(*s->c), cmp_cand_seq);

	/* Sequence numbers are consecutive in a ring that is only appended
	 * to, wrapped and expired. A gap means chunks are missing between
	 * ones that were found: when a zeroed page took a header, the chunks
	 * behind it in its segment were taken for never-written space. Look
	 * past the zeros of those segments then (and only then: reading the
	 * untouched tails of a healthy ring would slow every open). */
	for (size_t i = 1; i < s->n; i++) {
		if (s->c[i].ref.seq - s->c[i].ref.covers <= s->c[i - 1].ref.seq + 1)
			continue;
		for (uint32_t seg = 0; seg < r->nsegments; seg++) {
			if (s->zero_stop[seg] == NO_ZERO_STOP)
				continue;
			ret = scan_segment(r, s, seg, s->zero_stop[seg], true);
			if (ret < 0)
				return ret;
		}
		qsort(s->c, s->n, sizeof(*s->c), cmp_cand_seq);
		break;
	}
	return 0;
}

/* Leaves in s (sorted, its tail verified) one intact chunk per sequence
 * number, counting the damaged ones and the holes between them. */
static void keep_intact(struct fr_ring *r, struct scan *s)
{
	size_t keep;

	/* Duplicate sequence numbers cannot come from this writer; keep the
	 * first of each. */
	keep = 0;
	for (size_t i = 0; i < s->n; i++)
		if (keep == 0 || s->c[i].ref.seq != s->c[keep - 1].ref.seq)
			s->c[keep++] = s->c[i];
	s->n = keep;

	/* A hole that remains is a chunk whose header was destroyed: count it
	 * too. Then only the intact chunks go on. */
	for (size_t i = 1; i < s->n; i++) {
		uint64_t first = s->c[i].ref.seq - s->c[i].ref.covers;

		if (first > s->c[i - 1].ref.seq + 1)
			r->corrupt += first - s->c[i - 1].ref.seq - 1;
	}
	keep = 0;
	for (size_t i = 0; i < s->n; i++)
		if (!s->c[i].damaged)
			s->c[keep++] = s->c[i];
	s->n = keep;
}

/* Sets the append cursor and the numbering from the intact chunks in s,
 * dropping those the cursor is about to overwrite. */
static void resume_cursor(struct fr_ring *r, struct scan *s)
{
	/* The cursor resumes after the newest valid chunk; anything after it
	 * in its segment is older data about to be overwritten. */
	if (s->n > 0) {
		const struct fr_ring_ref *top = &s->c[s->n - 1].ref;
		uint32_t cseg = seg_of(r, top->offset);
		uint64_t cend = top->offset + align8(top->len);
		size_t keep = 0;

		r->cur_seg = cseg;
		r->cur_off = cend - seg_base(r, cseg);
		for (size_t i = 0; i < s->n; i++) {
			const struct fr_ring_ref *ref = &s->c[i].ref;

			if (seg_of(r, ref->offset) == cseg && ref->offset >= cend)
				continue;
			s->c[keep++] = s->c[i];
		}
		s->n = keep;
	} else {
		r->cur_seg = 0;
		r->cur_off = 0;
	}
	/* Numbering resumes after the newest intact chunk, so a torn last
	 * write leaves no hole once it is overwritten. */
	r->next_seq = s->n > 0 ? s->c[s->n - 1].ref.seq + 1 : s->any_seq ? s->max_seq + 1 : 1;
}

int ring_recover(struct fr_ring *r)
{
	struct scan s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.segbuf = malloc(r->segment_size);
	s.zero_stop = malloc(r->nsegments * sizeof(*s.zero_stop));
	if (!s.segbuf || !s.zero_stop) {
		ret = -ENOMEM;
		goto out;
	}
	ret = scan_segments(r, &s);
	if (ret < 0)
		goto out;
	ret = verify_tail(r, &s);
	if (ret < 0)
		goto out;
	keep_intact(r, &s);
	resume_cursor(r, &s);

	/* What a damaged file claims a chunk stands for never reaches over
	 * the chunk before it. */
	for (size_t i = 1; i < s.n; i++) {
		struct fr_ring_ref *ref = &s.c[i].ref;

		if (ref->seq - ref->covers <= s.c[i - 1].ref.seq)
			ref->covers = (uint32_t)(ref->seq - s.c[i - 1].ref.seq - 1);
	}
	ret = ring_idx_reserve(r, s.n + 1);
	if (ret < 0)
		goto out;
	for (size_t i = 0; i < s.n; i++)
		ring_idx_push(r, &s.c[i].ref);
	if (r->journal_size) {
		ret = journal_recover(r, s.n > 0 ? s.c[s.n - 1].ref.seq : 0);
		if (ret < 0)
			goto out;
	}
	if (r->corrupt)
		fr_log_warn("%s: skipped %" PRIu64 " damaged chunk(s)", r->path, r->corrupt);
out:
	free(s.c);
	free(s.segbuf);
	free(s.zero_stop);
	return ret;
}
