/* What an attach reply says of its profile beyond the counts
 * (ipc/msg.h, "what the profile spans"): the profile's first and last
 * sample, the ring's span, the longest ingest stall within the window,
 * and, for a profile with no sample, which of its targets alone matches
 * nothing. The CLI turns these into "wrote ...: 19.8s of samples",
 * "the window is before the ring's first sample", "--comm nginx matched
 * no samples" and a non-zero exit; the daemon says what it knows rather
 * than the client guessing.
 *
 * Also the log of ingest stalls the ingest thread keeps (recorder/
 * ingest.c notes each one here). Runs on the request threads, after the
 * profile was written, under the query memory the attach reserved.
 */
#include "recorder/daemon_int.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/store/ring.h"
#include "core/util/log.h"
#include "ipc/msg.h"

/* The longest logged stall overlapping [t0, t1), clipped to it. */
static void stall_in(struct daemon *d, int64_t t0, int64_t t1, struct fr_ipc_attach_reply *r)
{
	int64_t a, b;

	if (fr_ingest_stall_within(&d->ingest, t0, t1, &a, &b) &&
	    b - a > r->stall_t1_ns - r->stall_t0_ns) {
		r->stall_t0_ns = a;
		r->stall_t1_ns = b;
	}
}

/* A ring the writer cannot write since before the window's end: what
 * the window misses is not a stall, nor a window after the ring's end. */
static void writer_error_in(struct daemon *d, int64_t t1, struct fr_ipc_attach_reply *r)
{
	int64_t since;
	int err = fr_writer_error(&d->writer, &since);

	if (!err || since >= t1)
		return;
	r->writer_error_ns = since;
	snprintf(r->writer_error, sizeof(r->writer_error), "%s", strerror(err));
}

/* Whether process `pid` runs, and for a request limited to a uid, as
 * that uid: another user's process is no more named to the asker than
 * its samples are (/proc may hide it from them, hidepid). */
static int pid_running(const struct fr_targets *t, uint32_t pid)
{
	char path[32];
	struct stat st;

	if (!t->has_uid)
		return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
	snprintf(path, sizeof(path), "/proc/%u", pid);
	return stat(path, &st) == 0 && st.st_uid == t->uid;
}

void daemon_recording(struct daemon *d, char *buf, size_t len)
{
	pthread_mutex_lock(&d->sources.lock);
	fr_sources_describe(&d->sources, 0, buf, len);
	pthread_mutex_unlock(&d->sources.lock);
	if (!buf[0])
		snprintf(buf, len, "nothing");
}

/* When every event of `preq` is one nothing records now and of which
 * the ring holds no sample in the window, whatever the targets (but the
 * uid): their names into r->unrecorded, what is recorded into
 * r->recording, and 1, so that the empty profile is said to be the
 * events', not blamed on a filter. 0 otherwise (a filter may be to blame
 * for the events that have samples). */
static int unrecorded_in(struct daemon *d, const struct fr_profile_request *preq,
			 struct fr_ipc_attach_reply *r)
{
	struct fr_profile_request *q = malloc(sizeof(*q));
	struct fr_profile_result *res = malloc(sizeof(*res));
	size_t used = 0;
	int n = 0;

	for (uint32_t e = 0; q && res && e < preq->nevents; e++) {
		char name[FR_EVENT_NAME_MAX], err[256] = "";

		/* One that records (or failed): not every event's doing */
		if (fr_sources_state(&d->sources, preq->events[e], err, sizeof(err)) != 0)
			break;
		*q = *preq;
		q->nevents = 1;
		q->events[0] = preq->events[e];
		q->event_hz[0] = preq->event_hz[e];
		memset(&q->targets, 0, sizeof(q->targets));
		q->targets.has_uid = preq->targets.has_uid;
		q->targets.uid = preq->targets.uid;
		if (fr_profile_count(d->ring, q, res, NULL, err, sizeof(err)) < 0) {
			fr_log_warn("attach: cannot count the window's samples: %s", err);
			break;
		}
		if (res->samples_seen)
			break;
		fr_event_format(preq->events[e], name, sizeof(name));
		used += (size_t)snprintf(r->unrecorded + used, sizeof(r->unrecorded) - used, "%s%s",
					 n++ ? "," : "", name);
		if (used >= sizeof(r->unrecorded))
			break;
	}
	free(q);
	free(res);
	if (n && (uint32_t)n == preq->nevents) {
		daemon_recording(d, r->recording, sizeof(r->recording));
		return 1;
	}
	r->unrecorded[0] = '\0';
	return 0;
}

void daemon_attach_explain(struct daemon *d, const struct fr_profile_request *preq,
			   const struct fr_profile_result *res, struct fr_ipc_attach_reply *r)
{
	const struct fr_targets *t = &preq->targets;
	struct fr_ring_stats st;

	r->first_ns = res->first_ns;
	r->last_ns = res->last_ns;
	fr_ring_get_stats(d->ring, &st);
	if (st.chunks) {
		r->ring_oldest_ns = st.oldest_ns;
		r->ring_newest_ns = st.newest_ns;
	}
	stall_in(d, preq->t0, preq->t1, r);
	/* The ring's own record of stalls (a log of 16 forgets). */
	if (res->stall_t1 - res->stall_t0 > r->stall_t1_ns - r->stall_t0_ns) {
		r->stall_t0_ns = res->stall_t0;
		r->stall_t1_ns = res->stall_t1;
	}
	writer_error_in(d, preq->t1, r);
	/* Only when the window has samples at all: an empty ring or a
	 * window outside it is said otherwise. */
	if (res->samples_seen || !st.chunks || preq->t1 <= st.oldest_ns || preq->t0 > st.newest_ns)
		return;
	/* An event nobody records, none of it in the window: no filter is
	 * to blame */
	if (unrecorded_in(d, preq, r))
		return;
	if (t->npids || t->ncomms || t->cgroup[0] || fr_targets_labels_given(t)) {
		char err[256] = "";

		if (fr_profile_empty_targets(d->ring, preq, &r->empty_filters, &r->procs_in_window,
					     err, sizeof(err)) < 0)
			fr_log_warn("attach: cannot tell which target matched nothing: %s", err);
		/* A pid that matched nothing: is there such a process at all? */
		for (uint32_t i = 0; (r->empty_filters & FR_IPC_FILTER_PID) && i < t->npids; i++)
			if (!pid_running(t, t->pids[i]))
				r->pids_not_running[r->npids_not_running++] = t->pids[i];
	}
}
