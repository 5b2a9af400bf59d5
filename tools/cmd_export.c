/* flightrec export: the ClickHouse side of the exporter. --init-schema
 * creates the database and tables (core/clickhouse/ch_schema.c) on each shard
 * named by --clickhouse; --expire drops the day partitions older than the
 * retention kept there; --ring ships a ring file (a crashed or retired
 * host's) by the exporter's own code path (core/clickhouse/export_batch.c).
 * The exporter itself runs in flightrecd (recorder/export/export_ch.c). */
#include "tools/cli.h"

#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clickhouse/ch_schema.h"
#include "core/clickhouse/export_batch.h"
#include "core/store/ring.h"
#include "core/store/sample.h"
#include "core/util/http.h"
#include "core/util/parse.h"
#include "core/util/time.h"
#include "tools/query.h"

static const char *prog = FR_CLI_PROG;

/* Most shards one command names. */
#define MAX_URLS 64

static void usage_export(FILE *f)
{
	fprintf(f,
		"Usage: flightrec export --init-schema --clickhouse URL[,URL...] [OPTION]...\n"
		"       flightrec export --expire --clickhouse URL[,URL...] [OPTION]...\n"
		"       flightrec export --ring FILE --host NAME --clickhouse URL [OPTION]...\n"
		"Prepare ClickHouse for the recorders' exporters (the \"export\" block of the\n"
		"configuration; docs/clickhouse.md): --init-schema creates the database, the\n"
		"tables on each server (shard) and the tables over the cluster; run it again to\n"
		"change the retention. --expire drops the days older than the retention (run it\n"
		"daily, e.g. from cron; ClickHouse 18.16 has no TTL of its own). --ring ships a\n"
		"ring file (of a crashed or retired host) as its recorder's exporter would:\n"
		"batches already there are skipped, so running it again adds nothing.\n"
		"\n"
		"  --clickhouse URL[,URL...]  each shard's HTTP interface (http://HOST:8123)\n"
		"  --database NAME            the database (default flightrec)\n"
		"  --cluster NAME             the remote_servers cluster the shards form: the\n"
		"                             samples_all and stacks_all tables are Distributed\n"
		"                             over it (default: views of this server's tables)\n"
		"  --ttl DURATION             keep this many whole days (default 30d; 0: forever)\n"
		"  --user NAME                ClickHouse user (default: default)\n"
		"  --password-file FILE       its password, the file's first line\n"
		"  --ca-file FILE             PEM CA certificates an https:// server's\n"
		"                             certificate must chain to (default: the system's)\n"
		"  --ring FILE                with --host: the ring to ship (only read)\n"
		"  --host NAME                the host column of its rows\n"
		"  --from TIME, --to TIME     the span shipped (RFC 3339 or Unix seconds;\n"
		"                             default: all the ring holds), on the batch grid\n"
		"  --batch DURATION           the batch interval (default 10s)\n"
		"  --event E[,E...]           events shipped (default cpu,offcpu)\n"
		"  --hz N                     the export rate (default 19)\n"
		"  -h, --help                 show this help\n");
}

struct export_args {
	int init, expire;
	const char *ring, *host;
	int64_t from, to, batch_ns;
	uint32_t hz, nevents, events[FR_LIMIT_EVENTS];
	char *urls[MAX_URLS];
	uint32_t nurls;
	const char *db, *cluster, *user, *password_file, *ca_file;
	uint32_t ttl_days;
};

static int split_urls(struct export_args *a, char *list)
{
	char *save = NULL;

	for (char *u = strtok_r(list, ",", &save); u; u = strtok_r(NULL, ",", &save)) {
		if (a->nurls == MAX_URLS) {
			fprintf(stderr, "%s export: more than %d URLs in --clickhouse\n", prog,
				MAX_URLS);
			return -EINVAL;
		}
		if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0) {
			fprintf(stderr,
				"%s export: --clickhouse %s: not an http:// or https:// URL\n",
				prog, u);
			return -EINVAL;
		}
		a->urls[a->nurls++] = u;
	}
	return 0;
}

/* The long options; those of --ring in ring_opt()'s order from O_RING. */
enum {
	O_INIT = 256,
	O_EXPIRE,
	O_CH,
	O_DB,
	O_CLUSTER,
	O_TTL,
	O_USER,
	O_PWFILE,
	O_CAFILE,
	O_RING,
	O_HOST,
	O_FROM,
	O_TO,
	O_BATCH,
	O_EVENT,
	O_HZ,
};

