/* flightrec status and flightrec sessions: what the recorder is doing,
 * and the sessions of its configuration. */
#include "tools/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/log.h"
#include "core/util/parse.h"
#include "tools/query.h"

static const char *prog = FR_CLI_PROG;

static void usage_status(FILE *f)
{
	fprintf(f, "Usage: flightrec status [--json] [--socket PATH]\n"
		   "Show the recorder's version, uptime, events and rates, the ring's path, size,\n"
		   "use and span, and the samples stored and lost.\n"
		   "\n"
		   "  --json         print one JSON object (times in Unix ns, sizes in bytes)\n"
		   "  --socket PATH  the recorder's socket\n"
		   "  -h, --help     show this help\n");
}

/* What each owner holds of a cache (its "owners" and "other_owners"):
 * "root 1.2MiB, uid 1001 30.0MiB, 2 other users 4.0MiB"; "" without. */
static const char *owners_text(const cJSON *c, char *buf, size_t len)
{
	const cJSON *o, *others = cJSON_GetObjectItemCaseSensitive(c, "other_owners");
	char size[32];
	size_t used = 0;
	int k;

	buf[0] = '\0';
	cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(c, "owners")) {
		fr_format_size_human((uint64_t)fr_cli_num(o, "bytes"), size, sizeof(size));
		if (fr_cli_num(o, "uid") == 0)
			k = snprintf(buf + used, len - used, "%sroot %s", used ? ", " : "", size);
		else
			k = snprintf(buf + used, len - used, "%suid %.0f %s", used ? ", " : "",
				     fr_cli_num(o, "uid"), size);
		if (k < 0 || (size_t)k >= len - used)
			return buf;
		used += (size_t)k;
	}
	if (others) {
		fr_format_size_human((uint64_t)fr_cli_num(others, "bytes"), size, sizeof(size));
		snprintf(buf + used, len - used, "%s%.0f other users %s", used ? ", " : "",
			 fr_cli_num(others, "owners"), size);
	}
	return buf;
}

/* The symbol cache: files, bytes of its budget by owner (and where, for
 * root): "symbols:  12 files, 31.2MiB of 1GiB (root 1.2MiB, uid 1001
 * 30.0MiB) cached in DIR". */
static void print_symbol_cache(const cJSON *sc)
{
	char used[32], budget[32], owners[512];

	if (!sc)
		return;
	fr_format_size_human((uint64_t)fr_cli_num(sc, "bytes"), used, sizeof(used));
	fr_format_size_human((uint64_t)fr_cli_num(sc, "budget"), budget, sizeof(budget));
	owners_text(sc, owners, sizeof(owners));
	printf("symbols:  %.0f files, %s of %s%s%s%s cached%s%s\n", fr_cli_num(sc, "files"), used,
	       budget, owners[0] ? " (" : "", owners, owners[0] ? ")" : "",
	       cJSON_GetObjectItemCaseSensitive(sc, "dir") ? " in " : "",
	       cJSON_GetObjectItemCaseSensitive(sc, "dir") ? fr_cli_str(sc, "dir") : "");
}

/* "0.4s ago" for a Unix ns time, "never" for 0. */
static const char *ago(double unix_ns, int64_t now, char *buf, size_t len)
{
	char d[32];

	if (unix_ns <= 0)
		return snprintf(buf, len, "never"), buf;
	fr_cli_human_duration(now > (int64_t)unix_ns ? now - (int64_t)unix_ns : 0, d, sizeof(d));
	snprintf(buf, len, "%s ago", d);
	return buf;
}

/* The ClickHouse exporter: "export:   shipping to URL as HOST, 2s behind
 * (cursor TIME); 120 batches, 5400 rows, 0 retries", and what is wrong
 * or lost on lines of their own. */
