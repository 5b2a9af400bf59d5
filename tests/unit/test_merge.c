/* Merging chunks: a merged chunk answers for every sample what its part
 * answered (process, thread, mapping, cgroup and parent, ancestors), keeps
 * every sample and counter, and parts that disagree (an exec, a remapped
 * range, a reused tid, another cgroup) are not merged. */
#include "core/store/merge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"

#include "core/util/time.h"
#include "tests/unit/check.h"

#define T0 1700000000000000000ll
#define SEC FR_NS_PER_S

/* What the fake tracker answers, changed between parts. */
static struct {
	const char *exe_a;     /* exe of pid 10 */
	const char *lib_path;  /* what is mapped at 0x7f0000000000 in pid 10 */
	const char *thread_11; /* name of thread 11 */
	uint32_t tid_12_pid;   /* process of thread 12 */
	const char *cgroup_20; /* cgroup of pid 20 */
	/* Renames of threads 11 and 20 (pid 20's main thread: its comm). */
	struct fr_name_change ren11[8], ren20[8];
	uint32_t n11, n20;
	const char *before11, *before20;
	const char *comm_20; /* comm of pid 20, name of its main thread */
	uint32_t creator_12; /* thread 12's creator, known from some part on */
} world;

static int w_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	out->pid = pid;
	switch (pid) {
	case 10:
		out->comm = "a";
		out->exe = world.exe_a;
		out->start_ns = T0 - SEC;
		out->cgroup = "/x.service";
		out->ppid = 5;
		out->build_id_len = 4;
		memcpy(out->build_id, "\x01\x02\x03\x04", 4);
		return 0;
	case 20:
		out->comm = world.comm_20;
		out->exe = "/bin/b";
		out->start_ns = T0 - 2 * SEC;
		out->cgroup = world.cgroup_20;
		out->ppid = 1;
		return 0;
	case 5: /* a shell with no samples: an ancestor */
		out->comm = "sh";
		out->exe = "/bin/sh";
		out->ppid = 1;
		return 0;
	}
	return -ENOENT;
}

static int w_thread(void *arg, uint32_t tid, struct fr_thread_info *out)
{
	out->tid = tid;
	switch (tid) {
	case 10:
		out->pid = 10;
		out->name = "a";
		return 0;
	case 11:
		out->pid = 10;
		out->name = world.thread_11;
		out->nchanges = world.n11;
		out->changes = world.ren11;
		out->before = world.before11;
		return 0;
	case 12:
		out->pid = world.tid_12_pid;
		out->name = "w";
		out->creator = world.creator_12;
		return 0;
	case 20:
		out->pid = 20;
		out->name = world.comm_20;
		out->nchanges = world.n20;
		out->changes = world.ren20;
		out->before = world.before20;
		return 0;
	}
	return -ENOENT;
}

static int w_mapping(void *arg, uint32_t pid, uint64_t addr, struct fr_map_info *out)
{
	if (addr >= 0x400000 && addr < 0x500000) {
		out->start = 0x400000;
		out->end = 0x500000;
		out->path = pid == 10 ? world.exe_a : "/bin/b";
		return 0;
	}
	if (pid == 10 && addr >= 0x7f0000000000 && addr < 0x7f0000100000) {
		out->start = 0x7f0000000000;
		out->end = 0x7f0000100000;
		out->pgoff = 0x1000;
		out->path = world.lib_path;
		out->build_id_len = 20;
		memset(out->build_id, 0xab, 20);
		return 0;
	}
	return -ENOENT;
}

static const struct fr_chunk_meta_ops ops = {.proc = w_proc,
					     .thread = w_thread,
					     .mapping = w_mapping};

static void world_reset(void)
{
	world.exe_a = "/bin/a";
	world.lib_path = "/lib/libx.so";
	world.thread_11 = "worker";
	world.tid_12_pid = 10;
	world.cgroup_20 = "/y.service";
	world.n11 = world.n20 = 0;
	world.comm_20 = "b";
	world.creator_12 = 0;
}

/* A second's chunk: samples of pids 10 (tids 10, 11, 12) and 20, stacks
 * through the exe, the library and the kernel, and a lost-records count. */
