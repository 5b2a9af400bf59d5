/* The fixture shared by the profile tests: synthetic samples built into
 * real chunks in a real ring (a small one in a temporary directory), a
 * window of it turned into a profile by fr_profile_write(), and that
 * profile read back with the project's own decoder (core/pprof/pprof_read.h).
 *
 * User frames point into the test binary itself (the frtest_* functions of
 * fixture.c), so they must come out named after those functions; kernel
 * frames are named from a fake kallsyms file. The synthetic pids lie above
 * PID_MAX_LIMIT, so no /proc/PID/root of a real process is consulted while
 * symbolizing.
 *
 * A test includes this header instead of tests/unit/check.h: CHECK()
 * failures in the fixture and in the test are counted together. */
#ifndef FR_TESTS_FIXTURE_H
#define FR_TESTS_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "core/store/chunk.h"
#include "core/pprof/pprof_read.h"
#include "core/query/profile.h"
#include "core/store/sample.h"
#include "core/symbols/symbols.h"

#define FR_TESTS_SHARED_FAILURES
#include "core/util/time.h"
#include "tests/unit/check.h"

#define SEC FR_NS_PER_S
#define T0 (1700000000 * SEC) /* start of most windows */
#define RING_SIZE (8u << 20)
#define RING_SEG (256u << 10)
#define PERIOD_99 ((int64_t)10101010) /* 1e9 / 99 */

#define PID_BASE 4200000u
#define PID_APP (PID_BASE + 1)
#define PID_DB (PID_BASE + 2)
#define PID_WEB (PID_BASE + 3)
#define PID_SUB (PID_BASE + 4)
/* A family of processes for --children (see test_children). */
#define FAM(n) (PID_BASE + (uint32_t)(n))
/* Thread k of a process; thread 0 is the main thread. */
#define TID(pid, k) ((pid) + 10000u * (uint32_t)(k))

#define CG_NGINX "/system.slice/nginx.service"
#define CG_SUB "/system.slice/nginx.service/sub"
#define CG_DB "/system.slice/db.service"

/* The temporary directory of this test run and the fake kallsyms in it. */
extern char tmpdir[];
extern char kallsyms_path[];

/* ---- the stacks samples are taken from ---- */

enum { ST_USER, ST_KERNEL, ST_OTHER, NSTACKS };

struct stack {
	uint16_t nr_kernel, nr_frames;
	uint64_t ips[8];
	const char *names[8]; /* as the profile must show them, leaf first */
};

extern struct stack stacks[NSTACKS];

/* Anonymous executable memory (as a JIT's), mapped "//anon" in every
 * process: no symbol or perf map names its addresses. */
#define ANON_START 0x10000000ull
#define ANON_END 0x10001000ull

/* ---- process metadata: every process runs this binary ---- */

extern char exe_path[4096];
extern uint8_t exe_bid[FR_BUILD_ID_MAX];
extern int exe_bid_len;
/* The cgroup of web (unknown unless a test sets it). */
extern const char *web_cgroup;
/* When set, PID_WEB was "frtest-sh" until this time and exec'd into
 * "frtest-web" then: the chunks say so (names over time). */
extern int64_t web_exec_ns;
extern const struct fr_chunk_meta_ops meta_ops;

/* ---- writing chunks into a ring ---- */

struct writer {
	struct fr_ring *ring;
	struct fr_chunk_builder *b;
	unsigned chunks;
};

/* A new ring TMPDIR/NAME.ring of RING_SIZE, or NULL (a failed CHECK). */
struct fr_ring *test_ring_create(const char *name);
/* Closes and deletes a ring; accepts NULL. */
void test_ring_done(struct fr_ring *r);
/* Below _text of the fake kallsyms: no kernel function holds it. */
#define KADDR_UNNAMED 0xffffffff80000010ull
/* A new ring (as test_ring_create()) where db's main thread has the
 * kernel stack and app's the user stack, once on each of CPUs 0..2, and
 * db's thread 1 a kernel stack whose leaf is KADDR_UNNAMED (db runs as
 * uid 0). */
struct fr_ring *test_kernel_ring(const char *name);
void w_init(struct writer *w, struct fr_ring *ring);
/* Seals the samples added so far into a chunk appended to the ring. */
void w_seal(struct writer *w);
void w_fini(struct writer *w);
/* Adds a sample of any event: `weight` as the recorder stores it, `hz`
 * the rate it was collected at (0 for offcpu). */
