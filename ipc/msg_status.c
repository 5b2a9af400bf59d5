/* The status and sessions replies (ipc/msg_status.h), encoded and decoded
 * here only. Each object's members are described once, in wire order, in
 * a table both directions read (ipc/msg_int.h): a member cannot be
 * written under one name and read under another, nor move in the text
 * that scripts and tests parse. Objects and arrays nest by hand below.
 */
#include "ipc/msg_status.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/msg_int.h"
#include "ipc/proto.h"

/* Most elements a decoded array may hold: far past what a recorder
 * sends (FR_SOURCES_MAX sources, its clients and sessions), small
 * enough that a hostile reply cannot make the CLI allocate much. */
#define MAX_EVENTS 256
#define MAX_CONSUMERS 4096
#define MAX_SESSIONS 256

#define MD(T, k, f, type, when, flag)                                                    \
	{                                                                                \
		k, type, when, (unsigned short)sizeof(((T *)0)->f), offsetof(T, f), flag \
	}
#define I64(T, k, f) MD(T, k, f, FR_IPC_M_I64, FR_IPC_ALWAYS, 0)
#define U64(T, k, f) MD(T, k, f, FR_IPC_M_U64, FR_IPC_ALWAYS, 0)
#define BOOL(T, k, f) MD(T, k, f, FR_IPC_M_BOOL, FR_IPC_ALWAYS, 0)
#define STR(T, k, f) MD(T, k, f, FR_IPC_M_STR, FR_IPC_ALWAYS, 0)
#define U64_NZ(T, k, f) MD(T, k, f, FR_IPC_M_U64, FR_IPC_NONZERO, 0)
#define STR_NZ(T, k, f) MD(T, k, f, FR_IPC_M_STR, FR_IPC_NONZERO, 0)
#define I64_IF(T, k, f, h) MD(T, k, f, FR_IPC_M_I64, FR_IPC_IF, offsetof(T, h))
#define U64_IF(T, k, f, h) MD(T, k, f, FR_IPC_M_U64, FR_IPC_IF, offsetof(T, h))
#define STR_IF(T, k, f, h) MD(T, k, f, FR_IPC_M_STR, FR_IPC_IF, offsetof(T, h))
#define N(tab) (sizeof(tab) / sizeof(tab[0]))

/* ---- tables ------------------------------------------------------------- */

#define T struct fr_ipc_event_rate
static const struct fr_ipc_mdesc rate_m[] = {
	STR(T, "event", event),
	U64(T, "hz", hz),
	U64_NZ(T, "period", period),
};
#undef T

#define T struct fr_ipc_unwinding
static const struct fr_ipc_mdesc ends_m[] = {
	U64(T, "done", done),	  U64(T, "stack_copy", stack_copy),
	U64(T, "no_cfi", no_cfi), U64(T, "pending", pending),
	U64(T, "bad", bad),	  U64(T, "max_depth", max_depth),
};
static const struct fr_ipc_mdesc unwinding_m[] = {
	U64(T, "stacks", stacks),
	U64(T, "no_user_regs", no_user_regs),
	U64(T, "bad_records", bad_records),
};
#undef T

#define T struct fr_ipc_offcpu
static const struct fr_ipc_mdesc offcpu_m[] = {
	U64(T, "switch_outs", switch_outs),
	U64(T, "switch_ins", switch_ins),
	U64(T, "samples", samples),
	U64(T, "evicted", evicted),
	U64(T, "waiting", waiting),
	U64(T, "capacity", capacity),
	STR(T, "mechanism", mechanism),
	STR_NZ(T, "fallback", fallback),
	U64_IF(T, "min_wait_ns", min_wait_ns, has_bpf),
	STR_IF(T, "user_stacks_by", user_stacks_by, has_bpf),
	U64_IF(T, "long_waits", long_waits, has_bpf),
	U64_IF(T, "user_stacks", user_stacks, has_bpf),
	U64_IF(T, "no_user_stack", no_user_stack, has_bpf),
	U64_IF(T, "short_records", short_records, has_bpf),
	U64_IF(T, "ringbuf_drops", ringbuf_drops, has_bpf),
	U64_IF(T, "ringbuf_dropped_ns", ringbuf_dropped_ns, has_bpf),
	U64_IF(T, "labels_dropped", labels_dropped, has_bpf),
	U64_IF(T, "short_retries", short_retries, has_bpf),
	U64_IF(T, "open_listed", open_listed, has_bpf),
	U64_IF(T, "open_runnable", open_runnable, has_bpf),
	U64_IF(T, "stack_walks", stack_walks, has_bpf),
	U64_IF(T, "stack_walks_dropped", stack_walks_dropped, has_bpf),
	U64_IF(T, "stack_copies", stack_copies, has_copies),
	U64_IF(T, "stack_copies_short", stack_copies_short, has_copies),
	U64_IF(T, "stack_walk_copies_short", stack_walk_copies_short, has_copies),
	U64_IF(T, "wakes", wakes, has_wake),
	U64_IF(T, "wakes_dropped", wakes_dropped, has_wake),
	U64_IF(T, "wakes_irq", wakes_irq, has_wake),
	U64_IF(T, "wakes_joined", wakes_joined, has_wake),
	U64_IF(T, "wakes_unlabelled", wakes_unlabelled, has_wake),
	U64_IF(T, "runqueue_samples", runqueue_samples, has_wake),
	U64_IF(T, "runqueue_short", runqueue_short, has_wake),
};
#undef T

