/* The symbol cache's Python names (symcache.h): a CPython process's file
 * python-PID-START_NS[.uUID].codes (core/symbols/pycodes.h), its header
 * written when the ingest says what the process is, its records when
 * samples ran code objects not asked for before.
 *
 * The asks come from the ingest thread and are queued like the copies
 * (symcache.c: a user's turn, its share of the queue); an ask of codes
 * joins a waiting ask of the same process, so a process whose samples
 * find new code every few milliseconds costs one rewrite per turn, not
 * one per ask. On the worker, under the cache's deadline: the pid is
 * checked to be the process started at START_NS (a pid reused would give
 * another process's names), each code object read from its memory with
 * fr_py_code_read() (every pointer and length in it untrusted), and the
 * file written anew with its old records and the new ones. The cache's
 * thread runs one job at a time, so the read-modify-write of a file is
 * not raced but by a job abandoned past its deadline (names lost, never
 * a torn file: each write is a rename).
 */
#include "recorder/tracking/symcache.h"
#include "recorder/tracking/symcache_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/symbols/pycodes.h"
#include "core/util/grow.h"
#include "core/util/hash.h"
#include "core/util/time.h"
#include "core/util/vmread.h"
#include "recorder/tracking/proc.h"
#include "recorder/tracking/python_read.h"

/* A waiting ask of codes takes others of its process up to this many. */
#define MERGE_MAX (4 * FR_SYMCACHE_PYCODES_ASK)
/* Codes a sweep takes from the threads' stacks, at most. */
#define SWEEP_MAX 4096
/* The same status is written again at most this often. */
#define STATUS_REFRESH_NS (60 * FR_NS_PER_S)
/* How far the start time read now may be from the one the chunks
 * recorded (the boot time both are counted from moves with clock
 * adjustments) and still be the same process's. */
#define START_SLACK_NS (2 * FR_NS_PER_S)

struct job_py {
	struct fr_python_exe x;
	uint64_t bias;
	char version[FR_PYCODES_VERSION_MAX];
	char problem[FR_PYCODES_PROBLEM_MAX];
	bool sweep; /* and the codes on every thread's stack */
	size_t ncodes, cap;
	uint64_t codes[];
};

void symcache_job_free(struct job *j)
{
	if (!j)
		return;
	free(j->py);
	free(j);
}

/* ---- asks ---- */

static struct job *job_new(enum job_kind kind, uint32_t pid, int64_t start_ns, uid_t uid,
			   size_t cap)
{
	struct job *j = calloc(1, sizeof(*j) + 1);

	if (!j || !(j->py = calloc(1, sizeof(*j->py) + cap * sizeof(uint64_t)))) {
		free(j);
		return NULL;
	}
	j->kind = kind;
	j->pid = pid;
	j->start_ns = start_ns;
	j->uid = uid;
	j->py->cap = cap;
	return j;
}

int fr_symcache_python_status(struct fr_symcache *c, uint32_t pid, int64_t start_ns, uid_t uid,
			      const char *version, const char *problem)
{
	/* pid, start and the status's hash: no build id is 14 bytes. */
	uint8_t key[14];
	uint16_t h;
	struct job *j;
	int ret;

	if (!c)
		return 0; /* no cache: nothing to keep */
	if (start_ns <= 0)
		return -EINVAL;
	if (!(j = job_new(JOB_PYSTATUS, pid, start_ns, uid, 0)))
		return -ENOMEM;
	snprintf(j->py->version, sizeof(j->py->version), "%s", version ? version : "");
	snprintf(j->py->problem, sizeof(j->py->problem), "%s", problem ? problem : "");
	h = (uint16_t)fr_fnv1a(fr_fnv1a(FR_FNV_OFFSET, j->py->version, strlen(j->py->version) + 1),
			       j->py->problem, strlen(j->py->problem));
	memcpy(key, &pid, 4);
	memcpy(key + 4, &start_ns, 8);
	memcpy(key + 12, &h, 2);
	ret = symcache_ask(c, j, key, sizeof(key), STATUS_REFRESH_NS, NULL);
	if (ret <= 0)
		symcache_job_free(j);
	return ret < 0 ? ret : 0;
}

/* Adds the codes of ask `j` to the waiting ask `q` of the same process
 * when they fit. Under the cache's lock. */
static bool merge_codes(struct job *q, const struct job *j)
{
	struct job_py *p;

	if (q->kind != JOB_PYCODES || q->pid != j->pid || q->start_ns != j->start_ns ||
	    q->py->ncodes + j->py->ncodes > MERGE_MAX)
		return false;
	if (q->py->ncodes + j->py->ncodes > q->py->cap) {
		size_t cap = q->py->cap * 2 > MERGE_MAX ? MERGE_MAX : q->py->cap * 2;

		cap = cap < q->py->ncodes + j->py->ncodes ? q->py->ncodes + j->py->ncodes : cap;
		if (!(p = realloc(q->py, sizeof(*p) + cap * sizeof(uint64_t))))
			return false;
		q->py = p;
		q->py->cap = cap;
	}
	memcpy(q->py->codes + q->py->ncodes, j->py->codes, j->py->ncodes * sizeof(uint64_t));
	q->py->ncodes += j->py->ncodes;
	q->py->sweep |= j->py->sweep;
	/* The later ask's view of the interpreter wins. */
	q->py->x = j->py->x;
	q->py->bias = j->py->bias;
	return true;
}

