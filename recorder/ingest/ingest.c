/* flightrecd's ingest thread: drains the perf rings, feeds the process
 * tracker and the chunk builder, seals a chunk at least once a second and
 * hands it to the writer; on SIGHUP, has the configuration reloaded
 * (recorder/reload.c) between two wake-ups.
 *
 * Invariants:
 * - Only the ingest thread touches the perf rings, the tracker and the
 *   chunk builder; it never blocks on disk or clients.
 * - A flush barrier asked before a wake-up is queued behind the chunk
 *   sealed after that wake-up's drain, so when the writer reaches it every
 *   sample up to the request is in the ring.
 */
#include "recorder/ingest/ingest.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/util/priority.h"
#include "core/util/time.h"
#include "recorder/export/export_ch.h"
#include "recorder/sampling/allocs.h"
#include "core/store/chunk.h"
#include "recorder/ingest/writer.h"
#include "recorder/sampling/sources.h"
#include "recorder/tracking/applabels.h"
#include "recorder/tracking/memsample.h"
#include "recorder/tracking/pystacks.h"
#include "recorder/tracking/tracker.h"
#include "recorder/tracking/unwind_tables.h"
#include "recorder/triggers/triggers.h"

#define SEAL_INTERVAL_NS 1000000000LL
/* The ingest thread sleeps until the next seal is due (at most this long),
 * or until a perf ring is half full, a request or a signal arrives: an idle
 * recorder wakes about once a second, not ten times. */
#define POLL_MAX_MS 1000
#define FLUSH_TIMEOUT_MS 3000
/* Tables no frame used for a minute go, looked at every ten seconds. */
#define TABLES_CHECK_NS (10LL * 1000000000LL)
_Static_assert(sizeof(((struct fr_ingest *)0)->tables_marks) /
			       sizeof(((struct fr_ingest *)0)->tables_marks[0]) ==
		       6,
	       "a mark of the unwind tables' clock every 10 s of a minute");

int fr_ingest_flush(struct fr_ingest *g)
{
	uint64_t one = 1, target = fr_writer_barrier_ask(g->writer);

	if (write(g->flush_efd, &one, sizeof(one)) < 0)
		return -errno;
	if (fr_writer_barrier_wait(g->writer, target, FLUSH_TIMEOUT_MS) < 0) {
		__atomic_add_fetch(&g->flush_timeouts, 1, __ATOMIC_RELAXED);
		return -ETIMEDOUT;
	}
	return 0;
}

/* A sealed chunk the writer's queue has no room for (the disk is not
 * keeping up) is dropped, and what it held is carried into the next
 * chunk's losses: each of its samples, and the losses it carried itself,
 * count in the event's `lost`, so samples_lost, the profile's comments and
 * the timeline say the samples are missing. Decoding costs a few ms, paid
 * only while chunks are being dropped (at most one a seal). */
static void drop_chunk(struct fr_ingest *g, void *chunk, size_t len)
{
	struct {
		uint32_t event;
		uint64_t n, samples;
	} ev[32];
	uint32_t nev = 0;
	struct fr_chunk *c = NULL;
	uint64_t lost = 0, samples = 0;

	if (fr_chunk_decode(chunk, len, &c) == 0) {
		/* Its samples by event, then the losses it carried. */
		for (uint64_t i = 0, n = (uint64_t)c->nsamples + c->nevents; i < n; i++) {
			bool sample = i < c->nsamples;
			uint32_t e = sample ? c->event[i] : c->events[i - c->nsamples].event, k;

			for (k = 0; k < nev && ev[k].event != e; k++)
				;
			if (k == nev) {
				if (nev == sizeof(ev) / sizeof(ev[0]))
					continue;
				ev[nev++] = (typeof(ev[0])){.event = e};
			}
			ev[k].n += sample ? 1 : c->events[i - c->nsamples].lost;
			ev[k].samples += sample;
		}
		samples = c->nsamples;
		/* When: its samples' span, and the gaps it carried. */
		for (uint32_t k = 0; k < nev; k++)
			if (ev[k].samples)
				fr_chunk_builder_gap(g->builder, FR_GAP_LOST, ev[k].event,
						     ev[k].samples, c->hdr.first_ns,
						     c->hdr.last_ns);
		for (uint32_t k = 0; k < c->ngaps; k++)
			fr_chunk_builder_gap(g->builder, (enum fr_chunk_gap_kind)c->gaps[k].kind,
					     c->gaps[k].event, c->gaps[k].count, c->gaps[k].from_ns,
					     c->gaps[k].to_ns);
		fr_chunk_free(c);
	}
	for (uint32_t k = 0; k < nev; k++) {
		if (!ev[k].n)
			continue;
		fr_chunk_builder_count(g->builder, ev[k].event, ev[k].n, 0, 0);
		lost += ev[k].n;
	}
	/* This run's count takes the samples alone: the losses the chunk
	 * carried were counted when they happened. */
	if (lost)
		g->losses_pending = 1;
	__atomic_add_fetch(&g->lost, samples, __ATOMIC_RELAXED);
	fr_writer_drop(g->writer, chunk);
}

