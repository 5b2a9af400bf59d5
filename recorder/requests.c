/* What clients ask flightrecd over its socket (status, sessions, attach,
 * consume, dump) and the dumps the trigger engine asks for: parsing the
 * request, deciding what the peer may see and do, reserving query memory,
 * writing the profile into the descriptor the client passed.
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
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/uring.h"
#include "fr_version.h"
#include "ipc/proto.h"
#include "recorder/dumps.h"

/* ---- requests ---------------------------------------------------------- */

/* Anyone who is not privileged came in through the socket's group and
 * sees only its own processes. The daemon's own user is a private
 * instance. */
int daemon_peer_privileged(struct daemon *d, const struct fr_ipc_peer *peer)
{
	int64_t admin = __atomic_load_n(&d->admin_gid, __ATOMIC_RELAXED);

	return peer->uid == 0 || peer->uid == geteuid() ||
	       (admin >= 0 && fr_ipc_peer_in_group(peer, (gid_t)admin));
}

/* Reads an integer member; returns 1 if present and valid, 0 if absent,
 * -1 (with an error response built) if present and not an integer. */
static int get_int(const cJSON *req, const char *cmd, const char *key, int64_t min, int64_t max,
		   int64_t *out, cJSON **error)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int64_t)v->valuedouble) {
		*error = fr_ipc_error("%s: \"%s\" must be an integer", cmd, key);
		return -1;
	}
	if (v->valuedouble < (double)min || v->valuedouble > (double)max) {
		*error = fr_ipc_error("%s: \"%s\" must be %lld..%lld, got %.0f", cmd, key,
				      (long long)min, (long long)max, v->valuedouble);
		return -1;
	}
	*out = (int64_t)v->valuedouble;
	return 1;
}

/* Reads "events" (an array of event names; absent: cpu) into ids.
 * Returns the count, or -1 with an error response built. */
static int get_events(const cJSON *req, const char *cmd, uint32_t *ids, cJSON **error)
{
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(req, "events"), *e;
	int n = 0;

	if (!events || cJSON_IsNull(events)) {
		ids[0] = FR_EVENT_CPU;
		return 1;
	}
	if (!cJSON_IsArray(events) || cJSON_GetArraySize(events) == 0) {
		*error = fr_ipc_error("%s: \"events\" must be a non-empty array of event names", cmd);
		return -1;
	}
	cJSON_ArrayForEach(e, events) {
		int64_t id = cJSON_IsString(e) ? fr_event_lookup(e->valuestring) : -ENOENT;

		if (id < 0) {
			*error = fr_ipc_error("%s: unknown event %s%s%s (accepted: " FR_EVENT_NAMES ")",
					      cmd, cJSON_IsString(e) ? "\"" : "",
					      cJSON_IsString(e) ? e->valuestring : "(not a string)",
					      cJSON_IsString(e) ? "\"" : "");
			return -1;
		}
		for (int i = 0; i < n; i++) {
			if (ids[i] == (uint32_t)id) {
				*error = fr_ipc_error("%s: event \"%s\" is listed twice", cmd,
						      e->valuestring);
				return -1;
			}
		}
		if (n == FR_PROFILE_MAX_EVENTS) {
			*error = fr_ipc_error("%s: at most %d events per request", cmd,
					      FR_PROFILE_MAX_EVENTS);
			return -1;
		}
		ids[n++] = (uint32_t)id;
	}
	return n;
}

/* Reads the targets of a request ("pids", "comm", "cgroup") into `preq`.
 * Returns 0, or -1 with an error response built. */
