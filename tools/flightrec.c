/* flightrec: the operator's command line.
 *
 * Every command parses and checks all of its arguments before it touches
 * the daemon or the file system, so bad input costs nothing. attach writes
 * the profile into a temporary file next to the target and renames it into
 * place only when the daemon reports success: a failed attach leaves no
 * file, a reader never sees a partial one.
 *
 * Exit status: 0 success, 1 failure, 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/chunk.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/profile.h"
#include "core/ring.h"
#include "core/uring.h"
#include "fr_version.h"
#include "ipc/client.h"
#include "ipc/msg.h"
#include "ipc/paths.h"
#include "ipc/proto.h"
#include "ipc/server.h"
#include "tools/query.h"
#include "tools/top.h"

static const char *prog = "flightrec";
/* The caller's umask, read in main() while this is the only thread (umask
 * can only be read by setting it). */
static mode_t caller_umask = 022;

static void usage_main(FILE *f)
{
	fprintf(f,
		"Usage: flightrec COMMAND [OPTION]...\n"
		"Read back what flightrecd recorded on this machine.\n"
		"\n"
		"Commands:\n"
		"  attach    write a pprof profile of a recent window (e.g. the last minute)\n"
		"  status    show the recorder: events, rates, ring span, samples, losses\n"
		"  dump      read a ring file with no recorder running (after a crash), or\n"
		"            write a session's dump now (--session NAME)\n"
		"  sessions  list the recorder's sessions, their events and rates\n"
		"  top       the top functions of a profile file or a recent window, as a table\n"
		"\n"
		"Run `flightrec COMMAND --help` for a command's options.\n"
		"The socket is --socket PATH, else $FLIGHTREC_SOCKET, else the daemon's default\n"
		"(" FR_IPC_SYSTEM_SOCKET " as root).\n"
		"\n"
		"Exit status: 0 success, 1 failure, 2 usage error.\n"
		"Example:\n"
		"  flightrec attach --window 60s -o incident.pb.gz && go tool pprof -top incident.pb.gz\n");
}

static void usage_attach(FILE *f)
{
	fprintf(f,
		"Usage: flightrec attach --window DURATION [OPTION]...\n"
		"       flightrec attach --from TIME [--to TIME] [OPTION]...\n"
		"Write a gzip'ed pprof profile of the samples the recorder holds for a window\n"
		"of time: --window 60s is the last 60 seconds, up to now.\n"
		"\n"
		"  --window DURATION  500ms, 10s, 5m, 1h, ...\n"
		"  --from TIME        window start: RFC 3339 (2026-11-22T13:05:00Z) or Unix seconds\n"
		"  --to TIME          window end (default now)\n"
		"  -o, --output FILE  where to write (default flightrec-HOST-UTCTIME.pb.gz here,\n"
		"                     .folded for --format folded)\n"
		"  --event E[,E...]   events, one value column each (default cpu): cpu, cycles,\n"
		"                     instructions, cache-references, cache-misses,\n"
		"                     branch-instructions, branch-misses, page-faults,\n"
		"                     context-switches, cpu-migrations, offcpu, raw:0xNNNN\n"
		"  --pid PID[,PID...] only these processes (all their threads)\n"
		"  --children         with --pid: also every process they started, and theirs\n"
		"  --comm NAME[,...]  only processes with these command names\n"
		"  --cgroup PATH      only processes in this cgroup v2 path or below it\n"
		"  --hz N             samples per second per CPU in the profile (default: as\n"
		"                     recorded; higher rates are downsampled deterministically;\n"
		"                     with --follow, the recorder samples at least this fast)\n"
		"  --format FORMAT    pprof (default: gzip'ed pprof) or folded (collapsed\n"
		"                     stacks for flamegraph.pl, speedscope, inferno)\n"
		"  --follow           from now on, write one profile per --window into the\n"
		"                     directory -o DIR (default .) until interrupted; the\n"
		"                     windows tile time exactly, and the recorder keeps the\n"
		"                     events and --hz asked for while it runs\n"
		"  --count N          with --follow: stop after N windows\n"
		"  --socket PATH      the recorder's socket\n"
		"  -h, --help         show this help\n"
		"\n"
		"Examples:\n"
		"  flightrec attach --window 60s -o incident.pb.gz\n"
		"  flightrec attach --window 5m --pid 1234 -o api.pb.gz\n"
		"  flightrec attach --window 60s --event cpu,offcpu --comm postgres -o db.pb.gz\n"
		"  flightrec attach --window 60s --format folded -o cpu.folded\n"
		"  flightrec attach --follow --window 10s --hz 999 -o /var/tmp/profiles/\n"
		"  flightrec attach --follow --count 1 --window 30s --event offcpu -o .\n");
}

static void usage_status(FILE *f)
{
	fprintf(f,
		"Usage: flightrec status [--json] [--socket PATH]\n"
		"Show the recorder's version, uptime, events and rates, the ring's path, size,\n"
		"use and span, and the samples stored and lost.\n"
		"\n"
		"  --json         print one JSON object (times in Unix ns, sizes in bytes)\n"
		"  --socket PATH  the recorder's socket\n"
		"  -h, --help     show this help\n");
}

