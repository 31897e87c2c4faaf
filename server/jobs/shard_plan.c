/* SPDX-License-Identifier: MIT
 * shard_plan.c: see shard_plan.h.
 */
#include "shard_plan.h"
#include "read.h"
#include "arch.h"
#include "backend.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "lso.h"
#include "node.h"
#include "peer.h"
#include "plug.h"
#include "sandbox.h"
#include "store.h"
#include "template.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MAX_PLAN_KEYS 64          /* keys listed per shard in a show_keys dry run */
#define EKM_CONTENT_MAX (1024 * 1024)
/* ------------------------------------------------------------------ */
/* a string -> index hash table                                       */
/* ------------------------------------------------------------------ */


void sl_strmap_free(struct sl_strmap *m)
{
    free(m->k);
    free(m->kl);
    free(m->v);
    memset(m, 0, sizeof(*m));
}

static size_t sm_slot(const struct sl_strmap *m, const char *k, size_t kl)
{
    size_t i = (size_t)sl_xxh64(k, kl, 0) & (m->cap - 1);
    while (m->k[i] && !(m->kl[i] == kl && !memcmp(m->k[i], k, kl)))
        i = (i + 1) & (m->cap - 1);
    return i;
}

/* value of k, or -1; the key memory is borrowed and must outlive the map */
int sl_strmap_get(const struct sl_strmap *m, const char *k, size_t kl)
{
    if (!m->cap)
        return -1;
    size_t i = sm_slot(m, k, kl);
    return m->k[i] ? m->v[i] : -1;
}

void sl_strmap_put(struct sl_strmap *m, const char *k, size_t kl, int v)
{
    if ((m->n + 1) * 2 > m->cap) {
        struct sl_strmap o = *m;
        m->cap = o.cap ? o.cap * 2 : 1024;
        m->k = sl_xcalloc(m->cap, sizeof(*m->k));
        m->kl = sl_xcalloc(m->cap, sizeof(*m->kl));
        m->v = sl_xcalloc(m->cap, sizeof(*m->v));
        m->n = 0;
        for (size_t i = 0; i < o.cap; i++)
            if (o.k[i])
                sl_strmap_put(m, o.k[i], o.kl[i], o.v[i]);
        sl_strmap_free(&o);
    }
    size_t i = sm_slot(m, k, kl);
    if (!m->k[i]) {
        m->k[i] = k;
        m->kl[i] = kl;
        m->n++;
    }
    m->v[i] = v;
}

/* ------------------------------------------------------------------ */
/* planning (coordinator)                                             */
/* ------------------------------------------------------------------ */

