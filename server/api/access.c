/* SPDX-License-Identifier: MIT
 * access.c: the checks access.h lists, in that order.
 *
 * With client authentication on, a gateway maps each request to AIStore's
 * permission bits at the router, from its method and path. Requests whose
 * operation is named in the body (POST/DELETE/PATCH on a bucket, POST on
 * an object) are only authenticated there; the permission is checked when
 * the handler parses the action (the engine's action hook). An object
 * request the gateway redirects with such a body carries the body's hash
 * in the signed redirect (bh=), so the target takes only the body checked.
 * Job endpoints other than get-batch and plan batches need the admin bit.
 */
#include "access.h"
#include "vote.h"
#include "auth.h"
#include "cksum.h"
#include "cluster.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "meta.h"
#include "node.h"
#include "sec.h"
#include "users.h"
#include "stats.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static bool intra_only(const struct sl_req *r)
{
    return !strcmp(r->path, "/v1/metasync") || sl_has_prefix(r->path, "/v1/internal/") ||
           sl_has_prefix(r->path, "/v1/cluster/join") || sl_has_prefix(r->path, "/v1/vote/");
}

static bool open_to_all(const struct sl_req *r)
{
    return sl_req_path_is(r, "/v1/health") || sl_req_path_is(r, "/metrics");
}

static bool is_authn(const struct sl_req *r)
{
    return sl_req_path_is(r, "/v1/users") || sl_req_path_is(r, "/v1/roles") || sl_req_path_is(r, "/v1/tokens") ||
           sl_req_path_is(r, "/v1/clusters");
}

static bool refuse(struct sl_req *r, int code, const char *why)
{
    sl_sec_refused(r, why);
    sl_resp_errf(r, code, "%s %s: %s", r->method_str, r->path, why);
    return false;
}

bool sl_auth_on(void)
{
    return sl_conf->auth_required && G.role != SL_ROLE_TARGET;
}

static const char *token_of(const struct sl_req *r)
{
    const char *a = sl_req_header(r, "Authorization");
    if (a && !strncasecmp(a, "Bearer ", 7)) {
        a += 7;
        while (*a == ' ')
            a++;
        return a;
    }
    const char *x = sl_req_header(r, "X-Amz-Security-Token");
    return x ? x : sl_req_query(r, "X-Amz-Security-Token");
}

/* the authmd version, and whether tok is revoked in it */
static bool revoked(const char *tok, int64_t *version)
{
    json_t *d = sl_cluster_doc("authmd");
    json_t *rv = json_object_get(d, "revoked");
    bool out = false;
    *version = json_integer_value(json_object_get(d, "version"));
    if (json_object_size(rv)) {
        char id[SL_CKSUM_HEX_MAX]; /* (revoked tokens are kept by their SHA-256) */
        sl_cksum_buf(SL_CK_SHA256, tok, strlen(tok), id);
        out = json_object_get(rv, id) != NULL;
    }
    json_decref(d);
    return out;
}

/* the token's user exists, and existed when the token was issued */
static bool user_current(const json_t *claims)
{
    json_t *d = sl_cluster_doc("authmd");
    json_t *u = json_object_get(json_object_get(d, "users"), sl_json_str(claims, "sub", ""));
    json_t *iat = json_object_get(claims, "iat");
    bool ok = u && json_integer_value(json_object_get(u, "created")) <= (json_is_number(iat) ?
                                                                          (json_int_t)json_number_value(iat) : 0);
    json_decref(d);
    return ok;
}

/* Tokens this HTTP thread verified lately: a client sends the same one with
 * every request. An entry holds while the config (key, method) and the
 * authmd (revocations) it was checked against are current and the token
 * has not expired. */
#define TC_N 8
struct tcache {
    struct {
        char *tok;
        json_t *claims;
        const struct sl_config *conf;
        int64_t md_version;
        double exp;
    } e[TC_N];
    unsigned next;
};
static pthread_key_t tc_key;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;

static void tc_free(void *p)
{
    struct tcache *t = p;
    for (int i = 0; i < TC_N; i++) {
        free(t->e[i].tok);
        json_decref(t->e[i].claims);
    }
    free(t);
}

