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

/* The configuration in force as JSON (parsed), or NULL. */
static cJSON *config_snapshot(struct daemon *d)
{
	char *text;
	cJSON *obj;

	pthread_mutex_lock(&d->config_lock);
	text = fr_config_to_json(d->config);
	pthread_mutex_unlock(&d->config_lock);
	obj = text ? cJSON_Parse(text) : NULL;
	free(text);
	return obj;
}

/* Settings a reload reads but the recorder applies only at its start
 * (recorder/ingest/ingest.c says the same in its log). */
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

/* A value for a person, cut to fit a change line. */
static void value_text(const cJSON *v, char *buf, size_t len)
{
	char *text = v ? cJSON_PrintUnformatted(v) : NULL;

	snprintf(buf, len, "%s", v ? (text ? text : "?") : "(none)");
	if (text && strlen(text) >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
	cJSON_free(text);
}

/* The member of array `arr` whose "name" is `name`, or NULL. */
static const cJSON *by_name(const cJSON *arr, const char *name)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");

		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
			return it;
	}
	return NULL;
}

static int named_objects(const cJSON *arr)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr)
		if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(it, "name")))
			return 0;
	return 1;
}

static void diff(struct fr_ipc_reload_reply *r, const char *path, const cJSON *a, const cJSON *b,
		 int depth);

/* Sessions (named objects) are matched by name, so removing the first
 * does not read as every other one changing. */
static void diff_named(struct fr_ipc_reload_reply *r, const char *path, const cJSON *a,
		       const cJSON *b, int depth)
{
	char sub[256];
	const cJSON *it;

	cJSON_ArrayForEach(it, a) {
		const char *name = cJSON_GetObjectItemCaseSensitive(it, "name")->valuestring;
		const cJSON *other = by_name(b, name);

		snprintf(sub, sizeof(sub), "%s[%s]", path, name);
		if (!other)
			fr_ipc_reload_change(r, "%s: removed", sub);
		else
			diff(r, sub, it, other, depth + 1);
	}
	cJSON_ArrayForEach(it, b) {
		const char *name = cJSON_GetObjectItemCaseSensitive(it, "name")->valuestring;

		if (!by_name(a, name))
			fr_ipc_reload_change(r, "%s[%s]: added", path, name);
	}
}

/* Adds to `r` each setting that differs between `a` and `b` (either may
 * be NULL), by its JSON path under `path`. */
