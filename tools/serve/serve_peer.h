/* Who is at the other end of one of flightrec serve's TCP connections.
 *
 * A connection from this machine comes from a socket in the same network
 * namespace, and the kernel knows that socket's owner: NETLINK_SOCK_DIAG
 * looks it up by the exact 4-tuple (the client's address and port, ours),
 * and /proc/net/tcp{,6} lists it with its uid when netlink cannot be used.
 * serve answers a local peer only when that owner is the user running
 * serve or root, so that the page's token, should it leak (a shell
 * history, a screen share), is not enough for another user of the
 * machine. A peer whose socket is not here is remote (only with
 * --allow-remote); a loopback peer is always local, so not finding its
 * socket is an error, and the connection is refused. */
#ifndef FR_TOOLS_SERVE_PEER_H
#define FR_TOOLS_SERVE_PEER_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

struct fr_serve_peer {
	int local; /* 1: the client's socket is on this machine, owned by uid */
	uid_t uid;
	char addr[64]; /* the client's "ADDRESS:PORT", for messages */
};

/* The owner of the TCP socket on this machine whose local end is
 * `client` and whose remote end is `server` (both AF_INET or AF_INET6;
 * v4-mapped IPv6 addresses are looked up as IPv4), by a NETLINK_SOCK_DIAG
 * request for that exact 4-tuple. Only a socket a process holds open
 * counts (established or closing, with a file): a TIME_WAIT entry (a
 * closed client's too) or a listener says uid 0 for anyone.
 * Returns 1 with *uid set, 0 when no such socket is here, or -errno when
 * the kernel could not be asked. */
int fr_serve_peer_uid_diag(const struct sockaddr_storage *client,
			   const struct sockaddr_storage *server, uid_t *uid);

/* The same from /proc/net/tcp and /proc/net/tcp6 (an IPv4 connection may
 * be an IPv6 socket's, listed there with v4-mapped addresses). Returns 1
 * with *uid set, 0 when neither lists it, or -errno when neither could be
 * read. */
int fr_serve_peer_uid_proc(const struct sockaddr_storage *client,
			   const struct sockaddr_storage *server, uid_t *uid);

/* Who is at the other end of the accepted TCP connection `fd`: *p filled,
 * local or not. Asks netlink, then /proc when netlink fails, or finds
 * neither the client's end nor ours (a kernel without sock_diag's TCP
 * handler says "not found" too). Returns 0, or
 * -errno with what failed in why[0..whylen): the addresses of `fd` could
 * not be read, the kernel could not be asked, or a loopback peer's socket
 * was not found (-ENOENT). */
int fr_serve_peer_lookup(int fd, struct fr_serve_peer *p, char *why, size_t whylen);

#endif
