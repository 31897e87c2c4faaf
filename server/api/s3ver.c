/* SPDX-License-Identifier: MIT
 * s3ver.c: S3 object versioning (docs/s3.md §5). A bucket's props
 * "s3_versioning" is "" (never turned on: one copy of each object, listed
 * as version "null", today's behaviour), "Enabled" or "Suspended"; AIStore's
 * own versioning.enabled (a version number per object) is another thing
 * and stays as it is.
 *
 * In a bucket with S3 versioning the current version of KEY is the object
 * KEY (native GET, HEAD and listings see it alone); the older versions and
 * the delete markers are objects KEY "\x01" SUFFIX (meta.h), on KEY's target
 * and mountpath, archived by the store in the commit of the write that
 * replaces them (store_ver.c). Here: the S3 requests on them -- version ids
 * on PUT answers, GET/HEAD/DELETE ?versionId, delete markers,
 * ListObjectVersions, DeleteObjects with versions, and PUT/GET ?versioning.
 */
#include "s3.h"
#include "s3obj.h"
#include "cluster.h"
#include "ec.h"
#include "jsonx.h"
#include "log.h"
#include "lso.h"
#include "node.h"
#include "peer.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NULL_SFX "null"

/* "null", or the id kept with the object, or an archived one's suffix */
static void vid_of(const char *name, size_t nlen, const struct sl_objmd *md, char out[24])
{
    size_t kl = sl_objname_vkey(name, nlen);
    if (kl == nlen)
        snprintf(out, 24, "%s", sl_ver_id_of(md));
    else if (!memcmp(name + nlen - 4, NULL_SFX, 4))
        snprintf(out, 24, "null");
    else
        snprintf(out, 24, "%.20s", name + nlen - 20);
}

void s3ver_hdr(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, const struct sl_objmd *md)
{
    if (b->s3ver == SL_S3VER_OFF && sl_objname_vkey(name, nlen) == nlen)
        return;
    char v[24];
    vid_of(name, nlen, md, v);
    sl_hdr_add(r, "x-amz-version-id", v);
}

int s3ver_write_check(struct sl_req *r, const struct sl_bck *b, const char *key, size_t klen)
{
    if (sl_objname_vkey(key, klen) != klen) {
        s3_err(r, 400, "InvalidArgument", "a key ending in \\x01 and 20 hex digits (or 16 and \"null\") is reserved "
               "for the older versions of an object (docs/s3.md); nothing was stored");
        return -1;
    }
    if (b->s3ver != SL_S3VER_OFF && klen > SL_MAX_OBJNAME - SL_VER_SUFFIX) {
        s3_err(r, 400, "KeyTooLongError", "Your key is too long: a bucket with versioning takes keys of up to %d "
               "bytes (its older versions are named after it); nothing was stored", SL_MAX_OBJNAME - SL_VER_SUFFIX);
        return -1;
    }
    return 0;
}

/* ---- GET / HEAD ---- */

int s3ver_get_name(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, struct sl_buf *name)
{
    const char *vid = sl_req_query(r, "versionId");
    sl_buf_reset(name);
    if (!vid) {
        sl_buf_add(name, q->key, q->klen);
        sl_buf_addc(name, 0);
        name->len--;
        return 1;
    }
    struct sl_err err = { 0 };
    struct sl_objmd md;
    int rc = sl_ver_find(b, q->key, q->klen, vid, name, &md, &err);
    if (rc < 0 && err.code == SL_EINVAL) {
        s3_err(r, 400, "InvalidArgument", "Invalid version id specified (\"%.64s\")", vid);
        return 0;
    }
    if (rc < 0) {
        s3_err_sl(r, &err);
        return 0;
    }
    if (rc == 0) {
        s3_err(r, 404, "NoSuchVersion", "The specified version does not exist (%.64s)", vid);
        return 0;
    }
    if (sl_ver_is_marker(&md)) {
        char t[64];
        s3_http_time(md.mtime, t, sizeof(t));
        sl_hdr_add(r, "x-amz-delete-marker", "true");
        sl_hdr_add(r, "x-amz-version-id", vid);
        sl_hdr_add(r, "Last-Modified", t);
        sl_hdr_add(r, "Allow", "DELETE");
        s3_err(r, 405, "MethodNotAllowed", "The specified method is not allowed against this resource: version %s is "
               "a delete marker", vid);
        sl_objmd_free(&md);
        return 0;
    }
    sl_objmd_free(&md);
    return 1;
}

