/* Source lines and inline frames from DWARF (see dwarf_lines.h). The only
 * file that talks to libdw.
 *
 * The ELF image is handed over in private memory (elf_memory()), so a file
 * its owner truncates or rewrites under the reader cannot change what is
 * parsed. libdw parses a compilation unit on first use and keeps it with
 * the Dwarf handle, which lives as long as the parsed image of the file;
 * the frames of each address looked up are kept too (up to a bound): a
 * second profile naming the same file finds its addresses resolved.
 *
 * The functions of a unit are indexed by address on its first look-up
 * (one walk of its DIE tree): each later address is a binary search and a
 * walk up the ranges that enclose it, where dwarf_getscopes() walked the
 * tree again for every address (most of a cold attach's time). A unit
 * that cannot be indexed (out of memory, nested too deep) is looked up
 * with dwarf_getscopes() as before; both give the same frames.
 *
 * Broken DWARF gives -ENOENT or fewer frames, never more: every DIE read
 * is checked, and the scope walk stops at the enclosing function.
 */
#include "core/symbols/dwarf_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/symbols/gopclntab.h"
#include "core/util/fs.h"
#include "core/util/grow.h"

/* Addresses resolved before, for the next profile that names them: a
 * hash table of (address, frames) whose frames sit in one array. Bounded:
 * once full, further addresses are looked up every time. */
#define CACHE_SLOTS 4096 /* power of two */
#define CACHE_MAX_FRAMES (4 * CACHE_SLOTS)

/* One address range of a function (a subprogram or an inlined
 * subroutine) in a unit's index. */
struct fn_range {
	uint64_t low, high;
	Dwarf_Off die;	/* the function's DIE */
	int32_t up;	/* the range of the function it is in (its caller); -1: none */
	uint16_t depth; /* of the DIE in the unit's tree */
};

/* The functions of a unit by address, built on the unit's first look-up:
 * ranges sorted by low address (an enclosing range before those it
 * holds), each pointing to the one enclosing it. A look-up is then a
 * binary search and a walk up, where dwarf_getscopes() walks the unit's
 * DIE tree for every address. */
struct unit_index {
	Dwarf_Off cu;
	struct fn_range *r;
	size_t n;
	bool walk; /* not indexed (out of memory, too deep): dwarf_getscopes() */
};

struct cache_slot {
	uint64_t addr;
	uint32_t frame; /* into frames */
	int16_t n;	/* the lookup's result; 0: empty slot */
};

struct fr_dwarf_lines {
	pthread_mutex_t lock; /* libdw's lazy parsing is not thread-safe */
	void *data;
	Elf *elf;
	Dwarf *dw;
	struct cache_slot *slots; /* CACHE_SLOTS, NULL until the first lookup */
	struct fr_dwarf_frame *frames;
	uint32_t nframes, nslots_used;
	size_t bytes;		  /* fr_dwarf_lines_bytes() */
	struct unit_index *units; /* indexed units, by offset */
	size_t nunits, capunits;
	/* A Go binary's function table (not owned): the lines of one
	 * without DWARF (elf NULL, nothing else set), or of the addresses
	 * its DWARF does not describe (Go's DWARF has no .debug_aranges,
	 * which libdw finds units by). */
	const struct fr_gopclntab *go;
};

/* What libdw's parsed units, abbreviations and line tables, and the units'
 * indexes (below), take at most, per byte of .debug_info, .debug_abbrev
 * and .debug_line (decompressed): measured 2.5 for Debian's libc (its
 * debug file) and 3.9 for flightrecd with every 16th byte of their code
 * looked up (docs/performance.md). */
#define PARSED_PER_BYTE 4
/* libelf's and libdw's handles: section tables, the Dwarf itself. */
#define HANDLE_BYTES (64u << 10)

/* The image's bytes in memory besides its copy: the sections libdw
 * decompresses (at dwarf_begin_elf()), by their headers' claims, and an
 * estimate of what it parses from them. */
