/* Off-CPU by an eBPF program: the loader, the ring buffer's drain into
 * samples, and the open waits from the task iterator with their user
 * stacks from the walker (recorder/sampling/bpf_walk.c). See recorder/sampling/bpf_offcpu.h;
 * the program is recorder/bpf/offcpu.bpf.c, its skeleton generated at
 * build time.
 */
#include "recorder/sampling/bpf_offcpu.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/store/sample.h"
#include "core/util/log.h"
#include "core/util/time.h"
#include "recorder/offcpu.skel.h"
#include "recorder/bpf/offcpu_bpf.h"
#include "recorder/sampling/bpf_walk.h"
#include "recorder/sampling/bpf_wake.h"
#include "recorder/bpf/labels_bpf.h"

/* Labels records waiting for their thread's wait (a power of two),
 * looked up in LABELS_PROBE consecutive slots. */
#define LABELS_PENDING 4096u
#define LABELS_PROBE 8u

/* The ring buffer: ~3,900 long waits (2 KiB each) between two drains with
 * frame-pointer stacks; with 8 KiB stack copies (9.3 KiB records) twice
 * the bytes, ~1,800 (at 20,000 long waits a second, 8 MiB dropped 9% of
 * them in one round: docs/performance.md). */
#define RINGBUF_BYTES (8u << 20)
#define RINGBUF_COPY_BYTES (16u << 20)
/* FLIGHTREC_BPF_RINGBUF's bounds: the kernel wants a power of two of
 * whole pages. */
#define RINGBUF_MIN_BYTES 4096u
#define RINGBUF_MAX_BYTES (1u << 30)

_Static_assert(FR_BPF_FRAMES == FR_MAX_FRAMES, "one stack half is FR_MAX_FRAMES frames");

struct fr_bpf_offcpu {
	struct offcpu_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *iter;
	int ncpus;
	int task_work; /* user stacks by task work (else at sys_exit) */
	uint64_t min_wait_ns;
	uint32_t extra;			/* FR_PERF_OFFCPU_WAKEUP | _RUNQUEUE */
	struct fr_bpf_wakes *wakes;	/* their samples */
	uint32_t stack_copy;		/* bytes of user stack copied (0: frame pointers) */
	uint32_t ringbuf_bytes;		/* the ring buffer's size */
	int labels_map_fd;		/* the labels program's process map, or -1 */
	int py_procs_fd, py_threads_fd; /* its Python maps, or -1 */
	/* The sets of labels records drained, by thread, for the wait of the
	 * same thread that follows (other CPUs' records may come between). */
	struct {
		uint32_t tid, set;
	} labels[LABELS_PENDING];
	/* The drain's handler while ring_buffer__consume runs. */
	const struct fr_perf_handler *h;
	int64_t clock_offset;
	/* Counters of this side (relaxed atomics). */
	uint64_t samples, open_listed, open_runnable;
	struct fr_perf_unwind_stats unwind;
	uint64_t ips[FR_MAX_FRAMES];
	struct fr_bpf_open open;
	struct fr_bpf_py_rec open_py; /* a blocked thread's Python frames */
	/* The open waits' user stacks (recorder/sampling/bpf_walk.h). */
	struct fr_bpf_walk *walk;
	/* The program's per-CPU counters, read at each drain (ingest thread),
	 * and the sum of their drops the last drain took. */
	struct fr_bpf_counters *percpu;
	uint64_t drops_taken, wake_drops_taken;
};

/* libbpf's messages go to our log, its debug chatter nowhere. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[512];

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	fr_log_ratelimited(FR_LOG_DEBUG, FR_NS_PER_S, "libbpf: %s", buf);
	return 0;
}

void fr_bpf_log_to_ours(void)
{
	libbpf_set_print(libbpf_log);
}

/* The user frames of a long wait with a stack copy, unwound after its nk
 * kernel frames in b->ips. Returns the frames in b->ips. */
