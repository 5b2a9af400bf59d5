/* What changed between two configurations, setting by setting
 * (fr_config_diff() in config/config.h): the two JSON forms of
 * fr_config_to_json() compared member by member, so a reload can say
 * "ring.sync: 1s -> 5s" without knowing every setting by name. */
#include "config/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

struct diff {
	fr_config_change_fn change;
	void *arg;
};

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

static void diff(const struct diff *x, const char *path, const cJSON *a, const cJSON *b, int depth);

/* Sessions (named objects) are matched by name, so removing the first
 * does not read as every other one changing. */
static void diff_named(const struct diff *x, const char *path, const cJSON *a, const cJSON *b,
		       int depth)
{
	char sub[256];
	const cJSON *it;

	cJSON_ArrayForEach(it, a) {
		const char *name = cJSON_GetObjectItemCaseSensitive(it, "name")->valuestring;
		const cJSON *other = by_name(b, name);

		snprintf(sub, sizeof(sub), "%s[%s]", path, name);
		if (!other)
			x->change(x->arg, sub, NULL, "removed");
		else
			diff(x, sub, it, other, depth + 1);
	}
	cJSON_ArrayForEach(it, b) {
		const char *name = cJSON_GetObjectItemCaseSensitive(it, "name")->valuestring;

		snprintf(sub, sizeof(sub), "%s[%s]", path, name);
		if (!by_name(a, name))
			x->change(x->arg, sub, NULL, "added");
	}
}

/* Each setting that differs between `a` and `b` (either may be NULL),
 * by its JSON path under `path`. */
static void diff(const struct diff *x, const char *path, const cJSON *a, const cJSON *b, int depth)
{
	char sub[256], va[96], vb[96];
	const cJSON *it;

	if (a && b && cJSON_Compare(a, b, 1))
		return;
	if (depth < 8 && cJSON_IsObject(a) && cJSON_IsObject(b)) {
		cJSON_ArrayForEach(it, a) {
			snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "." : "", it->string);
			diff(x, sub, it, cJSON_GetObjectItemCaseSensitive(b, it->string),
			     depth + 1);
		}
		cJSON_ArrayForEach(it, b)
			if (!cJSON_GetObjectItemCaseSensitive(a, it->string)) {
				snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "." : "",
					 it->string);
				diff(x, sub, NULL, it, depth + 1);
			}
		return;
	}
	if (depth < 8 && cJSON_IsArray(a) && cJSON_IsArray(b) && named_objects(a) &&
	    named_objects(b) && cJSON_GetArraySize(a) + cJSON_GetArraySize(b) > 0) {
		diff_named(x, path, a, b, depth);
		return;
	}
	/* A session's events, by position while their number stays. */
	if (depth < 8 && cJSON_IsArray(a) && cJSON_IsArray(b) &&
	    cJSON_GetArraySize(a) == cJSON_GetArraySize(b) && cJSON_IsObject(a->child)) {
		const cJSON *jt = b->child;
		int i = 0;

		for (it = a->child; it && jt; it = it->next, jt = jt->next, i++) {
			snprintf(sub, sizeof(sub), "%s[%d]", path, i);
			diff(x, sub, it, jt, depth + 1);
		}
		return;
	}
	value_text(a, va, sizeof(va));
	value_text(b, vb, sizeof(vb));
	x->change(x->arg, path, va, vb);
}

int fr_config_diff(const char *before, const char *after, fr_config_change_fn change, void *arg)
{
	cJSON *a = before ? cJSON_Parse(before) : NULL, *b = after ? cJSON_Parse(after) : NULL;
	struct diff x = {.change = change, .arg = arg};
	int ret = a && b ? 0 : -ENOMEM;

	if (ret == 0)
		diff(&x, "", a, b, 0);
	cJSON_Delete(a);
	cJSON_Delete(b);
	return ret;
}
