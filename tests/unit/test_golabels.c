/* Go programs' pprof labels (recorder/tracking/golabels.h), built from
 * its own source over the utilities alone: the version in .go.buildinfo
 * (both layouts, and sections that lie), the table of runtime layouts per
 * release, executables forged by hand (a Go one without a TLS segment, one
 * with a TLS segment and no symbols, garbage), the record the Go pairs
 * become; and, when the Go toolchain is here (FR_GO), the table against
 * the DWARF of programs it builds (static, and cgo linked by the system
 * linker: the g's slot from runtime.tlsg). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/symbols/go_dwarf.h"
#include "flightrec/labels_abi.h"
#include "recorder/tracking/golabels.h"
#include "tests/unit/check.h"

static void test_minor(void)
{
	CHECK(fr_go_minor("go1.19.8") == 19, "go1.19.8");
	CHECK(fr_go_minor("go1.25rc1") == 25, "go1.25rc1");
	CHECK(fr_go_minor("go1.16") == 16, "go1.16");
	CHECK(fr_go_minor("go2.1") == -EPROTO, "go2.1");
	CHECK(fr_go_minor("go1.") == -EPROTO, "go1.");
	CHECK(fr_go_minor("devel go1.26-abc") == -EPROTO, "devel");
	CHECK(fr_go_minor("go1.99999999999") == -EPROTO, "a huge minor");
}

/* The layouts per release, as read in each release's
 * src/runtime/runtime2.go and runtime/pprof/label.go (1.19 is also
 * checked against DWARF below). */
static void test_table(void)
{
	static const struct {
		uint32_t minor;
		uint16_t curg, labels;
		uint8_t kind;
	} want[] = {
		{16, 192, 344, FR_BPF_GO_MAP},	 {17, 192, 360, FR_BPF_GO_MAP},
		{18, 192, 360, FR_BPF_GO_MAP},	 {19, 192, 360, FR_BPF_GO_MAP},
		{20, 192, 360, FR_BPF_GO_MAP},	 {21, 192, 344, FR_BPF_GO_MAP},
		{22, 192, 344, FR_BPF_GO_MAP},	 {23, 192, 352, FR_BPF_GO_MAP},
		{24, 192, 352, FR_BPF_GO_SLICE}, {25, 184, 344, FR_BPF_GO_SLICE},
	};
	struct fr_go_runtime rt;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		memset(&rt, 0, sizeof(rt));
		CHECK(fr_go_offsets(want[i].minor, &rt) == 0, "go1.%u is known", want[i].minor);
		CHECK(rt.m == 48 && rt.curg == want[i].curg && rt.labels == want[i].labels &&
			      rt.kind == want[i].kind,
		      "go1.%u: m %u curg %u labels %u kind %u", want[i].minor, rt.m, rt.curg,
		      rt.labels, rt.kind);
	}
	CHECK(fr_go_offsets(15, &rt) == -ENOTSUP, "go1.15 is not known");
	CHECK(fr_go_offsets(26, &rt) == -ENOTSUP, "go1.26 is not known");
}

/* A .go.buildinfo of Go 1.18 on: the version inline. */
static size_t inline_info(uint8_t *sec, const char *version, size_t vlen)
{
	memset(sec, 0, 64);
	memcpy(sec, "\xff Go buildinf:", 14);
	sec[14] = 8;
	sec[15] = 2;
	sec[32] = (uint8_t)vlen;
	memcpy(sec + 33, version, vlen);
	return 33 + vlen;
}

/* The image of a pre-1.18 program: a string header at 0x1000, its bytes at
 * 0x2000. */
static int fake_vread(void *arg, uint64_t addr, void *buf, size_t n)
{
	const char *v = arg;
	uint64_t hdr[2] = {0x2000, strlen(v)};

	if (addr == 0x1000 && n <= sizeof(hdr)) {
		memcpy(buf, hdr, n);
		return 0;
	}
	if (addr == 0x2000 && n <= strlen(v)) {
		memcpy(buf, v, n);
		return 0;
	}
	return -EFAULT;
}

