/* A blocked thread's Python frames from userspace
 * (recorder/sampling/py_walk.h). */
#include "recorder/sampling/py_walk.h"

#include <string.h>

#include "core/util/vmread.h"

static int rd64(uint32_t pid, uint64_t addr, uint64_t *out)
{
	*out = 0;
	return fr_proc_vm_read(pid, addr, out, sizeof(*out));
}

static uint64_t field(const uint8_t *b, uint16_t off)
{
	uint64_t v = 0;

	if (off <= FR_BPF_PY_FRAME_READ - sizeof(v))
		memcpy(&v, b + off, sizeof(v));
	return v;
}

/* The innermost frame of the thread state at ts; 0 none. */
static uint64_t first(uint32_t pid, const struct fr_bpf_py_proc *pp, uint64_t ts)
{
	uint64_t f = 0, cf = 0;

	if (pp->ts_frame != FR_BPF_PY_NONE) {
		rd64(pid, ts + pp->ts_frame, &f);
		return f;
	}
	if (rd64(pid, ts + pp->ts_cframe, &cf) < 0 || !cf)
		return 0;
	rd64(pid, cf + pp->cf_frame, &f);
	return f;
}

/* The thread state whose thread_id is tp, looked for through the
 * interpreters' lists as the eBPF programs do (256 states, 8
 * interpreters at most); 0 none. */
static uint64_t find(uint32_t pid, const struct fr_bpf_py_proc *pp, uint64_t tp)
{
	uint64_t interp = 0, ts = 0, id;
	unsigned interps = 0;

	if (rd64(pid, pp->runtime + pp->rt_interp_head, &interp) < 0 || !interp ||
	    rd64(pid, interp + pp->is_threads_head, &ts) < 0)
		return 0;
	for (int i = 0; i < FR_BPF_PY_THREAD_STEPS; i++) {
		if (!ts) {
			if (++interps == 8 || rd64(pid, interp + pp->is_next, &interp) < 0 ||
			    !interp || rd64(pid, interp + pp->is_threads_head, &ts) < 0)
				return 0;
			continue;
		}
		if (rd64(pid, ts + pp->ts_thread_id, &id) < 0)
			return 0;
		if (id == tp)
			return ts;
		if (rd64(pid, ts + pp->ts_next, &ts) < 0)
			return 0;
	}
	return 0;
}

size_t fr_py_walk_user(uint32_t pid, const struct fr_bpf_py_proc *pp, uint64_t tstate, uint64_t tp,
		       struct fr_bpf_py_rec *out)
{
	uint8_t b[FR_BPF_PY_FRAME_READ] = {0};
	uint64_t id, f;
	uint32_t n = 0, len = pp->fr_len;

	out->n = 0;
	out->status = FR_BPF_PY_OK;
	if (!tstate && tp)
		tstate = find(pid, pp, tp);
	if (!tstate || !len || len > FR_BPF_PY_FRAME_READ ||
	    rd64(pid, tstate + pp->ts_thread_id, &id) < 0 || id != tp)
		return 0;
	f = first(pid, pp, tstate);
	for (int i = 0; i < FR_BPF_PY_STEPS && f; i++) {
		if ((f & 7) || n >= FR_BPF_PY_DEPTH) {
			out->status = FR_BPF_PY_CUT;
			break;
		}
		if (fr_proc_vm_read(pid, f, b, len) < 0) {
			out->status = FR_BPF_PY_FAULT;
			break;
		}
		if (pp->fr_owner < FR_BPF_PY_FRAME_READ && b[pp->fr_owner] == pp->cstack_owner) {
			/* A shim: the frame above it began a C-level call. */
			if (n)
				out->f[n - 1].code |= FR_BPF_PY_ENTRY;
		} else {
			out->f[n].code = field(b, pp->fr_code) & ~7ull;
			out->f[n].instr = field(b, pp->fr_instr);
			if (pp->fr_is_entry < FR_BPF_PY_FRAME_READ && b[pp->fr_is_entry])
				out->f[n].code |= FR_BPF_PY_ENTRY;
			n++;
		}
		f = field(b, pp->fr_previous);
	}
	if (f && out->status == FR_BPF_PY_OK)
		out->status = FR_BPF_PY_CUT;
	out->n = (uint16_t)n;
	return FR_BPF_PY_REC_HEAD + (size_t)n * sizeof(out->f[0]);
}
