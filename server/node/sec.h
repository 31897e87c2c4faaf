/* SPDX-License-Identifier: MIT
 * sec.h: the cluster secret and what it signs. Every node of a cluster
 * holds the same secret (file cluster.secret, mode 0600, beside the node's
 * config; the primary creates it at first start, the others are given a
 * copy). With it a node signs
 *   its calls to peers      header Ais-Cluster-Auth: ID EXP NONCE SIG DEST
 *   the redirects it sends  query  ...&x=EXP.NONCE&u=SIG (last)
 * SIG = HMAC-SHA256(secret, kind, method, request target, ...), EXP a unix
 * time auth.intra_cluster.ttl ahead, DEST who a call is for (the node id
 * the URL's address has in the cluster map, else @host:port). A receiver
 * takes each signature once (a replayed one is refused), only before EXP,
 * and a call only when DEST is itself (a call captured on its way to one
 * node and replayed at another is refused).
 */
#ifndef SL_SEC_H
#define SL_SEC_H

#include "sl.h"
#include "http.h"

#define SL_SEC_HDR "Ais-Cluster-Auth"

enum { SL_TRUST_NONE = 0, SL_TRUST_REDIRECT, SL_TRUST_PEER };

/* Load the secret (create it when allowed and missing). path NULL: the
 * default, cluster.secret beside the config file, else in confdir. */
int sl_sec_init(const char *path, bool may_create, struct sl_err *err);
bool sl_sec_on(void);
const char *sl_sec_path(void);

/* "Ais-Cluster-Auth: ..." for a call of method to url (absolute or a
 * request target); "" when there is no secret. body_hash (SHA-256 hex of
 * an in-memory body, or NULL) is signed too and goes in its own header,
 * SL_SEC_BODY_HDR: the receiver takes only that body. */
#define SL_SEC_BODY_HDR "Ais-Cluster-Body"
void sl_sec_header(const char *method, const char *url, const char *body_hash, char *out, size_t cap);
#define SL_SEC_HDR_MAX 640 /* cap enough for any header sl_sec_header writes */
/* Append &x=..&u=.. to url (a redirect the client will follow with
 * method). Nothing without a secret. */
void sl_sec_sign_url(struct sl_buf *url, const char *method);

/* Check r's signature, if it carries one: sets r->trust. Returns -1 with
 * err (401) for a signature that is bad, expired or replayed. */
int sl_sec_verify(struct sl_req *r, struct sl_err *err);

/* Refusal bookkeeping: logs (rate-limited) and counts. */
void sl_sec_refused(const struct sl_req *r, const char *what);

/* HMAC-SHA256 of the two-part message a, b with the cluster secret
 * (for documents signed by the cluster: tokens, manifests); out: 32 bytes */
void sl_sec_hmac(const void *a, size_t al, const void *b, size_t bl, unsigned char out[32]);

#endif
