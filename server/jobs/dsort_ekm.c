/* SPDX-License-Identifier: MIT
 * dsort_ekm.c: see dsort_ekm.h.
 */
#include "dsort_ekm.h"
#include "rxguard.h"
#include "dsort_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_rule(struct sl_dsort_ekm *e, const char *tmpl, size_t tl, const char *pat, size_t pl,
                    const char *where, struct sl_err *err)
{
    e->v = sl_xrealloc(e->v, (size_t)(e->n + 1) * sizeof(*e->v));
    struct sl_dsort_ekm_rule *r = &e->v[e->n];
    r->tmpl = sl_xstrndup(tmpl, tl);
    r->pat = sl_xstrndup(pat, pl);
    char what[400];
    snprintf(what, sizeof(what), "dsort: EKM %.100s (the rule for %.200s)", where, r->tmpl);
    if (sl_regcomp(&r->re, r->pat, REG_EXTENDED | REG_NOSUB, what, err) < 0) {
        free(r->tmpl);
        free(r->pat);
        return -1;
    }
    e->n++;
    return 0;
}

int sl_dsort_ekm_parse(const char *text, size_t n, const char *where, const char *sep, int malformed,
                       json_t *warnings, struct sl_dsort_ekm *out, struct sl_err *err)
{
    memset(out, 0, sizeof(*out));
    size_t i = 0;
    while (i < n && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))
        i++;
    if (sl_has_suffix(where, ".json") || (i < n && text[i] == '{')) {
        json_error_t je;
        json_t *j = json_loadb(text, n, 0, &je);
        if (!json_is_object(j)) {
            json_decref(j);
            return sl_errf(err, SL_EINVAL, "dsort: EKM %s is not a JSON object {\"TEMPLATE\": [\"REGEX\", ...]}%s%s",
                           where, j ? "" : ": ", j ? "" : je.text);
        }
        const char *t;
        json_t *pats;
        int rc = 0;
        json_object_foreach(j, t, pats) {
            if (!json_is_array(pats)) {
                rc = sl_errf(err, SL_EINVAL, "dsort: EKM %s: the value of \"%s\" must be a list of regexes", where, t);
                break;
            }
            size_t k;
            json_t *p;
            json_array_foreach(pats, k, p) {
                if (!json_is_string(p) || (rc = add_rule(out, t, strlen(t), json_string_value(p),
                                                         json_string_length(p), where, err)) < 0) {
                    if (!err->msg[0])
                        sl_errf(err, SL_EINVAL, "dsort: EKM %s: \"%s\" lists a regex that is not a string", where, t);
                    rc = -1;
                    break;
                }
            }
            if (rc < 0)
                break;
        }
        json_decref(j);
        if (rc < 0)
            sl_dsort_ekm_free(out);
        return rc;
    }
    size_t sl = strlen(sep);
    int line = 0;
    for (size_t p = 0; p < n;) {
        const char *ln = text + p;
        const char *nl = memchr(ln, '\n', n - p);
        size_t ll = nl ? (size_t)(nl - ln) : n - p;
        p += ll + 1;
        line++;
        while (ll && ln[ll - 1] == '\r')
            ll--;
        if (!ll)
            continue;
        const char *s = sl ? memmem(ln, ll, sep, sl) : NULL;
        if (!s || s == ln || (size_t)(s - ln) + sl >= ll) {
            if (malformed == SL_DSORT_ABORT) {
                sl_dsort_ekm_free(out);
                return sl_errf(err, SL_EINVAL, "dsort: EKM %s, line %d: expected REGEX<sep>TEMPLATE (Config."
                               "ekm_malformed_line: abort; \"warn\" or \"ignore\" skip such lines)", where, line);
            }
            if (malformed == SL_DSORT_WARN && json_array_size(warnings) < 100) {
                char w[256];
                snprintf(w, sizeof(w), "EKM %s, line %d: malformed, skipped", where, line);
                json_array_append_new(warnings, json_string(w));
            }
            continue;
        }
        if (add_rule(out, s + sl, ll - (size_t)(s - ln) - sl, ln, (size_t)(s - ln), where, err) < 0) {
            sl_dsort_ekm_free(out);
            return -1;
        }
    }
    if (!out->n)
        return sl_errf(err, SL_EINVAL, "dsort: EKM %s has no rules", where);
    return 0;
}

void sl_dsort_ekm_free(struct sl_dsort_ekm *e)
{
    for (int i = 0; i < e->n; i++) {
        regfree(&e->v[i].re);
        free(e->v[i].tmpl);
        free(e->v[i].pat);
    }
    free(e->v);
    memset(e, 0, sizeof(*e));
}

int sl_dsort_ekm_match(const struct sl_dsort_ekm *e, const char *key, const char **tmpl, struct sl_err *err)
{
    *tmpl = NULL;
    int hit = -1;
    for (int i = 0; i < e->n; i++) {
        if (regexec(&e->v[i].re, key, 0, NULL, 0))
            continue;
        if (hit >= 0 && strcmp(e->v[hit].tmpl, e->v[i].tmpl))
            return sl_errf(err, SL_EINVAL, "dsort: record %s matches two EKM rules: \"%s\" (%s) and \"%s\" (%s)", key,
                           e->v[hit].pat, e->v[hit].tmpl, e->v[i].pat, e->v[i].tmpl);
        hit = i;
    }
    if (hit >= 0)
        *tmpl = e->v[hit].tmpl;
    return 0;
}
