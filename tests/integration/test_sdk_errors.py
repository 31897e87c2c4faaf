# SPDX-License-Identifier: MIT
"""The error texts AIStore's Python SDK picks its exceptions from (aistore/sdk/response_handler.py and
utils.extract_and_parse_url, as of the SDK this contract was read from): the first "PROVIDER://BUCKET[/OBJ]" in
the message and "etl job" decide between ErrObjNotFound, ErrBckNotFound, ErrRemoteBckNotFound,
ErrBckAlreadyExists, ErrETLNotFound and ErrETLAlreadyExists. Each Shale answer a migrating user's code catches
is classified here the way the SDK classifies it, through a real cluster."""
import re

from harness import ClusterTest, main

PROVIDERS = "ais|aws|gcp|azure|oci|ht|s3|gs|az|oc"  # Provider values and provider_aliases
FQN = re.compile(r"(%s)://([A-Za-z0-9@#._-]{1,132})(?:(/)|(?![A-Za-z0-9@#._-]))" % PROVIDERS)


def sdk_exception(status, message):
    """AISResponseHandler.parse_error"""
    m = FQN.search(message)
    prov, bck, obj = (m.group(1), m.group(2), bool(m.group(3))) if m else (None, None, None)
    if status == 404:
        if "etl job" in message:
            return "ErrETLNotFound"
        if prov:
            if obj:
                return "ErrObjNotFound"
            if prov not in ("ais",) or "@" in bck:
                return "ErrRemoteBckNotFound"
            return "ErrBckNotFound"
    elif status == 409:
        if "etl job" in message:
            return "ErrETLAlreadyExists"
        if prov and not obj:
            return "ErrBckAlreadyExists"
    return "AISError"


class TestSDKErrors(ClusterTest):
    def check(self, r, want, what):
        self.assertEqual(sdk_exception(r.status_code, r.text), want, "%s: %d %s" % (what, r.status_code, r.text))

    def test_classified_as_the_sdk_expects(self):
        u, s = self.url, self.s
        self.assertEqual(s.post(u + "/v1/buckets/eb", json={"action": "create-bck"}).status_code, 200)
        self.assertEqual(s.put(u + "/v1/objects/eb/x", data=b"1").status_code, 200)
        self.check(s.get(u + "/v1/objects/eb/nosuch"), "ErrObjNotFound", "GET of a missing object")
        self.check(s.delete(u + "/v1/objects/eb/nosuch"), "ErrObjNotFound", "DELETE of a missing object")
        self.check(s.get(u + "/v1/objects/eb/a/b/c.tar", params={"archpath": "m.jpg"}), "ErrObjNotFound",
                   "archive read of a missing shard")
        self.check(s.get(u + "/v1/objects/nob/x"), "ErrBckNotFound", "GET in a missing bucket")
        self.check(s.get(u + "/v1/buckets/nob", json={"action": "list", "value": {}}), "ErrBckNotFound",
                   "listing a missing bucket")
        self.check(s.delete(u + "/v1/buckets/nob", json={"action": "destroy-bck"}), "ErrBckNotFound",
                   "destroying a missing bucket")
        self.check(s.post(u + "/v1/buckets/nob", params={"bck_to": "ais://eb2"}, json={"action": "copy-bck"}),
                   "ErrBckNotFound", "copying a missing bucket")
        self.check(s.post(u + "/v1/buckets/eb", json={"action": "create-bck"}), "ErrBckAlreadyExists",
                   "creating an existing bucket")
        self.check(s.get(u + "/v1/etl/nosuch"), "ErrETLNotFound", "a missing ETL")
        self.check(s.get(u + "/v1/objects/eb/x", params={"etl_name": "nosuch"}), "ErrETLNotFound",
                   "an inline transform by a missing ETL")
        src = "function transform(data) return data end"
        r = s.put(u + "/v1/etl", json={"name": "dup-etl", "runtime": "lua", "code": src})
        self.assertEqual(r.status_code, 200, r.text)
        self.check(s.put(u + "/v1/etl", json={"name": "dup-etl", "runtime": "lua", "code": src}),
                   "ErrETLAlreadyExists", "an ETL of the same name")
        # multipart: an unknown upload is ErrObjNotFound's neighbour, a plain 404 naming the object
        r = s.put(u + "/v1/objects/eb/big", data=b"x", params={"uploadId": "nosuchid", "partNumber": 1})
        self.check(r, "ErrObjNotFound", "a part of an unknown upload")


if __name__ == "__main__":
    main()
