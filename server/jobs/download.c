/* SPDX-License-Identifier: MIT
 * download.c: AIStore's downloader (api/download.go, ext/dload):
 *
 *   POST /v1/download {"type": "single"|"range"|"multi",
 *                      "bucket": {"name", "provider"}, "timeout", "description",
 *                      single: "link", "object_name"
 *                      range:  "template" (http://h/shard-{000..099}.tar), "subdir"
 *                      multi:  "objects" (list of URLs, or {name: URL}),
 *                      backend: "prefix", "suffix", "synchronize" (the bucket a remote one),
 *                      "limits": {"connections": N}}
 *        -> {"id": "dnl-..."}
 *   GET /v1/download {"id"} (or ?id=)      -> AIStore's StatusResp: the job over
 *        every target (finished_cnt, error_cnt, total, aborted, download_errors ...)
 *   GET /v1/download [{"regex", "only_active_tasks"}] -> [Job ...], every download
 *   DELETE /v1/download/abort {"id"}     -> the job aborted on every target
 *   DELETE /v1/download/remove {"id"}    -> an ended job forgotten (409 while it runs)
 *
 * The gateway expands the request into (URL, object name) pairs and starts
 * job "download" on every target; each target downloads, with up to 4
 * transfers at a time (limits.connections, 1..256, when given), the names
 * whose HRW owner it is, through the normal
 * PUT path (checksum, mirroring, EC). A name is the URL's last path
 * element ("subdir"/ prefixed).
 * Only http and https URLs are accepted (400 otherwise: no file://, so no
 * node's local files). "timeout" (a duration, e.g. "30s") bounds each
 * object; a failed transfer is retried once. Status, wait and abort go
 * through the common job API (kind "download"); each target's failures
 * ({obj, url, ecode, msg}) are in its job's ext "errors"; stored objects
 * and bytes count as the job's out-objs/out-bytes.
 * Type backend (AIStore's DownloadBackend): each target lists the bucket's
 * remote (under prefix; names ending in suffix) and fetches the names it
 * owns into the bucket's cached copy; one held already is skipped
 * (skipped_cnt), unless synchronize, which makes it the remote's current
 * version (fetched again when its ETag changed) and drops the cached
 * objects (under prefix, with suffix) that the remote no longer has.
 * Not done: limits.bytes_per_hour (refused).
 */
#include "download.h"
#include "backend.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "store.h"
#include "template.h"
#include "xact.h"

#include <curl/curl.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_ITEMS 1000000
#define ERRS_KEPT 1000
#define MAX_CONNS 256

struct ditem {
    char *url, *name;
};

struct dargs {
    char id[40];
    char bck[SL_MAX_BCKNAME + 1];
    struct ditem *it;
    size_t n;
    long timeout_ms;
    int conns;          /* transfers at a time per target (limits.connections; 0: WORKERS) */
    char *desc;
    char provider[16];  /* the bucket's ("ais" unless a remote one's own) */
    bool backend;       /* type backend: the items come from the remote's listing, on each target */
    char *prefix, *suffix;
    bool sync;
};

static void dargs_free(void *p)
{
    struct dargs *a = p;
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++) {
        free(a->it[i].url);
        free(a->it[i].name);
    }
    free(a->it);
    free(a->desc);
    free(a->prefix);
    free(a->suffix);
    free(a);
}

static bool scheme_ok(const char *u)
{
    return !strncasecmp(u, "http://", 7) || !strncasecmp(u, "https://", 8);
}

/* the URL's last path element (query and fragment dropped) */
static char *name_of(const char *url)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    size_t end = strcspn(p, "?#");
    const char *last = NULL;
    for (size_t i = 0; i < end; i++)
        if (p[i] == '/')
            last = p + i + 1;
    if (!last || last >= p + end)
        return NULL;
    return sl_xasprintf("%.*s", (int)(p + end - last), last);
}

static int add_item(struct dargs *a, const char *url, const char *name, const char *subdir, struct sl_err *err)
{
    if (!scheme_ok(url))
        return sl_errf(err, SL_EINVAL, "download: invalid link \"%s\": only http:// and https:// URLs are "
                       "downloaded (no file:// or other schemes)", url);
    char *base = name && name[0] ? sl_xstrdup(name) : name_of(url);
    if (!base)
        return sl_errf(err, SL_EINVAL, "download: link \"%s\" has no last path element to name the object: "
                       "give object_name (--obj-name)", url);
    char *full = subdir && subdir[0] ? sl_xasprintf("%s%s%s", subdir, subdir[strlen(subdir) - 1] == '/' ? "" : "/",
                                                    base) : sl_xstrdup(base);
    free(base);
    if (sl_objname_check(full, strlen(full), err) < 0) {
        free(full);
        return -1;
    }
    if (a->n >= MAX_ITEMS) {
        free(full);
        return sl_errf(err, SL_EINVAL, "download: more than %d objects in one request: split it", MAX_ITEMS);
    }
    a->it = sl_xrealloc(a->it, (a->n + 1) * sizeof(*a->it));
    a->it[a->n].url = sl_xstrdup(url);
    a->it[a->n].name = full;
    a->n++;
    return 0;
}

