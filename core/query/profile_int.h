/* What the parts of a window query share (core/query/profile.c: the entry
 * points and the two passes over the window; core/query/profile_window.c: which
 * samples the request takes, their rates and downsampling;
 * core/query/profile_agg.c: the rows the kept samples aggregate into;
 * core/query/profile_emit.c: naming the frames and writing pprof or folded
 * stacks; core/query/profile_value.c: reading the aggregate as a value).
 * Private to them; the profile's users include core/query/profile.h and
 * core/query/profile_value.h.
 */
#ifndef FR_CORE_PROFILE_INT_H
#define FR_CORE_PROFILE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/util/compress.h"
#include "core/query/decimate.h"
#include "core/query/profile.h"
#include "core/store/sample.h"
#include "core/util/hash.h"
#include "core/util/time.h"

struct fr_chunk;
struct fr_pprof;

#define KERNEL_MAP 1 /* index of the kernel pseudo-mapping in maps[] */
#define NO_CGROUP UINT32_MAX

/* ---- a small open-addressing index: slots hold entry index + 1 -------- */

struct hidx {
	uint32_t *slots;
	uint32_t cap; /* power of two */
	uint32_t n;
};

/* ---- builder state ------------------------------------------------------ */

/* A set of non-zero 64-bit keys (open addressing, grows). */
struct kset {
	uint64_t *slots; /* 0: empty */
	uint32_t cap;	 /* power of two, or 0 */
	uint32_t n;
};

struct gmap {
	char *path;
	uint64_t start, end, pgoff;
	uint32_t pid;	      /* a process that mapped it, for /proc/PID/root */
	int64_t pid_start_ns; /* its start (0: unknown), for its cached perf map */
	uint32_t pid_uid;     /* its uid, for the symbol cache's copies of its user's files */
	uint8_t bid_len;
	uint8_t bid[FR_BUILD_ID_MAX];
	bool is_exe;	   /* the executable of its process */
	bool python;	   /* the Python frames of process pid: "[python]" */
	int has_functions; /* the kernel's: some location named */
	/* User locations on it, and those named from a symbol or a perf
	 * map: has_functions in pprof when all are (profile_maps.c). */
	uint32_t nlocs, nsym;
	/* Locations named from a symbol, and of them those DWARF gave a
	 * file:line and the inline chain: the mapping's has_filenames,
	 * has_line_numbers and has_inline_frames when all are. */
	uint32_t nnamed, nlined;
	uint64_t pprof_id;
	/* The file name and build id (hex, "" none) pprof gets: indexes
	 * into strs, set once the locations are named. */
	uint32_t file_name, bid_hex;
	uint64_t hash;
};

/* One function of a location: name, system name and file (indexes into
 * strs) and its source line (0: unknown). */
struct gline {
	uint32_t name, sys, file;
	uint32_t line;
	uint32_t start_line; /* the function's first line (0: unknown) */
};

struct gloc {
	uint32_t map; /* 0: no mapping */
	uint64_t addr;
	/* Its functions, innermost first: b->lines[line0, line0 + nlines):
	 * inlined ones from DWARF (pprof output only) then the one named by
	 * a symbol; none for an address nothing names. */
	uint32_t line0, nlines;
	uint64_t hash;
};

struct gsample {
	uint32_t pid, tid, cpu;
	uint32_t comm, thread; /* indexes into strs */
	uint32_t cgroup;       /* index into strs, or NO_CGROUP */
	uint32_t app;	       /* application label set (b->apps[app - 1]), 0: none */
	uint32_t nlocs;
	uint64_t locs;	/* offset into locs arena */
	uint64_t count; /* kept samples of every event */
	uint64_t hash;
	/* A row of a memory event's records (profile_mem.c): keyed without
	 * the thread (a block is freed by any thread), no tid or thread label. */
	bool mem;
};

/* What a row holds for one event: n kept samples, and v the sum of their
 * weights scaled for downsampling (weight * rate / target), rounded down
 * once for the sum rather than per sample: rem carries the remainder, in
 * 1/target units. cpu uses only n: its value is n times the period. */
struct gcell {
	uint64_t n, v;
	uint32_t rem;
};

struct fr_pprof_label;
struct fr_chunk;

/* A process the symbol cache knows as a CPython process
 * (core/query/profile_python.c): its release and problem (indexes into
 * strs) and the code objects of it the profile names. */
struct gpython {
	uint32_t pid, uid;
	int64_t start_ns;
	uint32_t version, problem;
	uint32_t named;
};

/* An application label set of the profile: n (key, value) pairs of
 * string indexes at app_pairs[first]. */
struct gapp {
	uint32_t first, n;
	uint64_t hash;
	bool ok; /* of the request's label filter */
};

