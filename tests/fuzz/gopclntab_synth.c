/* The hand-written Go function tables of gopclntab_synth.h, laid out as
 * the Go linker lays out the real ones (cmd/link/internal/ld/pcln.go):
 * header, function names, the compilation units' file offsets, file
 * names, pc-value tables, then the function table and the functions'
 * records. */
#include "tests/fuzz/gopclntab_synth.h"

#include <string.h>

static const char names[] = "main.outer\0main.inner\0main.leaf\0main.other";
enum { NAME_OUTER = 0, NAME_INNER = 11, NAME_LEAF = 22, NAME_OTHER = 32 };
static const char files[] = "a.go\0b.go";

/* pc-value tables: (zig-zag value delta, pc delta) pairs from the value
 * -1 at the entry, ended by a 0. */
static const uint8_t pc_outer_file[] = {2, 0x20, 2, 0x10, 1, 0x10, 0};
static const uint8_t pc_outer_line[] = {22, 0x10, 20, 0x10, 20, 0x20, 0};
static const uint8_t pc_outer_inl[] = {0, 0x10, 2, 0x10, 2, 0x10, 3, 0x10, 0};
static const uint8_t pc_other_file[] = {2, 0x20, 0};
static const uint8_t pc_other_line[] = {82, 0x20, 0};

struct w {
	uint8_t *b;
	size_t at;
	unsigned ptr;
};

static void put(struct w *w, const void *p, size_t n)
{
	memcpy(w->b + w->at, p, n);
	w->at += n;
}

static void put32(struct w *w, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};

	put(w, b, 4);
}

static void putptr(struct w *w, uint64_t v)
{
	put32(w, (uint32_t)v);
	if (w->ptr == 8)
		put32(w, (uint32_t)(v >> 32));
}

static void align(struct w *w, size_t a)
{
	while (w->at % a)
		w->b[w->at++] = 0;
}

/* A function's record: entry, name, pc-value tables, pcdata, funcdata. */
static void put_func(struct w *w, int layout, uint64_t entry, uint32_t name, uint32_t pcfile,
		     uint32_t pcln, uint32_t pcinl, uint64_t inl)
{
	uint8_t tail[4] = {0, 0, 0, pcinl ? 4 : 0}; /* funcID, flag, pad, nfuncdata */

	if (layout >= 118)
		put32(w, (uint32_t)(entry - GO_SYNTH_TEXT));
	else
		putptr(w, entry);
	put32(w, name);
	put32(w, 0); /* args */
	put32(w, 0); /* deferreturn */
	put32(w, 0); /* pcsp */
	put32(w, pcfile);
	put32(w, pcln);
	put32(w, pcinl ? 3 : 0); /* npcdata */
	put32(w, 0);		 /* cuOffset */
	if (layout >= 120)
		put32(w, 1); /* startLine */
	put(w, tail, 4);
	if (!pcinl)
		return;
	put32(w, 0);
	put32(w, 0);
	put32(w, pcinl); /* PCDATA_InlTreeIndex */
	if (layout >= 118) {
		for (int i = 0; i < 3; i++)
			put32(w, UINT32_MAX);
		put32(w, (uint32_t)inl); /* FUNCDATA_InlTree, from gofunc */
		return;
	}
	if (w->ptr == 8)
		align(w, 8);
	for (int i = 0; i < 3; i++)
		putptr(w, 0);
	putptr(w, inl); /* an absolute pointer */
}

/* The inline tree: main.inner called at 0x08, main.leaf at 0x18. */
static void put_tree(struct go_synth *s, int layout)
{
	struct w w = {s->fdata, 8, 4};

	memset(s->fdata, 0xee, 8);
	if (layout >= 120) {
		uint32_t e[2][4] = {{0, NAME_INNER, 0x08, 1}, {0, NAME_LEAF, 0x18, 1}};

		for (int i = 0; i < 2; i++)
			for (int k = 0; k < 4; k++)
				put32(&w, e[i][k]);
	} else {
		/* parent|funcID|pad, file, line, func_, parentPc */
		uint32_t e[2][5] = {{0xffff, 0, 5, NAME_INNER, 0x08}, {0, 0, 15, NAME_LEAF, 0x18}};

		for (int i = 0; i < 2; i++)
			for (int k = 0; k < 5; k++)
				put32(&w, e[i][k]);
	}
	s->flen = w.at;
}

