/* flightrec events on the recorder's side (recorder/requests/requests_events.c). */
#ifndef FR_RECORDER_REQUESTS_EVENTS_H
#define FR_RECORDER_REQUESTS_EVENTS_H

struct fr_ipc_call;
struct fr_ipc_events_req;
struct fr_ipc_events_reply;

/* Answers {"req":"events"} (ipc/msg_events.h): the black box's events of
 * the window written into call->fd (closed here), as text or JSON lines;
 * an ipc/dispatch.h handler, `arg` the daemon. Runs on a connection
 * thread. */
int daemon_handle_events(void *arg, struct fr_ipc_call *call, const struct fr_ipc_events_req *er,
			 struct fr_ipc_events_reply *reply);

#endif
