/* CPython processes' Python stacks read from outside
 * (core/symbols/python_exe.h, recorder/tracking/python_read.h), against
 * every interpreter found: Debian's /usr/bin/python3 and pyenv's 3.10 to
 * 3.13 (under `pyenv root`, or $PYENV_ROOT). For each, a script written
 * here runs with four threads:
 *  - the main thread in hot_b, called from handle, called at module
 *    level, asleep on a known line;
 *  - a thread blocked on a lock in waiter, called from the method
 *    Worker.run;
 *  - a thread in sorted(key=keyfunc), keyfunc asleep: a C function
 *    calling back into Python;
 *  - a thread running an asyncio task: a coroutine awaiting another,
 *    asleep, both named in letters outside ASCII.
 * The interpreter's object (libpython3.X.so or the executable) gives the
 * release the script reports and, for 3.13, the layout its debug offsets
 * give equals the table's; the process, read with fr_proc_vm_read(v),
 * gives exactly those threads (the ids the script reports, each in
 * /proc/PID/task), their frames innermost first named (qualified from
 * 3.11), with the script's file, hot_b's line, and entry marks where the
 * eval loop was entered from C (every frame in 3.10). pyenv's releases
 * before 3.10 (3.7 on, which have _PyRuntime) are refused and named. And a
 * pthread_t is
 * the thread's fs base here (glibc), as the sample-time reader assumes.
 * Skips (77) when no interpreter is found. */
#include <asm/prctl.h>
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/symbols/python_exe.h"
#include "core/util/vmread.h"
#include "recorder/tracking/python_read.h"
#include "tests/unit/check.h"

/* Names of the coroutines, not ASCII: one in latin-1 ("étape"), one
 * needing UCS-2 ("serve_λ"). */
#define ETAPE "\xc3\xa9tape"
#define SERVE "serve_\xce\xbb"

/* Lines the frames should be on end with "#@NAME". */
static const char script[] =
	"import asyncio, os, sys, threading, time\n"
	"lock = threading.Lock()\n"
	"lock.acquire()\n"
	"def waiter():\n"
	"    lock.acquire() #@waiter\n"
	"class Worker:\n"
	"    def run(self):\n"
	"        waiter() #@Worker.run\n"
	"def keyfunc(v):\n"
	"    time.sleep(1000) #@keyfunc\n"
	"    return v\n"
	"def sorter():\n"
	"    return sorted([3, 1, 2], key=keyfunc) #@sorter\n"
	"def hot_b():\n"
	"    time.sleep(1000) #@hot_b\n"
	"def handle():\n"
	"    hot_b() #@handle\n"
	"async def " ETAPE "():\n"
	"    time.sleep(1000) #@" ETAPE "\n"
	"async def " SERVE "():\n"
	"    await " ETAPE "() #@" SERVE "\n"
	"def aio():\n"
	"    asyncio.run(" SERVE "())\n"
	"ids = {}\n"
	"def note(name, f):\n"
	"    def run():\n"
	"        ids[name] = (threading.get_ident(), threading.get_native_id())\n"
	"        f() #@note.<locals>.run\n"
	"    return run\n"
	"for name, f in (('waiter', Worker().run), ('sorter', sorter), ('aio', aio)):\n"
	"    threading.Thread(target=note(name, f), daemon=True).start()\n"
	"while len(ids) < 3:\n"
	"    time.sleep(0.01)\n"
	"with open(sys.argv[1] + '.tmp', 'w') as f:\n"
	"    print(sys.hexversion, threading.get_ident(), threading.get_native_id(),\n"
	"          *ids['waiter'], *ids['sorter'], *ids['aio'], file=f)\n"
	"os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
	"handle() #@<module>\n";

/* The line of the script that ends with "#@name". */
static int32_t line_of(const char *name)
{
	char mark[64];
	int32_t line = 1;

	snprintf(mark, sizeof(mark), "#@%s\n", name);
	for (const char *p = script; *p; p++) {
		if (*p == '#' && strncmp(p, mark, strlen(mark)) == 0)
			return line;
		line += *p == '\n';
	}
	return -1;
}

