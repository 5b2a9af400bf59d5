/* Compatibility with the reference reader: a profile read by `go tool
 * pprof` must show what the project's own decoder (core/pprof_read, as the
 * fixture uses it) shows: the same samples in the same order with the same
 * values, stacks and labels, the same period, sample types, comments and
 * mappings, and the totals -top reports per sample type.
 *
 * The other profile tests rely on that decoder; this one keeps it honest.
 * It needs Go: without FR_GO (set by meson when `go` is found) it skips. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/query/profile.h"
#include "core/store/sample.h"

/* Before the fixture: its parameter named tmpdir would shadow the global. */
#include "tests/unit/gopprof.h"

#include "tests/unit/fixture.h"

static const char *go;

#define MAX_LOCS 1024
#define MAX_SAMPLES 2048

struct gsample {
	int64_t v[MAX_VALUES];
	int nv;
	int nlocs;
	uint32_t loc[FR_MAX_FRAMES];
	char labels[512];
};

struct goraw {
	char *text;
	char types[256]; /* the sample types line, "samples/count cpu/nanoseconds[dflt]" */
	int64_t period;
	int nsamples;
	struct gsample *s;
	char *loc_name[MAX_LOCS]; /* by location id */
};

static char *next_line(char **p)
{
	char *line = *p, *nl;

	if (!line || !*line)
		return NULL;
	nl = strchr(line, '\n');
	if (nl) {
		*nl = '\0';
		*p = nl + 1;
	} else {
		*p = line + strlen(line);
	}
	return line;
}

/* "     3: 0x4011d6 M=1 frtest_leaf /path/to/file:0 s=0" -> "frtest_leaf". */
static char *location_name(char *rest)
{
	char *s, *colon, *sp;

	if (strncmp(rest, "M=", 2) == 0) {
		rest = strchr(rest, ' ');
		if (!rest)
			return NULL;
		rest++;
	}
	s = strstr(rest, " s=");
	if (!s)
		return NULL;
	*s = '\0';
	colon = strrchr(rest, ':');
	if (!colon)
		return NULL;
	*colon = '\0';
	sp = strrchr(rest, ' ');
	if (sp)
		*sp = '\0';
	return rest;
}

/* The values of a sample line "   1   10101010: 1 2 3" into v (at most
 * `max`); returns their count and the rest after the colon in *rest, or
 * -1 when the line is not a sample line (a label line). */
static int sample_values(char *line, int64_t *v, int max, char **rest)
{
	char *q = line, *end;
	int n = 0;

	for (;;) {
		long long x;

		while (*q == ' ')
			q++;
		if (*q == ':' && n) {
			*rest = q + 1;
			return n;
		}
		x = strtoll(q, &end, 10);
		if (end == q || n == max)
			return -1;
		v[n++] = x;
		q = end;
	}
}

