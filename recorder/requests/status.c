/* What status and sessions requests answer, and the sessions list the
 * daemon publishes at start and on each reload.
 *
 * A viewer who is not privileged gets the same numbers, but not which
 * processes of others follow (a consumer is "a client" unless it is the
 * viewer's own) nor where the configuration file is: the replies are
 * built for their viewer, never edited afterwards.
 */
#include "recorder/daemon_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/symbols/symbols.h"
#include "core/util/log.h"
#include "core/util/shares.h"
#include "fr_version.h"
#include "ipc/proto.h"
#include "recorder/export/export_ch.h"
#include "recorder/tracking/symcache.h"

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
static void add_triggers(cJSON *o, const struct fr_config_session *sess)
{
	cJSON *triggers = cJSON_AddArrayToObject(o, "triggers");

	for (uint32_t t = 0; triggers && t < sess->ntriggers; t++) {
		const struct fr_config_trigger *tr = &sess->triggers[t];
		cJSON *to = cJSON_CreateObject();

		if (!to)
			break;
		cJSON_AddItemToArray(triggers, to);
		cJSON_AddStringToObject(to, "on", fr_config_trigger_kind(tr->kind));
		if (tr->kind == FR_TRIGGER_SIGNAL) {
			char sig[32];

			cJSON_AddStringToObject(to, "signal",
						fr_config_signal_name(tr->signal, sig,
								      sizeof(sig)));
		}
		if (tr->kind == FR_TRIGGER_CPU_ABOVE) {
			fr_ipc_add_int(to, "percent", tr->percent);
			fr_ipc_add_int(to, "for_ns", tr->for_ns);
		}
		fr_ipc_add_int(to, "window_ns", tr->window_ns);
		fr_ipc_add_int(to, "after_ns", tr->after_ns);
		fr_ipc_add_int(to, "cooldown_ns", tr->cooldown_ns);
	}
}

void daemon_publish_sessions(struct daemon *d, const struct fr_config *cfg)
{
	cJSON *arr = cJSON_CreateArray();
	char *text, targets[512];

	for (uint32_t i = 0; arr && i < cfg->nsessions; i++) {
		const struct fr_config_session *sess = &cfg->sessions[i];
		cJSON *o = cJSON_CreateObject(), *events;

		if (!o)
			break;
		cJSON_AddItemToArray(arr, o);
		cJSON_AddStringToObject(o, "name", sess->name);
		events = cJSON_AddArrayToObject(o, "events");
		for (uint32_t e = 0; events && e < sess->nevents; e++) {
			cJSON *ev = cJSON_CreateObject();
			char name[FR_EVENT_NAME_MAX];
			uint32_t hz = sess->events[e].hz;

			if (!ev)
				break;
			cJSON_AddStringToObject(ev, "event",
						fr_event_format(sess->events[e].event, name,
								sizeof(name)));
			if (sess->events[e].event == FR_EVENT_CPU && d->opts->hz_fixed)
				hz = d->opts->hz;
			fr_ipc_add_int(ev, "hz", hz);
			if (sess->events[e].period)
				fr_ipc_add_int(ev, "period", (int64_t)sess->events[e].period);
			cJSON_AddItemToArray(events, ev);
		}
		cJSON_AddStringToObject(o, "targets",
					describe_targets(sess, targets, sizeof(targets)));
		add_triggers(o, sess);
	}
	text = arr ? cJSON_PrintUnformatted(arr) : NULL;
	cJSON_Delete(arr);
	if (!text)
		return; /* out of memory: keep answering with the previous list */
	pthread_mutex_lock(&d->sessions_lock);
	free(d->sessions_json);
	d->sessions_json = text;
	pthread_mutex_unlock(&d->sessions_lock);
}

/* Each session's last dump and suppressed count, from the trigger engine. */
static void add_dump_state(struct daemon *d, cJSON *list)
{
	const cJSON *sess;
	uint32_t i = 0;

	/* The list is the configuration in force, in order: the
	 * engine's session i is the list's i. */
	cJSON_ArrayForEach(sess, list) {
		int64_t last = d->triggers ? fr_triggers_last_dump(d->triggers, i) : 0;
		uint64_t sup = d->triggers ? fr_triggers_suppressed(d->triggers, i) : 0;

		if (last)
			fr_ipc_add_int((cJSON *)sess, "last_dump_ns", last);
		else
			cJSON_AddNullToObject((cJSON *)sess, "last_dump_ns");
		fr_ipc_add_int((cJSON *)sess, "suppressed", (int64_t)sup);
		i++;
	}
}

/* `sessions`: the configured sessions, what they record and what their
 * triggers did; to `viewer`. */
