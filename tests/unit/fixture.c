/* The fixture of the profile tests: the world samples come from and the
 * writing and querying of rings; see fixture.h. */
#include "tests/unit/fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/compress.h"
#include "core/symbols/elf_image.h"
#include "core/store/ring.h"
#include "core/util/time.h"

/* In a sanitizer build, undefined behaviour in the code under test fails
 * the test rather than printing a line nobody reads. Unused otherwise. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

char tmpdir[64];
char kallsyms_path[300];

/* ---- code of this binary that samples point into ---- */

static volatile int sink_var;

static __attribute__((noinline, used)) int frtest_leaf(int x)
{
	for (int i = 0; i < x; i++)
		sink_var += i * 3;
	return sink_var;
}

static __attribute__((noinline, used)) int frtest_middle(int x)
{
	for (int i = 0; i < x; i++)
		sink_var ^= i + 7;
	return frtest_leaf(x + 1) + sink_var;
}

static __attribute__((noinline, used)) int frtest_root(int x)
{
	for (int i = 0; i < x; i++)
		sink_var -= i;
	return frtest_middle(x * 2) - sink_var;
}

static __attribute__((noinline, used)) int frtest_other(int x)
{
	for (int i = 0; i < x; i++)
		sink_var |= i << 2;
	return sink_var + 11;
}

static int (*volatile const frtest_fns[])(int) = {frtest_leaf, frtest_middle, frtest_root,
						  frtest_other};

static const char fake_kallsyms[] = "ffffffff81000000 T _text\n"
				    "ffffffff81000000 T _stext\n"
				    "ffffffff81000100 T frk_entry_syscall\n"
				    "ffffffff81000200 t frk_do_sys_read\n"
				    "ffffffff81000300 T frk_schedule\n"
				    "ffffffff81000500 T _etext\n";

/* ---- the stacks samples are taken from ---- */
struct stack stacks[NSTACKS];

static uint64_t code(int (*fn)(int), uint64_t off)
{
	return (uint64_t)(uintptr_t)fn + off;
}

static void init_stacks(void)
{
	/* A leaf is the sampled pc itself (here the function's first byte);
	 * callers are return addresses, which the profile moves back by one
	 * byte, so they point a few bytes in. */
	stacks[ST_USER] = (struct stack){
		.nr_frames = 3,
		.ips = {code(frtest_fns[0], 0), code(frtest_fns[1], 6), code(frtest_fns[2], 6)},
		.names = {"frtest_leaf", "frtest_middle", "frtest_root"},
	};
	stacks[ST_KERNEL] = (struct stack){
		.nr_kernel = 3,
		.nr_frames = 6,
		.ips = {0xffffffff81000310, 0xffffffff81000220, 0xffffffff81000130,
			code(frtest_fns[0], 6), code(frtest_fns[1], 6), code(frtest_fns[2], 6)},
		.names = {"frk_schedule", "frk_do_sys_read", "frk_entry_syscall", "frtest_leaf",
			  "frtest_middle", "frtest_root"},
	};
	stacks[ST_OTHER] = (struct stack){
		.nr_frames = 2,
		.ips = {code(frtest_fns[3], 0), code(frtest_fns[2], 6)},
		.names = {"frtest_other", "frtest_root"},
	};
}

/* ---- process metadata: every process runs this binary ---- */

char exe_path[4096];
uint8_t exe_bid[FR_BUILD_ID_MAX];
int exe_bid_len;
static struct {
	uint64_t start, end, pgoff;
} exe_maps[32];
static int nexe_maps;

static int load_self(void)
{
	char line[4608];
	ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
	FILE *f;

	if (n <= 0)
		return -1;
	exe_path[n] = '\0';
	exe_bid_len = fr_elf_build_id(exe_path, exe_bid, sizeof(exe_bid));
	if (exe_bid_len < 0)
		exe_bid_len = 0;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && nexe_maps < 32) {
		unsigned long long start, end, off;
		char perms[8];
		int at = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &off, &at) <
			    4 ||
		    perms[2] != 'x' || !at)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line + at, exe_path) != 0)
			continue;
		exe_maps[nexe_maps].start = start;
		exe_maps[nexe_maps].end = end;
		exe_maps[nexe_maps].pgoff = off;
		nexe_maps++;
	}
	fclose(f);
	return nexe_maps ? 0 : -1;
}

