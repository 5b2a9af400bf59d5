/* Chunk label sets: the cgroup of each process, and the parent of each
 * process and of its ancestors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/util/compress.h"
#include "core/store/crc32c.h"

#include "tests/unit/fixture_chunk.h"

/* ------------------------------------------------------------------ */
/* Label sets: the cgroup of each process                               */

/* pid 1..6: two processes share a cgroup, one has its own, one is in the
 * root cgroup, one has "" and one NULL (unknown); pid 7 is not known at
 * all. */
static const char *cgroup_of(uint32_t pid)
{
	switch (pid) {
	case 1:
	case 3: return "/system.slice/nginx.service";
	case 2: return "/user.slice/user-1000.slice/session-2.scope";
	case 4: return "/";
	case 5: return "";
	default: return NULL;
	}
}

static int cgroup_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	(void)arg;
	if (pid == 0 || pid > 6)
		return -ENOENT;
	out->pid = pid;
	out->comm = "c";
	out->cgroup = cgroup_of(pid);
	return 0;
}

/* The cgroup label of decoded sample i, NULL when its set is empty. */
static const char *sample_cgroup(const struct fr_chunk *c, uint32_t i, int *bad)
{
	const struct fr_chunk_labelset *ls;

	if (c->labelset[i] >= c->nlabelsets) {
		*bad = 1;
		return NULL;
	}
	ls = &c->labelsets[c->labelset[i]];
	if (ls->npairs == 0)
		return NULL;
	if (ls->npairs != 1 || strcmp(str(c, c->label_keys[ls->first]), "cgroup") != 0) {
		*bad = 1;
		return NULL;
	}
	return str(c, c->label_values[ls->first]);
}

static void test_cgroup_labels(void)
{
	const struct fr_chunk_meta_ops ops = {.proc = cgroup_proc};
	struct fr_chunk_builder *b = fr_chunk_builder_new(256, 65536);
	struct fr_chunk *c = NULL;
	uint64_t ips[2] = {0x401000, 0x402000};
	void *buf = NULL;
	size_t len = 0;
	int bad = 0, seen[8] = {0};

	if (!b) {
		CHECK(0, "setup");
		return;
	}
	/* Samples of pids 1..7 on two stacks each, interleaved across cpus. */
	for (int i = 0; i < 70; i++) {
		struct fr_sample s = {
			.time_ns = BASE_NS + i * 1000,
			.pid = 1 + (uint32_t)i % 7,
			.tid = 100 + (uint32_t)i % 7,
			.cpu = (uint32_t)i % 3,
			.weight = 1,
			.rate_hz = 99,
			.nr_frames = (uint16_t)(1 + i % 2),
			.ips = ips,
		};
		CHECK(fr_chunk_builder_add(b, &s) == 0, "add %d", i);
	}
	CHECK(fr_chunk_builder_seal(b, &ops, 0, &buf, &len) == 0, "seal with cgroups");
	CHECK(buf && fr_chunk_decode(buf, len, &c) == 0, "decode with cgroups");
	if (!c)
		goto out;
	/* One set per distinct path (three), plus the empty set 0. */
	CHECK(c->nlabelsets == 4, "%u label sets, want 4", c->nlabelsets);
	CHECK(c->labelsets[0].npairs == 0, "label set 0 is not empty");
	CHECK(c->nsamples == 70, "%u samples", c->nsamples);
	for (uint32_t i = 0; i < c->nsamples; i++) {
		const char *want = cgroup_of(c->pid[i]), *got = sample_cgroup(c, i, &bad);

		if (want && !*want)
			want = NULL;
		CHECK(bad == 0, "sample %u: label set %u is not {cgroup: path}", i, c->labelset[i]);
		CHECK(want ? got && strcmp(got, want) == 0 : got == NULL,
		      "sample %u of pid %u: cgroup \"%s\", want \"%s\"", i, c->pid[i],
		      got ? got : "(none)", want ? want : "(none)");
		seen[c->pid[i]]++;
		bad = 0;
	}
	for (int pid = 1; pid <= 7; pid++)
		CHECK(seen[pid] == 10, "pid %d has %d samples, want 10", pid, seen[pid]);
	/* Processes of one cgroup share its set. */
	for (uint32_t i = 0; i < c->nsamples; i++)
		for (uint32_t j = 0; j < c->nsamples; j++)
			if (c->pid[i] == 1 && c->pid[j] == 3)
				CHECK(c->labelset[i] == c->labelset[j],
				      "pids 1 and 3 differ in set");
	fr_chunk_free(c);
	c = NULL;
	free(buf);
	buf = NULL;

	/* The next chunk of the same builder, sealed without cgroups (as a
	 * tracker that does not know them, or an older recorder, writes):
	 * no label sets, every sample in set 0. */
	for (int i = 0; i < 5; i++) {
		struct fr_sample s = {
			.time_ns = BASE_NS + i,
			.pid = 1,
			.tid = 1,
			.weight = 1,
			.rate_hz = 99,
			.nr_frames = 1,
			.ips = ips,
		};
		CHECK(fr_chunk_builder_add(b, &s) == 0, "add %d", i);
	}
	CHECK(fr_chunk_builder_seal(b, &fake_ops, 0, &buf, &len) == 0, "seal without cgroups");
	CHECK(buf && fr_chunk_decode(buf, len, &c) == 0, "decode without cgroups");
	if (c) {
		CHECK(c->hdr.version == 2, "format version %u, want 2", c->hdr.version);
		CHECK(c->nlabelsets == 1, "%u label sets without cgroups", c->nlabelsets);
		for (uint32_t i = 0; i < c->nsamples; i++)
			CHECK(c->labelset[i] == 0, "sample %u in label set %u", i, c->labelset[i]);
	}
out:
	fr_chunk_free(c);
	free(buf);
	fr_chunk_builder_free(b);
}

