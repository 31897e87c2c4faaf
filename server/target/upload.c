/* SPDX-License-Identifier: MIT
 * upload.c: append sessions and native multipart uploads (upload.h).
 */
#include "upload.h"
#include "cksum.h"
#include "log.h"
#include "node.h"
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_PARTS 10000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static bool same_obj(const struct sl_bck *a, const char *an, size_t al, const struct sl_bck *b, const char *bn,
                     size_t bl)
{
    return a->bid == b->bid && !strcmp(a->name, b->name) && al == bl && !memcmp(an, bn, al);
}

static void bck_copy(struct sl_bck *dst, const struct sl_bck *src)
{
    *dst = *src;
    dst->props = src->props ? json_incref(src->props) : NULL;
}

/* ------------------------------------------------------------------ */
/* append                                                             */
/* ------------------------------------------------------------------ */

struct sl_append {
    struct sl_append *next;
    char id[24];
    struct sl_bck b;
    char *name;
    size_t nlen;
    struct sl_put *p;           /* the appended bytes */
    int base_fd;                /* the object as it was at the first append (-1: none) */
    uint64_t base_size;
    bool busy;
    int64_t used_s;
};

static struct sl_append *appends;

static void append_free(struct sl_append *a);

/* with mu held: drop sessions nobody touched for UPLOAD_IDLE_S */
static void append_gc(void)
{
    int64_t now = sl_now_ns() / 1000000000;
    for (struct sl_append **pp = &appends; *pp;) {
        struct sl_append *a = *pp;
        if (!a->busy && now - a->used_s > UPLOAD_IDLE_S) {
            *pp = a->next;
            sl_logi("append session %s (%s/%.*s) dropped after %d s without a request", a->id, a->b.name,
                    (int)SL_MIN(a->nlen, 200), a->name, UPLOAD_IDLE_S);
            append_free(a);
        } else {
            pp = &a->next;
        }
    }
}

static void append_free(struct sl_append *a)
{
    if (!a)
        return;
    sl_put_abort(a->p);
    if (a->base_fd >= 0)
        close(a->base_fd);
    sl_bck_release(&a->b);
    free(a->name);
    free(a);
}

/* A new session. The object's current content is what the appends extend:
 * its file is held open (a snapshot, as a copy would be, but without
 * reading it here, on the HTTP thread); flush puts the two together. */
static struct sl_append *append_new(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    struct sl_append *a = sl_xcalloc(1, sizeof(*a));
    a->base_fd = -1;
    sl_rand_id(a->id, 16);
    bck_copy(&a->b, b);
    a->name = sl_xstrndup(name, nlen);
    a->nlen = nlen;
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1, .keep_custom = true };
    if (sl_put_begin(b, name, nlen, &o, &a->p, err) < 0) {
        append_free(a);
        return NULL;
    }
    struct sl_objmd md;
    struct sl_err e2 = { 0 };
    if (sl_obj_open(b, name, nlen, &a->base_fd, &md, NULL, &e2) == 0) {
        a->base_size = md.size;
        sl_objmd_free(&md);
    } else if (e2.code != SL_ENOOBJ) {
        *err = e2;
        append_free(a);
        return NULL;
    }
    return a;
}

int sl_append_get(const struct sl_bck *b, const char *name, size_t nlen, const char *handle, struct sl_append **out,
                  struct sl_err *err)
{
    *out = NULL;
    if (!handle || !*handle) {
        struct sl_append *a = append_new(b, name, nlen, err);
        if (!a)
            return -1;
        pthread_mutex_lock(&mu);
        append_gc();
        a->busy = true;
        a->next = appends;
        appends = a;
        pthread_mutex_unlock(&mu);
        *out = a;
        return 0;
    }
    /* "<target>|<session>|<x>|<y>" */
    char f[4][128];
    int n = 0;
    const char *p = handle;
    while (n < 4) {
        const char *e = strchr(p, '|');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l >= sizeof(f[0]))
            break;
        memcpy(f[n], p, l);
        f[n++][l] = 0;
        if (!e)
            break;
        p = e + 1;
    }
    if (n != 4 || strchr(p, '|'))
        return sl_errf(err, SL_EINVAL, "invalid APPEND handle: \"%s\"", handle);
    if (strcmp(f[0], G.id))
        return sl_errf(err, SL_EINVAL, "APPEND handle \"%s\" belongs to t[%s], not to this target t[%s]", handle,
                       f[0], G.id);
    pthread_mutex_lock(&mu);
    struct sl_append *a = appends;
    while (a && strcmp(a->id, f[1]))
        a = a->next;
    int rc = 0;
    if (!a)
        rc = sl_errf(err, SL_ENOENT, "append handle \"%s\" is unknown here (flushed, expired after %d s, or the "
                     "target restarted): start again without a handle", handle, UPLOAD_IDLE_S);
    else if (!same_obj(&a->b, a->name, a->nlen, b, name, nlen))
        rc = sl_errf(err, SL_EINVAL, "append handle \"%s\" is for %s/%.*s, not for this object", handle, a->b.name,
                     (int)SL_MIN(a->nlen, 200), a->name);
    else if (a->busy)
        rc = sl_errf(err, SL_EBUSY, "append handle \"%s\" is in use by another request: appends to one session "
                     "go one at a time", handle);
    else
        a->busy = true;
    pthread_mutex_unlock(&mu);
    if (rc == 0)
        *out = a;
    return rc;
}

int sl_append_write(struct sl_append *a, const void *p, size_t n, struct sl_err *err)
{
    return sl_put_write(a->p, p, n, err);
}

void sl_append_handle(const struct sl_append *a, char *out, size_t n)
{
    snprintf(out, n, "%s|%s|-|-", G.id, a->id);
}

void sl_append_release(struct sl_append *a)
{
    pthread_mutex_lock(&mu);
    a->busy = false;
    a->used_s = sl_now_ns() / 1000000000;
    pthread_mutex_unlock(&mu);
}

