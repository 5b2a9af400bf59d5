/* Window queries end to end: samples built here go through the real chunk
 * builder into a real ring (a small one in a temporary directory), and
 * fr_profile_write() turns a window of it into a pprof profile that `go
 * tool pprof` (an independent reader) must read and show what went in.
 *
 * User frames point into this very binary, so they must come out named
 * after the functions below; kernel frames are named from a fake kallsyms
 * file. The synthetic pids lie above PID_MAX_LIMIT, so no /proc/PID/root
 * of a real process is consulted while symbolizing. */
#include "core/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/chunk.h"
#include "core/compress.h"
#include "core/ring.h"
#include "core/sample.h"
#include "core/symbols.h"

#include "tests/unit/check.h"
#include "tests/unit/gopprof.h"

/* In a sanitizer build, undefined behaviour in the code under test fails
 * the test rather than printing a line nobody reads. Unused otherwise. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

#define SEC ((int64_t)1000000000)
#define T0 (1700000000 * SEC) /* start of most windows */
#define RING_SIZE (8u << 20)
#define RING_SEG (256u << 10)
#define PERIOD_99 ((int64_t)10101010) /* 1e9 / 99 */

#define PID_BASE 4200000u
#define PID_APP (PID_BASE + 1)
#define PID_DB (PID_BASE + 2)
#define PID_WEB (PID_BASE + 3)
#define PID_SUB (PID_BASE + 4)
/* A family of processes for --children (see test_children). */
#define FAM(n) (PID_BASE + (uint32_t)(n))
/* Thread k of a process; thread 0 is the main thread. */
#define TID(pid, k) ((pid) + 10000u * (uint32_t)(k))

static char tmpdir[] = "/tmp/fr-test-profile-XXXXXX";
static const char *go;
static char kallsyms_path[300];

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

static const char fake_kallsyms[] =
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 T _stext\n"
	"ffffffff81000100 T frk_entry_syscall\n"
	"ffffffff81000200 t frk_do_sys_read\n"
	"ffffffff81000300 T frk_schedule\n"
	"ffffffff81000500 T _etext\n";

/* ---- the stacks samples are taken from ---- */

enum { ST_USER, ST_KERNEL, ST_OTHER, NSTACKS };

struct stack {
	uint16_t nr_kernel, nr_frames;
	uint64_t ips[8];
	const char *names[8]; /* as pprof must show them, leaf first */
};

static struct stack stacks[NSTACKS];

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
		.nr_kernel = 3, .nr_frames = 6,
		.ips = {0xffffffff81000310, 0xffffffff81000220, 0xffffffff81000130,
			code(frtest_fns[0], 6), code(frtest_fns[1], 6), code(frtest_fns[2], 6)},
		.names = {"[k] frk_schedule", "[k] frk_do_sys_read", "[k] frk_entry_syscall",
			  "frtest_leaf", "frtest_middle", "frtest_root"},
	};
	stacks[ST_OTHER] = (struct stack){
		.nr_frames = 2,
		.ips = {code(frtest_fns[3], 0), code(frtest_fns[2], 6)},
		.names = {"frtest_other", "frtest_root"},
	};
}

/* ---- process metadata: every process runs this binary ---- */

static char exe_path[4096];
static uint8_t exe_bid[FR_BUILD_ID_MAX];
static int exe_bid_len;
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
	case PID_APP:
		return "frtest-app";
	case PID_DB:
		return "frtest-db";
	case PID_WEB:
		return "frtest-web";
	case PID_SUB:
		return "frtest-sub";
	case FAM(100):
		return "frtest-100";
	case FAM(200):
		return "frtest-200";
	case FAM(250):
		return "frtest-sh";
	case FAM(300):
		return "frtest-300";
	case FAM(350):
		return "frtest-350";
	case FAM(400):
		return "frtest-400";
	case FAM(500):
		return "frtest-500";
	case FAM(600):
		return "frtest-600";
	case FAM(700):
		return "frtest-700";
	default:
		return NULL;
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
	case FAM(400):
		return 1;
	case FAM(200):
		return FAM(100);
	case FAM(250):
	case FAM(300):
		return FAM(200);
	case FAM(350):
		return FAM(250);
	case FAM(500):
		return FAM(600);
	case FAM(600):
		return FAM(500);
	case FAM(700):
		return FAM(700);
	default:
		return 0;
	}
}

#define CG_NGINX "/system.slice/nginx.service"
#define CG_SUB "/system.slice/nginx.service/sub"
#define CG_DB "/system.slice/db.service"

/* The cgroup of web (unknown unless a test sets it). */
static const char *web_cgroup;

