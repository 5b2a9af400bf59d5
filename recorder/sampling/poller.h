/* A registry of descriptors to poll, each with what to call when it is
 * ready: the ingest thread's event loop, without positions in an array
 * that break when someone adds a descriptor.
 *
 * Descriptors may be added and removed at any time, also from inside a
 * callback: a removed descriptor is never called back again (not even in
 * the round that removed it), an added one from the next round on.
 * Single-threaded: one thread owns a poller.
 */
#ifndef FR_RECORDER_POLLER_H
#define FR_RECORDER_POLLER_H

/* One registered descriptor: `fn` is called with `fd` as registered, the
 * revents poll reported and `ctx`. */
struct fr_poller_entry {
	int fd;
	short events;
	void (*fn)(int fd, short revents, void *ctx); /* NULL: it only wakes the poll */
	void *ctx;
	short revents; /* of the current round */
};

struct fr_poller {
	struct fr_poller_entry *entries;
	unsigned n, cap;
	struct pollfd *pfds; /* rebuilt when `dirty` */
	unsigned npfds;
	int dirty;
};

/* Pair with fr_poller_fini(). */
void fr_poller_init(struct fr_poller *p);
void fr_poller_fini(struct fr_poller *p);

/* Registers `fd` for `events` (POLLIN...). `fn` (may be NULL) runs with
 * `ctx` when poll reports it. An fd is registered at most once. Returns 0,
 * -EEXIST when `fd` is registered already, or -ENOMEM. */
int fr_poller_add(struct fr_poller *p, int fd, short events,
		  void (*fn)(int fd, short revents, void *ctx), void *ctx);

/* Forgets `fd` (before it is closed). Returns 0, or -ENOENT when it is not
 * registered. */
int fr_poller_remove(struct fr_poller *p, int fd);

/* The number of registered descriptors. */
unsigned fr_poller_count(const struct fr_poller *p);

/* Polls every registered descriptor for up to `timeout_ms` (-1: no limit),
 * then calls back those that are ready, in the order they were added.
 * Returns the number of ready descriptors (0 on timeout or EINTR), or
 * -errno (-ENOMEM when the poll set cannot be built). */
int fr_poller_poll(struct fr_poller *p, int timeout_ms);

#endif