static void append_unlink(struct sl_append *a)
{
    pthread_mutex_lock(&mu);
    for (struct sl_append **pp = &appends; *pp; pp = &(*pp)->next)
        if (*pp == a) {
            *pp = a->next;
            break;
        }
    pthread_mutex_unlock(&mu);
}

void sl_append_drop(struct sl_append *a)
{
    append_unlink(a);
    append_free(a);
}

/* the checksum of the work file so far */
static int file_cksum(int fd, int type, char out[SL_CKSUM_HEX_MAX], struct sl_err *err)
{
    struct sl_cksum c;
    if (sl_cksum_init(&c, type) < 0)
        return sl_errf(err, SL_EINVAL, "checksum type %s cannot be computed here", sl_cksum_name(type));
    char *buf = sl_xmalloc(256 * 1024);
    off_t off = 0;
    ssize_t r;
    while ((r = pread(fd, buf, 256 * 1024, off)) > 0) {
        sl_cksum_update(&c, buf, (size_t)r);
        off += r;
    }
    free(buf);
    sl_cksum_final(&c, out);
    return r < 0 ? sl_errf(err, SL_EIO, "reading the appended content: %s", strerror(errno)) : 0;
}

/* n bytes of fd from 0 into p */
static int copy_fd(struct sl_put *p, int fd, uint64_t n, struct sl_err *err)
{
    char *buf = sl_xmalloc(256 * 1024);
    uint64_t off = 0;
    int rc = 0;
    while (rc == 0 && off < n) {
        ssize_t r = pread(fd, buf, (size_t)SL_MIN((uint64_t)256 * 1024, n - off), (off_t)off);
        if (r <= 0)
            rc = sl_errf(err, SL_EIO, "append: reading back: %s", r < 0 ? strerror(errno) : "short file");
        else
            rc = sl_put_write(p, buf, (size_t)r, err);
        off += r > 0 ? (uint64_t)r : 0;
    }
    free(buf);
    return rc;
}

int sl_append_flush(struct sl_append *a, int cktype, const char *ckval, struct sl_objmd *out, struct sl_err *err)
{
    append_unlink(a);
    /* the object the session extends, then what was appended: one PUT */
    struct sl_put *p = a->p;
    int rc = 0;
    if (a->base_size) {
        struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1, .keep_custom = true };
        p = NULL;
        rc = sl_put_begin(&a->b, a->name, a->nlen, &o, &p, err);
        if (rc == 0)
            rc = copy_fd(p, a->base_fd, a->base_size, err);
        if (rc == 0)
            rc = copy_fd(p, sl_put_fd(a->p), sl_put_size(a->p), err);
    } else {
        a->p = NULL;
    }
    if (rc == 0 && cktype > SL_CK_NONE) {
        char have[SL_CKSUM_HEX_MAX];
        rc = file_cksum(sl_put_fd(p), cktype, have, err);
        if (rc == 0 && strcasecmp(have, ckval ? ckval : ""))
            rc = sl_errf(err, SL_ECKSUM, "BAD DATA CHECKSUM: %s/%.*s: the appended content has %s %s, the request "
                         "says %s; the object is unchanged", a->b.name, (int)SL_MIN(a->nlen, 200), a->name,
                         sl_cksum_name(cktype), have, ckval ? ckval : "");
    }
    if (rc == 0) {
        rc = sl_put_commit(p, out, err);
        p = NULL;
    }
    if (p != a->p)
        sl_put_abort(p);
    append_free(a);
    return rc;
}

/* ------------------------------------------------------------------ */
/* multipart                                                          */
/* ------------------------------------------------------------------ */

/* A part is written straight into the object's work file at (no - 1) x slot
 * when it fits there, slot being the size of the first part to arrive (the
 * SDKs cut equal parts but the last); one that does not fit waits in a
 * temporary file. At complete, a work file holding every part in place is
 * the object (its checksum read back from the page cache); otherwise the
 * parts are copied in order into a new one. */
struct part {
    int no;
    int fd;                     /* -1: placed in the work file */
    uint64_t size;
    bool appending;             /* an append to it is under way (its fd is the append's) */
    char file[24];              /* its own file in the upload's directory ("": placed) */
    int64_t at;                 /* unix ns it came in */
    char *info;                 /* the caller's (sl_mpt_part_set_info) */
};

struct mpt {
    struct mpt *next;
    char id[24];
    struct sl_bck b;
    char *name;
    size_t nlen;
    struct sl_put *p;           /* the work file parts are placed in */
    uint64_t slot;              /* 0 until the first part */
    struct part *parts;
    int nparts;
    int busy;                   /* part uploads in progress */
    bool ending;                /* complete or abort under way */
    int64_t used_s;
    struct sl_mpath *mp;        /* where its directory and records are */
    int64_t created;            /* unix ns */
    char *info;                 /* the caller's (sl_mpt_create) */
};

static struct mpt *mpts;

/* ---- what outlives a restart ----
 * An upload's files are in <mpath>/.shale/mpu/<id>/ (the work file "w" the
 * parts are placed in, and "pN-xxxx", a part of its own), on the mountpath
 * of the object; its records in that mountpath's aux DB: "mu<id>/" the
 * upload (bucket, name, when, the caller's info), "mu<id>/pNNNNN" each
 * part that was acknowledged (size, file, the caller's info), committed
 * after the part's bytes are durable and before its 200. sl_mpt_recover
 * takes them back at start-up. */
#define MPU_KEY "mu"

static void rec_key(struct sl_buf *k, const char *id, int no)
{
    sl_buf_printf(k, MPU_KEY "%s/", id);
    if (no > 0)
        sl_buf_printf(k, "p%05d", no);
}

static char *mpt_path(const struct sl_mpath *mp, const char *id, const char *file)
{
    return sl_xasprintf("%s/.shale/mpu/%s%s%s", mp->path, id, file ? "/" : "", file ? file : "");
}

