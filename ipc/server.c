/* The daemon side of the control socket.
 *
 * One accept thread polls the listening socket and an eventfd that
 * fr_ipc_server_close() uses to wake it. Each accepted connection gets a
 * joinable thread that reads requests, checks the protocol version and
 * hands them to the handler. At most max_clients connections run at once;
 * one more is told so and closed.
 *
 * A connection thread owns its socket and closes it under the server lock
 * when it ends, then moves itself to the `finished` list where the accept
 * thread (or close) joins it. fr_ipc_server_close() shuts the live sockets
 * down under the same lock, so it never touches a descriptor number that
 * may have been reused.
 *
 * Nothing a client sends can stop the server: malformed frames earn an
 * error reply and a closed connection, and sends never raise SIGPIPE.
 *
 * Deadlines are per request, not per receive: a connection has
 * REQUEST_WAIT_NS from its accept (or from the previous reply) to start a
 * request and REQUEST_FRAME_NS from that request's first byte to finish
 * it, so a client trickling a byte every few seconds is dropped instead of
 * holding its slot forever. A connection that holds state (a follow) may
 * wait up to FOLLOW_WAIT_NS between requests: a follow's windows are at
 * most FR_IPC_FOLLOW_WINDOW_MAX_NS long.
 *
 * The last free slot is kept for `status`: when every other slot is taken,
 * a connection is still accepted, but it is answered only if its first
 * request is `status`, and closed after that answer. So an operator can
 * always see what holds the daemon.
 */
#include "ipc/server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/util/time.h"
#include "ipc/proto.h"
#include "ipc/share.h"

#define REQUEST_WAIT_NS (5 * FR_NS_PER_S)
#define REQUEST_FRAME_NS (5 * FR_NS_PER_S)
#define FOLLOW_WAIT_NS (FR_IPC_FOLLOW_WINDOW_MAX_NS + 60 * FR_NS_PER_S)
#define SEND_TIMEOUT_S 5
#define LISTEN_BACKLOG 128

struct conn {
	struct fr_ipc_server *server;
	pthread_t thread;
	int fd;
	bool status_only; /* took the slot kept for status */
	struct fr_ipc_peer peer;
	struct conn *next;
};

struct fr_ipc_server {
	char *path;
	int listen_fd;
	int wake_fd;
	dev_t sock_dev;
	ino_t sock_ino;
	unsigned max_clients;
	long long request_wait_ns;  /* REQUEST_WAIT_NS unless set */
	long long request_frame_ns; /* REQUEST_FRAME_NS unless set */
	fr_ipc_handler handler;
	void *arg;

	bool started;
	pthread_t accept_thread;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;	       /* under lock */
	unsigned nlive;	       /* under lock */
	struct conn *live;     /* under lock */
	struct conn *finished; /* under lock; threads waiting to be joined */
};

static int fill_addr(struct sockaddr_un *addr, const char *path)
{
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(addr->sun_path))
		return -ENAMETOOLONG;
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	memcpy(addr->sun_path, path, len + 1);
	return 0;
}

/* Decides what to do about a file already at `path`: 0 when it is gone
 * (or was a dead socket, now removed), else -errno with a message. */
static int clear_stale(const struct sockaddr_un *addr, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int probe, ret;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		ret = -errno;
		fr_set_err(err, errlen, "cannot inspect %s: %s", path, strerror(errno));
		return ret;
	}
	if (!S_ISSOCK(st.st_mode)) {
		fr_set_err(err, errlen, "%s exists and is not a socket; refusing to replace it",
			   path);
		return -EEXIST;
	}

	/* Non-blocking, so a live daemon with a full backlog (EAGAIN)
	 * cannot hang the probe; that, too, means someone is listening. */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (probe < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "cannot create a socket: %s", strerror(errno));
		return ret;
	}
	ret = connect(probe, (const struct sockaddr *)addr, sizeof(*addr));
	ret = ret < 0 ? -errno : 0;
	close(probe);

	if (ret == 0 || ret == -EAGAIN || ret == -EINPROGRESS) {
		fr_set_err(err, errlen, "another flightrecd is already listening at %s", path);
		return -EADDRINUSE;
	}
	if (ret == -ENOENT)
		return 0;
	if (ret != -ECONNREFUSED) {
		fr_set_err(err, errlen, "cannot check whether a daemon listens at %s: %s", path,
			   strerror(-ret));
		return ret;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		ret = -errno;
		fr_set_err(err, errlen, "cannot remove stale socket %s: %s", path, strerror(errno));
		return ret;
	}
	fr_log_info("removed stale socket %s", path);
	return 0;
}

