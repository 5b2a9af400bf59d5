/* The memory layout through which a process's labels reach the recorder
 * (version 1). The library (lib/labels.c) writes it in the process's own
 * memory; the recorder (recorder/applabels.c) reads it from outside with
 * process_vm_readv and trusts nothing in it. Little-endian, native
 * alignment of x86-64 and aarch64 (every field at its natural offset).
 *
 * The root is the exported object `fr_labels_registry` (struct
 * fr_labels_registry_abi), found by the recorder through the dynamic
 * symbol table of the mapped libflightrec.so. It holds the addresses of
 * three arrays in the process:
 *   sets[max_sets]       each distinct label set once; set id k (1 ..
 *                        nsets) is sets[k - 1], id 0 is the empty set. A
 *                        set is written once, before its id is published
 *                        (ready = 1), and never changes after.
 *   tids[max_threads]    the tid of each thread slot (0: never used), a
 *                        copy of threads[i].tid the recorder scans to find
 *                        the slots of the threads it has samples of.
 *   threads[max_threads] per thread: its tid, and its log: the last
 *                        log_len changes of its labels, each (time, set
 *                        id, seq). Change number n (from 0) is in
 *                        log[n % log_len] with seq = n + 1 (low 32 bits),
 *                        and head = changes written so far.
 *
 * Writing a change (the owning thread only): seq = 0, time, set, seq =
 * n + 1 (release), head = n + 1 (release). Reading a thread without
 * locks: head h1, then the log, then head h2 (three reads, each a
 * system call, so ordered); change k is trusted when max(h1, h2 + 1) -
 * log_len <= k < h1 and its seq is k + 1: it was complete before the log
 * was read and not overwritten until after. The times are
 * CLOCK_MONOTONIC nanoseconds (the clock of perf samples) and never
 * decrease along a log.
 *
 * A set id at or above FR_LABELS_SET_DROPPED is no set: the change was
 * dropped for reason id - FR_LABELS_SET_DROPPED (enum fr_labels_drop).
 *
 * Another shape (the OpenTelemetry profiler's custom-labels thread-local
 * ABI) would be read at sample time instead: docs/architecture.md,
 * "Application labels".
 */
#ifndef FLIGHTREC_LABELS_ABI_H
#define FLIGHTREC_LABELS_ABI_H

#include <stdint.h>

#include "flightrec/labels.h"

#define FR_LABELS_ABI_MAGIC 0x534c424c43455246ull /* "FRECLBLS" */
#define FR_LABELS_ABI_VERSION 1
#define FR_LABELS_LOG_LEN 256
#define FR_LABELS_SET_DROPPED 0xffffff00u
#define FR_LABELS_REGISTRY_SYMBOL "fr_labels_registry"

struct fr_labels_pair_abi {
	char key[FR_LABELS_KEY_MAX];
	char value[FR_LABELS_VALUE_MAX];
};

struct fr_labels_set_abi {
	uint32_t npairs; /* pairs sorted by key, distinct keys */
	uint32_t ready;
	struct fr_labels_pair_abi pairs[FR_LABELS_MAX_KEYS];
};

struct fr_labels_entry_abi {
	int64_t time_ns;
	uint32_t set;
	uint32_t seq;
};

struct fr_labels_thread_abi {
	uint32_t tid;
	uint32_t state; /* 0 free, 1 live, 2 exited (log kept until reused) */
	uint64_t head;
	struct fr_labels_entry_abi log[FR_LABELS_LOG_LEN];
};

struct fr_labels_registry_abi {
	uint64_t magic;
	uint32_t version;
	uint32_t size; /* sizeof(struct fr_labels_registry_abi) */
	uint32_t max_keys, key_max, value_max, max_sets, max_threads, log_len;
	uint32_t nsets; /* sets published so far (<= max_sets) */
	uint32_t reserved;
	uint64_t sets, tids, threads; /* addresses in the process */
	uint64_t dropped[FR_LABELS_DROP_COUNT];
};

#endif
