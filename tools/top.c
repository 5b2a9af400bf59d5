/* flightrec top: a readable table of the functions that cost the most, for
 * a box without pprof, in the spirit of `go tool pprof -top`.
 *
 * The profile comes from a file (gzip'ed or plain pprof) or from the
 * running recorder: an "attach" request whose output descriptor is an
 * anonymous memfd, read back from offset 0 once the recorder answers, so
 * nothing is left on disk.
 *
 * Functions are keyed by name, as pprof's default granularity does; a
 * frame on the kernel's mapping is shown as folded stacks show it, with
 * the "_[k]" suffix, so kernel functions stay apart from user ones. Flat
 * is the value of samples whose leaf frame (first line of the first
 * location) is the function; cum is the value of samples with the function
 * anywhere on the stack, counted once per sample even under recursion.
 */
#include "tools/top.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/compress.h"
#include "core/util/parse.h"
#include "core/query/profile.h"
#include "ipc/client.h"
#include "ipc/msg.h"
#include "ipc/proto.h"
#include "core/query/pprof_read.h"
#include "tools/query.h"

#define MAX_FILE (1ULL << 32)

static const char *prog = "flightrec top";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: flightrec top FILE [-n N] [--sort flat|cum]\n"
		"       flightrec top --window DURATION | --from TIME [--to TIME] [OPTION]...\n"
		"Show the functions that cost the most in a pprof profile (gzip'ed or plain),\n"
		"or in a window the running recorder holds, as a table: flat (the function\n"
		"itself), cum (with what it calls), their shares of the total, and samples.\n"
		"\n"
		"  --window DURATION  the last 500ms, 10s, 5m, 1h30m, ... from the recorder\n"
		"  --from TIME        window start: -10m, 13:05 (local), RFC 3339 or @UNIXSECONDS\n"
		"  --to TIME          window end (default now)\n"
		"  --pid PID[,PID...] only these processes (with --window or --from)\n"
		"  --children         with --pid: also every process they started, and theirs\n"
		"  --comm NAME[,...]  only processes with these command names\n"
		"  --cgroup PATH      only processes in this cgroup v2 path or below it\n"
		"  --label KEY=VALUE  only samples the program labelled so (libflightrec;\n"
		"                     repeatable: all of them)\n"
		"  --label-key KEY    only samples with a value for this label, one table\n"
		"                     per value (also with FILE)\n"
		"  --event E[,E...]   the events to ask for; the table shows the first\n"
		"                     (default cpu; offcpu shows where threads waited)\n"
		"  --hz N             samples per second per CPU to count\n"
		"  --socket PATH      the recorder's socket\n"
		"  -n N               how many functions to show (default 20)\n"
		"  --sort flat|cum    order by flat (default) or cum\n"
		"  -h, --help         show this help\n"
		"\n"
		"Examples:\n"
		"  flightrec top --window 60s\n"
		"  flightrec top --window 5m --event offcpu --comm postgres\n"
		"  flightrec top incident.pb.gz -n 40 --sort cum\n"
		"  flightrec top --window 60s --label-key endpoint\n");
}

/* --label-key KEY: a table per value of the label (NULL: one table). */
static const char *split_key;

/* ---- aggregation ---- */

