/* SPDX-License-Identifier: MIT
 * nbi.h: native bucket inventory (nbi.c): create-inventory,
 * show-inventory, destroy-inventory of remote buckets.
 */
#ifndef SL_NBI_H
#define SL_NBI_H

#include "module.h"

extern const struct sl_module sl_nbi_module;

#endif
