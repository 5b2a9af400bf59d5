/* flightrec goroutines' renderer: the goroutine profile the recorder
 * writes (recorder/requests/goroutines.h: one sample per goroutine, its
 * fields as labels, its stack as locations) read back and shown as text
 * grouped like Go's own goroutine profile at debug=1, or as JSON.
 *
 * Everything shown comes from the target program: function and file
 * names from its binary, wait reasons from its runtime, pprof labels
 * from its code. A program may be hostile to whoever looks at it, so the
 * text escapes every control byte and invalid UTF-8 (nothing it holds
 * drives the terminal) and the JSON is made valid UTF-8. The profile
 * itself is checked by core/pprof's reader; a label of the contract with
 * the wrong type is ignored, never trusted.
 */
#include "tools/goroutines.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/pprof/pprof_read.h"
#include "core/util/compress.h"
#include "core/util/fs.h"
#include "core/util/parse.h"
#include "ipc/msg_goroutines.h"
#include "ipc/proto.h"
#include "tools/cli.h"

static const char *prog = FR_CLI_PROG;

/* Goroutine ids (and threads) a group's text lists; the rest are
 * counted: --json has them all. */
#define IDS_SHOWN 32

/* One goroutine, read back from its sample. The strings point into the
 * profile and are "" when the sample has no such label. */
struct rgo {
	const struct fr_pprof_rsample *s;
	int64_t goid, creator, waiting_ns, thread, pid;
	int has_creator, has_waiting, has_thread;
	const char *state, *wait, *start, *created_by, *created_at, *waited, *note;
	size_t lab, nlab; /* its own pprof labels: view.labs[lab...], sorted */
};

/* Goroutines shown together: g[first...first + n). */
struct group {
	size_t first, n;
};

struct view {
	struct fr_pprof_data *pd;
	struct rgo *g;
	size_t n;
	const struct fr_pprof_rlabel **labs;
	struct group *groups;
	size_t ngroups;
	int64_t pid; /* 0: unknown */
	int several; /* goroutines of more than one process (a dump's) */
	const char *go;
	uint64_t system, changed;
};

/* The string labels of the contract and where they go. */
static const struct {
	const char *key;
	size_t off;
} str_labels[] = {
	{"state", offsetof(struct rgo, state)},
	{"wait", offsetof(struct rgo, wait)},
	{"start", offsetof(struct rgo, start)},
	{"created_by", offsetof(struct rgo, created_by)},
	{"created_at", offsetof(struct rgo, created_at)},
	{"waited", offsetof(struct rgo, waited)},
	{"stack", offsetof(struct rgo, note)},
};

static const char *const num_labels[] = {"goid", "creator_goid", "waiting_ns", "thread", "pid"};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int own_key(const char *key)
{
	for (size_t i = 0; i < NELEM(str_labels); i++)
		if (strcmp(key, str_labels[i].key) == 0)
			return 1;
	for (size_t i = 0; i < NELEM(num_labels); i++)
		if (strcmp(key, num_labels[i]) == 0)
			return 1;
	return 0;
}

/* The key a pprof label has in the program: the recorder names one that
 * clashes with a label of its own "go:KEY". */
static const char *go_key(const char *key)
{
	return strncmp(key, "go:", 3) == 0 && own_key(key + 3) ? key + 3 : key;
}

/* Takes label `l` into `g` when it is one of the contract's (ignored
 * when of the wrong type). Returns 0 when it is the program's own. */
