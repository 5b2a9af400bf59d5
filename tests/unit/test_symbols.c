/* Symbolization: the test binary resolves its own functions and one of
 * libc's through /proc/self/maps, and checks build ids against the note the
 * loader mapped. Small ELF files written here cover what the running
 * process cannot pin down: non-PIE executables, zero-size and nested
 * symbols, gaps between functions, and separate debug files under a root.
 * Kernel addresses are resolved from fake kallsyms files (core, init text,
 * modules, kptr_restrict) and, when readable, from the real /proc/kallsyms. */
#include "core/symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "tests/unit/files.h"
#include "tests/unit/fuse_hang.h"

static volatile int marker_sink;

__attribute__((noinline, used)) static void fr_test_marker_fn(void)
{
	for (int i = 0; i < 16; i++)
		marker_sink += i * 3;
}

struct mapping {
	uint64_t start;
	uint64_t end;
	uint64_t pgoff;
	char path[4096];
};

static int find_mapping(uint64_t addr, struct mapping *m)
{
	char line[4352];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		int n = 0;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end, &off, &n) < 3 || !n)
			continue;
		if (addr < start || addr >= end)
			continue;
		m->start = start;
		m->end = end;
		m->pgoff = off;
		snprintf(m->path, sizeof(m->path), "%s", line + n);
		m->path[strcspn(m->path, "\n")] = '\0';
		found = 0;
		break;
	}
	fclose(f);
	return found;
}

/* The build id of the main program from the note the loader mapped:
 * independent of libelf and of the file on disk. */
struct note_search {
	uint8_t id[64];
	size_t len;
	uint64_t bias; /* load address minus link-time address */
};

static int find_note_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct note_search *ns = arg;

	/* The first object is the main program. */
	ns->bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)p;
			size_t align = ph->p_align == 8 ? 8 : 4;
			size_t namesz = (nh->n_namesz + align - 1) & ~(align - 1);
			size_t descsz = (nh->n_descsz + align - 1) & ~(align - 1);
			const uint8_t *name = p + sizeof(*nh);

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= sizeof(ns->id)) {
				memcpy(ns->id, name + namesz, nh->n_descsz);
				ns->len = nh->n_descsz;
				return 1;
			}
			p += sizeof(*nh) + namesz + descsz;
		}
	}
	return 1;
}

static void test_build_id(void)
{
	struct note_search ns = { .len = 0 };
	uint8_t id[64], small[2];
	char hex[129];
	const uint8_t known[] = { 0x01, 0xab, 0xff, 0x00 };
	int ret;

	CHECK(strcmp(fr_build_id_hex(known, sizeof(known), hex), "01abff00") == 0,
	      "fr_build_id_hex gave %s", hex);
	CHECK(strcmp(fr_build_id_hex(known, 0, hex), "") == 0, "empty build id not empty");

	dl_iterate_phdr(find_note_cb, &ns);
	CHECK(ns.len > 0, "test binary has no mapped build id note");
	ret = fr_elf_build_id("/proc/self/exe", id, sizeof(id));
	CHECK(ret == (int)ns.len, "fr_elf_build_id = %d, want %zu", ret, ns.len);
	if (ret == (int)ns.len)
		CHECK(memcmp(id, ns.id, ns.len) == 0, "build id differs from the mapped note");

	ret = fr_elf_build_id("/proc/self/exe", small, sizeof(small));
	CHECK(ret == -ENOSPC, "small buffer: %d, want -ENOSPC", ret);
	ret = fr_elf_build_id("/nonexistent/flightrec/libnone.so", id, sizeof(id));
	CHECK(ret == -ENOENT, "missing file: %d, want -ENOENT", ret);
	ret = fr_elf_build_id("/proc/self/maps", id, sizeof(id));
	CHECK(ret < 0, "non-ELF file: %d, want < 0", ret);
}

