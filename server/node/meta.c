/* SPDX-License-Identifier: MIT
 * meta.c: HRW, Smap and BMD snapshots and their JSON forms.
 */
#include "meta.h"
#include "cksum.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- HRW (spec §13.2) ---- */

uint64_t sl_hrw_mix(uint64_t x)
{
    uint64_t z = x + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z = (z ^ (z >> 31)) + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z = (z ^ (z >> 31)) * 5;
    z = (z << 7) | (z >> 57);
    return z * 9;
}

uint64_t sl_id_digest(const char *id)
{
    return sl_xxh64(id, strlen(id), SL_MLCG32);
}

void sl_obj_uname(struct sl_buf *out, const char *provider, const char *bucket, const char *obj, size_t olen)
{
    sl_buf_reset(out); /* "PROVIDER/@#/BUCKET/OBJECT": on every object access, no printf */
    sl_buf_adds(out, provider);
    sl_buf_adds(out, "/@#/");
    sl_buf_adds(out, bucket);
    sl_buf_addc(out, '/');
    sl_buf_add(out, obj, sl_objname_vkey(obj, olen));
}

static bool ishex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

size_t sl_objname_vkey(const char *name, size_t nlen)
{
    if (nlen <= SL_VER_SUFFIX || name[nlen - SL_VER_SUFFIX] != SL_VER_SEP) /* (one compare on every access) */
        return nlen;
    const char *s = name + nlen - SL_VER_SUFFIX + 1;
    for (int i = 0; i < 16; i++)
        if (!ishex(s[i]))
            return nlen;
    if (memcmp(s + 16, "null", 4))
        for (int i = 16; i < 20; i++)
            if (!ishex(s[i]))
                return nlen;
    return nlen - SL_VER_SUFFIX;
}

/* ---- snapshots ---- */

static pthread_mutex_t snap_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sl_smap *cur_smap;
static struct sl_bmd *cur_bmd;

static void smap_free(struct sl_smap *s)
{
    free(s->nodes);
    free(s);
}

struct sl_smap *sl_smap_get(void)
{
    pthread_mutex_lock(&snap_mu);
    struct sl_smap *s = cur_smap;
    if (s)
        s->refs++;
    pthread_mutex_unlock(&snap_mu);
    if (!s)
        s = sl_smap_new(); /* before the first install: an empty map */
    return s;
}

void sl_smap_put(struct sl_smap *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&snap_mu);
    int r = --s->refs;
    pthread_mutex_unlock(&snap_mu);
    if (r == 0)
        smap_free(s);
}

struct sl_smap *sl_smap_new(void)
{
    struct sl_smap *s = sl_xcalloc(1, sizeof(*s));
    s->refs = 1;
    return s;
}

struct sl_smap *sl_smap_clone(const struct sl_smap *s)
{
    struct sl_smap *c = sl_xmalloc(sizeof(*c));
    *c = *s;
    c->refs = 1;
    c->nodes = sl_xcalloc((size_t)(s->nnodes ? s->nnodes : 1), sizeof(struct sl_snode));
    if (s->nnodes)
        memcpy(c->nodes, s->nodes, (size_t)s->nnodes * sizeof(struct sl_snode));
    return c;
}

void sl_smap_install(struct sl_smap *s)
{
    pthread_mutex_lock(&snap_mu);
    struct sl_smap *old = cur_smap;
    cur_smap = s;
    pthread_mutex_unlock(&snap_mu);
    sl_smap_put(old);
}

const struct sl_snode *sl_smap_find(const struct sl_smap *s, const char *id)
{
    for (int i = 0; i < s->nnodes; i++)
        if (strcmp(s->nodes[i].id, id) == 0)
            return &s->nodes[i];
    return NULL;
}

const struct sl_snode *sl_smap_primary(const struct sl_smap *s)
{
    for (int i = 0; i < s->nnodes; i++)
        if (s->nodes[i].type == SL_NODE_PROXY && strcmp(s->nodes[i].id, s->primary) == 0)
            return &s->nodes[i];
    return NULL;
}

int sl_smap_count(const struct sl_smap *s, int type, bool active_only)
{
    int n = 0;
    for (int i = 0; i < s->nnodes; i++)
        if ((s->nodes[i].type & type) &&
            (!active_only || !(s->nodes[i].flags & (SL_SNF_MAINT | SL_SNF_DECOMM))))
            n++;
    return n;
}

void sl_smap_add(struct sl_smap *s, const struct sl_snode *n)
{
    for (int i = 0; i < s->nnodes; i++) {
        if (strcmp(s->nodes[i].id, n->id) == 0 && s->nodes[i].type == n->type) {
            s->nodes[i] = *n;
            return;
        }
    }
    s->nodes = sl_xrealloc(s->nodes, (size_t)(s->nnodes + 1) * sizeof(*n));
    s->nodes[s->nnodes++] = *n;
}

void sl_smap_remove(struct sl_smap *s, const char *id)
{
    for (int i = 0; i < s->nnodes;) {
        if (strcmp(s->nodes[i].id, id) == 0) {
            memmove(&s->nodes[i], &s->nodes[i + 1], (size_t)(s->nnodes - i - 1) * sizeof(s->nodes[0]));
            s->nnodes--;
        } else {
            i++;
        }
    }
}

void sl_snode_set_urls(struct sl_snode *n)
{
    if (!n->ctrl_host[0])
        snprintf(n->ctrl_host, sizeof(n->ctrl_host), "%s", n->pub_host);
    if (!n->data_host[0])
        snprintf(n->data_host, sizeof(n->data_host), "%s", n->pub_host);
    if (!n->ctrl_port)
        n->ctrl_port = n->pub_port;
    if (!n->data_port)
        n->data_port = n->pub_port;
    const char *sch = sl_conf && sl_conf->use_https ? "https" : "http"; /* one scheme for the cluster */
    const char *b1 = strchr(n->pub_host, ':') ? "[" : "", *e1 = *b1 ? "]" : "";
    snprintf(n->url, sizeof(n->url), "%s://%s%s%s:%d", sch, b1, n->pub_host, e1, n->pub_port);
    const char *b2 = strchr(n->ctrl_host, ':') ? "[" : "", *e2 = *b2 ? "]" : "";
    snprintf(n->ctrl_url, sizeof(n->ctrl_url), "%s://%s%s%s:%d", sch, b2, n->ctrl_host, e2, n->ctrl_port);
    const char *b3 = strchr(n->data_host, ':') ? "[" : "", *e3 = *b3 ? "]" : "";
    snprintf(n->data_url, sizeof(n->data_url), "%s://%s%s%s:%d", sch, b3, n->data_host, e3, n->data_port);
    n->digest = sl_id_digest(n->id);
}

void sl_snode_name(const struct sl_snode *n, char *out, size_t sz)
{
    snprintf(out, sz, "%c[%s]", n->type == SL_NODE_PROXY ? 'p' : 't', n->id);
}

static json_t *netinfo_json(const char *host, int port, const char *url)
{
    json_t *o = json_object();
    char p[16];
    snprintf(p, sizeof(p), "%d", port);
    json_object_set_new(o, "node_ip_addr", json_string(host));
    json_object_set_new(o, "daemon_port", json_string(p));
    json_object_set_new(o, "direct_url", json_string(url));
    return o;
}

