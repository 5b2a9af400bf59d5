/* Window queries.
 *
 * Two passes over the chunks of the window. The first finds, for each
 * requested event, the lowest rate any of its samples in the window was
 * collected at (an event has one rate in a profile, so all of its samples
 * are downsampled to that rate or to the requested one, whichever is
 * lower; offcpu records every switch and is never downsampled). The
 * second keeps each sample with probability target/collected, decided by
 * a hash of the sample itself, so the same request always gives the same
 * profile, and aggregates the kept ones by (stack, pid, tid, cgroup): one
 * row per key, with a count and a value per event. Decoded chunks are
 * kept between the passes while they fit in a memory budget, and decoded
 * again otherwise.
 *
 * Which samples are of the request's targets (pids, command names,
 * cgroup, uid) is decided once per stack and once per label set of each chunk,
 * not per sample.
 *
 * With `children`, the first pass only gathers the (pid, parent) pairs
 * the chunks hold in their "ppid" labels (a sample's label set gives its
 * process's parent; a set with a "pid" gives an unsampled ancestor's).
 * The asked pids are then extended with every process below them, walking
 * down the pairs breadth first with each pid entering the set once (so a
 * cycle of parents ends the walk), and the rates are taken over the
 * extended targets before the second pass selects by them. Pairs and the
 * extended set live in hash sets, sized by what the window holds.
 *
 * Frames are turned into locations keyed by (mapping, address), where a
 * return address is stored minus one so it falls inside the call
 * instruction (as pprof expects of caller frames). Symbolization happens
 * once per distinct location, after aggregation; the pprof emitter and the
 * folded-stacks emitter share everything up to there.
 *
 * This file holds the entry points and the two passes; which samples a
 * request takes and at what rate is core/query/profile_window.c, the rows they
 * aggregate into core/query/profile_agg.c, naming the frames and writing the
 * output core/query/profile_emit.c (core/query/profile_int.h what they share).
 */
#include "core/query/profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/util/parse.h"
#include "core/pprof/pprof.h"
#include "core/query/profile_int.h"
#include "core/query/profile_value.h"
#include "core/store/ring.h"
#include "core/store/sample.h"

/* Counts what the profile hands to the caller's sink. */
struct counting_sink {
	fr_write_fn sink;
	void *arg;
	uint64_t bytes;
};

static int counting_write(void *arg, const void *buf, size_t len)
{
	struct counting_sink *c = arg;
	int ret = c->sink(c->arg, buf, len);

	if (ret == 0)
		c->bytes += len;
	return ret;
}

struct cached {
	struct fr_chunk *chunk; /* NULL: decode again in pass 2 */
	bool unreadable;	/* pass 1 could not read it: skipped after */
};

int fr_profile_format_parse(const char *name)
{
	if (strcmp(name, "pprof") == 0)
		return FR_PROFILE_PPROF;
	if (strcmp(name, "folded") == 0)
		return FR_PROFILE_FOLDED;
	return -EINVAL;
}

/* Checks the request and sets up the events and the cgroup of `b`.
 * Returns 0, or -EINVAL with a message in `err`. */
