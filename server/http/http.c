/* SPDX-License-Identifier: MIT
 * http.c: libmicrohttpd glue: request lifecycle, body buffering/streaming,
 * response construction, AIStore error bodies.
 */
#include "http.h"
#include "accept.h"
#include "bg.h"
#include "jsonx.h"
#include "log.h"
#include "stats.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static char node_name[80] = "";
static uint64_t req_counter;
static sl_router_fn router;
static size_t max_header; /* net.http.max_header_size at start; 0 = no check */
static unsigned idle_timeout_s, hdr_timeout_s; /* net.http.idle_conn_time, header_timeout at start */

/* the connection's socket (accept.c keeps its phase by it) */
static int conn_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

void sl_http_set_node(const char *n)
{
    snprintf(node_name, sizeof(node_name), "%s", n);
}

static int method_of(const char *m)
{
    if (!strcmp(m, "GET"))
        return SL_M_GET;
    if (!strcmp(m, "HEAD"))
        return SL_M_HEAD;
    if (!strcmp(m, "PUT"))
        return SL_M_PUT;
    if (!strcmp(m, "POST"))
        return SL_M_POST;
    if (!strcmp(m, "DELETE"))
        return SL_M_DELETE;
    if (!strcmp(m, "PATCH"))
        return SL_M_PATCH;
    return SL_M_OTHER;
}

/* A request is about 1.5 KiB (its error message buffer), a size glibc serves
 * from its large bins after consolidating the small free chunks: ~1% of a
 * small GET's CPU. Each HTTP thread keeps a few freed ones instead. (Not
 * under AddressSanitizer, which should see every free.) */
#if defined(__SANITIZE_ADDRESS__)
static struct sl_req *req_new(void)
{
    return sl_xcalloc(1, sizeof(struct sl_req));
}

static void req_release(struct sl_req *r)
{
    free(r);
}
#else
#define REQ_CACHE 16

struct req_cache {
    int n;
    struct sl_req *r[REQ_CACHE];
};

static pthread_key_t req_cache_key;
static pthread_once_t req_cache_once = PTHREAD_ONCE_INIT;

static void req_cache_free(void *p)
{
    struct req_cache *c = p;
    while (c->n)
        free(c->r[--c->n]);
    free(c);
}

static void req_cache_init(void)
{
    pthread_key_create(&req_cache_key, req_cache_free);
}

static struct req_cache *req_cache(void)
{
    pthread_once(&req_cache_once, req_cache_init);
    struct req_cache *c = pthread_getspecific(req_cache_key);
    if (!c) {
        c = sl_xcalloc(1, sizeof(*c));
        if (pthread_setspecific(req_cache_key, c) != 0) {
            free(c);
            return NULL;
        }
    }
    return c;
}

static struct sl_req *req_new(void)
{
    struct req_cache *c = req_cache();
    if (!c || !c->n)
        return sl_xcalloc(1, sizeof(struct sl_req));
    struct sl_req *r = c->r[--c->n];
    memset(r, 0, sizeof(*r));
    return r;
}

static void req_release(struct sl_req *r)
{
    struct req_cache *c = req_cache();
    if (c && c->n < REQ_CACHE)
        c->r[c->n++] = r;
    else
        free(r);
}
#endif

static void *uri_log_cb(void *cls, const char *uri, struct MHD_Connection *c)
{
    struct sl_req *r = req_new();
    r->raw_uri = sl_xstrdup(uri ? uri : "/");
    r->uri_wire = uri;
    r->conn = c;
    r->t0 = sl_mono_ns();
    r->content_length = -1;
    uint64_t n = __atomic_add_fetch(&req_counter, 1, __ATOMIC_RELAXED);
    sl_base36(n, r->reqid, sizeof(r->reqid));
    return r;
}

/* "ip:port" of the client, formatted on first use (most requests never ask;
 * r->remote is a cache, hence the cast) */
const char *sl_req_remote(const struct sl_req *cr)
{
    struct sl_req *r = (struct sl_req *)cr;
    if (r->remote[0] || !r->conn)
        return r->remote;
    struct MHD_Connection *c = r->conn;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return r->remote;
    char ip[INET6_ADDRSTRLEN] = "";
    int port = 0;
    if (ci->client_addr->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ci->client_addr;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
        port = ntohs(a->sin_port);
    } else if (ci->client_addr->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ci->client_addr;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
        port = ntohs(a->sin6_port);
    }
    snprintf(r->remote, sizeof(r->remote), "%s:%d", ip, port);
    return r->remote;
}

static void parse_uri(struct sl_req *r)
{
    const char *u = r->raw_uri;
    const char *qm = strchr(u, '?');
    size_t plen = qm ? (size_t)(qm - u) : strlen(u);
    r->path = sl_xmalloc(plen + 1);
    r->path_len = sl_url_decode(u, plen, r->path, false);
    if (memchr(r->path, 0, r->path_len))
        r->path_bad = true;
    if (!qm)
        return;
    const char *q = qm + 1;
    int cap = 0;
    while (*q) {
        const char *amp = strchr(q, '&');
        size_t l = amp ? (size_t)(amp - q) : strlen(q);
        if (l) {
            const char *eq = memchr(q, '=', l);
            size_t kl = eq ? (size_t)(eq - q) : l;
            if (r->nq == cap) {
                cap = cap ? cap * 2 : 8;
                r->q = sl_xrealloc(r->q, (size_t)cap * sizeof(*r->q));
            }
            char *k = sl_xmalloc(kl + 1);
            sl_url_decode(q, kl, k, true);
            size_t vl = eq ? l - kl - 1 : 0;
            char *v = sl_xmalloc(vl + 1);
            size_t dv = sl_url_decode(eq ? eq + 1 : "", vl, v, true);
            if (memchr(v, 0, dv))
                r->path_bad = true;
            r->q[r->nq].k = k;
            r->q[r->nq].v = v;
            r->nq++;
        }
        if (!amp)
            break;
        q = amp + 1;
    }
}

static void free_req(struct sl_req *r)
{
    /* an answer made off the HTTP thread for a connection that closed
     * before it was resumed: never queued, so never freed by MHD */
    if (r->pending) {
        MHD_destroy_response(r->pending);
        r->pending = NULL;
    }
    json_decref(r->user);
    sl_cksum_free(&r->bh_ck);
    free(r->raw_uri);
    free(r->path);
    for (int i = 0; i < r->nq; i++) {
        free(r->q[i].k);
        free(r->q[i].v);
    }
    free(r->q);
    sl_buf_free(&r->body);
    struct sl_hdr *h = r->hdrs;
    while (h) {
        struct sl_hdr *n = h->next;
        free(h); /* k and v are in the same block */
        h = n;
    }
    req_release(r);
}

