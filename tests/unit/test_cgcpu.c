/* Cgroup CPU throttling (recorder/tracking/cgcpu.h), built from its own
 * source over core/util alone: the parsers of cpu.stat (v1 and v2),
 * /proc/PID/cgroup (v1 and v2 lines) and mountinfo lines, with hostile
 * inputs (paths with "..", too long, control characters, numbers that
 * overflow, lines cut short); then ticks over a /proc and a cgroup tree
 * of the test's making: many processes of one cgroup read once, a sample
 * only when throttled time grew and of the growth, a cgroup path with
 * ".." and a cpu.stat that is a symlink or a FIFO refused without
 * blocking, and more cgroups than a tick reads taking turns. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/log.h"
#include "recorder/tracking/cgcpu.h"
#include "tests/unit/check.h"
#include "tests/unit/files.h"

static char root[64];

static int stat_of(const char *text, int v1, struct fr_cpu_stat *st)
{
	return fr_cpu_stat_parse(text, strlen(text), v1, st);
}

static void test_cpu_stat(void)
{
	struct fr_cpu_stat st;

	CHECK(stat_of("usage_usec 100\nuser_usec 50\nsystem_usec 50\nnr_periods 40\n"
		      "nr_throttled 12\nthrottled_usec 345\nnr_bursts 0\nburst_usec 0\n",
		      0, &st) == 0 &&
		      st.nr_periods == 40 && st.nr_throttled == 12 && st.throttled_ns == 345000,
	      "v2: %" PRIu64 " %" PRIu64 " %" PRIu64, st.nr_periods, st.nr_throttled,
	      st.throttled_ns);
	CHECK(stat_of("nr_periods 7\nnr_throttled 3\nthrottled_time 123456789\n", 1, &st) == 0 &&
		      st.nr_throttled == 3 && st.throttled_ns == 123456789,
	      "v1: %" PRIu64, st.throttled_ns);
	/* No trailing newline: the last line still counts. */
	CHECK(stat_of("throttled_usec 2", 0, &st) == 0 && st.throttled_ns == 2000, "no newline");
	/* The other version's line, or none: refused. */
	CHECK(stat_of("nr_periods 1\nthrottled_time 5\n", 0, &st) == -EPROTO, "v1 file as v2");
	CHECK(stat_of("usage_usec 5\n", 0, &st) == -EPROTO, "root cgroup v2");
	CHECK(stat_of("", 1, &st) == -EPROTO, "empty");
	/* Hostile numbers. */
	CHECK(stat_of("throttled_usec 99999999999999999999\n", 0, &st) == -EPROTO, "overflow");
	CHECK(stat_of("throttled_usec 18446744073709552\n", 0, &st) == -EPROTO,
	      "usec overflowing ns");
	CHECK(stat_of("throttled_usec -5\n", 0, &st) == -EPROTO, "negative");
	CHECK(stat_of("throttled_usec \n", 0, &st) == -EPROTO, "no digits");
	CHECK(stat_of("throttled_usec 5x\n", 0, &st) == -EPROTO, "trailing garbage");
	CHECK(stat_of("nr_throttled 1a\nthrottled_usec 5\n", 0, &st) == -EPROTO, "bad count");
	/* A prefix is not the line. */
	CHECK(stat_of("throttled_usecs 5\nthrottled_usec 6\n", 0, &st) == 0 &&
		      st.throttled_ns == 6000,
	      "prefix");
	/* Cut anywhere: never read past the length. */
	{
		const char *t = "nr_periods 40\nnr_throttled 12\nthrottled_usec 345\n";

		for (size_t n = 0; n <= strlen(t); n++) {
			char *cut = malloc(n ? n : 1);

			memcpy(cut, t, n);
			(void)fr_cpu_stat_parse(cut, n, 0, &st);
			free(cut);
		}
	}
}

static int cg_of(const char *text, int v1, char *dst, size_t len)
{
	return fr_proc_cgroup_parse(text, strlen(text), v1, dst, len);
}

