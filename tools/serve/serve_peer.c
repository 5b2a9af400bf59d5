/* The owner of a serve connection's client socket (serve_peer.h): the
 * kernel's own record of it, asked two ways. Both look for the socket
 * whose local end is the client's address and port and whose remote end
 * is ours; an exact 4-tuple names one socket at most. Neither trusts
 * anything the client sent: the addresses are the kernel's (getpeername,
 * getsockname), and so is the uid (the socket's creator, which only root
 * can change). */
#include "tools/serve/serve_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

/* Whether a socket in TCP state `state`, whose file is inode `inode`, is
 * a socket some process holds open, with its owner: established or
 * closing, with a file. A TIME_WAIT entry (also one of a closed socket
 * still in FIN_WAIT2), a request socket or a listener are reported with
 * uid 0 or another socket's uid; a client that closed its socket cannot
 * read an answer anyway. */
static int open_socket(unsigned state, unsigned long inode)
{
	if (!inode)
		return 0;
	switch (state) {
	case TCP_ESTABLISHED:
	case TCP_FIN_WAIT1:
	case TCP_FIN_WAIT2:
	case TCP_CLOSE_WAIT:
	case TCP_LAST_ACK:
	case TCP_CLOSING: return 1;
	default: return 0;
	}
}

/* *out is `in`, with a v4-mapped IPv6 address made IPv4: a client of a
 * server listening on "::" that connected to 127.0.0.1. */
static void normalise(const struct sockaddr_storage *in, struct sockaddr_storage *out)
{
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)in;
	struct sockaddr_in *o4 = (struct sockaddr_in *)out;

	*out = *in;
	if (in->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
		return;
	memset(out, 0, sizeof(*out));
	o4->sin_family = AF_INET;
	o4->sin_port = in6->sin6_port;
	memcpy(&o4->sin_addr, &in6->sin6_addr.s6_addr[12], 4);
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
					: ((const struct sockaddr_in6 *)ss)->sin6_port;
}

/* The address as inet_diag's four big-endian words. */
static void diag_addr(const struct sockaddr_storage *ss, __be32 out[4])
{
	memset(out, 0, 4 * sizeof(out[0]));
	if (ss->ss_family == AF_INET)
		memcpy(out, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	else
		memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
}

/* Whether an address of a reply is `want` (inet_diag's words of the
 * request's `family`): an IPv6 socket connected to an IPv4 address is
 * reported as IPv6, with its v4-mapped addresses. */
static int same_addr(int rfamily, const __be32 *got, int family, const __be32 *want)
{
	static const unsigned char mapped[12] = {[10] = 0xff, [11] = 0xff};

	if (rfamily == family)
		return memcmp(got, want, family == AF_INET ? 4 : 16) == 0;
	return rfamily == AF_INET6 && family == AF_INET && memcmp(got, mapped, 12) == 0 &&
	       memcmp(&got[3], want, 4) == 0;
}

/* Whether the reply `m` is about the socket asked for in `id`. */
static int same_socket(const struct inet_diag_msg *m, const struct inet_diag_sockid *id, int family)
{
	return m->id.idiag_sport == id->idiag_sport && m->id.idiag_dport == id->idiag_dport &&
	       same_addr(m->idiag_family, m->id.idiag_src, family, id->idiag_src) &&
	       same_addr(m->idiag_family, m->id.idiag_dst, family, id->idiag_dst);
}

/* Reads the answer to request `seq` on the netlink socket `fd`. */
static int diag_answer(int fd, uint32_t seq, const struct inet_diag_sockid *id, int family,
		       uid_t *uid)
{
	union {
		struct nlmsghdr nlh;
		char buf[8192];
	} u;
	ssize_t n = recv(fd, u.buf, sizeof(u.buf), 0);

	if (n < 0)
		return -errno;
	for (struct nlmsghdr *h = &u.nlh; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_seq != seq)
			continue;
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
				return -EBADMSG;
			/* The kernel has no such socket (or no TCP handler:
			 * the caller asks /proc then). */
			return e->error == -ENOENT ? 0 : e->error < 0 ? e->error : -EBADMSG;
		}
		if (h->nlmsg_type == NLMSG_DONE)
			return 0;
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);

			if (!same_socket(m, id, family) ||
			    !open_socket(m->idiag_state, m->idiag_inode))
				return 0;
			*uid = (uid_t)m->idiag_uid;
			return 1;
		}
	}
	return -EBADMSG;
}

