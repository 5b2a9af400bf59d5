/* Demangling symbol names (see demangle.h): C++ and Rust's legacy scheme
 * by libstdc++'s __cxa_demangle (the only user of libstdc++; the same
 * demangler as c++filt's), then Rust's escapes and hash undone here.
 */
#include "core/symbols/demangle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s, declared by <cxxabi.h> for C++ only. */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

/* Whether `s` ends with a Rust legacy hash: "::h" and 16 hex digits. */
static int rust_hash_at(const char *s, size_t n)
{
	if (n < 19 || memcmp(s + n - 19, "::h", 3) != 0)
		return 0;
	for (size_t i = n - 16; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* Rust legacy escapes: "$LT$" is '<' and so on, "$u7e$" a code point. */
static int rust_escape(const char *s, size_t n, char *c, size_t *used)
{
	static const struct {
		const char *esc;
		char c;
	} map[] = {
		{"$SP$", '@'}, {"$BP$", '*'}, {"$RF$", '&'}, {"$LT$", '<'},
		{"$GT$", '>'}, {"$LP$", '('}, {"$RP$", ')'}, {"$C$", ','},
	};
	unsigned v = 0;

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		size_t l = strlen(map[i].esc);

		if (n >= l && memcmp(s, map[i].esc, l) == 0) {
			*c = map[i].c;
			*used = l;
			return 0;
		}
	}
	/* "$uXX$": printable ASCII only, as anything else is not a name */
	if (n >= 5 && s[1] == 'u' && sscanf(s, "$u%2x$", &v) == 1 && s[4] == '$' && v >= 0x20 &&
	    v < 0x7f) {
		*c = (char)v;
		*used = 5;
		return 0;
	}
	return -1;
}

/* Rewrites Rust legacy path `s`, its hash already cut to `n` bytes, in
 * place (it only shrinks). Returns 0, or -1 when it holds what the scheme
 * never writes. */
static int rust_legacy(char *s, size_t n)
{
	size_t o = 0, i = 0;

	while (i < n) {
		char c = s[i];
		size_t used = 1;

		/* A component that starts with an escape gets an '_' first */
		if (c == '_' && i + 1 < n && s[i + 1] == '$' && (i == 0 || s[i - 1] == ':')) {
			i++;
			continue;
		}
		if (c == '$' && rust_escape(s + i, n - i, &c, &used) < 0)
			return -1;
		if (c == '.' && i + 1 < n && s[i + 1] == '.') {
			s[o++] = ':';
			c = ':';
			used = 2;
		}
		s[o++] = c;
		i += used;
	}
	s[o] = '\0';
	return 0;
}

int fr_demangle(const char *sym, char *buf, size_t len)
{
	size_t n = strnlen(sym, FR_DEMANGLE_MAX_IN + 1);
	char *out;
	int status = -1;

	if (n > FR_DEMANGLE_MAX_IN || n < 3 || sym[0] != '_' || sym[1] != 'Z' || !len)
		return 0;
	out = __cxa_demangle(sym, NULL, NULL, &status);
	if (!out || status != 0) {
		free(out);
		return 0;
	}
	n = strlen(out);
	/* _ZN...17h0123456789abcdefE: Rust's, which C++ never writes (a
	 * name ending in "::h" and 16 hex digits with no parameters). */
	if (rust_hash_at(out, n) && sym[2] == 'N') {
		/* Escapes undone in place only when all are sound */
		char *copy = strdup(out);

		if (copy && rust_legacy(copy, n - 19) == 0)
			snprintf(buf, len, "%s", copy);
		else
			snprintf(buf, len, "%s", out);
		free(copy);
	} else {
		snprintf(buf, len, "%s", out);
	}
	free(out);
	return 1;
}
