/* Symbolization from files written here: small ELF files cover what the
 * running process cannot pin down (non-PIE executables, zero-size and
 * nested symbols, gaps between functions, separate debug files under a
 * root), and fake kallsyms files the kernel's addresses (core, init text,
 * modules, kptr_restrict); the real /proc/kallsyms when readable. */
#include "core/symbols/symbols.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/check.h"

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
	{"__main_fn", 0x000, 0x40, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC)},
	{"main_fn", 0x000, 0x40, ELF64_ST_INFO(STB_WEAK, STT_FUNC)},
	{"asm_entry", 0x100, 0, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC)},
	{"table", 0x180, 0x10, ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT)},
	{"local_fn", 0x200, 0x100, ELF64_ST_INFO(STB_LOCAL, STT_FUNC)},
	{"ifunc_fn", 0x400, 0x20, ELF64_ST_INFO(STB_GLOBAL, STT_GNU_IFUNC)},
	{"outer", 0x500, 0x100, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC)},
	{"inner", 0x520, 0x10, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC)},
	/* Versions spelled into the names, as in a debug file's .symtab. */
	{"versioned_fn@@V_2", 0x700, 0x20, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC)},
	{"versioned_fn@V_1", 0x700, 0x20, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC)},
	{"printf", FAKE_UNDEF, 0, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC)},
};

/* What a stripped library keeps: its exported functions. */
static const struct fake_sym fake_dynsyms[] = {
	{"main_fn", 0x000, 0x40, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC)},
	{"outer", 0x500, 0x100, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC)},
};

struct fake_elf {
	uint16_t type; /* ET_EXEC or ET_DYN */
	uint64_t base; /* virtual address of file offset 0 */
	const uint8_t *bid;
	size_t bid_len;
	const struct fake_sym *syms;
	size_t nsyms;
	uint32_t symtab_type; /* SHT_SYMTAB or SHT_DYNSYM */
	int debug_only;	      /* .text is NOBITS, as in a separate debug file */
};

static uint32_t strtab_add(char *tab, size_t *len, const char *str)
{
	uint32_t off = (uint32_t)*len;

	memcpy(tab + *len, str, strlen(str) + 1);
	*len += strlen(str) + 1;
	return off;
}

/* Where the parts of a fake ELF file lie, as its writing steps place them. */
struct fake_layout {
	size_t note_len;
	size_t sym_off, str_off, str_len;
	size_t shstr_off, sh_off;
};

/* The ELF header, the GNU build id note, the two program headers (one
 * PT_LOAD covering headers and .text, one PT_NOTE) and .text itself. */
static void fake_elf_headers(uint8_t *buf, const struct fake_elf *fe, struct fake_layout *lo)
{
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf64_Nhdr *nh;

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
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 6;
	eh->e_shstrndx = 5;

	nh = (Elf64_Nhdr *)(buf + FAKE_NOTE_OFF);
	nh->n_namesz = 4;
	nh->n_descsz = (uint32_t)fe->bid_len;
	nh->n_type = NT_GNU_BUILD_ID;
	memcpy(nh + 1, "GNU", 4);
	memcpy((uint8_t *)(nh + 1) + 4, fe->bid, fe->bid_len);
	lo->note_len = sizeof(*nh) + 4 + ((fe->bid_len + 3) & ~(size_t)3);

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
	ph[1].p_filesz = ph[1].p_memsz = lo->note_len;
	ph[1].p_align = 4;
	if (!fe->debug_only)
		memset(buf + FAKE_TEXT_OFF, 0xcc, FAKE_TEXT_SIZE);
}

/* The symbol table and its string table, after .text. */
static void fake_elf_symbols(uint8_t *buf, const struct fake_elf *fe, struct fake_layout *lo)
{
	Elf64_Sym *sym;
	char *str;

	lo->str_len = 1;
	lo->sym_off = FAKE_TEXT_OFF + FAKE_TEXT_SIZE;
	sym = (Elf64_Sym *)(buf + lo->sym_off);
	lo->str_off = lo->sym_off + (fe->nsyms + 1) * sizeof(*sym);
	str = (char *)buf + lo->str_off;
	str[0] = '\0';
	for (size_t i = 0; i < fe->nsyms; i++) {
		const struct fake_sym *f = &fe->syms[i];
		Elf64_Sym *e = &sym[i + 1];

		e->st_name = strtab_add(str, &lo->str_len, f->name);
		e->st_info = f->info;
		if (f->value != FAKE_UNDEF) {
			e->st_shndx = 1;
			e->st_value = fe->base + FAKE_TEXT_OFF + f->value;
			e->st_size = f->size;
		}
	}
}

