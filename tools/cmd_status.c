/* flightrec status and flightrec sessions: what the recorder is doing,
 * and the sessions of its configuration. */
#include "tools/cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/util/time.h"
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
static const char *owners_text(const struct fr_ipc_owners *ow, char *buf, size_t len)
{
	char size[32];
	size_t used = 0;
	int k;

	buf[0] = '\0';
	for (uint32_t i = 0; i < ow->n; i++) {
		fr_format_size_human(ow->v[i].bytes, size, sizeof(size));
		if (ow->v[i].uid == 0)
			k = snprintf(buf + used, len - used, "%sroot %s", used ? ", " : "", size);
		else
			k = snprintf(buf + used, len - used, "%suid %" PRIu64 " %s",
				     used ? ", " : "", ow->v[i].uid, size);
		if (k < 0 || (size_t)k >= len - used)
			return buf;
		used += (size_t)k;
	}
	if (ow->has_others) {
		fr_format_size_human(ow->other_bytes, size, sizeof(size));
		snprintf(buf + used, len - used, "%s%" PRIu64 " other users %s", used ? ", " : "",
			 ow->other_owners, size);
	}
	return buf;
}

/* The symbol cache: files, bytes of its budget by owner (and where, for
 * root): "symbols:  12 files, 31.2MiB of 1GiB (root 1.2MiB, uid 1001
 * 30.0MiB) cached in DIR". */
/* When a memory event the recorder samples by itself is taken, or NULL
 * for the events sessions and clients ask for. */
static const char *memory_when(const char *event)
{
	if (strcmp(event, "oom") == 0)
		return "every OOM kill";
	/* The black box's (recorder/sampling/bpf_events.h). */
	if (strcmp(event, "exec") == 0)
		return "every exec";
	if (strcmp(event, "exit") == 0)
		return "every process exit";
	if (strcmp(event, "crash") == 0)
		return "every crash (fatal signal)";
	if (strcmp(event, "rss") == 0 || strcmp(event, "memory-pressure") == 0 ||
	    strcmp(event, "throttled") == 0 || strcmp(event, "cpu-pressure") == 0 ||
	    strcmp(event, "io-pressure") == 0)
		return "once a second";
	return NULL;
}

static void print_symbol_cache(const struct fr_ipc_status_reply *r)
{
	const struct fr_ipc_status_symcache *sc = &r->symbol_cache;
	char used[32], budget[32], owners[512];

	if (!r->has_symbol_cache)
		return;
	fr_format_size_human(sc->bytes, used, sizeof(used));
	fr_format_size_human(sc->budget, budget, sizeof(budget));
	owners_text(&sc->owners, owners, sizeof(owners));
	printf("symbols:  %" PRIu64 " files, %s of %s%s%s%s cached%s%s\n", sc->files, used, budget,
	       owners[0] ? " (" : "", owners, owners[0] ? ")" : "", sc->dir[0] ? " in " : "",
	       sc->dir);
}

/* "0.4s ago" for a Unix ns time, "never" for 0. */
static const char *ago(int64_t unix_ns, int64_t now, char *buf, size_t len)
{
	char d[32];

	if (unix_ns <= 0)
		return snprintf(buf, len, "never"), buf;
	fr_cli_human_duration(now > unix_ns ? now - unix_ns : 0, d, sizeof(d));
	snprintf(buf, len, "%s ago", d);
	return buf;
}

/* The ClickHouse exporter: "export:   shipping to URL as HOST, 2s behind
 * (cursor TIME); 120 batches, 5400 rows, 0 retries", and what is wrong
 * or lost on lines of their own. */
static void print_export(const struct fr_ipc_status_reply *r)
{
	const struct fr_ipc_status_export *ex = &r->export_;
	char when[64], lag[64], lost[64];

	if (!r->has_export)
		return;
	fr_format_time(ex->cursor_ns, when, sizeof(when));
	fr_cli_human_duration(ex->lag_ns, lag, sizeof(lag));
	printf("export:   %s to %s as %s, %s behind (cursor %s); %" PRIu64 " batches, %" PRIu64
	       " rows, %" PRIu64 " retries\n",
	       ex->state, ex->url, ex->host, lag, when, ex->batches, ex->rows, ex->retries);
	if (ex->last_error[0] && strcmp(ex->state, "retrying") == 0)
		printf("export:   last error: %s\n", ex->last_error);
	if (ex->query_memory_reserved > 0 || ex->memory_waits > 0)
		printf("export:   holds %s of the query memory; %" PRIu64
		       " batches waited for it\n",
		       fr_format_size((uint64_t)ex->query_memory_reserved, lost, sizeof(lost)),
		       ex->memory_waits);
	if (ex->lost_ns > 0) {
		fr_cli_human_duration(ex->lost_ns, lost, sizeof(lost));
		printf("export:   LOST %s of samples (%" PRIu64 " whole batches): the ring dropped "
		       "them before they were shipped\n",
		       lost, ex->lost_batches);
	}
}