cJSON *daemon_handle_sessions(struct daemon *d, const struct fr_ipc_peer *viewer)
{
	int privileged = daemon_peer_privileged(d, viewer);
	cJSON *r = fr_ipc_ok(), *list = NULL;

	if (!r)
		return NULL;
	pthread_mutex_lock(&d->sessions_lock);
	if (d->sessions_json)
		list = cJSON_Parse(d->sessions_json);
	pthread_mutex_unlock(&d->sessions_lock);
	if (!list) {
		cJSON_Delete(r);
		return fr_ipc_error("sessions: out of memory");
	}
	add_dump_state(d, list);
	cJSON_AddItemToObject(r, "sessions", list);
	/* Where the configuration file is, only to those who may read it. */
	if (privileged)
		cJSON_AddStringToObject(r, "config", d->opts->config_source);
	fr_ipc_add_int(r, "cpu_hz", fr_sources_hz(&d->sources, FR_EVENT_CPU));
	if (!fr_sources_add_json(&d->sources, r, privileged, viewer->uid)) {
		cJSON_Delete(r);
		return NULL;
	}
	cJSON_AddBoolToObject(r, "hz_from_command_line", d->opts->hz_fixed);
	return r;
}

/* "writer_error", "writer_error_since_ns": while the ring's disk refuses
 * appends (a file system gone read-only, I/O errors), why and since when;
 * absent otherwise. */
static void add_writer_error(struct daemon *d, cJSON *o)
{
	int64_t since;
	int err = fr_writer_error(&d->writer, &since);

	if (!err)
		return;
	cJSON_AddStringToObject(o, "writer_error", strerror(err));
	fr_ipc_add_int(o, "writer_error_since_ns", since);
}

/* "ingest": whether the ingest thread keeps up, and the build id reader
 * beside it. `stalled` is true while the last drain is older than a
 * stall; a reader busy for seconds is reading a file that does not
 * answer (recording goes on without that build id). The writer's last
 * append and whether it is stuck (its disk not answering) go here too:
 * either way samples stop reaching the ring. */
static int add_ingest(struct daemon *d, cJSON *r, int64_t now)
{
	cJSON *o = cJSON_AddObjectToObject(r, "ingest");
	int64_t last = __atomic_load_n(&d->last_drain_mono, __ATOMIC_RELAXED), busy = 0, longest;
	int stalled = last && now - last > STALL_NS;
	uint32_t pending = 0;
	size_t queued = 0;

	if (!o)
		return 0;
	fr_ipc_add_int(o, "last_drain_ns", __atomic_load_n(&d->last_drain_real, __ATOMIC_RELAXED));
	fr_ipc_add_int(o, "last_seal_ns", __atomic_load_n(&d->last_seal_real, __ATOMIC_RELAXED));
	fr_ipc_add_int(o, "last_append_ns",
		       __atomic_load_n(&d->writer.last_append_real, __ATOMIC_RELAXED));
	cJSON_AddBoolToObject(o, "stalled", stalled);
	fr_ipc_add_int(o, "stalls", (int64_t)__atomic_load_n(&d->stalls, __ATOMIC_RELAXED));
	/* A stall still going on is the longest when it is. */
	longest = __atomic_load_n(&d->longest_stall_ns, __ATOMIC_RELAXED);
	fr_ipc_add_int(o, "longest_stall_ns",
		       stalled && now - last > longest ? now - last : longest);
	cJSON_AddBoolToObject(o, "writer_stalled",
			      fr_writer_stalled(&d->writer, STALL_NS, &queued));
	fr_ipc_add_int(o, "writer_queued_bytes", (int64_t)queued);
	add_writer_error(d, o);
	fr_ipc_add_int(o, "nice", __atomic_load_n(&d->ingest_nice, __ATOMIC_RELAXED));
	fr_ipc_add_int(o, "writer_nice", __atomic_load_n(&d->writer_nice, __ATOMIC_RELAXED));
	cJSON_AddBoolToObject(o, "realtime",
			      __atomic_load_n(&d->ingest_realtime, __ATOMIC_RELAXED));
	fr_ipc_add_int(o, "realtime_drops",
		       (int64_t)__atomic_load_n(&d->realtime_drops, __ATOMIC_RELAXED));
	fr_ipc_add_int(o, "flush_timeouts",
		       (int64_t)__atomic_load_n(&d->flush_timeouts, __ATOMIC_RELAXED));
	fr_tracker_file_state(d->tracker, &pending, &busy);
	fr_ipc_add_int(o, "build_id_reads_pending", pending);
	fr_ipc_add_int(o, "build_id_read_busy_ns", busy ? now - busy : 0);
	return 1;
}

/* Owners listed in status at most; the rest are summed. */
#define STATUS_OWNERS 16