static void tc_init(void)
{
    pthread_key_create(&tc_key, tc_free);
}

static struct tcache *tcache(void)
{
    pthread_once(&tc_once, tc_init);
    struct tcache *t = pthread_getspecific(tc_key);
    if (!t) {
        t = sl_xcalloc(1, sizeof(*t));
        pthread_setspecific(tc_key, t);
    }
    return t;
}

static int64_t authmd_version(void)
{
    json_t *d = sl_cluster_doc("authmd");
    int64_t v = json_integer_value(json_object_get(d, "version"));
    json_decref(d);
    return v;
}

static json_t *cached(const char *tok)
{
    struct tcache *t = tcache();
    for (int i = 0; i < TC_N; i++) {
        if (!t->e[i].tok || strcmp(t->e[i].tok, tok))
            continue;
        if (t->e[i].conf == sl_conf && t->e[i].exp > (double)time(NULL) && t->e[i].md_version == authmd_version())
            return json_incref(t->e[i].claims);
        free(t->e[i].tok);
        json_decref(t->e[i].claims);
        t->e[i].tok = NULL;
        t->e[i].claims = NULL;
        return NULL;
    }
    return NULL;
}

static void remember(const char *tok, json_t *claims, int64_t md_version)
{
    struct tcache *t = tcache();
    unsigned i = t->next++ % TC_N;
    free(t->e[i].tok);
    json_decref(t->e[i].claims);
    t->e[i].tok = sl_xstrdup(tok);
    t->e[i].claims = json_incref(claims);
    t->e[i].conf = sl_conf;
    t->e[i].md_version = md_version;
    t->e[i].exp = json_number_value(json_object_get(claims, "exp"));
}

static int h_notoken = -2, h_fail, h_success, h_denied;

static void handles(void)
{
    if (__atomic_load_n(&h_notoken, __ATOMIC_ACQUIRE) != -2)
        return;
    h_fail = sl_stats_handle("auth_fail_count");
    h_success = sl_stats_handle("auth_success_count");
    h_denied = sl_stats_handle("auth_denied_count");
    __atomic_store_n(&h_notoken, sl_stats_handle("auth_notoken_count"), __ATOMIC_RELEASE);
}

int sl_access_authenticate(struct sl_req *r, struct sl_err *err)
{
    if (r->user)
        return 0;
    handles();
    const char *tok = token_of(r);
    if (!tok || !*tok) {
        sl_stats_add_h(h_notoken, 1);
        sl_sec_refused(r, "no token");
        return sl_errf(err, SL_EUNAUTH, "%s %s: token required (log in: `shale auth login USER`, then send "
                       "\"Authorization: Bearer TOKEN\"; AIStore clients: AIS_AUTHN_TOKEN)", r->method_str, r->path);
    }
    json_t *c = cached(tok);
    if (!c) {
        int64_t ver = 0;
        c = sl_auth_verify(tok, err);
        if (c && revoked(tok, &ver)) {
            json_decref(c);
            c = NULL;
            sl_errf(err, SL_EUNAUTH, "token revoked: log in again");
        }
        if (c && !sl_conf->auth_key[0] && !user_current(c)) {
            /* the cluster's own AuthN issued it, for a user since removed */
            sl_errf(err, SL_EUNAUTH, "token of user \"%s\", who no longer exists (or was made again since)",
                    sl_json_str(c, "sub", ""));
            json_decref(c);
            c = NULL;
        }
        if (!c) {
            sl_stats_add_h(h_fail, 1);
            sl_sec_refused(r, err->msg);
            return -1;
        }
        remember(tok, c, ver);
    }
    sl_stats_add_h(h_success, 1);
    r->user = c;
    return 0;
}

static void perm_names(uint64_t perm, char *out, size_t cap)
{
    static const char *const names[] = { "GET", "HEAD-OBJECT", "PUT", "APPEND", "DELETE-OBJECT", "MOVE-OBJECT",
                                         "PROMOTE", "UPDATE-OBJECT", "HEAD-BUCKET", "LIST-OBJECTS", "PATCH",
                                         "SET-BUCKET-ACL", "LIST-BUCKETS", "SHOW-CLUSTER", "CREATE-BUCKET",
                                         "DESTROY-BUCKET", "MOVE-BUCKET", "ADMIN" };
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < SL_ARRAY_SIZE(names); i++)
        if (perm & (1ULL << i))
            o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, "%s%s", o ? "," : "", names[i]);
}

