/* Application labels: the labels programs set with libflightrec
 * (lib/flightrec/labels.h), joined to each sample by (tid, time) when the
 * ingest thread seals a chunk.
 *
 * For each sampled process that has libflightrec.so mapped, the recorder
 * finds the registry by its exported symbol, and at every seal reads the
 * registry, and the change logs of the threads it has samples of, with
 * process_vm_readv on a deadline worker (the memory is the process's: a
 * hostile one can point it anywhere, even at a file that never answers).
 * Every field is checked and every loop bounded by the layout's fixed
 * limits; a process whose memory lies or stalls is read no more, and its
 * samples say so ("flightrec.labels" = "unreadable: ...").
 *
 * Not thread-safe: owned by the ingest thread.
 */
#ifndef FR_RECORDER_APPLABELS_H
#define FR_RECORDER_APPLABELS_H

#include <stdint.h>

#include "core/store/chunk.h"
#include "recorder/tracker.h"

struct fr_applabels;

struct fr_applabels *fr_applabels_new(struct fr_tracker *t);
void fr_applabels_free(struct fr_applabels *al);

/* The ops to seal a chunk with: the tracker's, and the application labels
 * of each sample (Unix sample times made monotonic with `clock_offset`,
 * the offset the samples were stamped with). */
const struct fr_chunk_meta_ops *fr_applabels_ops(struct fr_applabels *al, int64_t clock_offset);

/* Between seals, on the ingest thread's wake-ups: every 100 ms, reads
 * again the logs of the threads sampled in the last seal, so that a
 * process that exits before the next seal still has its labels up to
 * then (its later samples are labelled "exited before read"). */
void fr_applabels_poll(struct fr_applabels *al);

/* After each seal: what was read for it is dropped (the next seal reads
 * the logs again), and processes without samples for a minute forgotten. */
void fr_applabels_sealed(struct fr_applabels *al);

/* Counters for status: processes whose labels are read, and those marked
 * unreadable. */
void fr_applabels_counts(const struct fr_applabels *al, uint32_t *labelled, uint32_t *unreadable);

#endif
