/* flightrec threads --at for a user who is not privileged: the answer the
 * ring gives (core/query/threads_at.h), with the processes the kernel
 * would hide from that user cut down to what ps shows: pid, thread, name
 * and state, no waiting time, creator, stack or labels (recorder/requests/threads.h).
 *
 * The ring records a process's real uid, not whether its other uids
 * differed or whether it was dumpable, so a past process is judged by
 * what is known now:
 *  - a process still running under that pid, by the kernel's rule
 *    (fr_proc_may_read(): its uids and gids, its dumpability);
 *  - by its executable as the ring's process tables name it: a
 *    set-user-ID file of another owner, or set-group-ID of another group,
 *    runs with credentials its user does not have.
 * Either hides it. What neither catches (a process that made itself not
 * dumpable, or changed its credentials without an exec, and has ended
 * since) is shown as its real uid's.
 */
#include "recorder/daemon_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/query/threads_at.h"
#include "core/store/chunk.h"
#include "core/store/ring.h"
#include "recorder/tracking/proc_threads.h"
#include "recorder/requests/threads.h"

/* The pids of an answer, each with whether it is hidden. */
struct hide_pids {
	const uint32_t *pid;
	int *hidden;
	size_t n;
};

/* Whether the file at `exe` now runs with credentials other than
 * (uid, gid): set-user-ID of another owner, set-group-ID of another group. */
static int exe_setid(const char *exe, uint32_t uid, uint32_t gid)
{
	struct stat st;

	if (!exe[0] || stat(exe, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	return ((st.st_mode & S_ISUID) && st.st_uid != uid) ||
	       ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != gid);
}

/* Marks the pids whose executable, by the process tables of the ring's
 * chunks of [at - FR_THREADS_AT_LOOK_NS, at], is set-ID (above). */
static void judge_exes(struct fr_ring *ring, int64_t at, struct hide_pids *h, uint32_t uid,
		       uint32_t gid)
{
	struct fr_ring_ref *refs = NULL;
	size_t n = 0;

	if (fr_ring_query(ring, at - FR_THREADS_AT_LOOK_NS, at + 1, &refs, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct fr_chunk *c = NULL;
		void *buf = NULL;

		if (fr_ring_read(ring, &refs[i], &buf) == 0 &&
		    fr_chunk_decode(buf, refs[i].len, &c) == 0)
			for (uint32_t k = 0; k < c->nprocs; k++)
				for (size_t j = 0; j < h->n; j++)
					if (h->pid[j] == c->procs[k].pid && !h->hidden[j])
						h->hidden[j] =
							exe_setid(c->strings[c->procs[k].exe], uid,
								  gid);
		fr_chunk_free(c);
		free(buf);
	}
	free(refs);
}

/* Who asks, and when. */
struct asker {
	struct fr_ring *ring;
	int64_t at;
	uint32_t uid, gid;
};

/* fr_threads_hide_fn: a process is hidden when it runs now and the kernel
 * hides it from the asker, or when its executable is set-ID. */
static void hide(void *arg, const uint32_t *pids, size_t n, int *hidden)
{
	const struct asker *a = arg;
	struct hide_pids h = {.pid = pids, .hidden = hidden, .n = n};

	for (size_t i = 0; i < n; i++) {
		char path[64];

		if (!pids[i])
			continue;
		snprintf(path, sizeof(path), "/proc/%u", pids[i]);
		hidden[i] = access(path, F_OK) == 0 &&
			    !fr_proc_may_read("/proc", pids[i], a->uid, a->gid);
	}
	judge_exes(a->ring, a->at, &h, a->uid, a->gid);
}

int daemon_threads_at_hide(struct daemon *d, struct fr_profile_request *preq, int64_t at, int fd,
			   uint32_t uid, uint32_t gid, size_t *nthreads, size_t *nprocs,
			   size_t *nhidden, char *err, size_t errlen)
{
	struct asker a = {.ring = d->ring, .at = at, .uid = uid, .gid = gid};
	int ret = fr_threads_at_write_hiding(d->ring, preq, at, fd, hide, &a, nthreads, nprocs,
					     nhidden, err, errlen);

	if (ret < 0 && !err[0])
		snprintf(err, errlen, "cannot write the answer: %s", strerror(-ret));
	return ret;
}
