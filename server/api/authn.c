/* SPDX-License-Identifier: MIT
 * authn.c: the cluster's own AuthN, served by every gateway on AIStore
 * AuthN's paths and wire format (spec/authn-api.md; so AIStore's Python
 * SDK AuthNClient, its Go api/authn, `ais auth` with AIS_AUTHN_URL pointed
 * at a gateway, and `shale auth` work):
 *   POST   /v1/users/NAME {"password", "expires_in"?}  log in -> {"token"}
 *   GET    /v1/users[/NAME]          POST /v1/users {"id","pass","roles"}
 *   PUT    /v1/users/NAME {...}      DELETE /v1/users/NAME
 *   GET    /v1/roles[/NAME]          POST /v1/roles {"name","desc",
 *   PUT    /v1/roles/NAME            "clusters":[{"id","perm"}],
 *   DELETE /v1/roles/NAME            "buckets":[{"bck":{..},"perm"}]}
 *   GET    /v1/clusters[/ID|ALIAS]   POST /v1/clusters {"id","alias","urls"}
 *   PUT    /v1/clusters/ID           DELETE /v1/clusters/ID|ALIAS
 *   DELETE /v1/tokens {"token"}      revoke (the token itself is the proof)
 *   DELETE /v1/tokens {"tokens":[..]} revoked by another AuthN (admin)
 *   POST   /v1/tokens                does this cluster accept my token?
 * A user's roles are sent as names or as role objects and shown as full
 * roles; GET /v1/roles is a list; null for a list means none.
 * Users, roles, registered clusters and revoked tokens live in the cluster
 * document "authmd" ({"users": {NAME: {"pass", "roles": [NAME..]}},
 * "roles": {NAME: Role}, "clusters": {ID: {"id","alias","urls"}},
 * "revoked": {sha256(token): exp}}): the primary changes it, metasync
 * gives it to every node, so any gateway logs users in and refuses a
 * revoked token. A revocation is also pushed to every other registered
 * cluster (DELETE URL/v1/tokens, as AIStore's AuthN does), and a cluster
 * is registered only once it accepts this AuthN's token (POST
 * URL/v1/tokens). Passwords are PBKDF2 hashes; logins (slow on purpose)
 * and calls to other clusters run off the HTTP threads; logins are
 * rate-limited per source address: auth.login_attempts failures a minute
 * for one user from it, four times that for all users (never per user
 * alone: anyone could lock a user out). Role "Admin" is built in.
 * Managing AuthN needs an admin's token when auth is on (401 otherwise,
 * as AIStore's AuthN answers); with auth off the cluster is open and so
 * are these (that is how the first admin is made; see docs/security.md).
 */
#include "access.h"
#include "authn.h"
#include "users.h"
#include "auth.h"
#include "cksum.h"
#include "cluster.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "meta.h"
#include "node.h"
#include "peer.h"
#include "stats.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '-' || s[i] == '_' || s[i] == '.' || s[i] == '@'))
            return false;
    return true;
}

/* AIStore's rule for a cluster alias (cmn/cos IsAlphaNice); "" passes */
static bool alias_ok(const char *s)
{
    size_t n = strlen(s);
    if (n > 32 || (n && (s[0] == '-' || s[0] == '_' || s[n - 1] == '-' || s[n - 1] == '_')))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '-' || s[i] == '_'))
            return false;
    return true;
}

static bool is_admin(const json_t *claims)
{
    struct sl_smap *s = sl_smap_get();
    bool ok = sl_auth_allows(claims, SL_ACCESS_ADMIN, NULL, NULL, s->uuid);
    sl_smap_put(s);
    return ok;
}

/* caller is an admin (or auth is off); else answered 401 (AIStore's AuthN
 * answers 401 to every authorisation failure, 403 only for the built-ins) */
static bool need_admin(struct sl_req *r)
{
    struct sl_err e = { 0 };
    if (!sl_auth_on())
        return true;
    if (sl_access_authenticate(r, &e) < 0) {
        sl_resp_err(r, &e);
        return false;
    }
    if (is_admin(r->user))
        return true;
    sl_resp_errf(r, SL_EUNAUTH, "%s %s: not authorized: user \"%s\" lacks ADMIN (AuthN's users, roles and clusters "
                 "are changed and listed by an admin: log in as one)", r->method_str, r->path,
                 sl_json_str(r->user, "sub", "?"));
    return false;
}

/* the caller's user name when authenticated ("" when auth is off) */
static const char *caller(struct sl_req *r)
{
    struct sl_err e = { 0 };
    if (!sl_auth_on() || sl_access_authenticate(r, &e) < 0)
        return "";
    return sl_json_str(r->user, "sub", "");
}

/* ---- login ---- */

/* failed logins this minute, per user and (a table of its own, so that
 * trying many user names cannot push an address out) per address */
struct rl_ent {
    char key[72];
    int64_t win; /* minute */
    int fails;
};
static struct rl_ent rl_users[256], rl_addrs[1024];
static pthread_mutex_t rl_mu = PTHREAD_MUTEX_INITIALIZER;

/* key's entry for this minute: its own, else a free or stale one, else
 * (all 8 probed taken) the one with the fewest failures */
