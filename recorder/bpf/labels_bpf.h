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
 *   go      a Go program's pprof labels: the goroutine the thread runs
 *           (g at the thread pointer + go_tls, its m's curg), its
 *           `labels`: up to Go 1.23 a map[string]string (the buckets of
 *           its hash map), from 1.24 a slice of {key, value} strings;
 *           at most FR_BPF_LABELS_GO_PAIRS pairs, each string's first
 *           bytes with its length
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

/* Go labels: pairs, and the bytes of a key and of a value copied (a
 * longer string is known by its length, and not taken). */
#define FR_BPF_LABELS_GO_PAIRS 8
#define FR_BPF_LABELS_GO_KEY 32
#define FR_BPF_LABELS_GO_VALUE 64

/* fr_bpf_label_proc.go_kind: how the goroutine's labels are kept. */
enum fr_bpf_go_kind {
	FR_BPF_GO_NONE = 0,
	FR_BPF_GO_MAP = 1,   /* *map[string]string (Go 1.16 ... 1.23) */
	FR_BPF_GO_SLICE = 2, /* *struct{ []struct{key, value string} } (1.24 on) */
};

/* label_procs value. An offset of 0 is none (a thread-local is never at
 * the thread pointer itself). */
struct fr_bpf_label_proc {
	__s64 fr_off;	/* libflightrec's `fr_labels_current` */
	__s64 otel_off; /* `otel_thread_ctx_v1` (static TLS) */
	/* Go: the current g's slot from the thread pointer (-8 for most
	 * programs), the offsets of g.m, m.curg and g.labels. */
	__s32 go_tls;
	__u16 go_m, go_curg, go_labels;
	__u8 go_kind; /* enum fr_bpf_go_kind */
	__u8 pad[5];
};

/* One Go label: the lengths the strings have in the process, and their
 * first bytes. */
struct fr_bpf_go_pair {
	__u64 klen, vlen;
	__u8 k[FR_BPF_LABELS_GO_KEY];
	__u8 v[FR_BPF_LABELS_GO_VALUE];
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
	__u16 go_n;    /* pairs in go (0: none) */
	__u16 go_more; /* 1: the goroutine had pairs not copied */
	__u32 go_pad;
	struct fr_bpf_go_pair go[FR_BPF_LABELS_GO_PAIRS];
};

struct fr_bpf_labels_counters {
	__u64 samples; /* samples of processes in label_procs */
	__u64 drops;   /* records the ring buffer had no room for */
	__u64 faults;  /* reads of a process's memory that failed */
};

#endif
