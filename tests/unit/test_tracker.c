/* Process tracker: synthetic side-band records (COMM, MMAP2, FORK, EXIT)
 * checked through the callbacks the chunk builder uses, and through the
 * tables of chunks actually sealed with them: forks, execs, mappings that
 * overlap, thread names, exits kept for two seals and reused pids. The
 * cgroups and parents are in test_tracker_procfs.c, the real /proc and
 * build ids in test_tracker_scan.c. */
#include "recorder/tracking/tracker.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/store/chunk.h"

#include "core/util/time.h"
#include "tests/unit/check.h"
#include "tests/unit/tracker_check.h"

#define SEC_NS FR_NS_PER_S

static void test_fork_copies_parent(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint32_t parent = PID_BASE + 1, child = PID_BASE + 2;
	struct fr_chunk *c;
	struct pinfo p;
	struct minfo m;

	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	make_parent(t, parent, "parent");
	fr_tracker_fork(t, child, parent, child, parent, 1700000000123456789);

	EXPECT_PROC(t, child, "parent", "/usr/bin/parent");
	p = proc_of(t, child);
	CHECK(p.start_ns == 1700000000123456789, "child start_ns %" PRId64 ", want the fork time",
	      p.start_ns);
	EXPECT_THREAD(t, child, child, "parent");
	EXPECT_MAP(t, child, 0x400123, "/usr/bin/parent", 0x400000, 0x402000, 0);
	EXPECT_MAP(t, child, 0x7f000000fff0, "/usr/lib/libc.so.6", 0x7f0000000000, 0x7f0000010000,
		   0x1000);
	m = map_of(t, child, 0x400123);
	CHECK(m.bid_len == 20 && memcmp(m.bid, bid_parent, 20) == 0,
	      "child mapping lacks the parent's build id (len %u)", m.bid_len);
	CHECK(fr_tracker_nprocs(t) == 2, "nprocs %u, want 2", fr_tracker_nprocs(t));

	/* The sealed chunk names and maps the child. */
	{
		const uint32_t who[2][2] = {{child, child}, {parent, parent}};
		const uint64_t addrs[2] = {0x400123, 0x7f0000000100};

		c = seal_view(t, who, addrs, 2);
		if (c) {
			CHECK(streq(chunk_comm(c, child), "parent"), "chunk comm of child: %s",
			      chunk_comm(c, child));
			CHECK(streq(chunk_thread(c, child), "parent"), "chunk thread of child: %s",
			      chunk_thread(c, child));
			CHECK(streq(chunk_map_path(c, child, 0x400123), "/usr/bin/parent"),
			      "chunk mapping of child: %s", chunk_map_path(c, child, 0x400123));
			CHECK(streq(chunk_map_path(c, parent, 0x7f0000000100),
				    "/usr/lib/libc.so.6"),
			      "chunk mapping of parent: %s",
			      chunk_map_path(c, parent, 0x7f0000000100));
			fr_chunk_free(c);
		}
	}

	/* The child execs: its mappings go, the parent's stay. */
	fr_tracker_comm(t, child, child, "child", 1);
	EXPECT_PROC(t, child, "child", "");
	EXPECT_THREAD(t, child, child, "child");
	EXPECT_NO_MAP(t, child, 0x400123);
	EXPECT_NO_MAP(t, child, 0x7f000000fff0);
	EXPECT_PROC(t, parent, "parent", "/usr/bin/parent");
	EXPECT_THREAD(t, parent, parent, "parent");
	EXPECT_MAP(t, parent, 0x400123, "/usr/bin/parent", 0x400000, 0x402000, 0);

	/* A new thread of the parent is named after the thread that made it. */
	fr_tracker_fork(t, parent, parent, parent + 100, parent, 1700000001000000000);
	EXPECT_THREAD(t, parent + 100, parent, "parent");
	CHECK(fr_tracker_nprocs(t) == 2, "a thread made a process: nprocs %u",
	      fr_tracker_nprocs(t));
	fr_tracker_free(t);
}

