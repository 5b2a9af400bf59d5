/* Demangling of C++ (Itanium ABI) and Rust (legacy scheme) symbol names,
 * for people: folded stacks, top, and pprof's Function.name (its
 * system_name keeps the symbol as the binary has it). Rust's v0 scheme
 * (_R...) is left as it is: of Debian 12's libraries only libiberty
 * (libiberty-dev, a static archive of GCC's sources, its demanglers under
 * a linking exception) decodes it; that would be a second demangler to
 * vendor and fuzz, left for when v0 binaries are common. */
#ifndef FR_CORE_DEMANGLE_H
#define FR_CORE_DEMANGLE_H

#include <stddef.h>

/* Longest symbol demangled: the symbol strings come from files users
 * control, and the demangler's work grows with its input. Longer ones
 * stay as they are. */
#define FR_DEMANGLE_MAX_IN 2048

/* Writes the demangled form of symbol `sym` into `buf` (`len` bytes, cut
 * there) and returns 1; returns 0 and leaves `buf` alone when `sym` is
 * not a mangled name it knows (C, the kernel's, too long, malformed).
 * A Rust symbol loses its "::h<16 hex digits>" hash, as Rust's own tools
 * print it. Thread-safe. */
int fr_demangle(const char *sym, char *buf, size_t len);

#endif
