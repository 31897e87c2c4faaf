/* SPDX-License-Identifier: MIT
 * s3.c: the S3 front end's routing (authenticate, authorise, then the
 * bucket requests here or the object's target), and the requests on
 * buckets (ListBuckets, Create/Head/Delete bucket, ListObjects v1/v2,
 * location, versioning, acl, DeleteObjects). See s3.h.
 */
#include "s3.h"
#include "s3obj.h"
#include "access.h"
#include "cluster.h"
#include "conf.h"
#include "fwd.h"
#include "jsonx.h"
#include "log.h"
#include "lso.h"
#include "node.h"
#include "peer.h"
#include "read.h"
#include "s3sse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>


/* a bucket handed to a pool thread (sl_bck_copy) */
static void bck_free(void *p)
{
    if (p)
        sl_bck_release(p);
    free(p);
}

/* ---- bucket names (S3's rules, stricter than ais://) ---- */

static bool s3_bucket_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 3 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
            return false;
        if (c == '.' && i && (s[i - 1] == '.' || s[i - 1] == '-'))
            return false;
        if (c == '-' && i && s[i - 1] == '.')
            return false;
    }
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
        return false;
    if (s[n - 1] == '-' || s[n - 1] == '.')
        return false;
    int a, b, c, d;
    char tail;
    if (sscanf(s, "%d.%d.%d.%d%c", &a, &b, &c, &d, &tail) == 4)
        return false; /* an IP address */
    return true;
}

/* ---- ListBuckets ----
 * Sorted by name; paged as S3 pages it: max-buckets (1..10000), prefix, and continuation-token (the last name
 * of the page before, hex-encoded) answered with the next page's ContinuationToken. */

static void hexenc(struct sl_buf *b, const char *s, size_t n);
static int hexdec(const char *s, struct sl_buf *out);

static int bname_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void list_buckets(struct sl_req *r)
{
    const char *mb = sl_req_query(r, "max-buckets"), *prefix = sl_req_query(r, "prefix");
    const char *tok = sl_req_query(r, "continuation-token");
    long max = 10000;
    if (mb) {
        char *e;
        max = strtol(mb, &e, 10);
        if (!*mb || *e || max < 1 || max > 10000) {
            s3_err(r, 400, "InvalidArgument", "max-buckets: \"%s\" is not an integer from 1 to 10000", mb);
            return;
        }
    }
    struct sl_buf after;
    sl_buf_init(&after);
    if (tok && *tok && hexdec(tok, &after) < 0) {
        sl_buf_free(&after);
        s3_err(r, 400, "InvalidArgument", "The continuation token provided is incorrect");
        return;
    }
    const char *cur = after.p ? after.p : "";
    struct sl_bmd *bmd = sl_bmd_get();
    const char **names = sl_xcalloc((size_t)bmd->n + 1, sizeof(*names));
    const struct sl_bck **bk = sl_xcalloc((size_t)bmd->n + 1, sizeof(*bk));
    int n = 0;
    for (int i = 0; i < bmd->n; i++) {
        const struct sl_bck *k = &bmd->bcks[i];
        if (strcmp(k->provider, "ais") || (prefix && strncmp(k->name, prefix, strlen(prefix))) ||
            strcmp(k->name, cur) <= 0)
            continue;
        names[n++] = k->name;
    }
    qsort(names, (size_t)n, sizeof(*names), bname_cmp);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < bmd->n; j++)
            if (bmd->bcks[j].name == names[i])
                bk[i] = &bmd->bcks[j];
    struct sl_buf b;
    sl_buf_init(&b);
    sl_buf_adds(&b, "<ListAllMyBucketsResult xmlns=\"" XMLNS "\">");
    s3_owner_xml(&b);
    sl_buf_adds(&b, "<Buckets>");
    int shown = n < max ? n : (int)max;
    for (int i = 0; i < shown; i++) {
        char t[64];
        s3_iso_time(bk[i]->created, t, sizeof(t));
        sl_buf_adds(&b, "<Bucket>");
        s3_xel(&b, "Name", bk[i]->name);
        s3_xel(&b, "CreationDate", t);
        sl_buf_adds(&b, "</Bucket>");
    }
    sl_buf_adds(&b, "</Buckets>");
    if (shown < n) {
        sl_buf_adds(&b, "<ContinuationToken>");
        hexenc(&b, bk[shown - 1]->name, strlen(bk[shown - 1]->name));
        sl_buf_adds(&b, "</ContinuationToken>");
    }
    if (prefix)
        s3_xel(&b, "Prefix", prefix);
    sl_buf_adds(&b, "</ListAllMyBucketsResult>");
    sl_bmd_put(bmd);
    free(names);
    free(bk);
    sl_buf_free(&after);
    s3_xml(r, 200, &b);
}

/* Headers asking for what Shale does not do are refused, never ignored: a
 * client that asked for an ACL must not
 * believe it got them. Every bucket and object has the one ACL above, so
 * the canned ACL "private" (and bucket-owner-full-control) is what is
 * already so. -1 when refused (answered). */
static int unsupported_hdrs(struct sl_req *r)
{
    static const char *const no[] = { "x-amz-grant-read", "x-amz-grant-write", "x-amz-grant-read-acp",
                                      "x-amz-grant-write-acp", "x-amz-grant-full-control",
                                      "x-amz-website-redirect-location", NULL };
    if (r->method != SL_M_PUT && r->method != SL_M_POST)
        return 0;
    if (s3_acl_check_hdr(r) < 0) /* a canned ACL (s3policy.c) */
        return -1;
    const char *sc = sl_req_header(r, "x-amz-storage-class");
    if (sc && strcmp(sc, "STANDARD")) {
        s3_err(r, 501, "NotImplemented", "x-amz-storage-class \"%s\" is not implemented: Shale has one storage class, "
               "STANDARD; nothing was changed", sc);
        return -1;
    }
    for (int i = 0; no[i]; i++) {
        const char *v = sl_req_header(r, no[i]);
        if (v && *v) {
            s3_err(r, 501, "NotImplemented", "%s is not implemented by Shale; send the request without it; nothing "
                   "was changed", no[i]);
            return -1;
        }
    }
    return 0;
}

