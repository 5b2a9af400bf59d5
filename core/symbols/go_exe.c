/* A Go program's executable, read for its goroutines (core/symbols/go_exe.h). */
#include "core/symbols/go_exe.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/symbols/elf_int.h"
#include "core/symbols/go_dwarf.h"
#include "core/symbols/gopclntab.h"
#include "core/util/fs.h"
#include "core/util/le.h"

#define VERSION_MAX 32u
#define BUILDINFO_MAX 4096u
/* A program whose release the table lacks is read whole for its DWARF up
 * to this size. */
#define DWARF_FILE_MAX (64ull << 20)
/* The code of runtime.allgadd looked at (a few hundred bytes). */
#define ALLGADD_MAX 4096u
/* The sections scanned for the wait reasons' table, at most. */
#define SCAN_MAX (64u << 20)
#define REASON_LEN_MAX 64u

static const char buildinfo_magic[14] = "\xff Go buildinf:";

/* ---- the version ---- */

int fr_go_minor(const char *v)
{
	unsigned long n = 0;
	const char *p;

	if (strncmp(v, "go1.", 4) != 0)
		return -EPROTO;
	for (p = v + 4; *p >= '0' && *p <= '9' && n < 1000; p++)
		n = n * 10 + (unsigned long)(*p - '0');
	if (p == v + 4 || n >= 1000)
		return -EPROTO;
	return (int)n;
}

/* A version string as the binary has it: printable, "go1." first (a
 * release) or "devel " (a toolchain built from its sources). */
static int take_version(const uint8_t *s, size_t n, char *out, size_t outlen)
{
	if (n < 5 || n >= VERSION_MAX || n >= outlen)
		return -EPROTO;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return -EPROTO;
	memcpy(out, s, n);
	out[n] = '\0';
	return fr_go_minor(out) < 0 && strncmp(out, "devel ", 6) != 0 ? -EPROTO : 0;
}

int fr_go_buildinfo_version(const uint8_t *sec, size_t len,
			    int (*vread)(void *arg, uint64_t addr, void *buf, size_t n), void *arg,
			    char *out, size_t outlen)
{
	uint64_t hdr[2], vlen = 0;
	uint8_t s[VERSION_MAX];
	size_t at = 32;
	unsigned shift = 0;

	if (len < 32 || memcmp(sec, buildinfo_magic, sizeof(buildinfo_magic)) != 0)
		return -ENOENT;
	if (sec[15] & 2) {
		/* Inline: a varint length then the bytes. */
		while (at < len && shift < 35) {
			vlen |= (uint64_t)(sec[at] & 0x7f) << shift;
			shift += 7;
			if (!(sec[at++] & 0x80))
				break;
		}
		if (shift >= 35 || vlen > len - at)
			return -EPROTO;
		return take_version(sec + at, (size_t)vlen, out, outlen);
	}
	/* Before 1.18: at 16 a pointer (of sec[14] bytes, little-endian
	 * here) to the version's string header. */
	if (!vread || sec[14] != 8 || (sec[15] & 1))
		return -ENOENT;
	memcpy(&hdr[0], sec + 16, 8);
	if (vread(arg, hdr[0], hdr, sizeof(hdr)) < 0 || hdr[1] >= VERSION_MAX ||
	    vread(arg, hdr[0], s, (size_t)hdr[1]) < 0)
		return -EPROTO;
	return take_version(s, (size_t)hdr[1], out, outlen);
}

/* ---- the layout ---- */

/* Per release, from the DWARF of programs its toolchain built (Debian's
 * golang-1.N-go; tests/unit/test_go_exe.c checks each toolchain it finds
 * against the table). A release not here is read from its own DWARF. */
