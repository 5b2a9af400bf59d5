/* One thread as a sample of the `flightrec threads` answer
 * (core/query/thread_sample.h). */
#include "core/query/thread_sample.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pprof/pprof.h"
#include "core/store/sample.h"

/* Most locations kept of one stack: kernel and user frames. */
#define MAX_LOCS (4 * FR_MAX_FRAMES)
/* Most functions kept of one location. */
#define MAX_LINES 64

struct fr_thread_answer {
	int fd;
	struct fr_pprof *p;
	const struct fr_profile *stacks;
	uint64_t *loc_ids; /* by location of `stacks`; 0: not added yet */
	uint64_t *map_ids; /* by mapping */
};

/* An fr_write_fn that writes everything to the descriptor *(int *)arg
 * (restarting on EINTR): 0 or -errno (-EIO for a write of 0 bytes). */
static int fd_sink(void *arg, const void *buf, size_t len)
{
	int fd = *(int *)arg;

	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf = (const char *)buf + n;
		len -= (size_t)n;
	}
	return 0;
}

struct fr_thread_answer *fr_thread_answer_new(int fd, const struct fr_profile *stacks,
					      int64_t time_ns, int64_t duration_ns,
					      const char *comment)
{
	struct fr_thread_answer *a = calloc(1, sizeof(*a));
	uint32_t nlocs = stacks ? fr_profile_nlocations(stacks) : 0;
	uint32_t nmaps = stacks ? fr_profile_nmappings(stacks) : 0;

	if (!a)
		return NULL;
	a->fd = fd;
	a->stacks = stacks;
	a->p = fr_pprof_new(6, fd_sink, &a->fd);
	a->loc_ids = calloc(nlocs + 1, sizeof(*a->loc_ids));
	a->map_ids = calloc(nmaps + 1, sizeof(*a->map_ids));
	if (!a->p || !a->loc_ids || !a->map_ids) {
		fr_thread_answer_free(a);
		return NULL;
	}
	fr_pprof_sample_type(a->p, "threads", "count");
	fr_pprof_sample_type(a->p, "waiting", "nanoseconds");
	fr_pprof_default_sample_type(a->p, "threads");
	fr_pprof_time(a->p, time_ns, duration_ns);
	fr_pprof_comment(a->p, comment);
	return a;
}

/* The id in the answer of location `loc` of the stacks, added with its
 * mapping and its functions' names the first time. */
static uint64_t location(struct fr_thread_answer *a, uint32_t loc)
{
	struct fr_pprof_line lines[MAX_LINES];
	struct fr_profile_location l;
	uint64_t map = 0;
	uint32_t n;

	if (a->loc_ids[loc])
		return a->loc_ids[loc];
	fr_profile_location(a->stacks, loc, &l);
	if (l.mapping) {
		struct fr_profile_mapping m;

		if (!a->map_ids[l.mapping]) {
			fr_profile_mapping(a->stacks, l.mapping, &m);
			a->map_ids[l.mapping] =
				fr_pprof_mapping(a->p, m.start, m.limit, m.offset, m.file,
						 m.build_id[0] ? m.build_id : NULL, 1);
		}
		map = a->map_ids[l.mapping];
	}
	n = l.nlines < MAX_LINES ? l.nlines : MAX_LINES;
	for (uint32_t j = 0; j < n; j++) {
		struct fr_profile_line line;

		fr_profile_line(a->stacks, loc, j, &line);
		lines[j] =
			(struct fr_pprof_line){fr_pprof_function(a->p, line.function, NULL, NULL),
					       0};
	}
	a->loc_ids[loc] = fr_pprof_location_lines(a->p, map, l.address, lines, n);
	return a->loc_ids[loc];
}

/* The application labels of sample `s`: its string labels but the
 * recorder's own, into out (at most `room`). Returns how many. */
static size_t app_labels(const struct fr_profile_sample *s, struct fr_pprof_label *out, size_t room)
{
	static const char *const ours[] = {"pid", "tid", "comm", "thread", "cgroup", "cpu", "host"};
	size_t n = 0;

	for (size_t k = 0; k < s->nlabels && n < room; k++) {
		const struct fr_profile_label *lb = &s->labels[k];
		bool own = false;

		if (!lb->str || !lb->str[0])
			continue;
		for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]) && !own; i++)
			own = strcmp(lb->key, ours[i]) == 0;
		if (!own)
			out[n++] = (struct fr_pprof_label){.key = lb->key, .str = lb->str};
	}
	return n;
}

void fr_thread_answer_add(struct fr_thread_answer *a, const struct fr_thread_sample *t)
{
	struct fr_pprof_label
		labels[4 + sizeof(t->extra) / sizeof(t->extra[0]) + 3 + FR_CHUNK_APP_PAIRS];
	int64_t values[2] = {1, t->waiting ? t->waiting_ns : 0};
	uint64_t locs[MAX_LOCS];
	size_t nl = 0, nlocs = 0;

	labels[nl++] = (struct fr_pprof_label){.key = "pid", .num = t->pid};
	labels[nl++] = (struct fr_pprof_label){.key = "tid", .num = t->tid};
	labels[nl++] = (struct fr_pprof_label){.key = "thread", .str = t->thread};
	labels[nl++] = (struct fr_pprof_label){.key = "state", .str = t->state};
	for (size_t i = 0; i < t->nextra && i < sizeof(t->extra) / sizeof(t->extra[0]); i++)
		labels[nl++] =
			(struct fr_pprof_label){t->extra[i].key, t->extra[i].str, t->extra[i].num};
	if (t->waiting)
		labels[nl++] = (struct fr_pprof_label){.key = "waiting_ns", .num = values[1]};
	if (t->creator)
		labels[nl++] = (struct fr_pprof_label){.key = "creator", .num = t->creator};
	if (t->row >= 0 && a->stacks) {
		struct fr_profile_sample s;

		fr_profile_sample(a->stacks, (size_t)t->row, &s);
		labels[nl++] = (struct fr_pprof_label){.key = "stack", .str = t->stack};
		/* What it worked for there: the row's application labels. */
		nl += app_labels(&s, labels + nl, FR_CHUNK_APP_PAIRS);
		for (; nlocs < s.nlocs && nlocs < MAX_LOCS; nlocs++)
			locs[nlocs] = location(a, s.locs[nlocs]);
	}
	fr_pprof_sample(a->p, locs, nlocs, values, 2, labels, nl);
}

int fr_thread_answer_finish(struct fr_thread_answer *a)
{
	return fr_pprof_finish(a->p);
}

void fr_thread_answer_free(struct fr_thread_answer *a)
{
	if (!a)
		return;
	fr_pprof_free(a->p);
	free(a->loc_ids);
	free(a->map_ids);
	free(a);
}

ssize_t fr_thread_best_row(const struct fr_profile *p, uint32_t pid, uint32_t tid, uint32_t event)
{
	int col = p ? fr_profile_event_column(p, event) : -1;
	struct fr_profile_sample s;
	ssize_t best = -1;
	int64_t most = 0;

	for (size_t i = 0; col >= 0 && i < fr_profile_nsamples(p); i++) {
		fr_profile_sample(p, i, &s);
		if (s.pid == pid && s.tid == tid && s.values[col] > most) {
			most = s.values[col];
			best = (ssize_t)i;
		}
	}
	return best;
}