static int *rl_slot(struct rl_ent *t, size_t n, const char *key, int64_t minute)
{
    uint32_t h = 2166136261u;
    for (const char *p = key; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    struct rl_ent *victim = NULL;
    for (size_t i = 0; i < 8; i++) {
        struct rl_ent *e = &t[(h + i) % n];
        if (e->win == minute && !strcmp(e->key, key))
            return &e->fails;
        if (e->win != minute) {
            if (!victim || victim->win == minute)
                victim = e;
        } else if (!victim || (victim->win == minute && e->fails < victim->fails)) {
            victim = e;
        }
    }
    snprintf(victim->key, sizeof(victim->key), "%s", key);
    victim->win = minute;
    victim->fails = 0;
    return &victim->fails;
}

/* the counters of user from addr, and of addr, this minute (call with
 * rl_mu held). A user's failures count per source address: guesses from
 * one address cannot lock the user out of logging in from another. */
static void rl_pair(const char *user, const char *addr, int **fu, int **fa)
{
    int64_t minute = time(NULL) / 60;
    char ka[72], ku[72];
    snprintf(ka, sizeof(ka), "%.*s", (int)strcspn(addr, ":"), addr);
    snprintf(ku, sizeof(ku), "%.40s@%.30s", user, ka);
    *fu = rl_slot(rl_users, SL_ARRAY_SIZE(rl_users), ku, minute);
    *fa = rl_slot(rl_addrs, SL_ARRAY_SIZE(rl_addrs), ka, minute);
}

/* A login attempt: true (and nothing counted) when the user failed too
 * often from this address this minute, or the address did (for any user);
 * else the attempt counts as a failure until rl_success takes it back, so
 * parallel guesses count too. */
static bool rl_attempt(const char *user, const char *addr)
{
    int *fu, *fa;
    pthread_mutex_lock(&rl_mu);
    rl_pair(user, addr, &fu, &fa);
    bool b = *fu >= sl_conf->auth_login_attempts || *fa >= sl_conf->auth_login_attempts * 4;
    if (!b) {
        (*fu)++;
        (*fa)++;
    }
    pthread_mutex_unlock(&rl_mu);
    return b;
}

static void rl_success(const char *user, const char *addr)
{
    int *fu, *fa;
    pthread_mutex_lock(&rl_mu);
    rl_pair(user, addr, &fu, &fa);
    if (*fu > 0)
        (*fu)--;
    if (*fa > 0)
        (*fa)--;
    pthread_mutex_unlock(&rl_mu);
}

struct login {
    char *user, *pass;
    int64_t expires_in_ns;
};

static void login_free(void *arg)
{
    struct login *l = arg;
    free(l->user);
    if (l->pass)
        OPENSSL_cleanse(l->pass, strlen(l->pass));
    free(l->pass);
    free(l);
}

static void su_bootstrap(void);

static void login_run(struct sl_req *r, void *arg)
{
    struct login *l = arg;
    su_bootstrap();
    json_t *d = sl_users_doc();
    json_t *u = json_object_get(json_object_get(d, "users"), l->user);
    bool ok = u && sl_auth_check_password(l->pass, sl_json_str(u, "pass", ""));
    if (ok)
        rl_success(l->user, sl_req_remote(r));
    if (!ok) {
        sl_stats_add("auth_login_fail_count", 1);
        sl_logw("authn: failed login as \"%s\" from %s", l->user, sl_req_remote(r));
        /* (AIStore's words: its SDK raises ErrUserInvalidCredentials on them) */
        sl_resp_errf(r, SL_EUNAUTH, "AuthN: failed to generate token for %s, err: invalid credentials (wrong user "
                     "name or password)", l->user);
    } else {
        int64_t ttl = l->expires_in_ns > 0 ? l->expires_in_ns : sl_conf->auth_token_ttl_ns;
        json_t *c = sl_users_claims_of(d, l->user, u, ttl < 1000000000 ? 1000000000 : ttl);
        struct sl_err err = { 0 };
        char *tok = sl_auth_sign(c, &err);
        json_decref(c);
        if (!tok) {
            sl_resp_err(r, &err);
        } else {
            sl_logi("authn: \"%s\" logged in from %s", l->user, sl_req_remote(r));
            sl_resp_json_new(r, 200, json_pack("{s:s}", "token", tok));
            OPENSSL_cleanse(tok, strlen(tok));
            free(tok);
        }
    }
    json_decref(d);
    login_free(l);
}

static void login_body(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    const char *name = r->path + strlen("/v1/users/");
    if (!j) {
        sl_resp_err(r, &err);
        return;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        sl_resp_errf(r, SL_EINVAL, "log in with POST /v1/users/NAME {\"password\": \"...\", \"expires_in\": NS}");
        return;
    }
    const char *pass = sl_json_str(j, "password", "");
    json_t *ei = json_object_get(j, "expires_in");
    int64_t max = sl_conf->auth_token_ttl_ns, want = json_is_integer(ei) ? (int64_t)json_integer_value(ei) : 0;
    if (!*pass) {
        json_decref(j);
        sl_resp_errf(r, SL_EUNAUTH, "empty password: log in with {\"password\": \"...\"}");
        return;
    }
    if (ei && !json_is_null(ei) && !json_is_integer(ei)) {
        json_decref(j);
        sl_resp_errf(r, SL_EINVAL, "AuthN: failed to generate token for %s, err: \"expires_in\" must be nanoseconds "
                     "(an integer) or null", name);
        return;
    }
    if (want < 0 || (want > 0 && want < 60 * 1000000000LL)) {
        json_decref(j);
        sl_resp_errf(r, SL_EINVAL, "AuthN: failed to generate token for %s, err: invalid requested expiry date: must "
                     "be 0 or >= 1m", name);
        return;
    }
    if (want > max) {
        json_decref(j);
        sl_resp_errf(r, SL_EINVAL, "AuthN: failed to generate token for %s, err: cannot exceed configured max token "
                     "age: %llds (auth.expiration_time)", name, (long long)(max / 1000000000));
        return;
    }
    if (rl_attempt(name, sl_req_remote(r))) {
        json_decref(j);
        sl_logw("authn: login as \"%s\" from %s refused: too many failures this minute", name,
                sl_req_remote(r));
        sl_resp_errf(r, SL_ETOOMANY, "too many failed logins from this address (for user \"%s\" or for any): wait a "
                     "minute and try again", name);
        return;
    }
    struct login *l = sl_xcalloc(1, sizeof(*l));
    l->user = sl_xstrdup(name);
    l->pass = sl_xstrdup(pass);
    l->expires_in_ns = want;
    json_decref(j);
    sl_req_offload(r, login_run, login_free, l);
}

/* ---- changes (primary) ---- */

struct change {
    int what;        /* C_* */
    char *name;
    json_t *body;
    char *by;        /* the caller ("" with auth off) */
    bool by_admin;
};
enum { C_ADD_USER, C_PUT_USER, C_DEL_USER, C_ADD_ROLE, C_PUT_ROLE, C_DEL_ROLE, C_REVOKE, C_ADD_CLU, C_PUT_CLU,
       C_DEL_CLU };

static void change_free(void *arg)
{
    struct change *c = arg;
    free(c->name);
    json_decref(c->body);
    free(c->by);
    free(c);
}

static pthread_mutex_t change_mu = PTHREAD_MUTEX_INITIALIZER;

/* The first admin, as AIStore's AuthN makes it: AIS_AUTHN_SU_NAME and
 * AIS_AUTHN_SU_PASS in the primary's environment make that user (role
 * Admin) only while no user exists at all: made at the first login (off
 * the HTTP thread), so auth can be on from the first start; once any user
 * exists the variables are ignored (a later start with other values
 * changes and adds nothing). */
static void su_bootstrap(void)
{
    static bool done;
    const char *name = getenv("AIS_AUTHN_SU_NAME"), *pass = getenv("AIS_AUTHN_SU_PASS");
    if (!name || !*name || !pass || !*pass || (G.role == SL_ROLE_PROXY && !sl_is_primary()))
        return;
    pthread_mutex_lock(&change_mu);
    if (done) {
        pthread_mutex_unlock(&change_mu);
        return;
    }
    json_t *d = sl_users_doc();
    json_t *users = json_object_get(d, "users");
    if (json_object_size(users) == 0 && name_ok(name)) {
        char *h = sl_auth_hash_password(pass);
        json_t *nu = json_pack("{s:[s],s:I,s:s}", "roles", "Admin", "created", (json_int_t)time(NULL), "pass", h);
        free(h);
        json_object_set_new(users, name, nu);
        if (sl_cluster_set_doc("authmd", d) == 0) {
            sl_logi("authn: first admin \"%s\" made from AIS_AUTHN_SU_NAME/AIS_AUTHN_SU_PASS", name);
            done = true;
        } else {
            sl_logw("authn: failed to store the first admin \"%s\" (AIS_AUTHN_SU_NAME); tried again at the next "
                    "login", name);
        }
        d = NULL;
    } else {
        done = true;
    }
    json_decref(d);
    pthread_mutex_unlock(&change_mu);
}

/* A user's "roles" as sent: null (none), or names, or role objects (their
 * "name"; AIStore's clients send the full roles): the names, each a role
 * of d. NULL with err set when one is not. */
static json_t *roles_in(json_t *d, json_t *roles, struct sl_err *err)
{
    size_t i;
    json_t *rn, *out = json_array();
    if (!roles || json_is_null(roles))
        return out;
    if (!json_is_array(roles)) {
        json_decref(out);
        sl_errf(err, SL_EINVAL, "\"roles\" must be a list of role names or role objects ({\"name\": ...})");
        return NULL;
    }
    json_array_foreach(roles, i, rn) {
        const char *n = json_is_string(rn) ? json_string_value(rn) : sl_json_str(rn, "name", NULL);
        if (json_is_null(rn))
            continue;
        json_t *role = n ? sl_users_role(d, n) : NULL;
        if (!role) {
            json_decref(out);
            if (!n)
                sl_errf(err, SL_EINVAL, "roles[%zu]: neither a role name nor a role object with a \"name\"", i);
            else
                sl_errf(err, SL_EINVAL, "role \"%s\" does not exist (add it first: POST /v1/roles, or `shale auth "
                        "add role`)", n);
            return NULL;
        }
        json_decref(role);
        bool dup = false;
        size_t j;
        json_t *x;
        json_array_foreach(out, j, x)
            dup |= !strcmp(json_string_value(x), n);
        if (!dup)
            json_array_append_new(out, json_string(n));
    }
    return out;
}

/* the ACL lists of role body b checked and normalised into nr: null or
 * absent is none; null entries are dropped; perm is a decimal string of
 * AIStore's access bits (or a number, or names: GET,PUT,ro...); a
 * bucket's provider defaults to ais. (An entry's "alias" is not kept:
 * it is shown from the registry.) */
static int acls_in(json_t *nr, json_t *b, struct sl_err *err)
{
    static const char *const k[] = { "clusters", "buckets" };
    for (size_t s = 0; s < 2; s++) {
        json_t *a = json_object_get(b, k[s]), *e;
        size_t i;
        if (!a)
            continue;
        if (json_is_null(a)) {
            json_object_set_new(nr, k[s], json_null());
            continue;
        }
        if (!json_is_array(a))
            return sl_errf(err, SL_EINVAL, "role: \"%s\" must be a list (or null)", k[s]);
        json_t *out = json_array();
        json_array_foreach(a, i, e) {
            json_t *p = json_object_get(e, "perm");
            uint64_t bits = 0;
            if (json_is_null(e))
                continue;
            if (!json_is_object(e) || !(json_is_string(p) || json_is_integer(p))) {
                json_decref(out);
                return sl_errf(err, SL_EINVAL, "role: %s[%zu] needs \"perm\" (AIStore's permission bits as a decimal "
                               "string, e.g. \"771\")", k[s], i);
            }
            if (json_is_string(p) && sl_access_parse(json_string_value(p), &bits, err) < 0) {
                json_decref(out);
                return -1;
            }
            if (json_is_integer(p))
                bits = (uint64_t)json_integer_value(p);
            char num[24];
            snprintf(num, sizeof(num), "%llu", (unsigned long long)bits);
            json_t *n;
            if (s == 0) {
                json_t *id = json_object_get(e, "id");
                if (id && !json_is_string(id) && !json_is_null(id)) {
                    json_decref(out);
                    return sl_errf(err, SL_EINVAL, "role: clusters[%zu].id must be a cluster id or alias (\"\": any "
                                   "cluster)", i);
                }
                n = json_pack("{s:s,s:s}", "id", json_is_string(id) ? json_string_value(id) : "", "perm", num);
            } else {
                json_t *bk = json_object_get(e, "bck"), *ns = json_object_get(bk, "namespace");
                const char *bn = sl_json_str(bk, "name", NULL), *pr = sl_json_str(bk, "provider", "");
                if (!json_is_object(bk) || !bn || !*bn || (ns && !json_is_null(ns) && !json_is_object(ns))) {
                    json_decref(out);
                    return sl_errf(err, SL_EINVAL, "role: buckets[%zu] needs \"bck\": {\"name\", \"provider\", "
                                   "\"namespace\"?: {\"uuid\": CLUSTER, \"name\"}}", i);
                }
                n = json_pack("{s:{s:s,s:s,s:{s:s,s:s}},s:s}", "bck", "name", bn, "provider", *pr ? pr : "ais",
                              "namespace", "uuid", sl_json_str(ns, "uuid", ""), "name", sl_json_str(ns, "name", ""),
                              "perm", num);
            }
            json_array_append_new(out, n);
        }
        json_object_set_new(nr, k[s], out);
    }
    return 0;
}

static bool same_acl(json_t *x, json_t *y, bool bucket)
{
    if (!bucket)
        return !strcmp(sl_json_str(x, "id", ""), sl_json_str(y, "id", ""));
    json_t *a = json_object_get(x, "bck"), *b = json_object_get(y, "bck");
    json_t *na = json_object_get(a, "namespace"), *nb = json_object_get(b, "namespace");
    return !strcmp(sl_json_str(a, "name", ""), sl_json_str(b, "name", "")) &&
           !strcmp(sl_json_str(a, "provider", ""), sl_json_str(b, "provider", "")) &&
           !strcmp(sl_json_str(na, "uuid", ""), sl_json_str(nb, "uuid", "")) &&
           !strcmp(sl_json_str(na, "name", ""), sl_json_str(nb, "name", ""));
}

/* AIStore's role update: each entry of upd replaces the perm of the entry
 * of old for the same cluster (bucket), or is added; none is removed */
static void acls_merge(json_t *old, json_t *upd)
{
    static const char *const k[] = { "clusters", "buckets" };
    for (size_t s = 0; s < 2; s++) {
        json_t *u = json_object_get(upd, k[s]), *e, *o;
        size_t i, j;
        if (!json_is_array(u))
            continue;
        if (!json_is_array(json_object_get(old, k[s])))
            json_object_set_new(old, k[s], json_array());
        json_t *a = json_object_get(old, k[s]);
        json_array_foreach(u, i, e) {
            bool found = false;
            json_array_foreach(a, j, o) {
                if (same_acl(o, e, s == 1)) {
                    json_object_set(o, "perm", json_object_get(e, "perm"));
                    found = true;
                }
            }
            if (!found)
                json_array_append(a, e);
        }
    }
}

/* a token of this AuthN for cluster id, as AIStore's AuthN makes its own
 * (sub "AuthN", admin, 5 minutes) */
static char *self_token(const char *id, struct sl_err *err)
{
    int64_t now = time(NULL);
    json_t *c = json_pack("{s:s,s:b,s:[s],s:I,s:I}", "sub", "AuthN", "admin", 1, "aud", id, "iat", (json_int_t)now,
                          "exp", (json_int_t)(now + 300));
    char *t = sl_auth_sign(c, err);
    json_decref(c);
    return t;
}

static bool is_self(const char *id)
{
    struct sl_smap *s = sl_smap_get();
    bool me = !strcmp(s->uuid, id);
    sl_smap_put(s);
    return me;
}

/* method /v1/tokens on the first of urls that answers (2xx), with this
 * AuthN's token for cluster id; 0, or -1 with why (a transport error or the
 * last answer) */
static int call_cluster(const char *id, json_t *urls, const char *method, const char *body, char *why, size_t cap)
{
    struct sl_err e = { 0 };
    char *tok = self_token(id, &e);
    if (!tok) {
        snprintf(why, cap, "%.400s", e.msg);
        return -1;
    }
    char *bearer = sl_xasprintf("Bearer %s", tok);
    struct sl_peer_hdr h[] = { { "Authorization", bearer } };
    size_t i;
    json_t *u;
    int rc = -1;
    snprintf(why, cap, "no URL");
    json_array_foreach(urls, i, u) {
        char *url = sl_xasprintf("%s/v1/tokens", json_string_value(u));
        struct sl_peer_resp pr;
        if (sl_peer_call_foreign_body(method, url, h, 1, body, 5000, &pr) < 0)
            snprintf(why, cap, "%.200s: %.300s", url, pr.err);
        else if (pr.status / 100 != 2)
            snprintf(why, cap, "%.200s: %ld %.300s", url, pr.status, pr.err[0] ? pr.err : "");
        else
            rc = 0;
        sl_peer_resp_free(&pr);
        free(url);
        if (!rc)
            break;
    }
    OPENSSL_cleanse(tok, strlen(tok));
    free(tok);
    OPENSSL_cleanse(bearer, strlen(bearer));
    free(bearer);
    return rc;
}

/* a revoked token told to every other registered cluster (this one has it
 * in its authmd); a failure is logged, the revocation stands */
static void push_revoked(json_t *clusters, const char *tok)
{
    json_t *b = json_pack("{s:[s],s:s}", "tokens", tok, "version", "0");
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    const char *id;
    json_t *c;
    json_object_foreach(clusters, id, c) {
        char why[512];
        if (is_self(id) || !json_array_size(json_object_get(c, "urls")))
            continue;
        if (call_cluster(id, json_object_get(c, "urls"), "DELETE", body, why, sizeof(why)) < 0)
            sl_logw("authn: cluster %s[%s] was not told of a revoked token: %s", sl_json_str(c, "alias", ""), id,
                    why);
    }
    free(body);
}

/* "urls" as sent: null or absent is none; else http(s) URLs, trailing /
 * dropped. NULL with err set when not. */
static json_t *urls_in(json_t *v, struct sl_err *err)
{
    json_t *out = json_array(), *u;
    size_t i;
    if (!v || json_is_null(v))
        return out;
    if (!json_is_array(v)) {
        json_decref(out);
        sl_errf(err, SL_EINVAL, "\"urls\" must be a list of the cluster's gateway URLs (http://HOST:PORT)");
        return NULL;
    }
    json_array_foreach(v, i, u) {
        const char *s = json_string_value(u);
        if (!s || (strncmp(s, "http://", 7) && strncmp(s, "https://", 8)) || strlen(s) > 1024) {
            json_decref(out);
            sl_errf(err, SL_EINVAL, "urls[%zu]: not an http:// or https:// URL", i);
            return NULL;
        }
        size_t n = strlen(s);
        while (n > 8 && s[n - 1] == '/')
            n--;
        json_array_append_new(out, json_stringn(s, n));
    }
    return out;
}

/* the cluster whose id or alias is x in d's registry (borrowed), or NULL */
static json_t *cluster_of(json_t *d, const char *x)
{
    const char *id = sl_users_cluster_id(d, x);
    return id ? json_object_get(json_object_get(d, "clusters"), id) : NULL;
}

/* the roles AIStore's AuthN makes for a cluster it registers, those that
 * do not exist yet */
static void cluster_roles(json_t *roles, const char *id, const char *alias)
{
    static const struct {
        const char *pfx, *perm, *desc;
    } k[] = { { "ClusterOwner", "18446744073709551615", "Admin access to" },
              { "BucketOwner", "831", "Full access to buckets in" },
              { "Guest", "771", "Read-only access to buckets in" } };
    for (size_t i = 0; i < SL_ARRAY_SIZE(k); i++) {
        char name[128], desc[256];
        snprintf(name, sizeof(name), "%s-%s", k[i].pfx, *alias ? alias : id);
        snprintf(desc, sizeof(desc), "%s %s[%s]", k[i].desc, id, alias);
        if (json_object_get(roles, name) || !name_ok(name))
            continue;
        json_object_set_new(roles, name, json_pack("{s:s,s:s,s:[{s:s,s:s}],s:n,s:b}", "name", name, "desc", desc,
                                                   "clusters", "id", id, "perm", k[i].perm, "buckets", "admin", 0));
    }
}

/* POST/PUT /v1/clusters: the record to store, checked against the registry
 * (err set, NULL, when it conflicts) */
static json_t *cluster_change(json_t *d, struct change *c, struct sl_err *err)
{
    json_t *b = c->body, *reg = json_object_get(d, "clusters");
    json_t *av = json_object_get(b, "alias"), *iv = json_object_get(b, "id");
    bool add = c->what == C_ADD_CLU;
    const char *id = add ? sl_json_str(b, "id", "") : c->name;
    const char *alias = sl_json_str(b, "alias", "");
    if ((av && !json_is_null(av) && !json_is_string(av)) || (iv && !json_is_null(iv) && !json_is_string(iv))) {
        sl_errf(err, SL_EINVAL, "\"id\" and \"alias\" must be strings");
        return NULL;
    }
    if (add && !*id) {
        sl_errf(err, SL_EINVAL, "cluster UUID is undefined: send {\"id\": UUID (GET URL/v1/daemon?what=smap "
                "\"uuid\"), \"alias\", \"urls\"}");
        return NULL;
    }
    if (!add && !*sl_json_str(b, "id", "")) {
        sl_errf(err, SL_EINVAL, "cluster ID is undefined: send {\"id\": \"%s\", ...}", c->name);
        return NULL;
    }
    if (!alias_ok(alias) || (add && !alias_ok(id) && strlen(id) > 64)) {
        sl_errf(err, SL_EINVAL, "alias \"%s\": must be less than 32 characters and may only contain letters, numbers, "
                "dashes (-), underscores (_)", alias);
        return NULL;
    }
    json_t *old = json_object_get(reg, id);
    if (add) {
        const char *k;
        json_t *x;
        json_object_foreach(reg, k, x) {
            const char *xa = sl_json_str(x, "alias", "");
            if (!strcmp(k, id) || (*alias && (!strcmp(k, alias) || !strcmp(xa, alias))) || !strcmp(xa, id)) {
                sl_errf(err, SL_EEXIST, "AuthN: failed to add cluster %s, err: cluster %s[%s] already registered "
                        "(change it: PUT /v1/clusters/%s)", id, id, k, k);
                return NULL;
            }
        }
    } else if (!old) {
        sl_errf(err, SL_ENOENT, "AuthN: failed to update cluster %s, err: cluster \"%s\" does not exist (PUT takes "
                "the id; list them: GET /v1/clusters)", id, id);
        return NULL;
    } else if (*alias) {
        const char *k;
        json_t *x;
        json_object_foreach(reg, k, x) {
            if (strcmp(k, id) && (!strcmp(k, alias) || !strcmp(sl_json_str(x, "alias", ""), alias))) {
                sl_errf(err, SL_EEXIST, "alias \"%s\" is used for cluster \"%s\"", alias, k);
                return NULL;
            }
        }
    }
    json_t *urls = urls_in(json_object_get(b, "urls"), err);
    if (!urls)
        return NULL;
    json_t *rec = old ? json_deep_copy(old) : json_pack("{s:s}", "id", id);
    if (*alias)
        json_object_set_new(rec, "alias", json_string(alias));
    if (json_array_size(urls))
        json_object_set(rec, "urls", urls);
    json_decref(urls);
    return rec;
}

static void change_run(struct sl_req *r, void *arg)
{
    struct change *c = arg;
    struct sl_err err = { 0 };
    if (sl_cluster_fence(&err) < 0) { /* (a primary cut off from the majority changes nothing) */
        sl_resp_err(r, &err);
        change_free(c);
        return;
    }
    char *revoked_tok = NULL;
    /* a cluster is registered (changed) only once it takes this AuthN's
     * tokens: asked before the lock (it is a call to another cluster) */
    if (c->what == C_ADD_CLU || c->what == C_PUT_CLU) {
        json_t *d = sl_users_doc();
        json_t *rec = cluster_change(d, c, &err);
        json_decref(d);
        char why[600];
        const char *id = sl_json_str(rec, "id", "");
        if (rec && !is_self(id) && json_array_size(json_object_get(rec, "urls")) &&
            call_cluster(id, json_object_get(rec, "urls"), "POST", "{}", why, sizeof(why)) < 0)
            sl_errf(&err, SL_EINVAL, "AuthN: failed to %s cluster %s, err: failed to validate-signer with %s[%s]: %s "
                    "(the cluster must trust this AuthN's tokens: its auth.signature)", c->what == C_ADD_CLU ?
                    "add" : "update", id, sl_json_str(rec, "alias", ""), id, why);
        json_decref(rec);
        if (err.code) {
            sl_resp_err(r, &err);
            change_free(c);
            return;
        }
    }
    pthread_mutex_lock(&change_mu);
    json_t *d = sl_users_doc();
    json_t *users = json_object_get(d, "users"), *roles = json_object_get(d, "roles");
    json_t *b = c->body;
    switch (c->what) {
    case C_ADD_USER:
    case C_PUT_USER: {
        bool add = c->what == C_ADD_USER;
        const char *name = add ? sl_json_str(b, "id", "") : c->name;
        json_t *u = json_object_get(users, name);
        /* "pass" is AIStore's key ("password" Shale's before; the SDK sends
         * "password": null with "pass" absent: no change) */
        const char *pass = sl_json_str(b, "pass", sl_json_str(b, "password", NULL));
        json_t *rl2 = NULL;
        if (!name_ok(name)) {
            sl_errf(&err, SL_EINVAL, "user name \"%s\": 1-64 letters, digits, '-', '_', '.', '@'", name);
        } else if (add && u) {
            sl_errf(&err, SL_EEXIST, "AuthN: failed to add user %s, err: AuthN: user %s already exists (change it: "
                    "PUT /v1/users/%s)", name, name, name);
        } else if (!add && !u) {
            sl_errf(&err, SL_ENOENT, "AuthN: failed to update user %s, err: user \"%s\" does not exist", name, name);
        } else if (add && (!pass || !*pass)) {
            sl_errf(&err, SL_EINVAL, "AuthN: failed to add user %s, err: invalid credentials (a new user needs "
                    "\"pass\")", name);
        } else if (!(rl2 = roles_in(d, json_object_get(b, "roles"), &err))) {
            /* err set */
        } else if (!c->by_admin && (json_array_size(rl2) || strcmp(c->by, name))) {
            sl_errf(&err, SL_EUNAUTH, "not authorized: only an admin may change roles or other users; you may "
                    "change your own password");
        } else {
            /* created: tokens issued before it (to an earlier user of this
             * name) are not this user's */
            json_t *nu = u ? json_deep_copy(u) : json_pack("{s:[],s:I}", "roles", "created", (json_int_t)time(NULL));
            if (pass && *pass) {
                char *h = sl_auth_hash_password(pass);
                json_object_set_new(nu, "pass", json_string(h));
                free(h);
            }
            /* (AIStore: an empty list keeps the roles, others replace them) */
            if (json_array_size(rl2) || add)
                json_object_set(nu, "roles", rl2);
            json_object_set_new(users, name, nu);
            sl_logi("authn: user \"%s\" %s by \"%s\"", name, u ? "updated" : "added", c->by);
        }
        json_decref(rl2);
        break;
    }
    case C_DEL_USER:
        if (!json_object_get(users, c->name))
            sl_errf(&err, SL_ENOENT, "AuthN: failed to delete user %s, err: user \"%s\" does not exist", c->name,
                    c->name);
        else {
            json_object_del(users, c->name);
            sl_logi("authn: user \"%s\" removed by \"%s\"", c->name, c->by);
        }
        break;
    case C_ADD_ROLE:
    case C_PUT_ROLE: {
        bool add = c->what == C_ADD_ROLE;
        const char *name = add ? sl_json_str(b, "name", "") : c->name;
        json_t *dv = json_object_get(b, "desc");
        if (add && !*name)
            sl_errf(&err, SL_EINVAL, "role name is undefined: send {\"name\", \"desc\", \"clusters\", \"buckets\"}");
        else if (!name_ok(name))
            sl_errf(&err, SL_EINVAL, "role name \"%s\": 1-64 letters, digits, '-', '_', '.', '@'", name);
        else if (add && (!strcmp(name, "Admin") || json_object_get(roles, name)))
            sl_errf(&err, SL_EEXIST, "AuthN: failed to add role %s, err: AuthN: role %s already exists (change it: "
                    "PUT /v1/roles/%s)", name, name, name);
        else if (!add && !strcmp(name, "Admin"))
            sl_errf(&err, SL_EFORBIDDEN, "cannot modify built-in \"Admin\" role");
        else if (!add && !json_object_get(roles, name))
            sl_errf(&err, SL_ENOENT, "AuthN: failed to update role %s, err: role \"%s\" does not exist", name, name);
        else if (add && json_is_true(json_object_get(b, "admin")))
            sl_errf(&err, SL_EFORBIDDEN, "only built-in roles can have \"admin\" permissions (give the user the role "
                    "Admin, or a role with the ADMIN permission)");
        else if (dv && !json_is_null(dv) && !json_is_string(dv))
            sl_errf(&err, SL_EINVAL, "role: \"desc\" must be a string");
        else {
            json_t *upd = json_object();
            if (acls_in(upd, b, &err) < 0) {
                json_decref(upd);
                break;
            }
            json_t *nr;
            if (add) {
                nr = upd;
                json_object_set_new(nr, "desc", json_string(sl_json_str(b, "desc", "")));
            } else {
                /* AIStore's update: desc when not empty, ACLs merged; the
                 * name and admin of the body are not looked at */
                nr = json_deep_copy(json_object_get(roles, name));
                if (*sl_json_str(b, "desc", ""))
                    json_object_set_new(nr, "desc", json_string(sl_json_str(b, "desc", "")));
                acls_merge(nr, upd);
                json_decref(upd);
            }
            json_object_set_new(nr, "name", json_string(name));
            json_object_set_new(roles, name, nr);
            sl_logi("authn: role \"%s\" %s by \"%s\"", name, add ? "added" : "updated", c->by);
        }
        break;
    }
    case C_DEL_ROLE: {
        const char *uname;
        json_t *u;
        if (!strcmp(c->name, "Admin")) {
            sl_errf(&err, SL_EFORBIDDEN, "cannot remove built-in \"Admin\" role");
            break;
        }
        if (!json_object_get(roles, c->name)) {
            sl_errf(&err, SL_ENOENT, "AuthN: failed to delete role %s, err: role \"%s\" does not exist", c->name,
                    c->name);
            break;
        }
        /* (as AIStore's: taken from every user that holds it) */
        json_object_foreach(users, uname, u) {
            json_t *a = json_object_get(u, "roles");
            for (size_t i = json_array_size(a); i-- > 0;)
                if (json_is_string(json_array_get(a, i)) && !strcmp(json_string_value(json_array_get(a, i)), c->name))
                    json_array_remove(a, i);
        }
        json_object_del(roles, c->name);
        sl_logi("authn: role \"%s\" removed by \"%s\"", c->name, c->by);
        break;
    }
    case C_REVOKE: {
        json_t *list = json_object_get(b, "tokens");
        json_t *one = json_object_get(b, "token");
        json_t *rv = json_object_get(d, "revoked");
        if (list && !json_is_null(list)) {
            /* another AuthN's revocations (AIStore's TokenList) */
            size_t i;
            json_t *t;
            if (!c->by_admin) {
                sl_errf(&err, sl_auth_on() && !*c->by ? SL_EUNAUTH : SL_EFORBIDDEN, "DELETE /v1/tokens {\"tokens\"}: "
                        "a revoked-token list is taken from an admin's token only (as AuthN sends it)");
                break;
            }
            if (!json_is_array(list)) {
                sl_errf(&err, SL_EINVAL, "\"tokens\" must be a list of tokens");
                break;
            }
            json_array_foreach(list, i, t) {
                struct sl_err ve = { 0 };
                const char *tok = json_string_value(t);
                json_t *cl = tok ? sl_auth_verify(tok, &ve) : NULL;
                if (!cl) /* (not one this cluster would take anyway) */
                    continue;
                char id[SL_CKSUM_HEX_MAX];
                sl_cksum_buf(SL_CK_SHA256, tok, strlen(tok), id);
                json_object_set_new(rv, id, json_integer((json_int_t)json_number_value(json_object_get(cl, "exp"))));
                json_decref(cl);
            }
            sl_logi("authn: %zu revoked token(s) taken from \"%s\"", json_array_size(list), c->by);
        } else if (!json_is_string(one) || !*json_string_value(one)) {
            sl_errf(&err, SL_EINVAL, "empty token: send {\"token\": TOKEN}");
            break;
        } else {
            /* the token itself is the proof: whoever holds it may revoke it */
            const char *tok = json_string_value(one);
            struct sl_err ve = { 0 };
            json_t *cl = sl_auth_verify(tok, &ve);
            if (!cl) {
                sl_errf(&err, SL_EUNAUTH, "invalid token [err: %s]", ve.msg);
                break;
            }
            char id[SL_CKSUM_HEX_MAX];
            sl_cksum_buf(SL_CK_SHA256, tok, strlen(tok), id);
            json_object_set_new(rv, id, json_integer((json_int_t)json_number_value(json_object_get(cl, "exp"))));
            sl_logi("authn: a token of \"%s\" revoked by \"%s\"", sl_json_str(cl, "sub", ""), c->by);
            json_decref(cl);
            revoked_tok = sl_xstrdup(tok);
        }
        /* expired ones need no entry */
        const char *k;
        json_t *v;
        void *tmp;
        int64_t now = time(NULL);
        json_object_foreach_safe(rv, tmp, k, v)
            if (json_integer_value(v) < now)
                json_object_del(rv, k);
        break;
    }
    case C_ADD_CLU:
    case C_PUT_CLU: {
        json_t *rec = cluster_change(d, c, &err); /* (again: the registry may have changed meanwhile) */
        if (!rec)
            break;
        const char *id = sl_json_str(rec, "id", "");
        if (c->what == C_ADD_CLU)
            cluster_roles(roles, id, sl_json_str(rec, "alias", ""));
        json_object_set_new(json_object_get(d, "clusters"), id, rec);
        sl_logi("authn: cluster %s[%s] %s by \"%s\"", id, sl_json_str(rec, "alias", ""), c->what == C_ADD_CLU ?
                "registered" : "updated", c->by);
        break;
    }
    case C_DEL_CLU: {
        json_t *rec = cluster_of(d, c->name);
        if (!*c->name) {
            sl_errf(&err, SL_EINVAL, "cluster name or ID not defined: DELETE /v1/clusters/ID");
        } else if (!rec) {
            sl_errf(&err, SL_ENOENT, "AuthN: failed to delete cluster %s, err: AuthN: cluster %s does not exist (list "
                    "them: GET /v1/clusters)", c->name, c->name);
        } else {
            char *id = sl_xstrdup(sl_json_str(rec, "id", ""));
            json_object_del(json_object_get(d, "clusters"), id);
            sl_logi("authn: cluster %s unregistered by \"%s\"", id, c->by);
            free(id);
        }
        break;
    }
    }
    json_t *clusters = NULL;
    if (err.code) {
        json_decref(d);
    } else {
        clusters = json_incref(json_object_get(d, "clusters"));
        sl_cluster_set_doc("authmd", d);
    }
    pthread_mutex_unlock(&change_mu);
    /* (pushed before the answer: a client uses the cluster right after) */
    if (revoked_tok && !err.code)
        push_revoked(clusters, revoked_tok);
    json_decref(clusters);
    if (revoked_tok) {
        OPENSSL_cleanse(revoked_tok, strlen(revoked_tok));
        free(revoked_tok);
    }
    if (err.code)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    change_free(c);
}

static const char *rest_of(struct sl_req *r)
{
    const char *rest = r->path + (sl_req_path_is(r, "/v1/clusters") ? 12 : sl_req_path_is(r, "/v1/tokens") ? 10 : 9);
    while (*rest == '/')
        rest++;
    return rest;
}

static void change_body(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!j) {
        sl_resp_err(r, &err);
        return;
    }
    struct change *c = sl_xcalloc(1, sizeof(*c));
    c->body = j;
    bool users = sl_req_path_is(r, "/v1/users"), roles = sl_req_path_is(r, "/v1/roles");
    bool clusters = sl_req_path_is(r, "/v1/clusters");
    c->name = sl_xstrdup(rest_of(r));
    c->by = sl_xstrdup(caller(r));
    if (!sl_auth_on())
        c->by_admin = true;
    else if (r->user)
        c->by_admin = is_admin(r->user);
    int m = r->method;
    if (users)
        c->what = m == SL_M_POST ? C_ADD_USER : m == SL_M_PUT ? C_PUT_USER : C_DEL_USER;
    else if (roles)
        c->what = m == SL_M_POST ? C_ADD_ROLE : m == SL_M_PUT ? C_PUT_ROLE : C_DEL_ROLE;
    else if (clusters)
        c->what = m == SL_M_POST ? C_ADD_CLU : m == SL_M_PUT ? C_PUT_CLU : C_DEL_CLU;
    else
        c->what = C_REVOKE;
    bool del = c->what == C_DEL_USER || c->what == C_DEL_ROLE || c->what == C_DEL_CLU;
    if (!json_is_object(j) && !del) {
        change_free(c);
        sl_resp_errf(r, SL_EINVAL, "%s %s: the body must be a JSON object", r->method_str, r->path);
        return;
    }
    if (c->what == C_REVOKE || c->what == C_ADD_CLU || c->what == C_PUT_CLU)
        sl_req_offload_peer(r, change_run, change_free, c); /* (calls other clusters) */
    else
        sl_req_offload(r, change_run, change_free, c);
}

