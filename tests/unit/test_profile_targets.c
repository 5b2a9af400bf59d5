/* Targets of a query: comm, cgroup and uid filters, and --children (a
 * process with every descendant the chunks recorded). */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/query/profile.h"
#include "core/store/ring.h"
#include "core/store/sample.h"

#include "tests/unit/fixture.h"

/* Samples of app 10, db 20, web 30 and sub 5, each of its own stack. */
static void write_targets(struct writer *w)
{
	static const struct {
		uint32_t pid;
		int n, st;
	} procs[] = {{PID_APP, 10, ST_USER},
		     {PID_DB, 20, ST_KERNEL},
		     {PID_WEB, 30, ST_OTHER},
		     {PID_SUB, 5, ST_USER}};
	int64_t t = T0 + SEC;

	for (size_t k = 0; k < sizeof(procs) / sizeof(procs[0]); k++)
		for (int i = 0; i < procs[k].n; i++)
			w_add(w, t += 1000, procs[k].pid, procs[k].pid, (uint32_t)i % 2, 99,
			      procs[k].st);
}

/* Runs `q` and returns the samples kept, or -1. */
static int64_t kept_of(struct fr_ring *r, const struct fr_profile_request *q, const char *name)
{
	struct fr_profile_result res;
	struct out o;
	int64_t kept = -1;

	if (run(r, q, &res, &o, name) == 0)
		kept = (int64_t)res.samples_kept;
	out_free(&o);
	return kept;
}

static void set_comms(struct fr_profile_request *q, const char *a, const char *b)
{
	q->targets.ncomms = 0;
	if (a)
		snprintf(q->targets.comms[q->targets.ncomms++], FR_LIMIT_COMM_LEN, "%s", a);
	if (b)
		snprintf(q->targets.comms[q->targets.ncomms++], FR_LIMIT_COMM_LEN, "%s", b);
}

static void test_comm_filter(void)
{
	struct fr_ring *r = test_ring_create("comms");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	char err[512];
	int64_t k;

	if (!r)
		return;
	w_init(&w, r);
	write_targets(&w);
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	set_comms(&q, "frtest-db", "frtest-web");
	k = kept_of(r, &q, "comm-db-web");
	CHECK(k == 50, "comms db, web: kept %" PRId64 ", want 50", k);
	set_comms(&q, "frtest-app", NULL);
	k = kept_of(r, &q, "comm-app");
	CHECK(k == 10, "comm app: kept %" PRId64 ", want 10", k);
	/* Whole names only. */
	set_comms(&q, "frtest", "frtest-ap");
	k = kept_of(r, &q, "comm-prefix");
	CHECK(k == 0, "comm prefixes: kept %" PRId64 ", want 0", k);
	/* AND with pids, OR within each. */
	set_comms(&q, "frtest-app", "frtest-db");
	q.targets.npids = 2;
	q.targets.pids[0] = PID_DB;
	q.targets.pids[1] = PID_WEB;
	k = kept_of(r, &q, "comm-pid");
	CHECK(k == 20, "comms app, db and pids db, web: kept %" PRId64 ", want 20 (db)", k);
	q.targets.npids = 1;
	q.targets.pids[0] = PID_WEB;
	k = kept_of(r, &q, "comm-pid-none");
	CHECK(k == 0, "comms app, db and pid web: kept %" PRId64 ", want 0", k);

	/* A name longer than the kernel keeps cannot match: refused. */
	req_init(&q, T0, T0 + 60 * SEC, 0);
	q.targets.ncomms = 1;
	memset(q.targets.comms[0], 'x', FR_LIMIT_COMM_LEN);
	CHECK(fr_profile_write(r, &q, sink_mem, &(struct out){0}, &res, err, sizeof(err)) ==
			      -EINVAL &&
		      strstr(err, "longer"),
	      "a 16-character comm: \"%s\"", err);
	test_ring_done(r);
}

static void set_cgroup(struct fr_profile_request *q, const char *path)
{
	snprintf(q->targets.cgroup, sizeof(q->targets.cgroup), "%s", path);
}

/* The cgroup label, on the samples that have one; web's samples from
 * before and after its move are apart. */
