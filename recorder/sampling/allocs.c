/* Allocation samples (recorder/sampling/allocs.h): the mapped rings, their
 * drain into samples, the live blocks' frees and snapshots, status. */
#include "recorder/sampling/allocs.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/unwind/unwind.h"
#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/util/time.h"
#include "flightrec/alloc_abi.h"
#include "recorder/sampling/alloc_live.h"
#include "recorder/sampling/alloc_rec.h"

/* Work per ring and drain; the rest waits for the next drain. */
#define DRAIN_RECORDS_MAX 4096u
#define DRAIN_BYTES_MAX (4u << 20)
/* The ingest thread's time for the rings, in all, a second: a process
 * that writes records as fast as it can (each unwound) holds it up no
 * longer; the rest waits in its ring (which then drops). */
#define DRAIN_NS_PER_S (100 * 1000000ll)
/* A ring read a last time (its process ended) gets this long. */
#define LAST_DRAIN_NS (10 * 1000000ll)
/* A record not complete for this long is skipped, with all up to head. */
#define STUCK_NS FR_NS_PER_S
/* A sample whose unwind table is not built yet (a process's first
 * moments) waits in its ring for it this long at most, while the ring is
 * less than half full and its process lives; past that it is taken with
 * its stack cut short. */
#define TABLE_WAIT_NS (2 * FR_NS_PER_S)
/* The live table's bounds (docs/architecture.md "Allocation samples"):
 * each snapshot writes every block, about 14 us each on the ingest
 * thread (11,799 took 170 ms of CPU), so 65,536 hold it under a second
 * every FR_HEAP_SNAPSHOT_NS. At the default mean of 512 KiB that is some
 * 32 GiB of sampled heap. */
#define LIVE_PER_PROC 32768u
#define LIVE_TOTAL 65536u
#define LIVE_BYTES (64ull << 20)
/* A record's time is believed from this long before the drain (a
 * recorder held up that long reads old records) to a little after (the
 * process's clock read after the drain's). */
#define TIME_PAST_NS (60 * FR_NS_PER_S)
#define TIME_AHEAD_NS (10 * 1000000ll)
/* Refusals said in the log a minute, at most. */
#define REFUSALS_LOGGED 16
/* A library's loss counters are believed up to this much a ring. */
#define LIB_COUNT_MAX (1ull << 48)

struct ring {
	uint32_t pid;
	int pidfd;
	uint8_t *map;
	size_t map_len;
	struct fr_alloc_header_abi *hdr; /* shared: read with care */
	const uint8_t *data;
	uint64_t data_size, ring_id;
	uint64_t lib_start, lib_end;
	uint64_t tail; /* ours: the process's header may say anything */
	uint64_t stuck_pos;
	int64_t stuck_since; /* monotonic ns; 0: not stuck */
	int64_t table_wait;  /* monotonic ns its first record began to wait
				* for an unwind table; 0: none waits */
	int64_t exit_ns;     /* Unix ns its main thread's exit was seen; 0: none */
	/* Its library's losses already counted as lost: samples, and the
	 * frees of sampled blocks it had no room for or could not track. */
	uint64_t lib_reported, lib_reported_frees;
};

struct fr_allocs {
	const struct fr_chunk_meta_ops *ops;
	struct ring rings[FR_ALLOCS_RINGS_MAX];
	uint32_t nrings;
	uint64_t mapped_bytes;
	uint64_t mean;
	struct fr_alloc_live *live;
	int64_t next_snapshot; /* Unix ns */
	struct fr_perf_unwind_stats unwind;
	uint64_t ips[FR_MAX_FRAMES];
	uint8_t rec[FR_ALLOC_REC_MAX];
	struct fr_bpf_labels_rec labels;
	const struct fr_perf_handler *h; /* where samples go */
	/* While a record's free is emitted: its thread and time. */
	uint32_t free_tid;
	int64_t free_time;
	/* For status (atomics; last_refusal under lock). */
	uint32_t procs;
	uint64_t refused, samples, frees_matched, frees_unmatched, live_blocks, evicted;
	uint64_t lib_dropped_gone, lib_dropped, lib_frees_gone, lib_frees_lost;
	uint64_t evicted_reported; /* the live table's evictions counted as lost */
	uint64_t skipped_bytes, bad_records, live_bytes;
	/* The drains' time budget: the second it counts (monotonic ns),
	 * what is left of it, the end of the current drain's; the ring the
	 * drain starts with. */
	int64_t second, budget_left, budget_end;
	uint32_t first;
	bool busy;		/* a ring was an eighth full at the last drain */
	int64_t refusals_since; /* monotonic ns the minute began */
	uint32_t refusals_logged;
	pthread_mutex_t lock;
	char last_refusal[160];
};

