/* SPDX-License-Identifier: MIT
 * dsort.h: distributed shuffle and re-shard of WebDataset shards (spec §7):
 * POST/GET/DELETE /v1/sort and the targets' internal endpoints. The spec is
 * dsort_spec.h, the records and their order dsort_rec.h.
 */
#ifndef SL_DSORT_H
#define SL_DSORT_H

#include "http.h"
#include "module.h"

/* The dsort module: /v1/sort, /v1/internal/dsort/... */
extern const struct sl_module sl_dsort_module;

#endif
