/* The black box's events by eBPF: the loader, the records' decoding and
 * their samples. See recorder/sampling/bpf_events.h; the program is
 * recorder/bpf/events.bpf.c, its skeleton generated at build time.
 */
#include "recorder/sampling/bpf_events.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/store/sample.h"
#include "recorder/sampling/wake_class.h"
#include "core/util/log.h"
#include "core/util/time.h"
#include "recorder/events.skel.h"
#include "recorder/sampling/bpf_offcpu.h"

/* Bytes of user stack a crash copies (the program's stack_copy). */
#define CRASH_STACK_COPY 16384u

_Static_assert(CRASH_STACK_COPY % 8 == 0 && CRASH_STACK_COPY <= FR_BPF_EV_STACK_MAX,
	       "a crash's stack copy is a multiple of 8 within the program's bound");
_Static_assert(FR_EVENT_EXIT == FR_EVENT_EXEC + 1 && FR_EVENT_CRASH == FR_EVENT_EXEC + 2,
	       "the program's kinds index the events in order");

/* Crashes held for their unwind tables at once, and how long each. */
#define CRASH_HELD 8
#define CRASH_WAIT_NS (2 * FR_NS_PER_S)

struct fr_bpf_events {
	struct events_bpf *skel;
	struct ring_buffer *rb;
	int ncpus;
	uint32_t stack_copy;
	struct fr_bpf_ev_counters *percpu;
	uint64_t drops_taken[FR_BPF_EV_KINDS];
	/* The drain's handler while ring_buffer__consume runs. */
	const struct fr_perf_handler *h;
	int64_t clock_offset;
	struct fr_perf_unwind_stats unwind;
	uint64_t bad_records; /* atomic */
	uint64_t ips[FR_MAX_FRAMES];
	/* Crashes whose stack met a table not built yet (a library loaded
	 * just before the crash): their records, copied, unwound again at
	 * each drain until whole or CRASH_WAIT_NS old. */
	struct held_crash {
		void *data;
		size_t size;
		int64_t since; /* monotonic ns */
	} held[CRASH_HELD];
	uint32_t nheld;
};

/* ---- names ------------------------------------------------------------- */

static const char *const signal_names[] = {
	NULL,	     "SIGHUP",	"SIGINT",    "SIGQUIT", "SIGILL",   "SIGTRAP", "SIGABRT", "SIGBUS",
	"SIGFPE",    "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2",  "SIGPIPE", "SIGALRM", "SIGTERM",
	"SIGSTKFLT", "SIGCHLD", "SIGCONT",   "SIGSTOP", "SIGTSTP",  "SIGTTIN", "SIGTTOU", "SIGURG",
	"SIGXCPU",   "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO",   "SIGPWR",  "SIGSYS",
};

const char *fr_signal_name(int sig)
{
	if (sig <= 0 || (size_t)sig >= sizeof(signal_names) / sizeof(signal_names[0]))
		return NULL;
	return signal_names[sig];
}

struct code_name {
	int sig; /* 0: any signal */
	int code;
	const char *name;
};

