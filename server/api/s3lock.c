/* SPDX-License-Identifier: MIT
 * s3lock.c: S3 Object Lock (WORM, docs/s3.md §5 "Object lock"), on S3
 * versioning (s3ver.c).
 *
 * A bucket's lock is its props "s3_lock": "" (none) or the JSON text
 * {"enabled":true,"mode":"GOVERNANCE"|"COMPLIANCE"|"","days":N,"years":N}
 * (the default retention of new versions). It is set by CreateBucket with
 * x-amz-bucket-object-lock-enabled: true or PUT ?object-lock (which turn
 * versioning Enabled), and never removed; versioning cannot be suspended
 * while it is on.
 *
 * A version's lock travels with it as custom metadata: "s3.lock.mode"
 * (GOVERNANCE or COMPLIANCE) with "s3.lock.until" (unix seconds), and
 * "s3.lock.hold" ("ON"). A version with a hold, or a retention date in the
 * future, cannot be deleted (S3's DELETE ?versionId, DeleteObjects, the
 * native DELETE); GOVERNANCE gives way to x-amz-bypass-governance-retention.
 */
#include "s3.h"
#include "s3obj.h"
#include "cluster.h"
#include "jsonx.h"
#include "lso.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define LK_MODE "s3.lock.mode"
#define LK_UNTIL "s3.lock.until"
#define LK_HOLD "s3.lock.hold"

/* ---- the bucket's configuration ---- */

struct bcklock {
    bool enabled;
    char mode[16]; /* "" no default retention */
    int days, years;
};

static void bck_lock(const struct sl_bck *b, struct bcklock *l)
{
    memset(l, 0, sizeof(*l));
    const char *s = json_string_value(json_object_get(b->props, "s3_lock"));
    json_t *j = s && *s ? json_loads(s, 0, NULL) : NULL;
    if (!j)
        return;
    l->enabled = json_is_true(json_object_get(j, "enabled"));
    snprintf(l->mode, sizeof(l->mode), "%s", json_string_value(json_object_get(j, "mode")) ?: "");
    l->days = (int)json_integer_value(json_object_get(j, "days"));
    l->years = (int)json_integer_value(json_object_get(j, "years"));
    json_decref(j);
}

bool s3_lock_enabled(const struct sl_bck *b)
{
    struct bcklock l;
    bck_lock(b, &l);
    return l.enabled;
}

static bool mode_ok(const char *m)
{
    return !strcmp(m, "GOVERNANCE") || !strcmp(m, "COMPLIANCE");
}

/* ISO 8601 ("2030-01-02T03:04:05Z", ".123Z", "+00:00") -> unix seconds; -1 */
static int64_t parse_date(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *e = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!e)
        return -1;
    if (*e == '.') {
        e++;
        if (!strchr("0123456789", *e) || !*e)
            return -1;
        while (*e >= '0' && *e <= '9')
            e++;
    }
    int64_t off = 0;
    if (*e == 'Z') {
        e++;
    } else if ((*e == '+' || *e == '-') && strlen(e) == 6 && e[3] == ':') {
        off = (int64_t)((e[1] - '0') * 10 + (e[2] - '0')) * 3600 + ((e[4] - '0') * 10 + (e[5] - '0')) * 60;
        if (*e == '+')
            off = -off;
        e += 6;
    } else {
        return -1;
    }
    if (*e)
        return -1;
    return (int64_t)timegm(&tm) + off;
}

static void fmt_date(int64_t t, char *out, size_t n)
{
    s3_iso_time(t * 1000000000LL, out, n);
}

/* ---- a version's lock ---- */

struct vlock {
    char mode[16];
    int64_t until; /* unix seconds; 0 none */
    bool hold;
};

static void md_lock(const struct sl_objmd *md, struct vlock *v)
{
    memset(v, 0, sizeof(*v));
    for (int i = 0; i < md->ncustom; i++) {
        if (!strcmp(md->custom[i].k, LK_MODE))
            snprintf(v->mode, sizeof(v->mode), "%s", md->custom[i].v);
        else if (!strcmp(md->custom[i].k, LK_UNTIL))
            v->until = strtoll(md->custom[i].v, NULL, 10);
        else if (!strcmp(md->custom[i].k, LK_HOLD))
            v->hold = !strcmp(md->custom[i].v, "ON");
    }
}

