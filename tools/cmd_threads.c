/* flightrec threads: every thread of some processes, now: state, what it
 * waits in and for how long, CPU time and a stack, without stopping
 * anyone. The recorder writes the answer as a pprof profile with one
 * sample per thread (recorder/requests/threads.c says where each field comes
 * from); this file renders it as a table grouped by identical stacks (as
 * Go's goroutine dump, debug=1) or as JSON, or keeps the file (-o). */
#include "tools/cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pprof/pprof_read.h"
#include "core/query/events.h"
#include "core/store/chunk.h"
#include "core/util/compress.h"
#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/util/parse.h"
#include "ipc/client.h"
#include "ipc/msg.h"
#include "ipc/msg_events.h"
#include "ipc/proto.h"
#include "tools/query.h"

static const char *prog = FR_CLI_PROG;

enum { OPT_AT = 1024 };

static void usage_threads(FILE *f)
{
	fprintf(f,
		"Usage: flightrec threads (--pid PID[,PID...] | --comm NAME[,...] | --cgroup PATH)\n"
		"                         [--at TIME] [--json | -o FILE.pb.gz]\n"
		"List every thread of the processes, now, without stopping them: its state,\n"
		"what it waits in (system call or kernel function), how long it has waited,\n"
		"its CPU time, and a stack: where it blocked (off-CPU data of the ring) or\n"
		"where it ran (cpu samples), from the last 60 seconds of the ring. A\n"
		"running thread is on a CPU; a runnable one waits for a CPU (preempted or\n"
		"woken), since when and where it left it.\n"
		"\n"
		"  --pid PID[,PID...] these processes\n"
		"  --comm NAME[,...]  processes with these command names\n"
		"  --cgroup PATH      processes in this cgroup v2 path or below it\n"
		"  --at TIME          the threads at that past moment (-30s, 13:05:00 local,\n"
		"                     RFC 3339 or @UNIXSECONDS), from the ring alone: blocked or\n"
		"                     runnable (since when, where), running or unknown; --comm\n"
		"                     and --cgroup are\n"
		"                     the processes' names and cgroups of that moment\n"
		"  --json             one JSON object: {\"threads\": [...], \"warnings\": [...]}\n"
		"  -o, --output FILE  write the answer as pprof (- for standard output), one\n"
		"                     sample per thread with labels state, wait, waiting_ns,\n"
		"                     tid, thread, cpu_ns, creator (go tool pprof -traces\n"
		"                     FILE, -tags FILE)\n"
		"  --socket PATH      the recorder's socket\n"
		"  -h, --help         show this help\n"
		"\n"
		"Threads with the same state, wait and stack are shown once, with their\n"
		"number and the longest waiting time. A waiting time is how long the thread\n"
		"has been off the CPU (needs offcpu recorded). \"created by\" (json: creator)\n"
		"is the thread that created it, when the recorder saw it happen; threads\n"
		"older than the recorder have none. A user who is not root sees only its\n"
		"own processes.\n"
		"\n"
		"Examples:\n"
		"  flightrec threads --pid 1234\n"
		"  flightrec threads --comm postgres --json | jq '.threads[] | .state'\n"
		"  flightrec threads --pid 1234 -o threads.pb.gz && go tool pprof -traces threads.pb.gz\n");
}

/* One thread of the answer, read back from its pprof sample. */
struct rthread {
	const struct fr_pprof_rsample *s;
	int64_t pid, tid, waiting_ns, cpu_ns, creator; /* creator 0: unknown */
	const char *name, *state, *wait, *wchan, *syscall;
	const char *python;	  /* the Python stack it runs now (CPython 3.11+) */
	int has_waiting, has_cpu; /* the answer at a past moment has no CPU time */
	/* Its application labels (labels of the answer that are not the
	 * command's own): what it worked for where its stack is. */
	size_t napp;
	const struct fr_pprof_rlabel *app[FR_CHUNK_APP_PAIRS];
};

