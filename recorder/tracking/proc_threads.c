/* The per-thread readers of /proc for `flightrec threads` (see
 * recorder/tracking/proc_threads.h): stat through fr_proc_read_stat() with the
 * task directory as its root, wchan and syscall as plain text.
 */
#include "recorder/tracking/proc_threads.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int64_t fr_proc_parse_syscall(const char *text)
{
	char *end;
	long long nr;

	if (strncmp(text, "running", 7) == 0)
		return FR_PROC_SYSCALL_RUNNING;
	nr = strtoll(text, &end, 10);
	if (end == text || (*end != ' ' && *end != '\n' && *end != '\0'))
		return FR_PROC_SYSCALL_UNKNOWN;
	if (nr == -1)
		return FR_PROC_SYSCALL_NONE;
	if (nr < 0 || nr > 100000)
		return FR_PROC_SYSCALL_UNKNOWN;
	return nr;
}

/* wchan: a kernel function name, "0" when there is none to say (or the
 * kernel hides it), maybe without a newline. Kept only when it is a
 * plain identifier, so nothing odd reaches a terminal. */
static void read_wchan(const char *dir, struct fr_proc_thread *t)
{
	char path[224], buf[FR_PROC_WCHAN_LEN];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/wchan", dir);
	n = fr_proc_read_text(path, buf, sizeof(buf));
	if (n <= 0)
		return;
	buf[strcspn(buf, "\n")] = '\0';
	if (strcmp(buf, "0") == 0)
		return;
	for (const char *p = buf; *p; p++)
		if (!(*p == '_' || *p == '.' || (*p >= '0' && *p <= '9') ||
		      (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
			return;
	snprintf(t->wchan, sizeof(t->wchan), "%s", buf);
}

int fr_proc_read_thread(const char *proc, uint32_t pid, uint32_t tid, struct fr_proc_thread *t)
{
	char task[160], dir[192], path[224], buf[256];
	struct fr_proc_stat ps;
	ssize_t n;
	int ret;

	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->syscall = FR_PROC_SYSCALL_UNKNOWN;
	snprintf(task, sizeof(task), "%s/%u/task", proc, pid);
	ret = fr_proc_read_stat(task, tid, &ps);
	if (ret < 0)
		return ret;
	snprintf(t->name, sizeof(t->name), "%s", ps.comm);
	t->state = ps.state;
	t->ticks = ps.ticks;
	t->start = ps.start;
	snprintf(dir, sizeof(dir), "%s/%u", task, tid);
	read_wchan(dir, t);
	snprintf(path, sizeof(path), "%s/syscall", dir);
	n = fr_proc_read_text(path, buf, sizeof(buf));
	if (n > 0)
		t->syscall = fr_proc_parse_syscall(buf);
	return 0;
}

const char *fr_proc_state_name(char state)
{
	switch (state) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "uninterruptible";
	case 'T': return "stopped";
	case 't': return "traced";
	case 'Z': return "zombie";
	case 'X':
	case 'x': return "dead";
	case 'I': return "idle";
	default: return "unknown";
	}
}

struct syscall_name {
	long nr;
	const char *name;
};

/* The calls threads are found blocked in; the numbers differ between
 * architectures, so they come from <sys/syscall.h>, and calls an
 * architecture lacks (poll on arm64) are left out there. */
static const struct syscall_name syscall_names[] = {
	{SYS_read, "read"},
	{SYS_write, "write"},
	{SYS_readv, "readv"},
	{SYS_writev, "writev"},
	{SYS_pread64, "pread64"},
	{SYS_pwrite64, "pwrite64"},
	{SYS_openat, "openat"},
	{SYS_close, "close"},
	{SYS_ioctl, "ioctl"},
	{SYS_futex, "futex"},
	{SYS_nanosleep, "nanosleep"},
	{SYS_clock_nanosleep, "clock_nanosleep"},
	{SYS_ppoll, "ppoll"},
	{SYS_pselect6, "pselect6"},
	{SYS_epoll_pwait, "epoll_pwait"},
	{SYS_accept4, "accept4"},
	{SYS_connect, "connect"},
	{SYS_recvfrom, "recvfrom"},
	{SYS_recvmsg, "recvmsg"},
	{SYS_sendto, "sendto"},
	{SYS_sendmsg, "sendmsg"},
	{SYS_wait4, "wait4"},
	{SYS_waitid, "waitid"},
	{SYS_flock, "flock"},
	{SYS_fcntl, "fcntl"},
	{SYS_fsync, "fsync"},
	{SYS_fdatasync, "fdatasync"},
	{SYS_io_getevents, "io_getevents"},
	{SYS_io_uring_enter, "io_uring_enter"},
	{SYS_rt_sigtimedwait, "rt_sigtimedwait"},
	{SYS_rt_sigsuspend, "rt_sigsuspend"},
	{SYS_msgrcv, "msgrcv"},
	{SYS_semtimedop, "semtimedop"},
#ifdef SYS_poll
	{SYS_poll, "poll"},
#endif
#ifdef SYS_select
	{SYS_select, "select"},
#endif
#ifdef SYS_epoll_wait
	{SYS_epoll_wait, "epoll_wait"},
#endif
#ifdef SYS_accept
	{SYS_accept, "accept"},
#endif
#ifdef SYS_pause
	{SYS_pause, "pause"},
#endif
#ifdef SYS_open
	{SYS_open, "open"},
#endif
#ifdef SYS_epoll_pwait2
	{SYS_epoll_pwait2, "epoll_pwait2"},
#endif
};

const char *fr_proc_syscall_name(int64_t nr)
{
	for (size_t i = 0; i < sizeof(syscall_names) / sizeof(syscall_names[0]); i++)
		if (syscall_names[i].nr == nr)
			return syscall_names[i].name;
	return NULL;
}

int fr_proc_each_tid(const char *proc, uint32_t pid, uint32_t max,
		     void (*fn)(void *arg, uint32_t tid), void *arg)
{
	char path[160];
	struct dirent *de;
	uint32_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%u/task", proc, pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while (n < max && (de = readdir(d))) {
		char *end;
		unsigned long tid = strtoul(de->d_name, &end, 10);

		if (!de->d_name[0] || *end || tid == 0 || tid > UINT32_MAX)
			continue;
		fn(arg, (uint32_t)tid);
		n++;
	}
	closedir(d);
	return (int)n;
}

/* Whether the status line `key` ("\nUid:", "\nGid:") of `buf` holds four
 * ids, all `id`. */
static int all_ids(const char *buf, const char *key, uint32_t id)
{
	const char *p = strstr(buf, key);
	char *end;

	if (!p)
		return 0;
	p += strlen(key);
	for (int i = 0; i < 4; i++, p = end) {
		unsigned long v = strtoul(p, &end, 10);

		if (end == p || v != id)
			return 0;
	}
	return 1;
}

int fr_proc_may_read(const char *proc, uint32_t pid, uint32_t uid, uint32_t gid)
{
	char path[160], buf[4096];
	struct stat st;
	ssize_t n;
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%u/status", proc, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	/* The owner of the process's files: root's for one that is not
	 * dumpable (the directory itself keeps its owner on 6.18). */
	ok = n > 0 && fstat(fd, &st) == 0 && st.st_uid == uid;
	close(fd);
	if (!ok)
		return 0;
	buf[n] = '\0';
	return all_ids(buf, "\nUid:", uid) && all_ids(buf, "\nGid:", gid);
}