static void test_proc_cgroup(void)
{
	const char *hybrid = "12:pids:/user.slice\n"
			     "4:cpu,cpuacct:/fr/busy\n"
			     "3:cpuset:/\n"
			     "2:cpuacct:/nope\n"
			     "1:name=systemd:/user.slice/x.scope\n"
			     "0::/user.slice/x.scope\n";
	char d[FR_LIMIT_CGROUP_LEN], big[FR_LIMIT_CGROUP_LEN + 32];

	CHECK(cg_of(hybrid, 1, d, sizeof(d)) == 0 && strcmp(d, "/fr/busy") == 0, "v1: %s", d);
	CHECK(cg_of(hybrid, 0, d, sizeof(d)) == 0 && strcmp(d, "/user.slice/x.scope") == 0,
	      "v2: %s", d);
	CHECK(cg_of("0::/a\n", 0, d, sizeof(d)) == 0 && strcmp(d, "/a") == 0, "v2 alone");
	CHECK(cg_of("0::/\n", 0, d, sizeof(d)) == 0 && strcmp(d, "/") == 0, "v2 root");
	/* "cpuacct" and "cpuset" are not "cpu". */
	CHECK(cg_of("3:cpuset:/a\n2:cpuacct:/b\n0::/c\n", 1, d, sizeof(d)) == -ENOENT, "no cpu");
	CHECK(cg_of("1:cpu:/a\n", 0, d, sizeof(d)) == -ENOENT, "no v2 line");
	/* A line cut short (no newline) does not count. */
	CHECK(cg_of("0::/a", 0, d, sizeof(d)) == -ENOENT, "cut");
	/* Hostile paths. */
	CHECK(cg_of("0::/../../etc\n", 0, d, sizeof(d)) == -EINVAL, "..");
	CHECK(cg_of("0::/a/..\n", 0, d, sizeof(d)) == -EINVAL, "trailing ..");
	CHECK(cg_of("0::/a/./b\n", 0, d, sizeof(d)) == -EINVAL, ".");
	CHECK(cg_of("0::a/b\n", 0, d, sizeof(d)) == -EINVAL, "relative");
	CHECK(cg_of("0::\n", 0, d, sizeof(d)) == -EINVAL, "empty");
	CHECK(cg_of("0::/a//b\n", 0, d, sizeof(d)) == -EINVAL, "empty component");
	CHECK(cg_of("0::/a/\n", 0, d, sizeof(d)) == -EINVAL, "trailing slash");
	CHECK(cg_of("0::/a\tb\n", 0, d, sizeof(d)) == -EINVAL, "control character");
	CHECK(cg_of("0::/..a/b..\n", 0, d, sizeof(d)) == 0, "dots inside a name are a name");
	CHECK(fr_proc_cgroup_parse("0::/a\0b\n", 8, 0, d, sizeof(d)) == -EINVAL, "NUL");
	memset(big, 'x', sizeof(big));
	memcpy(big, "0::/", 4);
	big[sizeof(big) - 2] = '\n';
	CHECK(fr_proc_cgroup_parse(big, sizeof(big) - 1, 0, d, sizeof(d)) == -EINVAL, "too long");
	CHECK(fr_proc_cgroup_parse(big, sizeof(big) - 1, 0, d, 8) == -EINVAL, "no room");
}

static void test_mountinfo(void)
{
	char d[FR_CGCPU_ROOT_MAX];

	CHECK(fr_mountinfo_cgroup("32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup "
				  "rw,cpu\n",
				  d, sizeof(d)) == 1 &&
		      strcmp(d, "/sys/fs/cgroup/cpu") == 0,
	      "v1 cpu");
	CHECK(fr_mountinfo_cgroup("32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw shared:9 - cgroup "
				  "cgroup rw,cpu,cpuacct",
				  d, sizeof(d)) == 1 &&
		      strcmp(d, "/sys/fs/cgroup/cpu,cpuacct") == 0,
	      "v1 cpu,cpuacct with optional fields");
	CHECK(fr_mountinfo_cgroup("33 31 0:30 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup "
				  "rw,cpuacct\n",
				  d, sizeof(d)) == 0,
	      "cpuacct alone");
	CHECK(fr_mountinfo_cgroup("41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
				  d, sizeof(d)) == 2 &&
		      strcmp(d, "/sys/fs/cgroup/unified") == 0,
	      "v2");
	CHECK(fr_mountinfo_cgroup("41 31 0:38 / /a\\040b rw - cgroup2 cgroup2 rw\n", d,
				  sizeof(d)) == 0,
	      "escaped mount point");
	CHECK(fr_mountinfo_cgroup("41 31 0:38 / rel rw - cgroup2 cgroup2 rw\n", d, sizeof(d)) == 0,
	      "relative mount point");
	CHECK(fr_mountinfo_cgroup("41 31 - cgroup2 cgroup2 rw\n", d, sizeof(d)) == 0, "short");
	CHECK(fr_mountinfo_cgroup("", d, sizeof(d)) == 0, "empty");
	CHECK(fr_mountinfo_cgroup("1 2 3 4 /x - cgroup\n", d, sizeof(d)) == 0, "no options");
	CHECK(fr_mountinfo_cgroup("31 3 3 0:29 / /fs/ - cgroup", d, sizeof(d)) == 0,
	      "cut after the fstype");
	CHECK(fr_mountinfo_cgroup("21 1 0:20 / /proc rw - proc proc rw\n", d, sizeof(d)) == 0,
	      "proc");
}

