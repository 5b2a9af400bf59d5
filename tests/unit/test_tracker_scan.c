/* Process tracker against the real system: a /proc scan that must find
 * this test itself, its parent, its threads, its executable mapping and
 * its cgroup; build ids read from mapped files that were swapped for a
 * FIFO or hang on FUSE; the uid after an exec that changed it. */
#include "recorder/tracking/tracker.h"

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

#include "core/store/chunk.h"
#include "core/symbols/symbols.h"
#include "recorder/tracking/buildids.h"

#include "core/util/time.h"
#include "tests/unit/check.h"
#include "tests/unit/files.h"
#include "tests/unit/fuse_hang.h"
#include "tests/unit/tracker_check.h"

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

/* What this process says of itself, for the scan to be compared with. */
struct self {
	uint32_t pid;
	char comm[64];
	char exe[4096];
	uint8_t bid[FR_BUILD_ID_MAX];
	int bid_len;
};

static void read_self(struct self *s)
{
	FILE *f;
	ssize_t n;

	s->pid = (uint32_t)getpid();
	s->comm[0] = '\0';
	f = fopen("/proc/self/comm", "re");
	CHECK(f && fgets(s->comm, sizeof(s->comm), f), "read /proc/self/comm");
	if (f)
		fclose(f);
	s->comm[strcspn(s->comm, "\n")] = '\0';
	n = readlink("/proc/self/exe", s->exe, sizeof(s->exe) - 1);
	CHECK(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
	s->exe[n > 0 ? n : 0] = '\0';
	s->bid_len = fr_elf_build_id("/proc/self/exe", s->bid, sizeof(s->bid));
}

/* The process the scan found: names, uid, parent, cgroup, start time and
 * threads. */
static void check_self_proc(struct fr_tracker *t, const struct self *s)
{
	struct pinfo p;
	struct timespec now;

	EXPECT_PROC(t, s->pid, s->comm, s->exe);
	p = proc_of(t, s->pid);
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
		int64_t now_ns = fr_ns_from_timespec(&now);
		CHECK(p.start_ns > now_ns - 600 * FR_NS_PER_S && p.start_ns < now_ns + 5000000000LL,
		      "start_ns %" PRId64 " is not near now (%" PRId64 ")", p.start_ns, now_ns);
	}
	EXPECT_THREAD(t, s->pid, s->pid, s->comm);
	EXPECT_THREAD(t, (uint32_t)named_tid, s->pid, "frtest-scan");
}

/* The mapping of scan_marker, at `fn`, and its build id. */
static void check_self_mapping(struct fr_tracker *t, const struct self *s, uint64_t fn)
{
	struct minfo m;

	/* A mapping learned from /proc has no build id until the reader
	 * thread has read it: the first look-up asks for it, and never
	 * waits for the file. */
	m = map_of(t, s->pid, fn);
	CHECK(m.ret == 0 && m.bid_len == 0, "first look-up: %d, build id length %u", m.ret,
	      m.bid_len);
	CHECK(fr_tracker_settle(t, 10000) == 0, "the build id was not read in 10 s");
	m = map_of(t, s->pid, fn);
	CHECK(m.ret == 0, "no mapping for scan_marker at %#" PRIx64 ": %d", fn, m.ret);
	if (m.ret == 0) {
		CHECK(strcmp(m.path, s->exe) == 0, "scan_marker mapped from %s, want %s", m.path,
		      s->exe);
		if (s->bid_len > 0)
			CHECK(m.bid_len == s->bid_len &&
				      memcmp(m.bid, s->bid, (size_t)s->bid_len) == 0,
			      "build id of the mapping (len %u) differs from the file's (len %d)",
			      m.bid_len, s->bid_len);
		else
			printf("note: the test binary has no build id (%d); not compared\n",
			       s->bid_len);
	}

	/* Data is not code. */
	{
		static int data_marker;
		EXPECT_NO_MAP(t, s->pid, (uint64_t)(uintptr_t)&data_marker);
	}
}

/* The builder's view: a sample in scan_marker is named and mapped. */
static void check_self_chunk(struct fr_tracker *t, const struct self *s, uint64_t fn)
{
	const uint32_t who[2][2] = {{s->pid, s->pid}, {s->pid, (uint32_t)named_tid}};
	const uint64_t addrs[2] = {fn, fn + 1};
	struct fr_chunk *c = seal_view(t, who, addrs, 2);
	const struct fr_chunk_map *cm;

	if (!c)
		return;
	cm = fr_chunk_find_map(c, s->pid, fn);
	CHECK(streq(chunk_comm(c, s->pid), s->comm), "chunk comm %s, want %s",
	      chunk_comm(c, s->pid), s->comm);
	CHECK(streq(chunk_thread(c, (uint32_t)named_tid), "frtest-scan"), "chunk thread %s",
	      chunk_thread(c, (uint32_t)named_tid));
	CHECK(cm && streq(c->strings[cm->path], s->exe), "chunk mapping %s",
	      cm ? c->strings[cm->path] : "(none)");
	if (cm && s->bid_len > 0)
		CHECK(cm->build_id_len == s->bid_len &&
			      memcmp(cm->build_id, s->bid, (size_t)s->bid_len) == 0,
		      "chunk mapping build id differs from the file's");
	fr_chunk_free(c);
}

static void test_scan_self(void)
{
	struct fr_tracker *t = fr_tracker_new();
	uint64_t fn = (uint64_t)(uintptr_t)&scan_marker;
	struct self s;
	pthread_t th;
	int ret;

	CHECK(scan_marker(1) == 2, "scan_marker");
	CHECK(t, "fr_tracker_new");
	if (!t)
		return;
	read_self(&s);

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
	check_self_proc(t, &s);
	check_self_mapping(t, &s, fn);
	check_self_chunk(t, &s, fn);

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
	fr_tracker_mmap(t, self + 1000000, 0x10000, 0x1000, 0, PROT_READ | PROT_EXEC, lib, NULL, 0);
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
		CHECK(proc_of(t, (uint32_t)child).uid == geteuid(),
		      "a child starts with its parent's uid");
		fr_tracker_comm(t, (uint32_t)child, (uint32_t)child, "userprog", 1);
		CHECK(proc_of(t, (uint32_t)child).uid == 65534,
		      "after exec the process is uid %u, want 65534",
		      proc_of(t, (uint32_t)child).uid);
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