#define T struct fr_ipc_cgroups
static const struct fr_ipc_mdesc cgroups_m[] = {
	STR(T, "source", source),     U64(T, "watched", watched), U64(T, "reads", reads),
	U64(T, "failures", failures), U64(T, "skipped", skipped),
};
#undef T

#define T struct fr_ipc_pmu
static const struct fr_ipc_mdesc pmu_m[] = {
	U64_IF(T, "precise_ip_asked", precise_ip_asked, has_precise),
	U64_IF(T, "precise_ip", precise_ip, has_precise),
	U64(T, "enabled_ns", enabled_ns),
	U64(T, "running_ns", running_ns),
	BOOL(T, "multiplexed", multiplexed),
	U64(T, "scaled_samples", scaled_samples),
	U64_NZ(T, "time_reads_failed", time_reads_failed),
};
#undef T

#define T struct fr_ipc_event_status
static const struct fr_ipc_mdesc event_m[] = {
	STR(T, "event", event),
	STR(T, "unit", unit),
	STR(T, "state", state),
	STR_IF(T, "error", error, has_error),
	U64(T, "hz", hz),
	U64_NZ(T, "period", period),
	BOOL(T, "every_switch", every_switch),
	I64(T, "since_ns", since_ns),
	STR(T, "stacks", stacks),
	U64(T, "samples", samples),
	U64(T, "lost", lost),
	U64(T, "throttled", throttled),
	U64(T, "truncated_stacks", truncated_stacks),
	STR_IF(T, "unwind", unwind, has_unwind),
	U64_NZ(T, "stack_copy", stack_copy),
};
#undef T

#define T struct fr_ipc_consumer_status
static const struct fr_ipc_mdesc consumer_m[] = {
	STR(T, "name", name),
	U64_IF(T, "uid", uid, has_uid),
	I64(T, "since_ns", since_ns),
};
#undef T

#define T struct fr_ipc_status_memory
static const struct fr_ipc_mdesc memory_m[] = {
	U64(T, "limit", limit),
	U64(T, "used", used),
	U64(T, "queries", queries),
	U64(T, "timelines", timelines),
	U64(T, "unwind_tables", unwind_tables),
	U64(T, "symbols", symbols),
	U64(T, "labels", labels),
	U64(T, "query_room", query_room),
};
#undef T

#define T struct fr_ipc_status_labels
static const struct fr_ipc_mdesc labels_m[] = {
	STR_NZ(T, "error", error),
	U64_IF(T, "copies", copies, has_counts),
	U64_IF(T, "copies_dropped", copies_dropped, has_counts),
	U64_IF(T, "wait_copies_dropped", wait_copies_dropped, has_counts),
	U64_IF(T, "read_faults", read_faults, has_counts),
	U64_NZ(T, "go_processes", go_processes),
	U64_NZ(T, "go_skipped", go_skipped),
};
#undef T

#define T struct fr_ipc_status_python
static const struct fr_ipc_mdesc python_m[] = {
	U64(T, "processes", processes),
	U64(T, "refused", refused),
	U64(T, "samples", samples),
	U64(T, "frames", frames),
	U64(T, "missed", missed),
	U64(T, "dropped", dropped),
	U64(T, "lookups", lookups),
	U64(T, "read_faults", read_faults),
	STR_NZ(T, "last_refused", last_refused),
};
#undef T

#define T struct fr_ipc_status_alloc
static const struct fr_ipc_mdesc alloc_m[] = {
	U64(T, "processes", processes),
	U64(T, "refused", refused),
	U64(T, "samples", samples),
	U64(T, "frees_matched", frees_matched),
	U64(T, "frees_unmatched", frees_unmatched),
	U64(T, "live_blocks", live_blocks),
	U64(T, "evicted", evicted),
	U64(T, "lib_dropped", lib_dropped),
	U64(T, "lib_frees_lost", lib_frees_lost),
	U64(T, "skipped_bytes", skipped_bytes),
	U64(T, "bad_records", bad_records),
	U64(T, "mean", mean),
	STR_NZ(T, "last_refusal", last_refusal),
};
#undef T

