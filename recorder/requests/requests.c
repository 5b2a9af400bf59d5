/* What clients ask flightrecd over its socket (status, sessions, attach,
 * consume; dump --session and trigger in recorder/requests/requests_ctl.c, threads
 * in recorder/requests/threads.c) and the dumps the trigger engine asks for:
 * parsing the request, deciding what the peer may see and do, reserving
 * query memory, writing the profile into the descriptor the client
 * passed.
 *
 * Runs on the IPC server's connection threads (and the trigger thread for
 * dumps); reads the ring (thread-safe queries) and never waits on the
 * ingest thread except for a bounded flush barrier.
 */
#include "recorder/daemon_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/util/time.h"
#include "fr_version.h"
#include "ipc/msg.h"
#include "ipc/proto.h"
#include "recorder/triggers/dumps.h"
#include "recorder/requests/requests_events.h"
#include "recorder/requests/requests_timeline.h"
#include "recorder/requests/goroutines.h"
#include "recorder/requests/threads.h"
#include "recorder/requests/cursors.h"
#include "recorder/requests/peer.h"

/* ---- requests ---------------------------------------------------------- */

/* For a window query: every event must be recordable. An event that is
 * being recorded is fine; one whose source failed, or that this machine
 * cannot count (fr_perf_can_open(): a disabled counter, opened and
 * closed), is refused with the reason; one nobody records gets a warning
 * that the ring holds only what earlier consumers recorded of it, naming
 * what is recorded and how to record it. It is not turned on to find out
 * whether it could be: a query of the past must not start recording
 * (offcpu records every context switch, machine-wide), and what it would
 * record is not in the window anyway. Returns 0, or -1 with `call`
 * refused. */
static int check_events(struct daemon *d, const uint32_t *ids, int n, const char *cmd,
			int privileged, char *warn, size_t warnlen, struct fr_ipc_call *call)
{
	char name[FR_EVENT_NAME_MAX], recording[256];

	for (int i = 0; i < n; i++) {
		char failed[256] = "";

		if (fr_event_is_series(ids[i])) {
			fr_event_format(ids[i], name, sizeof(name));
			fr_ipc_refuse(call,
				      "%s: %s is a series over time, not a profile: see "
				      "`flightrec timeline --event %s`%s%s%s",
				      cmd, name, name,
				      fr_event_is_blackbox(ids[i])
					      ? " and `flightrec events --type "
					      : "",
				      fr_event_is_blackbox(ids[i]) ? name : "",
				      fr_event_is_blackbox(ids[i]) ? "`" : "");
			return -1;
		}

		if (fr_sources_state(&d->sources, ids[i], failed, sizeof(failed)) > 0)
			continue;
		/* An event this machine cannot count at all (no PMU) is
		 * refused, tried with a counter that never runs */
		if (!failed[0] && privileged)
			fr_perf_can_open(ids[i], failed, sizeof(failed));
		if (failed[0]) {
			fr_ipc_refuse(call, "%s", failed);
			return -1;
		}
		if (warn[0])
			continue;
		daemon_recording(d, recording, sizeof(recording));
		fr_event_format(ids[i], name, sizeof(name));
		/* Cut short when it does not fit: still a warning */
		if (snprintf(warn, warnlen,
			     "%s is not being recorded (no session or client asks for it; the recorder "
			     "records %s); the profile holds only what the ring has of it%s%s%s",
			     name, recording,
			     privileged ? ". `flightrec attach --follow --event " : "",
			     privileged ? name : "",
			     privileged ? "` records it from now on" : "") < 0)
			warn[0] = '\0';
	}
	return 0;
}

/* Copies what a decoded attach request selects into `preq`. */
static void attach_select(const struct fr_ipc_attach_req *ar, struct fr_profile_request *preq)
{
	preq->nevents = ar->nevents;
	memcpy(preq->events, ar->events, sizeof(preq->events));
	preq->targets = ar->targets;
	/* Who the peer is decides has_uid, never the request. */
	preq->targets.has_uid = 0;
	preq->format = ar->format;
	preq->hz = ar->hz;
	memcpy(preq->event_hz, ar->event_hz, sizeof(preq->event_hz));
	preq->cpu_label = ar->by_cpu;
	preq->heap_diff = ar->diff;
}