static int bad_option(const char *cmd, char **argv)
{
	const char *arg = argv[optind - 1];

	if (optopt && optopt < 256)
		fprintf(stderr, "%s %s: option -%c is unknown or needs a value (see %s %s --help)\n",
			prog, cmd, optopt, prog, cmd);
	else
		fprintf(stderr, "%s %s: unknown option or missing value: %s (see %s %s --help)\n",
			prog, cmd, arg, prog, cmd);
	return EXIT_USAGE;
}

/* Connects, printing the standard message when nothing listens. */
static int connect_daemon(const char *path)
{
	int fd = fr_ipc_connect(path);

	if (fd == -ENOENT || fd == -ECONNREFUSED)
		fprintf(stderr, "%s: no recorder listening at %s (is flightrecd running?)\n", prog,
			path);
	else if (fd == -EACCES || fd == -EPERM)
		fprintf(stderr, "%s: not allowed to talk to the recorder at %s (run as root)\n", prog,
			path);
	else if (fd < 0)
		fprintf(stderr, "%s: cannot connect to %s: %s\n", prog, path, strerror(-fd));
	return fd;
}

static const char *resp_error(const cJSON *resp)
{
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(resp, "ok");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(resp, "error");

	if (cJSON_IsTrue(ok))
		return NULL;
	return cJSON_IsString(e) ? e->valuestring : "the recorder refused the request";
}

static void report_call_error(int ret, const char *path, cJSON **resp)
{
	if (ret == -EPROTO) {
		fprintf(stderr, "%s: the recorder at %s speaks another protocol version: %s\n",
			prog, path, *resp && resp_error(*resp) ? resp_error(*resp) : "no details");
		cJSON_Delete(*resp);
		*resp = NULL;
	} else if (ret == -EAGAIN) {
		fprintf(stderr, "%s: the recorder at %s did not answer in time\n", prog, path);
	} else {
		fprintf(stderr, "%s: lost the connection to the recorder at %s: %s\n", prog, path,
			strerror(-ret));
	}
}

static int call(int sock, const char *path, cJSON *req, int pass_fd, cJSON **resp)
{
	int ret = fr_ipc_call(sock, req, pass_fd, resp);

	if (ret < 0)
		report_call_error(ret, path, resp);
	return ret;
}

/* A number of a reply, or of an object built here, where integers are raw
 * text (fr_ipc_add_int keeps 64-bit values exact). */
static double num(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsNumber(v))
		return v->valuedouble;
	if (cJSON_IsRaw(v) && v->valuestring)
		return strtod(v->valuestring, NULL);
	return 0;
}

static const char *str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : "";
}

static void print_summary(const char *out, uint64_t samples, uint64_t stacks, int64_t t0,
			  int64_t t1, uint32_t hz, uint64_t bytes)
{
	char dur[32], size[32];

	fprintf(stderr, "%s: wrote %s: %llu samples, %llu stacks, %s window at %u Hz (%s)\n",
		prog, out, (unsigned long long)samples, (unsigned long long)stacks,
		fr_format_duration(t1 - t0, dur, sizeof(dur)), hz,
		fr_format_size_human(bytes, size, sizeof(size)));
}

static char *default_output_name(enum fr_profile_format format)
{
	char host[256], stamp[32], *name = NULL;
	time_t now = time(NULL);
	struct tm tm;

	fr_host_name(host, sizeof(host));
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	return asprintf(&name, "flightrec-%s-%s.%s", host, stamp,
			format == FR_PROFILE_FOLDED ? "folded" : "pb.gz") < 0 ? NULL : name;
}

/* Opens the output. For a regular (or new) file, a temporary file in the
 * same directory that commit_output() renames into place. */
struct output {
	const char *path;
	char *tmp; /* NULL when writing to `path` directly (fifo, device) */
	int fd;
};

static int open_output(struct output *o, const char *path)
{
	struct stat st;
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];

	o->path = path;
	o->tmp = NULL;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: cannot write %s: it is a directory\n", prog, path);
		return -EISDIR;
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		o->fd = open(path, O_WRONLY | O_CLOEXEC);
		if (o->fd < 0) {
			fprintf(stderr, "%s: cannot open %s: %s\n", prog, path, strerror(errno));
			return -errno;
		}
		return 0;
	}
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path + 1), path);
	else
		dir[0] = '\0';
	if (asprintf(&o->tmp, "%s.%s.tmp.XXXXXX", dir[0] ? dir : "./", slash ? slash + 1 : path) <
	    0) {
		o->tmp = NULL;
		return -ENOMEM;
	}
	o->fd = mkostemp(o->tmp, O_CLOEXEC);
	if (o->fd < 0) {
		int e = errno;
		fprintf(stderr, "%s: cannot create %s: %s\n", prog, path, strerror(e));
		free(o->tmp);
		o->tmp = NULL;
		return -e;
	}
	/* mkostemp creates 0600; the profile gets the mode any new file of
	 * the caller's gets. It names commands, threads and files of every
	 * user, so a umask of 077 keeps it private, as asked. */
	if (fchmod(o->fd, 0666 & ~caller_umask) < 0) {
		int e = errno;

		fprintf(stderr, "%s: cannot set the mode of %s: %s\n", prog, path, strerror(e));
		close(o->fd);
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
		return -e;
	}
	return 0;
}

