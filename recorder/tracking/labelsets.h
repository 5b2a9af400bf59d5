/* Label sets as read at samples: the raw records an eBPF program copied
 * from a thread (libflightrec's, lib/flightrec/labels_abi.h, and the
 * OpenTelemetry thread context's, recorder/bpf/labels_bpf.h) checked,
 * decoded into pairs and interned, so that the many samples of one set
 * share one entry.
 *
 * Nothing in a record is trusted: lengths are checked against the bytes
 * copied, keys and values must be non-empty where required, free of NULs
 * and within the library's limits; the recorder's own label names and
 * "flightrec.*" keys (but the library's "flightrec.labels" marker) are
 * dropped; a record that does not check gives the single pair
 * ("flightrec.labels", "unreadable: bad record"). OTel: trace and span ids
 * as 32 and 16 lowercase hex digits ("trace_id", "span_id", only when the
 * record is valid and they are not all zeros), attributes as their key
 * names when the process's key map is known (fr_labelsets_otel_keys),
 * else "otel.attr.N"; a valid header whose attributes could not be read
 * (a page the kernel could not give without a fault) gives the pair
 * ("flightrec.labels", "unreadable: attributes not readable"), never its
 * ids without them. At most FR_CHUNK_APP_PAIRS pairs.
 *
 * Memory is bounded: at most FR_LABELSETS_MAX sets, each its raw bytes
 * and its strings (a few hundred bytes, at most ~3.5 KiB: 56 MiB for a
 * full table of the largest records); when full, the sets no sample
 * referred to in the last two seals are dropped (ids are
 * generation-tagged, so a stale id resolves to nothing rather than to
 * another set); when none can go, the observation gets the set
 * ("flightrec.labels", "dropped: too many label sets at once") and is
 * counted (fr_labelsets_full). Owned by the ingest thread.
 */
#ifndef FR_RECORDER_LABELSETS_H
#define FR_RECORDER_LABELSETS_H

#include <stddef.h>
#include <stdint.h>

#include "core/store/chunk.h"

#define FR_LABELSETS_MAX 16384

struct fr_labelsets;

struct fr_labelsets *fr_labelsets_new(void);
void fr_labelsets_free(struct fr_labelsets *ls);

/* The set of one observation: `fr` (fr_len bytes, 0: none) and `otel`
 * (otel_len bytes, 0: none) as copied; `keys` the OTel attribute key
 * names of the process (nkeys, may be 0), told apart from other
 * processes' by `keys_id` (0 with none). Returns its id (>= 1), or 0 for
 * no labels (both empty, or nothing left once checked). */
uint32_t fr_labelsets_intern(struct fr_labelsets *ls, const uint8_t *fr, size_t fr_len,
			     const uint8_t *otel, size_t otel_len, const char *const *keys,
			     uint32_t nkeys, uint64_t keys_id);

/* The set of set `base`'s pairs (0: none) with extra[0..n) added: the
 * recorder's own pairs (waker_comm, ran_instead, ...), kept whatever
 * their names (a key of base given again takes the extra's value); empty
 * keys or values are left out. Returns its id (>= 1), 0 when it has no
 * pairs. The table full: the table-full set, as fr_labelsets_intern. */
uint32_t fr_labelsets_plus(struct fr_labelsets *ls, uint32_t base, const struct fr_app_label *extra,
			   uint32_t n);

/* The same from base's pairs given (pairs[0..nb), which may be another
 * table's, borrowed for the call). */
uint32_t fr_labelsets_plus_pairs(struct fr_labelsets *ls, const struct fr_app_label *pairs,
				 uint32_t nb, const struct fr_app_label *extra, uint32_t n);

/* Ids never have bit 31 set: a caller holding two tables tells their ids
 * apart with it (recorder/tracking/applabels.c). */
#define FR_LABELSETS_ID_BITS 0x7fffffffu

/* The pairs of set `id` into out (at most FR_CHUNK_APP_PAIRS), borrowed
 * until the next call that changes `ls`; marks the set used by the chunk
 * being sealed. Returns how many, 0 for an unknown (or dropped) id. */
int fr_labelsets_pairs(struct fr_labelsets *ls, uint32_t id, struct fr_app_label *out);

/* After each seal: sets unused for two seals may go when room is needed. */
void fr_labelsets_sealed(struct fr_labelsets *ls);

/* The OTel attribute key names of a process context's payload (OTEP
 * 4719: a protobuf ProcessContext whose attribute
 * "threadlocal.attribute_key_map" is an array of strings) into keys, at
 * most `max`, each NUL-terminated ("" for one that is not a string under
 * FR_LABELSETS_KEY_LEN bytes without NULs). Reads nothing beyond `len`
 * bytes, whatever they hold. Returns how many. */
#define FR_LABELSETS_KEY_LEN 64
uint32_t fr_labelsets_key_map(const uint8_t *payload, size_t len,
			      char (*keys)[FR_LABELSETS_KEY_LEN], uint32_t max);

/* The bytes the table holds (its arrays and its sets); from any thread. */
uint64_t fr_labelsets_bytes(const struct fr_labelsets *ls);

/* Sets held now, observations that found the table full, and the walks
 * of the whole table that looked for sets to drop (at most one a seal). */
uint32_t fr_labelsets_count(const struct fr_labelsets *ls);
uint64_t fr_labelsets_full(const struct fr_labelsets *ls);
uint64_t fr_labelsets_sweeps(const struct fr_labelsets *ls);

#endif
