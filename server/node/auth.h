/* SPDX-License-Identifier: MIT
 * auth.h: AIStore-compatible tokens (JWT) and permissions.
 *
 * A token is a JWT signed with auth.signature.method: HS256/384/512 with
 * the secret auth.signature.key, or, when that is empty, with a key the
 * cluster derives from its cluster secret (the cluster's own AuthN issues
 * those); RS256/384/512 with the RSA public key auth.signature.key (an
 * external issuer's). Claims as AIStore's AuthN writes them: sub, exp
 * (both required), admin (bool), clusters [{"id", "perm"}], buckets
 * [{"bck": {"name", "provider", "namespace": {"uuid"}}, "perm"}]; perm is
 * a decimal string of AIStore's access bits (SL_ACCESS_*).
 */
#ifndef SL_AUTH_H
#define SL_AUTH_H

#include "sl.h"
#include <jansson.h>

/* apc.Access bits */
#define SL_ACCESS_GET (1ULL << 0)
#define SL_ACCESS_HEAD_OBJ (1ULL << 1)
#define SL_ACCESS_PUT (1ULL << 2)
#define SL_ACCESS_APPEND (1ULL << 3)
#define SL_ACCESS_DEL_OBJ (1ULL << 4)
#define SL_ACCESS_MOVE_OBJ (1ULL << 5)
#define SL_ACCESS_PROMOTE (1ULL << 6)
#define SL_ACCESS_UPDATE_OBJ (1ULL << 7)
#define SL_ACCESS_HEAD_BCK (1ULL << 8)
#define SL_ACCESS_LIST_OBJ (1ULL << 9)
#define SL_ACCESS_PATCH (1ULL << 10)
#define SL_ACCESS_BCK_ACL (1ULL << 11)
#define SL_ACCESS_LIST_BCK (1ULL << 12)
#define SL_ACCESS_SHOW_CLU (1ULL << 13)
#define SL_ACCESS_CREATE_BCK (1ULL << 14)
#define SL_ACCESS_DESTROY_BCK (1ULL << 15)
#define SL_ACCESS_MOVE_BCK (1ULL << 16)
#define SL_ACCESS_ADMIN (1ULL << 17)
#define SL_ACCESS_RO (SL_ACCESS_GET | SL_ACCESS_HEAD_OBJ | SL_ACCESS_HEAD_BCK | SL_ACCESS_LIST_OBJ)
#define SL_ACCESS_RW (SL_ACCESS_RO | SL_ACCESS_PUT | SL_ACCESS_APPEND | SL_ACCESS_DEL_OBJ | SL_ACCESS_MOVE_OBJ)
#define SL_ACCESS_SU (~0ULL)

/* "GET,PUT" / "ro" / "rw" / "su" / "admin" / a decimal number -> bits;
 * -1 with err for an unknown name */
int sl_access_parse(const char *s, uint64_t *out, struct sl_err *err);

/* Verify token: signature with the configured method and key, alg exactly
 * that method, exp in the future, sub present. Returns the claims (new
 * reference) or NULL with err (SL_EUNAUTH). */
json_t *sl_auth_verify(const char *token, struct sl_err *err);

/* Do claims grant every bit of perm, on bucket provider://bck (NULL:
 * cluster-wide) of the cluster uuid? */
bool sl_auth_allows(const json_t *claims, uint64_t perm, const char *provider, const char *bck, const char *uuid);

/* Sign claims (only read) into a token with the configured HS* method and
 * key. NULL with err when the method is RS* (tokens come from the issuer
 * that holds the private key). */
char *sl_auth_sign(const json_t *claims, struct sl_err *err);

/* Password hashes: "pbkdf2-sha256$ITER$SALT$HASH" (hex). Slow on purpose:
 * call off the HTTP threads. */
char *sl_auth_hash_password(const char *pass);
bool sl_auth_check_password(const char *pass, const char *stored);

#endif
