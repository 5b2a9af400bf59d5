/* flightrec timeline: which minute had the CPU (or off-CPU waits, or any
 * recorded event), per top process, comm, cgroup or application label,
 * asked of the running recorder. The recorder writes the timeline's JSON
 * form (core/query/timeline.h) into a memory file this command passed;
 * it is printed as it is (--json) or drawn (tools/timeline_view.c).
 */
#include "tools/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "ipc/client.h"
#include "ipc/msg_timeline.h"
#include "ipc/paths.h"
#include "tools/query.h"
#include "tools/timeline.h"

static const char *prog = FR_CLI_PROG;

static void usage_timeline(FILE *f)
{
	fprintf(f,
		"Usage: flightrec timeline [--window DURATION | --from TIME [--to TIME]]\n"
		"                          [--event E] [--pid PID,...] [--comm NAME,...]\n"
		"                          [--by BY] [--step DURATION] [--top N]\n"
		"                          [--json] [--socket PATH]\n"
		"Find the minute: per step of a window, how much of an event each of the top\n"
		"processes had, from what the recorder holds; then attach to that minute.\n"
		"\n"
		"  --window DURATION  the last DURATION (default 1h)\n"
		"  --from TIME        window start: RFC 3339 (2026-11-22T13:05:00Z) or Unix\n"
		"                     seconds\n"
		"  --to TIME          window end (default: now)\n"
		"  --event E          cpu (default: CPU time), offcpu (time waiting, spread over\n"
		"                     the steps it lasted; wakeup: the waits another thread\n"
		"                     or an interrupt ended, runqueue: waits for a CPU, the\n"
		"                     same way), throttled (cgroups' CPU throttling),\n"
		"                     memory-pressure, cpu-pressure, io-pressure (the\n"
		"                     machine's stall time: PSI), or any recorded event\n"
		"                     (its count)\n"
		"  --pid PID,...      only these processes\n"
		"  --comm NAME,...    only processes so named when sampled\n"
		"  --by BY            process (default: COMM (PID); throttled: cgroup), comm,\n"
		"                     cgroup, or label:KEY\n"
		"                     (an application label; label:cpu for the CPU)\n"
		"  --step DURATION    one row per step (default: the window / 60, rounded to\n"
		"                     1s, 2s, 5s, 10s, 15s, 30s, 1m, ...); steps start at\n"
		"                     multiples of the step (UTC)\n"
		"  --top N            groups listed (default 8, at most %d); the rest is\n"
		"                     \"other\"\n"
		"  --json             the timeline as JSON: groups' values per step\n"
		"  --socket PATH      the recorder's socket\n"
		"  -h, --help         show this help\n"
		"\n"
		"The chart: one row per step (its start, UTC), a bar stacked by group (each\n"
		"group's mark in the legend, '.' for other), and the step's average CPUs busy\n"
		"(cpu), threads waiting (offcpu, wakeup, runqueue) or count; the legend gives\n"
		"each group's total.\n"
		"A row ending '!' is a step in which the recorder lost samples of the event\n"
		"(machine-wide; a line under the chart counts the window's).\n"
		"\n"
		"Examples:\n"
		"  flightrec timeline --window 1h\n"
		"  flightrec timeline --window 10m --step 10s --by comm\n"
		"  flightrec timeline --event offcpu --by cgroup --json\n",
		FR_TIMELINE_TOP_MAX);
}

/* The request of the options: the window as given (the recorder ends it
 * at its now), the event, the grouping. */
static void make_req(const struct fr_query_args *q, const struct fr_tl_args *a,
		     struct fr_ipc_timeline_req *r)
{
	memset(r, 0, sizeof(*r));
	if (q->window_s)
		r->window_ns = q->window;
	r->has_from = q->from_s != NULL;
	r->from_ns = q->from;
	r->has_to = q->to_s != NULL;
	r->to_ns = q->to;
	r->step_ns = a->req.step_ns;
	r->event = q->nevents ? q->events[0] : FR_EVENT_CPU;
	r->by = fr_tl_by(a, r->event);
	memcpy(r->label_key, a->req.label_key, sizeof(r->label_key));
	r->top = a->req.top;
	fr_targets_processes(&r->targets, &q->targets);
}