/* ------------------------------------------------------------------ */
/* Label sets: the parent of each process, and of its ancestors          */

#define NPP 2100
static struct {
	int known;
	const char *cgroup;
	uint32_t ppid;
} pp[NPP];
static int pp_calls[NPP];

static void pp_set(uint32_t pid, const char *cgroup, uint32_t ppid)
{
	pp[pid].known = 1;
	pp[pid].cgroup = cgroup;
	pp[pid].ppid = ppid;
}

static int ppid_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	(void)arg;
	if (pid < NPP)
		pp_calls[pid]++;
	if (pid >= NPP || !pp[pid].known)
		return -ENOENT;
	out->pid = pid;
	out->comm = "p";
	out->cgroup = pp[pid].cgroup;
	out->ppid = pp[pid].ppid;
	return 0;
}

/* The value of `key` in label set `ls`, or NULL. */
static const char *label_of(const struct fr_chunk *c, uint32_t ls, const char *key)
{
	const struct fr_chunk_labelset *l = &c->labelsets[ls];

	for (uint32_t k = 0; k < l->npairs; k++)
		if (strcmp(str(c, c->label_keys[l->first + k]), key) == 0)
			return str(c, c->label_values[l->first + k]);
	return NULL;
}

/* Label sets no sample refers to, each {"pid": N, "ppid": M}: how many,
 * and the parent they give `pid` in *ppid (0: none). */
static uint32_t ancestor_sets(const struct fr_chunk *c, uint32_t pid, uint32_t *ppid)
{
	uint32_t n = 0;
	char want[16];

	snprintf(want, sizeof(want), "%u", pid);
	*ppid = 0;
	for (uint32_t k = 1; k < c->nlabelsets; k++) {
		const char *p = label_of(c, k, "pid"), *parent = label_of(c, k, "ppid");
		int used = 0;

		for (uint32_t i = 0; i < c->nsamples && !used; i++)
			used = c->labelset[i] == k;
		if (!p)
			continue;
		n++;
		CHECK(!used, "label set %u with a pid is a sample's", k);
		CHECK(c->labelsets[k].npairs == 2 && parent, "ancestor set %u: %u pairs, ppid %s",
		      k, c->labelsets[k].npairs, parent ? parent : "(none)");
		if (parent && strcmp(p, want) == 0) {
			CHECK(*ppid == 0, "two ancestor sets for pid %u", pid);
			*ppid = (uint32_t)strtoul(parent, NULL, 10);
		}
	}
	return n;
}

static int seal_pids(struct fr_chunk_builder *b, const uint32_t *pids, size_t n,
		     struct fr_chunk **c)
{
	const struct fr_chunk_meta_ops ops = {.proc = ppid_proc};
	uint64_t ips[1] = {0x401000};
	void *buf = NULL;
	size_t len = 0;
	int ret;

