/* The status and sessions replies (ipc/msg_status.c), typed, with the
 * contract of every message (ipc/msg.h): the daemon fills the structs and
 * encodes them, the CLI decodes them and prints from them (or, with
 * --json, encodes what it decoded: the same text). Monitoring scripts and
 * the integration tests read these members by name: a member's name,
 * type, order and the rule that puts it on the wire never change.
 *
 *   {"req":"status"}   -> {"ok":true, "version", "pid", ..., "events",
 *                          "consumers", "ring"}   (struct fr_ipc_status_reply)
 *   {"req":"sessions"} -> {"ok":true, "sessions", "config", "cpu_hz",
 *                          "events", "consumers", "hz_from_command_line"}
 *                                                (struct fr_ipc_sessions_reply)
 *
 * Integers are exact (fr_ipc_add_int()); times are Unix ns unless named
 * otherwise, sizes bytes. A member marked "when ..." is absent otherwise;
 * a decoder sets the matching has_* flag when it is there. The arrays
 * (events, consumers, sessions) are the reply's own: free them with
 * fr_ipc_status_reply_fini() / fr_ipc_sessions_reply_fini().
 */
#ifndef FR_IPC_MSG_STATUS_H
#define FR_IPC_MSG_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "core/store/ring.h"
#include "core/store/sample.h"
#include "ipc/msg.h"

/* Owners listed by name in a cache's "owners" at most; the rest are
 * summed in "other_owners". */
#define FR_IPC_STATUS_OWNERS 16

/* The codec's JSON objects (cjson/cJSON.h), named only: a module that
 * fills these structs needs no JSON. */
struct cJSON;

/* ---- pieces shared by status and sessions ------------------------------ */

/* One element of a consumer's or a session's "events". */
struct fr_ipc_event_rate {
	char event[FR_EVENT_NAME_MAX]; /* "event": its name (core/store/sample.h) */
	uint64_t hz;		       /* "hz": the rate asked for, per CPU */
	uint64_t period;	       /* "period": when not 0, period mode */
};

/* An event's "unwinding" (with a stack copy): how its user stacks ended. */
struct fr_ipc_unwinding {
	/* "ends": {"done", "stack_copy", "no_cfi", "pending", "bad",
	 * "max_depth"}: stacks by how they ended (enum fr_unwind_end). */
	uint64_t done, stack_copy, no_cfi, pending, bad, max_depth;
	uint64_t stacks;       /* "stacks": unwound */
	uint64_t no_user_regs; /* "no_user_regs": samples without user registers */
	uint64_t bad_records;  /* "bad_records": malformed records */
};

/* An offcpu event's "offcpu": what recording every switch costs. */
struct fr_ipc_offcpu {
	uint64_t switch_outs; /* "switch_outs": seen */
	uint64_t switch_ins;  /* "switch_ins": seen */
	uint64_t samples;     /* "samples": waits kept */
	uint64_t evicted;     /* "evicted": waits dropped, the table full */
	uint64_t waiting;     /* "waiting": threads off-CPU now */
	uint64_t capacity;    /* "capacity": of the waits table */
	char mechanism[8];    /* "mechanism": "bpf" or "perf" */
	char fallback[256];   /* "fallback": when not "", why not bpf */
	/* When "mechanism" is "bpf" (has_bpf): */
	int has_bpf;
	uint64_t min_wait_ns;	      /* "min_wait_ns": shortest wait with stacks */
	char user_stacks_by[16];      /* "user_stacks_by": "task_work" or "sys_exit" */
	uint64_t long_waits;	      /* "long_waits" */
	uint64_t user_stacks;	      /* "user_stacks": long waits with user stacks */
	uint64_t no_user_stack;	      /* "no_user_stack": long waits without */
	uint64_t short_records;	      /* "short_records": short-wait records */
	uint64_t ringbuf_drops;	      /* "ringbuf_drops": waits lost */
	uint64_t ringbuf_dropped_ns;  /* "ringbuf_dropped_ns": their time */
	uint64_t labels_dropped;      /* "labels_dropped": waits kept without labels */
	uint64_t short_retries;	      /* "short_retries" */
	uint64_t open_listed;	      /* "open_listed": open waits listed */
	uint64_t open_runnable;	      /* "open_runnable": of them, runnable */
	uint64_t stack_walks;	      /* "stack_walks": blocked threads' stacks read */
	uint64_t stack_walks_dropped; /* "stack_walks_dropped": not read */
	/* With stack copies (has_copies): */
	int has_copies;
	uint64_t stack_copies;		  /* "stack_copies": of long waits */
	uint64_t stack_copies_short;	  /* "stack_copies_short": cut short */
	uint64_t stack_walk_copies_short; /* "stack_walk_copies_short" */
	/* With wakeup or runqueue asked (has_wake): */
	int has_wake;
	uint64_t wakes;		   /* "wakes": long waits' wakes the program sent */
	uint64_t wakes_dropped;	   /* "wakes_dropped": no room (wakeup's lost) */
	uint64_t wakes_irq;	   /* "wakes_irq": of the samples, from interrupts */
	uint64_t wakes_joined;	   /* "wakes_joined": with the woken thread's labels */
	uint64_t wakes_unlabelled; /* "wakes_unlabelled": without (wait never came) */
	uint64_t runqueue_samples; /* "runqueue_samples": delays >= min_wait */
	uint64_t runqueue_short;   /* "runqueue_short": short delays' samples */
};

