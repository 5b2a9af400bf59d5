/* The CFI tables (core/unwind/cfi.c) of real files: this test program
 * (built without frame pointers, calling libc through its PLT), libc (its
 * signal trampoline), the vDSO's image in memory, a copy of a program
 * without .eh_frame (argv[1]: -ENOENT) and one whose only CFI is
 * .debug_frame (argv[2]; argv[3] compressed with zlib); bytes that are
 * no x86-64 ELF file (-ENOEXEC); and FDEs made to cost the builder as
 * much as they can. Stack pointer offsets merged into the CFI's gaps. */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/unwind/cfi.h"
#include "tests/unit/check.h"
#include "tests/unit/unwind_self.h"

static struct self_maps maps;

__attribute__((noinline, noclone)) int known_function(int x);
__attribute__((noinline, noclone)) int known_function(int x)
{
	return x * 3 + 1;
}

/* What every table promises: sorted unique pcs, neighbours differ, inside
 * [base, limit), one allocation of the size it says. */
static void check_invariants(const char *what, const struct fr_cfi_table *t)
{
	for (uint32_t i = 1; i < t->nrows; i++) {
		const struct fr_cfi_row *a = &t->rows[i - 1], *b = &t->rows[i];

		CHECK(a->pc < b->pc, "%s: row %u at 0x%x after 0x%x", what, i, b->pc, a->pc);
		CHECK(a->kind != b->kind || a->cfa_off != b->cfa_off || a->fp_off != b->fp_off ||
			      a->fp_rule != b->fp_rule,
		      "%s: rows %u and %u are the same", what, i - 1, i);
	}
	CHECK(t->nrows > 0 && t->base + t->rows[t->nrows - 1].pc < t->limit,
	      "%s: last row beyond the limit", what);
	CHECK(fr_cfi_size(t) == sizeof(*t) + t->nrows * sizeof(t->rows[0]), "%s: size %zu", what,
	      fr_cfi_size(t));
	CHECK(fr_cfi_lookup(t, t->base - 1) == NULL && fr_cfi_lookup(t, t->limit) == NULL,
	      "%s: a row outside [base, limit)", what);
}

static void test_self(void)
{
	const struct self_map *m = self_map_of(&maps, (uint64_t)(uintptr_t)&known_function);
	const struct fr_cfi_row *r;
	uint64_t vaddr = 0;
	unsigned plt = 0;

	CHECK(m && m->table, "no table for this program (%d)", m ? m->err : 0);
	if (!m || !m->table)
		return;
	check_invariants("self", m->table);
	CHECK(m->table->build_id_len == 20, "self: build id of %u bytes", m->table->build_id_len);
	CHECK(fr_cfi_translate(m->table,
			       (uint64_t)(uintptr_t)&known_function - m->start + m->offset,
			       &vaddr) == 0,
	      "self: known_function not in an executable load");
	r = fr_cfi_lookup(m->table, vaddr);
	CHECK(r && r->kind == FR_CFA_SP && r->cfa_off == 8 && r->fp_rule == FR_FP_SAME,
	      "self: at known_function: kind %d off %d rule %d", r ? r->kind : -1,
	      r ? r->cfa_off : 0, r ? r->fp_rule : -1);
	CHECK(fr_cfi_translate(m->table, UINT64_MAX - 8, &vaddr) == -ENOENT,
	      "self: an offset beyond the file translated");
	/* The PLT (this program calls libc through it): the linker's CFA
	 * expression, rsp + 8 until the stub has pushed its index at offset
	 * 11 of each 16-byte entry. */
	for (uint32_t i = 0; i < m->table->nrows; i++) {
		r = &m->table->rows[i];
		if (r->kind != FR_CFA_PLT)
			continue;
		plt++;
		CHECK(r->cfa_off == 8 && r->fp_off == 11, "self: PLT row off %d, from %d",
		      r->cfa_off, r->fp_off);
		CHECK(fr_cfi_lookup(m->table, m->table->base + r->pc + 5) == r,
		      "self: PLT row not found at its address");
	}
	CHECK(plt >= 1, "self: no PLT row");
}

/* libc's __restore_rt: the interrupted rsp at offset 160 of the ucontext
 * (rip right after it, at 168, which cfi.c checked) and rbp at 120. */
static void test_libc(void)
{
	const struct self_map *m = NULL;
	unsigned signal = 0;

	/* By name: a sanitizer's runtime may stand in for libc's symbols. */
	for (int i = 0; i < maps.n && !m; i++)
		if (strstr(maps.map[i].path, "/libc.so"))
			m = &maps.map[i];

	CHECK(m && m->table, "no table for libc (%d)", m ? m->err : 0);
	if (!m || !m->table)
		return;
	check_invariants("libc", m->table);
	for (uint32_t i = 0; i < m->table->nrows; i++) {
		const struct fr_cfi_row *r = &m->table->rows[i];

		if (r->kind != FR_CFA_SIGNAL)
			continue;
		signal++;
		CHECK(r->cfa_off == 160 && r->fp_off == 120, "libc: signal row %d %d", r->cfa_off,
		      r->fp_off);
	}
	CHECK(signal == 1, "libc: %u signal rows", signal);
}

