/* The effective configuration printed back as JSON (`flightrecd
 * --check-config`): every value, defaults included, in the form the
 * parser accepts, so that the output is itself a valid configuration
 * file.
 */
#include "config/config_int.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parse.h"
#include "core/sample.h"

/* A size as the config accepts it: the friendly form when it reads back
 * exactly, else plain bytes. */
static char *size_text(uint64_t bytes, char *buf, size_t len)
{
	uint64_t back;

	fr_format_size(bytes, buf, len);
	if (fr_parse_size(buf, &back) < 0 || back != bytes)
		snprintf(buf, len, "%" PRIu64 "B", bytes);
	return buf;
}

/* Every key of every trigger, defaults included, so that the printed
 * configuration shows what each one does. Returns false out of memory. */
static bool add_triggers(cJSON *js, const struct fr_config_session *sess)
{
	cJSON *arr = cJSON_AddArrayToObject(js, "triggers");
	char buf[64];

	if (!arr)
		return false;
	for (uint32_t i = 0; i < sess->ntriggers; i++) {
		const struct fr_config_trigger *t = &sess->triggers[i];
		cJSON *o = cJSON_CreateObject();

		if (!o)
			return false;
		cJSON_AddItemToArray(arr, o);
		if (t->kind > FR_TRIGGER_EXIT ||
		    !cJSON_AddStringToObject(o, "on", fr_config_trigger_kind(t->kind)))
			return false;
		if (t->kind == FR_TRIGGER_SIGNAL &&
		    !cJSON_AddStringToObject(o, "signal", fr_config_signal_name(t->signal, buf, sizeof(buf))))
			return false;
		if (t->kind == FR_TRIGGER_CPU_ABOVE &&
		    (!cJSON_AddNumberToObject(o, "percent", t->percent) ||
		     !cJSON_AddStringToObject(o, "for",
					      config_duration_text(t->for_ns, buf, sizeof(buf)))))
			return false;
		if (!cJSON_AddStringToObject(o, "window",
					     config_duration_text(t->window_ns, buf, sizeof(buf))) ||
		    !cJSON_AddStringToObject(o, "after",
					     config_duration_text(t->after_ns, buf, sizeof(buf))) ||
		    !cJSON_AddStringToObject(o, "cooldown",
					     config_duration_text(t->cooldown_ns, buf, sizeof(buf))))
			return false;
	}
	return true;
}