static void print_export(const cJSON *ex)
{
	char when[64], lag[64], lost[64];

	if (!ex)
		return;
	fr_format_time((int64_t)fr_cli_num(ex, "cursor_ns"), when, sizeof(when));
	fr_cli_human_duration((int64_t)fr_cli_num(ex, "lag_ns"), lag, sizeof(lag));
	printf("export:   %s to %s as %s, %s behind (cursor %s); %.0f batches, %.0f rows, "
	       "%.0f retries\n",
	       fr_cli_str(ex, "state"), fr_cli_str(ex, "url"), fr_cli_str(ex, "host"), lag, when,
	       fr_cli_num(ex, "batches"), fr_cli_num(ex, "rows"), fr_cli_num(ex, "retries"));
	if (fr_cli_str(ex, "last_error")[0] && strcmp(fr_cli_str(ex, "state"), "retrying") == 0)
		printf("export:   last error: %s\n", fr_cli_str(ex, "last_error"));
	if (fr_cli_num(ex, "query_memory_reserved") > 0 || fr_cli_num(ex, "memory_waits") > 0)
		printf("export:   holds %s of the query memory; %.0f batches waited for it\n",
		       fr_format_size((uint64_t)fr_cli_num(ex, "query_memory_reserved"), lost,
				      sizeof(lost)),
		       fr_cli_num(ex, "memory_waits"));
	if (fr_cli_num(ex, "lost_ns") > 0) {
		fr_cli_human_duration((int64_t)fr_cli_num(ex, "lost_ns"), lost, sizeof(lost));
		printf("export:   LOST %s of samples (%.0f whole batches): the ring dropped them "
		       "before they were shipped\n",
		       lost, fr_cli_num(ex, "lost_batches"));
	}
}

/* "          ring writes FAIL since 12.0s ago: Read-only file system —
 * nothing recorded since is stored": a disk that refuses the ring's
 * appends, which a stall counter would not show (each append fails fast). */
static void print_writer_error(const cJSON *in, int64_t now)
{
	char since[64];

	if (!fr_cli_str(in, "writer_error")[0])
		return;
	printf("          ring writes FAIL since %s: %s — nothing recorded since is stored\n",
	       ago(fr_cli_num(in, "writer_error_since_ns"), now, since, sizeof(since)),
	       fr_cli_str(in, "writer_error"));
}

/* The ingest thread's and the writer's progress and stall counters,
 * louder when either is stuck: a stale seal or ring append means the
 * profiles of the last seconds are missing, and samples are being lost. */
static void print_ingest(const cJSON *in)
{
	char when[64], seal[64], append[64], busy[64], longest[32], queued[32];
	int64_t now = fr_now_real_ns();
	int stalled = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(in, "stalled"));
	double stalls, timeouts;

	if (!in)
		return;
	stalls = fr_cli_num(in, "stalls");
	timeouts = fr_cli_num(in, "flush_timeouts");
	printf("ingest:   %s, last drain %s, seal %s, ring append %s\n",
	       stalled ? "STALLED" : "running",
	       ago(fr_cli_num(in, "last_drain_ns"), now, when, sizeof(when)),
	       ago(fr_cli_num(in, "last_seal_ns"), now, seal, sizeof(seal)),
	       ago(fr_cli_num(in, "last_append_ns"), now, append, sizeof(append)));
	fr_cli_human_duration((int64_t)fr_cli_num(in, "longest_stall_ns"), longest,
			      sizeof(longest));
	printf("stalls:   %.0f%s%s%s, %.0f flush timeout%s\n", stalls,
	       stalls || stalled ? " (longest " : "", stalls || stalled ? longest : "",
	       stalls || stalled ? ")" : "", timeouts, timeouts == 1 ? "" : "s");
	if (stalled)
		printf("          last seal %s — the recorder is stalled: samples are lost while "
		       "its perf buffers are full, and attach cannot flush\n",
		       seal);
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(in, "writer_stalled")))
		printf("          last ring append %s with %s waiting — the ring's writer is "
		       "stalled (its disk does not answer)\n",
		       append,
		       fr_format_size_human((uint64_t)fr_cli_num(in, "writer_queued_bytes"), queued,
					    sizeof(queued)));
	print_writer_error(in, now);
	if (fr_cli_num(in, "build_id_read_busy_ns") > 1e9) {
		fr_cli_human_duration((int64_t)fr_cli_num(in, "build_id_read_busy_ns"), busy,
				      sizeof(busy));
		printf("files:    a build id read has taken %s (%.0f waiting); recording goes on "
		       "without it\n",
		       busy, fr_cli_num(in, "build_id_reads_pending"));
	}
}

/* "unwind:   dwarf, 8192-byte stack copies: 1520 stacks, 1490 whole,
 * stopped early: 30 (stack copy 2, no cfi 20, pending 8, bad 0, max depth
 * 0)". */
