/* The timeline's options and its terminal chart, for flightrec timeline
 * (cmd_timeline.c) and flightrec dump --timeline (cmd_dump.c). The chart
 * is drawn from the JSON form both get (core/query/timeline.h), so what a
 * person sees and what a script reads cannot differ.
 */
#include "tools/timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util/parse.h"
#include "core/util/time.h"
#include "tools/cli.h"
#include "tools/query.h"

/* Columns: "HH:MM:SS " + bar + " " + the step's value; 80 in all. */
#define BAR_W 56
#define VALUE_W 10
#define WIDTH 80

/* One mark per listed group (FR_TIMELINE_TOP_MAX of them), '.' other. */
static const char MARKS[] = "#=*+%@o~x&ABCDEFGHIJKLMNOPQRSTUV";
_Static_assert(sizeof(MARKS) - 1 >= FR_TIMELINE_TOP_MAX, "a mark per group");

int fr_tl_opt(const char *cmd, int c, const char *arg, struct fr_tl_args *a)
{
	char *end;
	unsigned long n;

	switch (c) {
	case FR_TL_OPT_BY:
		a->by_s = arg;
		if (fr_timeline_parse_by(arg, &a->req) < 0) {
			fprintf(stderr,
				"%s: --by: expected process, comm, cgroup or label:KEY (label:cpu "
				"for the CPU), got \"%s\"\n",
				cmd, arg);
			return EXIT_USAGE;
		}
		return 1;
	case FR_TL_OPT_STEP:
		a->step_s = arg;
		if (fr_parse_duration(arg, &a->req.step_ns) < 0 || a->req.step_ns < 1000000) {
			fprintf(stderr,
				"%s: --step: expected a duration of at least 1ms like 10s or 1m, "
				"got \"%s\"\n",
				cmd, arg);
			return EXIT_USAGE;
		}
		return 1;
	case FR_TL_OPT_TOP:
		a->top_s = arg;
		errno = 0;
		n = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || n < 1 || n > FR_TIMELINE_TOP_MAX) {
			fprintf(stderr,
				"%s: --top: expected a number of groups from 1 to %d, got \"%s\"\n",
				cmd, FR_TIMELINE_TOP_MAX, arg);
			return EXIT_USAGE;
		}
		a->req.top = (uint32_t)n;
		return 1;
	default: return 0;
	}
}

enum fr_timeline_by fr_tl_by(const struct fr_tl_args *a, uint32_t event)
{
	if (event == FR_EVENT_THROTTLED && !a->by_s)
		return FR_TIMELINE_BY_CGROUP;
	return a->req.by;
}

int fr_tl_given(const struct fr_tl_args *a)
{
	return a->by_s || a->step_s || a->top_s;
}

/* A value of the timeline's event for a person: CPU-seconds for cpu,
 * seconds for offcpu, a count with k/M/G for the rest. */