static struct fr_chunk *part(int sec, uint32_t *nsamples)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(1000, 1u << 20);
	struct fr_chunk *c = NULL;
	void *buf = NULL;
	size_t len = 0;
	uint32_t n = 0;

	for (int i = 0; i < 40; i++) {
		static const uint32_t tids[] = {10, 11, 12, 20};
		uint32_t tid = tids[i % 4];
		uint64_t ips[4] = {0xffffffff81000000ull + (uint64_t)(i % 3) * 16,
				   0x7f0000000100 + (uint64_t)(i % 5) * 8, 0x401000 + (uint64_t)sec,
				   0x400100};
		struct fr_sample s = {
			.time_ns = T0 + sec * SEC + i * (SEC / 40),
			.pid = tid == 20 ? 20 : 10,
			.tid = tid,
			.cpu = (uint32_t)(i % 2),
			.event = FR_EVENT_CPU,
			.weight = 10101010,
			.rate_hz = 99,
			.nr_kernel = 1,
			.nr_frames = 4,
			.ips = ips,
		};

		if (s.pid == 20) /* no library in b */
			ips[1] = 0x400200;
		CHECK(fr_chunk_builder_add(b, &s) == 0, "add");
		n++;
	}
	fr_chunk_builder_count(b, FR_EVENT_CPU, 3, 1, 0);
	CHECK(fr_chunk_builder_seal(b, &ops, 7, &buf, &len) == 0, "seal");
	CHECK(buf && fr_chunk_decode(buf, len, &c) == 0, "decode a part");
	fr_chunk_builder_free(b);
	free(buf);
	*nsamples = n;
	return c;
}

static const char *s_of(const struct fr_chunk *c, uint32_t id)
{
	return id < c->nstrings ? c->strings[id] : "?";
}

static const char *label(const struct fr_chunk *c, uint32_t ls, const char *key)
{
	const struct fr_chunk_labelset *set = &c->labelsets[ls];

	for (uint32_t k = 0; k < set->npairs; k++)
		if (strcmp(s_of(c, c->label_keys[set->first + k]), key) == 0)
			return s_of(c, c->label_values[set->first + k]);
	return NULL;
}

static int has_ancestor(const struct fr_chunk *c, const char *pid, const char *ppid)
{
	for (uint32_t ls = 1; ls < c->nlabelsets; ls++) {
		const char *p = label(c, ls, "pid"), *pp = label(c, ls, "ppid");

		if (p && pp && strcmp(p, pid) == 0 && strcmp(pp, ppid) == 0)
			return 1;
	}
	return 0;
}

