/* The table unwinder (see unwind.h): one step per frame, from the row that
 * covers the frame's address to the caller's rip, rsp and rbp, with every
 * load checked against the stack copy.
 */
#include "core/unwind/unwind.h"

#include <stdbool.h>
#include <string.h>

/* What a step returns when the unwind goes on. */
#define STEP_ON (-1)

struct frame {
	uint64_t ip, sp, bp;
	bool bp_known; /* an rbp rule said the caller's rbp is lost */
	bool exact;    /* ip is no return address: look it up as is */
	bool bp_saved; /* bp was loaded by a frame-pointer step: the
			* callee's saved rbp, not a register left as is */
};

static bool load(const struct fr_unwind_stack *s, uint64_t addr, uint64_t *v)
{
	uint64_t off = addr - s->sp;

	if (addr < s->sp || off > s->size || s->size - off < sizeof(*v))
		return false;
	memcpy(v, s->data + off, sizeof(*v));
	return true;
}

/* A step with the frame pointer, for code without CFI (JIT code, V8's
 * builtins between the FDEs of node's text, CPython's perf trampolines,
 * Go): rbp must point into the copy, above the current frame, where a
 * `push %rbp; mov %rsp, %rbp` prologue leaves the caller's rbp and the
 * return address above it. The rbp it starts from is the one the CFI of
 * the frames below recovered (step_row keeps it current), so a JIT frame
 * called from code that uses rbp for anything is still stepped right.
 * A saved rbp of 0 that a frame-pointer step loaded is the outermost
 * frame: the x86-64 ABI has the process's entry and each thread's start
 * clear rbp, and a callee that keeps a frame pointer saved it. An rbp of
 * 0 otherwise says nothing: code built without frame pointers often
 * never touches rbp, which stays 0 from _start on. */
static int step_fp(const struct fr_unwind_stack *s, struct frame *f)
{
	uint64_t bp = f->bp, ra, caller_bp;

	if (f->bp_saved && bp == 0)
		return FR_UNWIND_DONE;
	if (!f->bp_known || bp < f->sp || (bp & 7) || bp - s->sp >= s->size)
		return FR_UNWIND_NO_CFI;
	if (!load(s, bp, &caller_bp) || !load(s, bp + 8, &ra))
		return FR_UNWIND_STACK_COPY;
	f->ip = ra;
	f->bp = caller_bp;
	f->sp = bp + 16;
	f->exact = false;
	f->bp_saved = true;
	return STEP_ON;
}

/* A frame without CFI whose frame pointer cannot be followed, reached by
 * a return address: a stub that keeps no frame pointer but reserved one
 * slot below its return address, as CPython 3.12's perf trampolines do
 * (-X perf: copies of `sub $8, %rsp; call *%rcx; add $8, %rsp; ret` in
 * anonymous memory, called from code that uses rbp for anything). Taken
 * only when the return address at rsp + 8 is in code whose CFI covers
 * it, so that a guess that lands anywhere else stops the unwind as
 * before; rbp is unchanged, as the stub leaves it. */
static int step_stub(const struct fr_unwind_stack *s, fr_unwind_find_fn find, void *arg,
		     struct frame *f)
{
	uint64_t ra, vaddr = 0;
	int miss = 0;
	const struct fr_cfi_table *t;

	if (f->exact || !load(s, f->sp + 8, &ra) || ra == 0)
		return FR_UNWIND_NO_CFI;
	t = find(arg, ra - 1, &vaddr, &miss);
	if (!t || !fr_cfi_lookup(t, vaddr))
		return FR_UNWIND_NO_CFI;
	f->ip = ra;
	f->sp += 16;
	return STEP_ON;
}

/* A frame in code without CFI: by its frame pointer, else as a stub. */
static int step_nocfi(const struct fr_unwind_stack *s, fr_unwind_find_fn find, void *arg,
		      struct frame *f)
{
	int end = step_fp(s, f);

	return end == FR_UNWIND_NO_CFI ? step_stub(s, find, arg, f) : end;
}

/* The interrupted context of a signal frame, from the ucontext the
 * kernel saved on the stack (rip follows rsp there, see cfi.c). */
static int step_signal(const struct fr_unwind_stack *s, const struct fr_cfi_row *r, struct frame *f)
{
	uint64_t sp, ip, bp;

	if (!load(s, f->sp + (uint64_t)(int64_t)r->cfa_off, &sp) ||
	    !load(s, f->sp + (uint64_t)(int64_t)r->cfa_off + 8, &ip) ||
	    !load(s, f->sp + (uint64_t)(int64_t)r->fp_off, &bp))
		return FR_UNWIND_STACK_COPY;
	f->ip = ip;
	f->sp = sp;
	f->bp = bp;
	f->bp_known = true;
	f->bp_saved = false;
	/* The interrupted instruction itself, not a return address. */
	f->exact = true;
	return STEP_ON;
}

