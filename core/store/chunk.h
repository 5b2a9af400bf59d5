/* Chunk codec: the self-contained unit of storage in the ring.
 *
 * A chunk holds every sample of a short stretch of time (sealed at least
 * once a second, or at ~1 MiB of raw data) plus everything needed to read
 * and symbolize those samples with nothing but the chunk and the files on
 * disk: the strings, processes, threads and mappings the samples refer to.
 *
 * ON-DISK LAYOUT (all integers little-endian)
 *
 *   header, 64 bytes:
 *     0  u32 magic         0x4b435246 ("FRCK")
 *     4  u16 version       FR_CHUNK_VERSION (3) when the block has
 *                          sections (below), else 2, so a chunk without
 *                          them stays readable by the builds before
 *                          sections; version 1 (the first block layout)
 *                          is refused like any other
 *     6  u16 header_len    64
 *     8  u64 seq           global sequence number, assigned by the ring,
 *                          below 2^62 (FR_CHUNK_SEQ_MAX)
 *    16  i64 first_ns      time of the earliest sample (Unix ns, CLOCK_REALTIME)
 *    24  i64 last_ns       time of the latest sample (Unix ns); every sample
 *                          time lies in [first_ns, last_ns]. A chunk of
 *                          counters only has first_ns == last_ns == seal time.
 *    32  u32 nsamples      (<= raw_len / 2)
 *    36  u32 raw_len       length of the payload after decompression
 *                          (<= FR_CHUNK_RAW_MAX)
 *    40  u32 comp_len      length of the payload as stored (<= FR_CHUNK_COMP_MAX)
 *    44  u32 covers        how many sequence numbers before seq this chunk
 *                          also stands for: a chunk merged from the chunks
 *                          numbered seq - covers .. seq has covers > 0
 *                          (core/store/merge.h); below seq. 0 for most chunks.
 *    48  i64 clock_offset  CLOCK_REALTIME - CLOCK_MONOTONIC at seal time
 *    56  u32 payload_crc   crc32c of the comp_len payload bytes
 *    60  u32 header_crc    crc32c of bytes 0..59
 *   payload: one zstd frame of raw_len bytes (the block below).
 *
 * BLOCK (before compression). "v" is an unsigned LEB128 varint, "z" a
 * zigzag-encoded signed varint, "str" a v string id into the string table,
 * "bid" a v build id reference (0: none, else index + 1 into the build id
 * table), "pidx" a v index into the pid table. Differences are taken in
 * two's-complement 64-bit arithmetic. Every table is a v count followed by
 * its entries; a "column" has one entry per row of its table, and a table
 * stored as columns has each column in turn.
 *
 *   strings:   count (>= 1); each: v len (<= FR_CHUNK_STRING_MAX), len
 *              bytes (no NUL). Id 0 is "" and is stored (len 0).
 *   build ids: count; each: v len (1..20), len bytes. Each distinct build
 *              id of the chunk once.
 *   pids:      count; the pids the stacks (and so the samples) belong to,
 *              increasing: the first as v, each next as v (pid - previous
 *              pid - 1).
 *   processes: count; each: v gap, v uid, str comm, str exe, z (start_ns -
 *              header first_ns), bid. The entry's pid is pids[index], the
 *              index being the previous entry's + 1 + gap (the first: gap).
 *   threads:   count; each: v gap, z (pid - tid), str name. The tid is the
 *              previous entry's + 1 + gap (the first: gap).
 *   mappings:  count; each: v (pidx - previous entry's pidx; the first:
 *              pidx), v start, v len (>= 1), v pgoff, str path, bid. Sorted
 *              by (pid, start): for the second and later mappings of a pid,
 *              start is stored as the gap after the previous one's end, so
 *              mappings of one pid do not overlap.
 *   stacks:    count; then the columns pidx, v nr_kernel, v nr_frames
 *              (nr_kernel <= nr_frames <= 127) and v shared (<= nr_frames
 *              and <= the previous stack's nr_frames; 0 for the first);
 *              then, stack after stack, the nr_frames - shared frames that
 *              are not shared.
 *              Frames are taken root first here: the first `shared` are the
 *              previous stack's first `shared` (stacks are sorted root
 *              first, so neighbours share their callers). The last
 *              nr_kernel are kernel addresses (no mapping). Each stored
 *              frame is z (address - prediction), the prediction being:
 *                - for the root frame (position 0): the previous stack's
 *                  root if it has one of the same kind (user or kernel),
 *                  else the last frame of that kind stored so far;
 *                - otherwise, when the frame at position p - 1 (the
 *                  caller, C) is the caller recorded in slot
 *                  h(C) = mix(0, C) mod 4096 (mix as in core/store/chunk_int.h:
 *                  x = C; x *= 0x9e3779b97f4a7c15; x ^= x >> 29), the frame
 *                  recorded with it there;
 *                - else C if it is of the same kind, else the last frame of
 *                  that kind stored so far.
 *              The last frame of each kind starts as 0 (user) and
 *              0xffffffff80000000 (kernel); the 4096 slots start as
 *              (caller 0, frame 0). After each stored frame at position
 *              p > 0, slot h(C) becomes (C, frame); after each stored
 *              frame, it is the last frame of its kind.
 *   labelsets: count; each: v npairs, npairs x (str key, str value).
 *              Set 0 is the empty set and is not stored. The builder
 *              writes, first, one set per distinct (cgroup, ppid) of the
 *              chunk's processes, in the order of their pids:
 *              {"cgroup": path, "ppid": N}, where path is the process's
 *              cgroup v2 path (fr_proc_info.cgroup) and N its parent's
 *              pid in decimal (fr_proc_info.ppid), each pair only when
 *              known (in that order); every sample of such a process
 *              has that set, other samples set 0. Then, for the
 *              ancestors of those processes that have no samples in the
 *              chunk (walking up the parents from each process until
 *              one of the chunk's, an unknown one or one without a
 *              parent; at most as many as the chunk has pids, plus
 *              64), one set {"pid": N, "ppid": M} each, which no sample
 *              refers to: a process that only forks and waits keeps
 *              its descendants reachable. A reader finds a process's
 *              parent from its samples' set, or from a set that has a
 *              "pid". Chunks sealed without cgroups or parents (older
 *              recorders, unknown processes) simply have fewer sets or
 *              none: the format is the same.
 *   events:    count; each: v event id, v lost records, v throttled,
 *              v truncated stacks (counters of this chunk's time span).
 *   samples:   v n (== header nsamples), in (cpu, time) order:
 *     cpu runs: count; each: v cpu (the first; later runs: cpu - previous
 *              run's cpu - 1), v length (>= 1, lengths add up to n),
 *              v period (ns; 0: none), v (time of the run's first sample -
 *              header first_ns).
 *     periods: for each sample after the first of its run, when the run has
 *              a period P: v k.
 *     jitter:  for each sample after the first of its run: z r. The sample
 *              time is the previous sample's + k x P + r (k x P is 0 in a
 *              run without a period).
 *     stack:   z (stack id - the previous sample's stack id; the first:
 *              stack id). The sample's pid is its stack's.
 *     tid:     z (tid - pid).
 *     event, weight, rate_hz, labelset: each as runs: v count; each: v
 *              value, v length (>= 1); lengths add up to n.
 *   sections:  only in version 3: until the block ends, each: v id, v len,
 *              len bytes. Ids increase; a reader skips one it does not
 *              know (a later addition), so sections are how the format
 *              grows. In version 2 nothing follows the last run list.
 *
 * SECTION 1, NAMES OVER TIME. The thread table gives one name per thread:
 * the one at seal time. A thread renamed within the chunk (prctl
 * PR_SET_NAME, pthread_setname_np) or a process that exec'd has its
 * changes here, with their times (the perf COMM records'), so each sample
 * is named as it was when it was taken:
 *              v count; each: v gap (tid: the previous entry's + 1 + gap,
 *              the first: gap), str before (the name before the first
 *              change), v n (>= 1), n x (z (time - previous change's
 *              time; the first: time - header first_ns), str name). Times
 *              do not decrease; they may lie outside [first_ns, last_ns]
 *              (a rename just before the first sample). The name at time
 *              t is that of the last change at or before t, else `before`.
 *              A process's command name (comm) at t is its main thread's
 *              (tid == pid) name at t, so an entry may be of a main thread
 *              the thread table does not hold; without one, the process
 *              table's comm.
 *
 * SECTION 2, CREATORS. The thread that created each thread of the thread
 * table, when the recorder saw it happen (the FORK record's ptid: for a
 * thread, the thread that called clone; for a process's main thread, the
 * thread of the parent that forked). Threads that existed before the
 * recorder started have no entry: their creator is unknown, not guessed.
 *              v count; each: v gap (tid, as in section 1; the tid must be
 *              in the thread table), v creator tid (>= 1).
 *
 * SECTION 3, APPLICATION LABELS (at most one; written only when a sample
 * has application labels, so other chunks are what they were before):
 * the labels a program set on the sampled thread (lib/flightrec/labels.h)
 * in force at the sample's time, as the recorder joined them
 * (recorder/tracking/applabels.c), or the recorder's reason why they are not known
 * (key "flightrec.labels"). Their own string table, so the metadata
 * above is unchanged:
 *   strings:   count; each: v len (1..FR_CHUNK_STRING_MAX), len bytes.
 *              These are ids 1..count; id 0 is "".
 *   sets:      count (<= FR_CHUNK_APP_SETS_MAX + 1: the samples past the
 *              most get one more set, {FR_APP_REASON_KEY: "dropped: too
 *              many sets in chunk"}); each: v npairs
 *              (1..FR_CHUNK_APP_PAIRS), npairs x (v key id (>= 1), v value
 *              id). These are sets 1..count; set 0 is "no labels".
 *   app:       the set of each sample, as runs like the columns above
 *              (v count; each: v set, v length), in the samples' order.
 *   Nothing else in the section.
 * SECTION 4, GAPS (written only when the chunk has some): when, within
 * the chunk's stretch of time, the recorder lost samples or its ingest
 * was held up, so a reader can place them in time (the events table's
 * `lost` says how many, not when):
 *              v count (<= FR_CHUNK_GAPS_MAX); each: v kind (0: samples
 *              lost, 1: a stall of the ingest), v event (lost: the
 *              event's id; stall: 0), v count (lost: the samples; stall:
 *              0), z (from - header first_ns), v (to - from). The lost
 *              samples were taken somewhere in [from, to]; the ingest did
 *              not drain from `from` to `to`. Times may lie outside
 *              [first_ns, last_ns] (a stall ends before the samples it
 *              held up are sealed). A lost count here is also in the
 *              events table; the events table may count more (samples
 *              lost with no known time: older recorders, a full gap
 *              list).
 * Section ids taken: 1 names, 2 creators, 3 application labels, 4 gaps.
 *
 * OPEN WAITS. A sample whose event is FR_EVENT_OFFCPU_OPEN (0x40000000,
 * core/store/sample.h) is not a sample but an open-wait record: thread
 * `tid` of `pid` was switched out and not yet back when the recorder
 * sealed the chunk. It is stored as any sample, so its stack is interned
 * with the others and the columns above encode it: time is the moment of
 * the seal (the pairing table was complete up to then; Unix ns), weight
 * how long the thread had been waiting then (ns: it left the CPU at time -
 * weight), cpu the one it left, rate 0, stack where it blocked. The
 * recorder writes one per blocked thread at every periodic or asked-for
 * seal (a chunk sealed because it is full has none; when the records do
 * not fit one chunk they continue in the next, with the same time), so the
 * records of the latest seal say which threads were blocked at that moment,
 * since when and where. A thread that was runnable then (in the run queue:
 * preempted, or woken and not on a CPU yet) has the event
 * FR_EVENT_OFFCPU_RUNNABLE (0x40000001) instead, and is otherwise the
 * same: readers that do not tell the two apart count both as open waits
 * (FR_EVENT_IS_OPEN_WAIT). Chunks written before have none and read the same;
 * the format version is unchanged (a reader that does not know the event
 * sees samples of an unknown event). Readers: core/query/profile_open.c.
 * Cost: a few bytes per blocked thread per seal (the event column is one
 * run, stacks are shared with the thread's earlier waits).
 *
 * Ids, pids, tids, cpus, events, rates and counts are 32-bit; a varint
 * that does not fit its field, or that is longer than 10 bytes, is corrupt.
 * Decoding checks every count against the bytes left, every id and index
 * against its table, every run length against the samples left and every
 * time against [first_ns, last_ns]; the stacks may hold at most
 * FR_CHUNK_RAW_MAX frames in all. A corrupt block is reported (-EBADMSG),
 * never trusted.
 *
 * WHY THIS LAYOUT: at 99 Hz a chunk holds ~200 samples, so per-chunk
 * tables matter as much as per-sample columns. Tables are delta coded and
 * build ids stored once; samples are reordered so that the cpu, event,
 * weight and rate columns collapse into runs and time becomes a count of
 * timer periods plus the interrupt jitter (a few microseconds, the bulk of
 * what a steady sample costs); stacks share their callers with their
 * neighbour and store the rest as small differences.
 */
