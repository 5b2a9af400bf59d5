/* flightrec goroutines: every goroutine of a Go process, now, read by the
 * recorder from the process's memory without stopping it
 * (recorder/requests/goroutines.h). The recorder writes the answer as a
 * gzip'ed pprof into a file passed with the request, as for threads;
 * this file asks for it and keeps it (-o) or has goroutines_view.c show
 * it, which also renders a file written earlier (--from). */
#include "tools/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/util/log.h"
#include "core/util/parse.h"
#include "ipc/client.h"
#include "ipc/msg_goroutines.h"
#include "tools/goroutines.h"
#include "tools/query.h"

static const char *prog = FR_CLI_PROG;

enum { OPT_FROM = 1024, OPT_AT };

static void usage_goroutines(FILE *f)
{
	fprintf(f,
		"Usage: flightrec goroutines --pid PID [--at TIME] [--json | -o FILE.pb.gz]\n"
		"       flightrec goroutines --from FILE.pb.gz [--json]\n"
		"List every goroutine of a Go process, now, read from its memory without\n"
		"stopping it (no ptrace, no signal): its id, its state and what it waits\n"
		"for as Go names it (chan receive, select, IO wait, ...), how long it has\n"
		"waited, the goroutine and the go statement that created it, its pprof\n"
		"labels and its stack. Goroutines with the same state, stack, labels and\n"
		"creator are shown once, largest group first, as Go's own goroutine\n"
		"profile (debug=1) shows them.\n"
		"\n"
		"  --pid PID          the Go process\n"
		"  --at TIME          as the newest snapshot kept at or before TIME had them\n"
		"                     (-30s, 13:05:00 local, RFC 3339, @UNIX): a dump of a\n"
		"                     session whose targets run Go programs keeps one, taken\n"
		"                     at its trigger\n"
		"  --json             one JSON object: {\"pid\", \"go\", \"goroutines\": [...], ...}\n"
		"  -o, --output FILE  write the answer as pprof (- for standard output), one\n"
		"                     sample per goroutine with labels goid, state, wait,\n"
		"                     waiting_ns, creator_goid, created_by, created_at,\n"
		"                     thread, stack and the goroutine's own pprof labels\n"
		"                     (go tool pprof -traces FILE, -tags FILE)\n"
		"  --from FILE        render a goroutine profile written by -o (no recorder)\n"
		"  --socket PATH      the recorder's socket\n"
		"  -h, --help         show this help\n"
		"\n"
		"The runtime's own goroutines are left out, as Go leaves them out. A\n"
		"goroutine running on a CPU has no stack (its registers are not in\n"
		"memory), nor has one that changed under the reader twice. A waiting time\n"
		"with \"or more\" is a lower bound. Same rights as attach and threads: a\n"
		"user who is not root may look only at its own processes.\n"
		"\n"
		"Examples:\n"
		"  flightrec goroutines --pid 4242\n"
		"  flightrec goroutines --pid 4242 --json | jq '.goroutines[] | .wait'\n"
		"  flightrec goroutines --pid 4242 --at 13:05:00\n"
		"  flightrec goroutines --pid 4242 -o g.pb.gz && go tool pprof -traces g.pb.gz\n");
}

/* Asks the recorder for the goroutines of `q` into `fd`. Returns 0 with
 * *reply filled, or 1 after saying why not. */
static int ask(const char *socket_s, const struct fr_ipc_goroutines_req *q, int fd,
	       struct fr_ipc_goroutines_reply *reply)
{
	char *socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	cJSON *req = fr_ipc_goroutines_req_encode(q), *resp = NULL;
	char err[512] = "";
	int ret = 1;

