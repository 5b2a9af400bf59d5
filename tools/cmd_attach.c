/* flightrec attach: a profile of a window into a file, or with --follow one
 * profile per window for as long as it runs. The file is written under a
 * temporary name next to the target and renamed into place only when the
 * recorder reports success: a failed attach leaves no file, a reader
 * never sees a partial one. */
#include "tools/cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/store/sample.h"
#include "core/util/time.h"
#include "ipc/client.h"
#include "ipc/msg.h"
#include "ipc/proto.h"
#include "tools/query.h"

static const char *prog = FR_CLI_PROG;

static void usage_attach(FILE *f)
{
	fprintf(f,
		"Usage: flightrec attach --window DURATION [OPTION]...\n"
		"       flightrec attach --from TIME [--to TIME] [OPTION]...\n"
		"       flightrec attach --since-last NAME [OPTION]...\n"
		"Write a gzip'ed pprof profile of the samples the recorder holds for a window\n"
		"of time: --window 60s is the last 60 seconds, up to now.\n"
		"\n"
		"  --window DURATION  500ms, 10s, 5m, 1h30m, 2m30s, ...\n"
		"  --from TIME        window start: -10m (ago), 13:05 or 13:05:00 (local time;\n"
		"                     over 5 minutes ahead is yesterday's),\n"
		"                     2026-11-24T13:05:00+01:00, @1732453500 (Unix seconds)\n"
		"  --to TIME          window end, as --from (default now)\n"
		"  -o, --output FILE  where to write; - for standard output (default\n"
		"                     flightrec-HOST-UTCTIME.pb.gz here, .folded for --format\n"
		"                     folded, never replacing a file)\n"
		"  --allow-empty      a profile with no sample (targets that matched nothing)\n"
		"                     is no failure: write it and exit 0\n"
		"  --allow-loss       a window in which the recorder lost over 1%% of an\n"
		"                     event's samples or stalled is no failure: warn, exit 0\n"
		"  --event E[,E...]   events, one value column each (default cpu): cpu, cycles,\n"
		"                     instructions, cache-references, cache-misses,\n"
		"                     branch-instructions, branch-misses, page-faults,\n"
		"                     context-switches, cpu-migrations, offcpu, raw:0xNNNN;\n"
		"                     wakeup (at the stack of the code that ended each wait\n"
		"                     of at least min_wait, valued by the wait; --pid and\n"
		"                     --comm select the woken threads) or runqueue (time\n"
		"                     runnable, waiting for a CPU);\n"
		"                     alloc (what was allocated in the window: Go's columns\n"
		"                     alloc_objects, alloc_space) or heap (alloc_* and what\n"
		"                     is in use at the window's end: inuse_objects,\n"
		"                     inuse_space), of processes that loaded libflightrec\n"
		"  --diff             with --event heap: inuse_* is the heap's growth from\n"
		"                     --from to --to (allocations minus frees), not what is in\n"
		"                     use at --to; negative where it shrank\n"
		"  --pid PID[,PID...] only these processes (all their threads)\n"
		"  --children         with --pid: also every process they started, and theirs\n"
		"  --comm NAME[,...]  only processes with these command names\n"
		"  --cgroup PATH      only processes in this cgroup v2 path or below it\n"
		"  --label KEY=VALUE  only samples the program labelled so (libflightrec;\n"
		"                     repeatable: all of them)\n"
		"  --label-key KEY    only samples with a value for this label\n"
		"  --hz N             samples per second per CPU in the profile (default: as\n"
		"                     recorded; higher rates are downsampled deterministically;\n"
		"                     with --follow, the recorder samples at least this fast)\n"
		"  --hz E=N[,E=N...]  each event at its own rate, e.g. cpu=99,page-faults=19\n"
		"                     (events named here are added to --event)\n"
		"  --label-key cpu, --by-cpu\n"
		"                     label each sample with the CPU it ran on (pprof label\n"
		"                     cpu; off by default: one row per stack and CPU)\n"
		"  --format FORMAT    pprof (default: gzip'ed pprof) or folded (collapsed\n"
		"                     stacks for flamegraph.pl, speedscope, inferno)\n"
		"  --follow           from now on, write one profile per --window into the\n"
		"                     directory -o DIR (default .) until interrupted; the\n"
		"                     windows tile time exactly, and the recorder keeps the\n"
		"                     events and --hz asked for while it runs\n"
		"  --count N          with --follow: stop after N windows\n"
		"  --since-last NAME  exactly the samples since the previous call with NAME\n"
		"                     (a cursor the recorder keeps for your user, across\n"
		"                     restarts); the first call takes --window/--from, or\n"
		"                     the whole ring; with --follow, resume from the cursor\n"
		"  --socket PATH      the recorder's socket\n"
		"  -h, --help         show this help\n"
		"\n"
		"Examples:\n"
		"  flightrec attach --window 60s -o incident.pb.gz\n"
		"  flightrec attach --from 13:05 --to 13:06 -o incident.pb.gz   # local time\n"
		"  flightrec attach --from -10m --to -5m --format folded -o - | flamegraph.pl >cpu.svg\n"
		"  flightrec attach --window 5m --pid 1234 -o api.pb.gz\n"
		"  flightrec attach --window 60s --event cpu,offcpu --comm postgres -o db.pb.gz\n"
		"  flightrec attach --window 60s --format folded -o cpu.folded\n"
		"  flightrec attach --window 60s --event alloc -o alloc.pb.gz\n"
		"  flightrec attach --window 1s --event heap -o heap.pb.gz   # in use now\n"
		"  flightrec attach --event heap --from -1h --to -5m --diff -o growth.pb.gz\n"
		"  flightrec attach --follow --window 10s --hz 999 -o /var/tmp/profiles/\n"
		"  flightrec attach --follow --count 1 --window 30s --event offcpu -o .\n"
		"  flightrec attach --window 60s --hz cpu=99,page-faults=19 -o both.pb.gz\n"
		"  flightrec attach --since-last hourly -o delta.pb.gz   # run every hour\n");
}

