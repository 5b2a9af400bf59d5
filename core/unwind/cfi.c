/* Compiling a binary's CFI into a table of rows (see cfi.h).
 *
 * The FDEs are enumerated (cfi_fde.c), sorted by start address, and each
 * FDE's rows are walked
 * with dwarf_cfi_addrframe(): one call per row, each giving the row's
 * extent [start, end) and its rules, which are compiled to a struct
 * fr_cfi_row. libdw interprets the FDE's instructions from its start at
 * each call, so the work of an FDE grows with (rows x length): it is
 * bounded per FDE (rows) and per file (bytes interpreted), so that a
 * hostile file cannot keep the builder busy for long.
 */
#include "core/unwind/cfi.h"
#include "core/unwind/cfi_int.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/buildid.h"

/* Rows one FDE may have: the largest function of libclang-cpp.so.14 has
 * 2,636, of libc 105. */
#define MAX_FDE_ROWS 8192
/* Bytes of CFI instructions libdw may interpret for one file, beyond a
 * multiple of the section's size: real files need 12 to 26 times their
 * section (libc, python3, libLLVM), most FDEs having few rows. libdw
 * interprets about a byte a nanosecond. */
#define WORK_BASE (256ull << 20)
#define WORK_PER_BYTE 64

/* x86-64 DWARF register numbers. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

struct builder {
	Dwarf_CFI *cfi;
	struct fr_cfi_table *t;
	uint32_t cap;
	uint64_t work, work_max;
	bool have_last; /* t->rows[t->nrows - 1] is valid */
	/* Stack pointer offsets filling the gaps between FDEs
	 * (fr_cfi_build_sp(), fr_cfi_build_merged()): the next one to take,
	 * and the end of the last one taken. */
	const struct fr_cfi_sp_range *sp;
	size_t nsp, sp_i;
	uint64_t sp_end;
};

static const struct fr_cfi_row undef_row = {.kind = FR_CFA_UNDEF};

/* ---- rows ---------------------------------------------------------- */

/* Whether the register rule is "offset(N) from the CFA", giving N. */
static bool rule_offset(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		*off = 0;
		return true;
	}
	if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* Whether `ops` is DW_OP_breg7 N alone (a DW_CFA_expression's location
 * relative to rsp), giving N. libdw puts the DW_OP_call_frame_cfa that
 * DW_CFA_expression implies in front of a register's expression: the CFA
 * pushed first is left unused below the result. */
static bool rsp_rel(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa) {
		ops++;
		nops--;
	}
	if (nops != 1)
		return false;
	if (ops[0].atom == DW_OP_breg0 + REG_RSP) {
		*off = (int64_t)ops[0].number;
		return true;
	}
	if (ops[0].atom == DW_OP_bregx && ops[0].number == REG_RSP) {
		*off = (int64_t)ops[0].number2;
		return true;
	}
	return false;
}

/* The PLT's CFA expression (binutils' lazy PLT):
 *   DW_OP_breg7 N; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litK;
 *   DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * that is rsp + N, + 8 once the stub has pushed its index ((rip & 15) >=
 * K). Gives N and K. */
static bool plt_expr(const Dwarf_Op *o, size_t n, int64_t *off, int *k)
{
	if (n != 9 || o[0].atom != DW_OP_breg0 + REG_RSP || o[1].atom != DW_OP_breg16 ||
	    o[1].number != 0 || o[2].atom != DW_OP_lit15 || o[3].atom != DW_OP_and ||
	    o[4].atom < DW_OP_lit0 || o[4].atom > DW_OP_lit15 || o[5].atom != DW_OP_ge ||
	    o[6].atom != DW_OP_lit3 || o[7].atom != DW_OP_shl || o[8].atom != DW_OP_plus)
		return false;
	*off = (int64_t)o[0].number;
	*k = o[4].atom - DW_OP_lit0;
	return true;
}

static bool fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static bool fits16(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
}

/* A signal frame (glibc's __restore_rt): CFA = DW_OP_breg7 N;
 * DW_OP_deref (the interrupted rsp, saved in the ucontext on the stack),
 * rip and rbp by DW_CFA_expression at rsp + M. The row keeps N and rbp's
 * M; rip must be at N + 8 (struct sigcontext: rsp, then rip), which the
 * unwinder relies on. */