struct table {
	struct fr_top_row *rows;
	size_t nrows;
	uint32_t *slots; /* row index + 1; 0 empty */
	size_t mask;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static uint32_t table_intern(struct table *t, const char *name)
{
	size_t i = hash_str(name) & t->mask;

	while (t->slots[i]) {
		if (strcmp(t->rows[t->slots[i] - 1].name, name) == 0)
			return t->slots[i] - 1;
		i = (i + 1) & t->mask;
	}
	t->rows[t->nrows] = (struct fr_top_row){.name = name};
	t->slots[i] = (uint32_t)++t->nrows;
	return (uint32_t)(t->nrows - 1);
}

/* Whether location `l` is a kernel frame: on the kernel's mapping. */
static int on_kernel(const struct fr_pprof_data *d, const struct fr_pprof_rlocation *l)
{
	return l->mapping >= 0 &&
	       strcmp(d->mappings[l->mapping].filename, FR_PROFILE_KERNEL_MAPPING) == 0;
}

/* The row of every function, and of every unsymbolized location (named
 * by its address, in `buf`). A frame on the kernel mapping gets a row of
 * its own, its name with the "_[k]" suffix of folded stacks, so that the
 * table still tells kernel functions apart now that pprof gives them
 * their plain names. `buf` holds ADDR_LEN bytes per location, then room
 * for one suffixed copy of every function name; kfn_row starts all
 * UINT32_MAX. */
#define ADDR_LEN (2 + 16 + sizeof(FR_PROFILE_KERNEL_SUFFIX))
static void name_rows(struct table *t, const struct fr_pprof_data *d, uint32_t *fn_row,
		      uint32_t *kfn_row, uint32_t *loc_row, char *buf)
{
	char *knames = buf + ADDR_LEN * d->nlocations;

	for (size_t i = 0; i < d->nfunctions; i++)
		fn_row[i] = table_intern(t, d->functions[i].name);
	for (size_t i = 0; i < d->nlocations; i++) {
		const struct fr_pprof_rlocation *l = &d->locations[i];
		int kernel = on_kernel(d, l);

		/* An unsymbolized location stands for itself, named by its
		 * address */
		if (!l->nline) {
			snprintf(buf + ADDR_LEN * i, ADDR_LEN, "0x%" PRIx64 "%s", l->address,
				 kernel ? FR_PROFILE_KERNEL_SUFFIX : "");
			loc_row[i] = table_intern(t, buf + ADDR_LEN * i);
		}
		for (size_t j = 0; kernel && j < l->nline; j++) {
			uint64_t f = d->line_funcs[l->line + j];
			int n;

			if (kfn_row[f] != UINT32_MAX)
				continue;
			n = sprintf(knames, "%s%s", d->functions[f].name, FR_PROFILE_KERNEL_SUFFIX);
			kfn_row[f] = table_intern(t, knames);
			knames += n + 1;
		}
	}
}

ssize_t fr_top_aggregate(const struct fr_pprof_data *d, size_t col, ssize_t samples_col,
			 struct fr_top_row **rows, char **names)
{
	size_t nkeys = 2 * d->nfunctions + d->nlocations, cap = 16;
	size_t len = ADDR_LEN * d->nlocations + 1;
	struct table t = {0};
	uint32_t *fn_row = NULL, *kfn_row = NULL, *loc_row = NULL;
	uint64_t *seen = NULL;
	char *addr = NULL;
	ssize_t ret = -ENOMEM;