static int take_label(struct rgo *g, const struct fr_pprof_rlabel *l)
{
	for (size_t i = 0; i < NELEM(str_labels); i++)
		if (strcmp(l->key, str_labels[i].key) == 0) {
			if (l->str)
				*(const char **)((char *)g + str_labels[i].off) = l->str;
			return 1;
		}
	if (!own_key(l->key))
		return 0;
	if (l->str)
		return 1;
	if (strcmp(l->key, "goid") == 0) {
		g->goid = l->num;
	} else if (strcmp(l->key, "creator_goid") == 0) {
		g->creator = l->num;
		g->has_creator = 1;
	} else if (strcmp(l->key, "waiting_ns") == 0) {
		g->waiting_ns = l->num;
		g->has_waiting = 1;
	} else if (strcmp(l->key, "pid") == 0) {
		g->pid = l->num;
	} else {
		g->thread = l->num;
		g->has_thread = 1;
	}
	return 1;
}

static int cmp_label(const struct fr_pprof_rlabel *a, const struct fr_pprof_rlabel *b)
{
	int c = strcmp(go_key(a->key), go_key(b->key));

	if (c)
		return c;
	if (!a->str != !b->str)
		return a->str ? 1 : -1;
	if (a->str)
		return strcmp(a->str, b->str);
	return a->num < b->num ? -1 : a->num > b->num;
}

static int by_label(const void *pa, const void *pb)
{
	return cmp_label(*(const struct fr_pprof_rlabel *const *)pa,
			 *(const struct fr_pprof_rlabel *const *)pb);
}

/* The profile's comments: "pid=P", "go=VERSION", "system=N". */
static void read_comments(struct view *v)
{
	for (size_t i = 0; i < v->pd->ncomments; i++) {
		const char *c = v->pd->comments[i];
		uint64_t x;

		if (strncmp(c, "pid=", 4) == 0 && fr_parse_u64(c + 4, 1, INT32_MAX, &x) == 0)
			v->pid = (int64_t)x;
		else if (strncmp(c, "go=", 3) == 0)
			v->go = c + 3;
		else if (strncmp(c, "system=", 7) == 0 &&
			 fr_parse_u64(c + 7, 0, UINT64_MAX, &x) == 0)
			v->system = x;
	}
}

/* Each sample as a goroutine, with its program labels sorted. Returns 0
 * or -ENOMEM. */
static int read_goroutines(struct view *v)
{
	const struct fr_pprof_data *pd = v->pd;
	size_t nl = 0;

	v->n = pd->nsamples;
	if (v->n && !(v->g = calloc(v->n, sizeof(*v->g))))
		return -ENOMEM;
	if (pd->nlabels && !(v->labs = calloc(pd->nlabels, sizeof(*v->labs))))
		return -ENOMEM;
	for (size_t i = 0; i < v->n; i++) {
		struct rgo *g = &v->g[i];

		g->s = &pd->samples[i];
		g->state = g->wait = g->start = g->created_by = g->created_at = g->waited =
			g->note = "";
		g->lab = nl;
		for (size_t k = 0; k < g->s->nlabel; k++) {
			const struct fr_pprof_rlabel *l = &pd->labels[g->s->label + k];

			if (!take_label(g, l))
				v->labs[nl++] = l;
		}
		g->nlab = nl - g->lab;
		if (g->nlab > 1)
			qsort(v->labs + g->lab, g->nlab, sizeof(*v->labs), by_label);
		v->changed += strcmp(g->note, "changed") == 0;
		v->several |= i && g->pid != v->g[0].pid;
	}
	return 0;
}

/* Reads the profile in `fd` into *pd. Returns 0, or -1 with *why. */
static int decode(int fd, struct fr_pprof_data **pd, const char **why)
{
	char *gz = NULL;
	void *raw = NULL;
	size_t gzlen = 0, rawlen;
	int ret;

	*why = NULL;
	*pd = NULL;
	if ((ret = fr_read_whole(fd, SIZE_MAX, &gz, &gzlen)) < 0)
		*why = strerror(-ret);
	else if (!gzlen)
		*why = "the file is empty";
	else if ((ret = fr_gunzip(gz, gzlen, &raw, &rawlen)) < 0)
		*why = ret == -ENOMEM ? "out of memory" : "not gzip data, or corrupt or truncated";
	else if ((ret = fr_pprof_read(raw, rawlen, pd)) < 0)
		*why = ret == -ENOMEM ? "out of memory"
				      : "not pprof: malformed or truncated protobuf";
	else if (!(*pd)->ntypes || strcmp((*pd)->types[0].type, "goroutines") != 0)
		*why = "a pprof profile, but not of goroutines";
	free(raw);
	free(gz);
	if (*why) {
		fr_pprof_data_free(*pd);
		*pd = NULL;
		return -1;
	}
	return 0;
}

