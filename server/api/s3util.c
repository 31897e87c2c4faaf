/* SPDX-License-Identifier: MIT
 * s3util.c: what every part of the S3 front end answers with: S3's XML
 * errors, XML out and in (expat), S3's time formats, the one ACL. See s3.h.
 */
#include "s3.h"
#include "node.h"
#include "peer.h"
#include "s3obj.h"
#include "store.h"

#include <expat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- XML out ---- */

void s3_xml_esc(struct sl_buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '&': sl_buf_adds(b, "&amp;"); break;
        case '<': sl_buf_adds(b, "&lt;"); break;
        case '>': sl_buf_adds(b, "&gt;"); break;
        case '"': sl_buf_adds(b, "&quot;"); break;
        case '\'': sl_buf_adds(b, "&apos;"); break;
        default:
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
                sl_buf_printf(b, "&#x%X;", c); /* XML 1.0 cannot carry these: use encoding-type=url */
            else
                sl_buf_addc(b, (char)c);
        }
    }
}

void s3_xel(struct sl_buf *b, const char *tag, const char *v)
{
    sl_buf_printf(b, "<%s>", tag);
    s3_xml_esc(b, v, strlen(v));
    sl_buf_printf(b, "</%s>", tag);
}

void s3_xml(struct sl_req *r, int status, struct sl_buf *body)
{
    struct sl_buf out;
    sl_buf_init(&out);
    sl_buf_adds(&out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    sl_buf_add(&out, body->p, body->len);
    sl_buf_free(body);
    size_t n = out.len;
    sl_resp_bytes_owned(r, status, "application/xml", sl_buf_steal(&out), n);
}

void s3_err(struct sl_req *r, int status, const char *code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (r->method == SL_M_HEAD) {
        sl_resp_head(r, status, 0);
        return;
    }
    struct sl_buf b;
    sl_buf_init(&b);
    sl_buf_adds(&b, "<Error>");
    s3_xel(&b, "Code", code);
    s3_xel(&b, "Message", msg);
    const char *res = r->path + (sl_req_path_is(r, "/s3") ? 3 : 0);
    sl_buf_adds(&b, "<Resource>");
    s3_xml_esc(&b, res, strlen(res));
    sl_buf_adds(&b, "</Resource>");
    s3_xel(&b, "RequestId", r->reqid);
    sl_buf_adds(&b, "</Error>");
    s3_xml(r, status, &b);
}

void s3_err_sl(struct sl_req *r, const struct sl_err *e)
{
    static const struct {
        int code;
        const char *s3;
    } m[] = { { SL_EINVAL, "InvalidArgument" },       { SL_ENOBCK, "NoSuchBucket" },
              { SL_ENOOBJ, "NoSuchKey" },             { SL_ENOENT, "NoSuchKey" },
              { SL_EMETHOD, "MethodNotAllowed" },     { SL_EBCKEXIST, "BucketAlreadyOwnedByYou" },
              { SL_EEXIST, "OperationAborted" },      { SL_EBUSY, "OperationAborted" },
              { SL_ETOOBIG, "EntityTooLarge" },       { SL_ERANGE, "InvalidRange" },
              { SL_EFORBIDDEN, "AccessDenied" },      { SL_EUNSUPP, "NotImplemented" },
              { SL_EUNAVAIL, "ServiceUnavailable" },  { SL_ETIMEOUT, "RequestTimeout" },
              { SL_ENOSPC, "InsufficientStorage" } };
    const char *code = "InternalError";
    for (size_t i = 0; i < SL_ARRAY_SIZE(m); i++)
        if (m[i].code == e->code)
            code = m[i].s3;
    s3_err(r, sl_err_status(e->code), code, "%s", e->msg);
}

void s3_iso_time(int64_t ns, char *out, size_t n)
{
    sl_format_gotime(ns, "2006-01-02T15:04:05.000Z07:00", out, n);
}

void s3_http_time(int64_t ns, char *out, size_t n)
{
    time_t t = (time_t)(ns / 1000000000LL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

int64_t s3_parse_http_time(const char *s)
{
    static const char *const fmts[] = { "%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT",
                                        "%a %b %d %H:%M:%S %Y", "%Y-%m-%dT%H:%M:%S" };
    for (size_t i = 0; i < SL_ARRAY_SIZE(fmts); i++) {
        struct tm tm;
        memset(&tm, 0, sizeof(tm));
        const char *e = strptime(s, fmts[i], &tm);
        if (e && (!*e || *e == 'Z' || *e == '.'))
            return (int64_t)timegm(&tm);
    }
    return -1;
}

/* ---- XML in (expat) ---- */

struct xin {
    char stack[8][64];
    int depth;
    struct sl_buf text;
    bool bad;
    void (*on_end)(void *arg, const char *parent, const char *name, const char *text);
    void *arg;
};

static const char *local_name(const char *n)
{
    const char *c = strrchr(n, ' '); /* "namespace name" with the namespace separator */
    return c ? c + 1 : n;
}

static void XMLCALL xin_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    (void)atts;
    struct xin *x = ud;
    if (x->depth >= 8) {
        x->bad = true;
        return;
    }
    snprintf(x->stack[x->depth++], 64, "%s", local_name(name));
    x->text.len = 0;
}

static void XMLCALL xin_end(void *ud, const XML_Char *name)
{
    (void)name;
    struct xin *x = ud;
    if (x->depth <= 0 || x->depth > 8)
        return;
    sl_buf_addc(&x->text, 0);
    x->text.len--;
    x->depth--;
    x->on_end(x->arg, x->depth ? x->stack[x->depth - 1] : "", x->stack[x->depth], x->text.p);
    x->text.len = 0;
}

static void XMLCALL xin_chars(void *ud, const XML_Char *s, int len)
{
    struct xin *x = ud;
    if (x->text.len + (size_t)len > 64 * 1024) {
        x->bad = true;
        return;
    }
    sl_buf_add(&x->text, s, (size_t)len);
}

/* Parse body; on_end gets every element's end with its parent's name and
 * its text. -1 on malformed XML. */
int s3_xml_parse(const char *body, size_t n, void (*on_end)(void *, const char *, const char *, const char *),
                 void *arg)
{
    XML_Parser p = XML_ParserCreateNS(NULL, ' ');
    if (!p)
        return -1;
    struct xin x = { .on_end = on_end, .arg = arg };
    sl_buf_init(&x.text);
    XML_SetUserData(p, &x);
    XML_SetElementHandler(p, xin_start, xin_end);
    XML_SetCharacterDataHandler(p, xin_chars);
    int ok = XML_Parse(p, body, (int)n, 1) == XML_STATUS_OK && !x.bad;
    XML_ParserFree(p);
    sl_buf_free(&x.text);
    return ok ? 0 : -1;
}

void s3_owner_xml(struct sl_buf *b)
{
    sl_buf_adds(b, "<Owner><ID>shale</ID><DisplayName>shale</DisplayName></Owner>");
}

void s3_primary_bck_call(struct sl_req *r, const char *method, const char *bucket, json_t *msg, int ok_status)
{
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *p = sl_smap_primary(s);
    char *url = sl_xasprintf("%s/v1/buckets/%s", p ? p->url : G.self.url, bucket);
    sl_smap_put(s);
    struct sl_peer_resp pr = { 0 };
    if (sl_peer_json(method, url, msg, 0, &pr) < 0)
        s3_err(r, 503, "ServiceUnavailable", "the primary gateway did not answer: %s", pr.err);
    else if (pr.status >= 300)
        s3_err(r, (int)pr.status, pr.status == 404 ? "NoSuchBucket" : "InternalError", "%s", pr.err);
    else
        sl_resp_empty(r, ok_status);
    sl_peer_resp_free(&pr);
    free(url);
}

/* ---- a bucket's props, set on the primary (distributed with the BMD) ---- */

void s3_bck_prop_set(struct sl_req *r, const char *bucket, const char *prop, const char *value, int ok_status)
{
    s3_primary_bck_call(r, "PATCH", bucket, json_pack("{s:s,s:{s:s}}", "action", "set-bprops", "value", prop, value),
                        ok_status);
}

/* ---- listing entries (s3.c ListObjects, s3ver.c ListObjectVersions) ---- */

static void url_enc(struct sl_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~' || c == '/') {
            sl_buf_addc(b, (char)c);
        } else {
            sl_buf_addc(b, '%');
            sl_buf_addc(b, hex[c >> 4]);
            sl_buf_addc(b, hex[c & 15]);
        }
    }
}

