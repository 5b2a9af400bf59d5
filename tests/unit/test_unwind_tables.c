/* The machine's CFI tables (recorder/tracking/unwind_tables.c), on this test's own
 * mappings: a table is asked for on the first look-up (pending), built
 * off the caller's thread and taken at the next collect; keyed by build
 * id or by inode, and a file that is not the one the key names (another
 * build id, another inode) fails and is remembered as without CFI; the
 * vDSO's table comes from the process's own image; anonymous memory has
 * none; over the memory budget, tables are dropped and built again. A
 * mapping known by its inode is linked to its build id's table: one file
 * mapped by two processes builds one table, two files at one path two.
 * A table asked for as its mapping appears is built before any look-up,
 * unless its process has exited by then. Fair shares: one user's tables
 * never push root's out below its share, a table root uses is root's,
 * builds are taken in turns per user, and one user cannot fill the
 * queue. */
#include "recorder/tracking/unwind_tables.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/symbols/elf_image.h"
#include "core/util/shares.h"
#include "recorder/tracking/buildids.h"
#include "tests/unit/check.h"

/* The executable mapping of /proc/self/maps that holds `addr`, as the
 * tracker would have it from /proc (inode, no build id). */
static int self_map(uint64_t addr, struct fr_tracker_map *m, char *path, size_t len)
{
	char line[4608];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = 0;

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino;
		unsigned maj, min;
		char perms[8];
		int name_at = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off,
			   &maj, &min, &ino, &name_at) < 7 ||
		    perms[2] != 'x' || addr < start || addr >= end)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(path, len, "%s", name_at ? line + name_at : "");
		*m = (struct fr_tracker_map){.start = start,
					     .end = end,
					     .pgoff = off,
					     .path = path,
					     .path_id = path,
					     .inode = ino ? FR_TRACKER_INODE_MMAP2
							  : FR_TRACKER_INODE_NONE,
					     .dev = makedev(maj, min),
					     .ino = ino};
		found = 1;
	}
	fclose(f);
	return found ? 0 : -1;
}

static const struct fr_cfi_table *find(struct fr_unwind_tables *u, const struct fr_tracker_map *m,
				       uint64_t addr, int *miss)
{
	uint64_t vaddr = 0;

	*miss = 0;
	return fr_unwind_tables_find(u, (uint32_t)getpid(), m, addr, &vaddr, miss);
}

/* Asks, waits for the build, asks again: the table, or NULL with *miss. */
static const struct fr_cfi_table *
find_built(struct fr_unwind_tables *u, const struct fr_tracker_map *m, uint64_t addr, int *miss)
{
	const struct fr_cfi_table *t = find(u, m, addr, miss);

	if (t || *miss != FR_UNWIND_MISS_PENDING)
		return t;
	CHECK(fr_unwind_tables_settle(u, 20000) == 0, "the build did not finish in 20 s");
	return find(u, m, addr, miss);
}

