/* Who may do what over the socket: one owner for the rights of a peer
 * (the uid and groups the kernel vouches for, struct fr_ipc_peer).
 *
 * Root, the recorder's own user and members of the admin group are
 * privileged: they may see and do everything. A session's "users" may
 * dump and trigger that session. A reload may be asked only by root and
 * the recorder's own user (it changes what the whole machine records,
 * and reads a file only they may edit). Anyone who is not privileged
 * came in through the socket's group and sees only its own processes;
 * the recorder's own user is a private instance.
 */
#ifndef FR_RECORDER_PEER_H
#define FR_RECORDER_PEER_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "ipc/server.h"

/* The rights of the configuration in force, copied from it at start and
 * on each reload (fr_peers_set()), read by any connection's thread. */
struct fr_peers {
	pthread_mutex_t lock;
	int64_t admin_gid; /* -1: no admin group */
	uint32_t nsessions;
	struct fr_peers_session {
		char name[FR_CONFIG_NAME_MAX];
		uint32_t nusers;
		uint32_t users[FR_CONFIG_MAX_USERS];
	} sessions[FR_CONFIG_MAX_SESSIONS];
};

/* The rights of `cfg`, or NULL out of memory. Free with fr_peers_free(),
 * which accepts NULL. */
struct fr_peers *fr_peers_new(const struct fr_config *cfg);
void fr_peers_free(struct fr_peers *p);

/* Takes the rights of `cfg` (a reload); requests asked from now on are
 * judged by them. */
void fr_peers_set(struct fr_peers *p, const struct fr_config *cfg);

/* Whether `peer` may see and do everything: root, the recorder's own
 * user and members of the admin group. */
int fr_peer_privileged(struct fr_peers *p, const struct fr_ipc_peer *peer);

/* Whether `uid` is among the "users" of session `session` (who may dump
 * and trigger it without being privileged). */
int fr_peer_may_dump(struct fr_peers *p, const char *session, uid_t uid);

/* Whether `peer` may reload the configuration: root and the recorder's
 * own user. */
int fr_peer_may_reload(const struct fr_ipc_peer *peer);

#endif
