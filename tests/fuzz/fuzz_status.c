/* Fuzz target for the decoders of the larger replies (ipc/msg_status.h,
 * ipc/msg_sidecar.h): the input is one frame's text, as the CLI receives
 * a status or sessions reply, or as a script reads a dump's sidecar.
 *
 * Each decoder returns 0 or -EINVAL with a message. What it accepted
 * encodes to text that decodes again, and encoding that gives the same
 * text: a reply the CLI prints with --json is the reply it read.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/util/log.h"
#include "ipc/msg_sidecar.h"
#include "ipc/msg_status.h"
#include "ipc/proto.h"

/* Checks one decoder's result: -EINVAL comes with a message. */
static int decoded(int ret, const char *err, const char *what)
{
	FUZZ_CHECK(ret == 0 || ret == -EINVAL, "%s decoder returned %d", what, ret);
	FUZZ_CHECK(ret == 0 || err[0], "%s decoder refused without a message", what);
	return ret == 0;
}

/* The text of `obj` (freed), parsed back as the peer would read it. */
static char *text_of(cJSON *obj, const char *what)
{
	char *text;

	FUZZ_CHECK(obj, "%s: encoding a decoded reply failed", what);
	text = cJSON_PrintUnformatted(obj);
	cJSON_Delete(obj);
	FUZZ_CHECK(text, "%s: printing an encoded reply failed", what);
	return text;
}

static cJSON *parse(const char *text, const char *what)
{
	cJSON *obj = NULL;

	FUZZ_CHECK(fr_ipc_parse_json(text, strlen(text), &obj) == 0,
		   "%s: an encoded reply does not parse: %s", what, text);
	return obj;
}

static void status(const cJSON *obj)
{
	static struct fr_ipc_status_reply r, r2;
	char err[512] = "", *a, *b;
	cJSON *back;

	if (!decoded(fr_ipc_status_reply_decode(obj, &r, err, sizeof(err)), err, "status"))
		return;
	a = text_of(fr_ipc_status_reply_encode(&r), "status");
	back = parse(a, "status");
	FUZZ_CHECK(fr_ipc_status_reply_decode(back, &r2, err, sizeof(err)) == 0,
		   "status: an encoded reply is refused: %s", err);
	b = text_of(fr_ipc_status_reply_encode(&r2), "status");
	FUZZ_CHECK(strcmp(a, b) == 0, "status: differs after a round trip:\n%s\n%s", a, b);
	cJSON_Delete(back);
	cJSON_free(a);
	cJSON_free(b);
	fr_ipc_status_reply_fini(&r);
	fr_ipc_status_reply_fini(&r2);
}

static void sessions(const cJSON *obj)
{
	static struct fr_ipc_sessions_reply r, r2;
	char err[512] = "", *a, *b;
	cJSON *back;

	if (!decoded(fr_ipc_sessions_reply_decode(obj, &r, err, sizeof(err)), err, "sessions"))
		return;
	a = text_of(fr_ipc_sessions_reply_encode(&r), "sessions");
	back = parse(a, "sessions");
	FUZZ_CHECK(fr_ipc_sessions_reply_decode(back, &r2, err, sizeof(err)) == 0,
		   "sessions: an encoded reply is refused: %s", err);
	b = text_of(fr_ipc_sessions_reply_encode(&r2), "sessions");
	FUZZ_CHECK(strcmp(a, b) == 0, "sessions: differs after a round trip:\n%s\n%s", a, b);
	cJSON_Delete(back);
	cJSON_free(a);
	cJSON_free(b);
	fr_ipc_sessions_reply_fini(&r);
	fr_ipc_sessions_reply_fini(&r2);
}

static void sidecar(const cJSON *obj)
{
	static struct fr_ipc_sidecar s, s2;
	char err[512] = "", *a, *b;
	cJSON *back = NULL;

	if (!decoded(fr_ipc_sidecar_decode(obj, &s, err, sizeof(err)), err, "sidecar"))
		return;
	a = fr_ipc_sidecar_text(&s);
	FUZZ_CHECK(a, "sidecar: encoding a decoded sidecar failed");
	/* Read back as the recorder's readers do: every integer to its last
	 * digit (plain cJSON_Parse rounds nanosecond times past 2^53). */
	back = parse(a, "sidecar");
	FUZZ_CHECK(fr_ipc_sidecar_decode(back, &s2, err, sizeof(err)) == 0,
		   "sidecar: an encoded sidecar is refused: %s", err);
	b = fr_ipc_sidecar_text(&s2);
	FUZZ_CHECK(b && strcmp(a, b) == 0, "sidecar: differs after a round trip");
	cJSON_Delete(back);
	free(a);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *obj = NULL;

	fr_log_level = FR_LOG_ERR;
	if (size > FR_IPC_MAX_FRAME || fr_ipc_parse_json((const char *)data, size, &obj) < 0)
		return 0;
	status(obj);
	sessions(obj);
	sidecar(obj);
	cJSON_Delete(obj);
	return 0;
}
