/* The ingest thread's poller, on real pipes and eventfds: a ready
 * descriptor calls back its own callback with its context, in the order
 * registered; one that is not ready is not called; a descriptor removed
 * by an earlier callback of the same round is not called; one added by a
 * callback is polled from the next round; duplicates and unknown fds are
 * refused; a timeout reports nothing. */
#include "recorder/sampling/poller.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "tests/unit/check.h"

struct rec {
	int calls[8];
	int order[8];
	int norder;
	struct fr_poller *p;
	int victim;   /* fd the first callback removes, or -1 */
	int newcomer; /* fd the first callback adds, or -1 */
};

struct ctx {
	struct rec *rec;
	int id;
};

static void on_ready(int fd, short revents, void *arg)
{
	struct ctx *c = arg;
	struct rec *r = c->rec;
	uint64_t v;
	char buf[16];

	(void)revents;
	r->calls[c->id]++;
	if (r->norder < 8)
		r->order[r->norder++] = c->id;
	/* Consume what made it ready, so it is not ready next round. */
	if (read(fd, &v, sizeof(v)) < 0)
		(void)!read(fd, buf, sizeof(buf));
	if (r->victim >= 0) {
		CHECK(fr_poller_remove(r->p, r->victim) == 0, "remove in a callback");
		r->victim = -1;
	}
	if (r->newcomer >= 0) {
		static struct ctx late;

		late = (struct ctx){.rec = r, .id = 7};
		CHECK(fr_poller_add(r->p, r->newcomer, POLLIN, on_ready, &late) == 0,
		      "add in a callback");
		r->newcomer = -1;
	}
}

static void poke(int efd)
{
	uint64_t one = 1;

	CHECK(write(efd, &one, sizeof(one)) == sizeof(one), "write eventfd");
}

int main(void)
{
	struct fr_poller p;
	struct rec r;
	struct ctx c[4];
	int efd[3], pipefd[2], late_efd, ret;

	memset(&r, 0, sizeof(r));
	r.p = &p;
	r.victim = r.newcomer = -1;
	fr_poller_init(&p);
	for (int i = 0; i < 3; i++) {
		efd[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		CHECK(efd[i] >= 0, "eventfd");
	}
	late_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	CHECK(pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) == 0, "pipe");
	for (int i = 0; i < 4; i++)
		c[i] = (struct ctx){.rec = &r, .id = i};
	CHECK(fr_poller_add(&p, efd[0], POLLIN, on_ready, &c[0]) == 0, "add 0");
	CHECK(fr_poller_add(&p, efd[1], POLLIN, on_ready, &c[1]) == 0, "add 1");
	CHECK(fr_poller_add(&p, pipefd[0], POLLIN, on_ready, &c[2]) == 0, "add pipe");
	CHECK(fr_poller_add(&p, efd[2], POLLIN, NULL, NULL) == 0, "add a wake-only fd");
	CHECK(fr_poller_add(&p, efd[1], POLLIN, on_ready, &c[3]) == -EEXIST, "duplicate");
	CHECK(fr_poller_remove(&p, 12345) == -ENOENT, "remove unknown");
	CHECK(fr_poller_count(&p) == 4, "count %u", fr_poller_count(&p));

	/* Nothing ready: a timeout. */
	ret = fr_poller_poll(&p, 0);
	CHECK(ret == 0, "idle poll returned %d", ret);
	CHECK(r.norder == 0, "idle poll called back %d times", r.norder);

	/* The pipe and the second eventfd: called in the order added. */
	CHECK(write(pipefd[1], "x", 1) == 1, "write pipe");
	poke(efd[1]);
	ret = fr_poller_poll(&p, 1000);
	CHECK(ret == 2, "two ready, poll returned %d", ret);
	CHECK(r.norder == 2 && r.order[0] == 1 && r.order[1] == 2, "order %d: %d %d", r.norder,
	      r.order[0], r.order[1]);
	CHECK(r.calls[0] == 0, "efd 0 was not ready but was called");

	/* A wake-only descriptor wakes the poll and calls nothing. */
	r.norder = 0;
	poke(efd[2]);
	ret = fr_poller_poll(&p, 1000);
	CHECK(ret == 1 && r.norder == 0, "wake-only: %d ready, %d calls", ret, r.norder);
	CHECK(fr_poller_remove(&p, efd[2]) == 0, "remove wake-only");

	/* The first callback removes the pipe (ready in the same round) and
	 * adds another eventfd (ready too): neither is called this round. */
	r.norder = 0;
	r.victim = pipefd[0];
	r.newcomer = late_efd;
	poke(efd[0]);
	CHECK(write(pipefd[1], "y", 1) == 1, "write pipe");
	poke(late_efd);
	ret = fr_poller_poll(&p, 1000);
	CHECK(r.norder == 1 && r.order[0] == 0, "after removal: %d calls, first %d", r.norder,
	      r.order[0]);
	CHECK(r.calls[2] == 1, "removed pipe called %d times", r.calls[2]);
	CHECK(fr_poller_count(&p) == 3, "count after changes %u", fr_poller_count(&p));

	/* The newcomer is polled from the next round on. */
	r.norder = 0;
	ret = fr_poller_poll(&p, 1000);
	CHECK(ret == 1 && r.norder == 1 && r.order[0] == 7, "newcomer: %d ready, %d calls, id %d",
	      ret, r.norder, r.order[0]);

	fr_poller_fini(&p);
	for (int i = 0; i < 3; i++)
		close(efd[i]);
	close(late_efd);
	close(pipefd[0]);
	close(pipefd[1]);
	return failures ? 1 : 0;
}
