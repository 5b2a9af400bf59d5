/* Enumerating the FDEs of .eh_frame or .debug_frame (see cfi_int.h):
 * one dwarf_next_cfi() walk for both, with the pointer encodings of
 * .eh_frame (the CIE's 'R' augmentation) decoded here, since libdw gives
 * an FDE's initial location and range only as encoded bytes. Enumerating
 * through .eh_frame_hdr instead would serve only .eh_frame, and its table
 * gives starts, not ranges.
 */
#include "core/unwind/cfi_int.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;

	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;

		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return true;
		}
	}
	return false;
}

/* Reads a pointer of encoding `enc` (DW_EH_PE_*) at *p; `rel` applies the
 * pc-relative part (an FDE's initial location, not its range). Only what
 * .eh_frame of linked files uses: absptr and pcrel, of the fixed sizes and
 * uleb128. */
static bool read_ptr(const struct cfi_section *s, const uint8_t **p, const uint8_t *end,
		     uint8_t enc, bool rel, uint64_t *v)
{
	const uint8_t *q = *p;
	uint64_t field = s->addr + (uint64_t)(q - (const uint8_t *)s->data->d_buf);
	uint64_t r;
	unsigned size;

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect))
		return false;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8: size = 8; break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2: size = 2; break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4: size = 4; break;
	case DW_EH_PE_uleb128:
		if (!read_uleb(p, end, &r))
			return false;
		size = 0;
		break;
	default: return false;
	}
	if (size) {
		if ((size_t)(end - q) < size)
			return false;
		if (size == 8) {
			memcpy(&r, q, 8);
		} else if (size == 4) {
			uint32_t u;

			memcpy(&u, q, 4);
			r = (enc & 0x08) ? (uint64_t)(int64_t)(int32_t)u : u;
		} else {
			uint16_t u;

			memcpy(&u, q, 2);
			r = (enc & 0x08) ? (uint64_t)(int64_t)(int16_t)u : u;
		}
		*p = q + size;
	}
	if (rel) {
		switch (enc & 0x70) {
		case DW_EH_PE_absptr: break;
		case DW_EH_PE_pcrel: r += field; break;
		default: return false;
		}
	}
	*v = r;
	return true;
}

/* The FDE pointer encoding of the CIE at `off` (its 'R' augmentation;
 * absptr without one), cached for the next FDE of the same CIE. */
static bool cie_encoding(struct cfi_section *s, Dwarf_Off off)
{
	Dwarf_CFI_Entry e;
	Dwarf_Off next;
	const uint8_t *a, *aend;

	if (s->cie_ok && s->cie_off == off)
		return true;
	s->cie_ok = false;
	s->cie_off = off;
	if (dwarf_next_cfi(s->ident, s->data, s->eh, off, &next, &e) != 0 ||
	    e.CIE_id != LIBDW_CIE_ID)
		return false;
	s->cie_enc = DW_EH_PE_absptr;
	s->cie_len = (uint64_t)(e.cie.initial_instructions_end - e.cie.initial_instructions);
	if (e.cie.augmentation[0] == '\0') {
		s->cie_ok = true;
		return true;
	}
	if (e.cie.augmentation[0] != 'z' || !e.cie.augmentation_data)
		return false;
	a = e.cie.augmentation_data;
	aend = a + e.cie.augmentation_data_size;
	for (const char *c = e.cie.augmentation + 1; *c; c++) {
		uint64_t skip;

		switch (*c) {
		case 'L':
			if (a >= aend)
				return false;
			a++;
			break;
		case 'P':
			if (a >= aend)
				return false;
			a++;
			/* The personality routine's pointer: only its size
			 * matters. */
			if (!read_ptr(s, &a, aend, a[-1] & 0x0f, false, &skip))
				return false;
			break;
		case 'R':
			if (a >= aend)
				return false;
			s->cie_enc = *a++;
			break;
		case 'S':
		case 'B': break;
		default: return false;
		}
	}
	s->cie_ok = true;
	return true;
}

/* Decodes the FDE `e` (at section offset `off`) into *f. False for an FDE
 * to skip (an encoding not understood, an empty range). */
static bool decode_fde(struct cfi_section *s, const Dwarf_CFI_Entry *e, struct fde *f)
{
	const uint8_t *p = e->fde.start;
	uint64_t start, range;
	uint8_t enc;

	if (!cie_encoding(s, e->fde.CIE_pointer))
		return false;
	enc = s->eh ? s->cie_enc : DW_EH_PE_absptr;
	if (!read_ptr(s, &p, e->fde.end, enc, true, &start) ||
	    !read_ptr(s, &p, e->fde.end, enc & 0x0f, false, &range))
		return false;
	if (range == 0 || start + range < start)
		return false;
	f->start = start;
	f->end = start + range;
	f->cost = s->cie_len + (uint64_t)(e->fde.end - e->fde.start) + 16;
	return true;
}

/* Keeps an FDE that starts in an executable load, cut to its end: rows
 * beyond it could only describe code that is not there. */
static bool clip_to_load(const struct fr_cfi_table *t, struct fde *f)
{
	for (uint32_t i = 0; i < t->nloads; i++) {
		const struct fr_cfi_load *l = &t->loads[i];

		if (f->start >= l->vaddr && f->start - l->vaddr < l->filesz) {
			if (f->end - l->vaddr > l->filesz)
				f->end = l->vaddr + l->filesz;
			return true;
		}
	}
	return false;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

long fr_cfi_list_fdes(struct cfi_section *s, const struct fr_cfi_table *t, struct fde **out)
{
	size_t cap = 0, n = 0;
	struct fde *v = NULL;
	Dwarf_Off off = 0, next;

	for (;;) {
		Dwarf_CFI_Entry e;
		struct fde f;
		int r = dwarf_next_cfi(s->ident, s->data, s->eh, off, &next, &e);

		if (r > 0)
			break;
		if (r < 0) {
			/* Corrupt past this point: keep what was read. */
			break;
		}
		if (next <= off)
			break;
		off = next;
		if (e.CIE_id == LIBDW_CIE_ID || !decode_fde(s, &e, &f) || !clip_to_load(t, &f))
			continue;
		if (n == cap) {
			struct fde *nv;

			cap = cap ? 2 * cap : 1024;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = f;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_fde);
	*out = v;
	return (long)n;
}