static int get_targets(const cJSON *req, const char *cmd, struct fr_profile_request *preq,
		       cJSON **error)
{
	const cJSON *pids = cJSON_GetObjectItemCaseSensitive(req, "pids"), *p;
	const cJSON *comm = cJSON_GetObjectItemCaseSensitive(req, "comm");
	const cJSON *cgroup = cJSON_GetObjectItemCaseSensitive(req, "cgroup");
	const cJSON *children = cJSON_GetObjectItemCaseSensitive(req, "children");

	if (pids && !cJSON_IsNull(pids)) {
		if (!cJSON_IsArray(pids)) {
			*error = fr_ipc_error("%s: \"pids\" must be an array of process ids", cmd);
			return -1;
		}
		cJSON_ArrayForEach(p, pids) {
			if (!cJSON_IsNumber(p) || p->valuedouble < 1 || p->valuedouble > INT32_MAX ||
			    p->valuedouble != (double)(int64_t)p->valuedouble) {
				*error = fr_ipc_error("%s: \"pids\" must hold positive process ids",
						      cmd);
				return -1;
			}
			if (preq->npids == FR_PROFILE_MAX_PIDS) {
				*error = fr_ipc_error("%s: at most %d pids per request", cmd,
						      FR_PROFILE_MAX_PIDS);
				return -1;
			}
			preq->pids[preq->npids++] = (uint32_t)p->valuedouble;
		}
	}
	if (comm && !cJSON_IsNull(comm)) {
		if (!cJSON_IsArray(comm)) {
			*error = fr_ipc_error("%s: \"comm\" must be an array of command names", cmd);
			return -1;
		}
		cJSON_ArrayForEach(p, comm) {
			if (!cJSON_IsString(p) || !p->valuestring[0] ||
			    strlen(p->valuestring) >= FR_PROFILE_COMM_MAX) {
				*error = fr_ipc_error("%s: \"comm\" must hold command names of 1..%d "
						      "characters (as the kernel keeps them)", cmd,
						      FR_PROFILE_COMM_MAX - 1);
				return -1;
			}
			if (preq->ncomms == FR_PROFILE_MAX_COMMS) {
				*error = fr_ipc_error("%s: at most %d command names per request", cmd,
						      FR_PROFILE_MAX_COMMS);
				return -1;
			}
			snprintf(preq->comms[preq->ncomms++], FR_PROFILE_COMM_MAX, "%s",
				 p->valuestring);
		}
	}
	if (children && !cJSON_IsNull(children)) {
		if (!cJSON_IsBool(children)) {
			*error = fr_ipc_error("%s: \"children\" must be true or false", cmd);
			return -1;
		}
		preq->children = cJSON_IsTrue(children);
		if (preq->children && !preq->npids) {
			*error = fr_ipc_error("%s: \"children\" goes with \"pids\"", cmd);
			return -1;
		}
	}
	if (cgroup && !cJSON_IsNull(cgroup)) {
		if (!cJSON_IsString(cgroup) || cgroup->valuestring[0] != '/' ||
		    strlen(cgroup->valuestring) >= FR_PROFILE_CGROUP_MAX) {
			*error = fr_ipc_error("%s: \"cgroup\" must be a cgroup v2 path like "
					      "\"/system.slice/nginx.service\" (at most %d characters)",
					      cmd, FR_PROFILE_CGROUP_MAX - 1);
			return -1;
		}
		snprintf(preq->cgroup, sizeof(preq->cgroup), "%s", cgroup->valuestring);
	}
	return 0;
}

/* For a window query: every event must be recordable. An event that is
 * being recorded is fine; one whose source failed is refused with the
 * reason; one nobody records is tried (opened and closed again) so that
 * the user learns at once whether it could be, and gets a warning that
 * the ring holds only what earlier consumers recorded of it. Returns 0, or
 * -1 with an error response built. */
