/* Reading ELF files other users may control: their build id, and their
 * function symbols into an image (see elf_image.h). With elf_plt.c (the
 * PLT's stubs), the only code that talks to libelf.
 *
 * libelf reads with pread into private memory (ELF_C_READ), never through
 * a mapping of the file: a user who truncates the file while it is read
 * makes a read come up short (an error), where a mapping would kill the
 * reader with SIGBUS. Sections and notes that claim to lie beyond the end
 * of the file, and tables too large to be real, are not read at all.
 *
 * Invariants: image->addrs is sorted with unique addresses, image->syms
 * parallel to it.
 */
#include "core/symbols/elf_image.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/symbols/debuglink.h"
#include "core/symbols/elf_int.h"
#include "core/symbols/gopclntab.h"
#include "core/util/buildid.h"
#include "core/util/fs.h"
#include "core/symbols/dwarf_lines.h"
#include "core/symbols/search.h"
#include "core/util/grow.h"

/* How many preceding symbols may enclose an address that falls past the
 * end of the nearest one (nested asm entry points). */
#define ENCLOSING_LOOKBACK 4
/* Notes bigger than this are not searched for a build id: real ones are a
 * few hundred bytes. */
#define NOTE_MAX (1 << 20)

/* Symbol addresses are kept apart from the rest (image->addrs) so the
 * binary search touches a dense array: a third of the cache lines. */
struct fr_elf_sym {
	uint64_t size;	  /* 0: extends to the next symbol */
	const char *name; /* in one of image->arenas */
};

/* Names of an image. A table rebuilt with a debug file gets a new arena;
 * the old one stays, since callers may still hold names from it. */
struct fr_elf_arena {
	struct fr_elf_arena *next;
	size_t len;
	char data[];
};

struct fr_elf_load {
	uint64_t offset;
	uint64_t vaddr;
	uint64_t filesz;
};

char *fr_build_id_hex(const uint8_t *id, size_t len, char *buf)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		buf[2 * i] = hex[id[i] >> 4];
		buf[2 * i + 1] = hex[id[i] & 0xf];
	}
	buf[2 * len] = '\0';
	return buf;
}

/* The GNU build id among the notes of d, or with `go`, the id of Go's
 * build id note (core/util/buildid.h). */
static int note_find_build_id(Elf_Data *d, bool go, uint8_t *out, size_t cap)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	if (!d || !d->d_buf)
		return -ENOENT;
	while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		const char *nm = (const char *)d->d_buf + name_off;
		const uint8_t *desc = (const uint8_t *)d->d_buf + desc_off;

		if (!go && nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(nm, "GNU", 4) == 0 && nh.n_descsz > 0) {
			if (nh.n_descsz > cap)
				return -ENOSPC;
			memcpy(out, desc, nh.n_descsz);
			return (int)nh.n_descsz;
		}
		if (go && nh.n_type == FR_GO_BUILD_ID_NOTE && fr_go_note_owner(nm, nh.n_namesz))
			return fr_go_build_id(desc, nh.n_descsz, out, cap);
		off = next;
	}
	return -ENOENT;
}

/* Build id from the PT_NOTE segments, else from SHT_NOTE sections (debug
 * files and objects without program headers); a GNU one first, else a Go
 * executable's. */
static int elf_read_build_id(Elf *elf, uint64_t fsize, uint8_t *out, size_t cap)
{
	size_t phnum = 0;
	int ret;

	if (elf_getphdrnum(elf, &phnum) < 0)
		phnum = 0;
	for (int go = 0; go < 2; go++) {
		Elf_Scn *scn = NULL;

		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;
			Elf_Data *d;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE ||
			    !within_file(ph.p_offset, ph.p_filesz, fsize) || ph.p_filesz > NOTE_MAX)
				continue;
			d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
						 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
			ret = note_find_build_id(d, go, out, cap);
			if (ret != -ENOENT)
				return ret;
		}
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
			    !within_file(sh.sh_offset, sh.sh_size, fsize) || sh.sh_size > NOTE_MAX)
				continue;
			ret = note_find_build_id(elf_getdata(scn, NULL), go, out, cap);
			if (ret != -ENOENT)
				return ret;
		}
	}
	return -ENOENT;
}