static int setup_request(struct builder *b, struct fr_profile_result *res, char *err, size_t errlen)
{
	const struct fr_profile_request *req = b->req;
	size_t n;

	if (req->nevents > FR_LIMIT_EVENTS) {
		snprintf(err, errlen, "a profile has at most %d events; %u were asked for",
			 FR_LIMIT_EVENTS, req->nevents);
		return -EINVAL;
	}
	b->nev = req->nevents ? req->nevents : 1;
	for (uint32_t e = 0; e < b->nev; e++) {
		struct gevent *g = &b->ev[e];

		g->id = req->nevents ? req->events[e] : FR_EVENT_CPU;
		if (FR_EVENT_IS_RAW(g->id)    ? FR_EVENT_RAW_CODE(g->id) == 0
		    : FR_EVENT_IS_RAWX(g->id) ? 0
					      : g->id >= FR_EVENT_COUNT || g->id == FR_EVENT_RAW) {
			snprintf(err, errlen, "event id %#x is not an event flightrec knows (%s)",
				 g->id, FR_EVENT_NAMES);
			return -EINVAL;
		}
		fr_event_format(g->id, g->name, sizeof(g->name));
		for (uint32_t k = 0; k < e; k++) {
			if (b->ev[k].id == g->id) {
				snprintf(err, errlen, "event %s is asked for twice", g->name);
				return -EINVAL;
			}
		}
		g->res = &res->events[e];
		g->res->event = g->id;
		g->wanted = req->event_hz[e] ? req->event_hz[e] : req->hz;
	}
	res->nevents = b->nev;
	if (req->targets.npids > FR_LIMIT_PIDS || req->targets.ncomms > FR_LIMIT_COMMS) {
		snprintf(err, errlen, "a profile has at most %d pids and %d command names",
			 FR_LIMIT_PIDS, FR_LIMIT_COMMS);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < req->targets.ncomms; i++) {
		if (strnlen(req->targets.comms[i], FR_LIMIT_COMM_LEN) == FR_LIMIT_COMM_LEN) {
			snprintf(err, errlen,
				 "command name \"%.*s...\" is longer than the %d characters the "
				 "kernel keeps",
				 FR_LIMIT_COMM_LEN, req->targets.comms[i], FR_LIMIT_COMM_LEN - 1);
			return -EINVAL;
		}
	}
	n = strnlen(req->targets.cgroup, FR_LIMIT_CGROUP_LEN);
	if (n == FR_LIMIT_CGROUP_LEN || (n && req->targets.cgroup[0] != '/')) {
		snprintf(err, errlen,
			 "the cgroup must be a cgroup v2 path such as /system.slice/nginx.service, "
			 "at most %d characters",
			 FR_LIMIT_CGROUP_LEN - 1);
		return -EINVAL;
	}
	/* The label filter is compared as strings: each one terminated. */
	if (req->targets.nlabels > FR_LIMIT_LABELS ||
	    strnlen(req->targets.label_key, FR_LIMIT_LABEL_LEN) == FR_LIMIT_LABEL_LEN) {
		snprintf(err, errlen, "at most %d labels of at most %d characters", FR_LIMIT_LABELS,
			 FR_LIMIT_LABEL_LEN - 1);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < req->targets.nlabels; i++) {
		if (strnlen(req->targets.label_keys[i], FR_LIMIT_LABEL_LEN) == FR_LIMIT_LABEL_LEN ||
		    strnlen(req->targets.label_values[i], FR_LIMIT_LABEL_LEN) ==
			    FR_LIMIT_LABEL_LEN) {
			snprintf(err, errlen, "labels have at most %d characters",
				 FR_LIMIT_LABEL_LEN - 1);
			return -EINVAL;
		}
	}
	return profile_mem_setup(b, err, errlen);
}

/* Whether the asker gave up (see fr_profile_request.stop); says so in
 * `err` when it did. */
static int stopped(const struct fr_profile_request *req, char *err, size_t errlen)
{
	if (!req->stop || !req->stop(req->stop_arg))
		return 0;
	snprintf(err, errlen, "stopped: the client went away");
	return 1;
}

/* Decoded, a chunk takes about twice its raw block (the pass-1 cache
 * counts it so). Aggregation's tables (rows, stacks, locations, the pprof
 * and folded output) grow with the distinct stacks, which the samples
 * bound: measured at 350-400 bytes a sample when most stacks differ
 * (tests/bench/query_memory.sh, docs/performance.md). Symbolizing adds the
 * symbol tables of the files the stacks name: a few MiB. */
#define ESTIMATE_PER_SAMPLE 400u
#define ESTIMATE_FIXED ((uint64_t)8 << 20)