static void compile_signal(Dwarf_Frame *fr, const Dwarf_Op *cfa, size_t ncfa,
			   struct fr_cfi_row *row)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t sp_off, ip_off, bp_off;

	if (ncfa != 2 || !rsp_rel(cfa, 1, &sp_off) || cfa[1].atom != DW_OP_deref)
		return;
	if (dwarf_frame_register(fr, REG_RA, mem, &ops, &nops) != 0 || !ops ||
	    !rsp_rel(ops, nops, &ip_off) || ip_off != sp_off + 8)
		return;
	if (dwarf_frame_register(fr, REG_RBP, mem, &ops, &nops) != 0 || !ops ||
	    !rsp_rel(ops, nops, &bp_off) || !fits16(bp_off) || !fits32(sp_off))
		return;
	row->kind = FR_CFA_SIGNAL;
	row->cfa_off = (int32_t)sp_off;
	row->fp_off = (int16_t)bp_off;
}

/* Compiles the rules of `fr` into *row (pc aside). */
static void compile_row(Dwarf_Frame *fr, bool signal, struct fr_cfi_row *row)
{
	Dwarf_Op mem[3], *ops, *cfa;
	size_t nops, ncfa;
	int64_t off;
	int k;

	row->kind = FR_CFA_UNDEF;
	row->cfa_off = 0;
	row->fp_off = 0;
	row->fp_rule = FR_FP_SAME;
	if (dwarf_frame_cfa(fr, &cfa, &ncfa) != 0)
		return;
	if (signal) {
		compile_signal(fr, cfa, ncfa, row);
		return;
	}
	/* The return address. */
	if (dwarf_frame_register(fr, REG_RA, mem, &ops, &nops) != 0)
		return;
	if (nops == 0 && ops == mem) {
		row->kind = FR_CFA_END;
		return;
	}
	if (!ops || !rule_offset(ops, nops, &off) || off != -8)
		return;
	/* The caller's rbp. */
	if (dwarf_frame_register(fr, REG_RBP, mem, &ops, &nops) != 0)
		return;
	if (nops == 0 && ops == mem) {
		row->fp_rule = FR_FP_UNDEF;
	} else if (nops == 0) {
		row->fp_rule = FR_FP_SAME;
	} else if (rule_offset(ops, nops, &off) && fits16(off)) {
		row->fp_rule = FR_FP_SAVED;
		row->fp_off = (int16_t)off;
	} else {
		row->fp_rule = FR_FP_UNDEF;
	}
	/* The CFA. */
	if (ncfa == 1 && cfa[0].atom == DW_OP_bregx && fits32((int64_t)cfa[0].number2) &&
	    (cfa[0].number == REG_RSP || cfa[0].number == REG_RBP)) {
		row->kind = cfa[0].number == REG_RSP ? FR_CFA_SP : FR_CFA_FP;
		row->cfa_off = (int32_t)(int64_t)cfa[0].number2;
	} else if (plt_expr(cfa, ncfa, &off, &k) && fits32(off)) {
		row->kind = FR_CFA_PLT;
		row->cfa_off = (int32_t)off;
		row->fp_off = (int16_t)k;
	}
	if (row->kind == FR_CFA_UNDEF)
		row->fp_rule = FR_FP_SAME;
}

static bool same_rules(const struct fr_cfi_row *a, const struct fr_cfi_row *b)
{
	return a->kind == b->kind && a->cfa_off == b->cfa_off && a->fp_off == b->fp_off &&
	       a->fp_rule == b->fp_rule;
}

/* Appends a row at link-time address `pc` (not below the last row's),
 * merging it into the last row when the rules are the same. */
static int add_row(struct builder *b, uint64_t pc, const struct fr_cfi_row *r)
{
	struct fr_cfi_table *t = b->t;
	struct fr_cfi_row row = *r;

	if (pc - t->base > UINT32_MAX)
		return -EBADMSG;
	row.pc = (uint32_t)(pc - t->base);
	if (t->nrows && b->have_last) {
		struct fr_cfi_row *last = &t->rows[t->nrows - 1];

		if (same_rules(last, &row))
			return 0;
		if (last->pc == row.pc) {
			*last = row;
			return 0;
		}
	}
	if (t->nrows == b->cap) {
		uint32_t cap = b->cap ? 2 * b->cap : 4096;
		struct fr_cfi_table *nt;

		if (b->cap >= FR_CFI_MAX_ROWS)
			return -EFBIG;
		if (cap > FR_CFI_MAX_ROWS)
			cap = FR_CFI_MAX_ROWS;
		nt = realloc(t, sizeof(*t) + (size_t)cap * sizeof(t->rows[0]));
		if (!nt)
			return -ENOMEM;
		b->t = t = nt;
		b->cap = cap;
	}
	t->rows[t->nrows++] = row;
	b->have_last = true;
	return 0;
}

