/* A dump's sidecar (ipc/msg_sidecar.h), described once for its encoder
 * and its decoder (ipc/msg_int.h). */
#include "ipc/msg_sidecar.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ipc/msg_int.h"

#define MD(T, k, f, type, when)                                                       \
	{                                                                             \
		k, type, when, (unsigned short)sizeof(((T *)0)->f), offsetof(T, f), 0 \
	}
#define N(tab) (sizeof(tab) / sizeof(tab[0]))

#define T struct fr_ipc_sidecar
static const struct fr_ipc_mdesc head_m[] = {
	MD(T, "session", session, FR_IPC_M_STR, FR_IPC_ALWAYS),
	MD(T, "trigger", trigger, FR_IPC_M_STR, FR_IPC_ALWAYS),
	MD(T, "reason", reason, FR_IPC_M_STR, FR_IPC_ALWAYS),
	MD(T, "fired_ns", fired_ns, FR_IPC_M_I64, FR_IPC_ALWAYS),
	MD(T, "t0_ns", t0_ns, FR_IPC_M_I64, FR_IPC_ALWAYS),
	MD(T, "t1_ns", t1_ns, FR_IPC_M_I64, FR_IPC_ALWAYS),
	MD(T, "window_ns", window_ns, FR_IPC_M_I64, FR_IPC_ALWAYS),
	MD(T, "after_ns", after_ns, FR_IPC_M_I64, FR_IPC_ALWAYS),
	MD(T, "pid", pid, FR_IPC_M_I64, FR_IPC_NONZERO),
	MD(T, "profile", profile, FR_IPC_M_STR, FR_IPC_ALWAYS),
	MD(T, "goroutines", goroutines, FR_IPC_M_STR, FR_IPC_NONZERO),
	MD(T, "go_processes", go_processes, FR_IPC_M_U64, FR_IPC_NONZERO),
};
static const struct fr_ipc_mdesc tail_m[] = {
	MD(T, "samples", samples, FR_IPC_M_U64, FR_IPC_ALWAYS),
	MD(T, "bytes", bytes, FR_IPC_M_U64, FR_IPC_ALWAYS),
	MD(T, "version", version, FR_IPC_M_STR, FR_IPC_ALWAYS),
};
#undef T

#define T struct fr_ipc_sidecar_victim
static const struct fr_ipc_mdesc victim_m[] = {
	MD(T, "pid", pid, FR_IPC_M_I64, FR_IPC_ALWAYS),
	MD(T, "comm", comm, FR_IPC_M_STR, FR_IPC_ALWAYS),
	MD(T, "cgroup", cgroup, FR_IPC_M_STR, FR_IPC_ALWAYS),
	MD(T, "rss", rss, FR_IPC_M_U64, FR_IPC_ALWAYS),
};
#undef T

#define T struct fr_ipc_sidecar_crash
static const struct fr_ipc_mdesc crash_m[] = {
	MD(T, "pid", pid, FR_IPC_M_I64, FR_IPC_ALWAYS),
	MD(T, "tid", tid, FR_IPC_M_I64, FR_IPC_ALWAYS),
	MD(T, "comm", comm, FR_IPC_M_STR, FR_IPC_ALWAYS),
	MD(T, "signal", signal, FR_IPC_M_STR, FR_IPC_ALWAYS),
	MD(T, "addr", addr, FR_IPC_M_STR, FR_IPC_ALWAYS),
};
#undef T

#define T struct fr_ipc_sidecar_event
static const struct fr_ipc_mdesc event_m[] = {
	MD(T, "event", event, FR_IPC_M_STR, FR_IPC_ALWAYS),
	MD(T, "hz", hz, FR_IPC_M_U64, FR_IPC_ALWAYS),
	MD(T, "samples", samples, FR_IPC_M_U64, FR_IPC_ALWAYS),
	MD(T, "lost", lost, FR_IPC_M_U64, FR_IPC_ALWAYS),
};
#undef T

/* "pressure" into `o`. Returns 0 or -ENOMEM. */
static int pressure_add(cJSON *o, const struct fr_ipc_sidecar_pressure *p)
{
	cJSON *v = cJSON_AddObjectToObject(o, "pressure");

	if (!v || !cJSON_AddStringToObject(v, "resource", p->resource) ||
	    !cJSON_AddStringToObject(v, "kind", p->kind) ||
	    !cJSON_AddNumberToObject(v, "share", p->share) ||
	    !cJSON_AddNumberToObject(v, "above", p->above) ||
	    (p->cgroup[0] && !cJSON_AddStringToObject(v, "cgroup", p->cgroup)))
		return -ENOMEM;
	return 0;
}