static void start_change(struct sl_req *r)
{
    if (G.role == SL_ROLE_PROXY && !sl_is_primary()) {
        sl_forward_to_primary(r);
        return;
    }
    sl_req_buffer_body(r, 1024 * 1024, change_body);
}

/* ---- reads ---- */

static int role_cmp(const void *a, const void *b)
{
    return strcmp(sl_json_str(*(json_t *const *)a, "name", ""), sl_json_str(*(json_t *const *)b, "name", ""));
}

static void show(struct sl_req *r, int what, const char *name)
{
    json_t *d = sl_users_doc();
    json_t *out = NULL;
    const char *k;
    json_t *v;
    if (what == 'u') {
        json_t *all = json_object_get(d, "users");
        if (*name) {
            json_t *u = json_object_get(all, name);
            out = u ? sl_users_user_view(d, name, u) : NULL;
        } else {
            out = json_object();
            json_object_foreach(all, k, v)
                json_object_set_new(out, k, sl_users_user_view(d, k, v));
        }
    } else if (what == 'r') {
        if (*name) {
            json_t *role = sl_users_role(d, name);
            out = role ? sl_users_role_view(d, role) : NULL;
            json_decref(role);
        } else {
            /* a list, by name, as AIStore's */
            json_t *all = json_object_get(d, "roles");
            size_t n = json_object_size(all) + 1, i = 0;
            json_t **vs = sl_xcalloc(n, sizeof(*vs));
            json_t *adm = sl_users_role(d, "Admin");
            vs[i++] = sl_users_role_view(d, adm);
            json_decref(adm);
            json_object_foreach(all, k, v)
                vs[i++] = sl_users_role_view(d, v);
            qsort(vs, i, sizeof(*vs), role_cmp);
            out = json_array();
            for (size_t j = 0; j < i; j++)
                json_array_append_new(out, vs[j]);
            free(vs);
        }
    } else {
        json_t *reg = json_object_get(d, "clusters");
        json_t *one = *name ? cluster_of(d, name) : NULL;
        if (!*name || one) {
            json_t *m = json_object();
            json_object_foreach(reg, k, v)
                if (!one || v == one)
                    json_object_set(m, k, v);
            /* (AIStore's: no "clusters" key when there are none) */
            out = json_object_size(m) ? json_pack("{s:o}", "clusters", m) : (json_decref(m), json_object());
        }
    }
    json_decref(d);
    if (out)
        sl_resp_json_new(r, 200, out);
    else if (what == 'c')
        sl_resp_errf(r, SL_ENOENT, "AuthN: cluster %s does not exist (register it: POST /v1/clusters)", name);
    else
        sl_resp_errf(r, SL_ENOENT, "%s \"%s\" does not exist", what == 'u' ? "user" : "role", name);
}