static void view_free(struct view *v)
{
	free(v->groups);
	free(v->labs);
	free(v->g);
	fr_pprof_data_free(v->pd);
}

/* The profile in `fd` as a view, the reply's counts where the profile
 * lacks them. Returns 0, or 1 after saying why not. */
static int view_load(struct view *v, int fd, const char *what,
		     const struct fr_ipc_goroutines_reply *r)
{
	const char *why;

	memset(v, 0, sizeof(*v));
	v->go = "";
	if (decode(fd, &v->pd, &why) < 0) {
		fprintf(stderr, "%s goroutines: %s is not a goroutine profile%s (%s)\n", prog, what,
			r ? "" : " written by -o", why);
		return 1;
	}
	read_comments(v);
	if (read_goroutines(v) < 0) {
		fprintf(stderr, "%s goroutines: out of memory\n", prog);
		return 1;
	}
	if (r && !v->go[0])
		v->go = r->go;
	if (r && r->system > v->system)
		v->system = r->system;
	if (r && r->changed > v->changed)
		v->changed = r->changed;
	return 0;
}

/* Prints `s` for a terminal: control bytes, C1 controls and invalid
 * UTF-8 as \xNN; `quoted`, between double quotes with " and \ escaped. */
static void put_safe(const char *s, int quoted)
{
	const unsigned char *p = (const unsigned char *)s;

	if (quoted)
		putchar('"');
	while (*p) {
		size_t n = fr_utf8_len(p, SIZE_MAX);

		if (!n || *p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] < 0xa0)) {
			printf("\\x%02x", *p++);
			continue;
		}
		if (quoted && (*p == '"' || *p == '\\'))
			putchar('\\');
		fwrite(p, 1, n, stdout);
		p += n;
	}
	if (quoted)
		putchar('"');
}

static int cmp_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

/* Two locations by what they show: address, then each line's function,
 * file and line number. */
static int cmp_loc(const struct fr_pprof_data *pd, uint64_t ia, uint64_t ib)
{
	const struct fr_pprof_rlocation *a = &pd->locations[ia], *b = &pd->locations[ib];
	int c;

	if (ia == ib)
		return 0;
	if (a->address != b->address)
		return a->address < b->address ? -1 : 1;
	if (a->nline != b->nline)
		return a->nline < b->nline ? -1 : 1;
	for (size_t k = 0; k < a->nline; k++) {
		const struct fr_pprof_rfunction *fa = &pd->functions[pd->line_funcs[a->line + k]];
		const struct fr_pprof_rfunction *fb = &pd->functions[pd->line_funcs[b->line + k]];

		if ((c = strcmp(fa->name, fb->name)) || (c = strcmp(fa->filename, fb->filename)) ||
		    (c = cmp_i64(pd->line_nums[a->line + k], pd->line_nums[b->line + k])))
			return c;
	}
	return 0;
}

static int cmp_stack(const struct fr_pprof_data *pd, const struct fr_pprof_rsample *a,
		     const struct fr_pprof_rsample *b)
{
	int c;

	if (a->nloc != b->nloc)
		return a->nloc < b->nloc ? -1 : 1;
	for (size_t j = 0; j < a->nloc; j++)
		if ((c = cmp_loc(pd, pd->sample_locs[a->loc + j], pd->sample_locs[b->loc + j])))
			return c;
	return 0;
}