int fr_symcache_want_pycode(struct fr_symcache *c, const struct fr_symcache_pyproc *p,
			    const uint64_t *codes, size_t n)
{
	struct job *j;
	int ret;

	if (!c)
		return 0; /* no cache: nothing to keep */
	if (!p || p->start_ns <= 0 || (!n && !p->sweep) || n > FR_SYMCACHE_PYCODES_ASK)
		return -EINVAL;
	if (!(j = job_new(JOB_PYCODES, p->pid, p->start_ns, p->uid, n)))
		return -ENOMEM;
	j->py->x = p->x;
	j->py->bias = p->bias;
	j->py->sweep = p->sweep;
	if (n)
		memcpy(j->py->codes, codes, n * sizeof(*codes));
	j->py->ncodes = n;
	ret = symcache_ask(c, j, NULL, 0, 0, merge_codes);
	if (ret <= 0)
		symcache_job_free(j);
	return ret < 0 ? ret : 0;
}

/* ---- on the worker ---- */

/* Whether process `pid` is still the one started at `start_ns`. */
static bool same_process(uint32_t pid, int64_t start_ns)
{
	struct fr_proc_stat ps;
	long tck = sysconf(_SC_CLK_TCK);
	int64_t boot = fr_clock_ns(CLOCK_REALTIME) - fr_clock_ns(CLOCK_BOOTTIME), now;

	if (fr_proc_read_stat("/proc", pid, &ps) < 0 || ps.fields < 22)
		return false;
	now = boot +
	      (int64_t)(ps.start * ((uint64_t)FR_NS_PER_S / (uint64_t)(tck > 0 ? tck : 100)));
	return now - start_ns < START_SLACK_NS && start_ns - now < START_SLACK_NS;
}

/* The file `name` as it is (NULL when missing or spoilt: written anew),
 * and whether it was there. */
static struct fr_pycodes *load_old(struct copy_call *c, const char *name, bool *there)
{
	struct fr_pycodes *p = NULL;
	int fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	*there = fd >= 0;
	if (fd < 0)
		return NULL;
	if (fr_pycodes_load(fd, &p) < 0)
		p = NULL;
	close(fd);
	return p;
}

static int vread(void *arg, uint64_t addr, void *buf, size_t n)
{
	return fr_proc_vm_read(*(const uint32_t *)arg, addr, buf, n);
}

static int vreadv(void *arg, size_t n, const uint64_t *addr, const size_t *len, void **buf)
{
	return fr_proc_vm_readv(*(const uint32_t *)arg, n, addr, len, buf);
}

static int by_addr(const void *x, const void *y)
{
	const struct fr_pycode *a = x, *b = y;

	return (a->code > b->code) - (a->code < b->code);
}

/* Reads the codes of `j` into recs (as many as read; c->py counts the
 * rest) and sorts them. `got` holds what the records point to. Returns
 * the number of records. */
static size_t read_codes(struct copy_call *c, const struct job *j, const uint64_t *codes,
			 size_t ncodes, struct fr_py_code *got, struct fr_pycode *recs)
{
	uint32_t pid = j->pid;
	struct fr_py_mem mem = {vread, vreadv, &pid};
	uint64_t bytes = 0,
		 max = c->file_max < FR_PYCODES_MAX_SIZE ? c->file_max : FR_PYCODES_MAX_SIZE;
	size_t n = 0;

	for (size_t i = 0; i < ncodes; i++) {
		uint64_t a = codes[i];

		/* What would not fit in the file is not read: a process's line
		 * tables (256 KiB each) cannot make the recorder hold more. */
		if (bytes > max) {
			c->py.dropped += ncodes - i;
			break;
		}
		if (fr_py_code_read(&j->py->x, j->py->bias, &mem, a, &got[n]) < 0) {
			c->py.unread++;
			continue;
		}
		/* As encoded (core/symbols/pycodes.h): 21 bytes and the rest. */
		bytes += 21 + strlen(got[n].qualname) + strlen(got[n].file) + got[n].nlinetable;
		recs[n] = (struct fr_pycode){a,
					     got[n].firstline,
					     got[n].linetable_kind,
					     got[n].qualname,
					     got[n].file,
					     got[n].linetable,
					     got[n].nlinetable};
		n++;
	}
	qsort(recs, n, sizeof(*recs), by_addr);
	return n;
}

/* Writes the file `name`: the header of `version` and `problem`, the
 * records of `old` not among the `nnew` sorted ones of `fresh`, then
 * those. Returns 0 or -errno. */
