/* Seeds of the pprof target: profiles written by the project's own
 * encoder (core/pprof/pprof.c), un-gzip'ed: what attach writes and what
 * the exporter and `flightrec top` read back, with inline frames, source
 * lines, function files, labels and an unsymbolized address. */
#include "tests/fuzz/make_seeds.h"

#include <stdlib.h>
#include <string.h>

#include "core/pprof/pprof.h"
#include "core/util/compress.h"

struct buf {
	unsigned char *p;
	size_t len, cap;
};

static int put(void *arg, const void *p, size_t len)
{
	struct buf *b = arg;

	if (b->len + len > b->cap) {
		b->cap = (b->len + len) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			die("realloc", 12);
	}
	memcpy(b->p + b->len, p, len);
	b->len += len;
	return 0;
}

static void pprof_seed(const char *name, int nsamples)
{
	struct buf gz = {0};
	struct fr_pprof *p = fr_pprof_new(1, put, &gz);
	uint64_t m, f1, f2, f3, l1, l2, l3, locs[3];
	struct fr_pprof_line lines[2];
	void *raw;
	size_t rawlen;

	if (!p)
		die("fr_pprof_new", 12);
	fr_pprof_sample_type(p, "samples", "count");
	fr_pprof_sample_type(p, "cpu", "nanoseconds");
	fr_pprof_period(p, "cpu", "nanoseconds", 52631578);
	fr_pprof_time(p, T0, 10 * SEC);
	fr_pprof_comment(p, "flightrec seed");
	m = fr_pprof_mapping(p, 0x400000, 0x500000, 0, "/usr/bin/app", "f0bc78451ad9", 15);
	f1 = fr_pprof_function(p, "compress_block", NULL, "src/compress.c");
	f2 = fr_pprof_function(p, "inlined_helper", NULL, "src/helper.h");
	f3 = fr_pprof_function(p, "main", NULL, NULL);
	lines[0] = (struct fr_pprof_line){.function_id = f2, .line = 12};
	lines[1] = (struct fr_pprof_line){.function_id = f1, .line = 340};
	l1 = fr_pprof_location_lines(p, m, 0x401234, lines, 2);
	l2 = fr_pprof_location(p, m, 0x400100, f3);
	l3 = fr_pprof_location(p, 0, 0xffffffff81000000ull, 0);
	locs[0] = l1;
	locs[1] = l2;
	locs[2] = l3;
	for (int i = 0; i < nsamples; i++) {
		int64_t v[2] = {1 + i, (1 + i) * 52631578ll};
		struct fr_pprof_label lab[4] = {
			{.key = "pid", .num = 100 + i},
			{.key = "comm", .str = "app"},
			{.key = "cgroup", .str = "/system.slice/app.service"},
			{.key = "tenant", .str = i % 2 ? "acme" : "globex"},
		};

		fr_pprof_sample(p, locs + (i % 3), 3 - (size_t)(i % 3), v, 2, lab, 4);
	}
	if (fr_pprof_finish(p) < 0)
		die("fr_pprof_finish", 5);
	fr_pprof_free(p);
	if (fr_gunzip(gz.p, gz.len, &raw, &rawlen) < 0)
		die("fr_gunzip", 5);
	write_seed("pprof", name, -1, raw, rawlen);
	free(raw);
	free(gz.p);
}

void make_pprof_seeds(void)
{
	clean_dir("pprof");
	pprof_seed("empty", 0);
	pprof_seed("small", 3);
	pprof_seed("labels", 12);
}
