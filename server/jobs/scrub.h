/* SPDX-License-Identifier: MIT
 * scrub.h: job scrub, every object's bytes checked against its checksum
 * (and a damaged copy made again, or recorded), scrub.c.
 */
#ifndef SL_SCRUB_H
#define SL_SCRUB_H

#include "module.h"

extern const struct sl_module sl_scrub_module;

#endif
