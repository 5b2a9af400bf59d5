/* Python frames named from the symbol cache (core/symbols/symbols.h
 * fr_symbols_python()): each process's file of Python names
 * (core/symbols/pycodes.h) read once per struct fr_symbols, with what it
 * failed to read kept too, so a profile with a thousand frames of a
 * process opens its file once or not at all.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/symbols/pycodes.h"
#include "core/symbols/symbols.h"
#include "core/symbols/symbols_int.h"
#include "core/util/grow.h"

/* Bytes of files one struct fr_symbols reads in all: past them, a further
 * process's file is not read (-EFBIG). */
#define PY_MAX_TOTAL (256ull << 20)

struct pyfile {
	uint32_t pid, owner;
	int64_t start_ns;
	struct fr_pycodes *p; /* NULL: err */
	int err;
};

struct symbols_py {
	struct pyfile *v;
	size_t n, cap;
	uint64_t bytes;
};

static int load(struct fr_symbols *s, struct symbols_py *py, struct pyfile *f)
{
	char path[4200];
	struct stat st;
	int fd, ret;

	if (!s->cache_dir || f->start_ns <= 0 ||
	    fr_symcache_python_name(path, sizeof(path), s->cache_dir, f->pid, f->start_ns,
				    f->owner) < 0)
		return -ENOENT;
	/* Opened on the worker, its mtime touched: the recorder evicts the
	 * least recently used first. */
	fd = symbols_timed_open(s, NULL, path, true, &st);
	if (fd < 0)
		return fd;
	if (py->bytes + (uint64_t)st.st_size > PY_MAX_TOTAL) {
		symbols_timed_close(s, fd);
		return -EFBIG;
	}
	py->bytes += (uint64_t)st.st_size;
	ret = fr_pycodes_load(fd, &f->p);
	symbols_timed_close(s, fd);
	return ret;
}

/* The parsed file of (pid, start_ns) for the current owner, read on first
 * use. Returns it, or NULL with *err. */
static const struct fr_pycodes *file_of(struct fr_symbols *s, uint32_t pid, int64_t start_ns,
					int *err)
{
	struct symbols_py *py = s->py;
	struct pyfile *f;

	if (!py && !(py = s->py = calloc(1, sizeof(*py)))) {
		*err = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < py->n; i++) {
		f = &py->v[i];
		if (f->pid == pid && f->start_ns == start_ns && f->owner == s->owner) {
			*err = f->err;
			return f->p;
		}
	}
	if (FR_GROW(py->v, &py->cap, py->n + 1, 16) < 0) {
		*err = -ENOMEM;
		return NULL;
	}
	f = &py->v[py->n++];
	*f = (struct pyfile){.pid = pid, .owner = s->owner, .start_ns = start_ns};
	f->err = load(s, py, f);
	if (f->err < 0)
		f->p = NULL;
	*err = f->err;
	return f->p;
}

int fr_symbols_python(struct fr_symbols *s, uint32_t pid, int64_t start_ns, uint64_t code,
		      uint32_t offset, const char **qualname, const char **file, int32_t *line,
		      int32_t *firstline)
{
	const struct fr_pycodes *p;
	const struct fr_pycode *r;
	int err;

	if (!s || !(p = file_of(s, pid, start_ns, &err)) || !(r = fr_pycodes_find(p, code)))
		return -ENOENT;
	*qualname = r->qualname;
	*file = r->file;
	*firstline = r->firstline;
	*line = fr_py_line(r->kind, r->linetable, r->nlinetable, r->firstline, offset);
	return 0;
}

int fr_symbols_python_status(struct fr_symbols *s, uint32_t pid, int64_t start_ns,
			     const char **version, const char **problem)
{
	const struct fr_pycodes *p;
	int err;

	if (!s || !(p = file_of(s, pid, start_ns, &err)))
		return -ENOENT;
	*version = fr_pycodes_version(p);
	*problem = fr_pycodes_problem(p);
	return 0;
}

void symbols_python_free(struct fr_symbols *s)
{
	struct symbols_py *py = s->py;

	if (!py)
		return;
	for (size_t i = 0; i < py->n; i++)
		fr_pycodes_free(py->v[i].p);
	free(py->v);
	free(py);
	s->py = NULL;
}
