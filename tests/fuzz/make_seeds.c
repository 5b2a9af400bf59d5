/* Writes the seed corpora of the fuzz targets:
 *
 *   make_seeds CORPUS_DIR
 *
 * fills CORPUS_DIR/{chunk,ring,ipc,config}/ with files named seed-*,
 * after removing the seed-* files already there (other files, such as
 * regression inputs found by fuzzing, are left alone). Chunks and rings
 * come from the real chunk builder and ring writer of this build, so
 * regenerating after a format change gives seeds of the new format. The
 * output is deterministic: sample data comes from a fixed generator and
 * the ring's creation time and id are overwritten with constants.
 *
 * Each seed starts with the mode byte its target expects (tests/fuzz/fuzz.h)
 * where the target has modes.
 */
#include "tests/fuzz/make_seeds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"

#include "tests/fuzz/fuzz.h"

static const char *corpus;
static int nfiles;
static size_t nbytes;
static uint64_t rng_state = 0x243f6a8885a308d3ull;

uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

void die(const char *what, int err)
{
	fprintf(stderr, "make_seeds: %s: %s\n", what, strerror(err));
	exit(1);
}

/* Removes the seed-* files of one target directory, creating it if needed. */
void clean_dir(const char *target)
{
	char path[4096];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", corpus, target);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		die(path, errno);
	d = opendir(path);
	if (!d)
		die(path, errno);
	while ((e = readdir(d))) {
		char file[8192];

		if (strncmp(e->d_name, "seed-", 5) != 0)
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
		if (unlink(file) < 0)
			die(file, errno);
	}
	closedir(d);
}

/* Writes CORPUS/target/seed-name: the mode byte (when >= 0), then data. */
void write_seed(const char *target, const char *name, int mode, const void *data, size_t len)
{
	char path[4096];
	unsigned char m = (unsigned char)mode;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/seed-%s", corpus, target, name);
	f = fopen(path, "wbe");
	if (!f)
		die(path, errno);
	if ((mode >= 0 && fwrite(&m, 1, 1, f) != 1) || (len && fwrite(data, 1, len, f) != len) ||
	    fclose(f) != 0)
		die(path, EIO);
	nfiles++;
	nbytes += len + (mode >= 0);
}

/* ------------------------------------------------------------------ */
/* Config                                                               */

static void config_seed(const char *name, const char *json)
{
	write_seed("config", name, -1, json, strlen(json));
}

