/* Flame graph trees for flightrec serve: the samples of a pprof profile
 * (core/pprof/pprof_read.h) folded into the JSON tree d3-flame-graph draws,
 * {"name", "value", "children"}, and two profiles' trees merged into its
 * differential form (each node's "delta"). The tree is bounded: past
 * FR_SERVE_TREE_NODES nodes the smallest are merged into an "(other)" child
 * of their parent, so a profile of millions of distinct stacks still makes
 * a page a browser can draw. */
#ifndef FR_TOOLS_SERVE_TREE_H
#define FR_TOOLS_SERVE_TREE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/pprof/pprof_read.h"

#define FR_SERVE_TREE_NODES 6000
/* Nodes built before pruning; deeper frames of further stacks are
 * counted in the deepest node that exists. */
#define FR_SERVE_TREE_BUILD_MAX 1000000

struct fr_serve_tree;

/* A new empty tree, or NULL. */
struct fr_serve_tree *fr_serve_tree_new(void);
void fr_serve_tree_free(struct fr_serve_tree *t);

/* Adds the samples of `pd` by its value column `col` (its default sample
 * type, when -1) to side `side` (0 or 1) of the tree: the root, then one
 * node per process name (label "comm"), then the stack from its outermost
 * frame, an inlined function below the one it is inlined into. Returns 0
 * or -ENOMEM. */
int fr_serve_tree_add(struct fr_serve_tree *t, const struct fr_pprof_data *pd, int side,
		      ssize_t col);

/* The total value of side `side`. */
int64_t fr_serve_tree_total(const struct fr_serve_tree *t, int side);

/* The tree of side 0 as d3-flame-graph JSON; with `diff`, the tree of side
 * 1 with each node's own "delta": its self value in side 1 minus its self
 * value in side 0 scaled by total1 / total0, so that ranges of different
 * lengths compare by share (d3-flame-graph's computeDelta adds the
 * children's). Frames only in side 0 have no width in side 1 and are not
 * drawn; their callers show the loss. Returns NULL on ENOMEM. */
cJSON *fr_serve_tree_json(const struct fr_serve_tree *t, int diff);

#endif
