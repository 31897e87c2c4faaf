/* SPDX-License-Identifier: MIT
 * tlsinfo.c: what the certificate this node serves says (GnuTLS), for GET
 * /v1/daemon?what=tls_certificate: AIStore's keys (cmn/certloader Props:
 * version, "issued-by (CN)", signature-algorithm, public-key-algorithm,
 * serial-number in decimal, valid "from T to T") and the rest an operator
 * checks after a rotation (subject, issuer, not-before, not-after, SANs, the
 * key's size, the SHA-256 fingerprint, the files and when they were loaded).
 * Every value is a string, as AIStore's map[string]string.
 */
#include "http.h"
#include "jsonx.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void put_time(json_t *o, const char *k, time_t t)
{
    struct tm tm;
    char s[40];
    gmtime_r(&t, &tm);
    strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_object_set_new(o, k, json_string(s));
}

/* big-endian bytes -> decimal (as Go's big.Int String) */
static void serial_dec(const unsigned char *b, size_t n, char *out, size_t cap)
{
    unsigned char v[64];
    char d[200];
    size_t nd = 0;
    if (n > sizeof(v))
        n = sizeof(v);
    memcpy(v, b, n);
    for (;;) {
        bool zero = true;
        unsigned rem = 0;
        for (size_t i = 0; i < n; i++) {
            unsigned cur = rem * 256 + v[i];
            v[i] = (unsigned char)(cur / 10);
            rem = cur % 10;
            zero &= v[i] == 0;
        }
        if (nd < sizeof(d))
            d[nd++] = (char)('0' + rem);
        if (zero)
            break;
    }
    size_t o = 0;
    while (nd && o + 1 < cap)
        out[o++] = d[--nd];
    out[o] = 0;
}

static void put_dn(json_t *o, const char *k, int (*fn)(gnutls_x509_crt_t, gnutls_datum_t *, unsigned),
                   gnutls_x509_crt_t c)
{
    gnutls_datum_t dn = { NULL, 0 };
    if (fn(c, &dn, 0) >= 0)
        json_object_set_new(o, k, json_stringn((const char *)dn.data, dn.size));
    gnutls_free(dn.data);
}

