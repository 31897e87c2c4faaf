/* SPDX-License-Identifier: MIT
 * s3life.c: a bucket's lifecycle configuration (S3's
 * PutBucketLifecycleConfiguration, GetBucketLifecycleConfiguration,
 * DeleteBucketLifecycle: PUT, GET and DELETE ?lifecycle).
 *
 * The XML is checked as S3 checks it (MalformedXML, InvalidArgument,
 * InvalidRequest; 1 to 1000 rules) and kept in the bucket's props
 * "lifecycle" as JSON text (so it travels with the BMD to every node and
 * survives restarts):
 *
 *   {"rules": [{"id", "status": "Enabled"|"Disabled",
 *               "filter": {"form": "legacy"|"empty"|"prefix"|"tag"|"and"|"gt"|"lt",
 *                          "prefix"?, "tags"?: {K: V}, "gt"?, "lt"?},
 *               "expiration"?: {"days"} | {"date", "at" (unix s)} | {"expired_object_delete_marker"},
 *               "noncurrent_version_expiration"?: {"noncurrent_days", "newer_noncurrent_versions"?},
 *               "abort_incomplete_multipart_upload"?: {"days_after_initiation"}}]}
 *
 * Job lifecycle (server/jobs/lifecycle.c) applies it on every target.
 * Transitions are refused (501): Shale has one storage class.
 */
#include "s3.h"
#include "s3obj.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LC_RULES_MAX 1000

/* ---- the XML ---- */

struct lrule {
    char *id, *status, *rprefix, *fprefix, *aprefix, *tkey, *tval, *date;
    int n_id, n_status, n_rprefix, n_filter, fkids, n_and, akids;
    json_t *tags;               /* of the filter (one) or its And */
    int ntags;
    bool dup_tag;
    long long gt, lt;
    int n_gt, n_lt;
    int n_exp, exp_kids, n_days, n_date, n_eodm;
    long long days;
    bool eodm;
    int n_nve, n_ncdays, n_newer;
    long long ncdays, newer;
    int n_abort, n_adays;
    long long adays;
};

struct lcx {
    json_t *rules;
    struct lrule cur;
    int n_root;
    const char *code;           /* the first error's */
    int status;
    char why[400];
};

static void lrule_clear(struct lrule *u)
{
    free(u->id);
    free(u->status);
    free(u->rprefix);
    free(u->fprefix);
    free(u->aprefix);
    free(u->tkey);
    free(u->tval);
    free(u->date);
    json_decref(u->tags);
    memset(u, 0, sizeof(*u));
}

static void lc_fail(struct lcx *x, int status, const char *code, const char *fmt, ...) SL_PRINTF(4, 5);
static void lc_fail(struct lcx *x, int status, const char *code, const char *fmt, ...)
{
    if (x->code)
        return;
    x->code = code;
    x->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->why, sizeof(x->why), fmt, ap);
    va_end(ap);
}

static void malformed(struct lcx *x, const char *what)
{
    lc_fail(x, 400, "MalformedXML", "The XML you provided was not well-formed or did not validate against our "
            "published schema: %s", what);
}

/* an integer element's text; false (MalformedXML said) if it is not one */
static bool lc_int(struct lcx *x, const char *name, const char *text, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (!*text || *end || errno) {
        char w[160];
        snprintf(w, sizeof(w), "%s must be an integer (\"%.40s\")", name, text);
        malformed(x, w);
        return false;
    }
    *out = v;
    return true;
}

static void set_str(char **dst, const char *text)
{
    free(*dst);
    *dst = sl_xstrdup(text);
}

static void lc_tag(struct lcx *x, struct lrule *u)
{
    if (!u->tkey) {
        malformed(x, "a Tag needs a Key");
        return;
    }
    if (!u->tags)
        u->tags = json_object();
    if (json_object_get(u->tags, u->tkey))
        u->dup_tag = true;
    json_object_set_new(u->tags, u->tkey, json_string(u->tval ? u->tval : ""));
    u->ntags++;
    free(u->tkey);
    free(u->tval);
    u->tkey = u->tval = NULL;
}

