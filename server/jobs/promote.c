/* SPDX-License-Identifier: MIT
 * promote.c: files already on a target's disk become objects (spec
 * native-gaps.md §5.2):
 *
 *   POST /v1/objects/B {"action": "promote", "name": SRC,
 *                       "value": {"src": SRC, "obj", "rcr", "ovw", "dls", "notshr", "tid"}}  -> job id (text)
 *
 * SRC is an absolute path inside promote.dir (configuration; AIStore's
 * /var/lib/ais/promote), a file or a directory ("rcr": with its
 * subdirectories). Its real path (symlinks resolved) must stay inside the
 * real path of promote.dir, and the walk never follows a symlink, so
 * nothing outside that directory is read, moved or deleted. A file becomes
 * object "obj" (default: its base name); a directory's files become
 * "obj" + their path below SRC.
 *
 * The gateway checks the message and starts job "promote" on every target
 * ("tid": on that one only). By default SRC is taken to be one shared
 * directory that every target sees: each target promotes the files whose
 * HRW owner it is. With "notshr" (or "tid") each target's SRC is its own:
 * it promotes every file there, sending those another target owns to it.
 * "ovw": replace existing objects (else they are kept and counted);
 * "dls": delete each source file once its object is stored.
 */
#include "promote.h"
#include "backend.h"
#include "cluster.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "putb.h"
#include "store.h"
#include "xact.h"

#include <dirent.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (256 * 1024)
#define MAX_DEPTH 64
/* Files up to BATCH_OBJ_MAX go to their owner in batches (putb.h) of up to
 * BATCH_OBJS files or BATCH_BYTES: a few syncs per batch instead of an
 * fsync'ed PUT per file. */
#define BATCH_OBJ_MAX (128 * 1024)
#define BATCH_OBJS 128
#define BATCH_BYTES (1 << 20)

struct pargs {
    char id[40];
    char bck[SL_MAX_BCKNAME + 1];
    char *src, *obj, *tid;
    bool rcr, ovw, dls, notshr;
};

static void pargs_free(struct pargs *a)
{
    if (!a)
        return;
    free(a->src);
    free(a->obj);
    free(a->tid);
    free(a);
}

static int get_flag(const json_t *v, const char *k, bool *out, struct sl_err *err)
{
    json_t *x = json_object_get(v, k);
    if (!x || json_is_null(x))
        return 0;
    if (!json_is_boolean(x))
        return sl_errf(err, SL_EINVAL, "promote: \"%s\" must be true or false", k);
    *out = json_is_true(x);
    return 0;
}

/* is path one of AIStore's forms: absolute, no "." or ".." elements */
static int path_check(const char *p, struct sl_err *err)
{
    if (p[0] != '/')
        return sl_errf(err, SL_EINVAL, "invalid promote source \"%s\": must be an absolute path", p);
    for (const char *s = p; *s;) {
        while (*s == '/')
            s++;
        const char *e = strchrnul(s, '/');
        size_t n = (size_t)(e - s);
        if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return sl_errf(err, SL_EINVAL, "invalid promote source \"%s\": must not contain '.' or '..' path "
                           "elements", p);
        s = e;
    }
    return 0;
}

/* p is dir or below it */
static bool under(const char *p, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return !strncmp(p, dir, n) && (p[n] == 0 || p[n] == '/' || (n == 1 && dir[0] == '/'));
}

static int allowed(const char *p, struct sl_err *err)
{
    const char *dir = sl_conf->promote_dir;
    if (!dir || !*dir)
        return sl_errf(err, SL_EINVAL, "promote is off on %s: configuration promote.dir is empty (set it to the "
                       "directory files are promoted from)", G.name);
    if (!under(p, dir))
        return sl_errf(err, SL_EINVAL, "invalid promote source \"%s\": must be under %s (configuration "
                       "promote.dir; to promote from another directory, such as AIStore's /var/lib/ais/promote, "
                       "set it: shale config cluster promote.dir=DIR)", p, dir);
    return 0;
}