/* the request is a client's (not a node's own, not a signed redirect) */
static bool as_client(const struct sl_req *r)
{
    return r->trust == SL_TRUST_NONE || r->client_fwd;
}

static int allow(struct sl_req *r, uint64_t perm, const char *prov, const char *bck, struct sl_err *err)
{
    if (!sl_auth_on() || !as_client(r) || !perm)
        return 0;
    if (sl_access_authenticate(r, err) < 0)
        return -1;
    const char *p = prov && *prov ? sl_provider_norm(prov) : "ais";
    struct sl_smap *s = sl_smap_get();
    bool ok = sl_auth_allows(r->user, perm, p ? p : prov, bck, s->uuid);
    sl_smap_put(s);
    if (ok)
        return 0;
    char pn[256];
    perm_names(perm, pn, sizeof(pn));
    const char *who = sl_json_str(r->user, "sub", "?");
    char where[160];
    if (bck)
        snprintf(where, sizeof(where), "bucket %s://%s", sl_provider_scheme(p ? p : "ais"), bck);
    else
        snprintf(where, sizeof(where), "this cluster");
    handles();
    sl_stats_add_h(h_denied, 1);
    sl_errf(err, SL_EFORBIDDEN, "%s %s: user \"%s\" lacks %s on %s (an admin can grant it: `shale auth add role`, "
            "`shale auth update user`)", r->method_str, r->path, who, pn, where);
    sl_sec_refused(r, err->msg);
    return -1;
}

static int dest_allowed(struct sl_req *r, const char *prov, const char *name, struct sl_err *err);

bool sl_access_check(struct sl_req *r, uint64_t perm, const char *provider, const char *bck)
{
    struct sl_err e = { 0 };
    if (allow(r, perm, provider, bck, &e) == 0)
        return true;
    sl_resp_err(r, &e);
    return false;
}

/* the bucket named by /v1/objects/B/... or /v1/buckets/B, into b */
static bool path_bucket(const struct sl_req *r, const char *pfx, char *b, size_t cap)
{
    const char *p = r->path + strlen(pfx);
    while (*p == '/')
        p++;
    size_t n = strcspn(p, "/");
    if (!n || n >= cap)
        return false;
    memcpy(b, p, n);
    b[n] = 0;
    return true;
}

/* The permission a request needs, from its method and path; *later: the
 * body names the operation (checked by the action hook) */
