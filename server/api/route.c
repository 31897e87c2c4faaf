/* SPDX-License-Identifier: MIT
 * route.c: the URL -> handler table. Easy URLs (/ais/BUCKET/OBJ) are
 * rewritten to their /v1 form first. What a node serves depends on its role:
 * a gateway serves control and listing and redirects object requests; a
 * target serves objects; standalone serves both without redirects.
 * Endpoints of job modules come from the module list (module.h).
 */
#include "route.h"
#include "access.h"
#include "authn.h"
#include "conf.h"
#include "daemon.h"
#include "module.h"
#include "node.h"
#include "prx.h"
#include "s3.h"
#include "tgt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void set_path(struct sl_req *r, char *np)
{
    free(r->path);
    r->path = np;
    r->path_len = strlen(np);
}

static void add_query(struct sl_req *r, const char *k, const char *v)
{
    if (sl_req_query(r, k))
        return;
    r->q = sl_xrealloc(r->q, (size_t)(r->nq + 1) * sizeof(*r->q));
    r->q[r->nq].k = sl_xstrdup(k);
    r->q[r->nq].v = sl_xstrdup(v);
    r->nq++;
}

/* /v1/buckets/B/X...: more than a bucket name (a trailing '/' is fine) */
static bool bucket_path_extra(const struct sl_req *r)
{
    const char *p = r->path + strlen("/v1/buckets");
    while (*p == '/')
        p++;
    const char *e = strchr(p, '/');
    if (!e)
        return false;
    while (*e == '/')
        e++;
    return *e != 0;
}

/* /ais/b/o -> /v1/objects/b/o ; /ais/b -> /v1/buckets/b ; /ais -> /v1/buckets */
static bool easy_url(struct sl_req *r)
{
    static const struct {
        const char *pfx, *provider;
    } m[] = { { "/ais", "ais" }, { "/gs", "gcp" }, { "/az", "azure" } };
    for (size_t i = 0; i < SL_ARRAY_SIZE(m); i++) {
        if (!sl_req_path_is(r, m[i].pfx))
            continue;
        const char *rest = r->path + strlen(m[i].pfx);
        while (*rest == '/')
            rest++;
        add_query(r, "provider", m[i].provider);
        if (!*rest) {
            set_path(r, sl_xstrdup("/v1/buckets"));
            return true;
        }
        const char *slash = strchr(rest, '/');
        if (!slash || !slash[1]) {
            if (r->method == SL_M_PUT) {
                sl_resp_errf(r, SL_EINVAL, "PUT %s: missing object name (use %s/BUCKET/OBJECT_NAME)", r->path,
                             m[i].pfx);
                return false;
            }
            size_t bl = slash ? (size_t)(slash - rest) : strlen(rest);
            set_path(r, sl_xasprintf("/v1/buckets/%.*s", (int)bl, rest));
            return true;
        }
        /* object: keep the exact bytes of the name (may contain anything) */
        size_t off = (size_t)(rest - r->path);
        size_t nl = r->path_len - off;
        char *np = sl_xmalloc(strlen("/v1/objects/") + nl + 1);
        memcpy(np, "/v1/objects/", 12);
        memcpy(np + 12, rest, nl);
        np[12 + nl] = 0;
        free(r->path);
        r->path = np;
        r->path_len = 12 + nl;
        return true;
    }
    return true;
}

/* Make r an S3 request: its path becomes /s3 + pre + its path (the raw URI,
 * which signatures cover and the forward sends on, stays). */
static void s3_reroute(struct sl_req *r, const char *pre, size_t pl)
{
    size_t nl = 3 + pl + r->path_len;
    char *np = sl_xmalloc(nl + 1);
    memcpy(np, "/s3", 3);
    memcpy(np + 3, pre, pl);
    memcpy(np + 3 + pl, r->path, r->path_len);
    np[nl] = 0;
    free(r->path);
    r->path = np;
    r->path_len = nl;
    sl_s3_route(r);
}

/* Virtual-hosted S3 (s3.vhost_domain): Host BUCKET.DOMAIN[:port] makes the
 * request an S3 one on BUCKET, whatever its path. */
static bool s3_vhost(struct sl_req *r)
{
    const char *dom = sl_conf->s3_vhost_domain;
    const char *host = sl_req_header(r, "Host");
    if (!dom || !*dom || !host)
        return false;
    size_t hl = strcspn(host, ":"), dl = strlen(dom);
    if (hl <= dl + 1 || host[hl - dl - 1] != '.' || strncasecmp(host + hl - dl, dom, dl))
        return false;
    char *pre = sl_xasprintf("/%.*s", (int)(hl - dl - 1), host);
    s3_reroute(r, pre, strlen(pre));
    free(pre);
    return true;
}

/* A bucket name sent with an encoded '/' (%2F) is refused: decoded first,
 * "/v1/buckets/a%2Fb" would be bucket "a" and more, "/v1/buckets/a%2F"
 * bucket "a". seg: the segment of the path that names the bucket. */
