/* SPDX-License-Identifier: MIT
 * fuzz_ekm.c: the external key maps of dsort and ishard: dsort's
 * (server/jobs/dsort_ekm.c, JSON {"template": ["regex", ...]} or text lines
 * "<regex><sep><template>") and ishard's JSON EKM (server/jobs/
 * ishard_msg.c sl_ekm_compile); their Lua form is the sandbox's, not fuzzed
 * here. Input: one byte of flags (bits 0-1: the text separator, bits 2-3:
 * the malformed-line reaction, bit 4: named as a ".json" file, bit 5:
 * ishard's EKM instead), then a line of record keys to match
 * (space-separated), then the map.
 */
#include "fuzz_node.h"
#include "dsort_ekm.h"
#include "dsort_spec.h"
#include "ishard_msg.h"

#include <string.h>

static void match(const struct sl_dsort_ekm *e, char *keys)
{
    for (char *save = NULL, *k = strtok_r(keys, " ", &save); k; k = strtok_r(NULL, " ", &save)) {
        const char *tmpl = NULL;
        struct sl_err err = { 0 };
        if (sl_dsort_ekm_match(e, k, &tmpl, &err) == 0) {
            bool rule = !tmpl; /* (no rule matches) or one rule's template */
            for (int i = 0; i < e->n && !rule; i++)
                rule = tmpl == e->v[i].tmpl;
            FZ_CHECK(rule);
        } else {
            FZ_CHECK(err.msg[0] && !tmpl);
        }
    }
}

static void dsort_ekm(uint8_t flags, const char *text, size_t n, char *keys)
{
    static const char *const seps[] = { "\t", " ", ",", "=>" };
    static const int react[] = { SL_DSORT_IGNORE, SL_DSORT_WARN, SL_DSORT_ABORT, SL_DSORT_ABORT };
    struct sl_dsort_ekm e;
    struct sl_err err = { 0 };
    json_t *warnings = json_array();
    int rc = sl_dsort_ekm_parse(text, n, flags & 16 ? "ais://b/map.json" : "ais://b/map.txt", seps[flags & 3],
                                react[(flags >> 2) & 3], warnings, &e, &err);
    FZ_CHECK(json_array_size(warnings) <= 100);
    if (rc == 0) {
        /* (the JSON form takes a map without rules: {} or only empty lists) */
        size_t i = strspn(text, " \t\r\n");
        FZ_CHECK(e.n > 0 || flags & 16 || (i < n && text[i] == '{'));
        for (int i = 0; i < e.n; i++)
            FZ_CHECK(e.v[i].tmpl && e.v[i].pat);
        match(&e, keys);
    } else {
        FZ_CHECK(rc == -1 && err.msg[0] && e.n == 0 && !e.v);
    }
    sl_dsort_ekm_free(&e);
    json_decref(warnings);
}

static void ishard_ekm(const char *text, size_t n)
{
    json_error_t je;
    json_t *j = json_loadb(text, n, 0, &je);
    if (!j)
        return;
    struct sl_ekm_rule *r = NULL;
    int nr = 0;
    struct sl_err err = { 0 };
    if (sl_ekm_compile(j, &r, &nr, &err) == 0) {
        FZ_CHECK(nr > 0 && r);
        sl_ekm_free(r, nr);
    } else {
        FZ_CHECK(err.msg[0] && !r && !nr);
    }
    json_decref(j);
}

void fuzz_one(const uint8_t *data, size_t size)
{
    struct fz_in in = { data, size };
    uint8_t flags = fz_byte(&in);
    char *keys = fz_line(&in, NULL);
    size_t n;
    char *text = fz_rest(&in, &n);
    if (flags & 32)
        ishard_ekm(text, n);
    else
        dsort_ekm(flags, text, n, keys);
    free(text);
    free(keys);
}
