/* Python frames in profiles (core/query/profile_python.c): samples of
 * app whose stacks hold FR_FRAME_PY frames (core/store/sample.h) above a
 * native one, and a symbol cache with app's Python names and db's status
 * (core/symbols/pycodes.h, written with the recorder's encoder). The pprof
 * names hot_b and handle (function, system name, file, first line) on a
 * "[python]" mapping that is not the main one, hot_b at the line its
 * location table gives the offset and handle at its first line (offset
 * not known), an unknown code object "[python] 0xADDR"; the comments say
 * app's release and functions named, and db's problem; folded stacks use
 * the qualified names. Without the cache, or with app's file spoilt, its
 * Python frames are unnamed. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/query/profile.h"
#include "core/store/ring.h"
#include "core/symbols/pycodes.h"

#include "tests/unit/fixture.h"

#define HOT_B 0x7f0000001000ull
#define HANDLE 0x7f0000002000ull
#define UNKNOWN 0x7f0000003000ull
/* fixture.c's start of every process. */
#define START_NS (T0 - 3600 * SEC)

static char cache[300];

/* 3.11's location table: 2 code units at first line + 1 (kind 13, a
 * varint delta of +1), 2 more at + 2 (kind 11): offset 6 is line 16. */
static const uint8_t hot_b_lines[] = {0xe9, 0x02, 0xd9};

static int write_file(uint32_t pid, uint32_t uid, const char *version, const char *problem,
		      const struct fr_pycode *recs, size_t n)
{
	char path[400];
	uint8_t *buf;
	size_t len, kept;
	int fd, ok;

	if (fr_pycodes_encode(version, problem, recs, n, FR_PYCODES_MAX_SIZE, &buf, &len, &kept) <
		    0 ||
	    fr_symcache_python_name(path, sizeof(path), cache, pid, START_NS, uid) < 0)
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ok = fd >= 0 && write(fd, buf, len) == (ssize_t)len;
	if (fd >= 0)
		close(fd);
	free(buf);
	return ok && kept == n ? 0 : -1;
}

static struct fr_ring *python_ring(void)
{
	struct fr_ring *r = test_ring_create("python");
	const struct stack *u = &stacks[ST_USER];
	uint64_t ips[4] = {FR_FRAME_PY(HOT_B, 6), FR_FRAME_PY(HANDLE, FR_FRAME_PY_NO_OFFSET),
			   FR_FRAME_PY(UNKNOWN, 4), u->ips[u->nr_frames - 1]};
	struct writer w;

	if (!r)
		return NULL;
	w_init(&w, r);
	for (int i = 0; i < 5; i++) {
		struct fr_sample s = {.time_ns = T0 + i * PERIOD_99 + 1,
				      .pid = PID_APP,
				      .tid = PID_APP,
				      .event = FR_EVENT_CPU,
				      .weight = 1,
				      .rate_hz = 99,
				      .nr_frames = 4,
				      .ips = ips};

		CHECK(fr_chunk_builder_add(w.b, &s) == 0, "add a sample");
	}
	w_add(&w, T0 + 6 * PERIOD_99, PID_DB, PID_DB, 0, 99, ST_USER);
	w_fini(&w);
	return r;
}

static const struct fr_pprof_rfunction *function_named(const struct raw *r, const char *name)
{
	for (size_t i = 0; i < r->d->nfunctions; i++)
		if (strcmp(r->d->functions[i].name, name) == 0)
			return &r->d->functions[i];
	return NULL;
}

/* The line of the location whose function is `name`, or -1. */
static int64_t line_of(const struct raw *r, const char *name)
{
	const struct fr_pprof_data *d = r->d;

	for (size_t i = 0; i < d->nlocations; i++)
		for (size_t k = 0; k < d->locations[i].nline; k++)
			if (strcmp(d->functions[d->line_funcs[d->locations[i].line + k]].name,
				   name) == 0)
				return d->line_nums[d->locations[i].line + k];
	return -1;
}

static bool has_comment(const struct raw *r, const char *text)
{
	for (size_t i = 0; i < r->d->ncomments; i++)
		if (strcmp(r->d->comments[i], text) == 0)
			return true;
	return false;
}

static void check_named(struct fr_ring *ring)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	const struct fr_pprof_rfunction *f;
	char unknown[64], want[128];
	struct out o;
	struct raw raw;
	int before = failures;

	req_init(&q, T0, T0 + 60 * SEC, 0);
	q.symbol_cache = cache;
	if (run(ring, &q, &res, &o, "named") != 0 || raw_read(&raw, &o, "named") != 0) {
		out_free(&o);
		return;
	}
	f = function_named(&raw, "hot_b");
	CHECK(f && strcmp(f->filename, "/srv/app.py") == 0 && f->start_line == 14,
	      "hot_b in /srv/app.py from line 14");
	CHECK(line_of(&raw, "hot_b") == 16, "hot_b at line %" PRId64, line_of(&raw, "hot_b"));
	f = function_named(&raw, "Handler.handle");
	CHECK(f && strcmp(f->filename, "/srv/app.py") == 0 && f->start_line == 20,
	      "Handler.handle in /srv/app.py from line 20");
	CHECK(line_of(&raw, "Handler.handle") == 20, "handle at its first line");
	snprintf(unknown, sizeof(unknown), "[python] 0x%llx", (unsigned long long)UNKNOWN);
	CHECK(function_named(&raw, unknown), "the unknown code is %s", unknown);
	CHECK(raw.d->nmappings >= 2 && strcmp(raw.d->mappings[0].filename, "[python]") != 0,
	      "the main mapping is not [python]");
	snprintf(want, sizeof(want), "python: pid %u (CPython 3.11.2): 2 functions named", PID_APP);
	CHECK(has_comment(&raw, want), "comment: %s", want);
	snprintf(want, sizeof(want),
		 "python: pid %u (CPython 3.9.18): Python frames not read: release 3.9 not "
		 "supported",
		 PID_DB);
	CHECK(has_comment(&raw, want), "comment: %s", want);
	raw_done(&raw, before);
	out_free(&o);
}