static void human_value(const char *event, const char *unit, double v, char *buf, size_t len)
{
	const char *what = strcmp(event, "cpu") == 0 ? " CPU-s" : " s";

	if (strcmp(unit, "nanoseconds") == 0) {
		v /= 1e9;
		snprintf(buf, len, v >= 100 ? "%.0f%s" : v >= 10 ? "%.1f%s" : "%.2f%s", v, what);
		return;
	}
	if (strcmp(unit, "bytes") == 0) {
		snprintf(buf, len, v >= 1024.0 * 1024 * 1024 ? "%.2f GiB" : "%.1f MiB",
			 v >= 1024.0 * 1024 * 1024 ? v / (1024.0 * 1024 * 1024)
						   : v / (1024.0 * 1024));
		return;
	}
	if (v >= 1e9)
		snprintf(buf, len, "%.1fG", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, len, "%.1fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, len, "%.1fk", v / 1e3);
	else
		snprintf(buf, len, "%.0f", v);
}

/* A step's value: for nanoseconds, how many CPUs (cpu) or threads
 * (offcpu) it stands for on average over the step. */
static void step_value(const char *event, const char *unit, double v, double step, char *buf,
		       size_t len)
{
	if (strcmp(event, "memory-pressure") == 0 || strcmp(event, "cpu-pressure") == 0 ||
	    strcmp(event, "io-pressure") == 0)
		snprintf(buf, len, "%.1f%% stall", v / step * 100);
	else if (strcmp(event, "throttled") == 0)
		snprintf(buf, len, "%.1f%% throttled", v / step * 100);
	else if (strcmp(unit, "nanoseconds") == 0)
		snprintf(buf, len, "%.2f %s", v / step, strcmp(event, "cpu") == 0 ? "CPU" : "thr");
	else
		human_value(event, unit, v, buf, len);
}

/* A step as it would be asked for: "30s", "1m", "2h", "500ms". */
static void step_text(int64_t ns, char *buf, size_t len)
{
	if (ns % (3600 * FR_NS_PER_S) == 0)
		snprintf(buf, len, "%lldh", (long long)(ns / (3600 * FR_NS_PER_S)));
	else if (ns % (60 * FR_NS_PER_S) == 0)
		snprintf(buf, len, "%lldm", (long long)(ns / (60 * FR_NS_PER_S)));
	else if (ns % FR_NS_PER_S == 0)
		snprintf(buf, len, "%llds", (long long)(ns / FR_NS_PER_S));
	else
		snprintf(buf, len, "%lldms", (long long)(ns / 1000000LL));
}

static void hhmmss(int64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / FR_NS_PER_S);
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

/* One row: the bar of step k stacked by group, scaled so that `max` fills
 * BAR_W columns. Rounding is on the running sum, so the bar's length is
 * the step's total whatever the groups' sizes. */
static void draw_row(FILE *out, const cJSON *groups, int k, double max, const char *label,
		     const char *value, double lost, int stalled, int partial)
{
	char mark[64] = "";

	char bar[BAR_W + 1];
	double cum = 0;
	int pos = 0, g = 0;
	const cJSON *grp;

	memset(bar, ' ', BAR_W);
	bar[BAR_W] = '\0';
	cJSON_ArrayForEach(grp, groups) {
		const cJSON *vals = cJSON_GetObjectItemCaseSensitive(grp, "values");
		const cJSON *v = cJSON_GetArrayItem(vals, k);
		const char *name = fr_cli_str(grp, "name");
		int other = name && strcmp(name, "other") == 0 &&
			    !cJSON_GetArrayItem(groups, g + 1);
		int to;

		cum += cJSON_IsNumber(v) ? v->valuedouble : 0;
		to = max > 0 ? (int)lround(cum / max * BAR_W) : 0;
		to = to > BAR_W ? BAR_W : to;
		for (; pos < to; pos++)
			bar[pos] = other ? '.' : MARKS[g % (sizeof(MARKS) - 1)];
		g++;
	}
	/* The step's values are short of what ran: say so on the row; a step
	 * the ring holds only in part ends "~". */
	if (lost > 0)
		snprintf(mark, sizeof(mark), "  ! %.0f lost%s", lost, stalled ? ", stalled" : "");
	else if (stalled)
		snprintf(mark, sizeof(mark), "  ! stalled");
	fprintf(out, "%s %s %*s%s%s\n", label, bar, VALUE_W, value, mark, partial ? " ~" : "");
}

/* The time of the window the ring covers, [*from, *to): from its first
 * sample (or the window's start) to its last (or the window's end); the
 * window itself for an answer that does not say what the ring holds. */
static void covered(const cJSON *tl, int64_t start, int64_t end, int64_t *from, int64_t *to)
{
	const cJSON *ring = cJSON_GetObjectItemCaseSensitive(tl, "ring");
	int64_t first = (int64_t)fr_cli_num(ring, "first_ns"),
		last = (int64_t)fr_cli_num(ring, "last_ns");

	*from = first > start ? first : start;
	*to = last > *from && last < end ? last : end;
	if (!cJSON_IsObject(ring) || first <= 0 || *from >= *to) {
		*from = start;
		*to = end;
	}
}

/* The steps wholly before the ring's first sample `from` as one line
 * instead of rows of zeros that would read as an idle machine. Returns
 * how many steps it stands for. */
static int before_ring(FILE *out, int64_t start, double step, int nsteps, int64_t from)
{
	char a[16], b[16], c[16];
	int k = 0;

	while (k < nsteps && start + (int64_t)((k + 1) * step) <= from)
		k++;
	if (!k)
		return 0;
	hhmmss(start, a, sizeof(a));
	hhmmss(start + (int64_t)(k * step), b, sizeof(b));
	hhmmss(from, c, sizeof(c));
	fprintf(out, "%s–%s  no samples: before the ring's first, at %s UTC\n", a, b, c);
	return k;
}

/* The timeline's lost samples, per step: "lost" as an array (this
 * recorder) or as {"total", "values"} (recorders before it). */
static const cJSON *lost_array(const cJSON *tl)
{
	const cJSON *lost = cJSON_GetObjectItemCaseSensitive(tl, "lost");

	return cJSON_IsArray(lost) ? lost : cJSON_GetObjectItemCaseSensitive(lost, "values");
}

/* The legend of the rows marked '!': how many samples of `event` the
 * window lost and how many steps the recorder's ingest stalled, when
 * either is not 0. */
static void lost_line(FILE *out, const char *event, const cJSON *tl)
{
	const cJSON *v, *stalled = cJSON_GetObjectItemCaseSensitive(tl, "stalled");
	double lost = 0;
	int nstalled = 0;

	cJSON_ArrayForEach(v, lost_array(tl))
		lost += cJSON_IsNumber(v) ? v->valuedouble : 0;
	cJSON_ArrayForEach(v, stalled)
		nstalled += cJSON_IsTrue(v);
	if (lost > 0)
		fprintf(out,
			"! %.0f samples of %.20s lost in this window (machine-wide; rows marked !): "
			"the recorder fell behind, those steps had more than they show\n",
			lost, event);
	if (nstalled)
		fprintf(out,
			"! the recorder's ingest was held up in %d step%s (rows marked stalled): "
			"samples of then may be missing (flightrec status: ingest)\n",
			nstalled, nstalled == 1 ? "" : "s");
}

/* Rows k0 to nsteps of the timeline `tl`, bars scaled to `max`; a step
 * whose samples were partly lost is marked "!", and a line says how many
 * the window lost; a step that ends after the ring's newest data (the
 * one still filling) is marked "~", and a line says so. */
static void draw_rows(FILE *out, const cJSON *tl, int k0, int nsteps, double max)
{
	const cJSON *groups = cJSON_GetObjectItemCaseSensitive(tl, "groups"), *grp;
	const char *event = fr_cli_str(tl, "event"), *unit = fr_cli_str(tl, "unit");
	double step = fr_cli_num(tl, "step_ns");
	int64_t start = (int64_t)fr_cli_num(tl, "start_ns");
	/* The event's samples lost and the ingest's stalls, per step. */
	const cJSON *lost_steps = lost_array(tl);
	const cJSON *stalled = cJSON_GetObjectItemCaseSensitive(tl, "stalled");
	/* The steps from there on end after the ring's newest data */
	const cJSON *partial = cJSON_GetObjectItemCaseSensitive(tl, "partial_from");
	int partial_from = cJSON_IsNumber(partial) ? partial->valueint : nsteps;
	char val[32];

	for (int k = k0; k < nsteps; k++) {
		const cJSON *l = cJSON_GetArrayItem(lost_steps, k);
		double sum = 0;
		char label[16];

		cJSON_ArrayForEach(grp, groups) {
			const cJSON *v =
				cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(grp, "values"),
						   k);
			sum += cJSON_IsNumber(v) ? v->valuedouble : 0;
		}
		hhmmss(start + (int64_t)(k * step), label, sizeof(label));
		step_value(event, unit, sum, step, val, sizeof(val));
		draw_row(out, groups, k, max, label, val, cJSON_IsNumber(l) ? l->valuedouble : 0,
			 cJSON_IsTrue(cJSON_GetArrayItem(stalled, k)), k >= partial_from);
	}
	lost_line(out, event, tl);
	if (partial_from < nsteps) {
		char at[16];

		hhmmss((int64_t)fr_cli_num(cJSON_GetObjectItemCaseSensitive(tl, "ring"), "last_ns"),
		       at, sizeof(at));
		fprintf(out,
			"~ partial: the ring holds %s only up to %s UTC (its newest data; a "
			"recorder still running adds the rest)\n",
			partial_from == nsteps - 1 ? "the last row" : "the rows marked ~", at);
	}
}