json_t *sl_snode_json(const struct sl_snode *n)
{
    json_t *o = json_object();
    json_object_set_new(o, "public_net", netinfo_json(n->pub_host, n->pub_port, n->url));
    json_object_set_new(o, "intra_data_net", netinfo_json(n->data_host, n->data_port, n->data_url));
    json_object_set_new(o, "intra_control_net", netinfo_json(n->ctrl_host, n->ctrl_port, n->ctrl_url));
    json_object_set_new(o, "daemon_type", json_string(n->type == SL_NODE_PROXY ? "proxy" : "target"));
    json_object_set_new(o, "daemon_id", json_string(n->id));
    json_object_set_new(o, "flags", json_integer((json_int_t)n->flags));
    /* uint64 as a JSON number, as Go prints it (see sl_json_u64) */
    json_object_set_new(o, "id_digest", sl_json_u64(n->digest));
    return o;
}

static int netinfo_from(json_t *o, char *host, size_t hn, int *port, struct sl_err *err)
{
    if (!json_is_object(o))
        return sl_errf(err, SL_EINVAL, "snode: missing net info");
    const char *h = json_string_value(json_object_get(o, "node_ip_addr"));
    json_t *p = json_object_get(o, "daemon_port");
    snprintf(host, hn, "%s", h ? h : "");
    if (json_is_string(p))
        *port = atoi(json_string_value(p));
    else if (json_is_integer(p))
        *port = (int)json_integer_value(p);
    return 0;
}

int sl_snode_from_json(json_t *j, struct sl_snode *n, struct sl_err *err)
{
    memset(n, 0, sizeof(*n));
    const char *id = json_string_value(json_object_get(j, "daemon_id"));
    const char *ty = json_string_value(json_object_get(j, "daemon_type"));
    if (!id || !*id || strlen(id) >= sizeof(n->id))
        return sl_errf(err, SL_EINVAL, "snode: invalid daemon_id");
    snprintf(n->id, sizeof(n->id), "%s", id);
    n->type = ty && !strcmp(ty, "proxy") ? SL_NODE_PROXY : SL_NODE_TARGET;
    if (netinfo_from(json_object_get(j, "public_net"), n->pub_host, sizeof(n->pub_host), &n->pub_port, err) < 0)
        return -1;
    netinfo_from(json_object_get(j, "intra_control_net"), n->ctrl_host, sizeof(n->ctrl_host), &n->ctrl_port, err);
    netinfo_from(json_object_get(j, "intra_data_net"), n->data_host, sizeof(n->data_host), &n->data_port, err);
    json_t *fl = json_object_get(j, "flags");
    n->flags = json_is_integer(fl) ? (uint64_t)json_integer_value(fl) : 0;
    sl_snode_set_urls(n);
    return 0;
}

json_t *sl_smap_json(const struct sl_smap *s)
{
    json_t *o = json_object();
    json_t *pmap = json_object(), *tmap = json_object();
    for (int i = 0; i < s->nnodes; i++)
        json_object_set_new(s->nodes[i].type == SL_NODE_PROXY ? pmap : tmap, s->nodes[i].id,
                            sl_snode_json(&s->nodes[i]));
    json_object_set_new(o, "pmap", pmap);
    const struct sl_snode *p = sl_smap_primary(s);
    json_object_set_new(o, "proxy_si", p ? sl_snode_json(p) : json_null());
    json_object_set_new(o, "tmap", tmap);
    json_object_set_new(o, "uuid", json_string(s->uuid));
    json_object_set_new(o, "creation_time", json_string(s->creation_time));
    char v[32];
    snprintf(v, sizeof(v), "%lld", (long long)s->version);
    json_object_set_new(o, "version", json_string(v));
    json_object_set_new(o, "term", json_integer(s->term));
    return o;
}

static int64_t json_i64ish(json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_string(v))
        return strtoll(json_string_value(v), NULL, 10);
    return 0;
}

struct sl_smap *sl_smap_from_json(json_t *j, struct sl_err *err)
{
    if (!json_is_object(j)) {
        sl_errf(err, SL_EINVAL, "Smap: not a JSON object");
        return NULL;
    }
    struct sl_smap *s = sl_smap_new();
    s->version = json_i64ish(json_object_get(j, "version"));
    s->term = json_i64ish(json_object_get(j, "term"));
    snprintf(s->uuid, sizeof(s->uuid), "%s", json_string_value(json_object_get(j, "uuid")) ?: "");
    snprintf(s->creation_time, sizeof(s->creation_time), "%s",
             json_string_value(json_object_get(j, "creation_time")) ?: "");
    json_t *psi = json_object_get(j, "proxy_si");
    if (json_is_object(psi))
        snprintf(s->primary, sizeof(s->primary), "%s", json_string_value(json_object_get(psi, "daemon_id")) ?: "");
    const char *maps[2] = { "pmap", "tmap" };
    for (int m = 0; m < 2; m++) {
        json_t *mp = json_object_get(j, maps[m]);
        const char *k;
        json_t *v;
        json_object_foreach(mp, k, v) {
            struct sl_snode n;
            if (sl_snode_from_json(v, &n, err) < 0) {
                sl_smap_put(s);
                return NULL;
            }
            n.type = m == 0 ? SL_NODE_PROXY : SL_NODE_TARGET;
            sl_smap_add(s, &n);
        }
    }
    return s;
}

static const struct sl_snode *hrw_pick(const struct sl_smap *s, const char *uname, size_t ulen, bool all)
{
    uint64_t d = sl_xxh64(uname, ulen, SL_MLCG32);
    const struct sl_snode *best = NULL;
    uint64_t bests = 0;
    for (int i = 0; i < s->nnodes; i++) {
        const struct sl_snode *n = &s->nodes[i];
        if (n->type != SL_NODE_TARGET)
            continue;
        if (!all && (n->flags & (SL_SNF_MAINT | SL_SNF_DECOMM)))
            continue;
        uint64_t sc = sl_hrw_mix(n->digest ^ d);
        if (!best || sc >= bests) { /* Go: ties -> later */
            if (best && sc == bests && strcmp(n->id, best->id) < 0)
                continue; /* deterministic tie-break independent of map order */
            best = n;
            bests = sc;
        }
    }
    return best;
}

const struct sl_snode *sl_smap_hrw_target(const struct sl_smap *s, const char *uname, size_t ulen)
{
    return hrw_pick(s, uname, ulen, false);
}

int sl_smap_hrw_list(const struct sl_smap *s, const char *uname, size_t ulen, const struct sl_snode **out, int max)
{
    uint64_t d = sl_xxh64(uname, ulen, SL_MLCG32);
    uint64_t *sc = sl_xcalloc((size_t)(max > 0 ? max : 1), sizeof(uint64_t));
    int n = 0;
    for (int i = 0; i < s->nnodes; i++) {
        const struct sl_snode *t = &s->nodes[i];
        if (t->type != SL_NODE_TARGET || (t->flags & (SL_SNF_MAINT | SL_SNF_DECOMM)))
            continue;
        uint64_t x = sl_hrw_mix(t->digest ^ d);
        /* insertion by score, descending (ties: the greater id first, as hrw_pick) */
        int j = n;
        while (j > 0 && (sc[j - 1] < x || (sc[j - 1] == x && strcmp(out[j - 1]->id, t->id) < 0)))
            j--;
        if (j >= max)
            continue;
        int last = n < max ? n : max - 1;
        for (int k = last; k > j; k--) {
            out[k] = out[k - 1];
            sc[k] = sc[k - 1];
        }
        out[j] = t;
        sc[j] = x;
        if (n < max)
            n++;
    }
    free(sc);
    return n;
}