#ifndef FR_CORE_CHUNK_H
#define FR_CORE_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "core/store/sample.h"

#define FR_CHUNK_MAGIC 0x4b435246u
#define FR_CHUNK_VERSION 3
/* The oldest version this build reads (no sections). */
#define FR_CHUNK_VERSION_MIN 2
/* Section ids (see "sections"). */
#define FR_CHUNK_SECTION_NAMES 1
#define FR_CHUNK_SECTION_CREATORS 2
#define FR_CHUNK_HEADER_LEN 64
#define FR_BUILD_ID_MAX 20
/* Sequence numbers at or above this are refused as corrupt. */
#define FR_CHUNK_SEQ_MAX (1ull << 62)
/* Limits a decoder enforces (and a builder never exceeds). */
#define FR_CHUNK_RAW_MAX (32u << 20)
#define FR_CHUNK_COMP_MAX (32u << 20)
#define FR_CHUNK_STRING_MAX 4096
/* Pairs in one application label set, and distinct sets in one chunk (a
 * sample beyond that has a reason label instead). */
#define FR_CHUNK_APP_PAIRS 16
#define FR_CHUNK_APP_SETS_MAX 65536
/* The section ids of the block's optional sections. */
#define FR_CHUNK_SECTION_APP 3
#define FR_CHUNK_SECTION_GAPS 4
/* Gaps (section 4) one chunk holds at most; a builder given more widens
 * its last gap of the same kind and event. */