static void print_unwinding(const cJSON *ev)
{
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(ev, "unwinding");
	const cJSON *ends = cJSON_GetObjectItemCaseSensitive(u, "ends");

	if (!u || !ends)
		return;
	printf("unwind:   %s with %.0f-byte stack copies: %.0f stacks, %.0f whole; stopped early: "
	       "stack copy %.0f, no cfi %.0f, pending %.0f, bad %.0f, max depth %.0f\n",
	       fr_cli_str(ev, "event"), fr_cli_num(ev, "stack_copy"), fr_cli_num(u, "stacks"),
	       fr_cli_num(ends, "done"), fr_cli_num(ends, "stack_copy"), fr_cli_num(ends, "no_cfi"),
	       fr_cli_num(ends, "pending"), fr_cli_num(ends, "bad"), fr_cli_num(ends, "max_depth"));
}

/* An offcpu source's cost counters: "offcpu:   1200 switches out, 1190
 * in; 1180 samples kept, 0 evicted (table full); 12 of 65536 threads
 * waiting". Switch-outs neither kept nor waiting lost their partner (a
 * thread that exited, or a record lost). With the eBPF mechanism:
 * "offcpu:   bpf, stacks of waits >= 1ms: 5200 switches; 300 long
 * waits (290 with user stacks, 10 without), 900 short-wait records, 0
 * dropped; 40 open waits listed". A fallback says why on a line of its
 * own. */
static void print_offcpu(const cJSON *ev)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(ev, "offcpu");
	const char *mech = o ? fr_cli_str(o, "mechanism") : NULL;
	const cJSON *fallback = o ? cJSON_GetObjectItemCaseSensitive(o, "fallback") : NULL;

	if (!o)
		return;
	if (cJSON_IsString(fallback))
		printf("offcpu:   perf mechanism (%s)\n", fallback->valuestring);
	if (mech && strcmp(mech, "bpf") == 0) {
		char min[32];

		printf("offcpu:   bpf, stacks of waits >= %s: %.0f switches; %.0f long waits "
		       "(%.0f with user stacks by %s, %.0f without), %.0f short-wait records, %.0f "
		       "dropped; %.0f open waits listed\n",
		       fr_format_duration((int64_t)fr_cli_num(o, "min_wait_ns"), min, sizeof(min)),
		       fr_cli_num(o, "switch_outs"), fr_cli_num(o, "long_waits"),
		       fr_cli_num(o, "user_stacks"),
		       fr_cli_str(o, "user_stacks_by") ? fr_cli_str(o, "user_stacks_by") : "?",
		       fr_cli_num(o, "no_user_stack"), fr_cli_num(o, "short_records"),
		       fr_cli_num(o, "ringbuf_drops"), fr_cli_num(o, "open_listed"));
		printf("offcpu:   %.0f of the open waits runnable; blocked threads' stacks: %.0f read, "
		       "%.0f not (the reader was behind)\n",
		       fr_cli_num(o, "open_runnable"), fr_cli_num(o, "stack_walks"),
		       fr_cli_num(o, "stack_walks_dropped"));
		if (fr_cli_num(o, "ringbuf_drops") > 0 || fr_cli_num(o, "labels_dropped") > 0)
			printf("offcpu:   %.0f waits lost (%.3f s off-CPU; no room in the ring "
			       "buffer: in lost), %.0f kept without their labels\n",
			       fr_cli_num(o, "ringbuf_drops"),
			       fr_cli_num(o, "ringbuf_dropped_ns") / 1e9,
			       fr_cli_num(o, "labels_dropped"));
		if (cJSON_GetObjectItemCaseSensitive(o, "stack_copies"))
			printf("offcpu:   user stacks unwound from %.0f-byte copies: %.0f of long waits "
			       "(%.0f cut short where the stack ends), %.0f of blocked threads cut "
			       "short\n",
			       fr_cli_num(ev, "stack_copy"), fr_cli_num(o, "stack_copies"),
			       fr_cli_num(o, "stack_copies_short"),
			       fr_cli_num(o, "stack_walk_copies_short"));
		return;
	}
	printf("offcpu:   %.0f switches out, %.0f in; %.0f samples kept, %.0f evicted (table full); "
	       "%.0f of %.0f threads waiting\n",
	       fr_cli_num(o, "switch_outs"), fr_cli_num(o, "switch_ins"), fr_cli_num(o, "samples"),
	       fr_cli_num(o, "evicted"), fr_cli_num(o, "waiting"), fr_cli_num(o, "capacity"));
}