static long parse_timeout(const json_t *v, struct sl_err *err)
{
    if (!v || json_is_null(v))
        return 0;
    if (json_is_integer(v))
        return (long)json_integer_value(v) * 1000;
    if (!json_is_string(v))
        return sl_errf(err, SL_EINVAL, "download: timeout must be a duration (e.g. \"30s\")");
    const char *s = json_string_value(v);
    if (!s[0])
        return 0;
    char *end;
    double d = strtod(s, &end);
    double mul = 1000;
    if (!strcmp(end, "ms"))
        mul = 1;
    else if (!strcmp(end, "s") || !*end)
        mul = 1000;
    else if (!strcmp(end, "m"))
        mul = 60000;
    else if (!strcmp(end, "h"))
        mul = 3600000;
    else
        return sl_errf(err, SL_EINVAL, "download: invalid timeout \"%s\" (a duration: 500ms, 30s, 5m)", s);
    if (d <= 0)
        return sl_errf(err, SL_EINVAL, "download: invalid timeout \"%s\": must be positive", s);
    return (long)(d * mul);
}

/* the gateway's parse of a POST /v1/download body */
static int dargs_parse(const json_t *j, struct dargs *a, struct sl_err *err)
{
    if (!json_is_object(j))
        return sl_errf(err, SL_EINVAL, "download: the body must be a JSON object");
    const char *type = sl_json_str(j, "type", "");
    json_t *bck = json_object_get(j, "bucket");
    const char *bname = json_is_object(bck) ? sl_json_str(bck, "name", "") : "";
    if (!bname[0])
        return sl_errf(err, SL_EINVAL, "download: missing bucket.name");
    snprintf(a->bck, sizeof(a->bck), "%s", bname);
    long t = parse_timeout(json_object_get(j, "timeout"), err);
    if (t < 0)
        return -1;
    a->timeout_ms = t;
    json_t *lim = json_object_get(j, "limits");
    if (lim && !json_is_null(lim)) {
        json_t *c = json_object_get(lim, "connections"), *bph = json_object_get(lim, "bytes_per_hour");
        if (!json_is_object(lim) || (c && !json_is_integer(c)) || (bph && !json_is_integer(bph)))
            return sl_errf(err, SL_EINVAL, "download: limits must be {\"connections\": N, \"bytes_per_hour\": N} "
                           "(integers)");
        json_int_t n = c ? json_integer_value(c) : 0;
        if (n < 0 || n > MAX_CONNS)
            return sl_errf(err, SL_EINVAL, "download: limits.connections %lld: must be 0 (the default, 4 per target) "
                           "to %d (transfers at a time on each target)", (long long)n, MAX_CONNS);
        if (bph && json_integer_value(bph) != 0)
            return sl_errf(err, SL_EINVAL, "download: limits.bytes_per_hour is not supported (0 or absent: no "
                           "limit); nothing was started");
        a->conns = (int)n;
    }
    a->desc = sl_xstrdup(sl_json_str(j, "description", ""));
    const char *subdir = sl_json_str(j, "subdir", "");
    if (!strcmp(type, "single")) {
        const char *link = sl_json_str(j, "link", "");
        if (!link[0])
            return sl_errf(err, SL_EINVAL, "download: type single needs \"link\"");
        return add_item(a, link, sl_json_str(j, "object_name", ""), subdir, err);
    }
    if (!strcmp(type, "range")) {
        const char *tp = sl_json_str(j, "template", "");
        if (!scheme_ok(tp))
            return sl_errf(err, SL_EINVAL, "download: invalid template \"%s\": only http:// and https:// URLs are "
                           "downloaded", tp);
        struct sl_tmpl *tm;
        if (sl_tmpl_parse(tp, &tm, err) < 0)
            return -1;
        uint64_t n = sl_tmpl_count(tm);
        if (!sl_tmpl_is_range(tm) || n > MAX_ITEMS) {
            sl_tmpl_free(tm);
            return sl_errf(err, SL_EINVAL, "download: template \"%s\": needs a bounded brace range such as "
                           "{000..099} (at most %d names)", tp, MAX_ITEMS);
        }
        struct sl_buf b;
        sl_buf_init(&b);
        int rc = 0;
        for (uint64_t i = 0; i < n && rc == 0; i++) {
            sl_tmpl_at(tm, i, &b);
            char *u = sl_xasprintf("%.*s", (int)b.len, b.p);
            rc = add_item(a, u, NULL, subdir, err);
            free(u);
        }
        sl_buf_free(&b);
        sl_tmpl_free(tm);
        return rc;
    }
    if (!strcmp(type, "multi")) {
        json_t *o = json_object_get(j, "objects");
        if (json_is_array(o) && json_array_size(o)) {
            size_t i;
            json_t *v;
            json_array_foreach(o, i, v) {
                if (!json_is_string(v))
                    return sl_errf(err, SL_EINVAL, "download: objects[%zu] is not a string (a URL)", i);
                if (add_item(a, json_string_value(v), NULL, subdir, err) < 0)
                    return -1;
            }
            return 0;
        }
        if (json_is_object(o) && json_object_size(o)) {
            const char *k;
            json_t *v;
            json_object_foreach(o, k, v) {
                if (!json_is_string(v))
                    return sl_errf(err, SL_EINVAL, "download: objects[\"%s\"] is not a string (a URL)", k);
                if (add_item(a, json_string_value(v), k, subdir, err) < 0)
                    return -1;
            }
            return 0;
        }
        return sl_errf(err, SL_EINVAL, "download: type multi needs \"objects\": a non-empty list of URLs or "
                       "an object {name: URL}");
    }
    if (!strcmp(type, "backend")) {
        a->backend = true;
        a->prefix = sl_xstrdup(sl_json_str(j, "prefix", ""));
        a->suffix = sl_xstrdup(sl_json_str(j, "suffix", ""));
        a->sync = sl_json_bool(j, "synchronize", false);
        return 0;
    }
    return sl_errf(err, SL_EINVAL, "download: unsupported type \"%s\" (supported: single, range, multi, backend)",
                   type);
}

