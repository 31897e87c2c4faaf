/* SPDX-License-Identifier: MIT
 * tls.c: the certificate routes of AIStore (ais/x509.go, api/x509.go):
 *   PUT /v1/daemon/load-x509           this node reads net.http.server_crt
 *                                      and server_key again and serves them
 *   PUT /v1/cluster/load-x509[/NODE]   a gateway: every node of the map (or
 *                                      NODE), itself first, off the HTTP thread
 *   GET /v1/daemon?what=tls_certificate   what the certificate served says
 *   GET /v1/cluster?what=tls_certificate  {NODE: that} for every node
 * ("certinfo" is accepted for tls_certificate.) A file missing or not a
 * certificate (or a key not the certificate's) is a 400 naming the file,
 * and the certificate loaded before stays in use. On a node that serves
 * plain HTTP these answer 400 saying so.
 */
#include "route.h"
#include "cluster.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_what(const char *w)
{
    return w && (!strcmp(w, "tls_certificate") || !strcmp(w, "certinfo"));
}

static int plain_http(struct sl_err *err)
{
    return sl_errf(err, SL_EINVAL, "%s serves plain HTTP (net.http.use_https is %s): it has no TLS certificate; to "
                   "serve HTTPS set net.http.use_https, server_crt and server_key in its config file and restart it",
                   G.name, sl_conf->use_https ? "true, but only from the next restart" : "false");
}

/* this node: the files again; the info of what it serves now */
static json_t *load_here(struct sl_err *err)
{
    json_t *before = sl_http_tls_info();
    if (!before) {
        plain_http(err);
        return NULL;
    }
    json_decref(before);
    struct sl_err e = { 0 };
    if (sl_http_tls_load(sl_conf->server_crt, sl_conf->server_key, &e) < 0) {
        sl_loge("load-x509: %s; the certificate loaded before stays in use", e.msg);
        sl_errf(err, e.code ? e.code : SL_EINVAL, "%s: %s; the certificate loaded before stays in use", G.name, e.msg);
        return NULL;
    }
    json_t *now = sl_http_tls_info();
    sl_logi("load-x509: certificate %s loaded (serial %s, valid %s)", sl_conf->server_crt,
            sl_json_str(now, "serial-number", "?"), sl_json_str(now, "valid", "?"));
    return now;
}

static void daemon_load_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    json_t *info = load_here(&err);
    if (info)
        sl_resp_json_new(r, 200, info);
    else
        sl_resp_err(r, &err);
}