/* "tables:   3 CFI tables (1.2MiB of 256MiB: root 1.0MiB, uid 1001
 * 204.0KiB), 5 built, ...". */
static void print_unwind_tables(const cJSON *t)
{
	char used[32], budget[32], owners[512];

	if (!t)
		return;
	fr_format_size_human((uint64_t)fr_cli_num(t, "bytes"), used, sizeof(used));
	fr_format_size_human((uint64_t)fr_cli_num(t, "budget"), budget, sizeof(budget));
	owners_text(t, owners, sizeof(owners));
	printf("tables:   %.0f CFI tables (%s of %s%s%s), %.0f built, %.0f failed, %.0f pending, "
	       "%.0f dropped\n",
	       fr_cli_num(t, "tables"), used, budget, owners[0] ? ": " : "", owners,
	       fr_cli_num(t, "built"), fr_cli_num(t, "failed"), fr_cli_num(t, "pending"),
	       fr_cli_num(t, "evicted"));
}

/* The memory ceiling, one line: what the daemon holds of limits.memory
 * and who holds it, in MiB. */
static void print_memory(const cJSON *m)
{
	const double mib = 1048576.0;

	if (!m)
		return;
	printf("memory:   %.0f MiB of %.0f MiB (queries %.0f, timelines %.0f, unwind tables %.0f, "
	       "symbols %.0f, labels %.0f)\n",
	       fr_cli_num(m, "used") / mib, fr_cli_num(m, "limit") / mib,
	       fr_cli_num(m, "queries") / mib, fr_cli_num(m, "timelines") / mib,
	       fr_cli_num(m, "unwind_tables") / mib, fr_cli_num(m, "symbols") / mib,
	       fr_cli_num(m, "labels") / mib);
}

/* A sampling event's precise_ip level and multiplexing, when there is
 * something to say. */
static void print_pmu(const cJSON *ev)
{
	const cJSON *pmu = cJSON_GetObjectItemCaseSensitive(ev, "pmu");
	double enabled = fr_cli_num(pmu, "enabled_ns"), running = fr_cli_num(pmu, "running_ns");

	if (!pmu)
		return;
	if (cJSON_GetObjectItemCaseSensitive(pmu, "precise_ip"))
		printf("          precise_ip %.0f (asked %.0f)\n", fr_cli_num(pmu, "precise_ip"),
		       fr_cli_num(pmu, "precise_ip_asked"));
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pmu, "multiplexed")) && enabled > 0)
		printf("          multiplexed: counted %.1f%% of the time; %.0f samples scaled "
		       "up by enabled/running\n",
		       100.0 * running / enabled, fr_cli_num(pmu, "scaled_samples"));
}

/* A period-mode event's period: a duration for cpu ("2ms"), else a
 * count of events ("1000 events"). */
static const char *period_text(const cJSON *ev, char *buf, size_t len)
{
	double p = fr_cli_num(ev, "period");

	if (strcmp(fr_cli_str(ev, "event"), "cpu") == 0)
		return fr_format_duration((int64_t)p, buf, len);
	snprintf(buf, len, "%.0f events", p);
	return buf;
}

