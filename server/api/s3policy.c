/* SPDX-License-Identifier: MIT
 * s3policy.c: S3's access control on Shale's users and roles (spec s3.md,
 * docs/s3.md §5 "Access control"): canned ACLs of buckets and objects,
 * bucket policies, ?policyStatus and ?publicAccessBlock, and the decision
 * for each S3 request.
 *
 * Where it is kept: a bucket's canned ACL is its props "s3_acl" ("" =
 * private), its policy the props "s3_policy" (the JSON text as PUT, at most
 * 20 KiB), its public access block "s3_pab" (four '0'/'1': BlockPublicAcls,
 * IgnorePublicAcls, BlockPublicPolicy, RestrictPublicBuckets; "" none), all
 * distributed with the BMD; an object's canned ACL is its custom metadata
 * "s3.acl" (absent = private).
 *
 * The decision (with auth.client_auth_required on, on the gateway that
 * takes the client's request): the principal is the token's user, else the
 * user the verified SigV4 key belongs to, else anonymous. For each
 * (bucket, action, resource) the request needs: an explicit Deny of the
 * bucket's policy refuses; an Allow of the policy, or a grant of the
 * bucket's canned ACL, permits; else the user's role permissions decide
 * (access.c, sl_access_s3), and anonymous is refused. A GetObject nothing
 * else grants goes on to the object's target marked (X-Shale-S3-Acl-Need),
 * which serves it only if the object's own canned ACL grants it. The
 * parsed policy is cached per thread by the bucket's props object (a new
 * one with every props version), so a request does not parse it.
 */
#include "s3.h"
#include "s3obj.h"
#include "access.h"
#include "cluster.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "sec.h"
#include "store.h"
#include "users.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define POLICY_MAX (20 * 1024)
#define ACL_MD "s3.acl"
#define ALLUSERS "http://acs.amazonaws.com/groups/global/AllUsers"
#define AUTHUSERS "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"

/* ---- canned ACLs ---- */

enum { ACL_PRIVATE = 0, ACL_PUBLIC_READ, ACL_PUBLIC_RW, ACL_AUTH_READ, ACL_OWNER_READ, ACL_OWNER_FULL };
static const char *const canned[] = { "private", "public-read", "public-read-write", "authenticated-read",
                                      "bucket-owner-read", "bucket-owner-full-control", NULL };

static int acl_of(const char *s)
{
    if (!s || !*s)
        return ACL_PRIVATE;
    for (int i = 0; canned[i]; i++)
        if (!strcmp(s, canned[i]))
            return i;
    return -1;
}

static bool acl_public(int a)
{
    return a == ACL_PUBLIC_READ || a == ACL_PUBLIC_RW || a == ACL_AUTH_READ;
}

int s3_acl_check_hdr(struct sl_req *r)
{
    const char *a = sl_req_header(r, "x-amz-acl");
    if (!a || acl_of(a) >= 0)
        return 0;
    if (!strcmp(a, "aws-exec-read") || !strcmp(a, "log-delivery-write"))
        s3_err(r, 501, "NotImplemented", "x-amz-acl \"%s\" is not implemented: it grants to AWS's own services, "
               "which Shale has none of; nothing was changed", a);
    else
        s3_err(r, 400, "InvalidArgument", "x-amz-acl \"%s\" is not a canned ACL (private, public-read, "
               "public-read-write, authenticated-read, bucket-owner-read, bucket-owner-full-control); nothing was "
               "changed", a);
    return -1;
}

/* ---- public access block: props "s3_pab" ---- */

enum { PAB_BLOCK_ACLS = 0, PAB_IGNORE_ACLS, PAB_BLOCK_POLICY, PAB_RESTRICT };
static const char *const pab_names[] = { "BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy",
                                         "RestrictPublicBuckets" };

static bool pab(const json_t *props, int which)
{
    const char *s = json_string_value(json_object_get(props, "s3_pab"));
    return s && strlen(s) == 4 && s[which] == '1';
}

int s3_acl_hdr(struct sl_req *r, const struct sl_bck *b, struct kvs *custom)
{
    const char *a = sl_req_header(r, "x-amz-acl");
    int c = acl_of(a);
    if (c < 0)
        return s3_acl_check_hdr(r);
    if (acl_public(c) && pab(b->props, PAB_BLOCK_ACLS)) {
        s3_err(r, 403, "AccessDenied", "x-amz-acl \"%s\" is public and bucket %s blocks public ACLs "
               "(its publicAccessBlock BlockPublicAcls); nothing was changed", a, b->name);
        return -1;
    }
    if (c != ACL_PRIVATE && custom)
        s3_kv_add(custom, ACL_MD, canned[c]);
    return 0;
}

/* the drop of a copied source's ACL (a copy gets the request's, as in S3) */
bool s3_acl_md_key(const char *k)
{
    return !strcmp(k, ACL_MD);
}

/* ---- the AccessControlPolicy XML ---- */

static void acl_xml(struct sl_buf *x, int c)
{
    sl_buf_adds(x, "<AccessControlPolicy xmlns=\"" XMLNS "\">");
    s3_owner_xml(x);
    sl_buf_adds(x, "<AccessControlList><Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
                   "xsi:type=\"CanonicalUser\"><ID>shale</ID><DisplayName>shale</DisplayName></Grantee>"
                   "<Permission>FULL_CONTROL</Permission></Grant>");
    static const struct {
        int acl;
        const char *uri, *perm;
    } g[] = { { ACL_PUBLIC_READ, ALLUSERS, "READ" }, { ACL_PUBLIC_RW, ALLUSERS, "READ" },
              { ACL_PUBLIC_RW, ALLUSERS, "WRITE" }, { ACL_AUTH_READ, AUTHUSERS, "READ" } };
    for (size_t i = 0; i < SL_ARRAY_SIZE(g); i++)
        if (g[i].acl == c)
            sl_buf_printf(x, "<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
                             "xsi:type=\"Group\"><URI>%s</URI></Grantee><Permission>%s</Permission></Grant>",
                          g[i].uri, g[i].perm);
    sl_buf_adds(x, "</AccessControlList></AccessControlPolicy>");
}

static void acl_answer(struct sl_req *r, int c)
{
    struct sl_buf x;
    sl_buf_init(&x);
    acl_xml(&x, c);
    s3_xml(r, 200, &x);
}

struct aclx {
    char uri[160], id[160], perm[32];
    bool other;             /* a grantee by e-mail, or an ID not the owner's */
    int all_r, all_w, auth_r, owner_full, n;
    char bad[400];
};

static void aclx_end(void *arg, const char *parent, const char *name, const char *text)
{
    struct aclx *a = arg;
    if (!strcmp(parent, "Grantee")) {
        if (!strcmp(name, "URI"))
            snprintf(a->uri, sizeof(a->uri), "%s", text);
        else if (!strcmp(name, "ID"))
            snprintf(a->id, sizeof(a->id), "%s", text);
        else if (!strcmp(name, "EmailAddress"))
            a->other = true;
    } else if (!strcmp(parent, "Grant") && !strcmp(name, "Permission")) {
        snprintf(a->perm, sizeof(a->perm), "%s", text);
    } else if (!strcmp(name, "Grant")) {
        a->n++;
        if (a->uri[0] && !strcmp(a->uri, ALLUSERS) && !strcmp(a->perm, "READ"))
            a->all_r++;
        else if (a->uri[0] && !strcmp(a->uri, ALLUSERS) && !strcmp(a->perm, "WRITE"))
            a->all_w++;
        else if (a->uri[0] && !strcmp(a->uri, AUTHUSERS) && !strcmp(a->perm, "READ"))
            a->auth_r++;
        else if (!a->uri[0] && !a->other && !strcmp(a->perm, "FULL_CONTROL"))
            a->owner_full++; /* the owner's (Shale has one owner, whatever ID names it) */
        else if (!a->bad[0])
            snprintf(a->bad, sizeof(a->bad), "a grant of %s to %s", a->perm[0] ? a->perm : "?",
                     a->uri[0] ? a->uri : a->other ? "an e-mail address" : a->id[0] ? a->id : "?");
        a->uri[0] = a->id[0] = a->perm[0] = 0;
        a->other = false;
    }
}