/* How one attach writes and judges its profile. */
struct attach_how {
	const char *path; /* NULL: a new file under the default name, printed */
	int chosen;	  /* `path` is a name of ours (--follow): replace nothing */
	enum fr_profile_format format;
	int allow_empty; /* an empty profile is no failure (--allow-empty, --follow) */
	int allow_loss;	 /* samples lost or a stall are no failure (--allow-loss) */
	int show_window; /* print the window back in UTC */
};

/* The report of an attach reply. */
static void reply_report(const struct fr_ipc_attach_reply *reply,
			 const struct fr_ipc_attach_req *ar, const struct attach_how *how,
			 struct fr_cli_report *r)
{
	fr_cli_report_from_attach(r, reply, ar);
	r->show_window = how->show_window;
}

/* Sends the attach request `ar` with a new file as `how` says and commits
 * the file when the recorder succeeds. Returns 0; 2 when the profile was
 * kept but may miss samples (the recorder could not flush, or stalled
 * within the window), after saying so; or 1 after saying why it failed
 * (a profile with no sample because the window is outside the ring or
 * the targets matched nothing is not kept, unless `how` allows it). With
 * `t0` (may be NULL), the start of the window the recorder wrote (a
 * cursor's may be earlier than asked); with `final` (may be NULL), the
 * name the kept file got (malloc'd). */
