/* Process tracker: synthetic side-band records (COMM, MMAP2, FORK, EXIT)
 * checked through the callbacks the chunk builder uses, and through the
 * tables of chunks actually sealed with them; cgroups read from a fake
 * /proc and inherited at fork; parents from FORK records and /proc, and
 * as chunks store them; then a real /proc scan that must find this test
 * itself, its parent, its threads, its executable mapping and its cgroup.
 *
 * Synthetic pids lie above PID_MAX_LIMIT (4194304), so no real process can
 * answer for them when the tracker falls back to /proc. */
#include "recorder/tracker.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "core/chunk.h"
#include "core/symbols.h"
#include "recorder/buildids.h"

#include "tests/unit/check.h"
#include "tests/unit/files.h"
#include "tests/unit/fuse_hang.h"

/* In a sanitizer build, undefined behaviour in the code under test fails
 * the test rather than printing a line nobody reads. Unused otherwise. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

#define PID_BASE 4200000u
#define RX (PROT_READ | PROT_EXEC)

static const uint8_t bid_parent[20] = {0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa,
				       0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3, 0xb4};
static const uint8_t bid_libc[20] = {0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca,
				     0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3, 0xd4};

/* ---- lookups through the builder's callbacks ---- */

struct pinfo {
	int ret;
	char comm[64];
	char exe[256];
	char cgroup[512];
	int64_t start_ns;
	uint32_t uid;
	uint32_t ppid;
};

static struct pinfo proc_of(struct fr_tracker *t, uint32_t pid)
{
	const struct fr_chunk_meta_ops *ops = fr_tracker_ops(t);
	struct fr_proc_info pi;
	struct pinfo r;

	memset(&r, 0, sizeof(r));
	memset(&pi, 0, sizeof(pi));
	r.ret = ops->proc(ops->arg, pid, &pi);
	if (r.ret == 0) {
		snprintf(r.comm, sizeof(r.comm), "%s", pi.comm ? pi.comm : "(null)");
		snprintf(r.exe, sizeof(r.exe), "%s", pi.exe ? pi.exe : "(null)");
		snprintf(r.cgroup, sizeof(r.cgroup), "%s", pi.cgroup ? pi.cgroup : "");
		r.start_ns = pi.start_ns;
		r.uid = pi.uid;
		r.ppid = pi.ppid;
		CHECK(pi.pid == pid, "proc(%u) answered for pid %u", pid, pi.pid);
	}
	return r;
}

struct tinfo {
	int ret;
	uint32_t pid;
	char name[64];
};

static struct tinfo thread_of(struct fr_tracker *t, uint32_t tid)
{
	const struct fr_chunk_meta_ops *ops = fr_tracker_ops(t);
	struct fr_thread_info ti;
	struct tinfo r;

	memset(&r, 0, sizeof(r));
	memset(&ti, 0, sizeof(ti));
	r.ret = ops->thread(ops->arg, tid, &ti);
	if (r.ret == 0) {
		r.pid = ti.pid;
		snprintf(r.name, sizeof(r.name), "%s", ti.name ? ti.name : "(null)");
		CHECK(ti.tid == tid, "thread(%u) answered for tid %u", tid, ti.tid);
	}
	return r;
}

struct minfo {
	int ret;
	uint64_t start, end, pgoff;
	char path[4096];
	uint8_t bid_len;
	uint8_t bid[FR_BUILD_ID_MAX];
};

static struct minfo map_of(struct fr_tracker *t, uint32_t pid, uint64_t addr)
{
	const struct fr_chunk_meta_ops *ops = fr_tracker_ops(t);
	struct fr_map_info mi;
	struct minfo r;