/* fork() copies the calling thread: the child's comm is that thread's
 * name, not the name of the parent's main thread (as /proc/CHILD/comm
 * shows, and as perf itself tracks it). */
static void test_fork_from_named_thread(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint32_t parent = PID_BASE + 11, worker = PID_BASE + 12, child = PID_BASE + 13;

	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	make_parent(t, parent, "server");
	fr_tracker_fork(t, parent, parent, worker, parent, 1);
	fr_tracker_comm(t, parent, worker, "worker", 0);
	fr_tracker_fork(t, child, parent, child, worker, 2);

	EXPECT_THREAD(t, child, child, "worker");
	/* A single-threaded process: its comm is its one thread's name. */
	EXPECT_PROC(t, child, "worker", "/usr/bin/parent");
	EXPECT_MAP(t, child, 0x400123, "/usr/bin/parent", 0x400000, 0x402000, 0);
	fr_tracker_free(t);
}

/* The child's exec was drained (from another CPU) before its fork: the
 * late fork record must not put the parent's name and mappings back. */
static void test_fork_after_exec(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint32_t parent = PID_BASE + 14, child = PID_BASE + 15;

	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	make_parent(t, parent, "bash");
	fr_tracker_comm(t, child, child, "burn", 1);
	fr_tracker_mmap(t, child, 0x500000, 0x1000, 0, RX, "/usr/bin/burn", NULL, 0);
	fr_tracker_fork(t, child, parent, child, parent, 3);

	EXPECT_PROC(t, child, "burn", "/usr/bin/burn");
	EXPECT_THREAD(t, child, child, "burn");
	EXPECT_MAP(t, child, 0x500010, "/usr/bin/burn", 0x500000, 0x501000, 0);
	EXPECT_NO_MAP(t, child, 0x400123);
	fr_tracker_free(t);
}

static void test_exec(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint32_t pid = PID_BASE + 21;

	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	make_parent(t, pid, "sh");
	EXPECT_PROC(t, pid, "sh", "/usr/bin/parent");

	fr_tracker_comm(t, pid, pid, "newprog", 1);
	EXPECT_PROC(t, pid, "newprog", "");
	EXPECT_THREAD(t, pid, pid, "newprog");
	EXPECT_NO_MAP(t, pid, 0x400123);
	EXPECT_NO_MAP(t, pid, 0x7f0000000100);

	/* A pseudo-path is mapped but is not the executable. */
	fr_tracker_mmap(t, pid, 0x7ffff7fc0000, 0x2000, 0, RX, "[vdso]", NULL, 0);
	EXPECT_PROC(t, pid, "newprog", "");
	EXPECT_MAP(t, pid, 0x7ffff7fc0010, "[vdso]", 0x7ffff7fc0000, 0x7ffff7fc2000, 0);

	fr_tracker_mmap(t, pid, 0x500000, 0x3000, 0x1000, RX, "/usr/bin/newprog", NULL, 0);
	EXPECT_PROC(t, pid, "newprog", "/usr/bin/newprog");
	fr_tracker_mmap(t, pid, 0x7f0000100000, 0x20000, 0, RX, "/usr/lib/ld-linux.so.2", NULL, 0);
	EXPECT_PROC(t, pid, "newprog", "/usr/bin/newprog");
	EXPECT_MAP(t, pid, 0x500000, "/usr/bin/newprog", 0x500000, 0x503000, 0x1000);
	EXPECT_MAP(t, pid, 0x7f000011ffff, "/usr/lib/ld-linux.so.2", 0x7f0000100000, 0x7f0000120000,
		   0);
	EXPECT_NO_MAP(t, pid, 0x503000);

	/* A rename that is no exec keeps the executable and the mappings. */
	fr_tracker_comm(t, pid, pid, "renamed", 0);
	EXPECT_PROC(t, pid, "renamed", "/usr/bin/newprog");
	EXPECT_MAP(t, pid, 0x500000, "/usr/bin/newprog", 0x500000, 0x503000, 0x1000);
	fr_tracker_free(t);
}