/* Seals what the builder holds (if anything) and queues it for the
 * writer, followed by barrier generation `barrier` when non-zero. */
static void seal_chunk(struct fr_ingest *g, uint64_t barrier)
{
	void *chunk = NULL;
	size_t len = 0;
	int ret;

	ret = fr_chunk_builder_seal(g->builder,
				    fr_applabels_ops(g->applabels, g->sources->clock_offset),
				    g->sources->clock_offset, &chunk, &len);
	fr_applabels_sealed(g->applabels);
	{
		uint32_t labelled, unreadable, go;
		uint64_t go_skipped;

		fr_applabels_counts(g->applabels, &labelled, &unreadable);
		__atomic_store_n(&g->labelled_procs, labelled, __ATOMIC_RELAXED);
		__atomic_store_n(&g->unreadable_procs, unreadable, __ATOMIC_RELAXED);
		fr_applabels_go_counts(g->applabels, &go, &go_skipped);
		__atomic_store_n(&g->go_procs, go, __ATOMIC_RELAXED);
		__atomic_store_n(&g->go_skipped, go_skipped, __ATOMIC_RELAXED);
	}
	if (ret < 0 && ret != -ENODATA)
		fr_log_ratelimited(FR_LOG_ERR, 10 * FR_NS_PER_S, "cannot seal a chunk: %s",
				   strerror(-ret));
	if (ret == 0)
		__atomic_add_fetch(&g->chunks_sealed, 1, __ATOMIC_RELAXED);
	g->losses_pending = 0;
	__atomic_store_n(&g->last_seal_real, fr_now_real_ns(), __ATOMIC_RELAXED);
	fr_tracker_sealed(g->tracker);
	__atomic_store_n(&g->nprocs, fr_tracker_nprocs(g->tracker), __ATOMIC_RELAXED);
	__atomic_store_n(&g->nthreads, fr_tracker_nthreads(g->tracker), __ATOMIC_RELAXED);
	if (ret == 0 && !fr_writer_has_room(g->writer, len)) {
		drop_chunk(g, chunk, len);
		ret = -ENOBUFS;
	}
	if (ret == 0 || barrier)
		fr_writer_enqueue(g->writer, ret == 0 ? chunk : NULL, len, barrier);
}

/* Adds *s (a CPython thread's with its Python frames spliced in place
 * of the eval loop's: *s then points at that copy) to the chunk being
 * built, sealing a full one first. Returns fr_chunk_builder_add's. */
static int add_sample(struct fr_ingest *g, const struct fr_sample **s)
{
	int ret;

	if (g->pystacks &&
	    fr_pystacks_splice(g->pystacks, *s, g->sources->clock_offset, &g->py_sample, g->py_ips))
		*s = &g->py_sample;
	ret = fr_chunk_builder_add(g->builder, *s);
	if (ret == -ENOSPC) {
		seal_chunk(g, 0);
		ret = fr_chunk_builder_add(g->builder, *s);
	}
	return ret;
}

int fr_ingest_add(struct fr_ingest *g, const struct fr_sample *s)
{
	return add_sample(g, &s);
}

/* One open-wait record into the chunk being sealed; a full chunk is
 * sealed and the rest go to the next, stamped with the same time. */
static void on_open_wait(void *arg, const struct fr_sample *s)
{
	struct fr_ingest *g = arg;

	if (add_sample(g, &s) == 0)
		g->open_waits++;
}

/* A periodic or asked-for seal: the threads blocked now go with the
 * chunk (see "open waits" in core/store/chunk.h), so a reader of the
 * ring, even after a crash, knows who was stuck since when and where. A
 * chunk sealed because it is full carries none: the next periodic seal
 * is at most a second away. */
