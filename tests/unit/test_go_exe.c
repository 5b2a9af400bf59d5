/* A Go program's goroutines read from outside (core/symbols/go_exe.h,
 * recorder/tracking/goroutines.h), on the endpoints program (argv[1]:
 * its main.go) built by the Go toolchain found, as is and stripped
 * (-ldflags='-s -w'), with the toolchain `go` and with every other one the
 * machine has (/usr/lib/go-1.N, Debian's golang-1.N-go):
 *  - the table's layout of a g for this Go release is the one the
 *    program's DWARF gives (a release without a table entry: said, and
 *    the DWARF layout used);
 *  - the normal build's runtime.allgs is its symbol's (go tool nm); the
 *    stripped build has candidates for it (the live read below finds the
 *    list among them); both builds give the same wait reasons, "chan
 *    receive" among them;
 *  - the stripped build, running, lists its five goroutines parked in
 *    main.waitForJob on "chan receive", their stacks from runtime.gopark
 *    to runtime.goexit named by the function table, created in
 *    main.spawnWaiters;
 *  - a g whose fields keep changing is given without a stack.
 * Skips (77) without a Go toolchain. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/symbols/go_exe.h"
#include "core/symbols/gopclntab.h"
#include "core/util/vmread.h"
#include "recorder/tracking/goroutines.h"
#include "tests/unit/check.h"

static int run(const char *cmd)
{
	return system(cmd) == 0 ? 0 : -EIO;
}

/* The release `gobin` is ("go1.21.13"), "" when it does not say. */
static void version_of(const char *gobin, char *out)
{
	char cmd[4200];
	FILE *p;

	out[0] = '\0';
	snprintf(cmd, sizeof(cmd), "GOTOOLCHAIN=local '%s' env GOVERSION 2>/dev/null", gobin);
	if ((p = popen(cmd, "r"))) {
		if (!fgets(out, 32, p))
			out[0] = '\0';
		out[strcspn(out, "\n")] = '\0';
		pclose(p);
	}
}

static int open_exe(const char *dir, const char *name, struct fr_go_exe *x)
{
	char path[4200];
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = fr_go_exe_read(fd, x);
	close(fd);
	return ret;
}

static void check_layout(const char *dir, const struct fr_go_exe *x)
{
	struct fr_go_glayout t, d;
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/normal", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && fr_go_glayout_dwarf(fd, &d) == 0, "no layout from the DWARF of %s", path);
	if (fd >= 0)
		close(fd);
	if (fr_go_glayout_table((uint32_t)x->minor, &t) < 0) {
		printf("%s: no table entry; the DWARF's layout is used\n", x->version);
		return;
	}
	CHECK(memcmp(&t, &d, sizeof(t)) == 0,
	      "%s: the table's layout is not the DWARF's (goid %d/%d, status %d/%d, labels %d/%d, "
	      "sched.sp %d/%d, parent %d/%d)",
	      x->version, t.goid, d.goid, t.status, d.status, t.labels, d.labels, t.sched_sp,
	      d.sched_sp, t.parent, d.parent);
}

/* runtime.allgs's address, as the toolchain lists it. */
static uint64_t nm_allgs(const char *dir, const char *gobin)
{
	char cmd[4400];
	unsigned long long a = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "GOTOOLCHAIN=local '%s' tool nm '%s/normal' | awk '$3 == \"runtime.allgs\" { print "
		 "$1 }'",
		 gobin, dir);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%llx", &a) != 1)
		a = 0;
	if (p)
		pclose(p);
	return a;
}

static void check_files(const char *dir, const char *gobin, const struct fr_go_exe *n,
			const struct fr_go_exe *s)
{
	uint64_t want = nm_allgs(dir, gobin);
	int chan = 0;

	CHECK(want && n->allgs == want, "runtime.allgs at %#llx, go tool nm says %#llx",
	      (unsigned long long)n->allgs, (unsigned long long)want);
	CHECK(!s->allgs && s->ncand > 0, "the stripped build: allgs %#llx, %u candidates",
	      (unsigned long long)s->allgs, s->ncand);
	CHECK(n->nwait >= 20 && s->nwait >= n->nwait, "wait reasons: %u and %u", n->nwait,
	      s->nwait);
	for (unsigned i = 0; i < n->nwait && i < s->nwait; i++) {
		CHECK(n->wait_reason[i] && s->wait_reason[i] &&
			      strcmp(n->wait_reason[i], s->wait_reason[i]) == 0,
		      "wait reason %u: %s and %s", i, n->wait_reason[i], s->wait_reason[i]);
		chan |= n->wait_reason[i] && strcmp(n->wait_reason[i], "chan receive") == 0;
	}
	CHECK(chan, "no \"chan receive\" among the wait reasons");
}