#define FR_CHUNK_GAPS_MAX 64
enum fr_chunk_gap_kind {
	FR_GAP_LOST = 0,
	FR_GAP_STALL = 1,
};
/* The recorder's key for why a sample has no application labels. */
#define FR_APP_REASON_KEY "flightrec.labels"

struct fr_chunk_header {
	uint32_t magic;
	uint16_t version;
	uint16_t header_len;
	uint64_t seq;
	int64_t first_ns;
	int64_t last_ns;
	uint32_t nsamples;
	uint32_t raw_len;
	uint32_t comp_len;
	uint32_t covers;
	int64_t clock_offset;
	uint32_t payload_crc;
	uint32_t header_crc;
};

/* What the builder asks of the process tracker when it seals a chunk.
 * Strings returned are borrowed only until the callback's caller returns;
 * the builder copies what it keeps. Each returns 0 or -ENOENT (unknown). */
struct fr_proc_info {
	uint32_t pid;
	uint32_t uid;
	const char *comm;
	const char *exe;
	int64_t start_ns;
	uint8_t build_id_len;
	uint8_t build_id[FR_BUILD_ID_MAX];
	/* cgroup v2 path of the process ("/system.slice/x.service"), or NULL
	 * or "" when unknown. Stored as the "cgroup" label in the label set
	 * of the process's samples. */
	const char *cgroup;
	/* Parent process id (0: unknown). Stored as a "ppid" label (decimal)
	 * in the process's label set, so descendants of a process can be
	 * found from the chunks alone. */
	uint32_t ppid;
};

