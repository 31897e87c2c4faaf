/* SPDX-License-Identifier: MIT
 * b64.h: base64 (RFC 4648) on OpenSSL's block coder, for every caller
 * alike: JWTs (the URL alphabet without padding), S3's Content-MD5 and
 * x-amz-checksum-* values (padded), ETL sources on the wire, and Lua's
 * shale.base64. The caller sizes the output (the *_max functions), so a
 * caller with its own accounting (the Lua sandbox) keeps it. Any thread.
 */
#ifndef SL_B64_H
#define SL_B64_H

#include <stddef.h>
#include <sys/types.h>

enum {
    SL_B64_URL = 1,     /* '-' and '_' for '+' and '/'; encoded without padding, decoded without */
    SL_B64_NOPAD = 2,   /* decode: padding optional (standard alphabet) */
    SL_B64_SPACE = 4,   /* decode: ASCII whitespace anywhere is skipped */
};

/* Bytes sl_b64_encode writes for n bytes (no NUL) */
size_t sl_b64_encoded_len(size_t n, unsigned flags);
/* Encode p[0..n) into out (sl_b64_encoded_len bytes, plus one for the NUL
 * it adds); returns the length. */
size_t sl_b64_encode(const void *p, size_t n, unsigned flags, char *out);
/* At most how many bytes s[0..n) decodes to */
size_t sl_b64_decoded_max(size_t n);
/* Decode s[0..n) into out (sl_b64_decoded_max(n) bytes): the length, or
 * -1 with why (may be NULL) saying what is wrong: a character outside the
 * alphabet (and its offset), data after padding, a length no encoding has,
 * padding where there should be none or the wrong amount of it. */
ssize_t sl_b64_decode(const char *s, size_t n, unsigned flags, void *out, char *why, size_t why_len);

#endif
