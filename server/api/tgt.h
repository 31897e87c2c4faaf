/* SPDX-License-Identifier: MIT
 * tgt.h: storage-target object handlers.
 */
#ifndef SL_TGT_H
#define SL_TGT_H

#include "http.h"
#include "meta.h"

void sl_tgt_objects(struct sl_req *r);
void sl_tgt_bmd_changed(const struct sl_bmd *old, const struct sl_bmd *cur);
/* "/v1/objects/B/O..." -> bucket (new: free()), name (points into r->path:
 * valid until the request completes). On error nothing to free. */
int sl_req_obj_path(struct sl_req *r, char **bucket, const char **name, size_t *nlen, struct sl_err *err);

#endif
