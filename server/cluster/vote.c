/* SPDX-License-Identifier: MIT
 * vote.c: see vote.h. The election, in order:
 *  1. the watcher of a gateway finds the primary silent (no keepalive from
 *     it for an interval, then keepalivetracker factor failed pings);
 *  2. candidates = electable gateways but the primary, highest id digest
 *     first; the first that answers is the candidate. If that is this node,
 *     it runs the election; otherwise it leaves it to that one;
 *  3. the candidate pings the primary once more, then asks every other node
 *     (GET /v1/vote/proxy) for term T + 1 (T: its map's term). A voter says
 *     yes once per term, for a term above its own map's; the election is won
 *     with a majority of the map's gateways (the candidate counted), never
 *     by targets or by fewer gateways than half: the side of a partition
 *     without a majority elects nobody;
 *  4. it tells every node (PUT /v1/vote/result) and takes over: the Smap
 *     names it primary, flags the old one offline and carries term T + 1, a
 *     map every node takes over any of an older term, whatever its version
 *     (primary.c sl_cluster_take_over).
 */
#include "vote.h"
#include "cluster.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t heard_mono;          /* last verified call from the current primary */
static pthread_t thr;
static volatile bool stop_flag, live;
static volatile bool electing;
static pthread_mutex_t vmu = PTHREAD_MUTEX_INITIALIZER;
static int64_t voted_term;           /* the highest term this node voted in, and for whom */
static char voted_for[48];

void sl_vote_heard(const char *sender)
{
    struct sl_smap *s = sl_smap_get();
    if (sender && s->primary[0] && !strcmp(sender, s->primary))
        __atomic_store_n(&heard_mono, sl_mono_ns(), __ATOMIC_RELAXED);
    sl_smap_put(s);
}

bool sl_vote_in_progress(void)
{
    return electing;
}

static int64_t quiet_ns(void)
{
    int64_t h = __atomic_load_n(&heard_mono, __ATOMIC_RELAXED);
    return h ? sl_mono_ns() - h : INT64_MAX;
}

static bool ping(const struct sl_snode *n, int64_t timeout_ms)
{
    char *url = sl_xasprintf("%s/v1/health", n->ctrl_url);
    struct sl_peer_resp r;
    bool ok = sl_peer_call("GET", url, NULL, 0, NULL, 0, timeout_ms, &r) == 0 && r.status == 200;
    sl_peer_resp_free(&r);
    free(url);
    return ok;
}

static int by_digest(const void *a, const void *b)
{
    const struct sl_snode *x = *(const struct sl_snode *const *)a, *y = *(const struct sl_snode *const *)b;
    return x->digest < y->digest ? 1 : x->digest > y->digest ? -1 : 0;
}

/* electable gateways but old, highest digest first (out: s->nnodes slots) */
static int candidates(const struct sl_smap *s, const char *old, const struct sl_snode **out)
{
    int n = 0;
    for (int i = 0; i < s->nnodes; i++) {
        const struct sl_snode *p = &s->nodes[i];
        if (p->type != SL_NODE_PROXY || !strcmp(p->id, old) ||
            (p->flags & (SL_SNF_NONELECTABLE | SL_SNF_MAINT | SL_SNF_DECOMM)))
            continue;
        out[n++] = p;
    }
    qsort(out, (size_t)n, sizeof(*out), by_digest);
    return n;
}

static int64_t ping_ms(void)
{
    int64_t ms = sl_conf->cplane_timeout_ns / 1000000;
    return ms > 0 ? ms : 2000;
}

/* ---- the candidate ---- */

/* one request to every node but this one, the old primary and those
 * flagged offline (f, urls: s->nnodes slots; urls are the caller's to free) */
