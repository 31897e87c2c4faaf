/* SPDX-License-Identifier: MIT
 * users.c: the user store below authentication and authorisation: users,
 * roles and registered clusters of the cluster document "authmd" (see
 * authn.c for its shape), the claims a user holds, and the AIStore AuthN
 * shapes they are shown in. See users.h.
 */
#include "users.h"
#include "cluster.h"
#include "jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

json_t *sl_users_doc(void)
{
    json_t *d = sl_cluster_doc("authmd");
    json_t *c = d ? json_deep_copy(d) : json_object();
    json_decref(d);
    static const char *const sect[] = { "users", "roles", "revoked", "clusters" };
    for (size_t i = 0; i < SL_ARRAY_SIZE(sect); i++)
        if (!json_is_object(json_object_get(c, sect[i])))
            json_object_set_new(c, sect[i], json_object());
    return c;
}

/* the Admin role, built in (as AIStore's AuthN makes it) */
json_t *sl_users_role(json_t *d, const char *name)
{
    if (!strcmp(name, "Admin"))
        return json_pack("{s:s,s:s,s:n,s:n,s:b}", "name", "Admin", "desc", "AuthN administrator", "clusters",
                         "buckets", "admin", 1);
    json_t *r = json_object_get(json_object_get(d, "roles"), name);
    return r ? json_incref(r) : NULL;
}

const char *sl_users_cluster_id(json_t *d, const char *id_or_alias)
{
    json_t *cl = json_object_get(d, "clusters"), *c;
    const char *k;
    if (!id_or_alias || !*id_or_alias)
        return NULL;
    if (json_object_get(cl, id_or_alias))
        return json_string_value(json_object_get(json_object_get(cl, id_or_alias), "id"));
    json_object_foreach(cl, k, c)
        if (!strcmp(sl_json_str(c, "alias", ""), id_or_alias))
            return json_string_value(json_object_get(c, "id"));
    return NULL;
}

json_t *sl_users_role_view(json_t *d, const json_t *role)
{
    json_t *v = json_object();
    json_object_set_new(v, "name", json_string(sl_json_str(role, "name", "")));
    json_object_set_new(v, "desc", json_string(sl_json_str(role, "desc", "")));
    json_t *cl = json_object_get(role, "clusters");
    if (json_is_array(cl)) {
        json_t *a = json_array(), *e;
        size_t i;
        json_array_foreach(cl, i, e) {
            json_t *o = json_pack("{s:s,s:O}", "id", sl_json_str(e, "id", ""), "perm", json_object_get(e, "perm"));
            json_t *reg = json_object_get(json_object_get(d, "clusters"), sl_json_str(e, "id", ""));
            if (sl_json_str(reg, "alias", "")[0])
                json_object_set_new(o, "alias", json_string(sl_json_str(reg, "alias", "")));
            json_array_append_new(a, o);
        }
        json_object_set_new(v, "clusters", a);
    } else {
        json_object_set_new(v, "clusters", json_null());
    }
    json_t *b = json_object_get(role, "buckets");
    json_object_set_new(v, "buckets", json_is_array(b) ? json_deep_copy(b) : json_null());
    json_object_set_new(v, "admin", json_boolean(json_is_true(json_object_get(role, "admin"))));
    return v;
}

json_t *sl_users_user_view(json_t *d, const char *name, const json_t *u)
{
    json_t *roles = json_array(), *rn;
    size_t i;
    json_array_foreach(json_object_get(u, "roles"), i, rn) {
        json_t *role = json_is_string(rn) ? sl_users_role(d, json_string_value(rn)) : NULL;
        if (role)
            json_array_append_new(roles, sl_users_role_view(d, role));
        json_decref(role);
    }
    return json_pack("{s:s,s:o}", "id", name, "roles", roles);
}

static uint64_t perm_bits(const json_t *acl)
{
    json_t *v = json_object_get(acl, "perm");
    if (json_is_integer(v))
        return (uint64_t)json_integer_value(v);
    const char *s = json_string_value(v);
    return s ? strtoull(s, NULL, 10) : 0;
}

static json_t *perm_str(uint64_t bits)
{
    char num[24];
    snprintf(num, sizeof(num), "%llu", (unsigned long long)bits);
    return json_string(num);
}

/* e's perm ORed into the entry of a with the same key (added when none) */
static void acl_union(json_t *a, json_t *e, const char *key)
{
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x) {
        if (!strcmp(sl_json_str(x, "_key", ""), key)) {
            json_object_set_new(x, "perm", perm_str(perm_bits(x) | perm_bits(e)));
            return;
        }
    }
    json_t *n = json_deep_copy(e);
    json_object_set_new(n, "_key", json_string(key));
    json_object_set_new(n, "perm", perm_str(perm_bits(e)));
    json_array_append_new(a, n);
}

