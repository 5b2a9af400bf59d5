/* Demangling (core/symbols/demangle.h): C++ names as c++filt prints them,
 * Rust legacy names as Rust's tools print them (escapes undone, hash cut),
 * everything else (C, Rust v0, garbage, too long) left alone, and results
 * cut to the buffer's size. */
#include "core/symbols/demangle.h"

#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"

static void expect(const char *sym, const char *want)
{
	char buf[512] = "untouched";
	int r = fr_demangle(sym, buf, sizeof(buf));

	if (want)
		CHECK(r == 1 && strcmp(buf, want) == 0, "%s: got %d \"%s\", want \"%s\"", sym, r,
		      buf, want);
	else
		CHECK(r == 0 && strcmp(buf, "untouched") == 0, "%s: got %d \"%s\", want none", sym,
		      r, buf);
}

int main(void)
{
	char small[8], *long_sym;

	expect("_Z3fooi", "foo(int)");
	expect("_ZN2ns5Klass6methodEv", "ns::Klass::method()");
	expect("_ZNSt6vectorIiSaIiEE9push_backERKi",
	       "std::vector<int, std::allocator<int> >::push_back(int const&)");
	expect("_Z3fooi.cold", "foo(int) [clone .cold]");
	/* C++ with a member that happens to look like a hash but has
	 * parameters stays C++ */
	expect("_ZN1a17h0123456789abcdefEv", "a::h0123456789abcdef()");
	expect("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write");
	expect("_ZN60_$LT$alloc..string..String$u20$as$u20$core..fmt..Display$GT$3fmt"
	       "17h0123456789abcdefE",
	       "<alloc::string::String as core::fmt::Display>::fmt");
	expect("_ZN5hello4main28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE",
	       "hello::main::{{closure}}");
	/* an escape Rust never writes: the plain C++ reading */
	expect("_ZN1a6$XX$bb17h0123456789abcdefE", "a::$XX$bb::h0123456789abcdef");
	expect("main", NULL);
	expect("_RNvCs1234_7mycrate3foo", NULL);
	expect("_Zgarbage", NULL);
	expect("", NULL);
	expect("_Z", NULL);
	long_sym = malloc(FR_DEMANGLE_MAX_IN + 8);
	CHECK(long_sym, "malloc");
	if (long_sym) {
		memset(long_sym, 'a', FR_DEMANGLE_MAX_IN + 7);
		memcpy(long_sym, "_Z3foo", 6);
		long_sym[FR_DEMANGLE_MAX_IN + 7] = '\0';
		expect(long_sym, NULL);
		free(long_sym);
	}
	CHECK(fr_demangle("_ZN2ns5Klass6methodEv", small, sizeof(small)) == 1 &&
		      strcmp(small, "ns::Kla") == 0,
	      "cut to the buffer: \"%s\"", small);
	return failures != 0;
}
