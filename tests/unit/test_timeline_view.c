/* flightrec timeline's chart (tools/timeline_view.c) of a timeline's JSON
 * form. Regression young_ring: a ring a minute old in the default hour's
 * window was drawn as 58 rows of "0.00 CPU" and its processes as "0.0% of
 * a CPU", an idle machine; the steps before the ring's first sample are
 * one line saying so, and shares are of the time the ring holds; a window
 * wholly before the ring says so. Steps that lost samples are marked. */
#include "tools/timeline.h"

#include <stdlib.h>
#include <string.h>

#include "core/util/time.h"
#include "tests/unit/check.h"

#define SEC ((long long)FR_NS_PER_S)

/* The chart of `json` as text (malloc'd). */
static char *render(const char *json)
{
	cJSON *tl = cJSON_Parse(json);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(tl && f, "parse or memstream");
	if (!tl || !f)
		exit(1);
	CHECK(fr_tl_render(f, tl) == 0, "render");
	fclose(f);
	cJSON_Delete(tl);
	return text;
}

static int count(const char *text, const char *what)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* An hour in minutes; the ring starts 30 s into the 59th minute and a
 * process used 45 CPU-seconds over its 90 s: half a CPU. */
static void test_young_ring(void)
{
	int64_t start = 1795500000LL * SEC, step = 60 * SEC, first = start + 58 * step + 30 * SEC;
	char json[4096], vals[1024];
	size_t used = 0;
	char *text;

	for (int k = 0; k < 60; k++)
		used += (size_t)snprintf(vals + used, sizeof(vals) - used, "%s%lld", k ? "," : "",
					 k == 58   ? 15 * SEC
					 : k == 59 ? 30 * SEC
						   : 0LL);
	snprintf(json, sizeof(json),
		 "{\"version\":1,\"event\":\"cpu\",\"unit\":\"nanoseconds\",\"by\":\"process\","
		 "\"start_ns\":%lld,\"end_ns\":%lld,\"step_ns\":%lld,"
		 "\"ring\":{\"first_ns\":%lld,\"last_ns\":%lld},\"samples\":9000,"
		 "\"groups\":[{\"name\":\"burn (42)\",\"pid\":42,\"total\":%lld,\"values\":[%s]}]}",
		 (long long)start, (long long)(start + 60 * step), (long long)step,
		 (long long)first, (long long)(start + 60 * step), 45 * SEC, vals);
	text = render(json);
	CHECK(strstr(text, "no samples: before the ring's first, at ") != NULL,
	      "the steps before the ring are not said:\n%s", text);
	CHECK(count(text, "0.00 CPU") == 0, "rows of zeros before the ring:\n%s", text);
	CHECK(count(text, "\n") == 1 + 1 + 2 + 1 + 1, "not header, one line, 2 rows, legend:\n%s",
	      text);
	CHECK(strstr(text, " 50.0% of a CPU") != NULL, "the share is not of the ring's 90 s:\n%s",
	      text);
	free(text);
}

/* A ring older than the window: every step a row, shares of the window. */
static void test_old_ring(void)
{
	int64_t start = 1795500000LL * SEC, step = 10 * SEC;
	char json[2048];
	char *text;

	snprintf(json, sizeof(json),
		 "{\"version\":1,\"event\":\"cpu\",\"unit\":\"nanoseconds\",\"by\":\"process\","
		 "\"start_ns\":%lld,\"end_ns\":%lld,\"step_ns\":%lld,"
		 "\"ring\":{\"first_ns\":%lld,\"last_ns\":%lld},\"samples\":10,"
		 "\"groups\":[{\"name\":\"burn (42)\",\"pid\":42,\"total\":%lld,"
		 "\"values\":[%lld,0,%lld]}]}",
		 (long long)start, (long long)(start + 3 * step), (long long)step,
		 (long long)(start - 3600 * SEC), (long long)(start + 3 * step), 15 * SEC, 5 * SEC,
		 10 * SEC);
	text = render(json);
	CHECK(!strstr(text, "before the ring"), "an old ring said young:\n%s", text);
	CHECK(count(text, "0 CPU\n") == 3, "not a row per step:\n%s", text);
	CHECK(strstr(text, " 50.0% of a CPU") != NULL, "the share is not of the window:\n%s", text);
	free(text);
}

/* A window wholly before the ring: said, not only "no samples". */
static void test_before_ring(void)
{
	int64_t start = 1795500000LL * SEC, step = 60 * SEC;
	char json[1024];
	char *text;

	snprintf(json, sizeof(json),
		 "{\"version\":1,\"event\":\"cpu\",\"unit\":\"nanoseconds\",\"by\":\"process\","
		 "\"start_ns\":%lld,\"end_ns\":%lld,\"step_ns\":%lld,"
		 "\"ring\":{\"first_ns\":%lld,\"last_ns\":%lld},\"samples\":0,\"groups\":[]}",
		 (long long)start, (long long)(start + 60 * step), (long long)step,
		 (long long)(start + 7200 * SEC), (long long)(start + 7300 * SEC));
	text = render(json);
	CHECK(strstr(text, "no cpu samples in this window: it ends before the ring's first "
			   "sample, at ") != NULL,
	      "a window before the ring is not said:\n%s", text);
	free(text);
}

