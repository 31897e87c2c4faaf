/* SPDX-License-Identifier: MIT
 * s3copy.c: CopyObject and UploadPartCopy (a PUT with x-amz-copy-source),
 * on the destination's target: the source read where the read path serves
 * it (here, or streamed from its target), its conditions checked, and its
 * metadata copied or replaced. See s3obj.h.
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
#include "upload.h"
#include "s3sse.h"

#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- CopyObject: PUT with x-amz-copy-source, on the destination's target ---- */

struct copy_job {
    struct sl_bck dst, src;
    char *dkey, *skey;
    char svid[32];            /* x-amz-copy-source's versionId, "" none */
    size_t dklen, sklen;
    bool replace;
    struct kvs meta;              /* REPLACE: the request's metadata */
    bool tag_replace;             /* x-amz-tagging-directive REPLACE: the request's tags (in tags) */
    struct kvs tags;
    struct kvs acl;               /* the request's x-amz-acl ("s3.acl"): a copy does not take its source's */
    bool part;                    /* UploadPartCopy: into part partno of upload id */
    char id[80];
    int partno;
    bool ranged;                  /* x-amz-copy-source-range: bytes [roff, roff + rlen) */
    uint64_t roff, rlen;
};

static void copy_free(void *arg)
{
    struct copy_job *j = arg;
    sl_bck_release(&j->dst);
    sl_bck_release(&j->src);
    free(j->dkey);
    free(j->skey);
    s3_kv_free(&j->meta);
    s3_kv_free(&j->tags);
    s3_kv_free(&j->acl);
    free(j);
}

struct copy_src {                 /* a source read from its own target */
    struct sl_req *r;
    const struct copy_job *j;
    struct sl_put *p;
    struct sl_mpt_part *mp;       /* a part: begun once its size is known */
    int64_t clen;                 /* the source's Content-Length as its target sent it */
    bool begin_failed, range_bad;
    struct sl_err werr;
    EVP_MD_CTX *md5;
    struct kvs custom;
    char etag[160];
    int64_t mtime;
    bool checked, refused;
    int status;
    struct sl_sse dsse;            /* the destination's encryption: what is written is its ciphertext */
    struct s3xc xc;               /* a part of an upload with x-amz-checksum-algorithm: its checksum */
};

static void copy_hdr(void *ctx, const char *name, const char *value)
{
    struct copy_src *c = ctx;
    if (!strcasecmp(name, "Ais-Custom-Md")) {
        const char *eq = strchr(value, '=');
        if (eq) {
            char *k = sl_xstrndup(value, (size_t)(eq - value));
            if (!strcmp(k, "ETag"))
                snprintf(c->etag, sizeof(c->etag), "%s", eq + 1);
            s3_kv_add(&c->custom, k, eq + 1);
            free(k);
        }
    } else if (!strcasecmp(name, "Ais-Checksum-Value") && !c->etag[0]) {
        snprintf(c->etag, sizeof(c->etag), "%s", value);
    } else if (!strcasecmp(name, "Ais-Atime")) {
        c->mtime = strtoll(value, NULL, 10);
    } else if (!strcasecmp(name, "Content-Length")) {
        c->clen = strtoll(value, NULL, 10);
    }
}

static int part_begin(struct copy_src *c, uint64_t size, struct sl_err *err)
{
    char pn[16];
    snprintf(pn, sizeof(pn), "%d", c->j->partno);
    if (sl_mpt_part_begin(&c->j->dst, c->j->dkey, c->j->dklen, c->j->id, pn, (int64_t)size, &c->mp, err) < 0) {
        c->begin_failed = true;
        return -1;
    }
    return 0;
}

static int dst_write(struct copy_src *c, const void *data, size_t n, struct sl_err *err)
{
    EVP_DigestUpdate(c->md5, data, n);
    if (c->xc.alg)
        s3_xc_update(&c->xc, data, n);
    if (c->dsse.mode)
        data = sl_sse_crypt(&c->dsse, data, n);
    return c->j->part ? sl_mpt_part_write(c->mp, data, n, err) : sl_put_write(c->p, data, n, err);
}