static int check_events(struct daemon *d, const uint32_t *ids, int n, const char *cmd,
			int privileged, char *warn, size_t warnlen, cJSON **error)
{
	char name[FR_EVENT_NAME_MAX];

	for (int i = 0; i < n; i++) {
		struct fr_consumer *probe;
		char failed[256] = "";

		if (fr_sources_state(&d->sources, ids[i], failed, sizeof(failed)) > 0)
			continue;
		/* The probe opens the event for a moment, machine-wide: offcpu
		 * records every context switch. Only a privileged asker may. */
		if (!failed[0] && privileged) {
			probe = calloc(1, sizeof(*probe));
			if (!probe) {
				*error = fr_ipc_error("%s: out of memory", cmd);
				return -1;
			}
			snprintf(probe->name, sizeof(probe->name), "%s check of %s", cmd,
				 fr_event_format(ids[i], name, sizeof(name)));
			probe->uid = (uid_t)-1;
			probe->nevents = 1;
			probe->events[0] = ids[i];
			probe->hz[0] = fr_event_has_rate(ids[i]) ? 1 : 0;
			fr_sources_wait_reconciled(&d->sources, fr_consumer_add(&d->sources, probe));
			fr_sources_state(&d->sources, ids[i], failed, sizeof(failed));
			fr_consumer_remove(&d->sources, probe);
		}
		if (failed[0]) {
			*error = fr_ipc_error("%s", failed);
			return -1;
		}
		if (!warn[0] && privileged)
			snprintf(warn, warnlen,
				 "%s is not being recorded (no session or client asks for it); the "
				 "profile holds only what the ring has of it. `flightrec attach "
				 "--follow --event %s` records it from now on",
				 fr_event_format(ids[i], name, sizeof(name)), name);
		else if (!warn[0])
			snprintf(warn, warnlen,
				 "%s is not being recorded (no session or client asks for it); the "
				 "profile holds only what the ring has of it",
				 fr_event_format(ids[i], name, sizeof(name)));
	}
	return 0;
}

/* Reads an attach request into `preq`: the window (ending now, or from/to),
 * the rate, targets, events and format. `warn` may receive a note for the
 * user. Returns 0, or -1 with an error reply in *error. */
static int attach_parse(struct daemon *d, const cJSON *req, int privileged,
			struct fr_profile_request *preq, char *warn, size_t warnlen, cJSON **error)
{
	uint32_t max_rate = __atomic_load_n(&d->max_rate_hz, __ATOMIC_RELAXED);
	int64_t window = 0, from = 0, to = 0, hz = 0, now = fr_now_real_ns();
	int has_window, has_from, has_to, n;
	const cJSON *format;
	char buf[64];

	if ((has_window = get_int(req, "attach", "window_ns", 1, INT64_MAX, &window, error)) < 0 ||
	    (has_from = get_int(req, "attach", "from_ns", 0, INT64_MAX, &from, error)) < 0 ||
	    (has_to = get_int(req, "attach", "to_ns", 0, INT64_MAX, &to, error)) < 0 ||
	    get_int(req, "attach", "hz", 0, INT32_MAX, &hz, error) < 0)
		return -1;
	if (hz > max_rate) {
		*error = fr_ipc_error("attach: a rate of %lld Hz is above this recorder's limit of "
				      "%u Hz (limits.max_rate_hz)", (long long)hz, max_rate);
		return -1;
	}
	if (has_window) {
		preq->t1 = now;
		preq->t0 = now - window;
	} else if (has_from) {
		preq->t0 = from;
		preq->t1 = has_to ? to : now;
		if (preq->t1 <= preq->t0) {
			*error = fr_ipc_error("attach: the window ends (%s) before it starts",
					      fr_format_time(preq->t1, buf, sizeof(buf)));
			return -1;
		}
	} else {
		*error = fr_ipc_error("attach needs \"window_ns\" or \"from_ns\"");
		return -1;
	}
	if (get_targets(req, "attach", preq, error) < 0)
		return -1;
	n = get_events(req, "attach", preq->events, error);
	if (n < 0)
		return -1;
	preq->nevents = (uint32_t)n;
	if (check_events(d, preq->events, n, "attach", privileged, warn, warnlen, error) < 0)
		return -1;
	format = cJSON_GetObjectItemCaseSensitive(req, "format");
	if (format && !cJSON_IsNull(format)) {
		int f = cJSON_IsString(format) ? fr_profile_format_parse(format->valuestring)
					       : -EINVAL;
		if (f < 0) {
			*error = fr_ipc_error("attach: \"format\" must be one of: "
					      FR_PROFILE_FORMAT_NAMES);
			return -1;
		}
		preq->format = (enum fr_profile_format)f;
	}
	preq->hz = (uint32_t)hz;
	return 0;
}

