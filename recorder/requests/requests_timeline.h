/* flightrec timeline on the recorder's side (recorder/requests/requests_timeline.c). */
#ifndef FR_RECORDER_REQUESTS_TIMELINE_H
#define FR_RECORDER_REQUESTS_TIMELINE_H

struct daemon;
struct fr_ipc_peer;

/* Answers {"req":"timeline"} (ipc/msg_timeline.h): the timeline's JSON
 * form written into call->fd (closed here); an ipc/dispatch.h handler,
 * `arg` the daemon. Runs on a connection thread. */
struct fr_ipc_call;
struct fr_ipc_timeline_req;
struct fr_ipc_timeline_reply;
int daemon_handle_timeline(void *arg, struct fr_ipc_call *call,
			   const struct fr_ipc_timeline_req *tr,
			   struct fr_ipc_timeline_reply *reply);

#endif
