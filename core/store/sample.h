/* The sample model shared by the recorder (which produces samples) and the
 * chunk codec (which stores them).
 */
#ifndef FR_CORE_SAMPLE_H
#define FR_CORE_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

/* Deepest call stack kept; deeper stacks are truncated at the root end and
 * counted as truncated. */
#define FR_MAX_FRAMES 127

/* Marker frames. When a user stack could not be unwound to its outermost
 * frame, the recorder appends one pseudo address as the root (last) user
 * frame, saying why it stopped; the query side names it
 * "[truncated: ...]" and counts it in a comment. The values are below the
 * first page, where no code is ever mapped, and equal to the unwinder's
 * enum fr_unwind_end (core/unwind/unwind.h; the recorder checks that they
 * agree) times 16. */
enum fr_frame_mark {
	FR_FRAME_MARK_STACK_COPY = 1, /* the stack copy was too small */
	FR_FRAME_MARK_NO_CFI,	      /* code without unwind information */
	FR_FRAME_MARK_PENDING,	      /* its unwind table was not built yet */
	FR_FRAME_MARK_BAD,	      /* the unwind data led nowhere sound */
	FR_FRAME_MARK_MAX_DEPTH,      /* FR_MAX_FRAMES reached */
	FR_FRAME_MARK_COUNT	      /* one past the last */
};
#define FR_FRAME_MARK_ADDR(end) ((uint64_t)(end)*16)
#define FR_FRAME_IS_MARK(addr)                                                                  \
	((addr) >= FR_FRAME_MARK_ADDR(1) && (addr) < FR_FRAME_MARK_ADDR(FR_FRAME_MARK_COUNT) && \
	 ((addr)&15) == 0)
/* The reason (enum fr_frame_mark) of a marker address. */
#define FR_FRAME_MARK_REASON(addr) ((unsigned)((addr) / 16))

/* Note frames: pseudo addresses (also below the first page, apart from the
 * marker frames) that stand for what was not recorded as a stack. The
 * off-CPU eBPF mechanism (recorder/sampling/bpf_offcpu.h) puts SHORT_WAITS as the
 * only frame of a thread's waits under min_wait added up, and NO_USER
 * after the kernel frames of a wait that was not in a system call (no
 * user stack was taken). The query side names them (fr_frame_note_name). */
enum fr_frame_note {
	FR_FRAME_NOTE_SHORT_WAITS = 1,
	FR_FRAME_NOTE_NO_USER,
	/* The root of a wakeup sample whose wake ran in interrupt context:
	 * what woke the thread, not the thread the interrupt landed on. */
	FR_FRAME_NOTE_WAKE_TIMER,   /* a timer expired (hrtimer, timer wheel) */
	FR_FRAME_NOTE_WAKE_IO,	    /* a block I/O completion */
	FR_FRAME_NOTE_WAKE_NET,	    /* network receive or transmit */
	FR_FRAME_NOTE_WAKE_IRQ,	    /* another hardware interrupt */
	FR_FRAME_NOTE_WAKE_SOFTIRQ, /* another softirq */
	/* After the kernel frames of a wakeup sample whose waker is a thread
	 * of another process: its user frames are not kept, since a sample's
	 * user addresses are symbolized in the (woken) sample's process;
	 * waker_pid and waker_comm say who it was. */
	FR_FRAME_NOTE_WAKER_ELSEWHERE,
	FR_FRAME_NOTE_COUNT
};
#define FR_FRAME_NOTE_ADDR(n) (0x800 + (uint64_t)(n)*16)
#define FR_FRAME_IS_NOTE(addr)                                                                  \
	((addr) >= FR_FRAME_NOTE_ADDR(1) && (addr) < FR_FRAME_NOTE_ADDR(FR_FRAME_NOTE_COUNT) && \
	 ((addr)&15) == 0)
#define FR_FRAME_NOTE_OF(addr) ((unsigned)(((addr)-0x800) / 16))

