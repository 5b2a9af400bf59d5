/* What the flightrec commands share: the program's name, talking to the
 * recorder and reading its replies, writing an output file atomically, a
 * progress line on a terminal, and how the ring is printed. One file per
 * command uses these: cmd_attach.c, cmd_status.c (status, sessions),
 * cmd_dump.c, cmd_threads.c; flightrec.c picks the command. */
#ifndef FR_TOOLS_CLI_H
#define FR_TOOLS_CLI_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "core/query/profile.h"
#include "ipc/msg_status.h"

#define FR_CLI_PROG "flightrec"

/* The caller's umask, set by main() while it is the only thread: a new
 * profile gets the mode any new file of the caller's gets. */
extern mode_t fr_cli_umask;

/* The commands: each parses its options (argv[0] is the command's name)
 * and returns the exit status: 0 success, 1 failure, 2 usage error. */
int fr_cmd_attach(int argc, char **argv);
int fr_cmd_status(int argc, char **argv);
int fr_cmd_sessions(int argc, char **argv);
int fr_cmd_dump(int argc, char **argv);
int fr_cmd_threads(int argc, char **argv);
int fr_cmd_goroutines(int argc, char **argv);
int fr_cmd_serve(int argc, char **argv);
int fr_cmd_timeline(int argc, char **argv);
int fr_cmd_export(int argc, char **argv);
int fr_cmd_events(int argc, char **argv);

/* --type of events and dump --events into *types (core/query/events.h).
 * Returns 0, or EXIT_USAGE after saying why, prefixed with `cmd`. */
int fr_cli_events_type_opt(const char *cmd, const char *arg, uint64_t *types);

/* dump --ring FILE --events: the events of [t0, t1) of `ring` written to
 * standard output as flightrec events writes them. Returns the exit
 * status. */
struct fr_ring;
struct fr_targets;
int fr_cli_events_from_ring(struct fr_ring *ring, int64_t t0, int64_t t1,
			    const struct fr_targets *targets, uint64_t types, int json,
			    const char *symbol_cache, const char *const *debug_dirs,
			    uint32_t ndebug_dirs);

/* Prints the threads answer in `fd` (a pprof, recorder/requests/threads.c) as text
 * grouped by stack, or as JSON, with the warnings of `r`; `none` (NULL:
 * "no such process") is the text when it lists no thread. Returns the
 * exit status. */
struct fr_ipc_threads_reply;
int fr_cli_threads_render(int fd, int json, const struct fr_ipc_threads_reply *r, const char *none);

/* The threads answer in `fd` as the JSON of `threads --json` (for
 * flightrec serve), or NULL after saying why it cannot be read. */
cJSON *fr_cli_threads_json(int fd, const struct fr_ipc_threads_reply *r);

/* Says which option of `cmd` getopt refused. Returns EXIT_USAGE. */
int fr_cli_bad_option(const char *cmd, char **argv);

/* Connects to the recorder at `path`, saying why not when it cannot.
 * Returns the socket or -errno. */
int fr_cli_connect(const char *path);

/* The error of a reply with "ok": false (or not true), NULL for success. */
const char *fr_cli_resp_error(const cJSON *resp);

/* Says why fr_ipc_call() failed with `ret`; frees *resp on -EPROTO. */
void fr_cli_report_call_error(int ret, const char *path, cJSON **resp);

/* fr_ipc_call(), saying why it failed. Returns as fr_ipc_call(). */
int fr_cli_call(int sock, const char *path, cJSON *req, int pass_fd, cJSON **resp);

/* Connects to the recorder at `path`, sends `req` (with `pass_fd` unless
 * -1) and returns its successful reply in *resp (the caller frees it).
 * An error reply is said as "<prog><ctx>: <error>" (`ctx` "" or, say,
 * " timeline"). Returns 0, or 1 after saying what went wrong. */
int fr_cli_request(const char *path, cJSON *req, int pass_fd, const char *ctx, cJSON **resp);

/* A number member of a reply, or of an object built here, where integers
 * are raw text; 0 when absent. */
double fr_cli_num(const cJSON *obj, const char *key);