static void test_buildinfo(void)
{
	uint8_t sec[128];
	char v[32];
	size_t n;

	n = inline_info(sec, "go1.19.8", 8);
	CHECK(fr_go_buildinfo_version(sec, n, NULL, NULL, v, sizeof(v)) == 0 &&
		      strcmp(v, "go1.19.8") == 0,
	      "inline version");
	CHECK(fr_go_buildinfo_version(sec, n - 1, NULL, NULL, v, sizeof(v)) == -EPROTO,
	      "a version cut short");
	CHECK(fr_go_buildinfo_version(sec, n, NULL, NULL, v, 4) == -EPROTO, "no room for it");
	sec[32] = 0xff; /* a varint that never ends */
	memset(sec + 33, 0xff, sizeof(sec) - 33);
	CHECK(fr_go_buildinfo_version(sec, sizeof(sec), NULL, NULL, v, sizeof(v)) == -EPROTO,
	      "an endless varint");
	n = inline_info(sec, "go1.19\n", 7);
	CHECK(fr_go_buildinfo_version(sec, n, NULL, NULL, v, sizeof(v)) == -EPROTO,
	      "a control character");
	n = inline_info(sec, "devel go1.26-abc", 16);
	CHECK(fr_go_buildinfo_version(sec, n, NULL, NULL, v, sizeof(v)) == 0 &&
		      strcmp(v, "devel go1.26-abc") == 0,
	      "a devel version");
	n = inline_info(sec, "gcc 12", 6);
	CHECK(fr_go_buildinfo_version(sec, n, NULL, NULL, v, sizeof(v)) == -EPROTO,
	      "not a Go version");
	n = inline_info(sec, "go1.19.8", 8);
	sec[1] = 'g';
	CHECK(fr_go_buildinfo_version(sec, n, NULL, NULL, v, sizeof(v)) == -ENOENT, "no magic");
	/* Before 1.18: a pointer to the version's string header. */
	n = inline_info(sec, "", 0);
	sec[15] = 0;
	memcpy(sec + 16, &(uint64_t){0x1000}, 8);
	CHECK(fr_go_buildinfo_version(sec, 32, fake_vread, "go1.16.15", v, sizeof(v)) == 0 &&
		      strcmp(v, "go1.16.15") == 0,
	      "version by pointer: %s", v);
	CHECK(fr_go_buildinfo_version(sec, 32, NULL, NULL, v, sizeof(v)) == -ENOENT,
	      "by pointer, nothing to read it with");
	memcpy(sec + 16, &(uint64_t){0x1008}, 8);
	CHECK(fr_go_buildinfo_version(sec, 32, fake_vread, "go1.16.15", v, sizeof(v)) == -EPROTO,
	      "a pointer to nothing");
	memcpy(sec + 16, &(uint64_t){0x1000}, 8);
	CHECK(fr_go_buildinfo_version(sec, 32, fake_vread,
				      "go1.16.15-a-version-longer-than-any-go-has", v,
				      sizeof(v)) == -EPROTO,
	      "a version too long");
}

/* Writes a minimal x86-64 ELF executable: a .go.buildinfo section holding
 * `version` (none when NULL), a TLS segment of `tls` bytes (none: 0), no
 * symbols. Returns its fd. */