/* Samples lost and stalls: the steps that lost some or stalled are
 * marked and legend lines say how many the window lost and how many steps
 * stalled; a timeline without them has neither; the form of "lost" before
 * the arrays still reads. */
static void test_lost(void)
{
	int64_t start = 1795500000LL * SEC, step = 10 * SEC;
	char json[2048];
	char *text;

	snprintf(json, sizeof(json),
		 "{\"version\":1,\"event\":\"cpu\",\"unit\":\"nanoseconds\",\"by\":\"process\","
		 "\"start_ns\":%lld,\"end_ns\":%lld,\"step_ns\":%lld,"
		 "\"ring\":{\"first_ns\":%lld,\"last_ns\":%lld},\"samples\":10,"
		 "\"lost_total\":4150,\"lost\":[0,4000,150],\"stalled\":[true,true,false],"
		 "\"stalled_steps\":2,"
		 "\"groups\":[{\"name\":\"app (42)\",\"pid\":42,\"total\":%lld,"
		 "\"values\":[%lld,%lld,%lld]}]}",
		 (long long)start, (long long)(start + 3 * step), (long long)step,
		 (long long)(start - 3600 * SEC), (long long)(start + 3 * step), 3 * SEC, SEC, SEC,
		 SEC);
	text = render(json);
	CHECK(count(text, "  ! stalled\n") == 1 && count(text, "  ! 4000 lost, stalled\n") == 1 &&
		      count(text, "  ! 150 lost\n") == 1,
	      "not each step that lost samples or stalled marked:\n%s", text);
	CHECK(strstr(text, "! 4150 samples of cpu lost in this window") != NULL &&
		      strstr(text, "! the recorder's ingest was held up in 2 steps") != NULL,
	      "the window's losses and stalls are not said:\n%s", text);
	free(text);

	snprintf(json, sizeof(json),
		 "{\"version\":1,\"event\":\"offcpu\",\"unit\":\"nanoseconds\",\"by\":\"process\","
		 "\"start_ns\":%lld,\"end_ns\":%lld,\"step_ns\":%lld,"
		 "\"ring\":{\"first_ns\":%lld,\"last_ns\":%lld},\"samples\":10,"
		 "\"lost\":{\"total\":4150,\"values\":[0,4000,150]},"
		 "\"groups\":[{\"name\":\"sleepers (42)\",\"pid\":42,\"total\":%lld,"
		 "\"values\":[%lld,%lld,%lld]}]}",
		 (long long)start, (long long)(start + 3 * step), (long long)step,
		 (long long)(start - 3600 * SEC), (long long)(start + 3 * step), 30 * SEC, 10 * SEC,
		 10 * SEC, 10 * SEC);
	text = render(json);
	CHECK(count(text, " lost\n") == 2, "not the two steps that lost samples marked:\n%s", text);
	CHECK(strstr(text, "! 4150 samples of offcpu lost in this window") != NULL,
	      "the window's losses are not said:\n%s", text);
	free(text);
	snprintf(json, sizeof(json),
		 "{\"version\":1,\"event\":\"offcpu\",\"unit\":\"nanoseconds\",\"by\":\"process\","
		 "\"start_ns\":%lld,\"end_ns\":%lld,\"step_ns\":%lld,\"samples\":1,"
		 "\"groups\":[{\"name\":\"sleepers (42)\",\"pid\":42,\"total\":1,"
		 "\"values\":[1,0,0]}]}",
		 (long long)start, (long long)(start + 3 * step), (long long)step);
	text = render(json);
	CHECK(!strstr(text, "!"), "losses said of a timeline without any:\n%s", text);
	free(text);
}

/* Regression partial_row: the last step of a window ending now, still
 * filling, was drawn as a whole step (its bar short, as if the machine
 * had gone idle). "partial_from" marks it "~" with a line saying up to
 * when the ring holds it; without "partial_from" no row is marked. */
static void test_partial(void)
{
	int64_t start = 1795500000LL * SEC, step = 10 * SEC;
	char json[2048];
	char *text;

	snprintf(json, sizeof(json),
		 "{\"version\":1,\"event\":\"cpu\",\"unit\":\"nanoseconds\",\"by\":\"process\","
		 "\"start_ns\":%lld,\"end_ns\":%lld,\"step_ns\":%lld,"
		 "\"ring\":{\"first_ns\":%lld,\"last_ns\":%lld},\"partial_from\":2,\"samples\":10,"
		 "\"groups\":[{\"name\":\"burn (42)\",\"pid\":42,\"total\":%lld,"
		 "\"values\":[%lld,%lld,%lld]}]}",
		 (long long)start, (long long)(start + 3 * step), (long long)step,
		 (long long)(start - 3600 * SEC), (long long)(start + 2 * step + 3 * SEC), 23 * SEC,
		 10 * SEC, 10 * SEC, 3 * SEC);
	text = render(json);
	CHECK(count(text, " ~\n") == 1 && strstr(text, "0.30 CPU ~\n"),
	      "the last row is not marked partial:\n%s", text);
	CHECK(strstr(text, "~ partial: the ring holds the last row only up to 06:00:23 UTC"),
	      "no legend for the partial row:\n%s", text);
	free(text);
	snprintf(json, sizeof(json),
		 "{\"version\":1,\"event\":\"cpu\",\"unit\":\"nanoseconds\",\"by\":\"process\","
		 "\"start_ns\":%lld,\"end_ns\":%lld,\"step_ns\":%lld,"
		 "\"ring\":{\"first_ns\":%lld,\"last_ns\":%lld},\"samples\":10,"
		 "\"groups\":[{\"name\":\"burn (42)\",\"pid\":42,\"total\":%lld,"
		 "\"values\":[%lld,%lld,%lld]}]}",
		 (long long)start, (long long)(start + 3 * step), (long long)step,
		 (long long)(start - 3600 * SEC), (long long)(start + 3 * step), 30 * SEC, 10 * SEC,
		 10 * SEC, 10 * SEC);
	text = render(json);
	CHECK(!strstr(text, "~"), "a whole timeline marked partial:\n%s", text);
	free(text);
}

