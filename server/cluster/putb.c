/* SPDX-License-Identifier: MIT
 * putb.c: see putb.h.
 *
 * The receiver buffers the body (a batch is at most a few MiB), parses all
 * of it before it writes anything, and does the writes on the background
 * pool: each object into its work file, then sl_put_commit_batch makes the
 * batch durable with a few syncs and publishes it.
 */
#include "putb.h"
#include "arch.h"
#include "backend.h"
#include "cksum.h"
#include "cluster.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "stats.h"
#include "store.h"
#include "xact.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* a full batch, the object that filled it, and room for its records' JSON */
#define BODY_MAX (SL_PUTB_BYTES + SL_PUTB_OBJ_MAX + (4 << 20))

/* ---- the sender ---- */

void sl_putb_init(struct sl_putb *pb, const struct sl_bck *b)
{
    memset(pb, 0, sizeof(*pb));
    sl_bck_copy(&pb->b, b);
    sl_buf_init(&pb->body);
}

static void putb_clear(struct sl_putb *pb)
{
    pb->body.len = 0;
    if (pb->body.p)
        pb->body.p[0] = 0;
    pb->n = 0;
}

void sl_putb_free(struct sl_putb *pb)
{
    sl_buf_free(&pb->body);
    sl_bck_release(&pb->b);
}

static json_t *record_json(const char *name, size_t nlen, const struct sl_objmd *md)
{
    json_t *cu = json_object();
    for (int i = 0; i < md->ncustom; i++)
        json_object_set_new(cu, md->custom[i].k, json_string(md->custom[i].v));
    json_t *j = json_pack("{s:s%,s:I,s:I,s:I,s:o}", "name", name, nlen, "size", (json_int_t)md->size, "version",
                          (json_int_t)md->version, "atime", (json_int_t)md->atime, "custom", cu);
    if (md->cksum_type != SL_CK_NONE && md->cksum[0]) {
        json_object_set_new(j, "cksum_type", json_string(sl_cksum_name(md->cksum_type)));
        json_object_set_new(j, "cksum_value", json_string(md->cksum));
    }
    if (md->nchunks)
        json_object_set_new(j, "chunks", json_pack("[I,I]", (json_int_t)md->nchunks, (json_int_t)md->chunk_max));
    return j;
}

/* One record: md's metadata and md->size bytes, from data or (NULL) read from fd. */
static int add_record(struct sl_putb *pb, const char *name, size_t nlen, int fd, const void *data,
                      const struct sl_objmd *md, struct sl_err *err)
{
    json_t *j = record_json(name, nlen, md);
    char *js = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!js)
        return sl_errf(err, SL_EINVAL, "%s/%.*s: its metadata is not valid UTF-8", pb->b.name,
                       sl_utf8_cut(name, nlen, 200), name);
    size_t hl = strlen(js), mark = pb->body.len;
    unsigned char len4[4] = { (unsigned char)(hl >> 24), (unsigned char)(hl >> 16), (unsigned char)(hl >> 8),
                              (unsigned char)hl };
    sl_buf_add(&pb->body, len4, 4);
    sl_buf_add(&pb->body, js, hl);
    free(js);
    sl_buf_reserve(&pb->body, md->size + 1);
    if (data) {
        memcpy(pb->body.p + pb->body.len, data, md->size);
        pb->body.len += md->size;
    }
    uint64_t off = data ? md->size : 0;
    while (off < md->size) {
        ssize_t r = pread(fd, pb->body.p + pb->body.len, (size_t)(md->size - off), (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            pb->body.len = mark;
            pb->body.p[mark] = 0;
            return sl_errf(err, SL_EIO, "reading %s/%.*s: %s", pb->b.name, sl_utf8_cut(name, nlen, 200), name,
                           r < 0 ? strerror(errno) : "shorter than its metadata says");
        }
        off += (uint64_t)r;
        pb->body.len += (size_t)r;
    }
    pb->body.p[pb->body.len] = 0;
    pb->n++;
    return 0;
}

int sl_putb_add(struct sl_putb *pb, const char *name, size_t nlen, int fd, const struct sl_objmd *md,
                struct sl_err *err)
{
    return add_record(pb, name, nlen, fd, NULL, md, err);
}

/* The receiver's answer, one entry per object; every object fails with why
 * when there is none to read. */
