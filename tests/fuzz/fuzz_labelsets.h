/* The input of fuzz_labelsets (tests/fuzz/fuzz_labelsets.c), shared with
 * its seed writer (make_seeds_labelsets.c).
 *
 * An input is a sequence of operations on one table of label sets
 * (recorder/tracking/labelsets.h), each a byte OP followed by its arguments; an
 * operation cut short by the end of the input takes what is left:
 *
 *   OP & 7 == FUZZ_LS_INTERN    u16 fr_len, u16 otel_len (little-endian),
 *                               fr_len bytes of a libflightrec record, then
 *                               otel_len bytes of an OpenTelemetry thread
 *                               context record, interned as copied. With
 *                               FUZZ_LS_FIX_FR in OP the record's header is
 *                               made to check first (magic, valid = 1,
 *                               size = the bytes after the header; npairs
 *                               kept), with FUZZ_LS_FIX_OTEL the context's
 *                               (valid = 1, attribute size = the bytes
 *                               after its header): the fuzzer reaches the
 *                               pairs without guessing the magic.
 *   FUZZ_LS_KEYS                u8 n, then n names (u8 length, bytes; at
 *                               most FUZZ_LS_KEY_MAX kept): the OTel
 *                               attribute key names of the interns that
 *                               follow (index i named by name i)
 *   FUZZ_LS_SEAL                a seal (fr_labelsets_sealed)
 *   FUZZ_LS_FILL                u16 n: n distinct valid records interned
 *                               (fill=<counter>), to fill the table, drop
 *                               sets and reuse their slots (at most
 *                               FR_LABELSETS_MAX + 64 over the input)
 *   anything else               an intern, as FUZZ_LS_INTERN
 */
#ifndef FR_TESTS_FUZZ_LABELSETS_H
#define FR_TESTS_FUZZ_LABELSETS_H

enum {
	FUZZ_LS_INTERN = 0,
	FUZZ_LS_KEYS = 1,
	FUZZ_LS_SEAL = 2,
	FUZZ_LS_FILL = 3,
};
#define FUZZ_LS_FIX_FR 0x10
#define FUZZ_LS_FIX_OTEL 0x20
/* Longest OTel key name taken from an input (so that a set's strings
 * always fit the table's per-set buffer; longer names are cut). */
#define FUZZ_LS_KEY_MAX 32
#define FUZZ_LS_MAX_KEYS 256

#endif
