/* The eBPF side of application labels (recorder/bpf/labels.bpf.c): loads
 * the program that copies a thread's label records at each sample, keeps
 * the map of the processes it reads (pid -> where their threads keep
 * their labels), attaches the program to sampling events, and drains its
 * ring buffer. Owned by recorder/tracking/applabels.c (the ingest thread); the map
 * is shared with the off-CPU program, which copies the labels of a wait
 * where the thread returns to user space.
 */
#ifndef FR_RECORDER_BPF_LABELS_H
#define FR_RECORDER_BPF_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/bpf/labels_bpf.h"
#include "recorder/bpf/python_bpf.h"

struct fr_bpf_labels;

/* Loads the program. Returns 0, or -errno with the reason in `err`. */
int fr_bpf_labels_open(struct fr_bpf_labels **out, char *err, size_t errlen);

/* Frees; accepts NULL. */
void fr_bpf_labels_close(struct fr_bpf_labels *b);

/* The program's descriptor (to attach to a perf event with
 * PERF_EVENT_IOC_SET_BPF) and the map's (to reuse in another program). */
int fr_bpf_labels_prog_fd(const struct fr_bpf_labels *b);
int fr_bpf_labels_map_fd(const struct fr_bpf_labels *b);

/* Reads process `pid` from now on, where `v` says (offsets from the
 * thread pointer, 0: none; Go's runtime offsets); fr_bpf_labels_forget
 * stops. Return 0 or -errno. */
int fr_bpf_labels_set(struct fr_bpf_labels *b, uint32_t pid, const struct fr_bpf_label_proc *v);
int fr_bpf_labels_forget(struct fr_bpf_labels *b, uint32_t pid);

/* The same for the Python frames of CPython process `pid` (its
 * interpreter's layout; recorder/bpf/python_bpf.h); the maps' descriptors,
 * for the off-CPU program to share them. */
int fr_bpf_labels_py_set(struct fr_bpf_labels *b, uint32_t pid, const struct fr_bpf_py_proc *v);
int fr_bpf_labels_py_forget(struct fr_bpf_labels *b, uint32_t pid);
int fr_bpf_labels_py_map_fd(const struct fr_bpf_labels *b);
int fr_bpf_labels_py_threads_fd(const struct fr_bpf_labels *b);
void fr_bpf_labels_py_counts(const struct fr_bpf_labels *b, struct fr_bpf_py_counters *out);

/* The descriptor that polls readable when the ring buffer is half full. */
int fr_bpf_labels_fd(const struct fr_bpf_labels *b);

/* Hands every record of the ring buffer to fn, or to py for Python
 * frames (`size` bytes: FR_BPF_PY_REC_HEAD and r->n frames; either may
 * be NULL). Returns how many. */
uint32_t fr_bpf_labels_drain(struct fr_bpf_labels *b,
			     void (*fn)(void *arg, const struct fr_bpf_labels_rec *r),
			     void (*py)(void *arg, const struct fr_bpf_py_rec *r, size_t size),
			     void *arg);

/* The program's counters, summed over CPUs. */
void fr_bpf_labels_counts(const struct fr_bpf_labels *b, struct fr_bpf_labels_counters *out);

#endif