static uint64_t route_perm(const struct sl_req *r, char *bck, size_t cap, bool *later)
{
    int m = r->method;
    bool rd = m == SL_M_GET || m == SL_M_HEAD;
    *later = false;
    bck[0] = 0;
    if (sl_req_path_is(r, "/v1/objects")) {
        if (!path_bucket(r, "/v1/objects", bck, cap))
            return SL_ACCESS_ADMIN;
        if (m == SL_M_GET)
            return SL_ACCESS_GET;
        if (m == SL_M_HEAD)
            return SL_ACCESS_HEAD_OBJ;
        if (m == SL_M_PUT && sl_req_query(r, "object_to"))
            return SL_ACCESS_GET; /* a copy (or transform) of this object: PUT on its destination too */
        if (m == SL_M_PUT)
            return sl_req_query(r, "append_type") ? SL_ACCESS_APPEND : SL_ACCESS_PUT;
        if (m == SL_M_DELETE)
            return SL_ACCESS_DEL_OBJ;
        if (m == SL_M_PATCH)
            return SL_ACCESS_UPDATE_OBJ;
        *later = true;
        return 0;
    }
    if (sl_req_path_is(r, "/v1/buckets")) {
        if (!path_bucket(r, "/v1/buckets", bck, cap))
            return m == SL_M_GET ? SL_ACCESS_LIST_BCK : SL_ACCESS_ADMIN;
        if (m == SL_M_HEAD)
            return SL_ACCESS_HEAD_BCK;
        if (m == SL_M_GET) {
            *later = true; /* list, or a summary */
            return SL_ACCESS_LIST_OBJ;
        }
        *later = true;
        return 0;
    }
    if (sl_req_path_is(r, "/v1/ml/moss")) {
        /* get-batch: GET on each bucket it reads (moss.c checks the entries) */
        if (!path_bucket(r, "/v1/ml/moss", bck, cap))
            bck[0] = 0;
        return bck[0] ? SL_ACCESS_GET : 0;
    }
    if (sl_req_path_is(r, "/v1/ml/plan") && m == SL_M_GET && r->path_len > 6 &&
        !strcmp(r->path + r->path_len - 6, "/batch")) {
        *later = true; /* GET on the plan's bucket (plan.c) */
        return 0;
    }
    const char *what = sl_req_query(r, "what");
    if ((sl_req_path_is(r, "/v1/daemon") || sl_req_path_is(r, "/v1/reverse")) && what && !strcmp(what, "log"))
        return SL_ACCESS_ADMIN; /* node logs */
    if (sl_req_path_is(r, "/v1/daemon") || sl_req_path_is(r, "/v1/cluster") || sl_req_path_is(r, "/v1/etl") ||
        sl_req_path_is(r, "/v1/reverse") ||
        sl_req_path_is(r, "/v1/sort") || sl_req_path_is(r, "/v1/ishard") || sl_req_path_is(r, "/v1/ml/plan"))
        return rd ? SL_ACCESS_SHOW_CLU : SL_ACCESS_ADMIN;
    /* /v1/s3 (access keys), /v1/reverse, and anything unknown */
    return SL_ACCESS_ADMIN;
}

bool sl_access(struct sl_req *r)
{
    struct sl_err e = { 0 };
    if (sl_sec_verify(r, &e) < 0) {
        sl_resp_err(r, &e);
        return false;
    }
    if (r->trust == SL_TRUST_PEER) {
        /* the sender (verified): a call from the primary is its heartbeat */
        const char *ca = sl_req_header(r, "Ais-Cluster-Auth");
        if (ca) {
            char sender[48];
            size_t l = strcspn(ca, " ");
            snprintf(sender, sizeof(sender), "%.*s", (int)SL_MIN(l, sizeof(sender) - 1), ca);
            sl_vote_heard(sender);
        }
        r->client_fwd = sl_req_header(r, "Ais-Client-Fwd") != NULL;
        if (!r->client_fwd)
            return true;
    } else if (intra_only(r)) {
        return refuse(r, SL_EUNAUTH, "an intra-cluster endpoint: only the cluster's nodes may call it (their "
                                     "calls carry the cluster secret's signature)");
    }
    if (open_to_all(r))
        return true;
    if (r->trust == SL_TRUST_NONE) {
        for (int i = 0; i < r->nq; i++)
            if (!strcmp(r->q[i].k, "bh"))
                return refuse(r, SL_EINVAL, "query parameter \"bh\" is reserved for the cluster's signed "
                                            "redirects: remove it");
    }
    if (r->trust == SL_TRUST_REDIRECT) {
        /* the body the gateway checked, if it named one; with auth on a
         * redirected request with a body other than object data must */
        const char *bh = NULL; /* the last one: the gateway's (a client's own may come before it) */
        for (int i = 0; i < r->nq; i++)
            if (!strcmp(r->q[i].k, "bh"))
                bh = r->q[i].v;
        bool has_body = r->content_length > 0 || sl_req_header(r, "Transfer-Encoding");
        if (bh && strlen(bh) == 64)
            snprintf(r->want_bh, sizeof(r->want_bh), "%s", bh);
        else if (sl_conf->auth_required && r->method != SL_M_PUT &&
                 (has_body || (r->method != SL_M_GET && r->method != SL_M_HEAD)))
            return refuse(r, SL_EUNAUTH, "a redirected request whose body was not checked by the gateway (no bh=): "
                                         "send it to a gateway");
    }
    if (G.role == SL_ROLE_TARGET && r->trust == SL_TRUST_NONE) {
        bool read = r->method == SL_M_GET || r->method == SL_M_HEAD;
        if (!read || sl_conf->auth_required)
            return refuse(r, SL_EUNAUTH, "a storage target takes requests only from its cluster's nodes and through "
                                         "a gateway's signed redirect: send it to a gateway (proxy)");
        return true;
    }
    return true;
}