	*rows = NULL;
	*names = NULL;
	if (nkeys > UINT32_MAX / 4)
		return -ENOMEM;
	while (cap < nkeys * 2)
		cap *= 2;
	t.rows = calloc(nkeys + 1, sizeof(*t.rows));
	t.slots = calloc(cap, sizeof(*t.slots));
	t.mask = cap - 1;
	for (size_t i = 0; i < d->nfunctions; i++)
		len += strlen(d->functions[i].name) + sizeof(FR_PROFILE_KERNEL_SUFFIX);
	fn_row = calloc(d->nfunctions + 1, sizeof(*fn_row));
	kfn_row = malloc((d->nfunctions + 1) * sizeof(*kfn_row));
	loc_row = calloc(d->nlocations + 1, sizeof(*loc_row));
	addr = calloc(len, 1);
	if (!t.rows || !t.slots || !fn_row || !kfn_row || !loc_row || !addr)
		goto out;
	memset(kfn_row, 0xff, (d->nfunctions + 1) * sizeof(*kfn_row));
	name_rows(&t, d, fn_row, kfn_row, loc_row, addr);
	seen = calloc(t.nrows + 1, sizeof(*seen));
	if (!seen)
		goto out;
	for (size_t s = 0; s < d->nsamples; s++) {
		const struct fr_pprof_rsample *sm = &d->samples[s];
		int64_t v = d->values[sm->val + col];
		int64_t n = samples_col >= 0 ? d->values[sm->val + (size_t)samples_col] : 1;
		int leaf = 1;

		for (size_t k = 0; k < sm->nloc; k++) {
			const struct fr_pprof_rlocation *l =
				&d->locations[d->sample_locs[sm->loc + k]];
			size_t nl = l->nline ? l->nline : 1;

			for (size_t j = 0; j < nl; j++) {
				uint64_t f = l->nline ? d->line_funcs[l->line + j] : 0;
				uint32_t r = !l->nline	       ? loc_row[l - d->locations]
					     : on_kernel(d, l) ? kfn_row[f]
							       : fn_row[f];

				if (leaf) {
					t.rows[r].flat += v;
					t.rows[r].flat_samples += n;
					leaf = 0;
				}
				/* Recursion puts a function on a stack more than once */
				if (seen[r] != s + 1) {
					seen[r] = s + 1;
					t.rows[r].cum += v;
					t.rows[r].cum_samples += n;
				}
			}
		}
	}
	/* Only functions some sample reached are part of the table */
	{
		size_t k = 0;

		for (size_t r = 0; r < t.nrows; r++)
			if (seen[r])
				t.rows[k++] = t.rows[r];
		t.nrows = k;
	}
	*rows = t.rows;
	*names = addr;
	t.rows = NULL;
	addr = NULL;
	ret = (ssize_t)t.nrows;
out:
	free(t.rows);
	free(t.slots);
	free(fn_row);
	free(kfn_row);
	free(loc_row);
	free(seen);
	free(addr);
	return ret;
}

/* ---- output ---- */

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

/* Prints the table. Returns 0 or -ENOMEM. */
static int print_top(const struct fr_pprof_data *d, size_t limit, int sort_cum)
{
	struct fr_top_row *rows;
	char *names;
	ssize_t n, samples_col = -1;
	size_t col = d->ntypes - 1;
	int64_t total = 0, total_samples = 0;
	const char *unit;
	char tv[32], dur[32], f[32], c[32];

	/* The profile's default column (as go tool pprof shows it), else
	 * the last that is not a sample count. */
	if (d->default_type >= 0 && !is_samples(&d->types[d->default_type]))
		col = (size_t)d->default_type;
	else
		for (size_t i = d->ntypes; i-- > 0;)
			if (!is_samples(&d->types[i])) {
				col = i;
				break;
			}
	for (size_t i = 0; i < d->ntypes; i++)
		if (is_samples(&d->types[i])) {
			samples_col = (ssize_t)i;
			break;
		}
	unit = d->types[col].unit;
	n = fr_top_aggregate(d, col, samples_col, &rows, &names);
	if (n < 0)
		return (int)n;
	for (size_t s = 0; s < d->nsamples; s++) {
		total += d->values[d->samples[s].val + col];
		total_samples +=
			samples_col >= 0 ? d->values[d->samples[s].val + (size_t)samples_col] : 1;
	}
	if (n)
		qsort(rows, (size_t)n, sizeof(*rows), sort_cum ? by_cum : by_flat);
	if (limit > (size_t)n)
		limit = (size_t)n;
	format_value(total, unit, tv, sizeof(tv));
	if (d->duration_nanos > 0)
		fr_format_duration(d->duration_nanos, dur, sizeof(dur));
	else
		snprintf(dur, sizeof(dur), "unknown");
	printf("Showing top %zu of %zd functions, total %s (%" PRId64 " samples), window %s\n",
	       limit, n, tv, total_samples, dur);
	printf("%10s %6s %10s %6s %9s  %s\n", "flat", "flat%", "cum", "cum%", "samples", "name");
	for (size_t i = 0; i < limit; i++) {
		format_value(rows[i].flat, unit, f, sizeof(f));
		format_value(rows[i].cum, unit, c, sizeof(c));
		printf("%10s %5.1f%% %10s %5.1f%% %9" PRId64 "  %s\n", f, pct(rows[i].flat, total),
		       c, pct(rows[i].cum, total),
		       sort_cum ? rows[i].cum_samples : rows[i].flat_samples, rows[i].name);
	}
	free(rows);
	free(names);
	return 0;
}

/* ---- input ---- */

/* Reads all of `fd` from offset 0. Returns 0 and a malloc'd buffer, or -errno
 * (-EFBIG beyond 4 GiB). */
/* The value of string label `key` of sample s, or NULL. */
static const char *label_of(const struct fr_pprof_data *d, const struct fr_pprof_rsample *s,
			    const char *key)
{
	for (size_t i = 0; i < s->nlabel; i++) {
		const struct fr_pprof_rlabel *l = &d->labels[s->label + i];

		if (l->str && strcmp(l->key, key) == 0)
			return l->str;
	}
	return NULL;
}

/* One table per value of the label split_key, values in the order of
 * their first sample; samples without it are left out. */
static int print_split(const struct fr_pprof_data *d, size_t limit, int sort_cum)
{
	const char **vals = calloc(d->nsamples + 1, sizeof(*vals));
	struct fr_pprof_rsample *sub = malloc((d->nsamples + 1) * sizeof(*sub));
	size_t nvals = 0;
	int ret = 0;

	if (!vals || !sub) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < d->nsamples; i++) {
		const char *v = label_of(d, &d->samples[i], split_key);
		size_t k = 0;

		while (v && k < nvals && strcmp(vals[k], v) != 0)
			k++;
		if (v && k == nvals)
			vals[nvals++] = v;
	}
	if (nvals == 0)
		printf("no sample has the label %s\n", split_key);
	for (size_t k = 0; k < nvals && ret == 0; k++) {
		struct fr_pprof_data part = *d;

		part.samples = sub;
		part.nsamples = 0;
		for (size_t i = 0; i < d->nsamples; i++) {
			const char *v = label_of(d, &d->samples[i], split_key);

			if (v && strcmp(v, vals[k]) == 0)
				sub[part.nsamples++] = d->samples[i];
		}
		printf("%s%s=%s\n", k ? "\n" : "", split_key, vals[k]);
		ret = print_top(&part, limit, sort_cum);
	}
out:
	free(vals);
	free(sub);
	return ret;
}