struct seen {
	const struct fr_go_exe *x;
	int waiters, named;
};

static int vread(void *arg, uint64_t addr, void *buf, size_t n)
{
	return fr_proc_vm_read(*(pid_t *)arg, addr, buf, n);
}

static int vreadv(void *arg, size_t n, const uint64_t *addr, const size_t *len, void **buf)
{
	return fr_proc_vm_readv(*(pid_t *)arg, n, addr, len, buf);
}

static int each(void *arg, const struct fr_goroutine *g)
{
	struct seen *s = arg;
	struct fr_dwarf_frame f[8];
	const char *first = NULL, *last = NULL, *by = NULL;
	int job = 0;

	for (uint32_t i = 0; i < g->npc; i++) {
		int n = fr_gopclntab_lookup(s->x->tab, g->pc[i] - 1, f, 8);

		for (int k = 0; k < n; k++) {
			first = first ? first : f[k].function;
			last = f[k].function;
			job |= strcmp(f[k].function, "main.waitForJob") == 0;
		}
	}
	if (!job)
		return 0;
	s->waiters++;
	fr_gopclntab_func(s->x->tab, g->gopc - 1, &by, NULL);
	CHECK(g->status == FR_G_WAITING && g->waitreason < s->x->nwait &&
		      strcmp(s->x->wait_reason[g->waitreason], "chan receive") == 0,
	      "goroutine %llu: state %u, reason %u", (unsigned long long)g->goid, g->status,
	      g->waitreason);
	s->named += first && strcmp(first, "runtime.gopark") == 0 && last &&
		    strcmp(last, "runtime.goexit") == 0 && by &&
		    strcmp(by, "main.spawnWaiters") == 0;
	return 0;
}

