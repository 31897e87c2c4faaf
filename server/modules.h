/* SPDX-License-Identifier: MIT
 * modules.h: the node's module list (modules.c), installed by main.c.
 */
#ifndef SL_MODULES_H
#define SL_MODULES_H

#include "module.h"

extern const struct sl_module *const sl_modules[];

#endif