static int read_answer(const struct sl_putb *pb, const char *url, int rc, const struct sl_peer_resp *r,
                       struct sl_err *errs, bool *kept)
{
    json_t *j = rc == 0 && r->status == 200 ? json_loadb(r->body.p, r->body.len, 0, NULL) : NULL;
    json_t *objs = json_object_get(j, "objs");
    int failed = 0;
    for (int i = 0; i < pb->n; i++) {
        json_t *o = json_array_get(objs, (size_t)i);
        int st = (int)json_integer_value(json_object_get(o, "status"));
        if (json_array_size(objs) != (size_t)pb->n)
            sl_errf(&errs[i], rc < 0 ? SL_EUNAVAIL : sl_code_from_status(r->status ? (int)r->status : 500),
                    "put-batch %s: %s", url, r->err[0] ? r->err : rc < 0 ? "failed" : "answer without results");
        else if (st != 200)
            sl_errf(&errs[i], sl_code_from_status(st), "%s",
                    json_is_string(json_object_get(o, "message")) ? json_string_value(json_object_get(o, "message"))
                                                                   : "failed");
        failed += errs[i].code != 0;
        if (kept)
            kept[i] = !errs[i].code && json_is_true(json_object_get(o, "kept"));
    }
    json_decref(j);
    return failed;
}

static const char *const mode_names[] = { "move", "copy", "new" };

int sl_putb_send(const struct sl_putb *pb, const char *node_url, const char *reb_id, struct sl_err *errs, bool *kept)
{
    memset(errs, 0, (size_t)pb->n * sizeof(*errs));
    char *url = sl_xasprintf("%s/v1/internal/putb?bck=%s&provider=%s%s%s%s%s", node_url, pb->b.name,
                             pb->b.provider, pb->mode ? "&mode=" : "", pb->mode ? mode_names[pb->mode] : "",
                             pb->rename_from[0] ? "&rename_from=" : "", pb->rename_from);
    struct sl_peer_hdr h[] = { { "Ais-Rebalance", reb_id } };
    struct sl_peer_resp r;
    int rc = sl_peer_call("POST", url, h, reb_id ? 1 : 0, pb->body.p, pb->body.len,
                          sl_conf->send_file_time_ns / 1000000, &r);
    int failed = read_answer(pb, url, rc, &r, errs, kept);
    sl_stats_add("putb_out_objs", (uint64_t)(pb->n - failed));
    sl_peer_resp_free(&r);
    free(url);
    return failed;
}

/* ---- the receiver ---- */

struct rec {
    const char *name;        /* in meta */
    size_t nlen;
    json_t *meta;            /* owned */
    const char *data;        /* in the request body */
    uint64_t size;
};

static void recs_free(struct rec *v, int n)
{
    for (int i = 0; i < n; i++)
        json_decref(v[i].meta);
    free(v);
}

/* Every record of the body, or -1 with err (nothing parsed is kept). */
static int parse(const struct sl_buf *body, struct rec **out, int *nout, struct sl_err *err)
{
    const unsigned char *p = (const unsigned char *)body->p;
    size_t off = 0, len = body->len;
    struct rec *v = NULL;
    int n = 0, cap = 0;
    while (off < len) {
        const char *why = NULL;
        json_t *j = NULL;
        if (len - off < 4) {
            why = "truncated length";
        } else {
            size_t hl = (size_t)p[off] << 24 | (size_t)p[off + 1] << 16 | (size_t)p[off + 2] << 8 | p[off + 3];
            off += 4;
            j = hl <= len - off ? json_loadb((const char *)p + off, hl, 0, NULL) : NULL;
            off += hl;
            json_t *jn = json_object_get(j, "name"), *js = json_object_get(j, "size");
            if (!json_is_string(jn) || !json_is_integer(js) || json_integer_value(js) < 0)
                why = "metadata is not a JSON object with \"name\" and \"size\"";
            else if ((uint64_t)json_integer_value(js) > len - SL_MIN(off, len))
                why = "fewer bytes than its size";
        }
        if (why) {
            json_decref(j);
            recs_free(v, n);
            return sl_errf(err, SL_EINVAL, "put-batch: record %d: %s; nothing was stored", n, why);
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            v = sl_xrealloc(v, (size_t)cap * sizeof(*v));
        }
        json_t *jn = json_object_get(j, "name");
        v[n] = (struct rec){ json_string_value(jn), json_string_length(jn), j, (const char *)p + off,
                             (uint64_t)json_integer_value(json_object_get(j, "size")) };
        off += v[n++].size;
    }
    *out = v;
    *nout = n;
    return 0;
}

