/* SPDX-License-Identifier: MIT
 * sec.c: the cluster secret, signing of intra-cluster calls and redirects,
 * and the replay cache (sec.h says what is signed and how).
 */
#include "sec.h"
#include "conf.h"
#include "log.h"
#include "node.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define SECRET_LEN 32
#define SIG_HEX 32 /* 16 bytes of the HMAC, hex */

static unsigned char secret[SECRET_LEN];
static bool have_secret;
static unsigned secret_gen = 1; /* bumped when the secret is (re)loaded: keyed contexts follow */
static char secret_path[1100];

bool sl_sec_on(void)
{
    return have_secret;
}

const char *sl_sec_path(void)
{
    return secret_path;
}

static int create_secret(const char *path, struct sl_err *err)
{
    unsigned char s[SECRET_LEN];
    if (getrandom(s, sizeof(s), 0) != (ssize_t)sizeof(s))
        return sl_errf(err, SL_EIO, "cannot create the cluster secret: getrandom: %s", strerror(errno));
    char hex[2 * SECRET_LEN + 2];
    sl_hex(s, SECRET_LEN, hex);
    strcat(hex, "\n");
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return sl_errf(err, SL_EIO, "cannot create the cluster secret %s: %s", path, strerror(errno));
    ssize_t w = write(fd, hex, strlen(hex));
    int fs = fsync(fd);
    close(fd);
    if (w != (ssize_t)strlen(hex) || fs < 0) {
        unlink(path);
        return sl_errf(err, SL_EIO, "cannot write the cluster secret %s: %s", path, strerror(errno));
    }
    OPENSSL_cleanse(s, sizeof(s));
    sl_logi("created the cluster secret %s (mode 0600): copy it beside the config of every node that joins this "
            "cluster", path);
    return 0;
}

int sl_sec_init(const char *path, bool may_create, struct sl_err *err)
{
    if (path && *path) {
        snprintf(secret_path, sizeof(secret_path), "%s", path);
    } else if (G.config_path[0]) {
        char tmp[1024];
        snprintf(tmp, sizeof(tmp), "%s", G.config_path);
        snprintf(secret_path, sizeof(secret_path), "%s/cluster.secret", dirname(tmp));
    } else {
        snprintf(secret_path, sizeof(secret_path), "%s/cluster.secret", sl_conf->confdir);
    }
    struct stat st;
    if (stat(secret_path, &st) < 0) {
        if (errno != ENOENT)
            return sl_errf(err, SL_EIO, "cluster secret %s: %s", secret_path, strerror(errno));
        if (!may_create)
            return sl_errf(err, SL_EINVAL,
                           "no cluster secret at %s: a node joins only with the secret its cluster's primary "
                           "created at first start (cluster.secret beside the primary's config); copy it here with "
                           "mode 0600 and start again",
                           secret_path);
        if (create_secret(secret_path, err) < 0)
            return -1;
        if (stat(secret_path, &st) < 0)
            return sl_errf(err, SL_EIO, "cluster secret %s: %s", secret_path, strerror(errno));
    }
    if (st.st_mode & 077)
        return sl_errf(err, SL_EINVAL,
                       "cluster secret %s is readable by others (mode %03o): chmod 600 %s and start again",
                       secret_path, (unsigned)(st.st_mode & 0777), secret_path);
    struct sl_buf b;
    sl_buf_init(&b);
    if (sl_read_file(secret_path, &b, 4096) < 0) {
        sl_buf_free(&b);
        return sl_errf(err, SL_EIO, "cannot read the cluster secret %s: %s", secret_path, strerror(errno));
    }
    size_t n = b.len;
    while (n && (b.p[n - 1] == '\n' || b.p[n - 1] == '\r' || b.p[n - 1] == ' '))
        n--;
    int rc = 0;
    if (n != 2 * SECRET_LEN || sl_unhex(b.p, SECRET_LEN, secret) < 0)
        rc = sl_errf(err, SL_EINVAL, "cluster secret %s is not %d hex digits: restore the primary's copy",
                     secret_path, 2 * SECRET_LEN);
    else {
        have_secret = true;
        __atomic_add_fetch(&secret_gen, 1, __ATOMIC_RELEASE);
    }
    OPENSSL_cleanse(b.p, b.len);
    sl_buf_free(&b);
    return rc;
}

/* HMAC-SHA256 under the secret, over the concatenation of n pieces. Each
 * thread keeps a context keyed once (HMAC's pads are computed then): the
 * one-shot HMAC() looked the algorithm up and keyed a new context on every
 * call, 2 us of each redirect the gateway signs and of each signed request a
 * target checks (bench/RESULTS.md §17). */
struct hmac_tls {
    EVP_MAC_CTX *c;
    unsigned gen;   /* secret_gen it was keyed with */
};

static EVP_MAC *hmac_alg;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;
static pthread_key_t hmac_key;

