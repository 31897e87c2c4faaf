/* SPDX-License-Identifier: MIT
 * authn.c: the cluster's own AuthN, served by every gateway on AIStore
 * AuthN's paths (so `ais auth` with AIS_AUTHN_URL pointed at a gateway, and
 * `shale auth`, work):
 *   POST   /v1/users/NAME {"password", "expires_in"?}  log in -> {"token"}
 *   GET    /v1/users[/NAME]          POST /v1/users {"id","password","roles"}
 *   PUT    /v1/users/NAME {...}      DELETE /v1/users/NAME
 *   GET    /v1/roles[/NAME]          POST /v1/roles {"name","desc","admin",
 *   PUT    /v1/roles/NAME            "clusters":[{"id","perm"}],
 *   DELETE /v1/roles/NAME            "buckets":[{"bck":{..},"perm"}]}
 *   DELETE /v1/tokens {"token"}      revoke (an admin, or the token's user)
 *   POST   /v1/tokens                does this cluster accept my token?
 * Users, roles and revoked tokens live in the cluster document "authmd"
 * ({"users": {NAME: {"pass", "roles"}}, "roles": {NAME: Role}, "revoked":
 * {sha256(token): exp}}): the primary changes it, metasync gives it to every
 * node, so any gateway logs users in. Passwords are PBKDF2 hashes; logins
 * (slow on purpose) run off the HTTP threads and are rate-limited per source
 * address: auth.login_attempts failures a minute for one user from it, four
 * times that for all users (never per user alone: anyone could lock a user
 * out). Role "Admin" is built in.
 * Managing users needs the admin permission when auth is on; with auth off
 * the cluster is open and so are these (that is how the first admin is
 * made; see docs/security.md).
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
#include "node.h"
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

/* caller is an admin (or auth is off); else answered 401/403 */
static bool need_admin(struct sl_req *r)
{
    if (!sl_auth_on())
        return true;
    return sl_access_check(r, SL_ACCESS_ADMIN, NULL, NULL);
}

/* the caller's user name when authenticated ("" when auth is off) */
static const char *caller(struct sl_req *r)
{
    struct sl_err e = { 0 };
    if (!sl_auth_on() || sl_access_authenticate(r, &e) < 0)
        return "";
    return sl_json_str(r->user, "sub", "");
}

