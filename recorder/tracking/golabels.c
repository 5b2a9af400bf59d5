/* Go programs' pprof labels: detection and the runtime's offsets
 * (recorder/tracking/golabels.h).
 */
#include "recorder/tracking/golabels.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/symbols/go_dwarf.h"
#include "core/symbols/go_exe.h"
#include "core/util/fs.h"
#include "flightrec/labels_abi.h"

/* Bounds on what is read of a file another user controls. */
#define PHDRS_MAX 256u
#define SHDRS_MAX 4096u
#define SHSTRTAB_MAX (64u << 10)
#define BUILDINFO_MAX 4096u
#define SYMS_CHUNK 2048u
#define SYMS_MAX (8u << 20)
/* A program whose release is not in the table is read whole for its
 * DWARF, up to this size: the look-up must end within its deadline (250
 * ms; 2 MiB parse in 12 to 25 ms on a busy 2-vCPU machine). */
#define DWARF_FILE_MAX (16ull << 20)

/* ---- the offsets ---- */

/* Per release, from its src/runtime/runtime2.go (linux/amd64): g.m is
 * 48 in all; m.curg 192 until gobuf lost its `ret` word in 1.25 (m.morebuf
 * is a gobuf), 184 since; g.labels moves with the fields before it from
 * release to release (g.sched is a gobuf too). The labels are a map up to
 * 1.23, a sorted slice of pairs from 1.24 (runtime/pprof/label.go). */
static const struct {
	uint8_t first, last;
	uint16_t curg, labels;
	uint8_t kind;
} layouts[] = {
	{16, 16, 192, 344, FR_BPF_GO_MAP},   {17, 20, 192, 360, FR_BPF_GO_MAP},
	{21, 22, 192, 344, FR_BPF_GO_MAP},   {23, 23, 192, 352, FR_BPF_GO_MAP},
	{24, 24, 192, 352, FR_BPF_GO_SLICE}, {25, 25, 184, 344, FR_BPF_GO_SLICE},
};

int fr_go_offsets(uint32_t minor, struct fr_go_runtime *rt)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		if (minor < layouts[i].first || minor > layouts[i].last)
			continue;
		rt->minor = minor;
		rt->m = 48;
		rt->curg = layouts[i].curg;
		rt->labels = layouts[i].labels;
		rt->kind = layouts[i].kind;
		return 0;
	}
	return -ENOTSUP;
}

/* ---- the executable ---- */

struct exe {
	int fd;
	Elf64_Ehdr eh;
	Elf64_Phdr ph[PHDRS_MAX];
	unsigned nph;
};

static int pread_exact(int fd, void *buf, size_t n, uint64_t off)
{
	ssize_t got = fr_pread_full(fd, buf, n, off);

	if (got < 0)
		return (int)got;
	return (size_t)got == n ? 0 : -ENOEXEC;
}

/* Reads n bytes at virtual address addr of the program's image (from its
 * PT_LOAD segments' file bytes). */
static int exe_vread(void *arg, uint64_t addr, void *buf, size_t n)
{
	const struct exe *x = arg;

	for (unsigned i = 0; i < x->nph; i++) {
		const Elf64_Phdr *p = &x->ph[i];

		if (p->p_type != PT_LOAD || addr < p->p_vaddr || addr - p->p_vaddr >= p->p_filesz ||
		    p->p_filesz - (addr - p->p_vaddr) < n)
			continue;
		return pread_exact(x->fd, buf, n, p->p_offset + (addr - p->p_vaddr));
	}
	return -EFAULT;
}

