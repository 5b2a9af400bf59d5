/* Application labels read at the moment of a sample by eBPF: what the
 * programs (recorder/bpf/labels.bpf.c, and the off-CPU program's task
 * work, recorder/bpf/offcpu.bpf.c) and the recorder (recorder/sampling/bpf_labels.c)
 * share. Fixed-size types only, no libc.
 *
 * A process is read when the recorder has put it in the map
 * `label_procs` (pid -> where its threads keep their labels, relative to
 * the thread pointer). At each sample of one of its threads the program
 * follows the pointer(s) there and copies the record(s) whole, bounded:
 *   fr      libflightrec's current-labels record
 *           (lib/flightrec/labels_abi.h, struct fr_labels_record_abi)
 *   otel    the OpenTelemetry thread context record (OTEP 4947): trace
 *           id, span id, valid, flags, attribute bytes
 * and sends them with the thread and the time (struct fr_bpf_labels_rec). An
 * empty record (length 0) says the thread had none then; a thread of a
 * process in the map is always sent, so the recorder never joins a
 * sample to an older moment's labels.
 */
#ifndef FR_RECORDER_LABELS_BPF_H
#define FR_RECORDER_LABELS_BPF_H

#include <linux/types.h>

/* sizeof(struct fr_labels_record_abi): magic, valid, npairs, size, data. */
#define FR_BPF_LABELS_FR_MAX 776
#define FR_BPF_LABELS_FR_HEAD 8
/* An OTel thread context record: 28 bytes of header, at most 612 of
 * attributes (the specification's recommended 640 in all). */
#define FR_BPF_LABELS_OTEL_MAX 640
#define FR_BPF_LABELS_OTEL_HEAD 28

/* label_procs value. An offset of 0 is none (a thread-local is never at
 * the thread pointer itself). */
struct fr_bpf_label_proc {
	__s64 fr_off;	/* libflightrec's `fr_labels_current` */
	__s64 otel_off; /* `otel_thread_ctx_v1` (static TLS) */
};

/* fr_bpf_labels_rec.kind (in the off-CPU program's ring buffer beside
 * enum fr_bpf_wait_kind, recorder/bpf/offcpu_bpf.h: values apart). */
enum fr_bpf_labels_kind {
	FR_BPF_LABELS_WAIT = 3,	     /* the labels of the off-CPU wait that follows
				      * in its ring buffer, of the same thread */
	FR_BPF_LABELS_SAMPLE = 0x10, /* at a perf sample: `time` a few microseconds
				      * before the sample's */
};

struct fr_bpf_labels_rec {
	__u32 kind;
	__u32 pid, tid;
	__u16 fr_len;	/* bytes of fr (0: none) */
	__u16 otel_len; /* bytes of otel (0: none) */
	__u64 time;	/* CLOCK_MONOTONIC ns */
	__u8 fr[FR_BPF_LABELS_FR_MAX];
	__u8 otel[FR_BPF_LABELS_OTEL_MAX];
};

struct fr_bpf_labels_counters {
	__u64 samples; /* samples of processes in label_procs */
	__u64 drops;   /* records the ring buffer had no room for */
	__u64 faults;  /* reads of a process's memory that failed */
};

#endif
