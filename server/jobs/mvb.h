/* SPDX-License-Identifier: MIT
 * mvb.h: renaming a bucket (POST /v1/buckets/FROM {"action": "move-bck"}),
 * mvb.c.
 */
#ifndef SL_MVB_H
#define SL_MVB_H

#include "module.h"

extern const struct sl_module sl_mvb_module;

#endif