/* A requested event. */
struct gevent {
	uint32_t id;
	uint32_t target; /* rate of the profile; 0: not rate-sampled */
	uint32_t wanted; /* rate the request asks (event_hz, else hz); 0: as collected */
	char name[FR_EVENT_NAME_MAX];
	struct fr_profile_event_result *res;
};

struct builder {
	const struct fr_profile_request *req;
	/* The longest stall of the recorder's ingest the window's chunks
	 * say of (core/store/chunk.h, section 4), clipped to the window. */
	int64_t stall_t0, stall_t1;
	struct fr_events *box; /* the window's crashes and OOM kills */
	struct gline *lines;   /* of every location, see struct gloc */
	uint32_t nlines, lines_cap;
	struct gevent ev[FR_LIMIT_EVENTS];
	uint32_t nev;
	struct gmap *maps;
	uint32_t nmaps, maps_cap;
	struct hidx map_idx;
	struct gloc *locs;
	uint32_t nlocs, locs_cap;
	struct hidx loc_idx;
	struct gsample *samples;
	uint32_t nsamples, samples_cap;
	struct hidx sample_idx;
	struct gcell *cells; /* nev per sample row */
	uint32_t *arena;
	uint64_t arena_len, arena_cap;
	char **strs;
	uint32_t nstrs, strs_cap;
	struct hidx str_idx;
	/* Scratch for one stack being looked up. */
	uint32_t key[FR_MAX_FRAMES];
	/* Per-chunk memo: stack id -> (arena offset, count) of its locations. */
	uint64_t *stack_off;
	uint32_t *stack_n;
	uint32_t stack_cap;
	/* Per-chunk memo: chunk string id -> index into strs + 1 (0: not
	 * yet), for the names each sample takes at its time. */
	uint32_t *str_memo;
	uint32_t str_memo_cap;
	/* The names of the last (pid, tid) looked up in a chunk without names
	 * over time, where they hold for the whole chunk (a CPU's samples
	 * come in runs of one thread). */
	int last_ok;
	uint32_t last_pid, last_tid;
	int64_t last_comm, last_thread;
	/* Per-chunk targets: stack id -> of a wanted pid and comm; label set
	 * -> of the wanted cgroup, and its cgroup (index into strs). */
	uint8_t *stack_ok;
	uint8_t *ls_ok;
	uint32_t *ls_cgroup;
	uint32_t targets_cap; /* entries of each of the three */
	/* --children: (pid << 32 | ppid) pairs of the window; then, once
	 * extended, `pids` holds the asked pids and their descendants. */
	int children;
	struct kset edges, pids;
	uint32_t ndescendants;
	uint32_t *ls_ppid; /* per-chunk: label set -> its "ppid" (0: none) */
	uint32_t ls_ppid_cap;
	/* Open waits (core/query/profile_open.c): the time of the window's
	 * latest open-wait records (0: none), and the offcpu samples of the
	 * window's end, (tid, switch-in) sorted by tid once pass 1 is done. */
	int64_t open_asof;
	struct open_done {
		uint32_t tid;
		int64_t in_ns;
	} * done;
	uint32_t ndone, done_cap;
	/* Downsampling's strata, per (cpu, event), over pass 2 (zeroed: the
	 * grid method). */
	struct fr_decimator dec;
	/* Application labels (core/query/profile_app.c): the profile's sets,
	 * and per chunk its set -> the profile's (0: none). */
	struct gapp *apps;
	uint32_t napps, apps_cap;
	uint32_t *app_pairs;
	uint32_t napp_pairs, app_pairs_cap;
	struct hidx app_idx;
	uint32_t *chunk_app;
	uint32_t chunk_app_cap;
	/* The processes of the profile (profile_python_note()); once it is
 * named, those the symbol cache knows as CPython processes. */
	struct gpython *py;
	uint32_t npy, py_cap;
	/* Memory (core/query/profile_mem.c): the index + 1 of the request's
	 * alloc or heap event (0: none), the records it reads, per row its
	 * estimates, and per process its heap snapshot. */
	uint32_t mem;
	uint32_t mem_alloc;    /* index + 1 of alloc asked beside heap (0: none) */
	struct gmem *mem_rows; /* samples_cap of them */
	struct mem_state *ms;
};

/* The estimates of a memory row (core/query/profile_mem.c), in Go's
 * order of a heap profile's columns; summed as doubles and rounded when
 * read, so the totals stay unbiased. */
enum { MEM_ALLOC_OBJECTS, MEM_ALLOC_SPACE, MEM_INUSE_OBJECTS, MEM_INUSE_SPACE, MEM_COLUMNS };
struct gmem {
	double v[MEM_COLUMNS];
};

/* core/query/profile_agg.c */
int64_t profile_intern_str(struct builder *b, const char *s);
/* Adds sample i of `c` with `weight` (its own, or the part of it inside
 * the window) to event e's cell of its row. */
