/* SPDX-License-Identifier: MIT
 * md_int.h: what md.c (LMDB) and objmd.c (the record format) share; for
 * metadata/ only.
 */
#ifndef SL_MD_INT_H
#define SL_MD_INT_H

#include "md.h"
#include <msgpack.h>

/* one record of a key's group: [suffix, size, cksum type, cksum, version,
 * atime, mtime, fname, flags, custom {k: v}, (copies)] */
void sl_md_pack_rec(msgpack_packer *pk, const char *suffix, size_t slen, const struct sl_objmd *m);
/* m NULL: only the suffix; 0, or -1 for a record that is not one */
int sl_md_unpack_rec(const msgpack_object *r, const char **suffix, size_t *slen, struct sl_objmd *m);

#endif
