/* SPDX-License-Identifier: MIT
 * remais.c: see remais.h.
 */
#include "remais.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOC "remais"

static int alias_valid(const char *a, struct sl_err *err)
{
    size_t n = strlen(a);
    if (!n || n > 64)
        return sl_errf(err, SL_EINVAL, "remote cluster alias \"%s\": 1 to 64 characters", a);
    for (size_t i = 0; i < n; i++) {
        char c = a[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.'))
            return sl_errf(err, SL_EINVAL, "remote cluster alias \"%s\": letters, digits, '-', '_' and '.' only", a);
    }
    return 0;
}

/* the remote's Smap (a new reference), or NULL when it does not answer */
static json_t *remote_smap(const char *url)
{
    char *u = sl_xasprintf("%s/v1/daemon?what=smap", url);
    struct sl_peer_resp pr;
    json_t *j = NULL;
    if (sl_peer_call_foreign("GET", u, 3000, &pr) == 0 && pr.status == 200) {
        json_error_t je;
        j = sl_json_loadb_u64(pr.body.p, pr.body.len, &je); /* (uint64s as they come) */
    }
    sl_peer_resp_free(&pr);
    free(u);
    return j;
}

struct change {
    char *alias, *url;          /* url NULL: detach */
};

static void change_free(void *arg)
{
    struct change *c = arg;
    free(c->alias);
    free(c->url);
    free(c);
}

static void change_run(struct sl_req *r, void *arg)
{
    struct change *c = arg;
    json_t *doc = sl_cluster_doc(DOC);
    json_t *nd = doc ? json_deep_copy(doc) : json_object();
    json_decref(doc);
    json_t *cl = json_object_get(nd, "clusters");
    if (!json_is_object(cl)) {
        cl = json_object();
        json_object_set_new(nd, "clusters", cl);
    }
    json_t *cur = json_object_get(cl, c->alias);
    if (!c->url) {
        if (!cur) {
            sl_resp_errf(r, SL_ENOENT, "remote cluster \"%s\" is not attached (see GET /v1/cluster?what=remote)",
                         c->alias);
            json_decref(nd);
            change_free(c);
            return;
        }
        json_object_del(cl, c->alias);
    } else {
        const char *was = sl_json_str(cur, "url", "");
        if (cur && strcmp(was, c->url)) {
            sl_resp_errf(r, SL_EBCKEXIST, "remote cluster \"%s\" is already attached, at %s: detach it first; "
                         "nothing was changed", c->alias, was);
            json_decref(nd);
            change_free(c);
            return;
        }
        json_t *sm = remote_smap(c->url); /* (it need not be up: its UUID is then learnt later) */
        json_object_set_new(cl, c->alias, json_pack("{s:s,s:s}", "url", c->url, "uuid", sl_json_str(sm, "uuid", "")));
        json_decref(sm);
    }
    if (sl_cluster_set_doc(DOC, nd) < 0) {
        sl_resp_errf(r, SL_EINTERNAL, "cannot store the remote cluster list");
    } else {
        sl_logi("remote cluster %s %s%s", c->alias, c->url ? "attached at " : "detached", c->url ? c->url : "");
        sl_resp_empty(r, 200);
    }
    change_free(c);
}

bool sl_remais_put(struct sl_req *r)
{
    bool attach = strstr(r->path, "/v1/cluster/attach") == r->path;
    bool detach = strstr(r->path, "/v1/cluster/detach") == r->path;
    if (!attach && !detach)
        return false;
    struct sl_err err = { 0 };
    const char *what = sl_req_query(r, "what");
    const char *alias = sl_req_header(r, "Ais-Remote-Ais-Alias"), *url = sl_req_header(r, "Ais-Remote-Ais-Url");
    if (!what || strcmp(what, "remote")) {
        sl_resp_errf(r, SL_EINVAL, "PUT %s: what=remote is the only kind of attachment", r->path);
    } else if (!alias || alias_valid(alias, &err) < 0) {
        if (!alias)
            sl_errf(&err, SL_EINVAL, "PUT %s: the header Ais-Remote-Ais-Alias (the remote cluster's alias) is "
                    "required", r->path);
        sl_resp_err(r, &err);
    } else if (attach && (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))) {
        sl_resp_errf(r, SL_EINVAL, "PUT %s: the header Ais-Remote-Ais-Url must be the remote cluster's http:// or "
                     "https:// URL (a gateway's)", r->path);
    } else {
        struct change *c = sl_xcalloc(1, sizeof(*c));
        c->alias = sl_xstrdup(alias);
        if (attach) {
            size_t n = strlen(url);
            while (n && url[n - 1] == '/')
                n--;
            c->url = sl_xstrndup(url, n);
        }
        sl_req_offload(r, change_run, change_free, c);
    }
    return true;
}

static void get_run(struct sl_req *r, void *arg)
{
    (void)arg;
    json_t *doc = sl_cluster_doc(DOC);
    json_t *a = json_array();
    const char *alias;
    json_t *v;
    json_object_foreach(json_object_get(doc, "clusters"), alias, v) {
        const char *url = sl_json_str(v, "url", "");
        json_t *sm = remote_smap(url);
        const char *uuid = sm ? sl_json_str(sm, "uuid", "") : sl_json_str(v, "uuid", "");
        json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:o}", "url", url, "alias", alias, "uuid", uuid, "smap",
                                           sm ? sm : json_null()));
    }
    json_t *out = json_pack("{s:o,s:I}", "a", a, "ver", (json_int_t)json_integer_value(json_object_get(doc,
                                                                                                      "version")));
    json_decref(doc);
    sl_resp_json_new(r, 200, out);
}

void sl_remais_get(struct sl_req *r)
{
    sl_req_offload(r, get_run, NULL, NULL);
}

int sl_remais_url(const char *key, char *url, size_t n, struct sl_err *err)
{
    json_t *doc = sl_cluster_doc(DOC);
    json_t *cl = json_object_get(doc, "clusters");
    json_t *c = json_object_get(cl, key);
    if (!c) { /* by UUID */
        const char *alias;
        json_t *v;
        json_object_foreach(cl, alias, v)
            if (!strcmp(sl_json_str(v, "uuid", ""), key))
                c = v;
    }
    if (c)
        snprintf(url, n, "%s", sl_json_str(c, "url", ""));
    json_decref(doc);
    if (!c)
        return sl_errf(err, SL_EINVAL, "no remote cluster \"%s\" is attached (shale cluster remote-attach %s=URL; "
                       "GET /v1/cluster?what=remote lists them)", key, key);
    return 0;
}
