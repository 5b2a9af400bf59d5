/* What status and sessions requests answer, and the sessions list the
 * daemon publishes at start and on each reload.
 *
 * A viewer who is not privileged gets the same numbers, but not which
 * processes of others follow (a consumer is "a client" unless it is the
 * viewer's own) nor where the configuration file is: the replies are
 * built for their viewer, never edited afterwards.
 */
#include "recorder/daemon_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/symbols/symbols.h"
#include "core/util/log.h"
#include "core/util/shares.h"
#include "fr_version.h"
#include "ipc/msg_status.h"
#include "recorder/export/export_ch.h"
#include "recorder/tracking/pystacks.h"
#include "recorder/tracking/symcache.h"
#include "recorder/requests/peer.h"

/* "all processes", or e.g. "pid 12,13; comm postgres; cgroup /a/b". */
static const char *describe_targets(const struct fr_config_session *sess, char *buf, size_t len)
{
	size_t used = 0;
	int k;

	buf[0] = '\0';
	for (uint32_t i = 0; i < sess->targets.npids && used < len; i++) {
		k = snprintf(buf + used, len - used, "%s%u", i ? "," : "pid ",
			     sess->targets.pids[i]);
		used += k > 0 ? (size_t)k : 0;
	}
	for (uint32_t i = 0; i < sess->targets.ncomms && used < len; i++) {
		k = snprintf(buf + used, len - used, "%s%s",
			     i	    ? ","
			     : used ? "; comm "
				    : "comm ",
			     sess->targets.comms[i]);
		used += k > 0 ? (size_t)k : 0;
	}
	if (sess->targets.cgroup[0] && used < len) {
		k = snprintf(buf + used, len - used, "%scgroup %s", used ? "; " : "",
			     sess->targets.cgroup);
		used += k > 0 ? (size_t)k : 0;
	}
	if (sess->targets.has_uid && used < len)
		snprintf(buf + used, len - used, "%suid %u", used ? "; " : "", sess->targets.uid);
	return buf[0] ? buf : "all processes";
}

/* The session's triggers, as `sessions` shows them. */
static void session_triggers(struct fr_ipc_session *o, const struct fr_config_session *sess)
{
	for (uint32_t t = 0; t < sess->ntriggers && t < FR_IPC_SESSION_TRIGGERS; t++) {
		const struct fr_config_trigger *tr = &sess->triggers[t];
		struct fr_ipc_session_trigger *to = &o->triggers[o->ntriggers++];

		snprintf(to->on, sizeof(to->on), "%s", fr_config_trigger_kind(tr->kind));
		if (tr->kind == FR_TRIGGER_SIGNAL)
			fr_config_signal_name(tr->signal, to->signal, sizeof(to->signal));
		if (tr->kind == FR_TRIGGER_CPU_ABOVE) {
			to->has_cpu = 1;
			to->percent = (uint64_t)tr->percent;
		}
		if (tr->kind == FR_TRIGGER_PRESSURE) {
			snprintf(to->resource, sizeof(to->resource), "%s",
				 fr_config_pressure_resource(tr->resource));
			fr_config_pressure_above(tr, to->above, sizeof(to->above));
		}
		if (tr->kind == FR_TRIGGER_CPU_ABOVE || tr->kind == FR_TRIGGER_PRESSURE) {
			to->has_for = 1;
			to->for_ns = tr->for_ns;
		}
		to->window_ns = tr->window_ns;
		to->after_ns = tr->after_ns;
		to->cooldown_ns = tr->cooldown_ns;
	}
}

void daemon_publish_sessions(struct daemon *d, const struct fr_config *cfg)
{
	struct fr_ipc_session *list = calloc(cfg->nsessions ? cfg->nsessions : 1, sizeof(*list));

	if (!list)
		return; /* out of memory: keep answering with the previous list */
	for (uint32_t i = 0; i < cfg->nsessions; i++) {
		const struct fr_config_session *sess = &cfg->sessions[i];
		struct fr_ipc_session *o = &list[i];
		char targets[512];

		snprintf(o->name, sizeof(o->name), "%s", sess->name);
		for (uint32_t e = 0; e < sess->nevents && e < FR_LIMIT_EVENTS; e++) {
			struct fr_ipc_event_rate *ev = &o->events[o->nevents++];

			fr_event_format(sess->events[e].event, ev->event, sizeof(ev->event));
			ev->hz = sess->events[e].hz;
			if (sess->events[e].event == FR_EVENT_CPU && d->opts->hz_fixed)
				ev->hz = d->opts->hz;
			ev->period = sess->events[e].period;
		}
		snprintf(o->targets, sizeof(o->targets), "%s",
			 describe_targets(sess, targets, sizeof(targets)));
		session_triggers(o, sess);
	}
	pthread_mutex_lock(&d->sessions_lock);
	free(d->sessions);
	d->sessions = list;
	d->nsessions = cfg->nsessions;
	pthread_mutex_unlock(&d->sessions_lock);
}