/* The vDSO has no file, but its image is in every process's memory, the
 * same for all of them on one kernel: a recorder can compile its own
 * copy (and match the build id) for the [vdso] of the processes it
 * samples. */
static void test_vdso(void)
{
	const struct self_map *m = NULL;
	struct fr_cfi_table *t = NULL;
	const struct fr_cfi_row *r;
	uint8_t *copy;
	size_t size;
	int err;

	for (int i = 0; i < maps.n && !m; i++)
		if (strcmp(maps.map[i].path, "[vdso]") == 0)
			m = &maps.map[i];
	if (!m) {
		fprintf(stderr, "no [vdso] mapped: not tested\n");
		return;
	}
	/* The executable mapping is the whole image (data pages aside). */
	size = (size_t)(m->end - m->start);
	copy = malloc(size);
	if (!copy)
		return;
	memcpy(copy, (const void *)(uintptr_t)m->start, size);
	err = fr_cfi_build(copy, size, &t);
	CHECK(err == 0, "vdso: %d", err);
	if (t) {
		check_invariants("vdso", t);
		CHECK(t->build_id_len == 20, "vdso: build id of %u bytes", t->build_id_len);
		r = fr_cfi_lookup(t, t->base);
		CHECK(r && r->kind == FR_CFA_SP && r->cfa_off == 8, "vdso: first row");
	}
	fr_cfi_free(t);
	free(copy);
}

/* Whether row `r` is an FR_CFA_SP row at rsp + off with rbp `rule`. */
static int sp_is(const struct fr_cfi_row *r, int32_t off, int rule)
{
	return r && r->kind == FR_CFA_SP && r->cfa_off == off && r->fp_rule == rule;
}

/* This program's CFI merged with stack pointer offsets (as a Go program
 * linked with cgo has them): the CFI's rows wherever it has one, the
 * offsets' rows clipped to the gaps before, between and after the FDEs,
 * FR_CFA_UNDEF where neither covers; without the CFI, the offsets alone. */
static void test_merged(void)
{
	const struct self_map *m = self_map_of(&maps, (uint64_t)(uintptr_t)&known_function);
	struct fr_cfi_table *t = NULL;
	uint64_t b, l, kf = 0;
	size_t size = 0;
	void *data = NULL;

	if (!m || !m->table || self_read_file(m->path, &data, &size) < 0 ||
	    fr_cfi_translate(m->table, (uint64_t)(uintptr_t)&known_function - m->start + m->offset,
			     &kf) < 0) {
		CHECK(0, "merged: no table or file for this program");
		free(data);
		return;
	}
	b = m->table->base;
	l = m->table->limit;
	const struct fr_cfi_sp_range v[] = {
		{b - 0x40, b - 0x20, 8}, {b - 0x10, l + 0x10, 16}, {b, b + 8, 0}, /* unsorted */
		{l + 0x20, l + 0x40, 0}, {l + 0x40, l + 0x50, 12}, /* not of whole words */
	};
	CHECK(fr_cfi_build_merged(data, size, v, 5, &t) == 0 && t, "merged: no table");
	if (t) {
		check_invariants("merged", t);
		CHECK(t->base == b - 0x40 && t->limit == l + 0x50,
		      "merged: [0x%" PRIx64 ", 0x%" PRIx64 ")", t->base, t->limit);
		for (uint32_t i = 0; i < m->table->nrows; i++) {
			const struct fr_cfi_row *c = &m->table->rows[i];
			const struct fr_cfi_row *r = fr_cfi_lookup(t, m->table->base + c->pc);

			if (c->kind != FR_CFA_UNDEF)
				CHECK(r && r->kind == c->kind && r->cfa_off == c->cfa_off &&
					      r->fp_off == c->fp_off && r->fp_rule == c->fp_rule,
				      "merged: CFI row at 0x%x lost", c->pc);
		}
		CHECK(sp_is(fr_cfi_lookup(t, b - 0x30), 16, FR_FP_SAVED), "merged: before the CFI");
		CHECK(!fr_cfi_lookup(t, b - 0x18), "merged: a row where none is");
		CHECK(sp_is(fr_cfi_lookup(t, b - 8), 24, FR_FP_SAVED), "merged: clipped before");
		CHECK(sp_is(fr_cfi_lookup(t, kf), 8, FR_FP_SAME), "merged: CFI lost at a function");
		CHECK(sp_is(fr_cfi_lookup(t, l + 8), 24, FR_FP_SAVED), "merged: clipped after");
		CHECK(!fr_cfi_lookup(t, l + 0x18), "merged: a row after the CFI where none is");
		CHECK(sp_is(fr_cfi_lookup(t, l + 0x30), 8, FR_FP_SAME), "merged: after the CFI");
		CHECK(!fr_cfi_lookup(t, l + 0x48), "merged: an offset of half a word");
	}
	fr_cfi_free(t);
	t = NULL;
	CHECK(fr_cfi_build_sp(data, size, v, 5, &t) == 0 && t, "offsets alone: no table");
	if (t) {
		check_invariants("offsets alone", t);
		CHECK(sp_is(fr_cfi_lookup(t, kf), 24, FR_FP_SAVED) && t->limit == l + 0x50,
		      "offsets alone: not the offsets' rows");
	}
	fr_cfi_free(t);
	free(data);
}

