/* Tracepoint format files and oom:mark_victim records
 * (recorder/sampling/tp_format.h), built from their own source alone:
 * the layouts of Linux 6.18 and of kernels that give the pid alone, and
 * what a broken file or record does (refused, never read past). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/sampling/tp_format.h"
#include "tests/unit/check.h"

/* The format file of Linux 6.18. */
static const char fmt_618[] =
	"name: mark_victim\n"
	"ID: 609\n"
	"format:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:int pid;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:__data_loc char[] comm;\toffset:12;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long total_vm;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long anon_rss;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long file_rss;\toffset:32;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long shmem_rss;\toffset:40;\tsize:8;\tsigned:0;\n"
	"\tfield:uid_t uid;\toffset:48;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long pgtables;\toffset:56;\tsize:8;\tsigned:0;\n"
	"\tfield:short oom_score_adj;\toffset:64;\tsize:2;\tsigned:1;\n"
	"\n"
	"print fmt: \"pid=%d comm=%s total-vm=%lukB anon-rss=%lukB file-rss:%lukB "
	"shmem-rss:%lukB uid=%u pgtables=%lukB oom_score_adj=%hd\", REC->pid\n";

/* Before Linux 6.8: the pid alone. */
static const char fmt_old[] = "name: mark_victim\n"
			      "ID: 480\n"
			      "format:\n"
			      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
			      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
			      "\n"
			      "\tfield:int pid;\toffset:8;\tsize:4;\tsigned:1;\n"
			      "\n"
			      "print fmt: \"pid=%d\", REC->pid\n";

static void put32(unsigned char *raw, uint32_t off, uint32_t v)
{
	memcpy(raw + off, &v, 4);
}

static void put64(unsigned char *raw, uint32_t off, uint64_t v)
{
	memcpy(raw + off, &v, 8);
}

/* A 6.18 record: pid 4242, comm at 72 ("oom_hog", 8 bytes with its NUL),
 * 60000 + 4000 + 100 KiB. */
static uint32_t record_618(unsigned char *raw)
{
	memset(raw, 0, 128);
	put32(raw, 8, 4242);
	put32(raw, 12, (8u << 16) | 72);
	put64(raw, 24, 60000);
	put64(raw, 32, 4000);
	put64(raw, 40, 100);
	memcpy(raw + 72, "oom_hog", 8);
	return 80;
}

static void test_field_lines(void)
{
	char name[16];
	uint32_t off, size;
	int dl;

	CHECK(fr_tp_field("\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;", name,
			  sizeof(name), &off, &size, &dl) == 0 &&
		      strcmp(name, "prev_comm") == 0 && off == 8 && size == 16 && !dl,
	      "array field: %s %u %u", name, off, size);
	CHECK(fr_tp_field("\tfield:__data_loc char[] comm;\toffset:12;\tsize:4;\tsigned:0;", name,
			  sizeof(name), &off, &size, &dl) == 0 &&
		      strcmp(name, "comm") == 0 && dl,
	      "data_loc field: %s %d", name, dl);
	/* Not field lines. */
	CHECK(fr_tp_field("name: mark_victim", name, sizeof(name), &off, &size, &dl) == -EINVAL,
	      "a header line is a field");
	CHECK(fr_tp_field("\tfield:int pid;\toffset:x;\tsize:4;", name, sizeof(name), &off, &size,
			  &dl) == -EINVAL,
	      "a field without an offset");
	CHECK(fr_tp_field("\tfield:;\toffset:1;\tsize:4;", name, sizeof(name), &off, &size, &dl) ==
		      -EINVAL,
	      "a field without a name");
	/* A name longer than the buffer is cut, not overflowed. */
	CHECK(fr_tp_field("\tfield:int a_very_long_field_name;\toffset:1;\tsize:4;", name,
			  sizeof(name), &off, &size, &dl) == 0 &&
		      strlen(name) == sizeof(name) - 1,
	      "a long name: %s", name);
}