/* Binds the listening socket of `s` at `path` (mode 0600 from the start)
 * and listens. Returns 0, or -errno with a message in `err`; a socket file
 * it bound is removed again (never a file that replaced it). */
static int bind_listen(struct fr_ipc_server *s, const struct sockaddr_un *addr, const char *path,
		       char *err, size_t errlen)
{
	struct stat st;
	int ret;

	/* The socket file takes its mode from the socket inode, masked by
	 * the umask, at bind time. Setting the inode to 0600 first means
	 * the file never exists with wider permissions, without touching the
	 * process-wide umask that other threads rely on. */
	if (fchmod(s->listen_fd, 0600) < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "cannot set the socket mode: %s", strerror(errno));
		return ret;
	}
	if (bind(s->listen_fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0) {
		ret = -errno;
		if (ret == -EADDRINUSE)
			fr_set_err(err, errlen, "another flightrecd is already listening at %s",
				   path);
		else
			fr_set_err(err, errlen, "cannot bind %s: %s", path, strerror(errno));
		return ret;
	}
	/* Never through a symlink put at the path since bind. */
	if (fchmodat(AT_FDCWD, path, 0600, AT_SYMLINK_NOFOLLOW) < 0 || lstat(path, &st) < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "cannot set the mode of %s: %s", path, strerror(errno));
		goto err_unlink;
	}
	if (!S_ISSOCK(st.st_mode)) {
		fr_set_err(err, errlen, "%s was replaced right after it was created", path);
		return -EEXIST;
	}
	s->sock_dev = st.st_dev;
	s->sock_ino = st.st_ino;
	if (listen(s->listen_fd, LISTEN_BACKLOG) < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		goto err_unlink;
	}
	return 0;

err_unlink:
	unlink(path);
	return ret;
}

/* The server's wake eventfd and its listening socket, bound to `path`.
 * Returns 0, or -errno with err set; the caller closes what was made. */
static int open_fds(struct fr_ipc_server *s, const struct sockaddr_un *addr, const char *path,
		    char *err, size_t errlen)
{
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0) {
		int e = errno;

		fr_set_err(err, errlen, "cannot create an eventfd: %s", strerror(e));
		return -e;
	}
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->listen_fd < 0) {
		int e = errno;

		fr_set_err(err, errlen, "cannot create a socket: %s", strerror(e));
		return -e;
	}
	return bind_listen(s, addr, path, err, errlen);
}

int fr_ipc_server_open(struct fr_ipc_server **out, const char *path, unsigned max_clients,
		       fr_ipc_handler handler, void *arg, char *err, size_t errlen)
{
	struct fr_ipc_server *s;
	struct sockaddr_un addr;
	int ret;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!path || !handler || max_clients == 0) {
		fr_set_err(err, errlen, "invalid server parameters");
		return -EINVAL;
	}
	if (fill_addr(&addr, path) < 0) {
		fr_set_err(err, errlen, "socket path %s is too long (at most %zu bytes)", path,
			   sizeof(addr.sun_path) - 1);
		return -ENAMETOOLONG;
	}

	s = calloc(1, sizeof(*s));
	if (!s) {
		fr_set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->listen_fd = -1;
	s->wake_fd = -1;
	s->max_clients = max_clients;
	s->request_wait_ns = REQUEST_WAIT_NS;
	s->request_frame_ns = REQUEST_FRAME_NS;
	s->handler = handler;
	s->arg = arg;
	s->path = strdup(path);
	if (!s->path) {
		ret = -ENOMEM;
		fr_set_err(err, errlen, "out of memory");
		goto err_free;
	}
	ret = pthread_mutex_init(&s->lock, NULL);
	if (ret) {
		ret = -ret;
		fr_set_err(err, errlen, "cannot create a mutex: %s", strerror(-ret));
		goto err_free;
	}
	ret = pthread_cond_init(&s->cond, NULL);
	if (ret) {
		ret = -ret;
		fr_set_err(err, errlen, "cannot create a condition variable: %s", strerror(-ret));
		goto err_mutex;
	}

	ret = fr_mkdir_parent(path, 0700, err, errlen);
	if (ret < 0)
		goto err_cond;
	ret = clear_stale(&addr, path, err, errlen);
	if (ret < 0)
		goto err_cond;

	ret = open_fds(s, &addr, path, err, errlen);
	if (ret < 0)
		goto err_fds;

	*out = s;
	return 0;

err_fds:
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
err_cond:
	pthread_cond_destroy(&s->cond);
err_mutex:
	pthread_mutex_destroy(&s->lock);
err_free:
	free(s->path);
	free(s);
	return ret;
}