static const char *comm_of(uint32_t pid)
{
	switch (pid) {
	case PID_APP: return "frtest-app";
	case PID_DB: return "frtest-db";
	case PID_WEB: return "frtest-web";
	case PID_SUB: return "frtest-sub";
	case FAM(100): return "frtest-100";
	case FAM(200): return "frtest-200";
	case FAM(250): return "frtest-sh";
	case FAM(300): return "frtest-300";
	case FAM(350): return "frtest-350";
	case FAM(400): return "frtest-400";
	case FAM(500): return "frtest-500";
	case FAM(600): return "frtest-600";
	case FAM(700): return "frtest-700";
	default: return NULL;
	}
}

/* 100 forks 200, which forks 300 and a shell 250 that forks 350; 400 is
 * unrelated; 500 and 600 are each other's parent and 700 its own (what
 * reused pids could make of the labels). The others' parents are
 * unknown. */
static uint32_t ppid_of(uint32_t pid)
{
	switch (pid) {
	case FAM(100):
	case FAM(400): return 1;
	case FAM(200): return FAM(100);
	case FAM(250):
	case FAM(300): return FAM(200);
	case FAM(350): return FAM(250);
	case FAM(500): return FAM(600);
	case FAM(600): return FAM(500);
	case FAM(700): return FAM(700);
	default: return 0;
	}
}

const char *web_cgroup;

static const char *cgroup_of(uint32_t pid)
{
	switch (pid) {
	case PID_APP: return CG_NGINX;
	case PID_SUB: return CG_SUB;
	case PID_DB: return CG_DB;
	case PID_WEB: return web_cgroup;
	case FAM(100): return CG_NGINX;
	default: return NULL;
	}
}

static int meta_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	(void)arg;
	if (!comm_of(pid))
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->pid = pid;
	/* db runs as root, everything else as one user (uid filter). */
	out->uid = pid == PID_DB ? 0 : 1000;
	out->comm = comm_of(pid);
	out->exe = exe_path;
	out->start_ns = T0 - 3600 * SEC;
	out->cgroup = cgroup_of(pid);
	out->ppid = ppid_of(pid);
	return 0;
}

int64_t web_exec_ns;

static int meta_thread(void *arg, uint32_t tid, struct fr_thread_info *out)
{
	static char name[32];
	static struct fr_name_change exec_web[1];
	uint32_t pid = PID_BASE + (tid - PID_BASE) % 10000, k = (tid - PID_BASE) / 10000;

	(void)arg;
	if (tid <= PID_BASE || !comm_of(pid))
		return -ENOENT;
	if (k)
		snprintf(name, sizeof(name), "worker-%u", k);
	else
		snprintf(name, sizeof(name), "%s", comm_of(pid));
	out->tid = tid;
	out->pid = pid;
	out->name = name;
	if (tid == PID_WEB && web_exec_ns) {
		/* A shell that exec'd web (names over time). */
		exec_web[0] = (struct fr_name_change){web_exec_ns, "frtest-web"};
		out->before = "frtest-sh";
		out->nchanges = 1;
		out->changes = exec_web;
	}
	return 0;
}

static int meta_mapping(void *arg, uint32_t pid, uint64_t addr, struct fr_map_info *out)
{
	(void)arg;
	(void)pid;
	if (addr >= ANON_START && addr < ANON_END) {
		memset(out, 0, sizeof(*out));
		out->start = ANON_START;
		out->end = ANON_END;
		out->pgoff = ANON_START;
		out->path = "//anon";
		return 0;
	}
	for (int i = 0; i < nexe_maps; i++) {
		if (addr < exe_maps[i].start || addr >= exe_maps[i].end)
			continue;
		memset(out, 0, sizeof(*out));
		out->start = exe_maps[i].start;
		out->end = exe_maps[i].end;
		out->pgoff = exe_maps[i].pgoff;
		out->path = exe_path;
		out->build_id_len = (uint8_t)exe_bid_len;
		memcpy(out->build_id, exe_bid, (size_t)exe_bid_len);
		return 0;
	}
	return -ENOENT;
}

