/* User stacks of blocked threads, walked by frame pointers on a thread of
 * their own.
 *
 * The open waits of the eBPF off-CPU mechanism come with the saved user
 * registers of each blocked thread, not its user stack (the kernel walks
 * only the current task's). Walking the frame-pointer chain means reading
 * another process's memory, which its owner controls: a chain through a
 * FUSE mapping that never answers, or a userfaultfd region, would block
 * the reader for as long as the owner likes. So the ingest thread never
 * reads it: it asks here and finds the answer at a later seal (a second
 * later), keyed by thread and switch-out time, since a thread blocked in
 * one wait keeps its stack. A walker that hangs on such memory holds up
 * only later walks (which are then dropped, and their records have the
 * user IP alone), never the recorder.
 *
 * One thread asks (the ingest thread); the walker answers.
 */
#ifndef FR_RECORDER_BPF_WALK_H
#define FR_RECORDER_BPF_WALK_H

#include <stdint.h>

struct fr_bpf_walk;

/* A blocked thread: tid of process pid, switched out at `start`, with its
 * user registers. */
struct fr_bpf_walk_regs {
	uint32_t pid, tid;
	uint64_t start;
	uint64_t ip, sp, bp;
};

/* Starts the walker. Returns 0 or -errno. */
int fr_bpf_walk_new(struct fr_bpf_walk **out);

/* Stops the walker; one stuck in a read is left to finish on its own
 * (with its memory). Accepts NULL. */
void fr_bpf_walk_free(struct fr_bpf_walk *w);

/* The user frames of `r`'s wait, leaf first, into ips (at most room):
 * returns how many when they were walked, else asks for a walk and
 * returns 0. */
uint32_t fr_bpf_walk_get(struct fr_bpf_walk *w, const struct fr_bpf_walk_regs *r, uint64_t *ips,
			 uint32_t room);

/* Walks asked for, done, and dropped because the walker was behind. */
void fr_bpf_walk_counts(struct fr_bpf_walk *w, uint64_t *asked, uint64_t *done, uint64_t *dropped);

#endif
