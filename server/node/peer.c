/* SPDX-License-Identifier: MIT
 * peer.c: see peer.h.
 */
#include "peer.h"
#include "cksum.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "sec.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t tkey;

struct thandles {
    CURL *h;
    CURLM *m;   /* fan-outs: the multi handle owns a connection cache */
};

static void free_handles(void *p)
{
    struct thandles *t = p;
    if (t && t->h)
        curl_easy_cleanup(t->h);
    if (t && t->m)
        curl_multi_cleanup(t->m);
    free(t);
}

static void init_once(void);

static CURLM *multi_handle(void)
{
    pthread_once(&once, init_once);
    struct thandles *t = pthread_getspecific(tkey);
    if (!t) {
        t = sl_xcalloc(1, sizeof(*t));
        pthread_setspecific(tkey, t);
    }
    if (!t->m)
        t->m = curl_multi_init();
    return t->m;
}

static void init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_key_create(&tkey, free_handles);
}

void sl_peer_global_init(void)
{
    pthread_once(&once, init_once);
}

/* One handle per thread: curl keeps the connection cache in the handle, so
 * consecutive calls from a thread reuse connections to the same peer. */
static CURL *handle(void)
{
    pthread_once(&once, init_once);
    struct thandles *t = pthread_getspecific(tkey);
    if (!t) {
        t = sl_xcalloc(1, sizeof(*t));
        pthread_setspecific(tkey, t);
    }
    if (!t->h)
        t->h = curl_easy_init();
    else
        curl_easy_reset(t->h);
    return t->h;
}

/* Handles for calls from short-lived threads (one per get-batch peer):
 * taken from and given back to a pool, so their connections to peers are
 * reused across threads instead of opened per thread. */
#define POOL_MAX 64
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static CURL *pool[POOL_MAX];
static int npool;

static CURL *pool_get(void)
{
    pthread_once(&once, init_once);
    CURL *c = NULL;
    pthread_mutex_lock(&pool_mu);
    if (npool)
        c = pool[--npool];
    pthread_mutex_unlock(&pool_mu);
    if (c)
        curl_easy_reset(c);
    return c ? c : curl_easy_init();
}

static void pool_put(CURL *c)
{
    pthread_mutex_lock(&pool_mu);
    if (npool < POOL_MAX) {
        pool[npool++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&pool_mu);
    if (c)
        curl_easy_cleanup(c);
}

void sl_peer_resp_free(struct sl_peer_resp *r)
{
    sl_buf_free(&r->body);
}

static size_t wr_buf(char *p, size_t sz, size_t n, void *ud)
{
    sl_buf_add(ud, p, sz * n);
    return sz * n;
}

/* every call carries the cluster signature (sec.h), binding an in-memory
 * body too */
static struct curl_slist *sign(struct curl_slist *l, const char *method, const char *url, const void *body,
                               size_t blen)
{
    char sig[SL_SEC_HDR_MAX], bh[SL_CKSUM_HEX_MAX], bl[160];
    if (body)
        sl_cksum_buf(SL_CK_SHA256, body, blen, bh);
    sl_sec_header(method, url, body ? bh : NULL, sig, sizeof(sig));
    if (!sig[0])
        return l;
    l = curl_slist_append(l, sig);
    if (body) {
        snprintf(bl, sizeof(bl), SL_SEC_BODY_HDR ": %s", bh);
        l = curl_slist_append(l, bl);
    }
    return l;
}

static struct curl_slist *mk_headers(const char *method, const char *url, const void *body, size_t blen,
                                     const struct sl_peer_hdr *hdrs, int n, const char *ctype)
{
    struct curl_slist *l = method ? sign(NULL, method, url, body, blen) : NULL; /* (NULL: to another cluster) */
    char tmp[2048];
    for (int i = 0; i < n; i++) {
        snprintf(tmp, sizeof(tmp), "%s: %s", hdrs[i].k, hdrs[i].v);
        l = curl_slist_append(l, tmp);
    }
    if (ctype) {
        snprintf(tmp, sizeof(tmp), "Content-Type: %s", ctype);
        l = curl_slist_append(l, tmp);
    }
    l = curl_slist_append(l, "Expect:");
    return l;
}

/* sl_peer_abort_on: calls made by this thread give up once *flag is true */
static __thread const volatile bool *abort_flag;

void sl_peer_abort_on(const volatile bool *flag)
{
    abort_flag = flag;
}

static int abort_cb(void *p, curl_off_t dlt, curl_off_t dln, curl_off_t ult, curl_off_t uln)
{
    (void)dlt;
    (void)dln;
    (void)ult;
    (void)uln;
    const volatile bool *f = p;
    return f && *f; /* non-zero: CURLE_ABORTED_BY_CALLBACK */
}

static void common_opts(CURL *c, const char *url, int64_t timeout_ms)
{
    /* (handles are pooled: set or cleared on every call) */
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, abort_flag ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, abort_flag ? abort_cb : NULL);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)abort_flag);
    if (timeout_ms <= 0)
        timeout_ms = sl_conf ? sl_conf->cplane_timeout_ns / 1000000 : 2000;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)SL_MIN(timeout_ms, 3000));
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "shale-node/" SL_VERSION);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L); /* the request target as signed */
    sl_peer_tls_opts(c);
}

