/* The symbol cache's Python names of a process (core/symbols/pycodes.h):
 * its encoder, used by the recorder, and its parser, used by queries on a
 * file the recorder wrote but kept in a directory a disk or a bug could
 * spoil: parsed as untrusted bytes.
 */
#include "core/symbols/pycodes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util/fs.h"
#include "core/util/le.h"

#define MAGIC_LEN 8
/* A record's fixed part: code, first line, kind and three lengths. */
#define REC_FIXED (8 + 4 + 1 + 2 + 2 + 4)

struct fr_pycodes {
	char version[FR_PYCODES_VERSION_MAX];
	char problem[FR_PYCODES_PROBLEM_MAX];
	struct fr_pycode *v;
	size_t n;
	char *arena; /* the records' names and line tables */
};

/* ---- encoding ---- */

/* The length of s cut to fewer than `cap` bytes, at a character's start. */
static size_t cut(const char *s, size_t cap)
{
	size_t n = s ? strlen(s) : 0;

	if (n < cap)
		return n;
	n = cap - 1;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

static size_t rec_size(const struct fr_pycode *r)
{
	uint32_t lt = r->linetable && r->nlinetable <= FR_PY_LINETABLE_MAX ? r->nlinetable : 0;

	return REC_FIXED + cut(r->qualname, FR_PY_NAME_MAX) + cut(r->file, FR_PY_FILE_MAX) + lt;
}

static uint8_t *put_bytes(uint8_t *w, const void *s, size_t n)
{
	if (n)
		memcpy(w, s, n);
	return w + n;
}

static uint8_t *put_rec(uint8_t *w, const struct fr_pycode *r)
{
	size_t q = cut(r->qualname, FR_PY_NAME_MAX), f = cut(r->file, FR_PY_FILE_MAX);
	uint32_t lt = r->linetable && r->nlinetable <= FR_PY_LINETABLE_MAX ? r->nlinetable : 0;

	fr_put_le64(w, r->code);
	fr_put_le32(w + 8, (uint32_t)r->firstline);
	w[12] = r->kind;
	fr_put_le16(w + 13, (uint16_t)q);
	w = put_bytes(w + 15, r->qualname, q);
	fr_put_le16(w, (uint16_t)f);
	w = put_bytes(w + 2, r->file, f);
	fr_put_le32(w, lt);
	return put_bytes(w + 4, r->linetable, lt);
}

int fr_pycodes_encode(const char *version, const char *problem, const struct fr_pycode *recs,
		      size_t n, uint64_t max_bytes, uint8_t **out, size_t *len, size_t *kept)
{
	size_t vl = cut(version, FR_PYCODES_VERSION_MAX), pl = cut(problem, FR_PYCODES_PROBLEM_MAX);
	size_t size = MAGIC_LEN + 1 + vl + 2 + pl + 4, k = 0;
	uint8_t *buf, *w;

	if (max_bytes > FR_PYCODES_MAX_SIZE)
		max_bytes = FR_PYCODES_MAX_SIZE;
	for (; k < n && k < FR_PYCODES_MAX_CODES; k++) {
		size_t r = rec_size(&recs[k]);

		if (size + r > max_bytes)
			break;
		size += r;
	}
	if (!(buf = malloc(size)))
		return -ENOMEM;
	w = put_bytes(buf, FR_PYCODES_MAGIC, MAGIC_LEN);
	*w++ = (uint8_t)vl;
	w = put_bytes(w, version, vl);
	fr_put_le16(w, (uint16_t)pl);
	w = put_bytes(w + 2, problem, pl);
	fr_put_le32(w, (uint32_t)k);
	w += 4;
	for (size_t i = 0; i < k; i++)
		w = put_rec(w, &recs[i]);
	*out = buf;
	*len = (size_t)(w - buf);
	*kept = k;
	return 0;
}

/* ---- parsing ---- */

struct rd {
	const uint8_t *p, *end;
};

/* Takes `n` bytes: NULL when fewer are left. */
static const uint8_t *take(struct rd *r, size_t n)
{
	const uint8_t *at = r->p;

	if ((size_t)(r->end - r->p) < n)
		return NULL;
	r->p += n;
	return at;
}

/* Copies a string of `n` bytes (below `cap`) from the file into the
 * arena at *a, NUL-terminated. Returns it, or NULL. */
static const char *take_str(struct rd *r, size_t n, size_t cap, char **a)
{
	const uint8_t *s = n < cap ? take(r, n) : NULL;
	char *out = *a;

	if (!s)
		return NULL;
	memcpy(out, s, n);
	out[n] = '\0';
	*a += n + 1;
	return out;
}

static int parse_rec(struct rd *r, struct fr_pycode *c, char **a)
{
	const uint8_t *h = take(r, 15), *l;
	uint32_t n;

	if (!h)
		return -EBADMSG;
	c->code = fr_get_le64(h);
	c->firstline = (int32_t)fr_get_le32(h + 8);
	c->kind = h[12];
	if (!(c->qualname = take_str(r, fr_get_le16(h + 13), FR_PY_NAME_MAX, a)) ||
	    !(l = take(r, 2)) || !(c->file = take_str(r, fr_get_le16(l), FR_PY_FILE_MAX, a)) ||
	    !(l = take(r, 4)))
		return -EBADMSG;
	n = fr_get_le32(l);
	if (n > FR_PY_LINETABLE_MAX || !(l = take(r, n)))
		return -EBADMSG;
	c->nlinetable = n;
	c->linetable = n ? memcpy(*a, l, n) : NULL;
	*a += n;
	return 0;
}

static int by_code(const void *x, const void *y)
{
	const struct fr_pycode *a = x, *b = y;

	if (a->code != b->code)
		return a->code < b->code ? -1 : 1;
	/* The later record wins: the one further in the arena. */
	return a->qualname < b->qualname ? -1 : a->qualname > b->qualname;
}

/* Parses the header into p. Returns the number of records or -EBADMSG. */
static int64_t parse_header(struct rd *r, struct fr_pycodes *p)
{
	const uint8_t *m = take(r, MAGIC_LEN), *l;
	size_t n;

	if (!m || memcmp(m, FR_PYCODES_MAGIC, MAGIC_LEN) != 0 || !(l = take(r, 1)) ||
	    *l >= FR_PYCODES_VERSION_MAX || !(m = take(r, *l)))
		return -EBADMSG;
	memcpy(p->version, m, *l);
	p->version[*l] = '\0';
	if (!(l = take(r, 2)) || (n = fr_get_le16(l)) >= FR_PYCODES_PROBLEM_MAX ||
	    !(m = take(r, n)))
		return -EBADMSG;
	memcpy(p->problem, m, n);
	p->problem[n] = '\0';
	if (!(l = take(r, 4)) || fr_get_le32(l) > FR_PYCODES_MAX_CODES)
		return -EBADMSG;
	n = fr_get_le32(l);
	/* Each record takes its fixed part at least. */
	if (n > (size_t)(r->end - r->p) / REC_FIXED)
		return -EBADMSG;
	return (int64_t)n;
}

int fr_pycodes_parse(const uint8_t *buf, size_t len, struct fr_pycodes **out)
{
	struct rd r = {buf, buf + len};
	struct fr_pycodes *p = calloc(1, sizeof(*p));
	int64_t n;
	char *a;
	int ret = -ENOMEM;

	if (!p)
		return -ENOMEM;
	if ((n = parse_header(&r, p)) < 0) {
		ret = (int)n;
		goto err;
	}
	/* Every string gets a NUL: at most two more bytes a record. */
	p->v = calloc(n ? (size_t)n : 1, sizeof(*p->v));
	p->arena = malloc(len + 2 * (size_t)n + 1);
	if (!p->v || !p->arena)
		goto err;
	a = p->arena;
	for (p->n = 0; p->n < (size_t)n; p->n++)
		if ((ret = parse_rec(&r, &p->v[p->n], &a)) < 0)
			goto err;
	if (r.p != r.end) {
		ret = -EBADMSG;
		goto err;
	}
	qsort(p->v, p->n, sizeof(*p->v), by_code);
	/* One record an address: the last of each run. */
	size_t k = 0;

	for (size_t i = 0; i < p->n; i++) {
		if (k && p->v[k - 1].code == p->v[i].code)
			k--;
		p->v[k++] = p->v[i];
	}
	p->n = k;
	*out = p;
	return 0;
err:
	fr_pycodes_free(p);
	return ret;
}

int fr_pycodes_load(int fd, struct fr_pycodes **out)
{
	struct stat st;
	uint8_t *buf;
	ssize_t n;
	int ret;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADMSG;
	if ((uint64_t)st.st_size > FR_PYCODES_MAX_SIZE)
		return -EFBIG;
	if (!(buf = malloc(st.st_size ? (size_t)st.st_size : 1)))
		return -ENOMEM;
	n = fr_pread_full(fd, buf, (size_t)st.st_size, 0);
	ret = n < 0 ? (int)n : fr_pycodes_parse(buf, (size_t)n, out);
	free(buf);
	return ret;
}

const char *fr_pycodes_version(const struct fr_pycodes *p)
{
	return p->version;
}

const char *fr_pycodes_problem(const struct fr_pycodes *p)
{
	return p->problem;
}

size_t fr_pycodes_count(const struct fr_pycodes *p)
{
	return p->n;
}

const struct fr_pycode *fr_pycodes_at(const struct fr_pycodes *p, size_t i)
{
	return i < p->n ? &p->v[i] : NULL;
}

const struct fr_pycode *fr_pycodes_find(const struct fr_pycodes *p, uint64_t code)
{
	size_t lo = 0, hi = p ? p->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->v[mid].code < code)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < (p ? p->n : 0) && p->v[lo].code == code ? &p->v[lo] : NULL;
}

void fr_pycodes_free(struct fr_pycodes *p)
{
	if (!p)
		return;
	free(p->v);
	free(p->arena);
	free(p);
}

int fr_symcache_python_name(char *buf, size_t len, const char *dir, uint32_t pid, int64_t start_ns,
			    uint32_t owner)
{
	const char *sep = dir ? "/" : "";
	int n = owner ? snprintf(buf, len, "%s%spython-%u-%lld.u%u.codes", dir ? dir : "", sep, pid,
				 (long long)start_ns, owner)
		      : snprintf(buf, len, "%s%spython-%u-%lld.codes", dir ? dir : "", sep, pid,
				 (long long)start_ns);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