void s3_xel_key(struct sl_buf *b, const char *tag, const char *v, size_t n, bool url)
{
    sl_buf_printf(b, "<%s>", tag);
    if (url) {
        struct sl_buf e;
        sl_buf_init(&e);
        url_enc(&e, v, n);
        s3_xml_esc(b, e.p ? e.p : "", e.len);
        sl_buf_free(&e);
    } else {
        s3_xml_esc(b, v, n);
    }
    sl_buf_printf(b, "</%s>", tag);
}

/* The ETag of a listed object: custom "ETag" (an S3 PUT's MD5), else its
 * own checksum (objects written natively) */
void s3_entry_etag(const struct sl_lsent *e, char *out, size_t n)
{
    out[0] = 0;
    const char *c = e->custom ? strstr(e->custom, "ETag:") : NULL;
    if (c && (c == e->custom + 1 || c[-1] == ' ')) {
        c += 5;
        size_t l = strcspn(c, " ]");
        snprintf(out, n, "%.*s", (int)SL_MIN(l, n - 1), c);
    } else if (e->cksum) {
        snprintf(out, n, "%s", e->cksum);
    }
}

/* ---- an object's sub-resource worked on its target ---- */

struct s3objref *s3_objref_new(const struct sl_bck *b, const struct s3req *q)
{
    struct s3objref *o = sl_xcalloc(1, sizeof(*o));
    sl_bck_copy(&o->b, b);
    o->key = sl_xstrndup(q->key, q->klen);
    o->klen = q->klen;
    return o;
}

void s3_objref_free(void *arg)
{
    struct s3objref *o = arg;
    sl_bck_release(&o->b);
    free(o->key);
    free(o);
}

void s3_objref_err(struct sl_req *r, const struct sl_err *err)
{
    if (err->code == SL_ENOOBJ || err->code == SL_ENOENT)
        s3_err(r, 404, "NoSuchKey", "The specified key does not exist.");
    else
        s3_err_sl(r, err);
}

int s3_objref_stat(struct sl_req *r, const struct s3objref *o, struct sl_objmd *md)
{
    struct sl_err err = { 0 };
    memset(md, 0, sizeof(*md));
    int st = sl_obj_stat(&o->b, o->key, o->klen, md, NULL, &err);
    if (st > 0)
        return 1;
    if (st == 0)
        err.code = SL_ENOOBJ;
    s3_objref_err(r, &err);
    return 0;
}
