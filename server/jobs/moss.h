/* SPDX-License-Identifier: MIT
 * moss.h: get-batch (GET /v1/ml/moss, spec §9; docs/get-batch.md).
 */
#ifndef SL_MOSS_H
#define SL_MOSS_H

#include "module.h"

extern const struct sl_module sl_moss_module;

#endif