/* An oom timeline's victims, one line each: who the OOM killer took. */
static void victims_lines(FILE *out, const cJSON *tl)
{
	const cJSON *victims = cJSON_GetObjectItemCaseSensitive(tl, "victims"), *v;
	double more = fr_cli_num(tl, "victims_more");

	cJSON_ArrayForEach(v, victims) {
		char at[16], comm[24], cg[64], rss[32];
		const char *c = fr_cli_str(v, "comm"), *g = fr_cli_str(v, "cgroup");

		hhmmss((int64_t)fr_cli_num(v, "time_ns"), at, sizeof(at));
		/* Names are what programs chose: no escape sequence reaches the
		 * terminal. */
		snprintf(comm, sizeof(comm), "%s", c ? c : "?");
		snprintf(cg, sizeof(cg), "%s", g && g[0] ? g : "?");
		for (char *p = comm; *p; p++)
			*p = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
		for (char *p = cg; *p; p++)
			*p = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
		human_value("rss", "bytes", fr_cli_num(v, "rss"), rss, sizeof(rss));
		fprintf(out, "killed %s UTC: pid %.0f (%s) in cgroup %s, RSS %s\n", at,
			fr_cli_num(v, "pid"), comm, cg, rss);
	}
	if (more > 0)
		fprintf(out, "and %.0f more kills\n", more);
}

