/* flightrec fleet attach|top|timeline: the options of the fleet commands, checked
 * before anything is asked of ClickHouse, and the subcommands' mains.
 *
 * `top` reuses the local command's table (tools/top/top.c): the fleet profile
 * is written to an anonymous memfd and `flightrec top` reads it like any
 * profile file, so both print the same table, and --by host is top's
 * --label-key on the profile's "host" label.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clickhouse/ch_schema.h"
#include "core/clickhouse/fleet_sql.h"
#include "core/util/fs.h"
#include "core/util/http.h"
#include "core/util/parse.h"
#include "core/util/time.h"
#include "tools/cli.h"
#include "tools/fleet/fleet.h"
#include "core/query/timeline.h"
#include "tools/top/top.h"

enum {
	OPT_CLICKHOUSE = 1000,
	OPT_DATABASE,
	OPT_USER,
	OPT_PASSWORD_FILE,
	OPT_CA_FILE,
	OPT_HOST,
	OPT_TIMEOUT,
	OPT_BY,
	OPT_STEP,
	OPT_TOP,
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: flightrec fleet attach --clickhouse URL[,URL...] WINDOW [OPTION]... -o F\n"
		"       flightrec fleet top --clickhouse URL[,URL...] WINDOW [OPTION]...\n"
		"       flightrec fleet timeline --clickhouse URL[,URL...] WINDOW [--by BY]\n"
		"Profiles of many hosts from the ClickHouse store their recorders export to\n"
		"(docs/clickhouse.md). ClickHouse adds the samples up over the window and the\n"
		"filters; attach writes the same pprof as `flightrec attach`, each sample with\n"
		"a \"host\" label (go tool pprof -tags, -tagfocus host=NAME); top prints the\n"
		"table of `flightrec top`; timeline charts each host's share step by step.\n"
		"WINDOW is --window DURATION, or --from TIME [--to TIME].\n"
		"\n"
		"  --clickhouse URL[,URL...]\n"
		"                     ClickHouse HTTP endpoints (http[s]://HOST:8123); the\n"
		"                     first that answers is asked\n"
		"  --database NAME    the database (default flightrec)\n"
		"  --user NAME        ClickHouse user (default: the server's default user)\n"
		"  --password-file F  the user's password, first line of F\n"
		"  --ca-file F        PEM CA certificates an https:// server's certificate\n"
		"                     must chain to (default: the system's CAs)\n"
		"  --window DURATION  the last 60s, 5m, 1h, ...\n"
		"  --from TIME        window start: RFC 3339 (2026-11-22T13:05:00Z) or Unix s\n"
		"  --to TIME          window end (default now)\n"
		"  --host GLOB[,...]  only hosts whose name matches (* any run, ? one character)\n"
		"  --comm NAME[,...]  only processes with these command names\n"
		"  --label KEY=VALUE  only samples the program labelled so (repeatable: all)\n"
		"  --event E          the event (default cpu; offcpu, page-faults, ...)\n"
		"  --timeout DURATION longest a query may run (default 60s)\n"
		"  -o, --output FILE  (attach) where to write the profile\n"
		"  -n N               (top) how many functions (default 20)\n"
		"  --sort flat|cum    (top) order by flat (default) or cum\n"
		"  --by host          (top) one table per host; (timeline) a line per host\n"
		"                     (default), or --by comm: per command name\n"
		"  --step DURATION    (timeline) one row per step (default: the window / 60,\n"
		"                     rounded; the exporter's batch, 10s, is the finest)\n"
		"  --top N            (timeline) groups shown, the rest is \"other\" (default 8)\n"
		"  --json             (top, timeline) the JSON form of flightrec top or timeline\n"
		"  -h, --help         show this help\n"
		"\n"
		"Exit status: 0 success, 1 failure (also: no samples in the window), 2 usage.\n"
		"Examples:\n"
		"  flightrec fleet attach --clickhouse http://ch1:8123 --window 1h \\\n"
		"      --host 'web-*' -o fleet.pb.gz && go tool pprof -tags fleet.pb.gz\n"
		"  flightrec fleet top --clickhouse http://ch1:8123 --window 10m --by host\n"
		"  flightrec fleet timeline --clickhouse http://ch1:8123 --window 1h\n");
}

static int usage_error(const struct fleet_args *a, const char *what, const char *arg)
{
	fprintf(stderr, "%s: %s%s%s%s (see flightrec fleet --help)\n", a->cmd, what,
		arg ? " \"" : "", arg ? arg : "", arg ? "\"" : "");
	return EXIT_USAGE;
}

/* --clickhouse URL[,URL...]: http:// or https://, no query string. */
static int take_urls(struct fleet_args *a, const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int ret = 0;

	if (!copy)
		return usage_error(a, "out of memory", NULL);
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		size_t n = strlen(tok);

		while (n && tok[n - 1] == '/')
			tok[--n] = '\0';
		if ((strncmp(tok, "http://", 7) != 0 && strncmp(tok, "https://", 8) != 0) ||
		    strpbrk(tok, "?# \t\r\n") || n > 1024)
			ret = usage_error(a, "--clickhouse: expected http[s]://HOST[:PORT], got",
					  tok);
		else if (a->nurls == FLEET_MAX_URLS)
			ret = usage_error(a, "--clickhouse: too many URLs (at most 8)", NULL);
		else if (!(a->urls[a->nurls++] = strdup(tok)))
			ret = usage_error(a, "out of memory", NULL);
	}
	free(copy);
	return ret;
}

