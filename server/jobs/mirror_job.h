/* SPDX-License-Identifier: MIT
 * mirror_job.h: the targets' side of make-n-copies (mirror_job.c); the
 * storage work is target/mirror.c, the gateway's api/prx.c.
 */
#ifndef SL_MIRROR_JOB_H
#define SL_MIRROR_JOB_H

#include "module.h"

extern const struct sl_module sl_mirror_module;

#endif
