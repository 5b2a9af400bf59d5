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

#include "core/util/parse.h"
#include "core/store/sample.h"

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
		if (t->kind > FR_TRIGGER_PRESSURE ||
		    !cJSON_AddStringToObject(o, "on", fr_config_trigger_kind(t->kind)))
			return false;
		if (t->kind == FR_TRIGGER_SIGNAL &&
		    !cJSON_AddStringToObject(o, "signal",
					     fr_config_signal_name(t->signal, buf, sizeof(buf))))
			return false;
		if (t->kind == FR_TRIGGER_CPU_ABOVE &&
		    (!cJSON_AddNumberToObject(o, "percent", t->percent) ||
		     !cJSON_AddStringToObject(o, "for",
					      config_duration_text(t->for_ns, buf, sizeof(buf)))))
			return false;
		if (t->kind == FR_TRIGGER_PRESSURE &&
		    (!cJSON_AddStringToObject(o, "resource",
					      fr_config_pressure_resource(t->resource)) ||
		     !cJSON_AddStringToObject(o, "above",
					      fr_config_pressure_above(t, buf, sizeof(buf))) ||
		     !cJSON_AddStringToObject(o, "for",
					      config_duration_text(t->for_ns, buf, sizeof(buf)))))
			return false;
		if (!cJSON_AddStringToObject(o, "window",
					     config_duration_text(t->window_ns, buf,
								  sizeof(buf))) ||
		    !cJSON_AddStringToObject(o, "after",
					     config_duration_text(t->after_ns, buf, sizeof(buf))) ||
		    !cJSON_AddStringToObject(o, "cooldown",
					     config_duration_text(t->cooldown_ns, buf,
								  sizeof(buf))))
			return false;
	}
	return true;
}

static bool add_ring(cJSON *root, const struct fr_config *cfg)
{
	cJSON *ring = cJSON_AddObjectToObject(root, "ring");
	char buf[64];

	if (!ring)
		return false;
	if (cfg->ring_path && !cJSON_AddStringToObject(ring, "path", cfg->ring_path))
		return false;
	if (!cJSON_AddStringToObject(ring, "size", size_text(cfg->ring_size, buf, sizeof(buf))) ||
	    !cJSON_AddStringToObject(ring, "segment",
				     size_text(cfg->segment_size, buf, sizeof(buf))) ||
	    !cJSON_AddStringToObject(ring, "sync",
				     cfg->sync_ns < 0 ? "off"
						      : config_duration_text(cfg->sync_ns, buf,
									     sizeof(buf))))
		return false;
	if (cfg->max_age_ns > 0 &&
	    !cJSON_AddStringToObject(ring, "max_age",
				     config_duration_text(cfg->max_age_ns, buf, sizeof(buf))))
		return false;
	return true;
}

/* "socket" is a plain path unless a group is set, as it is written. */
static bool add_socket(cJSON *root, const struct fr_config *cfg)
{
	if (cfg->has_socket_group || cfg->has_admin_group) {
		cJSON *sock = cJSON_AddObjectToObject(root, "socket");

		if (!sock ||
		    (cfg->socket_path &&
		     !cJSON_AddStringToObject(sock, "path", cfg->socket_path)) ||
		    (cfg->has_socket_group &&
		     !cJSON_AddNumberToObject(sock, "group", cfg->socket_gid)) ||
		    (cfg->has_admin_group &&
		     !cJSON_AddNumberToObject(sock, "admin_group", cfg->admin_gid)))
			return false;
	} else if (cfg->socket_path && !cJSON_AddStringToObject(root, "socket", cfg->socket_path)) {
		return false;
	}
	return true;
}

static bool add_dumps(cJSON *root, const struct fr_config *cfg)
{
	cJSON *dumps = cJSON_AddObjectToObject(root, "dumps");
	char buf[64];

	if (!dumps || (cfg->dumps_dir && !cJSON_AddStringToObject(dumps, "dir", cfg->dumps_dir)) ||
	    !cJSON_AddNumberToObject(dumps, "keep", cfg->dumps_keep))
		return false;
	if (cfg->dumps_max_bytes &&
	    !cJSON_AddStringToObject(dumps, "max_bytes",
				     size_text(cfg->dumps_max_bytes, buf, sizeof(buf))))
		return false;
	snprintf(buf, sizeof(buf), "%04o", (unsigned)cfg->dumps_mode);
	if (cfg->dumps_mode != DEFAULT_DUMPS_MODE && !cJSON_AddStringToObject(dumps, "mode", buf))
		return false;
	return true;
}

static bool add_limits(cJSON *root, const struct fr_config *cfg)
{
	cJSON *limits = cJSON_AddObjectToObject(root, "limits");
	char buf[64];

	return limits && cJSON_AddNumberToObject(limits, "max_rate_hz", cfg->max_rate_hz) &&
	       cJSON_AddNumberToObject(limits, "max_clients", cfg->max_clients) &&
	       cJSON_AddNumberToObject(limits, "user_max_rate_hz", cfg->user_max_rate_hz) &&
	       cJSON_AddStringToObject(limits, "memory",
				       size_text(cfg->memory, buf, sizeof(buf))) &&
	       (!cfg->query_memory ||
		cJSON_AddStringToObject(limits, "query_memory",
					size_text(cfg->query_memory, buf, sizeof(buf)))) &&
	       (!cfg->unwind_table_memory ||
		cJSON_AddStringToObject(limits, "unwind_table_memory",
					size_text(cfg->unwind_table_memory, buf, sizeof(buf))));
}

