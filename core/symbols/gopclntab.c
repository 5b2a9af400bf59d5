/* Go's function table, .gopclntab (see gopclntab.h), as the Go runtime
 * reads it (runtime/symtab.go): a header, the functions' names, the
 * compilation units' file lists, the file names, the pc-value tables, and
 * the function table (entry, offset of the function's record) sorted by
 * entry, with one more entry for the end of the text.
 *
 * A pc-value table is a run of (value delta, pc delta) pairs, both
 * varints, the value delta zig-zag coded and the pc delta in units of the
 * architecture's instruction quantum, starting at the function's entry
 * with the value -1. A function's records list its pc-value tables
 * (pcdata, of which index 2 gives the inlined call an instruction belongs
 * to) and its data (funcdata, of which index 3 is the inline tree).
 *
 * Nothing read from the table is trusted: every offset is checked against
 * the bytes held before it is used, strings must end inside them, and
 * every walk stops at the end of the bytes or after a fixed number of
 * steps, so a forged table costs a bounded time and gives wrong names at
 * worst, for the binary that carries it alone.
 */
#include "core/symbols/gopclntab.h"

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC_116 0xfffffffau
#define MAGIC_118 0xfffffff0u
#define MAGIC_120 0xfffffff1u

#define PCDATA_INL_INDEX 2
#define FUNCDATA_INL_TREE 3
/* Inlined calls followed up from one address at most: a forged tree may
 * loop, a real one is rarely deeper than a dozen. */
#define INLINE_WALK_MAX 64
/* Words of the runtime's module record read (it has more; the fields used
 * are among its first 41). */
#define MODULE_WORDS 41

struct fr_gopclntab {
	uint8_t *tab;
	size_t len;
	uint8_t *fdata; /* where the inline trees are; NULL: none */
	size_t flen;
	uint64_t faddr;
	int layout;	  /* 116, 118, 120 */
	unsigned ptr;	  /* pointer size */
	unsigned quantum; /* instruction size unit of pc deltas */
	uint64_t text;	  /* base of 1.18+ entry offsets */
	uint64_t nfunc;
	/* Offsets in tab of the tables the header points to. */
	uint64_t names, cu, files, pcs, ftab;
};

/* A function's record, read and checked. */
struct func {
	uint64_t entry, end;
	uint64_t at; /* the record's offset in tab */
	int32_t nameoff;
	uint32_t pcsp, pcfile, pcln, npcdata, cuoff;
	uint8_t nfuncdata;
};

static bool get32(const uint8_t *b, size_t len, uint64_t off, uint32_t *v)
{
	if (off > len || len - off < 4)
		return false;
	memcpy(v, b + off, 4);
	*v = le32toh(*v);
	return true;
}

static bool getptr(const uint8_t *b, size_t len, unsigned ptr, uint64_t off, uint64_t *v)
{
	uint32_t w;

	if (ptr == 4) {
		if (!get32(b, len, off, &w))
			return false;
		*v = w;
		return true;
	}
	if (off > len || len - off < 8)
		return false;
	memcpy(v, b + off, 8);
	*v = le64toh(*v);
	return true;
}

int fr_gopclntab_layout(const void *tab, size_t len, unsigned *ptr_size)
{
	const uint8_t *b = tab;
	uint32_t magic;

	if (!get32(b, len, 0, &magic) || len < 8 || b[4] || b[5])
		return -ENOEXEC;
	if ((b[6] != 1 && b[6] != 2 && b[6] != 4) || (b[7] != 4 && b[7] != 8))
		return -ENOEXEC;
	*ptr_size = b[7];
	switch (magic) {
	case MAGIC_116: return 116;
	case MAGIC_118: return 118;
	case MAGIC_120: return 120;
	default: return -ENOEXEC;
	}
}

/* The header's word i (after magic, pads, quantum and pointer size). */
static bool header_word(const uint8_t *b, size_t len, unsigned ptr, unsigned i, uint64_t *v)
{
	return getptr(b, len, ptr, 8 + (uint64_t)i * ptr, v);
}

/* Fills the header's fields of g from the first `readable` bytes of
 * g->tab (the header; offsets are checked against all of g->len).
 * Returns 0 or -EBADMSG. */
