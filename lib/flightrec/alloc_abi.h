/* The shared memory through which a process's allocation samples reach the
 * recorder (version 1). The library (lib/alloc.c) interposes the malloc
 * family, samples allocations by bytes and writes each sample, and each
 * free of a sampled block, into a ring in a sealed memfd of its own; the
 * recorder maps the same memfd and reads the ring (no system call per
 * sample on either side) and trusts nothing in it. Little-endian, native
 * alignment of x86-64 and aarch64 (every field at its natural offset).
 *
 * FINDING THE RING. The root is the exported object `fr_alloc_registry`
 * (struct fr_alloc_registry_abi) in the process's private memory, found by
 * the recorder through the dynamic symbol table of the mapped
 * libflightrec.so (as `fr_labels_registry`) and read with
 * process_vm_readv. It names the memfd by its descriptor number in the
 * process (`ring_fd`; -1: no ring) and its size. The recorder takes the
 * descriptor with pidfd_getfd (which opens nothing), checks that it is a
 * memfd sealed against shrinking and growing (F_GET_SEALS has
 * F_SEAL_SHRINK | F_SEAL_GROW: the file can never be cut under the
 * recorder's mapping, so a read never faults), that its size is
 * `ring_size`, within the recorder's bounds, and that the header's
 * `ring_id` is the registry's and names no ring already mapped for another
 * process; it then maps it shared, read and write.
 *
 * fork: the child inherits the parent's mapping of the parent's memfd. The
 * library's child handler (pthread_atfork) makes the child a ring of its
 * own before fork returns there: a new memfd, a new ring_id, the registry
 * updated (ring_id written last). Until then the registry names the
 * parent's ring, whose ring_id is already mapped for the parent: the
 * recorder refuses it and looks again. exec: the descriptor is close-on-exec;
 * the new image loads the library again (LD_PRELOAD is inherited) and
 * makes a new ring.
 *
 * THE RING. The memfd holds the header (FR_ALLOC_HEADER_SIZE bytes) and
 * then `data_size` bytes of records (a power of two). Positions are byte
 * counts since the ring began (u64, never wrapping); a record at position
 * p lies at data offset p % data_size, 8-byte aligned, and never straddles
 * the end of the data (the writer reserves a PAD record to the end
 * instead). Many threads write: a writer reserves [head, head + len) with a
 * compare-and-swap on `head`, refusing (and counting in dropped_*) when
 * head + len - tail > data_size, so the recorder's unread records are never
 * overwritten; it fills the record, then stores the record's `pos` (its own
 * position) last, with release order. The reader (one, the recorder) reads
 * at `tail`: a record is complete when its `pos` equals tail (a record of
 * an earlier lap, or one still being written, has another pos); it copies
 * the record out before checking it, then stores the new tail (release).
 * A record that does not become complete (a thread killed while writing
 * it, a process writing garbage) holds the reader up to a deadline of the
 * reader's; it then skips to head and counts what it skipped.
 *
 * SAMPLING. Each thread counts the bytes it allocates down from an
 * exponentially distributed interval of mean `mean` bytes; the allocation
 * that takes the count to zero or below is sampled and a new interval
 * drawn. A block of size s is thus sampled with probability
 * p = 1 - exp(-s / mean); the recorder stores its size and the mean, and a
 * reader weighs the sample by 1/p objects and s/p bytes (Go's
 * scaleHeapSample), so the sums are unbiased estimates. `mean` is the
 * recorder's `mean_wanted` when it set one (a session asks for a finer or
 * coarser mean), else FLIGHTREC_ALLOC_MEAN in the environment, else
 * FR_ALLOC_MEAN_DEFAULT; a thread takes a new mean at its next sample.
 * The library writes the mean it uses in `mean_in_use`.
 *
 * A sampled block's address is remembered by the library, so that its
 * free (free, realloc moving or shrinking it, delete) writes a FREE record
 * with the address; the recorder matches it to the sample by address.
 * realloc(p, n) of a sampled p is a FREE of p followed by an allocation of
 * n; realloc of an unsampled block counts n against the interval.
 *
 * A SAMPLE (kind FR_ALLOC_REC_ALLOC) carries the registers and a copy of
 * the stack taken inside the library (ip in the library's sampling
 * function, sp and bp there, and stack_len bytes from sp up, no further
 * than the thread's stack end and FR_ALLOC_STACK_COPY_MAX), which the
 * recorder unwinds with the CFI of the mapped objects as it unwinds a
 * perf sample, and drops the library's own frames at the leaf. When the
 * thread had application labels (lib/flightrec/labels_abi.h), the record
 * in force is copied in (labels_len bytes: its header and `size` bytes
 * of pairs), so the sample carries the labels of that moment.
 */
#ifndef FLIGHTREC_ALLOC_ABI_H
#define FLIGHTREC_ALLOC_ABI_H

#include <stdint.h>

#define FR_ALLOC_ABI_MAGIC 0x434f4c4143455246ull  /* "FRECALOC" */
#define FR_ALLOC_RING_MAGIC 0x474e524143455246ull /* "FRECARNG" */
#define FR_ALLOC_ABI_VERSION 1
#define FR_ALLOC_REGISTRY_SYMBOL "fr_alloc_registry"

/* The header's bytes before the records. */
#define FR_ALLOC_HEADER_SIZE 4096u
/* The library's ring: FLIGHTREC_ALLOC_RING (bytes of records, a power of
 * two from MIN to MAX) or the default. The recorder maps no larger. */
