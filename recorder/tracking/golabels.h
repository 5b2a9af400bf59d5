/* Go programs' pprof labels (runtime/pprof.Do, SetGoroutineLabels), read
 * at samples by the labels eBPF programs (recorder/bpf/labels_read.h):
 * whether an executable is a Go program, which Go built it, and where
 * that Go's runtime keeps the current goroutine and its labels on
 * linux/amd64.
 *
 * The executable is another user's file: it is read with bounded preads
 * of its headers, its .go.buildinfo section and, for a program linked by
 * the system linker (cgo), the TLS symbols of its .symtab; nothing read
 * is trusted (every offset and length is checked against the file).
 *
 * The offsets of the runtime's structures come from a table per Go
 * release (1.16 to 1.25) taken from the runtime's sources
 * (src/runtime/runtime2.go of each release: g.m, m.curg, g.labels;
 * runtime/pprof/label.go: the labels' layout), checked against the DWARF
 * of the toolchain the tests find. For a release outside the table (a
 * newer one, a "devel" build) they come from the program's own DWARF
 * (core/symbols/go_dwarf.h); one without DWARF is not read:
 * fr_go_runtime_from_fd says so.
 */
#ifndef FR_RECORDER_GOLABELS_H
#define FR_RECORDER_GOLABELS_H

#include <stddef.h>
#include <stdint.h>

#include "core/symbols/go_exe.h"
#include "recorder/bpf/labels_bpf.h"

/* The first and last Go minor release (1.N) whose layout is known. */
#define FR_GO_MINOR_FIRST 16
#define FR_GO_MINOR_LAST 25

struct fr_go_runtime {
	char version[32];   /* as the binary says: "go1.19.8" */
	uint32_t minor;	    /* 19 (0: a "devel" build) */
	uint8_t from_dwarf; /* 1: the offsets are the program's DWARF's */
	/* What the eBPF program reads (go_* fields of the process's entry). */
	int32_t tls;		  /* the current g's slot from the thread pointer */
	uint16_t m, curg, labels; /* g.m, m.curg, g.labels */
	uint8_t kind;		  /* enum fr_bpf_go_kind */
};

/* Fills rt's m, curg, labels and kind for Go 1.minor. Returns 0, or
 * -ENOTSUP for a release whose layout is not known. */
int fr_go_offsets(uint32_t minor, struct fr_go_runtime *rt);

/* Whether the executable open at `fd` (a regular file) is a Go program
 * this recorder reads the labels of, and where. Returns 0 with *rt,
 * -ENOENT (not a Go program: no .go.buildinfo), -ENOEXEC (not an x86-64
 * ELF file, or tables that make no sense), -ENOTSUP (a Go release the
 * table does not know, without DWARF that gives its layout; a program up
 * to 16 MiB is read whole for it), -EADDRNOTAVAIL (linked by the system linker with
 * other thread-locals, and stripped: the g's slot is not known), or a
 * read's -errno. */
int fr_go_runtime_from_fd(int fd, struct fr_go_runtime *rt);

/* A copy's Go pairs (r->go, r->go_n) as a libflightrec record
 * (lib/flightrec/labels_abi.h) into out (cap bytes, at least
 * sizeof(struct fr_labels_record_abi)), so that they are checked and
 * decoded as the library's are: the Go pairs first, then those of the
 * copy's own libflightrec record (r->fr, when it has a valid one: its
 * pairs win a key both have). A pair the record cannot hold (an empty or
 * too long key or value, one with a NUL) is left out; a goroutine with
 * more pairs than were read gets "flightrec.labels" = "partial: Go labels
 * not all read" when room is left. Returns the record's bytes, 0 when the
 * copy has no Go pairs (or its libflightrec record does not check: it is
 * decoded as it is). */
size_t fr_go_labels_record(const struct fr_bpf_labels_rec *r, uint8_t *out, size_t cap);

#endif