static void test_keys(void)
{
	struct fr_unwind_tables *u = fr_unwind_tables_new(FR_UNWIND_TABLES_BUDGET);
	uint64_t addr = (uint64_t)(uintptr_t)&test_keys;
	struct fr_tracker_map m, other;
	struct fr_unwind_tables_stats st;
	const struct fr_cfi_table *t;
	uint8_t bid[FR_BUILD_ID_MAX];
	char path[4096];
	int miss, n;

	if (!u || self_map(addr, &m, path, sizeof(path)) < 0) {
		CHECK(0, "no tables or no mapping of this test");
		fr_unwind_tables_free(u);
		return;
	}
	/* By inode: pending first, then the table, shared by a second ask. */
	t = find(u, &m, addr, &miss);
	CHECK(!t && miss == FR_UNWIND_MISS_PENDING, "first look-up: %p, miss %d", (void *)t, miss);
	t = find_built(u, &m, addr, &miss);
	CHECK(t && t->nrows > 0, "by inode: no table (miss %d)", miss);
	fr_unwind_tables_stats(u, &st);
	CHECK(st.built == 1 && st.tables == 1 && st.bytes > 0 && st.pending == 0,
	      "stats: built %llu tables %llu bytes %llu pending %llu", (unsigned long long)st.built,
	      (unsigned long long)st.tables, (unsigned long long)st.bytes,
	      (unsigned long long)st.pending);

	/* By build id: the table the inode was linked to, not built again. */
	n = fr_buildid_read_mapped((uint32_t)getpid(), m.start, m.end, path, bid, sizeof(bid));
	CHECK(n > 0, "no build id for %s: %d", path, n);
	if (n > 0) {
		const struct fr_cfi_table *by_inode = t;

		other = m;
		other.build_id = bid;
		other.build_id_len = (uint8_t)n;
		t = find(u, &other, addr, &miss);
		CHECK(t && t == by_inode && t->build_id_len == n &&
			      memcmp(t->build_id, bid, (size_t)n) == 0,
		      "by build id: not the inode's table (miss %d)", miss);
		fr_unwind_tables_stats(u, &st);
		CHECK(st.built == 1 && st.linked == 1, "built %llu, linked %llu: want 1 and 1",
		      (unsigned long long)st.built, (unsigned long long)st.linked);
		/* A build id the file does not have: refused, remembered. */
		bid[0] ^= 0xff;
		t = find_built(u, &other, addr, &miss);
		CHECK(!t && miss == FR_UNWIND_MISS_NOCFI, "another build id: %p, miss %d",
		      (void *)t, miss);
		t = find(u, &other, addr, &miss);
		CHECK(!t && miss == FR_UNWIND_MISS_NOCFI, "the failure is not remembered: miss %d",
		      miss);
	}
	/* An inode the mapped file does not have. */
	other = m;
	other.ino ^= 1;
	t = find_built(u, &other, addr, &miss);
	CHECK(!t && miss == FR_UNWIND_MISS_NOCFI, "another inode: %p, miss %d", (void *)t, miss);
	/* Anonymous memory and a file known by neither build id nor inode. */
	other = m;
	other.path = "//anon";
	t = find(u, &other, addr, &miss);
	CHECK(!t && miss == FR_UNWIND_MISS_NOCFI, "anonymous memory: miss %d", miss);
	other = m;
	other.inode = FR_TRACKER_INODE_NONE;
	t = find(u, &other, addr, &miss);
	CHECK(!t && miss == FR_UNWIND_MISS_NOCFI, "no key: miss %d", miss);
	fr_unwind_tables_stats(u, &st);
	CHECK(st.failed == 2, "%llu failures, want 2", (unsigned long long)st.failed);
	fr_unwind_tables_free(u);
}

/* The vDSO: no file, its table from this process's image. */
static void test_vdso(void)
{
	struct fr_unwind_tables *u = fr_unwind_tables_new(FR_UNWIND_TABLES_BUDGET);
	struct fr_tracker_map m = {0};
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	int miss, found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long long start, end;

		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &start, &end) == 2) {
			m = (struct fr_tracker_map){.start = start, .end = end, .path = "[vdso]"};
			found = 1;
		}
	}
	if (f)
		fclose(f);
	if (!found || !u) {
		printf("no vDSO here; skipped\n");
		fr_unwind_tables_free(u);
		return;
	}
	/* Somewhere in its first page of code. */
	const struct fr_cfi_table *t = find_built(u, &m, m.start + 0x800, &miss);

	CHECK(t && t->nrows > 0, "vDSO: no table (miss %d)", miss);
	fr_unwind_tables_free(u);
}

/* A budget smaller than one table: built, dropped at once, asked again. */
static void test_budget(void)
{
	struct fr_unwind_tables *u = fr_unwind_tables_new(1);
	uint64_t addr = (uint64_t)(uintptr_t)&test_budget;
	struct fr_unwind_tables_stats st;
	struct fr_tracker_map m;
	char path[4096];
	int miss;

	if (!u || self_map(addr, &m, path, sizeof(path)) < 0) {
		CHECK(0, "no tables or no mapping of this test");
		fr_unwind_tables_free(u);
		return;
	}
	CHECK(!find_built(u, &m, addr, &miss) && miss == FR_UNWIND_MISS_PENDING,
	      "over the budget: a table was kept (miss %d)", miss);
	fr_unwind_tables_settle(u, 20000);
	fr_unwind_tables_stats(u, &st);
	CHECK(st.built == 2 && st.evicted == 2 && st.tables == 0 && st.bytes == 0,
	      "built %llu evicted %llu tables %llu bytes %llu", (unsigned long long)st.built,
	      (unsigned long long)st.evicted, (unsigned long long)st.tables,
	      (unsigned long long)st.bytes);
	fr_unwind_tables_free(u);
}

