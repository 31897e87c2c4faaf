/* SPDX-License-Identifier: MIT
 * object.c: shale put / get / object show / rmo.
 */
#include "cli.h"
#include "jsonx.h"
#include "meta.h"
#include "template.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- upload of one file (or stdin) ---- */

struct up {
    FILE *f;
    struct progress *prog;
    curl_off_t pos;
};

static size_t rd_file(char *buf, size_t sz, size_t n, void *ud)
{
    struct up *u = ud;
    size_t r = fread(buf, 1, sz * n, u->f);
    u->pos += (curl_off_t)r;
    if (u->prog)
        progress_add(u->prog, r);
    if (r == 0 && ferror(u->f))
        return CURL_READFUNC_ABORT;
    return r;
}

static int seek_file(void *ud, curl_off_t off, int origin)
{
    struct up *u = ud;
    if (origin != SEEK_SET)
        return CURL_SEEKFUNC_CANTSEEK;
    if (off == u->pos)
        return CURL_SEEKFUNC_OK;
    if (fseeko(u->f, (off_t)off, SEEK_SET) < 0)
        return CURL_SEEKFUNC_CANTSEEK;
    if (u->prog && off < u->pos)
        progress_add(u->prog, (uint64_t)-(int64_t)(u->pos - off));
    u->pos = off;
    return CURL_SEEKFUNC_OK;
}

static size_t wr_sink(char *p, size_t sz, size_t n, void *ud)
{
    sl_buf_add(ud, p, sz * n);
    return sz * n;
}

/* PUT one object from a file path ("-" = stdin). Returns 0 or fills err. */
static int put_one(CURL *c, const struct uri *u, const char *path, const char *obj, struct progress *prog,
                   char *err, size_t errn)
{
    return cli_put_one_q(c, u, path, obj, "", prog, err, errn);
}

int cli_put_one_q(CURL *c, const struct uri *u, const char *path, const char *obj, const char *xq,
                  struct progress *prog, char *err, size_t errn)
{
    struct up up = { 0 };
    struct stat st;
    bool is_stdin = !strcmp(path, "-");
    if (is_stdin) {
        up.f = stdin;
    } else {
        up.f = fopen(path, "rb");
        if (!up.f || fstat(fileno(up.f), &st) < 0) {
            snprintf(err, errn, "cannot open %s: %s", path, strerror(errno));
            if (up.f)
                fclose(up.f);
            return -1;
        }
    }
    up.prog = prog;
    char *p = uri_obj_path(u, obj);
    char *url = sl_xasprintf("%s%s%s%s", cli_endpoint(), p, uri_query(u), xq);
    free(p);
    struct sl_buf body;
    sl_buf_init(&body);
    struct curl_slist *h = NULL;
    h = curl_slist_append(h, "Content-Type: application/octet-stream");
    h = curl_slist_append(h, "Expect: 100-continue");
    h = cli_auth_hdr(h);
    curl_easy_reset(c);
    cli_curl_opts(c, url);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, rd_file);
    curl_easy_setopt(c, CURLOPT_READDATA, &up);
    curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, seek_file);
    curl_easy_setopt(c, CURLOPT_SEEKDATA, &up);
    if (!is_stdin)
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wr_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_EXPECT_100_TIMEOUT_MS, 10000L);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    int ret = 0;
    if (rc != CURLE_OK) {
        snprintf(err, errn, "PUT %s: %s", url, curl_easy_strerror(rc));
        ret = -1;
    } else if (status != 200) {
        json_error_t je;
        json_t *j = body.len ? json_loadb(body.p, body.len, 0, &je) : NULL;
        const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
        snprintf(err, errn, "%s", m ? m : body.p ? body.p : "failed");
        json_decref(j);
        ret = -1;
    }
    curl_slist_free_all(h);
    sl_buf_free(&body);
    free(url);
    if (!is_stdin)
        fclose(up.f);
    return ret;
}

/* ---- multi-file upload ---- */

struct file {
    char *path;
    char *obj;
    uint64_t size;
};

struct batch {
    struct file *files;
    int n, cap;
    int next;
    int failed;
    pthread_mutex_t mu;
    const struct uri *u;
    struct progress *pobj, *pbytes;
    char **errors;
    bool get;               /* GET objects into files (else PUT files as objects) */
    const char *query;      /* GET: "&k=v..." after the provider */
};

static int get_one(CURL *c, const struct uri *u, const char *obj, const char *out, const char *query,
                   struct curl_slist *hdrs, struct progress *prog, uint64_t *n, bool *epipe, char *err, size_t errn);

static void add_file(struct batch *b, const char *path, const char *obj, uint64_t size)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->files = sl_xrealloc(b->files, (size_t)b->cap * sizeof(*b->files));
    }
    b->files[b->n].path = sl_xstrdup(path);
    b->files[b->n].obj = sl_xstrdup(obj);
    b->files[b->n].size = size;
    b->n++;
}

static int name_cmp(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static int walk(struct batch *b, const char *dir, const char *rel, const char *prefix, bool recursive)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "Error: cannot read directory %s: %s\n", dir, strerror(errno));
        return -1;
    }
    struct dirent *de;
    /* sorted order makes uploads reproducible */
    char **names = NULL;
    int nn = 0, cap = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (nn == cap) {
            cap = cap ? cap * 2 : 64;
            names = sl_xrealloc(names, (size_t)cap * sizeof(char *));
        }
        names[nn++] = sl_xstrdup(de->d_name);
    }
    closedir(d);
    if (nn)
        qsort(names, (size_t)nn, sizeof(*names), name_cmp);
    int rc = 0;
    for (int i = 0; i < nn; i++) {
        char *path = sl_xasprintf("%s/%s", dir, names[i]);
        char *r = rel[0] ? sl_xasprintf("%s/%s", rel, names[i]) : sl_xstrdup(names[i]);
        struct stat st;
        if (stat(path, &st) == 0) {
            if (S_ISDIR(st.st_mode)) {
                if (recursive && walk(b, path, r, prefix, true) < 0)
                    rc = -1;
            } else if (S_ISREG(st.st_mode)) {
                char *obj = sl_xasprintf("%s%s", prefix, r);
                add_file(b, path, obj, (uint64_t)st.st_size);
                free(obj);
            }
        }
        free(path);
        free(r);
        free(names[i]);
    }
    free(names);
    return rc;
}