/* ---- AuthN's configuration: GET/PUT /v1/daemon (spec/authn-api.md 2.7, 3.6) ----
 * The cluster's AuthN has no configuration of its own: these are the cluster
 * keys it runs by (auth.signature.key, auth.expiration_time, log.level),
 * shown in AuthN's shape and changed as set-config changes them (persisted
 * on every node). The secret is never shown (as `shale show config`). */

/* Go's time.Duration String with a trailing "0s" cut: 24h0m, 30m, 1m30s */
static void go_duration(int64_t ns, char *out, size_t n)
{
    int64_t s = ns / 1000000000, h = s / 3600, m = s / 60 % 60, sec = s % 60;
    if (h)
        snprintf(out, n, "%lldh%lldm", (long long)h, (long long)m);
    else if (m)
        snprintf(out, n, "%lldm", (long long)m);
    else
        snprintf(out, n, "%llds", (long long)sec);
    if ((h || m) && sec)
        snprintf(out + strlen(out), n - strlen(out), "%llds", (long long)sec);
}

static json_t *authn_config(void)
{
    char ttl[48], lv[16];
    go_duration(sl_conf->auth_token_ttl_ns, ttl, sizeof(ttl));
    snprintf(lv, sizeof(lv), "%d", sl_conf->log_level);
    return json_pack("{s:{s:s,s:s,s:s,s:s},s:{s:s,s:s},s:{s:{s:i,s:b,s:s,s:s}}}", "auth", "secret",
                     sl_conf->auth_key[0] ? "**********" : "", "expiration_time", ttl,
                     "max_token_age", ttl, /* (a login may ask for less, never more) */
                     "signing_method", sl_conf->auth_method, "log", "dir", sl_conf->log_dir, "level", lv, "net", "http", "port",
                     G.self.pub_port, "use_https", sl_conf->use_https, "server_crt", sl_conf->server_crt,
                     "server_key", sl_conf->server_key);
}

