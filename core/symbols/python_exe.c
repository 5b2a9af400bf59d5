/* The object holding a CPython interpreter, read for its Python stacks
 * (core/symbols/python_exe.h). */
#include "core/symbols/python_exe.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/symbols/elf_int.h"
#include "core/util/fs.h"
#include "core/util/le.h"

/* .rodata scanned for 3.10's "python3.10" (Modules/getpath.c's VERSION),
 * a chunk at a time. */
#define RODATA_MAX (64u << 20)
#define CHUNK 65536u
/* The largest struct whose fields the debug offsets may place (3.13's
 * PyInterpreterState is 190 KiB). */
#define STRUCT_MAX (1u << 20)

/* ---- the layouts ---- */

/* Per minor release, x86-64, from offsetof() over the release's own
 * headers as installed with it (include/python3.X/internal/
 * pycore_runtime.h, pycore_interp.h, pycore_frame.h; cpython/pystate.h,
 * code.h, frameobject.h (3.10), unicodeobject.h, bytesobject.h): pyenv's
 * 3.10.13, 3.11.7, 3.12.1 and 3.13.0, and Debian's 3.11.2
 * (/usr/include/python3.11: the same as 3.11.7). The structs walked keep
 * their layout within a minor release (CPython's ABI promise covers the
 * code and str objects; the runtime's and frames' are checked by
 * tests/unit/test_python_read.c against every interpreter at hand). */
static const struct fr_py_layout layouts[] = {
	[0] = {.rt_interp_head = 32, /* 3.10 */
	       .is_next = 0,
	       .is_threads_head = 8, /* tstate_head */
	       .ts_next = 8,
	       .ts_thread_id = 176,
	       .ts_native_id = -1,
	       .ts_frame = 24, /* PyFrameObject *frame */
	       .ts_cframe = -1,
	       .cf_frame = -1,
	       .fr_previous = 24, /* f_back */
	       .fr_code = 32,
	       .fr_instr = 96, /* f_lasti */
	       .fr_is_entry = -1,
	       .fr_owner = -1,
	       .fr_cstack_owner = -1,
	       .co_name = 112,
	       .co_qualname = -1,
	       .co_filename = 104,
	       .co_firstlineno = 40,
	       .co_linetable = 120,
	       .co_code_adaptive = -1,
	       .linetable = FR_PY_LINES_PEP626,
	       .instr_is_lasti = 1,
	       .str_length = 16,
	       .str_state = 32,
	       .str_ascii_size = 48,
	       .str_compact_size = 72,
	       .str_utf8_len = 48,
	       .str_utf8 = 56,
	       .bytes_size = 16,
	       .bytes_data = 32},
	[1] = {.rt_interp_head = 40, /* 3.11 */
	       .is_next = 0,
	       .is_threads_head = 16,
	       .ts_next = 8,
	       .ts_thread_id = 152,
	       .ts_native_id = 160,
	       .ts_frame = -1,
	       .ts_cframe = 56,
	       .cf_frame = 8,
	       .fr_previous = 48,
	       .fr_code = 32,
	       .fr_instr = 56, /* prev_instr */
	       .fr_is_entry = 68,
	       .fr_owner = 69,
	       .fr_cstack_owner = -1,
	       .co_name = 120,
	       .co_qualname = 128,
	       .co_filename = 112,
	       .co_firstlineno = 72,
	       .co_linetable = 136,
	       .co_code_adaptive = 184,
	       .linetable = FR_PY_LINES_LOCATIONS,
	       .str_length = 16,
	       .str_state = 32,
	       .str_ascii_size = 48,
	       .str_compact_size = 72,
	       .str_utf8_len = 48,
	       .str_utf8 = 56,
	       .bytes_size = 16,
	       .bytes_data = 32},
	[2] = {.rt_interp_head = 40, /* 3.12 */
	       .is_next = 0,
	       .is_threads_head = 72,
	       .ts_next = 8,
	       .ts_thread_id = 136,
	       .ts_native_id = 144,
	       .ts_frame = -1,
	       .ts_cframe = 56,
	       .cf_frame = 0,
	       .fr_previous = 8,
	       .fr_code = 0,
	       .fr_instr = 56, /* prev_instr */
	       .fr_is_entry = -1,
	       .fr_owner = 70,
	       .fr_cstack_owner = 3, /* FRAME_OWNED_BY_CSTACK */
	       .co_name = 120,
	       .co_qualname = 128,
	       .co_filename = 112,
	       .co_firstlineno = 68,
	       .co_linetable = 136,
	       .co_code_adaptive = 192,
	       .linetable = FR_PY_LINES_LOCATIONS,
	       .str_length = 16,
	       .str_state = 32,
	       .str_ascii_size = 40,
	       .str_compact_size = 56,
	       .str_utf8_len = 40,
	       .str_utf8 = 48,
	       .bytes_size = 16,
	       .bytes_data = 32},
	[3] = {.rt_interp_head = 632, /* 3.13 */
	       .is_next = 7264,
	       .is_threads_head = 7344,
	       .ts_next = 8,
	       .ts_thread_id = 152,
	       .ts_native_id = 160,
	       .ts_frame = 72, /* current_frame */
	       .ts_cframe = -1,
	       .cf_frame = -1,
	       .fr_previous = 8,
	       .fr_code = 0,   /* f_executable */
	       .fr_instr = 56, /* instr_ptr */
	       .fr_is_entry = -1,
	       .fr_owner = 70,
	       .fr_cstack_owner = 3,
	       .co_name = 120,
	       .co_qualname = 128,
	       .co_filename = 112,
	       .co_firstlineno = 68,
	       .co_linetable = 136,
	       .co_code_adaptive = 200,
	       .linetable = FR_PY_LINES_LOCATIONS,
	       .str_length = 16,
	       .str_state = 32,
	       .str_ascii_size = 40,
	       .str_compact_size = 56,
	       .str_utf8_len = 40,
	       .str_utf8 = 48,
	       .bytes_size = 16,
	       .bytes_data = 32},
};