/* Writes the profile of `preq` into the client's descriptor `fd` with
 * output deadlines. Returns NULL with *res and *written filled, or an
 * error reply. */
static cJSON *attach_output(struct daemon *d, const struct fr_profile_request *preq, int fd,
			    struct fr_ipc_peer *peer, struct fr_profile_result *res,
			    uint64_t *written)
{
	struct fr_uring *uring = NULL;
	struct fr_uring_writer *w = malloc(sizeof(*w));
	cJSON *resp = NULL;
	char err[512] = "";
	int ret;

	ret = w ? fr_uring_open(&uring, 8) : -ENOMEM;
	if (ret < 0) {
		resp = fr_ipc_error("attach: cannot set up the output: %s", strerror(-ret));
		goto out;
	}
	fr_uring_writer_init(w, uring, fd);
	fr_uring_writer_limit(w, OUTPUT_STALL_NS, OUTPUT_TOTAL_NS, peer->sock);
	ret = fr_profile_write(d->ring, preq, fr_uring_writer_write, w, res, err, sizeof(err));
	if (ret == 0)
		ret = fr_uring_writer_flush(w);
	*written = w->written;
	if (ret == -ETIMEDOUT)
		resp = fr_ipc_error("attach: the output took no bytes for %lld s (or the whole "
				    "profile not within %lld s): is anything reading it? Gave up",
				    (long long)(OUTPUT_STALL_NS / 1000000000LL),
				    (long long)(OUTPUT_TOTAL_NS / 1000000000LL));
	else if (ret == -EOPNOTSUPP)
		resp = fr_ipc_error("attach: the output is a device that takes no non-blocking "
				    "writes; write to a file or a pipe (| cat)");
	else if (ret < 0)
		resp = fr_ipc_error("attach: %s", err[0] ? err : strerror(-ret));
out:
	fr_uring_close(uring);
	free(w);
	return resp;
}

/* The answer to an attach that wrote its profile. */
static cJSON *attach_reply(const struct fr_profile_request *preq,
			   const struct fr_profile_result *res, uint64_t written, const char *warn)
{
	char name[FR_EVENT_NAME_MAX], line[512];
	cJSON *resp = fr_ipc_ok(), *warnings, *events;

	if (!resp)
		return NULL;
	fr_ipc_add_int(resp, "samples", (int64_t)res->samples_kept);
	fr_ipc_add_int(resp, "samples_in_window", (int64_t)res->samples_seen);
	fr_ipc_add_int(resp, "stacks", (int64_t)res->stacks);
	fr_ipc_add_int(resp, "bytes", (int64_t)written);
	fr_ipc_add_int(resp, "hz", res->hz);
	fr_ipc_add_int(resp, "lost", (int64_t)res->lost);
	fr_ipc_add_int(resp, "t0_ns", (int64_t)preq->t0);
	fr_ipc_add_int(resp, "t1_ns", (int64_t)preq->t1);
	fr_ipc_add_int(resp, "covered_t0_ns", (int64_t)res->covered_t0);
	events = cJSON_AddArrayToObject(resp, "events");
	for (uint32_t e = 0; events && e < res->nevents; e++) {
		const struct fr_profile_event_result *er = &res->events[e];
		cJSON *ev = cJSON_CreateObject();

		if (!ev)
			break;
		cJSON_AddItemToArray(events, ev);
		cJSON_AddStringToObject(ev, "event", fr_event_format(er->event, name, sizeof(name)));
		fr_ipc_add_int(ev, "hz", er->hz);
		fr_ipc_add_int(ev, "samples", (int64_t)er->samples_kept);
		fr_ipc_add_int(ev, "samples_in_window", (int64_t)er->samples_seen);
		fr_ipc_add_int(ev, "lost", (int64_t)er->lost);
		fr_ipc_add_int(ev, "throttled", (int64_t)er->throttled);
		fr_ipc_add_int(ev, "truncated", (int64_t)er->truncated);
	}
	if (preq->note)
		cJSON_AddStringToObject(resp, "incomplete", preq->note);
	warnings = cJSON_AddArrayToObject(resp, "warnings");
	if (warnings && warn[0])
		cJSON_AddItemToArray(warnings, cJSON_CreateString(warn));
	if (warnings && res->warning[0])
		cJSON_AddItemToArray(warnings, cJSON_CreateString(res->warning));
	if (warnings && preq->has_uid) {
		snprintf(line, sizeof(line), "the profile holds only your own processes (uid %u); "
			 "root and members of socket.admin_group see the whole machine", preq->uid);
		cJSON_AddItemToArray(warnings, cJSON_CreateString(line));
	}
	return resp;
}