static int parse_header(struct fr_gopclntab *g, size_t readable)
{
	unsigned base = g->layout >= 118 ? 3 : 2;
	uint64_t *offs[] = {&g->names, &g->cu, &g->files, &g->pcs, &g->ftab};
	uint64_t text = 0, fent = g->layout >= 118 ? 8 : 2 * (uint64_t)g->ptr;

	g->quantum = g->tab[6];
	if (!header_word(g->tab, readable, g->ptr, 0, &g->nfunc) ||
	    (g->layout >= 118 && !header_word(g->tab, readable, g->ptr, 2, &text)))
		return -EBADMSG;
	for (unsigned i = 0; i < 5; i++)
		if (!header_word(g->tab, readable, g->ptr, base + i, offs[i]) || *offs[i] >= g->len)
			return -EBADMSG;
	/* nfunc + 1 entries of the function table fit in the bytes held. */
	if (g->nfunc >= (g->len - g->ftab) / fent)
		return -EBADMSG;
	if (!g->text)
		g->text = text;
	return 0;
}

struct fr_gopclntab *fr_gopclntab_new(void *tab, size_t len, void *fdata, size_t flen,
				      uint64_t faddr, uint64_t text_start, int *err)
{
	struct fr_gopclntab *g = NULL;
	unsigned ptr = 0;
	int layout = tab ? fr_gopclntab_layout(tab, len, &ptr) : -ENOEXEC;

	*err = layout < 0 ? layout : len > FR_GOPCLNTAB_MAX ? -EFBIG : 0;
	if (*err == 0 && !(g = calloc(1, sizeof(*g))))
		*err = -ENOMEM;
	if (*err < 0) {
		free(tab);
		free(fdata);
		return NULL;
	}
	*g = (struct fr_gopclntab){.tab = tab,
				   .len = len,
				   .fdata = fdata,
				   .flen = fdata ? flen : 0,
				   .faddr = faddr,
				   .layout = layout,
				   .ptr = ptr,
				   .text = text_start};
	*err = parse_header(g, len);
	if (*err < 0) {
		fr_gopclntab_free(g);
		return NULL;
	}
	return g;
}

void fr_gopclntab_free(struct fr_gopclntab *g)
{
	if (!g)
		return;
	free(g->tab);
	free(g->fdata);
	free(g);
}

size_t fr_gopclntab_bytes(const struct fr_gopclntab *g)
{
	return g ? sizeof(*g) + g->len + g->flen : 0;
}

/* Entry i of the function table: the function's entry address and the
 * offset of its record from the table's start. */
static bool ftab_entry(const struct fr_gopclntab *g, uint64_t i, uint64_t *entry, uint64_t *off)
{
	uint32_t e, o;

	if (g->layout >= 118) {
		if (!get32(g->tab, g->len, g->ftab + i * 8, &e) ||
		    !get32(g->tab, g->len, g->ftab + i * 8 + 4, &o))
			return false;
		*entry = g->text + e;
		*off = o;
		return true;
	}
	return getptr(g->tab, g->len, g->ptr, g->ftab + i * 2 * g->ptr, entry) &&
	       getptr(g->tab, g->len, g->ptr, g->ftab + i * 2 * g->ptr + g->ptr, off);
}

/* Size of a record's entry field, and of the fixed part of a record. */
static unsigned entry_size(const struct fr_gopclntab *g)
{
	return g->layout >= 118 ? 4 : g->ptr;
}

static unsigned record_size(const struct fr_gopclntab *g)
{
	return entry_size(g) + (g->layout >= 120 ? 40 : 36);
}

/* Reads and checks the record of function i, which the function table
 * says starts at `entry` and ends at `end`. */
static bool read_func(const struct fr_gopclntab *g, uint64_t off, uint64_t entry, uint64_t end,
		      struct func *f)
{
	uint64_t at = g->ftab + off, e, fe = entry_size(g);
	uint32_t v[8], e32;