static void check_folded(struct fr_ring *ring)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	char *text;
	struct out o;

	req_init(&q, T0, T0 + 60 * SEC, 0);
	q.symbol_cache = cache;
	q.format = FR_PROFILE_FOLDED;
	if (run(ring, &q, &res, &o, "folded") != 0)
		return;
	text = strndup((const char *)o.buf, o.len);
	CHECK(text && strstr(text, "Handler.handle;hot_b "), "folded: %s", text ? text : "");
	free(text);
	out_free(&o);
}

static void check_no_cache(struct fr_ring *ring)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	char unknown[64];
	struct out o;
	struct raw raw;
	int before = failures;

	req_init(&q, T0, T0 + 60 * SEC, 0);
	if (run(ring, &q, &res, &o, "uncached") != 0 || raw_read(&raw, &o, "uncached") != 0) {
		out_free(&o);
		return;
	}
	snprintf(unknown, sizeof(unknown), "[python] 0x%llx", (unsigned long long)HOT_B);
	CHECK(function_named(&raw, unknown) && !function_named(&raw, "hot_b"),
	      "without the cache: %s", unknown);
	for (size_t i = 0; i < raw.d->ncomments; i++)
		CHECK(strncmp(raw.d->comments[i], "python:", 7) != 0, "comment %s",
		      raw.d->comments[i]);
	raw_done(&raw, before);
	out_free(&o);
}

/* app's file spoilt (cut in its last record): its frames unnamed, no
 * comment for it, the rest as before. */
static void check_spoilt(struct fr_ring *ring, const struct fr_pycode *app)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	char path[400], unknown[64], want[64];
	struct stat st;
	struct out o;
	struct raw raw;
	int before = failures;

	fr_symcache_python_name(path, sizeof(path), cache, PID_APP, START_NS, 1000);
	CHECK(write_file(PID_APP, 1000, "3.11.2", NULL, app, 2) == 0 && stat(path, &st) == 0 &&
		      truncate(path, st.st_size - 1) == 0,
	      "app's file cut");
	req_init(&q, T0, T0 + 60 * SEC, 0);
	q.symbol_cache = cache;
	if (run(ring, &q, &res, &o, "spoilt") != 0 || raw_read(&raw, &o, "spoilt") != 0) {
		out_free(&o);
		return;
	}
	snprintf(unknown, sizeof(unknown), "[python] 0x%llx", (unsigned long long)HOT_B);
	CHECK(function_named(&raw, unknown) && !function_named(&raw, "hot_b"), "spoilt: %s",
	      unknown);
	snprintf(want, sizeof(want), "python: pid %u ", PID_APP);
	for (size_t i = 0; i < raw.d->ncomments; i++)
		CHECK(strncmp(raw.d->comments[i], want, strlen(want)) != 0, "comment %s",
		      raw.d->comments[i]);
	raw_done(&raw, before);
	out_free(&o);
}

int main(void)
{
	const struct fr_pycode app[] = {
		{HOT_B, 14, FR_PY_LINES_LOCATIONS, "hot_b", "/srv/app.py", hot_b_lines,
		 sizeof(hot_b_lines)},
		{HANDLE, 20, FR_PY_LINES_LOCATIONS, "Handler.handle", "/srv/app.py", NULL, 0},
	};
	struct fr_ring *r;

	if (fixture_init("profile-python") != 0)
		return 1;
	snprintf(cache, sizeof(cache), "%s/cache", tmpdir);
	CHECK(mkdir(cache, 0700) == 0, "mkdir %s", cache);
	/* The table as the test reads it: offset 6 is line 16. */
	CHECK(fr_py_line(FR_PY_LINES_LOCATIONS, hot_b_lines, sizeof(hot_b_lines), 14, 6) == 16,
	      "the location table");
	/* app runs as uid 1000, db as root (fixture.c). */
	CHECK(write_file(PID_APP, 1000, "3.11.2", NULL, app, 2) == 0, "app's file");
	CHECK(write_file(PID_DB, 0, "3.9.18", "release 3.9 not supported", NULL, 0) == 0,
	      "db's file");
	r = python_ring();
	if (r) {
		check_named(r);
		check_folded(r);
		check_no_cache(r);
		check_spoilt(r, app);
		test_ring_done(r);
	}
	return fixture_fini();
}
