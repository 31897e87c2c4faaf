/* SPDX-License-Identifier: MIT
 * stats.c: see stats.h.
 */
#include "stats.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const char *op_names[SL_OP_MAX] = {
    [SL_OP_NONE] = "other", [SL_OP_GET] = "get", [SL_OP_PUT] = "put", [SL_OP_HEAD] = "head",
    [SL_OP_DELETE] = "delete", [SL_OP_LIST] = "lst", [SL_OP_APPEND] = "append", [SL_OP_ARCH_GET] = "arch_get",
    [SL_OP_ETL_GET] = "etl_get", [SL_OP_REDIRECT] = "redirect",
};

/* latency buckets in seconds */
static const double buckets[] = { 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30 };
#define NB (sizeof(buckets) / sizeof(buckets[0]))

struct opstat {
    uint64_t count, errors, in_bytes, out_bytes, ns_total;
    uint64_t hist[NB];
};

static struct opstat ops[SL_OP_MAX];

#define MAXC 96
static struct {
    char name[48];              /* as the node status shows it ("lru_evict_n", "aws.get.n") */
    char prom[48];              /* a labelled counter's Prometheus name ("remote_get_count"); "" = name */
    char label[16];             /* its backend label ("aws") */
    uint64_t v;
} custom[MAXC];
static int ncustom;
static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER;

#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)
#define LD(p) __atomic_load_n((p), __ATOMIC_RELAXED)

void sl_stats_request(int op, int method, int status, uint64_t in_bytes, uint64_t out_bytes, int64_t ns, bool ok)
{
    if (op <= 0 || op >= SL_OP_MAX)
        return;
    struct opstat *s = &ops[op];
    ADD(&s->count, 1);
    if (!ok || status >= 400)
        ADD(&s->errors, 1);
    ADD(&s->in_bytes, in_bytes);
    ADD(&s->out_bytes, out_bytes);
    ADD(&s->ns_total, (uint64_t)(ns > 0 ? ns : 0));
    double sec = (double)ns / 1e9;
    for (size_t i = 0; i < NB; i++)
        if (sec <= buckets[i])
            ADD(&s->hist[i], 1);
}

int sl_stats_handle(const char *name)
{
    pthread_mutex_lock(&cmu);
    int i;
    for (i = 0; i < ncustom; i++)
        if (!strcmp(custom[i].name, name))
            break;
    if (i == ncustom && ncustom < MAXC)
        snprintf(custom[ncustom++].name, sizeof(custom[0].name), "%s", name);
    pthread_mutex_unlock(&cmu);
    return i < MAXC ? i : -1;
}

void sl_stats_add_h(int h, uint64_t v)
{
    if (h >= 0 && h < MAXC)
        ADD(&custom[h].v, v);
}

void sl_stats_add(const char *name, uint64_t v)
{
    sl_stats_add_h(sl_stats_handle(name), v);
}

/* one labelled counter: internal name, Prometheus name, backend */
static void add_labelled(const char *name, const char *prom, const char *label, uint64_t v)
{
    pthread_mutex_lock(&cmu);
    int i;
    for (i = 0; i < ncustom; i++)
        if (!strcmp(custom[i].name, name))
            break;
    if (i == ncustom && ncustom < MAXC) {
        snprintf(custom[ncustom].name, sizeof(custom[0].name), "%s", name);
        snprintf(custom[ncustom].prom, sizeof(custom[0].prom), "%s", prom);
        snprintf(custom[ncustom++].label, sizeof(custom[0].label), "%s", label);
    }
    if (i < MAXC)
        ADD(&custom[i].v, v);
    pthread_mutex_unlock(&cmu);
}

