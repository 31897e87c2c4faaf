/* SPDX-License-Identifier: MIT
 * moss.h: get-batch (GET /v1/ml/moss, spec §9; docs/get-batch.md).
 */
#ifndef SL_MOSS_H
#define SL_MOSS_H

#include "module.h"

extern const struct sl_module sl_moss_module;

/* One item for sl_moss_serve: a whole object, or member arch of shard obj
 * (as: the entry's name in the answer); or, with rawhdr, the bytes
 * [start, start + length) of shard obj, a run of tar entries (headers and
 * data) whose first header is a plain header of member rawhdr (length -1:
 * the caller knows it is not, and the item fails as a layout that is not
 * plain). Strings are copied. */
struct sl_moss_item {
    const char *bck, *obj, *arch, *as;
    const char *rawhdr;
    uint64_t start;
    int64_t length;
};
/* Answer r (from an offload fn: off the HTTP threads) with items as one
 * streamed tar in this order, assembled across targets as get-batch does.
 * Member entries are dated 0: the same items give the same bytes. A
 * missing item is a 404 before the first byte.
 *
 * When every item is a tar run (rawhdr), the answer is their concatenation
 * and the return is 1, with r not answered, if a shard's layout turns out
 * not to be plain: the caller serves the items member by member instead.
 * Otherwise 0.
 *
 * pull_uri NULL: the other targets are sent the list of their items.
 * Else they are asked GET pull_uri (a path and query), and each must
 * answer, as sl_moss_pull, the items this node gives it in the same order;
 * the caller split the items by cluster map smap_ver, and the request
 * fails if this node's map is another. */
int sl_moss_serve(struct sl_req *r, const struct sl_moss_item *items, int n, const char *pull_uri, int64_t smap_ver);

/* A holder's answer to a pull_uri of sl_moss_serve: build(arg) gives its
 * items (the array is freed here; its strings stay the caller's until
 * free_arg(arg)), on the pull's own thread; the bytes go out as get-batch
 * pulls send them. A build error goes to the designated target, which
 * fails the request with it. */
typedef int (*sl_moss_items_fn)(void *arg, struct sl_moss_item **items, int *n, struct sl_err *err);
void sl_moss_pull(struct sl_req *r, sl_moss_items_fn build, void (*free_arg)(void *), void *arg);

#endif