/* Parses the samples and the location names out of `go tool pprof -raw`. */
static int go_parse(struct goraw *r, const char *file)
{
	char *copy, *p, *line;
	enum { HEAD, SAMPLES, LOCATIONS, REST } state = HEAD;

	memset(r, 0, sizeof(*r));
	r->text = fr_test_go_pprof(go, "-symbolize=none -raw", file, tmpdir);
	if (!r->text)
		return -1;
	r->s = calloc(MAX_SAMPLES, sizeof(*r->s));
	copy = strdup(r->text);
	if (!r->s || !copy) {
		free(copy);
		return -1;
	}
	p = copy;
	while ((line = next_line(&p))) {
		long long a;
		unsigned id;
		int at = 0;

		if (strncmp(line, "Period: ", 8) == 0)
			r->period = strtoll(line + 8, NULL, 10);
		if (strncmp(line, "Samples:", 8) == 0) {
			char *types = next_line(&p);

			state = SAMPLES;
			snprintf(r->types, sizeof(r->types), "%s", types ? types : "");
			continue;
		}
		if (strncmp(line, "Locations", 9) == 0) {
			state = LOCATIONS;
			continue;
		}
		if (strncmp(line, "Mappings", 8) == 0) {
			state = REST;
			continue;
		}
		if (state == SAMPLES) {
			int64_t v[MAX_VALUES];
			char *q, *end;
			int nv = sample_values(line, v, MAX_VALUES, &q);

			if (nv > 0) {
				struct gsample *s;

				if (r->nsamples == MAX_SAMPLES)
					continue;
				s = &r->s[r->nsamples++];
				memcpy(s->v, v, (size_t)nv * sizeof(*v));
				s->nv = nv;
				for (;;) {
					unsigned long loc = strtoul(q, &end, 10);
					if (end == q || s->nlocs == FR_MAX_FRAMES)
						break;
					s->loc[s->nlocs++] = (uint32_t)loc;
					q = end;
				}
			} else if (r->nsamples) {
				struct gsample *s = &r->s[r->nsamples - 1];
				size_t n = strlen(s->labels);

				while (*line == ' ')
					line++;
				snprintf(s->labels + n, sizeof(s->labels) - n, "%s ", line);
			}
		} else if (state == LOCATIONS) {
			if (sscanf(line, " %u: 0x%llx %n", &id, &a, &at) == 2 && at &&
			    id < MAX_LOCS)
				r->loc_name[id] = location_name(line + at);
		}
	}
	/* The names point into `copy`: keep it with the struct. */
	r->loc_name[0] = copy;
	return 0;
}

static void go_free(struct goraw *r)
{
	free(r->text);
	free(r->s);
	free(r->loc_name[0]);
	memset(r, 0, sizeof(*r));
}

/* A sample's labels as sorted "key:[value]" words: go prints string and
 * numeric labels on separate lines, the fixture in one. Go also drops a
 * numeric label whose value is 0 (as if it were unset), so those are left
 * out of both. */
static void label_words(const char *labels, char *out, size_t len)
{
	char copy[512], *words[64], *save = NULL, *w;
	size_t n = 0, at = 0;

	snprintf(copy, sizeof(copy), "%s", labels);
	for (w = strtok_r(copy, " ", &save); w && n < 64; w = strtok_r(NULL, " ", &save))
		if (!strstr(w, ":[0]"))
			words[n++] = w;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(words[j - 1], words[j]) > 0; j--) {
			w = words[j];
			words[j] = words[j - 1];
			words[j - 1] = w;
		}
	out[0] = '\0';
	for (size_t i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(out + at, len - at, "%s ", words[i]);
}

static void compare_samples(const struct raw *ours, const struct goraw *theirs, const char *name)
{
	CHECK(ours->nsamples == theirs->nsamples, "%s: %d samples, go shows %d", name,
	      ours->nsamples, theirs->nsamples);
	for (int i = 0; i < ours->nsamples && i < theirs->nsamples; i++) {
		const struct rsample *a = &ours->s[i];
		const struct gsample *b = &theirs->s[i];
		char la[512], lb[512];
		int same = a->nv == b->nv && a->nlocs == b->nlocs;

		for (int k = 0; same && k < a->nv; k++)
			same = a->v[k] == b->v[k];
		for (int k = 0; same && k < a->nlocs; k++) {
			const char *na = ours->loc_name[a->loc[k]];
			const char *nb = b->loc[k] < MAX_LOCS ? theirs->loc_name[b->loc[k]] : NULL;

			/* An address with no function has no name on
			 * either side: both must agree it has none. */
			same = na && nb ? strcmp(na, nb) == 0 : !na && !nb;
		}
		CHECK(same,
		      "%s: sample %d differs in values or stack (%d values, %d frames; go "
		      "%d, %d)",
		      name, i, a->nv, a->nlocs, b->nv, b->nlocs);
		label_words(a->labels, la, sizeof(la));
		label_words(b->labels, lb, sizeof(lb));
		CHECK(strcmp(la, lb) == 0, "%s: sample %d labels \"%s\", go \"%s\"", name, i, la,
		      lb);
	}
}