const char *sl_req_query(const struct sl_req *r, const char *key)
{
    for (int i = 0; i < r->nq; i++)
        if (!strcmp(r->q[i].k, key))
            return r->q[i].v;
    return NULL;
}

bool sl_req_query_bool(const struct sl_req *r, const char *key)
{
    const char *v = sl_req_query(r, key);
    return v && (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes") || (v[0] == 0 && 0));
}

const char *sl_req_header(const struct sl_req *r, const char *name)
{
    return MHD_lookup_connection_value((struct MHD_Connection *)r->conn, MHD_HEADER_KIND, name);
}

struct hiter {
    const char *name;
    void (*cb)(void *, const char *);
    void *arg;
    int n;
};

static enum MHD_Result hiter_cb(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    struct hiter *h = cls;
    if (key && value && !strcasecmp(key, h->name)) {
        h->cb(h->arg, value);
        h->n++;
    }
    return MHD_YES;
}

int sl_req_header_all(const struct sl_req *r, const char *name, void (*cb)(void *arg, const char *v), void *arg)
{
    struct hiter h = { name, cb, arg, 0 };
    MHD_get_connection_values((struct MHD_Connection *)r->conn, MHD_HEADER_KIND, hiter_cb, &h);
    return h.n;
}

struct heach {
    void (*cb)(void *, const char *, const char *);
    void *arg;
};

static enum MHD_Result heach_cb(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
    (void)kind;
    struct heach *h = cls;
    h->cb(h->arg, k, v ? v : "");
    return MHD_YES;
}

void sl_req_headers_each(const struct sl_req *r, void (*cb)(void *arg, const char *k, const char *v), void *arg)
{
    struct heach h = { cb, arg };
    MHD_get_connection_values((struct MHD_Connection *)r->conn, MHD_HEADER_KIND, heach_cb, &h);
}

bool sl_req_path_is(const struct sl_req *r, const char *p)
{
    size_t n = strlen(p);
    return r->path_len >= n && memcmp(r->path, p, n) == 0 && (r->path_len == n || r->path[n] == '/');
}

/* 1*DIGIT, saturating at UINT64_MAX; NULL when there is no digit */
static const char *range_num(const char *p, const char *e, uint64_t *v)
{
    const char *s = p;
    uint64_t n = 0;
    for (; p < e && *p >= '0' && *p <= '9'; p++)
        n = n > (UINT64_MAX - 9) / 10 ? UINT64_MAX : n * 10 + (uint64_t)(*p - '0');
    *v = n;
    return p == s ? NULL : p;
}

/* one range-spec in [p, e): int-range "a-[b]" or suffix-range "-n" (no
 * spaces inside). 1 satisfiable (off, len set), 0 unsatisfiable, -1 invalid */
static int range_spec(const char *p, const char *e, uint64_t size, uint64_t *off, uint64_t *len)
{
    uint64_t a, b;
    if (p < e && *p == '-') {
        if (range_num(p + 1, e, &b) != e)
            return -1;
        if (!b || !size)
            return 0;
        *len = b > size ? size : b;
        *off = size - *len;
        return 1;
    }
    const char *q = range_num(p, e, &a);
    if (!q || q == e || *q != '-')
        return -1;
    b = UINT64_MAX;
    if (q + 1 < e && range_num(q + 1, e, &b) != e)
        return -1;
    if (b < a)
        return -1; /* "5-3": invalid, not merely unsatisfiable (RFC 9110 §14.1.1) */
    if (a >= size)
        return 0;
    if (b >= size)
        b = size - 1;
    *off = a;
    *len = b - a + 1;
    return 1;
}

int sl_range_parse(const char *h, uint64_t size, uint64_t *off, uint64_t *len)
{
    if (!h)
        return SL_RANGE_NONE;
    if (strncasecmp(h, "bytes=", 6))
        return SL_RANGE_INVALID;
    /* range-set = 1#range-spec: OWS around the commas, empty elements allowed */
    const char *p = h + 6, *end = p + strlen(p);
    int n = 0, sat = 0;
    uint64_t o1 = 0, l1 = 0; /* (*off, *len are set only for SL_RANGE_OK) */
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        const char *c = strchr(p, ',');
        const char *e = c ? c : end;
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        if (t > p) {
            uint64_t o = 0, l = 0;
            int rc = range_spec(p, t, size, &o, &l);
            if (rc < 0)
                return SL_RANGE_INVALID;
            if (rc && !sat++) {
                o1 = o;
                l1 = l;
            }
            n++;
        } else if (!c) {
            break;
        }
        p = c ? c + 1 : end;
    }
    if (!n)
        return SL_RANGE_INVALID;
    if (n > 1)
        return SL_RANGE_MULTI;
    if (!sat)
        return SL_RANGE_UNSAT;
    *off = o1;
    *len = l1;
    return SL_RANGE_OK;
}

char *sl_req_raw_seg_slash(const struct sl_req *r, int n)
{
    const char *p = r->raw_uri, *end = p + strcspn(p, "?");
    for (int i = 0; p < end && i <= n;) {
        while (p < end && *p == '/')
            p++;
        const char *e = p;
        while (e < end && *e != '/')
            e++;
        if (e == p)
            break;
        for (const char *q = p; q + 2 < e; q++) {
            if (q[0] == '%' && q[1] == '2' && (q[2] == 'f' || q[2] == 'F')) {
                char *out = sl_xmalloc((size_t)(e - p) + 1);
                size_t l = sl_url_decode(p, (size_t)(e - p), out, false);
                out[l] = 0;
                return out;
            }
        }
        p = e;
        i++;
    }
    return NULL;
}

void sl_req_buffer_body(struct sl_req *r, uint64_t limit, sl_body_done_fn done)
{
    r->body_mode = SL_BODY_BUFFER;
    r->body_limit = limit;
    r->on_done = done;
}

void sl_req_stream_body(struct sl_req *r, sl_body_data_fn data, sl_body_done_fn done)
{
    r->body_mode = SL_BODY_STREAM;
    r->on_data = data;
    r->on_done = done;
}

void sl_req_stream_body_bp(struct sl_req *r, sl_body_take_fn take, sl_body_done_fn done)
{
    r->body_mode = SL_BODY_STREAM;
    r->on_data = NULL;
    r->on_take = take;
    r->on_done = done;
}

json_t *sl_req_body_json(struct sl_req *r, struct sl_err *err)
{
    if (!r->body.len)
        return json_null();
    return sl_json_parse(r->body.p, r->body.len, "request body", err);
}

