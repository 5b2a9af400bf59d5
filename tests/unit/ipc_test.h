/* Shared by the IPC unit tests (test_ipc.c, test_ipc_server.c): writing
 * raw bytes to a socket, reading reply members, sleeping. */
#ifndef FR_TESTS_IPC_TEST_H
#define FR_TESTS_IPC_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

static inline void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n <= 0) {
			perror("write");
			exit(1);
		}
		p += n;
		len -= (size_t)n;
	}
}

static inline const char *str_field(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

static inline int is_ok(const cJSON *obj)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "ok"));
}

static inline void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

#endif