/* A string member of a reply; "" when absent. */
const char *fr_cli_str(const cJSON *obj, const char *key);

/* What a written profile holds (tools/report.c): from an attach reply or
 * from the ring dump read. */
struct fr_targets;
struct fr_cli_report {
	const char *path; /* "-": standard output */
	uint64_t samples, stacks, bytes;
	uint32_t hz;
	int64_t t0, t1;			  /* the window asked for */
	int64_t first_ns, last_ns;	  /* its first and last sample; 0: none */
	int64_t ring_oldest, ring_newest; /* 0: not known (an older recorder) */
	int64_t stall_t0, stall_t1;	  /* a recorder stall within the window */
	int64_t writer_error_ns;	  /* the ring cannot be written since then */
	const char *writer_error;	  /* why (borrowed) */
	uint32_t empty;			  /* FR_TARGET_* that matched nothing */
	uint64_t procs;			  /* processes in the window, with `empty` */
	uint32_t npids_gone;		  /* of the targets' pids, those no process has now */
	const uint32_t *pids_gone;
	const struct fr_targets *targets;
	int show_window; /* print the window back in UTC (times were given) */
	int memory;	 /* of event alloc or heap: an empty one says why */
	/* The events asked that nothing records and the window has none of
	 * ("page-faults"; borrowed, NULL or "" for none), and what the
	 * recorder records (attach replies) */
	const char *unrecorded, *recording;
	/* The label key was typed as --by label:KEY (top), not --label-key
	 * KEY: messages name what the user typed. */
	int label_key_by;
	/* Per event: samples the recorder lost in the window's chunks and
	 * those it kept there, machine-wide (recorded 0: not known). */
	uint32_t nloss;
	struct fr_cli_loss {
		uint32_t event;
		uint64_t lost, recorded;
	} loss[FR_LIMIT_EVENTS];
};

/* The share of an event's samples (lost / (lost + recorded)) a window may
 * lose before attach, top and dump fail for it (without --allow-loss):
 * 1%, a per mille so that it stays an integer. */
#define FR_CLI_LOSS_MAX_PERMILLE 10

/* Whether `events` name alloc or heap (fr_cli_report.memory). */
int fr_cli_events_memory(const uint32_t *events, uint32_t n);

/* The report of an attach reply to request `ar` (show_window unset). */
struct fr_ipc_attach_reply;
struct fr_ipc_attach_req;
void fr_cli_report_from_attach(struct fr_cli_report *r, const struct fr_ipc_attach_reply *reply,
			       const struct fr_ipc_attach_req *ar);

#define FR_REPORT_OK 0
#define FR_REPORT_EMPTY 1 /* outside the ring, or targets matched nothing */

/* Says why the profile is not what was asked, when it is not: the window
 * entirely outside the ring, the targets that matched nothing (as a
 * warning with `allow_empty`). Returns FR_REPORT_OK or FR_REPORT_EMPTY. */
int fr_cli_report_check(const struct fr_cli_report *r, int allow_empty);

/* Warns of a recorder stall within the window. Returns 1 when it did. */
int fr_cli_report_stall(const struct fr_cli_report *r);

/* Says how many samples of each event the window lost, when any were
 * (machine-wide, as the profile's comments count them), and warns when
 * over FR_CLI_LOSS_MAX_PERMILLE of an event's were. Returns 1 when a
 * share was over it. */
int fr_cli_report_loss(const struct fr_cli_report *r);

/* What an answer's missing samples make of the exit status: 0 when none
 * were said missing or `allow_loss`; else 1, after the warnings above
 * (fr_cli_report_stall() and fr_cli_report_loss()) and a line naming
 * --allow-loss. A writer error is a failure whatever `allow_loss`. */
int fr_cli_report_missing(const struct fr_cli_report *r, int allow_loss);

/* "wrote incident.pb.gz: 1234 samples, 56 stacks, spanning 19.8s (window
 * 1m, the ring starts 40s in), at 99 Hz (12.3KiB)": the span from the
 * first to the last sample; and the window in UTC when `show_window`. */