/* ---- ListObjects v1 / v2 ---- */

static void hexenc(struct sl_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        sl_buf_addc(b, hex[(unsigned char)s[i] >> 4]);
        sl_buf_addc(b, hex[(unsigned char)s[i] & 15]);
    }
}

static int hexdec(const char *s, struct sl_buf *out)
{
    size_t n = strlen(s);
    if (n % 2)
        return -1;
    for (size_t i = 0; i < n; i += 2) {
        int v = 0;
        for (int j = 0; j < 2; j++) {
            char c = s[i + j];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0)
                return -1;
            v = v * 16 + d;
        }
        if (!v)
            return -1;
        sl_buf_addc(out, (char)v);
    }
    sl_buf_addc(out, 0);
    out->len--;
    return 0;
}

struct lsitem {
    char *name;        /* key or common prefix */
    bool cp;
    uint64_t size;
    char etag[160];
    char mtime[64];
};

static void list_objects(struct sl_req *r, void *arg)
{
    struct sl_bck *bck = arg;
    /* (?versions, ListObjectVersions, is s3ver.c's) */
    bool v2 = sl_req_query(r, "list-type") && !strcmp(sl_req_query(r, "list-type"), "2");
    const char *prefix = sl_req_query(r, "prefix") ? sl_req_query(r, "prefix") : "";
    const char *delim = sl_req_query(r, "delimiter") ? sl_req_query(r, "delimiter") : "";
    const char *mk = sl_req_query(r, "max-keys");
    const char *enc = sl_req_query(r, "encoding-type");
    bool url = enc && !strcmp(enc, "url");
    bool owner = !v2 || (sl_req_query(r, "fetch-owner") && !strcmp(sl_req_query(r, "fetch-owner"), "true"));
    const char *marker = v2 ? NULL : sl_req_query(r, "marker");
    const char *start_after = v2 ? sl_req_query(r, "start-after") : NULL;
    const char *token = v2 ? sl_req_query(r, "continuation-token") : NULL;
    long maxk = 1000;
    if (enc && !url) {
        s3_err(r, 400, "InvalidArgument", "Invalid Encoding Method specified in Request (valid: url)");
        goto out;
    }
    if (mk) {
        char *e;
        maxk = strtol(mk, &e, 10);
        if (!*mk || *e || maxk < 0) {
            s3_err(r, 400, "InvalidArgument", "max-keys: \"%s\" is not a non-negative integer", mk);
            goto out;
        }
        if (maxk > 1000)
            maxk = 1000;
    }
    struct sl_buf cursor;
    sl_buf_init(&cursor);
    if (token && *token) {
        if (hexdec(token, &cursor) < 0) {
            sl_buf_free(&cursor);
            s3_err(r, 400, "InvalidArgument", "The continuation token provided is incorrect");
            goto out;
        }
    } else {
        const char *c = marker ? marker : start_after ? start_after : "";
        sl_buf_adds(&cursor, c);
        sl_buf_addc(&cursor, 0);
        cursor.len--;
    }
    const char *cur = cursor.p ? cursor.p : "";
    size_t plen = strlen(prefix), dlen = strlen(delim);
    /* a cursor that is itself a common prefix: its keys were rolled up */
    char *last_cp = NULL;
    if (dlen && !strncmp(cur, prefix, plen) && strlen(cur) >= plen + dlen) {
        const char *d = strstr(cur + plen, delim);
        if (d && d + dlen == cur + strlen(cur))
            last_cp = sl_xstrdup(cur);
    }
    struct lsitem *items = NULL;
    int nitems = 0;
    bool truncated = false;
    struct sl_err err = { 0 };
    char *lstoken = sl_xstrdup("");
    int rc = 0;
    if (maxk > 0) {
        for (int pages = 0; pages < 1000000; pages++) {
            json_t *v = json_pack("{s:s,s:s,s:s,s:i,s:s,s:s}", "prefix", prefix, "start_after", cur,
                                  "continuation_token", lstoken, "pagesize", 1000, "props",
                                  "name,size,checksum,atime,custom", "time_format",
                                  "2006-01-02T15:04:05.000Z07:00");
            struct sl_lsomsg m;
            struct sl_lspage pg = { 0 };
            rc = sl_lsomsg_parse(v, &m, 1000, &err);
            json_decref(v);
            if (rc == 0)
                rc = sl_cluster_list_page(bck, &m, &pg, &err);
            sl_lsomsg_free(&m);
            if (rc < 0) {
                sl_lspage_free(&pg);
                break;
            }
            int i;
            for (i = 0; i < pg.n && !truncated; i++) {
                const struct sl_lsent *e = &pg.ents[i];
                if (last_cp && !strncmp(e->name, last_cp, strlen(last_cp)))
                    continue;
                const char *d = dlen ? strstr(e->name + plen, delim) : NULL;
                if (nitems == maxk) {
                    truncated = true;
                    break;
                }
                struct lsitem *it;
                items = sl_xrealloc(items, (size_t)(nitems + 1) * sizeof(*items));
                it = &items[nitems++];
                memset(it, 0, sizeof(*it));
                if (d) {
                    it->cp = true;
                    it->name = sl_xstrndup(e->name, (size_t)(d - e->name) + dlen);
                    free(last_cp);
                    last_cp = sl_xstrdup(it->name);
                } else {
                    it->name = sl_xstrdup(e->name);
                    it->size = e->size;
                    s3_entry_etag(e, it->etag, sizeof(it->etag));
                    snprintf(it->mtime, sizeof(it->mtime), "%s", e->atime ? e->atime : "");
                }
            }
            bool more = pg.token && pg.token[0];
            free(lstoken);
            lstoken = sl_xstrdup(more ? pg.token : "");
            sl_lspage_free(&pg);
            if (truncated || !more)
                break;
        }
    }
    free(lstoken);
    free(last_cp);
    if (rc < 0) {
        s3_err_sl(r, &err);
    } else {
        struct sl_buf b;
        sl_buf_init(&b);
        const char *root = "ListBucketResult";
        sl_buf_printf(&b, "<%s xmlns=\"" XMLNS "\">", root);
        s3_xel(&b, "Name", bck->name);
        s3_xel_key(&b, "Prefix", prefix, plen, url);
        if (v2) {
            if (token)
                s3_xel(&b, "ContinuationToken", token);
            if (start_after)
                s3_xel_key(&b, "StartAfter", start_after, strlen(start_after), url);
            sl_buf_printf(&b, "<KeyCount>%d</KeyCount>", nitems);
        } else {
            s3_xel_key(&b, "Marker", marker ? marker : "", marker ? strlen(marker) : 0, url);
        }
        sl_buf_printf(&b, "<MaxKeys>%ld</MaxKeys>", maxk);
        if (dlen)
            s3_xel_key(&b, "Delimiter", delim, dlen, url);
        if (url)
            s3_xel(&b, "EncodingType", "url");
        sl_buf_printf(&b, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
        if (truncated && nitems) {
            const char *last = items[nitems - 1].name;
            if (v2) {
                sl_buf_adds(&b, "<NextContinuationToken>");
                hexenc(&b, last, strlen(last));
                sl_buf_adds(&b, "</NextContinuationToken>");
            } else if (dlen) {
                s3_xel_key(&b, "NextMarker", last, strlen(last), url);
            }
        }
        for (int i = 0; i < nitems; i++) {
            struct lsitem *it = &items[i];
            if (it->cp) {
                sl_buf_adds(&b, "<CommonPrefixes>");
                s3_xel_key(&b, "Prefix", it->name, strlen(it->name), url);
                sl_buf_adds(&b, "</CommonPrefixes>");
                continue;
            }
            sl_buf_adds(&b, "<Contents>");
            s3_xel_key(&b, "Key", it->name, strlen(it->name), url);
            s3_xel(&b, "LastModified", it->mtime);
            sl_buf_adds(&b, "<ETag>&quot;");
            s3_xml_esc(&b, it->etag, strlen(it->etag));
            sl_buf_adds(&b, "&quot;</ETag>");
            sl_buf_printf(&b, "<Size>%llu</Size>", (unsigned long long)it->size);
            sl_buf_adds(&b, "<StorageClass>STANDARD</StorageClass>");
            if (owner)
                s3_owner_xml(&b);
            sl_buf_adds(&b, "</Contents>");
        }
        sl_buf_printf(&b, "</%s>", root);
        s3_xml(r, 200, &b);
    }
    for (int i = 0; i < nitems; i++)
        free(items[i].name);
    free(items);
    sl_buf_free(&cursor);
out:
    bck_free(bck);
}

/* ---- ListMultipartUploads: every target's uploads in flight for the bucket ---- */

struct upent {
    char *key, *id;
    int64_t initiated;
};

static int upent_cmp(const void *a, const void *b)
{
    const struct upent *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->initiated < y->initiated ? -1 : x->initiated > y->initiated;
}

static void add_uploads(struct upent **v, int *n, json_t *arr)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        const char *k = json_string_value(json_object_get(e, "key")), *id = json_string_value(json_object_get(e, "id"));
        if (!k || !id)
            continue;
        *v = sl_xrealloc(*v, (size_t)(*n + 1) * sizeof(**v));
        (*v)[*n] = (struct upent){ sl_xstrdup(k), sl_xstrdup(id), json_integer_value(json_object_get(e, "initiated")) };
        (*n)++;
    }
}