static const char *cgroup_of(uint32_t pid)
{
	switch (pid) {
	case PID_APP:
		return CG_NGINX;
	case PID_SUB:
		return CG_SUB;
	case PID_DB:
		return CG_DB;
	case PID_WEB:
		return web_cgroup;
	case FAM(100):
		return CG_NGINX;
	default:
		return NULL;
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

static int meta_thread(void *arg, uint32_t tid, struct fr_thread_info *out)
{
	static char name[32];
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
	return 0;
}

static int meta_mapping(void *arg, uint32_t pid, uint64_t addr, struct fr_map_info *out)
{
	(void)arg;
	(void)pid;
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

static const struct fr_chunk_meta_ops meta_ops = {
	.proc = meta_proc, .thread = meta_thread, .mapping = meta_mapping,
};

/* ---- writing chunks into a ring ---- */

struct writer {
	struct fr_ring *ring;
	struct fr_chunk_builder *b;
	unsigned chunks;
};

static struct fr_ring *ring_create(const char *name)
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
static void ring_done(struct fr_ring *r)
{
	char *path = r ? strdup(fr_ring_path(r)) : NULL;

	fr_ring_close(r);
	if (path)
		unlink(path);
	free(path);
}

static void w_init(struct writer *w, struct fr_ring *ring)
{
	w->ring = ring;
	w->chunks = 0;
	w->b = fr_chunk_builder_new(8192, 1 << 20);
	CHECK(w->b, "fr_chunk_builder_new");
}

static void w_seal(struct writer *w)
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

static void w_fini(struct writer *w)
{
	w_seal(w);
	fr_chunk_builder_free(w->b);
	w->b = NULL;
}

/* Adds a sample of any event: `weight` as the recorder stores it, `hz`
 * the rate it was collected at (0 for offcpu). */
static void w_add_ev(struct writer *w, int64_t t, uint32_t pid, uint32_t tid, uint32_t cpu,
		     uint32_t event, uint32_t hz, uint64_t weight, int st)
{
	struct fr_sample s = {
		.time_ns = t, .pid = pid, .tid = tid, .cpu = cpu, .event = event,
		.weight = weight, .rate_hz = hz,
		.nr_kernel = stacks[st].nr_kernel, .nr_frames = stacks[st].nr_frames,
		.ips = stacks[st].ips,
	};
	int ret = fr_chunk_builder_add(w->b, &s);

	if (ret == -ENOSPC) {
		w_seal(w);
		ret = fr_chunk_builder_add(w->b, &s);
	}
	CHECK(ret == 0, "fr_chunk_builder_add: %d", ret);
}

static void w_add(struct writer *w, int64_t t, uint32_t pid, uint32_t tid, uint32_t cpu,
		  uint32_t hz, int st)
{
	struct fr_sample s = {
		.time_ns = t, .pid = pid, .tid = tid, .cpu = cpu, .event = FR_EVENT_CPU,
		.weight = 1000000000u / hz, .rate_hz = hz,
		.nr_kernel = stacks[st].nr_kernel, .nr_frames = stacks[st].nr_frames,
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

struct out {
	unsigned char *buf;
	size_t len, cap;
	char path[400];
};

static int sink_mem(void *arg, const void *buf, size_t len)
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

static void req_init(struct fr_profile_request *q, int64_t t0, int64_t t1, uint32_t hz)
{
	memset(q, 0, sizeof(*q));
	q->t0 = t0;
	q->t1 = t1;
	q->hz = hz;
	q->version = "test";
	q->kallsyms = kallsyms_path;
}

/* Runs the query; the profile is left in o->buf and in the file o->path. */
static int run(struct fr_ring *r, const struct fr_profile_request *q, struct fr_profile_result *res,
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

static void out_free(struct out *o)
{
	free(o->buf);
	o->buf = NULL;
}

/* ---- reading the profile back ---- */

/* Runs `go tool pprof -symbolize=none -raw FILE`; malloc'd stdout or NULL. */
static char *pprof_raw(const char *file)
{
	return fr_test_go_pprof(go, "-symbolize=none -raw", file, tmpdir);
}

#define MAX_LOCS 1024
#define MAX_SAMPLES 2048

#define MAX_VALUES (1 + FR_PROFILE_MAX_EVENTS)

struct rsample {
	int64_t v[MAX_VALUES];
	int nv;
	int nlocs;
	uint32_t loc[FR_MAX_FRAMES];
	char labels[512];
};

struct raw {
	char *text;
	char types[256]; /* the sample types line, "samples/count cpu/nanoseconds[dflt]" */
	int64_t period;
	int nsamples;
	struct rsample *s;
	char *loc_name[MAX_LOCS]; /* by location id */
};

static char *next_line(char **p)
{
	char *line = *p, *nl;

	if (!line || !*line)
		return NULL;
	nl = strchr(line, '\n');
	if (nl) {
		*nl = '\0';
		*p = nl + 1;
	} else {
		*p = line + strlen(line);
	}
	return line;
}

/* "     3: 0x4011d6 M=1 frtest_leaf /path/to/file:0 s=0" -> "frtest_leaf". */
static char *location_name(char *rest)
{
	char *s, *colon, *sp;

	if (strncmp(rest, "M=", 2) == 0) {
		rest = strchr(rest, ' ');
		if (!rest)
			return NULL;
		rest++;
	}
	s = strstr(rest, " s=");
	if (!s)
		return NULL;
	*s = '\0';
	colon = strrchr(rest, ':');
	if (!colon)
		return NULL;
	*colon = '\0';
	sp = strrchr(rest, ' ');
	if (sp)
		*sp = '\0';
	return rest;
}

/* The values of a sample line "   1   10101010: 1 2 3" into v (at most
 * `max`); returns their count and the rest after the colon in *rest, or
 * -1 when the line is not a sample line (a label line). */
static int sample_values(char *line, int64_t *v, int max, char **rest)
{
	char *q = line, *end;
	int n = 0;

	for (;;) {
		long long x;

		while (*q == ' ')
			q++;
		if (*q == ':' && n) {
			*rest = q + 1;
			return n;
		}
		x = strtoll(q, &end, 10);
		if (end == q || n == max)
			return -1;
		v[n++] = x;
		q = end;
	}
}

/* Parses the samples and the location names out of pprof -raw output. */
static int raw_parse(struct raw *r, const char *file)
{
	char *copy, *p, *line;
	enum { HEAD, SAMPLES, LOCATIONS, REST } state = HEAD;

	memset(r, 0, sizeof(*r));
	r->text = pprof_raw(file);
	if (!r->text)
		return -1;
	r->s = calloc(MAX_SAMPLES, sizeof(*r->s));
	copy = strdup(r->text);
	if (!r->s || !copy) {
		free(copy);
		return -1;
	}
	p = copy;
	while ((line = next_line(&p))) {
		long long a;
		unsigned id;
		int at = 0;

		if (strncmp(line, "Period: ", 8) == 0)
			r->period = strtoll(line + 8, NULL, 10);
		if (strncmp(line, "Samples:", 8) == 0) {
			char *types = next_line(&p);

			state = SAMPLES;
			snprintf(r->types, sizeof(r->types), "%s", types ? types : "");
			continue;
		}
		if (strncmp(line, "Locations", 9) == 0) {
			state = LOCATIONS;
			continue;
		}
		if (strncmp(line, "Mappings", 8) == 0) {
			state = REST;
			continue;
		}
		if (state == SAMPLES) {
			int64_t v[MAX_VALUES];
			char *q, *end;
			int nv = sample_values(line, v, MAX_VALUES, &q);

			if (nv > 0) {
				struct rsample *s;

				if (r->nsamples == MAX_SAMPLES)
					continue;
				s = &r->s[r->nsamples++];
				memcpy(s->v, v, (size_t)nv * sizeof(*v));
				s->nv = nv;
				for (;;) {
					unsigned long loc = strtoul(q, &end, 10);
					if (end == q || s->nlocs == FR_MAX_FRAMES)
						break;
					s->loc[s->nlocs++] = (uint32_t)loc;
					q = end;
				}
			} else if (r->nsamples) {
				struct rsample *s = &r->s[r->nsamples - 1];
				size_t n = strlen(s->labels);

				while (*line == ' ')
					line++;
				snprintf(s->labels + n, sizeof(s->labels) - n, "%s ", line);
			}
		} else if (state == LOCATIONS) {
			if (sscanf(line, " %u: 0x%llx %n", &id, &a, &at) == 2 && at && id < MAX_LOCS)
				r->loc_name[id] = location_name(line + at);
		}
	}
	/* The names point into `copy`: keep it with the struct. */
	r->loc_name[0] = copy;
	return 0;
}

static void raw_free(struct raw *r)
{
	free(r->text);
	free(r->s);
	free(r->loc_name[0]);
	memset(r, 0, sizeof(*r));
}

static int sample_has_stack(const struct raw *r, const struct rsample *s, const struct stack *st)
{
	if (s->nlocs != st->nr_frames)
		return 0;
	for (int i = 0; i < s->nlocs; i++) {
		const char *name = s->loc[i] < MAX_LOCS && s->loc[i] ? r->loc_name[s->loc[i]] : NULL;
		if (!name || strcmp(name, st->names[i]) != 0)
			return 0;
	}
	return 1;
}

/* The sample with stack `st` whose labels contain every string of `want`
 * (NULL-terminated); NULL when there is none. */
static const struct rsample *find_sample(const struct raw *r, int st, const char *const *want)
{
	for (int i = 0; i < r->nsamples; i++) {
		const struct rsample *s = &r->s[i];
		int ok = st < 0 || sample_has_stack(r, s, &stacks[st]);

		for (int j = 0; ok && want[j]; j++)
			ok = strstr(s->labels, want[j]) != NULL;
		if (ok)
			return s;
	}
	return NULL;
}

static int64_t raw_total(const struct raw *r)
{
	int64_t n = 0;

	for (int i = 0; i < r->nsamples; i++)
		n += r->s[i].v[0];
	return n;
}

/* Every sample's second value is its count times the period. */
static void check_values(const struct raw *r, int64_t period, const char *what)
{
	for (int i = 0; i < r->nsamples; i++)
		CHECK(r->s[i].v[1] == r->s[i].v[0] * period,
		      "%s: sample %d values [%" PRId64 ", %" PRId64 "], want [n, n*%" PRId64 "]", what,
		      i, r->s[i].v[0], r->s[i].v[1], period);
}

static void dump_on_failure(const struct raw *r, int before)
{
	if (failures > before && r->text)
		fprintf(stderr, "---- pprof -raw ----\n%s--------\n", r->text);
}

/* time_nanos and duration_nanos straight from the protobuf. */
static int profile_times(const struct out *o, int64_t *time_ns, int64_t *dur_ns)
{
	void *raw = NULL;
	size_t len = 0;
	const unsigned char *p, *end;

	*time_ns = *dur_ns = 0;
	if (fr_gunzip(o->buf, o->len, &raw, &len) != 0)
		return -1;
	p = raw;
	end = p + len;
	while (p < end) {
		uint64_t key = 0, v = 0;
		int shift;

		for (shift = 0; p < end && shift < 64; shift += 7) {
			key |= (uint64_t)(*p & 0x7f) << shift;
			if (!(*p++ & 0x80))
				break;
		}
		switch (key & 7) {
		case 0:
			for (shift = 0; p < end && shift < 64; shift += 7) {
				v |= (uint64_t)(*p & 0x7f) << shift;
				if (!(*p++ & 0x80))
					break;
			}
			if (key >> 3 == 9)
				*time_ns = (int64_t)v;
			else if (key >> 3 == 10)
				*dur_ns = (int64_t)v;
			break;
		case 1:
			p += 8;
			break;
		case 2:
			for (shift = 0; p < end && shift < 64; shift += 7) {
				v |= (uint64_t)(*p & 0x7f) << shift;
				if (!(*p++ & 0x80))
					break;
			}
			if (v > (uint64_t)(end - p)) {
				free(raw);
				return -1;
			}
			p += v;
			break;
		case 5:
			p += 4;
			break;
		default:
			free(raw);
			return -1;
		}
	}
	free(raw);
	return p == end ? 0 : -1;
}

static const char *label(char *buf, size_t len, const char *key, uint64_t v)
{
	snprintf(buf, len, "%s:[%" PRIu64 "]", key, v);
	return buf;
}

/* ---- tests ---- */

/* [t0, t1): a sample exactly at t0 is in, one at t1 is out; chunks that
 * do not overlap the window are not read at all. */
static void test_window(void)
{
	const int64_t t0 = T0, t1 = T0 + 10 * SEC;
	struct fr_ring *r = ring_create("window");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int64_t tn, dn;
	int before = failures;
	char l1[64];
	/* Each sample is told apart by its thread (TID(PID_APP, k)). */
	static const struct {
		int chunk;
		int64_t t;
		int in;
	} samples[] = {
		{0, T0 - 30 * SEC, 0}, {0, T0 - 1, 0},                  /* ends just before t0 */
		{1, T0 - 2 * SEC, 0}, {1, T0 - 1, 0}, {1, T0, 1},       /* ends at t0 */
		{2, T0 + 1, 1}, {2, T0 + 5 * SEC, 1}, {2, T0 + 10 * SEC - 1, 1},
		{2, T0 + 10 * SEC, 0},                                  /* ends at t1 */
		{3, T0 + 10 * SEC, 0}, {3, T0 + 11 * SEC, 0},           /* starts at t1 */
		{4, T0 + 60 * SEC, 0},                                  /* after */
	};
	const size_t n = sizeof(samples) / sizeof(samples[0]);

	if (!r)
		return;
	w_init(&w, r);
	for (size_t i = 0; i < n; i++) {
		if (i && samples[i].chunk != samples[i - 1].chunk)
			w_seal(&w);
		w_add(&w, samples[i].t, PID_APP, TID(PID_APP, i + 1), 0, 99, ST_USER);
	}
	w_fini(&w);
	CHECK(w.chunks == 5, "wrote %u chunks, want 5", w.chunks);

	req_init(&q, t0, t1, 0);
	if (run(r, &q, &res, &o, "window") == 0) {
		CHECK(res.chunks == 2, "chunks read %" PRIu64 ", want 2 (the two overlapping)",
		      res.chunks);
		CHECK(res.chunks_skipped == 0, "chunks skipped %" PRIu64, res.chunks_skipped);
		CHECK(res.samples_seen == 4, "samples seen %" PRIu64 ", want 4", res.samples_seen);
		CHECK(res.samples_kept == 4, "samples kept %" PRIu64 ", want 4", res.samples_kept);
		CHECK(res.stacks == 4, "stacks %" PRIu64 ", want 4", res.stacks);
		CHECK(res.hz == 99, "hz %u, want 99", res.hz);
		CHECK(res.warning[0] == '\0', "unexpected warning: %s", res.warning);
		CHECK(profile_times(&o, &tn, &dn) == 0, "cannot decode the profile");
		CHECK(tn == t0 && dn == t1 - t0,
		      "time %" PRId64 " duration %" PRId64 ", want the window", tn, dn);
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(raw.nsamples == 4, "pprof shows %d samples, want 4", raw.nsamples);
			for (size_t i = 0; i < n; i++) {
				const char *want[] = {
					label(l1, sizeof(l1), "tid", TID(PID_APP, i + 1)), NULL};
				const struct rsample *s = find_sample(&raw, ST_USER, want);

				CHECK(!s == !samples[i].in, "sample at t0%+" PRId64 " ns: %s, want %s",
				      samples[i].t - T0, s ? "in" : "out",
				      samples[i].in ? "in" : "out");
				if (s)
					CHECK(s->v[0] == 1, "sample at t0%+" PRId64 ": count %" PRId64,
					      samples[i].t - T0, s->v[0]);
			}
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the window profile");
		}
	}
	out_free(&o);

	/* A window inside one chunk, between two of its samples: the chunk is
	 * read but no sample is in. */
	req_init(&q, T0 + 2 * SEC, T0 + 3 * SEC, 0);
	if (run(r, &q, &res, &o, "window-gap") == 0) {
		CHECK(res.chunks == 1 && res.samples_seen == 0 && res.stacks == 0,
		      "gap: chunks %" PRIu64 " seen %" PRIu64 " stacks %" PRIu64, res.chunks,
		      res.samples_seen, res.stacks);
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(raw.nsamples == 0, "gap: pprof shows %d samples", raw.nsamples);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the empty-window profile");
		}
	}
	out_free(&o);
	ring_done(r);
}

static void test_pid_filter(void)
{
	struct fr_ring *r = ring_create("pids");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	char l1[64];
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	for (int i = 0; i < 60; i++) {
		uint32_t pid = i < 10 ? PID_APP : i < 30 ? PID_DB : PID_WEB;
		w_add(&w, T0 + i * (SEC / 100), pid, pid, (uint32_t)i % 4, 99, ST_USER);
		if (i == 25)
			w_seal(&w);
	}
	w_fini(&w);

	req_init(&q, T0, T0 + 10 * SEC, 0);
	q.npids = 2;
	q.pids[0] = PID_WEB;
	q.pids[1] = PID_APP;
	if (run(r, &q, &res, &o, "pids") == 0) {
		CHECK(res.samples_seen == 40 && res.samples_kept == 40 && res.stacks == 2,
		      "pids app+web: seen %" PRIu64 " kept %" PRIu64 " stacks %" PRIu64 ", want 40 40 2",
		      res.samples_seen, res.samples_kept, res.stacks);
		if (raw_parse(&raw, o.path) == 0) {
			const char *app[] = {label(l1, sizeof(l1), "pid", PID_APP), NULL};
			const struct rsample *s = find_sample(&raw, ST_USER, app);
			char l2[64], l3[64];
			const char *web[] = {label(l2, sizeof(l2), "pid", PID_WEB), NULL};
			const char *db[] = {label(l3, sizeof(l3), "pid", PID_DB), NULL};

			CHECK(s && s->v[0] == 10, "pid app: %" PRId64 " samples, want 10",
			      s ? s->v[0] : -1);
			s = find_sample(&raw, ST_USER, web);
			CHECK(s && s->v[0] == 30, "pid web: %" PRId64 " samples, want 30",
			      s ? s->v[0] : -1);
			CHECK(!find_sample(&raw, -1, db), "pid db is in a profile of app and web");
			CHECK(raw.nsamples == 2, "pprof shows %d samples, want 2", raw.nsamples);
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the pid-filtered profile");
		}
	}
	out_free(&o);

	q.npids = 1;
	q.pids[0] = PID_DB;
	if (run(r, &q, &res, &o, "pids-db") == 0)
		CHECK(res.samples_seen == 20 && res.samples_kept == 20 && res.stacks == 1,
		      "pid db: seen %" PRIu64 " kept %" PRIu64 " stacks %" PRIu64, res.samples_seen,
		      res.samples_kept, res.stacks);
	out_free(&o);

	q.pids[0] = PID_BASE + 99;
	if (run(r, &q, &res, &o, "pids-none") == 0) {
		CHECK(res.samples_seen == 0 && res.stacks == 0,
		      "absent pid: seen %" PRIu64 " stacks %" PRIu64, res.samples_seen, res.stacks);
		if (raw_parse(&raw, o.path) == 0)
			raw_free(&raw);
		else
			CHECK(0, "go tool pprof cannot read the profile of an absent pid");
	}
	out_free(&o);
	ring_done(r);
}

static void test_aggregation(void)
{
	struct fr_ring *r = ring_create("aggregate");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int before = failures;
	char l1[64], l2[64];
	int64_t t = T0 + SEC;

	if (!r)
		return;
	w_init(&w, r);
	/* Chunk 1. */
	w_add(&w, t += 1000, PID_APP, PID_APP, 0, 99, ST_USER);
	w_add(&w, t += 1000, PID_DB, PID_DB, 1, 99, ST_KERNEL);
	w_add(&w, t += 1000, PID_APP, PID_APP, 2, 99, ST_USER);
	w_add(&w, t += 1000, PID_APP, TID(PID_APP, 1), 0, 99, ST_USER);
	w_add(&w, t += 1000, PID_WEB, PID_WEB, 3, 99, ST_USER);
	w_seal(&w);
	/* Chunk 2: the same stacks interned in another order. */
	w_add(&w, t += 1000, PID_APP, PID_APP, 1, 99, ST_OTHER);
	w_add(&w, t += 1000, PID_DB, PID_DB, 0, 99, ST_KERNEL);
	w_add(&w, t += 1000, PID_APP, PID_APP, 3, 99, ST_USER);
	w_add(&w, t += 1000, PID_DB, PID_DB, 2, 99, ST_KERNEL);
	w_add(&w, t += 1000, PID_APP, TID(PID_APP, 1), 1, 99, ST_USER);
	w_add(&w, t += 1000, PID_DB, PID_DB, 3, 99, ST_KERNEL);
	for (int i = 0; i < 4; i++)
		w_add(&w, t += 1000, PID_WEB, PID_WEB, (uint32_t)i, 99, ST_USER);
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 99);
	/* What the daemon says when it could not flush before reading. */
	q.note = "incomplete: frtest note";
	if (run(r, &q, &res, &o, "aggregate") == 0) {
		CHECK(res.samples_seen == 15 && res.samples_kept == 15,
		      "seen %" PRIu64 " kept %" PRIu64 ", want 15 15", res.samples_seen,
		      res.samples_kept);
		CHECK(res.stacks == 5, "stacks %" PRIu64 ", want 5", res.stacks);
		CHECK(res.chunks == 2 && res.hz == 99, "chunks %" PRIu64 " hz %u", res.chunks, res.hz);
		if (raw_parse(&raw, o.path) == 0) {
			static const struct {
				int st;
				uint32_t pid, tid;
				const char *comm, *thread;
				int64_t count;
			} want[] = {
				{ST_USER, PID_APP, PID_APP, "frtest-app", "frtest-app", 3},
				{ST_USER, PID_APP, TID(PID_APP, 1), "frtest-app", "worker-1", 2},
				{ST_KERNEL, PID_DB, PID_DB, "frtest-db", "frtest-db", 4},
				{ST_OTHER, PID_APP, PID_APP, "frtest-app", "frtest-app", 1},
				{ST_USER, PID_WEB, PID_WEB, "frtest-web", "frtest-web", 5},
			};

			CHECK(strstr(raw.text, "PeriodType: cpu nanoseconds\n"),
			      "no \"PeriodType: cpu nanoseconds\"");
			CHECK(strstr(raw.text, "Period: 10101010\n"), "no \"Period: 10101010\"");
			CHECK(strstr(raw.text, "samples/count cpu/nanoseconds[dflt]"),
			      "sample types are not samples/count cpu/nanoseconds[dflt]");
			CHECK(strstr(raw.text, "Comment: flightrec test"), "no version comment");
			CHECK(strstr(raw.text, "Comment: incomplete: frtest note"),
			      "the request's note is not a comment");
			CHECK(raw.nsamples == 5, "pprof shows %d samples, want 5", raw.nsamples);
			for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
				char lc[64], lt[64];
				const char *labels[] = {
					label(l1, sizeof(l1), "pid", want[i].pid),
					label(l2, sizeof(l2), "tid", want[i].tid), lc, lt, NULL};
				const struct rsample *s;

				snprintf(lc, sizeof(lc), "comm:[%s]", want[i].comm);
				snprintf(lt, sizeof(lt), "thread:[%s]", want[i].thread);
				s = find_sample(&raw, want[i].st, labels);
				CHECK(s, "no sample %s %s %s with stack %s;%s;...", l1, l2, lt,
				      stacks[want[i].st].names[0], stacks[want[i].st].names[1]);
				if (s)
					CHECK(s->v[0] == want[i].count &&
					      s->v[1] == want[i].count * PERIOD_99,
					      "%s %s stack %s: values [%" PRId64 " %" PRId64
					      "], want [%" PRId64 " %" PRId64 "]",
					      l1, l2, stacks[want[i].st].names[0], s->v[0], s->v[1],
					      want[i].count, want[i].count * PERIOD_99);
			}
			/* The mapping of this binary, with its build id. */
			CHECK(strstr(raw.text, exe_path), "no mapping of %s", exe_path);
			if (exe_bid_len > 0) {
				char hex[2 * FR_BUILD_ID_MAX + 1];
				fr_build_id_hex(exe_bid, (size_t)exe_bid_len, hex);
				CHECK(strstr(raw.text, hex), "no build id %s", hex);
			}
			CHECK(strstr(raw.text, "[kernel.kallsyms]"), "no kernel mapping");
			/* The control for the uid-limited profile below. */
			CHECK(strstr(raw.text, "ffffffff81"), "no kernel addresses in root's profile");
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the aggregated profile");
		}
	}
	out_free(&o);

	/* A profile limited to one uid (a user who is not privileged) names
	 * kernel functions but gives no kernel address: those would undo
	 * the kernel's address layout randomization. PID_DB runs as uid 0
	 * and has the kernel stacks. */
	q.has_uid = 1;
	q.uid = 0;
	if (run(r, &q, &res, &o, "aggregate-uid") == 0) {
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(strstr(raw.text, "frk_schedule"), "no kernel function names");
			CHECK(!strstr(raw.text, "ffffffff81"), "kernel addresses in a user's profile");
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the uid-limited profile");
		}
	}
	out_free(&o);
	q.has_uid = 0;

	/* With a cpu label, samples of one thread on different cpus stay apart. */
	q.cpu_label = 1;
	if (run(r, &q, &res, &o, "aggregate-cpu") == 0) {
		CHECK(res.samples_kept == 15 && res.stacks == 14,
		      "cpu label: kept %" PRIu64 " stacks %" PRIu64 ", want 15 14", res.samples_kept,
		      res.stacks);
		if (raw_parse(&raw, o.path) == 0) {
			const char *labels[] = {label(l1, sizeof(l1), "pid", PID_WEB), "cpu:[3]", NULL};
			const struct rsample *s = find_sample(&raw, ST_USER, labels);

			CHECK(s && s->v[0] == 2, "web on cpu 3: %" PRId64 ", want 2", s ? s->v[0] : -1);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the profile with cpu labels");
		}
	}
	out_free(&o);
	ring_done(r);
}

/* Writes `seconds` of samples at `hz` on `ncpu` cpus from `t`: stack
 * ST_OTHER a quarter of the time, ST_USER otherwise, over 8 threads. */
static uint64_t write_rate(struct writer *w, int64_t t, int seconds, uint32_t hz, int ncpu)
{
	int64_t step = SEC / hz;
	uint64_t n = 0;

	for (int sec = 0; sec < seconds; sec++) {
		for (uint32_t i = 0; i < hz; i++) {
			for (int cpu = 0; cpu < ncpu; cpu++) {
				int64_t ts = t + sec * SEC + (int64_t)i * step + cpu * 1237;
				uint32_t k = (uint32_t)(n % 8);
				w_add(w, ts, PID_APP, TID(PID_APP, k), (uint32_t)cpu, hz,
				      n % 4 == 3 ? ST_OTHER : ST_USER);
				n++;
			}
		}
		w_seal(w);
	}
	return n;
}

/* Folded stacks: comm first, frames root first with kernel frames as
 * leaves, threads and cpus of a process merged, lines sorted. */
static void test_folded(void)
{
	static const char want[] =
		"frtest-app;frtest_root;frtest_middle;frtest_leaf 5\n"
		"frtest-app;frtest_root;frtest_other 1\n"
		"frtest-db;frtest_root;frtest_middle;frtest_leaf;[k] frk_entry_syscall;"
		"[k] frk_do_sys_read;[k] frk_schedule 4\n"
		"frtest-web;frtest_root;frtest_middle;frtest_leaf 2\n";
	struct fr_ring *r = ring_create("folded");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	int64_t t = T0 + SEC;

	if (!r)
		return;
	w_init(&w, r);
	w_add(&w, t += 1000, PID_APP, PID_APP, 0, 99, ST_USER);
	w_add(&w, t += 1000, PID_DB, PID_DB, 1, 99, ST_KERNEL);
	w_add(&w, t += 1000, PID_APP, TID(PID_APP, 1), 2, 99, ST_USER);
	w_add(&w, t += 1000, PID_WEB, PID_WEB, 3, 99, ST_USER);
	w_seal(&w);
	w_add(&w, t += 1000, PID_APP, PID_APP, 1, 99, ST_OTHER);
	for (int i = 0; i < 3; i++) {
		w_add(&w, t += 1000, PID_DB, PID_DB, (uint32_t)i, 99, ST_KERNEL);
		w_add(&w, t += 1000, PID_APP, TID(PID_APP, i), (uint32_t)i, 99, ST_USER);
	}
	w_add(&w, t += 1000, PID_WEB, PID_WEB, 0, 99, ST_USER);
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 99);
	q.format = FR_PROFILE_FOLDED;
	q.cpu_label = 1;
	if (run(r, &q, &res, &o, "folded") == 0) {
		CHECK(o.len == strlen(want) && memcmp(o.buf, want, o.len) == 0,
		      "folded output is\n%.*s\nwant\n%s", (int)o.len, (char *)o.buf, want);
		CHECK(res.samples_kept == 12 && res.stacks == 4 && res.bytes == o.len,
		      "kept %" PRIu64 " lines %" PRIu64 " bytes %" PRIu64 ", want 12 4 %zu",
		      res.samples_kept, res.stacks, res.bytes, o.len);
	}
	out_free(&o);
	ring_done(r);
	CHECK(fr_profile_format_parse("pprof") == FR_PROFILE_PPROF &&
	      fr_profile_format_parse("folded") == FR_PROFILE_FOLDED &&
	      fr_profile_format_parse("svg") == -EINVAL && fr_profile_format_parse("") == -EINVAL,
	      "fr_profile_format_parse");
}

