/* SPDX-License-Identifier: MIT
 * moss.h: get-batch (GET /v1/ml/moss, spec §9; docs/get-batch.md).
 */
#ifndef SL_MOSS_H
#define SL_MOSS_H

#include "module.h"

extern const struct sl_module sl_moss_module;

/* One item for sl_moss_serve: a whole object, or member arch of shard obj;
 * as is the entry's name in the answer. Strings are copied. */
struct sl_moss_item {
    const char *bck, *obj, *arch, *as;
};
/* Answer r (from an offload fn: off the HTTP threads) with items as one
 * streamed tar in this order, assembled across targets as get-batch does;
 * entries are dated 0, so the same items give the same bytes. A missing
 * item is a 404 before the first byte. */
void sl_moss_serve(struct sl_req *r, const struct sl_moss_item *items, int n);

#endif