static int write_file(struct copy_call *c, const char *name, const char *version,
		      const char *problem, const struct fr_pycodes *old,
		      const struct fr_pycode *fresh, size_t nnew)
{
	size_t nold = old ? fr_pycodes_count(old) : 0, n = 0, len, kept;
	struct fr_pycode *all = malloc((nold + nnew + 1) * sizeof(*all));
	uint8_t *buf = NULL;
	int ret;

	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < nold; i++) {
		const struct fr_pycode *r = fr_pycodes_at(old, i);

		if (!nnew || !bsearch(r, fresh, nnew, sizeof(*fresh), by_addr))
			all[n++] = *r;
	}
	if (nnew)
		memcpy(all + n, fresh, nnew * sizeof(*fresh));
	n += nnew;
	ret = fr_pycodes_encode(version, problem, all, n, c->file_max, &buf, &len, &kept);
	if (ret == 0) {
		c->py.dropped += n - kept;
		ret = symcache_write_buf(c, buf, len, name);
	}
	free(buf);
	free(all);
	return ret;
}

/* A sweep's codes: every frame's of every thread, added to *v. */
struct sweep {
	uint64_t *v;
	size_t n, cap;
};

static int sweep_thread(void *arg, const struct fr_py_thread *t)
{
	struct sweep *s = arg;

	for (uint32_t i = 0; i < t->nframes && s->n < SWEEP_MAX; i++) {
		if (FR_GROW(s->v, &s->cap, s->n + 1, 256) < 0)
			return -ENOMEM;
		s->v[s->n++] = t->frames[i].code;
	}
	return 0;
}

static int by_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* The codes to read: the ask's, and a sweep's when asked, each once.
 * Returns them (the caller frees) with their number in *n, or NULL. */
static uint64_t *codes_to_read(const struct job *j, size_t *n)
{
	uint32_t pid = j->pid;
	struct fr_py_mem mem = {vread, vreadv, &pid};
	struct sweep s = {0};
	struct fr_py_stats st;
	size_t k = 0;

	if (FR_GROW(s.v, &s.cap, j->py->ncodes + 1, 256) < 0)
		return NULL;
	memcpy(s.v, j->py->codes, j->py->ncodes * sizeof(uint64_t));
	s.n = j->py->ncodes;
	if (j->py->sweep)
		(void)fr_py_threads_read(&j->py->x, j->py->bias, &mem, sweep_thread, &s, &st);
	qsort(s.v, s.n, sizeof(*s.v), by_u64);
	for (size_t i = 0; i < s.n; i++)
		if (s.v[i] && (!k || s.v[k - 1] != s.v[i]))
			s.v[k++] = s.v[i];
	*n = k;
	return s.v;
}

static int run_codes(struct copy_call *c, const char *name, const struct fr_pycodes *old)
{
	const struct job *j = c->job;
	size_t ncodes = 0, n = 0;
	uint64_t *codes = codes_to_read(j, &ncodes);
	struct fr_py_code *got = codes ? calloc(ncodes + 1, sizeof(*got)) : NULL;
	struct fr_pycode *recs = codes ? calloc(ncodes + 1, sizeof(*recs)) : NULL;
	int ret = -ENOMEM;

	if (got && recs) {
		n = read_codes(c, j, codes, ncodes, got, recs);
		c->py.read += n;
		ret = write_file(c, name, old ? fr_pycodes_version(old) : j->py->x.version,
				 old ? fr_pycodes_problem(old) : "", old, recs, n);
	}
	for (size_t i = 0; got && i < n; i++)
		fr_py_code_fini(&got[i]);
	free(got);
	free(recs);
	free(codes);
	return ret;
}

void symcache_python_run(struct copy_call *c)
{
	const struct job *j = c->job;
	char name[128];
	struct fr_pycodes *old;
	struct stat st;
	bool there;

	c->ret = fr_symcache_python_name(name, sizeof(name), NULL, j->pid, j->start_ns, j->uid);
	if (c->ret < 0)
		return;
	if (j->kind == JOB_PYCODES && !same_process(j->pid, j->start_ns)) {
		c->py.unread += j->py->ncodes;
		c->ret = -ESRCH;
		return;
	}
	old = load_old(c, name, &there);
	/* Its disk is counted already: only the growth is added. */
	if (there && fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		c->bytes -= (uint64_t)st.st_blocks * 512;
	c->replaced = there;
	if (j->kind == JOB_PYCODES)
		c->ret = run_codes(c, name, old);
	else if (old && strcmp(fr_pycodes_version(old), j->py->version) == 0 &&
		 strcmp(fr_pycodes_problem(old), j->py->problem) == 0)
		/* Nothing new: used again, so evicted last. */
		c->ret = utimensat(c->dirfd, name, NULL, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	else
		c->ret = write_file(c, name, j->py->version, j->py->problem, old, NULL, 0);
	/* Shrunk, or not written: nothing added. */
	if ((int64_t)c->bytes < 0 || c->ret < 0)
		c->bytes = 0;
	fr_pycodes_free(old);
}
