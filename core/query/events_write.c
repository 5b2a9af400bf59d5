/* The black box's events as text or JSON lines (core/query/events.h,
 * "WRITING").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/query/events.h"
#include "core/util/parse.h"

/* Series summed up at most in text; more share a line "other series". */
#define SERIES_MAX 256

/* Text: a name as it is, its control characters as '?' (a comm or a path
 * is anyone's to choose, and must not forge a line). */
static void text_str(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

static int is_series(uint32_t event)
{
	return event == FR_EVENT_MEM_PRESSURE || event == FR_EVENT_CPU_PRESSURE ||
	       event == FR_EVENT_IO_PRESSURE || event == FR_EVENT_THROTTLED;
}

/* Whether label `key` is one of the fields of `event` (sample.h), not a
 * label of the process's own. */
static int is_field(uint32_t event, const char *key)
{
	static const char *const exec[] = {"path", "ppid", "old_pid", NULL};
	static const char *const exitf[] = {"exit_code",  "signal",	 "core",
					    "cpu_ns",	  "sender",	 "sender_pid",
					    "sender_uid", "sender_comm", NULL};
	static const char *const crash[] = {"signal", "code", "addr", NULL};
	static const char *const oom[] = {"constraint", NULL};
	const char *const *k = event == FR_EVENT_EXEC	 ? exec
			       : event == FR_EVENT_EXIT	 ? exitf
			       : event == FR_EVENT_CRASH ? crash
			       : event == FR_EVENT_OOM	 ? oom
							 : NULL;

	for (; k && *k; k++) {
		if (strcmp(*k, key) == 0)
			return 1;
	}
	return 0;
}

/* A field holding a decimal number (1..20 digits), as JSON: the number,
 * else the string. */
static void json_num_field(FILE *f, const char *key, const char *v)
{
	size_t n = strspn(v, "0123456789");

	fprintf(f, ",\"%s\":", key);
	if (n && n == strlen(v) && n <= 19 && (v[0] != '0' || n == 1))
		fputs(v, f);
	else
		fr_json_fputs(f, v);
}

static void json_stack(FILE *f, const struct fr_events_item *it)
{
	char addr[32];

	fputs(",\"stack\":[", f);
	for (uint32_t k = 0; k < it->nframes; k++) {
		const struct fr_events_frame *fr = &it->frames[k];

		snprintf(addr, sizeof(addr), "0x%" PRIx64, fr->addr);
		fputs(k ? ",{\"function\":" : "{\"function\":", f);
		if (fr->function)
			fr_json_fputs(f, fr->function);
		else
			fr_json_fputs(f, addr);
		fputs(",\"file\":", f);
		if (fr->file)
			fr_json_fputs(f, fr->file);
		else
			fputs("null", f);
		if (fr->line)
			fprintf(f, ",\"line\":%" PRIu32, fr->line);
		else
			fputs(",\"line\":null", f);
		if (fr->kernel)
			fputs(",\"kernel\":true", f);
		fputc('}', f);
	}
	fputc(']', f);
}

static void write_json(FILE *f, const struct fr_events_item *it)
{
	char time[64];
	const char *v;
	int nown = 0;

	fputs("{\"time\":", f);
	fr_json_fputs(f, fr_format_time(it->time_ns, time, sizeof(time)));
	fprintf(f, ",\"time_ns\":%" PRId64 ",\"type\":", it->time_ns);
	fr_json_fputs(f, fr_events_type_name(it->event));
	fprintf(f, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, it->pid, it->tid);
	if (it->comm[0]) {
		fputs(",\"comm\":", f);
		fr_json_fputs(f, it->comm);
	}
	if (it->cgroup) {
		fputs(",\"cgroup\":", f);
		fr_json_fputs(f, it->cgroup);
	}
	switch (it->event) {
	case FR_EVENT_CRASH:
		for (const char *const *k = (const char *const[]){"signal", "code", "addr", NULL};
		     *k; k++) {
			if ((v = fr_events_label(it, *k))) {
				fprintf(f, ",\"%s\":", *k);
				fr_json_fputs(f, v);
			}
		}
		break;
	case FR_EVENT_EXIT:
		if ((v = fr_events_label(it, "exit_code")))
			json_num_field(f, "exit_code", v);
		if ((v = fr_events_label(it, "signal"))) {
			fputs(",\"signal\":", f);
			fr_json_fputs(f, v);
		}
		if ((v = fr_events_label(it, "core")))
			fprintf(f, ",\"core\":%s", strcmp(v, "1") == 0 ? "true" : "false");
		/* Who sent the signal: {"kind": "kernel"}, or {"kind":
		 * "process", "pid", "uid", "comm"}. */
		if ((v = fr_events_label(it, "sender"))) {
			fputs(",\"sender\":{\"kind\":", f);
			fr_json_fputs(f, v);
			fputc('}', f);
		} else if ((v = fr_events_label(it, "sender_pid"))) {
			fputs(",\"sender\":{\"kind\":\"process\"", f);
			json_num_field(f, "pid", v);
			if ((v = fr_events_label(it, "sender_uid")))
				json_num_field(f, "uid", v);
			if ((v = fr_events_label(it, "sender_comm"))) {
				fputs(",\"comm\":", f);
				fr_json_fputs(f, v);
			}
			fputc('}', f);
		}
		if ((v = fr_events_label(it, "cpu_ns")))
			json_num_field(f, "cpu_ns", v);
		fprintf(f, ",\"lifetime_ns\":%" PRIu64, it->weight);
		break;
	case FR_EVENT_EXEC:
		if ((v = fr_events_label(it, "path"))) {
			fputs(",\"path\":", f);
			fr_json_fputs(f, v);
		}
		if ((v = fr_events_label(it, "ppid")))
			json_num_field(f, "ppid", v);
		if ((v = fr_events_label(it, "old_pid")))
			json_num_field(f, "old_pid", v);
		break;
	case FR_EVENT_OOM:
		fprintf(f, ",\"rss\":%" PRIu64, it->weight);
		if ((v = fr_events_label(it, "constraint"))) {
			fputs(",\"constraint\":", f);
			fr_json_fputs(f, v);
		}
		break;
	default: fprintf(f, ",\"stall_ns\":%" PRIu64, it->weight); break;
	}
	if (it->event == FR_EVENT_CRASH)
		json_stack(f, it);
	for (uint32_t k = 0; k < it->nlabels; k++) {
		if (is_field(it->event, it->labels[k].key))
			continue;
		fputs(nown++ ? "," : ",\"labels\":{", f);
		fr_json_fputs(f, it->labels[k].key);
		fputc(':', f);
		fr_json_fputs(f, it->labels[k].value);
	}
	if (nown)
		fputc('}', f);
	fputs("}\n", f);
}

/* ---- text ----------------------------------------------------------- */

static void text_proc(FILE *f, const struct fr_events_item *it)
{
	if (!it->pid) {
		fputs("[machine]", f);
		return;
	}
	fprintf(f, "pid %" PRIu32 " (", it->pid);
	text_str(f, it->comm[0] ? it->comm : "[unknown]");
	fputc(')', f);
}

static void text_labels(FILE *f, const struct fr_events_item *it)
{
	int n = 0;

	for (uint32_t k = 0; k < it->nlabels; k++) {
		if (is_field(it->event, it->labels[k].key))
			continue;
		fputs(n++ ? " " : " labels ", f);
		text_str(f, it->labels[k].key);
		fputc('=', f);
		text_str(f, it->labels[k].value);
	}
}

static void text_stack(FILE *f, const struct fr_events_item *it)
{
	for (uint32_t k = 0; k < it->nframes; k++) {
		const struct fr_events_frame *fr = &it->frames[k];

		fputs("    ", f);
		if (fr->function)
			text_str(f, fr->function);
		else
			fprintf(f, "0x%" PRIx64, fr->addr);
		if (fr->file) {
			fputs(" (", f);
			text_str(f, fr->file);
			if (fr->line)
				fprintf(f, ":%" PRIu32, fr->line);
			fputc(')', f);
		}
		if (fr->kernel)
			fputs(" [kernel]", f);
		fputc('\n', f);
	}
}

/* The share of a second `ns` is, "1.2%". */
static const char *share(uint64_t ns, uint64_t of_ns, char *buf, size_t len)
{
	snprintf(buf, len, "%.1f%%", of_ns ? 100.0 * (double)ns / (double)of_ns : 0.0);
	return buf;
}

static void text_event(FILE *f, const struct fr_events_item *it)
{
	char time[64], d1[32], d2[32], pct[16];
	const char *v, *w;
	uint64_t cpu;

	fprintf(f, "%s %-15s ", fr_format_time(it->time_ns, time, sizeof(time)),
		fr_events_type_name(it->event));
	text_proc(f, it);
	switch (it->event) {
	case FR_EVENT_CRASH:
		fprintf(f, " tid %" PRIu32, it->tid);
		for (const char *const *k = (const char *const[]){"signal", "code", NULL}; *k;
		     k++) {
			if ((v = fr_events_label(it, *k))) {
				fputc(' ', f);
				text_str(f, v);
			}
		}
		if ((v = fr_events_label(it, "addr"))) {
			fputs(" at ", f);
			text_str(f, v);
		}
		break;
	case FR_EVENT_EXIT:
		if ((v = fr_events_label(it, "signal"))) {
			fputs(" killed by ", f);
			text_str(f, v);
		} else if ((v = fr_events_label(it, "exit_code"))) {
			fputs(" exit_code ", f);
			text_str(f, v);
		}
		if ((v = fr_events_label(it, "sender"))) {
			fputs(" from the ", f);
			text_str(f, v);
		} else if ((v = fr_events_label(it, "sender_pid"))) {
			fputs(" from pid ", f);
			text_str(f, v);
			if ((w = fr_events_label(it, "sender_comm"))) {
				fputs(" (", f);
				text_str(f, w);
				fputc(')', f);
			}
			if ((w = fr_events_label(it, "sender_uid"))) {
				fputs(" uid ", f);
				text_str(f, w);
			}
		}
		if ((v = fr_events_label(it, "core")) && strcmp(v, "1") == 0)
			fputs(" (core dumped)", f);
		fprintf(f, " after %s", fr_format_duration((int64_t)it->weight, d1, sizeof(d1)));
		w = fr_events_label(it, "cpu_ns");
		if (w && fr_parse_u64(w, 0, INT64_MAX, &cpu) == 0)
			fprintf(f, ", cpu %s", fr_format_duration((int64_t)cpu, d2, sizeof(d2)));
		break;
	case FR_EVENT_EXEC:
		if ((v = fr_events_label(it, "path"))) {
			fputc(' ', f);
			text_str(f, v);
		}
		if ((v = fr_events_label(it, "ppid"))) {
			fputs(" ppid ", f);
			text_str(f, v);
		}
		if ((v = fr_events_label(it, "old_pid"))) {
			fputs(" old_pid ", f);
			text_str(f, v);
		}
		break;
	case FR_EVENT_OOM:
		fprintf(f, " rss %s", fr_format_size_human(it->weight, d1, sizeof(d1)));
		if ((v = fr_events_label(it, "constraint"))) {
			fputs(strcmp(v, "memcg") == 0	 ? " (its memory cgroup's limit)"
			      : strcmp(v, "global") == 0 ? " (the machine's memory)"
							 : " constraint ",
			      f);
			if (strcmp(v, "memcg") != 0 && strcmp(v, "global") != 0)
				text_str(f, v);
		}
		break;
	default:
		fprintf(f, " %s %s in the second (%s)",
			it->event == FR_EVENT_THROTTLED ? "throttled" : "stalled",
			fr_format_duration((int64_t)it->weight, d1, sizeof(d1)),
			share(it->weight, 1000000000u, pct, sizeof(pct)));
		break;
	}
	if (it->cgroup) {
		fputs(" cgroup ", f);
		text_str(f, it->cgroup);
	}
	text_labels(f, it);
	fputc('\n', f);
	if (it->event == FR_EVENT_CRASH)
		text_stack(f, it);
}

/* A series summed up: its type and cgroup (throttled), its samples. */
struct series {
	uint32_t event;
	const char *cgroup;
	size_t first; /* item index */
	uint64_t n, total, most;
	int64_t last_ns, most_ns;
};

static struct series *series_of(struct series *s, size_t *ns, const struct fr_events_item *it,
				size_t i)
{
	const char *cg = it->event == FR_EVENT_THROTTLED ? it->cgroup : NULL;

	for (size_t k = 0; k < *ns; k++) {
		if (s[k].event == it->event &&
		    (s[k].cgroup == cg || (s[k].cgroup && cg && strcmp(s[k].cgroup, cg) == 0)))
			return &s[k];
	}
	if (*ns == SERIES_MAX)
		return NULL;
	s[*ns] = (struct series){.event = it->event, .cgroup = cg, .first = i};
	return &s[(*ns)++];
}

static void text_series(FILE *f, const struct fr_events *e, const struct series *s)
{
	const struct fr_events_item *it = &e->items[s->first];
	char time[64], last[64], most[64], d1[32], d2[32], pct[16];
	int64_t span = s->last_ns - it->time_ns + 1000000000;

	fprintf(f, "%s %-15s ", fr_format_time(it->time_ns, time, sizeof(time)),
		fr_events_type_name(s->event));
	if (s->event == FR_EVENT_THROTTLED) {
		fputs("cgroup ", f);
		text_str(f, s->cgroup ? s->cgroup : "[unknown]");
	} else {
		fputs("[machine]", f);
	}
	fr_format_time(s->last_ns, last, sizeof(last));
	fr_format_time(s->most_ns, most, sizeof(most));
	fprintf(f,
		" %" PRIu64 " s to %s: %s %s in all (%s), most %s in the second to %s "
		"(--type %s lists each second)\n",
		s->n, last + 11, s->event == FR_EVENT_THROTTLED ? "throttled" : "stalled",
		fr_format_duration((int64_t)s->total, d1, sizeof(d1)),
		share(s->total, span > 0 ? (uint64_t)span : 1, pct, sizeof(pct)),
		fr_format_duration((int64_t)s->most, d2, sizeof(d2)), most + 11,
		fr_events_type_name(s->event));
}

static int write_text(FILE *f, const struct fr_events *e, int flags)
{
	struct series *s = NULL;
	size_t ns = 0;

	if (!(flags & FR_EVENTS_SERIES)) {
		s = calloc(SERIES_MAX, sizeof(*s));
		if (!s)
			return -ENOMEM;
		for (size_t i = 0; i < e->n; i++) {
			const struct fr_events_item *it = &e->items[i];
			struct series *x;

			if (!is_series(it->event) || !(x = series_of(s, &ns, it, i)))
				continue;
			x->n++;
			x->total += it->weight;
			x->last_ns = it->time_ns;
			if (it->weight > x->most || x->n == 1) {
				x->most = it->weight;
				x->most_ns = it->time_ns;
			}
		}
	}
	for (size_t i = 0; i < e->n; i++) {
		const struct fr_events_item *it = &e->items[i];

		if (!s || !is_series(it->event)) {
			text_event(f, it);
			continue;
		}
		for (size_t k = 0; k < ns; k++) {
			if (s[k].first == i)
				text_series(f, e, &s[k]);
		}
	}
	free(s);
	return 0;
}

int fr_events_write(FILE *f, const struct fr_events *e, int flags)
{
	int ret = 0;

	if (flags & FR_EVENTS_JSON) {
		for (size_t i = 0; i < e->n; i++)
			write_json(f, &e->items[i]);
	} else {
		ret = write_text(f, e, flags);
	}
	if (e->more && !(flags & FR_EVENTS_JSON))
		fprintf(f, "(%" PRIu64 " more events not listed: ask for a shorter window)\n",
			e->more);
	if (ret == 0 && ferror(f))
		ret = -EIO;
	return ret;
}
