/* flightrec goroutines on the recorder's side (recorder/requests/goroutines.c):
 * every goroutine of a Go process, read from its memory now, without
 * stopping it or attaching to it (no ptrace, no signal).
 *
 * The answer is a gzip'ed pprof written into the regular file the client
 * passed (like threads): one sample per goroutine, sample types
 * goroutines/count (1) and waiting/nanoseconds (how long it has waited,
 * 0 when not waiting), period goroutines/count. Its stack is the
 * sample's locations, innermost first, one location per return address
 * with its inlined frames as further lines (as Go writes them); a
 * goroutine whose stack could not be read consistently, or one on a CPU
 * (whose registers are not in memory), has an empty stack and says why
 * in "stack".
 *
 * Labels of every sample:
 *  - numeric: "pid" (the process: a dump's snapshot holds several);
 *    "goid"; "creator_goid" (the goroutine whose `go`
 *    statement created it: Go 1.21 onward, absent before and for the
 *    first goroutines); "waiting_ns" (as the value); "thread" (the
 *    thread's tid for a goroutine running or in a system call);
 *  - strings: "state" (Go's own words: "running", "runnable",
 *    "syscall", "waiting", "copystack", "preempted"); "wait" (for a
 *    waiting goroutine, Go's wait reason: "chan receive", "select",
 *    "IO wait", "semacquire", "sleep", ... as the program's runtime
 *    names them); "start" (the function the goroutine started in);
 *    "created_by" (the function holding the `go` statement) and
 *    "created_at" (its file:line); "waited" ("at least" when the time
 *    is a lower bound: the recorder saw the wait begin no earlier than
 *    its first look or the runtime's last GC); "stack" ("running": on a
 *    CPU, not read; "changed": changed under the reader twice; "cut":
 *    deeper than GOROUTINE_DEPTH_MAX frames, the innermost kept);
 *  - the goroutine's pprof labels with their own keys; one named like a
 *    label above is given as "go:KEY".
 * The profile's comments, for each process in turn: "pid=P",
 * "go=VERSION", "uid=U" (who ran it), "system=N" (the runtime's own
 * goroutines, left out as Go's own profile leaves them); its time the
 * moment it was read.
 */
#ifndef FR_RECORDER_GOROUTINES_H
#define FR_RECORDER_GOROUTINES_H

/* Most goroutines one answer lists. */
#define GOROUTINES_MAX 1000000
/* Most frames of a goroutine's stack. */
#define GOROUTINE_DEPTH_MAX 100

/* A dump's snapshot: at most this many Go programs, each read within
 * this long. */
#define GOROUTINES_SNAPSHOT_PROCS 8
#define GOROUTINES_SNAPSHOT_NS (5 * 1000000000ll)

struct daemon;
struct fr_targets;
struct fr_ipc_call;
struct fr_ipc_goroutines_req;
struct fr_ipc_goroutines_reply;

/* Answers {"req":"goroutines"} into the regular file call->fd (closed
 * here); an ipc/dispatch.h handler, `arg` the daemon. Runs on a
 * connection thread. */
int daemon_handle_goroutines(void *arg, struct fr_ipc_call *call,
			     const struct fr_ipc_goroutines_req *q,
			     struct fr_ipc_goroutines_reply *r);

/* Answers a request with "at_ns" (recorder/requests/goroutines_at.c):
 * the process's goroutines as the newest dump's snapshot at or before
 * then kept them, into fd. Returns 0 or -EINVAL with call refused. */
struct fr_ipc_goroutines_req;
int daemon_goroutines_at(struct daemon *d, struct fr_ipc_call *call,
			 const struct fr_ipc_goroutines_req *q, int has_uid, int fd,
			 struct fr_ipc_goroutines_reply *r);

/* The goroutines of the Go programs among the processes of `t` (every
 * process when it names none) now, into fd as one pprof (the labels
 * above; "pid" tells the processes apart): a dump's snapshot, taken at
 * its trigger (recorder/triggers/dumps.h). Returns 0 with how many
 * programs it holds in *nprocs (0: none, fd untouched), or -errno. */
int daemon_goroutines_snapshot(struct daemon *d, const struct fr_targets *t, int fd,
			       uint32_t *nprocs);

#endif