static int pargs_parse(const char *name, const json_t *v, struct pargs *a, struct sl_err *err)
{
    if (v && !json_is_object(v) && !json_is_null(v))
        return sl_errf(err, SL_EINVAL, "promote: \"value\" must be an object {\"src\": \"/path\", \"obj\", \"rcr\", "
                       "\"ovw\", \"dls\", \"notshr\", \"tid\"}");
    static const char *const known[] = { "src", "obj", "rcr", "ovw", "dls", "notshr", "tid", "keep", "dst" };
    const char *k = sl_json_unknown_key_exact(v, known, SL_ARRAY_SIZE(known));
    if (k)
        return sl_errf(err, SL_EINVAL, "promote: unknown field \"%s\" (valid: src, obj, rcr, ovw, dls, notshr, tid)",
                       k);
    const char *src = sl_json_str(v, "src", "");
    if (!*src)
        src = name ? name : "";
    if (!*src)
        return sl_errf(err, SL_EINVAL, "promote: give the source path (\"name\" and \"value.src\")");
    if (name && *name && strcmp(name, src))
        return sl_errf(err, SL_EINVAL, "promote: \"name\" (%s) and \"value.src\" (%s) must be the same path", name,
                       src);
    if (path_check(src, err) < 0 || allowed(src, err) < 0)
        return -1;
    if (get_flag(v, "rcr", &a->rcr, err) < 0 || get_flag(v, "ovw", &a->ovw, err) < 0 ||
        get_flag(v, "dls", &a->dls, err) < 0 || get_flag(v, "notshr", &a->notshr, err) < 0)
        return -1;
    const char *obj = sl_json_str(v, "obj", "");
    if (*obj && sl_objname_check(obj, strlen(obj), err) < 0)
        return -1;
    a->src = sl_xstrdup(src);
    a->obj = sl_xstrdup(obj);
    const char *tid = sl_json_str(v, "tid", "");
    a->tid = *tid ? sl_xstrdup(tid) : NULL;
    return 0;
}

static json_t *pargs_json(const struct pargs *a)
{
    return json_pack("{s:s,s:s,s:b,s:b,s:b,s:b,s:s?}", "src", a->src, "obj", a->obj, "rcr", a->rcr, "ovw", a->ovw,
                     "dls", a->dls, "notshr", a->notshr, "tid", a->tid);
}

/* ------------------------------------------------------------------ */
/* a target's share                                                   */
/* ------------------------------------------------------------------ */

struct run {
    struct pargs *a;
    struct sl_bck b;
    struct sl_job *job;
    bool own_all;               /* this target's SRC is its own: every file, sending others' to them */
    char root[PATH_MAX];        /* real path of SRC */
    char err[600];
    uint64_t kept, failed;
    char *buf;
    struct sl_putb_dests *bat;  /* NULL: one PUT per file (a remote-backed bucket: its PUTs write through) */
};

/* a file in a batch: what its answer needs (the directory stays open until
 * the batches are flushed, at the end of the directory's walk) */
struct ftag {
    int dirfd;
    bool mine;
    uint64_t size;
    char *path, *name, *fname;
};

static void fail_once(struct run *u, const char *fmt, ...) SL_PRINTF(2, 3);
static void fail_once(struct run *u, const char *fmt, ...)
{
    u->failed++;
    sl_job_add(&u->job->err_objs, 1);
    if (u->err[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->err, sizeof(u->err), fmt, ap);
    va_end(ap);
}

static int store_here(struct run *u, int fd, const struct stat *st, const char *name, struct sl_err *err)
{
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = (int64_t)st->st_size };
    struct sl_put *p;
    if (sl_put_begin(&u->b, name, strlen(name), &o, &p, err) < 0)
        return -1;
    ssize_t r;
    off_t off = 0;
    while ((r = pread(fd, u->buf, CHUNK, off)) > 0) {
        if (sl_put_write(p, u->buf, (size_t)r, err) < 0) {
            sl_put_abort(p);
            return -1;
        }
        off += r;
    }
    if (r < 0) {
        sl_put_abort(p);
        return sl_errf(err, SL_EIO, "reading: %s", strerror(errno));
    }
    /* into a remote-backed bucket, as a PUT into it: the remote first (a
     * file sent to its owner is such a PUT) */
    if (sl_bck_remote(&u->b) && sl_backend_put_through(&u->b, name, strlen(name), p, err) < 0) {
        sl_put_abort(p);
        return -1;
    }
    return sl_put_commit(p, NULL, err);
}

