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

#include "core/symbols/elf_object.h"
#include "core/symbols/go_dwarf.h"
#include "core/symbols/go_exe.h"
#include "core/util/fs.h"
#include "flightrec/labels_abi.h"

/* Bounds on what is read of a file another user controls (its headers:
 * core/symbols/elf_object.h). */
#define BUILDINFO_MAX 4096u
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

/* Where the current g is, from the thread pointer. Go's own linker puts
 * it at -8 and writes no TLS segment; the system linker (cgo, external
 * linking) places runtime.tlsg in the executable's TLS block, the first
 * below the thread pointer (x86-64 variant II): found by its symbol
 * (core/symbols/elf_object.h), or, stripped, when it is all the block
 * holds. */
static int g_slot(const struct fr_elf_fd *x, int32_t *tls)
{
	struct fr_elf_tls t;
	int ret = fr_elf_fd_exec_tls(x, "runtime.tlsg", 8, true, &t);

	if (!t.segment || (ret == -ENOENT && !t.symtab && t.memsz == 8 && t.align <= 8)) {
		/* Stripped: a Go program's TLS segment always holds
		 * runtime.tlsg (8 bytes); one of 8 bytes holds nothing
		 * else. */
		*tls = -8;
		return 0;
	}
	if (ret == -ENOENT)
		return -EADDRNOTAVAIL;
	if (ret < 0)
		return ret;
	if (t.memsz > (1u << 20) || t.off > -8 || t.off & 7)
		return -ENOEXEC;
	*tls = (int32_t)t.off;
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
	const Elf64_Shdr *info;
	uint8_t sec[BUILDINFO_MAX];
	struct fr_elf_fd x;
	size_t n;
	int ret, minor;

	memset(rt, 0, sizeof(*rt));
	ret = fr_elf_fd_open(fd, &x);
	if (ret < 0)
		return ret;
	ret = -ENOENT;
	info = fr_elf_fd_section(&x, ".go.buildinfo");
	if (!info || info->sh_type != SHT_PROGBITS || info->sh_size < 32)
		goto out;
	n = info->sh_size < sizeof(sec) ? (size_t)info->sh_size : sizeof(sec);
	ret = fr_pread_full(fd, sec, n, info->sh_offset) == (ssize_t)n ? 0 : -ENOEXEC;
	if (ret == 0)
		ret = fr_go_buildinfo_version(sec, n, fr_elf_fd_vread, &x, rt->version,
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
		ret = g_slot(&x, &rt->tls);
out:
	fr_elf_fd_close(&x);
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