#define NTHREADS 4

struct ids {
	unsigned long hexversion;
	unsigned long long ident[NTHREADS];
	unsigned native[NTHREADS]; /* main, waiter, sorter, aio */
};

struct target {
	const char *label;
	pid_t pid;
	char dir[256], file[300];
	struct ids ids;
	struct fr_python_exe x;
	uint64_t bias;
	struct fr_py_mem mem;
};

static int mem_read(void *arg, uint64_t addr, void *buf, size_t n)
{
	return fr_proc_vm_read(*(const uint32_t *)arg, addr, buf, n);
}

static int mem_readv(void *arg, size_t n, const uint64_t *addr, const size_t *len, void **buf)
{
	return fr_proc_vm_readv(*(const uint32_t *)arg, n, addr, len, buf);
}

static pid_t start(const char *python, struct target *t)
{
	char ready[320];
	pid_t pid;
	FILE *f;

	snprintf(t->file, sizeof(t->file), "%s/frames.py", t->dir);
	snprintf(ready, sizeof(ready), "%s/ready", t->dir);
	f = fopen(t->file, "w");
	if (!f || fputs(script, f) < 0 || fclose(f) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		execl(python, python, "-S", t->file, ready, (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	for (int i = 0; pid > 0 && i < 1000; i++) {
		if ((f = fopen(ready, "r"))) {
			struct ids *d = &t->ids;
			int n = fscanf(f, "%lu", &d->hexversion);

			for (int k = 0; k < NTHREADS; k++)
				n += fscanf(f, "%llu %u", &d->ident[k], &d->native[k]);
			fclose(f);
			return n == 1 + 2 * NTHREADS ? pid : -pid;
		}
		usleep(10000);
	}
	return -pid;
}

/* The interpreter's object mapped into the process (libpython, else the
 * executable) and its load bias: where its offset-0 mapping starts,
 * less its first segment's page (0 for a shared object or a PIE). */
static int find_object(struct target *t)
{
	char maps[64], line[4400], path[4096], best[4096] = "";
	unsigned long long lo, off, base = 0;
	FILE *f;
	int fd, ret;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", t->pid);
	if (!(f = fopen(maps, "r")))
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		int lib;

		if (sscanf(line, "%llx-%*x %*s %llx %*s %*u %4095s", &lo, &off, path) != 3 || off)
			continue;
		lib = strstr(path, "/libpython3.") != NULL;
		if (lib || !best[0]) {
			snprintf(best, sizeof(best), "%s", path);
			base = lo;
		}
		if (lib)
			break;
	}
	fclose(f);
	if (!best[0] || (fd = open(best, O_RDONLY | O_CLOEXEC)) < 0)
		return -ENOENT;
	ret = fr_python_exe_read(fd, best, &t->x);
	close(fd);
	t->bias = t->x.pie ? base : 0;
	printf("%s: %s (%s, _PyRuntime at %#llx + %#llx%s)\n", t->label, best, t->x.version,
	       (unsigned long long)t->x.runtime, (unsigned long long)t->bias,
	       t->x.layout_from_debug_offsets ? ", layout from its debug offsets" : "");
	return ret;
}

/* ---- what the process gives ---- */

#define SNAP_THREADS 8

struct snap {
	unsigned n;
	struct fr_py_thread th[SNAP_THREADS];
};

static int keep(void *arg, const struct fr_py_thread *t)
{
	struct snap *s = arg;

	if (s->n < SNAP_THREADS)
		s->th[s->n] = *t;
	s->n++;
	return 0;
}

struct named {
	char name[FR_PY_NAME_MAX], file[FR_PY_FILE_MAX];
	int32_t line;
};

static int name_frame(const struct target *t, const struct fr_py_frame *f, struct named *n)
{
	struct fr_py_code c;
	int ret = fr_py_code_read(&t->x, t->bias, &t->mem, f->code, &c);

	if (ret < 0)
		return ret;
	snprintf(n->name, sizeof(n->name), "%s", c.qualname);
	snprintf(n->file, sizeof(n->file), "%s", c.file);
	n->line = fr_py_line(c.linetable_kind, c.linetable, c.nlinetable, c.firstline, f->offset);
	fr_py_code_fini(&c);
	return 0;
}

static const struct fr_py_thread *by_ident(const struct snap *s, unsigned long long ident)
{
	for (unsigned i = 0; i < s->n && i < SNAP_THREADS; i++)
		if (s->th[i].thread_id == ident)
			return &s->th[i];
	return NULL;
}

/* Whether each thread of the script sits where it should yet. */
static int settled(const struct target *t, const struct snap *s)
{
	static const char *const top[NTHREADS] = {"hot_b", "waiter", "keyfunc", ETAPE};
	struct named n;

	for (int k = 0; k < NTHREADS; k++) {
		const struct fr_py_thread *th = by_ident(s, t->ids.ident[k]);

		if (!th || !th->nframes || name_frame(t, &th->frames[0], &n) < 0 ||
		    strcmp(n.name, top[k]) != 0)
			return 0;
	}
	return 1;
}

static int read_settled(struct target *t, struct snap *s)
{
	struct fr_py_stats st = {0};
	int ret = -ETIMEDOUT;

	for (int i = 0; i < 500; i++) {
		memset(s, 0, sizeof(*s));
		st = (struct fr_py_stats){0};
		ret = fr_py_threads_read(&t->x, t->bias, &t->mem, keep, s, &st);
		if (ret == 0 && settled(t, s)) {
			if (getenv("FR_VERBOSE"))
				printf("  %llu threads, %llu frames, %llu reads\n",
				       (unsigned long long)st.threads,
				       (unsigned long long)st.frames, (unsigned long long)st.reads);
			return 0;
		}
		usleep(10000);
	}
	return ret < 0 ? ret : -ETIMEDOUT;
}

/* ---- the checks ---- */

/* Each thread's innermost frames; their lines marked in the script. */
static const struct want {
	const char *name310, *name; /* co_name in 3.10, co_qualname from 3.11 */
	int8_t entry;		    /* from 3.11 (in 3.10 every frame is one); -1: either */
} want[NTHREADS][3] = {
	{{"hot_b", "hot_b", 0}, {"handle", "handle", 0}, {"<module>", "<module>", 1}},
	/* Thread.run calls note's run with *args: a C-level call in 3.11,
	 * not from 3.12 (CALL_FUNCTION_EX inlined). */
	{{"waiter", "waiter", 0}, {"run", "Worker.run", 0}, {"run", "note.<locals>.run", -1}},
	{{"keyfunc", "keyfunc", 1}, {"sorter", "sorter", 0}, {"run", "note.<locals>.run", -1}},
	/* A coroutine resumed by the event loop's C task step, awaiting
	 * another: sent to from C, or inline once SEND is specialized. */
	{{ETAPE, ETAPE, -1}, {SERVE, SERVE, 1}},
};

/* With FR_VERBOSE set, the thread's frames as read. */
static void show_thread(const struct target *t, const struct fr_py_thread *th)
{
	struct named n;

	if (!getenv("FR_VERBOSE"))
		return;
	printf("  thread %#llx (%u):\n", (unsigned long long)th->thread_id, th->native_id);
	for (uint32_t i = 0; i < th->nframes; i++)
		if (name_frame(t, &th->frames[i], &n) == 0)
			printf("    %s%s %s:%d\n", th->frames[i].entry ? "*" : " ", n.name, n.file,
			       n.line);
}

static void check_thread(const struct target *t, const struct fr_py_thread *th, int k)
{
	static const char *const who[NTHREADS] = {"main", "waiter", "sorter", "aio"};
	int old = t->x.minor == 10;
	char task[64];
	struct named n;

	show_thread(t, th);

	if (old)
		CHECK(th->native_id == 0, "%s %s: native id %u in 3.10", t->label, who[k],
		      th->native_id);
	else {
		snprintf(task, sizeof(task), "/proc/%d/task/%u", t->pid, th->native_id);
		CHECK(th->native_id == t->ids.native[k] && access(task, F_OK) == 0,
		      "%s %s: native id %u, the script says %u", t->label, who[k], th->native_id,
		      t->ids.native[k]);
	}
	CHECK(k == 0 ? th->nframes == 3 : th->nframes > 3, "%s %s: %u frames", t->label, who[k],
	      th->nframes);
	CHECK(!th->cut, "%s %s: cut", t->label, who[k]);
	CHECK(th->nframes && th->frames[th->nframes - 1].entry, "%s %s: the outermost no entry",
	      t->label, who[k]);
	for (int i = 0; i < 3 && want[k][i].name && i < (int)th->nframes; i++) {
		const struct want *w = &want[k][i];
		int32_t line = line_of(w->name);
		int ret = name_frame(t, &th->frames[i], &n);

		CHECK(ret == 0, "%s %s frame %d: code %#llx: %d", t->label, who[k], i,
		      (unsigned long long)th->frames[i].code, ret);
		if (ret < 0)
			continue;
		CHECK(strcmp(n.name, old ? w->name310 : w->name) == 0 &&
			      strcmp(n.file, t->file) == 0 && n.line == line,
		      "%s %s frame %d: %s %s:%d, not %s line %d", t->label, who[k], i, n.name,
		      n.file, n.line, old ? w->name310 : w->name, line);
		CHECK(w->entry < 0 || th->frames[i].entry == (old || w->entry),
		      "%s %s frame %d (%s): entry %u", t->label, who[k], i, n.name,
		      th->frames[i].entry);
	}
}

static void check_exe(const struct target *t)
{
	struct fr_py_layout l;

	CHECK(t->x.minor == (int)((t->ids.hexversion >> 16) & 0xff),
	      "%s: minor %d, the script says %#lx", t->label, t->x.minor, t->ids.hexversion);
	CHECK(!t->x.hexversion || t->x.hexversion == t->ids.hexversion,
	      "%s: version %#x, the script says %#lx", t->label, t->x.hexversion,
	      t->ids.hexversion);
	CHECK(t->x.minor < 11 || t->x.hexversion, "%s: no Py_Version read", t->label);
	CHECK(t->x.code_type, "%s: no PyCode_Type", t->label);
	if (t->x.minor >= 13) {
		CHECK(t->x.layout_from_debug_offsets, "%s: its debug offsets not read", t->label);
		CHECK(fr_python_layout_table(t->x.minor, &l) == 0 &&
			      memcmp(&l, &t->x.layout, sizeof(l)) == 0,
		      "%s: the debug offsets' layout is not the table's", t->label);
	}
}

static void run_one(const char *label, const char *python)
{
	struct target *t = calloc(1, sizeof(*t));
	struct snap *s = calloc(1, sizeof(*s));
	char path[400];
	int ret;

	if (!t || !s || !mkdtemp(strcpy(t->dir, "/tmp/fr-pyread.XXXXXX"))) {
		CHECK(0, "%s: no memory or temporary directory", label);
		free(t);
		free(s);
		return;
	}
	t->label = label;
	t->pid = start(python, t);
	CHECK(t->pid > 0, "%s: %s did not start the script", label, python);
	t->mem = (struct fr_py_mem){mem_read, mem_readv, &t->pid};
	if (t->pid > 0 && (ret = find_object(t)) < 0)
		CHECK(0, "%s: its interpreter object not read: %d", label, ret);
	else if (t->pid > 0) {
		check_exe(t);
		ret = read_settled(t, s);
		CHECK(ret == 0, "%s: its threads never sat where they should: %d", label, ret);
		CHECK(s->n == NTHREADS, "%s: %u Python threads, not %d", label, s->n, NTHREADS);
		for (int k = 0; k < NTHREADS; k++) {
			const struct fr_py_thread *th = by_ident(s, t->ids.ident[k]);

			CHECK(th, "%s: no thread of ident %llu", label, t->ids.ident[k]);
			if (th)
				check_thread(t, th, k);
		}
	}
	if (t->pid > 0 || t->pid < -1) {
		kill(t->pid > 0 ? t->pid : -t->pid, SIGKILL);
		waitpid(t->pid > 0 ? t->pid : -t->pid, NULL, 0);
	}
	const char *files[] = {"frames.py", "ready", "ready.tmp"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", t->dir, files[i]);
		unlink(path);
	}
	rmdir(t->dir);
	free(t);
	free(s);
}

/* ---- the interpreters ---- */

static void pyenv_root(char *out, size_t n)
{
	const char *env = getenv("PYENV_ROOT");
	FILE *p;

	out[0] = '\0';
	if (env && env[0]) {
		snprintf(out, n, "%s", env);
		return;
	}
	if (!(p = popen("pyenv root 2>/dev/null", "r")))
		return;
	if (!fgets(out, (int)n, p))
		out[0] = '\0';
	out[strcspn(out, "\n")] = '\0';
	pclose(p);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* A release outside 3.10-3.13 (pyenv's 3.7-3.9, a 3.14 if there is one)
 * is refused, and named. */
static void check_unsupported(const char *dir, const char *version, int minor)
{
	char pat[4400];
	struct fr_python_exe x;
	glob_t g;
	int fd, ret;

	snprintf(pat, sizeof(pat), "%s/%s/lib/libpython3.*.so.1.0", dir, version);
	if (glob(pat, 0, NULL, &g) != 0)
		return;
	if ((fd = open(g.gl_pathv[0], O_RDONLY | O_CLOEXEC)) >= 0) {
		ret = fr_python_exe_read(fd, g.gl_pathv[0], &x);
		close(fd);
		CHECK(ret == -ENOTSUP && x.minor == minor && fr_python_minor(x.version) == minor,
		      "pyenv %s: %d, version \"%s\"", version, ret, x.version);
		printf("pyenv %s: not supported, said as %s\n", version, x.version);
	}
	globfree(&g);
}

/* pyenv's 3.10 to 3.13 builds. Returns how many were run. */
static int run_pyenv(void)
{
	char root[2048], dir[2100], python[4400];
	struct dirent **e;
	int n, ran = 0;

	pyenv_root(root, sizeof(root));
	if (!root[0])
		return 0;
	snprintf(dir, sizeof(dir), "%s/versions", root);
	if ((n = scandir(dir, &e, NULL, by_name)) < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		int m = fr_python_minor(e[i]->d_name);

		snprintf(python, sizeof(python), "%s/%s/bin/python3", dir, e[i]->d_name);
		if ((m >= 7 && m < 10) || m > 13)
			check_unsupported(dir, e[i]->d_name, m);
		if (m >= 10 && m <= 13 && access(python, X_OK) == 0) {
			char label[300];

			snprintf(label, sizeof(label), "pyenv %s", e[i]->d_name);
			run_one(label, python);
			ran++;
		}
		free(e[i]);
	}
	free(e);
	return ran;
}

int main(void)
{
	unsigned long fs = 0;
	int ran = 0;

	/* A thread's Python thread_id is its pthread_t, which glibc makes
	 * its thread pointer, the fs base a sample's task gives. */
	CHECK(syscall(SYS_arch_prctl, ARCH_GET_FS, &fs) == 0 && fs == (unsigned long)pthread_self(),
	      "pthread_self() %#lx is not the fs base %#lx", (unsigned long)pthread_self(), fs);

	if (access("/usr/bin/python3", X_OK) == 0) {
		run_one("/usr/bin/python3", "/usr/bin/python3");
		ran++;
	}
	ran += run_pyenv();
	if (!ran) {
		printf("SKIP: no CPython found (neither /usr/bin/python3 nor pyenv's 3.10-3.13)\n");
		return 77;
	}
	printf("%d interpreters, %d failures\n", ran, failures);
	return failures ? 1 : 0;
}