static uint32_t copy_frames(struct fr_bpf_offcpu *b, const void *data, size_t size, uint32_t nk)
{
	const struct fr_bpf_wait_copy *w = data;
	struct fr_unwind_regs regs;
	struct fr_unwind_stack stack;

	if (size < sizeof(*w) || w->h.nr_user > size - sizeof(*w) || w->h.nr_user > b->stack_copy) {
		__atomic_add_fetch(&b->unwind.bad_records, 1, __ATOMIC_RELAXED);
		return nk;
	}
	regs = (struct fr_unwind_regs){.ip = w->ip, .sp = w->sp, .bp = w->bp};
	stack = (struct fr_unwind_stack){.sp = w->sp, .data = w->stack, .size = w->h.nr_user};
	if (!regs.ip)
		return nk;
	return nk + fr_perf_unwind_user(&b->unwind, b->h, w->h.pid, &regs, &stack, b->ips + nk,
					FR_MAX_FRAMES - nk);
}

/* A wait's labels, kept for the wait record that follows them. */
static void on_labels(struct fr_bpf_offcpu *b, const struct fr_bpf_labels_rec *l)
{
	uint32_t h = (l->tid * 2654435761u) & (LABELS_PENDING - 1), k = h;

	/* Its thread's slot, else a free one, else the first (a record
	 * whose wait never came). */
	for (uint32_t i = 0; i < LABELS_PROBE; i++) {
		uint32_t j = (h + i) & (LABELS_PENDING - 1);

		if (b->labels[j].tid == l->tid || !b->labels[j].set) {
			k = j;
			break;
		}
	}
	b->labels[k].tid = l->tid;
	b->labels[k].set = b->h->labels ? b->h->labels(b->h->arg, l) : 0;
	/* Known to have none: not joined to another moment's. */
	if (!b->labels[k].set)
		b->labels[k].set = FR_APP_REF_NONE;
}

/* A wait record's sample (none for a SHORT record of run-queue delays
 * alone), and its wakeup and runqueue samples. */
static void send_wait(struct fr_bpf_offcpu *b, const struct fr_bpf_wait_head *h,
		      const struct fr_sample *s)
{
	if (h->kind != FR_BPF_WAIT_SHORT || h->count) {
		__atomic_add_fetch(&b->samples, 1, __ATOMIC_RELAXED);
		b->h->sample(b->h->arg, s);
	}
	if (b->extra)
		fr_bpf_wakes_wait(b->wakes, b->h, h, s);
}

/* One ring buffer record into a sample. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct fr_bpf_offcpu *b = ctx;
	const struct fr_bpf_wait *w = data;
	const struct fr_bpf_wait_copy *wc = data;
	struct fr_sample s = {.event = FR_EVENT_OFFCPU, .rate_hz = 0, .ips = b->ips};
	uint32_t nk, nu, n = 0;

	if (size >= FR_BPF_PY_REC_HEAD && w->h.kind == FR_BPF_PY_WAIT) {
		/* Kept by the ingest for the wait that follows (its sample's
		 * time is the wait's end, as the record's) */
		if (b->h->python)
			b->h->python(b->h->arg, data, size);
		return 0;
	}
	if (size >= sizeof(w->h.kind) && w->h.kind == FR_BPF_WAKE) {
		fr_bpf_wakes_record(b->wakes, b->h, &b->unwind, b->clock_offset, data, size);
		return 0;
	}
	if (size < sizeof(w->h))
		return 0;
	if (w->h.kind == FR_BPF_LABELS_WAIT) {
		if (size >= sizeof(struct fr_bpf_labels_rec))
			on_labels(b, data);
		return 0;
	}
	s.pid = w->h.pid;
	s.tid = w->h.tid;
	s.cpu = w->h.cpu;
	s.time_ns = (int64_t)w->h.end + b->clock_offset;
	s.weight = w->h.total;
	if (w->h.kind == FR_BPF_WAIT_SHORT) {
		b->ips[n++] = FR_FRAME_NOTE_ADDR(FR_FRAME_NOTE_SHORT_WAITS);
	} else if (w->h.flags & FR_BPF_WAIT_COPY) {
		if (size < sizeof(*wc))
			return 0;
		nk = w->h.nr_kernel < FR_BPF_FRAMES ? w->h.nr_kernel : FR_BPF_FRAMES;
		memcpy(b->ips, wc->kips, nk * sizeof(uint64_t));
		s.nr_kernel = (uint16_t)nk;
		n = copy_frames(b, data, size, nk);
	} else {
		if (size < sizeof(*w))
			return 0;
		nk = w->h.nr_kernel < FR_BPF_FRAMES ? w->h.nr_kernel : FR_BPF_FRAMES;
		nu = w->h.nr_user < FR_BPF_FRAMES ? w->h.nr_user : FR_BPF_FRAMES;
		memcpy(b->ips, w->kips, nk * sizeof(uint64_t));
		n = nk;
		s.nr_kernel = (uint16_t)nk;
		if (w->h.flags & FR_BPF_WAIT_NO_USER) {
			if (n < FR_MAX_FRAMES)
				b->ips[n++] = FR_FRAME_NOTE_ADDR(FR_FRAME_NOTE_NO_USER);
		}
		for (uint32_t i = 0; i < nu && n < FR_MAX_FRAMES; i++)
			b->ips[n++] = w->uips[i];
	}
	s.nr_frames = (uint16_t)n;
	if (w->h.kind == FR_BPF_WAIT_LONG) {
		uint32_t h = (s.tid * 2654435761u) & (LABELS_PENDING - 1);

		/* The program sends a wait's labels just before it, from the
		 * same CPU (other CPUs' records may come between). */
		for (uint32_t i = 0; i < LABELS_PROBE; i++) {
			uint32_t j = (h + i) & (LABELS_PENDING - 1);

			if (b->labels[j].set && b->labels[j].tid == s.tid) {
				s.app_ref = b->labels[j].set;
				b->labels[j].set = 0;
				break;
			}
		}
	}
	send_wait(b, &w->h, &s);
	return 0;
}

