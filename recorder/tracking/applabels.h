/* Application labels: the labels programs set with libflightrec
 * (lib/flightrec/labels.h), and the OpenTelemetry thread context (trace
 * and span ids, attributes) of programs that publish it, as they were at
 * the moment of each sample.
 *
 * An eBPF program attached to the sampling events (recorder/sampling/bpf_labels.h)
 * copies a thread's current label record(s) at each sample of a process
 * it was told to read, and the off-CPU program does the same for a wait
 * where the thread returns to user space; this module decides which
 * processes those are and where their threads keep their labels, turns
 * the copies into sets (recorder/tracking/labelsets.h; a Go program's
 * pprof labels, recorder/tracking/golabels.h, join them), and gives each sample its
 * set when a chunk is sealed: a cpu sample the copy its thread sent just
 * before it, an off-CPU wait the copy sent with it (fr_sample.app_ref).
 *
 * Finding a process's labels reads its files and memory, which its owner
 * controls: the mapped libflightrec.so's dynamic symbols and the
 * registry they point to (lib/flightrec/labels_abi.h), the executable's
 * `otel_thread_ctx_v1` thread-local; on a thread of its own, each on a
 * deadline worker, once per process, so the ingest thread never waits for
 * one (a process that lies or stalls is not read, and its samples say
 * why: "flightrec.labels" = "unreadable: ...").
 *
 * Not thread-safe: owned by the ingest thread.
 */
#ifndef FR_RECORDER_APPLABELS_H
#define FR_RECORDER_APPLABELS_H

#include <stdint.h>

#include "core/store/chunk.h"
#include "recorder/bpf/labels_bpf.h"
#include "recorder/tracking/tracker.h"

struct fr_applabels;

/* Loads the eBPF program; without it (no BPF here) samples carry no
 * application labels, and fr_applabels_error says why. */
struct fr_applabels *fr_applabels_new(struct fr_tracker *t);
void fr_applabels_free(struct fr_applabels *al);

/* The same look-ups map the allocation ring of a process with
 * libflightrec (recorder/sampling/allocs.h) and hand it to `allocs`
 * (borrowed; NULL: not read). Before the ingest loop runs. */
struct fr_allocs;
void fr_applabels_set_allocs(struct fr_applabels *al, struct fr_allocs *allocs);

/* Why labels are not read (NULL when they are). */
const char *fr_applabels_error(const struct fr_applabels *al);

/* The program to attach to each sampling event, and the process map the
 * off-CPU program shares; -1 without BPF. */
int fr_applabels_prog_fd(const struct fr_applabels *al);
int fr_applabels_map_fd(const struct fr_applabels *al);

/* The Python frames' maps, for the off-CPU program to share (-1s without
 * BPF). */
void fr_applabels_py_map_fds(const struct fr_applabels *al, int *procs, int *threads);

/* The descriptors to poll: readable when copies wait, and when look-ups
 * were answered (-1 without BPF). */
int fr_applabels_fd(const struct fr_applabels *al);
int fr_applabels_lookup_fd(const struct fr_applabels *al);

/* The ops to seal a chunk with: the tracker's, and the application labels
 * of each sample (Unix sample times; `clock_offset` makes the copies'
 * monotonic times Unix ones, as the samples were). */
const struct fr_chunk_meta_ops *fr_applabels_ops(struct fr_applabels *al, int64_t clock_offset);

/* On the ingest thread's wake-ups: drains the copies, and looks for the
 * labels of a few processes asked about since. */
void fr_applabels_poll(struct fr_applabels *al, int64_t clock_offset);

/* How long the ingest thread may sleep before a look-up is due (ms; -1:
 * none is waiting): a library just mapped is looked up again in a few
 * milliseconds, once its constructor has run. */
int fr_applabels_timeout_ms(const struct fr_applabels *al);

/* A copy that came with an off-CPU wait (recorder/sampling/bpf_offcpu.c), or of a
 * blocked thread's labels (its stack reader): the set to put in the
 * wait's fr_sample.app_ref (0: none). */
uint32_t fr_applabels_intern(struct fr_applabels *al, const struct fr_bpf_labels_rec *r);

/* Set `base` (an app_ref, 0: none) with the recorder's pairs extra[0..n)
 * added (fr_labelsets_plus): a wakeup's waker, a runqueue delay's
 * ran_instead. Returns the set to put in fr_sample.app_ref (0: none). */
uint32_t fr_applabels_plus(struct fr_applabels *al, uint32_t base, const struct fr_app_label *extra,
			   uint32_t n);

/* The same for a black-box event's fields (an exit's cpu_ns and sender,
 * an exec's path, a crash's signal) on `base`, a thread's labels (a set
 * of the programs' table, as fr_applabels_plus takes): a table of their
 * own, so that a
 * storm of processes ending, each set of fields new, never crowds out
 * the applications' label sets (a full one marks the events' fields
 * "dropped", not the programs' labels). */
uint32_t fr_applabels_plus_event(struct fr_applabels *al, uint32_t base,
				 const struct fr_app_label *extra, uint32_t n);

/* A libflightrec mapping or an exec was seen for `pid`: its labels are
 * looked for (again). */
void fr_applabels_mapped(struct fr_applabels *al, uint32_t pid, const char *path);
void fr_applabels_exec(struct fr_applabels *al, uint32_t pid);

/* The Python frames of CPython processes (found by the same look-ups,
 * their records drained with the labels' copies); NULL without BPF. */
struct fr_pystacks *fr_applabels_pystacks(struct fr_applabels *al);

/* After each seal: copies older than the chunks still to come are
 * dropped, processes without samples for a minute forgotten. */
void fr_applabels_sealed(struct fr_applabels *al);

/* The eBPF program's counters (any thread). */
void fr_applabels_bpf_counts(const struct fr_applabels *al, struct fr_bpf_labels_counters *out);

/* Counters for status: processes whose labels are read, and those that
 * could not be. */
void fr_applabels_counts(const struct fr_applabels *al, uint32_t *labelled, uint32_t *unreadable);

/* Go programs whose pprof labels are read, and those whose could not be
 * (since the start). Ingest thread. */
void fr_applabels_go_counts(const struct fr_applabels *al, uint32_t *go, uint64_t *skipped);

/* The bytes the label sets' table holds; from any thread. */
uint64_t fr_applabels_memory(const struct fr_applabels *al);

#endif
