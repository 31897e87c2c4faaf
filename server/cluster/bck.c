/* SPDX-License-Identifier: MIT
 * bck.c: bucket resolution for every handler and job. See cluster.h.
 */
#include "cluster.h"
#include "node.h"
#include "peer.h"

#include <stdlib.h>

#include <string.h>

/* A bucket of another provider (s3://, gs://, az://, oci://). This is the
 * seam where backend plugins will plug in: a configured backend will
 * resolve (and cache in the BMD) the remote bucket here. Today there is
 * none, so the answer is a clear 501. */
static int remote_bck(const char *prov, const char *name, struct sl_err *err)
{
    return sl_errf(err, SL_EUNSUPP,
                   "%s bucket \"%s://%s\" does not exist (further details: no %s backend is configured in this "
                   "cluster; only ais:// buckets are supported)",
                   prov, sl_provider_scheme(prov), name, prov);
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
    if (strcmp(prov, "ais"))
        return remote_bck(prov, name, err);
    struct sl_bmd *b = sl_bmd_get();
    const struct sl_bck *k = sl_bmd_find(b, prov, name);
    if (!k && G.role == SL_ROLE_TARGET && sl_cluster_refresh_bmd() == 1) {
        sl_bmd_put(b);
        b = sl_bmd_get();
        k = sl_bmd_find(b, prov, name);
    }
    if (!k) {
        sl_bmd_put(b);
        return sl_errf(err, SL_ENOBCK, "bucket \"%s://%s\" does not exist", sl_provider_scheme(prov), name);
    }
    sl_bck_copy(dst, k);
    sl_bmd_put(b);
    return 0;
}

static int edit_create(struct sl_bmd *b, void *arg, struct sl_err *err)
{
    const char *name = arg;
    if (sl_bmd_find(b, "ais", name))
        return 0;
    return sl_bmd_add(b, "ais", name, NULL, err) ? 0 : -1;
}

int sl_cluster_bck_create(const char *name, struct sl_err *err)
{
    if (G.role == SL_ROLE_STANDALONE)
        return sl_bmd_modify(edit_create, (void *)name, err);
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *pr = sl_smap_primary(s);
    int rc = 0;
    if (!pr) {
        rc = sl_errf(err, SL_EUNAVAIL, "no primary proxy to create ais://%s", name);
    } else {
        char *url = sl_xasprintf("%s/v1/buckets/%s?provider=ais", pr->ctrl_url, name);
        struct sl_peer_resp r;
        int prc = sl_peer_json("POST", url, json_pack("{s:s}", "action", "create-bck"), 0, &r);
        if (prc < 0 || (r.status != 200 && r.status != 409))
            rc = sl_errf(err, prc < 0 ? SL_EUNAVAIL : sl_code_from_status((int)r.status),
                         "creating the destination ais://%s: %s", name, r.err);
        sl_peer_resp_free(&r);
        free(url);
    }
    sl_smap_put(s);
    return rc;
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