/* A blocked thread's labels, from the walker. */
static uint32_t walk_labels(void *arg, const struct fr_bpf_labels_rec *r)
{
	struct fr_bpf_offcpu *b = arg;
	uint32_t set = b->h->labels ? b->h->labels(b->h->arg, r) : 0;

	return set ? set : FR_APP_REF_NONE;
}

/* A blocked thread's stack copy, from the walker (recorder/sampling/bpf_walk.h),
 * unwound with the drain's handler. */
static unsigned unwind_copy(void *arg, const struct fr_bpf_walk_regs *r, const uint8_t *data,
			    size_t len, uint64_t *ips, unsigned room)
{
	struct fr_bpf_offcpu *b = arg;
	struct fr_unwind_regs regs = {.ip = r->ip, .sp = r->sp, .bp = r->bp};
	struct fr_unwind_stack stack = {.sp = r->sp, .data = data, .size = len};

	return fr_perf_unwind_user(&b->unwind, b->h, r->pid, &regs, &stack, ips, room);
}

/* The ring buffer's size: the default for the record size, or
 * FLIGHTREC_BPF_RINGBUF (bytes; a test knob, so that a test can overflow it
 * for certain on a small machine: tests/integration/offcpu_drops.sh). */
static uint32_t ringbuf_bytes(uint32_t stack_copy)
{
	const char *env = getenv("FLIGHTREC_BPF_RINGBUF");
	unsigned long long v;
	char *end;

	if (!env || !*env)
		return stack_copy ? RINGBUF_COPY_BYTES : RINGBUF_BYTES;
	errno = 0;
	v = strtoull(env, &end, 10);
	if (errno || *end || v < RINGBUF_MIN_BYTES || v > RINGBUF_MAX_BYTES || (v & (v - 1))) {
		fr_log_warn("offcpu: FLIGHTREC_BPF_RINGBUF=%s is not a power of two of bytes "
			    "from %u to %u; the default size is used",
			    env, RINGBUF_MIN_BYTES, RINGBUF_MAX_BYTES);
		return stack_copy ? RINGBUF_COPY_BYTES : RINGBUF_BYTES;
	}
	fr_log_info("offcpu: a ring buffer of %llu bytes (FLIGHTREC_BPF_RINGBUF)", v);
	return (uint32_t)v;
}

/* Opens and loads one variant of the program into b->skel: task_work 1,
 * on_switch_tw alone; 0, on_switch with on_sys_exit; 2, on_switch_empty
 * alone (records nothing: the cost floor, FLIGHTREC_BPF_EMPTY=1). */
