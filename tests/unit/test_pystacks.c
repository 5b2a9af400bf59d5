/* The splice of Python frames into a CPython thread's native stack
 * (recorder/tracking/pystacks.h), with the real labels program's maps
 * (root and BPF, else skips 77) and records made here, for a child
 * process that stands in for a CPython one (the layout of 3.11, an eval
 * loop at a made-up range):
 *  - records that come out of time order: an open wait's, stamped with
 *    its seal's time, ahead of the record of a wait that ended before
 *    that seal; the wait still gets its frames, and so does the open
 *    wait (python_stacks once had a finished wait in recv without its
 *    Python callers);
 *  - a process that exited: the seal that sees it gone keeps it, so the
 *    waits it left in the buffers (drained after that seal) still get
 *    their frames; the next seal forgets it.
 */
#include "recorder/tracking/pystacks.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util/log.h"
#include "recorder/sampling/bpf_labels.h"
#include "tests/unit/check.h"

#define EVAL_START 0x400000ull
#define EVAL_END 0x401000ull
#define CODE 0x7f0000001000ull

static void record(struct fr_pystacks *ps, uint32_t pid, int64_t mono, uint64_t code)
{
	struct fr_bpf_py_rec r;

	memset(&r, 0, sizeof(r));
	r.kind = FR_BPF_PY_WAIT;
	r.pid = pid;
	r.tid = pid;
	r.n = 2;
	r.time = (uint64_t)mono;
	r.f[0].code = code;
	r.f[0].instr = code + 0x100;
	r.f[1].code = code + 0x1000;
	r.f[1].instr = code + 0x1100;
	fr_pystacks_record(ps, &r, FR_BPF_PY_REC_HEAD + 2 * sizeof(r.f[0]));
}

/* The Python code object of the splice of a wait of pid's at mono; 0 when
 * none was spliced. */
static uint64_t splice(struct fr_pystacks *ps, uint32_t pid, int64_t mono, uint32_t event)
{
	static uint64_t ips[FR_MAX_FRAMES];
	uint64_t native[] = {0xffffffff81000000ull, 0x7f1234567890ull, EVAL_START + 0x80,
			     0x401800ull};
	struct fr_sample s = {.time_ns = mono,
			      .pid = pid,
			      .tid = pid,
			      .event = event,
			      .weight = 1,
			      .nr_kernel = 1,
			      .nr_frames = 4,
			      .ips = native},
			 out;

	if (fr_pystacks_splice(ps, &s, 0, &out, ips) != 1)
		return 0;
	for (unsigned i = 0; i < out.nr_frames; i++)
		if (FR_FRAME_IS_PY(out.ips[i]))
			return FR_FRAME_PY_CODE(out.ips[i]);
	return 0;
}

int main(void)
{
	struct fr_bpf_labels *bpf = NULL;
	struct fr_python_exe x;
	struct fr_pystacks *ps;
	char err[256] = "";
	int64_t t0;
	pid_t child;

	if (fr_bpf_labels_open(&bpf, err, sizeof(err)) < 0) {
		printf("SKIP: the labels program does not load here (%s)\n", err);
		return 77;
	}
	ps = fr_pystacks_new(bpf, NULL, NULL);
	CHECK(ps, "fr_pystacks_new");
	memset(&x, 0, sizeof(x));
	snprintf(x.version, sizeof(x.version), "3.11.7");
	x.minor = 11;
	x.runtime = 0x600000;
	x.eval[0][0] = EVAL_START;
	x.eval[0][1] = EVAL_END;
	CHECK(fr_python_layout_table(11, &x.layout) == 0, "no layout of 3.11");
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	fr_pystacks_found(ps, (uint32_t)child, 1, 0, 0, &x, 0, "test");

	/* Out of order: the open wait's record (seal at t0 + 2 ms) came
	 * before the record of the wait that ended at t0 + 1 ms. */
	t0 = (int64_t)fr_now_mono_ns();
	record(ps, (uint32_t)child, t0 + 2000000, CODE + 0x20000);
	record(ps, (uint32_t)child, t0 + 1000000, CODE);
	CHECK(splice(ps, (uint32_t)child, t0 + 1000000, FR_EVENT_OFFCPU) == CODE,
	      "the wait that ended before the open wait's seal has no Python frames");
	CHECK(splice(ps, (uint32_t)child, t0 + 2000000, FR_EVENT_OFFCPU_OPEN) == CODE + 0x20000,
	      "the open wait has no Python frames of its own");

	/* Gone: its last wait's record and sample are drained after the seal
	 * that saw it gone. */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	t0 = (int64_t)fr_now_mono_ns();
	record(ps, (uint32_t)child, t0, CODE + 0x40000);
	fr_pystacks_sealed(ps);
	CHECK(splice(ps, (uint32_t)child, t0, FR_EVENT_OFFCPU) == CODE + 0x40000,
	      "the last wait of a process that exited has no Python frames");
	record(ps, (uint32_t)child, t0 + 1, CODE + 0x60000);
	fr_pystacks_sealed(ps);
	CHECK(splice(ps, (uint32_t)child, t0 + 1, FR_EVENT_OFFCPU) == 0,
	      "a process gone two seals ago is still spliced");

	fr_pystacks_free(ps);
	fr_bpf_labels_close(bpf);
	if (!failures)
		printf("PASS\n");
	return failures ? 1 : 0;
}
