/* SPDX-License-Identifier: MIT
 * cleanup.h: job cleanup-store (cleanup.c): work files nobody holds and
 * misplaced copies, on every target.
 */
#ifndef SL_CLEANUP_H
#define SL_CLEANUP_H

#include "module.h"

extern const struct sl_module sl_cleanup_module;

#endif