static int load_variant(struct fr_bpf_offcpu *b, int task_work)
{
	int ret;

	b->skel = offcpu_bpf__open();
	if (!b->skel)
		return -errno;
	b->skel->rodata->min_wait_ns = b->min_wait_ns;
	b->skel->rodata->stack_copy = b->stack_copy;
	bpf_map__set_max_entries(b->skel->maps.waits, b->ringbuf_bytes);
	bpf_program__set_autoload(b->skel->progs.on_switch_tw, task_work == 1);
	bpf_program__set_autoload(b->skel->progs.on_switch, task_work == 0);
	bpf_program__set_autoload(b->skel->progs.on_sys_exit, task_work == 0);
	bpf_program__set_autoload(b->skel->progs.on_switch_empty, task_work == 2);
	/* The wakes: what woke a long wait (wakeup), and when a blocked thread
	 * became runnable (runqueue). */
	bpf_program__set_autoload(b->skel->progs.on_waking, task_work != 2 && b->extra);
	b->skel->rodata->wake_records = (b->extra & FR_PERF_OFFCPU_WAKEUP) != 0;
	b->skel->rodata->rq_records = (b->extra & FR_PERF_OFFCPU_RUNQUEUE) != 0;
	/* The labels program's process map, so both read the same processes. */
	if (b->labels_map_fd >= 0 &&
	    bpf_map__reuse_fd(b->skel->maps.label_procs, b->labels_map_fd) < 0)
		fr_log_warn("offcpu: cannot share the application labels' map (%s); waits "
			    "carry no application labels",
			    strerror(errno));
	/* And its Python maps: the waits of the CPython processes it reads
	 * carry their Python frames. */
	if (b->py_procs_fd >= 0 && b->py_threads_fd >= 0 &&
	    (bpf_map__reuse_fd(b->skel->maps.py_procs, b->py_procs_fd) < 0 ||
	     bpf_map__reuse_fd(b->skel->maps.py_threads, b->py_threads_fd) < 0))
		fr_log_warn("offcpu: cannot share the Python frames' maps (%s); waits carry "
			    "native frames only",
			    strerror(errno));
	ret = offcpu_bpf__load(b->skel);
	if (ret < 0) {
		offcpu_bpf__destroy(b->skel);
		b->skel = NULL;
		return ret;
	}
	b->task_work = task_work;
	return 0;
}

int fr_bpf_offcpu_open(struct fr_bpf_offcpu **out, uint64_t min_wait_ns, uint32_t stack_copy,
		       uint32_t extra, int labels_map_fd, int py_procs_fd, int py_threads_fd,
		       char *err, size_t errlen)
{
	struct fr_bpf_offcpu *b = calloc(1, sizeof(*b));
	const char *tw, *empty;
	int ret;

	if (!b)
		return -ENOMEM;
	fr_bpf_log_to_ours();
	if (stack_copy % 8 || stack_copy > FR_BPF_STACK_MAX) {
		snprintf(err, errlen, "offcpu: stack copy must be a multiple of 8 up to %u, got %u",
			 FR_BPF_STACK_MAX, stack_copy);
		free(b);
		return -EINVAL;
	}
	b->min_wait_ns = min_wait_ns;
	b->stack_copy = stack_copy;
	b->extra = extra;
	b->wakes = fr_bpf_wakes_new(extra, min_wait_ns, stack_copy);
	b->labels_map_fd = labels_map_fd;
	b->py_procs_fd = py_procs_fd;
	b->py_threads_fd = py_threads_fd;
	b->ringbuf_bytes = ringbuf_bytes(stack_copy);
	b->ncpus = libbpf_num_possible_cpus();
	b->percpu = b->ncpus > 0 ? calloc((size_t)b->ncpus, sizeof(*b->percpu)) : NULL;
	if (!b->percpu || !b->wakes) {
		fr_bpf_offcpu_close(b); /* nothing loaded yet */
		return -ENOMEM;
	}
	/* The task-work kfunc (Linux 6.18) spares every system call a program;
	 * without it, user stacks are taken at sys_exit. FLIGHTREC_BPF_TASK_WORK=0
	 * takes the fallback on any kernel (to compare the two, and to test it). */
	tw = getenv("FLIGHTREC_BPF_TASK_WORK");
	empty = getenv("FLIGHTREC_BPF_EMPTY");
	if (empty && !strcmp(empty, "1")) {
		/* Measures the floor of attaching at all (offcpu_cost.sh): no waits
		 * are recorded. Never set outside a benchmark. */
		fr_log(FR_LOG_WARN, "offcpu: FLIGHTREC_BPF_EMPTY=1: an empty program, "
				    "no off-CPU data");
		ret = load_variant(b, 2);
		if (ret < 0)
			goto load_fail;
		goto loaded;
	}
	ret = tw && !strcmp(tw, "0") ? -EPERM : load_variant(b, 1);
	if (ret < 0) {
		fr_log(FR_LOG_INFO,
		       "offcpu: no BPF task work here (%s): user stacks at system call returns",
		       strerror(-ret));
		ret = load_variant(b, 0);
	}
load_fail:
	if (ret < 0) {
		snprintf(err, errlen,
			 "offcpu: cannot load the eBPF program (%s; it needs BTF in "
			 "/sys/kernel/btf/vmlinux, CAP_BPF and CAP_PERFMON, Linux 5.11 or later)",
			 strerror(-ret));
		goto fail;
	}
loaded:
	ret = fr_bpf_walk_new(&b->walk, b->stack_copy);
	if (ret < 0) {
		snprintf(err, errlen, "offcpu: cannot start the stack walker (%s)", strerror(-ret));
		goto fail;
	}
	b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.waits), on_record, b, NULL);
	if (!b->rb) {
		ret = -errno;
		snprintf(err, errlen, "offcpu: cannot map the eBPF ring buffer (%s)",
			 strerror(-ret));
		goto fail;
	}
	*out = b;
	return 0;