static Elf *elf_open_fd(int fd, int *err)
{
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		*err = -ENOSYS;
		return NULL;
	}
	/* ELF_C_READ, not ELF_C_READ_MMAP: see the top of this file. */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		*err = -EBADMSG;
		return NULL;
	}
	if (elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		*err = -ENOEXEC;
		return NULL;
	}
	return elf;
}

int fr_elf_build_id_fd(int fd, uint8_t *out, size_t cap)
{
	struct stat st;
	int ret = 0;
	Elf *elf;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	elf = elf_open_fd(fd, &ret);
	if (!elf)
		return ret;
	ret = elf_read_build_id(elf, (uint64_t)st.st_size, out, cap);
	elf_end(elf);
	return ret;
}

int fr_elf_build_id(const char *path, uint8_t *out, size_t cap)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = fr_elf_build_id_fd(fd, out, cap);
	close(fd);
	return ret;
}

int elf_cand_push(struct cand_vec *cv, const struct cand *c)
{
	if (FR_GROW(cv->v, &cv->cap, cv->n + 1, 256) < 0)
		return -ENOMEM;
	cv->v[cv->n++] = *c;
	return 0;
}

static unsigned bind_rank(unsigned bind)
{
	switch (bind) {
	case STB_GLOBAL: return 0;
	case STB_WEAK: return 1;
	default: return 2;
	}
}

/* A symbol's name without the version a symbol table may spell into it
 * ("__libc_start_main@@GLIBC_2.34" in a debug file's .symtab): the name
 * users and other tools know, which -focus regexes match. "NAME@plt", the
 * name of a PLT stub, keeps its suffix. */
static size_t sym_name_len(const char *name)
{
	const char *at = strchr(name, '@');

	if (!at || at == name || strcmp(at, "@plt") == 0)
		return strlen(name);
	return (size_t)(at - name);
}

/* Address order; among aliases at one address the best name first: the
 * public spelling (fewest leading underscores, so "getpid" before
 * "__getpid"), then global before weak before local, then the shorter. */
static int cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	unsigned ua, ub, ra, rb;
	size_t la, lb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	ua = fr_leading_underscores(a->name);
	ub = fr_leading_underscores(b->name);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	ra = bind_rank(a->bind);
	rb = bind_rank(b->bind);
	if (ra != rb)
		return ra < rb ? -1 : 1;
	la = sym_name_len(a->name);
	lb = sym_name_len(b->name);
	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Appends the function symbols of every symbol table of `type` in `elf`.
 * Returns the number of tables read, or -ENOMEM. */
static int collect_symbols(Elf *elf, uint64_t fsize, unsigned type, bool arm, struct cand_vec *cv)
{
	Elf_Scn *scn = NULL;
	int tables = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		GElf_Shdr strh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize ||
		    !within_file(sh.sh_offset, sh.sh_size, fsize) || sh.sh_size > SECTION_MAX)
			continue;
		/* The names' table, read whole by elf_strptr(), must be in the
		 * file too. */
		if (!gelf_getshdr(elf_getscn(elf, sh.sh_link), &strh) ||
		    !within_file(strh.sh_offset, strh.sh_size, fsize) || strh.sh_size > SECTION_MAX)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		if (n > 1)
			tables++;
		for (size_t i = 1; i < n; i++) {
			GElf_Sym es;
			struct cand c;
			unsigned st;

			if (!gelf_getsym(d, (int)i, &es))
				break;
			st = GELF_ST_TYPE(es.st_info);
			if (st != STT_FUNC && st != STT_GNU_IFUNC)
				continue;
			if (es.st_shndx == SHN_UNDEF || !es.st_value)
				continue;
			c.name = elf_strptr(elf, sh.sh_link, es.st_name);
			if (!c.name || !c.name[0])
				continue;
			/* Thumb functions have the low bit set in st_value. */
			c.addr = arm ? es.st_value & ~1ULL : es.st_value;
			c.size = es.st_size;
			c.bind = GELF_ST_BIND(es.st_info);
			if (elf_cand_push(cv, &c) < 0)
				return -ENOMEM;
		}
	}
	return tables;
}

