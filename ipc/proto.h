/* The flightrec wire protocol.
 *
 * TRANSPORT. A Unix stream socket. Each message is a frame:
 *
 *   u32 length, little-endian (1 .. FR_IPC_MAX_FRAME)
 *   length bytes of one JSON object (UTF-8, no NUL)
 *
 * A frame may carry one file descriptor as SCM_RIGHTS ancillary data,
 * sent with its first byte. A longer or empty frame, or one that is not a
 * JSON object, is a protocol error: the receiver answers with an error
 * (when it can) and closes the connection.
 *
 * REQUESTS carry "v" (FR_IPC_VERSION) and "req" (the command). The
 * members of attach, consume and dump and of their replies are typed,
 * encoded and decoded in ipc/msg.h, which documents them field by field;
 * in short:
 *
 *   {"v":1, "req":"status"}
 *   {"v":1, "req":"sessions"}   -> {"ok":true, "sessions":[{"name", "events":
 *                                   [{"event","hz"}], "targets", "triggers",
 *                                   "last_dump_ns"}], "cpu_hz", "config",
 *                                   "hz_from_command_line"}
 *   {"v":1, "req":"attach", "window_ns":60000000000, "hz":99,
 *    "events":["cpu","offcpu"], "pids":[1234, ...], "comm":["postgres"],
 *    "cgroup":"/system.slice/x.service"}      + the output file descriptor
 *   {"v":1, "req":"dump", "session":"db", "window_ns":N}
 *                               -> {"ok":true, "path":"/var/lib/flightrec/dumps/
 *                                   db-manual-HOST-TIME.pb.gz", "t0_ns", "t1_ns"}
 *   {"v":1, "req":"consume", "events":["cpu"], "hz":999}
 *                               -> {"ok":true, "start_ns":N, "events":
 *                                   [{"event","hz","recording_hz"}],
 *                                   "warnings":["..."]}
 *   {"v":1, "req":"threads", "pids":[1234], "comm":[...], "cgroup":"/..."}
 *                                             + a regular file descriptor
 *                               -> {"ok":true, "processes":N, "threads":N,
 *                                   "bytes":N, "warnings":["..."]}
 *   {"v":1, "req":"timeline", "window_ns":N, "step_ns":N, "event":"cpu",
 *    "by":"process", "top":8}                 + a descriptor to write into
 *                               -> {"ok":true, "samples":N, "groups":N,
 *                                   "bytes":N, "warnings":["..."]}
 *   {"v":1, "req":"events", "window_ns":N, "types":"crash,oom_kill",
 *    "pids":[...], "json":true}               + a descriptor to write into
 *                               -> {"ok":true, "events":N, "more":N,
 *                                   "bytes":N, "warnings":["..."]}
 *
 *   attach: optional "from_ns"/"to_ns" (Unix ns) instead of window_ns; "hz"
 *   0 or absent = the rate the data was collected at; "events" (default
 *   ["cpu"]) one value column each, names as in core/store/sample.h; targets
 *   "pids", "comm", "cgroup" (each optional, AND-ed); "format": "pprof"
 *   (the default when absent) or "folded" (folded stacks as plain text,
 *   see core/query/profile.h), any other value is refused. The daemon writes the
 *   profile to the descriptor passed with the request (the client opened
 *   it, so it can only write where its user may). An event nobody records
 *   is opened briefly to check it can be: if it cannot (no PMU), the error
 *   names the event and the reason; if it can, the reply warns that the
 *   ring holds only what earlier consumers recorded of it.
 *
 *   dump: writes the session's dump now, as a trigger would (its events and
 *   targets; "window_ns" 1 s..1 h, default its first trigger's window or
 *   60 s), into the dumps directory; answers when it is written.
 *
 *   attach also takes "children": true with "pids" (their descendants too),
 *   "by_cpu": true (a "cpu" label on each sample; `--label-key cpu`), and
 *   "diff": true (event heap: the heap's growth over the window).
 *   attach and consume take "event_hz": [N, ...], one rate per entry of
 *   "events" (0: "hz"), so each event is at its own rate. attach takes
 *   "since_last": NAME, the asker's cursor (recorder/requests/cursors.h): the
 *   window starts where the previous call with NAME ended (a new cursor:
 *   "window_ns"/"from_ns", or the whole ring; neither is required), and
 *   the cursor moves to its end once the profile is written.
 *
 *   threads: every thread of the targets (at least one of "pids", "comm",
 *   "cgroup"; no "children"), now, written into the passed regular file as
 *   gzip'ed pprof, one sample per thread (recorder/requests/threads.c).
 *
 *   timeline: per step, the event's value per top group, written into the
 *   passed descriptor as the JSON form of core/query/timeline.h (members
 *   and bounds: ipc/msg_timeline.h).
 *
 *   events: the black box's events of the window (crashes, OOM kills,
 *   execs, exits, pressure, throttling), written into the passed
 *   descriptor as text or JSON lines (core/query/events.h; members:
 *   ipc/msg_events.h).
 *
 *   consume: the connection becomes a consumer of the events at "hz"
 *   (default 99; offcpu has no rate) for as long as it stays open. The
 *   recorder raises each event's source to the highest rate any consumer
 *   asks for before it answers, and lowers it when the connection closes;
 *   the connection may then wait up to FR_IPC_FOLLOW_WINDOW_MAX_NS plus a
 *   minute between requests (ipc/server.h). A client other than root (nor
 *   in socket.admin_group) gets at most limits.user_max_rate_hz (a higher
 *   rate is capped, with a warning). "start_ns" is the moment
 *   from which the data is at least at these rates: `attach --follow` asks
 *   for consecutive windows [start, start + w), [start + w, start + 2w), ...
 *   with "from_ns"/"to_ns" attach requests on the same connection. One
 *   consume per connection.
 *
 * WHO ASKS matters (the peer's credentials, never a request field): root,
 * the daemon's own user and members of socket.admin_group are served as
 * above. Any other user (one who reached a socket shared with
 * socket.group) gets attach profiles of its own uid's processes only,
 * consume "hz" capped at limits.user_max_rate_hz (with a "warnings" entry
 * saying so), threads of its own uid's processes only, consume of an event without a rate (offcpu) refused unless
 * it is being recorded already, and a dump refused unless the session
 * lists it in "users".
 *
 * RESPONSES carry "ok": true plus the command's fields, or "ok": false and
 * "error": a one-line message for a person. Attach answers
 *   {"ok":true, "samples":N, "stacks":N, "bytes":N, "hz":N, "t0_ns":N,
 *    "t1_ns":N, "events":[{"event","hz","samples","samples_in_window","lost",
 *    "throttled","truncated"}], "warnings":["..."]}
 * and, each only when not zero (ipc/msg.h, ipc/msg_attach.c): "first_ns",
 * "last_ns" (the profile's first and last sample), "ring_oldest_ns",
 * "ring_newest_ns" (the ring's span), "stall_t0_ns", "stall_t1_ns" (an
 * ingest stall within the window), "empty_filters": ["pid", "comm",
 * "cgroup", "label" or "combined"] (a profile with no sample: the targets
 * that alone matched nothing), "procs_in_window" and "pids_not_running"
 * (asked pids no process has now).
 * Status and sessions replies are typed in ipc/msg_status.h, member by
 * member. Status answers, besides the ring and counters, "events": [{"event",
 * "unit", "state" ("recording" or "failed"), "error" (when failed), "hz",
 * "every_switch", "since_ns", "samples", "lost", "throttled",
 * "truncated_stacks"}] and "consumers": [{"name", "since_ns", "events":
 * [{"event","hz"}]}], "query_memory" / "query_memory_used" (bytes: the
 * budget of attach queries and what running ones reserved), and "memory":
 * {"limit", "used", "queries", "timelines", "unwind_tables", "symbols",
 * "labels", "query_room"} (bytes: limits.memory, what the daemon holds of
 * it and who, and what queries may take together now).
 *
 * LIMITS. A request must start within 5 s of the connection (or of the
 * previous reply) and arrive whole within 5 s of its first byte, else the
 * daemon answers {"ok":false,"error":"no complete request within 5 s; ..."}
 * and closes. A connection that holds rates (consume) may wait
 * FR_IPC_FOLLOW_WINDOW_MAX_NS plus a minute for its next request; its
 * timeout answer names that bound. When all connection slots but one are taken, the last
 * answers only "status" (anything else: "busy: all N client slots are in
 * use ..."). An attach that finds no query memory within 30 s is answered
 * "attach: busy: ... retry later"; one whose output (a pipe or socket)
 * takes no bytes for 15 s is given up.
 * after the profile is completely written.
 *
 * A request with another "v" is answered {"ok":false,"error":"protocol
 * version ..."} (-EPROTO in the client).
 */
