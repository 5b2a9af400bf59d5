/* A shared library that publishes the OpenTelemetry thread context
 * (OTEP 4947) the way SDKs written in other languages do: the
 * thread-local `otel_thread_ctx_v1` defined in the library, not in the
 * program. Built twice by meson: with TLS descriptors (the specification's
 * recommended -mtls-dialect=gnu2) and with the initial-exec model, for
 * otel_lib.sh. */
#include <stdint.h>

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
	record.attrs_size = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	otel_thread_ctx_v1 = &record;
}