static void test_not_elf(void)
{
	static const char text[] = "#!/bin/sh\necho this is no ELF file\n";
	unsigned char elf32[sizeof(Elf64_Ehdr)] = {0x7f, 'E', 'L', 'F', ELFCLASS32, ELFDATA2LSB, 1};
	struct fr_cfi_table *t = (void *)1;

	CHECK(fr_cfi_build(text, sizeof(text), &t) == -ENOEXEC && !t, "text: not -ENOEXEC");
	CHECK(fr_cfi_build(elf32, sizeof(elf32), &t) == -ENOEXEC && !t, "ELF32: not -ENOEXEC");
	CHECK(fr_cfi_build(text, 0, &t) == -ENOEXEC && !t, "empty: not -ENOEXEC");
}

static void test_file(const char *path, int want, int from_debug_frame)
{
	struct fr_cfi_table *t = NULL;
	void *data = NULL;
	size_t size = 0;
	int err;

	if (self_read_file(path, &data, &size) < 0) {
		CHECK(0, "%s: cannot read", path);
		return;
	}
	err = fr_cfi_build(data, size, &t);
	CHECK(err == want, "%s: %d, want %d", path, err, want);
	if (want == -ENOENT) {
		const struct fr_cfi_sp_range v = {0x1000, 0x2000, 8};
		struct fr_cfi_table *g = NULL;

		CHECK(fr_cfi_build_merged(data, size, &v, 1, &g) == 0 && g && g->nrows == 1 &&
			      g->base == 0x1000 && g->limit == 0x2000 && !g->from_debug_frame &&
			      sp_is(fr_cfi_lookup(g, 0x1800), 16, FR_FP_SAVED),
		      "%s: merged without CFI: not the offsets alone", path);
		fr_cfi_free(g);
	}
	if (t) {
		const struct fr_cfi_row *r = fr_cfi_lookup(t, t->base);

		check_invariants(path, t);
		CHECK(t->from_debug_frame == from_debug_frame, "%s: from .debug_frame: %d", path,
		      t->from_debug_frame);
		/* The first FDE starts a function: the return address on top
		 * of the stack. */
		CHECK(r && r->kind == FR_CFA_SP && r->cfa_off == 8, "%s: first row %d %d", path,
		      r ? r->kind : -1, r ? r->cfa_off : 0);
	}
	/* Cut short anywhere, the file gives an error or a table, never a
	 * crash. */
	for (size_t cut = size / 8; cut < size; cut += size / 8) {
		struct fr_cfi_table *c = NULL;

		err = fr_cfi_build(data, cut, &c);
		CHECK((err == 0) == (c != NULL), "%s cut at %zu: %d", path, cut, err);
		fr_cfi_free(c);
	}
	fr_cfi_free(t);
	free(data);
}

/* ---- hostile FDEs, in a minimal ELF file made here ---- */

#define H_EH_OFF 0x100 /* .eh_frame at this offset and address */
#define H_FUNC 0x10000 /* the FDE's function */

static size_t put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return 4;
}

/* .eh_frame: a CIE (CFA = rsp + 8, return address at CFA - 8) and one
 * FDE covering 1 GiB from H_FUNC whose instructions are `nadv`
 * DW_CFA_advance_loc 1: a row per byte, as many as there are bytes. */