/* ISO 8601 at midnight UTC ("2026-12-31T00:00:00Z", ".000Z", "+00:00") -> unix s; -1 not a date, -2 not midnight */
static long long lc_date(const char *s)
{
    int y, mo, d, h, mi, se, n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &n) != 6 || n < 19)
        return -1;
    const char *p = s + n;
    bool frac0 = true;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return -1;
        for (; *p >= '0' && *p <= '9'; p++)
            frac0 &= *p == '0';
    }
    if (strcmp(p, "Z") && strcmp(p, "+00:00") && *p)
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return -1;
    struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = se };
    long long t = (long long)timegm(&tm);
    if (h || mi || se || !frac0)
        return -2;
    return t;
}

static void lc_rule_end(struct lcx *x)
{
    struct lrule *u = &x->cur;
    char w[300];
    if (x->code)
        return;
    if (u->n_id > 1 || u->n_status != 1 || u->n_filter > 1 || u->n_rprefix > 1 || u->n_exp > 1 || u->n_nve > 1 ||
        u->n_abort > 1) {
        malformed(x, u->n_status != 1 ? "each Rule has one Status" : "an element of a Rule appears twice");
        return;
    }
    if (strcmp(u->status, "Enabled") && strcmp(u->status, "Disabled")) {
        snprintf(w, sizeof(w), "Status is Enabled or Disabled (\"%.40s\")", u->status);
        malformed(x, w);
        return;
    }
    if (u->n_filter && u->n_rprefix) {
        malformed(x, "a Rule has a Filter or a Prefix, not both");
        return;
    }
    if (!u->n_filter && !u->n_rprefix) {
        malformed(x, "a Rule needs a Filter (or the older Prefix)");
        return;
    }
    if (u->fkids > 1) {
        malformed(x, "a Filter holds one of Prefix, Tag, ObjectSizeGreaterThan, ObjectSizeLessThan or And (And "
                  "combines several)");
        return;
    }
    if (u->id && strlen(u->id) > 255) {
        lc_fail(x, 400, "InvalidArgument", "ID length should not exceed allowed limit of 255 (\"%.40s...\")", u->id);
        return;
    }
    if (u->dup_tag) {
        lc_fail(x, 400, "InvalidRequest", "Duplicate Tag Keys are not allowed (rule \"%.60s\")", u->id ? u->id : "");
        return;
    }
    if (u->n_gt && u->n_lt && u->gt >= u->lt) {
        lc_fail(x, 400, "InvalidArgument", "ObjectSizeGreaterThan (%lld) must be less than ObjectSizeLessThan (%lld)",
                u->gt, u->lt);
        return;
    }
    if ((u->n_gt && u->gt < 0) || (u->n_lt && u->lt <= 0)) {
        lc_fail(x, 400, "InvalidArgument", "ObjectSizeGreaterThan must be 0 or more and ObjectSizeLessThan more than "
                "0 (bytes)");
        return;
    }
    if (!u->n_exp && !u->n_nve && !u->n_abort) {
        lc_fail(x, 400, "InvalidRequest", "At least one action needs to be specified in a rule (Expiration, "
                "NoncurrentVersionExpiration or AbortIncompleteMultipartUpload; rule \"%.60s\")", u->id ? u->id : "");
        return;
    }
    json_t *r = json_object();
    if (u->id && *u->id) {
        json_object_set_new(r, "id", json_string(u->id));
    } else { /* S3 makes one up */
        char id[33];
        sl_rand_id(id, 32);
        json_object_set_new(r, "id", json_string(id));
    }
    json_object_set_new(r, "status", json_string(u->status));
    json_t *f = json_object();
    const char *form = u->n_rprefix ? "legacy" : u->n_and ? "and" : u->fprefix ? "prefix" : u->ntags ? "tag" :
                       u->n_gt ? "gt" : u->n_lt ? "lt" : "empty";
    json_object_set_new(f, "form", json_string(form));
    const char *pfx = u->n_rprefix ? u->rprefix : u->n_and ? u->aprefix : u->fprefix;
    if (pfx)
        json_object_set_new(f, "prefix", json_string(pfx));
    if (u->tags)
        json_object_set(f, "tags", u->tags);
    if (u->n_gt)
        json_object_set_new(f, "gt", json_integer(u->gt));
    if (u->n_lt)
        json_object_set_new(f, "lt", json_integer(u->lt));
    json_object_set_new(r, "filter", f);
    if (u->n_exp) {
        if (u->exp_kids != 1 || u->n_days > 1 || u->n_date > 1 || u->n_eodm > 1) {
            json_decref(r);
            malformed(x, "an Expiration holds one of Days, Date or ExpiredObjectDeleteMarker");
            return;
        }
        if (u->n_days && u->days <= 0) {
            json_decref(r);
            lc_fail(x, 400, "InvalidArgument", "'Days' for Expiration action must be a positive integer (%lld)",
                    u->days);
            return;
        }
        if (u->n_eodm && u->ntags) {
            json_decref(r);
            lc_fail(x, 400, "InvalidRequest", "ExpiredObjectDeleteMarker cannot be specified with tags");
            return;
        }
        json_t *e = json_object();
        if (u->n_days) {
            json_object_set_new(e, "days", json_integer(u->days));
        } else if (u->n_date) {
            long long t = lc_date(u->date);
            if (t < 0) {
                json_decref(e);
                json_decref(r);
                if (t == -2)
                    lc_fail(x, 400, "InvalidArgument", "'Date' must be at midnight GMT (\"%.40s\")", u->date);
                else
                    lc_fail(x, 400, "InvalidArgument", "Invalid date \"%.40s\": 'Date' is ISO 8601 at midnight GMT "
                            "(2026-12-31T00:00:00Z)", u->date);
                return;
            }
            char iso[64];
            s3_iso_time(t * 1000000000LL, iso, sizeof(iso));
            json_object_set_new(e, "date", json_string(iso));
            json_object_set_new(e, "at", json_integer(t));
        } else {
            json_object_set_new(e, "expired_object_delete_marker", json_boolean(u->eodm));
        }
        json_object_set_new(r, "expiration", e);
    }
    if (u->n_nve) {
        if (u->n_ncdays != 1 || u->n_newer > 1) {
            json_decref(r);
            malformed(x, "a NoncurrentVersionExpiration holds one NoncurrentDays");
            return;
        }
        if (u->ncdays <= 0 || (u->n_newer && (u->newer < 1 || u->newer > 100))) {
            json_decref(r);
            lc_fail(x, 400, "InvalidArgument", "'NoncurrentDays' for NoncurrentVersionExpiration action must be a "
                    "positive integer, NewerNoncurrentVersions 1 to 100");
            return;
        }
        json_t *e = json_pack("{s:I}", "noncurrent_days", (json_int_t)u->ncdays);
        if (u->n_newer)
            json_object_set_new(e, "newer_noncurrent_versions", json_integer(u->newer));
        json_object_set_new(r, "noncurrent_version_expiration", e);
    }
    if (u->n_abort) {
        if (u->n_adays != 1) {
            json_decref(r);
            malformed(x, "an AbortIncompleteMultipartUpload holds one DaysAfterInitiation");
            return;
        }
        if (u->adays <= 0) {
            json_decref(r);
            lc_fail(x, 400, "InvalidArgument", "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must "
                    "be a positive integer (%lld)", u->adays);
            return;
        }
        if (u->ntags) {
            json_decref(r);
            lc_fail(x, 400, "InvalidRequest", "AbortIncompleteMultipartUpload cannot be specified with Tags (rule "
                    "\"%.60s\")", u->id ? u->id : "");
            return;
        }
        json_object_set_new(r, "abort_incomplete_multipart_upload",
                            json_pack("{s:I}", "days_after_initiation", (json_int_t)u->adays));
    }
    size_t i;
    json_t *o;
    const char *id = json_string_value(json_object_get(r, "id"));
    json_array_foreach(x->rules, i, o)
        if (!strcmp(json_string_value(json_object_get(o, "id")), id)) {
            lc_fail(x, 400, "InvalidArgument", "Rule ID must be unique. Found same ID for more than one rule "
                    "(\"%.60s\")", id); /* (id is r's: before r goes) */
            json_decref(r);
            return;
        }
    json_array_append_new(x->rules, r);
}

