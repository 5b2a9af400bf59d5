/* A Go program's runtime layout from its DWARF (core/symbols/go_dwarf.h). */
#include "core/symbols/go_dwarf.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

/* Units and top-level entries looked at, at most: a large Go program has
 * a few hundred thousand top-level entries. */
#define UNITS_MAX 100000u
#define ENTRIES_MAX 4000000u

struct want {
	const char *type, *member;
	int64_t *out;
};

/* The data_member_location of the members of struct `die` that `w` asks
 * for (those of type `name`). */
static void members(Dwarf_Die *die, const char *name, const struct want *w, size_t nw)
{
	Dwarf_Die child;
	unsigned n = 0;

	if (dwarf_child(die, &child) != 0)
		return;
	do {
		Dwarf_Attribute at;
		Dwarf_Word loc;
		const char *m = dwarf_diename(&child);

		if (dwarf_tag(&child) != DW_TAG_member || !m ||
		    !dwarf_attr(&child, DW_AT_data_member_location, &at) ||
		    dwarf_formudata(&at, &loc) != 0 || loc > (1u << 20))
			continue;
		for (size_t i = 0; i < nw; i++)
			if (strcmp(w[i].type, name) == 0 && strcmp(w[i].member, m) == 0)
				*w[i].out = (int64_t)loc;
	} while (++n < 4096 && dwarf_siblingof(&child, &child) == 0);
}

/* One top-level entry of a unit. */
static void entry(Dwarf_Die *die, const struct want *w, size_t nw, struct fr_go_dwarf *out)
{
	const char *name = dwarf_diename(die);
	int tag = dwarf_tag(die);
	Dwarf_Word size;
	Dwarf_Attribute at;

	if (!name)
		return;
	if (strcmp(name, "runtime/pprof.labelMap") == 0)
		out->labels_kind = tag == DW_TAG_structure_type ? 2 : 1;
	if (tag != DW_TAG_structure_type)
		return;
	if (strcmp(name, "bucket<string,string>") == 0 && dwarf_attr(die, DW_AT_byte_size, &at) &&
	    dwarf_formudata(&at, &size) == 0 && size < (1u << 20))
		out->bucket_size = (int64_t)size;
	members(die, name, w, nw);
}

/* Everything found: the walk stops (most of a program's units come after
 * the runtime's). */
static bool complete(const struct fr_go_dwarf *d)
{
	return d->g_m >= 0 && d->g_labels >= 0 && d->m_curg >= 0 && d->g_goid >= 0 &&
	       d->g_status >= 0 && d->g_waitsince >= 0 && d->g_waitreason >= 0 && d->g_gopc >= 0 &&
	       d->g_startpc >= 0 && d->g_sched >= 0 && d->g_syscallsp >= 0 && d->g_syscallpc >= 0 &&
	       d->g_stack >= 0 && d->g_tracking_seq >= 0 && d->gobuf_sp >= 0 && d->gobuf_pc >= 0 &&
	       d->gobuf_bp >= 0 && d->stack_lo >= 0 && d->stack_hi >= 0 && d->m_procid >= 0 &&
	       (d->labels_kind == 2 || (d->labels_kind == 1 && d->hmap_b >= 0 &&
					d->hmap_buckets >= 0 && d->bucket_size >= 0));
}

int fr_go_dwarf_offsets(void *data, size_t size, struct fr_go_dwarf *out)
{
	const struct want w[] = {
		{"runtime.g", "m", &out->g_m},
		{"runtime.g", "labels", &out->g_labels},
		{"runtime.m", "curg", &out->m_curg},
		{"runtime.hmap", "B", &out->hmap_b},
		{"runtime.hmap", "buckets", &out->hmap_buckets},
		{"runtime.g", "goid", &out->g_goid},
		{"runtime.g", "atomicstatus", &out->g_status},
		{"runtime.g", "waitsince", &out->g_waitsince},
		{"runtime.g", "waitreason", &out->g_waitreason},
		{"runtime.g", "gopc", &out->g_gopc},
		{"runtime.g", "startpc", &out->g_startpc},
		{"runtime.g", "parentGoid", &out->g_parent},
		{"runtime.g", "sched", &out->g_sched},
		{"runtime.g", "syscallsp", &out->g_syscallsp},
		{"runtime.g", "syscallpc", &out->g_syscallpc},
		{"runtime.g", "stack", &out->g_stack},
		{"runtime.g", "trackingSeq", &out->g_tracking_seq},
		{"runtime.gobuf", "sp", &out->gobuf_sp},
		{"runtime.gobuf", "pc", &out->gobuf_pc},
		{"runtime.gobuf", "bp", &out->gobuf_bp},
		{"runtime.stack", "lo", &out->stack_lo},
		{"runtime.stack", "hi", &out->stack_hi},
		{"runtime.m", "procid", &out->m_procid},
	};
	Dwarf_Off off = 0, next;
	size_t hsize;
	unsigned units = 0, entries = 0;
	Dwarf *dw;
	Elf *elf;

	memset(out, 0xff, sizeof(*out)); /* every offset -1 */
	out->labels_kind = 0;
	if (elf_version(EV_CURRENT) == EV_NONE || !(elf = elf_memory(data, size)))
		return -ENOMEM;
	if (elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return -ENOEXEC;
	}
	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	while (dw && units++ < UNITS_MAX && !complete(out) &&
	       dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, die;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &die) == 0) {
			do
				entry(&die, w, sizeof(w) / sizeof(w[0]), out);
			while (++entries < ENTRIES_MAX && dwarf_siblingof(&die, &die) == 0);
		}
		off = next;
	}
	if (dw)
		dwarf_end(dw);
	elf_end(elf);
	return out->g_m >= 0 && out->g_labels >= 0 && out->m_curg >= 0 && out->labels_kind
		       ? 0
		       : -ENOENT;
}
