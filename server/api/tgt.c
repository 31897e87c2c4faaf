/* SPDX-License-Identifier: MIT
 * tgt.c: storage-target handlers for objects: GET (sendfile, Range), HEAD,
 * PUT (streamed, checksummed, crash-safe), DELETE, PATCH (custom metadata).
 */
#include "tgt.h"
#include "s3.h"
#include "ec.h"
#include "backend.h"
#include "cksum.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "mirror.h"
#include "module.h"
#include "node.h"
#include "prx.h"
#include "arch.h"
#include "read.h"
#include "xact.h"
#include "stats.h"
#include "sec.h"
#include "store.h"
#include "upload.h"
#include "s3sse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define SMALL_OBJ (64 * 1024)

int sl_req_obj_path(struct sl_req *r, char **bucket, const char **name, size_t *nlen, struct sl_err *err)
{
    const char *p = r->path + strlen("/v1/objects");
    const char *end = r->path + r->path_len;
    while (p < end && *p == '/')
        p++;
    const char *slash = memchr(p, '/', (size_t)(end - p));
    if (!slash || slash == p) {
        return sl_errf(err, SL_EINVAL,
                       "%s %s: expected /v1/objects/BUCKET/OBJECT_NAME (missing %s)", r->method_str, r->path,
                       slash == p || p == end ? "bucket name" : "object name");
    }
    *bucket = sl_xstrndup(p, (size_t)(slash - p));
    *name = slash + 1;
    *nlen = (size_t)(end - slash - 1);
    if (*nlen == 0) {
        free(*bucket);
        *bucket = NULL;
        return sl_errf(err, SL_EINVAL, "%s %s: object name is empty (expected /v1/objects/BUCKET/OBJECT_NAME)",
                       r->method_str, r->path);
    }
    return 0;
}

static void bmd_pull(struct sl_req *r, void *arg)
{
    (void)r;
    (void)arg;
    sl_cluster_refresh_bmd(); /* (on the peer pool: waits for the primary) */
}

/* Common prologue: bucket + name, validated. */
static int obj_prologue(struct sl_req *r, struct sl_bck *b, const char **name, size_t *nlen, struct sl_err *err)
{
    char *bucket = NULL;
    if (r->path_bad)
        return sl_errf(err, SL_EINVAL, "%s: the URL contains a NUL byte (%%00); object names may not contain NUL",
                       r->method_str);
    if (sl_req_obj_path(r, &bucket, name, nlen, err) < 0)
        return -1;
    int rc = sl_bck_resolve(bucket, sl_req_query(r, "provider"), sl_req_query(r, "namespace"), b, err);
    free(bucket);
    if (rc < 0)
        return -1;
    if (sl_objname_check(*name, *nlen, err) < 0) {
        sl_bck_release(b);
        return -1;
    }
    return 0;
}

/* obj_prologue for GET, HEAD and PUT (routed at their headers): -1, err says
 * why; -2, the request went to a pool thread (answer nothing). A bucket this
 * target does not know, on a request a gateway sent here (it knows the
 * bucket: the metasync is late), is looked up on the primary off the HTTP
 * thread, and the request routed again, once. */
static int obj_prologue_pull(struct sl_req *r, struct sl_bck *b, const char **name, size_t *nlen,
                             struct sl_err *err)
{
    if (obj_prologue(r, b, name, nlen, err) == 0)
        return 0;
    if (err->code != SL_ENOBCK || G.role != SL_ROLE_TARGET || r->rerouted || !sl_http_thread() ||
        !sl_req_query(r, "pid"))
        return -1;
    sl_req_offload_peer_reroute(r, bmd_pull, NULL, NULL);
    return -2;
}

static void add_custom_headers(struct sl_req *r, const struct sl_objmd *md)
{
    for (int i = 0; i < md->ncustom; i++) {
        if (!strcmp(md->custom[i].k, "orig_fntl"))
            continue;
        char *kv = sl_xasprintf("%s=%s", md->custom[i].k, md->custom[i].v); /* (sl_hdr_addf cuts at 1 KiB) */
        sl_hdr_add(r, "Ais-Custom-Md", kv);
        free(kv);
    }
    const char *etag = sl_objmd_get_custom(md, "ETag");
    if (etag)
        sl_hdr_add(r, "ETag", etag);
}

static void add_obj_headers(struct sl_req *r, const struct sl_objmd *md)
{
    /* (an encrypted object's reader has the plaintext's metadata, with no checksum: cluster/read.h) */
    if (md->cksum_type != SL_CK_NONE && md->cksum[0]) {
        sl_hdr_add(r, "Ais-Checksum-Type", sl_cksum_name(md->cksum_type));
        sl_hdr_add(r, "Ais-Checksum-Value", md->cksum);
    }
    sl_hdr_add_u64(r, "Ais-Atime", (uint64_t)(md->atime > 0 ? md->atime : 0));
    if (md->version)
        sl_hdr_add_u64(r, "Ais-Version", md->version);
    add_custom_headers(r, md);
}

/* 307 to object name of bucket bck on its owner (this node when standalone);
 * extra: more query ("&k=v") */
static bool redirect_to_owner(struct sl_req *r, const char *bck, const char *name, size_t nlen, const char *extra)
{
    struct sl_buf un, url;
    sl_buf_init(&un);
    sl_buf_init(&url);
    sl_obj_uname(&un, "ais", bck, name, nlen);
    struct sl_smap *sm = sl_smap_get();
    const struct sl_snode *t = G.role == SL_ROLE_STANDALONE ? &G.self : sl_smap_hrw_target(sm, un.p, un.len);
    if (t) {
        sl_peer_obj_url(&url, t->url, bck, "ais", name, nlen);
        sl_buf_adds(&url, extra);
        if (G.role != SL_ROLE_STANDALONE)
            sl_peer_redirect_url(&url, G.id, r->method_str, NULL);
        sl_resp_redirect(r, 307, url.p);
    }
    sl_smap_put(sm);
    sl_buf_free(&un);
    sl_buf_free(&url);
    return t != NULL;
}

/* A bucket being renamed into (move-bck): an object not copied yet is
 * read from the old name, on its owner. That one sends the request back if
 * the rename ended meanwhile (the old bucket is gone, the copy is done). */
static bool renaming_redirect(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen,
                              const struct sl_err *err)
{
    const char *from = json_string_value(json_object_get(b->props, "renaming_from"));
    if (!from || err->code != SL_ENOOBJ)
        return false;
    char *to = sl_url_encode_query(b->name), *extra = sl_xasprintf("&renamed_to=%s", to);
    bool done = redirect_to_owner(r, from, name, nlen, extra);
    free(to);
    free(extra);
    return done;
}

static bool renamed_bounce(struct sl_req *r, const struct sl_err *err)
{
    const char *to = sl_req_query(r, "renamed_to");
    char *bucket = NULL;
    const char *name;
    size_t nlen;
    struct sl_err e2 = { 0 };
    if (!to || !*to || err->code != SL_ENOBCK || sl_req_obj_path(r, &bucket, &name, &nlen, &e2) < 0)
        return false;
    free(bucket);
    return redirect_to_owner(r, to, name, nlen, "");
}