static json_t *dargs_json(const struct dargs *a)
{
    json_t *items = json_array();
    for (size_t i = 0; i < a->n; i++)
        json_array_append_new(items, json_pack("[s,s]", a->it[i].url, a->it[i].name));
    json_t *j = json_pack("{s:s,s:s,s:s,s:I,s:i,s:s,s:o}", "id", a->id, "bck", a->bck, "provider",
                          a->provider[0] ? a->provider : "ais", "timeout_ms", (json_int_t)a->timeout_ms, "connections",
                          a->conns, "description", a->desc ? a->desc : "", "items", items);
    if (a->backend)
        json_object_set_new(j, "backend", json_pack("{s:s,s:s,s:b}", "prefix", a->prefix ? a->prefix : "", "suffix",
                                                    a->suffix ? a->suffix : "", "synchronize", a->sync));
    return j;
}

/* ------------------------------------------------------------------ */
/* the target                                                         */
/* ------------------------------------------------------------------ */

struct run {
    struct dargs *a;
    struct sl_bck b;
    struct sl_job *job;
    json_t *errs;
    pthread_mutex_t mu; /* errs, next */
    size_t next;
    size_t total;       /* the items that are this target's */
    uint64_t skipped;   /* type backend: held already */
    uint64_t dropped;   /* type backend, synchronize: no longer at the remote, dropped here */
    json_t *remote;     /* type backend, synchronize: {name: true} of the remote's names owned here */
};

#define WORKERS 4 /* transfers at a time per target */

struct wctx {
    struct sl_put *p;
    struct sl_job *job;
    struct sl_err err;
    uint64_t bytes;
    bool failed;
};

static size_t on_data(char *d, size_t sz, size_t nm, void *arg)
{
    struct wctx *w = arg;
    size_t n = sz * nm;
    if (sl_job_aborting(w->job))
        return 0;
    if (sl_put_write(w->p, d, n, &w->err) < 0) {
        w->failed = true;
        return 0;
    }
    w->bytes += n;
    return n;
}

static int fetch_one(struct run *u, const struct ditem *it, char *msg, size_t msz, long *ecode)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1 };
        struct wctx w = { .job = u->job };
        if (sl_put_begin(&u->b, it->name, strlen(it->name), &o, &w.p, &w.err) < 0) {
            snprintf(msg, msz, "%s", w.err.msg);
            return -1;
        }
        CURL *c = curl_easy_init();
        curl_easy_setopt(c, CURLOPT_URL, it->url);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
        if (u->a->timeout_ms > 0)
            curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, u->a->timeout_ms);
        char ebuf[CURL_ERROR_SIZE] = "";
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
        CURLcode rc = curl_easy_perform(c);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
        if (rc == CURLE_OK) {
            struct sl_err e = { 0 };
            if (sl_bck_remote(&u->b) && sl_backend_put_through(&u->b, it->name, strlen(it->name), w.p, &e) < 0) {
                sl_put_abort(w.p);
                snprintf(msg, msz, "%s", e.msg);
                return -1;
            }
            if (sl_put_commit(w.p, NULL, &e) < 0) {
                snprintf(msg, msz, "%s", e.msg);
                return -1;
            }
            sl_job_add(&u->job->out_bytes, w.bytes);
            return 0;
        }
        sl_put_abort(w.p);
        if (sl_job_aborting(u->job)) {
            snprintf(msg, msz, "aborted");
            return -1;
        }
        if (w.failed) {
            snprintf(msg, msz, "storing: %s", w.err.msg);
            return -1;
        }
        snprintf(msg, msz, "GET %s: %s", it->url, ebuf[0] ? ebuf : curl_easy_strerror(rc));
        *ecode = status;
        /* an HTTP error status is the source's answer: not retried */
        if (rc == CURLE_HTTP_RETURNED_ERROR || status >= 400)
            return -1;
    }
    return -1;
}

/* type backend: name into the bucket's cached copy (held already: skipped,
 * or with synchronize made the remote's current version) */
