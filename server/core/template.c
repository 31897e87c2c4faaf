/* SPDX-License-Identifier: MIT
 * template.c: see template.h.
 */
#include "template.h"
#include "jsonx.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { P_LIT, P_RANGE, P_LIST, P_FMT };

struct part {
    int kind;
    char *lit;             /* P_LIT */
    int64_t start, end, step;
    int width;             /* zero padding */
    char **items;          /* P_LIST */
    int nitems;
    char fmt[16];          /* P_FMT: "%06d" */
    uint64_t count;
};

struct sl_tmpl {
    struct part *parts;
    int nparts;
    bool range;
    char *prefix;
    uint64_t count;
};

static void add_part(struct sl_tmpl *t, struct part p)
{
    t->parts = sl_xrealloc(t->parts, (size_t)(t->nparts + 1) * sizeof(p));
    t->parts[t->nparts++] = p;
}

static void add_lit(struct sl_tmpl *t, const char *s, size_t n)
{
    if (!n)
        return;
    struct part p = { .kind = P_LIT, .lit = sl_xstrndup(s, n), .count = 1 };
    add_part(t, p);
}

static int parse_int(const char *s, size_t n, int64_t *v, int *width)
{
    if (!n || n > 18)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return -1;
    char tmp[24];
    memcpy(tmp, s, n);
    tmp[n] = 0;
    *v = strtoll(tmp, NULL, 10);
    if (width)
        *width = s[0] == '0' && n > 1 ? (int)n : 0;
    return 0;
}

int sl_tmpl_parse(const char *s, struct sl_tmpl **out, struct sl_err *err)
{
    struct sl_tmpl *t = sl_xcalloc(1, sizeof(*t));
    if (!s || !*s || !strcmp(s, "*")) {
        t->prefix = sl_xstrdup("");
        *out = t;
        return 0;
    }
    const char *p = s, *lit = s;
    t->count = 1;
    while (*p) {
        if (*p == '{') {
            const char *close = strchr(p, '}');
            if (!close) {
                sl_tmpl_free(t);
                return sl_errf(err, SL_EINVAL, "template \"%s\": '{' without a matching '}'", s);
            }
            add_lit(t, lit, (size_t)(p - lit));
            const char *in = p + 1;
            size_t inl = (size_t)(close - in);
            struct part pt = { .kind = P_RANGE, .step = 1 };
            const char *dd = memmem(in, inl, "..", 2);
            if (dd) {
                const char *dd2 = memmem(dd + 2, inl - (size_t)(dd + 2 - in), "..", 2);
                size_t el = dd2 ? (size_t)(dd2 - dd - 2) : inl - (size_t)(dd + 2 - in);
                if (parse_int(in, (size_t)(dd - in), &pt.start, &pt.width) < 0 ||
                    parse_int(dd + 2, el, &pt.end, NULL) < 0 ||
                    (dd2 && parse_int(dd2 + 2, inl - (size_t)(dd2 + 2 - in), &pt.step, NULL) < 0) || pt.step <= 0 ||
                    pt.end < pt.start) {
                    sl_tmpl_free(t);
                    return sl_errf(err, SL_EINVAL,
                                   "template \"%s\": invalid range {%.*s}: expected {START..END} or "
                                   "{START..END..STEP} with START <= END and STEP > 0",
                                   s, (int)inl, in);
                }
                pt.count = (uint64_t)((pt.end - pt.start) / pt.step + 1);
            } else if (memchr(in, ',', inl)) {
                pt.kind = P_LIST;
                const char *q = in;
                while (q <= close) {
                    const char *c = memchr(q, ',', (size_t)(close - q));
                    const char *e = c ? c : close;
                    pt.items = sl_xrealloc(pt.items, (size_t)(pt.nitems + 1) * sizeof(char *));
                    pt.items[pt.nitems++] = sl_xstrndup(q, (size_t)(e - q));
                    if (!c)
                        break;
                    q = c + 1;
                }
                pt.count = (uint64_t)pt.nitems;
            } else {
                sl_tmpl_free(t);
                return sl_errf(err, SL_EINVAL, "template \"%s\": {%.*s} is neither a range {A..B} nor a list {a,b}",
                               s, (int)inl, in);
            }
            add_part(t, pt);
            t->range = true;
            if (t->count > SL_TMPL_MAX / pt.count) {
                sl_tmpl_free(t);
                return sl_errf(err, SL_EINVAL, "template \"%s\" expands to more than %llu names", s,
                               (unsigned long long)SL_TMPL_MAX);
            }
            t->count *= pt.count;
            p = lit = close + 1;
        } else if (*p == '@' && isdigit((unsigned char)p[1])) {
            add_lit(t, lit, (size_t)(p - lit));
            const char *q = p + 1;
            while (isdigit((unsigned char)*q))
                q++;
            struct part pt = { .kind = P_RANGE, .step = 1, .start = 0 };
            parse_int(p + 1, (size_t)(q - p - 1), &pt.end, NULL);
            pt.width = (int)(q - p - 1);
            pt.count = (uint64_t)pt.end + 1;
            add_part(t, pt);
            t->range = true;
            if (t->count > SL_TMPL_MAX / pt.count) {
                sl_tmpl_free(t);
                return sl_errf(err, SL_EINVAL, "template \"%s\" expands to more than %llu names", s,
                               (unsigned long long)SL_TMPL_MAX);
            }
            t->count *= pt.count;
            p = lit = q;
        } else if (*p == '%' && (isdigit((unsigned char)p[1]) || p[1] == 'd')) {
            const char *q = p + 1;
            while (isdigit((unsigned char)*q))
                q++;
            if (*q != 'd') {
                p++;
                continue;
            }
            add_lit(t, lit, (size_t)(p - lit));
            struct part pt = { .kind = P_FMT, .count = UINT64_MAX };
            snprintf(pt.fmt, sizeof(pt.fmt), "%.*s", (int)(q - p + 1), p);
            /* "%06d" -> use with int64: rewrite to %0*lld style at expansion */
            add_part(t, pt);
            t->range = true;
            t->count = UINT64_MAX;
            p = lit = q + 1;
        } else {
            p++;
        }
    }
    add_lit(t, lit, (size_t)(p - lit));
    if (!t->range) {
        t->prefix = sl_xstrdup(s);
        t->count = 0;
    }
    int nfmt = 0;
    for (int i = 0; i < t->nparts; i++)
        if (t->parts[i].kind == P_FMT)
            nfmt++;
    if (nfmt > 1 || (nfmt == 1 && t->nparts > 1 && t->count != UINT64_MAX)) {
        sl_tmpl_free(t);
        return sl_errf(err, SL_EINVAL, "template \"%s\": a %%d counter cannot be combined with other ranges", s);
    }
    *out = t;
    return 0;
}