#ifndef FR_IPC_PROTO_H
#define FR_IPC_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "core/util/time.h"

/* cjson/cJSON.h's object, named only: who builds or reads one includes it. */
struct cJSON;

#define FR_IPC_VERSION 1
#define FR_IPC_MAX_FRAME (64 * 1024)

/* The longest window a follow (a connection holding rates) may ask for
 * at a time: the server waits this long plus a minute for its next
 * request, and the CLI refuses a longer --follow --window. */
#define FR_IPC_FOLLOW_WINDOW_MAX_NS (3600 * FR_NS_PER_S)

/* Sends one frame holding `len` bytes of `json`, with `pass_fd` attached
 * when >= 0. Retries on EINTR, loops over short writes. Returns 0, -EMSGSIZE
 * when len is 0 or over FR_IPC_MAX_FRAME, or -errno (-EPIPE when the peer
 * went away; SIGPIPE is never raised). */
int fr_ipc_send(int sock, const char *json, size_t len, int pass_fd);

/* Receives one frame into a malloc'd NUL-terminated buffer the caller
 * frees. When `fd_out` is non-NULL it receives the passed descriptor (made
 * O_CLOEXEC) or -1; descriptors the caller did not ask for are closed.
 * Returns 0, -ECONNRESET on orderly EOF before a frame, -EMSGSIZE for a bad
 * length, -EBADMSG for a truncated frame, -EAGAIN on a receive timeout, or
 * -errno. */