static int to_voters(const struct sl_smap *s, const char *old, const char *method, const char *path,
                     const char *body, size_t blen, struct sl_fan *f, char **urls, bool *gw)
{
    int n = 0;
    for (int i = 0; i < s->nnodes; i++) {
        const struct sl_snode *nd = &s->nodes[i];
        if (!strcmp(nd->id, G.id) || !strcmp(nd->id, old) || (nd->flags & SL_SNF_OFFLINE))
            continue;
        urls[n] = sl_xasprintf("%s%s", nd->ctrl_url, path);
        f[n] = (struct sl_fan){ .url = urls[n], .method = method, .body = body, .blen = blen };
        if (gw)
            gw[n] = nd->type == SL_NODE_PROXY;
        n++;
    }
    return n;
}

/* The vote given last, kept in the node metadata ("vote") before it is
 * answered: a gateway restarted in the middle of an election does not vote
 * twice in one term. */
static bool vote_loaded;

static void vote_load(void) /* (vmu held) */
{
    if (vote_loaded)
        return;
    vote_loaded = true;
    json_t *d = sl_node_load_doc("vote");
    if (d) {
        voted_term = sl_json_int(d, "term", 0);
        snprintf(voted_for, sizeof(voted_for), "%s", sl_json_str(d, "for", ""));
    }
    json_decref(d);
}

/* This node votes in term t for cand: once per term, and only for a term
 * above its map's. NULL (yes), or why not (into buf). */
static const char *vote_term(const struct sl_smap *s, int64_t t, const char *cand, char *buf, size_t bsz)
{
    pthread_mutex_lock(&vmu);
    vote_load();
    const char *why = NULL;
    if (t <= s->term) {
        snprintf(buf, bsz, "the election is for term %lld, and this node's cluster map is of term %lld already",
                 (long long)t, (long long)s->term);
        why = buf;
    } else if (t < voted_term || (t == voted_term && strcmp(voted_for, cand))) {
        snprintf(buf, bsz, "this node voted for %s in term %lld", voted_for, (long long)voted_term);
        why = buf;
    } else {
        json_t *d = json_pack("{s:I,s:s}", "term", (json_int_t)t, "for", cand);
        if (sl_node_save_doc("vote", d) < 0) { /* (a vote that may be forgotten is not given) */
            snprintf(buf, bsz, "this node cannot record its vote in its metadata");
            why = buf;
        } else {
            voted_term = t;
            snprintf(voted_for, sizeof(voted_for), "%s", cand);
        }
        json_decref(d);
    }
    pthread_mutex_unlock(&vmu);
    return why;
}

static void elect(struct sl_smap *s, const char *old)
{
    electing = true;
    const struct sl_snode *op = sl_smap_find(s, old);
    if (op && ping(op, ping_ms())) {
        sl_logi("election: primary %s answers again; not electing", old);
        electing = false;
        return;
    }
    pthread_mutex_lock(&vmu);
    vote_load();
    int64_t term = SL_MAX(s->term, voted_term) + 1;
    pthread_mutex_unlock(&vmu);
    char buf[200];
    const char *self_no = vote_term(s, term, G.id, buf, sizeof(buf)); /* (its own vote first) */
    if (self_no) {
        sl_logi("election: not electing: %s", self_no);
        electing = false;
        return;
    }
    json_t *rec = json_pack("{s:s,s:s,s:I,s:I}", "candidate", G.id, "primary", old, "smap_version",
                            (json_int_t)s->version, "term", (json_int_t)term);
    size_t blen;
    char *body = sl_json_dump(rec, 0, &blen);
    json_decref(rec);
    struct sl_fan *f = sl_xcalloc((size_t)s->nnodes + 1, sizeof(*f));
    char **urls = sl_xcalloc((size_t)s->nnodes + 1, sizeof(char *));
    bool *gw = sl_xcalloc((size_t)s->nnodes + 1, sizeof(bool));
    int n = to_voters(s, old, "GET", "/v1/vote/proxy", body, blen, f, urls, gw);
    sl_peer_fanout(f, n, ping_ms() * 3);
    int yes = 0, no = 0, gw_yes = 1, gws = sl_smap_count(s, SL_NODE_PROXY, false);
    for (int i = 0; i < n; i++) {
        json_error_t je;
        json_t *j = f[i].ok && f[i].resp.status == 200 ? json_loadb(f[i].resp.body.p, f[i].resp.body.len, 0, &je)
                                                         : NULL;
        if (json_is_true(json_object_get(j, "vote"))) {
            yes++;
            gw_yes += gw[i];
        } else {
            no++;
            sl_logi("election: %s votes no: %s", urls[i],
                    j ? sl_json_str(j, "why", "?") : f[i].ok ? f[i].resp.err : "no answer");
        }
        json_decref(j);
    }
    sl_peer_fanout_free(f, n);
    for (int i = 0; i < n; i++)
        free(urls[i]);
    bool won = gw_yes * 2 > gws;
    sl_logi("election for the primary after %s, term %lld: %d yes, %d no; %d of the %d gateways: %s", old,
            (long long)term, yes, no, gw_yes, gws, won ? "won" : "lost (a majority of the gateways is needed)");
    if (won) {
        n = to_voters(s, old, "PUT", "/v1/vote/result", body, blen, f, urls, NULL);
        sl_peer_fanout(f, n, ping_ms());
        sl_peer_fanout_free(f, n);
        for (int i = 0; i < n; i++)
            free(urls[i]);
        sl_cluster_take_over(old, term);
    }
    free(gw);
    free(urls);
    free(f);
    free(body);
    electing = false;
}

