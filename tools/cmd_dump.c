/* flightrec dump: a profile read straight from a ring file, with no
 * recorder running (after a crash), the ring's facts (--info), the
 * threads at a moment (--threads, by default the ring's last seal: the
 * moment of a crash), or a session's dump written now by the recorder
 * (--session). */
#include "tools/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "core/store/chunk.h"
#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/query/profile.h"
#include "core/query/threads_at.h"
#include "core/store/ring.h"
#include "fr_version.h"
#include "ipc/client.h"
#include "ipc/msg.h"
#include "ipc/msg_status.h"
#include "ipc/proto.h"
#include "tools/query.h"
#include "tools/timeline.h"

static const char *prog = FR_CLI_PROG;

static void usage_dump(FILE *f)
{
	fprintf(f,
		"Usage: flightrec dump --ring FILE --window DURATION [OPTION]...\n"
		"       flightrec dump --ring FILE --from TIME [--to TIME] [OPTION]...\n"
		"       flightrec dump --ring FILE --info [--json]\n"
		"       flightrec dump --ring FILE --timeline [--window D | --from T [--to T]]\n"
		"                      [--event E] [--by BY] [--step D] [--top N] [--json]\n"
		"       flightrec dump --ring FILE --threads [--at TIME] [--pid PID,...]\n"
		"                      [--comm NAME,...] [--cgroup PATH] [--json | -o FILE.pb.gz]\n"
		"       flightrec dump --ring FILE --events [--window D | --from T [--to T]]\n"
		"                      [--pid PID,... | --comm NAME,... | --cgroup PATH]\n"
		"                      [--type TYPE,...] [--json]\n"
		"       flightrec dump --session NAME [--window DURATION] [--socket PATH]\n"
		"Read a ring file directly, with no recorder running (after a crash of the\n"
		"recorder or of the host, or on a copy taken while it was writing), and write\n"
		"the same gzip'ed pprof profile attach writes. The file is only read.\n"
		"With --session, ask the running recorder to write that session's dump now\n"
		"(its events and targets, the window of its first trigger or --window) into\n"
		"its dumps directory, as a trigger would; the dump's path is printed.\n"
		"\n"
		"  --ring FILE        the ring (e.g. /var/lib/flightrec/ring)\n"
		"  --window DURATION  the last DURATION the ring recorded, ending at its newest\n"
		"                     sample (the moment of the crash)\n"
		"  --from TIME        window start: -10m (before now, not before the crash:\n"
		"                     --window counts back from the ring's end), 13:05\n"
		"                     (local), RFC 3339 or @UNIXSECONDS (see attach --help)\n"
		"  --to TIME          window end (default: the newest sample)\n"
		"  -o, --output FILE  where to write; - for standard output (default\n"
		"                     flightrec-HOST-UTCTIME.pb.gz here, .folded for --format\n"
		"                     folded, never replacing a file)\n"
		"  --allow-empty      a profile with no sample (targets that matched nothing)\n"
		"                     is no failure: write it and exit 0\n"
		"  --allow-loss       a window in which the recorder lost over 1%% of an\n"
		"                     event's samples or stalled is no failure: warn, exit 0\n"
		"  --pid PID[,PID...] only these processes\n"
		"  --children         with --pid: also every process they started, and theirs\n"
		"  --event E[,E...]   events, one value column each (default cpu; see attach;\n"
		"                     heap: in use at the window's end)\n"
		"  --diff             with --event heap: the heap's growth over the window\n"
		"  --comm NAME[,...]  only processes with these command names\n"
		"  --cgroup PATH      only processes in this cgroup v2 path or below it\n"
		"  --label KEY=VALUE  only samples the program labelled so (libflightrec;\n"
		"                     repeatable: all of them)\n"
		"  --label-key KEY    only samples with a value for this label\n"
		"  --hz N             samples per second per CPU in the profile\n"
		"  --hz E=N[,E=N...]  each event at its own rate, e.g. cpu=99,page-faults=19\n"
		"  --label-key cpu, --by-cpu\n"
		"                     label each sample with the CPU it ran on (pprof label\n"
		"                     cpu; off by default: one row per stack and CPU)\n"
		"  --format FORMAT    pprof (default: gzip'ed pprof) or folded (collapsed\n"
		"                     stacks for flamegraph.pl, speedscope, inferno)\n"
		"  --symbol-cache DIR the recorder's symbol cache, which names binaries deleted\n"
		"                     or replaced since (default: FILE's directory's symbols/\n"
		"                     when there is one)\n"
		"  --debug-dir DIR    where separate debug files are (DIR/.build-id/xx/*.debug\n"
		"                     and .gnu_debuglink names); repeatable, searched in order;\n"
		"                     default /usr/lib/debug\n"
		"  --info             show the ring's span, use, samples, compression, damage\n"
		"  --timeline         per step, the event per top process (or --by comm, cgroup,\n"
		"                     label:KEY), as flightrec timeline shows it (default: the\n"
		"                     ring's last hour); --by, --step, --top as there\n"
		"  --threads          the threads at a moment, as flightrec threads shows them,\n"
		"                     from the ring alone: blocked (since when, where), running\n"
		"                     (cpu samples in the second before) or unknown\n"
		"  --events           the crashes, OOM kills, execs, exits and pressure of the\n"
		"                     window (default: the ring's last hour), as flightrec\n"
		"                     events lists them; --type as there\n"
		"  --type TYPE[,...]  with --events: only these (see flightrec events --help)\n"
		"  --at TIME          that moment (default: the ring's last seal, the moment\n"
		"                     of a crash; as --from)\n"
		"  --json             with --info: one JSON object (times in Unix ns, sizes in\n"
		"                     bytes); with --threads: as flightrec threads --json;\n"
		"                     with --events: JSON lines as flightrec events --json\n"
		"  --session NAME     dump a configured session now, through the recorder\n"
		"  --socket PATH      with --session: the recorder's socket\n"
		"  -h, --help         show this help\n"
		"\n"
		"Examples:\n"
		"  flightrec dump --ring /var/lib/flightrec/ring --window 10m -o crash.pb.gz\n"
		"  flightrec dump --ring ring.copy --info --json\n"
		"  flightrec dump --ring /var/lib/flightrec/ring --threads --pid 1234\n"
		"  flightrec dump --ring ring.copy --threads --cgroup /system.slice/db.service\n"
		"  flightrec dump --ring /var/lib/flightrec/ring --events --type crash\n"
		"  flightrec dump --session db --window 2m\n");
}

