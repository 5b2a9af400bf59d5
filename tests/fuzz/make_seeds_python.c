/* Seeds of the python target (tests/fuzz/fuzz_python.c): for each of
 * 3.10 to 3.13, a process's memory in that release's layout holding the
 * runtime, an interpreter and two threads whose list is a cycle, one
 * thread's frames running a code object (an ASCII name, or from 3.12 one
 * of UCS-2; a non-ASCII file with its UTF-8 copy; a line table) with the C stack's shim between
 * them from 3.12, the other's frame its own caller; that memory cut
 * short; line tables of both formats; a _Py_DebugOffsets of 3.13 and the
 * start of an ELF file. */
#include <stdio.h>
#include <string.h>

#include "core/symbols/python_exe.h"
#include "core/util/le.h"
#include "tests/fuzz/make_seeds.h"

#define BASE 0x10000000ull
#define SIZE 0x3200u

/* Where the objects lie, from the start of the memory. */
enum {
	INTERP = 0x400,
	TS_A = 0x2400,
	TS_B = 0x2600,
	CFRAME = 0x2800,
	FRAMES = 0x2900, /* 0x80 apart */
	CODE = 0x2c00,
	NAME = 0x2e00,
	FILE_ = 0x2f00,
	UTF8 = 0x3000,
	LINES = 0x3100,
};

static void put(uint8_t *m, int32_t at, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		m[at + i] = (uint8_t)(v >> (8 * i));
}

/* 3.11's location table: 3 code units on line +2 (no columns), 2 on +3
 * (one line form), 1 with no line. 3.10's: 6 bytes on +2, 4 on +3. */
static const uint8_t locations[] = {0xea, 0x04, 0xd9, 0x01, 0x05, 0xf8};
static const uint8_t pep626[] = {6, 2, 4, 1, 2, (uint8_t)-128};

static void code(uint8_t *m, const struct fr_py_layout *l)
{
	static const char file[] = "/srv/\xc3\xbcn\xc3\xaf.py";
	const uint8_t *tab = l->linetable == FR_PY_LINES_PEP626 ? pep626 : locations;

	put(m, CODE + (l->co_qualname >= 0 ? l->co_qualname : l->co_name), BASE + NAME);
	put(m, CODE + l->co_filename, BASE + FILE_);
	put(m, CODE + l->co_linetable, BASE + LINES);
	m[CODE + l->co_firstlineno] = 40;
	if (l->fr_cstack_owner < 0) {
		/* An ASCII compact str: kind 1, compact, ascii. */
		put(m, NAME + l->str_length, 6);
		m[NAME + l->str_state] = 0x64;
		memcpy(m + NAME + l->str_ascii_size, "handle", 6);
	} else {
		/* A compact str of UCS-2 with no UTF-8 copy: "h\u00e9\u03bb". */
		static const uint8_t ucs2[] = {'h', 0, 0xe9, 0, 0xbb, 0x03};

		put(m, NAME + l->str_length, 3);
		m[NAME + l->str_state] = 0x28;
		memcpy(m + NAME + l->str_compact_size, ucs2, sizeof(ucs2));
	}
	/* A compact str that is not ASCII, with its UTF-8 copy. */
	put(m, FILE_ + l->str_length, 9);
	m[FILE_ + l->str_state] = 0x24;
	put(m, FILE_ + l->str_utf8_len, sizeof(file) - 1);
	put(m, FILE_ + l->str_utf8, BASE + UTF8);
	memcpy(m + UTF8, file, sizeof(file) - 1);
	put(m, LINES + l->bytes_size, 6);
	memcpy(m + LINES + l->bytes_data, tab, 6);
}

/* Frame i (at FRAMES + 0x80 i) running the code at offset 6, its caller
 * `prev` (0: none). */
static void frame(uint8_t *m, const struct fr_py_layout *l, int i, uint64_t prev)
{
	int32_t f = FRAMES + 0x80 * i;

	put(m, f + l->fr_previous, prev);
	put(m, f + l->fr_code, BASE + CODE);
	if (l->instr_is_lasti)
		put(m, f + l->fr_instr, 3);
	else
		put(m, f + l->fr_instr, BASE + CODE + (uint64_t)l->co_code_adaptive + 6);
	if (l->fr_is_entry >= 0)
		m[f + l->fr_is_entry] = i == 2;
}