/* Asks the recorder for the timeline into `fd`. Returns 0 with *reply
 * filled, or 1 after saying why not. */
static int ask(const char *socket_path, const struct fr_ipc_timeline_req *q, int fd,
	       struct fr_ipc_timeline_reply *reply)
{
	cJSON *req = fr_ipc_timeline_req_encode(q), *resp = NULL;
	char err[512] = "";
	int ret = 1;

	if (!req || fr_cli_request(socket_path, req, fd, " timeline", &resp) != 0)
		goto out;
	if (fr_ipc_timeline_reply_decode(resp, reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s timeline: %s\n", prog, err);
		goto out;
	}
	ret = 0;
out:
	cJSON_Delete(req);
	cJSON_Delete(resp);
	return ret;
}

/* The whole memory file `fd` as a string. NULL after saying why not. */
static char *read_all(int fd)
{
	char *text;
	size_t len;
	int ret = fr_read_whole(fd, 64 << 20, &text, &len);

	if (ret < 0 && ret != -ENOMEM)
		fprintf(stderr, "%s timeline: the answer cannot be read\n", prog);
	return text;
}

/* Parses the options. Returns 0, or the exit status when done. */
static int parse(int argc, char **argv, struct fr_query_args *q, struct fr_tl_args *a, int *json,
		 const char **socket_s)
{
	static const struct option longopts[] = {
		{"window", required_argument, NULL, FR_OPT_WINDOW},
		{"from", required_argument, NULL, FR_OPT_FROM},
		{"to", required_argument, NULL, FR_OPT_TO},
		{"event", required_argument, NULL, FR_OPT_EVENT},
		{"pid", required_argument, NULL, FR_OPT_PID},
		{"comm", required_argument, NULL, FR_OPT_COMM},
		FR_TIMELINE_LONGOPTS,
		{"json", no_argument, NULL, FR_OPT_JSON},
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, ret;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c != FR_OPT_JSON && c != FR_OPT_SOCKET && c != 'h' &&
		    (ret = fr_query_opt("flightrec timeline", c, optarg, q)) != 0) {
			if (ret == 1)
				continue;
			return ret;
		}
		if ((ret = fr_tl_opt("flightrec timeline", c, optarg, a)) == 1)
			continue;
		if (ret)
			return ret;
		switch (c) {
		case FR_OPT_JSON: *json = 1; break;
		case FR_OPT_SOCKET: *socket_s = optarg; break;
		case 'h': usage_timeline(stdout); return -1;
		default: return fr_cli_bad_option("timeline", argv);
		}
	}
	if (optind < argc) {
		fprintf(stderr,
			"%s timeline: unexpected argument \"%s\" (see %s timeline --help)\n", prog,
			argv[optind], prog);
		return EXIT_USAGE;
	}
	if (q->nevents > 1) {
		fprintf(stderr, "%s timeline: one --event at a time\n", prog);
		return EXIT_USAGE;
	}
	if (!q->window_s && !q->from_s)
		q->window_s = "1h";
	return fr_query_finish("flightrec timeline", q) ? EXIT_USAGE : 0;
}

int fr_cmd_timeline(int argc, char **argv)
{
	static struct fr_query_args q;
	static struct fr_tl_args a;
	struct fr_ipc_timeline_req r;
	struct fr_ipc_timeline_reply reply;
	const char *socket_s = NULL;
	char *socket_path = NULL, *text = NULL;
	int json = 0, status, fd = -1;

	status = parse(argc, argv, &q, &a, &json, &socket_s);
	if (status)
		return status < 0 ? 0 : status;
	status = 1;
	make_req(&q, &a, &r);
	socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	if (!socket_path)
		goto out;
	fd = memfd_create("flightrec-timeline", MFD_CLOEXEC);
	if (fd < 0) {
		perror("flightrec timeline: memfd_create");
		goto out;
	}
	if (ask(socket_path, &r, fd, &reply) != 0)
		goto out;
	for (uint32_t i = 0; i < reply.nwarnings; i++)
		fprintf(stderr, "%s: warning: %s\n", prog, reply.warnings[i]);
	text = read_all(fd);
	if (text)
		status = fr_tl_print_suggest(stdout, text, json, "flightrec attach");
out:
	if (fd >= 0)
		close(fd);
	free(text);
	free(socket_path);
	return status;
}