/* Walks the rows of FDE `f` from `pc` (not before its start: FDEs may
 * overlap, the first one wins). */
static int walk_fde(struct builder *b, const struct fde *f, uint64_t pc)
{
	unsigned rows = 0;
	int err;

	while (pc < f->end) {
		Dwarf_Frame *fr;
		Dwarf_Addr start, end;
		struct fr_cfi_row row;
		bool signal;

		/* The rest of a function with too many rows is not
		 * unwound; the rest of the file still is. */
		if (++rows > MAX_FDE_ROWS)
			return add_row(b, pc, &undef_row);
		b->work += f->cost;
		if (b->work > b->work_max)
			return -EFBIG;
		if (dwarf_cfi_addrframe(b->cfi, pc, &fr) != 0)
			return add_row(b, pc, &undef_row);
		if (dwarf_frame_info(fr, &start, &end, &signal) != REG_RA) {
			free(fr);
			return add_row(b, pc, &undef_row);
		}
		compile_row(fr, signal, &row);
		free(fr);
		/* A row that does not cover pc (libdw found another FDE):
		 * nothing trustworthy for the rest of this one. */
		if (start > pc || end <= pc)
			return add_row(b, pc, &undef_row);
		if ((err = add_row(b, pc, &row)) < 0)
			return err;
		pc = end < f->end ? end : f->end;
	}
	return 0;
}

/* The row of a stack pointer offset: Go's frames, the return address,
 * then (once the function has a frame) the caller's rbp right below it.
 * An offset that is negative, not of whole words or over 1 GiB: none. */
static struct fr_cfi_row sp_row(int32_t sp)
{
	if (sp < 0 || sp > (1 << 30) || (sp & 7))
		return undef_row;
	return (struct fr_cfi_row){.kind = FR_CFA_SP,
				   .cfa_off = sp + 8,
				   .fp_rule = sp > 0 ? FR_FP_SAVED : FR_FP_SAME,
				   .fp_off = sp > 0 ? -16 : 0};
}

/* Rows for [from, to) from the stack pointer offsets b->sp (those not
 * sorted or overlapping an earlier one skipped: the first one wins),
 * clipped to it, an FR_CFA_UNDEF row where none covers; to ==
 * UINT64_MAX takes all that are left, with no row after the last. Sets
 * *at to where the rows end. A range running on past `to` (into an FDE)
 * is kept for the gap after it. */
static int fill_sp(struct builder *b, uint64_t from, uint64_t to, uint64_t *at)
{
	int err;

	*at = from;
	while (b->sp_i < b->nsp && *at < to) {
		const struct fr_cfi_sp_range *r = &b->sp[b->sp_i];
		uint64_t s = r->start > *at ? r->start : *at, e = r->end < to ? r->end : to;
		struct fr_cfi_row row = sp_row(r->sp);

		if (r->start < b->sp_end || r->end <= r->start) {
			b->sp_i++;
			continue;
		}
		if (r->start >= to)
			break;
		if (e > s) {
			if ((s > *at && (err = add_row(b, *at, &undef_row)) < 0) ||
			    (err = add_row(b, s, &row)) < 0)
				return err;
			*at = e;
		}
		if (r->end > to)
			break;
		b->sp_end = r->end;
		b->sp_i++;
	}
	if (*at < to && to != UINT64_MAX) {
		if ((err = add_row(b, *at, &undef_row)) < 0)
			return err;
		*at = to;
	}
	return 0;
}

/* The rows of the FDEs `v`, sorted, the gaps between them filled from
 * b->sp (FR_CFA_UNDEF without). */
static int walk_fdes(struct builder *b, const struct fde *v, size_t n)
{
	uint64_t cursor = v[0].start;
	int err;

	if (b->nsp && b->sp[0].start < cursor)
		cursor = b->sp[0].start;
	b->t->base = b->sp_end = cursor;
	for (size_t i = 0; i < n; i++) {
		if (v[i].end <= cursor)
			continue;
		if (v[i].start > cursor && (err = fill_sp(b, cursor, v[i].start, &cursor)) < 0)
			return err;
		err = walk_fde(b, &v[i], v[i].start > cursor ? v[i].start : cursor);
		if (err < 0)
			return err;
		cursor = v[i].end;
	}
	if (b->nsp && (err = fill_sp(b, cursor, UINT64_MAX, &cursor)) < 0)
		return err;
	b->t->limit = cursor;
	return 0;
}

/* ---- the ELF file --------------------------------------------------- */