/* The work file of one record, written: with its metadata to preserve (as
 * the single PUT of a moved object, api/tgt.c), or (fresh) as a PUT: its
 * custom metadata only, checked against its checksum when that is of the
 * bucket's type. */
static int rec_write(const struct sl_bck *b, const struct rec *x, bool fresh, const char *rename_from,
                     struct sl_put **p, struct sl_err *err)
{
    const char *ckt = json_string_value(json_object_get(x->meta, "cksum_type"));
    const char *ckv = json_string_value(json_object_get(x->meta, "cksum_value"));
    int ctype = ckt && ckv && *ckv ? sl_cksum_parse(ckt) : -1;
    if (ckt && ctype < 0)
        return sl_errf(err, SL_EINVAL, "invalid checksum type \"%s\" (valid: %s)", ckt, sl_cksum_names());
    struct sl_objmd pre;
    memset(&pre, 0, sizeof(pre));
    if (!fresh) {
        pre.version = (uint64_t)json_integer_value(json_object_get(x->meta, "version"));
        pre.atime = json_integer_value(json_object_get(x->meta, "atime"));
        json_t *ch = json_object_get(x->meta, "chunks"); /* (a multipart upload's parts: sl_objmd nchunks) */
        pre.nchunks = (uint32_t)json_integer_value(json_array_get(ch, 0));
        pre.chunk_max = (uint64_t)json_integer_value(json_array_get(ch, 1));
        if (ctype == b->cksum_type) {
            pre.cksum_type = ctype;
            snprintf(pre.cksum, sizeof(pre.cksum), "%s", ckv);
        }
    } else if (ctype != b->cksum_type) {
        ctype = -1; /* (a copy into a bucket of another checksum type: hashed once, by the bucket's) */
    }
    const char *k;
    json_t *val;
    json_object_foreach(json_object_get(x->meta, "custom"), k, val)
        if (json_is_string(val) && !(fresh && !strcmp(k, "orig_fntl"))) /* (as a copy's PUT: not its source's) */
            sl_objmd_set_custom(&pre, k, json_string_value(val));
    struct sl_put_opts o = { .client_cktype = ctype, .client_ckval = ckv, .expect_size = (int64_t)x->size };
    if (!fresh) {
        o.preserve = &pre;
        o.move = true; /* (a rebalance's: its versions move as they are) */
    } else {
        const char *from = json_string_value(json_object_get(b->props, "renaming_from"));
        o.custom = pre.custom;
        o.ncustom = pre.ncustom;
        o.rename_copy = rename_from && from && !strcmp(rename_from, from);
        o.move = o.rename_copy;
    }
    int rc = -1;
    if (sl_custom_md_check(pre.custom, pre.ncustom, "custom metadata", err) == 0 &&
        sl_put_begin(b, x->name, x->nlen, &o, p, err) == 0) {
        rc = sl_put_write(*p, x->data, x->size, err);
        if (rc < 0) {
            sl_put_abort(*p);
            *p = NULL;
        }
    }
    sl_objmd_free(&pre);
    return rc;
}

/* Store the records: rc[i] 0 stored, 1 kept (an object of that name is
 * here; never in mode copy), -1 failed (errs[i]). A plain tar stored gets
 * its member index. */
static void store_recs(const struct sl_bck *b, const struct rec *v, int n, enum sl_putb_mode mode,
                       const char *rename_from, int *rc, struct sl_err *errs)
{
    struct sl_put **ps = sl_xcalloc((size_t)n + 1, sizeof(*ps));
    int *slot = sl_xcalloc((size_t)n + 1, sizeof(int));
    int np = 0;
    for (int i = 0; i < n; i++) {
        struct sl_objmd md;
        struct sl_err e;
        /* what is here already is as new or newer (checked again under
         * the name lock at commit) */
        if (mode != SL_PUTB_COPY && sl_obj_stat(b, v[i].name, v[i].nlen, &md, NULL, &e) == 1) {
            sl_objmd_free(&md);
            rc[i] = 1;
        } else if (rec_write(b, &v[i], mode != SL_PUTB_MOVE, rename_from, &ps[np], &errs[i]) < 0) {
            rc[i] = -1;
        } else {
            slot[np++] = i;
        }
    }
    int *prc = sl_xcalloc((size_t)np + 1, sizeof(int));
    struct sl_err *perr = sl_xcalloc((size_t)np + 1, sizeof(*perr));
    sl_put_commit_batch(ps, np, mode != SL_PUTB_COPY, prc, perr);
    for (int j = 0; j < np; j++) {
        rc[slot[j]] = prc[j];
        errs[slot[j]] = perr[j];
        if (prc[j] == 0)
            sl_arch_after_put(b, v[slot[j]].name, v[slot[j]].nlen);
    }
    free(perr);
    free(prc);
    free(slot);
    free(ps);
}