/* The throttled event's "cgroups": what its once-a-second reads of
 * cpu.stat did (recorder/tracking/cgcpu.h). */
struct fr_ipc_cgroups {
	char source[96];   /* "source": "cgroup v1 at /sys/fs/cgroup/cpu" */
	uint64_t watched;  /* "watched": cgroups remembered now */
	uint64_t reads;	   /* "reads": of cpu.stat */
	uint64_t failures; /* "failures": reads failed or paths refused */
	uint64_t skipped;  /* "skipped": past a second's bounds */
};

/* A sampling event's "pmu": the counter's precision and multiplexing. */
struct fr_ipc_pmu {
	/* "precise_ip_asked", "precise_ip": hardware events (has_precise). */
	int has_precise;
	uint64_t precise_ip_asked, precise_ip;
	uint64_t enabled_ns;	    /* "enabled_ns": the counter enabled */
	uint64_t running_ns;	    /* "running_ns": of it, counting */
	int multiplexed;	    /* "multiplexed": running < enabled */
	uint64_t scaled_samples;    /* "scaled_samples": scaled up by enabled/running */
	uint64_t time_reads_failed; /* "time_reads_failed": when not 0 */
};

/* One element of "events": a source the recorder runs. */
struct fr_ipc_event_status {
	char event[FR_EVENT_NAME_MAX]; /* "event": its name */
	char unit[32];		       /* "unit": of its values (fr_event_unit()) */
	char state[16];		       /* "state": "recording" or "failed" */
	int has_error;		       /* "error": why it failed, when failed */
	char error[256];
	uint64_t hz;		   /* "hz": per CPU, 0 when failed */
	uint64_t period;	   /* "period": when not 0, period mode */
	int every_switch;	   /* "every_switch": an event without a rate */
	int64_t since_ns;	   /* "since_ns": recording since */
	char stacks[16];	   /* "stacks": "kernel+user" */
	uint64_t samples;	   /* "samples" */
	uint64_t lost;		   /* "lost": by the kernel */
	uint64_t throttled;	   /* "throttled" */
	uint64_t truncated_stacks; /* "truncated_stacks" */
	/* While recording (has_unwind): "unwind": "dwarf" or "fp";
	 * "stack_copy": the bytes of user stack copied (dwarf, when not 0),
	 * and then "unwinding". */
	int has_unwind;
	char unwind[8];
	uint64_t stack_copy;
	struct fr_ipc_unwinding unwinding;
	int has_offcpu; /* "offcpu": an offcpu event while recording */
	struct fr_ipc_offcpu offcpu;
	int has_pmu; /* "pmu": any other event while recording */
	struct fr_ipc_pmu pmu;
	int has_cgroups; /* "cgroups": throttled, while recording */
	struct fr_ipc_cgroups cgroups;
};

