/* Process lifecycle events from the netlink proc connector.
 *
 * One datagram carries one event: a netlink header, a connector header
 * (struct cn_msg, id CN_IDX_PROC/CN_VAL_PROC) and a struct proc_event.
 * The event follows the 20-byte connector header, so it is copied out
 * before use rather than read in place (it is not 8-byte aligned).
 *
 * Subscribing (PROC_CN_MCAST_LISTEN) is answered by the kernel with a
 * PROC_EVENT_NONE message carrying our ack number plus one and an error
 * code (each request uses a fresh number);
 * open waits for it, so a subscription the kernel ignored (a listener
 * outside the initial namespaces) is an error at open, not silence later.
 * Only messages sent by the kernel (netlink port 0) are trusted.
 */
#include "recorder/tracking/procwatch.h"

#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/util/log.h"
#include "core/util/time.h"

/* Events come in bursts (a build forks thousands of processes); a large
 * socket buffer absorbs them while the reader is busy. */
#define RCVBUF_BYTES (4 << 20)
/* Datagrams read per fr_procwatch_read call at most. */
#define READ_BATCH 1024
#define ACK_ROUNDS 4
#define ACK_ROUND_MS 250

struct fr_procwatch {
	int fd;
	uint32_t seq;
	uint64_t overruns;
};

/* A buffer for one datagram, aligned for struct nlmsghdr. */
union msgbuf {
	struct nlmsghdr nh;
	char bytes[8192];
};