static int read_headers(struct exe *x)
{
	int ret = pread_exact(x->fd, &x->eh, sizeof(x->eh), 0);

	if (ret < 0)
		return ret;
	if (memcmp(x->eh.e_ident, ELFMAG, SELFMAG) != 0 || x->eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    x->eh.e_ident[EI_DATA] != ELFDATA2LSB || x->eh.e_machine != EM_X86_64 ||
	    x->eh.e_phentsize != sizeof(Elf64_Phdr) || x->eh.e_phnum > PHDRS_MAX ||
	    x->eh.e_shentsize != sizeof(Elf64_Shdr) || x->eh.e_shnum > SHDRS_MAX ||
	    x->eh.e_shstrndx >= x->eh.e_shnum)
		return -ENOEXEC;
	x->nph = x->eh.e_phnum;
	return pread_exact(x->fd, x->ph, x->nph * sizeof(Elf64_Phdr), x->eh.e_phoff);
}

/* The section headers named .go.buildinfo and .symtab (type 0: none). */
static int find_sections(struct exe *x, Elf64_Shdr *info, Elf64_Shdr *symtab, Elf64_Shdr *strtab)
{
	Elf64_Shdr *sh = calloc(x->eh.e_shnum ? x->eh.e_shnum : 1, sizeof(*sh));
	char *names = NULL;
	uint64_t nlen;
	int ret;

	if (!sh)
		return -ENOMEM;
	ret = pread_exact(x->fd, sh, x->eh.e_shnum * sizeof(*sh), x->eh.e_shoff);
	if (ret < 0)
		goto out;
	nlen = sh[x->eh.e_shstrndx].sh_size < SHSTRTAB_MAX ? sh[x->eh.e_shstrndx].sh_size
							   : SHSTRTAB_MAX;
	ret = -ENOMEM;
	if (!(names = calloc(1, nlen + 1)))
		goto out;
	ret = pread_exact(x->fd, names, nlen, sh[x->eh.e_shstrndx].sh_offset);
	if (ret < 0)
		goto out;
	for (unsigned i = 0; i < x->eh.e_shnum; i++) {
		const char *n = sh[i].sh_name < nlen ? names + sh[i].sh_name : "";

		if (strcmp(n, ".go.buildinfo") == 0)
			*info = sh[i];
		else if (sh[i].sh_type == SHT_SYMTAB && sh[i].sh_link < x->eh.e_shnum) {
			*symtab = sh[i];
			*strtab = sh[sh[i].sh_link];
		}
	}
out:
	free(names);
	free(sh);
	return ret;
}

/* The program's PT_TLS segment, or NULL. */
static const Elf64_Phdr *tls_segment(const struct exe *x)
{
	for (unsigned i = 0; i < x->nph; i++)
		if (x->ph[i].p_type == PT_TLS)
			return &x->ph[i];
	return NULL;
}

/* runtime.tlsg's value (an STT_TLS symbol of .symtab), read in chunks. */
static int find_tlsg(const struct exe *x, const Elf64_Shdr *symtab, const Elf64_Shdr *strtab,
		     uint64_t *value)
{
	static const char want[] = "runtime.tlsg";
	Elf64_Sym *syms = malloc(SYMS_CHUNK * sizeof(*syms));
	uint64_t n = symtab->sh_size / sizeof(Elf64_Sym);
	int ret = -EADDRNOTAVAIL;

	if (!syms)
		return -ENOMEM;
	if (symtab->sh_entsize != sizeof(Elf64_Sym) || n > SYMS_MAX)
		n = 0;
	for (uint64_t at = 0; at < n && ret == -EADDRNOTAVAIL; at += SYMS_CHUNK) {
		size_t k = n - at < SYMS_CHUNK ? (size_t)(n - at) : SYMS_CHUNK;
		char name[sizeof(want)];

		if (pread_exact(x->fd, syms, k * sizeof(*syms),
				symtab->sh_offset + at * sizeof(*syms)) < 0)
			break;
		for (size_t i = 0; i < k; i++) {
			if (ELF64_ST_TYPE(syms[i].st_info) != STT_TLS ||
			    syms[i].st_name >= strtab->sh_size ||
			    strtab->sh_size - syms[i].st_name < sizeof(want) ||
			    pread_exact(x->fd, name, sizeof(name),
					strtab->sh_offset + syms[i].st_name) < 0 ||
			    memcmp(name, want, sizeof(want)) != 0)
				continue;
			*value = syms[i].st_value;
			ret = 0;
			break;
		}
	}
	free(syms);
	return ret;
}

