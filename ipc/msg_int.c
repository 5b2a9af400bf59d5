/* The helpers the message files of ipc/ share (ipc/msg_int.h): reading a
 * member, an integer within bounds, the warnings of a reply, and the one
 * way a decoder refuses. */
#include "ipc/msg_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/proto.h"

int fr_ipc_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

const cJSON *fr_ipc_member(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return v && !cJSON_IsNull(v) ? v : NULL;
}

/* The value of an integer member into *ll (and *d, for messages): raw
 * text is read as an integer, all its digits kept (a time in ns is past
 * what a double holds exactly); a parsed number must be integral and
 * within int64_t, beyond which its conversion is undefined. Returns 0 or
 * -EINVAL. */
static int integer(const cJSON *v, long long *ll, double *d)
{
	char *end;

	if (cJSON_IsRaw(v) && v->valuestring) {
		errno = 0;
		*ll = strtoll(v->valuestring, &end, 10);
		if (end == v->valuestring || *end || errno)
			return -EINVAL;
		*d = (double)*ll;
		return 0;
	}
	if (!cJSON_IsNumber(v))
		return -EINVAL;
	/* Parsed by fr_ipc_parse_json(): its own digits, all of them. */
	if (v->valuestring) {
		errno = 0;
		*ll = strtoll(v->valuestring, &end, 10);
		if (end != v->valuestring && !*end && !errno) {
			*d = v->valuedouble;
			return 0;
		}
	}
	*d = v->valuedouble;
	if (!(*d >= -9223372036854775808.0 && *d < 9223372036854775808.0) ||
	    *d != (double)(int64_t)*d)
		return -EINVAL;
	*ll = (long long)*d;
	return 0;
}

int fr_ipc_get_int(const cJSON *obj, const char *what, const char *key, int64_t min, int64_t max,
		   int64_t *out, char *err, size_t errlen)
{
	const cJSON *v = fr_ipc_member(obj, key);
	long long ll;
	double d;

	if (!v)
		return 0;
	if (integer(v, &ll, &d) < 0)
		return fr_ipc_fail(err, errlen, "%s: \"%s\" must be an integer", what, key);
	if (ll < min || ll > max)
		return fr_ipc_fail(err, errlen, "%s: \"%s\" must be %lld..%lld, got %.0f", what,
				   key, (long long)min, (long long)max, d);
	*out = ll;
	return 1;
}

int fr_ipc_get_u64(const cJSON *obj, const char *what, const char *key, uint64_t *out, char *err,
		   size_t errlen)
{
	int64_t v = 0;
	int ret = fr_ipc_get_int(obj, what, key, 0, INT64_MAX, &v, err, errlen);

	*out = (uint64_t)v;
	return ret < 0 ? ret : 0;
}

int fr_ipc_get_u32(const cJSON *obj, const char *what, const char *key, uint32_t *out, char *err,
		   size_t errlen)
{
	int64_t v = 0;
	int ret = fr_ipc_get_int(obj, what, key, 0, UINT32_MAX, &v, err, errlen);

	*out = (uint32_t)v;
	return ret < 0 ? ret : 0;
}

int fr_ipc_get_i64(const cJSON *obj, const char *what, const char *key, int64_t *out, char *err,
		   size_t errlen)
{
	int ret;

	*out = 0;
	ret = fr_ipc_get_int(obj, what, key, INT64_MIN, INT64_MAX, out, err, errlen);
	return ret < 0 ? ret : 0;
}

cJSON *fr_ipc_new_request(const char *cmd)
{
	cJSON *obj = cJSON_CreateObject();

	if (obj && !cJSON_AddStringToObject(obj, "req", cmd)) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

int fr_ipc_add_warnings(cJSON *obj, const char (*warnings)[FR_IPC_WARNING_MAX], uint32_t n)
{
	cJSON *arr = cJSON_AddArrayToObject(obj, "warnings");

	if (!arr)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		cJSON *s = cJSON_CreateString(warnings[i]);

		if (!s || !cJSON_AddItemToArray(arr, s)) {
			cJSON_Delete(s);
			return -ENOMEM;
		}
	}
	return 0;
}