/* The canned ACL of a PUT ?acl: its x-amz-acl, or its body's grants when
 * they are a canned ACL's. -1 answered. */
static int acl_of_put(struct sl_req *r)
{
    const char *h = sl_req_header(r, "x-amz-acl");
    bool body = r->body.len > 0;
    if (h && body) {
        s3_err(r, 400, "UnexpectedContent", "This request does not support content when x-amz-acl is sent: send "
               "the canned ACL or an AccessControlPolicy body, not both; nothing was changed");
        return -1;
    }
    if (h) {
        if (s3_acl_check_hdr(r) < 0)
            return -1;
        return acl_of(h);
    }
    if (!body) {
        s3_err(r, 400, "MissingSecurityHeader", "Your request was missing a required header: x-amz-acl (or an "
               "AccessControlPolicy body); nothing was changed");
        return -1;
    }
    struct aclx a = { 0 };
    if (s3_xml_parse(r->body.p, r->body.len, aclx_end, &a) < 0) {
        s3_err(r, 400, "MalformedACLError", "The XML you provided was not well-formed or did not validate "
               "against our published schema (an AccessControlPolicy); nothing was changed");
        return -1;
    }
    if (a.bad[0] || a.all_r > 1 || a.all_w > 1 || a.auth_r > 1 || (a.all_w && !a.all_r) ||
        (a.auth_r && (a.all_r || a.all_w))) {
        s3_err(r, 501, "NotImplemented", "this AccessControlPolicy is not a canned ACL's grants (%s): Shale keeps "
               "canned ACLs only (private, public-read, public-read-write, authenticated-read); nothing was changed",
               a.bad[0] ? a.bad : "a combination of group grants no canned ACL makes");
        return -1;
    }
    return a.all_w ? ACL_PUBLIC_RW : a.all_r ? ACL_PUBLIC_READ : a.auth_r ? ACL_AUTH_READ : ACL_PRIVATE;
}

/* ---- bucket props, through the primary ---- */

static int set_props(const char *bucket, json_t *value, struct sl_err *err)
{
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *p = sl_smap_primary(s);
    char *url = sl_xasprintf("%s/v1/buckets/%s", p ? p->url : G.self.url, bucket);
    sl_smap_put(s);
    struct sl_peer_resp pr = { 0 };
    int rc = 0;
    if (sl_peer_json("PATCH", url, json_pack("{s:s,s:o}", "action", "set-bprops", "value", value), 0, &pr) < 0)
        rc = sl_errf(err, SL_EUNAVAIL, "the primary gateway did not answer: %s", pr.err);
    else if (pr.status >= 300)
        rc = sl_errf(err, pr.status == 404 ? SL_ENOBCK : SL_EINVAL, "%s", pr.err);
    sl_peer_resp_free(&pr);
    free(url);
    return rc;
}

static void props_answer(struct sl_req *r, const char *bucket, json_t *value, int ok_status)
{
    struct sl_err err = { 0 };
    if (set_props(bucket, value, &err) < 0)
        s3_err_sl(r, &err);
    else
        sl_resp_empty(r, ok_status);
}

int s3_acl_after_create(const char *bucket, struct sl_req *r, struct sl_err *err)
{
    int c = acl_of(sl_req_header(r, "x-amz-acl"));
    if (c <= ACL_PRIVATE)
        return 0;
    return set_props(bucket, json_pack("{s:s}", "s3_acl", canned[c]), err);
}

/* ---- the policy language ---- */

/* glob with '*' and '?' (IAM's wildcards) */
static bool glob(const char *p, const char *s, bool icase)
{
    const char *star = NULL, *ss = NULL;
    while (*s) {
        if (*p == '*') {
            star = p++;
            ss = s;
        } else if (*p == '?' || (icase ? tolower((unsigned char)*p) == tolower((unsigned char)*s) : *p == *s)) {
            p++;
            s++;
        } else if (star) {
            p = star + 1;
            s = ++ss;
        } else {
            return false;
        }
    }
    while (*p == '*')
        p++;
    return !*p;
}

enum { C_STREQ = 0, C_STRNE, C_STREQI, C_STRNEI, C_STRLIKE, C_STRNLIKE, C_IP, C_NOTIP, C_BOOL, C_NULL, C_NUMEQ,
       C_NUMNE, C_NUMLT, C_NUMLE, C_NUMGT, C_NUMGE, C_DATEEQ, C_DATENE, C_DATELT, C_DATELE, C_DATEGT, C_DATEGE };
static const char *const ops[] = { "StringEquals", "StringNotEquals", "StringEqualsIgnoreCase",
                                   "StringNotEqualsIgnoreCase", "StringLike", "StringNotLike", "IpAddress",
                                   "NotIpAddress", "Bool", "Null", "NumericEquals", "NumericNotEquals",
                                   "NumericLessThan", "NumericLessThanEquals", "NumericGreaterThan",
                                   "NumericGreaterThanEquals", "DateEquals", "DateNotEquals", "DateLessThan",
                                   "DateLessThanEquals", "DateGreaterThan", "DateGreaterThanEquals", NULL };

struct pcond {
    int op;
    bool ifexists;
    const char *key;        /* borrowed from the policy's JSON */
    const char **v;
    int nv;
};

struct pstmt {
    bool deny, not_action, not_resource, not_principal, any, public;
    const char **who, **act, **res;   /* principals (user names), actions, resources */
    int nwho, nact, nres;
    struct pcond *c;
    int nc;
};

struct policy {
    json_t *doc;
    struct pstmt *s;
    int n;
    bool public;
};

static void policy_free(struct policy *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n; i++) {
        free(p->s[i].who);
        free(p->s[i].act);
        free(p->s[i].res);
        for (int j = 0; j < p->s[i].nc; j++)
            free(p->s[i].c[j].v);
        free(p->s[i].c);
    }
    free(p->s);
    json_decref(p->doc);
    free(p);
}

static int bad(char *why, size_t wn, const char *fmt, ...) SL_PRINTF(3, 4);
static int bad(char *why, size_t wn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, wn, fmt, ap);
    va_end(ap);
    return -1;
}

/* a string or an array of strings, into a new array of borrowed strings */
static int strs(json_t *v, const char ***out, int *n, const char *what, int si, char *why, size_t wn)
{
    *out = NULL;
    *n = 0;
    if (json_is_string(v)) {
        *out = sl_xmalloc(sizeof(char *));
        (*out)[(*n)++] = json_string_value(v);
        return 0;
    }
    if (!json_is_array(v) || !json_array_size(v))
        return bad(why, wn, "Statement %d: %s must be a string or a non-empty array of strings", si, what);
    *out = sl_xmalloc(json_array_size(v) * sizeof(char *));
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        if (!json_is_string(e))
            return bad(why, wn, "Statement %d: %s must hold strings only", si, what);
        (*out)[(*n)++] = json_string_value(e);
    }
    return 0;
}

/* A Date* operand as seconds since the epoch: ISO 8601 ("2026-12-03",
 * "2026-12-03T18:00:00Z", fractions and "+HH:MM" offsets allowed) or epoch
 * seconds ("1796316000"), as IAM takes them. false: neither. */