fail:
	fr_bpf_offcpu_close(b);
	return ret < 0 ? ret : -EINVAL;
}

int fr_bpf_offcpu_enable(struct fr_bpf_offcpu *b, int on)
{
	int ret;

	if (!on) {
		offcpu_bpf__detach(b->skel);
		bpf_link__destroy(b->iter);
		b->iter = NULL;
		return 0;
	}
	if (b->iter)
		return 0;
	ret = offcpu_bpf__attach(b->skel);
	if (ret < 0)
		return ret;
	b->iter = bpf_program__attach_iter(b->skel->progs.list_open, NULL);
	if (!b->iter) {
		ret = -errno;
		offcpu_bpf__detach(b->skel);
		return ret;
	}
	return 0;
}

unsigned fr_bpf_offcpu_nfds(const struct fr_bpf_offcpu *b)
{
	return fr_bpf_walk_fd(b->walk) >= 0 ? 2 : 1;
}

int fr_bpf_offcpu_fd(const struct fr_bpf_offcpu *b, unsigned i)
{
	return i == 0 ? ring_buffer__epoll_fd(b->rb) : fr_bpf_walk_fd(b->walk);
}

/* The waits the program dropped since the last drain (its ring buffer
 * full, or no storage), into the offcpu event's lost of the open chunk,
 * as a PERF_RECORD_LOST: they were waits between the last drain and
 * this one, within a second or so of the chunk's span. */
static void take_drops(struct fr_bpf_offcpu *b, const struct fr_perf_handler *h)
{
	uint32_t zero = 0;
	uint64_t lost;

	if (!b->percpu || !h->lost ||
	    bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.counters), &zero, b->percpu) < 0)
		return; /* counted at the next drain */
	lost = fr_drops_take(&b->drops_taken, b->percpu, (size_t)b->ncpus, sizeof(*b->percpu),
			     offsetof(struct fr_bpf_counters, drops));
	if (lost)
		h->lost(h->arg, FR_EVENT_OFFCPU, lost);
	lost = fr_drops_take(&b->wake_drops_taken, b->percpu, (size_t)b->ncpus, sizeof(*b->percpu),
			     offsetof(struct fr_bpf_counters, wake_drops));
	if (lost)
		h->lost(h->arg, FR_EVENT_WAKEUP, lost);
}

uint64_t fr_bpf_offcpu_drain(struct fr_bpf_offcpu *b, const struct fr_perf_handler *h,
			     int64_t clock_offset)
{
	int n;

	if (!h->sample)
		return 0;
	b->h = h;
	b->clock_offset = clock_offset;
	n = ring_buffer__consume(b->rb);
	/* After the records: a drop counted now was made before this read,
	 * so no wait is both kept and lost. */
	take_drops(b, h);
	/* Wakes whose wait never came (the thread exited, the record was
	 * lost): without the woken thread's labels, never dropped. */
	fr_bpf_wakes_expire(b->wakes, h, (uint64_t)fr_now_mono_ns());
	/* The blocked threads' copies the walker made: unwound here, where
	 * the tables are, for the next seal's open waits. */
	fr_bpf_walk_collect(b->walk, unwind_copy, walk_labels, b);
	return n > 0 ? (uint64_t)n : 0;
}

