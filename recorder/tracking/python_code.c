/* A CPython code object's names and lines, read from a process's memory
 * (recorder/tracking/python_read.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/le.h"
#include "recorder/tracking/python_read.h"

/* The three objects a code object's names and lines are read from. */
enum { NAME, FILE_, LINES, NOBJ };

static int mem_read(const struct fr_py_mem *m, struct fr_py_stats *st, uint64_t a, void *b,
		    size_t n)
{
	st->reads++;
	return m->read(m->arg, a, b, n);
}

/* Reads n ranges with one readv when the memory has it; ok[i]: which
 * read whole (those after the first that fails are read one by one). */
static void mem_readv(const struct fr_py_mem *m, struct fr_py_stats *st, size_t n,
		      const uint64_t *addr, const size_t *len, void **buf, bool *ok)
{
	size_t got = 0;

	if (m->readv) {
		int ret = m->readv(m->arg, n, addr, len, buf);

		st->reads++;
		got = ret < 0 || (size_t)ret > n ? 0 : (size_t)ret;
	}
	for (size_t i = 0; i < n; i++)
		ok[i] = i < got || !len[i] || mem_read(m, st, addr[i], buf[i], len[i]) == 0;
}

/* ---- strings ---- */

/* The length of the longest prefix of s[0, n) made of whole UTF-8
 * characters with no NUL; -1 when a character is broken before the end
 * (a truncated last one is only cut off). */
static long utf8_prefix(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];
		size_t k = c < 0x80		? 1
			   : (c & 0xe0) == 0xc0 ? 2
			   : (c & 0xf0) == 0xe0 ? 3
			   : (c & 0xf8) == 0xf0 ? 4
						: 0;

		if (!c || !k || (k == 2 && c < 0xc2))
			return -1;
		if (k > n - i)
			return (long)i;
		for (size_t j = 1; j < k; j++)
			if ((s[i + j] & 0xc0) != 0x80)
				return -1;
		i += k;
	}
	return (long)i;
}

/* Where the body of the str whose header (`hdr`, read from `obj`) says
 * is, how much of it a name of `cap` - 1 bytes can use, and in what
 * form (*kind: 0 UTF-8, else bytes a code point: latin-1, UCS-2,
 * UCS-4): an ASCII compact str's bytes follow its header; another
 * compact str's UTF-8 copy if it made one, else its code points, which
 * follow the longer header. Returns NULL, or the marker to give instead
 * (a str not compact, or its header out of its bounds). */
static const char *str_body(const struct fr_py_layout *l, const uint8_t *hdr, uint64_t obj,
			    size_t cap, uint64_t *addr, size_t *len, unsigned *kind)
{
	uint32_t state = fr_get_le32(hdr + l->str_state);
	uint64_t n = fr_get_le64(hdr + l->str_length);
	/* interned:2, kind:3, compact:1, ascii:1 (cpython/unicodeobject.h) */
	unsigned k = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;

	*kind = 0;
	if (!compact || (k != 1 && k != 2 && k != 4) || (ascii && k != 1))
		return FR_PY_NAME_BADSTR;
	if (ascii)
		*addr = obj + (uint64_t)l->str_ascii_size;
	else if (l->str_utf8 >= 0 && fr_get_le64(hdr + l->str_utf8)) {
		n = fr_get_le64(hdr + l->str_utf8_len);
		*addr = fr_get_le64(hdr + l->str_utf8);
	} else {
		*addr = obj + (uint64_t)l->str_compact_size;
		*kind = k;
	}
	/* At most cap - 1 code points, each of *kind bytes. */
	*len = (size_t)(n < cap - 1 ? n : cap - 1) * (*kind ? *kind : 1);
	return NULL;
}

/* The code points of a str's body (`n` bytes at `b`, `kind` bytes each)
 * as UTF-8 into out (at most cap - 1 bytes, whole characters): false
 * for a NUL, a lone surrogate or a point past U+10FFFF. */