	if (off >= g->len || g->len - at < record_size(g))
		return false;
	if (g->layout >= 118) {
		if (!get32(g->tab, g->len, at, &e32))
			return false;
		e = g->text + e32;
	} else if (!getptr(g->tab, g->len, g->ptr, at, &e)) {
		return false;
	}
	/* nameoff, args, deferreturn, pcsp, pcfile, pcln, npcdata, cuOffset */
	for (unsigned i = 0; i < 8; i++)
		if (!get32(g->tab, g->len, at + fe + 4 * i, &v[i]))
			return false;
	*f = (struct func){.entry = e,
			   .end = end,
			   .at = at,
			   .nameoff = (int32_t)v[0],
			   .pcsp = v[3],
			   .pcfile = v[4],
			   .pcln = v[5],
			   .npcdata = v[6],
			   .cuoff = v[7],
			   .nfuncdata = g->tab[at + record_size(g) - 1]};
	/* The record and its pcdata offsets lie in the table. */
	return e == entry && (uint64_t)f->npcdata * 4 <= g->len - at - record_size(g);
}

/* The function covering pc. */
static bool find_func(const struct fr_gopclntab *g, uint64_t pc, struct func *f)
{
	uint64_t lo = 0, hi = g->nfunc + 1, entry, end, off;

	/* The last entry i with entry(i) <= pc: within [lo, hi). */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (!ftab_entry(g, mid, &entry, &off))
			return false;
		if (entry <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if (lo >= g->nfunc || !ftab_entry(g, lo, &entry, &off) || entry > pc ||
	    !ftab_entry(g, lo + 1, &end, &(uint64_t){0}) || pc >= end)
		return false;
	return read_func(g, off, entry, end, f);
}

static bool varint(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	uint32_t r = 0;

	for (unsigned shift = 0; shift < 35; shift += 7) {
		if (*p >= end)
			return false;
		r |= (uint32_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80)) {
			*v = r;
			return true;
		}
	}
	return false;
}

/* Calls cb for each run of the pc-value table at `off` in f: [start,
 * end) and its value, clipped to the function. Returns 0, or cb's error. */
static int pcvalue_runs(const struct fr_gopclntab *g, const struct func *f, uint32_t off,
			int (*cb)(void *arg, uint64_t start, uint64_t end, int32_t value),
			void *arg, uint64_t *budget)
{
	const uint8_t *p, *end = g->tab + g->len, *p0;
	uint64_t pc = f->entry;
	uint32_t val = (uint32_t)-1;
	int ret;

	if (!off || off >= g->len - g->pcs)
		return 0;
	p0 = p = g->tab + g->pcs + off;
	/* Tables that many functions share cannot make the walk quadratic. */
	if ((uint64_t)(end - p) > *budget)
		end = p + *budget;
	for (bool first = true; pc < f->end; first = false) {
		uint32_t dv, dpc;
		uint64_t next;

		if (!varint(&p, end, &dv) || (dv == 0 && !first) || !varint(&p, end, &dpc))
			break;
		val += dv & 1 ? ~(dv >> 1) : dv >> 1;
		next = pc + (uint64_t)dpc * g->quantum;
		next = next > f->end || next < pc ? f->end : next;
		if (next > pc && (ret = cb(arg, pc, next, (int32_t)val)) < 0)
			return ret;
		pc = next;
	}
	*budget -= (uint64_t)(p - p0);
	return 0;
}

int fr_gopclntab_sp_runs(const struct fr_gopclntab *g,
			 int (*cb)(void *arg, uint64_t start, uint64_t end, int32_t sp), void *arg)
{
	uint64_t entry, end, off, budget = g ? 2 * (uint64_t)g->len : 0;
	struct func f;
	int ret;

	for (uint64_t i = 0; g && i < g->nfunc && budget; i++) {
		if (!ftab_entry(g, i, &entry, &off) ||
		    !ftab_entry(g, i + 1, &end, &(uint64_t){0}) || end <= entry ||
		    !read_func(g, off, entry, end, &f))
			continue;
		if ((ret = pcvalue_runs(g, &f, f.pcsp, cb, arg, &budget)) < 0)
			return ret;
	}
	return 0;
}

struct value_at {
	uint64_t target;
	int32_t value;
};

static int value_at(void *arg, uint64_t start, uint64_t end, int32_t value)
{
	struct value_at *v = arg;

	if (v->target < start || v->target >= end)
		return 0;
	v->value = value;
	return -EEXIST; /* found: the walk stops */
}

/* The value of the pc-value table at offset `off` of pctab for `target`
 * in function f, or -1. */
static int32_t pcvalue(const struct fr_gopclntab *g, const struct func *f, uint32_t off,
		       uint64_t target)
{
	struct value_at v = {target, -1};
	uint64_t budget = g->len;

	pcvalue_runs(g, f, off, value_at, &v, &budget);
	return v.value;
}