static void *batch_worker(void *arg)
{
    struct batch *b = arg;
    CURL *c = curl_easy_init();
    for (;;) {
        pthread_mutex_lock(&b->mu);
        int i = b->next < b->n ? b->next++ : -1;
        pthread_mutex_unlock(&b->mu);
        if (i < 0)
            break;
        char err[1024];
        struct file *f = &b->files[i];
        bool epipe;
        int rc = b->get ? get_one(c, b->u, f->obj, f->path, b->query, NULL, NULL, &f->size, &epipe, err, sizeof(err))
                        : put_one(c, b->u, f->path, f->obj, b->pbytes, err, sizeof(err));
        if (rc < 0) {
            pthread_mutex_lock(&b->mu);
            b->failed++;
            b->errors[i] = sl_xstrdup(err);
            pthread_mutex_unlock(&b->mu);
        }
        if (b->pobj) {
            progress_add(b->pobj, 1);
            progress_draw(b->pobj, false);
            if (b->pbytes)
                progress_draw(b->pbytes, false);
        }
    }
    curl_easy_cleanup(c);
    return NULL;
}

/* every file of b with nw threads; each failure printed as "Error: VERB NAME: why" */
static void batch_run(struct batch *b, int nw)
{
    b->errors = sl_xcalloc((size_t)b->n, sizeof(char *));
    nw = SL_MAX(1, SL_MIN(nw, b->n));
    pthread_t *th = sl_xcalloc((size_t)nw, sizeof(pthread_t));
    for (int i = 0; i < nw; i++)
        pthread_create(&th[i], NULL, batch_worker, b);
    for (int i = 0; i < nw; i++)
        pthread_join(th[i], NULL);
    free(th);
    if (b->pobj)
        progress_draw(b->pobj, true);
    if (b->pbytes)
        progress_draw(b->pbytes, true);
    for (int i = 0; i < b->n; i++)
        if (b->errors[i]) {
            fprintf(stderr, "Error: %s %s: %s\n", b->get ? "GET" : "PUT", b->get ? b->files[i].obj : b->files[i].path,
                    b->errors[i]);
            free(b->errors[i]);
        }
    free(b->errors);
    b->errors = NULL;
}

static void batch_free(struct batch *b)
{
    for (int i = 0; i < b->n; i++) {
        free(b->files[i].path);
        free(b->files[i].obj);
    }
    free(b->files);
    progress_free(b->pobj);
    progress_free(b->pbytes);
}

static const char *ext_of(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strchr(base, '.');
    return dot ? dot : "";
}

static void print_summary(struct batch *b)
{
    struct {
        char ext[32];
        int count;
        uint64_t size;
    } ex[64];
    int ne = 0;
    uint64_t total = 0;
    for (int i = 0; i < b->n; i++) {
        const char *e = ext_of(b->files[i].path);
        int k;
        for (k = 0; k < ne; k++)
            if (!strcmp(ex[k].ext, e))
                break;
        if (k == ne && ne < 64) {
            snprintf(ex[ne].ext, sizeof(ex[ne].ext), "%s", e);
            ex[ne].count = 0;
            ex[ne].size = 0;
            ne++;
        }
        if (k < 64) {
            ex[k].count++;
            ex[k].size += b->files[i].size;
        }
        total += b->files[i].size;
    }
    struct table *t = table_new(3, "EXTENSION", "COUNT", "SIZE");
    for (int k = 0; k < ne; k++) {
        char c[32], s[32];
        snprintf(c, sizeof(c), "%d", ex[k].count);
        sl_format_size(ex[k].size, s, sizeof(s));
        table_row(t, ex[k].ext[0] ? ex[k].ext : "(none)", c, s);
    }
    char c[32], s[32];
    snprintf(c, sizeof(c), "%d", b->n);
    sl_format_size(total, s, sizeof(s));
    table_row(t, "TOTAL", c, s);
    table_print(t, stdout, true);
    table_free(t);
}

int cmd_put(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "put", argc, argv, 2))
        return 1;
    const char *src = o.argv[0];
    struct uri u;
    if (uri_parse(o.argv[1], &u, true) < 0)
        return 1;
    char bref[128];
    snprintf(bref, sizeof(bref), "%s://%s", sl_provider_scheme(u.provider), u.bucket);
    struct stat st;
    bool is_stdin = !strcmp(src, "-");
    if (!is_stdin && stat(src, &st) < 0) {
        fprintf(stderr, "Error: %s: %s\n", src, strerror(errno));
        uri_free(&u);
        return 1;
    }
    int rc = 0;
    if (is_stdin || S_ISREG(st.st_mode)) {
        char *obj;
        if (!u.obj[0] || u.trailing_slash) {
            if (is_stdin) {
                fprintf(stderr, "Error: put from stdin needs an object name: shale put - %s/NAME\n", bref);
                uri_free(&u);
                return 1;
            }
            const char *base = strrchr(src, '/');
            obj = sl_xasprintf("%s%s", u.obj, base ? base + 1 : src);
        } else {
            obj = sl_xstrdup(u.obj);
        }
        CURL *c = curl_easy_init();
        char err[1024];
        struct progress *pg = NULL;
        if (opt_bool(&o, "progress") && !is_stdin)
            pg = progress_new("Total size:", (uint64_t)st.st_size, true);
        if (put_one(c, &u, src, obj, pg, err, sizeof(err)) < 0) {
            fprintf(stderr, "Error: %s\n", err);
            rc = 1;
        } else {
            if (pg)
                progress_draw(pg, true);
            printf("PUT \"%s\" => %s/%s\n", is_stdin ? "-" : src, bref, obj);
        }
        progress_free(pg);
        curl_easy_cleanup(c);
        free(obj);
        uri_free(&u);
        return rc;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "Error: %s is neither a regular file nor a directory\n", src);
        uri_free(&u);
        return 1;
    }
    struct batch b = { 0 };
    pthread_mutex_init(&b.mu, NULL);
    b.u = &u;
    char *prefix = u.obj[0] && !u.trailing_slash ? sl_xasprintf("%s/", u.obj) : sl_xstrdup(u.obj);
    if (walk(&b, src, "", prefix, opt_bool(&o, "recursive")) < 0)
        rc = 1;
    if (b.n == 0) {
        fprintf(stderr, "Error: no files to upload in %s%s\n", src,
                opt_bool(&o, "recursive") ? "" : " (use -r to include subdirectories)");
        uri_free(&u);
        free(prefix);
        return 1;
    }
    uint64_t total = 0;
    for (int i = 0; i < b.n; i++)
        total += b.files[i].size;
    print_summary(&b);
    if (opt_bool(&o, "dry-run")) {
        printf("[DRY RUN] No modifications on the cluster\n");
        for (int i = 0; i < b.n; i++)
            printf("PUT \"%s\" => %s/%s\n", b.files[i].path, bref, b.files[i].obj);
        goto done;
    }
    { /* a missing bucket is one error, not one per file */
        struct cli_resp hr;
        char *pq = sl_xasprintf("/v1/buckets/%s%s", u.bucket, uri_query(&u));
        cli_req("HEAD", pq, NULL, NULL, 0, &hr);
        free(pq);
        if (hr.status == 404) {
            fprintf(stderr, "Error: bucket \"%s\" does not exist (create it with: shale bucket create %s)\n", bref,
                    bref);
            cli_resp_free(&hr);
            rc = 1;
            goto done;
        }
        cli_resp_free(&hr);
    }
    if (isatty(0) && !opt_bool(&o, "yes")) {
        char sz[32];
        sl_format_size(total, sz, sizeof(sz));
        printf("Proceed uploading %d files (%s) to %s? [Y/N]: ", b.n, sz, bref);
        fflush(stdout);
        char ans[16] = "";
        if (!fgets(ans, sizeof(ans), stdin) || (ans[0] != 'y' && ans[0] != 'Y')) {
            printf("Operation canceled\n");
            goto done;
        }
    }
    if (opt_bool(&o, "progress")) {
        b.pobj = progress_new("Objects:", (uint64_t)b.n, false);
        b.pbytes = progress_new("Total size:", total, true);
    }
    batch_run(&b, (int)opt_int(&o, "num-workers", 10));
    {
        char sz[32];
        sl_format_size(total, sz, sizeof(sz));
        if (b.failed) {
            fprintf(stderr, "Failed to PUT %d of %d objects to %s/%s\n", b.failed, b.n, bref, prefix);
            rc = 1;
        } else {
            printf("PUT %d objects (%s) => %s/%s\n", b.n, sz, bref, prefix);
        }
    }