static size_t libdw_bytes(Elf *elf)
{
	size_t shstrndx, n = 0, parsed = 0;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		uint64_t size;
		GElf_Shdr sh;
		GElf_Chdr ch;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		size = sh.sh_size;
		if (sh.sh_flags & SHF_COMPRESSED) {
			if (!gelf_getchdr(scn, &ch))
				continue;
			size = ch.ch_size;
			n += size < FR_DWARF_MAX_SIZE ? size : FR_DWARF_MAX_SIZE;
		}
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name &&
		    (strcmp(name, ".debug_info") == 0 || strcmp(name, ".debug_abbrev") == 0 ||
		     strcmp(name, ".debug_line") == 0))
			parsed += size < FR_DWARF_MAX_SIZE ? size : FR_DWARF_MAX_SIZE;
	}
	return n + parsed * PARSED_PER_BYTE;
}

struct fr_dwarf_lines *fr_dwarf_lines_new(void *data, size_t size)
{
	struct fr_dwarf_lines *d = calloc(1, sizeof(*d));

	if (!d)
		goto err_data;
	if (elf_version(EV_CURRENT) == EV_NONE)
		goto err_free;
	d->data = data;
	d->elf = elf_memory(data, size);
	if (!d->elf)
		goto err_free;
	d->bytes = sizeof(*d) + HANDLE_BYTES + size + libdw_bytes(d->elf) +
		   CACHE_SLOTS * sizeof(*d->slots) + CACHE_MAX_FRAMES * sizeof(*d->frames);
	d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
	if (!d->dw)
		goto err_elf;
	pthread_mutex_init(&d->lock, NULL);
	return d;
err_elf:
	elf_end(d->elf);
err_free:
	free(d);
err_data:
	free(data);
	return NULL;
}

/* Whether `elf` has section `name` with contents inside the file. */
static bool has_section(Elf *elf, size_t shstrndx, const char *name, uint64_t size)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && strcmp(n, name) == 0)
			return sh.sh_offset <= size && sh.sh_size <= size - sh.sh_offset;
	}
	return false;
}

bool fr_dwarf_lines_wanted(struct Elf *elf, uint64_t size)
{
	size_t shstrndx;

	return size <= FR_DWARF_MAX_SIZE && elf_getshdrstrndx(elf, &shstrndx) == 0 &&
	       has_section(elf, shstrndx, ".debug_info", size) &&
	       has_section(elf, shstrndx, ".debug_line", size);
}

struct fr_dwarf_lines *fr_dwarf_lines_read(struct Elf *elf, int fd, uint64_t size)
{
	uint8_t *data;

	if (!fr_dwarf_lines_wanted(elf, size))
		return NULL;
	data = malloc(size ? size : 1);
	if (!data)
		return NULL;
	/* A file that shrinks while it is read is not used. */
	if (fr_pread_full(fd, data, (size_t)size, 0) != (ssize_t)size) {
		free(data);
		return NULL;
	}
	return fr_dwarf_lines_new(data, size);
}

struct fr_dwarf_lines *fr_dwarf_lines_from_go(const struct fr_gopclntab *g)
{
	struct fr_dwarf_lines *d = g ? calloc(1, sizeof(*d)) : NULL;

	if (!d)
		return NULL;
	d->go = g;
	d->bytes = sizeof(*d);
	return d;
}

void fr_dwarf_lines_set_go(struct fr_dwarf_lines *d, const struct fr_gopclntab *g)
{
	if (d)
		d->go = g;
}

size_t fr_dwarf_lines_bytes(const struct fr_dwarf_lines *d)
{
	return d ? d->bytes : 0;
}

void fr_dwarf_lines_free(struct fr_dwarf_lines *d)
{
	if (!d)
		return;
	if (d->go && !d->elf) {
		free(d);
		return;
	}
	for (size_t i = 0; i < d->nunits; i++)
		free(d->units[i].r);
	free(d->units);
	dwarf_end(d->dw);
	elf_end(d->elf);
	free(d->slots);
	free(d->frames);
	free(d->data);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* File `idx` of the unit's file table, or NULL. */
static const char *unit_file(Dwarf_Die *cu, Dwarf_Word idx)
{
	Dwarf_Files *files;
	size_t n;

	if (dwarf_getsrcfiles(cu, &files, &n) != 0 || idx >= n)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

/* The call site of inlined subroutine `die`: the file and line its caller
 * is at. */
static void call_site(Dwarf_Die *cu, Dwarf_Die *die, const char **file, uint32_t *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word w;

	*file = NULL;
	*line = 0;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &w) == 0)
		*file = unit_file(cu, w);
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &w) == 0)
		*line = w > UINT32_MAX ? 0 : (uint32_t)w;
}