static bool date_of(const char *v, double *out)
{
    char *e;
    if (*v >= '0' && *v <= '9' && strlen(v) <= 12 && strspn(v, "0123456789") == strlen(v)) {
        *out = strtod(v, &e);
        return true;
    }
    struct tm tm = { 0 };
    int n = 0;
    if (sscanf(v, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &n) != 3 || n != 10)
        return false;
    const char *p = v + 10;
    double frac = 0;
    if (*p == 'T') {
        int m = 0;
        if (sscanf(p + 1, "%2d:%2d:%2d%n", &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &m) != 3 || m != 8)
            return false;
        p += 9;
        if (*p == '.') {
            frac = strtod(p, &e);
            p = e;
        }
    }
    long off = 0;
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int hh, mm, m = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &hh, &mm, &m) != 2 || m != 5 || hh > 23 || mm > 59)
            return false;
        off = (*p == '+' ? 1 : -1) * (hh * 3600L + mm * 60L);
        p += 6;
    }
    if (*p || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 60)
        return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = (double)timegm(&tm) - (double)off + frac;
    return true;
}

/* a condition's values, stringified: strings, booleans, numbers */
static int cvals(json_t *v, struct pcond *c, int si, char *why, size_t wn)
{
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    if (json_is_array(v) && !n)
        return bad(why, wn, "Statement %d: condition %s has no values", si, c->key);
    c->v = sl_xcalloc(n, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
        if (json_is_string(e))
            c->v[c->nv++] = json_string_value(e);
        else if (json_is_true(e))
            c->v[c->nv++] = "true";
        else if (json_is_false(e))
            c->v[c->nv++] = "false";
        else
            return bad(why, wn, "Statement %d: condition %s: values must be strings or booleans (numbers as "
                       "strings)", si, c->key);
        if (c->op == C_IP || c->op == C_NOTIP) {
            char ip[64];
            const char *sl = strchr(c->v[c->nv - 1], '/');
            size_t l = sl ? (size_t)(sl - c->v[c->nv - 1]) : strlen(c->v[c->nv - 1]);
            unsigned char buf[16];
            snprintf(ip, sizeof(ip), "%.*s", (int)SL_MIN(l, sizeof(ip) - 1), c->v[c->nv - 1]);
            bool v6 = strchr(ip, ':') != NULL;
            char *end;
            long bits = sl ? strtol(sl + 1, &end, 10) : 0;
            if (inet_pton(v6 ? AF_INET6 : AF_INET, ip, buf) != 1 ||
                (sl && (!sl[1] || *end || bits < 0 || bits > (v6 ? 128 : 32))))
                return bad(why, wn, "Statement %d: condition %s: \"%s\" is not an IP address or CIDR block", si,
                           c->key, c->v[c->nv - 1]);
        }
        double d;
        if (c->op >= C_DATEEQ && !date_of(c->v[c->nv - 1], &d))
            return bad(why, wn, "Statement %d: condition %s: \"%s\" is not a date (ISO 8601, e.g. "
                       "\"2026-12-03T18:00:00Z\", or epoch seconds)", si, c->key, c->v[c->nv - 1]);
    }
    return 0;
}

static bool known_key(const char *k)
{
    return !strncasecmp(k, "aws:", 4) || !strncasecmp(k, "s3:", 3);
}

static int compile_stmt(json_t *st, int si, const char *bucket, struct pstmt *s, char *why, size_t wn)
{
    if (!json_is_object(st))
        return bad(why, wn, "Statement %d must be an object", si);
    const char *k;
    json_t *v;
    json_object_foreach(st, k, v) {
        if (strcmp(k, "Sid") && strcmp(k, "Effect") && strcmp(k, "Principal") && strcmp(k, "NotPrincipal") &&
            strcmp(k, "Action") && strcmp(k, "NotAction") && strcmp(k, "Resource") && strcmp(k, "NotResource") &&
            strcmp(k, "Condition"))
            return bad(why, wn, "Statement %d: unknown element \"%s\" (Sid, Effect, Principal, NotPrincipal, Action, "
                       "NotAction, Resource, NotResource, Condition)", si, k);
    }
    json_t *sid = json_object_get(st, "Sid");
    if (sid && !json_is_string(sid))
        return bad(why, wn, "Statement %d: Sid must be a string", si);
    const char *eff = json_string_value(json_object_get(st, "Effect"));
    if (!eff || (strcmp(eff, "Allow") && strcmp(eff, "Deny")))
        return bad(why, wn, "Statement %d: Effect must be \"Allow\" or \"Deny\"", si);
    s->deny = !strcmp(eff, "Deny");
    /* Principal (or NotPrincipal: everybody but those): "*", {"AWS": "*" | NAME | ARN | [...]} */
    json_t *pr = json_object_get(st, "Principal"), *npr = json_object_get(st, "NotPrincipal");
    if (pr && npr)
        return bad(why, wn, "Statement %d: Principal and NotPrincipal cannot both be given", si);
    if (!pr && !npr)
        return bad(why, wn, "Statement %d: a bucket policy's statement needs a Principal (\"*\" for everybody)", si);
    s->not_principal = npr != NULL;
    if (npr)
        pr = npr;
    if (json_is_string(pr)) {
        if (strcmp(json_string_value(pr), "*"))
            return bad(why, wn, "Statement %d: Principal must be \"*\" or {\"AWS\": [...]}", si);
        s->any = true;
    } else {
        json_t *aws = json_is_object(pr) ? json_object_get(pr, "AWS") : NULL;
        if (!aws || json_object_size(pr) != 1)
            return bad(why, wn, "Statement %d: Principal must be \"*\" or {\"AWS\": [...]} (Shale's users: "
                       "\"arn:aws:iam::shale:user/NAME\" or \"NAME\")", si);
        if (strs(aws, &s->who, &s->nwho, "Principal.AWS", si, why, wn) < 0)
            return -1;
        for (int i = 0; i < s->nwho; i++) {
            const char *w = s->who[i];
            if (!strcmp(w, "*")) {
                s->any = true;
            } else if (!strncmp(w, "arn:", 4)) {
                if (strncmp(w, "arn:aws:iam::shale:user/", 24) || !w[24])
                    return bad(why, wn, "Statement %d: Invalid principal in policy: \"%s\" (Shale's users are "
                               "\"arn:aws:iam::shale:user/NAME\" or \"NAME\")", si, w);
                s->who[i] = w + 24;
            } else if (!*w || strchr(w, ':') || strchr(w, '/')) {
                return bad(why, wn, "Statement %d: Invalid principal in policy: \"%s\"", si, w);
            }
        }
    }
    /* Action / NotAction */
    json_t *a = json_object_get(st, "Action"), *na = json_object_get(st, "NotAction");
    if (!a == !na)
        return bad(why, wn, "Statement %d: one of Action or NotAction is required", si);
    s->not_action = na != NULL;
    if (strs(a ? a : na, &s->act, &s->nact, a ? "Action" : "NotAction", si, why, wn) < 0)
        return -1;
    for (int i = 0; i < s->nact; i++)
        if (strcmp(s->act[i], "*") && strncasecmp(s->act[i], "s3:", 3))
            return bad(why, wn, "Statement %d: Policy has invalid action \"%s\" (s3:ACTION, wildcards allowed)", si,
                       s->act[i]);
    /* Resource / NotResource: this bucket's */
    json_t *rs = json_object_get(st, "Resource"), *nr = json_object_get(st, "NotResource");
    if (!rs == !nr)
        return bad(why, wn, "Statement %d: one of Resource or NotResource is required", si);
    s->not_resource = nr != NULL;
    if (strs(rs ? rs : nr, &s->res, &s->nres, rs ? "Resource" : "NotResource", si, why, wn) < 0)
        return -1;
    for (int i = 0; i < s->nres; i++) {
        const char *x = s->res[i];
        if (!strcmp(x, "*"))
            continue;
        if (strncmp(x, "arn:aws:s3:::", 13))
            return bad(why, wn, "Statement %d: Policy has invalid resource \"%s\" (arn:aws:s3:::%s or "
                       "arn:aws:s3:::%s/KEY, wildcards allowed)", si, x, bucket, bucket);
        char bp[SL_MAX_BCKNAME * 2 + 1];
        size_t l = strcspn(x + 13, "/");
        snprintf(bp, sizeof(bp), "%.*s", (int)SL_MIN(l, sizeof(bp) - 1), x + 13);
        if (!glob(bp, bucket, false))
            return bad(why, wn, "Statement %d: Policy has invalid resource \"%s\": a bucket policy's resources are "
                       "its own bucket's (arn:aws:s3:::%s...)", si, x, bucket);
    }
    /* Condition {OP: {KEY: V | [V...]}} */
    json_t *cd = json_object_get(st, "Condition");
    bool ip_limited = false;
    if (cd) {
        if (!json_is_object(cd))
            return bad(why, wn, "Statement %d: Condition must be an object of operators", si);
        size_t cap = 0;
        const char *op;
        json_t *kv;
        json_object_foreach(cd, op, kv) {
            char base[64];
            size_t ol = strlen(op);
            bool ife = ol > 8 && !strcmp(op + ol - 8, "IfExists");
            snprintf(base, sizeof(base), "%.*s", (int)(ife ? ol - 8 : ol), op);
            int o = -1;
            for (int i = 0; ops[i]; i++)
                if (!strcmp(base, ops[i]))
                    o = i;
            if (o < 0)
                return bad(why, wn, "Statement %d: condition operator \"%s\" is not supported (String*, IpAddress, "
                           "NotIpAddress, Bool, Null, Numeric*, Date*, each with IfExists)", si, op);
            if (!json_is_object(kv) || !json_object_size(kv))
                return bad(why, wn, "Statement %d: condition %s must be an object of keys", si, op);
            const char *key;
            json_t *vals;
            json_object_foreach(kv, key, vals) {
                if (!known_key(key))
                    return bad(why, wn, "Statement %d: Policy has an invalid condition key \"%s\" (aws:... or "
                               "s3:...)", si, key);
                if ((size_t)s->nc == cap) {
                    cap = cap ? cap * 2 : 4;
                    s->c = sl_xrealloc(s->c, cap * sizeof(*s->c));
                }
                struct pcond *c = &s->c[s->nc++];
                memset(c, 0, sizeof(*c));
                c->op = o;
                c->ifexists = ife;
                c->key = key;
                if (cvals(vals, c, si, why, wn) < 0)
                    return -1;
                if (o == C_IP && !strcasecmp(key, "aws:SourceIp"))
                    for (int i = 0; i < c->nv; i++)
                        ip_limited |= strcmp(c->v[i], "0.0.0.0/0") && strcmp(c->v[i], "::/0");
            }
        }
    }
    if (s->not_principal && s->any)
        return bad(why, wn, "Statement %d: NotPrincipal \"*\" matches nobody: name the principals it excepts", si);
    /* public: anonymous requests get it (NotPrincipal: unless a name... anonymous has none) */
    s->public = !s->deny && (s->any || s->not_principal) && !ip_limited;
    return 0;
}

