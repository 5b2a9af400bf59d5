/* The /proc readers of recorder/tracking/proc.h against a proc tree built in a
 * temporary directory, so each odd case the kernel (or a user naming a
 * process) can produce is written down exactly:
 *
 *   comm     the kernel's trailing newline is dropped, one inside the
 *            name is kept, a long name is cut; a thread's name.
 *   stat     a name with spaces and parentheses; state, parent, CPU
 *            ticks and start time; a line cut short says how far it got.
 *   status   the real uid (the first Uid: field).
 *   cgroup   the v2 line after v1 ones; a missing file and a v1-only
 *            file leave the destination as it was.
 *   gone     a pid without a directory answers -ENOENT everywhere.
 *   machine  busy and total ticks of /proc/stat; a malformed line.
 *   listing  only directories named by digits are processes.
 *   mounts   where cgroup2 is mounted, and the default without it.
 *   table    the process table updates in place, forgets, and when full
 *            makes room by dropping the entry put longest ago.
 *   follow   the table learns processes at exec from /proc, at fork from
 *            the parent it follows (or the parent's /proc when the child
 *            is gone), keeps only those its owner wants, and at exit
 *            prefers what a zombie shows to what it knew.
 *   tracker  fr_tracker_scan reads names and threads through the same
 *            readers.
 */
#include "core/util/vmread.h"
#include "recorder/tracking/proc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder/tracking/proc_table.h"
#include "recorder/tracking/tracker.h"

#include "tests/unit/check.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[512], dir[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	/* Creates the parents, one component at a time. */
	for (slash = strchr(dir + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
	f = fopen(path, "we");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(1);
	}
}

static void cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", root);
}

static void test_comm(void)
{
	char comm[FR_LIMIT_COMM_LEN];
	char small[4];

	put("100/comm", "postgres\n");
	CHECK(fr_proc_read_comm(root, 100, 0, comm, sizeof(comm)) == 0 &&
		      strcmp(comm, "postgres") == 0,
	      "comm \"%s\", want postgres", comm);

	put("101/comm", "a\nb\n");
	CHECK(fr_proc_read_comm(root, 101, 0, comm, sizeof(comm)) == 0 && strcmp(comm, "a\nb") == 0,
	      "a name with a newline read as \"%s\"", comm);

	put("102/comm", "abcdefghijklmnopqrstuvwxyz\n");
	CHECK(fr_proc_read_comm(root, 102, 0, comm, sizeof(comm)) == 0 &&
		      strcmp(comm, "abcdefghijklmno") == 0,
	      "long name read as \"%s\"", comm);
	CHECK(fr_proc_read_comm(root, 100, 0, small, sizeof(small)) == 0 &&
		      strcmp(small, "pos") == 0,
	      "name cut to 4 bytes: \"%s\"", small);

	put("100/task/105/comm", "worker\n");
	CHECK(fr_proc_read_comm(root, 100, 105, comm, sizeof(comm)) == 0 &&
		      strcmp(comm, "worker") == 0,
	      "thread name \"%s\"", comm);

	put("103/comm", "");
	snprintf(comm, sizeof(comm), "kept");
	CHECK(fr_proc_read_comm(root, 103, 0, comm, sizeof(comm)) == -ENOENT &&
		      strcmp(comm, "kept") == 0,
	      "an empty comm file changed the name to \"%s\"", comm);
}

static void test_stat(void)
{
	struct fr_proc_stat ps;
	int ret;

	put("200/stat", "200 (a) b) c) S 17 200 200 0 -1 4194560 1 0 0 0 31 7 0 0 20 0 1 0 "
			"4242 1000 10 18446744073709551615\n");
	ret = fr_proc_read_stat(root, 200, &ps);
	CHECK(ret == 0, "stat: %d", ret);
	CHECK(strcmp(ps.comm, "a) b) c") == 0, "name \"%s\", want everything to the last ')'",
	      ps.comm);
	CHECK(ps.state == 'S' && ps.ppid == 17 && ps.ticks == 38 && ps.start == 4242 &&
		      ps.fields == 22,
	      "state %c ppid %u ticks %" PRIu64 " start %" PRIu64
	      " fields %d, want S 17 38 4242 22",
	      ps.state, ps.ppid, ps.ticks, ps.start, ps.fields);

	put("201/stat", "201 (cut) Z 1 201\n");
	ret = fr_proc_read_stat(root, 201, &ps);
	CHECK(ret == -EPROTO && ps.fields == 5 && ps.state == 'Z' && ps.ppid == 1 &&
		      strcmp(ps.comm, "cut") == 0,
	      "a stat line cut short: %d, fields %d, state %c, ppid %u", ret, ps.fields, ps.state,
	      ps.ppid);

	put("202/stat", "202 no name\n");
	CHECK(fr_proc_read_stat(root, 202, &ps) == -EPROTO && ps.fields == 0,
	      "a stat line without a name: fields %d", ps.fields);
}

