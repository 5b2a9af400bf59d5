/* Timelines' words: the default step, the --by values, and the JSON form
 * (core/query/timeline.h) the CLI, the daemon and the web page share.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/query/timeline.h"
#include "core/query/timeline_int.h"
#include "core/util/parse.h"
#include "core/util/time.h"

int64_t fr_timeline_default_step(int64_t window_ns)
{
	static const int64_t steps_s[] = {1,   2,   5,	  10,	15,   30,    60,    120,  300,
					  600, 900, 1800, 3600, 7200, 21600, 43200, 86400};
	int64_t want = window_ns / 60;

	for (size_t i = 0; i < sizeof(steps_s) / sizeof(steps_s[0]); i++) {
		if (steps_s[i] * FR_NS_PER_S >= want)
			return steps_s[i] * FR_NS_PER_S;
	}
	/* Past a day a step: whole days. */
	return (want / (86400 * FR_NS_PER_S) + 1) * (86400 * FR_NS_PER_S);
}

int fr_group_by_parse(const char *s, enum fr_timeline_by *by, const char **key)
{
	static const char *const names[] = {"process", "comm", "cgroup"};

	*key = NULL;
	for (int i = 0; i < 3; i++) {
		if (strcmp(s, names[i]) == 0) {
			*by = (enum fr_timeline_by)i;
			return 0;
		}
	}
	if (strncmp(s, "label:", 6) != 0 || !s[6])
		return -EINVAL;
	*by = FR_TIMELINE_BY_LABEL;
	*key = s + 6;
	return 0;
}

int fr_timeline_parse_by(const char *s, struct fr_timeline_request *req)
{
	enum fr_timeline_by by;
	const char *key;

	if (fr_group_by_parse(s, &by, &key) < 0 || (key && strlen(key) >= FR_LIMIT_LABEL_LEN))
		return -EINVAL;
	req->by = by;
	snprintf(req->label_key, sizeof(req->label_key), "%s", key ? key : "");
	return 0;
}

const char *fr_timeline_by_name(enum fr_timeline_by by, const char *label_key, char *buf,
				size_t len)
{
	switch (by) {
	case FR_TIMELINE_BY_PROCESS: return "process";
	case FR_TIMELINE_BY_COMM: return "comm";
	case FR_TIMELINE_BY_CGROUP: return "cgroup";
	default: snprintf(buf, len, "label:%s", label_key); return buf;
	}
}

uint32_t fr_timeline_partial_from(const struct fr_timeline *t)
{
	uint32_t k = 0;

	/* An empty ring holds no part of any step: said otherwise */
	if (!t->ring_last_ns || t->step_ns <= 0)
		return t->nsteps;
	while (k < t->nsteps && t->start_ns + (int64_t)(k + 1) * t->step_ns <= t->ring_last_ns)
		k++;
	return k;
}

int fr_timeline_write_json(FILE *f, const struct fr_timeline *t)
{
	char ev[FR_EVENT_NAME_MAX], by[FR_LIMIT_LABEL_LEN + 8];
	uint32_t stalled = 0;

	fprintf(f, "{\"version\":%d,\"event\":", FR_TIMELINE_VERSION);
	fr_json_fputs(f, fr_event_format(t->event, ev, sizeof(ev)));
	fprintf(f, ",\"unit\":\"%s\",\"by\":", tl_unit(t->event));
	fr_json_fputs(f, fr_timeline_by_name(t->by, t->label_key, by, sizeof(by)));
	fprintf(f,
		",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 ",\"step_ns\":%" PRId64
		",\"ring\":{\"first_ns\":%" PRId64 ",\"last_ns\":%" PRId64 "}",
		t->start_ns, t->end_ns, t->step_ns, t->ring_first_ns, t->ring_last_ns);
	if (fr_timeline_partial_from(t) < t->nsteps)
		fprintf(f, ",\"partial_from\":%" PRIu32, fr_timeline_partial_from(t));
	fputs(",\"events\":[", f);
	for (uint32_t e = 0; e < t->nevents; e++) {
		if (e)
			fputc(',', f);
		fr_json_fputs(f, fr_event_format(t->events[e], ev, sizeof(ev)));
	}
	fprintf(f, "],\"samples\":%" PRIu64 ",\"lost_total\":%" PRIu64 ",\"lost\":[", t->samples,
		t->lost_steps ? t->lost : 0);
	for (uint32_t k = 0; k < t->nsteps; k++)
		fprintf(f, k ? ",%" PRIu64 : "%" PRIu64, t->lost_steps ? t->lost_steps[k] : 0);
	fputs("],\"stalled\":[", f);
	for (uint32_t k = 0; k < t->nsteps; k++) {
		stalled += t->stalled_steps && t->stalled_steps[k];
		fprintf(f, "%s%s", k ? "," : "",
			t->stalled_steps && t->stalled_steps[k] ? "true" : "false");
	}
	fprintf(f, "],\"stalled_steps\":%u,\"groups\":[", stalled);
	for (uint32_t g = 0; g < t->ngroups; g++) {
		const struct fr_timeline_group *o = &t->groups[g];

		fprintf(f, "%s{\"name\":", g ? "," : "");
		fr_json_fputs(f, o->name);
		if (t->by == FR_TIMELINE_BY_PROCESS && !o->other)
			fprintf(f, ",\"pid\":%u", o->pid);
		fprintf(f, ",\"total\":%" PRIu64 ",\"values\":[", o->total);
		for (uint32_t k = 0; k < t->nsteps; k++)
			fprintf(f, k ? ",%" PRIu64 : "%" PRIu64, o->values[k]);
		fputs("]}", f);
	}
	fputc(']', f);
	tl_victims_json(f, t);
	tl_marks_json(f, t);
	fputs("}\n", f);
	return ferror(f) ? -EIO : 0;
}