int fr_python_layout_table(int minor, struct fr_py_layout *out)
{
	if (minor < 10 || minor > 13)
		return -ENOTSUP;
	*out = layouts[minor - 10];
	return 0;
}

/* An offset of the 3.13 _Py_DebugOffsets at `at`, checked to leave room
 * for a field of `width` bytes in a struct of `size` bytes. */
static int debug_off(const uint8_t *buf, size_t at, uint64_t size, unsigned width, int32_t *out)
{
	uint64_t v = fr_get_le64(buf + at);

	/* The structs read whole (a thread state, a frame, a code object,
	 * a str's header) must fit the reader's buffers; the runtime's and
	 * the interpreter's fields are read one by one. */
	if (size > (at < 152 ? STRUCT_MAX : FR_PY_STRUCT_MAX) || v > size || size - v < width)
		return -ENOTSUP;
	*out = (int32_t)v;
	return 0;
}

int fr_python_debug_offsets(const uint8_t *buf, size_t n, struct fr_py_layout *l,
			    uint32_t *hexversion)
{
	/* Where 3.13's struct keeps each field used (offsetof over its
	 * pycore_runtime.h; the struct's own `size` entries bound them). */
	static const struct {
		uint16_t at, size_at;
		uint8_t width;
		size_t field;
	} f[] = {
		{40, 24, 8, offsetof(struct fr_py_layout, rt_interp_head)},
		{64, 48, 8, offsetof(struct fr_py_layout, is_next)},
		{72, 48, 8, offsetof(struct fr_py_layout, is_threads_head)},
		{168, 152, 8, offsetof(struct fr_py_layout, ts_next)},
		{184, 152, 8, offsetof(struct fr_py_layout, ts_frame)},
		{192, 152, 8, offsetof(struct fr_py_layout, ts_thread_id)},
		{200, 152, 8, offsetof(struct fr_py_layout, ts_native_id)},
		{232, 224, 8, offsetof(struct fr_py_layout, fr_previous)},
		{240, 224, 8, offsetof(struct fr_py_layout, fr_code)},
		{248, 224, 8, offsetof(struct fr_py_layout, fr_instr)},
		{264, 224, 1, offsetof(struct fr_py_layout, fr_owner)},
		{280, 272, 8, offsetof(struct fr_py_layout, co_filename)},
		{288, 272, 8, offsetof(struct fr_py_layout, co_name)},
		{296, 272, 8, offsetof(struct fr_py_layout, co_qualname)},
		{304, 272, 8, offsetof(struct fr_py_layout, co_linetable)},
		{312, 272, 4, offsetof(struct fr_py_layout, co_firstlineno)},
		{344, 272, 2, offsetof(struct fr_py_layout, co_code_adaptive)},
		{544, 536, 4, offsetof(struct fr_py_layout, str_state)},
		{552, 536, 8, offsetof(struct fr_py_layout, str_length)},
	};
	struct fr_py_layout t;
	uint64_t v;

	if (n < FR_PY_DEBUG_OFFSETS_LEN || memcmp(buf, "xdebugpy", 8) != 0)
		return -ENOENT;
	v = fr_get_le64(buf + 8);
	if ((v >> 16) != 0x030d || fr_get_le64(buf + 16) != 0)
		return -ENOTSUP;
	fr_python_layout_table(13, &t);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (debug_off(buf, f[i].at, fr_get_le64(buf + f[i].size_at), f[i].width,
			      (int32_t *)((char *)&t + f[i].field)) < 0)
			return -ENOTSUP;
	/* asciiobject_size: a compact str's header follows with the UTF-8
	 * copy's length and pointer (cpython/unicodeobject.h). */
	v = fr_get_le64(buf + 560);
	if (v < 24 || v > 256)
		return -ENOTSUP;
	t.str_ascii_size = (int32_t)v;
	t.str_utf8_len = (int32_t)v;
	t.str_utf8 = (int32_t)v + 8;
	t.str_compact_size = (int32_t)v + 16;
	*l = t;
	*hexversion = (uint32_t)fr_get_le64(buf + 8);
	return 0;
}