bool s3_lock_bypass(struct sl_req *r)
{
    const char *h = sl_req_header(r, "x-amz-bypass-governance-retention");
    return h && !strcasecmp(h, "true");
}

int s3_lock_check(const struct sl_objmd *md, bool bypass, struct sl_err *err)
{
    struct vlock v;
    md_lock(md, &v);
    char t[40];
    if (v.hold)
        return sl_errf(err, SL_EFORBIDDEN, "Access Denied because object protected by object lock: the version is "
                       "under a legal hold (remove it with PUT ?legal-hold Status OFF first); nothing was deleted");
    if (v.until > (int64_t)time(NULL) && (!bypass || strcmp(v.mode, "GOVERNANCE"))) {
        fmt_date(v.until, t, sizeof(t));
        return sl_errf(err, SL_EFORBIDDEN, "Access Denied because object protected by object lock: %s retention "
                       "until %s%s; nothing was deleted", v.mode, t,
                       strcmp(v.mode, "GOVERNANCE") ? "" : " (x-amz-bypass-governance-retention: true overrides it)");
    }
    return 0;
}

int s3_lock_check_name(const struct sl_bck *b, const char *name, size_t nlen, bool bypass, struct sl_err *err)
{
    if (!s3_lock_enabled(b))
        return 0;
    struct sl_objmd md;
    struct sl_err e = { 0 };
    memset(&md, 0, sizeof(md));
    if (sl_obj_stat(b, name, nlen, &md, NULL, &e) <= 0)
        return 0; /* nothing there: the delete says so */
    int rc = s3_lock_check(&md, bypass, err);
    sl_objmd_free(&md);
    return rc;
}

/* ---- the headers of a write ---- */

int s3_lock_hdrs(struct sl_req *r, const struct sl_bck *b, struct kvs *custom)
{
    const char *m = sl_req_header(r, "x-amz-object-lock-mode");
    const char *u = sl_req_header(r, "x-amz-object-lock-retain-until-date");
    const char *h = sl_req_header(r, "x-amz-object-lock-legal-hold");
    m = m && *m ? m : NULL;
    u = u && *u ? u : NULL;
    h = h && *h ? h : NULL;
    struct bcklock l;
    bck_lock(b, &l);
    if ((m || u || h) && !l.enabled) {
        s3_err(r, 400, "InvalidRequest", "Bucket is missing Object Lock Configuration: bucket %s has no object lock "
               "(create it with x-amz-bucket-object-lock-enabled: true, or PUT ?object-lock); nothing was stored",
               b->name);
        return -1;
    }
    if (!m != !u) {
        s3_err(r, 400, "InvalidArgument", "x-amz-object-lock-mode and x-amz-object-lock-retain-until-date must both "
               "be supplied; nothing was stored");
        return -1;
    }
    if (m && !mode_ok(m)) {
        s3_err(r, 400, "InvalidArgument", "Unknown wormMode directive: x-amz-object-lock-mode \"%.32s\" (GOVERNANCE "
               "or COMPLIANCE); nothing was stored", m);
        return -1;
    }
    if (h && strcmp(h, "ON") && strcmp(h, "OFF")) {
        s3_err(r, 400, "InvalidArgument", "x-amz-object-lock-legal-hold must be ON or OFF (not \"%.32s\"); nothing "
               "was stored", h);
        return -1;
    }
    int64_t until = 0;
    char mode[16] = "";
    if (u) {
        until = parse_date(u);
        if (until < 0) {
            s3_err(r, 400, "InvalidArgument", "x-amz-object-lock-retain-until-date \"%.40s\" is not an ISO 8601 date "
                   "(2030-01-02T03:04:05Z); nothing was stored", u);
            return -1;
        }
        if (until <= (int64_t)time(NULL)) {
            s3_err(r, 400, "InvalidArgument", "The retain until date must be in the future (%.40s); nothing was "
                   "stored", u);
            return -1;
        }
        snprintf(mode, sizeof(mode), "%s", m);
    } else if (l.enabled && mode_ok(l.mode)) { /* the bucket's default retention */
        snprintf(mode, sizeof(mode), "%s", l.mode);
        until = (int64_t)time(NULL) + (int64_t)l.days * 86400 + (int64_t)l.years * 365 * 86400;
    }
    if (mode[0]) {
        char t[24];
        snprintf(t, sizeof(t), "%lld", (long long)until);
        s3_kv_add(custom, LK_MODE, mode);
        s3_kv_add(custom, LK_UNTIL, t);
    }
    if (h && !strcmp(h, "ON"))
        s3_kv_add(custom, LK_HOLD, "ON");
    return 0;
}