char *fr_config_to_json(const struct fr_config *cfg)
{
	cJSON *root, *ring, *dumps, *limits, *sessions;
	char buf[64];
	char *text = NULL, *out = NULL;

	root = cJSON_CreateObject();
	if (!root)
		return NULL;

	ring = cJSON_AddObjectToObject(root, "ring");
	if (!ring)
		goto out;
	if (cfg->ring_path && !cJSON_AddStringToObject(ring, "path", cfg->ring_path))
		goto out;
	if (!cJSON_AddStringToObject(ring, "size", size_text(cfg->ring_size, buf, sizeof(buf))) ||
	    !cJSON_AddStringToObject(ring, "segment",
				     size_text(cfg->segment_size, buf, sizeof(buf))) ||
	    !cJSON_AddStringToObject(ring, "sync", cfg->sync_ns < 0 ? "off" :
						   config_duration_text(cfg->sync_ns, buf, sizeof(buf))))
		goto out;
	if (cfg->max_age_ns > 0 &&
	    !cJSON_AddStringToObject(ring, "max_age", config_duration_text(cfg->max_age_ns, buf, sizeof(buf))))
		goto out;
	if (cfg->has_socket_group || cfg->has_admin_group) {
		cJSON *sock = cJSON_AddObjectToObject(root, "socket");

		if (!sock || (cfg->socket_path &&
			      !cJSON_AddStringToObject(sock, "path", cfg->socket_path)) ||
		    (cfg->has_socket_group &&
		     !cJSON_AddNumberToObject(sock, "group", cfg->socket_gid)) ||
		    (cfg->has_admin_group &&
		     !cJSON_AddNumberToObject(sock, "admin_group", cfg->admin_gid)))
			goto out;
	} else if (cfg->socket_path && !cJSON_AddStringToObject(root, "socket", cfg->socket_path)) {
		goto out;
	}

	dumps = cJSON_AddObjectToObject(root, "dumps");
	if (!dumps || (cfg->dumps_dir && !cJSON_AddStringToObject(dumps, "dir", cfg->dumps_dir)) ||
	    !cJSON_AddNumberToObject(dumps, "keep", cfg->dumps_keep))
		goto out;
	if (cfg->dumps_max_bytes &&
	    !cJSON_AddStringToObject(dumps, "max_bytes",
				     size_text(cfg->dumps_max_bytes, buf, sizeof(buf))))
		goto out;
	snprintf(buf, sizeof(buf), "%04o", (unsigned)cfg->dumps_mode);
	if (cfg->dumps_mode != DEFAULT_DUMPS_MODE && !cJSON_AddStringToObject(dumps, "mode", buf))
		goto out;

	limits = cJSON_AddObjectToObject(root, "limits");
	if (!limits || !cJSON_AddNumberToObject(limits, "max_rate_hz", cfg->max_rate_hz) ||
	    !cJSON_AddNumberToObject(limits, "max_clients", cfg->max_clients) ||
	    !cJSON_AddNumberToObject(limits, "user_max_rate_hz", cfg->user_max_rate_hz) ||
	    !cJSON_AddStringToObject(limits, "query_memory",
				     size_text(cfg->query_memory, buf, sizeof(buf))))
		goto out;

	sessions = cJSON_AddArrayToObject(root, "sessions");
	if (!sessions)
		goto out;
	for (uint32_t s = 0; s < cfg->nsessions; s++) {
		const struct fr_config_session *sess = &cfg->sessions[s];
		cJSON *js = cJSON_CreateObject(), *events;

		if (!js)
			goto out;
		cJSON_AddItemToArray(sessions, js);
		if (!cJSON_AddStringToObject(js, "name", sess->name))
			goto out;
		events = cJSON_AddArrayToObject(js, "events");
		if (!events)
			goto out;
		for (uint32_t e = 0; e < sess->nevents; e++) {
			cJSON *ev = cJSON_CreateObject();
			char name[FR_EVENT_NAME_MAX];

			if (!ev)
				goto out;
			cJSON_AddItemToArray(events, ev);
			if (!cJSON_AddStringToObject(ev, "event",
						     fr_event_format(sess->events[e].event, name,
								     sizeof(name))) ||
			    (fr_event_has_rate(sess->events[e].event) &&
			     !cJSON_AddNumberToObject(ev, "hz", sess->events[e].hz)))
				goto out;
		}
		if (sess->npids || sess->ncomms || sess->cgroup[0] || sess->has_uid) {
			cJSON *t = cJSON_AddObjectToObject(js, "targets"), *a;

			if (!t)
				goto out;
			if (sess->npids) {
				if (!(a = cJSON_AddArrayToObject(t, "pids")))
					goto out;
				for (uint32_t i = 0; i < sess->npids; i++)
					cJSON_AddItemToArray(a, cJSON_CreateNumber(sess->pids[i]));
			}
			if (sess->ncomms) {
				if (!(a = cJSON_AddArrayToObject(t, "comm")))
					goto out;
				for (uint32_t i = 0; i < sess->ncomms; i++)
					cJSON_AddItemToArray(a, cJSON_CreateString(sess->comms[i]));
			}
			if (sess->cgroup[0] && !cJSON_AddStringToObject(t, "cgroup", sess->cgroup))
				goto out;
			if (sess->has_uid && !cJSON_AddNumberToObject(t, "uid", sess->uid))
				goto out;
		}
		if (sess->nusers) {
			cJSON *a = cJSON_AddArrayToObject(js, "users");

			if (!a)
				goto out;
			for (uint32_t i = 0; i < sess->nusers; i++)
				cJSON_AddItemToArray(a, cJSON_CreateNumber(sess->users[i]));
		}
		if (sess->ntriggers && !add_triggers(js, sess))
			goto out;
	}

	/* Returned to be released with free(), whatever allocator cJSON was
	 * built or hooked with. */
	text = cJSON_Print(root);
	if (text)
		out = strdup(text);
out:
	cJSON_free(text);
	cJSON_Delete(root);
	return out;
}
