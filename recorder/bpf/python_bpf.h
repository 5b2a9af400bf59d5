/* Python frames read at the moment of a sample by eBPF: what the programs
 * (recorder/bpf/python_read.h, run by the labels program at each sample
 * and by the off-CPU program at each wait) and the recorder
 * (recorder/tracking/pystacks.c) share. Fixed-size types only, no libc.
 *
 * A CPython process is read when the recorder has put it in the map
 * `py_procs` (pid -> where its interpreter's state is and the layout of
 * the structures walked, from recorder/tracking/python_read.h's model).
 * At a sample of one of its threads the program finds the thread's
 * PyThreadState (the one whose thread_id, the pthread_t, is the thread's
 * fs base), walks its chain of frames and sends, innermost first, each
 * frame's code object address and instruction pointer (or 3.10's
 * f_lasti), with the thread and the time. A thread with none sends an
 * empty record, so the recorder never joins a sample to another moment's
 * frames.
 */
#ifndef FR_RECORDER_PYTHON_BPF_H
#define FR_RECORDER_PYTHON_BPF_H

#include <linux/types.h>

/* Frames sent at most (the rest of the chain is cut; a deeper native
 * stack holds no more anyway: FR_MAX_FRAMES in all). */
#define FR_BPF_PY_DEPTH 96
/* Steps of a chain walked: frames and, between them, 3.12+'s shims. */
#define FR_BPF_PY_STEPS (FR_BPF_PY_DEPTH + 32)
/* Thread states looked through for a thread not in the cache, at most. */
#define FR_BPF_PY_THREAD_STEPS 256
/* Bytes of a frame read at once: every field walked lies in them. */
#define FR_BPF_PY_FRAME_READ 128
/* An offset that is not in this release. */
#define FR_BPF_PY_NONE 0xffff

/* py_procs value: the address of _PyRuntime in the process, and where
 * the fields are (bytes from the start of their struct; the recorder
 * checks each fits). */
struct fr_bpf_py_proc {
	__u64 runtime;
	__u16 rt_interp_head;
	__u16 is_next, is_threads_head;
	__u16 ts_next, ts_thread_id;
	/* The innermost frame: at ts_frame (3.10, 3.13), or at cf_frame of
	 * the struct ts_cframe points to (3.11, 3.12). */
	__u16 ts_frame, ts_cframe, cf_frame;
	__u16 fr_previous, fr_code, fr_instr;
	__u16 fr_is_entry; /* 3.11's bool; FR_BPF_PY_NONE */
	__u16 fr_owner;	   /* 3.12+'s char; FR_BPF_PY_NONE */
	__u8 cstack_owner; /* the owner value of a C stack's shim frame */
	__u8 fr_len;	   /* bytes of a frame read, <= FR_BPF_PY_FRAME_READ */
	__u8 pad[4];
};

/* py_threads value (key: the thread id): the thread state found for the
 * thread while its fs base was `fsbase`; tstate 0: none was, at `miss`
 * (CLOCK_MONOTONIC ns; looked for again a second later). */
struct fr_bpf_py_thread {
	__u64 tstate, fsbase, miss;
};

/* Kinds, in the labels program's ring buffer beside enum
 * fr_bpf_labels_kind and in the off-CPU program's beside enum
 * fr_bpf_wait_kind (values apart from both). */
enum fr_bpf_py_kind {
	FR_BPF_PY_WAIT = 5,	/* the frames of the off-CPU wait that follows
				 * in its ring buffer, of the same thread */
	FR_BPF_PY_SAMPLE = 0x11 /* at a perf sample, before it */
};

/* Set in fr_bpf_py_frame.code: the frame began a C-level call of the
 * eval loop (code objects are 8-byte aligned). */
#define FR_BPF_PY_ENTRY 1ull

struct fr_bpf_py_frame {
	__u64 code;  /* | FR_BPF_PY_ENTRY */
	__u64 instr; /* the instruction pointer; 3.10: f_lasti */
};

/* fr_bpf_py_rec.status */
enum fr_bpf_py_status {
	FR_BPF_PY_OK = 0,
	FR_BPF_PY_NO_THREAD = 1, /* no thread state of this thread */
	FR_BPF_PY_CUT = 2,	 /* the chain went on past FR_BPF_PY_STEPS */
	FR_BPF_PY_FAULT = 3,	 /* a read failed: the frames up to it */
};

struct fr_bpf_py_rec {
	__u32 kind;
	__u32 pid, tid;
	__u16 n;      /* frames */
	__u16 status; /* enum fr_bpf_py_status */
	__u64 time;   /* CLOCK_MONOTONIC ns */
	struct fr_bpf_py_frame f[FR_BPF_PY_DEPTH];
};
#define FR_BPF_PY_REC_HEAD 24

struct fr_bpf_py_counters {
	__u64 samples; /* walks of a thread of a process in py_procs */
	__u64 frames;
	__u64 lookups; /* thread state look-ups (not in the cache) */
	__u64 faults;
	__u64 drops; /* records the ring buffer had no room for */
};

#endif