struct fr_allocs *fr_allocs_new(const struct fr_chunk_meta_ops *ops,
				const struct fr_perf_handler *h)
{
	struct fr_allocs *a = calloc(1, sizeof(*a));
	struct fr_alloc_live_limits lim = {LIVE_PER_PROC, LIVE_TOTAL, LIVE_BYTES};

	if (!a)
		return NULL;
	a->ops = ops;
	a->h = h;
	a->mean = FR_ALLOC_MEAN_DEFAULT;
	a->live = fr_alloc_live_new(&lim);
	if (!a->live) {
		free(a);
		return NULL;
	}
	fr_mutex_init_pi(&a->lock);
	return a;
}

/* ---- the samples ---- */

static uint64_t add(uint64_t *c, uint64_t n)
{
	return __atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

/* The record's thread when the tracker knows it as one of `pid`'s (the
 * record says what it likes), else the process. */
static uint32_t thread_of(struct fr_allocs *a, uint32_t pid, uint32_t tid)
{
	struct fr_thread_info ti;

	if (tid == pid || !a->ops || !a->ops->thread || a->ops->thread(a->ops->arg, tid, &ti) < 0 ||
	    ti.pid != pid)
		return pid;
	return tid;
}

static void emit(struct fr_allocs *a, uint32_t event, const struct fr_alloc_block *b, uint32_t tid,
		 int64_t time_ns)
{
	struct fr_sample s = {
		.time_ns = time_ns,
		.pid = b->pid,
		.tid = tid,
		.event = event,
		.weight = b->size,
		.rate_hz = b->mean > UINT32_MAX ? UINT32_MAX : (uint32_t)b->mean,
		.nr_frames = b->nframes,
		.ips = b->ips,
		.app_ref = FR_APP_REF_NONE,
	};

	a->h->sample(a->h->arg, &s);
}

static void emit_free(void *arg, const struct fr_alloc_block *b)
{
	struct fr_allocs *a = arg;

	emit(a, FR_EVENT_ALLOC_FREE, b, a->free_tid ? a->free_tid : b->tid, a->free_time);
}

static void emit_live(void *arg, const struct fr_alloc_block *b)
{
	struct fr_allocs *a = arg;

	emit(a, FR_EVENT_HEAP_LIVE, b, b->tid, a->free_time);
}

/* The stack of a sample: unwound from its copy, then the library's own
 * frames at the leaf dropped, so that the leaf is malloc's caller. */
static uint16_t unwind(struct fr_allocs *a, const struct ring *r, const struct fr_alloc_rec *rec)
{
	struct fr_unwind_regs regs = {.ip = rec->ip, .sp = rec->sp, .bp = rec->bp};
	struct fr_unwind_stack stack = {.sp = rec->sp, .data = rec->stack, .size = rec->stack_len};
	unsigned n, skip = 0;

	if (!rec->ip)
		return 0;
	n = fr_perf_unwind_user(&a->unwind, a->h, r->pid, &regs, &stack, a->ips, FR_MAX_FRAMES);
	while (skip + 1 < n && a->ips[skip] >= r->lib_start && a->ips[skip] < r->lib_end)
		skip++;
	if (skip)
		memmove(a->ips, a->ips + skip, (n - skip) * sizeof(*a->ips));
	return (uint16_t)(n - skip);
}

/* The labels the record carries, through the labels' checker. */
static uint32_t labels_of(struct fr_allocs *a, const struct ring *r, uint32_t tid,
			  const struct fr_alloc_rec *rec)
{
	uint32_t set;

	if (!rec->labels || !a->h->labels)
		return FR_APP_REF_NONE;
	memset(&a->labels, 0, sizeof(a->labels));
	a->labels.kind = FR_BPF_LABELS_SAMPLE;
	a->labels.pid = r->pid;
	a->labels.tid = tid;
	a->labels.fr_len = (uint16_t)rec->labels_len;
	memcpy(a->labels.fr, rec->labels, rec->labels_len);
	set = a->h->labels(a->h->arg, &a->labels);
	return set ? set : FR_APP_REF_NONE;
}

/* Whether the sample at r's tail, unwound into a->ips (n frames), waits
 * in the ring for its unwind table rather than be taken cut short. */
static bool wait_for_table(const struct ring *r, uint16_t n, uint64_t head, int64_t now,
			   int64_t *since, const uint64_t *ips)
{
	if (!n || ips[n - 1] != FR_FRAME_MARK_ADDR(FR_UNWIND_PENDING) || r->exit_ns ||
	    head - r->tail >= r->data_size / 2)
		return false;
	if (!*since)
		*since = now;
	return now - *since < TABLE_WAIT_NS;
}

/* The allocation record at r's tail, its stack unwound in a->ips
 * (nframes). */
static void on_alloc(struct fr_allocs *a, const struct ring *r, const struct fr_alloc_rec *rec,
		     uint16_t nframes, int64_t clock_offset)
{
	uint32_t tid = thread_of(a, r->pid, rec->tid);
	struct fr_alloc_block b = {
		.pid = r->pid,
		.tid = tid,
		.addr = rec->addr,
		.size = rec->size,
		.mean = rec->mean,
		.time_ns = rec->time_ns + clock_offset,
		.ips = a->ips,
	};
	struct fr_sample s;
	int ret;

	b.nframes = nframes;
	s = (struct fr_sample){
		.time_ns = b.time_ns,
		.pid = b.pid,
		.tid = tid,
		.event = FR_EVENT_ALLOC,
		.weight = b.size,
		.rate_hz = b.mean > UINT32_MAX ? UINT32_MAX : (uint32_t)b.mean,
		.nr_frames = b.nframes,
		.ips = a->ips,
		.app_ref = labels_of(a, r, tid, rec),
	};
	a->h->sample(a->h->arg, &s);
	add(&a->samples, 1);
	ret = fr_alloc_live_add(a->live, &b);
	if (ret == 1 || ret == -ENOSPC)
		fr_log_ratelimited(FR_LOG_WARN, 60 * FR_NS_PER_S,
				   "allocation samples: the live blocks' table is full (pid %u "
				   "came to it); the oldest sampled blocks of the process with "
				   "the most are forgotten (heap profiles leave them out)",
				   r->pid);
}

static void on_free(struct fr_allocs *a, const struct ring *r, const struct fr_alloc_rec *rec,
		    int64_t clock_offset)
{
	a->free_tid = thread_of(a, r->pid, rec->tid);
	a->free_time = rec->time_ns + clock_offset;
	if (fr_alloc_live_take(a->live, r->pid, rec->addr, emit_free, a) == 0)
		add(&a->frees_matched, 1);
	else
		add(&a->frees_unmatched, 1);
	a->free_tid = 0;
}

/* ---- the drain ---- */

/* Whether a record's time (monotonic ns) can be its moment: within the
 * last TIME_PAST_NS of the drain at `now`. Another would put the
 * process's samples, and the chunks holding them, anywhere in time. */
static bool time_believed(int64_t t, int64_t now)
{
	return t >= now - TIME_PAST_NS && t <= now + TIME_AHEAD_NS;
}

/* Called with the ring stopped at an incomplete record: skips it (and
 * everything up to head) when it stayed so for STUCK_NS. */
static void stuck(struct fr_allocs *a, struct ring *r, uint64_t head, int64_t now)
{
	uint64_t skip = head - r->tail;

	if (r->stuck_since == 0 || r->stuck_pos != r->tail) {
		r->stuck_pos = r->tail;
		r->stuck_since = now;
		return;
	}
	if (now - r->stuck_since < STUCK_NS)
		return;
	add(&a->skipped_bytes, skip > r->data_size ? r->data_size : skip);
	fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
			   "allocation samples of pid %u: a record at %llu never completed; "
			   "%llu bytes skipped",
			   r->pid, (unsigned long long)r->tail, (unsigned long long)skip);
	r->tail = head;
	r->stuck_since = 0;
}