static int rec_put(struct sl_mpath *mp, const char *id, int no, json_t *v, struct sl_err *err)
{
    struct sl_buf k;
    sl_buf_init(&k);
    rec_key(&k, id, no);
    char *val = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    struct sl_md_op op = { .kind = SL_MD_PUT_AUX, .key = k.p, .klen = k.len, .val = val, .vlen = strlen(val) };
    int rc = sl_md_commit(mp->md, &op, 1, true, err);
    free(val);
    sl_buf_free(&k);
    return rc;
}

static void rec_del(struct sl_mpath *mp, const char *id, int no)
{
    struct sl_buf k;
    sl_buf_init(&k);
    rec_key(&k, id, no);
    struct sl_md_op op = { .kind = no > 0 ? SL_MD_DEL_AUX : SL_MD_DEL_AUX_PREFIX, .key = k.p, .klen = k.len };
    struct sl_err err = { 0 };
    if (sl_md_commit(mp->md, &op, 1, true, &err) < 0)
        sl_logw("multipart upload %s: its record%s stay%s: %s", id, no > 0 ? "" : "s", no > 0 ? "s" : "", err.msg);
    sl_buf_free(&k);
}

static int part_rec_put(struct mpt *m, const struct part *pt, struct sl_err *err)
{
    json_t *v = json_pack("{s:i,s:I,s:s,s:I,s:I}", "no", pt->no, "size", (json_int_t)pt->size, "file", pt->file,
                          "slot", (json_int_t)(pt->file[0] ? 0 : m->slot), "at", (json_int_t)pt->at);
    if (pt->info)
        json_object_set_new(v, "info", json_string(pt->info));
    return rec_put(m->mp, m->id, pt->no, v, err);
}

/* its records and files, gone for good (complete, abort, expiry) */
static void mpt_forget(struct sl_mpath *mp, const char *id)
{
    rec_del(mp, id, 0);
    char *d = mpt_path(mp, id, NULL);
    sl_rm_rf(d);
    free(d);
}

static void mpt_free(struct mpt *m)
{
    for (int i = 0; i < m->nparts; i++) {
        if (m->parts[i].fd >= 0)
            close(m->parts[i].fd);
        free(m->parts[i].info);
    }
    free(m->parts);
    sl_put_abort(m->p);
    sl_bck_release(&m->b);
    free(m->name);
    free(m->info);
    free(m);
}

/* with mu held: take out the uploads nobody touched for UPLOAD_IDLE_S (the
 * caller frees them with mpt_gc_free, without mu) */
static struct mpt *mpt_gc(void)
{
    struct mpt *gone = NULL;
    int64_t now = sl_now_ns() / 1000000000;
    for (struct mpt **pp = &mpts; *pp;) {
        struct mpt *m = *pp;
        if (!m->busy && !m->ending && now - m->used_s > UPLOAD_IDLE_S) {
            *pp = m->next;
            sl_logi("multipart upload %s (%s/%.*s) dropped after %d s without a request", m->id, m->b.name,
                    (int)SL_MIN(m->nlen, 200), m->name, UPLOAD_IDLE_S);
            m->next = gone;
            gone = m;
        } else {
            pp = &m->next;
        }
    }
    return gone;
}

static void mpt_gc_free(struct mpt *gone)
{
    while (gone) {
        struct mpt *m = gone;
        gone = m->next;
        struct sl_mpath *mp = m->mp;
        char id[24];
        snprintf(id, sizeof(id), "%s", m->id);
        mpt_free(m);
        mpt_forget(mp, id);
    }
}

int sl_mpt_create(const struct sl_bck *b, const char *name, size_t nlen, const char *info, char *id, size_t n,
                  struct sl_err *err)
{
    struct mpt *m = sl_xcalloc(1, sizeof(*m));
    sl_rand_id(m->id, 16);
    /* (on the object's mountpath, where the work file would be) */
    struct sl_mpath *mp = sl_store_locate(b, name, nlen);
    char rel[64];
    snprintf(rel, sizeof(rel), ".shale/mpu/%s/w", m->id);
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1, .work_rel = rel, .work_mp = mp };
    if (!mp) {
        free(m);
        return sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths (it is not a storage target)");
    }
    if (sl_put_begin(b, name, nlen, &o, &m->p, err) < 0) {
        free(m);
        return -1;
    }
    m->mp = sl_put_mpath(m->p);
    bck_copy(&m->b, b);
    m->name = sl_xstrndup(name, nlen);
    m->nlen = nlen;
    m->used_s = sl_now_ns() / 1000000000;
    m->created = sl_now_ns();
    m->info = info ? sl_xstrdup(info) : NULL;
    json_t *v = json_pack("{s:s,s:s,s:I,s:s%,s:I}", "bck", b->name, "prov", b->provider, "bid", (json_int_t)b->bid,
                          "name", name, nlen, "created", (json_int_t)m->created);
    if (info)
        json_object_set_new(v, "info", json_string(info));
    if (rec_put(m->mp, m->id, 0, v, err) < 0) {
        struct sl_mpath *mp2 = m->mp;
        char id2[24];
        snprintf(id2, sizeof(id2), "%s", m->id);
        mpt_free(m);
        mpt_forget(mp2, id2);
        return -1;
    }
    pthread_mutex_lock(&mu);
    struct mpt *gone = mpt_gc();
    m->next = mpts;
    mpts = m;
    pthread_mutex_unlock(&mu);
    mpt_gc_free(gone);
    snprintf(id, n, "%s", m->id);
    return 0;
}