/* si_code values (include/uapi/asm-generic/siginfo.h). */
static const struct code_name code_names[] = {
	{0, 0, "SI_USER"},	 {0, 0x80, "SI_KERNEL"},       {0, -1, "SI_QUEUE"},
	{0, -2, "SI_TIMER"},	 {0, -3, "SI_MESGQ"},	       {0, -4, "SI_ASYNCIO"},
	{0, -5, "SI_SIGIO"},	 {0, -6, "SI_TKILL"},	       {4, 1, "ILL_ILLOPC"},
	{4, 2, "ILL_ILLOPN"},	 {4, 3, "ILL_ILLADR"},	       {4, 4, "ILL_ILLTRP"},
	{4, 5, "ILL_PRVOPC"},	 {4, 6, "ILL_PRVREG"},	       {4, 7, "ILL_COPROC"},
	{4, 8, "ILL_BADSTK"},	 {4, 9, "ILL_BADIADDR"},       {8, 1, "FPE_INTDIV"},
	{8, 2, "FPE_INTOVF"},	 {8, 3, "FPE_FLTDIV"},	       {8, 4, "FPE_FLTOVF"},
	{8, 5, "FPE_FLTUND"},	 {8, 6, "FPE_FLTRES"},	       {8, 7, "FPE_FLTINV"},
	{8, 8, "FPE_FLTSUB"},	 {8, 14, "FPE_FLTUNK"},	       {8, 15, "FPE_CONDTRAP"},
	{11, 1, "SEGV_MAPERR"},	 {11, 2, "SEGV_ACCERR"},       {11, 3, "SEGV_BNDERR"},
	{11, 4, "SEGV_PKUERR"},	 {11, 5, "SEGV_ACCADI"},       {11, 6, "SEGV_ADIDERR"},
	{11, 7, "SEGV_ADIPERR"}, {11, 8, "SEGV_MTEAERR"},      {11, 9, "SEGV_MTESERR"},
	{11, 10, "SEGV_CPERR"},	 {7, 1, "BUS_ADRALN"},	       {7, 2, "BUS_ADRERR"},
	{7, 3, "BUS_OBJERR"},	 {7, 4, "BUS_MCEERR_AR"},      {7, 5, "BUS_MCEERR_AO"},
	{5, 1, "TRAP_BRKPT"},	 {5, 2, "TRAP_TRACE"},	       {5, 3, "TRAP_BRANCH"},
	{5, 4, "TRAP_HWBKPT"},	 {5, 5, "TRAP_UNK"},	       {5, 6, "TRAP_PERF"},
	{31, 1, "SYS_SECCOMP"},	 {31, 2, "SYS_USER_DISPATCH"},
};

const char *fr_si_code_name(int sig, int code)
{
	/* A signal's own codes are positive (SI_KERNEL aside); 0 and the
	 * negative ones are any signal's: who sent it. */
	for (size_t i = 0; i < sizeof(code_names) / sizeof(code_names[0]); i++) {
		const struct code_name *c = &code_names[i];

		if (c->code == code &&
		    (c->sig == sig || (c->sig == 0 && (code <= 0 || code == 0x80))))
			return c->name;
	}
	return NULL;
}

/* ---- decoding ---------------------------------------------------------- */

static void head_of(const struct fr_bpf_ev_head *h, uint32_t event, struct fr_bpf_event *out)
{
	out->event = event;
	out->pid = h->pid;
	out->tid = h->tid;
	out->cpu = h->cpu;
	out->time_mono = h->time;
	memcpy(out->comm, h->comm, sizeof(h->comm));
	out->comm[sizeof(h->comm)] = '\0';
	out->comm[strnlen(out->comm, sizeof(h->comm))] = '\0';
}

int fr_bpf_event_decode(const void *data, size_t size, uint32_t stack_copy,
			struct fr_bpf_event *out)
{
	const struct fr_bpf_ev_head *h = data;