#define GL(first_, last_, goid_, status_, gopc_, parent_, labels_, tseq_)                   \
	{                                                                                   \
		first_, last_,                                                              \
		{                                                                           \
			.goid = goid_, .status = status_, .waitsince = goid_ + 16,          \
			.waitreason = goid_ + 24, .gopc = gopc_, .startpc = gopc_ + 16,     \
			.parent = parent_, .sched_sp = 56, .sched_pc = 64, .sched_bp = 104, \
			.syscallsp = 112, .syscallpc = 120, .stack_lo = 0, .stack_hi = 8,   \
			.labels = labels_, .m = 48, .m_procid = 72, .tracking_seq = tseq_,  \
			.labels_kind = 1,                                                   \
		}                                                                           \
	}
static const struct {
	uint8_t first, last;
	struct fr_go_glayout l;
} glayouts[] = {
	GL(19, 19, 152, 144, 296, -1, 360, 189),
	GL(21, 21, 152, 144, 280, 272, 344, 188),
	GL(22, 22, 152, 144, 280, 272, 344, 191),
	GL(23, 23, 160, 152, 288, 280, 352, 199),
};
#undef GL

static void layout_size(struct fr_go_glayout *l)
{
	const int32_t *f[] = {&l->goid,	       &l->status,   &l->waitsince, &l->waitreason,
			      &l->gopc,	       &l->startpc,  &l->parent,    &l->sched_sp,
			      &l->sched_pc,    &l->sched_bp, &l->syscallsp, &l->syscallpc,
			      &l->stack_lo,    &l->stack_hi, &l->labels,    &l->m,
			      &l->tracking_seq};

	l->size = 0;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (*f[i] >= 0 && (uint32_t)*f[i] + 8 > l->size)
			l->size = (uint32_t)*f[i] + 8;
}

int fr_go_glayout_table(uint32_t minor, struct fr_go_glayout *out)
{
	for (size_t i = 0; i < sizeof(glayouts) / sizeof(glayouts[0]); i++)
		if (minor >= glayouts[i].first && minor <= glayouts[i].last) {
			*out = glayouts[i].l;
			layout_size(out);
			return 0;
		}
	return -ENOTSUP;
}

int fr_go_glayout_dwarf(int fd, struct fr_go_glayout *l)
{
	struct fr_go_dwarf d;
	struct stat st;
	uint64_t fsize;
	void *img;
	int ret;

	if (fstat(fd, &st) < 0 || st.st_size <= 0)
		return -ENOTSUP;
	fsize = (uint64_t)st.st_size;
	if (fsize > DWARF_FILE_MAX || !(img = malloc(fsize)))
		return -ENOTSUP;
	ret = fr_pread_full(fd, img, fsize, 0) == (ssize_t)fsize
		      ? fr_go_dwarf_offsets(img, fsize, &d)
		      : -EIO;
	free(img);
	if (ret < 0)
		return -ENOTSUP;
	int64_t v[] = {d.g_goid,
		       d.g_status,
		       d.g_waitsince,
		       d.g_waitreason,
		       d.g_gopc,
		       d.g_startpc,
		       d.g_sched + d.gobuf_sp,
		       d.g_sched + d.gobuf_pc,
		       d.g_sched + d.gobuf_bp,
		       d.g_syscallsp,
		       d.g_syscallpc,
		       d.g_stack + d.stack_lo,
		       d.g_stack + d.stack_hi,
		       d.g_labels,
		       d.g_m,
		       d.m_procid};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i] < 0 || v[i] > 4096 || d.g_sched < 0 || d.g_stack < 0 || d.gobuf_sp < 0 ||
		    d.gobuf_pc < 0 || d.gobuf_bp < 0 || d.stack_lo < 0 || d.stack_hi < 0)
			return -ENOTSUP;
	*l = (struct fr_go_glayout){
		.goid = (int32_t)v[0],
		.status = (int32_t)v[1],
		.waitsince = (int32_t)v[2],
		.waitreason = (int32_t)v[3],
		.gopc = (int32_t)v[4],
		.startpc = (int32_t)v[5],
		.parent = d.g_parent >= 0 && d.g_parent <= 4096 ? (int32_t)d.g_parent : -1,
		.sched_sp = (int32_t)v[6],
		.sched_pc = (int32_t)v[7],
		.sched_bp = (int32_t)v[8],
		.syscallsp = (int32_t)v[9],
		.syscallpc = (int32_t)v[10],
		.stack_lo = (int32_t)v[11],
		.stack_hi = (int32_t)v[12],
		.labels = (int32_t)v[13],
		.m = (int32_t)v[14],
		.m_procid = (int32_t)v[15],
		.tracking_seq = d.g_tracking_seq >= 0 && d.g_tracking_seq <= 4096
					? (int32_t)d.g_tracking_seq
					: -1,
		.labels_kind = d.labels_kind == 2 ? 2 : 1,
	};
	layout_size(l);
	return 0;
}