/* with mu held */
static struct mpt *mpt_find(const struct sl_bck *b, const char *name, size_t nlen, const char *id,
                            struct sl_err *err)
{
    if (!id || !*id || strlen(id) > 64 || strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                     "_-") != strlen(id)) {
        sl_errf(err, SL_EINVAL, "invalid multipart upload id \"%s\"", id ? id : "");
        return NULL;
    }
    struct mpt *m = mpts;
    while (m && strcmp(m->id, id))
        m = m->next;
    if (!m || !same_obj(&m->b, m->name, m->nlen, b, name, nlen) || m->ending) {
        char cn[400];
        sl_obj_cname(cn, sizeof(cn), b, name, nlen); /* (AIStore's: the object's ais://b/o, which SDKs parse) */
        sl_errf(err, SL_ENOENT, "%s: multipart upload \"%s\" not found (completed, aborted, expired after %d s, or "
                "the target restarted)", cn, id, UPLOAD_IDLE_S);
        return NULL;
    }
    return m;
}

#define PART_BUF (256 * 1024)

struct sl_mpt_part {
    struct mpt *m;
    int no;
    int fd;                     /* the work file's (placed) or a temporary file */
    bool placed;
    bool append;                /* sl_mpt_part_append: size starts at what the part held */
    uint64_t had;               /* (append) what it held */
    bool open_len;              /* (append) no Content-Length: every byte that comes */
    uint64_t base;              /* where the part starts in fd */
    uint64_t size, want;
    char *buf;
    size_t blen;
    char file[24];              /* (not placed) its file's name */
    char *info;                 /* sl_mpt_part_set_info */
};

/* a new file of its own for part no, in the upload's directory */
static int part_file(struct mpt *m, int no, char file[24], struct sl_err *err)
{
    char rid[12];
    sl_rand_id(rid, 8);
    snprintf(file, 24, "p%d-%s", no, rid);
    char *path = mpt_path(m->mp, m->id, file);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        sl_errf(err, errno == ENOSPC ? SL_ENOSPC : SL_EIO, "cannot create the file of part %d under %s: %s (check "
                "the mountpath's space and permissions)", no, m->mp->path, strerror(errno));
    free(path);
    return fd;
}

static void part_unlink(struct mpt *m, const char *file)
{
    if (!file[0])
        return;
    char *path = mpt_path(m->mp, m->id, file);
    unlink(path);
    free(path);
}

void sl_mpt_part_set_info(struct sl_mpt_part *p, const char *info)
{
    free(p->info);
    p->info = info ? sl_xstrdup(info) : NULL;
}

/* partno as a number 1..MAX_PARTS; -1 with err (400) otherwise */
static long part_no(const struct sl_bck *b, const char *name, size_t nlen, const char *id, const char *partno,
                    struct sl_err *err)
{
    char *end;
    long no = partno ? strtol(partno, &end, 10) : 0;
    if (!partno || !*partno || *end || no < 1 || no > MAX_PARTS)
        return sl_errf(err, SL_EINVAL, "%s/%.*s: invalid part number \"%s\" for upload \"%s\" (1 to %d)", b->name,
                       (int)SL_MIN(nlen, 200), name, partno ? partno : "", id, MAX_PARTS);
    return no;
}

int sl_mpt_part_begin(const struct sl_bck *b, const char *name, size_t nlen, const char *id, const char *partno,
                      int64_t size, struct sl_mpt_part **out, struct sl_err *err)
{
    *out = NULL;
    long no = part_no(b, name, nlen, id, partno, err);
    if (no < 0)
        return -1;
    if (size <= 0)
        return sl_errf(err, SL_EINVAL, "%s/%.*s: put-part invalid size (%lld): a part needs a Content-Length and at "
                       "least one byte", b->name, (int)SL_MIN(nlen, 200), name, (long long)size);
    pthread_mutex_lock(&mu);
    struct mpt *m = mpt_find(b, name, nlen, id, err);
    bool placed = false;
    for (int i = 0; m && i < m->nparts; i++)
        if (m->parts[i].no == no && m->parts[i].appending) {
            sl_errf(err, SL_EBUSY, "%s/%.*s: part %ld of upload \"%s\" is being appended to by another request",
                    b->name, (int)SL_MIN(nlen, 200), name, no, id);
            m = NULL;
        }
    if (m) {
        m->busy++;
        if (!m->slot)
            m->slot = (uint64_t)size;
        placed = (uint64_t)size <= m->slot;
    }
    pthread_mutex_unlock(&mu);
    if (!m)
        return -1;
    struct sl_mpt_part *p = sl_xcalloc(1, sizeof(*p));
    *p = (struct sl_mpt_part){ .m = m, .no = (int)no, .fd = -1, .placed = placed, .want = (uint64_t)size };
    if (placed) {
        p->fd = sl_put_fd(m->p);
        p->base = (uint64_t)(no - 1) * m->slot;
    } else if ((p->fd = part_file(m, (int)no, p->file, err)) < 0) {
        pthread_mutex_lock(&mu);
        m->busy--;
        pthread_mutex_unlock(&mu);
        free(p);
        return -1;
    }
    p->buf = sl_xmalloc(PART_BUF);
    *out = p;
    return 0;
}

