/* Fuzz target for the demangler (core/symbols/demangle.h), which reads
 * symbol names from ELF files and perf maps any user may write.
 *
 * Input: the bytes up to the first NUL as a symbol name, demangled into
 * buffers of several sizes.
 *
 * Promises: no crash, no memory error; a result is NUL-terminated within
 * its buffer, and the same in every buffer it fits; nothing longer than
 * FR_DEMANGLE_MAX_IN is demangled; a name not starting with "_Z" is left
 * alone.
 */
#include "tests/fuzz/fuzz.h"

#include <string.h>

#include "core/symbols/demangle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *sym = malloc(size + 1);
	char big[8192], small[16];
	int r1, r2;

	FUZZ_CHECK(sym != NULL, "malloc");
	memcpy(sym, data, size);
	sym[size] = '\0';
	memset(big, 'x', sizeof(big));
	memset(small, 'x', sizeof(small));
	r1 = fr_demangle(sym, big, sizeof(big));
	r2 = fr_demangle(sym, small, sizeof(small));
	FUZZ_CHECK(r1 == r2, "demangled once of two: %d %d", r1, r2);
	FUZZ_CHECK(r1 == 0 || r1 == 1, "returned %d", r1);
	if (strlen(sym) > FR_DEMANGLE_MAX_IN || strncmp(sym, "_Z", 2) != 0)
		FUZZ_CHECK(r1 == 0, "demangled what it should not");
	if (r1) {
		FUZZ_CHECK(memchr(big, '\0', sizeof(big)) && memchr(small, '\0', sizeof(small)),
			   "unterminated result");
		FUZZ_CHECK(strlen(big) >= sizeof(small) || strcmp(big, small) == 0,
			   "\"%s\" and \"%s\"", big, small);
		FUZZ_CHECK(strncmp(big, small, strlen(small)) == 0, "a different prefix");
	}
	free(sym);
	return 0;
}