int64_t fr_profile_estimate(struct fr_ring *ring, const struct fr_profile_request *req)
{
	size_t cache_cap = req->cache_bytes ? req->cache_bytes : FR_PROFILE_CACHE_DEFAULT;
	struct fr_ring_ref *refs = NULL;
	uint64_t raw = 0, samples = 0, cached;
	size_t nrefs = 0;
	int ret;

	/* A heap profile reads back to its snapshots. */
	ret = fr_ring_query(ring, profile_mem_read_from(req), req->t1 + 1, &refs, &nrefs);
	if (ret < 0)
		return ret;
	for (size_t r = 0; r < nrefs; r++) {
		raw += refs[r].raw_len;
		samples += refs[r].nsamples;
	}
	free(refs);
	cached = 2 * raw < cache_cap ? 2 * raw : cache_cap;
	return (int64_t)(cached + samples * ESTIMATE_PER_SAMPLE + ESTIMATE_FIXED);
}

/* The chunks of a window, and those kept decoded between the passes. */
struct window {
	struct fr_ring *ring;
	struct fr_ring_ref *refs;
	size_t nrefs;
	struct cached *cache;
	bool stale;	  /* a chunk was moved (or overwritten) meanwhile */
	uint64_t damaged; /* chunks the ring dropped as damaged */
};

/* Reads and decodes chunk `r` of the window. A chunk the journal's merge
 * moved (and its place in the journal taken since the index was read)
 * reads -ESTALE: the window is marked, to be read again where the merged
 * chunk now is. A damaged chunk is dropped from the ring's index (the
 * next read of the window does not list it) and counted. */
static int load(struct window *w, size_t r, struct fr_chunk **out)
{
	void *buf = NULL;
	int ret = fr_ring_read(w->ring, &w->refs[r], &buf);

	if (ret == -ESTALE)
		w->stale = true;
	if (ret == -EBADMSG)
		w->damaged++;
	if (ret == 0)
		ret = fr_chunk_decode(buf, w->refs[r].len, out);
	free(buf);
	if (ret < 0)
		w->cache[r].unreadable = true;
	return ret;
}

/* Chunk `r` of the window, decoded again unless cached; NULL when it
 * cannot be read. Give it back with put_chunk(). */
static struct fr_chunk *get_chunk(struct window *w, size_t r)
{
	struct fr_chunk *c = w->cache[r].chunk;

	if (!c && (w->cache[r].unreadable || load(w, r, &c) < 0))
		return NULL;
	return c;
}

static void put_chunk(const struct window *w, size_t r, struct fr_chunk *c)
{
	if (c != w->cache[r].chunk)
		fr_chunk_free(c);
}

/* Pass 1: the lowest collection rate of each event in the window; with
 * children, the parents of its processes first, then the rates over the
 * extended targets. Keeps decoded chunks in the cache while they fit.
 * Returns 0, -ECANCELED or -ENOMEM with a message in `err`. */
static int read_rates(struct builder *b, struct window *w, struct fr_profile_result *res, char *err,
		      size_t errlen)
{
	const struct fr_profile_request *req = b->req;
	size_t cache_cap = req->cache_bytes ? req->cache_bytes : FR_PROFILE_CACHE_DEFAULT;
	size_t cached_bytes = 0;
	int children = req->targets.children && req->targets.npids, ret;

	for (size_t r = 0; r < w->nrefs; r++) {
		struct fr_chunk *c = NULL;

		if (stopped(req, err, errlen))
			return -ECANCELED;
		ret = load(w, r, &c);
		if (ret < 0) {
			res->chunks_skipped++;
			continue;
		}
		res->chunks++;
		profile_count_losses(b, c);
		ret = profile_box_chunk(b, c);
		if (ret == 0)
			ret = children ? profile_collect_parents(b, c) : profile_chunk_rates(b, c);
		if (ret < 0) {
			fr_chunk_free(c);
			snprintf(err, errlen, "out of memory while reading the window");
			return ret;
		}
		if (cached_bytes + w->refs[r].raw_len * 2u <= cache_cap) {
			w->cache[r].chunk = c;
			cached_bytes += w->refs[r].raw_len * 2u;
		} else {
			fr_chunk_free(c);
		}
	}
	if (!children)
		return 0;
	/* The rates are those of the extended targets. */
	ret = profile_extend_pids(b);
	for (size_t r = 0; ret == 0 && r < w->nrefs; r++) {
		struct fr_chunk *c = get_chunk(w, r);

		if (!c)
			continue;
		ret = profile_chunk_rates(b, c);
		put_chunk(w, r, c);
	}
	if (ret < 0)
		snprintf(err, errlen, "out of memory while finding the child processes");
	return ret;
}