static int commit_output(struct output *o, int ok)
{
	int ret = 0;

	if (o->tmp) {
		if (ok && fsync(o->fd) < 0)
			ret = -errno;
		if (ok && ret == 0 && rename(o->tmp, o->path) < 0)
			ret = -errno;
		if (!ok || ret < 0)
			unlink(o->tmp);
		if (ret < 0)
			fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->path, strerror(-ret));
		free(o->tmp);
	}
	close(o->fd);
	return ret;
}

/* Progress on a terminal for operations that can take a while: after a
 * quiet 300 ms, a line on stderr with what is going on and the time spent,
 * redrawn every 200 ms and erased at the end. Nothing when stderr is not
 * a terminal (piped, in scripts, in logs). */
struct progress {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const char *what;
	int running, done, drawn;
	int64_t start_ns;
};

static void *progress_main(void *arg)
{
	struct progress *p = arg;
	struct timespec deadline;
	int first = 1;

	pthread_mutex_lock(&p->lock);
	while (!p->done) {
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_nsec += first ? 300000000 : 200000000;
		if (deadline.tv_nsec >= 1000000000) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000;
		}
		first = 0;
		if (pthread_cond_timedwait(&p->cond, &p->lock, &deadline) == 0 || p->done)
			continue;
		fprintf(stderr, "\r%s: %s... %.1fs", prog, p->what,
			(double)(fr_now_mono_ns() - p->start_ns) / 1e9);
		p->drawn = 1;
	}
	if (p->drawn)
		fprintf(stderr, "\r\033[K");
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void progress_start(struct progress *p, const char *what)
{
	memset(p, 0, sizeof(*p));
	if (!isatty(STDERR_FILENO))
		return;
	p->what = what;
	p->start_ns = fr_now_mono_ns();
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->running = pthread_create(&p->thread, NULL, progress_main, p) == 0;
}

static void progress_stop(struct progress *p)
{
	if (!p->running)
		return;
	pthread_mutex_lock(&p->lock);
	p->done = 1;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	p->running = 0;
}

/* Sends the attach request `ar` with a new file at `path` and commits the
 * file when the recorder succeeds. Returns 0; 2 when the profile was kept
 * but may end early (the recorder could not flush), after saying so; or 1
 * after saying why it failed. */
