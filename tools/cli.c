/* What the flightrec commands share (tools/cli.h): talking to the
 * recorder, reading its replies, writing an output file atomically, a
 * progress line, and printing the ring. */
#include "tools/cli.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/util/time.h"
#include "ipc/client.h"
#include "tools/query.h"

static const char *prog = FR_CLI_PROG;
/* The caller's umask, read in main() while this is the only thread (umask
 * can only be read by setting it). */
mode_t fr_cli_umask = 022;

int fr_cli_bad_option(const char *cmd, char **argv)
{
	const char *arg = argv[optind - 1];
	int len = (int)strcspn(arg, "=");

	/* getopt (opterr = 0) sets optopt to a long option's value when it
	 * lacks its value or has one it does not take, and to 0 when the
	 * option is unknown; a short option's letter either way. */
	if (optopt && strncmp(arg, "--", 2) == 0)
		fprintf(stderr, "%s %s: %.*s %s (see %s %s --help)\n", prog, cmd, len, arg,
			arg[len] ? "takes no value" : "needs a value", prog, cmd);
	else if (optopt && optopt < 256)
		fprintf(stderr,
			"%s %s: option -%c is unknown or needs a value (see %s %s --help)\n", prog,
			cmd, optopt, prog, cmd);
	else
		fprintf(stderr, "%s %s: unknown option %.*s (see %s %s --help)\n", prog, cmd, len,
			arg, prog, cmd);
	return EXIT_USAGE;
}

/* Connects, saying why not (ipc/connect.c: the system recorder for a
 * user without one of its own, or why it cannot be reached). */
int fr_cli_connect(const char *path)
{
	char why[1024];
	int fd = fr_ipc_connect_why(path, why, sizeof(why));

	if (fd < 0)
		fprintf(stderr, "%s: %s\n", prog, why);
	return fd;
}

const char *fr_cli_resp_error(const cJSON *resp)
{
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(resp, "ok");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(resp, "error");

	if (cJSON_IsTrue(ok))
		return NULL;
	return cJSON_IsString(e) ? e->valuestring : "the recorder refused the request";
}

void fr_cli_report_call_error(int ret, const char *path, cJSON **resp)
{
	if (ret == -EPROTO) {
		fprintf(stderr, "%s: the recorder at %s speaks another protocol version: %s\n",
			prog, path,
			*resp && fr_cli_resp_error(*resp) ? fr_cli_resp_error(*resp)
							  : "no details");
		cJSON_Delete(*resp);
		*resp = NULL;
	} else if (ret == -EAGAIN) {
		fprintf(stderr, "%s: the recorder at %s did not answer in time\n", prog, path);
	} else {
		fprintf(stderr, "%s: lost the connection to the recorder at %s: %s\n", prog, path,
			strerror(-ret));
	}
}

int fr_cli_call(int sock, const char *path, cJSON *req, int pass_fd, cJSON **resp)
{
	int ret = fr_ipc_call(sock, req, pass_fd, resp);

	if (ret < 0)
		fr_cli_report_call_error(ret, path, resp);
	return ret;
}

int fr_cli_request(const char *path, cJSON *req, int pass_fd, const char *ctx, cJSON **resp)
{
	int sock, ret = 1;

	*resp = NULL;
	sock = fr_cli_connect(path);
	if (sock < 0)
		return 1;
	if (fr_cli_call(sock, path, req, pass_fd, resp) >= 0) {
		if (fr_cli_resp_error(*resp))
			fprintf(stderr, "%s%s: %s\n", prog, ctx, fr_cli_resp_error(*resp));
		else
			ret = 0;
	}
	close(sock);
	if (ret) {
		cJSON_Delete(*resp);
		*resp = NULL;
	}
	return ret;
}

/* A number of a reply, or of an object built here, where integers are raw
 * text (fr_ipc_add_int keeps 64-bit values exact). */
double fr_cli_num(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsNumber(v))
		return v->valuedouble;
	if (cJSON_IsRaw(v) && v->valuestring)
		return strtod(v->valuestring, NULL);
	return 0;
}

