/* Which object of a running process holds its CPython interpreter, and
 * where it is loaded: what reading its Python stacks and code objects
 * (recorder/tracking/python_read.h) starts from.
 */
#ifndef FR_RECORDER_PYTHON_PROC_H
#define FR_RECORDER_PYTHON_PROC_H

#include <stddef.h>
#include <stdint.h>

#include "core/symbols/python_exe.h"

/* Finds the interpreter object of process `pid`: a mapped libpython3.*,
 * else its executable when named python* (no other program's symbols are
 * read for nothing), opened as the process maps it
 * (fr_proc_open_mapped()) and read with fr_python_exe_read() into *x,
 * with its load bias in *bias (where its offset-0 mapping starts, for a
 * position-independent object; 0 otherwise) and its path into `path`
 * (`pathlen` bytes; "" when no candidate was mapped). May wait on the
 * process's files: callers that must not wait call it on a worker.
 * Returns 0, -ENOENT (not a CPython process: no candidate, or one
 * without _PyRuntime, or not an x86-64 ELF object), -ENOTSUP (a release
 * not supported; x->version says which when known) or -errno (the
 * process is gone: -ENOENT too). */
int fr_python_proc_find(uint32_t pid, struct fr_python_exe *x, uint64_t *bias, char *path,
			size_t pathlen);

#endif
