/* What the memory events mean in a timeline (core/query/timeline.h): rss
 * is a gauge, whose step holds the largest value sampled in it (a sum of
 * one process's samples would grow with the number of seconds in a
 * step); memory-pressure adds up stall time like any other event; oom
 * counts kills, and lists who was killed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/query/timeline.h"
#include "core/query/timeline_int.h"
#include "core/store/chunk.h"
#include "core/util/parse.h"

int tl_mode(uint32_t event)
{
	/* A wakeup's or a runqueue delay's weight is a wait that ended at
	 * its time, spread as an off-CPU wait's (without open waits). */
	if (event == FR_EVENT_OFFCPU || event == FR_EVENT_WAKEUP || event == FR_EVENT_RUNQUEUE)
		return TL_SPREAD;
	return event == FR_EVENT_RSS ? TL_GAUGE : TL_SUM;
}

uint64_t tl_value(uint32_t event, uint64_t weight)
{
	/* A kill's weight is the victim's RSS: its count is one. */
	return event == FR_EVENT_OOM ? 1 : weight;
}

const char *tl_unit(uint32_t event)
{
	return event == FR_EVENT_OOM ? "count" : fr_event_unit(event);
}

uint64_t tl_combine(int mode, uint64_t a, uint64_t b)
{
	if (mode == TL_GAUGE)
		return a > b ? a : b;
	return a + b > a ? a + b : (b ? UINT64_MAX : a);
}

