/* Tracepoint formats: the field lines of a tracefs "format" file, and the
 * layout and decoding of oom:mark_victim, the OOM killer's choice of a
 * victim.
 *
 * A format file lists its fields as
 *   "\tfield:unsigned long anon_rss;\toffset:24;\tsize:8;\tsigned:0;"
 * and their layout differs between kernel versions and configurations,
 * so no offset is assumed. The text comes from tracefs, which only root
 * writes, but every parser here is bounded all the same: a line is at
 * most FR_TP_LINE_MAX bytes, a field must lie inside the record, and a
 * record shorter than the layout says is refused.
 *
 * Pure functions: no I/O, no state; built alone by test_tp_format.
 */
#ifndef FR_RECORDER_TP_FORMAT_H
#define FR_RECORDER_TP_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define FR_TP_LINE_MAX 512
/* The longest record a layout may describe (a tracepoint's raw data is
 * small; the kernel bounds it under a page). */
#define FR_TP_RECORD_MAX 4096

/* One field line: its name (cut to `nlen` - 1), offset and size, and
 * whether it is a "__data_loc" field (a u32: length << 16 | offset of the
 * data inside the record). Returns 0, or -EINVAL for a line that is not a
 * field line (the header, blank lines, "print fmt"). */
int fr_tp_field(const char *line, char *name, size_t nlen, uint32_t *off, uint32_t *size,
		int *data_loc);

/* Where oom:mark_victim keeps what the recorder reads. Linux 6.8 and later
 * give the victim's pid, comm (a __data_loc string), and its anon_rss,
 * file_rss and shmem_rss in KiB (get_mm_counter() << (PAGE_SHIFT - 10),
 * include/trace/events/oom.h; the print format says "kB"); older kernels
 * give the pid alone. */
struct fr_oom_format {
	uint32_t pid_off, pid_size;
	uint32_t comm_off, comm_size;	  /* comm_size 0: no comm field */
	int comm_data_loc;		  /* the field is a __data_loc, else char[N] */
	uint32_t rss_off[3], rss_size[3]; /* anon, file, shmem; all three or none */
	int has_rss;
	uint32_t min_size; /* records shorter than this are refused */
};

/* A victim decoded from one record. */
struct fr_oom_victim {
	uint32_t pid;  /* in the initial pid namespace */
	char comm[16]; /* "" when the kernel gives none; NUL-terminated */
	uint64_t rss;  /* bytes: anon + file + shmem, saturating */
	int has_rss;   /* the kernel gave the three counters */
};

/* Parses the text of mark_victim's format file (`len` bytes, need not end
 * in a NUL). Returns 0, or -EPROTO when it has no 4-byte "pid" field or a
 * field lies past FR_TP_RECORD_MAX. Fields of unexpected sizes (the RSS
 * counters must be 4 or 8 bytes) are ignored, as if absent. */
int fr_oom_format_parse(const char *text, size_t len, struct fr_oom_format *f);

/* Decodes one raw record (`size` bytes) with layout `f`. Returns 0, or
 * -EBADMSG when the record is shorter than the layout or its pid is not
 * positive. A comm whose __data_loc points outside the record is left
 * empty. */
int fr_oom_decode(const struct fr_oom_format *f, const unsigned char *raw, uint32_t size,
		  struct fr_oom_victim *v);

#endif