int profile_add_sample(struct builder *b, const struct fr_chunk *c, uint32_t i, uint32_t e,
		       uint64_t weight);
/* Starts the per-chunk memos for a chunk of `nstacks` stacks and
 * `nstrings` strings. Returns 0 or -ENOMEM. */
int profile_reset_stack_memo(struct builder *b, uint32_t nstacks, uint32_t nstrings);
void profile_free_builder(struct builder *b);
/* The row of sample i of `c` (found or added, count 0 when added), keyed
 * without its thread when `mem`. Returns its index or -ENOMEM. */
int64_t profile_row(struct builder *b, const struct fr_chunk *c, uint32_t i, bool mem);
/* Counts, for event e, sample i's stack cut at FR_MAX_FRAMES or ending in
 * a marker frame. */
void profile_count_stack(struct builder *b, const struct fr_chunk *c, uint32_t i, uint32_t e);
/* Frees what only aggregation uses (the per-chunk memos, the row and
 * location indexes), keeping the aggregate. */
void profile_trim_builder(struct builder *b);

/* core/query/profile_app.c: the chunk's application label sets made the
 * profile's (before its samples are added); sample i's set; the pprof
 * labels of a set (at most max); the memory. */
int profile_app_chunk(struct builder *b, const struct fr_chunk *c);
uint32_t profile_app_of(const struct builder *b, const struct fr_chunk *c, uint32_t i);
bool profile_app_ok(const struct builder *b, const struct fr_chunk *c, uint32_t i);
struct fr_profile_label;
size_t profile_app_labels(const struct builder *b, uint32_t app, struct fr_profile_label *out,
			  size_t max);
void profile_app_free(struct builder *b);

/* core/query/profile_python.c: the pseudo-mapping of process `pid`'s
 * Python frames (FR_FRAME_PY, core/store/sample.h) in chunk `c`, interned
 * (profile_agg.c); naming a location on it; the CPython processes of the
 * profile and their comments. */
#define PROFILE_PYTHON_MAPPING "[python]"
int64_t profile_intern_python_map(struct builder *b, const struct fr_chunk *c, uint32_t pid);
/* Notes a process with samples in the profile. Returns 0 or -ENOMEM. */
int profile_python_note(struct builder *b, uint32_t pid, uint32_t uid, int64_t start_ns);
struct fr_symbols;
int profile_python_name(struct builder *b, struct fr_symbols *syms, struct gloc *l, struct gmap *m,
			bool lines);
int profile_python_processes(struct builder *b, struct fr_symbols *syms);
void profile_python_comments(const struct builder *b, struct fr_pprof *p);

/* core/query/profile_mem.c: memory profiles (events alloc and heap).
 * profile_mem_setup() checks the request's memory event (-EINVAL with
 * `err`) and sets b->mem; profile_mem_from() is where the window's read
 * starts (a heap profile reads back to its snapshots); profile_mem_take()
 * whether record i of `c` (an alloc, free or live record) is one the
 * memory event reads; profile_mem_note() notes it in pass 1 (snapshots);
 * profile_mem_add() adds it to its row in pass 2. Returns 0 or -ENOMEM. */
int profile_mem_setup(struct builder *b, char *err, size_t errlen);
int64_t profile_mem_from(const struct builder *b);
/* The same of a request not set up yet (for estimates). */
int64_t profile_mem_read_from(const struct fr_profile_request *req);
/* The end of the read (t1, or t1 + 1 for a heap profile at t1). */
int64_t profile_mem_to(const struct builder *b);
/* Once aggregated: drops the rows that read 0 in every column, counts
 * the clamped ones. */
void profile_mem_finish(struct builder *b);
bool profile_mem_take(const struct builder *b, const struct fr_chunk *c, uint32_t i);
/* Whether record i is one the label filter does not apply to (heap's:
 * see profile_mem.c). */
bool profile_mem_label_free(const struct builder *b, const struct fr_chunk *c, uint32_t i);
int profile_mem_note(struct builder *b, const struct fr_chunk *c, uint32_t i);
int profile_mem_add(struct builder *b, const struct fr_chunk *c, uint32_t i);
/* Row `row`'s estimate of column `col`, rounded; a negative in-use one is
 * 0 but in a diff. */
int64_t profile_mem_value(const struct builder *b, uint32_t row, int col);
/* The pprof columns of the profile (see profile_columns()), the period,
 * the comments, and the memory freed. */
struct fr_pprof;
void profile_mem_comments(const struct builder *b, struct fr_pprof *p);
void profile_mem_lost(const struct builder *b, uint32_t e, struct fr_pprof *p, const char *whose);
int64_t profile_mem_period(const struct builder *b);
/* Whether memory rows carry application labels: not in a heap profile,
 * whose free and live records have none (keyed by them, a free would
 * miss its allocation's row). */