static int read_all(int fd, void **out, size_t *out_len)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap), *grown;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap >= MAX_FILE) {
				free(buf);
				return -EFBIG;
			}
			grown = realloc(buf, cap * 2);
			if (!grown) {
				free(buf);
				return -ENOMEM;
			}
			buf = grown;
			cap *= 2;
		}
		n = pread(fd, buf + len, cap - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			free(buf);
			return (int)n;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*out = buf;
	*out_len = len;
	return 0;
}

/* Decodes a gzip'ed or plain profile and prints it. `what` names the
 * source in messages. Returns the exit status. */
static int show(const void *buf, size_t len, const char *what, size_t limit, int sort_cum)
{
	const unsigned char *b = buf;
	struct fr_pprof_data *d = NULL;
	void *raw = NULL;
	size_t raw_len = len;
	const char *why = NULL;
	int ret;

	if (len == 0) {
		why = "empty file";
	} else if (len >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
		ret = fr_gunzip(buf, len, &raw, &raw_len);
		if (ret == -ENOMEM)
			goto nomem;
		if (ret < 0)
			why = "gzip data is corrupt or truncated";
		buf = raw;
	}
	if (!why) {
		ret = fr_pprof_read(buf, raw_len, &d);
		if (ret == -ENOMEM)
			goto nomem;
		if (ret < 0)
			why = "malformed or truncated protobuf";
		else if (d->ntypes == 0)
			why = "no sample types";
	}
	if (why) {
		fprintf(stderr, "%s: %s is not a pprof profile (%s)\n", prog, what, why);
		ret = 1;
	} else {
		ret = split_key ? print_split(d, limit, sort_cum) : print_top(d, limit, sort_cum);
		if (ret == -ENOMEM)
			goto nomem;
		ret = fflush(stdout) == 0 ? 0 : 1;
	}
	free(raw);
	fr_pprof_data_free(d);
	return ret;
nomem:
	fprintf(stderr, "%s: out of memory reading %s\n", prog, what);
	free(raw);
	fr_pprof_data_free(d);
	return 1;
}

static int show_file(const char *path, size_t limit, int sort_cum)
{
	void *buf;
	size_t len;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot open %s: %s\n", prog, path, strerror(errno));
		return 1;
	}
	ret = read_all(fd, &buf, &len);
	close(fd);
	if (ret < 0) {
		fprintf(stderr, "%s: cannot read %s: %s\n", prog, path, strerror(-ret));
		return 1;
	}
	ret = show(buf, len, path, limit, sort_cum);
	free(buf);
	return ret;
}

static const char *resp_error(const cJSON *resp)
{
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(resp, "ok");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(resp, "error");

	if (cJSON_IsTrue(ok))
		return NULL;
	return cJSON_IsString(e) ? e->valuestring : "the recorder refused the request";
}

/* Asks the recorder for a profile of the window into a memfd and shows
 * it. Returns the exit status. */