done:
    batch_free(&b);
    free(prefix);
    uri_free(&u);
    return rc;
}

/* ---- GET ---- */

struct down {
    FILE *out;
    const char *outpath;
    bool to_stdout;
    bool opened;
    CURL *c;
    struct sl_buf errbody;
    struct progress *prog;
    uint64_t n;
    bool epipe;
};

static size_t wr_down(char *p, size_t sz, size_t n, void *ud)
{
    struct down *d = ud;
    long status = 0;
    curl_easy_getinfo(d->c, CURLINFO_RESPONSE_CODE, &status);
    size_t len = sz * n;
    if (status >= 300) {
        sl_buf_add(&d->errbody, p, len);
        return len;
    }
    if (!d->opened) {
        d->opened = true;
        if (!d->to_stdout) {
            d->out = fopen(d->outpath, "wb");
            if (!d->out)
                return 0;
        }
    }
    if (fwrite(p, 1, len, d->out) != len) {
        if (errno == EPIPE)
            d->epipe = true;
        return 0;
    }
    d->n += len;
    if (d->prog) {
        progress_add(d->prog, len);
        progress_draw(d->prog, false);
    }
    return len;
}

/* GET obj of u into out ("-" = stdout; a file is removed again on error).
 * query: "&k=v..." added after the provider; hdrs: extra headers (Range).
 * 0 (*n bytes written; *epipe when the reader of stdout went away, which is
 * not an error), or -1 with err filled. */
static int get_one(CURL *c, const struct uri *u, const char *obj, const char *out, const char *query,
                   struct curl_slist *hdrs, struct progress *prog, uint64_t *n, bool *epipe, char *err, size_t errn)
{
    struct down d = { .to_stdout = !strcmp(out, "-"), .outpath = out, .c = c, .prog = prog };
    d.out = d.to_stdout ? stdout : NULL;
    sl_buf_init(&d.errbody);
    char *p = uri_obj_path(u, obj);
    char *url = sl_xasprintf("%s%s%s%s", cli_endpoint(), p, uri_query(u), query ? query : "");
    free(p);
    curl_easy_reset(c);
    cli_curl_opts(c, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wr_down);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &d);
    struct curl_slist *all = NULL;
    for (struct curl_slist *x = hdrs; x; x = x->next)
        all = curl_slist_append(all, x->data);
    all = cli_auth_hdr(all);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, all);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(all);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    int ret = 0;
    if (d.epipe) {
        ret = 0; /* the consumer closed the pipe early: not an error (webdataset, head) */
    } else if (status >= 400) {
        json_error_t je;
        json_t *j = d.errbody.len ? json_loadb(d.errbody.p, d.errbody.len, 0, &je) : NULL;
        const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
        snprintf(err, errn, "%s", m ? m : d.errbody.p ? d.errbody.p : "GET failed");
        json_decref(j);
        ret = -1;
    } else if (rc != CURLE_OK) {
        const char *etl = query ? strstr(query, "etl_name=") : NULL;
        if (d.opened && !d.to_stdout && !d.out) {
            snprintf(err, errn, "cannot create %s: %s", out, strerror(errno));
        } else if (etl && (rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR)) {
            /* an inline transform failed after its answer began: the node cut it off, and recorded why */
            etl += strlen("etl_name=");
            size_t el = strcspn(etl, "&");
            snprintf(err, errn, "GET %s: the answer was cut off after %llu bytes: the transform %.*s failed "
                     "mid-object (`shale etl show errors %.*s` says why)", url, (unsigned long long)d.n, (int)el,
                     etl, (int)el, etl);
        } else {
            snprintf(err, errn, "GET %s: %s", url, curl_easy_strerror(rc));
        }
        ret = -1;
    } else if (!d.opened && !d.to_stdout) {
        FILE *f = fopen(out, "wb"); /* an empty object */
        if (f)
            fclose(f);
        else {
            snprintf(err, errn, "cannot create %s: %s", out, strerror(errno));
            ret = -1;
        }
    }
    if (d.out && !d.to_stdout && fclose(d.out) != 0 && !ret) {
        snprintf(err, errn, "writing %s: %s", out, strerror(errno));
        ret = -1;
    } else if (d.to_stdout && !d.epipe) {
        fflush(stdout);
    }
    if (ret && d.opened && !d.to_stdout)
        unlink(out);
    *n = d.n;
    *epipe = d.epipe;
    sl_buf_free(&d.errbody);
    free(url);
    return ret;
}

/* "&archpath=...&etl_name=..." from the flags that become query parameters */
static char *get_query(const struct opts *o)
{
    static const char *qs[][2] = { { "archpath", "archpath" }, { "archregx", "archregx" },
                                   { "archmode", "archmode" }, { "etl-name", "etl_name" },
                                   { "etl-args", "etl_args" }, { "etl-pipeline", "etl_pipeline" } };
    struct sl_buf q;
    sl_buf_init(&q);
    sl_buf_adds(&q, "");
    for (size_t i = 0; i < SL_ARRAY_SIZE(qs); i++) {
        const char *v = opt_str(o, qs[i][0]);
        if (v && *v) {
            char *e = sl_url_encode_query(v);
            sl_buf_printf(&q, "&%s=%s", qs[i][1], e);
            free(e);
        }
    }
    return sl_buf_steal(&q);
}

static int add_listed(void *arg, const json_t *e)
{
    struct batch *b = arg;
    add_file(b, "", sl_json_str(e, "name", ""), 0);
    return 0;
}

/* mkdir -p of the directory part of path */
static int make_parents(const char *path)
{
    char *d = sl_xstrdup(path);
    int rc = 0;
    for (char *s = strchr(d + 1, '/'); s && !rc; s = strchr(s + 1, '/')) {
        *s = 0;
        if (mkdir(d, 0755) < 0 && errno != EEXIST)
            rc = -1;
        *s = '/';
    }
    free(d);
    return rc;
}