bool s3ver_sub_name(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, struct sl_buf *name)
{
    if (!s3ver_get_name(r, q, b, name))
        return false;
    const char *vid = sl_req_query(r, "versionId");
    if (vid)
        sl_hdr_add(r, "x-amz-version-id", vid);
    return true;
}

void s3ver_miss(struct sl_req *r, const struct sl_bck *b, const char *key, size_t klen)
{
    if (b->s3ver == SL_S3VER_OFF || sl_objname_vkey(key, klen) != klen)
        return;
    struct sl_buf n;
    struct sl_objmd md;
    struct sl_err err = { 0 };
    sl_buf_init(&n);
    if (sl_ver_latest(b, key, klen, &n, &md, &err) == 1) {
        if (sl_ver_is_marker(&md)) {
            char v[24];
            vid_of(n.p, n.len, &md, v);
            sl_hdr_add(r, "x-amz-delete-marker", "true");
            sl_hdr_add(r, "x-amz-version-id", v);
        }
        sl_objmd_free(&md);
    }
    sl_buf_free(&n);
}

/* ---- DELETE ---- */

struct vdel {
    bool marker;        /* a delete marker was made, or the version removed was one */
    char vid[24];       /* the version removed, or the marker made; "" none */
};

/* DELETE of key (vid NULL: the current version) on its target */
static int vdelete(const struct sl_bck *b, const char *key, size_t klen, const char *vid, bool bypass,
                   struct vdel *res, struct sl_err *err)
{
    memset(res, 0, sizeof(*res));
    if (vid && s3_lock_enabled(b)) { /* a locked version stays (s3lock.c) */
        struct sl_buf n;
        struct sl_objmd md;
        sl_buf_init(&n);
        int f = sl_ver_find(b, key, klen, vid, &n, &md, err);
        sl_buf_free(&n);
        if (f < 0)
            return -1;
        if (f == 1) {
            int lk = s3_lock_check(&md, bypass, err);
            sl_objmd_free(&md);
            if (lk < 0)
                return -1;
        }
    }
    if (vid) {
        struct sl_ver_gone g;
        int rc = sl_ver_delete(b, key, klen, vid, &g, err);
        if (rc == 1) {
            res->marker = g.marker;
            if (!g.marker)
                sl_ec_after_delete(b, g.name.p, g.name.len);
        }
        sl_buf_free(&g.name);
        if (rc >= 0)
            snprintf(res->vid, sizeof(res->vid), "%s", vid);
        return rc < 0 ? -1 : 0;
    }
    if (b->s3ver == SL_S3VER_OFF) {
        if (sl_obj_delete(b, key, klen, err) < 0)
            return err->code == SL_ENOOBJ || err->code == SL_ENOENT ? 0 : -1;
        sl_ec_after_delete(b, key, klen);
        return 0;
    }
    /* a delete marker: an empty object that archives and removes the current one (store_vdel.c) */
    if (sl_obj_delete_cur(b, key, klen, 0, &res->marker, res->vid, err) < 0)
        return -1;
    sl_ec_after_delete(b, key, klen); /* the current one's slices: its data is the archive's now */
    return 0;
}

struct vdel_job {
    struct sl_bck b;
    char *key;
    size_t klen;
    char *vid;
    bool bypass;
};

static void vdel_free(void *arg)
{
    struct vdel_job *j = arg;
    sl_bck_release(&j->b);
    free(j->key);
    free(j->vid);
    free(j);
}

static void vdel_run(struct sl_req *r, void *arg)
{
    struct vdel_job *j = arg;
    struct vdel res;
    struct sl_err err = { 0 };
    if (vdelete(&j->b, j->key, j->klen, j->vid, j->bypass, &res, &err) < 0) {
        if (err.code == SL_EINVAL && j->vid)
            s3_err(r, 400, "InvalidArgument", "Invalid version id specified (\"%.64s\")", j->vid);
        else
            s3_err_sl(r, &err);
    } else {
        if (res.marker)
            sl_hdr_add(r, "x-amz-delete-marker", "true");
        if (res.vid[0])
            sl_hdr_add(r, "x-amz-version-id", res.vid);
        sl_resp_empty(r, 204);
    }
    vdel_free(j);
}