static int attach_one(int sock, const char *socket_path, const struct fr_ipc_attach_req *ar,
		      const char *path)
{
	struct output out = {.fd = -1};
	struct fr_ipc_attach_reply *reply = malloc(sizeof(*reply));
	struct progress prog_line;
	cJSON *req = fr_ipc_attach_req_encode(ar), *resp = NULL;
	char err[512];
	int ret = 1;

	if (!req || !reply || open_output(&out, path) < 0)
		goto out;
	progress_start(&prog_line, "the recorder is building the profile");
	ret = call(sock, socket_path, req, out.fd, &resp);
	progress_stop(&prog_line);
	if (ret < 0 || resp_error(resp) ||
	    fr_ipc_attach_reply_decode(resp, reply, err, sizeof(err)) < 0) {
		if (ret == 0)
			fprintf(stderr, "%s: %s\n", prog, resp_error(resp) ? resp_error(resp) : err);
		commit_output(&out, 0);
		ret = 1;
		goto out;
	}
	ret = 1;
	if (commit_output(&out, 1) < 0)
		goto out;
	for (uint32_t i = 0; i < reply->nwarnings; i++)
		fprintf(stderr, "%s: warning: %s\n", prog, reply->warnings[i]);
	print_summary(path, reply->samples, reply->stacks, reply->t0_ns, reply->t1_ns, reply->hz,
		      reply->bytes);
	/* The profile is kept (it holds what the ring had), but a script
	 * must not take it for the whole window. */
	ret = reply->incomplete[0] ? 2 : 0;
	if (ret)
		fprintf(stderr, "%s: %s: %s\n", prog, path, reply->incomplete);
out:
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
	if (!req || !reply || call(sock, socket_path, req, -1, &resp) < 0)
		goto out;
	if (resp_error(resp) || fr_ipc_consume_reply_decode(resp, reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, resp_error(resp) ? resp_error(resp) : err);
		goto out;
	}
	*start_ns = reply->start_ns;
	for (uint32_t i = 0; i < reply->nwarnings; i++)
		fprintf(stderr, "%s: warning: %s\n", prog, reply->warnings[i]);
	for (uint32_t i = 0; i < reply->nevents; i++)
		fprintf(stderr, "%s: following %s at %u Hz (recording at %u Hz)\n", prog,
			fr_event_format(reply->events[i].event, name, sizeof(name)),
			reply->events[i].hz, reply->events[i].recording_hz);
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
 * window's start, and prints its path. Returns as attach_one(). */
static int follow_window(int sock, const char *socket_path, const struct fr_query_args *q,
			 const char *dir, const char *host, int64_t t0, int64_t t1)
{
	struct fr_ipc_attach_req *ar = malloc(sizeof(*ar));
	char *path = NULL, stamp[48];
	time_t secs = (time_t)(t0 / 1000000000);
	struct tm tm;
	int ret = 1;

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	if (!ar || asprintf(&path, "%s/flightrec-%s-%s.%03dZ.%s", dir, host, stamp,
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
	ret = attach_one(sock, socket_path, ar, path);
	if (ret == 0 || ret == 2) {
		/* The exact window, for --from/--to of other queries. */
		fprintf(stderr, "%s: window %" PRId64 ".%09" PRId64 " .. %" PRId64 ".%09" PRId64
			" (Unix seconds)\n", prog, t0 / 1000000000, t0 % 1000000000,
			t1 / 1000000000, t1 % 1000000000);
		printf("%s\n", path);
		fflush(stdout);
	}
	free(path);
	free(ar);
	return ret;
}

/* attach --follow: holds the rates for as long as it runs and writes one
 * profile per window into `dir`, windows that tile time exactly from the
 * moment the rates were in force. SIGINT/SIGTERM write the window so far
 * and stop. Returns the exit status. */
static int follow(int sock, const char *socket_path, const struct fr_query_args *q, const char *dir,
		  uint64_t count)
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
		ret = follow_window(sock, socket_path, q, dir, host, t0, t1);
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

static int cmd_attach(int argc, char **argv)
{
	static const struct option longopts[] = {
		FR_QUERY_LONGOPTS,
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"follow", no_argument, NULL, FR_OPT_FOLLOW},
		{"count", required_argument, NULL, FR_OPT_COUNT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct fr_query_args q = {0};
	const char *socket_s = NULL, *count_s = NULL;
	struct fr_ipc_attach_req ar;
	char *socket_path = NULL, *out_name = NULL;
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
		case 'h': usage_attach(stdout); return 0;
		default: return bad_option("attach", argv);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s attach: unexpected argument \"%s\" (see %s attach --help)\n",
			prog, argv[optind], prog);
		return EXIT_USAGE;
	}
	if (fr_query_finish("flightrec attach", &q))
		return EXIT_USAGE;
	if (count_s && !follow_mode) {
		fprintf(stderr, "%s attach: --count goes with --follow\n", prog);
		return EXIT_USAGE;
	}
	if (count_s && fr_parse_u64(count_s, 1, 1000000000, &count) < 0) {
		fprintf(stderr, "%s attach: --count: expected a number of windows of at least 1, "
			"got \"%s\"\n", prog, count_s);
		return EXIT_USAGE;
	}
	if (follow_mode) {
		struct stat st;
		const char *dir = q.out_s ? q.out_s : ".";

		if (!q.window_s) {
			fprintf(stderr, "%s attach: --follow takes --window DURATION (the length of "
				"each profile), not --from/--to\n", prog);
			return EXIT_USAGE;
		}
		/* The recorder waits at most this long (plus a minute) for a
		 * follower's next request. */
		if (q.window > FR_IPC_FOLLOW_WINDOW_MAX_NS) {
			fprintf(stderr, "%s attach: --follow takes a --window of at most 1h, got "
				"\"%s\"\n", prog, q.window_s);
			return EXIT_USAGE;
		}
		if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr, "%s attach: --follow writes one file per window into a "
				"directory; %s is not a directory\n", prog, dir);
			return EXIT_USAGE;
		}
	}

	status = 1;
	socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	if (!socket_path)
		goto out;
	sock = connect_daemon(socket_path);
	if (sock < 0)
		goto out;
	if (follow_mode) {
		status = follow(sock, socket_path, &q, q.out_s ? q.out_s : ".", count);
		goto out;
	}

	fr_query_attach_req(&q, &ar);
	if (!q.out_s) {
		out_name = default_output_name(q.format);
		if (!out_name)
			goto out;
		q.out_s = out_name;
	}
	if (attach_one(sock, socket_path, &ar, q.out_s) != 0)
		goto out;
	if (out_name)
		printf("%s\n", out_name);
	status = 0;
out:
	if (sock >= 0)
		close(sock);
	free(socket_path);
	free(out_name);
	return status;
}

static void human_duration(int64_t ns, char *buf, size_t len)
{
	int64_t s = ns / 1000000000;

	if (s >= 86400)
		snprintf(buf, len, "%lldd %lldh %lldm", (long long)(s / 86400),
			 (long long)(s % 86400 / 3600), (long long)(s % 3600 / 60));
	else if (s >= 3600)
		snprintf(buf, len, "%lldh %lldm %llds", (long long)(s / 3600),
			 (long long)(s % 3600 / 60), (long long)(s % 60));
	else if (s >= 60)
		snprintf(buf, len, "%lldm %llds", (long long)(s / 60), (long long)(s % 60));
	else
		snprintf(buf, len, "%.1fs", (double)ns / 1e9);
}