static int attach_one(int sock, const char *socket_path, const struct fr_ipc_attach_req *ar,
		      const struct attach_how *how, int64_t *t0, char **final)
{
	struct fr_cli_output out = {.fd = -1};
	struct fr_ipc_attach_reply *reply = malloc(sizeof(*reply));
	struct fr_cli_progress prog_line;
	struct fr_cli_report rep;
	cJSON *req = fr_ipc_attach_req_encode(ar), *resp = NULL;
	char err[512];
	int ret = 1, empty;

	if (!req || !reply ||
	    (how->path && !how->chosen ? fr_cli_output_open(&out, how->path, how->format)
				       : fr_cli_output_open_new(&out, how->path, how->format)) < 0)
		goto out;
	fr_cli_progress_start(&prog_line, "the recorder is building the profile");
	ret = fr_cli_call(sock, socket_path, req, out.fd, &resp);
	fr_cli_progress_stop(&prog_line);
	if (ret < 0 || fr_cli_resp_error(resp) ||
	    fr_ipc_attach_reply_decode(resp, reply, err, sizeof(err)) < 0) {
		if (ret == 0)
			fprintf(stderr, "%s: %s\n", prog,
				fr_cli_resp_error(resp) ? fr_cli_resp_error(resp) : err);
		fr_cli_output_commit(&out, 0);
		ret = 1;
		goto out;
	}
	ret = 1;
	reply_report(reply, ar, how, &rep);
	/* Before an empty window's verdict: an event not recorded, said
	 * there, may be why */
	for (uint32_t i = 0; i < reply->nwarnings; i++)
		fprintf(stderr, "%s: warning: %s\n", prog, reply->warnings[i]);
	empty = fr_cli_report_check(&rep, how->allow_empty) == FR_REPORT_EMPTY;
	if ((empty && !how->allow_empty) || fr_cli_output_commit(&out, 1) < 0) {
		fr_cli_output_commit(&out, 0);
		goto out;
	}
	rep.path = out.path;
	fr_cli_report_summary(&rep);
	if (t0)
		*t0 = reply->t0_ns;
	/* The profile is kept (it holds what the ring had), but a script
	 * must not take it for the whole window. */
	ret = fr_cli_report_missing(&rep, how->allow_loss) ? 2 : 0;
	if (reply->incomplete[0]) {
		fprintf(stderr, "%s: %s: %s\n", prog, out.path, reply->incomplete);
		ret = 2;
	}
	if (!how->path)
		printf("%s\n", out.path);
	if (final)
		*final = strdup(out.path);
out:
	fr_cli_output_free(&out);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	free(reply);
	return ret;
}

static volatile sig_atomic_t follow_stop;

static void on_follow_signal(int sig)
{
	(void)sig;
	follow_stop = 1;
}

/* Asks the recorder to hold the query's rates on this connection and
 * says what it holds. Returns 0 with *start_ns, from when on the data is
 * at these rates, or 1 after saying why not. */
static int follow_start(int sock, const char *socket_path, const struct fr_query_args *q,
			int64_t *start_ns)
{
	struct fr_ipc_consume_req cq;
	struct fr_ipc_consume_reply *reply = malloc(sizeof(*reply));
	cJSON *req, *resp = NULL;
	char name[FR_EVENT_NAME_MAX], err[512];
	int status = 1;

	fr_query_consume_req(q, &cq);
	req = fr_ipc_consume_req_encode(&cq);
	if (!req || !reply || fr_cli_call(sock, socket_path, req, -1, &resp) < 0)
		goto out;
	if (fr_cli_resp_error(resp) ||
	    fr_ipc_consume_reply_decode(resp, reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog,
			fr_cli_resp_error(resp) ? fr_cli_resp_error(resp) : err);
		goto out;
	}
	*start_ns = reply->start_ns;
	for (uint32_t i = 0; i < reply->nwarnings; i++)
		fprintf(stderr, "%s: warning: %s\n", prog, reply->warnings[i]);
	for (uint32_t i = 0; i < reply->nevents; i++)
		if (reply->events[i].recording_hz || !fr_event_has_rate(reply->events[i].event))
			fprintf(stderr, "%s: following %s at %u Hz (recording at %u Hz)\n", prog,
				fr_event_format(reply->events[i].event, name, sizeof(name)),
				reply->events[i].hz, reply->events[i].recording_hz);
		else /* a session records it in period mode */
			fprintf(stderr,
				"%s: following %s (recorded in period mode, not "
				"downsampled)\n",
				prog, fr_event_format(reply->events[i].event, name, sizeof(name)));
	status = 0;
out:
	cJSON_Delete(req);
	cJSON_Delete(resp);
	free(reply);
	return status;
}

/* Waits until the window [t0, *t1) has passed; a signal ends it early
 * (*t1 becomes now). Returns 0, or -1 when stopped before it began. */
static int follow_wait(int64_t t0, int64_t *t1)
{
	int64_t now;

	while (!follow_stop && (now = fr_now_real_ns()) < *t1) {
		int64_t left = *t1 - now;
		struct timespec ts = {.tv_sec = 0, .tv_nsec = left < 100000000 ? left : 100000000};

		nanosleep(&ts, NULL);
	}
	if (follow_stop) {
		now = fr_now_real_ns();
		if (now < *t1)
			*t1 = now;
		if (*t1 <= t0)
			return -1;
	}
	return 0;
}

/* Writes the profile of [t0, t1) into `dir`, named after the host and the
 * window's start, and prints its path. With `cursor`, the recorder starts
 * the window where the cursor stands (a resumed follow's first window
 * reaches back to the previous run's last). Returns as attach_one(). */