static void test_self(void)
{
	struct fr_symbols *s = fr_symbols_new(NULL);
	uint64_t fn = (uint64_t)(uintptr_t)&fr_test_marker_fn;
	uint64_t elf_addr = 0;
	uint8_t id[64], wrong[64];
	const char *name = NULL, *name2 = NULL;
	struct note_search ns = { .len = 0 };
	struct mapping m;
	int ret, idlen;

	fr_test_marker_fn();
	CHECK(s, "fr_symbols_new failed");
	if (!s)
		return;
	if (find_mapping(fn, &m) < 0) {
		CHECK(0, "no mapping of the test function in /proc/self/maps");
		goto out;
	}
	dl_iterate_phdr(find_note_cb, &ns);

	ret = fr_symbols_user(s, NULL, m.path, NULL, 0, m.start, m.pgoff, fn + 3, &name,
			      &elf_addr);
	CHECK(ret == 0, "own function: %d (%s)", ret, m.path);
	CHECK(ret == 0 && strcmp(name, "fr_test_marker_fn") == 0, "own function named %s",
	      ret == 0 ? name : "(none)");
	/* Link-time address: runtime minus the load bias (0 when not PIE). */
	CHECK(elf_addr == fn + 3 - ns.bias, "elf_addr %#" PRIx64 ", want %#" PRIx64, elf_addr,
	      fn + 3 - ns.bias);

	/* A second look-up comes from the cache: the same string. */
	ret = fr_symbols_user(s, NULL, m.path, NULL, 0, m.start, m.pgoff, fn, &name2, NULL);
	CHECK(ret == 0 && name2 == name, "cached look-up gave %d %p vs %p", ret,
	      (const void *)name2, (const void *)name);

	/* Rooted path, and a root that does not exist falls back to the path. */
	name2 = NULL;
	ret = fr_symbols_user(s, "/proc/self/root", m.path, NULL, 0, m.start, m.pgoff, fn,
			      &name2, NULL);
	CHECK(ret == 0 && name2 && strcmp(name2, "fr_test_marker_fn") == 0,
	      "rooted look-up: %d", ret);
	name2 = NULL;
	ret = fr_symbols_user(s, "/nonexistent-root", m.path, NULL, 0, m.start, m.pgoff, fn,
			      &name2, NULL);
	CHECK(ret == 0 && name2 && strcmp(name2, "fr_test_marker_fn") == 0,
	      "fallback from a missing root: %d", ret);

	/* Build ids: the right one resolves, another one is stale. */
	idlen = fr_elf_build_id(m.path, id, sizeof(id));
	CHECK(idlen > 0, "build id of %s: %d", m.path, idlen);
	if (idlen > 0) {
		ret = fr_symbols_user(s, NULL, m.path, id, (size_t)idlen, m.start, m.pgoff, fn,
				      &name2, NULL);
		CHECK(ret == 0, "matching build id: %d", ret);
		memcpy(wrong, id, (size_t)idlen);
		wrong[0] ^= 0xff;
		ret = fr_symbols_user(s, NULL, m.path, wrong, (size_t)idlen, m.start, m.pgoff,
				      fn, &name2, NULL);
		CHECK(ret == -ESTALE, "wrong build id: %d, want -ESTALE", ret);
		ret = fr_symbols_user(s, "/nonexistent-root", m.path, wrong, (size_t)idlen,
				      m.start, m.pgoff, fn, &name2, NULL);
		CHECK(ret == -ESTALE, "wrong build id via missing root: %d, want -ESTALE", ret);
		ret = fr_symbols_user(s, NULL, m.path, wrong, (size_t)idlen - 1, m.start,
				      m.pgoff, fn, &name2, NULL);
		CHECK(ret == -ESTALE, "truncated build id: %d, want -ESTALE", ret);
	}

	/* The ELF header is mapped but is no function. */
	if (ns.bias && find_mapping(ns.bias, &m) == 0 && m.pgoff == 0) {
		ret = fr_symbols_user(s, NULL, m.path, NULL, 0, m.start, 0, m.start, &name2,
				      NULL);
		CHECK(ret == -ENOENT, "ELF header resolved: %d %s", ret,
		      ret == 0 ? name2 : "");
	}
out:
	fr_symbols_free(s);
}

static void test_libc(void)
{
	struct fr_symbols *s = fr_symbols_new(NULL);
	void *sym = dlsym(RTLD_DEFAULT, "getpid");
	uint64_t addr = (uint64_t)(uintptr_t)sym, elf_addr = 0;
	const char *name = NULL;
	struct timespec t0, t1;
	struct mapping m;
	Dl_info di;
	int ret, resolved = 0;

	CHECK(s && sym, "setup: symbols %p getpid %p", (void *)s, sym);
	if (!s || !sym)
		goto out;
	if (find_mapping(addr, &m) < 0 || !dladdr(sym, &di)) {
		CHECK(0, "no mapping of getpid");
		goto out;
	}
	ret = fr_symbols_user(s, NULL, m.path, NULL, 0, m.start, m.pgoff, addr + 1, &name,
			      &elf_addr);
	CHECK(ret == 0 && strstr(name, "getpid"), "getpid in %s: %d %s", m.path, ret,
	      ret == 0 ? name : "");
	CHECK(elf_addr == addr + 1 - (uint64_t)(uintptr_t)di.dli_fbase,
	      "libc elf_addr %#" PRIx64, elf_addr);

	/* Many addresses of one file: parsed once, each look-up cheap. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < 200000; i++) {
		uint64_t a = m.start + (i * 2654435761u) % (m.end - m.start);

		if (fr_symbols_user(s, NULL, m.path, NULL, 0, m.start, m.pgoff, a, &name,
				    NULL) == 0)
			resolved++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(resolved > 0, "no address of libc text resolved");
	printf("200000 libc look-ups, %d resolved, %.1f ns each\n", resolved,
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
		       200000);
out:
	fr_symbols_free(s);
}

static void test_missing(void)
{
	struct fr_symbols *s = fr_symbols_new(NULL);
	char link_path[] = "/tmp/fr-test-symbols-XXXXXX";
	const char *name = NULL;
	char exe[4096];
	ssize_t n;
	int ret, fd;

	CHECK(s, "fr_symbols_new failed");
	if (!s)
		return;
	ret = fr_symbols_user(s, NULL, "/nonexistent/flightrec/libnone.so", NULL, 0, 0x1000, 0,
			      0x1234, &name, NULL);
	CHECK(ret == -ENOENT, "missing file: %d, want -ENOENT", ret);
	ret = fr_symbols_user(s, "/proc/self/root", "/nonexistent/flightrec/libnone.so", NULL,
			      0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret == -ENOENT, "missing rooted file: %d, want -ENOENT", ret);
	ret = fr_symbols_user(s, NULL, "[vdso]", NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret < 0, "[vdso] resolved: %d", ret);
	ret = fr_symbols_user(s, NULL, "/proc/self/maps", NULL, 0, 0x1000, 0, 0x1234, &name,
			      NULL);
	CHECK(ret < 0 && ret != -ENOMEM, "non-ELF file: %d", ret);
	ret = fr_symbols_user(s, NULL, "/dev/null", NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret < 0, "/dev/null resolved: %d", ret);

	/* A file missing at the first look-up stays missing for this cache:
	 * it is not reopened for every address. A new cache sees it. */
	fd = mkstemp(link_path);
	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	if (fd < 0)
		goto out;
	close(fd);
	unlink(link_path);
	ret = fr_symbols_user(s, NULL, link_path, NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret == -ENOENT, "not yet created: %d", ret);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0, "readlink /proc/self/exe");
	if (n > 0) {
		exe[n] = '\0';
		CHECK(symlink(exe, link_path) == 0, "symlink: %s", strerror(errno));
		ret = fr_symbols_user(s, NULL, link_path, NULL, 0, 0x1000, 0, 0x1234, &name,
				      NULL);
		CHECK(ret == -ENOENT, "negative result not cached: %d", ret);
		fr_symbols_free(s);
		s = fr_symbols_new(NULL);
		CHECK(s, "fr_symbols_new failed");
		if (s) {
			uint64_t fn = (uint64_t)(uintptr_t)&fr_test_marker_fn;
			struct mapping m;

			if (find_mapping(fn, &m) == 0) {
				/* A mapped path is what the kernel resolved; a
				 * symlink there was put by someone since, and
				 * is not followed. */
				ret = fr_symbols_user(s, NULL, link_path, NULL, 0, m.start,
						      m.pgoff, fn, &name, NULL);
				CHECK(ret == -ELOOP, "symlink followed: %d, want -ELOOP", ret);
				unlink(link_path);
				CHECK(test_copy_file(exe, link_path, 0600) == 0, "copy %s: %s", exe,
				      strerror(errno));
				fr_symbols_free(s);
				s = fr_symbols_new(NULL);
				CHECK(s, "fr_symbols_new failed");
				ret = s ? fr_symbols_user(s, NULL, link_path, NULL, 0, m.start,
							  m.pgoff, fn, &name, NULL)
					: -ENOMEM;
				CHECK(ret == 0 && strcmp(name, "fr_test_marker_fn") == 0,
				      "the file in a new cache: %d", ret);
			}
		}
		unlink(link_path);
	}
