/* Names the stubs of an ELF file's PLT (see elf_int.h, elf_image.h). */
#include "core/symbols/elf_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/grow.h"

/* ---- PLT stubs ----
 *
 * A call into another object goes through a stub of the PLT, which no
 * symbol table covers: left alone, a stub took the name of the symbol
 * before it (_init, whose size is 0, extends over the whole PLT). Each stub
 * is named NAME@plt after the function it jumps to, as objdump and perf
 * name it.
 *
 * Rather than assume that stubs follow the order of the relocations (true
 * of .plt without IBT, not of .plt.sec's neighbour .plt.got), each stub's
 * indirect jump is decoded: it reads the GOT slot the dynamic linker fills
 * for NAME, which is the r_offset of NAME's JUMP_SLOT relocation (GLOB_DAT
 * for a stub of .plt.got). x86-64 only: elsewhere stubs stay unnamed. */

/* A GOT slot and the name of the function whose address it holds. */
struct got_slot {
	uint64_t addr;
	const char *name; /* in libelf's copy of .dynstr */
};

struct got_vec {
	struct got_slot *v;
	size_t n;
	size_t cap;
};

static int got_push(struct got_vec *gv, uint64_t addr, const char *name)
{
	if (FR_GROW(gv->v, &gv->cap, gv->n + 1, 64) < 0)
		return -ENOMEM;
	gv->v[gv->n].addr = addr;
	gv->v[gv->n].name = name;
	gv->n++;
	return 0;
}