const struct fr_chunk_meta_ops meta_ops = {
	.proc = meta_proc,
	.thread = meta_thread,
	.mapping = meta_mapping,
};

/* ---- writing chunks into a ring ---- */

struct fr_ring *test_ring_create(const char *name)
{
	struct fr_ring *r = NULL;
	char path[400], err[512];
	int ret;

	snprintf(path, sizeof(path), "%s/%s.ring", tmpdir, name);
	ret = fr_ring_open(&r, path, RING_SIZE, RING_SEG, FR_RING_CREATE, err, sizeof(err));
	CHECK(ret == 0, "fr_ring_open %s: %d %s", path, ret, err);
	if (ret == 0)
		fr_ring_set_sync_interval(r, -1);
	return ret == 0 ? r : NULL;
}

/* Closes and deletes a ring (8 MiB each: not left behind one per test). */
void test_ring_done(struct fr_ring *r)
{
	char *path = r ? strdup(fr_ring_path(r)) : NULL;

	fr_ring_close(r);
	if (path)
		unlink(path);
	free(path);
}

/* A ring where db's main thread has the kernel stack and its thread 1 a
 * kernel stack whose leaf kallsyms does not name (db runs as uid 0). */
struct fr_ring *test_kernel_ring(const char *name)
{
	struct fr_ring *r = test_ring_create(name);
	struct stack saved = stacks[ST_OTHER];
	struct writer w;
	int64_t t = T0 + SEC;

	if (!r)
		return NULL;
	stacks[ST_OTHER] = stacks[ST_KERNEL];
	stacks[ST_OTHER].ips[0] = KADDR_UNNAMED;
	w_init(&w, r);
	for (uint32_t i = 0; i < 3; i++) {
		w_add(&w, t += 1000, PID_DB, PID_DB, i, 99, ST_KERNEL);
		w_add(&w, t += 1000, PID_APP, PID_APP, i, 99, ST_USER);
	}
	w_add(&w, t += 1000, PID_DB, TID(PID_DB, 1), 0, 99, ST_OTHER);
	w_fini(&w);
	stacks[ST_OTHER] = saved;
	return r;
}

void w_init(struct writer *w, struct fr_ring *ring)
{
	w->ring = ring;
	w->chunks = 0;
	w->b = fr_chunk_builder_new(8192, 1 << 20);
	CHECK(w->b, "fr_chunk_builder_new");
}

void w_seal(struct writer *w)
{
	void *buf = NULL;
	size_t len = 0;
	int ret = fr_chunk_builder_seal(w->b, &meta_ops, 0, &buf, &len);

	if (ret == -ENODATA)
		return;
	CHECK(ret == 0, "fr_chunk_builder_seal: %d", ret);
	if (ret == 0) {
		ret = fr_ring_append(w->ring, buf, len);
		CHECK(ret == 0, "fr_ring_append: %d", ret);
		w->chunks++;
	}
	free(buf);
}

void w_fini(struct writer *w)
{
	w_seal(w);
	fr_chunk_builder_free(w->b);
	w->b = NULL;
}

/* Adds a sample of any event: `weight` as the recorder stores it, `hz`
 * the rate it was collected at (0 for offcpu). */