static void seal(struct fr_ingest *g, uint64_t barrier)
{
	uint64_t now = fr_now_mono_ns();

	/* The next periodic seal is due a second from this one. Only here:
	 * were a full chunk's seal to restart the second, chunks filling
	 * faster than once a second would put it off for ever, and no chunk
	 * would say who is blocked. */
	g->last_seal_mono = (int64_t)now;
	g->open_waits = 0;
	/* Ended processes' rings, and the live heap when a snapshot is due. */
	fr_allocs_seal(g->allocs, g->sources->clock_offset);
	/* Processes whose allocations are read have their RSS read too,
	 * asleep or not. */
	if (g->memsample) {
		uint32_t pids[FR_ALLOCS_RINGS_MAX];

		fr_memsample_watch_pids(g->memsample, pids,
					fr_allocs_pids(g->allocs, pids, FR_ALLOCS_RINGS_MAX));
	}
	for (unsigned i = 0; i < g->sources->n; i++)
		if (g->sources->table[i].perf)
			fr_perf_offcpu_open(g->sources->table[i].perf, g->sources->clock_offset,
					    now, on_open_wait, g);
	seal_chunk(g, barrier);
}

static void on_lost(void *arg, uint32_t event, uint64_t lost);

static void on_sample(void *arg, const struct fr_sample *s)
{
	struct fr_ingest *g = arg;
	struct fr_source *src = g->sources->draining;
	int ret = add_sample(g, &s);

	/* Its RSS is read within the next two seconds. */
	fr_memsample_note_pid(g->memsample, s->pid);
	if (ret == 0) {
		__atomic_add_fetch(&g->samples, 1, __ATOMIC_RELAXED);
		if (src)
			__atomic_add_fetch(&src->samples, 1, __ATOMIC_RELAXED);
	} else {
		/* Not kept even by an empty chunk (its seal failed): lost, as
		 * what the kernel drops is. */
		on_lost(g, s->event, 1);
		return;
	}
	if (s->nr_frames == FR_MAX_FRAMES) {
		fr_chunk_builder_count(g->builder, s->event, 0, 0, 1);
		if (src)
			__atomic_add_fetch(&src->truncated, 1, __ATOMIC_RELAXED);
	}
}

static void on_python(void *arg, const struct fr_bpf_py_rec *r, size_t size)
{
	struct fr_ingest *g = arg;

	if (g->pystacks)
		fr_pystacks_record(g->pystacks, r, size);
}

/* Execs of sampled processes seal at most EXEC_SEALS_MAX chunks a second:
 * a user who execs in a loop must not make the recorder write a chunk
 * each time. Past that, the old image's frees share the chunk with what
 * follows the exec (their stacks then read through the new mappings). */
#define EXEC_SEALS_MAX 8u
static bool exec_seal_allowed(struct fr_ingest *g)
{
	int64_t now = (int64_t)fr_now_mono_ns();

	if (now - g->exec_seal_second >= FR_NS_PER_S) {
		g->exec_seal_second = now;
		g->exec_seals = 0;
	}
	return g->exec_seals++ < EXEC_SEALS_MAX;
}

static void on_comm(void *arg, uint32_t pid, uint32_t tid, const char *comm, int exec,
		    int64_t time_ns)
{
	struct fr_ingest *g = arg;

	/* The old image's heap is gone: its ring read a last time while
	 * its mappings are still known (for the stacks), and the chunk
	 * holding its frees sealed before the tracker forgets them: a chunk
	 * has one set of mappings a process, those at its seal, and the
	 * frees' stacks are the old image's. */
	if (exec &&
	    fr_allocs_gone(g->allocs, g->sources->clock_offset, pid,
			   time_ns ? time_ns : fr_now_real_ns()) &&
	    exec_seal_allowed(g))
		seal_chunk(g, 0);
	fr_tracker_comm_at(g->tracker, pid, tid, comm, exec, time_ns);
	/* A new program: its labels (and where they are) are its own. */
	if (exec)
		fr_applabels_exec(g->applabels, pid);
}

/* A new executable mapping (an exec, a dlopen) has its table asked for
 * at once when an event unwinds with CFI, so that it is built before the
 * mapping's first samples are drained rather than after (those would end
 * "unwind table not ready", or wait for it). The builds a busy machine's
 * execs cost are in docs/performance.md. */
static void prefetch_table(struct fr_ingest *g, uint32_t pid, uint64_t start)
{
	struct fr_tracker_map m;
	unsigned i;

	if (!g->unwind_tables)
		return;
	for (i = 0; i < g->sources->n; i++)
		if (g->sources->table[i].stack_copy && g->sources->table[i].perf)
			break;
	if (i == g->sources->n || fr_tracker_find_map(g->tracker, pid, start, &m) < 0)
		return;
	fr_unwind_tables_prefetch(g->unwind_tables, pid, &m);
}