/* A policy's text compiled for bucket, or NULL with why. */
static struct policy *compile(const char *text, const char *bucket, char *why, size_t wn)
{
    size_t n = strlen(text);
    if (n > POLICY_MAX) {
        bad(why, wn, "Policies must be no more than 20 KiB (this one is %zu bytes)", n);
        return NULL;
    }
    json_error_t je;
    json_t *d = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
    if (!d) {
        bad(why, wn, "Policies must be valid JSON: %s (line %d, column %d)", je.text, je.line, je.column);
        return NULL;
    }
    struct policy *p = sl_xcalloc(1, sizeof(*p));
    p->doc = d;
    const char *k;
    json_t *v;
    if (!json_is_object(d)) {
        bad(why, wn, "a policy must be a JSON object with Version and Statement");
        goto fail;
    }
    json_object_foreach(d, k, v) {
        if (strcmp(k, "Version") && strcmp(k, "Statement") && strcmp(k, "Id")) {
            bad(why, wn, "unknown policy element \"%s\" (Version, Id, Statement)", k);
            goto fail;
        }
    }
    const char *ver = json_string_value(json_object_get(d, "Version"));
    if (json_object_get(d, "Version") && (!ver || (strcmp(ver, "2012-10-17") && strcmp(ver, "2008-10-17")))) {
        bad(why, wn, "Version must be \"2012-10-17\" (or \"2008-10-17\")");
        goto fail;
    }
    json_t *st = json_object_get(d, "Statement");
    size_t ns = json_is_array(st) ? json_array_size(st) : json_is_object(st) ? 1 : 0;
    if (!ns) {
        bad(why, wn, "Missing required field Statement (an object or a non-empty array of them)");
        goto fail;
    }
    p->s = sl_xcalloc(ns, sizeof(*p->s));
    for (size_t i = 0; i < ns; i++) {
        json_t *e = json_is_array(st) ? json_array_get(st, i) : st;
        p->n++;
        if (compile_stmt(e, (int)i, bucket, &p->s[i], why, wn) < 0)
            goto fail;
        const char *sid = sl_json_str(e, "Sid", "");
        for (size_t j = 0; *sid && j < i; j++)
            if (!strcmp(sid, sl_json_str(json_array_get(st, j), "Sid", ""))) {
                bad(why, wn, "Statement IDs (Sid) must be unique: \"%s\" is twice", sid);
                goto fail;
            }
        p->public |= p->s[i].public;
    }
    return p;
fail:
    policy_free(p);
    return NULL;
}

/* ---- the cache: per thread, by props object (immutable, one per version) ---- */

#define PC_N 8
struct pcache {
    struct {
        json_t *props;      /* referenced: its address is not reused while here */
        struct policy *p;
    } e[PC_N];
    unsigned next;
};
static pthread_key_t pc_key;
static pthread_once_t pc_once = PTHREAD_ONCE_INIT;

static void pc_free(void *arg)
{
    struct pcache *c = arg;
    for (int i = 0; i < PC_N; i++) {
        json_decref(c->e[i].props);
        policy_free(c->e[i].p);
    }
    free(c);
}

static void pc_init(void)
{
    pthread_key_create(&pc_key, pc_free);
}

/* The bucket's policy, compiled (NULL: none). *broken: it has one that no
 * longer compiles (set through the native API): the request is refused. */
static const struct policy *policy_of(const struct sl_bck *b, bool *broken)
{
    *broken = false;
    const char *text = json_string_value(json_object_get(b->props, "s3_policy"));
    if (!text || !*text)
        return NULL;
    pthread_once(&pc_once, pc_init);
    struct pcache *c = pthread_getspecific(pc_key);
    if (!c) {
        c = sl_xcalloc(1, sizeof(*c));
        pthread_setspecific(pc_key, c);
    }
    for (int i = 0; i < PC_N; i++)
        if (c->e[i].props == b->props) {
            *broken = !c->e[i].p;
            return c->e[i].p;
        }
    char why[256];
    struct policy *p = compile(text, b->name, why, sizeof(why));
    if (!p)
        sl_logw("bucket %s: its s3_policy does not compile (%s): S3 requests on it are refused until it is "
                    "set again", b->name, why);
    unsigned i = c->next++ % PC_N;
    json_decref(c->e[i].props);
    policy_free(c->e[i].p);
    c->e[i].props = json_incref(b->props);
    c->e[i].p = p;
    *broken = !p;
    return p;
}