/* A table looked up since the mark stays; one not looked up since goes,
 * and is built again when asked for. */
static void test_trim_idle(void)
{
	struct fr_unwind_tables *u = fr_unwind_tables_new(FR_UNWIND_TABLES_BUDGET);
	uint64_t addr = (uint64_t)(uintptr_t)&test_trim_idle;
	struct fr_unwind_tables_stats st;
	struct fr_tracker_map m;
	char path[4096];
	int miss;

	if (!u || self_map(addr, &m, path, sizeof(path)) < 0) {
		CHECK(0, "no tables or no mapping of this test");
		fr_unwind_tables_free(u);
		return;
	}
	uint64_t mark = fr_unwind_tables_clock(u);

	CHECK(find_built(u, &m, addr, &miss) != NULL, "no table (miss %d)", miss);
	CHECK(fr_unwind_tables_trim_idle(u, mark) == 0, "a table used since the mark was dropped");
	mark = fr_unwind_tables_clock(u);
	CHECK(find(u, &m, addr, &miss) != NULL, "the table went");
	CHECK(fr_unwind_tables_trim_idle(u, mark) == 0, "a table used since the mark was dropped");
	mark = fr_unwind_tables_clock(u);
	CHECK(fr_unwind_tables_trim_idle(u, mark) > 0, "a table unused since the mark stayed");
	fr_unwind_tables_stats(u, &st);
	CHECK(st.tables == 0 && st.bytes == 0, "after the trim: %llu tables, %llu bytes",
	      (unsigned long long)st.tables, (unsigned long long)st.bytes);
	CHECK(find_built(u, &m, addr, &miss) != NULL, "not built again (miss %d)", miss);
	fr_unwind_tables_free(u);
}

/* Two processes found in /proc mapping one file (two keys: a mapping
 * learned from /proc is keyed by its process) build one table: each is
 * linked to the file's build id. */