	memset(out, 0, sizeof(*out));
	if (!data || size < sizeof(*h))
		return -EINVAL;
	switch (h->kind) {
	case FR_BPF_EV_EXEC: {
		const struct fr_bpf_ev_exec *r = data;
		size_t n;

		if (size < sizeof(*r) || r->path_len >= sizeof(r->path))
			return -EINVAL;
		head_of(h, FR_EVENT_EXEC, out);
		out->ppid = r->ppid;
		out->old_pid = r->old_pid;
		n = strnlen(r->path, r->path_len);
		memcpy(out->path, r->path, n);
		out->path[n] = '\0';
		return 0;
	}
	case FR_BPF_EV_EXIT: {
		const struct fr_bpf_ev_exit *r = data;
		int sig;

		if (size < sizeof(*r))
			return -EINVAL;
		head_of(h, FR_EVENT_EXIT, out);
		sig = (int)(r->code & 0x7f);
		if (sig == 0) {
			out->exited = 1;
			out->status = (int)((r->code >> 8) & 0xff);
		} else {
			out->signal = sig;
			out->core = (r->code & 0x80) != 0;
			out->sender_kernel = (r->flags & FR_BPF_EV_SENDER_KERNEL) != 0;
			out->has_sender = !out->sender_kernel && (r->flags & FR_BPF_EV_SENDER);
			if (out->has_sender) {
				size_t n = strnlen(r->sender_comm, sizeof(r->sender_comm));

				out->sender_pid = r->sender_pid;
				out->sender_uid = r->sender_uid;
				memcpy(out->sender_comm, r->sender_comm, n);
				out->sender_comm[n] = '\0';
			}
		}
		out->lifetime_ns = r->lifetime_ns;
		out->cpu_ns = r->cpu_ns;
		return 0;
	}
	case FR_BPF_EV_CRASH: {
		const struct fr_bpf_ev_crash *r = data;

		if (size < sizeof(*r) || size - sizeof(*r) < stack_copy ||
		    r->nr_user > stack_copy || r->nr_kernel > FR_BPF_FRAMES || r->sig <= 0 ||
		    r->sig > 64)
			return -EINVAL;
		head_of(h, FR_EVENT_CRASH, out);
		out->signal = r->sig;
		out->code = r->code;
		out->has_addr = (r->flags & FR_BPF_EV_HAS_ADDR) != 0;
		out->addr = out->has_addr ? r->addr : 0;
		out->has_regs = (r->flags & FR_BPF_EV_HAS_REGS) != 0 && r->ip;
		out->ip = r->ip;
		out->sp = r->sp;
		out->bp = r->bp;
		out->nr_kernel = r->nr_kernel;
		out->kips = (const uint64_t *)r->kips;
		out->nr_user = out->has_regs ? r->nr_user : 0;
		out->stack = r->stack;
		/* Labels of another thread, or lengths past their arrays: none. */
		if ((r->flags & FR_BPF_EV_HAS_LABELS) && r->labels.tid == r->h.tid &&
		    r->labels.pid == r->h.pid && r->labels.fr_len <= FR_BPF_LABELS_FR_MAX &&
		    r->labels.otel_len <= FR_BPF_LABELS_OTEL_MAX &&
		    r->labels.go_n <= FR_BPF_LABELS_GO_PAIRS)
			out->labels = &r->labels;
		return 0;
	}
	}
	return -EINVAL;
}

/* The name of sig, or its number. */
static void signal_text(int sig, char *buf, size_t len)
{
	const char *name = fr_signal_name(sig);

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "%d", sig);
}

static void add(struct fr_bpf_event_labels *out, uint32_t *n, const char *key)
{
	out->pairs[*n].key = key;
	out->pairs[*n].value = out->values[*n];
	(*n)++;
}

