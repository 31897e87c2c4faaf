/* SPDX-License-Identifier: MIT
 * s3cors.c: a bucket's CORS configuration (S3's PutBucketCors, GetBucketCors,
 * DeleteBucketCors), the preflight OPTIONS /s3/BUCKET[/KEY], and the
 * Access-Control-* headers of the actual requests whose Origin a rule allows.
 *
 * The configuration is the bucket's props "cors" (distributed with the BMD,
 * so every gateway and target answers from the same rules): "" none, else a
 * compact JSON array of rules [{"id","origins":[],"methods":[],"headers":[],
 * "expose":[],"max_age"}] (max_age -1 when not set). S3's limits: at most 100
 * rules, each with at least one AllowedOrigin and AllowedMethod (GET, PUT,
 * POST, DELETE, HEAD), at most one '*' in an AllowedOrigin or AllowedHeader,
 * an ID of at most 255 characters, a body of at most 64 KiB. Rules are tried
 * in order; the first that allows the origin, the method and every requested
 * header answers.
 */
#include "s3.h"
#include "s3obj.h"
#include "cluster.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CORS_RULES_MAX 100

static const char *const methods[] = { "GET", "PUT", "POST", "DELETE", "HEAD", NULL };

/* ---- the XML body ---- */

struct corsx {
    json_t *rules;         /* the rules so far */
    json_t *cur;           /* the rule being read */
    bool root, bad;
    char why[300];
    const char *code;      /* S3's code for why */
};

static void corsx_fail(struct corsx *x, const char *code, const char *fmt, const char *arg)
{
    if (x->bad)
        return;
    x->bad = true;
    x->code = code;
    snprintf(x->why, sizeof(x->why), fmt, arg);
}

static json_t *rule_new(void)
{
    return json_pack("{s:s,s:[],s:[],s:[],s:[],s:I}", "id", "", "origins", "methods", "headers", "expose", "max_age",
                     (json_int_t)-1);
}

static void corsx_end(void *arg, const char *parent, const char *name, const char *text)
{
    struct corsx *x = arg;
    if (!strcmp(name, "CORSConfiguration")) {
        x->root = true;
        return;
    }
    if (!strcmp(name, "CORSRule")) {
        if (strcmp(parent, "CORSConfiguration"))
            corsx_fail(x, "MalformedXML", "%s", "a CORSRule outside CORSConfiguration");
        if (!x->cur)
            x->cur = rule_new();
        if (!json_array_size(json_object_get(x->cur, "origins")) ||
            !json_array_size(json_object_get(x->cur, "methods")))
            corsx_fail(x, "MalformedXML", "%s", "every CORSRule needs at least one AllowedOrigin and one "
                       "AllowedMethod");
        json_array_append_new(x->rules, x->cur);
        x->cur = NULL;
        return;
    }
    if (strcmp(parent, "CORSRule"))
        return;
    if (!x->cur)
        x->cur = rule_new();
    const char *list = !strcmp(name, "AllowedOrigin") ? "origins" : !strcmp(name, "AllowedMethod") ? "methods" :
                       !strcmp(name, "AllowedHeader") ? "headers" : !strcmp(name, "ExposeHeader") ? "expose" : NULL;
    if (list) {
        const char *star = strchr(text, '*');
        if (!strcmp(list, "methods")) {
            int i;
            for (i = 0; methods[i] && strcmp(methods[i], text); i++)
                ;
            if (!methods[i])
                corsx_fail(x, "InvalidRequest", "Found unsupported HTTP method in CORS config. Unsupported method "
                           "is \"%.60s\" (GET, PUT, POST, DELETE and HEAD are allowed); nothing was changed", text);
        } else if (!strcmp(list, "origins") || !strcmp(list, "headers")) {
            if (star && strchr(star + 1, '*'))
                corsx_fail(x, "InvalidRequest", !strcmp(list, "origins") ?
                           "AllowedOrigin \"%.100s\" can not have more than one wildcard; nothing was changed" :
                           "AllowedHeader \"%.100s\" can not have more than one wildcard; nothing was changed", text);
        }
        if (!*text)
            corsx_fail(x, "MalformedXML", "an empty %s", name);
        json_array_append_new(json_object_get(x->cur, list), json_string(text));
    } else if (!strcmp(name, "MaxAgeSeconds")) {
        char *e;
        long long v = strtoll(text, &e, 10);
        if (!*text || *e || v < 0 || v > 2147483647LL)
            corsx_fail(x, "MalformedXML", "MaxAgeSeconds \"%.40s\" is not a non-negative integer", text);
        json_object_set_new(x->cur, "max_age", json_integer(v));
    } else if (!strcmp(name, "ID")) {
        if (strlen(text) > 255)
            corsx_fail(x, "InvalidArgument", "%s", "a CORSRule ID can be at most 255 characters; nothing was changed");
        json_object_set_new(x->cur, "id", json_string(text));
    }
}

