/* flightrec threads: the Python stack each thread of a CPython process is
 * running now (recorder/requests/threads_python.h), read from the
 * process's memory without stopping it (recorder/tracking/python_read.h):
 * its interpreter object (libpython, else the executable) opened as the
 * process maps it, the threads' frames walked, each code object named
 * once per answer. Only a process whose executable is named python* or
 * which maps a libpython3 is looked into.
 *
 * On a worker thread of its own within THREADS_PYTHON_NS: the object is
 * opened, and the memory read, both of which another user's process can
 * make wait (a FUSE mount). A thread is matched to its kernel thread by
 * the id CPython keeps from 3.11 on (native_thread_id); a 3.10 process's
 * threads are not matched, and get nothing.
 */
#include "recorder/requests/threads_python.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/vmread.h"
#include "core/util/worker.h"
#include "recorder/tracking/python_proc.h"
#include "recorder/tracking/python_read.h"

/* Code objects named per process, at most. */
#define CODES_MAX 512
/* Frames written in a thread's line, at most. */
#define FRAMES_SHOWN 24

struct code {
	uint64_t addr;
	struct fr_py_code c;
	int ok;
};

struct job {
	uint32_t pid;
	struct fr_python_exe x;
	uint64_t bias;
	struct fr_py_mem mem;
	struct code *codes;
	size_t ncodes;
	struct threads_python *out; /* filled */
};

static int vread(void *arg, uint64_t addr, void *buf, size_t n)
{
	return fr_proc_vm_read(*(uint32_t *)arg, addr, buf, n);
}

static int vreadv(void *arg, size_t n, const uint64_t *addr, const size_t *len, void **buf)
{
	return fr_proc_vm_readv(*(uint32_t *)arg, n, addr, len, buf);
}

static const struct code *name_code(struct job *j, uint64_t addr)
{
	struct code *c;

	for (size_t i = 0; i < j->ncodes; i++)
		if (j->codes[i].addr == addr)
			return &j->codes[i];
	if (j->ncodes == CODES_MAX)
		return NULL;
	c = &j->codes[j->ncodes++];
	c->addr = addr;
	c->ok = fr_py_code_read(&j->x, j->bias, &j->mem, addr, &c->c) == 0;
	return c;
}

/* "qualname (file:line)" of each frame, innermost first, " < " between. */
static void describe(struct job *j, const struct fr_py_thread *t, char *out, size_t len)
{
	size_t at = 0;

	out[0] = '\0';
	for (uint32_t i = 0; i < t->nframes && at + 1 < len; i++) {
		const struct code *c = name_code(j, t->frames[i].code);
		const char *file = c && c->ok ? strrchr(c->c.file, '/') : NULL;
		int32_t line = c && c->ok && t->frames[i].offset != FR_PY_NO_OFFSET
				       ? fr_py_line(c->c.linetable_kind, c->c.linetable,
						    c->c.nlinetable, c->c.firstline,
						    t->frames[i].offset)
				       : -1;
		int n;

		if (i == FRAMES_SHOWN) {
			n = snprintf(out + at, len - at, " < ...");
			at += n > 0 ? (size_t)n : 0;
			break;
		}
		file = file ? file + 1 : c && c->ok ? c->c.file : "?";
		n = snprintf(out + at, len - at, "%s%s (%s:%d)", i ? " < " : "",
			     c && c->ok ? c->c.qualname : "?", file, line > 0 ? line : 0);
		at += n > 0 ? (size_t)n : 0;
	}
	if (t->cut && at + 1 < len)
		snprintf(out + at, len - at, " < ...");
}

static int each_thread(void *arg, const struct fr_py_thread *t)
{
	struct job *j = arg;
	struct threads_python *o = j->out;

	if (!t->native_id || !t->nframes || o->n == THREADS_PYTHON_MAX)
		return 0;
	o->t[o->n].tid = t->native_id;
	describe(j, t, o->t[o->n].stack, sizeof(o->t[o->n].stack));
	o->n++;
	return 0;
}

static void run(void *arg)
{
	struct job *j = arg;
	struct fr_py_stats st;

	j->mem = (struct fr_py_mem){vread, vreadv, &j->pid};
	j->out->err = fr_python_proc_find(j->pid, &j->x, &j->bias, NULL, 0);
	if (j->out->err == 0)
		j->out->err = fr_py_threads_read(&j->x, j->bias, &j->mem, each_thread, j, &st);
	snprintf(j->out->version, sizeof(j->out->version), "%s", j->x.version);
}

static void job_free(struct job *j)
{
	for (size_t i = 0; i < j->ncodes; i++)
		fr_py_code_fini(&j->codes[i].c);
	free(j->codes);
	free(j->out);
	free(j);
}

static void drop(void *arg)
{
	job_free(arg);
}

struct threads_python *threads_python_read(uint32_t pid)
{
	struct job *j = calloc(1, sizeof(*j));
	struct fr_worker *w = NULL;
	struct threads_python *out;
	int ret;

	if (!j || !(j->codes = calloc(CODES_MAX, sizeof(*j->codes))) ||
	    !(j->out = calloc(1, sizeof(*j->out)))) {
		if (j)
			free(j->codes);
		free(j);
		return NULL;
	}
	j->pid = pid;
	ret = fr_worker_call(&w, run, drop, j, THREADS_PYTHON_NS);
	fr_worker_free(w);
	if (ret == -ETIMEDOUT)
		return NULL; /* the worker's now */
	out = j->out;
	j->out = NULL;
	if (ret < 0)
		out->err = ret;
	job_free(j);
	return out;
}
