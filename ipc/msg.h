/* The messages of the wire protocol (ipc/proto.h), one typed struct each,
 * with the encoder and the decoder both ends use: the CLI encodes
 * requests and decodes replies, the daemon the other way round. No other
 * file builds or parses these messages by hand, so the two ends cannot
 * drift apart.
 *
 * Every decoder has the same contract: it fills *out from a parsed JSON
 * object and returns 0, or -EINVAL with a one-line message in `err` that
 * names the offending field ("attach: \"hz\" must be an integer"). A
 * member that is absent or null takes its default. The daemon answers a
 * request decoder's message as {"ok":false,"error":...}.
 *
 * Every encoder returns a new object the caller frees, or NULL when out of
 * memory. Integers are added with fr_ipc_add_int(), so 64-bit values stay
 * exact; the members come out in the order older clients and daemons
 * wrote them, so the bytes on the wire are unchanged.
 */
#ifndef FR_IPC_MSG_H
#define FR_IPC_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "core/query/profile.h"
#include "core/query/targets.h"
#include "core/util/time.h"

/* cjson/cJSON.h's object, named only: who builds or reads one includes it. */
struct cJSON;

/* Most warnings a reply carries, and the longest one kept (with NUL). */
#define FR_IPC_MAX_WARNINGS 4
#define FR_IPC_WARNING_MAX 512

/* ---- attach --------------------------------------------------------- */

/* A cursor's name (attach "since_last", recorder/requests/cursors.h): 1 to
 * FR_IPC_CURSOR_NAME_MAX characters of [A-Za-z0-9_.-]: no spaces, no
 * slashes, nothing a file or a log line could take another way. */
#define FR_IPC_CURSOR_NAME_MAX 64
#define FR_IPC_CURSOR_NAME_RULE \
	"a cursor name is 1 to 64 characters of letters, digits, '_', '-' and '.'"
int fr_ipc_cursor_name_ok(const char *name);

/* {"req":"attach", ...} with the output descriptor passed alongside. */
struct fr_ipc_attach_req {
	/* "window_ns": 1..INT64_MAX, the window ending now; 0 when absent. */
	int64_t window_ns;
	/* "from_ns", "to_ns": 0..INT64_MAX Unix ns, when has_from/has_to.
	 * One of window_ns and from_ns is required; to_ns defaults to now. */
	int64_t from_ns, to_ns;
	int has_from, has_to;
	/* "hz": 0..INT32_MAX; 0 (or absent) is the rate as recorded. */
	uint32_t hz;
	/* "events": names as in core/store/sample.h, each once, at most
	 * FR_LIMIT_EVENTS. Decoded as [cpu] when absent; not encoded
	 * when nevents is 0. */
	uint32_t nevents;
	uint32_t events[FR_LIMIT_EVENTS];
	/* "event_hz": the rate of each of "events" (0: "hz"); encoded only
	 * when one is not 0, and then with "events". */
	uint32_t event_hz[FR_LIMIT_EVENTS];
	/* The targets (has_uid and uid are not on the wire: the daemon
	 * decides them from the peer):
	 * "pids": positive process ids, at most FR_LIMIT_PIDS;
	 * "comm": command names of 1..FR_LIMIT_COMM_LEN-1 characters, at
	 * most FR_LIMIT_COMMS;
	 * "cgroup": a cgroup v2 path starting with '/'; "" when absent;
	 * "children": true or false; true needs "pids". */
	struct fr_targets targets;
	/* "format": "pprof" (default) or "folded"; encoded only when folded. */
	enum fr_profile_format format;
	/* "since_last": a cursor's name (fr_ipc_cursor_name_ok()), "" when
	 * absent. The window starts where the previous call with this name
	 * ended (window_ns / from_ns then only start a new cursor, and may
	 * both be absent: the whole ring), and ends at to_ns or now. */
	char since_last[FR_IPC_CURSOR_NAME_MAX + 1];
	/* "by_cpu": true adds a "cpu" label to the samples (pprof); encoded
	 * only when set. */
	int by_cpu;
	/* "diff": true asks, of event heap, its growth over the window
	 * rather than what is in use at its end; encoded only when set. */
	int diff;
};

/* The per-event counts of an attach reply ("events": [...]). */
struct fr_ipc_event_counts {
	uint32_t event;		    /* "event", by name */
	uint32_t hz;		    /* "hz" */
	uint64_t samples;	    /* "samples": kept in the profile */
	uint64_t samples_in_window; /* "samples_in_window" */
	uint64_t lost;		    /* "lost": by the kernel, machine-wide */
	uint64_t recorded;	    /* "recorded": the event's samples in the window's
			    * chunks, machine-wide, what lost is a share of
			    * (0: a recorder before it) */
	uint64_t throttled;	    /* "throttled": machine-wide */
	uint64_t truncated;	    /* "truncated": kept samples cut at 127 frames */
};