static int send_to(struct run *u, const struct sl_snode *t, int fd, const struct stat *st, const char *name,
                   struct sl_err *err)
{
    struct sl_buf url;
    sl_buf_init(&url);
    sl_peer_obj_url(&url, t->data_url, u->b.name, u->b.provider, name, strlen(name));
    sl_peer_add_redirect_marks(&url, G.id);
    struct sl_peer_resp r;
    int rc = sl_peer_put_fd(url.p, NULL, 0, fd, (uint64_t)st->st_size, sl_conf->send_file_time_ns / 1000000, &r);
    if (rc < 0 || r.status != 200)
        rc = sl_errf(err, SL_EUNAVAIL, "to t[%s]: %s", t->id, r.err[0] ? r.err : "failed");
    sl_peer_resp_free(&r);
    sl_buf_free(&url);
    return rc;
}

static bool exists_here(struct run *u, const char *name)
{
    struct sl_objmd md;
    struct sl_mpath *mp;
    struct sl_err e2;
    if (sl_obj_stat(&u->b, name, strlen(name), &md, &mp, &e2) != 1)
        return false;
    sl_objmd_free(&md);
    return true;
}

/* does object name exist on target t (its owner)? */
static bool exists_at(struct run *u, const struct sl_snode *t, const char *name)
{
    struct sl_buf url;
    sl_buf_init(&url);
    sl_peer_obj_url(&url, t->data_url, u->b.name, u->b.provider, name, strlen(name));
    struct sl_peer_hdr h[] = { { "Ais-No-Gfn", "true" } };
    struct sl_peer_resp r;
    bool yes = sl_peer_call("HEAD", url.p, h, 1, NULL, 0, sl_conf->cplane_timeout_ns / 1000000, &r) == 0 &&
               r.status == 200;
    sl_peer_resp_free(&r);
    sl_buf_free(&url);
    return yes;
}

/* A file stored, or kept: counted, and deleted when asked to (dls). */
static void file_done(struct run *u, int dirfd, const char *fname, const char *path, const char *name, bool mine,
                      uint64_t size)
{
    sl_job_add(mine ? &u->job->loc_objs : &u->job->out_objs, 1);
    sl_job_add(mine ? &u->job->loc_bytes : &u->job->out_bytes, size);
    if (u->a->dls && unlinkat(dirfd, fname, 0) < 0)
        sl_logw("promote %s: stored %s/%s but could not delete %s: %s", u->a->id, u->b.name, name, path,
                strerror(errno));
}

static void batch_done(void *ctx, void *tag, int rc, const struct sl_err *err)
{
    struct run *u = ctx;
    struct ftag *f = tag;
    if (rc == 0)
        file_done(u, f->dirfd, f->fname, f->path, f->name, f->mine, f->size);
    else if (rc == 1)
        u->kept++;
    else if (rc == -1)
        fail_once(u, "%s -> %s/%s: %s", f->path, u->b.name, f->name, err->msg);
    free(f->path);
    free(f->name);
    free(f->fname);
    free(f);
}

/* Into its owner's batch (t NULL: this target's); 0 or -1 with err. */
static int batch_add(struct run *u, const struct sl_snode *t, int dirfd, int fd, const struct stat *st,
                     const char *fname, const char *path, const char *name, struct sl_err *err)
{
    struct ftag *f = sl_xmalloc(sizeof(*f));
    *f = (struct ftag){ .dirfd = dirfd, .mine = !t, .size = (uint64_t)st->st_size, .path = sl_xstrdup(path),
                        .name = sl_xstrdup(name), .fname = sl_xstrdup(fname) };
    struct sl_objmd md = { .size = (uint64_t)st->st_size };
    if (sl_putb_dests_add(u->bat, t ? t->id : NULL, t ? t->data_url : NULL, name, strlen(name), fd, NULL, &md, f,
                          err) == 0)
        return 0;
    f->dirfd = -1;
    batch_done(u, f, -2, NULL);
    return -1;
}

