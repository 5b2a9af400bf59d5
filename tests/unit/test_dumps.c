/* Dump retention: the newest dumps stay within dumps.keep and
 * dumps.max_bytes, a dump's profile and sidecar go together, and nothing
 * that is not named like a dump is ever removed, nor anything a symlink
 * points at. The dumps directory's checks (fr_dir_open_private): never a
 * symlink, owned by this user, not writable by group or others. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/store/ring.h"
#include "recorder/triggers/dumps.h"
#include "tests/unit/check.h"

static char dir[64];
static int dirfd_;

/* fr_dumps_retain on the test directory, through a descriptor as the
 * recorder calls it. */
static int retain(uint32_t keep, uint64_t max_bytes)
{
	return fr_dumps_retain(dirfd_, keep, max_bytes);
}

/* A file of `bytes` bytes whose mtime is `age` seconds in the past. */
static void make_file(const char *name, size_t bytes, int age)
{
	char path[256];
	struct timespec times[2];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0, "create %s: %s", path, strerror(errno));
	if (fd < 0)
		return;
	CHECK(ftruncate(fd, (off_t)bytes) == 0, "truncate %s", path);
	clock_gettime(CLOCK_REALTIME, &times[0]);
	times[0].tv_sec -= age;
	times[1] = times[0];
	CHECK(futimens(fd, times) == 0, "futimens %s", path);
	close(fd);
}

/* A dump STEM.pb.gz + STEM.json, `age` seconds old. */
static void make_dump(const char *stem, size_t bytes, int age)
{
	char name[200];

	snprintf(name, sizeof(name), "%s.pb.gz", stem);
	make_file(name, bytes, age);
	snprintf(name, sizeof(name), "%s.json", stem);
	make_file(name, 100, age);
}

static int exists(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

#define STAMP(n) "2026112" #n "T101010.123Z"

static void test_keep(void)
{
	int n;

	make_dump("db-signal-host-" STAMP(1), 1000, 50);
	make_dump("db-exit-host-" STAMP(2), 1000, 40);
	make_dump("web-cpu_above-host-" STAMP(3), 1000, 30);
	make_dump("db-manual-host-" STAMP(4), 1000, 20);
	make_dump("db-manual-host-" STAMP(5), 1000, 10);
	/* Not dumps: never touched, whatever their age. */
	make_file("notes.txt", 10, 100);
	make_file("other.pb.gz", 10, 100);			     /* no time in its name */
	make_file("lonely-signal-host-" STAMP(0) ".pb.gz", 10, 100); /* no sidecar */
	make_file("db-signal-host-" STAMP(6) ".pb.gz.tmp", 10, 100);

	n = retain(3, 0);
	CHECK(n == 2, "keep 3 of 5 removed %d", n);
	CHECK(!exists("db-signal-host-" STAMP(1) ".pb.gz") &&
		      !exists("db-signal-host-" STAMP(1) ".json"),
	      "the oldest dump (and its sidecar) stayed");
	CHECK(!exists("db-exit-host-" STAMP(2) ".pb.gz") &&
		      !exists("db-exit-host-" STAMP(2) ".json"),
	      "the second oldest dump stayed");
	CHECK(exists("web-cpu_above-host-" STAMP(3) ".pb.gz") &&
		      exists("db-manual-host-" STAMP(4) ".pb.gz") &&
		      exists("db-manual-host-" STAMP(5) ".json"),
	      "a newer dump was removed");
	CHECK(exists("notes.txt") && exists("other.pb.gz") &&
		      exists("lonely-signal-host-" STAMP(0) ".pb.gz") &&
		      exists("db-signal-host-" STAMP(6) ".pb.gz.tmp"),
	      "a file that is not a dump was removed");
	CHECK(retain(3, 0) == 0, "a second pass removed more");
}

static void test_max_bytes(void)
{
	int n;

	/* Three dumps of 1000 bytes kept; a byte limit of 2500 keeps two. */
	n = retain(100, 2500);
	CHECK(n == 1, "max_bytes 2500 removed %d dumps of 3000 bytes", n);
	CHECK(!exists("web-cpu_above-host-" STAMP(3) ".pb.gz"), "the oldest stayed over the limit");
	CHECK(exists("db-manual-host-" STAMP(5) ".pb.gz"), "the newest was removed");

	/* The newest dump stays even when it alone is over the limit. */
	make_dump("big-manual-host-" STAMP(7), 5000, 0);
	n = retain(100, 2500);
	CHECK(n == 2, "a 5000-byte newest dump with a 2500 limit removed %d", n);
	CHECK(exists("big-manual-host-" STAMP(7) ".pb.gz") &&
		      exists("big-manual-host-" STAMP(7) ".json"),
	      "the newest dump was removed for being large");
}

/* A symlink named like a dump (with a sidecar, itself a symlink or not)
 * is not a dump: retention neither removes it nor touches its target. A
 * later dump of the same millisecond ("...Z-2") is a dump. */
static void test_retain_symlinks(void)
{
	char target[128], link[256], buf[16] = "";
	int fd, n;

	snprintf(target, sizeof(target), "%s.canary", dir);
	fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && write(fd, "canary", 6) == 6, "cannot write %s", target);
	if (fd >= 0)
		close(fd);
	snprintf(link, sizeof(link), "%s/old-exit-host-" STAMP(0) ".pb.gz", dir);
	CHECK(symlink(target, link) == 0, "symlink %s", link);
	snprintf(link, sizeof(link), "%s/old-exit-host-" STAMP(0) ".json", dir);
	CHECK(symlink(target, link) == 0, "symlink %s", link);
	make_file("old2-exit-host-" STAMP(0) ".json", 10, 200);
	snprintf(link, sizeof(link), "%s/old2-exit-host-" STAMP(0) ".pb.gz", dir);
	CHECK(symlink(target, link) == 0, "symlink %s", link);
	make_dump("db-manual-host-" STAMP(8) "-2", 10, 300);

	n = retain(1, 0);
	CHECK(n >= 1, "keep 1 removed %d", n);
	CHECK(!exists("db-manual-host-" STAMP(8) "-2.pb.gz") &&
		      !exists("db-manual-host-" STAMP(8) "-2.json"),
	      "a second dump of one millisecond (STEM-2) is not taken for a dump");
	CHECK(exists("old-exit-host-" STAMP(0) ".pb.gz") &&
		      exists("old2-exit-host-" STAMP(0) ".pb.gz"),
	      "retention removed a symlink named like a dump");
	fd = open(target, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == 6 && memcmp(buf, "canary", 6) == 0,
	      "the file a symlink points at was changed or removed");
	if (fd >= 0)
		close(fd);
	unlink(target);
}

