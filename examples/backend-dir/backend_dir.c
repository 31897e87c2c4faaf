/* SPDX-License-Identifier: MIT
 * backend_dir.c: an out-of-tree Shale backend plugin, the smallest whole
 * one: the "remote" is a directory tree (an NFS mount, say) that stands in
 * for Google Cloud Storage, provider "gcp" (gs:// buckets).
 *
 *   gs://BUCKET/KEY  is  $SHALE_GS_ROOT/BUCKET/KEY
 *
 * HEAD a bucket: the directory exists. HEAD/GET an object: stat/pread of the
 * file (a range too). PUT: a temporary file renamed into place. DELETE:
 * unlink. List: the bucket's files under a prefix, in byte order, a page at a
 * time (the token is the last name of the page). A version of an object is
 * its size and mtime.
 *
 * Every operation may run on many threads at once and blocks: nothing here
 * is shared between calls, so nothing needs a lock. Errors say what
 * happened, to which object, and what to do; SL_PLUG_EREMOTE carries the
 * status the host maps (404: not there).
 */
#include <shale/plugin.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[4096];

static int fail(int rc, int *status, int st, char *err, size_t errlen, const char *fmt, ...) SL_PLUGIN_PRINTF(6, 7);
static int fail(int rc, int *status, int st, char *err, size_t errlen, const char *fmt, ...)
{
    if (status)
        *status = st;
    if (errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* ROOT/BUCKET[/KEY] into out; -1 for a name that would leave the root */
static int path_of(const struct sl_backend_bck *b, const char *key, size_t klen, char *out, size_t n)
{
    if (strchr(b->name, '/') || !strcmp(b->name, "..") || (key && sl_plugin_member_name_check(key, klen)))
        return -1;
    int w = key ? snprintf(out, n, "%s/%s/%.*s", root, b->name, (int)klen, key)
                : snprintf(out, n, "%s/%s", root, b->name);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

static void obj_of(const struct stat *st, struct sl_backend_obj *o)
{
    o->size = st->st_size;
    o->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
    snprintf(o->etag, sizeof(o->etag), "%llx-%llx", (unsigned long long)st->st_size,
             (unsigned long long)o->mtime_ns);
    o->version[0] = 0;
}

static int dir_head_bucket(void *s, const struct sl_backend_bck *b, int *status, char *err, size_t errlen)
{
    (void)s;
    char p[4200];
    struct stat st;
    if (path_of(b, NULL, 0, p, sizeof(p)) < 0 || stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
        return fail(SL_PLUG_EREMOTE, status, 404, err, errlen, "gs://%s: no directory %s/%s", b->name, root,
                    b->name);
    *status = 200;
    return SL_PLUG_OK;
}

static int dir_head_object(void *s, const struct sl_backend_bck *b, const char *name, size_t len,
                           struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)s;
    char p[8400];
    struct stat st;
    if (path_of(b, name, len, p, sizeof(p)) < 0)
        return fail(SL_PLUG_EINVAL, status, 400, err, errlen, "gs://%s/%.*s: not a file name under the bucket",
                    b->name, (int)len, name);
    if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
        return fail(SL_PLUG_EREMOTE, status, 404, err, errlen, "gs://%s/%.*s: no file %s", b->name, (int)len, name,
                    p);
    obj_of(&st, o);
    *status = 200;
    return SL_PLUG_OK;
}

static int dir_get_object(void *s, const struct sl_backend_bck *b, const char *name, size_t len, int64_t off,
                          int64_t n, sl_backend_sink_fn sink, void *ctx, struct sl_backend_obj *o, int *status,
                          char *err, size_t errlen)
{
    int rc = dir_head_object(s, b, name, len, o, status, err, errlen);
    if (rc != SL_PLUG_OK)
        return rc;
    char p[8400];
    path_of(b, name, len, p, sizeof(p));
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(SL_PLUG_EIO, status, 0, err, errlen, "gs://%s/%.*s: %s: %s", b->name, (int)len, name, p,
                    strerror(errno));
    int64_t end = n < 0 || off + n > o->size ? o->size : off + n;
    char buf[256 * 1024];
    rc = SL_PLUG_OK;
    while (off < end) {
        ssize_t r = pread(fd, buf, (size_t)(end - off < (int64_t)sizeof(buf) ? end - off : (int64_t)sizeof(buf)),
                          off);
        if (r <= 0) {
            rc = fail(SL_PLUG_EIO, status, 0, err, errlen, "gs://%s/%.*s: reading %s: %s", b->name, (int)len, name,
                      p, r < 0 ? strerror(errno) : "the file got shorter");
            break;
        }
        if (sink(ctx, buf, (size_t)r)) {
            rc = fail(SL_PLUG_EIO, status, 0, err, errlen, "gs://%s/%.*s: the receiving side stopped", b->name,
                      (int)len, name);
            break;
        }
        off += r;
    }
    close(fd);
    return rc;
}

static int mkdirs(char *p) /* the parents of file p */
{
    for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = 0;
        int rc = mkdir(p, 0755);
        *s = '/';
        if (rc < 0 && errno != EEXIST)
            return -1;
    }
    return 0;
}

static int dir_put_object(void *s, const struct sl_backend_bck *b, const char *name, size_t len, int fd,
                          int64_t size, struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)s;
    char p[8400], tmp[8500];
    if (path_of(b, name, len, p, sizeof(p)) < 0)
        return fail(SL_PLUG_EINVAL, status, 400, err, errlen, "gs://%s/%.*s: not a file name under the bucket",
                    b->name, (int)len, name);
    snprintf(tmp, sizeof(tmp), "%s.part-%d", p, (int)getpid());
    int out = mkdirs(p) < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0)
        return fail(SL_PLUG_EIO, status, 0, err, errlen, "gs://%s/%.*s: cannot create %s: %s", b->name, (int)len,
                    name, tmp, strerror(errno));
    char buf[256 * 1024];
    int64_t off = 0;
    while (off < size) {
        ssize_t r = pread(fd, buf, (size_t)(size - off < (int64_t)sizeof(buf) ? size - off : (int64_t)sizeof(buf)),
                          off);
        if (r <= 0 || write(out, buf, (size_t)r) != r)
            break;
        off += r;
    }
    struct stat st;
    if (off != size || fsync(out) < 0 || close(out) < 0 || rename(tmp, p) < 0 || stat(p, &st) < 0) {
        int e = errno;
        unlink(tmp);
        return fail(SL_PLUG_EIO, status, 0, err, errlen, "gs://%s/%.*s: writing %s failed: %s", b->name, (int)len,
                    name, p, strerror(e));
    }
    obj_of(&st, o);
    *status = 200;
    return SL_PLUG_OK;
}