static void test_uid_cgroup(void)
{
	char cg[64];
	uint32_t uid = 7;

	put("300/status", "Name:\tx\nUmask:\t0022\nState:\tS\nUid:\t1000\t0\t0\t0\nGid:\t5\n");
	CHECK(fr_proc_read_uid(root, 300, &uid) == 0 && uid == 1000, "uid %u, want the real 1000",
	      uid);

	put("300/cgroup", "12:cpuset:/\n3:memory:/x\n0::/system.slice/db.service\n");
	CHECK(fr_proc_read_cgroup(root, 300, cg, sizeof(cg)) == 0 &&
		      strcmp(cg, "/system.slice/db.service") == 0,
	      "cgroup \"%s\"", cg);

	/* A process without a cgroup file (a kernel without cgroups) and a
	 * v1-only machine: the destination keeps what it had. */
	put("301/status", "Name:\ty\n");
	snprintf(cg, sizeof(cg), "kept");
	CHECK(fr_proc_read_cgroup(root, 301, cg, sizeof(cg)) == -ENOENT && strcmp(cg, "kept") == 0,
	      "a missing cgroup file gave \"%s\"", cg);
	put("302/cgroup", "1:name=systemd:/user.slice\n");
	CHECK(fr_proc_read_cgroup(root, 302, cg, sizeof(cg)) == -ENOENT && strcmp(cg, "kept") == 0,
	      "a v1-only cgroup file gave \"%s\"", cg);
	uid = 7;
	CHECK(fr_proc_read_uid(root, 301, &uid) == -ENOENT && uid == 7,
	      "a status without Uid: gave uid %u", uid);
}

static void test_gone(void)
{
	struct fr_proc_stat ps;
	char buf[32] = "kept";
	uint32_t uid = 7;

	CHECK(fr_proc_read_comm(root, 999, 0, buf, sizeof(buf)) == -ENOENT, "comm of a gone pid");
	CHECK(fr_proc_read_stat(root, 999, &ps) == -ENOENT, "stat of a gone pid");
	CHECK(fr_proc_read_uid(root, 999, &uid) == -ENOENT && uid == 7, "uid of a gone pid");
	CHECK(fr_proc_read_cgroup(root, 999, buf, sizeof(buf)) == -ENOENT &&
		      strcmp(buf, "kept") == 0,
	      "cgroup of a gone pid");
}

static void test_machine(void)
{
	uint64_t busy = 0, total = 0;

	put("stat", "cpu  10 1 5 100 4 2 3 0 9 9\ncpu0 10 1 5 100 4 2 3 0 0 0\n");
	CHECK(fr_proc_read_machine(root, &busy, &total) == 0 && total == 125 && busy == 21,
	      "busy %" PRIu64 " total %" PRIu64 ", want 21 of 125", busy, total);
	put("stat", "cpu  10 1 5\n");
	CHECK(fr_proc_read_machine(root, &busy, &total) == -EPROTO, "a short cpu line");
	put("stat", "intr 1 2 3\n");
	CHECK(fr_proc_read_machine(root, &busy, &total) == -EPROTO, "no cpu line");
}

static void count_pid(void *arg, uint32_t pid)
{
	uint64_t *sum = arg;

	*sum += pid;
}