static int cmp_labels(const struct view *v, const struct rgo *a, const struct rgo *b)
{
	int c;

	if (a->nlab != b->nlab)
		return a->nlab < b->nlab ? -1 : 1;
	for (size_t i = 0; i < a->nlab; i++)
		if ((c = cmp_label(v->labs[a->lab + i], v->labs[b->lab + i])))
			return c;
	return 0;
}

/* Goroutines shown together have the same state and wait, stack (or
 * reason for none), labels, and `go` statement. */
static int cmp_group(const struct view *v, const struct rgo *a, const struct rgo *b)
{
	int c;

	if ((c = cmp_i64(a->pid, b->pid)) || (c = strcmp(a->state, b->state)) ||
	    (c = strcmp(a->wait, b->wait)) || (c = strcmp(a->note, b->note)) ||
	    (c = strcmp(a->start, b->start)) || (c = strcmp(a->created_by, b->created_by)) ||
	    (c = strcmp(a->created_at, b->created_at)) || (c = cmp_stack(v->pd, a->s, b->s)))
		return c;
	return cmp_labels(v, a, b);
}

static int by_group(const void *pa, const void *pb, void *arg)
{
	const struct rgo *a = pa, *b = pb;
	int c = cmp_group(arg, a, b);

	return c ? c : cmp_i64(a->goid, b->goid);
}

static int by_goid(const void *pa, const void *pb)
{
	return cmp_i64(((const struct rgo *)pa)->goid, ((const struct rgo *)pb)->goid);
}

/* Largest group first, then by lowest goroutine id. */
static int by_size(const void *pa, const void *pb, void *arg)
{
	const struct group *a = pa, *b = pb;
	const struct view *v = arg;

	if (a->n != b->n)
		return a->n > b->n ? -1 : 1;
	return cmp_i64(v->g[a->first].goid, v->g[b->first].goid);
}

/* Sorts the goroutines into groups, largest first. Returns 0 or -ENOMEM. */
static int make_groups(struct view *v)
{
	if (!v->n)
		return 0;
	qsort_r(v->g, v->n, sizeof(*v->g), by_group, v);
	if (!(v->groups = calloc(v->n, sizeof(*v->groups))))
		return -ENOMEM;
	for (size_t i = 0; i < v->n; i++) {
		if (i && cmp_group(v, &v->g[i - 1], &v->g[i]) == 0) {
			v->groups[v->ngroups - 1].n++;
			continue;
		}
		v->groups[v->ngroups++] = (struct group){.first = i, .n = 1};
	}
	qsort_r(v->groups, v->ngroups, sizeof(*v->groups), by_size, v);
	return 0;
}

/* "[chan receive, waiting 12s or more]": the group's shortest wait, "or
 * more" when some waited longer or a time is a lower bound. */
static void print_state(const struct rgo *g, size_t n)
{
	int64_t least = INT64_MAX, most = 0;
	int bound = 0;
	char dur[32];

	putchar('[');
	if (g->wait[0] && (!g->state[0] || strcmp(g->state, "waiting") == 0)) {
		put_safe(g->wait, 0);
	} else {
		put_safe(g->state[0] ? g->state : "unknown state", 0);
		if (g->wait[0]) {
			printf(" in ");
			put_safe(g->wait, 0);
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!g[i].has_waiting || g[i].waiting_ns <= 0)
			continue;
		least = g[i].waiting_ns < least ? g[i].waiting_ns : least;
		most = g[i].waiting_ns > most ? g[i].waiting_ns : most;
		bound |= strcmp(g[i].waited, "at least") == 0;
	}
	if (most)
		printf(", waiting %s%s", fr_format_duration(least, dur, sizeof(dur)),
		       bound || most > least ? " or more" : "");
	putchar(']');
}