static void lcx_end(void *arg, const char *parent, const char *name, const char *text)
{
    struct lcx *x = arg;
    struct lrule *u = &x->cur;
    if (x->code)
        return;
    if (!strcmp(name, "LifecycleConfiguration")) {
        x->n_root++;
    } else if (!strcmp(name, "Rule")) {
        if (strcmp(parent, "LifecycleConfiguration"))
            malformed(x, "a Rule belongs in the LifecycleConfiguration");
        else if (json_array_size(x->rules) >= LC_RULES_MAX)
            lc_fail(x, 400, "InvalidArgument", "A lifecycle configuration can have at most %d rules", LC_RULES_MAX);
        else
            lc_rule_end(x);
        lrule_clear(u);
    } else if (!strcmp(parent, "Rule")) {
        if (!strcmp(name, "ID")) {
            set_str(&u->id, text);
            u->n_id++;
        } else if (!strcmp(name, "Status")) {
            set_str(&u->status, text);
            u->n_status++;
        } else if (!strcmp(name, "Prefix")) {
            set_str(&u->rprefix, text);
            u->n_rprefix++;
        } else if (!strcmp(name, "Filter")) {
            u->n_filter++;
        } else if (!strcmp(name, "Expiration")) {
            u->n_exp++;
        } else if (!strcmp(name, "NoncurrentVersionExpiration")) {
            u->n_nve++;
        } else if (!strcmp(name, "AbortIncompleteMultipartUpload")) {
            u->n_abort++;
        } else if (!strcmp(name, "Transition") || !strcmp(name, "NoncurrentVersionTransition")) {
            lc_fail(x, 501, "NotImplemented", "%s is not implemented by Shale: it has one storage class (Expiration, "
                    "NoncurrentVersionExpiration and AbortIncompleteMultipartUpload are); nothing was changed", name);
        } else {
            char w[160];
            snprintf(w, sizeof(w), "unknown element %.60s in a Rule", name);
            malformed(x, w);
        }
    } else if (!strcmp(parent, "Filter") || !strcmp(parent, "And")) {
        bool in_and = !strcmp(parent, "And");
        if (in_and)
            u->akids++;
        else
            u->fkids++;
        long long v;
        if (!strcmp(name, "Prefix")) {
            set_str(in_and ? &u->aprefix : &u->fprefix, text);
        } else if (!strcmp(name, "Tag")) {
            lc_tag(x, u);
        } else if (!strcmp(name, "And") && !in_and) {
            u->n_and++;
        } else if (!strcmp(name, "ObjectSizeGreaterThan") && lc_int(x, name, text, &v)) {
            u->gt = v;
            u->n_gt++;
        } else if (!strcmp(name, "ObjectSizeLessThan") && lc_int(x, name, text, &v)) {
            u->lt = v;
            u->n_lt++;
        } else if (strcmp(name, "ObjectSizeGreaterThan") && strcmp(name, "ObjectSizeLessThan")) {
            char w[160];
            snprintf(w, sizeof(w), "unknown element %.60s in a %s", name, parent);
            malformed(x, w);
        }
    } else if (!strcmp(parent, "Tag")) {
        if (!strcmp(name, "Key"))
            set_str(&u->tkey, text);
        else if (!strcmp(name, "Value"))
            set_str(&u->tval, text);
    } else if (!strcmp(parent, "Expiration")) {
        u->exp_kids++;
        if (!strcmp(name, "Days")) {
            u->n_days++;
            lc_int(x, name, text, &u->days);
        } else if (!strcmp(name, "Date")) {
            u->n_date++;
            set_str(&u->date, text);
        } else if (!strcmp(name, "ExpiredObjectDeleteMarker")) {
            u->n_eodm++;
            if (!strcmp(text, "true"))
                u->eodm = true;
            else if (strcmp(text, "false"))
                malformed(x, "ExpiredObjectDeleteMarker is true or false");
        } else {
            malformed(x, "an Expiration holds Days, Date or ExpiredObjectDeleteMarker");
        }
    } else if (!strcmp(parent, "NoncurrentVersionExpiration")) {
        if (!strcmp(name, "NoncurrentDays")) {
            u->n_ncdays++;
            lc_int(x, name, text, &u->ncdays);
        } else if (!strcmp(name, "NewerNoncurrentVersions")) {
            u->n_newer++;
            lc_int(x, name, text, &u->newer);
        } else {
            malformed(x, "a NoncurrentVersionExpiration holds NoncurrentDays and NewerNoncurrentVersions");
        }
    } else if (!strcmp(parent, "AbortIncompleteMultipartUpload")) {
        if (!strcmp(name, "DaysAfterInitiation")) {
            u->n_adays++;
            lc_int(x, name, text, &u->adays);
        } else {
            malformed(x, "an AbortIncompleteMultipartUpload holds DaysAfterInitiation");
        }
    } else if (!strcmp(parent, "Transition") || !strcmp(parent, "NoncurrentVersionTransition")) {
        /* (refused at its end) */
    } else {
        char w[160];
        snprintf(w, sizeof(w), "unknown element %.60s", name);
        malformed(x, w);
    }
}