static size_t hostile_eh_frame(uint8_t *p, size_t nadv)
{
	static const uint8_t cie[] = {0,    0, 0,    0,	 1, 'z',  'R',
				      0,    1, 0x78, 16, 1, 0x1b, /* pcrel | sdata4 */
				      0x0c, 7, 8,		  /* def_cfa rsp 8 */
				      0x90, 1, 0,    0 /* offset r16 cfa-8, nops */};
	size_t n = 0, fde, len;

	n += put32(p + n, sizeof(cie));
	memcpy(p + n, cie, sizeof(cie));
	n += sizeof(cie);
	fde = n;
	len = 4 + 4 + 4 + 1 + nadv;
	len = (len + 3) & ~(size_t)3;
	n += put32(p + n, (uint32_t)len);
	n += put32(p + n, (uint32_t)(n - 0)); /* back to the CIE at 0 */
	n += put32(p + n, (uint32_t)(H_FUNC - (H_EH_OFF + n)));
	n += put32(p + n, 1u << 30);
	p[n++] = 0; /* no augmentation data */
	memset(p + n, 0x41, nadv);
	memset(p + n + nadv, 0, fde + 4 + len - (n + nadv));
	n = fde + 4 + len;
	n += put32(p + n, 0); /* terminator */
	return n;
}

/* An x86-64 ELF file: one executable load of 2 GiB (its size is only a
 * number here), .eh_frame and .shstrtab. Returns its size. */
static size_t hostile_elf(uint8_t *buf, size_t nadv)
{
	static const char names[] = "\0.eh_frame\0.shstrtab";
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Phdr *ph = (Elf64_Phdr *)(buf + sizeof(*eh));
	size_t eh_len = hostile_eh_frame(buf + H_EH_OFF, nadv);
	size_t names_off = H_EH_OFF + eh_len, sh_off = (names_off + sizeof(names) + 7) & ~7ul;
	Elf64_Shdr *sh = (Elf64_Shdr *)(buf + sh_off);

	memset(buf, 0, H_EH_OFF);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = sh_off;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 3;
	eh->e_shstrndx = 2;
	*ph = (Elf64_Phdr){.p_type = PT_LOAD,
			   .p_flags = PF_R | PF_X,
			   .p_filesz = 2ul << 30,
			   .p_memsz = 2ul << 30,
			   .p_align = 4096};
	memcpy(buf + names_off, names, sizeof(names));
	memset(sh, 0, 3 * sizeof(*sh));
	sh[1] = (Elf64_Shdr){.sh_name = 1,
			     .sh_type = SHT_PROGBITS,
			     .sh_flags = SHF_ALLOC,
			     .sh_addr = H_EH_OFF,
			     .sh_offset = H_EH_OFF,
			     .sh_size = eh_len,
			     .sh_addralign = 8};
	sh[2] = (Elf64_Shdr){.sh_name = 11,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = names_off,
			     .sh_size = sizeof(names),
			     .sh_addralign = 1};
	return sh_off + 3 * sizeof(*sh);
}

/* A function of many rows stops being unwound after 8192 of them (the
 * rest of it is undefined), and a file whose rows would take too much
 * interpreting is refused (-EFBIG): either way the builder's work is
 * bounded, whatever the FDE claims. */
static void test_hostile(void)
{
	size_t cap = 64 << 10;
	uint8_t *buf = malloc(cap);
	struct fr_cfi_table *t = NULL;
	const struct fr_cfi_row *r;
	size_t size;
	int err;

	if (!buf)
		return;
	/* 20,000 one-byte rows (all alike) from a 20 KB FDE. */
	size = hostile_elf(buf, 20000);
	err = fr_cfi_build(buf, size, &t);
	CHECK(err == 0, "many rows: %d", err);
	if (t) {
		check_invariants("many rows", t);
		r = fr_cfi_lookup(t, H_FUNC + 100);
		CHECK(r && r->kind == FR_CFA_SP && r->cfa_off == 8, "many rows: row at +100");
		CHECK(fr_cfi_lookup(t, H_FUNC + 9000) == NULL, "many rows: a row past 8192");
		CHECK(t->limit == 1u << 30 || t->limit == H_FUNC + (1u << 30),
		      "many rows: limit 0x%" PRIx64, t->limit);
		fr_cfi_free(t);
		t = NULL;
	}
	/* 40,000 from a 40 KB FDE: 8192 look-ups of 40 KB each is more
	 * than the file may cost. */
	size = hostile_elf(buf, 40000);
	err = fr_cfi_build(buf, size, &t);
	CHECK(err == -EFBIG && !t, "costly rows: %d", err);
	fr_cfi_free(t);
	free(buf);
}

int main(int argc, char **argv)
{
	int err = self_maps_load(&maps);

	if (err < 0) {
		fprintf(stderr, "SKIP: /proc/self/maps: %s\n", strerror(-err));
		return 77;
	}
	test_self();
	test_merged();
	test_libc();
	test_vdso();
	test_not_elf();
	test_hostile();
	if (argc >= 4) {
		test_file(argv[1], -ENOENT, 0);
		test_file(argv[2], 0, 1);
		test_file(argv[3], 0, 1);
	} else {
		fprintf(stderr, "objcopy missing: files without .eh_frame not tested\n");
	}
	self_maps_free(&maps);
	return failures ? 1 : 0;
}