/* one regular file (opened without following symlinks) -> object name */
static void promote_file(struct run *u, int dirfd, const char *fname, const char *path, const char *name)
{
    struct sl_err err = { 0 };
    if (sl_objname_check(name, strlen(name), &err) < 0) {
        fail_once(u, "%s: %s", path, err.msg);
        return;
    }
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, u->b.provider, u->b.name, name, strlen(name));
    struct sl_smap *sm = sl_smap_get();
    const struct sl_snode *t = G.role == SL_ROLE_STANDALONE ? NULL : sl_smap_hrw_target(sm, un.p, un.len);
    sl_buf_free(&un);
    bool mine = !t || !strcmp(t->id, G.id);
    if (!mine && !u->own_all) {
        sl_smap_put(sm); /* a shared directory: its owner promotes it */
        return;
    }
    /* no atime update: reading a source would otherwise dirty its inode
     * (a journal write per file, for a file often deleted next: dls);
     * O_NOATIME needs the file's owner or CAP_FOWNER, else plain */
    int fd = openat(dirfd, fname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOATIME);
    if (fd < 0 && errno == EPERM)
        fd = openat(dirfd, fname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        sl_smap_put(sm);
        fail_once(u, "%s: %s", path, fd < 0 ? strerror(errno) : "not a regular file");
        return;
    }
    int rc = 0;
    if (u->bat && st.st_size <= BATCH_OBJ_MAX) { /* (its owner keeps what it has unless ovw) */
        rc = batch_add(u, mine ? NULL : t, dirfd, fd, &st, fname, path, name, &err);
        sl_smap_put(sm);
        close(fd);
        if (rc < 0)
            fail_once(u, "%s -> %s/%s: %s", path, u->b.name, name, err.msg);
        return;
    }
    if (!u->a->ovw && (mine ? exists_here(u, name) : exists_at(u, t, name))) {
        u->kept++;
        close(fd);
        sl_smap_put(sm);
        return;
    }
    if (mine)
        rc = store_here(u, fd, &st, name, &err);
    else
        rc = send_to(u, t, fd, &st, name, &err);
    sl_smap_put(sm);
    close(fd);
    if (rc < 0) {
        fail_once(u, "%s -> %s/%s: %s", path, u->b.name, name, err.msg);
        return;
    }
    file_done(u, dirfd, fname, path, name, mine, (uint64_t)st.st_size);
}

/* the files of directory dirfd (path, rel: its path below SRC) */
static void walk(struct run *u, int dirfd, const char *path, const char *rel, int depth)
{
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        fail_once(u, "%s: %s", path, strerror(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) && !sl_job_aborting(u->job)) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        /* the type readdir gives (one lookup less per file: promote_file
         * opens it without following a symlink and checks it is regular);
         * a stat only where the filesystem does not say */
        unsigned char type = e->d_type;
        struct stat st;
        if (type == DT_UNKNOWN) {
            if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue;
            type = S_ISREG(st.st_mode) ? DT_REG : S_ISDIR(st.st_mode) ? DT_DIR : DT_UNKNOWN;
        }
        char *p = sl_xasprintf("%s/%s", path, e->d_name);
        char *r = *rel ? sl_xasprintf("%s/%s", rel, e->d_name) : sl_xstrdup(e->d_name);
        if (type == DT_REG) {
            char *name = sl_xasprintf("%s%s", u->a->obj, r);
            promote_file(u, dirfd, e->d_name, p, name);
            free(name);
        } else if (type == DT_DIR && u->a->rcr) {
            int sub = depth < MAX_DEPTH ? openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                                        : -1;
            if (sub >= 0)
                walk(u, sub, p, r, depth + 1);
            else
                fail_once(u, "%s: %s", p, depth < MAX_DEPTH ? strerror(errno) : "nested too deep");
        }
        /* symlinks and special files: never followed, never read */
        free(p);
        free(r);
    }
    if (u->bat) /* (their answers may delete files of this directory: before it is closed) */
        sl_putb_dests_flush(u->bat, !sl_job_aborting(u->job));
    closedir(d);
}

/* open rel (a path below dirfd) as a directory, never through a symlink
 * and never above dirfd */
static int open_beneath(int dirfd, const char *rel)
{
    struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                            .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
    return (int)syscall(SYS_openat2, dirfd, *rel ? rel : ".", &how, sizeof(how));
}

/* promote.dir may not be, contain or lie inside a mountpath */
static int dir_usable(const char *real_dir)
{
    if (!strcmp(real_dir, "/"))
        return -1;
    for (int i = 0; i < sl_store_nmpaths(); i++) {
        char mp[PATH_MAX];
        if (realpath(sl_store_mpath(i)->path, mp) && (under(mp, real_dir) || under(real_dir, mp)))
            return -1;
    }
    return 0;
}