/* body -> the props' JSON text (the caller frees), or NULL with *status, *code and why */
static char *lc_from_xml(const char *body, size_t n, int *status, const char **code, char *why, size_t wn)
{
    struct lcx x = { .rules = json_array() };
    int rc = s3_xml_parse(body, n, lcx_end, &x);
    lrule_clear(&x.cur);
    if (!x.code && (rc < 0 || x.n_root != 1))
        malformed(&x, "a LifecycleConfiguration holding Rule elements");
    if (!x.code && !json_array_size(x.rules))
        malformed(&x, "a LifecycleConfiguration holds 1 to 1000 Rule elements");
    char *out = NULL;
    if (x.code) {
        *status = x.status;
        *code = x.code;
        snprintf(why, wn, "%s", x.why);
    } else {
        json_t *doc = json_pack("{s:O}", "rules", x.rules);
        out = json_dumps(doc, JSON_COMPACT);
        json_decref(doc);
    }
    json_decref(x.rules);
    return out;
}

/* ---- GET: the props back as S3's XML ---- */

static void tag_xml(struct sl_buf *x, const char *k, const char *v)
{
    sl_buf_adds(x, "<Tag>");
    s3_xel(x, "Key", k);
    s3_xel(x, "Value", v);
    sl_buf_adds(x, "</Tag>");
}