#define T struct fr_ipc_status_ingest
static const struct fr_ipc_mdesc ingest_m[] = {
	I64(T, "last_drain_ns", last_drain_ns),
	I64(T, "last_seal_ns", last_seal_ns),
	I64(T, "last_append_ns", last_append_ns),
	BOOL(T, "stalled", stalled),
	U64(T, "stalls", stalls),
	I64(T, "longest_stall_ns", longest_stall_ns),
	BOOL(T, "writer_stalled", writer_stalled),
	U64(T, "writer_queued_bytes", writer_queued_bytes),
	STR_IF(T, "writer_error", writer_error, has_writer_error),
	I64_IF(T, "writer_error_since_ns", writer_error_since_ns, has_writer_error),
	I64(T, "nice", nice),
	I64(T, "writer_nice", writer_nice),
	BOOL(T, "realtime", realtime),
	U64(T, "realtime_drops", realtime_drops),
	U64(T, "flush_timeouts", flush_timeouts),
	U64(T, "build_id_reads_pending", build_id_reads_pending),
	I64(T, "build_id_read_busy_ns", build_id_read_busy_ns),
};
#undef T

#define T struct fr_ipc_owner
static const struct fr_ipc_mdesc owner_m[] = {
	U64(T, "uid", uid),
	U64(T, "bytes", bytes),
	U64(T, "entries", entries),
};
#undef T

#define T struct fr_ipc_owners
static const struct fr_ipc_mdesc others_m[] = {
	U64(T, "owners", other_owners),
	U64(T, "bytes", other_bytes),
	U64(T, "entries", other_entries),
};
#undef T

#define T struct fr_ipc_status_symcache
static const struct fr_ipc_mdesc symcache_m[] = {
	STR_NZ(T, "dir", dir),
	U64(T, "files", files),
	U64(T, "bytes", bytes),
	U64(T, "budget", budget),
};
#undef T

#define T struct fr_ipc_status_unwind_tables
static const struct fr_ipc_mdesc unwind_tables_m[] = {
	U64(T, "built", built),	    U64(T, "failed", failed),	      U64(T, "pending", pending),
	U64(T, "evicted", evicted), U64(T, "tables", tables),	      U64(T, "bytes", bytes),
	U64(T, "linked", linked),   U64(T, "prefetched", prefetched), U64(T, "skipped", skipped),
	U64(T, "budget", budget),
};
#undef T

#define T struct fr_ipc_status_export
static const struct fr_ipc_mdesc export_m[] = {
	STR(T, "url", url),
	STR(T, "database", database),
	STR(T, "host", host),
	STR(T, "state", state),
	I64(T, "batch_ns", batch_ns),
	U64(T, "hz", hz),
	I64(T, "cursor_ns", cursor_ns),
	I64(T, "lag_ns", lag_ns),
	U64(T, "batches", batches),
	U64(T, "rows", rows),
	U64(T, "samples", samples),
	U64(T, "stacks", stacks),
	U64(T, "duplicates_skipped", duplicates_skipped),
	U64(T, "retries", retries),
	U64(T, "rows_dropped", rows_dropped),
	I64(T, "query_memory_reserved", query_memory_reserved),
	U64(T, "memory_waits", memory_waits),
	I64(T, "lost_ns", lost_ns),
	U64(T, "lost_batches", lost_batches),
	I64(T, "last_ok_ns", last_ok_ns),
	I64(T, "last_error_ns", last_error_ns),
	STR(T, "last_error", last_error),
};
#undef T

#define T struct fr_ipc_ring
static const struct fr_ipc_mdesc ring_m[] = {
	STR(T, "path", path),
	U64(T, "size", size),
	U64(T, "segment_size", segment_size),
	U64(T, "segments", segments),
	U64(T, "segments_used", segments_used),
	U64(T, "bytes_used", bytes_used),
	U64(T, "chunks", chunks),
	U64(T, "samples", samples),
	I64(T, "oldest_ns", oldest_ns),
	I64(T, "newest_ns", newest_ns),
	U64(T, "corrupt_chunks", corrupt_chunks),
	U64(T, "raw_bytes", raw_bytes),
	U64(T, "format_version", format_version),
	U64(T, "journal_size", journal_size),
	U64(T, "journal_chunks", journal_chunks),
	U64(T, "journal_bytes", journal_bytes),
	U64(T, "journal_samples", journal_samples),
	STR(T, "superblock", superblock),
	BOOL(T, "superblock_copy", superblock_copy),
};
#undef T

