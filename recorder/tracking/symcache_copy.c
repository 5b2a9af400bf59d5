/* A copy into the symbol cache, run on a worker under the cache's
 * deadline (recorder/tracking/symcache.c queues it): an ELF image whose
 * build id is checked on the open file, or a process's JIT perf map. The
 * source is a file users control: only the byte ranges symbolization
 * reads are copied (holes elsewhere), into a temporary renamed into place.
 */
#include "recorder/tracking/symcache_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/symbols/perfmap.h"
#include "core/symbols/symbols.h"
#include "core/util/fs.h"
#include "core/util/log.h"
#include "recorder/tracking/proc.h"

#define COPY_BUF (1u << 20)

static bool has_build_id(int fd, const uint8_t *bid, uint8_t len)
{
	uint8_t got[FR_ELF_BUILD_ID_MAX];

	return fr_elf_build_id_fd(fd, got, sizeof(got)) == (int)len && memcmp(got, bid, len) == 0;
}

/* Copies the range `r` of `src` to the same offset of `dst`. Returns 0
 * or -errno (-EIO for a source truncated meanwhile). */
static int copy_range(int src, int dst, const struct fr_elf_range *r, char *buf)
{
	for (uint64_t done = 0; done < r->len;) {
		size_t want = r->len - done < COPY_BUF ? (size_t)(r->len - done) : COPY_BUF;
		ssize_t n = fr_pread_full(src, buf, want, r->off + done);

		if (n < 0 || (size_t)n < want)
			return n < 0 ? (int)n : -EIO;
		if (pwrite(dst, buf, want, (off_t)(r->off + done)) != (ssize_t)want)
			return -EIO;
		done += want;
	}
	return 0;
}