/* get --prefix / --template / --list / a brace range in the name: every
 * object into OUT_DIR (default: here), named by its object name */
static int get_many(struct opts *o, const struct uri *u, const char *tmpl, const char *prefix)
{
    const char *list = opt_str(o, "list");
    const char *dir = o->argc > 1 ? o->argv[1] : ".";
    char bref[300];
    snprintf(bref, sizeof(bref), "%s://%s", sl_provider_scheme(u->provider), u->bucket);
    if (!strcmp(dir, "-")) {
        fprintf(stderr, "Error: many objects cannot go to stdout; name a directory (or use `shale ml get-batch "
                "%s - ...` for one archive of them)\n", bref);
        return 1;
    }
    static const char *const single[] = { "offset", "length", "archpath", "archregx", "archmode" };
    for (size_t i = 0; i < SL_ARRAY_SIZE(single); i++)
        if (opt_str(o, single[i])) {
            fprintf(stderr, "Error: --%s applies to one object; name it as ais://BUCKET/OBJECT\n", single[i]);
            return 1;
        }
    struct batch b = { 0 };
    pthread_mutex_init(&b.mu, NULL);
    b.u = u;
    b.get = true;
    int rc = 0;
    struct sl_tmpl *t = NULL;
    struct sl_err terr = { 0 };
    if (list) {
        json_t *names = cli_names(list);
        size_t i;
        json_t *x;
        json_array_foreach(names, i, x) add_file(&b, "", json_string_value(x), 0);
        json_decref(names);
    } else if (tmpl && sl_tmpl_parse(tmpl, &t, &terr) < 0) {
        fprintf(stderr, "Error: template \"%s\": %s\n", tmpl, terr.msg);
        rc = 1;
    } else if (t && sl_tmpl_is_range(t)) {
        if (sl_tmpl_count(t) > 10000000) {
            fprintf(stderr, "Error: template \"%s\" names more than 10,000,000 objects\n", tmpl);
            rc = 1;
        }
        struct sl_buf nb;
        sl_buf_init(&nb);
        for (uint64_t i = 0; !rc && i < sl_tmpl_count(t); i++) {
            sl_tmpl_at(t, i, &nb);
            add_file(&b, "", nb.p, 0);
        }
        sl_buf_free(&nb);
    } else {
        /* a prefix, or a template without ranges (which is one) */
        const char *pfx = t ? sl_tmpl_prefix(t) : prefix;
        json_t *msg = json_pack("{s:s,s:s}", "props", "name", "prefix", pfx);
        char *pq = sl_xasprintf("/v1/buckets/%s%s", u->bucket, uri_query(u));
        rc = cli_list_each(pq, msg, add_listed, &b);
        free(pq);
        json_decref(msg);
        if (!rc && !b.n) {
            fprintf(stderr, "Error: no object in %s starts with \"%s\"; nothing to GET (see `shale ls %s`)\n", bref,
                    pfx, bref);
            rc = 1;
        }
    }
    sl_tmpl_free(t);
    /* the local names: under dir, never outside it */
    for (int i = 0; !rc && i < b.n; i++) {
        const char *nm = b.files[i].obj;
        if (!nm[0] || nm[0] == '/' || !strcmp(nm, "..") || sl_has_prefix(nm, "../") || strstr(nm, "/../") ||
            sl_has_suffix(nm, "/..")) {
            fprintf(stderr, "Error: object name \"%s\" would be written outside %s; GET it on its own with a file "
                    "name\n", nm, dir);
            rc = 1;
            break;
        }
        free(b.files[i].path);
        b.files[i].path = sl_xasprintf("%s/%s", dir, nm);
        if (make_parents(b.files[i].path) < 0) {
            fprintf(stderr, "Error: cannot create the directories of %s: %s\n", b.files[i].path, strerror(errno));
            rc = 1;
        }
    }
    if (!rc && isatty(0) && !opt_bool(o, "yes")) {
        printf("GET %d objects from %s to %s? [Y/N]: ", b.n, bref, dir);
        fflush(stdout);
        char ans[16] = "";
        if (!fgets(ans, sizeof(ans), stdin) || (ans[0] != 'y' && ans[0] != 'Y')) {
            printf("Operation canceled\n");
            batch_free(&b);
            return 0;
        }
    }
    if (!rc) {
        char *q = get_query(o);
        b.query = q;
        if (opt_bool(o, "progress"))
            b.pobj = progress_new("Objects:", (uint64_t)b.n, false);
        batch_run(&b, (int)opt_int(o, "num-workers", 10));
        uint64_t total = 0;
        for (int i = 0; i < b.n; i++)
            total += b.files[i].size;
        char sz[32];
        sl_format_size(total, sz, sizeof(sz));
        if (b.failed) {
            fprintf(stderr, "Failed to GET %d of %d objects from %s (the errors above); %d written to %s (%s)\n",
                    b.failed, b.n, bref, b.n - b.failed, dir, sz);
            rc = 1;
        } else {
            printf("GET %d object%s from %s to %s (%s)\n", b.n, b.n == 1 ? "" : "s", bref, dir, sz);
        }
        free(q);
    }
    batch_free(&b);
    return rc;
}

