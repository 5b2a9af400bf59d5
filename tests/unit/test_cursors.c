/* Named cursors (recorder/requests/cursors.h): a cursor is per user, moves only when
 * its call commits, is held by one call at a time, survives a reopen (the
 * file beside the ring), is bounded in count and name; the file is
 * replaced atomically with mode 0600, a symlink in its place is neither
 * read nor followed, and lines that are not cursors are skipped. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder/requests/cursors.h"
#include "tests/unit/check.h"

static char dir[64], path[128];

static void write_text(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");

	CHECK(f && fputs(text, f) >= 0, "cannot write %s", p);
	if (f)
		fclose(f);
}

/* Takes and commits (uid, name) at t. Returns fr_cursor_take()'s result. */
static int move(struct fr_cursors *c, uint32_t uid, const char *name, int64_t t, int64_t *was)
{
	char err[256];
	int exists;
	int ret = fr_cursor_take(c, uid, name, was, &exists, err, sizeof(err));

	if (ret == 0)
		CHECK(fr_cursor_release(c, uid, name, 1, t, err, sizeof(err)) == 0, "release: %s",
		      err);
	return ret;
}

static void test_basics(void)
{
	struct fr_cursors *c;
	char err[256];
	int64_t t = -1;
	int exists = -1;
	struct stat st;

	CHECK(fr_cursors_open(&c, path, err, sizeof(err)) == 0 && !err[0], "open: %s", err);
	CHECK(fr_cursor_take(c, 1000, "hourly", &t, &exists, err, sizeof(err)) == 0 && !exists &&
		      t == 0,
	      "a new cursor: exists %d t %lld", exists, (long long)t);
	/* Held: a second call with the name is refused. */
	CHECK(fr_cursor_take(c, 1000, "hourly", &t, &exists, err, sizeof(err)) == -EBUSY &&
		      strstr(err, "in use"),
	      "a held cursor was handed out again: %s", err);
	/* Another user's cursor of the same name is another cursor. */
	CHECK(move(c, 1001, "hourly", 500, &t) == 0 && t == 0, "uid 1001's hourly");
	/* Not committed (the profile failed): a new cursor is forgotten. */
	CHECK(fr_cursor_release(c, 1000, "hourly", 0, 123, err, sizeof(err)) == 0, "release");
	CHECK(fr_cursor_take(c, 1000, "hourly", &t, &exists, err, sizeof(err)) == 0 && !exists,
	      "an uncommitted new cursor was kept");
	CHECK(fr_cursor_release(c, 1000, "hourly", 1, 100, err, sizeof(err)) == 0, "commit: %s",
	      err);
	CHECK(fr_cursor_take(c, 1000, "hourly", &t, &exists, err, sizeof(err)) == 0 && exists &&
		      t == 100,
	      "the committed cursor: exists %d t %lld", exists, (long long)t);
	/* Not committed: it stays where it was. */
	CHECK(fr_cursor_release(c, 1000, "hourly", 0, 999, err, sizeof(err)) == 0, "release");
	CHECK(move(c, 1000, "hourly", 200, &t) == 0 && t == 100, "moved from %lld, want 100",
	      (long long)t);
	CHECK(fr_cursors_count(c) == 2, "%u cursors, want 2", fr_cursors_count(c));
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600 && S_ISREG(st.st_mode),
	      "the file is not a regular file of mode 0600");
	fr_cursors_close(c);

	/* Reopened: both there, each user's own. */
	CHECK(fr_cursors_open(&c, path, err, sizeof(err)) == 0 && !err[0], "reopen: %s", err);
	CHECK(move(c, 1000, "hourly", 300, &t) == 0 && t == 200, "reopened uid 1000: %lld",
	      (long long)t);
	CHECK(move(c, 1001, "hourly", 600, &t) == 0 && t == 500, "reopened uid 1001: %lld",
	      (long long)t);
	fr_cursors_close(c);
}