static bool is_function(Dwarf_Die *die)
{
	int tag = dwarf_tag(die);

	return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram;
}

/* The physical chain of scopes around `vaddr`, innermost first, into
 * *scopes (malloc'd): dwarf_getscopes() leaves an inlined instance for its
 * abstract definition's containers, so the chain is rebuilt from the
 * innermost function with dwarf_getscopes_die(), which follows the
 * instance's callers. Returns how many, or <= 0. */
static int function_scopes(Dwarf_Die *cu, uint64_t vaddr, Dwarf_Die **scopes)
{
	Dwarf_Die *all = NULL, inner;
	int n = dwarf_getscopes(cu, vaddr, &all), i = 0;

	while (i < n && !is_function(&all[i]))
		i++;
	if (i >= n) {
		free(all);
		return 0;
	}
	inner = all[i];
	free(all);
	return dwarf_getscopes_die(&inner, scopes);
}

/* Walks the functions around `vaddr` (innermost first): each inlined
 * subroutine is a frame at the current file:line and moves it to its call
 * site; the enclosing subprogram is the last frame. */
static int scope_frames(Dwarf_Die *cu, uint64_t vaddr, const char *file, uint32_t line,
			struct fr_dwarf_frame *out, size_t cap)
{
	Dwarf_Die *scopes = NULL;
	int nscopes = function_scopes(cu, vaddr, &scopes);
	size_t n = 0;

	for (int i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (!is_function(&scopes[i]))
			continue;
		/* Keep room for the real function: a deeper chain loses its
		 * outer inlined frames, not its ends. */
		if (n < cap - 1 || tag == DW_TAG_subprogram) {
			out[n].function = dwarf_diename(&scopes[i]);
			out[n].file = file;
			out[n].line = line;
			n++;
		}
		if (tag == DW_TAG_subprogram)
			break;
		call_site(cu, &scopes[i], &file, &line);
	}
	free(scopes);
	if (n == 0) {
		/* Lines without a described function (assembly). */
		if (!file)
			return -ENOENT;
		out[0] = (struct fr_dwarf_frame){.function = NULL, .file = file, .line = line};
		n = 1;
	}
	return (int)n;
}

/* DIEs deeper than this are not walked into (the unit is then looked up
 * the slow way); real code nests a few tens. Ranges beyond the second are
 * not indexed either. */
#define INDEX_DEPTH 128
#define INDEX_MAX_RANGES (1u << 22)

struct range_vec {
	struct fn_range *v;
	size_t n, cap;
};

/* Appends the address ranges of function `die`. Returns 0 or -ENOMEM
 * (-E2BIG past INDEX_MAX_RANGES). */
static int add_ranges(struct range_vec *rv, Dwarf_Die *die, int depth)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
		if (end <= start)
			continue;
		if (rv->n == rv->cap) {
			size_t cap = rv->cap ? rv->cap * 2 : 256;
			struct fn_range *v;

			if (cap > INDEX_MAX_RANGES)
				return -E2BIG;
			v = realloc(rv->v, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			rv->v = v;
			rv->cap = cap;
		}
		rv->v[rv->n++] =
			(struct fn_range){start, end, dwarf_dieoffset(die), -1, (uint16_t)depth};
	}
	return 0;
}

/* Collects the ranges of every function DIE of unit `cu`, depth first.
 * Returns 0 or < 0 (too deep, out of memory). */
static int collect_ranges(Dwarf_Die *cu, struct range_vec *rv)
{
	Dwarf_Die stack[INDEX_DEPTH], next;
	int depth = 0, ret;

	if (dwarf_child(cu, &stack[0]) != 0)
		return 0;
	depth = 1;
	while (depth > 0) {
		Dwarf_Die *cur = &stack[depth - 1];

		if (is_function(cur) && (ret = add_ranges(rv, cur, depth)) < 0)
			return ret;
		if (dwarf_haschildren(cur) && dwarf_child(cur, &next) == 0) {
			if (depth == INDEX_DEPTH)
				return -E2BIG;
			stack[depth++] = next;
			continue;
		}
		/* The next sibling, else the parent's next sibling. */
		while (depth > 0) {
			ret = dwarf_siblingof(&stack[depth - 1], &next);
			if (ret == 0) {
				stack[depth - 1] = next;
				break;
			}
			if (ret < 0)
				return -EBADMSG;
			depth--;
		}
	}
	return 0;
}