static int follow_window(int sock, const char *socket_path, const struct fr_query_args *q,
			 const char *dir, const char *host, int64_t t0, int64_t t1,
			 const char *cursor)
{
	struct fr_ipc_attach_req *ar = malloc(sizeof(*ar));
	char *path = NULL, *final = NULL, stamp[48];
	time_t secs = (time_t)(t0 / FR_NS_PER_S);
	size_t dlen = strlen(dir);
	struct tm tm;
	int ret = 1;

	/* "-o dir/" names dir/NAME, not dir//NAME */
	while (dlen > 1 && dir[dlen - 1] == '/')
		dlen--;
	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	if (!ar || asprintf(&path, "%.*s%sflightrec-%s-%s.%03dZ.%s", (int)dlen, dir,
			    dlen && dir[dlen - 1] == '/' ? "" : "/", host, stamp,
			    (int)(t0 / 1000000 % 1000),
			    q->format == FR_PROFILE_FOLDED ? "folded" : "pb.gz") < 0) {
		free(ar);
		return 1;
	}
	fr_query_attach_req(q, ar);
	ar->window_ns = 0;
	ar->has_from = ar->has_to = 1;
	ar->from_ns = t0;
	ar->to_ns = t1;
	if (cursor)
		snprintf(ar->since_last, sizeof(ar->since_last), "%s", cursor);
	{
		/* An idle target's window is still a window: its file is
		 * written, the warning said. */
		struct attach_how how = {.path = path,
					 .chosen = 1,
					 .format = q->format,
					 .allow_empty = 1,
					 .allow_loss = q->allow_loss};

		ret = attach_one(sock, socket_path, ar, &how, &t0, &final);
	}
	if (ret == 0 || ret == 2) {
		char win[96];

		/* The exact window, for --from/--to of other queries (scripts
		 * read its first part), and for people. */
		fprintf(stderr,
			"%s: window %" PRId64 ".%09" PRId64 " .. %" PRId64 ".%09" PRId64
			" (Unix seconds; %s)\n",
			prog, t0 / FR_NS_PER_S, t0 % FR_NS_PER_S, t1 / FR_NS_PER_S,
			t1 % FR_NS_PER_S, fr_cli_format_window(t0, t1, win, sizeof(win)));
		printf("%s\n", final ? final : path);
		fflush(stdout);
	}
	free(final);
	free(path);
	free(ar);
	return ret;
}

/* attach --follow: holds the rates for as long as it runs and writes one
 * profile per window into `dir`, windows that tile time exactly from the
 * moment the rates were in force. SIGINT/SIGTERM write the window so far
 * and stop. Returns the exit status. */
static int follow(int sock, const char *socket_path, const struct fr_query_args *q, const char *dir,
		  uint64_t count, const char *cursor)
{
	struct sigaction sa = {.sa_handler = on_follow_signal};
	char host[256] = "host";
	int64_t t0 = 0;
	uint64_t written = 0;
	int incomplete = 0;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fr_host_name(host, sizeof(host));

	if (follow_start(sock, socket_path, q, &t0))
		return 1;
	while (!follow_stop && (!count || written < count)) {
		int64_t t1 = t0 + q->window;
		int ret;

		if (follow_wait(t0, &t1) < 0)
			break;
		ret = follow_window(sock, socket_path, q, dir, host, t0, t1, cursor);
		/* One window that could not be flushed does not end a follow
		 * of hours; the exit status says it happened. */
		if (ret == 2)
			incomplete = 1;
		else if (ret)
			return 1;
		written++;
		t0 = t1;
	}
	return incomplete;
}

/* Checks the options of attach --follow: a --window (each profile's
 * length) the recorder waits for, and a directory to write into. Returns
 * 0 or EXIT_USAGE (after saying why). */
static int follow_check(const struct fr_query_args *q)
{
	struct stat st;
	const char *dir = q->out_s ? q->out_s : ".";

	if (!q->window_s) {
		fprintf(stderr,
			"%s attach: --follow takes --window DURATION (the length of "
			"each profile), not --from/--to\n",
			prog);
		return EXIT_USAGE;
	}
	/* The recorder waits at most this long (plus a minute) for a
	 * follower's next request. */
	if (q->window > FR_IPC_FOLLOW_WINDOW_MAX_NS) {
		fprintf(stderr,
			"%s attach: --follow takes a --window of at most 1h, got "
			"\"%s\"\n",
			prog, q->window_s);
		return EXIT_USAGE;
	}
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr,
			"%s attach: --follow writes one file per window into a "
			"directory; %s is not a directory\n",
			prog, dir);
		return EXIT_USAGE;
	}
	return 0;
}

