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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/parse.h"
#include "fr_version.h"
#include "ipc/client.h"
#include "ipc/proto.h"

#define EXIT_USAGE 2

static const char *prog = "flightrec";

static void usage_main(FILE *f)
{
	fprintf(f,
		"Usage: flightrec COMMAND [OPTION]...\n"
		"Read back what flightrecd recorded on this machine.\n"
		"\n"
		"Commands:\n"
		"  attach    write a pprof profile of a recent window (e.g. the last minute)\n"
		"  status    show the recorder: events, rates, ring span, samples, losses\n"
		"\n"
		"Run `flightrec COMMAND --help` for a command's options.\n"
		"The socket is --socket PATH, else $FLIGHTREC_SOCKET, else the daemon's default\n"
		"(/run/flightrec/flightrec.sock as root).\n"
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
		"  -o, --output FILE  where to write (default flightrec-HOST-UTCTIME.pb.gz here)\n"
		"  --pid PID[,PID...] only these processes (all their threads)\n"
		"  --hz N             samples per second per CPU in the profile (default: as\n"
		"                     recorded; lower rates are downsampled deterministically)\n"
		"  --socket PATH      the recorder's socket\n"
		"  -h, --help         show this help\n"
		"\n"
		"Examples:\n"
		"  flightrec attach --window 60s -o incident.pb.gz\n"
		"  flightrec attach --window 5m --pid 1234 -o api.pb.gz\n");
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

static int bad_option(const char *cmd, char **argv, void (*usage)(FILE *))
{
	const char *arg = argv[optind - 1];

	if (optopt && optopt < 256)
		fprintf(stderr, "%s %s: option -%c is unknown or needs a value (see %s %s --help)\n",
			prog, cmd, optopt, prog, cmd);
	else
		fprintf(stderr, "%s %s: unknown option or missing value: %s (see %s %s --help)\n",
			prog, cmd, arg, prog, cmd);
	(void)usage;
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

static int call(int sock, const char *path, cJSON *req, int pass_fd, cJSON **resp)
{
	int ret = fr_ipc_call(sock, req, pass_fd, resp);

	if (ret == -EPROTO) {
		fprintf(stderr, "%s: the recorder at %s speaks another protocol version: %s\n",
			prog, path, *resp && resp_error(*resp) ? resp_error(*resp) : "no details");
		cJSON_Delete(*resp);
		*resp = NULL;
	} else if (ret == -EAGAIN)
		fprintf(stderr, "%s: the recorder at %s did not answer in time\n", prog, path);
	else if (ret < 0)
		fprintf(stderr, "%s: lost the connection to the recorder at %s: %s\n", prog, path,
			strerror(-ret));
	return ret;
}

static double num(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : "";
}

static int parse_pids(const char *text, cJSON *arr)
{
	const char *p = text;

	if (!*p)
		return -EINVAL;
	while (*p) {
		char *end;
		unsigned long v;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || v == 0 || v > INT32_MAX)
			return -EINVAL;
		cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)v));
		if (*end == ',' && end[1])
			p = end + 1;
		else if (*end == '\0')
			p = end;
		else
			return -EINVAL;
	}
	return 0;
}

