#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Generate a small Oxford-IIIT-Pets-like dataset: images/<Breed>_<n>.jpg,
annotations/trimaps/<Breed>_<n>.png and annotations/list.txt
("<Image> <CLASS-ID> <SPECIES> <BREED ID>"), deterministic for a seed.

usage: gen_dataset.py OUT_DIR [--per-class N] [--seed S]
"""
import argparse
import os
import random
import struct
import zlib

BREEDS = [("Abyssinian", 1), ("Bengal", 1), ("Birman", 1), ("Bombay", 1), ("beagle", 2), ("boxer", 2),
          ("chihuahua", 2), ("pug", 2)]


def fake_jpeg(rnd, n):
    # SOI + APP0 JFIF header + random payload + EOI: enough for format sniffers
    body = bytes(rnd.getrandbits(8) for _ in range(n))
    return b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + body + b"\xff\xd9"


def tiny_png(rnd, w=8, h=8):
    raw = b"".join(b"\x00" + bytes(rnd.choice((1, 2, 3)) for _ in range(w)) for _ in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--per-class", type=int, default=12)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    os.makedirs(os.path.join(a.out, "images"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "annotations", "trimaps"), exist_ok=True)
    lines = []
    for cls, (breed, species) in enumerate(BREEDS, start=1):
        for i in range(1, a.per_class + 1):
            stem = "%s_%d" % (breed, i)
            with open(os.path.join(a.out, "images", stem + ".jpg"), "wb") as f:
                f.write(fake_jpeg(rnd, rnd.randint(2000, 12000)))
            with open(os.path.join(a.out, "annotations", "trimaps", stem + ".png"), "wb") as f:
                f.write(tiny_png(rnd))
            lines.append("%s %d %d %d" % (stem, cls, species, i))
    with open(os.path.join(a.out, "annotations", "list.txt"), "w") as f:
        f.write("#Image CLASS-ID SPECIES BREED ID\n")
        f.write("\n".join(lines) + "\n")
    print("generated %d samples in %s" % (len(lines), a.out))


if __name__ == "__main__":
    main()
