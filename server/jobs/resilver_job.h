/* SPDX-License-Identifier: MIT
 * resilver_job.h: starting job resilver (resilver_job.c); the work is
 * target/resilver.c.
 */
#ifndef SL_RESILVER_JOB_H
#define SL_RESILVER_JOB_H

#include "module.h"

extern const struct sl_module sl_resilver_module;

#endif