/* Every "Comment: " and mapping line of go's text is in ours (a mapping up
 * to go's flags, "[FN]" and the like). */
static void compare_lines(const struct raw *ours, const struct goraw *theirs, const char *name)
{
	char *copy = strdup(theirs->text), *p = copy, *line;
	int in_maps = 0;

	while (copy && (line = next_line(&p))) {
		char *flags = strstr(line, " [");

		if (strncmp(line, "Mappings", 8) == 0) {
			in_maps = 1;
			continue;
		}
		if (in_maps && flags && flags[2] != 'k') /* not "[kernel.kallsyms]" */
			*flags = '\0';
		if (in_maps && flags && flags[2] == 'k' && (flags = strstr(flags + 1, " [")))
			*flags = '\0';
		if (strncmp(line, "Comment: ", 9) == 0 || in_maps)
			CHECK(strstr(ours->text, line), "%s: go shows \"%s\", the decoder does not",
			      name, line);
	}
	free(copy);
}

/* The total go's -top reports for a sample type of unit count. */
static void compare_top(const struct raw *ours, const char *type, const char *file,
			const char *name)
{
	char args[128], want[64], *top;
	int k = raw_type_index(ours, type);

	snprintf(args, sizeof(args), "-symbolize=none -sample_index=%s -top", type);
	top = fr_test_go_pprof(go, args, file, tmpdir);
	snprintf(want, sizeof(want), "of %" PRId64 " total", k >= 0 ? raw_column(ours, k) : -1);
	CHECK(top && strstr(top, want), "%s: -sample_index=%s: want \"%s\" in %s", name, type, want,
	      top ? top : "(failed)");
	free(top);
}

/* Go's reading of the profile FILE against the decoder's. */
static void compare_file(const char *file, const char *name, const char *count_type)
{
	struct raw ours;
	struct goraw theirs;

	if (raw_parse(&ours, file) != 0) {
		CHECK(0, "%s: the decoder cannot read the profile", name);
		return;
	}
	if (go_parse(&theirs, file) != 0) {
		CHECK(0, "%s: go tool pprof cannot read the profile", name);
		raw_free(&ours);
		return;
	}
	CHECK(ours.nsamples > 0, "%s: an empty profile compares nothing", name);
	CHECK(strcmp(ours.types, theirs.types) == 0, "%s: sample types \"%s\", go \"%s\"", name,
	      ours.types, theirs.types);
	CHECK(ours.period == theirs.period, "%s: period %" PRId64 ", go %" PRId64, name,
	      ours.period, theirs.period);
	compare_samples(&ours, &theirs, name);
	compare_lines(&ours, &theirs, name);
	compare_top(&ours, "samples", file, name);
	if (count_type)
		compare_top(&ours, count_type, file, name);
	raw_free(&ours);
	go_free(&theirs);
}

static void compare(struct fr_ring *r, const struct fr_profile_request *q, const char *name,
		    const char *count_type)
{
	struct fr_profile_result res;
	struct out o;

	if (run(r, q, &res, &o, name) == 0)
		compare_file(o.path, name, count_type);
	out_free(&o);
}

/* Kernel and user stacks of three processes in cgroups, threads, two
 * events, and a second at 999 Hz to downsample. */