void fr_cli_report_summary(const struct fr_cli_report *r);

/* flightrec-HOST-UTCTIME.pb.gz (.folded), UTCTIME to the millisecond
 * (20261124T130500.123Z): malloc'd, NULL on failure. */
char *fr_cli_default_output_name(enum fr_profile_format format);

/* The output of a profile. For a regular (or new) file, a temporary file
 * in the same directory that fr_cli_output_commit() renames into place;
 * "-" is standard output. */
struct fr_cli_output {
	const char *path;
	char *tmp; /* NULL when writing to `path` directly (fifo, device, "-") */
	int fd;
	/* A default name (fr_cli_output_open_new()): never replaces a file;
	 * on a clash "-1", "-2", ... go before the extension. `path` points
	 * here, and names the file written once committed. */
	char *owned;
};

/* Opens the output at `path` ("-": standard output, refused on a terminal
 * for pprof, which is binary), saying why not. Returns 0 or -errno. */
int fr_cli_output_open(struct fr_cli_output *o, const char *path, enum fr_profile_format format);

/* Opens a new file under a name the program chose, `name` (NULL: the
 * default name, in the current directory), that never replaces an
 * existing one. Returns 0 or -errno. */
int fr_cli_output_open_new(struct fr_cli_output *o, const char *name,
			   enum fr_profile_format format);

/* With `ok`, syncs the file and renames it into place (a default name:
 * without replacing anything); else removes it. Closes the descriptor.
 * Returns 0 or -errno (after saying why). */
int fr_cli_output_commit(struct fr_cli_output *o, int ok);

/* Frees what fr_cli_output_open_new() allocated (after the path is used). */
void fr_cli_output_free(struct fr_cli_output *o);

/* A memory file for the answer of command `cmd` ("threads"), which the
 * recorder writes like a regular file; with `for_stdout` (-o -), refused
 * when standard output is a terminal (the answer is binary). Returns the
 * descriptor, or -1 after saying why. */
int fr_cli_answer_memfd(const char *cmd, int for_stdout);

/* Copies the whole of `fd` (an answer the recorder wrote into a memory
 * file) to standard output, for `-o -`. Returns 0, or -1 after saying
 * why, as command `cmd` ("threads"). */
int fr_cli_copy_to_stdout(int fd, const char *cmd);

/* Progress on a terminal for operations that can take a while: after a
 * quiet 300 ms, a line on stderr with what is going on and the time spent,
 * redrawn every 200 ms and erased at the end. Nothing when stderr is not
 * a terminal (piped, in scripts, in logs). */
struct fr_cli_progress {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const char *what;
	int running, done, drawn;
	int64_t start_ns;
};

void fr_cli_progress_start(struct fr_cli_progress *p, const char *what);
void fr_cli_progress_stop(struct fr_cli_progress *p);

/* Sends the request `cmd` (no arguments) to the recorder and returns its
 * successful reply, parsed in *resp and as received in *text (both freed
 * by the caller). Returns 0, or 1 after saying what went wrong. */
int fr_cli_simple_request(const char *cmd, const char *socket_s, cJSON **resp, char **text);

/* A duration for a person: fr_format_duration(), the one form every
 * command prints ("19.8s", "1h30m"). */
void fr_cli_human_duration(int64_t ns, char *buf, size_t len);

/* "13:05:00–13:06:00 UTC (1m)": a window printed back in UTC, the date
 * added when it is not today's (UTC). Returns buf. */
char *fr_cli_format_window(int64_t t0, int64_t t1, char *buf, size_t len);

/* "13:05:10 UTC" (or with the date when not today's): a time point for a
 * person. Returns buf. */
char *fr_cli_format_clock(int64_t t, char *buf, size_t len);

/* The ring facts shared by status and dump --info. */
void fr_cli_print_ring(const struct fr_ipc_ring *ring, uint64_t lost);

/* "cpu@99Hz,offcpu,page-faults@period=1": the `n` events of a consumer or
 * a session. */
void fr_cli_format_events(const struct fr_ipc_event_rate *events, uint32_t n, char *buf,
			  size_t len);

#endif