	memset(&r, 0, sizeof(r));
	memset(&mi, 0, sizeof(mi));
	r.ret = ops->mapping(ops->arg, pid, addr, &mi);
	if (r.ret == 0) {
		r.start = mi.start;
		r.end = mi.end;
		r.pgoff = mi.pgoff;
		snprintf(r.path, sizeof(r.path), "%s", mi.path ? mi.path : "(null)");
		r.bid_len = mi.build_id_len;
		memcpy(r.bid, mi.build_id, sizeof(r.bid));
		CHECK(mi.start <= addr && addr < mi.end,
		      "mapping(%u, %#" PRIx64 ") = [%#" PRIx64 ", %#" PRIx64 ") misses the address",
		      pid, addr, mi.start, mi.end);
	}
	return r;
}

static void expect_proc(struct fr_tracker *t, int line, uint32_t pid, const char *comm,
			const char *exe)
{
	struct pinfo p = proc_of(t, pid);

	if (p.ret != 0) {
		fprintf(stderr, "%s:%d: FAIL: proc(%u): %d, want comm %s\n", __FILE__, line, pid,
			p.ret, comm);
		failures++;
		return;
	}
	if (strcmp(p.comm, comm) != 0 || (exe && strcmp(p.exe, exe) != 0)) {
		fprintf(stderr, "%s:%d: FAIL: proc(%u) = comm \"%s\" exe \"%s\", want \"%s\" \"%s\"\n",
			__FILE__, line, pid, p.comm, p.exe, comm, exe ? exe : "(any)");
		failures++;
	}
}

static void expect_thread(struct fr_tracker *t, int line, uint32_t tid, uint32_t pid,
			  const char *name)
{
	struct tinfo th = thread_of(t, tid);

	if (th.ret != 0 || th.pid != pid || strcmp(th.name, name) != 0) {
		fprintf(stderr, "%s:%d: FAIL: thread(%u) = %d pid %u \"%s\", want pid %u \"%s\"\n",
			__FILE__, line, tid, th.ret, th.pid, th.name, pid, name);
		failures++;
	}
}

/* path NULL: no mapping expected. */
static void expect_map(struct fr_tracker *t, int line, uint32_t pid, uint64_t addr,
		       const char *path, uint64_t start, uint64_t end, uint64_t pgoff)
{
	struct minfo m = map_of(t, pid, addr);

	if (!path) {
		if (m.ret != -ENOENT) {
			fprintf(stderr,
				"%s:%d: FAIL: mapping(%u, %#" PRIx64 ") = %d %s, want -ENOENT\n",
				__FILE__, line, pid, addr, m.ret, m.ret == 0 ? m.path : "");
			failures++;
		}
		return;
	}
	if (m.ret != 0 || strcmp(m.path, path) != 0 || m.start != start || m.end != end ||
	    m.pgoff != pgoff) {
		fprintf(stderr,
			"%s:%d: FAIL: mapping(%u, %#" PRIx64 ") = %d %s [%#" PRIx64 ", %#" PRIx64
			") +%#" PRIx64 ", want %s [%#" PRIx64 ", %#" PRIx64 ") +%#" PRIx64 "\n",
			__FILE__, line, pid, addr, m.ret, m.ret == 0 ? m.path : "", m.start, m.end,
			m.pgoff, path, start, end, pgoff);
		failures++;
	}
}

#define EXPECT_PROC(t, pid, comm, exe) expect_proc(t, __LINE__, pid, comm, exe)
#define EXPECT_THREAD(t, tid, pid, name) expect_thread(t, __LINE__, tid, pid, name)
#define EXPECT_MAP(t, pid, addr, path, start, end, pgoff) \
	expect_map(t, __LINE__, pid, addr, path, start, end, pgoff)
#define EXPECT_NO_MAP(t, pid, addr) expect_map(t, __LINE__, pid, addr, NULL, 0, 0, 0)

/* ---- the chunk builder's view: seal a chunk through the tracker ---- */

/* Seals one chunk holding a sample per (pid, tid, address) triple and
 * returns it decoded, or NULL after reporting why. */