/* `sessions`: the configured sessions, what they record and what their
 * triggers did; to `viewer`. */
int daemon_handle_sessions(void *arg, struct fr_ipc_call *call, struct fr_ipc_sessions_reply *r)
{
	struct daemon *d = arg;
	const struct fr_ipc_peer *viewer = call->peer;
	int privileged = fr_peer_privileged(d->peers, viewer);

	pthread_mutex_lock(&d->sessions_lock);
	r->sessions = calloc(d->nsessions ? d->nsessions : 1, sizeof(*r->sessions));
	if (r->sessions) {
		memcpy(r->sessions, d->sessions, d->nsessions * sizeof(*r->sessions));
		r->nsessions = d->nsessions;
	}
	pthread_mutex_unlock(&d->sessions_lock);
	if (!r->sessions)
		return -ENOMEM;
	/* The list is the configuration in force, in order: the engine's
	 * session i is the list's i. */
	for (uint32_t i = 0; i < r->nsessions; i++) {
		r->sessions[i].last_dump_ns = d->triggers ? fr_triggers_last_dump(d->triggers, i)
							  : 0;
		r->sessions[i].suppressed = d->triggers ? fr_triggers_suppressed(d->triggers, i)
							: 0;
	}
	/* Where the configuration file is, only to those who may read it. */
	if (privileged)
		snprintf(r->config, sizeof(r->config), "%s", d->opts->config_source);
	r->cpu_hz = fr_sources_hz(&d->sources, FR_EVENT_CPU);
	r->hz_from_command_line = d->opts->hz_fixed;
	return fr_sources_status(&d->sources, &r->rec, privileged, viewer->uid);
}

/* "ingest": whether the ingest thread keeps up, and the build id reader
 * beside it. `stalled` is true while the last drain is older than a
 * stall; a reader busy for seconds is reading a file that does not
 * answer (recording goes on without that build id). The writer's last
 * append and whether it is stuck (its disk not answering) go here too:
 * either way samples stop reaching the ring; and while the ring's disk
 * refuses appends (a file system gone read-only, I/O errors), why and
 * since when. */
static void ingest_status(struct daemon *d, struct fr_ipc_status_ingest *o, int64_t now)
{
	int64_t last = __atomic_load_n(&d->ingest.last_drain_mono, __ATOMIC_RELAXED), busy = 0,
		longest;
	int stalled = last && now - last > FR_INGEST_STALL_NS, err;
	uint32_t pending = 0;
	size_t queued = 0;

	o->last_drain_ns = __atomic_load_n(&d->ingest.last_drain_real, __ATOMIC_RELAXED);
	o->last_seal_ns = __atomic_load_n(&d->ingest.last_seal_real, __ATOMIC_RELAXED);
	o->last_append_ns = __atomic_load_n(&d->writer.last_append_real, __ATOMIC_RELAXED);
	o->stalled = stalled;
	o->stalls = __atomic_load_n(&d->ingest.stalls, __ATOMIC_RELAXED);
	/* A stall still going on is the longest when it is. */
	longest = __atomic_load_n(&d->ingest.longest_stall_ns, __ATOMIC_RELAXED);
	o->longest_stall_ns = stalled && now - last > longest ? now - last : longest;
	o->writer_stalled = fr_writer_stalled(&d->writer, FR_INGEST_STALL_NS, &queued);
	o->writer_queued_bytes = queued;
	err = fr_writer_error(&d->writer, &o->writer_error_since_ns);
	o->has_writer_error = err != 0;
	if (err)
		snprintf(o->writer_error, sizeof(o->writer_error), "%s", strerror(err));
	else
		o->writer_error_since_ns = 0;
	o->nice = __atomic_load_n(&d->ingest.nice, __ATOMIC_RELAXED);
	o->writer_nice = __atomic_load_n(&d->writer_nice, __ATOMIC_RELAXED);
	o->realtime = __atomic_load_n(&d->ingest.realtime, __ATOMIC_RELAXED);
	o->realtime_drops = __atomic_load_n(&d->ingest.realtime_drops, __ATOMIC_RELAXED);
	o->flush_timeouts = __atomic_load_n(&d->ingest.flush_timeouts, __ATOMIC_RELAXED);
	if (d->tracker)
		fr_tracker_file_state(d->tracker, &pending, &busy);
	o->build_id_reads_pending = pending;
	o->build_id_read_busy_ns = busy ? now - busy : 0;
}

/* Owners listed in status at most; the rest are summed. */
#define STATUS_OWNERS FR_IPC_STATUS_OWNERS

