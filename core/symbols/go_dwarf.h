/* The layout of a Go program's runtime structures, from its DWARF: what
 * the recorder needs to read a goroutine's pprof labels
 * (recorder/tracking/golabels.h) for a Go release it has no table for.
 * The image is another user's file, handed over in memory (bounded by the
 * caller) and parsed by libdw with every offset checked; only the
 * top-level entries of each unit are looked at.
 */
#ifndef FR_CORE_GO_DWARF_H
#define FR_CORE_GO_DWARF_H

#include <stddef.h>
#include <stdint.h>

/* -1: not found. */
struct fr_go_dwarf {
	int64_t g_m, g_labels, m_curg;
	/* runtime/pprof.labelMap: 1 a map (a named map type), 2 a struct. */
	int labels_kind;
	int64_t hmap_b, hmap_buckets; /* runtime.hmap.B, .buckets */
	int64_t bucket_size;	      /* bucket<string,string>'s bytes */
	/* What flightrec goroutines reads of each goroutine (runtime.g's
	 * members, runtime.gobuf's and runtime.stack's, m.procid);
	 * g_parent (Go 1.21 on) and g_tracking_seq may be -1. */
	int64_t g_goid, g_status, g_waitsince, g_waitreason, g_gopc, g_startpc, g_parent;
	int64_t g_sched, g_syscallsp, g_syscallpc, g_stack, g_tracking_seq;
	int64_t gobuf_sp, gobuf_pc, gobuf_bp, stack_lo, stack_hi, m_procid;
};

/* Fills *out from the DWARF of the ELF image (data, size; borrowed).
 * Returns 0 when g.m, g.labels, m.curg and the labels' kind were all
 * found, -ENOENT when not (no DWARF, or not a Go program's), -ENOEXEC
 * when the image is not ELF, -ENOMEM. */
int fr_go_dwarf_offsets(void *data, size_t size, struct fr_go_dwarf *out);

#endif