/* Python frames: a frame of a CPython process's interpreter that the
 * recorder put in place of the native _PyEval_EvalFrameDefault frame
 * running it (recorder/ingest/pystacks.c). Its "address" holds the code
 * object's address in the process and the instruction's byte offset in
 * its bytecode: bit 63 set and bit 62 clear (never a user address, never
 * a kernel one: those are 0xffff8... and up), then the code object's
 * address / 8 (44 bits: a user address is below 2^47), then the offset
 * in 2-byte code units (18 bits; all ones: not known). The query side
 * names it from the symbol cache's Python names of the process
 * (core/symbols/pycodes.h): function, file, line. */
#define FR_FRAME_PY_TAG (2ull << 62)
#define FR_FRAME_IS_PY(addr) (((addr) >> 62) == 2)
#define FR_FRAME_PY_UNITS_NONE 0x3ffffull
#define FR_FRAME_PY_NO_OFFSET UINT32_MAX
#define FR_FRAME_PY(code, offset)                                                     \
	(FR_FRAME_PY_TAG | ((((uint64_t)(code) >> 3) & ((1ull << 44) - 1)) << 18) |   \
	 ((offset) == FR_FRAME_PY_NO_OFFSET || (offset) / 2 >= FR_FRAME_PY_UNITS_NONE \
		  ? FR_FRAME_PY_UNITS_NONE                                            \
		  : (uint64_t)(offset) / 2))
/* The code object's address and the byte offset (FR_FRAME_PY_NO_OFFSET)
 * of a Python frame. */
#define FR_FRAME_PY_CODE(addr) ((((addr) >> 18) & ((1ull << 44) - 1)) << 3)
#define FR_FRAME_PY_OFFSET(addr)                                   \
	(((addr)&FR_FRAME_PY_UNITS_NONE) == FR_FRAME_PY_UNITS_NONE \
		 ? FR_FRAME_PY_NO_OFFSET                           \
		 : (uint32_t)(((addr)&FR_FRAME_PY_UNITS_NONE) * 2))

/* Event identifiers as stored in chunks (one byte on disk is enough, the
 * column is a varint). The names and units are fixed by fr_event_name() and
 * fr_event_unit(); new events are appended, never renumbered. */