static void test_nonexec_ignored(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint32_t pid = PID_BASE + 31;

	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	make_parent(t, pid, "app");
	fr_tracker_mmap(t, pid, 0x600000, 0x1000, 0, PROT_READ | PROT_WRITE, "/usr/lib/data.bin",
			NULL, 0);
	fr_tracker_mmap(t, pid, 0x610000, 0x1000, 0, PROT_READ, "/usr/lib/ro.bin", NULL, 0);
	EXPECT_NO_MAP(t, pid, 0x600010);
	EXPECT_NO_MAP(t, pid, 0x610010);
	EXPECT_MAP(t, pid, 0x401010, "/usr/bin/parent", 0x400000, 0x402000, 0);
	EXPECT_PROC(t, pid, "app", "/usr/bin/parent");
	fr_tracker_free(t);
}

static void test_overlap_replaces(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint32_t pid = PID_BASE + 41;
	struct fr_chunk *c;

	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	fr_tracker_comm(t, pid, pid, "jit", 1);
	/* The same range mapped again: the newer file wins. */
	fr_tracker_mmap(t, pid, 0x40000, 0x10000, 0, RX, "/c1", NULL, 0);
	fr_tracker_mmap(t, pid, 0x40000, 0x10000, 0x3000, RX, "/c2", NULL, 0);
	EXPECT_MAP(t, pid, 0x40000, "/c2", 0x40000, 0x50000, 0x3000);
	EXPECT_MAP(t, pid, 0x4ffff, "/c2", 0x40000, 0x50000, 0x3000);

	/* A range inside an older one. */
	fr_tracker_mmap(t, pid, 0x10000, 0x20000, 0, RX, "/a", NULL, 0);
	fr_tracker_mmap(t, pid, 0x18000, 0x8000, 0, RX, "/b", NULL, 0);
	EXPECT_MAP(t, pid, 0x18000, "/b", 0x18000, 0x20000, 0);
	EXPECT_MAP(t, pid, 0x1ffff, "/b", 0x18000, 0x20000, 0);

	/* A range over parts of two older ones. */
	fr_tracker_mmap(t, pid, 0x60000, 0x1000, 0, RX, "/d", NULL, 0);
	fr_tracker_mmap(t, pid, 0x62000, 0x1000, 0, RX, "/e", NULL, 0);
	fr_tracker_mmap(t, pid, 0x60800, 0x2000, 0, RX, "/f", NULL, 0);
	EXPECT_MAP(t, pid, 0x60900, "/f", 0x60800, 0x62800, 0);
	EXPECT_MAP(t, pid, 0x62100, "/f", 0x60800, 0x62800, 0);
	/* Untouched neighbours stay. */
	EXPECT_MAP(t, pid, 0x4ffff, "/c2", 0x40000, 0x50000, 0x3000);

	/* The sealed chunk's mapping table holds no overlaps (the decoder
	 * would reject it) and answers the same. */
	{
		const uint32_t who[5][2] = {{pid, pid},
					    {pid, pid},
					    {pid, pid},
					    {pid, pid},
					    {pid, pid}};
		const uint64_t addrs[5] = {0x40010, 0x18010, 0x1fff0, 0x60900, 0x62100};

		c = seal_view(t, who, addrs, 5);
		if (c) {
			CHECK(streq(chunk_map_path(c, pid, 0x40010), "/c2"), "chunk 0x40010: %s",
			      chunk_map_path(c, pid, 0x40010));
			CHECK(streq(chunk_map_path(c, pid, 0x18010), "/b"), "chunk 0x18010: %s",
			      chunk_map_path(c, pid, 0x18010));
			CHECK(streq(chunk_map_path(c, pid, 0x1fff0), "/b"), "chunk 0x1fff0: %s",
			      chunk_map_path(c, pid, 0x1fff0));
			CHECK(streq(chunk_map_path(c, pid, 0x60900), "/f"), "chunk 0x60900: %s",
			      chunk_map_path(c, pid, 0x60900));
			CHECK(streq(chunk_map_path(c, pid, 0x62100), "/f"), "chunk 0x62100: %s",
			      chunk_map_path(c, pid, 0x62100));
			fr_chunk_free(c);
		}
	}
	fr_tracker_free(t);
}