static void test_downsampling(void)
{
	struct fr_ring *r = ring_create("downsample");
	struct fr_profile_request q;
	struct fr_profile_result res, res2;
	struct writer w;
	struct out o, o2;
	struct raw raw;
	int before = failures;
	uint64_t n;
	double want;

	if (!r)
		return;
	w_init(&w, r);
	n = write_rate(&w, T0, 25, 999, 2); /* 49950 samples */
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 99);
	if (run(r, &q, &res, &o, "down") == 0) {
		want = (double)n * 99 / 999;
		CHECK(res.samples_seen == n, "seen %" PRIu64 ", want %" PRIu64, res.samples_seen, n);
		CHECK(res.hz == 99, "hz %u, want 99", res.hz);
		CHECK(res.samples_kept > want * 0.95 && res.samples_kept < want * 1.05,
		      "kept %" PRIu64 " of %" PRIu64 " at 999 Hz -> 99 Hz, want about %.0f",
		      res.samples_kept, n, want);
		if (raw_parse(&raw, o.path) == 0) {
			const char *none[] = {NULL};
			int64_t other = 0, total = raw_total(&raw);

			CHECK(raw.period == PERIOD_99, "period %" PRId64 ", want %" PRId64, raw.period,
			      PERIOD_99);
			check_values(&raw, PERIOD_99, "downsampled");
			CHECK(total == (int64_t)res.samples_kept,
			      "pprof total %" PRId64 " differs from samples_kept %" PRIu64, total,
			      res.samples_kept);
			/* Unbiased: a quarter of the samples were in frtest_other. */
			for (int i = 0; i < raw.nsamples; i++)
				if (sample_has_stack(&raw, &raw.s[i], &stacks[ST_OTHER]))
					other += raw.s[i].v[0];
			CHECK(total && other > total * 0.20 && other < total * 0.30,
			      "frtest_other has %" PRId64 " of %" PRId64 " kept samples, want ~1/4",
			      other, total);
			CHECK(find_sample(&raw, ST_USER, none), "no sample of frtest_leaf");
			CHECK(strstr(raw.text, "Comment: cpu: downsampled from 999 Hz to 99 Hz"),
			      "no downsampling comment");
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the downsampled profile");
		}
		/* The same request, the same bytes. */
		if (run(r, &q, &res2, &o2, "down-again") == 0) {
			CHECK(o.len == o2.len && memcmp(o.buf, o2.buf, o.len) == 0,
			      "the same request gave different profiles (%zu and %zu bytes)", o.len,
			      o2.len);
			CHECK(res2.samples_kept == res.samples_kept && res2.stacks == res.stacks,
			      "the same request kept %" PRIu64 " then %" PRIu64 " samples",
			      res.samples_kept, res2.samples_kept);
		}
		out_free(&o2);
	}
	out_free(&o);

	/* As collected: nothing dropped, the 999 Hz period. */
	req_init(&q, T0, T0 + 60 * SEC, 0);
	if (run(r, &q, &res, &o, "down-asis") == 0) {
		CHECK(res.hz == 999 && res.samples_kept == n,
		      "hz 0 over 999 Hz: hz %u kept %" PRIu64 " of %" PRIu64, res.hz, res.samples_kept,
		      n);
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(raw.period == SEC / 999, "period %" PRId64 ", want %" PRId64,
			      raw.period, SEC / 999);
			CHECK(raw_total(&raw) == (int64_t)n, "pprof total %" PRId64, raw_total(&raw));
			check_values(&raw, SEC / 999, "as collected");
			CHECK(!strstr(raw.text, "downsampled"), "a profile at the collected rate says "
								"it was downsampled");
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the 999 Hz profile");
		}
	}
	out_free(&o);
	ring_done(r);
}