uint32_t fr_bpf_event_labels(const struct fr_bpf_event *ev, struct fr_bpf_event_labels *out)
{
	const size_t len = sizeof(out->values[0]);
	uint32_t n = 0;

	memset(out, 0, sizeof(*out));
	switch (ev->event) {
	case FR_EVENT_EXEC:
		if (ev->path[0]) {
			snprintf(out->values[n], len, "%s", ev->path);
			add(out, &n, "path");
		}
		snprintf(out->values[n], len, "%" PRIu32, ev->ppid);
		add(out, &n, "ppid");
		if (ev->old_pid && ev->old_pid != ev->pid) {
			snprintf(out->values[n], len, "%" PRIu32, ev->old_pid);
			add(out, &n, "old_pid");
		}
		break;
	case FR_EVENT_EXIT:
		if (ev->exited) {
			snprintf(out->values[n], len, "%d", ev->status);
			add(out, &n, "exit_code");
		} else {
			signal_text(ev->signal, out->values[n], len);
			add(out, &n, "signal");
			if (ev->core) {
				snprintf(out->values[n], len, "1");
				add(out, &n, "core");
			}
			if (ev->sender_kernel) {
				snprintf(out->values[n], len, "kernel");
				add(out, &n, "sender");
			} else if (ev->has_sender) {
				snprintf(out->values[n], len, "%" PRIu32, ev->sender_pid);
				add(out, &n, "sender_pid");
				snprintf(out->values[n], len, "%" PRIu32, ev->sender_uid);
				add(out, &n, "sender_uid");
				/* A name the sender chose: printable bytes only. */
				snprintf(out->values[n], len, "%s", ev->sender_comm);
				for (char *c = out->values[n]; *c; c++)
					if ((unsigned char)*c < 0x20 || *c == 0x7f)
						*c = '?';
				add(out, &n, "sender_comm");
			}
		}
		snprintf(out->values[n], len, "%" PRIu64, ev->cpu_ns);
		add(out, &n, "cpu_ns");
		break;
	case FR_EVENT_CRASH: {
		const char *code = fr_si_code_name(ev->signal, ev->code);

		signal_text(ev->signal, out->values[n], len);
		add(out, &n, "signal");
		if (code)
			snprintf(out->values[n], len, "%s", code);
		else
			snprintf(out->values[n], len, "%d", ev->code);
		add(out, &n, "code");
		if (ev->has_addr) {
			snprintf(out->values[n], len, "0x%" PRIx64, ev->addr);
			add(out, &n, "addr");
		}
		break;
	}
	}
	return n;
}

/* ---- the drain --------------------------------------------------------- */

/* A crash's frames into b->ips: kernel, then the user stack unwound. */
static uint32_t crash_frames(struct fr_bpf_events *b, const struct fr_bpf_event *ev,
			     uint16_t *nr_kernel)
{
	uint32_t nk = ev->nr_kernel < FR_MAX_FRAMES ? ev->nr_kernel : FR_MAX_FRAMES;
	struct fr_unwind_regs regs = {.ip = ev->ip, .sp = ev->sp, .bp = ev->bp};
	struct fr_unwind_stack stack = {.sp = ev->sp, .data = ev->stack, .size = ev->nr_user};
	/* The program's own frame and bpf_trace_run* say nothing of the
	 * crash: the stack starts at get_signal (kallsyms read at the first
	 * crash; without them the stack is kept whole). */
	uint32_t skip = fr_wake_class_tracing_frames(fr_wake_class_machine(), ev->kips, nk);

	nk -= skip;
	memcpy(b->ips, ev->kips + skip, nk * sizeof(uint64_t));
	*nr_kernel = (uint16_t)nk;
	if (!ev->has_regs || nk >= FR_MAX_FRAMES)
		return nk;
	return nk + fr_perf_unwind_user(&b->unwind, b->h, ev->pid, &regs, &stack, b->ips + nk,
					FR_MAX_FRAMES - nk);
}

/* Whether a crash unwound into b->ips (n frames) waits for its table:
 * its stack stops at one not built yet, and there is room. The record is
 * copied (the ring buffer's is given back once this returns). */
static bool hold_crash(struct fr_bpf_events *b, const void *data, size_t size, uint32_t n)
{
	struct held_crash *c;

	if (!n || b->ips[n - 1] != FR_FRAME_MARK_ADDR(FR_UNWIND_PENDING) || b->nheld >= CRASH_HELD)
		return false;
	c = &b->held[b->nheld];
	c->data = malloc(size);
	if (!c->data)
		return false;
	memcpy(c->data, data, size);
	c->size = size;
	c->since = fr_now_mono_ns();
	b->nheld++;
	return true;
}

/* Decodes and hands over one record; `may_hold`: a crash whose table is
 * not built yet may wait (hold_crash) instead. Returns 1 when held. */
