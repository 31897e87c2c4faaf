/* SPDX-License-Identifier: MIT
 * download.c: AIStore's downloader (api/download.go, ext/dload):
 *
 *   POST /v1/download {"type": "single"|"range"|"multi",
 *                      "bucket": {"name", "provider"}, "timeout", "description",
 *                      single: "link", "object_name"
 *                      range:  "template" (http://h/shard-{000..099}.tar), "subdir"
 *                      multi:  "objects" (list of URLs, or {name: URL})}
 *        -> {"id": "dnl-..."}
 *
 * The gateway expands the request into (URL, object name) pairs and starts
 * job "download" on every target; each target downloads, with up to 4
 * transfers at a time, the names whose HRW owner it is, through the normal
 * PUT path (checksum, mirroring, EC). A name is the URL's last path
 * element ("subdir"/ prefixed).
 * Only http and https URLs are accepted (400 otherwise: no file://, so no
 * node's local files). "timeout" (a duration, e.g. "30s") bounds each
 * object; a failed transfer is retried once. Status, wait and abort go
 * through the common job API (kind "download"); each target's failures
 * ({obj, url, ecode, msg}) are in its job's ext "errors"; stored objects
 * and bytes count as the job's out-objs/out-bytes.
 * Not done: type "backend", GET/DELETE /v1/download.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_ITEMS 1000000
#define ERRS_KEPT 1000

struct ditem {
    char *url, *name;
};

struct dargs {
    char id[40];
    char bck[SL_MAX_BCKNAME + 1];
    struct ditem *it;
    size_t n;
    long timeout_ms;
    char *desc;
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
    return sl_errf(err, SL_EINVAL, "download: unsupported type \"%s\" (supported: single, range, multi; "
                   "backend is not implemented)", type);
}

static json_t *dargs_json(const struct dargs *a)
{
    json_t *items = json_array();
    for (size_t i = 0; i < a->n; i++)
        json_array_append_new(items, json_pack("[s,s]", a->it[i].url, a->it[i].name));
    return json_pack("{s:s,s:s,s:I,s:s,s:o}", "id", a->id, "bck", a->bck, "timeout_ms", (json_int_t)a->timeout_ms,
                     "description", a->desc ? a->desc : "", "items", items);
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
        if (fetch_one(u, it, msg, sizeof(msg), &ecode) == 0) {
            sl_job_add(&u->job->out_objs, 1);
        } else if (!sl_job_aborting(u->job)) {
            sl_job_add(&u->job->err_objs, 1);
            sl_logw("download %s: %s -> %s/%s: %s", u->a->id, it->url, u->b.name, it->name, msg);
            pthread_mutex_lock(&u->mu);
            if (json_array_size(u->errs) < ERRS_KEPT) {
                json_array_append_new(u->errs, json_pack("{s:s,s:s,s:I,s:s}", "obj", it->name, "url", it->url,
                                                         "ecode", (json_int_t)ecode, "msg", msg));
                sl_job_set_ext(u->job, json_pack("{s:s,s:o}", "description", u->a->desc,
                                                 "errors", json_deep_copy(u->errs)));
            }
            pthread_mutex_unlock(&u->mu);
        }
    }
    return NULL;
}

static void *run_thread(void *arg)
{
    struct run *u = arg;
    pthread_t th[WORKERS];
    int nw = 0;
    for (int k = 0; k < WORKERS && (size_t)k < u->a->n; k++)
        if (pthread_create(&th[nw], NULL, worker, u) == 0)
            nw++;
    if (!nw)
        worker(u);
    for (int k = 0; k < nw; k++)
        pthread_join(th[k], NULL);
    sl_logi("download %s: %llu object(s) into %s here, %llu failed", u->a->id,
            (unsigned long long)u->job->out_objs, u->b.name, (unsigned long long)u->job->err_objs);
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
    if (sl_bck_resolve(a->bck, "ais", NULL, &u->b, err) < 0) {
        dargs_free(a);
        free(u);
        return -1;
    }
    u->errs = json_array();
    pthread_mutex_init(&u->mu, NULL);
    u->job = sl_job_start("download", a->id, a->bck, "");
    if (!a->desc)
        a->desc = sl_xstrdup("");
    sl_job_set_ext(u->job, json_pack("{s:s,s:[]}", "description", a->desc, "errors"));
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
    a->desc = sl_xstrdup(sl_json_str(j, "description", ""));
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

static bool download_internal(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/download"))
        return false;
    if (r->method != SL_M_POST) {
        sl_resp_method_not_allowed(r, "POST");
        return true;
    }
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
    sl_bck_release(&b);
    json_decref(j);
    sl_job_id(a->id, sizeof(a->id), "dnl-");
    sl_req_offload(r, start_run, dargs_free, a);
}

static void download_route(struct sl_req *r)
{
    if (G.role == SL_ROLE_TARGET) {
        sl_resp_errf(r, SL_EINVAL, "%s is a storage target: send /v1/download requests to a gateway (proxy)",
                     G.name);
        return;
    }
    if (r->method == SL_M_POST) {
        if (G.role == SL_ROLE_PROXY && !sl_is_primary())
            sl_forward_to_primary(r);
        else
            sl_req_buffer_body(r, 64 * SL_MIB, post_done);
        return;
    }
    sl_resp_errf(r, SL_EINVAL, "unsupported request %s %s: POST /v1/download starts a download; its status, "
                 "wait and abort go through the job API (GET /v1/cluster?what=status / kind download, "
                 "shale job show|wait|stop download)", r->method_str, r->path);
}

static const char *const download_paths[] = { "/v1/download", NULL };

const struct sl_module sl_download_module = {
    .name = "download",
    .paths = download_paths,
    .route = download_route,
    .internal = download_internal,
};