static cJSON *handle_attach(struct daemon *d, const cJSON *req, int fd, struct fr_ipc_peer *peer)
{
	int privileged = daemon_peer_privileged(d, peer), flags;
	struct fr_profile_request preq;
	struct fr_profile_result res;
	int64_t reserved = 0;
	uint64_t written = 0;
	char warn[512] = "";
	cJSON *resp = NULL;

	memset(&preq, 0, sizeof(preq));
	if (fd < 0)
		return fr_ipc_error("attach needs the output file passed with the request");
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
		resp = fr_ipc_error("attach: the output descriptor is not open for writing");
		goto out;
	}
	if (attach_parse(d, req, privileged, &preq, warn, sizeof(warn), &resp) < 0)
		goto out;
	preq.version = FR_VERSION;
	/* From the credentials, never from the request: a user sees the
	 * processes it ran, whatever it asks for. */
	if (!privileged) {
		preq.has_uid = 1;
		preq.uid = (uint32_t)peer->uid;
	}
	/* Samples up to the request must be in the ring before reading it. */
	if (daemon_flush_barrier(d) < 0) {
		fr_log_warn("flush before attach timed out; the last second may be missing");
		preq.note = FLUSH_NOTE;
	}
	reserved = daemon_query_reserve(d, &preq);
	if (reserved < 0) {
		reserved = 0;
		resp = daemon_query_busy(d, "attach");
		goto out;
	}
	/* Work for a client that hung up stops at the next chunk. */
	preq.stop = fr_ipc_peer_gone;
	preq.stop_arg = peer;
	resp = attach_output(d, &preq, fd, peer, &res, &written);
	if (!resp)
		resp = attach_reply(&preq, &res, written, warn);
out:
	close(fd);
	daemon_query_release(d, preq.has_uid, reserved);
	return resp;
}

/* ---- dumps ------------------------------------------------------------- */

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
		for (uint32_t e = 0; e < sess->nevents && e < FR_PROFILE_MAX_EVENTS; e++)
			preq->events[preq->nevents++] = sess->events[e].event;
		for (uint32_t i = 0; i < sess->npids && i < FR_PROFILE_MAX_PIDS; i++)
			preq->pids[preq->npids++] = sess->pids[i];
		for (uint32_t i = 0; i < sess->ncomms && i < FR_PROFILE_MAX_COMMS; i++)
			snprintf(preq->comms[preq->ncomms++], FR_PROFILE_COMM_MAX, "%s",
				 sess->comms[i]);
		snprintf(preq->cgroup, sizeof(preq->cgroup), "%s", sess->cgroup);
		preq->has_uid = sess->has_uid;
		preq->uid = sess->uid;
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
	dr->profile = preq;
	return 0;
}

/* The trigger engine's callback: writes the window of `fire` for the
 * session's events and targets into the dumps directory. Runs on the
 * trigger thread (or a manual dump's connection thread). */
int daemon_dump(void *arg, const struct fr_trigger_fire *fire, char *out,
		       size_t outlen)
{
	struct daemon *d = arg;
	struct fr_profile_request *preq = calloc(1, sizeof(*preq));
	struct fr_dump_request dr = {0};
	char path[4096], err[512], dir[4096];
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

	/* Samples up to the end of the window must be in the ring. */
	if (daemon_flush_barrier(d) < 0) {
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
			fr_log_warn("manual dump of session %s refused: query memory busy",
				    fire->session);
			return -EAGAIN;
		}
		fr_log_warn("dump of session %s (%s): the query memory is busy; writing it anyway",
			    fire->session, fire->kind);
	}
	ret = fr_dumps_write(d->ring, &dr, path, sizeof(path), err, sizeof(err));
	daemon_query_release(d, preq->has_uid, reserved);
	free(preq);
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

