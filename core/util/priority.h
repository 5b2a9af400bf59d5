/* Scheduling priorities of the recorder's threads.
 *
 * The few threads that must keep up with the machine (the one that drains
 * the perf rings, the one that stores what it sealed) run at a raised
 * priority: FR_PRIORITY_RAISE nice levels above the process's own, so that
 * a user's hundreds of runnable threads cannot starve them. Linux keeps a
 * nice value per thread and a new thread starts with its creator's: a
 * thread that does work a user drives (reads of the user's files, stack
 * walks, queries), whoever started it, puts itself back at the process's
 * priority with fr_priority_normal().
 *
 * A raised nice level is a larger share of a CPU, not the CPU: among
 * hundreds of runnable threads of the same group it is still only a few
 * per cent of it. The ingest thread, whose work is short and bounded by
 * the sampling rate, may instead run at the lowest realtime priority
 * (fr_priority_realtime: SCHED_FIFO 1, with SCHED_RESET_ON_FORK so that
 * threads it starts do not inherit it), under a watchdog of its own that
 * drops it back to a raised nice level when it uses more than its budget
 * of CPU (recorder/ingest/ingest.c); the kernel's realtime throttling bounds it
 * too.
 */
#ifndef FR_CORE_UTIL_PRIORITY_H
#define FR_CORE_UTIL_PRIORITY_H

#include <pthread.h>
#include <stdint.h>

/* How many nice levels the keeping-up threads run above the process: at
 * nice 0, -10 (about 9 times a nice-0 thread's share of a CPU). */
#define FR_PRIORITY_RAISE 10

/* Records the process's priority (the calling thread's nice value) as the
 * one threads return to. Call once from the main thread before any other
 * starts. */
void fr_priority_init(void);

/* Raises the calling thread to FR_PRIORITY_RAISE levels above the
 * process's (at most -20). Needs CAP_SYS_NICE or an RLIMIT_NICE that
 * allows it (systemd: LimitNICE=). Returns 0, or -errno (the thread's
 * priority is then unchanged). */
int fr_priority_raise(void);

/* Puts the calling thread back at the process's priority, unless it
 * already runs lower. Always allowed. */
void fr_priority_normal(void);

/* The nice value of the calling thread. */
int fr_priority_nice(void);

/* Puts the calling thread at SCHED_FIFO priority 1, reset to the normal
 * policy in the threads it starts. Needs CAP_SYS_NICE or an RLIMIT_RTPRIO
 * of 1 (systemd: LimitRTPRIO=1, and no RestrictRealtime=yes). Returns 0,
 * or -errno. */
int fr_priority_realtime(void);

/* Puts the calling thread back at the normal policy (its nice value
 * kept). */
void fr_priority_not_realtime(void);

/* Whether the calling thread runs at a realtime policy. */
int fr_priority_is_realtime(void);

/* Initializes a mutex the ingest thread shares with threads of a lower
 * priority as a priority-inheritance one: a holder the scheduler left
 * waiting behind a user's threads runs at the waiter's realtime priority
 * until it lets go, rather than holding the ingest thread up with it.
 * Falls back to a plain mutex where the system has none. Returns 0, or
 * -errno as pthread_mutex_init(). */
int fr_mutex_init_pi(pthread_mutex_t *m);

/* The calling thread's CPU time, ns. */
int64_t fr_priority_cpu_ns(void);

#endif
