/* Draining perf_event rings: records read up to the kernel's data_head
 * and decoded, the space given back by publishing data_tail, so a drain
 * never blocks and never allocates.
 *
 * A sampling event's rings are read CPU after CPU. The side band's and
 * offcpu's are read merged in time order across CPUs (a k-way merge on
 * each record's time), because what they carry pairs up across CPUs: a
 * fork and the child's exec, a thread's switch-out and its switch-in.
 * Offcpu switch records go to the pairing table (recorder/sampling/offcpu.c),
 * which says when a pair makes a sample.
 */
#include "recorder/sampling/perf_int.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>

#include "core/util/log.h"
#include "core/util/time.h"

#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14)
#endif

/* prev_state bits of a task that is exiting: it will never be switched in
 * again, so its switch-out is not kept. These are EXIT_DEAD ("X") and
 * EXIT_ZOMBIE ("Z") as the tracepoint's print format names them; their
 * values have been stable since Linux 4.14. */
#define SCHED_STATE_EXITING 0x30u

/* The marker frames of core/store/sample.h are the unwinder's ends. */
_Static_assert((int)FR_FRAME_MARK_STACK_COPY == (int)FR_UNWIND_STACK_COPY &&
		       (int)FR_FRAME_MARK_NO_CFI == (int)FR_UNWIND_NO_CFI &&
		       (int)FR_FRAME_MARK_PENDING == (int)FR_UNWIND_PENDING &&
		       (int)FR_FRAME_MARK_BAD == (int)FR_UNWIND_BAD &&
		       (int)FR_FRAME_MARK_MAX_DEPTH == (int)FR_UNWIND_MAX_DEPTH &&
		       (int)FR_FRAME_MARK_COUNT == (int)FR_UNWIND_END_COUNT,
	       "marker frames and unwind ends must agree");

/* A sample record decoded; its frames are in fr_perf.ips. */
struct sample_view {
	uint32_t pid, tid, cpu;
	uint64_t time, period;
	uint16_t nr_kernel, nr_frames;
	const unsigned char *raw; /* PERF_SAMPLE_RAW data, when asked for */
	uint32_t raw_size;
	/* Stack copy sources: the user registers (has_regs: the ABI was not
	 * NONE) and the copy of the user stack. */
	int has_regs;
	struct fr_unwind_regs regs;
	struct fr_unwind_stack stack;
};

/* Decodes REGS_USER and STACK_USER at `at` (after CALLCHAIN and RAW):
 * u64 abi, then one u64 per bit of the mask unless the ABI is NONE (a
 * kernel thread); u64 size, size bytes of stack, then u64 dyn_size (the
 * bytes the kernel really copied) when size is not 0. Returns 0 or
 * -EBADMSG. */
static int decode_user_stack(const char *at, const char *end, struct sample_view *v)
{
	uint64_t abi, size, dyn_size, regs[3];

	v->has_regs = 0;
	v->stack.size = 0;
	v->stack.data = NULL;
	if ((size_t)(end - at) < sizeof(abi))
		return -EBADMSG;
	memcpy(&abi, at, sizeof(abi));
	at += sizeof(abi);
	if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
		/* Bit order of SAMPLE_REGS_UNWIND: bp, sp, ip. */
		if ((size_t)(end - at) < sizeof(regs))
			return -EBADMSG;
		memcpy(regs, at, sizeof(regs));
		at += sizeof(regs);
		/* A 32-bit process's stack is not one x86-64 CFI describes:
		 * its sample keeps the kernel frames and the IP. */
		v->has_regs = abi == PERF_SAMPLE_REGS_ABI_64;
		v->regs.bp = regs[0];
		v->regs.sp = regs[1];
		v->regs.ip = regs[2];
	}
	if ((size_t)(end - at) < sizeof(size))
		return -EBADMSG;
	memcpy(&size, at, sizeof(size));
	at += sizeof(size);
	if (size == 0)
		return 0;
	if (size > (size_t)(end - at) || (size_t)(end - at) - size < sizeof(dyn_size))
		return -EBADMSG;
	memcpy(&dyn_size, at + size, sizeof(dyn_size));
	if (dyn_size > size)
		return -EBADMSG;
	v->stack.sp = v->regs.sp;
	v->stack.data = (const uint8_t *)at;
	v->stack.size = dyn_size;
	return 0;
}