const char *fr_cli_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : "";
}

char *fr_cli_default_output_name(enum fr_profile_format format)
{
	char host[256], stamp[32], *name = NULL;
	struct timespec now;
	struct tm tm;

	fr_host_name(host, sizeof(host));
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	return asprintf(&name, "flightrec-%s-%s.%03ldZ.%s", host, stamp, now.tv_nsec / 1000000,
			format == FR_PROFILE_FOLDED ? "folded" : "pb.gz") < 0
		       ? NULL
		       : name;
}

/* Standard output as the profile's output (a copy of it, so the commit
 * closes only ours). */
static int output_stdout(struct fr_cli_output *o, enum fr_profile_format format)
{
	if (format == FR_PROFILE_PPROF && isatty(STDOUT_FILENO)) {
		fprintf(stderr,
			"%s: -o -: standard output is a terminal and a pprof profile is binary; "
			"redirect it to a file (go tool pprof reads files, not pipes) or use "
			"--format folded\n",
			prog);
		return -EINVAL;
	}
	o->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (o->fd < 0) {
		fprintf(stderr, "%s: cannot write to standard output: %s\n", prog, strerror(errno));
		return -errno;
	}
	return 0;
}

int fr_cli_output_open(struct fr_cli_output *o, const char *path, enum fr_profile_format format)
{
	struct stat st;
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];

	o->path = path;
	o->tmp = NULL;
	if (strcmp(path, "-") == 0)
		return output_stdout(o, format);
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
	if (fchmod(o->fd, 0666 & ~fr_cli_umask) < 0) {
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

int fr_cli_output_open_new(struct fr_cli_output *o, const char *name, enum fr_profile_format format)
{
	o->owned = name ? strdup(name) : fr_cli_default_output_name(format);
	if (!o->owned)
		return -ENOMEM;
	return fr_cli_output_open(o, o->owned, format);
}

/* Renames the temporary file to the default name, or to NAME-1.EXT,
 * NAME-2.EXT, ... when a file has it: a default name never replaces one
 * (two attaches in the same millisecond, or a file someone made). */
static int rename_noreplace(struct fr_cli_output *o)
{
	char *dot = strstr(o->owned, ".pb.gz") ? strstr(o->owned, ".pb.gz")
					       : strrchr(o->owned, '.');
	char *base = strndup(o->owned, dot ? (size_t)(dot - o->owned) : strlen(o->owned));
	const char *ext = dot ? dot : "";
	int ret = -EEXIST;

	if (!base)
		return -ENOMEM;
	for (int n = 0; n < 1000 && ret == -EEXIST; n++) {
		char *name = NULL;

		if (n && asprintf(&name, "%s-%d%s", base, n, ext) < 0) {
			ret = -ENOMEM;
			break;
		}
		if (name) {
			free(o->owned);
			o->owned = name;
			o->path = name;
		}
		ret = renameat2(AT_FDCWD, o->tmp, AT_FDCWD, o->owned, RENAME_NOREPLACE) < 0 ? -errno
											    : 0;
		/* A file system without RENAME_NOREPLACE: link() does not
		 * replace either. */
		if (ret == -EINVAL || ret == -ENOSYS) {
			ret = link(o->tmp, o->owned) < 0 ? -errno : 0;
			if (ret == 0)
				unlink(o->tmp);
		}
	}
	free(base);
	return ret;
}

int fr_cli_output_commit(struct fr_cli_output *o, int ok)
{
	int ret = 0;

	if (o->tmp) {
		if (ok && fsync(o->fd) < 0)
			ret = -errno;
		if (ok && ret == 0)
			ret = o->owned			    ? rename_noreplace(o)
			      : rename(o->tmp, o->path) < 0 ? -errno
							    : 0;
		if (!ok || ret < 0)
			unlink(o->tmp);
		if (ret < 0)
			fprintf(stderr, "%s: cannot write %s: %s\n", prog, o->path, strerror(-ret));
		free(o->tmp);
		o->tmp = NULL;
	}
	close(o->fd);
	o->fd = -1;
	return ret;
}

void fr_cli_output_free(struct fr_cli_output *o)
{
	free(o->owned);
	o->owned = NULL;
}

int fr_cli_answer_memfd(const char *cmd, int for_stdout)
{
	char name[64];
	int fd;

	if (for_stdout && isatty(STDOUT_FILENO)) {
		fprintf(stderr,
			"%s %s: -o -: standard output is a terminal and the answer is a binary "
			"pprof; pipe it, or leave -o out for text\n",
			prog, cmd);
		return -1;
	}
	snprintf(name, sizeof(name), "flightrec-%s", cmd);
	fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "%s %s: memfd_create: %s\n", prog, cmd, strerror(errno));
	return fd;
}