enum fr_event {
	FR_EVENT_CPU = 0, /* software cpu-clock, weight in ns */
	FR_EVENT_CYCLES,
	FR_EVENT_INSTRUCTIONS,
	FR_EVENT_CACHE_REFERENCES,
	FR_EVENT_CACHE_MISSES,
	FR_EVENT_BRANCH_INSTRUCTIONS,
	FR_EVENT_BRANCH_MISSES,
	FR_EVENT_PAGE_FAULTS,
	FR_EVENT_CONTEXT_SWITCHES,
	FR_EVENT_CPU_MIGRATIONS,
	FR_EVENT_OFFCPU, /* sched_switch, weight in wall ns */
	FR_EVENT_RAW,	 /* reserved: raw events use FR_EVENT_RAW_BASE */
	/* Memory (lib/flightrec/alloc_abi.h, recorder/sampling/allocs.c). A
	 * sampled allocation: weight = the block's size in bytes, rate_hz =
	 * the sampling mean in bytes it was taken at (a reader weighs it by
	 * 1/p objects and size/p bytes, p = 1 - exp(-size / mean)), stack =
	 * where it was allocated. */
	FR_EVENT_ALLOC,
	/* Not stored: the name of the live-heap profile a reader builds from
	 * FR_EVENT_HEAP_LIVE, FR_EVENT_ALLOC and FR_EVENT_ALLOC_FREE records
	 * (core/query). */
	FR_EVENT_HEAP,
	/* The OOM killer killed process `pid`: weight = its RSS in bytes
	 * (anon + file + shmem) at the kill, rate 0, no user stack; label
	 * constraint: "memcg" (a memory cgroup's limit) or "global" (the
	 * machine's memory), where kallsyms could be read. */
	FR_EVENT_OOM,
	/* A process's resident set, sampled once a second: weight = RSS
	 * bytes at `time`, rate 0, no stack. A gauge: readers take the last
	 * value in a step, not the sum. */
	FR_EVENT_RSS,
	/* The machine's memory pressure (/proc/pressure/memory), once a
	 * second, pid 0: weight = nanoseconds in the second before `time`
	 * during which some task stalled on memory ("some total" delta), rate
	 * 0, no stack. */
	FR_EVENT_MEM_PRESSURE,
	/* Who ended a long wait (recorder/bpf/offcpu.bpf.c at sched_waking):
	 * one sample per wait of at least min_wait that another thread or an
	 * interrupt ended. pid, tid: the WOKEN thread's (so --pid, --comm and
	 * its application labels select the victims); stack: the WAKER's,
	 * kernel + user, where it woke the waiter (a wake from interrupt
	 * context: the kernel frames under a FR_FRAME_NOTE_WAKE_* note as
	 * root, no user stack); weight: ns the woken thread had waited when it
	 * was woken; rate 0; cpu: the waker's. The waker's pid, tid and comm
	 * go as the application labels waker_pid, waker_tid, waker_comm
	 * beside the woken thread's own. */
	FR_EVENT_WAKEUP,
	/* Time runnable but not running: one sample when a thread that waited
	 * for a CPU (woken, or preempted) for at least min_wait gets one.
	 * pid, tid, stack: the thread's, where it resumed (kernel + user);
	 * weight: ns from runnable to running; rate 0; cpu: the CPU it got.
	 * The comm of the task that ran on that CPU just before it goes as
	 * the application label ran_instead. Shorter delays are added up per
	 * thread as off-CPU's short waits are (stack: the note
	 * FR_FRAME_NOTE_SHORT_WAITS). */
	FR_EVENT_RUNQUEUE,
	/* A cgroup's CPU throttling (cpu.stat), once a second for each cgroup
	 * whose processes ran and were throttled in that second: pid = one
	 * such process (its cgroup is the chunk's for it), weight =
	 * nanoseconds throttled in the second before `time` (throttled_usec
	 * delta, v1: throttled_time), rate 0, no stack. */
	FR_EVENT_THROTTLED,
	/* The black box (recorder/bpf/events.bpf.c): one record per
	 * occurrence, recorded always, listed by `flightrec events`. Their
	 * fields beyond pid, tid and time go as application labels (the
	 * labels' keys below), beside the process's own labels.
	 *
	 * A process ran a new program (sched_process_exec): pid = the
	 * process, weight 1, rate 0, no stack; labels path (the file
	 * executed), ppid, old_pid (the thread that called execve, when not
	 * the leader). */
	FR_EVENT_EXEC,
	/* A process ended (sched_process_exit of its last thread): weight =
	 * its lifetime in ns, rate 0, no stack; labels exit_code (exit status
	 * 0..255, when it exited) or signal (the signal's name, "SIGKILL",
	 * when a signal ended it) and core ("1" when it dumped core), cpu_ns
	 * (user + system CPU time of all its threads). */
	FR_EVENT_EXIT,
	/* A fatal signal was delivered (signal_deliver with the default
	 * action of a core-dumping signal: SIGSEGV, SIGBUS, SIGILL, SIGFPE,
	 * SIGABRT, SIGSYS, SIGTRAP, SIGQUIT, SIGXCPU, SIGXFSZ): pid, tid =
	 * the faulting thread's; stack: its stack at the fault, kernel +
	 * user, unwound like cpu samples; weight 1, rate 0; labels signal
	 * ("SIGSEGV"), code (si_code, "SEGV_MAPERR" or the number), addr
	 * ("0x..." where the kernel gives a fault address: SIGSEGV, SIGBUS,
	 * SIGILL, SIGFPE, SIGTRAP). */
	FR_EVENT_CRASH,
	/* The machine's CPU and I/O pressure (/proc/pressure/cpu, io), once
	 * a second, pid 0, as memory-pressure: weight = ns in the second
	 * before `time` during which some task stalled ("some total"
	 * delta), rate 0, no stack. */
	FR_EVENT_CPU_PRESSURE,
	FR_EVENT_IO_PRESSURE,
	FR_EVENT_COUNT
};

/* Not an event one records but a record kind stored in the event column:
 * an open wait, a thread switched out and not yet back when the recorder
 * sealed the chunk. Its time is that moment (Unix ns), its weight how long
 * the thread had waited then (ns; it left the CPU at time - weight), its
 * stack where it blocked. Never asked for by name; profiles of offcpu
 * count it (see "open waits" in core/store/chunk.h). */