static bool str_encode(const uint8_t *b, size_t n, unsigned kind, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i + kind <= n; i += kind) {
		uint32_t c = kind == 1 ? b[i] : kind == 2 ? fr_get_le16(b + i) : fr_get_le32(b + i);
		size_t w = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;

		if (!c || (c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
			return false;
		if (w > cap - 1 - o)
			break;
		if (w == 1)
			out[o++] = (char)c;
		else {
			out[o++] = (char)((w == 2   ? 0xc0
					   : w == 3 ? 0xe0
						    : 0xf0) |
					  (c >> (6 * (w - 1))));
			for (size_t j = w - 1; j-- > 0;)
				out[o++] = (char)(0x80 | ((c >> (6 * j)) & 0x3f));
		}
	}
	out[o] = '\0';
	return true;
}

/* Copies the body read (`n` bytes at `b`, in the form `kind`) into out
 * (`cap` bytes), checked. */
static void str_take(const uint8_t *b, size_t n, unsigned kind, char *out, size_t cap)
{
	long ok = kind ? 0 : utf8_prefix(b, n);

	if (kind ? !str_encode(b, n, kind, out, cap) : ok < 0) {
		strcpy(out, FR_PY_NAME_BADSTR);
		return;
	}
	if (!kind) {
		memcpy(out, b, (size_t)ok);
		out[ok] = '\0';
	}
}

/* ---- the code object ---- */

struct objs {
	uint64_t at[NOBJ];
	uint8_t hdr[NOBJ][FR_PY_STRUCT_MAX];
	uint64_t addr[NOBJ];
	size_t len[NOBJ];
	bool ok[NOBJ];
	void *buf[NOBJ];
	unsigned kind[NOBJ];
	/* Bodies: up to cap - 1 code points of 4 bytes. */
	uint8_t name[4 * FR_PY_NAME_MAX], file[4 * FR_PY_FILE_MAX];
};

/* The headers of the names and the line table, in one readv. */
static void read_headers(const struct fr_python_exe *x, const struct fr_py_mem *m,
			 struct fr_py_stats *st, struct objs *o)
{
	const struct fr_py_layout *l = &x->layout;
	size_t strlen_ = (size_t)l->str_compact_size;
	size_t lines =
		(size_t)(l->bytes_size + 8 > l->bytes_data ? l->bytes_size + 8 : l->bytes_data);

	for (int i = 0; i < NOBJ; i++) {
		o->addr[i] = o->at[i];
		o->len[i] = o->at[i] ? (i == LINES ? lines : strlen_) : 0;
		o->buf[i] = o->hdr[i];
	}
	mem_readv(m, st, NOBJ, o->addr, o->len, o->buf, o->ok);
	for (int i = 0; i < NOBJ; i++)
		o->ok[i] = o->ok[i] && o->at[i];
}

/* Where each body is, then all of them in one readv. */
static int read_bodies(const struct fr_python_exe *x, const struct fr_py_mem *m,
		       struct fr_py_stats *st, struct objs *o, struct fr_py_code *c)
{
	const struct fr_py_layout *l = &x->layout;
	const char *mark[NOBJ] = {FR_PY_NAME_UNREADABLE, FR_PY_NAME_UNREADABLE, NULL};
	size_t cap[2] = {FR_PY_NAME_MAX, FR_PY_FILE_MAX};
	uint64_t n;

	for (int i = 0; i < LINES; i++)
		if (o->ok[i])
			mark[i] = str_body(l, o->hdr[i], o->at[i], cap[i], &o->addr[i], &o->len[i],
					   &o->kind[i]);
	o->buf[NAME] = o->name;
	o->buf[FILE_] = o->file;
	n = o->ok[LINES] ? fr_get_le64(o->hdr[LINES] + l->bytes_size) : 0;
	o->len[LINES] = 0;
	if (n && n <= FR_PY_LINETABLE_MAX) {
		if (!(c->linetable = malloc((size_t)n)))
			return -ENOMEM;
		o->addr[LINES] = o->at[LINES] + (uint64_t)l->bytes_data;
		o->len[LINES] = (size_t)n;
		o->buf[LINES] = c->linetable;
	}
	for (int i = 0; i < LINES; i++)
		if (mark[i])
			o->len[i] = 0;
	mem_readv(m, st, NOBJ, o->addr, o->len, o->buf, o->ok);
	c->nlinetable = o->ok[LINES] ? (uint32_t)o->len[LINES] : 0;
	if (!c->nlinetable) {
		free(c->linetable);
		c->linetable = NULL;
	}
	for (int i = 0; i < LINES; i++) {
		char *out = i == NAME ? c->qualname : c->file;

		if (mark[i] || !o->ok[i])
			strcpy(out, mark[i] ? mark[i] : FR_PY_NAME_UNREADABLE);
		else
			str_take(o->buf[i], o->len[i], o->kind[i], out, cap[i]);
	}
	return 0;
}

int fr_py_code_read(const struct fr_python_exe *x, uint64_t bias, const struct fr_py_mem *mem,
		    uint64_t code, struct fr_py_code *c)
{
	const struct fr_py_layout *l = &x->layout;
	struct fr_py_stats st = {0};
	int32_t name_off = l->co_qualname >= 0 ? l->co_qualname : l->co_name;
	uint8_t co[FR_PY_STRUCT_MAX];
	struct objs *o;
	size_t need;
	int ret;

	memset(c, 0, sizeof(*c));
	if (name_off < 0 || l->co_filename < 0 || l->co_linetable < 0 || l->co_firstlineno < 0 ||
	    name_off > 4088 || l->co_filename > 4088 || l->co_linetable > 4088 ||
	    l->co_firstlineno > 4092 || l->str_compact_size > (int32_t)FR_PY_STRUCT_MAX ||
	    l->str_compact_size < 16 || l->bytes_data > (int32_t)FR_PY_STRUCT_MAX - 8 ||
	    l->bytes_size < 0 || l->bytes_size > (int32_t)FR_PY_STRUCT_MAX - 8)
		return -ENOTSUP;
	/* Up to the last field used: the object may end a mapping. */
	need = (size_t)(l->co_firstlineno + 4);
	for (size_t i = 0; i < 3; i++) {
		int32_t f = i == 0 ? name_off : i == 1 ? l->co_filename : l->co_linetable;

		need = (size_t)f + 8 > need ? (size_t)f + 8 : need;
	}
	if (!code || (code & 7) || mem_read(mem, &st, code, co, need < 16 ? 16 : need) < 0)
		return -EFAULT;
	if (x->code_type && fr_get_le64(co + 8) != x->code_type + bias)
		return -EBADMSG;
	if (!(o = calloc(1, sizeof(*o))))
		return -ENOMEM;
	o->at[NAME] = fr_get_le64(co + name_off);
	o->at[FILE_] = fr_get_le64(co + l->co_filename);
	o->at[LINES] = fr_get_le64(co + l->co_linetable);
	c->firstline = (int32_t)fr_get_le32(co + l->co_firstlineno);
	c->linetable_kind = l->linetable;
	read_headers(x, mem, &st, o);
	ret = read_bodies(x, mem, &st, o, c);
	free(o);
	if (ret < 0)
		fr_py_code_fini(c);
	return ret;
}

void fr_py_code_fini(struct fr_py_code *c)
{
	free(c->linetable);
	memset(c, 0, sizeof(*c));
}
