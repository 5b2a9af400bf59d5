/* The records of the black box's eBPF program (recorder/bpf/events.bpf.c)
 * to the recorder (recorder/sampling/bpf_events.c): shared by both sides,
 * so only fixed-size types and no libc.
 *
 * On its ring buffer, one record per occurrence:
 *   struct fr_bpf_ev_exec   a process executed a new program
 *   struct fr_bpf_ev_exit   a process ended (its last thread exited)
 *   struct fr_bpf_ev_crash  a fatal core-dumping signal was delivered with
 *                           its default action: the faulting thread's
 *                           kernel stack, its user registers and a copy of
 *                           its user stack (unwound by the recorder with
 *                           CFI), and its application labels
 */
#ifndef FR_RECORDER_EVENTS_BPF_H
#define FR_RECORDER_EVENTS_BPF_H

#include <linux/types.h>

#include "recorder/bpf/labels_bpf.h"
#include "recorder/bpf/offcpu_bpf.h"

/* Values apart from the off-CPU and labels kinds (1..5, 0x10). */
enum fr_bpf_ev_kind {
	FR_BPF_EV_EXEC = 0x21,
	FR_BPF_EV_EXIT = 0x22,
	FR_BPF_EV_CRASH = 0x23,
};

/* Bytes of the executed file's name copied (with its NUL). */
#define FR_BPF_EV_PATH_MAX 256

struct fr_bpf_ev_head {
	__u32 kind;
	__u32 pid, tid; /* tgid and thread id */
	__u32 cpu;
	__u64 time; /* CLOCK_MONOTONIC ns */
	char comm[16];
};

struct fr_bpf_ev_exec {
	struct fr_bpf_ev_head h;
	__u32 ppid;	/* the real parent's tgid */
	__u32 old_pid;	/* the thread that called execve (its tid before) */
	__u32 path_len; /* bytes of path, its NUL excluded */
	__u32 _pad;
	char path[FR_BPF_EV_PATH_MAX];
};

/* fr_bpf_ev_exit.flags */
#define FR_BPF_EV_GROUP_EXIT 1u /* code is the group's (exit_group, a fatal signal) */
#define FR_BPF_EV_SENDER 2u	/* killed by a signal another process (or it) sent: sender_* */
#define FR_BPF_EV_SENDER_KERNEL \
	4u /* killed by a signal the kernel sent (SI_KERNEL: the OOM
				    * killer, a CPU time limit...) */

struct fr_bpf_ev_exit {
	struct fr_bpf_ev_head h;
	__u32 code; /* as wait(2) reports it: status << 8, or the signal
		     * (| 0x80 when it dumped core) */
	__u32 flags;
	__u64 lifetime_ns; /* since the process started (its leader's start) */
	__u64 cpu_ns;	   /* the scheduler's runtime of all its threads */
	/* With FR_BPF_EV_SENDER: who sent the signal it died of (kill(2),
	 * tgkill(2), sigqueue(3)), as the sender's process, real uid and
	 * comm at that moment. */
	__u32 sender_pid, sender_uid;
	char sender_comm[16];
};

/* The last sender of a signal to a process (key: tgid << 8 | signal),
 * kept by the program for its exit. */
struct fr_bpf_ev_sender {
	__u64 time; /* CLOCK_MONOTONIC ns */
	__u32 pid, uid;
	__s32 code; /* si_code: <= 0 sent by a process, SI_KERNEL by the kernel */
	__u32 _pad;
	char comm[16];
};

/* fr_bpf_ev_crash.flags */
#define FR_BPF_EV_HAS_ADDR 1u	/* addr is the fault address the kernel gave */
#define FR_BPF_EV_HAS_LABELS 2u /* labels holds the thread's application labels */
#define FR_BPF_EV_HAS_REGS 4u	/* ip, sp, bp are its user registers */

/* A record of sizeof + the program's stack_copy bytes: nr_user bytes of
 * `stack` were read from the thread's memory at sp. */
struct fr_bpf_ev_crash {
	struct fr_bpf_ev_head h;
	__s32 sig;
	__s32 code; /* si_code */
	__u64 addr; /* si_addr, with FR_BPF_EV_HAS_ADDR */
	__u32 flags;
	__u32 nr_kernel; /* frames of kips */
	__u32 nr_user;	 /* bytes of stack */
	__u32 _pad;
	__u64 ip, sp, bp;
	__u64 kips[FR_BPF_FRAMES];
	struct fr_bpf_labels_rec labels;
	__u8 stack[];
};

/* Per-CPU counters: records sent and those the ring buffer had no room
 * for, by kind (index kind - FR_BPF_EV_EXEC). */
#define FR_BPF_EV_KINDS 3
struct fr_bpf_ev_counters {
	__u64 sent[FR_BPF_EV_KINDS];
	__u64 drops[FR_BPF_EV_KINDS];
	__u64 copy_short; /* crash stack copies cut short */
};

/* The largest stack copy of a crash (a multiple of 8). */
#define FR_BPF_EV_STACK_MAX 32768u

#endif
