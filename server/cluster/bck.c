/* SPDX-License-Identifier: MIT
 * bck.c: bucket resolution for every handler and job. See cluster.h.
 */
#include "cluster.h"
#include "backend.h"
#include "log.h"
#include "node.h"
#include "peer.h"

#include <stdlib.h>

#include <string.h>

/* A bucket of a provider with no backend plugin here: a clear 501. */
static int no_backend(const char *prov, const char *name, struct sl_err *err)
{
    return sl_errf(err, SL_EUNSUPP,
                   "%s bucket \"%s://%s\" does not exist (further details: no %s backend is configured in this "
                   "cluster; only ais:// buckets%s are supported)",
                   prov, sl_provider_scheme(prov), name, prov, sl_backend_loaded("aws") ? " and s3:// buckets" : "");
}

int sl_bck_resolve(const char *name, const char *provider, const char *ns, struct sl_bck *dst, struct sl_err *err)
{
    const char *prov = sl_provider_norm(provider);
    if (!prov)
        return sl_errf(err, SL_EINVAL, "invalid provider \"%s\" (valid: ais, aws/s3, gcp/gs, azure/az, oci/oc)",
                       provider);
    if (ns && *ns && strcmp(ns, "@#") && strcmp(ns, "#"))
        return sl_errf(err, SL_EUNSUPP,
                       "bucket namespace \"%s\" is not supported by this cluster (only the global namespace)", ns);
    if (sl_bck_name_valid(name, err) < 0)
        return -1;
    bool remote = strcmp(prov, "ais") != 0;
    if (remote && !sl_backend_loaded(prov))
        return no_backend(prov, name, err);
    struct sl_bmd *b = sl_bmd_get();
    const struct sl_bck *k = sl_bmd_find(b, prov, name);
    if (!k && G.role == SL_ROLE_TARGET && sl_cluster_refresh_bmd() == 1) {
        sl_bmd_put(b);
        b = sl_bmd_get();
        k = sl_bmd_find(b, prov, name);
    }
    if (!k) {
        sl_bmd_put(b);
        if (remote) /* gateways add it on first access (sl_bck_add_remote) */
            return sl_errf(err, SL_ENOBCK, "remote bucket \"%s://%s\" is not in this cluster's bucket list yet "
                           "(it is added on first access through a gateway, or with `shale bucket create %s://%s`)",
                           sl_provider_scheme(prov), name, sl_provider_scheme(prov), name);
        return sl_errf(err, SL_ENOBCK, "bucket \"%s://%s\" does not exist", sl_provider_scheme(prov), name);
    }
    sl_bck_copy(dst, k);
    sl_bmd_put(b);
    return 0;
}

struct add_arg {
    const char *prov, *name;
};

static int edit_add(struct sl_bmd *b, void *arg, struct sl_err *err)
{
    struct add_arg *a = arg;
    if (sl_bmd_find(b, a->prov, a->name))
        return 0;
    return sl_bmd_add(b, a->prov, a->name, NULL, err) ? 0 : -1;
}

/* Add prov://name with default props (through the primary; here when
 * standalone); it existing already is success. */
static int bck_add(const char *prov, const char *name, struct sl_err *err)
{
    struct add_arg a = { prov, name };
    if (G.role == SL_ROLE_STANDALONE)
        return sl_bmd_modify(edit_add, &a, err);
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *pr = sl_smap_primary(s);
    int rc = 0;
    if (!pr) {
        rc = sl_errf(err, SL_EUNAVAIL, "no primary proxy to add %s://%s", sl_provider_scheme(prov), name);
    } else {
        /* the caller has looked the remote bucket up already */
        char *url = sl_xasprintf("%s/v1/buckets/%s?provider=%s&dont_head_remote_bck=true", pr->ctrl_url, name, prov);
        struct sl_peer_resp r;
        int prc = sl_peer_json("POST", url, json_pack("{s:s}", "action", "create-bck"), 0, &r);
        if (prc < 0 || (r.status != 200 && r.status != 409))
            rc = sl_errf(err, prc < 0 ? SL_EUNAVAIL : sl_code_from_status((int)r.status), "adding %s://%s: %s",
                         sl_provider_scheme(prov), name, r.err);
        sl_peer_resp_free(&r);
        free(url);
    }
    sl_smap_put(s);
    return rc;
}

int sl_cluster_bck_create(const char *name, struct sl_err *err)
{
    return bck_add("ais", name, err);
}

int sl_bck_add_remote(const char *provider, const char *name, struct sl_err *err)
{
    const char *prov = sl_provider_norm(provider);
    if (!prov || !strcmp(prov, "ais") || !sl_backend_loaded(prov))
        return sl_errf(err, SL_EINVAL, "\"%s\" is not a provider with a backend here", provider ? provider : "");
    struct sl_bmd *bm = sl_bmd_get();
    bool known = sl_bmd_find(bm, prov, name) != NULL;
    sl_bmd_put(bm);
    if (known)
        return 0;
    if (!strcmp(prov, "ht")) /* its URL cannot be guessed */
        return sl_errf(err, SL_ENOBCK, "ht://%s is not in this cluster: create it with the URL its objects are under "
                       "(shale bucket create ht://%s --props extra.http.original_url=http://HOST/DIR/)", name, name);
    /* first access: the remote must have it (default props: the endpoint,
     * region and credentials of the node's environment) */
    struct sl_bck probe;
    memset(&probe, 0, sizeof(probe));
    snprintf(probe.provider, sizeof(probe.provider), "%s", prov);
    snprintf(probe.name, sizeof(probe.name), "%s", name);
    if (sl_backend_head_bucket(&probe, err) < 0)
        return -1;
    if (bck_add(prov, name, err) < 0)
        return -1;
    sl_logi("added remote bucket %s://%s on first access", sl_provider_scheme(prov), name);
    return 0;
}

int sl_bck_resolve_add(const char *name, const char *provider, struct sl_bck *dst, struct sl_err *err)
{
    if (sl_bck_resolve(name, provider, NULL, dst, err) == 0)
        return 0;
    const char *p = sl_provider_norm(provider);
    if (err->code != SL_ENOBCK || !p || !strcmp(p, "ais") || !sl_backend_loaded(p))
        return -1;
    memset(err, 0, sizeof(*err)); /* (callers test err->msg later) */
    if (sl_bck_add_remote(p, name, err) < 0)
        return -1;
    return sl_bck_resolve(name, provider, NULL, dst, err);
}

bool sl_obj_owned_here(const struct sl_smap *s, const struct sl_bck *b, const char *name, size_t nlen)
{
    if (G.role == SL_ROLE_STANDALONE)
        return true;
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b->provider, b->name, name, nlen);
    const struct sl_snode *t = sl_smap_hrw_target(s, un.p, un.len);
    sl_buf_free(&un);
    return t && !strcmp(t->id, G.id);
}
