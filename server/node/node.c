/* SPDX-License-Identifier: MIT
 * node.c: see node.h.
 */
#include "node.h"
#include "jsonx.h"
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct sl_node G;

static pthread_mutex_t modify_mu = PTHREAD_MUTEX_INITIALIZER;
#define MAXL 8
static sl_bmd_listener bmd_listeners[MAXL];
static int nbmd_l;
static sl_smap_listener smap_listeners[MAXL];
static int nsmap_l;

bool sl_is_target(void)
{
    return G.role == SL_ROLE_TARGET || G.role == SL_ROLE_STANDALONE;
}

bool sl_is_proxy(void)
{
    return G.role == SL_ROLE_PROXY || G.role == SL_ROLE_STANDALONE;
}

const char *sl_role_name(int role)
{
    return role == SL_ROLE_PROXY ? "proxy" : role == SL_ROLE_TARGET ? "target" : "standalone";
}

int sl_node_init(const struct sl_config *c, int role, struct sl_err *err)
{
    G.role = role;
    G.start_ns = sl_now_ns();
    G.start_mono = sl_mono_ns();
    if (!c->confdir[0])
        return sl_errf(err, SL_EINVAL, "\"confdir\" is not set: the node needs a directory for its id and metadata");
    if (sl_mkdir_p(c->confdir, 0755) < 0)
        return sl_errf(err, SL_EIO, "cannot create confdir %s: %s", c->confdir, strerror(errno));
    char *idf = sl_xasprintf("%s/node_id", c->confdir);
    struct sl_buf b;
    sl_buf_init(&b);
    if (sl_read_file(idf, &b, 128) == 0 && b.len) {
        while (b.len && (b.p[b.len - 1] == '\n' || b.p[b.len - 1] == ' '))
            b.p[--b.len] = 0;
        snprintf(G.id, sizeof(G.id), "%s", b.p);
    } else {
        const char *env = getenv("AIS_DAEMON_ID");
        if (env && *env)
            snprintf(G.id, sizeof(G.id), "%s", env);
        else
            sl_rand_id(G.id, 10);
        if (sl_write_file(idf, G.id, strlen(G.id), true) < 0) {
            sl_errf(err, SL_EIO, "cannot write node id to %s: %s", idf, strerror(errno));
            free(idf);
            sl_buf_free(&b);
            return -1;
        }
    }
    free(idf);
    sl_buf_free(&b);
    snprintf(G.name, sizeof(G.name), "%c[%s]", role == SL_ROLE_PROXY ? 'p' : 't', G.id);
    char *mdd = sl_xasprintf("%s/meta", c->confdir);
    int rc = sl_md_node_open(mdd, &G.md, err);
    free(mdd);
    return rc;
}

void sl_node_close(void)
{
    sl_md_node_close(G.md);
    G.md = NULL;
}

int sl_node_save_doc(const char *key, json_t *doc)
{
    size_t len;
    char *s = sl_json_dump(doc, SL_JD_U64STR, &len);
    if (!s)
        return -1;
    int rc = sl_md_node_put(G.md, key, s, len);
    free(s);
    return rc;
}

json_t *sl_node_load_doc(const char *key)
{
    struct sl_buf b;
    sl_buf_init(&b);
    json_t *j = NULL;
    if (sl_md_node_get(G.md, key, &b) == 1) {
        json_error_t je;
        j = json_loadb(b.p, b.len, 0, &je);
        if (!j)
            sl_logw("node metadata \"%s\" is corrupt (%s); ignoring it", key, je.text);
    }
    sl_buf_free(&b);
    return j;
}

void sl_bmd_listen(sl_bmd_listener fn)
{
    if (nbmd_l < MAXL)
        bmd_listeners[nbmd_l++] = fn;
}

void sl_smap_listen(sl_smap_listener fn)
{
    if (nsmap_l < MAXL)
        smap_listeners[nsmap_l++] = fn;
}

static void install_bmd(struct sl_bmd *nb)
{
    struct sl_bmd *old = sl_bmd_get();
    json_t *j = sl_bmd_json(nb);
    if (sl_node_save_doc("bmd", j) < 0)
        sl_logw("could not persist BMD v%lld", (long long)nb->version);
    json_decref(j);
    nb->refs++; /* keep one for the listeners below */
    sl_bmd_install(nb);
    for (int i = 0; i < nbmd_l; i++)
        bmd_listeners[i](old, nb);
    sl_bmd_put(nb);
    sl_bmd_put(old);
}

int sl_bmd_modify(sl_bmd_edit_fn fn, void *arg, struct sl_err *err)
{
    pthread_mutex_lock(&modify_mu);
    struct sl_bmd *cur = sl_bmd_get();
    struct sl_bmd *nb = sl_bmd_clone(cur);
    sl_bmd_put(cur);
    int rc = fn(nb, arg, err);
    if (rc < 0) {
        sl_bmd_put(nb);
        pthread_mutex_unlock(&modify_mu);
        return rc;
    }
    nb->version++;
    struct sl_smap *sm = sl_smap_get();
    nb->term = SL_MAX(nb->term, sm->term); /* (made under this primary's term) */
    sl_smap_put(sm);
    install_bmd(nb);
    pthread_mutex_unlock(&modify_mu);
    return 0;
}

int sl_bmd_receive(struct sl_bmd *nb)
{
    pthread_mutex_lock(&modify_mu);
    struct sl_bmd *cur = sl_bmd_get();
    bool newer = sl_md_newer(nb->term, nb->version, cur->term, cur->version);
    sl_bmd_put(cur);
    if (!newer) {
        pthread_mutex_unlock(&modify_mu);
        sl_bmd_put(nb);
        return 0;
    }
    install_bmd(nb);
    pthread_mutex_unlock(&modify_mu);
    return 1;
}

static void install_smap(struct sl_smap *ns)
{
    struct sl_smap *old = sl_smap_get();
    json_t *j = sl_smap_json(ns);
    if (sl_node_save_doc("smap", j) < 0)
        sl_logw("could not persist Smap v%lld", (long long)ns->version);
    json_decref(j);
    ns->refs++;
    sl_smap_install(ns);
    for (int i = 0; i < nsmap_l; i++)
        smap_listeners[i](old, ns);
    sl_smap_put(ns);
    sl_smap_put(old);
}

int sl_smap_modify(sl_smap_edit_fn fn, void *arg, struct sl_err *err)
{
    pthread_mutex_lock(&modify_mu);
    struct sl_smap *cur = sl_smap_get();
    struct sl_smap *ns = sl_smap_clone(cur);
    sl_smap_put(cur);
    int rc = fn(ns, arg, err);
    if (rc < 0) {
        sl_smap_put(ns);
        pthread_mutex_unlock(&modify_mu);
        return rc;
    }
    if (rc == 0) { /* rc 1 = no change */
        ns->version++;
        install_smap(ns);
    } else {
        sl_smap_put(ns);
    }
    pthread_mutex_unlock(&modify_mu);
    return 0;
}

int sl_smap_receive(struct sl_smap *ns)
{
    pthread_mutex_lock(&modify_mu);
    struct sl_smap *cur = sl_smap_get();
    bool newer = sl_md_newer(ns->term, ns->version, cur->term, cur->version);
    sl_smap_put(cur);
    if (!newer) {
        pthread_mutex_unlock(&modify_mu);
        sl_smap_put(ns);
        return 0;
    }
    install_smap(ns);
    pthread_mutex_unlock(&modify_mu);
    return 1;
}