/* ---- ticks over a tree of the test's making ---------------------------- */

static void write_file(const char *path, const char *text)
{
	CHECK(test_write_text(path, text) == 0, "cannot write %s", path);
}

static void fmt_path(char *dst, size_t len, const char *a, const char *b)
{
	snprintf(dst, len, "%s/%s", a, b);
}

static void make_pid(uint32_t pid, const char *cgroup)
{
	char path[256], text[512];

	snprintf(path, sizeof(path), "%s/proc/%u", root, pid);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/proc/%u/cgroup", root, pid);
	snprintf(text, sizeof(text), "5:cpuset:/\n4:cpu,cpuacct:%s\n0::/\n", cgroup);
	write_file(path, text);
}

static void set_stat(const char *cgroup, uint64_t nr, uint64_t ns)
{
	char path[512], text[256];

	snprintf(path, sizeof(path), "%s/cg%s", root, cgroup);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/cg%s/cpu.stat", root, cgroup);
	snprintf(text, sizeof(text),
		 "nr_periods %" PRIu64 "\nnr_throttled %" PRIu64 "\nthrottled_time %" PRIu64 "\n",
		 nr * 2, nr, ns);
	write_file(path, text);
}

static uint32_t tick(struct fr_cgcpu *c, const uint32_t *pids, uint32_t n,
		     struct fr_cgcpu_sample *out)
{
	return fr_cgcpu_tick(c, pids, n, fr_now_mono_ns() + 5000000000LL, out, FR_CGCPU_READS);
}

