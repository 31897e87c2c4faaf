/* SPDX-License-Identifier: MIT
 * ec_job.c: erasure coding's node-to-node endpoints (slices, rebuilds,
 * ec-encode), served by cluster/ec.c.
 */
#include "ec_job.h"
#include "ec.h"

const struct sl_module sl_ec_module = {
    .name = "ec",
    .internal = sl_ec_internal,
};
