/* The ingest thread's poll set (see recorder/sampling/poller.h).
 *
 * Entries live in an array in the order they were added; the pollfd array
 * handed to poll(2) is rebuilt from it only after a change. A callback may
 * add or remove entries: removal marks the entry (fd -1) and the array is
 * compacted after the round, so the indices a round walks stay valid.
 */
#include "recorder/sampling/poller.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/grow.h"

void fr_poller_init(struct fr_poller *p)
{
	memset(p, 0, sizeof(*p));
}

void fr_poller_fini(struct fr_poller *p)
{
	free(p->entries);
	free(p->pfds);
	memset(p, 0, sizeof(*p));
}

static struct fr_poller_entry *find(struct fr_poller *p, int fd)
{
	for (unsigned i = 0; i < p->n; i++)
		if (p->entries[i].fd == fd)
			return &p->entries[i];
	return NULL;
}

int fr_poller_add(struct fr_poller *p, int fd, short events,
		  void (*fn)(int fd, short revents, void *ctx), void *ctx)
{
	if (fd < 0)
		return -EBADF;
	if (find(p, fd))
		return -EEXIST;
	if (FR_GROW(p->entries, &p->cap, p->n + 1, 16) < 0)
		return -ENOMEM;
	p->entries[p->n++] =
		(struct fr_poller_entry){.fd = fd, .events = events, .fn = fn, .ctx = ctx};
	p->dirty = 1;
	return 0;
}

int fr_poller_remove(struct fr_poller *p, int fd)
{
	struct fr_poller_entry *e = fd >= 0 ? find(p, fd) : NULL;

	if (!e)
		return -ENOENT;
	/* Compacted after the round (or before the next poll). */
	e->fd = -1;
	e->revents = 0;
	p->dirty = 1;
	return 0;
}

unsigned fr_poller_count(const struct fr_poller *p)
{
	unsigned n = 0;

	for (unsigned i = 0; i < p->n; i++)
		n += p->entries[i].fd >= 0;
	return n;
}

static void compact(struct fr_poller *p)
{
	unsigned k = 0;

	for (unsigned i = 0; i < p->n; i++)
		if (p->entries[i].fd >= 0)
			p->entries[k++] = p->entries[i];
	p->n = k;
}

/* Rebuilds the pollfd array from the entries. Returns 0 or -ENOMEM. */
static int rebuild(struct fr_poller *p)
{
	struct pollfd *pfds;

	compact(p);
	pfds = calloc(p->n ? p->n : 1, sizeof(*pfds));
	if (!pfds)
		return -ENOMEM;
	for (unsigned i = 0; i < p->n; i++)
		pfds[i] = (struct pollfd){.fd = p->entries[i].fd, .events = p->entries[i].events};
	free(p->pfds);
	p->pfds = pfds;
	p->npfds = p->n;
	p->dirty = 0;
	return 0;
}

int fr_poller_poll(struct fr_poller *p, int timeout_ms)
{
	unsigned n;
	int ready;

	if (p->dirty && rebuild(p) < 0)
		return -ENOMEM;
	ready = poll(p->pfds, (nfds_t)p->npfds, timeout_ms);
	if (ready < 0)
		return errno == EINTR ? 0 : -errno;
	/* After a rebuild the entries and the pollfds match one to one. */
	for (unsigned i = 0; i < p->npfds; i++)
		p->entries[i].revents = p->pfds[i].revents;
	/* Entries added by a callback are past `n` and wait for the next
	 * round; removed ones have fd -1 and are skipped. */
	n = p->npfds;
	for (unsigned i = 0; i < n; i++) {
		struct fr_poller_entry e = p->entries[i];

		if (e.fd < 0 || !e.revents || !e.fn)
			continue;
		p->entries[i].revents = 0;
		e.fn(e.fd, e.revents, e.ctx);
	}
	if (p->dirty)
		compact(p);
	return ready;
}