int cmd_get(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "get", argc, argv, 1))
        return 1;
    struct uri u;
    if (uri_parse(o.argv[0], &u, true) < 0)
        return 1;
    const char *tmpl = opt_str(&o, "template"), *prefix = opt_str(&o, "prefix"), *list = opt_str(&o, "list");
    if (!!tmpl + !!prefix + !!list > 1 || ((tmpl || prefix || list) && u.obj[0])) {
        fprintf(stderr, "Error: name the objects one way: ais://BUCKET/OBJECT, a brace range in it, --list, "
                "--template or --prefix\n");
        uri_free(&u);
        return 1;
    }
    if (tmpl || prefix || list || strchr(u.obj, '{') || (u.obj[0] && u.trailing_slash)) {
        int rc = get_many(&o, &u, tmpl ? tmpl : strchr(u.obj, '{') ? u.obj : NULL,
                          prefix ? prefix : u.obj);
        uri_free(&u);
        return rc;
    }
    if (!u.obj[0]) {
        fprintf(stderr, "Error: \"%s\": missing object name (ais://BUCKET/OBJECT), or select many with --prefix, "
                "--template or --list\n", o.argv[0]);
        uri_free(&u);
        return 1;
    }
    const char *base = strrchr(u.obj, '/');
    base = base ? base + 1 : u.obj;
    const char *archpath = opt_str(&o, "archpath");
    if (archpath && *archpath) {
        const char *ab = strrchr(archpath, '/');
        base = ab ? ab + 1 : archpath;
    }
    char *out;
    if (o.argc == 1)
        out = sl_xstrdup(base);
    else {
        struct stat st;
        if (strcmp(o.argv[1], "-") && stat(o.argv[1], &st) == 0 && S_ISDIR(st.st_mode))
            out = sl_xasprintf("%s/%s", o.argv[1], base);
        else
            out = sl_xstrdup(o.argv[1]);
    }
    bool to_stdout = !strcmp(out, "-");
    struct curl_slist *h = NULL;
    long long off = opt_int(&o, "offset", -1), len = opt_int(&o, "length", -1);
    if (off >= 0 || len >= 0) {
        char rh[96];
        if (len > 0)
            snprintf(rh, sizeof(rh), "Range: bytes=%lld-%lld", off < 0 ? 0 : off, (off < 0 ? 0 : off) + len - 1);
        else
            snprintf(rh, sizeof(rh), "Range: bytes=%lld-", off < 0 ? 0 : off);
        h = curl_slist_append(h, rh);
    }
    struct progress *prog = NULL;
    if (opt_bool(&o, "progress") && !to_stdout) {
        /* size from HEAD for the bar */
        struct cli_resp hr;
        char *hp = uri_obj_path(&u, u.obj);
        char *hq = sl_xasprintf("%s%s", hp, uri_query(&u));
        cli_req("HEAD", hq, NULL, NULL, 0, &hr);
        char cl[32];
        uint64_t total = cli_resp_header(&hr, "Content-Length", cl, sizeof(cl)) ? strtoull(cl, NULL, 10) : 0;
        cli_resp_free(&hr);
        free(hp);
        free(hq);
        prog = progress_new(base, total, true);
    }
    signal(SIGPIPE, SIG_IGN);
    CURL *c = curl_easy_init();
    char *q = get_query(&o), err[1100];
    uint64_t n = 0;
    bool epipe = false;
    int ret = 0;
    if (get_one(c, &u, u.obj, out, q, h, prog, &n, &epipe, err, sizeof(err)) < 0) {
        fprintf(stderr, "Error: %s\n", err);
        ret = 1;
    } else if (!to_stdout) {
        if (prog)
            progress_draw(prog, true);
        char sz[32];
        sl_format_size(n, sz, sizeof(sz));
        printf("GET \"%s%s%s\" from bucket \"%s://%s\" as \"%s\" [%s]\n", u.obj, archpath && *archpath ? "/" : "",
               archpath && *archpath ? archpath : "", sl_provider_scheme(u.provider), u.bucket, out, sz);
    }
    (void)epipe;
    free(q);
    progress_free(prog);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    free(out);
    uri_free(&u);
    return ret;
}

/* ---- object show / rmo ---- */

/* every Ais-Custom-Md header (the server sends one per key) as "k=v, k2=v2" */
static void custom_all(const struct cli_resp *r, char *out, size_t n)
{
    const char *name = "Ais-Custom-Md";
    size_t nl = strlen(name), used = 0;
    out[0] = 0;
    for (const char *p = r->hdrs.p; p && *p;) {
        const char *e = strstr(p, "\r\n");
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l > nl + 1 && !strncasecmp(p, name, nl) && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            int w = snprintf(out + used, n - used, "%s%.*s", used ? ", " : "", (int)(l - (size_t)(v - p)), v);
            if (w < 0 || (size_t)w >= n - used)
                break;
            used += (size_t)w;
        }
        p = e ? e + 2 : NULL;
    }
}

static int object_cat(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "object cat", argc, argv, 1))
        return 1;
    struct uri u;
    if (uri_parse(o.argv[0], &u, true) < 0)
        return 1;
    bool noobj = !u.obj[0] || u.trailing_slash || strchr(u.obj, '{');
    uri_free(&u);
    if (noobj) {
        fprintf(stderr, "Error: \"%s\": `shale object cat` writes one object: name it as ais://BUCKET/OBJECT (for "
                "many, use `shale get ais://BUCKET --prefix P DIR`)\n", o.argv[0]);
        return 1;
    }
    /* get ais://B/O - FLAGS: the flags are a subset of get's */
    char **av = sl_xcalloc((size_t)argc + 2, sizeof(*av));
    int n = 0;
    av[n++] = o.argv[0];
    av[n++] = "-";
    for (int i = 0; i < argc; i++)
        if (argv[i] != o.argv[0] && strcmp(argv[i], o.argv[0]))
            av[n++] = argv[i];
    int rc = cmd_get(n, av);
    free(av);
    return rc;
}

int cmd_blob_download(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "object blob-download", argc, argv, 1))
        return 1;
    int64_t tmo;
    struct uri u;
    if (cli_timeout(&o, &tmo) < 0 || uri_parse(o.argv[0], &u, true) < 0)
        return 1;
    int rc = 1;
    json_t *v = json_object();
    if (!u.obj[0] || u.trailing_slash) {
        fprintf(stderr, "Error: \"%s\": name one object as s3://BUCKET/OBJECT\n", o.argv[0]);
        goto out;
    }
    const char *cs = opt_str(&o, "chunk-size");
    if (cs) {
        uint64_t n;
        if (sl_parse_size(cs, &n) < 0 || n == 0) {
            fprintf(stderr, "Error: --chunk-size \"%s\": expected a size such as 8MiB or 1048576\n", cs);
            goto out;
        }
        json_object_set_new(v, "chunk-size", json_integer((json_int_t)n));
    }
    if (opt_str(&o, "num-workers")) {
        char *end;
        long n = strtol(opt_str(&o, "num-workers"), &end, 10);
        if (*end || n < 1 || n > 1000) {
            fprintf(stderr, "Error: --num-workers \"%s\": expected a number from 1 to 1000\n",
                    opt_str(&o, "num-workers"));
            goto out;
        }
        json_object_set_new(v, "num-workers", json_integer(n));
    }
    if (opt_bool(&o, "latest"))
        json_object_set_new(v, "latest-ver", json_true());
    if (opt_bool(&o, "progress") && !opt_bool(&o, "wait")) {
        fprintf(stderr, "Error: --progress shows a job being waited for: add --wait\n");
        goto out;
    }
    char *eb = sl_url_encode_path(u.bucket, strlen(u.bucket));
    char *pq = sl_xasprintf("/v1/objects/%s%s", eb, uri_query(&u));
    free(eb);
    struct cli_resp r;
    cli_act("POST", pq, "blob-download", u.obj, v, &r);
    v = NULL;
    free(pq);
    if (r.status != 200) {
        rc = cli_fail(&r, NULL);
        cli_resp_free(&r);
        goto out;
    }
    char *id = sl_xstrndup(r.body.p ? r.body.p : "", r.body.len);
    cli_resp_free(&r);
    for (size_t l = strlen(id); l && (id[l - 1] == '\n' || id[l - 1] == '"'); l--)
        id[l - 1] = 0;
    const char *jid = id[0] == '"' ? id + 1 : id;
    if (!jid[0]) {
        printf("%s://%s/%s is in the cluster already (nothing to download; --latest checks the remote's "
               "version)\n", sl_provider_scheme(u.provider), u.bucket, u.obj);
        rc = 0;
    } else if (opt_bool(&o, "wait")) {
        rc = cli_job_wait(jid, tmo, opt_bool(&o, "progress"));
        if (rc == 0)
            printf("Downloaded %s://%s/%s (job %s)\n", sl_provider_scheme(u.provider), u.bucket, u.obj, jid);
    } else {
        cli_job_started(jid);
        rc = 0;
    }
    free(id);