bool sl_access_client(struct sl_req *r)
{
    struct sl_err e = { 0 };
    if (!sl_auth_on() || !as_client(r) || is_authn(r) || open_to_all(r))
        return true;
    /* S3 (on /s3, or at the root with s3.root: any path not Shale's own) is
     * checked where the S3 request is parsed (sl_access_s3) */
    if (sl_req_path_is(r, "/s3") || (sl_conf->s3_root && !sl_req_path_is(r, "/v1")))
        return true;
    char bck[SL_MAX_BCKNAME + 8];
    bool later;
    uint64_t perm = route_perm(r, bck, sizeof(bck), &later);
    if (later && sl_access_authenticate(r, &e) < 0) {
        sl_resp_err(r, &e);
        return false;
    }
    if (allow(r, perm, sl_req_query(r, "provider"), bck[0] ? bck : NULL, &e) < 0) {
        sl_resp_err(r, &e);
        return false;
    }
    const char *ot = r->method == SL_M_PUT && sl_req_path_is(r, "/v1/objects") ? sl_req_query(r, "object_to") : NULL;
    if (ot) { /* PROVIDER/@#/BUCKET/OBJECT, as tcb.c reads it */
        char dn[SL_MAX_BCKNAME + 8] = "", dp[16] = "ais";
        const char *rest;
        if (sl_bck_parse(ot, SL_BCK_UNAME, dp, sizeof(dp), dn, sizeof(dn), &rest, &e) < 0 || !dn[0] ||
            dest_allowed(r, dp, dn, &e) < 0) {
            if (!e.code)
                sl_errf(&e, SL_EINVAL, "object_to \"%s\": expected PROVIDER/@#/BUCKET/OBJECT", ot);
            sl_resp_err(r, &e);
            return false;
        }
    }
    return true;
}

/* ---- operations named in the body ---- */

static const struct {
    const char *action;
    uint64_t perm;       /* on the path's bucket */
    bool cluster;        /* ... or cluster-wide */
    bool to;             /* and PUT on the destination (bck_to / value.tobck) */
} actions[] = {
    { "create-bck", SL_ACCESS_CREATE_BCK, true, false },
    { "destroy-bck", SL_ACCESS_DESTROY_BCK, false, false },
    { "evict-remote-bck", SL_ACCESS_DESTROY_BCK, false, false },
    { "move-bck", SL_ACCESS_MOVE_BCK, false, false },
    { "copy-bck", SL_ACCESS_GET | SL_ACCESS_LIST_OBJ, false, true },
    { "etl-bck", SL_ACCESS_GET | SL_ACCESS_LIST_OBJ, false, true },
    { "copy-listrange", SL_ACCESS_GET, false, true },
    { "etl-listrange", SL_ACCESS_GET, false, true },
    { "archive", SL_ACCESS_GET, false, true },
    { "prefetch-listrange", SL_ACCESS_GET, false, false },
    { "delete-listrange", SL_ACCESS_DEL_OBJ, false, false },
    { "evict-listrange", SL_ACCESS_DEL_OBJ, false, false },
    { "list", SL_ACCESS_LIST_OBJ, false, false },
    { "summary-bck", SL_ACCESS_LIST_OBJ, false, false },
    { "set-bprops", SL_ACCESS_PATCH, false, false },
    { "reset-bprops", SL_ACCESS_PATCH, false, false },
    { "make-n-copies", SL_ACCESS_PATCH, false, false },
    { "rename-obj", SL_ACCESS_MOVE_OBJ, false, false },
    { "promote", SL_ACCESS_PROMOTE, false, false },
    { "blob-download", SL_ACCESS_PUT, false, false },
    { "mpt-upload", SL_ACCESS_PUT, false, false },
    { "mpt-complete", SL_ACCESS_PUT, false, false },
    { "mpt-abort", SL_ACCESS_PUT, false, false },
};

/* PUT on destination provider://name (and CREATE-BUCKET when it does not
 * exist yet) */