void sl_peer_tls_opts(void *curl)
{
    CURL *c = curl;
    if (!sl_conf)
        return;
    if (sl_conf->skip_verify) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (sl_conf->client_ca_tls[0]) {
        curl_easy_setopt(c, CURLOPT_CAINFO, sl_conf->client_ca_tls);
    }
}

static void finish(CURL *c, CURLcode rc, struct sl_peer_resp *r, const char *method, const char *url)
{
    if (rc != CURLE_OK) {
        snprintf(r->err, sizeof(r->err), "%s %s: %s", method, url, curl_easy_strerror(rc));
        r->status = 0;
        return;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->status >= 400) {
        json_error_t je;
        json_t *j = r->body.len ? json_loadb(r->body.p, r->body.len, 0, &je) : NULL;
        const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
        if (m)
            snprintf(r->err, sizeof(r->err), "%s", m);
        else
            snprintf(r->err, sizeof(r->err), "%s %s: HTTP %ld", method, url, r->status);
        json_decref(j);
    }
}

static int call(bool foreign, const char *method, const char *url, const struct sl_peer_hdr *hdrs, int nhdrs,
                const void *body, size_t blen, int64_t timeout_ms, struct sl_peer_resp *r)
{
    memset(r, 0, sizeof(*r));
    CURL *c = handle();
    common_opts(c, url, timeout_ms);
    struct curl_slist *hl =
        mk_headers(foreign ? NULL : method, url, body, blen, hdrs, nhdrs, body ? "application/json" : NULL);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wr_buf);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
    CURLcode rc = curl_easy_perform(c);
    finish(c, rc, r, method, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hl);
    return rc == CURLE_OK ? 0 : -1;
}

int sl_peer_call(const char *method, const char *url, const struct sl_peer_hdr *hdrs, int nhdrs, const void *body,
                 size_t blen, int64_t timeout_ms, struct sl_peer_resp *r)
{
    return call(false, method, url, hdrs, nhdrs, body, blen, timeout_ms, r);
}

int sl_peer_call_foreign(const char *method, const char *url, int64_t timeout_ms, struct sl_peer_resp *r)
{
    return call(true, method, url, NULL, 0, NULL, 0, timeout_ms, r);
}

int sl_peer_call_foreign_body(const char *method, const char *url, const struct sl_peer_hdr *hdrs, int nhdrs,
                              const char *json, int64_t timeout_ms, struct sl_peer_resp *r)
{
    return call(true, method, url, hdrs, nhdrs, json, json ? strlen(json) : 0, timeout_ms, r);
}

int sl_peer_json(const char *method, const char *url, json_t *body, int64_t timeout_ms, struct sl_peer_resp *r)
{
    size_t len = 0;
    char *s = body ? sl_json_dump(body, SL_JD_U64STR, &len) : NULL;
    json_decref(body);
    int rc = sl_peer_call(method, url, NULL, 0, s, len, timeout_ms, r);
    free(s);
    return rc;
}

struct fd_src {
    int fd;
    uint64_t off, len;
};

static size_t rd_fd(char *buf, size_t sz, size_t n, void *ud)
{
    struct fd_src *s = ud;
    size_t want = sz * n;
    if (s->off >= s->len)
        return 0;
    if (want > s->len - s->off)
        want = (size_t)(s->len - s->off);
    ssize_t r = pread(s->fd, buf, want, (off_t)s->off);
    if (r <= 0)
        return CURL_READFUNC_ABORT;
    s->off += (uint64_t)r;
    return (size_t)r;
}

static int seek_fd(void *ud, curl_off_t off, int origin)
{
    struct fd_src *s = ud;
    if (origin != SEEK_SET || off < 0 || (uint64_t)off > s->len)
        return CURL_SEEKFUNC_FAIL;
    s->off = (uint64_t)off;
    return CURL_SEEKFUNC_OK;
}

