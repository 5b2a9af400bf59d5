/* The control requests: `flightrec reload`, `flightrec trigger` and
 * `flightrec dump --session` (which a trigger shares its checks and reply
 * with).
 *
 * A reload is done where SIGHUP's is, on the ingest thread: this file
 * raises SIGHUP at its own process (the daemon reads it from its
 * signalfd, so it reaches this instance only, unlike `kill $(pidof
 * flightrecd)`), waits for a reload that began after the request, and
 * answers with its outcome: the configuration error, or what changed
 * between the configuration in force before and after. A trigger fires a
 * session by hand as `flightrec dump --session` does, with the user's
 * reason in the dump.
 *
 * Who may: reload only root and the daemon's own user (it changes what
 * the whole machine records, and reads a file only they may edit);
 * trigger those who may dump the session (requests.c: root, the admin
 * group, the session's "users").
 */
#include "recorder/daemon_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/util/time.h"
#include "ipc/msg.h"
#include "ipc/msg_ctl.h"
#include "ipc/proto.h"
#include "recorder/triggers/triggers.h"
#include "recorder/requests/peer.h"

/* How long a reload request waits for the ingest thread to take it. */
#define RELOAD_WAIT_NS (10 * FR_NS_PER_S)

int daemon_ctl_init(struct daemon *d)
{
	if (fr_mutex_init_pi(&d->reload_lock) != 0)
		return -1;
	if (fr_mono_cond_init(&d->reload_cond) < 0) {
		pthread_mutex_destroy(&d->reload_lock);
		return -1;
	}
	return 0;
}

void daemon_ctl_fini(struct daemon *d)
{
	pthread_cond_destroy(&d->reload_cond);
	pthread_mutex_destroy(&d->reload_lock);
}

uint64_t daemon_reload_begin(struct daemon *d)
{
	uint64_t seq;

	pthread_mutex_lock(&d->reload_lock);
	seq = ++d->reload_begun;
	pthread_mutex_unlock(&d->reload_lock);
	return seq;
}

void daemon_reload_end(struct daemon *d, uint64_t seq, int ret, const char *why)
{
	pthread_mutex_lock(&d->reload_lock);
	d->reload_ended = seq;
	d->reload_ret = ret;
	snprintf(d->reload_why, sizeof(d->reload_why), "%s", why ? why : "");
	pthread_cond_broadcast(&d->reload_cond);
	pthread_mutex_unlock(&d->reload_lock);
}

/* The configuration in force as JSON text (malloc'd), or NULL. */
static char *config_snapshot(struct daemon *d)
{
	char *text;

	pthread_mutex_lock(&d->config_lock);
	text = fr_config_to_json(d->config);
	pthread_mutex_unlock(&d->config_lock);
	return text;
}

/* Settings a reload reads but the recorder applies only at its start
 * (recorder/reload.c says the same in its log). */
static int at_next_start(const char *path)
{
	static const char *const keys[] = {
		"ring.path",	      "ring.size",
		"ring.segment",	      "socket",
		"socket.path",	      "socket.group",
		"limits.max_clients", "symbols.cache_dir",
		"symbols.cache_size", "symbols.cache_file_max",
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(path, keys[i]) == 0)
			return 1;
	return 0;
}

/* fr_config_diff()'s lines into a reload reply. */
static void add_change(void *arg, const char *path, const char *before, const char *after)
{
	struct fr_ipc_reload_reply *r = arg;

	if (!before)
		fr_ipc_reload_change(r, "%s: %s", path, after);
	else
		fr_ipc_reload_change(r, "%s: %s -> %s%s", path, before, after,
				     at_next_start(path) ? " (at the next start)" : "");
}

/* Waits for a reload that began after `after` ended. Returns its outcome
 * (0 or -errno, with why), or -ETIMEDOUT. */
static int wait_reload(struct daemon *d, uint64_t after, char *why, size_t whylen)
{
	struct timespec deadline;
	int ret = 0;

	fr_mono_deadline(&deadline, RELOAD_WAIT_NS);
	pthread_mutex_lock(&d->reload_lock);
	while (d->reload_ended <= after && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&d->reload_cond, &d->reload_lock, &deadline);
	if (d->reload_ended > after) {
		ret = d->reload_ret;
		snprintf(why, whylen, "%s", d->reload_why);
	} else {
		ret = -ETIMEDOUT;
	}
	pthread_mutex_unlock(&d->reload_lock);
	return ret;
}

/* Asks the ingest thread for a reload and waits for its outcome.
 * Returns 0, or -errno with `call` refused. */
static int reload_now(struct daemon *d, struct fr_ipc_call *call)
{
	char why[1024] = "";
	uint64_t begun;
	int ret;

	pthread_mutex_lock(&d->reload_lock);
	begun = d->reload_begun;
	pthread_mutex_unlock(&d->reload_lock);
	fr_log_info("reload asked by uid %u (pid %d)", (unsigned)call->peer->uid,
		    (int)call->peer->pid);
	/* Process-directed: the signalfd of the ingest thread takes it. */
	if (kill(getpid(), SIGHUP) < 0)
		return fr_ipc_refuse(call, "reload: cannot signal the ingest thread: %s",
				     strerror(errno));
	ret = wait_reload(d, begun, why, sizeof(why));
	if (ret == -ETIMEDOUT)
		return fr_ipc_refuse(call,
				     "reload: the ingest thread did not take the reload within "
				     "%lld s (see flightrec status: ingest); it reloads when it can",
				     (long long)(RELOAD_WAIT_NS / FR_NS_PER_S));
	if (ret < 0)
		return fr_ipc_refuse(call,
				     "reload of %s rejected; the running configuration stays: %s",
				     d->opts->config_path, why);
	return 0;
}

