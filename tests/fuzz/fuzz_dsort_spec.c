/* SPDX-License-Identifier: MIT
 * fuzz_dsort_spec.c: dsort's RequestSpec (server/jobs/dsort_spec.c), as a
 * client sends it: JSON, or YAML (core/yamlx.c) for anything else, with the
 * build's format plugins loaded so that extensions are checked as a node
 * checks them. A spec that parses must come back out (sl_dsort_spec_json)
 * as one that parses again, to the same normalised spec.
 */
#include "fuzz_node.h"
#include "dsort_spec.h"

void fuzz_init(void)
{
    fz_load_plugins();
}

void fuzz_one(const uint8_t *data, size_t size)
{
    struct sl_dsort_spec s;
    struct sl_err err = { 0 };
    int rc = sl_dsort_spec_parse_text((const char *)data, size, &s, &err);
    FZ_REQUEST(struct sl_dsort_spec, s, rc, err, sl_dsort_spec_parse, sl_dsort_spec_json, sl_dsort_spec_free);
}