void sl_tmpl_free(struct sl_tmpl *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->nparts; i++) {
        free(t->parts[i].lit);
        for (int j = 0; j < t->parts[i].nitems; j++)
            free(t->parts[i].items[j]);
        free(t->parts[i].items);
    }
    free(t->parts);
    free(t->prefix);
    free(t);
}

bool sl_tmpl_is_range(const struct sl_tmpl *t)
{
    return t->range;
}

const char *sl_tmpl_prefix(const struct sl_tmpl *t)
{
    return t->prefix ? t->prefix : "";
}

uint64_t sl_tmpl_count(const struct sl_tmpl *t)
{
    return t->count;
}

int sl_tmpl_at(const struct sl_tmpl *t, uint64_t i, struct sl_buf *out)
{
    sl_buf_reset(out);
    if (!t->range || (t->count != UINT64_MAX && i >= t->count))
        return -1;
    /* mixed radix: the last range varies fastest */
    uint64_t idx[64] = { 0 };
    uint64_t rem = i;
    for (int k = t->nparts - 1; k >= 0; k--) {
        const struct part *p = &t->parts[k];
        if (p->kind == P_LIT)
            continue;
        if (p->kind == P_FMT) {
            idx[k] = rem;
            rem = 0;
            continue;
        }
        idx[k] = rem % p->count;
        rem /= p->count;
    }
    for (int k = 0; k < t->nparts; k++) {
        const struct part *p = &t->parts[k];
        switch (p->kind) {
        case P_LIT:
            sl_buf_adds(out, p->lit);
            break;
        case P_RANGE:
            sl_buf_printf(out, "%0*" PRId64, p->width, p->start + (int64_t)idx[k] * p->step);
            break;
        case P_LIST:
            sl_buf_adds(out, p->items[idx[k]]);
            break;
        case P_FMT: {
            int w = 0;
            bool zero = false;
            const char *f = p->fmt + 1;
            if (*f == '0')
                zero = true;
            w = atoi(f);
            if (zero)
                sl_buf_printf(out, "%0*" PRIu64, w, idx[k]);
            else
                sl_buf_printf(out, "%*" PRIu64, w, idx[k]);
            break;
        }
        }
    }
    return 0;
}

void sl_strv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

int sl_listrange_parse(const json_t *v, bool need_one, char ***names, size_t *n, char **tmpl, struct sl_err *err)
{
    *names = NULL;
    *n = 0;
    *tmpl = NULL;
    json_t *on = sl_json_get(v, "objnames"), *tp = sl_json_get(v, "template");
    if (on && !json_is_null(on)) {
        if (!json_is_array(on))
            return sl_errf(err, SL_EINVAL, "\"objnames\" must be an array of object names");
        if (json_is_string(tp) && json_string_value(tp)[0])
            return sl_errf(err, SL_EINVAL, "give either \"objnames\" or \"template\", not both");
        char **r = sl_xcalloc(json_array_size(on) + 1, sizeof(char *));
        size_t i;
        json_t *x;
        json_array_foreach(on, i, x) {
            if (!json_is_string(x)) {
                sl_strv_free(r, i);
                return sl_errf(err, SL_EINVAL, "objnames[%zu] is not a string", i);
            }
            r[i] = sl_xstrdup(json_string_value(x));
        }
        *names = r;
        *n = json_array_size(on);
        return 0;
    }
    if (json_is_string(tp)) {
        *tmpl = sl_xstrdup(json_string_value(tp));
        return 0;
    }
    if (tp && !json_is_null(tp))
        return sl_errf(err, SL_EINVAL, "\"template\" must be a string");
    return need_one ? sl_errf(err, SL_EINVAL, "give \"objnames\" (a list) or \"template\" (a range or prefix)") : 0;
}