/* The ring facts shared by status and dump --info. */
static void print_ring(const cJSON *ring, double lost)
{
	char a[64], b[64], size[32], seg[32], used[32];
	double samples = num(ring, "samples"), bytes = num(ring, "bytes_used");

	printf("ring:     %s, %s in %.0f segments of %s; %.0f segments in use, %s of chunks "
	       "(%.0f%%)\n",
	       str(ring, "path"), fr_format_size_human((uint64_t)num(ring, "size"), size, sizeof(size)),
	       num(ring, "segments"),
	       fr_format_size_human((uint64_t)num(ring, "segment_size"), seg, sizeof(seg)),
	       num(ring, "segments_used"), fr_format_size_human((uint64_t)bytes, used, sizeof(used)),
	       num(ring, "size") > 0 ? 100.0 * bytes / num(ring, "size") : 0.0);
	if (num(ring, "chunks") > 0) {
		char span[64];
		human_duration((int64_t)(num(ring, "newest_ns") - num(ring, "oldest_ns")), span,
			       sizeof(span));
		printf("span:     %s .. %s (%s)\n",
		       fr_format_time((int64_t)num(ring, "oldest_ns"), a, sizeof(a)),
		       fr_format_time((int64_t)num(ring, "newest_ns"), b, sizeof(b)), span);
	} else {
		printf("span:     empty\n");
	}
	printf("stored:   %.0f samples in %.0f chunks", samples, num(ring, "chunks"));
	if (samples > 0)
		printf(", %.1f bytes/sample, compression %.1fx", bytes / samples,
		       bytes > 0 ? num(ring, "raw_bytes") / bytes : 0.0);
	printf(" (format version %.0f)\n", num(ring, "format_version"));
	if (num(ring, "journal_size") > 0) {
		char js[32], jb[32];

		printf("journal:  %s; %.0f samples of the last seconds in %.0f chunks (%s), "
		       "not yet merged\n",
		       fr_format_size_human((uint64_t)num(ring, "journal_size"), js, sizeof(js)),
		       num(ring, "journal_samples"), num(ring, "journal_chunks"),
		       fr_format_size_human((uint64_t)num(ring, "journal_bytes"), jb, sizeof(jb)));
	}
	printf("damage:   %.0f corrupt chunks skipped\n", num(ring, "corrupt_chunks"));
	{
		const char *sb = str(ring, "superblock");
		bool copy = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ring, "superblock_copy"));

		/* No "superblock": a recorder from before superblock copies. */
		if (!strcmp(sb, "copy"))
			printf("superblock: damaged; read through its copy at the end of the file\n");
		else if (!strcmp(sb, "repaired"))
			printf("superblock: was damaged; rewritten from its copy at the end of the file\n");
		else if (sb[0])
			printf("superblock: intact, %s\n",
			       copy ? "with a copy at the end of the file"
				    : "no copy (made before copies existed; a recorder adds one)");
	}
	printf("lost:     %.0f samples lost by the kernel\n", lost);
}

/* "cpu@99Hz,offcpu": a reply's list of {"event", "hz"}, hz left out when
 * 0 (offcpu). Cut at `len`. */
static void format_events(const cJSON *events, char *buf, size_t len)
{
	const cJSON *e;
	size_t used = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(e, events) {
		int k = num(e, "hz") > 0 ? snprintf(buf + used, len - used, "%s%s@%.0fHz",
						    used ? "," : "", str(e, "event"), num(e, "hz"))
					 : snprintf(buf + used, len - used, "%s%s", used ? "," : "",
						    str(e, "event"));
		if (k < 0 || (size_t)k >= len - used)
			break;
		used += (size_t)k;
	}
}

/* The ingest thread's progress: one line, louder when it is stuck. */
static void print_ingest(const cJSON *in)
{
	char when[64], busy[64];

	if (!in)
		return;
	fr_format_time((int64_t)num(in, "last_drain_ns"), when, sizeof(when));
	printf("ingest:   %s, last drain %s, %.0f stalls, %.0f flush timeouts\n",
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(in, "stalled")) ? "STALLED" : "running",
	       when, num(in, "stalls"), num(in, "flush_timeouts"));
	if (num(in, "build_id_read_busy_ns") > 1e9) {
		human_duration((int64_t)num(in, "build_id_read_busy_ns"), busy, sizeof(busy));
		printf("files:    a build id read has taken %s (%.0f waiting); recording goes on "
		       "without it\n", busy, num(in, "build_id_reads_pending"));
	}
}

static void print_status(const cJSON *r)
{
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(r, "events"), *ev;
	char up[64];

	human_duration((int64_t)num(r, "uptime_ns"), up, sizeof(up));
	printf("flightrecd %s, pid %.0f, up %s (config: %s)\n", str(r, "version"), num(r, "pid"),
	       up, str(r, "config"));
	cJSON_ArrayForEach(ev, events) {
		if (strcmp(str(ev, "state"), "recording") != 0) {
			printf("event:    %s not recording: %s\n", str(ev, "event"), str(ev, "error"));
			continue;
		}
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ev, "every_switch")))
			printf("event:    %s at every context switch", str(ev, "event"));
		else
			printf("event:    %s at %.0f Hz", str(ev, "event"), num(ev, "hz"));
		printf(" on %.0f CPUs (%s stacks): %.0f samples, %.0f lost, %.0f throttled, "
		       "%.0f truncated stacks\n", num(r, "cpus"), str(ev, "stacks"),
		       num(ev, "samples"), num(ev, "lost"), num(ev, "throttled"),
		       num(ev, "truncated_stacks"));
	}
	cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(r, "consumers")) {
		char wants[256];

		format_events(cJSON_GetObjectItemCaseSensitive(ev, "events"), wants, sizeof(wants));
		printf("consumer: %s wants %s\n", str(ev, "name"), wants);
	}
	print_ring(cJSON_GetObjectItemCaseSensitive(r, "ring"), num(r, "samples_lost"));
	if (num(r, "chunks_dropped") > 0 || num(r, "write_errors") > 0)
		printf("writes:   %.0f chunks dropped (disk too slow), %.0f write errors\n",
		       num(r, "chunks_dropped"), num(r, "write_errors"));
	printf("tracking: %.0f processes, %.0f threads\n", num(r, "processes"), num(r, "threads"));
	print_ingest(cJSON_GetObjectItemCaseSensitive(r, "ingest"));
}