static int take_hosts(struct fleet_args *a, const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int ret = 0;

	if (!copy)
		return usage_error(a, "out of memory", NULL);
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		if (strlen(tok) >= FLEET_HOST_MAX || a->nhosts == FLEET_MAX_HOSTS)
			ret = usage_error(a, "--host: at most 32 globs of at most 255 bytes, got",
					  tok);
		else
			snprintf(a->hosts[a->nhosts++], FLEET_HOST_MAX, "%s", tok);
	}
	if (!ret && !a->nhosts)
		ret = usage_error(a, "--host: expected a host name or glob like web-*, got", arg);
	free(copy);
	return ret;
}

/* The checks of options that go together, and the window. Returns 0 or
 * EXIT_USAGE. */
static int finish(struct fleet_args *a, const char *timeout_s)
{
	struct timespec ts;
	int64_t now;
	int ret;

	if (!a->nurls)
		return usage_error(a, "--clickhouse URL is required, e.g. http://127.0.0.1:8123",
				   NULL);
	if (!a->database)
		a->database = "flightrec";
	if (!fr_sql_name_ok(a->database))
		return usage_error(a, "--database: expected a name of [A-Za-z0-9_], got",
				   a->database);
	a->timeout_ns = 60 * FR_NS_PER_S;
	if (timeout_s && (fr_parse_duration(timeout_s, &a->timeout_ns) < 0 ||
			  a->timeout_ns < FR_NS_PER_S || a->timeout_ns > 3600 * FR_NS_PER_S))
		return usage_error(a, "--timeout: expected a duration of 1s..1h, got", timeout_s);
	if (a->q.targets.npids || a->q.targets.cgroup[0] || a->q.targets.children ||
	    a->q.targets.label_key[0] || a->q.by_cpu || a->q.format || a->q.hz || a->q.nrates ||
	    a->q.diff)
		return usage_error(a,
				   "--pid, --children, --cgroup, --label-key, --by-cpu, --format, "
				   "--hz and --diff are for a single host's recorder",
				   NULL);
	if (a->q.nevents > 1)
		return usage_error(a, "--event: one event at a time", NULL);
	if ((ret = fr_query_finish(a->cmd, &a->q)))
		return ret;
	a->event = a->q.nevents ? a->q.events[0] : 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = fr_ns_from_timespec(&ts);
	/* --window ends now; --from without --to too. */
	a->t1 = a->q.window_s || !a->q.to_s ? now : a->q.to;
	a->t0 = a->q.window_s ? now - a->q.window : a->q.from;
	if (a->t1 <= a->t0)
		return usage_error(a, "--from is in the future", NULL);
	return 0;
}

