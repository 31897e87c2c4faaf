/* SPDX-License-Identifier: MIT
 * upload.c: append sessions and native multipart uploads (upload.h).
 */
#include "upload.h"
#include "cksum.h"
#include "log.h"
#include "node.h"
#include "store.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
};

static struct mpt *mpts;

static void mpt_free(struct mpt *m)
{
    for (int i = 0; i < m->nparts; i++)
        if (m->parts[i].fd >= 0)
            close(m->parts[i].fd);
    free(m->parts);
    sl_put_abort(m->p);
    sl_bck_release(&m->b);
    free(m->name);
    free(m);
}

static void mpt_gc(void)
{
    int64_t now = sl_now_ns() / 1000000000;
    for (struct mpt **pp = &mpts; *pp;) {
        struct mpt *m = *pp;
        if (!m->busy && !m->ending && now - m->used_s > UPLOAD_IDLE_S) {
            *pp = m->next;
            sl_logi("multipart upload %s (%s/%.*s) dropped after %d s without a request", m->id, m->b.name,
                    (int)SL_MIN(m->nlen, 200), m->name, UPLOAD_IDLE_S);
            mpt_free(m);
        } else {
            pp = &m->next;
        }
    }
}

int sl_mpt_create(const struct sl_bck *b, const char *name, size_t nlen, char *id, size_t n, struct sl_err *err)
{
    struct mpt *m = sl_xcalloc(1, sizeof(*m));
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1 };
    if (sl_put_begin(b, name, nlen, &o, &m->p, err) < 0) {
        free(m);
        return -1;
    }
    sl_rand_id(m->id, 16);
    bck_copy(&m->b, b);
    m->name = sl_xstrndup(name, nlen);
    m->nlen = nlen;
    m->used_s = sl_now_ns() / 1000000000;
    pthread_mutex_lock(&mu);
    mpt_gc();
    m->next = mpts;
    mpts = m;
    pthread_mutex_unlock(&mu);
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
};

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
    } else if ((p->fd = sl_store_tmpfd(err)) < 0) {
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
        m->parts[m->nparts++] = (struct part){ (int)no, -2, 0, false }; /* its file: below */
    }
    struct part held = m->parts[i];
    m->parts[i].appending = true;
    m->busy++;
    pthread_mutex_unlock(&mu);
    struct sl_mpt_part *p = sl_xcalloc(1, sizeof(*p));
    *p = (struct sl_mpt_part){ .m = m, .no = (int)no, .fd = held.fd, .append = true, .had = held.size,
                               .size = held.size, .open_len = size < 0,
                               .want = size < 0 ? UINT64_MAX : held.size + (uint64_t)size };
    if (held.fd < 0) {
        /* new, or placed in the work file: it goes on in a file of its own */
        int rc = (p->fd = sl_store_tmpfd(err)) < 0 ? -1 : 0;
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
            if (p->fd >= 0)
                close(p->fd);
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

int sl_mpt_part_end(struct sl_mpt_part *p, bool ok, struct sl_err *err)
{
    int rc = 0;
    if (ok && p->blen)
        rc = part_flush(p, err);
    if (ok && rc == 0 && !p->open_len && p->size != p->want)
        rc = sl_errf(err, SL_EINVAL, "part %d: received %llu bytes, Content-Length promised %llu; the part was not "
                     "kept", p->no, (unsigned long long)(p->size - p->had), (unsigned long long)(p->want - p->had));
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
        p->fd = -1;
        if (!m->parts[i].size) { /* a first append that failed: no part */
            close(m->parts[i].fd);
            memmove(&m->parts[i], &m->parts[i + 1], (size_t)(m->nparts - i - 1) * sizeof(*m->parts));
            m->nparts--;
        }
    } else if (ok && rc == 0) {
        if (i == m->nparts) {
            m->parts = sl_xrealloc(m->parts, (size_t)(m->nparts + 1) * sizeof(*m->parts));
            m->nparts++;
        } else if (m->parts[i].fd >= 0) {
            close(m->parts[i].fd); /* sent again: the new one wins */
        }
        m->parts[i] = (struct part){ p->no, p->placed ? -1 : p->fd, p->size, false };
        if (!p->placed)
            p->fd = -1;
    } else if (p->placed && i < m->nparts && m->parts[i].fd < 0) {
        /* a failed re-send may have overwritten the placed copy of this part */
        memmove(&m->parts[i], &m->parts[i + 1], (size_t)(m->nparts - i - 1) * sizeof(*m->parts));
        m->nparts--;
    }
    pthread_mutex_unlock(&mu);
    if (!p->placed && p->fd >= 0)
        close(p->fd);
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
    mpt_free(m);
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