int tl_victim(struct tl *tl, const struct fr_chunk *c, uint32_t i)
{
	struct fr_timeline *t = tl->t;
	struct fr_timeline_victim *v;
	struct fr_chunk_proc_labels l;
	uint32_t key;

	if (!t->victims) {
		if (tl_charge(tl, FR_TIMELINE_VICTIMS_MAX * (int64_t)sizeof(*v)) < 0)
			return -E2BIG;
		t->victims = calloc(FR_TIMELINE_VICTIMS_MAX, sizeof(*v));
		if (!t->victims)
			return -ENOMEM;
	}
	if (t->nvictims == FR_TIMELINE_VICTIMS_MAX) {
		t->victims_more++;
		return 0;
	}
	v = &t->victims[t->nvictims++];
	v->time_ns = c->time_ns[i];
	v->pid = c->pid[i];
	v->rss = c->weight[i];
	key = fr_chunk_comm_at(c, v->pid, v->time_ns);
	snprintf(v->comm, sizeof(v->comm), "%s", key ? c->strings[key] : "[unknown]");
	fr_chunk_labelset_proc(c, c->labelset[i], &l);
	snprintf(v->cgroup, sizeof(v->cgroup), "%s", l.cgroup ? l.cgroup : "");
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct fr_timeline_victim *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void tl_victims_json(FILE *f, const struct fr_timeline *t)
{
	if (t->event != FR_EVENT_OOM)
		return;
	/* Chunks are read in ring order, which a merge may not keep. */
	if (t->nvictims)
		qsort(t->victims, t->nvictims, sizeof(t->victims[0]), by_time);
	fputs(",\"victims\":[", f);
	for (uint32_t k = 0; k < t->nvictims; k++) {
		const struct fr_timeline_victim *v = &t->victims[k];

		fprintf(f, "%s{\"time_ns\":%" PRId64 ",\"pid\":%" PRIu32 ",\"comm\":", k ? "," : "",
			v->time_ns, v->pid);
		fr_json_fputs(f, v->comm);
		fputs(",\"cgroup\":", f);
		fr_json_fputs(f, v->cgroup);
		fprintf(f, ",\"rss\":%" PRIu64 "}", v->rss);
	}
	fprintf(f, "],\"victims_more\":%" PRIu64, t->victims_more);
}

/* The value of application label `key` of sample i, NULL when none. */
static const char *sample_label(const struct fr_chunk *c, uint32_t i, const char *key)
{
	const struct fr_chunk_labelset *s;
	uint32_t set = c->app ? c->app[i] : 0;

	if (!c->apps || set == 0 || set >= c->napps)
		return NULL;
	s = &c->apps[set];
	for (uint32_t k = 0; k < s->npairs; k++) {
		if (strcmp(c->app_strings[c->app_keys[s->first + k]], key) == 0)
			return c->app_strings[c->app_values[s->first + k]];
	}
	return NULL;
}

int tl_mark(struct tl *tl, const struct fr_chunk *c, uint32_t i)
{
	struct fr_timeline *t = tl->t;
	struct fr_timeline_mark *m;
	uint32_t ev = c->event[i], key;
	const char *sig = NULL;

	if (ev != FR_EVENT_CRASH && ev != FR_EVENT_OOM && ev != FR_EVENT_EXIT)
		return 0;
	if (ev != FR_EVENT_OOM && !(sig = sample_label(c, i, "signal")))
		return 0;
	if (c->time_ns[i] < t->start_ns || c->time_ns[i] >= t->end_ns)
		return 0;
	if (!t->marks) {
		if (tl_charge(tl, FR_TIMELINE_MARKS_MAX * (int64_t)sizeof(*m)) < 0)
			return -E2BIG;
		t->marks = calloc(FR_TIMELINE_MARKS_MAX, sizeof(*m));
		if (!t->marks)
			return -ENOMEM;
	}
	if (t->nmarks == FR_TIMELINE_MARKS_MAX) {
		t->marks_more++;
		return 0;
	}
	m = &t->marks[t->nmarks++];
	m->time_ns = c->time_ns[i];
	m->event = ev;
	m->pid = c->pid[i];
	key = fr_chunk_comm_at(c, m->pid, m->time_ns);
	snprintf(m->comm, sizeof(m->comm), "%s", key ? c->strings[key] : "[unknown]");
	snprintf(m->signal, sizeof(m->signal), "%s", sig ? sig : "");
	if (ev == FR_EVENT_EXIT) {
		const char *kernel = sample_label(c, i, "sender");
		const char *pid = sample_label(c, i, "sender_pid");
		const char *comm = sample_label(c, i, "sender_comm");
		uint64_t v;

		if (kernel && strcmp(kernel, "kernel") == 0) {
			snprintf(m->sender, sizeof(m->sender), "kernel");
		} else if (pid && fr_parse_u64(pid, 1, UINT32_MAX, &v) == 0) {
			m->sender_pid = (uint32_t)v;
			snprintf(m->sender, sizeof(m->sender), "process");
			snprintf(m->sender_comm, sizeof(m->sender_comm), "%s", comm ? comm : "");
		}
	}
	return 0;
}

static int mark_by_time(const void *a, const void *b)
{
	const struct fr_timeline_mark *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->event < y->event ? -1 : x->event > y->event;
}

void tl_marks_json(FILE *f, const struct fr_timeline *t)
{
	if (!t->nmarks && !t->marks_more)
		return;
	qsort(t->marks, t->nmarks, sizeof(t->marks[0]), mark_by_time);
	fputs(",\"marks\":[", f);
	for (uint32_t k = 0; k < t->nmarks; k++) {
		const struct fr_timeline_mark *m = &t->marks[k];

		fprintf(f,
			"%s{\"time_ns\":%" PRId64 ",\"type\":\"%s\",\"pid\":%" PRIu32 ",\"comm\":",
			k ? "," : "", m->time_ns,
			m->event == FR_EVENT_OOM ? "oom_kill" : fr_event_name(m->event), m->pid);
		fr_json_fputs(f, m->comm);
		if (m->signal[0]) {
			fputs(",\"signal\":", f);
			fr_json_fputs(f, m->signal);
		}
		if (m->sender[0]) {
			fprintf(f, ",\"sender\":{\"kind\":\"%s\"", m->sender);
			if (m->sender_pid) {
				fprintf(f, ",\"pid\":%" PRIu32 ",\"comm\":", m->sender_pid);
				fr_json_fputs(f, m->sender_comm);
			}
			fputc('}', f);
		}
		fputc('}', f);
	}
	fprintf(f, "],\"marks_more\":%" PRIu64, t->marks_more);
}
