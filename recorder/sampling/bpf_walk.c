/* User stacks of blocked threads, read on a thread of their own (see
 * recorder/sampling/bpf_walk.h): a cache of stacks keyed by thread and switch-out
 * time, a bounded queue of walks asked for, the walker, and, for stack
 * copies, a bounded pool of copy buffers that go walker -> owner (done
 * list) -> walker (free list).
 */
#include "recorder/sampling/bpf_walk.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/store/sample.h"
#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/util/time.h"
#include "core/util/vmread.h"
#include "recorder/sampling/py_walk.h"

/* Threads whose stacks are remembered (a power of two; 1 KiB each,
 * touched only when used), looked up in PROBE consecutive slots; more
 * blocked threads than that evict others, which are walked again. */
#define SLOTS 16384u
#define PROBE 8u
/* Walks waiting (48 bytes each, touched only when used): as many as the
 * slots, so one seal can ask for every blocked thread it lists. More are
 * dropped (asked again at the next seal). */
#define QUEUE SLOTS
/* Bytes read above sp at once by the frame-pointer walk: most chains are
 * in the first few KiB. */
#define WINDOW 8192u
/* The copy buffers: about this many bytes, at least MIN_BUFS and at most
 * MAX_BUFS buffers of stack_copy bytes. */
#define POOL_BYTES (2u << 20)
#define MIN_BUFS 16u
#define MAX_BUFS 256u
#define PAGE 4096u
#define MAX_IOV (65536u / PAGE + 2u)

enum { SLOT_EMPTY, SLOT_ASKED, SLOT_DONE };

struct slot {
	uint32_t tid, state, n, set;
	uint32_t labelled; /* asked with its process's label offsets */
	uint32_t pyread;   /* asked with its process's Python layout */
	uint64_t start;
	uint64_t ips[FR_MAX_FRAMES];
	struct fr_bpf_py_rec *py; /* its Python frames (allocated when any) */
};

/* A copy buffer and whose stack it holds. */
struct copy {
	struct fr_bpf_walk_regs r;
	size_t len;
	uint8_t *data;
	bool labelled; /* labels copied */
	struct fr_bpf_labels_rec labels;
	struct fr_bpf_py_rec py; /* py.n 0: none */
};

struct fr_bpf_walk {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	/* stop: asked to end; exited: the walker ended; refs: the owner and
	 * the walker, the last one frees. */
	int stop, exited, refs;
	uint32_t stack_copy;
	int efd;
	struct fr_bpf_walk_regs *queue;
	unsigned head, tail;
	uint64_t asked, done, dropped, short_copies;
	struct slot *slots;
	/* Copies: nbufs buffers; free and done hold their indices (a stack
	 * and a FIFO), each at most nbufs long. */
	struct copy *bufs;
	uint32_t nbufs;
	uint32_t *free_list, nfree;
	uint32_t *done_list, done_head, done_n;
	/* The walker's own. */
	uint8_t window[WINDOW];
	uint64_t frames[FR_MAX_FRAMES];
	struct fr_bpf_py_rec py; /* the walker's, for frame-pointer walks */
	/* The owner's own (fr_bpf_walk_collect). */
	uint32_t *taken;
	uint64_t ips[FR_MAX_FRAMES];
};

static void walk_destroy(struct fr_bpf_walk *w)
{
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	if (w->efd >= 0)
		close(w->efd);
	if (w->bufs)
		for (uint32_t i = 0; i < w->nbufs; i++)
			free(w->bufs[i].data);
	free(w->bufs);
	free(w->free_list);
	free(w->done_list);
	free(w->taken);
	free(w->queue);
	for (uint32_t i = 0; w->slots && i < SLOTS; i++)
		free(w->slots[i].py);
	free(w->slots);
	free(w);
}

static void walk_release(struct fr_bpf_walk *w)
{
	int last;

	pthread_mutex_lock(&w->lock);
	last = --w->refs == 0;
	pthread_mutex_unlock(&w->lock);
	if (last)
		walk_destroy(w);
}

/* Reads `len` bytes at `addr` of process `pid`, from the window read at
 * `base` when it holds them. Returns 0 or -1. */
static int read_user(struct fr_bpf_walk *w, uint32_t pid, uint64_t base, size_t have, uint64_t addr,
		     void *buf, size_t len)
{
	if (addr >= base && addr - base <= have && have - (addr - base) >= len) {
		memcpy(buf, w->window + (addr - base), len);
		return 0;
	}
	return fr_proc_vm_read(pid, addr, buf, len);
}