/* A malformed record: counted; what follows cannot be found, so the
 * reader goes on at head. */
static void bad(struct fr_allocs *a, struct ring *r, uint64_t to)
{
	add(&a->bad_records, 1);
	fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
			   "allocation samples of pid %u: a malformed record; the ring is "
			   "read on from its head",
			   r->pid);
	r->tail = to;
}

static void drain_ring(struct fr_allocs *a, struct ring *r, int64_t clock_offset)
{
	uint64_t head = __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE), done = 0;
	/* After head: every record up to it was stamped before now. */
	int64_t now = fr_now_mono_ns();
	struct fr_alloc_rec rec;

	/* A ring an eighth full between two drains: drained sooner. */
	if (head - r->tail > r->data_size / 8 && head - r->tail <= r->data_size)
		a->busy = true;

	for (unsigned n = 0; n < DRAIN_RECORDS_MAX && done < DRAIN_BYTES_MAX && r->tail != head;
	     n++) {
		uint64_t off = r->tail & (r->data_size - 1), room = r->data_size - off;
		const uint8_t *at = r->data + off;
		uint64_t pos = __atomic_load_n((const uint64_t *)at, __ATOMIC_ACQUIRE);
		int64_t len;

		/* The second's time is up: the rest at a later drain. */
		if (n % 16 == 15 && fr_now_mono_ns() > a->budget_end)
			break;
		/* head behind tail: the process moved it back; nothing to
		 * read until it is ahead again. */
		if ((int64_t)(head - r->tail) < 0)
			break;
		/* A record takes 16 bytes at least: the process left too
		 * little room for a PAD record; the data's end is skipped. */
		if (room < sizeof(struct fr_alloc_rec_abi)) {
			bad(a, r, r->tail + room);
			continue;
		}
		memcpy(a->rec, at, sizeof(struct fr_alloc_rec_abi));
		memcpy(a->rec, &pos, sizeof(pos));
		len = fr_alloc_rec_len(a->rec, r->tail, room);
		if (len == 0) {
			stuck(a, r, head, now);
			break;
		}
		r->stuck_since = 0;
		if (len < 0) {
			bad(a, r, head);
			break;
		}
		/* Out of the shared mapping first: the process may change it
		 * while it is checked. */
		memcpy(a->rec, at, (size_t)len);
		if (fr_alloc_rec_parse(a->rec, (size_t)len, r->tail, &rec) < 0 ||
		    (rec.kind != FR_ALLOC_REC_PAD && !time_believed(rec.time_ns, now)))
			add(&a->bad_records, 1);
		else if (!a->mean)
			; /* nobody records alloc: read, so the ring has room */
		else if (rec.kind == FR_ALLOC_REC_ALLOC) {
			uint16_t nf = unwind(a, r, &rec);

			if (wait_for_table(r, nf, head, now, &r->table_wait, a->ips))
				break;
			/* The wait ends with a record its table unwound: one
			 * whose table never comes costs the ring one wait, not
			 * one per record. */
			if (!nf || a->ips[nf - 1] != FR_FRAME_MARK_ADDR(FR_UNWIND_PENDING))
				r->table_wait = 0;
			on_alloc(a, r, &rec, nf, clock_offset);
		} else if (rec.kind == FR_ALLOC_REC_FREE)
			on_free(a, r, &rec, clock_offset);
		r->tail += (uint64_t)len;
		done += (uint64_t)len;
	}
	__atomic_store_n(&r->hdr->tail, r->tail, __ATOMIC_RELEASE);
	/* Nobody records alloc: the coarsest mean, so that the library
	 * costs next to nothing. */
	__atomic_store_n(&r->hdr->mean_wanted, a->mean ? a->mean : FR_ALLOC_MEAN_MAX,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&r->hdr->stack_copy_wanted, 0, __ATOMIC_RELAXED);
}