int fr_ipc_server_share(struct fr_ipc_server *s, gid_t gid, char *err, size_t errlen)
{
	char proc[64];
	struct stat st;
	int fd, ret;

	if (!s || s->started) {
		fr_set_err(err, errlen, "the socket can only be shared before the server starts");
		return -EINVAL;
	}
	/* O_PATH|O_NOFOLLOW opens the socket file itself, never what a
	 * symlink put in its place points to; the inode must be the one
	 * bind() created. */
	fd = open(s->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "cannot open the socket %s: %s", s->path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_dev != s->sock_dev ||
	    st.st_ino != s->sock_ino) {
		close(fd);
		fr_set_err(err, errlen,
			   "%s is no longer the socket this daemon bound; refusing to "
			   "change its owner",
			   s->path);
		return -ESTALE;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	/* Group first, mode second: the file is never 0660 with a group
	 * other than the one meant. chmod() through /proc/self/fd reaches
	 * the inode the O_PATH descriptor holds (fchmod does not take one). */
	if (fchownat(fd, "", (uid_t)-1, gid, AT_EMPTY_PATH) < 0 || chmod(proc, 0660) < 0) {
		ret = -errno;
		close(fd);
		fr_set_err(err, errlen, "cannot give %s to group %u (mode 0660): %s", s->path,
			   (unsigned)gid, strerror(-ret));
		return ret;
	}
	close(fd);
	fr_ipc_share_dirs(s->path, gid);
	return 0;
}

/* Reads the supplementary groups the peer had when it connected. Leaves
 * none on failure: the peer is then judged by its uid and primary group
 * alone, which grants less, never more. */
static void read_peer_groups(int fd, struct fr_ipc_peer *peer)
{
	socklen_t len = 64 * sizeof(gid_t);

	for (int tries = 0; tries < 3; tries++) {
		gid_t *g = malloc(len ? len : sizeof(gid_t));

		if (!g)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) == 0) {
			peer->groups = g;
			peer->ngroups = (unsigned)(len / sizeof(gid_t));
			return;
		}
		free(g);
		if (errno != ERANGE)
			return;
		/* len now holds the size needed. */
	}
}

/* Sends `resp` (consumed) on the connection. Returns 0 or -errno. */
static int reply(int fd, cJSON *resp)
{
	int ret;

	if (!resp)
		return -ENOMEM;
	ret = fr_ipc_send_json(fd, resp, -1);
	cJSON_Delete(resp);
	return ret;
}

/* Describes a "v" value for the version error message. */
static void describe_version(const cJSON *v, char *buf, size_t len)
{
	char *text;

	if (!v) {
		snprintf(buf, len, "(none)");
		return;
	}
	if (cJSON_IsNumber(v)) {
		snprintf(buf, len, "%.17g", v->valuedouble);
		return;
	}
	text = cJSON_PrintUnformatted(v);
	if (!text) {
		snprintf(buf, len, "(unreadable)");
		return;
	}
	if (strlen(text) > 32)
		snprintf(buf, len, "%.32s...", text);
	else
		snprintf(buf, len, "%s", text);
	cJSON_free(text);
}

/* The answer to a connection whose request did not come in time. A
 * connection holding state (a follow) waits up to FOLLOW_WAIT_NS for a
 * request to start, any other REQUEST_WAIT_NS; either has REQUEST_FRAME_NS
 * from the first byte to finish it. The message names the bounds that
 * applied, not a fixed 5 s. */
static cJSON *timeout_error(const struct fr_ipc_server *s, bool holding)
{
	if (!holding && s->request_wait_ns == s->request_frame_ns)
		return fr_ipc_error("no complete request within %lld s; closing the connection",
				    (long long)(s->request_frame_ns / FR_NS_PER_S));
	return fr_ipc_error("no request within %lld s (or not whole within %lld s of its first "
			    "byte); closing the connection",
			    (long long)((holding ? FOLLOW_WAIT_NS : s->request_wait_ns) /
					FR_NS_PER_S),
			    (long long)(s->request_frame_ns / FR_NS_PER_S));
}

/* Answers requests on one connection until the peer goes away, sends
 * something malformed, or the server shuts the socket down. Returns
 * nothing; the caller closes the socket. */