#define T struct fr_ipc_status_reply
static const struct fr_ipc_mdesc status_head_m[] = {
	STR(T, "version", version),
	I64(T, "pid", pid),
	I64(T, "started_ns", started_ns),
	I64(T, "uptime_ns", uptime_ns),
	STR_NZ(T, "config", config),
	I64(T, "reloaded_ns", reloaded_ns),
	U64(T, "reloads_rejected", reloads_rejected),
	U64(T, "cpus", cpus),
};
static const struct fr_ipc_mdesc status_counts_m[] = {
	U64(T, "query_memory", query_memory),
	U64(T, "query_memory_used", query_memory_used),
	U64(T, "symbol_images", symbol_images),
	U64(T, "symbol_images_bytes", symbol_images_bytes),
	U64(T, "symbol_images_limit", symbol_images_limit),
	U64(T, "samples", samples),
	U64(T, "samples_lost", samples_lost),
	BOOL(T, "samples_lost_complete", samples_lost_complete),
	U64(T, "samples_lost_since_start", samples_lost_since_start),
	U64(T, "chunks_sealed", chunks_sealed),
	U64(T, "chunks_dropped", chunks_dropped),
	U64(T, "write_errors", write_errors),
	U64(T, "processes", processes),
	U64(T, "threads", threads),
	U64(T, "labelled_processes", labelled_processes),
	U64(T, "unreadable_label_processes", unreadable_label_processes),
};
#undef T

#define T struct fr_ipc_session_trigger
static const struct fr_ipc_mdesc trigger_m[] = {
	STR(T, "on", on),
	STR_NZ(T, "signal", signal),
	U64_IF(T, "percent", percent, has_cpu),
	STR_NZ(T, "resource", resource),
	STR_NZ(T, "above", above),
	I64_IF(T, "for_ns", for_ns, has_for),
	I64(T, "window_ns", window_ns),
	I64(T, "after_ns", after_ns),
	I64(T, "cooldown_ns", cooldown_ns),
};
#undef T

#define T struct fr_ipc_session
static const struct fr_ipc_mdesc session_head_m[] = {STR(T, "name", name)};
static const struct fr_ipc_mdesc session_targets_m[] = {STR(T, "targets", targets)};
static const struct fr_ipc_mdesc session_tail_m[] = {
	MD(T, "last_dump_ns", last_dump_ns, FR_IPC_M_I64_OR_NULL, FR_IPC_ALWAYS, 0),
	U64(T, "suppressed", suppressed),
};
#undef T

#define T struct fr_ipc_sessions_reply
static const struct fr_ipc_mdesc sessions_mid_m[] = {
	STR_NZ(T, "config", config),
	U64(T, "cpu_hz", cpu_hz),
};
static const struct fr_ipc_mdesc sessions_tail_m[] = {
	BOOL(T, "hz_from_command_line", hz_from_command_line),
};
#undef T

/* ---- encoding ----------------------------------------------------------- */

/* A new object `key` in `obj` holding the members `m` of `s`, or NULL. */
static cJSON *add_object(cJSON *obj, const char *key, const struct fr_ipc_mdesc *m, size_t n,
			 const void *s)
{
	cJSON *o = cJSON_AddObjectToObject(obj, key);

	return o && fr_ipc_members_add(o, m, n, s) == 0 ? o : NULL;
}

/* Appends an object holding the members `m` of `s` to `arr`, or NULL. */
static cJSON *append_object(cJSON *arr, const struct fr_ipc_mdesc *m, size_t n, const void *s)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return fr_ipc_members_add(o, m, n, s) == 0 ? o : NULL;
}

static int add_rates(cJSON *obj, const struct fr_ipc_event_rate *v, uint32_t n)
{
	cJSON *arr = cJSON_AddArrayToObject(obj, "events");

	if (!arr)
		return -ENOMEM;
	for (uint32_t i = 0; i < n && i < FR_LIMIT_EVENTS; i++)
		if (!append_object(arr, rate_m, N(rate_m), &v[i]))
			return -ENOMEM;
	return 0;
}

static int add_event(cJSON *arr, const struct fr_ipc_event_status *ev)
{
	cJSON *o = append_object(arr, event_m, N(event_m), ev), *u;

	if (!o)
		return -ENOMEM;
	if (ev->has_unwind && ev->stack_copy) {
		u = cJSON_AddObjectToObject(o, "unwinding");
		if (!u || !add_object(u, "ends", ends_m, N(ends_m), &ev->unwinding) ||
		    fr_ipc_members_add(u, unwinding_m, N(unwinding_m), &ev->unwinding) < 0)
			return -ENOMEM;
	}
	if (ev->has_offcpu && !add_object(o, "offcpu", offcpu_m, N(offcpu_m), &ev->offcpu))
		return -ENOMEM;
	if (!ev->has_offcpu && ev->has_pmu && !add_object(o, "pmu", pmu_m, N(pmu_m), &ev->pmu))
		return -ENOMEM;
	if (ev->has_cgroups && !add_object(o, "cgroups", cgroups_m, N(cgroups_m), &ev->cgroups))
		return -ENOMEM;
	return 0;
}