int sl_putb_store(const struct sl_putb *pb, struct sl_err *errs, bool *kept)
{
    memset(errs, 0, (size_t)pb->n * sizeof(*errs));
    if (kept)
        memset(kept, 0, (size_t)pb->n * sizeof(*kept));
    struct rec *v = NULL;
    int n = 0, failed = 0;
    struct sl_err err = { 0 };
    if (parse(&pb->body, &v, &n, &err) < 0 || n != pb->n) { /* (built by sl_putb_add: not expected) */
        for (int i = 0; i < pb->n; i++)
            sl_errf(&errs[i], SL_EINTERNAL, "%s", err.msg[0] ? err.msg : "put-batch: records lost");
        recs_free(v, n);
        return pb->n;
    }
    int *rc = sl_xcalloc((size_t)n + 1, sizeof(int));
    store_recs(&pb->b, v, n, pb->mode, pb->rename_from[0] ? pb->rename_from : NULL, rc, errs);
    for (int i = 0; i < n; i++) {
        failed += rc[i] < 0;
        if (kept)
            kept[i] = rc[i] == 1;
    }
    free(rc);
    recs_free(v, n);
    return failed;
}

/* ---- per owner (sl_putb_dests) ---- */

struct dest {
    char tid[48];               /* "" for this target */
    char *url;                  /* its data URL (another target's) */
    struct sl_putb pb;
    void **tags;                /* max_objs of them */
};

struct sl_putb_dests {
    struct sl_bck b;
    enum sl_putb_mode mode;
    char rename_from[SL_MAX_BCKNAME + 1];
    int max_objs;
    size_t max_bytes;
    sl_putb_done_fn done;
    void *ctx;
    struct dest *v;
    int n;
};

struct sl_putb_dests *sl_putb_dests_new(const struct sl_bck *b, enum sl_putb_mode mode, const char *rename_from,
                                        int max_objs, size_t max_bytes, sl_putb_done_fn done, void *ctx)
{
    struct sl_putb_dests *d = sl_xcalloc(1, sizeof(*d));
    sl_bck_copy(&d->b, b);
    d->mode = mode;
    snprintf(d->rename_from, sizeof(d->rename_from), "%s", rename_from ? rename_from : "");
    d->max_objs = max_objs < 1 ? 1 : max_objs > SL_PUTB_OBJS ? SL_PUTB_OBJS : max_objs;
    d->max_bytes = max_bytes;
    d->done = done;
    d->ctx = ctx;
    return d;
}

static void dest_flush(struct sl_putb_dests *d, struct dest *x, bool store)
{
    int n = x->pb.n;
    if (!n)
        return;
    struct sl_err *errs = sl_xcalloc((size_t)n, sizeof(*errs));
    bool *kept = sl_xcalloc((size_t)n, sizeof(*kept));
    if (store && x->url)
        sl_putb_send(&x->pb, x->url, NULL, errs, kept);
    else if (store)
        sl_putb_store(&x->pb, errs, kept);
    for (int i = 0; i < n; i++)
        d->done(d->ctx, x->tags[i], !store ? -2 : errs[i].code ? -1 : kept[i], &errs[i]);
    free(kept);
    free(errs);
    putb_clear(&x->pb);
}

int sl_putb_dests_add(struct sl_putb_dests *d, const char *tid, const char *data_url, const char *name, size_t nlen,
                      int fd, const void *data, const struct sl_objmd *md, void *tag, struct sl_err *err)
{
    struct dest *x = NULL;
    for (int i = 0; i < d->n && !x; i++)
        if (!strcmp(d->v[i].tid, tid ? tid : ""))
            x = &d->v[i];
    if (!x) {
        d->v = sl_xrealloc(d->v, (size_t)(d->n + 1) * sizeof(*d->v));
        x = &d->v[d->n++];
        memset(x, 0, sizeof(*x));
        snprintf(x->tid, sizeof(x->tid), "%s", tid ? tid : "");
        x->url = tid ? sl_xstrdup(data_url) : NULL;
        x->tags = sl_xcalloc((size_t)d->max_objs, sizeof(*x->tags));
        sl_putb_init(&x->pb, &d->b);
        x->pb.mode = d->mode;
        memcpy(x->pb.rename_from, d->rename_from, sizeof(x->pb.rename_from));
    }
    if (add_record(&x->pb, name, nlen, fd, data, md, err) < 0)
        return -1;
    x->tags[x->pb.n - 1] = tag;
    if (x->pb.n >= d->max_objs || sl_putb_bytes(&x->pb) >= d->max_bytes)
        dest_flush(d, x, true);
    return 0;
}