/* The window's crashes, OOM kills and exits by a signal (the timeline's
 * "marks"), one line each, whatever the event. */
static void marks_lines(FILE *out, const cJSON *tl)
{
	const cJSON *marks = cJSON_GetObjectItemCaseSensitive(tl, "marks"), *m;
	double more = fr_cli_num(tl, "marks_more");

	cJSON_ArrayForEach(m, marks) {
		char at[16], comm[24], sig[24], type[16];
		const char *c = fr_cli_str(m, "comm"), *g = fr_cli_str(m, "signal");

		hhmmss((int64_t)fr_cli_num(m, "time_ns"), at, sizeof(at));
		snprintf(type, sizeof(type), "%s", fr_cli_str(m, "type"));
		snprintf(comm, sizeof(comm), "%s", c ? c : "?");
		snprintf(sig, sizeof(sig), "%s", g ? g : "");
		for (char *p = comm; *p; p++)
			*p = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
		for (char *p = sig; *p; p++)
			*p = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
		for (char *p = type; *p; p++)
			*p = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
		fprintf(out, "%s %s UTC: pid %.0f (%s)%s%s\n", type, at, fr_cli_num(m, "pid"), comm,
			sig[0] ? " " : "", sig);
	}
	if (more > 0)
		fprintf(out, "and %.0f more crashes, kills and deaths (flightrec events)\n", more);
}