/* ---- evaluation ---- */

struct pctx {
    struct sl_req *r;
    const char *user;       /* NULL: anonymous */
    char ip[64];
};

static const char *ctx_val(const struct pctx *x, const char *k, char *tmp, size_t tn)
{
    struct sl_req *r = x->r;
    if (!strcasecmp(k, "aws:SourceIp"))
        return x->ip;
    if (!strcasecmp(k, "aws:SecureTransport"))
        return sl_conf && sl_conf->use_https ? "true" : "false";
    if (!strcasecmp(k, "aws:username") || !strcasecmp(k, "aws:userid"))
        return x->user;
    if (!strcasecmp(k, "aws:PrincipalType"))
        return x->user ? "User" : "Anonymous";
    if (!strcasecmp(k, "aws:UserAgent"))
        return sl_req_header(r, "User-Agent");
    if (!strcasecmp(k, "aws:Referer"))
        return sl_req_header(r, "Referer");
    if (!strcasecmp(k, "aws:CurrentTime")) {
        s3_iso_time(sl_now_ns(), tmp, tn);
        return tmp;
    }
    if (!strcasecmp(k, "aws:EpochTime")) {
        snprintf(tmp, tn, "%lld", (long long)(sl_now_ns() / 1000000000));
        return tmp;
    }
    if (!r) /* (s3_policy_eval_text: no request) */
        return NULL;
    if (!strcasecmp(k, "s3:prefix"))
        return sl_req_query(r, "prefix");
    if (!strcasecmp(k, "s3:delimiter"))
        return sl_req_query(r, "delimiter");
    if (!strcasecmp(k, "s3:max-keys"))
        return sl_req_query(r, "max-keys");
    if (!strncasecmp(k, "s3:x-amz-", 9))
        return sl_req_header(r, k + 3);
    return NULL;
}

static bool ip_in(const char *ip, const char *cidr)
{
    unsigned char a[16], n[16];
    char net[64];
    const char *sl = strchr(cidr, '/');
    size_t l = sl ? (size_t)(sl - cidr) : strlen(cidr);
    snprintf(net, sizeof(net), "%.*s", (int)SL_MIN(l, sizeof(net) - 1), cidr);
    bool v6 = strchr(net, ':') != NULL;
    if (v6 != (strchr(ip, ':') != NULL) || inet_pton(v6 ? AF_INET6 : AF_INET, ip, a) != 1 ||
        inet_pton(v6 ? AF_INET6 : AF_INET, net, n) != 1)
        return false;
    int bits = sl ? atoi(sl + 1) : (v6 ? 128 : 32);
    for (int i = 0; bits > 0; i++, bits -= 8) {
        unsigned char m = bits >= 8 ? 0xff : (unsigned char)(0xff << (8 - bits));
        if ((a[i] & m) != (n[i] & m))
            return false;
    }
    return true;
}

static bool cond_true(const struct pcond *c, const struct pctx *x)
{
    char tmp[64];
    const char *v = ctx_val(x, c->key, tmp, sizeof(tmp));
    if (c->op == C_NULL) {
        bool want_absent = c->nv && !strcmp(c->v[0], "true");
        return want_absent == (v == NULL);
    }
    bool neg = c->op == C_STRNE || c->op == C_STRNEI || c->op == C_STRNLIKE || c->op == C_NOTIP || c->op == C_NUMNE ||
               c->op == C_DATENE;
    if (!v)
        return c->ifexists || neg;
    bool any = false;
    for (int i = 0; i < c->nv && !any; i++) {
        const char *w = c->v[i];
        switch (c->op) {
        case C_STREQ: case C_STRNE: any = !strcmp(v, w); break;
        case C_STREQI: case C_STRNEI: any = !strcasecmp(v, w); break;
        case C_STRLIKE: case C_STRNLIKE: any = glob(w, v, false); break;
        case C_IP: case C_NOTIP: any = ip_in(v, w); break;
        case C_BOOL: any = !strcasecmp(v, w); break;
        case C_DATEEQ: case C_DATENE: case C_DATELT: case C_DATELE: case C_DATEGT: case C_DATEGE: {
            double a, b;
            if (!date_of(v, &a) || !date_of(w, &b))
                break;
            any = c->op == C_DATEEQ || c->op == C_DATENE ? a == b : c->op == C_DATELT ? a < b :
                  c->op == C_DATELE ? a <= b : c->op == C_DATEGT ? a > b : a >= b;
            break;
        }
        default: {
            char *e1, *e2;
            double a = strtod(v, &e1), b = strtod(w, &e2);
            if (*e1 || *e2 || e1 == v || e2 == w)
                break;
            any = c->op == C_NUMEQ || c->op == C_NUMNE ? a == b : c->op == C_NUMLT ? a < b :
                  c->op == C_NUMLE ? a <= b : c->op == C_NUMGT ? a > b : a >= b;
        }
        }
    }
    return neg ? !any : any;
}

enum { P_NONE = 0, P_ALLOW, P_DENY };

/* resource "arn:aws:s3:::B" or ".../KEY"; any_key: a request on keys not
 * named (DeleteObjects): a Deny on any key of the bucket applies */
static bool res_match(const struct pstmt *s, const char *res, bool any_key)
{
    bool m = false;
    for (int i = 0; i < s->nres && !m; i++) {
        m = glob(s->res[i], res, false);
        if (!m && any_key && s->deny && !s->not_resource) /* any object resource (compile: this bucket's) */
            m = !strcmp(s->res[i], "*") || strchr(s->res[i] + 13, '/') != NULL;
    }
    return s->not_resource ? !m : m;
}

static int evaluate(const struct policy *p, const struct pctx *x, const char *action, const char *res, bool any_key,
                    bool skip_public)
{
    int out = P_NONE;
    for (int i = 0; i < p->n; i++) {
        const struct pstmt *s = &p->s[i];
        if (out == P_ALLOW && !s->deny)
            continue;
        bool who = s->any;
        for (int j = 0; !who && x->user && j < s->nwho; j++)
            who = !strcmp(s->who[j], x->user);
        if (s->not_principal)
            who = !who; /* everybody but those named (anonymous included) */
        if (!who)
            continue;
        bool am = false;
        for (int j = 0; j < s->nact && !am; j++)
            am = !strcmp(s->act[j], "*") || glob(s->act[j], action, true);
        if (am == s->not_action || !res_match(s, res, any_key))
            continue;
        bool ok = true;
        for (int j = 0; j < s->nc && ok; j++)
            ok = cond_true(&s->c[j], x);
        if (!ok)
            continue;
        if (s->deny)
            return P_DENY;
        if (!(skip_public && p->public))
            out = P_ALLOW;
    }
    return out;
}

int s3_policy_eval_text(const char *text, const char *bucket, const char *user, const char *ip, const char *action,
                        const char *resource, char *why, size_t wn)
{
    struct policy *p = compile(text, bucket, why, wn);
    if (!p)
        return -1;
    struct pctx x = { .user = user };
    snprintf(x.ip, sizeof(x.ip), "%s", ip);
    int rc = evaluate(p, &x, action, resource, false, false);
    policy_free(p);
    return rc;
}

/* ---- the request's actions ---- */

struct need {
    const char *action;
    char bucket[SL_MAX_BCKNAME + 1];
    const char *key;        /* NULL: the bucket */
    size_t klen;
    bool any_key;
    int acl_read;           /* granted by a bucket ACL with READ (1) or WRITE (2) */
};