out:
	fr_symbols_free(s);
}

static int write_file(char *tmpl, const char *text)
{
	int fd = mkstemp(tmpl);
	size_t len = strlen(text);

	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* ---- synthetic ELF files ---- */

#define FAKE_UNDEF UINT64_MAX
#define FAKE_TEXT_OFF 0x1000
#define FAKE_TEXT_SIZE 0x1000
#define FAKE_NOTE_OFF 0x800

struct fake_sym {
	const char *name;
	uint64_t value; /* offset into .text, or FAKE_UNDEF */
	uint64_t size;
	unsigned char info;
};

static const struct fake_sym fake_syms[] = {
	{ "__main_fn", 0x000, 0x40, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC) },
	{ "main_fn", 0x000, 0x40, ELF64_ST_INFO(STB_WEAK, STT_FUNC) },
	{ "asm_entry", 0x100, 0, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC) },
	{ "table", 0x180, 0x10, ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT) },
	{ "local_fn", 0x200, 0x100, ELF64_ST_INFO(STB_LOCAL, STT_FUNC) },
	{ "ifunc_fn", 0x400, 0x20, ELF64_ST_INFO(STB_GLOBAL, STT_GNU_IFUNC) },
	{ "outer", 0x500, 0x100, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC) },
	{ "inner", 0x520, 0x10, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC) },
	{ "printf", FAKE_UNDEF, 0, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC) },
};

/* What a stripped library keeps: its exported functions. */
static const struct fake_sym fake_dynsyms[] = {
	{ "main_fn", 0x000, 0x40, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC) },
	{ "outer", 0x500, 0x100, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC) },
};

struct fake_elf {
	uint16_t type; /* ET_EXEC or ET_DYN */
	uint64_t base; /* virtual address of file offset 0 */
	const uint8_t *bid;
	size_t bid_len;
	const struct fake_sym *syms;
	size_t nsyms;
	uint32_t symtab_type; /* SHT_SYMTAB or SHT_DYNSYM */
	int debug_only; /* .text is NOBITS, as in a separate debug file */
};

static uint32_t strtab_add(char *tab, size_t *len, const char *str)
{
	uint32_t off = (uint32_t)*len;

	memcpy(tab + *len, str, strlen(str) + 1);
	*len += strlen(str) + 1;
	return off;
}

/* Writes a minimal ELF64 file: one PT_LOAD covering headers and .text, a
 * PT_NOTE with the GNU build id, and one symbol table. */