/* The highest rate of a request: its "hz" or one of its "event_hz". */
static uint32_t highest_rate(uint32_t hz, const uint32_t *event_hz, uint32_t n)
{
	for (uint32_t i = 0; i < n && i < FR_LIMIT_EVENTS; i++)
		if (event_hz[i] > hz)
			hz = event_hz[i];
	return hz;
}

/* Reads an attach request into `preq`: the window (ending now, or from/to),
 * the rate, targets, events and format. `warn` may receive a note for the
 * user. Returns 0, or -1 with `call` refused. */
static int attach_parse(struct daemon *d, const struct fr_ipc_attach_req *ar, int privileged,
			struct fr_profile_request *preq, char *warn, size_t warnlen,
			struct fr_ipc_call *call)
{
	uint32_t max_rate = __atomic_load_n(&d->max_rate_hz, __ATOMIC_RELAXED);
	int64_t now = fr_now_real_ns();
	char buf[64];

	if (highest_rate(ar->hz, ar->event_hz, ar->nevents) > max_rate) {
		fr_ipc_refuse(call,
			      "attach: a rate of %lld Hz is above this recorder's limit of %u Hz "
			      "(limits.max_rate_hz)",
			      (long long)highest_rate(ar->hz, ar->event_hz, ar->nevents), max_rate);
		return -1;
	}
	if (ar->window_ns) {
		preq->t1 = now;
		preq->t0 = now - ar->window_ns;
	} else {
		preq->t0 = ar->from_ns;
		preq->t1 = ar->has_to ? ar->to_ns : now;
		if (preq->t1 <= preq->t0) {
			fr_ipc_refuse(call, "attach: the window ends (%s) before it starts",
				      fr_format_time(preq->t1, buf, sizeof(buf)));
			return -1;
		}
	}
	attach_select(ar, preq);
	return check_events(d, preq->events, (int)preq->nevents, "attach", privileged, warn,
			    warnlen, call);
}

/* Writes the profile of `preq` into the client's descriptor `fd` with
 * output deadlines. Returns 0 with *res and *written filled, or -1 with
 * `call` refused. */
static int attach_output(struct daemon *d, const struct fr_profile_request *preq,
			 struct fr_ipc_call *call, struct fr_profile_result *res, uint64_t *written)
{
	struct fr_profile_limits limits = {
		.stall_ns = OUTPUT_STALL_NS,
		.total_ns = OUTPUT_TOTAL_NS,
		.hangup_fd = call->peer->sock,
	};
	char err[512] = "";
	int ret;

	ret = fr_profile_write_fd(d->ring, preq, call->fd, &limits, res, written, err, sizeof(err));
	if (ret == -ETIMEDOUT)
		fr_ipc_refuse(call,
			      "attach: the output took no bytes for %lld s (or the whole "
			      "profile not within %lld s): is anything reading it? Gave up",
			      (long long)(OUTPUT_STALL_NS / FR_NS_PER_S),
			      (long long)(OUTPUT_TOTAL_NS / FR_NS_PER_S));
	else if (ret == -EOPNOTSUPP)
		fr_ipc_refuse(call, "attach: the output is a device that takes no non-blocking "
				    "writes; write to a file or a pipe (| cat)");
	else if (ret < 0)
		fr_ipc_refuse(call, "attach: %s", err[0] ? err : strerror(-ret));
	return ret < 0 ? -1 : 0;
}