const struct sl_snode *sl_smap_hrw_target_all(const struct sl_smap *s, const char *uname, size_t ulen)
{
    return hrw_pick(s, uname, ulen, true);
}

/* ---- BMD ---- */

static void bmd_free(struct sl_bmd *b)
{
    for (int i = 0; i < b->n; i++)
        json_decref(b->bcks[i].props);
    free(b->bcks);
    free(b);
}

struct sl_bmd *sl_bmd_get(void)
{
    pthread_mutex_lock(&snap_mu);
    struct sl_bmd *b = cur_bmd;
    if (b)
        b->refs++;
    pthread_mutex_unlock(&snap_mu);
    if (!b)
        b = sl_bmd_new();
    return b;
}

void sl_bmd_put(struct sl_bmd *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&snap_mu);
    int r = --b->refs;
    pthread_mutex_unlock(&snap_mu);
    if (r == 0)
        bmd_free(b);
}

struct sl_bmd *sl_bmd_new(void)
{
    struct sl_bmd *b = sl_xcalloc(1, sizeof(*b));
    b->refs = 1;
    return b;
}

struct sl_bmd *sl_bmd_clone(const struct sl_bmd *b)
{
    struct sl_bmd *c = sl_xmalloc(sizeof(*c));
    *c = *b;
    c->refs = 1;
    c->bcks = sl_xcalloc((size_t)(b->n ? b->n : 1), sizeof(struct sl_bck));
    for (int i = 0; i < b->n; i++) {
        c->bcks[i] = b->bcks[i];
        json_incref(c->bcks[i].props);
    }
    return c;
}

void sl_bmd_install(struct sl_bmd *b)
{
    pthread_mutex_lock(&snap_mu);
    struct sl_bmd *old = cur_bmd;
    cur_bmd = b;
    pthread_mutex_unlock(&snap_mu);
    sl_bmd_put(old);
}

const struct sl_bck *sl_bmd_find(const struct sl_bmd *b, const char *provider, const char *name)
{
    for (int i = 0; i < b->n; i++)
        if (strcmp(b->bcks[i].name, name) == 0 && strcmp(b->bcks[i].provider, provider) == 0)
            return &b->bcks[i];
    return NULL;
}

bool sl_bmd_copy(const char *provider, const char *name, struct sl_bck *out)
{
    struct sl_bmd *bmd = sl_bmd_get();
    const struct sl_bck *k = sl_bmd_find(bmd, provider, name);
    if (k)
        sl_bck_copy(out, k);
    sl_bmd_put(bmd);
    return k != NULL;
}

void sl_bck_copy(struct sl_bck *dst, const struct sl_bck *src)
{
    *dst = *src;
    json_incref(dst->props);
}

void sl_bck_release(struct sl_bck *b)
{
    json_decref(b->props);
    b->props = NULL;
}

struct sl_bobj *sl_bobj_new(const struct sl_bck *b, const char *name, size_t nlen)
{
    struct sl_bobj *o = sl_xcalloc(1, sizeof(*o));
    sl_bck_copy(&o->b, b);
    o->name = sl_xstrndup(name, nlen);
    o->nlen = nlen;
    return o;
}

void sl_bobj_free(void *arg)
{
    struct sl_bobj *o = arg;
    if (!o)
        return;
    sl_bck_release(&o->b);
    free(o->name);
    free(o);
}

int sl_bck_name_valid(const char *name, struct sl_err *err)
{
    size_t n = strlen(name);
    if (n == 0)
        return sl_errf(err, SL_EINVAL, "bucket name is empty");
    if (n > SL_MAX_BCKNAME)
        return sl_errf(err, SL_EINVAL, "bucket name \"%.64s...\" is too long (%zu characters, max %d)", name, n,
                       SL_MAX_BCKNAME);
    if (name[0] == '.')
        return sl_errf(err, SL_EINVAL,
                       "bucket name \"%s\" is invalid: names beginning with '.' are reserved for system buckets",
                       name);
    if (strstr(name, ".."))
        return sl_errf(err, SL_EINVAL, "bucket name \"%s\" is invalid: it may not contain \"..\"", name);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.'))
            return sl_errf(err, SL_EINVAL,
                           "bucket name \"%s\" is invalid: only letters, digits, '_', '-' and '.' are allowed",
                           name);
    }
    return 0;
}

const char *sl_provider_norm(const char *p)
{
    if (!p || !*p || !strcmp(p, "ais"))
        return "ais";
    if (!strcmp(p, "aws") || !strcmp(p, "s3"))
        return "aws";
    if (!strcmp(p, "gcp") || !strcmp(p, "gs"))
        return "gcp";
    if (!strcmp(p, "azure") || !strcmp(p, "az"))
        return "azure";
    if (!strcmp(p, "oci") || !strcmp(p, "oc"))
        return "oci";
    if (!strcmp(p, "ht"))
        return "ht";
    return NULL;
}

const char *sl_provider_scheme(const char *p)
{
    if (!strcmp(p, "aws"))
        return "s3";
    if (!strcmp(p, "gcp"))
        return "gs";
    if (!strcmp(p, "azure"))
        return "az";
    if (!strcmp(p, "oci"))
        return "oc";
    if (!strcmp(p, "ht"))
        return "ht";
    return "ais";
}

