/* The memory files of /proc (recorder/tracking/proc_mem.h), built from
 * their own source alone: statm and PSI lines as the kernel writes them,
 * bad input refused, and the readers on a tree of files and on this
 * process's own /proc. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder/tracking/proc_mem.h"
#include "tests/unit/check.h"

#define S(x) x, strlen(x)

static void test_statm(void)
{
	uint64_t p = 7;

	CHECK(fr_statm_parse(S("765 408 380 5 0 123 0\n"), &p) == 0 && p == 408, "statm: %llu",
	      (unsigned long long)p);
	CHECK(fr_statm_parse(S("1 18446744073709551615"), &p) == 0 && p == UINT64_MAX,
	      "the largest resident count");
	p = 7;
	CHECK(fr_statm_parse(S("1 18446744073709551616 0"), &p) == -EPROTO && p == 7,
	      "an overflow taken");
	CHECK(fr_statm_parse(S(""), &p) == -EPROTO, "empty taken");
	CHECK(fr_statm_parse(S("765"), &p) == -EPROTO, "one field taken");
	CHECK(fr_statm_parse(S("765 "), &p) == -EPROTO, "no resident taken");
	CHECK(fr_statm_parse(S("765 -4 0"), &p) == -EPROTO, "a negative taken");
	CHECK(fr_statm_parse(S("765 4x 0"), &p) == -EPROTO, "4x taken");
	CHECK(fr_statm_parse(S(" 765 4"), &p) == -EPROTO, "a leading space taken");
	/* The length bounds the parse: digits past it are not read. */
	CHECK(fr_statm_parse("765 408999", 7, &p) == 0 && p == 408, "read past len: %llu",
	      (unsigned long long)p);
}

static void test_pressure(void)
{
	uint64_t us = 7;

	CHECK(fr_pressure_parse_some(S("some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\n"
				       "full avg10=0.00 avg60=0.00 avg300=0.00 total=99\n"),
				     &us) == 0 &&
		      us == 12345,
	      "pressure: %llu", (unsigned long long)us);
	CHECK(fr_pressure_parse_some(S("some avg10=1.00 avg60=0.50 avg300=0.10 total=0"), &us) ==
			      0 &&
		      us == 0,
	      "total 0");
	us = 7;
	/* total= of the full line never stands for some's. */
	CHECK(fr_pressure_parse_some(S("some avg10=0.00\nfull avg10=0.00 total=99\n"), &us) ==
			      -EPROTO &&
		      us == 7,
	      "full's total taken");
	CHECK(fr_pressure_parse_some(S("full avg10=0.00 total=5\n"), &us) == -EPROTO,
	      "a full line first taken");
	CHECK(fr_pressure_parse_some(S("some total=\n"), &us) == -EPROTO, "total= empty taken");
	CHECK(fr_pressure_parse_some(S("some total=12a\n"), &us) == -EPROTO, "12a taken");
	CHECK(fr_pressure_parse_some(S("some total=99999999999999999999\n"), &us) == -EPROTO,
	      "an overflow taken");
	CHECK(fr_pressure_parse_some(S(""), &us) == -EPROTO, "empty taken");
	CHECK(fr_pressure_parse_some("some total=5", 10, &us) == -EPROTO, "read past len");
}

/* Both lines: some and full, a file with only some (a kernel before
 * cpu's full line), and a full line not as the kernel writes it. */