/* The answer to an attach that wrote its profile. */
static void attach_reply(struct daemon *d, const struct fr_profile_request *preq,
			 const struct fr_profile_result *res, uint64_t written, const char *warn,
			 struct fr_ipc_attach_reply *r)
{
	r->samples = res->samples_kept;
	r->samples_in_window = res->samples_seen;
	r->stacks = res->stacks;
	r->bytes = written;
	r->hz = res->hz;
	r->lost = res->lost;
	r->t0_ns = preq->t0;
	r->t1_ns = preq->t1;
	r->covered_t0_ns = res->covered_t0;
	for (uint32_t e = 0; e < res->nevents && e < FR_LIMIT_EVENTS; e++) {
		const struct fr_profile_event_result *er = &res->events[e];
		struct fr_ipc_event_counts *c = &r->events[r->nevents++];

		c->event = er->event;
		c->hz = er->hz;
		c->samples = er->samples_kept;
		c->samples_in_window = er->samples_seen;
		c->lost = er->lost;
		c->recorded = er->recorded;
		c->throttled = er->throttled;
		c->truncated = er->truncated;
	}
	if (preq->note)
		snprintf(r->incomplete, sizeof(r->incomplete), "%s", preq->note);
	daemon_attach_explain(d, preq, res, r);
	/* "unrecorded" says it, with the window */
	if (warn[0] && !r->unrecorded[0])
		fr_ipc_warn(r->warnings, &r->nwarnings, warn);
	if (res->warning[0])
		fr_ipc_warn(r->warnings, &r->nwarnings, res->warning);
	if (preq->targets.has_uid)
		fr_ipc_warnf(r->warnings, &r->nwarnings,
			     "the profile holds only your own processes (uid %u); "
			     "root and members of socket.admin_group see the whole machine",
			     preq->targets.uid);
}

/* attach --since-last NAME: takes the peer's cursor NAME and starts the
 * window where it stands (a new cursor keeps the window asked for, or
 * the whole ring). Returns 0 (with *taken when a cursor is held), or -1
 * with `call` refused. */
static int attach_cursor(struct daemon *d, const char *name, struct fr_ipc_call *call,
			 struct fr_profile_request *preq, int *taken)
{
	char err[256] = "", a[64], b[64];
	int64_t t = 0;
	int exists = 0;

	*taken = 0;
	if (!name[0])
		return 0;
	if (!d->cursors) {
		fr_ipc_refuse(call, "attach: --since-last is off on this recorder (see its log)");
		return -1;
	}
	if (fr_cursor_take(d->cursors, (uint32_t)call->peer->uid, name, &t, &exists, err,
			   sizeof(err)) < 0) {
		fr_ipc_refuse(call, "attach: %s", err);
		return -1;
	}
	*taken = 1;
	if (exists) {
		preq->t0 = t;
	} else if (!preq->t0) {
		struct fr_ring_stats st;

		/* The whole ring: from its oldest sample. */
		fr_ring_get_stats(d->ring, &st);
		if (st.chunks && st.oldest_ns < preq->t1)
			preq->t0 = st.oldest_ns;
	}
	if (preq->t1 <= preq->t0) {
		fr_ipc_refuse(call,
			      "attach: cursor \"%s\" stands at %s, not before the window's end %s",
			      name, fr_format_time(preq->t0, a, sizeof(a)),
			      fr_format_time(preq->t1, b, sizeof(b)));
		return -1;
	}
	return 0;
}

/* Ends attach --since-last's hold on its cursor: moved to the window's
 * end when the profile was written (a cursor that could not be saved
 * holds until the recorder restarts, and the reply says so). */
static void attach_cursor_done(struct daemon *d, const struct fr_ipc_peer *peer, const char *name,
			       int64_t t1, struct fr_ipc_attach_reply *r, int written)
{
	char err[512] = "";

	if (fr_cursor_release(d->cursors, (uint32_t)peer->uid, name, written, t1, err,
			      sizeof(err)) == 0)
		return;
	fr_log_warn("cursor \"%s\" of uid %u: %s", name, (unsigned)peer->uid, err);
	if (written)
		fr_ipc_warnf(r->warnings, &r->nwarnings,
			     "the cursor \"%s\" moved but was not saved (%s): a restart of "
			     "the recorder would give this window again",
			     name, err);
}

/* Refuses an output descriptor attach cannot write. Returns 0 or -1. */
static int attach_fd_ok(struct fr_ipc_call *call)
{
	int flags;

	if (call->fd < 0) {
		fr_ipc_refuse(call, "attach needs the output file passed with the request");
		return -1;
	}
	flags = fcntl(call->fd, F_GETFL);
	if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
		fr_ipc_refuse(call, "attach: the output descriptor is not open for writing");
		return -1;
	}
	return 0;
}

/* The query of an attach once its window and cursor are known: the PMU
 * note, the peer's own processes when not privileged, the flush, the
 * query memory, then the profile and its reply. Returns 0 or -1 with
 * `call` refused; *reserved is what to give back. */
