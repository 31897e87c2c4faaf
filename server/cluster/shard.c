/* SPDX-License-Identifier: MIT
 * shard.c: see shard.h.
 */
#include "shard.h"
#include "read.h"
#include "backend.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "plug.h"
#include "store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* a member streamed from another target */
struct remote {
    struct sl_plug_writer *w;
    const char *entry;
    size_t elen;
    int64_t len;            /* Content-Length, -1 until known */
    bool added;
    struct sl_job *job;
    struct sl_err *err;
};

static void remote_hdr(void *ctx, const char *k, const char *v)
{
    struct remote *m = ctx;
    if (!strcasecmp(k, "Content-Length"))
        m->len = strtoll(v, NULL, 10);
}

static int remote_sink(void *ctx, const char *data, size_t n)
{
    struct remote *m = ctx;
    if (!m->added) {
        if (m->len < 0)
            return sl_errf(m->err, SL_EIO, "no Content-Length for member %.*s", (int)SL_MIN(m->elen, 300), m->entry);
        if (sl_plug_writer_add(m->w, m->entry, m->elen, m->len, sl_now_ns() / 1000000000LL, 0, m->err) < 0)
            return -1;
        m->added = true;
    }
    if (sl_plug_writer_write(m->w, data, n, m->err) < 0)
        return -1;
    if (m->job)
        sl_job_add(&m->job->in_bytes, n);
    return 0;
}

static int add_local(struct sl_plug_writer *w, const struct sl_bck *src, const char *obj, size_t olen,
                     const char *entry, size_t elen, char *buf, size_t bufsz, struct sl_job *job, struct sl_err *err)
{
    int fd;
    struct sl_objmd md;
    if (sl_read_obj(src, obj, olen, &fd, &md, err) < 0) /* (a remote source's: fetched, kept) */
        return -1;
    int rc = sl_plug_writer_add(w, entry, elen, (int64_t)md.size, md.mtime / 1000000000LL, 0, err);
    uint64_t off = 0;
    while (rc == 0 && off < md.size) {
        ssize_t n = pread(fd, buf, bufsz, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = sl_errf(err, SL_EIO, "reading %.*s: %s", (int)SL_MIN(olen, 300), obj,
                         n < 0 ? strerror(errno) : "unexpected end of file");
            break;
        }
        if (sl_plug_writer_write(w, buf, (size_t)n, err) < 0)
            rc = -1;
        off += (uint64_t)n;
    }
    if (rc == 0 && job) {
        sl_job_add(&job->loc_objs, 1);
        sl_job_add(&job->loc_bytes, md.size);
    }
    close(fd);
    sl_objmd_free(&md);
    return rc;
}

int sl_shard_add_object(struct sl_plug_writer *w, const struct sl_bck *src, const char *obj, size_t olen,
                        const char *entry, size_t elen, const struct sl_smap *smap, char *buf, size_t bufsz,
                        struct sl_job *job, struct sl_err *err)
{
    /* (where the read path serves it: the owner, or an EC stand-in) */
    const struct sl_snode *owner = G.role == SL_ROLE_STANDALONE ? NULL : sl_read_target(smap, src, obj, olen);
    if (!owner || !strcmp(owner->id, G.id))
        return add_local(w, src, obj, olen, entry, elen, buf, bufsz, job, err);
    struct sl_buf url;
    sl_buf_init(&url);
    sl_peer_obj_url(&url, owner->data_url, src->name, src->provider, obj, olen);
    struct remote m = { .w = w, .entry = entry, .elen = elen, .len = -1, .job = job, .err = err };
    err->msg[0] = 0;
    struct sl_peer_resp r;
    int prc = sl_peer_get_stream(url.p, NULL, 0, remote_sink, remote_hdr, &m, sl_conf->send_file_time_ns / 1000000,
                                 &r);
    int rc = 0;
    if (prc == 0 && r.status == 200) {
        if (!m.added && sl_plug_writer_add(w, entry, elen, 0, sl_now_ns() / 1000000000LL, 0, err) < 0)
            rc = -1;
        else if (job)
            sl_job_add(&job->in_objs, 1);
    } else {
        if (!err->msg[0] || prc == 0)
            sl_errf(err, r.status == 404 && !m.added ? SL_ENOOBJ : SL_EIO, "fetching %.*s from t[%s]: %s",
                    (int)SL_MIN(olen, 300), obj, owner->id, r.err[0] ? r.err : "failed");
        rc = -1;
    }
    sl_peer_resp_free(&r);
    sl_buf_free(&url);
    return rc;
}

void sl_shard_prefetch(const struct sl_bck *src, struct sl_shard_fetch *f, int n, const struct sl_smap *smap)
{
    struct sl_fan *fan = sl_xcalloc((size_t)n + 1, sizeof(*fan));
    int *idx = sl_xcalloc((size_t)n + 1, sizeof(int));
    int k = 0;
    for (int i = 0; i < n; i++) {
        f[i].remote = false;
        if (G.role == SL_ROLE_STANDALONE)
            continue;
        const struct sl_snode *owner = sl_read_target(smap, src, f[i].obj, f[i].olen);
        if (!owner || !strcmp(owner->id, G.id))
            continue;
        f[i].remote = true;
        struct sl_buf u;
        sl_buf_init(&u);
        sl_peer_obj_url(&u, owner->data_url, src->name, src->provider, f[i].obj, f[i].olen);
        fan[k].url = sl_buf_steal(&u);
        fan[k].method = "GET";
        idx[k++] = i;
    }
    if (k)
        sl_peer_fanout(fan, k, sl_conf->send_file_time_ns / 1000000);
    for (int j = 0; j < k; j++) {
        struct sl_shard_fetch *x = &f[idx[j]];
        x->status = fan[j].ok ? fan[j].resp.status : 0;
        if (x->status == 200) {
            x->body = fan[j].resp.body; /* take the buffer */
            sl_buf_init(&fan[j].resp.body);
        } else {
            snprintf(x->err, sizeof(x->err), "%.250s", fan[j].resp.err[0] ? fan[j].resp.err : "no answer");
        }
        free((char *)fan[j].url);
    }
    sl_peer_fanout_free(fan, k);
    free(fan);
    free(idx);
}

int sl_shard_add_bytes(struct sl_plug_writer *w, const char *entry, size_t elen, const void *data, size_t len,
                       struct sl_job *job, struct sl_err *err)
{
    if (sl_plug_writer_add(w, entry, elen, (int64_t)len, sl_now_ns() / 1000000000LL, 0, err) < 0 ||
        (len && sl_plug_writer_write(w, data, len, err) < 0))
        return -1;
    if (job) {
        sl_job_add(&job->in_objs, 1);
        sl_job_add(&job->in_bytes, len);
    }
    return 0;
}

void sl_shard_remove_written(const char *kind, const char *job_id, const struct sl_bck *dst, char *const *names,
                             int n)
{
    for (int i = 0; i < n; i++) {
        struct sl_err e2 = { 0 };
        sl_obj_delete(dst, names[i], strlen(names[i]), &e2);
    }
    if (n)
        sl_logi("%s %s: removed the %d shard(s) this target had written", kind, job_id, n);
}
