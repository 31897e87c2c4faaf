/* SPDX-License-Identifier: MIT
 * lost.c: see lost.h. Inventories come from the targets' bucket-summary
 * endpoint (GET /v1/internal/bsumm: every ais:// bucket's count, from the
 * target's metadata); only the primary keeps them, in memory.
 */
#include "lost.h"
#include "backend.h"
#include "cluster.h"
#include "ec.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "md.h"
#include "node.h"
#include "peer.h"
#include "bg.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INV_MIN_NS (20LL * 1000000000LL)
#define INV_PATH "/v1/internal/bsumm?bck=&prefix=&ec=1&seq=1"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static json_t *inv;             /* {TID: {"time": unix ns, "seq": token, "buckets": {NAME: {"n","bytes",...}}}} */
static json_t *seen;            /* {TID: the holdings token of its last keepalive answer} */
static int64_t inv_last_mono;
static bool inv_running;

void sl_lost_token(char *buf, size_t n)
{
    snprintf(buf, n, "%lld.%llu", (long long)G.start_ns, (unsigned long long)sl_md_obj_changes());
}

/* Whether target tid's objects may have changed since its inventory's token
 * inv_seq, by the token its last keepalive answer carried: a newer count of
 * changes in the same run, or a run started after the inventory. */
static bool changed_since(const char *tid, const char *inv_seq)
{
    long long ib = 0, sb = 0;
    unsigned long long ic = 0, sc = 0;
    pthread_mutex_lock(&mu);
    const char *tok = seen ? json_string_value(json_object_get(seen, tid)) : NULL;
    bool have = tok && sscanf(tok, "%lld.%llu", &sb, &sc) == 2;
    pthread_mutex_unlock(&mu);
    if (!inv_seq || sscanf(inv_seq, "%lld.%llu", &ib, &ic) != 2)
        return true; /* (an inventory without a token: from a target of an older version) */
    if (!have || sb < ib)
        return false; /* nothing newer heard from it than the inventory */
    return sb > ib || sc > ic;
}

/* the current rebalance's version (RMD): a target removed without a
 * rebalance stays "gone" until the next one */
static int64_t rmd_version(void)
{
    json_t *r = sl_cluster_doc("rmd");
    int64_t v = sl_json_int(r, "version", 0);
    json_decref(r);
    return v;
}

/* targets other than tid whose slices and replicas are out of reach: the
 * map's offline ones, and those removed without a rebalance since (lostmd
 * "gone": the survivors re-encode only after a rebalance); *ntargets the
 * map's targets */
static int others_gone(const char *tid, int *ntargets)
{
    int g = 0;
    *ntargets = 0;
    struct sl_smap *s = sl_smap_get();
    for (int i = 0; i < s->nnodes; i++) {
        const struct sl_snode *t = &s->nodes[i];
        if (t->type != SL_NODE_TARGET)
            continue;
        (*ntargets)++;
        g += strcmp(t->id, tid) && (t->flags & SL_SNF_OFFLINE);
    }
    json_t *d = sl_cluster_doc("lostmd");
    int64_t v = rmd_version();
    const char *id;
    json_t *e;
    json_object_foreach(json_object_get(d, "gone"), id, e)
        g += strcmp(id, tid) && !sl_smap_find(s, id) && sl_json_int(e, "rmd", -1) >= v;
    json_decref(d);
    sl_smap_put(s);
    return g;
}

/* how many of an object's other targets (slice or replica holders) may be
 * gone while it can still be rebuilt without its main target: P, or fewer
 * when the map has fewer than D+P+1 targets (ec.c then sends fewer slices,
 * and with fewer than D other targets replicas) */
static int ec_tolerance(int d, int p, int64_t limit, int ntargets)
{
    int slots = ntargets - 1;
    int t = limit < 0 || slots < d ? slots : slots - d;
    return SL_MAX(SL_MIN(p, t), 0);
}

/* keep what only the cluster holds: ais:// buckets without a backend, by
 * their current id; "bid" added. Erasure-coded buckets count the objects
 * of tid that are not encoded (the target reports them), or all of them
 * when more of the other targets are gone than the bucket survives ("ec":
 * why); with raw, every bucket counts what tid holds (rejoin). */
