/* SPDX-License-Identifier: MIT
 * s3mpu.c: S3 multipart uploads over the native multipart of upload.h:
 * the uploads in flight on this target (their parts' sizes and ETags, the
 * metadata given at the start), Create, Complete (the parts checked
 * against what was uploaded, the object's ETag as S3 computes it), Abort,
 * ListParts, and this target's share of ListMultipartUploads. The parts
 * themselves are PUTs (s3obj.c) or copies (s3copy.c). See s3obj.h.
 */
#include "s3.h"
#include "s3obj.h"
#include "cksum.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "stats.h"
#include "store.h"
#include "read.h"
#include "s3sse.h"
#include "upload.h"

#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- the uploads in flight here ---- */

struct s3part {
    int no;
    uint64_t size;
    char md5[33];
    int64_t at;
};

struct s3upload {
    char id[80];
    uint64_t bid;
    char *key;
    size_t klen;
    struct kvs meta;
    struct s3part *parts;
    int nparts;
    int64_t created, last;      /* unix ns */
    struct s3upload *next;
};

static pthread_mutex_t up_mu = PTHREAD_MUTEX_INITIALIZER;
static struct s3upload *uploads;

static struct s3upload *up_find(const char *id) /* up_mu held */
{
    for (struct s3upload *u = uploads; u; u = u->next)
        if (!strcmp(u->id, id))
            return u;
    return NULL;
}

static void up_drop(const char *id)
{
    pthread_mutex_lock(&up_mu);
    for (struct s3upload **pp = &uploads; *pp; pp = &(*pp)->next) {
        if (!strcmp((*pp)->id, id)) {
            struct s3upload *u = *pp;
            *pp = u->next;
            s3_kv_free(&u->meta);
            free(u->parts);
            free(u->key);
            free(u);
            break;
        }
    }
    pthread_mutex_unlock(&up_mu);
}

/* A part is in: its size and MD5 for Complete and ListParts. */
void s3_upload_record_part(const char *id, int partno, uint64_t size, const char *etag)
{
    pthread_mutex_lock(&up_mu);
    struct s3upload *up = up_find(id);
    if (up) {
        int i;
        for (i = 0; i < up->nparts && up->parts[i].no != partno; i++)
            ;
        if (i == up->nparts) {
            up->parts = sl_xrealloc(up->parts, (size_t)(up->nparts + 1) * sizeof(*up->parts));
            up->nparts++;
        }
        up->parts[i].no = partno;
        up->parts[i].size = size;
        up->parts[i].at = up->last = sl_now_ns();
        snprintf(up->parts[i].md5, sizeof(up->parts[i].md5), "%s", etag);
    }
    pthread_mutex_unlock(&up_mu);
}


void s3_upload_meta(const char *id, struct kvs *out)
{
    pthread_mutex_lock(&up_mu);
    struct s3upload *up = up_find(id);
    for (int i = 0; up && i < up->meta.n; i++)
        s3_kv_add(out, up->meta.kv[i].k, up->meta.kv[i].v);
    pthread_mutex_unlock(&up_mu);
}

bool s3_upload_known(const char *id)
{
    pthread_mutex_lock(&up_mu);
    bool known = up_find(id) != NULL;
    pthread_mutex_unlock(&up_mu);
    return known;
}

/* ---- multipart ---- */

/* "<ROOT xmlns=...><Bucket>B</Bucket><Key>K</Key><UploadId>ID</UploadId>": how the
 * answers about one multipart upload begin. */
static void upload_xml_head(struct sl_buf *x, const char *root, const struct sl_bck *b, const struct s3req *q,
                            const char *id)
{
    sl_buf_printf(x, "<%s xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>", root);
    s3_xml_esc(x, b->name, strlen(b->name));
    sl_buf_adds(x, "</Bucket><Key>");
    s3_xml_esc(x, q->key, q->klen);
    sl_buf_adds(x, "</Key><UploadId>");
    s3_xml_esc(x, id, strlen(id));
    sl_buf_adds(x, "</UploadId>");
}