/* ---- the file ---- */

struct sec {
	uint64_t addr, off, size;
	bool has;
};

struct file {
	int fd;
	uint64_t fsize;
	Elf *elf;
	struct elf_segs segs;
	struct sec buildinfo, data, noptrdata, bss, noptrbss, rodata;
	GElf_Shdr symtab, strtab;
	Elf_Scn *symscn;
	bool has_symtab;
};

/* Reads n bytes at virtual address addr of the image (from its PT_LOAD
 * segments' file bytes). */
static int file_vread(void *arg, uint64_t addr, void *buf, size_t n)
{
	return elf_segs_vread(&((const struct file *)arg)->segs, addr, buf, n);
}

static void note(struct file *f, const char *name, const GElf_Shdr *sh)
{
	struct {
		const char *name;
		struct sec *s;
	} want[] = {
		{".go.buildinfo", &f->buildinfo}, {".data", &f->data},
		{".noptrdata", &f->noptrdata},	  {".bss", &f->bss},
		{".noptrbss", &f->noptrbss},	  {".rodata", &f->rodata},
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strcmp(name, want[i].name) == 0 && !want[i].s->has)
			*want[i].s = (struct sec){sh->sh_addr, sh->sh_offset, sh->sh_size, true};
}

static int scan_file(struct file *f)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_segs_read(f->elf, f->fd, f->fsize, &f->segs, &shstrndx) < 0)
		return -ENOEXEC;
	while ((scn = elf_nextscn(f->elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(f->elf, shstrndx, sh.sh_name)))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !f->has_symtab &&
		    sh.sh_entsize == sizeof(Elf64_Sym) &&
		    within_file(sh.sh_offset, sh.sh_size, f->fsize) && sh.sh_size <= SECTION_MAX) {
			Elf_Scn *str = elf_getscn(f->elf, sh.sh_link);

			f->has_symtab =
				str && gelf_getshdr(str, &f->strtab) &&
				within_file(f->strtab.sh_offset, f->strtab.sh_size, f->fsize) &&
				f->strtab.sh_size <= SECTION_MAX;
			f->symtab = sh;
			f->symscn = scn;
		}
		if (sh.sh_type == SHT_NOBITS || within_file(sh.sh_offset, sh.sh_size, f->fsize))
			note(f, name, &sh);
	}
	f->buildinfo.has = f->buildinfo.has && f->buildinfo.size >= 32;
	return 0;
}

static int read_version(struct file *f, struct fr_go_exe *x)
{
	uint8_t sec[BUILDINFO_MAX];
	size_t n;

	if (!f->buildinfo.has)
		return -ENOENT;
	n = f->buildinfo.size < sizeof(sec) ? (size_t)f->buildinfo.size : sizeof(sec);
	if (fr_pread_full(f->fd, sec, n, f->buildinfo.off) != (ssize_t)n)
		return -EIO;
	if (fr_go_buildinfo_version(sec, n, file_vread, f, x->version, sizeof(x->version)) < 0)
		return -ENOENT;
	x->minor = fr_go_minor(x->version) < 0 ? 0 : fr_go_minor(x->version);
	return 0;
}