static void dst_abort(struct copy_src *c)
{
    if (c->mp) {
        struct sl_err e = { 0 };
        sl_mpt_part_end(c->mp, false, &e);
        c->mp = NULL;
    }
    if (c->p) {
        sl_put_abort(c->p);
        c->p = NULL;
    }
}

static int copy_sink(void *ctx, const char *data, size_t n)
{
    struct copy_src *c = ctx;
    if (!c->checked) {
        c->checked = true;
        if (s3_conditions(c->r, "x-amz-copy-source-", c->etag, c->mtime, true)) {
            c->refused = true;
            return -1;
        }
    }
    if (c->j->ranged && c->clen != (int64_t)c->j->rlen) { /* its target clamped the range: past the end */
        c->range_bad = true;
        return -1;
    }
    if (c->j->part && !c->mp && (c->clen <= 0 || part_begin(c, (uint64_t)c->clen, &c->werr) < 0)) {
        if (c->clen <= 0)
            sl_errf(&c->werr, SL_EINVAL, "the copy source's length is unknown");
        c->begin_failed = true;
        return -1;
    }
    return dst_write(c, data, n, &c->werr);
}

/* The new object's tags, into out: the source's (x-amz-tagging-directive
 * COPY, the default) from its custom metadata src, or the request's. */
static void copy_tags(const struct copy_job *j, const struct kvs *src, struct kvs *out)
{
    s3_kv_add(out, "s3.acl", j->acl.n ? j->acl.kv[0].v : "private");
    if (j->tag_replace) {
        s3_tags_custom(&j->tags, out);
        return;
    }
    for (int i = 0; i < src->n; i++)
        if (!strncmp(src->kv[i].k, S3_TAG_PFX, sizeof(S3_TAG_PFX) - 1))
            s3_kv_add(out, src->kv[i].k, src->kv[i].v);
}