static void list_uploads(struct sl_req *r, void *arg)
{
    struct sl_bck *bck = arg;
    struct upent *v = NULL;
    int n = 0;
    if (sl_is_target()) { /* standalone: they are all here */
        json_t *a = s3_local_uploads(bck->bid);
        add_uploads(&v, &n, a);
        json_decref(a);
    } else {
        struct sl_tfan t;
        sl_tfan_init(&t, 0, "GET", "/v1/s3/uploads?bid=%llu", (unsigned long long)bck->bid);
        sl_tfan_run(&t, 0);
        for (int i = 0; i < t.n; i++) {
            if (!t.f[i].ok || t.f[i].resp.status != 200) {
                s3_err(r, 503, "ServiceUnavailable", "t[%s] did not list its uploads (%s); retry", t.who[i]->id,
                       t.f[i].resp.err);
                sl_tfan_free(&t);
                goto out;
            }
            json_t *a = json_loadb(t.f[i].resp.body.p ? t.f[i].resp.body.p : "[]", t.f[i].resp.body.len, 0, NULL);
            add_uploads(&v, &n, a);
            json_decref(a);
        }
        sl_tfan_free(&t);
    }
    if (n)
        qsort(v, (size_t)n, sizeof(*v), upent_cmp);
    const char *prefix = sl_req_query(r, "prefix") ? sl_req_query(r, "prefix") : "";
    const char *delim = sl_req_query(r, "delimiter") ? sl_req_query(r, "delimiter") : "";
    const char *km = sl_req_query(r, "key-marker") ? sl_req_query(r, "key-marker") : "";
    const char *um = sl_req_query(r, "upload-id-marker") ? sl_req_query(r, "upload-id-marker") : "";
    const char *mu = sl_req_query(r, "max-uploads");
    long maxu = mu ? atol(mu) : 1000;
    if (maxu < 0 || maxu > 1000)
        maxu = 1000;
    struct sl_buf b, items;
    sl_buf_init(&b);
    sl_buf_init(&items);
    sl_buf_adds(&b, "<ListMultipartUploadsResult xmlns=\"" XMLNS "\">");
    s3_xel(&b, "Bucket", bck->name);
    s3_xel(&b, "KeyMarker", km);
    s3_xel(&b, "UploadIdMarker", um);
    s3_xel(&b, "Prefix", prefix);
    if (*delim)
        s3_xel(&b, "Delimiter", delim);
    sl_buf_printf(&b, "<MaxUploads>%ld</MaxUploads>", maxu);
    int shown = 0;
    bool more = false, past_um = !*um;
    const char *lastk = "", *lastid = "";
    char *last_cp = NULL;
    size_t plen = strlen(prefix), dlen = strlen(delim);
    for (int i = 0; i < n; i++) {
        if (strncmp(v[i].key, prefix, plen))
            continue;
        int kc = strcmp(v[i].key, km);
        if (*km && (kc < 0 || (kc == 0 && !*um)))
            continue;
        if (*km && kc == 0 && !past_um) { /* the same key: uploads after the marker id */
            if (!strcmp(v[i].id, um))
                past_um = true;
            continue;
        }
        const char *d = dlen ? strstr(v[i].key + plen, delim) : NULL;
        if (d && last_cp && !strncmp(v[i].key, last_cp, strlen(last_cp)))
            continue;
        if (shown == maxu) {
            more = true;
            break;
        }
        shown++;
        if (d) {
            free(last_cp);
            last_cp = sl_xstrndup(v[i].key, (size_t)(d - v[i].key) + dlen);
            sl_buf_adds(&items, "<CommonPrefixes>");
            s3_xel(&items, "Prefix", last_cp);
            sl_buf_adds(&items, "</CommonPrefixes>");
            continue;
        }
        char t[64];
        s3_iso_time(v[i].initiated, t, sizeof(t));
        sl_buf_adds(&items, "<Upload>");
        s3_xel(&items, "Key", v[i].key);
        s3_xel(&items, "UploadId", v[i].id);
        sl_buf_adds(&items, "<Initiator><ID>shale</ID><DisplayName>shale</DisplayName></Initiator>");
        s3_owner_xml(&items);
        sl_buf_adds(&items, "<StorageClass>STANDARD</StorageClass>");
        s3_xel(&items, "Initiated", t);
        sl_buf_adds(&items, "</Upload>");
        lastk = v[i].key;
        lastid = v[i].id;
    }
    if (more) {
        s3_xel(&b, "NextKeyMarker", lastk);
        s3_xel(&b, "NextUploadIdMarker", lastid);
    }
    sl_buf_printf(&b, "<IsTruncated>%s</IsTruncated>", more ? "true" : "false");
    if (items.len)
        sl_buf_add(&b, items.p, items.len);
    sl_buf_free(&items);
    sl_buf_adds(&b, "</ListMultipartUploadsResult>");
    s3_xml(r, 200, &b);
    free(last_cp);
out:
    for (int i = 0; i < n; i++) {
        free(v[i].key);
        free(v[i].id);
    }
    free(v);
    bck_free(bck);
}