static int attach_run(struct daemon *d, struct fr_ipc_call *call, struct fr_profile_request *preq,
		      int privileged, int cursor_taken, const char *cursor, const char *warn,
		      int64_t *reserved, struct fr_ipc_attach_reply *r)
{
	struct daemon_symbol_paths sp = {0};
	struct fr_profile_result res;
	uint64_t written = 0;
	char pmu_note[512];
	int ret = -1;

	preq->version = FR_VERSION;
	fr_sources_pmu_note(&d->sources, preq->events, preq->nevents, pmu_note, sizeof(pmu_note));
	preq->pmu_note = pmu_note;
	/* From the credentials, never from the request: a user sees the
	 * processes it ran, whatever it asks for. */
	if (!privileged) {
		preq->targets.has_uid = 1;
		preq->targets.uid = (uint32_t)call->peer->uid;
	}
	/* Samples up to the request must be in the ring before reading it. */
	if (fr_ingest_flush(&d->ingest) < 0) {
		fr_log_warn("flush before attach timed out; the last second may be missing");
		preq->note = FLUSH_NOTE;
		/* A cursor moved past samples not yet stored would skip them
		 * for good. */
		if (cursor_taken) {
			fr_ipc_refuse(call,
				      "attach: the recorder could not store its last samples in "
				      "time; cursor \"%s\" stays, try again",
				      cursor);
			return -1;
		}
	}
	*reserved = daemon_query_reserve(d, preq);
	if (*reserved < 0) {
		*reserved = 0;
		daemon_query_busy(d, call, "attach");
		return -1;
	}
	/* Work for a client that hung up stops at the next chunk. */
	preq->stop = fr_ipc_peer_gone;
	preq->stop_arg = call->peer;
	if (daemon_symbol_paths(d, preq, &sp) < 0)
		fr_ipc_refuse(call, "attach: out of memory");
	else if (attach_output(d, preq, call, &res, &written) == 0) {
		attach_reply(d, preq, &res, written, warn, r);
		ret = 0;
	}
	daemon_symbol_paths_fini(&sp);
	return ret;
}

static int handle_attach(void *arg, struct fr_ipc_call *call, const struct fr_ipc_attach_req *ar,
			 struct fr_ipc_attach_reply *r)
{
	struct daemon *d = arg;
	int privileged = fr_peer_privileged(d->peers, call->peer);
	struct fr_profile_request preq;
	int64_t reserved = 0;
	char warn[512] = "";
	int cursor_taken = 0, ret = -1;

	memset(&preq, 0, sizeof(preq));
	if (attach_fd_ok(call) == 0 &&
	    attach_parse(d, ar, privileged, &preq, warn, sizeof(warn), call) == 0 &&
	    attach_cursor(d, ar->since_last, call, &preq, &cursor_taken) == 0)
		ret = attach_run(d, call, &preq, privileged, cursor_taken, ar->since_last, warn,
				 &reserved, r);
	if (cursor_taken)
		attach_cursor_done(d, call->peer, ar->since_last, preq.t1, r, ret == 0);
	if (call->fd >= 0)
		close(call->fd);
	daemon_query_release(d, preq.targets.has_uid, reserved);
	return ret < 0 ? -EINVAL : 0;
}

/* ---- dumps ------------------------------------------------------------- */

/* An OOM kill dumped by a session that samples allocations: the live
 * heap goes in too, as it was at the kill (its window ends there: at the
 * victim's exit, moments later, its blocks count as freed), the victim's
 * samples labelled with its pid among the session's targets'. */
static void dump_oom_heap(struct fr_profile_request *preq, const struct fr_trigger_oom *victim)
{
	int alloc = 0;

	for (uint32_t i = 0; i < preq->nevents; i++) {
		if (preq->events[i] == FR_EVENT_HEAP)
			return;
		alloc |= preq->events[i] == FR_EVENT_ALLOC;
	}
	if (!alloc || preq->nevents >= FR_LIMIT_EVENTS)
		return;
	preq->event_hz[preq->nevents] = 0;
	preq->events[preq->nevents++] = FR_EVENT_HEAP;
	if (victim->time_ns > preq->t0 && victim->time_ns < preq->t1)
		preq->t1 = victim->time_ns + 1;
}

/* What a dump of `fire` asks for: the session's events and targets into
 * `preq`, and where and how to write it into `dr` (its directory copied
 * into `dir`), read under config_lock from the configuration in force.
 * Returns 0, or -ENOENT when a reload removed the session. */