static void test_listing(void)
{
	char dir[128];
	uint64_t sum = 0;
	int n;

	/* Processes 100..103, 200..202, 300..302 exist by now; "self",
	 * "stat", "12x" and "0" are not processes. */
	put("12x/comm", "x\n");
	put("0/comm", "x\n");
	n = fr_proc_each_pid(root, count_pid, &sum);
	CHECK(n == 10 && sum == 100 + 101 + 102 + 103 + 200 + 201 + 202 + 300 + 301 + 302,
	      "%d processes listed (pid sum %" PRIu64 "), want 10", n, sum);
	snprintf(dir, sizeof(dir), "%s/none", root);
	CHECK(fr_proc_each_pid(dir, count_pid, &sum) == -ENOENT, "listing a missing directory");
}

static void test_mounts(void)
{
	char cgroot[64];
	uint64_t usec = 0;
	char dir[128];

	fr_proc_cgroup_root(root, cgroot, sizeof(cgroot));
	CHECK(strcmp(cgroot, "/sys/fs/cgroup") == 0, "without mountinfo: %s", cgroot);
	put("self/mountinfo",
	    "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
	    "30 25 0:26 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n");
	fr_proc_cgroup_root(root, cgroot, sizeof(cgroot));
	CHECK(strcmp(cgroot, "/sys/fs/cgroup/unified") == 0, "hybrid mount: %s", cgroot);

	put("cg/db/cpu.stat", "usage_usec 123456\nuser_usec 100000\n");
	snprintf(dir, sizeof(dir), "%s/cg", root);
	CHECK(fr_proc_read_cgroup_usage(dir, "/db", &usec) == 0 && usec == 123456,
	      "usage_usec %" PRIu64, usec);
	CHECK(fr_proc_read_cgroup_usage(dir, "/none", &usec) == -ENOENT, "a missing cgroup");
}

static void test_table(void)
{
	struct fr_proc_table pt;
	int32_t i;
	int ok = 1;

	fr_proc_table_init(&pt);
	CHECK(fr_proc_table_find(&pt, 1) < 0, "an empty table finds pid 1");
	CHECK(fr_proc_table_put(&pt, 1, "init-with-a-long-name", "/init.scope", 0) == 0, "put");
	CHECK(fr_proc_table_put(&pt, 2, "kthreadd", NULL, 0) == 0, "put");
	i = fr_proc_table_find(&pt, 1);
	CHECK(i >= 0 && strcmp(pt.e[i].comm, "init-with-a-lo") != 0 &&
		      strcmp(pt.e[i].comm, "init-with-a-lon") == 0 && pt.e[i].cgroup &&
		      strcmp(pt.e[i].cgroup, "/init.scope") == 0,
	      "pid 1: comm \"%s\", want 15 bytes of the name", i >= 0 ? pt.e[i].comm : "");
	/* Updating pid 1 makes it the newest: pid 2 goes first when full. */
	CHECK(fr_proc_table_put(&pt, 1, "systemd", "", 5) == 0, "update");
	i = fr_proc_table_find(&pt, 1);
	CHECK(i >= 0 && strcmp(pt.e[i].comm, "systemd") == 0 && !pt.e[i].cgroup &&
		      pt.e[i].uid == 5 && pt.used == 2,
	      "pid 1 after the update");
	for (uint32_t pid = 10; pid < 10 + FR_PROC_TABLE_MAX - 2 && ok; pid++)
		ok = fr_proc_table_put(&pt, pid, "x", NULL, 0) == 0;
	CHECK(ok && pt.used == FR_PROC_TABLE_MAX, "filling the table: %u entries", pt.used);
	CHECK(fr_proc_table_put(&pt, 7, "new", NULL, 0) == 0 && pt.used == FR_PROC_TABLE_MAX,
	      "a put into a full table");
	CHECK(fr_proc_table_find(&pt, 2) < 0 && fr_proc_table_find(&pt, 1) >= 0 &&
		      fr_proc_table_find(&pt, 7) >= 0,
	      "a full table did not drop the entry put longest ago");
	fr_proc_table_del(&pt, 1);
	fr_proc_table_del(&pt, 424242);
	CHECK(fr_proc_table_find(&pt, 1) < 0 && pt.used == FR_PROC_TABLE_MAX - 1, "del");
	fr_proc_table_fini(&pt);
	CHECK(pt.used == 0 && fr_proc_table_find(&pt, 7) < 0, "fini leaves an empty table");
}

