/* Fuzz target for the Go program detection and the Go label pairs
 * (recorder/tracking/golabels.h): executables, .go.buildinfo sections and
 * label copies are all another user's bytes.
 *
 * Input: byte 0 selects what the rest is:
 *   0  an executable file (in a memfd): fr_go_runtime_from_fd
 *   1  a .go.buildinfo section, and the program image its pointers (a
 *      pre-1.18 layout) are read from: address A is byte A of the rest
 *   2  a label copy (struct fr_bpf_labels_rec, zero-filled past the
 *      input): fr_go_labels_record
 *
 * Promises: no crash, no memory error; a Go program found has a version
 * ("go1.N..." or "devel ...") of printable bytes whose release is in the
 * table or whose offsets its DWARF gave (bounded), its g's slot
 * 8-aligned below the thread pointer, a known labels layout; a record
 * made is a libflightrec record of at most FR_LABELS_MAX_KEYS pairs whose
 * Go pairs (those before the copy's own) are well-formed.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "flightrec/labels_abi.h"
#include "recorder/tracking/golabels.h"

static int memfd = -1;

static void check_version(const char *v)
{
	size_t n = strlen(v);

	FUZZ_CHECK(n > 4 && n < 32 && (strncmp(v, "go1.", 4) == 0 || strncmp(v, "devel ", 6) == 0),
		   "version '%s'", v);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(v[i] >= 0x20 && v[i] < 0x7f, "byte %#x in a version",
			   (unsigned)(unsigned char)v[i]);
}

static void fuzz_exe(const uint8_t *data, size_t size)
{
	struct fr_go_runtime rt;
	int ret;

	if (memfd < 0)
		memfd = memfd_create("fuzz-golabels", MFD_CLOEXEC);
	FUZZ_CHECK(memfd >= 0, "memfd_create");
	FUZZ_CHECK(ftruncate(memfd, 0) == 0 && pwrite(memfd, data, size, 0) == (ssize_t)size,
		   "write the file");
	ret = fr_go_runtime_from_fd(memfd, &rt);
	FUZZ_CHECK(ret == 0 || ret == -ENOENT || ret == -ENOEXEC || ret == -ENOTSUP ||
			   ret == -EADDRNOTAVAIL || ret == -EPROTO || ret == -ENOMEM,
		   "detect: %d", ret);
	if (ret < 0)
		return;
	check_version(rt.version);
	FUZZ_CHECK(rt.from_dwarf || (rt.minor >= FR_GO_MINOR_FIRST && rt.minor <= FR_GO_MINOR_LAST),
		   "go1.%u", rt.minor);
	FUZZ_CHECK(rt.m <= 4096 && rt.curg <= 4096 && rt.labels <= 4096, "offsets %u %u %u", rt.m,
		   rt.curg, rt.labels);
	FUZZ_CHECK(rt.tls <= -8 && !(rt.tls & 7), "g at %d", rt.tls);
	FUZZ_CHECK(rt.kind == FR_BPF_GO_MAP || rt.kind == FR_BPF_GO_SLICE, "kind %u", rt.kind);
}

struct image {
	const uint8_t *p;
	size_t n;
};

static int image_read(void *arg, uint64_t addr, void *buf, size_t n)
{
	const struct image *im = arg;

	if (addr > im->n || im->n - addr < n)
		return -EFAULT;
	memcpy(buf, im->p + addr, n);
	return 0;
}

static void fuzz_buildinfo(const uint8_t *data, size_t size)
{
	struct image im = {data, size};
	char v[32];
	int ret = fr_go_buildinfo_version(data, size, image_read, &im, v, sizeof(v));

	FUZZ_CHECK(ret == 0 || ret == -ENOENT || ret == -EPROTO, "buildinfo: %d", ret);
	if (ret == 0)
		check_version(v);
}

static void fuzz_record(const uint8_t *data, size_t size)
{
	static struct fr_bpf_labels_rec r;
	static uint8_t out[sizeof(struct fr_labels_record_abi)];
	const struct fr_labels_record_abi *rec = (const void *)out;
	size_t n, at = 0;
	uint32_t own = 0, go;

	memset(&r, 0, sizeof(r));
	memcpy(&r, data, size < sizeof(r) ? size : sizeof(r));
	if (r.fr_len > sizeof(r.fr))
		r.fr_len = sizeof(r.fr); /* the programs never copy more */
	n = fr_go_labels_record(&r, out, sizeof(out));
	FUZZ_CHECK(n <= sizeof(out), "a record of %zu bytes", n);
	if (!n)
		return;
	FUZZ_CHECK(rec->magic == FR_LABELS_RECORD_MAGIC && rec->valid == 1 &&
			   rec->npairs <= FR_LABELS_MAX_KEYS && n == 8u + rec->size &&
			   rec->size <= FR_LABELS_RECORD_DATA_MAX,
		   "header: %u pairs, %u bytes, %zu in all", rec->npairs, rec->size, n);
	if (r.fr_len)
		own = r.fr[5];
	go = rec->npairs - own;
	for (uint32_t i = 0; i < go; i++) {
		uint8_t kl, vl;

		FUZZ_CHECK(at < rec->size, "pair %u past the end", i);
		kl = rec->data[at];
		FUZZ_CHECK(kl >= 1 && kl < FR_LABELS_KEY_MAX && at + 1 + kl < rec->size,
			   "pair %u: key of %u", i, kl);
		FUZZ_CHECK(!memchr(rec->data + at + 1, 0, kl), "pair %u: a NUL in its key", i);
		vl = rec->data[at + 1 + kl];
		FUZZ_CHECK(vl < FR_LABELS_VALUE_MAX && at + 2 + kl + vl <= rec->size,
			   "pair %u: value of %u", i, vl);
		FUZZ_CHECK(!memchr(rec->data + at + 2 + kl, 0, vl), "pair %u: a NUL in its value",
			   i);
		at += 2u + kl + vl;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0: fuzz_exe(data + 1, size - 1); break;
	case 1: fuzz_buildinfo(data + 1, size - 1); break;
	default: fuzz_record(data + 1, size - 1); break;
	}
	return 0;
}