static void copy_run(struct sl_req *r, void *arg)
{
    struct copy_job *j = arg;
    struct sl_err err = { 0 };
    struct copy_src c = { .r = r, .j = j, .clen = -1 };
    char *vkey = NULL; /* an id on another target: the key, should the version be its current one */
    c.md5 = EVP_MD_CTX_new();
    if (j->part)
        s3_xc_init(&c.xc, s3_upload_alg(j->id));
    EVP_DigestInit_ex(c.md5, EVP_md5(), NULL);
    struct sl_smap *s = sl_smap_get();
    /* the source is read where the read path serves it (cluster/read.h) */
    bool local = sl_read_here(s, &j->src, j->skey, j->sklen);
    if (j->svid[0]) { /* the version's own object: here found by id, elsewhere by its name */
        struct sl_buf vn;
        sl_buf_init(&vn);
        if (local) {
            struct sl_objmd vmd;
            int f = sl_ver_find(&j->src, j->skey, j->sklen, j->svid, &vn, &vmd, &err);
            if (f == 1 && sl_ver_is_marker(&vmd)) {
                sl_objmd_free(&vmd);
                f = -2;
            } else if (f == 1) {
                sl_objmd_free(&vmd);
            }
            if (f != 1) {
                sl_buf_free(&vn);
                if (f == -2)
                    s3_err(r, 400, "InvalidRequest", "The source of a copy request may not specifically refer to a "
                           "delete marker by version id.");
                else if (f == 0 || err.code == SL_EINVAL)
                    s3_err(r, f == 0 ? 404 : 400, f == 0 ? "NoSuchVersion" : "InvalidArgument",
                           "the copy source's version %s: %s", j->svid, f == 0 ? "does not exist" : err.msg);
                else
                    s3_err_sl(r, &err);
                goto out;
            }
        } else if (strlen(j->svid) == 20) {
            sl_ver_name(&vn, j->skey, j->sklen, j->svid); /* (not archived: then the key, if the id is its) */
            vkey = sl_xstrndup(j->skey, j->sklen);
        } else { /* "null": the key, if it is the null version (checked once read) */
            sl_buf_add(&vn, j->skey, j->sklen);
        }
        free(j->skey);
        j->sklen = vn.len;
        j->skey = sl_buf_steal(&vn);
    }
    const struct sl_snode *owner = local ? NULL : sl_read_target(s, &j->src, j->skey, j->sklen);
    int fd = -1;
    struct sl_objmd md;
    memset(&md, 0, sizeof(md));
    struct sl_sse ssrc;
    memset(&ssrc, 0, sizeof(ssrc));
    struct kvs sm = { 0 };           /* the destination's encryption metadata */
    if (j->part) {
        struct kvs um = { 0 };
        s3_upload_meta(j->id, &um);
        int sr = s3_sse_part(r, &um, &c.dsse, j->partno);
        s3_kv_free(&um);
        if (sr < 0)
            goto out;
    } else if (s3_sse_new(r, &j->dst, &c.dsse, &sm) < 0 || s3_lock_hdrs(r, &j->dst, &sm) < 0) {
        goto out; /* (the copy's lock: the request's or the bucket's default, never the source's: s3lock.c) */
    }
    if (local) {
        if (sl_read_obj_ex(&j->src, j->skey, j->sklen, SL_READ_RAW, &fd, &md, &err) < 0) {
            if (err.code == SL_ENOOBJ || err.code == SL_ENOENT)
                s3_err(r, 404, "NoSuchKey", "The specified key does not exist (the copy source)");
            else
                s3_err_sl(r, &err);
            goto out;
        }
        if (s3_sse_open_s3(r, &md, "x-amz-copy-source-", &ssrc) < 0) /* encrypted: its key */
            goto out;
        snprintf(c.etag, sizeof(c.etag), "%s", s3_obj_etag(&md));
        c.mtime = md.mtime;
        c.checked = true;
        if (s3_conditions(r, "x-amz-copy-source-", c.etag, c.mtime, true)) {
            s3_err(r, 412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold "
                   "(x-amz-copy-source-if-*)");
            goto out;
        }
        for (int i = 0; i < md.ncustom; i++)
            s3_kv_add(&c.custom, md.custom[i].k, md.custom[i].v);
    } else if (!owner) {
        s3_err(r, 503, "ServiceUnavailable", "the cluster has no active targets; retry later");
        goto out;
    }
    /* the new object's metadata: the source's (COPY) or the request's (REPLACE); the ETag is computed */
    struct kvs *use = j->replace ? &j->meta : &c.custom;
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = local ? (int64_t)md.size : -1 };
    struct kvs keep = { 0 };
    if (local || j->replace) {
        for (int i = 0; i < use->n; i++)
            if (strcmp(use->kv[i].k, "ETag") && strcmp(use->kv[i].k, "s3.mp") && strcmp(use->kv[i].k, "orig_fntl") &&
                strncmp(use->kv[i].k, S3_TAG_PFX, sizeof(S3_TAG_PFX) - 1) && !s3_acl_md_key(use->kv[i].k) &&
                !s3_lock_md_key(use->kv[i].k) &&
                !sl_sse_key_is_own(use->kv[i].k))
                s3_kv_add(&keep, use->kv[i].k, use->kv[i].v);
        copy_tags(j, &c.custom, &keep);
        o.custom = keep.kv;
        o.ncustom = keep.n;
    }
    if (!j->part && sl_put_begin(&j->dst, j->dkey, j->dklen, &o, &c.p, &err) < 0) {
        s3_kv_free(&keep);
        s3_err_sl(r, &err);
        goto out;
    }
    s3_kv_free(&keep);
    for (int i = 0; c.p && i < sm.n; i++)
        sl_put_set_custom(c.p, sm.kv[i].k, sm.kv[i].v);
    if (local) {
        uint64_t off = 0, end = md.size;
        if (j->ranged) {
            if (j->roff >= md.size || j->roff + j->rlen > md.size) {
                s3_err(r, 416, "InvalidRange", "x-amz-copy-source-range is outside the source (%llu bytes)",
                       (unsigned long long)md.size);
                goto out;
            }
            off = j->roff;
            end = j->roff + j->rlen;
        }
        if (j->part && part_begin(&c, end - off, &err) < 0) {
            s3_err(r, err.code == SL_ENOENT ? 404 : 400, err.code == SL_ENOENT ? "NoSuchUpload" : "InvalidRequest",
                   "%s", err.msg);
            goto out;
        }
        char *buf = sl_xmalloc(256 * 1024);
        while (off < end) {
            size_t want = end - off < 256 * 1024 ? (size_t)(end - off) : 256 * 1024;
            ssize_t n = pread(fd, buf, want, (off_t)off);
            if (n <= 0) {
                sl_errf(&err, SL_EIO, "reading the copy source: %s", n < 0 ? strerror(errno) : "short file");
                break;
            }
            if (ssrc.mode)
                sl_sse_xor_at(&ssrc, off, buf, (size_t)n);
            if (dst_write(&c, buf, (size_t)n, &err) < 0)
                break;
            off += (uint64_t)n;
        }
        free(buf);
        if (off < end) {
            dst_abort(&c);
            s3_err_sl(r, &err);
            goto out;
        }
    } else {
        struct sl_buf url;
        sl_buf_init(&url);
        sl_peer_obj_url(&url, owner->url, j->src.name, "ais", j->skey, j->sklen);
        struct sl_peer_resp pr = { 0 };
        char rh[80];
        struct sl_peer_hdr h[4];
        int nh = 0;
        snprintf(rh, sizeof(rh), "bytes=%llu-%llu", (unsigned long long)j->roff,
                 (unsigned long long)(j->roff + j->rlen - 1));
        if (j->ranged)
            h[nh++] = (struct sl_peer_hdr){ "Range", rh };
        static const char *const ssec[] = { "x-amz-server-side-encryption-customer-algorithm",
                                            "x-amz-server-side-encryption-customer-key",
                                            "x-amz-server-side-encryption-customer-key-MD5" };
        char cn[3][96];
        for (int i = 0; i < 3; i++) { /* an SSE-C source: its key, for its target to decrypt it */
            snprintf(cn[i], sizeof(cn[i]), "x-amz-copy-source-%s", ssec[i] + 6);
            const char *v = sl_req_header(r, cn[i]);
            if (v)
                h[nh++] = (struct sl_peer_hdr){ ssec[i], v };
        }
        int rc = sl_peer_get_stream(url.p, nh ? h : NULL, nh, copy_sink, copy_hdr, &c, 0, &pr);
        bool at_key = j->svid[0] && !vkey; /* ("null": the key was read) */
        if (rc == 0 && pr.status == 404 && vkey) { /* not an older version: the current one, if it has that id */
            sl_peer_resp_free(&pr);
            memset(&pr, 0, sizeof(pr));
            s3_kv_free(&c.custom);
            memset(&c.custom, 0, sizeof(c.custom));
            c.clen = -1;
            c.etag[0] = 0;
            c.mtime = 0;
            sl_buf_reset(&url);
            sl_peer_obj_url(&url, owner->url, j->src.name, "ais", vkey, strlen(vkey));
            rc = sl_peer_get_stream(url.p, nh ? h : NULL, nh, copy_sink, copy_hdr, &c, 0, &pr);
            at_key = true;
        }
        sl_buf_free(&url);
        bool okst = pr.status == 200 || (j->ranged && pr.status == 206);
        const char *gotv = NULL; /* the version read, when one was asked for by id: its id */
        for (int i = 0; i < c.custom.n; i++)
            if (!strcmp(c.custom.kv[i].k, "s3.vid"))
                gotv = c.custom.kv[i].v;
        bool vmiss = rc == 0 && okst && at_key && strcmp(gotv && strlen(gotv) == 20 ? gotv : "null", j->svid);
        if (vmiss) {
            dst_abort(&c);
            if (!strcmp(j->svid, "null")) /* an archived null version: its name is known on its target only */
                s3_err(r, 501, "NotImplemented", "copying version \"null\" from another target: the null version "
                       "of this key is an older one there; copy it by the current version or from that target");
            else
                s3_err(r, 404, "NoSuchVersion", "The specified version does not exist (the copy source's %s)",
                       j->svid);
            sl_peer_resp_free(&pr);
            goto out;
        }
        if (rc == 0 && okst && !c.checked &&
            s3_conditions(r, "x-amz-copy-source-", c.etag, c.mtime, true)) /* an empty source */
            c.refused = true;
        if (rc == 0 && okst && j->part && !c.mp && !c.refused && !c.begin_failed) {
            c.begin_failed = true; /* an empty source: a part needs a byte */
            sl_errf(&c.werr, SL_EINVAL, "the copy source is empty: a part needs at least one byte");
        }
        if (c.refused || c.begin_failed || c.range_bad || rc < 0 || !okst) {
            dst_abort(&c);
            if (c.range_bad)
                s3_err(r, 416, "InvalidRange", "x-amz-copy-source-range is outside the source");
            else if (c.refused)
                s3_err(r, 412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold "
                       "(x-amz-copy-source-if-*)");
            else if (c.begin_failed)
                s3_err(r, c.werr.code == SL_ENOENT ? 404 : 400,
                       c.werr.code == SL_ENOENT ? "NoSuchUpload" : "InvalidRequest", "%s", c.werr.msg);
            else if (pr.status == 404)
                s3_err(r, 404, "NoSuchKey", "The specified key does not exist (the copy source)");
            else if (pr.status == 416)
                s3_err(r, 416, "InvalidRange", "x-amz-copy-source-range is outside the source");
            else if (pr.status == 400 || pr.status == 403) /* an encrypted source without its key */
                s3_err(r, (int)pr.status, pr.status == 403 ? "AccessDenied" : "InvalidRequest", "the copy source: %s",
                       pr.err);
            else
                s3_err(r, 503, "ServiceUnavailable", "reading the copy source from t[%s]: %s", owner->id, pr.err);
            sl_peer_resp_free(&pr);
            goto out;
        }
        sl_peer_resp_free(&pr);
        if (!j->replace && !j->part) /* the source's metadata came with its bytes */
            for (int i = 0; i < c.custom.n; i++)
                if (strcmp(c.custom.kv[i].k, "ETag") && strcmp(c.custom.kv[i].k, "s3.mp") &&
                    strncmp(c.custom.kv[i].k, S3_TAG_PFX, sizeof(S3_TAG_PFX) - 1) &&
                    !s3_acl_md_key(c.custom.kv[i].k) && !sl_sse_key_is_own(c.custom.kv[i].k) &&
                    !s3_lock_md_key(c.custom.kv[i].k))
                    sl_put_set_custom(c.p, c.custom.kv[i].k, c.custom.kv[i].v);
        if (!j->part) { /* the source's tags came with its bytes (set again when they were at begin) */
            struct kvs tg = { 0 };
            copy_tags(j, &c.custom, &tg);
            for (int i = 0; i < tg.n; i++)
                sl_put_set_custom(c.p, tg.kv[i].k, tg.kv[i].v);
            s3_kv_free(&tg);
        }
    }
    unsigned char d[16];
    unsigned dn = 0;
    char etag[33];
    EVP_DigestFinal_ex(c.md5, d, &dn);
    sl_hex(d, 16, etag);
    if (j->part) {
        struct sl_mpt_part *mp = c.mp;
        c.mp = NULL;
        uint64_t size = j->ranged ? j->rlen : local ? md.size : (uint64_t)c.clen;
        char xc[160] = "";
        if (c.xc.alg)
            s3_xc_final(&c.xc, xc);
        char *info = s3_part_info(etag, xc); /* (recorded with the part: a restart keeps it) */
        sl_mpt_part_set_info(mp, info);
        free(info);
        if (sl_mpt_part_end(mp, true, &err) < 0) {
            s3_err_sl(r, &err);
            goto out;
        }
        s3_upload_record_part(j->id, j->partno, size, etag, xc);
        char t[64];
        s3_iso_time(sl_now_ns(), t, sizeof(t));
        struct sl_buf x;
        sl_buf_init(&x);
        s3_sse_headers(r, &c.dsse);
        sl_buf_printf(&x, "<CopyPartResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LastModified>%s"
                      "</LastModified><ETag>&quot;%s&quot;</ETag></CopyPartResult>", t, etag);
        s3_xml(r, 200, &x);
        goto out;
    }
    sl_put_set_custom(c.p, "ETag", etag);
    struct sl_objmd out;
    memset(&out, 0, sizeof(out));
    struct sl_put *p = c.p;
    c.p = NULL;
    if (sl_put_commit(p, &out, &err) < 0) {
        s3_err_sl(r, &err);
        goto out;
    }
    char t[64];
    s3_iso_time(out.mtime, t, sizeof(t));
    s3ver_hdr(r, &j->dst, j->dkey, j->dklen, &out);
    if (j->svid[0])
        sl_hdr_add(r, "x-amz-copy-source-version-id", j->svid);
    sl_objmd_free(&out);
    struct sl_buf x;
    sl_buf_init(&x);
    s3_sse_headers(r, &c.dsse);
    sl_buf_printf(&x, "<CopyObjectResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LastModified>%s"
                  "</LastModified><ETag>&quot;%s&quot;</ETag></CopyObjectResult>", t, etag);
    s3_xml(r, 200, &x);