static void on_mmap(void *arg, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		    uint32_t prot, const char *path, const uint8_t *build_id, uint8_t build_id_len)
{
	struct fr_ingest *g = arg;

	fr_tracker_mmap(g->tracker, pid, start, len, pgoff, prot, path, build_id, build_id_len);
	if (prot & PROT_EXEC)
		fr_applabels_mapped(g->applabels, pid, path);
	/* Without a build id, the inode comes next (on_mmap_inode). */
	if ((prot & PROT_EXEC) && (build_id_len || path[0] == '['))
		prefetch_table(g, pid, start);
}

static void on_mmap_inode(void *arg, uint32_t pid, uint64_t start, uint64_t dev, uint64_t ino,
			  uint64_t ino_generation)
{
	struct fr_ingest *g = arg;

	fr_tracker_mmap_inode(g->tracker, pid, start, dev, ino, ino_generation);
	prefetch_table(g, pid, start);
}

/* The unwinder's look-up: the process's mapping of `addr` (tracker), then
 * that file's table (unwind_tables). */
static const struct fr_cfi_table *on_unwind_find(void *arg, uint32_t pid, uint64_t addr,
						 uint64_t *vaddr, int *miss)
{
	struct fr_ingest *g = arg;
	struct fr_tracker_map m;
	const struct fr_cfi_table *t;
	unsigned i;

	for (i = 0; i < g->unwind_mru_n; i++) {
		if (g->unwind_mru[i].pid == pid && addr >= g->unwind_mru[i].start &&
		    addr < g->unwind_mru[i].end) {
			t = g->unwind_mru[i].table;
			if (fr_cfi_translate(t,
					     addr - g->unwind_mru[i].start + g->unwind_mru[i].pgoff,
					     vaddr) == 0)
				return t;
			*miss = FR_UNWIND_MISS_NOCFI;
			return NULL;
		}
	}
	if (fr_tracker_find_map(g->tracker, pid, addr, &m) < 0) {
		*miss = FR_UNWIND_MISS_NOMAP;
		return NULL;
	}
	if (!g->unwind_tables) {
		*miss = FR_UNWIND_MISS_NOCFI;
		return NULL;
	}
	t = fr_unwind_tables_find(g->unwind_tables, pid, &m, addr, vaddr, miss);
	if (!t && *miss == FR_UNWIND_MISS_PENDING)
		g->unwind_pending_uid = m.uid;
	if (t) {
		i = g->unwind_mru_next++ % (sizeof(g->unwind_mru) / sizeof(g->unwind_mru[0]));
		g->unwind_mru[i].pid = pid;
		g->unwind_mru[i].start = m.start;
		g->unwind_mru[i].end = m.end;
		g->unwind_mru[i].pgoff = m.pgoff;
		g->unwind_mru[i].table = t;
		if (g->unwind_mru_n <= i)
			g->unwind_mru_n = i + 1;
	}
	return t;
}

/* How long the ingest thread may wait, in all, for tables being built,
 * in a second: a new program's first samples come with its first build.
 * A second, not a drain: the builder is a thread of normal priority
 * building what users' binaries make it build, and on a loaded machine
 * (or behind a user's flood of binaries) it may not get to a table for
 * seconds; a budget per drain let every drain, dozens a second, wait
 * its whole budget for it while the rings filled. */
#define UNWIND_WAIT_PER_SECOND_NS (50 * 1000000LL)
/* Of which the samples of users other than root may take this much: a
 * user's flood of new binaries, whose samples all wait for tables, leaves
 * root's programs the rest. */
#define UNWIND_WAIT_USERS_NS (UNWIND_WAIT_PER_SECOND_NS / 2)

static int on_unwind_wait(void *arg)
{
	struct fr_ingest *g = arg;
	int64_t t0, waited, left = g->unwind_wait_left;
	int ret;

	if (g->unwind_pending_uid != 0)
		left -= UNWIND_WAIT_PER_SECOND_NS - UNWIND_WAIT_USERS_NS;
	if (!g->unwind_tables || left <= 0)
		return 0;
	t0 = fr_now_mono_ns();
	ret = fr_unwind_tables_wait(g->unwind_tables, left);
	if (ret)
		g->unwind_mru_n = 0; /* tables taken, others perhaps dropped */
	waited = fr_now_mono_ns() - t0;
	g->unwind_wait_left -= waited > 0 ? waited : 0;
	return ret;
}

static uint32_t on_labels(void *arg, const struct fr_bpf_labels_rec *r)
{
	return fr_applabels_intern(((struct fr_ingest *)arg)->applabels, r);
}

