/* Internal to fr-ipc: what sharing the socket with a group needs besides
 * the socket file itself (fr_ipc_server_share in ipc/server.c).
 */
#ifndef FR_IPC_SHARE_H
#define FR_IPC_SHARE_H

#include <sys/types.h>

/* Lets group `gid` reach the socket at `path`: its directory, when it is
 * the daemon's own (owned by it, mode 0700, holding nothing but the
 * socket), becomes 0710 with group `gid`; every directory from there up
 * to / that the group cannot pass is named in a warning (the
 * administrator's to change). Never fails: the socket works for root
 * either way. */
void fr_ipc_share_dirs(const char *path, gid_t gid);

#endif