/* A thread's name from time_ns (Unix ns) on. */
struct fr_name_change {
	int64_t time_ns;
	const char *name;
};

struct fr_thread_info {
	uint32_t tid;
	uint32_t pid;
	const char *name; /* at seal time */
	/* Its renames the chunk's samples may need (0 when none), in time
	 * order, and its name before the first of them. The array is
	 * borrowed until the seal returns. */
	uint32_t nchanges;
	const struct fr_name_change *changes;
	const char *before;
	/* The thread that created it (0: unknown), see section 2. */
	uint32_t creator;
};

struct fr_map_info {
	uint64_t start;
	uint64_t end;
	uint64_t pgoff;
	const char *path;
	uint8_t build_id_len;
	uint8_t build_id[FR_BUILD_ID_MAX];
};

/* One application label; the strings are borrowed (see app_labels). */
struct fr_app_label {
	const char *key, *value;
};

struct fr_chunk_meta_ops {
	int (*proc)(void *arg, uint32_t pid, struct fr_proc_info *out);
	int (*thread)(void *arg, uint32_t tid, struct fr_thread_info *out);
	/* The mapping of `pid` that contains user address `addr`. */
	int (*mapping)(void *arg, uint32_t pid, uint64_t addr, struct fr_map_info *out);
	/* The application labels of a sample: of thread `tid` of `pid` at
	 * `time_ns` (Unix ns), or, when `ref` is not 0, the sample's
	 * fr_sample.app_ref. Fills at most FR_CHUNK_APP_PAIRS pairs of out,
	 * borrowed until the next call, and returns how many (0: none).
	 * Asked once per sample at seal time; may be NULL. */
	int (*app_labels)(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns, uint32_t ref,
			  struct fr_app_label *out);
	void *arg;
};