/* fr_unwind's find callback: the handler's, for the sample's process. */
struct find_ctx {
	const struct fr_perf_handler *cb;
	uint32_t pid;
};

static const struct fr_cfi_table *find_table(void *arg, uint64_t addr, uint64_t *vaddr, int *miss)
{
	const struct find_ctx *f = arg;

	return f->cb->unwind_find(f->cb->arg, f->pid, addr, vaddr, miss);
}

unsigned fr_perf_unwind_user(struct fr_perf_unwind_stats *st, const struct fr_perf_handler *cb,
			     uint32_t pid, const struct fr_unwind_regs *regs,
			     const struct fr_unwind_stack *stack, uint64_t *ips, unsigned room)
{
	struct find_ctx f = {.cb = cb, .pid = pid};
	enum fr_unwind_end end;
	unsigned n = 0;

	if (room < 2 || !cb->unwind_find) {
		/* No room for a frame and its marker, or nobody to ask. */
		if (room >= 1)
			ips[n++] = regs->ip;
		return n;
	}
	/* One slot stays free for the marker. */
	end = fr_unwind(regs, stack, find_table, &f, ips, room - 1, &n);
	if (end == FR_UNWIND_PENDING && cb->unwind_wait && cb->unwind_wait(cb->arg))
		end = fr_unwind(regs, stack, find_table, &f, ips, room - 1, &n);
	if (end >= FR_UNWIND_END_COUNT)
		end = FR_UNWIND_BAD;
	__atomic_add_fetch(&st->stacks, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&st->ends[end], 1, __ATOMIC_RELAXED);
	if (n > room - 1)
		n = room - 1;
	if (end != FR_UNWIND_DONE)
		ips[n++] = FR_FRAME_MARK_ADDR(end);
	return n;
}

/* Unwinds the user stack of `v` into p->ips after the kernel's nk frames,
 * with a marker frame as the root when it stopped early. Returns the
 * number of frames in p->ips. */
static uint16_t unwind_user(struct fr_perf *p, const struct sample_view *v, uint16_t nk,
			    const struct fr_perf_handler *cb)
{
	return (uint16_t)(nk + fr_perf_unwind_user(&p->unwind, cb, v->pid, &v->regs, &v->stack,
						   p->ips + nk, FR_MAX_FRAMES - nk));
}

/* Whether a sample's IP is a kernel address, by the record's cpumode. */
static int ip_is_kernel(const struct perf_event_header *h)
{
	unsigned mode = h->misc & PERF_RECORD_MISC_CPUMODE_MASK;

	return mode == PERF_RECORD_MISC_KERNEL || mode == PERF_RECORD_MISC_GUEST_KERNEL;
}

/* A source opened with precise_ip > 0: the sample's IP is the instruction
 * that counted, the callchain's leaf where the interrupt skidded to; the
 * IP becomes the leaf (recorder/sampling/perf_pmu.c). */
static void precise_leaf(struct fr_perf *p, const struct perf_event_header *h, uint64_t ip,
			 struct sample_view *v)
{
	if (!p->pmu.precise_ip)
		return;
	fr_perf_precise_leaf(p->ips, &v->nr_frames, &v->nr_kernel, FR_MAX_FRAMES, ip,
			     ip_is_kernel(h));
}

/* The RAW field at `raw` (a u32 size, the data, padded to 8 bytes) into
 * v. Returns what follows it, or NULL when it passes `end`. */
static const char *decode_raw(const char *raw, const char *end, struct sample_view *v)
{
	const char *after;
	uint32_t size;

	if (raw + sizeof(size) > end)
		return NULL;
	memcpy(&size, raw, sizeof(size));
	if (size > (size_t)(end - raw) - sizeof(size))
		return NULL;
	v->raw = (const unsigned char *)raw + sizeof(size);
	v->raw_size = size;
	after = raw + ((sizeof(size) + size + 7) & ~(size_t)7);
	return after > end ? NULL : after;
}