static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh) || sh->sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && strcmp(n, name) == 0)
			return scn;
	}
	return NULL;
}

static int read_loads(Elf *elf, struct fr_cfi_table *t)
{
	size_t n;

	if (elf_getphdrnum(elf, &n) != 0)
		return -ENOEXEC;
	for (size_t i = 0; i < n && t->nloads < FR_CFI_MAX_LOADS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		t->loads[t->nloads++] = (struct fr_cfi_load){.offset = ph.p_offset,
							     .vaddr = ph.p_vaddr,
							     .filesz = ph.p_filesz};
	}
	return t->nloads ? 0 : -ENOENT;
}

/* The build id from the notes, if any: a GNU one, else a Go executable's
 * (core/util/buildid.h), as core/symbols/elf_image.c reads it. */
static void read_build_id(Elf *elf, struct fr_cfi_table *t)
{
	for (int go = 0; go < 2; go++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;
			GElf_Nhdr nh;
			size_t off = 0, name_off, desc_off;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
				continue;
			d = elf_getdata(scn, NULL);
			while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
				const char *nm = (const char *)d->d_buf + name_off;
				const uint8_t *desc = (const uint8_t *)d->d_buf + desc_off;
				int n;

				if (!go && nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
				    memcmp(nm, "GNU", 4) == 0 && nh.n_descsz > 0 &&
				    nh.n_descsz <= sizeof(t->build_id)) {
					memcpy(t->build_id, desc, nh.n_descsz);
					t->build_id_len = (uint8_t)nh.n_descsz;
					return;
				}
				if (go && nh.n_type == FR_GO_BUILD_ID_NOTE &&
				    fr_go_note_owner(nm, nh.n_namesz) &&
				    (n = fr_go_build_id(desc, nh.n_descsz, t->build_id,
							sizeof(t->build_id))) > 0) {
					t->build_id_len = (uint8_t)n;
					return;
				}
			}
		}
	}
}

/* Compiles the CFI of section `s` through `cfi` into b->t. */
static int compile(struct builder *b, struct cfi_section *s)
{
	struct fde *v;
	long n = fr_cfi_list_fdes(s, b->t, &v);
	int err;

	if (n < 0)
		return (int)n;
	if (n == 0) {
		free(v);
		return -ENOENT;
	}
	b->work_max = WORK_BASE + WORK_PER_BYTE * (uint64_t)s->data->d_size;
	err = walk_fdes(b, v, (size_t)n);
	free(v);
	return err;
}

/* Compiles the CFI of section `name` (".eh_frame" or ".debug_frame"). */
static int compile_section(Elf *elf, struct builder *b, const char *name)
{
	struct cfi_section s = {0};
	GElf_Shdr sh;
	Elf_Scn *scn = find_section(elf, name, &sh);
	Dwarf *dw = NULL;
	int err = -ENOENT;

	if (!scn)
		return -ENOENT;
	s.ident = (const unsigned char *)elf_getident(elf, NULL);
	s.eh = strcmp(name, ".eh_frame") == 0;
	s.addr = sh.sh_addr;
	if (s.eh) {
		b->cfi = dwarf_getcfi_elf(elf);
	} else {
		dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		b->cfi = dw ? dwarf_getcfi(dw) : NULL;
	}
	/* After dwarf_begin_elf(), which decompresses a compressed
	 * .debug_frame in place: the walk reads what libdw reads. */
	if (b->cfi && (s.data = elf_getdata(scn, NULL)) && s.data->d_buf)
		err = compile(b, &s);
	if (b->cfi && s.eh)
		dwarf_cfi_end(b->cfi);
	b->cfi = NULL;
	if (dw)
		dwarf_end(dw);
	return err;
}

/* Rows from stack pointer offsets alone (fr_cfi_build_sp()). */
static int build_sp(struct builder *b)
{
	uint64_t end;
	int err;

	b->t->base = b->sp_end = b->sp[0].start;
	if ((err = fill_sp(b, b->sp[0].start, UINT64_MAX, &end)) < 0)
		return err;
	b->t->limit = end;
	return 0;
}

/* The table of `elf` from its CFI (when `cfi`), the gaps filled from
 * b->sp; from b->sp alone for a file without CFI. */
