/* Kernel frames in profiles: their functions carry the kernel's plain
 * names (so `go tool pprof -focus` and regexes match them as written),
 * every kernel location is on the kernel mapping, an address kallsyms
 * does not name is named by its address on it, and folded stacks mark kernel
 * frames with the "_[k]" suffix flame-graph tools know. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/query/profile.h"
#include "core/store/ring.h"

#include "tests/unit/fixture.h"

/* The mapping of location `loc` (an index + 1, as in struct rsample), or
 * NULL when it names none. */
static const struct fr_pprof_rmapping *loc_mapping(const struct raw *r, uint32_t loc)
{
	const struct fr_pprof_rlocation *l = &r->d->locations[loc - 1];

	return l->mapping < 0 ? NULL : &r->d->mappings[l->mapping];
}

static int on_kernel_mapping(const struct raw *r, uint32_t loc)
{
	const struct fr_pprof_rmapping *m = loc_mapping(r, loc);

	return m && strcmp(m->filename, FR_PROFILE_KERNEL_MAPPING) == 0;
}

/* The kernel frames of `s` (its first `nr_kernel` locations) are on the
 * kernel mapping, the others are not. */
static void check_sample_mappings(const struct raw *r, const struct rsample *s, int nr_kernel,
				  const char *what)
{
	for (int k = 0; k < s->nlocs; k++)
		CHECK(on_kernel_mapping(r, s->loc[k]) == (k < nr_kernel),
		      "%s: frame %d is %son the mapping %s", what, k, k < nr_kernel ? "not " : "",
		      FR_PROFILE_KERNEL_MAPPING);
}

/* The sample of db's thread 1, whose kernel leaf kallsyms does not name:
 * a location at `addr`, on the kernel mapping, with one function named
 * `name` (a location without one would send pprof to the mapping's path
 * to name it). */
static void check_unnamed(const struct raw *r, uint64_t addr, const char *name, const char *what)
{
	char l1[64];
	const char *want[] = {label(l1, sizeof(l1), "tid", TID(PID_DB, 1)), NULL};
	const struct rsample *s = find_sample(r, -1, want);
	const struct fr_pprof_rlocation *leaf;

	CHECK(s && s->nlocs == stacks[ST_KERNEL].nr_frames, "%s: no sample of db's thread 1", what);
	if (!s || s->nlocs != stacks[ST_KERNEL].nr_frames)
		return;
	leaf = &r->d->locations[s->loc[0] - 1];
	CHECK(leaf->nline == 1 && leaf->address == addr &&
		      strcmp(r->d->functions[r->d->line_funcs[leaf->line]].name, name) == 0,
	      "%s: unnamed kernel leaf has %zu functions (%s), address 0x%" PRIx64
	      ", want %s at 0x%" PRIx64,
	      what, leaf->nline,
	      leaf->nline ? r->d->functions[r->d->line_funcs[leaf->line]].name : "none",
	      leaf->address, name, addr);
	check_sample_mappings(r, s, stacks[ST_KERNEL].nr_kernel, what);
}

/* pprof: plain kernel names, kernel locations on the kernel mapping; no
 * function anywhere carries the old "[k] " prefix. */
static void test_pprof(void)
{
	struct fr_ring *r = test_kernel_ring("kernel-pprof");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	struct raw raw;
	int before = failures;

	if (!r)
		return;
	req_init(&q, T0, T0 + 60 * SEC, 99);
	for (int uid = 0; uid < 2; uid++) {
		const struct rsample *s;

		/* A user limited to their own processes (db and web run as
		 * uid 0) still gets the names, but no kernel address. */
		q.targets.has_uid = uid;
		q.targets.uid = 0;
		if (run(r, &q, &res, &o, uid ? "kernel-uid" : "kernel") != 0 ||
		    raw_parse(&raw, o.path) != 0) {
			CHECK(0, "cannot make or read the profile (uid %d)", uid);
			out_free(&o);
			continue;
		}
		s = find_pid(&raw, ST_KERNEL, PID_DB);
		CHECK(s && s->v[0] == 3, "db's kernel stack with plain names: %" PRId64 ", want 3",
		      s ? s->v[0] : -1);
		if (s)
			check_sample_mappings(&raw, s, stacks[ST_KERNEL].nr_kernel, "db");
		/* app, of uid 1000, is only in root's profile. */
		s = find_pid(&raw, ST_USER, PID_APP);
		CHECK(uid ? !s : s != NULL, "app's user stack %s (uid %d)",
		      uid ? "shown to uid 0" : "missing", uid);
		if (s)
			check_sample_mappings(&raw, s, 0, "app");
		for (size_t i = 0; i < raw.d->nfunctions; i++)
			CHECK(strncmp(raw.d->functions[i].name, "[k]", 3) != 0,
			      "function \"%s\" is prefixed", raw.d->functions[i].name);
		check_unnamed(&raw, uid ? 0 : KADDR_UNNAMED,
			      uid ? "[unknown]" : "0xffffffff80000010", uid ? "uid" : "root");
		dump_on_failure(&raw, before);
		raw_free(&raw);
		out_free(&o);
	}
	test_ring_done(r);
}