static json_t *only_here(const char *tid, const json_t *counts, bool raw)
{
    json_t *out = json_object();
    struct sl_bmd *bmd = sl_bmd_get();
    int ntargets = 0;
    int gone = raw ? 0 : others_gone(tid, &ntargets);
    const char *name;
    json_t *c;
    json_object_foreach((json_t *)counts, name, c) {
        const struct sl_bck *b = sl_bmd_find(bmd, "ais", name);
        int d, p;
        int64_t lim, n = sl_json_int(c, "n", 0), bytes = sl_json_int(c, "bytes", 0);
        char why[200] = "";
        if (!b || sl_bck_remote(b) || n <= 0)
            continue;
        if (!raw && sl_ec_props(b, &d, &p, &lim)) {
            int tol = ec_tolerance(d, p, lim, ntargets);
            if (gone > tol) {
                snprintf(why, sizeof(why), "erasure coded, but %d other target(s) are gone (offline, or removed "
                         "without a rebalance) and its objects survive the loss of %d", gone, tol);
            } else {
                /* absent (an older target): none known to be encoded */
                n = sl_json_int(c, "unprotected_n", n);
                bytes = sl_json_int(c, "unprotected_bytes", bytes);
                snprintf(why, sizeof(why), "erasure coded, but not encoded: too big to encode, or its ec-put "
                         "was queued or failed");
            }
            if (n <= 0)
                continue;
        }
        json_t *e = json_pack("{s:I,s:I,s:I}", "bid", (json_int_t)b->bid, "n", (json_int_t)n, "bytes",
                              (json_int_t)bytes);
        if (why[0])
            json_object_set_new(e, "ec", json_string(why));
        json_object_set_new(out, name, e);
    }
    sl_bmd_put(bmd);
    return out;
}

static json_t *all_buckets_unknown(void);

static void inv_collect(void *arg)
{
    (void)arg;
    struct sl_tfan t;
    sl_tfan_init(&t, SL_TF_SKIP_SELF | SL_TF_SKIP_OFFLINE, "GET", INV_PATH);
    sl_tfan_run(&t, sl_conf->send_file_time_ns / 1000000);
    int64_t now = sl_now_ns();
    for (int i = 0; i < t.n; i++) {
        if (!t.f[i].ok || t.f[i].resp.status != 200)
            continue; /* the last good one stays */
        json_error_t je;
        json_t *j = json_loadb(t.f[i].resp.body.p, t.f[i].resp.body.len, 0, &je);
        json_t *bk = json_object_get(j, "buckets");
        if (!json_is_object(bk)) {
            json_decref(j);
            continue;
        }
        pthread_mutex_lock(&mu);
        if (!inv)
            inv = json_object();
        json_object_set_new(inv, t.who[i]->id, json_pack("{s:I,s:s,s:O}", "time", (json_int_t)now, "seq",
                                                         sl_json_str(j, "seq", ""), "buckets", bk));
        pthread_mutex_unlock(&mu);
        json_decref(j);
    }
    sl_tfan_free(&t);
    pthread_mutex_lock(&mu);
    inv_running = false;
    inv_last_mono = sl_mono_ns();
    pthread_mutex_unlock(&mu);
}

void sl_lost_tick(void)
{
    int64_t every = sl_conf->keepalive_interval_ns * 10;
    if (every < INV_MIN_NS)
        every = INV_MIN_NS;
    pthread_mutex_lock(&mu);
    bool due = !inv_running && (!inv_last_mono || sl_mono_ns() - inv_last_mono >= every);
    if (due)
        inv_running = true;
    pthread_mutex_unlock(&mu);
    if (due)
        sl_bg_submit(inv_collect, NULL);
}