int sl_peer_put_fd(const char *url, const struct sl_peer_hdr *hdrs, int nhdrs, int fd, uint64_t len,
                   int64_t timeout_ms, struct sl_peer_resp *r)
{
    memset(r, 0, sizeof(*r));
    CURL *c = handle();
    common_opts(c, url, timeout_ms);
    struct curl_slist *hl = mk_headers("PUT", url, NULL, 0, hdrs, nhdrs, "application/octet-stream");
    struct fd_src src = { fd, 0, len };
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, rd_fd);
    curl_easy_setopt(c, CURLOPT_READDATA, &src);
    curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, seek_fd);
    curl_easy_setopt(c, CURLOPT_SEEKDATA, &src);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wr_buf);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
    CURLcode rc = curl_easy_perform(c);
    finish(c, rc, r, "PUT", url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hl);
    return rc == CURLE_OK ? 0 : -1;
}

struct stream_ctx {
    CURL *c;
    sl_peer_sink sink;
    sl_peer_hdr_cb hcb;
    void *ctx;
    struct sl_buf *errbody;
    bool aborted;
};

static size_t wr_stream(char *p, size_t sz, size_t n, void *ud)
{
    struct stream_ctx *s = ud;
    long status = 0;
    curl_easy_getinfo(s->c, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 300) {
        sl_buf_add(s->errbody, p, sz * n);
        return sz * n;
    }
    if (s->sink(s->ctx, p, sz * n) < 0) {
        s->aborted = true;
        return 0;
    }
    return sz * n;
}

static size_t hdr_stream(char *p, size_t sz, size_t n, void *ud)
{
    struct stream_ctx *s = ud;
    size_t len = sz * n;
    if (!s->hcb)
        return len;
    const char *colon = memchr(p, ':', len);
    if (!colon)
        return len;
    char name[128], value[2048];
    size_t nl = (size_t)(colon - p);
    if (nl >= sizeof(name))
        return len;
    memcpy(name, p, nl);
    name[nl] = 0;
    const char *v = colon + 1;
    while (v < p + len && *v == ' ')
        v++;
    size_t vl = (size_t)(p + len - v);
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
        vl--;
    if (vl >= sizeof(value))
        vl = sizeof(value) - 1;
    memcpy(value, v, vl);
    value[vl] = 0;
    s->hcb(s->ctx, name, value);
    return len;
}

static int stream_call(bool pooled, long stall_s, const char *method, const char *url, const struct sl_peer_hdr *hdrs,
                       int nhdrs, const void *body, size_t blen, sl_peer_sink sink, sl_peer_hdr_cb hcb, void *ctx,
                       int64_t timeout_ms, struct sl_peer_resp *r)
{
    memset(r, 0, sizeof(*r));
    CURL *c = pooled ? pool_get() : handle();
    common_opts(c, url, timeout_ms);
    /* a peer that sends nothing for stall_s seconds is stuck (stopped,
     * swapping, wedged disk): give up on it instead of waiting for the
     * whole timeout */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, stall_s ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall_s);
    struct curl_slist *hl = mk_headers(method, url, body, blen, hdrs, nhdrs, body ? "application/json" : NULL);
    struct stream_ctx s = { c, sink, hcb, ctx, &r->body, false };
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wr_stream);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, hdr_stream);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &s);
    CURLcode rc = curl_easy_perform(c);
    finish(c, rc, r, method, url);
    if (s.aborted && rc != CURLE_OK)
        snprintf(r->err, sizeof(r->err), "%s %s: aborted by the receiver", method, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hl);
    if (pooled)
        pool_put(c);
    return rc == CURLE_OK ? 0 : -1;
}

int sl_peer_stream(const char *method, const char *url, const struct sl_peer_hdr *hdrs, int nhdrs, const void *body,
                   size_t blen, sl_peer_sink sink, sl_peer_hdr_cb hcb, void *ctx, int64_t timeout_ms,
                   struct sl_peer_resp *r)
{
    return stream_call(false, 0, method, url, hdrs, nhdrs, body, blen, sink, hcb, ctx, timeout_ms, r);
}

int sl_peer_stream_pooled(const char *method, const char *url, const void *body, size_t blen, sl_peer_sink sink,
                          void *ctx, int64_t timeout_ms, struct sl_peer_resp *r)
{
    return stream_call(true, 0, method, url, NULL, 0, body, blen, sink, NULL, ctx, timeout_ms, r);
}

int sl_peer_get_stream(const char *url, const struct sl_peer_hdr *hdrs, int nhdrs, sl_peer_sink sink,
                       sl_peer_hdr_cb hcb, void *ctx, int64_t timeout_ms, struct sl_peer_resp *r)
{
    return stream_call(false, 0, "GET", url, hdrs, nhdrs, NULL, 0, sink, hcb, ctx, timeout_ms, r);
}

int sl_peer_get_stream_stall(const char *url, const struct sl_peer_hdr *hdrs, int nhdrs, sl_peer_sink sink,
                             sl_peer_hdr_cb hcb, void *ctx, int64_t timeout_ms, long stall_s, struct sl_peer_resp *r)
{
    return stream_call(false, stall_s, "GET", url, hdrs, nhdrs, NULL, 0, sink, hcb, ctx, timeout_ms, r);
}