struct fr_chunk_builder;

/* Creates a builder whose chunks hold at most `max_samples` samples and
 * about `max_raw` bytes of block (at most FR_CHUNK_RAW_MAX / 2). All memory
 * is allocated here, so adding samples never allocates. The raw size is an
 * estimate: samples and stacks are counted exactly, the process, thread,
 * mapping and string tables filled at seal time by an allowance per
 * distinct stack. Returns NULL on allocation failure or when max_samples
 * is 0 or above 2^26. */
struct fr_chunk_builder *fr_chunk_builder_new(uint32_t max_samples, size_t max_raw);

/* Frees a builder; accepts NULL. */
void fr_chunk_builder_free(struct fr_chunk_builder *b);

/* Sets the zstd level of the chunks it seals (1..19, default 5): a writer
 * whose chunks are merged soon after (a ring with a journal) saves CPU at a
 * low level, since the merged chunk is compressed again. */
void fr_chunk_builder_set_level(struct fr_chunk_builder *b, int level);

/* Adds one sample (stack interned). Returns 0, or -ENOSPC when the chunk
 * is full: seal it and add the sample again. The first sample of a chunk
 * is always accepted. Stacks deeper than FR_MAX_FRAMES are cut to their
 * leaf end. */
int fr_chunk_builder_add(struct fr_chunk_builder *b, const struct fr_sample *s);

/* As fr_chunk_builder_add(), for a caller that adds many samples of the
 * same stacks (merging chunks): when *stack is UINT32_MAX the stack is
 * interned and its id stored there; otherwise *stack must be such an id,
 * given by this builder since its last seal for this very stack, and the
 * stack is not looked up again. */
int fr_chunk_builder_add_known(struct fr_chunk_builder *b, const struct fr_sample *s,
			       uint32_t *stack);

/* Counts records the kernel lost, throttling and truncated stacks for
 * `event` in the chunk being built. Up to 64 distinct event ids per chunk
 * are counted. Never allocates. */
void fr_chunk_builder_count(struct fr_chunk_builder *b, uint32_t event, uint64_t lost,
			    uint64_t throttled, uint64_t truncated);