static void *run_thread(void *arg)
{
    struct run *u = arg;
    char real_dir[PATH_MAX];
    const char *dir = sl_conf->promote_dir;
    /* SRC below promote.dir, as a path relative to it: every element is
     * then opened beneath promote.dir's descriptor without following a
     * symlink, so a directory swapped for a symlink meanwhile leads nowhere */
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    const char *rel = u->a->src + (under(u->a->src, dir) ? dl : 0);
    while (*rel == '/')
        rel++;
    snprintf(u->root, sizeof(u->root), "%s", u->a->src);
    int top = -1;
    if (!dir[0] || !under(u->a->src, dir)) {
        fail_once(u, "invalid promote source \"%s\": must be under %s (configuration promote.dir)", u->a->src,
                  dir[0] ? dir : "(empty: promote is off)");
    } else if (!realpath(dir, real_dir) || (top = open(real_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        fail_once(u, "promote.dir %s on t[%s]: %s", dir, G.id, strerror(errno));
    } else if (dir_usable(real_dir) < 0) {
        fail_once(u, "promote.dir %s (%s) is / or overlaps a mountpath of t[%s]: choose a directory of its own",
                  dir, real_dir, G.id);
    } else if (!*rel) {
        int dfd = open_beneath(top, "");
        if (dfd < 0)
            fail_once(u, "%s: %s", u->root, strerror(errno));
        else
            walk(u, dfd, u->root, "", 0);
    } else {
        char *parent = sl_xstrdup(rel), *slash = strrchr(parent, '/');
        const char *base = slash ? slash + 1 : parent;
        if (slash)
            *slash = 0;
        int pfd = open_beneath(top, slash ? parent : "");
        struct stat st;
        if (pfd < 0) {
            fail_once(u, "invalid promote source \"%s\": %s", u->root,
                      errno == ELOOP || errno == EXDEV ? "it leads outside promote.dir through a symlink"
                                                       : strerror(errno));
        } else if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            fail_once(u, "%s: %s", u->root, strerror(errno));
        } else if (S_ISREG(st.st_mode)) {
            /* one file: object "obj", or its base name */
            promote_file(u, pfd, base, u->root, u->a->obj[0] ? u->a->obj : base);
            if (u->bat)
                sl_putb_dests_flush(u->bat, true);
        } else if (S_ISDIR(st.st_mode)) {
            int dfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (dfd < 0)
                fail_once(u, "%s: %s", u->root, strerror(errno));
            else
                walk(u, dfd, u->root, "", 0);
        } else {
            fail_once(u, "invalid promote source \"%s\": %s", u->root,
                      S_ISLNK(st.st_mode) ? "it is a symlink, and promote follows none (nothing outside promote.dir "
                                            "is read)" : "it is neither a file nor a directory");
        }
        if (pfd >= 0)
            close(pfd);
        free(parent);
    }
    if (top >= 0)
        close(top);
    sl_logi("promote %s: %llu file(s) into %s here, %llu sent, %llu kept (exist), %llu failed%s%s", u->a->id,
            (unsigned long long)u->job->loc_objs, u->b.name, (unsigned long long)u->job->out_objs,
            (unsigned long long)u->kept, (unsigned long long)u->failed, u->err[0] ? ": " : "", u->err);
    if (u->err[0])
        sl_job_fail(u->job, u->err);
    else
        sl_job_finish(u->job, sl_job_aborting(u->job) ? "aborted" : NULL);
    sl_job_put(u->job);
    sl_bck_release(&u->b);
    pargs_free(u->a);
    sl_putb_dests_free(u->bat);
    free(u->buf);
    free(u);
    return NULL;
}

/* start this target's share of a (takes a) */
static int start_here(struct pargs *a, bool own_all, struct sl_err *err)
{
    struct run *u = sl_xcalloc(1, sizeof(*u));
    u->a = a;
    u->own_all = own_all;
    if (sl_bck_resolve(a->bck, "ais", NULL, &u->b, err) < 0) {
        pargs_free(a);
        free(u);
        return -1;
    }
    u->buf = sl_xmalloc(CHUNK);
    if (!sl_bck_remote(&u->b))
        u->bat = sl_putb_dests_new(&u->b, a->ovw ? SL_PUTB_COPY : SL_PUTB_NEW, NULL, BATCH_OBJS, BATCH_BYTES,
                                   batch_done, u);
    u->job = sl_job_start("promote", a->id, a->bck, "");
    sl_run_detached(run_thread, u);
    return 0;
}

/* POST /v1/internal/promote {"id", "bck", "args", "own_all"} */
static void internal_start(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    struct pargs *a = sl_xcalloc(1, sizeof(*a));
    if (!json_is_object(j) || pargs_parse(NULL, json_object_get(j, "args"), a, &err) < 0) {
        if (!err.msg[0])
            sl_errf(&err, SL_EINVAL, "promote start: bad body");
        pargs_free(a);
        json_decref(j);
        sl_resp_err(r, &err);
        return;
    }
    snprintf(a->id, sizeof(a->id), "%s", sl_json_str(j, "id", ""));
    snprintf(a->bck, sizeof(a->bck), "%s", sl_json_str(j, "bck", ""));
    bool own_all = json_is_true(json_object_get(j, "own_all"));
    json_decref(j);
    if (start_here(a, own_all, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
}

static bool promote_internal(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/promote"))
        return false;
    if (r->method != SL_M_POST) {
        sl_resp_method_not_allowed(r, "POST");
        return true;
    }
    sl_req_buffer_body(r, 1024 * 1024, internal_start);
    return true;
}

/* ------------------------------------------------------------------ */
/* the gateway                                                        */
/* ------------------------------------------------------------------ */

static void start_run(struct sl_req *r, void *arg)
{
    struct pargs *a = arg;
    struct sl_err err = { 0 };
    char id[40];
    snprintf(id, sizeof(id), "%s", a->id);
    if (G.role == SL_ROLE_STANDALONE) {
        if (a->tid && strcmp(a->tid, G.id)) {
            sl_resp_errf(r, SL_ENOENT, "promote: node t[%s] not found (this is a single node, t[%s])", a->tid, G.id);
            pargs_free(a);
        } else if (start_here(a, true, &err) < 0) {
            sl_resp_err(r, &err);
        } else {
            sl_resp_text(r, 200, id);
        }
        return;
    }
    json_t *body = json_pack("{s:s,s:s,s:o,s:b}", "id", a->id, "bck", a->bck, "args", pargs_json(a), "own_all",
                             a->notshr || a->tid);
    char *what = sl_xasprintf("promote %s", a->src);
    if (!a->tid) {
        if (sl_tfan_start_job(0, "/v1/internal/promote", body, what, id, &err) < 0)
            sl_resp_err(r, &err);
        else
            sl_resp_text(r, 200, id);
    } else {
        /* "tid": that target only */
        struct sl_smap *sm = sl_smap_get();
        const struct sl_snode *t = sl_smap_find(sm, a->tid);
        if (!t || t->type != SL_NODE_TARGET) {
            sl_resp_errf(r, SL_ENOENT, "promote: target t[%s] is not in the cluster map (the targets: GET "
                         "/v1/daemon?what=smap)", a->tid);
        } else {
            char *url = sl_xasprintf("%s/v1/internal/promote", t->ctrl_url);
            size_t blen;
            char *bs = sl_json_dump(body, 0, &blen);
            struct sl_peer_resp pr;
            int rc = sl_peer_call("POST", url, NULL, 0, bs, blen, sl_conf->cplane_timeout_ns / 1000000, &pr);
            if (rc < 0 || pr.status != 200)
                sl_resp_errf(r, rc < 0 ? SL_EUNAVAIL : sl_code_from_status((int)pr.status), "%s: t[%s]: %s", what,
                             a->tid, pr.err[0] ? pr.err : "no answer");
            else
                sl_resp_text(r, 200, id);
            sl_peer_resp_free(&pr);
            free(bs);
            free(url);
        }
        sl_smap_put(sm);
    }
    free(what);
    json_decref(body);
    pargs_free(a);
}

static bool promote_objects_post(struct sl_req *r, const char *bucket, struct sl_actmsg *m)
{
    if (strcmp(m->action, "promote"))
        return false;
    struct sl_err err = { 0 };
    struct pargs *a = sl_xcalloc(1, sizeof(*a));
    struct sl_bck b;
    if (pargs_parse(m->name, m->value, a, &err) < 0 ||
        sl_bck_resolve(bucket, sl_req_query(r, "provider"), NULL, &b, &err) < 0) {
        pargs_free(a);
        sl_resp_err(r, &err);
        return true;
    }
    snprintf(a->bck, sizeof(a->bck), "%s", b.name);
    sl_bck_release(&b);
    sl_job_id(a->id, sizeof(a->id), "");
    sl_req_offload(r, start_run, (void (*)(void *))pargs_free, a);
    return true;
}

const struct sl_module sl_promote_module = {
    .name = "promote",
    .internal = promote_internal,
    .objects_post = promote_objects_post,
};