/* ---- responses ---- */

void sl_hdr_add(struct sl_req *r, const char *k, const char *v)
{
    /* one block for the node, the name and the value */
    size_t kl = strlen(k) + 1, vl = strlen(v) + 1;
    struct sl_hdr *h = sl_xmalloc(sizeof(*h) + kl + vl);
    h->k = memcpy((char *)(h + 1), k, kl);
    h->v = memcpy(h->k + kl, v, vl);
    h->next = NULL;
    struct sl_hdr **pp = &r->hdrs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = h;
}

void sl_hdr_del(struct sl_req *r, const char *k)
{
    struct sl_hdr **pp = &r->hdrs;
    while (*pp) {
        struct sl_hdr *h = *pp;
        if (!strcasecmp(h->k, k)) {
            *pp = h->next;
            free(h);
        } else {
            pp = &h->next;
        }
    }
}

void sl_hdr_add_u64(struct sl_req *r, const char *k, uint64_t v)
{
    char t[24];
    sl_hdr_add(r, k, sl_fmt_u64(t, v));
}

void sl_hdr_addf(struct sl_req *r, const char *k, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    sl_hdr_add(r, k, tmp);
}

/* offload states */
enum { OFFLOAD_NONE = 0, OFFLOAD_RUNNING, OFFLOAD_DONE };

static void queue(struct sl_req *r, int status, struct MHD_Response *resp)
{
    if (r->responded) {
        sl_logw("internal: second response for %s %s ignored", r->method_str, r->path);
        MHD_destroy_response(resp);
        return;
    }
    /* libmicrohttpd refuses an empty value; one space is the same field on the wire (clients strip it), so an
     * empty x-amz-meta-* or custom value comes back as sent */
    for (struct sl_hdr *h = r->hdrs; h; h = h->next)
        MHD_add_response_header(resp, h->k, h->v[0] ? h->v : " ");
    MHD_add_response_header(resp, "X-Request-Id", r->reqid);
    r->responded = true;
    r->status = status;
    if (__atomic_load_n(&r->offload, __ATOMIC_ACQUIRE) == OFFLOAD_RUNNING) {
        /* on a pool thread: MHD takes it when the connection resumes */
        r->pending = resp;
        r->pending_status = status;
        return;
    }
    if (MHD_queue_response((struct MHD_Connection *)r->conn, (unsigned)status, resp) != MHD_YES)
        sl_logw("could not queue response %d for %s %s", status, r->method_str, r->path ? r->path : r->raw_uri);
    MHD_destroy_response(resp);
}

struct offload {
    struct sl_req *r;
    sl_offload_fn fn;
    void (*cancel)(void *);
    void *arg;
};

static void offload_run(void *p)
{
    struct offload *o = p;
    struct sl_req *r = o->r;
    if (sl_bg_stopping()) {
        if (o->cancel)
            o->cancel(o->arg);
        sl_resp_errf(r, SL_EUNAVAIL, "%s is shutting down; retry on another node or later", node_name);
    } else {
        o->fn(r, o->arg);
        if (!r->responded && !r->reroute)
            sl_resp_errf(r, SL_EINTERNAL, "internal error: %s %s produced no response", r->method_str, r->path);
    }
    free(o);
    __atomic_store_n(&r->offload, OFFLOAD_DONE, __ATOMIC_RELEASE);
    MHD_resume_connection((struct MHD_Connection *)r->conn);
}

static void offload_to(struct sl_req *r, int pool, sl_offload_fn fn, void (*cancel)(void *arg), void *arg);

void sl_req_offload(struct sl_req *r, sl_offload_fn fn, void (*cancel)(void *arg), void *arg)
{
    offload_to(r, SL_POOL_MAIN, fn, cancel, arg);
}

void sl_req_offload_peer(struct sl_req *r, sl_offload_fn fn, void (*cancel)(void *arg), void *arg)
{
    offload_to(r, SL_POOL_PEER, fn, cancel, arg);
}

void sl_req_offload_disk(struct sl_req *r, sl_offload_fn fn, void (*cancel)(void *arg), void *arg)
{
    offload_to(r, SL_POOL_DISK, fn, cancel, arg);
}

static void offload_to(struct sl_req *r, int pool, sl_offload_fn fn, void (*cancel)(void *arg), void *arg)
{
    if (__atomic_load_n(&r->offload, __ATOMIC_ACQUIRE) == OFFLOAD_RUNNING) {
        /* already on a pool thread (a handler run from an offloaded
         * callback offloads again): run it here */
        fn(r, arg);
        return;
    }
    if (sl_bg_stopping()) {
        if (cancel)
            cancel(arg);
        sl_resp_errf(r, SL_EUNAVAIL, "%s is shutting down; retry on another node or later", node_name);
        return;
    }
    struct offload *o = sl_xmalloc(sizeof(*o));
    o->r = r;
    o->fn = fn;
    o->cancel = cancel;
    o->arg = arg;
    __atomic_store_n(&r->offload, OFFLOAD_RUNNING, __ATOMIC_RELEASE);
    MHD_suspend_connection((struct MHD_Connection *)r->conn);
    sl_bg_submit_to(pool, offload_run, o);
}

static void offload_reroute(struct sl_req *r, int pool, sl_offload_fn fn, void (*cancel)(void *arg), void *arg);

void sl_req_offload_reroute(struct sl_req *r, sl_offload_fn fn, void (*cancel)(void *arg), void *arg)
{
    offload_reroute(r, SL_POOL_MAIN, fn, cancel, arg);
}

void sl_req_offload_peer_reroute(struct sl_req *r, sl_offload_fn fn, void (*cancel)(void *arg), void *arg)
{
    offload_reroute(r, SL_POOL_PEER, fn, cancel, arg);
}

static void offload_reroute(struct sl_req *r, int pool, sl_offload_fn fn, void (*cancel)(void *arg), void *arg)
{
    if (r->rerouted) { /* never twice: fn did its work, the handler decides */
        if (cancel)
            cancel(arg);
        sl_resp_errf(r, SL_EINTERNAL, "internal error: %s %s was to be routed a third time", r->method_str, r->path);
        return;
    }
    r->reroute = true;
    r->reroute_hdrs = r->in_headers;
    offload_to(r, pool, fn, cancel, arg);
}