/* A NUL-terminated string at offset `off` of the table `base`. */
static const char *string_at(const struct fr_gopclntab *g, uint64_t base, uint64_t off)
{
	uint64_t at = base + off;

	if (off >= g->len || at >= g->len || !memchr(g->tab + at, 0, g->len - at))
		return NULL;
	return (const char *)g->tab + at;
}

static const char *func_name(const struct fr_gopclntab *g, int32_t nameoff)
{
	return nameoff < 0 ? NULL : string_at(g, g->names, (uint64_t)nameoff);
}

/* File and line of pc in f into fr. */
static void file_line(const struct fr_gopclntab *g, const struct func *f, uint64_t pc,
		      struct fr_dwarf_frame *fr)
{
	int32_t fileno = pcvalue(g, f, f->pcfile, pc), line = pcvalue(g, f, f->pcln, pc);
	uint32_t foff;

	fr->file = NULL;
	fr->line = line > 0 ? (uint32_t)line : 0;
	if (fileno >= 0 &&
	    get32(g->tab, g->len, g->cu + ((uint64_t)f->cuoff + (uint64_t)fileno) * 4, &foff) &&
	    foff != UINT32_MAX)
		fr->file = string_at(g, g->files, foff);
}

int fr_gopclntab_find(const struct fr_gopclntab *g, const char *name, uint64_t *entry,
		      uint64_t *end)
{
	uint64_t e, next, off;
	struct func f;
	const char *n;

	for (uint64_t i = 0; g && i < g->nfunc; i++) {
		if (!ftab_entry(g, i, &e, &off) || !ftab_entry(g, i + 1, &next, &(uint64_t){0}) ||
		    next <= e || !read_func(g, off, e, next, &f) ||
		    !(n = func_name(g, f.nameoff)) || strcmp(n, name) != 0)
			continue;
		*entry = e;
		*end = next;
		return 0;
	}
	return -ENOENT;
}

int fr_gopclntab_sp_at(const struct fr_gopclntab *g, uint64_t pc, int32_t *sp)
{
	struct func f;
	int32_t v;

	if (!g || !find_func(g, pc, &f))
		return -ENOENT;
	v = pcvalue(g, &f, f.pcsp, pc);
	if (v < 0)
		return -ENOENT;
	*sp = v;
	return 0;
}

int fr_gopclntab_func(const struct fr_gopclntab *g, uint64_t pc, const char **name, uint64_t *entry)
{
	struct func f;

	if (!g || !find_func(g, pc, &f) || !(*name = func_name(g, f.nameoff)))
		return -ENOENT;
	if (entry)
		*entry = f.entry;
	return 0;
}

/* The inline tree of f: its offset in g->fdata and how many entries fit,
 * or false. */
static bool inline_tree(const struct fr_gopclntab *g, const struct func *f, unsigned esize,
			uint64_t *at, uint64_t *n)
{
	uint64_t fd = f->at + record_size(g) + (uint64_t)f->npcdata * 4, v = 0;
	uint32_t off;

	if (!g->fdata || f->nfuncdata <= FUNCDATA_INL_TREE)
		return false;
	if (g->layout >= 118) {
		/* Offsets from moduledata.gofunc; all ones: none. */
		if (!get32(g->tab, g->len, fd + 4 * FUNCDATA_INL_TREE, &off) || off == UINT32_MAX)
			return false;
		v = off;
	} else {
		/* Absolute pointers, aligned to a pointer's size. */
		if (g->ptr == 8 && (fd & 4))
			fd += 4;
		if (!getptr(g->tab, g->len, g->ptr, fd + (uint64_t)g->ptr * FUNCDATA_INL_TREE,
			    &v) ||
		    v < g->faddr)
			return false;
		v -= g->faddr;
	}
	if (v >= g->flen)
		return false;
	*at = v;
	*n = (g->flen - v) / esize;
	return *n > 0;
}

/* The inlined call at index ix of the tree at `tree`: its name and the
 * offset from the entry of the instruction that stands for the call. */
