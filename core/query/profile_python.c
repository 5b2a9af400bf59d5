/* Python frames in a profile (see core/query/profile.c): a frame
 * FR_FRAME_PY (core/store/sample.h) stands for a CPython code object at
 * an instruction, in place of the interpreter's native frame that ran it.
 * It lies on no mapping of the process: each process gets a pseudo-
 * mapping "[python]" its Python locations are on (profile_agg.c), and
 * they are named from the symbol cache's Python names of the process
 * (core/symbols/symbols.h fr_symbols_python()): function and system name
 * the qualified name, file the code's file, the line of the instruction
 * and the code's first line. Unnamed: "[python] 0xCODE". The comments
 * say, per CPython process the cache knows, its release and how many of
 * its functions were named, or why its Python frames were not read.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/pprof/pprof.h"
#include "core/query/profile_int.h"
#include "core/store/sample.h"
#include "core/symbols/symbols.h"
#include "core/util/grow.h"

/* Processes the comments name, at most; the rest are counted. */
#define COMMENT_PROCESSES 8

int profile_python_name(struct builder *b, struct fr_symbols *syms, struct gloc *l, struct gmap *m,
			bool lines)
{
	uint64_t code = FR_FRAME_PY_CODE(l->addr);
	const char *name = NULL, *file = NULL;
	int32_t line = -1, first = 0;
	char buf[64];

	m->nlocs++;
	if (syms)
		fr_symbols_set_owner(syms, m->pid_uid);
	l->line0 = b->nlines;
	l->nlines = 1;
	if (!syms ||
	    fr_symbols_python(syms, m->pid, m->pid_start_ns, code, FR_FRAME_PY_OFFSET(l->addr),
			      &name, &file, &line, &first) < 0) {
		snprintf(buf, sizeof(buf), "[python] 0x%" PRIx64, code);
		return profile_add_line(b, buf, buf, "", 0, 0);
	}
	m->nsym++;
	m->nnamed++;
	m->nlined += line > 0;
	return profile_add_line(b, name, name, file, lines && line > 0 ? (uint32_t)line : 0,
				first > 0 ? (uint32_t)first : 0);
}

static int by_process(const void *x, const void *y)
{
	const struct gpython *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
}

int profile_python_note(struct builder *b, uint32_t pid, uint32_t uid, int64_t start_ns)
{
	const struct gpython *last = b->npy ? &b->py[b->npy - 1] : NULL;

	if (start_ns <= 0 || (last && last->pid == pid && last->start_ns == start_ns))
		return 0;
	if (FR_GROW(b->py, &b->py_cap, b->npy + 1, 64) < 0)
		return -ENOMEM;
	b->py[b->npy++] = (struct gpython){.pid = pid, .uid = uid, .start_ns = start_ns};
	return 0;
}

/* The processes noted, each once, sorted. */
static void unique_processes(struct builder *b)
{
	uint32_t n = b->npy;

	if (n)
		qsort(b->py, n, sizeof(*b->py), by_process);
	b->npy = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!b->npy || by_process(&b->py[b->npy - 1], &b->py[i]) != 0)
			b->py[b->npy++] = b->py[i];
}

static int by_code(const void *x, const void *y)
{
	const uint64_t *a = x, *b = y;

	return (*a > *b) - (*a < *b);
}

/* How many code objects of Python mapping `m` the profile names. */
static uint32_t named_codes(const struct builder *b, uint32_t m, uint64_t *codes)
{
	uint32_t n = 0, k = 0;

	for (uint32_t i = 0; i < b->nlocs; i++) {
		const struct gloc *l = &b->locs[i];

		if (l->map == m && l->nlines &&
		    strncmp(b->strs[b->lines[l->line0].name], "[python] 0x", 11) != 0)
			codes[n++] = FR_FRAME_PY_CODE(l->addr);
	}
	qsort(codes, n, sizeof(*codes), by_code);
	for (uint32_t i = 0; i < n; i++)
		k += !i || codes[i] != codes[i - 1];
	return k;
}

/* Counts, per process, the code objects named (after the locations). */
static int count_named(struct builder *b)
{
	uint64_t *codes = malloc((b->nlocs + 1) * sizeof(*codes));

	if (!codes)
		return -ENOMEM;
	for (uint32_t i = KERNEL_MAP + 1; i < b->nmaps; i++) {
		const struct gmap *m = &b->maps[i];
		struct gpython key = {.pid = m->pid, .start_ns = m->pid_start_ns}, *g;

		if (m->python &&
		    (g = bsearch(&key, b->py, b->npy, sizeof(*b->py), by_process)) != NULL)
			g->named += named_codes(b, i, codes);
	}
	free(codes);
	return 0;
}

int profile_python_processes(struct builder *b, struct fr_symbols *syms)
{
	uint32_t k = 0;

	unique_processes(b);
	for (uint32_t i = 0; syms && i < b->npy; i++) {
		const char *version, *problem;
		struct gpython g = b->py[i];
		int64_t v, p;

		fr_symbols_set_owner(syms, g.uid);
		if (fr_symbols_python_status(syms, g.pid, g.start_ns, &version, &problem) < 0)
			continue;
		v = profile_intern_str(b, version);
		p = v < 0 ? v : profile_intern_str(b, problem);
		if (p < 0)
			return -ENOMEM;
		g.version = (uint32_t)v;
		g.problem = (uint32_t)p;
		b->py[k++] = g;
	}
	b->npy = k;
	return count_named(b);
}

void profile_python_comments(const struct builder *b, struct fr_pprof *p)
{
	char line[512];

	for (uint32_t i = 0; p && i < b->npy && i < COMMENT_PROCESSES; i++) {
		const struct gpython *g = &b->py[i];
		const char *version = b->strs[g->version], *problem = b->strs[g->problem];

		if (problem[0])
			snprintf(line, sizeof(line),
				 "python: pid %" PRIu32 "%s%s%s: Python frames not read: %s",
				 g->pid, version[0] ? " (CPython " : "", version,
				 version[0] ? ")" : "", problem);
		else
			snprintf(line, sizeof(line),
				 "python: pid %" PRIu32 " (CPython %s): %" PRIu32
				 " function%s named",
				 g->pid, version[0] ? version : "?", g->named,
				 g->named == 1 ? "" : "s");
		fr_pprof_comment(p, line);
	}
	if (p && b->npy > COMMENT_PROCESSES) {
		snprintf(line, sizeof(line), "python: and %" PRIu32 " more processes",
			 b->npy - COMMENT_PROCESSES);
		fr_pprof_comment(p, line);
	}
}