/* the gateway's fan-out (a pool thread): arg = the node id or "" (all) */
static void cluster_run(struct sl_req *r, void *arg)
{
    char *sid = arg; /* (ours to free: the offload's cancel frees it only when this does not run) */
    bool load = r->method == SL_M_PUT;
    struct sl_smap *sm = sl_smap_get();
    json_t *out = json_object();
    struct sl_buf bad;
    sl_buf_init(&bad);
    int n = 0, nbad = 0, code = SL_EINVAL;
    bool stop = false;
    for (int pass = 0; pass < 2 && !stop; pass++) /* (itself first: a bad file is seen before any other node loads) */
        for (int i = 0; i < sm->nnodes && !stop; i++) {
            const struct sl_snode *nd = &sm->nodes[i];
            bool self = !strcmp(nd->id, G.id);
            if ((pass == 0) != self || (*sid && strcmp(sid, nd->id)))
                continue;
            n++;
            struct sl_err err = { 0 };
            json_t *info = NULL;
            if (self) {
                info = load ? load_here(&err) : sl_http_tls_info();
                if (!info && !load)
                    plain_http(&err);
            } else {
                char *url = sl_xasprintf("%s/v1/daemon%s", nd->ctrl_url, load ? "/load-x509" : "?what=tls_certificate");
                struct sl_peer_resp pr;
                int rc = sl_peer_call(load ? "PUT" : "GET", url, NULL, 0, NULL, 0, 0, &pr);
                if (rc < 0)
                    sl_errf(&err, SL_EUNAVAIL, "%s did not answer: %s", nd->id, pr.err);
                else if (pr.status != 200)
                    sl_errf(&err, pr.status >= 500 ? SL_EUNAVAIL : SL_EINVAL, "%s", pr.err[0] ? pr.err : "error");
                else
                    info = json_loadb(pr.body.p ? pr.body.p : "", pr.body.len, 0, NULL);
                if (!info && !err.msg[0])
                    sl_errf(&err, SL_EINTERNAL, "%s answered no JSON", nd->id);
                sl_peer_resp_free(&pr);
                free(url);
            }
            if (info) {
                json_object_set_new(out, nd->id, info);
            } else if (!load) {
                json_object_set_new(out, nd->id, json_pack("{s:s}", "error", err.msg));
            } else {
                if (nbad++ < 8)
                    sl_buf_printf(&bad, "%s%s", bad.len ? "; " : "", err.msg);
                if (err.code == SL_EUNAVAIL)
                    code = SL_EUNAVAIL;
                /* its own file is bad: the others are not asked (AIStore's order; an operator fixes it first) */
                stop = self && !*sid;
            }
        }
    int64_t ver = sm->version;
    sl_smap_put(sm);
    if (*sid && !n)
        sl_resp_errf(r, SL_ENOENT, "node \"%s\" is not in the cluster map v%lld (the nodes: GET /v1/daemon?what=smap)",
                     sid, (long long)ver);
    else if (nbad)
        sl_resp_errf(r, code, "load-x509: %d node%s failed: %.*s%s", nbad, nbad == 1 ? "" : "s", (int)bad.len, bad.p,
                     json_object_size(out) ? " (the other nodes loaded theirs)" : "");
    else
        sl_resp_json_new(r, 200, out), out = NULL;
    json_decref(out);
    sl_buf_free(&bad);
    free(sid);
}

bool sl_tls_route(struct sl_req *r)
{
    bool dae = sl_req_path_is(r, "/v1/daemon"), clu = sl_req_path_is(r, "/v1/cluster");
    const char *what = r->method == SL_M_GET ? sl_req_query(r, "what") : NULL;
    if (dae && is_what(what)) {
        json_t *info = sl_http_tls_info();
        struct sl_err err = { 0 };
        if (info)
            sl_resp_json_new(r, 200, info);
        else
            plain_http(&err), sl_resp_err(r, &err);
        return true;
    }
    if (dae && sl_req_path_is(r, "/v1/daemon/load-x509")) {
        if (r->method != SL_M_PUT)
            sl_resp_method_not_allowed(r, "PUT");
        else
            sl_req_offload(r, daemon_load_run, NULL, NULL); /* (reads files, signs once: not on this thread) */
        return true;
    }
    bool load = clu && sl_req_path_is(r, "/v1/cluster/load-x509");
    if (!load && !(clu && r->path_len == strlen("/v1/cluster") && is_what(what)))
        return false;
    if (load && r->method != SL_M_PUT) {
        sl_resp_method_not_allowed(r, "PUT");
        return true;
    }
    if (G.role == SL_ROLE_TARGET) {
        sl_resp_errf(r, SL_EINVAL, "%s is a storage target: send %s /v1/cluster%s to a gateway (or %s to the "
                     "target itself)", G.name, r->method_str, load ? "/load-x509" : "?what=tls_certificate",
                     load ? "PUT /v1/daemon/load-x509" : "GET /v1/daemon?what=tls_certificate");
        return true;
    }
    const char *sid = "";
    if (load && r->path_len > strlen("/v1/cluster/load-x509/"))
        sid = r->path + strlen("/v1/cluster/load-x509/");
    else if (!load && sl_req_query(r, "sid"))
        sid = sl_req_query(r, "sid");
    sl_req_offload(r, cluster_run, free, sl_xstrdup(sid));
    return true;
}