static uint64_t lib_count(const uint64_t *v)
{
	uint64_t n = __atomic_load_n(v, __ATOMIC_RELAXED);

	return n > LIB_COUNT_MAX ? LIB_COUNT_MAX : n;
}

/* The samples ring r's library had no room for. */
static uint64_t lib_sample_losses(const struct ring *r)
{
	return lib_count(&r->hdr->dropped_allocs);
}

/* The frees of sampled blocks it will never tell: those it had no room
 * for, and those of the blocks it could not track (its table of live
 * sampled addresses full). Each leaves a block live in the heap that is
 * not. */
static uint64_t lib_free_losses(const struct ring *r)
{
	return lib_count(&r->hdr->dropped_frees) + lib_count(&r->hdr->untracked);
}

/* What ring r's library lost since the last time: samples as alloc
 * samples lost, frees as FR_EVENT_ALLOC_FREE records lost, in the chunk
 * being built (the alloc profile counts the first, the heap both). The
 * counters are the process's to write: a count that went back is taken
 * as the new start, and a drain counts at most LOSSES_MAX of each of a
 * ring, so a process that lies can inflate the figures only so fast. */
#define LOSSES_MAX 65536u
static void report_loss(struct fr_allocs *a, uint32_t event, uint64_t now, uint64_t *reported)
{
	uint64_t d;

	if (now <= *reported) {
		*reported = now;
		return;
	}
	d = now - *reported;
	if (d > LOSSES_MAX)
		d = LOSSES_MAX;
	*reported += d;
	if (a->h->lost)
		a->h->lost(a->h->arg, event, d);
}