bool sl_req_body_coming(struct sl_req *r, int wait_ms)
{
    int fd = conn_fd((struct MHD_Connection *)r->conn);
    if (fd < 0)
        return r->body_coming = true;   /* cannot tell: assume it is (the safe side) */
    int n = 0;
    if (ioctl(fd, FIONREAD, &n) == 0 && n > 0)
        return r->body_coming = true;
    if (wait_ms > 0) {
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        if (poll(&pf, 1, wait_ms) > 0)
            return r->body_coming = true;   /* data, or the peer closed: either way not waiting for us */
    }
    return false;
}

void sl_req_defer(struct sl_req *r)
{
    __atomic_store_n(&r->offload, OFFLOAD_RUNNING, __ATOMIC_RELEASE);
    MHD_suspend_connection((struct MHD_Connection *)r->conn);
}

void sl_req_deferred_done(struct sl_req *r)
{
    if (!r->responded)
        sl_resp_errf(r, SL_EINTERNAL, "internal error: %s %s produced no response", r->method_str, r->path);
    __atomic_store_n(&r->offload, OFFLOAD_DONE, __ATOMIC_RELEASE);
    MHD_resume_connection((struct MHD_Connection *)r->conn);
}

void sl_conn_suspend(void *conn)
{
    MHD_suspend_connection((struct MHD_Connection *)conn);
}

void sl_conn_resume(void *conn)
{
    MHD_resume_connection((struct MHD_Connection *)conn);
}

void sl_resp_empty(struct sl_req *r, int status)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    queue(r, status, resp);
}

void sl_resp_bytes(struct sl_req *r, int status, const char *ctype, const void *data, size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (ctype)
        MHD_add_response_header(resp, "Content-Type", ctype);
    r->resp_len = len;
    queue(r, status, resp);
}

void sl_resp_bytes_owned(struct sl_req *r, int status, const char *ctype, char *data, size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (ctype)
        MHD_add_response_header(resp, "Content-Type", ctype);
    r->resp_len = len;
    queue(r, status, resp);
}

void sl_resp_text(struct sl_req *r, int status, const char *text)
{
    sl_resp_bytes(r, status, NULL, text, strlen(text));
}

int sl_req_json_flags(const struct sl_req *r)
{
    const char *ua = sl_req_header(r, "User-Agent");
    return ua && sl_has_prefix(ua, "Mozilla/5.0") ? SL_JD_PRETTY : 0;
}

void sl_resp_json(struct sl_req *r, int status, const json_t *j)
{
    size_t len;
    char *s = sl_json_dump(j, sl_req_json_flags(r), &len);
    if (!s) {
        sl_resp_errf(r, SL_EINTERNAL, "cannot encode JSON response");
        return;
    }
    s = sl_xrealloc(s, len + 2);
    s[len++] = '\n';
    s[len] = 0;
    sl_resp_bytes_owned(r, status, "application/json; charset=utf-8", s, len);
}

void sl_resp_json_new(struct sl_req *r, int status, json_t *j)
{
    sl_resp_json(r, status, j);
    json_decref(j);
}

/* An error decided before the body was read: if the client is already
 * sending a (modest) body, read and drop it first, so the client gets the
 * answer instead of a reset connection. */
static bool defer_error(struct sl_req *r, const struct sl_err *e)
{
    if (!r->in_headers || r->responded)
        return false;
    const char *te = sl_req_header(r, "Transfer-Encoding");
    const char *expect = sl_req_header(r, "Expect");
    bool body = r->content_length > 0 || (te && strcasestr(te, "chunked"));
    if (!body || expect || (r->content_length > 16 * (int64_t)SL_MIB))
        return false;
    if (e != &r->err)
        r->err = *e;
    r->failed = true;
    r->body_mode = SL_BODY_DISCARD;
    return true;
}

void sl_resp_err(struct sl_req *r, const struct sl_err *e)
{
    if (defer_error(r, e))
        return;
    int status = sl_err_status(e->code);
    json_t *o = json_object();
    const char *tc = sl_err_tcode(e->code);
    if (tc)
        json_object_set_new(o, "tcode", json_string(tc));
    json_t *msg = json_string(e->msg);
    if (!msg) /* not UTF-8 */
        msg = json_string("(error message not valid UTF-8)");
    json_object_set_new(o, "message", msg);
    json_object_set_new(o, "method", json_string(r->method_str ? r->method_str : ""));
    json_t *up = r->path ? json_stringn(r->path, r->path_len) : NULL;
    json_object_set_new(o, "url_path", up ? up : json_string(""));
    json_object_set_new(o, "remote_addr", json_string(sl_req_remote(r)));
    const char *caller = sl_req_header(r, "Ais-Caller-Name");
    json_object_set_new(o, "caller", json_string(caller ? caller : ""));
    json_object_set_new(o, "node", json_string(node_name));
    json_object_set_new(o, "status", json_integer(status));
    size_t len;
    char *s = sl_json_dump(o, 0, &len);
    json_decref(o);
    if (status >= 500)
        sl_logw("%s %s: %d %s", r->method_str, r->path ? r->path : r->raw_uri, status, e->msg);
    else
        sl_logd("%s %s: %d %s", r->method_str, r->path ? r->path : r->raw_uri, status, e->msg);
    if (r->method == SL_M_HEAD) {
        sl_hdr_add(r, "Hdr-Error", s);
        free(s);
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        queue(r, status, resp);
        return;
    }
    s = sl_xrealloc(s, len + 2);
    s[len++] = '\n';
    s[len] = 0;
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, s, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    queue(r, status, resp);
}

void sl_resp_errf(struct sl_req *r, int code, const char *fmt, ...)
{
    struct sl_err e;
    va_list ap;
    va_start(ap, fmt);
    e.code = code;
    vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
    va_end(ap);
    sl_resp_err(r, &e);
}

void sl_resp_redirect(struct sl_req *r, int status, const char *location)
{
    sl_hdr_add(r, "Location", location);
    sl_resp_empty(r, status);
}

/* Under TLS there is no sendfile: libmicrohttpd reads a file response in
 * blocks of 4 KiB and sends each as its own TLS write. Reading 256 KiB at a
 * time (the block is allocated with the response: no more than the file)
 * lets GnuTLS send full 16 KiB records, one per call. */
struct fd_src {
    int fd;
    uint64_t off;
};
struct tls_id;
static struct tls_id *tls_cur; /* (below: non-NULL when serving HTTPS) */

static ssize_t fd_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct fd_src *f = cls;
    ssize_t n = pread(f->fd, buf, max, (off_t)(f->off + pos));
    return n > 0 ? n : n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void fd_free(void *cls)
{
    struct fd_src *f = cls;
    close(f->fd);
    free(f);
}

