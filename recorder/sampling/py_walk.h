/* A blocked thread's Python frames read from userspace, as the eBPF
 * programs read a running one's (recorder/bpf/python_walk.h, whose layout
 * and record this shares): for the open waits, whose threads are not
 * current when they are listed. Reads another process's memory with
 * process_vm_readv: call it on the blocked threads' reader, never on the
 * ingest thread.
 */
#ifndef FR_RECORDER_PY_WALK_H
#define FR_RECORDER_PY_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/bpf/python_bpf.h"

/* Fills out->f, out->n and out->status with the frames of the thread
 * state at `tstate` of process `pid` (0: looked for), which must be the
 * thread's
 * whose thread pointer is `tp`. Returns the record's size in bytes
 * (FR_BPF_PY_REC_HEAD and the frames), or 0 when the state is not that
 * thread's or does not read. */
size_t fr_py_walk_user(uint32_t pid, const struct fr_bpf_py_proc *pp, uint64_t tstate, uint64_t tp,
		       struct fr_bpf_py_rec *out);

#endif