static void check_cgroup_labels(struct fr_ring *r, int before)
{
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw raw;

	req_init(&q, T0, T0 + 60 * SEC, 0);
	if (run(r, &q, &res, &o, "cgroup-labels") == 0) {
		if (raw_read(&raw, &o, "the profile with cgroup labels") == 0) {
			const char *app[] = {"cgroup:[" CG_NGINX "]", "comm:[frtest-app]", NULL};
			const char *sub[] = {"cgroup:[" CG_SUB "]", "comm:[frtest-sub]", NULL};
			const char *web_in[] = {"cgroup:[/user.slice/user-1000.slice]",
						"comm:[frtest-web]", NULL};
			const struct rsample *s = find_sample(&raw, ST_USER, app);
			int unlabelled_web = 0;

			CHECK(s && s->v[0] == 10, "app with its cgroup label: %" PRId64,
			      s ? s->v[0] : -1);
			s = find_sample(&raw, ST_USER, sub);
			CHECK(s && s->v[0] == 5, "sub with its cgroup label: %" PRId64,
			      s ? s->v[0] : -1);
			s = find_sample(&raw, ST_OTHER, web_in);
			CHECK(s && s->v[0] == 7, "web after the move: %" PRId64, s ? s->v[0] : -1);
			for (int i = 0; i < raw.nsamples; i++)
				if (strstr(raw.s[i].labels, "comm:[frtest-web]") &&
				    !strstr(raw.s[i].labels, "cgroup:"))
					unlabelled_web += (int)raw.s[i].v[0];
			CHECK(unlabelled_web == 30, "web before the move, without a label: %d",
			      unlabelled_web);
			CHECK(raw.nsamples == 5, "pprof shows %d samples, want 5", raw.nsamples);
			raw_done(&raw, before);
		}
	}
	out_free(&o);
}

static void test_cgroup_filter(void)
{
	static const struct {
		const char *cgroup;
		int64_t kept;
		const char *why;
	} cases[] = {
		{"", 65 + 7, "no cgroup filter: everything"},
		{CG_NGINX, 15, "nginx and the cgroup below it"},
		{CG_NGINX "/", 15, "a trailing slash"},
		{CG_SUB, 5, "the sub cgroup alone"},
		{"/system.slice", 35, "the slice: nginx, sub, db"},
		{"/system.slice/ng", 0, "a prefix of a name, not a path component"},
		{"/system.slice/nginx", 0, "a prefix of a name, not a path component"},
		{CG_SUB "/x", 0, "below every process"},
		{"/", 35 + 7, "every process whose cgroup is known"},
		{"/user.slice", 7, "web once it moved"},
	};
	struct fr_ring *r = test_ring_create("cgroups");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	char err[512];
	int before = failures;
	int64_t k;

	if (!r)
		return;
	w_init(&w, r);
	write_targets(&w);
	w_seal(&w);
	/* web moves into a cgroup the tracker knows: its next 7 samples have
	 * a cgroup label, the 30 before none. */
	web_cgroup = "/user.slice/user-1000.slice";
	for (int i = 0; i < 7; i++)
		w_add(&w, T0 + 2 * SEC + i * 1000, PID_WEB, PID_WEB, 0, 99, ST_OTHER);
	w_fini(&w);
	web_cgroup = NULL;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		req_init(&q, T0, T0 + 60 * SEC, 0);
		set_cgroup(&q, cases[i].cgroup);
		k = kept_of(r, &q, "cgroup");
		CHECK(k == cases[i].kept, "cgroup \"%s\" (%s): kept %" PRId64 ", want %" PRId64,
		      cases[i].cgroup, cases[i].why, k, cases[i].kept);
	}
	/* AND with pids. */
	req_init(&q, T0, T0 + 60 * SEC, 0);
	set_cgroup(&q, "/system.slice");
	q.targets.npids = 2;
	q.targets.pids[0] = PID_DB;
	q.targets.pids[1] = PID_WEB;
	k = kept_of(r, &q, "cgroup-pid");
	CHECK(k == 20, "cgroup /system.slice and pids db, web: kept %" PRId64 ", want 20", k);
	/* AND with comms. */
	q.targets.npids = 0;
	set_comms(&q, "frtest-sub", "frtest-web");
	k = kept_of(r, &q, "cgroup-comm");
	CHECK(k == 5, "cgroup /system.slice and comms sub, web: kept %" PRId64 ", want 5", k);

	check_cgroup_labels(r, before);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	set_cgroup(&q, "system.slice");
	CHECK(fr_profile_write(r, &q, sink_mem, &(struct out){0}, &res, err, sizeof(err)) ==
			      -EINVAL &&
		      strstr(err, "cgroup"),
	      "a relative cgroup path: \"%s\"", err);
	test_ring_done(r);
}

/* Runs `q` with children and pids; *kept the samples kept, and whether
 * the profile has `pids` rows and not `absent` ones (0-terminated). */