/* "          ring writes FAIL since 12.0s ago: Read-only file system —
 * nothing recorded since is stored": a disk that refuses the ring's
 * appends, which a stall counter would not show (each append fails fast). */
static void print_writer_error(const struct fr_ipc_status_ingest *in, int64_t now)
{
	char since[64];

	if (!in->writer_error[0])
		return;
	printf("          ring writes FAIL since %s: %s — nothing recorded since is stored\n",
	       ago(in->writer_error_since_ns, now, since, sizeof(since)), in->writer_error);
}

/* The ingest thread's and the writer's progress and stall counters,
 * louder when either is stuck: a stale seal or ring append means the
 * profiles of the last seconds are missing, and samples are being lost. */
static void print_ingest(const struct fr_ipc_status_ingest *in)
{
	char when[64], seal[64], append[64], busy[64], longest[32], queued[32];
	int64_t now = fr_now_real_ns();
	int stalled = in->stalled;

	printf("ingest:   %s, last drain %s, seal %s, ring append %s\n",
	       stalled ? "STALLED" : "running", ago(in->last_drain_ns, now, when, sizeof(when)),
	       ago(in->last_seal_ns, now, seal, sizeof(seal)),
	       ago(in->last_append_ns, now, append, sizeof(append)));
	fr_cli_human_duration(in->longest_stall_ns, longest, sizeof(longest));
	printf("stalls:   %" PRIu64 "%s%s%s, %" PRIu64 " flush timeout%s\n", in->stalls,
	       in->stalls || stalled ? " (longest " : "", in->stalls || stalled ? longest : "",
	       in->stalls || stalled ? ")" : "", in->flush_timeouts,
	       in->flush_timeouts == 1 ? "" : "s");
	if (stalled)
		printf("          last seal %s — the recorder is stalled: samples are lost while "
		       "its perf buffers are full, and attach cannot flush\n",
		       seal);
	if (in->writer_stalled)
		printf("          last ring append %s with %s waiting — the ring's writer is "
		       "stalled (its disk does not answer)\n",
		       append,
		       fr_format_size_human(in->writer_queued_bytes, queued, sizeof(queued)));
	print_writer_error(in, now);
	if (in->build_id_read_busy_ns > FR_NS_PER_S) {
		fr_cli_human_duration(in->build_id_read_busy_ns, busy, sizeof(busy));
		printf("files:    a build id read has taken %s (%" PRIu64 " waiting); recording "
		       "goes on without it\n",
		       busy, in->build_id_reads_pending);
	}
}

/* "unwind:   dwarf, 8192-byte stack copies: 1520 stacks, 1490 whole,
 * stopped early: 30 (stack copy 2, no cfi 20, pending 8, bad 0, max depth
 * 0)". */
static void print_unwinding(const struct fr_ipc_event_status *ev)
{
	const struct fr_ipc_unwinding *u = &ev->unwinding;

	if (!ev->has_unwind || !ev->stack_copy)
		return;
	printf("unwind:   %s with %" PRIu64 "-byte stack copies: %" PRIu64 " stacks, %" PRIu64
	       " whole; stopped early: stack copy %" PRIu64 ", no cfi %" PRIu64 ", pending %" PRIu64
	       ", bad %" PRIu64 ", max depth %" PRIu64 "\n",
	       ev->event, ev->stack_copy, u->stacks, u->done, u->stack_copy, u->no_cfi, u->pending,
	       u->bad, u->max_depth);
}