/* A new temporary file of the cache: its fd, its name in `tmp`. */
static int tmp_create(struct copy_call *c, char *tmp, size_t len)
{
	static unsigned counter;
	int fd;

	snprintf(tmp, len, ".tmp-%d-%u", (int)getpid(),
		 __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
	/* O_EXCL|O_NOFOLLOW: whatever is at the name is not ours to open. */
	fd = openat(c->dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

/* Ends the temporary `tmp` open at `fd` (closed) written with `ret`: when
 * 0, synced and renamed to `name`, its disk added to c->bytes; else
 * removed. Returns ret or the error that stopped it. */
static int tmp_commit(struct copy_call *c, int fd, const char *tmp, const char *name, int ret)
{
	struct stat st;

	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (ret == 0 && fstat(fd, &st) < 0)
		ret = -errno;
	close(fd);
	/* rename() replaces the entry itself: a symlink at `name` is not
	 * followed, a FIFO not opened. */
	if (ret == 0 && renameat(c->dirfd, tmp, c->dirfd, name) < 0)
		ret = -errno;
	if (ret < 0)
		unlinkat(c->dirfd, tmp, 0);
	else
		c->bytes += (uint64_t)st.st_blocks * 512;
	return ret;
}

/* Copies the `nranges` ranges of `src` (a file of `size` bytes) into a
 * new temporary file of the cache, the same size, zeros (holes)
 * elsewhere, and renames it to `name`, when `bid` (len > 0) is still the
 * copy's build id. Adds the disk it takes to c->bytes. Returns 0 or
 * -errno (nothing left behind). */
static int write_copy(struct copy_call *c, int src, uint64_t size,
		      const struct fr_elf_range *ranges, size_t nranges, const char *name,
		      const uint8_t *bid, uint8_t bid_len)
{
	char tmp[256], *buf = malloc(COPY_BUF);
	int fd, ret = 0;

	if (!buf)
		return -ENOMEM;
	fd = tmp_create(c, tmp, sizeof(tmp));
	if (fd < 0) {
		free(buf);
		return fd;
	}
	for (size_t i = 0; i < nranges && ret == 0; i++)
		ret = copy_range(src, fd, &ranges[i], buf);
	free(buf);
	if (ret == 0 && ftruncate(fd, (off_t)size) < 0)
		ret = -errno;
	/* The file may have been rewritten while it was read. */
	if (ret == 0 && bid_len && !has_build_id(fd, bid, bid_len))
		ret = -ESTALE;
	return tmp_commit(c, fd, tmp, name, ret);
}

int symcache_write_buf(struct copy_call *c, const void *buf, size_t len, const char *name)
{
	char tmp[256];
	int fd = tmp_create(c, tmp, sizeof(tmp)), ret = 0;
	ssize_t n;

	if (fd < 0)
		return fd;
	n = write(fd, buf, len);
	if (n < 0 || (size_t)n != len)
		ret = n < 0 ? -errno : -EIO;
	return tmp_commit(c, fd, tmp, name, ret);
}

/* The owner of the file `j` maps, from the mapping's inode (stat, no
 * open). Returns 0 or -errno (the process is gone). */
static int mapped_owner(const struct job *j, uid_t *uid)
{
	char buf[96];
	struct stat st;

	snprintf(buf, sizeof(buf), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, j->pid, j->start,
		 j->end);
	if (stat(buf, &st) < 0)
		return -errno;
	*uid = st.st_uid;
	return 0;
}

/* Whether the copy `name` is there; it is used again, so evicted last. */
static bool cached_already(struct copy_call *c, const char *name)
{
	struct stat st;

	if (fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return false;
	utimensat(c->dirfd, name, NULL, AT_SYMLINK_NOFOLLOW);
	return true;
}

/* A copy is named by its build id and, unless root owns the file, by its
 * owner (fr_symcache_elf_name()): a build id is a note anyone can write
 * into their own file, so a user's file never stands in for root's, and
 * queries use it only for that user's processes. */
static int copy_elf(struct copy_call *c)
{
	const struct job *j = c->job;
	char name[FR_SYMCACHE_NAME_MAX];
	struct fr_elf_range *ranges = NULL;
	size_t nranges = 0;
	struct stat st;
	uid_t uid = 0;
	int fd, ret;

	if (mapped_owner(j, &uid) == 0 &&
	    fr_symcache_elf_name(name, sizeof(name), j->bid, j->bid_len, uid) == 0 &&
	    cached_already(c, name))
		return 0;
	fd = fr_proc_open_mapped(j->pid, j->start, j->end, j->path, c->file_max, &st);
	if (fd < 0)
		return fd;
	/* The owner of the file opened decides, whatever stat said. */
	ret = fr_symcache_elf_name(name, sizeof(name), j->bid, j->bid_len, st.st_uid);
	if (ret == 0 && cached_already(c, name)) {
		close(fd);
		return 0;
	}
	/* Code and data are not copied: a copy is for naming addresses. */
	if (ret == 0)
		ret = has_build_id(fd, j->bid, j->bid_len)
			      ? fr_elf_symbol_ranges(fd, (uint64_t)st.st_size, &ranges, &nranges)
			      : -ESTALE;
	if (ret == 0)
		ret = write_copy(c, fd, (uint64_t)st.st_size, ranges, nranges, name, j->bid,
				 j->bid_len);
	free(ranges);
	close(fd);
	return ret;
}

static int copy_perfmap(struct copy_call *c)
{
	const struct job *j = c->job;
	char name[128], root[64], path[64];
	struct stat st, old;
	uint32_t ns_pid;
	uid_t uid;
	int fd, ret;

	ret = fr_perfmap_proc_ids(j->pid, &uid, &ns_pid);
	if (ret < 0)
		return ret;
	snprintf(root, sizeof(root), "/proc/%u/root", j->pid);
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", ns_pid);
	fd = fr_open_untrusted(root, path, FR_PERFMAP_MAX_SIZE, &st);
	if (fd < 0)
		return fd;
	/* As the symbolizer reads it: only the process's user's names. */
	ret = st.st_uid == uid ? 0 : -EPERM;
	/* Named with the uid its chunks record, which queries look it up
	 * with and which it is counted to. */
	fr_symcache_perfmap_name(name, sizeof(name), NULL, j->pid, j->start_ns, j->uid);
	/* Unchanged since the last copy: nothing to do. */
	if (ret == 0 && fstatat(c->dirfd, name, &old, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(old.st_mode) && old.st_size == st.st_size) {
		utimensat(c->dirfd, name, NULL, AT_SYMLINK_NOFOLLOW);
		close(fd);
		return 0;
	}
	if (ret == 0) {
		struct fr_elf_range all = {0, (uint64_t)st.st_size};

		ret = write_copy(c, fd, (uint64_t)st.st_size, &all, 1, name, NULL, 0);
	}
	close(fd);
	return ret;
}

void symcache_copy_run(void *arg)
{
	struct copy_call *c = arg;

	if (c->job->kind == JOB_PYSTATUS || c->job->kind == JOB_PYCODES)
		symcache_python_run(c);
	else
		c->ret = c->job->kind == JOB_ELF ? copy_elf(c) : copy_perfmap(c);
}

void symcache_copy_drop(void *arg)
{
	struct copy_call *c = arg;

	close(c->dirfd);
	symcache_job_free(c->job);
	free(c);
}
