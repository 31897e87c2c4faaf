/* SPDX-License-Identifier: MIT
 * users.h: the user store (users, roles and what they grant), below both
 * authentication (access.c for tokens, s3auth.c for SigV4 keys) and
 * authorisation (access.c), and the AuthN endpoints that change it
 * (authn.c). It only reads the cluster document "authmd"; changes go
 * through the primary (authn.c).
 */
#ifndef SL_USERS_H
#define SL_USERS_H

#include "sl.h"
#include <jansson.h>

/* A private copy of "authmd" with its sections (users, roles, revoked,
 * clusters) present: the caller's (json_decref). */
json_t *sl_users_doc(void);
/* Role name of d (the built-in "Admin" included): a new reference, or NULL. */
json_t *sl_users_role(json_t *d, const char *name);
/* The id of the registered cluster whose id or alias is id_or_alias
 * (borrowed from d), or NULL. */
const char *sl_users_cluster_id(json_t *d, const char *id_or_alias);
/* role as AIStore's AuthN shows it: name, desc, clusters (each with the
 * alias of a registered id), buckets (null when never set), admin. New. */
json_t *sl_users_role_view(json_t *d, const json_t *role);
/* user name (u: its entry in d) as AIStore shows it: {"id", "roles":
 * [full roles]}. New. */
json_t *sl_users_user_view(json_t *d, const char *name, const json_t *u);
/* The claims user name (u: its entry in d) holds: admin if it holds
 * Admin, the union of the cluster and bucket permissions of its roles
 * (a registered alias replaced by its cluster's id), aud, valid for
 * ttl_ns. A new object. */
json_t *sl_users_claims_of(json_t *d, const char *name, json_t *u, int64_t ttl_ns);
/* The same for user from the current document (a minute's validity), or
 * NULL when there is no such user. */
json_t *sl_users_claims(const char *user);

#endif