	/* Three samples of each pid, interleaved across cpus. */
	for (size_t i = 0; i < 3 * n; i++) {
		struct fr_sample s = {
			.time_ns = BASE_NS + (int64_t)i * 1000,
			.pid = pids[i % n],
			.tid = pids[i % n],
			.cpu = (uint32_t)i % 2,
			.weight = 1,
			.rate_hz = 99,
			.nr_frames = 1,
			.ips = ips,
		};
		CHECK(fr_chunk_builder_add(b, &s) == 0, "add %zu", i);
	}
	memset(pp_calls, 0, sizeof(pp_calls));
	ret = fr_chunk_builder_seal(b, &ops, 0, &buf, &len);
	CHECK(ret == 0, "seal with parents: %d", ret);
	if (ret == 0) {
		ret = fr_chunk_decode(buf, len, c);
		CHECK(ret == 0, "decode with parents: %d", ret);
	}
	free(buf);
	return ret;
}

/* The tracker's answers for test_ppid_labels: processes 10-22 with
 * their cgroups and parents, ancestors never sampled, cycles, processes
 * that are their own parent and parents the tracker does not know. */
static void set_ppid_tree(void)
{
	static const char *A = "/system.slice/a.service", *B = "/system.slice/b.service";

	memset(pp, 0, sizeof(pp));
	pp_set(1, "/init.scope", 0);
	pp_set(10, A, 1);
	pp_set(11, A, 10);
	pp_set(12, A, 10);
	pp_set(13, B, 10);
	pp_set(14, NULL, 50);
	pp_set(50, A, 51); /* a shell between 10 and 14, never sampled */
	pp_set(51, NULL, 10);
	pp_set(15, A, 0);
	pp_set(16, "", 60);
	pp_set(60, NULL, 61); /* a cycle above 16 */
	pp_set(61, NULL, 60);
	pp_set(17, NULL, 17); /* its own parent */
	pp_set(18, NULL, 70);
	pp_set(70, NULL, 70); /* an ancestor that is its own parent */
	/* 19 is unknown */
	pp_set(20, NULL, UINT32_MAX);
	pp_set(21, NULL, 80); /* 80 is unknown: asked once, not recorded */
	pp_set(22, NULL, 80);
}

/* The label sets of ancestors without samples, each with the parent it
 * must give, and none for a sampled process. */
static void check_ancestor_sets(const struct fr_chunk *c)
{
	static const uint32_t anc[][2] = {{50, 51}, {51, 10}, {60, 61}, {61, 60}, {70, 70}};
	uint32_t got, n;

	n = ancestor_sets(c, 0, &got);
	CHECK(n == sizeof(anc) / sizeof(anc[0]), "%u ancestor sets, want %zu", n,
	      sizeof(anc) / sizeof(anc[0]));
	for (size_t k = 0; k < sizeof(anc) / sizeof(anc[0]); k++) {
		ancestor_sets(c, anc[k][0], &got);
		CHECK(got == anc[k][1], "ancestor %u: ppid %u, want %u", anc[k][0], got, anc[k][1]);
	}
	/* Sampled processes are not ancestor sets; pid 1 has no parent. */
	for (uint32_t pid = 1; pid < 23; pid++) {
		ancestor_sets(c, pid, &got);
		CHECK(got == 0, "pid %u has an ancestor set (ppid %u)", pid, got);
	}
}