/* A window half at 999 Hz and half at 99 Hz has one period: 99 Hz. */
static void test_mixed_rates(void)
{
	struct fr_ring *r = ring_create("mixed");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	uint64_t fast, slow;
	double want;
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	fast = write_rate(&w, T0, 10, 999, 2);
	slow = write_rate(&w, T0 + 10 * SEC, 10, 99, 2);
	w_fini(&w);

	req_init(&q, T0, T0 + 30 * SEC, 0);
	if (run(r, &q, &res, &o, "mixed") == 0) {
		want = (double)fast * 99 / 999 + (double)slow;
		CHECK(res.hz == 99, "mixed, hz 0: profile at %u Hz, want 99", res.hz);
		CHECK(res.samples_seen == fast + slow, "seen %" PRIu64, res.samples_seen);
		CHECK(res.samples_kept > want - (double)fast * 99 / 999 * 0.1 &&
		      res.samples_kept < want + (double)fast * 99 / 999 * 0.1,
		      "mixed: kept %" PRIu64 ", want about %.0f (all %" PRIu64
		      " at 99 Hz and ~1/10 of %" PRIu64 " at 999 Hz)",
		      res.samples_kept, want, slow, fast);
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(raw.period == PERIOD_99, "period %" PRId64, raw.period);
			check_values(&raw, PERIOD_99, "mixed");
			CHECK(raw_total(&raw) == (int64_t)res.samples_kept, "pprof total %" PRId64,
			      raw_total(&raw));
			CHECK(strstr(raw.text, "Comment: ") && strstr(raw.text, "downsampled"),
			      "no comment says the profile was downsampled");
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the mixed-rate profile");
		}
	}
	out_free(&o);

	/* Only the 99 Hz half, asked at 999 Hz: 99 Hz it is, and the user is
	 * told so. */
	req_init(&q, T0 + 10 * SEC, T0 + 30 * SEC, 999);
	if (run(r, &q, &res, &o, "upsample") == 0) {
		CHECK(res.hz == 99, "999 Hz asked of 99 Hz data: profile at %u Hz", res.hz);
		CHECK(res.samples_kept == slow, "kept %" PRIu64 " of %" PRIu64, res.samples_kept,
		      slow);
		CHECK(strstr(res.warning, "99 Hz") && strstr(res.warning, "999"),
		      "warning does not name the rates: \"%s\"", res.warning);
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(raw.period == PERIOD_99, "period %" PRId64, raw.period);
			check_values(&raw, PERIOD_99, "upsample");
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the 99 Hz profile");
		}
	}
	out_free(&o);
	ring_done(r);
}

static void test_short_ring(void)
{
	const int64_t oldest = T0 + 100 * SEC + 123456789;
	struct fr_ring *r = ring_create("short");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int64_t tn, dn;

	if (!r)
		return;
	/* Empty: a valid empty profile and a word about it. */
	req_init(&q, T0, T0 + 60 * SEC, 0);
	if (run(r, &q, &res, &o, "empty") == 0) {
		CHECK(res.warning[0], "empty ring: no warning");
		CHECK(res.chunks == 0 && res.samples_seen == 0 && res.stacks == 0,
		      "empty ring: chunks %" PRIu64 " seen %" PRIu64 " stacks %" PRIu64, res.chunks,
		      res.samples_seen, res.stacks);
		CHECK(profile_times(&o, &tn, &dn) == 0, "empty ring: profile does not decode");
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(raw.nsamples == 0, "empty ring: %d samples", raw.nsamples);
			CHECK(strstr(raw.text, "PeriodType: cpu nanoseconds"),
			      "empty ring: no period type");
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the profile of an empty ring");
		}
	}
	out_free(&o);

	w_init(&w, r);
	for (int i = 0; i < 100; i++)
		w_add(&w, oldest + i * (SEC / 10), PID_APP, PID_APP, 0, 99, ST_USER);
	w_fini(&w);

	req_init(&q, T0, T0 + 200 * SEC, 0);
	if (run(r, &q, &res, &o, "short") == 0) {
		CHECK(strstr(res.warning, "holds samples only since"),
		      "ring shorter than the window: warning \"%s\"", res.warning);
		CHECK(res.covered_t0 == oldest, "covered_t0 %" PRId64 ", want %" PRId64,
		      res.covered_t0, oldest);
		CHECK(res.samples_kept == 100, "kept %" PRIu64, res.samples_kept);
		CHECK(profile_times(&o, &tn, &dn) == 0, "profile does not decode");
		CHECK(tn == oldest, "time_nanos %" PRId64 ", want the oldest sample %" PRId64, tn,
		      oldest);
		CHECK(dn == T0 + 200 * SEC - oldest, "duration %" PRId64 ", want %" PRId64, dn,
		      T0 + 200 * SEC - oldest);
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(strstr(raw.text, "holds samples only since"),
			      "the warning is not among the comments");
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the short-ring profile");
		}
	}
	out_free(&o);

	/* A window the ring covers whole: no warning. */
	req_init(&q, oldest, oldest + 5 * SEC, 0);
	if (run(r, &q, &res, &o, "covered") == 0) {
		CHECK(res.warning[0] == '\0', "covered window: warning \"%s\"", res.warning);
		CHECK(res.samples_kept == 50, "covered window: kept %" PRIu64 ", want 50",
		      res.samples_kept);
	}
	out_free(&o);
	ring_done(r);
}

static int flip(const char *path, uint64_t off)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	unsigned char c;
	int ok;

	if (fd < 0)
		return -1;
	ok = pread(fd, &c, 1, (off_t)off) == 1;
	c ^= 0x5a;
	ok = ok && pwrite(fd, &c, 1, (off_t)off) == 1;
	close(fd);
	return ok ? 0 : -1;
}

static void test_corrupt_chunk(void)
{
	struct fr_ring *r = ring_create("corrupt");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct fr_ring_ref *refs = NULL;
	struct writer w;
	struct out o;
	struct raw raw;
	size_t nrefs = 0;
	char l1[64];
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	for (int c = 0; c < 5; c++) {
		for (int i = 0; i < 10; i++)
			w_add(&w, T0 + c * SEC + i * (SEC / 100), PID_APP, TID(PID_APP, c), 0, 99,
			      ST_USER);
		w_seal(&w);
	}
	w_fini(&w);
	CHECK(fr_ring_sync(r) == 0, "fr_ring_sync");
	CHECK(fr_ring_query(r, T0, T0 + 60 * SEC, &refs, &nrefs) == 0 && nrefs == 5,
	      "query: %zu chunks, want 5", nrefs);
	if (nrefs != 5) {
		free(refs);
		ring_done(r);
		return;
	}
	/* Chunk 1: a payload byte; chunk 3: a header byte (first_ns). */
	CHECK(flip(fr_ring_path(r), refs[1].offset + FR_CHUNK_HEADER_LEN + refs[1].len / 2) == 0,
	      "corrupting chunk 1");
	CHECK(flip(fr_ring_path(r), refs[3].offset + 17) == 0, "corrupting chunk 3");
	free(refs);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	if (run(r, &q, &res, &o, "corrupt") == 0) {
		CHECK(res.chunks_skipped == 2, "chunks skipped %" PRIu64 ", want 2",
		      res.chunks_skipped);
		CHECK(res.chunks == 3, "chunks read %" PRIu64 ", want 3", res.chunks);
		CHECK(res.samples_seen == 30 && res.samples_kept == 30 && res.stacks == 3,
		      "seen %" PRIu64 " kept %" PRIu64 " stacks %" PRIu64 ", want 30 30 3",
		      res.samples_seen, res.samples_kept, res.stacks);
		if (raw_parse(&raw, o.path) == 0) {
			for (int c = 0; c < 5; c++) {
				const char *want[] = {label(l1, sizeof(l1), "tid", TID(PID_APP, c)),
						      NULL};
				const struct rsample *s = find_sample(&raw, ST_USER, want);
				int damaged = c == 1 || c == 3;

				CHECK(damaged ? !s : s && s->v[0] == 10,
				      "chunk %d (%s): %" PRId64 " samples in the profile", c,
				      damaged ? "damaged" : "intact", s ? s->v[0] : 0);
			}
			CHECK(strstr(raw.text, "2 chunks of the window could not be read"),
			      "no comment about the damaged chunks");
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the profile of a damaged ring");
		}
	}
	out_free(&o);
	ring_done(r);
}

static void test_result_fields(void)
{
	struct fr_ring *r = ring_create("fields");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;

	if (!r)
		return;
	w_init(&w, r);
	for (int i = 0; i < 30; i++)
		w_add(&w, T0 + i * PERIOD_99, i % 2 ? PID_APP : PID_DB, i % 2 ? PID_APP : PID_DB,
		      0, 99, i % 3 ? ST_USER : ST_KERNEL);
	fr_chunk_builder_count(w.b, FR_EVENT_CPU, 7, 1, 2);
	w_seal(&w);
	for (int i = 30; i < 40; i++)
		w_add(&w, T0 + i * PERIOD_99, PID_WEB, PID_WEB, 1, 99, ST_OTHER);
	fr_chunk_builder_count(w.b, FR_EVENT_CPU, 5, 0, 0);
	w_fini(&w);

	req_init(&q, T0, T0 + 10 * SEC, 0);
	if (run(r, &q, &res, &o, "fields") == 0) {
		CHECK(res.chunks == 2, "chunks %" PRIu64 ", want 2", res.chunks);
		CHECK(res.chunks_skipped == 0, "chunks skipped %" PRIu64, res.chunks_skipped);
		CHECK(res.samples_seen == 40, "samples seen %" PRIu64 ", want 40", res.samples_seen);
		CHECK(res.samples_kept == 40, "samples kept %" PRIu64 ", want 40", res.samples_kept);
		/* app and db each with the user and the kernel stack, web with one. */
		CHECK(res.stacks == 5, "stacks %" PRIu64 ", want 5", res.stacks);
		CHECK(res.hz == 99, "hz %u, want 99", res.hz);
		CHECK(res.lost == 12, "lost %" PRIu64 ", want 12", res.lost);
		CHECK(res.covered_t0 == T0, "covered_t0 %" PRId64 ", want %" PRId64, res.covered_t0,
		      T0);
		CHECK(res.bytes == o.len, "bytes %" PRIu64 ", but the sink received %zu", res.bytes,
		      o.len);
		CHECK(res.warning[0] == '\0', "warning \"%s\"", res.warning);
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(raw.nsamples == (int)res.stacks, "pprof shows %d samples, stacks %" PRIu64,
			      raw.nsamples, res.stacks);
			CHECK(raw_total(&raw) == 40, "pprof total %" PRId64, raw_total(&raw));
			CHECK(strstr(raw.text, "Comment: cpu: 12 samples lost by the kernel"),
			      "no comment about lost samples");
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the profile");
		}
	}
	out_free(&o);
	ring_done(r);
}

/* The recorder seals chunks of counters alone when no sample came (every
 * sample lost, say): such a chunk has no stacks, is stamped with the time
 * it was sealed, and still counts in `lost`. */
static void test_counters_only_chunk(void)
{
	struct fr_ring *r = ring_create("counters");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct timespec ts;
	struct writer w;
	struct out o;
	struct raw raw;
	int64_t now;

	if (!r)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
	w_init(&w, r);
	fr_chunk_builder_count(w.b, FR_EVENT_CPU, 3, 0, 0);
	w_seal(&w);
	for (int i = 0; i < 5; i++)
		w_add(&w, now + i * PERIOD_99, PID_APP, PID_APP, 0, 99, ST_USER);
	w_fini(&w);
	CHECK(w.chunks == 2, "wrote %u chunks, want 2", w.chunks);

	req_init(&q, now - 60 * SEC, now + 60 * SEC, 0);
	if (run(r, &q, &res, &o, "counters") == 0) {
		CHECK(res.chunks == 2, "chunks %" PRIu64 ", want 2", res.chunks);
		CHECK(res.lost == 3, "lost %" PRIu64 ", want 3", res.lost);
		CHECK(res.samples_kept == 5 && res.stacks == 1,
		      "kept %" PRIu64 " stacks %" PRIu64 ", want 5 1", res.samples_kept, res.stacks);
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(raw_total(&raw) == 5, "pprof total %" PRId64, raw_total(&raw));
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the profile");
		}
	}
	out_free(&o);
	ring_done(r);
}

