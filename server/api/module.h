/* SPDX-License-Identifier: MIT
 * module.h: what a job module (jobs/) hands the node so that the route
 * table and the handlers below it can reach it without knowing it, in the
 * way nginx's modules hand their handlers to its core (ngx_modules[]) and
 * Redis lists its commands in one table. The one list of modules is
 * server/modules.c; main.c installs it before HTTP starts.
 *
 * Every member may be NULL. A module's structure and the strings it points
 * to are static: the node keeps the pointers for its whole life.
 *
 * The arguments a hook gets (bucket, m, b, name) are borrowed for the call:
 * the caller releases them when the hook returns, so a module that goes on
 * working after it returned (sl_req_offload) copies what it keeps.
 */
#ifndef SL_MODULE_H
#define SL_MODULE_H

#include "http.h"
#include "meta.h"
#include "read.h"

struct sl_module {
    const char *name;

    /* Public endpoints: route(r) serves every request whose path is one of
     * paths[] (NULL-terminated) or below it ("/v1/etl" serves /v1/etl and
     * /v1/etl/...). */
    const char *const *paths;
    void (*route)(struct sl_req *r);
    /* Node-to-node endpoints: true when the request was this module's (and
     * was answered or taken over). */
    bool (*internal)(struct sl_req *r);

    /* POST /v1/buckets/B {"action": ...}: true when the action was this
     * module's; post_actions lists them for error messages (", a, b"). */
    bool (*bucket_post)(struct sl_req *r, const char *bucket, struct sl_actmsg *m);
    const char *post_actions;
    /* DELETE /v1/buckets/B {"action": ...} (other than destroy-bck): the
     * same, delete_actions for the messages. */
    bool (*bucket_delete)(struct sl_req *r, const char *bucket, struct sl_actmsg *m);
    const char *delete_actions;
    /* GET /v1/buckets/B {"action": ...} (other than list and summary-bck):
     * the same, get_actions for the messages. */
    bool (*bucket_get)(struct sl_req *r, const char *bucket, struct sl_actmsg *m);
    const char *get_actions;
    /* POST /v1/objects/B {"action": ...} (no object in the path: promote):
     * true when the action was this module's. */
    bool (*objects_post)(struct sl_req *r, const char *bucket, struct sl_actmsg *m);
    /* POST /v1/objects/B/O {"action": ...} on the target that owns it
     * (blob-download): true when the action was this module's. */
    bool (*object_post)(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen,
                        struct sl_actmsg *m);
    /* PUT /v1/cluster {"action": "start", "value": {"Kind": kind, ...}}:
     * true when the kind was this module's. */
    bool (*cluster_start)(struct sl_req *r, const char *kind, const json_t *value);
    const char *start_kinds;    /* ", lru": for error messages */
    /* Once, when the node starts serving (its store is open). */
    void (*start)(void);
    /* PUT /v1/buckets/B: true when the module took the request over. */
    bool (*bucket_put)(struct sl_req *r, const char *bucket);

    /* Target object hooks. A GET whose query has a non-empty get_query
     * parameter (e.g. etl_name) is obj_get's to answer, with the object
     * the read path found (rd: its fd and md are the hook's when it returns
     * true); obj_put is asked before a plain PUT is stored. Both return true
     * when they took the request over. */
    const char *get_query;
    bool (*obj_get)(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, struct sl_read *rd);
    bool (*obj_put)(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen);
};

/* Install the NULL-terminated module list (main.c, once, before HTTP). */
void sl_modules_install(const struct sl_module *const *mods);

/* Dispatch helpers for the handlers in api/ (route.c). Each returns true
 * when some module took the request. */
bool sl_modules_route(struct sl_req *r);
bool sl_modules_bucket_post(struct sl_req *r, const char *bucket, struct sl_actmsg *m);
bool sl_modules_bucket_put(struct sl_req *r, const char *bucket);
bool sl_modules_objects_post(struct sl_req *r, const char *bucket, struct sl_actmsg *m);
bool sl_modules_object_post(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen,
                            struct sl_actmsg *m);
bool sl_modules_cluster_start(struct sl_req *r, const char *kind, const json_t *value);
/* ", a, b": the kinds modules start (static storage) */
const char *sl_modules_start_kinds(void);
/* Call every module's start hook (main.c, once the node serves). */
void sl_modules_start(void);
bool sl_modules_bucket_delete(struct sl_req *r, const char *bucket, struct sl_actmsg *m);
bool sl_modules_bucket_get(struct sl_req *r, const char *bucket, struct sl_actmsg *m);
/* ", a, b": the bucket GET actions modules serve (static storage) */
const char *sl_modules_get_actions(void);
/* The module whose get_query the request carries (static), or NULL. */
const struct sl_module *sl_modules_get_owner(const struct sl_req *r);
bool sl_modules_obj_put(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen);
/* ", a, b, c": every module's bucket POST actions, for error messages
 * (static storage, built at install). */
const char *sl_modules_post_actions(void);
const char *sl_modules_delete_actions(void);

#endif