void sl_resp_fd(struct sl_req *r, int status, int fd, uint64_t off, uint64_t len, const char *ctype)
{
    struct MHD_Response *resp;
    if (__atomic_load_n(&tls_cur, __ATOMIC_ACQUIRE)) {
        struct fd_src *f = sl_xmalloc(sizeof(*f));
        f->fd = fd;
        f->off = off;
        resp = MHD_create_response_from_callback(len, (size_t)SL_MIN(len, 256 * 1024), fd_cb, f, fd_free);
        if (!resp)
            free(f);
    } else {
        resp = MHD_create_response_from_fd_at_offset64(len, fd, off);
    }
    if (!resp) {
        close(fd);
        sl_resp_errf(r, SL_EINTERNAL, "cannot create file response");
        return;
    }
    if (ctype)
        MHD_add_response_header(resp, "Content-Type", ctype);
    r->resp_len = len;
    queue(r, status, resp);
}

static ssize_t never_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

void sl_resp_head(struct sl_req *r, int status, uint64_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_callback(len, 4096, never_cb, NULL, NULL);
    queue(r, status, resp);
}

struct stream_ctx {
    sl_stream_fn fn;
    void *ctx;
    void (*free_ctx)(void *);
};

static ssize_t stream_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream_ctx *s = cls;
    ssize_t n = s->fn(s->ctx, pos, buf, max);
    if (n == SL_STREAM_WAIT)
        return 0; /* suspended by the producer; called again on resume */
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n < 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n;
}

static void stream_free(void *cls)
{
    struct stream_ctx *s = cls;
    if (s->free_ctx)
        s->free_ctx(s->ctx);
    free(s);
}

void sl_resp_stream(struct sl_req *r, int status, const char *ctype, uint64_t len, sl_stream_fn fn, void *ctx,
                    void (*free_ctx)(void *))
{
    struct stream_ctx *s = sl_xmalloc(sizeof(*s));
    s->fn = fn;
    s->ctx = ctx;
    s->free_ctx = free_ctx;
    struct MHD_Response *resp =
        MHD_create_response_from_callback(len == UINT64_MAX ? MHD_SIZE_UNKNOWN : len, 256 * 1024, stream_cb, s,
                                          stream_free);
    if (ctype)
        MHD_add_response_header(resp, "Content-Type", ctype);
    queue(r, status, resp);
}

void sl_resp_method_not_allowed(struct sl_req *r, const char *allow)
{
    sl_hdr_add(r, "Allow", allow);
    const char *t = "Method Not Allowed\n";
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(t), (void *)t, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
    queue(r, 405, resp);
}

/* ---- MHD callbacks ---- */


static enum MHD_Result hdr_size_cb(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    size_t *n = cls;
    *n += strlen(key) + (value ? strlen(value) : 0) + 4; /* "k: v\r\n" */
    return MHD_YES;
}

/* The request line and header fields as they came on the wire (near enough:
 * folded or padded fields count as their trimmed size). */
static size_t req_header_size(struct sl_req *r, struct MHD_Connection *c, const char *version)
{
    size_t n = strlen(r->method_str) + strlen(r->raw_uri) + strlen(version) + 4;
    MHD_get_connection_values(c, MHD_HEADER_KIND, hdr_size_cb, &n);
    return n;
}

/* A raw NUL byte inside the request target. libmicrohttpd (0.9.75) hands
 * the target to uri_log_cb as a C string in its read buffer, the NUL it
 * writes over the space before the version ending it, and the version right
 * after: a target cut short by a NUL of its own ends before that. */
static bool nul_in_target(const struct sl_req *r, const char *version)
{
    if (!r->uri_wire || !version || !*version || version <= r->uri_wire)
        return false;
    return version != r->uri_wire + strlen(r->raw_uri) + 1;
}

/* Route a request whose body is still to come (the first call). */
static void route_at_headers(struct sl_req *r)
{
    r->in_headers = true;
    router(r);
    r->in_headers = false;
    if (r->offload)
        return;
    if (!r->responded && r->body_mode == SL_BODY_BUFFER && r->content_length > 0 &&
        (uint64_t)r->content_length > r->body_limit) {
        sl_resp_errf(r, SL_ETOOBIG, "request body of %lld bytes exceeds the limit of %llu bytes for %s %s",
                     (long long)r->content_length, (unsigned long long)r->body_limit, r->method_str, r->path);
    }
    if (!r->responded && r->body_mode == SL_BODY_NONE)
        r->body_mode = SL_BODY_DISCARD;
}

/* A signed request that names its body (bh=, Ais-Cluster-Body) gets only
 * that body: every byte that arrives is hashed, whatever the handler does
 * with it, and the handler's completion runs only if the hash matches. */
static void bh_update(struct sl_req *r, const void *p, size_t n)
{
    if (!r->want_bh[0] || !n)
        return;
    if (!r->bh_ck.type)
        sl_cksum_init(&r->bh_ck, SL_CK_SHA256);
    sl_cksum_update(&r->bh_ck, p, n);
}

static bool body_checked(struct sl_req *r)
{
    if (!r->want_bh[0])
        return true;
    char bh[SL_CKSUM_HEX_MAX];
    if (!r->bh_ck.type) {
        sl_cksum_buf(SL_CK_SHA256, "", 0, bh);
    } else {
        sl_cksum_final(&r->bh_ck, bh);
        sl_cksum_free(&r->bh_ck);
        r->bh_ck.type = 0;
    }
    bool ok = !strcmp(bh, r->want_bh);
    /* checked once: a match wants nothing more, a mismatch stays one */
    r->want_bh[0] = ok ? 0 : '!';
    return ok;
}

static __thread bool http_thread; /* this thread is one of libmicrohttpd's */

bool sl_http_thread(void)
{
    return http_thread;
}