void sl_putb_dests_flush(struct sl_putb_dests *d, bool store)
{
    for (int i = 0; i < d->n; i++)
        dest_flush(d, &d->v[i], store);
}

void sl_putb_dests_free(struct sl_putb_dests *d)
{
    if (!d)
        return;
    sl_putb_dests_flush(d, false);
    for (int i = 0; i < d->n; i++) {
        sl_putb_free(&d->v[i].pb);
        free(d->v[i].url);
        free(d->v[i].tags);
    }
    free(d->v);
    sl_bck_release(&d->b);
    free(d);
}

static void putb_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    struct sl_bck b;
    struct rec *v = NULL;
    int n = 0;
    const char *bck = sl_req_query(r, "bck");
    if (sl_bck_resolve(bck ? bck : "", sl_req_query(r, "provider"), NULL, &b, &err) < 0) {
        sl_err_wrap(&err, "put-batch");
        sl_resp_err(r, &err);
        return;
    }
    if (parse(&r->body, &v, &n, &err) < 0) {
        sl_bck_release(&b);
        sl_resp_err(r, &err);
        return;
    }
    const char *ms = sl_req_query(r, "mode");
    enum sl_putb_mode mode = SL_PUTB_MOVE;
    while (ms && mode < SL_ARRAY_SIZE(mode_names) && strcmp(ms, mode_names[mode]))
        mode++;
    const char *why = mode == SL_ARRAY_SIZE(mode_names) ? "invalid mode (valid: move, copy, new)"
                      : mode != SL_PUTB_MOVE && sl_bck_remote(&b)
                          ? "the bucket is remote-backed: its PUTs write through to the remote, one at a time"
                          : NULL;
    if (why) {
        recs_free(v, n);
        sl_resp_errf(r, SL_EINVAL, "put-batch %s://%s: %s; nothing was stored", sl_provider_scheme(b.provider),
                     b.name, why);
        sl_bck_release(&b);
        return;
    }
    int *rc = sl_xcalloc((size_t)n + 1, sizeof(int));
    struct sl_err *errs = sl_xcalloc((size_t)n + 1, sizeof(*errs));
    const char *rf = sl_req_query(r, "rename_from");
    store_recs(&b, v, n, mode, rf && *rf && mode == SL_PUTB_COPY ? rf : NULL, rc, errs);
    const char *reb = sl_req_header(r, "Ais-Rebalance");
    struct sl_job *job = reb ? sl_job_get(reb) : NULL;
    json_t *objs = json_array();
    uint64_t stored = 0;
    for (int i = 0; i < n; i++) {
        if (rc[i] < 0) {
            sl_utf8_scrub(errs[i].msg); /* cut at fixed sizes: a short array fails the whole batch */
            json_array_append_new(objs, json_pack("{s:i,s:s}", "status", sl_err_status(errs[i].code), "message",
                                                  errs[i].msg));
            continue;
        }
        json_array_append_new(objs, rc[i] ? json_pack("{s:i,s:b}", "status", 200, "kept", true)
                                          : json_pack("{s:i}", "status", 200));
        if (rc[i])
            continue;
        stored++;
        if (job) {
            sl_job_add(&job->in_objs, 1);
            sl_job_add(&job->in_bytes, v[i].size);
        }
    }
    sl_stats_add("putb_in_batches", 1);
    sl_stats_add("putb_in_objs", stored);
    sl_job_put(job);
    free(errs);
    free(rc);
    recs_free(v, n);
    sl_bck_release(&b);
    sl_resp_json_new(r, 200, json_pack("{s:o}", "objs", objs));
}

static void putb_done(struct sl_req *r)
{
    sl_req_offload(r, putb_run, NULL, NULL);
}

void sl_putb_internal(struct sl_req *r)
{
    if (r->method != SL_M_POST)
        sl_resp_method_not_allowed(r, "POST");
    else if (!sl_is_target())
        sl_resp_errf(r, SL_EINVAL, "%s is not a storage target: put-batch goes to a target", G.name);
    else
        sl_req_buffer_body(r, BODY_MAX, putb_done);
}
