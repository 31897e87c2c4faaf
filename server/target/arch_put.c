/* SPDX-License-Identifier: MIT
 * arch_put.c: PUT ?archpath= (with Ais-Pine): a member spooled, then
 * appended in place to a plain tar, or the shard rebuilt with it.
 */
#include "arch_int.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- PUT with archpath ---- */

struct arch_put {
    struct sl_bck b;
    char *name;
    size_t nlen;
    char *member;
    size_t mlen;
    int pine;
    const struct sl_plug *fmt;
    char spool_path[PATH_MAX];
    int spool_fd;
    uint64_t got;
};

static void arch_put_free(struct arch_put *a)
{
    if (!a)
        return;
    if (a->spool_fd >= 0)
        close(a->spool_fd);
    if (a->spool_path[0])
        unlink(a->spool_path);
    sl_bck_release(&a->b);
    free(a->name);
    free(a->member);
    free(a);
}

static int spool_data(struct sl_req *r, const char *data, size_t n)
{
    struct arch_put *a = r->ctx;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(a->spool_fd, data + off, n - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return sl_errf(&r->err, errno == ENOSPC ? SL_ENOSPC : SL_EIO, "spooling the member: %s",
                           strerror(errno));
        }
        off += (size_t)w;
    }
    a->got += n;
    return 0;
}

struct put_io {
    struct sl_put *put;
    struct sl_err *err;
};

static int64_t put_io_write(void *ctx, const void *buf, size_t n)
{
    struct put_io *p = ctx;
    return sl_put_write(p->put, buf, n, p->err) < 0 ? -1 : (int64_t)n;
}

/* copy the spooled member into writer w */
static int add_spooled(struct arch_put *a, struct sl_plug_writer *w, struct sl_err *err)
{
    if (sl_plug_writer_add(w, a->member, a->mlen, (int64_t)a->got, sl_now_ns() / 1000000000LL, 0, err) < 0)
        return -1;
    char *buf = sl_xmalloc(CHUNK);
    uint64_t off = 0;
    int rc = 0;
    while (off < a->got) {
        ssize_t n = pread(a->spool_fd, buf, CHUNK, (off_t)off);
        if (n <= 0) {
            rc = sl_errf(err, SL_EIO, "reading the spooled member: %s", n < 0 ? strerror(errno) : "short");
            break;
        }
        if (sl_plug_writer_write(w, buf, (size_t)n, err) < 0) {
            rc = -1;
            break;
        }
        off += (uint64_t)n;
    }
    free(buf);
    return rc;
}

/* Write a new shard: optionally the members of the current one first (rebuild), then the new member. */
static int rebuild(struct arch_put *a, int oldfd, struct sl_err *err)
{
    struct sl_put *put;
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1, .keep_custom = true };
    if (sl_put_begin(&a->b, a->name, a->nlen, &o, &put, err) < 0)
        return -1;
    struct put_io pio = { put, err };
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), &a->b, a->name, a->nlen);
    struct sl_io io = { SL_ABI_INIT(struct sl_io), .ctx = &pio, .write = put_io_write, .name = cn };
    struct sl_plug_writer *w;
    if (sl_plug_writer_open(a->fmt, &io, 0, &w, err) < 0) {
        sl_put_abort(put);
        return -1;
    }
    int rc = 0;
    if (oldfd >= 0) {
        struct sl_plug_fdio fio;
        sl_plug_fdio_init(&fio, oldfd, 0, cn);
        struct sl_fmt_limits lim;
        arch_limits(&lim);
        struct sl_plug_reader *rd;
        struct sl_fmt_entry e;
        char *buf = sl_xmalloc(CHUNK);
        rc = sl_plug_reader_open(a->fmt, &fio.io, &lim, 0, &rd, err);
        while (rc == 0 && (rc = sl_plug_reader_next(rd, &e, err)) == 0) {
            if (e.name_len == a->mlen && !memcmp(e.name, a->member, a->mlen))
                continue; /* replaced by the new member */
            if (e.size < 0) {
                rc = sl_errf(err, SL_EUNSUPP, "%s: member %s has no size in its header; cannot rebuild", cn, e.name);
                break;
            }
            if ((rc = sl_plug_writer_add(w, e.name, e.name_len, e.size, e.mtime, e.mode, err)) < 0)
                break;
            int64_t n;
            while ((n = sl_plug_reader_read(rd, buf, CHUNK, err)) > 0)
                if ((rc = sl_plug_writer_write(w, buf, (size_t)n, err)) < 0)
                    break;
            if (n < 0)
                rc = -1;
            if (rc < 0)
                break;
        }
        if (rc == 1)
            rc = 0;
        sl_plug_reader_close(rd);
        free(buf);
    }
    if (rc == 0)
        rc = add_spooled(a, w, err);
    if (rc == 0)
        rc = sl_plug_writer_finish(w, err);
    sl_plug_writer_close(w);
    if (rc < 0) {
        sl_put_abort(put);
        return -1;
    }
    if (sl_put_commit(put, NULL, err) < 0)
        return -1;
    sl_arch_after_put(&a->b, a->name, a->nlen);
    return 0;
}