static int dump_prepare(struct daemon *d, const struct fr_trigger_fire *fire,
			struct fr_profile_request *preq, struct fr_dump_request *dr, char *dir,
			size_t dirlen)
{
	const struct fr_config_session *sess = NULL;

	pthread_mutex_lock(&d->config_lock);
	for (uint32_t i = 0; i < d->config->nsessions; i++)
		if (strcmp(d->config->sessions[i].name, fire->session) == 0)
			sess = &d->config->sessions[i];
	if (sess) {
		/* At the session's rates: a session at 19 Hz gets a 19 Hz dump
		 * even while another consumer records at 999 Hz. */
		for (uint32_t e = 0; e < sess->nevents && e < FR_LIMIT_EVENTS; e++) {
			preq->event_hz[preq->nevents] = sess->events[e].hz;
			preq->events[preq->nevents++] = sess->events[e].event;
		}
		/* A session's targets fit a request whole (core/util/limits.h). */
		preq->targets = sess->targets;
	}
	snprintf(dir, dirlen, "%s",
		 d->config->dumps_dir ? d->config->dumps_dir : d->dumps_default_dir);
	dr->keep = d->config->dumps_keep;
	dr->max_bytes = d->config->dumps_max_bytes;
	dr->mode = (mode_t)d->config->dumps_mode;
	pthread_mutex_unlock(&d->config_lock);
	if (!sess)
		return -ENOENT;
	preq->t0 = fire->t0_ns;
	preq->t1 = fire->t1_ns;
	preq->version = FR_VERSION;
	dr->dir = dir;
	dr->session = fire->session;
	dr->trigger = fire->kind;
	dr->reason = fire->reason;
	dr->fire_ns = fire->fire_ns;
	dr->window_ns = fire->trigger ? fire->trigger->window_ns : fire->t1_ns - fire->t0_ns;
	dr->after_ns = fire->trigger ? fire->trigger->after_ns : 0;
	dr->pid = fire->pid;
	dr->oom = fire->oom;
	dr->crash = fire->crash;
	dr->pressure = fire->pressure;
	dr->profile = preq;
	if (fire->oom)
		dump_oom_heap(preq, fire->oom);
	return 0;
}

/* The trigger engine's callback: writes the window of `fire` for the
 * session's events and targets into the dumps directory. Runs on the
 * trigger thread (or a manual dump's connection thread). */
int daemon_dump(void *arg, const struct fr_trigger_fire *fire, char *out, size_t outlen)
{
	struct daemon *d = arg;
	struct fr_profile_request *preq = calloc(1, sizeof(*preq));
	struct daemon_symbol_paths sp = {0};
	struct fr_dump_request dr = {0};
	char path[4096], err[512], dir[4096], pmu_note[512];
	int64_t reserved;
	int ret;

	if (!preq) {
		fr_log_err("dump of session %s (%s) failed: out of memory", fire->session,
			   fire->kind);
		if (out)
			snprintf(out, outlen, "out of memory");
		return -ENOMEM;
	}
	if (dump_prepare(d, fire, preq, &dr, dir, sizeof(dir)) < 0) {
		free(preq);
		fr_log_warn("dump of session %s: the session is gone (reloaded)", fire->session);
		if (out)
			snprintf(out, outlen, "the session is gone (reloaded)");
		return -ENOENT;
	}

	/* What every goroutine of the targets' Go programs does, at the
	 * trigger, before the window's profile is read. */
	dr.goroutines_fd = memfd_create("flightrec-goroutines", MFD_CLOEXEC);
	if (dr.goroutines_fd >= 0 &&
	    daemon_goroutines_snapshot(d, &preq->targets, dr.goroutines_fd, &dr.go_processes) < 0)
		dr.go_processes = 0;
	fr_sources_pmu_note(&d->sources, preq->events, preq->nevents, pmu_note, sizeof(pmu_note));
	preq->pmu_note = pmu_note;
	/* Samples up to the end of the window must be in the ring. */
	if (fr_ingest_flush(&d->ingest) < 0) {
		fr_log_warn("flush before a dump timed out; the last second may be missing");
		preq->note = FLUSH_NOTE;
	}
	/* Dumps share the query memory. A manual dump (a client's request)
	 * is refused busy, as an attach is; a trigger's dump is written
	 * anyway rather than lost: sessions and cooldowns bound those. */
	reserved = daemon_query_reserve(d, preq);
	if (reserved < 0) {
		reserved = 0;
		if (strcmp(fire->kind, "manual") == 0) {
			free(preq);
			close(dr.goroutines_fd);
			fr_log_warn("manual dump of session %s refused: query memory busy",
				    fire->session);
			return -EAGAIN;
		}
		fr_log_warn("dump of session %s (%s): the query memory is busy; writing it anyway",
			    fire->session, fire->kind);
	}
	ret = daemon_symbol_paths(d, preq, &sp);
	if (ret < 0)
		snprintf(err, sizeof(err), "out of memory");
	else
		ret = fr_dumps_write(d->ring, &dr, path, sizeof(path), err, sizeof(err));
	daemon_symbol_paths_fini(&sp);
	daemon_query_release(d, preq->targets.has_uid, reserved);
	free(preq);
	if (dr.goroutines_fd >= 0)
		close(dr.goroutines_fd);
	if (ret < 0) {
		fr_log_err("dump of session %s (%s) failed: %s", fire->session, fire->kind, err);
		if (out)
			snprintf(out, outlen, "%s", err);
		return ret;
	}
	fr_log_info("session %s: %s dump written to %s", fire->session, fire->kind, path);
	if (out)
		snprintf(out, outlen, "%s", path);
	return 0;
}