static int fetch_backend(struct run *u, const struct ditem *it, char *msg, size_t msz, long *ecode)
{
    struct sl_err e = { 0 };
    size_t nlen = strlen(it->name);
    struct sl_objmd md;
    int held = sl_obj_stat(&u->b, it->name, nlen, &md, NULL, &e);
    if (held == 1) {
        uint64_t size = md.size;
        sl_objmd_free(&md);
        if (!u->a->sync) {
            sl_job_add(&u->skipped, 1);
            return 1;
        }
        /* (fetched again when the remote's ETag changed) */
        if (sl_backend_refresh(&u->b, it->name, nlen, &e) == 0) {
            sl_job_add(&u->job->out_bytes, size);
            return 0;
        }
    } else {
        memset(&e, 0, sizeof(e));
        if (sl_backend_fetch(&u->b, it->name, nlen, &e) == 0) {
            if (sl_obj_stat(&u->b, it->name, nlen, &md, NULL, &e) == 1) {
                sl_job_add(&u->job->out_bytes, md.size);
                sl_objmd_free(&md);
            }
            return 0;
        }
    }
    *ecode = sl_err_status(e.code);
    snprintf(msg, msz, "%s", e.msg);
    return -1;
}

static void *worker(void *arg)
{
    struct run *u = arg;
    while (!sl_job_aborting(u->job)) {
        pthread_mutex_lock(&u->mu);
        size_t i = u->next++;
        pthread_mutex_unlock(&u->mu);
        if (i >= u->a->n)
            break;
        const struct ditem *it = &u->a->it[i];
        struct sl_buf un;
        sl_buf_init(&un);
        sl_obj_uname(&un, u->b.provider, u->b.name, it->name, strlen(it->name));
        struct sl_smap *sm = sl_smap_get();
        const struct sl_snode *t = G.role == SL_ROLE_STANDALONE ? NULL : sl_smap_hrw_target(sm, un.p, un.len);
        bool mine = !t || !strcmp(t->id, G.id);
        sl_smap_put(sm);
        sl_buf_free(&un);
        if (!mine)
            continue;
        char msg[1200] = "";
        long ecode = 0;
        int rc = u->a->backend ? fetch_backend(u, it, msg, sizeof(msg), &ecode) : fetch_one(u, it, msg, sizeof(msg),
                                                                                             &ecode);
        if (rc == 1) {
            /* (held already: skipped) */
        } else if (rc == 0) {
            sl_job_add(&u->job->out_objs, 1);
        } else if (!sl_job_aborting(u->job)) {
            sl_job_add(&u->job->err_objs, 1);
            sl_logw("download %s: %s -> %s/%s: %s", u->a->id, it->url, u->b.name, it->name, msg);
            pthread_mutex_lock(&u->mu);
            if (json_array_size(u->errs) < ERRS_KEPT) {
                json_array_append_new(u->errs, json_pack("{s:s,s:s,s:I,s:s}", "obj", it->name, "url", it->url,
                                                         "ecode", (json_int_t)ecode, "msg", msg));
                sl_job_set_ext(u->job, json_pack("{s:s,s:o,s:I}", "description", u->a->desc,
                                                 "errors", json_deep_copy(u->errs), "total", (json_int_t)u->total));
                /* (skipped and dropped are set at the end) */
            }
            pthread_mutex_unlock(&u->mu);
        }
    }
    return NULL;
}

struct rlist {
    struct run *u;
    struct sl_smap *sm;
    size_t slen;
};

static bool has_suffix(const char *name, size_t len, const char *suf, size_t slen)
{
    return !slen || (len >= slen && !memcmp(name + len - slen, suf, slen));
}

static int remote_ent(void *ctx, const char *name, size_t len, const struct sl_backend_obj *o)
{
    (void)o;
    struct rlist *l = ctx;
    struct dargs *a = l->u->a;
    if (!len || !has_suffix(name, len, a->suffix, l->slen) || !sl_obj_owned_here(l->sm, &l->u->b, name, len))
        return 0;
    if (a->n >= MAX_ITEMS)
        return 1;
    a->it = sl_xrealloc(a->it, (a->n + 1) * sizeof(*a->it));
    a->it[a->n].name = sl_xasprintf("%.*s", (int)len, name);
    a->it[a->n].url = sl_xasprintf("%s://%s/%.*s", sl_provider_scheme(l->u->b.provider), l->u->b.name, (int)len,
                                   name);
    if (l->u->remote)
        json_object_set_new(l->u->remote, a->it[a->n].name, json_true());
    a->n++;
    return 0;
}

/* type backend: this target's share of the remote's names under prefix */
static int list_remote(struct run *u, struct sl_err *err)
{
    struct rlist l = { u, sl_smap_get(), strlen(u->a->suffix ? u->a->suffix : "") };
    if (!u->a->suffix)
        u->a->suffix = sl_xstrdup("");
    char tok[1024] = "", next[1024];
    int rc = 0;
    for (int page = 0; page < 1000000 && !sl_job_aborting(u->job); page++) {
        if ((rc = sl_backend_list_page(&u->b, u->a->prefix ? u->a->prefix : "", tok, 1000, remote_ent, &l, next,
                                       sizeof(next), err)) < 0 || !next[0] || u->a->n >= MAX_ITEMS)
            break;
        snprintf(tok, sizeof(tok), "%s", next);
    }
    sl_smap_put(l.sm);
    return rc;
}

