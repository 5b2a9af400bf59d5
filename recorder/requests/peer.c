/* The rights of a peer (recorder/requests/peer.h). A copy of what the
 * configuration says, under a lock of its own, so that judging a request
 * never waits for a reload or a dump holding the configuration.
 */
#include "recorder/requests/peer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util/priority.h"

struct fr_peers *fr_peers_new(const struct fr_config *cfg)
{
	struct fr_peers *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (fr_mutex_init_pi(&p->lock) != 0) {
		free(p);
		return NULL;
	}
	fr_peers_set(p, cfg);
	return p;
}

void fr_peers_free(struct fr_peers *p)
{
	if (!p)
		return;
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void fr_peers_set(struct fr_peers *p, const struct fr_config *cfg)
{
	pthread_mutex_lock(&p->lock);
	p->admin_gid = cfg->has_admin_group ? (int64_t)cfg->admin_gid : -1;
	p->nsessions = cfg->nsessions;
	for (uint32_t i = 0; i < cfg->nsessions; i++) {
		const struct fr_config_session *s = &cfg->sessions[i];
		struct fr_peers_session *c = &p->sessions[i];

		snprintf(c->name, sizeof(c->name), "%s", s->name);
		c->nusers = s->nusers;
		memcpy(c->users, s->users, s->nusers * sizeof(s->users[0]));
	}
	pthread_mutex_unlock(&p->lock);
}

int fr_peer_privileged(struct fr_peers *p, const struct fr_ipc_peer *peer)
{
	int64_t admin;

	if (peer->uid == 0 || peer->uid == geteuid())
		return 1;
	pthread_mutex_lock(&p->lock);
	admin = p->admin_gid;
	pthread_mutex_unlock(&p->lock);
	return admin >= 0 && fr_ipc_peer_in_group(peer, (gid_t)admin);
}

int fr_peer_may_dump(struct fr_peers *p, const char *session, uid_t uid)
{
	int ok = 0;

	pthread_mutex_lock(&p->lock);
	for (uint32_t i = 0; i < p->nsessions; i++) {
		const struct fr_peers_session *s = &p->sessions[i];

		if (strcmp(s->name, session) != 0)
			continue;
		for (uint32_t k = 0; k < s->nusers; k++)
			if (s->users[k] == (uint32_t)uid)
				ok = 1;
	}
	pthread_mutex_unlock(&p->lock);
	return ok;
}

int fr_peer_may_reload(const struct fr_ipc_peer *peer)
{
	return peer->uid == 0 || peer->uid == geteuid();
}
