/* A shared library that publishes the OpenTelemetry thread context
 * (OTEP 4947) the way SDKs written in other languages do: the
 * thread-local `otel_thread_ctx_v1` defined in the library, not in the
 * program, and the process context (OTEP 4719, a memfd named OTEL_CTX)
 * whose threadlocal.attribute_key_map names attribute 0 "http.route".
 * Built twice by meson: with TLS descriptors (the specification's
 * recommended -mtls-dialect=gnu2) and with the initial-exec model, for
 * otel_lib.sh. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;

struct __attribute__((packed)) otel_record {
	uint8_t trace_id[16], span_id[8];
	uint8_t valid, flags;
	uint16_t attrs_size;
	uint8_t attrs[16];
};

static __thread struct otel_record record;

void otel_lib_attach(uint8_t seed);

/* Publishes a record on the calling thread: trace id bytes seed, seed+1,
 * ..., span id 0xb0, 0xb1, ... */
__attribute__((visibility("default"))) void otel_lib_attach(uint8_t seed)
{
	for (int i = 0; i < 16; i++)
		record.trace_id[i] = (uint8_t)(seed + i);
	for (int i = 0; i < 8; i++)
		record.span_id[i] = (uint8_t)(0xb0 + i);
	record.valid = 1;
	record.flags = 1;
	/* Attribute 0 (http.route) = "GET /x". */
	record.attrs[0] = 0;
	record.attrs[1] = 6;
	memcpy(record.attrs + 2, "GET /x", 6);
	record.attrs_size = 8;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	otel_thread_ctx_v1 = &record;
}

/* The process context: header, then its protobuf payload, in a memfd
 * mapping named OTEL_CTX. ProcessContext { attributes (2): KeyValue { key
 * (1): "threadlocal.attribute_key_map", value (2): AnyValue { array_value
 * (5): ArrayValue { values (1): AnyValue { string_value (1):
 * "http.route" } } } } }, written by hand. */
void otel_lib_publish_keys(void);
__attribute__((visibility("default"))) void otel_lib_publish_keys(void)
{
	static const uint8_t payload[] = {0x12, 0x31, 0x0a, 0x1d, 't',	'h', 'r',  'e',	 'a',
					  'd',	'l',  'o',  'c',  'a',	'l', '.',  'a',	 't',
					  't',	'r',  'i',  'b',  'u',	't', 'e',  '_',	 'k',
					  'e',	'y',  '_',  'm',  'a',	'p', 0x12, 0x10, 0x2a,
					  0x0e, 0x0a, 0x0c, 0x0a, 0x0a, 'h', 't',  't',	 'p',
					  '.',	'r',  'o',  'u',  't',	'e'};
	struct header {
		char signature[8];
		uint32_t version, size;
		uint64_t published, payload;
	} * h;
	struct timespec now;
	int fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
	uint8_t *m;

	if (fd < 0 || ftruncate(fd, 4096) < 0)
		return;
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return;
	h = (struct header *)m;
	memcpy(m + sizeof(*h), payload, sizeof(payload));
	memcpy(h->signature, "OTEL_CTX", 8);
	h->version = 2;
	h->size = sizeof(payload);
	h->payload = (uint64_t)(uintptr_t)(m + sizeof(*h));
	clock_gettime(CLOCK_MONOTONIC, &now);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	h->published = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}