/* The callchain's `nr` entries interleave context markers with
 * addresses: kernel ones into p->ips[*nk...], user ones into user[*nu...],
 * each up to FR_MAX_FRAMES. */
static void split_callchain(struct fr_perf *p, const uint64_t *chain, uint64_t nr, uint64_t *user,
			    uint16_t *nk, uint16_t *nu)
{
	uint64_t context = PERF_CONTEXT_KERNEL;

	for (uint64_t i = 0; i < nr; i++) {
		uint64_t ip = chain[i];
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			context = ip;
			continue;
		}
		if (context == PERF_CONTEXT_KERNEL) {
			if (*nk < FR_MAX_FRAMES)
				p->ips[(*nk)++] = ip;
		} else if (context == PERF_CONTEXT_USER) {
			if (*nu < FR_MAX_FRAMES)
				user[(*nu)++] = ip;
		}
	}
}

/* Decodes a sample record: IP, TID, TIME, CPU, PERIOD (not in period
 * mode), CALLCHAIN and, when
 * the source asked for them, RAW, REGS_USER and STACK_USER, in this order.
 * Frames go to p->ips, kernel frames first, then user frames, each leaf
 * first; a stack copy source's user frames are unwound here (so that an
 * offcpu switch-out keeps its addresses, not the copy). Returns 0, 1 for
 * a sample of tid 0 (the idle task, a CPU with nothing to run, or a task
 * outside the recorder's pid namespace, which no record would name): not
 * recorded, so its callchain is not read; or -EBADMSG when the record is
 * shorter than its fields say. */
static int decode_sample(struct fr_perf *p, const struct perf_event_header *h,
			 const struct fr_perf_handler *cb, struct sample_view *v)
{
	/* IP, TID (pid, tid), TIME, CPU (cpu, res), PERIOD but in period
	 * mode (see fr_perf_sampling_attr), the callchain's nr: u64 each. */
	const uint64_t *w = (const void *)(h + 1);
	const unsigned nhead = p->period ? 5 : 6;
	const struct {
		uint64_t ip;
		uint32_t pid, tid;
		uint64_t time;
		uint32_t cpu, res;
	} *s = (const void *)w;
	const uint64_t *chain = w + nhead;
	const char *end = (const char *)h + h->size, *after = NULL;
	uint64_t nr;
	uint16_t nk = 0, nu = 0, nframes;
	uint64_t user[FR_MAX_FRAMES];

	if ((const char *)chain > end)
		return -EBADMSG;
	nr = w[nhead - 1];
	if (nr > (uint64_t)(end - (const char *)chain) / 8)
		return -EBADMSG;
	if (s->tid == 0 && !p->oom)
		return 1;
	v->pid = s->pid;
	v->tid = s->tid;
	v->time = s->time;
	v->cpu = s->cpu;
	v->period = p->period ? p->period : w[4];
	v->raw = NULL;
	v->raw_size = 0;
	v->has_regs = 0;
	after = (const char *)(chain + nr);
	if ((p->offcpu || p->oom) && !(after = decode_raw(after, end, v)))
		return -EBADMSG;
	if (p->cfg.stack_copy && decode_user_stack(after, end, v) < 0)
		return -EBADMSG;

	split_callchain(p, chain, nr, user, &nk, &nu);
	if (v->has_regs) {
		v->nr_kernel = nk;
		v->nr_frames = unwind_user(p, v, nk, cb);
		precise_leaf(p, h, s->ip, v);
		return 0;
	}
	if (p->cfg.stack_copy)
		__atomic_add_fetch(&p->unwind.no_regs, 1, __ATOMIC_RELAXED);
	if (nk == 0 && nu == 0 && s->ip) {
		/* No callchain (e.g. a kernel that could not walk): the IP alone. */
		if (ip_is_kernel(h))
			p->ips[nk++] = s->ip;
		else
			user[nu++] = s->ip;
	}
	nframes = nk;
	for (uint16_t i = 0; i < nu && nframes < FR_MAX_FRAMES; i++)
		p->ips[nframes++] = user[i];
	v->nr_kernel = nk;
	v->nr_frames = nframes;
	precise_leaf(p, h, s->ip, v);
	return 0;
}