int fr_ipc_recv(int sock, char **json, size_t *len, int *fd_out);

/* fr_ipc_recv() with deadlines, for a receiver that must not be held by a
 * slow peer: waits at most `wait_ns` for the frame's first byte, then the
 * whole frame must have arrived `frame_ns` after that byte (either < 0:
 * no limit; the socket's own timeout, if any, still applies). Returns as
 * fr_ipc_recv(), and -ETIMEDOUT when a deadline passed (the connection is
 * then mid-frame or idle and should be closed). */
int fr_ipc_recv_timed(int sock, char **json, size_t *len, int *fd_out, int64_t wait_ns,
		      int64_t frame_ns);

/* Serializes `obj` and sends it as one frame (see fr_ipc_send). */
int fr_ipc_send_json(int sock, const struct cJSON *obj, int pass_fd);

/* Receives one frame and parses it; *obj is a JSON object the caller frees
 * with cJSON_Delete. -EBADMSG when the frame is not a JSON object, else as
 * fr_ipc_recv. */
int fr_ipc_recv_json(int sock, struct cJSON **obj, int *fd_out);

/* fr_ipc_recv_json() with the deadlines of fr_ipc_recv_timed(). */
int fr_ipc_recv_json_timed(int sock, struct cJSON **obj, int *fd_out, int64_t wait_ns,
			   int64_t frame_ns);

/* Parses `len` bytes of frame text (no NUL) into a JSON object the caller
 * frees. Returns 0 or -EBADMSG when it is not exactly one JSON object. */
int fr_ipc_parse_json(const char *text, size_t len, struct cJSON **obj);

/* Adds an integer member printed exactly. cJSON keeps numbers as doubles,
 * which cannot hold Unix nanoseconds (1.8e18 > 2^53) and print them as
 * 1.79e+18; every integer a reply carries goes through here. Returns the
 * new item, or NULL on allocation failure. */
struct cJSON *fr_ipc_add_int(struct cJSON *obj, const char *name, int64_t value);

/* Builds {"ok":false,"error":msg}. Returns NULL on allocation failure. */
struct cJSON *fr_ipc_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Builds {"ok":true}. */
struct cJSON *fr_ipc_ok(void);

#endif
