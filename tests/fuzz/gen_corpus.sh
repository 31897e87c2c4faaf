#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerate the checked-in seed corpus (tests/fuzz/corpus/<target>/).
#   formats  small archives made by GNU tar, gzip, lz4 and Python's zipfile,
#            covering the header kinds the readers must handle
#   parsers  the server parsers' inputs, written by Python: well-formed ones
#            (signed aws-chunked bodies signed here as a client would) and
#            edge and malformed ones
# Usage: gen_corpus.sh [formats] [parsers] (default both). Run by hand when
# the seeds should change; the fuzz run never writes into the source tree.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="$here/corpus"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
groups=${*:-formats parsers}
case " $groups " in *" parsers "*) python3 "$here/gen_seeds.py" "$out" ;; esac
case " $groups " in *" formats "*) ;; *) exit 0 ;; esac
src="$tmp/src"
mkdir -p "$src/d" "$out/tar" "$out/tgz" "$out/zip" "$out/tarlz4"
printf 'hello' > "$src/a.txt"
: > "$src/empty"
printf '0123456789' > "$src/d/x.seg.jpg"
long=$(printf 'n%.0s' $(seq 120))
printf 'long' > "$src/d/$long.cls"
printf 'uni' > "$src/d/ünï.json"
ln -sf a.txt "$src/link"

# tar: one seed per header flavour, 512-byte records (-b 1) to stay small
cd "$src"
tar --format=ustar -b 1 -cf "$out/tar/ustar.tar" a.txt empty d/x.seg.jpg link
tar --format=gnu -b 1 -cf "$out/tar/gnu-longname.tar" "d/$long.cls" a.txt
tar --format=pax -b 1 -cf "$out/tar/pax.tar" "d/ünï.json" "d/$long.cls"
tar --format=pax --pax-option=comment=seed -b 1 -cf "$out/tar/pax-global.tar" a.txt
tar --format=v7 -b 1 -cf "$out/tar/v7.tar" a.txt d/x.seg.jpg
head -c 1024 /dev/zero > "$out/tar/empty-archive.tar"
# the same member with a base-256 size field
python3 - "$out/tar/ustar.tar" "$out/tar/base256.tar" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[124:136] = bytes([0x80] + [0] * 10 + [5])
b[148:156] = b' ' * 8
s = sum(b[:512])
b[148:156] = ('%06o\0 ' % s).encode()
open(sys.argv[2], 'wb').write(b)
PY

# tgz and tar.lz4 from the tar seeds
for f in ustar gnu-longname pax; do
    gzip -9 -n -c "$out/tar/$f.tar" > "$out/tgz/$f.tgz"
    lz4 -q -c "$out/tar/$f.tar" > "$out/tarlz4/$f.tar.lz4"
done
lz4 -q -BD -BX -c "$out/tar/pax.tar" > "$out/tarlz4/pax-linked-blockcrc.tar.lz4"

# zip: seekable-style, streamed with data descriptors (stored + deflated), empty
python3 - "$src" "$out/zip" <<'PY'
import io, sys, zipfile
src, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out + '/deflate.zip', 'w', zipfile.ZIP_DEFLATED) as z:
    z.write(src + '/a.txt', 'a.txt')
    z.write(src + '/d/x.seg.jpg', 'd/x.seg.jpg')
    z.writestr('d/ünï.json', 'uni')
class U(io.RawIOBase):
    def __init__(s): s.b = bytearray()
    def writable(s): return True
    def write(s, d): s.b += d; return len(d)
u = U()
with zipfile.ZipFile(u, 'w') as z:
    z.writestr(zipfile.ZipInfo('stored.txt'), b'stored' * 4)
    zi = zipfile.ZipInfo('defl.txt'); zi.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(zi, b'deflated' * 8)
open(out + '/streamed-data-descriptors.zip', 'wb').write(bytes(u.b))
with zipfile.ZipFile(out + '/empty.zip', 'w'):
    pass
PY
ls -l "$out"/*