static int show_window(const struct fr_query_args *q, const char *socket_s, size_t limit,
		       int sort_cum)
{
	struct fr_ipc_attach_req ar;
	struct fr_ipc_attach_reply reply;
	cJSON *req = NULL, *resp = NULL;
	char *socket_path = NULL, err[512];
	void *buf = NULL;
	size_t len;
	int sock = -1, fd = -1, status = 1, ret;

	fr_query_attach_req(q, &ar);
	req = fr_ipc_attach_req_encode(&ar);
	if (!req)
		goto nomem;
	socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	if (!socket_path)
		goto nomem;
	fd = memfd_create("flightrec-top", MFD_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot create a temporary file: %s\n", prog, strerror(errno));
		goto out;
	}
	sock = fr_ipc_connect_why(socket_path, err, sizeof(err));
	if (sock < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		goto out;
	}
	ret = fr_ipc_call(sock, req, fd, &resp);
	if (ret == -EPROTO) {
		fprintf(stderr, "%s: the recorder at %s speaks another protocol version: %s\n",
			prog, socket_path,
			resp && resp_error(resp) ? resp_error(resp) : "no details");
		goto out;
	} else if (ret == -EAGAIN) {
		fprintf(stderr, "%s: the recorder at %s did not answer in time\n", prog,
			socket_path);
		goto out;
	} else if (ret < 0) {
		fprintf(stderr, "%s: lost the connection to the recorder at %s: %s\n", prog,
			socket_path, strerror(-ret));
		goto out;
	}
	if (resp_error(resp)) {
		fprintf(stderr, "%s: %s\n", prog, resp_error(resp));
		goto out;
	}
	if (fr_ipc_attach_reply_decode(resp, &reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		goto out;
	}
	for (uint32_t i = 0; i < reply.nwarnings; i++)
		fprintf(stderr, "%s: warning: %s\n", prog, reply.warnings[i]);
	ret = read_all(fd, &buf, &len);
	if (ret < 0) {
		fprintf(stderr, "%s: cannot read the recorder's profile back: %s\n", prog,
			strerror(-ret));
		goto out;
	}
	status = show(buf, len, "the recorder's answer", limit, sort_cum);
	goto out;
nomem:
	fprintf(stderr, "%s: out of memory\n", prog);
out:
	if (sock >= 0)
		close(sock);
	if (fd >= 0)
		close(fd);
	free(buf);
	free(socket_path);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	return status;
}

/* ---- arguments ---- */

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see flightrec top --help)\n");
	return EXIT_USAGE;
}

int fr_top_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		FR_QUERY_LONGOPTS,
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"sort", required_argument, NULL, FR_OPT_SORT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *socket_s = NULL, *file = NULL;
	struct fr_query_args *q = calloc(1, sizeof(*q));
	uint64_t limit = 20;
	int c, ret = EXIT_USAGE, sort_cum = 0;

	if (!q) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "n:h", longopts, NULL)) != -1) {
		if ((ret = fr_query_opt(prog, c, optarg, q)) == 1)
			continue;
		if (ret == EXIT_USAGE)
			goto out;
		ret = EXIT_USAGE;
		switch (c) {
		case FR_OPT_SOCKET: socket_s = optarg; break;
		case FR_OPT_SORT:
			if (strcmp(optarg, "flat") == 0)
				sort_cum = 0;
			else if (strcmp(optarg, "cum") == 0)
				sort_cum = 1;
			else {
				usage_error("--sort: expected flat or cum, got \"%s\"", optarg);
				goto out;
			}
			break;
		case 'n':
			if (fr_parse_u64(optarg, 1, 1000000, &limit) < 0) {
				usage_error("-n: expected a count of 1..1000000, got \"%s\"",
					    optarg);
				goto out;
			}
			break;
		case 'h':
			usage(stdout);
			ret = 0;
			goto out;
		default:
			/* A long option with optopt set lacks its value (see
			 * fr_cli_bad_option()). */
			if (optopt && strncmp(argv[optind - 1], "--", 2) == 0)
				fprintf(stderr, "%s: %.*s %s (see flightrec top --help)\n", prog,
					(int)strcspn(argv[optind - 1], "="), argv[optind - 1],
					strchr(argv[optind - 1], '=') ? "takes no value"
								      : "needs a value");
			else if (optopt && optopt < 256)
				fprintf(stderr,
					"%s: option -%c is unknown or needs a value "
					"(see flightrec top --help)\n",
					prog, optopt);
			else
				usage_error("unknown option or missing value: %s",
					    argv[optind - 1]);
			goto out;
		}
	}
	ret = EXIT_USAGE;
	split_key = q->targets.label_key[0] ? q->targets.label_key : NULL;
	if (optind < argc)
		file = argv[optind++];
	if (optind < argc) {
		usage_error("unexpected argument \"%s\"", argv[optind]);
		goto out;
	}
	if (q->out_s || q->format) {
		usage_error("shows a table; -o and --format are for attach and dump%s", "");
		goto out;
	}
	if (file) {
		if (q->window_s || q->from_s || q->to_s || q->targets.npids || socket_s ||
		    q->nevents || q->targets.ncomms || q->targets.cgroup[0] ||
		    (q->hz || q->nrates) || q->targets.children || q->targets.nlabels)
			usage_error("give either FILE or --window/--from, not both%s", "");
		else
			ret = show_file(file, (size_t)limit, sort_cum);
		goto out;
	}
	ret = fr_query_finish(prog, q);
	if (ret == 0)
		ret = show_window(q, socket_s, (size_t)limit, sort_cum);
out:
	free(q);
	return ret;
}