/* ---- events and targets ---- */

/* Runs `go tool pprof ARGS -top` on a profile; malloc'd stdout or NULL. */
static char *pprof_top(const char *file, const char *args)
{
	char a[256];

	snprintf(a, sizeof(a), "-symbolize=none %s -top", args);
	return fr_test_go_pprof(go, a, file, tmpdir);
}

/* The sum of value column `k` over every sample. */
static int64_t raw_column(const struct raw *r, int k)
{
	int64_t n = 0;

	for (int i = 0; i < r->nsamples; i++)
		n += r->s[i].v[k];
	return n;
}

/* The row of stack `st` with pid label `pid`, or NULL. */
static const struct rsample *find_pid(const struct raw *r, int st, uint32_t pid)
{
	char l1[64];
	const char *want[] = {label(l1, sizeof(l1), "pid", pid), NULL};

	return find_sample(r, st, want);
}

static void req_events(struct fr_profile_request *q, uint32_t n, const uint32_t *events)
{
	q->nevents = n;
	memcpy(q->events, events, n * sizeof(*events));
}

/* cpu and page-faults in one window: one row per (stack, pid, tid) with a
 * column per event, samples/count counting both; the page-faults column
 * is what -sample_index=page-faults reads; events not asked for are out;
 * folded stacks count the first event only. */
static void test_two_events(void)
{
	static const uint32_t cpu_pf[] = {FR_EVENT_CPU, FR_EVENT_PAGE_FAULTS};
	static const uint32_t pf_cpu[] = {FR_EVENT_PAGE_FAULTS, FR_EVENT_CPU};
	struct fr_ring *r = ring_create("events");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int64_t t = T0 + SEC;
	int before = failures;
	char *top;

	if (!r)
		return;
	w_init(&w, r);
	/* app: 10 cpu samples and 4 page-fault samples (weights 1..4) of one
	 * stack and thread; db: 5 cpu samples; web: 3 page-fault samples of
	 * 7 faults each; cycles of app, not asked for. Over two chunks. */
	for (int i = 0; i < 10; i++) {
		w_add(&w, t += 1000, PID_APP, PID_APP, (uint32_t)i % 2, 99, ST_USER);
		if (i < 4)
			w_add_ev(&w, t += 1000, PID_APP, PID_APP, 2, FR_EVENT_PAGE_FAULTS, 99,
				 (uint64_t)i + 1, ST_USER);
		if (i < 5)
			w_add(&w, t += 1000, PID_DB, PID_DB, 3, 99, ST_KERNEL);
		if (i < 3)
			w_add_ev(&w, t += 1000, PID_WEB, PID_WEB, 0, FR_EVENT_PAGE_FAULTS, 99, 7,
				 ST_OTHER);
		w_add_ev(&w, t += 1000, PID_APP, PID_APP, 1, FR_EVENT_CYCLES, 99, 1000000,
			 ST_USER);
		if (i == 4)
			w_seal(&w);
	}
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	req_events(&q, 2, cpu_pf);
	if (run(r, &q, &res, &o, "events") == 0) {
		CHECK(res.nevents == 2 && res.events[0].event == FR_EVENT_CPU &&
			      res.events[1].event == FR_EVENT_PAGE_FAULTS,
		      "result events: %u [%u %u]", res.nevents, res.events[0].event,
		      res.events[1].event);
		CHECK(res.events[0].samples_seen == 15 && res.events[0].samples_kept == 15 &&
			      res.events[1].samples_seen == 7 && res.events[1].samples_kept == 7,
		      "per event seen/kept: cpu %" PRIu64 "/%" PRIu64 " page-faults %" PRIu64
		      "/%" PRIu64 ", want 15/15 7/7",
		      res.events[0].samples_seen, res.events[0].samples_kept,
		      res.events[1].samples_seen, res.events[1].samples_kept);
		CHECK(res.samples_seen == 22 && res.samples_kept == 22 && res.stacks == 3,
		      "seen %" PRIu64 " kept %" PRIu64 " stacks %" PRIu64 ", want 22 22 3",
		      res.samples_seen, res.samples_kept, res.stacks);
		CHECK(res.hz == 99 && res.events[0].hz == 99 && res.events[1].hz == 99,
		      "hz %u [%u %u]", res.hz, res.events[0].hz, res.events[1].hz);
		if (raw_parse(&raw, o.path) == 0) {
			const struct rsample *app = find_pid(&raw, ST_USER, PID_APP);
			const struct rsample *db = find_pid(&raw, ST_KERNEL, PID_DB);
			const struct rsample *web = find_pid(&raw, ST_OTHER, PID_WEB);

			CHECK(strcmp(raw.types,
				     "samples/count cpu/nanoseconds[dflt] page-faults/count") == 0,
			      "sample types \"%s\"", raw.types);
			CHECK(strstr(raw.text, "PeriodType: cpu nanoseconds\n") &&
				      raw.period == PERIOD_99,
			      "period %" PRId64 ", want cpu nanoseconds %" PRId64, raw.period,
			      PERIOD_99);
			CHECK(raw.nsamples == 3, "pprof shows %d samples, want 3", raw.nsamples);
			CHECK(app && app->nv == 3 && app->v[0] == 14 && app->v[1] == 10 * PERIOD_99 &&
				      app->v[2] == 10,
			      "app row [%" PRId64 " %" PRId64 " %" PRId64 "], want [14 %" PRId64
			      " 10]", app ? app->v[0] : -1, app ? app->v[1] : -1,
			      app ? app->v[2] : -1, 10 * PERIOD_99);
			CHECK(db && db->nv == 3 && db->v[0] == 5 && db->v[1] == 5 * PERIOD_99 &&
				      db->v[2] == 0,
			      "db row [%" PRId64 " %" PRId64 " %" PRId64 "]", db ? db->v[0] : -1,
			      db ? db->v[1] : -1, db ? db->v[2] : -1);
			CHECK(web && web->nv == 3 && web->v[0] == 3 && web->v[1] == 0 &&
				      web->v[2] == 21,
			      "web row [%" PRId64 " %" PRId64 " %" PRId64 "]", web ? web->v[0] : -1,
			      web ? web->v[1] : -1, web ? web->v[2] : -1);
			CHECK(raw_column(&raw, 0) == 22 && raw_column(&raw, 1) == 15 * PERIOD_99 &&
				      raw_column(&raw, 2) == 31,
			      "column totals %" PRId64 " %" PRId64 " %" PRId64, raw_column(&raw, 0),
			      raw_column(&raw, 1), raw_column(&raw, 2));
			CHECK(strstr(raw.text, "Comment: page-faults sampled at 99 Hz (frequency mode"),
			      "no rate comment for page-faults");
			CHECK(!strstr(raw.text, "cycles"), "cycles, not asked for, is in the profile");
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the two-event profile");
		}
		top = pprof_top(o.path, "-sample_index=page-faults");
		CHECK(top && strstr(top, "Type: page-faults") && strstr(top, "of 31 total"),
		      "-sample_index=page-faults: %s", top ? top : "(failed)");
		free(top);
		top = pprof_top(o.path, "");
		CHECK(top && strstr(top, "Type: cpu"), "default sample type: %s",
		      top ? top : "(failed)");
		free(top);
	}
	out_free(&o);

	/* page-faults first: it is the default and the period type, with the
	 * mean faults per kept sample (31 / 7, rounded) as the period. */
	req_events(&q, 2, pf_cpu);
	before = failures;
	if (run(r, &q, &res, &o, "events-pf") == 0) {
		CHECK(res.hz == 99, "hz %u", res.hz);
		if (raw_parse(&raw, o.path) == 0) {
			const struct rsample *app = find_pid(&raw, ST_USER, PID_APP);

			CHECK(strcmp(raw.types,
				     "samples/count page-faults/count[dflt] cpu/nanoseconds") == 0,
			      "sample types \"%s\"", raw.types);
			CHECK(strstr(raw.text, "PeriodType: page-faults count\n") && raw.period == 4,
			      "page-faults first: period %" PRId64 ", want 4", raw.period);
			CHECK(strstr(raw.text, "Comment: period 4: the mean page-faults per kept sample"),
			      "no comment on what the period means");
			CHECK(app && app->v[0] == 14 && app->v[1] == 10 && app->v[2] == 10 * PERIOD_99,
			      "app row [%" PRId64 " %" PRId64 " %" PRId64 "]", app ? app->v[0] : -1,
			      app ? app->v[1] : -1, app ? app->v[2] : -1);
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the page-faults-first profile");
		}
	}
	out_free(&o);

	/* Folded: the count is the first event's kept samples; db has none of
	 * page-faults and no line. */
	q.format = FR_PROFILE_FOLDED;
	if (run(r, &q, &res, &o, "events-folded") == 0) {
		static const char want[] = "frtest-app;frtest_root;frtest_middle;frtest_leaf 4\n"
					   "frtest-web;frtest_root;frtest_other 3\n";

		CHECK(o.len == strlen(want) && memcmp(o.buf, want, o.len) == 0,
		      "folded output is\n%.*s\nwant\n%s", (int)o.len, (char *)o.buf, want);
		CHECK(res.stacks == 2 && res.samples_kept == 22, "folded: lines %" PRIu64
		      " kept %" PRIu64 ", want 2 22", res.stacks, res.samples_kept);
	}
	out_free(&o);
	ring_done(r);
}

/* Writes `seconds` of samples from `t` on 2 cpus: cpu at 999 Hz, cycles at
 * 999 Hz (99 events each) and page-faults at 49 Hz (3 faults each), a
 * chunk a second. Returns the samples of each in n[cpu, cycles, pf]. */
static void write_events(struct writer *w, int64_t t, int seconds, uint64_t n[3])
{
	static const struct {
		uint32_t event, hz;
		uint64_t weight;
	} ev[3] = {
		{FR_EVENT_CPU, 999, 1000000000u / 999},
		{FR_EVENT_CYCLES, 999, 99},
		{FR_EVENT_PAGE_FAULTS, 49, 3},
	};

	n[0] = n[1] = n[2] = 0;
	for (int sec = 0; sec < seconds; sec++) {
		for (int k = 0; k < 3; k++) {
			for (uint32_t i = 0; i < ev[k].hz; i++) {
				for (uint32_t cpu = 0; cpu < 2; cpu++) {
					int64_t ts = t + sec * SEC + (int64_t)i * (SEC / ev[k].hz) +
						     cpu * 1237 + k * 101;
					uint32_t tid = TID(PID_APP, n[k] % 8);

					w_add_ev(w, ts, PID_APP, tid, cpu, ev[k].event, ev[k].hz,
						 ev[k].weight, n[k] % 4 == 3 ? ST_OTHER : ST_USER);
					n[k]++;
				}
			}
		}
		w_seal(w);
	}
}

/* Each event is downsampled to its own target: cpu and cycles from 999 Hz
 * to the requested 99 Hz, page-faults (collected at 49 Hz) not at all. */
