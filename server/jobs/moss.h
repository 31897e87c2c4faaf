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
 * data) whose first header is a plain header of member rawhdr. Strings are
 * copied. */
struct sl_moss_item {
    const char *bck, *obj, *arch, *as;
    const char *rawhdr;
    uint64_t start;
    int64_t length;
};
/* Answer r (from an offload fn: off the HTTP threads) with items as one
 * streamed tar in this order, assembled across targets as get-batch does.
 * When every item is a tar fragment, the answer is their concatenation;
 * if a shard's layout turns out not to be plain, fallback[0..nf) (member
 * items) is served instead. Member entries are dated 0: the same items give
 * the same bytes. A missing item is a 404 before the first byte. */
void sl_moss_serve(struct sl_req *r, const struct sl_moss_item *items, int n, const struct sl_moss_item *fallback,
                   int nf);

#endif
