/* flightrecd command line: options over the config file over the embedded
 * default, then fr_daemon_run(). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/store/sample.h"
#include "fr_version.h"
#include "ipc/paths.h"
#include "recorder/daemon.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: flightrecd [OPTION]...\n"
		   "Record what every process on this machine is doing (CPU stacks) into a\n"
		   "persistent ring, always on, for `flightrec attach` to read back.\n"
		   "\n"
		   "  --config FILE       JSON configuration (default: the embedded default)\n"
		   "  --check-config FILE validate FILE, apply the other options given (--ring,\n"
		   "                      --ring-size, --socket, --hz), print the effective\n"
		   "                      configuration as JSON, exit\n"
		   "  --ring PATH         ring file (default /var/lib/flightrec/ring as root,\n"
		   "                      else $XDG_STATE_HOME/flightrec/ring)\n"
		   "  --ring-size SIZE    ring size for a new ring, e.g. 256MiB (default 256MiB)\n"
		   "  --socket PATH       control socket (default " FR_IPC_SYSTEM_SOCKET "\n"
		   "                      as root, else $XDG_RUNTIME_DIR/flightrec.sock)\n"
		   "  --hz N              cpu samples per second per CPU (default 99)\n"
		   "  --log-format FORMAT text (RFC 3339 UTC time, level, message), json (one\n"
		   "                      object per line: ts, level, prog, pid, msg, src) or\n"
		   "                      journal (syslog priority prefix; the default when\n"
		   "                      stderr is the journal, which stamps the time itself)\n"
		   "  -v, --verbose       log more (repeat for debug)\n"
		   "  -h, --help          show this help\n"
		   "  --version           show the version\n"
		   "\n"
		   "SIGINT or SIGTERM stores the open chunk and exits (within 10 s: past\n"
		   "that, on a disk that does not take writes, it logs what it did not\n"
		   "store and exits with status 1). `flightrec reload`\n"
		   "(or SIGHUP) reloads the configuration file without pausing the recording\n"
		   "(an invalid file is rejected; the running configuration stays).\n"
		   "Example:\n"
		   "  flightrecd --ring /tmp/fr/ring --socket /tmp/fr/sock --hz 999\n");
}

static char *default_ring_path(void)
{
	const char *state = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	char *path = NULL;

	if (geteuid() == 0)
		return strdup("/var/lib/flightrec/ring");
	if (state && state[0])
		return asprintf(&path, "%s/flightrec/ring", state) < 0 ? NULL : path;
	if (home && home[0])
		return asprintf(&path, "%s/.local/state/flightrec/ring", home) < 0 ? NULL : path;
	return asprintf(&path, "/tmp/flightrec-%u/ring", (unsigned)geteuid()) < 0 ? NULL : path;
}

/* The command line. */
struct args {
	const char *config_path, *check_path, *ring_opt, *socket_opt, *size_opt, *hz_opt;
	const char *log_format;
};

/* Says what getopt refused: the flag that lacks its value by name, else
 * the unknown option. */
static void bad_option(int c, char **argv)
{
	const char *arg = argv[optind - 1];

	if (c == ':' && strncmp(arg, "--", 2) == 0)
		fprintf(stderr, "flightrecd: %.*s needs a value (see --help)\n",
			(int)strcspn(arg, "="), arg);
	else if (c == ':')
		fprintf(stderr, "flightrecd: -%c needs a value (see --help)\n", optopt);
	else if (optopt && strncmp(arg, "--", 2) == 0)
		fprintf(stderr, "flightrecd: %.*s takes no value (see --help)\n",
			(int)strcspn(arg, "="), arg);
	else if (optopt)
		fprintf(stderr, "flightrecd: unknown option -%c (see --help)\n", optopt);
	else
		fprintf(stderr, "flightrecd: unknown option %s (see --help)\n", arg);
}

/* The daemon's log lines: timestamped text, unless --log-format says
 * otherwise or stderr is the journal, which stamps each line itself (a
 * second timestamp would only be noise in journalctl) and reads the level
 * from a priority prefix. Returns -1 to go on, or 2. */
static int set_log_format(const char *name)
{
	enum fr_log_format f = FR_LOG_FORMAT_TEXT;

	if (name && fr_log_parse_format(name, &f) < 0) {
		fprintf(stderr,
			"flightrecd: --log-format: expected text, json or journal, got \"%s\"\n",
			name);
		return 2;
	}
	if (!name && fr_log_stderr_is_journal())
		f = FR_LOG_FORMAT_JOURNAL;
	fr_log_set_format(f);
	return -1;
}

/* Reads the options into `a`. Returns -1 to go on, else the exit status
 * (0 after --help or --version, 2 after a usage error). */