/* Whether a user who is not privileged is among the session's "users". */
static int may_dump(struct daemon *d, const char *session, uid_t uid)
{
	int ok = 0;

	pthread_mutex_lock(&d->config_lock);
	for (uint32_t i = 0; i < d->config->nsessions; i++) {
		const struct fr_config_session *sess = &d->config->sessions[i];

		if (strcmp(sess->name, session) != 0)
			continue;
		for (uint32_t k = 0; k < sess->nusers; k++)
			if (sess->users[k] == (uint32_t)uid)
				ok = 1;
	}
	pthread_mutex_unlock(&d->config_lock);
	return ok;
}

/* flightrec dump --session NAME: fires the session by hand. A dump holds
 * whatever the session targets, of every user, and costs the daemon a
 * write; so only root, the admin group and the session's "users" may. */
static cJSON *handle_dump(struct daemon *d, const cJSON *req, const struct fr_ipc_peer *peer)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, "session");
	struct fr_trigger_fire fire;
	char path[4096] = "";
	cJSON *resp = NULL;
	int64_t window = 0;
	int ret;

	if (!cJSON_IsString(name) || !name->valuestring[0])
		return fr_ipc_error("dump: \"session\" must name a session");
	if (get_int(req, "dump", "window_ns", 1000000000LL, 3600000000000LL, &window, &resp) < 0)
		return resp;
	if (!daemon_peer_privileged(d, peer) && !may_dump(d, name->valuestring, peer->uid)) {
		fr_log_info("refused a dump of session %s to uid %u (pid %d): not among its users",
			    name->valuestring, (unsigned)peer->uid, (int)peer->pid);
		return fr_ipc_error("dump: uid %u may not dump session \"%s\": only root, the "
				    "admin group (socket.admin_group) and the session's \"users\" "
				    "may", (unsigned)peer->uid, name->valuestring);
	}
	if (!d->triggers)
		return fr_ipc_error("dump: this recorder runs without triggers (see its log)");
	memset(&fire, 0, sizeof(fire));
	ret = fr_triggers_manual(d->triggers, name->valuestring, window, &fire, path,
				 sizeof(path));
	/* Only the engine's own refusals leave `path` empty; a failed dump
	 * says why there, whatever its errno (a rename's ENOENT is no
	 * missing session). */
	if (ret == -ENOENT && !path[0])
		return fr_ipc_error("dump: no session named \"%s\" (see flightrec sessions)",
				    name->valuestring);
	if (ret == -EBUSY && !path[0])
		return fr_ipc_error("dump of session %s refused: busy, a dump of it requested by "
				    "hand is being written; try again when it is done",
				    name->valuestring);
	if (ret == -EAGAIN && !path[0])
		return daemon_query_busy(d, "dump");
	if (ret < 0)
		return fr_ipc_error("dump of session %s failed: %s", name->valuestring,
				    path[0] ? path : strerror(-ret));
	resp = fr_ipc_ok();
	if (!resp)
		return NULL;
	cJSON_AddStringToObject(resp, "path", path);
	fr_ipc_add_int(resp, "t0_ns", fire.t0_ns);
	fr_ipc_add_int(resp, "t1_ns", fire.t1_ns);
	return resp;
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
static cJSON *consume_reply(struct daemon *d, const struct fr_consumer *c, int64_t start,
			    const char *capped)
{
	char name[FR_EVENT_NAME_MAX];
	cJSON *resp = fr_ipc_ok(), *events, *warnings;

	if (!resp)
		return NULL;
	warnings = cJSON_AddArrayToObject(resp, "warnings");
	if (warnings && capped[0])
		cJSON_AddItemToArray(warnings, cJSON_CreateString(capped));
	fr_ipc_add_int(resp, "start_ns", start);
	events = cJSON_AddArrayToObject(resp, "events");
	for (uint32_t i = 0; events && i < c->nevents; i++) {
		cJSON *ev = cJSON_CreateObject();

		if (!ev)
			break;
		cJSON_AddItemToArray(events, ev);
		cJSON_AddStringToObject(ev, "event", fr_event_format(c->events[i], name, sizeof(name)));
		fr_ipc_add_int(ev, "hz", c->hz[i]);
		fr_ipc_add_int(ev, "recording_hz", fr_sources_hz(&d->sources, c->events[i]));
	}
	return resp;
}

