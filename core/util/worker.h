/* A thread that runs one call at a time for its owner, who waits for each
 * within a deadline: for work that touches files other users control (a
 * FUSE mount that never answers, a hung network mount), where a system
 * call can block for as long as its owner likes and nothing can interrupt
 * it.
 *
 * A call that misses its deadline goes on alone: its worker is abandoned
 * (the owner gets a new one for its next call) and frees what the call
 * made, with the `drop` function it was given, when the call returns.
 * While FR_WORKER_STUCK_MAX abandoned workers of the process are still
 * running, no new worker starts.
 */
#ifndef FR_CORE_WORKER_H
#define FR_CORE_WORKER_H

#include <stdint.h>

#define FR_WORKER_STUCK_MAX 64

struct fr_worker;

/* Runs fn(arg) on *w, starting a worker when *w is NULL, and waits up to
 * `deadline_ns`. Returns 0 once fn returned; -ETIMEDOUT when it did not
 * in time: *w is then NULL and the call belongs to the abandoned worker,
 * which runs drop(arg) after fn. -EAGAIN (too many workers stuck) or
 * -ENOMEM: fn did not run and `arg` is still the caller's. */
int fr_worker_call(struct fr_worker **w, void (*fn)(void *arg), void (*drop)(void *arg), void *arg,
		   int64_t deadline_ns);

/* How many abandoned workers of the process are still in their call. */
unsigned fr_worker_stuck(void);

/* Stops a worker that is not running a call; accepts NULL. */
void fr_worker_free(struct fr_worker *w);

#endif