static int step_row(const struct fr_unwind_stack *s, const struct fr_cfi_row *r, uint64_t vaddr,
		    struct frame *f)
{
	uint64_t cfa, ra, bp = f->bp;

	switch (r->kind) {
	case FR_CFA_SP: cfa = f->sp + (uint64_t)(int64_t)r->cfa_off; break;
	case FR_CFA_FP:
		if (!f->bp_known)
			return FR_UNWIND_BAD;
		cfa = f->bp + (uint64_t)(int64_t)r->cfa_off;
		break;
	case FR_CFA_PLT:
		/* fp_off holds the stub offset from which the index has been
		 * pushed. */
		cfa = f->sp + (uint64_t)(int64_t)r->cfa_off +
		      ((vaddr & 15) >= (uint64_t)r->fp_off ? 8 : 0);
		break;
	case FR_CFA_SIGNAL: return step_signal(s, r, f);
	case FR_CFA_END: return FR_UNWIND_DONE;
	default: return FR_UNWIND_BAD;
	}
	if (!load(s, cfa - 8, &ra))
		return FR_UNWIND_STACK_COPY;
	if (r->kind == FR_CFA_SP || r->kind == FR_CFA_FP) {
		uint64_t slot = cfa + (uint64_t)(int64_t)r->fp_off;

		/* A slot below rsp was popped already (an epilogue after
		 * `pop %rbp`, where GCC's CFI still names the save): rbp
		 * holds the caller's value again, and the slot is not in the
		 * copy, which starts at rsp. */
		if (r->fp_rule == FR_FP_SAVED && slot >= f->sp) {
			if (!load(s, slot, &bp))
				return FR_UNWIND_STACK_COPY;
			f->bp_known = true;
		}
		if (r->fp_rule == FR_FP_UNDEF)
			f->bp_known = false;
	}
	f->ip = ra;
	f->sp = cfa;
	f->bp = bp;
	f->exact = false;
	f->bp_saved = false;
	return STEP_ON;
}

/* One frame: from f's registers to its caller's. */
static int step(const struct fr_unwind_stack *s, fr_unwind_find_fn find, void *arg, bool first,
		struct frame *f)
{
	uint64_t vaddr = 0;
	int miss = 0;
	const struct fr_cfi_table *t = find(arg, f->exact ? f->ip : f->ip - 1, &vaddr, &miss);
	const struct fr_cfi_row *r;

	if (!t) {
		switch (miss) {
		case FR_UNWIND_MISS_PENDING: return FR_UNWIND_PENDING;
		case FR_UNWIND_MISS_NOCFI:
		case FR_UNWIND_MISS_VDSO: return step_nocfi(s, find, arg, f);
		case FR_UNWIND_MISS_NOMAP:
			/* The sampled instruction may be in anonymous code; a
			 * return address into nothing is a wrong unwind. */
			return first ? step_fp(s, f) : FR_UNWIND_BAD;
		default: return FR_UNWIND_BAD;
		}
	}
	r = fr_cfi_lookup(t, vaddr);
	/* Code between the file's FDEs, or a rule the table cannot express:
	 * code without CFI in a file with some (V8's builtins in node's
	 * text, hand-written assembly). */
	if (!r)
		return step_nocfi(s, find, arg, f);
	return step_row(s, r, vaddr, f);
}

enum fr_unwind_end fr_unwind(const struct fr_unwind_regs *regs, const struct fr_unwind_stack *stack,
			     fr_unwind_find_fn find, void *arg, uint64_t *ips, unsigned max,
			     unsigned *n)
{
	struct frame f = {.ip = regs->ip,
			  .sp = regs->sp,
			  .bp = regs->bp,
			  .bp_known = true,
			  .exact = true};
	int end;

	*n = 0;
	for (;;) {
		uint64_t sp = f.sp;

		if (*n == max)
			return FR_UNWIND_MAX_DEPTH;
		ips[(*n)++] = f.ip;
		end = step(stack, find, arg, *n == 1, &f);
		if (end != STEP_ON)
			return (enum fr_unwind_end)end;
		if (f.ip == 0)
			return FR_UNWIND_DONE;
		/* Each caller's frame is above its callee's: no progress
		 * means the CFI (or the stack) lies, and would loop. */
		if (f.sp <= sp)
			return FR_UNWIND_BAD;
	}
}

const char *fr_unwind_end_name(enum fr_unwind_end end)
{
	static const char *const names[FR_UNWIND_END_COUNT] = {
		[FR_UNWIND_DONE] = "done",     [FR_UNWIND_STACK_COPY] = "stack copy",
		[FR_UNWIND_NO_CFI] = "no cfi", [FR_UNWIND_PENDING] = "pending",
		[FR_UNWIND_BAD] = "bad",       [FR_UNWIND_MAX_DEPTH] = "max depth",
	};

	return (unsigned)end < FR_UNWIND_END_COUNT ? names[end] : "unknown";
}