static int dest_allowed(struct sl_req *r, const char *prov, const char *name, struct sl_err *err)
{
    struct sl_bck d;
    struct sl_err ign = { 0 };
    bool exists = sl_bck_resolve(name, prov, NULL, &d, &ign) == 0;
    if (exists)
        sl_bck_release(&d);
    if (!exists && allow(r, SL_ACCESS_CREATE_BCK, NULL, NULL, err) < 0)
        return -1;
    return allow(r, SL_ACCESS_PUT, prov, name, err);
}

static int action_hook(struct sl_req *r, const struct sl_actmsg *m, struct sl_err *err)
{
    if (!sl_auth_on() || !as_client(r))
        return 0;
    char bck[SL_MAX_BCKNAME + 8] = "";
    if (sl_req_path_is(r, "/v1/objects"))
        path_bucket(r, "/v1/objects", bck, sizeof(bck));
    else if (sl_req_path_is(r, "/v1/buckets"))
        path_bucket(r, "/v1/buckets", bck, sizeof(bck));
    else
        return allow(r, SL_ACCESS_ADMIN, NULL, NULL, err); /* cluster, daemon: admin actions */
    const char *prov = sl_req_query(r, "provider");
    const char *a = m->action;
    if (!*a && r->method == SL_M_DELETE && !sl_req_path_is(r, "/v1/objects"))
        a = "destroy-bck";
    if (!*a && r->method == SL_M_GET)
        a = "list";
    for (size_t i = 0; i < SL_ARRAY_SIZE(actions); i++) {
        if (strcmp(actions[i].action, a))
            continue;
        if (allow(r, actions[i].perm, prov, actions[i].cluster || !bck[0] ? NULL : bck, err) < 0)
            return -1;
        if (!actions[i].to)
            return 0;
        /* every destination a handler may take: the query's bck_to and the
         * message's tobck (read as the handlers read it: case-insensitive);
         * without one the job writes into its source (archive) */
        const char *bt = sl_req_query(r, "bck_to"), *rest;
        json_t *tb = m->value ? sl_json_get(m->value, "tobck") : NULL;
        if (bt && *bt) {
            char dn[SL_MAX_BCKNAME + 8] = "", dp[16] = "ais";
            if (sl_bck_parse(bt, SL_BCK_UNAME, dp, sizeof(dp), dn, sizeof(dn), &rest, err) < 0 ||
                dest_allowed(r, dp, dn[0] ? dn : bck, err) < 0)
                return -1;
        }
        if (tb && !json_is_null(tb)) {
            const char *n = json_is_object(tb) ? sl_json_str(tb, "name", "") : "";
            /* (archive writes into ais:// whatever the message says) */
            const char *p = json_is_object(tb) && strcmp(a, "archive") ? sl_json_str(tb, "provider", "ais") : "ais";
            if (dest_allowed(r, p, n[0] ? n : bck, err) < 0)
                return -1;
        }
        return 0;
    }
    return allow(r, SL_ACCESS_ADMIN, NULL, NULL, err); /* an action not listed: only an admin */
}

static int perm_hook(struct sl_req *r, uint64_t perm, const char *prov, const char *bck, struct sl_err *err)
{
    return allow(r, perm, prov, bck, err);
}

void sl_access_init(void)
{
    sl_http_set_access_hooks(action_hook, perm_hook);
}