/* The section names and headers: .text, the note, the symbol and string
 * tables, .shstrtab. Returns the length of the whole file. */
static size_t fake_elf_sections(uint8_t *buf, const struct fake_elf *fe, struct fake_layout *lo)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Shdr *sh;
	char shstr[128];
	size_t shlen = 1;

	shstr[0] = '\0';
	lo->shstr_off = lo->str_off + lo->str_len;
	lo->sh_off = (lo->shstr_off + sizeof(shstr) + 7) & ~(size_t)7;
	eh->e_shoff = lo->sh_off;
	sh = (Elf64_Shdr *)(buf + lo->sh_off);
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
	sh[2].sh_size = lo->note_len;
	sh[2].sh_addralign = 4;
	sh[3].sh_name =
		strtab_add(shstr, &shlen, fe->symtab_type == SHT_SYMTAB ? ".symtab" : ".dynsym");
	sh[3].sh_type = fe->symtab_type;
	sh[3].sh_offset = lo->sym_off;
	sh[3].sh_size = (fe->nsyms + 1) * sizeof(Elf64_Sym);
	sh[3].sh_link = 4;
	sh[3].sh_info = 1;
	sh[3].sh_entsize = sizeof(Elf64_Sym);
	sh[3].sh_addralign = 8;
	sh[4].sh_name =
		strtab_add(shstr, &shlen, fe->symtab_type == SHT_SYMTAB ? ".strtab" : ".dynstr");
	sh[4].sh_type = SHT_STRTAB;
	sh[4].sh_offset = lo->str_off;
	sh[4].sh_size = lo->str_len;
	sh[4].sh_addralign = 1;
	sh[5].sh_name = strtab_add(shstr, &shlen, ".shstrtab");
	sh[5].sh_type = SHT_STRTAB;
	sh[5].sh_offset = lo->shstr_off;
	sh[5].sh_size = shlen;
	sh[5].sh_addralign = 1;
	memcpy(buf + lo->shstr_off, shstr, shlen);
	return lo->sh_off + 6 * sizeof(*sh);
}

/* Writes a minimal ELF64 file: one PT_LOAD covering headers and .text, a
 * PT_NOTE with the GNU build id, and one symbol table. */
static int fake_elf_write(const char *path, const struct fake_elf *fe)
{
	const size_t cap = 0x4000;
	uint8_t *buf = calloc(1, cap);
	struct fake_layout lo;
	size_t off;
	int fd, ret = -1;

	if (!buf)
		return -1;
	fake_elf_headers(buf, fe, &lo);
	fake_elf_symbols(buf, fe, &lo);
	off = fake_elf_sections(buf, fe, &lo);

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
	uint64_t off;	  /* from the start of .text */
	const char *want; /* NULL: -ENOENT */
};