static bool inline_call(const struct fr_gopclntab *g, uint64_t tree, unsigned esize, uint64_t ix,
			const char **name, int32_t *parent_pc)
{
	uint64_t at = tree + ix * esize;
	uint32_t nameoff, ppc;
	/* 1.20+: funcID, pad, nameOff, parentPc, startLine; before: parent,
	 * funcID, pad, file, line, func_, parentPc. */
	unsigned name_at = esize == 16 ? 4 : 12, ppc_at = esize == 16 ? 8 : 16;

	if (!get32(g->fdata, g->flen, at + name_at, &nameoff) ||
	    !get32(g->fdata, g->flen, at + ppc_at, &ppc))
		return false;
	*name = func_name(g, (int32_t)nameoff);
	*parent_pc = (int32_t)ppc;
	return *name != NULL;
}

int fr_gopclntab_lookup(const struct fr_gopclntab *g, uint64_t pc, struct fr_dwarf_frame *out,
			size_t cap)
{
	unsigned esize = g && g->layout >= 120 ? 16 : 20;
	uint64_t tree = 0, ntree = 0, tracepc = pc;
	uint32_t ixoff = 0;
	struct func f;
	size_t n = 0;

	if (!g || !cap || !find_func(g, pc, &f) ||
	    !(out[cap - 1].function = func_name(g, f.nameoff)))
		return -ENOENT;
	if (f.npcdata > PCDATA_INL_INDEX && inline_tree(g, &f, esize, &tree, &ntree))
		get32(g->tab, g->len, f.at + record_size(g) + 4 * PCDATA_INL_INDEX, &ixoff);
	for (unsigned k = 0; ixoff && k < INLINE_WALK_MAX; k++) {
		int32_t ix = pcvalue(g, &f, ixoff, tracepc), ppc;
		const char *name;

		if (ix < 0 || (uint64_t)ix >= ntree ||
		    !inline_call(g, tree, esize, ix, &name, &ppc))
			break;
		if (n < cap - 1) {
			out[n].function = name;
			file_line(g, &f, tracepc, &out[n]);
			n++;
		}
		/* The caller's frame is at the call, inside the function. */
		if (ppc < 0 || (uint64_t)ppc >= f.end - f.entry)
			break;
		tracepc = f.entry + (uint64_t)ppc;
	}
	out[n].function = func_name(g, f.nameoff);
	file_line(g, &f, tracepc, &out[n]);
	return (int)n + 1;
}

/* Whether the module record at `w` (MODULE_WORDS words) is the one of
 * table `tab` in the sections `s`, with gofunc at word `gi`. */
static bool module_ok(const uint64_t *w, const struct fr_gopclntab *t,
		      const struct fr_go_sections *s, unsigned gi)
{
	uint64_t text = w[22], etext = w[23], types = w[gi - 3], gofunc = w[gi];

	return w[1] == s->tab_addr + t->names && w[4] == s->tab_addr + t->cu &&
	       w[7] == s->tab_addr + t->files && text >= s->text && text <= etext &&
	       etext <= s->etext && w[20] >= text && w[21] <= etext && gofunc >= s->rodata &&
	       gofunc < s->erodata && types >= s->rodata && types <= gofunc;
}

int fr_gopclntab_gofunc(const void *head, size_t head_len, size_t tab_len, const void *data,
			size_t len, const struct fr_go_sections *secs, uint64_t *gofunc,
			uint64_t *text_start)
{
	struct fr_gopclntab t = {.tab = (uint8_t *)head, .len = tab_len};
	uint64_t w[MODULE_WORDS];
	unsigned gi;

	t.layout = fr_gopclntab_layout(head, head_len < tab_len ? head_len : tab_len, &t.ptr);
	if (t.layout < 118 || parse_header(&t, head_len < tab_len ? head_len : tab_len) < 0)
		return -ENOENT;
	/* moduledata.gofunc: after covctr, ecovctr from 1.20. */
	gi = t.layout >= 120 ? 40 : 38;
	for (uint64_t off = 0;
	     len >= (uint64_t)MODULE_WORDS * t.ptr && off <= len - (uint64_t)MODULE_WORDS * t.ptr;
	     off += t.ptr) {
		if (!getptr(data, len, t.ptr, off, &w[0]) || w[0] != secs->tab_addr)
			continue;
		for (unsigned i = 1; i < MODULE_WORDS; i++)
			getptr(data, len, t.ptr, off + (uint64_t)i * t.ptr, &w[i]);
		if (module_ok(w, &t, secs, gi)) {
			*gofunc = w[gi];
			*text_start = w[22];
			return 0;
		}
	}
	return -ENOENT;
}
