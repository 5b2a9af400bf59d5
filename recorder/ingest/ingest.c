/* flightrecd's ingest thread: drains the perf rings, feeds the process
 * tracker and the chunk builder, seals a chunk at least once a second and
 * hands it to the writer; reloads the configuration on SIGHUP.
 *
 * Invariants:
 * - Only the ingest thread touches the perf rings, the tracker and the
 *   chunk builder; it never blocks on disk or clients.
 * - A flush barrier asked before a wake-up is queued behind the chunk
 *   sealed after that wake-up's drain, so when the writer reaches it every
 *   sample up to the request is in the ring.
 */
#include "recorder/daemon_int.h"

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

/* Asks the ingest thread to seal and waits until the writer stored it.
 * Returns 0, or -ETIMEDOUT. */
int daemon_flush_barrier(struct daemon *d)
{
	uint64_t one = 1, target = fr_writer_barrier_ask(&d->writer);

	if (write(d->flush_efd, &one, sizeof(one)) < 0)
		return -errno;
	if (fr_writer_barrier_wait(&d->writer, target, FLUSH_TIMEOUT_MS) < 0) {
		__atomic_add_fetch(&d->flush_timeouts, 1, __ATOMIC_RELAXED);
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
static void drop_chunk(struct daemon *d, void *chunk, size_t len)
{
	struct {
		uint32_t event;
		uint64_t n;
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
		}
		samples = c->nsamples;
		fr_chunk_free(c);
	}
	for (uint32_t k = 0; k < nev; k++) {
		if (!ev[k].n)
			continue;
		fr_chunk_builder_count(d->builder, ev[k].event, ev[k].n, 0, 0);
		lost += ev[k].n;
	}
	/* This run's count takes the samples alone: the losses the chunk
	 * carried were counted when they happened. */
	if (lost)
		d->losses_pending = 1;
	__atomic_add_fetch(&d->lost, samples, __ATOMIC_RELAXED);
	fr_writer_drop(&d->writer, chunk);
}

/* Seals what the builder holds (if anything) and queues it for the
 * writer, followed by barrier generation `barrier` when non-zero. */
static void seal_chunk(struct daemon *d, uint64_t barrier)
{
	void *chunk = NULL;
	size_t len = 0;
	int ret;

	ret = fr_chunk_builder_seal(d->builder,
				    fr_applabels_ops(d->applabels, d->sources.clock_offset),
				    d->sources.clock_offset, &chunk, &len);
	fr_applabels_sealed(d->applabels);
	{
		uint32_t labelled, unreadable;

		fr_applabels_counts(d->applabels, &labelled, &unreadable);
		__atomic_store_n(&d->labelled_procs, labelled, __ATOMIC_RELAXED);
		__atomic_store_n(&d->unreadable_procs, unreadable, __ATOMIC_RELAXED);
	}
	if (ret < 0 && ret != -ENODATA)
		fr_log_ratelimited(FR_LOG_ERR, 10 * FR_NS_PER_S, "cannot seal a chunk: %s",
				   strerror(-ret));
	if (ret == 0)
		__atomic_add_fetch(&d->chunks_sealed, 1, __ATOMIC_RELAXED);
	d->losses_pending = 0;
	__atomic_store_n(&d->last_seal_real, fr_now_real_ns(), __ATOMIC_RELAXED);
	fr_tracker_sealed(d->tracker);
	__atomic_store_n(&d->nprocs, fr_tracker_nprocs(d->tracker), __ATOMIC_RELAXED);
	__atomic_store_n(&d->nthreads, fr_tracker_nthreads(d->tracker), __ATOMIC_RELAXED);
	if (ret == 0 && !fr_writer_has_room(&d->writer, len)) {
		drop_chunk(d, chunk, len);
		ret = -ENOBUFS;
	}
	if (ret == 0 || barrier)
		fr_writer_enqueue(&d->writer, ret == 0 ? chunk : NULL, len, barrier);
}

/* One open-wait record into the chunk being sealed; a full chunk is
 * sealed and the rest go to the next, stamped with the same time. */
static void on_open_wait(void *arg, const struct fr_sample *s)
{
	struct daemon *d = arg;
	int ret = fr_chunk_builder_add(d->builder, s);

	if (ret == -ENOSPC) {
		seal_chunk(d, 0);
		ret = fr_chunk_builder_add(d->builder, s);
	}
	if (ret == 0)
		d->open_waits++;
}

/* A periodic or asked-for seal: the threads blocked now go with the
 * chunk (see "open waits" in core/store/chunk.h), so a reader of the
 * ring, even after a crash, knows who was stuck since when and where. A
 * chunk sealed because it is full carries none: the next periodic seal
 * is at most a second away. */
static void seal(struct daemon *d, uint64_t barrier)
{
	uint64_t now = fr_now_mono_ns();

	/* The next periodic seal is due a second from this one. Only here:
	 * were a full chunk's seal to restart the second, chunks filling
	 * faster than once a second would put it off for ever, and no chunk
	 * would say who is blocked. */
	d->last_seal_mono = (int64_t)now;
	d->open_waits = 0;
	for (unsigned i = 0; i < d->sources.n; i++)
		if (d->sources.table[i].perf)
			fr_perf_offcpu_open(d->sources.table[i].perf, d->sources.clock_offset, now,
					    on_open_wait, d);
	seal_chunk(d, barrier);
}

static void on_lost(void *arg, uint32_t event, uint64_t lost);

static void on_sample(void *arg, const struct fr_sample *s)
{
	struct daemon *d = arg;
	struct fr_source *src = d->sources.draining;
	int ret = fr_chunk_builder_add(d->builder, s);

	if (ret == -ENOSPC) {
		seal_chunk(d, 0);
		ret = fr_chunk_builder_add(d->builder, s);
	}
	if (ret == 0) {
		__atomic_add_fetch(&d->samples, 1, __ATOMIC_RELAXED);
		if (src)
			__atomic_add_fetch(&src->samples, 1, __ATOMIC_RELAXED);
	} else {
		/* Not kept even by an empty chunk (its seal failed): lost, as
		 * what the kernel drops is. */
		on_lost(d, s->event, 1);
		return;
	}
	if (s->nr_frames == FR_MAX_FRAMES) {
		fr_chunk_builder_count(d->builder, s->event, 0, 0, 1);
		if (src)
			__atomic_add_fetch(&src->truncated, 1, __ATOMIC_RELAXED);
	}
}

static void on_comm(void *arg, uint32_t pid, uint32_t tid, const char *comm, int exec,
		    int64_t time_ns)
{
	struct daemon *d = arg;

	fr_tracker_comm_at(d->tracker, pid, tid, comm, exec, time_ns);
	/* A new program: its labels (and where they are) are its own. */
	if (exec)
		fr_applabels_exec(d->applabels, pid);
}

/* A new executable mapping (an exec, a dlopen) has its table asked for
 * at once when an event unwinds with CFI, so that it is built before the
 * mapping's first samples are drained rather than after (those would end
 * "unwind table not ready", or wait for it). The builds a busy machine's
 * execs cost are in docs/performance.md. */
static void prefetch_table(struct daemon *d, uint32_t pid, uint64_t start)
{
	struct fr_tracker_map m;
	unsigned i;

	if (!d->unwind_tables)
		return;
	for (i = 0; i < d->sources.n; i++)
		if (d->sources.table[i].stack_copy && d->sources.table[i].perf)
			break;
	if (i == d->sources.n || fr_tracker_find_map(d->tracker, pid, start, &m) < 0)
		return;
	fr_unwind_tables_prefetch(d->unwind_tables, pid, &m);
}

static void on_mmap(void *arg, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		    uint32_t prot, const char *path, const uint8_t *build_id, uint8_t build_id_len)
{
	struct daemon *d = arg;

	fr_tracker_mmap(d->tracker, pid, start, len, pgoff, prot, path, build_id, build_id_len);
	if (prot & PROT_EXEC)
		fr_applabels_mapped(d->applabels, pid, path);
	/* Without a build id, the inode comes next (on_mmap_inode). */
	if ((prot & PROT_EXEC) && (build_id_len || path[0] == '['))
		prefetch_table(d, pid, start);
}

static void on_mmap_inode(void *arg, uint32_t pid, uint64_t start, uint64_t dev, uint64_t ino,
			  uint64_t ino_generation)
{
	struct daemon *d = arg;

	fr_tracker_mmap_inode(d->tracker, pid, start, dev, ino, ino_generation);
	prefetch_table(d, pid, start);
}

/* The unwinder's look-up: the process's mapping of `addr` (tracker), then
 * that file's table (unwind_tables). */
static const struct fr_cfi_table *on_unwind_find(void *arg, uint32_t pid, uint64_t addr,
						 uint64_t *vaddr, int *miss)
{
	struct daemon *d = arg;
	struct fr_tracker_map m;
	const struct fr_cfi_table *t;
	unsigned i;

	for (i = 0; i < d->unwind_mru_n; i++) {
		if (d->unwind_mru[i].pid == pid && addr >= d->unwind_mru[i].start &&
		    addr < d->unwind_mru[i].end) {
			t = d->unwind_mru[i].table;
			if (fr_cfi_translate(t,
					     addr - d->unwind_mru[i].start + d->unwind_mru[i].pgoff,
					     vaddr) == 0)
				return t;
			*miss = FR_UNWIND_MISS_NOCFI;
			return NULL;
		}
	}
	if (fr_tracker_find_map(d->tracker, pid, addr, &m) < 0) {
		*miss = FR_UNWIND_MISS_NOMAP;
		return NULL;
	}
	if (!d->unwind_tables) {
		*miss = FR_UNWIND_MISS_NOCFI;
		return NULL;
	}
	t = fr_unwind_tables_find(d->unwind_tables, pid, &m, addr, vaddr, miss);
	if (!t && *miss == FR_UNWIND_MISS_PENDING)
		d->unwind_pending_uid = m.uid;
	if (t) {
		i = d->unwind_mru_next++ % (sizeof(d->unwind_mru) / sizeof(d->unwind_mru[0]));
		d->unwind_mru[i].pid = pid;
		d->unwind_mru[i].start = m.start;
		d->unwind_mru[i].end = m.end;
		d->unwind_mru[i].pgoff = m.pgoff;
		d->unwind_mru[i].table = t;
		if (d->unwind_mru_n <= i)
			d->unwind_mru_n = i + 1;
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
	struct daemon *d = arg;
	int64_t t0, waited, left = d->unwind_wait_left;
	int ret;

	if (d->unwind_pending_uid != 0)
		left -= UNWIND_WAIT_PER_SECOND_NS - UNWIND_WAIT_USERS_NS;
	if (!d->unwind_tables || left <= 0)
		return 0;
	t0 = fr_now_mono_ns();
	ret = fr_unwind_tables_wait(d->unwind_tables, left);
	if (ret)
		d->unwind_mru_n = 0; /* tables taken, others perhaps dropped */
	waited = fr_now_mono_ns() - t0;
	d->unwind_wait_left -= waited > 0 ? waited : 0;
	return ret;
}

static uint32_t on_labels(void *arg, const struct fr_bpf_labels_rec *r)
{
	return fr_applabels_intern(((struct daemon *)arg)->applabels, r);
}

static void on_fork(void *arg, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
		    int64_t time_ns)
{
	fr_tracker_fork(((struct daemon *)arg)->tracker, pid, ppid, tid, ptid, time_ns);
}

static void on_exit_rec(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns)
{
	fr_tracker_exit(((struct daemon *)arg)->tracker, pid, tid, time_ns);
}

/* Samples lost before they reached a chunk, for `event`: perf's
 * PERF_RECORD_LOST, switch-outs evicted from the pairing table, waits the
 * off-CPU eBPF program dropped (recorder/sampling/bpf_offcpu.c), a sample no chunk
 * could take. Into the open chunk's events table (its `lost`, what
 * samples_lost and the profiles' comments add up) and the counters of
 * status. */
static void on_lost(void *arg, uint32_t event, uint64_t lost)
{
	struct daemon *d = arg;
	struct fr_source *src = d->sources.draining;

	if (!src) {
		/* The side band's records, not samples: some processes may go
		 * unnamed or unsymbolized, no sample is missing. */
		fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
				   "the side band lost %" PRIu64 " records (process names and "
				   "mappings); its rings are too small for this machine's churn",
				   lost);
		return;
	}
	fr_chunk_builder_count(d->builder, event, lost, 0, 0);
	d->losses_pending = 1;
	__atomic_add_fetch(&d->lost, lost, __ATOMIC_RELAXED);
	__atomic_add_fetch(&src->lost, lost, __ATOMIC_RELAXED);
}

static void on_throttle(void *arg, uint32_t event)
{
	struct daemon *d = arg;
	struct fr_source *src = d->sources.draining;

	fr_chunk_builder_count(d->builder, event, 0, 1, 0);
	if (src)
		__atomic_add_fetch(&src->throttled, 1, __ATOMIC_RELAXED);
}

/* Runs before every drain: counts a stall, and takes the clock offset
 * the records are converted with. */
static void before_drain(void *arg)
{
	struct daemon *d = arg;
	int64_t now = fr_now_mono_ns(), last = d->last_drain_mono;

	/* Nothing the ingest thread does should take this long; if it did,
	 * samples may have been lost in full perf rings, and status says
	 * so. */
	if (last && now - last > STALL_NS) {
		int64_t real = fr_now_real_ns();

		__atomic_add_fetch(&d->stalls, 1, __ATOMIC_RELAXED);
		daemon_stall_note(d, real - (now - last), real);
		if (now - last > __atomic_load_n(&d->longest_stall_ns, __ATOMIC_RELAXED))
			__atomic_store_n(&d->longest_stall_ns, now - last, __ATOMIC_RELAXED);
		fr_log_warn("the ingest thread was held up for %lld ms",
			    (long long)((now - last) / 1000000));
	}
	__atomic_store_n(&d->last_drain_mono, now, __ATOMIC_RELAXED);
	__atomic_store_n(&d->last_drain_real, fr_now_real_ns(), __ATOMIC_RELAXED);
	d->sources.clock_offset = fr_perf_clock_offset();
	/* Tables built since the last drain serve this one. */
	if (d->unwind_tables)
		fr_unwind_tables_collect(d->unwind_tables);
	/* Before the MRU is emptied below: it may drop tables. */
	daemon_memory_drained(d, now);
	if (now - d->unwind_wait_second >= FR_NS_PER_S) {
		d->unwind_wait_second = now;
		d->unwind_wait_left = UNWIND_WAIT_PER_SECOND_NS;
	}
	/* The side band drained next may change mappings; the collect above
	 * may have dropped tables. */
	d->unwind_mru_n = 0;
	d->unwind_mru_next = 0;
}

void daemon_ingest_init(struct daemon *d)
{
	d->handler = (struct fr_perf_handler){
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
		.arg = d,
	};
	d->sources.before_drain = before_drain;
	d->sources.before_drain_arg = d;
}

static int differs(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
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

static void priority_start(struct daemon *d)
{
	int ret;

	fr_priority_raise();
	ret = fr_priority_realtime();
	d->rt_allowed = ret == 0;
	if (ret < 0)
		fr_log_warn("the ingest thread cannot run at SCHED_FIFO (%s); it runs at nice %d, "
			    "which hundreds of other runnable threads may still hold up: give "
			    "flightrecd CAP_SYS_NICE or an RLIMIT_RTPRIO of 1 (systemd: "
			    "LimitRTPRIO=1)",
			    strerror(-ret), fr_priority_nice());
	d->rt_window0 = fr_now_mono_ns();
	d->rt_cpu0 = fr_priority_cpu_ns();
	__atomic_store_n(&d->ingest_nice, fr_priority_nice(), __ATOMIC_RELAXED);
	__atomic_store_n(&d->ingest_realtime, d->rt_allowed, __ATOMIC_RELAXED);
}

/* After each wake-up's work: the watchdog. */
static void priority_check(struct daemon *d)
{
	int64_t now = fr_now_mono_ns(), cpu;

	if (!d->rt_allowed)
		return;
	if (d->rt_resume_at && now >= d->rt_resume_at) {
		d->rt_resume_at = 0;
		if (fr_priority_realtime() == 0)
			__atomic_store_n(&d->ingest_realtime, 1, __ATOMIC_RELAXED);
	}
	cpu = fr_priority_cpu_ns();
	if (!d->rt_resume_at && cpu - d->rt_cpu0 > RT_CPU_BUDGET_NS) {
		fr_priority_not_realtime();
		d->rt_resume_at = now + RT_BACKOFF_NS;
		__atomic_store_n(&d->ingest_realtime, 0, __ATOMIC_RELAXED);
		__atomic_add_fetch(&d->realtime_drops, 1, __ATOMIC_RELAXED);
		fr_log_ratelimited(FR_LOG_WARN, 60 * FR_NS_PER_S,
				   "the ingest thread used %lld ms of CPU within a second; off "
				   "SCHED_FIFO for %lld s",
				   (long long)((cpu - d->rt_cpu0) / 1000000),
				   (long long)(RT_BACKOFF_NS / FR_NS_PER_S));
	}
	if (now - d->rt_window0 >= RT_WINDOW_NS) {
		d->rt_window0 = now;
		d->rt_cpu0 = cpu;
	}
}

/* SIGHUP (or `flightrec reload`, recorder/requests/requests_ctl.c): reloads the
 * configuration file and applies what can change while recording. Returns
 * 0, or -errno with the reason in `why`. Ingest thread. */
static int reload_apply(struct daemon *d, char *why, size_t whylen)
{
	const struct fr_daemon_options *o = d->opts;
	const struct fr_config *old = d->config;
	struct fr_config *n;
	char err[1024], sync[32], age[32], rates[256];
	int ret;

	if (!o->config_path) {
		fr_log_info("SIGHUP: running the embedded default; there is no configuration "
			    "file to reload");
		snprintf(why, whylen,
			 "the recorder runs the embedded default configuration; "
			 "there is no file to reload (start it with --config FILE)");
		return -ENOENT;
	}
	n = calloc(1, sizeof(*n));
	ret = n ? fr_config_load(n, o->config_path, err, sizeof(err)) : -ENOMEM;
	if (ret < 0) {
		fr_log_err("reload rejected; the running configuration stays: %s",
			   n ? err : "out of memory");
		__atomic_add_fetch(&d->reloads_rejected, 1, __ATOMIC_RELAXED);
		snprintf(why, whylen, "%s", n ? err : "out of memory");
		free(n);
		return ret;
	}
	/* First, so a block that cannot be used refuses the whole reload. */
	ret = daemon_reload_export(d, old, n, why, whylen);
	if (ret < 0) {
		fr_log_err("reload rejected; the running configuration stays: %s", why);
		__atomic_add_fetch(&d->reloads_rejected, 1, __ATOMIC_RELAXED);
		fr_config_fini(n);
		free(n);
		return ret;
	}
	if (differs(n->ring_path, old->ring_path) || n->ring_size != old->ring_size ||
	    n->segment_size != old->segment_size || differs(n->socket_path, old->socket_path) ||
	    n->max_clients != old->max_clients || n->has_socket_group != old->has_socket_group ||
	    n->socket_gid != old->socket_gid)
		fr_log_warn("reload: ring.path, ring.size, ring.segment, socket, socket.group and "
			    "limits.max_clients take effect at the next start");
	if (differs(n->symbols.cache_dir, old->symbols.cache_dir) ||
	    n->symbols.cache_size != old->symbols.cache_size ||
	    n->symbols.cache_file_max != old->symbols.cache_file_max)
		fr_log_warn("reload: symbols.cache_dir, cache_size and cache_file_max take effect "
			    "at the next start; symbols.debug_dirs at once");

	fr_sources_set_sessions(&d->sources, n, o->hz_fixed, o->hz);
	fr_sources_reconcile(&d->sources);
	fr_ring_set_sync_interval(d->ring, n->sync_ns);
	__atomic_store_n(&d->writer.max_age_ns, n->max_age_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&d->max_rate_hz, n->max_rate_hz, __ATOMIC_RELAXED);
	__atomic_store_n(&d->user_max_rate_hz, n->user_max_rate_hz, __ATOMIC_RELAXED);
	__atomic_store_n(&d->admin_gid, n->has_admin_group ? (int64_t)n->admin_gid : -1,
			 __ATOMIC_RELAXED);
	daemon_memory_reload(d, n);
	pthread_mutex_lock(&d->config_lock);
	if (d->owned_config) {
		fr_config_fini(d->owned_config);
		free(d->owned_config);
	}
	d->owned_config = n;
	d->config = n;
	pthread_mutex_unlock(&d->config_lock);
	if (d->triggers && fr_triggers_set(d->triggers, n) < 0)
		fr_log_err("reload: the new triggers could not be set; the old ones stay");
	daemon_publish_sessions(d, n);
	__atomic_store_n(&d->reloaded_ns, fr_now_real_ns(), __ATOMIC_RELAXED);
	fr_sources_describe(&d->sources, 1, rates, sizeof(rates));
	fr_log_info("reloaded %s: %s%s, ring.sync %s, ring.max_age %s, limits.max_rate_hz %u",
		    o->config_path, rates[0] ? rates : "no events",
		    o->hz_fixed ? " (cpu rate from --hz)" : "",
		    n->sync_ns < 0 ? "off" : fr_format_duration(n->sync_ns, sync, sizeof(sync)),
		    n->max_age_ns > 0 ? fr_format_duration(n->max_age_ns, age, sizeof(age))
				      : "none",
		    n->max_rate_hz);
	return 0;
}

/* A reload, its outcome published for a `flightrec reload` waiting on it. */
static void reload(struct daemon *d)
{
	char why[1024] = "";
	uint64_t seq = daemon_reload_begin(d);

	daemon_reload_end(d, seq, reload_apply(d, why, sizeof(why)), why);
}

/* SIGHUP reloads, SIGINT and SIGTERM stop, any other signal goes to the
 * triggers that name it. */
static void on_signal(int fd, short revents, void *arg)
{
	struct daemon *d = arg;
	struct signalfd_siginfo si;

	(void)revents;
	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGHUP) {
		reload(d);
	} else if (si.ssi_signo != SIGINT && si.ssi_signo != SIGTERM) {
		if (d->triggers)
			fr_triggers_signal(d->triggers, (int)si.ssi_signo);
	} else {
		fr_log_info("received %s; storing the open chunk and exiting",
			    strsignal((int)si.ssi_signo));
		d->stopping = 1;
	}
}

/* A request asked for a flush barrier: seal after this wake-up's drain. */
static void on_flush(int fd, short revents, void *arg)
{
	struct daemon *d = arg;
	uint64_t n;

	(void)revents;
	if (read(fd, &n, sizeof(n)) == sizeof(n))
		d->barrier = fr_writer_barrier_asked(&d->writer);
}

/* How long to sleep: until the next seal is due, at most POLL_MAX_MS. */
static int poll_timeout(struct daemon *d)
{
	int64_t now = fr_now_mono_ns(), due = SEAL_INTERVAL_NS - (now - d->last_seal_mono);
	int timeout, labels;

	if (due <= 0 && fr_chunk_builder_samples(d->builder) == 0 && d->open_waits == 0 &&
	    !d->losses_pending) {
		/* Nothing to seal: the next chunk's second starts now. */
		d->last_seal_mono = now;
		due = SEAL_INTERVAL_NS;
	}
	timeout = due <= 0 ? 0 : (int)(due / 1000000) + 1;
	if (timeout > POLL_MAX_MS)
		timeout = POLL_MAX_MS;
	/* A process's labels to look up soon (its library just mapped). */
	labels = fr_applabels_timeout_ms(d->applabels);
	return labels >= 0 && labels < timeout ? labels : timeout;
}

int daemon_ingest_loop(struct daemon *d)
{
	int ret;

	/* In this order: a signal (a reload) is handled before a
	 * reconcile, both before a flush barrier. */
	ret = fr_poller_add(&d->poller, d->sig_fd, POLLIN, on_signal, d);
	if (ret == 0)
		ret = fr_sources_listen(&d->sources);
	if (ret == 0)
		ret = fr_poller_add(&d->poller, d->flush_efd, POLLIN, on_flush, d);
	/* Application labels' copies: drained after every wake-up. */
	if (ret == 0 && fr_applabels_fd(d->applabels) >= 0)
		ret = fr_poller_add(&d->poller, fr_applabels_fd(d->applabels), POLLIN, NULL, NULL);
	if (ret == 0 && fr_applabels_lookup_fd(d->applabels) >= 0)
		ret = fr_poller_add(&d->poller, fr_applabels_lookup_fd(d->applabels), POLLIN, NULL,
				    NULL);
	if (ret < 0)
		return ret;
	/* The drain keeps up with the machine: hundreds of a user's runnable
	 * threads at the default priority would otherwise leave it a share
	 * of a CPU too small to empty the rings before they fill
	 * (docs/performance.md "Priority"). */
	priority_start(d);
	d->last_seal_mono = fr_now_mono_ns();

	while (!d->stopping) {
		d->barrier = 0;
		ret = fr_poller_poll(&d->poller, poll_timeout(d));
		if (ret == -ENOMEM) {
			fr_log_err("out of memory rebuilding the poll set; stopping");
			seal(d, 0);
			break;
		}
		if (ret < 0) {
			fr_log_err("poll: %s", strerror(-ret));
			break;
		}
		fr_sources_drain(&d->sources);
		fr_applabels_poll(d->applabels, d->sources.clock_offset);
		if (d->barrier || d->stopping ||
		    ((fr_chunk_builder_samples(d->builder) > 0 || d->open_waits > 0 ||
		      d->losses_pending) &&
		     fr_now_mono_ns() - d->last_seal_mono >= SEAL_INTERVAL_NS))
			seal(d, d->barrier);
		priority_check(d);
	}
	return 0;
}