static struct fr_chunk *seal_view(struct fr_tracker *t, const uint32_t (*who)[2],
				  const uint64_t *addrs, size_t n)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(64, 1 << 20);
	struct fr_chunk *c = NULL;
	void *buf = NULL;
	size_t len = 0;
	int ret;

	CHECK(b, "fr_chunk_builder_new");
	if (!b)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		struct fr_sample s = {
			.time_ns = 1700000000000000000 + (int64_t)i * 1000000,
			.pid = who[i][0], .tid = who[i][1], .event = FR_EVENT_CPU,
			.weight = 10101010, .rate_hz = 99, .nr_frames = 1, .ips = &addrs[i],
		};
		ret = fr_chunk_builder_add(b, &s);
		CHECK(ret == 0, "fr_chunk_builder_add: %d", ret);
	}
	ret = fr_chunk_builder_seal(b, fr_tracker_ops(t), 0, &buf, &len);
	CHECK(ret == 0, "fr_chunk_builder_seal: %d", ret);
	if (ret == 0) {
		ret = fr_chunk_decode(buf, len, &c);
		CHECK(ret == 0, "fr_chunk_decode of a sealed chunk: %d", ret);
	}
	free(buf);
	fr_chunk_builder_free(b);
	return ret == 0 ? c : NULL;
}

static const char *chunk_comm(const struct fr_chunk *c, uint32_t pid)
{
	const struct fr_chunk_proc *p = fr_chunk_find_proc(c, pid);
	return p ? c->strings[p->comm] : NULL;
}

static const char *chunk_thread(const struct fr_chunk *c, uint32_t tid)
{
	const struct fr_chunk_thread *th = fr_chunk_find_thread(c, tid);
	return th ? c->strings[th->name] : NULL;
}

static const char *chunk_map_path(const struct fr_chunk *c, uint32_t pid, uint64_t addr)
{
	const struct fr_chunk_map *m = fr_chunk_find_map(c, pid, addr);
	return m ? c->strings[m->path] : NULL;
}

static int streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* ---- tests ---- */

/* A process that exec'ed /usr/bin/parent with libc mapped. */
static void make_parent(struct fr_tracker *t, uint32_t pid, const char *comm)
{
	fr_tracker_comm(t, pid, pid, comm, 1);
	fr_tracker_mmap(t, pid, 0x400000, 0x2000, 0, RX, "/usr/bin/parent", bid_parent, 20);
	fr_tracker_mmap(t, pid, 0x7f0000000000, 0x10000, 0x1000, RX, "/usr/lib/libc.so.6",
			bid_libc, 20);
}

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
	EXPECT_MAP(t, child, 0x7f000000fff0, "/usr/lib/libc.so.6", 0x7f0000000000,
		   0x7f0000010000, 0x1000);
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
			CHECK(streq(chunk_map_path(c, parent, 0x7f0000000100), "/usr/lib/libc.so.6"),
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
	EXPECT_MAP(t, pid, 0x7f000011ffff, "/usr/lib/ld-linux.so.2", 0x7f0000100000,
		   0x7f0000120000, 0);
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
		const uint32_t who[5][2] = {
			{pid, pid}, {pid, pid}, {pid, pid}, {pid, pid}, {pid, pid}};
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
			CHECK(fr_chunk_find_thread(c, tid) && fr_chunk_find_thread(c, tid)->pid == pid,
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
			CHECK(streq(chunk_comm(c, pid), "short"), "seal %d after exit: comm %s", seal,
			      chunk_comm(c, pid));
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
		 "%u (%s) S 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 12345 1000000 100\n",
		 pid, comm);
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

		CHECK(n >= 200 && n < sizeof(longpath) - 1 &&
		      strncmp(p.cgroup, longpath, n) == 0,
		      "a %zu-byte cgroup path kept as %zu bytes \"%.20s...\"", strlen(longpath),
		      n, p.cgroup);
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
			CHECK(c->nlabelsets == 3, "%u label sets, want 3 (empty, {ppid sub}, "
			      "{pid sub, ppid shell})", c->nlabelsets);
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

/* The "0::" line of /proc/self/cgroup, or "" when there is none. */
static void own_cgroup(char *out, size_t len)
{
	char line[4096];
	FILE *f = fopen("/proc/self/cgroup", "re");

	snprintf(out, len, "%s", "");
	CHECK(f, "open /proc/self/cgroup: %s", strerror(errno));
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, len, "%s", line + 3);
		}
	fclose(f);
}

