/* The interrupt-context wake classifier (recorder/sampling/wake_class.h),
 * built from its own source alone, over a kallsyms listing written here:
 * a function's range ends where the next text symbol (of any module,
 * listed in any order) begins; the innermost known frame names the wake;
 * interrupt entries and the softirq loop give the context; data symbols,
 * zero addresses (a listing read without privileges) and lines that do
 * not parse are ignored. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/store/sample.h"
#include "recorder/sampling/wake_class.h"
#include "tests/unit/check.h"

static const char listing[] = "ffffffff81000000 T _stext\n"
			      "ffffffff81100000 t hrtimer_wakeup\n"
			      "ffffffff81100400 T __hrtimer_run_queues\n"
			      "ffffffff81100800 T hrtimer_interrupt\n"
			      "ffffffff81100c00 T other_fn\n"
			      "ffffffff81200000 T blk_mq_end_request\n"
			      "ffffffff81200200 T blk_mq_complete_request\n"
			      "ffffffff81300000 T net_rx_action\n"
			      "ffffffff81400000 T __sysvec_apic_timer_interrupt\n"
			      "ffffffff81400100 T handle_softirqs\n"
			      "ffffffff81400300 T try_to_wake_up\n"
			      "ffffffff81450000 t try_charge_memcg\n"
			      "ffffffff81440000 T bpf_trace_run3\n"
			      "ffffffff81441000 T get_signal\n"
			      "ffffffff81450800 T out_of_memory\n"
			      "ffffffff81451000 T __alloc_pages_slowpath\n"
			      "ffffffffc0001000 t nvme_irq\t[nvme]\n"
			      "ffffffffc0000000 t early_in_module\t[nvme]\n"
			      "ffffffff82000000 D hrtimer_data_is_not_text\n"
			      "0000000000000000 T napi_poll\n"
			      "garbage line\n"
			      "ffffffff8150000 X\n"
			      "ffffffff81500000 T last_fn\n";

int main(void)
{
	FILE *f = fmemopen((void *)listing, sizeof(listing) - 1, "r");
	struct fr_wake_class *c = fr_wake_class_load(f);
	uint64_t timer[] = {0xffffffff81400310ull, 0xffffffff81100010ull, 0xffffffff81100410ull,
			    0xffffffff81100810ull, 0xffffffff81400010ull};
	uint64_t io[] = {0xffffffff81400310ull, 0xffffffff81200210ull, 0xffffffffc0001010ull,
			 0xffffffff81400010ull};
	uint64_t net[] = {0xffffffff81400310ull, 0xffffffff81300010ull, 0xffffffff81400110ull};
	uint64_t task[] = {0xffffffff81400310ull, 0xffffffff81100c10ull};
	/* OOM kills: the killer's stacks, leaf first. */
	uint64_t memcg_oom[] = {0xffffffff81450810ull, 0xffffffff81450010ull};
	uint64_t global_oom[] = {0xffffffff81450810ull, 0xffffffff81451010ull};
	/* A crash's stack at signal_deliver: the program (JIT, not in
	 * kallsyms' text), bpf_trace_run3, then get_signal and its callers. */
	uint64_t crash[] = {0xffffffffc0002000ull, 0xffffffff81440010ull, 0xffffffff81441010ull,
			    0xffffffff81400010ull};
	/* Past the end of hrtimer_interrupt's range (other_fn's). */
	uint64_t edge[] = {0xffffffff81100bffull, 0xffffffff81100c00ull};

	CHECK(f && c, "load");
	fclose(f);
	/* 11 known names with text addresses (napi_poll's is zero). */
	CHECK(fr_wake_class_ranges(c) == 11, "%u ranges", fr_wake_class_ranges(c));
	CHECK(fr_wake_class_note(c, timer, 5, 1) == FR_FRAME_NOTE_WAKE_TIMER, "timer");
	CHECK(fr_wake_class_context(c, timer, 5) == FR_WAKE_HARDIRQ, "timer's context");
	CHECK(fr_wake_class_note(c, io, 4, 1) == FR_FRAME_NOTE_WAKE_IO, "I/O");
	CHECK(fr_wake_class_note(c, io + 2, 2, 1) == FR_FRAME_NOTE_WAKE_IO, "a module's I/O");
	CHECK(fr_wake_class_note(c, net, 3, 0) == FR_FRAME_NOTE_WAKE_NET, "net");
	CHECK(fr_wake_class_context(c, net, 3) == FR_WAKE_SOFTIRQ, "net's context");
	CHECK(fr_wake_class_context(c, task, 2) == FR_WAKE_TASK, "a thread's own wake");
	CHECK(fr_wake_class_note(c, task, 2, 1) == FR_FRAME_NOTE_WAKE_IRQ, "unknown in a hardirq");
	CHECK(fr_wake_class_note(c, task, 2, 0) == FR_FRAME_NOTE_WAKE_SOFTIRQ,
	      "unknown in a softirq");
	CHECK(fr_wake_class_note(c, edge, 1, 0) == FR_FRAME_NOTE_WAKE_TIMER,
	      "last byte of a range");
	CHECK(fr_wake_class_note(c, edge + 1, 1, 0) == FR_FRAME_NOTE_WAKE_SOFTIRQ,
	      "first byte past a range");
	CHECK(fr_wake_class_context(c, edge, 0) == FR_WAKE_TASK, "no frames");
	CHECK(fr_wake_class_memcg_oom(c, memcg_oom, 2), "a memory cgroup's OOM kill");
	CHECK(!fr_wake_class_memcg_oom(c, global_oom, 2), "the machine's OOM kill");
	CHECK(!fr_wake_class_memcg_oom(c, memcg_oom, 1), "the charge path not on the stack");
	CHECK(fr_wake_class_tracing_frames(c, crash, 4) == 2, "a crash's tracing frames: %u",
	      fr_wake_class_tracing_frames(c, crash, 4));
	CHECK(fr_wake_class_tracing_frames(c, crash + 2, 2) == 0, "a stack from get_signal on");
	CHECK(fr_wake_class_tracing_frames(c, crash, 2) == 0, "no get_signal: kept whole");
	CHECK(fr_wake_class_context(c, memcg_oom, 2) == FR_WAKE_TASK,
	      "the charge path is no context");
	fr_wake_class_free(c);

	/* Nothing readable: every wake by its context. */
	c = fr_wake_class_load(NULL);
	CHECK(c && fr_wake_class_ranges(c) == 0, "empty");
	CHECK(fr_wake_class_note(c, timer, 5, 1) == FR_FRAME_NOTE_WAKE_IRQ, "empty: irq");
	CHECK(fr_wake_class_context(c, timer, 5) == FR_WAKE_TASK, "empty: context unknown");
	fr_wake_class_free(c);
	return failures != 0;
}