void w_add_ev(struct writer *w, int64_t t, uint32_t pid, uint32_t tid, uint32_t cpu, uint32_t event,
	      uint32_t hz, uint64_t weight, int st);
/* Adds a cpu sample at `hz` with stack `st`. */
void w_add(struct writer *w, int64_t t, uint32_t pid, uint32_t tid, uint32_t cpu, uint32_t hz,
	   int st);

/* ---- running a query ---- */

struct out {
	unsigned char *buf;
	size_t len, cap;
	char path[400];
};

/* An fr_profile_write() sink appending to a struct out. */
int sink_mem(void *arg, const void *buf, size_t len);
void req_init(struct fr_profile_request *q, int64_t t0, int64_t t1, uint32_t hz);
void req_events(struct fr_profile_request *q, uint32_t n, const uint32_t *events);
/* Runs the query; the profile is left in o->buf and in the file o->path
 * (TMPDIR/NAME.pb.gz). Returns fr_profile_write()'s result. */
int run(struct fr_ring *r, const struct fr_profile_request *q, struct fr_profile_result *res,
	struct out *o, const char *name);
void out_free(struct out *o);

/* ---- reading the profile back ---- */

#define MAX_VALUES (1 + FR_LIMIT_EVENTS)

/* A sample as decoded: its values, its locations (indices + 1 into
 * struct raw's loc_name) and its labels as "key:[value] " strings. */
struct rsample {
	int64_t v[MAX_VALUES];
	int nv;
	int nlocs;
	uint32_t loc[FR_MAX_FRAMES];
	char labels[512];
};

/* A decoded profile. `text` renders all of it (comments, period, sample
 * types, samples with labels, locations, mappings) in the layout of
 * `go tool pprof -raw`, for tests that look for a word anywhere in it. */
struct raw {
	struct fr_pprof_data *d;
	char *text;
	char types[256]; /* the sample types, "samples/count cpu/nanoseconds[dflt]" */
	int64_t period;
	int64_t time_ns, duration_ns;
	int nsamples;
	struct rsample *s;
	const char **loc_name; /* by location index + 1; [0] is NULL */
};

/* Reads the gzipped profile FILE with fr_pprof_read(). Returns 0, or -1
 * after printing why. */
int raw_parse(struct raw *r, const char *file);
void raw_free(struct raw *r);
int sample_has_stack(const struct raw *r, const struct rsample *s, const struct stack *st);
/* The sample with stack `st` (any stack when < 0) whose labels contain
 * every string of `want` (NULL-terminated); NULL when there is none. */
const struct rsample *find_sample(const struct raw *r, int st, const char *const *want);
/* The row of stack `st` with pid label `pid`, or NULL. */
const struct rsample *find_pid(const struct raw *r, int st, uint32_t pid);
/* The sum of the first value (the count) over every sample. */
int64_t raw_total(const struct raw *r);
/* The sum of value column `k` over every sample. */
int64_t raw_column(const struct raw *r, int k);
/* The column of sample type `type`, or -1 when the profile has none. */
int raw_type_index(const struct raw *r, const char *type);
/* Every sample's second value is its count times the period. */
void check_values(const struct raw *r, int64_t period, const char *what);
/* Prints r->text when checks failed since `before`. */
void dump_on_failure(const struct raw *r, int before);
/* Reads the profile of run() back into `r`: 0, or -1 after a failed
 * CHECK "cannot read WHAT". */
int raw_read(struct raw *r, const struct out *o, const char *what);
/* dump_on_failure(r, before), then raw_free(r). */
void raw_done(struct raw *r, int before);
/* time_nanos and duration_nanos of a profile in memory. */
int profile_times(const struct out *o, int64_t *time_ns, int64_t *dur_ns);
/* "key:[v]" in buf, as the labels of struct rsample show a number. */
const char *label(char *buf, size_t len, const char *key, uint64_t v);

/* ---- a test program ---- */

/* Makes the temporary directory /tmp/fr-test-NAME-XXXXXX with a fake
 * kallsyms in it, finds this binary's mappings and builds the stacks.
 * Returns 0, or -1 after printing why. */
int fixture_init(const char *name);
/* Removes the temporary directory; returns the exit status of the test
 * (1 when a check failed, after saying how many). */
int fixture_fini(void);

#endif