static void diff(struct fr_ipc_reload_reply *r, const char *path, const cJSON *a, const cJSON *b,
		 int depth)
{
	char sub[256], va[96], vb[96];
	const cJSON *it;

	if (a && b && cJSON_Compare(a, b, 1))
		return;
	if (depth < 8 && cJSON_IsObject(a) && cJSON_IsObject(b)) {
		cJSON_ArrayForEach(it, a) {
			snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "." : "", it->string);
			diff(r, sub, it, cJSON_GetObjectItemCaseSensitive(b, it->string),
			     depth + 1);
		}
		cJSON_ArrayForEach(it, b)
			if (!cJSON_GetObjectItemCaseSensitive(a, it->string)) {
				snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "." : "",
					 it->string);
				diff(r, sub, NULL, it, depth + 1);
			}
		return;
	}
	if (depth < 8 && cJSON_IsArray(a) && cJSON_IsArray(b) && named_objects(a) &&
	    named_objects(b) && cJSON_GetArraySize(a) + cJSON_GetArraySize(b) > 0) {
		diff_named(r, path, a, b, depth);
		return;
	}
	/* A session's events, by position while their number stays. */
	if (depth < 8 && cJSON_IsArray(a) && cJSON_IsArray(b) &&
	    cJSON_GetArraySize(a) == cJSON_GetArraySize(b) && cJSON_IsObject(a->child)) {
		const cJSON *jt = b->child;
		int i = 0;

		for (it = a->child; it && jt; it = it->next, jt = jt->next, i++) {
			snprintf(sub, sizeof(sub), "%s[%d]", path, i);
			diff(r, sub, it, jt, depth + 1);
		}
		return;
	}
	value_text(a, va, sizeof(va));
	value_text(b, vb, sizeof(vb));
	fr_ipc_reload_change(r, "%s: %s -> %s%s", path, va, vb,
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

cJSON *daemon_handle_reload(struct daemon *d, const struct fr_ipc_peer *peer)
{
	struct fr_ipc_reload_reply *reply;
	cJSON *before, *after, *resp;
	char why[1024] = "";
	uint64_t begun;
	int ret;

	if (peer->uid != 0 && peer->uid != geteuid()) {
		fr_log_info("refused a reload to uid %u (pid %d)", (unsigned)peer->uid,
			    (int)peer->pid);
		return fr_ipc_error("reload: only root and the recorder's own user (uid %u) may "
				    "reload its configuration",
				    (unsigned)geteuid());
	}
	if (!d->opts->config_path)
		return fr_ipc_error("reload: the recorder runs the embedded default "
				    "configuration; there is no file to reload (start it with "
				    "--config FILE)");
	before = config_snapshot(d);
	pthread_mutex_lock(&d->reload_lock);
	begun = d->reload_begun;
	pthread_mutex_unlock(&d->reload_lock);
	fr_log_info("reload asked by uid %u (pid %d)", (unsigned)peer->uid, (int)peer->pid);
	/* Process-directed: the signalfd of the ingest thread takes it. */
	if (kill(getpid(), SIGHUP) < 0) {
		cJSON_Delete(before);
		return fr_ipc_error("reload: cannot signal the ingest thread: %s", strerror(errno));
	}
	ret = wait_reload(d, begun, why, sizeof(why));
	if (ret == -ETIMEDOUT) {
		cJSON_Delete(before);
		return fr_ipc_error("reload: the ingest thread did not take the reload within %lld "
				    "s (see flightrec status: ingest); it reloads when it can",
				    (long long)(RELOAD_WAIT_NS / FR_NS_PER_S));
	}
	if (ret < 0) {
		cJSON_Delete(before);
		return fr_ipc_error("reload of %s rejected; the running configuration stays: %s",
				    d->opts->config_path, why);
	}
	after = config_snapshot(d);
	reply = calloc(1, sizeof(*reply));
	if (!reply || !before || !after) {
		free(reply);
		cJSON_Delete(before);
		cJSON_Delete(after);
		return fr_ipc_error("reload: done, but out of memory listing what changed");
	}
	snprintf(reply->config, sizeof(reply->config), "%s", d->opts->config_path);
	diff(reply, "", before, after, 0);
	resp = fr_ipc_reload_reply_encode(reply);
	free(reply);
	cJSON_Delete(before);
	cJSON_Delete(after);
	return resp;
}

/* The refusal of a dump or trigger (`verb`) of `session` by `peer`, or
 * NULL when it may: root, the admin group and the session's "users" may,
 * and only when the recorder runs its triggers. `*refused` says which. */
static cJSON *fire_refusal(struct daemon *d, const struct fr_ipc_peer *peer, const char *verb,
			   const char *session, int *refused)
{
	*refused = 1;
	if (!daemon_peer_privileged(d, peer) && !daemon_may_dump(d, session, peer->uid)) {
		fr_log_info("refused a %s of session %s to uid %u (pid %d): not among its users",
			    verb, session, (unsigned)peer->uid, (int)peer->pid);
		return fr_ipc_error("%s: uid %u may not %s session \"%s\": only root, the admin "
				    "group (socket.admin_group) and the session's \"users\" may",
				    verb, (unsigned)peer->uid, verb, session);
	}
	if (!d->triggers)
		return fr_ipc_error("%s: this recorder runs without triggers (see its log)", verb);
	*refused = 0;
	return NULL;
}

/* The reply to a dump or trigger (`verb`) of `session` that the trigger
 * engine answered with `ret`, `path` and `fire`. Only the engine's own
 * refusals leave `path` empty; a failed dump says why there, whatever its
 * errno (a rename's ENOENT is no missing session). */
static cJSON *fire_reply(struct daemon *d, const char *verb, const char *session, int ret,
			 const char *path, const struct fr_trigger_fire *fire)
{
	struct fr_ipc_dump_reply *reply;
	cJSON *resp;

	if (ret == -ENOENT && !path[0])
		return fr_ipc_error("%s: no session named \"%s\" (see flightrec sessions)", verb,
				    session);
	if (ret == -EBUSY && !path[0])
		return fr_ipc_error("%s of session %s refused: busy, a dump of it requested by "
				    "hand is being written; try again when it is done",
				    verb, session);
	if (ret == -EAGAIN && !path[0])
		return daemon_query_busy(d, verb);
	if (ret < 0)
		return fr_ipc_error("%s of session %s failed: %s", verb, session,
				    path[0] ? path : strerror(-ret));
	reply = calloc(1, sizeof(*reply));
	if (!reply)
		return NULL;
	snprintf(reply->path, sizeof(reply->path), "%s", path);
	reply->t0_ns = fire->t0_ns;
	reply->t1_ns = fire->t1_ns;
	resp = fr_ipc_dump_reply_encode(reply);
	free(reply);
	return resp;
}

/* flightrec dump --session NAME: fires the session by hand. A dump holds
 * whatever the session targets, of every user, and costs the daemon a
 * write; so only root, the admin group and the session's "users" may. */
cJSON *daemon_handle_dump(struct daemon *d, const cJSON *req, const struct fr_ipc_peer *peer)
{
	struct fr_ipc_dump_req dq;
	struct fr_trigger_fire fire;
	char path[4096] = "", err[512];
	cJSON *refusal;
	int refused, ret;

	if (fr_ipc_dump_req_decode(req, &dq, err, sizeof(err)) < 0)
		return fr_ipc_error("%s", err);
	refusal = fire_refusal(d, peer, "dump", dq.session, &refused);
	if (refused)
		return refusal;
	memset(&fire, 0, sizeof(fire));
	ret = fr_triggers_manual(d->triggers, dq.session, dq.window_ns, &fire, path, sizeof(path));
	return fire_reply(d, "dump", dq.session, ret, path, &fire);
}

/* flightrec trigger: as a dump by hand, with the user's reason in it. */
cJSON *daemon_handle_trigger(struct daemon *d, const cJSON *req, const struct fr_ipc_peer *peer)
{
	struct fr_ipc_trigger_req tq;
	struct fr_trigger_fire fire;
	char path[4096] = "", err[512];
	cJSON *refusal;
	int refused, ret;

	if (fr_ipc_trigger_req_decode(req, &tq, err, sizeof(err)) < 0)
		return fr_ipc_error("%s", err);
	refusal = fire_refusal(d, peer, "trigger", tq.session, &refused);
	if (refused)
		return refusal;
	memset(&fire, 0, sizeof(fire));
	ret = fr_triggers_manual_reason(d->triggers, tq.session, tq.window_ns, tq.reason, &fire,
					path, sizeof(path));
	return fire_reply(d, "trigger", tq.session, ret, path, &fire);
}