static const char *bucket_action(const struct sl_req *r, int *acl)
{
    static const struct {
        const char *sub;
        const char *get, *put, *del;
    } t[] = {
        { "acl", "s3:GetBucketAcl", "s3:PutBucketAcl", NULL },
        { "policy", "s3:GetBucketPolicy", "s3:PutBucketPolicy", "s3:DeleteBucketPolicy" },
        { "policyStatus", "s3:GetBucketPolicyStatus", NULL, NULL },
        { "publicAccessBlock", "s3:GetBucketPublicAccessBlock", "s3:PutBucketPublicAccessBlock",
          "s3:PutBucketPublicAccessBlock" },
        { "tagging", "s3:GetBucketTagging", "s3:PutBucketTagging", "s3:PutBucketTagging" },
        { "versioning", "s3:GetBucketVersioning", "s3:PutBucketVersioning", NULL },
        { "location", "s3:GetBucketLocation", NULL, NULL },
        { "lifecycle", "s3:GetLifecycleConfiguration", "s3:PutLifecycleConfiguration", "s3:PutLifecycleConfiguration" },
        { "cors", "s3:GetBucketCORS", "s3:PutBucketCORS", "s3:PutBucketCORS" },
        { "encryption", "s3:GetEncryptionConfiguration", "s3:PutEncryptionConfiguration",
          "s3:PutEncryptionConfiguration" },
        { "object-lock", "s3:GetBucketObjectLockConfiguration", "s3:PutBucketObjectLockConfiguration", NULL },
        { "uploads", "s3:ListBucketMultipartUploads", NULL, NULL },
        { "versions", "s3:ListBucketVersions", NULL, NULL },
    };
    *acl = 0;
    for (size_t i = 0; i < SL_ARRAY_SIZE(t); i++) {
        if (!sl_req_query(r, t[i].sub))
            continue;
        const char *a = r->method == SL_M_GET ? t[i].get : r->method == SL_M_PUT ? t[i].put :
                        r->method == SL_M_DELETE ? t[i].del : NULL;
        if (a && (!strcmp(t[i].sub, "uploads") || !strcmp(t[i].sub, "versions")))
            *acl = 1;
        return a ? a : "s3:*";
    }
    switch (r->method) {
    case SL_M_GET:
    case SL_M_HEAD:
        *acl = 1;
        return "s3:ListBucket";
    case SL_M_PUT:
        return "s3:CreateBucket";
    case SL_M_DELETE:
        return "s3:DeleteBucket";
    default:
        return "s3:*";
    }
}

static const char *object_action(const struct sl_req *r, int *acl)
{
    bool up = sl_req_query(r, "uploadId") != NULL;
    *acl = 0;
    if (sl_req_query(r, "tagging"))
        return r->method == SL_M_GET ? "s3:GetObjectTagging" : r->method == SL_M_PUT ? "s3:PutObjectTagging" :
               "s3:DeleteObjectTagging";
    if (sl_req_query(r, "acl"))
        return r->method == SL_M_PUT ? "s3:PutObjectAcl" : "s3:GetObjectAcl";
    switch (r->method) {
    case SL_M_GET:
        if (up)
            return "s3:ListMultipartUploadParts";
        /* fall through */
    case SL_M_HEAD:
        return "s3:GetObject";
    case SL_M_DELETE:
        *acl = 2;
        return up ? "s3:AbortMultipartUpload" : "s3:DeleteObject";
    case SL_M_PUT:
    case SL_M_POST:
        *acl = 2;
        return "s3:PutObject";
    default:
        return "s3:*";
    }
}

/* what the request needs, into n[] (at most 2: copy's source); the count */
static int needs(struct sl_req *r, const struct s3req *q, struct need *n)
{
    int k = 0;
    memset(n, 0, 2 * sizeof(*n));
    snprintf(n[0].bucket, sizeof(n[0].bucket), "%s", q->bucket);
    if (!q->key) {
        n[0].action = bucket_action(r, &n[0].acl_read);
        if (r->method == SL_M_POST && sl_req_query(r, "delete")) {
            n[0].action = "s3:DeleteObject";
            n[0].any_key = true;
            n[0].acl_read = 2;
        }
        return 1;
    }
    n[0].key = q->key;
    n[0].klen = q->klen;
    n[0].action = object_action(r, &n[0].acl_read);
    k = 1;
    const char *src = r->method == SL_M_PUT ? sl_req_header(r, "x-amz-copy-source") : NULL;
    if (src) { /* [/]BUCKET/KEY[?versionId=], URL-encoded */
        size_t sl = strlen(src);
        char *tmp = sl_xmalloc(sl + 1);
        size_t dl = sl_url_decode(src, sl, tmp, false);
        tmp[dl] = 0;
        const char *sp = tmp + (*tmp == '/');
        size_t bl = strcspn(sp, "/");
        if (bl && bl <= SL_MAX_BCKNAME && sp[bl]) {
            memcpy(n[1].bucket, sp, bl);
            n[1].bucket[bl] = 0;
            n[1].action = "s3:GetObject";
            char *key = sl_xstrdup(sp + bl + 1);
            char *qm = strchr(key, '?');
            if (qm)
                *qm = 0;
            n[1].key = key;
            n[1].klen = strlen(key);
            k = 2;
        }
        free(tmp);
    }
    return k;
}

static void needs_free(struct need *n, int k)
{
    if (k > 1)
        free((char *)n[1].key);
}

/* one need against its bucket's policy and ACL: P_DENY, P_ALLOW, P_NONE;
 * *obj_acl: the object's ACL may still grant it (GetObject) */
static int decide(struct sl_req *r, const struct pctx *x, const struct need *n, bool admin, bool *obj_acl,
                  char *why, size_t wn)
{
    struct sl_bck b;
    struct sl_err e = { 0 };
    *obj_acl = false;
    if (sl_bck_resolve(n->bucket, "ais", NULL, &b, &e) < 0)
        return P_NONE; /* no such bucket: the handler answers (NoSuchBucket), or the roles decide */
    int out = P_NONE;
    bool broken;
    const struct policy *p = policy_of(&b, &broken);
    bool manage = !strcmp(n->action, "s3:GetBucketPolicy") || !strcmp(n->action, "s3:PutBucketPolicy") ||
                  !strcmp(n->action, "s3:DeleteBucketPolicy");
    if (broken && !(admin && manage)) {
        snprintf(why, wn, "bucket %s has a policy that does not compile (set through the bucket's props): an admin "
                 "must PUT ?policy again or DELETE it", b.name);
        sl_bck_release(&b);
        return P_DENY;
    }
    if (p) {
        struct sl_buf res;
        sl_buf_init(&res);
        sl_buf_printf(&res, "arn:aws:s3:::%s", b.name);
        if (n->key) {
            sl_buf_addc(&res, '/');
            sl_buf_add(&res, n->key, n->klen);
        } else if (n->any_key) {
            sl_buf_adds(&res, "/*");
        }
        sl_buf_addc(&res, 0);
        out = evaluate(p, x, n->action, res.p, n->any_key, !x->user && pab(b.props, PAB_RESTRICT));
        if (out == P_DENY && admin && manage)
            out = P_NONE; /* an admin can always repair a policy that locks everybody out */
        if (out == P_DENY)
            snprintf(why, wn, "%s on %s is denied by bucket %s's policy", n->action, res.p, b.name);
        sl_buf_free(&res);
    }
    if (out == P_NONE && n->acl_read) {
        int a = acl_of(json_string_value(json_object_get(b.props, "s3_acl")));
        if (acl_public(a) && pab(b.props, PAB_IGNORE_ACLS))
            a = ACL_PRIVATE;
        if ((a == ACL_PUBLIC_RW || (a == ACL_PUBLIC_READ && n->acl_read == 1)) ||
            (a == ACL_AUTH_READ && n->acl_read == 1 && x->user))
            out = P_ALLOW;
    }
    if (out == P_NONE && n->key && !strcmp(n->action, "s3:GetObject") && !pab(b.props, PAB_IGNORE_ACLS))
        *obj_acl = true;
    sl_bck_release(&b);
    return out;
}

