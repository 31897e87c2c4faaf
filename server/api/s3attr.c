/* SPDX-License-Identifier: MIT
 * s3attr.c: GetObjectAttributes (GET /s3/BUCKET/KEY?attributes with
 * x-amz-object-attributes: ETag, Checksum, ObjectParts, StorageClass,
 * ObjectSize), answered on the object's target from its metadata alone.
 *
 * ETag is the object's S3 ETag (unquoted, as S3 answers it here); Checksum
 * the x-amz-checksum-ALG a PUT carried and was verified against (kept as
 * custom "s3.xc" = "ALG:BASE64"; none for other objects); ObjectParts, of a
 * multipart object only, its part count and the parts' numbers and sizes
 * (custom "s3.mp", "s3.mpsz"/"s3.mpsizes"), paged by x-amz-max-parts
 * (default and most 1000) and x-amz-part-number-marker; StorageClass is
 * STANDARD, the one there is.
 */
#include "s3.h"
#include "s3obj.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { A_ETAG = 1, A_CKSUM = 2, A_PARTS = 4, A_CLASS = 8, A_SIZE = 16 };

struct oattr {
    struct sl_bck b;
    char *key;
    size_t klen;
    unsigned want;
    long max_parts, marker;
};

static void oattr_free(void *arg)
{
    struct oattr *o = arg;
    sl_bck_release(&o->b);
    free(o->key);
    free(o);
}

static void xc_xml(struct sl_buf *x, const char *stored, bool composite)
{
    static const char *const tag[] = { [XC_CRC32] = "ChecksumCRC32", [XC_CRC32C] = "ChecksumCRC32C",
                                       [XC_SHA1] = "ChecksumSHA1", [XC_SHA256] = "ChecksumSHA256",
                                       [XC_CRC64NVME] = "ChecksumCRC64NVME" };
    const char *colon = strchr(stored, ':');
    if (!colon || (size_t)(colon - stored) >= 16)
        return;
    char alg[16];
    snprintf(alg, sizeof(alg), "%.*s", (int)(colon - stored), stored);
    int a = s3_xc_alg(alg);
    if (a <= 0 || a >= (int)SL_ARRAY_SIZE(tag))
        return;
    sl_buf_adds(x, "<Checksum>");
    s3_xel(x, tag[a], colon + 1);
    s3_xel(x, "ChecksumType", composite ? "COMPOSITE" : "FULL_OBJECT");
    sl_buf_adds(x, "</Checksum>");
}

static void parts_xml(struct sl_buf *x, const struct oattr *o, const struct sl_objmd *md)
{
    const char *mp = sl_objmd_get_custom(md, "s3.mp");
    if (!mp)
        return; /* not a multipart object: S3 names no parts */
    long n = atol(mp);
    sl_buf_adds(x, "<ObjectParts>");
    sl_buf_printf(x, "<PartsCount>%ld</PartsCount>", n);
    sl_buf_printf(x, "<PartNumberMarker>%ld</PartNumberMarker>", o->marker);
    sl_buf_printf(x, "<MaxParts>%ld</MaxParts>", o->max_parts);
    long last = o->marker, shown = 0;
    bool sizes = true;
    /* a composite checksum's parts' checksums (kept when they fit) */
    const char *xc = sl_objmd_get_custom(md, S3_XC_KEY), *xcp = sl_objmd_get_custom(md, S3_XCP_KEY);
    char tag[32] = "";
    const char *colon = xc ? strchr(xc, ':') : NULL;
    if (colon && xcp) {
        char alg[16];
        snprintf(alg, sizeof(alg), "%.*s", (int)SL_MIN(colon - xc, 15), xc);
        int a = s3_xc_alg(alg);
        snprintf(tag, sizeof(tag), "Checksum%s", a == XC_CRC32 ? "CRC32" : a == XC_CRC32C ? "CRC32C" :
                 a == XC_SHA1 ? "SHA1" : a == XC_SHA256 ? "SHA256" : "");
        if (a <= 0)
            tag[0] = 0;
    }
    for (long i = o->marker + 1; i <= n && shown < o->max_parts && sizes; i++) {
        char pn[24];
        uint64_t off, len;
        snprintf(pn, sizeof(pn), "%ld", i);
        if (s3_part_range(md, pn, &off, &len) != 1) {
            sizes = false; /* an upload whose part sizes were not kept: the count alone */
            break;
        }
        sl_buf_printf(x, "<Part><PartNumber>%ld</PartNumber><Size>%llu</Size>", i, (unsigned long long)len);
        const char *pc = xcp;
        for (long k = 1; tag[0] && pc && k < i; k++) /* (the i-th of "B64,B64,...") */
            pc = (pc = strchr(pc, ',')) ? pc + 1 : NULL;
        if (tag[0] && pc && *pc && *pc != ',') {
            char v[80];
            snprintf(v, sizeof(v), "%.*s", (int)SL_MIN(strcspn(pc, ","), 79), pc);
            s3_xel(x, tag, v);
        }
        sl_buf_adds(x, "</Part>");
        last = i;
        shown++;
    }
    bool more = sizes && last < n;
    sl_buf_printf(x, "<IsTruncated>%s</IsTruncated>", more ? "true" : "false");
    if (more)
        sl_buf_printf(x, "<NextPartNumberMarker>%ld</NextPartNumberMarker>", last);
    sl_buf_adds(x, "</ObjectParts>");
}