int daemon_handle_reload(void *arg, struct fr_ipc_call *call, struct fr_ipc_reload_reply *reply)
{
	struct daemon *d = arg;
	const struct fr_ipc_peer *peer = call->peer;
	char *before, *after;
	int ret;

	if (!fr_peer_may_reload(peer)) {
		fr_log_info("refused a reload to uid %u (pid %d)", (unsigned)peer->uid,
			    (int)peer->pid);
		return fr_ipc_refuse(call,
				     "reload: only root and the recorder's own user (uid %u) may "
				     "reload its configuration",
				     (unsigned)geteuid());
	}
	if (!d->opts->config_path)
		return fr_ipc_refuse(call, "reload: the recorder runs the embedded default "
					   "configuration; there is no file to reload (start it "
					   "with --config FILE)");
	before = config_snapshot(d);
	ret = reload_now(d, call);
	if (ret < 0) {
		free(before);
		return ret;
	}
	after = config_snapshot(d);
	snprintf(reply->config, sizeof(reply->config), "%s", d->opts->config_path);
	ret = fr_config_diff(before, after, add_change, reply);
	free(before);
	free(after);
	if (ret < 0)
		return fr_ipc_refuse(call, "reload: done, but out of memory listing what changed");
	return 0;
}

/* Refuses a dump or trigger (`verb`) of `session` by the call's peer
 * unless it may: root, the admin group and the session's "users" may,
 * and only when the recorder runs its triggers. Returns 0 or -EPERM. */
static int fire_allowed(struct daemon *d, struct fr_ipc_call *call, const char *verb,
			const char *session)
{
	const struct fr_ipc_peer *peer = call->peer;

	if (!fr_peer_privileged(d->peers, peer) &&
	    !fr_peer_may_dump(d->peers, session, peer->uid)) {
		fr_log_info("refused a %s of session %s to uid %u (pid %d): not among its users",
			    verb, session, (unsigned)peer->uid, (int)peer->pid);
		fr_ipc_refuse(call,
			      "%s: uid %u may not %s session \"%s\": only root, the admin group "
			      "(socket.admin_group) and the session's \"users\" may",
			      verb, (unsigned)peer->uid, verb, session);
		return -EPERM;
	}
	if (!d->triggers) {
		fr_ipc_refuse(call, "%s: this recorder runs without triggers (see its log)", verb);
		return -EPERM;
	}
	return 0;
}

/* The reply to a dump or trigger (`verb`) of `session` that the trigger
 * engine answered with `ret`, `path` and `fire`. Only the engine's own
 * refusals leave `path` empty; a failed dump says why there, whatever its
 * errno (a rename's ENOENT is no missing session). */
static int fire_reply(struct daemon *d, struct fr_ipc_call *call, const char *verb,
		      const char *session, int ret, const char *path,
		      const struct fr_trigger_fire *fire, struct fr_ipc_dump_reply *reply)
{
	if (ret == -ENOENT && !path[0])
		return fr_ipc_refuse(call, "%s: no session named \"%s\" (see flightrec sessions)",
				     verb, session);
	if (ret == -EBUSY && !path[0])
		return fr_ipc_refuse(call,
				     "%s of session %s refused: busy, a dump of it requested by "
				     "hand is being written; try again when it is done",
				     verb, session);
	if (ret == -EAGAIN && !path[0])
		return daemon_query_busy(d, call, verb);
	if (ret < 0)
		return fr_ipc_refuse(call, "%s of session %s failed: %s", verb, session,
				     path[0] ? path : strerror(-ret));
	snprintf(reply->path, sizeof(reply->path), "%s", path);
	reply->t0_ns = fire->t0_ns;
	reply->t1_ns = fire->t1_ns;
	return 0;
}

/* flightrec dump --session NAME: fires the session by hand. A dump holds
 * whatever the session targets, of every user, and costs the daemon a
 * write; so only root, the admin group and the session's "users" may. */
int daemon_handle_dump(void *arg, struct fr_ipc_call *call, const struct fr_ipc_dump_req *dq,
		       struct fr_ipc_dump_reply *r)
{
	struct daemon *d = arg;
	struct fr_trigger_fire fire;
	char path[4096] = "";
	int ret = fire_allowed(d, call, "dump", dq->session);

	if (ret < 0)
		return ret;
	memset(&fire, 0, sizeof(fire));
	ret = fr_triggers_manual(d->triggers, dq->session, dq->window_ns, &fire, path,
				 sizeof(path));
	return fire_reply(d, call, "dump", dq->session, ret, path, &fire, r);
}

/* flightrec trigger: as a dump by hand, with the user's reason in it. */
int daemon_handle_trigger(void *arg, struct fr_ipc_call *call, const struct fr_ipc_trigger_req *tq,
			  struct fr_ipc_dump_reply *r)
{
	struct daemon *d = arg;
	struct fr_trigger_fire fire;
	char path[4096] = "";
	int ret = fire_allowed(d, call, "trigger", tq->session);

	if (ret < 0)
		return ret;
	memset(&fire, 0, sizeof(fire));
	ret = fr_triggers_manual_reason(d->triggers, tq->session, tq->window_ns, tq->reason, &fire,
					path, sizeof(path));
	return fire_reply(d, call, "trigger", tq->session, ret, path, &fire, r);
}