/* ---- create / delete bucket ---- */

static void create_bucket(struct sl_req *r, void *arg)
{
    char *name = arg;
    struct sl_err err = { 0 };
    struct sl_bck b;
    /* us-east-1 semantics: creating a bucket that exists succeeds and changes nothing */
    int have = sl_bck_resolve(name, "ais", NULL, &b, &err) == 0;
    if (have)
        sl_bck_release(&b);
    json_t *lock = have ? NULL : s3_lock_create_props(r); /* x-amz-bucket-object-lock-enabled (s3lock.c) */
    if (!have && (sl_cluster_bck_create(name, &err) < 0 || s3_acl_after_create(name, r, &err) < 0)) {
        json_decref(lock);
        s3_err_sl(r, &err);
    } else if (lock) {
        sl_hdr_addf(r, "Location", "/%s", name);
        s3_primary_bck_call(r, "PATCH", name, json_pack("{s:s,s:o}", "action", "set-bprops", "value", lock), 200);
    } else {
        sl_hdr_addf(r, "Location", "/%s", name);
        sl_resp_empty(r, 200);
    }
    free(name);
}

/* Send msg (stolen) to the primary gateway's /v1/buckets/NAME; answer ok
 * with ok_status, or the primary's error as an S3 error (s3util.c). */
static void primary_bck_call(struct sl_req *r, const char *method, const char *bucket, json_t *msg, int ok_status)
{
    s3_primary_bck_call(r, method, bucket, msg, ok_status);
}

static void delete_bucket(struct sl_req *r, void *arg)
{
    struct sl_bck *bck = arg;
    struct sl_err err = { 0 };
    json_t *v = json_pack("{s:s,s:i}", "props", "name", "pagesize", 1);
    struct sl_lsomsg m;
    struct sl_lspage pg = { 0 };
    int rc = sl_lsomsg_parse(v, &m, 1, &err);
    json_decref(v);
    m.flags |= SL_LSO_VERSIONS; /* older versions and delete markers keep it too, as in S3 */
    if (rc == 0)
        rc = sl_cluster_list_page(bck, &m, &pg, &err);
    sl_lsomsg_free(&m);
    if (rc < 0) {
        s3_err_sl(r, &err);
    } else if (pg.n) {
        bool old = sl_objname_vkey(pg.ents[0].name, pg.ents[0].nlen) != pg.ents[0].nlen;
        s3_err(r, 409, "BucketNotEmpty", "The bucket you tried to delete is not empty (it holds %.*s%s, ...)",
               (int)sl_objname_vkey(pg.ents[0].name, pg.ents[0].nlen), pg.ents[0].name,
               old ? ": older versions or delete markers of it (delete them by versionId)" : "");
    } else {
        primary_bck_call(r, "DELETE", bck->name, json_pack("{s:s}", "action", "destroy-bck"), 204);
    }
    sl_lspage_free(&pg);
    bck_free(bck);
}