static void test_pressure_full(void)
{
	uint64_t some = 7, full = 7;
	int has_full = 7;

	CHECK(fr_pressure_parse(S("some avg10=1.00 avg60=0.00 avg300=0.00 total=12345\n"
				  "full avg10=0.00 avg60=0.00 avg300=0.00 total=99\n"),
				&some, &full, &has_full) == 0 &&
		      some == 12345 && full == 99 && has_full == 1,
	      "some and full: %llu %llu %d", (unsigned long long)some, (unsigned long long)full,
	      has_full);
	CHECK(fr_pressure_parse(S("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n"), &some, &full,
				&has_full) == 0 &&
		      some == 5 && full == 0 && has_full == 0,
	      "some only: %llu %llu %d", (unsigned long long)some, (unsigned long long)full,
	      has_full);
	CHECK(fr_pressure_parse(S("some total=5\nfull avg10=0.00\n"), &some, &full, &has_full) ==
		      -EPROTO,
	      "a full line without total taken");
	CHECK(fr_pressure_parse(S("some total=5\nsome total=6\n"), &some, &full, &has_full) ==
		      -EPROTO,
	      "a second some line taken as full");
	CHECK(fr_pressure_parse(S("some total=5\nfull total=6x\n"), &some, &full, &has_full) ==
		      -EPROTO,
	      "6x taken");
	CHECK(fr_pressure_parse("some total=5\nfull total=6", 25, &some, &full, &has_full) == 0 &&
		      full == 6,
	      "full's total at the end of the bytes");
	CHECK(fr_pressure_parse("some total=5\nfull total=6", 24, &some, &full, &has_full) ==
		      -EPROTO,
	      "read past len");
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void test_readers(void)
{
	char root[] = "/tmp/fr-proc-mem.XXXXXX", path[256];
	uint64_t v = 0;
	long page = sysconf(_SC_PAGESIZE);

	/* This process's own statm: a plausible resident set. */
	CHECK(fr_proc_read_rss("/proc", (uint32_t)getpid(), &v) == 0 && v >= (uint64_t)page &&
		      v < (1ull << 40),
	      "own rss: %llu", (unsigned long long)v);
	CHECK(fr_proc_read_rss("/proc", 0, &v) < 0, "pid 0 read");

	if (!mkdtemp(root))
		return;
	snprintf(path, sizeof(path), "%s/42", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/42/statm", root);
	write_file(path, "100 25 3 1 0 20 0\n");
	CHECK(fr_proc_read_rss(root, 42, &v) == 0 && v == 25 * (uint64_t)page, "tree rss: %llu",
	      (unsigned long long)v);
	CHECK(fr_proc_read_rss(root, 43, &v) == -ENOENT, "a missing process");
	/* A symlink in its place is not followed. */
	unlink(path);
	CHECK(symlink("/proc/self/statm", path) == 0 && fr_proc_read_rss(root, 42, &v) == -ELOOP,
	      "statm through a symlink read");
	unlink(path);
	write_file(path, "garbage\n");
	CHECK(fr_proc_read_rss(root, 42, &v) == -EPROTO, "garbage statm taken");

	snprintf(path, sizeof(path), "%s/pressure", root);
	CHECK(fr_proc_read_mem_pressure(root, &v) == -ENOENT, "no PSI: not -ENOENT");
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/pressure/memory", root);
	write_file(path, "some avg10=0.00 avg60=0.00 avg300=0.00 total=3\nfull total=1\n");
	CHECK(fr_proc_read_mem_pressure(root, &v) == 0 && v == 3000, "pressure ns: %llu",
	      (unsigned long long)v);
	{
		uint64_t some, full;
		int has_full;

		CHECK(fr_proc_read_pressure(root, "memory", &some, &full, &has_full) == 0 &&
			      some == 3000 && full == 1000 && has_full,
		      "pressure some %llu full %llu", (unsigned long long)some,
		      (unsigned long long)full);
		CHECK(fr_proc_read_pressure(root, "cpu", &some, &full, &has_full) == -ENOENT,
		      "a missing cpu file: not -ENOENT");
	}
	unlink(path);
	snprintf(path, sizeof(path), "%s/pressure", root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/42/statm", root);
	unlink(path);
	snprintf(path, sizeof(path), "%s/42", root);
	rmdir(path);
	rmdir(root);
}

int main(void)
{
	test_statm();
	test_pressure();
	test_pressure_full();
	test_readers();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures != 0;
}