/* ---- the real /proc ---- */

static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t named_cond = PTHREAD_COND_INITIALIZER;
static int named_state; /* 1: named, 2: may exit */
static pid_t named_tid;

static void *named_thread(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "frtest-scan");
	pthread_mutex_lock(&named_lock);
	named_tid = (pid_t)syscall(SYS_gettid);
	named_state = 1;
	pthread_cond_broadcast(&named_cond);
	while (named_state != 2)
		pthread_cond_wait(&named_cond, &named_lock);
	pthread_mutex_unlock(&named_lock);
	return NULL;
}

/* A function of this binary whose address the scan must map. */
static __attribute__((noinline)) int scan_marker(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

static void test_scan_self(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint32_t self = (uint32_t)getpid();
	uint64_t fn = (uint64_t)(uintptr_t)&scan_marker;
	char comm[64] = "", exe[4096];
	uint8_t bid[FR_BUILD_ID_MAX];
	pthread_t th;
	ssize_t n;
	int bid_len, ret;
	FILE *f;
	struct pinfo p;
	struct minfo m;
	struct timespec now;

	CHECK(scan_marker(1) == 2, "scan_marker");
	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	f = fopen("/proc/self/comm", "re");
	CHECK(f && fgets(comm, sizeof(comm), f), "read /proc/self/comm");
	if (f)
		fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
	exe[n > 0 ? n : 0] = '\0';
	bid_len = fr_elf_build_id("/proc/self/exe", bid, sizeof(bid));

	ret = pthread_create(&th, NULL, named_thread, NULL);
	CHECK(ret == 0, "pthread_create: %s", strerror(ret));
	if (ret != 0) {
		fr_tracker_free(t);
		return;
	}
	pthread_mutex_lock(&named_lock);
	while (named_state != 1)
		pthread_cond_wait(&named_cond, &named_lock);
	pthread_mutex_unlock(&named_lock);

	ret = fr_tracker_scan(t, "/proc");
	CHECK(ret >= 1, "fr_tracker_scan(/proc) = %d", ret);
	CHECK(fr_tracker_nprocs(t) >= 1 && fr_tracker_nthreads(t) >= 2,
	      "after the scan: %u processes, %u threads", fr_tracker_nprocs(t),
	      fr_tracker_nthreads(t));

	EXPECT_PROC(t, self, comm, exe);
	p = proc_of(t, self);
	CHECK(p.uid == (uint32_t)getuid(), "uid %u, want %u", p.uid, (unsigned)getuid());
	CHECK(p.ppid == (uint32_t)getppid(), "ppid %u, want %u", p.ppid, (unsigned)getppid());
	{
		char cg[4096];

		own_cgroup(cg, sizeof(cg));
		CHECK(strcmp(p.cgroup, cg) == 0, "cgroup \"%s\", /proc/self/cgroup says \"%s\"",
		      p.cgroup, cg);
		printf("own cgroup: \"%s\"\n", p.cgroup);
	}
	clock_gettime(CLOCK_REALTIME, &now);
	{
		int64_t now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
		CHECK(p.start_ns > now_ns - 600 * 1000000000LL && p.start_ns < now_ns + 5000000000LL,
		      "start_ns %" PRId64 " is not near now (%" PRId64 ")", p.start_ns, now_ns);
	}
	EXPECT_THREAD(t, self, self, comm);
	EXPECT_THREAD(t, (uint32_t)named_tid, self, "frtest-scan");

	/* A mapping learned from /proc has no build id until the reader
	 * thread has read it: the first look-up asks for it, and never
	 * waits for the file. */
	m = map_of(t, self, fn);
	CHECK(m.ret == 0 && m.bid_len == 0, "first look-up: %d, build id length %u", m.ret,
	      m.bid_len);
	CHECK(fr_tracker_settle(t, 10000) == 0, "the build id was not read in 10 s");
	m = map_of(t, self, fn);
	CHECK(m.ret == 0, "no mapping for scan_marker at %#" PRIx64 ": %d", fn, m.ret);
	if (m.ret == 0) {
		CHECK(strcmp(m.path, exe) == 0, "scan_marker mapped from %s, want %s", m.path, exe);
		if (bid_len > 0)
			CHECK(m.bid_len == bid_len && memcmp(m.bid, bid, (size_t)bid_len) == 0,
			      "build id of the mapping (len %u) differs from the file's (len %d)",
			      m.bid_len, bid_len);
		else
			printf("note: the test binary has no build id (%d); not compared\n",
			       bid_len);
	}

	/* Data is not code. */
	{
		static int data_marker;
		EXPECT_NO_MAP(t, self, (uint64_t)(uintptr_t)&data_marker);
	}

	/* The builder's view: a sample in scan_marker is named and mapped. */
	{
		const uint32_t who[2][2] = {{self, self}, {self, (uint32_t)named_tid}};
		const uint64_t addrs[2] = {fn, fn + 1};
		struct fr_chunk *c = seal_view(t, who, addrs, 2);

		if (c) {
			const struct fr_chunk_map *cm = fr_chunk_find_map(c, self, fn);

			CHECK(streq(chunk_comm(c, self), comm), "chunk comm %s, want %s",
			      chunk_comm(c, self), comm);
			CHECK(streq(chunk_thread(c, (uint32_t)named_tid), "frtest-scan"),
			      "chunk thread %s", chunk_thread(c, (uint32_t)named_tid));
			CHECK(cm && streq(c->strings[cm->path], exe), "chunk mapping %s",
			      cm ? c->strings[cm->path] : "(none)");
			if (cm && bid_len > 0)
				CHECK(cm->build_id_len == bid_len &&
				      memcmp(cm->build_id, bid, (size_t)bid_len) == 0,
				      "chunk mapping build id differs from the file's");
			fr_chunk_free(c);
		}
	}

	CHECK(fr_tracker_scan(t, "/nonexistent/flightrec-proc") < 0,
	      "scanning a missing directory succeeded");

	pthread_mutex_lock(&named_lock);
	named_state = 2;
	pthread_cond_broadcast(&named_cond);
	pthread_mutex_unlock(&named_lock);
	pthread_join(th, NULL);
	fr_tracker_free(t);
}

/* The executable mapping of `path` in this process. */
static int find_exec_map(const char *path, uint64_t *start, uint64_t *end, uint64_t *pgoff)
{
	char line[4608];
	FILE *f = fopen("/proc/self/maps", "re");
	int ret = -1;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long a, b, off;
		char perms[8];
		int at = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &a, &b, perms, &off, &at) >= 4 &&
		    perms[2] == 'x' && at && strncmp(line + at, path, strlen(path)) == 0) {
			*start = a;
			*end = b;
			*pgoff = off;
			ret = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	return ret;
}

