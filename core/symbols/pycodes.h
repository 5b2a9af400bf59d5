/* The symbol cache's Python names of one process: what the recorder read
 * of the CPython code objects its samples ran (recorder/tracking/symcache.h
 * writes the file while the process lives), and what a query names a
 * Python frame (FR_FRAME_PY, core/store/sample.h) with, the process gone
 * or not.
 *
 * A file python-PID-START_NS.codes (root's process) or
 * python-PID-START_NS.uUID.codes (user UID's) in the cache directory,
 * every integer little-endian:
 *
 *   magic      8 bytes "FRPYCOD" and the format's version, 1
 *   u8         length of the CPython version (< FR_PYCODES_VERSION_MAX),
 *              then its bytes: "3.11.2"; empty when not known
 *   u16        length of the problem (< FR_PYCODES_PROBLEM_MAX), then its
 *              bytes: empty when the process's Python frames are read,
 *              else why not ("release 3.9 not supported")
 *   u32        number of records (at most FR_PYCODES_MAX_CODES)
 *   records, each:
 *     u64      the code object's address in the process
 *     i32      its first line
 *     u8       its line table's format (enum fr_py_linetable)
 *     u16      length of its qualified name (< FR_PY_NAME_MAX), bytes
 *     u16      length of its file (< FR_PY_FILE_MAX), bytes
 *     u32      length of its line table (at most FR_PY_LINETABLE_MAX),
 *              bytes
 *
 * Names are UTF-8 without NUL as read (a NUL cuts one short). The file is
 * rewritten whole (a temporary renamed into place) as codes are added; a
 * code object's address appears once (the later read replaces the
 * earlier). The reader trusts nothing: every length is checked against
 * the file and its bound, and a file that does not parse is an error.
 */
#ifndef FR_CORE_PYCODES_H
#define FR_CORE_PYCODES_H

#include <stddef.h>
#include <stdint.h>

#include "core/symbols/python_lines.h"

#define FR_PYCODES_MAGIC "FRPYCOD\001"
#define FR_PYCODES_VERSION_MAX 16
#define FR_PYCODES_PROBLEM_MAX 256
#define FR_PYCODES_MAX_CODES 65536u
/* A file larger than this is not read, nor written. */
#define FR_PYCODES_MAX_SIZE (64ull << 20)

/* One code object's record. */
struct fr_pycode {
	uint64_t code;
	int32_t firstline;
	uint8_t kind; /* enum fr_py_linetable */
	const char *qualname, *file;
	const uint8_t *linetable; /* NULL when none */
	uint32_t nlinetable;
};

/* A parsed file. */
struct fr_pycodes;

/* Encodes a file of `version` and `problem` (NULL: empty; cut to their
 * bounds) and the `n` records `recs` in order, as many of them as fit in
 * `max_bytes` and FR_PYCODES_MAX_CODES (a record's names and line table
 * cut to their bounds), into *out (malloc'd, *len bytes; free it), with
 * in *kept how many records it holds. Returns 0 or -ENOMEM. */
int fr_pycodes_encode(const char *version, const char *problem, const struct fr_pycode *recs,
		      size_t n, uint64_t max_bytes, uint8_t **out, size_t *len, size_t *kept);

/* Parses the `len` bytes of a file at `buf` (copied: the result does not
 * refer to them). Returns 0 with *out (free with fr_pycodes_free()),
 * -EBADMSG (not such a file, or truncated, or a length past its bound)
 * or -ENOMEM. */
int fr_pycodes_parse(const uint8_t *buf, size_t len, struct fr_pycodes **out);

/* Reads and parses the file open at `fd` (at most FR_PYCODES_MAX_SIZE
 * bytes: larger, -EFBIG). Returns 0 with *out, or -errno. */
int fr_pycodes_load(int fd, struct fr_pycodes **out);

/* The version and problem of the file ("" when empty); owned by `p`. */
const char *fr_pycodes_version(const struct fr_pycodes *p);
const char *fr_pycodes_problem(const struct fr_pycodes *p);

/* The records, sorted by code address: how many, and the i-th. */
size_t fr_pycodes_count(const struct fr_pycodes *p);
const struct fr_pycode *fr_pycodes_at(const struct fr_pycodes *p, size_t i);

/* The record of code object `code`, or NULL. Owned by `p`. */
const struct fr_pycode *fr_pycodes_find(const struct fr_pycodes *p, uint64_t code);

/* Frees a parsed file; accepts NULL. */
void fr_pycodes_free(struct fr_pycodes *p);

/* The symbol cache's name of the Python names of process `pid` started
 * at `start_ns` (Unix ns, as chunks record it) of user `owner`, under
 * `dir` (NULL: the name alone), into buf: python-PID-START_NS.codes, with
 * ".u" and the uid before ".codes" unless root's. Returns 0 or
 * -ENAMETOOLONG. */
int fr_symcache_python_name(char *buf, size_t len, const char *dir, uint32_t pid, int64_t start_ns,
			    uint32_t owner);

#endif