static void check_children(struct fr_ring *r, struct fr_profile_request *q, const char *name,
			   int64_t kept, const uint32_t *pids, const uint32_t *absent,
			   const char *comment_text)
{
	struct fr_profile_result res;
	struct out o;
	struct raw raw;
	int before = failures;

	if (run(r, q, &res, &o, name) != 0) {
		out_free(&o);
		return;
	}
	CHECK((int64_t)res.samples_kept == kept && res.samples_seen == res.samples_kept,
	      "%s: seen %" PRIu64 " kept %" PRIu64 ", want %" PRId64, name, res.samples_seen,
	      res.samples_kept, kept);
	if (raw_read(&raw, &o, name) == 0) {
		for (int i = 0; pids[i]; i++)
			CHECK(find_pid(&raw, -1, pids[i]), "%s: no samples of pid %u", name,
			      pids[i]);
		for (int i = 0; absent[i]; i++)
			CHECK(!find_pid(&raw, -1, absent[i]), "%s: samples of pid %u", name,
			      absent[i]);
		CHECK(raw_total(&raw) == kept, "%s: pprof counts %" PRId64 " samples", name,
		      raw_total(&raw));
		if (comment_text)
			CHECK(strstr(raw.text, comment_text), "%s: no comment \"%s\"", name,
			      comment_text);
		else
			CHECK(!strstr(raw.text, "--children"), "%s: a --children comment", name);
		CHECK(!strstr(raw.text, "ppid"), "%s: a ppid label in the profile", name);
		dump_on_failure(&raw, before);
		raw_free(&raw);
	} else {
		CHECK(0, "%s: cannot read the profile", name);
	}
	out_free(&o);
}

/* A uid restriction keeps only the processes the chunks recorded for that
 * uid, combines with the other targets, and says so in a comment. */
static void test_uid_filter(void)
{
	static const uint32_t none[] = {0};
	struct fr_ring *r = test_ring_create("uids");
	struct fr_profile_request q;
	struct writer w;
	int64_t k;

	if (!r)
		return;
	w_init(&w, r);
	write_targets(&w);
	w_fini(&w);

	req_init(&q, T0, T0 + 60 * SEC, 0);
	q.targets.has_uid = 1;
	q.targets.uid = 1000;
	check_children(r, &q, "uid-1000", 45, (const uint32_t[]){PID_APP, PID_WEB, PID_SUB, 0},
		       (const uint32_t[]){PID_DB, 0}, "limited to the processes of uid 1000");
	q.targets.uid = 0;
	check_children(r, &q, "uid-0", 20, (const uint32_t[]){PID_DB, 0},
		       (const uint32_t[]){PID_APP, PID_WEB, PID_SUB, 0},
		       "limited to the processes of uid 0");
	/* A user asking for root's process by name or pid gets nothing. */
	q.targets.uid = 1000;
	set_comms(&q, "frtest-db", NULL);
	k = kept_of(r, &q, "uid-1000-comm-db");
	CHECK(k == 0, "uid 1000 and comm db: kept %" PRId64 ", want 0", k);
	q.targets.ncomms = 0;
	q.targets.npids = 1;
	q.targets.pids[0] = PID_DB;
	k = kept_of(r, &q, "uid-1000-pid-db");
	CHECK(k == 0, "uid 1000 and pid db: kept %" PRId64 ", want 0", k);
	q.targets.npids = 0;
	q.targets.uid = 4242;
	check_children(r, &q, "uid-nobody", 0, none, (const uint32_t[]){PID_APP, PID_DB, 0},
		       "limited to the processes of uid 4242");
	test_ring_done(r);
}

static void add_n(struct writer *w, int64_t *t, uint32_t pid, int n, uint32_t hz, int st)
{
	for (int i = 0; i < n; i++)
		w_add(w, *t += 1000, pid, pid, (uint32_t)i % 2, hz, st);
}

/* --children: the descendants of a pid, found through the "ppid" labels
 * of every chunk of the window (a child's samples may come chunks after
 * its parent's, a shell between them may have none), however many. */
/* The family of FAM(100) (see ppid_of() in fixture.c) over three chunks;
 * returns the ring, or NULL. */
static struct fr_ring *family_ring(void)
{
	struct fr_ring *r = test_ring_create("children");
	struct writer w;
	int64_t t = T0 + SEC;