/* S3: the operation from method, bucket, key and sub-resource */
int sl_access_s3(struct sl_req *r, const char *bucket, bool has_key, const char *key_user, struct sl_err *err)
{
    if (!sl_auth_on() || !as_client(r))
        return 0;
    /* no token: a verified access key that belongs to a user acts as that user */
    const char *tok = token_of(r);
    if (!r->user && (!tok || !*tok) && key_user && *key_user)
        r->user = sl_users_claims(key_user);
    int m = r->method;
    if (!*bucket)
        return allow(r, SL_ACCESS_LIST_BCK, NULL, NULL, err);
    if (!has_key) {
        bool sub = sl_req_query(r, "acl") || sl_req_query(r, "versioning") || sl_req_query(r, "tagging") ||
                   sl_req_query(r, "lifecycle") || sl_req_query(r, "policy") || sl_req_query(r, "cors") ||
                   sl_req_query(r, "policyStatus") || sl_req_query(r, "publicAccessBlock");
        if (m == SL_M_GET)
            return allow(r, sub || sl_req_query(r, "location") ? SL_ACCESS_HEAD_BCK : SL_ACCESS_LIST_OBJ, "ais",
                         bucket, err);
        if (m == SL_M_HEAD)
            return allow(r, SL_ACCESS_HEAD_BCK, "ais", bucket, err);
        if (m == SL_M_PUT)
            return sub ? allow(r, SL_ACCESS_PATCH, "ais", bucket, err)
                       : allow(r, SL_ACCESS_CREATE_BCK, NULL, NULL, err);
        if (m == SL_M_DELETE)
            return sub ? allow(r, SL_ACCESS_PATCH, "ais", bucket, err)
                       : allow(r, SL_ACCESS_DESTROY_BCK, "ais", bucket, err);
        if (m == SL_M_POST && sl_req_query(r, "delete"))
            return allow(r, SL_ACCESS_DEL_OBJ, "ais", bucket, err);
        return allow(r, SL_ACCESS_ADMIN, NULL, NULL, err);
    }
    if (m == SL_M_GET)
        return allow(r, SL_ACCESS_GET, "ais", bucket, err);
    if (m == SL_M_HEAD)
        return allow(r, SL_ACCESS_HEAD_OBJ, "ais", bucket, err);
    if (m == SL_M_DELETE && !sl_req_query(r, "uploadId"))
        return allow(r, SL_ACCESS_DEL_OBJ, "ais", bucket, err);
    if (m == SL_M_PUT || m == SL_M_POST || m == SL_M_DELETE) {
        const char *src = sl_req_header(r, "x-amz-copy-source");
        if (src) { /* [/]BUCKET/KEY, URL-encoded: GET there too, parsed as copy_object (s3obj.c) parses it */
            size_t sl = strlen(src);
            char *tmp = sl_xmalloc(sl + 1);
            size_t dl = sl_url_decode(src, sl, tmp, false);
            const char *sp = tmp;
            if (*sp == '/')
                sp++;
            size_t n = strcspn(sp, "/");
            int rc;
            if (memchr(tmp, 0, dl) || !n || !sp[n] || !sp[n + 1] || n > SL_MAX_BCKNAME) {
                rc = sl_errf(err, SL_EFORBIDDEN, "x-amz-copy-source must be BUCKET/KEY (URL-encoded)");
            } else {
                char sb[SL_MAX_BCKNAME + 1];
                memcpy(sb, sp, n);
                sb[n] = 0;
                rc = allow(r, SL_ACCESS_GET, "ais", sb, err);
            }
            free(tmp);
            if (rc < 0)
                return -1;
        }
        return allow(r, SL_ACCESS_PUT, "ais", bucket, err);
    }
    return allow(r, SL_ACCESS_ADMIN, NULL, NULL, err);
}

int sl_access_enabling_auth(struct sl_req *r, const json_t *partial, struct sl_err *err)
{
    json_t *v = json_object_get(json_object_get(partial, "auth"), "client_auth_required");
    if (!v)
        v = json_object_get(partial, "auth.client_auth_required");
    bool on = json_is_true(v) || (json_is_string(v) && !strcmp(json_string_value(v), "true"));
    if (!on || sl_conf->auth_required || G.role == SL_ROLE_TARGET || (r->trust != SL_TRUST_NONE && !r->client_fwd))
        return 0;
    if (sl_access_authenticate(r, err) < 0) {
        sl_errf(err, SL_EUNAUTH, "enabling client authentication requires a token with the admin claim (so that "
                "somebody can still manage the cluster afterwards): `shale auth add user admin --role Admin`, "
                "`shale auth login admin`, then set it again");
        return -1;
    }
    if (!json_is_true(json_object_get(r->user, "admin")))
        return sl_errf(err, SL_EFORBIDDEN, "enabling client authentication requires a token with the admin claim; "
                       "user \"%s\" has none", sl_json_str(r->user, "sub", "?"));
    return 0;
}