static int fake_elf_write(const char *path, const struct fake_elf *fe)
{
	const size_t cap = 0x4000;
	uint8_t *buf = calloc(1, cap);
	char shstr[128], *str;
	size_t shlen = 1, str_len = 1, off, sym_off, str_off, shstr_off, sh_off, note_len;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf64_Shdr *sh;
	Elf64_Sym *sym;
	Elf64_Nhdr *nh;
	int fd, ret = -1;

	if (!buf)
		return -1;
	shstr[0] = '\0';
	eh = (Elf64_Ehdr *)buf;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB
									: ELFDATA2MSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = fe->type;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_entry = fe->base + FAKE_TEXT_OFF;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 2;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 6;
	eh->e_shstrndx = 5;

	nh = (Elf64_Nhdr *)(buf + FAKE_NOTE_OFF);
	nh->n_namesz = 4;
	nh->n_descsz = (uint32_t)fe->bid_len;
	nh->n_type = NT_GNU_BUILD_ID;
	memcpy(nh + 1, "GNU", 4);
	memcpy((uint8_t *)(nh + 1) + 4, fe->bid, fe->bid_len);
	note_len = sizeof(*nh) + 4 + ((fe->bid_len + 3) & ~(size_t)3);

	ph = (Elf64_Phdr *)(buf + sizeof(*eh));
	ph[0].p_type = PT_LOAD;
	ph[0].p_flags = PF_R | PF_X;
	ph[0].p_vaddr = ph[0].p_paddr = fe->base;
	ph[0].p_filesz = ph[0].p_memsz = FAKE_TEXT_OFF + FAKE_TEXT_SIZE;
	ph[0].p_align = 0x1000;
	ph[1].p_type = PT_NOTE;
	ph[1].p_flags = PF_R;
	ph[1].p_offset = FAKE_NOTE_OFF;
	ph[1].p_vaddr = ph[1].p_paddr = fe->base + FAKE_NOTE_OFF;
	ph[1].p_filesz = ph[1].p_memsz = note_len;
	ph[1].p_align = 4;
	if (!fe->debug_only)
		memset(buf + FAKE_TEXT_OFF, 0xcc, FAKE_TEXT_SIZE);

	off = FAKE_TEXT_OFF + FAKE_TEXT_SIZE;
	sym_off = off;
	sym = (Elf64_Sym *)(buf + sym_off);
	str_off = sym_off + (fe->nsyms + 1) * sizeof(*sym);
	str = (char *)buf + str_off;
	str[0] = '\0';
	for (size_t i = 0; i < fe->nsyms; i++) {
		const struct fake_sym *f = &fe->syms[i];
		Elf64_Sym *e = &sym[i + 1];

		e->st_name = strtab_add(str, &str_len, f->name);
		e->st_info = f->info;
		if (f->value != FAKE_UNDEF) {
			e->st_shndx = 1;
			e->st_value = fe->base + FAKE_TEXT_OFF + f->value;
			e->st_size = f->size;
		}
	}
	shstr_off = str_off + str_len;
	sh_off = (shstr_off + sizeof(shstr) + 7) & ~(size_t)7;
	eh->e_shoff = sh_off;
	sh = (Elf64_Shdr *)(buf + sh_off);
	sh[1].sh_name = strtab_add(shstr, &shlen, ".text");
	sh[1].sh_type = fe->debug_only ? SHT_NOBITS : SHT_PROGBITS;
	sh[1].sh_flags = SHF_ALLOC | SHF_EXECINSTR;
	sh[1].sh_addr = fe->base + FAKE_TEXT_OFF;
	sh[1].sh_offset = FAKE_TEXT_OFF;
	sh[1].sh_size = FAKE_TEXT_SIZE;
	sh[1].sh_addralign = 16;
	sh[2].sh_name = strtab_add(shstr, &shlen, ".note.gnu.build-id");
	sh[2].sh_type = SHT_NOTE;
	sh[2].sh_flags = SHF_ALLOC;
	sh[2].sh_addr = fe->base + FAKE_NOTE_OFF;
	sh[2].sh_offset = FAKE_NOTE_OFF;
	sh[2].sh_size = note_len;
	sh[2].sh_addralign = 4;
	sh[3].sh_name = strtab_add(shstr, &shlen,
				   fe->symtab_type == SHT_SYMTAB ? ".symtab" : ".dynsym");
	sh[3].sh_type = fe->symtab_type;
	sh[3].sh_offset = sym_off;
	sh[3].sh_size = (fe->nsyms + 1) * sizeof(*sym);
	sh[3].sh_link = 4;
	sh[3].sh_info = 1;
	sh[3].sh_entsize = sizeof(*sym);
	sh[3].sh_addralign = 8;
	sh[4].sh_name = strtab_add(shstr, &shlen,
				   fe->symtab_type == SHT_SYMTAB ? ".strtab" : ".dynstr");
	sh[4].sh_type = SHT_STRTAB;
	sh[4].sh_offset = str_off;
	sh[4].sh_size = str_len;
	sh[4].sh_addralign = 1;
	sh[5].sh_name = strtab_add(shstr, &shlen, ".shstrtab");
	sh[5].sh_type = SHT_STRTAB;
	sh[5].sh_offset = shstr_off;
	sh[5].sh_size = shlen;
	sh[5].sh_addralign = 1;
	memcpy(buf + shstr_off, shstr, shlen);
	off = sh_off + 6 * sizeof(*sh);

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, buf, off) == (ssize_t)off)
			ret = 0;
		close(fd);
	}
	free(buf);
	return ret;
}

struct ucase {
	uint64_t off; /* from the start of .text */
	const char *want; /* NULL: -ENOENT */
};

static void check_cases(struct fr_symbols *s, const char *what, const char *root,
			const char *path, uint64_t base, uint64_t map_start, uint64_t map_pgoff,
			const struct ucase *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t vaddr = base + FAKE_TEXT_OFF + cases[i].off;
		uint64_t addr = map_start - map_pgoff + (vaddr - base);
		uint64_t elf_addr = 0;
		const char *name = NULL;
		int ret = fr_symbols_user(s, root, path, NULL, 0, map_start, map_pgoff, addr,
					  &name, &elf_addr);

		if (cases[i].want)
			CHECK(ret == 0 && strcmp(name, cases[i].want) == 0,
			      "%s +%#" PRIx64 ": %d %s, want %s", what, cases[i].off, ret,
			      ret == 0 ? name : "", cases[i].want);
		else
			CHECK(ret == -ENOENT, "%s +%#" PRIx64 ": %d %s, want -ENOENT", what,
			      cases[i].off, ret, ret == 0 ? name : "");
		CHECK(elf_addr == vaddr, "%s +%#" PRIx64 ": elf_addr %#" PRIx64 ", want %#" PRIx64,
		      what, cases[i].off, elf_addr, vaddr);
	}
}

static const struct ucase full_cases[] = {
	{ 0x000, "main_fn" }, /* alias: the public spelling wins */
	{ 0x03f, "main_fn" },
	{ 0x040, NULL }, /* gap between functions */
	{ 0x0ff, NULL },
	{ 0x100, "asm_entry" }, /* zero size: up to the next function */
	{ 0x1f0, "asm_entry" }, /* data objects are not functions */
	{ 0x2ff, "local_fn" },
	{ 0x300, NULL },
	{ 0x410, "ifunc_fn" },
	{ 0x525, "inner" },
	{ 0x540, "outer" }, /* past the nested symbol, inside the outer one */
	{ 0x600, NULL },
	{ 0xfff, NULL },
};