static int parse_args(int argc, char **argv, struct args *a)
{
	enum {
		OPT_CONFIG = 256,
		OPT_CHECK,
		OPT_RING,
		OPT_RING_SIZE,
		OPT_SOCKET,
		OPT_HZ,
		OPT_LOG_FORMAT,
		OPT_VERSION
	};
	static const struct option longopts[] = {
		{"config", required_argument, NULL, OPT_CONFIG},
		{"check-config", required_argument, NULL, OPT_CHECK},
		{"ring", required_argument, NULL, OPT_RING},
		{"ring-size", required_argument, NULL, OPT_RING_SIZE},
		{"socket", required_argument, NULL, OPT_SOCKET},
		{"hz", required_argument, NULL, OPT_HZ},
		{"log-format", required_argument, NULL, OPT_LOG_FORMAT},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, OPT_VERSION},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(a, 0, sizeof(*a));
	opterr = 0;
	/* The leading ':' tells a missing value (':') from an unknown option. */
	while ((c = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CONFIG: a->config_path = optarg; break;
		case OPT_CHECK: a->check_path = optarg; break;
		case OPT_RING: a->ring_opt = optarg; break;
		case OPT_RING_SIZE: a->size_opt = optarg; break;
		case OPT_SOCKET: a->socket_opt = optarg; break;
		case OPT_HZ: a->hz_opt = optarg; break;
		case OPT_LOG_FORMAT: a->log_format = optarg; break;
		case 'v': fr_log_level++; break;
		case 'h': usage(stdout); return 0;
		case OPT_VERSION: printf("flightrecd %s\n", FR_VERSION); return 0;
		default: bad_option(c, argv); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "flightrecd: unexpected argument \"%s\" (see --help)\n",
			argv[optind]);
		return 2;
	}
	if (a->check_path && a->config_path) {
		fprintf(stderr, "flightrecd: --check-config FILE checks FILE; drop --config\n");
		return 2;
	}
	return set_log_format(a->log_format);
}

/* Replaces *field with a copy of `opt` when the option was given.
 * Returns 0 when out of memory. */
static int replace_opt(char **field, const char *opt)
{
	char *copy;

	if (!opt)
		return 1;
	copy = strdup(opt);
	if (!copy)
		return 0;
	free(*field);
	*field = copy;
	return 1;
}

/* --ring-size and --hz over the configuration. Returns 0, or -1 after
 * saying why not. */
static int apply_overrides(const struct args *a, struct fr_config *cfg, uint64_t *hz)
{
	if (a->size_opt) {
		uint64_t size;
		if (fr_parse_size(a->size_opt, &size) < 0 || size < 2 * cfg->segment_size + 4096) {
			fprintf(stderr,
				"flightrecd: --ring-size: expected a size of at least two "
				"segments plus 4KiB, like 256MiB, got \"%s\"\n",
				a->size_opt);
			return -1;
		}
		cfg->ring_size = size;
	}
	if (a->hz_opt) {
		if (fr_parse_u64(a->hz_opt, 1, cfg->max_rate_hz, hz) < 0) {
			fprintf(stderr,
				"flightrecd: --hz: expected 1..%u samples per second, got \"%s\"\n",
				cfg->max_rate_hz, a->hz_opt);
			return -1;
		}
	} else {
		*hz = fr_config_max_hz(cfg, FR_EVENT_CPU);
		if (!*hz)
			*hz = 99;
	}
	return 0;
}

/* --check-config: validates a file, applies the options given with it as
 * the daemon would, and prints the result as the daemon runs it. */
static int check_config(const struct args *a)
{
	struct fr_config cfg;
	char err[1024];
	uint64_t hz;
	char *json;

	if (fr_config_load(&cfg, a->check_path, err, sizeof(err)) < 0) {
		fprintf(stderr, "flightrecd: %s\n", err);
		return 1;
	}
	if (apply_overrides(a, &cfg, &hz) < 0) {
		fr_config_fini(&cfg);
		return 2;
	}
	/* --hz sets the cpu rate of every session that records cpu. */
	for (uint32_t i = 0; a->hz_opt && i < cfg.nsessions; i++)
		for (uint32_t e = 0; e < cfg.sessions[i].nevents; e++)
			if (cfg.sessions[i].events[e].event == FR_EVENT_CPU &&
			    !cfg.sessions[i].events[e].period)
				cfg.sessions[i].events[e].hz = (uint32_t)hz;
	if (!replace_opt(&cfg.ring_path, a->ring_opt) ||
	    !replace_opt(&cfg.socket_path, a->socket_opt)) {
		fprintf(stderr, "flightrecd: out of memory\n");
		fr_config_fini(&cfg);
		return 1;
	}
	json = fr_config_to_json(&cfg);
	printf("%s\n", json ? json : "");
	free(json);
	fr_config_fini(&cfg);
	return json ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct args a;
	struct fr_config cfg;
	struct fr_daemon_options opts;
	char err[1024];
	char *ring_path = NULL, *socket_path = NULL;
	uint64_t hz = 0;
	int ret, status;

	fr_log_set_ident("flightrecd");
	status = parse_args(argc, argv, &a);
	if (status >= 0)
		return status;
	if (a.check_path)
		return check_config(&a);

	ret = a.config_path ? fr_config_load(&cfg, a.config_path, err, sizeof(err))
			    : fr_config_default(&cfg);
	/* From here on what goes wrong is the service's, for its log. */
	if (ret < 0) {
		fr_log_err("%s", a.config_path ? err : "cannot load the default configuration");
		return 1;
	}
	status = 2;
	if (apply_overrides(&a, &cfg, &hz) < 0)
		goto out;
	status = 1;
	ring_path = a.ring_opt	    ? strdup(a.ring_opt)
		    : cfg.ring_path ? strdup(cfg.ring_path)
				    : default_ring_path();
	socket_path = a.socket_opt	? strdup(a.socket_opt)
		      : cfg.socket_path ? strdup(cfg.socket_path)
					: fr_ipc_default_socket();
	if (!ring_path || !socket_path) {
		fr_log_err("out of memory");
		goto out;
	}
	memset(&opts, 0, sizeof(opts));
	opts.config = &cfg;
	opts.ring_path = ring_path;
	opts.socket_path = socket_path;
	opts.hz = (uint32_t)hz;
	opts.hz_fixed = a.hz_opt != NULL;
	opts.config_path = a.config_path;
	opts.config_source = a.config_path ? a.config_path : "embedded default";
	status = fr_daemon_run(&opts);
out:
	free(ring_path);
	free(socket_path);
	fr_config_fini(&cfg);
	return status;
}
