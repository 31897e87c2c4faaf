/* SPDX-License-Identifier: MIT
 * mvo.h: rename-obj (mvo.c): an object renamed within its ais:// bucket.
 */
#ifndef SL_MVO_H
#define SL_MVO_H

#include "module.h"

extern const struct sl_module sl_mvo_module;

#endif
