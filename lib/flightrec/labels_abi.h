/* The memory layout through which a process's labels reach the recorder
 * (version 2). The library (lib/labels.c) writes it in the process's own
 * memory; the recorder reads it from outside, at the moment of each sample
 * (an eBPF program attached to the sampling events and to the scheduler,
 * recorder/bpf/labels.bpf.h), and trusts nothing in it. Little-endian,
 * native alignment of x86-64 and aarch64 (every field at its natural
 * offset).
 *
 * The root is the exported object `fr_labels_registry` (struct
 * fr_labels_registry_abi), found by the recorder through the dynamic
 * symbol table of the mapped libflightrec.so. It says where, relative to a
 * thread's thread pointer (fsbase on x86-64, TPIDR_EL0 on aarch64), each
 * thread keeps the pointer to its current labels:
 *
 *   *(const struct fr_labels_record_abi **)(tp + tls_offset)
 *
 * (the library's initial-exec thread-local `fr_labels_current`: the same
 * offset for every thread of the process). NULL: the thread has no labels.
 *
 * A record is written only by its thread, and only while no reader can
 * see it: each thread has two, and a change fills the one not pointed to,
 * then stores the pointer (a compiler fence before: the recorder reads
 * while the thread is interrupted or switched out, never concurrently
 * with its own code, so the order of the thread's own stores is all that
 * matters). So a reader that follows the pointer at a sample finds a
 * whole record: the labels in force at that instruction. This is the
 * protocol of the OpenTelemetry thread context (OTEP 4947, "pointer
 * swap"); the record differs (its keys are inline, not indexes into a
 * process-wide key table), see docs/architecture.md, "Application labels".
 *
 * A record: magic, valid = 1, npairs pairs of (u8 key length, key bytes,
 * u8 value length, value bytes), `size` bytes of them; keys distinct,
 * sorted, each shorter than FR_LABELS_KEY_MAX, values shorter than
 * FR_LABELS_VALUE_MAX, no NULs. A change the library dropped is recorded
 * as the single pair ("flightrec.labels", "dropped: REASON"): the pointer
 * then goes to a constant record the library shares between threads and
 * never writes, which keeps the protocol.
 *
 * x86-64: the thread pointer is the FS base, and tls_offset is negative;
 * the recorder reads the FS base the kernel saved for the thread. (On
 * aarch64 it would be TPIDR_EL0, with a positive offset: the recorder's
 * eBPF reader is x86-64 only today.)
 */
#ifndef FLIGHTREC_LABELS_ABI_H
#define FLIGHTREC_LABELS_ABI_H

#include <stdint.h>

#include "flightrec/labels.h"

#define FR_LABELS_ABI_MAGIC 0x534c424c43455246ull /* "FRECLBLS" */
#define FR_LABELS_ABI_VERSION 2
#define FR_LABELS_REGISTRY_SYMBOL "fr_labels_registry"
#define FR_LABELS_RECORD_MAGIC 0x424c5246u /* "FRLB" */
#define FR_LABELS_DROPPED_SLOTS 16
/* The most bytes of pairs a record holds. */
#define FR_LABELS_RECORD_DATA_MAX \
	(FR_LABELS_MAX_KEYS * (2 + (FR_LABELS_KEY_MAX - 1) + (FR_LABELS_VALUE_MAX - 1)))

struct fr_labels_record_abi {
	uint32_t magic; /* FR_LABELS_RECORD_MAGIC */
	uint8_t valid;	/* 1 */
	uint8_t npairs; /* <= FR_LABELS_MAX_KEYS */
	uint16_t size;	/* bytes of data used */
	uint8_t data[FR_LABELS_RECORD_DATA_MAX];
};

struct fr_labels_registry_abi {
	uint64_t magic;
	uint32_t version;
	uint32_t size; /* sizeof(struct fr_labels_registry_abi) */
	uint32_t max_keys, key_max, value_max;
	uint32_t record_size; /* sizeof(struct fr_labels_record_abi) */
	int64_t tls_offset;   /* of the current record's pointer, from the
			       * thread pointer */
	/* Changes dropped, by enum fr_labels_drop; a fixed size, so that new
	 * reasons do not change the registry's. */
	uint64_t dropped[FR_LABELS_DROPPED_SLOTS];
};
_Static_assert(FR_LABELS_DROP_COUNT <= FR_LABELS_DROPPED_SLOTS, "drop reasons fit the registry");

#endif
