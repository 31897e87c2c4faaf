/* SPDX-License-Identifier: MIT
 * err.c: the one table mapping Shale error codes to HTTP status and to the
 * AIStore error type codes ("tcode") that clients may look at.
 */
#include "sl.h"

static const struct {
    int status;
    const char *tcode;
} err_table[SL_ECODE_MAX] = {
    [SL_OK] = { 200, NULL },
    [SL_EINVAL] = { 400, NULL },
    [SL_ENOBCK] = { 404, "ErrBckNotFound" },
    [SL_ENOOBJ] = { 404, "ErrObjNotFound" },
    [SL_ENOENT] = { 404, "ErrNotFound" },
    [SL_EMETHOD] = { 405, NULL },
    [SL_EBCKEXIST] = { 409, "ErrBckAlreadyExists" },
    [SL_EEXIST] = { 409, NULL },
    [SL_EBUSY] = { 409, NULL },
    [SL_ETOOBIG] = { 413, NULL },
    [SL_ERANGE] = { 416, "ErrRangeNotSatisfiable" },
    [SL_EFORBIDDEN] = { 403, NULL },
    [SL_EIO] = { 500, NULL },
    [SL_ECKSUM] = { 500, "ErrBadCksum" },
    [SL_EINTERNAL] = { 500, NULL },
    [SL_EUNSUPP] = { 501, "ErrUnsupp" },
    [SL_EUNAVAIL] = { 503, NULL },
    [SL_ETIMEOUT] = { 504, NULL },
    [SL_ENOSPC] = { 507, "ErrNoSpace" },
    [SL_EHDRTOOBIG] = { 431, NULL },
    [SL_EUNAUTH] = { 401, NULL },
    [SL_ETOOMANY] = { 429, NULL },
    [SL_EBADDATA] = { 422, NULL },
};

int sl_err_status(int code)
{
    if (code <= 0 || code >= SL_ECODE_MAX)
        return 500;
    return err_table[code].status;
}

const char *sl_err_tcode(int code)
{
    if (code <= 0 || code >= SL_ECODE_MAX)
        return NULL;
    return err_table[code].tcode;
}

int sl_code_from_status(int status)
{
    switch (status) {
    case 400: return SL_EINVAL;
    case 401: return SL_EUNAUTH;
    case 403: return SL_EFORBIDDEN;
    case 404: return SL_ENOENT;
    case 405: return SL_EMETHOD;
    case 409: return SL_EEXIST;
    case 413: return SL_ETOOBIG;
    case 416: return SL_ERANGE;
    case 422: return SL_EBADDATA;
    case 429: return SL_ETOOMANY;
    case 431: return SL_EHDRTOOBIG;
    case 501: return SL_EUNSUPP;
    case 503: return SL_EUNAVAIL;
    case 504: return SL_ETIMEOUT;
    case 507: return SL_ENOSPC;
    default: return status >= 500 ? SL_EINTERNAL : SL_EINVAL;
    }
}