/* " 4250 4251 and 3 more": the goroutine ids (or threads) of a group. */
static void print_ids(const struct rgo *g, size_t n, int threads)
{
	size_t shown = 0, skipped = 0;

	for (size_t i = 0; i < n; i++) {
		if (threads && !g[i].has_thread)
			continue;
		if (shown++ < IDS_SHOWN)
			printf(" %" PRId64, threads ? g[i].thread : g[i].goid);
		else
			skipped++;
	}
	if (skipped)
		printf(" and %zu more", skipped);
}

static size_t count_threads(const struct rgo *g, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += g[i].has_thread;
	return k;
}

/* The stack's frames: "#\tADDRESS\tFUNCTION\tFILE:LINE", a line per
 * inlined function (innermost first, as Go prints them). */
static void print_frames(const struct fr_pprof_data *pd, const struct rgo *g)
{
	for (size_t j = 0; j < g->s->nloc; j++) {
		const struct fr_pprof_rlocation *loc =
			&pd->locations[pd->sample_locs[g->s->loc + j]];

		if (!loc->nline) {
			printf("#\t0x%" PRIx64 "\t?", loc->address);
			if (loc->mapping >= 0 && pd->mappings[loc->mapping].filename[0]) {
				printf("\t");
				put_safe(pd->mappings[loc->mapping].filename, 0);
			}
			putchar('\n');
		}
		for (size_t k = 0; k < loc->nline; k++) {
			const struct fr_pprof_rfunction *f =
				&pd->functions[pd->line_funcs[loc->line + k]];
			int64_t line = pd->line_nums[loc->line + k];

			printf("#\t");
			if (loc->address)
				printf("0x%" PRIx64, loc->address);
			putchar('\t');
			put_safe(f->name, 0);
			if (f->filename[0]) {
				putchar('\t');
				put_safe(f->filename, 0);
				if (line > 0)
					printf(":%" PRId64, line);
			}
			putchar('\n');
		}
	}
}

/* Why a group has no stack, or where it runs. */
static void print_note(const struct rgo *g, size_t n)
{
	size_t nthreads = count_threads(g, n);

	if (strcmp(g->note, "running") == 0) {
		printf("# (running on %s",
		       nthreads ? (nthreads > 1 ? "threads" : "thread") : "a CPU");
		print_ids(g, n, 1);
		printf(", stack not read)\n");
		return;
	}
	if (nthreads) {
		printf("# (on thread%s", nthreads > 1 ? "s" : "");
		print_ids(g, n, 1);
		printf(")\n");
	}
	if (strcmp(g->note, "changed") == 0) {
		printf("# (stack changed while read)\n");
	} else if (g->note[0] && strcmp(g->note, "cut") != 0) {
		printf("# (no stack: ");
		put_safe(g->note, 0);
		printf(")\n");
	} else if (!g->s->nloc) {
		printf("# (no stack)\n");
	}
}

/* "created by main.spawnWaiters in goroutine 1 at main.go:40". */
static void print_creator(const struct rgo *g, size_t n)
{
	size_t same = 0, known = 0;

	if (!g->created_by[0])
		return;
	for (size_t i = 0; i < n; i++) {
		known += g[i].has_creator;
		same += g[i].has_creator && g[i].creator == g->creator;
	}
	printf("created by ");
	put_safe(g->created_by, 0);
	if (known && same == n)
		printf(" in goroutine %" PRId64, g->creator);
	else if (known)
		printf(" in %zu goroutines", known);
	if (g->created_at[0]) {
		printf(" at ");
		put_safe(g->created_at, 0);
	}
	putchar('\n');
}

