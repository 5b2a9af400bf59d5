/* Readers of /proc (see proc.h for the contract).
 *
 * Files are read with a single read(2) into a buffer on the stack, sized
 * for what the kernel writes (a stat line up to starttime, the head of
 * status where Uid: is), except the cgroup file and mountinfo, which are
 * read line by line because what is looked for may come after many
 * lines.
 */
#include "recorder/tracking/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/query/targets.h"
#include "core/util/fs.h"

ssize_t fr_proc_read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	else
		buf[n] = '\0';
	close(fd);
	return n;
}

int fr_proc_read_cgroup(const char *proc, uint32_t pid, char *dst, size_t len)
{
	char path[160], line[4096 + 8];
	FILE *f;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "%s/%u/cgroup", proc, pid);
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	/* Line by line: on machines with many v1 controllers the v2 line,
	 * which comes last, may lie beyond any fixed-size first read. */
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) == 0) {
			size_t n = strcspn(line + 3, "\n");

			if (n >= len)
				n = len - 1;
			memcpy(dst, line + 3, n);
			dst[n] = '\0';
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

int fr_proc_read_uid(const char *proc, uint32_t pid, uint32_t *uid)
{
	char path[160], buf[2048], *u, *end;
	unsigned long v;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/status", proc, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ENOENT;
	buf[n] = '\0';
	u = strstr(buf, "\nUid:");
	if (!u)
		return -ENOENT;
	v = strtoul(u + 5, &end, 10);
	if (end == u + 5 || v >= UINT32_MAX)
		return -ENOENT;
	*uid = (uint32_t)v;
	return 0;
}

int fr_proc_read_comm(const char *proc, uint32_t pid, uint32_t tid, char *dst, size_t len)
{
	char path[192], buf[64];
	ssize_t n;

	if (tid)
		snprintf(path, sizeof(path), "%s/%u/task/%u/comm", proc, pid, tid);
	else
		snprintf(path, sizeof(path), "%s/%u/comm", proc, pid);
	n = fr_proc_read_text(path, buf, sizeof(buf));
	if (n <= 0)
		return n < 0 ? (int)n : -ENOENT;
	if (buf[n - 1] == '\n')
		buf[--n] = '\0';
	if ((size_t)n >= len)
		n = (ssize_t)len - 1;
	memcpy(dst, buf, (size_t)n);
	dst[n] = '\0';
	return 0;
}

int fr_proc_read_stat(const char *proc, uint32_t pid, struct fr_proc_stat *ps)
{
	char path[160], buf[1024], *lp, *rp, *p;
	uint64_t utime = 0;
	ssize_t n;
	size_t clen;

	memset(ps, 0, sizeof(*ps));
	snprintf(path, sizeof(path), "%s/%u/stat", proc, pid);
	n = fr_proc_read_text(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	lp = strchr(buf, '(');
	rp = strrchr(buf, ')');
	if (!lp || !rp || rp < lp)
		return -EPROTO;
	clen = (size_t)(rp - lp - 1);
	if (clen >= FR_LIMIT_COMM_LEN)
		clen = FR_LIMIT_COMM_LEN - 1;
	memcpy(ps->comm, lp + 1, clen);
	ps->comm[clen] = '\0';
	ps->fields = 2;
	if (rp[1] != ' ')
		return -EPROTO;
	p = rp + 2;
	/* Field 3 is the state, 4 the parent; utime, stime are 14, 15;
	 * starttime 22. */
	for (int field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -EPROTO;
		if (field == 3)
			ps->state = *p;
		else if (field == 4)
			ps->ppid = (uint32_t)strtoul(p, NULL, 10);
		else if (field == 14)
			utime = strtoull(p, NULL, 10);
		else if (field == 15)
			ps->ticks = utime + strtoull(p, NULL, 10);
		else if (field == 22)
			ps->start = strtoull(p, NULL, 10);
		ps->fields = field;
		while (*p && *p != ' ')
			p++;
	}
	return 0;
}

int fr_proc_read_machine(const char *proc, uint64_t *busy, uint64_t *total)
{
	char path[160], buf[512], *p;
	uint64_t v[10] = {0}, sum = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/stat", proc);
	n = fr_proc_read_text(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (strncmp(buf, "cpu ", 4) != 0)
		return -EPROTO;
	p = buf + 4;
	/* user nice system idle iowait irq softirq steal (guest and
	 * guest_nice are already in user and nice). */
	for (int i = 0; i < 8; i++) {
		char *end;

		v[i] = strtoull(p, &end, 10);
		if (end == p)
			return -EPROTO;
		p = end;
		sum += v[i];
	}
	*total = sum;
	*busy = sum - v[3] - v[4];
	return 0;
}

void fr_proc_cgroup_root(const char *proc, char *dst, size_t len)
{
	char path[160], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/self/mountinfo", proc);
	f = fopen(path, "re");
	snprintf(dst, len, "/sys/fs/cgroup");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - cgroup2 ");
		int start = 0, end = 0;

		/* Fields: id parent major:minor root mountpoint ... */
		if (sep && sscanf(line, "%*s %*s %*s %*s %n%*s%n", &start, &end) == 0 &&
		    end > start && (size_t)(end - start) < len) {
			memcpy(dst, line + start, (size_t)(end - start));
			dst[end - start] = '\0';
			break;
		}
	}
	fclose(f);
}

int fr_proc_read_cgroup_usage(const char *root, const char *cgroup, uint64_t *usec)
{
	char path[8192], buf[1024], *p;
	ssize_t n;

	snprintf(path, sizeof(path), "%s%s%s/cpu.stat", root, cgroup[0] == '/' ? "" : "/", cgroup);
	n = fr_proc_read_text(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, "usage_usec ", 11) == 0) {
			*usec = strtoull(p + 11, NULL, 10);
			return 0;
		}
	}
	return -EPROTO;
}