struct sweep {
    struct run *u;
    char **names;
    size_t n;
};

static bool sweep_one(void *arg, const char *name, size_t nlen)
{
    struct sweep *w = arg;
    struct dargs *a = w->u->a;
    size_t pl = strlen(a->prefix);
    if ((pl && (nlen < pl || memcmp(name, a->prefix, pl))) || !has_suffix(name, nlen, a->suffix, strlen(a->suffix)))
        return false;
    char *nm = sl_xasprintf("%.*s", (int)nlen, name);
    if (json_object_get(w->u->remote, nm)) {
        free(nm);
        return false;
    }
    w->names = sl_xrealloc(w->names, (w->n + 1) * sizeof(*w->names));
    w->names[w->n++] = nm;
    return sl_job_aborting(w->u->job);
}

/* type backend, synchronize: the cached objects the remote no longer has
 * are dropped here (the remote is not touched) */
static void sweep_gone(struct run *u)
{
    struct sweep w = { u, NULL, 0 };
    for (int i = 0; i < sl_store_nmpaths(); i++) {
        struct sl_err err = { 0 };
        if (sl_store_walk(sl_store_mpath(i), &u->b, NULL, sweep_one, &w, &err) < 0)
            sl_logw("download %s: %s", u->a->id, err.msg);
    }
    for (size_t i = 0; i < w.n; i++) {
        struct sl_err err = { 0 };
        bool dm;
        char vid[24];
        /* (S3-versioned: a delete marker, the object kept as an older version: store.h) */
        if (sl_obj_delete_cur(&u->b, w.names[i], strlen(w.names[i]), -1, &dm, vid, &err) == 0)
            u->dropped++;
        else if (err.code != SL_ENOOBJ)
            sl_logw("download %s: dropping %s: %s", u->a->id, w.names[i], err.msg);
        free(w.names[i]);
    }
    free(w.names);
}

static void *run_thread(void *arg)
{
    struct run *u = arg;
    if (u->a->backend) {
        struct sl_err err = { 0 };
        u->remote = u->a->sync ? json_object() : NULL;
        if (list_remote(u, &err) < 0) {
            sl_logw("download %s: listing %s://%s: %s", u->a->id, sl_provider_scheme(u->b.provider), u->b.name,
                    err.msg);
            sl_job_fail(u->job, err.msg);
            u->a->n = 0; /* (nothing fetched, nothing dropped) */
            json_decref(u->remote);
            u->remote = NULL;
        }
        u->total = u->a->n;
        sl_job_set_ext(u->job, json_pack("{s:s,s:[],s:I}", "description", u->a->desc, "errors", "total",
                                         (json_int_t)u->total));
    }
    pthread_t th[MAX_CONNS];
    int nw = 0, want = u->a->conns > 0 ? u->a->conns : WORKERS;
    for (int k = 0; k < want && (size_t)k < u->a->n; k++)
        if (pthread_create(&th[nw], NULL, worker, u) == 0)
            nw++;
    if (!nw)
        worker(u);
    for (int k = 0; k < nw; k++)
        pthread_join(th[k], NULL);
    if (u->remote && !sl_job_aborting(u->job))
        sweep_gone(u);
    json_decref(u->remote);
    if (u->a->backend) {
        json_t *ext = sl_job_ext_copy(u->job);
        json_object_set_new(ext, "skipped", json_integer((json_int_t)u->skipped));
        json_object_set_new(ext, "dropped", json_integer((json_int_t)u->dropped));
        sl_job_set_ext(u->job, ext);
    }
    sl_logi("download %s: %llu object(s) into %s here, %llu failed%s", u->a->id,
            (unsigned long long)u->job->out_objs, u->b.name, (unsigned long long)u->job->err_objs,
            u->a->backend ? " (type backend)" : "");
    if (!u->job->end_ns)
        sl_job_finish(u->job, sl_job_aborting(u->job) ? "aborted" : NULL);
    sl_job_put(u->job);
    sl_bck_release(&u->b);
    json_decref(u->errs);
    pthread_mutex_destroy(&u->mu);
    dargs_free(u->a);
    free(u);
    return NULL;
}

static int start_here(struct dargs *a, struct sl_err *err)
{
    struct run *u = sl_xcalloc(1, sizeof(*u));
    u->a = a;
    if (sl_bck_resolve(a->bck, a->provider[0] ? a->provider : "ais", NULL, &u->b, err) < 0) {
        dargs_free(a);
        free(u);
        return -1;
    }
    u->errs = json_array();
    pthread_mutex_init(&u->mu, NULL);
    u->job = sl_job_start("download", a->id, a->bck, "");
    if (!a->desc)
        a->desc = sl_xstrdup("");
    /* how many are this target's (AIStore's per-target "total") */
    size_t mine = 0;
    struct sl_smap *sm = sl_smap_get();
    for (size_t i = 0; i < a->n; i++) {
        struct sl_buf un;
        sl_buf_init(&un);
        sl_obj_uname(&un, u->b.provider, u->b.name, a->it[i].name, strlen(a->it[i].name));
        const struct sl_snode *t = G.role == SL_ROLE_STANDALONE ? NULL : sl_smap_hrw_target(sm, un.p, un.len);
        mine += !t || !strcmp(t->id, G.id);
        sl_buf_free(&un);
    }
    sl_smap_put(sm);
    u->total = mine;
    sl_job_set_ext(u->job, json_pack("{s:s,s:[],s:I}", "description", a->desc, "errors", "total", (json_int_t)mine));
    sl_run_detached(run_thread, u);
    return 0;
}

