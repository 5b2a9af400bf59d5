/* Process tracker: cgroups read from a fake /proc and inherited at fork;
 * parents from FORK records and from /proc/PID/stat, and as the chunks
 * sealed with them store them. */
#include "recorder/tracking/tracker.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/store/chunk.h"

#include "tests/unit/check.h"
#include "tests/unit/tracker_check.h"

/* ---- cgroups, from a /proc written here ---- */

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	CHECK(f, "create %s: %s", path, strerror(errno));
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

/* A process directory with what a scan needs: stat (name, start time) and
 * cgroup. */
static void fake_proc_pid(const char *proc, uint32_t pid, const char *comm, const char *cgroup)
{
	char dir[512], stat[256];

	snprintf(dir, sizeof(dir), "%s/%u", proc, pid);
	CHECK(mkdir(dir, 0755) == 0, "mkdir %s: %s", dir, strerror(errno));
	snprintf(stat, sizeof(stat),
		 "%u (%s) S 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 12345 1000000 100\n", pid,
		 comm);
	write_file(dir, "stat", stat);
	if (cgroup)
		write_file(dir, "cgroup", cgroup);
}

static void expect_cgroup(struct fr_tracker *t, int line, uint32_t pid, const char *want)
{
	struct pinfo p = proc_of(t, pid);

	if (p.ret != 0 || strcmp(p.cgroup, want) != 0) {
		fprintf(stderr, "%s:%d: FAIL: proc(%u) = %d cgroup \"%s\", want \"%s\"\n", __FILE__,
			line, pid, p.ret, p.cgroup, want);
		failures++;
	}
}
#define EXPECT_CGROUP(t, pid, want) expect_cgroup(t, __LINE__, pid, want)

static void test_cgroup(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint32_t svc = PID_BASE + 81, child = PID_BASE + 82, v1 = PID_BASE + 83,
		 deep = PID_BASE + 84, none = PID_BASE + 85, orphan = PID_BASE + 86;
	char proc[] = "/tmp/fr-test-proc.XXXXXX", longpath[400], text[600];
	const char *svc_path = "/system.slice/app.service";

	CHECK(t, "fr_tracker_new");
	if (!t || !mkdtemp(proc)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		fr_tracker_free(t);
		return;
	}
	/* A hybrid machine lists its v1 controllers first; only "0::" is v2. */
	fake_proc_pid(proc, svc, "app",
		      "12:pids:/system.slice/app.service\n"
		      "1:name=systemd:/system.slice/app.service\n"
		      "0::/system.slice/app.service\n");
	fake_proc_pid(proc, v1, "legacy", "4:memory:/legacy\n1:name=systemd:/legacy\n");
	fake_proc_pid(proc, none, "nocg", NULL);
	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	snprintf(text, sizeof(text), "0::%s\n", longpath);
	fake_proc_pid(proc, deep, "deep", text);

	CHECK(fr_tracker_scan(t, proc) == 4, "scan of the fake /proc");
	EXPECT_CGROUP(t, svc, svc_path);
	EXPECT_PROC(t, svc, "app", "");
	EXPECT_CGROUP(t, v1, "");   /* no v2 hierarchy: unknown */
	EXPECT_CGROUP(t, none, ""); /* no cgroup file at all */
	{
		/* Cut, not dropped: what is kept is the path's start. */
		struct pinfo p = proc_of(t, deep);
		size_t n = strlen(p.cgroup);

		CHECK(n >= 200 && n < sizeof(longpath) - 1 && strncmp(p.cgroup, longpath, n) == 0,
		      "a %zu-byte cgroup path kept as %zu bytes \"%.20s...\"", strlen(longpath), n,
		      p.cgroup);
	}

	/* A child starts in its parent's cgroup (no /proc entry to say else),
	 * and an exec that cannot be read from /proc keeps it. */
	fr_tracker_fork(t, child, svc, child, svc, 100);
	EXPECT_CGROUP(t, child, svc_path);
	fr_tracker_comm(t, child, child, "worker", 1);
	EXPECT_PROC(t, child, "worker", "");
	EXPECT_CGROUP(t, child, svc_path);

	/* Threads are not processes: the process keeps its own cgroup. */
	fr_tracker_fork(t, svc, svc, svc + 100, svc, 101);
	EXPECT_CGROUP(t, svc, svc_path);

	/* A child of an unknown parent has no cgroup to inherit. */
	fr_tracker_fork(t, orphan, PID_BASE + 99, orphan, PID_BASE + 99, 102);
	EXPECT_CGROUP(t, orphan, "");

	/* Rescanning follows a move (the scan reads the file again). */
	{
		char path[512];

		snprintf(path, sizeof(path), "%s/%u", proc, svc);
		write_file(path, "cgroup", "0::/system.slice/other.service\n");
		CHECK(fr_tracker_scan_pid(t, proc, svc) == 0, "rescan of %u", svc);
		EXPECT_CGROUP(t, svc, "/system.slice/other.service");
		EXPECT_CGROUP(t, child, svc_path);
	}
	fr_tracker_free(t);

	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", proc);
		CHECK(system(cmd) == 0, "removing %s", proc);
	}
}