/* .noptrdata: two words of something else, then the module record. */
static void put_module(struct go_synth *s, int layout, unsigned ptr, const uint64_t *off)
{
	struct w w = {s->mod, 0, ptr};
	unsigned gi = layout >= 120 ? 40 : 38;
	uint64_t words[41] = {0};

	words[0] = s->tab_addr;
	for (int i = 0; i < 3; i++) {
		words[1 + 3 * i] = s->tab_addr + off[i];
		words[2 + 3 * i] = words[3 + 3 * i] = 8;
	}
	words[20] = words[22] = GO_SYNTH_TEXT;
	words[21] = words[23] = GO_SYNTH_TEXT + 0x60;
	words[gi - 3] = s->faddr;
	words[gi - 2] = s->faddr + s->flen;
	words[gi - 1] = s->faddr;
	words[gi] = s->faddr;
	putptr(&w, 0x1234);
	putptr(&w, s->tab_addr);
	for (int i = 0; i < 41; i++)
		putptr(&w, words[i]);
	s->mod_len = w.at;
}

void go_synth_build(struct go_synth *s, int layout, unsigned ptr)
{
	struct w w = {s->tab, 0, ptr};
	uint32_t magic = layout >= 120 ? 0xfffffff1u : layout >= 118 ? 0xfffffff0u : 0xfffffffau;
	uint8_t head[4] = {0, 0, 1, (uint8_t)ptr};
	unsigned nw = layout >= 118 ? 8 : 7;
	uint64_t off[5], pcs[5], ftab, fo[2];

	memset(s, 0, sizeof(*s));
	s->tab_addr = 0x4b0000;
	s->faddr = 0x4a0000;
	put_tree(s, layout);
	put32(&w, magic);
	put(&w, head, 4);
	w.at += (size_t)nw * ptr; /* the words, written last */
	off[0] = w.at;
	put(&w, names, sizeof(names));
	align(&w, 4);
	off[1] = w.at;
	put32(&w, 0);
	put32(&w, 5);
	off[2] = w.at;
	put(&w, files, sizeof(files));
	off[3] = w.at;
	put(&w, "", 1); /* offset 0 is no table */
	pcs[0] = w.at - off[3];
	put(&w, pc_outer_file, sizeof(pc_outer_file));
	pcs[1] = w.at - off[3];
	put(&w, pc_outer_line, sizeof(pc_outer_line));
	pcs[2] = w.at - off[3];
	put(&w, pc_outer_inl, sizeof(pc_outer_inl));
	pcs[3] = w.at - off[3];
	put(&w, pc_other_file, sizeof(pc_other_file));
	pcs[4] = w.at - off[3];
	put(&w, pc_other_line, sizeof(pc_other_line));
	align(&w, 8);
	off[4] = ftab = w.at;
	/* The function table: three entries, its records after it. */
	w.at += 3 * (layout >= 118 ? 8 : 2 * (size_t)ptr);
	align(&w, 8);
	fo[0] = w.at - ftab;
	put_func(&w, layout, GO_SYNTH_TEXT, NAME_OUTER, (uint32_t)pcs[0], (uint32_t)pcs[1],
		 (uint32_t)pcs[2], layout >= 118 ? 8 : s->faddr + 8);
	align(&w, 8);
	fo[1] = w.at - ftab;
	put_func(&w, layout, GO_SYNTH_TEXT + 0x40, NAME_OTHER, (uint32_t)pcs[3], (uint32_t)pcs[4],
		 0, 0);
	s->tab_len = w.at;
	w.at = ftab;
	for (int i = 0; i < 3; i++) {
		uint64_t entry = GO_SYNTH_TEXT + (uint64_t)(i == 0 ? 0 : i == 1 ? 0x40 : 0x60);

		if (layout >= 118) {
			put32(&w, (uint32_t)(entry - GO_SYNTH_TEXT));
			put32(&w, (uint32_t)fo[i < 2 ? i : 1]);
		} else {
			putptr(&w, entry);
			putptr(&w, fo[i < 2 ? i : 1]);
		}
	}
	w.at = 8;
	putptr(&w, 2); /* nfunc */
	putptr(&w, 2); /* nfiles */
	if (layout >= 118)
		putptr(&w, GO_SYNTH_TEXT);
	for (int i = 0; i < 5; i++)
		putptr(&w, off[i]);
	if (layout >= 118)
		put_module(s, layout, ptr, off);
}