static enum MHD_Result ahc(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    http_thread = true;
    struct sl_req *r = *con_cls;
    if (!r) {
        r = uri_log_cb(NULL, url, c);
        r->uri_wire = NULL; /* (url is already decoded here: no NUL check) */
        *con_cls = r;
    }
    sl_log_set_reqid(r->reqid);
    int ost = __atomic_load_n(&r->offload, __ATOMIC_ACQUIRE);
    if (ost == OFFLOAD_RUNNING) {
        sl_log_set_reqid(NULL);
        return MHD_YES; /* a pool thread is producing the answer */
    }
    if (ost == OFFLOAD_DONE) {
        r->offload = OFFLOAD_NONE;
        bool again = r->reroute && !r->responded;
        r->reroute = false;
        if (again) {
            /* sl_req_offload_reroute: its work is done, route again */
            r->rerouted = true;
            if (r->reroute_hdrs) {
                route_at_headers(r);     /* the body comes on the next calls */
                sl_log_set_reqid(NULL);
                return MHD_YES;
            }
            r->deferred = true;         /* bodiless: routed below, as on its final call */
        } else {
            struct MHD_Response *resp = r->pending;
            r->pending = NULL;
            if (resp) {
                if (MHD_queue_response(c, (unsigned)r->pending_status, resp) != MHD_YES)
                    sl_logw("could not queue response %d for %s %s", r->pending_status, r->method_str,
                            r->path ? r->path : r->raw_uri);
                MHD_destroy_response(resp);
            }
            sl_log_set_reqid(NULL);
            return MHD_YES;
        }
    }
    if (!r->method_str) {
        /* the header is in: from now on (body, keep-alive, the next
         * requests) the connection may idle net.http.idle_conn_time */
        if (idle_timeout_s != hdr_timeout_s)
            MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, idle_timeout_s);
        sl_accept_request(conn_fd(c), true); /* (not a slow client's: accept.c sheds those) */
        r->method_str = method;
        r->method = method_of(method);
        parse_uri(r);
        if (nul_in_target(r, version)) {
            /* "PUT /b/zz\0evil": everything after the NUL would be lost and
             * another object named; answered at once, the body is not read */
            sl_resp_errf(r, SL_EINVAL, "invalid request line: the request target holds a raw NUL byte after "
                         "\"%s\"; nothing was done (a NUL cannot be part of a URL; send names percent-encoded)",
                         r->raw_uri);
            sl_log_set_reqid(NULL);
            return MHD_YES;
        }
        size_t hsz = max_header ? req_header_size(r, c, version) : 0;
        if (hsz > max_header) {
            /* answered at once: the connection closes, any body is not read */
            sl_resp_errf(r, SL_EHDRTOOBIG, "request header of %zu bytes exceeds the limit of %zu bytes "
                         "(net.http.max_header_size)", hsz, max_header);
            sl_log_set_reqid(NULL);
            return MHD_YES;
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl)
            r->content_length = strtoll(cl, NULL, 10);
        if (r->content_length <= 0 && !MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding")) {
            /* no body: dispatch on the final call, where a queued response
             * keeps the connection alive (MHD closes after an "early" one) */
            r->deferred = true;
            sl_log_set_reqid(NULL);
            return MHD_YES;
        }
        route_at_headers(r);
        sl_log_set_reqid(NULL);
        return MHD_YES;
    }
    if (*upload_data_size && r->body_mode == SL_BODY_STREAM && r->on_take) {
        size_t n = *upload_data_size;
        ssize_t took = r->on_take(r, upload_data, n);
        if (took < 0) {
            r->failed = true;
            r->body_mode = SL_BODY_DISCARD;
            took = (ssize_t)n;
        }
        if ((size_t)took > n)
            took = (ssize_t)n;
        bh_update(r, upload_data, (size_t)took);
        *upload_data_size = n - (size_t)took;   /* the rest comes again after the resume */
        r->body_seen += (uint64_t)took;
        sl_log_set_reqid(NULL);
        return MHD_YES;
    }
    if (*upload_data_size) {
        bh_update(r, upload_data, *upload_data_size);
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        r->body_seen += n;
        switch (r->body_mode) {
        case SL_BODY_BUFFER:
            if (r->body.len + n > r->body_limit) {
                sl_errf(&r->err, SL_ETOOBIG, "request body exceeds the limit of %llu bytes for %s %s",
                        (unsigned long long)r->body_limit, r->method_str, r->path);
                r->failed = true;
                r->body_mode = SL_BODY_DISCARD;
                sl_buf_free(&r->body);
            } else {
                sl_buf_add(&r->body, upload_data, n);
            }
            break;
        case SL_BODY_STREAM:
            if (r->on_data(r, upload_data, n) < 0) {
                r->failed = true;
                r->body_mode = SL_BODY_DISCARD;
            }
            break;
        default:
            break;
        }
        sl_log_set_reqid(NULL);
        return MHD_YES;
    }
    if (r->deferred) {
        r->deferred = false;
        router(r);
        if (!r->offload && !r->responded && r->on_done && !r->failed && body_checked(r))
            r->on_done(r);
    }
    if (!r->offload && !r->responded) {
        if (!r->failed && !body_checked(r))
            sl_resp_errf(r, SL_EUNAUTH, "%s %s: the body is not the one the gateway checked (bh= of the signed "
                         "redirect): send the request to the gateway again", r->method_str, r->path);
        else if (r->failed)
            sl_resp_err(r, &r->err);
        else if (r->on_done)
            r->on_done(r);
        if (!r->offload && !r->responded)
            sl_resp_errf(r, SL_EINTERNAL, "internal error: %s %s produced no response", r->method_str, r->path);
    }
    sl_log_set_reqid(NULL);
    return MHD_YES;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    struct sl_req *r = *con_cls;
    if (!r)
        return;
    *con_cls = NULL;
    if (r->method_str)
        sl_accept_request(conn_fd(c), false); /* between requests now */
    bool ok = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && r->responded;
    if (r->on_cleanup)
        r->on_cleanup(r, ok);
    int64_t dt = sl_mono_ns() - r->t0;
    sl_stats_request(r->op, r->method, r->status, r->body_seen, r->resp_len, dt, ok);
    if (!ok && r->method_str)
        sl_logd("%s %s: terminated (%d) after %llu body bytes", r->method_str, r->path ? r->path : r->raw_uri,
                (int)toe, (unsigned long long)r->body_seen);
    free_req(r);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char buf[1024];
    vsnprintf(buf, sizeof(buf), fmt, ap);
    size_t n = strlen(buf);
    while (n && buf[n - 1] == '\n')
        buf[--n] = 0;
    sl_logd("http: %s", buf);
}

/* ---- TLS: the certificate is handed to GnuTLS per handshake, so a new one
 * (sl_http_tls_load again) applies to the next connection without a
 * restart. Identities replaced are kept: a handshake may still use one. */

struct tls_id {
    gnutls_pcert_st pc[8];
    unsigned n;
    gnutls_privkey_t key;
    gnutls_datum_t stek; /* session tickets' key: a new pair voids the tickets issued with the old one */
    char crt[512];       /* the files it came from, and when (sl_http_tls_cert) */
    char keyf[512];
    int64_t loaded;      /* unix seconds */
    struct tls_id *older;
};
static pthread_mutex_t tls_mu = PTHREAD_MUTEX_INITIALIZER;