int s3_authorize(struct sl_req *r, const struct s3req *q, struct s3auth *au)
{
    au->acl_need = 0;
    if (!sl_auth_on() || (r->trust != SL_TRUST_NONE && !r->client_fwd))
        return 0;
    struct sl_err err = { 0 };
    const char *a = sl_req_header(r, "Authorization");
    bool tok = (a && !strncasecmp(a, "Bearer ", 7)) || sl_req_header(r, "X-Amz-Security-Token") ||
               sl_req_query(r, "X-Amz-Security-Token");
    if (tok && sl_access_authenticate(r, &err) < 0) {
        s3_err(r, 403, "AccessDenied", "%s", err.msg);
        return -1;
    }
    if (!r->user && au->user[0])
        r->user = sl_users_claims(au->user);
    struct pctx x = { .r = r, .user = r->user ? sl_json_str(r->user, "sub", NULL) : NULL };
    const char *rem = sl_req_remote(r);
    if (rem) {
        /* "ip:port", "[v6]:port" */
        const char *s = rem + (*rem == '[');
        const char *e = *rem == '[' ? strchr(s, ']') : strrchr(s, ':');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        snprintf(x.ip, sizeof(x.ip), "%.*s", (int)SL_MIN(l, sizeof(x.ip) - 1), s);
        if (!strncmp(x.ip, "::ffff:", 7) && strchr(x.ip, '.'))
            memmove(x.ip, x.ip + 7, strlen(x.ip + 7) + 1);
    }
    bool admin = r->user && json_is_true(json_object_get(r->user, "admin"));
    if (!q->bucket[0]) { /* ListBuckets: the roles' */
        if (!r->user) {
            s3_err(r, 403, "AccessDenied", "Access Denied: listing the buckets needs a user (sign with a key bound "
                   "to one, or send a token)");
            return -1;
        }
        if (sl_access_s3(r, q->bucket, false, au->user, &err) < 0) {
            s3_err(r, 403, "AccessDenied", "%s", err.msg);
            return -1;
        }
        return 0;
    }
    struct need n[2];
    int k = needs(r, q, n);
    bool all = true, obj_acl = false;
    char why[512] = "";
    for (int i = 0; i < k; i++) {
        bool oa;
        int d = decide(r, &x, &n[i], admin, &oa, why, sizeof(why));
        if (d == P_DENY) {
            needs_free(n, k);
            sl_sec_refused(r, why);
            s3_err(r, 403, "AccessDenied", "Access Denied: %s", why);
            return -1;
        }
        if (d != P_ALLOW) {
            all = false;
            obj_acl |= oa && i == 0;
        }
    }
    needs_free(n, k);
    if (all)
        return 0;
    /* the roles (with a user), else the object's ACL (GetObject) */
    if (r->user && sl_access_s3(r, q->bucket, q->key != NULL, au->user, &err) == 0)
        return 0;
    if (obj_acl && k == 1) {
        au->acl_need = r->user ? 2 : 1;
        return 0;
    }
    if (!r->user) {
        sl_sec_refused(r, "anonymous");
        s3_err(r, 403, "AccessDenied", "Access Denied: an anonymous request (unsigned, no token) is allowed only "
               "where bucket %s's policy or ACL grants it", q->bucket);
    } else {
        s3_err(r, 403, "AccessDenied", "%s", err.msg[0] ? err.msg : "Access Denied");
    }
    return -1;
}

/* ---- the target's side: the object's own ACL ---- */

#define ACL_NEED_HDR "X-Shale-S3-Acl-Need"

const char *s3_acl_need_hdr(const struct s3auth *au)
{
    return au->acl_need == 1 ? ACL_NEED_HDR ": anonymous" : au->acl_need == 2 ? ACL_NEED_HDR ": authenticated" : NULL;
}

int s3_acl_need(const struct sl_req *r)
{
    if (r->trust != SL_TRUST_PEER)
        return 0;
    const char *h = sl_req_header(r, ACL_NEED_HDR);
    return !h ? 0 : !strcmp(h, "authenticated") ? 2 : 1;
}

bool s3_obj_acl_grants(const struct sl_req *r, const struct sl_objmd *md)
{
    int need = s3_acl_need(r);
    if (!need)
        return true;
    int a = md ? acl_of(sl_objmd_get_custom(md, ACL_MD)) : ACL_PRIVATE;
    return a == ACL_PUBLIC_READ || a == ACL_PUBLIC_RW || (a == ACL_AUTH_READ && need == 2);
}

void s3_obj_acl_refuse(struct sl_req *r)
{
    s3_err(r, 403, "AccessDenied", "Access Denied: neither the bucket's policy or ACL nor this object's ACL grants "
           "the %s request", s3_acl_need(r) == 2 ? "user's" : "anonymous");
}

/* ---- ?acl of an object (its target) ---- */

static void oacl_get(struct sl_req *r, void *arg)
{
    struct s3objref *o = arg;
    struct sl_objmd md;
    if (s3_objref_stat(r, o, &md)) {
        int a = acl_of(sl_objmd_get_custom(&md, ACL_MD));
        acl_answer(r, a < 0 ? ACL_PRIVATE : a);
        sl_objmd_free(&md);
    }
    s3_objref_free(o);
}

static void oacl_put(struct sl_req *r, void *arg)
{
    struct s3objref *o = arg;
    int a = acl_of_put(r);
    if (a >= 0 && acl_public(a) && pab(o->b.props, PAB_BLOCK_ACLS)) {
        s3_err(r, 403, "AccessDenied", "the ACL \"%s\" is public and bucket %s blocks public ACLs (its "
               "publicAccessBlock BlockPublicAcls); nothing was changed", canned[a], o->b.name);
        a = -1;
    }
    if (a >= 0) {
        struct sl_kv kv = { .k = (char *)ACL_MD, .v = (char *)canned[a] };
        struct sl_err err = { 0 };
        if (sl_obj_set_custom_ns(&o->b, o->key, o->klen, &kv, a == ACL_PRIVATE ? 0 : 1, ACL_MD, &err) < 0)
            s3_objref_err(r, &err);
        else
            sl_resp_empty(r, 200);
    }
    s3_objref_free(o);
}

static void oacl_put_body(struct sl_req *r)
{
    s3_body_offload(r, oacl_put, s3_objref_free);
}

void s3_obj_acl(struct sl_req *r, const struct s3req *q, const struct sl_bck *b)
{
    if (r->method != SL_M_GET && r->method != SL_M_PUT) {
        s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?acl (GET and PUT are)", r->method_str);
        return;
    }
    struct s3objref *o = s3_objref_new(b, q);
    if (r->method == SL_M_GET) {
        sl_req_offload(r, oacl_get, s3_objref_free, o);
        return;
    }
    r->ctx = o;
    sl_req_buffer_body(r, 64 * 1024, oacl_put_body);
}

/* ---- a bucket's ?acl, ?policy, ?policyStatus, ?publicAccessBlock (gateway) ---- */

struct bjob {
    struct sl_bck b;
};