/* The user stack from saved registers: the IP, then the return addresses
 * of the frame-pointer chain. The chain must climb (each frame above the
 * last), and ends at a zero frame pointer, memory that cannot be read or
 * FR_MAX_FRAMES frames. Returns the frames in w->frames. */
static uint32_t walk_one(struct fr_bpf_walk *w, const struct fr_bpf_walk_regs *r)
{
	struct iovec local = {.iov_base = w->window, .iov_len = WINDOW};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)r->sp, .iov_len = WINDOW};
	uint64_t bp = r->bp, frame[2];
	ssize_t got;
	size_t have;
	uint32_t n = 0;

	if (!r->ip)
		return 0;
	w->frames[n++] = r->ip;
	got = process_vm_readv((pid_t)r->pid, &local, 1, &remote, 1, 0);
	have = got > 0 ? (size_t)got : 0;
	while (n < FR_MAX_FRAMES && bp && !(bp & 7) && bp >= r->sp) {
		if (read_user(w, r->pid, r->sp, have, bp, frame, sizeof(frame)) < 0 || !frame[1])
			break;
		w->frames[n++] = frame[1];
		if (frame[0] <= bp)
			break;
		bp = frame[0];
	}
	return n;
}

/* Copies up to `len` bytes of r's stack from sp into buf, a remote iovec
 * per page: process_vm_readv stops at the first page it cannot read and
 * says how much came before it. Returns the bytes copied. */
static size_t copy_stack(const struct fr_bpf_walk_regs *r, uint8_t *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote[MAX_IOV];
	uint64_t at = r->sp, end = r->sp + len;
	unsigned n = 0;
	ssize_t got;

	if (!r->sp || end < at)
		return 0;
	while (at < end && n < MAX_IOV) {
		uint64_t next = (at | (PAGE - 1)) + 1;

		if (next > end || next < at)
			next = end;
		remote[n].iov_base = (void *)(uintptr_t)at;
		remote[n++].iov_len = next - at;
		at = next;
	}
	got = process_vm_readv((pid_t)r->pid, &local, 1, remote, n, 0);
	return got > 0 ? (size_t)got : 0;
}

/* A label record whose pointer is at tp + off (the layout of
 * recorder/bpf/labels_read.h's fr_labels_copy). Returns the bytes copied. */
static uint16_t copy_record(uint32_t pid, uint64_t tp, int64_t off, uint32_t head, uint32_t size_at,
			    uint32_t max, uint8_t *dst)
{
	uint64_t rec = 0;
	uint16_t size;

	if (!off || !tp || fr_proc_vm_read(pid, tp + (uint64_t)off, &rec, sizeof(rec)) < 0 ||
	    !rec || fr_proc_vm_read(pid, rec, dst, head) < 0)
		return 0;
	memcpy(&size, dst + size_at, sizeof(size));
	if (size > max - head)
		size = (uint16_t)(max - head);
	if (size && fr_proc_vm_read(pid, rec + head, dst + head, size) < 0)
		return (uint16_t)head;
	return (uint16_t)(head + size);
}

/* Whether r's process has labels to read. */
static bool has_labels(const struct fr_bpf_walk_regs *r)
{
	return r->fr_off || r->otel_off || r->go_kind;
}

/* ---- a blocked Go thread's goroutine labels, read as the eBPF programs
 * read them at samples (recorder/bpf/labels_read.h's fr_go_copy) ---- */

static int go_ptr(uint32_t pid, uint64_t addr, uint64_t *out)
{
	return fr_proc_vm_read(pid, addr, out, sizeof(*out)) < 0 || !*out ? -1 : 0;
}

/* The pair of string headers kv (key ptr, len, value ptr, len). */
static void go_pair(uint32_t pid, struct fr_bpf_labels_rec *l, const uint64_t kv[4])
{
	struct fr_bpf_go_pair *p;

	if (l->go_n >= FR_BPF_LABELS_GO_PAIRS) {
		l->go_more = 1;
		return;
	}
	p = &l->go[l->go_n++];
	p->klen = kv[1];
	p->vlen = kv[3];
	/* A string that cannot be read is not taken (a length of 0). */
	if (kv[1] <= sizeof(p->k) && (!kv[1] || fr_proc_vm_read(pid, kv[0], p->k, kv[1]) < 0))
		p->klen = 0;
	if (kv[3] <= sizeof(p->v) && kv[3] && fr_proc_vm_read(pid, kv[2], p->v, kv[3]) < 0)
		p->klen = 0;
}