static json_t *default_props(const char *provider)
{
    struct sl_config *c = sl_conf;
    json_t *p = json_object();
    json_object_set_new(p, "provider", json_string(provider));
    json_t *ck = json_object();
    json_object_set_new(ck, "type", json_string(sl_cksum_name(c ? c->cksum_type : SL_CK_XXHASH2)));
    json_object_set_new(ck, "validate_cold_get", json_true());
    json_object_set_new(ck, "validate_warm_get", json_boolean(c && c->cksum_validate_warm_get));
    json_object_set_new(ck, "validate_obj_move", json_false());
    json_object_set_new(ck, "enable_read_range", json_boolean(c && c->cksum_enable_read_range));
    json_object_set_new(p, "checksum", ck);
    json_t *ve = json_object();
    json_object_set_new(ve, "enabled", json_boolean(!c || c->versioning));
    json_object_set_new(ve, "validate_warm_get", json_false());
    json_object_set_new(ve, "synchronize", json_false());
    json_object_set_new(p, "versioning", ve);
    json_t *mi = json_object();
    /* the cluster's mirror.* (validated by the config) */
    json_object_set_new(mi, "copies", json_integer(c && c->mirror_copies > 0 ? c->mirror_copies : SL_MIRROR_COPIES_DFLT));
    json_object_set_new(mi, "burst_buffer", json_integer(c && c->mirror_burst > 0 ? c->mirror_burst
                                                                                   : SL_MIRROR_BURST_DFLT));
    json_object_set_new(mi, "enabled", json_boolean(c && c->mirror_enabled));
    json_object_set_new(p, "mirror", mi);
    json_t *ec = json_object();
    /* the cluster's ec.* (validated by the config) */
    json_object_set_new(ec, "objsize_limit", json_integer(c ? c->ec_objsize_limit : 262144));
    json_object_set_new(ec, "compression", json_string("never"));
    json_object_set_new(ec, "bundle_multiplier", json_integer(2));
    json_object_set_new(ec, "data_slices", json_integer(c && c->ec_data > 0 ? c->ec_data : 2));
    json_object_set_new(ec, "parity_slices", json_integer(c && c->ec_parity > 0 ? c->ec_parity : 2));
    json_object_set_new(ec, "enabled", json_boolean(c && c->ec_enabled));
    json_object_set_new(ec, "disk_only", json_false());
    json_object_set_new(p, "ec", ec);
    json_t *lru = json_object();
    json_object_set_new(lru, "dont_evict_time", json_string("2h0m"));
    json_object_set_new(lru, "capacity_upd_time", json_string("10m"));
    /* an s3:// bucket's copies are a cache: the remote keeps the objects */
    json_object_set_new(lru, "enabled", json_boolean(strcmp(provider, "ais") != 0));
    json_object_set_new(p, "lru", lru);
    json_t *wp = json_object();
    json_object_set_new(wp, "data", json_string(""));
    json_object_set_new(wp, "md", json_string(""));
    json_object_set_new(p, "write_policy", wp);
    json_object_set_new(p, "access", json_string("0"));
    json_object_set_new(p, "features", json_string("0"));
    /* S3's bucket tags (server/api/s3tag.c): "k=v&k2=v2", percent-encoded */
    json_object_set_new(p, "tags", json_string(""));
    /* S3's lifecycle configuration (server/api/s3life.c), as JSON text; "" none */
    json_object_set_new(p, "lifecycle", json_string(""));
    /* S3's CORS rules (server/api/s3cors.c): "" none, else their JSON array */
    json_object_set_new(p, "cors", json_string(""));
    /* S3's access control (server/api/s3policy.c): canned ACL ("" private),
     * policy (JSON text), public access block ("" none, or four 0/1) */
    json_object_set_new(p, "s3_acl", json_string(""));
    json_object_set_new(p, "s3_policy", json_string(""));
    json_object_set_new(p, "s3_pab", json_string(""));
    /* S3's default encryption (server/api/s3sse.c): "AES256" (SSE-S3) or "" none */
    json_object_set_new(p, "sse", json_string(""));
    /* S3 versioning (server/api/s3ver.c): "" never on, "Enabled", "Suspended" */
    json_object_set_new(p, "s3_versioning", json_string(""));
    /* S3 Object Lock (server/api/s3lock.c): "" none, else its JSON text */
    json_object_set_new(p, "s3_lock", json_string(""));
    /* a remote bucket behind this one (AIStore's backend_bck) and how to reach it */
    /* (namespace.uuid: an attached remote cluster's alias or UUID, for ais://@ALIAS/NAME) */
    json_object_set_new(p, "backend_bck", json_pack("{s:s,s:s,s:{s:s,s:s}}", "name", "", "provider", "", "namespace",
                                                    "uuid", "", "name", ""));
    json_object_set_new(p, "extra", json_pack("{s:{s:s,s:s,s:s,s:I,s:s},s:{s:s}}", "aws", "endpoint", "",
                                              "cloud_region", "", "profile", "", "multipart_size", (json_int_t)0,
                                              "addressing", "", "http", "original_url", ""));
    return p;
}

/* extra.SECT.KEY of props (NULL when absent) */
static json_t *extra_of(const json_t *props, const char *sect, const char *key)
{
    return json_object_get(json_object_get(json_object_get(props, "extra"), sect), key);
}

/* The extra.* settings set (to other than their default) by partial, the
 * section each belongs to, and the remote provider that reads it. */
static const struct {
    const char *sect, *key, *reader;
} extra_readers[] = {
    { "aws", "endpoint", "aws" }, { "aws", "cloud_region", "aws" }, { "aws", "profile", "aws" },
    { "aws", "multipart_size", "aws" }, { "aws", "addressing", "aws" }, { "http", "original_url", "ht" },
};

/* backend_bck and extra.* as set (partial: what this change sets, NULL at
 * create where p is all of it): the provider normalised ("s3" is "aws"), a
 * valid bucket name, well-formed values, and no extra.* setting that the
 * bucket's remote would not read (it would do nothing). */
static int check_backend_shape(json_t *p, const json_t *partial, struct sl_err *err)
{
    json_t *bb = json_object_get(p, "backend_bck");
    const char *name = json_string_value(json_object_get(bb, "name"));
    const char *prov = json_string_value(json_object_get(bb, "provider"));
    const char *own = json_string_value(json_object_get(p, "provider"));
    const char *ep = json_string_value(extra_of(p, "aws", "endpoint"));
    if (ep && *ep && strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8))
        return sl_errf(err, SL_EINVAL, "extra.aws.endpoint \"%s\" is not an http:// or https:// URL", ep);
    const char *ou = json_string_value(extra_of(p, "http", "original_url"));
    if (ou && *ou && strncmp(ou, "http://", 7) && strncmp(ou, "https://", 8))
        return sl_errf(err, SL_EINVAL, "extra.http.original_url \"%s\" is not an http:// or https:// URL", ou);
    if (own && !strcmp(own, "ht") && (!ou || !*ou))
        return sl_errf(err, SL_EINVAL, "an ht:// bucket needs extra.http.original_url, the http:// or https:// URL "
                       "its objects are under (e.g. --props extra.http.original_url=http://host/dir/); nothing was "
                       "changed");
    const char *ad = json_string_value(extra_of(p, "aws", "addressing"));
    if (ad && *ad && strcmp(ad, "path") && strcmp(ad, "virtual"))
        return sl_errf(err, SL_EINVAL, "extra.aws.addressing \"%s\": use path (ENDPOINT/BUCKET/KEY), virtual "
                       "(BUCKET.HOST/KEY) or \"\" (virtual for AWS itself, path for other endpoints)", ad);
    json_int_t mp = json_integer_value(extra_of(p, "aws", "multipart_size"));
    if (mp != 0 && mp != -1 && mp < 5 * 1024 * 1024)
        return sl_errf(err, SL_EINVAL, "extra.aws.multipart_size %lld: use 0 (the default, 64 MiB), -1 (never) or "
                       "at least 5 MiB (5242880), S3's smallest part", (long long)mp);
    /* the remote that reads extra.*: the bucket's own provider, else its backend_bck's */
    const char *rp = own && strcmp(own, "ais") ? own : name && *name && prov ? sl_provider_norm(prov) : NULL;
    for (size_t i = 0; i < SL_ARRAY_SIZE(extra_readers); i++) {
        const json_t *v = extra_of(partial ? partial : p, extra_readers[i].sect, extra_readers[i].key);
        bool set = json_is_string(v) ? json_string_length(v) > 0 : json_is_integer(v) && json_integer_value(v);
        if (set && (!rp || strcmp(rp, extra_readers[i].reader)))
            return sl_errf(err, SL_EINVAL, "extra.%s.%s applies to buckets whose remote is %s:// (the bucket itself, "
                           "or its backend_bck); this one's is %s%s, so it would do nothing; nothing was changed",
                           extra_readers[i].sect, extra_readers[i].key, sl_provider_scheme(extra_readers[i].reader),
                           rp ? sl_provider_scheme(rp) : "none", rp ? "://" : "");
    }
    if (own && strcmp(own, "ais")) { /* s3://b: its own remote */
        if ((name && *name) || (prov && *prov))
            return sl_errf(err, SL_EINVAL, "backend_bck: a %s:// bucket is a remote bucket itself; only ais:// "
                           "buckets take a backend_bck; nothing was changed", sl_provider_scheme(own));
        return 0;
    }
    if (!name || !*name) {
        if (prov && *prov)
            return sl_errf(err, SL_EINVAL, "backend_bck: a provider (\"%s\") without a bucket name; set both, or "
                           "both to \"\" to detach", prov);
        json_t *ve = json_object_get(p, "versioning");
        const char *which = json_is_true(json_object_get(ve, "validate_warm_get")) ? "validate_warm_get"
                            : json_is_true(json_object_get(ve, "synchronize"))     ? "synchronize" : NULL;
        if (which) /* they compare with a remote: without one they would do nothing */
            return sl_errf(err, SL_EINVAL, "versioning.%s applies to buckets with a remote bucket behind them "
                           "(backend_bck); this one has none (set backend_bck too, or %s=false); nothing was "
                           "changed", which, which);
        return 0;
    }
    const char *pn = prov && *prov ? sl_provider_norm(prov) : NULL;
    const char *ns = json_string_value(json_object_get(json_object_get(bb, "namespace"), "uuid"));
    if (pn && !strcmp(pn, "ais") && (!ns || !*ns))
        return sl_errf(err, SL_EINVAL, "backend_bck: an ais:// bucket behind this one is a bucket of a remote "
                       "cluster: write it ais://@ALIAS/NAME (shale cluster remote-attach ALIAS=URL first)");
    if (!pn)
        return sl_errf(err, SL_EINVAL, "backend_bck: provider \"%s\" is not a remote provider (aws/s3, ht, or ais "
                       "with a remote cluster's alias)", prov ? prov : "");
    json_object_set_new(bb, "provider", json_string(pn));
    return sl_bck_name_valid(name, err) < 0 ? -1 : 0;
}