static int got_cmp(const void *pa, const void *pb)
{
	const struct got_slot *a = pa, *b = pb;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Whether section `idx` can be read whole: in the file and not too large. */
static bool section_readable(Elf *elf, size_t idx, uint64_t fsize, GElf_Shdr *sh)
{
	return gelf_getshdr(elf_getscn(elf, idx), sh) && sh->sh_type != SHT_NOBITS &&
	       within_file(sh->sh_offset, sh->sh_size, fsize) && sh->sh_size <= SECTION_MAX;
}

/* Appends the GOT slots of the JUMP_SLOT and GLOB_DAT relocations of one
 * SHT_RELA section, named from the symbol table it links to. */
static int got_read_rela(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, uint64_t fsize,
			 struct got_vec *gv)
{
	GElf_Shdr symh, strh;
	Elf_Data *rd, *sd;
	size_t n;

	if (!sh->sh_entsize || !section_readable(elf, sh->sh_link, fsize, &symh) ||
	    symh.sh_type != SHT_DYNSYM || !symh.sh_entsize ||
	    !section_readable(elf, symh.sh_link, fsize, &strh))
		return 0;
	rd = elf_getdata(scn, NULL);
	sd = elf_getdata(elf_getscn(elf, sh->sh_link), NULL);
	if (!rd || !sd)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		unsigned type;
		const char *name;
		GElf_Rela r;
		GElf_Sym es;

		if (!gelf_getrela(rd, (int)i, &r))
			break;
		type = (unsigned)GELF_R_TYPE(r.r_info);
		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
		    !GELF_R_SYM(r.r_info) || !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &es))
			continue;
		name = elf_strptr(elf, symh.sh_link, es.st_name);
		if (name && name[0] && got_push(gv, r.r_offset, name) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The GOT slot a stub at `addr` jumps through: "jmp *disp(%rip)", after
 * an endbr64 and a bnd prefix when there are. Returns 0 or -ENOENT (the
 * header of .plt, or the lazy half of an IBT stub, which jumps to it). */
static int plt_decode(const uint8_t *p, size_t len, uint64_t addr, uint64_t *slot)
{
	static const uint8_t endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
	size_t off = 0;
	int32_t disp;

	if (len >= sizeof(endbr64) && memcmp(p, endbr64, sizeof(endbr64)) == 0)
		off = sizeof(endbr64);
	if (off < len && p[off] == 0xf2) /* bnd */
		off++;
	if (len < off + 6 || p[off] != 0xff || p[off + 1] != 0x25)
		return -ENOENT;
	memcpy(&disp, p + off + 2, sizeof(disp)); /* x86-64: little-endian */
	*slot = addr + off + 6 + (uint64_t)(int64_t)disp;
	return 0;
}

static const char *got_find(const struct got_vec *gv, uint64_t slot)
{
	struct got_slot key = {.addr = slot};
	const struct got_slot *g = bsearch(&key, gv->v, gv->n, sizeof(*gv->v), got_cmp);

	return g ? g->name : NULL;
}

static bool is_plt_section(const char *name)
{
	return name && (strcmp(name, ".plt") == 0 || strcmp(name, ".plt.sec") == 0 ||
			strcmp(name, ".plt.got") == 0);
}

/* Appends a candidate for each stub of one PLT section whose slot is
 * named, with the bare name for now; widens the image's PLT range. */
static int plt_read_section(struct fr_elf_image *img, Elf_Scn *scn, const GElf_Shdr *sh,
			    const struct got_vec *gv, struct cand_vec *stubs)
{
	uint64_t ent = sh->sh_entsize == 8 || sh->sh_entsize == 16 ? sh->sh_entsize : 16;
	Elf_Data *d = elf_getdata(scn, NULL);

	if (!d || !d->d_buf || d->d_size < sh->sh_size)
		return 0;
	if (!img->plt_end || sh->sh_addr < img->plt_start)
		img->plt_start = sh->sh_addr;
	if (sh->sh_addr + sh->sh_size > img->plt_end)
		img->plt_end = sh->sh_addr + sh->sh_size;
	for (uint64_t off = 0; off + ent <= sh->sh_size; off += ent) {
		struct cand c = {.addr = sh->sh_addr + off, .size = ent, .bind = STB_GLOBAL};
		uint64_t slot;

		if (plt_decode((const uint8_t *)d->d_buf + off, ent, c.addr, &slot) < 0 ||
		    !(c.name = got_find(gv, slot)))
			continue;
		if (elf_cand_push(stubs, &c) < 0)
			return -ENOMEM;
	}
	return 0;
}

int elf_collect_plt(struct fr_elf_image *img, Elf *elf, uint64_t fsize, const GElf_Ehdr *eh,
		    struct cand_vec *cv)
{
	struct cand_vec stubs = {0};
	struct got_vec gv = {0};
	Elf_Scn *scn = NULL;
	size_t shstrndx, len = 0;
	int ret = 0;
	char *p;

	if (eh->e_machine != EM_X86_64 || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	while (ret == 0 && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA &&
		    within_file(sh.sh_offset, sh.sh_size, fsize) && sh.sh_size <= SECTION_MAX)
			ret = got_read_rela(elf, scn, &sh, fsize, &gv);
	}
	if (ret < 0 || !gv.n)
		goto out;
	qsort(gv.v, gv.n, sizeof(*gv.v), got_cmp);
	while (ret == 0 && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
		    (sh.sh_flags & SHF_EXECINSTR) &&
		    is_plt_section(elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    within_file(sh.sh_offset, sh.sh_size, fsize) && sh.sh_size <= SECTION_MAX)
			ret = plt_read_section(img, scn, &sh, &gv, &stubs);
	}
	if (ret < 0 || !stubs.n)
		goto out;
	for (size_t i = 0; i < stubs.n; i++)
		len += strlen(stubs.v[i].name) + sizeof("@plt");
	p = cv->plt_names = malloc(len);
	if (!p) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < stubs.n && ret == 0; i++) {
		int n = sprintf(p, "%s@plt", stubs.v[i].name);

		stubs.v[i].name = p;
		p += n + 1;
		ret = elf_cand_push(cv, &stubs.v[i]);
	}
out:
	free(stubs.v);
	free(gv.v);
	return ret;
}