bool s3_lock_md_key(const char *k)
{
    return !strncmp(k, "s3.lock.", 8);
}

void s3_lock_resp_hdrs(struct sl_req *r, const struct sl_objmd *md)
{
    struct vlock v;
    md_lock(md, &v);
    if (v.mode[0]) {
        char t[40];
        fmt_date(v.until, t, sizeof(t));
        sl_hdr_add(r, "x-amz-object-lock-mode", v.mode);
        sl_hdr_add(r, "x-amz-object-lock-retain-until-date", t);
    }
    if (v.hold)
        sl_hdr_add(r, "x-amz-object-lock-legal-hold", "ON");
}

/* ---- ?object-lock of a bucket (the gateway) ---- */

struct lockx {
    char enabled[16], mode[16], days[24], years[24];
    bool bad, rule;
};

static void lockx_end(void *arg, const char *parent, const char *name, const char *text)
{
    struct lockx *x = arg;
    if (!strcmp(name, "ObjectLockEnabled"))
        snprintf(x->enabled, sizeof(x->enabled), "%s", text);
    else if (!strcmp(name, "Mode") && !strcmp(parent, "DefaultRetention"))
        snprintf(x->mode, sizeof(x->mode), "%s", text);
    else if (!strcmp(name, "Days") && !strcmp(parent, "DefaultRetention"))
        snprintf(x->days, sizeof(x->days), "%s", text);
    else if (!strcmp(name, "Years") && !strcmp(parent, "DefaultRetention"))
        snprintf(x->years, sizeof(x->years), "%s", text);
    else if (!strcmp(name, "Rule"))
        x->rule = true;
}

static int posint(const char *s)
{
    char *e;
    long v = strtol(s, &e, 10);
    return *s && !*e && v > 0 && v <= 100 * 365 ? (int)v : -1;
}

struct lockjob {
    struct sl_bck b;
};

static void lockjob_free(void *arg)
{
    struct lockjob *j = arg;
    sl_bck_release(&j->b);
    free(j);
}

static void put_bck_lock(struct sl_req *r, void *arg)
{
    struct lockjob *j = arg;
    struct lockx x = { 0 };
    int days = 0, years = 0;
    if (s3_xml_parse(r->body.p ? r->body.p : "", r->body.len, lockx_end, &x) < 0 || strcmp(x.enabled, "Enabled")) {
        s3_err(r, 400, "MalformedXML", "The XML you provided was not well-formed or did not validate against our "
               "published schema (an ObjectLockConfiguration with ObjectLockEnabled Enabled and an optional "
               "Rule/DefaultRetention of Mode GOVERNANCE or COMPLIANCE and Days or Years); nothing was changed");
    } else if (x.rule && (!mode_ok(x.mode) || !x.days[0] == !x.years[0] ||
                          (x.days[0] && (days = posint(x.days)) < 0) || (x.years[0] && (years = posint(x.years)) < 0))) {
        s3_err(r, 400, "MalformedXML", "The XML you provided was not well-formed or did not validate against our "
               "published schema: DefaultRetention takes Mode GOVERNANCE or COMPLIANCE and one of Days or Years, a "
               "positive number (mode \"%.16s\", days \"%.16s\", years \"%.16s\"); nothing was changed", x.mode, x.days,
               x.years);
    } else if (!s3_lock_enabled(&j->b) && j->b.s3ver != SL_S3VER_ON) {
        s3_err(r, 409, "InvalidBucketState", "Versioning must be 'Enabled' on the bucket %s to apply a Object Lock "
               "configuration (PUT ?versioning Status Enabled first); nothing was changed", j->b.name);
    } else {
        json_t *c = json_pack("{s:b,s:s,s:i,s:i}", "enabled", 1, "mode", x.rule ? x.mode : "", "days", days, "years",
                              years);
        char *txt = json_dumps(c, JSON_COMPACT);
        json_decref(c);
        s3_primary_bck_call(r, "PATCH", j->b.name, json_pack("{s:s,s:{s:s,s:s}}", "action", "set-bprops", "value",
                                                             "s3_lock", txt, "s3_versioning", "Enabled"), 200);
        free(txt);
    }
    lockjob_free(j);
}