/* A client asks for events at a rate for as long as its connection
 * lives (attach --follow): the sources are raised to it at once and fall
 * back when the connection ends. Answers when the rates are in force, with
 * "start_ns", from when on the data is at these rates. */
/* The rate a follower gets for its rated events: what it asked (99 Hz
 * when it did not, within limits.max_rate_hz), at most
 * limits.user_max_rate_hz for a user who is not privileged: raising rates
 * costs every process on the machine, so such a user is capped and told so
 * in `capped`, not refused (it still gets a profile). */
static uint32_t consume_rate(struct daemon *d, int64_t hz, int privileged, char *capped,
			     size_t cappedlen)
{
	uint32_t max_rate = __atomic_load_n(&d->max_rate_hz, __ATOMIC_RELAXED);
	uint32_t user_max = __atomic_load_n(&d->user_max_rate_hz, __ATOMIC_RELAXED);
	uint32_t rate = hz ? (uint32_t)hz : max_rate < 99 ? max_rate : 99;

	if (privileged || rate <= user_max)
		return rate;
	snprintf(capped, cappedlen,
		 "%u Hz is above the limit for users (limits.user_max_rate_hz); recording at %u Hz",
		 rate, user_max);
	return user_max;
}

/* An event without a rate (offcpu: every context switch) has no limit to
 * cap: a user who is not privileged may follow it while something else
 * records it, never start it for the whole machine (collect_wants() does
 * not count such a follower for it). Returns 0, or -1 with `failed` set
 * when the user asks for one that is not recorded now. */
static int check_follow_only(struct daemon *d, const struct fr_consumer *c, char *failed,
			     size_t failedlen)
{
	char name[FR_EVENT_NAME_MAX];

	for (uint32_t i = 0; i < c->nevents; i++) {
		if (fr_event_has_rate(c->events[i]))
			continue;
		if (fr_sources_state(&d->sources, c->events[i], failed, failedlen) <= 0) {
			snprintf(failed, failedlen,
				 "consume: %s is not being recorded, and it records every context "
				 "switch of the machine; only root and members of socket.admin_group "
				 "may start it",
				 fr_event_format(c->events[i], name, sizeof(name)));
			return -1;
		}
	}
	return 0;
}

/* The answer to a consume that holds its rates from `start` on. */
static void consume_reply(struct daemon *d, const struct fr_consumer *c, int64_t start,
			  const char *capped, struct fr_ipc_consume_reply *r)
{
	if (capped[0])
		fr_ipc_warn(r->warnings, &r->nwarnings, capped);
	r->start_ns = start;
	for (uint32_t i = 0; i < c->nevents && i < FR_LIMIT_EVENTS; i++) {
		r->events[r->nevents].event = c->events[i];
		r->events[r->nevents].hz = c->hz[i];
		r->events[r->nevents++].recording_hz = fr_sources_hz(&d->sources, c->events[i]);
	}
}