void s3_create_upload(struct sl_req *r, const struct s3req *q, const struct sl_bck *b)
{
    char id[80];
    struct sl_err err = { 0 };
    struct kvs meta = { 0 };
    s3_collect_meta(r, &meta);
    if (meta.bytes > S3_META_MAX) {
        s3_kv_free(&meta);
        s3_err(r, 400, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size (%d "
               "bytes)", S3_META_MAX);
        return;
    }
    struct sl_sse sse;
    int sr = s3_tagging_hdr(r, &meta) < 0 || s3_lock_hdrs(r, b, &meta) < 0 || s3_acl_hdr(r, b, &meta) < 0 ? -1
             : s3_sse_new(r, b, &sse, &meta); /* the parts' encryption */
    if (sr < 0) {
        s3_kv_free(&meta);
        return;
    }
    s3_sse_headers(r, &sse);
    sl_sse_free(&sse);
    if (sl_mpt_create(b, q->key, q->klen, id, sizeof(id), &err) < 0) {
        s3_kv_free(&meta);
        s3_err_sl(r, &err);
        return;
    }
    struct s3upload *up = sl_xcalloc(1, sizeof(*up));
    snprintf(up->id, sizeof(up->id), "%s", id);
    up->bid = b->bid;
    up->key = sl_xstrndup(q->key, q->klen);
    up->klen = q->klen;
    up->meta = meta;
    up->created = up->last = sl_now_ns();
    pthread_mutex_lock(&up_mu);
    /* upload.c drops an upload left alone for UPLOAD_IDLE_S: so does this list */
    for (struct s3upload **pp = &uploads; *pp;) {
        struct s3upload *o = *pp;
        if (up->created - o->last > (int64_t)UPLOAD_IDLE_S * 1000000000LL) {
            *pp = o->next;
            s3_kv_free(&o->meta);
            free(o->parts);
            free(o->key);
            free(o);
        } else {
            pp = &o->next;
        }
    }
    up->next = uploads;
    uploads = up;
    pthread_mutex_unlock(&up_mu);
    struct sl_buf x;
    sl_buf_init(&x);
    upload_xml_head(&x, "InitiateMultipartUploadResult", b, q, id);
    sl_buf_adds(&x, "</InitiateMultipartUploadResult>");
    s3_xml(r, 200, &x);
}

struct cpl_parse {
    int *nos;
    char (*etags)[80];
    int n, cap;
    int cur_no;
    char cur_etag[80];
    bool bad;
};

static void cpl_end(void *arg, const char *parent, const char *name, const char *text)
{
    struct cpl_parse *c = arg;
    if (!strcmp(parent, "Part") && !strcmp(name, "PartNumber")) {
        c->cur_no = atoi(text);
    } else if (!strcmp(parent, "Part") && !strcmp(name, "ETag")) {
        const char *t = text;
        size_t l = strlen(t);
        if (l >= 2 && t[0] == '"' && t[l - 1] == '"') {
            t++;
            l -= 2;
        }
        snprintf(c->cur_etag, sizeof(c->cur_etag), "%.*s", (int)SL_MIN(l, 79), t);
    } else if (!strcmp(name, "Part")) {
        if (c->n >= 10000) {
            c->bad = true;
            return;
        }
        if (c->n == c->cap) {
            c->cap = c->cap ? c->cap * 2 : 16;
            c->nos = sl_xrealloc(c->nos, (size_t)c->cap * sizeof(int));
            c->etags = sl_xrealloc(c->etags, (size_t)c->cap * sizeof(*c->etags));
        }
        c->nos[c->n] = c->cur_no;
        snprintf(c->etags[c->n], 80, "%s", c->cur_etag);
        c->n++;
        c->cur_no = 0;
        c->cur_etag[0] = 0;
    }
}

/* Completed uploads, kept a while: completing again answers the same (S3 does; s3-tests checks it). */
#define DONE_KEEP 256
#define DONE_TTL_NS (15 * 60 * 1000000000LL)

struct done_up {
    char id[80];
    uint64_t bid;
    char *key;
    char etag[48];
    int64_t at;
};

static struct done_up done_ups[DONE_KEEP];
static int done_next;

static void done_add(const struct sl_bck *b, const char *key, size_t klen, const char *id, const char *etag)
{
    pthread_mutex_lock(&up_mu);
    struct done_up *d = &done_ups[done_next++ % DONE_KEEP];
    free(d->key);
    snprintf(d->id, sizeof(d->id), "%s", id);
    d->bid = b->bid;
    d->key = sl_xstrndup(key, klen);
    snprintf(d->etag, sizeof(d->etag), "%s", etag);
    d->at = sl_mono_ns();
    pthread_mutex_unlock(&up_mu);
}

static void complete_xml(struct sl_req *r, const struct sl_bck *b, const char *key, size_t klen, const char *etag)
{
    struct sl_buf x;
    sl_buf_init(&x);
    sl_buf_adds(&x, "<CompleteMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Location>");
    s3_xml_esc(&x, key, klen);
    sl_buf_adds(&x, "</Location><Bucket>");
    s3_xml_esc(&x, b->name, strlen(b->name));
    sl_buf_adds(&x, "</Bucket><Key>");
    s3_xml_esc(&x, key, klen);
    sl_buf_printf(&x, "</Key><ETag>&quot;%s&quot;</ETag></CompleteMultipartUploadResult>", etag);
    s3_xml(r, 200, &x);
}

/* true when id completed recently for this object (answered) */
static bool done_find(const struct sl_bck *b, const char *key, size_t klen, const char *id, struct sl_req *r)
{
    char etag[48] = "";
    pthread_mutex_lock(&up_mu);
    for (int i = 0; i < DONE_KEEP; i++) {
        struct done_up *d = &done_ups[i];
        if (d->key && !strcmp(d->id, id) && d->bid == b->bid && strlen(d->key) == klen && !memcmp(d->key, key, klen) &&
            sl_mono_ns() - d->at < DONE_TTL_NS)
            snprintf(etag, sizeof(etag), "%s", d->etag);
    }
    pthread_mutex_unlock(&up_mu);
    if (!etag[0])
        return false;
    complete_xml(r, b, key, klen, etag);
    return true;
}

struct cpl_job {
    struct sl_bck b;
    char *key;
    size_t klen;
    char id[80];
};

static void complete_run(struct sl_req *r, void *arg)
{
    struct cpl_job *j = arg;
    struct cpl_parse c = { 0 };
    struct sl_err err = { 0 };
    if (s3_xml_parse(r->body.p ? r->body.p : "", r->body.len, cpl_end, &c) < 0 || c.bad || !c.n) {
        s3_err(r, 400, "MalformedXML", "The XML you provided was not well-formed or did not validate against our "
               "published schema (CompleteMultipartUpload with 1 to 10000 Part elements)");
        goto out;
    }
    for (int i = 1; i < c.n; i++)
        if (c.nos[i] <= c.nos[i - 1]) {
            s3_err(r, 400, "InvalidPartOrder", "The list of parts was not in ascending order (part %d after %d)",
                   c.nos[i], c.nos[i - 1]);
            goto out;
        }
    pthread_mutex_lock(&up_mu);
    struct s3upload *up = up_find(j->id);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_md5(), NULL);
    int status = 0;
    char msg[300] = "";
    for (int i = 0; up && i < c.n && !status; i++) {
        struct s3part *p = NULL;
        for (int k = 0; k < up->nparts; k++)
            if (up->parts[k].no == c.nos[i])
                p = &up->parts[k];
        if (!p || strcmp(p->md5, c.etags[i])) {
            status = 400;
            snprintf(msg, sizeof(msg), "part %d: %s", c.nos[i], p ? "its ETag is not the one listed" :
                     "it was not uploaded");
        } else if (i < c.n - 1 && p->size < 5 * 1024 * 1024) {
            status = -400;
            snprintf(msg, sizeof(msg), "part %d has %llu bytes; every part but the last needs at least 5 MiB",
                     c.nos[i], (unsigned long long)p->size);
        } else {
            unsigned char d[16];
            s3_hex2bin(p->md5, d, 16);
            EVP_DigestUpdate(md, d, 16);
        }
    }
    if (!status && up && up->nparts != c.n) {
        status = 400;
        snprintf(msg, sizeof(msg), "%d parts were uploaded and %d listed: this Shale S3 front end completes an "
                 "upload with all its parts", up->nparts, c.n);
    }
    unsigned char d[16];
    unsigned dn = 0;
    EVP_DigestFinal_ex(md, d, &dn);
    EVP_MD_CTX_free(md);
    struct kvs meta = { 0 };
    if (up)
        for (int i = 0; i < up->meta.n; i++)
            s3_kv_add(&meta, up->meta.kv[i].k, up->meta.kv[i].v);
    if (up && !status) { /* part sizes, for GET ?partNumber= */
        uint64_t first = 0;
        bool equal = true;
        struct sl_buf sizes;
        sl_buf_init(&sizes);
        uint64_t *psz = sl_xcalloc((size_t)c.n, sizeof(*psz));
        for (int i = 0; i < c.n; i++)
            for (int k = 0; k < up->nparts; k++)
                if (up->parts[k].no == c.nos[i]) {
                    psz[i] = up->parts[k].size;
                    if (!i)
                        first = up->parts[k].size;
                    else if (i < c.n - 1 && up->parts[k].size != first)
                        equal = false;
                    sl_buf_printf(&sizes, "%s%llu", i ? "," : "", (unsigned long long)up->parts[k].size);
                }
        char z[32];
        snprintf(z, sizeof(z), "%llu", (unsigned long long)first);
        if (equal && (c.n == 1 || first > 0))
            s3_kv_add(&meta, "s3.mpsz", z);
        else if (c.n <= 256 && sizes.p)
            s3_kv_add(&meta, "s3.mpsizes", sizes.p);
        sl_buf_free(&sizes);
        s3_sse_parts_meta(&meta, c.nos, psz, c.n); /* encrypted: where each part's counters start */
        free(psz);
    }
    pthread_mutex_unlock(&up_mu);
    if (!up && done_find(&j->b, j->key, j->klen, j->id, r)) /* completed already: the same answer again */
        goto out_meta;
    if (!up) {
        s3_err(r, 404, "NoSuchUpload", "The specified upload does not exist (completed, aborted or unknown)");
    } else if (status == 400) {
        s3_err(r, 400, "InvalidPart", "One or more of the specified parts could not be found or did not match: %s",
               msg);
    } else if (status) {
        s3_err(r, 400, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size: %s", msg);
    } else {
        json_t *parts = json_array();
        for (int i = 0; i < c.n; i++)
            json_array_append_new(parts, json_pack("{s:i,s:s}", "part-number", c.nos[i], "etag", ""));
        struct sl_objmd out;
        memset(&out, 0, sizeof(out));
        int rc = sl_mpt_complete(&j->b, j->key, j->klen, j->id, parts, &out, &err);
        json_decref(parts);
        if (rc < 0) {
            s3_err_sl(r, &err);
        } else {
            char etag[48], n[16];
            sl_hex(d, 16, etag);
            snprintf(etag + 32, sizeof(etag) - 32, "-%d", c.n);
            snprintf(n, sizeof(n), "%d", c.n);
            s3_kv_add(&meta, "ETag", etag);
            s3_kv_add(&meta, "s3.mp", n);
            const char *sm = NULL;
            for (int i = 0; i < meta.n; i++)
                if (!strcmp(meta.kv[i].k, "s3.sse"))
                    sm = meta.kv[i].v;
            if (sm && !strcmp(sm, "AES256"))
                sl_hdr_add(r, "x-amz-server-side-encryption", "AES256");
            if (sl_obj_set_custom(&j->b, j->key, j->klen, meta.kv, meta.n, false, &err) < 0)
                sl_logw("s3 complete %s/%.*s: metadata not set: %s", j->b.name, (int)SL_MIN(j->klen, 200), j->key,
                        err.msg);
            s3ver_hdr(r, &j->b, j->key, j->klen, &out); /* its version id, in a versioned bucket */
            sl_objmd_free(&out);
            up_drop(j->id);
            done_add(&j->b, j->key, j->klen, j->id, etag);
            complete_xml(r, &j->b, j->key, j->klen, etag);
        }
    }
out_meta:
    s3_kv_free(&meta);
out:
    free(c.nos);
    free(c.etags);
    sl_bck_release(&j->b);
    free(j->key);
    free(j);
}

static void cpl_cancel(void *arg)
{
    struct cpl_job *j = arg;
    sl_bck_release(&j->b);
    free(j->key);
    free(j);
}

static void complete_body(struct sl_req *r)
{
    s3_body_offload(r, complete_run, cpl_cancel);
}

void s3_complete_upload(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *id)
{
    struct cpl_job *j = sl_xcalloc(1, sizeof(*j));
    sl_bck_copy(&j->b, b);
    j->key = sl_xstrndup(q->key, q->klen);
    j->klen = q->klen;
    snprintf(j->id, sizeof(j->id), "%s", id);
    r->ctx = j;
    sl_req_buffer_body(r, 4 * 1024 * 1024, complete_body);
}

void s3_abort_upload(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *id)
{
    struct sl_err err = { 0 };
    if (sl_mpt_abort(b, q->key, q->klen, id, &err) < 0) {
        s3_err(r, 404, "NoSuchUpload", "The specified upload does not exist: %s", err.msg);
        return;
    }
    up_drop(id);
    sl_resp_empty(r, 204);
}

static int part_cmp_no(const void *a, const void *b)
{
    return ((const struct s3part *)a)->no - ((const struct s3part *)b)->no;
}

/* ListParts: GET ?uploadId=U[&max-parts&part-number-marker] */
void s3_list_parts(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *id)
{
    const char *mp = sl_req_query(r, "max-parts"), *pm = sl_req_query(r, "part-number-marker");
    char *e;
    long maxp = mp ? strtol(mp, &e, 10) : 1000, marker = pm ? strtol(pm, &e, 10) : 0;
    if ((mp && (!*mp || maxp < 0)) || (pm && (!*pm || marker < 0))) {
        s3_err(r, 400, "InvalidArgument", "max-parts and part-number-marker must be non-negative integers");
        return;
    }
    if (maxp > 1000)
        maxp = 1000;
    pthread_mutex_lock(&up_mu);
    struct s3upload *up = up_find(id);
    if (!up || up->bid != b->bid || up->klen != q->klen || memcmp(up->key, q->key, q->klen)) {
        pthread_mutex_unlock(&up_mu);
        s3_err(r, 404, "NoSuchUpload", "The specified upload does not exist (completed, aborted or unknown)");
        return;
    }
    if (up->nparts)
        qsort(up->parts, (size_t)up->nparts, sizeof(*up->parts), part_cmp_no);
    struct sl_buf x;
    sl_buf_init(&x);
    upload_xml_head(&x, "ListPartsResult", b, q, id);
    sl_buf_adds(&x, "<Initiator><ID>shale</ID><DisplayName>shale</DisplayName></Initiator>"
                    "<Owner><ID>shale</ID><DisplayName>shale</DisplayName></Owner><StorageClass>STANDARD"
                    "</StorageClass>");
    sl_buf_printf(&x, "<PartNumberMarker>%ld</PartNumberMarker><MaxParts>%ld</MaxParts>", marker, maxp);
    int shown = 0, last = 0;
    bool more = false;
    struct sl_buf parts;
    sl_buf_init(&parts);
    for (int i = 0; i < up->nparts; i++) {
        struct s3part *p = &up->parts[i];
        if (p->no <= marker)
            continue;
        if (shown == maxp) {
            more = true;
            break;
        }
        char t[64];
        s3_iso_time(p->at, t, sizeof(t));
        sl_buf_printf(&parts, "<Part><PartNumber>%d</PartNumber><LastModified>%s</LastModified><ETag>&quot;%s"
                      "&quot;</ETag><Size>%llu</Size></Part>", p->no, t, p->md5, (unsigned long long)p->size);
        shown++;
        last = p->no;
    }
    pthread_mutex_unlock(&up_mu);
    if (more)
        sl_buf_printf(&x, "<NextPartNumberMarker>%d</NextPartNumberMarker>", last);
    sl_buf_printf(&x, "<IsTruncated>%s</IsTruncated>", more ? "true" : "false");
    if (parts.len)
        sl_buf_add(&x, parts.p, parts.len);
    sl_buf_free(&parts);
    sl_buf_adds(&x, "</ListPartsResult>");
    s3_xml(r, 200, &x);
}

json_t *s3_local_uploads(uint64_t bid)
{
    json_t *a = json_array();
    pthread_mutex_lock(&up_mu);
    for (struct s3upload *u = uploads; u; u = u->next)
        if (u->bid == bid)
            json_array_append_new(a, json_pack("{s:s%,s:s,s:I}", "key", u->key, u->klen, "id", u->id, "initiated",
                                               (json_int_t)u->created));
    pthread_mutex_unlock(&up_mu);
    return a;
}

int s3_uploads_expire(const struct sl_bck *b, bool (*match)(void *arg, const char *key, size_t klen, int64_t created),
                      void *arg)
{
    struct gone {
        char id[80];
        char *key;
        size_t klen;
    } *g = NULL;
    int n = 0, done = 0;
    pthread_mutex_lock(&up_mu);
    for (struct s3upload *u = uploads; u; u = u->next)
        if (u->bid == b->bid && match(arg, u->key, u->klen, u->created)) {
            g = sl_xrealloc(g, (size_t)(n + 1) * sizeof(*g));
            snprintf(g[n].id, sizeof(g[n].id), "%s", u->id);
            g[n].key = sl_xstrndup(u->key, u->klen);
            g[n].klen = u->klen;
            n++;
        }
    pthread_mutex_unlock(&up_mu);
    for (int i = 0; i < n; i++) {
        struct sl_err err = { 0 };
        if (sl_mpt_abort(b, g[i].key, g[i].klen, g[i].id, &err) < 0 && err.code != SL_ENOENT)
            sl_logw("s3: aborting multipart upload %s of %s/%.*s: %s", g[i].id, b->name, (int)SL_MIN(g[i].klen, 200),
                    g[i].key, err.msg);
        else
            done++;
        up_drop(g[i].id);
        free(g[i].key);
    }
    free(g);
    return done;
}