static void put_bck_lock_body(struct sl_req *r)
{
    s3_body_offload(r, put_bck_lock, lockjob_free);
}

void s3_bck_object_lock(struct sl_req *r, const struct sl_bck *b)
{
    if (r->method == SL_M_GET) {
        struct bcklock l;
        bck_lock(b, &l);
        if (!l.enabled) {
            s3_err(r, 404, "ObjectLockConfigurationNotFoundError", "Object Lock configuration does not exist for "
                   "this bucket (%s); PUT ?object-lock sets one", b->name);
            return;
        }
        struct sl_buf x;
        sl_buf_init(&x);
        sl_buf_adds(&x, "<ObjectLockConfiguration xmlns=\"" XMLNS "\"><ObjectLockEnabled>Enabled</ObjectLockEnabled>");
        if (mode_ok(l.mode)) {
            sl_buf_printf(&x, "<Rule><DefaultRetention><Mode>%s</Mode>", l.mode);
            if (l.days)
                sl_buf_printf(&x, "<Days>%d</Days>", l.days);
            if (l.years)
                sl_buf_printf(&x, "<Years>%d</Years>", l.years);
            sl_buf_adds(&x, "</DefaultRetention></Rule>");
        }
        sl_buf_adds(&x, "</ObjectLockConfiguration>");
        s3_xml(r, 200, &x);
        return;
    }
    if (r->method == SL_M_PUT) {
        struct lockjob *j = sl_xcalloc(1, sizeof(*j));
        sl_bck_copy(&j->b, b);
        r->ctx = j;
        sl_req_buffer_body(r, 64 * 1024, put_bck_lock_body);
        return;
    }
    s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?object-lock (GET and PUT are)", r->method_str);
}

/* The props a CreateBucket with x-amz-bucket-object-lock-enabled: true
 * sets (stolen by the caller), or NULL when it did not ask */
json_t *s3_lock_create_props(struct sl_req *r)
{
    const char *h = sl_req_header(r, "x-amz-bucket-object-lock-enabled");
    if (!h || strcasecmp(h, "true"))
        return NULL;
    return json_pack("{s:s,s:s}", "s3_lock", "{\"enabled\":true,\"mode\":\"\",\"days\":0,\"years\":0}",
                     "s3_versioning", "Enabled");
}

/* ---- ?retention and ?legal-hold of a version (its target) ---- */

struct olock {
    struct sl_bck b;
    char *name; /* the version's object */
    size_t nlen;
    bool hold;  /* ?legal-hold, else ?retention */
    bool bypass;
};

static void olock_free(void *arg)
{
    struct olock *o = arg;
    sl_bck_release(&o->b);
    free(o->name);
    free(o);
}

static int olock_stat(struct sl_req *r, struct olock *o, struct sl_objmd *md)
{
    struct sl_err err = { 0 };
    memset(md, 0, sizeof(*md));
    int st = sl_obj_stat(&o->b, o->name, o->nlen, md, NULL, &err);
    if (st == 0 || (st < 0 && (err.code == SL_ENOOBJ || err.code == SL_ENOENT))) {
        s3_err(r, 404, "NoSuchKey", "The specified key does not exist.");
        return -1;
    }
    if (st < 0) {
        s3_err_sl(r, &err);
        return -1;
    }
    return 0;
}

static void olock_get(struct sl_req *r, void *arg)
{
    struct olock *o = arg;
    struct sl_objmd md;
    if (olock_stat(r, o, &md) < 0) {
        olock_free(o);
        return;
    }
    struct vlock v;
    md_lock(&md, &v);
    sl_objmd_free(&md);
    struct sl_buf x;
    sl_buf_init(&x);
    if (o->hold) {
        sl_buf_printf(&x, "<LegalHold xmlns=\"" XMLNS "\"><Status>%s</Status></LegalHold>", v.hold ? "ON" : "OFF");
        s3_xml(r, 200, &x);
    } else if (!v.mode[0]) {
        sl_buf_free(&x);
        s3_err(r, 404, "NoSuchObjectLockConfiguration", "The specified object does not have a ObjectLock "
               "configuration (no retention is set on this version)");
    } else {
        char t[40];
        fmt_date(v.until, t, sizeof(t));
        sl_buf_printf(&x, "<Retention xmlns=\"" XMLNS "\"><Mode>%s</Mode><RetainUntilDate>%s</RetainUntilDate>"
                      "</Retention>", v.mode, t);
        s3_xml(r, 200, &x);
    }
    olock_free(o);
}

