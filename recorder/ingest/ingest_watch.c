/* What the ingest thread waits on while it is held up: a thread of its
 * own looks once a second at the ingest thread's last drain and, when it
 * is older than a stall (FR_INGEST_STALL_NS), reads the thread's state,
 * wait channel and system call from /proc/self/task/TID, so that the log
 * line of the stall ("the ingest thread was held up for N ms") says where
 * it was (docs/architecture.md, "Is ingest keeping up"). Only the
 * recorder's own /proc files are read.
 */
#include "recorder/ingest/ingest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/util/time.h"

/* Reads at most len - 1 bytes of /proc/self/task/TID/NAME into buf, NUL
 * ended and cut at the first newline. Returns the length or -errno. */
static int read_task(pid_t tid, const char *name, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return (int)strlen(buf);
}

/* "state D in vm_mmap_pgoff, system call 9": where the thread is now. */
static void task_where(pid_t tid, char *out, size_t len)
{
	char stat[512], wchan[64] = "", sc[64] = "";
	const char *state = NULL, *p;

	if (read_task(tid, "stat", stat, sizeof(stat)) > 0 && (p = strrchr(stat, ')')) && p[1])
		state = p + 2;
	if (read_task(tid, "wchan", wchan, sizeof(wchan)) < 0 || strcmp(wchan, "0") == 0)
		wchan[0] = '\0';
	if (read_task(tid, "syscall", sc, sizeof(sc)) > 0)
		sc[strcspn(sc, " ")] = '\0';
	snprintf(out, len, "state %c%s%s%s%s", state ? state[0] : '?', wchan[0] ? " in " : "",
		 wchan,
		 sc[0] && strcmp(sc, "running") != 0 && strcmp(sc, "-1") != 0 ? ", system call "
									      : "",
		 sc[0] && strcmp(sc, "running") != 0 && strcmp(sc, "-1") != 0 ? sc : "");
}

static void *watch_main(void *arg)
{
	struct fr_ingest *g = arg;

	fr_priority_normal();
	pthread_mutex_lock(&g->watch_lock);
	while (!g->watch_stop) {
		struct timespec ts;
		int64_t last = __atomic_load_n(&g->last_drain_mono, __ATOMIC_RELAXED);
		char where[FR_INGEST_WHERE_MAX];

		if (last && fr_now_mono_ns() - last > FR_INGEST_STALL_NS) {
			pthread_mutex_unlock(&g->watch_lock);
			task_where(g->tid, where, sizeof(where));
			pthread_mutex_lock(&g->stall_lock);
			/* The first look at this stall, and the latest. */
			if (g->where_drain != last) {
				g->where_drain = last;
				snprintf(g->where_first, sizeof(g->where_first), "%s", where);
			}
			snprintf(g->where_last, sizeof(g->where_last), "%s", where);
			pthread_mutex_unlock(&g->stall_lock);
			pthread_mutex_lock(&g->watch_lock);
		}
		fr_mono_deadline(&ts, FR_NS_PER_S);
		pthread_cond_timedwait(&g->watch_cond, &g->watch_lock, &ts);
	}
	pthread_mutex_unlock(&g->watch_lock);
	return NULL;
}

int fr_ingest_watch_start(struct fr_ingest *g)
{
	int ret;

	g->tid = gettid();
	pthread_mutex_init(&g->watch_lock, NULL);
	ret = fr_mono_cond_init(&g->watch_cond);
	if (ret < 0)
		return ret;
	ret = pthread_create(&g->watch_thread, NULL, watch_main, g);
	if (ret)
		return -ret;
	pthread_setname_np(g->watch_thread, "fr-ingest-watch");
	g->watching = 1;
	return 0;
}

void fr_ingest_watch_stop(struct fr_ingest *g)
{
	if (!g->watching)
		return;
	pthread_mutex_lock(&g->watch_lock);
	g->watch_stop = 1;
	pthread_cond_signal(&g->watch_cond);
	pthread_mutex_unlock(&g->watch_lock);
	pthread_join(g->watch_thread, NULL);
	g->watching = 0;
}

void fr_ingest_stall_where(struct fr_ingest *g, int64_t last_drain_mono, char *out, size_t len)
{
	out[0] = '\0';
	pthread_mutex_lock(&g->stall_lock);
	if (g->where_drain == last_drain_mono && g->where_first[0]) {
		if (strcmp(g->where_first, g->where_last) == 0)
			snprintf(out, len, " (seen %s)", g->where_first);
		else
			snprintf(out, len, " (seen %s, then %s)", g->where_first, g->where_last);
	}
	pthread_mutex_unlock(&g->stall_lock);
}
