/* flightrec top: a readable table of the functions that cost the most, for
 * a box without pprof, in the spirit of `go tool pprof -top`: the command
 * line. The aggregation is top_agg.c, the table and JSON top_print.c, the
 * reading of a file or of the recorder's answer top_input.c.
 */
#include "tools/top/top.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/parse.h"
#include "tools/query.h"

static const char *prog = "flightrec top";

/* Options of top alone, after those tools/query.h numbers. */
enum { FR_OPT_BY = 1024 };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: flightrec top FILE [-n N] [--sort flat|cum] [--by GROUP] [--json]\n"
		"       flightrec top --window DURATION | --from TIME [--to TIME] [OPTION]...\n"
		"Show the functions that cost the most in a pprof profile (gzip'ed or plain),\n"
		"or in a window the running recorder holds, as a table: flat (the function\n"
		"itself), cum (with what it calls), their shares of the total, samples, and\n"
		"the process each function ran in most (\"+N\": in N more processes).\n"
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
		"  --event E[,E...]   the events to ask for; the table shows the first, and\n"
		"                     names the others with their own totals (with FILE:\n"
		"                     the one event of the profile to show)\n"
		"                     (default cpu; offcpu shows where threads waited;\n"
		"                     wakeup the code that woke them, valued by their\n"
		"                     wait; runqueue their waits for a CPU; alloc the\n"
		"                     bytes allocated, heap the bytes in use)\n"
		"  --diff             with --event heap: the heap's growth over the window\n"
		"  --hz N             samples per second per CPU to count\n"
		"  --allow-empty      a window with no sample (filters that matched nothing,\n"
		"                     a window outside the ring) is no failure\n"
		"  --allow-loss       a window in which the recorder lost over 1%% of an\n"
		"                     event's samples or stalled is no failure: warn, exit 0\n"
		"  --socket PATH      the recorder's socket\n"
		"  -n N               how many functions to show (default 20)\n"
		"  --sort flat|cum    order by flat or cum (default flat; for wakeup and\n"
		"                     runqueue cum, without the kernel's functions)\n"
		"  --by GROUP         a table per process, comm, cgroup or label:KEY (also\n"
		"                     with FILE), the groups with the most first\n"
		"  --json             the rows as a JSON array (values, percents, unit,\n"
		"                     processes; \"group\" with --by) for scripts\n"
		"  -h, --help         show this help\n"
		"\n"
		"Examples:\n"
		"  flightrec top --window 60s\n"
		"  flightrec top --window 5m --event offcpu --comm postgres\n"
		"  flightrec top --window 5m --event wakeup --comm postgres\n"
		"  flightrec top --window 60s --event alloc\n"
		"  flightrec top incident.pb.gz -n 40 --sort cum\n"
		"  flightrec top --window 60s --by label:endpoint\n"
		"  flightrec top --window 5m --by process -n 5 --json\n");
}

/* ---- arguments ---- */

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see flightrec top --help)\n");
	return EXIT_USAGE;
}

/* An option of the table (--sort, --json, --by, -n) into `o`. Returns 0,
 * or -1 after saying what is wrong. */
static int table_opt(int c, const char *arg, struct fr_top_opts *o)
{
	uint64_t limit;

	switch (c) {
	case FR_OPT_SORT:
		if (strcmp(arg, "flat") != 0 && strcmp(arg, "cum") != 0) {
			usage_error("--sort: expected flat or cum, got \"%s\"", arg);
			return -1;
		}
		o->sort_cum = strcmp(arg, "cum") == 0;
		return 0;
	case FR_OPT_JSON: o->json = 1; return 0;
	case FR_OPT_BY:
		if (fr_top_parse_by(arg, o) < 0) {
			usage_error("--by: expected process, comm, cgroup or label:KEY, got \"%s\"",
				    arg);
			return -1;
		}
		return 0;
	default:
		if (fr_parse_u64(arg, 1, 1000000, &limit) < 0) {
			usage_error("-n: expected a count of 1..1000000, got \"%s\"", arg);
			return -1;
		}
		o->limit = (size_t)limit;
		return 0;
	}
}