/* A new consumer of `cq` for `peer`, its rates capped for a user who is
 * not privileged (`capped` says so). Returns it, or NULL with `call`
 * refused (or out of memory). */
static struct fr_consumer *consumer_new(struct daemon *d, struct fr_ipc_call *call,
					const struct fr_ipc_consume_req *cq, int privileged,
					char *capped, size_t cappedlen)
{
	struct fr_consumer *c = calloc(1, sizeof(*c));
	char failed[512] = "";

	if (!c)
		return NULL;
	memcpy(c->events, cq->events, sizeof(cq->events));
	c->nevents = cq->nevents;
	c->follows_only = !privileged;
	if (!privileged && check_follow_only(d, c, failed, sizeof(failed)) < 0) {
		free(c);
		fr_ipc_refuse(call, "%s", failed);
		return NULL;
	}
	/* Each event at its own rate (event_hz), else at "hz". */
	for (uint32_t i = 0; i < c->nevents; i++)
		if (fr_event_has_rate(c->events[i]))
			c->hz[i] = consume_rate(d, cq->event_hz[i] ? cq->event_hz[i] : cq->hz,
						privileged, capped, cappedlen);
	snprintf(c->name, sizeof(c->name), "client pid %d", (int)call->peer->pid);
	c->uid = call->peer->uid;
	return c;
}

static int handle_consume(void *arg, struct fr_ipc_call *call, const struct fr_ipc_consume_req *cq,
			  struct fr_ipc_consume_reply *r)
{
	struct daemon *d = arg;
	struct fr_ipc_peer *peer = call->peer;
	uint32_t max_rate = __atomic_load_n(&d->max_rate_hz, __ATOMIC_RELAXED);
	int privileged = fr_peer_privileged(d->peers, peer);
	char failed[512] = "", name[FR_EVENT_NAME_MAX], capped[256] = "";
	struct fr_consumer *c;
	int64_t hz, start;

	if (peer->hold)
		return fr_ipc_refuse(call, "consume: this connection already holds rates; open "
					   "another connection for more");
	hz = highest_rate(cq->hz, cq->event_hz, cq->nevents);
	if (hz > max_rate)
		return fr_ipc_refuse(call,
				     "consume: a rate of %lld Hz is above this recorder's limit "
				     "of %u Hz (limits.max_rate_hz)",
				     (long long)hz, max_rate);
	c = consumer_new(d, call, cq, privileged, capped, sizeof(capped));
	if (!c)
		return call->error[0] ? -EINVAL : -ENOMEM;
	if (fr_sources_wait_reconciled(&d->sources, fr_consumer_add(&d->sources, c)) < 0) {
		fr_consumer_remove(&d->sources, c);
		return fr_ipc_refuse(call, "consume: the recorder did not apply the rates in time");
	}
	/* Rates take effect at the next sample of each CPU; a window that
	 * starts now has them throughout. */
	start = fr_now_real_ns();
	for (uint32_t i = 0; i < c->nevents && !failed[0]; i++)
		fr_sources_state(&d->sources, c->events[i], failed, sizeof(failed));
	if (failed[0]) {
		fr_consumer_remove(&d->sources, c);
		return fr_ipc_refuse(call, "%s", failed);
	}
	peer->hold = c;
	peer->release = fr_consumer_release;
	fr_log_info("%s (uid %u) asks for %s%s at %lld Hz%s%s", c->name, (unsigned)peer->uid,
		    fr_event_format(c->events[0], name, sizeof(name)),
		    c->nevents > 1 ? " and more" : "", (long long)c->hz[0], capped[0] ? ": " : "",
		    capped);
	consume_reply(d, c, start, capped, r);
	return 0;
}

const struct fr_ipc_handlers daemon_handlers = {
	.attach = handle_attach,
	.consume = handle_consume,
	.threads = daemon_handle_threads,
	.goroutines = daemon_handle_goroutines,
	.timeline = daemon_handle_timeline,
	.events = daemon_handle_events,
	.dump = daemon_handle_dump,
	.trigger = daemon_handle_trigger,
	.reload = daemon_handle_reload,
	.status = daemon_handle_status,
	.sessions = daemon_handle_sessions,
};
