/* SPDX-License-Identifier: MIT
 * ext.c: dispatch of bucket actions and cluster queries that belong to job
 * modules. Each module registers nothing; this file is the table.
 */
#include "prx.h"
#include "arch_job.h"
#include "tcb.h"

#include <string.h>

bool sl_prx_bucket_post_ext(struct sl_req *r, const char *bucket, struct sl_actmsg *m)
{
    return sl_tcb_post(r, bucket, m);
}

bool sl_prx_bucket_delete_ext(struct sl_req *r, const char *bucket, struct sl_actmsg *m)
{
    (void)r, (void)bucket, (void)m;
    return false;
}

bool sl_prx_bucket_get_ext(struct sl_req *r, const char *bucket, struct sl_actmsg *m)
{
    (void)r, (void)bucket, (void)m;
    return false;
}

bool sl_prx_bucket_put_begin(struct sl_req *r, const char *bucket)
{
    (void)bucket;
    return sl_arch_job_put_begin(r);
}

const char *sl_prx_bucket_post_actions(void)
{
    return ", copy-bck, etl-bck, copy-listrange, etl-listrange";
}

const char *sl_prx_bucket_delete_actions(void)
{
    return "";
}

const char *sl_prx_bucket_get_actions(void)
{
    return "";
}

#include "route.h"
#include "etl.h"
#include "ishard.h"

bool sl_route_ext_more(struct sl_req *r)
{
    if (!strcmp(r->path, "/v1/etl") || sl_has_prefix(r->path, "/v1/etl/")) {
        sl_etl_route(r);
        return true;
    }
    if (sl_etl_internal(r))
        return true;
    if (!strcmp(r->path, "/v1/ishard") || sl_has_prefix(r->path, "/v1/ishard/")) {
        sl_ishard_route(r);
        return true;
    }
    if (sl_ishard_internal(r))
        return true;
    if (!strcmp(r->path, "/v1/internal/tcb")) {
        sl_tcb_internal(r);
        return true;
    }
    if (!strcmp(r->path, "/v1/internal/archive")) {
        sl_arch_job_internal(r);
        return true;
    }
    return false;
}

#include "arch.h"
#include "tgt.h"

bool sl_tgt_get_ext(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    const char *etl = sl_req_query(r, "etl_name");
    if (etl && *etl)
        return sl_etl_get(r, b, name, nlen);
    return sl_arch_get(r, b, name, nlen);
}

bool sl_tgt_put_ext(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    if (sl_arch_put(r, b, name, nlen))
        return true;
    if (sl_tcb_put_object_to(r, b, name, nlen))
        return true;
    const char *unsupported[] = { "append_type" };
    for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
        const char *v = sl_req_query(r, unsupported[i]);
        if (v && *v) {
            sl_resp_errf(r, SL_EUNSUPP, "PUT with '%s' is not supported by this build yet", unsupported[i]);
            return true;
        }
    }
    return false;
}

bool sl_tgt_post_ext(struct sl_req *r)
{
    (void)r;
    return false;
}