static int mkdir_p(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return 0;
}

static void test_fake_elf(void)
{
	static const uint8_t bid[20] = { 0xfe, 0xed, 0xfa, 0xce, 1, 2, 3, 4, 5, 6,
					 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	static const struct ucase stripped_cases[] = {
		{ 0x010, "main_fn" },
		{ 0x210, NULL },
		{ 0x540, "outer" },
	};
	char dir[] = "/tmp/fr-test-elf-XXXXXX";
	char exec_path[256], dyn_path[256], lib_path[256], dbg_path[256], hex[41];
	struct fake_elf fe = {
		.bid = bid,
		.bid_len = sizeof(bid),
		.syms = fake_syms,
		.nsyms = sizeof(fake_syms) / sizeof(fake_syms[0]),
		.symtab_type = SHT_SYMTAB,
	};
	uint8_t wrong[sizeof(bid)], got[64];
	struct fr_symbols *s = NULL;
	const char *name = NULL;
	int ret;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(exec_path, sizeof(exec_path), "%s/exec", dir);
	snprintf(dyn_path, sizeof(dyn_path), "%s/libfull.so", dir);
	snprintf(lib_path, sizeof(lib_path), "%s/lib/libfake.so", dir);
	snprintf(dbg_path, sizeof(dbg_path), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", dir,
		 fr_build_id_hex(bid, sizeof(bid), hex), hex + 2);

	fe.type = ET_EXEC;
	fe.base = 0x400000;
	CHECK(fake_elf_write(exec_path, &fe) == 0, "write %s", exec_path);
	fe.type = ET_DYN;
	fe.base = 0;
	CHECK(fake_elf_write(dyn_path, &fe) == 0, "write %s", dyn_path);
	CHECK(mkdir_p(lib_path) == 0 && mkdir_p(dbg_path) == 0, "mkdir under %s", dir);
	fe.debug_only = 1;
	CHECK(fake_elf_write(dbg_path, &fe) == 0, "write %s", dbg_path);
	fe.debug_only = 0;
	fe.syms = fake_dynsyms;
	fe.nsyms = sizeof(fake_dynsyms) / sizeof(fake_dynsyms[0]);
	fe.symtab_type = SHT_DYNSYM;
	CHECK(fake_elf_write(lib_path, &fe) == 0, "write %s", lib_path);

	ret = fr_elf_build_id(exec_path, got, sizeof(got));
	CHECK(ret == (int)sizeof(bid) && memcmp(got, bid, sizeof(bid)) == 0,
	      "fake build id: %d", ret);

	s = fr_symbols_new(NULL);
	CHECK(s, "fr_symbols_new failed");
	if (!s)
		goto out;
	/* Non-PIE: text mapped alone at its link address, and the whole file
	 * mapped from offset 0. */
	check_cases(s, "exec text map", NULL, exec_path, 0x400000, 0x401000, 0x1000,
		    full_cases, sizeof(full_cases) / sizeof(full_cases[0]));
	check_cases(s, "exec whole map", NULL, exec_path, 0x400000, 0x400000, 0, full_cases,
		    sizeof(full_cases) / sizeof(full_cases[0]));
	/* Shared object loaded anywhere. */
	check_cases(s, "dyn", NULL, dyn_path, 0, 0x7f1234561000, 0x1000, full_cases,
		    sizeof(full_cases) / sizeof(full_cases[0]));
	/* Stripped library found by path only: no debug file, exports only. */
	check_cases(s, "stripped", NULL, lib_path, 0, 0x7f0000001000, 0x1000, stripped_cases,
		    sizeof(stripped_cases) / sizeof(stripped_cases[0]));
	/* The same library inside its root: the debug file beside it is used. */
	check_cases(s, "debug file", dir, "/lib/libfake.so", 0, 0x7f0000001000, 0x1000,
		    full_cases, sizeof(full_cases) / sizeof(full_cases[0]));

	ret = fr_symbols_user(s, NULL, exec_path, bid, sizeof(bid), 0x400000, 0, 0x401010,
			      &name, NULL);
	CHECK(ret == 0 && strcmp(name, "main_fn") == 0, "fake, right build id: %d", ret);
	memcpy(wrong, bid, sizeof(bid));
	wrong[sizeof(wrong) - 1] ^= 1;
	ret = fr_symbols_user(s, NULL, exec_path, wrong, sizeof(wrong), 0x400000, 0, 0x401010,
			      &name, NULL);
	CHECK(ret == -ESTALE, "fake, wrong build id: %d, want -ESTALE", ret);
	/* Outside every PT_LOAD. */
	ret = fr_symbols_user(s, NULL, exec_path, NULL, 0, 0x400000, 0, 0x480000, &name, NULL);
	CHECK(ret == -ENOENT, "outside PT_LOAD: %d", ret);
out:
	fr_symbols_free(s);
	unlink(exec_path);
	unlink(dyn_path);
	unlink(lib_path);
	unlink(dbg_path);
	for (int i = 0; i < 6; i++) {
		/* dbg_path's directories, then lib_path's, deepest first. */
		char *slash = strrchr(dbg_path, '/');

		if (slash && slash > dbg_path + strlen(dir)) {
			*slash = '\0';
			rmdir(dbg_path);
		}
	}
	*strrchr(lib_path, '/') = '\0';
	rmdir(lib_path);
	rmdir(dir);
}

static const char fake_kallsyms[] =
	"0000000000000000 A fixed_percpu_data\n"
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81000100 t local_fn\n"
	"ffffffff81000200 T schedule\n"
	"ffffffff81000280 T __schedule_alias\n"
	"ffffffff81000280 T schedule_alias\n"
	"ffffffff81000300 W weak_fn\n"
	"ffffffff81000380 r rodata_in_text\n"
	"ffffffff81000500 T _etext\n"
	"ffffffff81800000 T _sinittext\n"
	"ffffffff81800000 t init_fn\n"
	"ffffffff81800100 T _einittext\n"
	"ffffffff82000000 D data_sym\n"
	"ffffffff82000100 B bss_sym\n"
	"ffffffffc0002000 t mod_b_fn\t[mod_b]\n"
	"ffffffffc0002100 d mod_b_data\t[mod_b]\n"
	"ffffffffc0001000 t mod_a_fn\t[mod_a]\n"
	"ffffffffc0001100 T mod_a_fn2\t[mod_a]\n"
	"ffffffffc0003000 t bpf_prog_6deef7357e7b4530_sd_fw_egress\t[bpf]"; /* no final newline */

struct kcase {
	uint64_t addr;
	const char *want; /* NULL: -ENOENT */
};

static void test_kernel_fake(void)
{
	static const struct kcase cases[] = {
		{ 0xffffffff81000000, "startup_64" },
		{ 0xffffffff81000010, "startup_64" },
		{ 0xffffffff81000100, "local_fn" },
		{ 0xffffffff81000105, "local_fn" },
		{ 0xffffffff81000200, "schedule" },
		{ 0xffffffff81000210, "schedule" },
		{ 0xffffffff81000290, "schedule_alias" },
		{ 0xffffffff81000308, "weak_fn" },
		{ 0xffffffff81000390, "weak_fn" }, /* rodata is no function */
		{ 0xffffffff81000500, NULL }, /* _etext */
		{ 0xffffffff81000600, NULL },
		{ 0xffffffff81700000, NULL },
		{ 0xffffffff81800004, "init_fn" },
		{ 0xffffffff81800100, NULL }, /* _einittext */
		{ 0xffffffff82000000, NULL }, /* data */
		{ 0xffffffff82000180, NULL },
		{ 0xffffffffc0001000, "mod_a_fn" },
		{ 0xffffffffc0001050, "mod_a_fn" },
		{ 0xffffffffc0001110, "mod_a_fn2" },
		{ 0xffffffffc0002020, "mod_b_fn" },
		{ 0xffffffffc0003008, "bpf_prog_6deef7357e7b4530_sd_fw_egress" },
		{ 0xffffffffc0003000 + (1u << 20), NULL }, /* far past the last symbol */
		{ 0xffffffff80000000, NULL }, /* below the first symbol */
		{ 0x1000, NULL },
		{ 0, NULL },
	};
	char path[] = "/tmp/fr-test-kallsyms-XXXXXX";
	struct fr_symbols *s;
	int fd;

	/* The file is read on first use, not by fr_symbols_new(). */
	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	if (fd < 0)
		return;
	close(fd);
	unlink(path);
	s = fr_symbols_new(path);
	CHECK(s, "fr_symbols_new failed");
	if (!s)
		return;
	{
		char tmp[] = "/tmp/fr-test-kallsyms-XXXXXX";

		CHECK(write_file(tmp, fake_kallsyms) == 0, "write fake kallsyms");
		CHECK(rename(tmp, path) == 0, "rename: %s", strerror(errno));
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *name = NULL;
		int ret = fr_symbols_kernel(s, cases[i].addr, &name);

		if (cases[i].want)
			CHECK(ret == 0 && strcmp(name, cases[i].want) == 0,
			      "kernel %#" PRIx64 ": %d %s, want %s", cases[i].addr, ret,
			      ret == 0 ? name : "", cases[i].want);
		else
			CHECK(ret == -ENOENT, "kernel %#" PRIx64 ": %d %s, want -ENOENT",
			      cases[i].addr, ret, ret == 0 ? name : "");
	}
	fr_symbols_free(s);
	unlink(path);
}

static void test_kernel_restricted(void)
{
	char path[] = "/tmp/fr-test-kallsyms-XXXXXX";
	const char *name = NULL;
	struct fr_symbols *s;
	int ret;

	CHECK(write_file(path,
			 "0000000000000000 T _text\n"
			 "0000000000000000 T schedule\n"
			 "0000000000000000 t mod_fn\t[mod]\n") == 0,
	      "write fake kallsyms");
	s = fr_symbols_new(path);
	CHECK(s, "fr_symbols_new failed");
	if (s) {
		ret = fr_symbols_kernel(s, 0, &name);
		CHECK(ret == -ENOENT, "restricted, 0: %d", ret);
		ret = fr_symbols_kernel(s, 0xffffffff81000000, &name);
		CHECK(ret == -ENOENT, "restricted: %d", ret);
	}
	fr_symbols_free(s);
	unlink(path);

	s = fr_symbols_new("/nonexistent/flightrec/kallsyms");
	CHECK(s, "fr_symbols_new failed");
	if (s) {
		ret = fr_symbols_kernel(s, 0xffffffff81000000, &name);
		CHECK(ret == -ENOENT, "missing kallsyms: %d", ret);
	}
	fr_symbols_free(s);
	s = fr_symbols_new("/tmp");
	if (s) {
		ret = fr_symbols_kernel(s, 0xffffffff81000000, &name);
		CHECK(ret == -ENOENT, "directory as kallsyms: %d", ret);
	}
	fr_symbols_free(s);
}

static void test_kernel_real(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	unsigned long long addr = 0;
	const char *name = NULL;
	struct timespec t0, t1;
	struct fr_symbols *s;
	char line[512];
	int ret;

	if (!f) {
		printf("SKIP real kallsyms: %s\n", strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char type, sym[256];

		if (sscanf(line, "%llx %c %255s", &addr, &type, sym) == 3 &&
		    strcmp(sym, "schedule") == 0 && (type == 'T' || type == 't'))
			break;
		addr = 0;
	}
	fclose(f);
	if (!addr) {
		printf("SKIP real kallsyms: schedule hidden (kptr_restrict)\n");
		return;
	}
	s = fr_symbols_new(NULL);
	CHECK(s, "fr_symbols_new failed");
	if (!s)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = fr_symbols_kernel(s, addr, &name);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(ret == 0 && strcmp(name, "schedule") == 0, "schedule at %#llx: %d %s", addr, ret,
	      ret == 0 ? name : "");
	ret = fr_symbols_kernel(s, addr + 1, &name);
	CHECK(ret == 0 && strcmp(name, "schedule") == 0, "schedule+1: %d %s", ret,
	      ret == 0 ? name : "");
	printf("/proc/kallsyms loaded and first look-up in %.1f ms\n",
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6));
	fr_symbols_free(s);
}

/* Regression: a FIFO put where a mapped file was made the symbolizer's
 * open() wait for a writer forever (and the daemon's ingest thread with
 * it). It must be refused at once. */
static void test_fifo_not_waited(void)
{
	char dir[] = "/tmp/fr-test-fifo-XXXXXX", fifo[64];
	struct fr_symbols *s = fr_symbols_new(NULL);
	const char *name = NULL;
	uint8_t id[64];
	int ret;

	CHECK(s && mkdtemp(dir), "set-up: %s", strerror(errno));
	if (!s)
		return;
	snprintf(fifo, sizeof(fifo), "%s/libgone.so", dir);
	CHECK(mkfifo(fifo, 0644) == 0, "mkfifo: %s", strerror(errno));
	ret = fr_symbols_user(s, NULL, fifo, NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret == -ENOEXEC, "FIFO as a mapped file: %d, want -ENOEXEC", ret);
	ret = fr_elf_build_id(fifo, id, sizeof(id));
	CHECK(ret == -ENOEXEC, "build id of a FIFO: %d, want -ENOEXEC", ret);
	unlink(fifo);
	rmdir(dir);
	fr_symbols_free(s);
}

/* A sparse file of any size costs its owner nothing: it is not read. */
static void test_huge_refused(void)
{
	char path[] = "/tmp/fr-test-huge-XXXXXX";
	struct fr_symbols *s = fr_symbols_new(NULL);
	const char *name = NULL;
	int fd = mkstemp(path), ret;

	CHECK(s && fd >= 0, "set-up: %s", strerror(errno));
	if (!s || fd < 0)
		goto out;
	CHECK(ftruncate(fd, (off_t)FR_ELF_MAX_SIZE + 4096) == 0, "ftruncate: %s",
	      strerror(errno));
	ret = fr_symbols_user(s, NULL, path, NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret == -EFBIG, "a file over FR_ELF_MAX_SIZE: %d, want -EFBIG", ret);
out:
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	fr_symbols_free(s);
}

struct truncator {
	const char *path;
	const char *data;
	size_t len;
	volatile int stop;
	unsigned rounds;
};

/* Cuts the file to pieces of itself and restores it, over and over. */
static void *truncate_loop(void *arg)
{
	struct truncator *t = arg;
	int fd = open(t->path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	while (!t->stop) {
		size_t cut = t->len / (2 + t->rounds % 7);

		if (ftruncate(fd, (off_t)cut) < 0 || ftruncate(fd, 0) < 0 ||
		    pwrite(fd, t->data, t->len, 0) != (ssize_t)t->len)
			break;
		t->rounds++;
	}
	close(fd);
	return NULL;
}

/* Regression: libelf read files through a mapping (ELF_C_READ_MMAP), so a
 * user who truncated their own library while the root daemon read it
 * killed the daemon with SIGBUS. Reads must only come up short. */
static void test_truncated_while_read(void)
{
	char path[] = "/tmp/fr-test-trunc-XXXXXX", *data = NULL;
	uint64_t fn = (uint64_t)(uintptr_t)&fr_test_marker_fn;
	struct truncator t = { .path = path };
	unsigned reads = 0, named = 0;
	struct mapping m;
	struct stat st;
	pthread_t th;
	int fd = -1;

	if (find_mapping(fn, &m) < 0) {
		CHECK(0, "no mapping for the marker");
		return;
	}
	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	if (fd < 0)
		return;
	close(fd);
	unlink(path);
	if (test_copy_file(m.path, path, 0600) < 0 || stat(path, &st) < 0) {
		CHECK(0, "copy %s: %s", m.path, strerror(errno));
		goto out;
	}
	data = malloc((size_t)st.st_size);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(data && fd >= 0 && read(fd, data, (size_t)st.st_size) == st.st_size,
	      "read %s", path);
	if (fd >= 0)
		close(fd);
	t.data = data;
	t.len = (size_t)st.st_size;
	if (pthread_create(&th, NULL, truncate_loop, &t) != 0) {
		CHECK(0, "pthread_create");
		goto out;
	}
	/* Each pass parses the file anew: a new cache, and a new size or
	 * mtime most of the time. */
	for (reads = 0; reads < 400; reads++) {
		struct fr_symbols *s = fr_symbols_new(NULL);
		const char *name = NULL;
		uint8_t id[64];

		if (!s)
			break;
		if (fr_symbols_user(s, NULL, path, NULL, 0, m.start, m.pgoff, fn, &name, NULL) ==
			    0 &&
		    strcmp(name, "fr_test_marker_fn") == 0)
			named++;
		fr_elf_build_id(path, id, sizeof(id));
		fr_symbols_free(s);
	}
	t.stop = 1;
	pthread_join(th, NULL);
	printf("truncation: %u reads (%u named the function) against %u truncations\n", reads,
	       named, t.rounds);
	CHECK(reads == 400 && t.rounds > 0, "reads %u, truncations %u", reads, t.rounds);
out:
	unlink(path);
	free(data);
}

/* A file on a FUSE mount whose owner never answers: the look-up gives up
 * after its deadline instead of holding the attach that asked forever. */
static void test_fuse_deadline(void)
{
	struct fuse_hang h;
	struct fr_symbols *s;
	const char *name = NULL;
	char path[128];
	int ret = fuse_hang_start(&h);

	if (ret < 0) {
		printf("note: no FUSE mount here (%s); the deadline is not exercised\n",
		       strerror(-ret));
		return;
	}
	s = fr_symbols_new(NULL);
	CHECK(s, "fr_symbols_new failed");
	for (int i = 0; s && i < 2; i++) {
		snprintf(path, sizeof(path), "%s/libhang%d.so", h.dir, i);
		ret = fr_symbols_user(s, NULL, path, NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
		CHECK(ret == -ETIMEDOUT, "a file that never opens: %d, want -ETIMEDOUT", ret);
		/* Cached: the second look-up does not wait again. */
		ret = fr_symbols_user(s, NULL, path, NULL, 0, 0x1000, 0, 0x1238, &name, NULL);
		CHECK(ret == -ETIMEDOUT, "again: %d, want -ETIMEDOUT", ret);
	}
	fr_symbols_free(s);
	fuse_hang_stop(&h);
}

struct share_arg {
	struct mapping m;
	uint64_t fn;
	const char *name; /* what this thread's cache returned */
	int ret;
};

static void *share_main(void *p)
{
	struct share_arg *a = p;
	struct fr_symbols *s = fr_symbols_new(NULL);

	a->ret = -ENOMEM;
	if (!s)
		return NULL;
	for (int i = 0; i < 200; i++)
		a->ret = fr_symbols_user(s, NULL, a->m.path, NULL, 0, a->m.start, a->m.pgoff, a->fn,
					 &a->name, NULL);
	/* The name lives as long as a cache holds the image: compare it
	 * before this cache lets go. */
	a->name = a->name ? strdup(a->name) : NULL;
	fr_symbols_free(s);
	return NULL;
}

/* Regression: each request parsed its own copy of every file, so 16
 * concurrent attaches held 16 copies of libc's symbol table. Caches now
 * share one parsed image per file: two caches hand back the very same
 * name, and threads resolving at once all get it right. */
static void test_shared_images(void)
{
	struct share_arg args[4];
	pthread_t th[4];
	struct fr_symbols *s1 = fr_symbols_new(NULL), *s2 = fr_symbols_new(NULL);
	const char *n1 = NULL, *n2 = NULL;
	struct mapping m;
	uint64_t fn = (uint64_t)(uintptr_t)&fr_test_marker_fn;
	int r1, r2;

	CHECK(s1 && s2 && find_mapping(fn, &m) == 0, "set-up");
	if (!s1 || !s2)
		goto out;
	r1 = fr_symbols_user(s1, NULL, m.path, NULL, 0, m.start, m.pgoff, fn, &n1, NULL);
	r2 = fr_symbols_user(s2, NULL, m.path, NULL, 0, m.start, m.pgoff, fn, &n2, NULL);
	CHECK(r1 == 0 && r2 == 0 && n1 && n1 == n2,
	      "two caches did not share the parsed file: %d %d, %p %p", r1, r2, (void *)n1,
	      (void *)n2);
	for (int i = 0; i < 4; i++) {
		args[i] = (struct share_arg){ .m = m, .fn = fn };
		CHECK(pthread_create(&th[i], NULL, share_main, &args[i]) == 0, "pthread_create");
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK(args[i].ret == 0 && args[i].name &&
			      strcmp(args[i].name, "fr_test_marker_fn") == 0,
		      "thread %d: %d %s", i, args[i].ret, args[i].name ? args[i].name : "(null)");
		free((char *)args[i].name);
	}
out:
	fr_symbols_free(s1);
	fr_symbols_free(s2);
}

/* Regression: only the last component was opened with O_NOFOLLOW. A user
 * who renamed a directory of their mapped library and put a symlink to
 * /dev in its place made the root daemon open device nodes (a watchdog
 * armed by its open reboots the machine) or files only root may read. No
 * symlink is followed anywhere in a mapped path now. */
static void test_symlinked_dir(void)
{
	char dir[] = "/tmp/fr-test-lnk-XXXXXX", link[128], path[160];
	struct fr_symbols *s = fr_symbols_new(NULL);
	const char *name = NULL;
	int ret;

	CHECK(s && mkdtemp(dir), "set-up: %s", strerror(errno));
	if (!s)
		return;
	snprintf(link, sizeof(link), "%s/d", dir);
	snprintf(path, sizeof(path), "%s/null", link);
	CHECK(symlink("/dev", link) == 0, "symlink: %s", strerror(errno));
	ret = fr_symbols_user(s, NULL, path, NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret == -ELOOP, "a path through a symlinked directory: %d, want -ELOOP", ret);
	ret = fr_symbols_user(s, "/proc/self/root", path, NULL, 0, 0x1000, 0, 0x1234, &name,
			      NULL);
	CHECK(ret == -ELOOP, "the same under a root: %d, want -ELOOP", ret);
	unlink(link);
	rmdir(dir);
	fr_symbols_free(s);
}

int main(void)
{
	test_build_id();
	test_self();
	test_libc();
	test_missing();
	test_fake_elf();
	test_fifo_not_waited();
	test_huge_refused();
	test_truncated_while_read();
	test_fuse_deadline();
	test_shared_images();
	test_symlinked_dir();
	test_kernel_fake();
	test_kernel_restricted();
	test_kernel_real();
	fr_symbols_free(NULL);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