static void oattr_run(struct sl_req *r, void *arg)
{
    struct oattr *o = arg;
    struct sl_objmd md;
    struct sl_err err = { 0 };
    memset(&md, 0, sizeof(md));
    int st = sl_obj_stat(&o->b, o->key, o->klen, &md, NULL, &err);
    if (st == 0 || (st < 0 && (err.code == SL_ENOOBJ || err.code == SL_ENOENT))) {
        s3_err(r, 404, "NoSuchKey", "The specified key does not exist.");
    } else if (st < 0) {
        s3_err_sl(r, &err);
    } else {
        char t[64];
        s3_http_time(md.mtime, t, sizeof(t));
        sl_hdr_add(r, "Last-Modified", t);
        sl_hdr_add(r, "x-amz-version-id", "null");
        struct sl_buf x;
        sl_buf_init(&x);
        sl_buf_adds(&x, "<GetObjectAttributesResponse xmlns=\"" XMLNS "\">");
        if (o->want & A_ETAG)
            s3_xel(&x, "ETag", s3_obj_etag(&md));
        const char *xc = sl_objmd_get_custom(&md, S3_XC_KEY);
        if ((o->want & A_CKSUM) && xc)
            xc_xml(&x, xc, sl_objmd_get_custom(&md, "s3.mp") != NULL);
        if (o->want & A_PARTS)
            parts_xml(&x, o, &md);
        if (o->want & A_CLASS)
            s3_xel(&x, "StorageClass", "STANDARD");
        if (o->want & A_SIZE)
            sl_buf_printf(&x, "<ObjectSize>%llu</ObjectSize>", (unsigned long long)md.size);
        sl_buf_adds(&x, "</GetObjectAttributesResponse>");
        sl_objmd_free(&md);
        s3_xml(r, 200, &x);
    }
    oattr_free(o);
}

/* x-amz-object-attributes into bits: 0 when missing or empty, -1 an unknown name (in bad) */
static int attr_names(const char *h, unsigned *want, char *bad, size_t bn)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = { { "ETag", A_ETAG }, { "Checksum", A_CKSUM }, { "ObjectParts", A_PARTS },
                  { "StorageClass", A_CLASS }, { "ObjectSize", A_SIZE } };
    *want = 0;
    while (h && *h) {
        h += strspn(h, " \t,");
        size_t l = strcspn(h, ",");
        while (l && (h[l - 1] == ' ' || h[l - 1] == '\t'))
            l--;
        if (l) {
            size_t i;
            for (i = 0; i < SL_ARRAY_SIZE(names); i++)
                if (strlen(names[i].name) == l && !strncmp(names[i].name, h, l))
                    break;
            if (i == SL_ARRAY_SIZE(names)) {
                snprintf(bad, bn, "%.*s", (int)SL_MIN(l, 64), h);
                return -1;
            }
            *want |= names[i].bit;
        }
        h += l;
        h += strspn(h, " \t");
    }
    return 0;
}

static int hdr_num(struct sl_req *r, const char *name, long lo, long hi, long dflt, long *out)
{
    const char *v = sl_req_header(r, name);
    *out = dflt;
    if (!v)
        return 0;
    char *e;
    long n = strtol(v, &e, 10);
    if (!*v || *e || n < lo || n > hi) {
        s3_err(r, 400, "InvalidArgument", "%s: \"%.40s\" is not an integer from %ld to %ld", name, v, lo, hi);
        return -1;
    }
    *out = n;
    return 0;
}

void s3_obj_attributes(struct sl_req *r, const struct s3req *q, const struct sl_bck *b)
{
    if (r->method != SL_M_GET) {
        s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?attributes (GET reads them: "
               "GetObjectAttributes); nothing was read or changed", r->method_str);
        return;
    }
    unsigned want;
    char bad[80];
    if (attr_names(sl_req_header(r, "x-amz-object-attributes"), &want, bad, sizeof(bad)) < 0) {
        s3_err(r, 400, "InvalidArgument", "Invalid attribute name specified: \"%s\" (x-amz-object-attributes takes "
               "ETag, Checksum, ObjectParts, StorageClass, ObjectSize)", bad);
        return;
    }
    if (!want) {
        s3_err(r, 400, "InvalidArgument", "x-amz-object-attributes header specifying the attributes to be retrieved "
               "is either missing or empty (name some of ETag, Checksum, ObjectParts, StorageClass, ObjectSize)");
        return;
    }
    long max, marker;
    if (hdr_num(r, "x-amz-max-parts", 0, 1000000, 1000, &max) < 0 ||
        hdr_num(r, "x-amz-part-number-marker", 0, 10000, 0, &marker) < 0)
        return;
    struct oattr *o = sl_xcalloc(1, sizeof(*o));
    sl_bck_copy(&o->b, b);
    o->key = sl_xstrndup(q->key, q->klen);
    o->klen = q->klen;
    o->want = want;
    o->max_parts = max > 1000 ? 1000 : max;
    o->marker = marker;
    sl_req_offload(r, oattr_run, oattr_free, o);
}