/* The eBPF mechanism's offcpu counters (print_offcpu()). */
static void print_offcpu_bpf(const struct fr_ipc_event_status *ev)
{
	const struct fr_ipc_offcpu *o = &ev->offcpu;
	char min[32];

	printf("offcpu:   bpf, stacks of waits >= %s: %" PRIu64 " switches; %" PRIu64
	       " long waits (%" PRIu64 " with user stacks by %s, %" PRIu64 " without), %" PRIu64
	       " short-wait records, %" PRIu64 " dropped; %" PRIu64 " open waits listed\n",
	       fr_format_duration((int64_t)o->min_wait_ns, min, sizeof(min)), o->switch_outs,
	       o->long_waits, o->user_stacks, o->user_stacks_by, o->no_user_stack, o->short_records,
	       o->ringbuf_drops, o->open_listed);
	printf("offcpu:   %" PRIu64 " of the open waits runnable; blocked threads' stacks: %" PRIu64
	       " read, %" PRIu64 " not (the reader was behind)\n",
	       o->open_runnable, o->stack_walks, o->stack_walks_dropped);
	if (o->ringbuf_drops > 0 || o->labels_dropped > 0)
		printf("offcpu:   %" PRIu64 " waits lost (%.3f s off-CPU; no room in the ring "
		       "buffer: in lost), %" PRIu64 " kept without their labels\n",
		       o->ringbuf_drops, (double)o->ringbuf_dropped_ns / 1e9, o->labels_dropped);
	if (o->has_wake)
		printf("wakeup:   %" PRIu64 " wakes of long waits (%" PRIu64 " lost), %" PRIu64
		       " from interrupts; %" PRIu64 " with the woken thread's labels, %" PRIu64
		       " without; runqueue: %" PRIu64 " delays >= min_wait, %" PRIu64
		       " short-delay records\n",
		       o->wakes, o->wakes_dropped, o->wakes_irq, o->wakes_joined,
		       o->wakes_unlabelled, o->runqueue_samples, o->runqueue_short);
	if (o->has_copies)
		printf("offcpu:   user stacks unwound from %" PRIu64 "-byte copies: %" PRIu64
		       " of long waits (%" PRIu64 " cut short where the stack ends), %" PRIu64
		       " of blocked threads cut short\n",
		       ev->stack_copy, o->stack_copies, o->stack_copies_short,
		       o->stack_walk_copies_short);
}

/* An offcpu source's cost counters: "offcpu:   1200 switches out, 1190
 * in; 1180 samples kept, 0 evicted (table full); 12 of 65536 threads
 * waiting". Switch-outs neither kept nor waiting lost their partner (a
 * thread that exited, or a record lost). With the eBPF mechanism:
 * "offcpu:   bpf, stacks of waits >= 1ms: 5200 switches; 300 long
 * waits (290 with user stacks, 10 without), 900 short-wait records, 0
 * dropped; 40 open waits listed". A fallback says why on a line of its
 * own. */
static void print_offcpu(const struct fr_ipc_event_status *ev)
{
	const struct fr_ipc_offcpu *o = &ev->offcpu;

	if (!ev->has_offcpu)
		return;
	if (o->fallback[0])
		printf("offcpu:   perf mechanism (%s)\n", o->fallback);
	if (strcmp(o->mechanism, "bpf") == 0) {
		print_offcpu_bpf(ev);
		return;
	}
	printf("offcpu:   %" PRIu64 " switches out, %" PRIu64 " in; %" PRIu64
	       " samples kept, %" PRIu64 " evicted (table full); %" PRIu64 " of %" PRIu64
	       " threads waiting\n",
	       o->switch_outs, o->switch_ins, o->samples, o->evicted, o->waiting, o->capacity);
}

/* "tables:   3 CFI tables (1.2MiB of 256MiB: root 1.0MiB, uid 1001
 * 204.0KiB), 5 built, ...". */
static void print_unwind_tables(const struct fr_ipc_status_reply *r)
{
	const struct fr_ipc_status_unwind_tables *t = &r->unwind_tables;
	char used[32], budget[32], owners[512];

	if (!r->has_unwind_tables)
		return;
	fr_format_size_human(t->bytes, used, sizeof(used));
	fr_format_size_human(t->budget, budget, sizeof(budget));
	owners_text(&t->owners, owners, sizeof(owners));
	printf("tables:   %" PRIu64 " CFI tables (%s of %s%s%s), %" PRIu64 " built, %" PRIu64
	       " failed, %" PRIu64 " pending, %" PRIu64 " dropped\n",
	       t->tables, used, budget, owners[0] ? ": " : "", owners, t->built, t->failed,
	       t->pending, t->evicted);
}

/* The memory ceiling, one line: what the daemon holds of limits.memory
 * and who holds it, in MiB. */