static void test_618(void)
{
	struct fr_oom_format f;
	struct fr_oom_victim v;
	unsigned char raw[128];
	uint32_t n;

	CHECK(fr_oom_format_parse(fmt_618, strlen(fmt_618), &f) == 0, "6.18 format refused");
	CHECK(f.pid_off == 8 && f.comm_off == 12 && f.comm_data_loc && f.has_rss &&
		      f.rss_off[0] == 24 && f.rss_off[2] == 40 && f.min_size == 48,
	      "6.18 layout: pid %u comm %u rss %d min %u", f.pid_off, f.comm_off, f.has_rss,
	      f.min_size);
	n = record_618(raw);
	CHECK(fr_oom_decode(&f, raw, n, &v) == 0 && v.pid == 4242 &&
		      strcmp(v.comm, "oom_hog") == 0 && v.has_rss &&
		      v.rss == (60000ull + 4000 + 100) * 1024,
	      "6.18 record: pid %u comm %s rss %llu", v.pid, v.comm, (unsigned long long)v.rss);
	/* Shorter than the layout: refused. */
	CHECK(fr_oom_decode(&f, raw, 47, &v) == -EBADMSG, "a short record decoded");
	/* A comm pointing outside the record: no comm, the rest kept. */
	put32(raw, 12, (16u << 16) | 70);
	CHECK(fr_oom_decode(&f, raw, n, &v) == 0 && v.comm[0] == '\0' && v.pid == 4242,
	      "a comm past the record: \"%s\"", v.comm);
	put32(raw, 12, (0xffffu << 16) | 0xffff);
	CHECK(fr_oom_decode(&f, raw, n, &v) == 0 && v.comm[0] == '\0', "a wild __data_loc");
	/* A comm without a NUL is cut to 15 bytes. */
	put32(raw, 12, (40u << 16) | 72);
	memset(raw + 72, 'x', 40);
	CHECK(fr_oom_decode(&f, raw, 112, &v) == 0 && strlen(v.comm) == 15,
	      "a long comm: %zu bytes", strlen(v.comm));
	/* Counters that add past 2^64 saturate. */
	put64(raw, 24, UINT64_MAX);
	CHECK(fr_oom_decode(&f, raw, n, &v) == 0 && v.rss == UINT64_MAX, "rss did not saturate");
	/* A pid that is not positive is no victim. */
	put32(raw, 8, 0);
	CHECK(fr_oom_decode(&f, raw, n, &v) == -EBADMSG, "pid 0 decoded");
	put32(raw, 8, (uint32_t)-5);
	CHECK(fr_oom_decode(&f, raw, n, &v) == -EBADMSG, "a negative pid decoded");
	CHECK(fr_oom_decode(&f, NULL, 0, &v) == -EBADMSG, "no record decoded");
}

static void test_old_and_broken(void)
{
	struct fr_oom_format f;
	struct fr_oom_victim v;
	unsigned char raw[16] = {0};
	char *big;
	size_t n;

	CHECK(fr_oom_format_parse(fmt_old, strlen(fmt_old), &f) == 0 && !f.has_rss &&
		      !f.comm_size && f.min_size == 12,
	      "old format: rss %d comm %u min %u", f.has_rss, f.comm_size, f.min_size);
	put32(raw, 8, 77);
	CHECK(fr_oom_decode(&f, raw, 12, &v) == 0 && v.pid == 77 && !v.has_rss && v.rss == 0 &&
		      v.comm[0] == '\0',
	      "old record: pid %u", v.pid);

	/* No pid, an empty file, a pid of the wrong size: refused. */
	CHECK(fr_oom_format_parse("", 0, &f) == -EPROTO, "an empty format taken");
	CHECK(fr_oom_format_parse("\tfield:short pid;\toffset:8;\tsize:2;\tsigned:1;\n", 44, &f) ==
		      -EPROTO,
	      "a 2-byte pid taken");
	/* A field past any record: refused. */
	CHECK(fr_oom_format_parse("\tfield:int pid;\toffset:4294967290;\tsize:4;\tsigned:1;\n", 52,
				  &f) == -EPROTO,
	      "a pid at 4 GiB taken");
	/* Two of the three RSS counters, or one of a wrong size: no RSS. */
	{
		const char *two =
			"\tfield:int pid;\toffset:8;\tsize:4;\tsigned:1;\n"
			"\tfield:unsigned long anon_rss;\toffset:24;\tsize:8;\tsigned:0;\n"
			"\tfield:unsigned long file_rss;\toffset:32;\tsize:8;\tsigned:0;\n"
			"\tfield:unsigned long shmem_rss;\toffset:40;\tsize:3;\tsigned:0;\n";

		CHECK(fr_oom_format_parse(two, strlen(two), &f) == 0 && !f.has_rss,
		      "a partial RSS taken");
	}
	/* Text that is not NUL-terminated, lines longer than a line buffer,
	 * NUL bytes inside: parsed within `len`, the pid still found. */
	n = 3 * FR_TP_LINE_MAX + sizeof(fmt_618);
	big = malloc(n);
	if (!big)
		return;
	memset(big, 'a', 3 * FR_TP_LINE_MAX);
	big[10] = '\0';
	big[3 * FR_TP_LINE_MAX - 1] = '\n';
	memcpy(big + 3 * FR_TP_LINE_MAX, fmt_618, sizeof(fmt_618) - 1);
	CHECK(fr_oom_format_parse(big, n - 1, &f) == 0 && f.has_rss && f.pid_off == 8,
	      "a long line hid the layout");
	/* Cut in the middle of the pid line: no pid. */
	CHECK(fr_oom_format_parse(fmt_618, (size_t)(strstr(fmt_618, "int pid;") - fmt_618) + 6,
				  &f) == -EPROTO,
	      "a format cut before its pid taken");
	free(big);
}

int main(void)
{
	test_field_lines();
	test_618();
	test_old_and_broken();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures != 0;
}
