/* SPDX-License-Identifier: MIT
 * ec_job.h: the module that routes /v1/internal/ec/ to erasure coding
 * (cluster/ec.c; the gateway's side is api/prx.c).
 */
#ifndef SL_EC_JOB_H
#define SL_EC_JOB_H

#include "module.h"

extern const struct sl_module sl_ec_module;

#endif
