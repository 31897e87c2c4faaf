# SPDX-License-Identifier: MIT
"""Image ETL (shale.image) on a real cluster of 1 gateway and 2 targets:
the shipped examples/etl/pets_preprocess.lua against Debian's torchvision
(PIL) on the same JPEGs (same shapes, mean absolute pixel difference
<= 0.02 after un-normalising, nearest-resized trimaps equal, and the
comparison fails on swapped channels, a transpose or a no-op), inline and
offline (etl-bck) output loaded by a PyTorch DataLoader, the issue's
contract script unchanged, seeded augmentation (the same epoch gives the
same crops on either target, another epoch other crops), odd but valid
inputs (16-bit, CMYK, alpha, grey, GIF, TIFF, WebP, EXIF orientation) and
bad ones (corrupt, truncated, empty, pixel bomb, unsupported format): each
bad sample fails naming shard, member and reason, nothing partial is
stored, and the targets keep serving; and shale.audio: WAV, FLAC and Ogg
to mono 16 kHz one-second tensors (amplitude and pitch checked), a broken
FLAC named in the job's errors."""
import io
import json
import os
import struct
import sys
import unittest

import numpy as np
import requests
from PIL import Image

from harness import main, start_cluster, stop_cluster
from test_etl import EXAMPLES, EtlApi, read_shard, wds_samples

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import imagegen  # noqa: E402

AUGMENT = """
function transform_sample(s, ctx)
    local img = shale.image.decode(s.jpg)
    img = img:random_resized_crop(48, 48):random_hflip():color_jitter{brightness = 0.3, contrast = 0.3}
    s.jpg = nil
    s.npy = img:tensor{dtype = "uint8", layout = "HWC"}
    return s
end
"""

# decode whatever the sample's "img" member is; the tensor as uint8 HWC
ANY = """
function transform_sample(s, ctx)
    local img = shale.image.decode(s.img)
    s.img = nil
    s.npy = img:tensor{dtype = "uint8", layout = "HWC"}
    return s
end
"""


def npy(b):
    return np.load(io.BytesIO(b), allow_pickle=False)


