/* The process tracker's start: every process and thread /proc shows,
 * with their names, uid, parent, start time, cgroup and executable
 * mappings (see recorder/tracking/tracker.h). Side-band records keep them current
 * afterwards (recorder/tracking/tracker.c).
 */
#include "recorder/tracking/tracker_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/util/time.h"
#include "recorder/tracking/proc.h"

/* Drops trailing newlines and spaces. */
static void chomp(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
}

static void scan_maps(struct fr_tracker *t, struct proc *p, const char *dir)
{
	char path[128], line[4608];
	FILE *f;

	snprintf(path, sizeof(path), "%s/maps", dir);
	f = fopen(path, "re");
	if (!f)
		return;
	p->nmaps = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino = 0;
		unsigned maj = 0, min = 0;
		char perms[8];
		int name_at = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off,
			   &maj, &min, &ino, &name_at) < 4)
			continue;
		if (perms[2] != 'x')
			continue;
		chomp(line + name_at);
		const char *name = name_at ? line + name_at : "";
		struct path_entry *pe = tracker_intern_path(t, name[0] ? name : "//anon");
		if (!pe)
			continue;
		tracker_add_map(p, start, end, off, pe, NULL, 0);
		if (ino) {
			struct map *m = (struct map *)tracker_lookup_map(p, start);

			if (m && m->start == start) {
				m->inode = FR_TRACKER_INODE_PROC;
				m->dev = makedev(maj, min);
				m->ino = ino;
			}
		}
	}
	fclose(f);
}

/* Takes name, parent and start time of process `p` from PROC/PID/stat. */
static void scan_stat(struct fr_tracker *t, struct proc *p, const struct fr_proc_stat *ps)
{
	if (ps->fields < 2)
		return;
	snprintf(p->comm, sizeof(p->comm), "%s", ps->comm);
	/* A parent learned from the FORK record stays (see above). */
	if (!p->ppid && ps->fields >= 4)
		p->ppid = ps->ppid;
	if (ps->fields >= 22)
		p->start_ns = t->boot_ns + (int64_t)(ps->start * ((uint64_t)FR_NS_PER_S /
								  (unsigned long)t->clk_tck));
}

struct scan_threads {
	struct fr_tracker *t;
	const char *proc;
	uint32_t pid;
};

/* Adds thread `tid` of the process being scanned, with its name. */
static void scan_thread(void *arg, uint32_t tid)
{
	struct scan_threads *st = arg;
	struct thread *th = tracker_get_thread(st->t, tid, st->pid);
	char name[64];

	if (!th)
		return;
	if (fr_proc_read_comm(st->proc, st->pid, tid, name, sizeof(name)) == 0) {
		chomp(name);
		tracker_copy_name(th->name, name);
	}
}

int fr_tracker_scan_pid(struct fr_tracker *t, const char *proc, uint32_t pid)
{
	char dir[64], path[128], link[4096];
	struct scan_threads st = {.t = t, .proc = proc, .pid = pid};
	struct fr_proc_stat ps;
	struct proc *p;
	ssize_t n;
	int ret;

	ret = fr_proc_read_stat(proc, pid, &ps);
	if (ret < 0 && ret != -EPROTO)
		return -ENOENT;
	p = tracker_get_proc(t, pid);
	if (!p)
		return -ENOMEM;
	scan_stat(t, p, &ps);
	fr_proc_read_uid(proc, pid, &p->uid);
	fr_proc_read_cgroup(proc, pid, p->cgroup, sizeof(p->cgroup));
	snprintf(dir, sizeof(dir), "%s/%u", proc, pid);
	snprintf(path, sizeof(path), "%s/exe", dir);
	n = readlink(path, link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = '\0';
		p->exe = tracker_intern_path(t, link);
	}
	scan_maps(t, p, dir);

	/* Threads and their names. */
	snprintf(path, sizeof(path), "%s/task", dir);
	(void)fr_proc_each_pid(path, scan_thread, &st);
	return 0;
}

struct scan_all {
	struct fr_tracker *t;
	const char *proc;
	int n;
};

static void scan_one(void *arg, uint32_t pid)
{
	struct scan_all *sa = arg;

	if (fr_tracker_scan_pid(sa->t, sa->proc, pid) == 0)
		sa->n++;
}

int fr_tracker_scan(struct fr_tracker *t, const char *proc)
{
	struct scan_all sa = {.t = t, .proc = proc};
	int ret = fr_proc_each_pid(proc, scan_one, &sa);

	return ret < 0 ? ret : sa.n;
}
