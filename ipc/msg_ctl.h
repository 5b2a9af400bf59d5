/* The control messages of the wire protocol (ipc/proto.h): reload and
 * trigger, with the same contract as ipc/msg.h (typed structs, one
 * encoder and one decoder each, decoders naming the offending field).
 *
 *   {"req":"reload"}
 *     -> {"ok":true,"config":PATH,"changed":["ring.sync: 1s -> 5s",...],
 *         "more":N}   (N changes beyond the list; absent when 0)
 *     -> {"ok":false,"error":"reload rejected ...: sessions[0].events[0].hz: ..."}
 *   {"req":"trigger","session":NAME,"reason":TEXT,"window_ns":N}
 *     -> the dump reply of ipc/msg.h: {"ok":true,"path":...,"t0_ns":...,"t1_ns":...}
 */
#ifndef FR_IPC_MSG_CTL_H
#define FR_IPC_MSG_CTL_H

#include <stddef.h>
#include <stdint.h>

/* cjson/cJSON.h's object, named only: who builds or reads one includes it. */
struct cJSON;

/* ---- reload ---------------------------------------------------------- */

/* Most changes a reload reply lists, and the longest one kept (with NUL). */
#define FR_IPC_RELOAD_MAX_CHANGES 32
#define FR_IPC_CHANGE_MAX 256
/* The longest configuration path a reply carries (with NUL). */
#define FR_IPC_CONFIG_PATH_MAX 4096

struct fr_ipc_reload_reply {
	char config[FR_IPC_CONFIG_PATH_MAX];
	uint32_t nchanged;
	char changed[FR_IPC_RELOAD_MAX_CHANGES][FR_IPC_CHANGE_MAX];
	/* Changes beyond `changed`: 0..INT32_MAX. */
	uint32_t more;
};

struct cJSON *fr_ipc_reload_req_encode(void);
struct cJSON *fr_ipc_reload_reply_encode(const struct fr_ipc_reload_reply *r);
int fr_ipc_reload_reply_decode(const struct cJSON *obj, struct fr_ipc_reload_reply *out, char *err,
			       size_t errlen);

/* Adds a change to `r` (cut to FR_IPC_CHANGE_MAX), or counts it in
 * `more` when the list is full. */
void fr_ipc_reload_change(struct fr_ipc_reload_reply *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- trigger --------------------------------------------------------- */

/* A session name as configured (config/config.h: at most 63 bytes). */
#define FR_IPC_SESSION_MAX 64
/* A trigger's reason: 1..FR_IPC_REASON_MAX-1 bytes of UTF-8 text without
 * control characters; it goes into the dump and the daemon's log. */
#define FR_IPC_REASON_MAX 200

struct fr_ipc_trigger_req {
	char session[FR_IPC_SESSION_MAX];
	char reason[FR_IPC_REASON_MAX]; /* "" when absent */
	/* "window_ns": FR_IPC_DUMP_WINDOW_MIN_NS..MAX_NS (ipc/msg.h), 0 when
	 * absent (the session's own window). */
	int64_t window_ns;
};

struct cJSON *fr_ipc_trigger_req_encode(const struct fr_ipc_trigger_req *r);
int fr_ipc_trigger_req_decode(const struct cJSON *obj, struct fr_ipc_trigger_req *out, char *err,
			      size_t errlen);

/* Whether `s` is a reason a trigger may carry (see FR_IPC_REASON_MAX). */
int fr_ipc_reason_ok(const char *s);

#endif