/* Folded stacks: kernel frames end in "_[k]", an unnamed one is its
 * address with the suffix, or "[unknown]_[k]" for a user (who does not
 * see app, of another uid). */
static void test_folded(void)
{
	static const char want[] =
		"%s"
		"frtest-db;frtest_root;frtest_middle;frtest_leaf;frk_entry_syscall_[k];"
		"frk_do_sys_read_[k];%s_[k] 1\n"
		"frtest-db;frtest_root;frtest_middle;frtest_leaf;frk_entry_syscall_[k];"
		"frk_do_sys_read_[k];frk_schedule_[k] 3\n";
	struct fr_ring *r = test_kernel_ring("kernel-folded");
	struct fr_profile_request q;
	struct fr_profile_result res;
	struct out o;
	char text[512];

	if (!r)
		return;
	req_init(&q, T0, T0 + 60 * SEC, 99);
	q.format = FR_PROFILE_FOLDED;
	for (int uid = 0; uid < 2; uid++) {
		snprintf(text, sizeof(text), want,
			 uid ? "" : "frtest-app;frtest_root;frtest_middle;frtest_leaf 3\n",
			 uid ? "[unknown]" : "0xffffffff80000010");
		q.targets.has_uid = uid;
		q.targets.uid = 0;
		if (run(r, &q, &res, &o, uid ? "kernel-uid-folded" : "kernel-folded") == 0)
			CHECK(o.len == strlen(text) && memcmp(o.buf, text, o.len) == 0,
			      "folded output is\n%.*s\nwant\n%s", (int)o.len, (char *)o.buf, text);
		out_free(&o);
	}
	test_ring_done(r);
}

/* Regression own_bpf: the recorder's own eBPF task work (the off-CPU
 * program copying a thread's user stack on its way back to user space)
 * showed in cpu profiles as bpf_prog_TAG_tw_user_stack under
 * task_work_run, charged to the program without a word. The recorder's
 * programs' functions are named for what they do; another kernel
 * symbol, or a program of another name, is not. */
static void test_own_bpf(void)
{
	char buf[128];

	CHECK(fr_profile_own_bpf("bpf_prog_5dbe06d134a9ddca_tw_user_stack", buf, sizeof(buf)) &&
		      strcmp(buf, "[flightrec: copying its user stack after a wait (offcpu)]") == 0,
	      "tw_user_stack: %s", buf);
	CHECK(fr_profile_own_bpf("bpf_prog_f7766e75e7306ce2_on_sample", buf, sizeof(buf)) &&
		      strcmp(buf, "[flightrec: reading labels]") == 0,
	      "on_sample: %s", buf);
	CHECK(fr_profile_own_bpf("bpf_prog_2f12cf8a8fa5131a_emit_long", buf, sizeof(buf)) &&
		      strcmp(buf, "[flightrec: recording an off-CPU wait]") == 0,
	      "emit_long: %s", buf);
	CHECK(!fr_profile_own_bpf("bpf_prog_2f12cf8a8fa5131a_sd_devices", buf, sizeof(buf)),
	      "another program is the recorder's");
	CHECK(!fr_profile_own_bpf("bpf_prog_2f12cf8a8fa5131_emit_long", buf, sizeof(buf)),
	      "a tag of 15 digits");
	CHECK(!fr_profile_own_bpf("tw_user_stack", buf, sizeof(buf)), "a bare name");
	CHECK(!fr_profile_own_bpf("task_work_run", buf, sizeof(buf)), "a kernel function");
}

int main(void)
{
	if (fixture_init("profile-kernel") != 0)
		return 1;
	test_own_bpf();
	test_pprof();
	test_folded();
	return fixture_fini();
}
