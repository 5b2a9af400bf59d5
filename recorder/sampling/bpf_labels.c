/* The eBPF side of application labels (see recorder/sampling/bpf_labels.h): the
 * loader of recorder/bpf/labels.bpf.c, its process map and its ring
 * buffer's drain.
 */
#include "recorder/sampling/bpf_labels.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "recorder/labels.skel.h"

struct fr_bpf_labels {
	struct labels_bpf *skel;
	struct ring_buffer *rb;
	int ncpus;
	/* The drain's callback while ring_buffer__consume runs. */
	void (*fn)(void *arg, const struct fr_bpf_labels_rec *r);
	void (*py)(void *arg, const struct fr_bpf_py_rec *r, size_t size);
	void *arg;
};

static int on_record(void *ctx, void *data, size_t size)
{
	struct fr_bpf_labels *b = ctx;
	uint32_t kind;

	if (size < sizeof(kind))
		return 0;
	memcpy(&kind, data, sizeof(kind));
	if (kind == FR_BPF_PY_SAMPLE) {
		if (b->py && size >= FR_BPF_PY_REC_HEAD)
			b->py(b->arg, data, size);
	} else if (size >= sizeof(struct fr_bpf_labels_rec) && b->fn) {
		b->fn(b->arg, data);
	}
	return 0;
}

int fr_bpf_labels_open(struct fr_bpf_labels **out, char *err, size_t errlen)
{
	struct fr_bpf_labels *b = calloc(1, sizeof(*b));
	int ret;

	if (!b)
		return -ENOMEM;
	b->ncpus = libbpf_num_possible_cpus();
	b->skel = labels_bpf__open_and_load();
	if (!b->skel) {
		ret = -errno;
		snprintf(err, errlen,
			 "application labels: cannot load the eBPF program (%s; it needs BTF, "
			 "CAP_BPF and CAP_PERFMON)",
			 strerror(-ret));
		goto fail;
	}
	b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.labels), on_record, b, NULL);
	if (!b->rb) {
		ret = -errno;
		snprintf(err, errlen, "application labels: cannot map the eBPF ring buffer (%s)",
			 strerror(-ret));
		goto fail;
	}
	*out = b;
	return 0;
fail:
	fr_bpf_labels_close(b);
	return ret < 0 ? ret : -EINVAL;
}

void fr_bpf_labels_close(struct fr_bpf_labels *b)
{
	if (!b)
		return;
	ring_buffer__free(b->rb);
	labels_bpf__destroy(b->skel);
	free(b);
}

int fr_bpf_labels_prog_fd(const struct fr_bpf_labels *b)
{
	return bpf_program__fd(b->skel->progs.on_sample);
}

int fr_bpf_labels_map_fd(const struct fr_bpf_labels *b)
{
	return bpf_map__fd(b->skel->maps.label_procs);
}

int fr_bpf_labels_py_map_fd(const struct fr_bpf_labels *b)
{
	return bpf_map__fd(b->skel->maps.py_procs);
}

int fr_bpf_labels_py_threads_fd(const struct fr_bpf_labels *b)
{
	return bpf_map__fd(b->skel->maps.py_threads);
}

int fr_bpf_labels_py_set(struct fr_bpf_labels *b, uint32_t pid, const struct fr_bpf_py_proc *v)
{
	return bpf_map_update_elem(fr_bpf_labels_py_map_fd(b), &pid, v, BPF_ANY) < 0 ? -errno : 0;
}

int fr_bpf_labels_py_forget(struct fr_bpf_labels *b, uint32_t pid)
{
	return bpf_map_delete_elem(fr_bpf_labels_py_map_fd(b), &pid) < 0 ? -errno : 0;
}

void fr_bpf_labels_py_counts(const struct fr_bpf_labels *b, struct fr_bpf_py_counters *out)
{
	struct fr_bpf_py_counters *per = calloc((size_t)b->ncpus, sizeof(*per));
	uint32_t zero = 0;

	memset(out, 0, sizeof(*out));
	if (!per || bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.py_counters), &zero, per) < 0) {
		free(per);
		return;
	}
	for (int i = 0; i < b->ncpus; i++) {
		out->samples += per[i].samples;
		out->frames += per[i].frames;
		out->lookups += per[i].lookups;
		out->faults += per[i].faults;
		out->drops += per[i].drops;
	}
	free(per);
}

int fr_bpf_labels_set(struct fr_bpf_labels *b, uint32_t pid, const struct fr_bpf_label_proc *v)
{
	return bpf_map_update_elem(fr_bpf_labels_map_fd(b), &pid, v, BPF_ANY) < 0 ? -errno : 0;
}

int fr_bpf_labels_forget(struct fr_bpf_labels *b, uint32_t pid)
{
	return bpf_map_delete_elem(fr_bpf_labels_map_fd(b), &pid) < 0 ? -errno : 0;
}

int fr_bpf_labels_fd(const struct fr_bpf_labels *b)
{
	return ring_buffer__epoll_fd(b->rb);
}

uint32_t fr_bpf_labels_drain(struct fr_bpf_labels *b,
			     void (*fn)(void *arg, const struct fr_bpf_labels_rec *r),
			     void (*py)(void *arg, const struct fr_bpf_py_rec *r, size_t size),
			     void *arg)
{
	int n;

	b->fn = fn;
	b->py = py;
	b->arg = arg;
	n = ring_buffer__consume(b->rb);
	return n > 0 ? (uint32_t)n : 0;
}

void fr_bpf_labels_counts(const struct fr_bpf_labels *b, struct fr_bpf_labels_counters *out)
{
	struct fr_bpf_labels_counters *per = calloc((size_t)b->ncpus, sizeof(*per));
	uint32_t zero = 0;

	memset(out, 0, sizeof(*out));
	if (!per ||
	    bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.label_counters), &zero, per) < 0) {
		free(per);
		return;
	}
	for (int i = 0; i < b->ncpus; i++) {
		out->samples += per[i].samples;
		out->drops += per[i].drops;
		out->faults += per[i].faults;
	}
	free(per);
}
