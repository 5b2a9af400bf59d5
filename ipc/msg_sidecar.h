/* A dump's sidecar (recorder/triggers/dumps.h): the JSON object written
 * beside each dump's profile, which retention, scripts and people read to
 * know what the dump holds. Typed here, with an encoder to its text and a
 * decoder, so the recorder writes no JSON by hand:
 *
 *   {"session": "db", "trigger": "cpu_above", "reason": "...",
 *    "fired_ns": N, "t0_ns": N, "t1_ns": N, "window_ns": N, "after_ns": N,
 *    "pid": N (when not 0), "profile": "FILE.pb.gz",
 *    "victim": {"pid": N, "comm": "hog", "cgroup": "/x", "rss": N}
 *              (an oom trigger's: the process killed, its RSS in bytes),
 *    "crash": {"pid": N, "tid": N, "comm": "crash_prog", "signal": "SIGSEGV",
 *              "addr": "0x10"}
 *              (a crash trigger's: the process, its faulting thread, the
 *              signal and the fault address, "" when the signal has none),
 *    "pressure": {"resource": "memory", "kind": "some", "share": 37.5,
 *                 "above": 10, "cgroup": "/db"} (a pressure trigger's: the
 *              share of wall time stalled over the run that fired it, and
 *              the threshold, both in percent; "cgroup" when it was a
 *              cgroup's own pressure, not the machine's),
 *    "events": [{"event": "cpu", "hz": 99, "samples": N, "lost": N}],
 *    "samples": N, "bytes": N, "version": "0.1.0"}
 */
#ifndef FR_IPC_MSG_SIDECAR_H
#define FR_IPC_MSG_SIDECAR_H

#include <stddef.h>
#include <stdint.h>

#include "core/store/sample.h"
#include "core/util/limits.h"

struct cJSON;

/* "victim": the process an oom trigger's kill took. */
struct fr_ipc_sidecar_victim {
	int64_t pid;			  /* "pid" */
	char comm[FR_LIMIT_COMM_LEN];	  /* "comm" */
	char cgroup[FR_LIMIT_CGROUP_LEN]; /* "cgroup": "" when not known */
	uint64_t rss;			  /* "rss": bytes at the kill */
};

/* "crash": the process a crash trigger's signal killed. */
struct fr_ipc_sidecar_crash {
	int64_t pid, tid;	      /* "pid", "tid": the faulting thread */
	char comm[FR_LIMIT_COMM_LEN]; /* "comm" */
	char signal[16];	      /* "signal": "SIGSEGV" */
	char addr[24];		      /* "addr": "0x10", "" when not given */
};

/* "pressure": what fired a pressure trigger. */
struct fr_ipc_sidecar_pressure {
	char cgroup[FR_LIMIT_CGROUP_LEN]; /* "cgroup": whose pressure, when not the machine's */
	char resource[16];		  /* "resource": "memory", "cpu" or "io" */
	char kind[8];			  /* "kind": "some" or "full" */
	double share;			  /* "share": percent of wall time stalled */
	double above;			  /* "above": the trigger's threshold, percent */
};

/* One element of "events". */
struct fr_ipc_sidecar_event {
	char event[FR_EVENT_NAME_MAX]; /* "event": its name */
	uint64_t hz;		       /* "hz": of the profile */
	uint64_t samples;	       /* "samples": kept */
	uint64_t lost;		       /* "lost": by the kernel, in the window */
};

struct fr_ipc_sidecar {
	char session[64];      /* "session" */
	char trigger[32];      /* "trigger": its kind, or "manual" */
	char reason[512];      /* "reason": "" when none */
	int64_t fired_ns;      /* "fired_ns" */
	int64_t t0_ns;	       /* "t0_ns": the window */
	int64_t t1_ns;	       /* "t1_ns" */
	int64_t window_ns;     /* "window_ns": the trigger's */
	int64_t after_ns;      /* "after_ns": the trigger's */
	int64_t pid;	       /* "pid": an exit trigger's process, when not 0 */
	char profile[256];     /* "profile": the profile's file name */
	char goroutines[256];  /* "goroutines": the goroutines' file name, when kept */
	uint64_t go_processes; /* "go_processes": the Go programs in it */
	int has_victim;	       /* "victim", when set */
	struct fr_ipc_sidecar_victim victim;
	int has_crash; /* "crash", when set */
	struct fr_ipc_sidecar_crash crash;
	int has_pressure; /* "pressure", when set */
	struct fr_ipc_sidecar_pressure pressure;
	uint32_t nevents; /* "events" */
	struct fr_ipc_sidecar_event events[FR_LIMIT_EVENTS];
	uint64_t samples; /* "samples" */
	uint64_t bytes;	  /* "bytes": of the profile */
	char version[64]; /* "version": of the recorder */
};

/* The sidecar's text (indented, as people read it), malloc'd; NULL when
 * out of memory. */
char *fr_ipc_sidecar_text(const struct fr_ipc_sidecar *s);

/* Decodes a parsed sidecar into *out. Returns 0 or -EINVAL with a message
 * naming the member in `err`. */
int fr_ipc_sidecar_decode(const struct cJSON *obj, struct fr_ipc_sidecar *out, char *err,
			  size_t errlen);

#endif