/* "pressure" from `v`. Returns 0 or -EINVAL with the message. */
static int pressure_get(const cJSON *v, const char *what, struct fr_ipc_sidecar_pressure *p,
			char *err, size_t errlen)
{
	const cJSON *r = fr_ipc_member(v, "resource"), *k = fr_ipc_member(v, "kind"),
		    *sh = fr_ipc_member(v, "share"), *ab = fr_ipc_member(v, "above"),
		    *cg = fr_ipc_member(v, "cgroup");

	if (!cJSON_IsObject(v) || !cJSON_IsString(r) || !cJSON_IsString(k) ||
	    strlen(r->valuestring) >= sizeof(p->resource) ||
	    strlen(k->valuestring) >= sizeof(p->kind) || !cJSON_IsNumber(sh) || !cJSON_IsNumber(ab))
		return fr_ipc_fail(err, errlen,
				   "%s: \"pressure\" must be an object with \"resource\", "
				   "\"kind\", \"share\" and \"above\"",
				   what);
	if (cg && (!cJSON_IsString(cg) || strlen(cg->valuestring) >= sizeof(p->cgroup)))
		return fr_ipc_fail(err, errlen,
				   "%s: \"pressure\".\"cgroup\" must be a string of at "
				   "most %zu bytes",
				   what, sizeof(p->cgroup) - 1);
	if (cg)
		snprintf(p->cgroup, sizeof(p->cgroup), "%s", cg->valuestring);
	snprintf(p->resource, sizeof(p->resource), "%s", r->valuestring);
	snprintf(p->kind, sizeof(p->kind), "%s", k->valuestring);
	p->share = sh->valuedouble;
	p->above = ab->valuedouble;
	return 0;
}

char *fr_ipc_sidecar_text(const struct fr_ipc_sidecar *s)
{
	cJSON *o = cJSON_CreateObject(), *events;
	char *text = NULL;
	int ret = o ? fr_ipc_members_add(o, head_m, N(head_m), s) : -ENOMEM;

	if (ret == 0 && s->has_victim) {
		cJSON *v = cJSON_AddObjectToObject(o, "victim");

		ret = v ? fr_ipc_members_add(v, victim_m, N(victim_m), &s->victim) : -ENOMEM;
	}
	if (ret == 0 && s->has_crash) {
		cJSON *v = cJSON_AddObjectToObject(o, "crash");

		ret = v ? fr_ipc_members_add(v, crash_m, N(crash_m), &s->crash) : -ENOMEM;
	}
	if (ret == 0 && s->has_pressure)
		ret = pressure_add(o, &s->pressure);
	events = ret == 0 ? cJSON_AddArrayToObject(o, "events") : NULL;
	for (uint32_t i = 0; events && ret == 0 && i < s->nevents && i < FR_LIMIT_EVENTS; i++) {
		cJSON *ev = cJSON_CreateObject();

		if (!ev || !cJSON_AddItemToArray(events, ev)) {
			cJSON_Delete(ev);
			ret = -ENOMEM;
		} else {
			ret = fr_ipc_members_add(ev, event_m, N(event_m), &s->events[i]);
		}
	}
	if (events && ret == 0 && fr_ipc_members_add(o, tail_m, N(tail_m), s) == 0)
		text = cJSON_Print(o);
	cJSON_Delete(o);
	return text;
}

int fr_ipc_sidecar_decode(const cJSON *obj, struct fr_ipc_sidecar *out, char *err, size_t errlen)
{
	const char *what = "dump sidecar";
	const cJSON *events = fr_ipc_member(obj, "events"), *victim = fr_ipc_member(obj, "victim"),
		    *crash = fr_ipc_member(obj, "crash"), *it;

	memset(out, 0, sizeof(*out));
	if (fr_ipc_members_get(obj, what, head_m, N(head_m), out, err, errlen) < 0 ||
	    fr_ipc_members_get(obj, what, tail_m, N(tail_m), out, err, errlen) < 0)
		return -EINVAL;
	if (victim) {
		if (!cJSON_IsObject(victim))
			return fr_ipc_fail(err, errlen, "%s: \"victim\" must be an object", what);
		if (fr_ipc_members_get(victim, what, victim_m, N(victim_m), &out->victim, err,
				       errlen) < 0)
			return -EINVAL;
		out->has_victim = 1;
	}
	if (crash) {
		if (!cJSON_IsObject(crash))
			return fr_ipc_fail(err, errlen, "%s: \"crash\" must be an object", what);
		if (fr_ipc_members_get(crash, what, crash_m, N(crash_m), &out->crash, err, errlen) <
		    0)
			return -EINVAL;
		out->has_crash = 1;
	}
	if (fr_ipc_member(obj, "pressure")) {
		if (pressure_get(fr_ipc_member(obj, "pressure"), what, &out->pressure, err,
				 errlen) < 0)
			return -EINVAL;
		out->has_pressure = 1;
	}
	if (events && !cJSON_IsArray(events))
		return fr_ipc_fail(err, errlen, "%s: \"events\" must be an array of objects", what);
	cJSON_ArrayForEach(it, events) {
		if (!cJSON_IsObject(it) || out->nevents >= FR_LIMIT_EVENTS)
			return fr_ipc_fail(err, errlen, "%s: \"events\" must be at most %d objects",
					   what, FR_LIMIT_EVENTS);
		if (fr_ipc_members_get(it, what, event_m, N(event_m), &out->events[out->nevents++],
				       err, errlen) < 0)
			return -EINVAL;
	}
	return 0;
}
