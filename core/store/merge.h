/* Merging consecutive chunks into one.
 *
 * The ring journals the chunks the recorder seals every second (so a crash
 * loses at most a second), and stores a group of them, once it spans
 * several seconds, as one merged chunk: the strings, build ids, processes,
 * mappings and stacks that every second's chunk repeats are then stored
 * once for the group (core/store/ring.h, "JOURNAL").
 *
 * A merged chunk holds every sample, every counter and everything needed to
 * symbolize them that its parts held, with two limits a chunk has anyway:
 * one answer per process, thread and mapping. So parts are merged only
 * while they agree: a part that says something else about a process than an
 * earlier part (another exe, comm, start time, uid or build id, as after an
 * exec; another cgroup or parent), about a thread (its tid now in another
 * process) or about a mapping (an address range mapped to something else)
 * starts the next merged chunk. Thread names, which threads change freely,
 * are the newest part's.
 */
#ifndef FR_CORE_MERGE_H
#define FR_CORE_MERGE_H

#include <stddef.h>

#include "core/store/chunk.h"

/* How many of the decoded chunks `parts` (consecutive, oldest first, n >= 1)
 * can be merged into one chunk: at least 1, and no more than agree with
 * each other (above) and whose raw lengths add up to at most `max_raw`
 * (the first part always counts). Returns the count, or -ENOMEM. */
int fr_chunk_merge_span(struct fr_chunk *const *parts, size_t n, size_t max_raw);

/* Encodes the samples, counters and tables of `parts` (n >= 1, as allowed by
 * fr_chunk_merge_span()) as one chunk (seq 0, the newest part's clock
 * offset) into a malloc'd buffer the caller frees. Returns 0, -EFBIG when
 * the merged block would not fit `max_raw` (the parts are then kept as they
 * are), or -ENOMEM. */
int fr_chunk_merge(struct fr_chunk *const *parts, size_t n, size_t max_raw, void **out,
		   size_t *out_len);

#endif