#define FR_ALLOC_RING_DEFAULT (2u << 20)
#define FR_ALLOC_RING_MIN (64u << 10)
#define FR_ALLOC_RING_MAX (64u << 20)
/* The sampling mean in bytes: default and bounds (FLIGHTREC_ALLOC_MEAN,
 * the recorder's mean_wanted). */
#define FR_ALLOC_MEAN_DEFAULT (512u << 10)
#define FR_ALLOC_MEAN_MIN 1u
#define FR_ALLOC_MEAN_MAX (1u << 30)
/* The most bytes of stack a sample copies. */
#define FR_ALLOC_STACK_COPY_MAX 16384u
/* The default bytes of stack a sample copies (the recorder may set
 * stack_copy_wanted from 1,024 to FR_ALLOC_STACK_COPY_MAX). */
#define FR_ALLOC_STACK_COPY_DEFAULT 8192u

/* Exported by libflightrec.so, in the process's own memory. */
struct fr_alloc_registry_abi {
	uint64_t magic;	    /* FR_ALLOC_ABI_MAGIC */
	uint32_t version;   /* FR_ALLOC_ABI_VERSION */
	uint32_t size;	    /* sizeof(struct fr_alloc_registry_abi) */
	int32_t ring_fd;    /* the memfd in this process; -1: no ring (off,
			   * failed, or not made yet) */
	uint32_t state;	    /* enum fr_alloc_state */
	uint64_t ring_size; /* bytes of the memfd: header + data */
	uint64_t ring_id;   /* the ring's header's ring_id; written last */
};

enum fr_alloc_state {
	FR_ALLOC_STATE_STARTING = 0,
	FR_ALLOC_STATE_ON,     /* sampling into the ring */
	FR_ALLOC_STATE_OFF,    /* FLIGHTREC_ALLOC=off */
	FR_ALLOC_STATE_FAILED, /* no ring could be made (memfd, seals, mmap) */
};

/* At offset 0 of the memfd. Fields written by the library and by the
 * recorder are on cache lines of their own. */
struct fr_alloc_header_abi {
	/* Fixed when the library made the ring. */
	uint64_t magic;	      /* FR_ALLOC_RING_MAGIC */
	uint32_t version;     /* FR_ALLOC_ABI_VERSION */
	uint32_t header_size; /* FR_ALLOC_HEADER_SIZE */
	uint64_t ring_id;     /* random, the registry's */
	uint64_t data_size;   /* bytes of records, a power of two */
	uint8_t pad0[32];

	/* Written by the library. */
	uint64_t head; /* bytes reserved so far */
	uint8_t pad1[56];
	uint64_t mean_in_use;	 /* bytes */
	uint64_t sampled;	 /* samples written */
	uint64_t frees;		 /* FREE records written */
	uint64_t dropped_allocs; /* samples not written: ring full */
	uint64_t dropped_frees;	 /* FREE records not written: ring full */
	uint64_t untracked;	 /* sampled blocks whose address the
				     * library could not keep (its table
				     * full): their frees are not reported */
	uint64_t allocs_seen;	 /* allocations that went through the
				     * library (only counted at samples:
				     * an estimate is the recorder's) */
	uint8_t pad2[8];

	/* Written by the recorder. */
	uint64_t tail;		    /* bytes consumed */
	uint64_t mean_wanted;	    /* bytes; 0: the library's own choice */
	uint32_t stack_copy_wanted; /* bytes; 0: the default */
	uint32_t reader_pid;	    /* the recorder's pid, for diagnostics */
	uint8_t pad3[40];
};
_Static_assert(sizeof(struct fr_alloc_header_abi) == 256, "header layout");

enum fr_alloc_rec_kind {
	FR_ALLOC_REC_PAD = 1, /* skip to the end of the data */
	FR_ALLOC_REC_ALLOC,   /* struct fr_alloc_rec_alloc_abi */
	FR_ALLOC_REC_FREE,    /* struct fr_alloc_rec_free_abi */
};

/* Every record starts so; len is the whole record's bytes, a multiple of
 * 8, at least sizeof(struct fr_alloc_rec_abi), and the record ends at or
 * before the end of the data. */
struct fr_alloc_rec_abi {
	uint64_t pos;  /* the record's position; stored last (release) */
	uint32_t kind; /* enum fr_alloc_rec_kind */
	uint32_t len;
};

struct fr_alloc_rec_alloc_abi {
	struct fr_alloc_rec_abi h;
	int64_t time_ns; /* CLOCK_MONOTONIC */
	uint32_t tid;	 /* the kernel's tid in the process's pid namespace */
	uint32_t flags;	 /* 0 */
	uint64_t addr;	 /* the block */
	uint64_t size;	 /* bytes asked for */
	uint64_t mean;	 /* the sampling mean in force, bytes */
	uint64_t ip, sp, bp;
	/* Bytes of the labels record that follow (0: none), then bytes of
	 * stack after the labels. */
	uint32_t labels_len;
	uint32_t stack_len;
	/* labels_len bytes (a struct fr_labels_record_abi's first 8 + size
	 * bytes), padded to 8, then stack_len bytes copied from sp up. */
};

struct fr_alloc_rec_free_abi {
	struct fr_alloc_rec_abi h;
	int64_t time_ns; /* CLOCK_MONOTONIC */
	uint32_t tid;
	uint32_t flags; /* 0 */
	uint64_t addr;	/* a block the library sampled */
};

#endif