/* A CORSConfiguration body as the compact JSON kept in props "cors"
 * (owned), or NULL with code and why */
static char *cors_from_xml(const char *body, size_t n, const char **code, char *why, size_t wn)
{
    struct corsx x = { .rules = json_array() };
    int rc = s3_xml_parse(body, n, corsx_end, &x);
    json_decref(x.cur);
    char *out = NULL;
    if (rc < 0 || !x.root) {
        *code = "MalformedXML";
        snprintf(why, wn, "The XML you provided was not well-formed or did not validate against our published "
                 "schema (a CORSConfiguration of CORSRule elements); nothing was changed");
    } else if (x.bad) {
        *code = x.code;
        snprintf(why, wn, "%s", x.why);
        if (!strcmp(x.code, "MalformedXML"))
            snprintf(why, wn, "The XML you provided was not well-formed or did not validate against our published "
                     "schema: %.200s; nothing was changed", x.why);
    } else if (!json_array_size(x.rules) || json_array_size(x.rules) > CORS_RULES_MAX) {
        *code = "MalformedXML";
        snprintf(why, wn, "The XML you provided was not well-formed or did not validate against our published "
                 "schema: a CORSConfiguration holds 1 to %d CORSRule elements (it had %zu); nothing was changed",
                 CORS_RULES_MAX, json_array_size(x.rules));
    } else {
        out = json_dumps(x.rules, JSON_COMPACT);
    }
    json_decref(x.rules);
    return out;
}