/* "owners": what each owner holds of a cache's budget (core/util/shares.h),
 * root first, then by bytes. A viewer who is not privileged sees root's
 * and their own; what others hold, and owners past STATUS_OWNERS, are
 * summed in "other_owners". */
static void owners_status(struct fr_ipc_owners *o, const struct fr_share *v, size_t n,
			  const struct fr_share *rest, int privileged, uint32_t viewer)
{
	uint64_t other_bytes = rest->bytes, other_entries = rest->entries, nother = rest->uid;

	for (size_t i = 0; i < n; i++) {
		if (!privileged && v[i].uid != 0 && v[i].uid != viewer) {
			other_bytes += v[i].bytes;
			other_entries += v[i].entries;
			nother++;
			continue;
		}
		if (o->n < FR_IPC_STATUS_OWNERS)
			o->v[o->n++] = (struct fr_ipc_owner){v[i].uid, v[i].bytes, v[i].entries};
	}
	o->has_others = nother != 0;
	o->other_owners = nother;
	o->other_bytes = other_bytes;
	o->other_entries = other_entries;
}

/* "symbol_cache": what the symbol cache holds (recorder/tracking/symcache.h), its
 * budget and its owners; its directory only to a privileged viewer. */
static void symcache_status(struct daemon *d, struct fr_ipc_status_symcache *o, int privileged,
			    uint32_t viewer)
{
	struct fr_share own[STATUS_OWNERS], rest;
	size_t n;

	if (privileged)
		snprintf(o->dir, sizeof(o->dir), "%s", d->symcache_dir);
	fr_symcache_usage(d->symcache, &o->files, &o->bytes);
	n = fr_symcache_owners(d->symcache, own, STATUS_OWNERS, &rest, &o->budget);
	owners_status(&o->owners, own, n, &rest, privileged, viewer);
}

/* "unwind_tables": the CFI tables stacks are unwound with
 * (recorder/tracking/unwind_tables.h), their budget and what each
 * owner's tables take. */
static void unwind_tables_status(struct daemon *d, struct fr_ipc_status_unwind_tables *o,
				 int privileged, uint32_t viewer)
{
	struct fr_unwind_tables_stats st;
	struct fr_share own[STATUS_OWNERS], rest;
	size_t n;

	fr_unwind_tables_stats(d->unwind_tables, &st);
	o->built = st.built;
	o->failed = st.failed;
	o->pending = st.pending;
	o->evicted = st.evicted;
	o->tables = st.tables;
	o->bytes = st.bytes;
	o->linked = st.linked;
	o->prefetched = st.prefetched;
	o->skipped = st.skipped;
	n = fr_unwind_tables_owners(d->unwind_tables, own, STATUS_OWNERS, &rest, &o->budget);
	owners_status(&o->owners, own, n, &rest, privileged, viewer);
}

/* "labels": how application labels are read at samples (the eBPF
 * program's counters), or why they are not. */
static void labels_status(struct daemon *d, struct fr_ipc_status_labels *o)
{
	struct fr_bpf_labels_counters c;
	const char *why = d->applabels ? fr_applabels_error(d->applabels) : "not started";

	if (why) {
		snprintf(o->error, sizeof(o->error), "%s", why);
		return;
	}
	fr_applabels_bpf_counts(d->applabels, &c);
	o->has_counts = 1;
	o->copies = c.samples;
	o->copies_dropped = c.drops;
	/* Off-CPU waits' labels with no room beside them: the waits were
	 * kept, without labels (not lost samples). */
	o->wait_copies_dropped = fr_sources_offcpu_labels_dropped(&d->sources);
	o->read_faults = c.faults;
	o->go_processes = __atomic_load_n(&d->ingest.go_procs, __ATOMIC_RELAXED);
	o->go_skipped = __atomic_load_n(&d->ingest.go_skipped, __ATOMIC_RELAXED);
}

/* "python": from the ingest thread's Python frames (counts under their
 * lock, or atomics). */
static void python_status(struct daemon *d, struct fr_ipc_status_python *o)
{
	struct fr_pystacks *ps = fr_applabels_pystacks(d->applabels);
	struct fr_pystacks_counts c;

	if (!ps)
		return;
	fr_pystacks_counts(ps, &c);
	o->processes = c.procs;
	o->refused = c.refused;
	o->samples = c.spliced;
	o->frames = c.frames;
	o->missed = c.missed;
	o->dropped = c.bpf.drops;
	o->lookups = c.bpf.lookups;
	o->read_faults = c.bpf.faults;
	snprintf(o->last_refused, sizeof(o->last_refused), "%s", c.last_problem);
}

/* "alloc": allocation samples (atomics, the last refusal under its
 * lock). */