/* A blocked thread of a CPython process: its layout and thread state,
 * from the programs' maps (its state found at one of its samples or
 * waits), for the walker to read its Python frames with its stack. */
static void python_thread(struct fr_bpf_offcpu *b, const struct fr_bpf_open *o,
			  const struct fr_bpf_py_proc *pp, struct fr_bpf_walk_regs *r)
{
	struct fr_bpf_py_thread t;
	uint32_t tid = o->tid;

	r->py = *pp;
	/* Not found yet (blocked since before its process was read): the
	 * reader looks for it */
	if (b->py_threads_fd >= 0 && bpf_map_lookup_elem(b->py_threads_fd, &tid, &t) == 0 &&
	    t.tstate && t.fsbase == o->fsbase)
		r->py_tstate = t.tstate;
}

uint32_t fr_bpf_offcpu_open_waits(struct fr_bpf_offcpu *b, int64_t clock_offset, uint64_t now_mono,
				  void (*fn)(void *arg, const struct fr_sample *s), void *arg)
{
	struct fr_bpf_open *o = &b->open;
	struct fr_bpf_label_proc lp = {0};
	struct fr_bpf_py_proc pp = {0};
	uint32_t count = 0, runnable = 0, lp_pid = 0;
	bool is_py = false;
	int fd;

	if (!b->iter)
		return 0;
	fd = bpf_iter_create(bpf_link__fd(b->iter));
	if (fd < 0) {
		fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
				   "offcpu: cannot list the blocked threads (%s)", strerror(errno));
		return 0;
	}
	/* The seq file hands out whole records. */
	while (read(fd, o, sizeof(*o)) == (ssize_t)sizeof(*o)) {
		uint32_t nk = o->nr_kernel < FR_MAX_FRAMES ? o->nr_kernel : FR_MAX_FRAMES, n;
		struct fr_sample s = {
			.time_ns = (int64_t)now_mono + clock_offset,
			.pid = o->pid,
			.tid = o->tid,
			.cpu = o->cpu,
			.event = o->runnable ? FR_EVENT_OFFCPU_RUNNABLE : FR_EVENT_OFFCPU_OPEN,
			.weight = now_mono > o->start ? now_mono - o->start : 0,
			.rate_hz = 0,
			.ips = b->ips,
		};

		memcpy(b->ips, o->kips, nk * sizeof(uint64_t));
		n = nk;
		if (o->has_regs && nk < FR_MAX_FRAMES) {
			struct fr_bpf_walk_regs r = {.pid = o->pid,
						     .tid = o->tid,
						     .start = o->start,
						     .ip = o->ip,
						     .sp = o->sp,
						     .bp = o->bp,
						     .tp = o->fsbase};
			uint32_t nu, set = 0;

			/* Where its process keeps its labels, and its Python
			 * layout (records come a process's threads together:
			 * one look-up each). */
			if (o->pid != lp_pid) {
				lp_pid = o->pid;
				if (b->labels_map_fd < 0 ||
				    bpf_map_lookup_elem(b->labels_map_fd, &lp_pid, &lp) < 0)
					memset(&lp, 0, sizeof(lp));
				is_py = b->py_procs_fd >= 0 &&
					bpf_map_lookup_elem(b->py_procs_fd, &lp_pid, &pp) == 0;
			}
			if (is_py)
				python_thread(b, o, &pp, &r);
			r.fr_off = lp.fr_off;
			r.otel_off = lp.otel_off;
			r.go_tls = lp.go_tls;
			r.go_m = lp.go_m;
			r.go_curg = lp.go_curg;
			r.go_labels = lp.go_labels;
			r.go_kind = lp.go_kind;
			nu = fr_bpf_walk_get(b->walk, &r, b->ips + nk, FR_MAX_FRAMES - nk, &set,
					     &b->open_py);
			s.app_ref = set;
			/* Its Python frames, for the ingest to splice in as it
			 * does a wait's (the same kind: they are a wait's) */
			if (b->open_py.n && b->h && b->h->python) {
				b->open_py.kind = FR_BPF_PY_WAIT;
				b->open_py.pid = o->pid;
				b->open_py.tid = o->tid;
				b->open_py.time = now_mono;
				b->h->python(b->h->arg, &b->open_py,
					     FR_BPF_PY_REC_HEAD +
						     b->open_py.n * sizeof(b->open_py.f[0]));
			}

			/* Not walked yet (it will be by the next seal): the IP. */
			if (!nu && o->ip)
				b->ips[nk + nu++] = o->ip;
			n += nu;
		}
		s.nr_kernel = (uint16_t)nk;
		s.nr_frames = (uint16_t)n;
		fn(arg, &s);
		count++;
		runnable += o->runnable != 0;
	}
	close(fd);
	__atomic_add_fetch(&b->open_listed, count, __ATOMIC_RELAXED);
	__atomic_add_fetch(&b->open_runnable, runnable, __ATOMIC_RELAXED);
	return count;
}