static void test_limits(void)
{
	static const char *const bad[] =
		{"",
		 "a/b",
		 "../x",
		 "a b",
		 "a\nb",
		 "na\xc3\xafve",
		 "0123456789012345678901234567890123456789012345678901234567890123456789"};
	struct fr_cursors *c;
	char err[256], name[32];
	int64_t t;
	int exists, ret;

	unlink(path);
	CHECK(fr_cursors_open(&c, path, err, sizeof(err)) == 0, "open: %s", err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ret = fr_cursor_take(c, 7, bad[i], &t, &exists, err, sizeof(err));
		CHECK(ret == -EINVAL && strstr(err, "cursor name"), "name \"%s\": %d %s", bad[i],
		      ret, err);
	}
	for (int i = 0; i < FR_CURSORS_PER_USER; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		CHECK(move(c, 7, name, 1 + i, &t) == 0, "cursor %d refused", i);
	}
	ret = fr_cursor_take(c, 7, "one-more", &t, &exists, err, sizeof(err));
	CHECK(ret == -ENOSPC && strstr(err, "per user"), "a cursor over the limit: %d %s", ret,
	      err);
	/* The others still go on, and other users are not limited by it. */
	CHECK(move(c, 7, "c3", 99, &t) == 0 && t == 4, "an existing cursor at the limit");
	CHECK(move(c, 8, "one-more", 5, &t) == 0, "another user was limited");
	fr_cursors_close(c);
}

static void test_hostile_file(void)
{
	struct fr_cursors *c;
	char err[256], target[160], buf[256];
	struct stat st;
	int64_t t;
	int exists, fd;
	ssize_t n;

	/* Lines that are not cursors are skipped; the good ones load. */
	write_text(path, "flightrec-cursors 1\n"
			 "1000 good 42\n"
			 "1000 bad/name 1\n"
			 "1000 good 43\n"
			 "x y z\n"
			 "1001 neg -5\n"
			 "1002 long 1 extra\n"
			 "1003 fine 7\n");
	CHECK(fr_cursors_open(&c, path, err, sizeof(err)) == 0 && strstr(err, "5 lines"),
	      "bad lines: %s", err);
	CHECK(fr_cursor_take(c, 1000, "good", &t, &exists, err, sizeof(err)) == 0 && exists &&
		      t == 42,
	      "good: %lld", (long long)t);
	fr_cursor_release(c, 1000, "good", 0, 0, err, sizeof(err));
	CHECK(fr_cursors_count(c) == 2, "%u cursors loaded, want 2", fr_cursors_count(c));
	fr_cursors_close(c);

	/* Not a cursors file at all. */
	write_text(path, "hello\n1000 good 42\n");
	CHECK(fr_cursors_open(&c, path, err, sizeof(err)) == 0 && strstr(err, "not a cursors"),
	      "garbage: %s", err);
	CHECK(fr_cursors_count(c) == 0, "cursors from a file that is not one");
	fr_cursors_close(c);

	/* A symlink in its place: not read, and replaced (not followed) on
	 * the next move. */
	unlink(path);
	snprintf(target, sizeof(target), "%s/target", dir);
	write_text(target, "flightrec-cursors 1\n1000 stolen 42\n");
	CHECK(symlink(target, path) == 0, "symlink");
	CHECK(fr_cursors_open(&c, path, err, sizeof(err)) == 0 && strstr(err, "cannot open"),
	      "symlink: %s", err);
	CHECK(fr_cursors_count(c) == 0, "cursors read through a symlink");
	CHECK(move(c, 1000, "x", 5, &t) == 0, "move");
	CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "the symlink was not replaced");
	fd = open(target, O_RDONLY);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	CHECK(strstr(buf, "stolen") && !strstr(buf, " x "), "the symlink's target was written");
	fr_cursors_close(c);
	unlink(target);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/fr-cursors-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/ring.cursors", dir);
	test_basics();
	test_limits();
	test_hostile_file();
	unlink(path);
	rmdir(dir);
	return failures ? 1 : 0;
}