/* ---- the version ---- */

int fr_python_minor(const char *s)
{
	int n = 0, d = 0;

	if (strncmp(s, "3.", 2) != 0)
		return -1;
	for (s += 2; *s >= '0' && *s <= '9' && d < 3; s++, d++)
		n = n * 10 + (*s - '0');
	return d == 1 || d == 2 ? n : -1;
}

static void version_from_hex(struct fr_python_exe *x, uint32_t hex)
{
	x->hexversion = hex;
	x->minor = (int)((hex >> 16) & 0xff);
	snprintf(x->version, sizeof(x->version), "%u.%u.%u", hex >> 24, (hex >> 16) & 0xff,
		 (hex >> 8) & 0xff);
}

/* "python3.N" in a file name: "python3.10", "libpython3.10.so.1.0". */
static int minor_from_name(const char *name)
{
	const char *p = name ? strrchr(name, '/') : NULL;

	p = p ? p + 1 : name;
	while (p && (p = strstr(p, "python3."))) {
		int m = fr_python_minor(p + 6);

		if (m >= 0)
			return m;
		p++;
	}
	return -1;
}

/* ---- the file ---- */

struct file {
	int fd;
	uint64_t fsize;
	Elf *elf;
	struct elf_segs segs;
	uint64_t rodata_off, rodata_size;
	/* The symbols looked for, link-time; 0: absent. */
	uint64_t runtime, py_version, code_type;
	uint64_t eval[2][2]; /* the eval loop's and its .cold part's [start, end) */
};

/* Reads n bytes at virtual address addr of the image, from its PT_LOAD
 * segments' file bytes. */
static int file_vread(const struct file *f, uint64_t addr, void *buf, size_t n)
{
	return elf_segs_vread(&f->segs, addr, buf, n);
}

/* The symbols of one table (.dynsym or .symtab) looked for. */
static void read_symbols(struct file *f, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = d ? d->d_size / sizeof(Elf64_Sym) : 0;

	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;

		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
		    !(name = elf_strptr(f->elf, sh->sh_link, s.st_name)))
			continue;
		if (GELF_ST_TYPE(s.st_info) == STT_FUNC) {
			int k = strcmp(name, "_PyEval_EvalFrameDefault") == 0	     ? 0
				: strcmp(name, "_PyEval_EvalFrameDefault.cold") == 0 ? 1
										     : -1;

			if (k >= 0 && s.st_size && s.st_value + s.st_size > s.st_value) {
				f->eval[k][0] = s.st_value;
				f->eval[k][1] = s.st_value + s.st_size;
			}
			continue;
		}
		if (GELF_ST_TYPE(s.st_info) != STT_OBJECT)
			continue;
		if (strcmp(name, "_PyRuntime") == 0)
			f->runtime = s.st_value;
		else if (strcmp(name, "Py_Version") == 0 && s.st_size >= 4)
			f->py_version = s.st_value;
		else if (strcmp(name, "PyCode_Type") == 0)
			f->code_type = s.st_value;
	}
}