int fr_serve_peer_uid_diag(const struct sockaddr_storage *client,
			   const struct sockaddr_storage *server, uid_t *uid)
{
	static uint32_t seq_counter; /* atomic */
	struct sockaddr_storage c, s;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	struct timeval tv = {.tv_sec = 1};
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} msg;
	int fd, ret;

	normalise(client, &c);
	normalise(server, &s);
	if (c.ss_family != s.ss_family || (c.ss_family != AF_INET && c.ss_family != AF_INET6))
		return -EAFNOSUPPORT;
	memset(&msg, 0, sizeof(msg));
	msg.nlh.nlmsg_len = sizeof(msg);
	msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.nlh.nlmsg_flags = NLM_F_REQUEST; /* one socket, not a dump */
	msg.nlh.nlmsg_seq = __atomic_add_fetch(&seq_counter, 1, __ATOMIC_RELAXED);
	msg.req.sdiag_family = (uint8_t)c.ss_family;
	msg.req.sdiag_protocol = IPPROTO_TCP;
	msg.req.idiag_states = ~0u; /* the state is checked on the answer */
	/* The client's socket: its local end first (inet_diag's "src"). */
	msg.req.id.idiag_sport = port_of(&c);
	msg.req.id.idiag_dport = port_of(&s);
	diag_addr(&c, msg.req.id.idiag_src);
	diag_addr(&s, msg.req.id.idiag_dst);
	msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	/* The kernel answers within the send; the timeout is a backstop. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(fd, &msg, sizeof(msg), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		ret = -errno;
	else
		ret = diag_answer(fd, msg.nlh.nlmsg_seq, &msg.req.id, c.ss_family, uid);
	close(fd);
	return ret;
}

/* The address and port as /proc/net/tcp{,6} print them: each 32-bit word
 * of the address in network order read as a host integer, "%08X", then
 * ":%04X" of the port. With `mapped`, an IPv4 address as tcp6 lists a
 * v4-mapped one. */