/* Notes a gap (section 4) in the chunk being built: `count` samples of
 * `event` lost in [from_ns, to_ns] (FR_GAP_LOST; also count them with
 * fr_chunk_builder_count()), or the ingest held up from from_ns to to_ns
 * (FR_GAP_STALL, event and count 0). Past FR_CHUNK_GAPS_MAX, the last gap
 * of the same kind and event is widened. Never allocates. */
void fr_chunk_builder_gap(struct fr_chunk_builder *b, enum fr_chunk_gap_kind kind, uint32_t event,
			  uint64_t count, int64_t from_ns, int64_t to_ns);

/* Samples in the chunk being built, and the time of the earliest of them
 * (0 when there are none). */
uint32_t fr_chunk_builder_samples(const struct fr_chunk_builder *b);
int64_t fr_chunk_builder_first_ns(const struct fr_chunk_builder *b);

/* Encodes the chunk being built (header with seq 0, zstd payload) into a
 * malloc'd buffer returned in *out and *out_len that the caller frees, then
 * resets the builder for the next chunk. Process, thread and mapping
 * tables are filled through `ops` (any of which may be NULL; -ENOENT
 * answers are left out), and the label sets from the processes' cgroups
 * and parents (ops->proc is also asked about the ancestors of the
 * chunk's processes; see "labelsets" above).
 * `clock_offset` goes into the header.
 * Returns 0, -ENODATA when there is nothing to seal (no samples and no
 * counters), -ENOMEM, -EFBIG when the block would exceed FR_CHUNK_RAW_MAX.
 * The builder is reset on failure too (except -ENODATA): a chunk that
 * cannot be sealed is dropped rather than retried forever. */
int fr_chunk_builder_seal(struct fr_chunk_builder *b, const struct fr_chunk_meta_ops *ops,
			  int64_t clock_offset, void **out, size_t *out_len);

/* Parses and checks a header from `len` >= 64 bytes: magic, version,
 * header_len, header crc and that the lengths are plausible. Returns 0,
 * -EBADMSG (not a valid header) or -EPROTONOSUPPORT (a valid header of a
 * format version this build cannot read). */
int fr_chunk_header_parse(const void *buf, size_t len, struct fr_chunk_header *h);

/* Checks a whole chunk (header and payload crc) of `len` bytes. Returns 0
 * or -EBADMSG. */
int fr_chunk_verify(const void *buf, size_t len);

/* Stores `seq` and `covers` (< seq) in an encoded chunk's header and
 * recomputes its crc. */
void fr_chunk_set_seq(void *buf, uint64_t seq, uint32_t covers);

/* A decoded chunk. Everything is owned by the struct and freed with
 * fr_chunk_free(). String ids index `strings`; pid/tid columns are real
 * ids, not indexes. */
struct fr_chunk_proc {
	uint32_t pid, uid;
	uint32_t comm, exe; /* string ids */
	int64_t start_ns;
	uint8_t build_id_len;
	uint8_t build_id[FR_BUILD_ID_MAX];
};

struct fr_chunk_thread {
	uint32_t tid, pid;
	uint32_t name;	  /* string id */
	uint32_t creator; /* tid of the thread that created it; 0: unknown */
};

/* Names over time (section 1): entry k's changes are
 * name_changes[first .. first + n - 1]. */
struct fr_chunk_names {
	uint32_t tid;
	uint32_t before; /* string id */
	uint32_t first, n;
};

struct fr_chunk_name_change {
	int64_t time_ns;
	uint32_t name; /* string id */
};

struct fr_chunk_map {
	uint32_t pid;
	uint64_t start, end, pgoff;
	uint32_t path; /* string id */
	uint8_t build_id_len;
	uint8_t build_id[FR_BUILD_ID_MAX];
};

struct fr_chunk_stack {
	uint32_t pid;
	uint32_t nr_kernel;
	uint32_t nr_frames;
	uint32_t first; /* index of the leaf frame in frames[] */
};

struct fr_chunk_labelset {
	uint32_t npairs;
	uint32_t first; /* index into label_keys[] / label_values[] */
};

struct fr_chunk_event_stats {
	uint32_t event;
	uint64_t lost, throttled, truncated;
};