static void report_losses(struct fr_allocs *a, struct ring *r)
{
	report_loss(a, FR_EVENT_ALLOC, lib_sample_losses(r), &r->lib_reported);
	report_loss(a, FR_EVENT_ALLOC_FREE, lib_free_losses(r), &r->lib_reported_frees);
}

/* Blocks the live table had no room to follow (evicted or never kept,
 * as update_counts() last stored them): their frees will not be matched,
 * and until the next heap snapshot the heap holds them whether freed or
 * not; lost FR_EVENT_ALLOC_FREE records as the libraries' are. A table
 * made anew (a new mean) starts its count at 0. On the ingest thread. */
static void report_evicted(struct fr_allocs *a)
{
	uint64_t evicted = __atomic_load_n(&a->evicted, __ATOMIC_RELAXED);

	if (evicted > a->evicted_reported && a->h->lost)
		a->h->lost(a->h->arg, FR_EVENT_ALLOC_FREE, evicted - a->evicted_reported);
	a->evicted_reported = evicted;
}

static void update_counts(struct fr_allocs *a)
{
	struct fr_alloc_live_counts c;
	uint64_t lib = a->lib_dropped_gone, frees = a->lib_frees_gone;

	for (uint32_t i = 0; i < a->nrings; i++) {
		lib += lib_sample_losses(&a->rings[i]);
		frees += lib_free_losses(&a->rings[i]);
	}
	fr_alloc_live_counts(a->live, &c);
	__atomic_store_n(&a->lib_dropped, lib + frees, __ATOMIC_RELAXED);
	__atomic_store_n(&a->lib_frees_lost, frees, __ATOMIC_RELAXED);
	__atomic_store_n(&a->live_blocks, c.blocks, __ATOMIC_RELAXED);
	__atomic_store_n(&a->evicted, c.evicted, __ATOMIC_RELAXED);
	__atomic_store_n(&a->live_bytes, c.bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&a->procs, a->nrings, __ATOMIC_RELAXED);
}