/* the bucket's rules (owned), NULL when it has none */
static json_t *bck_rules(const struct sl_bck *b)
{
    const char *s = json_string_value(json_object_get(b->props, "cors"));
    if (!s || !*s)
        return NULL;
    json_t *v = json_loads(s, 0, NULL);
    if (!json_is_array(v) || !json_array_size(v)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

static void xel_list(struct sl_buf *x, const char *tag, json_t *a)
{
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e)
        s3_xel(x, tag, json_string_value(e) ? json_string_value(e) : "");
}

static void get_cors(struct sl_req *r, const struct sl_bck *b)
{
    json_t *rules = bck_rules(b);
    if (!rules) {
        s3_err(r, 404, "NoSuchCORSConfiguration", "The CORS configuration does not exist (bucket %s has none; "
               "PutBucketCors sets one)", b->name);
        return;
    }
    struct sl_buf x;
    sl_buf_init(&x);
    sl_buf_adds(&x, "<CORSConfiguration xmlns=\"" XMLNS "\">");
    size_t i;
    json_t *ru;
    json_array_foreach(rules, i, ru) {
        sl_buf_adds(&x, "<CORSRule>");
        const char *id = json_string_value(json_object_get(ru, "id"));
        if (id && *id)
            s3_xel(&x, "ID", id);
        xel_list(&x, "AllowedHeader", json_object_get(ru, "headers"));
        xel_list(&x, "AllowedMethod", json_object_get(ru, "methods"));
        xel_list(&x, "AllowedOrigin", json_object_get(ru, "origins"));
        xel_list(&x, "ExposeHeader", json_object_get(ru, "expose"));
        json_int_t age = json_integer_value(json_object_get(ru, "max_age"));
        if (json_object_get(ru, "max_age") && age >= 0)
            sl_buf_printf(&x, "<MaxAgeSeconds>%lld</MaxAgeSeconds>", (long long)age);
        sl_buf_adds(&x, "</CORSRule>");
    }
    sl_buf_adds(&x, "</CORSConfiguration>");
    json_decref(rules);
    s3_xml(r, 200, &x);
}

static void put_cors(struct sl_req *r, void *arg)
{
    struct sl_bck *b = arg;
    const char *code = "MalformedXML";
    char why[400];
    char *j = cors_from_xml(r->body.p ? r->body.p : "", r->body.len, &code, why, sizeof(why));
    if (!j)
        s3_err(r, 400, code, "%s", why);
    else
        s3_bck_prop_set(r, b->name, "cors", j, 200);
    free(j);
    sl_bck_release(b);
    free(b);
}

static void bck_free(void *p)
{
    if (p)
        sl_bck_release(p);
    free(p);
}

static void put_cors_body(struct sl_req *r)
{
    s3_body_offload(r, put_cors, bck_free);
}

static void delete_cors(struct sl_req *r, void *arg)
{
    struct sl_bck *b = arg;
    s3_bck_prop_set(r, b->name, "cors", "", 204);
    bck_free(b);
}

void s3_bck_cors(struct sl_req *r, const struct sl_bck *b)
{
    struct sl_bck *c;
    switch (r->method) {
    case SL_M_GET:
        get_cors(r, b);
        return;
    case SL_M_PUT:
        c = sl_xmalloc(sizeof(*c));
        sl_bck_copy(c, b);
        r->ctx = c;
        sl_req_buffer_body(r, 64 * 1024, put_cors_body);
        return;
    case SL_M_DELETE:
        c = sl_xmalloc(sizeof(*c));
        sl_bck_copy(c, b);
        sl_req_offload(r, delete_cors, bck_free, c);
        return;
    default:
        s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?cors (GET, PUT and DELETE are)", r->method_str);
    }
}

/* ---- matching ---- */

/* s against a pattern with at most one '*' */
static bool wild(const char *pat, const char *s, bool icase)
{
    const char *star = strchr(pat, '*');
    if (!star)
        return icase ? !strcasecmp(pat, s) : !strcmp(pat, s);
    size_t pl = (size_t)(star - pat), sl = strlen(star + 1), n = strlen(s);
    if (n < pl + sl)
        return false;
    if (icase)
        return !strncasecmp(pat, s, pl) && !strcasecmp(star + 1, s + n - sl);
    return !strncmp(pat, s, pl) && !strcmp(star + 1, s + n - sl);
}

static bool any(json_t *a, const char *s, bool icase)
{
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e)
        if (json_string_value(e) && wild(json_string_value(e), s, icase))
            return true;
    return false;
}

/* every header of a comma-separated list allowed by the rule */
static bool headers_ok(json_t *ru, const char *list)
{
    json_t *allowed = json_object_get(ru, "headers");
    while (list && *list) {
        list += strspn(list, " \t,");
        size_t l = strcspn(list, ",");
        while (l && (list[l - 1] == ' ' || list[l - 1] == '\t'))
            l--;
        if (l) {
            char h[256];
            snprintf(h, sizeof(h), "%.*s", (int)SL_MIN(l, sizeof(h) - 1), list);
            if (!any(allowed, h, true))
                return false;
        }
        list += l;
        list += strspn(list, " \t");
    }
    return true;
}

static json_t *match(json_t *rules, const char *origin, const char *method, const char *hdrs)
{
    size_t i;
    json_t *ru;
    json_array_foreach(rules, i, ru)
        if (any(json_object_get(ru, "origins"), origin, false) && any(json_object_get(ru, "methods"), method, false) &&
            headers_ok(ru, hdrs))
            return ru;
    return NULL;
}

static void join(struct sl_buf *b, json_t *a)
{
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        if (i)
            sl_buf_adds(b, ", ");
        sl_buf_adds(b, json_string_value(e) ? json_string_value(e) : "");
    }
    sl_buf_addc(b, 0);
    b->len--;
}