static void print_status(const cJSON *r)
{
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(r, "events"), *ev, *labels;
	char up[64], period[48];

	fr_cli_human_duration((int64_t)fr_cli_num(r, "uptime_ns"), up, sizeof(up));
	printf("flightrecd %s, pid %.0f, up %s (config: %s)\n", fr_cli_str(r, "version"),
	       fr_cli_num(r, "pid"), up, fr_cli_str(r, "config"));
	cJSON_ArrayForEach(ev, events) {
		if (strcmp(fr_cli_str(ev, "state"), "recording") != 0) {
			printf("event:    %s not recording: %s\n", fr_cli_str(ev, "event"),
			       fr_cli_str(ev, "error"));
			continue;
		}
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ev, "every_switch")))
			printf("event:    %s at every context switch", fr_cli_str(ev, "event"));
		else if (fr_cli_num(ev, "period") > 0)
			printf("event:    %s every %s", fr_cli_str(ev, "event"),
			       period_text(ev, period, sizeof(period)));
		else
			printf("event:    %s at %.0f Hz", fr_cli_str(ev, "event"),
			       fr_cli_num(ev, "hz"));
		printf(" on %.0f CPUs (%s stacks): %.0f samples, %.0f lost, %.0f throttled, "
		       "%.0f truncated stacks\n",
		       fr_cli_num(r, "cpus"), fr_cli_str(ev, "stacks"), fr_cli_num(ev, "samples"),
		       fr_cli_num(ev, "lost"), fr_cli_num(ev, "throttled"),
		       fr_cli_num(ev, "truncated_stacks"));
		print_unwinding(ev);
		print_offcpu(ev);
		print_pmu(ev);
	}
	print_unwind_tables(cJSON_GetObjectItemCaseSensitive(r, "unwind_tables"));
	cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(r, "consumers")) {
		char wants[256];

		fr_cli_format_events(cJSON_GetObjectItemCaseSensitive(ev, "events"), wants,
				     sizeof(wants));
		printf("consumer: %s wants %s\n", fr_cli_str(ev, "name"), wants);
	}
	fr_cli_print_ring(cJSON_GetObjectItemCaseSensitive(r, "ring"),
			  fr_cli_num(r, "samples_lost"));
	if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(r, "samples_lost_complete")))
		printf("          (still counting the chunks found in the ring at start)\n");
	printf("          %.0f lost since the recorder started\n",
	       fr_cli_num(r, "samples_lost_since_start"));
	if (fr_cli_num(r, "chunks_dropped") > 0 || fr_cli_num(r, "write_errors") > 0)
		printf("writes:   %.0f chunks dropped (disk too slow), %.0f write errors\n",
		       fr_cli_num(r, "chunks_dropped"), fr_cli_num(r, "write_errors"));
	printf("tracking: %.0f processes, %.0f threads\n", fr_cli_num(r, "processes"),
	       fr_cli_num(r, "threads"));
	labels = cJSON_GetObjectItemCaseSensitive(r, "labels");
	if (fr_cli_num(r, "labelled_processes") > 0 ||
	    fr_cli_num(r, "unreadable_label_processes") > 0) {
		printf("application labels: %.0f processes, %.0f not read (see the log)",
		       fr_cli_num(r, "labelled_processes"),
		       fr_cli_num(r, "unreadable_label_processes"));
		if (labels && cJSON_GetObjectItemCaseSensitive(labels, "copies"))
			printf("; read at %.0f samples, %.0f copies dropped, %.0f reads failed",
			       fr_cli_num(labels, "copies"), fr_cli_num(labels, "copies_dropped"),
			       fr_cli_num(labels, "read_faults"));
		printf("\n");
	}
	if (labels && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(labels, "error")))
		printf("application labels: not read (%s)\n", fr_cli_str(labels, "error"));
	if (labels && fr_cli_num(labels, "wait_copies_dropped") > 0)
		printf("application labels: %.0f off-CPU waits kept without theirs (no room for "
		       "the copy)\n",
		       fr_cli_num(labels, "wait_copies_dropped"));
	print_ingest(cJSON_GetObjectItemCaseSensitive(r, "ingest"));
	print_memory(cJSON_GetObjectItemCaseSensitive(r, "memory"));
	print_symbol_cache(cJSON_GetObjectItemCaseSensitive(r, "symbol_cache"));
	print_export(cJSON_GetObjectItemCaseSensitive(r, "export"));
}

/* status and sessions: options --socket and --json, one request, the
 * reply printed by `print` or, with --json, as received (its integers are
 * exact, unlike cJSON's doubles). */
static int report_cmd(int argc, char **argv, const char *cmd, void (*usage)(FILE *f),
		      void (*print)(const cJSON *r))
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, FR_OPT_SOCKET},
		{"json", no_argument, NULL, FR_OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *socket_s = NULL;
	cJSON *resp = NULL;
	char *text = NULL;
	int c, json = 0, status;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case FR_OPT_SOCKET: socket_s = optarg; break;
		case FR_OPT_JSON: json = 1; break;
		case 'h': usage(stdout); return 0;
		default: return fr_cli_bad_option(cmd, argv);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s %s: unexpected argument \"%s\" (see %s %s --help)\n", prog, cmd,
			argv[optind], prog, cmd);
		return EXIT_USAGE;
	}
	status = fr_cli_simple_request(cmd, socket_s, &resp, &text);
	if (status == 0) {
		if (json)
			printf("%s\n", text);
		else
			print(resp);
	}
	cJSON_Delete(resp);
	free(text);
	return status;
}

