/* SPDX-License-Identifier: MIT
 * common_util.c: the bottom layer of the shard-format plugins: error
 * formatting, io names, host allocation (see common_util.h). It calls no
 * other formats/ unit; every other formats/ unit may call it.
 */
#include <stdio.h>

#include "common_util.h"

int fmt_errf(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *fmt_ioname(const struct sl_io *io)
{
    return io != NULL && io->name != NULL && io->name[0] ? io->name : "(unnamed)";
}

void *fmt_alloc(const struct fmt_state *st, size_t n)
{
    return st->host->calloc(1, n);
}

void fmt_free(const struct fmt_state *st, void *p)
{
    if (p != NULL)
        st->host->free(p);
}