int fr_tl_render(FILE *out, const cJSON *tl)
{
	const cJSON *groups = cJSON_GetObjectItemCaseSensitive(tl, "groups"), *grp;
	const char *event = fr_cli_str(tl, "event"), *unit = fr_cli_str(tl, "unit");
	const char *by = fr_cli_str(tl, "by");
	double step = fr_cli_num(tl, "step_ns"), span, max = 0;
	int64_t start = (int64_t)fr_cli_num(tl, "start_ns"),
		end = (int64_t)fr_cli_num(tl, "end_ns"), from, to;
	int nsteps, g = 0;
	char a[64], b[64], dur[32], val[32];

	if (!cJSON_IsArray(groups) || !event || !unit || !by || !(step > 0) || end <= start) {
		fprintf(stderr, "%s: the answer is not a timeline\n", FR_CLI_PROG);
		return 1;
	}
	span = (double)(end - start);
	nsteps = (int)ceil(span / step);
	for (int k = 0; k < nsteps; k++) {
		double sum = 0;

		cJSON_ArrayForEach(grp, groups) {
			const cJSON *v =
				cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(grp, "values"),
						   k);
			sum += cJSON_IsNumber(v) ? v->valuedouble : 0;
		}
		max = sum > max ? sum : max;
	}
	step_text((int64_t)step, dur, sizeof(dur));
	fprintf(out, "%.20s by %.24s, %s to %s UTC, one row per %s\n", event, by,
		fr_format_time(start, a, sizeof(a)), (hhmmss(end, b, sizeof(b)), b), dur);
	if (!cJSON_GetArraySize(groups)) {
		from = (int64_t)fr_cli_num(cJSON_GetObjectItemCaseSensitive(tl, "ring"),
					   "first_ns");
		fprintf(out, "no %s samples in this window%s%s%s\n", event,
			from >= end ? ": it ends before the ring's first sample, at " : "",
			from >= end ? (hhmmss(from, a, sizeof(a)), a) : "",
			from >= end ? " UTC" : "");
		lost_line(out, event, tl);
		return 0;
	}
	covered(tl, start, end, &from, &to);
	draw_rows(out, tl, before_ring(out, start, step, nsteps, from), nsteps, max);
	fputc('\n', out);
	cJSON_ArrayForEach(grp, groups) {
		const char *name = fr_cli_str(grp, "name");
		double total = fr_cli_num(grp, "total");
		int other = name && strcmp(name, "other") == 0 &&
			    !cJSON_GetArrayItem(groups, g + 1);
		char share[32] = "";

		char shown[48];

		/* Names are what programs chose: no escape sequence reaches the
		 * terminal. */
		snprintf(shown, sizeof(shown), "%s", name ? name : "?");
		for (char *p = shown; *p; p++)
			*p = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
		human_value(event, unit, total, val, sizeof(val));
		/* Of the time the ring holds: a ring a minute old in an hour's
		 * window is not a machine idle 59 minutes of 60. */
		if (strcmp(event, "cpu") == 0 && strcmp(unit, "nanoseconds") == 0)
			snprintf(share, sizeof(share), "  %5.1f%% of a CPU",
				 total / (double)(to - from) * 100);
		/* mark, name, total, share: 2 + 44 + 1 + 13 + 17 < 80 */
		fprintf(out, "%c %-44.44s %13s%s\n", other ? '.' : MARKS[g % (sizeof(MARKS) - 1)],
			name ? name : "?", val, share);
		g++;
	}
	victims_lines(out, tl);
	marks_lines(out, tl);
	return 0;
}

