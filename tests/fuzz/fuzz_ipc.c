/* Fuzz target for the IPC framing (ipc/proto.h): the input is the byte
 * stream a peer sends. A thread writes it into one end of a socketpair,
 * with a descriptor (a pipe's write end) riding on the first byte as a
 * client's attach request would carry it, and closes its end; the target
 * calls fr_ipc_recv_json() on the other end until it fails.
 *
 * Every call must return 0 with a JSON object, or one of the documented
 * errors. Every object received is sent back through a second socketpair
 * with fr_ipc_send_json() and must arrive equal. At the end no descriptor
 * may have leaked: the pipe's read end must see end-of-file, which it only
 * does once every copy of the write end is closed.
 *
 * Every object received is also given to each message decoder of
 * ipc/msg.h, as the daemon and the CLI would: a decoder returns 0 or
 * -EINVAL with a message, and what it accepted encodes to an object that
 * decodes to the same message again.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include "core/util/log.h"
#include "ipc/msg.h"
#include "ipc/msg_ctl.h"
#include "ipc/msg_goroutines.h"
#include "ipc/msg_events.h"
#include "ipc/msg_timeline.h"
#include "ipc/proto.h"

struct writer {
	int sock;
	int pass_fd;
	const uint8_t *data;
	size_t size;
};

static void *write_stream(void *arg)
{
	struct writer *w = arg;
	size_t done = 0;

	while (done < w->size) {
		struct iovec iov = {.iov_base = (void *)(w->data + done),
				    .iov_len = w->size - done};
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} ctrl;
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
		ssize_t n;

		if (done == 0) {
			struct cmsghdr *cm;

			memset(&ctrl, 0, sizeof(ctrl));
			msg.msg_control = ctrl.buf;
			msg.msg_controllen = sizeof(ctrl.buf);
			cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &w->pass_fd, sizeof(int));
		}
		n = sendmsg(w->sock, &msg, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		/* The reader stopped early and closed its end. */
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(w->sock);
	return NULL;
}

/* Sends `obj` back through a fresh socketpair and checks that it arrives
 * unchanged. */
static void echo(const cJSON *obj)
{
	cJSON *back = NULL;
	char *sent, *got;
	int sv[2], ret;

	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	/* Large frames would need a reader thread; the receiving side is
	 * exercised above, this checks that what it accepts can be sent. */
	ret = fr_ipc_send_json(sv[0], obj, -1);
	if (ret == 0) {
		ret = fr_ipc_recv_json(sv[1], &back, NULL);
		FUZZ_CHECK(ret == 0, "an object we sent came back as error %d", ret);
		/* Compared as text: cJSON_Compare() cannot tell objects with
		 * a key given twice apart, and the wire allows them. */
		sent = cJSON_PrintUnformatted(obj);
		got = cJSON_PrintUnformatted(back);
		if (sent && got)
			FUZZ_CHECK(strcmp(sent, got) == 0,
				   "an object we sent came back different:\n%s\n%s", sent, got);
		cJSON_free(sent);
		cJSON_free(got);
	} else {
		FUZZ_CHECK(ret == -EMSGSIZE || ret == -ENOMEM || ret == -EAGAIN,
			   "sending a received object failed: %d", ret);
	}
	cJSON_Delete(back);
	close(sv[0]);
	close(sv[1]);
}

/* Checks one decoder's result: -EINVAL comes with a message. */
static int decoded(int ret, const char *err, const char *what)
{
	FUZZ_CHECK(ret == 0 || ret == -EINVAL, "%s decoder returned %d", what, ret);
	FUZZ_CHECK(ret == 0 || err[0], "%s decoder refused without a message", what);
	return ret == 0;
}

/* Encodes `msg` (with `encode`), decodes the result into `again` (with
 * `decode`) and checks it is the same `size` bytes. Objects are decoded
 * as built (integers as raw text) and also printed, as they would be
 * sent. */
#define ROUND_TRIP(what, encode, decode, msg, again)                                      \
	do {                                                                              \
		cJSON *enc = encode(msg);                                                 \
		char err2[512] = "", *text;                                               \
		int r2;                                                                   \
                                                                                          \
		FUZZ_CHECK(enc, "%s: encoding a decoded message failed", what);           \
		r2 = decode(enc, again, err2, sizeof(err2));                              \
		FUZZ_CHECK(r2 == 0, "%s: an encoded message is refused: %s", what, err2); \
		text = cJSON_PrintUnformatted(enc);                                       \
		FUZZ_CHECK(text, "%s: printing an encoded message failed", what);         \
		cJSON_free(text);                                                         \
		cJSON_Delete(enc);                                                        \
	} while (0)