void w_add_ev(struct writer *w, int64_t t, uint32_t pid, uint32_t tid, uint32_t cpu, uint32_t event,
	      uint32_t hz, uint64_t weight, int st)
{
	struct fr_sample s = {
		.time_ns = t,
		.pid = pid,
		.tid = tid,
		.cpu = cpu,
		.event = event,
		.weight = weight,
		.rate_hz = hz,
		.nr_kernel = stacks[st].nr_kernel,
		.nr_frames = stacks[st].nr_frames,
		.ips = stacks[st].ips,
	};
	int ret = fr_chunk_builder_add(w->b, &s);

	if (ret == -ENOSPC) {
		w_seal(w);
		ret = fr_chunk_builder_add(w->b, &s);
	}
	CHECK(ret == 0, "fr_chunk_builder_add: %d", ret);
}

void w_add(struct writer *w, int64_t t, uint32_t pid, uint32_t tid, uint32_t cpu, uint32_t hz,
	   int st)
{
	struct fr_sample s = {
		.time_ns = t,
		.pid = pid,
		.tid = tid,
		.cpu = cpu,
		.event = FR_EVENT_CPU,
		.weight = FR_NS_PER_S / hz,
		.rate_hz = hz,
		.nr_kernel = stacks[st].nr_kernel,
		.nr_frames = stacks[st].nr_frames,
		.ips = stacks[st].ips,
	};
	int ret = fr_chunk_builder_add(w->b, &s);

	if (ret == -ENOSPC) {
		w_seal(w);
		ret = fr_chunk_builder_add(w->b, &s);
	}
	CHECK(ret == 0, "fr_chunk_builder_add: %d", ret);
}

/* ---- running a query ---- */

int sink_mem(void *arg, const void *buf, size_t len)
{
	struct out *o = arg;

	if (o->len + len > o->cap) {
		size_t cap = (o->len + len) * 2;
		unsigned char *p = realloc(o->buf, cap);

		if (!p)
			return -ENOMEM;
		o->buf = p;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, buf, len);
	o->len += len;
	return 0;
}

void req_init(struct fr_profile_request *q, int64_t t0, int64_t t1, uint32_t hz)
{
	memset(q, 0, sizeof(*q));
	q->t0 = t0;
	q->t1 = t1;
	q->hz = hz;
	q->version = "test";
	q->kallsyms = kallsyms_path;
}

/* Runs the query; the profile is left in o->buf and in the file o->path. */
int run(struct fr_ring *r, const struct fr_profile_request *q, struct fr_profile_result *res,
	struct out *o, const char *name)
{
	char err[512] = "";
	int ret, fd;

	memset(o, 0, sizeof(*o));
	memset(res, 0xa5, sizeof(*res));
	ret = fr_profile_write(r, q, sink_mem, o, res, err, sizeof(err));
	CHECK(ret == 0, "%s: fr_profile_write: %d %s", name, ret, err);
	snprintf(o->path, sizeof(o->path), "%s/%s.pb.gz", tmpdir, name);
	fd = open(o->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && write(fd, o->buf, o->len) == (ssize_t)o->len, "write %s", o->path);
	if (fd >= 0)
		close(fd);
	return ret;
}

void out_free(struct out *o)
{
	free(o->buf);
	o->buf = NULL;
}
void req_events(struct fr_profile_request *q, uint32_t n, const uint32_t *events)
{
	q->nevents = n;
	memcpy(q->events, events, n * sizeof(*events));
}

/* ---- a test program ---- */

int fixture_init(const char *name)
{
	int fd, ok;

	snprintf(tmpdir, 64, "/tmp/fr-test-%s-XXXXXX", name);
	if (load_self() != 0) {
		fprintf(stderr, "cannot find this binary's executable mappings\n");
		return -1;
	}
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	snprintf(kallsyms_path, 300, "%s/kallsyms", tmpdir);
	fd = open(kallsyms_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ok = fd >= 0 &&
	     write(fd, fake_kallsyms, strlen(fake_kallsyms)) == (ssize_t)strlen(fake_kallsyms);
	if (fd >= 0)
		close(fd);
	if (!ok) {
		fprintf(stderr, "cannot write %s\n", kallsyms_path);
		return -1;
	}
	init_stacks();
	return 0;
}

int fixture_fini(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