static bool bucket_slash(struct sl_req *r, int seg, bool s3)
{
    char *b = sl_req_raw_seg_slash(r, seg);
    if (!b)
        return false;
    if (s3)
        s3_err(r, 400, "InvalidBucketName", "The specified bucket is not valid: \"%s\" (bucket names may not contain "
               "'/', sent as %%2F); nothing was done", b);
    else
        sl_resp_errf(r, SL_EINVAL, "bucket name \"%s\" is invalid: bucket names may not contain '/' (sent as %%2F "
                     "in %s); nothing was done", b, r->raw_uri);
    free(b);
    return true;
}

static bool bucket_path_slash(struct sl_req *r)
{
    if (sl_req_path_is(r, "/v1/buckets") || sl_req_path_is(r, "/v1/objects"))
        return bucket_slash(r, 2, false);
    if (sl_req_path_is(r, "/ais") || sl_req_path_is(r, "/gs") || sl_req_path_is(r, "/az"))
        return bucket_slash(r, 1, false);
    if (sl_req_path_is(r, "/s3"))
        return bucket_slash(r, 1, true);
    return false;
}

void sl_route(struct sl_req *r)
{
    if (!r->path_len || r->path[0] != '/') {
        sl_resp_errf(r, SL_EINVAL, "invalid request path \"%s\"", r->raw_uri);
        return;
    }
    if (!r->rerouted && !sl_access(r))
        return;
    if (s3_vhost(r))
        return;
    if (!r->rerouted && bucket_path_slash(r))
        return;
    if (!easy_url(r))
        return;
    if (!r->rerouted && !sl_access_client(r))
        return;
    if (sl_req_path_is(r, "/v1/health")) {
        sl_h_health(r);
    } else if (sl_req_path_is(r, "/s3")) {
        sl_s3_route(r);
    } else if (sl_req_path_is(r, "/v1/s3")) {
        sl_s3_admin(r);
    } else if (sl_req_path_is(r, "/v1/users") || sl_req_path_is(r, "/v1/roles") || sl_req_path_is(r, "/v1/tokens") ||
               sl_req_path_is(r, "/v1/clusters")) {
        sl_authn_route(r);
    } else if (sl_prx_first_access(r)) {
        /* a remote bucket seen for the first time: added, then routed again */
    } else if (sl_req_path_is(r, "/v1/objects")) {
        sl_route_objects(r);
    } else if (sl_req_path_is(r, "/v1/buckets")) {
        if (r->path_bad)
            sl_resp_errf(r, SL_EINVAL, "the request URL contains a NUL byte (%%00)");
        else if (bucket_path_extra(r) &&
                 !(r->method == SL_M_HEAD && sl_req_query(r, "bsumm_remote") && *sl_req_query(r, "bsumm_remote")))
            /* (a HEAD summary takes a prefix there: /v1/buckets/B/PREFIX?bsumm_remote=) */
            /* /v1/buckets/B/more: a typo must never create or destroy B */
            sl_resp_errf(r, SL_EINVAL, "invalid request URI %s: /v1/buckets/BUCKET takes nothing after the bucket "
                         "name (objects are /v1/objects/BUCKET/OBJECT); nothing was done", r->path);
        else
            sl_route_buckets(r);
    } else if ((sl_req_path_is(r, "/v1/daemon") || sl_req_path_is(r, "/v1/cluster")) && sl_tls_route(r)) {
        /* (load-x509, what=tls_certificate) */
    } else if (sl_req_path_is(r, "/v1/daemon")) {
        if (r->method == SL_M_GET)
            sl_h_daemon_get(r);
        else
            sl_route_daemon_other(r);
    } else if (sl_req_path_is(r, "/v1/cluster")) {
        sl_route_cluster(r);
    } else if (sl_req_path_is(r, "/v1/reverse")) {
        const char *nid = sl_req_header(r, "Ais-Node-Id");
        if (r->method == SL_M_PUT && nid && !strcmp(nid, G.id) && sl_req_path_is(r, "/v1/reverse/daemon"))
            sl_route_daemon_other(r); /* (an action for this node itself) */
        else
            sl_h_reverse(r);
    } else if (sl_req_path_is(r, "/metrics")) {
        sl_h_metrics(r);
    } else if (!sl_route_cluster_internal(r) && !sl_modules_route(r)) {
        if (sl_conf->s3_root && !sl_req_path_is(r, "/v1")) {
            if (bucket_slash(r, 0, true))
                return;
            s3_reroute(r, "", 0);
            return;
        }
        if (r->path_len == 1) {
            sl_resp_text(r, 200, "Shale " SL_VERSION ": an AIStore-compatible storage cluster. API: /v1/...; "
                                 "health: /v1/health\n");
            return;
        }
        sl_resp_errf(r, SL_ENOENT, "no such endpoint: %s %s (Shale serves /v1/{health,daemon,cluster,buckets,"
                     "objects,etl,...}, /ais/BUCKET/OBJECT and /metrics)", r->method_str, r->path);
    }
}
