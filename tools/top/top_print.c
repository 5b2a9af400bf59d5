/* flightrec top's output: the table of the top functions (flat, cum, their
 * shares, samples, the process each ran in most), or the same rows as JSON
 * for scripts; with --by, one table per process, command name, cgroup or
 * label value, the groups with the most value first.
 */
#include "tools/top/top.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "core/pprof/pprof_read.h"
#include "core/query/timeline.h"
#include "core/util/parse.h"
#include "ipc/proto.h"

/* Groups a table shows at most with --by; JSON has them all. */
#define MAX_GROUPS 10
/* Width of the process column: "comm[pid]+N", the comm shortened. */
#define PROC_W 16

static int by_flat(const void *a, const void *b)
{
	const struct fr_top_row *x = a, *y = b;

	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int by_cum(const void *a, const void *b)
{
	const struct fr_top_row *x = a, *y = b;

	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Three significant digits without trailing zeros: 1.23, 45, 120. */
static void sig3(double v, const char *unit, char *buf, size_t len)
{
	char num[32];
	char *dot;

	snprintf(num, sizeof(num), "%.*f", v >= 100 ? 0 : v >= 10 ? 1 : 2, v);
	dot = strchr(num, '.');
	if (dot) {
		char *e = num + strlen(num) - 1;

		while (e > dot && *e == '0')
			*e-- = '\0';
		if (e == dot)
			*e = '\0';
	}
	snprintf(buf, len, "%s%s", num, unit);
}

/* A value for people: "1.23s", "45ms" for nanoseconds, "1.5MiB" for
 * bytes, the plain number otherwise. */
static void format_value(int64_t v, const char *unit, char *buf, size_t len)
{
	static const struct {
		double scale;
		const char *name;
	} ns_units[] = {
		{3600e9, "h"}, {60e9, "m"}, {1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"},
	};
	double a = v < 0 ? -(double)v : (double)v;

	if (v == 0) {
		snprintf(buf, len, "0");
	} else if (strcmp(unit, "nanoseconds") == 0) {
		size_t i = 2; /* seconds, not minutes, up to an hour */

		if (a >= 3600e9)
			i = 0;
		while (i < 5 && a < ns_units[i].scale)
			i++;
		sig3(a / ns_units[i].scale, ns_units[i].name, buf + (v < 0), len - (v < 0));
		if (v < 0)
			buf[0] = '-';
	} else if (strcmp(unit, "bytes") == 0 && v > 0) {
		fr_format_size_human((uint64_t)v, buf, len);
	} else {
		snprintf(buf, len, "%" PRId64, v);
	}
}

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0;
}

static int is_samples(const struct fr_pprof_value_type *t)
{
	return strcmp(t->type, "samples") == 0 && strcmp(t->unit, "count") == 0;
}

/* The column counting the samples of value column `col`: the profile's
 * samples/count, or for a memory profile (Go's, or flightrec's alloc and
 * heap, which have no samples/count) the blocks of the bytes shown
 * (alloc_objects beside alloc_space, inuse_objects beside inuse_space);
 * -1 when there is none (one sample counts one). */
static ssize_t count_col(const struct fr_pprof_data *d, size_t col)
{
	const char *space = d->types[col].type;
	size_t n = strlen(space);

	for (size_t i = 0; i < d->ntypes; i++)
		if (is_samples(&d->types[i]))
			return (ssize_t)i;
	for (size_t i = 0; i < d->ntypes; i++) {
		const char *objects = d->types[i].type;

		if (n > 6 && strcmp(space + n - 6, "_space") == 0 &&
		    strncmp(objects, space, n - 6) == 0 && strcmp(objects + n - 6, "_objects") == 0)
			return (ssize_t)i;
	}
	return -1;
}

/* Whether column `i` is the value of `event` as --event names it: the
 * column of that name, or alloc's alloc_space and heap's inuse_space. */
static int column_is(const struct fr_pprof_data *d, size_t i, const char *event)
{
	const char *type = d->types[i].type;

	return strcmp(type, event) == 0 ||
	       (strcmp(event, "alloc") == 0 && strcmp(type, "alloc_space") == 0) ||
	       (strcmp(event, "heap") == 0 && strcmp(type, "inuse_space") == 0);
}

/* The column shown: the one of o->event when given, else the profile's
 * default (as go tool pprof shows it), else the last that is not a
 * sample count; its sample count's in *samples_col (count_col()).
 * SIZE_MAX when the profile has no column of o->event. */
static size_t value_col(const struct fr_pprof_data *d, const struct fr_top_opts *o,
			ssize_t *samples_col)
{
	size_t col = d->ntypes - 1;

	if (o->event) {
		for (col = 0; col < d->ntypes && !column_is(d, col, o->event); col++)
			;
		if (col == d->ntypes)
			return SIZE_MAX;
	} else if (d->default_type >= 0 && !is_samples(&d->types[d->default_type])) {
		col = (size_t)d->default_type;
	} else {
		for (size_t i = d->ntypes; i-- > 0;)
			if (!is_samples(&d->types[i])) {
				col = i;
				break;
			}
	}
	*samples_col = count_col(d, col);
	return col;
}

/* Whether column `i` is another event's than column `col`'s (not a
 * count of samples or blocks of either). */
static int other_event(const struct fr_pprof_data *d, size_t i, size_t col, ssize_t samples_col)
{
	if (i == col || (ssize_t)i == samples_col || is_samples(&d->types[i]) ||
	    count_col(d, i) == (ssize_t)col)
		return 0;
	/* alloc_objects counts alloc_space's blocks: no event of its own */
	for (size_t j = 0; j < d->ntypes; j++)
		if (j != i && count_col(d, j) == (ssize_t)i)
			return 0;
	return 1;
}

/* Says, under the table's first line, the other events a profile of
 * several holds (cpu and offcpu), each with its own total: the table
 * shows one, and a total across events would mean nothing. */
static void print_others(const struct fr_pprof_data *d, size_t col, ssize_t samples_col)
{
	for (size_t i = 0; i < d->ntypes; i++) {
		ssize_t sc = count_col(d, i);
		int64_t total = 0, n = 0;
		const char *type = d->types[i].type;
		char tv[32];

		if (!other_event(d, i, col, samples_col))
			continue;
		for (size_t s = 0; s < d->nsamples; s++) {
			int64_t v = d->values[d->samples[s].val + i];

			total += v;
			n += !v ? 0 : sc >= 0 ? d->values[d->samples[s].val + (size_t)sc] : 1;
		}
		format_value(total, d->types[i].unit, tv, sizeof(tv));
		printf("(the profile also holds %s: total %s (%" PRId64
		       " samples), not in this table; --event %s shows it)\n",
		       type, tv, n,
		       strcmp(type, "alloc_space") == 0	  ? "alloc"
		       : strcmp(type, "inuse_space") == 0 ? "heap"
							  : type);
	}
}

/* Whether the profile holds another event beside column `col`'s. */
static int several_events(const struct fr_pprof_data *d, size_t col, ssize_t samples_col)
{
	for (size_t i = 0; i < d->ntypes; i++)
		if (other_event(d, i, col, samples_col))
			return 1;
	return 0;
}

/* Whether the column's rows sort by cum unless --sort says: the waits a
 * waker ended are charged to the waker's stack, whose leaf frames are
 * the kernel's waking code; what matters is the code of the program
 * under which it woke the waiter (a critical section, a producer), its
 * cum. A runqueue stack's leaf is where the scheduler switched the
 * thread out; its cum shows which of the program's functions waited. */
static int sorts_by_cum(const struct fr_pprof_data *d, size_t col, const struct fr_top_opts *o)
{
	if (o->sort_cum >= 0)
		return o->sort_cum;
	return strcmp(d->types[col].type, "wakeup") == 0 ||
	       strcmp(d->types[col].type, "runqueue") == 0;
}

/* Without --sort, a wakeup or runqueue table leaves the kernel's
 * functions out: every row would otherwise start with the waking and
 * scheduling code all its samples share, and push the program's own
 * functions (the producer, the lock holder) off the table. Keeps the
 * other rows in order; returns how many are left. */
static size_t program_rows(struct fr_top *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nrows; i++) {
		size_t len = strlen(t->rows[i].name);

		if (len < 4 || strcmp(t->rows[i].name + len - 4, "_[k]") != 0)
			t->rows[n++] = t->rows[i];
	}
	return n;
}

/* What a wakeup or runqueue table's values are, said once above it. */
static void print_meaning(const struct fr_pprof_data *d, size_t col, const struct fr_top_opts *o)
{
	const char *left = o->sort_cum < 0 ? " (kernel functions left out; --sort shows them)" : "";

	if (strcmp(d->types[col].type, "wakeup") == 0)
		printf("wakeup: time threads waited until the code below woke them; cum = the "
		       "waiting each function's callees ended: the critical sections that cost "
		       "the most waiting%s\n",
		       left);
	else if (strcmp(d->types[col].type, "runqueue") == 0)
		printf("runqueue: time threads were runnable but waited for a CPU, at the stack "
		       "where they resumed; cum = the waiting of each function and its callees%s\n",
		       left);
}

/* "comm[pid]", "comm" without a pid, "[pid]" without a comm, "-". */
static void process_name(const struct fr_top_process *p, char *buf, size_t len)
{
	if (p->pid >= 0)
		snprintf(buf, len, "%s[%" PRId64 "]", p->comm, p->pid);
	else
		snprintf(buf, len, "%s", p->comm[0] ? p->comm : "-");
}

/* The process column of row `r`: its process with the most cum, and "+N"
 * for the N others, within PROC_W characters (without the pid, then with
 * the comm shortened, when it does not fit); one word, so the columns
 * stay fields for awk. */
static void process_cell(const struct fr_top *t, const struct fr_top_row *r, char *buf)
{
	char more[16] = "", pid[24] = "";
	const struct fr_top_process *p;
	int room;

	if (!r->nshares) {
		snprintf(buf, PROC_W + 1, "-");
		return;
	}
	p = &t->processes[r->shares[0].process];
	if (r->nshares > 1)
		snprintf(more, sizeof(more), "+%" PRIu32, r->nshares - 1);
	if (p->pid >= 0)
		snprintf(pid, sizeof(pid), "[%" PRId64 "]", p->pid);
	if (p->comm[0] && strlen(p->comm) + strlen(pid) + strlen(more) > PROC_W)
		pid[0] = '\0';
	room = PROC_W - (int)strlen(more) - (int)strlen(pid);
	if (room < 1)
		room = 1;
	/* The widths above make it fit; a longer cell would only be cut. */
	if (snprintf(buf, PROC_W + 1, "%.*s%s%s", room, p->comm[0] || p->pid >= 0 ? p->comm : "-",
		     pid, more) > PROC_W)
		buf[PROC_W] = '\0';
}

/* Whether the profile's samples name their processes at all. */
static int has_processes(const struct fr_top *t)
{
	return t->nprocesses > 1 ||
	       (t->nprocesses == 1 && (t->processes[0].pid >= 0 || t->processes[0].comm[0]));
}

/* Prints the table of `t`, sorted, `dur` the window. */
static void print_table(const struct fr_top *t, const struct fr_pprof_data *d, size_t col,
			ssize_t samples_col, const struct fr_top_opts *o, size_t limit, int cum)
{
	int several = several_events(d, col, samples_col);
	const char *unit = d->types[col].unit;
	int procs = o->by != FR_TOP_BY_PROCESS && has_processes(t);
	char tv[32], dur[32], f[32], c[32], p[PROC_W + 1];

	format_value(t->total, unit, tv, sizeof(tv));
	if (d->duration_nanos > 0)
		fr_format_duration(d->duration_nanos, dur, sizeof(dur));
	else
		snprintf(dur, sizeof(dur), "unknown");
	print_meaning(d, col, o);
	printf("Showing top %zu of %zu functions, %s%stotal %s (%" PRId64 " samples), window %s\n",
	       limit, t->nrows, several ? d->types[col].type : "", several ? " " : "", tv,
	       t->total_samples, dur);
	/* With --by, said once below the groups (show_groups()) */
	if (several && o->by == FR_TOP_BY_NONE)
		print_others(d, col, samples_col);
	printf("%8s %6s %8s %6s %8s  %-*s%s\n", "flat", "flat%", "cum", "cum%", "samples",
	       procs ? PROC_W + 2 : 0, procs ? "process" : "", "name");
	for (size_t i = 0; i < limit; i++) {
		const struct fr_top_row *r = &t->rows[i];

		format_value(r->flat, unit, f, sizeof(f));
		format_value(r->cum, unit, c, sizeof(c));
		if (procs)
			process_cell(t, r, p);
		printf("%8s %5.1f%% %8s %5.1f%% %8" PRId64 "  %-*s%s\n", f, pct(r->flat, t->total),
		       c, pct(r->cum, t->total), cum ? r->cum_samples : r->flat_samples,
		       procs ? PROC_W + 2 : 0, procs ? p : "", r->name);
	}
}

/* Adds the first `limit` rows of `t` to JSON array `arr`, with the group's
 * name when there is one. Returns 0 or -ENOMEM. */
static int json_rows(cJSON *arr, const struct fr_top *t, const char *event, const char *unit,
		     const char *group, size_t limit)
{
	for (size_t i = 0; i < limit; i++) {
		const struct fr_top_row *r = &t->rows[i];
		cJSON *o = cJSON_CreateObject(), *ps = cJSON_CreateArray();
		int ok = o && ps && cJSON_AddItemToArray(arr, o);

		if (!ok) {
			cJSON_Delete(o);
			cJSON_Delete(ps);
			return -ENOMEM;
		}
		ok = cJSON_AddStringToObject(o, "name", r->name) &&
		     (!group || cJSON_AddStringToObject(o, "group", group)) &&
		     cJSON_AddStringToObject(o, "event", event) &&
		     cJSON_AddStringToObject(o, "unit", unit) &&
		     fr_ipc_add_int(o, "flat", r->flat) &&
		     cJSON_AddNumberToObject(o, "flat_percent", pct(r->flat, t->total)) &&
		     fr_ipc_add_int(o, "cum", r->cum) &&
		     cJSON_AddNumberToObject(o, "cum_percent", pct(r->cum, t->total)) &&
		     fr_ipc_add_int(o, "flat_samples", r->flat_samples) &&
		     fr_ipc_add_int(o, "cum_samples", r->cum_samples) &&
		     fr_ipc_add_int(o, "total", t->total) &&
		     cJSON_AddItemToObject(o, "processes", ps);
		if (!ok) {
			cJSON_Delete(ps);
			return -ENOMEM;
		}
		/* A profile without process labels (another tool's) lists none */
		for (uint32_t k = 0; has_processes(t) && k < r->nshares; k++) {
			const struct fr_top_process *pr = &t->processes[r->shares[k].process];
			cJSON *po = cJSON_CreateObject();

			if (!po || !cJSON_AddItemToArray(ps, po) ||
			    (pr->pid >= 0 && !fr_ipc_add_int(po, "pid", pr->pid)) ||
			    !cJSON_AddStringToObject(po, "comm", pr->comm) ||
			    !fr_ipc_add_int(po, "cum", r->shares[k].cum) ||
			    !cJSON_AddNumberToObject(po, "cum_percent",
						     pct(r->shares[k].cum, t->total)))
				return -ENOMEM;
		}
	}
	return 0;
}

/* Aggregates `d` and prints it as a table, or adds its rows to `arr`. */
static int show_one(const struct fr_pprof_data *d, const struct fr_top_opts *o, cJSON *arr,
		    const char *group)
{
	struct fr_top t;
	ssize_t samples_col;
	size_t col = value_col(d, o, &samples_col), limit = o->limit;
	int ret = fr_top_aggregate(d, col, samples_col, &t), cum = sorts_by_cum(d, col, o);

	if (ret < 0)
		return ret;
	if (t.nrows)
		qsort(t.rows, t.nrows, sizeof(*t.rows), cum ? by_cum : by_flat);
	if (o->sort_cum < 0 && cum)
		t.nrows = program_rows(&t);
	if (limit > t.nrows)
		limit = t.nrows;
	if (arr)
		ret = json_rows(arr, &t, d->types[col].type, d->types[col].unit, group, limit);
	else
		print_table(&t, d, col, samples_col, o, limit, cum);
	fr_top_free(&t);
	return ret;
}

/* ---- groups ---- */

struct group {
	char *name;
	int64_t total;
	size_t nsamples;
	size_t id; /* the index samples know it by */
};

/* The group of sample `s` as --by names it, into buf; 0, or -ENOENT when
 * the sample has no such label. */
static int group_of(const struct fr_pprof_data *d, const struct fr_pprof_rsample *s,
		    const struct fr_top_opts *o, char *buf, size_t len)
{
	const char *key = o->by == FR_TOP_BY_LABEL    ? o->by_key
			  : o->by == FR_TOP_BY_CGROUP ? "cgroup"
						      : "comm";
	struct fr_top_process p = {.pid = -1, .comm = ""};
	const char *str = NULL;

	for (size_t i = 0; i < s->nlabel; i++) {
		const struct fr_pprof_rlabel *l = &d->labels[s->label + i];

		if (l->str && strcmp(l->key, key) == 0)
			str = l->str;
		else if (!l->str && strcmp(l->key, "pid") == 0)
			p.pid = l->num;
	}
	if (o->by == FR_TOP_BY_PROCESS) {
		p.comm = str ? str : "";
		process_name(&p, buf, len);
		return 0;
	}
	if (!str)
		return -ENOENT;
	snprintf(buf, len, "%s", str);
	return 0;
}

static int by_total(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Sorts the samples of `d` into groups (*idx: each sample's group,
 * SIZE_MAX when it has none, OTHER_EVENT when it is another event's than
 * column `col`'s). Returns the number of groups in *out, or -ENOMEM. */
#define OTHER_EVENT (SIZE_MAX - 1)
static ssize_t make_groups(const struct fr_pprof_data *d, const struct fr_top_opts *o, size_t col,
			   ssize_t samples_col, struct group **out, size_t *idx)
{
	size_t cap = 64, mask = 2 * cap - 1, n = 0;
	struct group *g = calloc(cap, sizeof(*g));
	uint32_t *slots = calloc(mask + 1, sizeof(*slots));
	char buf[512];

	for (size_t s = 0; g && slots && s < d->nsamples; s++) {
		size_t i;

		idx[s] = OTHER_EVENT;
		if (!fr_top_sample_of(d, &d->samples[s], col, samples_col))
			continue;
		idx[s] = SIZE_MAX;
		if (group_of(d, &d->samples[s], o, buf, sizeof(buf)) < 0)
			continue;
		for (i = fr_top_hash(buf) & mask; slots[i]; i = (i + 1) & mask)
			if (strcmp(g[slots[i] - 1].name, buf) == 0)
				break;
		if (!slots[i]) {
			if (n == cap)
				goto nomem; /* grown below, before it fills */
			g[n] = (struct group){.name = strdup(buf), .id = n};
			if (!g[n].name)
				goto nomem;
			slots[i] = (uint32_t)++n;
		}
		idx[s] = slots[i] - 1;
		g[idx[s]].total += d->values[d->samples[s].val + col];
		g[idx[s]].nsamples++;
		if (2 * n >= cap) {
			struct group *gg = realloc(g, 2 * cap * sizeof(*g));
			uint32_t *ss = calloc(4 * cap, sizeof(*ss));

			if (gg)
				g = gg;
			if (!gg || !ss) {
				free(ss);
				goto nomem;
			}
			cap *= 2;
			mask = 2 * cap - 1;
			free(slots);
			slots = ss;
			for (size_t k = 0; k < n; k++) {
				for (i = fr_top_hash(g[k].name) & mask; slots[i];
				     i = (i + 1) & mask)
					;
				slots[i] = (uint32_t)k + 1;
			}
		}
	}
	if (!g || !slots)
		goto nomem;
	free(slots);
	*out = g;
	return (ssize_t)n;
nomem:
	for (size_t k = 0; g && k < n; k++)
		free(g[k].name);
	free(g);
	free(slots);
	return -ENOMEM;
}

/* What --by groups by, for messages. */
static const char *by_what(const struct fr_top_opts *o)
{
	return o->by == FR_TOP_BY_LABEL	   ? o->by_key
	       : o->by == FR_TOP_BY_CGROUP ? "cgroup"
	       : o->by == FR_TOP_BY_COMM   ? "comm"
					   : "process";
}

/* Prints (or adds to `arr`) the table of each group, the most value
 * first; a table at most MAX_GROUPS of them. */
static int show_groups(const struct fr_pprof_data *d, const struct fr_top_opts *o, cJSON *arr)
{
	ssize_t samples_col;
	size_t col = value_col(d, o, &samples_col);
	size_t *idx = malloc((d->nsamples + 1) * sizeof(*idx));
	struct fr_pprof_rsample *sub = malloc((d->nsamples + 1) * sizeof(*sub));
	struct group *g = NULL;
	ssize_t n = -ENOMEM;
	size_t shown, left = 0;
	int ret = 0;

	if (idx && sub)
		n = make_groups(d, o, col, samples_col, &g, idx);
	if (n < 0) {
		free(idx);
		free(sub);
		return -ENOMEM;
	}
	qsort(g, (size_t)n, sizeof(*g), by_total);
	shown = arr || (size_t)n <= MAX_GROUPS ? (size_t)n : MAX_GROUPS;
	for (size_t s = 0; s < d->nsamples; s++)
		left += idx[s] == SIZE_MAX;
	if (!arr && n == 0)
		printf("no sample has a %s\n", by_what(o));
	for (size_t k = 0; k < shown && ret == 0; k++) {
		struct fr_pprof_data part = *d;

		part.samples = sub;
		part.nsamples = 0;
		for (size_t s = 0; s < d->nsamples; s++)
			if (idx[s] == g[k].id)
				sub[part.nsamples++] = d->samples[s];
		if (!arr)
			printf("%s%s%s%s\n", k ? "\n" : "",
			       o->by == FR_TOP_BY_LABEL ? o->by_key : "",
			       o->by == FR_TOP_BY_LABEL ? "=" : "", g[k].name);
		ret = show_one(&part, o, arr, g[k].name);
	}
	if (!arr && ret == 0 && shown < (size_t)n)
		printf("\n(%zu more groups not shown; --json has them all)\n", (size_t)n - shown);
	if (!arr && ret == 0 && left && n)
		printf("\n(%zu samples without a %s left out)\n", left, by_what(o));
	if (!arr && ret == 0 && several_events(d, col, samples_col)) {
		printf("\n");
		print_others(d, col, samples_col);
	}
	for (ssize_t k = 0; k < n; k++)
		free(g[k].name);
	free(g);
	free(idx);
	free(sub);
	return ret;
}

int fr_top_print(const struct fr_pprof_data *d, const struct fr_top_opts *o)
{
	cJSON *arr = o->json ? cJSON_CreateArray() : NULL;
	char *text, *clean;
	size_t len;
	int ret;

	if (o->json && !arr)
		return -ENOMEM;
	if (o->event && value_col(d, o, &(ssize_t){0}) == SIZE_MAX) {
		fprintf(stderr, "flightrec top: --event: the profile holds no %s; it holds",
			o->event);
		for (size_t i = 0; i < d->ntypes; i++)
			fprintf(stderr, "%s %s", i ? "," : "", d->types[i].type);
		fprintf(stderr, "\n");
		cJSON_Delete(arr);
		return -ENOENT;
	}
	ret = o->by != FR_TOP_BY_NONE ? show_groups(d, o, arr) : show_one(d, o, arr, NULL);
	if (ret == 0 && arr) {
		/* Function and process names are any bytes: invalid UTF-8 becomes
		 * U+FFFD (as serve's answers), so every JSON reader takes it. */
		text = cJSON_PrintUnformatted(arr);
		clean = text ? fr_utf8_clean(text, strlen(text), &len) : NULL;
		if (clean)
			printf("%s\n", clean);
		else
			ret = -ENOMEM;
		free(clean);
		free(text);
	}
	cJSON_Delete(arr);
	return ret;
}

int fr_top_parse_by(const char *s, struct fr_top_opts *o)
{
	static const enum fr_top_by tops[] = {
		[FR_TIMELINE_BY_PROCESS] = FR_TOP_BY_PROCESS,
		[FR_TIMELINE_BY_COMM] = FR_TOP_BY_COMM,
		[FR_TIMELINE_BY_CGROUP] = FR_TOP_BY_CGROUP,
		[FR_TIMELINE_BY_LABEL] = FR_TOP_BY_LABEL,
	};
	enum fr_timeline_by by;
	const char *key;

	if (fr_group_by_parse(s, &by, &key) < 0)
		return -EINVAL;
	o->by = tops[by];
	o->by_key = key;
	return 0;
}