static int tls_cert_cb(gnutls_session_t s, const gnutls_datum_t *req_ca_dn, int nreqs,
                       const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
                       unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
    (void)s;
    (void)req_ca_dn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    struct tls_id *t = __atomic_load_n(&tls_cur, __ATOMIC_ACQUIRE);
    if (!t)
        return -1;
    *pcert = t->pc;
    *pcert_length = t->n;
    *pkey = t->key;
    return 0;
}

int sl_http_tls_load(const char *crt, const char *key, struct sl_err *err)
{
    struct sl_buf cb, kb;
    sl_buf_init(&cb);
    sl_buf_init(&kb);
    struct tls_id *t = NULL;
    int rc = -1, g;
    if (sl_read_file(crt, &cb, 1 << 20) < 0) {
        sl_errf(err, SL_EINVAL, "cannot read the certificate %s (net.http.server_crt): %s", crt, strerror(errno));
        goto out;
    }
    if (sl_read_file(key, &kb, 1 << 20) < 0) {
        sl_errf(err, SL_EINVAL, "cannot read the private key %s (net.http.server_key): %s", key, strerror(errno));
        goto out;
    }
    t = sl_xcalloc(1, sizeof(*t));
    t->n = SL_ARRAY_SIZE(t->pc);
    gnutls_datum_t cd = { (unsigned char *)cb.p, (unsigned)cb.len }, kd = { (unsigned char *)kb.p, (unsigned)kb.len };
    if ((g = gnutls_pcert_list_import_x509_raw(t->pc, &t->n, &cd, GNUTLS_X509_FMT_PEM, 0)) < 0) {
        sl_errf(err, SL_EINVAL, "certificate %s: %s (expected PEM)", crt, gnutls_strerror(g));
        t->n = 0;
        goto out;
    }
    gnutls_privkey_init(&t->key);
    if ((g = gnutls_privkey_import_x509_raw(t->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        sl_errf(err, SL_EINVAL, "private key %s: %s (expected an unencrypted PEM key)", key, gnutls_strerror(g));
        goto out;
    }
    /* the key must be the certificate's: sign with one, verify with the other */
    gnutls_datum_t msg = { (unsigned char *)"shale", 5 }, sig = { NULL, 0 };
    int pk = gnutls_pubkey_get_pk_algorithm(t->pc[0].pubkey, NULL);
    gnutls_sign_algorithm_t sa = gnutls_pk_to_sign((gnutls_pk_algorithm_t)pk, GNUTLS_DIG_SHA256);
    g = gnutls_privkey_sign_data(t->key, GNUTLS_DIG_SHA256, 0, &msg, &sig);
    if (g >= 0)
        g = gnutls_pubkey_verify_data2(t->pc[0].pubkey, sa, 0, &msg, &sig);
    gnutls_free(sig.data);
    if (g < 0) {
        sl_errf(err, SL_EINVAL, "private key %s does not belong to certificate %s", key, crt);
        goto out;
    }
    if ((g = gnutls_session_ticket_key_generate(&t->stek)) < 0) {
        sl_errf(err, SL_EINTERNAL, "cannot make a TLS session ticket key: %s", gnutls_strerror(g));
        goto out;
    }
    snprintf(t->crt, sizeof(t->crt), "%s", crt);
    snprintf(t->keyf, sizeof(t->keyf), "%s", key);
    t->loaded = (int64_t)time(NULL);
    pthread_mutex_lock(&tls_mu);
    t->older = tls_cur;
    __atomic_store_n(&tls_cur, t, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&tls_mu);
    t = NULL;
    rc = 0;
out:
    if (t) {
        for (unsigned i = 0; i < t->n; i++)
            gnutls_pcert_deinit(&t->pc[i]);
        if (t->key)
            gnutls_privkey_deinit(t->key);
        gnutls_free(t->stek.data);
        free(t);
    }
    if (kb.p)
        memset(kb.p, 0, kb.len);
    sl_buf_free(&cb);
    sl_buf_free(&kb);
    return rc;
}

int sl_http_tls_cert(struct sl_buf *der, char *crt, size_t crt_n, char *key, size_t key_n, int64_t *loaded)
{
    struct tls_id *t = __atomic_load_n(&tls_cur, __ATOMIC_ACQUIRE); /* (never freed: see above) */
    if (!t || !t->n)
        return -1;
    sl_buf_add(der, t->pc[0].cert.data, t->pc[0].cert.size);
    snprintf(crt, crt_n, "%s", t->crt);
    snprintf(key, key_n, "%s", t->keyf);
    *loaded = t->loaded;
    return 0;
}

/* libmicrohttpd issues no session tickets: without them a client that
 * connects again (a peer after an idle close, libcurl's next connection)
 * pays a full handshake, and one that sends its request without waiting (no
 * TCP_NODELAY) waits for the delayed ACK of its Finished (40 ms) where a
 * ticket would have carried it. GnuTLS derives the keys it encrypts tickets with from the
 * stek made with each certificate pair, and rotates them; a reloaded pair
 * comes with a new stek, so a ticket never outlives its certificate. */
static void tls_conn_started(struct MHD_Connection *c)
{
    struct tls_id *t = __atomic_load_n(&tls_cur, __ATOMIC_ACQUIRE);
    if (!t)
        return;
    const union MHD_ConnectionInfo *si = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (si && si->tls_session)
        gnutls_session_ticket_enable_server(si->tls_session, &t->stek); /* (copied) */
}

bool sl_req_tls(const struct sl_req *r)
{
    if (!r->conn || !__atomic_load_n(&tls_cur, __ATOMIC_ACQUIRE))
        return false;
    const union MHD_ConnectionInfo *si = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return si && si->tls_session;
}

/* cls: the loop's number, for accept.c's count of its connections */
static void conn_notify(void *cls, struct MHD_Connection *c, void **socket_ctx, enum MHD_ConnectionNotificationCode code)
{
    (void)socket_ctx;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        tls_conn_started(c);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        sl_accept_closed((unsigned)(uintptr_t)cls, ci ? ci->client_addr : NULL, conn_fd(c));
    }
}

/* GnuTLS's NORMAL puts AES-256-GCM first, and OpenSSL clients (libcurl,
 * Python) ask for it first too. PERFORMANCE puts AES-128-GCM first where the
 * CPU has AES instructions (ChaCha20 where it has not), and the server's
 * order wins: less CPU per byte on both ends, the same ciphers, protocols and
 * key exchanges as NORMAL. PERFORMANCE also puts RSA key exchange first,
 * which would cost a TLS 1.2 client with an RSA certificate its forward
 * secrecy: RSA goes back to the end. */
#define TLS_PRIORITIES "PERFORMANCE:-RSA:+RSA:%SERVER_PRECEDENCE"

static struct MHD_Daemon *mhd[256];
static unsigned nmhd;

int sl_http_start(sl_router_fn rt, const char *bind_addr, int port, int workers, int conn_timeout_s,
                  int header_timeout_s, unsigned max_conns, unsigned max_per_ip, size_t max_hdr, struct sl_err *err)
{
    /* MHD clears this per-connection pool for every request, so it stays
     * small; it must hold a header somewhat over the limit so that the 431
     * below can be ours (MHD answers a bigger one with its own 431). A body
     * arrives in pieces of about half of it: 48 KiB over the header limit
     * halves the receives (and callbacks) of a PUT from the 16 KiB before */
    size_t mem_limit = max_hdr + 48 * 1024;
    router = rt;
    max_header = max_hdr;
    idle_timeout_s = (unsigned)conn_timeout_s;
    hdr_timeout_s = (unsigned)header_timeout_s;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind_addr && *bind_addr && inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1)
        return sl_errf(err, SL_EINVAL, "cannot bind to \"%s\": not an IPv4 address", bind_addr);
    if (workers < 1 || (size_t)workers > sizeof(mhd) / sizeof(mhd[0]))
        return sl_errf(err, SL_EINVAL, "net.http.workers %d: 1 to %zu poll loops", workers,
                       sizeof(mhd) / sizeof(mhd[0]));
    if (sl_accept_listen(&sa, err) < 0)
        return -1;
    /* one daemon per poll loop, fed by accept.c (why: there);
     * poll, not epoll: with epoll (edge-triggered) 0.9.75 can miss an EOF
     * that arrives together with the last body bytes, and a truncated upload
     * then lingers until the idle timeout; 1.0.1 still does, in 2 runs of 5,
     * though its epoll took 11 % less CPU per small GET (bench/RESULTS.md
     * §17.13) */
    unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC | MHD_USE_ERROR_LOG |
                     MHD_ALLOW_SUSPEND_RESUME;
    struct MHD_OptionItem tls_opts[] = { { MHD_OPTION_END, 0, NULL }, { MHD_OPTION_END, 0, NULL },
                                         { MHD_OPTION_END, 0, NULL } };
    if (tls_cur) { /* (no sendfile under TLS: MHD reads and encrypts) */
        flags |= MHD_USE_TLS;
        tls_opts[0] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)tls_cert_cb };
        tls_opts[1] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITIES };
    }
    /* no MHD_USE_TURBO either: with it, 0.9.75 misses a client's half-close
     * during an upload in the same way */
    for (nmhd = 0; nmhd < (unsigned)workers; nmhd++) {
        errno = 0;
        mhd[nmhd] = MHD_start_daemon(flags, 0, NULL, NULL, ahc, NULL,
                                     MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                                     /* until a header is in (ahc raises it to conn_timeout_s) */
                                     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)header_timeout_s,
                                     MHD_OPTION_CONNECTION_MEMORY_LIMIT, mem_limit,
                                     MHD_OPTION_CONNECTION_LIMIT, max_conns,
                                     MHD_OPTION_URI_LOG_CALLBACK, uri_log_cb, NULL,
                                     MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
                                     MHD_OPTION_NOTIFY_CONNECTION, conn_notify, (void *)(uintptr_t)nmhd,
                                     MHD_OPTION_ARRAY, tls_opts,
                                     MHD_OPTION_END);
        if (!mhd[nmhd]) {
            sl_errf(err, SL_EIO, "cannot start HTTP poll loop %u of %d: %s", nmhd + 1, workers,
                    errno ? strerror(errno) : "libmicrohttpd gave no reason (log.level 4 shows its messages)");
            sl_http_stop();
            return -1;
        }
    }
    struct sl_accept_limits lim = { .max_conns = max_conns, .max_per_ip = max_per_ip,
                                    .header_timeout_s = (unsigned)header_timeout_s,
                                    .idle_timeout_s = (unsigned)conn_timeout_s };
    if (sl_accept_start(mhd, nmhd, &lim, err) < 0) {
        sl_http_stop();
        return -1;
    }
    return 0;
}