static void print_group(const struct view *v, const struct group *gr)
{
	const struct rgo *g = &v->g[gr->first];

	if (v->several)
		printf("process %" PRId64 ": ", g->pid);
	printf("%zu goroutine%s ", gr->n, gr->n == 1 ? "" : "s");
	print_state(g, gr->n);
	putchar(':');
	print_ids(g, gr->n, 0);
	putchar('\n');
	if (g->nlab) {
		printf("# labels: {");
		for (size_t i = 0; i < g->nlab; i++) {
			const struct fr_pprof_rlabel *l = v->labs[g->lab + i];

			printf(i ? ", " : "");
			put_safe(go_key(l->key), 1);
			putchar(':');
			if (l->str)
				put_safe(l->str, 1);
			else
				printf("%" PRId64, l->num);
		}
		printf("}\n");
	}
	print_note(g, gr->n);
	print_frames(v->pd, g);
	if (strcmp(g->note, "cut") == 0)
		printf("# (stack cut: the innermost %zu frames shown)\n", g->s->nloc);
	print_creator(g, gr->n);
	putchar('\n');
}

static int print_text(struct view *v)
{
	if (make_groups(v) < 0) {
		fprintf(stderr, "%s goroutines: out of memory\n", prog);
		return 1;
	}
	if (v->several)
		printf("several processes");
	else if (v->pid)
		printf("process %" PRId64, v->pid);
	else
		printf("a Go process");
	printf(" (");
	put_safe(v->go[0] ? v->go : "Go version unknown", 0);
	printf("): %zu goroutine%s, %" PRIu64 " of the runtime's own not shown, %" PRIu64
	       " changed while read\n\n",
	       v->n, v->n == 1 ? "" : "s", v->system, v->changed);
	for (size_t i = 0; i < v->ngroups; i++)
		print_group(v, &v->groups[i]);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* Line `k` of location `loc` as {"function", "file", "line", "address",
 * "inlined"}, or only its address when it has no line. */
static cJSON *frame_json(const struct fr_pprof_data *pd, const struct fr_pprof_rlocation *loc,
			 size_t k)
{
	cJSON *o = cJSON_CreateObject();
	char addr[24];

	snprintf(addr, sizeof(addr), "0x%" PRIx64, loc->address);
	if (o && k < loc->nline) {
		const struct fr_pprof_rfunction *f = &pd->functions[pd->line_funcs[loc->line + k]];

		if (!cJSON_AddStringToObject(o, "function", f->name) ||
		    (f->filename[0] && !cJSON_AddStringToObject(o, "file", f->filename)) ||
		    (pd->line_nums[loc->line + k] > 0 &&
		     !fr_ipc_add_int(o, "line", pd->line_nums[loc->line + k])))
			goto err;
	}
	if (!o || (loc->address && !cJSON_AddStringToObject(o, "address", addr)) ||
	    (k + 1 < loc->nline && !cJSON_AddTrueToObject(o, "inlined")))
		goto err;
	return o;
err:
	cJSON_Delete(o);
	return NULL;
}

/* Adds the stack and labels of `g` to `o`. Returns 0 or -ENOMEM. */
static int add_stack_labels(const struct view *v, const struct rgo *g, cJSON *o)
{
	const struct fr_pprof_data *pd = v->pd;
	cJSON *stack = cJSON_AddArrayToObject(o, "stack");
	cJSON *labels = cJSON_AddObjectToObject(o, "labels");

	if (!stack || !labels)
		return -ENOMEM;
	for (size_t j = 0; j < g->s->nloc; j++) {
		const struct fr_pprof_rlocation *loc =
			&pd->locations[pd->sample_locs[g->s->loc + j]];

		for (size_t k = 0; k < loc->nline || (k == 0 && !loc->nline); k++)
			if (!cJSON_AddItemToArray(stack, frame_json(pd, loc, k)))
				return -ENOMEM;
	}
	for (size_t i = 0; i < g->nlab; i++) {
		const struct fr_pprof_rlabel *l = v->labs[g->lab + i];

		if (l->str ? !cJSON_AddStringToObject(labels, go_key(l->key), l->str)
			   : !fr_ipc_add_int(labels, go_key(l->key), l->num))
			return -ENOMEM;
	}
	return 0;
}

static cJSON *goroutine_json(const struct view *v, const struct rgo *g)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || (g->pid && !fr_ipc_add_int(o, "pid", g->pid)) ||
	    !fr_ipc_add_int(o, "goid", g->goid) || !cJSON_AddStringToObject(o, "state", g->state) ||
	    (g->wait[0] && !cJSON_AddStringToObject(o, "wait", g->wait)) ||
	    (g->has_waiting && !fr_ipc_add_int(o, "waiting_ns", g->waiting_ns)) ||
	    (g->waited[0] && !cJSON_AddStringToObject(o, "waited", g->waited)) ||
	    (g->has_thread && !fr_ipc_add_int(o, "thread", g->thread)) ||
	    (g->has_creator && !fr_ipc_add_int(o, "creator_goid", g->creator)) ||
	    (g->start[0] && !cJSON_AddStringToObject(o, "start", g->start)) ||
	    (g->created_by[0] && !cJSON_AddStringToObject(o, "created_by", g->created_by)) ||
	    (g->created_at[0] && !cJSON_AddStringToObject(o, "created_at", g->created_at)) ||
	    add_stack_labels(v, g, o) < 0 ||
	    (g->note[0] && !cJSON_AddStringToObject(o, "stack_note", g->note))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* {"pid", "go", "system", "changed", "goroutines": [...] by goroutine id,
 * "warnings": [...]}, or NULL on ENOMEM. */
static cJSON *build_json(struct view *v, const struct fr_ipc_goroutines_reply *r)
{
	cJSON *root = cJSON_CreateObject(), *arr, *warn;

	if (v->n)
		qsort(v->g, v->n, sizeof(*v->g), by_goid);
	if (!root || (v->pid && !fr_ipc_add_int(root, "pid", v->pid)) ||
	    (v->go[0] && !cJSON_AddStringToObject(root, "go", v->go)) ||
	    !fr_ipc_add_int(root, "system", (int64_t)v->system) ||
	    !fr_ipc_add_int(root, "changed", (int64_t)v->changed) ||
	    !(arr = cJSON_AddArrayToObject(root, "goroutines")) ||
	    !(warn = cJSON_AddArrayToObject(root, "warnings")))
		goto err;
	for (size_t i = 0; i < v->n; i++)
		if (!cJSON_AddItemToArray(arr, goroutine_json(v, &v->g[i])))
			goto err;
	for (uint32_t i = 0; r && i < r->nwarnings; i++)
		if (!cJSON_AddItemToArray(warn, cJSON_CreateString(r->warnings[i])))
			goto err;
	return root;
err:
	cJSON_Delete(root);
	return NULL;
}

static int print_json(struct view *v, const struct fr_ipc_goroutines_reply *r)
{
	cJSON *root = build_json(v, r);
	char *text = root ? cJSON_PrintUnformatted(root) : NULL, *clean = NULL;
	size_t len;

	cJSON_Delete(root);
	/* Names and labels are whatever bytes the program holds: invalid
	 * UTF-8 becomes U+FFFD, so every JSON reader takes the document. */
	if (!text || !(clean = fr_utf8_clean(text, strlen(text), &len))) {
		fprintf(stderr, "%s goroutines: out of memory\n", prog);
		free(text);
		return 1;
	}
	printf("%s\n", clean);
	free(clean);
	free(text);
	return fflush(stdout) == 0 ? 0 : 1;
}

int fr_cli_goroutines_render(int fd, const char *what, int json,
			     const struct fr_ipc_goroutines_reply *r)
{
	struct view v;
	int status = view_load(&v, fd, what, r);

	if (!status && json) {
		status = print_json(&v, r);
	} else if (!status) {
		for (uint32_t i = 0; r && i < r->nwarnings; i++)
			fprintf(stderr, "%s: warning: %s\n", prog, r->warnings[i]);
		status = print_text(&v);
	}
	view_free(&v);
	return status;
}