/* the headers of a rule that allowed origin (hdrs: the requested ones, a preflight's) */
static void allow_hdrs(struct sl_req *r, json_t *ru, const char *origin, const char *hdrs)
{
    /* a rule of AllowedOrigin "*" allows every origin: "*" answers, without credentials */
    bool star = false;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(ru, "origins"), i, e)
        if (json_string_value(e) && !strcmp(json_string_value(e), "*"))
            star = true;
    sl_hdr_add(r, "Access-Control-Allow-Origin", star ? "*" : origin);
    if (!star)
        sl_hdr_add(r, "Access-Control-Allow-Credentials", "true");
    struct sl_buf b;
    sl_buf_init(&b);
    join(&b, json_object_get(ru, "methods"));
    sl_hdr_add(r, "Access-Control-Allow-Methods", b.p ? b.p : "");
    sl_buf_reset(&b);
    if (json_array_size(json_object_get(ru, "expose"))) {
        join(&b, json_object_get(ru, "expose"));
        sl_hdr_add(r, "Access-Control-Expose-Headers", b.p);
    }
    sl_buf_free(&b);
    if (hdrs && *hdrs)
        sl_hdr_add(r, "Access-Control-Allow-Headers", hdrs);
    json_int_t age = json_integer_value(json_object_get(ru, "max_age"));
    if (json_object_get(ru, "max_age") && age >= 0)
        sl_hdr_addf(r, "Access-Control-Max-Age", "%lld", (long long)age);
}

void s3_cors_preflight(struct sl_req *r, const char *bucket)
{
    const char *origin = sl_req_header(r, "Origin");
    const char *m = sl_req_header(r, "Access-Control-Request-Method");
    const char *hdrs = sl_req_header(r, "Access-Control-Request-Headers");
    if (!*bucket) {
        s3_err(r, 400, "BadRequest", "OPTIONS needs a bucket (OPTIONS /s3/BUCKET[/KEY]): CORS is configured per "
               "bucket");
        return;
    }
    if (!origin || !*origin) {
        s3_err(r, 400, "BadRequest", "Insufficient information. Origin request header needed.");
        return;
    }
    int i;
    for (i = 0; m && methods[i] && strcmp(methods[i], m); i++)
        ;
    if (!m || !methods[i]) {
        s3_err(r, 400, "BadRequest", "Invalid Access-Control-Request-Method: %s (a preflight names one of GET, PUT, "
               "POST, DELETE, HEAD)", m ? m : "null");
        return;
    }
    struct sl_bck b;
    struct sl_err err = { 0 };
    if (sl_bck_resolve(bucket, "ais", NULL, &b, &err) < 0) {
        if (err.code == SL_ENOBCK || err.code == SL_EINVAL)
            s3_err(r, 404, "NoSuchBucket", "The specified bucket does not exist: %s", bucket);
        else
            s3_err_sl(r, &err);
        return;
    }
    json_t *rules = bck_rules(&b);
    sl_hdr_add(r, "Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method");
    json_t *ru = rules ? match(rules, origin, m, hdrs) : NULL;
    if (!rules)
        s3_err(r, 403, "AccessForbidden", "CORSResponse: CORS is not enabled for this bucket (%s has no CORS "
               "configuration; PutBucketCors sets one).", b.name);
    else if (!ru)
        s3_err(r, 403, "AccessForbidden", "CORSResponse: This CORS request is not allowed. This is usually because "
               "the evalution of Origin, request method / Access-Control-Request-Method or "
               "Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.");
    else {
        allow_hdrs(r, ru, origin, hdrs);
        sl_resp_empty(r, 200);
    }
    json_decref(rules);
    sl_bck_release(&b);
}

void s3_cors_actual(struct sl_req *r, const struct sl_bck *b)
{
    const char *origin = sl_req_header(r, "Origin");
    if (!origin || !*origin)
        return;
    json_t *rules = bck_rules(b);
    if (!rules)
        return;
    sl_hdr_add(r, "Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method");
    json_t *ru = match(rules, origin, r->method_str, NULL);
    if (ru)
        allow_hdrs(r, ru, origin, NULL);
    json_decref(rules);
}
