/* flightrec threads: the Python stack each thread of a CPython process
 * (3.11 to 3.13) runs now, read from its memory
 * (recorder/requests/threads_python.c), for the answer's "python" label.
 */
#ifndef FR_RECORDER_THREADS_PYTHON_H
#define FR_RECORDER_THREADS_PYTHON_H

#include <stdint.h>

#include "core/util/time.h"

/* Threads of one process given a Python stack, at most. */
#define THREADS_PYTHON_MAX 512
/* How long one process's read may take. */
#define THREADS_PYTHON_NS (2 * FR_NS_PER_S)

struct threads_python {
	int err; /* 0; -ENOENT: not CPython; -ENOTSUP: a release not read */
	char version[16];
	uint32_t n;
	struct {
		uint32_t tid;
		/* "hot_b (app.py:12) < handle (app.py:20) < <module> (app.py:31)" */
		char stack[512];
	} t[THREADS_PYTHON_MAX];
};

/* The Python threads of process `pid` now, on a worker within
 * THREADS_PYTHON_NS. Returns them (free()), or NULL (out of memory, or
 * the deadline passed: the worker goes on alone and frees its work). */
struct threads_python *threads_python_read(uint32_t pid);

#endif
