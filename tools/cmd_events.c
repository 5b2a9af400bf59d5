/* flightrec events: what happened, not where the CPU went: the crashes
 * (with the faulting thread's stack), OOM kills, execs and exits the
 * recorder's black box holds, and the machine's pressure and cgroups'
 * throttling, asked of the running recorder (which writes them into a
 * memory file this command passed, as text or JSON lines:
 * core/query/events.h) or, with `flightrec dump --ring FILE --events`,
 * read from a ring file (fr_cli_events_from_ring()).
 */
#include "tools/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/query/events.h"
#include "core/store/ring.h"
#include "core/util/fs.h"
#include "ipc/client.h"
#include "ipc/msg_events.h"
#include "ipc/paths.h"
#include "tools/query.h"

static const char *prog = FR_CLI_PROG;

/* Options of events alone, numbered past tools/query.h's. */
enum { OPT_TYPE = 1100 };

static void usage_events(FILE *f)
{
	fprintf(f,
		"Usage: flightrec events [--window DURATION | --from TIME [--to TIME]]\n"
		"                        [--pid PID,... | --comm NAME,... | --cgroup PATH]\n"
		"                        [--type TYPE,...] [--json] [--socket PATH]\n"
		"What happened: the crashes (signal, address, the faulting thread's stack), OOM\n"
		"kills, execs and exits the recorder holds, and the machine's memory, CPU and\n"
		"I/O pressure and cgroups' CPU throttling, one line per event in time order.\n"
		"\n"
		"  --window DURATION  the last DURATION (default 1h)\n"
		"  --from TIME        window start: -10m, 13:05 (local), RFC 3339 or\n"
		"                     @UNIXSECONDS (see attach --help)\n"
		"  --to TIME          window end (default: now)\n"
		"  --pid PID[,PID...] only these processes\n"
		"  --comm NAME[,...]  only processes with these command names\n"
		"  --cgroup PATH      only processes in this cgroup v2 path or below it\n"
		"  --type TYPE[,...]  only these: crash, oom_kill (or oom), exec, exit,\n"
		"                     memory-pressure, cpu-pressure, io-pressure, pressure (the\n"
		"                     three), throttled (default: all)\n"
		"  --json             JSON lines: one object per event (every second of the\n"
		"                     series), see flightrec-events(1)\n"
		"  --socket PATH      the recorder's socket\n"
		"  -h, --help         show this help\n"
		"\n"
		"Times are UTC. A crash's stack follows its line, innermost frame first. The\n"
		"pressure and throttling series (once a second) are summed up in one line\n"
		"each, unless --type names them: then each second has its line. The machine's\n"
		"pressure belongs to no process: --pid, --comm and --cgroup leave it out\n"
		"unless --type names it. A user who is not root sees the events of their own\n"
		"processes, and the machine's pressure.\n"
		"\n"
		"Examples:\n"
		"  flightrec events --window 10m\n"
		"  flightrec events --type crash,oom_kill --window 1d\n"
		"  flightrec events --comm postgres --json\n"
		"  flightrec dump --ring /var/lib/flightrec/ring --events --window 10m\n");
}

int fr_cli_events_type_opt(const char *cmd, const char *arg, uint64_t *types)
{
	char err[512];

	if (fr_events_parse_types(arg, types, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: --type: %s\n", cmd, err);
		return EXIT_USAGE;
	}
	return 0;
}

/* Whether `types` names one of the series: then text lists each second. */
static int names_series(uint64_t types)
{
	return (types >> FR_EVENT_MEM_PRESSURE & 1) || (types >> FR_EVENT_CPU_PRESSURE & 1) ||
	       (types >> FR_EVENT_IO_PRESSURE & 1) || (types >> FR_EVENT_THROTTLED & 1);
}

int fr_cli_events_from_ring(struct fr_ring *ring, int64_t t0, int64_t t1,
			    const struct fr_targets *targets, uint64_t types, int json,
			    const char *symbol_cache, const char *const *debug_dirs,
			    uint32_t ndebug_dirs)
{
	struct fr_events_request req = {
		.t0 = t0,
		.t1 = t1,
		.types = types,
		.types_named = types != 0,
		.targets = *targets,
		.symbolize = 1,
		.symbol_cache = symbol_cache,
		.debug_dirs = debug_dirs,
		.ndebug_dirs = ndebug_dirs,
	};
	struct fr_events *e = NULL;
	char err[512];
	int ret;

	ret = fr_events_collect(ring, &req, &e, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "%s dump: %s\n", prog, err);
		return 1;
	}
	if (e->chunks_skipped)
		fprintf(stderr, "%s: warning: %llu damaged chunks of the window were skipped\n",
			prog, (unsigned long long)e->chunks_skipped);
	ret = fr_events_write(stdout, e,
			      (json ? FR_EVENTS_JSON : 0) |
				      (names_series(types) ? FR_EVENTS_SERIES : 0));
	if (!json && !e->n)
		fprintf(stderr, "%s dump: no event in the window\n", prog);
	fr_events_free(e);
	return ret < 0 || fflush(stdout) != 0 ? 1 : 0;
}

