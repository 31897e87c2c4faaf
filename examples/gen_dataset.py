#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Generate a small Oxford-IIIT-Pets-like dataset: images/<Breed>_<n>.jpg
(real JPEGs, with python3-pil), annotations/trimaps/<Breed>_<n>.png (class
maps of the same size) and annotations/list.txt
("<Image> <CLASS-ID> <SPECIES> <BREED ID>"), deterministic for a seed.

usage: gen_dataset.py OUT_DIR [--per-class N] [--seed S]
"""
import argparse
import io
import os
import random
import struct
import zlib

BREEDS = [("Abyssinian", 1), ("Bengal", 1), ("Birman", 1), ("Bombay", 1), ("beagle", 2), ("boxer", 2),
          ("chihuahua", 2), ("pug", 2)]


def photo(rnd, w, h):
    """A real JPEG of w x h (smooth colour areas and an ellipse: decodable by
    any JPEG reader, so the image ETL has pixels to work on)."""
    from PIL import Image, ImageDraw, ImageFilter
    im = Image.new("RGB", (4, 3))
    im.putdata([tuple(rnd.randrange(256) for _ in range(3)) for _ in range(12)])
    im = im.resize((w, h), Image.BICUBIC)
    d = ImageDraw.Draw(im)
    x, y = rnd.randrange(w // 2), rnd.randrange(h // 2)
    d.ellipse([x, y, x + w // 3, y + h // 3], fill=tuple(rnd.randrange(256) for _ in range(3)))
    out = io.BytesIO()
    im.filter(ImageFilter.GaussianBlur(1)).save(out, "JPEG", quality=85)
    return out.getvalue()


def fake_jpeg(rnd, n):
    # SOI + APP0 JFIF header + random payload + EOI: enough for format sniffers
    body = bytes(rnd.getrandbits(8) for _ in range(n))
    return b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + body + b"\xff\xd9"


def tiny_png(rnd, w=8, h=8):
    """A grey PNG class map (1 pet, 2 background, 3 border) of w x h."""
    cx, cy, rx, ry = w // 2, h // 2, max(1, w // 3), max(1, h // 3)

    def px(x, y):
        d = ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2
        return 1 if d < 0.8 else 3 if d < 1.0 else 2
    raw = b"".join(b"\x00" + bytes(px(x, y) for x in range(w)) for y in range(h))

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
    try:
        import PIL  # noqa: F401  (Debian: python3-pil, which ./configure --install-deps installs)
        have_pil = True
    except ImportError:
        have_pil = False
        print("gen_dataset: python3-pil is not installed: the images are placeholders, not decodable JPEGs")
    os.makedirs(os.path.join(a.out, "images"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "annotations", "trimaps"), exist_ok=True)
    lines = []
    for cls, (breed, species) in enumerate(BREEDS, start=1):
        for i in range(1, a.per_class + 1):
            stem = "%s_%d" % (breed, i)
            w, h = rnd.choice(((320, 240), (240, 320), (300, 225), (320, 320)))
            with open(os.path.join(a.out, "images", stem + ".jpg"), "wb") as f:
                f.write(photo(rnd, w, h) if have_pil else fake_jpeg(rnd, rnd.randint(2000, 12000)))
            with open(os.path.join(a.out, "annotations", "trimaps", stem + ".png"), "wb") as f:
                f.write(tiny_png(rnd, w, h) if have_pil else tiny_png(rnd))
            lines.append("%s %d %d %d" % (stem, cls, species, i))
    with open(os.path.join(a.out, "annotations", "list.txt"), "w") as f:
        f.write("#Image CLASS-ID SPECIES BREED ID\n")
        f.write("\n".join(lines) + "\n")
    print("generated %d samples in %s" % (len(lines), a.out))


if __name__ == "__main__":
    main()