static void put_sans(json_t *o, gnutls_x509_crt_t c)
{
    struct sl_buf b;
    sl_buf_init(&b);
    for (unsigned i = 0; i < 64; i++) {
        char v[512];
        size_t n = sizeof(v) - 1;
        int t = gnutls_x509_crt_get_subject_alt_name(c, i, v, &n, NULL);
        if (t == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (t < 0)
            continue;
        char ip[INET6_ADDRSTRLEN] = "";
        const char *kind = t == GNUTLS_SAN_DNSNAME ? "DNS" : t == GNUTLS_SAN_IPADDRESS ? "IP"
                           : t == GNUTLS_SAN_URI ? "URI" : t == GNUTLS_SAN_RFC822NAME ? "email" : NULL;
        if (!kind)
            continue;
        if (t == GNUTLS_SAN_IPADDRESS) {
            if (!inet_ntop(n == 16 ? AF_INET6 : AF_INET, v, ip, sizeof(ip)))
                continue;
        } else {
            v[n] = 0;
        }
        sl_buf_printf(&b, "%s%s:%s", b.len ? ", " : "", kind, t == GNUTLS_SAN_IPADDRESS ? ip : v);
    }
    json_object_set_new(o, "subject-alt-names", json_stringn(b.p ? b.p : "", b.len));
    sl_buf_free(&b);
}

json_t *sl_http_tls_info(void)
{
    struct sl_buf der;
    sl_buf_init(&der);
    char crt[512], key[512];
    int64_t loaded;
    if (sl_http_tls_cert(&der, crt, sizeof(crt), key, sizeof(key), &loaded) < 0) {
        sl_buf_free(&der);
        return NULL;
    }
    json_t *o = json_object();
    gnutls_x509_crt_t c;
    gnutls_datum_t d = { (unsigned char *)der.p, (unsigned)der.len };
    gnutls_x509_crt_init(&c);
    int g = gnutls_x509_crt_import(c, &d, GNUTLS_X509_FMT_DER);
    if (g < 0) {
        json_object_set_new(o, "error", json_sprintf("cannot decode the certificate served (%s)", gnutls_strerror(g)));
        goto out;
    }
    json_object_set_new(o, "version", json_sprintf("%d", gnutls_x509_crt_get_version(c)));
    put_dn(o, "subject", gnutls_x509_crt_get_dn3, c);
    put_dn(o, "issuer", gnutls_x509_crt_get_issuer_dn3, c);
    char cn[256];
    size_t n = sizeof(cn);
    if (gnutls_x509_crt_get_issuer_dn_by_oid(c, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &n) >= 0)
        json_object_set_new(o, "issued-by (CN)", json_string(cn));
    unsigned char sn[64];
    n = sizeof(sn);
    if (gnutls_x509_crt_get_serial(c, sn, &n) >= 0) {
        char dec[200], hex[140];
        serial_dec(sn, n, dec, sizeof(dec));
        json_object_set_new(o, "serial-number", json_string(dec));
        for (size_t i = 0; i < n && i < 64; i++)
            snprintf(hex + 2 * i, 3, "%02X", sn[i]);
        hex[2 * (n < 64 ? n : 64)] = 0;
        json_object_set_new(o, "serial-number-hex", json_string(hex));
    }
    time_t nb = gnutls_x509_crt_get_activation_time(c), na = gnutls_x509_crt_get_expiration_time(c);
    put_time(o, "not-before", nb);
    put_time(o, "not-after", na);
    json_object_set_new(o, "valid", json_sprintf("from %s to %s", sl_json_str(o, "not-before", "?"),
                                                 sl_json_str(o, "not-after", "?")));
    time_t now = time(NULL);
    if (now > na)
        json_object_set_new(o, "error", json_sprintf("the certificate expired on %s", sl_json_str(o, "not-after", "?")));
    else if (now < nb)
        json_object_set_new(o, "error", json_sprintf("the certificate is not valid before %s",
                                                     sl_json_str(o, "not-before", "?")));
    else if (na - now < 30 * 86400)
        json_object_set_new(o, "warning", json_sprintf("the certificate expires in %lld days",
                                                       (long long)((na - now) / 86400)));
    put_sans(o, c);
    unsigned bits = 0;
    int pk = gnutls_x509_crt_get_pk_algorithm(c, &bits);
    const char *pkn = pk >= 0 ? gnutls_pk_algorithm_get_name((gnutls_pk_algorithm_t)pk) : NULL;
    json_object_set_new(o, "public-key-algorithm", json_string(pkn ? pkn : "unknown"));
    json_object_set_new(o, "public-key-bits", json_sprintf("%u", bits));
    int sa = gnutls_x509_crt_get_signature_algorithm(c);
    const char *san = sa >= 0 ? gnutls_sign_get_name((gnutls_sign_algorithm_t)sa) : NULL;
    json_object_set_new(o, "signature-algorithm", json_string(san ? san : "unknown"));
    unsigned char fp[32];
    n = sizeof(fp);
    if (gnutls_x509_crt_get_fingerprint(c, GNUTLS_DIG_SHA256, fp, &n) >= 0) {
        char hex[32 * 3 + 1] = "";
        for (size_t i = 0; i < n; i++)
            snprintf(hex + 3 * i, 4, "%02X%s", fp[i], i + 1 < n ? ":" : "");
        json_object_set_new(o, "sha256-fingerprint", json_string(hex));
    }
out:
    json_object_set_new(o, "certificate-file", json_string(crt));
    json_object_set_new(o, "key-file", json_string(key));
    put_time(o, "loaded", (time_t)loaded);
    gnutls_x509_crt_deinit(c);
    sl_buf_free(&der);
    return o;
}