/* Up to Go 1.23: the first 4 buckets of the labels' map. */
static void go_map(uint32_t pid, uint64_t lm, struct fr_bpf_labels_rec *l)
{
	uint64_t h[3], kv[4], nb;
	uint8_t top[8];

	if (go_ptr(pid, lm, &lm) || fr_proc_vm_read(pid, lm, h, sizeof(h)) < 0 || !h[0] || !h[2])
		return;
	nb = 1ull << (((h[1] >> 8) & 0xff) > 6 ? 6 : ((h[1] >> 8) & 0xff));
	l->go_more = nb > 4;
	for (uint64_t b = 0; b < nb && b < 4; b++) {
		uint64_t at = h[2] + b * 272;

		if (fr_proc_vm_read(pid, at, top, sizeof(top)) < 0)
			return;
		for (unsigned i = 0; i < 8; i++) {
			if (top[i] < 5)
				continue;
			if (fr_proc_vm_read(pid, at + 8 + 16 * i, kv, 16) < 0 ||
			    fr_proc_vm_read(pid, at + 136 + 16 * i, kv + 2, 16) < 0)
				return;
			go_pair(pid, l, kv);
		}
	}
	if (l->go_n < h[0])
		l->go_more = 1;
}

static void go_labels(const struct fr_bpf_walk_regs *r, struct fr_bpf_labels_rec *l)
{
	uint64_t g, m, curg, lm, sl[2], kv[4];

	l->go_n = 0;
	l->go_more = 0;
	if (!r->go_kind || !r->tp || go_ptr(r->pid, r->tp + (uint64_t)(int64_t)r->go_tls, &g) ||
	    go_ptr(r->pid, g + r->go_m, &m) || go_ptr(r->pid, m + r->go_curg, &curg) ||
	    go_ptr(r->pid, curg + r->go_labels, &lm))
		return;
	if (r->go_kind == FR_BPF_GO_MAP) {
		go_map(r->pid, lm, l);
		return;
	}
	if (fr_proc_vm_read(r->pid, lm, sl, sizeof(sl)) < 0)
		return;
	l->go_more = sl[1] > FR_BPF_LABELS_GO_PAIRS;
	for (uint64_t i = 0; i < sl[1] && i < FR_BPF_LABELS_GO_PAIRS; i++) {
		if (fr_proc_vm_read(r->pid, sl[0] + 32 * i, kv, sizeof(kv)) < 0)
			return;
		go_pair(r->pid, l, kv);
	}
}

/* The application labels of a blocked thread, read from its process. */
static void copy_labels(const struct fr_bpf_walk_regs *r, struct copy *c)
{
	c->labelled = has_labels(r);
	if (!c->labelled)
		return;
	c->labels.kind = FR_BPF_LABELS_WAIT;
	c->labels.pid = r->pid;
	c->labels.tid = r->tid;
	c->labels.fr_len = copy_record(r->pid, r->tp, r->fr_off, FR_BPF_LABELS_FR_HEAD, 6,
				       FR_BPF_LABELS_FR_MAX, c->labels.fr);
	c->labels.otel_len = copy_record(r->pid, r->tp, r->otel_off, FR_BPF_LABELS_OTEL_HEAD, 26,
					 FR_BPF_LABELS_OTEL_MAX, c->labels.otel);
	go_labels(r, &c->labels);
}

/* The slot of `tid`: its own, else an empty one, else the first probed
 * (evicted). Under lock. */
static struct slot *find_slot(struct fr_bpf_walk *w, uint32_t tid)
{
	uint32_t h = (tid * 2654435761u) & (SLOTS - 1);
	struct slot *empty = NULL;

	for (uint32_t i = 0; i < PROBE; i++) {
		struct slot *s = &w->slots[(h + i) & (SLOTS - 1)];

		if (s->state != SLOT_EMPTY && s->tid == tid)
			return s;
		if (s->state == SLOT_EMPTY && !empty)
			empty = s;
	}
	return empty ? empty : &w->slots[h];
}

/* Stores n frames as r's stack, if its slot still waits for them. Under
 * lock. */
static void store(struct fr_bpf_walk *w, const struct fr_bpf_walk_regs *r, const uint64_t *ips,
		  uint32_t n, uint32_t set, const struct fr_bpf_py_rec *py)
{
	struct slot *s = find_slot(w, r->tid);

	if (s->tid == r->tid && s->start == r->start && s->state == SLOT_ASKED) {
		memcpy(s->ips, ips, n * sizeof(uint64_t));
		s->n = n;
		s->set = set;
		s->state = SLOT_DONE;
		if (s->py)
			s->py->n = 0;
		if (py && py->n && (s->py || (s->py = malloc(sizeof(*s->py))))) {
			s->py->n = py->n;
			s->py->status = py->status;
			memcpy(s->py->f, py->f, py->n * sizeof(py->f[0]));
		}
	}
}

