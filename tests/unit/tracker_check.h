/* Shared by the process tracker's unit tests: look-ups through the
 * callbacks the chunk builder uses (proc_of, thread_of, map_of and the
 * EXPECT_* checks over them), and a chunk sealed through the tracker with
 * what its tables say of a pid, a thread or an address.
 *
 * Synthetic pids lie above PID_MAX_LIMIT (4194304), so no real process can
 * answer for them when the tracker falls back to /proc. Each test
 * executable includes this header once. */
#ifndef FR_TESTS_TRACKER_CHECK_H
#define FR_TESTS_TRACKER_CHECK_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/store/chunk.h"
#include "recorder/tracking/tracker.h"

#include "tests/unit/check.h"

/* In a sanitizer build, undefined behaviour in the code under test fails
 * the test rather than printing a line nobody reads. Unused otherwise. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

#define PID_BASE 4200000u
#define RX (PROT_READ | PROT_EXEC)

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

static inline struct pinfo proc_of(struct fr_tracker *t, uint32_t pid)
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

static inline struct tinfo thread_of(struct fr_tracker *t, uint32_t tid)
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

static inline struct minfo map_of(struct fr_tracker *t, uint32_t pid, uint64_t addr)
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

static inline void expect_proc(struct fr_tracker *t, int line, uint32_t pid, const char *comm,
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
		fprintf(stderr,
			"%s:%d: FAIL: proc(%u) = comm \"%s\" exe \"%s\", want \"%s\" \"%s\"\n",
			__FILE__, line, pid, p.comm, p.exe, comm, exe ? exe : "(any)");
		failures++;
	}
}

static inline void expect_thread(struct fr_tracker *t, int line, uint32_t tid, uint32_t pid,
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
static inline void expect_map(struct fr_tracker *t, int line, uint32_t pid, uint64_t addr,
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
static inline struct fr_chunk *seal_view(struct fr_tracker *t, const uint32_t (*who)[2],
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
			.pid = who[i][0],
			.tid = who[i][1],
			.event = FR_EVENT_CPU,
			.weight = 10101010,
			.rate_hz = 99,
			.nr_frames = 1,
			.ips = &addrs[i],
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

static inline const char *chunk_comm(const struct fr_chunk *c, uint32_t pid)
{
	const struct fr_chunk_proc *p = fr_chunk_find_proc(c, pid);
	return p ? c->strings[p->comm] : NULL;
}

static inline const char *chunk_thread(const struct fr_chunk *c, uint32_t tid)
{
	const struct fr_chunk_thread *th = fr_chunk_find_thread(c, tid);
	return th ? c->strings[th->name] : NULL;
}

static inline const char *chunk_map_path(const struct fr_chunk *c, uint32_t pid, uint64_t addr)
{
	const struct fr_chunk_map *m = fr_chunk_find_map(c, pid, addr);
	return m ? c->strings[m->path] : NULL;
}

static inline int streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static const uint8_t bid_parent[20] = {0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa,
				       0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3, 0xb4};
static const uint8_t bid_libc[20] = {0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca,
				     0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3, 0xd4};

/* A process that exec'ed /usr/bin/parent with libc mapped. */
static inline void make_parent(struct fr_tracker *t, uint32_t pid, const char *comm)
{
	fr_tracker_comm(t, pid, pid, comm, 1);
	fr_tracker_mmap(t, pid, 0x400000, 0x2000, 0, RX, "/usr/bin/parent", bid_parent, 20);
	fr_tracker_mmap(t, pid, 0x7f0000000000, 0x10000, 0x1000, RX, "/usr/lib/libc.so.6", bid_libc,
			20);
}

#endif