int fr_proc_each_pid(const char *proc, void (*fn)(void *arg, uint32_t pid), void *arg)
{
	DIR *d = opendir(proc);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (!de->d_name[0] || *end || pid == 0 || pid > UINT32_MAX)
			continue;
		fn(arg, (uint32_t)pid);
		n++;
	}
	closedir(d);
	return n;
}

int fr_proc_open_mapped(uint32_t pid, uint64_t start, uint64_t end, const char *path, uint64_t max,
			struct stat *st)
{
	char buf[4200];
	int fd, pfd;

	/* The mapped inode, whatever its path names today: a magic link,
	 * taken with O_PATH (no open of the file yet) and opened for reading
	 * only when it is a regular file of bounded size. */
	snprintf(buf, sizeof(buf), "/proc/%u/map_files/%llx-%llx", pid, (unsigned long long)start,
		 (unsigned long long)end);
	pfd = open(buf, O_PATH | O_CLOEXEC);
	if (pfd >= 0) {
		fd = fr_reopen_regular(pfd, max, st);
		close(pfd);
		return fd;
	}
	if (!path)
		return -errno;
	snprintf(buf, sizeof(buf), "/proc/%u/root", pid);
	fd = fr_open_untrusted(buf, path, max, st);
	if (fd < 0 && fd != -ELOOP && fd != -ENOEXEC && fd != -EFBIG)
		fd = fr_open_untrusted(NULL, path, max, st);
	return fd;
}

int fr_proc_matches(const char *proc, uint32_t pid, const struct fr_targets *t)
{
	char comm[FR_LIMIT_COMM_LEN], cgroup[FR_LIMIT_CGROUP_LEN];
	uint32_t uid;
	int ok = 1;

	if (t->ncomms) {
		ok = 0;
		if (fr_proc_read_comm(proc, pid, 0, comm, sizeof(comm)) == 0)
			for (uint32_t i = 0; i < t->ncomms && !ok; i++)
				ok = strcmp(t->comms[i], comm) == 0;
	}
	if (ok && t->cgroup[0])
		ok = fr_proc_read_cgroup(proc, pid, cgroup, sizeof(cgroup)) == 0 &&
		     fr_cgroup_within(cgroup, t->cgroup);
	if (ok && t->has_uid)
		ok = fr_proc_read_uid(proc, pid, &uid) == 0 && uid == t->uid;
	return ok;
}