static void test_linked(void)
{
	struct fr_unwind_tables *u = fr_unwind_tables_new(FR_UNWIND_TABLES_BUDGET);
	uint64_t addr = (uint64_t)(uintptr_t)&test_linked, vaddr;
	const struct fr_cfi_table *t1, *t2;
	struct fr_unwind_tables_stats st;
	struct fr_tracker_map m;
	char path[4096];
	int miss1 = 0, miss2 = 0;
	pid_t child;

	if (!u || self_map(addr, &m, path, sizeof(path)) < 0) {
		CHECK(0, "no tables or no mapping of this test");
		fr_unwind_tables_free(u);
		return;
	}
	m.inode = FR_TRACKER_INODE_PROC;
	child = fork(); /* maps what this process maps, where it does */
	if (child == 0) {
		pause();
		_exit(0);
	}
	CHECK(child > 0, "fork: %s", strerror(errno));
	if (child > 0) {
		fr_unwind_tables_find(u, (uint32_t)getpid(), &m, addr, &vaddr, &miss1);
		fr_unwind_tables_find(u, (uint32_t)child, &m, addr, &vaddr, &miss2);
		CHECK(miss1 == FR_UNWIND_MISS_PENDING && miss2 == FR_UNWIND_MISS_PENDING,
		      "first look-ups: miss %d and %d", miss1, miss2);
		CHECK(fr_unwind_tables_settle(u, 20000) == 0, "the builds did not finish in 20 s");
		t1 = fr_unwind_tables_find(u, (uint32_t)getpid(), &m, addr, &vaddr, &miss1);
		t2 = fr_unwind_tables_find(u, (uint32_t)child, &m, addr, &vaddr, &miss2);
		CHECK(t1 && t1 == t2, "two processes: tables %p and %p (miss %d, %d)", (void *)t1,
		      (void *)t2, miss1, miss2);
		fr_unwind_tables_stats(u, &st);
		CHECK(st.built == 1 && st.linked == 2 && st.tables == 1,
		      "built %llu, linked %llu, tables %llu: want 1, 2, 1",
		      (unsigned long long)st.built, (unsigned long long)st.linked,
		      (unsigned long long)st.tables);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	fr_unwind_tables_free(u);
}

/* Copies `from` to `to` through a new file renamed over it (a deploy):
 * `to` is another inode. Returns 0 and its stat, or -1. */
static int deploy(const char *from, const char *to, struct stat *st)
{
	char tmp[4200], buf[65536];
	FILE *in = fopen(from, "rb"), *out;
	size_t n;
	int ret = 0;

	snprintf(tmp, sizeof(tmp), "%s.new", to);
	out = fopen(tmp, "wb");
	while (in && out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			ret = -1;
	if (!in || !out || ferror(in))
		ret = -1;
	if (in)
		fclose(in);
	if (out && fclose(out) != 0)
		ret = -1;
	if (ret == 0 && (rename(tmp, to) < 0 || stat(to, st) < 0))
		ret = -1;
	return ret;
}

/* Two different files at one path, one after the other (a mapping at an
 * address this process has not mapped, so the file is read by its path):
 * each has its own table, that of its own build id. A copy of this test's
 * binary shares the table of the binary it was copied from. */
static void test_one_path(void)
{
	struct fr_unwind_tables *u = fr_unwind_tables_new(FR_UNWIND_TABLES_BUDGET);
	uint64_t self_addr = (uint64_t)(uintptr_t)&test_one_path;
	uint64_t libc_addr = (uint64_t)(uintptr_t)&qsort;
	char dir[] = "/tmp/fr-unwind-tables-XXXXXX", at[4200];
	char self_path[4096], libc_path[4096];
	struct fr_tracker_map self, libc, m;
	const struct fr_cfi_table *t_self, *t1, *t2;
	struct fr_unwind_tables_stats st;
	const uint64_t fake = 0x10000;
	struct stat sb;
	int miss;

	if (!u || self_map(self_addr, &self, self_path, sizeof(self_path)) < 0 ||
	    self_map(libc_addr, &libc, libc_path, sizeof(libc_path)) < 0 ||
	    strcmp(self_path, libc_path) == 0 || !mkdtemp(dir)) {
		printf("no mapping of libc apart from this test's; skipped\n");
		fr_unwind_tables_free(u);
		return;
	}
	snprintf(at, sizeof(at), "%s/prog", dir);
	t_self = find_built(u, &self, self_addr, &miss);
	CHECK(t_self, "this test's own table (miss %d)", miss);

	CHECK(deploy(self_path, at, &sb) == 0, "cannot copy %s", self_path);
	m = self;
	m.start = fake;
	m.end = fake + (self.end - self.start);
	m.path = m.path_id = at;
	m.inode = FR_TRACKER_INODE_PROC;
	m.dev = sb.st_dev;
	m.ino = sb.st_ino;
	t1 = find_built(u, &m, fake + (self_addr - self.start), &miss);
	CHECK(t1 && t1 == t_self, "the copy of this test: table %p, want %p (miss %d)", (void *)t1,
	      (void *)t_self, miss);

	CHECK(deploy(libc_path, at, &sb) == 0, "cannot copy %s", libc_path);
	m = libc;
	m.start = fake;
	m.end = fake + (libc.end - libc.start);
	m.path = m.path_id = at;
	m.inode = FR_TRACKER_INODE_PROC;
	m.dev = sb.st_dev;
	m.ino = sb.st_ino;
	t2 = find_built(u, &m, fake + (libc_addr - libc.start), &miss);
	CHECK(t2 && t2 != t1 &&
		      (t2->build_id_len != t1->build_id_len ||
		       memcmp(t2->build_id, t1->build_id, t1->build_id_len) != 0),
	      "the second file at %s: table %p, the first's %p (miss %d)", at, (void *)t2,
	      (void *)t1, miss);
	fr_unwind_tables_stats(u, &st);
	CHECK(st.built == 2 && st.linked == 3, "built %llu, linked %llu: want 2 and 3",
	      (unsigned long long)st.built, (unsigned long long)st.linked);
	unlink(at);
	rmdir(dir);
	fr_unwind_tables_free(u);
}

/* Asked for as a mapping appears: built before any look-up, once; not
 * built when the process that mapped it has exited by the builder's turn
 * (and then asked again by the next). */
static void test_prefetch(void)
{
	struct fr_unwind_tables *u = fr_unwind_tables_new(FR_UNWIND_TABLES_BUDGET);
	uint64_t addr = (uint64_t)(uintptr_t)&test_prefetch;
	struct fr_unwind_tables_stats st;
	const struct fr_cfi_table *t;
	struct fr_tracker_map m;
	char path[4096];
	pid_t gone;
	int miss;

	if (!u || self_map(addr, &m, path, sizeof(path)) < 0) {
		CHECK(0, "no tables or no mapping of this test");
		fr_unwind_tables_free(u);
		return;
	}
	gone = fork();
	if (gone == 0)
		_exit(0);
	CHECK(gone > 0 && waitpid(gone, NULL, 0) == gone, "fork: %s", strerror(errno));
	fr_unwind_tables_prefetch(u, (uint32_t)gone, &m);
	CHECK(fr_unwind_tables_settle(u, 20000) == 0, "the request did not finish in 20 s");
	fr_unwind_tables_stats(u, &st);
	CHECK(st.prefetched == 1 && st.skipped == 1 && st.built == 0 && st.linked == 0,
	      "an exited process: prefetched %llu skipped %llu built %llu linked %llu",
	      (unsigned long long)st.prefetched, (unsigned long long)st.skipped,
	      (unsigned long long)st.built, (unsigned long long)st.linked);

	fr_unwind_tables_prefetch(u, (uint32_t)getpid(), &m);
	CHECK(fr_unwind_tables_settle(u, 20000) == 0, "the build did not finish in 20 s");
	t = find(u, &m, addr, &miss);
	CHECK(t && t->nrows > 0, "no table at the first look-up (miss %d)", miss);
	fr_unwind_tables_prefetch(u, (uint32_t)getpid(), &m);
	fr_unwind_tables_stats(u, &st);
	CHECK(st.prefetched == 2 && st.built == 1 && st.linked == 1 && st.pending == 0,
	      "prefetched %llu built %llu linked %llu pending %llu: want 2, 1, 1, 0",
	      (unsigned long long)st.prefetched, (unsigned long long)st.built,
	      (unsigned long long)st.linked, (unsigned long long)st.pending);
	fr_unwind_tables_free(u);
}

/* Copies of one ELF file, each with a build id of its own (the original's
 * bytes replaced where they are), mapped nowhere: each is read by its
 * path and has a table of its own. */
struct copies {
	char dir[64];
	struct fr_tracker_map self; /* the file's mapping in this process */
	char self_path[4096];
	uint8_t bid[FR_BUILD_ID_MAX];
	int bid_len;
	int n;
	char path[16][4200];
	uint8_t bids[16][FR_BUILD_ID_MAX];
};

static int make_copies(struct copies *c, uint64_t addr, int n)
{
	FILE *f;
	char *buf = NULL, *at;
	long size;

	memset(c, 0, sizeof(*c));
	snprintf(c->dir, sizeof(c->dir), "/tmp/fr-unwind-shares-XXXXXX");
	if (self_map(addr, &c->self, c->self_path, sizeof(c->self_path)) < 0 || !mkdtemp(c->dir))
		return -1;
	c->bid_len = fr_elf_build_id(c->self_path, c->bid, sizeof(c->bid));
	f = fopen(c->self_path, "rb");
	if (c->bid_len < 4 || !f || fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) <= 0 ||
	    !(buf = malloc((size_t)size)) || fseek(f, 0, SEEK_SET) < 0 ||
	    fread(buf, 1, (size_t)size, f) != (size_t)size ||
	    !(at = memmem(buf, (size_t)size, c->bid, (size_t)c->bid_len))) {
		if (f)
			fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	for (c->n = 0; c->n < n && c->n < 16; c->n++) {
		memcpy(c->bids[c->n], c->bid, (size_t)c->bid_len);
		c->bids[c->n][0] ^= 0x5a;
		c->bids[c->n][1] = (uint8_t)c->n;
		memcpy(at, c->bids[c->n], (size_t)c->bid_len);
		char dir[64];

		memcpy(dir, c->dir, sizeof(dir));
		snprintf(c->path[c->n], sizeof(c->path[c->n]), "%s/copy%d", dir, c->n);
		f = fopen(c->path[c->n], "wb");
		if (!f || fwrite(buf, 1, (size_t)size, f) != (size_t)size) {
			if (f)
				fclose(f);
			break;
		}
		fclose(f);
	}
	free(buf);
	return c->n == n ? 0 : -1;
}

static void free_copies(struct copies *c)
{
	for (int i = 0; i < c->n; i++)
		unlink(c->path[i]);
	rmdir(c->dir);
}

/* The mapping of copy `i` (-1: a build id no copy has) by a process of
 * user `uid`, at an address this process has not mapped. */
static struct fr_tracker_map copy_map(struct copies *c, int i, uint32_t uid)
{
	struct fr_tracker_map m = c->self;
	const uint64_t fake = 0x10000;

	m.start = fake;
	m.end = fake + (c->self.end - c->self.start);
	m.path = m.path_id = c->path[i < 0 ? 0 : i];
	m.build_id = i < 0 ? c->bid : c->bids[i];
	m.build_id_len = (uint8_t)c->bid_len;
	m.inode = FR_TRACKER_INODE_NONE;
	m.uid = uid;
	return m;
}

static const struct fr_cfi_table *copy_find(struct fr_unwind_tables *u, struct copies *c, int i,
					    uint32_t uid, uint64_t addr, int *miss)
{
	struct fr_tracker_map m = copy_map(c, i, uid);
	uint64_t vaddr;

	*miss = 0;
	return fr_unwind_tables_find(u, (uint32_t)getpid(), &m, 0x10000 + (addr - c->self.start),
				     &vaddr, miss);
}

static const struct fr_cfi_table *copy_built(struct fr_unwind_tables *u, struct copies *c, int i,
					     uint32_t uid, uint64_t addr, int *miss)
{
	const struct fr_cfi_table *t = copy_find(u, c, i, uid, addr, miss);

	if (t || *miss != FR_UNWIND_MISS_PENDING)
		return t;
	CHECK(fr_unwind_tables_settle(u, 20000) == 0, "the build did not finish in 20 s");
	return copy_find(u, c, i, uid, addr, miss);
}

/* Regression: a user's tables compete with that user's own. Root's table
 * (built first, then not used while one user builds six more) stays;
 * the user keeps only what fits beside it; status's figures per owner. */
static void test_shares_evict(void)
{
	uint64_t addr = (uint64_t)(uintptr_t)&test_shares_evict, size, budget;
	const struct fr_cfi_table *t;
	struct fr_share own[4];
	struct copies c;
	struct fr_unwind_tables *u;
	int miss, kept = 0;
	size_t n;

	if (make_copies(&c, addr, 7) < 0) {
		CHECK(0, "cannot make copies of this test's binary");
		free_copies(&c);
		return;
	}
	u = fr_unwind_tables_new(FR_UNWIND_TABLES_BUDGET);
	t = copy_built(u, &c, 0, 0, addr, &miss);
	CHECK(t, "root's table (miss %d)", miss);
	size = t ? fr_cfi_size(t) : 1;
	/* Two and a half tables: root's and one of the user's. */
	fr_unwind_tables_set_budget(u, size * 5 / 2);
	for (int i = 1; i < 7; i++)
		CHECK(copy_built(u, &c, i, 1001, addr, &miss), "user's table %d (miss %d)", i,
		      miss);
	CHECK(copy_find(u, &c, 0, 0, addr, &miss), "root's table was evicted (miss %d)", miss);
	for (int i = 1; i < 7; i++)
		kept += copy_find(u, &c, i, 1001, addr, &miss) != NULL;
	fr_unwind_tables_settle(u, 20000);
	n = fr_unwind_tables_owners(u, own, 4, NULL, &budget);
	CHECK(kept <= 1, "the user kept %d tables", kept);
	CHECK(n >= 1 && own[0].uid == 0 && own[0].bytes == size && own[0].entries == 1 &&
		      budget == size * 5 / 2,
	      "owners: %zu, root's %llu bytes in %u tables, budget %llu", n,
	      (unsigned long long)own[0].bytes, own[0].entries, (unsigned long long)budget);
	fr_unwind_tables_free(u);

	/* A table a user asked for first is root's once root uses it: the
	 * user's flood then evicts the user's own. */
	u = fr_unwind_tables_new(size * 5 / 2);
	CHECK(copy_built(u, &c, 0, 1001, addr, &miss), "the shared table (miss %d)", miss);
	CHECK(copy_find(u, &c, 0, 0, addr, &miss), "root's use (miss %d)", miss);
	n = fr_unwind_tables_owners(u, own, 4, NULL, &budget);
	CHECK(n == 1 && own[0].uid == 0 && own[0].bytes == size, "not root's: %zu owners, uid %u",
	      n, own[0].uid);
	for (int i = 1; i < 7; i++)
		copy_built(u, &c, i, 1001, addr, &miss);
	CHECK(copy_find(u, &c, 0, 1001, addr, &miss), "the shared table was evicted (miss %d)",
	      miss);
	fr_unwind_tables_free(u);
	free_copies(&c);
}

/* Regression: builds are taken in turns per user. Samples of one user
 * need a table, then root's one, then the user's eight more: root's is
 * built after at most the one running and one more of theirs (with a
 * margin for when the builds are seen: three), not after all nine (each
 * asked for after root's, by samples, and so first in one queue). On
 * copies of libc, whose builds take long enough to be seen in turn. */
static void test_shares_queue(void)
{
	/* libc's, whose builds take milliseconds: long enough to be told
	 * apart as they come. */
	uint64_t addr = (uint64_t)(uintptr_t)&qsort;
	struct fr_unwind_tables *u;
	struct copies c;
	int miss, before_root = -1;

	if (make_copies(&c, addr, 10) < 0) {
		CHECK(0, "cannot make copies of libc");
		free_copies(&c);
		return;
	}
	u = fr_unwind_tables_new(FR_UNWIND_TABLES_BUDGET);
	copy_find(u, &c, 1, 1001, addr, &miss);
	copy_find(u, &c, 0, 0, addr, &miss);
	for (int i = 2; i < 10; i++)
		copy_find(u, &c, i, 1001, addr, &miss);
	for (int round = 0; round < 2000 && before_root < 0; round++) {
		int ready = 0;

		fr_unwind_tables_wait(u, 10000000);
		/* Look-ups of the user's ask nothing new: all are asked. */
		for (int i = 1; i < 10; i++)
			ready += copy_find(u, &c, i, 1001, addr, &miss) != NULL;
		if (copy_find(u, &c, 0, 0, addr, &miss))
			before_root = ready;
	}
	CHECK(before_root >= 0 && before_root <= 3,
	      "root's build came after %d of the user's 9, queued before it", before_root);
	fr_unwind_tables_settle(u, 20000);
	fr_unwind_tables_free(u);

	free_copies(&c);
}

/* Regression: a file mapped first by a process that has exited by the
 * builder's turn, and meanwhile by one that lives, has its table built
 * (it was skipped: only the first process was asked whether it still
 * ran). Four builds of copies of libc go first, so that both mappings
 * are seen while the job still waits. */
static void test_prefetch_adopted(void)
{
	uint64_t addr = (uint64_t)(uintptr_t)&qsort;
	struct fr_unwind_tables_stats st;
	struct fr_unwind_tables *u;
	struct fr_tracker_map m;
	struct copies c;
	pid_t gone;
	int miss;

	if (make_copies(&c, addr, 5) < 0) {
		CHECK(0, "cannot make copies of libc");
		free_copies(&c);
		return;
	}
	gone = fork();
	if (gone == 0)
		_exit(0);
	CHECK(gone > 0 && waitpid(gone, NULL, 0) == gone, "fork: %s", strerror(errno));
	u = fr_unwind_tables_new(FR_UNWIND_TABLES_BUDGET);
	for (int i = 1; i < 5; i++)
		copy_find(u, &c, i, 0, addr, &miss);
	m = copy_map(&c, 0, 0);
	fr_unwind_tables_prefetch(u, (uint32_t)gone, &m);
	fr_unwind_tables_prefetch(u, (uint32_t)getpid(), &m);
	CHECK(fr_unwind_tables_settle(u, 20000) == 0, "the builds did not finish in 20 s");
	fr_unwind_tables_stats(u, &st);
	CHECK(st.skipped == 0 && st.built == 5,
	      "skipped %llu built %llu: want 0 and 5 (the live process's table skipped)",
	      (unsigned long long)st.skipped, (unsigned long long)st.built);
	CHECK(copy_find(u, &c, 0, 0, addr, &miss),
	      "the live process's table is not built (miss %d)", miss);
	fr_unwind_tables_free(u);
	free_copies(&c);
}

int main(void)
{
#if !defined(__x86_64__)
	printf("CFI tables are x86-64 only; skipped\n");
	return 77;
#endif
	test_keys();
	test_vdso();
	test_budget();
	test_trim_idle();
	test_linked();
	test_one_path();
	test_prefetch();
	test_prefetch_adopted();
	test_shares_evict();
	test_shares_queue();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("unwind_tables: all checks passed\n");
	return 0;
}