struct retx {
    char mode[16], until[48], status[8];
    bool seen;
};

static void retx_end(void *arg, const char *parent, const char *name, const char *text)
{
    (void)parent;
    struct retx *x = arg;
    if (!strcmp(name, "Mode"))
        snprintf(x->mode, sizeof(x->mode), "%s", text);
    else if (!strcmp(name, "RetainUntilDate"))
        snprintf(x->until, sizeof(x->until), "%s", text);
    else if (!strcmp(name, "Status"))
        snprintf(x->status, sizeof(x->status), "%s", text);
    else if (!strcmp(name, "Retention") || !strcmp(name, "LegalHold"))
        x->seen = true;
}

static void olock_set(struct sl_req *r, struct olock *o, const char *ns, const char *val)
{
    struct sl_err err = { 0 };
    struct sl_kv kv = { (char *)ns, (char *)val };
    if (sl_obj_set_custom_ns(&o->b, o->name, o->nlen, &kv, val ? 1 : 0, ns, &err) < 0)
        s3_err_sl(r, &err);
}

static void olock_put(struct sl_req *r, void *arg)
{
    struct olock *o = arg;
    struct retx x = { 0 };
    struct sl_objmd md;
    int parsed = s3_xml_parse(r->body.p ? r->body.p : "", r->body.len, retx_end, &x);
    if (parsed < 0 || !x.seen) {
        s3_err(r, 400, "MalformedXML", "The XML you provided was not well-formed or did not validate against our "
               "published schema (%s); nothing was changed", o->hold ? "a LegalHold with Status ON or OFF"
               : "a Retention with Mode GOVERNANCE or COMPLIANCE and RetainUntilDate");
        goto out;
    }
    if (o->hold) {
        if (strcmp(x.status, "ON") && strcmp(x.status, "OFF")) {
            s3_err(r, 400, "MalformedXML", "LegalHold Status must be ON or OFF (not \"%s\"); nothing was changed",
                   x.status);
            goto out;
        }
        if (olock_stat(r, o, &md) < 0)
            goto out;
        sl_objmd_free(&md);
        olock_set(r, o, LK_HOLD, !strcmp(x.status, "ON") ? "ON" : NULL);
        if (!r->responded)
            sl_resp_empty(r, 200);
        goto out;
    }
    int64_t until = 0;
    if (x.mode[0] || x.until[0]) {
        if (!mode_ok(x.mode)) {
            s3_err(r, 400, "MalformedXML", "Retention Mode must be GOVERNANCE or COMPLIANCE (not \"%s\"); nothing was "
                   "changed", x.mode);
            goto out;
        }
        if ((until = parse_date(x.until)) < 0) {
            s3_err(r, 400, "InvalidArgument", "RetainUntilDate \"%s\" is not an ISO 8601 date (2030-01-02T03:04:05Z); "
                   "nothing was changed", x.until);
            goto out;
        }
        if (until <= (int64_t)time(NULL)) {
            s3_err(r, 400, "InvalidArgument", "The retain until date must be in the future (%s); nothing was changed",
                   x.until);
            goto out;
        }
    }
    if (olock_stat(r, o, &md) < 0)
        goto out;
    struct vlock v;
    md_lock(&md, &v);
    sl_objmd_free(&md);
    /* a retention in force may be lengthened, never shortened or removed
     * (GOVERNANCE: with x-amz-bypass-governance-retention) */
    bool active = v.mode[0] && v.until > (int64_t)time(NULL);
    bool weaker = !until || until < v.until || strcmp(x.mode, v.mode);
    if (active && weaker && (!strcmp(v.mode, "COMPLIANCE") || !o->bypass)) {
        char t[40];
        fmt_date(v.until, t, sizeof(t));
        s3_err(r, 403, "AccessDenied", "Access Denied because object protected by object lock: its %s retention "
               "until %s can only be extended%s; nothing was changed", v.mode, t,
               strcmp(v.mode, "COMPLIANCE") ? " (x-amz-bypass-governance-retention: true overrides it)" : "");
        goto out;
    }
    char ts[24];
    snprintf(ts, sizeof(ts), "%lld", (long long)until);
    olock_set(r, o, LK_MODE, until ? x.mode : NULL);
    if (!r->responded)
        olock_set(r, o, LK_UNTIL, until ? ts : NULL);
    if (!r->responded)
        sl_resp_empty(r, 200);
out:
    olock_free(o);
}

