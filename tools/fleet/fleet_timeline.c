/* flightrec fleet timeline: how much of one event each host (or command
 * name) had, step by step, over a window of the ClickHouse store; the
 * JSON form of core/query/timeline.h, drawn by the local timeline's chart
 * (tools/timeline_view.c) or printed with --json.
 *
 * Two queries: the top groups by total (one more than asked, to know
 * whether there is an "other"), then the per-step sums with every group
 * outside the top folded into "" by ClickHouse, so the answer is at most
 * (top + 1) x steps rows whatever the fleet's size.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/clickhouse/ch_schema.h"
#include "core/clickhouse/fleet_sql.h"
#include "core/clickhouse/rowbinary.h"
#include "core/query/timeline.h"
#include "core/store/sample.h"
#include "core/util/parse.h"
#include "tools/fleet/fleet.h"
#include "core/util/time.h"
#include "tools/timeline.h"

struct tl_group {
	char name[FR_TIMELINE_NAME_MAX];
	uint64_t total;
	uint64_t *values;
};

struct tl {
	const struct fleet_args *a;
	const char *col; /* "host" or "comm" */
	int64_t step;
	uint32_t nsteps, top, ngroups;
	struct tl_group groups[FR_TIMELINE_TOP_MAX + 1]; /* the top, then "other" */
	int has_other;
	uint64_t samples;
};

static int top_row(void *arg, struct fr_rb_cur *c)
{
	struct tl *t = arg;
	const char *s;
	size_t len;
	uint64_t v;
	int ret;

	if ((ret = fr_rb_str(c, &s, &len)) < 0 || (ret = fr_rb_uint(c, 8, &v)) < 0)
		return ret;
	if (t->ngroups == t->top) {
		t->has_other = 1;
		return 0;
	}
	if (len >= FR_TIMELINE_NAME_MAX)
		len = FR_TIMELINE_NAME_MAX - 1;
	memcpy(t->groups[t->ngroups].name, s, len);
	t->groups[t->ngroups].name[len] = '\0';
	t->ngroups++;
	return 0;
}

/* The group of a step row: its name among the top, else "other". */
static struct tl_group *group_of(struct tl *t, const char *s, size_t len, int folded)
{
	if (folded)
		return t->has_other ? &t->groups[t->ngroups] : NULL;
	for (uint32_t i = 0; i < t->ngroups; i++)
		if (strlen(t->groups[i].name) == len && memcmp(t->groups[i].name, s, len) == 0)
			return &t->groups[i];
	return NULL;
}

static int step_row(void *arg, struct fr_rb_cur *c)
{
	struct tl *t = arg;
	struct tl_group *g;
	uint64_t folded, k, v, n;
	const char *s;
	size_t len;
	int ret;

	if ((ret = fr_rb_uint(c, 1, &folded)) < 0 || (ret = fr_rb_str(c, &s, &len)) < 0 ||
	    (ret = fr_rb_uint(c, 8, &k)) < 0 || (ret = fr_rb_uint(c, 8, &v)) < 0 ||
	    (ret = fr_rb_uint(c, 8, &n)) < 0)
		return ret;
	g = group_of(t, s, len, (int)folded);
	/* A group that entered the top between the two queries (a batch
	 * arrived) is counted in "other" rather than dropped. */
	if (!g && t->has_other)
		g = &t->groups[t->ngroups];
	if (!g || k >= t->nsteps)
		return 0;
	g->values[k] += v;
	g->total += v;
	t->samples += n;
	return 0;
}

static int query(struct tl *t)
{
	const struct fleet_args *a = t->a;
	struct fr_sql sql;
	int ret;

	fr_sql_init(&sql, 0);
	fr_sql_add(&sql, "SELECT %s, sum(value) AS v FROM " FR_CH_SAMPLES_ALL " WHERE ", t->col);
	fleet_ch_where(a, &sql);
	fr_sql_add(&sql, " GROUP BY %s ORDER BY v DESC, %s LIMIT %u FORMAT RowBinary", t->col,
		   t->col, t->top + 1);
	ret = fleet_ch_rows(a, &sql, top_row, t, "top groups");
	fr_sql_free(&sql);
	if (ret || !t->ngroups)
		return ret;
	fr_sql_init(&sql, 0);
	fr_sql_add(&sql, "SELECT %s NOT IN (", t->col);
	for (uint32_t i = 0; i < t->ngroups; i++) {
		fr_sql_add(&sql, "%s", i ? ", " : "");
		fr_sql_str(&sql, t->groups[i].name);
	}
	fr_sql_add(&sql,
		   ") AS folded, if(folded, '', %s) AS g, intDiv(time - %" PRId64 ", %" PRId64
		   ") AS k, sum(value), sum(count) FROM " FR_CH_SAMPLES_ALL " WHERE ",
		   t->col, t->a->t0, t->step);
	fleet_ch_where(a, &sql);
	fr_sql_add(&sql, " GROUP BY folded, g, k FORMAT RowBinary");
	ret = fleet_ch_rows(a, &sql, step_row, t, "steps");
	fr_sql_free(&sql);
	return ret;
}