/* Options the fleet commands take; returns 0 or EXIT_USAGE. */
static int parse(struct fleet_args *a, int argc, char **argv)
{
	static const struct option longopts[] = {
		FR_QUERY_LONGOPTS,
		{"clickhouse", required_argument, NULL, OPT_CLICKHOUSE},
		{"database", required_argument, NULL, OPT_DATABASE},
		{"user", required_argument, NULL, OPT_USER},
		{"password-file", required_argument, NULL, OPT_PASSWORD_FILE},
		{"ca-file", required_argument, NULL, OPT_CA_FILE},
		{"host", required_argument, NULL, OPT_HOST},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"by", required_argument, NULL, OPT_BY},
		{"step", required_argument, NULL, OPT_STEP},
		{"top", required_argument, NULL, OPT_TOP},
		{"json", no_argument, NULL, FR_OPT_JSON},
		{"sort", required_argument, NULL, FR_OPT_SORT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *timeout_s = NULL;
	int c, ret;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:n:h", longopts, NULL)) != -1) {
		if ((ret = fr_query_opt(a->cmd, c, optarg, &a->q)) == 1)
			continue;
		if (ret == EXIT_USAGE)
			return ret;
		switch (c) {
		case OPT_CLICKHOUSE:
			if ((ret = take_urls(a, optarg)))
				return ret;
			break;
		case OPT_DATABASE: a->database = optarg; break;
		case OPT_USER: a->user = optarg; break;
		case OPT_PASSWORD_FILE: a->password_file = optarg; break;
		case OPT_CA_FILE: a->ca_file = optarg; break;
		case OPT_HOST:
			if ((ret = take_hosts(a, optarg)))
				return ret;
			break;
		case OPT_TIMEOUT: timeout_s = optarg; break;
		case OPT_BY:
			if (strcmp(optarg, "host") != 0 && strcmp(optarg, "comm") != 0)
				return usage_error(a, "--by: expected host or comm, got", optarg);
			a->by_s = optarg;
			break;
		case OPT_STEP: a->step_s = optarg; break;
		case OPT_TOP: a->top_s = optarg; break;
		case FR_OPT_JSON: a->json = 1; break;
		case FR_OPT_SORT: a->sort_s = optarg; break;
		case 'n': a->limit_s = optarg; break;
		case 'h': usage(stdout); return -1;
		default:
			return usage_error(a, "unknown option or missing value:", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error(a, "unexpected argument", argv[optind]);
	return finish(a, timeout_s);
}

static int fleet_attach(struct fleet_args *a)
{
	struct fr_fleet_pprof_stats st = {0};
	struct fr_cli_output out = {.fd = -1};
	char size[32], dur[32];
	uint64_t written = 0;
	struct stat sb;
	int ret;

	if (a->limit_s || a->sort_s || a->by_s || a->step_s || a->top_s || a->json)
		return usage_error(a,
				   "-n, --sort, --by, --step, --top and --json are not for attach",
				   NULL);
	if (!a->q.out_s)
		return usage_error(a, "-o FILE is required, e.g. -o fleet.pb.gz", NULL);
	if (fr_cli_output_open(&out, a->q.out_s, FR_PROFILE_PPROF) < 0)
		return 1;
	ret = fleet_profile(a, out.fd, &st);
	/* The file's size, as attach says it (st.raw_bytes is before gzip). */
	if (fstat(out.fd, &sb) == 0 && S_ISREG(sb.st_mode))
		written = (uint64_t)sb.st_size;
	if (fr_cli_output_commit(&out, ret == 0) < 0)
		ret = 1;
	if (ret)
		return ret;
	fprintf(stderr, "%s: wrote %s: %llu samples from %llu hosts, %llu stacks, %s window (%s)\n",
		a->cmd, a->q.out_s, (unsigned long long)st.samples, (unsigned long long)st.hosts,
		(unsigned long long)st.stacks, fr_format_duration(a->t1 - a->t0, dur, sizeof(dur)),
		fr_format_size_human(written, size, sizeof(size)));
	return 0;
}

static int fleet_top(struct fleet_args *a)
{
	struct fr_fleet_pprof_stats st = {0};
	char path[64], *argv[12];
	int fd, ret, argc = 0;

	if (a->q.out_s)
		return usage_error(a, "shows a table; -o is for fleet attach", NULL);
	if (a->step_s || a->top_s)
		return usage_error(a, "--step and --top are for fleet timeline", NULL);
	if (a->by_s && strcmp(a->by_s, "host") != 0)
		return usage_error(a, "--by: top splits by host only", NULL);
	fd = memfd_create("flightrec-fleet-top", MFD_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot create a temporary file: %s\n", a->cmd,
			strerror(errno));
		return 1;
	}
	ret = fleet_profile(a, fd, &st);
	if (ret) {
		close(fd);
		return ret;
	}
	/* top reads it as a file, as it reads any profile. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	argv[argc++] = "top";
	argv[argc++] = path;
	if (a->limit_s) {
		argv[argc++] = "-n";
		argv[argc++] = (char *)a->limit_s;
	}
	if (a->sort_s) {
		argv[argc++] = "--sort";
		argv[argc++] = (char *)a->sort_s;
	}
	if (a->by_s) {
		argv[argc++] = "--by";
		argv[argc++] = "label:host";
	}
	if (a->json)
		argv[argc++] = "--json";
	argv[argc] = NULL;
	ret = fr_top_main(argc, argv);
	close(fd);
	return ret;
}

static int fleet_timeline_main(struct fleet_args *a)
{
	int64_t step = 0;
	uint64_t top = 0;

	if (a->q.out_s || a->limit_s || a->sort_s)
		return usage_error(a, "-o, -n and --sort are not for timeline", NULL);
	if (a->step_s && (fr_parse_duration(a->step_s, &step) < 0 || step < 1000000))
		return usage_error(a, "--step: expected a duration of at least 1ms like 1m, got",
				   a->step_s);
	if (a->top_s && fr_parse_u64(a->top_s, 1, FR_TIMELINE_TOP_MAX, &top) < 0)
		return usage_error(a, "--top: expected a number of groups of 1..32, got", a->top_s);
	return fleet_timeline(a, a->by_s ? a->by_s : "host", step, (uint32_t)top, a->json);
}

int fr_cmd_fleet(int argc, char **argv)
{
	struct fleet_args *a;
	char cmd[64];
	int ret;

	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	if (strcmp(argv[1], "attach") != 0 && strcmp(argv[1], "top") != 0 &&
	    strcmp(argv[1], "timeline") != 0) {
		fprintf(stderr,
			"flightrec fleet: unknown subcommand \"%s\" (attach, top, timeline; see "
			"flightrec fleet --help)\n",
			argv[1]);
		return EXIT_USAGE;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		fprintf(stderr, "flightrec fleet: out of memory\n");
		return 1;
	}
	snprintf(cmd, sizeof(cmd), "flightrec fleet %s", argv[1]);
	a->cmd = cmd;
	ret = parse(a, argc - 1, argv + 1);
	if (ret < 0) {
		ret = 0; /* --help */
	} else if (ret == 0) {
		if (fr_http_global_init() < 0) {
			fprintf(stderr, "%s: cannot initialize the HTTP client\n", a->cmd);
			ret = 1;
		} else {
			ret = strcmp(argv[1], "attach") == 0 ? fleet_attach(a)
			      : strcmp(argv[1], "top") == 0  ? fleet_top(a)
							     : fleet_timeline_main(a);
		}
	}
	for (uint32_t i = 0; i < a->nurls; i++)
		free(a->urls[i]);
	free(a);
	return ret;
}