/* Keeps processes whose name starts with "target". */
static int keep_targets(void *arg, uint32_t pid, const char *comm, const char *cgroup, uint32_t uid)
{
	(void)arg;
	(void)pid;
	(void)cgroup;
	(void)uid;
	return strncmp(comm, "target", 6) == 0;
}

static void test_follow(void)
{
	char dir[128];
	struct fr_proc_table pt;
	struct fr_proc_source src = {.proc = dir, .cgroups = 1, .keep = keep_targets, .who = "test"};
	struct fr_proc_last last;
	int32_t i;
	int n;

	snprintf(dir, sizeof(dir), "%s/follow", root);
	put("follow/500/comm", "target-a\n");
	put("follow/500/status", "Name:\tx\nUid:\t1000\t1000\t1000\t1000\n");
	put("follow/500/cgroup", "0::/app\n");
	put("follow/503/comm", "target-b\n");
	put("follow/503/status", "Name:\tx\nUid:\t33\t33\t33\t33\n");
	put("follow/503/cgroup", "0::/web\n");
	put("follow/505/comm", "bash\n");
	fr_proc_table_init(&pt);

	fr_proc_table_exec(&pt, &src, 500);
	i = fr_proc_table_find(&pt, 500);
	CHECK(i >= 0 && strcmp(pt.e[i].comm, "target-a") == 0 && pt.e[i].uid == 1000 &&
		      pt.e[i].cgroup && strcmp(pt.e[i].cgroup, "/app") == 0,
	      "exec of 500 not learned from /proc");
	fr_proc_table_exec(&pt, &src, 505);
	CHECK(fr_proc_table_find(&pt, 505) < 0, "a process the owner does not want was kept");

	/* A child of a followed parent, gone from /proc: the parent's. */
	fr_proc_table_fork(&pt, &src, 501, 500);
	i = fr_proc_table_find(&pt, 501);
	CHECK(i >= 0 && strcmp(pt.e[i].comm, "target-a") == 0 && pt.e[i].uid == 1000 &&
		      pt.e[i].cgroup && strcmp(pt.e[i].cgroup, "/app") == 0,
	      "a fork did not inherit its followed parent");
	/* A child of a parent the table missed, itself gone: the parent's
	 * /proc. */
	fr_proc_table_fork(&pt, &src, 502, 503);
	i = fr_proc_table_find(&pt, 502);
	CHECK(i >= 0 && strcmp(pt.e[i].comm, "target-b") == 0 && pt.e[i].uid == 33 &&
		      pt.e[i].cgroup && strcmp(pt.e[i].cgroup, "/web") == 0,
	      "a fork did not learn from its parent's /proc");

	/* A rename away from the targets: forgotten. */
	fr_proc_table_rename(&pt, &src, 501, "other");
	CHECK(fr_proc_table_find(&pt, 501) < 0, "a rename away from the targets was kept");

	/* At exit a zombie's /proc wins; a pid gone from /proc has what the
	 * table knew; an unknown vanished pid has nothing. */
	put("follow/500/stat",
	    "500 (target-z) Z 1 500 500 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 9 0 0\n");
	fr_proc_table_exited(&pt, &src, 500, &last);
	CHECK(strcmp(last.comm, "target-z") == 0 && last.uid == 1000 &&
		      strcmp(last.cgroup, "/app") == 0 && fr_proc_table_find(&pt, 500) < 0,
	      "zombie 500 exited as \"%s\" uid %u cgroup \"%s\"", last.comm, last.uid, last.cgroup);
	fr_proc_table_exited(&pt, &src, 502, &last);
	CHECK(strcmp(last.comm, "target-b") == 0 && last.uid == 33 &&
		      strcmp(last.cgroup, "/web") == 0 && fr_proc_table_find(&pt, 502) < 0,
	      "502 exited as \"%s\" uid %u, want what the table knew", last.comm, last.uid);
	fr_proc_table_exited(&pt, &src, 999, &last);
	CHECK(!last.comm[0] && !last.cgroup[0] && last.uid == FR_PROC_UID_UNKNOWN,
	      "an unknown vanished pid exited as \"%s\"", last.comm);

	/* A process that execs and dies at once: the connector's comm event
	 * (exec renames it) names it, and the exec event that follows finds
	 * no /proc/PID any more; what the rename taught must stay. */
	fr_proc_table_rename(&pt, &src, 510, "target-quick");
	fr_proc_table_exec(&pt, &src, 510);
	i = fr_proc_table_find(&pt, 510);
	CHECK(i >= 0 && strcmp(pt.e[i].comm, "target-quick") == 0,
	      "an exec of a process gone from /proc forgot the name its rename gave");
	fr_proc_table_exited(&pt, &src, 510, &last);
	CHECK(strcmp(last.comm, "target-quick") == 0,
	      "a process that exec'd and died at once exited as \"%s\"", last.comm);

	fr_proc_table_fini(&pt);
	n = fr_proc_table_seed(&pt, &src);
	CHECK(n == 3 && fr_proc_table_find(&pt, 500) >= 0 && fr_proc_table_find(&pt, 503) >= 0 &&
		      fr_proc_table_find(&pt, 505) < 0 && pt.used == 2,
	      "seed listed %d, kept %u, want 3 and the 2 targets", n, pt.used);
	fr_proc_table_fini(&pt);
}

