/* The symbol cache's Python names (recorder/tracking/symcache.h
 * fr_symcache_python_status(), fr_symcache_want_pycode()), built with the
 * cache, the CPython readers and core alone: a real python3 child asleep
 * in a known function is found (fr_python_proc_find()), its frames read
 * (fr_py_threads_read()), the cache asked for their code objects and a
 * bogus address; the file, read back with the core reader
 * (core/symbols/pycodes.h), names the function, its file, first line and
 * the line it sleeps on, keeps the status written before, counts the
 * address that did not read; an ask again replaces, a status keeps the
 * records; a pid that is not the process started then gets nothing; a
 * symlink planted at a file's name is replaced, not followed; a user's
 * file is counted to that user. Skips (77) without /usr/bin/python3. */
#include "recorder/tracking/symcache.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/symbols/pycodes.h"
#include "core/util/shares.h"
#include "core/util/time.h"
#include "core/util/vmread.h"
#include "recorder/tracking/proc.h"
#include "recorder/tracking/python_proc.h"
#include "recorder/tracking/python_read.h"
#include "tests/unit/check.h"

#define PYTHON "/usr/bin/python3"
#define SLEEP_LINE 4
#define PROBLEM "test: not read"

static const char script[] = "import sys, time\n"
			     "def sleeper_fn():\n"
			     "    sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
			     "    time.sleep(1000)\n"
			     "sleeper_fn()\n";

static char dir[64], cache[128], file[128];
/* The size of the file of check_names() (with a problem in its header). */
static off_t full_size;

static int mem_read(void *arg, uint64_t addr, void *buf, size_t n)
{
	return fr_proc_vm_read(*(const uint32_t *)arg, addr, buf, n);
}

static int mem_readv(void *arg, size_t n, const uint64_t *addr, const size_t *len, void **buf)
{
	return fr_proc_vm_readv(*(const uint32_t *)arg, n, addr, len, buf);
}

/* Starts the script; returns its pid once it says it is ready (10 s at
 * most), else -1. */
