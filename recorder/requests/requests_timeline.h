/* flightrec timeline on the recorder's side (recorder/requests/requests_timeline.c). */
#ifndef FR_RECORDER_REQUESTS_TIMELINE_H
#define FR_RECORDER_REQUESTS_TIMELINE_H

#include <cjson/cJSON.h>

struct daemon;
struct fr_ipc_peer;

/* Answers {"req":"timeline"} (ipc/msg_timeline.h): the timeline's JSON
 * form written into `fd` (closed here). Runs on a connection thread. */
cJSON *daemon_handle_timeline(struct daemon *d, const cJSON *req, int fd, struct fr_ipc_peer *peer);

#endif
