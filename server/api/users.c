/* SPDX-License-Identifier: MIT
 * users.c: the user store below authentication and authorisation: users
 * and roles of the cluster document "authmd" (see authn.c for its shape),
 * and the claims a user holds. See users.h.
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
    static const char *const sect[] = { "users", "roles", "revoked" };
    for (size_t i = 0; i < SL_ARRAY_SIZE(sect); i++)
        if (!json_is_object(json_object_get(c, sect[i])))
            json_object_set_new(c, sect[i], json_object());
    return c;
}

/* the Admin role, built in */
json_t *sl_users_role(json_t *d, const char *name)
{
    if (!strcmp(name, "Admin"))
        return json_pack("{s:s,s:s,s:b}", "name", "Admin", "desc", "full access (built in)", "admin", 1);
    json_t *r = json_object_get(json_object_get(d, "roles"), name);
    return r ? json_incref(r) : NULL;
}

/* the claims of user name: admin if any role is, cluster and bucket ACLs
 * of all its roles */
json_t *sl_users_claims_of(json_t *d, const char *name, json_t *u, int64_t ttl_ns)
{
    json_t *c = json_object();
    json_t *clusters = json_array(), *buckets = json_array();
    bool admin = false;
    size_t i;
    json_t *rn;
    json_array_foreach(json_object_get(u, "roles"), i, rn) {
        json_t *role = json_is_string(rn) ? sl_users_role(d, json_string_value(rn)) : NULL;
        if (!role)
            continue;
        admin |= json_is_true(json_object_get(role, "admin"));
        json_array_extend(clusters, json_object_get(role, "clusters"));
        json_array_extend(buckets, json_object_get(role, "buckets"));
        json_decref(role);
    }
    int64_t now = time(NULL);
    char jti[17];
    sl_rand_id(jti, 16); /* two logins in one second: two tokens (revoking one keeps the other) */
    json_object_set_new(c, "jti", json_string(jti));
    json_object_set_new(c, "sub", json_string(name));
    json_object_set_new(c, "iat", json_integer(now));
    json_object_set_new(c, "exp", json_integer(now + ttl_ns / 1000000000));
    json_object_set_new(c, "admin", json_boolean(admin));
    json_object_set_new(c, "clusters", clusters);
    json_object_set_new(c, "buckets", buckets);
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