/* POST /v1/internal/download {"id", "bck", "timeout_ms", "items": [[url, name], ...]} */
static void internal_start(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    json_t *items = json_object_get(j, "items");
    if (!json_is_object(j) || !json_is_array(items)) {
        json_decref(j);
        sl_resp_errf(r, SL_EINVAL, "download start: bad body");
        return;
    }
    struct dargs *a = sl_xcalloc(1, sizeof(*a));
    snprintf(a->id, sizeof(a->id), "%s", sl_json_str(j, "id", ""));
    snprintf(a->bck, sizeof(a->bck), "%s", sl_json_str(j, "bck", ""));
    a->timeout_ms = (long)json_integer_value(json_object_get(j, "timeout_ms"));
    json_int_t nc = json_integer_value(json_object_get(j, "connections"));
    a->conns = nc > 0 && nc <= MAX_CONNS ? (int)nc : 0;
    a->desc = sl_xstrdup(sl_json_str(j, "description", ""));
    snprintf(a->provider, sizeof(a->provider), "%s", sl_json_str(j, "provider", "ais"));
    json_t *bk = json_object_get(j, "backend");
    if (json_is_object(bk)) {
        a->backend = true;
        a->prefix = sl_xstrdup(sl_json_str(bk, "prefix", ""));
        a->suffix = sl_xstrdup(sl_json_str(bk, "suffix", ""));
        a->sync = sl_json_bool(bk, "synchronize", false);
    }
    a->n = json_array_size(items);
    a->it = sl_xcalloc(a->n ? a->n : 1, sizeof(*a->it));
    for (size_t i = 0; i < a->n; i++) {
        json_t *p = json_array_get(items, i);
        const char *url = json_string_value(json_array_get(p, 0)), *name = json_string_value(json_array_get(p, 1));
        a->it[i].url = sl_xstrdup(url && scheme_ok(url) ? url : "http://invalid./");
        a->it[i].name = sl_xstrdup(name ? name : "");
    }
    json_decref(j);
    if (start_here(a, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
}

/* DELETE /v1/internal/download?id=ID: the ended job forgotten here */
static void internal_remove(struct sl_req *r)
{
    const char *id = sl_req_query(r, "id");
    int n = id && id[0] ? sl_job_remove(id) : 0;
    if (n < 0)
        sl_resp_errf(r, SL_EEXIST, "download job %s is still running on t[%s]: abort it first (DELETE "
                     "/v1/download/abort)", id, G.id);
    else
        sl_resp_json_new(r, 200, json_pack("{s:i}", "removed", n));
}

static bool download_internal(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/download"))
        return false;
    if (r->method == SL_M_DELETE)
        internal_remove(r);
    else if (r->method != SL_M_POST)
        sl_resp_method_not_allowed(r, "POST, DELETE");
    else
        sl_req_buffer_body(r, 512 * SL_MIB, internal_start);
    return true;
}

/* ------------------------------------------------------------------ */
/* the gateway                                                        */
/* ------------------------------------------------------------------ */

static void start_run(struct sl_req *r, void *arg)
{
    struct dargs *a = arg;
    struct sl_err err = { 0 };
    json_t *resp = json_pack("{s:s}", "id", a->id);
    if (G.role == SL_ROLE_STANDALONE) {
        if (start_here(a, &err) < 0)
            sl_resp_err(r, &err);
        else
            sl_resp_json(r, 200, resp);
        json_decref(resp);
        return;
    }
    json_t *body = dargs_json(a);
    char *what = sl_xasprintf("download %s", a->id);
    if (sl_tfan_start_job(0, "/v1/internal/download", body, what, a->id, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_json(r, 200, resp);
    json_decref(resp);
    free(what);
    json_decref(body);
    dargs_free(a);
}

static void post_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!j) {
        sl_resp_err(r, &err);
        return;
    }
    struct dargs *a = sl_xcalloc(1, sizeof(*a));
    struct sl_bck b;
    if (dargs_parse(j, a, &err) < 0 ||
        sl_bck_resolve(a->bck, sl_json_str(json_object_get(j, "bucket"), "provider", "ais"), NULL, &b, &err) < 0) {
        json_decref(j);
        dargs_free(a);
        sl_resp_err(r, &err);
        return;
    }
    if (a->backend && !sl_bck_remote(&b)) {
        sl_resp_errf(r, SL_EINVAL, "download: type backend fetches a remote bucket's objects into its cached copy: "
                     "%s://%s has no remote (an s3:// bucket, or an ais:// bucket with a backend_bck)",
                     sl_provider_scheme(b.provider), b.name);
        sl_bck_release(&b);
        json_decref(j);
        dargs_free(a);
        return;
    }
    snprintf(a->provider, sizeof(a->provider), "%s", b.provider);
    sl_bck_release(&b);
    json_decref(j);
    sl_job_id(a->id, sizeof(a->id), "dnl-");
    sl_req_offload(r, start_run, dargs_free, a);
}

/* ---- status, list, abort, remove (AIStore's GET /v1/download, DELETE /v1/download/abort|remove) ---- */

enum { A_STATUS, A_LIST, A_ABORT, A_REMOVE };

struct admin {
    int op;
    char id[64];
    char *regex;
    bool only_active;
};

static void admin_free(void *p)
{
    struct admin *a = p;
    if (a)
        free(a->regex);
    free(a);
}

static void gotime(int64_t ns, char *t, size_t n)
{
    if (ns)
        sl_format_gotime(ns, "2006-01-02T15:04:05.000000000Z07:00", t, n);
    else
        snprintf(t, n, "0001-01-01T00:00:00Z");
}

/* AIStore's dload.Job of download id, over the targets' snapshots in per
 * (errs: its download_errors into it, when not NULL) */
static json_t *job_of(json_t *per, const char *id, json_t *errs)
{
    int64_t start = 0, end = 0, fin = 0, nerr = 0, total = 0, skipped = 0;
    bool running = false, aborted = false;
    const char *desc = "";
    struct sl_snap_it it;
    for (sl_snaps_first(&it, per, id); it.sn; sl_snaps_next(&it)) {
        int64_t s0 = sl_json_int(it.sn, "start_ns", 0), e0 = sl_json_int(it.sn, "end_ns", 0);
        if (s0 && (!start || s0 < start))
            start = s0;
        running |= e0 == 0;
        end = e0 > end ? e0 : end;
        aborted |= sl_json_bool(it.sn, "aborted", false);
        json_t *st = json_object_get(it.sn, "stats"), *ext = json_object_get(it.sn, "ext");
        fin += sl_json_int(st, "out-objs", 0);
        nerr += sl_json_int(st, "err-objs", 0);
        total += sl_json_int(ext, "total", 0);
        skipped += sl_json_int(ext, "skipped", 0);
        if (sl_json_str(ext, "description", "")[0])
            desc = sl_json_str(ext, "description", "");
        size_t i;
        json_t *e;
        json_array_foreach(errs ? json_object_get(ext, "errors") : NULL, i, e)
            json_array_append_new(errs, json_pack("{s:s,s:s}", "name", sl_json_str(e, "obj", ""), "error",
                                                  sl_json_str(e, "msg", "")));
    }
    char ts[64], te[64];
    gotime(start, ts, sizeof(ts));
    gotime(running ? 0 : end, te, sizeof(te));
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:b,s:b}", "id", id, "xaction_id", id, "description",
                     desc, "started_time", ts, "finished_time", te, "finished_cnt", (json_int_t)fin, "scheduled_cnt",
                     (json_int_t)(fin + nerr + skipped), "skipped_cnt", (json_int_t)skipped, "error_cnt", (json_int_t)nerr, "total",
                     (json_int_t)total, "all_dispatched", !running, "aborted", aborted);
}