static void test_thread_rename(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint32_t pid = PID_BASE + 51, tid = PID_BASE + 52;
	struct fr_chunk *c;

	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	make_parent(t, pid, "server");
	fr_tracker_fork(t, pid, pid, tid, pid, 5);
	EXPECT_THREAD(t, tid, pid, "server");

	fr_tracker_comm(t, pid, tid, "worker-1", 0);
	EXPECT_THREAD(t, tid, pid, "worker-1");
	EXPECT_THREAD(t, pid, pid, "server");
	EXPECT_PROC(t, pid, "server", "/usr/bin/parent");
	CHECK(fr_tracker_nprocs(t) == 1, "a thread rename made a process: nprocs %u",
	      fr_tracker_nprocs(t));
	CHECK(fr_tracker_nthreads(t) == 2, "nthreads %u, want 2", fr_tracker_nthreads(t));

	/* Renaming the main thread renames the process (prctl PR_SET_NAME). */
	fr_tracker_comm(t, pid, pid, "srv-main", 0);
	EXPECT_PROC(t, pid, "srv-main", "/usr/bin/parent");
	EXPECT_THREAD(t, pid, pid, "srv-main");
	EXPECT_THREAD(t, tid, pid, "worker-1");
	EXPECT_MAP(t, pid, 0x400123, "/usr/bin/parent", 0x400000, 0x402000, 0);

	{
		const uint32_t who[2][2] = {{pid, pid}, {pid, tid}};
		const uint64_t addrs[2] = {0x400100, 0x400200};

		c = seal_view(t, who, addrs, 2);
		if (c) {
			CHECK(streq(chunk_comm(c, pid), "srv-main"), "chunk comm: %s",
			      chunk_comm(c, pid));
			CHECK(streq(chunk_thread(c, tid), "worker-1"), "chunk thread: %s",
			      chunk_thread(c, tid));
			CHECK(fr_chunk_find_thread(c, tid) &&
				      fr_chunk_find_thread(c, tid)->pid == pid,
			      "chunk thread %u not of pid %u", tid, pid);
			fr_chunk_free(c);
		}
	}
	fr_tracker_free(t);
}

