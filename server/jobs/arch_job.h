/* SPDX-License-Identifier: MIT
 * arch_job.h: the archive job (create a shard from objects, spec §5.2).
 */
#ifndef SL_ARCH_JOB_H
#define SL_ARCH_JOB_H

#include "http.h"
#include "module.h"

/* gateway: PUT /v1/buckets/SRC {"action":"archive"} */
bool sl_arch_job_put_begin(struct sl_req *r);
/* target: POST /v1/internal/archive */
void sl_arch_job_internal(struct sl_req *r);

/* The archive module: PUT /v1/buckets/B {archive}, /v1/internal/archive */
extern const struct sl_module sl_arch_job_module;

#endif
