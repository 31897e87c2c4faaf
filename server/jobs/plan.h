/* SPDX-License-Identifier: MIT
 * plan.h: epoch plans over WebDataset shards, served batch by batch
 * (/v1/ml/plan; docs/get-batch.md §6).
 */
#ifndef SL_PLAN_H
#define SL_PLAN_H

#include "module.h"

extern const struct sl_module sl_plan_module;

#endif