/* ---- GET and HEAD: the object is found by the read path (cluster/read.h);
 * what is here is the native API's answer ---- */

static void read_fail(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen,
                      const struct sl_err *err)
{
    if (!renaming_redirect(r, b, name, nlen, err))
        sl_resp_err(r, err);
}

static const struct sl_read_ops get_ops;

/* Answer a GET from the object found (rd's fd and md are taken). */
static void serve(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, struct sl_read *rd)
{
    int fd = rd->fd;
    struct sl_objmd md = rd->md;
    struct sl_sse *dec = rd->dec; /* encrypted at rest: decrypted as it is sent (cluster/read.h) */
    if (rd->sse)
        sl_hdr_add(r, "Ais-Server-Side-Encryption", "AES256");
    if (rd->from == SL_READ_HERE)
        sl_store_touch(b->bid, name, nlen);
    else
        sl_hdr_add(r, "Ais-Present", "false"); /* rebuilt for this read, not stored here */
    /* A small object is read whole, and one byte more: a file of another
     * size than the metadata's shows in what the read returns (no fstat). */
    char *small = NULL;
    ssize_t got = 0;
    if (md.size <= SMALL_OBJ) {
        small = sl_xmalloc(md.size + 1);
        got = pread(fd, small, md.size + 1, 0);
        if (got < 0) {
            char cn[400];
            sl_obj_cname(cn, sizeof(cn), b, name, nlen);
            sl_resp_errf(r, SL_EIO, "t[%s]: cannot read %s: %s", G.id, cn, strerror(errno));
            goto out;
        }
    }
    struct stat st;
    if (!rd->checked && (small ? (uint64_t)got != md.size : fstat(fd, &st) == 0 && (uint64_t)st.st_size != md.size)) {
        /* the file is not what the metadata says: read again on a pool thread, which repairs it where the
         * cluster holds it (EC slices, the remote) or refuses it */
        free(small);
        close(fd);
        sl_objmd_free(&md);
        if (dec) {
            sl_sse_free(dec);
            free(dec);
        }
        sl_read_again(r, b, name, nlen, sl_read_flags(r, b) | SL_READ_STREAM, &get_ops);
        return;
    }
    if (small ? (uint64_t)got != md.size : fstat(fd, &st) == 0 && (uint64_t)st.st_size != md.size) {
        if (small && fstat(fd, &st) < 0)
            st.st_size = (off_t)got;
        char cn[400];
        sl_obj_cname(cn, sizeof(cn), b, name, nlen);
        sl_logw("%s: file size %llu differs from metadata %llu; serving what the metadata promises fails, "
                "refusing", cn, (unsigned long long)st.st_size, (unsigned long long)md.size);
        sl_resp_errf(r, SL_EIO, "t[%s]: %s: size mismatch between data and metadata; the object is damaged", G.id, cn);
        goto out;
    }
    uint64_t off = 0, len = md.size;
    /* as AIStore: a Range that is not one satisfiable byte range is 416 */
    int rr = sl_range_parse(sl_req_header(r, "Range"), md.size, &off, &len);
    if (rr != SL_RANGE_NONE && rr != SL_RANGE_OK) {
        sl_hdr_addf(r, "Content-Range", "bytes */%llu", (unsigned long long)md.size);
        sl_resp_errf(r, SL_ERANGE, "%s: Range \"%s\" (object size %llu)",
                     rr == SL_RANGE_MULTI     ? "multiple ranges are not supported"
                     : rr == SL_RANGE_INVALID ? "invalid range (expected bytes=FIRST-[LAST] or bytes=-SUFFIX, "
                                                "FIRST <= LAST, no spaces)"
                                              : "range not satisfiable",
                     sl_req_header(r, "Range"), (unsigned long long)md.size);
        goto out;
    }
    int status = rr == SL_RANGE_OK ? 206 : 200;
    if (rr == SL_RANGE_OK)
        sl_hdr_addf(r, "Content-Range", "bytes %llu-%llu/%llu", (unsigned long long)off,
                    (unsigned long long)(off + len - 1), (unsigned long long)md.size);
    sl_hdr_add(r, "Accept-Ranges", "bytes");
    bool ssec = !dec && sl_sse_mode(&md) && !sl_req_header(r, "Ais-No-Gfn"); /* (read raw: obj_get) */
    if (ssec)
        md.cksum[0] = 0; /* (the ciphertext's) */
    add_obj_headers(r, &md);
    if (ssec) {
        s3_sse_native_get(r, status, fd, off, len, &md);
        fd = -1;
        goto out;
    }
    if (dec && small) {
        sl_sse_xor_at(dec, 0, small, md.size);
    } else if (dec) {
        s3_sse_serve(r, status, fd, off, len, dec, "application/octet-stream"); /* (takes fd and *dec's state) */
        fd = -1;
        goto out;
    }
    if (small) {
        close(fd);
        fd = -1;
        if (off)
            memmove(small, small + off, len);
        sl_resp_bytes_owned(r, status, "application/octet-stream", small, len);
        small = NULL; /* the response's now */
    } else if (len <= SMALL_OBJ) {
        char *buf = sl_xmalloc(len ? len : 1);
        ssize_t n = len ? pread(fd, buf, len, (off_t)off) : 0;
        close(fd);
        fd = -1;
        if (n != (ssize_t)len) {
            free(buf);
            sl_resp_errf(r, SL_EIO, "t[%s]: short read of %s", G.id, name);
            goto out;
        }
        sl_resp_bytes_owned(r, status, "application/octet-stream", buf, len);
    } else {
        sl_resp_fd(r, status, fd, off, len, "application/octet-stream");
        fd = -1; /* the response's now */
    }
out:
    free(small);
    if (fd >= 0)
        close(fd);
    sl_objmd_free(&md);
    if (dec) {
        sl_sse_free(dec);
        free(dec);
    }
}

static const struct sl_read_ops get_ops = { .serve = serve, .fail = read_fail, .tee = true, .checks_size = true };

/* ?etl_name=: the module that owns the query transforms what was found */
static void module_serve(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, struct sl_read *rd)
{
    const struct sl_module *m = sl_modules_get_owner(r);
    if (!m || !m->obj_get(r, b, name, nlen, rd))
        serve(r, b, name, nlen, rd);
}

static const struct sl_read_ops module_ops = { .serve = module_serve, .fail = read_fail };

/* ?archpath=, ?archmode=, ?archindex: a shard's members */
static void arch_serve(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, struct sl_read *rd)
{
    sl_arch_get(r, b, name, nlen, rd->fd, &rd->md, rd->from == SL_READ_HERE);
}

static const struct sl_read_ops arch_ops = { .serve = arch_serve, .fail = read_fail };