static int64_t holdings(const char *tid, const char *ctrl_url, bool ask_now, bool raw, json_t **detail,
                        int64_t *inv_time, bool *stale)
{
    json_t *counts = NULL;
    *inv_time = 0;
    if (stale)
        *stale = false;
    if (ask_now) {
        char *url = sl_xasprintf("%s" INV_PATH, ctrl_url);
        struct sl_peer_resp pr;
        if (sl_peer_call("GET", url, NULL, 0, NULL, 0, sl_conf->send_file_time_ns / 1000000, &pr) == 0 &&
            pr.status == 200) {
            json_error_t je;
            json_t *j = json_loadb(pr.body.p, pr.body.len, 0, &je);
            counts = json_is_object(json_object_get(j, "buckets")) ? json_incref(json_object_get(j, "buckets")) : NULL;
            json_decref(j);
            *inv_time = sl_now_ns();
        }
        sl_peer_resp_free(&pr);
        free(url);
    }
    char seq[64] = "";
    if (!counts) {
        pthread_mutex_lock(&mu);
        json_t *e = inv ? json_object_get(inv, tid) : NULL;
        if (e) {
            counts = json_incref(json_object_get(e, "buckets"));
            *inv_time = sl_json_int(e, "time", 0);
            snprintf(seq, sizeof(seq), "%s", sl_json_str(e, "seq", ""));
        }
        pthread_mutex_unlock(&mu);
        if (counts && !raw && changed_since(tid, seq)) {
            /* objects were written or deleted there after the count: what it holds now is unknown */
            json_decref(counts);
            counts = NULL;
            if (stale)
                *stale = true;
        }
    }
    if (!counts) {
        /* no inventory: unknown, unless there is no bucket that could lose objects */
        *detail = all_buckets_unknown();
        bool none = json_object_size(*detail) == 0;
        json_decref(*detail);
        *detail = json_object();
        return none ? 0 : -1;
    }
    *detail = only_here(tid, counts, raw);
    json_decref(counts);
    int64_t total = 0;
    const char *name;
    json_t *c;
    json_object_foreach(*detail, name, c)
        total += sl_json_int(c, "n", 0);
    return total;
}

int64_t sl_lost_holdings(const char *tid, const char *ctrl_url, bool ask_now, json_t **detail, int64_t *inv_time,
                         bool *stale)
{
    return holdings(tid, ctrl_url, ask_now, false, detail, inv_time, stale);
}

char *sl_lost_describe(const json_t *detail)
{
    struct sl_buf b;
    sl_buf_init(&b);
    const char *name;
    json_t *c;
    int k = 0;
    json_object_foreach((json_t *)detail, name, c) {
        if (k++ == 8) {
            sl_buf_printf(&b, ", and %zu more bucket(s)", json_object_size(detail) - 8);
            break;
        }
        int64_t n = sl_json_int(c, "n", 0);
        if (n < 0)
            sl_buf_printf(&b, "%sais://%s (count unknown)", k > 1 ? ", " : "", name);
        else
            sl_buf_printf(&b, "%s%lld in ais://%s (%lld bytes%s%s)", k > 1 ? ", " : "", (long long)n, name,
                          (long long)sl_json_int(c, "bytes", 0), json_object_get(c, "ec") ? "; " : "",
                          sl_json_str(c, "ec", ""));
    }
    if (!b.p)
        sl_buf_adds(&b, "none");
    return b.p;
}

/* every ais:// bucket without a backend, count unknown (erasure-coded ones
 * too: how many of their objects were encoded is unknown as well) */
static json_t *all_buckets_unknown(void)
{
    json_t *out = json_object();
    struct sl_bmd *bmd = sl_bmd_get();
    for (int i = 0; i < bmd->n; i++) {
        const struct sl_bck *b = &bmd->bcks[i];
        if (strcmp(b->provider, "ais") || sl_bck_remote(b))
            continue;
        json_object_set_new(out, b->name, json_pack("{s:I,s:i,s:i}", "bid", (json_int_t)b->bid, "n", -1, "bytes",
                                                    -1));
    }
    sl_bmd_put(bmd);
    return out;
}

static json_t *lostmd_copy(void)
{
    json_t *d = sl_cluster_doc("lostmd");
    json_t *c = d ? json_deep_copy(d) : json_object();
    json_decref(d);
    if (!json_is_object(json_object_get(c, "targets")))
        json_object_set_new(c, "targets", json_object());
    return c;
}

void sl_lost_record(const char *tid, const char *url, const char *action, const json_t *detail, int64_t inv_time,
                    bool unknown)
{
    json_t *d = lostmd_copy();
    json_t *bk = unknown ? all_buckets_unknown() : json_deep_copy(detail);
    json_object_set_new(json_object_get(d, "targets"), tid,
                        json_pack("{s:s,s:I,s:s,s:I,s:b,s:o}", "url", url, "time", (json_int_t)sl_now_ns(), "action",
                                  action, "inventory_time", (json_int_t)inv_time, "unknown", unknown, "buckets", bk));
    char *what = sl_lost_describe(bk);
    sl_logw("LOST: t[%s] (%s) removed by force (%s); objects that existed only there: %s. Listings of those "
            "buckets refuse until its data is re-attached or the loss is acknowledged (shale cluster lost clear)",
            tid, url, action, what);
    free(what);
    sl_cluster_set_doc("lostmd", d);
}