static int handle_record(struct fr_bpf_events *b, const void *data, size_t size, bool may_hold)
{
	const struct fr_perf_handler *h = b->h;
	struct fr_bpf_event ev;
	struct fr_bpf_event_labels lb;
	struct fr_sample s = {.rate_hz = 0, .weight = 1, .ips = b->ips};
	uint32_t base = 0, n;

	if (fr_bpf_event_decode(data, size, b->stack_copy, &ev) < 0) {
		const struct fr_bpf_ev_head *hd = data;

		/* Not kept: a lost sample of its kind, when it says one. */
		__atomic_add_fetch(&b->bad_records, 1, __ATOMIC_RELAXED);
		if (size >= sizeof(hd->kind) && hd->kind >= FR_BPF_EV_EXEC &&
		    hd->kind < FR_BPF_EV_EXEC + FR_BPF_EV_KINDS && h->lost)
			h->lost(h->arg, FR_EVENT_EXEC + (hd->kind - FR_BPF_EV_EXEC), 1);
		return 0;
	}
	s.event = ev.event;
	s.pid = ev.pid;
	s.tid = ev.tid;
	s.cpu = ev.cpu;
	s.time_ns = (int64_t)ev.time_mono + b->clock_offset;
	if (ev.event == FR_EVENT_EXIT)
		s.weight = ev.lifetime_ns;
	if (ev.event == FR_EVENT_CRASH) {
		s.nr_frames = (uint16_t)crash_frames(b, &ev, &s.nr_kernel);
		if (may_hold && hold_crash(b, data, size, s.nr_frames))
			return 1;
		if (ev.labels && h->labels)
			base = h->labels(h->arg, ev.labels);
	}
	if (base == FR_APP_REF_NONE)
		base = 0;
	n = fr_bpf_event_labels(&ev, &lb);
	s.app_ref = h->labels_event  ? h->labels_event(h->arg, base, lb.pairs, n)
		    : h->labels_plus ? h->labels_plus(h->arg, base, lb.pairs, n)
				     : base;
	if (!s.app_ref)
		s.app_ref = FR_APP_REF_NONE;
	if (h->blackbox)
		h->blackbox(h->arg, &s, &ev);
	else
		h->sample(h->arg, &s);
	return 0;
}

static int on_record(void *ctx, void *data, size_t size)
{
	handle_record(ctx, data, size, true);
	return 0;
}

/* The held crashes unwound again: those now whole, or waited for long
 * enough (then taken as they are), handed over. */
static void retry_held(struct fr_bpf_events *b)
{
	int64_t now = fr_now_mono_ns();
	uint32_t kept = 0;

	for (uint32_t i = 0; i < b->nheld; i++) {
		struct held_crash c = b->held[i];
		struct fr_bpf_event ev;
		uint32_t n = 0;
		uint16_t nk;

		if (fr_bpf_event_decode(c.data, c.size, b->stack_copy, &ev) == 0)
			n = crash_frames(b, &ev, &nk);
		if (n && b->ips[n - 1] == FR_FRAME_MARK_ADDR(FR_UNWIND_PENDING) &&
		    now - c.since < CRASH_WAIT_NS) {
			b->held[kept++] = c;
			continue;
		}
		handle_record(b, c.data, c.size, false);
		free(c.data);
	}
	b->nheld = kept;
}

/* The records the program had no room for since the last drain, into
 * their events' lost. */
static void take_drops(struct fr_bpf_events *b, const struct fr_perf_handler *h)
{
	uint32_t zero = 0;

	if (!b->percpu || !h->lost ||
	    bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.counters), &zero, b->percpu) < 0)
		return;
	for (uint32_t i = 0; i < FR_BPF_EV_KINDS; i++) {
		uint64_t lost = fr_drops_take(&b->drops_taken[i], b->percpu, (size_t)b->ncpus,
					      sizeof(*b->percpu),
					      offsetof(struct fr_bpf_ev_counters, drops) +
						      i * sizeof(uint64_t));

		if (lost)
			h->lost(h->arg, FR_EVENT_EXEC + i, lost);
	}
}

