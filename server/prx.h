/* SPDX-License-Identifier: MIT
 * prx.h: gateway handlers and the ActMsg control message.
 */
#ifndef SL_PRX_H
#define SL_PRX_H

#include "http.h"
#include "daemon.h"
#include <jansson.h>

struct sl_actmsg {
    json_t *root;         /* owned */
    const char *action;   /* "" if absent */
    const char *name;     /* "" if absent */
    json_t *value;        /* borrowed from root; NULL if absent or null */
};

int sl_actmsg_parse(struct sl_req *r, struct sl_actmsg *m, struct sl_err *err);
void sl_actmsg_free(struct sl_actmsg *m);

void sl_prx_buckets(struct sl_req *r);
void sl_prx_cluster_get(struct sl_req *r);

/* Extension points for bucket actions implemented by job modules (ext.c):
 * return true when the request was handled (a response was produced). */
bool sl_prx_bucket_post_ext(struct sl_req *r, const char *bucket, struct sl_actmsg *m);
bool sl_prx_bucket_delete_ext(struct sl_req *r, const char *bucket, struct sl_actmsg *m);
bool sl_prx_bucket_get_ext(struct sl_req *r, const char *bucket, struct sl_actmsg *m);
/* PUT /v1/buckets/B (archive): sets up the request; false if unsupported */
bool sl_prx_bucket_put_begin(struct sl_req *r, const char *bucket);
/* ", a, b" lists of the extra actions, for error messages */
const char *sl_prx_bucket_post_actions(void);
const char *sl_prx_bucket_delete_actions(void);
const char *sl_prx_bucket_get_actions(void);
bool sl_cluster_get_ext(struct sl_req *r, const char *what);
const char *sl_cluster_get_whats(void);

#endif