static void test_event_downsampling(void)
{
	static const uint32_t three[] = {FR_EVENT_CPU, FR_EVENT_CYCLES, FR_EVENT_PAGE_FAULTS};
	static const uint32_t cycles_first[] = {FR_EVENT_CYCLES, FR_EVENT_CPU};
	struct fr_ring *r = ring_create("event-down");
	struct fr_profile_request q;
	struct fr_profile_result res, res2;
	struct writer w;
	struct out o, o2;
	struct raw raw;
	uint64_t n[3];
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	write_events(&w, T0, 10, n);
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 99);
	req_events(&q, 3, three);
	if (run(r, &q, &res, &o, "event-down") == 0) {
		const struct fr_profile_event_result *cpu = &res.events[0], *cyc = &res.events[1],
						     *pf = &res.events[2];
		double want = (double)n[0] * 99 / 999;

		CHECK(res.nevents == 3, "nevents %u", res.nevents);
		CHECK(res.hz == 99 && cpu->hz == 99 && cyc->hz == 99 && pf->hz == 49,
		      "rates: profile %u, cpu %u cycles %u page-faults %u; want 99 99 99 49", res.hz,
		      cpu->hz, cyc->hz, pf->hz);
		CHECK(cpu->min_rate == 999 && cpu->max_rate == 999 && pf->min_rate == 49 &&
			      pf->max_rate == 49,
		      "collected rates cpu %u..%u page-faults %u..%u", cpu->min_rate, cpu->max_rate,
		      pf->min_rate, pf->max_rate);
		CHECK(cpu->samples_seen == n[0] && cyc->samples_seen == n[1] &&
			      pf->samples_seen == n[2],
		      "seen %" PRIu64 " %" PRIu64 " %" PRIu64, cpu->samples_seen, cyc->samples_seen,
		      pf->samples_seen);
		CHECK(cpu->samples_kept > want * 0.93 && cpu->samples_kept < want * 1.07,
		      "cpu kept %" PRIu64 " of %" PRIu64 ", want about %.0f", cpu->samples_kept,
		      n[0], want);
		CHECK(cyc->samples_kept > want * 0.93 && cyc->samples_kept < want * 1.07,
		      "cycles kept %" PRIu64 " of %" PRIu64 ", want about %.0f", cyc->samples_kept,
		      n[1], want);
		CHECK(pf->samples_kept == n[2], "page-faults kept %" PRIu64 " of %" PRIu64,
		      pf->samples_kept, n[2]);
		CHECK(res.samples_kept == cpu->samples_kept + cyc->samples_kept + pf->samples_kept,
		      "samples_kept %" PRIu64 " is not the sum over events", res.samples_kept);
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(strcmp(raw.types, "samples/count cpu/nanoseconds[dflt] cycles/count "
						"page-faults/count") == 0,
			      "sample types \"%s\"", raw.types);
			CHECK(raw.period == PERIOD_99, "period %" PRId64 ", want %" PRId64, raw.period,
			      PERIOD_99);
			CHECK(raw_column(&raw, 0) == (int64_t)res.samples_kept,
			      "samples column %" PRId64, raw_column(&raw, 0));
			CHECK(raw_column(&raw, 1) == (int64_t)cpu->samples_kept * PERIOD_99,
			      "cpu column %" PRId64 ", want %" PRIu64 " x %" PRId64,
			      raw_column(&raw, 1), cpu->samples_kept, PERIOD_99);
			/* 99 cycles kept with probability 99/999 stand for 999. */
			CHECK(raw_column(&raw, 2) == (int64_t)cyc->samples_kept * 999,
			      "cycles column %" PRId64 ", want %" PRIu64 " x 999", raw_column(&raw, 2),
			      cyc->samples_kept);
			CHECK(raw_column(&raw, 3) == (int64_t)n[2] * 3,
			      "page-faults column %" PRId64 ", want %" PRIu64, raw_column(&raw, 3),
			      n[2] * 3);
			CHECK(strstr(raw.text, "Comment: cpu: downsampled from 999 Hz to 99 Hz"),
			      "no cpu downsampling comment");
			CHECK(strstr(raw.text, "Comment: cycles: downsampled from 999 Hz to 99 Hz"),
			      "no cycles downsampling comment");
			CHECK(!strstr(raw.text, "page-faults: downsampled"),
			      "page-faults said to be downsampled");
			CHECK(strstr(raw.text, "Comment: page-faults sampled at 49 Hz"),
			      "no page-faults rate comment");
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the per-event downsampled profile");
		}
		if (run(r, &q, &res2, &o2, "event-down-again") == 0)
			CHECK(o.len == o2.len && memcmp(o.buf, o2.buf, o.len) == 0,
			      "the same request gave different profiles (%zu and %zu bytes)", o.len,
			      o2.len);
		out_free(&o2);
	}
	out_free(&o);

	/* cycles first: its period is what a kept sample stands for, 999. */
	req_events(&q, 2, cycles_first);
	before = failures;
	if (run(r, &q, &res, &o, "event-down-cycles") == 0) {
		CHECK(res.hz == 99, "cycles first: hz %u", res.hz);
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(strstr(raw.text, "PeriodType: cycles count\n") && raw.period == 999,
			      "cycles first: period %" PRId64 ", want cycles count 999", raw.period);
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the cycles-first profile");
		}
	}
	out_free(&o);
	ring_done(r);
}

/* offcpu: every switch recorded, its weights (ns switched out) summed
 * exactly and never downsampled, even when cpu beside it is. */
static void test_offcpu(void)
{
	static const uint32_t off_cpu[] = {FR_EVENT_OFFCPU, FR_EVENT_CPU};
	struct fr_ring *r = ring_create("offcpu");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	uint64_t total = 0, noff = 0, ncpu = 0;
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	for (int sec = 0; sec < 5; sec++) {
		for (int i = 0; i < 99; i++) {
			int64_t ts = T0 + sec * SEC + i * PERIOD_99;
			uint64_t ns = 1000003ull * (uint64_t)(i % 13 + 1) + (uint64_t)sec;

			w_add(&w, ts, PID_DB, TID(PID_DB, i % 4), 0, 99, ST_USER);
			ncpu++;
			w_add_ev(&w, ts + 5000, PID_DB, TID(PID_DB, i % 4), 1, FR_EVENT_OFFCPU, 0, ns,
				 ST_KERNEL);
			total += ns;
			noff++;
		}
		w_seal(&w);
	}
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 19);
	req_events(&q, 2, off_cpu);
	if (run(r, &q, &res, &o, "offcpu") == 0) {
		CHECK(res.hz == 0 && res.events[0].hz == 0 && res.events[1].hz == 19,
		      "rates: profile %u offcpu %u cpu %u, want 0 0 19", res.hz, res.events[0].hz,
		      res.events[1].hz);
		CHECK(res.events[0].samples_seen == noff && res.events[0].samples_kept == noff,
		      "offcpu seen %" PRIu64 " kept %" PRIu64 ", want all %" PRIu64,
		      res.events[0].samples_seen, res.events[0].samples_kept, noff);
		CHECK(res.events[1].samples_kept < ncpu / 3,
		      "cpu kept %" PRIu64 " of %" PRIu64 " at 99 -> 19 Hz", res.events[1].samples_kept,
		      ncpu);
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(strcmp(raw.types,
				     "samples/count offcpu/nanoseconds[dflt] cpu/nanoseconds") == 0,
			      "sample types \"%s\"", raw.types);
			CHECK(strstr(raw.text, "PeriodType: offcpu nanoseconds\n") && raw.period == 1,
			      "offcpu first: period %" PRId64 ", want offcpu nanoseconds 1",
			      raw.period);
			CHECK(raw_column(&raw, 1) == (int64_t)total,
			      "offcpu column %" PRId64 ", want %" PRIu64, raw_column(&raw, 1), total);
			CHECK(raw_column(&raw, 2) == (int64_t)res.events[1].samples_kept * (SEC / 19),
			      "cpu column %" PRId64, raw_column(&raw, 2));
			CHECK(strstr(raw.text, "Comment: offcpu: every context switch, value = "
					       "nanoseconds switched out"),
			      "no offcpu comment");
			CHECK(!strstr(raw.text, "offcpu: downsampled"), "offcpu said to be downsampled");
			CHECK(strstr(raw.text, "Comment: cpu: downsampled from 99 Hz to 19 Hz"),
			      "no cpu downsampling comment");
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the offcpu profile");
		}
	}
	out_free(&o);
	ring_done(r);
}

/* Samples of app 10, db 20, web 30 and sub 5, each of its own stack. */
static void write_targets(struct writer *w)
{
	static const struct {
		uint32_t pid;
		int n, st;
	} procs[] = {{PID_APP, 10, ST_USER}, {PID_DB, 20, ST_KERNEL}, {PID_WEB, 30, ST_OTHER},
		     {PID_SUB, 5, ST_USER}};
	int64_t t = T0 + SEC;

	for (size_t k = 0; k < sizeof(procs) / sizeof(procs[0]); k++)
		for (int i = 0; i < procs[k].n; i++)
			w_add(w, t += 1000, procs[k].pid, procs[k].pid, (uint32_t)i % 2, 99,
			      procs[k].st);
}

/* Runs `q` and returns the samples kept, or -1. */
static int64_t kept_of(struct fr_ring *r, const struct fr_profile_request *q, const char *name)
{
	struct fr_profile_result res;
	struct out o;
	int64_t kept = -1;

	if (run(r, q, &res, &o, name) == 0)
		kept = (int64_t)res.samples_kept;
	out_free(&o);
	return kept;
}

static void set_comms(struct fr_profile_request *q, const char *a, const char *b)
{
	q->ncomms = 0;
	if (a)
		snprintf(q->comms[q->ncomms++], FR_PROFILE_COMM_MAX, "%s", a);
	if (b)
		snprintf(q->comms[q->ncomms++], FR_PROFILE_COMM_MAX, "%s", b);
}

static void test_comm_filter(void)
{
	struct fr_ring *r = ring_create("comms");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	char err[512];
	int64_t k;

	if (!r)
		return;
	w_init(&w, r);
	write_targets(&w);
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	set_comms(&q, "frtest-db", "frtest-web");
	k = kept_of(r, &q, "comm-db-web");
	CHECK(k == 50, "comms db, web: kept %" PRId64 ", want 50", k);
	set_comms(&q, "frtest-app", NULL);
	k = kept_of(r, &q, "comm-app");
	CHECK(k == 10, "comm app: kept %" PRId64 ", want 10", k);
	/* Whole names only. */
	set_comms(&q, "frtest", "frtest-ap");
	k = kept_of(r, &q, "comm-prefix");
	CHECK(k == 0, "comm prefixes: kept %" PRId64 ", want 0", k);
	/* AND with pids, OR within each. */
	set_comms(&q, "frtest-app", "frtest-db");
	q.npids = 2;
	q.pids[0] = PID_DB;
	q.pids[1] = PID_WEB;
	k = kept_of(r, &q, "comm-pid");
	CHECK(k == 20, "comms app, db and pids db, web: kept %" PRId64 ", want 20 (db)", k);
	q.npids = 1;
	q.pids[0] = PID_WEB;
	k = kept_of(r, &q, "comm-pid-none");
	CHECK(k == 0, "comms app, db and pid web: kept %" PRId64 ", want 0", k);

	/* A name longer than the kernel keeps cannot match: refused. */
	req_init(&q, T0, T0 + 60 * SEC, 0);
	q.ncomms = 1;
	memset(q.comms[0], 'x', FR_PROFILE_COMM_MAX);
	CHECK(fr_profile_write(r, &q, sink_mem, &(struct out){0}, &res, err, sizeof(err)) ==
			      -EINVAL &&
		      strstr(err, "longer"),
	      "a 16-character comm: \"%s\"", err);
	ring_done(r);
}

static void set_cgroup(struct fr_profile_request *q, const char *path)
{
	snprintf(q->cgroup, sizeof(q->cgroup), "%s", path);
}

