/* The goroutine profile read back and shown (tools/goroutines_view.c):
 * what `flightrec goroutines` prints, whether the profile came from the
 * recorder a moment ago or from a file written by `-o`. The profile's
 * shape is the recorder's contract (recorder/requests/goroutines.h): one
 * sample per goroutine, its fields as labels, its stack as locations. */
#ifndef FR_TOOLS_GOROUTINES_H
#define FR_TOOLS_GOROUTINES_H

struct fr_ipc_goroutines_reply;

/* Reads the gzip'ed goroutine profile in `fd` (from its start) and
 * prints it on standard output: text grouped like Go's own goroutine
 * profile (debug=1), or with `json` one JSON document. `what` names the
 * profile in messages ("the recorder's answer", a file name). `r` is
 * the recorder's reply (its warnings go to stderr, its counts are used
 * where the profile lacks them), NULL for a file. Returns the exit
 * status: 0, or 1 after saying why the profile cannot be read. */
int fr_cli_goroutines_render(int fd, const char *what, int json,
			     const struct fr_ipc_goroutines_reply *r);

#endif