static void check_cases(struct fr_symbols *s, const char *what, const char *root, const char *path,
			uint64_t base, uint64_t map_start, uint64_t map_pgoff,
			const struct ucase *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t vaddr = base + FAKE_TEXT_OFF + cases[i].off;
		uint64_t addr = map_start - map_pgoff + (vaddr - base);
		uint64_t elf_addr = 0;
		const char *name = NULL;
		int ret = fr_symbols_user(s, root, path, NULL, 0, map_start, map_pgoff, addr, &name,
					  &elf_addr);

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

static const struct ucase full_cases[] =
	{
		{0x000, "main_fn"}, /* alias: the public spelling wins */
		{0x03f, "main_fn"},
		{0x040, NULL}, /* gap between functions */
		{0x0ff, NULL},
		{0x100, "asm_entry"}, /* zero size: up to the next function */
		{0x1f0, "asm_entry"}, /* data objects are not functions */
		{0x2ff, "local_fn"},
		{0x300, NULL},
		{0x410, "ifunc_fn"},
		{0x525, "inner"},
		{0x540, "outer"}, /* past the nested symbol, inside the outer one */
		{0x600, NULL},
		{0xfff, NULL},
		{0x710, "versioned_fn"}, /* regression: was "versioned_fn@@V_2" */
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

static const uint8_t fake_bid[20] = {0xfe, 0xed, 0xfa, 0xce, 1,	 2,  3,	 4,  5,	 6,
				     7,	   8,	 9,    10,   11, 12, 13, 14, 15, 16};

/* The files test_fake_elf resolves in, all under one new directory. */
struct fake_files {
	char dir[sizeof("/tmp/fr-test-elf-XXXXXX")];
	char exec_path[256], dyn_path[256], lib_path[256], dbg_path[256];
};

/* A non-PIE executable, a shared object, and a stripped library at
 * lib/ with its separate debug file under usr/lib/debug/.build-id/. */
static void fake_files_write(struct fake_files *ff)
{
	struct fake_elf fe = {
		.bid = fake_bid,
		.bid_len = sizeof(fake_bid),
		.syms = fake_syms,
		.nsyms = sizeof(fake_syms) / sizeof(fake_syms[0]),
		.symtab_type = SHT_SYMTAB,
	};
	char hex[41];

	snprintf(ff->exec_path, sizeof(ff->exec_path), "%s/exec", ff->dir);
	snprintf(ff->dyn_path, sizeof(ff->dyn_path), "%s/libfull.so", ff->dir);
	snprintf(ff->lib_path, sizeof(ff->lib_path), "%s/lib/libfake.so", ff->dir);
	snprintf(ff->dbg_path, sizeof(ff->dbg_path), "%s/usr/lib/debug/.build-id/%.2s/%s.debug",
		 ff->dir, fr_build_id_hex(fake_bid, sizeof(fake_bid), hex), hex + 2);

	fe.type = ET_EXEC;
	fe.base = 0x400000;
	CHECK(fake_elf_write(ff->exec_path, &fe) == 0, "write %s", ff->exec_path);
	fe.type = ET_DYN;
	fe.base = 0;
	CHECK(fake_elf_write(ff->dyn_path, &fe) == 0, "write %s", ff->dyn_path);
	CHECK(mkdir_p(ff->lib_path) == 0 && mkdir_p(ff->dbg_path) == 0, "mkdir under %s", ff->dir);
	fe.debug_only = 1;
	CHECK(fake_elf_write(ff->dbg_path, &fe) == 0, "write %s", ff->dbg_path);
	fe.debug_only = 0;
	fe.syms = fake_dynsyms;
	fe.nsyms = sizeof(fake_dynsyms) / sizeof(fake_dynsyms[0]);
	fe.symtab_type = SHT_DYNSYM;
	CHECK(fake_elf_write(ff->lib_path, &fe) == 0, "write %s", ff->lib_path);
}

static void fake_files_remove(struct fake_files *ff)
{
	unlink(ff->exec_path);
	unlink(ff->dyn_path);
	unlink(ff->lib_path);
	unlink(ff->dbg_path);
	for (int i = 0; i < 6; i++) {
		/* dbg_path's directories, then lib_path's, deepest first. */
		char *slash = strrchr(ff->dbg_path, '/');

		if (slash && slash > ff->dbg_path + strlen(ff->dir)) {
			*slash = '\0';
			rmdir(ff->dbg_path);
		}
	}
	*strrchr(ff->lib_path, '/') = '\0';
	rmdir(ff->lib_path);
	rmdir(ff->dir);
}

static void test_fake_elf(void)
{
	static const struct ucase stripped_cases[] = {
		{0x010, "main_fn"},
		{0x210, NULL},
		{0x540, "outer"},
	};
	struct fake_files ff = {.dir = "/tmp/fr-test-elf-XXXXXX"};
	uint8_t wrong[sizeof(fake_bid)], got[64];
	struct fr_symbols *s = NULL;
	const char *name = NULL;
	int ret;

	if (!mkdtemp(ff.dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	fake_files_write(&ff);

	ret = fr_elf_build_id(ff.exec_path, got, sizeof(got));
	CHECK(ret == (int)sizeof(fake_bid) && memcmp(got, fake_bid, sizeof(fake_bid)) == 0,
	      "fake build id: %d", ret);

	s = fr_symbols_new(NULL);
	CHECK(s, "fr_symbols_new failed");
	if (!s)
		goto out;
	/* Non-PIE: text mapped alone at its link address, and the whole file
	 * mapped from offset 0. */
	check_cases(s, "exec text map", NULL, ff.exec_path, 0x400000, 0x401000, 0x1000, full_cases,
		    sizeof(full_cases) / sizeof(full_cases[0]));
	check_cases(s, "exec whole map", NULL, ff.exec_path, 0x400000, 0x400000, 0, full_cases,
		    sizeof(full_cases) / sizeof(full_cases[0]));
	/* Shared object loaded anywhere. */
	check_cases(s, "dyn", NULL, ff.dyn_path, 0, 0x7f1234561000, 0x1000, full_cases,
		    sizeof(full_cases) / sizeof(full_cases[0]));
	/* Stripped library found by path only: no debug file, exports only. */
	check_cases(s, "stripped", NULL, ff.lib_path, 0, 0x7f0000001000, 0x1000, stripped_cases,
		    sizeof(stripped_cases) / sizeof(stripped_cases[0]));
	/* The same library inside its root: the debug file beside it is used. */
	check_cases(s, "debug file", ff.dir, "/lib/libfake.so", 0, 0x7f0000001000, 0x1000,
		    full_cases, sizeof(full_cases) / sizeof(full_cases[0]));

	ret = fr_symbols_user(s, NULL, ff.exec_path, fake_bid, sizeof(fake_bid), 0x400000, 0,
			      0x401010, &name, NULL);
	CHECK(ret == 0 && strcmp(name, "main_fn") == 0, "fake, right build id: %d", ret);
	memcpy(wrong, fake_bid, sizeof(fake_bid));
	wrong[sizeof(wrong) - 1] ^= 1;
	ret = fr_symbols_user(s, NULL, ff.exec_path, wrong, sizeof(wrong), 0x400000, 0, 0x401010,
			      &name, NULL);
	CHECK(ret == -ESTALE, "fake, wrong build id: %d, want -ESTALE", ret);
	/* Outside every PT_LOAD. */
	ret = fr_symbols_user(s, NULL, ff.exec_path, NULL, 0, 0x400000, 0, 0x480000, &name, NULL);
	CHECK(ret == -ENOENT, "outside PT_LOAD: %d", ret);
out:
	fr_symbols_free(s);
	fake_files_remove(&ff);
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
		{0xffffffff81000000, "startup_64"},
		{0xffffffff81000010, "startup_64"},
		{0xffffffff81000100, "local_fn"},
		{0xffffffff81000105, "local_fn"},
		{0xffffffff81000200, "schedule"},
		{0xffffffff81000210, "schedule"},
		{0xffffffff81000290, "schedule_alias"},
		{0xffffffff81000308, "weak_fn"},
		{0xffffffff81000390, "weak_fn"}, /* rodata is no function */
		{0xffffffff81000500, NULL},	 /* _etext */
		{0xffffffff81000600, NULL},
		{0xffffffff81700000, NULL},
		{0xffffffff81800004, "init_fn"},
		{0xffffffff81800100, NULL}, /* _einittext */
		{0xffffffff82000000, NULL}, /* data */
		{0xffffffff82000180, NULL},
		{0xffffffffc0001000, "mod_a_fn"},
		{0xffffffffc0001050, "mod_a_fn"},
		{0xffffffffc0001110, "mod_a_fn2"},
		{0xffffffffc0002020, "mod_b_fn"},
		{0xffffffffc0003008, "bpf_prog_6deef7357e7b4530_sd_fw_egress"},
		{0xffffffffc0003000 + (1u << 20), NULL}, /* far past the last symbol */
		{0xffffffff80000000, NULL},		 /* below the first symbol */
		{0x1000, NULL},
		{0, NULL},
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

	CHECK(write_file(path, "0000000000000000 T _text\n"
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

int main(void)
{
	test_fake_elf();
	test_kernel_fake();
	test_kernel_restricted();
	test_kernel_real();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