static void test_ppid_labels(void)
{
	static const uint32_t pids[] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22};
	static const struct {
		uint32_t pid;
		const char *cgroup;
		uint32_t ppid;
	} want[] = {
		{10, "/system.slice/a.service", 1},
		{11, "/system.slice/a.service", 10},
		{12, "/system.slice/a.service", 10},
		{13, "/system.slice/b.service", 10},
		{14, NULL, 50},
		{15, "/system.slice/a.service", 0},
		{16, NULL, 60},
		{17, NULL, 17},
		{18, NULL, 70},
		{19, NULL, 0},
		{20, NULL, UINT32_MAX},
		{21, NULL, 80},
		{22, NULL, 80},
	};
	struct fr_chunk_builder *b = fr_chunk_builder_new(1024, 1 << 20);
	struct fr_chunk *c = NULL;

	if (!b) {
		CHECK(0, "setup");
		return;
	}
	set_ppid_tree();

	if (seal_pids(b, pids, sizeof(pids) / sizeof(pids[0]), &c) < 0)
		goto out;
	for (uint32_t i = 0; i < c->nsamples; i++) {
		const char *cg = label_of(c, c->labelset[i], "cgroup");
		const char *ppid = label_of(c, c->labelset[i], "ppid");
		char num[16];
		size_t k = 0;

		while (k < sizeof(want) / sizeof(want[0]) && want[k].pid != c->pid[i])
			k++;
		CHECK(k < sizeof(want) / sizeof(want[0]), "sample %u of pid %u", i, c->pid[i]);
		if (k == sizeof(want) / sizeof(want[0]))
			continue;
		snprintf(num, sizeof(num), "%u", want[k].ppid);
		CHECK(want[k].cgroup ? cg && strcmp(cg, want[k].cgroup) == 0 : !cg,
		      "pid %u: cgroup %s", c->pid[i], cg ? cg : "(none)");
		CHECK(want[k].ppid ? ppid && strcmp(ppid, num) == 0 : !ppid,
		      "pid %u: ppid %s, want %s", c->pid[i], ppid ? ppid : "(none)",
		      want[k].ppid ? num : "(none)");
		CHECK(!label_of(c, c->labelset[i], "pid"), "pid %u: a sample with a pid label",
		      c->pid[i]);
		CHECK(c->labelsets[c->labelset[i]].npairs ==
			      (uint32_t)((cg != NULL) + (ppid != NULL)),
		      "pid %u: %u pairs", c->pid[i], c->labelsets[c->labelset[i]].npairs);
	}
	/* One set per distinct (cgroup, ppid): 11 and 12 share one, 13 (same
	 * parent, another cgroup) has its own. */
	for (uint32_t i = 0; i < c->nsamples; i++) {
		for (uint32_t j = 0; j < c->nsamples; j++) {
			if (c->pid[i] == 11 && c->pid[j] == 12)
				CHECK(c->labelset[i] == c->labelset[j], "11 and 12 in two sets");
			if (c->pid[i] == 11 && c->pid[j] == 13)
				CHECK(c->labelset[i] != c->labelset[j], "11 and 13 in one set");
		}
	}
	check_ancestor_sets(c);
	/* The empty set, 10 sets of the 13 processes (11 and 12 share one,
	 * 21 and 22 another, 19 has none) and the 5 ancestors'. */
	CHECK(c->nlabelsets == 1 + 10 + 5, "%u label sets, want 16", c->nlabelsets);
	CHECK(pp_calls[80] == 1 && pp_calls[50] == 1 && pp_calls[10] == 1,
	      "the unknown parent asked %d times, 50 %d, 10 %d; want once each", pp_calls[80],
	      pp_calls[50], pp_calls[10]);
out:
	fr_chunk_free(c);
	fr_chunk_builder_free(b);
}

/* A chain of 2000 ancestors: the walk up stops, after the pids of the
 * chunk plus 64. */
static void test_ppid_deep_chain(void)
{
	struct fr_chunk_builder *b = fr_chunk_builder_new(1024, 1 << 20);
	struct fr_chunk *c = NULL;
	uint32_t got, n;

	if (!b) {
		CHECK(0, "setup");
		return;
	}
	memset(pp, 0, sizeof(pp));
	for (uint32_t pid = 100; pid < 2099; pid++)
		pp_set(pid, NULL, pid + 1);
	pp_set(2099, NULL, 1);
	pp_set(30, NULL, 100);
	{
		const uint32_t deep[] = {30};

		if (seal_pids(b, deep, 1, &c) < 0)
			goto out;
	}
	n = ancestor_sets(c, 100, &got);
	CHECK(n == 64 + 1 && got == 101,
	      "a deep chain: %u ancestor sets (want 65), "
	      "100's parent %u",
	      n, got);
out:
	fr_chunk_free(c);
	fr_chunk_builder_free(b);
}

int main(void)
{
	test_cgroup_labels();
	test_ppid_labels();
	test_ppid_deep_chain();
	if (failures) {
		fprintf(stderr, "test_chunk: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