/* Sends the request `cmd` (no arguments) to the recorder and returns its
 * successful reply, parsed in *resp and as received in *text (both freed
 * by the caller). Returns 0, or 1 after saying what went wrong. */
static int simple_request(const char *cmd, const char *socket_s, cJSON **resp, char **text)
{
	char *socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	cJSON *req = cJSON_CreateObject();
	int sock = -1, status = 1, ret;

	*resp = NULL;
	*text = NULL;
	if (!socket_path || !req)
		goto out;
	cJSON_AddStringToObject(req, "req", cmd);
	sock = connect_daemon(socket_path);
	if (sock < 0)
		goto out;
	ret = fr_ipc_call_text(sock, req, -1, resp, text);
	if (ret < 0) {
		report_call_error(ret, socket_path, resp);
		goto out;
	}
	if (resp_error(*resp)) {
		fprintf(stderr, "%s: %s\n", prog, resp_error(*resp));
		goto out;
	}
	status = 0;
out:
	if (sock >= 0)
		close(sock);
	cJSON_Delete(req);
	free(socket_path);
	return status;
}

static int cmd_status(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"json", no_argument, NULL, FR_OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *socket_s = NULL;
	cJSON *resp = NULL;
	char *text = NULL;
	int c, json = 0, status;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case FR_OPT_SOCKET: socket_s = optarg; break;
		case FR_OPT_JSON: json = 1; break;
		case 'h': usage_status(stdout); return 0;
		default: return bad_option("status", argv);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s status: unexpected argument \"%s\" (see %s status --help)\n", prog,
			argv[optind], prog);
		return EXIT_USAGE;
	}
	status = simple_request("status", socket_s, &resp, &text);
	if (status == 0) {
		/* --json prints the reply as received: its integers are exact,
		 * unlike cJSON's doubles. */
		if (json)
			printf("%s\n", text);
		else
			print_status(resp);
	}
	cJSON_Delete(resp);
	free(text);
	return status;
}

static void usage_sessions(FILE *f)
{
	fprintf(f,
		"Usage: flightrec sessions [--json] [--socket PATH]\n"
		"List the recorder's sessions (from its configuration): their events and\n"
		"rates, targets, triggers and last dump, and the rate the recorder samples\n"
		"at (the highest any session asks for, unless flightrecd --hz set it).\n"
		"\n"
		"  --json         print the recorder's reply as one JSON object\n"
		"  --socket PATH  the recorder's socket\n"
		"  -h, --help     show this help\n");
}

static int cmd_sessions(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"json", no_argument, NULL, FR_OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *socket_s = NULL;
	char *text = NULL;
	cJSON *resp = NULL;
	const cJSON *sess;
	int c, json = 0, status;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case FR_OPT_SOCKET: socket_s = optarg; break;
		case FR_OPT_JSON: json = 1; break;
		case 'h': usage_sessions(stdout); return 0;
		default: return bad_option("sessions", argv);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s sessions: unexpected argument \"%s\" (see %s sessions --help)\n",
			prog, argv[optind], prog);
		return EXIT_USAGE;
	}
	status = simple_request("sessions", socket_s, &resp, &text);
	if (status)
		goto out;
	if (json) {
		printf("%s\n", text);
		goto out;
	}
	printf("%-20s %-24s %-16s %-10s %s\n", "SESSION", "EVENTS", "TARGETS", "TRIGGERS",
	       "LAST DUMP");
	cJSON_ArrayForEach(sess, cJSON_GetObjectItemCaseSensitive(resp, "sessions")) {
		char events[256], last[64] = "never";
		const cJSON *triggers = cJSON_GetObjectItemCaseSensitive(sess, "triggers");

		format_events(cJSON_GetObjectItemCaseSensitive(sess, "events"), events, sizeof(events));
		char trig[256] = "";
		const cJSON *tr;
		size_t tused = 0;

		cJSON_ArrayForEach(tr, triggers) {
			int k;
			if (strcmp(str(tr, "on"), "signal") == 0)
				k = snprintf(trig + tused, sizeof(trig) - tused, "%ssignal:%s",
					     tused ? "," : "", str(tr, "signal"));
			else if (strcmp(str(tr, "on"), "cpu_above") == 0)
				k = snprintf(trig + tused, sizeof(trig) - tused, "%scpu>%.0f%%",
					     tused ? "," : "", num(tr, "percent"));
			else
				k = snprintf(trig + tused, sizeof(trig) - tused, "%s%s",
					     tused ? "," : "", str(tr, "on"));
			if (k < 0 || (size_t)k >= sizeof(trig) - tused)
				break;
			tused += (size_t)k;
		}
		if (num(sess, "last_dump_ns") > 0)
			fr_format_time((int64_t)num(sess, "last_dump_ns"), last, sizeof(last));
		printf("%-20s %-24s %-16s %-10s %s\n", str(sess, "name"), events, str(sess, "targets"),
		       trig[0] ? trig : "none", last);
	}
	{
		const cJSON *ev;

		cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(resp, "events")) {
			if (strcmp(str(ev, "state"), "recording") != 0)
				printf("recording: %s failed: %s\n", str(ev, "event"),
				       str(ev, "error"));
			else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ev, "every_switch")))
				printf("recording: %s at every context switch (config: %s)\n",
				       str(ev, "event"), str(resp, "config"));
			else
				printf("recording: %s at %.0f Hz per CPU (%s; config: %s)\n",
				       str(ev, "event"), num(ev, "hz"),
				       strcmp(str(ev, "event"), "cpu") == 0 &&
						       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
							       resp, "hz_from_command_line"))
					       ? "set by flightrecd --hz"
					       : "the highest rate any session or client asks for",
				       str(resp, "config"));
		}
	}
