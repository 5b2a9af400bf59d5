/* User stacks of blocked threads, walked on a thread of their own (see
 * recorder/bpf_walk.h): a cache of walked stacks keyed by thread and
 * switch-out time, a bounded queue of walks asked for, and the walker.
 */
#include "recorder/bpf_walk.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "core/store/sample.h"
#include "core/util/log.h"

/* Threads whose stacks are remembered (a power of two; 1 KiB each,
 * touched only when used), looked up in PROBE consecutive slots; more
 * blocked threads than that evict others, which are walked again. */
#define SLOTS 16384u
#define PROBE 8u
/* Walks waiting; more are dropped (asked again at the next seal). */
#define QUEUE 256u
/* Bytes read above sp at once: most chains are in the first few KiB. */
#define WINDOW 8192u

enum { SLOT_EMPTY, SLOT_ASKED, SLOT_DONE };

struct slot {
	uint32_t tid, state, n, pad;
	uint64_t start;
	uint64_t ips[FR_MAX_FRAMES];
};

struct fr_bpf_walk {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	/* stop: asked to end; exited: the walker ended; refs: the owner and
	 * the walker, the last one frees. */
	int stop, exited, refs;
	struct fr_bpf_walk_regs queue[QUEUE];
	unsigned head, tail;
	uint64_t asked, done, dropped;
	struct slot *slots;
	/* The walker's own. */
	uint8_t window[WINDOW];
	uint64_t frames[FR_MAX_FRAMES];
};

static void walk_release(struct fr_bpf_walk *w)
{
	int last;

	pthread_mutex_lock(&w->lock);
	last = --w->refs == 0;
	pthread_mutex_unlock(&w->lock);
	if (!last)
		return;
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->slots);
	free(w);
}

/* Reads `len` bytes at `addr` of process `pid`, from the window read at
 * `base` when it holds them. Returns 0 or -1. */
static int read_user(struct fr_bpf_walk *w, uint32_t pid, uint64_t base, size_t have, uint64_t addr,
		     void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};

	if (addr >= base && addr - base <= have && have - (addr - base) >= len) {
		memcpy(buf, w->window + (addr - base), len);
		return 0;
	}
	return process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
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

static void *walker(void *arg)
{
	struct fr_bpf_walk *w = arg;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		struct fr_bpf_walk_regs r;
		struct slot *s;
		uint32_t n;

		if (w->head == w->tail) {
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		r = w->queue[w->head++ % QUEUE];
		pthread_mutex_unlock(&w->lock);
		n = walk_one(w, &r);
		pthread_mutex_lock(&w->lock);
		s = find_slot(w, r.tid);
		if (s->tid == r.tid && s->start == r.start && s->state == SLOT_ASKED) {
			memcpy(s->ips, w->frames, n * sizeof(uint64_t));
			s->n = n;
			s->state = SLOT_DONE;
		}
		w->done++;
	}
	w->exited = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	walk_release(w);
	return NULL;
}

int fr_bpf_walk_new(struct fr_bpf_walk **out)
{
	struct fr_bpf_walk *w = calloc(1, sizeof(*w));
	int ret;

	if (!w)
		return -ENOMEM;
	/* Slots are touched only as threads block: most stay unmapped. */
	w->slots = calloc(SLOTS, sizeof(*w->slots));
	if (!w->slots) {
		free(w);
		return -ENOMEM;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->refs = 2;
	ret = pthread_create(&w->thread, NULL, walker, w);
	if (ret != 0) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		free(w->slots);
		free(w);
		return -ret;
	}
	pthread_setname_np(w->thread, "fr-stackwalk");
	*out = w;
	return 0;
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

uint32_t fr_bpf_walk_get(struct fr_bpf_walk *w, const struct fr_bpf_walk_regs *r, uint64_t *ips,
			 uint32_t room)
{
	struct slot *s;
	uint32_t n = 0;

	pthread_mutex_lock(&w->lock);
	s = find_slot(w, r->tid);
	if (s->state != SLOT_EMPTY && s->tid == r->tid && s->start == r->start) {
		if (s->state == SLOT_DONE) {
			n = s->n < room ? s->n : room;
			memcpy(ips, s->ips, n * sizeof(uint64_t));
		}
	} else if (w->tail - w->head >= QUEUE) {
		w->dropped++;
	} else {
		s->tid = r->tid;
		s->start = r->start;
		s->state = SLOT_ASKED;
		s->n = 0;
		w->queue[w->tail++ % QUEUE] = *r;
		w->asked++;
		pthread_cond_signal(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return n;
}

void fr_bpf_walk_counts(struct fr_bpf_walk *w, uint64_t *asked, uint64_t *done, uint64_t *dropped)
{
	pthread_mutex_lock(&w->lock);
	*asked = w->asked;
	*done = w->done;
	*dropped = w->dropped;
	pthread_mutex_unlock(&w->lock);
}