static void obj_get(struct sl_req *r)
{
    struct sl_err err = { 0 };
    struct sl_bck b;
    const char *name;
    size_t nlen;
    r->op = SL_OP_GET;
    int prc = obj_prologue_pull(r, &b, &name, &nlen, &err);
    if (prc < 0) {
        if (prc == -1 && !renamed_bounce(r, &err))
            sl_resp_err(r, &err);
        return;
    }
    const struct sl_read_ops *ops = &get_ops;
    if (sl_modules_get_owner(r)) /* a transform (?etl_name=) belongs to its module */
        ops = &module_ops;
    else if (sl_arch_wanted(r) && !sl_arch_refused(r, &b, name, nlen)) /* (refused: answered) */
        ops = &arch_ops;
    else if (sl_arch_wanted(r))
        ops = NULL;
    /* the plain GET decrypts an encrypted object as it sends it, the others read its plaintext; with S3's
     * SSE-C key (a CopyObject's source, s3copy.c) it is read raw and decrypted with that key (serve) */
    unsigned f = sl_read_flags(r, &b) | (ops == &get_ops ? SL_READ_STREAM : 0);
    if (ops == &get_ops && sl_req_header(r, "x-amz-server-side-encryption-customer-key"))
        f |= SL_READ_RAW;
    if (ops)
        sl_read_req(r, &b, name, nlen, f, ops);
    sl_bck_release(&b);
}

/* Ais-Mirror-Copies / -Paths: the main replica's mountpath, then the
 * copies'; V1 prints the list as AIStore's Go does ("[/a /b]"), V2 joins
 * it with commas */
static void mirror_headers(struct sl_req *r, const struct sl_mpath *mp, const struct sl_objmd *md, bool v1)
{
    struct sl_buf p;
    sl_buf_init(&p);
    sl_buf_printf(&p, "%s%s", v1 ? "[" : "", mp->path);
    int n = 1;
    for (int i = 0; i < md->ncopies; i++) {
        struct sl_mpath *cm = sl_store_mpath_by_digest(md->copies[i]);
        if (cm) {
            sl_buf_printf(&p, "%s%s", v1 ? " " : ",", cm->path);
            n++;
        }
    }
    if (v1)
        sl_buf_adds(&p, "]");
    sl_hdr_addf(r, "Ais-Mirror-Copies", "%d", n);
    sl_hdr_add(r, "Ais-Mirror-Paths", p.p);
    sl_buf_free(&p);
}

/* HEAD of an object not stored here: rebuilt from EC slices for the read,
 * or known to the remote only */
static void head_elsewhere(struct sl_req *r, const struct sl_bck *b, struct sl_read *rd)
{
    if (rd->from == SL_READ_REBUILT) {
        add_obj_headers(r, &rd->md);
    } else {
        const char *etag = sl_objmd_get_custom(&rd->md, "ETag");
        if (etag)
            sl_hdr_addf(r, "ETag", "\"%s\"", etag);
        if (rd->md.mtime) {
            char tb[64];
            sl_format_gotime(rd->md.mtime, "Mon, 02 Jan 2006 15:04:05 GMT", tb, sizeof(tb));
            sl_hdr_add(r, "Last-Modified", tb);
        }
        if (rd->remote_version[0])
            sl_hdr_add(r, "Ais-Version", rd->remote_version);
    }
    sl_hdr_add(r, "Ais-Bucket-Name", b->name);
    sl_hdr_add(r, "Ais-Bucket-Provider", b->provider);
    sl_hdr_add(r, "Ais-Present", "false");
    sl_resp_head(r, 200, rd->md.size);
    sl_read_done(rd);
}