static void bjob_free(void *arg)
{
    struct bjob *j = arg;
    if (!j)
        return;
    sl_bck_release(&j->b);
    free(j);
}

static struct bjob *bjob_new(const struct sl_bck *b)
{
    struct bjob *j = sl_xcalloc(1, sizeof(*j));
    sl_bck_copy(&j->b, b);
    return j;
}

static void put_bacl(struct sl_req *r, void *arg)
{
    struct bjob *j = arg;
    int a = acl_of_put(r);
    if (a >= 0 && acl_public(a) && pab(j->b.props, PAB_BLOCK_ACLS))
        s3_err(r, 403, "AccessDenied", "the ACL \"%s\" is public and bucket %s blocks public ACLs (its "
               "publicAccessBlock BlockPublicAcls); nothing was changed", canned[a], j->b.name);
    else if (a >= 0)
        props_answer(r, j->b.name, json_pack("{s:s}", "s3_acl", a == ACL_PRIVATE ? "" : canned[a]), 200);
    bjob_free(j);
}

static void put_policy(struct sl_req *r, void *arg)
{
    struct bjob *j = arg;
    char why[300];
    struct sl_buf t;
    sl_buf_init(&t);
    sl_buf_add(&t, r->body.p ? r->body.p : "", r->body.len);
    sl_buf_addc(&t, 0);
    struct policy *p = memchr(t.p, 0, r->body.len) ? NULL : compile(t.p, j->b.name, why, sizeof(why));
    if (!p && memchr(t.p, 0, r->body.len))
        snprintf(why, sizeof(why), "a policy is JSON text, without NUL bytes");
    if (!p)
        s3_err(r, 400, "MalformedPolicy", "%s; nothing was changed", why);
    else if (p->public && pab(j->b.props, PAB_BLOCK_POLICY))
        s3_err(r, 403, "AccessDenied", "this policy is public (an Allow for Principal \"*\" without an "
               "aws:SourceIp limit) and bucket %s blocks public policies (publicAccessBlock BlockPublicPolicy); "
               "nothing was changed", j->b.name);
    else
        props_answer(r, j->b.name, json_pack("{s:s}", "s3_policy", t.p), 204);
    policy_free(p);
    sl_buf_free(&t);
    bjob_free(j);
}

struct pabx {
    int v[4];
    bool bad;
};

static void pabx_end(void *arg, const char *parent, const char *name, const char *text)
{
    struct pabx *x = arg;
    (void)parent;
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, pab_names[i])) {
            if (!strcasecmp(text, "true"))
                x->v[i] = 1;
            else if (!strcasecmp(text, "false"))
                x->v[i] = 0;
            else
                x->bad = true;
        }
}

static void put_pab(struct sl_req *r, void *arg)
{
    struct bjob *j = arg;
    struct pabx x = { 0 };
    if (!r->body.len || s3_xml_parse(r->body.p, r->body.len, pabx_end, &x) < 0 || x.bad) {
        s3_err(r, 400, "MalformedXML", "The XML you provided was not well-formed or did not validate against our "
               "published schema (a PublicAccessBlockConfiguration of BlockPublicAcls, IgnorePublicAcls, "
               "BlockPublicPolicy, RestrictPublicBuckets: true or false); nothing was changed");
    } else {
        char v[5];
        for (int i = 0; i < 4; i++)
            v[i] = x.v[i] ? '1' : '0';
        v[4] = 0;
        props_answer(r, j->b.name, json_pack("{s:s}", "s3_pab", v), 200);
    }
    bjob_free(j);
}

static void del_prop(struct sl_req *r, void *arg)
{
    struct bjob *j = arg;
    props_answer(r, j->b.name, json_pack("{s:s}", sl_req_query(r, "policy") ? "s3_policy" : "s3_pab", ""), 204);
    bjob_free(j);
}

static void put_bacl_body(struct sl_req *r)
{
    s3_body_offload(r, put_bacl, bjob_free);
}

static void put_policy_body(struct sl_req *r)
{
    s3_body_offload(r, put_policy, bjob_free);
}

static void put_pab_body(struct sl_req *r)
{
    s3_body_offload(r, put_pab, bjob_free);
}

static void buffer(struct sl_req *r, const struct sl_bck *b, size_t max, sl_body_done_fn done)
{
    r->ctx = bjob_new(b);
    sl_req_buffer_body(r, max, done);
}

bool s3_bucket_access_op(struct sl_req *r, const struct sl_bck *b)
{
    int m = r->method;
    if (sl_req_query(r, "acl")) {
        if (m == SL_M_GET)
            acl_answer(r, SL_MAX(acl_of(json_string_value(json_object_get(b->props, "s3_acl"))), 0));
        else if (m == SL_M_PUT)
            buffer(r, b, 64 * 1024, put_bacl_body);
        else
            s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?acl (GET and PUT are)", r->method_str);
        return true;
    }
    const char *pol = json_string_value(json_object_get(b->props, "s3_policy"));
    if (sl_req_query(r, "policy")) {
        if (m == SL_M_GET) {
            if (!pol || !*pol) {
                s3_err(r, 404, "NoSuchBucketPolicy", "The bucket policy does not exist (bucket %s has none: PUT "
                       "?policy sets one)", b->name);
            } else {
                sl_resp_bytes(r, 200, "application/json", pol, strlen(pol));
            }
        } else if (m == SL_M_PUT) {
            buffer(r, b, 64 * 1024, put_policy_body); /* larger: refused with the reason */
        } else if (m == SL_M_DELETE) {
            sl_req_offload(r, del_prop, bjob_free, bjob_new(b));
        } else {
            s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?policy (GET, PUT and DELETE are)",
                   r->method_str);
        }
        return true;
    }
    if (sl_req_query(r, "policyStatus")) {
        if (m != SL_M_GET) {
            s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?policyStatus (GET is)", r->method_str);
        } else if (!pol || !*pol) {
            s3_err(r, 404, "NoSuchBucketPolicy", "The bucket policy does not exist (bucket %s has none)", b->name);
        } else {
            bool broken;
            const struct policy *p = policy_of(b, &broken);
            struct sl_buf x;
            sl_buf_init(&x);
            sl_buf_printf(&x, "<PolicyStatus xmlns=\"" XMLNS "\"><IsPublic>%s</IsPublic></PolicyStatus>",
                          p && p->public ? "true" : "false");
            s3_xml(r, 200, &x);
        }
        return true;
    }
    if (sl_req_query(r, "publicAccessBlock")) {
        const char *v = json_string_value(json_object_get(b->props, "s3_pab"));
        if (m == SL_M_GET) {
            if (!v || strlen(v) != 4) {
                s3_err(r, 404, "NoSuchPublicAccessBlockConfiguration", "The public access block configuration was "
                       "not found (bucket %s has none)", b->name);
                return true;
            }
            struct sl_buf x;
            sl_buf_init(&x);
            sl_buf_adds(&x, "<PublicAccessBlockConfiguration xmlns=\"" XMLNS "\">");
            for (int i = 0; i < 4; i++)
                sl_buf_printf(&x, "<%s>%s</%s>", pab_names[i], v[i] == '1' ? "true" : "false", pab_names[i]);
            sl_buf_adds(&x, "</PublicAccessBlockConfiguration>");
            s3_xml(r, 200, &x);
        } else if (m == SL_M_PUT) {
            buffer(r, b, 64 * 1024, put_pab_body);
        } else if (m == SL_M_DELETE) {
            sl_req_offload(r, del_prop, bjob_free, bjob_new(b));
        } else {
            s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?publicAccessBlock (GET, PUT and DELETE are)",
                   r->method_str);
        }
        return true;
    }
    return false;
}
