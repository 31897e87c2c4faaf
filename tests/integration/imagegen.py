# SPDX-License-Identifier: MIT
"""Pets-like WebDataset content for the image ETL tests and bench: photo-like
JPEGs (a smooth random field with texture and edges, encoded at quality 90,
so sizes and DCT content resemble camera pictures), trimaps (class maps
1 pet / 2 background / 3 border, as Oxford-IIIT Pets has) and the
torchvision reference pipeline the ETL must agree with."""
import io
import tarfile

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

# The contract: this script must work unchanged (tests and bench/etl_image_bench.py run it)
CONTRACT = """
function transform_sample(s, ctx)
    local img = shale.image.decode(s.jpg)
    img = img:resize_short(256):center_crop(224, 224)
    s.jpg = nil
    s.npy = img:tensor{mean = {0.485, 0.456, 0.406}, std = {0.229, 0.224, 0.225}}   -- float32, 3x224x224
    return s
end
"""
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
# Oxford-IIIT Pets sizes are mostly 500 x 375 / 375 x 500, some larger
SIZES = [(500, 375), (375, 500), (500, 333), (640, 480), (400, 300), (500, 500), (333, 500), (600, 400)]


def photo(rng, w, h, quality=90):
    """A JPEG of w x h whose content is smooth areas, texture and hard edges."""
    base = rng.random((h // 16 + 2, w // 16 + 2, 3)) * 255
    im = Image.fromarray(base.astype(np.uint8)).resize((w, h), Image.BICUBIC)
    a = np.asarray(im).astype(np.float32)
    a += rng.normal(0, 12, (h, w, 1)) + rng.normal(0, 10, (h, w, 3))   # ~95 KB at Pets sizes, as the real ones
    im = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))
    d = ImageDraw.Draw(im)
    for _ in range(6):
        x0, y0 = int(rng.integers(0, w - 20)), int(rng.integers(0, h - 20))
        x1, y1 = x0 + int(rng.integers(10, w // 2)), y0 + int(rng.integers(10, h // 2))
        d.ellipse([x0, y0, x1, y1], fill=tuple(int(v) for v in rng.integers(0, 255, 3)))
    im = im.filter(ImageFilter.GaussianBlur(0.4))
    b = io.BytesIO()
    im.save(b, "JPEG", quality=quality)
    return b.getvalue()


def trimap(rng, w, h):
    """A PNG class map: 2 background, an ellipse of 1 (the pet) ringed by 3."""
    im = Image.new("L", (w, h), 2)
    d = ImageDraw.Draw(im)
    cx, cy = int(rng.integers(w // 4, 3 * w // 4)), int(rng.integers(h // 4, 3 * h // 4))
    rx, ry = int(rng.integers(w // 8, w // 3)), int(rng.integers(h // 8, h // 3))
    d.ellipse([cx - rx - 4, cy - ry - 4, cx + rx + 4, cy + ry + 4], fill=3)
    d.ellipse([cx - rx, cy - ry, cx + rx, cy + ry], fill=1)
    b = io.BytesIO()
    im.save(b, "PNG")
    return b.getvalue()


def pets_samples(n, seed=1, sizes=SIZES):
    """n samples [(key, [(ext, bytes)...])] with image.jpg, trimap.png, cls."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        w, h = sizes[i % len(sizes)]
        out.append(("pet_%05d" % i, [("image.jpg", photo(rng, w, h)), ("trimap.png", trimap(rng, w, h)),
                                     ("cls", str(i % 37).encode())]))
    return out


def tar_of(samples):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for key, fields in samples:
            for ext, data in fields:
                ti = tarfile.TarInfo("%s.%s" % (key, ext))
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def reference():
    """torchvision's pipelines for the image and the trimap (Debian's python3-torchvision, PIL)."""
    import torchvision.transforms as T
    img = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(MEAN, STD)])
    tri = T.Compose([T.Resize(256, interpolation=T.InterpolationMode.NEAREST), T.CenterCrop(224)])
    return img, tri


def ref_image(tf, data):
    return tf(Image.open(io.BytesIO(data)).convert("RGB")).numpy()


def unnormalise(x):
    return x * np.array(STD, dtype=np.float32)[:, None, None] + np.array(MEAN, dtype=np.float32)[:, None, None]