void sl_lost_gone(const char *tid)
{
    json_t *d = lostmd_copy();
    json_t *g = json_object_get(d, "gone");
    if (!json_is_object(g)) {
        g = json_object();
        json_object_set_new(d, "gone", g);
    }
    int64_t v = rmd_version();
    const char *id;
    json_t *e;
    void *tmp;
    json_object_foreach_safe(g, tmp, id, e)
        if (sl_json_int(e, "rmd", -1) < v) /* a rebalance (and re-encoding) since */
            json_object_del(g, id);
    json_object_set_new(g, tid, json_pack("{s:I,s:I}", "rmd", (json_int_t)v, "time", (json_int_t)sl_now_ns()));
    sl_cluster_set_doc("lostmd", d);
}

int sl_lost_clear(const char *sid, struct sl_err *err)
{
    json_t *d = lostmd_copy();
    json_t *ts = json_object_get(d, "targets");
    if (sid && *sid) {
        if (!json_object_get(ts, sid)) {
            json_decref(d);
            return sl_errf(err, SL_ENOENT, "clear-lost: no lost objects are recorded for t[%s] (see GET "
                           "/v1/cluster?what=lost)", sid);
        }
        json_object_del(ts, sid);
    } else {
        json_object_clear(ts);
    }
    sl_logi("lost objects of %s%s%s acknowledged: the record is cleared", sid && *sid ? "t[" : "every target",
            sid && *sid ? sid : "", sid && *sid ? "]" : "");
    sl_cluster_set_doc("lostmd", d);
    return 0;
}

void sl_lost_rejoined(const char *tid, const char *ctrl_url)
{
    json_t *d = lostmd_copy();
    json_t *rec = json_object_get(json_object_get(d, "targets"), tid);
    if (!rec) {
        json_decref(d);
        return;
    }
    json_t *have = NULL;
    int64_t it = 0;
    holdings(tid, ctrl_url, true, true, &have, &it, NULL);
    json_t *bk = json_object_get(rec, "buckets");
    const char *name;
    json_t *c;
    void *tmp;
    int back = 0;
    json_object_foreach_safe(bk, tmp, name, c) {
        json_t *h = json_object_get(have, name);
        int64_t want = sl_json_int(c, "n", -1);
        if (h && sl_json_int(h, "bid", 0) == sl_json_int(c, "bid", -1) && want >= 0 && sl_json_int(h, "n", 0) >= want) {
            json_object_del(bk, name);
            back++;
        }
    }
    if (!json_object_size(bk)) {
        json_object_del(json_object_get(d, "targets"), tid);
        sl_logi("t[%s] rejoined with its data: the objects recorded as lost with it are back", tid);
    } else {
        char *what = sl_lost_describe(bk);
        sl_logw("t[%s] rejoined, but not with all that was recorded as lost with it: still missing %s (a count "
                "that was unknown, or fewer objects than recorded: another disk?); the record stays until `shale "
                "cluster lost clear t[%s]`", tid, what, tid);
        free(what);
    }
    json_decref(have);
    if (back)
        sl_cluster_set_doc("lostmd", d);
    else
        json_decref(d);
}

int sl_lost_check_bucket(const char *what, const char *provider, const char *name, uint64_t bid, struct sl_err *err)
{
    if (strcmp(provider, "ais"))
        return 0;
    json_t *d = sl_cluster_doc("lostmd");
    json_t *ts = json_object_get(d, "targets");
    const char *tid;
    json_t *t;
    int rc = 0;
    json_object_foreach(ts, tid, t) {
        json_t *c = json_object_get(json_object_get(t, "buckets"), name);
        if (!c || (uint64_t)sl_json_int(c, "bid", 0) != bid)
            continue;
        int64_t n = sl_json_int(c, "n", -1);
        char cnt[48];
        if (n < 0)
            snprintf(cnt, sizeof(cnt), "an unknown number of");
        else
            snprintf(cnt, sizeof(cnt), "%lld", (long long)n);
        rc = sl_errf(err, SL_EEXIST,
                     "%s ais://%s: %s objects of this bucket existed only on target t[%s] (%s), removed from the "
                     "cluster by force (%s); a listing would be incomplete, so it is refused. Re-attach that "
                     "target's data (start it again on its data directory: it rejoins and its objects come back), "
                     "or accept the loss: shale cluster lost clear t[%s]",
                     what, name, cnt, tid, sl_json_str(t, "url", "?"), sl_json_str(t, "action", "?"), tid);
        break;
    }
    json_decref(d);
    return rc;
}

