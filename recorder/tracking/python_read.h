/* A CPython process's Python stacks, read from its memory while it runs:
 * its threads (the runtime's interpreters, each one's thread states),
 * each thread's frames innermost first as (code object, instruction
 * offset, entry) triples, and a code object's qualified name, file,
 * first line and line table, which turn an offset into a line. The
 * layout comes from the interpreter's ELF object
 * (core/symbols/python_exe.h).
 *
 * This is the model the sample-time reader mirrors: it emits the same
 * triples per sample and leaves the names to a code reader like the one
 * here, whose answers the caller keeps by code object address.
 *
 * Nothing is stopped: the frames change while they are read, and a
 * thread's chain may be read half old, half new; each read is checked
 * and a chain ends where it stops making sense. The memory is another
 * user's: every pointer read is only used through `mem` (which fails on
 * an unmapped address), every count bounded, every walk cycle-safe.
 */
#ifndef FR_RECORDER_PYTHON_READ_H
#define FR_RECORDER_PYTHON_READ_H

#include <stddef.h>
#include <stdint.h>

#include "core/symbols/python_exe.h"
#include "core/symbols/python_lines.h"

#define FR_PY_DEPTH 128
#define FR_PY_THREADS 4096
#define FR_PY_INTERPRETERS 64
/* FR_PY_NAME_MAX, FR_PY_FILE_MAX, FR_PY_LINETABLE_MAX: python_lines.h. */

/* What stands for a name that is not read: a str not in the compact
 * forms or whose characters do not make UTF-8 (a NUL, a lone
 * surrogate), or memory that does not read. */
#define FR_PY_NAME_BADSTR "<bad-str>"
#define FR_PY_NAME_UNREADABLE "<unreadable>"

/* The process's memory: read(arg, addr, buf, n) gives 0, or -errno for
 * memory that cannot be read; readv, when not NULL, reads n ranges at
 * once and returns how many from the first were read whole, or -errno
 * (core/util/vmread.h: fr_proc_vm_readv). */
struct fr_py_mem {
	int (*read)(void *arg, uint64_t addr, void *buf, size_t n);
	int (*readv)(void *arg, size_t n, const uint64_t *addr, const size_t *len, void **buf);
	void *arg;
};

struct fr_py_frame {
	uint64_t code;	 /* the code object's address in the process */
	uint32_t offset; /* bytes into its bytecode; FR_PY_NO_OFFSET */
	uint8_t entry;	 /* it began a C-level call of the eval loop */
};

struct fr_py_thread {
	uint64_t tstate;    /* its PyThreadState's address */
	uint64_t thread_id; /* pthread_t: the thread's fs base on x86-64 glibc */
	uint32_t native_id; /* its kernel thread id (3.11+); 0 */
	uint32_t nframes;
	int cut; /* deeper than FR_PY_DEPTH, or a cycle: the innermost kept */
	struct fr_py_frame frames[FR_PY_DEPTH];
};

struct fr_py_stats {
	uint64_t threads, frames;
	uint64_t reads; /* calls of read and readv */
};

/* The frames of the thread whose PyThreadState is at `tstate`, into *t.
 * Returns 0 or -EFAULT (the thread state does not read). */
int fr_py_thread_read(const struct fr_python_exe *x, uint64_t bias, const struct fr_py_mem *mem,
		      uint64_t tstate, struct fr_py_thread *t, struct fr_py_stats *st);

/* Every Python thread of a process whose interpreter object `x` is
 * loaded `bias` bytes from its link-time addresses, read through `mem`,
 * each given to cb(cbarg, t) (borrowed for the call; a negative return
 * stops the walk and is returned), at most FR_PY_THREADS of them, each
 * thread state once. Returns 0, -EADDRNOTAVAIL (_PyRuntime does not read
 * or lists no interpreter), -ENOMEM, or cb's error. */
int fr_py_threads_read(const struct fr_python_exe *x, uint64_t bias, const struct fr_py_mem *mem,
		       int (*cb)(void *cbarg, const struct fr_py_thread *t), void *cbarg,
		       struct fr_py_stats *st);

struct fr_py_code {
	char qualname[FR_PY_NAME_MAX]; /* co_qualname (3.11+), co_name (3.10) */
	char file[FR_PY_FILE_MAX];
	int32_t firstline;
	uint8_t linetable_kind; /* enum fr_py_linetable */
	uint32_t nlinetable;
	uint8_t *linetable; /* owned; NULL when not read */
};

/* Reads the code object at `code` (a PyCode_Type object when x says
 * where that type is) with a readv of its strings' headers and one of
 * their bodies: ASCII, the UTF-8 copy a str made, else its code points
 * encoded, at most FR_PY_NAME_MAX - 1 or FR_PY_FILE_MAX - 1 bytes of
 * whole characters. Names that do not read are given as the markers
 * above.
 * Returns 0 with *c filled (free with fr_py_code_fini()), -EFAULT (the
 * object does not read), -EBADMSG (not a code object) or -ENOMEM. */
int fr_py_code_read(const struct fr_python_exe *x, uint64_t bias, const struct fr_py_mem *mem,
		    uint64_t code, struct fr_py_code *c);

/* Frees what *c holds; accepts a zeroed one. */
void fr_py_code_fini(struct fr_py_code *c);

/* fr_py_line(): core/symbols/python_lines.h. */

#endif