static void admin_run(struct sl_req *r, void *arg)
{
    struct admin *a = arg;
    struct sl_err err = { 0 };
    json_t *per = sl_cluster_job_snaps(a->op == A_LIST ? NULL : a->id, "download", false, &err);
    bool known = false;
    struct sl_snap_it it;
    for (sl_snaps_first(&it, per, a->op == A_LIST ? NULL : a->id); it.sn && !known; sl_snaps_next(&it))
        known = true;
    if (a->op != A_LIST && !known) {
        sl_resp_errf(r, SL_ENOENT, "download job \"%s\" not found%s%s (the jobs: GET /v1/download)", a->id,
                     err.msg[0] ? "; " : "", err.msg);
    } else if (a->op == A_STATUS) {
        json_t *errs = json_array();
        json_t *j = job_of(per, a->id, a->only_active ? NULL : errs);
        if (json_array_size(errs))
            json_object_set(j, "download_errors", errs);
        json_decref(errs);
        sl_resp_json_new(r, 200, j);
    } else if (a->op == A_LIST) {
        regex_t re;
        bool have_re = a->regex && a->regex[0];
        if (have_re && regcomp(&re, a->regex, REG_EXTENDED | REG_NOSUB) != 0) {
            sl_resp_errf(r, SL_EINVAL, "download list: invalid regex \"%s\" (POSIX extended)", a->regex);
            json_decref(per);
            admin_free(a);
            return;
        }
        json_t *seen = json_object(), *out = json_array();
        for (sl_snaps_first(&it, per, NULL); it.sn; sl_snaps_next(&it)) {
            const char *id = sl_json_str(it.sn, "id", "");
            if (json_object_get(seen, id))
                continue;
            json_object_set_new(seen, id, json_true());
            json_t *j = job_of(per, id, NULL);
            bool keep = (!a->only_active || !json_is_true(json_object_get(j, "all_dispatched"))) &&
                        (!have_re || regexec(&re, sl_json_str(j, "description", ""), 0, NULL, 0) == 0);
            if (keep)
                json_array_append(out, j);
            json_decref(j);
        }
        if (have_re)
            regfree(&re);
        json_decref(seen);
        sl_resp_json_new(r, 200, out);
    } else if (a->op == A_ABORT) {
        int n = sl_cluster_stop_jobs(a->id, "download");
        sl_logi("download %s: abort requested (%d running instance(s))", a->id, n);
        sl_resp_empty(r, 200);
    } else {
        bool running = false;
        for (sl_snaps_first(&it, per, a->id); it.sn; sl_snaps_next(&it))
            running |= sl_json_int(it.sn, "end_ns", 0) == 0;
        if (running) {
            sl_resp_errf(r, SL_EEXIST, "download job %s is still running: abort it first (DELETE /v1/download/abort "
                         "{\"id\": \"%s\"})", a->id, a->id);
        } else {
            char *q = sl_url_encode_query(a->id);
            struct sl_tfan t;
            sl_tfan_init(&t, 0, "DELETE", "/v1/internal/download?id=%s", q);
            free(q);
            sl_tfan_run(&t, sl_conf->cplane_timeout_ns / 1000000);
            char bad[600] = "";
            for (int i = 0; i < t.n && !bad[0]; i++)
                if (!t.f[i].ok || t.f[i].resp.status != 200)
                    snprintf(bad, sizeof(bad), "t[%s]: %.500s", t.who[i]->id,
                             t.f[i].resp.err[0] ? t.f[i].resp.err : "no answer");
            sl_tfan_free(&t);
            if (G.role == SL_ROLE_STANDALONE)
                sl_job_remove(a->id);
            if (bad[0])
                sl_resp_errf(r, SL_EUNAVAIL, "download remove %s: %s (the others forgot it); retry", a->id, bad);
            else
                sl_resp_empty(r, 200);
        }
    }
    json_decref(per);
    admin_free(a); /* (ours: the offload's cancel frees it only when this does not run) */
}

