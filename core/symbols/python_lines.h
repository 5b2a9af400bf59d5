/* A CPython code object's line table turned into the line of an
 * instruction: 3.10's (PEP 626) pairs and 3.11+'s location table. Used
 * where a Python frame is read (recorder/tracking/python_read.h) and
 * where it is named from the symbol cache (core/symbols/pycodes.h). The
 * table is another user's bytes: every read is bounded by its length and
 * a hostile delta gives no line, never a crash.
 */
#ifndef FR_CORE_PYTHON_LINES_H
#define FR_CORE_PYTHON_LINES_H

#include <stddef.h>
#include <stdint.h>

#include "core/symbols/python_exe.h"

/* An instruction offset not known (3.10's f_lasti before the first
 * instruction, a pointer outside the code): its line is the first. */
#define FR_PY_NO_OFFSET UINT32_MAX

/* What of a code object is read and kept, at most: its qualified name
 * and file (bytes with the NUL), its line table (longer: not read, the
 * line is then unknown). */
#define FR_PY_NAME_MAX 256
#define FR_PY_FILE_MAX 1024
#define FR_PY_LINETABLE_MAX (256u << 10)

/* The line of the instruction `offset` bytes into the code of line table
 * `tab` (`n` bytes, format `kind`, enum fr_py_linetable, the code's
 * first line `firstline`): the first line for FR_PY_NO_OFFSET, -1 when
 * the table gives none. */
int32_t fr_py_line(uint8_t kind, const uint8_t *tab, size_t n, int32_t firstline, uint32_t offset);

#endif
