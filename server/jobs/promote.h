/* SPDX-License-Identifier: MIT
 * promote.h: files in promote.dir on the targets become objects
 * (POST /v1/objects/B {"action": "promote"}), promote.c.
 */
#ifndef SL_PROMOTE_H
#define SL_PROMOTE_H

#include "module.h"

extern const struct sl_module sl_promote_module;

#endif
