/* SPDX-License-Identifier: MIT
 * authn.h: the cluster's own AuthN endpoints (/v1/users, /v1/roles,
 * /v1/tokens), which change the user store (users.h). See authn.c.
 */
#ifndef SL_AUTHN_H
#define SL_AUTHN_H

#include "http.h"

void sl_authn_route(struct sl_req *r);
/* AuthN's configuration on AuthN's path (GET /v1/daemon without 'what';
 * PUT /v1/daemon with a ConfigToUpdate body, parsed; body only read) */
void sl_authn_config_get(struct sl_req *r);
void sl_authn_config_put(struct sl_req *r, json_t *body);

#endif