/* The JSON form of core/query/timeline.h. NULL when out of memory. */
static char *to_json(const struct tl *t)
{
	const struct fleet_args *a = t->a;
	cJSON *o = cJSON_CreateObject(), *ring, *groups, *events, *lost, *stalled;
	char num[32], *text;

#define RAW(obj, key, fmt, v)                                          \
	do {                                                           \
		snprintf(num, sizeof(num), fmt, v);                    \
		cJSON_AddItemToObject(obj, key, cJSON_CreateRaw(num)); \
	} while (0)
	RAW(o, "version", "%d", FR_TIMELINE_VERSION);
	cJSON_AddStringToObject(o, "event", fr_event_name(a->event));
	cJSON_AddStringToObject(o, "unit",
				strcmp(fr_event_unit(a->event), "nanoseconds") == 0 ? "nanoseconds"
										    : "count");
	cJSON_AddStringToObject(o, "by", t->col);
	RAW(o, "start_ns", "%" PRId64, a->t0);
	RAW(o, "end_ns", "%" PRId64, a->t1);
	RAW(o, "step_ns", "%" PRId64, t->step);
	/* No ring: the store's span is not asked for. */
	ring = cJSON_AddObjectToObject(o, "ring");
	RAW(ring, "first_ns", "%d", 0);
	RAW(ring, "last_ns", "%d", 0);
	events = cJSON_AddArrayToObject(o, "events");
	if (t->samples)
		cJSON_AddItemToArray(events, cJSON_CreateString(fr_event_name(a->event)));
	RAW(o, "samples", "%" PRIu64, t->samples);
	/* The store knows of no loss or stall: the per-step arrays all say
	 * none, so a reader needs no other form. */
	RAW(o, "lost_total", "%d", 0);
	lost = cJSON_AddArrayToObject(o, "lost");
	stalled = cJSON_AddArrayToObject(o, "stalled");
	for (uint32_t k = 0; k < t->nsteps; k++) {
		cJSON_AddItemToArray(lost, cJSON_CreateRaw("0"));
		cJSON_AddItemToArray(stalled, cJSON_CreateFalse());
	}
	RAW(o, "stalled_steps", "%d", 0);
	groups = cJSON_AddArrayToObject(o, "groups");
	for (uint32_t i = 0; i < t->ngroups + (uint32_t)t->has_other; i++) {
		const struct tl_group *g = &t->groups[i];
		cJSON *go = cJSON_CreateObject(), *vals;

		cJSON_AddItemToArray(groups, go);
		cJSON_AddStringToObject(go, "name", i < t->ngroups ? g->name : "other");
		RAW(go, "total", "%" PRIu64, g->total);
		vals = cJSON_AddArrayToObject(go, "values");
		for (uint32_t k = 0; k < t->nsteps; k++) {
			snprintf(num, sizeof(num), "%" PRIu64, g->values[k]);
			cJSON_AddItemToArray(vals, cJSON_CreateRaw(num));
		}
	}
#undef RAW
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

/* The exporter's default batch: rows are stamped with their interval's
 * start, so a finer step would show them as spikes between empty steps. */
#define BATCH_NS (10 * FR_NS_PER_S)

int fleet_timeline(const struct fleet_args *args, const char *by, int64_t step, uint32_t top,
		   int json)
{
	struct tl *t = calloc(1, sizeof(*t));
	struct fleet_args *a = malloc(sizeof(*a));
	char *text = NULL;
	int ret = 1;

	if (!t || !a)
		goto nomem;
	*a = *args;
	t->a = a;
	t->col = by;
	t->top = top ? top : FR_TIMELINE_TOP_DEFAULT;
	t->step = step ? step : fr_timeline_default_step(a->t1 - a->t0);
	if (!step && t->step < BATCH_NS)
		t->step = BATCH_NS;
	while ((a->t1 - a->t0) / t->step + 2 > FR_TIMELINE_STEPS_MAX)
		t->step *= 2;
	/* Steps on the grid of Unix time, as the exporter's intervals are. */
	a->t0 -= a->t0 % t->step;
	a->t1 += (t->step - a->t1 % t->step) % t->step;
	t->nsteps = (uint32_t)((a->t1 - a->t0) / t->step);
	for (uint32_t i = 0; i <= t->top; i++) {
		t->groups[i].values = calloc(t->nsteps, sizeof(uint64_t));
		if (!t->groups[i].values)
			goto nomem;
	}
	if (query(t))
		goto out;
	if (!t->samples) {
		char t0[64], t1[64];

		fprintf(stderr, "%s: no samples of %s in %s .. %s%s\n", a->cmd,
			fr_event_name(a->event), fr_format_time(a->t0, t0, sizeof(t0)),
			fr_format_time(a->t1, t1, sizeof(t1)),
			a->nhosts || a->q.targets.ncomms || a->q.targets.nlabels
				? " matching the filters"
				: "");
		goto out;
	}
	text = to_json(t);
	if (!text)
		goto nomem;
	ret = fr_tl_print(stdout, text, json);
	if (json && ret == 0)
		putchar('\n');
	goto out;
nomem:
	fprintf(stderr, "%s: out of memory\n", args->cmd);
out:
	for (uint32_t i = 0; t && i <= t->top; i++)
		free(t->groups[i].values);
	free(t);
	free(a);
	free(text);
	return ret;
}
