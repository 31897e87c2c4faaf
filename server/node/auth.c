/* SPDX-License-Identifier: MIT
 * auth.c: JWT verification and signing, permission checks, password
 * hashes (auth.h). The crypto is OpenSSL's; the JSON jansson's.
 */
#include "auth.h"
#include "b64.h"
#include "conf.h"
#include "jsonx.h"
#include "sec.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const struct {
    const char *name;
    uint64_t bits;
} access_names[] = {
    { "GET", SL_ACCESS_GET },
    { "HEAD-OBJECT", SL_ACCESS_HEAD_OBJ },
    { "PUT", SL_ACCESS_PUT },
    { "APPEND", SL_ACCESS_APPEND },
    { "DELETE-OBJECT", SL_ACCESS_DEL_OBJ },
    { "MOVE-OBJECT", SL_ACCESS_MOVE_OBJ },
    { "PROMOTE", SL_ACCESS_PROMOTE },
    { "UPDATE-OBJECT", SL_ACCESS_UPDATE_OBJ },
    { "HEAD-BUCKET", SL_ACCESS_HEAD_BCK },
    { "LIST-OBJECTS", SL_ACCESS_LIST_OBJ },
    { "PATCH", SL_ACCESS_PATCH },
    { "SET-BUCKET-ACL", SL_ACCESS_BCK_ACL },
    { "LIST-BUCKETS", SL_ACCESS_LIST_BCK },
    { "SHOW-CLUSTER", SL_ACCESS_SHOW_CLU },
    { "CREATE-BUCKET", SL_ACCESS_CREATE_BCK },
    { "DESTROY-BUCKET", SL_ACCESS_DESTROY_BCK },
    { "MOVE-BUCKET", SL_ACCESS_MOVE_BCK },
    { "ADMIN", SL_ACCESS_ADMIN },
    { "ro", SL_ACCESS_RO },
    { "rw", SL_ACCESS_RW },
    { "su", SL_ACCESS_SU },
};

