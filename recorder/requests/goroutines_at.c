/* flightrec goroutines --at TIME: a process's goroutines as the newest
 * snapshot kept at or before TIME had them. Snapshots are taken at the
 * triggers of sessions whose targets run Go programs and kept beside their
 * dumps (recorder/triggers/dumps.h); this picks the newest whose time is
 * not after TIME, keeps the samples of the asked process ("pid" label)
 * and its comments, and writes them as a pprof of the same shape as a
 * live answer (recorder/requests/goroutines.h), its time the snapshot's.
 *
 * Rights: the snapshot says each process's uid ("uid=U" among its
 * comments); a user who is not privileged gets only a process that ran
 * as them.
 */
#include "recorder/daemon_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pprof/pprof.h"
#include "core/pprof/pprof_read.h"
#include "core/util/compress.h"
#include "core/util/fs.h"
#include "core/util/parse.h"
#include "ipc/msg_goroutines.h"
#include "recorder/requests/goroutines.h"
#include "recorder/requests/goroutines_int.h"
#include "recorder/triggers/dumps.h"

/* A snapshot file larger than this is not read. */
#define AT_FILE_MAX (256u << 20)

/* The comments of process `pid` in a snapshot: from its "pid=P" to the
 * next process's. Returns their first index and count (0: not there). */
static size_t group(const struct fr_pprof_data *pd, uint32_t pid, size_t *first)
{
	char want[32];
	size_t n = 0;

	snprintf(want, sizeof(want), "pid=%" PRIu32, pid);
	for (size_t i = 0; i < pd->ncomments; i++) {
		if (n && strncmp(pd->comments[i], "pid=", 4) == 0)
			break;
		if (!n && strcmp(pd->comments[i], want) == 0)
			*first = i;
		n += n || strcmp(pd->comments[i], want) == 0;
	}
	return n;
}

static const char *comment(const struct fr_pprof_data *pd, size_t first, size_t n, const char *key)
{
	size_t k = strlen(key);

	for (size_t i = first; i < first + n; i++)
		if (strncmp(pd->comments[i], key, k) == 0)
			return pd->comments[i] + k;
	return NULL;
}

struct copy {
	const struct fr_pprof_data *pd;
	struct fr_pprof *p;
	uint64_t *loc_id, *fn_id, *map_id; /* new ids by index; 0: not yet */
};

static uint64_t copy_location(struct copy *c, size_t li)
{
	const struct fr_pprof_rlocation *l = &c->pd->locations[li];
	struct fr_pprof_line lines[64];
	size_t n = l->nline < 64 ? l->nline : 64;
	uint64_t map = 0;

	if (c->loc_id[li])
		return c->loc_id[li];
	if (l->mapping >= 0 && !(map = c->map_id[l->mapping])) {
		const struct fr_pprof_rmapping *m = &c->pd->mappings[l->mapping];

		map = c->map_id[l->mapping] =
			fr_pprof_mapping(c->p, m->memory_start, m->memory_limit, m->file_offset,
					 m->filename, NULL,
					 FR_PPROF_HAS_FUNCTIONS | FR_PPROF_HAS_FILENAMES |
						 FR_PPROF_HAS_LINE_NUMBERS |
						 FR_PPROF_HAS_INLINE_FRAMES);
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t f = c->pd->line_funcs[l->line + i];
		const struct fr_pprof_rfunction *fn = &c->pd->functions[f];

		if (!c->fn_id[f])
			c->fn_id[f] = fr_pprof_function(c->p, fn->name, fn->name, fn->filename);
		lines[i] = (struct fr_pprof_line){c->fn_id[f],
						  (uint64_t)c->pd->line_nums[l->line + i]};
	}
	return c->loc_id[li] = fr_pprof_location_lines(c->p, map, l->address, lines, n);
}

/* Whether sample s is process pid's. */
static int of_pid(const struct fr_pprof_data *pd, const struct fr_pprof_rsample *s, uint32_t pid)
{
	for (size_t i = 0; i < s->nlabel; i++) {
		const struct fr_pprof_rlabel *l = &pd->labels[s->label + i];

		if (!l->str && strcmp(l->key, "pid") == 0)
			return l->num == (int64_t)pid;
	}
	return 0;
}

static void copy_sample(struct copy *c, const struct fr_pprof_rsample *s)
{
	uint64_t loc[128];
	struct fr_pprof_label lb[64];
	size_t nl = s->nloc < 128 ? s->nloc : 128, nlb = s->nlabel < 64 ? s->nlabel : 64;

	for (size_t i = 0; i < nl; i++)
		loc[i] = copy_location(c, c->pd->sample_locs[s->loc + i]);
	for (size_t i = 0; i < nlb; i++) {
		const struct fr_pprof_rlabel *l = &c->pd->labels[s->label + i];

		lb[i] = (struct fr_pprof_label){l->key, l->str, l->num};
	}
	fr_pprof_sample(c->p, loc, nl, c->pd->values + s->val, c->pd->ntypes, lb, nlb);
}

