/* SPDX-License-Identifier: MIT
 * mirror_job.c: a target's endpoint for make-n-copies, which the gateway
 * starts on every target when a bucket's mirror changes
 * (POST /v1/buckets/B {"action": "make-n-copies", "value": N}, or
 * set-bprops of mirror.*):
 *
 *   POST /v1/internal/mirror/start {"id", "provider", "bck", "copies"}
 *
 * The job (kind make-n-copies) gives every object of the bucket held here
 * "copies" replicas on distinct mountpaths (target/mirror.c).
 */
#include "mirror_job.h"
#include "jsonx.h"
#include "mirror.h"
#include "node.h"

#include <string.h>

static void internal_start(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    const char *id = sl_json_str(j, "id", ""), *bck = sl_json_str(j, "bck", "");
    const char *prov = sl_provider_norm(sl_json_str(j, "provider", "ais"));
    json_t *c = json_object_get(j, "copies");
    if (!json_is_object(j) || !*id || !*bck || !prov || !json_is_integer(c))
        sl_resp_errf(r, SL_EINVAL, "mirror start: expected {\"id\", \"provider\", \"bck\", \"copies\"}");
    else if (sl_mirror_start(id, prov, bck, (int)json_integer_value(c), &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    json_decref(j);
}

static bool mirror_internal(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/mirror/start"))
        return false;
    if (r->method != SL_M_POST)
        sl_resp_method_not_allowed(r, "POST");
    else if (!sl_is_target())
        sl_resp_errf(r, SL_EINVAL, "%s is a gateway: make-n-copies runs on targets", G.id);
    else
        sl_req_buffer_body(r, 64 * 1024, internal_start);
    return true;
}

const struct sl_module sl_mirror_module = {
    .name = "mirror",
    .internal = mirror_internal,
};