/* The labels of a thread's sample that are the command's own. */
static int own_label(const char *key)
{
	static const char *const own[] = {"pid",	"tid",	   "thread",  "state",
					  "cpu_ns",	"wait",	   "syscall", "wchan",
					  "waiting_ns", "creator", "stack",   "python"};

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (strcmp(key, own[i]) == 0)
			return 1;
	return 0;
}

static void read_labels(const struct fr_pprof_data *pd, struct rthread *t)
{
	t->name = t->state = t->wait = t->wchan = t->syscall = t->python = "";
	for (size_t k = 0; k < t->s->nlabel; k++) {
		const struct fr_pprof_rlabel *l = &pd->labels[t->s->label + k];

		if (strcmp(l->key, "pid") == 0)
			t->pid = l->num;
		else if (strcmp(l->key, "tid") == 0)
			t->tid = l->num;
		else if (strcmp(l->key, "creator") == 0)
			t->creator = l->num;
		else if (strcmp(l->key, "cpu_ns") == 0) {
			t->cpu_ns = l->num;
			t->has_cpu = 1;
		} else if (strcmp(l->key, "waiting_ns") == 0) {
			t->waiting_ns = l->num;
			t->has_waiting = 1;
		} else if (l->str && strcmp(l->key, "thread") == 0)
			t->name = l->str;
		else if (l->str && strcmp(l->key, "state") == 0)
			t->state = l->str;
		else if (l->str && strcmp(l->key, "wait") == 0)
			t->wait = l->str;
		else if (l->str && strcmp(l->key, "wchan") == 0)
			t->wchan = l->str;
		else if (l->str && strcmp(l->key, "syscall") == 0)
			t->syscall = l->str;
		else if (l->str && strcmp(l->key, "python") == 0)
			t->python = l->str;
		else if (l->str && !own_label(l->key) && t->napp < FR_CHUNK_APP_PAIRS)
			t->app[t->napp++] = l;
	}
}

/* Whether two threads have the same application labels (in the same
 * order: the recorder writes them sorted). */
static int same_labels(const struct rthread *a, const struct rthread *b)
{
	if (a->napp != b->napp)
		return 0;
	for (size_t i = 0; i < a->napp; i++)
		if (strcmp(a->app[i]->key, b->app[i]->key) ||
		    strcmp(a->app[i]->str, b->app[i]->str))
			return 0;
	return 1;
}

static int by_labels(const struct rthread *a, const struct rthread *b)
{
	int c;

	if (a->napp != b->napp)
		return a->napp < b->napp ? -1 : 1;
	for (size_t i = 0; i < a->napp; i++)
		if ((c = strcmp(a->app[i]->key, b->app[i]->key)) ||
		    (c = strcmp(a->app[i]->str, b->app[i]->str)))
			return c;
	return 0;
}

/* Frame `j` of a thread's stack as text: its functions, innermost first
 * (inlined ones joined by " < "), else its address and file; kernel
 * frames marked " [k]". */
static void frame_text(const struct fr_pprof_data *pd, const struct rthread *t, size_t j, char *buf,
		       size_t len)
{
	const struct fr_pprof_rlocation *loc = &pd->locations[pd->sample_locs[t->s->loc + j]];
	const char *file = loc->mapping >= 0 ? pd->mappings[loc->mapping].filename : "";
	int kernel = strcmp(file, FR_PROFILE_KERNEL_MAPPING) == 0;
	size_t n = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < loc->nline && n < len; k++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", k ? " < " : "",
				      pd->functions[pd->line_funcs[loc->line + k]].name);
	if (!loc->nline)
		n = (size_t)snprintf(buf, len, "0x%" PRIx64 "%s%s", loc->address,
				     file[0] && !kernel ? " in " : "", kernel ? "" : file);
	if (kernel && n < len)
		snprintf(buf + n, len - n, " [k]");
}

static int same_stack(const struct fr_pprof_data *pd, const struct rthread *a,
		      const struct rthread *b)
{
	return a->s->nloc == b->s->nloc &&
	       memcmp(&pd->sample_locs[a->s->loc], &pd->sample_locs[b->s->loc],
		      a->s->nloc * sizeof(uint64_t)) == 0;
}