/* "owners": what each owner holds of a cache's budget (core/util/shares.h),
 * root first, then by bytes: [{"uid", "bytes", "entries"}...]. A viewer
 * who is not privileged sees root's and their own; what others hold, and
 * owners past STATUS_OWNERS, are summed in "other_owners" ({"owners",
 * "bytes", "entries"}). Returns 1, or 0 when out of memory. */
static int add_owners(cJSON *o, const struct fr_share *v, size_t n, const struct fr_share *rest,
		      int privileged, uint32_t viewer)
{
	cJSON *list = cJSON_AddArrayToObject(o, "owners"), *e, *others;
	uint64_t other_bytes = rest->bytes, other_entries = rest->entries, nother = rest->uid;

	if (!list)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!privileged && v[i].uid != 0 && v[i].uid != viewer) {
			other_bytes += v[i].bytes;
			other_entries += v[i].entries;
			nother++;
			continue;
		}
		e = cJSON_CreateObject();
		if (!e || !cJSON_AddItemToArray(list, e)) {
			cJSON_Delete(e);
			return 0;
		}
		fr_ipc_add_int(e, "uid", v[i].uid);
		fr_ipc_add_int(e, "bytes", (int64_t)v[i].bytes);
		fr_ipc_add_int(e, "entries", v[i].entries);
	}
	if (!nother)
		return 1;
	others = cJSON_AddObjectToObject(o, "other_owners");
	if (!others)
		return 0;
	fr_ipc_add_int(others, "owners", (int64_t)nother);
	fr_ipc_add_int(others, "bytes", (int64_t)other_bytes);
	fr_ipc_add_int(others, "entries", (int64_t)other_entries);
	return 1;
}

/* "symbol_cache": what the symbol cache holds (recorder/tracking/symcache.h), its
 * budget and its owners; its directory only to a privileged viewer. */
static int add_symcache(struct daemon *d, cJSON *r, int privileged, uint32_t viewer)
{
	cJSON *o = cJSON_AddObjectToObject(r, "symbol_cache");
	struct fr_share own[STATUS_OWNERS], rest;
	uint64_t files = 0, bytes = 0, budget = 0;
	size_t n;

	if (!o || (privileged && !cJSON_AddStringToObject(o, "dir", d->symcache_dir)))
		return 0;
	fr_symcache_usage(d->symcache, &files, &bytes);
	fr_ipc_add_int(o, "files", (int64_t)files);
	fr_ipc_add_int(o, "bytes", (int64_t)bytes);
	n = fr_symcache_owners(d->symcache, own, STATUS_OWNERS, &rest, &budget);
	fr_ipc_add_int(o, "budget", (int64_t)budget);
	return add_owners(o, own, n, &rest, privileged, viewer);
}

/* The unwind tables' budget and what each owner's tables take. */
static int add_unwind_owners(struct daemon *d, cJSON *o, int privileged, uint32_t viewer)
{
	struct fr_share own[STATUS_OWNERS], rest;
	uint64_t budget = 0;
	size_t n = fr_unwind_tables_owners(d->unwind_tables, own, STATUS_OWNERS, &rest, &budget);

	fr_ipc_add_int(o, "budget", (int64_t)budget);
	return add_owners(o, own, n, &rest, privileged, viewer);
}

/* "unwind_tables": the CFI tables stacks are unwound with
 * (recorder/tracking/unwind_tables.h). */
static int add_unwind_tables(struct daemon *d, cJSON *r, int privileged, uint32_t viewer)
{
	struct fr_unwind_tables_stats st;
	cJSON *o;

	if (!d->unwind_tables)
		return 1;
	o = cJSON_AddObjectToObject(r, "unwind_tables");
	if (!o)
		return 0;
	fr_unwind_tables_stats(d->unwind_tables, &st);
	fr_ipc_add_int(o, "built", (int64_t)st.built);
	fr_ipc_add_int(o, "failed", (int64_t)st.failed);
	fr_ipc_add_int(o, "pending", (int64_t)st.pending);
	fr_ipc_add_int(o, "evicted", (int64_t)st.evicted);
	fr_ipc_add_int(o, "tables", (int64_t)st.tables);
	fr_ipc_add_int(o, "bytes", (int64_t)st.bytes);
	fr_ipc_add_int(o, "linked", (int64_t)st.linked);
	fr_ipc_add_int(o, "prefetched", (int64_t)st.prefetched);
	fr_ipc_add_int(o, "skipped", (int64_t)st.skipped);
	return add_unwind_owners(d, o, privileged, viewer);
}

/* `status`: what the recorder is doing, its counters and its ring; to
 * `viewer` (who is not told where the configuration file is unless
 * privileged). */
/* "labels": how application labels are read at samples (the eBPF
 * program's counters), or why they are not. */