int fr_ipc_get_warnings(const cJSON *obj, const char *what, char (*warnings)[FR_IPC_WARNING_MAX],
			uint32_t *n, char *err, size_t errlen)
{
	const cJSON *arr = fr_ipc_member(obj, "warnings"), *w;

	*n = 0;
	if (!arr)
		return 0;
	if (!cJSON_IsArray(arr))
		return fr_ipc_fail(err, errlen, "%s: \"warnings\" must be an array of strings",
				   what);
	cJSON_ArrayForEach(w, arr) {
		if (!cJSON_IsString(w))
			return fr_ipc_fail(err, errlen,
					   "%s: \"warnings\" must be an array of strings", what);
		fr_ipc_warn(warnings, n, w->valuestring);
	}
	return 0;
}

/* ---- described members ------------------------------------------------- */

/* Whether the member `m` of the struct at `s` goes on the wire. */
static int member_present(const struct fr_ipc_mdesc *m, const char *s)
{
	int64_t i;

	switch (m->when) {
	case FR_IPC_NONZERO:
		if (m->type == FR_IPC_M_STR)
			return s[m->off] != '\0';
		if (m->type == FR_IPC_M_BOOL)
			return *(const int *)(s + m->off) != 0;
		memcpy(&i, s + m->off, sizeof(i));
		return i != 0;
	case FR_IPC_IF: return *(const int *)(s + m->flag) != 0;
	default: return 1;
	}
}

int fr_ipc_members_add(cJSON *obj, const struct fr_ipc_mdesc *m, size_t n, const void *s)
{
	const char *p = s;

	for (size_t k = 0; k < n; k++, m++) {
		const void *v = p + m->off;
		int64_t i;
		int ok;

		if (!member_present(m, p))
			continue;
		switch (m->type) {
		case FR_IPC_M_STR: ok = cJSON_AddStringToObject(obj, m->key, v) != NULL; break;
		case FR_IPC_M_BOOL:
			ok = cJSON_AddBoolToObject(obj, m->key, *(const int *)v) != NULL;
			break;
		case FR_IPC_M_I64_OR_NULL:
			memcpy(&i, v, sizeof(i));
			ok = (i ? fr_ipc_add_int(obj, m->key, i)
				: cJSON_AddNullToObject(obj, m->key)) != NULL;
			break;
		default:
			memcpy(&i, v, sizeof(i));
			ok = fr_ipc_add_int(obj, m->key, i) != NULL;
			break;
		}
		if (!ok)
			return -ENOMEM;
	}
	return 0;
}

int fr_ipc_members_get(const cJSON *obj, const char *what, const struct fr_ipc_mdesc *m, size_t n,
		       void *s, char *err, size_t errlen)
{
	char *p = s;

	for (size_t k = 0; k < n; k++, m++) {
		const cJSON *v = fr_ipc_member(obj, m->key);
		int64_t i = 0;

		if (!v)
			continue;
		switch (m->type) {
		case FR_IPC_M_STR:
			if (!cJSON_IsString(v) || strlen(v->valuestring) >= m->size)
				return fr_ipc_fail(err, errlen,
						   "%s: \"%s\" must be a string of at most %u bytes",
						   what, m->key, (unsigned)m->size - 1);
			memcpy(p + m->off, v->valuestring, strlen(v->valuestring) + 1);
			break;
		case FR_IPC_M_BOOL:
			if (!cJSON_IsBool(v))
				return fr_ipc_fail(err, errlen, "%s: \"%s\" must be true or false",
						   what, m->key);
			*(int *)(p + m->off) = cJSON_IsTrue(v);
			break;
		default:
			if (fr_ipc_get_int(obj, what, m->key,
					   m->type == FR_IPC_M_U64 ? 0 : INT64_MIN, INT64_MAX, &i,
					   err, errlen) < 0)
				return -EINVAL;
			memcpy(p + m->off, &i, sizeof(i));
			break;
		}
		if (m->when == FR_IPC_IF)
			*(int *)(p + m->flag) = 1;
	}
	return 0;
}