static int range_cmp(const void *pa, const void *pb)
{
	const struct fn_range *a = pa, *b = pb;

	if (a->low != b->low)
		return a->low < b->low ? -1 : 1;
	if (a->high != b->high)
		return a->high > b->high ? -1 : 1;
	/* Over the same bytes, a function comes before those inlined in it;
	 * of aliases (assembly's entry points), the first DIE last, so it is
	 * the one found, as dwarf_getscopes() finds it. */
	if (a->depth != b->depth)
		return a->depth < b->depth ? -1 : 1;
	return a->die > b->die ? -1 : a->die < b->die;
}

/* Points each range at the one enclosing it: a sweep with the stack of
 * ranges open at each start. Only a shallower DIE encloses: a range only
 * partly inside another (broken DWARF), or an alias's, gets none, so a
 * walk up never names more than nests. */
static int link_ranges(struct fn_range *r, size_t n)
{
	int32_t *open = malloc((n ? n : 1) * sizeof(*open));
	size_t sp = 0;

	if (!open)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		while (sp && r[open[sp - 1]].high <= r[i].low)
			sp--;
		while (sp &&
		       (r[open[sp - 1]].high < r[i].high || r[open[sp - 1]].depth >= r[i].depth))
			sp--;
		r[i].up = sp ? open[sp - 1] : -1;
		open[sp++] = (int32_t)i;
	}
	free(open);
	return 0;
}

/* The index of unit `cu`, built on first use; NULL when out of memory. */
static struct unit_index *unit_index(struct fr_dwarf_lines *d, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	struct range_vec rv = {0};
	struct unit_index *u;
	size_t lo = 0, hi = d->nunits;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->units[mid].cu < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < d->nunits && d->units[lo].cu == off)
		return &d->units[lo];
	if (FR_GROW(d->units, &d->capunits, d->nunits + 1, 64) < 0)
		return NULL;
	memmove(&d->units[lo + 1], &d->units[lo], (d->nunits - lo) * sizeof(*d->units));
	d->nunits++;
	u = &d->units[lo];
	*u = (struct unit_index){.cu = off};
	if (collect_ranges(cu, &rv) == 0 && rv.n <= INT32_MAX) {
		if (rv.n)
			qsort(rv.v, rv.n, sizeof(*rv.v), range_cmp);
		if (link_ranges(rv.v, rv.n) == 0) {
			/* Kept for the image's life: no room to spare. */
			struct fn_range *fit = rv.n ? realloc(rv.v, rv.n * sizeof(*rv.v)) : NULL;

			u->r = fit ? fit : rv.v;
			u->n = rv.n;
			return u;
		}
	}
	free(rv.v);
	u->walk = true;
	return u;
}

/* The innermost function range of `u` holding `vaddr`, or -1. */
static int32_t unit_find(const struct unit_index *u, uint64_t vaddr)
{
	size_t lo = 0, hi = u->n;
	int32_t i;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->r[mid].low <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The last range starting at or before vaddr, or the nearest
	 * enclosing one that holds it. */
	for (i = (int32_t)lo - 1; i >= 0 && vaddr >= u->r[i].high; i = u->r[i].up)
		;
	return i;
}

/* scope_frames() through the unit's index: the same frames, from the
 * chain of ranges enclosing `vaddr`. */
