/* SPDX-License-Identifier: MIT
 * access.h: who may send a request, decided before it is routed.
 *   intra-cluster endpoints (/v1/metasync, /v1/internal/..., joins): a
 *     peer's signature (node/sec.h)
 *   a storage target: a peer's call or a gateway's signed redirect; a
 *     client may only read (GET/HEAD) directly, and not even that when
 *     client authentication is on
 *   a gateway with auth.client_auth_required: a valid token granting the
 *     operation (node/auth.h)
 */
#ifndef SL_ACCESS_H
#define SL_ACCESS_H

#include "http.h"

/* Install the engine hooks (action messages, sl_req_allow). */
void sl_access_init(void);

/* The cluster secret's checks (signatures, intra-cluster endpoints, what a
 * target takes), before anything looks at the path. false: refused
 * (answered, logged, nothing done) */
bool sl_access(struct sl_req *r);
/* The client's token and permission (auth on), once easy URLs are
 * rewritten to their /v1 form; S3 requests are left to sl_access_s3. */
bool sl_access_client(struct sl_req *r);

/* auth.client_auth_required, on a gateway */
bool sl_auth_on(void);

/* The request's token, verified, into r->user; -1 with err (401). */
int sl_access_authenticate(struct sl_req *r, struct sl_err *err);

/* An S3 request on bucket ("" = the service), with or without a key,
 * once authenticated: the permission its method and sub-resource need.
 * key_user: the user its verified SigV4 access key belongs to (NULL or ""
 * none), who it acts as when it carries no token. -1 with err (401/403). */
int sl_access_s3(struct sl_req *r, const char *bucket, bool has_key, const char *key_user, struct sl_err *err);

/* Permission check for an operation named later (an action in a body):
 * perm bits (AIStore's apc.Access) on bucket (cname "ais://b"; NULL =
 * cluster-wide). false: answered 403. Always true when auth is off or
 * for signed intra-cluster requests. */
bool sl_access_check(struct sl_req *r, uint64_t perm, const char *provider, const char *bck);

/* A set-config turning auth.client_auth_required on needs a valid token
 * with the admin claim (else nobody could manage the cluster after). */
int sl_access_enabling_auth(struct sl_req *r, const json_t *partial, struct sl_err *err);


#endif