out:
    json_decref(v);
    uri_free(&u);
    return rc;
}

/* object concat FILE... ais://B/O: append each file in order (append_type=append, the handle chained), then
 * flush: one object */
static int object_concat(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "object concat", argc, argv, 2))
        return 1;
    struct uri u;
    if (uri_parse(o.argv[o.argc - 1], &u, true) < 0)
        return 1;
    int rc = 1;
    char *handle = sl_xstrdup("");
    char *op = NULL;
    if (!u.obj[0] || u.trailing_slash) {
        fprintf(stderr, "Error: \"%s\": name the object to create as ais://BUCKET/OBJECT\n", o.argv[o.argc - 1]);
        goto out;
    }
    for (int i = 0; i < o.argc - 1; i++) {
        struct stat st;
        if (stat(o.argv[i], &st) < 0 || !S_ISREG(st.st_mode)) {
            fprintf(stderr, "Error: \"%s\": %s; `shale object concat` takes regular files, in order\n", o.argv[i],
                    stat(o.argv[i], &st) < 0 ? strerror(errno) : "not a regular file");
            goto out;
        }
    }
    op = uri_obj_path(&u, u.obj);
    uint64_t total = 0;
    for (int i = 0; i <= o.argc - 1; i++) {
        bool flush = i == o.argc - 1;
        struct sl_buf data;
        sl_buf_init(&data);
        if (!flush && sl_read_file(o.argv[i], &data, (size_t)4 << 30) < 0) {
            fprintf(stderr, "Error: cannot read %s: %s\n", o.argv[i], strerror(errno));
            sl_buf_free(&data);
            goto out;
        }
        char *eh = sl_url_encode_query(handle);
        char *pq = sl_xasprintf("%s%s&append_type=%s%s%s", op, uri_query(&u), flush ? "flush" : "append",
                                handle[0] ? "&append_handle=" : "", eh);
        free(eh);
        struct cli_resp r;
        cli_req("PUT", pq, "application/octet-stream", data.p ? data.p : "", data.len, &r);
        free(pq);
        total += data.len;
        sl_buf_free(&data);
        if (r.status != 200) {
            fprintf(stderr, "Error: concat into %s://%s/%s stopped at %s: ", sl_provider_scheme(u.provider), u.bucket,
                    u.obj, flush ? "the final flush" : o.argv[i]);
            cli_fail(&r, NULL);
            cli_resp_free(&r);
            goto out;
        }
        char h[512];
        if (!flush) {
            if (!cli_resp_header(&r, "Ais-Append-Handle", h, sizeof(h))) {
                fprintf(stderr, "Error: the cluster gave no append handle for %s; nothing was created\n", o.argv[i]);
                cli_resp_free(&r);
                goto out;
            }
            free(handle);
            handle = sl_xstrdup(h);
        }
        cli_resp_free(&r);
    }
    char sz[32];
    sl_format_size(total, sz, sizeof(sz));
    printf("Concatenated %d file%s into %s://%s/%s (%s)\n", o.argc - 1, o.argc == 2 ? "" : "s",
           sl_provider_scheme(u.provider), u.bucket, u.obj, sz);
    rc = 0;
out:
    free(op);
    free(handle);
    uri_free(&u);
    return rc;
}

static int object_set_custom(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "object set-custom", argc, argv, 2))
        return 1;
    struct uri u;
    if (uri_parse(o.argv[0], &u, true) < 0)
        return 1;
    int rc = 1;
    json_t *kv = json_object();
    if (!u.obj[0] || u.trailing_slash) {
        fprintf(stderr, "Error: \"%s\": name one object as ais://BUCKET/OBJECT\n", o.argv[0]);
        goto out;
    }
    for (int i = 1; i < o.argc; i++) {
        const char *eq = strchr(o.argv[i], '=');
        if (!eq || eq == o.argv[i]) {
            fprintf(stderr, "Error: \"%s\": expected KEY=VALUE (e.g. label=cat)\n", o.argv[i]);
            goto out;
        }
        char *k = sl_xstrndup(o.argv[i], (size_t)(eq - o.argv[i]));
        json_object_set_new(kv, k, json_string(eq + 1));
        free(k);
    }
    bool replace = opt_bool(&o, "replace") || opt_bool(&o, "set-new-custom");
    char *op = uri_obj_path(&u, u.obj);
    const char *uq = uri_query(&u);
    char *pq = sl_xasprintf("%s%s%sset-new-custom=%s", op, uq, *uq ? "&" : "?", replace ? "true" : "false");
    struct cli_resp r;
    cli_act("PATCH", pq, "", NULL, kv, &r);
    kv = NULL;
    free(op);
    free(pq);
    if (r.status != 200) {
        rc = cli_fail(&r, NULL);
    } else {
        printf("Custom metadata of %s://%s/%s %s (`shale object show %s --props all` shows it)\n",
               sl_provider_scheme(u.provider), u.bucket, u.obj, replace ? "replaced" : "updated", o.argv[0]);
        rc = 0;
    }
    cli_resp_free(&r);
out:
    json_decref(kv);
    uri_free(&u);
    return rc;
}