/* Regression: a user dlopen()s a library, deletes it and puts a FIFO at
 * its path. The ingest thread opened the path for the build id at the
 * next seal and waited for a writer for as long as the user liked:
 * recording stopped. The look-up must return at once, and the build id
 * still come from the mapped (deleted) file itself. */
static void test_fifo_swap(void)
{
	char dir[] = "/tmp/fr-test-fifo-XXXXXX", lib[128], want[FR_BUILD_ID_MAX];
	struct fr_tracker *t = fr_tracker_new();
	uint32_t self = (uint32_t)getpid();
	uint64_t start = 0, end = 0, pgoff = 0;
	void *handle = NULL;
	Dl_info info;
	struct minfo m;
	int want_len;

	CHECK(t && mkdtemp(dir), "set-up: %s", strerror(errno));
	if (!t)
		return;
	snprintf(lib, sizeof(lib), "%s/libvictim.so", dir);
	if (!dladdr((void *)zlibVersion, &info) || !info.dli_fname ||
	    test_copy_file(info.dli_fname, lib, 0755) < 0) {
		CHECK(0, "copy the zlib library to %s: %s", lib, strerror(errno));
		goto out;
	}
	want_len = fr_elf_build_id(lib, (uint8_t *)want, sizeof(want));
	handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	CHECK(handle && find_exec_map(lib, &start, &end, &pgoff) == 0, "dlopen %s: %s", lib,
	      handle ? "no executable mapping" : dlerror());
	if (!handle)
		goto out;
	CHECK(unlink(lib) == 0 && mkfifo(lib, 0644) == 0, "swap in a FIFO: %s", strerror(errno));

	/* As a kernel without build ids in MMAP2 records reports it. */
	fr_tracker_comm(t, self, self, "victim", 1);
	fr_tracker_mmap(t, self, start, end - start, pgoff, PROT_READ | PROT_EXEC, lib, NULL, 0);
	m = map_of(t, self, start + 16);
	CHECK(m.ret == 0 && m.bid_len == 0, "look-up: %d, build id length %u", m.ret, m.bid_len);
	CHECK(fr_tracker_settle(t, 10000) == 0, "the build id read did not return in 10 s");
	m = map_of(t, self, start + 16);
	CHECK(m.ret == 0, "look-up after the read: %d", m.ret);
	if (want_len > 0)
		CHECK(m.bid_len == want_len && memcmp(m.bid, want, (size_t)want_len) == 0,
		      "build id of the mapped file: length %u, want %d", m.bid_len, want_len);

	/* The process is gone, so is its mapping: the path is a FIFO and must
	 * be refused without waiting. */
	fr_tracker_mmap(t, self + 1000000, 0x10000, 0x1000, 0, PROT_READ | PROT_EXEC, lib, NULL,
			0);
	{
		uint8_t id[FR_BUILD_ID_MAX];
		int n = fr_buildid_read_mapped(self + 1000000, 0x10000, 0x11000, lib, id,
					       sizeof(id));

		CHECK(n == -ENOEXEC, "FIFO path of a gone process: %d, want -ENOEXEC", n);
	}
out:
	if (handle)
		dlclose(handle);
	unlink(lib);
	rmdir(dir);
	fr_tracker_free(t);
}

