/* What the commands that write a profile say about it (tools/cli.h,
 * struct fr_cli_report): the "wrote ..." line with the profile's real
 * span (its first to last sample) next to the window asked for, and the
 * cases where the profile is not what was asked: a window entirely
 * outside the ring, targets that matched nothing (named, with the
 * processes the window does hold), a recorder that stalled within the
 * window. attach takes these facts from the recorder's reply, dump from
 * the ring it reads; both print them the same way here. */
#include "tools/cli.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/parse.h"
#include "ipc/msg.h"

static const char *prog = FR_CLI_PROG;

/* Appends printf text to buf[*used..len), never past it. */
static void add(char *buf, size_t len, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void add(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, len - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used = *used + (size_t)n < len ? *used + (size_t)n : len;
}

/* "--comm nginx,postgres": the options that chose targets of kind `bit`,
 * as they were given; "" when none did. */
static void name_filter(const struct fr_cli_report *r, uint32_t bit, char *buf, size_t len)
{
	const struct fr_targets *t = r->targets;
	size_t used = 0;

	buf[0] = '\0';
	if (bit == FR_TARGET_PID && t->npids) {
		add(buf, len, &used, "--pid ");
		for (uint32_t i = 0; i < t->npids; i++)
			add(buf, len, &used, "%s%u", i ? "," : "", t->pids[i]);
		if (t->children)
			add(buf, len, &used, " --children");
	} else if (bit == FR_TARGET_COMM && t->ncomms) {
		add(buf, len, &used, "--comm ");
		for (uint32_t i = 0; i < t->ncomms; i++)
			add(buf, len, &used, "%s%s", i ? "," : "", t->comms[i]);
	} else if (bit == FR_TARGET_CGROUP && t->cgroup[0]) {
		add(buf, len, &used, "--cgroup %s", t->cgroup);
	} else if (bit == FR_TARGET_LABEL) {
		for (uint32_t i = 0; i < t->nlabels; i++)
			add(buf, len, &used, "%s--label %s=%s", used ? " " : "", t->label_keys[i],
			    t->label_values[i]);
		if (t->label_key[0])
			add(buf, len, &used, "%s%s%s", used ? " " : "",
			    r->label_key_by ? "--by label:" : "--label-key ", t->label_key);
	}
}

/* Says which targets matched nothing. */
static void say_empty(const struct fr_cli_report *r, const char *level)
{
	char line[1024], one[512];
	size_t used = 0;
	uint32_t n = 0;

	line[0] = '\0';
	if (r->empty & FR_TARGET_COMBINED) {
		for (uint32_t bit = FR_TARGET_PID; bit < FR_TARGET_COMBINED; bit <<= 1) {
			name_filter(r, bit, one, sizeof(one));
			if (one[0])
				add(line, sizeof(line), &used, "%s%s", used ? " " : "", one);
		}
		fprintf(stderr,
			"%s: %s%s matched no samples together in the window, though each matches "
			"some (%" PRIu64 " processes recorded there)\n",
			prog, level, line, r->procs);
		return;
	}
	for (uint32_t bit = FR_TARGET_PID; bit < FR_TARGET_COMBINED; bit <<= 1) {
		if (!(r->empty & bit))
			continue;
		name_filter(r, bit, one, sizeof(one));
		add(line, sizeof(line), &used, "%s%s", n++ ? " and " : "", one);
	}
	used = 0;
	one[0] = '\0';
	for (uint32_t i = 0; i < r->npids_gone && r->pids_gone; i++)
		add(one, sizeof(one), &used, "%s%u", i ? ", " : "", r->pids_gone[i]);
	fprintf(stderr,
		"%s: %s%s matched no samples in the window (%" PRIu64
		" process%s recorded there)%s%s%s\n",
		prog, level, line, r->procs, r->procs == 1 ? "" : "es",
		one[0] ? "; no process " : "", one, one[0] ? " is running" : "");
}

int fr_cli_report_check(const struct fr_cli_report *r, int allow_empty)
{
	const char *level = allow_empty ? "warning: " : "";
	char win[96], a[64], b[96];

	if (r->writer_error_ns && r->t0 > r->ring_newest) {
		fprintf(stderr,
			"%s: %sthe recorder cannot write its ring since %s (%s): nothing of the "
			"window %s was stored (see flightrec status)\n",
			prog, level, fr_cli_format_clock(r->writer_error_ns, a, sizeof(a)),
			r->writer_error ? r->writer_error : "error",
			fr_cli_format_window(r->t0, r->t1, win, sizeof(win)));
		return FR_REPORT_EMPTY;
	}
	if (r->ring_newest && (r->t1 <= r->ring_oldest || r->t0 > r->ring_newest)) {
		int before = r->t1 <= r->ring_oldest;

		fr_cli_format_window(r->ring_oldest, r->ring_newest, b, sizeof(b));
		fprintf(stderr,
			"%s: %sthe window %s is %s the ring's %s sample at %s (the ring holds %s)\n",
			prog, level, fr_cli_format_window(r->t0, r->t1, win, sizeof(win)),
			before ? "before" : "after", before ? "first" : "last",
			fr_cli_format_clock(before ? r->ring_oldest : r->ring_newest, a, sizeof(a)),
			b);
		return FR_REPORT_EMPTY;
	}
	/* The event, not a filter, emptied it: nothing records it */
	if (!r->samples && r->unrecorded && r->unrecorded[0]) {
		const char *one = strchr(r->unrecorded, ',') ? "EVENT" : r->unrecorded;

		fprintf(stderr,
			"%s: %s%s %s not being recorded, and the ring holds none of it in the window "
			"%s; the recorder records %s. `%s attach --follow --event %s` records it "
			"from now on (or add it to a session's events: flightrec.json(5))\n",
			prog, level, r->unrecorded, strchr(r->unrecorded, ',') ? "are" : "is",
			fr_cli_format_window(r->t0, r->t1, win, sizeof(win)),
			r->recording && r->recording[0] ? r->recording : "nothing", prog, one);
		return FR_REPORT_EMPTY;
	}
	if (!r->samples && r->empty) {
		say_empty(r, level);
		return FR_REPORT_EMPTY;
	}
	return FR_REPORT_OK;
}

int fr_cli_report_stall(const struct fr_cli_report *r)
{
	char win[96], a[64];

	if (r->writer_error_ns) {
		fprintf(stderr,
			"%s: warning: the recorder cannot write its ring since %s (%s): samples "
			"after that are missing (see flightrec status)\n",
			prog, fr_cli_format_clock(r->writer_error_ns, a, sizeof(a)),
			r->writer_error ? r->writer_error : "error");
		return 1;
	}
	if (!r->stall_t1)
		return 0;
	fprintf(stderr,
		"%s: warning: the recorder was held up %s within the window: samples of that time "
		"may be missing (see flightrec status: ingest)\n",
		prog, fr_cli_format_window(r->stall_t0, r->stall_t1, win, sizeof(win)));
	return 1;
}

int fr_cli_report_loss(const struct fr_cli_report *r)
{
	char name[FR_EVENT_NAME_MAX];
	int over = 0;

	for (uint32_t i = 0; i < r->nloss; i++) {
		const struct fr_cli_loss *l = &r->loss[i];
		/* Of what the ring would have held; nothing kept: all lost. */
		double share = (double)l->lost / (double)(l->lost + l->recorded);

		if (!l->lost)
			continue;
		fr_event_format(l->event, name, sizeof(name));
		if (share * 1000 > FR_CLI_LOSS_MAX_PERMILLE) {
			fprintf(stderr,
				"%s: warning: the recorder lost %" PRIu64 " of %" PRIu64
				" samples of %s in the window (%.1f%%, machine-wide): the answer is "
				"short of them (flightrec timeline marks the steps)\n",
				prog, l->lost, l->lost + l->recorded, name, share * 100);
			over = 1;
		} else {
			fprintf(stderr,
				"%s: %" PRIu64 " samples of %s lost in the window (%.2f%%, "
				"machine-wide; at most %d.%d%% is accepted)\n",
				prog, l->lost, name, share * 100, FR_CLI_LOSS_MAX_PERMILLE / 10,
				FR_CLI_LOSS_MAX_PERMILLE % 10);
		}
	}
	return over;
}

int fr_cli_report_missing(const struct fr_cli_report *r, int allow_loss)
{
	int stalled = fr_cli_report_stall(r), over = fr_cli_report_loss(r);
	/* FLIGHTREC_ALLOW_LOSS=1: --allow-loss for every command (a script on
	 * a host that is always overloaded, a test suite's busy machine). */
	const char *env = getenv("FLIGHTREC_ALLOW_LOSS");

	if (r->writer_error_ns)
		return 1;
	if (!stalled && !over)
		return 0;
	if (allow_loss || (env && strcmp(env, "1") == 0))
		return 0;
	fprintf(stderr,
		"%s: the answer misses samples of the window (exit status 1; --allow-loss "
		"accepts it)\n",
		prog);
	return 1;
}

void fr_cli_report_summary(const struct fr_cli_report *r)
{
	char span[32], dur[32], late[32], size[32], rate[32] = "not downsampled", win[96];
	const char *out = strcmp(r->path, "-") == 0 ? "standard output" : r->path;

	/* No rate: offcpu or period mode, every sample kept. */
	if (r->hz)
		snprintf(rate, sizeof(rate), "at %u Hz", r->hz);
	fr_format_duration(r->t1 - r->t0, dur, sizeof(dur));
	fr_format_size_human(r->bytes, size, sizeof(size));
	/* "N samples, M stacks" first, as scripts read it. */
	if (!r->samples) {
		fprintf(stderr, "%s: wrote %s: 0 samples, 0 stacks (window %s), %s (%s)\n", prog,
			out, dur, rate, size);
	} else {
		late[0] = '\0';
		if (r->ring_oldest > r->t0 && r->ring_oldest < r->t1) {
			char in[32];

			snprintf(late, sizeof(late), ", the ring starts %s in",
				 fr_format_duration(r->ring_oldest - r->t0, in, sizeof(in)));
		}
		fprintf(stderr,
			"%s: wrote %s: %" PRIu64 " samples, %" PRIu64
			" stacks, spanning %s (window %s%s), %s (%s)\n",
			prog, out, r->samples, r->stacks,
			fr_format_duration(r->last_ns - r->first_ns, span, sizeof(span)), dur, late,
			rate, size);
	}
	/* Allocations are recorded only in processes that opted in. */
	if (!r->samples && r->memory)
		fprintf(stderr,
			"%s: no allocation samples: no process loaded libflightrec "
			"(LD_PRELOAD=libflightrec.so) in the window, or none of the targets did\n",
			prog);
	if (r->show_window)
		fprintf(stderr, "%s: window %s\n", prog,
			fr_cli_format_window(r->t0, r->t1, win, sizeof(win)));
}

void fr_cli_report_from_attach(struct fr_cli_report *r, const struct fr_ipc_attach_reply *reply,
			       const struct fr_ipc_attach_req *ar)
{
	*r = (struct fr_cli_report){
		.samples = reply->samples,
		.stacks = reply->stacks,
		.bytes = reply->bytes,
		.hz = reply->hz,
		.t0 = reply->t0_ns,
		.t1 = reply->t1_ns,
		.first_ns = reply->first_ns,
		.last_ns = reply->last_ns,
		.ring_oldest = reply->ring_oldest_ns,
		.ring_newest = reply->ring_newest_ns,
		.stall_t0 = reply->stall_t0_ns,
		.stall_t1 = reply->stall_t1_ns,
		.writer_error_ns = reply->writer_error_ns,
		.writer_error = reply->writer_error,
		.empty = reply->empty_filters,
		.procs = reply->procs_in_window,
		.npids_gone = reply->npids_not_running,
		.pids_gone = reply->pids_not_running,
		.targets = &ar->targets,
		.memory = fr_cli_events_memory(ar->events, ar->nevents),
		.unrecorded = reply->unrecorded,
		.recording = reply->recording,
	};
	for (uint32_t e = 0; e < reply->nevents && e < FR_LIMIT_EVENTS; e++)
		r->loss[r->nloss++] = (struct fr_cli_loss){
			.event = reply->events[e].event,
			.lost = reply->events[e].lost,
			.recorded = reply->events[e].recorded,
		};
}

int fr_cli_events_memory(const uint32_t *events, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (events[i] == FR_EVENT_ALLOC || events[i] == FR_EVENT_HEAP)
			return 1;
	return 0;
}