static int forged_elf(const char *version, int tls)
{
	static const char names[] = "\0.go.buildinfo\0.shstrtab";
	struct {
		Elf64_Ehdr eh;
		Elf64_Phdr ph[1];
		uint8_t info[64];
		char names[sizeof(names)];
		Elf64_Shdr sh[3];
	} f;
	char path[] = "/tmp/fr-test-golabels-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return -1;
	unlink(path);
	memset(&f, 0, sizeof(f));
	memcpy(f.eh.e_ident, ELFMAG, SELFMAG);
	f.eh.e_ident[EI_CLASS] = ELFCLASS64;
	f.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	f.eh.e_ident[EI_VERSION] = EV_CURRENT;
	f.eh.e_type = ET_EXEC;
	f.eh.e_machine = EM_X86_64;
	f.eh.e_ehsize = sizeof(f.eh);
	f.eh.e_phoff = offsetof(typeof(f), ph);
	f.eh.e_phentsize = sizeof(Elf64_Phdr);
	f.eh.e_phnum = tls ? 1 : 0;
	f.ph[0] = (Elf64_Phdr){.p_type = PT_TLS, .p_memsz = (uint64_t)tls, .p_align = 8};
	f.eh.e_shoff = offsetof(typeof(f), sh);
	f.eh.e_shentsize = sizeof(Elf64_Shdr);
	f.eh.e_shnum = 3;
	f.eh.e_shstrndx = 2;
	memcpy(f.names, names, sizeof(names));
	if (version) {
		inline_info(f.info, version, strlen(version));
		f.sh[1] = (Elf64_Shdr){.sh_name = 1,
				       .sh_type = SHT_PROGBITS,
				       .sh_offset = offsetof(typeof(f), info),
				       .sh_size = sizeof(f.info)};
	}
	f.sh[2] = (Elf64_Shdr){.sh_name = 15,
			       .sh_type = SHT_STRTAB,
			       .sh_offset = offsetof(typeof(f), names),
			       .sh_size = sizeof(names)};
	if (write(fd, &f, sizeof(f)) != (ssize_t)sizeof(f)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void test_forged(void)
{
	struct fr_go_runtime rt;
	uint8_t junk[4096];
	char path[] = "/tmp/fr-test-golabels-XXXXXX";
	int fd;

	fd = forged_elf("go1.19.8", 0);
	CHECK(fd >= 0 && fr_go_runtime_from_fd(fd, &rt) == 0 && rt.minor == 19 && rt.tls == -8 &&
		      rt.labels == 360 && strcmp(rt.version, "go1.19.8") == 0,
	      "a Go executable of Go's own linker: the g at -8");
	close(fd);
	fd = forged_elf("go1.19.8", 8);
	CHECK(fr_go_runtime_from_fd(fd, &rt) == 0 && rt.tls == -8,
	      "stripped, a TLS segment of runtime.tlsg alone: the g at -8");
	close(fd);
	fd = forged_elf("go1.19.8", 16);
	CHECK(fr_go_runtime_from_fd(fd, &rt) == -EADDRNOTAVAIL,
	      "stripped, more in the TLS segment: the g's slot is not known");
	close(fd);
	fd = forged_elf("go1.12.1", 0);
	CHECK(fr_go_runtime_from_fd(fd, &rt) == -ENOTSUP, "a release before the table, no DWARF");
	close(fd);
	fd = forged_elf("devel go1.26-abc", 0);
	CHECK(fr_go_runtime_from_fd(fd, &rt) == -ENOTSUP && rt.minor == 0,
	      "a devel build without DWARF");
	close(fd);
	fd = forged_elf(NULL, 0);
	CHECK(fr_go_runtime_from_fd(fd, &rt) == -ENOENT, "no .go.buildinfo: not Go");
	close(fd);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	CHECK(fr_go_runtime_from_fd(fd, &rt) == -ENOENT, "this C program is not Go");
	close(fd);
	fd = mkstemp(path);
	unlink(path);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 2654435761u >> 13);
	memcpy(junk, ELFMAG, SELFMAG);
	CHECK(write(fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk), "write");
	CHECK(fr_go_runtime_from_fd(fd, &rt) == -ENOEXEC, "garbage after an ELF magic");
	close(fd);
}

static struct fr_bpf_go_pair go_pair(const char *k, const char *v)
{
	struct fr_bpf_go_pair p = {.klen = strlen(k), .vlen = strlen(v)};

	memcpy(p.k, k, p.klen < sizeof(p.k) ? p.klen : sizeof(p.k));
	memcpy(p.v, v, p.vlen < sizeof(p.v) ? p.vlen : sizeof(p.v));
	return p;
}

static void test_record(void)
{
	static struct fr_bpf_labels_rec r;
	uint8_t out[sizeof(struct fr_labels_record_abi)];
	struct fr_labels_record_abi *rec = (struct fr_labels_record_abi *)out;
	struct fr_labels_record_abi own = {.magic = FR_LABELS_RECORD_MAGIC, .valid = 1};
	size_t n;

	CHECK(fr_go_labels_record(&r, out, sizeof(out)) == 0, "no Go pairs: no record");
	r.go[0] = go_pair("endpoint", "/a");
	r.go[1] = go_pair("a-key-that-is-longer-than-the-library-takes", "x");
	r.go[2] = go_pair("nul", "a.b");
	r.go[2].v[1] = '\0';
	r.go[3] = go_pair("", "empty key");
	r.go_n = 4;
	n = fr_go_labels_record(&r, out, sizeof(out));
	CHECK(n == 8 + 1 + 8 + 1 + 2 && rec->magic == FR_LABELS_RECORD_MAGIC && rec->valid == 1 &&
		      rec->npairs == 1 &&
		      memcmp(rec->data,
			     "\x08"
			     "endpoint\x02/a",
			     12) == 0,
	      "one pair kept of four (%zu bytes, %u pairs)", n, rec->npairs);
	/* The library's record of the same thread: its pairs after. */
	own.npairs = 1;
	own.size = 5;
	memcpy(own.data, "\x01t\x02x1", 5);
	memcpy(r.fr, &own, 8 + 5);
	r.fr_len = 8 + 5;
	r.go_more = 1;
	n = fr_go_labels_record(&r, out, sizeof(out));
	CHECK(rec->npairs == 3 && n == 8 + 12 + 2 + 16 + 31 + 5 &&
		      memcmp(rec->data + rec->size - 5, "\x01t\x02x1", 5) == 0,
	      "Go pair, the partial marker, the library's pair (%zu, %u)", n, rec->npairs);
	/* Eight Go pairs and a library pair: eight in all. */
	for (int i = 0; i < FR_BPF_LABELS_GO_PAIRS; i++)
		r.go[i] = go_pair("k", "v");
	r.go_n = FR_BPF_LABELS_GO_PAIRS;
	n = fr_go_labels_record(&r, out, sizeof(out));
	CHECK(rec->npairs == FR_LABELS_MAX_KEYS && n <= sizeof(out), "at most %d pairs: %u",
	      FR_LABELS_MAX_KEYS, rec->npairs);
	r.fr[0] ^= 1;
	CHECK(fr_go_labels_record(&r, out, sizeof(out)) == 0,
	      "a library record that does not check is left as it is");
	r.fr[0] ^= 1;
	r.go_n = 200; /* more than the copy holds */
	CHECK(fr_go_labels_record(&r, out, sizeof(out)) > 0 && rec->npairs == FR_LABELS_MAX_KEYS,
	      "a count beyond the copy");
}

/* The file at `path` with its .go.buildinfo's version "go1.19..." made
 * "go1.99..." (a release no table has), into path + "99". Returns 0. */
static int renamed_release(const char *path)
{
	static const char magic[] = "\xff Go buildinf:";
	char out[4200];
	FILE *f = fopen(path, "rb");
	uint8_t *img = malloc(64u << 20), *at;
	size_t n = f && img ? fread(img, 1, 64u << 20, f) : 0;
	int ret = -1;

	if (f)
		fclose(f);
	at = n ? memmem(img, n, magic, sizeof(magic) - 1) : NULL;
	if (at && (size_t)(at - img) + 40 < n && memcmp(at + 33, "go1.19", 6) == 0) {
		at[37] = '9';
		snprintf(out, sizeof(out), "%s99", path);
		f = fopen(out, "wb");
		ret = f && fwrite(img, 1, n, f) == n ? 0 : -1;
		if (f)
			fclose(f);
	}
	free(img);
	return ret;
}

/* The DWARF reader on the built program, and the look-up of a release the
 * table does not know (its DWARF's offsets, which must be the table's for
 * the release it really is). */
static void check_dwarf(const char *path, const struct fr_go_runtime *want)
{
	struct fr_go_runtime rt;
	struct fr_go_dwarf d;
	char p99[4200];
	FILE *f = fopen(path, "rb");
	uint8_t *img = malloc(64u << 20);
	size_t n = f && img ? fread(img, 1, 64u << 20, f) : 0;
	int fd;

	if (f)
		fclose(f);
	CHECK(n && fr_go_dwarf_offsets(img, n, &d) == 0, "no runtime layout in the DWARF");
	CHECK(d.g_m == want->m && d.m_curg == want->curg && d.g_labels == want->labels &&
		      d.labels_kind == want->kind && d.hmap_b == 9 && d.hmap_buckets == 16 &&
		      d.bucket_size == 272,
	      "go_dwarf: m %lld curg %lld labels %lld kind %d B %lld buckets %lld bucket %lld",
	      (long long)d.g_m, (long long)d.m_curg, (long long)d.g_labels, d.labels_kind,
	      (long long)d.hmap_b, (long long)d.hmap_buckets, (long long)d.bucket_size);
	free(img);
	snprintf(p99, sizeof(p99), "%s99", path);
	CHECK(renamed_release(path) == 0, "cannot write %s", p99);
	fd = open(p99, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && fr_go_runtime_from_fd(fd, &rt) == 0 && rt.from_dwarf && rt.minor == 99 &&
		      rt.m == want->m && rt.curg == want->curg && rt.labels == want->labels &&
		      rt.kind == want->kind && rt.tls == want->tls,
	      "go1.99 from its DWARF: %s m %u curg %u labels %u kind %u", rt.version, rt.m, rt.curg,
	      rt.labels, rt.kind);
	close(fd);
}

/* Builds the endpoints program (in `dir`, cgo or not) and compares what
 * the recorder finds in it with its DWARF. */
static void check_built(const char *go, const char *src, const char *dir, const char *cache,
			int cgo, int first)
{
	char cmd[8192], prog[2048], line[256], want[256];
	struct fr_go_runtime rt;
	FILE *p;
	int fd, st;

	snprintf(cmd, sizeof(cmd),
		 "cd %s && mkdir -p ep && cp %s/tests/integration/go/endpoints/main.go ep/ && "
		 "%s && export GOTOOLCHAIN=local GOCACHE=%s GOPATH=%s/gopath GO111MODULE=off "
		 "GOFLAGS= && CGO_ENABLED=%d %s build -o ep/prog ./ep >build.log 2>&1 && "
		 "%s run %s/tests/unit/go_dwarf_offsets.go ep/prog",
		 dir, src,
		 cgo ? "printf 'package main\\n\\n// int fr_one(void) { return 1; }\\nimport "
		       "\"C\"\\n\\nvar _ = C.fr_one\\n' >ep/cgo.go"
		     : "rm -f ep/cgo.go",
		 cache, dir, cgo, go, go, src);
	p = popen(cmd, "r");
	CHECK(p && fgets(line, sizeof(line), p), "%s: no DWARF offsets (see %s/build.log)",
	      cgo ? "cgo" : "static", dir);
	st = p ? pclose(p) : -1;
	if (st != 0) {
		fprintf(stderr, "skipped the %s build: %s/build.log\n", cgo ? "cgo" : "static",
			dir);
		if (!cgo)
			failures++;
		return;
	}
	snprintf(prog, sizeof(prog), "%s/ep/prog", dir);
	fd = open(prog, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && fr_go_runtime_from_fd(fd, &rt) == 0, "the built program is not read");
	close(fd);
	snprintf(want, sizeof(want),
		 "%s m=%u curg=%u labels=%u kind=%u hmap_B=%d hmap_buckets=%d "
		 "bucket=%d\n",
		 rt.version, rt.m, rt.curg, rt.labels, rt.kind, rt.kind == FR_BPF_GO_MAP ? 9 : 0,
		 rt.kind == FR_BPF_GO_MAP ? 16 : 0, rt.kind == FR_BPF_GO_MAP ? 272 : 0);
	CHECK(strcmp(line, want) == 0, "%s: DWARF says\n  %s the recorder\n  %s",
	      cgo ? "cgo" : "static", line, want);
	CHECK(rt.tls == -8, "%s: the g at %d", cgo ? "cgo" : "static", rt.tls);
	printf("%s: %s", cgo ? "cgo" : "static", line);
	if (first)
		check_dwarf(prog, &rt);
}

/* Where toolchain `go`'s build cache is: shared with the other tests of
 * the build directory (test_go_exe.c), else in `dir`. */
static void cache_of(const char *go, const char *dir, char *out, size_t len)
{
	const char *b = getenv("FR_BUILD_DIR"), *v = strstr(go, "/go-1.");
	char rel[32] = "default";

	if (v)
		snprintf(rel, sizeof(rel), "%.*s", (int)strcspn(v + 1, "/"), v + 1);
	if (b && *b)
		snprintf(out, len, "%s/go-cache/%s", b, rel);
	else
		snprintf(out, len, "%s/cache", dir);
}

static void test_toolchain(void)
{
	const char *go = getenv("FR_GO"), *src = getenv("FR_SOURCE_DIR");
	char dir[] = "/tmp/fr-test-golabels-go-XXXXXX", cmd[256], cache[4200];
	glob_t g = {0};

	if (!go || !*go || !src) {
		printf("no Go toolchain (FR_GO): the table is not checked against DWARF\n");
		return;
	}
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	cache_of(go, dir, cache, sizeof(cache));
	check_built(go, src, dir, cache, 0, 1);
	check_built(go, src, dir, cache, 1, 1);
	/* Every other toolchain the machine has (Debian's golang-1.N-go):
	 * its programs' layout against the table too. */
	if (glob("/usr/lib/go-1.*/bin/go", 0, NULL, &g) == 0)
		for (size_t i = 0; i < g.gl_pathc && !failures; i++) {
			char *a = realpath(go, NULL), *b = realpath(g.gl_pathv[i], NULL);

			if (!a || !b || strcmp(a, b) != 0) {
				cache_of(g.gl_pathv[i], dir, cache, sizeof(cache));
				check_built(g.gl_pathv[i], src, dir, cache, 0, 0);
			}
			free(a);
			free(b);
		}
	globfree(&g);
	snprintf(cmd, sizeof(cmd), "chmod -R u+w %s; rm -rf %s", dir, dir);
	if (!failures && system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

int main(void)
{
	test_minor();
	test_table();
	test_buildinfo();
	test_forged();
	test_record();
	test_toolchain();
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