static int dir_delete_object(void *s, const struct sl_backend_bck *b, const char *name, size_t len, int *status,
                             char *err, size_t errlen)
{
    (void)s;
    char p[8400];
    if (path_of(b, name, len, p, sizeof(p)) < 0)
        return fail(SL_PLUG_EINVAL, status, 400, err, errlen, "gs://%s/%.*s: not a file name under the bucket",
                    b->name, (int)len, name);
    if (unlink(p) < 0 && errno != ENOENT)
        return fail(SL_PLUG_EIO, status, 0, err, errlen, "gs://%s/%.*s: %s: %s", b->name, (int)len, name, p,
                    strerror(errno));
    *status = 204;
    return SL_PLUG_OK;
}

/* ---- listing: every file name under the bucket, sorted ---- */

struct names {
    char **v;
    size_t n, cap;
};

static void walk(const char *dir, const char *rel, struct names *ns)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        char p[8400], r[4200];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        snprintf(r, sizeof(r), "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        struct stat st;
        if (stat(p, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            walk(p, r, ns);
        } else if (S_ISREG(st.st_mode) && !strstr(e->d_name, ".part-")) {
            if (ns->n == ns->cap) {
                ns->cap = ns->cap ? 2 * ns->cap : 256;
                ns->v = realloc(ns->v, ns->cap * sizeof(*ns->v));
            }
            ns->v[ns->n++] = strdup(r);
        }
    }
    closedir(d);
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int dir_list_page(void *s, const struct sl_backend_bck *b, const char *prefix, const char *token, int max,
                         sl_backend_list_fn cb, void *ctx, char *next, size_t next_len, int *status, char *err,
                         size_t errlen)
{
    int rc = dir_head_bucket(s, b, status, err, errlen);
    if (rc != SL_PLUG_OK)
        return rc;
    char p[4200];
    path_of(b, NULL, 0, p, sizeof(p));
    struct names ns = { 0 };
    walk(p, "", &ns);
    qsort(ns.v, ns.n, sizeof(*ns.v), cmp);
    if (next_len)
        next[0] = 0;
    int given = 0;
    for (size_t i = 0; i < ns.n; i++) {
        if ((prefix && strncmp(ns.v[i], prefix, strlen(prefix))) || (token && *token && strcmp(ns.v[i], token) <= 0))
            continue;
        if (given == max) { /* more after this page: its last name is the token */
            snprintf(next, next_len, "%s", ns.v[i - 1]);
            break;
        }
        char fp[8400];
        struct stat st;
        struct sl_backend_obj o;
        memset(&o, 0, sizeof(o));
        snprintf(fp, sizeof(fp), "%s/%s", p, ns.v[i]);
        if (stat(fp, &st) == 0)
            obj_of(&st, &o);
        given++;
        if (cb(ctx, ns.v[i], strlen(ns.v[i]), &o))
            break;
    }
    for (size_t i = 0; i < ns.n; i++)
        free(ns.v[i]);
    free(ns.v);
    return SL_PLUG_OK;
}

static int dir_init(const struct sl_host_api *host, void **state, char *err, size_t errlen)
{
    (void)host;
    *state = NULL;
    const char *r = getenv("SHALE_GS_ROOT");
    struct stat st;
    if (!r || *r != '/' || stat(r, &st) < 0 || !S_ISDIR(st.st_mode))
        return fail(SL_PLUG_EINVAL, NULL, 0, err, errlen, "backend_dir: set SHALE_GS_ROOT to an existing directory "
                    "(absolute) in the nodes' environment: its subdirectories are the gs:// buckets");
    snprintf(root, sizeof(root), "%s", r);
    return SL_PLUG_OK;
}

static const struct sl_backend_ops ops = {
    SL_ABI_INIT(struct sl_backend_ops),
    .provider = "gcp",
    .head_bucket = dir_head_bucket,
    .head_object = dir_head_object,
    .get_object = dir_get_object,
    .put_object = dir_put_object,
    .delete_object = dir_delete_object,
    .list_page = dir_list_page,
};

static const struct sl_plugin desc = {
    SL_ABI_INIT(struct sl_plugin),
    .kind = SL_PLUGIN_BACKEND,
    .name = "dir",
    .version = "1.0.0",
    .description = "example: gs:// buckets that are directories under $SHALE_GS_ROOT",
    .init = dir_init,
    .backend = &ops,
};

SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *host, char *err, size_t errlen)
{
    (void)host, (void)err, (void)errlen;
    return &desc;
}