/* The arguments past the options, and what the options say together:
 * a cursor's name, --count with --follow. Fills *count. Returns 0 or
 * EXIT_USAGE, said on stderr. */
static int check_args(int argc, char **argv, struct fr_query_args *q, const char *count_s,
		      const char *cursor, int follow_mode, uint64_t *count)
{
	if (optind < argc) {
		fprintf(stderr, "%s attach: unexpected argument \"%s\" (see %s attach --help)\n",
			prog, argv[optind], prog);
		return EXIT_USAGE;
	}
	if (cursor && !fr_ipc_cursor_name_ok(cursor)) {
		fprintf(stderr,
			"%s attach: --since-last: " FR_IPC_CURSOR_NAME_RULE ", got \"%s\"\n", prog,
			cursor);
		return EXIT_USAGE;
	}
	/* A new cursor with no window starts at the oldest sample. */
	if (cursor && !follow_mode && !q->window_s && !q->from_s)
		q->from_s = "0";
	if (fr_query_finish("flightrec attach", q) || fr_query_refuse_series("flightrec attach", q))
		return EXIT_USAGE;
	if (count_s && !follow_mode) {
		fprintf(stderr, "%s attach: --count goes with --follow\n", prog);
		return EXIT_USAGE;
	}
	if (count_s && fr_parse_u64(count_s, 1, 1000000000, count) < 0) {
		fprintf(stderr,
			"%s attach: --count: expected a number of windows of at least 1, "
			"got \"%s\"\n",
			prog, count_s);
		return EXIT_USAGE;
	}
	if (follow_mode && follow_check(q))
		return EXIT_USAGE;
	return 0;
}

int fr_cmd_attach(int argc, char **argv)
{
	static const struct option longopts[] = {
		FR_QUERY_LONGOPTS,
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"follow", no_argument, NULL, FR_OPT_FOLLOW},
		{"count", required_argument, NULL, FR_OPT_COUNT},
		{"since-last", required_argument, NULL, FR_OPT_SINCE_LAST},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct fr_query_args q = {0};
	const char *socket_s = NULL, *count_s = NULL, *cursor = NULL;
	struct fr_ipc_attach_req ar;
	struct attach_how how;
	char *socket_path = NULL;
	uint64_t count = 0;
	int c, sock = -1, status = EXIT_USAGE, ret, follow_mode = 0;

	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		if ((ret = fr_query_opt("flightrec attach", c, optarg, &q)) == 1)
			continue;
		if (ret)
			return ret;
		switch (c) {
		case FR_OPT_SOCKET: socket_s = optarg; break;
		case FR_OPT_FOLLOW: follow_mode = 1; break;
		case FR_OPT_COUNT: count_s = optarg; break;
		case FR_OPT_SINCE_LAST: cursor = optarg; break;
		case 'h': usage_attach(stdout); return 0;
		default: return fr_cli_bad_option("attach", argv);
		}
	}
	if (check_args(argc, argv, &q, count_s, cursor, follow_mode, &count))
		return EXIT_USAGE;

	status = 1;
	socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	if (!socket_path)
		goto out;
	sock = fr_cli_connect(socket_path);
	if (sock < 0)
		goto out;
	if (follow_mode) {
		status = follow(sock, socket_path, &q, q.out_s ? q.out_s : ".", count, cursor);
		goto out;
	}

	fr_query_attach_req(&q, &ar);
	if (cursor)
		snprintf(ar.since_last, sizeof(ar.since_last), "%s", cursor);
	how = (struct attach_how){
		.path = q.out_s,
		.format = q.format,
		.allow_empty = q.allow_empty,
		.allow_loss = q.allow_loss,
		.show_window = q.from_s && !cursor,
	};
	if (attach_one(sock, socket_path, &ar, &how, NULL, NULL) != 0)
		goto out;
	status = 0;
out:
	if (sock >= 0)
		close(sock);
	free(socket_path);
	return status;
}