/* One element of "consumers": who asks for what. */
struct fr_ipc_consumer_status {
	/* "name": a session, "client pid N", ...; "a client" to a viewer
	 * who is not privileged when it is another user's. */
	char name[96];
	int has_uid; /* "uid": whose, when shown */
	uint64_t uid;
	int64_t since_ns; /* "since_ns" */
	uint32_t nevents; /* "events" */
	struct fr_ipc_event_rate events[FR_LIMIT_EVENTS];
};

/* "events" and "consumers", in both replies (recorder/sampling/sources.c
 * fills them). */
struct fr_ipc_recording {
	uint32_t nevents;
	struct fr_ipc_event_status *events;
	uint32_t nconsumers;
	struct fr_ipc_consumer_status *consumers;
};

/* ---- status ------------------------------------------------------------ */

/* "memory": limits.memory and who holds what of it. */
struct fr_ipc_status_memory {
	uint64_t limit;		/* "limit": limits.memory */
	uint64_t used;		/* "used": the sum of the rest */
	uint64_t queries;	/* "queries": attach and dump queries */
	uint64_t timelines;	/* "timelines" */
	uint64_t unwind_tables; /* "unwind_tables" */
	uint64_t symbols;	/* "symbols" */
	uint64_t labels;	/* "labels" */
	uint64_t query_room;	/* "query_room": what queries may take now */
};

/* "labels": how application labels are read at samples. */
struct fr_ipc_status_labels {
	char error[512]; /* "error": why they are not read; alone when not "" */
	/* Otherwise (has_counts): */
	int has_counts;
	uint64_t copies;	      /* "copies": labels read at samples */
	uint64_t copies_dropped;      /* "copies_dropped" */
	uint64_t wait_copies_dropped; /* "wait_copies_dropped": off-CPU waits without */
	uint64_t read_faults;	      /* "read_faults" */
	uint64_t go_processes;	      /* "go_processes" (when not 0): Go programs whose pprof
				       * labels are read */
	uint64_t go_skipped;	      /* "go_skipped" (when not 0): Go programs whose could not
				       * be (a release not known, a stripped cgo
				       * binary), since the start */
};

/* "python": the Python frames of CPython processes (when the recorder
 * reads them: it has eBPF; the counts since the start). */
struct fr_ipc_status_python {
	uint64_t processes;	/* "processes": CPython processes whose frames are read now */
	uint64_t refused;	/* "refused": found and not read (a release not known...) */
	uint64_t samples;	/* "samples": samples given Python frames */
	uint64_t frames;	/* "frames": Python frames put in them */
	uint64_t missed;	/* "missed": samples of a read process that came without theirs */
	uint64_t dropped;	/* "dropped": records the eBPF ring buffer had no room for */
	uint64_t lookups;	/* "lookups": thread states looked for (not cached) */
	uint64_t read_faults;	/* "read_faults": walks ended by memory that did not read */
	char last_refused[200]; /* "last_refused": why the last refused one was */
};

/* "alloc": allocation samples of processes with libflightrec (the
 * counts since the start, but processes and live_blocks: now). */
struct fr_ipc_status_alloc {
	uint64_t processes;	  /* "processes": rings read now */
	uint64_t refused;	  /* "refused": processes whose ring was not read */
	uint64_t samples;	  /* "samples": allocations sampled */
	uint64_t frees_matched;	  /* "frees_matched": frees of sampled blocks */
	uint64_t frees_unmatched; /* "frees_unmatched": frees of no block known */
	uint64_t live_blocks;	  /* "live_blocks": sampled blocks live now */
	uint64_t evicted;	  /* "evicted": blocks forgotten for room */
	uint64_t lib_dropped;	  /* "lib_dropped": the libraries' losses */
	uint64_t lib_frees_lost;  /* "lib_frees_lost": of those, frees of sampled blocks */
	uint64_t skipped_bytes;	  /* "skipped_bytes": records that never completed */
	uint64_t bad_records;	  /* "bad_records": malformed records */
	uint64_t mean;		  /* "mean": bytes, asked of every ring */
	char last_refusal[160];	  /* "last_refusal": pid and why */
};