def pil_bytes(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def jpeg_with_size(w, h):
    """A valid small JPEG whose SOF0 header claims w x h (a pixel bomb)."""
    b = bytearray(pil_bytes(Image.new("RGB", (16, 16), (10, 20, 30)), "JPEG"))
    i = b.index(b"\xff\xc0")
    b[i + 5:i + 9] = struct.pack(">HH", h, w)
    return bytes(b)


def exif_jpeg(orientation):
    """A 40 x 20 JPEG, left half red, with an EXIF orientation tag."""
    im = Image.new("RGB", (40, 20), (0, 0, 255))
    im.paste((255, 0, 0), (0, 0, 20, 20))
    exif = Image.Exif()
    exif[0x0112] = orientation
    return pil_bytes(im, "JPEG", quality=95, exif=exif.tobytes())


class ImageEtlTest(unittest.TestCase, EtlApi):
    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2, prefix="shale-etlimg-")
        for b in ("pets", "odd", "bad", "aug"):
            r = cls.s.post(cls.url + "/v1/buckets/" + b, json={"action": "create-bck"}, timeout=30)
            assert r.status_code == 200, r.text
        samples = imagegen.pets_samples(12, seed=3)
        # one large picture: TurboJPEG's shrink-on-load (1/2) runs for it
        big = imagegen.pets_samples(1, seed=9, sizes=[(1600, 1200)])
        cls.samples = samples + [("pet_big", big[0][1])]
        cls.shards = {}
        for k in range(3):
            part = cls.samples[k * 5:(k + 1) * 5] if k < 2 else cls.samples[10:]
            name = "shard-%d.tar" % k
            cls.shards[name] = part
            r = cls.s.put(cls.url + "/v1/objects/pets/" + name, data=imagegen.tar_of(part), timeout=60)
            assert r.status_code == 200, r.text
        cls.tf, cls.tri = imagegen.reference()
        with open(os.path.join(EXAMPLES, "pets_preprocess.lua")) as f:
            cls.pets_src = f.read()

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)

    def check_pets(self, name, got):
        """got: the samples of a processed shard; compare each with torchvision."""
        want = self.shards[name]
        self.assertEqual([s["__key__"] for s in got], [k for k, _ in want])
        for s, (key, fields) in zip(got, want):
            f = dict(fields)
            self.assertEqual(sorted(k for k in s if k != "__key__"), ["cls", "image.npy", "trimap.npy"], key)
            self.assertEqual(s["cls"], f["cls"])
            x = npy(s["image.npy"])
            self.assertEqual((x.shape, x.dtype), ((3, 224, 224), np.float32), key)
            r = imagegen.ref_image(self.tf, f["image.jpg"])
            mad = float(np.abs(imagegen.unnormalise(x) - imagegen.unnormalise(r)).mean())
            self.assertLessEqual(mad, 0.02, "%s: mean absolute difference %.4f" % (key, mad))
            # the check has teeth: swapped channels, a transpose or the raw resize would fail it
            for bad, what in ((x[::-1], "swapped channels"), (x.transpose(0, 2, 1), "transposed")):
                d = float(np.abs(imagegen.unnormalise(bad) - imagegen.unnormalise(r)).mean())
                self.assertGreater(d, 0.02, "%s: %s would pass (%.4f)" % (key, what, d))
            t = npy(s["trimap.npy"])
            self.assertEqual((t.shape, t.dtype), ((224, 224), np.uint8), key)
            tr = np.asarray(self.tri(Image.open(io.BytesIO(f["trimap.png"]))))
            self.assertTrue(np.array_equal(t, tr), "%s: trimap differs in %d pixels" % (key, int((t != tr).sum())))
            self.assertEqual(set(np.unique(t)) - {1, 2, 3}, set(), key)

    def test_pets_inline_matches_torchvision(self):
        self.init_ok("pets-inline", self.pets_src, mode="sample")
        for name in self.shards:
            r = self.etl_get("pets", name, "pets-inline")
            self.assertEqual(r.status_code, 200, r.text[:300])
            self.check_pets(name, wds_samples(read_shard("tar", r.content)))
        self.rm("pets-inline")

    def test_pets_offline_into_a_dataloader(self):
        import torch
        from torch.utils.data import DataLoader, IterableDataset
        self.init_ok("pets-offline", self.pets_src, mode="sample")
        job = self.start_job("pets", "etl-bck", {"id": "pets-offline"}, bck_to="pets-pre")
        self.assertEqual(self.wait_job(job, timeout=300)["err"], "")
        self.assertEqual(sorted(self.bucket_names("pets-pre")), sorted(self.shards))
        url = self.url

        class Shards(IterableDataset):
            """what webdataset does: tar members grouped by key, .npy decoded by numpy.load, cls as int"""

            def __iter__(self):
                for name in sorted(ImageEtlTest.shards):
                    data = requests.get(url + "/v1/objects/pets-pre/" + name, timeout=60).content
                    for s in wds_samples(read_shard("tar", data)):
                        yield (torch.from_numpy(npy(s["image.npy"])), torch.from_numpy(npy(s["trimap.npy"])),
                               int(s["cls"]))
        batches = list(DataLoader(Shards(), batch_size=4))
        self.assertEqual(sum(len(b[2]) for b in batches), len(self.samples))
        img, tri, cls = batches[0]
        self.assertEqual((tuple(img.shape), img.dtype), ((4, 3, 224, 224), torch.float32))
        self.assertEqual((tuple(tri.shape), tri.dtype), ((4, 224, 224), torch.uint8))
        self.assertEqual(cls.tolist(), [int(dict(f)["cls"]) for _, f in self.samples[:4]])
        for name in self.shards:
            r = self.s.get(self.url + "/v1/objects/pets-pre/" + name, timeout=60)
            self.check_pets(name, wds_samples(read_shard("tar", r.content)))
        self.rm("pets-offline")

    def test_contract_script_unchanged(self):
        self.init_ok("contract", imagegen.CONTRACT, mode="sample")
        part = [(k, [("jpg", dict(f)["image.jpg"]), ("cls", dict(f)["cls"])]) for k, f in self.samples[:3]]
        self.s.put(self.url + "/v1/objects/odd/plain.tar", data=imagegen.tar_of(part), timeout=60)
        r = self.etl_get("odd", "plain.tar", "contract")
        self.assertEqual(r.status_code, 200, r.text[:300])
        got = wds_samples(read_shard("tar", r.content))
        self.assertEqual(len(got), 3)
        for s, (k, f) in zip(got, part):
            x = npy(s["npy"])
            self.assertEqual((x.shape, x.dtype), ((3, 224, 224), np.float32))
            self.assertNotIn("jpg", s)
            r = imagegen.ref_image(self.tf, dict(f)["jpg"])
            self.assertLessEqual(float(np.abs(imagegen.unnormalise(x) - imagegen.unnormalise(r)).mean()), 0.02)
        self.rm("contract")

    def names_on_both_targets(self, bucket, data, n=12):
        """Put the same shard under n names; two names on different targets."""
        names = ["copy-%02d.tar" % i for i in range(n)]
        for nm in names:
            self.assertEqual(self.s.put(self.url + "/v1/objects/%s/%s" % (bucket, nm), data=data,
                                        timeout=60).status_code, 200)
        owner = {}
        for tid, t in self.c.smap()["tmap"].items():
            for nm in names:
                if requests.head(t["public_net"]["direct_url"] + "/v1/objects/%s/%s" % (bucket, nm),
                                 timeout=10).status_code == 200:
                    owner.setdefault(tid, nm)
        self.assertEqual(len(owner), 2, owner)
        return list(owner.values())

    def test_seeded_augmentation(self):
        part = [(k, [("jpg", dict(f)["image.jpg"])]) for k, f in self.samples[:4]]
        a, b = self.names_on_both_targets("aug", imagegen.tar_of(part))
        self.init_ok("augment-a", AUGMENT, mode="sample")
        self.init_ok("augment-b", AUGMENT, mode="sample", seed=12345)

        def crops(name, epoch, etl="augment-a"):
            r = self.etl_get("aug", name, etl, etl_args=json.dumps({"epoch": epoch}))
            self.assertEqual(r.status_code, 200, r.text[:300])
            return [s["npy"] for s in wds_samples(read_shard("tar", r.content))]
        e3 = crops(a, 3)
        self.assertEqual(len(e3), 4)
        self.assertEqual(npy(e3[0]).shape, (48, 48, 3))
        self.assertEqual(crops(a, 3), e3, "a rerun of epoch 3 gives other crops")
        self.assertEqual(crops(b, 3), e3, "the other target gives other crops for epoch 3")
        e4 = crops(a, 4)
        self.assertEqual(sum(x != y for x, y in zip(e3, e4)), 4, "epoch 4 repeats epoch 3's crops")
        self.assertEqual(len(set(e3)), 4, "two samples of one epoch got the same crop")
        self.assertNotEqual(crops(a, 3, "augment-b"), e3, "the ETL's seed changes nothing")
        d = self.s.get(self.url + "/v1/etl/augment-b", timeout=30).json()
        self.assertEqual(d["init_msg"]["seed"], 12345)
        r = self.init("augment-c", AUGMENT, mode="sample", seed=-1)
        self.assertEqual(r.status_code, 400)
        self.assertIn("seed", r.text)
        self.rm("augment-a")
        self.rm("augment-b")

    def test_odd_but_valid_inputs(self):
        rgb = Image.new("RGB", (30, 20), (200, 120, 40))
        cases = {
            "png16": pil_bytes(Image.fromarray((np.ones((20, 30), np.uint16) * 40000)), "PNG"),
            "cmyk": pil_bytes(Image.new("CMYK", (30, 20), (10, 80, 200, 30)), "JPEG", quality=95),
            "rgba": pil_bytes(Image.new("RGBA", (30, 20), (200, 120, 40, 100)), "PNG"),
            "grey": pil_bytes(Image.new("L", (30, 20), 90), "JPEG", quality=95),
            "gif": pil_bytes(rgb.convert("P", palette=Image.ADAPTIVE), "GIF"),
            "tiff": pil_bytes(rgb, "TIFF"),
            "webp": pil_bytes(rgb, "WEBP", lossless=True),
            "exif6": exif_jpeg(6),
        }
        part = [(k, [("img", v)]) for k, v in cases.items()]
        self.s.put(self.url + "/v1/objects/odd/odd.tar", data=imagegen.tar_of(part), timeout=60)
        self.init_ok("any-image", ANY, mode="sample")
        r = self.etl_get("odd", "odd.tar", "any-image")
        self.assertEqual(r.status_code, 200, r.text[:500])
        got = {s["__key__"]: npy(s["npy"]) for s in wds_samples(read_shard("tar", r.content))}
        self.assertEqual(sorted(got), sorted(cases))
        for k, x in got.items():
            want = (40, 20, 3) if k == "exif6" else (20, 30, 3)
            self.assertEqual((x.shape, x.dtype), (want, np.uint8), k)
            if k != "exif6":
                ref = np.asarray(Image.open(io.BytesIO(cases[k])).convert("RGB"), dtype=np.float32)
                if k == "png16":  # PIL keeps 16-bit grey as I;16 and clips; the value is 40000/257
                    ref = np.full((20, 30, 3), 40000 / 257.0, np.float32)
                self.assertLess(float(np.abs(x.astype(np.float32) - ref).mean()), 3.0, k)
        # EXIF 6: rotate 90 clockwise, so the red left half ends on top
        x = got["exif6"].astype(int)
        self.assertGreater(x[2, 10, 0], 200)
        self.assertLess(x[37, 10, 0], 60)
        self.rm("any-image")

    def test_bad_inputs_fail_naming_shard_member_reason(self):
        good = self.samples[0]
        bmp = pil_bytes(Image.new("RGB", (8, 8)), "BMP")
        jpg = dict(self.samples[1][1])["image.jpg"]
        bad = {
            "corrupt": (b"\xff\xd8\xff\xe0" + os.urandom(3000), "JPEG"),
            "truncated": (jpg[:len(jpg) * 2 // 3], "corrupt or truncated JPEG"),
            "empty": (b"", "the data is empty"),
            "bomb": (jpeg_with_size(60000, 60000), "the header announces 60000 x 60000 pixels"),
            "bmp": (bmp, "not an image in a format shale.image reads"),
        }
        for kind, (data, _) in bad.items():
            fields = [(e, d if e != "image.jpg" else data) for e, d in dict(good[1]).items()]
            shard = [good, ("pet_%s" % kind, fields)]
            self.s.put(self.url + "/v1/objects/bad/bad-%s.tar" % kind, data=imagegen.tar_of(shard), timeout=60)
        self.s.put(self.url + "/v1/objects/bad/fine.tar", data=imagegen.tar_of([good]), timeout=60)
        self.init_ok("pets-bad", self.pets_src, mode="sample")
        job = self.start_job("bad", "etl-bck", {"id": "pets-bad", "coer": True}, bck_to="bad-out")
        st = self.wait_job(job, timeout=300)
        self.assertEqual(st["err"], "", st)
        # nothing partial is stored: only the good shard
        self.assertEqual(self.bucket_names("bad-out"), ["fine.tar"])
        errs = self.s.get(self.url + "/v1/etl/pets-bad", params={"uuid": job}, timeout=30).json()["obj_errors"]
        by = {e["obj_name"]: e["msg"] for e in errs}
        for kind, (_, reason) in bad.items():
            msg = by.get("ais://bad/bad-%s.tar" % kind, "")
            self.assertIn('member "pet_%s.image.jpg"' % kind, msg, by)
            self.assertIn(reason, msg)
        self.assertIn("mem_limit", by["ais://bad/bad-bomb.tar"])
        # inline, a bad shard is an error: an error status, or (once the good first sample has gone out)
        # a cut stream, never a complete-looking shard
        try:
            r = self.etl_get("bad", "bad-corrupt.tar", "pets-bad")
            self.assertNotEqual(r.status_code, 200, "a bad shard streamed as if whole")
        except requests.exceptions.ChunkedEncodingError:
            pass
        # the targets keep serving
        for t in self.c.smap()["tmap"].values():
            self.assertEqual(requests.get(t["public_net"]["direct_url"] + "/v1/health", timeout=10).status_code, 200)
        r = self.etl_get("bad", "fine.tar", "pets-bad")
        self.assertEqual(r.status_code, 200)
        self.rm("pets-bad")

    def test_audio_to_tensors_and_broken_audio(self):
        import soundfile
        rate = 22050
        t = np.arange(rate) / rate
        tone = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)

        def enc(data, fmt, sub):
            b = io.BytesIO()
            soundfile.write(b, data, rate, format=fmt, subtype=sub)
            return b.getvalue()
        stereo = np.stack([tone, -tone * 0.5], axis=1)
        good = [("a_wav", [("wav", enc(tone, "WAV", "PCM_16")), ("cls", b"1")]),
                ("a_flac", [("flac", enc(stereo, "FLAC", "PCM_16")), ("cls", b"2")]),
                ("a_ogg", [("ogg", enc(tone, "OGG", "VORBIS")), ("cls", b"3")])]
        flac = enc(tone, "FLAC", "PCM_16")
        broken = [("a_broken", [("flac", flac[:len(flac) // 3] + os.urandom(200)), ("cls", b"4")])]
        self.s.put(self.url + "/v1/objects/odd/speech.tar", data=imagegen.tar_of(good), timeout=60)
        self.s.put(self.url + "/v1/objects/odd/speech-bad.tar", data=imagegen.tar_of(good + broken), timeout=60)
        code = """
function transform_sample(s, ctx)
    local a = shale.audio.decode(s.wav or s.flac or s.ogg)
    a = a:mono():resample(16000):fit(16000)
    s.wav, s.flac, s.ogg = nil, nil, nil
    s.npy = a:tensor{}
    return s
end
"""
        self.init_ok("speech-prep", code, mode="sample")
        r = self.etl_get("odd", "speech.tar", "speech-prep")
        self.assertEqual(r.status_code, 200, r.text[:300])
        got = wds_samples(read_shard("tar", r.content))
        self.assertEqual([g["__key__"] for g in got], ["a_wav", "a_flac", "a_ogg"])
        for g in got:
            x = npy(g["npy"])
            self.assertEqual((x.shape, x.dtype), ((1, 16000), np.float32), g["__key__"])
            # a 440 Hz tone at amplitude 0.5 (stereo: the mean of 0.5 and -0.25 = 0.125)
            want = 0.125 if g["__key__"] == "a_flac" else 0.5
            self.assertAlmostEqual(float(np.abs(x[0, 2000:14000]).max()), want, delta=0.05 * want + 0.01)
            spec = np.abs(np.fft.rfft(x[0]))
            self.assertAlmostEqual(float(np.argmax(spec)), 440, delta=2)
        job = self.start_job("odd", "etl-listrange", {"id": "speech-prep", "objnames": ["speech-bad.tar"],
                                                      "coer": True, "tobck": {"name": "speech-out"}})
        self.assertEqual(self.wait_job(job, timeout=120)["err"], "")
        errs = self.s.get(self.url + "/v1/etl/speech-prep", params={"uuid": job}, timeout=30).json()["obj_errors"]
        self.assertEqual(len(errs), 1, errs)
        self.assertEqual(errs[0]["obj_name"], "ais://odd/speech-bad.tar")
        self.assertIn('member "a_broken.flac"', errs[0]["msg"])
        self.assertIn("shale.audio.decode", errs[0]["msg"])
        self.assertEqual(self.bucket_names("speech-out"), [])
        self.rm("speech-prep")


if __name__ == "__main__":
    main()
