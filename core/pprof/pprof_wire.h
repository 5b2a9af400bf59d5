/* profile.proto on the wire, for the encoder (pprof.c): the field numbers
 * of the messages it writes and protobuf's varint and length-delimited
 * fields, each sized before it is written so that a message's length
 * prefix is exact. Internal to core/pprof.
 */
#ifndef FR_CORE_PPROF_WIRE_H
#define FR_CORE_PPROF_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "core/util/le.h"

/* Profile field numbers (github.com/google/pprof/proto/profile.proto). */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};

enum {
	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,
};

enum {
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,
};

enum {
	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,
};

enum {
	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	MAPPING_HAS_INLINE_FRAMES = 10,
};

enum {
	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
};

enum {
	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,
};

enum {
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5,
};

enum {
	WIRE_VARINT = 0,
	WIRE_LEN = 2,
};

static inline size_t varint_size(uint64_t v)
{
	return fr_varint_len(v);
}

static inline uint8_t *put_varint(uint8_t *w, uint64_t v)
{
	return fr_varint_put(w, v);
}

/* All field numbers used here are below 16, so every tag is one byte. */
static inline uint8_t tag(unsigned field, unsigned wire)
{
	return (uint8_t)(field << 3 | wire);
}

/* Size of a varint field; zero values are omitted (proto3 defaults). */
static inline size_t varint_field_size(uint64_t v)
{
	return v ? 1 + varint_size(v) : 0;
}

static inline uint8_t *put_varint_field(uint8_t *w, unsigned field, uint64_t v)
{
	if (!v)
		return w;
	*w++ = tag(field, WIRE_VARINT);
	return put_varint(w, v);
}

/* Size of a length-delimited field with a body of `len` bytes. */
static inline size_t len_field_size(size_t len)
{
	return 1 + varint_size(len) + len;
}

static inline uint8_t *put_len_header(uint8_t *w, unsigned field, size_t len)
{
	*w++ = tag(field, WIRE_LEN);
	return put_varint(w, len);
}

#endif