static void test_cgroup_filter(void)
{
	static const struct {
		const char *cgroup;
		int64_t kept;
		const char *why;
	} cases[] = {
		{"", 65 + 7, "no cgroup filter: everything"},
		{CG_NGINX, 15, "nginx and the cgroup below it"},
		{CG_NGINX "/", 15, "a trailing slash"},
		{CG_SUB, 5, "the sub cgroup alone"},
		{"/system.slice", 35, "the slice: nginx, sub, db"},
		{"/system.slice/ng", 0, "a prefix of a name, not a path component"},
		{"/system.slice/nginx", 0, "a prefix of a name, not a path component"},
		{CG_SUB "/x", 0, "below every process"},
		{"/", 35 + 7, "every process whose cgroup is known"},
		{"/user.slice", 7, "web once it moved"},
	};
	struct fr_ring *r = ring_create("cgroups");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	char err[512];
	int before = failures;
	int64_t k;

	if (!r)
		return;
	w_init(&w, r);
	write_targets(&w);
	w_seal(&w);
	/* web moves into a cgroup the tracker knows: its next 7 samples have
	 * a cgroup label, the 30 before none. */
	web_cgroup = "/user.slice/user-1000.slice";
	for (int i = 0; i < 7; i++)
		w_add(&w, T0 + 2 * SEC + i * 1000, PID_WEB, PID_WEB, 0, 99, ST_OTHER);
	w_fini(&w);
	web_cgroup = NULL;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		req_init(&q, T0, T0 + 60 * SEC, 0);
		set_cgroup(&q, cases[i].cgroup);
		k = kept_of(r, &q, "cgroup");
		CHECK(k == cases[i].kept, "cgroup \"%s\" (%s): kept %" PRId64 ", want %" PRId64,
		      cases[i].cgroup, cases[i].why, k, cases[i].kept);
	}
	/* AND with pids. */
	req_init(&q, T0, T0 + 60 * SEC, 0);
	set_cgroup(&q, "/system.slice");
	q.npids = 2;
	q.pids[0] = PID_DB;
	q.pids[1] = PID_WEB;
	k = kept_of(r, &q, "cgroup-pid");
	CHECK(k == 20, "cgroup /system.slice and pids db, web: kept %" PRId64 ", want 20", k);
	/* AND with comms. */
	q.npids = 0;
	set_comms(&q, "frtest-sub", "frtest-web");
	k = kept_of(r, &q, "cgroup-comm");
	CHECK(k == 5, "cgroup /system.slice and comms sub, web: kept %" PRId64 ", want 5", k);

	/* The label, on the samples that have one; web's samples from before
	 * and after its move are apart. */
	req_init(&q, T0, T0 + 60 * SEC, 0);
	if (run(r, &q, &res, &o, "cgroup-labels") == 0) {
		if (raw_parse(&raw, o.path) == 0) {
			const char *app[] = {"cgroup:[" CG_NGINX "]", "comm:[frtest-app]", NULL};
			const char *sub[] = {"cgroup:[" CG_SUB "]", "comm:[frtest-sub]", NULL};
			const char *web_in[] = {"cgroup:[/user.slice/user-1000.slice]",
						"comm:[frtest-web]", NULL};
			const struct rsample *s = find_sample(&raw, ST_USER, app);
			int unlabelled_web = 0;

			CHECK(s && s->v[0] == 10, "app with its cgroup label: %" PRId64,
			      s ? s->v[0] : -1);
			s = find_sample(&raw, ST_USER, sub);
			CHECK(s && s->v[0] == 5, "sub with its cgroup label: %" PRId64,
			      s ? s->v[0] : -1);
			s = find_sample(&raw, ST_OTHER, web_in);
			CHECK(s && s->v[0] == 7, "web after the move: %" PRId64, s ? s->v[0] : -1);
			for (int i = 0; i < raw.nsamples; i++)
				if (strstr(raw.s[i].labels, "comm:[frtest-web]") &&
				    !strstr(raw.s[i].labels, "cgroup:"))
					unlabelled_web += (int)raw.s[i].v[0];
			CHECK(unlabelled_web == 30, "web before the move, without a label: %d",
			      unlabelled_web);
			CHECK(raw.nsamples == 5, "pprof shows %d samples, want 5", raw.nsamples);
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the profile with cgroup labels");
		}
	}
	out_free(&o);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	set_cgroup(&q, "system.slice");
	CHECK(fr_profile_write(r, &q, sink_mem, &(struct out){0}, &res, err, sizeof(err)) ==
			      -EINVAL &&
		      strstr(err, "cgroup"),
	      "a relative cgroup path: \"%s\"", err);
	ring_done(r);
}

/* Runs `q` with children and pids; *kept the samples kept, and whether
 * the profile has `pids` rows and not `absent` ones (0-terminated). */
static void check_children(struct fr_ring *r, struct fr_profile_request *q, const char *name,
			   int64_t kept, const uint32_t *pids, const uint32_t *absent,
			   const char *comment_text)
{
	struct fr_profile_result res;
	struct out o;
	struct raw raw;
	int before = failures;

	if (run(r, q, &res, &o, name) != 0) {
		out_free(&o);
		return;
	}
	CHECK((int64_t)res.samples_kept == kept && res.samples_seen == res.samples_kept,
	      "%s: seen %" PRIu64 " kept %" PRIu64 ", want %" PRId64, name, res.samples_seen,
	      res.samples_kept, kept);
	if (raw_parse(&raw, o.path) == 0) {
		for (int i = 0; pids[i]; i++)
			CHECK(find_pid(&raw, -1, pids[i]), "%s: no samples of pid %u", name, pids[i]);
		for (int i = 0; absent[i]; i++)
			CHECK(!find_pid(&raw, -1, absent[i]), "%s: samples of pid %u", name,
			      absent[i]);
		CHECK(raw_total(&raw) == kept, "%s: pprof counts %" PRId64 " samples", name,
		      raw_total(&raw));
		if (comment_text)
			CHECK(strstr(raw.text, comment_text), "%s: no comment \"%s\"", name,
			      comment_text);
		else
			CHECK(!strstr(raw.text, "--children"), "%s: a --children comment", name);
		CHECK(!strstr(raw.text, "ppid"), "%s: a ppid label in the profile", name);
		dump_on_failure(&raw, before);
		raw_free(&raw);
	} else {
		CHECK(0, "%s: go tool pprof cannot read the profile", name);
	}
	out_free(&o);
}

/* A uid restriction keeps only the processes the chunks recorded for that
 * uid, combines with the other targets, and says so in a comment. */
static void test_uid_filter(void)
{
	static const uint32_t none[] = {0};
	struct fr_ring *r = ring_create("uids");
	struct fr_profile_request q;
	struct writer w;
	int64_t k;

	if (!r)
		return;
	w_init(&w, r);
	write_targets(&w);
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	q.has_uid = 1;
	q.uid = 1000;
	check_children(r, &q, "uid-1000", 45, (const uint32_t[]){PID_APP, PID_WEB, PID_SUB, 0},
		       (const uint32_t[]){PID_DB, 0}, "limited to the processes of uid 1000");
	q.uid = 0;
	check_children(r, &q, "uid-0", 20, (const uint32_t[]){PID_DB, 0},
		       (const uint32_t[]){PID_APP, PID_WEB, PID_SUB, 0},
		       "limited to the processes of uid 0");
	/* A user asking for root's process by name or pid gets nothing. */
	q.uid = 1000;
	set_comms(&q, "frtest-db", NULL);
	k = kept_of(r, &q, "uid-1000-comm-db");
	CHECK(k == 0, "uid 1000 and comm db: kept %" PRId64 ", want 0", k);
	q.ncomms = 0;
	q.npids = 1;
	q.pids[0] = PID_DB;
	k = kept_of(r, &q, "uid-1000-pid-db");
	CHECK(k == 0, "uid 1000 and pid db: kept %" PRId64 ", want 0", k);
	q.npids = 0;
	q.uid = 4242;
	check_children(r, &q, "uid-nobody", 0, none, (const uint32_t[]){PID_APP, PID_DB, 0},
		       "limited to the processes of uid 4242");
	ring_done(r);
}

static void add_n(struct writer *w, int64_t *t, uint32_t pid, int n, uint32_t hz, int st)
{
	for (int i = 0; i < n; i++)
		w_add(w, *t += 1000, pid, pid, (uint32_t)i % 2, hz, st);
}

/* --children: the descendants of a pid, found through the "ppid" labels
 * of every chunk of the window (a child's samples may come chunks after
 * its parent's, a shell between them may have none), however many. */
static void test_children(void)
{
	struct fr_ring *r = ring_create("children");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int64_t t = T0 + SEC, k;
	char text[160];

	if (!r)
		return;
	w_init(&w, r);
	add_n(&w, &t, FAM(100), 10, 99, ST_USER);
	add_n(&w, &t, FAM(400), 7, 99, ST_OTHER);
	w_seal(&w);
	t = T0 + 2 * SEC;
	add_n(&w, &t, FAM(200), 20, 99, ST_KERNEL);
	add_n(&w, &t, FAM(100), 5, 99, ST_USER);
	w_seal(&w);
	t = T0 + 3 * SEC;
	add_n(&w, &t, FAM(300), 30, 99, ST_USER);
	add_n(&w, &t, FAM(350), 4, 99, ST_OTHER);
	add_n(&w, &t, FAM(400), 3, 99, ST_OTHER);
	add_n(&w, &t, FAM(500), 2, 99, ST_USER);
	add_n(&w, &t, FAM(600), 2, 99, ST_USER);
	add_n(&w, &t, FAM(700), 2, 99, ST_USER);
	w_fini(&w);
	CHECK(w.chunks == 3, "wrote %u chunks, want 3", w.chunks);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	q.npids = 1;
	q.pids[0] = FAM(100);
	check_children(r, &q, "children-off", 15, (const uint32_t[]){FAM(100), 0},
		       (const uint32_t[]){FAM(200), FAM(300), FAM(350), FAM(400), 0}, NULL);

	q.children = 1;
	snprintf(text, sizeof(text), "--children: 4 descendant processes of %u included",
		 FAM(100));
	check_children(r, &q, "children", 15 + 20 + 30 + 4,
		       (const uint32_t[]){FAM(100), FAM(200), FAM(300), FAM(350), 0},
		       (const uint32_t[]){FAM(400), FAM(500), FAM(600), FAM(700), 0}, text);
	/* The labels are those of any profile: 100's samples of both chunks
	 * are one row, with its cgroup. */
	if (run(r, &q, &res, &o, "children-labels") == 0 && raw_parse(&raw, o.path) == 0) {
		char l1[64];
		const char *want[] = {label(l1, sizeof(l1), "pid", FAM(100)),
				      "cgroup:[" CG_NGINX "]", NULL};
		const struct rsample *s = find_sample(&raw, ST_USER, want);

		CHECK(s && s->v[0] == 15, "children: 100's row %" PRId64 ", want 15",
		      s ? s->v[0] : -1);
		raw_free(&raw);
	}
	out_free(&o);

	/* From the middle of the tree: not the parent. */
	q.pids[0] = FAM(200);
	snprintf(text, sizeof(text), "--children: 3 descendant processes of %u included",
		 FAM(200));
	check_children(r, &q, "children-200", 20 + 30 + 4,
		       (const uint32_t[]){FAM(200), FAM(300), FAM(350), 0},
		       (const uint32_t[]){FAM(100), FAM(400), 0}, text);

	/* Two pids, one of them a descendant of nothing asked. */
	q.npids = 2;
	q.pids[0] = FAM(400);
	q.pids[1] = FAM(300);
	snprintf(text, sizeof(text), "--children: 0 descendant processes of %u,%u included",
		 FAM(400), FAM(300));
	check_children(r, &q, "children-two", 10 + 30, (const uint32_t[]){FAM(400), FAM(300), 0},
		       (const uint32_t[]){FAM(100), FAM(200), FAM(350), 0}, text);

	/* Parents in a cycle, and a process that is its own: the walk ends. */
	q.npids = 1;
	q.pids[0] = FAM(500);
	snprintf(text, sizeof(text), "--children: 1 descendant processes of %u included",
		 FAM(500));
	check_children(r, &q, "children-cycle", 4, (const uint32_t[]){FAM(500), FAM(600), 0},
		       (const uint32_t[]){FAM(700), FAM(100), 0}, text);
	q.pids[0] = FAM(700);
	snprintf(text, sizeof(text), "--children: 0 descendant processes of %u included",
		 FAM(700));
	check_children(r, &q, "children-self", 2, (const uint32_t[]){FAM(700), 0},
		       (const uint32_t[]){FAM(500), FAM(600), 0}, text);

	/* Without pids, children changes nothing; folded output too. */
	q.npids = 0;
	k = kept_of(r, &q, "children-all");
	CHECK(k == 85, "children without pids: kept %" PRId64 ", want 85", k);
	q.npids = 1;
	q.pids[0] = FAM(100);
	q.format = FR_PROFILE_FOLDED;
	k = kept_of(r, &q, "children-folded");
	CHECK(k == 69, "children, folded: kept %" PRId64 ", want 69", k);
	if (run(r, &q, &res, &o, "children-folded-text") == 0) {
		char *txt = strndup((const char *)o.buf, o.len);

		CHECK(txt && strstr(txt, "frtest-350;") && strstr(txt, "frtest-300;") &&
			      !strstr(txt, "frtest-400;"),
		      "children, folded: %s", txt ? txt : "(null)");
		free(txt);
	}
	out_free(&o);
	ring_done(r);

	/* The rate of the profile is the lowest of the extended targets: a
	 * child collected at 49 Hz brings its parent's 99 Hz down. */
	r = ring_create("children-rates");
	if (!r)
		return;
	w_init(&w, r);
	t = T0 + SEC;
	add_n(&w, &t, FAM(100), 40, 99, ST_USER);
	w_seal(&w);
	t = T0 + 2 * SEC;
	add_n(&w, &t, FAM(200), 10, 49, ST_USER);
	w_fini(&w);
	req_init(&q, T0, T0 + 60 * SEC, 0);
	q.npids = 1;
	q.pids[0] = FAM(100);
	if (run(r, &q, &res, &o, "children-rate-off") == 0)
		CHECK(res.hz == 99 && res.samples_seen == 40, "without children: %u Hz, seen %"
		      PRIu64, res.hz, res.samples_seen);
	out_free(&o);
	q.children = 1;
	if (run(r, &q, &res, &o, "children-rate") == 0)
		CHECK(res.hz == 49 && res.samples_seen == 50 && res.events[0].min_rate == 49 &&
			      res.events[0].max_rate == 99 && res.samples_kept < 50,
		      "with children: %u Hz, seen %" PRIu64 " kept %" PRIu64 ", rates %u..%u",
		      res.hz, res.samples_seen, res.samples_kept, res.events[0].min_rate,
		      res.events[0].max_rate);
	out_free(&o);
	ring_done(r);
}