static uint32_t on_labels_event(void *arg, uint32_t base, const struct fr_app_label *extra,
				uint32_t n)
{
	return fr_applabels_plus_event(((struct fr_ingest *)arg)->applabels, base, extra, n);
}

static uint32_t on_labels_plus(void *arg, uint32_t base, const struct fr_app_label *extra,
			       uint32_t n)
{
	return fr_applabels_plus(((struct fr_ingest *)arg)->applabels, base, extra, n);
}

static void on_fork(void *arg, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
		    int64_t time_ns)
{
	struct fr_ingest *g = arg;

	fr_tracker_fork(g->tracker, pid, ppid, tid, ptid, time_ns);
	/* A child of a process whose allocations are read has the library
	 * too, and a ring of its own soon: looked for at once. */
	if (pid != ppid && fr_allocs_mapped(g->allocs, ppid))
		fr_applabels_mapped(g->applabels, pid, "libflightrec.so");
}

static void on_exit_rec(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns)
{
	struct fr_ingest *g = arg;

	fr_tracker_exit(g->tracker, pid, tid, time_ns);
	if (pid == tid)
		fr_allocs_exited(g->allocs, pid, time_ns);
}

/* Counts `lost` samples of `event` in the open chunk, with when, so a
 * timeline puts them in the seconds they were taken (core/store/chunk.h,
 * section 4): since two drains ago. A full perf ring drops samples until
 * a drain gives its space back, and the kernel writes the LOST record
 * with its first record after that: read at the next drain. So what this
 * drain reads was lost after the drain before the previous one began (a
 * stall: from the drain before it, not only the second after it). */
static void lost_gap(struct fr_ingest *g, uint32_t event, uint64_t lost)
{
	int64_t now = fr_now_real_ns(),
		from = g->prev2_drain_real ? g->prev2_drain_real : g->prev_drain_real;

	fr_chunk_builder_count(g->builder, event, lost, 0, 0);
	fr_chunk_builder_gap(g->builder, FR_GAP_LOST, event, lost, from && from < now ? from : now,
			     now);
	g->losses_pending = 1;
}

/* Samples lost before they reached a chunk, for `event`: perf's
 * PERF_RECORD_LOST, switch-outs evicted from the pairing table, waits the
 * off-CPU eBPF program dropped (recorder/sampling/bpf_offcpu.c), a sample no chunk
 * could take. Into the open chunk's events table (its `lost`, what
 * samples_lost and the profiles' comments add up) and the counters of
 * status. */
static void on_lost(void *arg, uint32_t event, uint64_t lost)
{
	struct fr_ingest *g = arg;
	struct fr_source *src = g->sources->draining;

	if (!src && event == FR_EVENT_OOM) {
		fr_ingest_oom_lost(g, lost);
		return;
	}
	if (!src && event >= FR_EVENT_EXEC && event <= FR_EVENT_CRASH) {
		fr_ingest_blackbox_lost(g, event, lost);
		return;
	}
	if (!src && (event == FR_EVENT_ALLOC || event == FR_EVENT_ALLOC_FREE)) {
		/* Samples, and frees of sampled blocks, the processes'
		 * libraries had no room for or could not track
		 * (recorder/sampling/allocs.c): lost like the kernel's; the
		 * alloc profile counts the first, the heap both. */
		lost_gap(g, event, lost);
		__atomic_add_fetch(&g->lost, lost, __ATOMIC_RELAXED);
		return;
	}
	if (!src) {
		/* The side band's records, not samples: some processes may go
		 * unnamed or unsymbolized, no sample is missing. */
		fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
				   "the side band lost %" PRIu64 " records (process names and "
				   "mappings); its rings are too small for this machine's churn",
				   lost);
		return;
	}
	lost_gap(g, event, lost);
	__atomic_add_fetch(&g->lost, lost, __ATOMIC_RELAXED);
	__atomic_add_fetch(&src->lost, lost, __ATOMIC_RELAXED);
}

static void on_throttle(void *arg, uint32_t event)
{
	struct fr_ingest *g = arg;
	struct fr_source *src = g->sources->draining;

	fr_chunk_builder_count(g->builder, event, 0, 1, 0);
	if (src)
		__atomic_add_fetch(&src->throttled, 1, __ATOMIC_RELAXED);
}

/* Notes a stall from Unix ns t0 (the drain before) to t1. */
static void stall_note(struct fr_ingest *g, int64_t t0, int64_t t1)
{
	pthread_mutex_lock(&g->stall_lock);
	g->stall_log[g->stall_next % FR_INGEST_STALL_LOG] = (struct fr_ingest_stall){t0, t1};
	g->stall_next++;
	pthread_mutex_unlock(&g->stall_lock);
}

