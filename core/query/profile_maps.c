/* The mappings of a profile as pprof readers take them (see
 * core/query/profile.c): which comes first, as readers take the first for
 * the profile's main binary; the names of files that are not files
 * (anonymous memory, memfd), bracketed as pprof's "[vdso]" is so that
 * `go tool pprof` does not try to open them; has_functions on every
 * mapping, as every location is named (an address no symbol covers by
 * its offset in the file), and the line flags only when every location
 * named from the file has lines, so that a reader never names them again
 * from whatever file is at that path on its machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/pprof/pprof.h"
#include "core/query/profile_int.h"

/* Per mapping, the samples whose stack is on it, each counted once. */
static uint64_t *map_weights(const struct builder *b)
{
	uint64_t *w = calloc(b->nmaps + 1, sizeof(*w));
	uint32_t *seen = calloc(b->nmaps + 1, sizeof(*seen));

	if (!w || !seen) {
		free(w);
		free(seen);
		return NULL;
	}
	for (uint32_t i = 0; i < b->nsamples; i++) {
		const struct gsample *s = &b->samples[i];

		for (uint32_t j = 0; j < s->nlocs; j++) {
			uint32_t m = b->locs[b->arena[s->locs + j]].map;

			if (m > KERNEL_MAP && seen[m] != i + 1) {
				seen[m] = i + 1;
				w[m] += s->count;
			}
		}
	}
	free(seen);
	return w;
}

static int by_pid(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* The process with the most samples (0: none), or -1 out of memory. */
static int64_t top_pid(const struct builder *b)
{
	uint64_t(*v)[2] = malloc((b->nsamples + 1) * sizeof(*v));
	uint64_t best = 0, best_n = 0;

	if (!v)
		return -1;
	for (uint32_t i = 0; i < b->nsamples; i++) {
		v[i][0] = b->samples[i].pid;
		v[i][1] = b->samples[i].count;
	}
	qsort(v, b->nsamples, sizeof(*v), by_pid);
	for (uint32_t i = 0, j; i < b->nsamples; i = j) {
		uint64_t n = 0;

		for (j = i; j < b->nsamples && v[j][0] == v[i][0]; j++)
			n += v[j][1];
		if (n > best_n) {
			best = v[i][0];
			best_n = n;
		}
	}
	free(v);
	return (int64_t)best;
}

/* The target program's executable: with --pid, the first pid's, else the
 * executable of the process with the most samples; else the executable
 * most samples ran through, else the mapping most did (a chunk without
 * its process). */
uint32_t profile_main_map(const struct builder *b)
{
	uint64_t *w = map_weights(b);
	int64_t pid = b->req->targets.npids ? b->req->targets.pids[0] : top_pid(b);
	uint32_t of_pid = 0, exe = 0, any = 0;

	if (!w || pid < 0) {
		free(w);
		return 0;
	}
	for (uint32_t i = KERNEL_MAP + 1; i < b->nmaps; i++) {
		const struct gmap *m = &b->maps[i];

		if (m->is_exe && m->pid == (uint64_t)pid && (!of_pid || w[i] > w[of_pid]))
			of_pid = i;
		if (m->is_exe && w[i] && (!exe || w[i] > w[exe]))
			exe = i;
		if (w[i] && !m->python && (!any || w[i] > w[any]))
			any = i;
	}
	free(w);
	return of_pid ? of_pid : exe ? exe : any;
}

/* Whether `path` names no file a reader could open: anonymous memory
 * ("//anon", "[anon:NAME]"), a memfd ("/memfd:NAME (deleted)"), the
 * kernel's pseudo-files ("[vdso]"), or no path at all. */
static bool not_a_file(const char *path)
{
	return path[0] != '/' || strncmp(path, "//anon", 6) == 0 ||
	       strncmp(path, "/memfd:", 7) == 0 || strncmp(path, "/dev/zero", 9) == 0;
}

const char *profile_map_file(const struct gmap *m, char *buf, size_t len)
{
	const char *p = m->path, *del;
	size_t n;

	if (!not_a_file(p) || p[0] == '[')
		return p;
	/* "[anon]", "[memfd:NAME]": what pprof's Mapping.Unsymbolizable()
	 * skips (a file name starting with '['). */
	while (*p == '/')
		p++;
	del = strstr(p, " (deleted)");
	n = del ? (size_t)(del - p) : strlen(p);
	snprintf(buf, len, "[%.*s]", (int)n, p[0] ? p : "anon");
	return buf;
}

int profile_map_flags(const struct gmap *m)
{
	/* Every location is named, from a symbol or by its offset in the
	 * file ("libfoo.so+0x1a2b"): a reader must never name them again from
	 * whatever is at that path on its machine (a FIFO there blocks it). */
	int flags = FR_PPROF_HAS_FUNCTIONS;

	/* Lines and inline frames only when every location named from its
	 * file got them, so a reader trusts them */
	if (m->nlocs && m->nsym == m->nlocs && m->nnamed && m->nlined == m->nnamed)
		flags |= FR_PPROF_HAS_FILENAMES | FR_PPROF_HAS_LINE_NUMBERS |
			 FR_PPROF_HAS_INLINE_FRAMES;
	return flags;
}