int fr_cmd_status(int argc, char **argv)
{
	return report_cmd(argc, argv, "status", usage_status, print_status);
}

static void usage_sessions(FILE *f)
{
	fprintf(f, "Usage: flightrec sessions [--json] [--socket PATH]\n"
		   "List the recorder's sessions (from its configuration): their events and\n"
		   "rates, targets, triggers and last dump, and the rate the recorder samples\n"
		   "at (the highest any session asks for, unless flightrecd --hz set it).\n"
		   "\n"
		   "  --json         print the recorder's reply as one JSON object\n"
		   "  --socket PATH  the recorder's socket\n"
		   "  -h, --help     show this help\n");
}

/* The sessions table, then what is recorded for them. */
static void print_sessions(const cJSON *resp)
{
	const cJSON *sess;

	printf("%-20s %-24s %-16s %-10s %s\n", "SESSION", "EVENTS", "TARGETS", "TRIGGERS",
	       "LAST DUMP");
	cJSON_ArrayForEach(sess, cJSON_GetObjectItemCaseSensitive(resp, "sessions")) {
		char events[256], last[64] = "never";
		const cJSON *triggers = cJSON_GetObjectItemCaseSensitive(sess, "triggers");

		fr_cli_format_events(cJSON_GetObjectItemCaseSensitive(sess, "events"), events,
				     sizeof(events));
		char trig[256] = "";
		const cJSON *tr;
		size_t tused = 0;

		cJSON_ArrayForEach(tr, triggers) {
			int k;
			if (strcmp(fr_cli_str(tr, "on"), "signal") == 0)
				k = snprintf(trig + tused, sizeof(trig) - tused, "%ssignal:%s",
					     tused ? "," : "", fr_cli_str(tr, "signal"));
			else if (strcmp(fr_cli_str(tr, "on"), "cpu_above") == 0)
				k = snprintf(trig + tused, sizeof(trig) - tused, "%scpu>%.0f%%",
					     tused ? "," : "", fr_cli_num(tr, "percent"));
			else
				k = snprintf(trig + tused, sizeof(trig) - tused, "%s%s",
					     tused ? "," : "", fr_cli_str(tr, "on"));
			if (k < 0 || (size_t)k >= sizeof(trig) - tused)
				break;
			tused += (size_t)k;
		}
		if (fr_cli_num(sess, "last_dump_ns") > 0)
			fr_format_time((int64_t)fr_cli_num(sess, "last_dump_ns"), last,
				       sizeof(last));
		printf("%-20s %-24s %-16s %-10s %s\n", fr_cli_str(sess, "name"), events,
		       fr_cli_str(sess, "targets"), trig[0] ? trig : "none", last);
	}
	{
		const cJSON *ev;
		char period[48];

		cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(resp, "events")) {
			if (strcmp(fr_cli_str(ev, "state"), "recording") != 0)
				printf("recording: %s failed: %s\n", fr_cli_str(ev, "event"),
				       fr_cli_str(ev, "error"));
			else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ev, "every_switch")))
				printf("recording: %s at every context switch (config: %s)\n",
				       fr_cli_str(ev, "event"), fr_cli_str(resp, "config"));
			else if (fr_cli_num(ev, "period") > 0)
				printf("recording: %s every %s (period mode, the smallest period "
				       "any session asks for; config: %s)\n",
				       fr_cli_str(ev, "event"),
				       period_text(ev, period, sizeof(period)),
				       fr_cli_str(resp, "config"));
			else
				printf("recording: %s at %.0f Hz per CPU (%s; config: %s)\n",
				       fr_cli_str(ev, "event"), fr_cli_num(ev, "hz"),
				       strcmp(fr_cli_str(ev, "event"), "cpu") == 0 &&
						       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
							       resp, "hz_from_command_line"))
					       ? "set by flightrecd --hz"
					       : "the highest rate any session or client asks for",
				       fr_cli_str(resp, "config"));
		}
	}
}

int fr_cmd_sessions(int argc, char **argv)
{
	return report_cmd(argc, argv, "sessions", usage_sessions, print_sessions);
}