/* "ingest": whether the ingest thread and the ring's writer keep up. */
struct fr_ipc_status_ingest {
	int64_t last_drain_ns;	      /* "last_drain_ns" */
	int64_t last_seal_ns;	      /* "last_seal_ns": the last chunk sealed */
	int64_t last_append_ns;	      /* "last_append_ns": the last ring append */
	int stalled;		      /* "stalled": no drain for a stall's time */
	uint64_t stalls;	      /* "stalls" */
	int64_t longest_stall_ns;     /* "longest_stall_ns" */
	int writer_stalled;	      /* "writer_stalled": its disk not answering */
	uint64_t writer_queued_bytes; /* "writer_queued_bytes" */
	/* "writer_error", "writer_error_since_ns" (has_writer_error): while
	 * the ring's appends fail, why and since when. */
	int has_writer_error;
	char writer_error[128];
	int64_t writer_error_since_ns;
	int64_t nice;			 /* "nice": of the ingest thread */
	int64_t writer_nice;		 /* "writer_nice" */
	int realtime;			 /* "realtime": ingest at a realtime priority */
	uint64_t realtime_drops;	 /* "realtime_drops" */
	uint64_t flush_timeouts;	 /* "flush_timeouts" */
	uint64_t build_id_reads_pending; /* "build_id_reads_pending" */
	int64_t build_id_read_busy_ns;	 /* "build_id_read_busy_ns": the read going on */
};

/* One element of a cache's "owners". */
struct fr_ipc_owner {
	uint64_t uid;	  /* "uid" */
	uint64_t bytes;	  /* "bytes" */
	uint64_t entries; /* "entries" */
};

/* A cache's "owners" (root first, then by bytes) and "other_owners"
 * (has_others): {"owners", "bytes", "entries"} of those not listed. */
struct fr_ipc_owners {
	uint32_t n;
	struct fr_ipc_owner v[FR_IPC_STATUS_OWNERS];
	int has_others;
	uint64_t other_owners, other_bytes, other_entries;
};

/* "symbol_cache" (has_symbol_cache): the symbol cache on disk. */
struct fr_ipc_status_symcache {
	char dir[FR_IPC_PATH_MAX]; /* "dir": when not "" (privileged viewers) */
	uint64_t files;		   /* "files" */
	uint64_t bytes;		   /* "bytes" */
	uint64_t budget;	   /* "budget" */
	struct fr_ipc_owners owners;
};

/* "unwind_tables" (has_unwind_tables): the CFI tables stacks are
 * unwound with. */
struct fr_ipc_status_unwind_tables {
	uint64_t built, failed, pending, evicted; /* "built", "failed", "pending", "evicted" */
	uint64_t tables, bytes;			  /* "tables", "bytes": held now */
	uint64_t linked, prefetched, skipped;	  /* "linked", "prefetched", "skipped" */
	uint64_t budget;			  /* "budget" */
	struct fr_ipc_owners owners;
};

/* "export" (has_export): the ClickHouse exporter while it runs. */
struct fr_ipc_status_export {
	char url[2048];		  /* "url" */
	char database[256];	  /* "database" */
	char host[256];		  /* "host": the name rows carry */
	char state[32];		  /* "state": "shipping", "retrying", "waiting for query memory" */
	int64_t batch_ns;	  /* "batch_ns" */
	uint64_t hz;		  /* "hz" */
	int64_t cursor_ns;	  /* "cursor_ns": shipped up to */
	int64_t lag_ns;		  /* "lag_ns": behind now */
	uint64_t batches, rows;	  /* "batches", "rows" */
	uint64_t samples, stacks; /* "samples", "stacks" */
	uint64_t duplicates_skipped;   /* "duplicates_skipped" */
	uint64_t retries;	       /* "retries" */
	uint64_t rows_dropped;	       /* "rows_dropped" */
	int64_t query_memory_reserved; /* "query_memory_reserved" */
	uint64_t memory_waits;	       /* "memory_waits" */
	int64_t lost_ns;	       /* "lost_ns": samples dropped before shipped */
	uint64_t lost_batches;	       /* "lost_batches" */
	int64_t last_ok_ns;	       /* "last_ok_ns" */
	int64_t last_error_ns;	       /* "last_error_ns" */
	char last_error[768];	       /* "last_error" */
};