/* the id and options: the body (AIStore's AdminBody) or the query */
static void admin_parse(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!j) {
        sl_resp_err(r, &err);
        return;
    }
    if (!json_is_null(j) && !json_is_object(j)) {
        json_decref(j);
        sl_resp_errf(r, SL_EINVAL, "download: the body must be {\"id\": \"dnl-...\"} (or pass ?id=)");
        return;
    }
    struct admin *a = sl_xcalloc(1, sizeof(*a));
    const char *qid = sl_req_query(r, "id");
    snprintf(a->id, sizeof(a->id), "%s", qid && qid[0] ? qid : sl_json_str(j, "id", ""));
    const char *rx = sl_req_query(r, "regex");
    a->regex = sl_xstrdup(rx ? rx : sl_json_str(j, "regex", ""));
    a->only_active = sl_json_bool(j, "only_active_tasks", false) || sl_req_query_bool(r, "only_active_tasks");
    json_decref(j);
    const char *sub = r->path + strlen("/v1/download");
    if (r->method == SL_M_GET && !*sub)
        a->op = a->id[0] ? A_STATUS : A_LIST;
    else if (r->method == SL_M_DELETE && !strcmp(sub, "/abort"))
        a->op = A_ABORT;
    else if (r->method == SL_M_DELETE && !strcmp(sub, "/remove"))
        a->op = A_REMOVE;
    else {
        sl_resp_errf(r, SL_EINVAL, "unsupported request %s %s: the downloader serves POST /v1/download (start), "
                     "GET /v1/download [{\"id\"}] (status; without id the list), DELETE /v1/download/abort and "
                     "DELETE /v1/download/remove {\"id\"}", r->method_str, r->path);
        admin_free(a);
        return;
    }
    if ((a->op == A_ABORT || a->op == A_REMOVE) && !a->id[0]) {
        sl_resp_errf(r, SL_EINVAL, "download %s: name the job: {\"id\": \"dnl-...\"} or ?id=dnl-...",
                     a->op == A_ABORT ? "abort" : "remove");
        admin_free(a);
        return;
    }
    if (a->id[0] && a->regex[0]) {
        sl_resp_errf(r, SL_EINVAL, "download: regex \"%s\" and job id \"%s\" cannot be given together", a->regex,
                     a->id);
        admin_free(a);
        return;
    }
    sl_req_offload(r, admin_run, admin_free, a);
}

static void download_route(struct sl_req *r)
{
    if (G.role == SL_ROLE_TARGET) {
        sl_resp_errf(r, SL_EINVAL, "%s is a storage target: send /v1/download requests to a gateway (proxy)",
                     G.name);
        return;
    }
    if (r->method == SL_M_POST && !strcmp(r->path, "/v1/download")) {
        if (G.role == SL_ROLE_PROXY && !sl_is_primary())
            sl_forward_to_primary(r);
        else
            sl_req_buffer_body(r, 64 * SL_MIB, post_done);
        return;
    }
    if (r->method == SL_M_GET || r->method == SL_M_DELETE) {
        sl_req_buffer_body(r, SL_MIB, admin_parse);
        return;
    }
    sl_resp_method_not_allowed(r, "POST, GET, DELETE");
}

static const char *const download_paths[] = { "/v1/download", NULL };

const struct sl_module sl_download_module = {
    .name = "download",
    .paths = download_paths,
    .route = download_route,
    .internal = download_internal,
};