static int send_mcast_op(struct fr_procwatch *w, enum proc_cn_mcast_op op)
{
	char buf[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(op))] __attribute__((aligned(8)));
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	struct cn_msg cn;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	uint32_t op32 = op;

	memset(buf, 0, sizeof(buf));
	nh->nlmsg_len = NLMSG_LENGTH(sizeof(cn) + sizeof(op32));
	nh->nlmsg_type = NLMSG_DONE;
	nh->nlmsg_pid = 0;
	memset(&cn, 0, sizeof(cn));
	cn.id.idx = CN_IDX_PROC;
	cn.id.val = CN_VAL_PROC;
	cn.seq = ++w->seq;
	cn.ack = w->seq;
	cn.len = sizeof(op32);
	memcpy(NLMSG_DATA(nh), &cn, sizeof(cn));
	memcpy((char *)NLMSG_DATA(nh) + sizeof(cn), &op32, sizeof(op32));
	if (sendto(w->fd, buf, nh->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	return 0;
}

/* Walks the messages of one datagram of `len` bytes. `ack_err` (when not
 * NULL) receives the error of the kernel's answer to our latest request,
 * and is then set to a value >= 0; events are delivered to `h` (may be
 * NULL: dropped). Returns the number of events delivered. */
static int parse_datagram(struct fr_procwatch *w, union msgbuf *mb, size_t len,
			  const struct fr_procwatch_handler *h, int *ack_err, int *got_ack)
{
	struct nlmsghdr *nh;
	int delivered = 0;

	for (nh = &mb->nh; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
		struct cn_msg cn;
		struct proc_event ev;
		size_t payload, evlen;

		if (nh->nlmsg_type == NLMSG_NOOP || nh->nlmsg_type == NLMSG_ERROR)
			continue;
		payload = NLMSG_PAYLOAD(nh, 0);
		if (payload < sizeof(cn))
			continue;
		memcpy(&cn, NLMSG_DATA(nh), sizeof(cn));
		if (cn.id.idx != CN_IDX_PROC || cn.id.val != CN_VAL_PROC)
			continue;
		evlen = payload - sizeof(cn);
		if (evlen > cn.len)
			evlen = cn.len;
		if (evlen < offsetof(struct proc_event, event_data))
			continue;
		memset(&ev, 0, sizeof(ev));
		memcpy(&ev, (char *)NLMSG_DATA(nh) + sizeof(cn),
		       evlen < sizeof(ev) ? evlen : sizeof(ev));

		switch (ev.what) {
		case PROC_EVENT_NONE:
			/* The answer to a request carries its ack + 1 (its seq
			 * is echoed only by older kernels; newer ones number
			 * every message per CPU). Other listeners' answers
			 * reach us too and are ignored. */
			if (got_ack && cn.ack == w->seq + 1) {
				*ack_err = (int)ev.event_data.ack.err;
				*got_ack = 1;
			}
			break;
		case PROC_EVENT_FORK:
			if (!h || !h->fork)
				break;
			if (ev.event_data.fork.child_pid != ev.event_data.fork.child_tgid)
				break; /* a new thread */
			h->fork(h->arg, (uint32_t)ev.event_data.fork.child_pid,
				(uint32_t)ev.event_data.fork.parent_tgid);
			delivered++;
			break;
		case PROC_EVENT_EXEC:
			if (!h || !h->exec)
				break;
			h->exec(h->arg, (uint32_t)ev.event_data.exec.process_tgid);
			delivered++;
			break;
		case PROC_EVENT_COMM:
			if (!h || !h->comm)
				break;
			if (ev.event_data.comm.process_pid != ev.event_data.comm.process_tgid)
				break; /* a thread renamed itself */
			{
				char comm[17];

				memcpy(comm, ev.event_data.comm.comm, 16);
				comm[16] = '\0';
				h->comm(h->arg, (uint32_t)ev.event_data.comm.process_pid, comm);
			}
			delivered++;
			break;
		case PROC_EVENT_EXIT:
			if (!h || !h->exit)
				break;
			if (ev.event_data.exit.process_pid != ev.event_data.exit.process_tgid)
				break; /* a thread, not the process */
			h->exit(h->arg, (uint32_t)ev.event_data.exit.process_pid,
				(uint32_t)ev.event_data.exit.process_tgid,
				ev.event_data.exit.exit_code, ev.event_data.exit.exit_signal);
			delivered++;
			break;
		default: break;
		}
	}
	return delivered;
}

/* Receives one datagram from the kernel. Returns its length, 0 when none
 * is queued, or -errno (-ENOBUFS: the kernel dropped events). */
static ssize_t recv_one(struct fr_procwatch *w, union msgbuf *mb)
{
	for (;;) {
		struct sockaddr_nl from;
		socklen_t fromlen = sizeof(from);
		ssize_t n;

		memset(&from, 0, sizeof(from));
		n = recvfrom(w->fd, mb, sizeof(*mb), MSG_DONTWAIT, (struct sockaddr *)&from,
			     &fromlen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		if (from.nl_pid != 0)
			continue; /* not the kernel */
		return n;
	}
}

static void count_overrun(struct fr_procwatch *w)
{
	w->overruns++;
	fr_log_ratelimited(FR_LOG_WARN, 10 * FR_NS_PER_S,
			   "proc connector: the kernel dropped process events (reader too slow; "
			   "%llu overruns so far); exits in between were missed",
			   (unsigned long long)w->overruns);
}

/* Waits for the kernel's answer to the LISTEN just sent, asking again
 * when a round passes without one (the answer may be lost in an
 * overrun). Returns the kernel's error as -errno, 0, or -ETIMEDOUT. */
static int wait_ack(struct fr_procwatch *w)
{
	union msgbuf *mb = malloc(sizeof(*mb));
	int ret = -ETIMEDOUT;

	if (!mb)
		return -ENOMEM;
	for (int round = 0; round < ACK_ROUNDS; round++) {
		int64_t end = fr_now_mono_ns() + ACK_ROUND_MS * 1000000LL;

		if (round > 0) {
			ret = send_mcast_op(w, PROC_CN_MCAST_LISTEN);
			if (ret < 0)
				goto out;
			ret = -ETIMEDOUT;
		}
		for (;;) {
			struct pollfd pfd = {.fd = w->fd, .events = POLLIN};
			int64_t left = end - fr_now_mono_ns();
			int got = 0, err = 0;
			ssize_t n;

			if (left <= 0)
				break;
			if (poll(&pfd, 1, (int)(left / 1000000 + 1)) < 0 && errno != EINTR) {
				ret = -errno;
				goto out;
			}
			/* Drain what is there: events before the answer are
			 * dropped, as if the subscription had started later. */
			while ((n = recv_one(w, mb)) != 0) {
				if (n == -ENOBUFS) {
					count_overrun(w);
					continue;
				}
				if (n < 0) {
					ret = (int)n;
					goto out;
				}
				parse_datagram(w, mb, (size_t)n, NULL, &err, &got);
				if (got) {
					ret = err > 0 ? -err : 0;
					goto out;
				}
			}
		}
	}
out:
	free(mb);
	return ret;
}

int fr_procwatch_open(struct fr_procwatch **out, char *err, size_t errlen)
{
	struct sockaddr_nl addr = {.nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC};
	struct fr_procwatch *w;
	int size = RCVBUF_BYTES, ret;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w) {
		fr_set_err(err, errlen, "proc connector: out of memory");
		return -ENOMEM;
	}
	w->seq = (uint32_t)getpid() * 2654435761u ^ (uint32_t)fr_now_mono_ns();
	w->fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	if (w->fd < 0) {
		ret = -errno;
		fr_set_err(err, errlen, "proc connector: not available in this kernel (socket: %s)",
			   fr_errno_name(-ret));
		goto err_free;
	}
	/* SO_RCVBUFFORCE passes the rmem_max limit with CAP_NET_ADMIN, which
	 * listening needs anyway; a smaller buffer only means earlier
	 * overruns. */
	if (setsockopt(w->fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		(void)setsockopt(w->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (bind(w->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		ret = -errno;
		if (ret == -EPERM || ret == -EACCES)
			fr_set_err(err, errlen,
				   "proc connector: listening to process exits needs root "
				   "(CAP_NET_ADMIN) (bind: %s)",
				   fr_errno_name(-ret));
		else
			fr_set_err(err, errlen, "proc connector: cannot subscribe (bind: %s)",
				   fr_errno_name(-ret));
		goto err_close;
	}
	ret = send_mcast_op(w, PROC_CN_MCAST_LISTEN);
	if (ret < 0) {
		fr_set_err(err, errlen, "proc connector: cannot subscribe (send: %s)",
			   fr_errno_name(-ret));
		goto err_close;
	}
	ret = wait_ack(w);
	if (ret == -ETIMEDOUT) {
		fr_set_err(err, errlen,
			   "proc connector: the kernel did not acknowledge the subscription; it "
			   "answers only in the initial pid and user namespaces, and needs "
			   "CONFIG_PROC_EVENTS");
		goto err_close;
	}
	if (ret == -EPERM || ret == -EACCES) {
		fr_set_err(err, errlen,
			   "proc connector: listening to process exits needs root (CAP_NET_ADMIN) "
			   "(the kernel refused: %s)",
			   fr_errno_name(-ret));
		goto err_close;
	}
	if (ret < 0) {
		fr_set_err(err, errlen, "proc connector: the kernel refused the subscription (%s)",
			   fr_errno_name(-ret));
		goto err_close;
	}
	*out = w;
	return 0;

err_close:
	close(w->fd);
err_free:
	free(w);
	return ret;
}

int fr_procwatch_fd(const struct fr_procwatch *w)
{
	return w->fd;
}

int fr_procwatch_read_events(struct fr_procwatch *w, const struct fr_procwatch_handler *h)
{
	union msgbuf mb;
	int delivered = 0;

	for (int i = 0; i < READ_BATCH; i++) {
		ssize_t n = recv_one(w, &mb);

		if (n == 0)
			break;
		if (n == -ENOBUFS) {
			count_overrun(w);
			continue;
		}
		if (n < 0)
			return (int)n;
		delivered += parse_datagram(w, &mb, (size_t)n, h, NULL, NULL);
	}
	return delivered;
}

uint64_t fr_procwatch_overruns(const struct fr_procwatch *w)
{
	return w->overruns;
}

void fr_procwatch_close(struct fr_procwatch *w)
{
	if (!w)
		return;
	/* Without this the kernel keeps counting a listener and formatting
	 * events for nobody (until the socket's release, on newer kernels). */
	(void)send_mcast_op(w, PROC_CN_MCAST_IGNORE);
	close(w->fd);
	free(w);
}