static void primary_down(struct sl_smap *s, const char *old)
{
    const struct sl_snode **c = sl_xcalloc((size_t)s->nnodes + 1, sizeof(*c));
    int n = candidates(s, old, c);
    for (int i = 0; i < n; i++) {
        if (!strcmp(c[i]->id, G.id)) {
            sl_logw("primary %s does not answer: this gateway is the candidate; electing", old);
            elect(s, old);
            break;
        }
        if (ping(c[i], ping_ms())) {
            sl_logw("primary %s does not answer: %s is the candidate", old, c[i]->id);
            break;
        }
    }
    free(c);
}

static void *watch(void *arg)
{
    (void)arg;
    int fails = 0;
    sl_peer_abort_on(&stop_flag); /* a stop does not wait for a gateway that does not answer */
    while (!stop_flag) {
        int64_t iv = sl_keepalive_wait(&stop_flag);
        if (stop_flag || G.stopping)
            break;
        if (sl_is_primary() || !G.ready) {
            fails = 0;
            continue;
        }
        struct sl_smap *s = sl_smap_get();
        const struct sl_snode *p = sl_smap_primary(s);
        if (p && !strcmp(p->id, G.id)) {
            /* named primary (set-primary) without having taken the role */
            sl_smap_put(s);
            sl_logw("the cluster map names %s the primary: taking the role", G.name);
            sl_cluster_assume_primary();
            continue;
        }
        if (!p || quiet_ns() < iv * 1000000 * 3 / 2) {
            fails = 0;
        } else if (ping(p, sl_conf->max_keepalive_ns / 1000000)) {
            fails = 0;
            __atomic_store_n(&heard_mono, sl_mono_ns(), __ATOMIC_RELAXED);
        } else if (++fails >= (sl_conf->keepalive_factor > 0 ? sl_conf->keepalive_factor : 3)) {
            char old[48];
            snprintf(old, sizeof(old), "%s", p->id);
            fails = 0;
            primary_down(s, old);
        }
        sl_smap_put(s);
    }
    return NULL;
}

void sl_vote_start(void)
{
    if (G.role != SL_ROLE_PROXY || live)
        return;
    __atomic_store_n(&heard_mono, sl_mono_ns(), __ATOMIC_RELAXED);
    stop_flag = false;
    if (pthread_create(&thr, NULL, watch, NULL) == 0)
        live = true;
}

void sl_vote_stop(void)
{
    if (!live)
        return;
    stop_flag = true;
    pthread_join(thr, NULL);
    live = false;
}

/* ---- the voters ---- */