static void alloc_status(struct daemon *d, struct fr_ipc_status_alloc *o)
{
	struct fr_allocs_stats st;

	fr_allocs_stats(d->allocs, &st);
	*o = (struct fr_ipc_status_alloc){
		.processes = st.procs,
		.refused = st.refused,
		.samples = st.samples,
		.frees_matched = st.frees_matched,
		.frees_unmatched = st.frees_unmatched,
		.live_blocks = st.live_blocks,
		.evicted = st.evicted,
		.lib_dropped = st.lib_dropped,
		.lib_frees_lost = st.lib_frees_lost,
		.skipped_bytes = st.skipped_bytes,
		.bad_records = st.bad_records,
		.mean = st.mean,
	};
	snprintf(o->last_refusal, sizeof(o->last_refusal), "%s", st.last_refusal);
}

/* The counters of the recorder's own, under the top of a status reply. */
static void counters_status(struct daemon *d, struct fr_ipc_status_reply *r)
{
	struct fr_symbols_stats syms;
	bool complete;

	r->query_memory = fr_budget_limit(&d->query_budget);
	r->query_memory_used = fr_budget_used(&d->query_budget);
	/* Parsed symbol images kept between profiles: a bound of their own,
	 * beside the query memory (core/symbols/symbols.h). */
	fr_symbols_get_stats(&syms);
	r->symbol_images = syms.images;
	r->symbol_images_bytes = syms.bytes;
	r->symbol_images_limit = syms.limit;
	r->samples = __atomic_load_n(&d->ingest.samples, __ATOMIC_RELAXED);
	/* What the ring holds lost, as dump --info counts it from the file;
	 * this run's count of the kernel's lost records apart. */
	r->samples_lost = fr_ring_losses_total(&d->writer.losses, &complete);
	r->samples_lost_complete = complete;
	r->samples_lost_since_start = __atomic_load_n(&d->ingest.lost, __ATOMIC_RELAXED);
	r->chunks_sealed = __atomic_load_n(&d->ingest.chunks_sealed, __ATOMIC_RELAXED);
	r->chunks_dropped = __atomic_load_n(&d->writer.chunks_dropped, __ATOMIC_RELAXED);
	r->write_errors = __atomic_load_n(&d->writer.write_errors, __ATOMIC_RELAXED);
	r->processes = __atomic_load_n(&d->ingest.nprocs, __ATOMIC_RELAXED);
	r->threads = __atomic_load_n(&d->ingest.nthreads, __ATOMIC_RELAXED);
	r->labelled_processes = __atomic_load_n(&d->ingest.labelled_procs, __ATOMIC_RELAXED);
	r->unreadable_label_processes =
		__atomic_load_n(&d->ingest.unreadable_procs, __ATOMIC_RELAXED);
}

/* `status`: what the recorder is doing, its counters and its ring; to
 * `viewer` (who is not told where the configuration file is unless
 * privileged). */
int daemon_handle_status(void *arg, struct fr_ipc_call *call, struct fr_ipc_status_reply *r)
{
	struct daemon *d = arg;
	const struct fr_ipc_peer *viewer = call->peer;
	int privileged = fr_peer_privileged(d->peers, viewer);
	int64_t now = fr_now_mono_ns();
	struct fr_ring_stats st;

	snprintf(r->version, sizeof(r->version), "%s", FR_VERSION);
	r->pid = getpid();
	r->started_ns = (int64_t)d->start_real;
	r->uptime_ns = (int64_t)(now - d->start_mono);
	if (privileged)
		snprintf(r->config, sizeof(r->config), "%s", d->opts->config_source);
	r->reloaded_ns = __atomic_load_n(&d->reloaded_ns, __ATOMIC_RELAXED);
	r->reloads_rejected = __atomic_load_n(&d->reloads_rejected, __ATOMIC_RELAXED);
	r->cpus = (uint64_t)d->ncpus;
	daemon_memory_status(d, &r->memory);
	counters_status(d, r);
	labels_status(d, &r->labels);
	r->has_python = fr_applabels_pystacks(d->applabels) != NULL;
	python_status(d, &r->python);
	r->has_alloc = d->allocs != NULL;
	alloc_status(d, &r->alloc);
	ingest_status(d, &r->ingest, now);
	r->has_symbol_cache = d->symcache != NULL;
	if (d->symcache)
		symcache_status(d, &r->symbol_cache, privileged, viewer->uid);
	r->has_unwind_tables = d->unwind_tables != NULL;
	if (d->unwind_tables)
		unwind_tables_status(d, &r->unwind_tables, privileged, viewer->uid);
	r->has_export = fr_export_status(&d->export, &r->export_);
	fr_ring_get_stats(d->ring, &st);
	fr_ipc_ring_from_stats(&r->ring, fr_ring_path(d->ring), &st);
	return fr_sources_status(&d->sources, &r->rec, privileged, viewer->uid);
}