void sl_plan_warn(struct sl_plan *p, const char *fmt, ...)
{
    p->nwarn++;
    if (json_array_size(p->warnings) >= SL_PLAN_MAX_WARN)
        return;
    char buf[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    json_t *s = json_string(buf);
    json_array_append_new(p->warnings, s ? s : json_string("(warning not valid UTF-8)"));
}

void sl_plan_free(struct sl_plan *p)
{
    if (p->have_src)
        sl_bck_release(&p->src);
    if (p->have_dst)
        sl_bck_release(&p->dst);
    if (p->cmap)
        sl_smap_put(p->cmap);
    for (int i = 0; i < p->no; i++)
        free(p->o[i].name);
    free(p->o);
    for (int i = 0; i < p->ns; i++) {
        free(p->s[i].key);
        free(p->s[i].m);
    }
    free(p->s);
    sl_strmap_free(&p->smap);
    free(p->order);
    for (int i = 0; i < p->nsh; i++)
        free(p->sh[i].name);
    free(p->sh);
    for (int i = 0; i < p->nfam; i++) {
        free(p->fam[i].tmpl);
        free(p->fam[i].seq);
    }
    free(p->fam);
    json_decref(p->warnings);
}

/* 1. the source listing */
static int plan_list_ent(void *arg, const struct sl_lsent *e)
{
    struct sl_plan *p = arg;
    if (p->no == p->capo) {
        p->capo = p->capo ? p->capo * 2 : 4096;
        p->o = sl_xrealloc(p->o, (size_t)p->capo * sizeof(*p->o));
    }
    struct sl_plan_obj *o = &p->o[p->no++];
    memset(o, 0, sizeof(*o));
    o->name = sl_xstrndup(e->name, e->nlen);
    o->nlen = e->nlen;
    o->size = e->size;
    p->listed_bytes += o->size;
    return 0;
}

int sl_plan_list(struct sl_plan *p)
{
    struct sl_lsomsg lm;
    sl_lsomsg_names(&lm, p->m->prefix, true, 0, 10000);
    sl_format_gotime(sl_now_ns(), "2006-01-02T15:04:05Z07:00", p->listed_at, sizeof(p->listed_at));
    int rc = sl_lso_walk(sl_bck_remote(&p->src) ? sl_backend_lso_page : sl_cluster_list_page, &p->src, &lm, p->job,
                         plan_list_ent, p, &p->err); /* (a remote source: the remote's names) */
    sl_lsomsg_free(&lm);
    if (rc == 0 && sl_job_aborting(p->job))
        rc = sl_errf(&p->err, SL_EINVAL, "aborted");
    if (rc == 0 && !p->no)
        rc = sl_errf(&p->err, SL_ENOENT, "ishard: the source %s://%s%s%s has no objects",
                     sl_provider_scheme(p->src.provider), p->src.name,
                     p->m->prefix[0] ? "/" : "", p->m->prefix);
    return rc;
}

static bool ext_eq(const char *a, size_t al, const char *b, size_t bl)
{
    return al == bl && !strncasecmp(a, b, al);
}

/* 2. samples by key */
int sl_plan_samples(struct sl_plan *p)
{
    const char *cfg;
    const struct sl_plug *rule = sl_plan_key_rule(p->m->pattern, &cfg);
    struct sl_plug_key *k;
    if (!rule || sl_plug_key_new(rule, cfg, &k, &p->err) < 0)
        return -1;
    size_t cap = SL_MAX_OBJNAME + 2;
    char *kb = sl_xmalloc(cap);
    int rc = 0, nomatch = 0;
    for (int i = 0; i < p->no; i++) {
        struct sl_plan_obj *o = &p->o[i];
        size_t kl, eo, el;
        uint32_t fl;
        if (sl_plug_key_apply(k, o->name, o->nlen, kb, cap, &kl, &eo, &el, &fl, &p->err) < 0) {
            rc = -1;
            break;
        }
        o->ext_off = eo;
        o->ext_len = el;
        struct sl_wds_split sp;
        sl_plugin_wds_split(o->name, o->nlen, &sp);
        if (fl & SL_KEY_F_NOMATCH)
            nomatch++;
        if ((fl & (SL_KEY_F_NOEXT | SL_KEY_F_NOSTEM)) || !kl) {
            p->skipped_noext++;
            sl_plan_warn(p, "skipped %s: %s; WebDataset drops such files (give every file an extension)", o->name,
                      (fl & SL_KEY_F_NOSTEM) ? "its name starts with a dot" : !kl ? "its sample key is empty"
                                                                               : "it has no extension");
            continue;
        }
        if (memchr(o->name + sp.ext_off, '.', sp.ext_len)) {
            p->multidot++;
            const char *last = memrchr(o->name + sp.ext_off, '.', sp.ext_len);
            sl_plan_warn(p, "%s: the extension starts at the first dot of the name: WebDataset reads key \"%.*s\" and "
                      "extension \"%.*s\" (not \"%s\")", o->name, (int)(sp.dir_len + sp.stem_len), o->name,
                      (int)sp.ext_len, o->name + sp.ext_off, last + 1);
        }
        int si = sl_strmap_get(&p->smap, kb, kl);
        if (si < 0) {
            if (p->ns == p->caps) {
                p->caps = p->caps ? p->caps * 2 : 4096;
                p->s = sl_xrealloc(p->s, (size_t)p->caps * sizeof(*p->s));
                /* the map borrows key memory: keys are separate allocations, still valid */
            }
            struct sl_plan_sample *s = &p->s[p->ns];
            memset(s, 0, sizeof(*s));
            s->key = sl_xstrndup(kb, kl);
            s->klen = kl;
            const char *sl = memrchr(s->key, '/', kl);
            s->dirlen = sl ? (size_t)(sl - s->key) : 0;
            si = p->ns++;
            sl_strmap_put(&p->smap, s->key, kl, si);
        }
        struct sl_plan_sample *s = &p->s[si];
        if (s->nm == s->capm) {
            s->capm = s->capm ? s->capm * 2 : 4;
            s->m = sl_xrealloc(s->m, (size_t)s->capm * sizeof(int));
        }
        s->m[s->nm++] = i;
    }
    free(kb);
    sl_plug_key_free(k);
    /* a bucket of shards: ishard would pack whole shards as members */
    int shards = 0;
    const char *one = NULL;
    for (int i = 0; i < p->no; i++)
        if (sl_arch_format_by_name(p->o[i].name, p->o[i].nlen)) {
            shards++;
            one = one ? one : p->o[i].name;
        }
    if (rc == 0 && shards && shards * 2 >= p->no)
        sl_plan_warn(p, "%d of the %d source objects are shards themselves (e.g. %s): ishard packs them whole, as "
                     "members of new shards. To shuffle or re-shard existing shards, use dsort (shale dsort, "
                     "docs/dsort.md)", shards, p->no, one);
    if (rc == 0 && nomatch) {
        bool word = strspn(p->m->pattern, "abcdefghijklmnopqrstuvwxyz_") == strlen(p->m->pattern);
        sl_plan_warn(p, "the sample key pattern \"%s\" (a regular expression) matched %d of %d names; the others keep "
                  "their whole name (without extension) as their key%s", p->m->pattern, p->no - nomatch, p->no,
                  word ? ". Did you mean one of the built-in rules: base_name, full_name, collapse_all_dir?" : "");
    }
    return rc;
}

/* 3. extensions, collisions and member names */
int sl_plan_policy(struct sl_plan *p)
{
    struct sl_ishard_msg *m = p->m;
    struct sl_strmap used;             /* WebDataset keys of samples that keep their names */
    memset(&used, 0, sizeof(used));
    int rc = 0;
    for (int si = 0; si < p->ns && rc == 0; si++) {
        struct sl_plan_sample *s = &p->s[si];
        /* duplicate extensions (as WebDataset compares them: lower-cased) */
        for (int a = 0; a < s->nm && !s->drop; a++) {
            const struct sl_plan_obj *oa = &p->o[s->m[a]];
            for (int b = a + 1; b < s->nm; b++) {
                const struct sl_plan_obj *ob = &p->o[s->m[b]];
                if (!ext_eq(oa->name + oa->ext_off, oa->ext_len, ob->name + ob->ext_off, ob->ext_len))
                    continue;
                p->collisions++;
                if (m->collision == COL_ABORT && !m->dry_run) {
                    rc = sl_errf(&p->err, SL_EINVAL, "ishard: sample \"%s\" would hold two members with extension "
                                 "\"%.*s\" (%s and %s), which WebDataset cannot read back; nothing was written. "
                                 "Choose a sample key pattern that keeps them apart, or pass --ext-collision drop "
                                 "(skip such samples) or keep-first (API: ext_collision)", s->key, (int)oa->ext_len,
                                 oa->name + oa->ext_off, oa->name, ob->name);
                    break;
                }
                sl_plan_warn(p, "sample \"%s\": %s and %s share the extension \"%.*s\"%s", s->key, oa->name, ob->name,
                          (int)oa->ext_len, oa->name + oa->ext_off,
                          m->collision == COL_DROP ? "; the sample is dropped"
                          : m->collision == COL_KEEP_FIRST ? "; only the first is kept"
                                                           : "; the real run refuses this unless --ext-collision is "
                                                             "drop or keep-first");
                if (m->collision == COL_DROP) {
                    s->drop = true;
                    p->dropped++;
                    break;
                }
                if (m->collision == COL_KEEP_FIRST) {
                    memmove(&s->m[b], &s->m[b + 1], (size_t)(s->nm - b - 1) * sizeof(int));
                    s->nm--;
                    b--;
                }
            }
        }
        if (rc || s->drop)
            continue;
        /* sample_exts */
        if (m->nexts) {
            for (int e = 0; e < m->nexts && !s->drop; e++) {
                bool have = false;
                for (int a = 0; a < s->nm; a++) {
                    const struct sl_plan_obj *o = &p->o[s->m[a]];
                    if (ext_eq(o->name + o->ext_off, o->ext_len, m->exts[e], strlen(m->exts[e])))
                        have = true;
                }
                if (have)
                    continue;
                if (m->miss == MA_ABORT)
                    rc = sl_errf(&p->err, SL_EINVAL, "ishard: sample \"%s\" has no member with extension \".%s\" "
                                 "(missing_extension_action=abort; %s is one of its files)", s->key, m->exts[e],
                                 p->o[s->m[0]].name);
                else if (m->miss == MA_EXCLUDE)
                    s->drop = true;
                else if (m->miss == MA_WARN)
                    sl_plan_warn(p, "sample \"%s\" has no \".%s\" member", s->key, m->exts[e]);
                if (!s->incomplete)
                    p->incomplete++;
                s->incomplete = true;
                if (rc)
                    break;
            }
            if (s->drop) {
                p->excluded++;
                continue;
            }
            for (int a = 0; a < s->nm && rc == 0; a++) {
                const struct sl_plan_obj *o = &p->o[s->m[a]];
                bool want = false;
                for (int e = 0; e < m->nexts; e++)
                    if (ext_eq(o->name + o->ext_off, o->ext_len, m->exts[e], strlen(m->exts[e])))
                        want = true;
                if (want)
                    continue;
                if (m->miss == MA_ABORT) {
                    rc = sl_errf(&p->err, SL_EINVAL, "ishard: sample \"%s\" has an unexpected member %s (extension "
                                 "\"%.*s\" is not in sample_exts; missing_extension_action=abort)", s->key, o->name,
                                 (int)o->ext_len, o->name + o->ext_off);
                } else if (m->miss == MA_EXCLUDE) {
                    memmove(&s->m[a], &s->m[a + 1], (size_t)(s->nm - a - 1) * sizeof(int));
                    s->nm--;
                    a--;
                } else if (m->miss == MA_WARN) {
                    sl_plan_warn(p, "sample \"%s\": %s has an extension not in sample_exts", s->key, o->name);
                }
            }
            if (rc)
                break;
            if (!s->nm) {
                s->drop = true;
                p->excluded++;
                continue;
            }
        }
        /* member names: their own when they already share one WebDataset key */
        struct sl_wds_split sp0;
        const struct sl_plan_obj *o0 = &p->o[s->m[0]];
        sl_plugin_wds_split(o0->name, o0->nlen, &sp0);
        size_t wk = sp0.dir_len + sp0.stem_len;
        bool same = true;
        for (int a = 1; a < s->nm && same; a++) {
            const struct sl_plan_obj *o = &p->o[s->m[a]];
            struct sl_wds_split sp;
            sl_plugin_wds_split(o->name, o->nlen, &sp);
            same = sp.dir_len + sp.stem_len == wk && !memcmp(o->name, o0->name, wk);
        }
        if (same && sl_strmap_get(&used, o0->name, wk) < 0) {
            sl_strmap_put(&used, o0->name, wk, si);
        } else {
            s->rename = true;
            p->renamed++;
            const char *base = s->dirlen ? s->key + s->dirlen + 1 : s->key;
            if (memchr(base, '.', s->klen - (size_t)(base - s->key)))
                sl_plan_warn(p, "sample key \"%s\" has a dot in its last component: WebDataset will split the members' "
                          "names at it (use a sample_key_pattern without dots)", s->key);
        }
        uint64_t b = 0;
        for (int a = 0; a < s->nm; a++) {
            const struct sl_plan_obj *o = &p->o[s->m[a]];
            b += sl_arch_member_bytes(".tar", s->rename ? s->klen + 1 + o->ext_len : o->nlen, o->size);
        }
        s->bytes = b;
    }
    sl_strmap_free(&used);
    return rc;
}

/* fetch an object's bytes (EKM content), local or from its owner */
static int fetch_small(struct sl_plan *p, const struct sl_smap *sm, const struct sl_plan_obj *o, struct sl_buf *out)
{
    if (o->size > EKM_CONTENT_MAX)
        return sl_errf(&p->err, SL_ETOOBIG, "ishard: %s is %llu bytes, more than the %d an EKM may read", o->name,
                       (unsigned long long)o->size, EKM_CONTENT_MAX);
    const struct sl_snode *owner = NULL;
    if (G.role != SL_ROLE_STANDALONE) {
        struct sl_buf un;
        sl_buf_init(&un);
        sl_obj_uname(&un, p->src.provider, p->src.name, o->name, o->nlen);
        owner = sl_smap_hrw_target(sm, un.p, un.len);
        sl_buf_free(&un);
    }
    if (!owner || !strcmp(owner->id, G.id)) {
        int fd;
        struct sl_objmd md;
        if (sl_read_obj(&p->src, o->name, o->nlen, &fd, &md, &p->err) < 0)
            return -1;
        sl_buf_reserve(out, md.size + 1);
        ssize_t n = md.size ? pread(fd, out->p, md.size, 0) : 0;
        if (!out->p)
            sl_buf_adds(out, "");
        close(fd);
        sl_objmd_free(&md);
        if (n < 0)
            return sl_errf(&p->err, SL_EIO, "ishard: reading %s failed", o->name);
        out->len = (size_t)n;
        out->p[out->len] = 0;
        return 0;
    }
    struct sl_buf ub;
    sl_buf_init(&ub);
    sl_peer_obj_url(&ub, owner->data_url, p->src.name, p->src.provider, o->name, o->nlen);
    char *url = sl_buf_steal(&ub);
    struct sl_peer_resp r;
    int rc = sl_peer_call("GET", url, NULL, 0, NULL, 0, 0, &r);
    free(url);
    if (rc < 0 || r.status != 200) {
        sl_errf(&p->err, SL_EIO, "ishard: reading %s from t[%s]: %s", o->name, owner->id, r.err);
        sl_peer_resp_free(&r);
        return -1;
    }
    sl_buf_add(out, r.body.p ? r.body.p : "", r.body.len);
    sl_peer_resp_free(&r);
    return 0;
}

static int family_of(struct sl_plan *p, const char *tmpl)
{
    for (int i = 0; i < p->nfam; i++)
        if (!strcmp(p->fam[i].tmpl, tmpl))
            return i;
    p->fam = sl_xrealloc(p->fam, (size_t)(p->nfam + 1) * sizeof(*p->fam));
    memset(&p->fam[p->nfam], 0, sizeof(*p->fam));
    p->fam[p->nfam].tmpl = sl_xstrdup(tmpl);
    return p->nfam++;
}

static void lua_log(void *ctx, const char *line, size_t len)
{
    (void)ctx;
    sl_logi("ishard EKM: %.*s", (int)SL_MIN(len, 500), line);
}

/* 4. EKM: sample -> family (shard template) */
int sl_plan_ekm(struct sl_plan *p)
{
    struct sl_ishard_msg *m = p->m;
    if (!m->ekm && !m->ekm_lua) {
        family_of(p, m->tmpl);
        return 0;
    }
    struct sl_ekm_rule *rules = NULL;
    int nr = 0;
    if (m->ekm && sl_ekm_compile(m->ekm, &rules, &nr, &p->err) < 0)
        return -1;
    struct sl_smap *sm = sl_smap_get();
    struct sl_lua_limits lim;
    sl_lua_limits_default(&lim);
    int rc = 0;
    for (int si = 0; si < p->ns && rc == 0 && !sl_job_aborting(p->job); si++) {
        struct sl_plan_sample *s = &p->s[si];
        if (s->drop)
            continue;
        char *tmpl = NULL;
        if (rules) {
            int hit = -1;
            for (int r = 0; r < nr && rc == 0; r++)
                for (int k = 0; k < rules[r].nre; k++) {
                    if (regexec(&rules[r].re[k], s->key, 0, NULL, 0))
                        continue;
                    if (hit >= 0 && hit != r)
                        rc = sl_errf(&p->err, SL_EINVAL, "ishard: EKM: sample key \"%s\" matches rules of both \"%s\" "
                                     "and \"%s\"; each key must match one shard template", s->key, rules[hit].tmpl,
                                     rules[r].tmpl);
                    hit = r;
                    break;
                }
            if (hit >= 0)
                tmpl = sl_xstrdup(rules[hit].tmpl);
        } else {
            struct sl_lua_val smp = sl_lua_table();
            struct sl_buf *bodies = sl_xcalloc((size_t)s->nm, sizeof(struct sl_buf));
            sl_lua_table_adds(&smp, "__key__", sl_lua_str_ref(s->key, s->klen));
            uint64_t total = 0;
            for (int a = 0; a < s->nm && rc == 0; a++) {
                const struct sl_plan_obj *o = &p->o[s->m[a]];
                total += o->size;
                bool content = false;
                for (int e = 0; e < m->nec; e++)
                    if (ext_eq(o->name + o->ext_off, o->ext_len, m->ekm_content[e], strlen(m->ekm_content[e])))
                        content = true;
                struct sl_lua_val key = sl_lua_str_ref(o->name + o->ext_off, o->ext_len);
                if (content) {
                    sl_buf_init(&bodies[a]);
                    if (fetch_small(p, sm, o, &bodies[a]) < 0)
                        rc = -1;
                    else
                        sl_lua_table_add(&smp, key, sl_lua_str_ref(bodies[a].p ? bodies[a].p : "", bodies[a].len));
                } else {
                    sl_lua_table_add(&smp, key, sl_lua_str_ref(o->name, o->nlen));
                }
            }
            sl_lua_table_adds(&smp, "__size__", sl_lua_num((double)total));
            struct sl_lua_val args[2] = { sl_lua_str_ref(s->key, s->klen), smp };
            struct sl_lua_val res = sl_lua_nil();
            if (rc == 0 && sl_lua_call("ekm", m->ekm_lua, strlen(m->ekm_lua), "shard_for", args, 2, &lim, lua_log,
                                       NULL, &res, &p->err) < 0) {
                sl_err_wrap(&p->err, "ishard: Lua EKM failed on sample \"%s\"", s->key);
                p->err.code = SL_EINVAL;
                rc = -1;
            } else if (rc == 0 && res.type == SL_LUA_STR && res.s.len) {
                tmpl = sl_xstrndup(res.s.p, res.s.len);
            } else if (rc == 0 && res.type != SL_LUA_NIL) {
                char d[64];
                rc = sl_errf(&p->err, SL_EINVAL, "ishard: Lua EKM: shard_for(\"%s\") returned %s; return a shard "
                             "template such as \"cats-%%04d\", or nil to skip the sample", s->key,
                             sl_lua_val_describe(&res, d, sizeof(d)));
            }
            sl_lua_val_free(&res);
            sl_lua_val_free(&smp);
            for (int a = 0; a < s->nm; a++)
                sl_buf_free(&bodies[a]);
            free(bodies);
            if (rc == 0 && tmpl) {
                struct sl_tmpl *tp;
                struct sl_err e2 = { 0 };
                if (sl_tmpl_parse(tmpl, &tp, &e2) < 0)
                    rc = sl_errf(&p->err, SL_EINVAL, "ishard: Lua EKM: shard_for(\"%s\") returned \"%s\": %s", s->key,
                                 tmpl, e2.msg);
                else if (!sl_tmpl_is_range(tp))
                    rc = sl_errf(&p->err, SL_EINVAL, "ishard: Lua EKM: shard_for(\"%s\") returned \"%s\", which has "
                                 "no counter (use e.g. \"%s-%%04d\")", s->key, tmpl, tmpl);
                if (rc == 0)
                    sl_tmpl_free(tp);
            }
        }
        if (rc) {
            free(tmpl);
            break;
        }
        if (!tmpl) {
            p->ekm_unmatched++;
            if (m->ekm_missing == MA_ABORT)
                rc = sl_errf(&p->err, SL_EINVAL, "ishard: EKM: sample key \"%s\" matches no rule "
                             "(ekm_missing_key=abort)", s->key);
            else if (m->ekm_missing == MA_WARN)
                sl_plan_warn(p, "EKM: sample \"%s\" matches no rule; skipped", s->key);
            s->drop = true;
            continue;
        }
        s->family = family_of(p, tmpl);
        free(tmpl);
    }
    if (rc == 0 && sl_job_aborting(p->job))
        rc = sl_errf(&p->err, SL_EINVAL, "aborted");
    sl_smap_put(sm);
    sl_ekm_free(rules, nr);
    sl_lua_thread_cleanup();
    return rc;
}

/* 5. order and pack */
static int key_cmp(const void *a, const void *b, void *arg)
{
    const struct sl_plan *p = arg;
    const struct sl_plan_sample *x = &p->s[*(const int *)a], *y = &p->s[*(const int *)b];
    int c = memcmp(x->key, y->key, SL_MIN(x->klen, y->klen));
    if (!c)
        c = x->klen < y->klen ? -1 : x->klen > y->klen;
    return p->m->sort == SORT_DEC ? -c : c;
}

static void emit_shard(struct sl_plan *p, int family, int first, int count, uint64_t bytes)
{
    if (p->nsh == p->capsh) {
        p->capsh = p->capsh ? p->capsh * 2 : 256;
        p->sh = sl_xrealloc(p->sh, (size_t)p->capsh * sizeof(*p->sh));
    }
    struct sl_plan_shard *h = &p->sh[p->nsh++];
    memset(h, 0, sizeof(*h));
    h->family = family;
    h->first = first;
    h->count = count;
    h->bytes = bytes + sl_arch_end_bytes(".tar"); /* end-of-archive blocks */
}

static void order_push(struct sl_plan *p, int si)
{
    if (p->norder == p->caporder) {
        p->caporder = p->caporder ? p->caporder * 2 : 4096;
        p->order = sl_xrealloc(p->order, (size_t)p->caporder * sizeof(int));
    }
    p->order[p->norder++] = si;
}

/* Pack v[0..n) (sample indexes) into shards; returns how many trailing
 * samples were left over (not emitted) when keep_rest, else 0. */
static int pack_seq(struct sl_plan *p, int family, const int *v, int n, bool keep_rest)
{
    uint64_t acc = 0;
    int cnt = 0, start = p->norder;
    for (int i = 0; i < n; i++) {
        order_push(p, v[i]);
        acc += p->s[v[i]].bytes;
        cnt++;
        if (p->m->by_count ? (uint64_t)cnt >= p->m->shard_size : acc >= p->m->shard_size) {
            emit_shard(p, family, start, cnt, acc);
            start = p->norder;
            acc = 0;
            cnt = 0;
        }
    }
    if (cnt && !keep_rest) {
        emit_shard(p, family, start, cnt, acc);
        return 0;
    }
    p->norder -= cnt; /* the caller places the rest */
    return cnt;
}

/* directory tree for packing without EKM/sort */
struct dnode {
    const char *path;
    size_t plen;
    int *kids;
    int nkids, capk;
    int *smp;
    int nsmp, caps;
};

static int dir_node(struct sl_plan *p, struct dnode **nodes, int *nn, int *cap, struct sl_strmap *idx, const char *path,
                    size_t plen)
{
    int i = sl_strmap_get(idx, path, plen);
    if (i >= 0)
        return i;
    int parent = -1;
    if (plen) {
        const char *sl = memrchr(path, '/', plen);
        parent = dir_node(p, nodes, nn, cap, idx, path, sl ? (size_t)(sl - path) : 0);
    }
    if (*nn == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *nodes = sl_xrealloc(*nodes, (size_t)*cap * sizeof(**nodes));
    }
    struct dnode *d = &(*nodes)[*nn];
    memset(d, 0, sizeof(*d));
    d->path = path;
    d->plen = plen;
    i = (*nn)++;
    sl_strmap_put(idx, path, plen, i);
    if (parent >= 0) {
        struct dnode *pd = &(*nodes)[parent];
        if (pd->nkids == pd->capk) {
            pd->capk = pd->capk ? pd->capk * 2 : 4;
            pd->kids = sl_xrealloc(pd->kids, (size_t)pd->capk * sizeof(int));
        }
        pd->kids[pd->nkids++] = i;
    }
    return i;
}

static int dnode_cmp(const void *a, const void *b, void *arg)
{
    const struct dnode *n = arg;
    const struct dnode *x = &n[*(const int *)a], *y = &n[*(const int *)b];
    int c = memcmp(x->path, y->path, SL_MIN(x->plen, y->plen));
    return c ? c : x->plen < y->plen ? -1 : x->plen > y->plen;
}

/* Depth-first: a directory's own samples, then its subdirectories; with
 * collapse, what does not fill a shard moves up to the parent. Returns the
 * leftover samples (collapse) in *rest. */
static void pack_dir(struct sl_plan *p, struct dnode *nodes, int i, int **rest, int *nrest)
{
    struct dnode *d = &nodes[i];
    if (d->nsmp)
        qsort_r(d->smp, (size_t)d->nsmp, sizeof(int), key_cmp, p);
    if (d->nkids)
        qsort_r(d->kids, (size_t)d->nkids, sizeof(int), dnode_cmp, nodes);
    int *items = sl_xmalloc(((size_t)d->nsmp + 1) * sizeof(int));
    int ni = d->nsmp;
    if (d->nsmp)
        memcpy(items, d->smp, (size_t)d->nsmp * sizeof(int));
    int left = pack_seq(p, 0, items, ni, p->m->collapse && i != 0);
    int *carry = sl_xmalloc(((size_t)left + 1) * sizeof(int));
    int nc = left;
    memcpy(carry, items + ni - left, (size_t)left * sizeof(int));
    free(items);
    for (int k = 0; k < d->nkids; k++) {
        int *r = NULL, nr = 0;
        pack_dir(p, nodes, d->kids[k], &r, &nr);
        if (nr) {
            carry = sl_xrealloc(carry, ((size_t)nc + (size_t)nr + 1) * sizeof(int));
            memcpy(carry + nc, r, (size_t)nr * sizeof(int));
            nc += nr;
        }
        free(r);
    }
    /* leftovers of this directory and its children, collapsed */
    int l2 = nc ? pack_seq(p, 0, carry, nc, i != 0) : 0;
    if (l2) {
        *rest = sl_xmalloc((size_t)l2 * sizeof(int));
        memcpy(*rest, carry + nc - l2, (size_t)l2 * sizeof(int));
        *nrest = l2;
    }
    free(carry);
}

void sl_plan_pack(struct sl_plan *p)
{
    struct sl_ishard_msg *m = p->m;
    if (!m->ekm && !m->ekm_lua && m->sort == SORT_NONE) {
        struct dnode *nodes = NULL;
        int nn = 0, cap = 0;
        struct sl_strmap idx;
        memset(&idx, 0, sizeof(idx));
        dir_node(p, &nodes, &nn, &cap, &idx, "", 0);
        for (int si = 0; si < p->ns; si++) {
            struct sl_plan_sample *s = &p->s[si];
            if (s->drop)
                continue;
            int di = dir_node(p, &nodes, &nn, &cap, &idx, s->key, s->dirlen);
            struct dnode *d = &nodes[di];
            if (d->nsmp == d->caps) {
                d->caps = d->caps ? d->caps * 2 : 16;
                d->smp = sl_xrealloc(d->smp, (size_t)d->caps * sizeof(int));
            }
            d->smp[d->nsmp++] = si;
        }
        int *rest = NULL, nr = 0;
        pack_dir(p, nodes, 0, &rest, &nr);
        free(rest);
        for (int i = 0; i < nn; i++) {
            free(nodes[i].kids);
            free(nodes[i].smp);
        }
        free(nodes);
        sl_strmap_free(&idx);
        return;
    }
    /* one global order, as dsort's (sl_dsort_order): the samples in name
     * order, shuffled or sorted by key; then each family takes its samples
     * in that order */
    int *all = sl_xmalloc(((size_t)p->ns + 1) * sizeof(int));
    int na = 0;
    for (int si = 0; si < p->ns; si++)
        if (!p->s[si].drop)
            all[na++] = si;
    if (m->sort == SORT_SHUFFLE)
        sl_shuffle(all, (size_t)na, m->seed);
    else if (na)
        qsort_r(all, (size_t)na, sizeof(int), key_cmp, p);
    for (int k = 0; k < na; k++) {
        struct sl_plan_family *f = &p->fam[p->s[all[k]].family];
        if (f->nseq == f->capseq) {
            f->capseq = f->capseq ? f->capseq * 2 : 256;
            f->seq = sl_xrealloc(f->seq, (size_t)f->capseq * sizeof(int));
        }
        f->seq[f->nseq++] = all[k];
    }
    free(all);
    for (int fi = 0; fi < p->nfam; fi++)
        pack_seq(p, fi, p->fam[fi].seq, p->fam[fi].nseq, false);
}

/* 6. names and owners */
int sl_plan_names(struct sl_plan *p)
{
    struct sl_tmpl **t = sl_xcalloc((size_t)p->nfam + 1, sizeof(*t));
    int rc = 0;
    for (int fi = 0; fi < p->nfam && rc == 0; fi++)
        if (sl_tmpl_parse(p->fam[fi].tmpl, &t[fi], &p->err) < 0)
            rc = -1;
    struct sl_strmap seen;
    memset(&seen, 0, sizeof(seen));
    struct sl_smap *sm = sl_smap_get();
    struct sl_buf b, un;
    sl_buf_init(&b);
    sl_buf_init(&un);
    for (int i = 0; i < p->nsh && rc == 0; i++) {
        struct sl_plan_shard *h = &p->sh[i];
        struct sl_plan_family *f = &p->fam[h->family];
        if (f->next >= sl_tmpl_count(t[h->family])) {
            rc = sl_errf(&p->err, SL_EINVAL, "ishard: shard template \"%s\" yields %llu names, fewer than the shards "
                         "this dataset needs; widen its range or raise shard_size", f->tmpl,
                         (unsigned long long)sl_tmpl_count(t[h->family]));
            break;
        }
        sl_tmpl_at(t[h->family], f->next++, &b);
        const struct sl_plug *fmt = sl_arch_format_by_name(b.p, b.len);
        if (!fmt || !(sl_plug_caps(fmt) & SL_FMT_CAP_WRITE))
            sl_buf_adds(&b, p->m->ext);
        h->name = sl_xstrndup(b.p, b.len);
        if (sl_strmap_get(&seen, h->name, b.len) >= 0) {
            rc = sl_errf(&p->err, SL_EINVAL, "ishard: two shards would be named \"%s\" (EKM templates overlap); give "
                         "each family its own template", h->name);
            break;
        }
        sl_strmap_put(&seen, h->name, b.len, i);
        if (G.role != SL_ROLE_STANDALONE) {
            sl_buf_reset(&un);
            sl_obj_uname(&un, p->dst.provider, p->dst.name, h->name, b.len);
            h->owner = sl_smap_hrw_target(sm, un.p, un.len);
            if (!h->owner)
                rc = sl_errf(&p->err, SL_EUNAVAIL, "ishard: the cluster has no active targets");
            else if (h->owner->flags & SL_SNF_OFFLINE)
                rc = sl_errf(&p->err, SL_EUNAVAIL, "ishard: t[%s], owner of shard %s, is not responding",
                             h->owner->id, h->name);
        }
    }
    sl_buf_free(&b);
    sl_buf_free(&un);
    sl_strmap_free(&seen);
    for (int fi = 0; fi < p->nfam; fi++)
        sl_tmpl_free(t[fi]);
    free(t);
    p->cmap = sm; /* owners point into it: released with the plan */
    return rc;
}

json_t *sl_plan_report(struct sl_plan *p)
{
    json_t *r = json_object();
    char buf[64];
    json_object_set_new(r, "src", json_string(p->src.name));
    json_object_set_new(r, "src_prefix", json_string(p->m->prefix));
    json_object_set_new(r, "dst", json_string(p->dst.name));
    json_object_set_new(r, "listed", json_pack("{s:I,s:I,s:s}", "objects", (json_int_t)p->no, "bytes",
                                               (json_int_t)p->listed_bytes, "at", p->listed_at));
    int nsmp = 0;
    uint64_t bytes = 0, members = 0;
    for (int i = 0; i < p->nsh; i++) {
        nsmp += p->sh[i].count;
        bytes += p->sh[i].bytes;
        for (int k = p->sh[i].first; k < p->sh[i].first + p->sh[i].count; k++) {
            const struct sl_plan_sample *s = &p->s[p->order[k]];
            for (int a = 0; a < s->nm; a++)
                members += p->o[s->m[a]].size;
        }
    }
    json_object_set_new(r, "samples", json_integer(nsmp));
    json_object_set_new(r, "shards", json_integer(p->nsh));
    json_object_set_new(r, "bytes", json_integer((json_int_t)bytes));             /* the tars, as planned */
    json_object_set_new(r, "member_bytes", json_integer((json_int_t)members));    /* what they hold */
    json_object_set_new(r, "skipped", json_pack("{s:I,s:I,s:I,s:I}", "no_extension", (json_int_t)p->skipped_noext,
                                                "excluded_samples", (json_int_t)p->excluded, "ekm_unmatched",
                                                (json_int_t)p->ekm_unmatched, "collision_samples",
                                                (json_int_t)p->dropped));
    json_object_set_new(r, "incomplete_samples", json_integer((json_int_t)p->incomplete));
    json_object_set_new(r, "ext_collisions", json_integer((json_int_t)p->collisions));
    json_object_set_new(r, "multi_dot_names", json_integer((json_int_t)p->multidot));
    json_object_set_new(r, "renamed_samples", json_integer((json_int_t)p->renamed));
    json_object_set_new(r, "warnings", json_incref(p->warnings));
    json_object_set_new(r, "warnings_total", json_integer((json_int_t)p->nwarn));
    /* shard sizes: power-of-two buckets */
    json_t *h = json_array();
    uint64_t lo = 0;
    for (uint64_t le = 64 * 1024; lo < UINT64_MAX / 2; le *= 2) {
        int c = 0;
        for (int i = 0; i < p->nsh; i++)
            if (p->sh[i].bytes > lo && p->sh[i].bytes <= le)
                c++;
        if (c) {
            sl_format_size(le, buf, sizeof(buf));
            json_array_append_new(h, json_pack("{s:s,s:i}", "le", buf, "shards", c));
        }
        lo = le;
        if (le > bytes * 2 + 1)
            break;
    }
    json_object_set_new(r, "histogram", h);
    if (p->nfam > 1 || p->m->ekm || p->m->ekm_lua) {
        json_t *fo = json_object();
        for (int fi = 0; fi < p->nfam; fi++) {
            int ns = 0, nsamp = 0;
            for (int i = 0; i < p->nsh; i++)
                if (p->sh[i].family == fi) {
                    ns++;
                    nsamp += p->sh[i].count;
                }
            json_object_set_new(fo, p->fam[fi].tmpl, json_pack("{s:i,s:i}", "shards", ns, "samples", nsamp));
        }
        json_object_set_new(r, "families", fo);
    }
    json_object_set_new(r, "msg", sl_ishard_msg_json(p->m));
    if (p->m->dry_run) {
        json_t *pl = json_array();
        for (int i = 0; i < p->nsh && i < 100000; i++) {
            struct sl_plan_shard *s = &p->sh[i];
            json_t *o = json_pack("{s:s,s:i,s:I}", "name", s->name ? s->name : "", "samples", s->count, "size",
                                  (json_int_t)s->bytes);
            if (s->owner)
                json_object_set_new(o, "target", json_string(s->owner->id));
            if (p->m->dry_run == 2) {
                json_t *k = json_array();
                for (int j = 0; j < s->count && j < MAX_PLAN_KEYS; j++) {
                    const struct sl_plan_sample *sm = &p->s[p->order[s->first + j]];
                    json_t *ks = json_stringn(sm->key, sm->klen);
                    json_array_append_new(k, ks ? ks : json_string("?"));
                }
                json_object_set_new(o, "keys", k);
            }
            json_array_append_new(pl, o);
        }
        json_object_set_new(r, "plan", pl);
    }
    return r;
}

/* the member list of one shard, encoded (shard_plan.h) */
static int ext_cmp(const void *a, const void *b, void *arg)
{
    const struct sl_plan *p = arg;
    const struct sl_plan_obj *x = &p->o[*(const int *)a], *y = &p->o[*(const int *)b];
    int c = memcmp(x->name + x->ext_off, y->name + y->ext_off, SL_MIN(x->ext_len, y->ext_len));
    return c ? c : x->ext_len < y->ext_len ? -1 : x->ext_len > y->ext_len;
}

void sl_plan_shard_encode(const struct sl_plan *p, const struct sl_plan_shard *h, struct sl_buf *out)
{
    for (int j = 0; j < h->count; j++) {
        const struct sl_plan_sample *s = &p->s[p->order[h->first + j]];
        if (s->rename) /* as webdataset's writer: members in the order of their extensions */
            qsort_r(s->m, (size_t)s->nm, sizeof(int), ext_cmp, (void *)p);
        for (int k = 0; k < s->nm; k++) {
            const struct sl_plan_obj *o = &p->o[s->m[k]];
            sl_buf_addu(out, o->nlen);
            sl_buf_addc(out, ':');
            sl_buf_add(out, o->name, o->nlen);
            if (s->rename) {
                sl_buf_addu(out, s->klen + 1 + o->ext_len);
                sl_buf_addc(out, ':');
                sl_buf_add(out, s->key, s->klen);
                sl_buf_addc(out, '.');
                sl_buf_add(out, o->name + o->ext_off, o->ext_len);
            } else {
                sl_buf_addc(out, '=');
            }
            sl_buf_addu(out, o->size);
            sl_buf_addc(out, ';');
        }
    }
}

/* "LEN:BYTES" at *p: the bytes, *p past them; NULL when malformed */
static const char *member_name(const char **p, const char *end, size_t *len)
{
    char *e;
    errno = 0;
    unsigned long long n = strtoull(*p, &e, 10);
    if (e == *p || errno || *e != ':' || n == 0 || n > 2 * SL_MAX_OBJNAME || n > (unsigned long long)(end - e - 1))
        return NULL;
    *len = (size_t)n;
    *p = e + 1 + n;
    return e + 1;
}

int sl_plan_member_next(const char **p, const char *end, struct sl_plan_member *m)
{
    if (!(m->obj = member_name(p, end, &m->olen)))
        return -1;
    if (*p < end && **p == '=') {
        (*p)++;
        m->mem = m->obj;
        m->mlen = m->olen;
    } else if (!(m->mem = member_name(p, end, &m->mlen))) {
        return -1;
    }
    char *q;
    errno = 0;
    m->size = strtoull(*p, &q, 10);
    if (q == *p || errno || *q != ';')
        return -1;
    *p = q + 1;
    return 0;
}
