/* The CFI tables (core/unwind/cfi.c) of real files: this test program
 * (built without frame pointers, calling libc through its PLT), libc (its
 * signal trampoline), a copy of a program without .eh_frame (argv[1]:
 * -ENOENT) and one whose only CFI is .debug_frame (argv[2]); bytes that
 * are no x86-64 ELF file (-ENOEXEC). */
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

int main(int argc, char **argv)
{
	int err = self_maps_load(&maps);

	if (err < 0) {
		fprintf(stderr, "SKIP: /proc/self/maps: %s\n", strerror(-err));
		return 77;
	}
	test_self();
	test_libc();
	test_not_elf();
	if (argc >= 3) {
		test_file(argv[1], -ENOENT, 0);
		test_file(argv[2], 0, 1);
	} else {
		fprintf(stderr, "objcopy missing: files without .eh_frame not tested\n");
	}
	self_maps_free(&maps);
	return failures ? 1 : 0;
}