/* Temporary files of a dump killed half-way go once an hour old; fresh
 * ones (a dump being written) and look-alikes stay. */
static void test_retain_temps(void)
{
	make_dump("db-manual-host-" STAMP(9), 10, 0);
	make_file(".db-manual-host-" STAMP(1) ".pb.gz.0123456789ab", 10, 7200);
	make_file(".db-manual-host-" STAMP(1) "-2.json.a0b1c2d3e4f5", 10, 7200);
	make_file(".db-manual-host-" STAMP(2) ".pb.gz.0123456789ab", 10, 10);
	make_file(".notes.txt.0123456789ab", 10, 7200);
	make_file(".db-manual-host-" STAMP(3) ".pb.gz.0123456789AB", 10, 7200);
	make_file(".db-manual-host-" STAMP(4) ".pb.gz.tmp", 10, 7200);
	retain(100, 0);
	CHECK(!exists(".db-manual-host-" STAMP(1) ".pb.gz.0123456789ab") &&
		      !exists(".db-manual-host-" STAMP(1) "-2.json.a0b1c2d3e4f5"),
	      "a dead dump's temporary files stayed");
	CHECK(exists(".db-manual-host-" STAMP(2) ".pb.gz.0123456789ab"),
	      "the temporary file of a dump being written was removed");
	CHECK(exists(".notes.txt.0123456789ab") &&
		      exists(".db-manual-host-" STAMP(3) ".pb.gz.0123456789AB") &&
		      exists(".db-manual-host-" STAMP(4) ".pb.gz.tmp"),
	      "a file not named like a dump's temporary file was removed");
}

/* fr_dir_open_private on `path`: the descriptor (closed) or -errno, with
 * the message in `err`. */
static int open_private(const char *path, char *err, size_t errlen)
{
	int fd;

	err[0] = '\0';
	fd = fr_dir_open_private(path, 0700, err, errlen);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return fd;
}