static int part_flush(struct sl_mpt_part *p, struct sl_err *err)
{
    const char *c = p->buf;
    size_t n = p->blen;
    uint64_t off = p->base + p->size - p->blen;
    while (n) {
        ssize_t w = pwrite(p->fd, c, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return sl_errf(err, SL_EIO, "writing part %d: %s", p->no, strerror(errno));
        c += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    p->blen = 0;
    return 0;
}

int sl_mpt_part_write(struct sl_mpt_part *p, const void *data, size_t n, struct sl_err *err)
{
    if (p->size + n > p->want)
        return sl_errf(err, SL_EINVAL, "part %d: more bytes than its Content-Length (%llu)", p->no,
                       (unsigned long long)p->want);
    const char *c = data;
    while (n) {
        size_t k = SL_MIN(n, PART_BUF - p->blen);
        memcpy(p->buf + p->blen, c, k);
        p->blen += k;
        p->size += k;
        c += k;
        n -= k;
        if (p->blen == PART_BUF && part_flush(p, err) < 0)
            return -1;
    }
    return 0;
}

int sl_mpt_part_append(const struct sl_bck *b, const char *name, size_t nlen, const char *id, const char *partno,
                       int64_t size, struct sl_mpt_part **out, struct sl_err *err)
{
    *out = NULL;
    long no = part_no(b, name, nlen, id, partno, err);
    if (no < 0)
        return -1;
    pthread_mutex_lock(&mu);
    struct mpt *m = mpt_find(b, name, nlen, id, err);
    if (!m) {
        pthread_mutex_unlock(&mu);
        return -1;
    }
    int i = 0;
    while (i < m->nparts && m->parts[i].no != no)
        i++;
    if (i < m->nparts && m->parts[i].appending) {
        pthread_mutex_unlock(&mu);
        return sl_errf(err, SL_EBUSY, "%s/%.*s: part %ld of upload \"%s\" is being appended to by another request; "
                       "send the appends one after another", b->name, (int)SL_MIN(nlen, 200), name, no, id);
    }
    if (i == m->nparts) {
        m->parts = sl_xrealloc(m->parts, (size_t)(m->nparts + 1) * sizeof(*m->parts));
        m->parts[m->nparts++] = (struct part){ .no = (int)no, .fd = -2 }; /* its file: below */
    }
    struct part held = m->parts[i];
    m->parts[i].appending = true;
    m->busy++;
    pthread_mutex_unlock(&mu);
    struct sl_mpt_part *p = sl_xcalloc(1, sizeof(*p));
    *p = (struct sl_mpt_part){ .m = m, .no = (int)no, .fd = held.fd, .append = true, .had = held.size,
                               .size = held.size, .open_len = size < 0,
                               .want = size < 0 ? UINT64_MAX : held.size + (uint64_t)size };
    if (held.fd >= 0)
        snprintf(p->file, sizeof(p->file), "%s", held.file);
    if (held.fd < 0) {
        /* new, or placed in the work file: it goes on in a file of its own */
        int rc = (p->fd = part_file(m, (int)no, p->file, err)) < 0 ? -1 : 0;
        char *buf = rc == 0 && held.size ? sl_xmalloc(1024 * 1024) : NULL;
        int wfd = held.fd == -1 ? sl_put_fd(m->p) : -1;
        for (uint64_t done = 0; rc == 0 && done < held.size;) {
            ssize_t r = pread(wfd, buf, (size_t)SL_MIN((uint64_t)1024 * 1024, held.size - done),
                              (off_t)((uint64_t)(no - 1) * m->slot + done));
            if (r <= 0 || pwrite(p->fd, buf, (size_t)r, (off_t)done) != r)
                rc = sl_errf(err, SL_EIO, "part %ld: moving it out of the work file: %s", no,
                             r < 0 || r > 0 ? strerror(errno) : "short file");
            done += r > 0 ? (uint64_t)r : 0;
        }
        free(buf);
        if (rc < 0) {
            pthread_mutex_lock(&mu);
            for (i = 0; m->parts[i].no != no; i++) /* (others may have come and gone meanwhile) */
                ;
            m->parts[i].appending = false;
            if (held.fd == -2) { /* (the slot made above: gone again) */
                memmove(&m->parts[i], &m->parts[i + 1], (size_t)(m->nparts - i - 1) * sizeof(*m->parts));
                m->nparts--;
            }
            m->busy--;
            pthread_mutex_unlock(&mu);
            if (p->fd >= 0) {
                close(p->fd);
                part_unlink(m, p->file);
            }
            free(p);
            return -1;
        }
    }
    p->buf = sl_xmalloc(PART_BUF);
    *out = p;
    return 0;
}

void sl_mpt_part_handle(const struct sl_mpt_part *p, char *out, size_t n)
{
    snprintf(out, n, "%s|mpt|%s|%d", G.id, p->m->id, p->no);
}

int sl_mpt_part_flush(const struct sl_bck *b, const char *name, size_t nlen, const char *id, const char *partno,
                      const char *handle, struct sl_err *err)
{
    char want[160];
    pthread_mutex_lock(&mu);
    struct mpt *m = mpt_find(b, name, nlen, id, err);
    int rc = m ? 0 : -1;
    if (m) {
        snprintf(want, sizeof(want), "%s|mpt|%s|%s", G.id, m->id, partno ? partno : "");
        int i = 0;
        while (i < m->nparts && (!partno || m->parts[i].no != atoi(partno)))
            i++;
        if (strcmp(handle, want))
            rc = sl_errf(err, SL_EINVAL, "%s/%.*s: append handle \"%s\" is not part %s of upload \"%s\" (expected "
                         "the handle the last append to that part returned)", b->name, (int)SL_MIN(nlen, 200), name,
                         handle, partno ? partno : "", id);
        else if (i == m->nparts || !m->parts[i].size)
            rc = sl_errf(err, SL_EINVAL, "%s/%.*s: part %s of upload \"%s\" holds no bytes: append some first",
                         b->name, (int)SL_MIN(nlen, 200), name, partno, id);
        else
            m->used_s = sl_now_ns() / 1000000000;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

/* the part's bytes durable (write_policy.data), then its record: before its 200 */
static int part_durable(struct sl_mpt_part *p, int64_t at, struct sl_err *err)
{
    struct mpt *m = p->m;
    if (sl_store_sync_data()) {
        if (fdatasync(p->fd) < 0)
            return sl_errf(err, SL_EIO, "part %d: syncing it to disk: %s; the part was not kept", p->no,
                           strerror(errno));
        char *d = p->placed ? NULL : mpt_path(m->mp, m->id, NULL); /* (its file's name) */
        int rc = d ? sl_fsync_dir(d) : 0;
        free(d);
        if (rc < 0)
            return sl_errf(err, SL_EIO, "part %d: syncing its directory: %s; the part was not kept", p->no,
                           strerror(errno));
    }
    struct part pt = { .no = p->no, .size = p->size, .at = at, .info = p->info };
    snprintf(pt.file, sizeof(pt.file), "%s", p->placed ? "" : p->file);
    return part_rec_put(m, &pt, err);
}

int sl_mpt_part_end(struct sl_mpt_part *p, bool ok, struct sl_err *err)
{
    int rc = 0;
    int64_t at = sl_now_ns();
    if (ok && p->blen)
        rc = part_flush(p, err);
    if (ok && rc == 0 && !p->open_len && p->size != p->want)
        rc = sl_errf(err, SL_EINVAL, "part %d: received %llu bytes, Content-Length promised %llu; the part was not "
                     "kept", p->no, (unsigned long long)(p->size - p->had), (unsigned long long)(p->want - p->had));
    if (ok && rc == 0)
        rc = part_durable(p, at, err);
    char old[24] = "";          /* the file of the part this one replaces */
    bool unrecord = false;      /* its record goes too */
    pthread_mutex_lock(&mu);
    struct mpt *m = p->m;
    m->busy--;
    m->used_s = sl_now_ns() / 1000000000;
    int i = 0;
    while (i < m->nparts && m->parts[i].no != p->no)
        i++;
    if (p->append) {
        /* the part's file is the append's: back with what it holds now (a
         * failed append's bytes past the old end are never read) */
        m->parts[i].appending = false;
        m->parts[i].fd = p->fd;
        m->parts[i].size = ok && rc == 0 ? p->size : p->had;
        snprintf(m->parts[i].file, sizeof(m->parts[i].file), "%s", p->file);
        if (ok && rc == 0) {
            m->parts[i].at = at;
            free(m->parts[i].info);
            m->parts[i].info = p->info;
            p->info = NULL;
        }
        p->fd = -1;
        if (!m->parts[i].size) { /* a first append that failed: no part */
            close(m->parts[i].fd);
            snprintf(old, sizeof(old), "%s", m->parts[i].file);
            free(m->parts[i].info);
            memmove(&m->parts[i], &m->parts[i + 1], (size_t)(m->nparts - i - 1) * sizeof(*m->parts));
            m->nparts--;
        }
    } else if (ok && rc == 0) {
        if (i == m->nparts) {
            m->parts = sl_xrealloc(m->parts, (size_t)(m->nparts + 1) * sizeof(*m->parts));
            m->nparts++;
        } else {
            if (m->parts[i].fd >= 0)
                close(m->parts[i].fd); /* sent again: the new one wins */
            snprintf(old, sizeof(old), "%s", m->parts[i].file);
            free(m->parts[i].info);
        }
        m->parts[i] = (struct part){ .no = p->no, .fd = p->placed ? -1 : p->fd, .size = p->size, .at = at,
                                     .info = p->info };
        snprintf(m->parts[i].file, sizeof(m->parts[i].file), "%s", p->placed ? "" : p->file);
        p->info = NULL;
        if (!p->placed)
            p->fd = -1;
    } else if (p->placed && i < m->nparts && m->parts[i].fd < 0) {
        /* a failed re-send may have overwritten the placed copy of this part */
        free(m->parts[i].info);
        memmove(&m->parts[i], &m->parts[i + 1], (size_t)(m->nparts - i - 1) * sizeof(*m->parts));
        m->nparts--;
        unrecord = true;
    }
    pthread_mutex_unlock(&mu);
    if (!p->placed && p->fd >= 0) {
        close(p->fd);
        if (!p->append)
            part_unlink(m, p->file); /* (not kept) */
    }
    if (old[0] && strcmp(old, p->file))
        part_unlink(m, old);
    if (unrecord)
        rec_del(m->mp, m->id, p->no);
    free(p->info);
    free(p->buf);
    free(p);
    return rc;
}

static int part_cmp(const void *a, const void *b)
{
    return ((const struct part *)a)->no - ((const struct part *)b)->no;
}

/* take the upload out of the table for complete/abort (mu not held) */
static struct mpt *mpt_take(const struct sl_bck *b, const char *name, size_t nlen, const char *id,
                            struct sl_err *err)
{
    pthread_mutex_lock(&mu);
    struct mpt *m = mpt_find(b, name, nlen, id, err);
    if (m && m->busy) {
        sl_errf(err, SL_EBUSY, "multipart upload \"%s\" still has parts arriving: wait for them first", id);
        m = NULL;
    }
    if (m)
        m->ending = true;
    pthread_mutex_unlock(&mu);
    return m;
}

static void mpt_remove(struct mpt *m)
{
    pthread_mutex_lock(&mu);
    for (struct mpt **pp = &mpts; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    pthread_mutex_unlock(&mu);
    struct sl_mpath *mp = m->mp;
    char id[24];
    snprintf(id, sizeof(id), "%s", m->id);
    mpt_free(m);
    mpt_forget(mp, id);
}

/* every part in place: parts 1..n-1 fill their slots, the last fits its own */
static bool all_placed(const struct mpt *m)
{
    for (int i = 0; i < m->nparts; i++)
        if (m->parts[i].fd >= 0 || (i + 1 < m->nparts && m->parts[i].size != m->slot))
            return false;
    return true;
}

/* the parts in order into a new work file */
static int copy_parts(const struct sl_bck *b, const char *name, size_t nlen, struct mpt *m, uint64_t max,
                      struct sl_objmd *out, struct sl_err *err)
{
    struct sl_put *p = NULL;
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1 };
    int rc = sl_put_begin(b, name, nlen, &o, &p, err);
    char *buf = sl_xmalloc(1024 * 1024);
    int wfd = sl_put_fd(m->p);
    for (int i = 0; i < m->nparts && rc == 0; i++) {
        int fd = m->parts[i].fd >= 0 ? m->parts[i].fd : wfd;
        uint64_t base = m->parts[i].fd >= 0 ? 0 : (uint64_t)(m->parts[i].no - 1) * m->slot, done = 0;
        while (rc == 0 && done < m->parts[i].size) {
            ssize_t r = pread(fd, buf, (size_t)SL_MIN((uint64_t)1024 * 1024, m->parts[i].size - done),
                              (off_t)(base + done));
            if (r <= 0)
                rc = sl_errf(err, SL_EIO, "reading part %d back: %s", m->parts[i].no,
                             r < 0 ? strerror(errno) : "short file");
            else
                rc = sl_put_write(p, buf, (size_t)r, err);
            done += r > 0 ? (uint64_t)r : 0;
        }
    }
    free(buf);
    if (rc == 0) {
        sl_put_set_chunks(p, (uint32_t)m->nparts, max);
        rc = sl_put_commit(p, out, err);
        p = NULL;
    }
    sl_put_abort(p);
    return rc;
}

int sl_mpt_complete(const struct sl_bck *b, const char *name, size_t nlen, const char *id, const json_t *parts,
                    struct sl_objmd *out, struct sl_err *err)
{
    if (!json_is_array(parts))
        return sl_errf(err, SL_EINVAL, "mpt-complete: nil parts list: the value must be [{\"part-number\": 1, "
                       "\"etag\": \"\"}, ...]");
    struct mpt *m = mpt_take(b, name, nlen, id, err);
    if (!m)
        return -1;
    int rc = 0;
    size_t n = json_array_size(parts);
    int *nos = sl_xcalloc(n + 1, sizeof(int));
    for (size_t i = 0; i < n && rc == 0; i++) {
        json_t *e = json_array_get(parts, i);
        json_t *pn = json_object_get(e, "part-number");
        if (!json_is_integer(pn))
            rc = sl_errf(err, SL_EINVAL, "mpt-complete: entry %zu has no integer \"part-number\"", i);
        else
            nos[i] = (int)json_integer_value(pn);
    }
    if (rc == 0 && (n == 0 || m->nparts == 0))
        rc = sl_errf(err, SL_EINVAL, "mpt-complete: no parts (%s): upload at least one part and list it",
                     n ? "none uploaded" : "the list is empty");
    if (rc == 0 && n != (size_t)m->nparts)
        rc = sl_errf(err, SL_EUNSUPP, "partial completion is not allowed: requested %zu parts, have %d", n,
                     m->nparts);
    if (rc == 0)
        qsort(m->parts, (size_t)m->nparts, sizeof(*m->parts), part_cmp);
    for (size_t i = 0; i < n && rc == 0; i++) {
        int found = 0;
        for (size_t k = 0; k < n; k++)
            found += nos[k] == (int)i + 1;
        if (found != 1 || m->parts[i].no != (int)i + 1)
            rc = sl_errf(err, SL_EINVAL, "parts must be exactly 1..%zu: part %zu is %s", n, i + 1,
                         found != 1 ? "missing from the list or listed twice" : "not uploaded");
    }
    free(nos);
    if (rc < 0) {
        pthread_mutex_lock(&mu);
        m->ending = false; /* the upload stays: fix the list and complete again */
        pthread_mutex_unlock(&mu);
        return -1;
    }
    uint64_t max = 0;
    for (int i = 0; i < m->nparts; i++)
        max = SL_MAX(max, m->parts[i].size);
    if (all_placed(m)) {
        sl_put_set_chunks(m->p, (uint32_t)m->nparts, max);
        uint64_t total = (uint64_t)(m->nparts - 1) * m->slot + m->parts[m->nparts - 1].size;
        struct sl_put *p = m->p;
        rc = sl_put_adopt(p, total, err);
        sl_put_set_s3ver(p, b->s3ver); /* a new version in an S3-versioned bucket (store.h) */
        if (rc == 0) {
            m->p = NULL;
            rc = sl_put_commit(p, out, err);
        }
    } else {
        rc = copy_parts(b, name, nlen, m, max, out, err);
    }
    mpt_remove(m);
    return rc;
}

int sl_mpt_abort(const struct sl_bck *b, const char *name, size_t nlen, const char *id, struct sl_err *err)
{
    struct mpt *m = mpt_take(b, name, nlen, id, err);
    if (!m)
        return -1;
    mpt_remove(m);
    return 0;
}

void sl_mpt_foreach(void (*fn)(void *arg, const struct sl_mpt_view *v), void *arg)
{
    pthread_mutex_lock(&mu);
    for (struct mpt *m = mpts; m; m = m->next) {
        if (m->ending)
            continue;
        struct sl_mpt_view v = { .b = &m->b, .name = m->name, .nlen = m->nlen, .id = m->id, .created = m->created,
                                 .info = m->info, .nparts = m->nparts };
        struct sl_mpt_view_part *vp = sl_xcalloc((size_t)m->nparts + 1, sizeof(*vp));
        for (int i = 0; i < m->nparts; i++)
            vp[i] = (struct sl_mpt_view_part){ m->parts[i].no, m->parts[i].size, m->parts[i].at, m->parts[i].info };
        v.parts = vp;
        fn(arg, &v);
        free(vp);
    }
    pthread_mutex_unlock(&mu);
}

/* ---- start-up: the uploads of the last run back ---- */

struct rec {
    char id[24];
    int no;                     /* 0: the upload's own */
    json_t *v;
};

struct recs {
    struct rec *r;
    int n;
};

static int rec_cb(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
{
    struct recs *rs = arg;
    const char *id = key + strlen(MPU_KEY), *end = key + klen;
    const char *sl = memchr(id, '/', (size_t)(end - id));
    json_t *v = json_loadb(val, vlen, 0, NULL);
    if (!sl || sl - id >= 24 || !v) {
        json_decref(v);
        return 0;
    }
    rs->r = sl_xrealloc(rs->r, (size_t)(rs->n + 1) * sizeof(*rs->r));
    struct rec *r = &rs->r[rs->n++];
    snprintf(r->id, sizeof(r->id), "%.*s", (int)(sl - id), id);
    r->no = sl + 1 < end && sl[1] == 'p' ? atoi(sl + 2) : 0;
    r->v = v;
    return 0;
}

static const char *jstr(json_t *v, const char *k)
{
    const char *s = json_string_value(json_object_get(v, k));
    return s ? s : "";
}

/* one upload of the last run from its records on mp: into the table, or
 * its records and files removed (its bucket or its work file gone) */
static void mpt_revive(struct sl_mpath *mp, const struct sl_bmd *bmd, struct recs *rs, int at)
{
    json_t *v = rs->r[at].v;
    const char *id = rs->r[at].id;
    const struct sl_bck *b = sl_bmd_find(bmd, jstr(v, "prov"), jstr(v, "bck"));
    const char *name = jstr(v, "name");
    size_t nlen = json_string_length(json_object_get(v, "name"));
    struct sl_err err = { 0 };
    char rel[64];
    snprintf(rel, sizeof(rel), ".shale/mpu/%s/w", id);
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1, .work_rel = rel, .work_mp = mp };
    struct mpt *m = sl_xcalloc(1, sizeof(*m));
    if (!b || (uint64_t)json_integer_value(json_object_get(v, "bid")) != b->bid) {
        sl_logi("multipart upload %s of %s/%.*s: its bucket is gone: removed", id, jstr(v, "bck"),
                (int)SL_MIN(nlen, 200), name);
        goto drop;
    }
    if (sl_put_begin(b, name, nlen, &o, &m->p, &err) < 0) {
        sl_logw("multipart upload %s of %s/%.*s cannot go on after the restart: %s; removed", id, b->name,
                (int)SL_MIN(nlen, 200), name, err.msg);
        goto drop;
    }
    snprintf(m->id, sizeof(m->id), "%s", id);
    bck_copy(&m->b, b);
    m->name = sl_xstrndup(name, nlen);
    m->nlen = nlen;
    m->mp = mp;
    m->used_s = sl_now_ns() / 1000000000;
    m->created = (int64_t)json_integer_value(json_object_get(v, "created"));
    if (json_is_string(json_object_get(v, "info")))
        m->info = sl_xstrdup(jstr(v, "info"));
    struct stat st;
    uint64_t wsize = fstat(sl_put_fd(m->p), &st) == 0 ? (uint64_t)st.st_size : 0;
    for (int i = 0; i < rs->n; i++) {
        struct rec *r = &rs->r[i];
        if (!r->no || strcmp(r->id, id))
            continue;
        struct part pt = { .no = r->no, .fd = -1 };
        pt.size = (uint64_t)json_integer_value(json_object_get(r->v, "size"));
        pt.at = (int64_t)json_integer_value(json_object_get(r->v, "at"));
        snprintf(pt.file, sizeof(pt.file), "%s", jstr(r->v, "file"));
        uint64_t slot = (uint64_t)json_integer_value(json_object_get(r->v, "slot"));
        bool here;
        if (pt.file[0]) {
            char *path = mpt_path(mp, id, pt.file);
            pt.fd = open(path, O_RDWR | O_CLOEXEC);
            here = pt.fd >= 0 && fstat(pt.fd, &st) == 0 && (uint64_t)st.st_size >= pt.size;
            free(path);
        } else {
            if (slot)
                m->slot = slot;
            here = slot && wsize >= (uint64_t)(pt.no - 1) * slot + pt.size;
        }
        if (!here) { /* (its bytes were not where its record says: never acknowledged so) */
            sl_logw("multipart upload %s of %s/%.*s: part %d was lost in the restart: send it again", id, b->name,
                    (int)SL_MIN(nlen, 200), name, pt.no);
            if (pt.fd >= 0)
                close(pt.fd);
            continue;
        }
        if (json_is_string(json_object_get(r->v, "info")))
            pt.info = sl_xstrdup(jstr(r->v, "info"));
        m->parts = sl_xrealloc(m->parts, (size_t)(m->nparts + 1) * sizeof(*m->parts));
        m->parts[m->nparts++] = pt;
    }
    sl_logi("multipart upload %s of %s/%.*s taken back after the restart with %d part(s)", id, b->name,
            (int)SL_MIN(nlen, 200), name, m->nparts);
    pthread_mutex_lock(&mu);
    m->next = mpts;
    mpts = m;
    pthread_mutex_unlock(&mu);
    return;
drop:
    free(m);
    mpt_forget(mp, id);
}

int sl_mpt_recover(void)
{
    int n = 0;
    struct sl_bmd *bmd = sl_bmd_get();
    for (int i = 0; i < sl_store_nmpaths(); i++) {
        struct sl_mpath *mp = sl_store_mpath(i);
        if (!mp || sl_store_mpath_gone(mp))
            continue;
        struct recs rs = { 0 };
        sl_md_aux_foreach(mp->md, MPU_KEY, strlen(MPU_KEY), rec_cb, &rs);
        for (int k = 0; k < rs.n; k++)
            if (!rs.r[k].no) {
                mpt_revive(mp, bmd, &rs, k);
                n++;
            }
        /* what has no upload record: files of an upload that was never
         * acknowledged, or parts' records whose upload went */
        char *top = sl_xasprintf("%s/.shale/mpu", mp->path);
        DIR *d = opendir(top);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            bool known = false;
            for (int k = 0; k < rs.n && !known; k++)
                known = !rs.r[k].no && !strcmp(rs.r[k].id, de->d_name);
            if (!known) {
                char *p = sl_xasprintf("%s/%s", top, de->d_name);
                sl_rm_rf(p);
                free(p);
            }
        }
        if (d)
            closedir(d);
        free(top);
        for (int k = 0; k < rs.n; k++) {
            bool orphan = rs.r[k].no > 0;
            for (int j = 0; j < rs.n && orphan; j++)
                orphan = !(rs.r[j].no == 0 && !strcmp(rs.r[j].id, rs.r[k].id));
            if (orphan)
                rec_del(mp, rs.r[k].id, rs.r[k].no);
        }
        for (int k = 0; k < rs.n; k++)
            json_decref(rs.r[k].v);
        free(rs.r);
    }
    sl_bmd_put(bmd);
    return n;
}
