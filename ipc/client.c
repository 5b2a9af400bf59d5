/* The client side of the control socket: where the daemon listens, how to
 * connect, and one request/response exchange.
 *
 * A call blocks until the daemon answers; the receive timeout is generous
 * (RECV_TIMEOUT_S) because building the profile of a long window on a busy
 * machine can take a while, yet a hung daemon must not hang the CLI forever.
 */
#include "ipc/client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include "ipc/paths.h"
#include "ipc/proto.h"

#define RECV_TIMEOUT_S 120

char *fr_ipc_client_socket_path(void)
{
	const char *env = getenv("FLIGHTREC_SOCKET");

	if (env && env[0])
		return strdup(env);
	return fr_ipc_default_socket();
}

int fr_ipc_connect(const char *path)
{
	struct sockaddr_un addr;
	struct timeval tv = {.tv_sec = RECV_TIMEOUT_S};
	size_t len = strlen(path);
	int fd, ret;

	if (len == 0 || len >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, path, len + 1);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* An interrupted connect on a Unix socket has not started anything
	 * (there is no handshake in flight), so it is simply retried. */
	do {
		ret = connect(fd, (const struct sockaddr *)&addr, sizeof(addr));
	} while (ret < 0 && errno == EINTR);
	if (ret < 0) {
		ret = -errno;
		goto err;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		ret = -errno;
		goto err;
	}
	return fd;

err:
	close(fd);
	return ret;
}

int fr_ipc_call_text(int sock, cJSON *req, int pass_fd, cJSON **resp, char **text)
{
	const cJSON *ok, *v;
	cJSON *obj = NULL;
	char *frame = NULL;
	size_t len;
	int ret;

	*resp = NULL;
	if (text)
		*text = NULL;
	cJSON_DeleteItemFromObjectCaseSensitive(req, "v");
	if (!cJSON_AddNumberToObject(req, "v", FR_IPC_VERSION))
		return -ENOMEM;

	ret = fr_ipc_send_json(sock, req, pass_fd);
	if (ret < 0)
		return ret == -EPIPE ? -ECONNRESET : ret;
	ret = fr_ipc_recv(sock, &frame, &len, NULL);
	if (ret < 0)
		return ret;
	ret = fr_ipc_parse_json(frame, len, &obj);
	if (ret < 0) {
		free(frame);
		return ret;
	}
	if (text)
		*text = frame;
	else
		free(frame);

	/* A daemon speaking another protocol version says so, naming its
	 * own version in "v"; the caller gets the response for its message. */
	ok = cJSON_GetObjectItemCaseSensitive(obj, "ok");
	v = cJSON_GetObjectItemCaseSensitive(obj, "v");
	*resp = obj;
	if (cJSON_IsFalse(ok) && cJSON_IsNumber(v) && v->valuedouble != FR_IPC_VERSION)
		return -EPROTO;
	return 0;
}

int fr_ipc_call(int sock, cJSON *req, int pass_fd, cJSON **resp)
{
	return fr_ipc_call_text(sock, req, pass_fd, resp, NULL);
}
