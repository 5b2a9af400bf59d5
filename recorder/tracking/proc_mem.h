/* The files of /proc the memory sampler reads: a process's resident set
 * (/proc/PID/statm) and the machine's memory, CPU and I/O pressure
 * (/proc/pressure/memory, cpu, io: PSI).
 *
 * Each file is opened O_NOFOLLOW and read with one bounded read(2) into a
 * small buffer; the parsers take the bytes read (not NUL-terminated),
 * refuse anything that is not as the kernel writes it and never read past
 * them. Thread-safe: no state.
 */
#ifndef FR_RECORDER_PROC_MEM_H
#define FR_RECORDER_PROC_MEM_H

#include <stddef.h>
#include <stdint.h>

/* The second field of a statm line ("size resident shared text lib data
 * dt", pages), into *pages. Returns 0 or -EPROTO. */
int fr_statm_parse(const char *buf, size_t len, uint64_t *pages);

/* The "some" line's total= (microseconds stalled since boot) of a PSI
 * file ("some avg10=0.00 avg60=0.00 avg300=0.00 total=N\nfull ..."), into
 * *us. Returns 0 or -EPROTO. */
int fr_pressure_parse_some(const char *buf, size_t len, uint64_t *us);

/* Both lines of a PSI file: the "some" total into *some_us and, when the
 * file has a "full" line (memory and io; cpu since Linux 5.13, where it
 * is 0 for the machine), its total into *full_us with *has_full 1 (else
 * *full_us 0, *has_full 0). Returns 0 or -EPROTO. */
int fr_pressure_parse(const char *buf, size_t len, uint64_t *some_us, uint64_t *full_us,
		      int *has_full);

/* Resident bytes of process `pid` from `proc`/PID/statm. Returns 0, or
 * -errno (-ENOENT: gone), -EPROTO for a file not as the kernel writes it. */
int fr_proc_read_rss(const char *proc, uint32_t pid, uint64_t *bytes);

/* The machine's memory pressure from `proc`/pressure/memory: "some"
 * total, in nanoseconds. Returns 0, or -errno (-ENOENT: a kernel without
 * PSI, or with it disabled: psi=0), -EPROTO. */
int fr_proc_read_mem_pressure(const char *proc, uint64_t *ns);

/* The machine's pressure on `resource` ("memory", "cpu" or "io") from
 * `proc`/pressure/RESOURCE: the "some" and "full" totals in nanoseconds
 * (*has_full as fr_pressure_parse). Returns as fr_proc_read_mem_pressure. */
int fr_proc_read_pressure(const char *proc, const char *resource, uint64_t *some_ns,
			  uint64_t *full_ns, int *has_full);

/* The same from the PSI file at `path` (a cgroup v2's cpu.pressure,
 * memory.pressure, io.pressure). */
int fr_pressure_read_file(const char *path, uint64_t *some_ns, uint64_t *full_ns, int *has_full);

#endif