/* Pass 2: downsamples and aggregates the samples of the window, then
 * totals the events' counts in `res`. Returns 0, -ECANCELED or -ENOMEM
 * with a message in `err`. */
static int aggregate(struct builder *b, struct window *w, struct fr_profile_result *res, char *err,
		     size_t errlen)
{
	int ret;

	/* Index 0 of maps is "no mapping", index 1 the kernel. */
	profile_open_prepare(b);
	b->nmaps = 2;
	b->maps_cap = 256;
	b->maps = calloc(b->maps_cap, sizeof(*b->maps));
	if (!b->maps)
		return -ENOMEM;
	for (size_t r = 0; r < w->nrefs; r++) {
		struct fr_chunk *c;

		if (stopped(b->req, err, errlen))
			return -ECANCELED;
		c = get_chunk(w, r);
		if (!c)
			continue;
		ret = profile_chunk_aggregate(b, c);
		put_chunk(w, r, c);
		if (ret < 0) {
			snprintf(err, errlen, "out of memory while aggregating the window");
			return ret;
		}
	}
	for (uint32_t e = 0; e < b->nev; e++) {
		const struct fr_profile_event_result *er = b->ev[e].res;

		res->samples_seen += er->samples_seen;
		res->samples_kept += er->samples_kept;
		res->lost += er->lost;
		res->stall_t0 = b->stall_t0;
		res->stall_t1 = b->stall_t1;
		if (er->first_ns && (!res->first_ns || er->first_ns < res->first_ns))
			res->first_ns = er->first_ns;
		if (er->last_ns > res->last_ns)
			res->last_ns = er->last_ns;
	}
	return 0;
}

/* What the ring covers of the request's window: sets res->covered_t0 and
 * the warning to give the user, and returns where the profile starts. */
static int64_t coverage(struct fr_ring *ring, const struct fr_profile_request *req,
			struct fr_profile_result *res)
{
	struct fr_ring_stats st;
	char a[64], bb[64], dur[32];
	int64_t eff_t0 = req->t0;

	fr_ring_get_stats(ring, &st);
	res->covered_t0 = st.oldest_ns;
	if (!st.chunks) {
		snprintf(res->warning, sizeof(res->warning),
			 "the ring holds no samples yet; the profile is empty");
	} else if (st.oldest_ns >= req->t1) {
		/* Not "the last 0s": nothing of the window is left. */
		eff_t0 = req->t1;
		snprintf(res->warning, sizeof(res->warning),
			 "the window ends before the ring's first sample (%s); the profile is "
			 "empty",
			 fr_format_time(st.oldest_ns, bb, sizeof(bb)));
	} else if (st.oldest_ns > req->t0) {
		eff_t0 = st.oldest_ns;
		snprintf(res->warning, sizeof(res->warning),
			 "the window asks for %s but the ring holds samples only since %s; "
			 "the profile covers the last %s",
			 fr_format_duration(req->t1 - req->t0, a, sizeof(a)),
			 fr_format_time(st.oldest_ns, bb, sizeof(bb)),
			 fr_format_duration((req->t1 - eff_t0) / 1000000 * 1000000, dur,
					    sizeof(dur)));
	}
	return eff_t0;
}

/* What a write and a count begin with: the request set up in `b`, the
 * window's chunks listed in `w` and their rates read into `res`. Returns
 * 0 or -errno with `err` set when there is more to say than the errno. */
static int open_window(struct builder *b, struct window *w, const struct fr_profile_request *req,
		       struct fr_profile_result *res, char *err, size_t errlen)
{
	int ret;

	memset(b, 0, sizeof(*b));
	memset(res, 0, sizeof(*res));
	b->req = req;
	err[0] = '\0';
	ret = setup_request(b, res, err, errlen);
	if (ret < 0)
		return ret;
	/* A heap profile reads back to the snapshots before its window. */
	ret = fr_ring_query(w->ring, profile_mem_from(b), profile_mem_to(b), &w->refs, &w->nrefs);
	if (ret < 0) {
		snprintf(err, errlen, "cannot query the ring: %s", strerror(-ret));
		return ret;
	}
	w->cache = calloc(w->nrefs ? w->nrefs : 1, sizeof(*w->cache));
	if (!w->cache)
		return -ENOMEM;
	return read_rates(b, w, res, err, errlen);
}

