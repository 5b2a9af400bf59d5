/* flightrec reload and flightrec trigger: the recorder's configuration
 * reloaded, and a session fired by hand, over the socket, so that nobody
 * needs `kill -HUP $(pidof flightrecd)` (which signals every recorder on
 * the host, private ones included, and says nothing back). Each answers
 * with what the recorder did: what changed or why the file was refused,
 * where the dump went and which window it holds. */
#include "tools/cmd_ctl.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util/parse.h"
#include "ipc/client.h"
#include "ipc/msg.h"
#include "ipc/msg_ctl.h"
#include "tools/cli.h"
#include "tools/query.h"

static const char *prog = FR_CLI_PROG;

/* Sends `req` (consumed) to the recorder and returns its successful reply
 * in *resp. Returns 0, or 1 after saying what went wrong. */
static int call(const char *socket_s, cJSON *req, cJSON **resp)
{
	char *socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	int status = 1;

	*resp = NULL;
	if (!req || !socket_path) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto out;
	}
	status = fr_cli_request(socket_path, req, -1, "", resp);
out:
	cJSON_Delete(req);
	free(socket_path);
	return status;
}

/* --json: the reply as the recorder sent it. */
static void print_json(const cJSON *resp)
{
	char *text = cJSON_Print(resp);

	printf("%s\n", text ? text : "{}");
	cJSON_free(text);
}

static void reload_usage(FILE *f)
{
	fprintf(f, "Usage: flightrec reload [--socket PATH] [--json]\n"
		   "Reload the recorder's configuration file, as it was started with\n"
		   "(flightrecd --config FILE), without pausing the recording, and say what\n"
		   "changed. A file that does not check is refused with the JSON path of its\n"
		   "error, and the recorder keeps the configuration it runs.\n"
		   "Only root and the recorder's own user may.\n"
		   "\n"
		   "  --socket PATH  the recorder's socket\n"
		   "  --json         the recorder's answer as JSON\n"
		   "  -h, --help     show this help\n"
		   "\n"
		   "Exit status: 0 reloaded, 1 refused or failed, 2 usage error.\n"
		   "Example:\n"
		   "  flightrecd --check-config /etc/flightrec.json && flightrec reload\n");
}

/* Prints what a reload changed. */
static void print_reload(const struct fr_ipc_reload_reply *r)
{
	if (r->nchanged == 0) {
		printf("reloaded %s: nothing changed\n", r->config);
		return;
	}
	printf("reloaded %s: %u change%s\n", r->config, r->nchanged + r->more,
	       r->nchanged + r->more == 1 ? "" : "s");
	for (uint32_t i = 0; i < r->nchanged; i++)
		printf("  %s\n", r->changed[i]);
	if (r->more)
		printf("  ... and %u more\n", r->more);
}

int fr_cmd_reload(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct fr_ipc_reload_reply *reply;
	const char *socket_s = NULL;
	char err[512];
	int c, json = 0, status;
	cJSON *resp;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': socket_s = optarg; break;
		case 'j': json = 1; break;
		case 'h': reload_usage(stdout); return 0;
		default: return fr_cli_bad_option("reload", argv);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s reload: unexpected argument \"%s\" (see %s reload --help)\n",
			prog, argv[optind], prog);
		return EXIT_USAGE;
	}
	status = call(socket_s, fr_ipc_reload_req_encode(), &resp);
	if (status)
		return status;
	reply = malloc(sizeof(*reply));
	if (!reply || fr_ipc_reload_reply_decode(resp, reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, reply ? err : "out of memory");
		status = 1;
	} else if (json) {
		print_json(resp);
	} else {
		print_reload(reply);
	}
	free(reply);
	cJSON_Delete(resp);
	return status;
}