#define FR_EVENT_OFFCPU_OPEN 0x40000000u
/* An open wait of a thread that was runnable at that moment: in the run
 * queue, waiting for a CPU (preempted, or woken and not on a CPU yet),
 * not blocked. Read as FR_EVENT_OFFCPU_OPEN everywhere else. */
#define FR_EVENT_OFFCPU_RUNNABLE 0x40000001u
/* Whether an event id is an open-wait record, blocked or runnable. */
#define FR_EVENT_IS_OPEN_WAIT(id) (((id) & ~1u) == FR_EVENT_OFFCPU_OPEN)

/* Record kinds of the heap, stored in the event column like open waits
 * and never asked for by name (core/query builds "heap" from them):
 * - FR_EVENT_ALLOC_FREE: a sampled block was freed at `time` (or its
 *   process ended): pid, tid (the freeing thread's), weight (size), rate
 *   (mean) and stack (where it was allocated) are the FR_EVENT_ALLOC
 *   sample's, so a window's allocations minus its frees, per stack, is
 *   the window's growth of the live heap;
 * - FR_EVENT_HEAP_LIVE: a sampled block still live at `time`, written
 *   for every live block of a process at each heap snapshot (every
 *   FR_HEAP_SNAPSHOT_NS): weight, rate, stack and tid as the sample's.
 *   The live heap at T is the last snapshot at or before T, plus the
 *   allocations after it up to T, minus the frees after it up to T. */
#define FR_EVENT_ALLOC_FREE 0x40000002u
#define FR_EVENT_HEAP_LIVE 0x40000003u
#define FR_HEAP_SNAPSHOT_NS (30ll * 1000000000ll)

/* A raw PMU event "raw:0xNNNN" is stored as FR_EVENT_RAW_BASE | code, code
 * below 2^31 (the perf_event_attr.config of a PERF_TYPE_RAW event). */
#define FR_EVENT_RAW_BASE 0x80000000u
#define FR_EVENT_IS_RAW(id) (((id)&FR_EVENT_RAW_BASE) != 0)
#define FR_EVENT_RAW_CODE(id) ((id) & ~FR_EVENT_RAW_BASE)
/* A raw event with more than that, "raw:0xCONFIG,config1=0x...,config2=0x..."
 * (any of the three 64-bit words of perf_event_attr; config above
 * 0x7fffffff, or config1 or config2 not 0), is FR_EVENT_RAWX_BASE | a
 * 29-bit hash of the three: the same id in every process, and the words
 * are known to a process that looked the name up (core/store/sample_raw.c;
 * to others it is "raw:id=0xNNNNNNNN"). Ids below FR_EVENT_OFFCPU_OPEN
 * that no version gave an event before. */
#define FR_EVENT_RAWX_BASE 0x20000000u
#define FR_EVENT_IS_RAWX(id) (((id)&0xe0000000u) == FR_EVENT_RAWX_BASE)
/* Longest event name fr_event_format() writes, with its NUL: a raw event
 * with all three words. */
#define FR_EVENT_NAME_MAX 80
/* The accepted event names, for messages. */
#define FR_EVENT_NAMES                                                        \
	"cpu, cycles, instructions, cache-references, cache-misses, "         \
	"branch-instructions, branch-misses, page-faults, context-switches, " \
	"cpu-migrations, offcpu, alloc, heap, oom, rss, memory-pressure, "    \
	"wakeup, runqueue, throttled, cpu-pressure, io-pressure, "            \
	"raw:0xCONFIG[,config1=0xN][,config2=0xN]"

/* One sample as the recorder hands it to the chunk builder. All pointers
 * are borrowed for the duration of the call that receives the sample. */
struct fr_sample {
	int64_t time_ns; /* CLOCK_REALTIME, Unix nanoseconds */
	uint32_t pid;
	uint32_t tid;
	uint32_t cpu;
	uint32_t event;	    /* enum fr_event */
	uint64_t weight;    /* in the event's unit (ns for cpu) */
	uint32_t rate_hz;   /* sampling rate this sample was collected at; 0 for
				* events that are not rate-sampled (offcpu: every
				* switch is recorded) */
	uint16_t nr_kernel; /* leading entries of ips[] that are kernel frames */
	uint16_t nr_frames; /* entries in ips[], leaf first, <= FR_MAX_FRAMES */
	const uint64_t *ips;
	/* 0: the chunk builder asks the seal's ops for the application
	 * labels by (pid, tid, time); else a reference those ops resolve
	 * (the merge's, to carry a sample's labels into the merged chunk). */
	uint32_t app_ref;
};
/* An app_ref that says the sample has no application labels (not joined by
 * time). */