	if (!socket_path || !req) {
		fprintf(stderr, "%s goroutines: out of memory\n", prog);
		goto out;
	}
	if (fr_cli_request(socket_path, req, fd, "", &resp) != 0)
		goto out;
	if (fr_ipc_goroutines_reply_decode(resp, reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		goto out;
	}
	ret = 0;
out:
	cJSON_Delete(req);
	cJSON_Delete(resp);
	free(socket_path);
	return ret;
}

/* The warnings of a kept answer, and what it holds in one line, on
 * standard error (standard output may be the answer). */
static void summary(const char *where, uint32_t pid, const struct fr_ipc_goroutines_reply *r)
{
	for (uint32_t i = 0; i < r->nwarnings; i++)
		fprintf(stderr, "%s: warning: %s\n", prog, r->warnings[i]);
	fprintf(stderr,
		"%s: %" PRIu64 " goroutines of process %" PRIu32 " (%s), %" PRIu64
		" of the runtime's own left out, %" PRIu64 " changed while read, %" PRIu64
		" bytes\n",
		where, r->goroutines, pid, r->go[0] ? r->go : "Go version unknown", r->system,
		r->changed, r->bytes);
}

/* -o -: the recorder writes only regular files, so the answer goes
 * through a memory file onto standard output. Returns the exit status. */
static int to_stdout(const char *socket_s, const struct fr_ipc_goroutines_req *q)
{
	struct fr_ipc_goroutines_reply reply;
	int fd, status = 1;

	if ((fd = fr_cli_answer_memfd("goroutines", 1)) < 0)
		return 1;
	if (ask(socket_s, q, fd, &reply) == 0 && fr_cli_copy_to_stdout(fd, "goroutines") == 0) {
		summary("standard output", q->pid, &reply);
		status = 0;
	}
	close(fd);
	return status;
}

/* -o FILE: written as attach and threads write theirs (a temporary file
 * renamed into place once complete, removed on failure). Returns the
 * exit status. */
static int to_file(const char *socket_s, const struct fr_ipc_goroutines_req *q, const char *path)
{
	struct fr_cli_output out = {.fd = -1};
	struct fr_ipc_goroutines_reply reply;

	if (strcmp(path, "-") == 0)
		return to_stdout(socket_s, q);
	if (fr_cli_output_open(&out, path, FR_PROFILE_PPROF) < 0)
		return 1;
	if (ask(socket_s, q, out.fd, &reply) != 0) {
		fr_cli_output_commit(&out, 0);
		return 1;
	}
	if (fr_cli_output_commit(&out, 1) < 0)
		return 1;
	summary(path, q->pid, &reply);
	return 0;
}

/* The answer read back from a memory file and shown. Returns the exit
 * status. */
static int show_now(const char *socket_s, const struct fr_ipc_goroutines_req *q, int json)
{
	struct fr_ipc_goroutines_reply reply;
	int fd = fr_cli_answer_memfd("goroutines", 0), status = 1;

	if (fd < 0)
		return 1;
	if (ask(socket_s, q, fd, &reply) == 0)
		status = fr_cli_goroutines_render(fd, "the recorder's answer", json, &reply);
	close(fd);
	return status;
}

/* --from FILE: a profile written by -o, shown without a recorder. */
static int show_file(const char *path, int json)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), status;

	if (fd < 0) {
		fprintf(stderr, "%s goroutines: cannot open %s: %s\n", prog, path, strerror(errno));
		return 1;
	}
	status = fr_cli_goroutines_render(fd, path, json, NULL);
	close(fd);
	return status;
}

/* What is wrong with the options, or NULL. */
static const char *misuse(int extra, uint64_t pid, int json, const char *out_s, const char *from,
			  const char *socket_s)
{
	if (extra)
		return "unexpected argument";
	if (json && out_s)
		return "--json and -o do not go together";
	if (from && (pid || out_s || socket_s))
		return "--from renders a file: --pid, -o and --socket do not go with it";
	if (!from && !pid)
		return "name the Go process: --pid PID";
	return NULL;
}

int fr_cmd_goroutines(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"pid", required_argument, NULL, FR_OPT_PID},
		{"output", required_argument, NULL, 'o'},
		{"json", no_argument, NULL, FR_OPT_JSON},
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"from", required_argument, NULL, OPT_FROM},
		{"at", required_argument, NULL, OPT_AT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *out_s = NULL, *from = NULL, *socket_s = NULL, *why;
	struct fr_ipc_goroutines_req q = {0};
	uint64_t pid = 0;
	int c, json = 0;

	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case FR_OPT_PID:
			if (fr_parse_u64(optarg, 1, INT32_MAX, &pid) < 0) {
				fprintf(stderr,
					"%s goroutines: --pid: expected a process id like 1234, "
					"got \"%s\"\n",
					prog, optarg);
				return EXIT_USAGE;
			}
			break;
		case 'o': out_s = optarg; break;
		case FR_OPT_JSON: json = 1; break;
		case FR_OPT_SOCKET: socket_s = optarg; break;
		case OPT_FROM: from = optarg; break;
		case OPT_AT:
			if (fr_query_parse_when("flightrec goroutines", "--at", optarg,
						fr_now_real_ns(), &q.at_ns))
				return EXIT_USAGE;
			if (q.at_ns <= 0) {
				fprintf(stderr, "%s goroutines: --at %s is before 1970\n", prog,
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h': usage_goroutines(stdout); return 0;
		default: return fr_cli_bad_option("goroutines", argv);
		}
	}
	if (from && q.at_ns)
		why = "--from renders a file: --at does not go with it";
	else
		why = misuse(optind < argc, pid, json, out_s, from, socket_s);
	if (why) {
		fprintf(stderr, "%s goroutines: %s (see %s goroutines --help)\n", prog, why, prog);
		return EXIT_USAGE;
	}
	if (from)
		return show_file(from, json);
	q.pid = (uint32_t)pid;
	if (out_s)
		return to_file(socket_s, &q, out_s);
	return show_now(socket_s, &q, json);
}