static json_t *user_view(const char *name, json_t *u)
{
    json_t *o = json_pack("{s:s,s:O}", "id", name, "roles", json_object_get(u, "roles"));
    return o;
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

static void login_run(struct sl_req *r, void *arg)
{
    struct login *l = arg;
    json_t *d = sl_users_doc();
    json_t *u = json_object_get(json_object_get(d, "users"), l->user);
    bool ok = u && sl_auth_check_password(l->pass, sl_json_str(u, "pass", ""));
    if (ok)
        rl_success(l->user, sl_req_remote(r));
    if (!ok) {
        sl_stats_add("auth_login_fail_count", 1);
        sl_logw("authn: failed login as \"%s\" from %s", l->user, sl_req_remote(r));
        sl_resp_errf(r, SL_EUNAUTH, "invalid user name or password");
    } else {
        int64_t ttl = sl_conf->auth_token_ttl_ns;
        if (l->expires_in_ns > 0 && l->expires_in_ns < ttl)
            ttl = l->expires_in_ns;
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
    const char *pass = sl_json_str(j, "password", NULL);
    if (!json_is_object(j) || !pass) {
        json_decref(j);
        sl_resp_errf(r, SL_EINVAL, "log in with POST /v1/users/NAME {\"password\": \"...\", \"expires_in\": NS}");
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
    json_t *ei = json_object_get(j, "expires_in");
    l->expires_in_ns = json_is_integer(ei) ? (int64_t)json_integer_value(ei) : 0;
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
enum { C_ADD_USER, C_PUT_USER, C_DEL_USER, C_ADD_ROLE, C_PUT_ROLE, C_DEL_ROLE, C_REVOKE };

static void change_free(void *arg)
{
    struct change *c = arg;
    free(c->name);
    json_decref(c->body);
    free(c->by);
    free(c);
}

static pthread_mutex_t change_mu = PTHREAD_MUTEX_INITIALIZER;

static int check_roles(json_t *d, json_t *roles, struct sl_err *err)
{
    size_t i;
    json_t *rn;
    if (!json_is_array(roles))
        return sl_errf(err, SL_EINVAL, "\"roles\" must be an array of role names");
    json_array_foreach(roles, i, rn) {
        json_t *role = json_is_string(rn) ? sl_users_role(d, json_string_value(rn)) : NULL;
        if (!role)
            return sl_errf(err, SL_ENOENT, "no role %s (list them: `shale auth show role`)",
                           json_is_string(rn) ? json_string_value(rn) : "(not a string)");
        json_decref(role);
    }
    return 0;
}

static int acls_ok(json_t *role, struct sl_err *err)
{
    static const char *const k[] = { "clusters", "buckets" };
    for (size_t s = 0; s < 2; s++) {
        json_t *a = json_object_get(role, k[s]), *e;
        size_t i;
        if (!a)
            continue;
        if (!json_is_array(a))
            return sl_errf(err, SL_EINVAL, "role: \"%s\" must be an array", k[s]);
        json_array_foreach(a, i, e) {
            json_t *p = json_object_get(e, "perm");
            uint64_t bits;
            if (!json_is_object(e) || !(json_is_string(p) || json_is_integer(p)))
                return sl_errf(err, SL_EINVAL, "role: %s[%zu] needs \"perm\" (permission bits as a decimal string)",
                               k[s], i);
            if (json_is_string(p) && sl_access_parse(json_string_value(p), &bits, err) < 0)
                return -1;
            if (json_is_string(p)) {
                char num[24];
                snprintf(num, sizeof(num), "%llu", (unsigned long long)bits);
                json_object_set_new(e, "perm", json_string(num));
            }
            if (s == 1) {
                json_t *b = json_object_get(e, "bck");
                if (!json_is_object(b) || !sl_json_str(b, "name", NULL))
                    return sl_errf(err, SL_EINVAL, "role: buckets[%zu] needs \"bck\": {\"name\", \"provider\"}", i);
                if (!sl_json_str(b, "provider", NULL))
                    json_object_set_new(b, "provider", json_string("ais"));
            }
        }
    }
    return 0;
}

static void change_run(struct sl_req *r, void *arg)
{
    struct change *c = arg;
    struct sl_err err = { 0 };
    if (sl_cluster_fence(&err) < 0) { /* (a primary cut off from the majority changes nothing) */
        sl_resp_err(r, &err);
        return;
    }
    pthread_mutex_lock(&change_mu);
    json_t *d = sl_users_doc();
    json_t *users = json_object_get(d, "users"), *roles = json_object_get(d, "roles");
    json_t *b = c->body;
    int status = 200;
    switch (c->what) {
    case C_ADD_USER:
    case C_PUT_USER: {
        const char *name = c->what == C_ADD_USER ? sl_json_str(b, "id", "") : c->name;
        json_t *u = json_object_get(users, name);
        const char *pass = sl_json_str(b, "password", sl_json_str(b, "pass", NULL));
        json_t *rl2 = json_object_get(b, "roles");
        if (!name_ok(name)) {
            sl_errf(&err, SL_EINVAL, "user name \"%s\": 1-64 letters, digits, '-', '_', '.', '@'", name);
        } else if (c->what == C_ADD_USER && u) {
            sl_errf(&err, SL_EEXIST, "user \"%s\" exists (change it: `shale auth update user`)", name);
        } else if (c->what == C_PUT_USER && !u) {
            sl_errf(&err, SL_ENOENT, "no user \"%s\"", name);
        } else if (c->what == C_ADD_USER && (!pass || !*pass)) {
            sl_errf(&err, SL_EINVAL, "a new user needs a \"password\"");
        } else if (!c->by_admin && (rl2 || strcmp(c->by, name))) {
            sl_errf(&err, SL_EFORBIDDEN, "only an admin may change roles or other users; you may change your own "
                    "password");
        } else if (rl2 && check_roles(d, rl2, &err) < 0) {
            /* err set */
        } else {
            /* created: tokens issued before it (to an earlier user of this
             * name) are not this user's */
            json_t *nu = u ? json_deep_copy(u) : json_pack("{s:[],s:I}", "roles", "created", (json_int_t)time(NULL));
            if (pass && *pass) {
                char *h = sl_auth_hash_password(pass);
                json_object_set_new(nu, "pass", json_string(h));
                free(h);
            }
            if (rl2)
                json_object_set(nu, "roles", rl2);
            json_object_set_new(users, name, nu);
            sl_logi("authn: user \"%s\" %s by \"%s\"", name, u ? "updated" : "added", c->by);
        }
        break;
    }
    case C_DEL_USER:
        if (!json_object_get(users, c->name))
            sl_errf(&err, SL_ENOENT, "no user \"%s\"", c->name);
        else {
            json_object_del(users, c->name);
            sl_logi("authn: user \"%s\" removed by \"%s\"", c->name, c->by);
        }
        break;
    case C_ADD_ROLE:
    case C_PUT_ROLE: {
        const char *name = c->what == C_ADD_ROLE ? sl_json_str(b, "name", "") : c->name;
        if (!name_ok(name))
            sl_errf(&err, SL_EINVAL, "role name \"%s\": 1-64 letters, digits, '-', '_', '.', '@'", name);
        else if (!strcmp(name, "Admin"))
            sl_errf(&err, SL_EINVAL, "role Admin is built in and cannot be changed");
        else if (c->what == C_ADD_ROLE && json_object_get(roles, name))
            sl_errf(&err, SL_EEXIST, "role \"%s\" exists", name);
        else if (c->what == C_PUT_ROLE && !json_object_get(roles, name))
            sl_errf(&err, SL_ENOENT, "no role \"%s\"", name);
        else {
            json_t *nr = c->what == C_PUT_ROLE ? json_deep_copy(json_object_get(roles, name)) : json_object();
            const char *keys[] = { "desc", "clusters", "buckets", "admin" };
            for (size_t i = 0; i < SL_ARRAY_SIZE(keys); i++)
                if (json_object_get(b, keys[i]))
                    json_object_set(nr, keys[i], json_object_get(b, keys[i]));
            json_object_set_new(nr, "name", json_string(name));
            if (acls_ok(nr, &err) < 0) {
                json_decref(nr);
            } else {
                json_object_set_new(roles, name, nr);
                sl_logi("authn: role \"%s\" %s by \"%s\"", name, c->what == C_ADD_ROLE ? "added" : "updated",
                        c->by);
            }
        }
        break;
    }
    case C_DEL_ROLE: {
        const char *uname;
        json_t *u;
        if (!json_object_get(roles, c->name)) {
            sl_errf(&err, SL_ENOENT, "no role \"%s\"", c->name);
            break;
        }
        json_object_foreach(users, uname, u) {
            size_t i;
            json_t *rn;
            json_array_foreach(json_object_get(u, "roles"), i, rn)
                if (json_is_string(rn) && !strcmp(json_string_value(rn), c->name))
                    sl_errf(&err, SL_EBUSY, "role \"%s\" is held by user \"%s\": take it away first", c->name,
                            uname);
        }
        if (!err.code)
            json_object_del(roles, c->name);
        break;
    }
    case C_REVOKE: {
        const char *tok = sl_json_str(b, "token", "");
        struct sl_err ve = { 0 };
        json_t *cl = sl_auth_verify(tok, &ve);
        if (!cl) {
            sl_errf(&err, SL_EINVAL, "revoke: %s", ve.msg);
        } else if (!c->by_admin && strcmp(sl_json_str(cl, "sub", ""), c->by)) {
            sl_errf(&err, SL_EFORBIDDEN, "revoke: only an admin may revoke another user's token");
        } else {
            json_t *rv = json_object_get(d, "revoked");
            char id[SL_CKSUM_HEX_MAX];
            sl_cksum_buf(SL_CK_SHA256, tok, strlen(tok), id);
            json_object_set_new(rv, id, json_integer((json_int_t)json_number_value(json_object_get(cl, "exp"))));
            /* expired ones need no entry */
            const char *k;
            json_t *v;
            void *tmp;
            int64_t now = time(NULL);
            json_object_foreach_safe(rv, tmp, k, v)
                if (json_integer_value(v) < now)
                    json_object_del(rv, k);
            sl_logi("authn: a token of \"%s\" revoked by \"%s\"", sl_json_str(cl, "sub", ""), c->by);
        }
        json_decref(cl);
        break;
    }
    }
    if (err.code) {
        json_decref(d);
        sl_resp_err(r, &err);
    } else {
        sl_cluster_set_doc("authmd", d);
        sl_resp_empty(r, status);
    }
    pthread_mutex_unlock(&change_mu);
    change_free(c);
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
    const char *rest = r->path + (users ? 9 : roles ? 9 : 10);
    while (*rest == '/')
        rest++;
    c->name = sl_xstrdup(rest);
    c->by = sl_xstrdup(caller(r));
    if (!sl_auth_on()) {
        c->by_admin = true;
    } else if (r->user) {
        struct sl_smap *s = sl_smap_get();
        c->by_admin = sl_auth_allows(r->user, SL_ACCESS_ADMIN, NULL, NULL, s->uuid);
        sl_smap_put(s);
    }
    if (users)
        c->what = r->method == SL_M_POST ? C_ADD_USER : r->method == SL_M_PUT ? C_PUT_USER : C_DEL_USER;
    else if (roles)
        c->what = r->method == SL_M_POST ? C_ADD_ROLE : r->method == SL_M_PUT ? C_PUT_ROLE : C_DEL_ROLE;
    else
        c->what = C_REVOKE;
    if (!json_is_object(j) && !(c->what == C_DEL_USER || c->what == C_DEL_ROLE)) {
        change_free(c);
        sl_resp_errf(r, SL_EINVAL, "%s %s: the body must be a JSON object", r->method_str, r->path);
        return;
    }
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

static void show(struct sl_req *r, bool users, const char *name)
{
    json_t *d = sl_users_doc();
    json_t *out;
    if (users) {
        json_t *all = json_object_get(d, "users");
        if (*name) {
            json_t *u = json_object_get(all, name);
            out = u ? user_view(name, u) : NULL;
        } else {
            out = json_object();
            const char *k;
            json_t *u;
            json_object_foreach(all, k, u)
                json_object_set_new(out, k, user_view(k, u));
        }
    } else {
        if (*name) {
            out = sl_users_role(d, name);
        } else {
            out = json_object();
            json_object_set_new(out, "Admin", sl_users_role(d, "Admin"));
            const char *k;
            json_t *v;
            json_object_foreach(json_object_get(d, "roles"), k, v)
                json_object_set(out, k, v);
        }
    }
    json_decref(d);
    if (!out)
        sl_resp_errf(r, SL_ENOENT, "no %s \"%s\"", users ? "user" : "role", name);
    else
        sl_resp_json_new(r, 200, out);
}

void sl_authn_route(struct sl_req *r)
{
    if (G.role == SL_ROLE_TARGET) {
        sl_resp_errf(r, SL_EINVAL, "%s is a storage target: AuthN is served by the gateways", G.name);
        return;
    }
    bool users = sl_req_path_is(r, "/v1/users"), roles = sl_req_path_is(r, "/v1/roles");
    const char *name = r->path + (users || roles ? 9 : 10);
    while (*name == '/')
        name++;
    if (strchr(name, '/')) {
        sl_resp_errf(r, SL_ENOENT, "no such AuthN endpoint %s", r->path);
        return;
    }
    if (!users && !roles) { /* /v1/tokens */
        if (r->method == SL_M_POST) {
            struct sl_err e = { 0 };
            if (sl_access_authenticate(r, &e) < 0)
                sl_resp_err(r, &e);
            else
                sl_resp_empty(r, 200);
        } else if (r->method == SL_M_DELETE) {
            if (sl_auth_on()) {
                struct sl_err e = { 0 };
                if (sl_access_authenticate(r, &e) < 0) {
                    sl_resp_err(r, &e);
                    return;
                }
            }
            start_change(r);
        } else {
            sl_resp_method_not_allowed(r, "POST, DELETE");
        }
        return;
    }
    if (users && *name && r->method == SL_M_POST) {
        if (!name_ok(name))
            sl_resp_errf(r, SL_EINVAL, "invalid user name \"%s\"", name);
        else
            sl_req_buffer_body(r, 64 * 1024, login_body);
        return;
    }
    if (r->method == SL_M_GET) {
        /* a user may read their own entry */
        if (!(users && *name && sl_auth_on() && !strcmp(caller(r), name)) && !need_admin(r))
            return;
        show(r, users, name);
        return;
    }
    if (users && *name && r->method == SL_M_PUT && sl_auth_on()) {
        /* own password: authenticated is enough (change_run checks the rest) */
        struct sl_err e = { 0 };
        if (sl_access_authenticate(r, &e) < 0) {
            sl_resp_err(r, &e);
            return;
        }
        start_change(r);
        return;
    }
    if ((r->method == SL_M_POST && !*name) || (r->method == SL_M_PUT && *name) ||
        (r->method == SL_M_DELETE && *name)) {
        if (need_admin(r))
            start_change(r);
        return;
    }
    sl_resp_errf(r, SL_EINVAL, "%s %s: not an AuthN request (POST /v1/%s to add, PUT/DELETE /v1/%s/NAME to change, "
                 "GET to list)", r->method_str, r->path, users ? "users" : "roles", users ? "users" : "roles");
}
