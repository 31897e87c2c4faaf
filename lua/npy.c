/* SPDX-License-Identifier: MIT
 * npy.c: the header of NumPy's .npy format 1.0 (numpy/lib/format.py):
 * magic, version, a little-endian header length, then a Python dict
 * literal padded with spaces and ended by a newline so that the data
 * starts on a 64-byte boundary. See media.h.
 */
#include <stdio.h>
#include <string.h>

#include "media.h"

size_t sl_npy_elsize(enum sl_npy_dtype dt)
{
    return dt == SL_NPY_F32 ? 4 : dt == SL_NPY_I16 ? 2 : 1;
}

size_t sl_npy_header(char *out, enum sl_npy_dtype dt, const size_t *shape, int ndim)
{
    static const char *const descr[] = { "|u1", "<f4", "<i2" };
    char dict[160];
    int n = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': (", descr[dt]);
    for (int i = 0; i < ndim; i++)
        n += snprintf(dict + n, sizeof(dict) - (size_t)n, "%zu%s", shape[i],
                      i + 1 < ndim ? ", " : ndim == 1 ? "," : "");   /* numpy's own text: (5,) and (3, 4) */
    n += snprintf(dict + n, sizeof(dict) - (size_t)n, "), }");
    size_t total = 10 + (size_t)n + 1;
    total = (total + 63) / 64 * 64;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    size_t hl = total - 10;
    out[8] = (char)(hl & 0xff);
    out[9] = (char)(hl >> 8);
    memcpy(out + 10, dict, (size_t)n);
    memset(out + 10 + n, ' ', total - 10 - (size_t)n - 1);
    out[total - 1] = '\n';
    return total;
}
