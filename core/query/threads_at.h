/* The threads of some processes at a past moment T, from the ring alone:
 * which were blocked (since when), which were running, and their names
 * (core/query/threads_at.c). The kernel's exact state is not in the ring:
 * a thread is "blocked", "runnable", "running" or "unknown" as its samples
 * and the recorder's open-wait records say. */
#ifndef FR_QUERY_THREADS_AT_H
#define FR_QUERY_THREADS_AT_H

#include <stddef.h>
#include <stdint.h>

#include "core/query/profile.h"
#include "core/store/ring.h"
#include "core/util/time.h"

/* How far back from T cpu samples make a thread "running". */
#define FR_THREADS_AT_RUN_NS FR_NS_PER_S
/* A thread switched out less than this before T, with a cpu sample less
 * than this before it left, was preempted: running, not blocked. */
#define FR_THREADS_AT_PREEMPT_NS (50LL * 1000000LL)
/* How far back from T open-wait records are looked for: the recorder
 * seals at least once a second while threads are blocked. */
#define FR_THREADS_AT_LOOK_NS (3 * FR_NS_PER_S)

enum fr_thread_at_state {
	FR_THREAD_UNKNOWN,
	FR_THREAD_BLOCKED,
	FR_THREAD_RUNNING,
	FR_THREAD_RUNNABLE, /* in the run queue: waiting for a CPU */
};

struct fr_thread_at {
	uint32_t pid, tid;
	enum fr_thread_at_state state;
	int64_t out_ns;	  /* blocked, runnable: when it left the CPU (Unix ns) */
	int64_t seen_ns;  /* its latest record or sample at or before T */
	char name[32];	  /* from the chunks' thread table; "" unknown */
	char comm[32];	  /* its process's, from the process table */
	uint32_t creator; /* the thread that created it (chunks' section 2); 0: unknown */
};

/* The threads of the processes of t at time `at`, sorted by (pid, tid),
 * into *out (freed by the caller) and *n. A sample is of t as a profile
 * selects it (core/query/profile.h): of one of t->pids (all when none),
 * of a process whose command name at the sample's time is one of
 * t->comms (any when none), of a process whose cgroup (its label set's)
 * is within t->cgroup (any when ""), and when t->has_uid, of a process
 * the chunks give real uid t->uid. Application labels are ignored. A
 * thread is:
 *  - blocked: listed in the latest open-wait records at or before `at` (and
 *    within FR_THREADS_AT_LOOK_NS of it), left the CPU at record time -
 *    weight, no completed off-CPU sample shows it back before t, and it
 *    was not preempted (FR_THREADS_AT_PREEMPT_NS);
 *  - runnable: listed so (FR_EVENT_OFFCPU_RUNNABLE: preempted, or woken and
 *    not on a CPU yet) in those records, and not back since;
 *  - running: not blocked, with a cpu sample in [t - FR_THREADS_AT_RUN_NS, t];
 *  - unknown: seen otherwise in that second or back from a listed wait.
 * Returns 0 or -errno. */
int fr_threads_at(struct fr_ring *r, int64_t at, const struct fr_targets *t,
		  struct fr_thread_at **out, size_t *n);

/* The time of the ring's last chunk's end (the last seal: for a ring whose
 * recorder crashed, the moment of the crash), or 0 for an empty ring. */
int64_t fr_threads_at_last(struct fr_ring *r);

/* How far back from T the stacks are looked for. */
#define FR_THREADS_AT_STACK_NS (60 * FR_NS_PER_S)

/* Writes the threads of the processes of req->targets (selected as
 * fr_threads_at() does) at `t` to `fd` as the live `flightrec threads` answer is written
 * (recorder/requests/threads.c): a gzip'ed pprof, one sample per thread, values
 * threads/count and waiting/nanoseconds, labels pid, tid, thread, state
 * ("blocked", "running", "unknown"), waiting_ns (blocked: t - switch-out),
 * creator (when the chunks know it), stack ("blocked" or "on-cpu"). A blocked thread's stack is its off-CPU
 * row with the most time in [t - FR_THREADS_AT_STACK_NS, t], where the
 * open waits put its wait; any other's its cpu row with the most samples.
 * `req` gives the targets and the symbol sources; its window and events
 * are set here. Returns 0 and the number of threads written in *nthreads
 * (of *nprocs processes), or -errno with a reason in err. */
int fr_threads_at_write(struct fr_ring *r, struct fr_profile_request *req, int64_t t, int fd,
			size_t *nthreads, size_t *nprocs, char *err, size_t errlen);

/* Decides which processes of an answer are shown as ps shows them: given
 * its `n` distinct pids, sets hidden[i] non-zero for each to hide. */
typedef void (*fr_threads_hide_fn)(void *arg, const uint32_t *pids, size_t n, int *hidden);

/* fr_threads_at_write() with the threads of the processes `hide` (NULL:
 * none; called once with `hide_arg`) hides cut down to pid, tid, thread
 * and state, values 1 and 0: no waiting time, creator, stack or labels.
 * *nhidden is the number of processes so hidden. */
int fr_threads_at_write_hiding(struct fr_ring *r, struct fr_profile_request *req, int64_t t, int fd,
			       fr_threads_hide_fn hide, void *hide_arg, size_t *nthreads,
			       size_t *nprocs, size_t *nhidden, char *err, size_t errlen);

#endif