int sl_access_parse(const char *s, uint64_t *out, struct sl_err *err)
{
    *out = 0;
    char *dup = sl_xstrdup(s), *save = NULL;
    int rc = 0;
    for (char *t = strtok_r(dup, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        if (*t >= '0' && *t <= '9') {
            char *e;
            unsigned long long v = strtoull(t, &e, 10);
            if (*e) {
                rc = sl_errf(err, SL_EINVAL, "permission \"%s\" is not a number or a name", t);
                break;
            }
            *out |= v;
            continue;
        }
        size_t i;
        for (i = 0; i < SL_ARRAY_SIZE(access_names); i++)
            if (!strcasecmp(t, access_names[i].name))
                break;
        if (i == SL_ARRAY_SIZE(access_names)) {
            rc = sl_errf(err, SL_EINVAL, "unknown permission \"%s\" (GET, HEAD-OBJECT, PUT, APPEND, DELETE-OBJECT, "
                         "MOVE-OBJECT, PROMOTE, UPDATE-OBJECT, HEAD-BUCKET, LIST-OBJECTS, PATCH, SET-BUCKET-ACL, "
                         "LIST-BUCKETS, SHOW-CLUSTER, CREATE-BUCKET, DESTROY-BUCKET, MOVE-BUCKET, ADMIN, ro, rw, su)",
                         t);
            break;
        }
        *out |= access_names[i].bits;
    }
    free(dup);
    return rc;
}

/* ---- base64url (core/b64.h) ---- */

static unsigned char *b64url_dec(const char *s, size_t n, size_t *outlen)
{
    unsigned char *o = sl_xmalloc(sl_b64_decoded_max(n) + 1);
    ssize_t l = sl_b64_decode(s, n, SL_B64_URL, o, NULL, 0);
    if (l < 0) {
        free(o);
        return NULL;
    }
    *outlen = (size_t)l;
    o[l] = 0;
    return o;
}

static void b64url_enc(struct sl_buf *b, const unsigned char *p, size_t n)
{
    char *t = sl_xmalloc(sl_b64_encoded_len(n, SL_B64_URL) + 1);
    size_t l = sl_b64_encode(p, n, SL_B64_URL, t);
    sl_buf_add(b, t, l);
    free(t);
}

/* is s[0..n) the one base64url spelling of dec? */
static bool canonical(const char *s, size_t n, const unsigned char *dec, size_t dl)
{
    struct sl_buf b;
    sl_buf_init(&b);
    b64url_enc(&b, dec, dl);
    bool ok = b.len == n && !memcmp(b.p, s, n);
    sl_buf_free(&b);
    return ok;
}

/* ---- keys ---- */

static const EVP_MD *md_of(const char *alg)
{
    const char *bits = alg + 2;
    return !strcmp(bits, "256") ? EVP_sha256() : !strcmp(bits, "384") ? EVP_sha384() : EVP_sha512();
}

/* the HMAC key: auth.signature.key, or one derived from the cluster secret */
static size_t hs_key(const char **k, unsigned char derived[32])
{
    const char *ck = sl_conf->auth_key;
    if (ck && *ck) {
        *k = ck;
        return strlen(ck);
    }
    static const char label[] = "shale AuthN token key v1";
    sl_sec_hmac(label, sizeof(label) - 1, "", 0, derived);
    *k = (const char *)derived;
    return 32;
}

static pthread_mutex_t pk_mu = PTHREAD_MUTEX_INITIALIZER;
static EVP_PKEY *pk;
static char *pk_src;

static EVP_PKEY *rsa_pub(struct sl_err *err)
{
    const char *src = sl_conf->auth_key;
    pthread_mutex_lock(&pk_mu);
    if (!pk_src || strcmp(pk_src, src)) {
        EVP_PKEY_free(pk);
        pk = NULL;
        free(pk_src);
        pk_src = sl_xstrdup(src);
        BIO *bio = BIO_new_mem_buf(src, -1);
        pk = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
        BIO_free(bio);
    }
    EVP_PKEY *k = pk;
    if (k)
        EVP_PKEY_up_ref(k);
    pthread_mutex_unlock(&pk_mu);
    if (!k)
        sl_errf(err, SL_EUNAUTH, "auth.signature.key is not an RSA public key in PEM form: tokens cannot be checked; "
                "set it to the issuer's public key");
    return k;
}

/* ---- tokens ---- */

json_t *sl_auth_verify(const char *tok, struct sl_err *err)
{
    const char *d1 = strchr(tok, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d1 || !d2 || strchr(d2 + 1, '.')) {
        sl_errf(err, SL_EUNAUTH, "invalid token: not a JWT (header.payload.signature)");
        return NULL;
    }
    size_t hl, pl, sl;
    unsigned char *h = b64url_dec(tok, (size_t)(d1 - tok), &hl);
    unsigned char *p = b64url_dec(d1 + 1, (size_t)(d2 - d1 - 1), &pl);
    unsigned char *sig = b64url_dec(d2 + 1, strlen(d2 + 1), &sl);
    /* one string per token: base64url with unused bits set, or padding,
     * would decode the same and so slip past a revocation */
    if (h && p && sig &&
        (!canonical(tok, (size_t)(d1 - tok), h, hl) || !canonical(d1 + 1, (size_t)(d2 - d1 - 1), p, pl) ||
         !canonical(d2 + 1, strlen(d2 + 1), sig, sl))) {
        free(h);
        free(p);
        free(sig);
        h = p = sig = NULL;
    }
    json_t *hdr = h ? json_loadb((char *)h, hl, 0, NULL) : NULL;
    json_t *claims = NULL;
    const char *alg = json_string_value(json_object_get(hdr, "alg"));
    const char *want = sl_conf->auth_method;
    if (!h || !p || !sig || !hdr) {
        sl_errf(err, SL_EUNAUTH, "invalid token: its parts are not base64url JSON");
        goto out;
    }
    if (!alg || strcmp(alg, want)) {
        sl_errf(err, SL_EUNAUTH, "invalid token: signed with \"%s\", but this cluster accepts %s only "
                "(auth.signature.method)", alg ? alg : "(no alg)", want);
        goto out;
    }
    size_t signed_len = (size_t)(d2 - tok);
    if (want[0] == 'H') {
        const char *k;
        unsigned char derived[32], mac[64];
        size_t kl = hs_key(&k, derived);
        unsigned int ml = 0;
        HMAC(md_of(want), k, (int)kl, (const unsigned char *)tok, signed_len, mac, &ml);
        OPENSSL_cleanse(derived, sizeof(derived));
        if (sl != ml || CRYPTO_memcmp(mac, sig, ml)) {
            sl_errf(err, SL_EUNAUTH, "invalid token: bad signature (not issued for this cluster, or altered)");
            goto out;
        }
    } else {
        EVP_PKEY *k = rsa_pub(err);
        if (!k)
            goto out;
        EVP_MD_CTX *c = EVP_MD_CTX_new();
        int ok = EVP_DigestVerifyInit(c, NULL, md_of(want), NULL, k) == 1 &&
                 EVP_DigestVerify(c, sig, sl, (const unsigned char *)tok, signed_len) == 1;
        EVP_MD_CTX_free(c);
        EVP_PKEY_free(k);
        if (!ok) {
            sl_errf(err, SL_EUNAUTH, "invalid token: bad signature (not from the issuer whose public key is "
                    "auth.signature.key, or altered)");
            goto out;
        }
    }
    claims = json_loadb((char *)p, pl, 0, NULL);
    if (!json_is_object(claims)) {
        sl_errf(err, SL_EUNAUTH, "invalid token: its claims are not a JSON object");
        goto bad;
    }
    const char *sub = json_string_value(json_object_get(claims, "sub"));
    json_t *exp = json_object_get(claims, "exp");
    if (!sub || !*sub) {
        sl_errf(err, SL_EUNAUTH, "invalid token: no \"sub\" (user) claim");
        goto bad;
    }
    if (!json_is_number(exp)) {
        sl_errf(err, SL_EUNAUTH, "invalid token: no \"exp\" claim (tokens must expire)");
        goto bad;
    }
    if (json_number_value(exp) <= (double)time(NULL)) {
        sl_errf(err, SL_EUNAUTH, "token expired: log in again (`shale auth login %s`)", sub);
        goto bad;
    }
    goto out;
bad:
    json_decref(claims);
    claims = NULL;
out:
    json_decref(hdr);
    free(h);
    free(p);
    free(sig);
    return claims;
}

static uint64_t perm_of(const json_t *acl)
{
    json_t *v = json_object_get(acl, "perm");
    if (json_is_integer(v))
        return (uint64_t)json_integer_value(v);
    const char *s = json_string_value(v);
    return s ? strtoull(s, NULL, 10) : 0;
}

/* As AIStore's gateways decide (cmd/authn/tok/token.go CheckPermissions):
 * the admin claim; else the bucket's ACLs (name, provider, namespace uuid
 * this cluster's or none), if any; else the ACLs naming this cluster; else
 * those with id "" (any cluster). Entries that match alike are ORed. */
bool sl_auth_allows(const json_t *claims, uint64_t perm, const char *provider, const char *bck, const char *uuid)
{
    if (json_is_true(json_object_get(claims, "admin")))
        return true;
    size_t i;
    json_t *a;
    uint64_t got = 0;
    bool found = false;
    if (bck) {
        json_array_foreach(json_object_get(claims, "buckets"), i, a) {
            json_t *b = json_object_get(a, "bck");
            const char *n = json_string_value(json_object_get(b, "name"));
            const char *pr = json_string_value(json_object_get(b, "provider"));
            const char *u = json_string_value(json_object_get(json_object_get(b, "namespace"), "uuid"));
            if (!n || strcmp(n, bck) || strcmp(pr && *pr ? pr : "ais", provider ? provider : "ais"))
                continue;
            if (u && *u && uuid && strcmp(u, uuid))
                continue;
            got |= perm_of(a);
            found = true;
        }
        if (found)
            return (got & perm) == perm;
    }
    for (int any = 0; any < 2 && !found; any++) {
        json_array_foreach(json_object_get(claims, "clusters"), i, a) {
            const char *id = json_string_value(json_object_get(a, "id"));
            bool blank = !id || !*id;
            if (any ? !blank : (blank || !uuid || strcmp(id, uuid)))
                continue;
            got |= perm_of(a);
            found = true;
        }
    }
    return found && (got & perm) == perm;
}

char *sl_auth_sign(const json_t *claims, struct sl_err *err)
{
    const char *m = sl_conf->auth_method;
    if (m[0] != 'H') {
        sl_errf(err, SL_EUNSUPP, "this cluster accepts %s tokens, signed with a private key it does not hold: log in "
                "at the issuer (auth.signature.key is its public key)", m);
        return NULL;
    }
    struct sl_buf b;
    sl_buf_init(&b);
    char hdr[64];
    snprintf(hdr, sizeof(hdr), "{\"alg\":\"%s\",\"typ\":\"JWT\"}", m);
    b64url_enc(&b, (const unsigned char *)hdr, strlen(hdr));
    sl_buf_add(&b, ".", 1);
    char *cj = json_dumps(claims, JSON_COMPACT);
    b64url_enc(&b, (const unsigned char *)cj, strlen(cj));
    free(cj);
    const char *k;
    unsigned char derived[32], mac[64];
    unsigned int ml = 0;
    size_t kl = hs_key(&k, derived);
    HMAC(md_of(m), k, (int)kl, (const unsigned char *)b.p, b.len, mac, &ml);
    OPENSSL_cleanse(derived, sizeof(derived));
    sl_buf_add(&b, ".", 1);
    b64url_enc(&b, mac, ml);
    sl_buf_add(&b, "", 1);
    return b.p;
}

/* ---- passwords ---- */

#define PBKDF2_ITER 100000

char *sl_auth_hash_password(const char *pass)
{
    unsigned char salt[16], dk[32];
    char sh[33], dh[65];
    RAND_bytes(salt, sizeof(salt));
    PKCS5_PBKDF2_HMAC(pass, (int)strlen(pass), salt, sizeof(salt), PBKDF2_ITER, EVP_sha256(), sizeof(dk), dk);
    sl_hex(salt, sizeof(salt), sh);
    sl_hex(dk, sizeof(dk), dh);
    return sl_xasprintf("pbkdf2-sha256$%d$%s$%s", PBKDF2_ITER, sh, dh);
}

bool sl_auth_check_password(const char *pass, const char *stored)
{
    int iter;
    char sh[64], dh[128];
    if (!stored || sscanf(stored, "pbkdf2-sha256$%d$%63[0-9a-f]$%127[0-9a-f]", &iter, sh, dh) != 3 || iter < 1 ||
        iter > 10000000)
        return false;
    unsigned char salt[16], want[32], dk[32];
    if (strlen(sh) != 2 * sizeof(salt) || strlen(dh) != 2 * sizeof(want) || sl_unhex(sh, sizeof(salt), salt) < 0 ||
        sl_unhex(dh, sizeof(want), want) < 0)
        return false;
    PKCS5_PBKDF2_HMAC(pass, (int)strlen(pass), salt, sizeof(salt), iter, EVP_sha256(), sizeof(dk), dk);
    return CRYPTO_memcmp(dk, want, sizeof(dk)) == 0;
}