static void trigger_usage(FILE *f)
{
	fprintf(f, "Usage: flightrec trigger SESSION [--reason TEXT] [--window DURATION]\n"
		   "                         [--socket PATH] [--json]\n"
		   "Fire a configured session now, as its triggers would: the recorder writes\n"
		   "the session's dump (its events and processes over the window ending now)\n"
		   "into its dumps directory. Prints the dump's path; the window goes to\n"
		   "stderr. Root, the admin group and the session's \"users\" may.\n"
		   "\n"
		   "  --reason TEXT      why, kept in the dump (up to 199 bytes, one line;\n"
		   "                     default \"requested by hand\")\n"
		   "  --window DURATION  the window, 1s..1h (default: the session's)\n"
		   "  --socket PATH      the recorder's socket\n"
		   "  --json             the recorder's answer as JSON\n"
		   "  -h, --help         show this help\n"
		   "\n"
		   "Exit status: 0 written, 1 refused or failed, 2 usage error.\n"
		   "Example:\n"
		   "  flightrec trigger db --reason \"p99 alert INC-123\" --window 2m\n");
}

/* Fills `tq` from the command line. Returns -1 to go on, else the exit
 * status. */
static int trigger_args(int argc, char **argv, struct fr_ipc_trigger_req *tq, const char **socket_s,
			int *json)
{
	static const struct option longopts[] = {
		{"reason", required_argument, NULL, 'r'}, {"window", required_argument, NULL, 'w'},
		{"socket", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},	  {NULL, 0, NULL, 0},
	};
	const char *window_s = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (!fr_ipc_reason_ok(optarg)) {
				fprintf(stderr,
					"%s trigger: --reason: expected 1..%d bytes of text on one "
					"line\n",
					prog, FR_IPC_REASON_MAX - 1);
				return EXIT_USAGE;
			}
			snprintf(tq->reason, sizeof(tq->reason), "%s", optarg);
			break;
		case 'w': window_s = optarg; break;
		case 's': *socket_s = optarg; break;
		case 'j': *json = 1; break;
		case 'h': trigger_usage(stdout); return 0;
		default: return fr_cli_bad_option("trigger", argv);
		}
	}
	if (optind + 1 != argc || !argv[optind][0] || strlen(argv[optind]) >= sizeof(tq->session)) {
		fprintf(stderr, "%s trigger: expected one SESSION name (see %s sessions)\n", prog,
			prog);
		return EXIT_USAGE;
	}
	snprintf(tq->session, sizeof(tq->session), "%s", argv[optind]);
	if (window_s && (fr_parse_duration(window_s, &tq->window_ns) < 0 ||
			 tq->window_ns < FR_IPC_DUMP_WINDOW_MIN_NS ||
			 tq->window_ns > FR_IPC_DUMP_WINDOW_MAX_NS)) {
		fprintf(stderr, "%s trigger: --window: expected a duration of 1s..1h, got \"%s\"\n",
			prog, window_s);
		return EXIT_USAGE;
	}
	return -1;
}

int fr_cmd_trigger(int argc, char **argv)
{
	struct fr_ipc_trigger_req tq;
	struct fr_ipc_dump_reply *reply;
	const char *socket_s = NULL;
	char err[512], t0[64], t1[64], span[32];
	int json = 0, status;
	cJSON *resp;

	memset(&tq, 0, sizeof(tq));
	status = trigger_args(argc, argv, &tq, &socket_s, &json);
	if (status >= 0)
		return status;
	status = call(socket_s, fr_ipc_trigger_req_encode(&tq), &resp);
	if (status)
		return status;
	reply = malloc(sizeof(*reply));
	if (!reply || fr_ipc_dump_reply_decode(resp, reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, reply ? err : "out of memory");
		status = 1;
	} else if (json) {
		print_json(resp);
	} else {
		fr_format_time(reply->t0_ns, t0, sizeof(t0));
		fr_format_time(reply->t1_ns, t1, sizeof(t1));
		fr_cli_human_duration(reply->t1_ns - reply->t0_ns, span, sizeof(span));
		printf("%s\n", reply->path);
		fprintf(stderr, "%s: session %s: wrote the window from %s to %s (%s)\n", prog,
			tq.session, t0, t1, span);
	}
	free(reply);
	cJSON_Delete(resp);
	return status;
}