out:
	cJSON_Delete(resp);
	free(text);
	return status;
}

static void usage_dump(FILE *f)
{
	fprintf(f,
		"Usage: flightrec dump --ring FILE --window DURATION [OPTION]...\n"
		"       flightrec dump --ring FILE --from TIME [--to TIME] [OPTION]...\n"
		"       flightrec dump --ring FILE --info [--json]\n"
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
		"  --from TIME        window start: RFC 3339 (2026-11-22T13:05:00Z) or Unix seconds\n"
		"  --to TIME          window end (default: the newest sample)\n"
		"  -o, --output FILE  where to write (default flightrec-HOST-UTCTIME.pb.gz here,\n"
		"                     .folded for --format folded)\n"
		"  --pid PID[,PID...] only these processes\n"
		"  --children         with --pid: also every process they started, and theirs\n"
		"  --event E[,E...]   events, one value column each (default cpu; see attach)\n"
		"  --comm NAME[,...]  only processes with these command names\n"
		"  --cgroup PATH      only processes in this cgroup v2 path or below it\n"
		"  --hz N             samples per second per CPU in the profile\n"
		"  --format FORMAT    pprof (default: gzip'ed pprof) or folded (collapsed\n"
		"                     stacks for flamegraph.pl, speedscope, inferno)\n"
		"  --info             show the ring's span, use, samples, compression, damage\n"
		"  --json             with --info: one JSON object (times in Unix ns, sizes in bytes)\n"
		"  --session NAME     dump a configured session now, through the recorder\n"
		"  --socket PATH      with --session: the recorder's socket\n"
		"  -h, --help         show this help\n"
		"\n"
		"Examples:\n"
		"  flightrec dump --ring /var/lib/flightrec/ring --window 10m -o crash.pb.gz\n"
		"  flightrec dump --ring ring.copy --info --json\n"
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
		void *buf = NULL;
		struct fr_chunk *c = NULL;

		/* A chunk found damaged here is counted by the ring. */
		if (fr_ring_read(ring, &refs[i], &buf) == 0 &&
		    fr_chunk_decode(buf, refs[i].len, &c) == 0)
			for (uint32_t e = 0; e < c->nevents; e++)
				lost += c->events[e].lost;
		fr_chunk_free(c);
		free(buf);
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
		print_ring(ring_json, (double)lost);
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

	if (window_s && (fr_parse_duration(window_s, &dq.window_ns) < 0 ||
			 dq.window_ns < FR_IPC_DUMP_WINDOW_MIN_NS ||
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
	sock = connect_daemon(socket_path);
	if (sock < 0)
		goto out;
	if (call(sock, socket_path, req, -1, &resp) < 0)
		goto out;
	if (resp_error(resp) || fr_ipc_dump_reply_decode(resp, reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, resp_error(resp) ? resp_error(resp) : err);
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

static int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		FR_QUERY_LONGOPTS,
		{"ring", required_argument, NULL, FR_OPT_RING},
		{"info", no_argument, NULL, FR_OPT_INFO},
		{"json", no_argument, NULL, FR_OPT_JSON},
		{"session", required_argument, NULL, FR_OPT_SESSION},
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct fr_query_args q = {0};
	const char *ring_s = NULL, *session_s = NULL, *socket_s = NULL;
	struct fr_ring *ring = NULL;
	struct fr_ring_stats st;
	struct fr_profile_request req;
	struct fr_profile_result res;
	struct fr_uring *uring = NULL;
	struct fr_uring_writer *w = NULL;
	struct output out = {.fd = -1};
	struct progress prog_line;
	char *out_name = NULL;
	char err[512];
	int c, info = 0, json = 0, status = EXIT_USAGE, ret;

	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		if ((ret = fr_query_opt("flightrec dump", c, optarg, &q)) == 1)
			continue;
		if (ret)
			return ret;
		switch (c) {
		case FR_OPT_RING: ring_s = optarg; break;
		case FR_OPT_INFO: info = 1; break;
		case FR_OPT_JSON: json = 1; break;
		case FR_OPT_SESSION: session_s = optarg; break;
		case FR_OPT_SOCKET: socket_s = optarg; break;
		case 'h': usage_dump(stdout); return 0;
		default: return bad_option("dump", argv);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s dump: unexpected argument \"%s\" (see %s dump --help)\n", prog,
			argv[optind], prog);
		return EXIT_USAGE;
	}
	if (session_s) {
		if (ring_s || info || json || q.from_s || q.to_s || q.out_s || q.npids || q.hz ||
		    q.format || q.nevents || q.ncomms || q.cgroup[0]) {
			fprintf(stderr, "%s dump: --session takes only --window and --socket (the "
				"session says what to record and where the dump goes)\n", prog);
			return EXIT_USAGE;
		}
		return dump_session(session_s, q.window_s, socket_s);
	}
	if (socket_s) {
		fprintf(stderr, "%s dump: --socket goes with --session\n", prog);
		return EXIT_USAGE;
	}
	if (!ring_s) {
		fprintf(stderr, "%s dump: --ring FILE is required (the recorder's is "
			"/var/lib/flightrec/ring)\n", prog);
		return EXIT_USAGE;
	}
	if (json && !info) {
		fprintf(stderr, "%s dump: --json goes with --info\n", prog);
		return EXIT_USAGE;
	}
	if (info && (q.window_s || q.from_s || q.to_s || q.out_s || q.npids || q.hz || q.format ||
		     q.nevents || q.ncomms || q.cgroup[0])) {
		fprintf(stderr, "%s dump: --info takes no window, output, pid, rate or format "
			"options\n", prog);
		return EXIT_USAGE;
	}
	if (!info && fr_query_finish("flightrec dump", &q))
		return EXIT_USAGE;

	status = 1;
	err[0] = '\0';
	progress_start(&prog_line, "scanning the ring");
	ret = fr_ring_open(&ring, ring_s, 0, 0, FR_RING_RDONLY, err, sizeof(err));
	progress_stop(&prog_line);
	if (ret < 0) {
		fprintf(stderr, "%s dump: %s\n", prog, err[0] ? err : strerror(-ret));
		return 1;
	}
	if (info) {
		status = dump_info(ring, json);
		goto out;
	}

	fr_ring_get_stats(ring, &st);
	if (!st.chunks) {
		fprintf(stderr, "%s dump: %s holds no samples; nothing to write\n", prog, ring_s);
		goto out;
	}
	memset(&req, 0, sizeof(req));
	if (q.window_s) {
		/* The window ends where the recording ends, not now: after a crash
		 * the interesting minutes are the last ones the ring holds. */
		req.t1 = st.newest_ns + 1;
		req.t0 = req.t1 - q.window;
	} else {
		req.t0 = q.from;
		req.t1 = q.to_s ? q.to : st.newest_ns + 1;
		if (req.t1 <= req.t0) {
			char when[64];
			fprintf(stderr, "%s dump: the ring's newest sample (%s) is before --from\n",
				prog, fr_format_time(st.newest_ns, when, sizeof(when)));
			goto out;
		}
	}
	req.npids = q.npids;
	memcpy(req.pids, q.pids, sizeof(req.pids));
	req.nevents = q.nevents;
	memcpy(req.events, q.events, sizeof(req.events));
	req.ncomms = q.ncomms;
	memcpy(req.comms, q.comms, sizeof(req.comms));
	memcpy(req.cgroup, q.cgroup, sizeof(req.cgroup));
	req.children = q.children;
	req.hz = (uint32_t)q.hz;
	req.format = q.format;
	req.version = FR_VERSION;

	if (!q.out_s) {
		out_name = default_output_name(q.format);
		if (!out_name)
			goto out;
		q.out_s = out_name;
	}
	w = malloc(sizeof(*w));
	ret = w ? fr_uring_open(&uring, 8) : -ENOMEM;
	if (ret < 0) {
		fprintf(stderr, "%s dump: cannot set up the output: %s\n", prog, strerror(-ret));
		goto out;
	}
	if (open_output(&out, q.out_s) < 0)
		goto out;
	fr_uring_writer_init(w, uring, out.fd);
	progress_start(&prog_line, "building the profile");
	ret = fr_profile_write(ring, &req, fr_uring_writer_write, w, &res, err, sizeof(err));
	progress_stop(&prog_line);
	if (ret == 0)
		ret = fr_uring_writer_flush(w);
	if (ret < 0) {
		fprintf(stderr, "%s dump: %s\n", prog, err[0] ? err : strerror(-ret));
		commit_output(&out, 0);
		goto out;
	}
	if (commit_output(&out, 1) < 0)
		goto out;
	if (res.warning[0])
		fprintf(stderr, "%s: warning: %s\n", prog, res.warning);
	print_summary(q.out_s, res.samples_kept, res.stacks, req.t0, req.t1, res.hz, w->written);
	if (out_name)
		printf("%s\n", out_name);
	status = 0;
out:
	fr_uring_close(uring);
	free(w);
	free(out_name);
	fr_ring_close(ring);
	return status;
}

int main(int argc, char **argv)
{
	const char *cmd;

	fr_log_set_ident("flightrec");
	caller_umask = umask(022);
	umask(caller_umask);
	opterr = 0;
	if (argc < 2) {
		usage_main(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		usage_main(stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
		printf("flightrec %s\n", FR_VERSION);
		return 0;
	}
	/* The command's options start after its name. */
	argc--;
	argv++;
	optind = 1;
	if (strcmp(cmd, "attach") == 0)
		return cmd_attach(argc, argv);
	if (strcmp(cmd, "status") == 0)
		return cmd_status(argc, argv);
	if (strcmp(cmd, "dump") == 0)
		return cmd_dump(argc, argv);
	if (strcmp(cmd, "sessions") == 0)
		return cmd_sessions(argc, argv);
	if (strcmp(cmd, "top") == 0)
		return fr_top_main(argc, argv);
	fprintf(stderr, "%s: unknown command \"%s\" (commands: attach, status, dump, sessions, top; see %s --help)\n",
		prog, cmd, prog);
	return EXIT_USAGE;
}