static struct sl_bck *bck_copy(const struct sl_bck *b)
{
    struct sl_bck *c = sl_xmalloc(sizeof(*c));
    sl_bck_copy(c, b);
    return c;
}

/* ---- DeleteObjects ---- */

struct delx {
    char **keys;
    char **vids;          /* each Object's VersionId, NULL none */
    int n;
    bool quiet, bad;
};

static void delx_end(void *arg, const char *parent, const char *name, const char *text)
{
    struct delx *d = arg;
    if (!strcmp(name, "Key") && !strcmp(parent, "Object")) {
        if (d->n >= 1000) {
            d->bad = true;
            return;
        }
        d->keys = sl_xrealloc(d->keys, (size_t)(d->n + 1) * sizeof(char *));
        d->vids = sl_xrealloc(d->vids, (size_t)(d->n + 1) * sizeof(char *));
        d->vids[d->n] = NULL;
        d->keys[d->n++] = sl_xstrdup(text);
    } else if (!strcmp(name, "Quiet")) {
        d->quiet = !strcasecmp(text, "true");
    } else if (!strcmp(name, "VersionId") && !strcmp(parent, "Object") && d->n && !d->vids[d->n - 1]) {
        d->vids[d->n - 1] = sl_xstrdup(text); /* (Key comes first in every SDK's body) */
    }
}

static void delete_objects(struct sl_req *r, void *arg)
{
    struct sl_bck *bck = arg;
    struct delx d = { 0 };
    if (s3_xml_parse(r->body.p ? r->body.p : "", r->body.len, delx_end, &d) < 0 || d.bad || !d.n) {
        s3_err(r, 400, "MalformedXML", "The XML you provided was not well-formed or did not validate against our "
               "published schema (a Delete of 1 to 1000 Object/Key elements)");
        goto out;
    }
    struct sl_buf b;
    sl_buf_init(&b);
    sl_buf_adds(&b, "<DeleteResult xmlns=\"" XMLNS "\">");
    struct sl_smap *s = sl_smap_get();
    for (int i = 0; i < d.n; i++) {
        size_t kl = strlen(d.keys[i]);
        struct sl_buf un, url;
        sl_buf_init(&un);
        sl_buf_init(&url);
        sl_obj_uname(&un, "ais", bck->name, d.keys[i], kl);
        const struct sl_snode *t = sl_smap_hrw_target(s, un.p, un.len);
        int status = 503;
        char msg[600] = "the cluster has no active targets";
        bool dm = false;
        char vid[24] = "";
        if (t && (bck->s3ver != SL_S3VER_OFF || d.vids[i])) { /* versions: s3ver.c */
            status = s3ver_remote_delete(t, bck, d.keys[i], d.vids[i], s3_lock_bypass(r), &dm, vid, msg, sizeof(msg));
        } else if (t) {
            sl_peer_obj_url(&url, t->url, bck->name, "ais", d.keys[i], kl);
            sl_peer_add_redirect_marks(&url, G.id);
            struct sl_peer_resp pr = { 0 };
            if (sl_peer_call("DELETE", url.p, NULL, 0, NULL, 0, 0, &pr) < 0) {
                snprintf(msg, sizeof(msg), "t[%s] did not answer: %s", t->id, pr.err);
            } else {
                status = (int)pr.status;
                snprintf(msg, sizeof(msg), "%s", pr.err);
            }
            sl_peer_resp_free(&pr);
        }
        if (status < 300 || status == 404) {
            if (!d.quiet) {
                sl_buf_adds(&b, "<Deleted>");
                s3_xel(&b, "Key", d.keys[i]);
                if (d.vids[i])
                    s3_xel(&b, "VersionId", d.vids[i]);
                if (dm)
                    sl_buf_adds(&b, "<DeleteMarker>true</DeleteMarker>");
                if (dm && !d.vids[i] && vid[0])
                    s3_xel(&b, "DeleteMarkerVersionId", vid);
                sl_buf_adds(&b, "</Deleted>");
            }
        } else {
            sl_buf_adds(&b, "<Error>");
            s3_xel(&b, "Key", d.keys[i]);
            if (d.vids[i])
                s3_xel(&b, "VersionId", d.vids[i]);
            s3_xel(&b, "Code", status == 503 ? "ServiceUnavailable" : status == 400 ? "InvalidArgument"
                               : status == 403 ? "AccessDenied" : "InternalError");
            s3_xel(&b, "Message", msg);
            sl_buf_adds(&b, "</Error>");
        }
        sl_buf_free(&un);
        sl_buf_free(&url);
    }
    sl_smap_put(s);
    sl_buf_adds(&b, "</DeleteResult>");
    s3_xml(r, 200, &b);
out:
    for (int i = 0; i < d.n; i++) {
        free(d.keys[i]);
        free(d.vids[i]);
    }
    free(d.keys);
    free(d.vids);
    bck_free(bck);
}

static void delete_objects_body(struct sl_req *r)
{
    s3_body_offload(r, delete_objects, bck_free);
}

/* ---- PUT ?versioning ----
 * The bucket's props "s3_versioning": "Enabled" or "Suspended" (s3ver.c).
 * MFA Delete is refused. */

struct verx {
    char status[16];
    bool mfa, seen;
};

static void verx_end(void *arg, const char *parent, const char *name, const char *text)
{
    struct verx *v = arg;
    if (!strcmp(name, "Status")) {
        snprintf(v->status, sizeof(v->status), "%s", text);
        v->seen = true;
    } else if (!strcmp(name, "MfaDelete") && !strcmp(text, "Enabled")) {
        v->mfa = true;
    }
}

