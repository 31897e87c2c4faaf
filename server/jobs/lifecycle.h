/* SPDX-License-Identifier: MIT
 * lifecycle.h: job lifecycle, S3's bucket lifecycle rules applied on every
 * target (lifecycle.c).
 */
#ifndef SL_LIFECYCLE_H
#define SL_LIFECYCLE_H

#include "module.h"

extern const struct sl_module sl_lifecycle_module;

#endif