static void test_exit_kept_two_seals(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint32_t pid = PID_BASE + 61, tid = PID_BASE + 62;
	const uint32_t who[2][2] = {{PID_BASE + 61, PID_BASE + 61}, {PID_BASE + 61, PID_BASE + 62}};
	const uint64_t addrs[2] = {0x400100, 0x400200};
	struct fr_chunk *c;

	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	make_parent(t, pid, "short");
	fr_tracker_fork(t, pid, pid, tid, pid, 5);
	fr_tracker_sealed(t);

	/* A thread exits: gone after two seals, its process stays. */
	fr_tracker_exit(t, pid, tid, 10);
	EXPECT_THREAD(t, tid, pid, "short");
	fr_tracker_sealed(t);
	EXPECT_THREAD(t, tid, pid, "short");
	fr_tracker_sealed(t);
	CHECK(thread_of(t, tid).ret == -ENOENT, "exited thread still known after two seals");
	EXPECT_THREAD(t, pid, pid, "short");
	EXPECT_PROC(t, pid, "short", "/usr/bin/parent");
	CHECK(fr_tracker_nthreads(t) == 1, "nthreads %u, want 1", fr_tracker_nthreads(t));

	/* The process exits: still named and mapped by the next two chunks. */
	fr_tracker_fork(t, pid, pid, tid + 1, pid, 11);
	fr_tracker_exit(t, pid, tid + 1, 19);
	fr_tracker_exit(t, pid, pid, 20);
	for (int seal = 0; seal < 2; seal++) {
		EXPECT_PROC(t, pid, "short", "/usr/bin/parent");
		EXPECT_THREAD(t, pid, pid, "short");
		EXPECT_MAP(t, pid, 0x400123, "/usr/bin/parent", 0x400000, 0x402000, 0);
		c = seal_view(t, who, addrs, 1);
		if (c) {
			CHECK(streq(chunk_comm(c, pid), "short"), "seal %d after exit: comm %s",
			      seal, chunk_comm(c, pid));
			CHECK(streq(chunk_map_path(c, pid, 0x400100), "/usr/bin/parent"),
			      "seal %d after exit: mapping %s", seal,
			      chunk_map_path(c, pid, 0x400100));
			fr_chunk_free(c);
		}
		CHECK(fr_tracker_nprocs(t) == 1, "seal %d after exit: nprocs %u", seal,
		      fr_tracker_nprocs(t));
		fr_tracker_sealed(t);
	}
	CHECK(proc_of(t, pid).ret == -ENOENT, "exited process still known after two seals");
	CHECK(thread_of(t, pid).ret == -ENOENT, "exited main thread still known after two seals");
	EXPECT_NO_MAP(t, pid, 0x400123);
	CHECK(fr_tracker_nprocs(t) == 0, "nprocs %u after the exit, want 0", fr_tracker_nprocs(t));
	CHECK(fr_tracker_nthreads(t) == 0, "nthreads %u after the exit, want 0",
	      fr_tracker_nthreads(t));
	c = seal_view(t, who, addrs, 1);
	if (c) {
		CHECK(!fr_chunk_find_proc(c, pid), "chunk still names the gone process");
		CHECK(!fr_chunk_find_map(c, pid, 0x400100), "chunk still maps the gone process");
		fr_chunk_free(c);
	}
	fr_tracker_free(t);
}

static void test_pid_reuse(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint32_t pid = PID_BASE + 71, other = PID_BASE + 72, again = PID_BASE + 73;
	struct pinfo p;

	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	fr_tracker_comm(t, pid, pid, "old", 1);
	fr_tracker_mmap(t, pid, 0x400000, 0x1000, 0, RX, "/usr/bin/old", NULL, 0);
	fr_tracker_comm(t, other, other, "spawner", 1);
	fr_tracker_mmap(t, other, 0x800000, 0x1000, 0, RX, "/usr/bin/spawner", NULL, 0);
	fr_tracker_exit(t, pid, pid, 100);

	/* The pid comes back, before the old process was forgotten. */
	fr_tracker_fork(t, pid, other, pid, other, 200);
	EXPECT_PROC(t, pid, "spawner", "/usr/bin/spawner");
	EXPECT_THREAD(t, pid, pid, "spawner");
	EXPECT_NO_MAP(t, pid, 0x400010);
	EXPECT_MAP(t, pid, 0x800010, "/usr/bin/spawner", 0x800000, 0x801000, 0);
	p = proc_of(t, pid);
	CHECK(p.start_ns == 200, "reused pid start_ns %" PRId64 ", want 200", p.start_ns);

	/* The old exit does not take the new process away. */
	for (int i = 0; i < 3; i++)
		fr_tracker_sealed(t);
	EXPECT_PROC(t, pid, "spawner", "/usr/bin/spawner");
	EXPECT_THREAD(t, pid, pid, "spawner");
	EXPECT_MAP(t, pid, 0x800010, "/usr/bin/spawner", 0x800000, 0x801000, 0);
	CHECK(fr_tracker_nprocs(t) == 2, "nprocs %u, want 2", fr_tracker_nprocs(t));

	/* Reuse announced by an exec alone (the FORK record was lost). */
	fr_tracker_comm(t, again, again, "first", 1);
	fr_tracker_mmap(t, again, 0x400000, 0x1000, 0, RX, "/usr/bin/first", NULL, 0);
	fr_tracker_exit(t, again, again, 300);
	fr_tracker_comm(t, again, again, "second", 1);
	EXPECT_PROC(t, again, "second", "");
	EXPECT_NO_MAP(t, again, 0x400010);
	for (int i = 0; i < 3; i++)
		fr_tracker_sealed(t);
	EXPECT_PROC(t, again, "second", "");
	fr_tracker_free(t);
}