/* dump --info: the ring's facts, plus what only decoding tells (losses). */
static int dump_info(struct fr_ring *ring, int json)
{
	struct fr_ring_ref *refs = NULL;
	struct fr_ring_stats st;
	uint64_t lost = 0;
	size_t n = 0;
	cJSON *obj = NULL, *ring_json;
	int status = 1;

	if (fr_ring_query(ring, INT64_MIN, INT64_MAX, &refs, &n) < 0) {
		fprintf(stderr, "%s dump: out of memory\n", prog);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t l;

		/* A chunk found damaged here is counted by the ring. */
		if (fr_ring_chunk_lost(ring, &refs[i], &l) == 0)
			lost += l;
	}
	free(refs);
	fr_ring_get_stats(ring, &st);
	ring_json = fr_ipc_ring_json(fr_ring_path(ring), &st);
	obj = cJSON_CreateObject();
	if (!ring_json || !obj) {
		cJSON_Delete(ring_json);
		goto out;
	}
	cJSON_AddItemToObject(obj, "ring", ring_json);
	fr_ipc_add_int(obj, "samples_lost", (int64_t)lost);
	if (json) {
		char *text = cJSON_PrintUnformatted(obj);
		if (!text)
			goto out;
		printf("%s\n", text);
		free(text);
	} else {
		struct fr_ipc_ring *rs = malloc(sizeof(*rs));

		if (!rs)
			goto out;
		fr_ipc_ring_from_stats(rs, fr_ring_path(ring), &st);
		fr_cli_print_ring(rs, lost);
		free(rs);
	}
	status = 0;
out:
	cJSON_Delete(obj);
	return status;
}