static cJSON *handle_consume(struct daemon *d, const cJSON *req, struct fr_ipc_peer *peer)
{
	uint32_t max_rate = __atomic_load_n(&d->max_rate_hz, __ATOMIC_RELAXED), rate;
	int privileged = daemon_peer_privileged(d, peer);
	char failed[512] = "", name[FR_EVENT_NAME_MAX], capped[256] = "";
	struct fr_consumer *c;
	cJSON *resp = NULL;
	int64_t hz = 0, start;
	int n;

	if (peer->hold)
		return fr_ipc_error("consume: this connection already holds rates; open another "
				    "connection for more");
	if (get_int(req, "consume", "hz", 0, INT32_MAX, &hz, &resp) < 0)
		return resp;
	if (hz > max_rate)
		return fr_ipc_error("consume: a rate of %lld Hz is above this recorder's limit of "
				    "%u Hz (limits.max_rate_hz)", (long long)hz, max_rate);
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	n = get_events(req, "consume", c->events, &resp);
	if (n < 0) {
		free(c);
		return resp;
	}
	c->nevents = (uint32_t)n;
	c->follows_only = !privileged;
	if (!privileged && check_follow_only(d, c, failed, sizeof(failed)) < 0) {
		free(c);
		return fr_ipc_error("%s", failed);
	}
	rate = consume_rate(d, hz, privileged, capped, sizeof(capped));
	for (int i = 0; i < n; i++)
		c->hz[i] = fr_event_has_rate(c->events[i]) ? rate : 0;
	snprintf(c->name, sizeof(c->name), "client pid %d", (int)peer->pid);
	c->uid = peer->uid;
	if (fr_sources_wait_reconciled(&d->sources, fr_consumer_add(&d->sources, c)) < 0) {
		fr_consumer_remove(&d->sources, c);
		return fr_ipc_error("consume: the recorder did not apply the rates in time");
	}
	/* Rates take effect at the next sample of each CPU; a window that
	 * starts now has them throughout. */
	start = fr_now_real_ns();
	for (int i = 0; i < n && !failed[0]; i++)
		fr_sources_state(&d->sources, c->events[i], failed, sizeof(failed));
	if (failed[0]) {
		fr_consumer_remove(&d->sources, c);
		return fr_ipc_error("%s", failed);
	}
	peer->hold = c;
	peer->release = fr_consumer_release;
	fr_log_info("%s (uid %u) asks for %s%s at %lld Hz%s%s", c->name, (unsigned)peer->uid,
		    fr_event_format(c->events[0], name, sizeof(name)), n > 1 ? " and more" : "",
		    (long long)c->hz[0], capped[0] ? ": " : "", capped);
	return consume_reply(d, c, start, capped);
}

cJSON *daemon_handle_request(void *arg, const char *cmd, const cJSON *req, int fd,
			     struct fr_ipc_peer *peer)
{
	struct daemon *d = arg;

	if (strcmp(cmd, "attach") == 0)
		return handle_attach(d, req, fd, peer);
	if (fd >= 0)
		close(fd);
	if (strcmp(cmd, "status") == 0)
		return daemon_handle_status(d, peer);
	if (strcmp(cmd, "sessions") == 0)
		return daemon_handle_sessions(d, peer);
	if (strcmp(cmd, "consume") == 0)
		return handle_consume(d, req, peer);
	if (strcmp(cmd, "dump") == 0)
		return handle_dump(d, req, peer);
	return fr_ipc_error("unknown request \"%s\" (this recorder answers: attach, consume, "
			    "dump, status, sessions)", cmd);
}

