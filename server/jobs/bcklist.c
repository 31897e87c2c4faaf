/* SPDX-License-Identifier: MIT
 * bcklist.c: see bcklist.h.
 */
#include "bcklist.h"
#include "cluster.h"
#include "jsonx.h"

#include <stdio.h>
#include <string.h>

int sl_bcklist_parse(const json_t *v, const char *what, json_t **out, struct sl_err *err)
{
    *out = NULL;
    json_t *list = sl_json_get(v, "buckets"), *one = sl_json_get(v, "bck");
    if (one && !json_is_null(one) && (!list || json_is_null(list))) {
        list = json_array();
        json_array_append(list, one);
    } else {
        json_incref(list);
    }
    if (list && !json_is_null(list) && !json_is_array(list)) {
        json_decref(list);
        return sl_errf(err, SL_EINVAL, "%s: \"Buckets\" must be a list of buckets [{\"name\": ...}]", what);
    }
    size_t i;
    json_t *b;
    json_array_foreach(list, i, b) {
        const char *name = json_is_string(b) ? json_string_value(b) : sl_json_str(b, "name", "");
        const char *prov = json_is_string(b) ? "ais" : sl_json_str(b, "provider", "ais");
        struct sl_bck bk;
        if (sl_bck_resolve(name, prov, NULL, &bk, err) < 0) {
            json_decref(list);
            json_decref(*out);
            *out = NULL;
            return -1;
        }
        if (!*out)
            *out = json_array();
        json_array_append_new(*out, json_sprintf("%s/%s", bk.provider, bk.name));
        sl_bck_release(&bk);
    }
    json_decref(list);
    return 0;
}

bool sl_bcklist_has(const json_t *list, const struct sl_bck *b)
{
    if (!list)
        return true;
    char pn[SL_MAX_BCKNAME + 16];
    snprintf(pn, sizeof(pn), "%s/%s", b->provider, b->name);
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
        if (!strcmp(json_string_value(v), pn) || (!strcmp(b->provider, "ais") && !strcmp(json_string_value(v), b->name)))
            return true;
    return false;
}