/* mirror.* as merged (spec ha-durability.md §2): copies 0 means the
 * default (2), 2-32 when enabled, 1 only when disabled; burst_buffer 0 the
 * default (512), else 1-10000. Defaults are written in, so what reads back
 * is what runs. */
static int check_mirror(json_t *p, struct sl_err *err)
{
    json_t *mi = json_object_get(p, "mirror");
    if (!json_is_object(mi))
        return 0;
    bool on = json_is_true(json_object_get(mi, "enabled"));
    json_int_t n = json_integer_value(json_object_get(mi, "copies"));
    json_int_t bb = json_integer_value(json_object_get(mi, "burst_buffer"));
    if (n == 0)
        json_object_set_new(mi, "copies", json_integer(n = SL_MIRROR_COPIES_DFLT));
    if (n < 0 || n > SL_MIRROR_COPIES_MAX)
        return sl_errf(err, SL_EINVAL, "bucket property mirror.copies %lld is out of range: valid 2-%d (replicas of "
                       "each object, the main one included; 0 means %d), or 1 with mirror.enabled=false; nothing was "
                       "changed", (long long)n, SL_MIRROR_COPIES_MAX, SL_MIRROR_COPIES_DFLT);
    if (on && n == 1)
        return sl_errf(err, SL_EINVAL, "bucket property mirror.copies 1 with mirror.enabled=true: a mirror needs 2-%d "
                       "replicas (to turn mirroring off set mirror.enabled=false, or make-n-copies 1); nothing was "
                       "changed", SL_MIRROR_COPIES_MAX);
    if (bb == 0)
        json_object_set_new(mi, "burst_buffer", json_integer(bb = SL_MIRROR_BURST_DFLT));
    if (bb < 1 || bb > SL_MIRROR_BURST_MAX)
        return sl_errf(err, SL_EINVAL, "bucket property mirror.burst_buffer %lld is out of range: valid 1-%d (objects "
                       "a target queues for put-copies; 0 means %d); nothing was changed", (long long)bb,
                       SL_MIRROR_BURST_MAX, SL_MIRROR_BURST_DFLT);
    return 0;
}

/* ec.* as merged (spec ha-durability.md §3), against the bucket's props
 * before the change (old; NULL at create): slices 1-32, objsize_limit -1
 * (always replicate) or more, and once EC is on its data/parity slices stay
 * and it stays on. */
static int check_ec(const json_t *old, json_t *p, struct sl_err *err)
{
    json_t *ec = json_object_get(p, "ec");
    if (!json_is_object(ec))
        return 0;
    json_int_t d = json_integer_value(json_object_get(ec, "data_slices"));
    json_int_t pa = json_integer_value(json_object_get(ec, "parity_slices"));
    json_int_t lim = json_integer_value(json_object_get(ec, "objsize_limit"));
    if (d < 1 || d > SL_EC_SLICES_MAX)
        return sl_errf(err, SL_EINVAL, "bucket property ec.data_slices %lld is out of range: valid 1-%d; nothing "
                       "was changed", (long long)d, SL_EC_SLICES_MAX);
    if (pa < 1 || pa > SL_EC_SLICES_MAX)
        return sl_errf(err, SL_EINVAL, "bucket property ec.parity_slices %lld is out of range: valid 1-%d; nothing "
                       "was changed", (long long)pa, SL_EC_SLICES_MAX);
    if (lim < -1)
        return sl_errf(err, SL_EINVAL, "bucket property ec.objsize_limit %lld is out of range: valid -1 (always "
                       "replicate), 0 (slice every object) or a size in bytes; nothing was changed", (long long)lim);
    json_t *oec = json_object_get(old, "ec");
    if (!json_is_true(json_object_get(oec, "enabled")))
        return 0;
    json_int_t od = json_integer_value(json_object_get(oec, "data_slices"));
    json_int_t op = json_integer_value(json_object_get(oec, "parity_slices"));
    if (!json_is_true(json_object_get(ec, "enabled")))
        return sl_errf(err, SL_EINVAL, "erasure coding cannot be disabled once enabled (the bucket's objects are "
                       "stored as D = %lld data and P = %lld parity slices); nothing was changed", (long long)od,
                       (long long)op);
    if (d != od || pa != op)
        return sl_errf(err, SL_EINVAL, "ec.data_slices and ec.parity_slices cannot be changed once erasure coding is "
                       "enabled (the bucket has D = %lld, P = %lld; asked for D = %lld, P = %lld); nothing was changed",
                       (long long)od, (long long)op, (long long)d, (long long)pa);
    return 0;
}