static void olock_put_body(struct sl_req *r)
{
    s3_body_offload(r, olock_put, olock_free);
}

/* The version ?versionId names (the current one without): 1 (name), or 0
 * answered (400 a bad id, 404 none, 405 a delete marker) */
static int version_name(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, struct sl_buf *name)
{
    const char *vid = sl_req_query(r, "versionId");
    if (!vid) {
        sl_buf_add(name, q->key, q->klen);
        return 1;
    }
    struct sl_err err = { 0 };
    struct sl_objmd md;
    int rc = sl_ver_find(b, q->key, q->klen, vid, name, &md, &err);
    if (rc < 0 && err.code == SL_EINVAL)
        s3_err(r, 400, "InvalidArgument", "Invalid version id specified (\"%.64s\")", vid);
    else if (rc < 0)
        s3_err_sl(r, &err);
    else if (rc == 0)
        s3_err(r, 404, "NoSuchVersion", "The specified version does not exist (%.64s)", vid);
    if (rc != 1)
        return 0;
    bool dm = sl_ver_is_marker(&md);
    sl_objmd_free(&md);
    if (dm) {
        s3_err(r, 405, "MethodNotAllowed", "The specified method is not allowed against this resource: version %s is "
               "a delete marker", vid);
        return 0;
    }
    return 1;
}

void s3_obj_lock(struct sl_req *r, const struct s3req *q, const struct sl_bck *b)
{
    bool hold = sl_req_query(r, "legal-hold") != NULL;
    if (r->method != SL_M_GET && r->method != SL_M_PUT) {
        s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?%s (GET and PUT are)", r->method_str,
               hold ? "legal-hold" : "retention");
        return;
    }
    if (!s3_lock_enabled(b)) {
        s3_err(r, 400, "InvalidRequest", "Bucket is missing Object Lock Configuration: bucket %s has no object lock "
               "(PUT ?object-lock turns it on); nothing was read or changed", b->name);
        return;
    }
    struct sl_buf n;
    sl_buf_init(&n);
    if (!version_name(r, q, b, &n)) { /* ?versionId (answered when none) */
        sl_buf_free(&n);
        return;
    }
    struct olock *o = sl_xcalloc(1, sizeof(*o));
    sl_bck_copy(&o->b, b);
    o->name = sl_xstrndup(n.p, n.len);
    o->nlen = n.len;
    o->hold = hold;
    o->bypass = s3_lock_bypass(r);
    sl_buf_free(&n);
    if (r->method == SL_M_GET) {
        sl_req_offload(r, olock_get, olock_free, o);
    } else {
        r->ctx = o;
        sl_req_buffer_body(r, 64 * 1024, olock_put_body);
    }
}

/* ---- destroy-bck (the primary gateway, a pool thread) ---- */

int s3_lock_destroy_check(const char *name, const char *provider, struct sl_err *err)
{
    struct sl_bck b;
    struct sl_err e = { 0 };
    if (sl_bck_resolve(name, provider, NULL, &b, &e) < 0)
        return 0; /* the destroy says what it says */
    int rc = 0;
    if (s3_lock_enabled(&b)) {
        json_t *v = json_pack("{s:s,s:i}", "props", "name", "pagesize", 1);
        struct sl_lsomsg m;
        struct sl_lspage pg = { 0 };
        rc = sl_lsomsg_parse(v, &m, 1, err);
        json_decref(v);
        m.flags |= SL_LSO_VERSIONS; /* the older versions are what the lock keeps */
        if (rc == 0)
            rc = sl_cluster_list_page(&b, &m, &pg, err);
        sl_lsomsg_free(&m);
        if (rc == 0 && pg.n)
            rc = sl_errf(err, SL_EFORBIDDEN, "ais://%s has S3 object lock and still holds object versions (%.*s, "
                         "...): it is destroyed only when empty; delete its versions as their retention and legal "
                         "holds allow (S3 DELETE ?versionId), then destroy it; nothing was destroyed", name,
                         (int)SL_MIN(sl_objname_vkey(pg.ents[0].name, pg.ents[0].nlen), 200), pg.ents[0].name);
        sl_lspage_free(&pg);
    }
    sl_bck_release(&b);
    return rc;
}