/* dump --session NAME: asks the recorder to fire the session now. */
static int dump_session(const char *name, const char *window_s, const char *socket_s)
{
	struct fr_ipc_dump_req dq = {.session = name};
	struct fr_ipc_dump_reply *reply = NULL;
	cJSON *req = NULL, *resp = NULL;
	char *socket_path = NULL, err[512];
	int sock = -1, status = 1;

	if (window_s &&
	    fr_query_parse_duration("flightrec dump", "--window", window_s, &dq.window_ns))
		return EXIT_USAGE;
	if (window_s && (dq.window_ns < FR_IPC_DUMP_WINDOW_MIN_NS ||
			 dq.window_ns > FR_IPC_DUMP_WINDOW_MAX_NS)) {
		fprintf(stderr, "%s dump: --window: expected a duration of 1s..1h, got \"%s\"\n",
			prog, window_s);
		return EXIT_USAGE;
	}
	req = fr_ipc_dump_req_encode(&dq);
	reply = malloc(sizeof(*reply));
	socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	if (!req || !reply || !socket_path)
		goto out;
	sock = fr_cli_connect(socket_path);
	if (sock < 0)
		goto out;
	if (fr_cli_call(sock, socket_path, req, -1, &resp) < 0)
		goto out;
	if (fr_cli_resp_error(resp) ||
	    fr_ipc_dump_reply_decode(resp, reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog,
			fr_cli_resp_error(resp) ? fr_cli_resp_error(resp) : err);
		goto out;
	}
	printf("%s\n", reply->path);
	status = 0;
out:
	if (sock >= 0)
		close(sock);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	free(reply);
	free(socket_path);
	return status;
}

/* Options of dump alone, numbered past tools/query.h's. */
enum { OPT_SYMBOL_CACHE = 1024, OPT_DEBUG_DIR, OPT_THREADS, OPT_AT, OPT_EVENTS, OPT_TYPE };

/* The options of flightrec dump. */
struct dump_args {
	struct fr_query_args q;
	const char *ring_s, *session_s, *socket_s, *symbol_cache_s, *at_s;
	const char *debug_dirs[FR_CONFIG_MAX_DEBUG_DIRS];
	uint32_t ndebug_dirs;
	int info, json, threads, timeline, events;
	uint64_t types; /* --type, with --events */
	struct fr_tl_args tl;
};

/* Parses and checks the options. Returns 0, or the exit status when the
 * command is done (help, a usage error). */