/* Orders threads so that those to show together are next to each other:
 * by pid, state, wait, then stack (of profile `arg`: qsort_r, since
 * flightrec serve sorts on several threads at once). */
static int by_group(const void *pa, const void *pb, void *arg)
{
	const struct fr_pprof_data *pd = arg;
	const struct rthread *a = pa, *b = pb;
	int c;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if ((c = strcmp(a->state, b->state)) || (c = strcmp(a->wait, b->wait)) ||
	    (c = strcmp(a->python, b->python)))
		return c;
	if (a->s->nloc != b->s->nloc)
		return a->s->nloc < b->s->nloc ? -1 : 1;
	if ((c = memcmp(&pd->sample_locs[a->s->loc], &pd->sample_locs[b->s->loc],
			a->s->nloc * sizeof(uint64_t))))
		return c;
	if ((c = by_labels(a, b)))
		return c;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

/* Prints `text` with control bytes as '?': thread and function names are
 * whatever the processes' owners chose, and must not drive the terminal. */
static void put_safe(const char *text)
{
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		putchar(*p < 0x20 || *p == 0x7f ? '?' : *p);
}

/* Prints the group of `n` threads starting at `t`. */
static void print_group(const struct fr_pprof_data *pd, const struct rthread *t, size_t n)
{
	int64_t most = 0;
	char frame[512];

	printf("%zu thread%s: %s", n, n == 1 ? "" : "s", t->state);
	if (t->wait[0])
		printf(" in %s", t->wait);
	for (size_t i = 0; i < n; i++)
		if (t[i].has_waiting && t[i].waiting_ns > most)
			most = t[i].waiting_ns;
	if (most) {
		char dur[32];

		printf(", waiting %s", fr_format_duration(most, dur, sizeof(dur)));
	}
	printf("\n");
	if (t->napp) {
		printf("    labels");
		for (size_t i = 0; i < t->napp; i++) {
			putchar(' ');
			put_safe(t->app[i]->key);
			putchar('=');
			put_safe(t->app[i]->str);
		}
		printf("\n");
	}
	if (t->python[0]) {
		printf("    python ");
		put_safe(t->python);
		printf("\n");
	}
	printf("    tids");
	for (size_t i = 0; i < n && i < 16; i++) {
		printf(" %" PRId64 " (", t[i].tid);
		put_safe(t[i].name);
		if (t[i].creator)
			printf(", created by %" PRId64, t[i].creator);
		putchar(')');
	}
	if (n > 16)
		printf(" and %zu more", n - 16);
	printf("\n");
	if (!t->s->nloc)
		printf("    (no stack in the last 60 s of the ring)\n");
	for (size_t j = 0; j < t->s->nloc; j++) {
		frame_text(pd, t, j, frame, sizeof(frame));
		printf("    ");
		put_safe(frame);
		putchar('\n');
	}
	printf("\n");
}

static void print_text(const struct fr_pprof_data *pd, struct rthread *t, size_t n)
{
	for (size_t i = 0, j; i < n; i = j) {
		if (i == 0 || t[i].pid != t[i - 1].pid) {
			size_t k = i;

			while (k < n && t[k].pid == t[i].pid)
				k++;
			printf("process %" PRId64 ": %zu thread%s\n\n", t[i].pid, k - i,
			       k - i == 1 ? "" : "s");
		}
		for (j = i + 1;
		     j < n && t[j].pid == t[i].pid && strcmp(t[j].state, t[i].state) == 0 &&
		     strcmp(t[j].wait, t[i].wait) == 0 && strcmp(t[j].python, t[i].python) == 0 &&
		     same_stack(pd, &t[j], &t[i]) && same_labels(&t[j], &t[i]);
		     j++)
			;
		print_group(pd, &t[i], j - i);
	}
}

static cJSON *thread_json(const struct fr_pprof_data *pd, const struct rthread *t)
{
	cJSON *o = cJSON_CreateObject(), *stack, *labels;
	char frame[512];

	if (!o || !fr_ipc_add_int(o, "pid", t->pid) || !fr_ipc_add_int(o, "tid", t->tid) ||
	    !cJSON_AddStringToObject(o, "thread", t->name) ||
	    !cJSON_AddStringToObject(o, "state", t->state) ||
	    (t->has_cpu && !fr_ipc_add_int(o, "cpu_ns", t->cpu_ns)) ||
	    (t->wait[0] && !cJSON_AddStringToObject(o, "wait", t->wait)) ||
	    (t->syscall[0] && !fr_ipc_add_int(o, "syscall", strtoll(t->syscall, NULL, 10))) ||
	    (t->wchan[0] && !cJSON_AddStringToObject(o, "wchan", t->wchan)) ||
	    (t->python[0] && !cJSON_AddStringToObject(o, "python", t->python)) ||
	    (t->has_waiting && !fr_ipc_add_int(o, "waiting_ns", t->waiting_ns)) ||
	    (t->creator && !fr_ipc_add_int(o, "creator", t->creator)) ||
	    !(stack = cJSON_AddArrayToObject(o, "stack"))) {
		cJSON_Delete(o);
		return NULL;
	}
	for (size_t j = 0; j < t->s->nloc; j++) {
		frame_text(pd, t, j, frame, sizeof(frame));
		cJSON_AddItemToArray(stack, cJSON_CreateString(frame));
	}
	if (t->napp && (labels = cJSON_AddObjectToObject(o, "labels")))
		for (size_t i = 0; i < t->napp; i++)
			cJSON_AddStringToObject(labels, t->app[i]->key, t->app[i]->str);
	return o;
}

/* The note when some threads have no creator: *buf, or 0 when all have
 * one (or there are none). */
static int creator_note(const struct rthread *t, size_t n, char *buf, size_t len)
{
	size_t unknown = 0;

	for (size_t i = 0; i < n; i++)
		unknown += !t[i].creator;
	if (!unknown)
		return 0;
	snprintf(buf, len,
		 "the creator of %zu of %zu threads is unknown: created before the recorder "
		 "started, or not seen in the ring's last seconds",
		 unknown, n);
	return 1;
}

/* The JSON form of the answer: {"threads": [...], "warnings": [...]}, or
 * NULL on ENOMEM. */
static cJSON *build_json(const struct fr_pprof_data *pd, const struct rthread *t, size_t n,
			 const struct fr_ipc_threads_reply *r)
{
	char note[160];
	cJSON *root = cJSON_CreateObject(), *arr, *warn;

	if (!root || !(arr = cJSON_AddArrayToObject(root, "threads")) ||
	    !(warn = cJSON_AddArrayToObject(root, "warnings")))
		goto err;
	for (size_t i = 0; i < n; i++)
		if (!cJSON_AddItemToArray(arr, thread_json(pd, &t[i])))
			goto err;
	for (uint32_t i = 0; i < r->nwarnings; i++)
		cJSON_AddItemToArray(warn, cJSON_CreateString(r->warnings[i]));
	if (creator_note(t, n, note, sizeof(note)))
		cJSON_AddItemToArray(warn, cJSON_CreateString(note));
	return root;
err:
	cJSON_Delete(root);
	return NULL;
}

static int print_json(const struct fr_pprof_data *pd, const struct rthread *t, size_t n,
		      const struct fr_ipc_threads_reply *r)
{
	cJSON *root = build_json(pd, t, n, r);
	char *text = root ? cJSON_PrintUnformatted(root) : NULL, *clean = NULL;
	size_t len;

	cJSON_Delete(root);
	/* Thread names are whatever bytes a program gave prctl(): invalid
	 * UTF-8 becomes U+FFFD, as serve does, so every JSON reader takes it. */
	if (!text || !(clean = fr_utf8_clean(text, strlen(text), &len))) {
		fprintf(stderr, "%s threads: out of memory\n", prog);
		free(text);
		return 1;
	}
	printf("%s\n", clean);
	free(clean);
	free(text);
	return 0;
}

/* The answer in `fd` read back: the decoded profile in *pd and its
 * threads, sorted into groups, in *t (both freed by the caller). Returns
 * 0 or -1 after saying why. */
static int load(int fd, struct fr_pprof_data **pd, struct rthread **t)
{
	char *gz = NULL;
	void *raw = NULL;
	size_t gzlen, rawlen;
	int ret = -1;

	*pd = NULL;
	*t = NULL;
	if (fr_read_whole(fd, SIZE_MAX, &gz, &gzlen) < 0 || !gzlen ||
	    fr_gunzip(gz, gzlen, &raw, &rawlen) < 0 || fr_pprof_read(raw, rawlen, pd) < 0) {
		fprintf(stderr, "%s threads: the answer cannot be read\n", prog);
		goto out;
	}
	if ((*pd)->nsamples && !(*t = calloc((*pd)->nsamples, sizeof(**t))))
		goto out;
	for (size_t i = 0; i < (*pd)->nsamples; i++) {
		(*t)[i].s = &(*pd)->samples[i];
		read_labels(*pd, &(*t)[i]);
	}
	if ((*pd)->nsamples)
		qsort_r(*t, (*pd)->nsamples, sizeof(**t), by_group, (void *)*pd);
	ret = 0;
out:
	free(raw);
	free(gz);
	return ret;
}

/* The answer in `fd` as JSON (flightrec serve's threads view). */
cJSON *fr_cli_threads_json(int fd, const struct fr_ipc_threads_reply *r)
{
	struct fr_pprof_data *pd;
	struct rthread *t;
	cJSON *o = NULL;

	if (load(fd, &pd, &t) == 0)
		o = build_json(pd, t, pd->nsamples, r);
	free(t);
	fr_pprof_data_free(pd);
	return o;
}

/* Reads the answer back from `fd` and prints it. Returns the exit status.
 * Also renders `flightrec dump --ring FILE --threads` (tools/cmd_dump.c). */
int fr_cli_threads_render(int fd, int json, const struct fr_ipc_threads_reply *r, const char *none)
{
	struct fr_pprof_data *pd = NULL;
	struct rthread *t = NULL;
	char note[160];
	int status = 1;

	if (load(fd, &pd, &t) < 0)
		goto out;
	if (json) {
		status = print_json(pd, t, pd->nsamples, r);
		goto out;
	}
	for (uint32_t i = 0; i < r->nwarnings; i++)
		fprintf(stderr, "%s: warning: %s\n", prog, r->warnings[i]);
	if (creator_note(t, pd->nsamples, note, sizeof(note)))
		fprintf(stderr, "%s: note: %s\n", prog, note);
	if (!pd->nsamples && none)
		printf("%s", none);
	else if (!pd->nsamples)
		printf("no threads: no such process%s\n",
		       r->nwarnings ? " (see the warnings)" : " of yours");
	print_text(pd, t, pd->nsamples);
	status = 0;
out:
	free(t);
	fr_pprof_data_free(pd);
	return status;
}

/* The latest exit of process `pid` the recorder's black box holds: 0
 * with its time in *when_ns and its name in comm, or -1 (none, or no
 * answer: nothing is said, the caller says what it knows). */
static int exit_of(const char *socket_path, uint32_t pid, int64_t *when_ns, char *comm,
		   size_t commlen)
{
	struct fr_ipc_events_req r = {.json = 1};
	cJSON *req = NULL, *resp = NULL, *line;
	char err[256], *text = NULL, *nl;
	size_t len = 0;
	int sock = -1, fd = -1, ret = -1;

	/* Everything the ring holds: since 1970 */
	r.window_ns = fr_now_real_ns() - 1;
	r.targets.npids = 1;
	r.targets.pids[0] = pid;
	if (fr_events_parse_types("exit", &r.types, err, sizeof(err)) < 0)
		return -1;
	fd = memfd_create("flightrec-threads-exit", MFD_CLOEXEC);
	req = fr_ipc_events_req_encode(&r);
	if (fd < 0 || !req)
		goto out;
	sock = fr_ipc_connect_why(socket_path, err, sizeof(err));
	if (sock < 0 || fr_ipc_call(sock, req, fd, &resp) < 0 || fr_cli_resp_error(resp) ||
	    fr_read_whole(fd, 16 << 20, &text, &len) < 0 || !text)
		goto out;
	/* JSON lines in time order: the last exit line is the latest */
	for (char *p = text; p < text + len; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(text + len - p));
		if (!nl)
			break;
		*nl = '\0';
		line = cJSON_Parse(p);
		if (line && strcmp(fr_cli_str(line, "type"), "exit") == 0 &&
		    fr_cli_num(line, "pid") == pid) {
			*when_ns = (int64_t)fr_cli_num(line, "time_ns");
			snprintf(comm, commlen, "%s", fr_cli_str(line, "comm"));
			ret = 0;
		}
		cJSON_Delete(line);
	}
out:
	if (sock >= 0)
		close(sock);
	if (fd >= 0)
		close(fd);
	free(text);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	return ret;
}