static void test_dir_checks(void)
{
	char p[256], q[256], err[512];
	struct stat st;
	int ret;

	/* Missing components are created, the last one private. */
	snprintf(p, sizeof(p), "%s/new/a/b", dir);
	ret = open_private(p, err, sizeof(err));
	CHECK(ret == 0, "a missing directory was not created: %s", err);
	CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode) && !(st.st_mode & 077),
	      "the created directory is not private (mode %o)", (unsigned)st.st_mode);
	snprintf(q, sizeof(q), "%s/new/a/b/", dir);
	CHECK(open_private(q, err, sizeof(err)) == 0, "a trailing slash was refused: %s", err);

	/* The directory itself a symlink: refused, whoever owns it. */
	snprintf(q, sizeof(q), "%s/link", dir);
	CHECK(symlink(p, q) == 0, "symlink %s", q);
	ret = open_private(q, err, sizeof(err));
	CHECK(ret == -ELOOP && strstr(err, "symlink"), "a symlinked directory: %d %s", ret, err);

	/* Group- or world-writable: refused, naming the mode. */
	CHECK(chmod(p, 0777) == 0, "chmod");
	ret = open_private(p, err, sizeof(err));
	CHECK(ret == -EPERM && strstr(err, "mode 0777") && strstr(err, "group and others"),
	      "a world-writable directory: %d %s", ret, err);
	CHECK(chmod(p, 0720) == 0, "chmod");
	ret = open_private(p, err, sizeof(err));
	CHECK(ret == -EPERM && strstr(err, "mode 0720") && strstr(err, "by group"),
	      "a group-writable directory: %d %s", ret, err);
	CHECK(chmod(p, 0755) == 0, "chmod");
	CHECK(open_private(p, err, sizeof(err)) == 0, "a 0755 directory of ours: %s", err);

	/* Not a directory. */
	snprintf(q, sizeof(q), "%s/notes.txt", dir);
	ret = open_private(q, err, sizeof(err));
	CHECK(ret == -ENOTDIR, "a regular file as the directory: %d %s", ret, err);

	if (geteuid() != 0) {
		printf("dumps: not root, ownership checks skipped\n");
		return;
	}
	/* Owned by another user: refused, naming the uid. */
	CHECK(chown(p, 65534, 65534) == 0, "chown");
	ret = open_private(p, err, sizeof(err));
	CHECK(ret == -EPERM && strstr(err, "uid 65534"), "a directory of uid 65534: %d %s", ret,
	      err);
	CHECK(chown(p, 0, 0) == 0, "chown");

	/* A symlink on the way: followed when root owns it in a directory only
	 * root changes, refused when another user could change where it
	 * points. */
	snprintf(q, sizeof(q), "%s/via", dir);
	CHECK(symlink("new/a", q) == 0, "symlink %s", q);
	snprintf(q, sizeof(q), "%s/via/b", dir);
	CHECK(open_private(q, err, sizeof(err)) == 0, "a root symlink on the way: %s", err);
	snprintf(q, sizeof(q), "%s/via", dir);
	CHECK(lchown(q, 65534, 65534) == 0, "lchown");
	snprintf(q, sizeof(q), "%s/via/b", dir);
	ret = open_private(q, err, sizeof(err));
	CHECK(ret == -ELOOP && strstr(err, "uid 65534"), "another user's symlink on the way: %d %s",
	      ret, err);
	snprintf(q, sizeof(q), "%s/via", dir);
	CHECK(lchown(q, 0, 0) == 0, "lchown");
	CHECK(chmod(dir, 0777) == 0, "chmod");
	snprintf(q, sizeof(q), "%s/via/b", dir);
	ret = open_private(q, err, sizeof(err));
	/* Refused at the directory itself: nothing in it can be trusted. */
	CHECK(ret == -EPERM && strstr(err, "mode 0777"),
	      "a root symlink in a world-writable directory: %d %s", ret, err);
	CHECK(chmod(dir, 01777) == 0, "chmod");
	CHECK(open_private(q, err, sizeof(err)) == 0, "a root symlink in a sticky directory: %s",
	      err);
	CHECK(chmod(dir, 0700) == 0, "chmod");
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

/* fr_dumps_write into a fresh dumps directory: two dumps fired in the
 * same millisecond get two names, a leftover sidecar moves the name on,
 * files are 0600 (or the asked mode) whatever the umask, nothing
 * temporary is left, and an unsafe directory is refused before anything
 * is written in it. */