int fr_ingest_stall_within(struct fr_ingest *g, int64_t t0, int64_t t1, int64_t *s0, int64_t *s1)
{
	int found = 0;

	*s0 = *s1 = 0;
	pthread_mutex_lock(&g->stall_lock);
	for (uint32_t i = 0; i < FR_INGEST_STALL_LOG && i < g->stall_next; i++) {
		int64_t a = g->stall_log[i].t0 > t0 ? g->stall_log[i].t0 : t0;
		int64_t b = g->stall_log[i].t1 < t1 ? g->stall_log[i].t1 : t1;

		if (b > a && b - a > *s1 - *s0) {
			*s0 = a;
			*s1 = b;
			found = 1;
		}
	}
	pthread_mutex_unlock(&g->stall_lock);
	return found;
}

/* Once per drain: every ten seconds, the unwind tables no frame used in
 * the last minute go. */
static void tables_trim(struct fr_ingest *g, int64_t now)
{
	const unsigned n = sizeof(g->tables_marks) / sizeof(g->tables_marks[0]);
	unsigned at = g->tables_nmarks % n;

	if (!g->unwind_tables || now - g->tables_mono < TABLES_CHECK_NS)
		return;
	g->tables_mono = now;
	/* marks[at] was taken a minute ago (once there are n): what no
	 * frame used since goes. */
	if (g->tables_nmarks >= n)
		fr_unwind_tables_trim_idle(g->unwind_tables, g->tables_marks[at]);
	g->tables_marks[at] = fr_unwind_tables_clock(g->unwind_tables);
	g->tables_nmarks++;
}

/* Runs before every drain: counts a stall, and takes the clock offset
 * the records are converted with. */
static void before_drain(void *arg)
{
	struct fr_ingest *g = arg;
	int64_t now = fr_now_mono_ns(), last = g->last_drain_mono;

	/* Nothing the ingest thread does should take this long; if it did,
	 * samples may have been lost in full perf rings, and status says
	 * so. */
	if (last && now - last > FR_INGEST_STALL_NS) {
		int64_t real = fr_now_real_ns();
		char where[2 * FR_INGEST_WHERE_MAX + 32];

		__atomic_add_fetch(&g->stalls, 1, __ATOMIC_RELAXED);
		stall_note(g, real - (now - last), real);
		/* In the ring too, so a timeline (and a dump after a crash)
		 * marks the seconds. */
		fr_chunk_builder_gap(g->builder, FR_GAP_STALL, 0, 0, real - (now - last), real);
		g->losses_pending = 1;
		if (now - last > __atomic_load_n(&g->longest_stall_ns, __ATOMIC_RELAXED))
			__atomic_store_n(&g->longest_stall_ns, now - last, __ATOMIC_RELAXED);
		fr_ingest_stall_where(g, last, where, sizeof(where));
		fr_log_warn("the ingest thread was held up for %lld ms%s",
			    (long long)((now - last) / 1000000), where);
	}
	__atomic_store_n(&g->last_drain_mono, now, __ATOMIC_RELAXED);
	g->prev2_drain_real = g->prev_drain_real;
	g->prev_drain_real = __atomic_load_n(&g->last_drain_real, __ATOMIC_RELAXED);
	__atomic_store_n(&g->last_drain_real, fr_now_real_ns(), __ATOMIC_RELAXED);
	g->sources->clock_offset = fr_perf_clock_offset();
	/* Tables built since the last drain serve this one. */
	if (g->unwind_tables)
		fr_unwind_tables_collect(g->unwind_tables);
	/* Before the MRU is emptied below: it may drop tables. */
	tables_trim(g, now);
	if (now - g->unwind_wait_second >= FR_NS_PER_S) {
		g->unwind_wait_second = now;
		g->unwind_wait_left = UNWIND_WAIT_PER_SECOND_NS;
	}
	/* The side band drained next may change mappings; the collect above
	 * may have dropped tables. */
	g->unwind_mru_n = 0;
	g->unwind_mru_next = 0;
}

