/* SPDX-License-Identifier: MIT
 * s3tag.c: tags of objects and buckets (spec s3.md; S3's PutObjectTagging,
 * GetObjectTagging, DeleteObjectTagging, the x-amz-tagging header of PUT,
 * CreateMultipartUpload and CopyObject, x-amz-tagging-directive, and the
 * bucket's ?tagging).
 *
 * An object's tags are custom metadata entries, one per tag, "s3.tag.N" =
 * "KEY=VALUE" with '%', '=', '&', '+', ',' and control bytes percent-encoded (native
 * readers see them as they see "s3.ct"); a bucket's are its props "tags",
 * one string of the same pairs joined by '&'. The limits are S3's: 10 tags
 * on an object, 50 on a bucket, keys of 1-128 characters, values of at most
 * 256, no key twice, none starting with "aws:".
 */
#include "s3.h"
#include "s3obj.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the pairs ---- */

static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += (*p & 0xC0) != 0x80;
    return n;
}

static void enc(struct sl_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '%' || *p == '=' || *p == '&' || *p == '+' || *p == ',' || *p < 0x20 || *p == 0x7f) {
            sl_buf_addc(b, '%');
            sl_buf_addc(b, hex[*p >> 4]);
            sl_buf_addc(b, hex[*p & 15]);
        } else {
            sl_buf_addc(b, (char)*p);
        }
    }
}

/* S3's limits on t (max tags: 10 an object, 50 a bucket). 0, or -1 with
 * why filled. */
static int check(const struct kvs *t, int max, char *why, size_t wn)
{
    if (t->n > max) {
        snprintf(why, wn, "%s tags cannot be greater than %d (%d were sent); nothing was changed",
                 max == S3_OBJ_TAGS_MAX ? "Object" : "Bucket", max, t->n);
        return -1;
    }
    for (int i = 0; i < t->n; i++) {
        size_t kc = utf8_chars(t->kv[i].k), vc = utf8_chars(t->kv[i].v);
        if (!kc || kc > 128) {
            snprintf(why, wn, "The TagKey you have provided is invalid: \"%.40s%s\" has %zu characters (1 to 128 "
                     "are allowed)", t->kv[i].k, kc > 40 ? "..." : "", kc);
            return -1;
        }
        if (vc > 256) {
            snprintf(why, wn, "The TagValue you have provided is invalid: the value of \"%.40s\" has %zu characters "
                     "(at most 256 are allowed)", t->kv[i].k, vc);
            return -1;
        }
        if (!strncasecmp(t->kv[i].k, "aws:", 4)) {
            snprintf(why, wn, "Your TagKey cannot be prefixed with aws: (\"%.40s\")", t->kv[i].k);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(t->kv[i].k, t->kv[j].k)) {
                snprintf(why, wn, "Cannot provide multiple Tags with the same key (\"%.40s\")", t->kv[i].k);
                return -1;
            }
    }
    return 0;
}

/* "k=v&k2=v2" into t, each part decoded (plus is a space when plus). */
static void split(const char *s, struct kvs *t, bool plus)
{
    while (s && *s) {
        size_t l = strcspn(s, "&");
        if (l) {
            const char *eq = memchr(s, '=', l);
            size_t kl = eq ? (size_t)(eq - s) : l;
            char *k = sl_xmalloc(kl + 1), *v = sl_xmalloc(l - kl + 1);
            sl_url_decode(s, kl, k, plus);
            sl_url_decode(eq ? eq + 1 : "", eq ? l - kl - 1 : 0, v, plus);
            s3_kv_add(t, k, v);
            free(k);
            free(v);
        }
        s += l;
        if (*s == '&')
            s++;
    }
}

int s3_tags_from_header(const char *h, int max, struct kvs *t, char *why, size_t wn)
{
    split(h, t, true);
    return check(t, max, why, wn);
}

struct tagx {
    struct kvs *t;
    char *key, *val;
    bool in_set, bad;
};

static void tagx_end(void *arg, const char *parent, const char *name, const char *text)
{
    struct tagx *x = arg;
    if (!strcmp(name, "Key") && !strcmp(parent, "Tag")) {
        free(x->key);
        x->key = sl_xstrdup(text);
    } else if (!strcmp(name, "Value") && !strcmp(parent, "Tag")) {
        free(x->val);
        x->val = sl_xstrdup(text);
    } else if (!strcmp(name, "Tag")) {
        if (!x->key || strcmp(parent, "TagSet"))
            x->bad = true;
        else
            s3_kv_add(x->t, x->key, x->val ? x->val : "");
        free(x->key);
        free(x->val);
        x->key = x->val = NULL;
    } else if (!strcmp(name, "TagSet")) {
        x->in_set = true;
    }
}

int s3_tags_from_xml(const char *body, size_t n, int max, struct kvs *t, const char **code, char *why, size_t wn)
{
    struct tagx x = { .t = t };
    int rc = s3_xml_parse(body, n, tagx_end, &x);
    free(x.key);
    free(x.val);
    if (rc < 0 || x.bad || !x.in_set) {
        *code = "MalformedXML";
        snprintf(why, wn, "The XML you provided was not well-formed or did not validate against our published "
                 "schema (a Tagging element holding a TagSet of Tag elements, each with a Key and a Value)");
        return -1;
    }
    *code = "InvalidTag";
    return check(t, max, why, wn);
}