/* Where the current g is, from the thread pointer. Go's own linker puts
 * it at -8 and writes no TLS segment; the system linker (cgo, external
 * linking) places runtime.tlsg in the executable's TLS block, the first
 * below the thread pointer (x86-64 variant II): found by its symbol, or,
 * stripped, when it is all the block holds. */
static int g_slot(const struct exe *x, const Elf64_Shdr *symtab, const Elf64_Shdr *strtab,
		  int32_t *tls)
{
	const Elf64_Phdr *t = tls_segment(x);
	uint64_t value = 0, align, size;
	int64_t off;
	int ret;

	if (!t) {
		*tls = -8;
		return 0;
	}
	align = t->p_align ? t->p_align : 1;
	/* Stripped: a Go program's TLS segment always holds runtime.tlsg
	 * (8 bytes); one of 8 bytes holds nothing else. */
	if (!symtab->sh_type && t->p_memsz == 8 && align <= 8) {
		*tls = -8;
		return 0;
	}
	if (!symtab->sh_type)
		return -EADDRNOTAVAIL;
	ret = find_tlsg(x, symtab, strtab, &value);
	if (ret < 0)
		return ret;
	if (align & (align - 1) || align > 4096 || t->p_memsz > (1u << 20) || value > t->p_memsz)
		return -ENOEXEC;
	size = (t->p_memsz + align - 1) & ~(align - 1);
	off = (int64_t)value - (int64_t)size;
	if (off > -8 || off & 7)
		return -ENOEXEC;
	*tls = (int32_t)off;
	return 0;
}

/* The layout of a release the table does not know, from the program's
 * DWARF: the eBPF reader reads a map of Go's own layout up to 1.23, or a
 * struct holding a slice; anything else is not read. */
static int from_dwarf(int fd, struct fr_go_runtime *rt)
{
	struct fr_go_dwarf d;
	struct stat st;
	void *img;
	ssize_t n;
	int ret;

	if (fstat(fd, &st) < 0 || st.st_size <= 0 || (uint64_t)st.st_size > DWARF_FILE_MAX ||
	    !(img = malloc((size_t)st.st_size)))
		return -ENOTSUP;
	n = fr_pread_full(fd, img, (size_t)st.st_size, 0);
	ret = n == st.st_size ? fr_go_dwarf_offsets(img, (size_t)n, &d) : -EIO;
	free(img);
	if (ret < 0 || d.g_m > 4096 || d.m_curg > 4096 || d.g_labels > 4096 ||
	    (d.labels_kind == 1 && (d.hmap_b != 9 || d.hmap_buckets != 16 || d.bucket_size != 272)))
		return -ENOTSUP;
	rt->m = (uint16_t)d.g_m;
	rt->curg = (uint16_t)d.m_curg;
	rt->labels = (uint16_t)d.g_labels;
	rt->kind = d.labels_kind == 1 ? FR_BPF_GO_MAP : FR_BPF_GO_SLICE;
	rt->from_dwarf = 1;
	return 0;
}

int fr_go_runtime_from_fd(int fd, struct fr_go_runtime *rt)
{
	struct exe *x = calloc(1, sizeof(*x));
	Elf64_Shdr info = {0}, symtab = {0}, strtab = {0};
	uint8_t sec[BUILDINFO_MAX];
	size_t n;
	int ret, minor;

	if (!x)
		return -ENOMEM;
	memset(rt, 0, sizeof(*rt));
	x->fd = fd;
	ret = read_headers(x);
	if (ret == 0)
		ret = find_sections(x, &info, &symtab, &strtab);
	if (ret < 0)
		goto out;
	ret = -ENOENT;
	if (info.sh_type != SHT_PROGBITS || info.sh_size < 32)
		goto out;
	n = info.sh_size < sizeof(sec) ? (size_t)info.sh_size : sizeof(sec);
	ret = pread_exact(fd, sec, n, info.sh_offset);
	if (ret == 0)
		ret = fr_go_buildinfo_version(sec, n, exe_vread, x, rt->version,
					      sizeof(rt->version));
	if (ret < 0)
		goto out;
	minor = fr_go_minor(rt->version);
	ret = minor < 0 ? -ENOTSUP : fr_go_offsets((uint32_t)minor, rt);
	if (ret == -ENOTSUP) {
		rt->minor = minor < 0 ? 0 : (uint32_t)minor;
		ret = from_dwarf(fd, rt);
	}
	if (ret == 0)
		ret = g_slot(x, &symtab, &strtab, &rt->tls);
out:
	free(x);
	return ret;
}