static void head_serve(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, struct sl_read *rd)
{
    if (rd->from != SL_READ_HERE) {
        head_elsewhere(r, b, rd);
        return;
    }
    struct sl_objmd *md = &rd->md;
    struct sl_mpath *mp = rd->mp;
    const char *props = sl_req_query(r, "props");
    if (rd->sse) /* (its metadata is the plaintext's: no checksum, cluster/read.h) */
        sl_hdr_add(r, "Ais-Server-Side-Encryption", rd->sse == SL_SSE_C ? "SSE-C" : "AES256");
    if (props) {
        /* V2: only what was asked */
        char *cp = sl_xstrdup(props), *save = NULL;
        for (char *t = strtok_r(cp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (!strcmp(t, "name") || !strcmp(t, "size")) {
            } else if (!strcmp(t, "checksum")) {
                if (md->cksum[0]) {
                    sl_hdr_add(r, "Ais-Checksum-Type", sl_cksum_name(md->cksum_type));
                    sl_hdr_add(r, "Ais-Checksum-Value", md->cksum);
                }
            } else if (!strcmp(t, "atime")) {
                sl_hdr_addf(r, "Ais-Atime", "%lld", (long long)md->atime);
            } else if (!strcmp(t, "version")) {
                if (md->version)
                    sl_hdr_addf(r, "Ais-Version", "%llu", (unsigned long long)md->version);
            } else if (!strcmp(t, "custom")) {
                add_custom_headers(r, md);
            } else if (!strcmp(t, "last-modified")) {
                char tb[64];
                sl_format_gotime(md->mtime, "Mon, 02 Jan 2006 15:04:05 GMT", tb, sizeof(tb));
                sl_hdr_add(r, "Last-Modified", tb);
            } else if (!strcmp(t, "etag")) {
                const char *et = sl_objmd_get_custom(md, "ETag");
                sl_hdr_addf(r, "ETag", "\"%s\"", et ? et : md->cksum);
            } else if (!strcmp(t, "location")) {
                sl_hdr_addf(r, "Ais-Location", "t[%s]:%s", G.id, mp->path);
            } else if (!strcmp(t, "copies")) {
                mirror_headers(r, mp, md, false);
            } else if (!strcmp(t, "ec")) {
                sl_ec_head_headers(r, b, name, nlen);
            } else if (!strcmp(t, "chunked")) {
                if (md->nchunks) { /* a multipart upload's: written whole, none */
                    sl_hdr_addf(r, "Ais-Chunks-Count", "%u", md->nchunks);
                    sl_hdr_add_u64(r, "Ais-Chunks-Max-Chunk-Size", md->chunk_max);
                }
            } else {
                /* t points into cp: format before freeing it */
                struct sl_err err = { 0 };
                sl_errf(&err, SL_EINVAL,
                        "invalid HEAD props \"%s\" (valid: name, size, checksum, atime, version, custom, "
                        "last-modified, etag, location, copies, ec, chunked)",
                        t);
                free(cp);
                sl_read_done(rd);
                sl_resp_err(r, &err);
                return;
            }
        }
        free(cp);
        sl_hdr_add(r, "Ais-Present", "true");
    } else {
        add_obj_headers(r, md);
        sl_hdr_add(r, "Ais-Bucket-Name", b->name);
        sl_hdr_add(r, "Ais-Bucket-Provider", b->provider);
        char *nm = sl_xstrndup(name, nlen);
        sl_hdr_add(r, "Ais-Name", nm);
        free(nm);
        sl_hdr_addf(r, "Ais-Location", "t[%s]:%s", G.id, mp->path);
        mirror_headers(r, mp, md, true);
        sl_ec_head_headers(r, b, name, nlen);
        sl_hdr_add(r, "Ais-Present", "true");
    }
    sl_hdr_add(r, "Accept-Ranges", "bytes");
    sl_resp_head(r, 200, md->size);
    sl_read_done(rd);
}

static const struct sl_read_ops head_ops = { .serve = head_serve, .fail = read_fail };

static void obj_head(struct sl_req *r)
{
    struct sl_err err = { 0 };
    struct sl_bck b;
    const char *name;
    size_t nlen;
    r->op = SL_OP_HEAD;
    int prc = obj_prologue_pull(r, &b, &name, &nlen, &err);
    if (prc < 0) {
        if (prc == -1)
            sl_resp_err(r, &err);
        return;
    }
    sl_read_req(r, &b, name, nlen, sl_read_flags(r, &b), &head_ops);
    sl_bck_release(&b);
}

/* ---- PUT ---- */

struct put_ctx {
    struct sl_bck b;
    struct sl_put *p;
    bool noop;              /* checksum matched the stored object: drain only */
    struct sl_objmd existing;
    struct sl_objmd preserve;   /* rebalance: metadata that travels with the object */
    struct sl_job *job;         /* rebalance: the local instance of the job */
    struct sl_kv *custom;
    int ncustom;
};

static void put_ctx_free(struct put_ctx *c)
{
    if (!c)
        return;
    if (c->p)
        sl_put_abort(c->p);
    if (c->noop)
        sl_objmd_free(&c->existing);
    sl_objmd_free(&c->preserve);
    sl_job_put(c->job);
    for (int i = 0; i < c->ncustom; i++) {
        free(c->custom[i].k);
        free(c->custom[i].v);
    }
    free(c->custom);
    sl_bck_release(&c->b);
    free(c);
}

static int put_data(struct sl_req *r, const char *data, size_t n)
{
    struct put_ctx *c = r->ctx;
    if (c->noop)
        return 0;
    if (sl_put_write(c->p, data, n, &r->err) < 0) {
        /* drop the work file now, not when the connection is done: the
         * client may look as soon as it has the error */
        sl_put_abort(c->p);
        c->p = NULL;
        return -1;
    }
    return 0;
}

static void put_commit(struct sl_req *r, struct put_ctx *c);
static void put_commit_run(struct sl_req *r, void *arg);
static void put_remote(struct sl_req *r, void *arg);

static void put_done(struct sl_req *r)
{
    struct put_ctx *c = r->ctx;
    if (c->noop) {
        add_obj_headers(r, &c->existing);
        sl_resp_empty(r, 200);
        return;
    }
    if (r->content_length >= 0 && sl_put_size(c->p) != (uint64_t)r->content_length) {
        sl_resp_errf(r, SL_EINVAL, "PUT: received %llu bytes, Content-Length promised %lld; nothing was stored",
                     (unsigned long long)sl_put_size(c->p), (long long)r->content_length);
        return;
    }
    if (sl_bck_remote(&c->b) && !sl_req_header(r, "Ais-Rebalance")) {
        /* write-through (not for a copy moved between targets): the remote first, off the HTTP thread */
        sl_req_offload(r, put_remote, NULL, NULL);
        return;
    }
    if (sl_store_put_syncs())
        sl_req_offload_disk(r, put_commit_run, NULL, NULL);
    else
        put_commit(r, c); /* no fsync to wait for: a hand-over would cost more */
}

/* fsyncs, a rename and a waited metadata commit: a DISK pool thread's */
static void put_commit_run(struct sl_req *r, void *arg)
{
    (void)arg;
    put_commit(r, r->ctx);
}

/* The body is in, checked and (for a remote-backed bucket) at the remote:
 * publish it here. */
static void put_commit(struct sl_req *r, struct put_ctx *c)
{
    struct sl_objmd md;
    struct sl_err err = { 0 };
    struct sl_put *p = c->p;
    uint64_t sz = sl_put_size(p);
    c->p = NULL; /* commit consumes it */
    if (sl_put_commit(p, &md, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    if (c->job) {
        sl_job_add(&c->job->in_objs, 1);
        sl_job_add(&c->job->in_bytes, sz);
    }
    {
        const char *nm;
        size_t nl;
        char *bk = NULL;
        if (sl_req_obj_path(r, &bk, &nm, &nl, &err) == 0) {
            sl_arch_after_put(&c->b, nm, nl); /* plain tars get their member index */
            free(bk);
        }
    }
    add_obj_headers(r, &md);
    sl_objmd_free(&md);
    sl_resp_empty(r, 200);
}

static void put_remote(struct sl_req *r, void *arg)
{
    (void)arg;
    struct put_ctx *c = r->ctx;
    struct sl_err err = { 0 };
    const char *nm = "";
    size_t nl = 0;
    char *bk = NULL;
    /* the client's checksum first: the remote must not get bytes this node would refuse */
    const char *ckt = sl_req_header(r, "Ais-Checksum-Type"), *ckv = sl_req_header(r, "Ais-Checksum-Value");
    int ctype = ckt && ckv && *ckv ? sl_cksum_parse(ckt) : -1;
    char got[SL_CKSUM_HEX_MAX] = "";
    if (ctype > 0 && (sl_cksum_fd(ctype, sl_put_fd(c->p), got) < 0 || strcmp(got, ckv))) {
        sl_resp_errf(r, SL_ECKSUM, "PUT: BAD DATA CHECKSUM: the body hashes to %s(%s), Ais-Checksum-Value says %s; "
                     "nothing was stored, here or at the remote", ckt, got, ckv);
        return;
    }
    if (sl_req_obj_path(r, &bk, &nm, &nl, &err) < 0 || sl_backend_put_through(&c->b, nm, nl, c->p, &err) < 0) {
        char cn[400];
        sl_obj_cname(cn, sizeof(cn), &c->b, nm, nl);
        sl_resp_errf(r, err.code, "PUT %s: %s; nothing was stored, here or at the remote", cn, err.msg);
        free(bk);
        return;
    }
    free(bk);
    put_commit(r, c);
}

static void put_cleanup(struct sl_req *r, bool completed)
{
    put_ctx_free(r->ctx);
    r->ctx = NULL;
}

struct custom_parse {
    struct put_ctx *c;
    bool bad;
    char bad_val[256];
};

/* One Ais-Custom-Md line: "k=v[,k2=v2...]". A piece without '=' after
 * an entry of the same line is the rest of its value ("no-cache, no-store"
 * as Cache-Control, which a rebalance sends on as one entry). */
static void custom_hdr_cb(void *arg, const char *v)
{
    struct custom_parse *cp = arg;
    struct put_ctx *c = cp->c;
    bool have = false;
    for (const char *p = v;;) {
        size_t l = strcspn(p, ",");
        const char *t = p;
        while (t < p + l && *t == ' ')
            t++;
        const char *eq = memchr(t, '=', (size_t)(p + l - t));
        if (t == p + l) {
            /* an empty piece: nothing */
        } else if (eq && eq > t) {
            c->custom = sl_xrealloc(c->custom, (size_t)(c->ncustom + 1) * sizeof(struct sl_kv));
            c->custom[c->ncustom].k = sl_xstrndup(t, (size_t)(eq - t));
            c->custom[c->ncustom].v = sl_xstrndup(eq + 1, (size_t)(p + l - eq - 1));
            c->ncustom++;
            have = true;
        } else if (have) {
            struct sl_kv *e = &c->custom[c->ncustom - 1];
            char *nv = sl_xasprintf("%s,%.*s", e->v, (int)l, p);
            free(e->v);
            e->v = nv;
        } else {
            cp->bad = true;
            snprintf(cp->bad_val, sizeof(cp->bad_val), "%.*s", (int)(p + l - t), t);
        }
        if (!p[l])
            break;
        p += l + 1;
    }
}

/* ---- PUT ?append_type= and ?uploadId= (upload.h) ---- */

struct up_ctx {
    struct sl_bck b;
    char *name;
    size_t nlen;
    struct sl_append *a;
    struct sl_mpt_part *part;
    bool done;
};

static void up_cleanup(struct sl_req *r, bool completed)
{
    struct up_ctx *c = r->ctx;
    (void)completed;
    if (c->a) {
        if (c->done)
            sl_append_release(c->a);
        else
            sl_append_drop(c->a); /* a failed append: what the session holds is not known */
    }
    if (c->part) {
        struct sl_err err = { 0 };
        sl_mpt_part_end(c->part, false, &err);
    }
    sl_bck_release(&c->b);
    free(c->name);
    free(c);
    r->ctx = NULL;
}

static struct up_ctx *up_ctx_new(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    struct up_ctx *c = sl_xcalloc(1, sizeof(*c));
    c->b = *b;
    c->b.props = b->props ? json_incref(b->props) : NULL;
    c->name = sl_xstrndup(name, nlen);
    c->nlen = nlen;
    r->ctx = c;
    r->on_cleanup = up_cleanup;
    return c;
}

static int append_data(struct sl_req *r, const char *data, size_t n)
{
    struct up_ctx *c = r->ctx;
    return sl_append_write(c->a, data, n, &r->err);
}

static void append_done(struct sl_req *r)
{
    struct up_ctx *c = r->ctx;
    char h[256];
    sl_append_handle(c->a, h, sizeof(h));
    sl_hdr_add(r, "Ais-Append-Handle", h);
    c->done = true;
    sl_resp_empty(r, 200);
}

static void flush_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct up_ctx *c = r->ctx;
    struct sl_err err = { 0 };
    struct sl_append *a;
    const char *ckt = sl_req_header(r, "Ais-Checksum-Type"), *ckv = sl_req_header(r, "Ais-Checksum-Value");
    int type = ckt && *ckt ? sl_cksum_parse(ckt) : SL_CK_NONE;
    if (type < 0) {
        sl_resp_errf(r, SL_EINVAL, "invalid Ais-Checksum-Type \"%s\" (valid: %s)", ckt, sl_cksum_names());
        return;
    }
    if (sl_append_get(&c->b, c->name, c->nlen, sl_req_query(r, "append_handle"), &a, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    struct sl_objmd md;
    if (sl_append_flush(a, type, ckv, &md, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    sl_arch_after_put(&c->b, c->name, c->nlen);
    add_obj_headers(r, &md);
    sl_objmd_free(&md);
    sl_resp_empty(r, 200);
}

static void flush_done(struct sl_req *r)
{
    sl_req_offload_disk(r, flush_run, NULL, NULL);
}

static int part_data(struct sl_req *r, const char *data, size_t n)
{
    struct up_ctx *c = r->ctx;
    return sl_mpt_part_write(c->part, data, n, &r->err);
}

static void part_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct up_ctx *c = r->ctx;
    struct sl_err err = { 0 };
    struct sl_mpt_part *p = c->part;
    c->part = NULL;
    if (sl_mpt_part_end(p, true, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
}

static void part_done(struct sl_req *r)
{
    sl_req_offload_disk(r, part_run, NULL, NULL);
}

static void part_append_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct up_ctx *c = r->ctx;
    struct sl_err err = { 0 };
    struct sl_mpt_part *p = c->part;
    char h[256];
    sl_mpt_part_handle(p, h, sizeof(h));
    c->part = NULL;
    if (sl_mpt_part_end(p, true, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    sl_hdr_add(r, "Ais-Append-Handle", h);
    sl_resp_empty(r, 200);
}

static void part_append_done(struct sl_req *r)
{
    sl_req_offload_disk(r, part_append_run, NULL, NULL);
}

/* append_type= on a part of a multipart upload (the SDK's file writer on
 * add_part(n)): appends go to the part, flush checks the handle */
static void part_append(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, const char *at,
                        const char *up)
{
    struct sl_err err = { 0 };
    const char *h = sl_req_query(r, "append_handle"), *pn = sl_req_query(r, "partNumber");
    if (!strcmp(at, "flush")) {
        if (!h || !*h)
            sl_resp_errf(r, SL_EINVAL, "failed to finalize append-file operation: empty source (flush needs the "
                         "append_handle the last append returned)");
        else if (sl_mpt_part_flush(b, name, nlen, up, pn, h, &err) < 0)
            sl_resp_err(r, &err);
        else
            sl_resp_empty(r, 200);
        return;
    }
    struct up_ctx *c = up_ctx_new(r, b, name, nlen);
    if (sl_mpt_part_append(b, name, nlen, up, pn, r->content_length, &c->part, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    char want[256];
    sl_mpt_part_handle(c->part, want, sizeof(want));
    if (h && *h && strcmp(h, want)) {
        sl_resp_errf(r, SL_EINVAL, "invalid APPEND handle \"%s\" for part %s of upload \"%s\" (expected \"%s\", "
                     "the one the last append to it returned, or none for the first)", h, pn, up, want);
        return; /* (up_cleanup ends the append: the part keeps what it held) */
    }
    sl_req_stream_body(r, part_data, part_append_done);
}

/* true when the PUT is an append, a flush or a multipart part */
static bool upload_put(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    struct sl_err err = { 0 };
    const char *at = sl_req_query(r, "append_type"), *up = sl_req_query(r, "uploadId");
    if (at && up && (!strcmp(at, "append") || !strcmp(at, "flush"))) {
        part_append(r, b, name, nlen, at, up);
        return true;
    }
    if (at) {
        const char *h = sl_req_query(r, "append_handle");
        if (strcmp(at, "append") && strcmp(at, "flush")) {
            sl_resp_errf(r, SL_EINVAL, "invalid operation \"%s\" (expecting either \"append\" or \"flush\") - check "
                         "\"append_type\" query", at);
            return true;
        }
        if (!strcmp(at, "flush")) {
            if (!h || !*h) {
                sl_resp_errf(r, SL_EINVAL, "failed to finalize append-file operation: empty source (flush needs the "
                             "append_handle the last append returned)");
                return true;
            }
            up_ctx_new(r, b, name, nlen);
            sl_req_buffer_body(r, 64 * 1024, flush_done);
            return true;
        }
        struct up_ctx *c = up_ctx_new(r, b, name, nlen);
        if (sl_append_get(b, name, nlen, h, &c->a, &err) < 0) {
            sl_resp_err(r, &err);
            return true;
        }
        sl_req_stream_body(r, append_data, append_done);
        return true;
    }
    if (up) {
        struct up_ctx *c = up_ctx_new(r, b, name, nlen);
        if (sl_mpt_part_begin(b, name, nlen, up, sl_req_query(r, "partNumber"), r->content_length, &c->part,
                              &err) < 0) {
            sl_resp_err(r, &err);
            return true;
        }
        sl_req_stream_body(r, part_data, part_done);
        return true;
    }
    return false;
}

/* archive appends (?archpath= on PUT), copies into another bucket by a
 * module, appends and multipart parts */
static bool put_taken_over(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    return sl_arch_put(r, b, name, nlen) || sl_modules_obj_put(r, b, name, nlen) || upload_put(r, b, name, nlen);
}

static void obj_put(struct sl_req *r)
{
    struct sl_err err = { 0 };
    const char *name;
    size_t nlen;
    r->op = SL_OP_PUT;
    struct put_ctx *c = sl_xcalloc(1, sizeof(*c));
    int prc = obj_prologue_pull(r, &c->b, &name, &nlen, &err);
    if (prc < 0) {
        free(c);
        if (prc == -1)
            sl_resp_err(r, &err);
        return;
    }
    if (put_taken_over(r, &c->b, name, nlen)) {
        put_ctx_free(c);
        return;
    }
    r->ctx = c;
    r->on_cleanup = put_cleanup;
    const char *ckt = sl_req_header(r, "Ais-Checksum-Type");
    const char *ckv = sl_req_header(r, "Ais-Checksum-Value");
    int ctype = -1;
    if (ckt && *ckt) {
        ctype = sl_cksum_parse(ckt);
        if (ctype < 0) {
            sl_resp_errf(r, SL_EINVAL, "invalid Ais-Checksum-Type \"%s\" (valid: %s)", ckt, sl_cksum_names());
            return;
        }
        if (ctype != SL_CK_NONE && (!ckv || !*ckv)) {
            sl_resp_errf(r, SL_EINVAL, "Ais-Checksum-Type %s given without Ais-Checksum-Value", ckt);
            return;
        }
    }
    struct custom_parse cp = { c, false, "" };
    sl_req_header_all(r, "Ais-Custom-Md", custom_hdr_cb, &cp);
    if (cp.bad) {
        sl_resp_errf(r, SL_EINVAL, "invalid Ais-Custom-Md entry \"%s\": expected key=value", cp.bad_val);
        return;
    }
    if (sl_custom_md_check(c->custom, c->ncustom, "Ais-Custom-Md", &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    /* keys the store owns (md.h): only a peer's copy of an object carries them (signed: node/sec.h) */
    for (int i = 0; i < c->ncustom && r->trust != SL_TRUST_PEER; i++)
        if (sl_custom_key_own(c->custom[i].k)) {
            sl_resp_errf(r, SL_EINVAL, "Ais-Custom-Md key \"%s\" is Shale's own (encryption at rest, S3 versions "
                         "or object lock): a client may not set it; drop it and use S3's requests for those",
                         c->custom[i].k);
            return;
        }
    const char *reb = sl_req_header(r, "Ais-Rebalance");
    if (reb) {
        /* an object moved by rebalance: what is here already is as new or newer */
        struct sl_objmd md;
        if (sl_obj_stat(&c->b, name, nlen, &md, NULL, &err) == 1) {
            c->noop = true;
            c->existing = md;
            sl_req_stream_body(r, put_data, put_done);
            return;
        }
        const char *v = sl_req_header(r, "Ais-Version"), *at = sl_req_header(r, "Ais-Atime");
        c->preserve.version = v ? strtoull(v, NULL, 10) : 0;
        c->preserve.atime = at ? strtoll(at, NULL, 10) : 0;
        const char *nch = sl_req_header(r, "Ais-Chunks-Count"), *chm = sl_req_header(r, "Ais-Chunks-Max-Chunk-Size");
        c->preserve.nchunks = nch ? (uint32_t)strtoul(nch, NULL, 10) : 0;
        c->preserve.chunk_max = chm ? strtoull(chm, NULL, 10) : 0;
        if (ctype == c->b.cksum_type && ckv) {
            c->preserve.cksum_type = ctype;
            snprintf(c->preserve.cksum, sizeof(c->preserve.cksum), "%s", ckv);
        }
        c->job = sl_job_get(reb);
        struct sl_put_opts o = { .client_cktype = ctype, .client_ckval = ckv, .custom = c->custom,
                                 .ncustom = c->ncustom, .expect_size = r->content_length, .preserve = &c->preserve,
                                 .move = true }; /* (its versions move as they are) */
        if (sl_put_begin(&c->b, name, nlen, &o, &c->p, &err) < 0) {
            sl_resp_err(r, &err);
            return;
        }
        sl_req_stream_body(r, put_data, put_done);
        return;
    }
    /* same content as stored (by checksum) -> no-op, unless skip_vc */
    if (ctype > SL_CK_NONE && !sl_req_query_bool(r, "skip_vc")) {
        struct sl_objmd md;
        if (sl_obj_stat(&c->b, name, nlen, &md, NULL, &err) == 1) {
            if (md.cksum_type == ctype && !strcasecmp(md.cksum, ckv) && c->ncustom == 0) {
                c->noop = true;
                c->existing = md;
                sl_req_stream_body(r, put_data, put_done);
                return;
            }
            sl_objmd_free(&md);
        }
    }
    /* a rename's copy into the new name: from the old name it names */
    const char *rf = sl_req_header(r, "Ais-Rename-From");
    const char *from = json_string_value(json_object_get(c->b.props, "renaming_from"));
    struct sl_put_opts o = {
        .client_cktype = ctype, .client_ckval = ckv, .custom = c->custom, .ncustom = c->ncustom,
        .expect_size = r->content_length, .rename_copy = rf && from && !strcmp(rf, from),
    };
    o.move = o.rename_copy; /* (else an S3-versioned bucket keeps what this replaces: store.h) */
    if (sl_objname_vkey(name, nlen) != nlen) {
        sl_resp_errf(r, SL_EINVAL, "PUT %s: a name ending in \\x01 and 20 hex digits (or 16 and \"null\") is "
                     "reserved for S3's older versions of an object (docs/s3.md); nothing was stored", r->path);
        return;
    }
    if (sl_put_begin(&c->b, name, nlen, &o, &c->p, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    sl_req_stream_body(r, put_data, put_done);
}

/* ---- DELETE, PATCH ---- */

/* The body is optional: none (or an empty action) deletes; the others are
 * AIStore's evict (remote buckets only) and multipart abort. Anything the
 * body says that is not a plain delete must never delete. */
/* evict: the copy here goes (after a fetch in flight ends), the remote keeps it */
static void evict_one(struct sl_req *r, void *arg)
{
    struct sl_bobj *c = arg;
    struct sl_err err = { 0 };
    sl_backend_wait_fetch(&c->b, c->name, c->nlen);
    if (s3_lock_check_name(&c->b, c->name, c->nlen, false, &err) < 0) /* a locked version stays (s3lock.c) */
        sl_resp_err(r, &err);
    else if (sl_obj_delete(&c->b, c->name, c->nlen, &err) < 0 && err.code != SL_ENOOBJ)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    sl_bobj_free(c);
}

static void delete_remote(struct sl_req *r, void *arg)
{
    struct sl_bobj *c = arg;
    struct sl_err err = { 0 };
    sl_backend_wait_fetch(&c->b, c->name, c->nlen);
    if (s3_lock_check_name(&c->b, c->name, c->nlen, false, &err) < 0) { /* a locked version stays (s3lock.c) */
        sl_resp_err(r, &err);
    } else if (sl_backend_delete(&c->b, c->name, c->nlen, &err) < 0) {
        char cn[400];
        sl_obj_cname(cn, sizeof(cn), &c->b, c->name, c->nlen);
        sl_resp_errf(r, err.code, "DELETE %s: %s; nothing was deleted", cn, err.msg);
    } else if (sl_obj_delete(&c->b, c->name, c->nlen, &err) < 0 && err.code != SL_ENOOBJ) {
        sl_resp_err(r, &err);
    } else {
        sl_resp_empty(r, 200);
    }
    sl_bobj_free(c);
}

/* The body is in: on a DISK pool thread (the delete waits for its metadata
 * commit, fsynced, and unlinks) */
static void delete_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    struct sl_bck b;
    const char *name;
    size_t nlen;
    struct sl_actmsg m;
    bool dm;
    char vid[24];
    if (sl_actmsg_parse(r, &m, &err) < 0) {
        sl_resp_errf(r, err.code, "DELETE %s: %s; nothing was deleted", r->path, err.msg);
        return;
    }
    if (obj_prologue(r, &b, &name, &nlen, &err) < 0) {
        sl_actmsg_free(&m);
        sl_resp_err(r, &err);
        return;
    }
    if (sl_req_query(r, "s3_delete") && !m.action[0]) { /* DeleteObjects of S3 versions */
        s3ver_native_delete(r, &b, name, nlen);
    } else if (!strcmp(m.action, "mpt-abort")) {
        if (sl_mpt_abort(&b, name, nlen, sl_req_query(r, "uploadId"), &err) < 0)
            sl_resp_errf(r, err.code, "DELETE %s: mpt-abort: %s; nothing was deleted", r->path, err.msg);
        else
            sl_resp_empty(r, 200);
    } else if (!strcmp(m.action, "evict-listrange") && sl_bck_remote(&b)) { /* off the HTTP thread */
        sl_req_offload(r, evict_one, sl_bobj_free, sl_bobj_new(&b, name, nlen));
    } else if (!strcmp(m.action, "evict-listrange")) {
        sl_resp_errf(r, SL_EINVAL, "DELETE %s: action \"evict-listrange\" applies to remote buckets only and "
                     "%s://%s is not one (to remove the object, send DELETE without a body); nothing was deleted",
                     r->path, sl_provider_scheme(b.provider), b.name);
    } else if (!m.action[0] && sl_bck_remote(&b)) { /* at the remote, then here: off the HTTP thread */
        sl_req_offload(r, delete_remote, sl_bobj_free, sl_bobj_new(&b, name, nlen));
    } else if (m.action[0]) {
        sl_resp_errf(r, SL_EINVAL, "invalid action \"%s\" for DELETE %s (valid: none or \"\" = delete the "
                     "object, evict-listrange, mpt-abort); nothing was deleted", m.action, r->path);
    } else if (s3_lock_check_name(&b, name, nlen, false, &err) < 0 ||
               sl_obj_delete_cur(&b, name, nlen, -1, &dm, vid, &err) < 0) {
        sl_resp_err(r, &err); /* (a locked version stays: S3 Object Lock, s3lock.c) */
    } else {
        /* S3 versioning: a delete marker on top, the object an older version (store_vdel.c) */
        if (dm)
            sl_hdr_add(r, "Ais-Delete-Marker", vid);
        sl_ec_after_delete(&b, name, nlen); /* its slices/replicas, on every target (queued) */
        sl_resp_empty(r, 200);
    }
    sl_actmsg_free(&m);
    sl_bck_release(&b);
}

static void delete_body(struct sl_req *r)
{
    sl_req_offload_disk(r, delete_run, NULL, NULL);
}

static void obj_delete(struct sl_req *r)
{
    r->op = SL_OP_DELETE;
    sl_req_buffer_body(r, sl_conf->http_max_body_json, delete_body);
}

/* AIStore's object POST actions: the multipart ones are served, the
 * others get 501, anything else 400. */
static const char *const obj_post_actions[] = {
    "rename-obj", "promote", "blob-download", "check-lock", "mpt-upload", "mpt-complete",
};
#define OBJ_POST_ACTIONS "rename-obj, promote, blob-download, check-lock, mpt-upload, mpt-complete"

static void complete_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    struct sl_actmsg m;
    struct sl_bck b;
    const char *name;
    size_t nlen;
    if (sl_actmsg_parse(r, &m, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    if (obj_prologue(r, &b, &name, &nlen, &err) < 0) {
        sl_actmsg_free(&m);
        sl_resp_err(r, &err);
        return;
    }
    struct sl_objmd md;
    if (sl_mpt_complete(&b, name, nlen, sl_req_query(r, "uploadId"), m.value, &md, &err) < 0) {
        sl_resp_err(r, &err);
    } else {
        sl_arch_after_put(&b, name, nlen);
        add_obj_headers(r, &md);
        sl_objmd_free(&md);
        sl_resp_empty(r, 200);
    }
    sl_bck_release(&b);
    sl_actmsg_free(&m);
}

/* POST mpt-upload: a new upload id, as text (its record committed: on the disk pool) */
static void mpt_upload(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    struct sl_bck b;
    const char *name;
    size_t nlen;
    char id[32];
    if (obj_prologue(r, &b, &name, &nlen, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    int rc = sl_mpt_create(&b, name, nlen, NULL, id, sizeof(id), &err);
    sl_bck_release(&b);
    if (rc < 0) {
        sl_resp_err(r, &err);
        return;
    }
    sl_resp_bytes(r, 200, "text/plain", id, strlen(id));
}

static void post_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    struct sl_actmsg m;
    if (sl_actmsg_parse(r, &m, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    /* POST /v1/objects/B: an action on files or objects the body names */
    const char *bk = r->path + strlen("/v1/objects");
    while (*bk == '/')
        bk++;
    const char *slash = strchr(bk, '/');
    if (*bk && (!slash || !slash[1])) {
        char *bucket = sl_xstrndup(bk, slash ? (size_t)(slash - bk) : strlen(bk));
        bool taken = sl_modules_objects_post(r, bucket, &m);
        free(bucket);
        if (taken) {
            sl_actmsg_free(&m);
            return;
        }
    }
    if (!strcmp(m.action, "mpt-upload")) {
        sl_actmsg_free(&m);
        sl_req_offload_disk(r, mpt_upload, NULL, NULL);
        return;
    }
    if (!strcmp(m.action, "mpt-complete")) {
        sl_actmsg_free(&m);
        sl_req_offload(r, complete_run, NULL, NULL);
        return;
    }
    if (!strcmp(m.action, "promote")) {
        sl_resp_errf(r, SL_EINVAL, "POST %s: promote names its files in the body: send it to /v1/objects/BUCKET",
                     r->path);
        sl_actmsg_free(&m);
        return;
    }
    if (!strcmp(m.action, "rename-obj") && !(*bk && slash && slash[1])) {
        sl_resp_errf(r, SL_EINVAL, "POST %s: rename-obj names the object in the path: POST /v1/objects/BUCKET/OBJECT "
                     "{\"action\": \"rename-obj\", \"name\": NEW_NAME}", r->path);
        sl_actmsg_free(&m);
        return;
    }
    if (*bk && slash && slash[1]) {
        struct sl_bck b;
        const char *name;
        size_t nlen;
        if (obj_prologue(r, &b, &name, &nlen, &err) < 0) {
            sl_actmsg_free(&m);
            sl_resp_err(r, &err);
            return;
        }
        if (!strcmp(m.action, "check-lock")) {
            /* AIStore's check-lock: whether the object's name lock is held
             * now (a try, never a wait: fine on this thread) */
            pthread_rwlock_t *lk = sl_obj_lock(&b, name, nlen);
            if (pthread_rwlock_trywrlock(lk) == 0) {
                pthread_rwlock_unlock(lk);
                sl_resp_text(r, 200, "unlocked");
            } else
                sl_resp_errf(r, SL_EBUSY, "%s://%s/%.*s is locked (being written, read or moved): retry later",
                             b.provider, b.name, (int)nlen, name);
            sl_bck_release(&b);
            sl_actmsg_free(&m);
            return;
        }
        bool taken = sl_modules_object_post(r, &b, name, nlen, &m);
        sl_bck_release(&b);
        if (taken) {
            sl_actmsg_free(&m);
            return;
        }
    }
    bool known = false;
    for (size_t i = 0; i < SL_ARRAY_SIZE(obj_post_actions); i++)
        if (!strcmp(m.action, obj_post_actions[i]))
            known = true;
    if (known)
        sl_resp_errf(r, SL_EUNSUPP, "POST %s: object action \"%s\" is not supported by this build yet", r->path,
                     m.action);
    else if (!m.action[0])
        sl_resp_errf(r, SL_EINVAL, "POST %s: missing \"action\" (AIStore's object actions are " OBJ_POST_ACTIONS
                     "; this build serves all of them)", r->path);
    else
        sl_resp_errf(r, SL_EINVAL, "invalid action \"%s\" for POST %s (AIStore's object actions are "
                     OBJ_POST_ACTIONS "; this build serves all of them)",
                     m.action, r->path);
    sl_actmsg_free(&m);
}

/* The body is in: on a DISK pool thread (PATCH rewrites metadata records
 * with waited commits) */
static void patch_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    struct sl_bck b;
    const char *name;
    size_t nlen;
    if (obj_prologue(r, &b, &name, &nlen, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    struct sl_actmsg m;
    if (sl_actmsg_parse(r, &m, &err) < 0) {
        sl_bck_release(&b);
        sl_resp_err(r, &err);
        return;
    }
    if (!m.value || !json_is_object(m.value)) {
        sl_resp_errf(r, SL_EINVAL, "PATCH object: \"value\" must be a JSON object of custom metadata {\"key\": "
                                   "\"value\"}");
        goto out;
    }
    size_t n = json_object_size(m.value);
    struct sl_kv *kv = sl_xcalloc(n ? n : 1, sizeof(*kv));
    const char *k;
    json_t *v;
    size_t i = 0;
    bool bad = false;
    json_object_foreach(m.value, k, v) {
        if (!json_is_string(v)) {
            bad = true;
            break;
        }
        kv[i].k = (char *)k;
        kv[i].v = (char *)json_string_value(v);
        i++;
    }
    if (bad) {
        free(kv);
        sl_resp_errf(r, SL_EINVAL, "PATCH object: custom metadata values must be strings");
        goto out;
    }
    if (sl_custom_md_check(kv, (int)i, "PATCH object", &err) < 0) {
        free(kv);
        sl_resp_err(r, &err);
        goto out;
    }
    for (size_t j = 0; j < i; j++)
        if (sl_custom_key_own(kv[j].k)) {
            sl_resp_errf(r, SL_EINVAL, "PATCH object: custom key \"%s\" is Shale's own (encryption at rest, S3 "
                         "versions or object lock): a client may not set it; nothing was changed", kv[j].k);
            free(kv);
            goto out;
        }
    if (sl_obj_set_custom(&b, name, nlen, kv, (int)i, sl_req_query_bool(r, "set-new-custom"), &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    free(kv);
out:
    sl_actmsg_free(&m);
    sl_bck_release(&b);
}

static void patch_body(struct sl_req *r)
{
    sl_req_offload_disk(r, patch_run, NULL, NULL);
}

void sl_tgt_objects(struct sl_req *r)
{
    switch (r->method) {
    case SL_M_GET:
        obj_get(r);
        break;
    case SL_M_HEAD:
        obj_head(r);
        break;
    case SL_M_PUT:
        obj_put(r);
        break;
    case SL_M_DELETE:
        obj_delete(r);
        break;
    case SL_M_PATCH:
        sl_req_buffer_body(r, sl_conf->http_max_body_json, patch_body);
        break;
    case SL_M_POST:
        sl_req_buffer_body(r, sl_conf->http_max_body_json, post_done);
        break;
    default:
        sl_resp_method_not_allowed(r, "GET, HEAD, PUT, DELETE, PATCH, POST");
    }
}

/* BMD listener: a bucket that disappeared (or was re-created with a new id)
 * loses its local data and metadata. */
void sl_tgt_bmd_changed(const struct sl_bmd *old, const struct sl_bmd *cur)
{
    if (!sl_is_target())
        return;
    /* a bucket being renamed takes no writes; one whose rename ended (or
     * was undone) takes them again */
    for (int i = 0; i < cur->n; i++)
        sl_store_seal(cur->bcks[i].bid, json_is_string(json_object_get(cur->bcks[i].props, "renamed")));
    if (!old)
        return;
    for (int i = 0; i < old->n; i++) {
        const struct sl_bck *ob = &old->bcks[i];
        const struct sl_bck *nb = sl_bmd_find(cur, ob->provider, ob->name);
        if (nb && nb->bid == ob->bid)
            continue;
        struct sl_err err;
        if (sl_store_destroy_bucket(ob, &err) < 0)
            sl_logw("removing data of destroyed bucket %s://%s: %s", sl_provider_scheme(ob->provider), ob->name,
                    err.msg);
        else
            sl_logi("removed local data of destroyed bucket %s://%s", sl_provider_scheme(ob->provider), ob->name);
    }
}