static void cand_vec_fini(struct cand_vec *cv)
{
	free(cv->v);
	free(cv->plt_names);
}

/* Sorts, merges aliases (keeping the best name and the largest size) and
 * copies the surviving names into a new arena; replaces the image's table. */
static int image_set_symbols(struct fr_elf_image *img, struct cand_vec *cv)
{
	size_t n = 0, arena_len = 0;
	struct fr_elf_arena *arena;
	struct fr_elf_sym *syms;
	uint64_t *addrs;
	char *p;

	if (!cv->n)
		return 0;
	qsort(cv->v, cv->n, sizeof(*cv->v), cand_cmp);
	for (size_t i = 0; i < cv->n; i++) {
		if (n && cv->v[n - 1].addr == cv->v[i].addr) {
			if (cv->v[i].size > cv->v[n - 1].size)
				cv->v[n - 1].size = cv->v[i].size;
			continue;
		}
		cv->v[n++] = cv->v[i];
	}
	for (size_t i = 0; i < n; i++)
		arena_len += sym_name_len(cv->v[i].name) + 1;
	addrs = malloc(n * sizeof(*addrs));
	syms = malloc(n * sizeof(*syms));
	arena = malloc(sizeof(*arena) + arena_len);
	if (!addrs || !syms || !arena)
		goto err_free;
	arena->len = arena_len;
	p = arena->data;
	for (size_t i = 0; i < n; i++) {
		size_t len = sym_name_len(cv->v[i].name);

		memcpy(p, cv->v[i].name, len);
		p[len++] = '\0';
		addrs[i] = cv->v[i].addr;
		syms[i].size = cv->v[i].size;
		syms[i].name = p;
		p += len;
	}
	free(img->addrs);
	free(img->syms);
	img->addrs = addrs;
	img->syms = syms;
	img->nsyms = n;
	arena->next = img->arenas;
	img->arenas = arena;
	return 0;
err_free:
	free(addrs);
	free(syms);
	free(arena);
	return -ENOMEM;
}

static int image_read_loads(struct fr_elf_image *img, Elf *elf)
{
	size_t phnum = 0, n = 0;

	if (elf_getphdrnum(elf, &phnum) != 0 || !phnum)
		return 0;
	img->loads = calloc(phnum, sizeof(*img->loads));
	if (!img->loads)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		img->loads[n].offset = ph.p_offset;
		img->loads[n].vaddr = ph.p_vaddr;
		img->loads[n].filesz = ph.p_filesz;
		n++;
	}
	img->nloads = n;
	return 0;
}

/* Opens root + DIR/.build-id/xx/yyyy.debug when it carries the image's
 * build id. Returns the Elf handle and its fd in *fd_out, or NULL. */
