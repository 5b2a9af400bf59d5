/* Dump retention: the newest dumps stay within dumps.keep and
 * dumps.max_bytes, a dump's profile and sidecar go together, and nothing
 * that is not named like a dump is ever removed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "recorder/dumps.h"
#include "tests/unit/check.h"

static char dir[64];

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
	make_file("other.pb.gz", 10, 100);                       /* no time in its name */
	make_file("lonely-signal-host-" STAMP(0) ".pb.gz", 10, 100); /* no sidecar */
	make_file("db-signal-host-" STAMP(6) ".pb.gz.tmp", 10, 100);

	n = fr_dumps_retain(dir, 3, 0);
	CHECK(n == 2, "keep 3 of 5 removed %d", n);
	CHECK(!exists("db-signal-host-" STAMP(1) ".pb.gz") &&
		      !exists("db-signal-host-" STAMP(1) ".json"),
	      "the oldest dump (and its sidecar) stayed");
	CHECK(!exists("db-exit-host-" STAMP(2) ".pb.gz") && !exists("db-exit-host-" STAMP(2) ".json"),
	      "the second oldest dump stayed");
	CHECK(exists("web-cpu_above-host-" STAMP(3) ".pb.gz") &&
		      exists("db-manual-host-" STAMP(4) ".pb.gz") &&
		      exists("db-manual-host-" STAMP(5) ".json"),
	      "a newer dump was removed");
	CHECK(exists("notes.txt") && exists("other.pb.gz") &&
		      exists("lonely-signal-host-" STAMP(0) ".pb.gz") &&
		      exists("db-signal-host-" STAMP(6) ".pb.gz.tmp"),
	      "a file that is not a dump was removed");
	CHECK(fr_dumps_retain(dir, 3, 0) == 0, "a second pass removed more");
}

static void test_max_bytes(void)
{
	int n;

	/* Three dumps of 1000 bytes kept; a byte limit of 2500 keeps two. */
	n = fr_dumps_retain(dir, 100, 2500);
	CHECK(n == 1, "max_bytes 2500 removed %d dumps of 3000 bytes", n);
	CHECK(!exists("web-cpu_above-host-" STAMP(3) ".pb.gz"), "the oldest stayed over the limit");
	CHECK(exists("db-manual-host-" STAMP(5) ".pb.gz"), "the newest was removed");

	/* The newest dump stays even when it alone is over the limit. */
	make_dump("big-manual-host-" STAMP(7), 5000, 0);
	n = fr_dumps_retain(dir, 100, 2500);
	CHECK(n == 2, "a 5000-byte newest dump with a 2500 limit removed %d", n);
	CHECK(exists("big-manual-host-" STAMP(7) ".pb.gz") &&
		      exists("big-manual-host-" STAMP(7) ".json"),
	      "the newest dump was removed for being large");
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/fr-test-dumps-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_keep();
	test_max_bytes();
	CHECK(fr_dumps_retain("/nonexistent/dumps", 1, 0) == -ENOENT, "a missing directory");
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