static void handle_sample(struct fr_perf *p, const struct sample_view *v,
			  const struct fr_perf_handler *cb, int64_t clock_offset)
{
	const struct cpu_ring *r = p->cur;
	/* Every field set: app_ref, which this does not fill, must be 0 (the
	 * seal then joins the application labels by tid and time). */
	struct fr_sample out = {0};

	out.time_ns = (int64_t)v->time + clock_offset;
	out.pid = v->pid;
	out.tid = v->tid;
	out.cpu = v->cpu;
	out.event = p->cfg.event;
	/* cpu: the period field keeps reporting the period the event was
	 * opened with after PERF_EVENT_IOC_PERIOD, so weight by the rate we
	 * set. Frequency mode: the period is what the kernel chose for this
	 * sample, the count it stands for. */
	if (p->period) {
		/* Period mode: each sample stands for exactly the period in
		 * force (cpu's in ns), and a profile keeps every one (rate 0:
		 * not downsampled), so its values are exact. */
		out.weight = p->period;
		out.rate_hz = 0;
	} else {
		out.weight = p->cfg.event == FR_EVENT_CPU ? FR_NS_PER_S / p->hz : v->period;
		out.rate_hz = p->hz;
	}
	/* A multiplexed counter counted only part of the time its ring
	 * covers: its samples stand for more (recorder/sampling/perf_pmu.c). */
	if (r && r->d_running && r->d_running < r->d_enabled) {
		out.weight = fr_perf_mux_scale(out.weight, r->d_enabled, r->d_running);
		__atomic_add_fetch(&p->pmu.scaled_samples, 1, __ATOMIC_RELAXED);
	}
	out.nr_kernel = v->nr_kernel;
	out.nr_frames = v->nr_frames;
	out.ips = p->ips;
	cb->sample(cb->arg, &out);
}

/* ---- offcpu: switch records to the pairing table ------------------------ */

/* Hands over one offcpu sample: the time it was switched out, stamped
 * with the time it came back. */
static void offcpu_emit(struct fr_perf *p, const struct fr_perf_handler *cb, int64_t clock_offset,
			const struct fr_offcpu_pair *pair)
{
	struct fr_sample s = {
		.time_ns = (int64_t)pair->in_time + clock_offset,
		.pid = pair->out.pid,
		.tid = pair->out.tid,
		.cpu = pair->out.cpu,
		.event = FR_EVENT_OFFCPU,
		.weight = pair->in_time - pair->out.time,
		.rate_hz = 0,
		.nr_kernel = pair->out.nr_kernel,
		.nr_frames = pair->out.nr_frames,
		.ips = pair->out.ips,
	};

	__atomic_add_fetch(&p->offcpu_stats.samples, 1, __ATOMIC_RELAXED);
	cb->sample(cb->arg, &s);
}

uint32_t fr_perf_offcpu_open(const struct fr_perf *p, int64_t clock_offset, uint64_t now_mono,
			     void (*fn)(void *arg, const struct fr_sample *s), void *arg)
{
	struct fr_offcpu_switch sw;
	uint32_t cursor = 0, n = 0;

	if (p->bpf)
		return fr_bpf_offcpu_open_waits(p->bpf, clock_offset, now_mono, fn, arg);
	if (!p->offcpu)
		return 0;
	while (fr_offcpu_open_next(p->offcpu, &cursor, &sw)) {
		/* The record is stamped with the moment the table was known
		 * to be complete; the weight says since when it waits. */
		struct fr_sample s = {
			.time_ns = (int64_t)now_mono + clock_offset,
			.pid = sw.pid,
			.tid = sw.tid,
			.cpu = sw.cpu,
			.event = FR_EVENT_OFFCPU_OPEN,
			.weight = now_mono > sw.time ? now_mono - sw.time : 0,
			.rate_hz = 0,
			.nr_kernel = sw.nr_kernel,
			.nr_frames = sw.nr_frames,
			.ips = sw.ips,
		};

		fn(arg, &s);
		n++;
	}
	return n;
}

static uint64_t raw_field(const unsigned char *raw, uint32_t off, uint32_t size)
{
	uint32_t v32;
	uint64_t v64;

	if (size == 8) {
		memcpy(&v64, raw + off, sizeof(v64));
		return v64;
	}
	memcpy(&v32, raw + off, sizeof(v32));
	return v32;
}