/* Says what is wrong with the option getopt stopped at. */
static void bad_option(char **argv)
{
	/* A long option with optopt set lacks its value (see
	 * fr_cli_bad_option()). */
	if (optopt && strncmp(argv[optind - 1], "--", 2) == 0)
		fprintf(stderr, "%s: %.*s %s (see flightrec top --help)\n", prog,
			(int)strcspn(argv[optind - 1], "="), argv[optind - 1],
			strchr(argv[optind - 1], '=') ? "takes no value" : "needs a value");
	else if (optopt && optopt < 256)
		fprintf(stderr,
			"%s: option -%c is unknown or needs a value "
			"(see flightrec top --help)\n",
			prog, optopt);
	else
		usage_error("unknown option or missing value: %s", argv[optind - 1]);
}

/* The tables of a saved profile FILE, which takes no recorder option. */
static int show_file(const char *file, const struct fr_query_args *q, const char *socket_s,
		     struct fr_top_opts *o)
{
	char name[FR_EVENT_NAME_MAX];

	/* --event E: the column of E (a profile of cpu and offcpu) */
	if (q->nevents > 1) {
		usage_error("with FILE, --event names the one event to show%s", "");
		return EXIT_USAGE;
	}
	if (q->nevents)
		o->event = fr_event_format(q->events[0], name, sizeof(name));
	if (q->window_s || q->from_s || q->to_s || q->targets.npids || socket_s ||
	    q->targets.ncomms || q->targets.cgroup[0] || (q->hz || q->nrates) ||
	    q->targets.children || q->targets.nlabels) {
		usage_error("give either FILE or --window/--from, not both%s", "");
		return EXIT_USAGE;
	}
	return fr_top_show_file(file, o);
}

int fr_top_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		FR_QUERY_LONGOPTS,
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"sort", required_argument, NULL, FR_OPT_SORT},
		{"json", no_argument, NULL, FR_OPT_JSON},
		{"by", required_argument, NULL, FR_OPT_BY},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *socket_s = NULL, *file = NULL;
	struct fr_query_args *q = calloc(1, sizeof(*q));
	struct fr_top_opts o = {.limit = 20, .sort_cum = -1};
	int c, ret = EXIT_USAGE;

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
		case FR_OPT_JSON:
		case FR_OPT_BY:
		case 'n':
			if (table_opt(c, optarg, &o) < 0)
				goto out;
			break;
		case 'h':
			usage(stdout);
			ret = 0;
			goto out;
		default: bad_option(argv); goto out;
		}
	}
	ret = EXIT_USAGE;
	/* --label-key KEY, as before --by: a table per value */
	if (q->targets.label_key[0] && o.by == FR_TOP_BY_NONE) {
		o.by = FR_TOP_BY_LABEL;
		o.by_key = q->targets.label_key;
	}
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
		ret = show_file(file, q, socket_s, &o);
		goto out;
	}
	/* The recorder writes application labels only when asked for a key */
	if (o.by == FR_TOP_BY_LABEL && !q->targets.label_key[0] && !q->by_cpu) {
		/* Messages about the key name --by label:KEY, as typed */
		if (strcmp(o.by_key, "cpu") == 0) {
			q->by_cpu = 1;
		} else if (fr_targets_set_label_key(&q->targets, o.by_key) < 0) {
			fprintf(stderr,
				"%s: --by label:KEY: expected a label key of 1..%d characters, "
				"got \"%s\" (see flightrec top --help)\n",
				prog, FR_LIMIT_LABEL_LEN - 1, o.by_key);
			goto out;
		}
		o.by_sets_label_key = 1;
	}
	ret = fr_query_finish(prog, q);
	if (ret == 0)
		ret = fr_query_refuse_series(prog, q);
	if (ret == 0)
		ret = fr_top_show_window(q, socket_s, &o);
out:
	free(q);
	return ret;
}