/* A gap (section 4). */
struct fr_chunk_gap {
	uint32_t kind; /* enum fr_chunk_gap_kind */
	uint32_t event;
	uint64_t count;
	int64_t from_ns, to_ns; /* from_ns <= to_ns */
};

struct fr_chunk {
	struct fr_chunk_header hdr;
	uint32_t nstrings;
	const char **strings; /* NUL-terminated */
	uint32_t nprocs;
	struct fr_chunk_proc *procs;
	uint32_t nthreads;
	struct fr_chunk_thread *threads;
	uint32_t nmaps;
	struct fr_chunk_map *maps; /* sorted by (pid, start) */
	uint32_t nstacks;
	struct fr_chunk_stack *stacks;
	uint64_t *frames;
	uint32_t nlabelsets; /* including the empty set 0 */
	struct fr_chunk_labelset *labelsets;
	uint32_t *label_keys, *label_values;
	uint32_t nevents;
	struct fr_chunk_event_stats *events;
	uint32_t nnames; /* sorted by tid */
	struct fr_chunk_names *names;
	uint32_t nname_changes;
	struct fr_chunk_name_change *name_changes;
	uint32_t nsamples;
	int64_t *time_ns;
	uint32_t *tid, *pid, *cpu, *event, *rate_hz, *stack, *labelset;
	uint64_t *weight;
	/* Application labels ("application labels" above): strings (0 is
	 * ""), sets (0 is none; keys and values are ids into app_strings)
	 * and each sample's set. Chunks without them have napps == 1. */
	uint32_t napp_strings;
	const char **app_strings;
	uint32_t napps;
	struct fr_chunk_labelset *apps;
	uint32_t *app_keys, *app_values;
	uint32_t *app;
	/* Gaps (section 4); none in most chunks. */
	uint32_t ngaps;
	struct fr_chunk_gap *gaps;
};

/* Decodes an encoded chunk (header + payload, `len` bytes), verifying the
 * crcs and every table and id. Returns 0 and a chunk the caller frees with
 * fr_chunk_free(), -EBADMSG on any corruption, -EPROTONOSUPPORT for another
 * format version, -ENOMEM. */
int fr_chunk_decode(const void *buf, size_t len, struct fr_chunk **out);

/* Frees a decoded chunk; accepts NULL. */
void fr_chunk_free(struct fr_chunk *c);

/* What label set `ls` (< c->nlabelsets) of a decoded chunk says of a
 * process, in the labels a builder writes (see "labelsets" above): its
 * "cgroup" (NULL when absent or empty), its "ppid" and, in an ancestor's
 * set, its "pid" (0 when absent or not a pid: 1..2^32-1 in decimal,
 * without sign or leading zero). */
struct fr_chunk_proc_labels {
	const char *cgroup;
	uint32_t pid, ppid;
};
void fr_chunk_labelset_proc(const struct fr_chunk *c, uint32_t ls,
			    struct fr_chunk_proc_labels *out);

/* Lookups in a decoded chunk; NULL when absent. */
const struct fr_chunk_proc *fr_chunk_find_proc(const struct fr_chunk *c, uint32_t pid);
const struct fr_chunk_thread *fr_chunk_find_thread(const struct fr_chunk *c, uint32_t tid);
const struct fr_chunk_map *fr_chunk_find_map(const struct fr_chunk *c, uint32_t pid, uint64_t addr);
const struct fr_chunk_names *fr_chunk_find_names(const struct fr_chunk *c, uint32_t tid);

/* The string id of thread `tid`'s name at `time_ns`: from its names over
 * time when the chunk has them, else the thread table's; 0 ("") when the
 * chunk does not know the thread. */
uint32_t fr_chunk_thread_name_at(const struct fr_chunk *c, uint32_t tid, int64_t time_ns);

/* The string id of process `pid`'s command name at `time_ns`: its main
 * thread's name then when the chunk has its names over time, else the
 * process table's comm; 0 when unknown. */
uint32_t fr_chunk_comm_at(const struct fr_chunk *c, uint32_t pid, int64_t time_ns);

#endif