void s3_tags_join(const struct kvs *t, struct sl_buf *out)
{
    for (int i = 0; i < t->n; i++) {
        if (i)
            sl_buf_addc(out, '&');
        enc(out, t->kv[i].k);
        sl_buf_addc(out, '=');
        enc(out, t->kv[i].v);
    }
    sl_buf_addc(out, 0);
    out->len--;
}

void s3_tags_custom(const struct kvs *t, struct kvs *custom)
{
    for (int i = 0; i < t->n; i++) {
        struct sl_buf b;
        sl_buf_init(&b);
        enc(&b, t->kv[i].k);
        sl_buf_addc(&b, '=');
        enc(&b, t->kv[i].v);
        sl_buf_addc(&b, 0);
        char k[32];
        snprintf(k, sizeof(k), S3_TAG_PFX "%d", i);
        s3_kv_add(custom, k, b.p);
        sl_buf_free(&b);
    }
}

void s3_tags_of_md(const struct sl_objmd *md, struct kvs *t)
{
    for (int i = 0; i < md->ncustom; i++)
        if (!strncmp(md->custom[i].k, S3_TAG_PFX, sizeof(S3_TAG_PFX) - 1))
            split(md->custom[i].v, t, false);
}

int s3_tags_count(const struct sl_objmd *md)
{
    int n = 0;
    for (int i = 0; i < md->ncustom; i++)
        n += !strncmp(md->custom[i].k, S3_TAG_PFX, sizeof(S3_TAG_PFX) - 1);
    return n;
}

void s3_tags_of_string(const char *s, struct kvs *t)
{
    split(s, t, false);
}

void s3_tags_xml(struct sl_req *r, const struct kvs *t)
{
    struct sl_buf x;
    sl_buf_init(&x);
    sl_buf_adds(&x, "<Tagging xmlns=\"" XMLNS "\"><TagSet>");
    for (int i = 0; i < t->n; i++) {
        sl_buf_adds(&x, "<Tag>");
        s3_xel(&x, "Key", t->kv[i].k);
        s3_xel(&x, "Value", t->kv[i].v);
        sl_buf_adds(&x, "</Tag>");
    }
    sl_buf_adds(&x, "</TagSet></Tagging>");
    s3_xml(r, 200, &x);
}

/* ---- ?tagging on an object (its target) ---- */

static void otag_get(struct sl_req *r, void *arg)
{
    struct s3objref *o = arg;
    struct sl_objmd md;
    if (s3_objref_stat(r, o, &md)) {
        struct kvs t = { 0 };
        s3_tags_of_md(&md, &t);
        s3_tags_xml(r, &t);
        s3_kv_free(&t);
        sl_objmd_free(&md);
    }
    s3_objref_free(o);
}

static void otag_set(struct sl_req *r, struct s3objref *o, const struct kvs *t, int ok_status)
{
    struct kvs c = { 0 };
    s3_tags_custom(t, &c);
    struct sl_err err = { 0 };
    if (sl_obj_set_custom_ns(&o->b, o->key, o->klen, c.kv, c.n, S3_TAG_PFX, &err) < 0)
        s3_objref_err(r, &err);
    else
        sl_resp_empty(r, ok_status);
    s3_kv_free(&c);
}

static void otag_put(struct sl_req *r, void *arg)
{
    struct s3objref *o = arg;
    struct kvs t = { 0 };
    const char *code;
    char why[256];
    if (s3_tags_from_xml(r->body.p ? r->body.p : "", r->body.len, S3_OBJ_TAGS_MAX, &t, &code, why, sizeof(why)) < 0)
        s3_err(r, 400, code, "%s", why);
    else
        otag_set(r, o, &t, 200);
    s3_kv_free(&t);
    s3_objref_free(o);
}

static void otag_put_body(struct sl_req *r)
{
    s3_body_offload(r, otag_put, s3_objref_free);
}

static void otag_delete(struct sl_req *r, void *arg)
{
    struct s3objref *o = arg;
    struct kvs none = { 0 };
    otag_set(r, o, &none, 204);
    s3_objref_free(o);
}

void s3_obj_tagging(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    struct s3req q = { .key = name, .klen = nlen };
    struct s3objref *o = s3_objref_new(b, &q);
    switch (r->method) {
    case SL_M_GET:
        sl_req_offload(r, otag_get, s3_objref_free, o);
        return;
    case SL_M_PUT:
        r->ctx = o;
        sl_req_buffer_body(r, 64 * 1024, otag_put_body);
        return;
    case SL_M_DELETE:
        sl_req_offload(r, otag_delete, s3_objref_free, o);
        return;
    default:
        s3_objref_free(o);
        s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?tagging (GET, PUT and DELETE are)", r->method_str);
    }
}

int s3_tagging_hdr(struct sl_req *r, struct kvs *custom)
{
    const char *h = sl_req_header(r, "x-amz-tagging");
    if (!h)
        return 0;
    struct kvs t = { 0 };
    char why[256];
    int rc = s3_tags_from_header(h, S3_OBJ_TAGS_MAX, &t, why, sizeof(why));
    if (rc < 0)
        s3_err(r, 400, "InvalidTag", "x-amz-tagging: %s", why);
    else
        s3_tags_custom(&t, custom);
    s3_kv_free(&t);
    return rc;
}