void sl_stats_backend(const char *provider, const char *op, uint64_t bytes, int64_t ns)
{
    char n[48], p[48];
    snprintf(n, sizeof(n), "%s.%s.n", provider, op);
    snprintf(p, sizeof(p), "remote_%s_count", op);
    add_labelled(n, p, provider, 1);
    if (strcmp(op, "get") && strcmp(op, "put"))
        return;
    snprintf(n, sizeof(n), "%s.%s.ns.total", provider, op);
    snprintf(p, sizeof(p), "remote_%s_ns_total", op);
    add_labelled(n, p, provider, (uint64_t)(ns > 0 ? ns : 0));
    snprintf(n, sizeof(n), "%s.%s.size", provider, op);
    snprintf(p, sizeof(p), "remote_%s_bytes_total", op);
    add_labelled(n, p, provider, bytes);
}

uint64_t sl_stats_get(int op, const char *what)
{
    if (op <= 0 || op >= SL_OP_MAX)
        return 0;
    if (!strcmp(what, "count"))
        return LD(&ops[op].count);
    if (!strcmp(what, "errors"))
        return LD(&ops[op].errors);
    if (!strcmp(what, "bytes"))
        return LD(&ops[op].in_bytes) + LD(&ops[op].out_bytes);
    return 0;
}

#define ZERO(p) __atomic_store_n((p), 0, __ATOMIC_RELAXED)

void sl_stats_reset(bool errors_only)
{
    for (int op = 1; op < SL_OP_MAX; op++) {
        struct opstat *s = &ops[op];
        ZERO(&s->errors);
        if (errors_only)
            continue;
        ZERO(&s->count);
        ZERO(&s->in_bytes);
        ZERO(&s->out_bytes);
        ZERO(&s->ns_total);
        for (size_t i = 0; i < NB; i++)
            ZERO(&s->hist[i]);
    }
    pthread_mutex_lock(&cmu);
    for (int i = 0; i < ncustom; i++)
        if (!errors_only || !strncmp(custom[i].name, "err", 3))
            ZERO(&custom[i].v);
    pthread_mutex_unlock(&cmu);
}

static void tracker_set(json_t *o, const char *name, uint64_t v)
{
    char s[32];
    snprintf(s, sizeof(s), "%llu", (unsigned long long)v);
    json_object_set_new(o, name, json_pack("{s:s}", "v", s));
}

json_t *sl_stats_tracker_json(void)
{
    json_t *o = json_object();
    for (int op = 1; op < SL_OP_MAX; op++) {
        const struct opstat *s = &ops[op];
        const char *n = op == SL_OP_DELETE ? "del" : op_names[op];  /* AIStore: del.n */
        char k[64];
        snprintf(k, sizeof(k), "%s.n", n);
        tracker_set(o, k, LD(&s->count));
        snprintf(k, sizeof(k), "err.%s.n", n);
        tracker_set(o, k, LD(&s->errors));
        snprintf(k, sizeof(k), "%s.size", n);
        tracker_set(o, k, LD(&s->in_bytes) + LD(&s->out_bytes));
        snprintf(k, sizeof(k), "%s.ns.total", n);
        tracker_set(o, k, LD(&s->ns_total));
    }
    pthread_mutex_lock(&cmu);
    for (int i = 0; i < ncustom; i++)
        tracker_set(o, custom[i].name, LD(&custom[i].v));
    pthread_mutex_unlock(&cmu);
    return o;
}