/* An RFC 3339 UTC time, without a fraction when it is a whole second. */
static void rfc3339(int64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / FR_NS_PER_S);
	struct tm tm;

	if (ns % FR_NS_PER_S) {
		fr_format_time(ns, buf, len);
		return;
	}
	gmtime_r(&s, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void fr_tl_suggest(FILE *out, const cJSON *tl, const char *how)
{
	const cJSON *groups = cJSON_GetObjectItemCaseSensitive(tl, "groups"), *grp;
	const char *event = fr_cli_str(tl, "event");
	double step = fr_cli_num(tl, "step_ns"), *sums, peak = 0;
	int64_t start = (int64_t)fr_cli_num(tl, "start_ns"),
		end = (int64_t)fr_cli_num(tl, "end_ns"),
		last = (int64_t)fr_cli_num(cJSON_GetObjectItemCaseSensitive(tl, "ring"), "last_ns"),
		t0, t1;
	int64_t id = fr_event_lookup(event);
	int nsteps, k0 = 0, k1;
	char a[16], b[16], from[48], to[48], line[160], ev[40];

	if (!cJSON_IsArray(groups) || !(step > 0) || end <= start || id < 0 ||
	    fr_event_is_series((uint32_t)id))
		return;
	nsteps = (int)ceil((double)(end - start) / step);
	sums = calloc((size_t)nsteps + 1, sizeof(*sums));
	if (!sums)
		return;
	for (int k = 0; k < nsteps; k++) {
		cJSON_ArrayForEach(grp, groups) {
			const cJSON *v =
				cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(grp, "values"),
						   k);
			sums[k] += cJSON_IsNumber(v) ? v->valuedouble : 0;
		}
		if (sums[k] > peak) {
			peak = sums[k];
			k0 = k;
		}
	}
	for (k1 = k0; k1 + 1 < nsteps && sums[k1 + 1] >= peak / 2; k1++)
		;
	while (k0 > 0 && sums[k0 - 1] >= peak / 2)
		k0--;
	free(sums);
	if (!(peak > 0))
		return;
	t0 = start + (int64_t)(k0 * step);
	t1 = start + (int64_t)((k1 + 1) * step);
	hhmmss(t0, a, sizeof(a));
	hhmmss(t1, b, sizeof(b));
	rfc3339(t0, from, sizeof(from));
	rfc3339(t1, to, sizeof(to));
	/* A stretch up to the step still filling ends now: no --to */
	snprintf(line, sizeof(line), "  %s --from %s%s%s", how, from,
		 t1 > last && last > 0 ? "" : " --to ", t1 > last && last > 0 ? "" : to);
	snprintf(ev, sizeof(ev), "%s%.20s", strcmp(event, "cpu") ? " --event " : "",
		 strcmp(event, "cpu") ? event : "");
	/* 80 columns, as the chart: --event on a line of its own if need be */
	fprintf(out, "\nbusiest %s–%s UTC; its profile:\n%s%s%s\n", a,
		t1 > last && last > 0 ? "now" : b, line,
		strlen(line) + strlen(ev) > WIDTH ? " \\\n   " : "", ev);
}

int fr_tl_print_suggest(FILE *out, const char *text, int json, const char *how)
{
	cJSON *tl;
	int ret;

	if (json || !how)
		return fr_tl_print(out, text, json);
	tl = cJSON_Parse(text);
	if (!tl) {
		fprintf(stderr, "%s: the answer is not a timeline\n", FR_CLI_PROG);
		return 1;
	}
	ret = fr_tl_render(out, tl);
	if (ret == 0)
		fr_tl_suggest(out, tl, how);
	cJSON_Delete(tl);
	return ret;
}

int fr_tl_print(FILE *out, const char *text, int json)
{
	cJSON *tl;
	int ret;

	if (json) {
		fputs(text, out);
		return fflush(out) == 0 ? 0 : 1;
	}
	tl = cJSON_Parse(text);
	if (!tl) {
		fprintf(stderr, "%s: the answer is not a timeline\n", FR_CLI_PROG);
		return 1;
	}
	ret = fr_tl_render(out, tl);
	cJSON_Delete(tl);
	return ret;
}

int fr_tl_from_ring(struct fr_ring *ring, int64_t t0, int64_t t1, uint32_t event,
		    const struct fr_targets *targets, const struct fr_tl_args *a, int json)
{
	struct fr_timeline_request req = a->req;
	struct fr_timeline *t = NULL;
	char err[512], *text = NULL;
	size_t len = 0;
	FILE *mem;
	int ret;

	req.t0 = t0;
	req.t1 = t1;
	req.event = event;
	req.by = fr_tl_by(a, event);
	if (targets && (targets->npids || targets->ncomms))
		req.targets = targets;
	ret = fr_timeline_compute(ring, &req, &t, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "%s dump: %s\n", FR_CLI_PROG, err);
		return 1;
	}
	mem = open_memstream(&text, &len);
	ret = mem ? fr_timeline_write_json(mem, t) : -ENOMEM;
	if (mem && fclose(mem) != 0)
		ret = -ENOMEM;
	fr_timeline_free(t);
	if (ret < 0) {
		fprintf(stderr, "%s dump: %s\n", FR_CLI_PROG, strerror(-ret));
		free(text);
		return 1;
	}
	ret = fr_tl_print(stdout, text, json);
	free(text);
	return ret;
}