static void check_live(const char *dir, const struct fr_go_exe *s)
{
	char path[4200];
	struct seen seen = {s, 0, 0};
	struct fr_goroutines_stats st;
	pid_t pid;
	int ret = -1;

	snprintf(path, sizeof(path), "%s/stripped", dir);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execl(path, path, "-seconds", "20", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0, "fork");
	/* The waiters park at once; a few tries for a slow start. */
	for (int i = 0; i < 50 && pid > 0 && seen.waiters < 5; i++) {
		usleep(100000);
		seen = (struct seen){s, 0, 0};
		ret = fr_goroutines_read(s, 0, &(struct fr_go_mem){vread, vreadv, &pid}, 100000,
					 each, &seen, &st);
	}
	CHECK(ret == 0 && seen.waiters == 5 && seen.named == 5,
	      "the stripped build: read %d, %d goroutines in main.waitForJob, %d with the whole "
	      "stack and creator",
	      ret, seen.waiters, seen.named);
	printf("stripped build: %llu goroutines listed, %llu skipped, %llu reads\n",
	       (unsigned long long)st.listed, (unsigned long long)st.skipped,
	       (unsigned long long)st.reads);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* A process whose one goroutine moves at every read of its g. */
#define FAKE 0x10000000ull
struct fake {
	uint8_t m[0x2000];
	const struct fr_go_glayout *l;
	uint64_t gread;
};

static int fake_read(void *arg, uint64_t addr, void *buf, size_t n)
{
	struct fake *f = arg;
	uint64_t sp;

	if (addr < FAKE || addr - FAKE > sizeof(f->m) || sizeof(f->m) - (addr - FAKE) < n)
		return -EFAULT;
	if (addr == FAKE + 0x100) {
		sp = FAKE + 0x1800 + 8 * (++f->gread % 16);
		memcpy(f->m + 0x100 + f->l->sched_sp, &sp, 8);
	}
	memcpy(buf, f->m + (addr - FAKE), n);
	return 0;
}

static void put64(uint8_t *m, uint64_t at, uint64_t v)
{
	memcpy(m + at, &v, 8);
}

static int keep_one(void *arg, const struct fr_goroutine *g)
{
	*(struct fr_goroutine *)arg = *g;
	return 0;
}

static void check_changing(const struct fr_go_exe *s)
{
	static struct fake f;
	static struct fr_goroutine g;
	struct fr_go_exe x = *s;
	struct fr_goroutines_stats st;
	int ret;

	f.l = &x.layout;
	x.allgs = FAKE;
	put64(f.m, 0, FAKE + 0x20);
	put64(f.m, 8, 1);
	put64(f.m, 16, 1);
	put64(f.m, 0x20, FAKE + 0x100);
	put64(f.m, 0x100 + x.layout.goid, 1);
	put64(f.m, 0x100 + x.layout.status, FR_G_WAITING);
	put64(f.m, 0x100 + x.layout.stack_lo, FAKE + 0x1000);
	put64(f.m, 0x100 + x.layout.stack_hi, FAKE + 0x2000);
	ret = fr_goroutines_read(&x, 0, &(struct fr_go_mem){fake_read, NULL, &f}, 10, keep_one, &g,
				 &st);
	CHECK(ret == 0 && st.listed == 1 && st.changed == 1 && g.stack == FR_GSTACK_CHANGED &&
		      g.npc == 0 && g.status == FR_G_WAITING,
	      "a goroutine moving at every read: read %d, %llu listed, %llu changed, stack %d "
	      "with %u frames",
	      ret, (unsigned long long)st.listed, (unsigned long long)st.changed, g.stack, g.npc);
}

/* Builds the program with the toolchain `gobin` and checks both builds.
 * `first`: also the checks that need no other toolchain. */
static void check_toolchain(const char *gobin, const char *src, int first)
{
	char dir[] = "/tmp/fr-goexe.XXXXXX", cmd[8800];
	struct fr_go_exe n, s;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	const char *b = getenv("FR_BUILD_DIR"), *v = strstr(gobin, "/go-1.");
	char cache[4200];

	/* The build cache is shared with test_golabels.c's for the toolchain. */
	if (b && *b)
		snprintf(cache, sizeof(cache), "%s/go-cache/%.*s", b,
			 v ? (int)strcspn(v + 1, "/") : 7, v ? v + 1 : "default");
	else
		snprintf(cache, sizeof(cache), "%s/cache", dir);
	snprintf(cmd, sizeof(cmd),
		 "cp '%s' '%s/main.go' && cd '%s' && export GOCACHE='%s' "
		 "GOPATH=\"$PWD/gopath\" GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local && "
		 "'%s' build -o normal main.go && '%s' build -ldflags='-s -w' -o stripped main.go",
		 src, dir, dir, cache, gobin, gobin);
	CHECK(run(cmd) == 0, "building the Go program with %s in %s failed", gobin, dir);
	CHECK(open_exe(dir, "normal", &n) == 0, "%s: the normal build is not read", gobin);
	CHECK(open_exe(dir, "stripped", &s) == 0, "%s: the stripped build is not read", gobin);
	if (!failures) {
		printf("%s: layout %s, %u wait reasons\n", n.version,
		       s.layout_from_dwarf ? "from DWARF" : "from the table", n.nwait);
		check_layout(dir, &n);
		check_files(dir, gobin, &n, &s);
		check_live(dir, &s);
		if (first)
			check_changing(&s);
	}
	fr_go_exe_fini(&n);
	fr_go_exe_fini(&s);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	run(cmd);
}

int main(int argc, char **argv)
{
	glob_t g = {0};
	char seen[16][32];
	size_t nseen = 0;

	if (argc < 2)
		return 2;
	if (run("command -v go >/dev/null 2>&1") < 0) {
		fprintf(stderr, "skipped: needs the Go toolchain (go) to build a Go program\n");
		return 77;
	}
	check_toolchain("go", argv[1], 1);
	version_of("go", seen[nseen++]);
	/* Every other toolchain the machine has (Debian's golang-1.N-go),
	 * once per release. */
	if (glob("/usr/lib/go-1.*/bin/go", 0, NULL, &g) == 0)
		for (size_t i = 0; i < g.gl_pathc && nseen < 16 && !failures; i++) {
			int dup = 0;

			version_of(g.gl_pathv[i], seen[nseen]);
			for (size_t k = 0; k < nseen; k++)
				dup |= strcmp(seen[k], seen[nseen]) == 0;
			if (!dup && seen[nseen][0]) {
				nseen++;
				check_toolchain(g.gl_pathv[i], argv[1], 0);
			}
		}
	globfree(&g);
	printf("%zu Go toolchains\n", nseen);
	return failures ? 1 : 0;
}