static void memory(uint8_t *m, int minor)
{
	struct fr_py_layout l;
	int32_t first;

	memset(m, 0, SIZE);
	fr_python_layout_table(minor, &l);
	first = l.ts_frame;
	put(m, l.rt_interp_head, BASE + INTERP);
	put(m, INTERP + l.is_threads_head, BASE + TS_A);
	put(m, TS_A + l.ts_next, BASE + TS_B);
	put(m, TS_B + l.ts_next, BASE + TS_A); /* a cycle */
	put(m, TS_A + l.ts_thread_id, 0x7f0000001000ull);
	put(m, TS_B + l.ts_thread_id, 0x7f0000002000ull);
	if (l.ts_native_id >= 0)
		put(m, TS_A + l.ts_native_id, 4242);
	if (first >= 0) {
		put(m, TS_A + first, BASE + FRAMES);
		put(m, TS_B + first, BASE + FRAMES + 0x180);
	} else {
		put(m, TS_A + l.ts_cframe, BASE + CFRAME);
		put(m, CFRAME + l.cf_frame, BASE + FRAMES);
		put(m, TS_B + l.ts_cframe, BASE + CFRAME + 0x40);
		put(m, CFRAME + 0x40 + l.cf_frame, BASE + FRAMES + 0x180);
	}
	frame(m, &l, 0, BASE + FRAMES + 0x80);
	/* From 3.12 a shim (owned by the C stack) between frames 1 and 2. */
	frame(m, &l, 1, BASE + FRAMES + (l.fr_cstack_owner >= 0 ? 0x200 : 0x100));
	frame(m, &l, 2, 0);
	frame(m, &l, 3, BASE + FRAMES + 0x180); /* its own caller */
	if (l.fr_cstack_owner >= 0) {
		put(m, FRAMES + 0x200 + l.fr_previous, BASE + FRAMES + 0x100);
		m[FRAMES + 0x200 + l.fr_owner] = (uint8_t)l.fr_cstack_owner;
	}
	code(m, &l);
}

/* A 3.13 _Py_DebugOffsets as the table has it: the struct's sizes, then
 * its fields' offsets where 3.13.0 keeps them. */
static void debug_offsets(uint8_t *d)
{
	struct fr_py_layout l;
	const struct {
		uint16_t at;
		int64_t v;
	} f[] = {{24, 283320}, {48, 194968}, {152, 304}, {224, 80}, {272, 208}, {536, 56}};

	fr_python_layout_table(13, &l);
	memset(d, 0, FR_PY_DEBUG_OFFSETS_LEN);
	memcpy(d, "xdebugpy", 8);
	fr_put_le64(d + 8, 0x030d00f0);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		fr_put_le64(d + f[i].at, (uint64_t)f[i].v);
	const int32_t v[] = {l.rt_interp_head, l.is_next,	   l.is_threads_head,
			     l.ts_next,	       l.ts_frame,	   l.ts_thread_id,
			     l.ts_native_id,   l.fr_previous,	   l.fr_code,
			     l.fr_instr,       l.fr_owner,	   l.co_filename,
			     l.co_name,	       l.co_qualname,	   l.co_linetable,
			     l.co_firstlineno, l.co_code_adaptive, l.str_state,
			     l.str_length,     l.str_ascii_size};
	const uint16_t at[] = {40,  64,	 72,  168, 184, 192, 200, 232, 240, 248,
			       264, 280, 288, 296, 304, 312, 344, 544, 552, 560};

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		fr_put_le64(d + at[i], (uint64_t)v[i]);
}

void make_python_seeds(void)
{
	static uint8_t m[SIZE], d[FR_PY_DEBUG_OFFSETS_LEN], lines[5 + sizeof(locations)];
	static const uint8_t elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
	char name[32];

	clean_dir("python");
	for (int minor = 10; minor <= 13; minor++) {
		memory(m, minor);
		snprintf(name, sizeof(name), "memory-3.%d", minor);
		write_seed("python", name, minor - 10, m, SIZE);
		snprintf(name, sizeof(name), "memory-3.%d-cut", minor);
		write_seed("python", name, minor - 10, m, CODE + 0x40);
	}
	lines[0] = 0;
	fr_put_le32(lines + 1, 6);
	memcpy(lines + 5, locations, sizeof(locations));
	write_seed("python", "locations", 4, lines, sizeof(lines));
	lines[0] = 1;
	memcpy(lines + 5, pep626, sizeof(pep626));
	write_seed("python", "pep626", 4, lines, 5 + sizeof(pep626));
	debug_offsets(d);
	write_seed("python", "debug-offsets", 6, d, sizeof(d));
	write_seed("python", "elf-head", 5, elf, sizeof(elf));
}
