/* Every goroutine of a Go process, read from its memory while it runs
 * (flightrec goroutines; the request in recorder/requests/goroutines.c):
 * the runtime's list of them (runtime.allgs), each goroutine's id,
 * state, wait reason, when its wait was first seen by the runtime, its
 * creator, its pprof labels and its stack, unwound with the program's
 * own pcsp tables (core/symbols/gopclntab.h) as Go's tracebacks are.
 *
 * Nothing is stopped: the goroutines change while they are read. Each is
 * read, its stack walked, then its g read again; a goroutine whose state
 * or saved registers changed in between is read once more, and if it
 * changed again it is given with its state and no stack (stack
 * FR_GSTACK_CHANGED), never with a stack pieced together from two
 * moments. A goroutine on a CPU has its registers in the CPU, not in
 * memory: its stack is not read (FR_GSTACK_RUNNING).
 *
 * The memory is another user's: every pointer read is only used through
 * `vread` (which fails on an unmapped address), every count is bounded,
 * every walk has a step limit, and garbage gives fewer goroutines or
 * frames, never a loop or a read out of bounds of our own buffers.
 */
#ifndef FR_RECORDER_GOROUTINES_READ_H
#define FR_RECORDER_GOROUTINES_READ_H

#include <stddef.h>
#include <stdint.h>

#include "core/symbols/go_exe.h"

#define FR_GOROUTINE_DEPTH 100
#define FR_GOROUTINE_LABELS 32
#define FR_GOROUTINE_KEY_MAX 64
#define FR_GOROUTINE_VALUE_MAX 128

/* Go's goroutine states (runtime2.go), the scan bit taken off. */
enum fr_gstatus {
	FR_G_IDLE = 0,
	FR_G_RUNNABLE = 1,
	FR_G_RUNNING = 2,
	FR_G_SYSCALL = 3,
	FR_G_WAITING = 4,
	FR_G_DEAD = 6,
	FR_G_COPYSTACK = 8,
	FR_G_PREEMPTED = 9,
};

enum fr_gstack {
	FR_GSTACK_OK = 0,
	FR_GSTACK_RUNNING, /* on a CPU: not read */
	FR_GSTACK_CHANGED, /* changed under the reader twice */
	FR_GSTACK_CUT,	   /* deeper than FR_GOROUTINE_DEPTH: the innermost kept */
};

struct fr_goroutine {
	uint64_t gaddr, goid;
	uint64_t parent; /* creator's goid; 0: unknown */
	uint32_t status; /* enum fr_gstatus */
	uint32_t waitreason;
	int64_t waitsince;	/* CLOCK_MONOTONIC ns the runtime first saw the wait; 0 */
	uint64_t gopc, startpc; /* link-time addresses (the load bias taken off) */
	uint64_t sched_pc, sched_sp;
	uint32_t tid;	  /* the thread of a goroutine running or in a system call */
	int tracking_seq; /* -1: not in this release */
	enum fr_gstack stack;
	/* Return addresses, innermost first, link-time. */
	uint32_t npc;
	uint64_t pc[FR_GOROUTINE_DEPTH];
	uint32_t nlabels;
	int labels_more; /* more pairs than were read */
	struct {
		char k[FR_GOROUTINE_KEY_MAX], v[FR_GOROUTINE_VALUE_MAX];
	} labels[FR_GOROUTINE_LABELS];
};

struct fr_goroutines_stats {
	uint64_t listed;  /* goroutines given to the callback */
	uint64_t changed; /* of them, FR_GSTACK_CHANGED */
	uint64_t skipped; /* entries of the list idle, dead, or not a g that reads */
	uint64_t reads;	  /* calls of read and readv */
};

/* The process's memory: read(arg, addr, buf, n) gives 0, or -errno for
 * memory that cannot be read; readv, when not NULL, reads n ranges at
 * once and returns how many from the first were read whole, or -errno
 * (core/util/vmread.h: fr_proc_vm_readv). */
struct fr_go_mem {
	int (*read)(void *arg, uint64_t addr, void *buf, size_t n);
	int (*readv)(void *arg, size_t n, const uint64_t *addr, const size_t *len, void **buf);
	void *arg;
};

/* Reads the goroutines of a process running executable `x` loaded `bias`
 * bytes from its link-time addresses, through `mem`, a batch at a time
 * (their g's, their stacks, their g's again: three calls of readv), and
 * gives each one that is
 * not idle or dead to cb(cbarg, g) (borrowed for the call; a negative
 * return stops the walk and is returned), at most `max` of them.
 * Returns 0, -EADDRNOTAVAIL (the list was not found in the process, or
 * none of a stripped program's candidates is it), -E2BIG (more than
 * `max`: the first `max` were given), or cb's error. */
int fr_goroutines_read(const struct fr_go_exe *x, uint64_t bias, const struct fr_go_mem *mem,
		       uint64_t max, int (*cb)(void *cbarg, const struct fr_goroutine *g),
		       void *cbarg, struct fr_goroutines_stats *st);

/* Go's own word for a state ("running", "waiting", ...); "unknown". */
const char *fr_gstatus_name(uint32_t status);

#endif