static void filter_xml(struct sl_buf *x, const json_t *f)
{
    const char *form = json_string_value(json_object_get(f, "form"));
    const char *pfx = json_string_value(json_object_get(f, "prefix"));
    json_t *tags = json_object_get(f, "tags"), *gt = json_object_get(f, "gt"), *lt = json_object_get(f, "lt");
    if (form && !strcmp(form, "legacy")) {
        s3_xel(x, "Prefix", pfx ? pfx : "");
        return;
    }
    bool and = form && !strcmp(form, "and");
    sl_buf_adds(x, and ? "<Filter><And>" : "<Filter>");
    if (pfx)
        s3_xel(x, "Prefix", pfx);
    const char *k;
    json_t *v;
    json_object_foreach(tags, k, v)
        tag_xml(x, k, json_string_value(v));
    if (gt)
        sl_buf_printf(x, "<ObjectSizeGreaterThan>%lld</ObjectSizeGreaterThan>", (long long)json_integer_value(gt));
    if (lt)
        sl_buf_printf(x, "<ObjectSizeLessThan>%lld</ObjectSizeLessThan>", (long long)json_integer_value(lt));
    sl_buf_adds(x, and ? "</And></Filter>" : "</Filter>");
}

static void lc_xml(struct sl_buf *x, const json_t *doc)
{
    sl_buf_adds(x, "<LifecycleConfiguration xmlns=\"" XMLNS "\">");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "rules"), i, r) {
        sl_buf_adds(x, "<Rule>");
        s3_xel(x, "ID", json_string_value(json_object_get(r, "id")));
        filter_xml(x, json_object_get(r, "filter"));
        s3_xel(x, "Status", json_string_value(json_object_get(r, "status")));
        json_t *e = json_object_get(r, "expiration");
        if (e) {
            sl_buf_adds(x, "<Expiration>");
            if (json_object_get(e, "days"))
                sl_buf_printf(x, "<Days>%lld</Days>", (long long)json_integer_value(json_object_get(e, "days")));
            else if (json_object_get(e, "date"))
                s3_xel(x, "Date", json_string_value(json_object_get(e, "date")));
            else
                sl_buf_printf(x, "<ExpiredObjectDeleteMarker>%s</ExpiredObjectDeleteMarker>",
                              json_is_true(json_object_get(e, "expired_object_delete_marker")) ? "true" : "false");
            sl_buf_adds(x, "</Expiration>");
        }
        json_t *nv = json_object_get(r, "noncurrent_version_expiration");
        if (nv) {
            sl_buf_printf(x, "<NoncurrentVersionExpiration><NoncurrentDays>%lld</NoncurrentDays>",
                          (long long)json_integer_value(json_object_get(nv, "noncurrent_days")));
            if (json_object_get(nv, "newer_noncurrent_versions"))
                sl_buf_printf(x, "<NewerNoncurrentVersions>%lld</NewerNoncurrentVersions>",
                              (long long)json_integer_value(json_object_get(nv, "newer_noncurrent_versions")));
            sl_buf_adds(x, "</NoncurrentVersionExpiration>");
        }
        json_t *ab = json_object_get(r, "abort_incomplete_multipart_upload");
        if (ab)
            sl_buf_printf(x, "<AbortIncompleteMultipartUpload><DaysAfterInitiation>%lld</DaysAfterInitiation>"
                          "</AbortIncompleteMultipartUpload>",
                          (long long)json_integer_value(json_object_get(ab, "days_after_initiation")));
        sl_buf_adds(x, "</Rule>");
    }
    sl_buf_adds(x, "</LifecycleConfiguration>");
}

