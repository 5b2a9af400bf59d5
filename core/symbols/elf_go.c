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

/* Where a file's bytes are read from: the file (pread), or a copy of it
 * in private memory. */
struct src {
	int fd;
	const uint8_t *mem;
	uint64_t size;
};

/* A section's bytes, malloc'd (NULL on a short read or no memory). */
static void *read_section(const struct src *f, const GElf_Shdr *sh)
{
	void *p = malloc(sh->sh_size ? sh->sh_size : 1);

	if (p && f->mem && within_file(sh->sh_offset, sh->sh_size, f->size))
		return memcpy(p, f->mem + sh->sh_offset, sh->sh_size);
	if (p && (f->mem ||
		  fr_pread_full(f->fd, p, sh->sh_size, sh->sh_offset) != (ssize_t)sh->sh_size)) {
		free(p);
		p = NULL;
	}
	return p;
}

/* Where the inline trees of the table whose first `head_len` bytes are
 * `head` lie: [*addr, + *len) at file offset *off, and the text address
 * 1.18+ entries are offsets from. Returns 0 or -ENOENT (none found: no
 * inlined frames). */
static int go_window(const struct src *f, const struct go_secs *gs, const void *head,
		     size_t head_len, uint64_t *addr, uint64_t *off, uint64_t *len, uint64_t *text)
{
	const GElf_Shdr *ro = &gs->rodata, *where[] = {&gs->noptrdata, &gs->module};
	bool has[] = {gs->has_noptrdata, gs->has_module};
	struct fr_go_sections s;
	unsigned ptr;
	int layout = fr_gopclntab_layout(head, head_len, &ptr);

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
		void *data = has[i] ? read_section(f, where[i]) : NULL;
		int ret = data ? fr_gopclntab_gofunc(head, head_len, gs->tab.sh_size, data,
						     where[i]->sh_size, &s, addr, text)
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

/* The table of `elf` read from `f`, with its inline trees when `trees`. */
static struct fr_gopclntab *go_read(Elf *elf, const struct src *f, bool trees)
{
	uint64_t waddr = 0, woff = 0, wlen = 0, text = 0;
	struct go_secs gs;
	void *tab, *win = NULL;
	int err;

	if (!find_sections(elf, f->size, &gs) || !(tab = read_section(f, &gs.tab)))
		return NULL;
	/* The text address is the module record's when there is one. */
	if (go_window(f, &gs, tab, gs.tab.sh_size, &waddr, &woff, &wlen, &text) == 0 && trees) {
		GElf_Shdr w = {.sh_offset = woff, .sh_size = wlen};

		win = read_section(f, &w);
	}
	return fr_gopclntab_new(tab, gs.tab.sh_size, win, win ? wlen : 0, waddr, text, &err);
}

struct fr_gopclntab *elf_go_read(Elf *elf, int fd, uint64_t fsize)
{
	struct src f = {.fd = fd, .size = fsize};

	return go_read(elf, &f, true);
}

struct fr_gopclntab *fr_elf_go_table(const void *image, size_t size)
{
	struct src f = {.fd = -1, .mem = image, .size = size};
	struct fr_gopclntab *g = NULL;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE || size < EI_NIDENT ||
	    ((const uint8_t *)image)[EI_DATA] != ELFDATA2LSB)
		return NULL;
	/* libelf does not write to an image of the native byte order. */
	elf = elf_memory((char *)(uintptr_t)image, size);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		g = go_read(elf, &f, false);
	if (elf)
		elf_end(elf);
	return g;
}

bool elf_go_keep(Elf *elf, int fd, uint64_t fsize, struct fr_elf_range *keep)
{
	struct src f = {.fd = fd, .size = fsize};
	uint64_t addr, text;
	struct go_secs gs;
	GElf_Shdr head;
	void *tab;
	bool ok;

	if (!find_sections(elf, fsize, &gs))
		return false;
	/* The header alone: the table may be tens of MiB. */
	head = gs.tab;
	if (head.sh_size > FR_GOPCLNTAB_HEAD_MAX)
		head.sh_size = FR_GOPCLNTAB_HEAD_MAX;
	if (!(tab = read_section(&f, &head)))
		return false;
	ok = go_window(&f, &gs, tab, head.sh_size, &addr, &keep->off, &keep->len, &text) == 0;
	free(tab);
	return ok;
}