	if (!r)
		return NULL;
	w_init(&w, r);
	add_n(&w, &t, FAM(100), 10, 99, ST_USER);
	add_n(&w, &t, FAM(400), 7, 99, ST_OTHER);
	w_seal(&w);
	t = T0 + 2 * SEC;
	add_n(&w, &t, FAM(200), 20, 99, ST_KERNEL);
	add_n(&w, &t, FAM(100), 5, 99, ST_USER);
	w_seal(&w);
	t = T0 + 3 * SEC;
	add_n(&w, &t, FAM(300), 30, 99, ST_USER);
	add_n(&w, &t, FAM(350), 4, 99, ST_OTHER);
	add_n(&w, &t, FAM(400), 3, 99, ST_OTHER);
	add_n(&w, &t, FAM(500), 2, 99, ST_USER);
	add_n(&w, &t, FAM(600), 2, 99, ST_USER);
	add_n(&w, &t, FAM(700), 2, 99, ST_USER);
	w_fini(&w);
	CHECK(w.chunks == 3, "wrote %u chunks, want 3", w.chunks);
	return r;
}

static void test_children(void)
{
	struct fr_ring *r = family_ring();
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw raw;
	int64_t k;
	char text[160];

	if (!r)
		return;

	req_init(&q, T0, T0 + 60 * SEC, 0);
	q.targets.npids = 1;
	q.targets.pids[0] = FAM(100);
	check_children(r, &q, "children-off", 15, (const uint32_t[]){FAM(100), 0},
		       (const uint32_t[]){FAM(200), FAM(300), FAM(350), FAM(400), 0}, NULL);

	q.targets.children = 1;
	snprintf(text, sizeof(text), "--children: 4 descendant processes of %u included", FAM(100));
	check_children(r, &q, "children", 15 + 20 + 30 + 4,
		       (const uint32_t[]){FAM(100), FAM(200), FAM(300), FAM(350), 0},
		       (const uint32_t[]){FAM(400), FAM(500), FAM(600), FAM(700), 0}, text);
	/* The labels are those of any profile: 100's samples of both chunks
	 * are one row, with its cgroup. */
	if (run(r, &q, &res, &o, "children-labels") == 0 &&
	    raw_read(&raw, &o, "the children-labels profile") == 0) {
		char l1[64];
		const char *want[] = {label(l1, sizeof(l1), "pid", FAM(100)),
				      "cgroup:[" CG_NGINX "]", NULL};
		const struct rsample *s = find_sample(&raw, ST_USER, want);

		CHECK(s && s->v[0] == 15, "children: 100's row %" PRId64 ", want 15",
		      s ? s->v[0] : -1);
		raw_free(&raw);
	}
	out_free(&o);

	/* From the middle of the tree: not the parent. */
	q.targets.pids[0] = FAM(200);
	snprintf(text, sizeof(text), "--children: 3 descendant processes of %u included", FAM(200));
	check_children(r, &q, "children-200", 20 + 30 + 4,
		       (const uint32_t[]){FAM(200), FAM(300), FAM(350), 0},
		       (const uint32_t[]){FAM(100), FAM(400), 0}, text);

	/* Two pids, one of them a descendant of nothing asked. */
	q.targets.npids = 2;
	q.targets.pids[0] = FAM(400);
	q.targets.pids[1] = FAM(300);
	snprintf(text, sizeof(text), "--children: 0 descendant processes of %u,%u included",
		 FAM(400), FAM(300));
	check_children(r, &q, "children-two", 10 + 30, (const uint32_t[]){FAM(400), FAM(300), 0},
		       (const uint32_t[]){FAM(100), FAM(200), FAM(350), 0}, text);

	/* Parents in a cycle, and a process that is its own: the walk ends. */
	q.targets.npids = 1;
	q.targets.pids[0] = FAM(500);
	snprintf(text, sizeof(text), "--children: 1 descendant processes of %u included", FAM(500));
	check_children(r, &q, "children-cycle", 4, (const uint32_t[]){FAM(500), FAM(600), 0},
		       (const uint32_t[]){FAM(700), FAM(100), 0}, text);
	q.targets.pids[0] = FAM(700);
	snprintf(text, sizeof(text), "--children: 0 descendant processes of %u included", FAM(700));
	check_children(r, &q, "children-self", 2, (const uint32_t[]){FAM(700), 0},
		       (const uint32_t[]){FAM(500), FAM(600), 0}, text);

	/* Without pids, children changes nothing; folded output too. */
	q.targets.npids = 0;
	k = kept_of(r, &q, "children-all");
	CHECK(k == 85, "children without pids: kept %" PRId64 ", want 85", k);
	q.targets.npids = 1;
	q.targets.pids[0] = FAM(100);
	q.format = FR_PROFILE_FOLDED;
	k = kept_of(r, &q, "children-folded");
	CHECK(k == 69, "children, folded: kept %" PRId64 ", want 69", k);
	if (run(r, &q, &res, &o, "children-folded-text") == 0) {
		char *txt = strndup((const char *)o.buf, o.len);

		CHECK(txt && strstr(txt, "frtest-350;") && strstr(txt, "frtest-300;") &&
			      !strstr(txt, "frtest-400;"),
		      "children, folded: %s", txt ? txt : "(null)");
		free(txt);
	}
	out_free(&o);
	test_ring_done(r);
}