static int object_show(struct opts *o)
{
    if (o->argc != 1)
        return cli_usage("object show");
    struct uri u;
    if (uri_parse(o->argv[0], &u, true) < 0)
        return 1;
    char *p = uri_obj_path(&u, u.obj);
    char *pq = sl_xasprintf("%s%s", p, uri_query(&u));
    struct cli_resp r;
    cli_req("HEAD", pq, NULL, NULL, 0, &r);
    free(p);
    free(pq);
    int rc = 0;
    if (r.status != 200) {
        rc = cli_fail(&r, NULL);
    } else {
        char ckt[32] = "", ckv[160] = "", size[32] = "0", atime[32] = "", ver[32] = "", loc[600] = "",
             custom[2048] = "";
        cli_resp_header(&r, "Ais-Checksum-Type", ckt, sizeof(ckt));
        cli_resp_header(&r, "Ais-Checksum-Value", ckv, sizeof(ckv));
        cli_resp_header(&r, "Content-Length", size, sizeof(size));
        cli_resp_header(&r, "Ais-Atime", atime, sizeof(atime));
        cli_resp_header(&r, "Ais-Version", ver, sizeof(ver));
        cli_resp_header(&r, "Ais-Location", loc, sizeof(loc));
        custom_all(&r, custom, sizeof(custom));
        char ck[200], sz[32], at[64];
        snprintf(ck, sizeof(ck), "%s%s%s", ckt[0] ? ckt : "none", ckv[0] ? " " : "", ckv);
        sl_format_size(strtoull(size, NULL, 10), sz, sizeof(sz));
        sl_format_gotime(strtoll(atime, NULL, 10), "02 Jan 06 15:04:05 MST", at, sizeof(at));
        if (cli_json) {
            json_t *j = json_object();
            json_object_set_new(j, "name", json_string(u.obj));
            json_object_set_new(j, "size", json_integer(strtoll(size, NULL, 10)));
            json_object_set_new(j, "checksum", json_pack("{s:s,s:s}", "type", ckt, "value", ckv));
            json_object_set_new(j, "atime", json_string(at));
            json_object_set_new(j, "version", json_string(ver));
            json_object_set_new(j, "location", json_string(loc));
            json_object_set_new(j, "custom", json_string(custom));
            cli_print_json(j);
            json_decref(j);
        } else {
            struct table *t = table_new(2, "PROPERTY", "VALUE");
            bool all = opt_str(o, "props") && !strcmp(opt_str(o, "props"), "all");
            if (all)
                table_row(t, "name", u.obj);
            table_row(t, "checksum", ck);
            table_row(t, "size", sz);
            table_row(t, "atime", at);
            table_row(t, "version", ver[0] ? ver : "-");
            if (all) {
                table_row(t, "custom", custom[0] ? custom : "-");
                table_row(t, "location", loc);
                table_row(t, "copies", "1");
            }
            table_print(t, stdout, !cli_no_headers);
            table_free(t);
        }
    }
    cli_resp_free(&r);
    uri_free(&u);
    return rc;
}

/* A list-range job on the objects --list, --template (or a brace range in
 * the name) or --prefix select (none: every object): delete-listrange for
 * rmo, prefetch-listrange, evict-listrange; one job on every target,
 * waited for. did: "Deleted", "Prefetched", "Evicted". */
static int listrange_job(struct opts *o, const struct uri *u, const char *tmpl, const char *method,
                         const char *action, const char *cmd, const char *did)
{
    json_t *v = json_object();
    const char *list = opt_str(o, "list"), *prefix = opt_str(o, "prefix");
    if (list) {
        json_object_set_new(v, "objnames", cli_names(list));
    } else {
        json_object_set_new(v, "template", json_string(tmpl ? tmpl : prefix ? prefix : ""));
    }
    if (opt_bool(o, "nr"))
        json_object_set_new(v, "non-recurs", json_true());
    if (opt_bool(o, "cont-on-err"))
        json_object_set_new(v, "coer", json_true());
    bool progress = false;
    if (!strcmp(action, "prefetch-listrange")) {
        /* prefetch --latest, --blob-threshold (and its chunk size, workers), --progress */
        if (opt_bool(o, "latest"))
            json_object_set_new(v, "latest-ver", json_true());
        static const char *const sz[][2] = { { "blob-threshold", "blob-threshold" },
                                             { "blob-chunk-size", "blob-chunk-size" } };
        for (size_t i = 0; i < SL_ARRAY_SIZE(sz); i++) {
            const char *s = opt_str(o, sz[i][0]);
            uint64_t n;
            if (!s)
                continue;
            if (sl_parse_size(s, &n) < 0) {
                fprintf(stderr, "Error: --%s \"%s\": expected a size such as 64MiB or 1048576\n", sz[i][0], s);
                json_decref(v);
                return 1;
            }
            json_object_set_new(v, sz[i][1], json_integer((json_int_t)n));
        }
        if (opt_str(o, "blob-num-workers")) {
            char *end;
            long n = strtol(opt_str(o, "blob-num-workers"), &end, 10);
            if (*end || n < 0 || n > 1000) {
                fprintf(stderr, "Error: --blob-num-workers \"%s\": expected a number from 0 to 1000\n",
                        opt_str(o, "blob-num-workers"));
                json_decref(v);
                return 1;
            }
            json_object_set_new(v, "blob-num-workers", json_integer(n));
        }
        progress = opt_bool(o, "progress");
    }
    char *pq = sl_xasprintf("/v1/buckets/%s%s", u->bucket, uri_query(u));
    char *id = cli_act_id(method, pq, action, v, cmd);
    free(pq);
    if (!id)
        return 1;
    int rc = cli_job_wait(id, 3600LL * 1000000000LL, progress);
    if (rc == 0)
        printf("%s %s %s %s://%s (job %s)\n", did, list ? "the listed objects" : tmpl ? tmpl : prefix && prefix[0]
               ? prefix : "every object", strcmp(action, "delete-listrange") ? "of" : "from",
               sl_provider_scheme(u->provider), u->bucket, id);
    free(id);
    return rc;
}

static int rmo_many(struct opts *o, const struct uri *u, const char *tmpl)
{
    return listrange_job(o, u, tmpl, "DELETE", "delete-listrange", "rmo", "Deleted");
}

/* prefetch / evict: BUCKET[/TEMPLATE] with the selection flags. A remote
 * bucket not yet known to the cluster is looked up first (a HEAD adds it,
 * as any first access does). Evict of an s3:// bucket with no selection
 * drops the copies and the bucket (evict-remote-bck). */
static int remote_job(int argc, char **argv, const char *cmd)
{
    struct opts o;
    bool evict = !strcmp(cmd, "evict");
    if (cli_opts_min(&o, cmd, argc, argv, 1))
        return 1;
    struct uri u;
    if (uri_parse(o.argv[0], &u, true) < 0)
        return 1;
    const char *tmpl = opt_str(&o, "template") ? opt_str(&o, "template") : u.obj[0] ? u.obj : NULL;
    bool all = !tmpl && !opt_str(&o, "list") && !opt_str(&o, "prefix");
    int rc;
    struct cli_resp r;
    char *pq = sl_xasprintf("/v1/buckets/%s%s", u.bucket, uri_query(&u));
    if (evict && opt_bool(&o, "keep-md") && !all) {
        fprintf(stderr, "Error: --keep-md applies to evicting a whole bucket (evict s3://BUCKET --keep-md); evicting "
                        "a selection (--list, --template, --prefix) always keeps the bucket\n");
        rc = 1;
    } else if (evict && opt_bool(&o, "keep-md")) {
        /* evict-remote-bck keep_bck_md=true: the bucket stays; an evict-listrange job drops every copy */
        char *kq = sl_xasprintf("%s&keep_bck_md=true", pq);
        char *id = cli_act_id("DELETE", kq, "evict-remote-bck", NULL, "evict");
        free(kq);
        rc = 1;
        if (id) {
            rc = cli_job_wait(id, 3600LL * 1000000000LL, false);
            if (rc == 0)
                printf("Evicted every object of %s://%s (job %s); the bucket and its properties stay\n",
                       sl_provider_scheme(u.provider), u.bucket, id);
            free(id);
        }
    } else if (evict && all && strcmp(u.provider, "ais")) {
        cli_act("DELETE", pq, "evict-remote-bck", "", NULL, &r);
        rc = r.status == 200 ? 0 : cli_fail(&r, NULL);
        if (!rc)
            printf("Evicted %s://%s: its copies here are gone, the remote bucket is as it was\n",
                   sl_provider_scheme(u.provider), u.bucket);
        cli_resp_free(&r);
    } else {
        cli_req("HEAD", pq, NULL, NULL, 0, &r);
        rc = r.status == 200 ? 0 : cli_fail(&r, NULL);
        cli_resp_free(&r);
        if (!rc)
            rc = listrange_job(&o, &u, tmpl, evict ? "DELETE" : "POST",
                               evict ? "evict-listrange" : "prefetch-listrange", cmd, evict ? "Evicted" : "Prefetched");
    }
    free(pq);
    uri_free(&u);
    return rc;
}