static Elf *open_debug_file(const struct fr_elf_image *img, const char *root, const char *dir,
			    int *fd_out, uint64_t *size_out)
{
	struct stat st;
	char hex[2 * FR_ELF_BUILD_ID_MAX + 1], path[4096];
	uint8_t bid[FR_ELF_BUILD_ID_MAX];
	int fd, err;
	Elf *elf;

	if (img->build_id_len < 2)
		return NULL;
	fr_build_id_hex(img->build_id, img->build_id_len, hex);
	if (snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", dir, hex, hex + 2) >=
	    (int)sizeof(path))
		return NULL;
	fd = fr_open_untrusted(root, path, FR_ELF_MAX_SIZE, &st);
	if (fd < 0)
		return NULL;
	elf = elf_open_fd(fd, &err);
	if (elf &&
	    elf_read_build_id(elf, (uint64_t)st.st_size, bid, sizeof(bid)) ==
		    (int)img->build_id_len &&
	    memcmp(bid, img->build_id, img->build_id_len) == 0) {
		*fd_out = fd;
		*size_out = (uint64_t)st.st_size;
		return elf;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return NULL;
}

/* Takes dbg's symbols from the debug file `e` of `size` bytes. */
static int debug_symbols(struct fr_elf_image *dbg, Elf *e, uint64_t size)
{
	struct cand_vec cv = {0};
	int ret;

	if (collect_symbols(e, size, SHT_SYMTAB, dbg->arm, &cv) < 0)
		ret = -ENOMEM;
	else
		ret = image_set_symbols(dbg, &cv);
	if (ret == 0)
		dbg->debug_missing = false;
	cand_vec_fini(&cv);
	return ret;
}

/* Whether the build id `e` carries, if any, is dbg's: a debug file of
 * another build is another program's. */
static bool debug_build_id_ok(const struct fr_elf_image *dbg, Elf *e, uint64_t size)
{
	uint8_t bid[FR_ELF_BUILD_ID_MAX];
	int len = elf_read_build_id(e, size, bid, sizeof(bid));

	return len <= 0 ||
	       ((size_t)len == dbg->build_id_len && memcmp(bid, dbg->build_id, (size_t)len) == 0);
}

int fr_elf_debug_load(struct fr_elf_image *dbg, const char *root, const char *dir)
{
	int dbg_fd = -1, ret;
	uint64_t dbg_size = 0;
	Elf *e;

	e = open_debug_file(dbg, root, dir, &dbg_fd, &dbg_size);
	if (!e)
		return 0;
	ret = debug_symbols(dbg, e, dbg_size);
	if (ret == 0)
		dbg->dwarf = fr_dwarf_lines_read(e, dbg_fd, dbg_size);
	elf_end(e);
	close(dbg_fd);
	return ret;
}

int fr_elf_debug_load_fd(struct fr_elf_image *dbg, int fd, uint64_t size)
{
	int ret;
	Elf *e = elf_open_fd(fd, &ret);

	if (!e)
		return ret;
	if (!debug_build_id_ok(dbg, e, size))
		ret = -ESTALE;
	else if ((ret = debug_symbols(dbg, e, size)) == 0)
		dbg->dwarf = fr_dwarf_lines_read(e, fd, size);
	elf_end(e);
	return ret;
}

int fr_elf_debug_load_mem(struct fr_elf_image *dbg, void *data, uint64_t size)
{
	bool dwarf = false;
	int ret;
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		free(data);
		return -ENOSYS;
	}
	e = elf_memory(data, (size_t)size);
	if (!e) {
		free(data);
		return -EBADMSG;
	}
	if (elf_kind(e) != ELF_K_ELF)
		ret = -ENOEXEC;
	else if (!debug_build_id_ok(dbg, e, size))
		ret = -ESTALE;
	else if ((ret = debug_symbols(dbg, e, size)) == 0)
		dwarf = fr_dwarf_lines_wanted(e, size);
	/* Names are copied: the handle goes before the bytes change hands. */
	elf_end(e);
	if (dwarf)
		dbg->dwarf = fr_dwarf_lines_new(data, (size_t)size);
	else
		free(data);
	return ret;
}

/* Hands the bytes of .gnu_debuglink to fr_debuglink_parse(). */
static void read_debuglink(struct fr_elf_image *img, Elf *elf, uint64_t fsize)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf_Data *d;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !within_file(sh.sh_offset, sh.sh_size, fsize) || sh.sh_size > 4096)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && strcmp(name, ".gnu_debuglink") == 0 && (d = elf_getdata(scn, NULL)) &&
		    d->d_buf)
			fr_debuglink_parse(img, d->d_buf, d->d_size,
					   elf_getident(elf, NULL)[EI_DATA] == ELFDATA2MSB);
	}
}

