#!/bin/sh
# SPDX-License-Identifier: MIT
# The demo pipeline (`make demo`): a local cluster (1 gateway + 3 targets),
# a small Oxford-IIIT-Pets-like dataset uploaded as raw files, sharded into
# WebDataset shards by ishard, shuffled across shards by dsort, labelled with
# a sample-mode Lua ETL (classes from annotations/list.txt), read back the
# way a training loop does, and read again through the image ETL that makes
# normalised tensors on the targets.
#   DEMO_DIR (default /tmp/shale-demo)   DEMO_PORT (default 8080)
set -eu
B=${SHALE_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
SRC=$(cd "$(dirname "$0")/.." && pwd)
DIR=${DEMO_DIR:-/tmp/shale-demo}
PORT=${DEMO_PORT:-8080}
SHALE="$B/bin/shale"
PY=/usr/bin/python3
export AIS_ENDPOINT="http://127.0.0.1:$PORT"

step() { printf '\n==> %s\n' "$*"; }

step "start a local cluster in $DIR (1 gateway, 3 targets)"
if [ -f "$DIR/playground.json" ]; then   # a demo ran here before: start afresh
    "$SHALE" playground stop --dir "$DIR" >/dev/null 2>&1 || true
    rm -rf "$DIR"
fi
"$SHALE" playground start --dir "$DIR" --port "$PORT" --proxies 1 --targets 3
"$SHALE" show cluster

step "generate a small Oxford-IIIT-Pets-like dataset (images, trimaps, list.txt)"
rm -rf "$DIR/dataset"
$PY "$SRC/examples/gen_dataset.py" "$DIR/dataset" --per-class 12

step "upload the raw files"
"$SHALE" bucket rm ais://pets-raw ais://pets ais://pets-shuffled ais://pets-train --ignore-error -y >/dev/null
"$SHALE" bucket create ais://pets-raw
"$SHALE" put "$DIR/dataset" ais://pets-raw/ -r -y
"$SHALE" ls ais://pets-raw --limit 5

step "ishard: one sample per pet (image + trimap), 64 KiB shards, a dry run first"
ISH="--src-bck ais://pets-raw --dst-bck ais://pets --shard-size 64KiB --sample-key-pattern base_name \
     --sample-exts .jpg,.png --missing-extension-action exclude"
# shellcheck disable=SC2086
"$SHALE" ishard $ISH --dry-run | tail -8
# shellcheck disable=SC2086
"$SHALE" ishard $ISH --wait
"$SHALE" archive ls ais://pets | head -8

step "dsort: shuffle the samples across shards (seeded: the same seed gives the same shards)"
"$SHALE" dsort -f "$SRC/examples/dsort/shuffle.json" --wait
"$SHALE" archive ls ais://pets-shuffled | head -8

step "add the class label from annotations/list.txt with a sample-mode Lua ETL"
"$SHALE" get ais://pets-raw/annotations/list.txt "$DIR/list.txt" >/dev/null
$PY - "$DIR/list.txt" "$DIR/classes.json" <<'PYEOF'
import json, sys
m = {}
for line in open(sys.argv[1]):
    if line.strip() and not line.startswith("#"):
        name, cls = line.split()[:2]
        m[name] = int(cls)
json.dump(m, open(sys.argv[2], "w"))
print("%d labels" % len(m))
PYEOF
"$SHALE" etl rm add-cls >/dev/null 2>&1 || true
"$SHALE" etl init --name add-cls --code "$SRC/examples/etl/add_cls.lua" --mode sample
"$SHALE" etl bucket add-cls ais://pets-shuffled ais://pets-train --args "$(cat "$DIR/classes.json")" --wait
"$SHALE" archive ls ais://pets-train | head -8

step "read it back like a training loop (WebDataset grouping over HTTP)"
$PY "$SRC/examples/read_shards.py" "$AIS_ENDPOINT" pets-train --batch 8

step "preprocess on the targets: decode, Resize(256), CenterCrop(224), normalise (examples/etl/pets_preprocess.lua)"
"$SHALE" etl rm pets-preprocess >/dev/null 2>&1 || true
"$SHALE" etl init --name pets-preprocess --code "$SRC/examples/etl/pets_preprocess.lua" --mode sample
$PY "$SRC/examples/read_shards.py" "$AIS_ENDPOINT" pets-train --batch 8 --etl pets-preprocess

step "an epoch plan: the cluster fixes every epoch's order; readers ask for batches by index"
curl -s -X DELETE "$AIS_ENDPOINT/v1/ml/plan/pets" >/dev/null 2>&1 || true
curl -sf -X PUT -H 'Content-Type: application/json' "$AIS_ENDPOINT/v1/ml/plan" \
    -d '{"name": "pets", "bck": "pets-train", "prefix": "", "seed": 1, "batch_size": 16}'
echo
$PY - "$SRC/examples/get-batch" "$AIS_ENDPOINT" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
from plan_dataset import PlanBatches
for index, samples in PlanBatches(sys.argv[2], "pets", epoch=0):
    print("epoch 0, batch %d: %d samples: %s ..." % (index, len(samples), ", ".join(s["__key__"] for s in samples[:3])))
    if index == 2:
        break
PYEOF

printf '\nThe cluster keeps running: AIS_ENDPOINT=%s\nStop it with: %s playground stop --dir %s\n' \
    "$AIS_ENDPOINT" "$SHALE" "$DIR"