/* A thread renamed while a chunk is open: each sample named as it was
 * then (names over time), the renames handed to two seals, then forgotten. */
static void test_rename_times(void)
{
	struct fr_tracker *t = fr_tracker_new();
	const struct fr_chunk_meta_ops *ops;
	uint32_t pid = PID_BASE + 70, tid = PID_BASE + 71;
	const int64_t t0 = 1700000000000000000; /* seal_view's first sample */
	struct fr_thread_info ti;
	struct fr_chunk *c;

	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	ops = fr_tracker_ops(t);
	make_parent(t, pid, "server");
	fr_tracker_fork(t, pid, pid, tid, pid, t0 - 5);
	/* A first name is not a rename; the same name again neither. */
	fr_tracker_comm_at(t, pid, tid, "server", 0, t0 - 4);
	fr_tracker_comm_at(t, pid, tid, "A", 0, t0 + 1500000);
	fr_tracker_comm_at(t, pid, tid, "B", 0, t0 + 3500000);
	memset(&ti, 0, sizeof(ti));
	CHECK(ops->thread(ops->arg, tid, &ti) == 0 && ti.nchanges == 2 && ti.before &&
		      streq(ti.before, "server") && streq(ti.changes[0].name, "A") &&
		      ti.changes[1].time_ns == t0 + 3500000,
	      "renames handed to the seal: %u", ti.nchanges);
	{
		const uint32_t who[5][2] = {{pid, tid},
					    {pid, tid},
					    {pid, tid},
					    {pid, tid},
					    {pid, pid}};
		const uint64_t addrs[5] = {0x400100, 0x400100, 0x400100, 0x400100, 0x400100};
		static const char *const want[4] = {"server", "server", "A", "A"};

		c = seal_view(t, who, addrs, 5);
		for (uint32_t i = 0; c && i < c->nsamples; i++) {
			const char *got =
				c->strings[fr_chunk_thread_name_at(c, c->tid[i], c->time_ns[i])];
			int k = (int)((c->time_ns[i] - t0) / 1000000);

			if (c->tid[i] == tid)
				CHECK(streq(got, want[k]), "sample %d: %s, want %s", k, got,
				      want[k]);
		}
		/* Samples at +0..+3 ms: the one at +4 ms is the main thread's. */
		CHECK(c && fr_chunk_find_names(c, tid) && !fr_chunk_find_names(c, pid),
		      "names of the renamed thread only");
		CHECK(c && streq(chunk_thread(c, tid), "B"), "the table keeps the seal's name");
		fr_chunk_free(c);
	}
	fr_tracker_sealed(t);
	memset(&ti, 0, sizeof(ti));
	CHECK(ops->thread(ops->arg, tid, &ti) == 0 && ti.nchanges == 2,
	      "renames kept for the next seal (late samples): %u", ti.nchanges);
	fr_tracker_comm_at(t, pid, tid, "C", 0, t0 + SEC_NS);
	fr_tracker_sealed(t);
	memset(&ti, 0, sizeof(ti));
	CHECK(ops->thread(ops->arg, tid, &ti) == 0 && ti.nchanges == 1 && streq(ti.before, "B") &&
		      streq(ti.changes[0].name, "C"),
	      "older renames forgotten: %u", ti.nchanges);
	fr_tracker_sealed(t);
	fr_tracker_sealed(t);
	memset(&ti, 0, sizeof(ti));
	CHECK(ops->thread(ops->arg, tid, &ti) == 0 && ti.nchanges == 0 && streq(ti.name, "C"),
	      "a thread that stopped renaming keeps no history: %u", ti.nchanges);
	/* Renamed more often than kept between two seals: the latest stay. */
	for (int i = 0; i < 200; i++)
		fr_tracker_comm_at(t, pid, tid, i % 2 ? "odd" : "even", 0, t0 + 2 * SEC_NS + i);
	memset(&ti, 0, sizeof(ti));
	CHECK(ops->thread(ops->arg, tid, &ti) == 0 && ti.nchanges > 0 && ti.nchanges <= 200 &&
		      ti.changes[ti.nchanges - 1].time_ns == t0 + 2 * SEC_NS + 199 &&
		      streq(ti.changes[ti.nchanges - 1].name, "odd"),
	      "a flood of renames: %u kept", ti.nchanges);
	fr_tracker_free(t);
}

