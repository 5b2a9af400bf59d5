/* Line tables of CPython code objects (core/symbols/python_lines.h). */
#include "core/symbols/python_lines.h"

#include <stdint.h>

/* 3.10's (PEP 626): pairs of (bytes of code, signed line delta), -128 a
 * range with no line (Objects/lnotab_notes.txt of 3.10). */
static int64_t line_pep626(const uint8_t *t, size_t n, int64_t line, uint32_t offset)
{
	uint64_t end = 0;

	for (size_t i = 0; i + 1 < n; i += 2) {
		uint64_t start = end;
		int8_t d = (int8_t)t[i + 1];

		end += t[i];
		if (d != -128)
			line += d;
		if (offset >= start && offset < end)
			return d == -128 ? -1 : line;
	}
	return -1;
}

/* A varint of the location table: 6 bits a byte, bit 6 "more". */
static uint32_t varint(const uint8_t *t, size_t n, size_t *i)
{
	uint32_t v = 0;
	unsigned shift = 0;

	while (*i < n && shift < 32) {
		uint8_t b = t[(*i)++];

		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

/* 3.11+'s location table (Objects/locations.md): an entry's first byte
 * has bit 7 set, its kind in bits 3-6 and its length in code units - 1
 * in bits 0-2; kind 15 has no line, 14 (long) and 13 (no columns) a
 * signed varint line delta, 10-12 a delta of kind - 10, below that the
 * same line. */
static int64_t line_locations(const uint8_t *t, size_t n, int64_t line, uint32_t offset)
{
	uint64_t end = 0;
	size_t i = 0;

	while (i < n) {
		uint8_t b = t[i++];
		unsigned kind = (b >> 3) & 15;
		uint64_t start = end;
		int64_t d = 0;

		if (!(b & 0x80))
			return -1; /* not an entry's start */
		end += ((uint64_t)(b & 7) + 1) * 2;
		if (kind == 14 || kind == 13) {
			uint32_t u = varint(t, n, &i);

			d = u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
		} else if (kind >= 10 && kind <= 12)
			d = (int64_t)kind - 10;
		if (kind != 15)
			line += d;
		if (offset >= start && offset < end)
			return kind == 15 ? -1 : line;
		while (i < n && !(t[i] & 0x80))
			i++;
	}
	return -1;
}

int32_t fr_py_line(uint8_t kind, const uint8_t *tab, size_t n, int32_t firstline, uint32_t offset)
{
	if (offset == FR_PY_NO_OFFSET)
		return firstline;
	if (!tab)
		return -1;
	int64_t line = kind == FR_PY_LINES_PEP626      ? line_pep626(tab, n, firstline, offset)
		       : kind == FR_PY_LINES_LOCATIONS ? line_locations(tab, n, firstline, offset)
						       : -1;

	/* Hostile deltas may take it anywhere. */
	return line > 0 && line <= INT32_MAX ? (int32_t)line : -1;
}
