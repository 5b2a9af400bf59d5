/* The client side of the socket, used by the flightrec CLI. */
#ifndef FR_IPC_CLIENT_H
#define FR_IPC_CLIENT_H

#include <stddef.h>

/* cjson/cJSON.h's object, named only: who builds or reads one includes it. */
struct cJSON;

/* The socket path a client uses when none is given: $FLIGHTREC_SOCKET,
 * else the daemon's default (fr_ipc_default_socket(), ipc/paths.h). Returns a
 * malloc'd string. */
char *fr_ipc_client_socket_path(void);

/* Connects to the daemon. Returns the socket fd (O_CLOEXEC) or -errno:
 * -ENOENT / -ECONNREFUSED when no daemon listens at `path`. */
int fr_ipc_connect(const char *path);

/* fr_ipc_connect() for commands (ipc/connect.c): a user who is not root
 * and has no recorder at its default path is connected to the system
 * recorder's socket instead when it may use it. On failure, -errno and
 * in `why` a line for a person saying where the recorders' sockets are and
 * why they cannot be reached (not prefixed with the program's name). */
int fr_ipc_connect_why(const char *path, char *why, size_t len);

/* Sends `req` (with `pass_fd` when >= 0; "v" is added) and waits for the
 * response. Returns 0 and the response object the caller frees, or
 * -errno (-ECONNRESET when the daemon closed the connection, -EAGAIN when
 * it did not answer within 120 s). The response may have "ok": false; that
 * is still 0 here, except when the daemon rejected the protocol version:
 * then -EPROTO, and *resp still holds its reply (caller frees). On other
 * errors *resp is NULL. */
int fr_ipc_call(int sock, struct cJSON *req, int pass_fd, struct cJSON **resp);

/* fr_ipc_call(), also handing back the reply exactly as received in
 * *text (malloc'd, NUL-terminated; NULL on error), for callers that print
 * it: integers in it are exact, the parsed doubles of *resp are not. */
int fr_ipc_call_text(int sock, struct cJSON *req, int pass_fd, struct cJSON **resp, char **text);

#endif