static void hmac_tls_free(void *p)
{
    struct hmac_tls *h = p;
    EVP_MAC_CTX_free(h->c);
    free(h);
}

static void hmac_setup(void)
{
    hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (pthread_key_create(&hmac_key, hmac_tls_free) != 0)
        hmac_alg = NULL; /* (then every call takes the one-shot path) */
}

static EVP_MAC_CTX *hmac_ctx(void)
{
    pthread_once(&hmac_once, hmac_setup);
    if (!hmac_alg)
        return NULL;
    struct hmac_tls *h = pthread_getspecific(hmac_key);
    if (!h) {
        h = sl_xcalloc(1, sizeof(*h));
        if (pthread_setspecific(hmac_key, h) != 0) {
            free(h);
            return NULL;
        }
    }
    unsigned gen = __atomic_load_n(&secret_gen, __ATOMIC_ACQUIRE);
    if (h->c && h->gen == gen)
        return EVP_MAC_init(h->c, NULL, 0, NULL) ? h->c : NULL; /* the same key again */
    EVP_MAC_CTX_free(h->c);
    h->c = EVP_MAC_CTX_new(hmac_alg);
    OSSL_PARAM prm[] = { OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0), OSSL_PARAM_construct_end() };
    if (!h->c || !EVP_MAC_init(h->c, secret, SECRET_LEN, prm)) {
        EVP_MAC_CTX_free(h->c);
        h->c = NULL;
        return NULL;
    }
    h->gen = gen;
    return h->c;
}

static void hmac_parts(const struct iovec *v, int n, unsigned char out[32])
{
    EVP_MAC_CTX *c = hmac_ctx();
    size_t ol = 0;
    bool ok = c != NULL;
    for (int i = 0; ok && i < n; i++)
        ok = !v[i].iov_len || EVP_MAC_update(c, v[i].iov_base, v[i].iov_len);
    if (ok && EVP_MAC_final(c, out, &ol, 32) && ol == 32)
        return;
    /* no per-thread context: the one-shot way, over a copy */
    struct sl_buf m;
    sl_buf_init(&m);
    for (int i = 0; i < n; i++)
        sl_buf_add(&m, v[i].iov_base, v[i].iov_len);
    unsigned int l = 32;
    HMAC(EVP_sha256(), secret, SECRET_LEN, (const unsigned char *)(m.p ? m.p : ""), m.len, out, &l);
    sl_buf_free(&m);
}

void sl_sec_hmac(const void *a, size_t al, const void *b, size_t bl, unsigned char out[32])
{
    struct iovec v[2] = { { (void *)a, al }, { (void *)b, bl } };
    hmac_parts(v, 2, out);
}

/* the request target of an absolute URL (or the string itself) */
static const char *target_of(const char *url)
{
    const char *p = strstr(url, "://");
    if (!p)
        return url;
    p = strchr(p + 3, '/');
    return p ? p : "/";
}

static void nonce(char out[17])
{
    static __thread uint64_t base, ctr;
    if (!base && getrandom(&base, sizeof(base), 0) != (ssize_t)sizeof(base))
        base = (uint64_t)sl_mono_ns() ^ (uint64_t)pthread_self();
    uint64_t v = base ^ (++ctr * 0x9E3779B97F4A7C15ULL);
    for (int i = 15; i >= 0; i--, v >>= 4) /* "%016llx" */
        out[i] = "0123456789abcdef"[v & 15];
    out[16] = 0;
}

static void sig_hex(const char *kind, const char *method, const char *target, size_t tl, const char *extra,
                    char out[SIG_HEX + 1])
{
    /* "KIND\nMETHOD\nTARGET\nEXTRA" */
    struct iovec v[] = { { (void *)kind, strlen(kind) }, { "\n", 1 }, { (void *)method, strlen(method) },
                         { "\n", 1 }, { (void *)target, tl }, { "\n", 1 },
                         { (void *)(extra ? extra : ""), extra ? strlen(extra) : 0 } };
    unsigned char h[32];
    hmac_parts(v, (int)(sizeof(v) / sizeof(v[0])), h);
    sl_hex(h, SIG_HEX / 2, out);
}

static int64_t ttl_s(void)
{
    int64_t t = sl_conf ? sl_conf->intra_ttl_ns / 1000000000 : 60;
    return t > 0 ? t : 60;
}

/* the authority (host:port) of an absolute URL: its length, 0 for a request target */
static size_t authority(const char *url, const char **a)
{
    const char *p = strstr(url, "://");
    if (!p)
        return 0;
    *a = p + 3;
    return strcspn(*a, "/?#");
}

static bool same_authority(const char *url, const char *a, size_t al)
{
    const char *u;
    size_t ul = authority(url, &u);
    return ul && ul == al && !strncmp(u, a, al);
}