void fr_allocs_drain(struct fr_allocs *a, int64_t clock_offset)
{
	int64_t now = fr_now_mono_ns(), t0 = now;

	if (!a || !a->nrings)
		return;
	if (now - a->second >= FR_NS_PER_S) {
		a->second = now;
		a->budget_left = DRAIN_NS_PER_S;
	}
	if (a->budget_left <= 0)
		return;
	a->budget_end = now + a->budget_left;
	/* From another ring each time: one that takes the budget does not
	 * starve those after it. */
	a->first = a->first + 1 < a->nrings ? a->first + 1 : 0;
	a->busy = false;
	for (uint32_t i = 0; i < a->nrings && fr_now_mono_ns() <= a->budget_end; i++)
		drain_ring(a, &a->rings[(a->first + i) % a->nrings], clock_offset);
	a->budget_left -= fr_now_mono_ns() - t0;
	for (uint32_t i = 0; i < a->nrings; i++)
		report_losses(a, &a->rings[i]);
	update_counts(a);
	report_evicted(a);
}

/* ---- rings ---- */

static struct ring *ring_of(struct fr_allocs *a, uint32_t pid)
{
	for (uint32_t i = 0; i < a->nrings; i++)
		if (a->rings[i].pid == pid)
			return &a->rings[i];
	return NULL;
}

int fr_allocs_mapped(const struct fr_allocs *a, uint32_t pid)
{
	return a && ring_of((struct fr_allocs *)a, pid) != NULL;
}

/* A ring has one reader: the recorder whose pid is in reader_pid, taken
 * from 0 or from a recorder that is gone (killed: its successor takes
 * over), given back when it drops the ring. A second recorder on the
 * machine (tests run several) leaves the ring to the first. Returns 0
 * or -EBUSY. */
static int claim(struct fr_alloc_header_abi *h)
{
	uint32_t me = (uint32_t)getpid(), cur = __atomic_load_n(&h->reader_pid, __ATOMIC_ACQUIRE);

	if (cur == me)
		return 0;
	if (cur && (kill((pid_t)cur, 0) == 0 || errno == EPERM))
		return -EBUSY;
	return __atomic_compare_exchange_n(&h->reader_pid, &cur, me, false, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE)
		       ? 0
		       : -EBUSY;
}

