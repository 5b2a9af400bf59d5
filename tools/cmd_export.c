/* flightrec export: the ClickHouse side of the exporter. --init-schema
 * creates the database and tables (core/query/ch_schema.c) on each shard
 * named by --clickhouse; --expire drops the day partitions older than the
 * retention kept there. The exporter itself runs in flightrecd
 * (recorder/export_ch.c). */
#include "tools/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/query/ch_schema.h"
#include "core/util/http.h"
#include "core/util/parse.h"
#include "tools/query.h"

static const char *prog = FR_CLI_PROG;

/* Most shards one command names. */
#define MAX_URLS 64

static void usage_export(FILE *f)
{
	fprintf(f,
		"Usage: flightrec export --init-schema --clickhouse URL[,URL...] [OPTION]...\n"
		"       flightrec export --expire --clickhouse URL[,URL...] [OPTION]...\n"
		"Prepare ClickHouse for the recorders' exporters (the \"export\" block of the\n"
		"configuration; docs/clickhouse.md): --init-schema creates the database, the\n"
		"tables on each server (shard) and the tables over the cluster; run it again to\n"
		"change the retention. --expire drops the days older than the retention (run it\n"
		"daily, e.g. from cron; ClickHouse 18.16 has no TTL of its own).\n"
		"\n"
		"  --clickhouse URL[,URL...]  each shard's HTTP interface (http://HOST:8123)\n"
		"  --database NAME            the database (default flightrec)\n"
		"  --cluster NAME             the remote_servers cluster the shards form: the\n"
		"                             samples_all and stacks_all tables are Distributed\n"
		"                             over it (default: views of this server's tables)\n"
		"  --ttl DURATION             keep this many whole days (default 30d; 0: forever)\n"
		"  --user NAME                ClickHouse user (default: default)\n"
		"  --password-file FILE       its password, the file's first line\n"
		"  -h, --help                 show this help\n");
}

struct export_args {
	int init, expire;
	char *urls[MAX_URLS];
	uint32_t nurls;
	const char *db, *cluster, *user, *password_file;
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

static int parse_args(int argc, char **argv, struct export_args *a)
{
	enum { O_INIT = 256, O_EXPIRE, O_CH, O_DB, O_CLUSTER, O_TTL, O_USER, O_PWFILE };
	static const struct option opts[] = {
		{"init-schema", no_argument, NULL, O_INIT},
		{"expire", no_argument, NULL, O_EXPIRE},
		{"clickhouse", required_argument, NULL, O_CH},
		{"database", required_argument, NULL, O_DB},
		{"cluster", required_argument, NULL, O_CLUSTER},
		{"ttl", required_argument, NULL, O_TTL},
		{"user", required_argument, NULL, O_USER},
		{"password-file", required_argument, NULL, O_PWFILE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int64_t ns;
	int c;

	a->db = "flightrec";
	a->ttl_days = FR_CH_TTL_DAYS_DEFAULT;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
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
			    ns % (86400 * 1000000000LL) != 0 ||
			    ns / (86400 * 1000000000LL) > 36500) {
				fprintf(stderr,
					"%s export: --ttl %s: want whole days, e.g. 30d (0: forever)\n",
					prog, optarg);
				return EXIT_USAGE;
			}
			a->ttl_days = (uint32_t)(ns / (86400 * 1000000000LL));
			break;
		case O_USER: a->user = optarg; break;
		case O_PWFILE: a->password_file = optarg; break;
		case 'h': usage_export(stdout); return -1;
		default: return fr_cli_bad_option("export", argv);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s export: unexpected argument \"%s\"\n", prog, argv[optind]);
		return EXIT_USAGE;
	}
	if (a->init + a->expire != 1 || a->nurls == 0) {
		fprintf(stderr, "%s export: want --init-schema or --expire, and --clickhouse URL\n",
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
	ho.timeout_ms = 120000;
	ret = fr_http_new(&h, &ho, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "%s export: %s\n", prog, err[0] ? err : strerror(-ret));
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	for (uint32_t i = 0; i < a.nurls; i++) {
		if (a.init) {
			ret = fr_ch_init_schema(h, a.urls[i], a.db, a.cluster, a.ttl_days, err,
						sizeof(err));
			if (ret == 0)
				printf("%s: schema %s ready (retention %u days)\n", a.urls[i], a.db,
				       a.ttl_days);
		} else {
			ret = fr_ch_expire(h, a.urls[i], a.db,
					   (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, &dropped,
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
