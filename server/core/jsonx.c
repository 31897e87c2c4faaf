/* SPDX-License-Identifier: MIT
 * jsonx.c: see jsonx.h.
 */
#include "jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define U64_MARK "\x01u64:"

json_t *sl_json_u64(uint64_t v)
{
    char tmp[40];
    snprintf(tmp, sizeof(tmp), U64_MARK "%llu", (unsigned long long)v);
    return json_string(tmp);
}

char *sl_json_dump(const json_t *j, int flags, size_t *len)
{
    size_t jf = JSON_PRESERVE_ORDER | (flags & SL_JD_PRETTY ? JSON_INDENT(2) : JSON_COMPACT) | JSON_ENCODE_ANY;
    char *s = json_dumps(j, jf);
    if (!s)
        return NULL;
    /* rewrite "\u0001u64:123" markers */
    static const char needle[] = "\"\\u0001u64:";
    if (strstr(s, needle)) {
        struct sl_buf b;
        sl_buf_init(&b);
        const char *p = s;
        for (;;) {
            const char *m = strstr(p, needle);
            if (!m) {
                sl_buf_adds(&b, p);
                break;
            }
            sl_buf_add(&b, p, (size_t)(m - p));
            const char *d = m + sizeof(needle) - 1;
            const char *e = strchr(d, '"');
            if (!e) {
                sl_buf_adds(&b, m);
                break;
            }
            if (flags & SL_JD_U64STR)
                sl_buf_printf(&b, "\"%.*s\"", (int)(e - d), d);
            else
                sl_buf_add(&b, d, (size_t)(e - d));
            p = e + 1;
        }
        free(s);
        s = sl_buf_steal(&b);
    }
    if (len)
        *len = strlen(s);
    return s;
}

json_t *sl_json_get(const json_t *o, const char *key)
{
    if (!json_is_object(o))
        return NULL;
    json_t *v = json_object_get(o, key);
    if (v)
        return v;
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)o, k, val) {
        if (strcasecmp(k, key) == 0)
            return val;
    }
    return NULL;
}

const char *sl_json_str(const json_t *o, const char *key, const char *dflt)
{
    json_t *v = sl_json_get(o, key);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

int64_t sl_json_int(const json_t *o, const char *key, int64_t dflt)
{
    json_t *v = sl_json_get(o, key);
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_string(v)) {
        char *end;
        long long x = strtoll(json_string_value(v), &end, 10);
        if (*end == 0 && end != json_string_value(v))
            return x;
    }
    return dflt;
}

bool sl_json_bool(const json_t *o, const char *key, bool dflt)
{
    json_t *v = sl_json_get(o, key);
    if (json_is_boolean(v))
        return json_is_true(v);
    return dflt;
}

static const char *unknown_key(const json_t *o, const char *const *known, size_t n,
                               int (*cmp)(const char *, const char *))
{
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)o, key, val) {
        size_t i = 0;
        while (i < n && cmp(key, known[i]))
            i++;
        if (i == n)
            return key;
    }
    return NULL;
}

const char *sl_json_unknown_key(const json_t *o, const char *const *known, size_t n)
{
    return unknown_key(o, known, n, strcasecmp);
}

const char *sl_json_unknown_key_exact(const json_t *o, const char *const *known, size_t n)
{
    return unknown_key(o, known, n, strcmp);
}

json_t *sl_json_parse(const char *p, size_t n, const char *what, struct sl_err *err)
{
    json_error_t je;
    json_t *j = sl_json_loadb_u64(p, n, &je);
    if (!j)
        sl_errf(err, SL_EINVAL, "invalid JSON in %s: %s (line %d, column %d)", what, je.text, je.line, je.column);
    return j;
}

json_t *sl_json_loadb_u64(const char *p, size_t n, json_error_t *je)
{
    /* quote integer literals of 19+ digits that do not fit in int64 */
    struct sl_buf b;
    sl_buf_init(&b);
    bool in_str = false, changed = false;
    size_t i = 0, last = 0;
    while (i < n) {
        char c = p[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
            i++;
            continue;
        }
        if (c == '"') {
            in_str = true;
            i++;
            continue;
        }
        if (c >= '0' && c <= '9' && (i == 0 || strchr(" \t\r\n:,[", p[i - 1]))) {
            size_t j = i;
            while (j < n && p[j] >= '0' && p[j] <= '9')
                j++;
            bool plain = j >= n || strchr(" \t\r\n,]}", p[j]);
            if (plain && j - i >= 19 && (j - i > 19 || memcmp(p + i, "9223372036854775807", 19) > 0)) {
                sl_buf_add(&b, p + last, i - last);
                sl_buf_addc(&b, '"');
                sl_buf_add(&b, p + i, j - i);
                sl_buf_addc(&b, '"');
                last = j;
                changed = true;
            }
            i = j;
            continue;
        }
        i++;
    }
    json_t *j;
    if (changed) {
        sl_buf_add(&b, p + last, n - last);
        j = json_loadb(b.p, b.len, JSON_DECODE_ANY, je);
    } else {
        j = json_loadb(p, n, JSON_DECODE_ANY, je);
    }
    sl_buf_free(&b);
    return j;
}