/* The .symtab's runtime.allgs and runtime.waitReasonStrings, by name. */
static void read_symbols(struct file *f, uint64_t *allgs, uint64_t *reasons, uint64_t *rsize)
{
	Elf_Data *d = elf_getdata(f->symscn, NULL);
	size_t n = d ? d->d_size / sizeof(Elf64_Sym) : 0;

	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;

		if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_OBJECT ||
		    !(name = elf_strptr(f->elf, f->symtab.sh_link, s.st_name)))
			continue;
		if (strcmp(name, "runtime.allgs") == 0)
			*allgs = s.st_value;
		else if (strcmp(name, "runtime.waitReasonStrings") == 0) {
			*reasons = s.st_value;
			*rsize = s.st_size;
		}
	}
}

/* ---- a stripped program's list of goroutines ---- */

unsigned fr_go_rip_targets(const uint8_t *code, size_t len, uint64_t addr, uint64_t lo, uint64_t hi,
			   uint64_t *cand, unsigned n, unsigned cap)
{
	for (size_t i = 0; i + 4 <= len && n < cap; i++) {
		uint64_t t = addr + i + 4 + (uint64_t)(int64_t)(int32_t)fr_get_le32(code + i);

		if (t < lo || t >= hi || (t & 7))
			continue;
		for (unsigned back = 0; back < 3 && n < cap; back++) {
			uint64_t c = t - 8 * back;
			unsigned k = 0;

			while (k < n && cand[k] != c)
				k++;
			if (k == n && c >= lo)
				cand[n++] = c;
		}
	}
	return n;
}

static void allgs_candidates(struct file *f, struct fr_go_exe *x)
{
	uint64_t entry, end, lo = UINT64_MAX, hi = 0;
	const struct sec *s[] = {&f->data, &f->noptrdata, &f->bss, &f->noptrbss};
	uint8_t code[ALLGADD_MAX];
	size_t len;

	if (fr_gopclntab_find(x->tab, "runtime.allgadd", &entry, &end) < 0 || end <= entry)
		return;
	len = end - entry < sizeof(code) ? (size_t)(end - entry) : sizeof(code);
	if (file_vread(f, entry, code, len) < 0)
		return;
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		if (s[i]->has && s[i]->size) {
			lo = s[i]->addr < lo ? s[i]->addr : lo;
			hi = s[i]->addr + s[i]->size > hi ? s[i]->addr + s[i]->size : hi;
		}
	if (hi > lo)
		x->ncand =
			fr_go_rip_targets(code, len, entry, lo, hi, x->cand, 0, FR_GO_ALLGS_CANDS);
}

/* ---- wait reasons ---- */

/* The strings of a table of Go string headers at `addr` (n of them). */
static void read_reasons(struct file *f, struct fr_go_exe *x, uint64_t addr, size_t n)
{
	if (n > FR_GO_WAIT_REASONS)
		n = FR_GO_WAIT_REASONS;
	for (size_t i = 0; i < n; i++) {
		uint64_t h[2];
		char s[REASON_LEN_MAX + 1];
		bool ok;

		if (file_vread(f, addr + 16 * i, h, sizeof(h)) < 0 || h[1] > REASON_LEN_MAX ||
		    (h[1] && file_vread(f, h[0], s, (size_t)h[1]) < 0))
			break;
		s[h[1]] = '\0';
		ok = true;
		for (size_t k = 0; k < h[1]; k++)
			ok = ok && s[k] >= 0x20 && s[k] < 0x7f;
		if (!ok)
			break;
		if (!(x->wait_reason[i] = strdup(s)))
			break;
		x->nwait = (unsigned)i + 1;
	}
}

/* A stripped program's table: found in .data by its second entry,
 * "GC assist marking" (after "", since Go 1.10), pointing into .rodata. */