static void serve(struct conn *c)
{
	struct fr_ipc_server *s = c->server;

	for (;;) {
		const cJSON *v, *cmd;
		cJSON *req = NULL, *resp;
		int fd = -1;
		int ret;

		ret = fr_ipc_recv_json_timed(c->fd, &req, &fd,
					     c->peer.hold ? FOLLOW_WAIT_NS : s->request_wait_ns,
					     s->request_frame_ns);
		if (ret == -ETIMEDOUT) {
			fr_log_debug("client pid %d: no whole request in time; closing",
				     (int)c->peer.pid);
			reply(c->fd, timeout_error(s, c->peer.hold != NULL));
			return;
		}
		if (ret == -EMSGSIZE || ret == -EBADMSG) {
			reply(c->fd,
			      fr_ipc_error("malformed request: expected a frame of 1..%d bytes "
					   "holding one JSON object",
					   FR_IPC_MAX_FRAME));
			return;
		}
		if (ret < 0) {
			if (ret != -ECONNRESET && ret != -EAGAIN)
				fr_log_debug("client pid %d: receive failed: %s", (int)c->peer.pid,
					     strerror(-ret));
			return;
		}

		v = cJSON_GetObjectItemCaseSensitive(req, "v");
		if (!cJSON_IsNumber(v) || v->valuedouble != FR_IPC_VERSION) {
			char got[64];

			describe_version(v, got, sizeof(got));
			resp = fr_ipc_error("protocol version %s not supported (daemon speaks %d)",
					    got, FR_IPC_VERSION);
			/* Lets a client of another version tell this apart
			 * from an ordinary failure. */
			if (resp && !cJSON_AddNumberToObject(resp, "v", FR_IPC_VERSION)) {
				cJSON_Delete(resp);
				resp = NULL;
			}
			if (fd >= 0)
				close(fd);
			cJSON_Delete(req);
			reply(c->fd, resp);
			return;
		}

		cmd = cJSON_GetObjectItemCaseSensitive(req, "req");
		if (!cJSON_IsString(cmd) || !cmd->valuestring) {
			if (fd >= 0)
				close(fd);
			resp = fr_ipc_error("request has no \"req\" string naming the command");
		} else if (c->status_only && strcmp(cmd->valuestring, "status") != 0) {
			if (fd >= 0)
				close(fd);
			cJSON_Delete(req);
			reply(c->fd,
			      fr_ipc_error("busy: all %u client slots are in use (limits."
					   "max_clients); only status is answered now, retry "
					   "later",
					   s->max_clients));
			return;
		} else {
			resp = s->handler(s->arg, cmd->valuestring, req, fd, &c->peer);
			if (!resp)
				resp = fr_ipc_error("out of memory in the daemon");
		}
		cJSON_Delete(req);
		if (reply(c->fd, resp) < 0 || c->status_only)
			return;
	}
}

static void *conn_main(void *p)
{
	struct conn *c = p;
	struct fr_ipc_server *s = c->server;
	struct conn **pp;

	serve(c);
	if (c->peer.hold && c->peer.release)
		c->peer.release(c->peer.hold);

	pthread_mutex_lock(&s->lock);
	close(c->fd);
	c->fd = -1;
	for (pp = &s->live; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	c->next = s->finished;
	s->finished = c;
	s->nlive--;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Joins connection threads that have finished. */
static void reap(struct fr_ipc_server *s)
{
	struct conn *list;

	pthread_mutex_lock(&s->lock);
	list = s->finished;
	s->finished = NULL;
	pthread_mutex_unlock(&s->lock);

	while (list) {
		struct conn *next = list->next;

		pthread_join(list->thread, NULL);
		free(list->peer.groups);
		free(list);
		list = next;
	}
}

/* Answers a connection that cannot be served and closes it. The socket is
 * made non-blocking first: the reply is small and the buffer empty, so it
 * fits, and a peer that never reads cannot stall the accept thread. */
static void refuse(int fd, cJSON *resp)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags >= 0)
		fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	reply(fd, resp);
	close(fd);
}