void fr_ingest_init(struct fr_ingest *g, struct fr_sources *sources)
{
	memset(g, 0, sizeof(*g));
	g->sources = sources;
	g->sig_fd = g->flush_efd = -1;
	fr_mutex_init_pi(&g->stall_lock);
	fr_poller_init(&g->poller);
	/* Without its descriptor, the daemon says why and stops. */
	(void)fr_sources_init(sources, &g->poller, &g->handler);
	g->handler = (struct fr_perf_handler){
		.sample = on_sample,
		.comm = on_comm,
		.mmap = on_mmap,
		.fork = on_fork,
		.exit = on_exit_rec,
		.lost = on_lost,
		.throttle = on_throttle,
		.mmap_inode = on_mmap_inode,
		.unwind_find = on_unwind_find,
		.unwind_wait = on_unwind_wait,
		.labels = on_labels,
		.labels_plus = on_labels_plus,
		.labels_event = on_labels_event,
		.python = on_python,
		.oom = fr_ingest_on_oom,
		.blackbox = fr_ingest_on_blackbox,
		.arg = g,
	};
	g->sources->before_drain = before_drain;
	g->sources->before_drain_arg = g;
}

void fr_ingest_fini(struct fr_ingest *g)
{
	fr_poller_fini(&g->poller);
	pthread_mutex_destroy(&g->stall_lock);
}

void fr_ingest_tables_changed(struct fr_ingest *g)
{
	g->unwind_mru_n = 0;
}

/* The ingest thread's priority (core/util/priority.h): SCHED_FIFO 1 where
 * allowed, so that it is never queued behind a user's runnable threads,
 * else (and while its watchdog holds it off) a raised nice level. Its
 * work is short (a drain, a seal: at most RT_CPU_BUDGET_NS of CPU a
 * second at any sampling rate the configuration allows); the watchdog
 * takes it off SCHED_FIFO for RT_BACKOFF_NS when it used more in a
 * second, so a bug or an input that made it loop could not hold a CPU
 * from the machine (the kernel's realtime throttling is the last
 * resort). Counted in status (ingest.realtime_drops). */
#define RT_CPU_BUDGET_NS (300 * 1000000LL)
#define RT_WINDOW_NS FR_NS_PER_S
#define RT_BACKOFF_NS (10 * FR_NS_PER_S)

static void priority_start(struct fr_ingest *g)
{
	int ret;

	fr_priority_raise();
	ret = fr_priority_realtime();
	g->rt_allowed = ret == 0;
	if (ret < 0)
		fr_log_warn("the ingest thread cannot run at SCHED_FIFO (%s); it runs at nice %d, "
			    "which hundreds of other runnable threads may still hold up: give "
			    "flightrecd CAP_SYS_NICE or an RLIMIT_RTPRIO of 1 (systemd: "
			    "LimitRTPRIO=1)",
			    strerror(-ret), fr_priority_nice());
	g->rt_window0 = fr_now_mono_ns();
	g->rt_cpu0 = fr_priority_cpu_ns();
	__atomic_store_n(&g->nice, fr_priority_nice(), __ATOMIC_RELAXED);
	__atomic_store_n(&g->realtime, g->rt_allowed, __ATOMIC_RELAXED);
}

/* After each wake-up's work: the watchdog. */
static void priority_check(struct fr_ingest *g)
{
	int64_t now = fr_now_mono_ns(), cpu;

	if (!g->rt_allowed)
		return;
	if (g->rt_resume_at && now >= g->rt_resume_at) {
		g->rt_resume_at = 0;
		if (fr_priority_realtime() == 0)
			__atomic_store_n(&g->realtime, 1, __ATOMIC_RELAXED);
	}
	cpu = fr_priority_cpu_ns();
	if (!g->rt_resume_at && cpu - g->rt_cpu0 > RT_CPU_BUDGET_NS) {
		fr_priority_not_realtime();
		g->rt_resume_at = now + RT_BACKOFF_NS;
		__atomic_store_n(&g->realtime, 0, __ATOMIC_RELAXED);
		__atomic_add_fetch(&g->realtime_drops, 1, __ATOMIC_RELAXED);
		fr_log_ratelimited(FR_LOG_WARN, 60 * FR_NS_PER_S,
				   "the ingest thread used %lld ms of CPU within a second; off "
				   "SCHED_FIFO for %lld s",
				   (long long)((cpu - g->rt_cpu0) / 1000000),
				   (long long)(RT_BACKOFF_NS / FR_NS_PER_S));
	}
	if (now - g->rt_window0 >= RT_WINDOW_NS) {
		g->rt_window0 = now;
		g->rt_cpu0 = cpu;
	}
}

/* SIGHUP reloads, SIGINT and SIGTERM stop, any other signal goes to the
 * triggers that name it. */