/* Parses the options. Returns 0, or the exit status when done. */
static int parse(int argc, char **argv, struct fr_query_args *q, uint64_t *types, int *json,
		 const char **socket_s)
{
	static const struct option longopts[] = {
		{"window", required_argument, NULL, FR_OPT_WINDOW},
		{"from", required_argument, NULL, FR_OPT_FROM},
		{"to", required_argument, NULL, FR_OPT_TO},
		{"pid", required_argument, NULL, FR_OPT_PID},
		{"comm", required_argument, NULL, FR_OPT_COMM},
		{"cgroup", required_argument, NULL, FR_OPT_CGROUP},
		{"type", required_argument, NULL, OPT_TYPE},
		{"json", no_argument, NULL, FR_OPT_JSON},
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, ret;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case FR_OPT_WINDOW:
		case FR_OPT_FROM:
		case FR_OPT_TO:
		case FR_OPT_PID:
		case FR_OPT_COMM:
		case FR_OPT_CGROUP:
			ret = fr_query_opt("flightrec events", c, optarg, q);
			if (ret != 1)
				return ret ? ret : EXIT_USAGE;
			break;
		case OPT_TYPE:
			if (fr_cli_events_type_opt("flightrec events", optarg, types))
				return EXIT_USAGE;
			break;
		case FR_OPT_JSON: *json = 1; break;
		case FR_OPT_SOCKET: *socket_s = optarg; break;
		case 'h': usage_events(stdout); return -1;
		default: return fr_cli_bad_option("events", argv);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s events: unexpected argument \"%s\" (see %s events --help)\n",
			prog, argv[optind], prog);
		return EXIT_USAGE;
	}
	if (!q->window_s && !q->from_s && !q->to_s)
		q->window_s = "1h";
	return fr_query_finish("flightrec events", q) ? EXIT_USAGE : 0;
}

int fr_cmd_events(int argc, char **argv)
{
	static struct fr_query_args q;
	struct fr_ipc_events_req r = {0};
	struct fr_ipc_events_reply reply;
	const char *socket_s = NULL;
	char *socket_path = NULL, *text = NULL, err[512];
	cJSON *req = NULL, *resp = NULL;
	size_t len = 0;
	int json = 0, status, fd = -1;

	status = parse(argc, argv, &q, &r.types, &json, &socket_s);
	if (status)
		return status < 0 ? 0 : status;
	status = 1;
	if (q.window_s)
		r.window_ns = q.window;
	r.has_from = q.from_s != NULL;
	r.from_ns = q.from;
	r.has_to = q.to_s != NULL;
	r.to_ns = q.to;
	r.targets = q.targets;
	r.json = json;
	r.series = names_series(r.types);
	socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	if (!socket_path)
		goto out;
	fd = memfd_create("flightrec-events", MFD_CLOEXEC);
	if (fd < 0) {
		perror("flightrec events: memfd_create");
		goto out;
	}
	req = fr_ipc_events_req_encode(&r);
	if (!req || fr_cli_request(socket_path, req, fd, " events", &resp) != 0)
		goto out;
	if (fr_ipc_events_reply_decode(resp, &reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s events: %s\n", prog, err);
		goto out;
	}
	for (uint32_t i = 0; i < reply.nwarnings; i++)
		fprintf(stderr, "%s: warning: %s\n", prog, reply.warnings[i]);
	if (fr_read_whole(fd, 256 << 20, &text, &len) < 0) {
		fprintf(stderr, "%s events: the answer cannot be read\n", prog);
		goto out;
	}
	if (len && fwrite(text, 1, len, stdout) != len)
		goto out;
	if (!json && !reply.events)
		fprintf(stderr, "%s events: no event in the window\n", prog);
	status = fflush(stdout) != 0;
out:
	if (fd >= 0)
		close(fd);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	free(text);
	free(socket_path);
	return status;
}