static void print_memory(const struct fr_ipc_status_memory *m)
{
	const double mib = 1048576.0;

	printf("memory:   %.0f MiB of %.0f MiB (queries %.0f, timelines %.0f, unwind tables %.0f, "
	       "symbols %.0f, labels %.0f)\n",
	       (double)m->used / mib, (double)m->limit / mib, (double)m->queries / mib,
	       (double)m->timelines / mib, (double)m->unwind_tables / mib, (double)m->symbols / mib,
	       (double)m->labels / mib);
}

/* A sampling event's precise_ip level and multiplexing, when there is
 * something to say. */
static void print_pmu(const struct fr_ipc_event_status *ev)
{
	const struct fr_ipc_pmu *pmu = &ev->pmu;

	if (!ev->has_pmu)
		return;
	if (pmu->has_precise)
		printf("          precise_ip %" PRIu64 " (asked %" PRIu64 ")\n", pmu->precise_ip,
		       pmu->precise_ip_asked);
	if (pmu->multiplexed && pmu->enabled_ns > 0)
		printf("          multiplexed: counted %.1f%% of the time; %" PRIu64
		       " samples scaled up by enabled/running\n",
		       100.0 * (double)pmu->running_ns / (double)pmu->enabled_ns,
		       pmu->scaled_samples);
}

/* A period-mode event's period: a duration for cpu ("2ms"), else a
 * count of events ("1000 events"). */
static const char *period_text(const struct fr_ipc_event_status *ev, char *buf, size_t len)
{
	if (strcmp(ev->event, "cpu") == 0)
		return fr_format_duration((int64_t)ev->period, buf, len);
	snprintf(buf, len, "%" PRIu64 " events", ev->period);
	return buf;
}

/* "cgroups:  12 watched (cgroup v1 at /sys/fs/cgroup/cpu): 3400 cpu.stat
 * reads, 0 failed, 0 skipped". */
static void print_cgroups(const struct fr_ipc_event_status *ev)
{
	const struct fr_ipc_cgroups *c = &ev->cgroups;

	if (!ev->has_cgroups)
		return;
	printf("cgroups:  %" PRIu64 " watched (%s): %" PRIu64 " cpu.stat reads, %" PRIu64
	       " failed, %" PRIu64 " skipped\n",
	       c->watched, c->source, c->reads, c->failures, c->skipped);
}

/* One line per event recorded, and how its stacks fared. */
static void print_events(const struct fr_ipc_status_reply *r)
{
	char period[48];

	for (uint32_t i = 0; i < r->rec.nevents; i++) {
		const struct fr_ipc_event_status *ev = &r->rec.events[i];

		if (strcmp(ev->state, "recording") != 0) {
			printf("event:    %s not recording: %s\n", ev->event, ev->error);
			continue;
		}
		if (memory_when(ev->event)) {
			printf("event:    %s at %s, whatever sessions ask: %" PRIu64
			       " samples, %" PRIu64 " lost\n",
			       ev->event, memory_when(ev->event), ev->samples, ev->lost);
			print_cgroups(ev);
			continue;
		}
		if (ev->every_switch)
			printf("event:    %s at every context switch", ev->event);
		else if (ev->period > 0)
			printf("event:    %s every %s", ev->event,
			       period_text(ev, period, sizeof(period)));
		else
			printf("event:    %s at %" PRIu64 " Hz", ev->event, ev->hz);
		printf(" on %" PRIu64 " CPUs (%s stacks): %" PRIu64 " samples, %" PRIu64
		       " lost, %" PRIu64 " throttled, %" PRIu64 " truncated stacks\n",
		       r->cpus, ev->stacks, ev->samples, ev->lost, ev->throttled,
		       ev->truncated_stacks);
		print_unwinding(ev);
		print_offcpu(ev);
		print_pmu(ev);
	}
}