/* ---- parents ---- */

static void expect_ppid(struct fr_tracker *t, int line, uint32_t pid, uint32_t want)
{
	struct pinfo p = proc_of(t, pid);

	if (p.ret != 0 || p.ppid != want) {
		fprintf(stderr, "%s:%d: FAIL: proc(%u) = %d ppid %u, want %u\n", __FILE__, line,
			pid, p.ret, p.ppid, want);
		failures++;
	}
}
#define EXPECT_PPID(t, pid, want) expect_ppid(t, __LINE__, pid, want)

/* The value of `key` in label set `ls` of `c`, or NULL. */
static const char *chunk_label(const struct fr_chunk *c, uint32_t ls, const char *key)
{
	const struct fr_chunk_labelset *l = &c->labelsets[ls];

	for (uint32_t k = 0; k < l->npairs; k++)
		if (strcmp(c->strings[c->label_keys[l->first + k]], key) == 0)
			return c->strings[c->label_values[l->first + k]];
	return NULL;
}

/* The parent a chunk gives `pid`: the "ppid" of its samples' label set,
 * or of a set {"pid": pid, "ppid": N} no sample refers to; 0 when it
 * gives none. Checks that every sample of `pid` has the same set. */
static uint32_t chunk_ppid(const struct fr_chunk *c, uint32_t pid)
{
	const char *v = NULL;
	uint32_t ls = UINT32_MAX;

	for (uint32_t i = 0; i < c->nsamples; i++) {
		if (c->pid[i] != pid)
			continue;
		CHECK(ls == UINT32_MAX || ls == c->labelset[i],
		      "samples of pid %u in label sets %u and %u", pid, ls, c->labelset[i]);
		ls = c->labelset[i];
		CHECK(!chunk_label(c, ls, "pid"), "a sample of %u has a \"pid\" label", pid);
	}
	if (ls != UINT32_MAX) {
		v = chunk_label(c, ls, "ppid");
	} else {
		char want[16];

		snprintf(want, sizeof(want), "%u", pid);
		for (uint32_t k = 1; k < c->nlabelsets && !v; k++) {
			const char *p = chunk_label(c, k, "pid");

			if (p && strcmp(p, want) == 0)
				v = chunk_label(c, k, "ppid");
		}
	}
	return v ? (uint32_t)strtoul(v, NULL, 10) : 0;
}

/* A shell runs a subshell that runs a command: each knows its parent
 * (the FORK's), through exec, and an exec drained before its fork gets
 * the parent when the fork comes. A chunk holding only the command's
 * samples still says who the subshell's parent was. */