static void test_write(void)
{
	char ringpath[128], dumps[128], path[3][4096], err[512], p[4300];
	struct fr_profile_request preq;
	struct fr_dump_request req;
	struct fr_ring *ring = NULL;
	mode_t old_umask;
	int ret, n = 0;
	DIR *d;
	struct dirent *de;

	snprintf(ringpath, sizeof(ringpath), "%s.ring", dir);
	ret = fr_ring_open(&ring, ringpath, 8u << 20, 256u << 10, FR_RING_CREATE, err, sizeof(err));
	CHECK(ret == 0, "fr_ring_open: %d %s", ret, err);
	if (ret < 0)
		return;
	snprintf(dumps, sizeof(dumps), "%s.dumps/sub", dir);
	memset(&preq, 0, sizeof(preq));
	preq.t1 = fr_now_real_ns();
	preq.t0 = preq.t1 - 1000000000;
	preq.version = "test";
	memset(&req, 0, sizeof(req));
	req.dir = dumps;
	req.keep = 10;
	req.session = "db";
	req.trigger = "manual";
	req.reason = "test";
	req.fire_ns = 1795000000123456789LL;
	req.profile = &preq;

	old_umask = umask(0);
	ret = fr_dumps_write(ring, &req, path[0], sizeof(path[0]), err, sizeof(err));
	CHECK(ret == 0, "first dump: %d %s", ret, err);
	ret = fr_dumps_write(ring, &req, path[1], sizeof(path[1]), err, sizeof(err));
	CHECK(ret == 0, "second dump of the same millisecond: %d %s", ret, err);
	CHECK(strcmp(path[0], path[1]) != 0, "two dumps share %s", path[0]);
	CHECK(strstr(path[1], ".123Z-2.pb.gz") != NULL, "the second dump is named %s", path[1]);
	/* A sidecar without its profile keeps its name from the next dump. */
	snprintf(p, sizeof(p), "%.*s-3.json", (int)(strlen(path[0]) - strlen(".pb.gz")), path[0]);
	ret = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(ret >= 0, "cannot create %s", p);
	if (ret >= 0)
		close(ret);
	req.mode = 0640;
	ret = fr_dumps_write(ring, &req, path[2], sizeof(path[2]), err, sizeof(err));
	CHECK(ret == 0 && strstr(path[2], ".123Z-4.pb.gz"), "third dump: %d %s %s", ret, err,
	      path[2]);
	umask(old_umask);

	CHECK(mode_of(dumps) == 0700, "the dumps directory was created %o", mode_of(dumps));
	CHECK(mode_of(path[0]) == 0600, "a dump is mode %o with umask 0", mode_of(path[0]));
	snprintf(p, sizeof(p), "%.*s.json", (int)(strlen(path[0]) - strlen(".pb.gz")), path[0]);
	CHECK(mode_of(p) == 0600, "a sidecar is mode %o with umask 0", mode_of(p));
	CHECK(mode_of(path[2]) == 0640, "a dump with mode 0640 is %o", mode_of(path[2]));
	d = opendir(dumps);
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' || (de->d_name[1] && strcmp(de->d_name, "..") != 0))
			n++;
	if (d)
		closedir(d);
	CHECK(n == 7,
	      "%d files in the dumps directory, want 3 dumps, their sidecars and the "
	      "leftover sidecar",
	      n);

	/* Unsafe: refused with the reason, nothing written. */
	CHECK(chmod(dumps, 0777) == 0, "chmod");
	ret = fr_dumps_write(ring, &req, path[0], sizeof(path[0]), err, sizeof(err));
	CHECK(ret == -EPERM && strstr(err, "mode 0777"), "a 0777 dumps directory: %d %s", ret, err);
	CHECK(chmod(dumps, 0700) == 0, "chmod");
	fr_ring_close(ring);
	unlink(ringpath);
	snprintf(p, sizeof(p), "rm -rf '%s.dumps'", dir);
	if (system(p) != 0)
		fprintf(stderr, "could not remove %s.dumps\n", dir);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/fr-test-dumps-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd_ < 0) {
		perror(dir);
		return 1;
	}
	test_keep();
	test_max_bytes();
	test_retain_symlinks();
	test_retain_temps();
	test_dir_checks();
	test_write();
	close(dirfd_);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("dumps: all checks passed\n");
	return 0;
}