static void config_put_run(struct sl_req *r, void *arg)
{
    json_t *partial = arg;
    struct sl_err err = { 0 };
    if (sl_cluster_set_config(partial, NULL, &err) < 0)
        sl_resp_errf(r, SL_EINVAL, "invalid configuration: %s", err.msg);
    else
        sl_resp_empty(r, 200);
    json_decref(partial); /* (ours: the offload's cancel frees it only when this does not run) */
}

static void config_free(void *arg)
{
    json_decref(arg);
}

/* body: AuthN's ConfigToUpdate {"auth": {"secret"?, "expiration_time"?}, "log": {"level"?}} */
void sl_authn_config_put(struct sl_req *r, json_t *body)
{
    if (G.role == SL_ROLE_TARGET) {
        sl_resp_errf(r, SL_EINVAL, "%s is a storage target: AuthN is served by the gateways", G.name);
        return;
    }
    if (!need_admin(r))
        return;
    if (G.role == SL_ROLE_PROXY && !sl_is_primary()) {
        sl_forward_buffered_to_primary(r);
        return;
    }
    const char *sec, *k;
    json_t *v, *partial = json_object(), *a = json_object(), *l = json_object();
    json_object_foreach(body, sec, v) {
        if (strcmp(sec, "auth") && strcmp(sec, "log")) {
            sl_resp_errf(r, SL_EINVAL, "invalid config update: unknown section \"%s\" (AuthN's settable keys: "
                         "auth.secret, auth.expiration_time, log.level); nothing was changed", sec);
            goto out;
        }
        if (!json_is_object(v) && !json_is_null(v)) {
            sl_resp_errf(r, SL_EINVAL, "Invalid request: \"%s\" must be an object", sec);
            goto out;
        }
        json_t *x;
        json_object_foreach(v, k, x) {
            bool is_auth = !strcmp(sec, "auth");
            if (json_is_null(x))
                continue;
            if (is_auth && !strcmp(k, "secret")) {
                if (!json_is_string(x) || !*json_string_value(x)) {
                    sl_resp_errf(r, SL_EINVAL, "invalid config update: secret defined but empty string");
                    goto out;
                }
                /* a new secret: tokens are signed with it (HS256) from now on; older ones stop verifying */
                json_object_set_new(a, "signature", json_pack("{s:s,s:O}", "method", "HS256", "key", x));
            } else if (is_auth && !strcmp(k, "expiration_time")) {
                int64_t ns = 0;
                if (!json_is_string(x) || sl_parse_duration(json_string_value(x), &ns) < 0) {
                    sl_resp_errf(r, SL_EINVAL, "invalid config update: invalid auth.expiration_time: a duration "
                                 "such as \"30m\" or \"24h\"");
                    goto out;
                }
                if (ns < 60 * 1000000000LL || ns > 2160 * 3600 * 1000000000LL) {
                    sl_resp_errf(r, SL_EINVAL, "invalid configuration: auth.expiration_time=%s must be at least "
                                 "1m and at most 2160h (90 days)", json_string_value(x));
                    goto out;
                }
                json_object_set(a, "expiration_time", x);
            } else if (!is_auth && !strcmp(k, "level")) {
                const char *ls = json_is_string(x) ? json_string_value(x) : NULL;
                char *end = NULL;
                long lv = json_is_integer(x) ? (long)json_integer_value(x) : ls && *ls ? strtol(ls, &end, 10) : -1;
                if ((ls && (!end || *end)) || lv < 0 || lv > 5) {
                    char *d = json_dumps(x, JSON_ENCODE_ANY);
                    sl_resp_errf(r, SL_EINVAL, "invalid config update: invalid log.level=%s (0 to 5)", d ? d : "?");
                    free(d);
                    goto out;
                }
                json_object_set_new(l, "level", json_integer(lv));
            } else {
                sl_resp_errf(r, SL_EINVAL, "invalid config update: unknown key \"%s.%s\" (AuthN's settable keys: "
                             "auth.secret, auth.expiration_time, log.level); nothing was changed", sec, k);
                goto out;
            }
        }
    }
    if (json_object_size(a))
        json_object_set(partial, "auth", a);
    if (json_object_size(l))
        json_object_set(partial, "log", l);
    if (!json_object_size(partial)) {
        sl_resp_errf(r, SL_EINVAL, "invalid config update: configuration is empty");
        goto out;
    }
    sl_req_offload(r, config_put_run, config_free, json_incref(partial));
out:
    json_decref(partial);
    json_decref(a);
    json_decref(l);
}

