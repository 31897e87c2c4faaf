/* SPDX-License-Identifier: MIT
 * s3mpu.c: S3 multipart uploads over the native multipart of upload.h:
 * the uploads in flight on this target (their parts' sizes, ETags and
 * checksums, the metadata and checksum algorithm given at the start),
 * Create, Complete (the parts checked against what was uploaded, the
 * object's ETag and composite checksum as S3 computes them), Abort,
 * ListParts, and this target's share of ListMultipartUploads. The parts
 * themselves are PUTs (s3obj.c) or copies (s3copy.c). See s3obj.h.
 *
 * What is here is also in upload.c's records (the "info" of the upload
 * and of each part, JSON), so that an upload outlives a restart:
 * s3_uploads_recover rebuilds this list from them at start-up.
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
    char xc[72];                /* its x-amz-checksum-ALG (base64), "" none */
    int64_t at;
};

struct s3upload {
    char id[80];
    uint64_t bid;
    char *key;
    size_t klen;
    struct kvs meta;
    int xca;                    /* x-amz-checksum-algorithm (XC_*), 0 none */
    struct s3part *parts;
    int nparts;
    int64_t created, last;      /* unix ns */
    struct s3upload *next;
};

static const char *const xc_names[] = { [XC_CRC32] = "CRC32", [XC_CRC32C] = "CRC32C", [XC_SHA1] = "SHA1",
                                        [XC_SHA256] = "SHA256", [XC_CRC64NVME] = "CRC64NVME" };

static const char *xc_name(int a)
{
    return a > 0 && a < (int)SL_ARRAY_SIZE(xc_names) ? xc_names[a] : "";
}

static pthread_mutex_t up_mu = PTHREAD_MUTEX_INITIALIZER;
static struct s3upload *uploads;

static struct s3upload *up_find(const char *id) /* up_mu held */
{
    for (struct s3upload *u = uploads; u; u = u->next)
        if (!strcmp(u->id, id))
            return u;
    return NULL;
}

static void up_free(struct s3upload *u)
{
    s3_kv_free(&u->meta);
    free(u->parts);
    free(u->key);
    free(u);
}

static void up_drop(const char *id)
{
    pthread_mutex_lock(&up_mu);
    for (struct s3upload **pp = &uploads; *pp; pp = &(*pp)->next) {
        if (!strcmp((*pp)->id, id)) {
            struct s3upload *u = *pp;
            *pp = u->next;
            up_free(u);
            break;
        }
    }
    pthread_mutex_unlock(&up_mu);
}

/* with up_mu held */
static void up_set_part(struct s3upload *up, int partno, uint64_t size, const char *etag, const char *xc, int64_t at)
{
    int i;
    for (i = 0; i < up->nparts && up->parts[i].no != partno; i++)
        ;
    if (i == up->nparts) {
        up->parts = sl_xrealloc(up->parts, (size_t)(up->nparts + 1) * sizeof(*up->parts));
        up->nparts++;
    }
    up->parts[i].no = partno;
    up->parts[i].size = size;
    up->parts[i].at = at;
    if (at > up->last)
        up->last = at;
    snprintf(up->parts[i].md5, sizeof(up->parts[i].md5), "%s", etag);
    snprintf(up->parts[i].xc, sizeof(up->parts[i].xc), "%s", xc ? xc : "");
}

/* A part is in: its size, MD5 and checksum for Complete and ListParts. */
void s3_upload_record_part(const char *id, int partno, uint64_t size, const char *etag, const char *xc)
{
    pthread_mutex_lock(&up_mu);
    struct s3upload *up = up_find(id);
    if (up)
        up_set_part(up, partno, size, etag, xc, sl_now_ns());
    pthread_mutex_unlock(&up_mu);
}

char *s3_part_info(const char *etag, const char *xc)
{
    json_t *v = json_pack("{s:s,s:s}", "md5", etag, "xc", xc ? xc : "");
    char *s = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    return s;
}

