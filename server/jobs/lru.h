/* SPDX-License-Identifier: MIT
 * lru.h: LRU eviction under the space watermarks (job lru), lru.c.
 */
#ifndef SL_LRU_H
#define SL_LRU_H

#include "module.h"

extern const struct sl_module sl_lru_module;

#endif