static void test_ticks(void)
{
	struct fr_cgcpu_sample out[FR_CGCPU_READS];
	struct fr_cgcpu_stats st;
	struct fr_cgcpu *c = NULL;
	char path[512], text[512], err[256] = "";
	uint32_t pids[3 + 100], n;

	snprintf(path, sizeof(path), "%s/proc", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/proc/self", root);
	mkdir(path, 0700);
	fmt_path(path, sizeof(path), root, "proc/self/mountinfo");
	/* cgroup2 without the cpu controller first, as on this hybrid. */
	snprintf(text, sizeof(text),
		 "41 31 0:38 / %s/v2 rw - cgroup2 cgroup2 rw\n"
		 "32 31 0:29 / %s/cg rw - cgroup cgroup rw,cpu,cpuacct\n",
		 root, root);
	write_file(path, text);
	fmt_path(path, sizeof(path), root, "v2");
	mkdir(path, 0700);
	fmt_path(path, sizeof(path), root, "v2/cgroup.controllers");
	write_file(path, "cpuset io memory pids\n");
	fmt_path(path, sizeof(path), root, "cg");
	mkdir(path, 0700);
	fmt_path(path, sizeof(path), root, "proc");
	CHECK(fr_cgcpu_new(&c, path, err, sizeof(err)) == 0, "new: %s", err);
	if (!c)
		return;
	CHECK(strstr(fr_cgcpu_where(c), "v1") != NULL, "where: %s", fr_cgcpu_where(c));

	/* Three processes of /busy, one of the root cgroup. */
	set_stat("/busy", 10, 1000000);
	for (uint32_t i = 0; i < 3; i++)
		make_pid(100 + i, "/busy");
	make_pid(200, "/");
	pids[0] = 100, pids[1] = 101, pids[2] = 102, pids[3] = 200;
	n = tick(c, pids, 4, out);
	fr_cgcpu_stats(c, &st);
	CHECK(n == 0 && st.reads == 1 && st.cgroups == 1,
	      "first tick: %u samples, %" PRIu64 " reads, %" PRIu64 " cgroups", n, st.reads,
	      st.cgroups);
	/* Not throttled since: no sample. */
	n = tick(c, pids, 4, out);
	CHECK(n == 0, "unchanged: %u", n);
	set_stat("/busy", 15, 3500000);
	n = tick(c, pids, 4, out);
	CHECK(n == 1 && out[0].throttled_ns == 2500000 && out[0].periods == 5 &&
		      out[0].pid >= 100 && out[0].pid <= 102 && out[0].time_ns > 0,
	      "grew: %u samples, %" PRIu64 " ns, %" PRIu64 " periods, pid %u", n,
	      n ? out[0].throttled_ns : 0, n ? out[0].periods : 0, n ? out[0].pid : 0);
	fr_cgcpu_stats(c, &st);
	CHECK(st.reads == 3 && st.failures == 0 && st.samples == 1,
	      "reads %" PRIu64 " failures %" PRIu64, st.reads, st.failures);

	/* A counter that went back (the cgroup made anew): a new baseline. */
	set_stat("/busy", 1, 100);
	CHECK(tick(c, pids, 4, out) == 0, "counter went back");
	set_stat("/busy", 2, 200);
	n = tick(c, pids, 4, out);
	CHECK(n == 1 && out[0].throttled_ns == 100, "after going back: %u", n);

	/* Its processes ended: one last read gives the rest, then none. */
	set_stat("/busy", 4, 900);
	n = tick(c, NULL, 0, out);
	CHECK(n == 1 && out[0].throttled_ns == 700 && out[0].pid >= 100 && out[0].pid <= 102,
	      "tail: %u samples", n);
	set_stat("/busy", 5, 1900);
	CHECK(tick(c, NULL, 0, out) == 0, "after the tail");

	/* Hostile: "..", a symlink, a FIFO (would block without O_NONBLOCK). */
	make_pid(300, "/../../etc");
	set_stat("/link", 1, 1);
	snprintf(path, sizeof(path), "%s/cg/link/cpu.stat", root);
	unlink(path);
	CHECK(symlink("/proc/self/status", path) == 0, "symlink");
	make_pid(301, "/link");
	set_stat("/fifo", 1, 1);
	snprintf(path, sizeof(path), "%s/cg/fifo/cpu.stat", root);
	unlink(path);
	CHECK(mkfifo(path, 0600) == 0, "mkfifo");
	make_pid(302, "/fifo");
	pids[0] = 300, pids[1] = 301, pids[2] = 302, pids[3] = 999999;
	n = tick(c, pids, 4, out);
	fr_cgcpu_stats(c, &st);
	CHECK(n == 0 && st.failures == 3, "hostile: %u samples, %" PRIu64 " failures", n,
	      st.failures);

	/* 100 cgroups in one tick: FR_CGCPU_READS read, the rest next tick. */
	for (uint32_t i = 0; i < 100; i++) {
		char cg[32];

		snprintf(cg, sizeof(cg), "/many%u", i);
		set_stat(cg, 1, 1);
		make_pid(1000 + i, cg);
		pids[i] = 1000 + i;
	}
	fr_cgcpu_stats(c, &st);
	{
		uint64_t reads0 = st.reads, skipped0 = st.skipped;

		(void)tick(c, pids, 100, out);
		fr_cgcpu_stats(c, &st);
		CHECK(st.reads - reads0 == FR_CGCPU_READS &&
			      st.skipped - skipped0 == 100 - FR_CGCPU_READS,
		      "bounded: %" PRIu64 " reads, %" PRIu64 " skipped", st.reads - reads0,
		      st.skipped - skipped0);
		for (uint32_t i = 0; i < 100; i++) {
			char cg[32];

			snprintf(cg, sizeof(cg), "/many%u", i);
			set_stat(cg, 2, 11);
		}
		/* Turns: the next two ticks read the rest and then grow. */
		n = tick(c, pids, 100, out);
		n += tick(c, pids, 100, out);
		CHECK(n >= 36, "turns: %u samples", n);
		fr_cgcpu_stats(c, &st);
		CHECK(st.cgroups <= FR_CGCPU_MAX, "cgroups %" PRIu64, st.cgroups);
	}
	fr_cgcpu_free(c);
}

static void test_v2_and_none(void)
{
	struct fr_cgcpu *c = NULL;
	char path[512], text[512], err[256] = "";

	fmt_path(path, sizeof(path), root, "proc/self/mountinfo");
	snprintf(text, sizeof(text), "41 31 0:38 / %s/v2 rw - cgroup2 cgroup2 rw\n", root);
	write_file(path, text);
	fmt_path(path, sizeof(path), root, "proc");
	CHECK(fr_cgcpu_new(&c, path, err, sizeof(err)) == -ENOENT && strstr(err, "cgroup2 at"),
	      "no cpu controller: %s", err);
	fr_cgcpu_free(c);
	c = NULL;
	fmt_path(path, sizeof(path), root, "v2/cgroup.controllers");
	write_file(path, "cpuset cpu io memory pids\n");
	fmt_path(path, sizeof(path), root, "proc");
	CHECK(fr_cgcpu_new(&c, path, err, sizeof(err)) == 0 && c && strstr(fr_cgcpu_where(c), "v2"),
	      "v2 with cpu: %s", err);
	fr_cgcpu_free(c);
}

int main(void)
{
	char cmd[128];

	test_cpu_stat();
	test_proc_cgroup();
	test_mountinfo();
	snprintf(root, sizeof(root), "/tmp/fr-cgcpu.XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_ticks();
	test_v2_and_none();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", root);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures != 0;
}
