/* What the ring's chunks say the kernel lost: the samples_lost that
 * `flightrec status` reports, the same sum `flightrec dump --info` adds up
 * from the file (docs/architecture.md, "Lost samples").
 *
 * Kept per chunk (sequence number and covers), so a chunk that expires or
 * is overwritten leaves with its count and a merged chunk brings the sum
 * of its group; chunks the recorder found at start are read a slice at a
 * time until all are counted.
 */
#ifndef FR_RECORDER_RING_LOSSES_H
#define FR_RECORDER_RING_LOSSES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/store/ring.h"

/* A chunk is known by its sequence number and the numbers it covers: a
 * merged chunk takes the sequence number of its group's last chunk. */
struct fr_ring_loss {
	uint64_t seq, lost;
	uint32_t covers;
};

struct fr_ring_losses {
	pthread_mutex_t lock;	/* the sum and flag; the table is the writer's */
	struct fr_ring_loss *v; /* the chunks counted, by sequence number */
	size_t n;
	uint64_t total;
	bool complete; /* every chunk of the index counted */
};

void fr_ring_losses_init(struct fr_ring_losses *l);
void fr_ring_losses_fini(struct fr_ring_losses *l);

/* Brings `l` up to the chunks `ring` holds: forgets those gone, reads the
 * ones it has not counted for at most `budget_ns` (a chunk is decoded to
 * find its counters). The writer thread's, after each append. Returns 0
 * or -ENOMEM. */
int fr_ring_losses_update(struct fr_ring_losses *l, struct fr_ring *ring, int64_t budget_ns);

/* The samples the ring's chunks say the kernel lost, and whether every
 * chunk is counted yet. Thread-safe. */
uint64_t fr_ring_losses_total(struct fr_ring_losses *l, bool *complete);

#endif