/* Application labels: how many processes, and what reading them cost. */
static void print_labels(const struct fr_ipc_status_reply *r)
{
	const struct fr_ipc_status_labels *l = &r->labels;

	if (r->labelled_processes > 0 || r->unreadable_label_processes > 0) {
		printf("application labels: %" PRIu64 " processes, %" PRIu64
		       " not read (see the log)",
		       r->labelled_processes, r->unreadable_label_processes);
		if (l->has_counts)
			printf("; read at %" PRIu64 " samples, %" PRIu64 " copies dropped, %" PRIu64
			       " reads failed",
			       l->copies, l->copies_dropped, l->read_faults);
		printf("\n");
	}
	if (l->go_processes > 0 || l->go_skipped > 0)
		printf("Go pprof labels: %" PRIu64 " programs read, %" PRIu64
		       " not (a Go release or a build whose runtime is not known; see the log)\n",
		       l->go_processes, l->go_skipped);
	if (l->error[0])
		printf("application labels: not read (%s)\n", l->error);
	if (r->python.processes || r->python.refused || r->python.samples) {
		printf("Python frames: %" PRIu64 " CPython processes read now, %" PRIu64
		       " not; %" PRIu64 " samples given %" PRIu64 " frames, %" PRIu64
		       " without (records lost: %" PRIu64 ")\n",
		       r->python.processes, r->python.refused, r->python.samples, r->python.frames,
		       r->python.missed, r->python.dropped);
		if (r->python.last_refused[0])
			printf("  last not read: %s\n", r->python.last_refused);
	}
	if (r->alloc.processes || r->alloc.refused || r->alloc.samples) {
		const struct fr_ipc_status_alloc *a = &r->alloc;

		printf("Allocation sampling: %" PRIu64 " processes, %" PRIu64 " refused; %" PRIu64
		       " samples, frees %" PRIu64 " matched %" PRIu64 " unmatched, %" PRIu64
		       " live blocks (%" PRIu64 " evicted); lost: %" PRIu64
		       " by the libraries (%" PRIu64 " of them frees), %" PRIu64
		       " bytes skipped, %" PRIu64 " bad records; mean %" PRIu64 " bytes\n",
		       a->processes, a->refused, a->samples, a->frees_matched, a->frees_unmatched,
		       a->live_blocks, a->evicted, a->lib_dropped, a->lib_frees_lost,
		       a->skipped_bytes, a->bad_records, a->mean);
		if (a->last_refusal[0])
			printf("  last refused: %s\n", a->last_refusal);
	}
	if (l->wait_copies_dropped > 0)
		printf("application labels: %" PRIu64 " off-CPU waits kept without theirs (no room "
		       "for the copy)\n",
		       l->wait_copies_dropped);
}

static void print_status(const struct fr_ipc_status_reply *r)
{
	char up[64];

	fr_cli_human_duration(r->uptime_ns, up, sizeof(up));
	printf("flightrecd %s, pid %" PRId64 ", up %s (config: %s)\n", r->version, r->pid, up,
	       r->config);
	print_events(r);
	print_unwind_tables(r);
	for (uint32_t i = 0; i < r->rec.nconsumers; i++) {
		const struct fr_ipc_consumer_status *c = &r->rec.consumers[i];
		char wants[256];

		fr_cli_format_events(c->events, c->nevents, wants, sizeof(wants));
		printf("consumer: %s wants %s\n", c->name, wants);
	}
	fr_cli_print_ring(&r->ring, r->samples_lost);
	if (!r->samples_lost_complete)
		printf("          (still counting the chunks found in the ring at start)\n");
	printf("          %" PRIu64 " lost since the recorder started\n",
	       r->samples_lost_since_start);
	if (r->chunks_dropped > 0 || r->write_errors > 0)
		printf("writes:   %" PRIu64 " chunks dropped (disk too slow), %" PRIu64
		       " write errors\n",
		       r->chunks_dropped, r->write_errors);
	printf("tracking: %" PRIu64 " processes, %" PRIu64 " threads\n", r->processes, r->threads);
	print_labels(r);
	print_ingest(&r->ingest);
	print_memory(&r->memory);
	print_symbol_cache(r);
	print_export(r);
}

/* Prints `obj` (the re-encoded reply) as one line of JSON. Returns 0, or
 * 1 out of memory. */
static int print_json(cJSON *obj)
{
	char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;

	cJSON_Delete(obj);
	if (!text) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	printf("%s\n", text);
	cJSON_free(text);
	return 0;
}

/* The status reply decoded, printed for a person or, with `json`, as the
 * recorder sent it (encoded again from what was decoded: the same text). */
static int show_status(const cJSON *resp, int json)
{
	struct fr_ipc_status_reply *r = malloc(sizeof(*r));
	char err[512];
	int status = 0;

	if (!r || fr_ipc_status_reply_decode(resp, r, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s status: %s\n", prog, r ? err : "out of memory");
		free(r);
		return 1;
	}
	if (json)
		status = print_json(fr_ipc_status_reply_encode(r));
	else
		print_status(r);
	fr_ipc_status_reply_fini(r);
	free(r);
	return status;
}

/* status and sessions: options --socket and --json, one request, the
 * reply decoded and shown by `show` (with `json`: as one JSON line). */
static int report_cmd(int argc, char **argv, const char *cmd, void (*usage)(FILE *f),
		      int (*show)(const cJSON *resp, int json))
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
	if (status == 0)
		status = show(resp, json);
	cJSON_Delete(resp);
	free(text);
	return status;
}