static int dump_parse(int argc, char **argv, struct dump_args *a)
{
	static const struct option longopts[] = {
		FR_QUERY_LONGOPTS,
		FR_TIMELINE_LONGOPTS,
		{"timeline", no_argument, NULL, FR_TL_OPT_TIMELINE},
		{"ring", required_argument, NULL, FR_OPT_RING},
		{"info", no_argument, NULL, FR_OPT_INFO},
		{"json", no_argument, NULL, FR_OPT_JSON},
		{"session", required_argument, NULL, FR_OPT_SESSION},
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"symbol-cache", required_argument, NULL, OPT_SYMBOL_CACHE},
		{"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
		{"threads", no_argument, NULL, OPT_THREADS},
		{"at", required_argument, NULL, OPT_AT},
		{"events", no_argument, NULL, OPT_EVENTS},
		{"type", required_argument, NULL, OPT_TYPE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, ret;

	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		if ((ret = fr_query_opt("flightrec dump", c, optarg, &a->q)) == 1)
			continue;
		if (ret)
			return ret;
		if ((ret = fr_tl_opt("flightrec dump", c, optarg, &a->tl)) == 1)
			continue;
		if (ret)
			return ret;
		switch (c) {
		case FR_TL_OPT_TIMELINE: a->timeline = 1; break;
		case FR_OPT_RING: a->ring_s = optarg; break;
		case FR_OPT_INFO: a->info = 1; break;
		case FR_OPT_JSON: a->json = 1; break;
		case FR_OPT_SESSION: a->session_s = optarg; break;
		case FR_OPT_SOCKET: a->socket_s = optarg; break;
		case OPT_SYMBOL_CACHE: a->symbol_cache_s = optarg; break;
		case OPT_THREADS: a->threads = 1; break;
		case OPT_AT: a->at_s = optarg; break;
		case OPT_EVENTS: a->events = 1; break;
		case OPT_TYPE:
			if (fr_cli_events_type_opt("flightrec dump", optarg, &a->types))
				return EXIT_USAGE;
			break;
		case OPT_DEBUG_DIR:
			if (a->ndebug_dirs == FR_CONFIG_MAX_DEBUG_DIRS) {
				fprintf(stderr, "%s dump: at most %d --debug-dir options\n", prog,
					FR_CONFIG_MAX_DEBUG_DIRS);
				return EXIT_USAGE;
			}
			a->debug_dirs[a->ndebug_dirs++] = optarg;
			break;
		case 'h': usage_dump(stdout); return -1;
		default: return fr_cli_bad_option("dump", argv);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s dump: unexpected argument \"%s\" (see %s dump --help)\n", prog,
			argv[optind], prog);
		return EXIT_USAGE;
	}
	return 0;
}

/* dump --timeline: a window (the ring's last hour by default), one event.
 * Returns 0 or EXIT_USAGE (after saying why). */
static int dump_check_timeline(struct dump_args *a)
{
	struct fr_query_args *q = &a->q;

	if (a->info || q->out_s || q->format || q->hz || q->nrates || q->nevents > 1 ||
	    q->targets.cgroup[0] || q->targets.has_uid || fr_targets_labels_given(&q->targets) ||
	    q->targets.children || q->by_cpu || q->diff || a->symbol_cache_s || a->ndebug_dirs) {
		fprintf(stderr,
			"%s dump: --timeline takes a window, one --event, --pid, --comm, --by, "
			"--step, --top and --json only\n",
			prog);
		return EXIT_USAGE;
	}
	if (!q->window_s && !q->from_s)
		q->window_s = "1h";
	return fr_query_finish("flightrec dump", q) ? EXIT_USAGE : 0;
}

/* dump --events: a window (the ring's last hour by default), targets,
 * --type, --json and symbol options. Returns 0 or EXIT_USAGE (after saying
 * why). */
static int dump_check_events(struct dump_args *a)
{
	struct fr_query_args *q = &a->q;

	if (a->info || q->out_s || q->format || q->hz || q->nrates || q->nevents ||
	    fr_targets_labels_given(&q->targets) || q->targets.children || q->by_cpu || q->diff ||
	    q->allow_empty) {
		fprintf(stderr,
			"%s dump: --events takes a window, --pid, --comm, --cgroup, --type, "
			"--json and symbol options only\n",
			prog);
		return EXIT_USAGE;
	}
	if (!q->window_s && !q->from_s)
		q->window_s = "1h";
	return fr_query_finish("flightrec dump", q) ? EXIT_USAGE : 0;
}

/* Checks that the options of a ring dump (not --session) go together.
 * Returns 0 or EXIT_USAGE (after saying why). */
static int dump_check(struct dump_args *a)
{
	struct fr_query_args *q = &a->q;

	if (a->socket_s) {
		fprintf(stderr, "%s dump: --socket goes with --session\n", prog);
		return EXIT_USAGE;
	}
	if (!a->ring_s) {
		fprintf(stderr,
			"%s dump: --ring FILE is required (the recorder's is "
			"/var/lib/flightrec/ring)\n",
			prog);
		return EXIT_USAGE;
	}
	if (a->at_s && !a->threads) {
		fprintf(stderr, "%s dump: --at goes with --threads\n", prog);
		return EXIT_USAGE;
	}
	if (a->threads) {
		if (a->info || a->timeline || q->window_s || q->from_s || q->to_s ||
		    (q->hz || q->nrates) || q->format || q->nevents ||
		    fr_targets_labels_given(&q->targets) || q->targets.children ||
		    (a->json && q->out_s)) {
			fprintf(stderr,
				"%s dump: --threads takes --at, --pid, --comm, --cgroup, --json or "
				"-o, and symbol options only\n",
				prog);
			return EXIT_USAGE;
		}
		return 0;
	}
	if (fr_tl_given(&a->tl) && !a->timeline) {
		fprintf(stderr, "%s dump: --by, --step and --top go with --timeline\n", prog);
		return EXIT_USAGE;
	}
	if (a->timeline)
		return dump_check_timeline(a);
	if (a->types && !a->events) {
		fprintf(stderr, "%s dump: --type goes with --events\n", prog);
		return EXIT_USAGE;
	}
	if (a->events)
		return dump_check_events(a);
	if (a->json && !a->info) {
		fprintf(stderr, "%s dump: --json goes with --info or --timeline\n", prog);
		return EXIT_USAGE;
	}
	if (a->info && (a->symbol_cache_s || a->ndebug_dirs)) {
		fprintf(stderr,
			"%s dump: --info names no frames: no --symbol-cache or --debug-dir\n",
			prog);
		return EXIT_USAGE;
	}
	if (a->info && (q->window_s || q->from_s || q->to_s || q->out_s || q->targets.npids ||
			(q->hz || q->nrates) || q->format || q->nevents || q->targets.ncomms ||
			q->targets.cgroup[0])) {
		fprintf(stderr,
			"%s dump: --info takes no window, output, pid, rate or format "
			"options\n",
			prog);
		return EXIT_USAGE;
	}
	if (!a->info &&
	    (fr_query_finish("flightrec dump", q) || fr_query_refuse_series("flightrec dump", q)))
		return EXIT_USAGE;
	return 0;
}

/* The profile request of a ring dump: the window ends where the recording
 * ends, not now (after a crash the interesting minutes are the last ones
 * the ring holds). Returns 0, or 1 after saying why there is none. */
static int dump_request(struct fr_ring *ring, const char *ring_s, const struct fr_query_args *q,
			struct fr_profile_request *req)
{
	struct fr_ring_stats st;
	char when[64];

	fr_ring_get_stats(ring, &st);
	if (!st.chunks) {
		fprintf(stderr, "%s dump: %s holds no samples; nothing to write\n", prog, ring_s);
		return 1;
	}
	memset(req, 0, sizeof(*req));
	if (q->window_s) {
		req->t1 = st.newest_ns + 1;
		req->t0 = req->t1 - q->window;
	} else {
		req->t0 = q->from;
		req->t1 = q->to_s ? q->to : st.newest_ns + 1;
		if (req->t1 <= req->t0) {
			fprintf(stderr, "%s dump: the ring's newest sample (%s) is before --from\n",
				prog, fr_format_time(st.newest_ns, when, sizeof(when)));
			return 1;
		}
	}
	req->targets = q->targets;
	req->nevents = q->nevents;
	memcpy(req->events, q->events, sizeof(req->events));
	req->hz = (uint32_t)q->hz;
	memcpy(req->event_hz, q->event_hz, sizeof(req->event_hz));
	req->format = q->format;
	req->cpu_label = q->by_cpu;
	req->heap_diff = q->diff;
	req->version = FR_VERSION;
	return 0;
}

/* Fills what the profile of `req` holds and, when it holds no sample,
 * which of its targets matched nothing, as attach's reply says it. */
static void dump_report(struct fr_ring *ring, const struct fr_profile_request *req,
			const struct fr_profile_result *res, uint64_t written,
			struct fr_cli_report *r)
{
	const struct fr_targets *t = &req->targets;
	struct fr_ring_stats st;
	char err[256];

	fr_ring_get_stats(ring, &st);
	*r = (struct fr_cli_report){
		.samples = res->samples_kept,
		.stacks = res->stacks,
		.bytes = written,
		.hz = res->hz,
		.t0 = req->t0,
		.t1 = req->t1,
		.first_ns = res->first_ns,
		.last_ns = res->last_ns,
		.ring_oldest = st.chunks ? st.oldest_ns : 0,
		.ring_newest = st.chunks ? st.newest_ns : 0,
		.targets = t,
		.memory = fr_cli_events_memory(req->events, req->nevents),
		.stall_t0 = res->stall_t0,
		.stall_t1 = res->stall_t1,
	};
	for (uint32_t e = 0; e < res->nevents && e < FR_LIMIT_EVENTS; e++)
		r->loss[r->nloss++] = (struct fr_cli_loss){
			.event = res->events[e].event,
			.lost = res->events[e].lost,
			.recorded = res->events[e].recorded,
		};
	if (!res->samples_seen && st.chunks && req->t1 > st.oldest_ns && req->t0 <= st.newest_ns &&
	    (t->npids || t->ncomms || t->cgroup[0] || fr_targets_labels_given(t)) &&
	    fr_profile_empty_targets(ring, req, &r->empty, &r->procs, err, sizeof(err)) < 0)
		fprintf(stderr, "%s dump: cannot tell which target matched nothing: %s\n", prog,
			err);
}

/* Writes the profile of `req` to `path` (atomically, for a file; NULL: a
 * new file under the default name, printed) and says what it holds.
 * Returns 0, or 1 after saying why not (a window outside the ring, or
 * targets that matched nothing, unless `allow_empty`). */
static int dump_write(struct fr_ring *ring, const struct fr_profile_request *req, const char *path,
		      int allow_empty, int allow_loss, int show_window)
{
	struct fr_cli_output out = {.fd = -1};
	struct fr_cli_progress prog_line;
	struct fr_profile_result res;
	struct fr_cli_report rep;
	uint64_t written = 0;
	char err[512] = "";
	int ret, status = 1;

	if ((path ? fr_cli_output_open(&out, path, req->format)
		  : fr_cli_output_open_new(&out, NULL, req->format)) < 0)
		return 1;
	fr_cli_progress_start(&prog_line, "building the profile");
	ret = fr_profile_write_fd(ring, req, out.fd, NULL, &res, &written, err, sizeof(err));
	fr_cli_progress_stop(&prog_line);
	if (ret < 0) {
		fprintf(stderr, "%s dump: %s\n", prog, err[0] ? err : strerror(-ret));
		fr_cli_output_commit(&out, 0);
		goto out;
	}
	dump_report(ring, req, &res, written, &rep);
	rep.show_window = show_window;
	if ((fr_cli_report_check(&rep, allow_empty) == FR_REPORT_EMPTY && !allow_empty) ||
	    fr_cli_output_commit(&out, 1) < 0) {
		fr_cli_output_commit(&out, 0);
		goto out;
	}
	rep.path = out.path;
	if (res.warning[0])
		fprintf(stderr, "%s: warning: %s\n", prog, res.warning);
	fr_cli_report_summary(&rep);
	if (!path)
		printf("%s\n", out.path);
	/* Kept, as it holds what the ring had; a script must not take it
	 * for the whole window. */
	status = fr_cli_report_missing(&rep, allow_loss);
out:
	fr_cli_output_free(&out);
	return status;
}

/* Where the dump's names come from besides the mapped files: the symbol
 * cache given, else the one the recorder keeps beside the ring (when the
 * ring was copied with it), and the debug directories given. Returns 0,
 * or -1 after saying why. *cache_dir is the caller's to free. */
static int dump_symbol_paths(const struct dump_args *a, struct fr_profile_request *req,
			     char **cache_dir)
{
	const char *slash = strrchr(a->ring_s, '/');
	struct stat st;

	if (a->ndebug_dirs) {
		req->debug_dirs = a->debug_dirs;
		req->ndebug_dirs = a->ndebug_dirs;
	}
	if (a->symbol_cache_s && (stat(a->symbol_cache_s, &st) < 0 || !S_ISDIR(st.st_mode))) {
		fprintf(stderr, "%s dump: --symbol-cache %s is not a directory\n", prog,
			a->symbol_cache_s);
		return -1;
	}
	if (a->symbol_cache_s)
		*cache_dir = strdup(a->symbol_cache_s);
	else if (asprintf(cache_dir, "%.*ssymbols", slash ? (int)(slash - a->ring_s + 1) : 0,
			  a->ring_s) < 0)
		*cache_dir = NULL;
	if (!*cache_dir) {
		fprintf(stderr, "%s dump: out of memory\n", prog);
		return -1;
	}
	/* The default is used only when it is there. */
	if (a->symbol_cache_s || (stat(*cache_dir, &st) == 0 && S_ISDIR(st.st_mode)))
		req->symbol_cache = *cache_dir;
	return 0;
}

/* dump --threads: the threads at --at (default: the last seal), written
 * as the live command's answer (core/query/threads_at.h) and shown by its
 * renderer, or kept in -o. Returns the exit status. */
static int dump_threads(struct fr_ring *ring, struct dump_args *a, struct fr_profile_request *req)
{
	struct fr_ipc_threads_reply reply = {0};
	struct fr_cli_output out = {.fd = -1};
	const char *out_s = a->q.out_s;
	char err[512] = "", when[64];
	size_t n = 0, nprocs = 0;
	int64_t t;
	int fd, status = 1;

	if (a->at_s && fr_query_parse_when("flightrec dump", "--at", a->at_s, fr_now_real_ns(), &t))
		return EXIT_USAGE;
	if (!a->at_s && !(t = fr_threads_at_last(ring))) {
		fprintf(stderr, "%s dump: %s holds no samples\n", prog, a->ring_s);
		return 1;
	}
	req->targets = a->q.targets;
	req->version = FR_VERSION;
	if (out_s) {
		if (fr_cli_output_open(&out, out_s, FR_PROFILE_PPROF) < 0)
			return 1;
		fd = out.fd;
	} else if ((fd = memfd_create("flightrec-threads", MFD_CLOEXEC)) < 0) {
		perror("flightrec dump: memfd_create");
		return 1;
	}
	if (fr_threads_at_write(ring, req, t, fd, &n, &nprocs, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s dump: %s\n", prog, err);
		if (out_s)
			fr_cli_output_commit(&out, 0);
		else
			close(fd);
		return 1;
	}
	if (out_s)
		return fr_cli_output_commit(&out, 1) < 0 ? 1 : 0;
	reply.threads = n;
	reply.processes = nprocs;
	snprintf(when, sizeof(when), "threads at ");
	fr_format_time(t, when + strlen(when), sizeof(when) - strlen(when));
	fr_ipc_warn(reply.warnings, &reply.nwarnings, when);
	fr_ipc_warn(reply.warnings, &reply.nwarnings,
		    "from the ring alone: the kernel's exact state is not recorded; blocked and "
		    "running are what the samples say");
	status = fr_cli_threads_render(fd, a->json, &reply, NULL);
	close(fd);
	return status;
}

int fr_cmd_dump(int argc, char **argv)
{
	struct dump_args a;
	struct fr_query_args *q = &a.q;
	struct fr_ring *ring = NULL;
	struct fr_profile_request *req = NULL;
	struct fr_cli_progress prog_line;
	char *cache_dir = NULL;
	char err[512];
	int status, ret;

	memset(&a, 0, sizeof(a));
	status = dump_parse(argc, argv, &a);
	if (status)
		return status < 0 ? 0 : status;
	if (a.session_s) {
		if (a.ring_s || a.info || a.json || q->from_s || q->to_s || q->out_s ||
		    q->targets.npids || (q->hz || q->nrates) || q->format || q->nevents ||
		    q->targets.ncomms || q->targets.cgroup[0] || a.symbol_cache_s ||
		    a.ndebug_dirs || a.threads || a.at_s || a.timeline || a.events) {
			fprintf(stderr,
				"%s dump: --session takes only --window and --socket (the "
				"session says what to record and where the dump goes)\n",
				prog);
			return EXIT_USAGE;
		}
		return dump_session(a.session_s, q->window_s, a.socket_s);
	}
	if (dump_check(&a))
		return EXIT_USAGE;

	err[0] = '\0';
	fr_cli_progress_start(&prog_line, "scanning the ring");
	ret = fr_ring_open(&ring, a.ring_s, 0, 0, FR_RING_RDONLY, err, sizeof(err));
	fr_cli_progress_stop(&prog_line);
	if (ret < 0) {
		fprintf(stderr, "%s dump: %s\n", prog, err[0] ? err : strerror(-ret));
		return 1;
	}
	status = 1;
	if (a.info) {
		status = dump_info(ring, a.json);
		goto out;
	}
	req = calloc(1, sizeof(*req));
	if (req && a.timeline) {
		if (dump_request(ring, a.ring_s, q, req) == 0)
			status = fr_tl_from_ring(ring, req->t0, req->t1,
						 q->nevents ? q->events[0] : FR_EVENT_CPU,
						 &q->targets, &a.tl, a.json);
		goto out;
	}
	if (req && a.events) {
		if (dump_request(ring, a.ring_s, q, req) == 0 &&
		    dump_symbol_paths(&a, req, &cache_dir) == 0)
			status = fr_cli_events_from_ring(ring, req->t0, req->t1, &q->targets,
							 a.types, a.json, req->symbol_cache,
							 req->debug_dirs, req->ndebug_dirs);
		goto out;
	}
	if (req && a.threads) {
		if (dump_symbol_paths(&a, req, &cache_dir) == 0)
			status = dump_threads(ring, &a, req);
		goto out;
	}
	if (!req || dump_request(ring, a.ring_s, q, req))
		goto out;
	if (dump_symbol_paths(&a, req, &cache_dir) < 0)
		goto out;
	status = dump_write(ring, req, q->out_s, q->allow_empty, q->allow_loss, q->from_s != NULL);
out:
	free(req);
	free(cache_dir);
	fr_ring_close(ring);
	return status;
}
