/* What the goroutines request's two files share (recorder/requests/goroutines.c
 * reads, goroutines_write.c writes the answer). */
#ifndef FR_RECORDER_GOROUTINES_INT_H
#define FR_RECORDER_GOROUTINES_INT_H

#include <stddef.h>
#include <stdint.h>

#include "core/symbols/go_exe.h"
#include "recorder/tracking/goroutines.h"

/* One goroutine as kept for the answer: its pcs and labels in the
 * listing's arenas. */
struct grec {
	uint64_t goid, parent, gopc, startpc;
	int64_t waiting_ns; /* 0: not waiting */
	uint32_t status, waitreason, tid;
	uint32_t npc, nlabels;
	size_t pc_at, lab_at; /* into pcs[], labs[] ("key\0value\0" pairs) */
	enum fr_gstack stack;
	int labels_more;
	int system; /* the runtime's own (Go's isSystemGoroutine()) */
	/* Named from the program's function table (its strings): the
	 * start function, the `go` statement's function, file and line. */
	const char *start, *created_by, *created_file;
	uint32_t created_line;
	uint64_t fp; /* where it waits: the same wait in the next answer */
};

struct glisting {
	uint32_t pid, uid;
	struct fr_go_exe x;
	uint64_t bias;
	char exe[4096]; /* the executable's path, as the process has it */
	uint64_t cap;	/* bytes the arenas may hold */
	struct grec *g;
	size_t n, gcap;
	uint64_t *pcs;
	size_t npcs, pcs_cap;
	char *labs;
	size_t nlabs, labs_cap;
	int full; /* the bound was reached: the rest is not listed */
	struct fr_goroutines_stats st;
	int err; /* fr_goroutines_read()'s */
	int64_t now_mono;
	/* The names of the last addresses looked up (most goroutines share
	 * their start and their `go` statement). */
	struct gname {
		uint64_t pc;
		const char *fn, *file;
		uint32_t line;
	} names[256];
};

/* An fr_write_fn writing to the descriptor *(int *)arg. */
int goroutines_fd_sink(void *arg, const void *buf, size_t len);

/* Writes the listings of `nls` processes as the gzip'ed pprof of
 * recorder/requests/goroutines.h into fd (each process's comments in
 * turn); the runtime's own goroutines are counted into *system and left
 * out. Returns 0 or -errno. */
int goroutines_write(struct glisting *const *ls, size_t nls, int fd, uint64_t *system,
		     uint64_t *bytes);

#endif