static int build_elf(Elf *elf, struct builder *b, bool cfi)
{
	int err = read_loads(elf, b->t);

	if (err < 0)
		return err;
	read_build_id(elf, b->t);
	err = cfi ? compile_section(elf, b, ".eh_frame") : -ENOENT;
	/* A file whose .eh_frame describes nothing (only the C runtime's
	 * CIE, say) may still have .debug_frame. */
	if (cfi && err == -ENOENT && b->t->nrows == 0) {
		b->t->from_debug_frame = 1;
		err = compile_section(elf, b, ".debug_frame");
	}
	if (err == -ENOENT && b->t->nrows == 0 && b->nsp) {
		b->t->from_debug_frame = 0;
		err = build_sp(b);
	}
	return err;
}

/* Hands over the table built (or frees it on `err`). */
static int finish(struct builder *b, int err, struct fr_cfi_table **out)
{
	struct fr_cfi_table *t;

	if (err == 0 && b->t->nrows == 0)
		err = -ENOENT;
	if (err < 0) {
		free(b->t);
		return err;
	}
	/* Give back the unused capacity: tables live as long as their file
	 * is mapped somewhere. */
	t = realloc(b->t, sizeof(*b->t) + (size_t)b->t->nrows * sizeof(b->t->rows[0]));
	*out = t ? t : b->t;
	return 0;
}

/* The x86-64 ELF file `image` opened with libelf, or NULL with *err. */
static Elf *open_image(const void *image, size_t size, int *err)
{
	const unsigned char *id = image;
	GElf_Ehdr eh;
	Elf *elf;

	*err = -ENOEXEC;
	/* Checked before libelf sees the image: a file of the other byte
	 * order would be converted in place. */
	if (size < EI_NIDENT || memcmp(id, ELFMAG, SELFMAG) != 0 || id[EI_CLASS] != ELFCLASS64 ||
	    id[EI_DATA] != ELFDATA2LSB)
		return NULL;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		*err = -ENOMEM;
		return NULL;
	}
	/* libelf does not write to an image of the native byte order. */
	elf = elf_memory((char *)(uintptr_t)image, size);
	if (elf && (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
		    eh.e_machine != EM_X86_64 || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))) {
		elf_end(elf);
		elf = NULL;
	}
	return elf;
}

/* fr_cfi_build(), fr_cfi_build_sp(), fr_cfi_build_merged(). */
static int build(const void *image, size_t size, const struct fr_cfi_sp_range *v, size_t n,
		 bool cfi, struct fr_cfi_table **out)
{
	struct builder b = {.sp = v, .nsp = n};
	Elf *elf;
	int err;

	*out = NULL;
	if (n > FR_CFI_MAX_ROWS)
		return -EFBIG;
	if (!(elf = open_image(image, size, &err)))
		return err;
	b.t = calloc(1, sizeof(*b.t));
	err = b.t ? build_elf(elf, &b, cfi) : -ENOMEM;
	elf_end(elf);
	return finish(&b, err, out);
}

int fr_cfi_build_sp(const void *image, size_t size, const struct fr_cfi_sp_range *v, size_t n,
		    struct fr_cfi_table **out)
{
	*out = NULL;
	return n ? build(image, size, v, n, false, out) : -ENOENT;
}

int fr_cfi_build_merged(const void *image, size_t size, const struct fr_cfi_sp_range *v, size_t n,
			struct fr_cfi_table **out)
{
	return build(image, size, v, n, true, out);
}

int fr_cfi_build(const void *image, size_t size, struct fr_cfi_table **out)
{
	return build(image, size, NULL, 0, true, out);
}

void fr_cfi_free(struct fr_cfi_table *t)
{
	free(t);
}

size_t fr_cfi_size(const struct fr_cfi_table *t)
{
	return t ? sizeof(*t) + (size_t)t->nrows * sizeof(t->rows[0]) : 0;
}

const struct fr_cfi_row *fr_cfi_lookup(const struct fr_cfi_table *t, uint64_t vaddr)
{
	uint32_t lo = 0, hi, pc;
	const struct fr_cfi_row *r;

	if (!t || vaddr < t->base || vaddr >= t->limit || vaddr - t->base > UINT32_MAX)
		return NULL;
	pc = (uint32_t)(vaddr - t->base);
	hi = t->nrows;
	/* The first row past pc. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	r = &t->rows[lo - 1];
	return r->kind == FR_CFA_UNDEF ? NULL : r;
}

int fr_cfi_translate(const struct fr_cfi_table *t, uint64_t off, uint64_t *vaddr)
{
	for (uint32_t i = 0; i < t->nloads; i++) {
		const struct fr_cfi_load *l = &t->loads[i];

		if (off >= l->offset && off - l->offset < l->filesz) {
			*vaddr = l->vaddr + (off - l->offset);
			return 0;
		}
	}
	return -ENOENT;
}