/* {"ok":true, ...}: what an attach wrote. */
struct fr_ipc_attach_reply {
	uint64_t samples;	    /* "samples": kept in the profile */
	uint64_t samples_in_window; /* "samples_in_window" */
	uint64_t stacks;	    /* "stacks" */
	uint64_t bytes;		    /* "bytes" written to the descriptor */
	uint32_t hz;		    /* "hz" of the profile */
	uint64_t lost;		    /* "lost" */
	int64_t t0_ns, t1_ns;	    /* "t0_ns", "t1_ns": the window */
	int64_t covered_t0_ns;	    /* "covered_t0_ns": oldest data in it */
	uint32_t nevents;	    /* "events" */
	struct fr_ipc_event_counts events[FR_LIMIT_EVENTS];
	/* "incomplete": why the profile may end early; "" when absent. */
	char incomplete[FR_IPC_WARNING_MAX];
	/* "warnings": lines for the user (always encoded, maybe empty). */
	uint32_t nwarnings;
	char warnings[FR_IPC_MAX_WARNINGS][FR_IPC_WARNING_MAX];
	/* What the profile spans (ipc/msg_attach.c), each member absent when
	 * 0 (daemons before them send none):
	 * "first_ns", "last_ns": its first and last sample, Unix ns;
	 * "ring_oldest_ns", "ring_newest_ns": what the ring held when read;
	 * "stall_t0_ns", "stall_t1_ns": the longest time within the window
	 * the recorder's ingest was held up (samples may be missing);
	 * "empty_filters": with no sample in the profile, the targets that
	 * alone match no sample of the window's events: "pid", "comm",
	 * "cgroup", "label" (--label and --label-key), or "combined" (each
	 * matches alone, not all together); FR_IPC_FILTER_* bits here;
	 * "procs_in_window" (with "empty_filters"): the processes with
	 * samples of those events in the window that the asker may see;
	 * "pids_not_running" (with "pid" in "empty_filters"): the asked
	 * pids no process has now;
	 * "writer_error", "writer_error_ns": while the recorder cannot write
	 * its ring (a file system gone read-only, I/O errors), why (the
	 * error's text) and since when;
	 * "unrecorded" (with no sample in the profile): the events asked for
	 * that nothing records now and of which the ring holds no sample in
	 * the window, comma-separated ("page-faults"), with "recording":
	 * what the recorder records now ("cpu at 99 Hz, offcpu at every
	 * context switch"), so that the user is told the event, not a
	 * filter, emptied the profile. */
	int64_t first_ns, last_ns;
	int64_t ring_oldest_ns, ring_newest_ns;
	int64_t stall_t0_ns, stall_t1_ns;
	uint32_t empty_filters;
	uint64_t procs_in_window;
	uint32_t npids_not_running;
	uint32_t pids_not_running[FR_LIMIT_PIDS];
	int64_t writer_error_ns;
	char writer_error[FR_IPC_WARNING_MAX];
	char unrecorded[FR_IPC_WARNING_MAX];
	char recording[FR_IPC_WARNING_MAX];
};

/* The bits of "empty_filters": core/query/profile.h's FR_TARGET_*. */
#define FR_IPC_FILTER_PID FR_TARGET_PID
#define FR_IPC_FILTER_COMM FR_TARGET_COMM
#define FR_IPC_FILTER_CGROUP FR_TARGET_CGROUP
#define FR_IPC_FILTER_LABEL FR_TARGET_LABEL
#define FR_IPC_FILTER_COMBINED FR_TARGET_COMBINED
/* The wire name of one FR_IPC_FILTER_* bit ("" for none). */
const char *fr_ipc_filter_name(uint32_t bit);
/* The members above, for the attach reply's encoder and decoder. */
int fr_ipc_attach_reply_add_span(struct cJSON *obj, const struct fr_ipc_attach_reply *r);
int fr_ipc_attach_reply_get_span(const struct cJSON *obj, struct fr_ipc_attach_reply *out,
				 char *err, size_t errlen);

struct cJSON *fr_ipc_attach_req_encode(const struct fr_ipc_attach_req *r);
int fr_ipc_attach_req_decode(const struct cJSON *obj, struct fr_ipc_attach_req *out, char *err,
			     size_t errlen);
struct cJSON *fr_ipc_attach_reply_encode(const struct fr_ipc_attach_reply *r);
int fr_ipc_attach_reply_decode(const struct cJSON *obj, struct fr_ipc_attach_reply *out, char *err,
			       size_t errlen);

/* ---- consume -------------------------------------------------------- */

/* {"req":"consume", ...}: hold these rates while the connection lives. */
struct fr_ipc_consume_req {
	/* "hz": 0..INT32_MAX; 0 (or absent) is the daemon's default. */
	uint32_t hz;
	/* "events": as in attach (decoded as [cpu] when absent). */
	uint32_t nevents;
	uint32_t events[FR_LIMIT_EVENTS];
	uint32_t event_hz[FR_LIMIT_EVENTS]; /* "event_hz": as in attach */
};