/* Who a call to url is for: the id of the node of the cluster map that
 * the URL's authority is one of (public, control or data), else
 * "@authority" (a joiner's primary_url, a node not in the map yet). */
static void dest_of(const char *url, char *out, size_t n)
{
    const char *a = "";
    size_t al = authority(url, &a);
    struct sl_smap *s = sl_smap_get();
    for (int i = 0; i < s->nnodes && al; i++) {
        const struct sl_snode *nd = &s->nodes[i];
        if (same_authority(nd->url, a, al) || same_authority(nd->ctrl_url, a, al) ||
            same_authority(nd->data_url, a, al)) {
            snprintf(out, n, "%s", nd->id);
            sl_smap_put(s);
            return;
        }
    }
    sl_smap_put(s);
    snprintf(out, n, "@%.*s", (int)SL_MIN(al, n - 2), a);
}

void sl_sec_header(const char *method, const char *url, const char *body_hash, char *out, size_t cap)
{
    if (!have_secret) {
        if (cap)
            out[0] = 0;
        return;
    }
    char nc[17], extra[600], sig[SIG_HEX + 1], dest[300];
    nonce(nc);
    dest_of(url, dest, sizeof(dest));
    long long exp = (long long)(sl_now_ns() / 1000000000) + ttl_s();
    snprintf(extra, sizeof(extra), "%s\n%lld\n%s\n%s\n%s", G.id, exp, nc, body_hash ? body_hash : "", dest);
    const char *t = target_of(url);
    sig_hex("h", method, t, strlen(t), extra, sig);
    snprintf(out, cap, SL_SEC_HDR ": %s %lld %s %s %s", G.id, exp, nc, sig, dest);
}

void sl_sec_sign_url(struct sl_buf *url, const char *method)
{
    if (!have_secret)
        return;
    char nc[17], sig[SIG_HEX + 1];
    nonce(nc);
    long long exp = (long long)(sl_now_ns() / 1000000000) + ttl_s();
    sl_buf_adds(url, strchr(url->p, '?') ? "&x=" : "?x=");
    sl_buf_addu(url, (uint64_t)exp);
    sl_buf_addc(url, '.');
    sl_buf_adds(url, nc);
    const char *t = target_of(url->p);
    sig_hex("r", method, t, strlen(t), NULL, sig);
    sl_buf_adds(url, "&u=");
    sl_buf_adds(url, sig);
}

/* ---- replay cache: signatures seen and not yet expired ---- */

#define RC_SLOTS (1u << 17)
#define RC_PROBES 8

struct rc_slot {
    unsigned char sig[16];
    int64_t exp;
};

static struct rc_slot *rc;
static pthread_mutex_t rc_mu = PTHREAD_MUTEX_INITIALIZER;
static bool rc_full_logged;

/* false if sig was seen (a replay) */
static bool rc_take(const unsigned char sig[16], int64_t exp, int64_t now)
{
    uint32_t h;
    memcpy(&h, sig, sizeof(h));
    pthread_mutex_lock(&rc_mu);
    if (!rc)
        rc = sl_xcalloc(RC_SLOTS, sizeof(*rc));
    struct rc_slot *victim = NULL;
    for (int i = 0; i < RC_PROBES; i++) {
        struct rc_slot *s = &rc[(h + (uint32_t)i) & (RC_SLOTS - 1)];
        if (s->exp >= now && !memcmp(s->sig, sig, 16)) {
            pthread_mutex_unlock(&rc_mu);
            return false;
        }
        if (!victim || s->exp < victim->exp)
            victim = s;
    }
    if (victim->exp >= now && !rc_full_logged) {
        rc_full_logged = true;
        sl_logw("replay cache: more live signatures than it holds (%u); older ones can be replayed until they "
                "expire (auth.intra_cluster.ttl shortens that)", RC_SLOTS);
    }
    memcpy(victim->sig, sig, 16);
    victim->exp = exp;
    pthread_mutex_unlock(&rc_mu);
    return true;
}

static int bad(struct sl_err *err, const struct sl_req *r, const char *why)
{
    sl_sec_refused(r, why);
    return sl_errf(err, SL_EUNAUTH, "%s %s: %s", r->method_str, r->path ? r->path : r->raw_uri, why);
}

static int check_sig(const char *hex, int64_t exp, struct sl_err *err, const struct sl_req *r, const char *want)
{
    unsigned char got[16];
    if (strlen(hex) != SIG_HEX || sl_unhex(hex, 16, got) < 0)
        return bad(err, r, "malformed cluster signature");
    unsigned char exp_b[16];
    sl_unhex(want, 16, exp_b);
    if (CRYPTO_memcmp(got, exp_b, 16))
        return bad(err, r, "cluster signature does not match (a node with another cluster secret, or a forged or "
                           "altered request)");
    int64_t now = sl_now_ns() / 1000000000;
    if (exp < now)
        return bad(err, r, "cluster signature expired (a stale redirect or request: send it to a gateway again; "
                           "or the nodes' clocks differ by more than auth.intra_cluster.ttl)");
    if (!rc_take(got, exp, now))
        return bad(err, r, "cluster signature already used (a replayed request or redirect: send it to a gateway "
                           "again)");
    return 0;
}