static void test_same_as_go(void)
{
	static const uint32_t cpu_pf[] = {FR_EVENT_CPU, FR_EVENT_PAGE_FAULTS};
	struct fr_ring *r = test_ring_create("compat");
	struct fr_profile_request q;
	struct writer w;
	int64_t t = T0 + SEC;

	if (!r)
		return;
	w_init(&w, r);
	for (int i = 0; i < 40; i++) {
		w_add(&w, t += 1000, PID_APP, TID(PID_APP, i % 3), (uint32_t)i % 4, 99,
		      i % 5 ? ST_USER : ST_OTHER);
		w_add(&w, t += 1000, PID_DB, PID_DB, 1, 99, ST_KERNEL);
		if (i % 4 == 0)
			w_add_ev(&w, t += 1000, PID_WEB, PID_WEB, 0, FR_EVENT_PAGE_FAULTS, 99,
				 (uint64_t)i + 1, ST_OTHER);
		if (i == 20)
			w_seal(&w);
	}
	for (int i = 0; i < 999; i++)
		w_add(&w, T0 + 10 * SEC + i * (SEC / 999), PID_SUB, PID_SUB, 0, 999,
		      i % 4 ? ST_USER : ST_OTHER);
	w_fini(&w);

	req_init(&q, T0, T0 + 20 * SEC, 0);
	req_events(&q, 2, cpu_pf);
	q.note = "incomplete: frtest note";
	compare(r, &q, "compat-events", "page-faults");
	req_init(&q, T0, T0 + 20 * SEC, 99);
	q.cpu_label = 1;
	compare(r, &q, "compat-down", NULL);
	req_init(&q, T0, T0 + 20 * SEC, 0);
	q.targets.has_uid = 1;
	q.targets.uid = 0;
	compare(r, &q, "compat-uid", NULL);
	test_ring_done(r);
}

/* ---- the encoder's own profiles (tests/unit/gopprof.h) ---- */

static int sink_fd(void *arg, const void *buf, size_t len)
{
	return write(*(int *)arg, buf, len) == (ssize_t)len ? 0 : -EIO;
}

/* Writes TMPDIR/NAME.pb.gz with BUILD; returns what BUILD returned (>= 0),
 * or -1 (a failed CHECK). */