/* One event of a consume reply. */
struct fr_ipc_consume_event {
	uint32_t event;	       /* "event", by name */
	uint32_t hz;	       /* "hz": the rate this connection holds */
	uint32_t recording_hz; /* "recording_hz": the source's rate now */
};

/* {"ok":true, ...}: the rates are in force from start_ns on. */
struct fr_ipc_consume_reply {
	uint32_t nwarnings; /* "warnings" (always encoded, maybe empty) */
	char warnings[FR_IPC_MAX_WARNINGS][FR_IPC_WARNING_MAX];
	int64_t start_ns; /* "start_ns", Unix ns */
	uint32_t nevents; /* "events" */
	struct fr_ipc_consume_event events[FR_LIMIT_EVENTS];
};

struct cJSON *fr_ipc_consume_req_encode(const struct fr_ipc_consume_req *r);
int fr_ipc_consume_req_decode(const struct cJSON *obj, struct fr_ipc_consume_req *out, char *err,
			      size_t errlen);
struct cJSON *fr_ipc_consume_reply_encode(const struct fr_ipc_consume_reply *r);
int fr_ipc_consume_reply_decode(const struct cJSON *obj, struct fr_ipc_consume_reply *out,
				char *err, size_t errlen);

/* ---- dump ----------------------------------------------------------- */

/* The bounds of a manual dump's "window_ns". */
#define FR_IPC_DUMP_WINDOW_MIN_NS FR_NS_PER_S
#define FR_IPC_DUMP_WINDOW_MAX_NS 3600000000000LL

/* {"req":"dump", ...}: write a session's dump now. */
struct fr_ipc_dump_req {
	/* "session": a non-empty name. Decoded, it points into the request
	 * object and lives as long as that. */
	const char *session;
	/* "window_ns": FR_IPC_DUMP_WINDOW_MIN_NS..FR_IPC_DUMP_WINDOW_MAX_NS;
	 * 0 when absent (the session's first trigger's window, or 60 s). */
	int64_t window_ns;
};

/* The longest dump path a reply carries (with NUL). */
#define FR_IPC_PATH_MAX 4096

/* {"ok":true, ...}: where the dump went and what window it holds. */
struct fr_ipc_dump_reply {
	char path[FR_IPC_PATH_MAX]; /* "path" */
	int64_t t0_ns, t1_ns;	    /* "t0_ns", "t1_ns" */
};

struct cJSON *fr_ipc_dump_req_encode(const struct fr_ipc_dump_req *r);
int fr_ipc_dump_req_decode(const struct cJSON *obj, struct fr_ipc_dump_req *out, char *err,
			   size_t errlen);
struct cJSON *fr_ipc_dump_reply_encode(const struct fr_ipc_dump_reply *r);
int fr_ipc_dump_reply_decode(const struct cJSON *obj, struct fr_ipc_dump_reply *out, char *err,
			     size_t errlen);

/* ---- threads -------------------------------------------------------- */

/* {"req":"threads", ...} with the output descriptor passed alongside:
 * every thread of the targets, now (flightrec threads). */
struct fr_ipc_threads_req {
	/* "pids", "comm", "cgroup" as in attach ("children" is refused:
	 * a thread listing names the processes it wants). At least one. */
	struct fr_targets targets;
	/* "at_ns": the threads at that past moment (Unix ns), from the ring
	 * alone (core/query/threads_at.h), "comm" and "cgroup" as the ring
	 * had them then. 0: now. */
	int64_t at_ns;
};

/* {"ok":true, ...}: what a threads answer wrote. */
struct fr_ipc_threads_reply {
	uint64_t processes; /* "processes" listed */
	uint64_t threads;   /* "threads" listed, one pprof sample each */
	uint64_t bytes;	    /* "bytes" written to the descriptor */
	/* "warnings": lines for the user (always encoded, maybe empty). */
	uint32_t nwarnings;
	char warnings[FR_IPC_MAX_WARNINGS][FR_IPC_WARNING_MAX];
};

struct cJSON *fr_ipc_threads_req_encode(const struct fr_ipc_threads_req *r);
int fr_ipc_threads_req_decode(const struct cJSON *obj, struct fr_ipc_threads_req *out, char *err,
			      size_t errlen);
struct cJSON *fr_ipc_threads_reply_encode(const struct fr_ipc_threads_reply *r);
int fr_ipc_threads_reply_decode(const struct cJSON *obj, struct fr_ipc_threads_reply *out,
				char *err, size_t errlen);

/* Appends `text` to a reply's warnings (cut to FR_IPC_WARNING_MAX); one
 * past FR_IPC_MAX_WARNINGS is dropped. */
void fr_ipc_warn(char (*warnings)[FR_IPC_WARNING_MAX], uint32_t *nwarnings, const char *text);

#endif