static void free_window(struct window *w)
{
	for (size_t r = 0; w->cache && r < w->nrefs; r++)
		fr_chunk_free(w->cache[r].chunk);
	free(w->cache);
	free(w->refs);
}

/* What a write and a count end with: `err` said for an errno alone, the
 * window and the builder freed. Returns 0 or `ret` when negative. */
static int close_window(struct builder *b, struct window *w, int ret, char *err, size_t errlen)
{
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "%s", strerror(-ret));
	free_window(w);
	profile_free_builder(b);
	return ret < 0 ? ret : 0;
}

/* How many times a window whose chunks the journal's merge moved while it
 * was read is read again (a merge every 10 s: once is nearly always
 * enough). */
#define STALE_RETRIES 3

/* open_window(), and with `both` the aggregation too, read again from the
 * index while a chunk read went stale: nothing is written before the
 * window is read whole. The damaged chunks an earlier read dropped stay
 * counted in res->chunks_skipped. Returns as open_window(). */
static int read_window(struct builder *b, struct window *w, const struct fr_profile_request *req,
		       struct fr_profile_result *res, bool both, char *err, size_t errlen)
{
	uint64_t damaged = 0;
	int ret;

	for (int attempt = 0;; attempt++) {
		ret = open_window(b, w, req, res, err, errlen);
		if (ret == 0 && both) {
			profile_set_targets(b, res);
			ret = aggregate(b, w, res, err, errlen);
		}
		if (ret < 0 || !w->stale || attempt == STALE_RETRIES)
			break;
		damaged += w->damaged;
		close_window(b, w, 0, err, errlen);
		*w = (struct window){.ring = w->ring};
	}
	res->chunks_skipped += damaged;
	return ret;
}

/* Where the kernel's locations of `p` lie, as pprof gets them. */
static void kernel_span(struct fr_profile *p)
{
	const struct builder *b = &p->b;

	p->kmin = UINT64_MAX;
	for (uint32_t i = 0; i < b->nlocs; i++) {
		if (b->locs[i].map != KERNEL_MAP)
			continue;
		p->kernel = true;
		if (b->locs[i].addr < p->kmin)
			p->kmin = b->locs[i].addr;
		if (b->locs[i].addr > p->kmax)
			p->kmax = b->locs[i].addr;
	}
	/* A user limited to their own processes gets kernel names, not
	 * kernel addresses (which would undo the kernel's address layout
	 * randomization, as kptr_restrict hides them from /proc/kallsyms). */
	if (!p->kernel || p->req.targets.has_uid)
		p->kmin = p->kmax = 0;
}

/* The aggregate of `p`, read from the window, made a value: named, its
 * period and comments' warning in `res`, the request's strings copied
 * and what was only for reading cleared. Returns 0 or -ENOMEM with a
 * message in `err`. */
static int make_value(struct fr_profile *p, int64_t t0, struct fr_profile_result *res, char *err,
		      size_t errlen)
{
	struct fr_profile_request *req = &p->req;
	int ret;

	profile_trim_builder(&p->b);
	profile_mem_finish(&p->b);
	p->t0 = t0;
	p->period = profile_period(&p->b);
	profile_comments(&p->b, NULL, res, p->period);
	ret = profile_symbolize(&p->b, req->kallsyms);
	if (ret < 0) {
		snprintf(err, errlen, "out of memory while naming the frames");
		return ret;
	}
	kernel_span(p);
	for (uint32_t e = 0; e < p->b.nev; e++)
		p->events[e] = p->b.ev[e].id;
	p->version = req->version ? strdup(req->version) : NULL;
	p->note = req->note ? strdup(req->note) : NULL;
	p->pmu_note = req->pmu_note ? strdup(req->pmu_note) : NULL;
	if ((req->version && !p->version) || (req->note && !p->note) ||
	    (req->pmu_note && !p->pmu_note))
		return -ENOMEM;
	req->version = p->version;
	req->note = p->note;
	req->pmu_note = p->pmu_note;
	req->kallsyms = req->symbol_cache = NULL;
	req->debug_dirs = NULL;
	req->ndebug_dirs = 0;
	req->stop = NULL;
	req->stop_arg = NULL;
	p->res = *res;
	return 0;
}

