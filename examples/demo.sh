#!/bin/sh
# SPDX-License-Identifier: MIT
# The demo pipeline: start a local playground, upload a small Pets-like
# dataset, list it, read it back. `make demo` runs it.
#   DEMO_DIR  (default /tmp/shale-demo)   DEMO_PORT (default 8080)
set -eu
B=${SHALE_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
SRC=$(cd "$(dirname "$0")/.." && pwd)
DIR=${DEMO_DIR:-/tmp/shale-demo}
PORT=${DEMO_PORT:-8080}
SHALE="$B/bin/shale"
export AIS_ENDPOINT="http://127.0.0.1:$PORT"

step() { printf '\n==> %s\n' "$*"; }

step "start a local playground in $DIR"
"$SHALE" playground start --dir "$DIR" --port "$PORT"
"$SHALE" show cluster

step "generate a small Oxford-IIIT-Pets-like dataset"
rm -rf "$DIR/dataset"
/usr/bin/python3 "$SRC/examples/gen_dataset.py" "$DIR/dataset" --per-class 12

step "upload it"
"$SHALE" bucket create ais://pets-raw 2>/dev/null || true
"$SHALE" put "$DIR/dataset" ais://pets-raw/ -r -y

step "list and read back"
"$SHALE" ls ais://pets-raw/annotations/ --props name,size,checksum
"$SHALE" get ais://pets-raw/annotations/list.txt - | head -5
"$SHALE" object show ais://pets-raw/images/beagle_1.jpg

printf '\nThe playground keeps running: AIS_ENDPOINT=%s\nStop it with: %s playground stop --dir %s\n' \
    "$AIS_ENDPOINT" "$SHALE" "$DIR"