bool profile_mem_labels(const struct builder *b);
/* Whether the memory event is heap (its default column inuse_space). */
bool profile_mem_inuse(const struct builder *b);
/* The memory column of event e's values (alloc_space, inuse_space), or
 * -1 for an event that is not alloc or heap. */
int profile_mem_col(const struct builder *b, uint32_t e);
void profile_mem_free(struct builder *b);

/* The pprof sample types of a profile: samples/count (unless its only
 * event is a memory one, whose columns are Go's), then each event's: one,
 * or a memory event's two (alloc) or four (heap). `e` the event's index,
 * `mem` its memory column (-1: none), e -1 for samples/count. */
#define PROFILE_MAX_COLUMNS (1 + FR_LIMIT_EVENTS + 3)
struct pcolumn {
	const char *type, *unit;
	int e, mem;
};
uint32_t profile_columns(const struct builder *b, struct pcolumn *out);
/* The name of the default sample type (the first event's column). */
const char *profile_default_type(const struct builder *b);

/* core/query/profile_open.c */
int profile_open_note(struct builder *b, const struct fr_chunk *c, uint32_t i);
void profile_open_prepare(struct builder *b);
uint64_t profile_open_weight(const struct builder *b, const struct fr_chunk *c, uint32_t i);

/* core/query/profile_window.c */
int profile_collect_parents(struct builder *b, const struct fr_chunk *c);
int profile_extend_pids(struct builder *b);
int profile_chunk_rates(struct builder *b, const struct fr_chunk *c);
void profile_set_targets(struct builder *b, struct fr_profile_result *res);
void profile_count_losses(struct builder *b, const struct fr_chunk *c);

/* core/query/profile_box.c: the window's crashes and OOM kills of the
 * profile's processes, gathered from each chunk of pass 1 (0 or
 * -ENOMEM), and told in the profile's comments. */
int profile_box_chunk(struct builder *b, const struct fr_chunk *c);
void profile_box_comments(struct builder *b, struct fr_pprof *p);
int profile_chunk_aggregate(struct builder *b, const struct fr_chunk *c);
/* profile_agg.c: interns the mapping of process p's executable (its first
 * one), if the chunk has it. Returns 0 or -ENOMEM. */
struct fr_chunk_proc;
int profile_intern_exe(struct builder *b, const struct fr_chunk *c, const struct fr_chunk_proc *p);

/* Adds the pid of each sample of `c` in the window, of the request's
 * events (and of its uid when it has one), to `seen`. Returns 0 or
 * -ENOMEM. */
int profile_window_pids(const struct builder *b, const struct fr_chunk *c, struct kset *seen);

/* A profile as a value (core/query/profile_value.h): the aggregate of a
 * window, named, with what its emitters need besides. */
struct fr_profile {
	struct builder b;
	/* The request, its strings the comments say copied; the symbol
	 * sources and the stop callback cleared once it is built. */
	struct fr_profile_request req;
	char *version, *note, *pmu_note;
	struct fr_profile_result res;
	int64_t t0;			  /* where the profile starts (the ring may begin later) */
	int64_t period;			  /* profile_period() */
	uint32_t events[FR_LIMIT_EVENTS]; /* b.ev's ids */
	/* Whether a location is on the kernel, and the kernel mapping's
	 * span as pprof gets it (0, 0 in a profile limited to a uid). */
	bool kernel;
	uint64_t kmin, kmax;
};

/* core/query/profile_emit.c */
/* Appends to b->lines the function (name, sys, file, starting at
 * start_line) at source line `line` (0: unknown). Returns 0 or -ENOMEM. */
int profile_add_line(struct builder *b, const char *name, const char *sys, const char *file,
		     uint32_t line, uint32_t start_line);
struct fr_pprof *profile_pprof_new(const struct builder *b, int64_t t0, int64_t period,
				   fr_write_fn sink, void *arg);
void profile_comments(struct builder *b, struct fr_pprof *p, struct fr_profile_result *res,
		      int64_t period);
/* Names every location (with DWARF lines for pprof output) and the
 * mappings. Returns 0 or -ENOMEM. */
int profile_symbolize(struct builder *b, const char *kallsyms);
void profile_emit(struct fr_profile *prof, struct fr_pprof *p);
/* profile_maps.c: the mappings as pprof gets them. The index of the
 * profile's main mapping (the target program's executable; 0: none), the
 * file name pprof gets for mapping `m` (in `buf` when rewritten), and its
 * FR_PPROF_HAS_* flags. */
uint32_t profile_main_map(const struct builder *b);
const char *profile_map_file(const struct gmap *m, char *buf, size_t len);
int profile_map_flags(const struct gmap *m);
int profile_emit_folded(struct builder *b, fr_write_fn sink, void *arg, uint64_t *nlines);
int64_t profile_period(const struct builder *b);

#endif