static void accept_one(struct fr_ipc_server *s)
{
	struct timeval snd = {.tv_sec = SEND_TIMEOUT_S};
	struct ucred cred;
	socklen_t credlen = sizeof(cred);
	struct conn *c;
	int fd, ret;

	fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
			return;
		fr_log_ratelimited(FR_LOG_WARN, FR_NS_PER_S, "accept on %s: %s", s->path,
				   strerror(errno));
		/* Out of descriptors or memory: the listening socket stays
		 * readable, so pause rather than spin. */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			struct pollfd pfd = {.fd = s->wake_fd, .events = POLLIN};

			poll(&pfd, 1, 100);
		}
		return;
	}

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credlen) < 0) {
		fr_log_warn("SO_PEERCRED on %s: %s", s->path, strerror(errno));
		refuse(fd, fr_ipc_error("cannot identify the connecting process"));
		return;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof(snd)) < 0) {
		refuse(fd, fr_ipc_error("cannot configure the connection: %s", strerror(errno)));
		return;
	}

	pthread_mutex_lock(&s->lock);
	if (s->nlive >= s->max_clients) {
		pthread_mutex_unlock(&s->lock);
		fr_log_ratelimited(FR_LOG_WARN, FR_NS_PER_S,
				   "refusing client pid %d: too many clients (limit %u)",
				   (int)cred.pid, s->max_clients);
		refuse(fd, fr_ipc_error("too many clients (limit %u)", s->max_clients));
		return;
	}

	c = calloc(1, sizeof(*c));
	if (!c) {
		pthread_mutex_unlock(&s->lock);
		refuse(fd, fr_ipc_error("out of memory in the daemon"));
		return;
	}
	c->server = s;
	c->fd = fd;
	/* The last slot is for status alone (see the top of this file); with
	 * a single slot there is nothing to keep it from. */
	c->status_only = s->max_clients > 1 && s->nlive == s->max_clients - 1;
	c->peer.sock = fd;
	c->peer.pid = cred.pid;
	c->peer.uid = cred.uid;
	c->peer.gid = cred.gid;
	read_peer_groups(fd, &c->peer);

	/* Created under the lock, so the thread cannot finish and unlink
	 * itself before it is on the live list. */
	ret = pthread_create(&c->thread, NULL, conn_main, c);
	if (ret) {
		pthread_mutex_unlock(&s->lock);
		free(c->peer.groups);
		free(c);
		fr_log_ratelimited(FR_LOG_WARN, FR_NS_PER_S, "cannot start a client thread: %s",
				   strerror(ret));
		refuse(fd, fr_ipc_error("the daemon cannot start a thread for this client: %s",
					strerror(ret)));
		return;
	}
	c->next = s->live;
	s->live = c;
	s->nlive++;
	pthread_mutex_unlock(&s->lock);
}

static void *accept_main(void *p)
{
	struct fr_ipc_server *s = p;
	struct pollfd pfd[2] = {
		{.fd = s->listen_fd, .events = POLLIN},
		{.fd = s->wake_fd, .events = POLLIN},
	};

	for (;;) {
		bool stopping;

		pthread_mutex_lock(&s->lock);
		stopping = s->stopping;
		pthread_mutex_unlock(&s->lock);
		if (stopping)
			break;

		reap(s);
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fr_log_err("poll on %s: %s", s->path, strerror(errno));
			break;
		}
		if (pfd[1].revents)
			continue;
		if (pfd[0].revents & POLLIN)
			accept_one(s);
	}
	return NULL;
}

int fr_ipc_server_set_request_deadline(struct fr_ipc_server *s, unsigned seconds)
{
	if (!s || seconds == 0 || s->started)
		return -EINVAL;
	s->request_wait_ns = seconds * FR_NS_PER_S;
	s->request_frame_ns = seconds * 1000000000LL;
	return 0;
}

int fr_ipc_server_start(struct fr_ipc_server *s)
{
	sigset_t all, old;
	int ret;

	if (s->started)
		return -EALREADY;

	/* The server's threads (the connection threads inherit the accept
	 * thread's mask) take no asynchronous signals; those belong to the
	 * daemon's main loop. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&s->accept_thread, NULL, accept_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return -ret;
	s->started = true;
	return 0;
}

void fr_ipc_server_close(struct fr_ipc_server *s)
{
	struct stat st;

	if (!s)
		return;

	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_mutex_unlock(&s->lock);

	if (s->started) {
		uint64_t one = 1;

		if (write(s->wake_fd, &one, sizeof(one)) < 0)
			fr_log_warn("cannot wake the accept thread: %s", strerror(errno));
		pthread_join(s->accept_thread, NULL);
	}

	/* No new connections from here on. Shutting the sockets down makes
	 * blocked receives return at once; a request being handled runs to
	 * its end, its reply fails, and the thread exits. */
	pthread_mutex_lock(&s->lock);
	for (struct conn *c = s->live; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	while (s->nlive > 0)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	reap(s);

	close(s->listen_fd);
	close(s->wake_fd);

	/* Unlink only our own socket: if another daemon has since replaced
	 * the file, it is not ours to remove. */
	if (lstat(s->path, &st) == 0 && st.st_dev == s->sock_dev && st.st_ino == s->sock_ino)
		unlink(s->path);

	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s->path);
	free(s);
}

int fr_ipc_peer_gone(void *peer)
{
	const struct fr_ipc_peer *p = peer;

	/* A client that is done sending shuts nothing down: it waits for the
	 * reply. POLLRDHUP means it closed or shut down its side. */
	return fr_fd_hung_up(p->sock);
}
