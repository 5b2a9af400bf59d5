/* The helpers every message file of ipc/ decodes and encodes with (ipc/msg.c,
 * msg_ctl.c, msg_timeline.c, msg_attach.c): one owner for how a member is
 * read, how an integer is checked and what a refusal says, so the
 * messages cannot come to disagree on them. Internal to ipc/. */
#ifndef FR_IPC_MSG_INT_H
#define FR_IPC_MSG_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ipc/msg.h"

#include <cjson/cJSON.h>

/* Writes the message into err (when given) and returns -EINVAL: every
 * decoder's one error. */
int fr_ipc_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The member `key` of `obj`, NULL when absent or null. */
const struct cJSON *fr_ipc_member(const struct cJSON *obj, const char *key);

/* Reads the integer member `key` within min..max into *out (left alone
 * when absent): a parsed number, or the raw text fr_ipc_add_int() builds
 * (an object decoded without printing it), read to its last digit.
 * Returns 1 when present, 0 when absent, or -EINVAL with the message
 * "<what>: \"<key>\" must be ...". */
int fr_ipc_get_int(const struct cJSON *obj, const char *what, const char *key, int64_t min,
		   int64_t max, int64_t *out, char *err, size_t errlen);

/* Unsigned and signed reply members, absent: 0. Return 0 or -EINVAL. */
int fr_ipc_get_u64(const struct cJSON *obj, const char *what, const char *key, uint64_t *out,
		   char *err, size_t errlen);
int fr_ipc_get_u32(const struct cJSON *obj, const char *what, const char *key, uint32_t *out,
		   char *err, size_t errlen);
int fr_ipc_get_i64(const struct cJSON *obj, const char *what, const char *key, int64_t *out,
		   char *err, size_t errlen);

/* The targets of a request ("pids", "comm", "cgroup", "children", the
 * label filter), as attach has them (ipc/msg.c). Returns 0, -ENOMEM
 * (add) or -EINVAL naming the member (get). */
struct fr_targets;
int fr_ipc_targets_add(struct cJSON *obj, const struct fr_targets *t);
int fr_ipc_targets_get(const struct cJSON *obj, const char *cmd, struct fr_targets *t, char *err,
		       size_t errlen);

/* {"req":cmd}, NULL without memory. */
struct cJSON *fr_ipc_new_request(const char *cmd);

/* Adds "warnings": [...], empty when n is 0. Returns 0 or -ENOMEM. */
int fr_ipc_add_warnings(struct cJSON *obj, const char (*warnings)[FR_IPC_WARNING_MAX], uint32_t n);

/* Reads "warnings" of a reply: an array of strings, absent: none, at most
 * FR_IPC_MAX_WARNINGS kept. Returns 0 or -EINVAL. */
int fr_ipc_get_warnings(const struct cJSON *obj, const char *what,
			char (*warnings)[FR_IPC_WARNING_MAX], uint32_t *n, char *err,
			size_t errlen);

/* The members of a larger reply's object, described once for its
 * encoder and its decoder (ipc/msg_status.c): the order of a table is the
 * order on the wire. `off` is the member's place in its struct; `when`
 * says when it is on the wire: always, when not 0 (not "" for a string),
 * or when the int at `flag` is not 0 (which the decoder then sets). */
enum fr_ipc_mtype {
	FR_IPC_M_I64,	      /* int64_t */
	FR_IPC_M_U64,	      /* uint64_t, 0..INT64_MAX on the wire */
	FR_IPC_M_BOOL,	      /* int, true or false */
	FR_IPC_M_STR,	      /* char[size] */
	FR_IPC_M_I64_OR_NULL, /* int64_t, null when 0 */
};
enum fr_ipc_mwhen { FR_IPC_ALWAYS, FR_IPC_NONZERO, FR_IPC_IF };
struct fr_ipc_mdesc {
	const char *key;
	unsigned char type, when;
	unsigned short size;
	size_t off, flag;
};

/* Adds the members `m[0..n)` of the struct at `s` to `obj`. Returns 0 or
 * -ENOMEM. */
int fr_ipc_members_add(struct cJSON *obj, const struct fr_ipc_mdesc *m, size_t n, const void *s);

/* Reads the members `m[0..n)` of `obj` into the struct at `s` (absent:
 * left alone). Returns 0 or -EINVAL with "<what>: \"<key>\" must be ...". */
int fr_ipc_members_get(const struct cJSON *obj, const char *what, const struct fr_ipc_mdesc *m,
		       size_t n, void *s, char *err, size_t errlen);

#endif