void sl_authn_config_get(struct sl_req *r)
{
    if (G.role == SL_ROLE_TARGET) {
        sl_resp_errf(r, SL_EINVAL, "GET /v1/daemon requires a 'what' query (AuthN's configuration, GET /v1/daemon "
                     "alone, is served by the gateways)");
        return;
    }
    if (need_admin(r))
        sl_resp_json_new(r, 200, authn_config());
}

void sl_authn_route(struct sl_req *r)
{
    if (G.role == SL_ROLE_TARGET) {
        sl_resp_errf(r, SL_EINVAL, "%s is a storage target: AuthN is served by the gateways", G.name);
        return;
    }
    bool users = sl_req_path_is(r, "/v1/users"), roles = sl_req_path_is(r, "/v1/roles");
    bool clusters = sl_req_path_is(r, "/v1/clusters");
    const char *name = rest_of(r);
    int m = r->method;
    if (strchr(name, '/')) {
        sl_resp_errf(r, SL_EINVAL, "invalid request: %s has more than one name after /v1/%s/", r->path,
                     users ? "users" : roles ? "roles" : clusters ? "clusters" : "tokens");
        return;
    }
    if (!users && !roles && !clusters) { /* /v1/tokens */
        if (m == SL_M_POST) {
            struct sl_err e = { 0 };
            if (sl_access_authenticate(r, &e) < 0)
                sl_resp_err(r, &e);
            else
                sl_resp_empty(r, 200);
        } else if (m == SL_M_DELETE) {
            /* {"token"}: no header needed (the token is the proof);
             * {"tokens"}: change_run wants an admin's */
            start_change(r);
        } else {
            sl_resp_method_not_allowed(r, "POST, DELETE");
        }
        return;
    }
    if (users && *name && m == SL_M_POST) {
        if (!name_ok(name))
            sl_resp_errf(r, SL_EUNAUTH, "AuthN: failed to generate token for %s, err: invalid credentials (no such "
                         "user name)", name);
        else
            sl_req_buffer_body(r, 64 * 1024, login_body);
        return;
    }
    if (m == SL_M_GET) {
        /* roles and clusters are public, as in AIStore; a user may read
         * their own entry */
        if (users && !(*name && sl_auth_on() && !strcmp(caller(r), name)) && !need_admin(r))
            return;
        show(r, users ? 'u' : roles ? 'r' : 'c', name);
        return;
    }
    if (users && *name && m == SL_M_PUT && sl_auth_on()) {
        /* own password: authenticated is enough (change_run checks the rest) */
        struct sl_err e = { 0 };
        if (sl_access_authenticate(r, &e) < 0) {
            sl_resp_err(r, &e);
            return;
        }
        start_change(r);
        return;
    }
    if ((m == SL_M_POST && !*name) || (m == SL_M_PUT && *name) || (m == SL_M_DELETE && *name)) {
        if (need_admin(r))
            start_change(r);
        return;
    }
    if (m == SL_M_POST || m == SL_M_PUT || m == SL_M_DELETE) {
        const char *w = users ? "users" : roles ? "roles" : "clusters";
        sl_resp_errf(r, SL_EINVAL, "%s %s: not an AuthN request (POST /v1/%s to add, PUT/DELETE /v1/%s/NAME to "
                     "change, GET to list)", r->method_str, r->path, w, w);
        return;
    }
    sl_resp_method_not_allowed(r, *name ? "GET, PUT, DELETE" : "GET, POST");
}