static pid_t start_child(void)
{
	int fds[2];
	char buf[16] = "";
	struct pollfd p;
	FILE *f = fopen(file, "w");
	pid_t pid;

	if (!f || fputs(script, f) < 0 || fclose(f) != 0 || pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		execl(PYTHON, PYTHON, "-S", file, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	p = (struct pollfd){.fd = fds[0], .events = POLLIN};
	if (pid < 0 || poll(&p, 1, 10000) != 1 || read(fds[0], buf, sizeof(buf) - 1) <= 0 ||
	    strncmp(buf, "ready", 5) != 0) {
		close(fds[0]);
		return pid > 0 ? -pid : -1;
	}
	close(fds[0]);
	/* Ready was said just before the sleep: asleep from now on. */
	for (int64_t end = fr_clock_ns(CLOCK_MONOTONIC) + 10 * FR_NS_PER_S;
	     fr_clock_ns(CLOCK_MONOTONIC) < end;) {
		struct fr_proc_stat ps;

		if (fr_proc_read_stat("/proc", (uint32_t)pid, &ps) == 0 && ps.state == 'S')
			return pid;
		poll(NULL, 0, 1);
	}
	return -pid;
}

/* The start of `pid` as the tracker records it (Unix ns). */
static int64_t start_of(pid_t pid)
{
	struct fr_proc_stat ps;
	int64_t boot = fr_clock_ns(CLOCK_REALTIME) - fr_clock_ns(CLOCK_BOOTTIME);

	if (fr_proc_read_stat("/proc", (uint32_t)pid, &ps) < 0)
		return 0;
	return boot +
	       (int64_t)(ps.start * ((uint64_t)FR_NS_PER_S / (uint64_t)sysconf(_SC_CLK_TCK)));
}

struct frames {
	uint64_t code[FR_PY_DEPTH];
	uint32_t offset[FR_PY_DEPTH];
	uint32_t n;
};

static int main_thread(void *arg, const struct fr_py_thread *t)
{
	struct frames *f = arg;

	/* The only thread: the main one, in sleeper_fn under <module>. */
	f->n = t->nframes;
	for (uint32_t i = 0; i < t->nframes; i++) {
		f->code[i] = t->frames[i].code;
		f->offset[i] = t->frames[i].offset;
	}
	return 0;
}

static struct fr_pycodes *load(uint32_t pid, int64_t start_ns, uint32_t uid)
{
	char path[256];
	struct fr_pycodes *p = NULL;
	int fd;

	fr_symcache_python_name(path, sizeof(path), cache, pid, start_ns, uid);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && fr_pycodes_load(fd, &p) < 0)
		p = NULL;
	if (fd >= 0)
		close(fd);
	return p;
}

/* The names of the child's frames, asked with a bogus address. */
static void check_names(struct fr_symcache *c, const struct fr_symcache_pyproc *pp,
			const struct frames *f)
{
	uint64_t asked[FR_PY_DEPTH + 1];
	char path[256];
	struct stat st;
	struct fr_symcache_pycounts k;
	const struct fr_pycode *r;
	struct fr_pycodes *p;

	memcpy(asked, f->code, f->n * sizeof(*asked));
	asked[f->n] = 0x10000; /* not mapped */
	CHECK(fr_symcache_python_status(c, pp->pid, pp->start_ns, 0, pp->x.version, NULL) == 0,
	      "status asked");
	CHECK(fr_symcache_want_pycode(c, pp, asked, f->n + 1) == 0, "codes asked");
	CHECK(fr_symcache_wait(c, 20000) == 0, "asks done");
	p = load(pp->pid, pp->start_ns, 0);
	CHECK(p, "the file reads back");
	if (!p)
		return;
	CHECK(strcmp(fr_pycodes_version(p), pp->x.version) == 0 && !fr_pycodes_problem(p)[0],
	      "version '%s' and no problem '%s'", fr_pycodes_version(p), fr_pycodes_problem(p));
	CHECK(fr_pycodes_count(p) == f->n, "%zu records for %u frames", fr_pycodes_count(p), f->n);
	r = fr_pycodes_find(p, f->code[0]);
	CHECK(r && strcmp(r->qualname, "sleeper_fn") == 0, "innermost: %s",
	      r ? r->qualname : "none");
	CHECK(r && strcmp(r->file, file) == 0, "file %s", r ? r->file : "none");
	CHECK(r && r->firstline == 2, "first line %d", r ? r->firstline : -1);
	CHECK(r && fr_py_line(r->kind, r->linetable, r->nlinetable, r->firstline, f->offset[0]) ==
			      SLEEP_LINE,
	      "the line it sleeps on");
	r = fr_pycodes_find(p, f->code[f->n - 1]);
	CHECK(r && strcmp(r->qualname, "<module>") == 0, "outermost: %s", r ? r->qualname : "none");
	CHECK(!fr_pycodes_find(p, 0x10000), "the bogus address has no record");
	fr_pycodes_free(p);
	fr_symcache_python_counts(c, &k);
	CHECK(k.read == f->n && k.unread == 1 && !k.dropped, "counts %llu read %llu unread",
	      (unsigned long long)k.read, (unsigned long long)k.unread);

	/* Asked again: replaced, not doubled; a status keeps the records. */
	CHECK(fr_symcache_want_pycode(c, pp, f->code, f->n) == 0, "asked again");
	CHECK(fr_symcache_python_status(c, pp->pid, pp->start_ns, 0, pp->x.version, PROBLEM) == 0,
	      "a problem");
	CHECK(fr_symcache_wait(c, 20000) == 0, "asks done");
	p = load(pp->pid, pp->start_ns, 0);
	fr_symcache_python_name(path, sizeof(path), cache, pp->pid, pp->start_ns, 0);
	full_size = stat(path, &st) == 0 ? st.st_size : 0;
	CHECK(p && fr_pycodes_count(p) == f->n && strcmp(fr_pycodes_problem(p), PROBLEM) == 0,
	      "records kept under the new status");
	fr_pycodes_free(p);
}

/* A pid asked with another start time is not read; a symlink at a
 * file's name is replaced; a user's file is that user's. */
static void check_hostile(struct fr_symcache *c, const struct fr_symcache_pyproc *pp,
			  const struct frames *f)
{
	struct fr_symcache_pyproc other = *pp;
	char link[256], target[256];
	struct fr_share sh[8], rest;
	struct stat st;
	uint64_t budget;
	size_t n;
	bool user = false;

	other.start_ns = pp->start_ns - 3600 * FR_NS_PER_S;
	CHECK(fr_symcache_want_pycode(c, &other, f->code, f->n) == 0, "asked");
	CHECK(fr_symcache_wait(c, 20000) == 0, "asks done");
	fr_symcache_python_name(link, sizeof(link), cache, other.pid, other.start_ns, 0);
	CHECK(access(link, F_OK) < 0, "no file for a process that is not the one asked");

	snprintf(target, sizeof(target), "%s/target", dir);
	close(open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	fr_symcache_python_name(link, sizeof(link), cache, 999999, 123, 0);
	CHECK(symlink(target, link) == 0, "symlink planted");
	CHECK(fr_symcache_python_status(c, 999999, 123, 0, "3.11.2", NULL) == 0, "status asked");
	CHECK(fr_symcache_python_status(c, 999998, 123, 1234, "3.12.1",
					"release 3.12 not supported") == 0,
	      "a user's status asked");
	CHECK(fr_symcache_wait(c, 20000) == 0, "asks done");
	CHECK(lstat(link, &st) == 0 && S_ISREG(st.st_mode), "the symlink replaced by the file");
	CHECK(stat(target, &st) == 0 && st.st_size == 0, "its target untouched");
	n = fr_symcache_owners(c, sh, 8, &rest, &budget);
	for (size_t i = 0; i < n; i++)
		user |= sh[i].uid == 1234 && sh[i].entries == 1;
	CHECK(user, "python-PID-START.u1234.codes counted to user 1234");
}

/* A cache whose file_max is a byte short of the file with every record
 * (check_names()'s but for its problem): the last is dropped, counted. */
static void check_bounds(const struct fr_symcache_pyproc *pp, const struct frames *f)
{
	struct fr_symcache_options o = {.max_bytes = 64 << 20,
					.file_max = (uint64_t)full_size - strlen(PROBLEM) - 1};
	struct fr_symcache_pycounts k;
	struct fr_symcache *c = NULL;
	struct fr_pycodes *p;
	char err[256];

	snprintf(cache, sizeof(cache), "%s/small", dir);
	o.dir = cache;
	CHECK(fr_symcache_open(&c, &o, err, sizeof(err)) == 0, "cache opened: %s", err);
	if (!c)
		return;
	CHECK(fr_symcache_want_pycode(c, pp, f->code, f->n) == 0, "codes asked");
	CHECK(fr_symcache_wait(c, 20000) == 0, "asks done");
	fr_symcache_python_counts(c, &k);
	p = load(pp->pid, pp->start_ns, 0);
	CHECK(full_size > 0 && p && fr_pycodes_count(p) == f->n - 1 && k.dropped == 1,
	      "%zu records kept, %llu dropped", p ? fr_pycodes_count(p) : 0,
	      (unsigned long long)k.dropped);
	fr_pycodes_free(p);
	fr_symcache_close(c);
}

int main(void)
{
	struct fr_symcache_options o = {.max_bytes = 64 << 20};
	struct fr_symcache_pyproc pp = {0};
	struct fr_symcache *c = NULL;
	struct fr_py_stats st;
	struct frames f = {0};
	struct fr_py_mem mem = {mem_read, mem_readv, &pp.pid};
	char err[256], path[4096], cmd[160];
	pid_t pid;
	int ret;

	if (access(PYTHON, X_OK) < 0) {
		printf("SKIP: no %s\n", PYTHON);
		return 77;
	}
	snprintf(dir, sizeof(dir), "/tmp/fr-symcache-py.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	snprintf(file, sizeof(file), "%s/sleeper.py", dir);
	o.dir = cache;
	pid = start_child();
	CHECK(pid > 0, "python3 started");
	if (pid > 0) {
		pp.pid = (uint32_t)pid;
		pp.start_ns = start_of(pid);
		ret = fr_python_proc_find(pp.pid, &pp.x, &pp.bias, path, sizeof(path));
		CHECK(ret == 0, "interpreter of %s found: %d", path, ret);
		ret = ret ? ret : fr_py_threads_read(&pp.x, pp.bias, &mem, main_thread, &f, &st);
		CHECK(ret == 0 && f.n >= 2, "frames read: %d, %u", ret, f.n);
		CHECK(fr_symcache_open(&c, &o, err, sizeof(err)) == 0, "cache opened: %s", err);
		if (c && f.n >= 2) {
			check_names(c, &pp, &f);
			check_hostile(c, &pp, &f);
		}
		fr_symcache_close(c);
		if (f.n >= 2)
			check_bounds(&pp, &f);
	}
	if (pid > 0 || pid < -1) {
		kill(pid > 0 ? pid : -pid, SIGKILL);
		waitpid(pid > 0 ? pid : -pid, NULL, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	return failures ? 1 : 0;
}
