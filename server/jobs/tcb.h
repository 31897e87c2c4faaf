/* SPDX-License-Identifier: MIT
 * tcb.h: copying and transforming objects between buckets (spec §5, §5.1,
 * §4.9): the jobs copy-bck / etl-bck (bucket -> bucket) and copy-listrange /
 * etl-listrange (a list or template), and the single-object copy
 * PUT ?object_to=[&etl_name=]. Every target handles the objects it owns and
 * writes each result straight to the destination's HRW owner.
 */
#ifndef SL_TCB_H
#define SL_TCB_H

#include "http.h"
#include "module.h"
#include "meta.h"
#include "prx.h"

/* gateway: POST /v1/buckets/SRC with one of the four actions; true when
 * handled (a response was produced or the work offloaded) */
bool sl_tcb_post(struct sl_req *r, const char *src, struct sl_actmsg *m);
/* target: POST /v1/internal/tcb (start this target's share) */
void sl_tcb_internal(struct sl_req *r);
/* target: PUT /v1/objects/SRC/OBJ?object_to=...; true when handled */
bool sl_tcb_put_object_to(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen);

/* gateway: start job id of kind `kind` on every target, a whole-bucket
 * copy of src into dst (both must exist); renames use it */
int sl_tcb_start_copy(const char *kind, const char *id, const char *src, const char *dst, struct sl_err *err);

/* The copy/transform module: bucket POST copy-bck, etl-bck, copy-listrange,
 * etl-listrange; /v1/internal/tcb; PUT into another bucket */
extern const struct sl_module sl_tcb_module;

#endif