/* "ring": the ring file (also `flightrec dump --info --json`). */
struct fr_ipc_ring {
	char path[FR_IPC_PATH_MAX]; /* "path" */
	uint64_t size;		    /* "size": the file's */
	uint64_t segment_size;	    /* "segment_size" */
	uint64_t segments;	    /* "segments" */
	uint64_t segments_used;	    /* "segments_used": holding a chunk */
	uint64_t bytes_used;	    /* "bytes_used": of chunks */
	uint64_t chunks;	    /* "chunks" */
	uint64_t samples;	    /* "samples" */
	int64_t oldest_ns;	    /* "oldest_ns": 0 when empty */
	int64_t newest_ns;	    /* "newest_ns" */
	uint64_t corrupt_chunks;    /* "corrupt_chunks": skipped when opened */
	uint64_t raw_bytes;	    /* "raw_bytes": before compression */
	uint64_t format_version;    /* "format_version" */
	uint64_t journal_size;	    /* "journal_size": 0 without a journal */
	uint64_t journal_chunks;    /* "journal_chunks": in "chunks" too */
	uint64_t journal_bytes;	    /* "journal_bytes": in "bytes_used" too */
	uint64_t journal_samples;   /* "journal_samples": in "samples" too */
	char superblock[16];	    /* "superblock": "primary", "copy" or "repaired" */
	int superblock_copy;	    /* "superblock_copy": an intact copy in the file */
};

/* Fills `out` from a ring's statistics. */
void fr_ipc_ring_from_stats(struct fr_ipc_ring *out, const char *path,
			    const struct fr_ring_stats *st);

/* The "ring" object alone, as `flightrec dump --info --json` prints it.
 * Returns NULL on allocation failure. */
struct cJSON *fr_ipc_ring_json(const char *path, const struct fr_ring_stats *st);

/* {"ok":true, ...}: what the recorder is doing. */
struct fr_ipc_status_reply {
	char version[64];		     /* "version" */
	int64_t pid;			     /* "pid" */
	int64_t started_ns;		     /* "started_ns" */
	int64_t uptime_ns;		     /* "uptime_ns": monotonic */
	char config[FR_IPC_PATH_MAX];	     /* "config": when not "" (privileged viewers) */
	int64_t reloaded_ns;		     /* "reloaded_ns": the last reload, 0: none */
	uint64_t reloads_rejected;	     /* "reloads_rejected" */
	uint64_t cpus;			     /* "cpus" */
	struct fr_ipc_status_memory memory;  /* "memory" */
	uint64_t query_memory;		     /* "query_memory": the budget of queries */
	uint64_t query_memory_used;	     /* "query_memory_used": reserved by running ones */
	uint64_t symbol_images;		     /* "symbol_images": parsed images kept */
	uint64_t symbol_images_bytes;	     /* "symbol_images_bytes" */
	uint64_t symbol_images_limit;	     /* "symbol_images_limit" */
	uint64_t samples;		     /* "samples": stored since start */
	uint64_t samples_lost;		     /* "samples_lost": what the ring holds lost */
	int samples_lost_complete;	     /* "samples_lost_complete": the count is whole */
	uint64_t samples_lost_since_start;   /* "samples_lost_since_start" */
	uint64_t chunks_sealed;		     /* "chunks_sealed" */
	uint64_t chunks_dropped;	     /* "chunks_dropped": the writer's queue full */
	uint64_t write_errors;		     /* "write_errors" */
	uint64_t processes;		     /* "processes": tracked */
	uint64_t threads;		     /* "threads": tracked */
	uint64_t labelled_processes;	     /* "labelled_processes" */
	uint64_t unreadable_label_processes; /* "unreadable_label_processes" */
	struct fr_ipc_status_labels labels;  /* "labels" */
	int has_python;
	struct fr_ipc_status_python python; /* "python" (when Python frames are read) */
	int has_alloc;
	struct fr_ipc_status_alloc alloc;   /* "alloc" (when allocation rings are read) */
	struct fr_ipc_status_ingest ingest; /* "ingest" */
	int has_symbol_cache;
	struct fr_ipc_status_symcache symbol_cache; /* "symbol_cache" */
	int has_unwind_tables;
	struct fr_ipc_status_unwind_tables unwind_tables; /* "unwind_tables" */
	int has_export;
	struct fr_ipc_status_export export_; /* "export" */
	struct fr_ipc_recording rec;	     /* "events", "consumers" */
	struct fr_ipc_ring ring;	     /* "ring" */
};

