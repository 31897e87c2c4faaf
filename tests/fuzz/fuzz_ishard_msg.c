/* SPDX-License-Identifier: MIT
 * fuzz_ishard_msg.c: ishard's request (server/jobs/ishard_msg.c), JSON as a
 * client sends it, with the build's format and sample-key plugins loaded.
 * A request that parses must come back out (sl_ishard_msg_json) as one
 * that parses again, to the same normalised request.
 */
#include "fuzz_node.h"
#include "ishard_msg.h"

void fuzz_init(void)
{
    fz_load_plugins();
}

void fuzz_one(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *v = json_loadb((const char *)data, size, 0, &je);
    if (!v)
        return; /* (the handler's JSON reader refuses it first) */
    struct sl_ishard_msg m;
    struct sl_err err = { 0 };
    int rc = sl_ishard_msg_parse(v, &m, &err);
    json_decref(v);
    FZ_REQUEST(struct sl_ishard_msg, m, rc, err, sl_ishard_msg_parse, sl_ishard_msg_json, sl_ishard_msg_free);
}
