/* SPDX-License-Identifier: MIT
 * module.c: the installed module list and the dispatch helpers the
 * handlers in api/ use (module.h).
 */
#include "module.h"

#include <stdio.h>
#include <string.h>

static const struct sl_module *const *modules;
static char post_actions[512];
static char delete_actions[256];
static char get_actions[128];
static char start_kinds[256];

#define FOR_MODULES(m) for (const struct sl_module *const *mp_ = modules; mp_ && (m = *mp_) != NULL; mp_++)

void sl_modules_install(const struct sl_module *const *mods)
{
    modules = mods;
    const struct sl_module *m;
    size_t n = 0, nd = 0, ng = 0;
    post_actions[0] = 0;
    delete_actions[0] = 0;
    get_actions[0] = 0;
    start_kinds[0] = 0;
    size_t ns = 0;
    FOR_MODULES(m) {
        if (m->start_kinds && ns < sizeof(start_kinds))
            ns += (size_t)snprintf(start_kinds + ns, sizeof(start_kinds) - ns, "%s", m->start_kinds);
        if (m->post_actions && n < sizeof(post_actions))
            n += (size_t)snprintf(post_actions + n, sizeof(post_actions) - n, "%s", m->post_actions);
        if (m->delete_actions && nd < sizeof(delete_actions))
            nd += (size_t)snprintf(delete_actions + nd, sizeof(delete_actions) - nd, "%s", m->delete_actions);
        if (m->get_actions && ng < sizeof(get_actions))
            ng += (size_t)snprintf(get_actions + ng, sizeof(get_actions) - ng, "%s", m->get_actions);
    }
}

const char *sl_modules_get_actions(void)
{
    return get_actions;
}

bool sl_modules_bucket_get(struct sl_req *r, const char *bucket, struct sl_actmsg *msg)
{
    const struct sl_module *m;
    FOR_MODULES(m) {
        if (m->bucket_get && m->bucket_get(r, bucket, msg))
            return true;
    }
    return false;
}

const char *sl_modules_delete_actions(void)
{
    return delete_actions;
}

bool sl_modules_bucket_delete(struct sl_req *r, const char *bucket, struct sl_actmsg *msg)
{
    const struct sl_module *m;
    FOR_MODULES(m) {
        if (m->bucket_delete && m->bucket_delete(r, bucket, msg))
            return true;
    }
    return false;
}

const char *sl_modules_post_actions(void)
{
    return post_actions;
}

bool sl_modules_route(struct sl_req *r)
{
    const struct sl_module *m;
    FOR_MODULES(m) {
        for (const char *const *p = m->paths; p && *p; p++) {
            if (sl_req_path_is(r, *p)) {
                m->route(r);
                return true;
            }
        }
        if (m->internal && m->internal(r))
            return true;
    }
    return false;
}

bool sl_modules_bucket_post(struct sl_req *r, const char *bucket, struct sl_actmsg *msg)
{
    const struct sl_module *m;
    FOR_MODULES(m) {
        if (m->bucket_post && m->bucket_post(r, bucket, msg))
            return true;
    }
    return false;
}

bool sl_modules_cluster_start(struct sl_req *r, const char *kind, const json_t *value)
{
    const struct sl_module *m;
    FOR_MODULES(m) {
        if (m->cluster_start && m->cluster_start(r, kind, value))
            return true;
    }
    return false;
}

const char *sl_modules_start_kinds(void)
{
    return start_kinds;
}

void sl_modules_start(void)
{
    const struct sl_module *m;
    FOR_MODULES(m) {
        if (m->start)
            m->start();
    }
}

bool sl_modules_objects_post(struct sl_req *r, const char *bucket, struct sl_actmsg *msg)
{
    const struct sl_module *m;
    FOR_MODULES(m) {
        if (m->objects_post && m->objects_post(r, bucket, msg))
            return true;
    }
    return false;
}

bool sl_modules_object_post(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen,
                            struct sl_actmsg *msg)
{
    const struct sl_module *m;
    FOR_MODULES(m) {
        if (m->object_post && m->object_post(r, b, name, nlen, msg))
            return true;
    }
    return false;
}

bool sl_modules_bucket_put(struct sl_req *r, const char *bucket)
{
    const struct sl_module *m;
    FOR_MODULES(m) {
        if (m->bucket_put && m->bucket_put(r, bucket))
            return true;
    }
    return false;
}

const struct sl_module *sl_modules_get_owner(const struct sl_req *r)
{
    const struct sl_module *m;
    FOR_MODULES(m) {
        const char *v = m->get_query && m->obj_get ? sl_req_query(r, m->get_query) : NULL;
        if (v && *v)
            return m;
    }
    return NULL;
}

bool sl_modules_obj_put(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    const struct sl_module *m;
    FOR_MODULES(m) {
        if (m->obj_put && m->obj_put(r, b, name, nlen))
            return true;
    }
    return false;
}