uint64_t fr_bpf_events_drain(struct fr_bpf_events *b, const struct fr_perf_handler *h,
			     int64_t clock_offset)
{
	int n;

	if (!b || !h->sample)
		return 0;
	b->h = h;
	b->clock_offset = clock_offset;
	/* Before the new records: a crash held earlier goes first. */
	retry_held(b);
	n = ring_buffer__consume(b->rb);
	/* After the records, as the off-CPU drain: a drop counted now was
	 * made before this read. */
	take_drops(b, h);
	return n > 0 ? (uint64_t)n : 0;
}

/* ---- loading ----------------------------------------------------------- */

int fr_bpf_events_open(struct fr_bpf_events **out, int labels_map_fd, char *err, size_t errlen)
{
	struct fr_bpf_events *b = calloc(1, sizeof(*b));
	int ret;

	if (!b)
		return -ENOMEM;
	fr_bpf_log_to_ours();
	b->stack_copy = CRASH_STACK_COPY;
	b->ncpus = libbpf_num_possible_cpus();
	b->percpu = b->ncpus > 0 ? calloc((size_t)b->ncpus, sizeof(*b->percpu)) : NULL;
	b->skel = b->percpu ? events_bpf__open() : NULL;
	if (!b->skel) {
		ret = -(errno ? errno : ENOMEM);
		snprintf(err, errlen, "cannot open the eBPF program (%s)", strerror(-ret));
		goto fail;
	}
	b->skel->rodata->stack_copy = b->stack_copy;
	if (labels_map_fd >= 0 && bpf_map__reuse_fd(b->skel->maps.label_procs, labels_map_fd) < 0)
		fr_log_warn("blackbox: cannot share the application labels' map (%s); crashes "
			    "carry no application labels of their process",
			    strerror(errno));
	ret = events_bpf__load(b->skel);
	if (ret < 0) {
		snprintf(err, errlen,
			 "cannot load the eBPF program (%s; it needs BTF in "
			 "/sys/kernel/btf/vmlinux, CAP_BPF and CAP_PERFMON, Linux 5.11 or later)",
			 strerror(-ret));
		goto fail;
	}
	ret = events_bpf__attach(b->skel);
	if (ret < 0) {
		snprintf(err, errlen, "cannot attach the eBPF program (%s)", strerror(-ret));
		goto fail;
	}
	b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.events), on_record, b, NULL);
	if (!b->rb) {
		ret = -errno;
		snprintf(err, errlen, "cannot map the eBPF ring buffer (%s)", strerror(-ret));
		goto fail;
	}
	*out = b;
	return 0;
fail:
	fr_bpf_events_close(b);
	return ret < 0 ? ret : -EINVAL;
}

int fr_bpf_events_fd(const struct fr_bpf_events *b)
{
	return b ? ring_buffer__epoll_fd(b->rb) : -1;
}

void fr_bpf_events_stats(const struct fr_bpf_events *b, struct fr_bpf_events_stats *out)
{
	struct fr_bpf_ev_counters *per;
	uint32_t zero = 0;

	memset(out, 0, sizeof(*out));
	if (!b)
		return;
	out->bad_records = __atomic_load_n(&b->bad_records, __ATOMIC_RELAXED);
	per = calloc((size_t)b->ncpus, sizeof(*per));
	if (!per || bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.counters), &zero, per) < 0) {
		free(per);
		return;
	}
	for (int c = 0; c < b->ncpus; c++) {
		for (uint32_t i = 0; i < FR_BPF_EV_KINDS; i++) {
			out->sent[i] += per[c].sent[i];
			out->drops[i] += per[c].drops[i];
		}
		out->copy_short += per[c].copy_short;
	}
	free(per);
}

void fr_bpf_events_close(struct fr_bpf_events *b)
{
	if (!b)
		return;
	for (uint32_t i = 0; i < b->nheld; i++)
		free(b->held[i].data);
	ring_buffer__free(b->rb);
	events_bpf__destroy(b->skel);
	free(b->percpu);
	free(b);
}