/* The rate of the profile is the lowest of the extended targets: a child
 * collected at 49 Hz brings its parent's 99 Hz down. */
static void test_children_rates(void)
{
	struct fr_ring *r = test_ring_create("children-rates");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	int64_t t;

	if (!r)
		return;
	w_init(&w, r);
	t = T0 + SEC;
	add_n(&w, &t, FAM(100), 40, 99, ST_USER);
	w_seal(&w);
	t = T0 + 2 * SEC;
	add_n(&w, &t, FAM(200), 10, 49, ST_USER);
	w_fini(&w);
	req_init(&q, T0, T0 + 60 * SEC, 0);
	q.targets.npids = 1;
	q.targets.pids[0] = FAM(100);
	if (run(r, &q, &res, &o, "children-rate-off") == 0)
		CHECK(res.hz == 99 && res.samples_seen == 40,
		      "without children: %u Hz, seen %" PRIu64, res.hz, res.samples_seen);
	out_free(&o);
	q.targets.children = 1;
	if (run(r, &q, &res, &o, "children-rate") == 0)
		CHECK(res.hz == 49 && res.samples_seen == 50 && res.events[0].min_rate == 49 &&
			      res.events[0].max_rate == 99 && res.samples_kept < 50,
		      "with children: %u Hz, seen %" PRIu64 " kept %" PRIu64 ", rates %u..%u",
		      res.hz, res.samples_seen, res.samples_kept, res.events[0].min_rate,
		      res.events[0].max_rate);
	out_free(&o);
	test_ring_done(r);
}

/* A process that exec'd within a chunk: the samples before are of the
 * program it was (a shell), those after of the new one; --comm selects
 * and the comm label names each as it was then, even when the process
 * table's comm, the seal's, is the other one. */
static void test_comm_exec(void)
{
	struct fr_ring *r = test_ring_create("comm-exec");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct writer w;
	struct out o;
	struct raw raw;
	char l1[64];
	int64_t k;

	if (!r)
		return;
	web_exec_ns = T0 + SEC + 10 * 1000;
	w_init(&w, r);
	for (int i = 0; i < 20; i++)
		w_add(&w, T0 + SEC + i * 1000 + 500, PID_WEB, PID_WEB, 0, 99, ST_USER);
	w_fini(&w);
	web_exec_ns = 0;

	req_init(&q, T0, T0 + 60 * SEC, 0);
	set_comms(&q, "frtest-web", NULL);
	k = kept_of(r, &q, "exec-web");
	CHECK(k == 10, "comm web, after its exec: kept %" PRId64 ", want 10", k);
	set_comms(&q, "frtest-sh", NULL);
	k = kept_of(r, &q, "exec-sh");
	CHECK(k == 10, "comm sh, before the exec: kept %" PRId64 ", want 10", k);
	q.targets.ncomms = 0;
	if (run(r, &q, &res, &o, "exec-all") == 0 && raw_read(&raw, &o, "exec-all") == 0) {
		const char *sh[] = {label(l1, sizeof(l1), "pid", PID_WEB), "comm:[frtest-sh]",
				    NULL};
		const char *web[] = {l1, "comm:[frtest-web]", NULL};
		const struct rsample *a = find_sample(&raw, ST_USER, sh);
		const struct rsample *b = find_sample(&raw, ST_USER, web);

		CHECK(a && b && a->v[0] == 10 && b->v[0] == 10,
		      "comm labels at each sample's time: sh %" PRId64 ", web %" PRId64,
		      a ? a->v[0] : -1, b ? b->v[0] : -1);
		raw_free(&raw);
	}
	out_free(&o);
	test_ring_done(r);
}

int main(void)
{
	if (fixture_init("profile-targets") != 0)
		return 1;
	test_comm_filter();
	test_comm_exec();
	test_uid_filter();
	test_cgroup_filter();
	test_children();
	test_children_rates();
	return fixture_fini();
}