/* Drops ring r (its live blocks stay: the caller frees them). */
static void ring_drop(struct fr_allocs *a, struct ring *r)
{
	uint32_t me = (uint32_t)getpid();

	__atomic_compare_exchange_n(&r->hdr->reader_pid, &me, 0, false, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
	a->lib_dropped_gone += lib_sample_losses(r);
	a->lib_frees_gone += lib_free_losses(r);
	munmap(r->map, r->map_len);
	close(r->pidfd);
	a->mapped_bytes -= r->map_len;
	*r = a->rings[--a->nrings];
	update_counts(a);
}

/* Ends the ring of pid: read one last time, its blocks freed at time_ns. */
static void ring_end(struct fr_allocs *a, int64_t clock_offset, uint32_t pid, int64_t time_ns)
{
	struct ring *r = ring_of(a, pid);

	if (r) {
		/* What it wrote last, within a bound of its own, none of it
		 * waiting for an unwind table any more. */
		if (!r->exit_ns)
			r->exit_ns = time_ns ? time_ns : fr_now_real_ns();
		a->budget_end = fr_now_mono_ns() + LAST_DRAIN_NS;
		drain_ring(a, r, clock_offset);
		ring_drop(a, r);
		fr_log_info("allocation samples of pid %u: its ring is dropped (the process "
			    "ended or ran another program)",
			    pid);
	}
	a->free_tid = 0;
	a->free_time = time_ns;
	fr_alloc_live_drop_proc(a->live, pid, emit_free, a);
	update_counts(a);
}

uint32_t fr_allocs_pids(const struct fr_allocs *a, uint32_t *out, uint32_t max)
{
	uint32_t n = 0;

	for (uint32_t i = 0; a && i < a->nrings && n < max; i++)
		out[n++] = a->rings[i].pid;
	return n;
}

int fr_allocs_gone(struct fr_allocs *a, int64_t clock_offset, uint32_t pid, int64_t time_ns)
{
	if (!a || !ring_of(a, pid))
		return 0;
	ring_end(a, clock_offset, pid, time_ns);
	return 1;
}

int fr_allocs_adopt(struct fr_allocs *a, struct fr_alloc_found *f)
{
	const struct fr_alloc_header_abi *hd = (const void *)f->map;
	struct ring *r;

	for (uint32_t i = 0; i < a->nrings; i++) {
		if (a->rings[i].ring_id == f->ring_id && a->rings[i].pid != f->pid) {
			fr_allocs_found_release(f);
			return -EAGAIN;
		}
	}
	/* The same pid with another ring: an exec whose record was missed. */
	if ((r = ring_of(a, f->pid)) && r->ring_id != f->ring_id)
		ring_end(a, fr_perf_clock_offset(), f->pid, fr_now_real_ns());
	else if (r) {
		fr_allocs_found_release(f); /* mapped already */
		return 0;
	}
	if (a->nrings == FR_ALLOCS_RINGS_MAX ||
	    a->mapped_bytes + f->map_len > FR_ALLOCS_MAPPED_MAX) {
		fr_allocs_found_release(f);
		return -ENOSPC;
	}
	if (claim(f->map) < 0) {
		fr_allocs_found_release(f);
		return -EBUSY;
	}
	r = &a->rings[a->nrings++];
	*r = (struct ring){
		.pid = f->pid,
		.pidfd = f->pidfd,
		.map = f->map,
		.map_len = f->map_len,
		.hdr = f->map,
		.data = (const uint8_t *)f->map + FR_ALLOC_HEADER_SIZE,
		.data_size = f->map_len - FR_ALLOC_HEADER_SIZE,
		.ring_id = f->ring_id,
		.lib_start = f->lib_start,
		.lib_end = f->lib_end,
		/* What is in it was written before the recorder came (or
		 * for a reader before it): read from where that one was. */
		.tail = __atomic_load_n(&hd->tail, __ATOMIC_ACQUIRE),
	};
	/* A tail it could not have read to: start from head. */
	if (__atomic_load_n(&hd->head, __ATOMIC_ACQUIRE) - r->tail > r->data_size)
		r->tail = __atomic_load_n(&hd->head, __ATOMIC_ACQUIRE);
	a->mapped_bytes += f->map_len;
	f->map = NULL;
	f->pidfd = -1;
	update_counts(a);
	fr_log_info("allocation samples of pid %u: its ring of %zu bytes is read", r->pid,
		    r->map_len);
	return 0;
}

void fr_allocs_refused(struct fr_allocs *a, uint32_t pid, const char *why)
{
	int64_t now = fr_now_mono_ns();

	add(&a->refused, 1);
	/* Each process said once, but at most REFUSALS_LOGGED a minute: a
	 * user forking liars does not flood the log. */
	if (now - a->refusals_since > 60 * FR_NS_PER_S) {
		a->refusals_since = now;
		a->refusals_logged = 0;
	}
	if (a->refusals_logged++ < REFUSALS_LOGGED)
		fr_log_warn("allocation samples of pid %u not read: %s", pid, why);
	pthread_mutex_lock(&a->lock);
	snprintf(a->last_refusal, sizeof(a->last_refusal), "pid %u: %s", pid, why);
	pthread_mutex_unlock(&a->lock);
}

void fr_allocs_set_mean(struct fr_allocs *a, uint64_t mean)
{
	struct fr_alloc_live_limits lim = {LIVE_PER_PROC, LIVE_TOTAL, LIVE_BYTES};
	struct fr_alloc_live *fresh;

	if (!a)
		return;
	if (mean > FR_ALLOC_MEAN_MAX)
		mean = FR_ALLOC_MEAN_MAX;
	/* alloc no longer recorded: the blocks known are forgotten (their
	 * frees would not be seen). */
	if (!mean && a->mean && (fresh = fr_alloc_live_new(&lim))) {
		fr_alloc_live_free(a->live);
		a->live = fresh;
		update_counts(a);
	}
	__atomic_store_n(&a->mean, mean, __ATOMIC_RELAXED);
}

/* ---- seals, snapshots ---- */

void fr_allocs_seal(struct fr_allocs *a, int64_t clock_offset)
{
	int64_t now = fr_now_real_ns();

	if (!a)
		return;
	/* Ended processes whose exit the side band did not tell. */
	for (uint32_t i = 0; i < a->nrings;) {
		struct pollfd pfd = {.fd = a->rings[i].pidfd, .events = POLLIN};

		if (poll(&pfd, 1, 0) != 0)
			ring_end(a, clock_offset, a->rings[i].pid,
				 a->rings[i].exit_ns ? a->rings[i].exit_ns : now);
		else
			i++;
	}
	if (now < a->next_snapshot)
		return;
	/* The rings were just drained: the blocks live now. */
	a->next_snapshot = (now / FR_HEAP_SNAPSHOT_NS + 1) * FR_HEAP_SNAPSHOT_NS;
	a->free_time = now;
	fr_alloc_live_each(a->live, emit_live, a);
}

void fr_allocs_exited(struct fr_allocs *a, uint32_t pid, int64_t time_ns)
{
	struct ring *r = a ? ring_of(a, pid) : NULL;

	if (r)
		r->exit_ns = time_ns ? time_ns : fr_now_real_ns();
}

int fr_allocs_timeout_ms(const struct fr_allocs *a)
{
	if (!a || !a->nrings)
		return -1;
	return a->busy && a->budget_left > 0 ? FR_ALLOCS_BUSY_MS : FR_ALLOCS_DRAIN_MS;
}

void fr_allocs_stats(struct fr_allocs *a, struct fr_allocs_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!a)
		return;
	out->procs = __atomic_load_n(&a->procs, __ATOMIC_RELAXED);
	out->refused = __atomic_load_n(&a->refused, __ATOMIC_RELAXED);
	out->samples = __atomic_load_n(&a->samples, __ATOMIC_RELAXED);
	out->frees_matched = __atomic_load_n(&a->frees_matched, __ATOMIC_RELAXED);
	out->frees_unmatched = __atomic_load_n(&a->frees_unmatched, __ATOMIC_RELAXED);
	out->live_blocks = __atomic_load_n(&a->live_blocks, __ATOMIC_RELAXED);
	out->evicted = __atomic_load_n(&a->evicted, __ATOMIC_RELAXED);
	out->lib_dropped = __atomic_load_n(&a->lib_dropped, __ATOMIC_RELAXED);
	out->lib_frees_lost = __atomic_load_n(&a->lib_frees_lost, __ATOMIC_RELAXED);
	out->skipped_bytes = __atomic_load_n(&a->skipped_bytes, __ATOMIC_RELAXED);
	out->bad_records = __atomic_load_n(&a->bad_records, __ATOMIC_RELAXED);
	out->mean = __atomic_load_n(&a->mean, __ATOMIC_RELAXED);
	pthread_mutex_lock(&a->lock);
	memcpy(out->last_refusal, a->last_refusal, sizeof(out->last_refusal));
	pthread_mutex_unlock(&a->lock);
}

uint64_t fr_allocs_memory(const struct fr_allocs *a)
{
	return a ? __atomic_load_n(&a->live_bytes, __ATOMIC_RELAXED) : 0;
}

void fr_allocs_free(struct fr_allocs *a)
{
	if (!a)
		return;
	while (a->nrings)
		ring_drop(a, &a->rings[0]);
	fr_alloc_live_free(a->live);
	pthread_mutex_destroy(&a->lock);
	free(a);
}