/* suggest(json, how) of fr_tl_suggest() as text (malloc'd). */
static char *suggest(const char *json)
{
	cJSON *tl = cJSON_Parse(json);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(tl && f, "parse or memstream");
	if (!tl || !f)
		exit(1);
	fr_tl_suggest(f, tl, "flightrec attach");
	fclose(f);
	cJSON_Delete(tl);
	return text;
}

/* Regression suggest_attach: the README showed the attach line for the
 * chart's busy minute, which the command never printed. The busiest
 * stretch (the peak step and its neighbours with at least half as much)
 * is printed as an attach command; an event other than cpu says
 * --event; a stretch reaching the step still filling ends now (no --to);
 * a series (rss) gets none. */
static void test_suggest(void)
{
	int64_t start = 1795500000LL * SEC, step = 30 * SEC; /* 2026-11-24T06:00:00Z */
	char json[2048];
	char *text;

	snprintf(json, sizeof(json),
		 "{\"version\":1,\"event\":\"cpu\",\"unit\":\"nanoseconds\",\"by\":\"process\","
		 "\"start_ns\":%lld,\"end_ns\":%lld,\"step_ns\":%lld,"
		 "\"ring\":{\"first_ns\":%lld,\"last_ns\":%lld},\"samples\":10,"
		 "\"groups\":[{\"name\":\"pg_dump (4242)\",\"pid\":4242,\"total\":1,"
		 "\"values\":[%lld,%lld,%lld,%lld,%lld]}]}",
		 (long long)start, (long long)(start + 5 * step), (long long)step,
		 (long long)(start - 3600 * SEC), (long long)(start + 5 * step), 6 * SEC, 6 * SEC,
		 58 * SEC, 59 * SEC, 6 * SEC);
	text = suggest(json);
	CHECK(strcmp(text, "\nbusiest 06:01:00–06:02:00 UTC; its profile:\n"
			   "  flightrec attach --from 2026-11-24T06:01:00Z --to "
			   "2026-11-24T06:02:00Z\n") == 0,
	      "the busy minute's attach:\n%s", text);
	free(text);
	/* offcpu, its peak in the last step, which the ring holds only in part */
	snprintf(json, sizeof(json),
		 "{\"version\":1,\"event\":\"offcpu\",\"unit\":\"nanoseconds\",\"by\":\"process\","
		 "\"start_ns\":%lld,\"end_ns\":%lld,\"step_ns\":%lld,"
		 "\"ring\":{\"first_ns\":%lld,\"last_ns\":%lld},\"partial_from\":2,\"samples\":10,"
		 "\"groups\":[{\"name\":\"pg_dump (4242)\",\"pid\":4242,\"total\":1,"
		 "\"values\":[%lld,%lld,%lld]}]}",
		 (long long)start, (long long)(start + 3 * step), (long long)step,
		 (long long)(start - 3600 * SEC), (long long)(start + 2 * step + SEC), 1 * SEC,
		 40 * SEC, 50 * SEC);
	text = suggest(json);
	CHECK(strstr(text, "busiest 06:00:30–now UTC") &&
		      strstr(text, ":00:30Z --event offcpu\n") && !strstr(text, "--to"),
	      "offcpu up to now:\n%s", text);
	free(text);
	snprintf(json, sizeof(json),
		 "{\"version\":1,\"event\":\"rss\",\"unit\":\"bytes\",\"by\":\"process\","
		 "\"start_ns\":%lld,\"end_ns\":%lld,\"step_ns\":%lld,\"samples\":1,"
		 "\"groups\":[{\"name\":\"pg_dump (4242)\",\"pid\":4242,\"total\":1,"
		 "\"values\":[1,2,3]}]}",
		 (long long)start, (long long)(start + 3 * step), (long long)step);
	text = suggest(json);
	CHECK(text[0] == '\0', "a series got an attach:\n%s", text);
	free(text);
}

int main(void)
{
	test_suggest();
	test_partial();
	test_lost();
	test_before_ring();
	test_young_ring();
	test_old_ring();
	return failures != 0;
}
