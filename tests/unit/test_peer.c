/* Who may do what over the socket (recorder/requests/peer.h), built from
 * its own source without a recorder: the rights of a configuration, the
 * same after a reload changed them, for peers as the socket's server
 * reads them from the kernel (uid, groups).
 *
 * What a user relies on: root and the recorder's own user see and do
 * everything; a member of the admin group does, through a supplementary
 * group too; anyone else only dumps the sessions that name them; a reload
 * is for root and the recorder's own user alone; a reload that drops the
 * admin group or a session's user takes their rights away at once.
 */
#include "recorder/requests/peer.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/check.h"

/* A user and a group this test is not (the recorder's own user is). */
#define USER 4101
#define OTHER 4102
#define ADMIN 4201

static void parse(struct fr_config *cfg, const char *json)
{
	char err[512];

	if (fr_config_parse(cfg, json, strlen(json), "test", err, sizeof(err)) < 0) {
		fprintf(stderr, "config %s: %s\n", json, err);
		_exit(1);
	}
}

int main(void)
{
	struct fr_config before, after;
	gid_t groups[2] = {77, ADMIN};
	struct fr_ipc_peer root = {.uid = 0, .gid = 0}, self = {.uid = geteuid(), .gid = getegid()};
	struct fr_ipc_peer admin = {.uid = OTHER, .gid = ADMIN};
	struct fr_ipc_peer admin_sup = {.uid = OTHER, .gid = 77, .groups = groups, .ngroups = 2};
	struct fr_ipc_peer user = {.uid = USER, .gid = USER}, other = {.uid = OTHER, .gid = OTHER};
	struct fr_peers *p;

	if (geteuid() == USER || geteuid() == OTHER)
		return 77;
	parse(&before,
	      "{\"socket\": {\"path\": \"/tmp/x.sock\", \"admin_group\": 4201},"
	      " \"sessions\": [{\"name\": \"always\", \"events\": [{\"event\": \"cpu\"}]},"
	      " {\"name\": \"team\", \"users\": [\"4101\"], \"events\": [{\"event\": \"cpu\"}]}]}");
	parse(&after, "{\"sessions\": [{\"name\": \"team\", \"users\": [\"4102\"],"
		      " \"events\": [{\"event\": \"cpu\"}]}]}");
	p = fr_peers_new(&before);
	if (!p)
		return 1;

	CHECK(fr_peer_privileged(p, &root) && fr_peer_privileged(p, &self), "root, own user");
	CHECK(fr_peer_privileged(p, &admin), "the admin group as primary group");
	CHECK(fr_peer_privileged(p, &admin_sup), "the admin group as supplementary group");
	CHECK(!fr_peer_privileged(p, &user) && !fr_peer_privileged(p, &other), "anyone else");
	CHECK(fr_peer_may_dump(p, "team", USER), "a session's user");
	CHECK(!fr_peer_may_dump(p, "always", USER), "a user of another session");
	CHECK(!fr_peer_may_dump(p, "team", OTHER), "a user no session names");
	CHECK(!fr_peer_may_dump(p, "nosuch", USER), "a session that does not exist");
	CHECK(fr_peer_may_reload(&root) && fr_peer_may_reload(&self), "reload: root, own user");
	CHECK(!fr_peer_may_reload(&admin) && !fr_peer_may_reload(&user), "reload: anyone else");

	/* A reload without the admin group, the session's users changed. */
	fr_peers_set(p, &after);
	CHECK(!fr_peer_privileged(p, &admin) && !fr_peer_privileged(p, &admin_sup),
	      "the admin group kept its rights after the reload removed it");
	CHECK(fr_peer_privileged(p, &root) && fr_peer_privileged(p, &self), "root after reload");
	CHECK(!fr_peer_may_dump(p, "team", USER), "a user the reload removed");
	CHECK(fr_peer_may_dump(p, "team", OTHER), "a user the reload added");
	CHECK(!fr_peer_may_dump(p, "always", OTHER), "a session the reload removed");

	fr_peers_free(p);
	fr_peers_free(NULL);
	fr_config_fini(&before);
	fr_config_fini(&after);
	return failures ? 1 : 0;
}
