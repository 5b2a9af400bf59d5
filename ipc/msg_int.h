/* The helpers every message file of ipc/ decodes and encodes with (ipc/msg.c,
 * msg_ctl.c, msg_timeline.c, msg_attach.c): one owner for how a member is
 * read, how an integer is checked and what a refusal says, so the
 * messages cannot come to disagree on them. Internal to ipc/. */
#ifndef FR_IPC_MSG_INT_H
#define FR_IPC_MSG_INT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "ipc/msg.h"

/* Writes the message into err (when given) and returns -EINVAL: every
 * decoder's one error. */
int fr_ipc_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The member `key` of `obj`, NULL when absent or null. */
const cJSON *fr_ipc_member(const cJSON *obj, const char *key);

/* Reads the integer member `key` within min..max into *out (left alone
 * when absent): a parsed number, or the raw text fr_ipc_add_int() builds
 * (an object decoded without printing it), read to its last digit.
 * Returns 1 when present, 0 when absent, or -EINVAL with the message
 * "<what>: \"<key>\" must be ...". */
int fr_ipc_get_int(const cJSON *obj, const char *what, const char *key, int64_t min, int64_t max,
		   int64_t *out, char *err, size_t errlen);

/* Unsigned and signed reply members, absent: 0. Return 0 or -EINVAL. */
int fr_ipc_get_u64(const cJSON *obj, const char *what, const char *key, uint64_t *out, char *err,
		   size_t errlen);
int fr_ipc_get_u32(const cJSON *obj, const char *what, const char *key, uint32_t *out, char *err,
		   size_t errlen);
int fr_ipc_get_i64(const cJSON *obj, const char *what, const char *key, int64_t *out, char *err,
		   size_t errlen);

/* {"req":cmd}, NULL without memory. */
cJSON *fr_ipc_new_request(const char *cmd);

/* Adds "warnings": [...], empty when n is 0. Returns 0 or -ENOMEM. */
int fr_ipc_add_warnings(cJSON *obj, const char (*warnings)[FR_IPC_WARNING_MAX], uint32_t n);

/* Reads "warnings" of a reply: an array of strings, absent: none, at most
 * FR_IPC_MAX_WARNINGS kept. Returns 0 or -EINVAL. */
int fr_ipc_get_warnings(const cJSON *obj, const char *what, char (*warnings)[FR_IPC_WARNING_MAX],
			uint32_t *n, char *err, size_t errlen);

#endif