static char *default_output_name(void)
{
	char host[256] = "host", stamp[32], *name = NULL;
	time_t now = time(NULL);
	struct tm tm;

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	for (char *c = host; *c; c++)
		if (*c == '/')
			*c = '_';
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	return asprintf(&name, "flightrec-%s-%s.pb.gz", host, stamp) < 0 ? NULL : name;
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
	fchmod(o->fd, 0644 & ~(mode_t)0);
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

static int cmd_attach(int argc, char **argv)
{
	enum { OPT_WINDOW = 256, OPT_FROM, OPT_TO, OPT_PID, OPT_HZ, OPT_SOCKET };
	static const struct option longopts[] = {
		{"window", required_argument, NULL, OPT_WINDOW},
		{"from", required_argument, NULL, OPT_FROM},
		{"to", required_argument, NULL, OPT_TO},
		{"output", required_argument, NULL, 'o'},
		{"pid", required_argument, NULL, OPT_PID},
		{"hz", required_argument, NULL, OPT_HZ},
		{"socket", required_argument, NULL, OPT_SOCKET},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *window_s = NULL, *from_s = NULL, *to_s = NULL, *out_s = NULL, *socket_s = NULL;
	cJSON *req = cJSON_CreateObject(), *pids = NULL, *resp = NULL;
	char *socket_path = NULL, *out_name = NULL;
	int64_t window = 0, from = 0, to = 0;
	uint64_t hz = 0;
	struct output out = {.fd = -1};
	int c, sock = -1, status = EXIT_USAGE, ret;

	if (!req)
		return 1;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_WINDOW: window_s = optarg; break;
		case OPT_FROM: from_s = optarg; break;
		case OPT_TO: to_s = optarg; break;
		case 'o': out_s = optarg; break;
		case OPT_SOCKET: socket_s = optarg; break;
		case OPT_PID:
			if (!pids)
				pids = cJSON_AddArrayToObject(req, "pids");
			if (parse_pids(optarg, pids) < 0) {
				fprintf(stderr, "%s attach: --pid: expected process ids like 1234 or "
					"1234,5678, got \"%s\"\n", prog, optarg);
				goto out;
			}
			break;
		case OPT_HZ:
			if (fr_parse_u64(optarg, 1, 1000000, &hz) < 0) {
				fprintf(stderr, "%s attach: --hz: expected a rate of 1..1000000 samples "
					"per second, got \"%s\"\n", prog, optarg);
				goto out;
			}
			break;
		case 'h':
			usage_attach(stdout);
			status = 0;
			goto out;
		default:
			status = bad_option("attach", argv, usage_attach);
			goto out;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s attach: unexpected argument \"%s\" (see %s attach --help)\n",
			prog, argv[optind], prog);
		goto out;
	}
	if (window_s && (from_s || to_s)) {
		fprintf(stderr, "%s attach: give either --window or --from/--to, not both\n", prog);
		goto out;
	}
	if (!window_s && !from_s) {
		fprintf(stderr, "%s attach: --window DURATION (or --from TIME) is required, "
			"e.g. --window 60s\n", prog);
		goto out;
	}
	if (to_s && !from_s) {
		fprintf(stderr, "%s attach: --to needs --from\n", prog);
		goto out;
	}
	if (window_s) {
		ret = fr_parse_duration(window_s, &window);
		if (ret < 0) {
			fprintf(stderr, "%s attach: --window: expected a duration like 500ms, 10s, 5m "
				"or 1h, got \"%s\"\n", prog, window_s);
			goto out;
		}
		if (window <= 0) {
			fprintf(stderr, "%s attach: --window: must be longer than zero, got \"%s\"\n",
				prog, window_s);
			goto out;
		}
		cJSON_AddNumberToObject(req, "window_ns", (double)window);
	}
	if (from_s) {
		if (fr_parse_time(from_s, &from) < 0) {
			fprintf(stderr, "%s attach: --from: expected RFC 3339 time like "
				"2026-11-22T13:05:00Z or Unix seconds, got \"%s\"\n", prog, from_s);
			goto out;
		}
		cJSON_AddNumberToObject(req, "from_ns", (double)from);
	}
	if (to_s) {
		if (fr_parse_time(to_s, &to) < 0) {
			fprintf(stderr, "%s attach: --to: expected RFC 3339 time like "
				"2026-11-22T13:06:00Z or Unix seconds, got \"%s\"\n", prog, to_s);
			goto out;
		}
		if (to <= from) {
			fprintf(stderr, "%s attach: --to must be later than --from\n", prog);
			goto out;
		}
		cJSON_AddNumberToObject(req, "to_ns", (double)to);
	}
	if (hz)
		cJSON_AddNumberToObject(req, "hz", (double)hz);
	cJSON_AddStringToObject(req, "req", "attach");

	status = 1;
	socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	if (!socket_path)
		goto out;
	sock = connect_daemon(socket_path);
	if (sock < 0)
		goto out;
	if (!out_s) {
		out_name = default_output_name();
		if (!out_name)
			goto out;
		out_s = out_name;
	}
	if (open_output(&out, out_s) < 0)
		goto out;
	ret = call(sock, socket_path, req, out.fd, &resp);
	if (ret < 0) {
		commit_output(&out, 0);
		goto out;
	}
	if (resp_error(resp)) {
		fprintf(stderr, "%s: %s\n", prog, resp_error(resp));
		commit_output(&out, 0);
		goto out;
	}
	if (commit_output(&out, 1) < 0)
		goto out;
	{
		const cJSON *w, *warnings = cJSON_GetObjectItemCaseSensitive(resp, "warnings");
		char dur[32], size[32];

		cJSON_ArrayForEach(w, warnings)
			if (cJSON_IsString(w))
				fprintf(stderr, "%s: warning: %s\n", prog, w->valuestring);
		fprintf(stderr, "%s: wrote %s: %.0f samples, %.0f stacks, %s window at %.0f Hz (%s)\n",
			prog, out_s, num(resp, "samples"), num(resp, "stacks"),
			fr_format_duration((int64_t)(num(resp, "t1_ns") - num(resp, "t0_ns")), dur,
					   sizeof(dur)),
			num(resp, "hz"), fr_format_size_human((uint64_t)num(resp, "bytes"), size, sizeof(size)));
		if (out_name)
			printf("%s\n", out_name);
	}
	status = 0;
out:
	if (sock >= 0)
		close(sock);
	cJSON_Delete(req);
	cJSON_Delete(resp);
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

static void print_status(const cJSON *r)
{
	const cJSON *ring = cJSON_GetObjectItemCaseSensitive(r, "ring");
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(r, "events"), *ev;
	char up[64], a[64], b[64], size[32], seg[32], used[32];
	double samples = num(ring, "samples"), bytes = num(ring, "bytes_used");

	human_duration((int64_t)num(r, "uptime_ns"), up, sizeof(up));
	printf("flightrecd %s, pid %.0f, up %s (config: %s)\n", str(r, "version"), num(r, "pid"),
	       up, str(r, "config"));
	cJSON_ArrayForEach(ev, events)
		printf("event:    %s at %.0f Hz on %.0f CPUs (%s stacks): %.0f samples, %.0f lost, "
		       "%.0f throttled, %.0f truncated stacks\n",
		       str(ev, "event"), num(ev, "hz"), num(r, "cpus"), str(ev, "stacks"),
		       num(ev, "samples"), num(ev, "lost"), num(ev, "throttled"),
		       num(ev, "truncated_stacks"));
	printf("ring:     %s, %s in %.0f segments of %s; %s used (%.0f%%)\n", str(ring, "path"),
	       fr_format_size_human((uint64_t)num(ring, "size"), size, sizeof(size)),
	       num(ring, "segments"), fr_format_size_human((uint64_t)num(ring, "segment_size"), seg, sizeof(seg)),
	       fr_format_size_human((uint64_t)bytes, used, sizeof(used)),
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
	printf("\n");
	printf("lost:     %.0f samples lost by the kernel; %.0f corrupt chunks skipped; "
	       "%.0f chunks dropped\n", num(r, "samples_lost"), num(ring, "corrupt_chunks"),
	       num(r, "chunks_dropped"));
	printf("tracking: %.0f processes, %.0f threads\n", num(r, "processes"), num(r, "threads"));
}

static int cmd_status(int argc, char **argv)
{
	enum { OPT_SOCKET = 256, OPT_JSON };
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, OPT_SOCKET},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *socket_s = NULL;
	char *socket_path = NULL;
	cJSON *req = NULL, *resp = NULL;
	int c, json = 0, sock = -1, status = 1;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_SOCKET: socket_s = optarg; break;
		case OPT_JSON: json = 1; break;
		case 'h': usage_status(stdout); return 0;
		default: return bad_option("status", argv, usage_status);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s status: unexpected argument \"%s\" (see %s status --help)\n", prog,
			argv[optind], prog);
		return EXIT_USAGE;
	}
	socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	req = cJSON_CreateObject();
	if (!socket_path || !req)
		goto out;
	cJSON_AddStringToObject(req, "req", "status");
	sock = connect_daemon(socket_path);
	if (sock < 0 || call(sock, socket_path, req, -1, &resp) < 0)
		goto out;
	if (resp_error(resp)) {
		fprintf(stderr, "%s: %s\n", prog, resp_error(resp));
		goto out;
	}
	if (json) {
		cJSON_DeleteItemFromObjectCaseSensitive(resp, "ok");
		char *text = cJSON_PrintUnformatted(resp);
		if (!text)
			goto out;
		printf("%s\n", text);
		free(text);
	} else {
		print_status(resp);
	}
	status = 0;
out:
	if (sock >= 0)
		close(sock);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	free(socket_path);
	return status;
}

int main(int argc, char **argv)
{
	const char *cmd;

	fr_log_set_ident("flightrec");
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
	fprintf(stderr, "%s: unknown command \"%s\" (commands: attach, status; see %s --help)\n",
		prog, cmd, prog);
	return EXIT_USAGE;
}