static void decode_bck(struct sl_bck *b)
{
    json_t *ck = json_object_get(json_object_get(b->props, "checksum"), "type");
    int t = sl_cksum_parse(json_string_value(ck));
    b->cksum_type = t < 0 ? SL_CK_XXHASH2 : t;
    b->versioning = json_is_true(json_object_get(json_object_get(b->props, "versioning"), "enabled"));
    const char *sv = json_string_value(json_object_get(b->props, "s3_versioning"));
    b->s3ver = sv && !strcmp(sv, "Enabled") ? SL_S3VER_ON : sv && !strcmp(sv, "Suspended") ? SL_S3VER_SUSPENDED
                                                                                        : SL_S3VER_OFF;
    b->rflags = 0;
    if (json_is_true(json_object_get(json_object_get(b->props, "checksum"), "validate_warm_get")))
        b->rflags |= SL_BCK_VALIDATE_GET;
    if (json_is_true(json_object_get(json_object_get(b->props, "versioning"), "validate_warm_get")))
        b->rflags |= SL_BCK_LATEST_GET;
}

/* ---- the string props S3's sub-resources keep (server/api/s3*.c set them) ----
 * Each is "" (none) or a value its own checker accepts; a bucket made
 * before buckets had one gets "" when it is first set. The checkers see the
 * new value, the old one and the whole change (props set together). */

struct sprop_ctx {
    json_t *base, *partial;     /* the bucket's props, and the change */
    const char *was;            /* the value before: NULL when the bucket had none */
};