/* For threads --pid of processes that have none now: which of them
 * exited, when, and the command that shows their threads a second
 * before (--at), into a malloc'd text; NULL when the ring knows none. */
static char *exited_note(const char *socket_path, const struct fr_targets *t)
{
	char *buf = NULL, comm[64], when[64], at[64];
	size_t len = 0, found = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	for (uint32_t i = 0; i < t->npids; i++) {
		int64_t ns;

		if (exit_of(socket_path, t->pids[i], &ns, comm, sizeof(comm)) < 0) {
			/* Running, as another user's: not named to this one */
			if (kill((pid_t)t->pids[i], 0) == 0 || errno != ESRCH)
				fprintf(f, "no threads: no process %u of yours\n", t->pids[i]);
			else
				fprintf(f,
					"no threads: process %u is not running (the recorder holds "
					"no exit of it)\n",
					t->pids[i]);
			continue;
		}
		found++;
		fprintf(f,
			"no threads: process %u (%s) exited at %s; its threads a second before:\n"
			"  flightrec threads --pid %u --at %s\n",
			t->pids[i], comm, fr_cli_format_clock(ns, when, sizeof(when)), t->pids[i],
			fr_format_time(ns - FR_NS_PER_S, at, sizeof(at)));
	}
	if (fclose(f) != 0 || !found) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Asks the recorder for the threads of `q` into `fd`. Returns 0 with
 * *reply filled, or 1 after saying why not. */
static int ask(const char *socket_path, const struct fr_ipc_threads_req *q, int fd,
	       struct fr_ipc_threads_reply *reply)
{
	cJSON *req = fr_ipc_threads_req_encode(q), *resp = NULL;
	char err[512] = "";
	int ret = 1;

	if (!req || fr_cli_request(socket_path, req, fd, "", &resp) != 0)
		goto out;
	if (fr_ipc_threads_reply_decode(resp, reply, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		goto out;
	}
	ret = 0;
out:
	cJSON_Delete(req);
	cJSON_Delete(resp);
	return ret;
}

/* threads -o -: the recorder writes only regular files, so the answer
 * goes through a memfd onto standard output, what it holds said on
 * standard error. Returns the exit status. */
static int threads_to_stdout(const char *socket_path, const struct fr_ipc_threads_req *q)
{
	struct fr_ipc_threads_reply reply;
	int fd, status = 1;

	if ((fd = fr_cli_answer_memfd("threads", 1)) < 0)
		return 1;
	if (ask(socket_path, q, fd, &reply) == 0) {
		for (uint32_t i = 0; i < reply.nwarnings; i++)
			fprintf(stderr, "%s: warning: %s\n", prog, reply.warnings[i]);
		status = fr_cli_copy_to_stdout(fd, "threads") < 0 ? 1 : 0;
		if (!status)
			fprintf(stderr,
				"%s: standard output: %" PRIu64 " threads of %" PRIu64
				" processes, %" PRIu64 " bytes\n",
				prog, reply.threads, reply.processes, reply.bytes);
	}
	close(fd);
	return status;
}

/* --at WHEN into *at_ns. Returns 0 or EXIT_USAGE, said on stderr. */
static int parse_at(const char *arg, int64_t *at_ns)
{
	if (fr_query_parse_when("flightrec threads", "--at", arg, fr_now_real_ns(), at_ns))
		return EXIT_USAGE;
	if (*at_ns <= 0) {
		fprintf(stderr, "%s threads: --at %s is before 1970\n", prog, arg);
		return EXIT_USAGE;
	}
	return 0;
}

/* Puts the profile written to `out` in place at `path` and says what it
 * holds. Returns the exit status. */
static int commit_file(struct fr_cli_output *out, const char *path,
		       const struct fr_ipc_threads_reply *reply)
{
	int status = fr_cli_output_commit(out, 1) < 0 ? 1 : 0;

	for (uint32_t i = 0; i < reply->nwarnings; i++)
		fprintf(stderr, "%s: warning: %s\n", prog, reply->warnings[i]);
	if (!status)
		printf("%s: %" PRIu64 " threads of %" PRIu64 " processes, %" PRIu64 " bytes\n",
		       path, reply->threads, reply->processes, reply->bytes);
	return status;
}

int fr_cmd_threads(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"pid", required_argument, NULL, FR_OPT_PID},
		{"comm", required_argument, NULL, FR_OPT_COMM},
		{"cgroup", required_argument, NULL, FR_OPT_CGROUP},
		{"output", required_argument, NULL, 'o'},
		{"json", no_argument, NULL, FR_OPT_JSON},
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"at", required_argument, NULL, OPT_AT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static struct fr_query_args qa;
	static struct fr_ipc_threads_req q;
	struct fr_ipc_threads_reply reply;
	struct fr_cli_output out = {.fd = -1};
	const char *socket_s = NULL;
	char *socket_path = NULL, *gone = NULL;
	int c, ret, json = 0, status = 1, fd = -1;

	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		if ((ret = fr_query_opt("flightrec threads", c, optarg, &qa)) == 1)
			continue;
		if (ret)
			return ret;
		switch (c) {
		case FR_OPT_JSON: json = 1; break;
		case FR_OPT_SOCKET: socket_s = optarg; break;
		case OPT_AT:
			if (parse_at(optarg, &q.at_ns))
				return EXIT_USAGE;
			break;
		case 'h': usage_threads(stdout); return 0;
		default: return fr_cli_bad_option("threads", argv);
		}
	}
	if (optind < argc || (json && qa.out_s) ||
	    (!qa.targets.npids && !qa.targets.ncomms && !qa.targets.cgroup[0])) {
		fprintf(stderr, "%s threads: %s (see %s threads --help)\n", prog,
			optind < argc	   ? "unexpected argument"
			: json && qa.out_s ? "--json and -o do not go together"
					   : "name the processes: --pid, --comm or --cgroup",
			prog);
		return EXIT_USAGE;
	}
	q.targets = qa.targets;
	socket_path = socket_s ? strdup(socket_s) : fr_ipc_client_socket_path();
	if (!socket_path)
		goto out;
	if (qa.out_s && strcmp(qa.out_s, "-") == 0) {
		status = threads_to_stdout(socket_path, &q);
		goto out;
	}
	if (qa.out_s) {
		if (fr_cli_output_open(&out, qa.out_s, FR_PROFILE_PPROF) < 0)
			goto out;
		fd = out.fd;
	} else if ((fd = fr_cli_answer_memfd("threads", 0)) < 0) {
		goto out;
	}
	if (ask(socket_path, &q, fd, &reply) != 0) {
		if (qa.out_s)
			fr_cli_output_commit(&out, 0);
		goto out;
	}
	if (qa.out_s) {
		status = commit_file(&out, qa.out_s, &reply);
		goto out;
	}
	/* Processes that are gone: when the ring saw them exit, and how to
	 * see their threads before (--at) */
	if (!json && !reply.threads && !q.at_ns && qa.targets.npids)
		gone = exited_note(socket_path, &qa.targets);
	status = fr_cli_threads_render(fd, json, &reply, gone);
	free(gone);
out:
	if (fd >= 0 && !qa.out_s)
		close(fd);
	free(socket_path);
	return status;
}