int fr_cmd_status(int argc, char **argv)
{
	return report_cmd(argc, argv, "status", usage_status, show_status);
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

/* "signal:SIGUSR1,cpu>90%,pressure:memory>=some 10%": a session's
 * triggers. */
static void triggers_text(const struct fr_ipc_session *sess, char *trig, size_t len)
{
	size_t tused = 0;

	trig[0] = '\0';
	for (uint32_t t = 0; t < sess->ntriggers; t++) {
		const struct fr_ipc_session_trigger *tr = &sess->triggers[t];
		int k;

		if (strcmp(tr->on, "signal") == 0)
			k = snprintf(trig + tused, len - tused, "%ssignal:%s", tused ? "," : "",
				     tr->signal);
		else if (strcmp(tr->on, "cpu_above") == 0)
			k = snprintf(trig + tused, len - tused, "%scpu>%" PRIu64 "%%",
				     tused ? "," : "", tr->percent);
		else if (strcmp(tr->on, "pressure") == 0)
			/* "pressure:memory>=some 10%" */
			k = snprintf(trig + tused, len - tused, "%spressure:%s>=%s",
				     tused ? "," : "", tr->resource, tr->above);
		else
			k = snprintf(trig + tused, len - tused, "%s%s", tused ? "," : "", tr->on);
		if (k < 0 || (size_t)k >= len - tused)
			break;
		tused += (size_t)k;
	}
}

/* The sessions table, then what is recorded for them. */
static void print_sessions(const struct fr_ipc_sessions_reply *r)
{
	char period[48];

	printf("%-20s %-24s %-16s %-10s %s\n", "SESSION", "EVENTS", "TARGETS", "TRIGGERS",
	       "LAST DUMP");
	for (uint32_t i = 0; i < r->nsessions; i++) {
		const struct fr_ipc_session *sess = &r->sessions[i];
		char events[256], last[64] = "never", trig[256];

		fr_cli_format_events(sess->events, sess->nevents, events, sizeof(events));
		triggers_text(sess, trig, sizeof(trig));
		if (sess->last_dump_ns > 0)
			fr_format_time(sess->last_dump_ns, last, sizeof(last));
		printf("%-20s %-24s %-16s %-10s %s\n", sess->name, events, sess->targets,
		       trig[0] ? trig : "none", last);
	}
	for (uint32_t i = 0; i < r->rec.nevents; i++) {
		const struct fr_ipc_event_status *ev = &r->rec.events[i];

		if (strcmp(ev->state, "recording") != 0)
			printf("recording: %s failed: %s\n", ev->event, ev->error);
		else if (memory_when(ev->event))
			printf("recording: %s at %s, always\n", ev->event, memory_when(ev->event));
		else if (ev->every_switch)
			printf("recording: %s at every context switch (config: %s)\n", ev->event,
			       r->config);
		else if (ev->period > 0)
			printf("recording: %s every %s (period mode, the smallest period any "
			       "session asks for; config: %s)\n",
			       ev->event, period_text(ev, period, sizeof(period)), r->config);
		else
			printf("recording: %s at %" PRIu64 " Hz per CPU (%s; config: %s)\n",
			       ev->event, ev->hz,
			       strcmp(ev->event, "cpu") == 0 && r->hz_from_command_line
				       ? "set by flightrecd --hz"
				       : "the highest rate any session or client asks for",
			       r->config);
	}
}

/* As show_status(), for sessions. */
static int show_sessions(const cJSON *resp, int json)
{
	struct fr_ipc_sessions_reply *r = malloc(sizeof(*r));
	char err[512];
	int status = 0;

	if (!r || fr_ipc_sessions_reply_decode(resp, r, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s sessions: %s\n", prog, r ? err : "out of memory");
		free(r);
		return 1;
	}
	if (json)
		status = print_json(fr_ipc_sessions_reply_encode(r));
	else
		print_sessions(r);
	fr_ipc_sessions_reply_fini(r);
	free(r);
	return status;
}

int fr_cmd_sessions(int argc, char **argv)
{
	return report_cmd(argc, argv, "sessions", usage_sessions, show_sessions);
}
