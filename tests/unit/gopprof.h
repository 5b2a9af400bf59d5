/* Shared by the unit tests that read their output back with the
 * independent reader, `go tool pprof`, and by the encoder test
 * (test_pprof.c): the two profiles it checks through the project's decoder
 * are the ones the compatibility test has Go read. */
#ifndef FR_TESTS_GOPPROF_H
#define FR_TESTS_GOPPROF_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pprof/pprof.h"

#define FR_TEST_PERIOD 10000000LL
#define FR_TEST_TIME_NS 1795352700000000000LL
#define FR_TEST_DURATION_NS 2500000000LL

/* The ids fr_test_pprof_small() got back from the encoder. */
struct fr_test_small_ids {
	uint64_t m_app, m_libc;
	uint64_t f_main, f_work, f_work2, f_memcpy, f_other;
	uint64_t l_main, l_raw;
};

/* The small profile: two sample types, period, time, comments, two
 * mappings, four functions (one interned twice), four locations (one
 * unsymbolized) and three samples, the first with string and numeric
 * labels. Samples 9, cpu 9 * FR_TEST_PERIOD. */
static inline void fr_test_pprof_small(struct fr_pprof *p, struct fr_test_small_ids *id)
{
	struct fr_pprof_label labels[3] = {
		{.key = "thread", .str = "worker-1"},
		{.key = "bytes", .num = 4096},
		{.key = "cpu", .num = 3},
	};
	uint64_t stack1[3], stack2[2], stack3[1], l_work, l_memcpy;
	int64_t v1[2] = {3, 3 * FR_TEST_PERIOD};
	int64_t v2[2] = {5, 5 * FR_TEST_PERIOD};
	int64_t v3[2] = {1, FR_TEST_PERIOD};

	fr_pprof_sample_type(p, "samples", "count");
	fr_pprof_sample_type(p, "cpu", "nanoseconds");
	fr_pprof_period(p, "cpu", "nanoseconds", FR_TEST_PERIOD);
	fr_pprof_time(p, FR_TEST_TIME_NS, FR_TEST_DURATION_NS);
	fr_pprof_default_sample_type(p, "cpu");
	fr_pprof_comment(p, "recorded by flightrec-test");
	fr_pprof_comment(p, "second comment line");

	id->m_app = fr_pprof_mapping(p, 0x400000, 0x500000, 0, "/usr/bin/frtestapp",
				     "0123456789abcdef0123456789abcdef01234567", 1);
	id->m_libc = fr_pprof_mapping(p, 0x7f0000000000, 0x7f0000200000, 0x28000,
				      "/usr/lib/libc.so.6", NULL, 1);

	id->f_main = fr_pprof_function(p, "frtest_main", "frtest_main", "app.c");
	id->f_work = fr_pprof_function(p, "frtest_work", NULL, "app.c");
	id->f_work2 = fr_pprof_function(p, "frtest_work", NULL, "app.c");
	id->f_memcpy = fr_pprof_function(p, "frtest_memcpy", "__memcpy_avx2", NULL);
	/* Same name, different file: a different function. */
	id->f_other = fr_pprof_function(p, "frtest_work", NULL, "other.c");

	id->l_main = fr_pprof_location(p, id->m_app, 0x401000, id->f_main);
	l_work = fr_pprof_location(p, id->m_app, 0x402000, id->f_work);
	l_memcpy = fr_pprof_location(p, id->m_libc, 0x7f0000001234, id->f_memcpy);
	id->l_raw = fr_pprof_location(p, 0, 0xdeadbeef, 0);

	stack1[0] = l_memcpy;
	stack1[1] = l_work;
	stack1[2] = id->l_main;
	stack2[0] = l_work;
	stack2[1] = id->l_main;
	stack3[0] = id->l_raw;
	fr_pprof_sample(p, stack1, 3, v1, 2, labels, 3);
	fr_pprof_sample(p, stack2, 2, v2, 2, labels, 1);
	fr_pprof_sample(p, stack3, 1, v3, 2, NULL, 0);
}

