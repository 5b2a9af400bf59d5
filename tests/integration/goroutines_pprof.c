/* Writes a goroutine profile shaped as the recorder's contract
 * (recorder/requests/goroutines.h), encoded with the project's pprof
 * encoder, for goroutines_render.sh to render with `flightrec goroutines
 * --from` and to have `go tool pprof` read:
 *
 *  - goroutines 18..22, waiting in "chan receive" for 12s..20s (22's a
 *    lower bound), created by main.spawnWaiters in goroutine 1, with the
 *    program's label endpoint=/a and a label the program named "state"
 *    (given as "go:state"); their stack has an inlined frame;
 *  - goroutine 7 running on thread 4250, its stack not read;
 *  - goroutine 9 sleeping, its stack changed under the reader;
 *  - goroutine 30 in "IO wait", its label value holding a terminal
 *    escape and invalid UTF-8.
 * Comments pid=4242, go=go1.19.8, system=4.
 *
 * Usage: goroutines_pprof FILE.pb.gz */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/pprof/pprof.h"

#define SEC 1000000000LL

static int put(void *arg, const void *buf, size_t len)
{
	return fwrite(buf, 1, len, arg) == len ? 0 : -5;
}

/* The waiters' stack, innermost first: gopark, chanrecv, chanrecv1, then
 * main.inner inlined into main.waitForJob, then goexit. */
static size_t waiter_stack(struct fr_pprof *p, uint64_t m, uint64_t *locs)
{
	const char *rt = "/usr/lib/go-1.19/src/runtime/";
	char file[128];
	static const struct {
		const char *fn, *file;
		uint64_t addr, line;
	} frames[] = {
		{"runtime.gopark", "proc.go", 0x43c5f6, 363},
		{"runtime.chanrecv", "chan.go", 0x40637c, 583},
		{"runtime.chanrecv1", "chan.go", 0x405f38, 442},
		{"runtime.goexit", "asm_amd64.s", 0x46a3c1, 1594},
	};
	struct fr_pprof_line lines[2];
	size_t n = 0;

	for (size_t i = 0; i < 3; i++) {
		snprintf(file, sizeof(file), "%s%s", rt, frames[i].file);
		lines[0].function_id = fr_pprof_function(p, frames[i].fn, frames[i].fn, file);
		lines[0].line = frames[i].line;
		locs[n++] = fr_pprof_location_lines(p, m, frames[i].addr, lines, 1);
	}
	lines[0].function_id = fr_pprof_function(p, "main.inner", "main.inner", "/src/app/main.go");
	lines[0].line = 25;
	lines[1].function_id =
		fr_pprof_function(p, "main.waitForJob", "main.waitForJob", "/src/app/main.go");
	lines[1].line = 31;
	locs[n++] = fr_pprof_location_lines(p, m, 0x4a1b2c, lines, 2);
	snprintf(file, sizeof(file), "%s%s", rt, frames[3].file);
	lines[0].function_id = fr_pprof_function(p, frames[3].fn, frames[3].fn, file);
	lines[0].line = frames[3].line;
	locs[n++] = fr_pprof_location_lines(p, m, frames[3].addr, lines, 1);
	return n;
}

static void waiters(struct fr_pprof *p, const uint64_t *locs, size_t nlocs)
{
	for (int64_t goid = 18; goid <= 22; goid++) {
		int64_t waiting = (12 + 2 * (goid - 18)) * SEC, values[2] = {1, waiting};
		struct fr_pprof_label l[12] = {
			{.key = "goid", .num = goid},
			{.key = "creator_goid", .num = 1},
			{.key = "waiting_ns", .num = waiting},
			{.key = "state", .str = "waiting"},
			{.key = "wait", .str = "chan receive"},
			{.key = "start", .str = "main.waitForJob"},
			{.key = "created_by", .str = "main.spawnWaiters"},
			{.key = "created_at", .str = "/src/app/main.go:40"},
			{.key = "endpoint", .str = "/a"},
			{.key = "go:state", .str = "busy"},
			{.key = "waited", .str = "at least"},
		};

		fr_pprof_sample(p, locs, nlocs, values, 2, l, goid == 22 ? 11 : 10);
	}
}

static void others(struct fr_pprof *p, const uint64_t *locs, size_t nlocs)
{
	int64_t zero[2] = {1, 0}, io[2] = {1, 3 * SEC};
	struct fr_pprof_label running[7] = {
		{.key = "goid", .num = 7},
		{.key = "thread", .num = 4250},
		{.key = "state", .str = "running"},
		{.key = "start", .str = "main.spin"},
		{.key = "created_by", .str = "main.main"},
		{.key = "created_at", .str = "/src/app/main.go:20"},
		{.key = "stack", .str = "running"},
	};
	struct fr_pprof_label changed[4] = {
		{.key = "goid", .num = 9},
		{.key = "state", .str = "waiting"},
		{.key = "wait", .str = "sleep"},
		{.key = "stack", .str = "changed"},
	};
	struct fr_pprof_label hostile[5] = {
		{.key = "goid", .num = 30},
		{.key = "state", .str = "waiting"},
		{.key = "wait", .str = "IO wait"},
		{.key = "waiting_ns", .num = 3 * SEC},
		{.key = "user", .str = "bad\x1b[2J\xff"},
	};

	fr_pprof_sample(p, NULL, 0, zero, 2, running, 7);
	fr_pprof_sample(p, NULL, 0, zero, 2, changed, 4);
	fr_pprof_sample(p, locs, nlocs, io, 2, hostile, 5);
}

int main(int argc, char **argv)
{
	FILE *f = argc == 2 ? fopen(argv[1], "wbx") : NULL;
	struct fr_pprof *p;
	uint64_t m, locs[8];
	size_t nlocs;

	if (!f) {
		fprintf(stderr, "usage: goroutines_pprof NEW-FILE.pb.gz\n");
		return 2;
	}
	if (!(p = fr_pprof_new(6, put, f)))
		return 1;
	fr_pprof_sample_type(p, "goroutines", "count");
	fr_pprof_sample_type(p, "waiting", "nanoseconds");
	fr_pprof_period(p, "goroutines", "count", 1);
	fr_pprof_comment(p, "pid=4242");
	fr_pprof_comment(p, "go=go1.19.8");
	fr_pprof_comment(p, "system=4");
	m = fr_pprof_mapping(p, 0x400000, 0x600000, 0, "/src/app/app", NULL,
			     FR_PPROF_HAS_FUNCTIONS | FR_PPROF_HAS_FILENAMES |
				     FR_PPROF_HAS_LINE_NUMBERS | FR_PPROF_HAS_INLINE_FRAMES);
	nlocs = waiter_stack(p, m, locs);
	waiters(p, locs, nlocs);
	others(p, locs, nlocs);
	if (fr_pprof_finish(p) < 0 || fclose(f) != 0) {
		fr_pprof_free(p);
		fprintf(stderr, "goroutines_pprof: cannot write %s\n", argv[1]);
		return 1;
	}
	fr_pprof_free(p);
	return 0;
}