/* The wakeup and runqueue counters of the recorder's side. */
static void wake_stats(const struct fr_bpf_offcpu *b, struct fr_perf_offcpu_stats *out)
{
	struct fr_bpf_wake_counts n;

	fr_bpf_wakes_counts(b->wakes, &n);
	out->extra = b->extra;
	out->wakes_irq = n.irq;
	out->wakes_joined = n.joined;
	out->wakes_unjoined = n.unjoined;
	out->rq_samples = n.runqueue;
	out->rq_short = n.rq_short;
}

void fr_bpf_offcpu_stats(const struct fr_bpf_offcpu *b, struct fr_perf_offcpu_stats *out)
{
	struct fr_bpf_counters *per = calloc((size_t)b->ncpus, sizeof(*per));
	struct fr_bpf_walk_counts wc;
	uint32_t zero = 0;

	out->mechanism = FR_PERF_OFFCPU_BPF;
	out->user_stacks_by_task_work = (uint32_t)b->task_work;
	out->min_wait_ns = b->min_wait_ns;
	out->samples = __atomic_load_n(&b->samples, __ATOMIC_RELAXED);
	out->open_listed = __atomic_load_n(&b->open_listed, __ATOMIC_RELAXED);
	out->stack_copy = b->stack_copy;
	out->open_runnable = __atomic_load_n(&b->open_runnable, __ATOMIC_RELAXED);
	fr_bpf_walk_counts(b->walk, &wc);
	wake_stats(b, out);
	out->walks = wc.asked;
	out->walks_dropped = wc.dropped;
	out->walk_copies_short = wc.short_copies;
	if (!per || bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.counters), &zero, per) < 0) {
		free(per);
		return;
	}
	for (int i = 0; i < b->ncpus; i++) {
		out->switch_outs += per[i].switches;
		out->long_waits += per[i].long_waits;
		out->user_stacks += per[i].user_stacks;
		out->no_user += per[i].no_user;
		out->short_records += per[i].short_recs;
		out->drops += per[i].drops;
		out->dropped_ns += per[i].dropped_ns;
		out->label_drops += per[i].label_drops;
		out->short_retries += per[i].short_retries;
		out->copies += per[i].copies;
		out->copies_short += per[i].copy_short;
		out->wakes += per[i].wakes;
		out->wake_drops += per[i].wake_drops;
	}
	free(per);
}

void fr_bpf_offcpu_unwind_stats(const struct fr_bpf_offcpu *b, struct fr_perf_unwind_stats *out)
{
	const uint64_t *in = (const uint64_t *)&b->unwind;
	uint64_t *o = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
}

void fr_bpf_offcpu_close(struct fr_bpf_offcpu *b)
{
	if (!b)
		return;
	bpf_link__destroy(b->iter);
	ring_buffer__free(b->rb);
	offcpu_bpf__destroy(b->skel);
	fr_bpf_walk_free(b->walk);
	fr_bpf_wakes_free(b->wakes);
	free(b->percpu);
	free(b);
}

uint64_t fr_drops_take(uint64_t *seen, const void *percpu, size_t ncpus, size_t stride,
		       size_t offset)
{
	const unsigned char *base = percpu;
	uint64_t sum = 0, delta;

	for (size_t i = 0; i < ncpus; i++) {
		uint64_t v;

		memcpy(&v, base + i * stride + offset, sizeof(v));
		sum += v;
	}
	delta = sum >= *seen ? sum - *seen : 0;
	*seen = sum;
	return delta;
}
