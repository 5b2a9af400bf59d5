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

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pprof/pprof.h"
#include "core/pprof/pprof_copy.h"
#include "core/pprof/pprof_read.h"
#include "core/query/threads_at.h"
#include "core/store/chunk.h"
#include "core/store/ring.h"
#include "core/util/compress.h"
#include "core/util/fs.h"
#include "recorder/tracking/proc_threads.h"
#include "recorder/requests/threads.h"

/* The pids of an answer, each with whether it is hidden. */
struct hide_pids {
	uint32_t *pid;
	int *hidden;
	size_t n;
};

static int has_pid(const struct hide_pids *h, uint32_t pid)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->pid[i] == pid)
			return 1;
	return 0;
}

/* The "pid" label of sample `s`, or -1. */
static int64_t sample_pid(const struct fr_pprof_data *pd, const struct fr_pprof_rsample *s)
{
	for (size_t k = 0; k < s->nlabel; k++)
		if (strcmp(pd->labels[s->label + k].key, "pid") == 0)
			return pd->labels[s->label + k].num;
	return -1;
}

/* The distinct pids of the answer's samples into *h. */
static int collect_pids(const struct fr_pprof_data *pd, struct hide_pids *h)
{
	h->pid = calloc(pd->nsamples + 1, sizeof(*h->pid));
	h->hidden = calloc(pd->nsamples + 1, sizeof(*h->hidden));
	if (!h->pid || !h->hidden)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nsamples; i++) {
		int64_t pid = sample_pid(pd, &pd->samples[i]);

		if (pid > 0 && pid <= UINT32_MAX && !has_pid(h, (uint32_t)pid))
			h->pid[h->n++] = (uint32_t)pid;
	}
	return 0;
}

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

static int is_hidden(const struct hide_pids *h, int64_t pid)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->pid[i] == pid)
			return h->hidden[i];
	return 0;
}

/* Sample `s` of `e->pd` into e->p: whole, or for a hidden process its
 * pid, tid, thread and state alone. */
static void copy_sample(struct fr_pprof_copy *e, const struct fr_pprof_rsample *s, int hidden)
{
	static const char *const ps_keys[] = {"pid", "tid", "thread", "state"};
	const struct fr_pprof_data *pd = e->pd;
	struct fr_pprof_label labels[64];
	uint64_t locs[4 * FR_MAX_FRAMES];
	int64_t values[8] = {0};
	size_t nl = 0, nlocs = 0, nv = pd->ntypes < 8 ? pd->ntypes : 8;

	for (size_t k = 0; k < s->nlabel && nl < 64; k++) {
		const struct fr_pprof_rlabel *lb = &pd->labels[s->label + k];
		int keep = !hidden;

		for (size_t j = 0; hidden && j < sizeof(ps_keys) / sizeof(*ps_keys); j++)
			keep |= strcmp(lb->key, ps_keys[j]) == 0;
		if (keep)
			labels[nl++] = (struct fr_pprof_label){lb->key, lb->str, lb->num};
	}
	for (size_t v = 0; v < nv; v++)
		values[v] = hidden ? v == 0 : pd->values[s->val + v];
	for (; !hidden && nlocs < s->nloc && nlocs < sizeof(locs) / sizeof(*locs); nlocs++)
		locs[nlocs] = fr_pprof_copy_location(e, pd->sample_locs[s->loc + nlocs]);
	fr_pprof_sample(e->p, locs, nlocs, values, nv, labels, nl);
}

/* Writes `pd` into `fd` with the hidden processes cut down. */
static int rewrite(const struct fr_pprof_data *pd, const struct hide_pids *h, int fd)
{
	struct fr_pprof_copy e = {.pd = pd};
	int ret = -ENOMEM;

	e.p = fr_pprof_new(6, fr_fd_sink, &fd);
	e.loc_ids = calloc(pd->nlocations + 1, sizeof(*e.loc_ids));
	e.map_ids = calloc(pd->nmappings + 1, sizeof(*e.map_ids));
	if (!e.p || !e.loc_ids || !e.map_ids)
		goto out;
	for (size_t i = 0; i < pd->ntypes; i++)
		fr_pprof_sample_type(e.p, pd->types[i].type, pd->types[i].unit);
	if (pd->default_type >= 0)
		fr_pprof_default_sample_type(e.p, pd->types[pd->default_type].type);
	fr_pprof_time(e.p, pd->time_nanos, pd->duration_nanos);
	for (size_t i = 0; i < pd->ncomments; i++)
		fr_pprof_comment(e.p, pd->comments[i]);
	for (size_t i = 0; i < pd->nsamples; i++)
		copy_sample(&e, &pd->samples[i], is_hidden(h, sample_pid(pd, &pd->samples[i])));
	ret = fr_pprof_finish(e.p);
out:
	fr_pprof_free(e.p);
	free(e.loc_ids);
	free(e.map_ids);
	return ret;
}

/* The whole of `fd` (a memfd the answer was written to), gunzipped and
 * decoded. */
static int read_back(int fd, struct fr_pprof_data **pd)
{
	struct stat st;
	void *gz = NULL, *raw = NULL;
	size_t rawlen;
	ssize_t got;
	int ret;

	if (fstat(fd, &st) < 0)
		return -errno;
	gz = malloc((size_t)st.st_size + 1);
	if (!gz)
		return -ENOMEM;
	got = fr_pread_full(fd, gz, (size_t)st.st_size, 0);
	ret = got < 0 ? (int)got : got != st.st_size ? -EIO : 0;
	if (ret == 0)
		ret = fr_gunzip(gz, (size_t)st.st_size, &raw, &rawlen);
	if (ret == 0)
		ret = fr_pprof_read(raw, rawlen, pd);
	free(gz);
	free(raw);
	return ret;
}

int daemon_threads_at_hide(struct daemon *d, struct fr_profile_request *preq, int64_t at, int fd,
			   uint32_t uid, uint32_t gid, size_t *nthreads, size_t *nprocs,
			   size_t *nhidden, char *err, size_t errlen)
{
	struct fr_pprof_data *pd = NULL;
	struct hide_pids h = {0};
	int mfd = memfd_create("flightrec-threads-at", MFD_CLOEXEC), ret;

	*nhidden = 0;
	if (mfd < 0)
		return -errno;
	ret = fr_threads_at_write(d->ring, preq, at, mfd, nthreads, nprocs, err, errlen);
	if (ret == 0)
		ret = read_back(mfd, &pd);
	if (ret == 0)
		ret = collect_pids(pd, &h);
	if (ret == 0) {
		for (size_t i = 0; i < h.n; i++) {
			char path[64];

			snprintf(path, sizeof(path), "/proc/%u", h.pid[i]);
			h.hidden[i] = access(path, F_OK) == 0 &&
				      !fr_proc_may_read("/proc", h.pid[i], uid, gid);
		}
		judge_exes(d->ring, at, &h, uid, gid);
		for (size_t i = 0; i < h.n; i++)
			*nhidden += h.hidden[i];
		ret = rewrite(pd, &h, fd);
	}
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "cannot write the answer: %s", strerror(-ret));
	fr_pprof_data_free(pd);
	free(h.pid);
	free(h.hidden);
	close(mfd);
	return ret;
}