static void vdel_cancel(void *arg)
{
    vdel_free(arg);
}

bool s3ver_obj_delete(struct sl_req *r, const struct s3req *q, const struct sl_bck *b)
{
    const char *vid = sl_req_query(r, "versionId");
    if (!vid && b->s3ver == SL_S3VER_OFF)
        return false; /* as it was: the object goes */
    struct vdel_job *j = sl_xcalloc(1, sizeof(*j));
    sl_bck_copy(&j->b, b);
    j->key = sl_xstrndup(q->key, q->klen);
    j->klen = q->klen;
    j->vid = vid ? sl_xstrdup(vid) : NULL;
    j->bypass = s3_lock_bypass(r);
    sl_req_offload_disk(r, vdel_run, vdel_cancel, j);
    return true;
}

void s3ver_native_delete(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    struct vdel res;
    struct sl_err err = { 0 };
    const char *bp = sl_req_query(r, "s3_bypass");
    if (vdelete(b, name, nlen, sl_req_query(r, "versionId"), bp && !strcmp(bp, "true"), &res, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    sl_resp_json_new(r, 200, json_pack("{s:b,s:s}", "delete_marker", res.marker, "version_id", res.vid));
}

int s3ver_remote_delete(const struct sl_snode *t, const struct sl_bck *b, const char *key, const char *vid,
                        bool bypass, bool *marker, char out_vid[24], char *msg, size_t msz)
{
    struct sl_buf url;
    sl_buf_init(&url);
    sl_peer_obj_url(&url, t->url, b->name, "ais", key, strlen(key));
    sl_peer_add_redirect_marks(&url, G.id);
    sl_buf_adds(&url, "&s3_delete=true");
    if (bypass) /* x-amz-bypass-governance-retention (s3lock.c) */
        sl_buf_adds(&url, "&s3_bypass=true");
    if (vid) {
        sl_buf_adds(&url, "&versionId=");
        for (const char *c = vid; *c; c++) /* (an id is hex or "null"; anything else is refused there) */
            if ((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'))
                sl_buf_addc(&url, *c);
            else
                sl_buf_printf(&url, "%%%02X", (unsigned char)*c);
    }
    struct sl_peer_resp pr = { 0 };
    int status = 503;
    *marker = false;
    out_vid[0] = 0;
    if (sl_peer_call("DELETE", url.p, NULL, 0, NULL, 0, 0, &pr) < 0) {
        snprintf(msg, msz, "t[%s] did not answer: %s", t->id, pr.err);
    } else {
        status = (int)pr.status;
        snprintf(msg, msz, "%s", pr.err);
        json_t *j = status < 300 && pr.body.len ? json_loadb(pr.body.p, pr.body.len, 0, NULL) : NULL;
        *marker = json_is_true(json_object_get(j, "delete_marker"));
        snprintf(out_vid, 24, "%s", json_string_value(json_object_get(j, "version_id")) ?
                 json_string_value(json_object_get(j, "version_id")) : "");
        json_decref(j);
    }
    sl_peer_resp_free(&pr);
    sl_buf_free(&url);
    return status;
}

/* ---- ListObjectVersions ---- */

struct vitem {
    char *key;
    bool cp, marker, latest;
    char vid[24];      /* as shown */
    char next[24];     /* as a version-id-marker (an archived null's whole suffix) */
    uint64_t size;
    char etag[160];
    char mtime[64];
};

static void custom_val(const char *custom, const char *k, char *out, size_t n)
{
    out[0] = 0;
    size_t kl = strlen(k);
    for (const char *c = custom; c && (c = strstr(c, k)); c += kl)
        if ((c[-1] == '[' || c[-1] == ' ') && c[kl] == ':') {
            size_t l = strcspn(c + kl + 1, " ]");
            snprintf(out, n, "%.*s", (int)SL_MIN(l, n - 1), c + kl + 1);
            return;
        }
}

void s3ver_list(struct sl_req *r, void *arg)
{
    struct sl_bck *bck = arg;
    const char *prefix = sl_req_query(r, "prefix") ? sl_req_query(r, "prefix") : "";
    const char *delim = sl_req_query(r, "delimiter") ? sl_req_query(r, "delimiter") : "";
    const char *mk = sl_req_query(r, "max-keys");
    const char *enc = sl_req_query(r, "encoding-type");
    const char *km = sl_req_query(r, "key-marker");
    const char *vim = sl_req_query(r, "version-id-marker");
    bool url = enc && !strcmp(enc, "url");
    long maxk = 1000;
    struct vitem *items = NULL;
    int nitems = 0;
    char *last_cp = NULL;
    struct sl_buf cursor;
    sl_buf_init(&cursor);
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
    if (vim && *vim && (!km || !*km)) {
        s3_err(r, 400, "InvalidArgument", "A version-id marker cannot be specified without a key marker.");
        goto out;
    }
    /* where the names to list start (the versions of KEY follow KEY, newest first) */
    if (km && *km) {
        sl_buf_adds(&cursor, km);
        if (vim && strlen(vim) == 20) {
            sl_buf_addc(&cursor, SL_VER_SEP); /* after that version */
            sl_buf_adds(&cursor, vim);
        } else if (!vim || !*vim) {
            sl_buf_addc(&cursor, SL_VER_SEP); /* after every version of the key */
            sl_buf_addc(&cursor, 0x7f);
        } /* ("null": the current one, then its older versions) */
    }
    sl_buf_addc(&cursor, 0);
    cursor.len--;
    size_t plen = strlen(prefix), dlen = strlen(delim);
    const char *cur = cursor.p;
    if (dlen && !strncmp(cur, prefix, plen) && strlen(cur) >= plen + dlen) {
        const char *d = strstr(cur + plen, delim);
        if (d && d + dlen == cur + strlen(cur))
            last_cp = sl_xstrdup(cur);
    }
    bool truncated = false;
    struct sl_err err = { 0 };
    char *lstoken = sl_xstrdup("");
    int rc = 0;
    /* the key whose latest version is settled: a current object, or its newest archived one seen */
    char *lkey = km && *km ? sl_xstrdup(km) : NULL;
    while (maxk > 0) {
        json_t *v = json_pack("{s:s,s:s,s:s,s:i,s:s,s:s,s:s}", "prefix", prefix, "start_after", cur,
                              "continuation_token", lstoken, "pagesize", 1000, "props", "name,size,checksum,atime,custom",
                              "time_format", "2006-01-02T15:04:05.000Z07:00", "flags", "1099511627776");
        struct sl_lsomsg m;
        struct sl_lspage pg = { 0 };
        rc = sl_lsomsg_parse(v, &m, 1000, &err);
        json_decref(v);
        m.flags |= SL_LSO_VERSIONS;
        if (rc == 0)
            rc = sl_cluster_list_page(bck, &m, &pg, &err);
        sl_lsomsg_free(&m);
        if (rc < 0) {
            sl_lspage_free(&pg);
            break;
        }
        for (int i = 0; i < pg.n && !truncated; i++) {
            const struct sl_lsent *e = &pg.ents[i];
            size_t kl = sl_objname_vkey(e->name, e->nlen);
            bool arch = kl != e->nlen;
            if (last_cp && !strncmp(e->name, last_cp, strlen(last_cp)))
                continue;
            const char *d = NULL;
            if (dlen && kl >= plen + dlen) {
                d = memmem(e->name + plen, kl - plen, delim, dlen);
            }
            if (nitems == maxk) {
                truncated = true;
                break;
            }
            items = sl_xrealloc(items, (size_t)(nitems + 1) * sizeof(*items));
            struct vitem *it = &items[nitems++];
            memset(it, 0, sizeof(*it));
            if (d) {
                it->cp = true;
                it->key = sl_xstrndup(e->name, (size_t)(d - e->name) + dlen);
                free(last_cp);
                last_cp = sl_xstrdup(it->key);
                continue;
            }
            it->key = sl_xstrndup(e->name, kl);
            bool first = !lkey || strcmp(lkey, it->key);
            if (first) {
                free(lkey);
                lkey = sl_xstrdup(it->key);
            }
            char dm[8];
            custom_val(e->custom, "s3.dm", dm, sizeof(dm));
            it->marker = arch && dm[0];
            if (!arch) {
                custom_val(e->custom, "s3.vid", it->vid, sizeof(it->vid));
                if (strlen(it->vid) != 20)
                    snprintf(it->vid, sizeof(it->vid), "null");
                snprintf(it->next, sizeof(it->next), "%s", it->vid);
                it->latest = true;
            } else {
                const char *sfx = e->name + e->nlen - 20;
                snprintf(it->next, sizeof(it->next), "%.20s", sfx);
                snprintf(it->vid, sizeof(it->vid), "%s", memcmp(sfx + 16, NULL_SFX, 4) ? it->next : "null");
                it->latest = first && it->marker; /* no current object: a delete marker on top */
            }
            it->size = e->size;
            if (!it->marker)
                s3_entry_etag(e, it->etag, sizeof(it->etag));
            snprintf(it->mtime, sizeof(it->mtime), "%s", e->atime ? e->atime : "");
        }
        bool more = pg.token && pg.token[0];
        free(lstoken);
        lstoken = sl_xstrdup(more ? pg.token : "");
        sl_lspage_free(&pg);
        if (truncated || !more)
            break;
    }
    free(lkey);
    free(lstoken);
    if (rc < 0) {
        s3_err_sl(r, &err);
        goto out;
    }
    struct sl_buf b;
    sl_buf_init(&b);
    sl_buf_adds(&b, "<ListVersionsResult xmlns=\"" XMLNS "\">");
    s3_xel(&b, "Name", bck->name);
    s3_xel_key(&b, "Prefix", prefix, plen, url);
    s3_xel_key(&b, "KeyMarker", km ? km : "", km ? strlen(km) : 0, url);
    s3_xel(&b, "VersionIdMarker", vim ? vim : "");
    sl_buf_printf(&b, "<MaxKeys>%ld</MaxKeys>", maxk);
    if (dlen)
        s3_xel_key(&b, "Delimiter", delim, dlen, url);
    if (url)
        s3_xel(&b, "EncodingType", "url");
    sl_buf_printf(&b, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
    if (truncated && nitems) {
        const struct vitem *l = &items[nitems - 1];
        s3_xel_key(&b, "NextKeyMarker", l->key, strlen(l->key), url);
        if (!l->cp)
            s3_xel(&b, "NextVersionIdMarker", l->next);
    }
    for (int i = 0; i < nitems; i++) {
        struct vitem *it = &items[i];
        if (it->cp) {
            sl_buf_adds(&b, "<CommonPrefixes>");
            s3_xel_key(&b, "Prefix", it->key, strlen(it->key), url);
            sl_buf_adds(&b, "</CommonPrefixes>");
            continue;
        }
        sl_buf_adds(&b, it->marker ? "<DeleteMarker>" : "<Version>");
        s3_xel_key(&b, "Key", it->key, strlen(it->key), url);
        s3_xel(&b, "VersionId", it->vid);
        sl_buf_printf(&b, "<IsLatest>%s</IsLatest>", it->latest ? "true" : "false");
        s3_xel(&b, "LastModified", it->mtime);
        if (!it->marker) {
            sl_buf_adds(&b, "<ETag>&quot;");
            s3_xml_esc(&b, it->etag, strlen(it->etag));
            sl_buf_adds(&b, "&quot;</ETag>");
            sl_buf_printf(&b, "<Size>%llu</Size>", (unsigned long long)it->size);
            sl_buf_adds(&b, "<StorageClass>STANDARD</StorageClass>");
        }
        s3_owner_xml(&b);
        sl_buf_adds(&b, it->marker ? "</DeleteMarker>" : "</Version>");
    }
    sl_buf_adds(&b, "</ListVersionsResult>");
    s3_xml(r, 200, &b);
out:
    for (int i = 0; i < nitems; i++)
        free(items[i].key);
    free(items);
    free(last_cp);
    sl_buf_free(&cursor);
    sl_bck_release(bck);
    free(bck);
}

/* ---- ?versioning ---- */

void s3ver_config_xml(struct sl_req *r, const struct sl_bck *b)
{
    struct sl_buf x;
    sl_buf_init(&x);
    sl_buf_adds(&x, "<VersioningConfiguration xmlns=\"" XMLNS "\">");
    if (b->s3ver != SL_S3VER_OFF) /* a bucket never versioned: no Status (as S3) */
        sl_buf_printf(&x, "<Status>%s</Status>", b->s3ver == SL_S3VER_ON ? "Enabled" : "Suspended");
    sl_buf_adds(&x, "</VersioningConfiguration>");
    s3_xml(r, 200, &x);
}