static void put_versioning(struct sl_req *r, void *arg)
{
    struct sl_bck *bck = arg;
    struct verx v = { 0 };
    bool on = false;
    if (s3_xml_parse(r->body.p ? r->body.p : "", r->body.len, verx_end, &v) < 0 || !v.seen ||
        (!(on = !strcmp(v.status, "Enabled")) && strcmp(v.status, "Suspended"))) {
        s3_err(r, 400, "MalformedXML", "The XML you provided was not well-formed or did not validate against our "
               "published schema (a VersioningConfiguration with Status Enabled or Suspended)");
    } else if (v.mfa) {
        s3_err(r, 501, "NotImplemented", "MfaDelete is not implemented by Shale; send Status alone");
    } else if (!on && s3_lock_enabled(bck)) {
        s3_err(r, 409, "InvalidBucketState", "An Object Lock configuration is present on bucket %s, so the "
               "versioning state cannot be changed (object lock keeps versioning Enabled); nothing was changed",
               bck->name);
    } else {
        /* S3 versioning is the bucket's props s3_versioning (s3ver.c), not AIStore's versioning.enabled */
        primary_bck_call(r, "PATCH", bck->name, json_pack("{s:s,s:{s:s}}", "action", "set-bprops", "value",
                                                          "s3_versioning", on ? "Enabled" : "Suspended"), 200);
    }
    bck_free(bck);
}

static void put_versioning_body(struct sl_req *r)
{
    s3_body_offload(r, put_versioning, bck_free);
}

/* ---- ?tagging of a bucket: its props "tags" (s3tag.c) ---- */

static void put_bck_tagging(struct sl_req *r, void *arg)
{
    struct sl_bck *bck = arg;
    struct kvs t = { 0 };
    const char *code;
    char why[256];
    if (s3_tags_from_xml(r->body.p ? r->body.p : "", r->body.len, S3_BCK_TAGS_MAX, &t, &code, why, sizeof(why)) < 0) {
        s3_err(r, 400, code, "%s", why);
    } else {
        struct sl_buf j;
        sl_buf_init(&j);
        s3_tags_join(&t, &j);
        primary_bck_call(r, "PATCH", bck->name,
                         json_pack("{s:s,s:{s:s}}", "action", "set-bprops", "value", "tags", j.p ? j.p : ""), 204);
        sl_buf_free(&j);
    }
    s3_kv_free(&t);
    bck_free(bck);
}

static void put_bck_tagging_body(struct sl_req *r)
{
    s3_body_offload(r, put_bck_tagging, bck_free);
}

static void delete_bck_tagging(struct sl_req *r, void *arg)
{
    struct sl_bck *bck = arg;
    primary_bck_call(r, "PATCH", bck->name, json_pack("{s:s,s:{s:s}}", "action", "set-bprops", "value", "tags", ""),
                     204);
    bck_free(bck);
}

static void bck_tagging(struct sl_req *r, const struct sl_bck *b)
{
    switch (r->method) {
    case SL_M_GET: {
        const char *tags = json_string_value(json_object_get(b->props, "tags"));
        if (!tags || !*tags) {
            s3_err(r, 404, "NoSuchTagSet", "The TagSet does not exist (bucket %s has no tags)", b->name);
            return;
        }
        struct kvs t = { 0 };
        s3_tags_of_string(tags, &t);
        s3_tags_xml(r, &t);
        s3_kv_free(&t);
        return;
    }
    case SL_M_PUT:
        r->ctx = bck_copy(b);
        sl_req_buffer_body(r, 64 * 1024, put_bck_tagging_body);
        return;
    case SL_M_DELETE:
        sl_req_offload(r, delete_bck_tagging, bck_free, bck_copy(b));
        return;
    default:
        s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?tagging (GET, PUT and DELETE are)", r->method_str);
    }
}

/* ---- ?encryption of a bucket: its props "sse" (s3sse.c) ---- */

static void put_bck_encryption(struct sl_req *r, void *arg)
{
    struct sl_bck *bck = arg;
    if (s3_sse_bck_config(r, r->body.p ? r->body.p : "", r->body.len) == 0)
        primary_bck_call(r, "PATCH", bck->name,
                         json_pack("{s:s,s:{s:s}}", "action", "set-bprops", "value", "sse", "AES256"), 200);
    bck_free(bck);
}

static void put_bck_encryption_body(struct sl_req *r)
{
    s3_body_offload(r, put_bck_encryption, bck_free);
}

static void delete_bck_encryption(struct sl_req *r, void *arg)
{
    struct sl_bck *bck = arg;
    primary_bck_call(r, "PATCH", bck->name, json_pack("{s:s,s:{s:s}}", "action", "set-bprops", "value", "sse", ""),
                     204);
    bck_free(bck);
}

static void bck_encryption(struct sl_req *r, const struct sl_bck *b)
{
    if (r->method == SL_M_GET) {
        s3_sse_bck_get(r, b);
    } else if (r->method == SL_M_PUT) {
        r->ctx = bck_copy(b);
        sl_req_buffer_body(r, 64 * 1024, put_bck_encryption_body);
    } else if (r->method == SL_M_DELETE) {
        sl_req_offload(r, delete_bck_encryption, bck_free, bck_copy(b));
    } else {
        s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?encryption (GET, PUT and DELETE are)",
               r->method_str);
    }
}

/* ---- dispatch ---- */

static const char *const unsupported[] = { "website", "replication",
                                           "notification", "logging",
                                           "accelerate", "requestPayment", "inventory", "analytics", "metrics",
                                           "intelligent-tiering", "ownershipControls",
                                           "retention", "legal-hold", "restore", "select",
                                           "torrent", "attributes", NULL };

static const char *unsupported_sub(const struct sl_req *r)
{
    for (int i = 0; unsupported[i]; i++)
        if (sl_req_query(r, unsupported[i]))
            return unsupported[i];
    return NULL;
}

static void fwd_err(struct sl_req *r, int status, const char *msg)
{
    if (status == 502)
        s3_err(r, 502, "InternalError", "%s; retry, and if it persists see that target's log", msg);
    else
        s3_err(r, 503, "ServiceUnavailable", "%s; retry", msg);
}