/* A sched_switch sample: its task (the sample's tid) leaves the CPU at
 * v->time with the stack in p->ips. */
static void handle_switch(struct fr_perf *p, const struct sample_view *v,
			  const struct fr_perf_handler *cb, int64_t clock_offset)
{
	const struct switch_format *f = &p->swfmt;
	const struct fr_offcpu_switch sw = {
		.time = v->time,
		.pid = v->pid,
		.tid = v->tid,
		.cpu = v->cpu,
		.nr_kernel = v->nr_kernel,
		.nr_frames = v->nr_frames,
		.ips = p->ips,
	};
	struct fr_offcpu_pair pair;
	uint64_t state;

	if (!v->raw || v->raw_size < f->min_size)
		return;
	state = raw_field(v->raw, f->prev_state, f->prev_state_size);
	__atomic_add_fetch(&p->offcpu_stats.switch_outs, 1, __ATOMIC_RELAXED);
	if (fr_offcpu_switch_out(p->offcpu, &sw, !!(state & SCHED_STATE_EXITING), &pair))
		offcpu_emit(p, cb, clock_offset, &pair);
}

void fr_perf_oom_sample(struct fr_perf *p, const unsigned char *raw, uint32_t size, uint64_t time,
			uint32_t cpu, uint32_t nr_kernel, const struct fr_perf_handler *cb,
			int64_t clock_offset)
{
	struct fr_oom_victim victim;
	struct fr_sample s = {0};
	/* The kernel functions that tell a memory cgroup's kill from the
	 * machine's: read at the first kill. */
	const struct fr_wake_class *cls = fr_wake_class_machine();

	if (fr_oom_decode(&p->oomfmt, raw, size, &victim) < 0) {
		__atomic_add_fetch(&p->unwind.bad_records, 1, __ATOMIC_RELAXED);
		return;
	}
	s.time_ns = (int64_t)time + clock_offset;
	s.pid = s.tid = victim.pid;
	s.cpu = cpu;
	s.event = FR_EVENT_OOM;
	s.weight = victim.rss;
	s.ips = p->ips;
	/* The kernel stack (p->ips[0..nr_kernel), decoded above) is the
	 * killer's, not the victim's: it is not stored, and only says whose
	 * limit was hit. */
	if (cls && fr_wake_class_ranges(cls) && cb->labels_plus) {
		const char *who = fr_wake_class_memcg_oom(cls, p->ips, nr_kernel) ? "memcg"
										  : "global";
		const struct fr_app_label c = {"constraint", who};

		s.app_ref = cb->labels_plus(cb->arg, 0, &c, 1);
		if (!s.app_ref)
			s.app_ref = FR_APP_REF_NONE;
	}
	if (cb->oom)
		cb->oom(cb->arg, &s, victim.comm);
	else
		cb->sample(cb->arg, &s);
}

/* ---- records ------------------------------------------------------------ */

static void handle_sample_record(struct fr_perf *p, const struct perf_event_header *h,
				 const struct fr_perf_handler *cb, int64_t clock_offset)
{
	struct sample_view v;
	int ret;

	if (!cb->sample || p->sideband_only)
		return;
	ret = decode_sample(p, h, cb, &v);
	if (ret < 0 && p->cfg.stack_copy)
		__atomic_add_fetch(&p->unwind.bad_records, 1, __ATOMIC_RELAXED);
	if (ret != 0)
		return;
	if (p->offcpu)
		handle_switch(p, &v, cb, clock_offset);
	else if (p->oom)
		fr_perf_oom_sample(p, v.raw, v.raw_size, v.time, v.cpu, v.nr_kernel, cb,
				   clock_offset);
	else
		handle_sample(p, &v, cb, clock_offset);
}