void sl_http_stop(void)
{
    sl_accept_stop();
    /* suspended connections must be resumed before MHD stops: let the
     * background work finish (Lua calls are cancelled by the caller) */
    sl_bg_quiesce(30000);
    for (unsigned i = 0; i < nmhd; i++)
        MHD_stop_daemon(mhd[i]);
    nmhd = 0;
}

static sl_action_hook_fn action_hook;
static sl_perm_hook_fn perm_hook;

void sl_http_set_access_hooks(sl_action_hook_fn action, sl_perm_hook_fn perm)
{
    action_hook = action;
    perm_hook = perm;
}

int sl_req_allow(struct sl_req *r, uint64_t perm, const char *provider, const char *bck, struct sl_err *err)
{
    return perm_hook ? perm_hook(r, perm, provider, bck, err) : 0;
}

/* Parse an ActMsg body: {"action","name","value"}. */
int sl_actmsg_parse(struct sl_req *r, struct sl_actmsg *m, struct sl_err *err)
{
    memset(m, 0, sizeof(*m));
    m->action = "";
    m->name = "";
    json_t *j = sl_req_body_json(r, err);
    if (!j)
        return -1;
    if (json_is_null(j)) {
        json_decref(j);
        return action_hook ? action_hook(r, m, err) : 0;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        return sl_errf(err, SL_EINVAL,
                       "request body must be a JSON object {\"action\": ..., \"name\": ..., \"value\": ...}");
    }
    json_t *a = sl_json_get(j, "action"), *n = sl_json_get(j, "name");
    if (a && !json_is_string(a)) {
        json_decref(j);
        return sl_errf(err, SL_EINVAL, "\"action\" must be a string");
    }
    if (n && !json_is_string(n) && !json_is_null(n)) {
        json_decref(j);
        return sl_errf(err, SL_EINVAL, "\"name\" must be a string");
    }
    m->root = j;
    m->action = a ? json_string_value(a) : "";
    m->name = n && json_is_string(n) ? json_string_value(n) : "";
    m->value = sl_json_get(j, "value");
    if (m->value && json_is_null(m->value))
        m->value = NULL;
    if (action_hook && action_hook(r, m, err) < 0) {
        sl_actmsg_free(m);
        return -1;
    }
    return 0;
}

void sl_actmsg_free(struct sl_actmsg *m)
{
    json_decref(m->root);
    memset(m, 0, sizeof(*m));
}
