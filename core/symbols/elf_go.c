/* The Go function table of an ELF file (core/symbols/gopclntab.h): its
 * .gopclntab, and the part of .rodata its inline trees lie in, read with
 * pread into private memory; and that part's file range, which the symbol
 * cache's copies keep (fr_elf_symbol_ranges()).
 *
 * Where the inline trees are is the runtime's to say: from Go 1.18 they
 * are offsets from moduledata.gofunc, read from the module record in
 * .noptrdata (.go.module from Go 1.26), which is trusted only once its
 * words agree with the table and the file's sections; from there to the
 * end of .rodata is kept (go:func.* sits near its end). Go 1.16 and 1.17
 * point into .rodata from anywhere: all of it is kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/symbols/elf_int.h"
#include "core/symbols/gopclntab.h"
#include "core/util/fs.h"

/* The sections a Go binary's table is read with. */
struct go_secs {
	GElf_Shdr tab, text, rodata, noptrdata, module;
	bool has_tab, has_text, has_rodata, has_noptrdata, has_module;
};

static void note_section(struct go_secs *gs, const char *name, const GElf_Shdr *sh)
{
	struct {
		const char *name;
		GElf_Shdr *sh;
		bool *has;
	} want[] = {
		{".gopclntab", &gs->tab, &gs->has_tab},
		/* -buildmode=pie puts it with the relocated data. */
		{".data.rel.ro.gopclntab", &gs->tab, &gs->has_tab},
		{".text", &gs->text, &gs->has_text},
		{".rodata", &gs->rodata, &gs->has_rodata},
		{".noptrdata", &gs->noptrdata, &gs->has_noptrdata},
		{".go.module", &gs->module, &gs->has_module},
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strcmp(name, want[i].name) == 0 && !*want[i].has) {
			*want[i].sh = *sh;
			*want[i].has = true;
		}
}

/* Finds the sections; true when the file has a table to read. */
static bool find_sections(Elf *elf, uint64_t fsize, struct go_secs *gs)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	memset(gs, 0, sizeof(*gs));
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !within_file(sh.sh_offset, sh.sh_size, fsize) ||
		    sh.sh_size > FR_GOPCLNTAB_MAX ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		note_section(gs, name, &sh);
	}
	return gs->has_tab && gs->tab.sh_size >= 16;
}

/* A section's bytes, malloc'd (NULL on a short read or no memory). */
static void *read_section(int fd, const GElf_Shdr *sh)
{
	void *p = malloc(sh->sh_size ? sh->sh_size : 1);

	if (p && fr_pread_full(fd, p, sh->sh_size, sh->sh_offset) != (ssize_t)sh->sh_size) {
		free(p);
		p = NULL;
	}
	return p;
}

/* Where the inline trees of the table `tab` lie: [*addr, + *len) at file
 * offset *off, and the text address 1.18+ entries are offsets from.
 * Returns 0 or -ENOENT (none found: no inlined frames). */
static int go_window(int fd, const struct go_secs *gs, const void *tab, uint64_t *addr,
		     uint64_t *off, uint64_t *len, uint64_t *text)
{
	const GElf_Shdr *ro = &gs->rodata, *where[] = {&gs->noptrdata, &gs->module};
	bool has[] = {gs->has_noptrdata, gs->has_module};
	struct fr_go_sections s;
	unsigned ptr;
	int layout = fr_gopclntab_layout(tab, gs->tab.sh_size, &ptr);

	*text = 0;
	if (layout < 0 || !gs->has_rodata || !gs->has_text)
		return -ENOENT;
	*addr = ro->sh_addr;
	if (layout < 118)
		goto found;
	s = (struct fr_go_sections){gs->tab.sh_addr, gs->text.sh_addr,
				    gs->text.sh_addr + gs->text.sh_size, ro->sh_addr,
				    ro->sh_addr + ro->sh_size};
	for (size_t i = 0; i < 2; i++) {
		void *data = has[i] ? read_section(fd, where[i]) : NULL;
		int ret = data ? fr_gopclntab_gofunc(tab, gs->tab.sh_size, data, where[i]->sh_size,
						     &s, addr, text)
			       : -ENOENT;

		free(data);
		if (ret == 0)
			goto found;
	}
	return -ENOENT;
found:
	/* Checked by fr_gopclntab_gofunc() for 1.18+: inside .rodata. */
	*off = ro->sh_offset + (*addr - ro->sh_addr);
	*len = ro->sh_size - (*addr - ro->sh_addr);
	return 0;
}

struct fr_gopclntab *elf_go_read(Elf *elf, int fd, uint64_t fsize)
{
	uint64_t waddr = 0, woff = 0, wlen = 0, text = 0;
	struct go_secs gs;
	void *tab, *win = NULL;
	int err;

	if (!find_sections(elf, fsize, &gs) || !(tab = read_section(fd, &gs.tab)))
		return NULL;
	if (go_window(fd, &gs, tab, &waddr, &woff, &wlen, &text) == 0) {
		GElf_Shdr w = {.sh_offset = woff, .sh_size = wlen};

		win = read_section(fd, &w);
	}
	return fr_gopclntab_new(tab, gs.tab.sh_size, win, win ? wlen : 0, waddr, text, &err);
}

bool elf_go_keep(Elf *elf, int fd, uint64_t fsize, struct fr_elf_range *keep)
{
	uint64_t addr, text;
	struct go_secs gs;
	void *tab;
	bool ok;

	if (!find_sections(elf, fsize, &gs) || !(tab = read_section(fd, &gs.tab)))
		return false;
	ok = go_window(fd, &gs, tab, &addr, &keep->off, &keep->len, &text) == 0;
	free(tab);
	return ok;
}