/* ---- the sub-resource ---- */

static void lc_bck_free(void *p)
{
    if (p)
        sl_bck_release(p);
    free(p);
}

static void put_lifecycle(struct sl_req *r, void *arg)
{
    struct sl_bck *b = arg;
    int status = 400;
    const char *code = "MalformedXML";
    char why[512];
    char *js = lc_from_xml(r->body.p ? r->body.p : "", r->body.len, &status, &code, why, sizeof(why));
    if (!js)
        s3_err(r, status, code, "%s; nothing was changed", why);
    else
        s3_primary_bck_call(r, "PATCH", b->name,
                            json_pack("{s:s,s:{s:s}}", "action", "set-bprops", "value", "lifecycle", js), 200);
    free(js);
    lc_bck_free(b);
}

static void put_lifecycle_body(struct sl_req *r)
{
    s3_body_offload(r, put_lifecycle, lc_bck_free);
}

static void delete_lifecycle(struct sl_req *r, void *arg)
{
    struct sl_bck *b = arg;
    s3_primary_bck_call(r, "PATCH", b->name,
                        json_pack("{s:s,s:{s:s}}", "action", "set-bprops", "value", "lifecycle", ""), 204);
    lc_bck_free(b);
}

void s3_bck_lifecycle(struct sl_req *r, const struct sl_bck *b)
{
    struct sl_bck *c;
    switch (r->method) {
    case SL_M_GET: {
        const char *s = json_string_value(json_object_get(b->props, "lifecycle"));
        json_t *doc = s && *s ? json_loads(s, 0, NULL) : NULL;
        if (!doc) {
            s3_err(r, 404, "NoSuchLifecycleConfiguration", "The lifecycle configuration does not exist (bucket %s has "
                   "none; PUT ?lifecycle sets one)", b->name);
            return;
        }
        struct sl_buf x;
        sl_buf_init(&x);
        lc_xml(&x, doc);
        json_decref(doc);
        s3_xml(r, 200, &x);
        return;
    }
    case SL_M_PUT:
        c = sl_xmalloc(sizeof(*c));
        sl_bck_copy(c, b);
        r->ctx = c;
        sl_req_buffer_body(r, 2 * 1024 * 1024, put_lifecycle_body);
        return;
    case SL_M_DELETE:
        c = sl_xmalloc(sizeof(*c));
        sl_bck_copy(c, b);
        sl_req_offload(r, delete_lifecycle, lc_bck_free, c);
        return;
    default:
        s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?lifecycle (GET, PUT and DELETE are)",
               r->method_str);
    }
}