static void vote_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    const char *cand = sl_json_str(j, "candidate", ""), *old = sl_json_str(j, "primary", "");
    struct sl_smap *s = sl_smap_get();
    const char *why = NULL;
    char buf[200];
    int64_t iv = sl_conf->keepalive_interval_ns;
    if (!j || !cand[0] || !old[0]) {
        why = "the vote request names no candidate or primary";
    } else if (sl_is_primary()) {
        why = "this node is the primary";
    } else if (strcmp(s->primary, old)) {
        snprintf(buf, sizeof(buf), "this node's primary is %s, not %s", s->primary, old);
        why = buf;
    } else if (quiet_ns() < iv * 2) {
        snprintf(buf, sizeof(buf), "this node heard from primary %s %.1fs ago", old, (double)quiet_ns() / 1e9);
        why = buf;
    } else {
        const struct sl_snode **c = sl_xcalloc((size_t)s->nnodes + 1, sizeof(*c));
        int n = candidates(s, old, c), above = 0;
        while (above < n && strcmp(c[above]->id, cand))
            above++;
        if (above == n) {
            why = "the candidate is not an electable gateway of this node's cluster map";
        } else if (above > 0) {
            /* every gateway ranked above the candidate must be down: asked at once */
            struct sl_fan *f = sl_xcalloc((size_t)above, sizeof(*f));
            for (int i = 0; i < above; i++)
                f[i] = (struct sl_fan){ .url = sl_xasprintf("%s/v1/health", c[i]->ctrl_url), .method = "GET" };
            sl_peer_fanout(f, above, ping_ms());
            for (int i = 0; i < above && !why; i++) {
                if (f[i].ok && f[i].resp.status == 200) {
                    snprintf(buf, sizeof(buf), "%s ranks above %s and answers", c[i]->id, cand);
                    why = buf;
                }
            }
            sl_peer_fanout_free_urls(f, above);
            free(f);
        }
        free(c);
    }
    if (!why && json_object_get(j, "term")) /* (last: a vote given counts for its term) */
        why = vote_term(s, sl_json_int(j, "term", 0), cand, buf, sizeof(buf));
    if (why)
        sl_logi("vote for %s after %s: no (%s)", cand, old, why);
    else
        sl_logi("vote for %s after primary %s: yes", cand, old);
    sl_resp_json_new(r, 200, why ? json_pack("{s:b,s:s}", "vote", 0, "why", why) : json_pack("{s:b}", "vote", 1));
    sl_smap_put(s);
    json_decref(j);
}

static void vote_offload(struct sl_req *r)
{
    sl_req_offload_peer(r, vote_run, NULL, NULL); /* waits on peers, not on the busy main pool */
}

static void result_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!j) {
        sl_resp_err(r, &err);
        return;
    }
    sl_logi("vote result: %s is the new primary (after %s); its cluster map follows",
            sl_json_str(j, "candidate", "?"), sl_json_str(j, "primary", "?"));
    /* the new primary's keepalives will count from now */
    __atomic_store_n(&heard_mono, sl_mono_ns(), __ATOMIC_RELAXED);
    json_decref(j);
    sl_resp_empty(r, 200);
}

bool sl_vote_route(struct sl_req *r)
{
    if (!sl_has_prefix(r->path, "/v1/vote/"))
        return false;
    if (!strcmp(r->path, "/v1/vote/proxy")) {
        if (r->method != SL_M_GET)
            sl_resp_method_not_allowed(r, "GET");
        else
            sl_req_buffer_body(r, 64 * 1024, vote_offload);
    } else if (!strcmp(r->path, "/v1/vote/result")) {
        if (r->method != SL_M_PUT)
            sl_resp_method_not_allowed(r, "PUT");
        else
            sl_req_buffer_body(r, 64 * 1024, result_done);
    } else {
        sl_resp_errf(r, SL_ENOENT, "no such endpoint: %s %s (votes: /v1/vote/proxy, /v1/vote/result)",
                     r->method_str, r->path);
    }
    return true;
}

const struct sl_cluster_hooks sl_vote_hooks = {
    .name = "vote",
    .serving = sl_vote_start,
    .stopping = sl_vote_stop,
};