/* Writes process pid's part of the snapshot into fd. Returns the
 * goroutines written, or -errno. */
static int64_t refile(const struct fr_pprof_data *pd, uint32_t pid, size_t first, size_t n,
		      int64_t taken_ns, int fd)
{
	struct copy c = {pd, NULL, calloc(pd->nlocations + 1, 8), calloc(pd->nfunctions + 1, 8),
			 calloc(pd->nmappings + 1, 8)};
	int64_t count = 0;
	int ret = -ENOMEM;

	if (c.loc_id && c.fn_id && c.map_id && (c.p = fr_pprof_new(6, goroutines_fd_sink, &fd))) {
		for (size_t i = 0; i < pd->ntypes; i++)
			fr_pprof_sample_type(c.p, pd->types[i].type, pd->types[i].unit);
		fr_pprof_period(c.p, "goroutines", "count", 1);
		fr_pprof_default_sample_type(c.p, "goroutines");
		fr_pprof_time(c.p, taken_ns, 0);
		for (size_t i = first; i < first + n; i++)
			fr_pprof_comment(c.p, pd->comments[i]);
		for (size_t i = 0; i < pd->nsamples; i++)
			if (of_pid(pd, &pd->samples[i], pid)) {
				copy_sample(&c, &pd->samples[i]);
				count++;
			}
		ret = fr_pprof_finish(c.p);
	}
	fr_pprof_free(c.p);
	free(c.loc_id);
	free(c.fn_id);
	free(c.map_id);
	return ret < 0 ? ret : count;
}

/* The snapshot at `gfd`, decoded. Returns 0 or -errno. */
static int load(int gfd, struct fr_pprof_data **pd)
{
	struct stat st;
	void *gz = NULL, *raw = NULL;
	size_t rawlen;
	int ret = -EFBIG;

	if (fstat(gfd, &st) < 0 || st.st_size <= 0 || (uint64_t)st.st_size > AT_FILE_MAX)
		return -EFBIG;
	if (!(gz = malloc((size_t)st.st_size)))
		return -ENOMEM;
	if (fr_pread_full(gfd, gz, (size_t)st.st_size, 0) == st.st_size &&
	    (ret = fr_gunzip(gz, (size_t)st.st_size, &raw, &rawlen)) == 0)
		ret = fr_pprof_read(raw, rawlen, pd);
	free(gz);
	free(raw);
	return ret;
}

int daemon_goroutines_at(struct daemon *d, struct fr_ipc_call *call,
			 const struct fr_ipc_goroutines_req *q, int has_uid, int fd,
			 struct fr_ipc_goroutines_reply *r)
{
	struct fr_pprof_data *pd = NULL;
	char dir[4096], when[64];
	size_t first = 0, n;
	int64_t taken = 0, count;
	const char *uid;
	int gfd = -1, ret;

	pthread_mutex_lock(&d->config_lock);
	snprintf(dir, sizeof(dir), "%s",
		 d->config->dumps_dir ? d->config->dumps_dir : d->dumps_default_dir);
	pthread_mutex_unlock(&d->config_lock);
	fr_format_time(q->at_ns, when, sizeof(when));
	ret = fr_dumps_goroutines_at(dir, q->at_ns, &gfd, &taken);
	if (ret < 0)
		return fr_ipc_refuse(call,
				     "goroutines: no goroutines were kept at or before %s (a dump of "
				     "a session whose targets run Go programs keeps them)",
				     when);
	ret = load(gfd, &pd);
	close(gfd);
	fr_format_time(taken, when, sizeof(when));
	if (ret < 0)
		return fr_ipc_refuse(call,
				     "goroutines: the goroutines kept at %s cannot be read: %s",
				     when, strerror(-ret));
	n = group(pd, q->pid, &first);
	uid = n ? comment(pd, first, n, "uid=") : NULL;
	if (!n || (has_uid && (!uid || strtoul(uid, NULL, 10) != (unsigned long)call->peer->uid)))
		ret = fr_ipc_refuse(call,
				    "goroutines: the goroutines kept at %s (a dump's) hold no "
				    "process %u%s",
				    when, q->pid, n ? " of yours" : "");
	else if ((count = refile(pd, q->pid, first, n, taken, fd)) < 0)
		ret = fr_ipc_refuse(call, "goroutines: cannot write the answer");
	else {
		struct stat st;

		r->goroutines = (uint64_t)count;
		r->system = strtoull(comment(pd, first, n, "system=") ?: "0", NULL, 10);
		snprintf(r->go, sizeof(r->go), "%s", comment(pd, first, n, "go=") ?: "");
		r->bytes = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
		fr_ipc_warnf(r->warnings, &r->nwarnings, "as a dump kept them at %s, not now",
			     when);
		ret = 0;
	}
	fr_pprof_data_free(pd);
	return ret;
}
