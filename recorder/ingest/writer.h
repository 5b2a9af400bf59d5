/* The ring's writer: the only thread that appends to the ring.
 *
 * Sealed chunks travel from the ingest thread to the writer through a
 * FIFO; flush barriers travel through the same FIFO, so when the writer
 * reaches a barrier every chunk queued before it is in the ring. The FIFO
 * holds at most FR_WRITER_QUEUE_MAX bytes: when the disk does not keep up,
 * the newest chunk is dropped (and counted) rather than the daemon's
 * memory growing. After each append the writer erases what is older than
 * ring.max_age and counts what the ring's chunks say was lost.
 */
#ifndef FR_RECORDER_WRITER_H
#define FR_RECORDER_WRITER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/store/ring.h"
#include "recorder/ingest/ring_losses.h"

#define FR_WRITER_QUEUE_MAX (64u << 20)

struct fr_writer_item;

struct fr_writer {
	struct fr_ring *ring; /* borrowed */
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* queue changed or barrier completed */
	struct fr_writer_item *head, *tail;
	size_t queued_bytes;
	int stop;
	uint64_t barrier_req;  /* the last barrier generation asked for */
	uint64_t barrier_done; /* the last one stored */
	/* ring.max_age (atomic; a reload may change it). */
	int64_t max_age_ns;
	/* The FIFO's bound: FR_WRITER_QUEUE_MAX, or the test setting
	 * FLIGHTREC_WRITER_QUEUE (bytes) in the recorder's environment. */
	size_t queue_max;
	/* Counters read by status requests (atomics). */
	uint64_t chunks_dropped, write_errors;
	/* For status (atomics): Unix ns of the last successful append, and
	 * CLOCK_MONOTONIC ns since the append in progress began (0: none),
	 * so an append that hangs on its disk is seen while it hangs. */
	int64_t last_append_real, append_since_mono;
	/* For status and attach (atomics): while appends fail for want of
	 * the disk (a file system gone read-only, I/O errors), the errno of
	 * the last failure and the Unix ns of the first of the run; both 0
	 * once an append succeeds again. */
	int error;
	int64_t error_since_real;
	/* What the ring's chunks lost, brought up to date after each append. */
	struct fr_ring_losses losses;
};

/* Initializes `w`, which erases what is older than `max_age_ns` (0:
 * nothing). Pair with fr_writer_fini(). */
void fr_writer_init(struct fr_writer *w, int64_t max_age_ns);

/* Erases what `ring` holds beyond ring.max_age, then starts the writer
 * thread on it. `ring` is borrowed: it must outlive fr_writer_stop().
 * Returns 0 or -errno. */
int fr_writer_start(struct fr_writer *w, struct fr_ring *ring);

/* Queues a sealed chunk (or NULL) for the writer, followed by barrier
 * generation `barrier` when non-zero. Takes ownership of `chunk`; a chunk
 * that does not fit the queue (or an item that cannot be allocated) is
 * dropped and counted. */
void fr_writer_enqueue(struct fr_writer *w, void *chunk, size_t len, uint64_t barrier);

/* Whether a chunk of `len` bytes fits the queue now. Only the writer
 * shrinks the queue, so a single producer that sees room keeps it. */
bool fr_writer_has_room(struct fr_writer *w, size_t len);

/* Drops a sealed chunk the queue has no room for: counted in
 * chunks_dropped, said in the log (rate-limited), freed. */
void fr_writer_drop(struct fr_writer *w, void *chunk);

/* Asks for a new barrier generation and returns it; whoever seals next
 * queues it (fr_writer_barrier_asked()). */
uint64_t fr_writer_barrier_ask(struct fr_writer *w);

/* The last barrier generation asked for (0: none yet). */
uint64_t fr_writer_barrier_asked(struct fr_writer *w);

/* Waits up to `timeout_ms` until barrier generation `target` is stored.
 * Returns 0 or -ETIMEDOUT. */
int fr_writer_barrier_wait(struct fr_writer *w, uint64_t target, int timeout_ms);

/* ring.max_age: erases what is older. Writer thread only, or before it
 * starts. */
void fr_writer_expire(struct fr_writer *w);

/* Whether the writer is stuck (an append taking over `stall_ns`, or chunks
 * waiting while nothing was appended for that long), with the bytes
 * queued in *queued. Any thread. */
int fr_writer_stalled(struct fr_writer *w, int64_t stall_ns, size_t *queued);

/* Whether appends fail now (the disk refuses writes): the errno of the
 * last failure, with the Unix ns of the first of this run of failures in
 * *since; 0 when the last append succeeded. Any thread. */
int fr_writer_error(struct fr_writer *w, int64_t *since);

/* What the writer has not stored yet, in words for a log line: the chunks
 * queued and their bytes, and an append in progress and for how long.
 * Any thread; waits at most 1 s for the queue's lock. */
void fr_writer_describe_pending(struct fr_writer *w, char *buf, size_t len);

/* Lets the writer store everything queued, then joins it and syncs the
 * ring. Accepts a writer that never started. */
void fr_writer_stop(struct fr_writer *w);

/* Frees what is still queued and the locks. After fr_writer_stop(). */
void fr_writer_fini(struct fr_writer *w);

#endif
