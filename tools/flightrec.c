/* flightrec: the operator's command line.
 *
 * Every command parses and checks all of its arguments before it touches
 * the daemon or the file system, so bad input costs nothing. Each command
 * has its file: attach in cmd_attach.c, status and sessions in
 * cmd_status.c, dump in cmd_dump.c, top in top.c, goroutines in
 * cmd_goroutines.c; what they share is in cli.c. This file only picks
 * the command.
 *
 * Exit status: 0 success, 1 failure, 2 usage error.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/log.h"
#include "fr_version.h"
#include "ipc/paths.h"
#include "tools/cli.h"
#include "tools/cmd_ctl.h"
#include "tools/fleet/fleet.h"
#include "tools/query.h"
#include "tools/top/top.h"

static const char *prog = FR_CLI_PROG;

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
		"  threads   every thread of some processes now: state, wait, how long, stack\n"
		"  goroutines every goroutine of a Go process now: state, wait, creator, stack\n"
		"  reload    reload the recorder's configuration file and say what changed\n"
		"  trigger   fire a session now: the recorder writes its dump (--reason TEXT)\n"
		"  timeline  which minute: per step, the CPU (or an event) of the top processes\n"
		"  events    what happened: crashes, OOM kills, execs, exits, pressure\n"
		"  serve     a web page on loopback: timeline, flame graphs, diffs, threads\n"
		"  export    prepare ClickHouse for the exporter: --init-schema, --expire\n"
		"  fleet     many hosts from ClickHouse: attach, top, timeline\n"
		"\n"
		"Run `flightrec COMMAND --help` for a command's options.\n"
		"The socket is --socket PATH, else $FLIGHTREC_SOCKET, else the daemon's default\n"
		"(" FR_IPC_SYSTEM_SOCKET " as root).\n"
		"\n"
		"Exit status: 0 success, 1 failure, 2 usage error.\n"
		"Example:\n"
		"  flightrec attach --window 60s -o incident.pb.gz && go tool pprof -top incident.pb.gz\n");
}

int main(int argc, char **argv)
{
	const char *cmd;

	fr_log_set_ident("flightrec");
	fr_cli_umask = umask(022);
	umask(fr_cli_umask);
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
		return fr_cmd_attach(argc, argv);
	if (strcmp(cmd, "status") == 0)
		return fr_cmd_status(argc, argv);
	if (strcmp(cmd, "dump") == 0)
		return fr_cmd_dump(argc, argv);
	if (strcmp(cmd, "sessions") == 0)
		return fr_cmd_sessions(argc, argv);
	if (strcmp(cmd, "threads") == 0)
		return fr_cmd_threads(argc, argv);
	if (strcmp(cmd, "goroutines") == 0)
		return fr_cmd_goroutines(argc, argv);
	if (strcmp(cmd, "export") == 0)
		return fr_cmd_export(argc, argv);
	if (strcmp(cmd, "fleet") == 0)
		return fr_cmd_fleet(argc, argv);
	if (strcmp(cmd, "top") == 0)
		return fr_top_main(argc, argv);
	if (strcmp(cmd, "reload") == 0)
		return fr_cmd_reload(argc, argv);
	if (strcmp(cmd, "trigger") == 0)
		return fr_cmd_trigger(argc, argv);
	if (strcmp(cmd, "timeline") == 0)
		return fr_cmd_timeline(argc, argv);
	if (strcmp(cmd, "events") == 0)
		return fr_cmd_events(argc, argv);
	if (strcmp(cmd, "serve") == 0)
		return fr_cmd_serve(argc, argv);
	fprintf(stderr,
		"%s: unknown command \"%s\" (commands: attach, status, dump, sessions, top, threads, goroutines, reload, trigger, timeline, events, serve, export, fleet; see %s --help)\n",
		prog, cmd, prog);
	return EXIT_USAGE;
}
