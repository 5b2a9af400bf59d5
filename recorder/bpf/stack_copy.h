/* The copy of a thread's user stack the recorder unwinds with CFI, shared
 * by the eBPF programs that take one (offcpu.bpf.c at a switch,
 * events.bpf.c at a crash). The includer defines PAGE (the page size),
 * STACK_PAGES (the largest copy in pages) and the read-only global
 * stack_copy (the copy's size in bytes, at most STACK_PAGES pages). Every
 * read is bpf_probe_read_user: it never sleeps, and a page not in memory
 * ends the copy.
 */
#ifndef FR_RECORDER_BPF_STACK_COPY_H
#define FR_RECORDER_BPF_STACK_COPY_H

/* Copies the user stack of the current thread from sp into dst: all
 * stack_copy bytes, else (the stack's mapping ends first, or a page is not
 * in memory) as much as ends on a page boundary. Returns the bytes copied. */
static __always_inline __u32 copy_user_stack(__u8 *dst, __u64 sp)
{
	__u64 to_page = PAGE - (sp & (PAGE - 1));

	if (!bpf_probe_read_user(dst, stack_copy, (const void *)sp))
		return stack_copy;
	for (int k = STACK_PAGES; k >= 0; k--) {
		__u64 size = to_page + (__u64)k * PAGE;

		/* One register for the test and the read, so the verifier
		 * sees the bound it checks. */
		asm volatile("" : "+r"(size));
		if (size >= stack_copy)
			continue;
		if (!bpf_probe_read_user(dst, size, (const void *)sp))
			return (__u32)size;
	}
	return 0;
}

#endif