int fr_profile_build(struct fr_ring *ring, const struct fr_profile_request *req,
		     struct fr_profile **out, struct fr_profile_result *res, char *err,
		     size_t errlen)
{
	struct fr_profile *p = calloc(1, sizeof(*p));
	struct window w = {.ring = ring};
	int ret;

	*out = NULL;
	if (!p) {
		memset(res, 0, sizeof(*res));
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	p->req = *req;
	ret = read_window(&p->b, &w, &p->req, res, true, err, errlen);
	if (ret == 0)
		ret = make_value(p, coverage(ring, req, res), res, err, errlen);
	if (ret < 0) {
		if (!err[0])
			snprintf(err, errlen, "%s", strerror(-ret));
		free_window(&w);
		fr_profile_free(p);
		return ret;
	}
	free_window(&w);
	*out = p;
	return 0;
}

int fr_profile_emit(struct fr_profile *p, fr_write_fn sink, void *arg,
		    struct fr_profile_result *res, char *err, size_t errlen)
{
	struct counting_sink counter = {.sink = sink, .arg = arg};
	struct fr_pprof *pp = NULL;
	int ret;

	err[0] = '\0';
	p->res.stacks = 0;
	if (p->req.format == FR_PROFILE_PPROF) {
		pp = profile_pprof_new(&p->b, p->t0, p->period, counting_write, &counter);
		if (!pp) {
			snprintf(err, errlen, "%s", strerror(ENOMEM));
			return -ENOMEM;
		}
		profile_comments(&p->b, pp, &p->res, p->period);
		profile_emit(p, pp);
		p->res.stacks = p->b.nsamples;
		ret = fr_pprof_finish(pp);
	} else {
		ret = profile_emit_folded(&p->b, counting_write, &counter, &p->res.stacks);
	}
	p->res.bytes = counter.bytes;
	if (ret < 0)
		snprintf(err, errlen, "cannot write the profile: %s", strerror(-ret));
	fr_pprof_free(pp);
	if (res)
		*res = p->res;
	return ret;
}

void fr_profile_free(struct fr_profile *p)
{
	if (!p)
		return;
	profile_free_builder(&p->b);
	free(p->version);
	free(p->note);
	free(p->pmu_note);
	free(p);
}

int fr_profile_write(struct fr_ring *ring, const struct fr_profile_request *req, fr_write_fn sink,
		     void *sink_arg, struct fr_profile_result *res, char *err, size_t errlen)
{
	struct fr_profile *p = NULL;
	int ret = fr_profile_build(ring, req, &p, res, err, errlen);

	if (ret == 0)
		ret = fr_profile_emit(p, sink, sink_arg, res, err, errlen);
	fr_profile_free(p);
	return ret;
}

int fr_profile_count(struct fr_ring *ring, const struct fr_profile_request *req,
		     struct fr_profile_result *res, uint64_t *procs, char *err, size_t errlen)
{
	struct builder b;
	struct window w = {.ring = ring};
	struct kset seen = {0};
	int ret;

	ret = read_window(&b, &w, req, res, false, err, errlen);
	for (uint32_t e = 0; ret == 0 && e < b.nev; e++)
		res->samples_seen += b.ev[e].res->samples_seen;
	for (size_t r = 0; ret == 0 && procs && r < w.nrefs; r++) {
		struct fr_chunk *c = get_chunk(&w, r);

		if (!c)
			continue;
		ret = profile_window_pids(&b, c, &seen);
		put_chunk(&w, r, c);
	}
	if (ret == 0 && procs)
		*procs = seen.n;
	free(seen.slots);
	return close_window(&b, &w, ret, err, errlen);
}