static void make_config_seeds(void)
{
	char bom[1024];

	clean_dir("config");
	config_seed("default", fr_config_default_json);
	config_seed("empty-object", "{}");
	config_seed("everything",
		    "{\n"
		    "  \"ring\": {\"path\": \"/var/lib/flightrec/ring\", \"size\": \"1.5GiB\",\n"
		    "           \"segment\": \"4M\", \"sync\": \"off\", \"max_age\": \"36h\"},\n"
		    "  \"socket\": \"/run/flightrec/sock\",\n"
		    "  \"limits\": {\"max_rate_hz\": 2000, \"max_clients\": 1024},\n"
		    "  \"sessions\": [\n"
		    "    {\"name\": \"always\", \"events\": [{\"event\": \"cpu\", \"hz\": 49},\n"
		    "                                   {\"event\": \"offcpu\"}]},\n"
		    "    {\"name\": \"pmu.1\", \"events\": [{\"event\": \"cycles\", \"hz\": 2000},\n"
		    "        {\"event\": \"cache-misses\", \"hz\": 1e1}]},\n"
		    "    {\"name\": \"implicit_cpu\"}\n"
		    "  ]\n"
		    "}\n");
	snprintf(bom, sizeof(bom), "\xef\xbb\xbf%s", fr_config_default_json);
	config_seed("bom", bom);
	config_seed("sync-fraction",
		    "{\"ring\": {\"size\": \"1048576\", \"segment\": \"64KiB\", \"sync\": \"1.5ms\","
		    " \"max_age\": \"1.5s\"},"
		    " \"limits\": {\"max_rate_hz\": 10}}");
	config_seed("unknown-key", "{\"ring\": {\"sise\": \"1GiB\"}}");
	config_seed(
		"hz-above-limit",
		"{\"limits\": {\"max_rate_hz\": 100},\n"
		" \"sessions\": [{\"name\": \"a\", \"events\": [{\"event\": \"cpu\", \"hz\": 101}]}]}");
	config_seed(
		"targets",
		"{\"limits\": {\"max_rate_hz\": 500},\n"
		" \"sessions\": [{\"name\": \"db\", \"targets\": {\"pids\": [1, 4194304], \"comm\": [\"postgres\", \"pgbouncer\"],\n"
		"   \"cgroup\": \"/system.slice/postgresql.service\"},\n"
		"  \"events\": [{\"event\": \"offcpu\"}, {\"event\": \"raw:0x1c2\", \"hz\": 499}, {\"event\": \"page-faults\"}]}]}\n");
	config_seed(
		"pmu",
		"{\"sessions\": [{\"name\": \"pmu\", \"events\": [\n"
		"  {\"event\": \"instructions\", \"period\": 1000000},\n"
		"  {\"event\": \"page-faults\", \"period\": 1, \"unwind\": \"fp\"},\n"
		"  {\"event\": \"raw:0x10000003c,config1=0x3f807f8fff,config2=0x1\", \"hz\": 49},\n"
		"  {\"event\": \"raw:0x1c2,config1=0x1\", \"period\": 9007199254740992}]}]}\n");
	config_seed(
		"triggers",
		"{\n"
		"  \"dumps\": {\"dir\": \"/var/lib/flightrec/dumps\", \"keep\": 200, \"max_bytes\": \"2GiB\"},\n"
		"  \"sessions\": [\n"
		"    {\"name\": \"oncall\", \"triggers\": [{\"on\": \"signal\", \"signal\": \"USR1\", \"window\": \"2m\"},\n"
		"                                    {\"on\": \"signal\", \"signal\": \"SIGRTMIN+3\", \"after\": \"10s\"}]},\n"
		"    {\"name\": \"hot\", \"events\": [{\"event\": \"cpu\", \"hz\": 99}],\n"
		"     \"triggers\": [{\"on\": \"cpu_above\", \"percent\": 90, \"for\": \"10s\", \"window\": \"5m\",\n"
		"                   \"after\": \"30s\", \"cooldown\": \"15m\"}]},\n"
		"    {\"name\": \"api\", \"targets\": {\"comm\": [\"api-server\"]},\n"
		"     \"events\": [{\"event\": \"cpu\", \"hz\": 199}, {\"event\": \"offcpu\"}],\n"
		"     \"triggers\": [{\"on\": \"exit\", \"window\": \"60s\", \"cooldown\": \"5m\"},\n"
		"                  {\"on\": \"signal\", \"signal\": \"sigusr2\"}]}\n"
		"  ]\n"
		"}\n");
	config_seed(
		"trigger-errors",
		"{\"dumps\": {\"keep\": 100000},\n"
		" \"sessions\": [{\"name\": \"a\", \"targets\": {\"pids\": [1]},\n"
		"   \"triggers\": [{\"on\": \"signal\", \"signal\": \"RTMAX-1\", \"window\": \"59m\", \"after\": \"1m\"},\n"
		"                {\"on\": \"cpu_above\", \"percent\": 100, \"for\": \"1s\", \"cooldown\": \"1s\"},\n"
		"                {\"on\": \"exit\", \"signal\": \"TERM\", \"percent\": 0, \"for\": \"500ms\"}]}]}\n");
	config_seed("syntax-error", "{\n  \"ring\": {\n    \"size\": 256MiB\n  }\n}\n");
	config_seed(
		"export",
		"{\"export\": {\"clickhouse\": {\"url\": \"https://ch.internal:8443\",\n"
		"  \"database\": \"flightrec\", \"user\": \"rec\", \"password_file\": \"/etc/ch.pw\",\n"
		"  \"batch\": \"10s\", \"events\": [\"cpu\", \"offcpu\"], \"hz\": 19, \"host\": \"web-1\",\n"
		"  \"ca_file\": \"/etc/ssl/ch-ca.pem\"}}}\n");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr,
			"usage: %s CORPUS_DIR\n"
			"Writes the seed-* inputs of every fuzz target under CORPUS_DIR.\n",
			argv[0]);
		return 1;
	}
	corpus = argv[1];
	if (mkdir(corpus, 0755) < 0 && errno != EEXIST)
		die(corpus, errno);
	make_chunk_seeds();
	make_ring_seeds();
	make_ipc_seeds();
	make_config_seeds();
	make_pprof_seeds();
	make_labelsets_seeds();
	make_gopclntab_seeds();
	make_goroutines_seeds();
	make_python_seeds();
	make_pycodes_seeds();
	printf("make_seeds: wrote %d files, %zu bytes, under %s\n", nfiles, nbytes, corpus);
	return 0;
}
