/* Python frames in the stacks of CPython processes: the eBPF programs
 * send a thread's interpreter frames with each sample
 * (recorder/bpf/python_bpf.h); this module keeps which processes are
 * read and how (their interpreter's layout, _PyRuntime, where the eval
 * loop is), holds each thread's frames until its sample comes, and
 * splices them into the sample's native stack: each native
 * `_PyEval_EvalFrameDefault` frame, innermost first, is replaced by the
 * Python frames that C-level call of the eval loop was running (up to
 * and including the next entry frame), as FR_FRAME_PY addresses
 * (core/store/sample.h). Each code object a stack holds is handed, once
 * per process, to a namer (the symbol cache reads its names from the
 * process while it lives, so that dumps after it exited name it).
 *
 * A record is sent before its sample is written (the program runs in the
 * sample's overflow handler): a sample whose record is not here yet asks
 * the drain for the ring buffer's records once more, and a thread whose
 * record was lost keeps its native stack.
 *
 * Not thread-safe: owned by the ingest thread (through applabels, which
 * drains the ring buffer the records share with the labels' copies).
 */
#ifndef FR_RECORDER_PYSTACKS_H
#define FR_RECORDER_PYSTACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/store/sample.h"
#include "core/symbols/python_exe.h"
#include "recorder/bpf/python_bpf.h"

struct fr_pystacks;
struct fr_bpf_labels;

/* Where names and the processes' state go: `status` once per process
 * found to be a CPython one (problem NULL when its frames are read, else
 * why not), `codes` with code objects of it not handed before. Called on
 * the ingest thread; must not block. */
struct fr_pystacks_namer {
	void (*status)(void *arg, uint32_t pid, int64_t start_ns, uid_t uid, const char *version,
		       const char *problem);
	/* With `sweep`, the codes on the process's threads' stacks now too
	 * (asked when it is found, then every SWEEP_NS: a thread blocked
	 * since is named while it lives). Returns 0, or -errno when they are
	 * not taken (asked again at the next seal). */
	int (*codes)(void *arg, uint32_t pid, int64_t start_ns, uid_t uid,
		     const struct fr_python_exe *x, uint64_t bias, const uint64_t *codes, size_t n,
		     bool sweep);
	void *arg;
};

/* `bpf`: the labels program whose maps and ring buffer carry the frames
 * (borrowed); `drain(arg)` hands the ring buffer's records over now. */
struct fr_pystacks *fr_pystacks_new(struct fr_bpf_labels *bpf, void (*drain)(void *arg),
				    void *drain_arg);
void fr_pystacks_free(struct fr_pystacks *ps);

void fr_pystacks_set_namer(struct fr_pystacks *ps, const struct fr_pystacks_namer *n);

/* A look-up of process `pid` (started at start_ns, of user uid) ended:
 * ret 0, its interpreter x loaded bias bytes from its link-time
 * addresses, from `path`; -ENOENT not a CPython process; -ENOTSUP a
 * release not known (x->version says which when known); else the
 * object could not be read. */
void fr_pystacks_found(struct fr_pystacks *ps, uint32_t pid, int64_t start_ns, uid_t uid, int ret,
		       const struct fr_python_exe *x, uint64_t bias, const char *path);

/* A new program in `pid`: what was known of it is not any more. */
void fr_pystacks_exec(struct fr_pystacks *ps, uint32_t pid);

/* A record from the ring buffer (`size` bytes). */
void fr_pystacks_record(struct fr_pystacks *ps, const struct fr_bpf_py_rec *r, size_t size);

/* The sample to store for `s`: *out, with ips in `ips` (FR_MAX_FRAMES
 * entries), when Python frames were spliced into its stack (returns 1);
 * else 0 and s stands. `clock_offset`: Unix time - CLOCK_MONOTONIC. */
int fr_pystacks_splice(struct fr_pystacks *ps, const struct fr_sample *s, int64_t clock_offset,
		       struct fr_sample *out, uint64_t *ips);

/* After each seal: names asked, old records dropped, processes gone
 * forgotten. */
void fr_pystacks_sealed(struct fr_pystacks *ps);

struct fr_pystacks_counts {
	uint32_t procs;	  /* CPython processes whose frames are read */
	uint32_t refused; /* and whose are not (a release not known...) */
	uint64_t spliced; /* samples given Python frames */
	uint64_t frames;  /* Python frames put in them */
	uint64_t missed;  /* samples of a read process with no record */
	uint64_t unused;  /* records no sample took */
	struct fr_bpf_py_counters bpf;
	char last_problem[200]; /* why the last refused process was */
};
void fr_pystacks_counts(const struct fr_pystacks *ps, struct fr_pystacks_counts *out);

/* Bytes held (records waiting for their samples, the code sets); 0 for
 * NULL. */
uint64_t fr_pystacks_memory(const struct fr_pystacks *ps);

#endif
