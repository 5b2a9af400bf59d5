/* Fuzz target for reading a CPython process's Python stacks
 * (recorder/tracking/python_read.h) and the interpreter's object they
 * are read with (core/symbols/python_exe.h): the memory and the file are
 * another user's.
 *
 * Input: byte 0 selects what the rest is:
 *   0..3  the process's memory from FUZZ_PY_BASE on, _PyRuntime at its
 *         start, read with the layout of 3.10 + byte 0: its threads and
 *         frames, the code objects of their first frames, their lines
 *   4     a line table: byte 1 its format (odd: 3.10's, even: 3.11's),
 *         bytes 2-5 an offset, the rest the table
 *   5     an ELF file (in a memfd): fr_python_exe_read
 *   6     a _Py_DebugOffsets: fr_python_debug_offsets
 *
 * Promises: no crash, no memory error, no endless walk: at most
 * FR_PY_THREADS threads, each thread state once, at most FR_PY_DEPTH
 * frames each, a bounded number of reads per thread and per code object;
 * names and files NUL-terminated inside their buffers; a line table longer than
 * FR_PY_LINETABLE_MAX not read; lines positive or -1; a layout read from
 * a file or debug offsets within FR_PY_STRUCT_MAX where read whole.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/symbols/python_exe.h"
#include "recorder/tracking/python_read.h"

#define FUZZ_PY_BASE 0x10000000ull
/* Reads of a thread: its state, its _PyCFrame, its chain's steps
 * (frames and shims, twice the depth and two). */
#define THREAD_READS (2u + 2u * FR_PY_DEPTH + 2u)
/* Reads of a code object: itself, two readv and their ranges one by one. */
#define CODE_READS 9u

struct mem {
	const uint8_t *p;
	size_t n;
	uint64_t reads;
};

static int mem_read(void *arg, uint64_t addr, void *buf, size_t n)
{
	struct mem *m = arg;

	m->reads++;
	if (addr < FUZZ_PY_BASE || addr - FUZZ_PY_BASE > m->n || m->n - (addr - FUZZ_PY_BASE) < n)
		return -EFAULT;
	memcpy(buf, m->p + (addr - FUZZ_PY_BASE), n);
	return 0;
}

/* Reads the ranges in turn, stopping at the first that fails, as the
 * kernel does; one read counted. */
static int mem_readv(void *arg, size_t n, const uint64_t *addr, const size_t *len, void **buf)
{
	struct mem *m = arg;
	uint64_t before = m->reads;
	size_t i = 0;

	while (i < n && mem_read(arg, addr[i], buf[i], len[i]) == 0)
		i++;
	m->reads = before + 1;
	return (int)i;
}

static void check_name(const char *s, size_t cap)
{
	FUZZ_CHECK(memchr(s, 0, cap), "a name not NUL-terminated");
}

struct ctx {
	const struct fr_python_exe *x;
	const struct fr_py_mem *mem;
	struct mem *m;
	unsigned threads;
};

/* A thread's first frames: their code objects and lines. */
static int check_thread(void *arg, const struct fr_py_thread *t)
{
	struct ctx *c = arg;

	c->threads++;
	FUZZ_CHECK(c->threads <= FR_PY_THREADS, "%u threads", c->threads);
	FUZZ_CHECK(t->nframes <= FR_PY_DEPTH, "%u frames", t->nframes);
	for (uint32_t i = 0; i < t->nframes && i < 4 && c->threads <= 4; i++) {
		struct fr_py_code code;
		uint64_t before = c->m->reads;
		int ret = fr_py_code_read(c->x, 0, c->mem, t->frames[i].code, &code);

		FUZZ_CHECK(c->m->reads - before <= CODE_READS, "%lu reads of a code object",
			   (unsigned long)(c->m->reads - before));
		FUZZ_CHECK(ret == 0 || ret == -EFAULT || ret == -EBADMSG || ret == -ENOMEM,
			   "code: %d", ret);
		if (ret < 0)
			continue;
		check_name(code.qualname, sizeof(code.qualname));
		check_name(code.file, sizeof(code.file));
		FUZZ_CHECK(code.nlinetable <= FR_PY_LINETABLE_MAX &&
				   (!code.nlinetable) == !code.linetable,
			   "a line table of %u bytes", code.nlinetable);
		int32_t line = fr_py_line(code.linetable_kind, code.linetable, code.nlinetable,
					  code.firstline, t->frames[i].offset);

		FUZZ_CHECK(line > 0 || line == -1 || t->frames[i].offset == FR_PY_NO_OFFSET,
			   "line %d", line);
		fr_py_code_fini(&code);
	}
	return 0;
}

