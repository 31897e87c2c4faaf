/* SPDX-License-Identifier: MIT
 * lrit.h: list/range jobs on a bucket (delete-listrange; evict and
 * prefetch refused on ais:// buckets), lrit.c.
 */
#ifndef SL_LRIT_H
#define SL_LRIT_H

#include "module.h"

extern const struct sl_module sl_lrit_module;

#endif