static const struct option export_opts[] = {
	{"init-schema", no_argument, NULL, O_INIT},
	{"expire", no_argument, NULL, O_EXPIRE},
	{"clickhouse", required_argument, NULL, O_CH},
	{"database", required_argument, NULL, O_DB},
	{"cluster", required_argument, NULL, O_CLUSTER},
	{"ttl", required_argument, NULL, O_TTL},
	{"user", required_argument, NULL, O_USER},
	{"password-file", required_argument, NULL, O_PWFILE},
	{"ca-file", required_argument, NULL, O_CAFILE},
	{"ring", required_argument, NULL, O_RING},
	{"host", required_argument, NULL, O_HOST},
	{"from", required_argument, NULL, O_FROM},
	{"to", required_argument, NULL, O_TO},
	{"batch", required_argument, NULL, O_BATCH},
	{"event", required_argument, NULL, O_EVENT},
	{"hz", required_argument, NULL, O_HZ},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* The options of --ring, in the order of their enum from O_RING. */
static int ring_opt(struct export_args *a, int which, const char *arg)
{
	uint64_t u;
	int64_t id;
	char *list, *save = NULL;

	switch (which) {
	case 0: a->ring = arg; return 0;
	case 1: a->host = arg; return 0;
	case 2:
	case 3:
		if (fr_parse_time(arg, which == 2 ? &a->from : &a->to) == 0)
			return 0;
		fprintf(stderr, "%s export: --%s %s: want RFC 3339 or Unix seconds\n", prog,
			which == 2 ? "from" : "to", arg);
		return -EINVAL;
	case 4:
		if (fr_parse_duration(arg, &a->batch_ns) == 0 && a->batch_ns >= FR_NS_PER_S &&
		    a->batch_ns % FR_NS_PER_S == 0 && (86400 * FR_NS_PER_S) % a->batch_ns == 0)
			return 0;
		fprintf(stderr, "%s export: --batch %s: want whole seconds dividing a day\n", prog,
			arg);
		return -EINVAL;
	case 5:
		list = strdup(arg);
		a->nevents = 0;
		for (char *e = list ? strtok_r(list, ",", &save) : NULL; e;
		     e = strtok_r(NULL, ",", &save)) {
			id = fr_event_lookup(e);
			if (id < 0 || a->nevents == FR_LIMIT_EVENTS) {
				fprintf(stderr,
					"%s export: --event %s: not an event, or too many\n", prog,
					e);
				free(list);
				return -EINVAL;
			}
			a->events[a->nevents++] = (uint32_t)id;
		}
		free(list);
		return a->nevents ? 0 : -EINVAL;
	default:
		if (fr_parse_u64(arg, 1, 10000, &u) == 0) {
			a->hz = (uint32_t)u;
			return 0;
		}
		fprintf(stderr, "%s export: --hz %s: want 1..10000\n", prog, arg);
		return -EINVAL;
	}
}

static int parse_args(int argc, char **argv, struct export_args *a)
{
	int64_t ns;
	int c;

	a->db = "flightrec";
	a->ttl_days = FR_CH_TTL_DAYS_DEFAULT;
	a->batch_ns = 10 * FR_NS_PER_S;
	a->hz = 19;
	a->nevents = 2;
	a->events[0] = FR_EVENT_CPU;
	a->events[1] = FR_EVENT_OFFCPU;
	while ((c = getopt_long(argc, argv, "h", export_opts, NULL)) != -1) {
		switch (c) {
		case O_INIT: a->init = 1; break;
		case O_EXPIRE: a->expire = 1; break;
		case O_CH:
			if (split_urls(a, optarg) < 0)
				return EXIT_USAGE;
			break;
		case O_DB: a->db = optarg; break;
		case O_CLUSTER: a->cluster = optarg; break;
		case O_TTL:
			if (fr_parse_duration(optarg, &ns) < 0 || ns < 0 ||
			    ns % (86400 * FR_NS_PER_S) != 0 || ns / (86400 * FR_NS_PER_S) > 36500) {
				fprintf(stderr,
					"%s export: --ttl %s: want whole days, e.g. 30d (0: forever)\n",
					prog, optarg);
				return EXIT_USAGE;
			}
			a->ttl_days = (uint32_t)(ns / (86400 * FR_NS_PER_S));
			break;
		case O_USER: a->user = optarg; break;
		case O_PWFILE: a->password_file = optarg; break;
		case O_CAFILE: a->ca_file = optarg; break;
		case O_RING:
		case O_HOST:
		case O_FROM:
		case O_TO:
		case O_BATCH:
		case O_EVENT:
		case O_HZ:
			if (ring_opt(a, c - O_RING, optarg) < 0)
				return EXIT_USAGE;
			break;
		case 'h': usage_export(stdout); return -1;
		default: return fr_cli_bad_option("export", argv);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s export: unexpected argument \"%s\"\n", prog, argv[optind]);
		return EXIT_USAGE;
	}
	if (a->init + a->expire + !!a->ring != 1 || a->nurls == 0 ||
	    (a->ring && (!a->host || a->nurls != 1))) {
		fprintf(stderr,
			"%s export: want --init-schema, --expire, or --ring FILE --host NAME; and "
			"--clickhouse URL (one with --ring)\n",
			prog);
		usage_export(stderr);
		return EXIT_USAGE;
	}
	if (!fr_ch_name_ok(a->db) || (a->cluster && !fr_ch_name_ok(a->cluster))) {
		fprintf(stderr,
			"%s export: database and cluster names are letters, digits and '_' "
			"(not starting with a digit), at most %d\n",
			prog, FR_CH_NAME_MAX);
		return EXIT_USAGE;
	}
	return 0;
}

/* Ships every batch of [from, to) of the ring a->ring, as the exporter
 * would. Returns the exit status. */
static int ship_ring(const struct export_args *a, struct fr_http *h)
{
	struct fr_export_req req = {.host = a->host, .nevents = a->nevents, .hz = a->hz};
	uint64_t batches = 0, dups = 0, rows = 0, samples = 0;
	struct fr_export_seen *seen = fr_export_seen_new(65536);
	struct fr_ring_stats st;
	struct fr_ring *ring;
	int64_t t0, t1, end;
	char err[1024];
	int ret, dup;

	ret = fr_ring_open(&ring, a->ring, 0, 0, FR_RING_RDONLY, err, sizeof(err));
	if (ret < 0 || !seen) {
		fprintf(stderr, "%s export: %s\n", prog, ret < 0 ? err : "out of memory");
		fr_ring_close(ret < 0 ? NULL : ring);
		fr_export_seen_free(seen);
		return 1;
	}
	memcpy(req.events, a->events, sizeof(req.events));
	fr_ring_get_stats(ring, &st);
	t0 = a->from ? a->from : st.oldest_ns;
	end = a->to ? a->to : st.newest_ns + 1;
	t0 -= t0 % a->batch_ns;
	for (; ret == 0 && st.oldest_ns && t0 < end; t0 = t1) {
		struct fr_export_batch b;

		t1 = t0 + a->batch_ns;
		req.t0 = t0;
		req.t1 = t1;
		ret = fr_export_batch_build(ring, &req, seen, &b, err, sizeof(err));
		if (ret < 0)
			break;
		ret = fr_export_batch_ship(h, a->urls[0], a->db, a->host, t0, &b, seen, &dup, err,
					   sizeof(err));
		if (ret == 0 && b.rows) {
			batches++;
			dups += dup;
			rows += dup ? 0 : b.rows;
			samples += dup ? 0 : b.samples_kept;
		}
		fr_export_batch_fini(&b);
	}
	fr_ring_close(ring);
	fr_export_seen_free(seen);
	if (ret < 0) {
		fprintf(stderr, "%s export: %s\n", prog, err);
		return 1;
	}
	printf("%s: %" PRIu64 " batches of %s (%" PRIu64 " already there), %" PRIu64
	       " rows, %" PRIu64 " samples\n",
	       a->urls[0], batches, a->host, dups, rows, samples);
	return 0;
}

int fr_cmd_export(int argc, char **argv)
{
	struct export_args a = {0};
	struct fr_http_opts ho = {0};
	struct fr_http *h;
	struct timespec ts;
	char err[1024];
	uint32_t dropped;
	int ret, status = 0;

	ret = parse_args(argc, argv, &a);
	if (ret != 0)
		return ret < 0 ? 0 : ret;
	if (fr_http_global_init() < 0) {
		fprintf(stderr, "%s export: cannot initialize libcurl\n", prog);
		return 1;
	}
	ho.user = a.user;
	ho.password_file = a.password_file;
	ho.ca_file = a.ca_file;
	ho.timeout_ms = 120000;
	ret = fr_http_new(&h, &ho, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "%s export: %s\n", prog, err[0] ? err : strerror(-ret));
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	if (a.ring) {
		status = ship_ring(&a, h);
		fr_http_free(h);
		return status;
	}
	for (uint32_t i = 0; i < a.nurls; i++) {
		if (a.init) {
			ret = fr_ch_init_schema(h, a.urls[i], a.db, a.cluster, a.ttl_days, err,
						sizeof(err));
			if (ret == 0)
				printf("%s: schema %s ready (retention %u days)\n", a.urls[i], a.db,
				       a.ttl_days);
		} else {
			ret = fr_ch_expire(h, a.urls[i], a.db, fr_ns_from_timespec(&ts), &dropped,
					   err, sizeof(err));
			if (ret == 0)
				printf("%s: %u day partitions dropped\n", a.urls[i], dropped);
		}
		if (ret < 0) {
			fprintf(stderr, "%s export: %s\n", prog, err);
			status = 1;
		}
	}
	fr_http_free(h);
	return status;
}