void sl_stats_render(struct sl_buf *b, const char *prefix, const char *node_id)
{
    /* AIStore's families, as its dashboards query them (their names predate
     * Prometheus's conventions: counters without _total, time in ns) */
    static const struct {
        const char *fmt, *help;
    } fam[] = {
        { "%s_%s_count", "number of %s requests" },
        { "%s_err_%s_count", "number of failed %s requests" },
        { "%s_%s_bytes", "bytes transferred by %s requests" },
        { "%s_%s_ns_total", "total time of %s requests, nanoseconds" },
    };
    for (size_t f = 0; f < SL_ARRAY_SIZE(fam); f++) {
        for (int op = 1; op < SL_OP_MAX; op++) {
            struct opstat *s = &ops[op];
            const char *n = op_names[op];
            char name[96];
            snprintf(name, sizeof(name), fam[f].fmt, prefix, n);
            uint64_t v = f == 0 ? LD(&s->count) : f == 1 ? LD(&s->errors)
                         : f == 2 ? LD(&s->in_bytes) + LD(&s->out_bytes) : LD(&s->ns_total);
            sl_buf_printf(b, "# HELP %s ", name);
            sl_buf_printf(b, fam[f].help, n);
            sl_buf_printf(b, "\n# TYPE %s counter\n%s{node_id=\"%s\"} %llu\n", name, name, node_id,
                          (unsigned long long)v);
        }
    }
    /* the same in base units, by Prometheus's conventions: one family per
     * quantity, the operation a label */
    static const struct {
        const char *name, *help;
    } conv[] = {
        { "shale_requests_total", "requests served, by operation" },
        { "shale_request_errors_total", "requests that failed, by operation" },
        { "shale_request_received_bytes_total", "request body bytes received, by operation" },
        { "shale_request_sent_bytes_total", "response body bytes sent, by operation" },
    };
    for (size_t f = 0; f < SL_ARRAY_SIZE(conv); f++) {
        sl_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n", conv[f].name, conv[f].help, conv[f].name);
        for (int op = 1; op < SL_OP_MAX; op++) {
            struct opstat *s = &ops[op];
            uint64_t v = f == 0 ? LD(&s->count) : f == 1 ? LD(&s->errors) : f == 2 ? LD(&s->in_bytes)
                                                                                     : LD(&s->out_bytes);
            sl_buf_printf(b, "%s{node_id=\"%s\",op=\"%s\"} %llu\n", conv[f].name, node_id, op_names[op],
                          (unsigned long long)v);
        }
    }
    sl_buf_adds(b, "# HELP shale_request_duration_seconds request latency, by operation\n"
                   "# TYPE shale_request_duration_seconds histogram\n");
    for (int op = 1; op < SL_OP_MAX; op++) {
        struct opstat *s = &ops[op];
        const char *n = op_names[op];
        for (size_t i = 0; i < NB; i++)
            sl_buf_printf(b, "shale_request_duration_seconds_bucket{node_id=\"%s\",op=\"%s\",le=\"%g\"} %llu\n",
                          node_id, n, buckets[i], (unsigned long long)LD(&s->hist[i]));
        sl_buf_printf(b, "shale_request_duration_seconds_bucket{node_id=\"%s\",op=\"%s\",le=\"+Inf\"} %llu\n",
                      node_id, n, (unsigned long long)LD(&s->count));
        sl_buf_printf(b, "shale_request_duration_seconds_sum{node_id=\"%s\",op=\"%s\"} %.9f\n", node_id, n,
                      (double)LD(&s->ns_total) / 1e9);
        sl_buf_printf(b, "shale_request_duration_seconds_count{node_id=\"%s\",op=\"%s\"} %llu\n", node_id, n,
                      (unsigned long long)LD(&s->count));
    }
    pthread_mutex_lock(&cmu);
    for (int i = 0; i < ncustom; i++) {
        if (!custom[i].prom[0]) {
            sl_buf_printf(b, "# HELP %s_%s %s\n# TYPE %s_%s counter\n%s_%s{node_id=\"%s\"} %llu\n", prefix,
                          custom[i].name, custom[i].name, prefix, custom[i].name, prefix, custom[i].name, node_id,
                          (unsigned long long)LD(&custom[i].v));
            continue;
        }
        /* a labelled family: its TYPE once, then one line per backend */
        int first = 1;
        for (int j = 0; j < i && first; j++)
            first = strcmp(custom[j].prom, custom[i].prom) != 0;
        if (!first)
            continue;
        sl_buf_printf(b, "# HELP %s_%s %s, by backend\n# TYPE %s_%s counter\n", prefix, custom[i].prom,
                      custom[i].prom, prefix, custom[i].prom);
        for (int j = i; j < ncustom; j++)
            if (!strcmp(custom[j].prom, custom[i].prom))
                sl_buf_printf(b, "%s_%s{backend=\"%s\",node_id=\"%s\"} %llu\n", prefix, custom[j].prom,
                              custom[j].label, node_id, (unsigned long long)LD(&custom[j].v));
    }
    pthread_mutex_unlock(&cmu);
}