static int64_t write_profile(char *path, size_t len, const char *name,
			     int64_t (*build)(struct fr_pprof *p))
{
	struct fr_pprof *p;
	int64_t built = -1, ret = -1;
	int fd;

	snprintf(path, len, "%s/%s.pb.gz", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
	if (fd < 0)
		return -1;
	p = fr_pprof_new(6, sink_fd, &fd);
	CHECK(p, "fr_pprof_new");
	if (p)
		built = build(p);
	if (built >= 0 && fr_pprof_finish(p) == 0)
		ret = built;
	CHECK(ret >= 0, "%s: writing the profile failed", name);
	fr_pprof_free(p);
	close(fd);
	return ret;
}

static int64_t build_small(struct fr_pprof *p)
{
	struct fr_test_small_ids id;

	fr_test_pprof_small(p, &id);
	return 0;
}

static void expect_in(const char *out, const char *what, const char *want)
{
	CHECK(out && strstr(out, want), "%s output lacks \"%s\"", what, want);
}

/* Checks the flat and cum columns of `name`'s row in `pprof -top`. */
static void expect_top(const char *out, const char *name, long flat, long cum)
{
	char pat[128];
	const char *line;
	long f = -1, c = -1;

	snprintf(pat, sizeof(pat), "  %s\n", name);
	line = out ? strstr(out, pat) : NULL;
	CHECK(line, "-top output has no row for %s", name);
	if (!line)
		return;
	while (line > out && line[-1] != '\n')
		line--;
	CHECK(sscanf(line, "%ld %*s %*s %ld", &f, &c) == 2 && f == flat && c == cum,
	      "-top row of %s: flat %ld cum %ld, want %ld %ld", name, f, c, flat, cum);
}

/* What go's -raw shows of the small profile, word for word. */
static void small_raw(const char *path)
{
	char *out = fr_test_go_pprof(go, "-raw -symbolize=none", path, tmpdir);

	CHECK(out, "go tool pprof -raw failed");
	if (!out)
		return;
	expect_in(out, "-raw", "Comment: recorded by flightrec-test");
	expect_in(out, "-raw", "Comment: second comment line");
	expect_in(out, "-raw", "PeriodType: cpu nanoseconds");
	expect_in(out, "-raw", "Period: 10000000\n");
	expect_in(out, "-raw", "Duration: 2.5s");
	expect_in(out, "-raw", "samples/count cpu/nanoseconds[dflt]");
	/* pprof renumbers locations, so stacks are checked by -top. */
	expect_in(out, "-raw", "          3   30000000: ");
	expect_in(out, "-raw", "          5   50000000: ");
	expect_in(out, "-raw", "          1   10000000: ");
	expect_in(out, "-raw", "thread:[worker-1]");
	expect_in(out, "-raw", "bytes:[4096]");
	expect_in(out, "-raw", "cpu:[3]");
	expect_in(out, "-raw", "0x401000 M=1 frtest_main app.c:0");
	expect_in(out, "-raw", "0x7f0000001234 M=2 frtest_memcpy :0 s=0(__memcpy_avx2)");
	expect_in(out, "-raw", "0xdeadbeef ");
	expect_in(out, "-raw",
		  "1: 0x400000/0x500000/0x0 /usr/bin/frtestapp "
		  "0123456789abcdef0123456789abcdef01234567 [FN]");
	expect_in(out, "-raw", "2: 0x7f0000000000/0x7f0000200000/0x28000 /usr/lib/libc.so.6");
	if (failures)
		fprintf(stderr, "pprof -raw output:\n%s", out);
	free(out);
}

/* The stacks of the small profile, through go's -top. */
static void small_top(const char *path)
{
	char *out =
		fr_test_go_pprof(go, "-top -symbolize=none -sample_index=samples", path, tmpdir);

	CHECK(out, "go tool pprof -top failed");
	if (!out)
		return;
	expect_in(out, "-top", "Showing nodes accounting for 9, 100% of 9 total");
	expect_top(out, "frtest_work", 5, 8);
	expect_top(out, "frtest_main", 0, 8);
	expect_top(out, "frtest_memcpy", 3, 3);
	expect_top(out, "<unknown>", 1, 1);
	if (failures)
		fprintf(stderr, "pprof -top output:\n%s", out);
	free(out);
}

/* The encoder's small profile (every field it writes) as go reads it. */
static void test_encoder_small(void)
{
	char path[512];

	if (write_profile(path, sizeof(path), "small", build_small) < 0)
		return;
	small_raw(path);
	small_top(path);
	compare_file(path, "encoder-small", NULL);
}

/* The encoder's large profile (streamed, interned at scale): go reads it
 * all and counts every sample. */
static void test_encoder_big(void)
{
	char path[512], want[128], *out;
	int64_t sum = write_profile(path, sizeof(path), "big", fr_test_pprof_big);

	if (sum < 0)
		return;
	out = fr_test_go_pprof(go, "-top -symbolize=none -sample_index=samples -nodecount=3", path,
			       tmpdir);
	CHECK(out, "go tool pprof -top on the large profile failed");
	snprintf(want, sizeof(want), "of %" PRId64 " total", sum);
	expect_in(out, "-top (large)", want);
	expect_in(out, "-top (large)", "ns::Class::method_");
	free(out);
}

static void setup_go_env(void)
{
	char path[300];

	setenv("HOME", tmpdir, 1);
	snprintf(path, sizeof(path), "%s/gocache", tmpdir);
	setenv("GOCACHE", path, 1);
	setenv("PPROF_TMPDIR", tmpdir, 1);
	unsetenv("PPROF_BINARY_PATH");
}

int main(void)
{
	go = getenv("FR_GO");
	if (!go || !*go) {
		fprintf(stderr, "SKIP: FR_GO is not set; go tool pprof is the reference reader\n");
		return 77;
	}
	if (access(go, X_OK) != 0) {
		fprintf(stderr, "SKIP: FR_GO=%s is not executable\n", go);
		return 77;
	}
	if (fixture_init("profile-compat") != 0)
		return 1;
	setup_go_env();
	test_same_as_go();
	test_encoder_small();
	test_encoder_big();
	return fixture_fini();
}