int sl_sec_verify(struct sl_req *r, struct sl_err *err)
{
    r->trust = SL_TRUST_NONE;
    if (!have_secret)
        return 0;
    const char *h = sl_req_header(r, SL_SEC_HDR);
    if (h) {
        char id[64], nc[40], sig[80], dest[300];
        long long exp;
        int nf = sscanf(h, "%63s %lld %39s %79s %299s", id, &exp, nc, sig, dest);
        if (nf == 4)
            return bad(err, r, "cluster signature names no receiver (a node of an older version: a call is signed "
                               "for the node it goes to)");
        if (nf != 5)
            return bad(err, r, "malformed " SL_SEC_HDR " header");
        char extra[600], want[SIG_HEX + 1];
        const char *bh = sl_req_header(r, SL_SEC_BODY_HDR);
        if (bh && strlen(bh) != 64)
            return bad(err, r, "malformed " SL_SEC_BODY_HDR " header");
        snprintf(extra, sizeof(extra), "%s\n%lld\n%s\n%s\n%s", id, exp, nc, bh ? bh : "", dest);
        sig_hex("h", r->method_str, r->raw_uri, strlen(r->raw_uri), extra, want);
        if (check_sig(sig, exp, err, r, want) < 0)
            return -1;
        /* for this node: its id, or one of its own addresses (a join may name the primary by another name,
         * the Host the joiner was configured with) */
        const struct sl_snode *me = &G.self;
        size_t dl = strlen(dest) - 1;
        const char *host = sl_req_header(r, "Host");
        bool mine = !strcmp(dest, G.id) ||
                    (dest[0] == '@' && dl && (same_authority(me->url, dest + 1, dl) ||
                                              same_authority(me->ctrl_url, dest + 1, dl) ||
                                              same_authority(me->data_url, dest + 1, dl) ||
                                              (host && !strcmp(host, dest + 1) && r->path &&
                                               !strcmp(r->path, "/v1/cluster/join"))));
        if (!mine) {
            char why[400];
            snprintf(why, sizeof(why), "cluster signature is for another node (%.200s), not this one (%s): a call "
                     "captured on its way there and replayed here", dest, G.id);
            return bad(err, r, why);
        }
        if (bh) /* the engine checks the body against it (http.c) */
            snprintf(r->want_bh, sizeof(r->want_bh), "%s", bh);
        r->trust = SL_TRUST_PEER;
        return 0;
    }
    /* a signed redirect: ...[?&]x=EXP.NONCE&u=SIG at the end */
    const char *u = strstr(r->raw_uri, "&u=");
    for (const char *n; u && (n = strstr(u + 1, "&u=")); u = n)
        ;
    if (!u)
        return 0;
    if (strchr(u + 1, '&'))
        return 0; /* not the last parameter: not ours */
    const char *x = NULL;
    for (const char *p = r->raw_uri; (p = strstr(p, "x=")) && p < u; p += 2)
        if (p[-1] == '&' || p[-1] == '?')
            x = p;
    char *end = NULL;
    long long exp = x ? strtoll(x + 2, &end, 10) : 0; /* (on every redirected request: no sscanf) */
    if (!x || end == x + 2 || strchr(x, '&') != u)
        return bad(err, r, "malformed redirect signature (x=EXP.NONCE must precede u=SIG)");
    char want[SIG_HEX + 1];
    sig_hex("r", r->method_str, r->raw_uri, (size_t)(u - r->raw_uri), NULL, want);
    if (check_sig(u + 3, exp, err, r, want) < 0)
        return -1;
    r->trust = SL_TRUST_REDIRECT;
    return 0;
}

/* at most ~10 lines a second about refusals; the count is in the metrics */
void sl_sec_refused(const struct sl_req *r, const char *what)
{
    static int64_t win;
    static int n;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    int64_t now = sl_mono_ns() / 1000000000;
    bool log;
    int dropped = 0;
    pthread_mutex_lock(&mu);
    if (now != win) {
        dropped = n > 10 ? n - 10 : 0;
        win = now;
        n = 0;
    }
    log = ++n <= 10;
    pthread_mutex_unlock(&mu);
    sl_stats_add("auth_refused_count", 1);
    if (dropped)
        sl_logw("refused: %d more request(s) in the last second not logged", dropped);
    if (log)
        sl_logw("refused %s %s from %s: %s", r->method_str, r->path ? r->path : r->raw_uri, sl_req_remote(r),
                what);
}