static void on_signal(int fd, short revents, void *arg)
{
	struct fr_ingest *g = arg;
	struct signalfd_siginfo si;

	(void)revents;
	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGHUP) {
		g->reload(g->reload_arg);
	} else if (si.ssi_signo != SIGINT && si.ssi_signo != SIGTERM) {
		if (g->triggers)
			fr_triggers_signal(g->triggers, (int)si.ssi_signo);
	} else {
		fr_log_info("received %s; storing the open chunk and exiting",
			    strsignal((int)si.ssi_signo));
		g->stopping = 1;
	}
}

/* A request asked for a flush barrier: seal after this wake-up's drain. */
static void on_flush(int fd, short revents, void *arg)
{
	struct fr_ingest *g = arg;
	uint64_t n;

	(void)revents;
	if (read(fd, &n, sizeof(n)) == sizeof(n))
		g->barrier = fr_writer_barrier_asked(g->writer);
}

/* How long to sleep: until the next seal is due, at most POLL_MAX_MS. */
static int poll_timeout(struct fr_ingest *g)
{
	int64_t now = fr_now_mono_ns(), due = SEAL_INTERVAL_NS - (now - g->last_seal_mono);
	int timeout, labels;

	if (due <= 0 && fr_chunk_builder_samples(g->builder) == 0 && g->open_waits == 0 &&
	    !g->losses_pending) {
		/* Nothing to seal: the next chunk's second starts now. */
		g->last_seal_mono = now;
		due = SEAL_INTERVAL_NS;
	}
	timeout = due <= 0 ? 0 : (int)(due / 1000000) + 1;
	if (timeout > POLL_MAX_MS)
		timeout = POLL_MAX_MS;
	/* A process's labels to look up soon (its library just mapped). */
	labels = fr_applabels_timeout_ms(g->applabels);
	if (labels >= 0 && labels < timeout)
		timeout = labels;
	/* Allocation rings are read every FR_ALLOCS_DRAIN_MS at least. */
	labels = fr_allocs_timeout_ms(g->allocs);
	return labels >= 0 && labels < timeout ? labels : timeout;
}

int fr_ingest_loop(struct fr_ingest *g)
{
	int ret;

	/* In this order: a signal (a reload) is handled before a
	 * reconcile, both before a flush barrier. */
	ret = fr_poller_add(&g->poller, g->sig_fd, POLLIN, on_signal, g);
	if (ret == 0)
		ret = fr_sources_listen(g->sources);
	if (ret == 0)
		ret = fr_poller_add(&g->poller, g->flush_efd, POLLIN, on_flush, g);
	/* Application labels' copies: drained after every wake-up. */
	if (ret == 0 && fr_applabels_fd(g->applabels) >= 0)
		ret = fr_poller_add(&g->poller, fr_applabels_fd(g->applabels), POLLIN, NULL, NULL);
	if (ret == 0 && fr_applabels_lookup_fd(g->applabels) >= 0)
		ret = fr_poller_add(&g->poller, fr_applabels_lookup_fd(g->applabels), POLLIN, NULL,
				    NULL);
	if (ret < 0)
		return ret;
	/* The drain keeps up with the machine: hundreds of a user's runnable
	 * threads at the default priority would otherwise leave it a share
	 * of a CPU too small to empty the rings before they fill
	 * (docs/performance.md "Priority"). */
	priority_start(g);
	g->last_seal_mono = fr_now_mono_ns();
	if (fr_ingest_watch_start(g) < 0)
		fr_log_warn("no thread watches the ingest thread: a stall's log line will not say "
			    "where it was held up");

	while (!g->stopping) {
		g->barrier = 0;
		ret = fr_poller_poll(&g->poller, poll_timeout(g));
		if (ret == -ENOMEM) {
			fr_log_err("out of memory rebuilding the poll set; stopping");
			seal(g, 0);
			break;
		}
		if (ret < 0) {
			fr_log_err("poll: %s", strerror(-ret));
			break;
		}
		fr_sources_drain(g->sources);
		fr_ingest_memory_take(g);
		fr_applabels_poll(g->applabels, g->sources->clock_offset);
		fr_allocs_set_mean(g->allocs, fr_sources_alloc_mean(g->sources));
		fr_allocs_drain(g->allocs, g->sources->clock_offset);
		if (g->barrier || g->stopping ||
		    ((fr_chunk_builder_samples(g->builder) > 0 || g->open_waits > 0 ||
		      g->losses_pending) &&
		     fr_now_mono_ns() - g->last_seal_mono >= SEAL_INTERVAL_NS))
			seal(g, g->barrier);
		priority_check(g);
	}
	fr_ingest_watch_stop(g);
	return 0;
}