/* Wakes the owner to collect copies. */
static void wake_owner(struct fr_bpf_walk *w)
{
	uint64_t one = 1;

	if (write(w->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
				   "offcpu: cannot wake the recorder for stack copies: %s",
				   strerror(errno));
}

/* One stack copy: waits for a free buffer, copies into it, puts it on the
 * done list. Called and returns under lock. */
static void copy_one(struct fr_bpf_walk *w, const struct fr_bpf_walk_regs *r)
{
	struct copy *c;
	uint32_t i;
	int wake;

	while (!w->nfree && !w->stop)
		pthread_cond_wait(&w->cond, &w->lock);
	if (w->stop)
		return;
	i = w->free_list[--w->nfree];
	c = &w->bufs[i];
	c->r = *r;
	pthread_mutex_unlock(&w->lock);
	c->len = copy_stack(r, c->data, w->stack_copy);
	copy_labels(r, c);
	c->py.n = 0;
	if (r->py.runtime)
		fr_py_walk_user(r->pid, &r->py, r->py_tstate, r->tp, &c->py);
	pthread_mutex_lock(&w->lock);
	if (c->len < w->stack_copy)
		w->short_copies++;
	w->done_list[(w->done_head + w->done_n++) % w->nbufs] = i;
	w->done++;
	/* In batches: when half the buffers wait, or nothing else is asked. */
	wake = w->done_n >= w->nbufs / 2 || w->head == w->tail;
	if (wake) {
		pthread_mutex_unlock(&w->lock);
		wake_owner(w);
		pthread_mutex_lock(&w->lock);
	}
}

static void *walker(void *arg)
{
	struct fr_bpf_walk *w = arg;

	/* Started by the ingest thread on a reload: not at its priority. */
	fr_priority_normal();
	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		struct fr_bpf_walk_regs r;
		uint32_t n;

		if (w->head == w->tail) {
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		r = w->queue[w->head++ % QUEUE];
		if (w->stack_copy) {
			copy_one(w, &r);
			continue;
		}
		pthread_mutex_unlock(&w->lock);
		n = walk_one(w, &r);
		w->py.n = 0;
		if (r.py.runtime)
			fr_py_walk_user(r.pid, &r.py, r.py_tstate, r.tp, &w->py);
		pthread_mutex_lock(&w->lock);
		store(w, &r, w->frames, n, 0, &w->py);
		w->done++;
	}
	w->exited = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	walk_release(w);
	return NULL;
}

/* The copy buffers and their lists. Returns 0 or -ENOMEM. */
static int pool_new(struct fr_bpf_walk *w)
{
	uint32_t n = POOL_BYTES / w->stack_copy;

	n = n < MIN_BUFS ? MIN_BUFS : n > MAX_BUFS ? MAX_BUFS : n;
	w->bufs = calloc(n, sizeof(*w->bufs));
	w->free_list = calloc(n, sizeof(*w->free_list));
	w->done_list = calloc(n, sizeof(*w->done_list));
	w->taken = calloc(n, sizeof(*w->taken));
	if (!w->bufs || !w->free_list || !w->done_list || !w->taken)
		return -ENOMEM;
	w->nbufs = n;
	for (uint32_t i = 0; i < n; i++) {
		w->bufs[i].data = malloc(w->stack_copy);
		if (!w->bufs[i].data)
			return -ENOMEM;
		w->free_list[w->nfree++] = i;
	}
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return w->efd < 0 ? -errno : 0;
}

int fr_bpf_walk_new(struct fr_bpf_walk **out, uint32_t stack_copy)
{
	struct fr_bpf_walk *w = calloc(1, sizeof(*w));
	int ret = -ENOMEM;

	if (!w)
		return -ENOMEM;
	fr_mutex_init_pi(&w->lock);
	pthread_cond_init(&w->cond, NULL);
	w->efd = -1;
	w->stack_copy = stack_copy;
	/* Slots and the queue are touched only as threads block: most stay
	 * unmapped. */
	w->slots = calloc(SLOTS, sizeof(*w->slots));
	w->queue = calloc(QUEUE, sizeof(*w->queue));
	if (!w->slots || !w->queue)
		goto fail;
	if (stack_copy && (ret = pool_new(w)) < 0)
		goto fail;
	w->refs = 2;
	ret = -pthread_create(&w->thread, NULL, walker, w);
	if (ret < 0)
		goto fail;
	pthread_setname_np(w->thread, "fr-stackwalk");
	*out = w;
	return 0;
fail:
	walk_destroy(w);
	return ret;
}

void fr_bpf_walk_free(struct fr_bpf_walk *w)
{
	struct timespec until;
	int exited;

	if (!w)
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_broadcast(&w->cond);
	while (!w->exited && pthread_cond_timedwait(&w->cond, &w->lock, &until) == 0)
		;
	exited = w->exited;
	pthread_mutex_unlock(&w->lock);
	if (exited) {
		pthread_join(w->thread, NULL);
	} else {
		/* Stuck in a read of memory its owner holds back: it frees
		 * the walker when that read ends. */
		fr_log_warn("offcpu: the stack walker is stuck reading a process's memory; "
			    "leaving it behind");
		pthread_detach(w->thread);
	}
	walk_release(w);
}

int fr_bpf_walk_fd(const struct fr_bpf_walk *w)
{
	return w->efd;
}

uint32_t fr_bpf_walk_collect(struct fr_bpf_walk *w, fr_bpf_walk_unwind_fn fn,
			     fr_bpf_walk_labels_fn labels, void *arg)
{
	uint64_t count;
	uint32_t n = 0;

	if (!w->stack_copy)
		return 0;
	if (read(w->efd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
				   "offcpu: cannot read the stack walker's wake-up: %s",
				   strerror(errno));
	/* Take the done list; the buffers are ours until given back. */
	pthread_mutex_lock(&w->lock);
	while (w->done_n) {
		w->taken[n++] = w->done_list[w->done_head];
		w->done_head = (w->done_head + 1) % w->nbufs;
		w->done_n--;
	}
	pthread_mutex_unlock(&w->lock);
	for (uint32_t k = 0; k < n; k++) {
		struct copy *c = &w->bufs[w->taken[k]];
		unsigned nips = 0;
		uint32_t set = 0;

		if (c->r.ip)
			nips = fn(arg, &c->r, c->data, c->len, w->ips, FR_MAX_FRAMES);
		if (c->labelled && labels)
			set = labels(arg, &c->labels);
		pthread_mutex_lock(&w->lock);
		store(w, &c->r, w->ips, nips, set, &c->py);
		w->free_list[w->nfree++] = w->taken[k];
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
	return n;
}

uint32_t fr_bpf_walk_get(struct fr_bpf_walk *w, const struct fr_bpf_walk_regs *r, uint64_t *ips,
			 uint32_t room, uint32_t *set, struct fr_bpf_py_rec *py)
{
	struct slot *s;
	uint32_t n = 0;

	*set = 0;
	py->n = 0;
	pthread_mutex_lock(&w->lock);
	s = find_slot(w, r->tid);
	/* Read before its process's labels or Python layout were found: read
	 * again, for them. */
	if (s->state == SLOT_DONE && s->tid == r->tid && s->start == r->start &&
	    ((!s->labelled && has_labels(r)) || (!s->pyread && r->py.runtime)))
		s->state = SLOT_EMPTY;
	if (s->state != SLOT_EMPTY && s->tid == r->tid && s->start == r->start) {
		if (s->state == SLOT_DONE) {
			n = s->n < room ? s->n : room;
			memcpy(ips, s->ips, n * sizeof(uint64_t));
			*set = s->set;
			if (s->py && s->py->n) {
				py->n = s->py->n;
				py->status = s->py->status;
				memcpy(py->f, s->py->f, s->py->n * sizeof(py->f[0]));
			}
		}
	} else if (w->tail - w->head >= QUEUE) {
		w->dropped++;
	} else {
		s->tid = r->tid;
		s->start = r->start;
		s->state = SLOT_ASKED;
		s->n = 0;
		s->labelled = has_labels(r);
		s->pyread = r->py.runtime != 0;
		w->queue[w->tail++ % QUEUE] = *r;
		w->asked++;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return n;
}

void fr_bpf_walk_counts(struct fr_bpf_walk *w, struct fr_bpf_walk_counts *out)
{
	pthread_mutex_lock(&w->lock);
	out->asked = w->asked;
	out->done = w->done;
	out->dropped = w->dropped;
	out->short_copies = w->short_copies;
	pthread_mutex_unlock(&w->lock);
}