/* True append in place (plain tar). 1 = not possible (rebuild instead). */
static int append_in_place(struct arch_put *a, struct sl_err *err)
{
    struct sl_obj_edit ed;
    if (sl_obj_edit_begin(&a->b, a->name, a->nlen, &ed, err) < 0)
        return -1;
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), &a->b, a->name, a->nlen);
    struct sl_plug_append ap;
    struct stat st;
    fstat(ed.fd, &st);
    int64_t orig = st.st_size;
    if (sl_plug_append_begin(a->fmt, ed.fd, cn, &ap, err) < 0) {
        sl_obj_edit_abort(&ed);
        return err->code == SL_EUNSUPP ? 1 : -1;
    }
    if (sl_obj_edit_mark(&ed, ap.offset, orig, err) < 0)
        goto fail;
    if (add_spooled(a, ap.w, err) < 0)
        goto fail;
    sl_fault("append-before-commit");
    if (sl_plug_append_commit(&ap, err) < 0)
        goto fail;
    if (sl_obj_edit_commit(&ed, err) < 0)
        return -1;
    sl_arch_after_put(&a->b, a->name, a->nlen);
    return 0;
fail:
    sl_plug_append_abort(&ap); /* after a failed commit: restores again, as before */
    sl_obj_edit_abort(&ed);
    return -1;
}

static void arch_put_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct arch_put *a = r->ctx;
    struct sl_err err = { 0 };
    if (r->content_length >= 0 && a->got != (uint64_t)r->content_length) {
        sl_resp_errf(r, SL_EINVAL, "PUT archpath: received %llu bytes of %lld; nothing was changed",
                     (unsigned long long)a->got, (long long)r->content_length);
        return;
    }
    int fd = -1;
    struct sl_objmd md;
    int exists = sl_obj_stat(&a->b, a->name, a->nlen, &md, NULL, &err);
    if (exists < 0) {
        sl_resp_err(r, &err);
        return;
    }
    if (exists == 1)
        sl_objmd_free(&md);
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), &a->b, a->name, a->nlen);
    int rc;
    if (a->pine == 0 || (a->pine == 2 && !exists)) {
        rc = rebuild(a, -1, &err); /* create or overwrite with this one member */
    } else if (!exists) {
        sl_resp_errf(r, SL_ENOOBJ, "%s does not exist: cannot append to it (use Ais-Pine: 2 to append or create)",
                     cn);
        return;
    } else {
        rc = arch_is_plain_tar(a->fmt) ? append_in_place(a, &err) : 1;
        if (rc == 1) { /* rebuild: old members + the new one */
            struct sl_objmd om;
            if (sl_obj_open(&a->b, a->name, a->nlen, &fd, &om, NULL, &err) < 0) {
                sl_resp_err(r, &err);
                return;
            }
            sl_objmd_free(&om);
            rc = rebuild(a, fd, &err);
            close(fd);
        }
    }
    if (rc < 0) {
        sl_resp_err(r, &err);
        return;
    }
    sl_resp_empty(r, 200);
}