static void find_reasons(struct file *f, struct fr_go_exe *x)
{
	static const char second[] = "GC assist marking";
	uint8_t *ro = NULL, *data = NULL;
	uint64_t at[8];
	unsigned nat = 0;

	if (!f->rodata.has || !f->data.has || f->rodata.size > SCAN_MAX ||
	    f->data.size > SCAN_MAX || !(ro = malloc(f->rodata.size + 1)) ||
	    !(data = malloc(f->data.size + 1)) ||
	    fr_pread_full(f->fd, ro, f->rodata.size, f->rodata.off) != (ssize_t)f->rodata.size ||
	    fr_pread_full(f->fd, data, f->data.size, f->data.off) != (ssize_t)f->data.size)
		goto out;
	for (uint8_t *p = ro; nat < 8 && (p = memmem(p, f->rodata.size - (size_t)(p - ro), second,
						     sizeof(second) - 1));
	     p++)
		at[nat++] = f->rodata.addr + (uint64_t)(p - ro);
	for (uint64_t i = 24; i + 16 <= f->data.size && !x->nwait; i += 8) {
		uint64_t w = fr_get_le64(data + i);

		for (unsigned k = 0; k < nat; k++)
			if (w == at[k] && fr_get_le64(data + i + 8) == sizeof(second) - 1 &&
			    fr_get_le64(data + i - 8) == 0)
				read_reasons(f, x, f->data.addr + i - 16, FR_GO_WAIT_REASONS);
	}
out:
	free(ro);
	free(data);
}

/* ---- the whole ---- */

static uint64_t first_load(const struct file *f)
{
	uint64_t lo = UINT64_MAX;

	for (size_t i = 0; i < f->segs.nph; i++)
		if (f->segs.ph[i].p_type == PT_LOAD && f->segs.ph[i].p_vaddr < lo)
			lo = f->segs.ph[i].p_vaddr;
	return lo == UINT64_MAX ? 0 : lo & ~0xfffull;
}

static int read_exe(struct file *f, struct fr_go_exe *x)
{
	uint64_t reasons = 0, rsize = 0;
	GElf_Ehdr eh;
	int ret = scan_file(f);

	if (ret == 0)
		ret = read_version(f, x);
	if (ret < 0)
		return ret;
	if (fr_go_glayout_table((uint32_t)x->minor, &x->layout) < 0) {
		if (fr_go_glayout_dwarf(f->fd, &x->layout) < 0)
			return -ENOTSUP;
		x->layout_from_dwarf = 1;
	}
	if (!(x->tab = elf_go_read(f->elf, f->fd, f->fsize)))
		return -ENOEXEC;
	x->pie = gelf_getehdr(f->elf, &eh) && eh.e_type == ET_DYN;
	x->lo_vaddr = first_load(f);
	if (f->has_symtab)
		read_symbols(f, &x->allgs, &reasons, &rsize);
	if (!x->allgs)
		allgs_candidates(f, x);
	if (reasons && rsize >= 16)
		read_reasons(f, x, reasons, (size_t)(rsize / 16));
	else
		find_reasons(f, x);
	return x->allgs || x->ncand ? 0 : -EADDRNOTAVAIL;
}

int fr_go_exe_read(int fd, struct fr_go_exe *x)
{
	struct file *f = calloc(1, sizeof(*f));
	struct stat st;
	int ret;

	memset(x, 0, sizeof(*x));
	if (!f)
		return -ENOMEM;
	f->fd = fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > FR_ELF_MAX_SIZE) {
		free(f);
		return -ENOEXEC;
	}
	f->fsize = (uint64_t)st.st_size;
	if (elf_version(EV_CURRENT) == EV_NONE || !(f->elf = elf_begin(fd, ELF_C_READ, NULL)) ||
	    elf_kind(f->elf) != ELF_K_ELF)
		ret = -ENOEXEC;
	else
		ret = read_exe(f, x);
	if (f->elf)
		elf_end(f->elf);
	free(f);
	if (ret < 0) {
		char v[sizeof(x->version)];

		memcpy(v, x->version, sizeof(v));
		fr_go_exe_fini(x);
		memcpy(x->version, v, sizeof(v));
	}
	return ret;
}

void fr_go_exe_fini(struct fr_go_exe *x)
{
	fr_gopclntab_free(x->tab);
	for (unsigned i = 0; i < FR_GO_WAIT_REASONS; i++)
		free(x->wait_reason[i]);
	memset(x, 0, sizeof(*x));
}