/* The tracker's scan reads through the same readers: names, the parent
 * from stat, and thread names without their trailing blanks. */
static void test_tracker_scan(void)
{
	char dir[128];
	struct fr_tracker *t = fr_tracker_new();
	const struct fr_chunk_meta_ops *ops;
	struct fr_proc_info pi;
	struct fr_thread_info ti;
	int n;

	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	snprintf(dir, sizeof(dir), "%s/scan", root);
	mkdir(dir, 0755);
	put("scan/400/stat", "400 (my (daemon)) S 1 400 400 0 -1 0 0 0 0 0 3 4 0 0 20 0 2 0 "
			     "50 0 0\n");
	put("scan/400/status", "Name:\tx\nUid:\t33\t33\t33\t33\n");
	put("scan/400/cgroup", "0::/web\n");
	put("scan/400/task/400/comm", "my (daemon)\n");
	put("scan/400/task/401/comm", "pool \n");
	put("scan/403/comm", "no stat\n");
	n = fr_tracker_scan(t, dir);
	CHECK(n == 1, "scan found %d processes, want 1 (403 has no stat)", n);
	ops = fr_tracker_ops(t);
	memset(&pi, 0, sizeof(pi));
	CHECK(ops->proc(ops->arg, 400, &pi) == 0 && pi.comm &&
		      strcmp(pi.comm, "my (daemon)") == 0 && pi.uid == 33 && pi.ppid == 1 &&
		      pi.cgroup && strcmp(pi.cgroup, "/web") == 0,
	      "process 400: comm \"%s\" uid %u ppid %u cgroup %s", pi.comm ? pi.comm : "", pi.uid,
	      pi.ppid, pi.cgroup ? pi.cgroup : "");
	memset(&ti, 0, sizeof(ti));
	CHECK(ops->thread(ops->arg, 401, &ti) == 0 && ti.name && strcmp(ti.name, "pool") == 0,
	      "thread 401 named \"%s\", want \"pool\"", ti.name ? ti.name : "");
	fr_tracker_free(t);
}

/* Another process's memory, read as the labels' look-ups and the stack
 * reader do (here this process's own): whole, or an error for memory that
 * is not there, never a part taken for the whole. */
static void test_vm_read(void)
{
	static const char text[] = "flightrec reads this";
	char buf[sizeof(text)];
	uint32_t self = (uint32_t)getpid();

	memset(buf, 0, sizeof(buf));
	CHECK(fr_proc_vm_read(self, (uint64_t)(uintptr_t)text, buf, sizeof(buf)) == 0 &&
		      memcmp(buf, text, sizeof(text)) == 0,
	      "fr_proc_vm_read of our own memory");
	CHECK(fr_proc_vm_read(self, 8, buf, sizeof(buf)) < 0, "an address in no mapping reads");
	CHECK(fr_proc_vm_read(self, UINT64_MAX - 4, buf, sizeof(buf)) < 0,
	      "a range past the end of the address space reads");
}

int main(void)
{
	test_vm_read();
	snprintf(root, sizeof(root), "/tmp/fr-test-proc-XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_comm();
	test_stat();
	test_uid_cgroup();
	test_gone();
	test_machine();
	test_listing();
	test_mounts();
	test_table();
	test_follow();
	test_tracker_scan();
	cleanup();
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