int s3_upload_alg(const char *id)
{
    pthread_mutex_lock(&up_mu);
    struct s3upload *up = up_find(id);
    int a = up ? up->xca : 0;
    pthread_mutex_unlock(&up_mu);
    return a;
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

struct up_job {
    struct sl_bck b;
    struct s3req q;
    char *key;
    char id[80];
};

static void up_job_free(void *arg)
{
    struct up_job *j = arg;
    sl_bck_release(&j->b);
    free(j->key);
    free(j);
}

static struct up_job *up_job_new(const struct s3req *q, const struct sl_bck *b, const char *id)
{
    struct up_job *j = sl_xcalloc(1, sizeof(*j));
    sl_bck_copy(&j->b, b);
    j->q = *q;
    j->key = sl_xstrndup(q->key, q->klen);
    j->q.key = j->key;
    snprintf(j->id, sizeof(j->id), "%s", id ? id : "");
    return j;
}

/* what upload.c keeps of the upload for a restart (s3_uploads_recover) */
static char *upload_info(const struct kvs *meta, int xca)
{
    json_t *m = json_array();
    for (int i = 0; i < meta->n; i++)
        json_array_append_new(m, json_pack("[s,s]", meta->kv[i].k, meta->kv[i].v));
    json_t *v = json_pack("{s:o,s:s}", "meta", m, "xca", xc_name(xca));
    char *s = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    return s;
}

/* x-amz-checksum-algorithm (and x-amz-checksum-type) of CreateMultipartUpload: 0 none, XC_*, -1 answered */
static int create_alg(struct sl_req *r)
{
    const char *h = sl_req_header(r, "x-amz-checksum-algorithm"), *t = sl_req_header(r, "x-amz-checksum-type");
    int a = h && *h ? s3_xc_alg(h) : 0;
    if (a < 0 || a == XC_CRC64NVME) {
        s3_err(r, 400, "InvalidRequest", "x-amz-checksum-algorithm \"%.40s\" is not supported for multipart uploads "
               "here (CRC32, CRC32C, SHA1 or SHA256); nothing was created", h);
        return -1;
    }
    if (t && strcasecmp(t, "COMPOSITE")) {
        s3_err(r, strcasecmp(t, "FULL_OBJECT") ? 400 : 501, strcasecmp(t, "FULL_OBJECT") ? "InvalidRequest" :
               "NotImplemented", "x-amz-checksum-type \"%.40s\": this Shale S3 front end makes COMPOSITE checksums "
               "of multipart uploads only (the checksum of the parts' checksums); nothing was created", t);
        return -1;
    }
    if (t && !a) {
        s3_err(r, 400, "InvalidRequest", "x-amz-checksum-type needs x-amz-checksum-algorithm; nothing was created");
        return -1;
    }
    return a;
}

static void create_run(struct sl_req *r, void *arg);

void s3_create_upload(struct sl_req *r, const struct s3req *q, const struct sl_bck *b)
{
    /* the upload's record is committed before its id goes out: on the disk pool */
    sl_req_offload_disk(r, create_run, up_job_free, up_job_new(q, b, NULL));
}

static void create_run(struct sl_req *r, void *arg)
{
    struct up_job *j = arg;
    const struct s3req *q = &j->q;
    const struct sl_bck *b = &j->b;
    char id[80];
    struct sl_err err = { 0 };
    struct kvs meta = { 0 };
    int xca = create_alg(r);
    if (xca < 0) {
        up_job_free(j);
        return;
    }
    s3_collect_meta(r, &meta);
    if (meta.bytes > S3_META_MAX) {
        s3_kv_free(&meta);
        s3_err(r, 400, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size (%d "
               "bytes)", S3_META_MAX);
        up_job_free(j);
        return;
    }
    struct sl_sse sse;
    int sr = s3_tagging_hdr(r, &meta) < 0 || s3_lock_hdrs(r, b, &meta) < 0 || s3_acl_hdr(r, b, &meta) < 0 ? -1
             : s3_sse_new(r, b, &sse, &meta); /* the parts' encryption */
    if (sr < 0) {
        s3_kv_free(&meta);
        up_job_free(j);
        return;
    }
    s3_sse_headers(r, &sse);
    sl_sse_free(&sse);
    char *info = upload_info(&meta, xca);
    int rc = sl_mpt_create(b, q->key, q->klen, info, id, sizeof(id), &err);
    free(info);
    if (rc < 0) {
        s3_kv_free(&meta);
        s3_err_sl(r, &err);
        up_job_free(j);
        return;
    }
    struct s3upload *up = sl_xcalloc(1, sizeof(*up));
    snprintf(up->id, sizeof(up->id), "%s", id);
    up->bid = b->bid;
    up->key = sl_xstrndup(q->key, q->klen);
    up->klen = q->klen;
    up->meta = meta;
    up->xca = xca;
    up->created = up->last = sl_now_ns();
    pthread_mutex_lock(&up_mu);
    /* upload.c drops an upload left alone for UPLOAD_IDLE_S: so does this list */
    for (struct s3upload **pp = &uploads; *pp;) {
        struct s3upload *o = *pp;
        if (up->created - o->last > (int64_t)UPLOAD_IDLE_S * 1000000000LL) {
            *pp = o->next;
            up_free(o);
        } else {
            pp = &o->next;
        }
    }
    up->next = uploads;
    uploads = up;
    pthread_mutex_unlock(&up_mu);
    if (xca) {
        sl_hdr_add(r, "x-amz-checksum-algorithm", xc_name(xca));
        sl_hdr_add(r, "x-amz-checksum-type", "COMPOSITE");
    }
    struct sl_buf x;
    sl_buf_init(&x);
    upload_xml_head(&x, "InitiateMultipartUploadResult", b, q, id);
    sl_buf_adds(&x, "</InitiateMultipartUploadResult>");
    s3_xml(r, 200, &x);
    up_job_free(j);
}

/* upload.c's uploads, after a restart, into the list */
static void recover_one(void *arg, const struct sl_mpt_view *v)
{
    int *n = arg;
    json_t *info = v->info ? json_loads(v->info, 0, NULL) : NULL;
    if (!json_is_object(info)) { /* (a native upload: not an S3 one) */
        json_decref(info);
        return;
    }
    struct s3upload *up = sl_xcalloc(1, sizeof(*up));
    snprintf(up->id, sizeof(up->id), "%s", v->id);
    up->bid = v->b->bid;
    up->key = sl_xstrndup(v->name, v->nlen);
    up->klen = v->nlen;
    up->created = up->last = v->created;
    const char *xa = json_string_value(json_object_get(info, "xca"));
    up->xca = xa && *xa ? SL_MAX(s3_xc_alg(xa), 0) : 0;
    size_t i;
    json_t *kv;
    json_array_foreach(json_object_get(info, "meta"), i, kv)
        if (json_is_string(json_array_get(kv, 0)) && json_is_string(json_array_get(kv, 1)))
            s3_kv_add(&up->meta, json_string_value(json_array_get(kv, 0)), json_string_value(json_array_get(kv, 1)));
    for (int k = 0; k < v->nparts; k++) {
        json_t *pi = v->parts[k].info ? json_loads(v->parts[k].info, 0, NULL) : NULL;
        const char *md5 = json_string_value(json_object_get(pi, "md5"));
        if (md5) /* (a part S3 never acknowledged has none) */
            up_set_part(up, v->parts[k].no, v->parts[k].size, md5, json_string_value(json_object_get(pi, "xc")),
                        v->parts[k].at);
        json_decref(pi);
    }
    json_decref(info);
    up->last = SL_MAX(up->last, sl_now_ns() - 1); /* (idle from the restart on, as upload.c counts) */
    up->next = uploads;
    uploads = up;
    (*n)++;
}

int s3_uploads_recover(void)
{
    int n = 0;
    pthread_mutex_lock(&up_mu);
    sl_mpt_foreach(recover_one, &n);
    pthread_mutex_unlock(&up_mu);
    if (n)
        sl_logi("s3: %d multipart upload(s) in flight taken back after the restart", n);
    return n;
}

struct cpl_parse {
    int *nos;
    char (*etags)[80];
    char (*xcs)[80];            /* "ALG:BASE64" of Part's ChecksumALG, "" none */
    int n, cap;
    int cur_no;
    char cur_etag[80];
    char cur_xc[80];
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
    } else if (!strcmp(parent, "Part") && !strncmp(name, "Checksum", 8) && s3_xc_alg(name + 8) > 0) {
        snprintf(c->cur_xc, sizeof(c->cur_xc), "%.12s:%.64s", name + 8, text);
    } else if (!strcmp(name, "Part")) {
        if (c->n >= 10000) {
            c->bad = true;
            return;
        }
        if (c->n == c->cap) {
            c->cap = c->cap ? c->cap * 2 : 16;
            c->nos = sl_xrealloc(c->nos, (size_t)c->cap * sizeof(int));
            c->etags = sl_xrealloc(c->etags, (size_t)c->cap * sizeof(*c->etags));
            c->xcs = sl_xrealloc(c->xcs, (size_t)c->cap * sizeof(*c->xcs));
        }
        c->nos[c->n] = c->cur_no;
        snprintf(c->etags[c->n], 80, "%s", c->cur_etag);
        snprintf(c->xcs[c->n], 80, "%s", c->cur_xc);
        c->n++;
        c->cur_no = 0;
        c->cur_etag[0] = 0;
        c->cur_xc[0] = 0;
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
    char xc[100];               /* "ALG:BASE64-N", "" none */
    int64_t at;
};

static struct done_up done_ups[DONE_KEEP];
static int done_next;

static void done_add(const struct sl_bck *b, const char *key, size_t klen, const char *id, const char *etag,
                     const char *xc)
{
    pthread_mutex_lock(&up_mu);
    struct done_up *d = &done_ups[done_next++ % DONE_KEEP];
    free(d->key);
    snprintf(d->id, sizeof(d->id), "%s", id);
    d->bid = b->bid;
    d->key = sl_xstrndup(key, klen);
    snprintf(d->etag, sizeof(d->etag), "%s", etag);
    snprintf(d->xc, sizeof(d->xc), "%s", xc);
    d->at = sl_mono_ns();
    pthread_mutex_unlock(&up_mu);
}

/* xc: the object's composite checksum, "ALG:BASE64-N" ("" none) */
static void complete_xml(struct sl_req *r, const struct sl_bck *b, const char *key, size_t klen, const char *etag,
                         const char *xc)
{
    struct sl_buf x;
    sl_buf_init(&x);
    sl_buf_adds(&x, "<CompleteMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Location>");
    s3_xml_esc(&x, key, klen);
    sl_buf_adds(&x, "</Location><Bucket>");
    s3_xml_esc(&x, b->name, strlen(b->name));
    sl_buf_adds(&x, "</Bucket><Key>");
    s3_xml_esc(&x, key, klen);
    sl_buf_printf(&x, "</Key><ETag>&quot;%s&quot;</ETag>", etag);
    const char *colon = strchr(xc, ':');
    if (colon) {
        char alg[16], tag[32];
        snprintf(alg, sizeof(alg), "%.*s", (int)SL_MIN(colon - xc, 15), xc);
        snprintf(tag, sizeof(tag), "Checksum%s", xc_name(s3_xc_alg(alg)));
        s3_xel(&x, tag, colon + 1);
        s3_xel(&x, "ChecksumType", "COMPOSITE");
    }
    sl_buf_adds(&x, "</CompleteMultipartUploadResult>");
    s3_xml(r, 200, &x);
}

/* true when id completed recently for this object (answered) */
static bool done_find(const struct sl_bck *b, const char *key, size_t klen, const char *id, struct sl_req *r)
{
    char etag[48] = "", xc[100] = "";
    pthread_mutex_lock(&up_mu);
    for (int i = 0; i < DONE_KEEP; i++) {
        struct done_up *d = &done_ups[i];
        if (d->key && !strcmp(d->id, id) && d->bid == b->bid && strlen(d->key) == klen && !memcmp(d->key, key, klen) &&
            sl_mono_ns() - d->at < DONE_TTL_NS) {
            snprintf(etag, sizeof(etag), "%s", d->etag);
            snprintf(xc, sizeof(xc), "%s", d->xc);
        }
    }
    pthread_mutex_unlock(&up_mu);
    if (!etag[0])
        return false;
    complete_xml(r, b, key, klen, etag, xc);
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
    int status = 0, xca = up ? up->xca : 0;
    char msg[300] = "";
    struct s3xc xcc = { 0 }; /* the composite checksum: of the parts' checksums, one after another */
    s3_xc_init(&xcc, xca);
    for (int i = 0; up && i < c.n && !status; i++) {
        struct s3part *p = NULL;
        for (int k = 0; k < up->nparts; k++)
            if (up->parts[k].no == c.nos[i])
                p = &up->parts[k];
        const char *lx = strchr(c.xcs[i], ':'); /* the list's checksum of the part */
        char la[16] = "";
        if (lx)
            snprintf(la, sizeof(la), "%.*s", (int)SL_MIN(lx - c.xcs[i], 15), c.xcs[i]);
        if (!p || strcmp(p->md5, c.etags[i])) {
            status = 400;
            snprintf(msg, sizeof(msg), "part %d: %s", c.nos[i], p ? "its ETag is not the one listed" :
                     "it was not uploaded");
        } else if (i < c.n - 1 && p->size < 5 * 1024 * 1024) {
            status = -400;
            snprintf(msg, sizeof(msg), "part %d has %llu bytes; every part but the last needs at least 5 MiB",
                     c.nos[i], (unsigned long long)p->size);
        } else if (xca && !lx) {
            status = 401;
            snprintf(msg, sizeof(msg), "The upload was created using a %s checksum. The complete request must "
                     "include the checksum for each part. It was missing for part %d in the request.",
                     xc_name(xca), c.nos[i]);
        } else if (lx && (s3_xc_alg(la) != xca || strcmp(lx + 1, p->xc))) {
            status = 400;
            snprintf(msg, sizeof(msg), "part %d: %s", c.nos[i], s3_xc_alg(la) != xca ? "the upload has no such "
                     "checksum (see x-amz-checksum-algorithm of CreateMultipartUpload)" :
                     "its checksum is not the one listed");
        } else {
            unsigned char d[64];
            s3_hex2bin(p->md5, d, 16);
            EVP_DigestUpdate(md, d, 16);
            int dl = xca ? s3_b64dec(p->xc, d, sizeof(d)) : 0;
            if (dl > 0)
                s3_xc_update(&xcc, d, (size_t)dl);
        }
    }
    char xc[100] = "";           /* the object's, "alg:BASE64-N" */
    if (xca) {
        char got[160];
        s3_xc_final(&xcc, got);
        snprintf(xc, sizeof(xc), "%s:%.60s-%d", xc_name(xca), got, c.n);
        for (char *k = xc; *k != ':'; k++)
            *k = (char)(*k >= 'A' && *k <= 'Z' ? *k + 32 : *k);
    }
    s3_xc_free(&xcc);
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
        if (xca) { /* GetObjectAttributes' ObjectParts: the parts' checksums, as long as they fit */
            struct sl_buf xs;
            sl_buf_init(&xs);
            for (int i = 0; i < c.n; i++)
                for (int k = 0; k < up->nparts; k++)
                    if (up->parts[k].no == c.nos[i])
                        sl_buf_printf(&xs, "%s%s", i ? "," : "", up->parts[k].xc);
            s3_kv_add(&meta, S3_XC_KEY, xc);
            if (xs.p && xs.len <= 2000)
                s3_kv_add(&meta, S3_XCP_KEY, xs.p);
            sl_buf_free(&xs);
        }
    }
    pthread_mutex_unlock(&up_mu);
    if (!up && done_find(&j->b, j->key, j->klen, j->id, r)) /* completed already: the same answer again */
        goto out_meta;
    if (!up) {
        s3_err(r, 404, "NoSuchUpload", "The specified upload does not exist (completed, aborted or unknown)");
    } else if (status == 400) {
        s3_err(r, 400, "InvalidPart", "One or more of the specified parts could not be found or did not match: %s",
               msg);
    } else if (status == 401) {
        s3_err(r, 400, "InvalidRequest", "%s", msg);
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
            done_add(&j->b, j->key, j->klen, j->id, etag, xc);
            complete_xml(r, &j->b, j->key, j->klen, etag, xc);
        }
    }
out_meta:
    s3_kv_free(&meta);
out:
    free(c.nos);
    free(c.etags);
    free(c.xcs);
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

static void abort_run(struct sl_req *r, void *arg)
{
    struct up_job *j = arg;
    struct sl_err err = { 0 };
    if (sl_mpt_abort(&j->b, j->q.key, j->q.klen, j->id, &err) < 0) {
        s3_err(r, 404, "NoSuchUpload", "The specified upload does not exist: %s", err.msg);
    } else {
        up_drop(j->id);
        sl_resp_empty(r, 204);
    }
    up_job_free(j);
}

void s3_abort_upload(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *id)
{
    /* (its records and files go: on the disk pool) */
    sl_req_offload_disk(r, abort_run, up_job_free, up_job_new(q, b, id));
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
    if (up->xca) {
        s3_xel(&x, "ChecksumAlgorithm", xc_name(up->xca));
        s3_xel(&x, "ChecksumType", "COMPOSITE");
    }
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
                      "&quot;</ETag><Size>%llu</Size>", p->no, t, p->md5, (unsigned long long)p->size);
        if (up->xca && p->xc[0]) {
            char tag[32];
            snprintf(tag, sizeof(tag), "Checksum%s", xc_name(up->xca));
            s3_xel(&parts, tag, p->xc);
        }
        sl_buf_adds(&parts, "</Part>");
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