static void proc_addr(const struct sockaddr_storage *ss, int mapped, char *out, size_t outlen)
{
	uint32_t w[4];
	size_t n = 0;

	if (ss->ss_family == AF_INET && !mapped) {
		memcpy(w, &((const struct sockaddr_in *)ss)->sin_addr, 4);
		snprintf(out, outlen, "%08X:%04X", w[0], ntohs(port_of(ss)));
		return;
	}
	if (ss->ss_family == AF_INET) {
		struct in6_addr a = {.s6_addr = {[10] = 0xff, [11] = 0xff}};

		memcpy(&a.s6_addr[12], &((const struct sockaddr_in *)ss)->sin_addr, 4);
		memcpy(w, &a, 16);
	} else {
		memcpy(w, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	}
	for (int i = 0; i < 4; i++)
		n += (size_t)snprintf(out + n, outlen - n, "%08X", w[i]);
	snprintf(out + n, outlen - n, ":%04X", ntohs(port_of(ss)));
}

/* Looks for the line of `file` with local end `local` and remote end
 * `rem`. Returns 1 with *uid, 0 when there is none, or -errno. */
static int proc_find(const char *file, const char *local, const char *rem, uid_t *uid)
{
	FILE *f = fopen(file, "re");
	char *line = NULL, l[64], r[64];
	size_t cap = 0;
	unsigned state, u;
	unsigned long inode;
	int ret = 0;

	if (!f)
		return -errno;
	/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode ... */
	while (ret == 0 && getline(&line, &cap, f) > 0) {
		if (sscanf(line, " %*u: %63[0-9A-F:] %63[0-9A-F:] %x %*s %*s %*s %u %*d %lu", l, r,
			   &state, &u, &inode) != 5)
			continue;
		if (strcmp(l, local) == 0 && strcmp(r, rem) == 0 && open_socket(state, inode)) {
			*uid = (uid_t)u;
			ret = 1;
		}
	}
	free(line);
	fclose(f);
	return ret;
}

int fr_serve_peer_uid_proc(const struct sockaddr_storage *client,
			   const struct sockaddr_storage *server, uid_t *uid)
{
	struct sockaddr_storage c, s;
	char local[64], rem[64];
	int r4 = 0, r6;

	normalise(client, &c);
	normalise(server, &s);
	if (c.ss_family != s.ss_family || (c.ss_family != AF_INET && c.ss_family != AF_INET6))
		return -EAFNOSUPPORT;
	if (c.ss_family == AF_INET) {
		proc_addr(&c, 0, local, sizeof(local));
		proc_addr(&s, 0, rem, sizeof(rem));
		if ((r4 = proc_find("/proc/net/tcp", local, rem, uid)) == 1)
			return 1;
	}
	proc_addr(&c, 1, local, sizeof(local));
	proc_addr(&s, 1, rem, sizeof(rem));
	r6 = proc_find("/proc/net/tcp6", local, rem, uid);
	if (r6 == 1)
		return 1;
	/* Not found where it could be looked for; an error only if neither
	 * file could be read (tcp6 is absent without IPv6). */
	return r4 == 0 || r6 == 0 ? 0 : r4 < 0 ? r4 : r6;
}

static int is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

static void format_addr(const struct sockaddr_storage *ss, char *out, size_t outlen)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, a, sizeof(a));
		snprintf(out, outlen, "%s:%u", a, ntohs(port_of(ss)));
	} else {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, a, sizeof(a));
		snprintf(out, outlen, "[%s]:%u", a, ntohs(port_of(ss)));
	}
}

/* Whether sock_diag's "not found" (d == 0) for the client's end of a
 * connection is an answer: the kernel also says ENOENT when it has no TCP
 * handler for sock_diag. Our own end of the same connection surely
 * exists: found, the kernel can be asked, and /proc need not be read (a
 * remote client's every connection would read all of /proc/net/tcp,
 * megabytes on a busy server). */
static int diag_says_none(int d, const struct sockaddr_storage *peer,
			  const struct sockaddr_storage *local)
{
	uid_t ours;

	return d == 0 && fr_serve_peer_uid_diag(local, peer, &ours) == 1;
}

int fr_serve_peer_lookup(int fd, struct fr_serve_peer *p, char *why, size_t whylen)
{
	struct sockaddr_storage peer, local, c;
	socklen_t plen = sizeof(peer), llen = sizeof(local);
	int d, f;

	memset(p, 0, sizeof(*p));
	snprintf(p->addr, sizeof(p->addr), "?");
	if (getpeername(fd, (struct sockaddr *)&peer, &plen) < 0 ||
	    getsockname(fd, (struct sockaddr *)&local, &llen) < 0) {
		int err = errno;

		snprintf(why, whylen, "its addresses cannot be read: %s", strerror(err));
		return -err;
	}
	normalise(&peer, &c);
	format_addr(&c, p->addr, sizeof(p->addr));
	d = fr_serve_peer_uid_diag(&peer, &local, &p->uid);
	f = d == 1			       ? 1
	    : diag_says_none(d, &peer, &local) ? 0
					       : fr_serve_peer_uid_proc(&peer, &local, &p->uid);
	if (d == 1 || f == 1) {
		p->local = 1;
		return 0;
	}
	if (d < 0 && f < 0) {
		snprintf(why, whylen,
			 "its owner cannot be learnt: sock_diag: %s; /proc/net/tcp: %s",
			 strerror(-d), strerror(-f));
		return d;
	}
	if (is_loopback(&c)) {
		snprintf(why, whylen,
			 "its socket is neither in sock_diag's answer nor in /proc/net/tcp, "
			 "so its owner cannot be learnt");
		return -ENOENT;
	}
	return 0; /* a peer on another machine (or network namespace) */
}