/* "period" in decimal digits: cJSON prints numbers with 15 significant
 * digits, which would change a period above 10^15 on the way back. */
static bool add_period(cJSON *ev, uint64_t period)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)period);
	return cJSON_AddRawToObject(ev, "period", buf) != NULL;
}

static bool add_events(cJSON *js, const struct fr_config_session *sess)
{
	cJSON *events = cJSON_AddArrayToObject(js, "events");
	char buf[32];

	if (!events)
		return false;
	for (uint32_t e = 0; e < sess->nevents; e++) {
		cJSON *ev = cJSON_CreateObject();
		char name[FR_EVENT_NAME_MAX];

		if (!ev)
			return false;
		cJSON_AddItemToArray(events, ev);
		if (!cJSON_AddStringToObject(ev, "event",
					     fr_event_format(sess->events[e].event, name,
							     sizeof(name))) ||
		    (fr_event_has_rate(sess->events[e].event) && !sess->events[e].period &&
		     !cJSON_AddNumberToObject(ev, "hz", sess->events[e].hz)) ||
		    (sess->events[e].period && !add_period(ev, sess->events[e].period)) ||
		    !cJSON_AddStringToObject(ev, "unwind",
					     sess->events[e].unwind == FR_CONFIG_UNWIND_DWARF
						     ? "dwarf"
						     : "fp") ||
		    (sess->events[e].unwind == FR_CONFIG_UNWIND_DWARF &&
		     !cJSON_AddStringToObject(ev, "stack_copy",
					      size_text(sess->events[e].stack_copy, buf,
							sizeof(buf)))))
			return false;
		if (sess->events[e].event == FR_EVENT_OFFCPU &&
		    (!cJSON_AddStringToObject(ev, "mechanism",
					      sess->events[e].mechanism == FR_CONFIG_OFFCPU_PERF
						      ? "perf"
						      : "bpf") ||
		     (sess->events[e].mechanism == FR_CONFIG_OFFCPU_BPF &&
		      !cJSON_AddStringToObject(ev, "min_wait",
					       config_duration_text(sess->events[e].min_wait_ns,
								    buf, sizeof(buf))))))
			return false;
		if (sess->events[e].event == FR_EVENT_ALLOC &&
		    !cJSON_AddStringToObject(ev, "mean",
					     size_text(sess->events[e].mean, buf, sizeof(buf))))
			return false;
	}
	return true;
}

/* "targets", only when the session has some. */
static bool add_targets(cJSON *js, const struct fr_targets *tg)
{
	cJSON *t, *a;

	if (!fr_targets_given(tg) && !fr_targets_labels_given(tg))
		return true;
	t = cJSON_AddObjectToObject(js, "targets");
	if (!t)
		return false;
	if (tg->npids) {
		if (!(a = cJSON_AddArrayToObject(t, "pids")))
			return false;
		for (uint32_t i = 0; i < tg->npids; i++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(tg->pids[i]));
	}
	if (tg->ncomms) {
		if (!(a = cJSON_AddArrayToObject(t, "comm")))
			return false;
		for (uint32_t i = 0; i < tg->ncomms; i++)
			cJSON_AddItemToArray(a, cJSON_CreateString(tg->comms[i]));
	}
	if (tg->cgroup[0] && !cJSON_AddStringToObject(t, "cgroup", tg->cgroup))
		return false;
	if (tg->has_uid && !cJSON_AddNumberToObject(t, "uid", tg->uid))
		return false;
	if (tg->nlabels) {
		char kv[2 * FR_LIMIT_LABEL_LEN];

		if (!(a = cJSON_AddArrayToObject(t, "labels")))
			return false;
		for (uint32_t i = 0; i < tg->nlabels && i < FR_LIMIT_LABELS; i++) {
			snprintf(kv, sizeof(kv), "%.*s=%.*s", FR_LIMIT_LABEL_LEN - 1,
				 tg->label_keys[i], FR_LIMIT_LABEL_LEN - 1, tg->label_values[i]);
			cJSON_AddItemToArray(a, cJSON_CreateString(kv));
		}
	}
	if (tg->label_key[0] && !cJSON_AddStringToObject(t, "label_key", tg->label_key))
		return false;
	return true;
}

static bool add_session(cJSON *sessions, const struct fr_config_session *sess)
{
	cJSON *js = cJSON_CreateObject();

	if (!js)
		return false;
	cJSON_AddItemToArray(sessions, js);
	if (!cJSON_AddStringToObject(js, "name", sess->name) || !add_events(js, sess) ||
	    !add_targets(js, &sess->targets))
		return false;
	if (sess->nusers) {
		cJSON *a = cJSON_AddArrayToObject(js, "users");

		if (!a)
			return false;
		for (uint32_t i = 0; i < sess->nusers; i++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(sess->users[i]));
	}
	if (sess->ntriggers && !add_triggers(js, sess))
		return false;
	return true;
}

char *fr_config_to_json(const struct fr_config *cfg)
{
	cJSON *root, *sessions;
	char *text = NULL, *out = NULL;

	root = cJSON_CreateObject();
	if (!root)
		return NULL;
	if (!add_ring(root, cfg) || !add_socket(root, cfg) || !add_dumps(root, cfg) ||
	    !add_limits(root, cfg) || !config_symbols_json(root, cfg) ||
	    !config_export_json(root, cfg))
		goto out;
	sessions = cJSON_AddArrayToObject(root, "sessions");
	if (!sessions)
		goto out;
	for (uint32_t s = 0; s < cfg->nsessions; s++)
		if (!add_session(sessions, &cfg->sessions[s]))
			goto out;

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