/* A mapped file on a FUSE mount whose owner never answers: look-ups never
 * wait, status can see the reader busy, and freeing the tracker (the
 * daemon's shutdown) does not wait for the read. */
static void test_fuse_reader_stuck(void)
{
	struct fr_tracker *t;
	struct fuse_hang h;
	uint32_t pending = 0;
	int64_t busy = 0;
	char path[128];
	struct minfo m;
	int ret = fuse_hang_start(&h);

	if (ret < 0) {
		printf("note: no FUSE mount here (%s); the stuck reader is not exercised\n",
		       strerror(-ret));
		return;
	}
	t = fr_tracker_new();
	CHECK(t, "fr_tracker_new");
	if (!t)
		goto out;
	snprintf(path, sizeof(path), "%s/libhang.so", h.dir);
	fr_tracker_comm(t, 4100001, 4100001, "hang", 1);
	fr_tracker_mmap(t, 4100001, 0x10000, 0x1000, 0, PROT_READ | PROT_EXEC, path, NULL, 0);
	m = map_of(t, 4100001, 0x10010);
	CHECK(m.ret == 0 && m.bid_len == 0, "look-up: %d, build id length %u", m.ret, m.bid_len);
	CHECK(fr_tracker_settle(t, 300) == -ETIMEDOUT, "the read of a hung file returned");
	m = map_of(t, 4100001, 0x10010);
	CHECK(m.ret == 0 && m.bid_len == 0, "second look-up: %d", m.ret);
	fr_tracker_file_state(t, &pending, &busy);
	CHECK(pending == 1 && busy > 0, "reader state: %u pending, busy since %lld", pending,
	      (long long)busy);
	/* Returns after at most about a second, leaving the reader behind. */
	fr_tracker_free(t);
out:
	fuse_hang_stop(&h);
}