#define FR_TEST_BIG_SAMPLES 200000
#define FR_TEST_BIG_FUNCS 5000

/* The large profile: FR_TEST_BIG_SAMPLES samples over 1000 distinct stacks
 * of up to FR_TEST_BIG_FUNCS functions, each with a thread name and a tid
 * label. Returns the sum of the "samples" column, or -ENOMEM. */
static inline int64_t fr_test_pprof_big(struct fr_pprof *p)
{
	uint64_t *locs = calloc(FR_TEST_BIG_FUNCS + 1, sizeof(*locs)), stack[32];
	char name[64], thread[32];
	int64_t sum = 0;

	if (!locs)
		return -ENOMEM;
	fr_pprof_sample_type(p, "samples", "count");
	fr_pprof_sample_type(p, "cpu", "nanoseconds");
	fr_pprof_period(p, "cpu", "nanoseconds", FR_TEST_PERIOD);
	fr_pprof_comment(p, "big profile");
	fr_pprof_mapping(p, 0x400000, 0x8000000, 0, "/usr/bin/big", "abcdef", 1);
	for (uint64_t i = 0; i < FR_TEST_BIG_SAMPLES; i++) {
		/* Real profiles repeat stacks; 1000 distinct ones keep
		 * go tool pprof quick while every sample is still encoded. */
		uint32_t x = (uint32_t)((i % 1000) * 2654435761u);
		size_t depth = 4 + x % 28;
		int64_t v[2] = {1 + (int64_t)(x % 3), 0};
		struct fr_pprof_label label[2] = {
			{.key = "thread", .str = thread},
			{.key = "tid", .num = (int64_t)(i % 64)},
		};

		v[1] = v[0] * FR_TEST_PERIOD;
		sum += v[0];
		snprintf(thread, sizeof(thread), "worker-%u", (unsigned)(i % 64));
		for (size_t k = 0; k < depth; k++) {
			uint32_t fi = (x >> (k % 16)) % FR_TEST_BIG_FUNCS;

			/* Functions and their locations are interned lazily,
			 * the way a symbolizer would. */
			if (!locs[fi]) {
				snprintf(name, sizeof(name),
					 "ns::Class::method_%u(int, char const*)", fi);
				locs[fi] = fr_pprof_location(p, 1, 0x400000 + 16 * fi,
							     fr_pprof_function(p, name, name,
									       "big.cc"));
			}
			stack[k] = locs[fi];
		}
		fr_pprof_sample(p, stack, depth, v, 2, label, 2);
	}
	free(locs);
	return sum;
}

/* Runs `GO tool pprof ARGS FILE`, its stderr kept in TMPDIR/stderr, and
 * returns its stdout as a malloc'd string; on failure prints the command's
 * status and stderr and returns NULL. */
static inline char *fr_test_go_pprof(const char *go, const char *args, const char *file,
				     const char *tmpdir)
{
	char cmd[2048];
	char *out = NULL, *grown;
	size_t len = 0, cap = 0, n;
	FILE *f;
	int status;

	snprintf(cmd, sizeof(cmd), "'%s' tool pprof %s '%s' 2>'%s/stderr'", go, args, file, tmpdir);
	f = popen(cmd, "r");
	if (!f)
		return NULL;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			grown = realloc(out, cap);
			if (!grown)
				break;
			out = grown;
		}
		n = fread(out + len, 1, 4096, f);
		if (n == 0)
			break;
		len += n;
	}
	status = pclose(f);
	if (out)
		out[len] = '\0';
	if (status != 0) {
		fprintf(stderr, "command failed (status %d): %s\n", status, cmd);
		snprintf(cmd, sizeof(cmd), "cat '%s/stderr' >&2", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "(no stderr)\n");
		free(out);
		return NULL;
	}
	return out;
}

#endif