/* Hand the request to node (its own /s3 endpoint, the same URI). */
static void s3_forward(struct sl_req *r, const struct sl_snode *t, const struct s3auth *au)
{
    sl_hdr_del(r, "x-amz-request-id"); /* the answering node's comes back with its answer */
    char *url = sl_xasprintf("%s%s", t->url, r->raw_uri);
    const char *hop[] = { "X-Shale-S3-Hop: 1", au ? s3_acl_need_hdr(au) : NULL, NULL };
    struct sl_fwd_opts o = { .url = url, .hdrs = hop, .timeout_ms = sl_conf->send_file_time_ns / 1000000 };
    sl_fwd(r, &o, fwd_err);
    free(url);
}


static void bucket_op(struct sl_req *r, const struct sl_bck *bp);

static void bucket_req(struct sl_req *r, const struct s3req *q)
{
    const char *sub = unsupported_sub(r);
    if (sub) {
        s3_err(r, 501, "NotImplemented", "?%s is not implemented by this Shale S3 front end", sub);
        return;
    }
    if (sl_req_query(r, "versions") && r->method != SL_M_GET) {
        s3_err(r, 405, "MethodNotAllowed", "%s is not allowed with ?versions: GET lists the versions", r->method_str);
        return;
    }
    if (r->method == SL_M_PUT && !sl_req_query(r, "acl") && !sl_req_query(r, "versioning") &&
        !sl_req_query(r, "tagging") && !sl_req_query(r, "lifecycle") && !sl_req_query(r, "cors") &&
        !sl_req_query(r, "policy") && !sl_req_query(r, "publicAccessBlock") && !sl_req_query(r, "encryption") &&
        !sl_req_query(r, "object-lock")) {
        if (!s3_bucket_name_ok(q->bucket)) {
            s3_err(r, 400, "InvalidBucketName", "The specified bucket is not valid: \"%s\" (3-63 characters of "
                   "a-z, 0-9, '.' and '-', starting and ending with a letter or digit)", q->bucket);
            return;
        }
        sl_req_offload(r, create_bucket, free, sl_xstrdup(q->bucket));
        return;
    }
    struct sl_bck b;
    struct sl_err err = { 0 };
    if (sl_bck_resolve(q->bucket, "ais", NULL, &b, &err) < 0) {
        if (err.code == SL_ENOBCK || err.code == SL_EINVAL)
            s3_err(r, 404, "NoSuchBucket", "The specified bucket does not exist: %s", q->bucket);
        else
            s3_err_sl(r, &err);
        return;
    }
    bucket_op(r, &b);
    sl_bck_release(&b);
}

static void bucket_op(struct sl_req *r, const struct sl_bck *bp)
{
    const struct sl_bck b = *bp;
    s3_cors_actual(r, &b);
    if (sl_req_query(r, "cors")) {
        s3_bck_cors(r, &b);
        return;
    }
    if (sl_req_query(r, "tagging")) {
        bck_tagging(r, &b);
        return;
    }
    if (sl_req_query(r, "lifecycle")) {
        s3_bck_lifecycle(r, &b);
        return;
    }
    if (s3_bucket_access_op(r, &b)) /* ?acl, ?policy, ?policyStatus, ?publicAccessBlock (s3policy.c) */
        return;
    if (sl_req_query(r, "encryption")) {
        bck_encryption(r, &b);
        return;
    }
    if (sl_req_query(r, "object-lock")) { /* s3lock.c */
        s3_bck_object_lock(r, &b);
        return;
    }
    switch (r->method) {
    case SL_M_HEAD:
        sl_hdr_add(r, "x-amz-bucket-region", "us-east-1");
        sl_resp_empty(r, 200);
        return;
    case SL_M_GET:
        if (sl_req_query(r, "location")) {
            struct sl_buf x;
            sl_buf_init(&x);
            sl_buf_adds(&x, "<LocationConstraint xmlns=\"" XMLNS "\"></LocationConstraint>");
            s3_xml(r, 200, &x);
        } else if (sl_req_query(r, "versioning")) {
            s3ver_config_xml(r, &b);
        } else if (sl_req_query(r, "uploads")) {
            sl_req_offload(r, list_uploads, bck_free, bck_copy(&b));
        } else {
            sl_req_offload(r, sl_req_query(r, "versions") ? s3ver_list : list_objects, bck_free, bck_copy(&b));
        }
        return;
    case SL_M_PUT:
        r->ctx = bck_copy(&b); /* PUT ?versioning */
        sl_req_buffer_body(r, 64 * 1024, put_versioning_body);
        return;
    case SL_M_DELETE:
        sl_req_offload(r, delete_bucket, bck_free, bck_copy(&b));
        return;
    case SL_M_POST:
        if (sl_req_query(r, "delete")) {
            r->ctx = bck_copy(&b);
            sl_req_buffer_body(r, 2 * 1024 * 1024, delete_objects_body);
            return;
        }
        s3_err(r, 405, "MethodNotAllowed", "POST on a bucket takes ?delete (DeleteObjects)");
        return;
    default:
        s3_err(r, 405, "MethodNotAllowed", "%s is not allowed on a bucket", r->method_str);
    }
}