static bool table_ok(const struct file *f, const GElf_Shdr *sh)
{
	Elf_Scn *str = elf_getscn(f->elf, sh->sh_link);
	GElf_Shdr ss;

	return sh->sh_entsize == sizeof(Elf64_Sym) && sh->sh_size <= SECTION_MAX &&
	       within_file(sh->sh_offset, sh->sh_size, f->fsize) && str && gelf_getshdr(str, &ss) &&
	       ss.sh_size <= SECTION_MAX && within_file(ss.sh_offset, ss.sh_size, f->fsize);
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
		if ((sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) && table_ok(f, &sh))
			read_symbols(f, scn, &sh);
		if (sh.sh_type == SHT_PROGBITS && strcmp(name, ".rodata") == 0 &&
		    within_file(sh.sh_offset, sh.sh_size, f->fsize)) {
			f->rodata_off = sh.sh_offset;
			f->rodata_size = sh.sh_size < RODATA_MAX ? sh.sh_size : RODATA_MAX;
		}
	}
	return 0;
}

/* Py_Version (3.11+) is an unsigned long PY_VERSION_HEX. 3.10 has none;
 * its Modules/getpath.c keeps "python" VERSION ("python3.10") as a string
 * of .rodata (3.7 to 3.9 too, which are told so). The minor of the first
 * such string, or -1. */
static bool is_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

static int minor_from_rodata(const struct file *f)
{
	static const char pat[] = "\0python3.";
	uint8_t *buf = malloc(CHUNK + 16);
	int minor = -1;

	for (uint64_t at = 0; buf && minor < 0 && at < f->rodata_size; at += CHUNK) {
		size_t n = (size_t)(f->rodata_size - at < CHUNK + 16 ? f->rodata_size - at
								     : CHUNK + 16);

		if (fr_pread_full(f->fd, buf, n, f->rodata_off + at) != (ssize_t)n)
			break;
		for (size_t i = 0; minor < 0 && i + 12 <= n && i < CHUNK; i++)
			if (memcmp(buf + i, pat, sizeof(pat) - 1) == 0 && is_digit(buf[i + 9]) &&
			    (!buf[i + 10] || (is_digit(buf[i + 10]) && !buf[i + 11])))
				minor = fr_python_minor((const char *)buf + i + 7);
	}
	free(buf);
	return minor;
}

static void read_version(struct file *f, const char *name, struct fr_python_exe *x)
{
	uint8_t v[4];

	if (f->py_version && file_vread(f, f->py_version, v, 4) == 0 && v[3] == 3) {
		version_from_hex(x, fr_get_le32(v));
		return;
	}
	x->minor = minor_from_rodata(f);
	if (x->minor < 0)
		x->minor = minor_from_name(name);
	if (x->minor >= 0)
		snprintf(x->version, sizeof(x->version), "3.%d", x->minor);
}

static int read_exe(struct file *f, const char *name, struct fr_python_exe *x)
{
	uint8_t dbg[FR_PY_DEBUG_OFFSETS_LEN];
	GElf_Ehdr eh;
	int ret = scan_file(f);

	if (ret < 0)
		return ret;
	if (!f->runtime)
		return -ENOENT;
	x->runtime = f->runtime;
	x->code_type = f->code_type;
	memcpy(x->eval, f->eval, sizeof(x->eval));
	x->pie = gelf_getehdr(f->elf, &eh) && eh.e_type == ET_DYN;
	read_version(f, name, x);
	if (x->minor >= 13 && file_vread(f, f->runtime, dbg, sizeof(dbg)) == 0 &&
	    fr_python_debug_offsets(dbg, sizeof(dbg), &x->layout, &x->hexversion) == 0) {
		x->layout_from_debug_offsets = 1;
		return 0;
	}
	return fr_python_layout_table(x->minor, &x->layout);
}

int fr_python_exe_read(int fd, const char *name, struct fr_python_exe *x)
{
	struct file *f = calloc(1, sizeof(*f));
	struct stat st;
	int ret;

	memset(x, 0, sizeof(*x));
	x->minor = -1;
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
		ret = read_exe(f, name, x);
	if (f->elf)
		elf_end(f->elf);
	free(f);
	return ret;
}