static int sprop_bad(struct sl_err *err, const char *fmt, ...) SL_PRINTF(2, 3);
static int sprop_bad(struct sl_err *err, const char *fmt, ...)
{
    char m[sizeof(err->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof(m), fmt, ap);
    va_end(ap);
    return sl_errf(err, SL_EINVAL, "bucket property %s; nothing was changed", m);
}

/* the JSON text t (at most max bytes) parses as what ok() accepts */
static bool json_text_is(const char *t, size_t max, bool (*ok)(json_t *))
{
    json_t *j = strlen(t) <= max ? json_loads(t, 0, NULL) : NULL;
    bool r = j && ok(j);
    json_decref(j);
    return r;
}

static bool has_rules(json_t *j) { return json_is_array(json_object_get(j, "rules")); }
static bool is_array(json_t *j) { return json_is_array(j); }
static bool is_object(json_t *j) { return json_is_object(j); }

static bool lock_ok(json_t *j)
{
    const char *lm = json_string_value(json_object_get(j, "mode"));
    return json_is_true(json_object_get(j, "enabled")) && lm &&
           (!*lm || !strcmp(lm, "GOVERNANCE") || !strcmp(lm, "COMPLIANCE")) &&
           json_integer_value(json_object_get(j, "days")) >= 0 && json_integer_value(json_object_get(j, "years")) >= 0;
}

static int check_s3_versioning(const char *t, const struct sprop_ctx *x, struct sl_err *err)
{
    if (strcmp(t, "") && strcmp(t, "Enabled") && strcmp(t, "Suspended"))
        return sprop_bad(err, "\"s3_versioning\" must be \"Enabled\" or \"Suspended\" (\"%.40s\" is neither)", t);
    if (!*t && x->was && *x->was)
        return sprop_bad(err, "\"s3_versioning\" cannot go back to \"\" once set (the bucket may hold versions): "
                         "set \"Suspended\" to stop making new ones");
    const char *lk = json_string_value(json_object_get(x->base, "s3_lock"));
    if (strcmp(t, "Enabled") && lk && *lk)
        return sprop_bad(err, "\"s3_versioning\" stays \"Enabled\" while the bucket has an S3 object lock "
                         "(\"s3_lock\")");
    return 0;
}

static int check_s3_lock(const char *t, const struct sprop_ctx *x, struct sl_err *err)
{
    if (*t && !json_text_is(t, 1024, lock_ok))
        return sprop_bad(err, "\"s3_lock\" must be \"\" or JSON {\"enabled\":true,\"mode\":\"\"|\"GOVERNANCE\"|"
                         "\"COMPLIANCE\",\"days\":N,\"years\":N} (S3's PutObjectLockConfiguration sets it)");
    const char *sv = json_string_value(json_object_get(x->partial, "s3_versioning"));
    if (!sv)
        sv = json_string_value(json_object_get(x->base, "s3_versioning"));
    if (*t && (!sv || strcmp(sv, "Enabled")))
        return sprop_bad(err, "\"s3_lock\" needs \"s3_versioning\": \"Enabled\" (set both)");
    if (!*t && x->was && *x->was)
        return sprop_bad(err, "\"s3_lock\" cannot be removed once set (S3 object lock is for good)");
    return 0;
}

static int check_tags(const char *t, const struct sprop_ctx *x, struct sl_err *err)
{
    size_t tl = strlen(t);
    bool ctl = false;
    for (size_t i = 0; i < tl; i++)
        ctl |= (unsigned char)t[i] < 0x20 || t[i] == 0x7f;
    if (tl > 64 * 1024 || ctl)
        return sprop_bad(err, "\"tags\" must be at most 64 KiB of \"k=v&k2=v2\" without control characters (S3's "
                         "PutBucketTagging sets it)");
    return 0;
}

static int check_lifecycle(const char *t, const struct sprop_ctx *x, struct sl_err *err)
{
    if (*t && !json_text_is(t, 4 * 1024 * 1024, has_rules))
        return sprop_bad(err, "\"lifecycle\" must be \"\" or at most 4 MiB of JSON {\"rules\": [...]} (S3's "
                         "PutBucketLifecycleConfiguration sets it)");
    return 0;
}

static int check_cors(const char *t, const struct sprop_ctx *x, struct sl_err *err)
{
    if (*t && !json_text_is(t, 64 * 1024, is_array))
        return sprop_bad(err, "\"cors\" must be \"\" or at most 64 KiB of a JSON array of rules (S3's PutBucketCors "
                         "sets it)");
    return 0;
}

/* S3's access props: what s3policy.c can read (it checks a policy's
 * language when S3 sets it; the native API may set only what compiles
 * there, else S3 requests on the bucket are refused until it is fixed) */
static int check_s3_acl(const char *t, const struct sprop_ctx *x, struct sl_err *err)
{
    static const char *const acls[] = { "", "private", "public-read", "public-read-write", "authenticated-read",
                                        "bucket-owner-read", "bucket-owner-full-control", NULL };
    for (int i = 0; acls[i]; i++)
        if (!strcmp(t, acls[i]))
            return 0;
    return sprop_bad(err, "\"s3_acl\" must be a canned ACL (\"\", private, public-read, public-read-write, "
                     "authenticated-read, bucket-owner-read, bucket-owner-full-control)");
}

static int check_s3_pab(const char *t, const struct sprop_ctx *x, struct sl_err *err)
{
    if (!*t || (strlen(t) == 4 && strspn(t, "01") == 4))
        return 0;
    return sprop_bad(err, "\"s3_pab\" must be \"\" or four 0/1 (BlockPublicAcls, IgnorePublicAcls, "
                     "BlockPublicPolicy, RestrictPublicBuckets)");
}

static int check_s3_policy(const char *t, const struct sprop_ctx *x, struct sl_err *err)
{
    if (*t && !json_text_is(t, 20 * 1024, is_object))
        return sprop_bad(err, "\"s3_policy\" must be a JSON policy object of at most 20 KiB (S3's PutBucketPolicy "
                         "checks its language)");
    return 0;
}

static int check_sse(const char *t, const struct sprop_ctx *x, struct sl_err *err)
{
    if (*t && strcmp(t, "AES256"))
        return sprop_bad(err, "\"sse\" is \"AES256\" (S3's default encryption, SSE-S3) or \"\" (none)");
    return 0;
}

static const struct {
    const char *name;
    int (*check)(const char *v, const struct sprop_ctx *x, struct sl_err *err);
} sprops[] = {
    { "tags", check_tags },           { "lifecycle", check_lifecycle },   { "cors", check_cors },
    { "s3_acl", check_s3_acl },       { "s3_policy", check_s3_policy },   { "s3_pab", check_s3_pab },
    { "sse", check_sse },             { "s3_versioning", check_s3_versioning }, { "s3_lock", check_s3_lock },
};

/* k is one of them: v checked (a string, and what its checker accepts), and
 * base given "" for it when the bucket predates it. 1: k is not one of them. */
static int sprop_set(json_t *base, json_t *partial, const char *k, json_t *v, struct sl_err *err)
{
    for (size_t i = 0; i < sizeof(sprops) / sizeof(sprops[0]); i++) {
        if (strcmp(k, sprops[i].name))
            continue;
        if (!json_is_string(v))
            return sprop_bad(err, "\"%s\" is a string (\"\": none)", k);
        struct sprop_ctx x = { base, partial, json_string_value(json_object_get(base, k)) };
        if (sprops[i].check(json_string_value(v), &x, err) < 0)
            return -1;
        if (!json_object_get(base, k)) /* a bucket made before buckets had it */
            json_object_set_new(base, k, json_string(""));
        return 0;
    }
    return 1;
}

/* Validate partial against the shape of base (same keys, same JSON types),
 * then merge it in. Read-only keys refuse changes. */
static int merge_props(json_t *base, json_t *partial, const char *path, struct sl_err *err)
{
    const char *k;
    json_t *v;
    if (!json_is_object(partial))
        return sl_errf(err, SL_EINVAL, "bucket properties%s%s must be a JSON object", path[0] ? " " : "", path);
    json_object_foreach(partial, k, v) {
        char full[256];
        snprintf(full, sizeof(full), "%s%s%s", path, path[0] ? "." : "", k);
        if (!path[0] && (!strcmp(k, "bid") || !strcmp(k, "created") || !strcmp(k, "provider"))) {
            json_t *old = json_object_get(base, k);
            if (old && json_equal(old, v))
                continue;
            return sl_errf(err, SL_EINVAL, "bucket property \"%s\" is read-only", full);
        }
        if (!path[0] && sprop_set(base, partial, k, v, err) < 0)
            return -1;
        json_t *cur = json_object_get(base, k);
        if (!cur) {
            /* name the valid ones at this level */
            char valid[600] = "";
            size_t n = 0;
            const char *vk;
            json_t *vv;
            json_object_foreach(base, vk, vv) {
                if (n + strlen(vk) + 3 >= sizeof(valid))
                    break;
                n += (size_t)snprintf(valid + n, sizeof(valid) - n, "%s%s%s%s", n ? ", " : "", path, path[0] ? "." : "",
                                      vk);
            }
            return sl_errf(err, SL_EINVAL, "unknown bucket property \"%s\" (valid%s%s: %s)", full,
                           path[0] ? " under " : "", path, valid);
        }
        if (json_is_object(cur)) {
            if (merge_props(cur, v, full, err) < 0)
                return -1;
            continue;
        }
        bool ok = json_typeof(cur) == json_typeof(v) || (json_is_boolean(cur) && json_is_boolean(v)) ||
                  (json_is_integer(cur) && json_is_integer(v));
        json_t *conv = NULL;
        if (!ok && json_is_string(cur) && json_is_integer(v) &&
            (!strcmp(full, "access") || !strcmp(full, "features"))) {
            /* uint64s travel as strings; accept numbers too */
            char tmp[32];
            snprintf(tmp, sizeof(tmp), "%lld", (long long)json_integer_value(v));
            conv = json_string(tmp);
            v = conv;
            ok = true;
        }
        if (!ok && json_is_integer(cur) && json_is_string(v)) {
            /* "k=5242880" from a CLI's key=value list: a number written as a string */
            const char *sv = json_string_value(v);
            char *end;
            errno = 0;
            long long x = strtoll(sv, &end, 10);
            if (*sv && !*end && !errno) { /* (replaced in partial: it owns the number) */
                json_object_set_new(partial, k, json_integer(x));
                v = json_object_get(partial, k);
                ok = true;
            }
        }
        if (!ok)
            return sl_errf(err, SL_EINVAL, "bucket property \"%s\" has the wrong type (expected %s)", full,
                           json_is_string(cur) ? "string" : json_is_boolean(cur) ? "boolean" :
                           json_is_integer(cur) ? "integer" : "other");
        if (!strcmp(full, "checksum.type") && sl_cksum_parse(json_string_value(v)) < 0)
            return sl_errf(err, SL_EINVAL, "invalid checksum type \"%s\" (valid: %s)", json_string_value(v),
                           sl_cksum_names());
        if (!strcmp(full, "lru.dont_evict_time")) {
            int64_t ns;
            if (sl_parse_duration(json_string_value(v), &ns) < 0 || ns < 0)
                return sl_errf(err, SL_EINVAL, "invalid lru.dont_evict_time \"%s\" (a duration: 90s, 2h, 2h30m)",
                               json_string_value(v));
        }
        if ((!strcmp(full, "ec.compression") || !strcmp(full, "ec.bundle_multiplier") ||
             !strcmp(full, "ec.disk_only")) && !json_equal(cur, v))
            return sl_errf(err, SL_EUNSUPP, "bucket property %s cannot be changed: Shale's erasure coding sends "
                           "slices uncompressed, one stream per target, from memory (ec.enabled, ec.data_slices, "
                           "ec.parity_slices and ec.objsize_limit are what it reads); nothing changed", full);
        if (!strcmp(full, "lru.capacity_upd_time") && !json_equal(cur, v))
            return sl_errf(err, SL_EINVAL, "bucket property lru.capacity_upd_time has no effect in Shale: how often "
                           "targets check their capacity is the cluster's lru.capacity_upd_time");
        if (!strcmp(full, "write_policy.data") || !strcmp(full, "write_policy.md")) {
            const char *s = json_string_value(v);
            if (*s && strcmp(s, "immediate") && strcmp(s, "delayed") && strcmp(s, "never"))
                return sl_errf(err, SL_EINVAL, "invalid %s \"%s\" (valid: immediate, delayed, never)", full, s);
        }
        json_object_set(base, k, v);
        json_decref(conv);
    }
    return 0;
}

const struct sl_bck *sl_bmd_add(struct sl_bmd *b, const char *provider, const char *name, json_t *props_to_set,
                                struct sl_err *err)
{
    json_t *props = default_props(provider);
    if (props_to_set && !json_is_null(props_to_set) &&
        (merge_props(props, props_to_set, "", err) < 0 || check_backend_shape(props, NULL, err) < 0 ||
         check_mirror(props, err) < 0 || check_ec(NULL, props, err) < 0)) {
        json_decref(props);
        return NULL;
    }
    struct sl_bck nb;
    memset(&nb, 0, sizeof(nb));
    snprintf(nb.name, sizeof(nb.name), "%s", name);
    snprintf(nb.provider, sizeof(nb.provider), "%s", provider);
    uint64_t rnd;
    char rid[12];
    sl_rand_id(rid, 8);
    rnd = sl_xxh64(rid, 8, 0);
    nb.bid = ((rnd & 0xffffff) << 40) | ((uint64_t)(b->version + 1) & 0xffffffffffULL);
    nb.created = sl_now_ns();
    char tmp[32];
    snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)nb.bid);
    json_object_set_new(props, "bid", json_string(tmp));
    snprintf(tmp, sizeof(tmp), "%lld", (long long)nb.created);
    json_object_set_new(props, "created", json_string(tmp));
    nb.props = props;
    decode_bck(&nb);
    b->bcks = sl_xrealloc(b->bcks, (size_t)(b->n + 1) * sizeof(nb));
    b->bcks[b->n++] = nb;
    return &b->bcks[b->n - 1];
}

