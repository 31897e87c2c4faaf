/* SPDX-License-Identifier: MIT
 * s3meta.c: what S3's object requests share (s3obj.c, s3copy.c, s3mpu.c):
 * the ETag of an object, the metadata a PUT carries (Content-Type and its
 * siblings, x-amz-meta-*), and the If-* conditions. See s3obj.h.
 */
#include "s3.h"
#include "s3obj.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- small helpers ---- */

const char *s3_obj_etag(const struct sl_objmd *md)
{
    const char *e = sl_objmd_get_custom(md, "ETag");
    return e ? e : md->cksum;
}

void s3_hex2bin(const char *hex, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (unsigned char)v;
    }
}

/* ---- the metadata a PUT carries ---- */


void s3_kv_add(struct kvs *k, const char *name, const char *v)
{
    k->kv = sl_xrealloc(k->kv, (size_t)(k->n + 1) * sizeof(*k->kv));
    k->kv[k->n].k = sl_xstrdup(name);
    k->kv[k->n].v = sl_xstrdup(v);
    k->n++;
    k->bytes += strlen(name) + strlen(v);
}

void s3_kv_free(struct kvs *k)
{
    for (int i = 0; i < k->n; i++) {
        free(k->kv[i].k);
        free(k->kv[i].v);
    }
    free(k->kv);
    memset(k, 0, sizeof(*k));
}

static void meta_cb(void *arg, const char *k, const char *v)
{
    struct kvs *m = arg;
    if (!strncasecmp(k, "x-amz-meta-", 11)) {
        char low[256];
        size_t n = strlen(k);
        if (n >= sizeof(low))
            n = sizeof(low) - 1;
        for (size_t i = 0; i < n; i++)
            low[i] = (char)((k[i] >= 'A' && k[i] <= 'Z') ? k[i] + 32 : k[i]);
        low[n] = 0;
        s3_kv_add(m, low, v);
    }
}

/* Content-Type and the other stored headers, and x-amz-meta-*. */
void s3_collect_meta(struct sl_req *r, struct kvs *m)
{
    static const struct {
        const char *h, *k;
    } std[] = { { "Content-Type", "s3.ct" },        { "Content-Disposition", "s3.cd" },
                { "Content-Language", "s3.cl" },    { "Cache-Control", "s3.cc" },
                { "Expires", "s3.ex" } };
    for (size_t i = 0; i < SL_ARRAY_SIZE(std); i++) {
        const char *v = sl_req_header(r, std[i].h);
        if (v)
            s3_kv_add(m, std[i].k, v);
    }
    const char *ce = sl_req_header(r, "Content-Encoding");
    if (ce) { /* stored without aws-chunked */
        struct sl_buf b;
        sl_buf_init(&b);
        const char *p = ce;
        while (*p) {
            while (*p == ' ' || *p == ',')
                p++;
            size_t l = strcspn(p, ",");
            size_t tl = l;
            while (tl && p[tl - 1] == ' ')
                tl--;
            if (tl && !(tl == 11 && !strncasecmp(p, "aws-chunked", 11))) {
                if (b.len)
                    sl_buf_adds(&b, ", ");
                sl_buf_add(&b, p, tl);
            }
            p += l;
        }
        if (b.len) {
            sl_buf_addc(&b, 0);
            s3_kv_add(m, "s3.ce", b.p);
        }
        sl_buf_free(&b);
    }
    sl_req_headers_each(r, meta_cb, m);
}

/* ---- conditions ---- */

static bool etag_match(const char *list, const char *etag)
{
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '*')
            return true;
        size_t l = strcspn(p, ",");
        size_t tl = l;
        while (tl && p[tl - 1] == ' ')
            tl--;
        const char *v = p;
        if (tl >= 2 && v[0] == '"' && v[tl - 1] == '"') {
            v++;
            tl -= 2;
        }
        if (tl == strlen(etag) && !strncmp(v, etag, tl))
            return true;
        p += l;
    }
    return false;
}

/* 0 go on, else the status to answer (412, 304) */
int s3_conditions(struct sl_req *r, const char *pfx, const char *etag, int64_t mtime_ns, bool exists)
{
    char h[80];
    snprintf(h, sizeof(h), "%sIf-Match", pfx);
    const char *im = sl_req_header(r, h);
    snprintf(h, sizeof(h), "%sIf-None-Match", pfx);
    const char *inm = sl_req_header(r, h);
    snprintf(h, sizeof(h), "%sIf-Modified-Since", pfx);
    const char *ims = sl_req_header(r, h);
    snprintf(h, sizeof(h), "%sIf-Unmodified-Since", pfx);
    const char *ius = sl_req_header(r, h);
    int64_t mt = mtime_ns / 1000000000LL;
    if (im) {
        if (!exists || !etag_match(im, etag))
            return 412;
    } else if (ius && exists) {
        int64_t t = s3_parse_http_time(ius);
        if (t >= 0 && mt > t)
            return 412;
    }
    if (inm) {
        if (exists && etag_match(inm, etag))
            return r->method == SL_M_GET || r->method == SL_M_HEAD ? 304 : 412;
    } else if (ims && exists && (r->method == SL_M_GET || r->method == SL_M_HEAD)) {
        int64_t t = s3_parse_http_time(ims);
        if (t >= 0 && mt <= t)
            return 304;
    }
    return 0;
}

int s3_part_range(const struct sl_objmd *md, const char *pn, uint64_t *off, uint64_t *len)
{
    char *e;
    long n = strtol(pn, &e, 10);
    if (!*pn || *e || n < 1 || n > 10000)
        return -1;
    const char *mp = sl_objmd_get_custom(md, "s3.mp");
    if (!mp)
        return n == 1 ? 0 : -1;
    long parts = atol(mp);
    if (n > parts)
        return -1;
    const char *sz = sl_objmd_get_custom(md, "s3.mpsz");
    const char *list = sl_objmd_get_custom(md, "s3.mpsizes");
    if (sz) {
        uint64_t z = strtoull(sz, NULL, 10);
        *off = (uint64_t)(n - 1) * z;
        *len = n < parts ? z : md->size - *off;
    } else if (list) {
        uint64_t o = 0, l = 0;
        const char *p = list;
        for (long i = 1; i <= n && *p; i++) {
            l = strtoull(p, &e, 10);
            if (i < n)
                o += l;
            p = *e == ',' ? e + 1 : e;
        }
        *off = o;
        *len = l;
    } else {
        return -2;
    }
    if (*off + *len > md->size || !*len)
        return -1;
    return 1;
}
