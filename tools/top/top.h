/* flightrec top: the top functions of a profile as a terminal table or
 * JSON; what its files (top.c the command line, top_agg.c the aggregation,
 * top_print.c the table and JSON, top_input.c reading a profile from a file
 * or from the recorder) share. */
#ifndef FR_TOOLS_TOP_H
#define FR_TOOLS_TOP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct fr_pprof_data;
struct fr_query_args;

/* Runs `flightrec top` with argv[0] "top". Returns the exit status: 0 ok,
 * 1 failure, 2 usage error (messages already printed). */
int fr_top_main(int argc, char **argv);

/* A process samples came from, from their "pid" and "comm" labels (pid -1
 * and comm "" when a profile has none). */
struct fr_top_process {
	int64_t pid;
	const char *comm; /* borrowed from the profile */
};

/* A process's share of a function: its value in the samples with the
 * function on the stack (the function's cum, split by process). */
struct fr_top_share {
	uint32_t process; /* index in fr_top.processes */
	int64_t cum;
};

/* One function of the table: values of the chosen column and sample
 * counts, flat (leaf) and cum (anywhere on the stack, once per sample),
 * and the processes it ran in, the most first. */
struct fr_top_row {
	const char *name;
	int64_t flat, cum;
	int64_t flat_samples, cum_samples;
	const struct fr_top_share *shares;
	uint32_t nshares;
};

/* The aggregate of a profile: rows in no particular order, the totals of
 * every sample. */
struct fr_top {
	struct fr_top_row *rows;
	size_t nrows;
	struct fr_top_process *processes;
	size_t nprocesses;
	int64_t total, total_samples;
	/* private: names of unsymbolized addresses and kernel functions, the
	 * shares' array */
	char *names;
	struct fr_top_share *share_buf;
};

/* Aggregates decoded profile `d` by function name using value column
 * `col` (samples are counted from column `samples_col`, or one per sample
 * when it is -1) into *t, which fr_top_free() releases. Names are
 * borrowed from `d`, except unsymbolized addresses ("0x1234") and kernel
 * functions, named "name_[k]" as in folded stacks. Returns 0 or -ENOMEM. */
int fr_top_aggregate(const struct fr_pprof_data *d, size_t col, ssize_t samples_col,
		     struct fr_top *t);
void fr_top_free(struct fr_top *t);

/* Whether sample `s` is one of column `col`'s event: a profile of several
 * events (cpu and offcpu) gives each sample a value in its event's column
 * alone, and the table of one event leaves the others' samples out (their
 * totals would mix seconds on CPU with seconds waited). A sample with no
 * value in any column but `col` (and its count `samples_col`) is its. */
struct fr_pprof_rsample;
int fr_top_sample_of(const struct fr_pprof_data *d, const struct fr_pprof_rsample *s, size_t col,
		     ssize_t samples_col);

/* FNV-1a of string `s`. */
uint64_t fr_top_hash(const char *s);

/* --by: one table per process, command name, cgroup or label value. */
enum fr_top_by {
	FR_TOP_BY_NONE,
	FR_TOP_BY_PROCESS,
	FR_TOP_BY_COMM,
	FR_TOP_BY_CGROUP,
	FR_TOP_BY_LABEL
};

/* How to show a profile. */
struct fr_top_opts {
	size_t limit;
	/* 1 cum, 0 flat, -1 by the column shown: cum for the waits a waker
	 * ended (wakeup) and the waits for a CPU (runqueue), whose leaves are
	 * the kernel's waking and scheduling code, without the kernel's
	 * functions; flat otherwise. */
	int sort_cum;
	int json;
	enum fr_top_by by;
	const char *by_key; /* the label key of FR_TOP_BY_LABEL */
	/* The event whose column is shown (--event with FILE); NULL: the
	 * profile's default, the first event asked of the recorder */
	const char *event;
	/* The window's label key is --by's (label:KEY), not --label-key's */
	int by_sets_label_key;
};

/* Parses --by's "process", "comm", "cgroup" or "label:KEY" into `o`.
 * Returns 0 or -EINVAL. */
int fr_top_parse_by(const char *s, struct fr_top_opts *o);

/* Prints decoded profile `d` as `o` says, on stdout. Returns 0 or
 * -ENOMEM. */
int fr_top_print(const struct fr_pprof_data *d, const struct fr_top_opts *o);

/* Shows the profile in file `path` / of the recorder's window `q`.
 * Return the exit status. */
int fr_top_show_file(const char *path, const struct fr_top_opts *o);
int fr_top_show_window(const struct fr_query_args *q, const char *socket_s,
		       const struct fr_top_opts *o);

#endif
