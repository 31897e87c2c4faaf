/* SPDX-License-Identifier: MIT
 * ishard.h: initial sharding as a cluster job (docs/ishard.md). A gateway
 * validates the request and hands it to a coordinating target (HRW of the
 * job id), which lists the source, groups objects into samples with a
 * sample-key plugin, applies the extension policy and the EKM (JSON or
 * Lua), orders and packs the samples into shards, and sends every shard's
 * member list to the HRW owner of the shard's name; the owners build their
 * shards in parallel, pulling members from wherever they live.
 */
#ifndef SL_ISHARD_H
#define SL_ISHARD_H

#include "http.h"
#include "module.h"

/* /v1/ishard[/ID] on gateways */
void sl_ishard_route(struct sl_req *r);
/* /v1/internal/ishard/{plan,build} on targets; true when handled */
bool sl_ishard_internal(struct sl_req *r);

/* The ishard module: /v1/ishard, /v1/internal/ishard/{plan,build} */
extern const struct sl_module sl_ishard_module;

#endif