void sl_bmd_remove(struct sl_bmd *b, const char *provider, const char *name)
{
    for (int i = 0; i < b->n; i++) {
        if (!strcmp(b->bcks[i].name, name) && !strcmp(b->bcks[i].provider, provider)) {
            json_decref(b->bcks[i].props);
            memmove(&b->bcks[i], &b->bcks[i + 1], (size_t)(b->n - i - 1) * sizeof(b->bcks[0]));
            b->n--;
            return;
        }
    }
}

int sl_bmd_set_props(struct sl_bmd *b, const char *provider, const char *name, json_t *partial, bool reset,
                     struct sl_err *err)
{
    for (int i = 0; i < b->n; i++) {
        struct sl_bck *k = &b->bcks[i];
        if (strcmp(k->name, name) || strcmp(k->provider, provider))
            continue;
        json_t *np;
        if (reset) {
            np = default_props(provider);
            json_object_set(np, "bid", json_object_get(k->props, "bid"));
            json_object_set(np, "created", json_object_get(k->props, "created"));
        } else {
            np = json_deep_copy(k->props);
            json_t *def = default_props(provider); /* keys newer than the bucket */
            const char *dk;
            json_t *dv;
            json_object_foreach(def, dk, dv) {
                if (!json_object_get(np, dk))
                    json_object_set(np, dk, dv);
            }
            json_decref(def);
            if (merge_props(np, partial, "", err) < 0 || check_backend_shape(np, partial, err) < 0 ||
                check_mirror(np, err) < 0) {
                json_decref(np);
                return -1;
            }
        }
        if (check_ec(k->props, np, err) < 0) {
            json_decref(np);
            return -1;
        }
        json_decref(k->props);
        k->props = np;
        decode_bck(k);
        return 0;
    }
    return sl_errf(err, SL_ENOBCK, "bucket \"%s://%s\" does not exist", sl_provider_scheme(provider), name);
}

json_t *sl_bmd_json(const struct sl_bmd *b)
{
    json_t *o = json_object(), *provs = json_object();
    for (int i = 0; i < b->n; i++) {
        json_t *pm = json_object_get(provs, b->bcks[i].provider);
        if (!pm) {
            pm = json_object();
            json_object_set_new(provs, b->bcks[i].provider, pm);
        }
        json_t *ns = json_object_get(pm, "@#");
        if (!ns) {
            ns = json_object();
            json_object_set_new(pm, "@#", ns);
        }
        json_object_set(ns, b->bcks[i].name, b->bcks[i].props);
    }
    json_object_set_new(o, "providers", provs);
    json_object_set_new(o, "uuid", json_string(b->uuid));
    char v[32];
    snprintf(v, sizeof(v), "%lld", (long long)b->version);
    json_object_set_new(o, "version", json_string(v));
    json_object_set_new(o, "term", json_integer(b->term));
    return o;
}

struct sl_bmd *sl_bmd_from_json(json_t *j, struct sl_err *err)
{
    if (!json_is_object(j)) {
        sl_errf(err, SL_EINVAL, "BMD: not a JSON object");
        return NULL;
    }
    struct sl_bmd *b = sl_bmd_new();
    b->version = json_i64ish(json_object_get(j, "version"));
    b->term = json_i64ish(json_object_get(j, "term"));
    snprintf(b->uuid, sizeof(b->uuid), "%s", json_string_value(json_object_get(j, "uuid")) ?: "");
    const char *prov, *nsk, *name;
    json_t *pm, *ns, *props;
    json_object_foreach(json_object_get(j, "providers"), prov, pm) {
        json_object_foreach(pm, nsk, ns) {
            json_object_foreach(ns, name, props) {
                struct sl_bck nb;
                memset(&nb, 0, sizeof(nb));
                snprintf(nb.name, sizeof(nb.name), "%s", name);
                snprintf(nb.provider, sizeof(nb.provider), "%s", prov);
                nb.bid = strtoull(json_string_value(json_object_get(props, "bid")) ?: "0", NULL, 10);
                nb.created = strtoll(json_string_value(json_object_get(props, "created")) ?: "0", NULL, 10);
                nb.props = json_incref(props);
                decode_bck(&nb);
                b->bcks = sl_xrealloc(b->bcks, (size_t)(b->n + 1) * sizeof(nb));
                b->bcks[b->n++] = nb;
            }
        }
    }
    return b;
}

int sl_bck_parse(const char *s, unsigned flags, char *prov, size_t psz, char *name, size_t nsz, const char **rest,
                 struct sl_err *err)
{
    const char *p = s;
    snprintf(prov, psz, "ais");
    const char *sch = strstr(p, "://");
    if (sch) {
        snprintf(prov, psz, "%.*s", (int)(sch - p), p);
        p = sch + 3;
    } else if ((flags & SL_BCK_UNAME) && strchr(p, '/')) {
        const char *sl = strchr(p, '/');
        snprintf(prov, psz, "%.*s", (int)(sl - p), p);
        p = sl + 1;
        if (*p == '@') { /* namespace */
            const char *sl2 = strchr(p, '/');
            if (!sl2)
                return sl_errf(err, SL_EINVAL, "invalid bucket \"%s\" (expected ais/@#/NAME/ or ais://NAME)", s);
            if (strncmp(p, "@#/", 3))
                return sl_errf(err, SL_EUNSUPP, "bucket \"%s\": only the global namespace is supported", s);
            p = sl2 + 1;
        }
    }
    size_t l = strcspn(p, "/");
    if (l >= nsz)
        return sl_errf(err, SL_EINVAL, "invalid bucket \"%s\": the name is too long", s);
    snprintf(name, nsz, "%.*s", (int)l, p);
    const char *pn = sl_provider_norm(prov);
    if (!pn)
        return sl_errf(err, SL_EINVAL, "invalid provider in \"%s\"", s);
    snprintf(prov, psz, "%s", pn);
    *rest = p[l] ? p + l + 1 : p + l;
    return 0;
}