static void test_ppid(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint32_t shell = PID_BASE + 91, sub = PID_BASE + 92, cmd = PID_BASE + 93,
		 early = PID_BASE + 94, loop = PID_BASE + 95;
	struct fr_chunk *c;

	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	make_parent(t, shell, "bash");
	EXPECT_PPID(t, shell, 0); /* learned from an exec alone: unknown */
	fr_tracker_fork(t, sub, shell, sub, shell, 10);
	fr_tracker_fork(t, sub, sub, sub + 1, sub, 11); /* a thread, not a child */
	fr_tracker_fork(t, cmd, sub, cmd, sub + 1, 12);
	EXPECT_PPID(t, sub, shell);
	EXPECT_PPID(t, cmd, sub);
	fr_tracker_comm(t, cmd, cmd, "grep", 1);
	EXPECT_PROC(t, cmd, "grep", "");
	EXPECT_PPID(t, cmd, sub);

	fr_tracker_comm(t, early, early, "sed", 1);
	EXPECT_PPID(t, early, 0);
	fr_tracker_fork(t, early, sub, early, sub, 13);
	EXPECT_PROC(t, early, "sed", "");
	EXPECT_PPID(t, early, sub);

	/* The chunk: samples of cmd and early; sub, the shell between them
	 * and bash, has none. */
	{
		const uint32_t who[3][2] = {{cmd, cmd}, {early, early}, {cmd, cmd}};
		const uint64_t addrs[3] = {0x400100, 0x400200, 0x400300};

		c = seal_view(t, who, addrs, 3);
		if (c) {
			CHECK(chunk_ppid(c, cmd) == sub, "chunk: ppid of cmd %u, want %u",
			      chunk_ppid(c, cmd), sub);
			CHECK(chunk_ppid(c, early) == sub, "chunk: ppid of early %u, want %u",
			      chunk_ppid(c, early), sub);
			CHECK(chunk_ppid(c, sub) == shell,
			      "chunk: ppid of the unsampled subshell %u, want %u",
			      chunk_ppid(c, sub), shell);
			CHECK(chunk_ppid(c, shell) == 0, "chunk: ppid of bash %u, want none",
			      chunk_ppid(c, shell));
			/* cmd and early share a parent, so a set. */
			CHECK(c->nlabelsets == 3,
			      "%u label sets, want 3 (empty, {ppid sub}, "
			      "{pid sub, ppid shell})",
			      c->nlabelsets);
			fr_chunk_free(c);
		}
	}

	/* Two processes that are each other's parent, as reused pids could
	 * make them: sealing ends. */
	fr_tracker_fork(t, loop, loop + 1, loop, loop + 1, 14);
	fr_tracker_fork(t, loop + 1, loop, loop + 1, loop, 15);
	{
		const uint32_t who[1][2] = {{loop + 1, loop + 1}};
		const uint64_t addrs[1] = {0x400100};

		c = seal_view(t, who, addrs, 1);
		if (c) {
			CHECK(chunk_ppid(c, loop + 1) == loop && chunk_ppid(c, loop) == loop + 1,
			      "a cycle of parents: %u %u", chunk_ppid(c, loop + 1),
			      chunk_ppid(c, loop));
			fr_chunk_free(c);
		}
	}
	fr_tracker_free(t);
}

/* /proc/PID/stat gives the parent of a process found there (field 4, after
 * a command name that may hold ") 1 "); a parent learned from the FORK is
 * kept over what /proc says after the parent is gone (the reaper). */
static void test_ppid_scan(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint32_t odd = PID_BASE + 96, child = PID_BASE + 97, parent = PID_BASE + 98;
	char proc[] = "/tmp/fr-test-proc.XXXXXX", dir[512], stat[256], cmd[600];

	CHECK(t, "fr_tracker_new");
	if (!t || !mkdtemp(proc)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		fr_tracker_free(t);
		return;
	}
	snprintf(dir, sizeof(dir), "%s/%u", proc, odd);
	CHECK(mkdir(dir, 0755) == 0, "mkdir %s: %s", dir, strerror(errno));
	snprintf(stat, sizeof(stat),
		 "%u (x) S 7 (y) S %u 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 12345 1000 1\n",
		 odd, parent);
	write_file(dir, "stat", stat);
	fake_proc_pid(proc, child, "orphan", NULL); /* /proc: ppid 1 */

	fr_tracker_comm(t, parent, parent, "make", 1);
	fr_tracker_fork(t, child, parent, child, parent, 10);
	CHECK(fr_tracker_scan(t, proc) == 2, "scan of the fake /proc");
	EXPECT_PROC(t, odd, "x) S 7 (y", "");
	EXPECT_PPID(t, odd, parent);
	EXPECT_PROC(t, child, "orphan", "");
	EXPECT_PPID(t, child, parent);

	/* Found in /proc alone, the parent is what /proc says. */
	fr_tracker_exit(t, child, child, 20);
	for (int i = 0; i < 3; i++)
		fr_tracker_sealed(t);
	CHECK(fr_tracker_scan_pid(t, proc, child) == 0, "rescan of %u", child);
	EXPECT_PPID(t, child, 1);
	fr_tracker_free(t);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", proc);
	CHECK(system(cmd) == 0, "removing %s", proc);
}
int main(void)
{
	test_cgroup();
	test_ppid();
	test_ppid_scan();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