/* A process that runs as someone new after exec (runuser, sudo: root
 * forks, the user's program runs) is recorded with the uid it has then,
 * not the forking parent's, or users would not see their own processes
 * and could see others'. Changing uids needs root. */
static void test_exec_uid(void)
{
	struct fr_tracker *t;
	int pfd[2];
	char c;
	pid_t child;
	uint32_t parent = (uint32_t)getpid();

	if (geteuid() != 0) {
		printf("skip test_exec_uid: changing a process's uid needs root\n");
		return;
	}
	t = fr_tracker_new();
	CHECK(t && pipe(pfd) == 0, "tracker and pipe");
	if (!t)
		return;
	CHECK(fr_tracker_scan_pid(t, "/proc", parent) == 0, "scan of the test itself");
	child = fork();
	if (child == 0) {
		close(pfd[0]);
		if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(1);
		if (write(pfd[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	CHECK(child > 0 && read(pfd[0], &c, 1) == 1, "a child that became uid 65534");
	close(pfd[0]);
	if (child > 0) {
		fr_tracker_fork(t, (uint32_t)child, parent, (uint32_t)child, parent, 1);
		CHECK(proc_of(t, (uint32_t)child).uid == geteuid(), "a child starts with its parent's uid");
		fr_tracker_comm(t, (uint32_t)child, (uint32_t)child, "userprog", 1);
		CHECK(proc_of(t, (uint32_t)child).uid == 65534,
		      "after exec the process is uid %u, want 65534", proc_of(t, (uint32_t)child).uid);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	fr_tracker_free(t);
}

/* Regression: one reader served every build id, so a single mapped file
 * on a FUSE mount that never answers held back the build ids of every
 * later mapping for the life of the daemon. The stuck read is given up
 * (answered -ETIMEDOUT) and a new reader serves the rest. */
static void test_buildids_stuck_reader(void)
{
	struct fr_buildids *b;
	struct fr_buildid_result r;
	uint64_t start = 0, end = 0, pgoff = 0;
	char hang[128], exe[4096];
	int timed_out = 0, read_ok = 0, ret;
	struct fuse_hang h;
	ssize_t n;

	ret = fuse_hang_start(&h);
	if (ret < 0) {
		printf("note: no FUSE mount here (%s); the stuck reader is not exercised\n",
		       strerror(-ret));
		return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	CHECK(n > 0 && find_exec_map(exe, &start, &end, &pgoff) == 0, "own executable mapping");
	b = fr_buildids_new();
	CHECK(b, "fr_buildids_new");
	if (!b)
		goto out;
	fr_buildids_set_stuck(b, 200000000);
	snprintf(hang, sizeof(hang), "%s/libhang.so", h.dir);
	CHECK(fr_buildids_request(b, 4100002, 0x10000, 0x11000, hang) == 0, "request (hang)");
	CHECK(fr_buildids_request(b, (uint32_t)getpid(), start, end, exe) == 0, "request (self)");
	CHECK(fr_buildids_wait(b, 20000) == 0, "the request behind a stuck read was not answered");
	while (fr_buildids_take(b, &r) == 1) {
		if (strcmp(r.path, hang) == 0)
			timed_out += r.err == -ETIMEDOUT;
		else
			read_ok += r.err == 0 && r.len > 0;
		free(r.path);
	}
	CHECK(timed_out == 1 && read_ok == 1, "answers: %d timed out, %d read", timed_out, read_ok);
	fr_buildids_free(b);
out:
	fuse_hang_stop(&h);
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
	test_exit_kept_two_seals();
	test_pid_reuse();
	test_cgroup();
	test_ppid();
	test_ppid_scan();
	test_scan_self();
	test_fifo_swap();
	test_fuse_reader_stuck();
	test_buildids_stuck_reader();
	test_exec_uid();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