void sl_peer_add_redirect_marks(struct sl_buf *url, const char *pid)
{
    char utm[24];
    sl_base36((uint64_t)sl_now_ns(), utm, sizeof(utm));
    sl_buf_adds(url, strchr(url->p, '?') ? "&pid=" : "?pid=");
    sl_buf_adds(url, pid);
    sl_buf_adds(url, "&utm=");
    sl_buf_adds(url, utm);
}

void sl_peer_redirect_url(struct sl_buf *url, const char *pid, const char *method, const struct sl_buf *body)
{
    if (body) {
        char bh[SL_CKSUM_HEX_MAX];
        sl_cksum_buf(SL_CK_SHA256, body->p ? body->p : "", body->len, bh);
        sl_buf_printf(url, "%cbh=%s", strchr(url->p, '?') ? '&' : '?', bh);
    }
    sl_peer_add_redirect_marks(url, pid);
    sl_sec_sign_url(url, method);
}

void sl_peer_fanout(struct sl_fan *reqs, int n, int64_t timeout_ms)
{
    pthread_once(&once, init_once);
    if (timeout_ms <= 0)
        timeout_ms = sl_conf ? sl_conf->cplane_timeout_ns / 1000000 : 2000;
    CURLM *m = multi_handle();
    CURL **hs = sl_xcalloc((size_t)(n ? n : 1), sizeof(CURL *));
    struct curl_slist **hl = sl_xcalloc((size_t)(n ? n : 1), sizeof(struct curl_slist *));
    for (int i = 0; i < n; i++) {
        memset(&reqs[i].resp, 0, sizeof(reqs[i].resp));
        reqs[i].ok = 0;
        CURL *c = curl_easy_init();
        hs[i] = c;
        common_opts(c, reqs[i].url, timeout_ms);
        const char *method = reqs[i].method ? reqs[i].method : "GET";
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        if (!strcmp(method, "HEAD"))
            curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        struct curl_slist *l = sign(NULL, method, reqs[i].url, reqs[i].body, reqs[i].blen);
        if (reqs[i].body) {
            l = curl_slist_append(l, "Content-Type: application/json");
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, reqs[i].body);
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)reqs[i].blen);
        }
        if (reqs[i].accept) {
            char a[128];
            snprintf(a, sizeof(a), "Accept: %s", reqs[i].accept);
            l = curl_slist_append(l, a);
        }
        l = curl_slist_append(l, "Expect:");
        hl[i] = l;
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, l);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wr_buf);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &reqs[i].resp.body);
        curl_easy_setopt(c, CURLOPT_PRIVATE, (void *)(intptr_t)i);
        curl_multi_add_handle(m, c);
    }
    int running = 0;
    int64_t deadline = sl_mono_ns() + (timeout_ms + 1000) * 1000000LL;
    do {
        curl_multi_perform(m, &running);
        if (running)
            curl_multi_poll(m, NULL, 0, 100, NULL);
    } while (running && sl_mono_ns() < deadline);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        intptr_t i;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&i);
        finish(msg->easy_handle, msg->data.result, &reqs[i].resp, reqs[i].method ? reqs[i].method : "GET",
               reqs[i].url);
        reqs[i].ok = msg->data.result == CURLE_OK;
    }
    for (int i = 0; i < n; i++) {
        if (!reqs[i].ok && !reqs[i].resp.err[0])
            snprintf(reqs[i].resp.err, sizeof(reqs[i].resp.err), "%s: no answer within %lld ms", reqs[i].url,
                     (long long)timeout_ms);
        curl_multi_remove_handle(m, hs[i]);
        curl_easy_cleanup(hs[i]);
        curl_slist_free_all(hl[i]);
    }
    free(hs);
    free(hl);
}

void sl_peer_fanout_free(struct sl_fan *reqs, int n)
{
    for (int i = 0; i < n; i++)
        sl_peer_resp_free(&reqs[i].resp);
}

void sl_peer_fanout_free_urls(struct sl_fan *reqs, int n)
{
    sl_peer_fanout_free(reqs, n);
    for (int i = 0; i < n; i++)
        free((char *)reqs[i].url);
}

void sl_peer_obj_url(struct sl_buf *out, const char *node_url, const char *bck, const char *provider, const char *obj,
                     size_t olen)
{
    char *eb = sl_url_encode_path(bck, strlen(bck)), *eo = sl_url_encode_path(obj, olen);
    sl_buf_printf(out, "%s/v1/objects/%s/%s?provider=%s", node_url, eb, eo, provider);
    free(eb);
    free(eo);
}
