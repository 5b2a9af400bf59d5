/* User stacks of blocked threads, read on a thread of their own.
 *
 * The open waits of the eBPF off-CPU mechanism come with the saved user
 * registers of each blocked thread, not its user stack (the kernel walks
 * only the current task's). Reading it means reading another process's
 * memory, which its owner controls: a stack in a FUSE mapping that never
 * answers, or a userfaultfd region, would block the reader for as long as
 * the owner likes. So the ingest thread never reads it: it asks here and
 * finds the answer at a later seal (a second later), keyed by thread and
 * switch-out time, since a thread blocked in one wait keeps its stack. A
 * walker that hangs on such memory holds up only later walks (which are
 * then dropped and counted, and their records have the user IP alone),
 * never the recorder.
 *
 * Two ways, chosen at start:
 *  - stack_copy > 0 (the default): the walker copies stack_copy bytes of
 *    the stack from sp (process_vm_readv, page by page, so a stack whose
 *    mapping ends sooner gives what it has) into one of a bounded pool of
 *    buffers, and wakes the owner (fr_bpf_walk_fd); the owner unwinds the
 *    copies with the binaries' CFI on its own thread
 *    (fr_bpf_walk_collect), where the tables live, and the frames are
 *    kept for fr_bpf_walk_get;
 *  - stack_copy 0: the walker follows the frame-pointer chain itself.
 *
 * One thread asks and collects (the ingest thread); the walker answers.
 */
#ifndef FR_RECORDER_BPF_WALK_H
#define FR_RECORDER_BPF_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/bpf/labels_bpf.h"
#include "recorder/bpf/python_bpf.h"

struct fr_bpf_walk;

/* A blocked thread: tid of process pid, switched out at `start`, with its
 * user registers. */
struct fr_bpf_walk_regs {
	uint32_t pid, tid;
	uint64_t start;
	uint64_t ip, sp, bp;
	/* Its thread pointer, and where from it its process keeps its
	 * application labels (recorder/bpf/labels_bpf.h; 0: none): copied
	 * with the stack. */
	uint64_t tp;
	int64_t fr_off, otel_off;
	/* A Go program's: the g's slot, g.m, m.curg, g.labels and their
	 * kind (enum fr_bpf_go_kind; 0: not Go). */
	int32_t go_tls;
	uint16_t go_m, go_curg, go_labels;
	uint8_t go_kind;
	/* A CPython process's (py.runtime not 0): its layout, and the
	 * thread's state (0: looked for); its Python frames are read with
	 * the stack. */
	struct fr_bpf_py_proc py;
	uint64_t py_tstate;
};

/* Starts the walker: copies of `stack_copy` bytes (a multiple of 8 up to
 * 65528), or frame-pointer walks when 0. Returns 0 or -errno. */
int fr_bpf_walk_new(struct fr_bpf_walk **out, uint32_t stack_copy);

/* Stops the walker; one stuck in a read is left to finish on its own
 * (with its memory). Accepts NULL. */
void fr_bpf_walk_free(struct fr_bpf_walk *w);

/* An eventfd that polls readable when copies wait for
 * fr_bpf_walk_collect (stack_copy > 0), or -1. */
int fr_bpf_walk_fd(const struct fr_bpf_walk *w);

/* Unwinds the copy `stack` (len bytes that were at r->sp) of r's thread
 * into ips[0..room), leaf first; returns the frames written. */
typedef unsigned (*fr_bpf_walk_unwind_fn)(void *arg, const struct fr_bpf_walk_regs *r,
					  const uint8_t *stack, size_t len, uint64_t *ips,
					  unsigned room);

/* Turns the copy of a blocked thread's application labels into the set
 * its open wait carries (fr_sample.app_ref; 0: none). */
typedef uint32_t (*fr_bpf_walk_labels_fn)(void *arg, const struct fr_bpf_labels_rec *r);

/* Hands every copy the walker finished since the last call to `fn` (and
 * its labels' copy to `labels`, when not NULL), keeps the frames and the
 * set they give for fr_bpf_walk_get and gives the buffers back to the
 * walker. The owner's thread only. Returns how many. */
uint32_t fr_bpf_walk_collect(struct fr_bpf_walk *w, fr_bpf_walk_unwind_fn fn,
			     fr_bpf_walk_labels_fn labels, void *arg);

/* The user frames of `r`'s wait, leaf first, into ips (at most room), and
 * the set of its labels in *set (0: none), its Python frames into *py
 * (py->n 0: none; a struct fr_bpf_py_rec's pid, tid, kind and time are
 * the caller's to fill): returns how many frames when they were walked
 * (and unwound), else asks for a walk and returns 0. */
uint32_t fr_bpf_walk_get(struct fr_bpf_walk *w, const struct fr_bpf_walk_regs *r, uint64_t *ips,
			 uint32_t room, uint32_t *set, struct fr_bpf_py_rec *py);

/* Walks asked for, done (copied, or walked), and dropped because the
 * walker was behind; copies cut short (the stack's mapping ended first, or
 * memory could not be read). */
struct fr_bpf_walk_counts {
	uint64_t asked, done, dropped, short_copies;
};
void fr_bpf_walk_counts(struct fr_bpf_walk *w, struct fr_bpf_walk_counts *out);

#endif