static void handle_mmap2(const struct perf_event_header *h, const struct fr_perf_handler *cb)
{
	const char *end = (const char *)h + h->size;
	const struct {
		uint32_t pid, tid;
		uint64_t addr, len, pgoff;
		union {
			struct {
				uint32_t maj, min;
				uint64_t ino, ino_generation;
			};
			struct {
				uint8_t build_id_size, reserved1;
				uint16_t reserved2;
				uint8_t build_id[20];
			};
		};
		uint32_t prot, flags;
		char filename[];
	} *m = (const void *)(h + 1);
	char path[4096];
	size_t maxlen;
	uint8_t bid_len = 0;

	if (!cb->mmap || (const char *)(m + 1) >= end)
		return;
	maxlen = (size_t)(end - m->filename);
	if (maxlen >= sizeof(path))
		maxlen = sizeof(path) - 1;
	memcpy(path, m->filename, maxlen);
	path[maxlen] = '\0';
	if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
		bid_len = m->build_id_size <= 20 ? m->build_id_size : 20;
	cb->mmap(cb->arg, m->pid, m->addr, m->len, m->pgoff, m->prot, path,
		 bid_len ? m->build_id : NULL, bid_len);
	if (!(h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && cb->mmap_inode && (m->prot & PROT_EXEC))
		cb->mmap_inode(cb->arg, m->pid, m->addr, makedev(m->maj, m->min), m->ino,
			       m->ino_generation);
}

static void handle_comm(const struct perf_event_header *h, const struct fr_perf_handler *cb,
			int64_t clock_offset)
{
	const char *end = (const char *)h + h->size;
	const struct {
		uint32_t pid, tid;
		char comm[];
	} *c = (const void *)(h + 1);
	char comm[17];
	size_t maxlen;
	int64_t time_ns = 0;
	uint64_t t;

	if (!cb->comm || (const char *)(c + 1) >= end)
		return;
	maxlen = (size_t)(end - c->comm);
	if (maxlen > 16)
		maxlen = 16;
	memcpy(comm, c->comm, maxlen);
	comm[maxlen] = '\0';
	/* The name is padded to 8 bytes; the sample_id trailer (TID, TIME,
	 * CPU: 24 bytes) follows it, so TIME is 16 bytes from the end. */
	if (h->size >= sizeof(*h) + 8 + 8 + 24) {
		memcpy(&t, end - 16, sizeof(t));
		time_ns = (int64_t)t + clock_offset;
	}
	cb->comm(cb->arg, c->pid, c->tid, comm, !!(h->misc & PERF_RECORD_MISC_COMM_EXEC), time_ns);
}

/* FORK and EXIT share their layout. */
static void handle_task(const struct perf_event_header *h, const struct fr_perf_handler *cb,
			int64_t clock_offset)
{
	const char *end = (const char *)h + h->size;
	const struct {
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} *f = (const void *)(h + 1);

	if ((const char *)(f + 1) > end)
		return;
	if (h->type == PERF_RECORD_FORK && cb->fork)
		cb->fork(cb->arg, f->pid, f->ppid, f->tid, f->ptid,
			 (int64_t)f->time + clock_offset);
	else if (h->type == PERF_RECORD_EXIT && cb->exit)
		cb->exit(cb->arg, f->pid, f->tid, (int64_t)f->time + clock_offset);
}

static void handle_lost(struct fr_perf *p, const struct perf_event_header *h,
			const struct fr_perf_handler *cb)
{
	const char *end = (const char *)h + h->size;
	const struct {
		uint64_t id, lost;
	} *l = (const void *)(h + 1);

	if ((const char *)(l + 1) <= end && cb->lost)
		cb->lost(cb->arg, p->cfg.event, l->lost);
}

/* A context switch record of an offcpu source: an "in" record completes
 * the pair of the thread switched in. */
static void handle_context_switch(struct fr_perf *p, const struct perf_event_header *h,
				  const struct fr_perf_handler *cb, int64_t clock_offset)
{
	const char *end = (const char *)h + h->size;
	/* next_prev_pid/tid, then the sample_id trailer (TID, TIME, CPU) of
	 * the task running when it was written: for an "in" record, the task
	 * switched in. */
	const struct {
		uint32_t next_prev_pid, next_prev_tid;
		uint32_t pid, tid;
		uint64_t time;
		uint32_t cpu, res;
	} *sw = (const void *)(h + 1);
	struct fr_offcpu_pair pair;

	if (!p->offcpu || !cb->sample || (h->misc & PERF_RECORD_MISC_SWITCH_OUT) ||
	    (const char *)(sw + 1) > end || sw->tid == 0)
		return;
	__atomic_add_fetch(&p->offcpu_stats.switch_ins, 1, __ATOMIC_RELAXED);
	if (fr_offcpu_switch_in(p->offcpu, sw->tid, sw->time, &pair))
		offcpu_emit(p, cb, clock_offset, &pair);
}

static void handle_record(struct fr_perf *p, const struct perf_event_header *h,
			  const struct fr_perf_handler *cb, int64_t clock_offset)
{
	switch (h->type) {
	case PERF_RECORD_SAMPLE: handle_sample_record(p, h, cb, clock_offset); break;
	case PERF_RECORD_MMAP2: handle_mmap2(h, cb); break;
	case PERF_RECORD_COMM: handle_comm(h, cb, clock_offset); break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: handle_task(h, cb, clock_offset); break;
	case PERF_RECORD_LOST: handle_lost(p, h, cb); break;
	case PERF_RECORD_THROTTLE:
		if (cb->throttle)
			cb->throttle(cb->arg, p->cfg.event);
		break;
	case PERF_RECORD_SWITCH_CPU_WIDE: handle_context_switch(p, h, cb, clock_offset); break;
	default: break;
	}
}

/* The record at `tail` of ring `r`, or NULL when what is there cannot be
 * framed. A record that wraps around the end of the ring is copied to
 * p->wrap_buf (records are at most 64 KiB); the header itself never wraps,
 * as records are 8-byte aligned and the ring a multiple of 8 bytes. */
static const struct perf_event_header *ring_record(struct fr_perf *p, const struct cpu_ring *r,
						   uint64_t tail, uint64_t head)
{
	unsigned char *data = (unsigned char *)r->base + p->page_size;
	uint64_t mask = r->data_size - 1;
	const struct perf_event_header *hdr = (const void *)&data[tail & mask];
	size_t size = hdr->size, first = r->data_size - (tail & mask);

	if (size < sizeof(*hdr) || size > head - tail) {
		fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
				   "cpu %d: malformed perf record of %zu bytes; skipping %llu bytes",
				   r->cpu, size, (unsigned long long)(head - tail));
		return NULL;
	}
	if (size > first) {
		memcpy(p->wrap_buf, hdr, first);
		memcpy(p->wrap_buf + first, data, size - first);
		hdr = (const void *)p->wrap_buf;
	}
	return hdr;
}