/* Frees the reply's arrays (rec); accepts a zeroed reply. */
void fr_ipc_status_reply_fini(struct fr_ipc_status_reply *r);
struct cJSON *fr_ipc_status_reply_encode(const struct fr_ipc_status_reply *r);
/* Decodes into *out (zeroed first); on success the caller finis it, on
 * failure nothing is left to free. */
int fr_ipc_status_reply_decode(const struct cJSON *obj, struct fr_ipc_status_reply *out, char *err,
			       size_t errlen);

/* ---- sessions ---------------------------------------------------------- */

/* A session's triggers at most (config/config.h's FR_CONFIG_MAX_TRIGGERS). */
#define FR_IPC_SESSION_TRIGGERS 8

/* One element of a session's "triggers". */
struct fr_ipc_session_trigger {
	char on[32];	 /* "on": the trigger's kind (config/config.h) */
	char signal[32]; /* "signal": a signal trigger's, when not "" */
	int has_cpu;	 /* "percent": a cpu_above trigger's */
	uint64_t percent;
	char resource[16]; /* "resource": a pressure trigger's ("memory"), when not "" */
	char above[24];	   /* "above": a pressure trigger's ("some 10%"), when not "" */
	int has_for;	   /* "for_ns": a cpu_above or pressure trigger's */
	int64_t for_ns;
	int64_t window_ns;   /* "window_ns" */
	int64_t after_ns;    /* "after_ns" */
	int64_t cooldown_ns; /* "cooldown_ns" */
};

/* One element of "sessions": a session of the configuration in force. */
struct fr_ipc_session {
	char name[64];	  /* "name" */
	uint32_t nevents; /* "events" */
	struct fr_ipc_event_rate events[FR_LIMIT_EVENTS];
	char targets[512];  /* "targets": "all processes", "pid 12; comm x", ... */
	uint32_t ntriggers; /* "triggers" */
	struct fr_ipc_session_trigger triggers[FR_IPC_SESSION_TRIGGERS];
	int64_t last_dump_ns; /* "last_dump_ns": null when it has none */
	uint64_t suppressed;  /* "suppressed": firings held back by cooldowns */
};

/* {"ok":true, ...}: the sessions and what is recorded for them. */
struct fr_ipc_sessions_reply {
	uint32_t nsessions; /* "sessions" */
	struct fr_ipc_session *sessions;
	char config[FR_IPC_PATH_MAX]; /* "config": when not "" (privileged viewers) */
	uint64_t cpu_hz;	      /* "cpu_hz": the cpu event's rate now */
	struct fr_ipc_recording rec;  /* "events", "consumers" */
	int hz_from_command_line;     /* "hz_from_command_line": flightrecd --hz */
};

/* Frees the reply's arrays; accepts a zeroed reply. */
void fr_ipc_sessions_reply_fini(struct fr_ipc_sessions_reply *r);
struct cJSON *fr_ipc_sessions_reply_encode(const struct fr_ipc_sessions_reply *r);
/* As fr_ipc_status_reply_decode(). */
int fr_ipc_sessions_reply_decode(const struct cJSON *obj, struct fr_ipc_sessions_reply *out,
				 char *err, size_t errlen);

#endif