#define FR_APP_REF_NONE 0xffffffffu

/* Name ("cpu", "cycles", ...) and pprof unit ("nanoseconds", "count") of an
 * event id; "raw" for raw ids, "unknown" for ids out of range. */
const char *fr_event_name(uint32_t event);
const char *fr_event_unit(uint32_t event);

/* Writes the full name of an event id into `buf` ("cpu", "raw:0x1a2",
 * "raw:0x10000003c,config1=0x3f807f8fff") and
 * returns buf. FR_EVENT_NAME_MAX bytes are always enough. */
char *fr_event_format(uint32_t event, char *buf, size_t len);

/* Looks an event up by name: one of FR_EVENT_NAMES, "raw:0xCONFIG" (1 to
 * 16 hex digits) with ",config1=0x..." and ",config2=0x..." (each at most
 * once, in any order), or "raw:id=0xNNNNNNNN". Returns its id (>= 0 as
 * int64) or -ENOENT (fr_event_raw_parse says why for a raw name). */
int64_t fr_event_lookup(const char *name);

/* The three words of a raw event's perf_event_attr. */
struct fr_event_raw {
	uint64_t config, config1, config2;
};

/* Parses "raw:0xCONFIG[,config1=0xN][,config2=0xN]" into `out`. Returns 0,
 * or -EINVAL with the reason in `err`, e.g. "\"raw:0x1c2,config3=0x1\":
 * after the config only config1=0x... and config2=0x... may follow". */
int fr_event_raw_parse(const char *name, struct fr_event_raw *out, char *err, size_t errlen);

/* The id of raw event `r` (remembered for fr_event_raw_get when it is an
 * FR_EVENT_RAWX_BASE one). Returns it, or -EEXIST (another event has that
 * id) or -ENOSPC (64 such events already) with `err` set. Any thread. */
int64_t fr_event_raw_id(const struct fr_event_raw *r, char *err, size_t errlen);

/* The words of raw id `event`: 0, or -ENOENT for an id that is not raw or
 * an FR_EVENT_RAWX_BASE id this process never looked up. */
int fr_event_raw_get(uint32_t event, struct fr_event_raw *out);

/* The name of a raw id, as fr_event_format; fr_event_raw_lookup is the
 * reverse, for names starting "raw:". */
void fr_event_raw_format(uint32_t event, char *buf, size_t len);
int64_t fr_event_raw_lookup(const char *name);

/* Whether an event is sampled at a rate that consumers choose (every event
 * but offcpu, which records each context switch, and the memory events:
 * alloc is sampled by bytes at a mean, the others are not sampled). */
int fr_event_has_rate(uint32_t event);

/* Whether an event is a hardware (PMU) event: cycles .. branch-misses and
 * raw events. */
int fr_event_is_hardware(uint32_t event);

/* Whether an event is one of the memory events (alloc .. memory-pressure),
 * which no perf_event source records. */
int fr_event_is_memory(uint32_t event);

/* Whether an event is a series the recorder samples by itself and one
 * reads over time, never as a profile: oom, rss, memory-pressure,
 * throttled, exec, exit, crash, cpu-pressure, io-pressure. */
int fr_event_is_series(uint32_t event);

/* Whether an event is one of the black box's: oom, exec, exit, crash
 * (one record per occurrence) and the series memory-pressure,
 * cpu-pressure, io-pressure and throttled: what `flightrec events`
 * lists. */
int fr_event_is_blackbox(uint32_t event);

/* What a marker frame's reason (enum fr_frame_mark) says: "stack copy too
 * small", "no unwind info", "unwind table not ready", "bad unwind data",
 * "too many frames"; "unknown" out of range. */
const char *fr_frame_mark_name(unsigned reason);

/* The function name of a note frame (enum fr_frame_note): "[off-CPU waits
 * under min_wait]", "[user stack not captured: not in a system call]";
 * "[unknown note]" out of range. */
const char *fr_frame_note_name(unsigned note);

#endif