/* Runs every message decoder of ipc/msg.h over `obj`. */
/* The goroutines request and its reply: decoded, encoded again, the same. */
static void decode_goroutines(const cJSON *obj)
{
	static struct fr_ipc_goroutines_req q, q2;
	static struct fr_ipc_goroutines_reply p, p2;
	char err[512] = "";

	if (decoded(fr_ipc_goroutines_req_decode(obj, &q, err, sizeof(err)), err, "goroutines")) {
		ROUND_TRIP("goroutines", fr_ipc_goroutines_req_encode, fr_ipc_goroutines_req_decode,
			   &q, &q2);
		FUZZ_CHECK(memcmp(&q, &q2, sizeof(q)) == 0,
			   "goroutines: differs after a round trip");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_goroutines_reply_decode(obj, &p, err, sizeof(err)), err,
		    "goroutines reply")) {
		ROUND_TRIP("goroutines reply", fr_ipc_goroutines_reply_encode,
			   fr_ipc_goroutines_reply_decode, &p, &p2);
		FUZZ_CHECK(memcmp(&p, &p2, sizeof(p)) == 0,
			   "goroutines reply: differs after a round trip");
	}
}

static void decode_messages(const cJSON *obj)
{
	static struct fr_ipc_attach_req ar, ar2;
	static struct fr_ipc_attach_reply ap, ap2;
	static struct fr_ipc_consume_req cr, cr2;
	static struct fr_ipc_consume_reply cp, cp2;
	static struct fr_ipc_dump_req dr, dr2;
	static struct fr_ipc_dump_reply dp, dp2;
	static struct fr_ipc_threads_req tr, tr2;
	static struct fr_ipc_threads_reply tp, tp2;
	static struct fr_ipc_reload_reply lp, lp2;
	static struct fr_ipc_trigger_req gr, gr2;
	static struct fr_ipc_timeline_req lr, lr2;
	static struct fr_ipc_timeline_reply tlp, tlp2;
	static struct fr_ipc_events_req er, er2;
	static struct fr_ipc_events_reply ep, ep2;
	char err[512];

	err[0] = '\0';
	if (decoded(fr_ipc_attach_req_decode(obj, &ar, err, sizeof(err)), err, "attach")) {
		ROUND_TRIP("attach", fr_ipc_attach_req_encode, fr_ipc_attach_req_decode, &ar, &ar2);
		FUZZ_CHECK(memcmp(&ar, &ar2, sizeof(ar)) == 0,
			   "attach: differs after a round trip");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_attach_reply_decode(obj, &ap, err, sizeof(err)), err, "attach reply")) {
		ROUND_TRIP("attach reply", fr_ipc_attach_reply_encode, fr_ipc_attach_reply_decode,
			   &ap, &ap2);
		FUZZ_CHECK(memcmp(&ap, &ap2, sizeof(ap)) == 0,
			   "attach reply: differs after a round trip");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_consume_req_decode(obj, &cr, err, sizeof(err)), err, "consume")) {
		ROUND_TRIP("consume", fr_ipc_consume_req_encode, fr_ipc_consume_req_decode, &cr,
			   &cr2);
		FUZZ_CHECK(memcmp(&cr, &cr2, sizeof(cr)) == 0,
			   "consume: differs after a round trip");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_consume_reply_decode(obj, &cp, err, sizeof(err)), err,
		    "consume reply")) {
		ROUND_TRIP("consume reply", fr_ipc_consume_reply_encode,
			   fr_ipc_consume_reply_decode, &cp, &cp2);
		FUZZ_CHECK(memcmp(&cp, &cp2, sizeof(cp)) == 0,
			   "consume reply: differs after a round trip");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_dump_req_decode(obj, &dr, err, sizeof(err)), err, "dump")) {
		ROUND_TRIP("dump", fr_ipc_dump_req_encode, fr_ipc_dump_req_decode, &dr, &dr2);
		/* dr2.session pointed into the encoded object, now freed;
		 * the window is what can differ. */
		FUZZ_CHECK(dr.window_ns == dr2.window_ns, "dump: differs after a round trip");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_dump_reply_decode(obj, &dp, err, sizeof(err)), err, "dump reply")) {
		ROUND_TRIP("dump reply", fr_ipc_dump_reply_encode, fr_ipc_dump_reply_decode, &dp,
			   &dp2);
		FUZZ_CHECK(memcmp(&dp, &dp2, sizeof(dp)) == 0,
			   "dump reply: differs after a round trip");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_threads_req_decode(obj, &tr, err, sizeof(err)), err, "threads")) {
		ROUND_TRIP("threads", fr_ipc_threads_req_encode, fr_ipc_threads_req_decode, &tr,
			   &tr2);
		FUZZ_CHECK(memcmp(&tr, &tr2, sizeof(tr)) == 0,
			   "threads: differs after a round trip");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_threads_reply_decode(obj, &tp, err, sizeof(err)), err,
		    "threads reply")) {
		ROUND_TRIP("threads reply", fr_ipc_threads_reply_encode,
			   fr_ipc_threads_reply_decode, &tp, &tp2);
		FUZZ_CHECK(memcmp(&tp, &tp2, sizeof(tp)) == 0,
			   "threads reply: differs after a round trip");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_reload_reply_decode(obj, &lp, err, sizeof(err)), err, "reload reply")) {
		ROUND_TRIP("reload reply", fr_ipc_reload_reply_encode, fr_ipc_reload_reply_decode,
			   &lp, &lp2);
		FUZZ_CHECK(memcmp(&lp, &lp2, sizeof(lp)) == 0,
			   "reload reply: differs after a round trip");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_trigger_req_decode(obj, &gr, err, sizeof(err)), err, "trigger")) {
		ROUND_TRIP("trigger", fr_ipc_trigger_req_encode, fr_ipc_trigger_req_decode, &gr,
			   &gr2);
		FUZZ_CHECK(memcmp(&gr, &gr2, sizeof(gr)) == 0,
			   "trigger: differs after a round trip");
		FUZZ_CHECK(!gr.reason[0] || fr_ipc_reason_ok(gr.reason),
			   "trigger: a reason with control characters was accepted");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_timeline_req_decode(obj, &lr, err, sizeof(err)), err, "timeline")) {
		ROUND_TRIP("timeline", fr_ipc_timeline_req_encode, fr_ipc_timeline_req_decode, &lr,
			   &lr2);
		FUZZ_CHECK(memcmp(&lr, &lr2, sizeof(lr)) == 0,
			   "timeline: differs after a round trip");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_timeline_reply_decode(obj, &tlp, err, sizeof(err)), err,
		    "timeline reply")) {
		ROUND_TRIP("timeline reply", fr_ipc_timeline_reply_encode,
			   fr_ipc_timeline_reply_decode, &tlp, &tlp2);
		FUZZ_CHECK(memcmp(&tlp, &tlp2, sizeof(tlp)) == 0,
			   "timeline reply: differs after a round trip");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_events_req_decode(obj, &er, err, sizeof(err)), err, "events")) {
		ROUND_TRIP("events", fr_ipc_events_req_encode, fr_ipc_events_req_decode, &er, &er2);
		FUZZ_CHECK(memcmp(&er, &er2, sizeof(er)) == 0,
			   "events: differs after a round trip");
	}
	err[0] = '\0';
	if (decoded(fr_ipc_events_reply_decode(obj, &ep, err, sizeof(err)), err, "events reply")) {
		ROUND_TRIP("events reply", fr_ipc_events_reply_encode, fr_ipc_events_reply_decode,
			   &ep, &ep2);
		FUZZ_CHECK(memcmp(&ep, &ep2, sizeof(ep)) == 0,
			   "events reply: differs after a round trip");
	}
	decode_goroutines(obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct writer w = {.data = data, .size = size};
	pthread_t thread;
	int sv[2], pipefd[2];
	char c;
	int ret;

	fr_log_level = FR_LOG_ERR;

	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	FUZZ_CHECK(pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) == 0, "pipe");
	w.sock = sv[0];
	w.pass_fd = pipefd[1];
	FUZZ_CHECK(pthread_create(&thread, NULL, write_stream, &w) == 0, "pthread_create");

	for (int frames = 0;; frames++) {
		cJSON *obj = NULL;
		int fd = -1;

		ret = fr_ipc_recv_json(sv[1], &obj, &fd);
		FUZZ_CHECK(ret == 0 || ret == -ECONNRESET || ret == -EMSGSIZE || ret == -EBADMSG ||
				   ret == -ENOMEM,
			   "frame %d: recv_json returned %d", frames, ret);
		FUZZ_CHECK((ret == 0) == (obj != NULL), "recv_json returned %d and %p", ret,
			   (void *)obj);
		FUZZ_CHECK(ret == 0 || fd == -1, "recv_json failed (%d) but gave descriptor %d",
			   ret, fd);
		if (ret < 0)
			break;
		FUZZ_CHECK(cJSON_IsObject(obj), "recv_json gave a non-object");
		if (fd >= 0) {
			FUZZ_CHECK(frames == 0, "descriptor arrived with frame %d", frames);
			FUZZ_CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC,
				   "received descriptor not CLOEXEC");
			close(fd);
		}
		echo(obj);
		decode_messages(obj);
		cJSON_Delete(obj);
	}
	close(sv[1]);
	pthread_join(thread, NULL);

	/* Our copy of the write end is closed; EOF now means no copy leaked. */
	close(pipefd[1]);
	FUZZ_CHECK(read(pipefd[0], &c, 1) == 0, "a received descriptor leaked (%s)",
		   errno == EAGAIN ? "pipe still open" : strerror(errno));
	close(pipefd[0]);
	return 0;
}