int fr_cli_copy_to_stdout(int fd, const char *cmd)
{
	char buf[65536];
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET) < 0)
		goto err_read;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(STDOUT_FILENO, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				fprintf(stderr, "%s %s: cannot write to standard output: %s\n",
					prog, cmd, strerror(errno));
				return -1;
			}
			off += w;
		}
	}
	if (n == 0)
		return 0;
err_read:
	fprintf(stderr, "%s %s: cannot read the answer back: %s\n", prog, cmd, strerror(errno));
	return -1;
}

static void *progress_main(void *arg)
{
	struct fr_cli_progress *p = arg;
	struct timespec deadline;
	int first = 1;

	pthread_mutex_lock(&p->lock);
	while (!p->done) {
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_nsec += first ? 300000000 : 200000000;
		if (deadline.tv_nsec >= FR_NS_PER_S) {
			deadline.tv_sec++;
			deadline.tv_nsec -= FR_NS_PER_S;
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

void fr_cli_progress_start(struct fr_cli_progress *p, const char *what)
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

void fr_cli_progress_stop(struct fr_cli_progress *p)
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

/* Sends the request `cmd` (no arguments) to the recorder and returns its
 * successful reply, parsed in *resp and as received in *text (both freed
 * by the caller). Returns 0, or 1 after saying what went wrong. */
int fr_cli_simple_request(const char *cmd, const char *socket_s, cJSON **resp, char **text)
{
	char *socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	cJSON *req = cJSON_CreateObject();
	int sock = -1, status = 1, ret;

	*resp = NULL;
	*text = NULL;
	if (!socket_path || !req)
		goto out;
	cJSON_AddStringToObject(req, "req", cmd);
	sock = fr_cli_connect(socket_path);
	if (sock < 0)
		goto out;
	ret = fr_ipc_call_text(sock, req, -1, resp, text);
	if (ret < 0) {
		fr_cli_report_call_error(ret, socket_path, resp);
		goto out;
	}
	if (fr_cli_resp_error(*resp)) {
		fprintf(stderr, "%s: %s\n", prog, fr_cli_resp_error(*resp));
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

void fr_cli_human_duration(int64_t ns, char *buf, size_t len)
{
	fr_format_duration(ns, buf, len);
}

/* "HH:MM:SS", with "YYYY-MM-DD " before it when `t` is not on today's
 * date (UTC) or `date` asks for it. */
static void clock_utc(int64_t t, int date, char *buf, size_t len)
{
	time_t secs = (time_t)(t / FR_NS_PER_S), now = time(NULL);
	struct tm tm, today;

	gmtime_r(&secs, &tm);
	gmtime_r(&now, &today);
	if (date || tm.tm_year != today.tm_year || tm.tm_yday != today.tm_yday)
		strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	else
		strftime(buf, len, "%H:%M:%S", &tm);
}

char *fr_cli_format_clock(int64_t t, char *buf, size_t len)
{
	char c[48];

	clock_utc(t, 0, c, sizeof(c));
	snprintf(buf, len, "%s UTC", c);
	return buf;
}

char *fr_cli_format_window(int64_t t0, int64_t t1, char *buf, size_t len)
{
	char a[48], b[48], dur[32];

	clock_utc(t0, 0, a, sizeof(a));
	/* The end's date only when it differs from the start's. */
	clock_utc(t1, t1 / FR_NS_PER_S / 86400 != t0 / FR_NS_PER_S / 86400, b, sizeof(b));
	snprintf(buf, len, "%s\u2013%s UTC (%s)", a, b,
		 fr_format_duration(t1 - t0, dur, sizeof(dur)));
	return buf;
}

/* The ring facts shared by status and dump --info. */
void fr_cli_print_ring(const struct fr_ipc_ring *ring, uint64_t lost)
{
	char a[64], b[64], size[32], seg[32], used[32];
	double samples = (double)ring->samples, bytes = (double)ring->bytes_used;

	printf("ring:     %s, %s in %" PRIu64 " segments of %s; %" PRIu64 " segments in use, %s "
	       "of chunks (%.0f%%)\n",
	       ring->path, fr_format_size_human(ring->size, size, sizeof(size)), ring->segments,
	       fr_format_size_human(ring->segment_size, seg, sizeof(seg)), ring->segments_used,
	       fr_format_size_human(ring->bytes_used, used, sizeof(used)),
	       ring->size > 0 ? 100.0 * bytes / (double)ring->size : 0.0);
	if (ring->chunks > 0) {
		char span[64];
		fr_cli_human_duration(ring->newest_ns - ring->oldest_ns, span, sizeof(span));
		printf("span:     %s .. %s (%s)\n", fr_format_time(ring->oldest_ns, a, sizeof(a)),
		       fr_format_time(ring->newest_ns, b, sizeof(b)), span);
	} else {
		printf("span:     empty\n");
	}
	printf("stored:   %.0f samples in %" PRIu64 " chunks", samples, ring->chunks);
	if (samples > 0)
		printf(", %.1f bytes/sample, compression %.1fx", bytes / samples,
		       bytes > 0 ? (double)ring->raw_bytes / bytes : 0.0);
	printf(" (format version %" PRIu64 ")\n", ring->format_version);
	if (ring->journal_size > 0) {
		char js[32], jb[32];

		printf("journal:  %s; %" PRIu64 " samples of the last seconds in %" PRIu64
		       " chunks (%s), not yet merged\n",
		       fr_format_size_human(ring->journal_size, js, sizeof(js)),
		       ring->journal_samples, ring->journal_chunks,
		       fr_format_size_human(ring->journal_bytes, jb, sizeof(jb)));
	}
	printf("damage:   %" PRIu64 " corrupt chunks skipped\n", ring->corrupt_chunks);
	/* No "superblock": a recorder from before superblock copies. */
	if (!strcmp(ring->superblock, "copy"))
		printf("superblock: damaged; read through its copy at the end of the file\n");
	else if (!strcmp(ring->superblock, "repaired"))
		printf("superblock: was damaged; rewritten from its copy at the end of the file\n");
	else if (ring->superblock[0])
		printf("superblock: intact, %s\n",
		       ring->superblock_copy
			       ? "with a copy at the end of the file"
			       : "no copy (made before copies existed; a recorder adds one)");
	printf("lost:     %" PRIu64 " samples lost before they were stored, in the span the ring "
	       "holds (by the kernel, the eBPF programs, the allocation libraries)\n",
	       lost);
}

/* "cpu@99Hz,offcpu": a list of events, hz left out when 0 (offcpu). Cut
 * at `len`. */
void fr_cli_format_events(const struct fr_ipc_event_rate *events, uint32_t n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < n; i++) {
		const struct fr_ipc_event_rate *e = &events[i];
		int k = e->period > 0 ? snprintf(buf + used, len - used, "%s%s@period=%" PRIu64,
						 used ? "," : "", e->event, e->period)
			: e->hz > 0   ? snprintf(buf + used, len - used, "%s%s@%" PRIu64 "Hz",
						 used ? "," : "", e->event, e->hz)
				      : snprintf(buf + used, len - used, "%s%s", used ? "," : "",
						 e->event);
		if (k < 0 || (size_t)k >= len - used)
			break;
		used += (size_t)k;
	}
}
