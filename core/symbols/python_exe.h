/* What reading a CPython process's Python stacks from its memory needs
 * from the object that holds the interpreter
 * (recorder/tracking/python_read.h): the executable of a static build
 * (pyenv's --disable-shared, Debian's /usr/bin/python3.11) or the
 * libpython3.X.so of a shared one, whichever defines `_PyRuntime`.
 *
 * From it: the CPython release (3.10 to 3.13), `_PyRuntime`'s link-time
 * address (the caller adds the load bias from /proc/PID/maps), the code
 * object type's (to tell a code object from garbage) and the layout of
 * the structures walked: the runtime's list of interpreters, each one's
 * list of thread states, each thread's chain of frames, a code object's
 * names, first line and line table, a str's and a bytes' bodies. 3.13
 * describes its own layout in the _Py_DebugOffsets at the start of
 * _PyRuntime (in .data: read from the file); the others from a table
 * per minor release, taken from each release's internal headers.
 *
 * The file is another user's: read with libelf (pread, never a
 * mapping), every offset and length checked against the file.
 */
#ifndef FR_CORE_PYTHON_EXE_H
#define FR_CORE_PYTHON_EXE_H

#include <stddef.h>
#include <stdint.h>

enum fr_py_linetable {
	FR_PY_LINES_PEP626 = 1,	  /* 3.10: (bytes, line delta) pairs */
	FR_PY_LINES_LOCATIONS = 2 /* 3.11+: the location table */
};

/* Where the fields walked are, in bytes from the start of their struct
 * (x86-64, the default build, not free-threaded); -1: not in this
 * release. */
struct fr_py_layout {
	/* _PyRuntimeState */
	int32_t rt_interp_head;
	/* PyInterpreterState */
	int32_t is_next, is_threads_head;
	/* PyThreadState: the innermost frame is at ts_frame (3.10, 3.13),
	 * or at cf_frame of the _PyCFrame ts_cframe points to (3.11, 3.12). */
	int32_t ts_next, ts_thread_id, ts_native_id, ts_frame, ts_cframe, cf_frame;
	/* The frame (3.10 PyFrameObject, 3.11+ _PyInterpreterFrame): fr_instr
	 * is f_lasti (an int counting code units, 3.10), prev_instr (3.11,
	 * 3.12) or instr_ptr (3.13), a pointer into the code's bytecode. */
	int32_t fr_previous, fr_code, fr_instr, fr_is_entry, fr_owner;
	int32_t fr_cstack_owner; /* owner of the C stack's shim frames (3.12+) */
	/* PyCodeObject; co_code_adaptive: where its bytecode starts (3.11+). */
	int32_t co_name, co_qualname, co_filename, co_firstlineno, co_linetable, co_code_adaptive;
	uint8_t linetable; /* enum fr_py_linetable */
	uint8_t instr_is_lasti;
	/* PyASCIIObject's size (an ASCII str's bytes follow it), a
	 * PyCompactUnicodeObject's, and where the latter keeps its UTF-8
	 * copy; str_length and str_state: the length and state bits. */
	int32_t str_length, str_state, str_ascii_size, str_compact_size, str_utf8_len, str_utf8;
	int32_t bytes_size, bytes_data; /* PyBytesObject's ob_size, ob_sval */
};

/* The most bytes of a thread state, a frame, a code object or a str's
 * header the fields walked lie in. */
#define FR_PY_STRUCT_MAX 4096u

/* The layout of CPython 3.minor from the table. Returns 0 or -ENOTSUP. */
int fr_python_layout_table(int minor, struct fr_py_layout *out);

/* Bytes of a _Py_DebugOffsets read (3.13: up to unicode_object's). */
#define FR_PY_DEBUG_OFFSETS_LEN 568u

/* The layout from the `n` bytes of a _Py_DebugOffsets at `buf` (the
 * start of _PyRuntime in 3.13): its cookie "xdebugpy", a 3.13 version
 * and not free-threaded (the only arrangement of the struct known), every
 * offset used within its struct's bounds (FR_PY_STRUCT_MAX, but for the
 * runtime's and the interpreter's). Fills *out (from the 3.13 table for
 * what the struct does not say) and *hexversion. Returns 0, -ENOENT
 * (no cookie) or -ENOTSUP (another version, or offsets out of bounds). */
int fr_python_debug_offsets(const uint8_t *buf, size_t n, struct fr_py_layout *out,
			    uint32_t *hexversion);

struct fr_python_exe {
	char version[16];    /* "3.11.7"; "3.10" when only the minor is known */
	int minor;	     /* 10..13 */
	uint32_t hexversion; /* PY_VERSION_HEX; 0: not known */
	uint64_t runtime;    /* _PyRuntime, link-time */
	uint64_t code_type;  /* PyCode_Type, link-time; 0: not known */
	int pie;	     /* position-independent: addresses move by the load bias */
	int layout_from_debug_offsets;
	/* _PyEval_EvalFrameDefault's [start, end), link-time, and its .cold
	 * part's when the file's .symtab names it; 0s: not known. A native
	 * frame in them is the eval loop running Python frames. */
	uint64_t eval[2][2];
	struct fr_py_layout layout;
};

/* Reads what is above from the ELF file open at `fd` (a regular file, at
 * most FR_ELF_MAX_SIZE bytes); `name`, its path or file name (may be
 * NULL), is the last resort for the version ("python3.10",
 * "libpython3.10.so.1.0"). Returns 0, -ENOENT (no _PyRuntime: not the
 * interpreter's object), -ENOEXEC (not an x86-64 ELF file), -ENOTSUP (a
 * release not supported, or none found: out->version says which when
 * known) or a read's -errno. */
int fr_python_exe_read(int fd, const char *name, struct fr_python_exe *out);

/* The minor release of "3.N" at the start of s (N of one or two
 * digits), or -1. */
int fr_python_minor(const char *s);

#endif
