/* The daemon side of the socket: listening, peer credentials, a thread per
 * connection (bounded), request dispatch.
 *
 * Each accepted connection gets its own thread, so a slow or dead client
 * costs only its own request. A request must arrive whole in time (see
 * ipc/server.c for the deadlines), and the last slot is kept for status.
 */
#ifndef FR_IPC_SERVER_H
#define FR_IPC_SERVER_H

#include <stddef.h>
#include <sys/types.h>

/* cjson/cJSON.h's object, named only: who builds or reads one includes it. */
struct cJSON;

struct fr_ipc_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	/* The peer's supplementary groups when it connected (SO_PEERGROUPS:
	 * the kernel's, not a lookup that a pid reuse could fool); NULL when
	 * it has none or they could not be read. */
	gid_t *groups;
	unsigned ngroups;
	/* The connection's socket (borrowed, read-only use): a handler polls
	 * it for POLLRDHUP to stop work nobody waits for any more. */
	int sock;
	/* A handler may tie state to the connection: it sets `hold` and
	 * `release`; from then on the connection waits up to
	 * FR_IPC_FOLLOW_WINDOW_MAX_NS (plus a minute) between requests, and
	 * when it ends (the client left, sent garbage, or the
	 * server closes) `release(hold)` runs on the connection's thread. */
	void *hold;
	void (*release)(void *hold);
};

/* Whether the client of `peer` (a struct fr_ipc_peer *) hung up or shut
 * its side down: for a handler to stop work nobody waits for. Usable as
 * fr_profile_request.stop. Never blocks. */
int fr_ipc_peer_gone(void *peer);

/* Handles one request. `req` is the parsed request object (borrowed);
 * `fd` the descriptor passed with it or -1 (the handler owns it and must
 * close it); `peer` is the connection's (see hold/release above). Returns the response object, which the server sends and
 * frees; NULL means out of memory. Runs on the connection's thread. */
typedef struct cJSON *(*fr_ipc_handler)(void *arg, const char *cmd, const struct cJSON *req, int fd,
					struct fr_ipc_peer *peer);

struct fr_ipc_server;

/* Creates the listening socket at `path`, mode 0600, creating its
 * directory (0700) if missing. A socket file left by a dead daemon (nothing
 * accepts on it) is replaced; when a live process answers there, returns
 * -EADDRINUSE; when `path` exists and is not a socket, -EEXIST. Returns 0
 * or -errno, with a one-line message in `err` on failure. */
int fr_ipc_server_open(struct fr_ipc_server **out, const char *path, unsigned max_clients,
		       fr_ipc_handler handler, void *arg, char *err, size_t errlen);

/* Shares the socket with group `gid`: root:gid, mode 0660, set through a
 * descriptor of the very socket file fr_ipc_server_open() bound (never a
 * path that could have been replaced by a symlink). Call before
 * fr_ipc_server_start(). The socket's directory is opened to the group for
 * search (0710) only when it is the daemon's own: owned by it, mode 0700
 * and holding nothing but the socket; a directory on the way that the
 * group cannot pass is logged as a warning. Returns 0 or -errno with a
 * message in `err`. */
int fr_ipc_server_share(struct fr_ipc_server *s, gid_t gid, char *err, size_t errlen);

/* Whether `peer` is in group `gid`, as its primary or a supplementary
 * group. */
int fr_ipc_peer_in_group(const struct fr_ipc_peer *peer, gid_t gid);

/* Sets the request deadlines, 5 s each by default, to `seconds`: the time
 * a connection has to start a request (one holding state keeps its longer
 * wait) and to finish one from its first byte. Tests use it to see a
 * deadline pass in one second. Call before fr_ipc_server_start(). Returns 0,
 * or -EINVAL for zero seconds or a started server. */
int fr_ipc_server_set_request_deadline(struct fr_ipc_server *s, unsigned seconds);

/* Starts the accept thread. Returns 0 or -errno. */
int fr_ipc_server_start(struct fr_ipc_server *s);

/* Stops accepting, waits for running requests to finish, unlinks the
 * socket and frees the server; accepts NULL. */
void fr_ipc_server_close(struct fr_ipc_server *s);

#endif