/* ---- the pairs ---- */

static bool go_pair_fits(const struct fr_bpf_go_pair *p)
{
	return p->klen && p->klen < FR_LABELS_KEY_MAX && p->klen <= FR_BPF_LABELS_GO_KEY &&
	       p->vlen < FR_LABELS_VALUE_MAX && p->vlen <= FR_BPF_LABELS_GO_VALUE &&
	       !memchr(p->k, '\0', (size_t)p->klen) && !memchr(p->v, '\0', (size_t)p->vlen);
}

static void put(struct fr_labels_record_abi *rec, const void *k, size_t kl, const void *v,
		size_t vl)
{
	uint8_t *d = rec->data + rec->size;

	d[0] = (uint8_t)kl;
	memcpy(d + 1, k, kl);
	d[1 + kl] = (uint8_t)vl;
	memcpy(d + 2 + kl, v, vl);
	rec->size = (uint16_t)(rec->size + 2 + kl + vl);
	rec->npairs++;
}

size_t fr_go_labels_record(const struct fr_bpf_labels_rec *r, uint8_t *out, size_t cap)
{
	static const char more_k[] = "flightrec.labels",
			  more_v[] = "partial: Go labels not all read";
	struct fr_labels_record_abi *rec = (struct fr_labels_record_abi *)out;
	struct fr_labels_record_abi own = {0};
	uint32_t room = FR_LABELS_MAX_KEYS, n = r->go_n;

	if (!n || cap < sizeof(*rec))
		return 0;
	if (r->fr_len) {
		memcpy(&own, r->fr, FR_BPF_LABELS_FR_HEAD);
		if (r->fr_len < FR_BPF_LABELS_FR_HEAD || own.magic != FR_LABELS_RECORD_MAGIC ||
		    own.valid != 1 || own.npairs > FR_LABELS_MAX_KEYS ||
		    own.size > FR_LABELS_RECORD_DATA_MAX ||
		    own.size > r->fr_len - FR_BPF_LABELS_FR_HEAD)
			return 0;
		room -= own.npairs;
	}
	memset(rec, 0, FR_BPF_LABELS_FR_HEAD);
	rec->magic = FR_LABELS_RECORD_MAGIC;
	rec->valid = 1;
	if (n > FR_BPF_LABELS_GO_PAIRS)
		n = FR_BPF_LABELS_GO_PAIRS;
	for (uint32_t i = 0; i < n && rec->npairs < room; i++)
		if (go_pair_fits(&r->go[i]))
			put(rec, r->go[i].k, (size_t)r->go[i].klen, r->go[i].v,
			    (size_t)r->go[i].vlen);
	if (r->go_more && rec->npairs < room)
		put(rec, more_k, sizeof(more_k) - 1, more_v, sizeof(more_v) - 1);
	/* Every pair is at most 2 + 31 + 63 bytes: the library's own fit
	 * after the Go ones (FR_LABELS_MAX_KEYS pairs in all). */
	memcpy(rec->data + rec->size, r->fr + FR_BPF_LABELS_FR_HEAD, own.size);
	rec->size = (uint16_t)(rec->size + own.size);
	rec->npairs = (uint8_t)(rec->npairs + own.npairs);
	return FR_BPF_LABELS_FR_HEAD + rec->size;
}
