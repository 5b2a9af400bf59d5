/* Writing the aggregate of a window (see core/query/profile.c): naming its
 * locations, the pprof emitter with the comments that say how the profile
 * was sampled, and the folded-stacks emitter.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/util/parse.h"
#include "core/symbols/demangle.h"
#include "core/symbols/dwarf_lines.h"
#include "core/pprof/pprof.h"
#include "core/query/profile_int.h"
#include "core/query/profile_value.h"
#include "core/store/sample.h"
#include "core/symbols/symbols.h"
#include "core/util/grow.h"
#include "core/util/time.h"

/* Adds a comment line to the pprof profile; folded output has none. */
static void comment(struct fr_pprof *p, const char *line)
{
	if (p)
		fr_pprof_comment(p, line);
}

/* Whether `pid` sees the file system as this process does: the same
 * mount namespace and "/" as its root. Its files are then looked up by
 * their paths alone, so the symbolizer opens each once however many
 * processes map it; a process that is gone counts as such too (its
 * /proc/PID/root would not resolve). Only procfs links are read. */
static bool same_root(uint32_t pid, const char *self_ns)
{
	char path[64], link[64];
	ssize_t n;

	if (!self_ns[0])
		return false;
	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return errno == ENOENT;
	if (n != 1 || link[0] != '/')
		return false;
	snprintf(path, sizeof(path), "/proc/%u/ns/mnt", pid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return errno == ENOENT;
	link[n] = '\0';
	return strcmp(link, self_ns) == 0;
}

/* Time one profile may spend reading source lines; past it, locations
 * keep their function names alone (as symbols.c bounds file reading). */
#define LINES_BUDGET_NS (2 * FR_NS_PER_S)

int profile_add_line(struct builder *b, const char *name, const char *sys, const char *file,
		     uint32_t line, uint32_t start_line)
{
	int64_t n = profile_intern_str(b, name);
	int64_t y = n < 0 ? n : profile_intern_str(b, sys);
	int64_t f = y < 0 ? y : profile_intern_str(b, file ? file : "");

	if (f < 0)
		return -ENOMEM;
	if (FR_GROW(b->lines, &b->lines_cap, b->nlines + 1, 256) < 0)
		return -ENOMEM;
	b->lines[b->nlines++] =
		(struct gline){(uint32_t)n, (uint32_t)y, (uint32_t)f, line, start_line};
	return 0;
}

/* Gives user location `l`, named `name` from a symbol of the mapping's
 * file `m`, the lines its DWARF has for link-time address `elf_addr`:
 * inlined functions innermost first, then `name` at its line. Charges the
 * time to *spent_ns and does nothing once it passes LINES_BUDGET_NS.
 * Returns 0 (also without lines) or -ENOMEM. */
static int user_lines(struct builder *b, struct fr_dwarf_lines *dw, struct gloc *l, struct gmap *m,
		      uint64_t elf_addr, const char *name, const char *sysname, int64_t *spent_ns)
{
	struct fr_dwarf_frame fr[FR_DWARF_MAX_FRAMES];
	int64_t t0;
	int n;

	m->nnamed++;
	if (!dw || *spent_ns >= LINES_BUDGET_NS)
		return 0;
	t0 = fr_clock_ns(CLOCK_MONOTONIC);
	n = fr_dwarf_lines_lookup(dw, elf_addr, fr, FR_DWARF_MAX_FRAMES);
	*spent_ns += fr_clock_ns(CLOCK_MONOTONIC) - t0;
	if (n == -ENOENT) {
		/* The file's DWARF says nothing of this address (_start, from
		 * an object built without -g): that is all there is to know,
		 * so it does not make the mapping's lines incomplete. Whole
		 * user stacks reach such frames. */
		m->nnamed--;
		return 0;
	}
	if (n <= 0 || !fr[0].file || !fr[0].line)
		return 0;
	l->line0 = b->nlines;
	for (int i = 0; i < n; i++) {
		/* The outermost frame is the symbol's function, named as
		 * everywhere else; an inlined one by its DWARF name. */
		const char *fn = i == n - 1 || !fr[i].function ? name : fr[i].function;
		const char *sys = i == n - 1 || !fr[i].function ? sysname : fn;
		const char *file = fr[i].file ? fr[i].file : m->path;

		if (profile_add_line(b, fn, sys, file, (uint32_t)fr[i].line, 0) < 0)
			return -ENOMEM;
	}
	l->nlines = (uint32_t)n;
	m->nlined++;
	return 0;
}

/* The recorder's own eBPF programs (recorder/bpf/) and their functions
 * the kernel names apart (BPF-to-BPF calls, task work and loop
 * callbacks), with what they do on the thread whose stack they are on. */
static const struct {
	const char *name, *what;
} own_bpf[] = {
	{"tw_user_stack", "copying its user stack after a wait (offcpu)"},
	{"emit_long", "recording an off-CPU wait"},
	{"emit_copy", "recording an off-CPU wait"},
	{"emit_short", "recording an off-CPU wait"},
	{"emit_labels", "recording an off-CPU wait"},
	{"emit_python", "recording an off-CPU wait"},
	{"fill_head", "recording an off-CPU wait"},
	{"count_drop", "recording an off-CPU wait"},
	{"on_sys_exit", "recording an off-CPU wait"},
	{"on_switch", "timing a context switch (offcpu)"},
	{"on_switch_tw", "timing a context switch (offcpu)"},
	{"on_switch_empty", "timing a context switch (offcpu)"},
	{"list_open", "listing blocked threads (offcpu)"},
	{"fr_py_find_step", "reading Python frames"},
	{"fr_py_walk_step", "reading Python frames"},
	{"on_sample", "reading labels"},
	{"on_exec", "black box: exec"},
	{"on_exit", "a process or thread exiting (black box, offcpu)"},
	{"on_signal", "black box: crash"},
};

int fr_profile_own_bpf(const char *ksym, char *buf, size_t len)
{
	const char *p = ksym;

	/* "bpf_prog_" TAG (16 hex digits) "_" NAME, as kallsyms lists a
	 * program's functions */
	if (strncmp(p, "bpf_prog_", 9) != 0)
		return 0;
	p += 9;
	for (int i = 0; i < 16; i++, p++)
		if (!isxdigit((unsigned char)*p))
			return 0;
	if (*p++ != '_')
		return 0;
	for (size_t i = 0; i < sizeof(own_bpf) / sizeof(own_bpf[0]); i++)
		if (strcmp(p, own_bpf[i].name) == 0) {
			snprintf(buf, len, "[flightrec: %s]", own_bpf[i].what);
			return 1;
		}
	return 0;
}

/* The name of kernel location l into buf: the plain name, so that regexes
 * and -focus match a kernel function as they match a user one (pprof tells
 * kernel frames apart by their mapping, folded stacks by the suffix
 * flame-graph tools know: profile_emit_folded()); a function of the
 * recorder's own eBPF programs says so (fr_profile_own_bpf()), its
 * kallsyms name in `sys`. An address kallsyms does not name is named by
 * itself, as perf shows it ("0xffffffff81a2b3c4"), or "[unknown]" in a
 * profile limited to a uid, which hides kernel addresses. */
static void kernel_name(struct builder *b, struct fr_symbols *syms, const struct gloc *l, char *buf,
			size_t len, char *sys, size_t syslen)
{
	const char *name = NULL;

	b->maps[KERNEL_MAP].has_functions = 1;
	if (syms && fr_symbols_kernel(syms, l->addr, &name) == 0) {
		if (fr_profile_own_bpf(name, buf, len))
			snprintf(sys, syslen, "%s", name);
		else
			snprintf(buf, len, "%s", name);
	} else if (b->req->targets.has_uid) {
		snprintf(buf, len, "[unknown]");
	} else {
		snprintf(buf, len, "0x%" PRIx64, l->addr);
	}
}

/* Names user location `l` on mapping `m` (seen by process m->pid through
 * `root`, or as this process sees files when `root` is NULL) into `buf`,
 * and `sys` when demangled; with `lines` also its DWARF lines, added to
 * b->lines (then l->nlines is set). Returns 0 or -ENOMEM. */
static int user_name(struct builder *b, struct fr_symbols *syms, struct gloc *l, struct gmap *m,
		     const char *root, bool lines, int64_t *lines_ns, char *buf, size_t len,
		     char *sys, size_t syslen)
{
	const char *name = NULL;
	uint64_t elf_addr = 0;

	m->nlocs++;
	sys[0] = '\0';
	if (syms)
		fr_symbols_set_owner(syms, m->pid_uid);
	if (!syms ||
	    (fr_symbols_user(syms, root, m->path, m->bid, m->bid_len, m->start, m->pgoff, l->addr,
			     &name, &elf_addr) != 0 &&
	     fr_symbols_jit(syms, m->pid, m->pid_start_ns, !root, m->path, l->addr, &name) != 0)) {
		const char *base = strrchr(m->path, '/');

		snprintf(buf, len, "%s+0x%" PRIx64, base ? base + 1 : m->path,
			 l->addr - m->start + m->pgoff);
		return 0;
	}
	/* People read the demangled name; pprof keeps the symbol as
	 * system_name */
	if (fr_demangle(name, buf, len))
		snprintf(sys, syslen, "%s", name);
	else
		snprintf(buf, len, "%s", name);
	m->nsym++;
	if (!lines)
		return 0;
	return user_lines(b, fr_symbols_user_dwarf(syms, root, m->path, m->bid, m->bid_len), l, m,
			  elf_addr, buf, sys[0] ? sys : buf, lines_ns);
}

/* The name of a location on no mapping into buf. */
static void other_name(const struct gloc *l, char *buf, size_t len)
{
	if (FR_FRAME_IS_MARK(l->addr))
		/* Where the recorder's unwinding stopped, and why. */
		snprintf(buf, len, "[truncated: %s]",
			 fr_frame_mark_name(FR_FRAME_MARK_REASON(l->addr)));
	else if (FR_FRAME_IS_NOTE(l->addr))
		snprintf(buf, len, "%s", fr_frame_note_name(FR_FRAME_NOTE_OF(l->addr)));
	else
		snprintf(buf, len, "[unknown] 0x%" PRIx64, l->addr);
}

/* The file name and build id pprof gets for each mapping, interned. */
static int name_maps(struct builder *b)
{
	for (uint32_t i = KERNEL_MAP; i < b->nmaps; i++) {
		struct gmap *m = &b->maps[i];
		char bid[2 * FR_BUILD_ID_MAX + 1] = "", file[256];
		int64_t f = profile_intern_str(b, i == KERNEL_MAP ? FR_PROFILE_KERNEL_MAPPING
								  : profile_map_file(m, file,
										     sizeof(file)));
		int64_t h = f < 0 ? f
				  : profile_intern_str(b, m->bid_len
								  ? fr_build_id_hex(m->bid,
										    m->bid_len, bid)
								  : "");

		if (h < 0)
			return -ENOMEM;
		m->file_name = (uint32_t)f;
		m->bid_hex = (uint32_t)h;
	}
	return 0;
}

int profile_symbolize(struct builder *b, const char *kallsyms)
{
	struct fr_symbols *syms = fr_symbols_new(kallsyms);
	char buf[4200], sysbuf[FR_DEMANGLE_MAX_IN + 1], root[64];
	uint32_t root_pid = UINT32_MAX;
	bool root_same = false, lines = b->req->format == FR_PROFILE_PPROF;
	char self_ns[64] = "";
	ssize_t n = readlink("/proc/self/ns/mnt", self_ns, sizeof(self_ns) - 1);
	int64_t lines_ns = 0;
	int ret = 0;

	self_ns[n > 0 ? n : 0] = '\0';
	/* For a user limited to their own processes, only a file whose build
	 * id matches the mapping's names it: the path could lead, in the
	 * user's mount namespace or since, to a file only root may read. */
	if (syms && b->req->targets.has_uid)
		fr_symbols_require_build_id(syms);
	if (syms && fr_symbols_set_paths(syms, b->req->symbol_cache, b->req->debug_dirs,
					 b->req->ndebug_dirs) < 0) {
		fr_symbols_free(syms);
		return -ENOMEM;
	}
	for (uint32_t i = 0; ret == 0 && i < b->nlocs; i++) {
		struct gloc *l = &b->locs[i];
		const char *file = NULL;

		sysbuf[0] = '\0';
		if (l->map == KERNEL_MAP) {
			file = FR_PROFILE_KERNEL_MAPPING;
			kernel_name(b, syms, l, buf, sizeof(buf), sysbuf, sizeof(sysbuf));
		} else if (l->map && b->maps[l->map].python) {
			ret = profile_python_name(b, syms, l, &b->maps[l->map], lines);
			continue;
		} else if (l->map) {
			struct gmap *m = &b->maps[l->map];

			file = m->path;
			if (m->pid != root_pid) {
				root_pid = m->pid;
				root_same = same_root(m->pid, self_ns);
				snprintf(root, sizeof(root), "/proc/%u/root", m->pid);
			}
			ret = user_name(b, syms, l, m, root_same ? NULL : root, lines, &lines_ns,
					buf, sizeof(buf), sysbuf, sizeof(sysbuf));
			if (ret < 0 || l->nlines)
				continue;
		} else {
			other_name(l, buf, sizeof(buf));
		}
		l->line0 = b->nlines;
		ret = profile_add_line(b, buf, sysbuf[0] ? sysbuf : buf, file, 0, 0);
		l->nlines = ret == 0;
	}
	if (ret == 0)
		ret = profile_python_processes(b, syms);
	fr_symbols_free(syms);
	return ret < 0 ? ret : name_maps(b);
}

/* Adds mapping i to the profile. */
static void emit_map(struct builder *b, struct fr_pprof *p, uint32_t i)
{
	struct gmap *m = &b->maps[i];

	m->pprof_id = fr_pprof_mapping(p, m->start, m->end, m->pgoff, b->strs[m->file_name],
				       m->bid_len ? b->strs[m->bid_hex] : NULL,
				       profile_map_flags(m));
}

/* The source file pprof gets for line j of location l: none when the
 * line has no source file, only the mapped file (a function named from a
 * symbol alone) or the kernel's pseudo-file: `go tool pprof -list` opens
 * a Function's filename as source, and the mapped file is a binary at a
 * path that may be anything on the reader's machine. */
static const char *source_file(const struct builder *b, const struct gloc *l, uint32_t j)
{
	const char *file = b->strs[b->lines[j].file];

	if (l->map == KERNEL_MAP || (l->map && !b->maps[l->map].python && !b->lines[j].line &&
				     strcmp(file, b->maps[l->map].path) == 0))
		return NULL;
	return file;
}

/* The functions of every location, in the order of the locations, into
 * the profile: their ids by line, in *ids (NULL when out of memory). */
static uint64_t *emit_functions(const struct builder *b, struct fr_pprof *p)
{
	uint64_t *ids = malloc(b->nlines ? b->nlines * sizeof(*ids) : 1);

	for (uint32_t i = 0; ids && i < b->nlocs; i++) {
		const struct gloc *l = &b->locs[i];

		for (uint32_t j = l->line0; j < l->line0 + l->nlines; j++)
			ids[j] = fr_pprof_function_at(p, b->strs[b->lines[j].name],
						      b->strs[b->lines[j].sys],
						      source_file(b, l, j), b->lines[j].start_line);
	}
	return ids;
}

/* Location `l` into the profile, its functions' ids by line in fids. */
static uint64_t emit_location(const struct fr_profile *prof, struct fr_pprof *p,
			      const struct gloc *l, const uint64_t *fids)
{
	const struct builder *b = &prof->b;
	struct fr_pprof_line lines[FR_DWARF_MAX_FRAMES];
	uint64_t addr = l->map == KERNEL_MAP && prof->req.targets.has_uid ? 0 : l->addr;
	uint64_t map_id = l->map ? b->maps[l->map].pprof_id : 0;
	uint32_t n = l->nlines < FR_DWARF_MAX_FRAMES ? l->nlines : FR_DWARF_MAX_FRAMES;

	for (uint32_t j = 0; j < n; j++)
		lines[j] = (struct fr_pprof_line){fids[l->line0 + j], b->lines[l->line0 + j].line};
	return fr_pprof_location_lines(p, map_id, addr, lines, n);
}

/* Sample row `i` into the profile, its locations' ids in ids. */
static void emit_sample(const struct fr_profile *prof, struct fr_pprof *p, uint32_t i,
			const uint64_t *ids)
{
	struct fr_profile_sample s;
	struct fr_pprof_label labels[FR_PROFILE_MAX_LABELS];
	uint64_t locs[FR_MAX_FRAMES];
	int64_t values[PROFILE_MAX_COLUMNS];
	struct pcolumn cols[PROFILE_MAX_COLUMNS];
	uint32_t nlocs, ncols = profile_columns(&prof->b, cols);

	fr_profile_sample(prof, i, &s);
	for (size_t k = 0; k < s.nlabels; k++)
		labels[k] =
			(struct fr_pprof_label){s.labels[k].key, s.labels[k].str, s.labels[k].num};
	for (uint32_t k = 0; k < ncols; k++)
		values[k] = cols[k].e < 0      ? (int64_t)s.count
			    : cols[k].mem >= 0 ? s.mem[cols[k].mem]
					       : s.values[cols[k].e];
	nlocs = s.nlocs < FR_MAX_FRAMES ? s.nlocs : FR_MAX_FRAMES;
	for (uint32_t j = 0; j < nlocs; j++)
		locs[j] = ids[s.locs[j]];
	fr_pprof_sample(p, locs, s.nlocs, values, ncols, labels, s.nlabels);
}

void profile_emit(struct fr_profile *prof, struct fr_pprof *p)
{
	struct builder *b = &prof->b;
	uint64_t *ids = NULL, *fids = emit_functions(b, p);
	uint32_t main_map = profile_main_map(b);

	/* First: readers take the first mapping for the profile's main
	 * binary */
	if (main_map)
		emit_map(b, p, main_map);
	/* An executable no location is on is there only to be the main one */
	for (uint32_t i = 2; i < b->nmaps; i++)
		if (i != main_map && b->maps[i].nlocs)
			emit_map(b, p, i);
	/* Last, never the main binary */
	if (prof->kernel)
		b->maps[KERNEL_MAP].pprof_id = fr_pprof_mapping(p, prof->kmin, prof->kmax + 1, 0,
								FR_PROFILE_KERNEL_MAPPING, NULL,
								b->maps[KERNEL_MAP].has_functions);
	ids = fids ? malloc(b->nlocs ? b->nlocs * sizeof(*ids) : 1) : NULL;
	for (uint32_t i = 0; ids && i < b->nlocs; i++)
		ids[i] = emit_location(prof, p, &b->locs[i], fids);
	for (uint32_t i = 0; ids && i < b->nsamples; i++)
		emit_sample(prof, p, i, ids);
	free(ids);
	free(fids);
}

struct folded_line {
	char *text;
	uint64_t count;
};

static int cmp_folded(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

/* Appends frame name `s` at `out`, keeping ';' and newlines out of it;
 * returns the end. */
static char *put_frame(char *out, const char *s)
{
	for (; *s; s++)
		*out++ = *s == ';' || *s == '\n' ? '_' : *s;
	return out;
}

/* The name of each location in folded stacks, as indexes into strs: a
 * kernel one with the suffix flame-graph tools know, its address when
 * kallsyms does not name it (none in a profile limited to a uid); any
 * other the function a symbol names. NULL when out of memory. */
static uint32_t *folded_names(struct builder *b)
{
	uint32_t *names = calloc(b->nlocs ? b->nlocs : 1, sizeof(*names));
	char buf[4200];

	for (uint32_t i = 0; names && i < b->nlocs; i++) {
		const struct gloc *l = &b->locs[i];
		const char *name = l->nlines ? b->strs[b->lines[l->line0 + l->nlines - 1].name]
					     : "";
		int64_t idx;

		if (l->map != KERNEL_MAP) {
			idx = l->nlines ? b->lines[l->line0 + l->nlines - 1].name
					: profile_intern_str(b, "");
		} else {
			if (l->nlines)
				snprintf(buf, sizeof(buf), "%s" FR_PROFILE_KERNEL_SUFFIX, name);
			else if (b->req->targets.has_uid)
				snprintf(buf, sizeof(buf), "[unknown]" FR_PROFILE_KERNEL_SUFFIX);
			else
				snprintf(buf, sizeof(buf), "0x%" PRIx64 FR_PROFILE_KERNEL_SUFFIX,
					 l->addr);
			idx = profile_intern_str(b, buf);
		}
		if (idx < 0) {
			free(names);
			return NULL;
		}
		names[i] = (uint32_t)idx;
	}
	return names;
}

/* Writes the aggregate as folded stacks (see core/query/profile.h): the count of
 * a line is the kept samples of the first event, so rows with none of it
 * are left out. Samples that differ only in pid, tid, cpu or cgroup fold
 * into one line, so lines are sorted and equal neighbours merged.
 * Returns 0, -ENOMEM, or the sink's -errno. */
int profile_emit_folded(struct builder *b, fr_write_fn sink, void *arg, uint64_t *nlines)
{
	struct folded_line *v = calloc(b->nsamples ? b->nsamples : 1, sizeof(*v));
	uint32_t *names = folded_names(b);
	uint32_t n = 0;
	int ret = 0;

	if (!v || !names) {
		free(v);
		free(names);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < b->nsamples; i++) {
		const struct gsample *s = &b->samples[i];
		const char *comm = b->strs[s->comm][0] ? b->strs[s->comm] : "[unknown]";
		uint64_t count = b->cells[(size_t)i * b->nev].n;
		size_t len = strlen(comm) + 1;
		char *t;

		/* A memory event's lines count its bytes (growth only, in a
		 * diff). */
		if (profile_mem_col(b, 0) >= 0) {
			int64_t bytes = profile_mem_value(b, i, profile_mem_col(b, 0));

			count = bytes > 0 ? (uint64_t)bytes : 0;
		}
		if (!count)
			continue;
		for (uint32_t j = 0; j < s->nlocs; j++)
			len += 1 + strlen(b->strs[names[b->arena[s->locs + j]]]);
		t = v[n].text = malloc(len);
		if (!t) {
			ret = -ENOMEM;
			goto out;
		}
		v[n++].count = count;
		t = put_frame(t, comm);
		/* The arena holds the leaf first, kernel frames before user ones:
		 * reversed, it is root first with the kernel frames as leaves. */
		for (uint32_t j = s->nlocs; j-- > 0;) {
			*t++ = ';';
			t = put_frame(t, b->strs[names[b->arena[s->locs + j]]]);
		}
		*t = '\0';
	}
	qsort(v, n, sizeof(*v), cmp_folded);
	for (uint32_t i = 0; i < n && ret == 0;) {
		uint64_t count = 0;
		uint32_t j = i;
		char num[32];
		int len;

		for (; j < n && strcmp(v[j].text, v[i].text) == 0; j++)
			count += v[j].count;
		len = snprintf(num, sizeof(num), " %" PRIu64 "\n", count);
		ret = sink(arg, v[i].text, strlen(v[i].text));
		if (ret == 0)
			ret = sink(arg, num, (size_t)len);
		(*nlines)++;
		i = j;
	}
out:
	for (uint32_t i = 0; i < n; i++)
		free(v[i].text);
	free(v);
	free(names);
	return ret;
}

/* period and its type are those of the first event. What one kept sample
 * of it stands for:
 *   cpu:     1e9/hz nanoseconds, exactly (each kept sample counts that).
 *   offcpu:  1: its values are nanoseconds measured at each switch, not
 *            counts of a sampled event, so there is no sampling period.
 *   others:  frequency mode, where the kernel varies the period to hold
 *            the rate, so there is no fixed one: the mean value per kept
 *            sample (the column's total over its kept samples, rounded),
 *            which is what a sample stands for on average; 0 when none
 *            was kept. In period mode (cpu's too: no target) the same
 *            mean is the period itself. */
int64_t profile_period(const struct builder *b)
{
	const struct gevent *g = &b->ev[0];
	uint64_t total = 0, n = g->res->samples_kept;

	if (g->id == FR_EVENT_CPU && g->target)
		return FR_NS_PER_S / g->target;
	if (profile_mem_col(b, 0) >= 0)
		return profile_mem_period(b);
	if (!fr_event_has_rate(g->id))
		return 1;
	if (!n)
		return 0;
	for (uint32_t i = 0; i < b->nsamples; i++)
		total += b->cells[(size_t)i * b->nev].v;
	return (int64_t)((total + n / 2) / n);
}

/* Comments on how each event was sampled, and the warning if the request
 * asked for more than the window holds. */
static void rate_comments(struct builder *b, struct fr_pprof *p, struct fr_profile_result *res)
{
	char line[512];

	for (uint32_t e = 0; e < b->nev; e++) {
		const struct gevent *g = &b->ev[e];

		if (g->id == FR_EVENT_CPU && !g->target && g->res->samples_seen)
			snprintf(line, sizeof(line),
				 "cpu sampled in period mode (a sample every fixed number of "
				 "nanoseconds of CPU time; value = the period per sample, exact, not "
				 "downsampled)");
		else if (g->id == FR_EVENT_CPU)
			snprintf(line, sizeof(line),
				 "cpu sampled at %u Hz per CPU (cpu-clock, kernel+user stacks)",
				 g->target);
		else if (e + 1 == b->mem || e + 1 == b->mem_alloc) {
			/* One set of comments for both. */
			if (e + 1 == b->mem)
				profile_mem_comments(b, p);
			continue;
		} else if (g->id != FR_EVENT_OFFCPU && !fr_event_has_rate(g->id))
			snprintf(line, sizeof(line), "%s: every record, value = %s", g->name,
				 fr_event_unit(g->id));
		else if (!fr_event_has_rate(g->id))
			snprintf(line, sizeof(line),
				 "%s: every context switch, value = nanoseconds switched out",
				 g->name);
		else if (g->target)
			snprintf(line, sizeof(line),
				 "%s sampled at %u Hz (frequency mode, per CPU; value = %s counted, "
				 "scaled up where downsampled)",
				 g->name, g->target, g->name);
		else if (g->res->samples_seen)
			snprintf(line, sizeof(line),
				 "%s sampled in period mode (a sample every fixed number of %s; "
				 "value = the period per sample, exact, not downsampled)",
				 g->name, g->name);
		else
			snprintf(line, sizeof(line), "%s: no samples in this window", g->name);
		comment(p, line);
	}
	for (uint32_t e = 0; e < b->nev; e++) {
		const struct gevent *g = &b->ev[e];
		const struct fr_profile_event_result *er = g->res;

		if (!g->target)
			continue;
		if (g->wanted && er->min_rate && g->wanted > er->min_rate) {
			if (er->max_rate > g->target)
				snprintf(line, sizeof(line),
					 "%s: downsampled: part of the window was collected at %u Hz, "
					 "below the requested %u Hz, so all of %s is at %u Hz "
					 "(downsampled from up to %u Hz)",
					 g->name, er->min_rate, g->wanted, g->name, g->target,
					 er->max_rate);
			else
				snprintf(line, sizeof(line),
					 "%s: the window was collected at %u Hz, below the requested "
					 "%u Hz, so %s is at %u Hz",
					 g->name, er->min_rate, g->wanted, g->name, g->target);
			comment(p, line);
			if (!res->warning[0])
				snprintf(res->warning, sizeof(res->warning), "%s", line);
		} else if (er->max_rate > g->target) {
			snprintf(line, sizeof(line), "%s: downsampled from %u Hz to %u Hz", g->name,
				 er->max_rate, g->target);
			comment(p, line);
		}
	}
}

/* What the kernel reported losing, per event: machine-wide counters of
 * the window's chunks, said so when the profile is of some processes
 * only; and how many of the profile's own samples have truncated stacks. */
static void loss_comments(const struct builder *b, struct fr_pprof *p)
{
	const char *whose = fr_targets_given(&b->req->targets) || b->children
				    ? " (machine-wide: of every process, not only this profile's)"
				    : "";
	char line[512];

	for (uint32_t e = 0; e < b->nev; e++) {
		const struct gevent *g = &b->ev[e];
		const struct fr_profile_event_result *er = g->res;

		if (er->lost && profile_mem_col(b, e) >= 0) {
			profile_mem_lost(b, e, p, whose);
		} else if (er->lost && g->id == FR_EVENT_OFFCPU) {
			/* One lost record is one wait; how long it was is not
			 * stored (the eBPF mechanism's status counts it). */
			snprintf(line, sizeof(line),
				 "%s: %" PRIu64 " off-CPU waits lost in this window%s: the "
				 "recorder fell behind and their records found no room, so their "
				 "time is missing from this profile",
				 g->name, er->lost, whose);
			comment(p, line);
		} else if (er->lost) {
			snprintf(line, sizeof(line),
				 "%s: %" PRIu64 " samples lost by the kernel in this window%s: the "
				 "recorder fell behind",
				 g->name, er->lost, whose);
			comment(p, line);
		}
		if (er->throttled) {
			snprintf(line, sizeof(line),
				 "%s: the kernel throttled sampling %" PRIu64
				 " times in this window%s: too many samples per second, some are "
				 "missing",
				 g->name, er->throttled, whose);
			comment(p, line);
		}
		if (er->truncated) {
			snprintf(line, sizeof(line),
				 "%s: %" PRIu64 " of the %" PRIu64
				 " samples of this profile have stacks truncated at %d frames (their "
				 "outermost callers are missing)",
				 g->name, er->truncated, er->samples_kept, FR_MAX_FRAMES);
			comment(p, line);
		}
	}
}

/* "cpu: unwinding stopped early in N of M samples: stack copy too small
 * A, no unwind info B, ...": the reasons with a count, as the marker
 * frames name them. */
static void unwind_comments(const struct builder *b, struct fr_pprof *p)
{
	char line[512];

	for (uint32_t e = 0; e < b->nev; e++) {
		const struct fr_profile_event_result *er = b->ev[e].res;
		uint64_t stopped = 0;
		size_t n;

		for (unsigned r = 1; r < FR_FRAME_MARK_COUNT; r++)
			stopped += er->unwind_stopped[r];
		if (!stopped)
			continue;
		n = (size_t)snprintf(line, sizeof(line),
				     "%s: unwinding stopped early in %" PRIu64 " of %" PRIu64
				     " samples:",
				     b->ev[e].name, stopped, er->samples_kept);
		for (unsigned r = 1; r < FR_FRAME_MARK_COUNT && n < sizeof(line); r++)
			if (er->unwind_stopped[r])
				n += (size_t)snprintf(line + n, sizeof(line) - n, "%s %s %" PRIu64,
						      n && line[n - 1] == ':' ? "" : ",",
						      fr_frame_mark_name(r), er->unwind_stopped[r]);
		comment(p, line);
	}
}

/* "--children: N descendant processes of PID[,PID] included". */
static void children_comment(const struct builder *b, struct fr_pprof *p)
{
	/* FR_LIMIT_PIDS pids of up to 10 digits and a comma each. */
	char line[96 + FR_LIMIT_PIDS * 11];
	size_t n;

	/* A user limited to their own processes is not told how many others
	 * ran. */
	if (b->req->targets.has_uid)
		n = (size_t)snprintf(line, sizeof(line), "--children: descendant processes of ");
	else
		n = (size_t)snprintf(line, sizeof(line), "--children: %u descendant processes of ",
				     b->ndescendants);
	for (uint32_t i = 0; i < b->req->targets.npids && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%u", i ? "," : "",
				      b->req->targets.pids[i]);
	if (n < sizeof(line))
		snprintf(line + n, sizeof(line) - n, " included");
	comment(p, line);
}

/* Starts the pprof profile of `b`, written to `sink`: samples/count counts
 * the kept samples of every event; then a column per event, in the order
 * asked; the first is the default and gives the period. Returns NULL when
 * out of memory. */
struct fr_pprof *profile_pprof_new(const struct builder *b, int64_t t0, int64_t period,
				   fr_write_fn sink, void *arg)
{
	struct fr_pprof *p = fr_pprof_new(6, sink, arg);
	struct pcolumn cols[PROFILE_MAX_COLUMNS];
	uint32_t ncols = profile_columns(b, cols);

	if (!p)
		return NULL;
	for (uint32_t k = 0; k < ncols; k++)
		fr_pprof_sample_type(p, cols[k].type, cols[k].unit);
	fr_pprof_default_sample_type(p, profile_default_type(b));
	/* Go's heap profiles: period type space/bytes, period the mean. */
	if (profile_mem_col(b, 0) >= 0)
		fr_pprof_period(p, "space", "bytes", period);
	else
		fr_pprof_period(p, b->ev[0].name, fr_event_unit(b->ev[0].id), period);
	fr_pprof_time(p, t0, b->req->t1 - t0);
	return p;
}

/* The comments that head the profile (none without `p`): the version and
 * window, the request's note and restrictions, how each event was sampled
 * (and res->warning, set here when the window was collected below the
 * asked rate), what was lost, and what the period means. */
void profile_comments(struct builder *b, struct fr_pprof *p, struct fr_profile_result *res,
		      int64_t period)
{
	const struct fr_profile_request *req = b->req;
	char line[512], a[64], bb[64], dur[32];

	snprintf(line, sizeof(line), "flightrec %s", req->version ? req->version : "");
	comment(p, line);
	snprintf(line, sizeof(line), "window %s .. %s (%s)", fr_format_time(req->t0, a, sizeof(a)),
		 fr_format_time(req->t1, bb, sizeof(bb)),
		 fr_format_duration(req->t1 - req->t0, dur, sizeof(dur)));
	comment(p, line);
	if (req->note && req->note[0])
		comment(p, req->note);
	if (req->pmu_note && req->pmu_note[0])
		comment(p, req->pmu_note);
	if (b->children)
		children_comment(b, p);
	if (req->targets.has_uid) {
		snprintf(line, sizeof(line), "limited to the processes of uid %" PRIu32,
			 req->targets.uid);
		comment(p, line);
	}
	rate_comments(b, p, res);
	if (res->warning[0])
		comment(p, res->warning);
	loss_comments(b, p);
	profile_box_comments(b, p);
	unwind_comments(b, p);
	profile_python_comments(b, p);
	if (res->chunks_skipped) {
		snprintf(line, sizeof(line),
			 "%" PRIu64
			 " chunks of the window could not be read (damaged or overwritten)",
			 res->chunks_skipped);
		comment(p, line);
	}
	if (fr_event_has_rate(b->ev[0].id) && !b->ev[0].target && b->ev[0].res->samples_seen) {
		snprintf(line, sizeof(line), "period %" PRId64 ": the period %s was sampled at",
			 period, b->ev[0].name);
		comment(p, line);
	} else if (profile_mem_col(b, 0) >= 0) {
		snprintf(line, sizeof(line),
			 "period %" PRId64 ": the mean bytes between two allocation samples",
			 period);
		comment(p, line);
	} else if (b->ev[0].id != FR_EVENT_CPU) {
		if (fr_event_has_rate(b->ev[0].id))
			snprintf(line, sizeof(line),
				 "period %" PRId64
				 ": the mean %s per kept sample (frequency mode has "
				 "no fixed period)",
				 period, b->ev[0].name);
		else
			snprintf(line, sizeof(line),
				 "period 1: %s values are measured nanoseconds, not sampled counts",
				 b->ev[0].name);
		comment(p, line);
	}
}