json_t *sl_lost_report(void)
{
    json_t *d = sl_cluster_doc("lostmd");
    json_t *out = json_pack("{s:o}", "lostmd", d ? d : json_pack("{s:i,s:{}}", "version", 0, "targets"));
    pthread_mutex_lock(&mu);
    if (inv && sl_is_primary())
        json_object_set_new(out, "inventory", json_deep_copy(inv));
    pthread_mutex_unlock(&mu);
    return out;
}

/* Decommissioning a target whose objects cannot move away (it is offline,
 * or the rebalance is skipped) loses those that exist nowhere else: refused
 * unless forced; forced, the loss is recorded. 0 = go ahead. (The
 * cluster's leaving hook.) */
static int check_loss(const char *a, const struct sl_snode *n, bool skip_reb, bool force, struct sl_err *err)
{
    bool offline = n->flags & SL_SNF_OFFLINE;
    if (!offline && !skip_reb)
        return 0;
    /* (skip_reb also stands for rebalance.enabled false) */
    json_t *detail = NULL;
    int64_t it = 0;
    bool stale = false;
    int64_t cnt = sl_lost_holdings(n->id, n->ctrl_url, !offline, &detail, &it, &stale);
    int rc = 0;
    if (cnt != 0 && !force) {
        char *what = sl_lost_describe(detail);
        char age[64] = "";
        if (it)
            snprintf(age, sizeof(age), " (its inventory of %llds ago)", (long long)((sl_now_ns() - it) / 1000000000LL));
        rc = sl_errf(err, SL_EEXIST,
                     "%s t[%s] refused: %s, so its objects cannot be moved away, and %s%s%s. Bring the target "
                     "back and retry%s, or force it (\"force\": true; CLI --force): the loss is then recorded "
                     "and listings of those buckets say so until the target's data is re-attached or the loss "
                     "acknowledged",
                     a, n->id, offline ? "the target is offline (it does not answer)"
                                       : sl_conf->rebalance_enabled ? "the rebalance is skipped (skip_rebalance)"
                                                                    : "rebalance.enabled is false",
                     cnt >= 0 ? "these exist nowhere else: "
                     : stale  ? "how many of them exist nowhere else is unknown (objects were written or deleted "
                                "there after its last inventory was counted)"
                              : "how many of them exist nowhere else is unknown (this primary has no inventory "
                                "of it: it was down since this primary started)",
                     cnt < 0 ? "" : what, age,
                     offline ? "" : sl_conf->rebalance_enabled ? " without skip_rebalance"
                                                               : " with rebalance.enabled true");
        free(what);
    } else if (cnt != 0) {
        sl_lost_record(n->id, n->url, a, detail, it, cnt < 0);
    }
    if (rc == 0 && skip_reb)
        sl_lost_gone(n->id); /* its slices and replicas go too, and nothing re-encodes them yet */
    json_decref(detail);
    return rc;
}

/* ---- the cluster's hooks ---- */

static void joined(const struct sl_snode *n)
{
    sl_lost_rejoined(n->id, n->ctrl_url); /* a target removed by force may be back with its data */
}

static void alive(const struct sl_snode *n, const json_t *cii)
{
    const char *tok = json_string_value(json_object_get(cii, "holdings"));
    if (n->type != SL_NODE_TARGET || !tok)
        return;
    pthread_mutex_lock(&mu);
    if (!seen)
        seen = json_object();
    json_object_set_new(seen, n->id, json_string(tok));
    pthread_mutex_unlock(&mu);
}

static int listing(const struct sl_bck *b, struct sl_err *err)
{
    return sl_lost_check_bucket("list-objects", b->provider, b->name, b->bid, err);
}

const struct sl_cluster_hooks sl_lost_hooks = {
    .name = "lost",
    .primary_tick = sl_lost_tick,
    .joined = joined,
    .alive = alive,
    .leaving = check_loss,
    .listing = listing,
};