/* The time of the record at r->tail without copying it: a sample's TIME
 * field, or the TIME of another record's sample_id trailer. Both are
 * 8-byte aligned, so neither straddles the end of the ring. Records too
 * short to carry one sort first. */
static uint64_t ring_record_time(const struct fr_perf *p, const struct cpu_ring *r)
{
	const unsigned char *data = (const unsigned char *)r->base + p->page_size;
	uint64_t mask = r->data_size - 1, pos, t;
	const struct perf_event_header *hdr = (const void *)&data[r->tail & mask];

	if (hdr->size < sizeof(*hdr) + 3 * sizeof(uint64_t))
		return 0;
	if (hdr->type == PERF_RECORD_SAMPLE)
		pos = r->tail + sizeof(*hdr) + 2 * sizeof(uint64_t); /* after IP, TID */
	else
		pos = r->tail + hdr->size - 2 * sizeof(uint64_t); /* TID, [TIME], CPU */
	memcpy(&t, &data[pos & mask], sizeof(t));
	return t;
}

static int ring_before(const struct fr_perf *p, unsigned a, unsigned b)
{
	return p->rings[a].next_time < p->rings[b].next_time;
}

static void heap_down(struct fr_perf *p, unsigned n, unsigned i)
{
	unsigned *h = p->heap;

	for (;;) {
		unsigned l = 2 * i + 1, r = l + 1, m = i, tmp;

		if (l < n && ring_before(p, h[l], h[m]))
			m = l;
		if (r < n && ring_before(p, h[r], h[m]))
			m = r;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

/* Gives the space up to r->tail back to the kernel. */
static void publish_tail(struct cpu_ring *r)
{
	struct perf_event_mmap_page *meta = r->base;

	__atomic_store_n(&meta->data_tail, r->tail, __ATOMIC_RELEASE);
}

/* Drains all rings merged by time (a k-way merge over a heap of rings).
 * Each ring is in time order on its own; merged, a thread's switch-in on
 * one CPU comes after its switch-out on another, and a process's exec
 * after its fork, whatever order the rings are in. Only records written between the first and the last head read
 * can still come out of order, which the pairing tolerates. */
static uint64_t drain_ordered(struct fr_perf *p, const struct fr_perf_handler *h,
			      int64_t clock_offset)
{
	uint64_t records = 0;
	unsigned n = 0;

	for (unsigned i = 0; i < p->ncpus; i++) {
		struct cpu_ring *r = &p->rings[i];
		struct perf_event_mmap_page *meta = r->base;

		r->head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
		r->tail = meta->data_tail;
		if (r->tail < r->head) {
			r->next_time = ring_record_time(p, r);
			p->heap[n++] = i;
		}
	}
	for (unsigned i = n / 2; i-- > 0;)
		heap_down(p, n, i);
	while (n > 0) {
		struct cpu_ring *r = &p->rings[p->heap[0]];
		const struct perf_event_header *hdr = ring_record(p, r, r->tail, r->head);

		if (hdr) {
			handle_record(p, hdr, h, clock_offset);
			records++;
			r->tail += hdr->size;
		} else {
			r->tail = r->head;
		}
		if (r->tail < r->head) {
			r->next_time = ring_record_time(p, r);
		} else {
			publish_tail(r);
			p->heap[0] = p->heap[--n];
		}
		heap_down(p, n, 0);
	}
	if (p->offcpu && h->lost) {
		/* Switch-outs dropped from a full table: samples lost. */
		uint64_t evicted = fr_offcpu_take_evicted(p->offcpu);

		if (evicted) {
			__atomic_add_fetch(&p->offcpu_stats.evicted, evicted, __ATOMIC_RELAXED);
			h->lost(h->arg, p->cfg.event, evicted);
		}
	}
	if (p->offcpu)
		__atomic_store_n(&p->offcpu_stats.waiting, fr_offcpu_waiting(p->offcpu),
				 __ATOMIC_RELAXED);
	return records;
}

/* A software event (cpu, page-faults, ...) is never multiplexed: its
 * times only feed status, and are read once a second. A read of a
 * counter on another CPU is an interrupt there that the reader waits
 * for (in a virtual machine, an exit to the hypervisor and back, tens of
 * microseconds): read at every drain, dozens a second on each CPU, it
 * was half of the ingest thread's time on a loaded machine. A hardware
 * event's are read at every drain: they scale the samples drained. */
static void read_times(struct fr_perf *p, struct cpu_ring *r)
{
	int64_t now;

	if (fr_event_is_hardware(p->cfg.event)) {
		fr_perf_read_times(p, r);
		return;
	}
	r->d_enabled = r->d_running = 0;
	now = fr_now_mono_ns();
	if (r->times_read_mono && now - r->times_read_mono < FR_NS_PER_S)
		return;
	r->times_read_mono = now;
	fr_perf_read_times(p, r);
}

uint64_t fr_perf_drain(struct fr_perf *p, const struct fr_perf_handler *h, int64_t clock_offset)
{
	uint64_t records = 0;

	if (p->bpf)
		return fr_bpf_offcpu_drain(p->bpf, h, clock_offset);
	if (p->heap)
		return drain_ordered(p, h, clock_offset);
	for (unsigned i = 0; i < p->ncpus; i++) {
		struct cpu_ring *r = &p->rings[i];
		struct perf_event_mmap_page *meta = r->base;

		/* The times first: what the ring holds was counted before. */
		if (!p->sideband_only)
			read_times(p, r);
		p->cur = r;
		r->head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
		r->tail = meta->data_tail;
		while (r->tail < r->head) {
			const struct perf_event_header *hdr = ring_record(p, r, r->tail, r->head);

			if (!hdr) {
				r->tail = r->head;
				break;
			}
			handle_record(p, hdr, h, clock_offset);
			r->tail += hdr->size;
			records++;
		}
		publish_tail(r);
	}
	p->cur = NULL;
	return records;
}