void sl_s3_route(struct sl_req *r)
{
    sl_hdr_add(r, "x-amz-request-id", r->reqid);
    if (r->path_bad) {
        s3_err(r, 400, "InvalidURI", "Couldn't parse the specified URI (it holds a NUL byte)");
        return;
    }
    struct s3req q = { 0 };
    const char *p = r->path + 3; /* after "/s3" */
    if (*p == '/')
        p++;
    const char *slash = strchr(p, '/');
    size_t bl = slash ? (size_t)(slash - p) : strlen(p);
    if (bl > SL_MAX_BCKNAME) {
        s3_err(r, 400, "InvalidBucketName", "The specified bucket is not valid (longer than 63 characters)");
        return;
    }
    memcpy(q.bucket, p, bl);
    q.bucket[bl] = 0;
    if (slash && slash[1]) {
        q.key = slash + 1;
        q.klen = r->path_len - (size_t)(q.key - r->path);
    }
    if (r->method == SL_M_OTHER && !strcmp(r->method_str, "OPTIONS")) { /* a browser's preflight: no credentials */
        s3_cors_preflight(r, q.bucket);
        return;
    }
    if (bl && !q.key && s3_is_post_object(r)) { /* a browser's form: its policy is its credentials */
        s3_post_object(r, q.bucket);
        return;
    }
    if (s3_sse_transport(r) < 0) /* a customer's key in the clear */
        return;
    /* authenticate, then authorise (with the user the verified key belongs to) */
    struct s3auth au;
    if (s3_auth(r, &au) < 0)
        return;
    if (s3_authorize(r, &q, &au) < 0) /* policy, ACLs, roles (s3policy.c) */
        return;
    /* AWS asks s3:BypassGovernanceRetention for it: here (auth on, the gateway deciding) an admin's */
    if (sl_auth_on() && s3_lock_bypass(r) && !json_is_true(json_object_get(r->user, "admin"))) {
        s3_err(r, 403, "AccessDenied", "x-amz-bypass-governance-retention: with authentication on only an admin may "
               "bypass a GOVERNANCE retention (user \"%s\"); nothing was changed",
               r->user ? sl_json_str(r->user, "sub", "?") : "anonymous");
        return;
    }
    if (!bl) {
        if (r->method == SL_M_GET)
            list_buckets(r);
        else
            s3_err(r, 405, "MethodNotAllowed", "%s / is not allowed (GET / lists the buckets)", r->method_str);
        return;
    }
    if (!q.key) {
        if (G.role == SL_ROLE_TARGET) { /* a gateway answers bucket requests */
            struct sl_smap *s = sl_smap_get();
            const struct sl_snode *pr = sl_smap_primary(s);
            if (pr)
                s3_forward(r, pr, NULL);
            else
                s3_err(r, 503, "ServiceUnavailable", "this target knows no primary gateway yet; retry");
            sl_smap_put(s);
            return;
        }
        if (unsupported_hdrs(r) == 0)
            bucket_req(r, &q);
        return;
    }
    if (q.klen > 1024) {
        s3_err(r, 400, "KeyTooLongError", "Your key is too long (%zu bytes; at most 1024)", q.klen);
        return;
    }
    for (size_t i = 0; i + 1 < q.klen; i++)
        if ((unsigned char)q.key[i] == 0xC2 && (unsigned char)q.key[i + 1] >= 0x80 &&
            (unsigned char)q.key[i + 1] <= 0x9F) {
            s3_err(r, 400, "InvalidURI", "Couldn't parse the specified URI (the key holds the control character "
                   "U+%04X)", (unsigned char)q.key[i + 1]);
            return;
        }
    if (r->method == SL_M_PUT && r->content_length < 0 && !sl_req_header(r, "Transfer-Encoding") &&
        !sl_req_header(r, "x-amz-copy-source") && !sl_req_query(r, "acl") && !sl_req_query(r, "tagging")) {
        s3_err(r, 411, "MissingContentLength", "You must provide the Content-Length HTTP header.");
        return;
    }
    struct sl_bck b;
    struct sl_err err = { 0 };
    if (sl_bck_resolve(q.bucket, "ais", NULL, &b, &err) < 0) {
        if (err.code == SL_ENOBCK || err.code == SL_EINVAL)
            s3_err(r, 404, "NoSuchBucket", "The specified bucket does not exist: %s", q.bucket);
        else
            s3_err_sl(r, &err);
        return;
    }
    struct sl_smap *s = sl_smap_get();
    /* a read goes where the read path can serve it (the owner, or the EC
     * stand-in for an owner that is down); anything else to the owner */
    bool rd = (r->method == SL_M_GET || r->method == SL_M_HEAD) && !sl_req_query(r, "uploadId") &&
              !sl_req_query(r, "tagging") && !sl_req_query(r, "acl") && /* tags and ACLs are read where written */
              !sl_req_query(r, "attributes");
    /* (a read left to the object's ACL goes the forwarded way, also to this node: checked where it is read) */
    if (sl_is_target() && !au.acl_need &&
        (rd ? sl_read_here(s, &b, q.key, q.klen) : sl_obj_owned_here(s, &b, q.key, q.klen))) {
        sl_smap_put(s);
        s3_cors_actual(r, &b);
        if (unsupported_hdrs(r) == 0)
            s3_obj(r, &q, &b, &au);
        sl_bck_release(&b);
        return;
    }
    const struct sl_snode *t;
    if (rd) {
        t = sl_read_target(s, &b, q.key, q.klen);
    } else {
        struct sl_buf un;
        sl_buf_init(&un);
        sl_obj_uname(&un, b.provider, b.name, q.key, q.klen);
        t = sl_smap_hrw_target(s, un.p, un.len);
        sl_buf_free(&un);
    }
    if (!t)
        s3_err(r, 503, "ServiceUnavailable", "the cluster has no active targets; retry later");
    else if (sl_req_header(r, "X-Shale-S3-Hop")) /* forwarded once already: the nodes' maps differ */
        s3_err(r, 503, "SlowDown", "the cluster map is changing (%s and the node that sent this request disagree "
               "on the object's owner); retry", G.name);
    else
        s3_forward(r, t, &au);
    sl_smap_put(s);
    sl_bck_release(&b);
}

/* /v1/s3/...: the keys and the verification mode (s3auth.c), and a
 * gateway gathering ListMultipartUploads from the targets */
void sl_s3_admin(struct sl_req *r)
{
    if (sl_req_path_is(r, "/v1/s3/uploads") && r->method == SL_M_GET && sl_is_target()) {
        const char *bid = sl_req_query(r, "bid");
        sl_resp_json_new(r, 200, s3_local_uploads(bid ? strtoull(bid, NULL, 10) : 0));
        return;
    }
    s3_keys_admin(r);
}