static void add_labels(struct daemon *d, cJSON *r)
{
	struct fr_bpf_labels_counters c;
	const char *why = d->applabels ? fr_applabels_error(d->applabels) : "not started";
	cJSON *o = cJSON_AddObjectToObject(r, "labels");

	if (!o)
		return;
	if (why) {
		cJSON_AddStringToObject(o, "error", why);
		return;
	}
	fr_applabels_bpf_counts(d->applabels, &c);
	fr_ipc_add_int(o, "copies", (int64_t)c.samples);
	fr_ipc_add_int(o, "copies_dropped", (int64_t)c.drops);
	/* Off-CPU waits' labels with no room beside them: the waits were
	 * kept, without labels (not lost samples). */
	fr_ipc_add_int(o, "wait_copies_dropped",
		       (int64_t)fr_sources_offcpu_labels_dropped(&d->sources));
	fr_ipc_add_int(o, "read_faults", (int64_t)c.faults);
}

cJSON *daemon_handle_status(struct daemon *d, const struct fr_ipc_peer *viewer)
{
	int privileged = daemon_peer_privileged(d, viewer);
	cJSON *r = fr_ipc_ok();
	int64_t now = fr_now_mono_ns();
	struct fr_symbols_stats syms;

	if (!r)
		return NULL;
	cJSON_AddStringToObject(r, "version", FR_VERSION);
	fr_ipc_add_int(r, "pid", getpid());
	fr_ipc_add_int(r, "started_ns", (int64_t)d->start_real);
	fr_ipc_add_int(r, "uptime_ns", (int64_t)(now - d->start_mono));
	if (privileged)
		cJSON_AddStringToObject(r, "config", d->opts->config_source);
	fr_ipc_add_int(r, "reloaded_ns", __atomic_load_n(&d->reloaded_ns, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "reloads_rejected",
		       (int64_t)__atomic_load_n(&d->reloads_rejected, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "cpus", d->ncpus);
	if (!daemon_memory_status(d, r)) {
		cJSON_Delete(r);
		return NULL;
	}
	fr_ipc_add_int(r, "query_memory", (int64_t)fr_budget_limit(&d->query_budget));
	fr_ipc_add_int(r, "query_memory_used", (int64_t)fr_budget_used(&d->query_budget));
	/* Parsed symbol images kept between profiles: a bound of their own,
	 * beside the query memory (core/symbols/symbols.h). */
	fr_symbols_get_stats(&syms);
	fr_ipc_add_int(r, "symbol_images", (int64_t)syms.images);
	fr_ipc_add_int(r, "symbol_images_bytes", (int64_t)syms.bytes);
	fr_ipc_add_int(r, "symbol_images_limit", (int64_t)syms.limit);
	fr_ipc_add_int(r, "samples", (int64_t)__atomic_load_n(&d->samples, __ATOMIC_RELAXED));
	/* What the ring holds lost, as dump --info counts it from the file;
	 * this run's count of the kernel's lost records apart. */
	{
		bool complete;
		uint64_t lost = fr_ring_losses_total(&d->writer.losses, &complete);

		fr_ipc_add_int(r, "samples_lost", (int64_t)lost);
		cJSON_AddBoolToObject(r, "samples_lost_complete", complete);
	}
	fr_ipc_add_int(r, "samples_lost_since_start",
		       (int64_t)__atomic_load_n(&d->lost, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "chunks_sealed",
		       (int64_t)__atomic_load_n(&d->chunks_sealed, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "chunks_dropped",
		       (int64_t)__atomic_load_n(&d->writer.chunks_dropped, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "write_errors",
		       (int64_t)__atomic_load_n(&d->writer.write_errors, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "processes", __atomic_load_n(&d->nprocs, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "threads", __atomic_load_n(&d->nthreads, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "labelled_processes",
		       __atomic_load_n(&d->labelled_procs, __ATOMIC_RELAXED));
	fr_ipc_add_int(r, "unreadable_label_processes",
		       __atomic_load_n(&d->unreadable_procs, __ATOMIC_RELAXED));
	add_labels(d, r);
	if (!add_ingest(d, r, now) ||
	    (d->symcache && !add_symcache(d, r, privileged, viewer->uid)) ||
	    !add_unwind_tables(d, r, privileged, viewer->uid) || !daemon_export_status(d, r)) {
		cJSON_Delete(r);
		return NULL;
	}
	if (!fr_sources_add_json(&d->sources, r, privileged, viewer->uid)) {
		cJSON_Delete(r);
		return NULL;
	}
	{
		struct fr_ring_stats st;
		cJSON *ring;

		fr_ring_get_stats(d->ring, &st);
		ring = fr_ipc_ring_json(fr_ring_path(d->ring), &st);
		if (!ring) {
			cJSON_Delete(r);
			return NULL;
		}
		cJSON_AddItemToObject(r, "ring", ring);
	}
	return r;
}