int cmd_prefetch(int argc, char **argv)
{
    return remote_job(argc, argv, "prefetch");
}

int cmd_evict(int argc, char **argv)
{
    return remote_job(argc, argv, "evict");
}

int cmd_rmo(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "rmo", argc, argv, 1))
        return 1;
    if (opt_str(&o, "list") || opt_str(&o, "template") || opt_str(&o, "prefix") ||
        (o.argc == 1 && strchr(o.argv[0], '{'))) {
        struct uri u;
        if (o.argc != 1 || uri_parse(o.argv[0], &u, true) < 0) {
            if (o.argc != 1)
                fprintf(stderr, "Error: unexpected argument \"%s\": rmo with --list/--template/--prefix takes one "
                        "bucket (ais://BUCKET)\n", o.argv[1]);
            return 1;
        }
        const char *tmpl = opt_str(&o, "template") ? opt_str(&o, "template") : u.obj[0] ? u.obj : NULL;
        int rc = rmo_many(&o, &u, tmpl);
        uri_free(&u);
        return rc;
    }
    int rc = 0;
    for (int i = 0; i < o.argc; i++) {
        struct uri u;
        if (uri_parse(o.argv[i], &u, true) < 0)
            return 1;
        if (!u.obj[0]) {
            fprintf(stderr, "Error: \"%s\": missing object name\n", o.argv[i]);
            uri_free(&u);
            rc = 1;
            continue;
        }
        char *p = uri_obj_path(&u, u.obj);
        char *pq = sl_xasprintf("%s%s", p, uri_query(&u));
        struct cli_resp r;
        cli_req("DELETE", pq, NULL, NULL, 0, &r);
        if (r.status != 200)
            rc = cli_fail(&r, NULL);
        else
            printf("deleted \"%s\" from bucket \"%s://%s\"\n", u.obj, sl_provider_scheme(u.provider), u.bucket);
        cli_resp_free(&r);
        free(p);
        free(pq);
        uri_free(&u);
    }
    return rc;
}

/* shale object mv ais://B/O NEW|ais://B/NEW: rename-obj on the object's owner (the new name is written
 * before the old one goes) */
static int object_mv(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "object mv", argc, argv, 2))
        return 1;
    struct uri u;
    if (uri_parse(o.argv[0], &u, true) < 0)
        return 1;
    int rc = 1;
    char *dst = NULL;
    if (!u.obj[0]) {
        fprintf(stderr, "Error: \"%s\": missing the object name (ais://BUCKET/OBJECT)\n", o.argv[0]);
        goto out;
    }
    if (strstr(o.argv[1], "://")) {
        struct uri d;
        if (uri_parse(o.argv[1], &d, true) < 0)
            goto out;
        if (strcmp(d.bucket, u.bucket) || strcmp(d.provider, u.provider) || !d.obj[0]) {
            fprintf(stderr, "Error: \"%s\": `shale object mv` renames within the bucket: give NEW_NAME or "
                    "%s://%s/NEW_NAME (to another bucket: `shale object cp`, then `shale object rm`)\n", o.argv[1],
                    sl_provider_scheme(u.provider), u.bucket);
            uri_free(&d);
            goto out;
        }
        dst = sl_xstrdup(d.obj);
        uri_free(&d);
    } else {
        dst = sl_xstrdup(o.argv[1]);
    }
    if (!dst[0] || !strcmp(dst, u.obj)) {
        fprintf(stderr, "Error: \"%s\": the new name must differ from \"%s\" and not be empty\n", o.argv[1],
                u.obj);
        goto out;
    }
    char *p = uri_obj_path(&u, u.obj);
    char *pq = sl_xasprintf("%s%s", p, uri_query(&u));
    struct cli_resp r;
    cli_act("POST", pq, "rename-obj", dst, NULL, &r);
    if (r.status != 200)
        rc = cli_fail(&r, NULL);
    else {
        printf("renamed \"%s\" to \"%s\" in bucket \"%s://%s\"\n", u.obj, dst, sl_provider_scheme(u.provider),
               u.bucket);
        rc = 0;
    }
    cli_resp_free(&r);
    free(p);
    free(pq);
out:
    free(dst);
    uri_free(&u);
    return rc;
}

int cmd_object(int argc, char **argv)
{
    if (argc < 1)
        return cli_usage("object");
    if (!strcmp(argv[0], "get"))
        return cmd_get(argc - 1, argv + 1);
    if (!strcmp(argv[0], "put"))
        return cmd_put(argc - 1, argv + 1);
    if (!strcmp(argv[0], "rm"))
        return cmd_rmo(argc - 1, argv + 1);
    if (!strcmp(argv[0], "cp"))
        return cli_cp("object cp", argc - 1, argv + 1);
    if (!strcmp(argv[0], "mv"))
        return object_mv(argc - 1, argv + 1);
    if (!strcmp(argv[0], "promote"))
        return cli_object_promote(argc - 1, argv + 1);
    if (!strcmp(argv[0], "blob-download"))
        return cmd_blob_download(argc - 1, argv + 1);
    if (!strcmp(argv[0], "concat"))
        return object_concat(argc - 1, argv + 1);
    if (!strcmp(argv[0], "cat"))
        return object_cat(argc - 1, argv + 1);
    if (!strcmp(argv[0], "set-custom"))
        return object_set_custom(argc - 1, argv + 1);
    if (!strcmp(argv[0], "mpu"))
        return cli_object_mpu(argc - 1, argv + 1);
    if (!strcmp(argv[0], "show")) {
        struct opts o;
        if (cli_opts(&o, "object show", argc - 1, argv + 1) < 0)
            return 1;
        return object_show(&o);
    }
    fprintf(stderr, "Error: unknown command \"object %s\" (show, get, cat, put, rm, cp, mv, promote, set-custom, mpu)\n", argv[0]);
    return 1;
}