static void aud_add(json_t *aud, const char *id)
{
    size_t i;
    json_t *x;
    if (!id || !*id)
        return;
    json_array_foreach(aud, i, x)
        if (!strcmp(json_string_value(x), id))
            return;
    json_array_append_new(aud, json_string(id));
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* the claims of user name: admin if it holds the role Admin (or a role
 * flagged admin, stored before such roles were refused), the union of the
 * cluster and bucket ACLs of all its roles, a registered alias in an ACL
 * replaced by the cluster's id */
json_t *sl_users_claims_of(json_t *d, const char *name, json_t *u, int64_t ttl_ns)
{
    json_t *c = json_object();
    json_t *clusters = json_array(), *buckets = json_array(), *aud = json_array();
    bool admin = false;
    size_t i, j;
    json_t *rn, *e;
    json_array_foreach(json_object_get(u, "roles"), i, rn) {
        json_t *role = json_is_string(rn) ? sl_users_role(d, json_string_value(rn)) : NULL;
        if (!role)
            continue;
        admin |= !strcmp(json_string_value(rn), "Admin") || json_is_true(json_object_get(role, "admin"));
        json_array_foreach(json_object_get(role, "clusters"), j, e) {
            const char *id = sl_json_str(e, "id", "");
            const char *reg = sl_users_cluster_id(d, id);
            json_t *x = json_pack("{s:s,s:O}", "id", reg ? reg : id, "perm", json_object_get(e, "perm"));
            acl_union(clusters, x, reg ? reg : id);
            json_decref(x);
        }
        json_array_foreach(json_object_get(role, "buckets"), j, e) {
            json_t *x = json_deep_copy(e);
            json_t *b = json_object_get(x, "bck"), *ns = json_object_get(b, "namespace");
            const char *uu = sl_json_str(ns, "uuid", "");
            const char *reg = sl_users_cluster_id(d, uu);
            if (reg)
                json_object_set_new(ns, "uuid", json_string(reg));
            char key[512];
            snprintf(key, sizeof(key), "%s\n%s\n%s\n%s", sl_json_str(b, "name", ""), sl_json_str(b, "provider", "ais"),
                     sl_json_str(ns, "uuid", ""), sl_json_str(ns, "name", ""));
            acl_union(buckets, x, key);
            json_decref(x);
        }
        json_decref(role);
    }
    json_array_foreach(clusters, i, e) {
        json_object_del(e, "_key");
        aud_add(aud, sl_json_str(e, "id", ""));
    }
    json_array_foreach(buckets, i, e) {
        json_object_del(e, "_key");
        aud_add(aud, sl_json_str(json_object_get(json_object_get(e, "bck"), "namespace"), "uuid", ""));
    }
    if (admin) {
        const char *k;
        json_array_clear(aud);
        json_object_foreach(json_object_get(d, "clusters"), k, e)
            aud_add(aud, k);
    }
    /* sorted, as AIStore's AuthN sends it */
    size_t n = json_array_size(aud);
    json_t **v = sl_xcalloc(n ? n : 1, sizeof(*v));
    for (i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(aud, i));
    qsort(v, n, sizeof(*v), str_cmp);
    json_array_clear(aud);
    for (i = 0; i < n; i++)
        json_array_append_new(aud, v[i]);
    free(v);
    int64_t now = time(NULL);
    char jti[17];
    sl_rand_id(jti, 16); /* two logins in one second: two tokens (revoking one keeps the other) */
    json_object_set_new(c, "jti", json_string(jti));
    json_object_set_new(c, "sub", json_string(name));
    if (json_array_size(aud))
        json_object_set(c, "aud", aud);
    json_decref(aud);
    json_object_set_new(c, "iat", json_integer(now));
    json_object_set_new(c, "exp", json_integer(now + ttl_ns / 1000000000));
    json_object_set_new(c, "admin", json_boolean(admin));
    if (admin) {
        json_object_set_new(c, "clusters", json_null());
        json_decref(clusters);
    } else {
        json_object_set_new(c, "clusters", clusters);
    }
    if (json_array_size(buckets) && !admin)
        json_object_set_new(c, "buckets", buckets);
    else
        json_decref(buckets);
    return c;
}

json_t *sl_users_claims(const char *user)
{
    json_t *d = sl_users_doc();
    json_t *u = json_object_get(json_object_get(d, "users"), user);
    json_t *c = u ? sl_users_claims_of(d, user, u, 60 * 1000000000LL) : NULL;
    json_decref(d);
    return c;
}