static int index_frames(struct fr_dwarf_lines *d, const struct unit_index *u, Dwarf_Die *cu,
			uint64_t vaddr, const char *file, uint32_t line, struct fr_dwarf_frame *out,
			size_t cap)
{
	size_t n = 0;

	for (int32_t i = unit_find(u, vaddr); i >= 0; i = u->r[i].up) {
		Dwarf_Die die;
		int tag;

		if (!dwarf_offdie(d->dw, u->r[i].die, &die))
			break;
		tag = dwarf_tag(&die);
		if (n < cap - 1 || tag == DW_TAG_subprogram) {
			out[n].function = dwarf_diename(&die);
			out[n].file = file;
			out[n].line = line;
			n++;
		}
		if (tag == DW_TAG_subprogram)
			break;
		call_site(cu, &die, &file, &line);
	}
	if (n == 0) {
		if (!file)
			return -ENOENT;
		out[0] = (struct fr_dwarf_frame){.function = NULL, .file = file, .line = line};
		n = 1;
	}
	return (int)n;
}

/* The slot of `vaddr`: its own, or the empty one it would take; NULL
 * when the table is missing or full. */
static struct cache_slot *cache_slot(struct fr_dwarf_lines *d, uint64_t vaddr)
{
	size_t i;

	if (!d->slots)
		d->slots = calloc(CACHE_SLOTS, sizeof(*d->slots));
	if (!d->slots)
		return NULL;
	i = (size_t)((vaddr * 0x9e3779b97f4a7c15ULL) >> 52) & (CACHE_SLOTS - 1);
	for (size_t probe = 0; probe < CACHE_SLOTS; probe++, i = (i + 1) & (CACHE_SLOTS - 1))
		if (!d->slots[i].n || d->slots[i].addr == vaddr)
			return &d->slots[i];
	return NULL;
}

/* Keeps a lookup's result (frames or -ENOENT) in slot `sl` when it is
 * empty and there is room. */
static void cache_put(struct fr_dwarf_lines *d, struct cache_slot *sl, uint64_t vaddr,
		      const struct fr_dwarf_frame *fr, int n)
{
	uint32_t need = n > 0 ? (uint32_t)n : 0;

	/* A table kept three quarters empty keeps probes short. */
	if (!sl || sl->n || d->nslots_used >= CACHE_SLOTS / 4 * 3 ||
	    d->nframes + need > CACHE_MAX_FRAMES)
		return;
	if (!d->frames)
		d->frames = malloc(CACHE_MAX_FRAMES * sizeof(*d->frames));
	if (!d->frames)
		return;
	memcpy(d->frames + d->nframes, fr, need * sizeof(*fr));
	*sl = (struct cache_slot){.addr = vaddr, .frame = d->nframes, .n = (int16_t)n};
	d->nframes += need;
	d->nslots_used++;
}

int fr_dwarf_lines_lookup(struct fr_dwarf_lines *d, uint64_t vaddr, struct fr_dwarf_frame *out,
			  size_t cap)
{
	struct unit_index *u;
	struct cache_slot *sl;
	const char *file = NULL;
	Dwarf_Die cu;
	Dwarf_Line *ln;
	int line = 0, ret = -ENOENT;

	if (!d || cap == 0)
		return -EINVAL;
	/* The Go table only reads: no lock, no cache. */
	if (d->go && !d->elf)
		return fr_gopclntab_lookup(d->go, vaddr, out, cap);
	pthread_mutex_lock(&d->lock);
	sl = cache_slot(d, vaddr);
	if (sl && sl->n && sl->n <= (int)cap) {
		ret = sl->n;
		if (ret > 0)
			memcpy(out, d->frames + sl->frame, (size_t)ret * sizeof(*out));
		goto out_locked;
	}
	if (!dwarf_addrdie(d->dw, vaddr, &cu))
		goto out;
	ln = dwarf_getsrc_die(&cu, vaddr);
	if (ln) {
		file = dwarf_linesrc(ln, NULL, NULL);
		if (dwarf_lineno(ln, &line) != 0 || line < 0)
			line = 0;
	}
	u = unit_index(d, &cu);
	if (u && !u->walk)
		ret = index_frames(d, u, &cu, vaddr, file, (uint32_t)line, out, cap);
	else
		ret = scope_frames(&cu, vaddr, file, (uint32_t)line, out, cap);
out:
	if (ret == -ENOENT && d->go)
		ret = fr_gopclntab_lookup(d->go, vaddr, out, cap);
	if (cap == FR_DWARF_MAX_FRAMES)
		cache_put(d, sl, vaddr, out, ret);
out_locked:
	pthread_mutex_unlock(&d->lock);
	return ret;
}