/* Creators: the FORK record's ptid, for a thread and for a new process's
 * main thread; unknown for a thread learned otherwise; in the chunk. */
static void test_creators(void)
{
	struct fr_tracker *t = fr_tracker_new();
	const struct fr_chunk_meta_ops *ops;
	uint32_t pid = PID_BASE + 80, x = PID_BASE + 81, y = PID_BASE + 82;
	uint32_t child = PID_BASE + 83, old = PID_BASE + 84;
	struct fr_thread_info ti;
	struct fr_chunk *c;

	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	ops = fr_tracker_ops(t);
	make_parent(t, pid, "server");
	fr_tracker_fork(t, pid, pid, x, pid, 10);
	fr_tracker_fork(t, pid, pid, y, x, 11);
	fr_tracker_fork(t, child, pid, child, y, 12);
	fr_tracker_comm(t, pid, old, "old", 0); /* learned without a FORK */
	{
		const uint32_t want[][2] = {{x, pid}, {y, x}, {child, y}, {old, 0}, {pid, 0}};

		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			memset(&ti, 0, sizeof(ti));
			CHECK(ops->thread(ops->arg, want[i][0], &ti) == 0 &&
				      ti.creator == want[i][1],
			      "thread %u: creator %u, want %u", want[i][0] - PID_BASE,
			      ti.creator ? ti.creator - PID_BASE : 0,
			      want[i][1] ? want[i][1] - PID_BASE : 0);
		}
	}
	{
		const uint32_t who[4][2] = {{pid, x}, {pid, y}, {child, child}, {pid, old}};
		const uint64_t addrs[4] = {0x400100, 0x400100, 0x400100, 0x400100};

		c = seal_view(t, who, addrs, 4);
		CHECK(c && c->hdr.version == FR_CHUNK_VERSION, "a chunk with creators: version %u",
		      c ? c->hdr.version : 0);
		CHECK(c && fr_chunk_find_thread(c, y) && fr_chunk_find_thread(c, y)->creator == x &&
			      fr_chunk_find_thread(c, x)->creator == pid &&
			      fr_chunk_find_thread(c, child)->creator == y &&
			      fr_chunk_find_thread(c, old)->creator == 0,
		      "creators in the chunk");
		fr_chunk_free(c);
	}
	/* A tid reused by another thread starts without a creator. */
	fr_tracker_exit(t, pid, y, 20);
	fr_tracker_sealed(t);
	fr_tracker_sealed(t);
	fr_tracker_comm(t, pid, y, "again", 0);
	memset(&ti, 0, sizeof(ti));
	CHECK(ops->thread(ops->arg, y, &ti) == 0 && ti.creator == 0,
	      "a reused tid kept the old creator");
	fr_tracker_free(t);
}

int main(void)
{
	test_fork_copies_parent();
	test_fork_from_named_thread();
	test_fork_after_exec();
	test_exec();
	test_nonexec_ignored();
	test_overlap_replaces();
	test_thread_rename();
	test_rename_times();
	test_creators();
	test_exit_kept_two_seals();
	test_pid_reuse();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