int fr_elf_image_load(struct fr_elf_image *img, int fd, uint64_t size)
{
	struct cand_vec cv = {0};
	int ret = 0, tables;
	GElf_Ehdr eh;
	Elf *elf;

	elf = elf_open_fd(fd, &ret);
	if (!elf)
		return ret;
	if (!gelf_getehdr(elf, &eh)) {
		ret = -EBADMSG;
		goto out;
	}
	img->arm = eh.e_machine == EM_ARM;
	ret = image_read_loads(img, elf);
	if (ret < 0)
		goto out;
	ret = elf_read_build_id(elf, size, img->build_id, sizeof(img->build_id));
	img->build_id_len = ret > 0 ? (size_t)ret : 0;

	/* .dynsym is merged with .symtab rather than used only as a fallback:
	 * it costs little and covers binaries whose .symtab was trimmed. */
	tables = collect_symbols(elf, size, SHT_SYMTAB, img->arm, &cv);
	if (tables < 0 || (ret = collect_symbols(elf, size, SHT_DYNSYM, img->arm, &cv)) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	if (elf_collect_plt(img, elf, size, &eh, &cv) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	/* Names are copied before the Elf handle is released. */
	ret = image_set_symbols(img, &cv);
	/* Lines are optional: without them functions keep their names. */
	if (ret == 0)
		img->dwarf = fr_dwarf_lines_read(elf, fd, size);
	/* A Go binary keeps its own table of both, stripped or not: names
	 * when it has no .symtab, lines where DWARF has none. */
	if (ret == 0 && (img->go = elf_go_read(elf, fd, size))) {
		img->go_names = tables == 0;
		if (!img->dwarf)
			img->dwarf = fr_dwarf_lines_from_go(img->go);
		else
			fr_dwarf_lines_set_go(img->dwarf, img->go);
	}
	/* Where the debug file is, the caller knows (its debug directories,
	 * a process's root): the image only says one is wanted. */
	if (ret == 0 && (tables == 0 || !img->dwarf)) {
		read_debuglink(img, elf, size);
		img->debug_missing = img->build_id_len >= 2 || img->debuglink[0];
	}
out:
	cand_vec_fini(&cv);
	elf_end(elf);
	return ret;
}

void fr_elf_image_fini(struct fr_elf_image *img)
{
	free(img->addrs);
	free(img->syms);
	free(img->loads);
	fr_dwarf_lines_free(img->dwarf);
	fr_gopclntab_free(img->go);
	while (img->arenas) {
		struct fr_elf_arena *next = img->arenas->next;

		free(img->arenas);
		img->arenas = next;
	}
	memset(img, 0, sizeof(*img));
}

size_t fr_elf_image_bytes(const struct fr_elf_image *img)
{
	size_t n = img->nsyms * (sizeof(*img->addrs) + sizeof(*img->syms)) +
		   img->nloads * sizeof(*img->loads) + fr_dwarf_lines_bytes(img->dwarf) +
		   fr_gopclntab_bytes(img->go);

	for (const struct fr_elf_arena *a = img->arenas; a; a = a->next)
		n += sizeof(*a) + a->len;
	return n;
}

int fr_elf_image_translate(const struct fr_elf_image *img, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < img->nloads; i++) {
		const struct fr_elf_load *l = &img->loads[i];

		if (off >= l->offset && off - l->offset < l->filesz) {
			*vaddr = off - l->offset + l->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

int fr_elf_image_lookup(const struct fr_elf_image *img, uint64_t vaddr, const char **name)
{
	size_t lo = fr_count_le(img->addrs, img->nsyms, vaddr);

	if (img->go_names && fr_gopclntab_func(img->go, vaddr, name, NULL) == 0)
		return 0;
	if (!lo)
		return -ENOENT;
	if (!img->syms[lo - 1].size) {
		/* A symbol without a size ends where the PLT begins: the
		 * stubs, and the header of .plt, are not _init's. */
		if (img->addrs[lo - 1] < img->plt_start && vaddr >= img->plt_start &&
		    vaddr < img->plt_end)
			return -ENOENT;
		*name = img->syms[lo - 1].name;
		return 0;
	}
	for (size_t i = lo, k = 0; i > 0 && k < ENCLOSING_LOOKBACK; i--, k++) {
		const struct fr_elf_sym *e = &img->syms[i - 1];

		if (e->size && vaddr - img->addrs[i - 1] < e->size) {
			*name = e->name;
			return 0;
		}
	}
	return -ENOENT;
}

bool fr_elf_image_in_plt(const struct fr_elf_image *img, uint64_t vaddr)
{
	return vaddr >= img->plt_start && vaddr < img->plt_end;
}

/* Code and data: what a symbolizer never reads (see fr_elf_symbol_ranges()). */
static bool section_is_body(const char *name, const GElf_Shdr *sh)
{
	static const char *const bodies[] = {".text",	     ".rodata", ".data",
					     ".data.rel.ro", ".ltext",	".lrodata",
					     ".ldata",	     ".tdata",	".gcc_except_table"};

	if (sh->sh_type != SHT_PROGBITS || !(sh->sh_flags & SHF_ALLOC) || !name)
		return false;
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		if (strcmp(name, bodies[i]) == 0)
			return true;
	return false;
}

static int range_cmp(const void *a, const void *b)
{
	const struct fr_elf_range *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* The complement of the sorted `skip` ranges within [0, size), into out
 * (room for nskip + 1). Returns how many. */
static size_t complement(const struct fr_elf_range *skip, size_t nskip, uint64_t size,
			 struct fr_elf_range *out)
{
	uint64_t at = 0;
	size_t n = 0;

	for (size_t i = 0; i < nskip; i++) {
		if (skip[i].off > at)
			out[n++] = (struct fr_elf_range){at, skip[i].off - at};
		if (skip[i].off + skip[i].len > at)
			at = skip[i].off + skip[i].len;
	}
	if (at < size)
		out[n++] = (struct fr_elf_range){at, size - at};
	return n;
}

/* A Go binary's inline trees lie at the end of .rodata: the skipped
 * range that holds them ends where they begin. */
static void go_keep(Elf *elf, int fd, uint64_t size, struct fr_elf_range *skip, size_t nskip)
{
	struct fr_elf_range k;

	if (!elf_go_keep(elf, fd, size, &k))
		return;
	for (size_t i = 0; i < nskip; i++)
		if (k.off >= skip[i].off && k.off < skip[i].off + skip[i].len)
			skip[i].len = k.off - skip[i].off;
}

int fr_elf_symbol_ranges(int fd, uint64_t size, struct fr_elf_range **out, size_t *n)
{
	struct fr_elf_range *skip = NULL, *keep = NULL;
	size_t shnum = 0, shstrndx, nskip = 0;
	Elf_Scn *scn = NULL;
	int ret = 0;
	Elf *elf = elf_open_fd(fd, &ret);

	if (!elf)
		return ret;
	if (elf_getshdrnum(elf, &shnum) != 0 || elf_getshdrstrndx(elf, &shstrndx) != 0) {
		ret = -EBADMSG;
		goto out;
	}
	skip = calloc(shnum + 1, sizeof(*skip));
	keep = calloc(shnum + 2, sizeof(*keep));
	if (!skip || !keep) {
		ret = -ENOMEM;
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn)) && nskip < shnum) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && within_file(sh.sh_offset, sh.sh_size, size) &&
		    section_is_body(elf_strptr(elf, shstrndx, sh.sh_name), &sh))
			skip[nskip++] = (struct fr_elf_range){sh.sh_offset, sh.sh_size};
	}
	qsort(skip, nskip, sizeof(*skip), range_cmp);
	go_keep(elf, fd, size, skip, nskip);
	*n = complement(skip, nskip, size, keep);
	*out = keep;
	keep = NULL;
out:
	free(skip);
	free(keep);
	elf_end(elf);
	return ret;
}