out:
    dst_abort(&c);
    free(vkey);
    if (fd >= 0)
        close(fd);
    if (local)
        sl_objmd_free(&md);
    EVP_MD_CTX_free(c.md5);
    s3_xc_free(&c.xc);
    s3_kv_free(&c.custom);
    s3_kv_free(&sm);
    sl_sse_free(&ssrc);
    sl_sse_free(&c.dsse);
    sl_smap_put(s);
    copy_free(j);
}

static void copy_cancel(void *arg)
{
    copy_free(arg);
}

void s3_copy_object(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *src,
                        const char *upload_id, int partno)
{
    size_t sl = strlen(src);
    char *tmp = sl_xmalloc(sl + 1);
    size_t dl = sl_url_decode(src, sl, tmp, false);
    char *s = tmp;
    if (memchr(s, 0, dl)) {
        free(tmp);
        s3_err(r, 400, "InvalidArgument", "x-amz-copy-source holds a NUL byte");
        return;
    }
    char *qm = strstr(s, "?versionId="), *svid = NULL;
    if (qm) {
        svid = qm + 11;
        *qm = 0;
    }
    if (*s == '/')
        s++;
    char *slash = strchr(s, '/');
    if (!slash || slash == s || !slash[1]) {
        free(tmp);
        s3_err(r, 400, "InvalidArgument", "x-amz-copy-source must be BUCKET/KEY (URL-encoded)");
        return;
    }
    *slash = 0;
    const char *dir = sl_req_header(r, "x-amz-metadata-directive");
    if (dir && strcmp(dir, "COPY") && strcmp(dir, "REPLACE")) {
        free(tmp);
        s3_err(r, 400, "InvalidArgument", "Unknown metadata directive \"%s\" (COPY or REPLACE)", dir);
        return;
    }
    bool replace = dir && !strcmp(dir, "REPLACE");
    const char *tdir = sl_req_header(r, "x-amz-tagging-directive");
    if (tdir && strcmp(tdir, "COPY") && strcmp(tdir, "REPLACE")) {
        free(tmp);
        s3_err(r, 400, "InvalidArgument", "Unknown tagging directive \"%s\" (COPY or REPLACE)", tdir);
        return;
    }

    const char *skey = slash + 1;
    size_t sklen = strlen(skey);
    struct sl_err err = { 0 };
    if (sklen > 1024 || sl_objname_check(skey, sklen, &err) < 0) {
        free(tmp);
        s3_err(r, 400, "InvalidArgument", "x-amz-copy-source: the source key is not valid");
        return;
    }
    struct copy_job *j = sl_xcalloc(1, sizeof(*j));
    if (sl_bck_resolve(s, "ais", NULL, &j->src, &err) < 0) {
        free(tmp);
        free(j);
        s3_err(r, 404, "NoSuchBucket", "The specified bucket does not exist (the copy source's)");
        return;
    }
    if (upload_id) {
        j->part = true;
        snprintf(j->id, sizeof(j->id), "%s", upload_id);
        j->partno = partno;
        const char *rg = sl_req_header(r, "x-amz-copy-source-range");
        if (rg) {
            unsigned long long a, z;
            char tail;
            if (strncmp(rg, "bytes=", 6) || strchr(rg, ',') || sscanf(rg + 6, "%llu-%llu%c", &a, &z, &tail) != 2 ||
                strspn(rg + 6, "0123456789-") != strlen(rg + 6) || z < a) {
                sl_bck_release(&j->src);
                free(tmp);
                free(j);
                s3_err(r, 400, "InvalidArgument", "x-amz-copy-source-range must be bytes=FIRST-LAST (got \"%s\")",
                       rg);
                return;
            }
            j->ranged = true;
            j->roff = a;
            j->rlen = z - a + 1;
        }
    } else if (!replace && !svid && !strcmp(j->src.name, b->name) && sklen == q->klen &&
               !memcmp(skey, q->key, sklen)) { /* (a version onto its key is allowed: it restores that version) */
        sl_bck_release(&j->src);
        free(tmp);
        free(j);
        s3_err(r, 400, "InvalidRequest", "This copy request is illegal because it is trying to copy an object to "
               "itself without changing the object's metadata, storage class, website redirect location or "
               "encryption attributes.");
        return;
    }
    sl_bck_copy(&j->dst, b);
    j->skey = sl_xstrndup(skey, sklen);
    j->sklen = sklen;
    if (svid) /* a version of the source (s3ver.c) */
        snprintf(j->svid, sizeof(j->svid), "%.30s", svid);
    if (!upload_id && s3ver_write_check(r, b, q->key, q->klen) < 0) {
        free(tmp);
        copy_cancel(j);
        return;
    }
    j->dkey = sl_xstrndup(q->key, q->klen);
    j->dklen = q->klen;
    j->replace = replace;
    if (replace)
        s3_collect_meta(r, &j->meta);
    free(tmp);
    j->tag_replace = tdir && !strcmp(tdir, "REPLACE");
    const char *th = sl_req_header(r, "x-amz-tagging");
    char why[256];
    if (j->tag_replace && th && s3_tags_from_header(th, S3_OBJ_TAGS_MAX, &j->tags, why, sizeof(why)) < 0) {
        copy_cancel(j);
        s3_err(r, 400, "InvalidTag", "x-amz-tagging: %s", why);
        return;
    }
    if (!j->part && s3_acl_hdr(r, b, &j->acl) < 0) {
        copy_cancel(j);
        return;
    }
    if (j->meta.bytes > S3_META_MAX) {
        copy_cancel(j);
        s3_err(r, 400, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size (%d "
               "bytes)", S3_META_MAX);
        return;
    }
    sl_req_offload(r, copy_run, copy_cancel, j);
}