static void fuzz_memory(int minor, const uint8_t *data, size_t size)
{
	struct fr_python_exe x = {.minor = minor, .runtime = FUZZ_PY_BASE};
	struct mem m = {data, size, 0};
	struct fr_py_mem mem = {mem_read, size & 1 ? mem_readv : NULL, &m};
	struct ctx c = {&x, &mem, &m, 0};
	struct fr_py_stats st = {0};
	int ret;

	FUZZ_CHECK(fr_python_layout_table(minor, &x.layout) == 0, "the layout of 3.%d", minor);
	ret = fr_py_threads_read(&x, 0, &mem, check_thread, &c, &st);
	FUZZ_CHECK(ret == 0 || ret == -EADDRNOTAVAIL || ret == -ENOMEM, "threads: %d", ret);
	FUZZ_CHECK(st.threads == c.threads, "%lu threads counted, %u given",
		   (unsigned long)st.threads, c.threads);
	/* The runtime, two words an interpreter and a thread state that
	 * does not read, the threads', the code objects' (four frames of
	 * the first four threads). */
	FUZZ_CHECK(st.reads <= 1 + 3ull * FR_PY_INTERPRETERS + (st.threads + 1) * THREAD_READS,
		   "%lu reads for %lu threads", (unsigned long)st.reads, (unsigned long)st.threads);
	FUZZ_CHECK(m.reads <= st.reads + 16ull * CODE_READS, "%lu reads in all",
		   (unsigned long)m.reads);
}

static void fuzz_lines(const uint8_t *data, size_t size)
{
	if (size < 5)
		return;
	uint8_t kind = data[0] & 1 ? FR_PY_LINES_PEP626 : FR_PY_LINES_LOCATIONS;
	int32_t line = fr_py_line(kind, data + 5, size - 5, 1, fr_get_le32(data + 1));

	FUZZ_CHECK(line > 0 || line == -1, "line %d", line);
}

static void check_layout(const struct fr_py_layout *l)
{
	const int32_t whole[] = {l->ts_next,	    l->ts_thread_id,   l->ts_native_id,
				 l->ts_frame,	    l->fr_previous,    l->fr_code,
				 l->fr_instr,	    l->fr_owner,       l->co_name,
				 l->co_qualname,    l->co_filename,    l->co_linetable,
				 l->co_firstlineno, l->str_ascii_size, l->str_compact_size};

	for (size_t i = 0; i < sizeof(whole) / sizeof(whole[0]); i++)
		FUZZ_CHECK(whole[i] < (int32_t)FR_PY_STRUCT_MAX, "field %zu at %d", i, whole[i]);
}

static void fuzz_exe(const uint8_t *data, size_t size)
{
	static int memfd = -1;
	struct fr_python_exe x;
	int ret;

	if (memfd < 0)
		memfd = memfd_create("fuzz-python", MFD_CLOEXEC);
	FUZZ_CHECK(memfd >= 0, "memfd_create");
	FUZZ_CHECK(ftruncate(memfd, 0) == 0 && pwrite(memfd, data, size, 0) == (ssize_t)size,
		   "write the file");
	ret = fr_python_exe_read(memfd, "fuzz", &x);
	FUZZ_CHECK(ret == 0 || ret == -ENOENT || ret == -ENOEXEC || ret == -ENOTSUP ||
			   ret == -ENOMEM || ret == -EIO,
		   "exe: %d", ret);
	FUZZ_CHECK(memchr(x.version, 0, sizeof(x.version)), "version");
	if (ret == 0) {
		FUZZ_CHECK(x.minor >= 10 && x.minor <= 13, "minor %d", x.minor);
		check_layout(&x.layout);
	}
}

static void fuzz_debug(const uint8_t *data, size_t size)
{
	struct fr_py_layout l;
	uint32_t hex = 0;
	int ret = fr_python_debug_offsets(data, size, &l, &hex);

	FUZZ_CHECK(ret == 0 || ret == -ENOENT || ret == -ENOTSUP, "debug offsets: %d", ret);
	if (ret == 0) {
		FUZZ_CHECK((hex >> 16) == 0x030d, "version %#x", hex);
		check_layout(&l);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	switch (data[0]) {
	case 0:
	case 1:
	case 2:
	case 3: fuzz_memory(10 + data[0], data + 1, size - 1); break;
	case 4: fuzz_lines(data + 1, size - 1); break;
	case 5: fuzz_exe(data + 1, size - 1); break;
	case 6: fuzz_debug(data + 1, size - 1); break;
	}
	return 0;
}