/* an append in place or a rebuild of the whole shard: on a DISK pool thread */
static void arch_put_done(struct sl_req *r)
{
    sl_req_offload_disk(r, arch_put_run, NULL, NULL);
}

static void arch_put_cleanup(struct sl_req *r, bool completed)
{
    arch_put_free(r->ctx);
    r->ctx = NULL;
}

bool sl_arch_put(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    const char *archpath = arch_q_nonempty(r, "archpath");
    if (!archpath)
        return false;
    struct sl_err err = { 0 };
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    if (r->content_length < 0) {
        sl_resp_errf(r, SL_EINVAL, "PUT %s?archpath: Content-Length is required to add a member", cn);
        return true;
    }
    const char *pine_h = sl_req_header(r, "Ais-Pine");
    int pine = pine_h ? atoi(pine_h) : 0;
    if (pine < 0 || pine > 2) {
        sl_resp_errf(r, SL_EINVAL, "PUT %s: invalid Ais-Pine \"%s\" (0 create/overwrite, 1 append, 2 append or create)",
                     cn, pine_h);
        return true;
    }
    /* unlike GET, a leading '/' is not stripped: an absolute member name is refused */
    size_t al = strlen(archpath);
    if (sl_plug_member_name_check(archpath, al, &err) < 0) {
        sl_err_wrap(&err, "PUT %s?archpath", cn);
        sl_resp_err(r, &err);
        return true;
    }
    const char *mime = arch_q_nonempty(r, "archmime");
    const struct sl_plug *fmt = mime ? sl_plug_format_by_mime(sl_arch_reg(), mime) : sl_arch_format_by_name(name, nlen);
    if (!fmt || !(sl_plug_caps(fmt) & SL_FMT_CAP_WRITE)) {
        sl_resp_errf(r, SL_EINVAL, "PUT %s?archpath: %s is not a writable shard format; supported: %s", cn,
                     mime ? mime : "the name's extension", sl_arch_supported());
        return true;
    }
    struct arch_put *a = sl_xcalloc(1, sizeof(*a));
    a->spool_fd = -1;
    sl_bck_copy(&a->b, b);
    a->name = sl_xstrndup(name, nlen);
    a->nlen = nlen;
    a->member = sl_xstrndup(archpath, al);
    a->mlen = al;
    a->pine = pine;
    a->fmt = fmt;
    /* spool the member next to the shard (same mountpath, work directory) */
    struct sl_mpath *mp = sl_store_locate(b, name, nlen);
    if (!mp) {
        arch_put_free(a);
        sl_resp_errf(r, SL_EUNAVAIL, "PUT %s?archpath: this node has no mountpaths (it is not a storage target)", cn);
        return true;
    }
    char rid[20];
    sl_rand_id(rid, 12);
    snprintf(a->spool_path, sizeof(a->spool_path), "%s/@%s/%s/%%wk/spool-%s", mp->path, b->provider, b->name, rid);
    sl_mkdir_parents(a->spool_path, 0755);
    a->spool_fd = open(a->spool_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (a->spool_fd < 0) {
        int e = errno;
        a->spool_path[0] = 0;
        arch_put_free(a);
        sl_resp_errf(r, e == ENOSPC ? SL_ENOSPC : SL_EIO, "PUT %s?archpath: cannot spool the member: %s", cn,
                     strerror(e));
        return true;
    }
    r->ctx = a;
    r->on_cleanup = arch_put_cleanup;
    sl_req_stream_body(r, spool_data, arch_put_done);
    return true;
}