/* The kernel's counters, per event and only of the events asked for. */
static void test_event_losses(void)
{
	static const uint32_t cpu_pf[] = {FR_EVENT_CPU, FR_EVENT_PAGE_FAULTS};
	struct fr_ring *r = ring_create("losses");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int before = failures;

	if (!r)
		return;
	w_init(&w, r);
	for (int i = 0; i < 10; i++) {
		w_add(&w, T0 + i * PERIOD_99, PID_APP, PID_APP, 0, 99, ST_USER);
		w_add_ev(&w, T0 + i * PERIOD_99 + 7, PID_APP, PID_APP, 1, FR_EVENT_PAGE_FAULTS, 99,
			 2, ST_USER);
	}
	fr_chunk_builder_count(w.b, FR_EVENT_CPU, 10, 1, 5);
	fr_chunk_builder_count(w.b, FR_EVENT_PAGE_FAULTS, 7, 0, 2);
	fr_chunk_builder_count(w.b, FR_EVENT_CYCLES, 100, 100, 100);
	w_seal(&w);
	w_add(&w, T0 + SEC, PID_APP, PID_APP, 0, 99, ST_USER);
	fr_chunk_builder_count(w.b, FR_EVENT_CPU, 2, 2, 0);
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	req_events(&q, 2, cpu_pf);
	if (run(r, &q, &res, &o, "losses") == 0) {
		CHECK(res.lost == 19, "lost %" PRIu64 ", want 19 (cpu 12 + page-faults 7)",
		      res.lost);
		CHECK(res.events[0].lost == 12 && res.events[0].throttled == 3 &&
			      res.events[0].truncated == 5,
		      "cpu counters %" PRIu64 " %" PRIu64 " %" PRIu64 ", want 12 3 5",
		      res.events[0].lost, res.events[0].throttled, res.events[0].truncated);
		CHECK(res.events[1].lost == 7 && res.events[1].throttled == 0 &&
			      res.events[1].truncated == 2,
		      "page-faults counters %" PRIu64 " %" PRIu64 " %" PRIu64 ", want 7 0 2",
		      res.events[1].lost, res.events[1].throttled, res.events[1].truncated);
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(strstr(raw.text, "Comment: cpu: 12 samples lost by the kernel"),
			      "no cpu lost comment");
			CHECK(strstr(raw.text, "Comment: cpu: the kernel throttled sampling 3 times"),
			      "no cpu throttled comment");
			CHECK(strstr(raw.text, "Comment: cpu: 5 stacks were truncated at 127 frames"),
			      "no cpu truncated comment");
			CHECK(strstr(raw.text, "Comment: page-faults: 7 samples lost by the kernel"),
			      "no page-faults lost comment");
			CHECK(strstr(raw.text,
				     "Comment: page-faults: 2 stacks were truncated at 127 frames"),
			      "no page-faults truncated comment");
			CHECK(!strstr(raw.text, "page-faults: the kernel throttled"),
			      "a throttling comment for page-faults, which was not throttled");
			CHECK(!strstr(raw.text, "cycles"), "counters of cycles, not asked for");
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the profile");
		}
	}
	out_free(&o);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	if (run(r, &q, &res, &o, "losses-cpu") == 0) {
		CHECK(res.lost == 12 && res.nevents == 1, "cpu only: lost %" PRIu64 ", want 12",
		      res.lost);
		if (raw_parse(&raw, o.path) == 0) {
			CHECK(!strstr(raw.text, "page-faults"), "page-faults in a cpu profile");
			raw_free(&raw);
		}
	}
	out_free(&o);
	ring_done(r);
}

/* A raw PMU event is a column named after its code. */
static void test_raw_event(void)
{
	const uint32_t raw_id = FR_EVENT_RAW_BASE | 0x1a2;
	const uint32_t events[] = {FR_EVENT_CPU, raw_id};
	struct fr_ring *r = ring_create("raw");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	int before = failures;
	char *top;

	if (!r)
		return;
	w_init(&w, r);
	for (int i = 0; i < 20; i++) {
		w_add(&w, T0 + i * PERIOD_99, PID_DB, PID_DB, 0, 99, ST_USER);
		if (i % 2)
			w_add_ev(&w, T0 + i * PERIOD_99 + 3, PID_DB, PID_DB, 1, raw_id, 99, 5000,
				 ST_KERNEL);
	}
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	req_events(&q, 2, events);
	if (run(r, &q, &res, &o, "raw") == 0) {
		CHECK(res.events[1].event == raw_id && res.events[1].samples_kept == 10,
		      "raw event result %#x kept %" PRIu64, res.events[1].event,
		      res.events[1].samples_kept);
		if (raw_parse(&raw, o.path) == 0) {
			const struct rsample *s = find_pid(&raw, ST_KERNEL, PID_DB);

			CHECK(strcmp(raw.types, "samples/count cpu/nanoseconds[dflt] raw:0x1a2/count") ==
				      0,
			      "sample types \"%s\"", raw.types);
			CHECK(s && s->v[0] == 10 && s->v[1] == 0 && s->v[2] == 50000,
			      "raw row [%" PRId64 " %" PRId64 " %" PRId64 "], want [10 0 50000]",
			      s ? s->v[0] : -1, s ? s->v[1] : -1, s ? s->v[2] : -1);
			CHECK(strstr(raw.text, "Comment: raw:0x1a2 sampled at 99 Hz"),
			      "no raw event comment");
			dump_on_failure(&raw, before);
			raw_free(&raw);
		} else {
			CHECK(0, "go tool pprof cannot read the raw-event profile");
		}
		top = pprof_top(o.path, "-sample_index=raw:0x1a2");
		CHECK(top && strstr(top, "Type: raw:0x1a2") && strstr(top, "of 50000 total"),
		      "-sample_index=raw:0x1a2: %s", top ? top : "(failed)");
		free(top);
	}
	out_free(&o);
	ring_done(r);
}

/* Requests the query cannot answer are refused with a reason. */
static void test_bad_events(void)
{
	struct fr_ring *r = ring_create("bad-events");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o = {0};
	char err[512];

	if (!r)
		return;
	req_init(&q, T0, T0 + SEC, 0);
	q.nevents = 2;
	q.events[0] = FR_EVENT_CYCLES;
	q.events[1] = FR_EVENT_CYCLES;
	CHECK(fr_profile_write(r, &q, sink_mem, &o, &res, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "cycles"),
	      "an event twice: \"%s\"", err);
	q.nevents = FR_PROFILE_MAX_EVENTS + 1;
	CHECK(fr_profile_write(r, &q, sink_mem, &o, &res, err, sizeof(err)) == -EINVAL,
	      "too many events: \"%s\"", err);
	q.nevents = 1;
	q.events[0] = FR_EVENT_COUNT + 3;
	CHECK(fr_profile_write(r, &q, sink_mem, &o, &res, err, sizeof(err)) == -EINVAL,
	      "an unknown event: \"%s\"", err);
	CHECK(o.len == 0, "a refused request wrote %zu bytes", o.len);
	free(o.buf);
	ring_done(r);
}

static void setup_go_env(void)
{
	char path[300];

	setenv("HOME", tmpdir, 1);
	snprintf(path, sizeof(path), "%s/gocache", tmpdir);
	setenv("GOCACHE", path, 1);
	setenv("PPROF_TMPDIR", tmpdir, 1);
	unsetenv("PPROF_BINARY_PATH");
}

/* Stops after `left` more chunks. */
static int stop_after(void *arg)
{
	int *left = arg;

	return (*left)-- <= 0;
}

/* A query under a memory budget: its estimate grows with the window's
 * samples (400 bytes each); a decoded-chunk cache of one byte gives the same profile (the
 * chunks are decoded again); a stop callback ends the query with
 * -ECANCELED and says why. */
static void test_budget_and_stop(void)
{
	struct fr_ring *r = ring_create("budget");
	struct fr_profile_request q;
	struct fr_profile_result res, res_small;
	struct out o = {0}, o_small = {0};
	struct writer w;
	char err[512] = "";
	int64_t e_all, e_none;
	int left, ret;

	if (!r)
		return;
	w_init(&w, r);
	for (int i = 0; i < 2000; i++)
		w_add(&w, T0 + i * (SEC / 100), PID_APP, PID_APP, 0, 99,
		      i % 2 ? ST_USER : ST_KERNEL);
	w_fini(&w);

	req_init(&q, T0, T0 + 20 * SEC, 0);
	e_all = fr_profile_estimate(r, &q);
	req_init(&q, T0 + 1000 * SEC, T0 + 1010 * SEC, 0);
	e_none = fr_profile_estimate(r, &q);
	CHECK(e_none > 0 && e_all >= e_none + 2000 * 400,
	      "estimates: 2000 samples %" PRId64 ", none %" PRId64, e_all, e_none);

	req_init(&q, T0, T0 + 20 * SEC, 0);
	if (run(r, &q, &res, &o, "budget-full") == 0) {
		q.cache_bytes = 1;
		if (run(r, &q, &res_small, &o_small, "budget-nocache") == 0)
			CHECK(res_small.samples_kept == res.samples_kept &&
				      res_small.stacks == res.stacks && o_small.len == o.len &&
				      memcmp(o_small.buf, o.buf, o.len) == 0,
			      "without a cache: kept %" PRIu64 " stacks %" PRIu64 " (want %" PRIu64
			      ", %" PRIu64 ")", res_small.samples_kept, res_small.stacks,
			      res.samples_kept, res.stacks);
	}
	out_free(&o);
	out_free(&o_small);

	req_init(&q, T0, T0 + 20 * SEC, 0);
	left = 1;
	q.stop = stop_after;
	q.stop_arg = &left;
	memset(&o, 0, sizeof(o));
	ret = fr_profile_write(r, &q, sink_mem, &o, &res, err, sizeof(err));
	CHECK(ret == -ECANCELED && strcmp(err, "stopped: the client went away") == 0,
	      "stopped query: %d \"%s\"", ret, err);
	CHECK(o.len == 0, "a stopped query wrote %zu bytes", o.len);
	out_free(&o);
	ring_done(r);
}

int main(void)
{
	char cmd[300];
	int fd;

	go = getenv("FR_GO");
	if (!go || !*go) {
		fprintf(stderr, "SKIP: FR_GO is not set; go tool pprof is needed to read the "
				"profiles\n");
		return 77;
	}
	if (access(go, X_OK) != 0) {
		fprintf(stderr, "SKIP: FR_GO=%s is not executable\n", go);
		return 77;
	}
	if (load_self() != 0) {
		fprintf(stderr, "cannot find this binary's executable mappings\n");
		return 1;
	}
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	setup_go_env();
	snprintf(kallsyms_path, sizeof(kallsyms_path), "%s/kallsyms", tmpdir);
	fd = open(kallsyms_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, fake_kallsyms, strlen(fake_kallsyms)) !=
			      (ssize_t)strlen(fake_kallsyms)) {
		fprintf(stderr, "cannot write %s\n", kallsyms_path);
		return 1;
	}
	close(fd);
	init_stacks();

	test_window();
	test_pid_filter();
	test_aggregation();
	test_folded();
	test_downsampling();
	test_mixed_rates();
	test_short_ring();
	test_budget_and_stop();
	test_corrupt_chunk();
	test_result_fields();
	test_counters_only_chunk();
	test_two_events();
	test_event_downsampling();
	test_offcpu();
	test_comm_filter();
	test_uid_filter();
	test_cgroup_filter();
	test_children();
	test_event_losses();
	test_raw_event();
	test_bad_events();

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