/* Everything a reader asks of a sample, as text. */
static void describe(const struct fr_chunk *c, uint32_t i, char *out, size_t len)
{
	const struct fr_chunk_proc *p = fr_chunk_find_proc(c, c->pid[i]);
	const struct fr_chunk_stack *st = &c->stacks[c->stack[i]];
	const char *cg = label(c, c->labelset[i], "cgroup"), *pp = label(c, c->labelset[i], "ppid");
	int k = snprintf(out, len, "%lld %u/%u cpu%u ev%u w%llu r%u %s %s %lld %s %s %s %s |",
			 (long long)c->time_ns[i], c->pid[i], c->tid[i], c->cpu[i], c->event[i],
			 (unsigned long long)c->weight[i], c->rate_hz[i],
			 p ? s_of(c, p->comm) : "-", p ? s_of(c, p->exe) : "-",
			 p ? (long long)p->start_ns : 0LL, cg ? cg : "-", pp ? pp : "-",
			 s_of(c, fr_chunk_thread_name_at(c, c->tid[i], c->time_ns[i])),
			 s_of(c, fr_chunk_comm_at(c, c->pid[i], c->time_ns[i])));

	for (uint32_t f = 0; f < st->nr_frames && k > 0 && (size_t)k < len; f++) {
		uint64_t a = c->frames[st->first + f];
		const struct fr_chunk_map *m =
			f < st->nr_kernel ? NULL : fr_chunk_find_map(c, c->pid[i], a);

		k += snprintf(out + k, len - (size_t)k, " %llx@%s+%llx", (unsigned long long)a,
			      m ? s_of(c, m->path) : "-",
			      m ? (unsigned long long)(a - m->start + m->pgoff) : 0ULL);
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The merged chunk describes each sample as its part did. */
static void check_same(struct fr_chunk *const *parts, size_t n, const struct fr_chunk *m,
		       const char *what)
{
	size_t total = 0, k = 0;
	char **want, **got;
	uint64_t lost = 0, mlost = 0;

	for (size_t i = 0; i < n; i++) {
		total += parts[i]->nsamples;
		for (uint32_t e = 0; e < parts[i]->nevents; e++)
			lost += parts[i]->events[e].lost;
	}
	for (uint32_t e = 0; e < m->nevents; e++)
		mlost += m->events[e].lost;
	CHECK(m->nsamples == total && lost == mlost,
	      "%s: %u samples (want %zu), %llu lost (want %llu)", what, m->nsamples, total,
	      (unsigned long long)mlost, (unsigned long long)lost);
	if (m->nsamples != total)
		return;
	want = calloc(total, sizeof(*want));
	got = calloc(total, sizeof(*got));
	for (size_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < parts[i]->nsamples; j++) {
			want[k] = malloc(4096);
			describe(parts[i], j, want[k++], 4096);
		}
	for (uint32_t j = 0; j < m->nsamples; j++) {
		got[j] = malloc(4096);
		describe(m, j, got[j], 4096);
	}
	qsort(want, total, sizeof(*want), cmp_str);
	qsort(got, total, sizeof(*got), cmp_str);
	for (size_t j = 0; j < total; j++) {
		if (strcmp(want[j], got[j]) != 0) {
			CHECK(0, "%s: a sample changed:\n  part:   %s\n  merged: %s", what, want[j],
			      got[j]);
			break;
		}
	}
	for (size_t j = 0; j < total; j++) {
		free(want[j]);
		free(got[j]);
	}
	free(want);
	free(got);
}

static struct fr_chunk *merge_ok(struct fr_chunk *const *parts, size_t n, const char *what);

/* The name of a thread renamed every 300 ms (from "t0" on, "t1" from
 * 300 ms, ...) at `t`. */
static const char *const ren_names[] = {"t0", "t1", "t2", "t3", "t4", "t5",
					"t6", "t7", "t8", "t9", "t10"};

/* Names over time: each part's samples named as at their time, and the
 * merged chunk too, with the renames every part repeated once each. */
static void test_names_over_time(void)
{
	struct fr_chunk *p[3], *m;
	uint32_t ns;

	world_reset();
	for (int sec = 0; sec < 3; sec++) {
		/* The renames a tracker hands: those of this second and the
		 * last of the second before (repeated for late samples). */
		world.n11 = 0;
		world.before11 = "t0";
		for (int r = 1; r <= 10; r++) {
			int64_t at = T0 + r * 300 * 1000000ll;

			if (at >= T0 + (sec + 1) * SEC || at < T0 + (sec - 1) * SEC)
				continue;
			if (at < T0 + sec * SEC && (at + 300 * 1000000ll) < T0 + sec * SEC)
				continue;
			if (!world.n11)
				world.before11 = ren_names[r - 1];
			world.ren11[world.n11++] = (struct fr_name_change){at, ren_names[r]};
		}
		world.thread_11 = world.n11 ? world.ren11[world.n11 - 1].name : world.before11;
		p[sec] = part(sec, &ns);
		CHECK(p[sec]->hdr.version == FR_CHUNK_VERSION, "a chunk with renames: version %u",
		      p[sec]->hdr.version);
	}
	for (int sec = 0; sec < 3; sec++)
		for (uint32_t i = 0; i < p[sec]->nsamples; i++) {
			int64_t t = p[sec]->time_ns[i];
			int r = (int)((t - T0) / (300 * 1000000ll));
			const char *got = s_of(p[sec], fr_chunk_thread_name_at(p[sec], 11, t));

			if (p[sec]->tid[i] != 11)
				continue;
			CHECK(strcmp(got, ren_names[r]) == 0, "part %d at +%lld ns: %s, want %s",
			      sec, (long long)(t - T0), got, ren_names[r]);
		}
	m = merge_ok(p, 3, "names over time");
	if (m) {
		const struct fr_chunk_names *e = fr_chunk_find_names(m, 11);

		check_same(p, 3, m, "names over time");
		CHECK(e && e->n == 9 && strcmp(s_of(m, e->before), "t0") == 0,
		      "merged renames of thread 11: %u, before %s", e ? e->n : 0,
		      e ? s_of(m, e->before) : "-");
		fr_chunk_free(m);
	}
	for (int sec = 0; sec < 3; sec++)
		fr_chunk_free(p[sec]);

	/* A process whose main thread is renamed (or that execs) has its comm
	 * over time too: "b" until +3.5 s, "b2" from then on. */
	world_reset();
	world.comm_20 = "b2";
	world.before20 = "b";
	world.ren20[0] = (struct fr_name_change){T0 + 3 * SEC + SEC / 2, "b2"};
	world.n20 = 1;
	m = part(3, &ns);
	for (uint32_t i = 0; m && i < m->nsamples; i++) {
		const char *want = m->time_ns[i] < T0 + 3 * SEC + SEC / 2 ? "b" : "b2";

		if (m->pid[i] != 20)
			continue;
		CHECK(strcmp(s_of(m, fr_chunk_comm_at(m, 20, m->time_ns[i])), want) == 0 &&
			      strcmp(s_of(m, fr_chunk_thread_name_at(m, 20, m->time_ns[i])),
				     want) == 0,
		      "pid 20 at +%lld ns: comm %s, want %s", (long long)(m->time_ns[i] - T0),
		      s_of(m, fr_chunk_comm_at(m, 20, m->time_ns[i])), want);
	}
	fr_chunk_free(m);
	world_reset();
}

static struct fr_chunk *merge_ok(struct fr_chunk *const *parts, size_t n, const char *what)
{
	void *buf = NULL;
	size_t len = 0;
	struct fr_chunk *m = NULL;
	int ret = fr_chunk_merge(parts, n, 1u << 20, &buf, &len);

	CHECK(ret == 0 && buf, "%s: merge: %d", what, ret);
	if (buf)
		CHECK(fr_chunk_decode(buf, len, &m) == 0, "%s: the merged chunk does not decode",
		      what);
	free(buf);
	return m;
}

int main(void)
{
	struct fr_chunk *p[8], *m;
	uint32_t ns;
	size_t sum_len = 0;

	/* Ten agreeing seconds: one chunk, everything kept, and smaller
	 * than the ten. */
	world_reset();
	for (int i = 0; i < 8; i++) {
		/* Known from the part of its FORK on (the parts before it
		 * are of a recorder that had not seen it). */
		world.creator_12 = i >= 3 ? 11 : 0;
		if (i == 7) {
			/* Thread names change freely: renamed in the last
			 * second, from then on. */
			world.thread_11 = "renamed";
			world.before11 = "worker";
			world.ren11[0] = (struct fr_name_change){T0 + 7 * SEC - 1, "renamed"};
			world.n11 = 1;
		}
		p[i] = part(i, &ns);
		sum_len += FR_CHUNK_HEADER_LEN + p[i]->hdr.comp_len;
	}
	CHECK(fr_chunk_merge_span(p, 8, 1u << 20) == 8, "agreeing parts: span %d",
	      fr_chunk_merge_span(p, 8, 1u << 20));
	m = merge_ok(p, 8, "agreeing");
	if (m) {
		const struct fr_chunk_thread *t = fr_chunk_find_thread(m, 11);

		check_same(p, 8, m, "agreeing");
		CHECK(t && strcmp(s_of(m, t->name), "renamed") == 0,
		      "the newest part's thread name: %s", t ? s_of(m, t->name) : "none");
		CHECK(has_ancestor(m, "5", "1"), "the ancestor set of pid 5 is lost");
		CHECK(fr_chunk_find_thread(m, 12) && fr_chunk_find_thread(m, 12)->creator == 11,
		      "thread 12's creator lost in the merge");
		CHECK(m->hdr.clock_offset == 7, "clock offset");
		CHECK(FR_CHUNK_HEADER_LEN + m->hdr.comp_len < sum_len / 2,
		      "merged: %u bytes, the parts %zu", FR_CHUNK_HEADER_LEN + m->hdr.comp_len,
		      sum_len);
		fr_chunk_free(m);
	}

	test_names_over_time();

	/* Each kind of disagreement ends the span before the part. */
	static const char *const kinds[] = {"exec", "remap", "tid reuse", "cgroup"};
	for (int kind = 0; kind < 4; kind++) {
		world_reset();
		fr_chunk_free(p[5]);
		p[5] = NULL;
		switch (kind) {
		case 0: world.exe_a = "/bin/a2"; break;
		case 1: world.lib_path = "/lib/liby.so"; break;
		case 2: world.tid_12_pid = 20; break;
		case 3: world.cgroup_20 = "/z.service"; break;
		}
		p[5] = part(5, &ns);
		CHECK(fr_chunk_merge_span(p, 8, 1u << 20) == 5, "%s: span %d, want 5", kinds[kind],
		      fr_chunk_merge_span(p, 8, 1u << 20));
		CHECK(fr_chunk_merge_span(&p[5], 3, 1u << 20) == 1, "%s: span after it",
		      kinds[kind]);
		m = merge_ok(p, 5, kinds[kind]);
		if (m) {
			check_same(p, 5, m, kinds[kind]);
			fr_chunk_free(m);
		}
	}
	/* A merged block over its limit is refused: the ring then keeps the
	 * parts as they are. */
	{
		void *buf = NULL;
		size_t len = 0;

		CHECK(fr_chunk_merge(p, 2, 64, &buf, &len) == -EFBIG && !buf,
		      "a merge over its raw limit");
	}
	/* The raw limit: the first part always counts. */
	CHECK(fr_chunk_merge_span(p, 8, 10) == 1, "raw limit");
	CHECK(fr_chunk_merge_span(p, 8, 2 * p[0]->hdr.raw_len + p[2]->hdr.raw_len - 1) == 2,
	      "raw limit of two parts");

	for (int i = 0; i < 8; i++)
		fr_chunk_free(p[i]);
	if (failures) {
		fprintf(stderr, "test_merge: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