static int add_recording(cJSON *obj, const struct fr_ipc_recording *rec)
{
	cJSON *events = cJSON_AddArrayToObject(obj, "events");
	cJSON *consumers = cJSON_AddArrayToObject(obj, "consumers"), *o;

	if (!events || !consumers)
		return -ENOMEM;
	for (uint32_t i = 0; i < rec->nevents; i++)
		if (add_event(events, &rec->events[i]) < 0)
			return -ENOMEM;
	for (uint32_t i = 0; i < rec->nconsumers; i++) {
		const struct fr_ipc_consumer_status *c = &rec->consumers[i];

		o = append_object(consumers, consumer_m, N(consumer_m), c);
		if (!o || add_rates(o, c->events, c->nevents) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int add_owners(cJSON *obj, const struct fr_ipc_owners *ow)
{
	cJSON *list = cJSON_AddArrayToObject(obj, "owners");

	if (!list)
		return -ENOMEM;
	for (uint32_t i = 0; i < ow->n && i < FR_IPC_STATUS_OWNERS; i++)
		if (!append_object(list, owner_m, N(owner_m), &ow->v[i]))
			return -ENOMEM;
	if (ow->has_others && !add_object(obj, "other_owners", others_m, N(others_m), ow))
		return -ENOMEM;
	return 0;
}

/* "labels" to "export": the parts of status other modules fill. */
static int add_status_parts(cJSON *obj, const struct fr_ipc_status_reply *r)
{
	cJSON *o;

	if (!add_object(obj, "labels", labels_m, N(labels_m), &r->labels) ||
	    (r->has_python && !add_object(obj, "python", python_m, N(python_m), &r->python)) ||
	    (r->has_alloc && !add_object(obj, "alloc", alloc_m, N(alloc_m), &r->alloc)) ||
	    !add_object(obj, "ingest", ingest_m, N(ingest_m), &r->ingest))
		return -ENOMEM;
	if (r->has_symbol_cache) {
		o = add_object(obj, "symbol_cache", symcache_m, N(symcache_m), &r->symbol_cache);
		if (!o || add_owners(o, &r->symbol_cache.owners) < 0)
			return -ENOMEM;
	}
	if (r->has_unwind_tables) {
		o = add_object(obj, "unwind_tables", unwind_tables_m, N(unwind_tables_m),
			       &r->unwind_tables);
		if (!o || add_owners(o, &r->unwind_tables.owners) < 0)
			return -ENOMEM;
	}
	if (r->has_export && !add_object(obj, "export", export_m, N(export_m), &r->export_))
		return -ENOMEM;
	return 0;
}

cJSON *fr_ipc_status_reply_encode(const struct fr_ipc_status_reply *r)
{
	cJSON *obj = fr_ipc_ok();

	if (!obj)
		return NULL;
	if (fr_ipc_members_add(obj, status_head_m, N(status_head_m), r) < 0 ||
	    !add_object(obj, "memory", memory_m, N(memory_m), &r->memory) ||
	    fr_ipc_members_add(obj, status_counts_m, N(status_counts_m), r) < 0 ||
	    add_status_parts(obj, r) < 0 || add_recording(obj, &r->rec) < 0 ||
	    !add_object(obj, "ring", ring_m, N(ring_m), &r->ring)) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

static int add_session(cJSON *arr, const struct fr_ipc_session *s)
{
	cJSON *o = append_object(arr, session_head_m, N(session_head_m), s), *triggers;

	if (!o || add_rates(o, s->events, s->nevents) < 0 ||
	    fr_ipc_members_add(o, session_targets_m, N(session_targets_m), s) < 0)
		return -ENOMEM;
	triggers = cJSON_AddArrayToObject(o, "triggers");
	if (!triggers)
		return -ENOMEM;
	for (uint32_t t = 0; t < s->ntriggers && t < FR_IPC_SESSION_TRIGGERS; t++)
		if (!append_object(triggers, trigger_m, N(trigger_m), &s->triggers[t]))
			return -ENOMEM;
	return fr_ipc_members_add(o, session_tail_m, N(session_tail_m), s);
}

cJSON *fr_ipc_sessions_reply_encode(const struct fr_ipc_sessions_reply *r)
{
	cJSON *obj = fr_ipc_ok(), *list;

	if (!obj)
		return NULL;
	list = cJSON_AddArrayToObject(obj, "sessions");
	if (!list)
		goto fail;
	for (uint32_t i = 0; i < r->nsessions; i++)
		if (add_session(list, &r->sessions[i]) < 0)
			goto fail;
	if (fr_ipc_members_add(obj, sessions_mid_m, N(sessions_mid_m), r) < 0 ||
	    add_recording(obj, &r->rec) < 0 ||
	    fr_ipc_members_add(obj, sessions_tail_m, N(sessions_tail_m), r) < 0)
		goto fail;
	return obj;
fail:
	cJSON_Delete(obj);
	return NULL;
}

void fr_ipc_ring_from_stats(struct fr_ipc_ring *out, const char *path,
			    const struct fr_ring_stats *st)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->path, sizeof(out->path), "%s", path);
	out->size = st->file_size;
	out->segment_size = st->segment_size;
	out->segments = st->nsegments;
	out->segments_used = st->segments_used;
	out->bytes_used = st->bytes_used;
	out->chunks = st->chunks;
	out->samples = st->samples;
	out->oldest_ns = st->oldest_ns;
	out->newest_ns = st->newest_ns;
	out->corrupt_chunks = st->corrupt_chunks;
	out->raw_bytes = st->raw_bytes;
	out->format_version = st->format_version;
	out->journal_size = st->journal_size;
	out->journal_chunks = st->journal_chunks;
	out->journal_bytes = st->journal_bytes;
	out->journal_samples = st->journal_samples;
	snprintf(out->superblock, sizeof(out->superblock), "%s",
		 st->superblock == FR_RING_SB_FROM_COPY	 ? "copy"
		 : st->superblock == FR_RING_SB_REPAIRED ? "repaired"
							 : "primary");
	out->superblock_copy = st->superblock_copy;
}

cJSON *fr_ipc_ring_json(const char *path, const struct fr_ring_stats *st)
{
	struct fr_ipc_ring *ring = malloc(sizeof(*ring));
	cJSON *obj = ring ? cJSON_CreateObject() : NULL;

	if (obj) {
		fr_ipc_ring_from_stats(ring, path, st);
		if (fr_ipc_members_add(obj, ring_m, N(ring_m), ring) < 0) {
			cJSON_Delete(obj);
			obj = NULL;
		}
	}
	free(ring);
	return obj;
}

/* ---- decoding ----------------------------------------------------------- */

/* The object member `key` of `obj`: 1 and *out when present, 0 when
 * absent, or -EINVAL when it is not an object. */
static int get_object(const cJSON *obj, const char *what, const char *key, const cJSON **out,
		      char *err, size_t errlen)
{
	*out = fr_ipc_member(obj, key);
	if (!*out)
		return 0;
	if (!cJSON_IsObject(*out))
		return fr_ipc_fail(err, errlen, "%s: \"%s\" must be an object", what, key);
	return 1;
}

/* The array member `key` of `obj` of at most `max` objects: its size
 * (0 when absent), or -EINVAL. */
static int get_array(const cJSON *obj, const char *what, const char *key, int max,
		     const cJSON **out, char *err, size_t errlen)
{
	const cJSON *it;
	int n = 0;

	*out = fr_ipc_member(obj, key);
	if (!*out)
		return 0;
	if (!cJSON_IsArray(*out))
		return fr_ipc_fail(err, errlen, "%s: \"%s\" must be an array of objects", what,
				   key);
	cJSON_ArrayForEach(it, *out) {
		if (!cJSON_IsObject(it))
			return fr_ipc_fail(err, errlen, "%s: \"%s\" must be an array of objects",
					   what, key);
		if (++n > max)
			return fr_ipc_fail(err, errlen, "%s: \"%s\" holds more than %d entries",
					   what, key, max);
	}
	return n;
}

/* The members `m` of the object `key` of `obj` into `s`: 1 when present,
 * 0 when absent, or -EINVAL. */
static int get_members(const cJSON *obj, const char *what, const char *key,
		       const struct fr_ipc_mdesc *m, size_t n, void *s, char *err, size_t errlen)
{
	const cJSON *o;
	int ret = get_object(obj, what, key, &o, err, errlen);

	if (ret <= 0)
		return ret;
	return fr_ipc_members_get(o, what, m, n, s, err, errlen) < 0 ? -EINVAL : 1;
}

static int get_rates(const cJSON *obj, const char *what, struct fr_ipc_event_rate *v, uint32_t *n,
		     char *err, size_t errlen)
{
	const cJSON *arr, *it;

	*n = 0;
	if (get_array(obj, what, "events", FR_LIMIT_EVENTS, &arr, err, errlen) < 0)
		return -EINVAL;
	cJSON_ArrayForEach(it, arr)
		if (fr_ipc_members_get(it, what, rate_m, N(rate_m), &v[(*n)++], err, errlen) < 0)
			return -EINVAL;
	return 0;
}

static int get_event(const cJSON *o, struct fr_ipc_event_status *ev, char *err, size_t errlen)
{
	const char *what = "status: events";
	const cJSON *u;
	int ret;

	if (fr_ipc_members_get(o, what, event_m, N(event_m), ev, err, errlen) < 0)
		return -EINVAL;
	ret = get_object(o, what, "unwinding", &u, err, errlen);
	if (ret < 0 || (ret && (get_members(u, what, "ends", ends_m, N(ends_m), &ev->unwinding, err,
					    errlen) < 0 ||
				fr_ipc_members_get(u, what, unwinding_m, N(unwinding_m),
						   &ev->unwinding, err, errlen) < 0)))
		return -EINVAL;
	ret = get_members(o, what, "offcpu", offcpu_m, N(offcpu_m), &ev->offcpu, err, errlen);
	if (ret < 0)
		return -EINVAL;
	ev->has_offcpu = ret;
	ret = get_members(o, what, "pmu", pmu_m, N(pmu_m), &ev->pmu, err, errlen);
	if (ret < 0)
		return -EINVAL;
	ev->has_pmu = ret;
	ret = get_members(o, what, "cgroups", cgroups_m, N(cgroups_m), &ev->cgroups, err, errlen);
	if (ret < 0)
		return -EINVAL;
	ev->has_cgroups = ret;
	return 0;
}

static int get_recording(const cJSON *obj, const char *what, struct fr_ipc_recording *rec,
			 char *err, size_t errlen)
{
	const cJSON *events, *consumers, *it;
	int ne = get_array(obj, what, "events", MAX_EVENTS, &events, err, errlen);
	int nc = get_array(obj, what, "consumers", MAX_CONSUMERS, &consumers, err, errlen);

	if (ne < 0 || nc < 0)
		return -EINVAL;
	rec->events = ne ? calloc((size_t)ne, sizeof(*rec->events)) : NULL;
	rec->consumers = nc ? calloc((size_t)nc, sizeof(*rec->consumers)) : NULL;
	if ((ne && !rec->events) || (nc && !rec->consumers))
		return fr_ipc_fail(err, errlen, "%s: out of memory", what);
	cJSON_ArrayForEach(it, events)
		if (get_event(it, &rec->events[rec->nevents++], err, errlen) < 0)
			return -EINVAL;
	cJSON_ArrayForEach(it, consumers) {
		struct fr_ipc_consumer_status *c = &rec->consumers[rec->nconsumers++];

		if (fr_ipc_members_get(it, "status: consumers", consumer_m, N(consumer_m), c, err,
				       errlen) < 0 ||
		    get_rates(it, "status: consumers", c->events, &c->nevents, err, errlen) < 0)
			return -EINVAL;
	}
	return 0;
}

static int get_owners(const cJSON *obj, const char *what, struct fr_ipc_owners *ow, char *err,
		      size_t errlen)
{
	const cJSON *list, *it;
	int ret;

	if (get_array(obj, what, "owners", FR_IPC_STATUS_OWNERS, &list, err, errlen) < 0)
		return -EINVAL;
	cJSON_ArrayForEach(it, list)
		if (fr_ipc_members_get(it, what, owner_m, N(owner_m), &ow->v[ow->n++], err,
				       errlen) < 0)
			return -EINVAL;
	ret = get_members(obj, what, "other_owners", others_m, N(others_m), ow, err, errlen);
	ow->has_others = ret > 0;
	return ret < 0 ? -EINVAL : 0;
}

/* "labels" to "export" (add_status_parts()). */
static int get_status_parts(const cJSON *obj, struct fr_ipc_status_reply *r, char *err,
			    size_t errlen)
{
	const char *what = "status";
	const cJSON *o;
	int ret;

	if (get_members(obj, what, "labels", labels_m, N(labels_m), &r->labels, err, errlen) < 0 ||
	    get_members(obj, what, "ingest", ingest_m, N(ingest_m), &r->ingest, err, errlen) < 0)
		return -EINVAL;
	ret = get_members(obj, what, "python", python_m, N(python_m), &r->python, err, errlen);
	if (ret < 0)
		return -EINVAL;
	r->has_python = ret > 0;
	ret = get_members(obj, what, "alloc", alloc_m, N(alloc_m), &r->alloc, err, errlen);
	if (ret < 0)
		return -EINVAL;
	r->has_alloc = ret > 0;
	ret = get_members(obj, what, "symbol_cache", symcache_m, N(symcache_m), &r->symbol_cache,
			  err, errlen);
	if (ret < 0 || (ret && (get_object(obj, what, "symbol_cache", &o, err, errlen) < 0 ||
				get_owners(o, "status: symbol_cache", &r->symbol_cache.owners, err,
					   errlen) < 0)))
		return -EINVAL;
	r->has_symbol_cache = ret;
	ret = get_members(obj, what, "unwind_tables", unwind_tables_m, N(unwind_tables_m),
			  &r->unwind_tables, err, errlen);
	if (ret < 0 || (ret && (get_object(obj, what, "unwind_tables", &o, err, errlen) < 0 ||
				get_owners(o, "status: unwind_tables", &r->unwind_tables.owners,
					   err, errlen) < 0)))
		return -EINVAL;
	r->has_unwind_tables = ret;
	ret = get_members(obj, what, "export", export_m, N(export_m), &r->export_, err, errlen);
	r->has_export = ret > 0;
	return ret < 0 ? -EINVAL : 0;
}

int fr_ipc_status_reply_decode(const cJSON *obj, struct fr_ipc_status_reply *out, char *err,
			       size_t errlen)
{
	const char *what = "status";

	memset(out, 0, sizeof(*out));
	if (fr_ipc_members_get(obj, what, status_head_m, N(status_head_m), out, err, errlen) < 0 ||
	    get_members(obj, what, "memory", memory_m, N(memory_m), &out->memory, err, errlen) <
		    0 ||
	    fr_ipc_members_get(obj, what, status_counts_m, N(status_counts_m), out, err, errlen) <
		    0 ||
	    get_status_parts(obj, out, err, errlen) < 0 ||
	    get_recording(obj, what, &out->rec, err, errlen) < 0 ||
	    get_members(obj, what, "ring", ring_m, N(ring_m), &out->ring, err, errlen) < 0) {
		fr_ipc_status_reply_fini(out);
		return -EINVAL;
	}
	return 0;
}

static int get_session(const cJSON *o, struct fr_ipc_session *s, char *err, size_t errlen)
{
	const char *what = "sessions";
	const cJSON *triggers, *it;

	if (fr_ipc_members_get(o, what, session_head_m, N(session_head_m), s, err, errlen) < 0 ||
	    get_rates(o, what, s->events, &s->nevents, err, errlen) < 0 ||
	    fr_ipc_members_get(o, what, session_targets_m, N(session_targets_m), s, err, errlen) <
		    0 ||
	    get_array(o, what, "triggers", FR_IPC_SESSION_TRIGGERS, &triggers, err, errlen) < 0)
		return -EINVAL;
	cJSON_ArrayForEach(it, triggers)
		if (fr_ipc_members_get(it, what, trigger_m, N(trigger_m),
				       &s->triggers[s->ntriggers++], err, errlen) < 0)
			return -EINVAL;
	return fr_ipc_members_get(o, what, session_tail_m, N(session_tail_m), s, err, errlen);
}

int fr_ipc_sessions_reply_decode(const cJSON *obj, struct fr_ipc_sessions_reply *out, char *err,
				 size_t errlen)
{
	const char *what = "sessions";
	const cJSON *list, *it;
	int n;

	memset(out, 0, sizeof(*out));
	n = get_array(obj, what, "sessions", MAX_SESSIONS, &list, err, errlen);
	if (n < 0)
		return -EINVAL;
	out->sessions = n ? calloc((size_t)n, sizeof(*out->sessions)) : NULL;
	if (n && !out->sessions)
		return fr_ipc_fail(err, errlen, "%s: out of memory", what);
	cJSON_ArrayForEach(it, list)
		if (get_session(it, &out->sessions[out->nsessions++], err, errlen) < 0)
			goto fail;
	if (fr_ipc_members_get(obj, what, sessions_mid_m, N(sessions_mid_m), out, err, errlen) <
		    0 ||
	    get_recording(obj, what, &out->rec, err, errlen) < 0 ||
	    fr_ipc_members_get(obj, what, sessions_tail_m, N(sessions_tail_m), out, err, errlen) <
		    0)
		goto fail;
	return 0;
fail:
	fr_ipc_sessions_reply_fini(out);
	return -EINVAL;
}

static void recording_fini(struct fr_ipc_recording *rec)
{
	free(rec->events);
	free(rec->consumers);
	memset(rec, 0, sizeof(*rec));
}

void fr_ipc_status_reply_fini(struct fr_ipc_status_reply *r)
{
	if (r)
		recording_fini(&r->rec);
}

void fr_ipc_sessions_reply_fini(struct fr_ipc_sessions_reply *r)
{
	if (!r)
		return;
	recording_fini(&r->rec);
	free(r->sessions);
	r->sessions = NULL;
	r->nsessions = 0;
}
