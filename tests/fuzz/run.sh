#!/bin/sh
# SPDX-License-Identifier: MIT
# Fuzz the parsers of untrusted input: one libFuzzer target each, built with
# $FUZZ_CC -fsanitize=fuzzer,address,undefined.
#   tar tgz zip tarlz4   the shard-format readers: tests/fuzz/fuzz_<t>.c
#                        with the format's own sources (formats/)
#   h1 chunked s3chunk s3sig uri dsort_spec ishard_msg ekm image audio
#                        the server's parsers (image, audio: shale.image's and
#                        shale.audio's decoders through the Lua sandbox): tests/fuzz/fuzz_<t>.c and
#                        fuzz_node.c (fuzz_node.h) linked with the node's
#                        sources, compiled for fuzzing once, and again when
#                        they change, into $SHALE_BUILD/fuzz/libnode.a
#
# For every target: replay the checked-in seeds (tests/fuzz/corpus/<t>),
# then fuzz for FUZZ_TIME seconds (default 20 for a format reader, 10 for a
# server parser) starting from the seeds and from what earlier runs found
# ($SHALE_BUILD/fuzz/corpus_<t>). FUZZ_JOBS targets (default 2) run side by
# side. Binaries, objects, the growing corpus, logs and crash artifacts all
# live under $SHALE_BUILD/fuzz; nothing is written into the source tree.
#
# Environment: SHALE_SRC, SHALE_BUILD (set by tests/run.sh / make), FUZZ_CC
# (clang with libFuzzer; unset = skip), FUZZ_TIME, FUZZ_JOBS,
# FUZZ_TARGETS="tar h1".
# Exit status: 0 when every target built, replayed and fuzzed without a
# crash, leak, timeout or sanitizer report; 1 otherwise.
set -u
: "${SHALE_SRC:?set SHALE_SRC to the source tree}" "${SHALE_BUILD:?set SHALE_BUILD to the build directory}"

if [ -z "${FUZZ_CC:-}" ]; then
    echo "fuzz: FUZZ_CC is not set (needs clang with libFuzzer: apt-get install clang libclang-rt-14-dev); skipping"
    exit 0
fi
export SHALE_SRC SHALE_BUILD FUZZ_CC

self="$SHALE_SRC/tests/fuzz/run.sh"
out="$SHALE_BUILD/fuzz"
jobs=${FUZZ_JOBS:-2}
formats="tar tgz zip tarlz4"
parsers="h1 chunked s3chunk s3sig uri dsort_spec ishard_msg ekm image audio"
cflags="-g -O1 -std=gnu11 -Wall -fno-sanitize-recover=undefined -fno-omit-frame-pointer -D_GNU_SOURCE"
arch_cflags=$(pkg-config --cflags libarchive 2>/dev/null)
arch_libs=$(pkg-config --libs libarchive 2>/dev/null || echo -larchive)
# the node's libraries, as configure finds them (Makefile.in DEP_LIBS)
pcs="luajit libmicrohttpd libarchive lmdb jansson libcurl libcrypto libxxhash msgpack liblz4 zlib expat gnutls
 yaml-0.1 libisal libturbojpeg libpng libwebp libtiff-4 libswscale libavutil libexif sndfile samplerate"
# shellcheck disable=SC2086
node_cflags=$(pkg-config --cflags $pcs 2>/dev/null || echo -I/usr/include/luajit-2.1)
# shellcheck disable=SC2086
node_libs="$(pkg-config --libs $pcs 2>/dev/null || echo -lluajit-5.1 -lmicrohttpd -larchive -llmdb -ljansson -lcurl \
 -lcrypto -lxxhash -lmsgpackc -llz4 -lz -lexpat -lgnutls -lyaml -lisal -lturbojpeg -lpng16 -lwebp -ltiff -lswscale \
 -lavutil -lexif -lsndfile -lsamplerate) -lgif -lpthread -ldl -lm"
for d in server/core server/http server/node server/target server/cluster server/api server/jobs server metadata \
    plugins lua; do
    node_cflags="$node_cflags -I$SHALE_SRC/$d"
done

is_format() {
    case " $formats " in *" $1 "*) return 0 ;; esac
    return 1
}

# ---- the node's sources, compiled for fuzzing into libnode.a ----

node_srcs() { # as the Makefile's CORE_SRC: every node source but main.c
    (cd "$SHALE_SRC" && ls server/*.c server/*/*.c metadata/*.c lua/*.c plugins/plug_*.c) | grep -v '^server/main\.c$'
}

# stale OBJ SRC: OBJ is missing, or older than SRC or a header it was built from
stale() {
    [ -f "$1" ] && [ -f "${1%.o}.d" ] && [ ! "$2" -nt "$1" ] || return 0
    for f in $(sed -e 's/^[^:]*://' -e 's/\\$//' "${1%.o}.d"); do
        [ "$f" -nt "$1" ] && return 0
    done
    return 1
}

# cc_node SRC: one source (run in parallel by xargs); a failure leaves no
# object, and its log says why (the targets that need it do not link)
cc_node() {
    o="$out/obj/${1%.c}.o"
    mkdir -p "$(dirname "$o")"
    # shellcheck disable=SC2086
    $FUZZ_CC $cflags -fsanitize=fuzzer-no-link,address,undefined -D_FILE_OFFSET_BITS=64 -DSL_PREFIX=\"/usr/local\" \
        $node_cflags -MMD -MP -c -o "$o" "$SHALE_SRC/$1" >"${o%.o}.log" 2>&1 || rm -f "$o"
}

node_lib() {
    todo=""
    for s in $(node_srcs); do
        stale "$out/obj/${s%.c}.o" "$SHALE_SRC/$s" && todo="$todo $s"
    done
    [ -z "$todo" ] || echo "$todo" | tr ' ' '\n' | grep . | xargs -P "$jobs" -n 1 sh "$self" _cc
    objs=""
    for s in $(node_srcs); do
        [ -f "$out/obj/${s%.c}.o" ] && objs="$objs $out/obj/${s%.c}.o"
    done
    rm -f "$out/libnode.a"
    # shellcheck disable=SC2086
    ar rcs "$out/libnode.a" $objs
}

# the compile errors of the node's sources that have no object
node_errs() {
    for s in $(node_srcs); do
        [ -f "$out/obj/${s%.c}.o" ] || { echo "== $s"; cat "$out/obj/${s%.c}.log" 2>/dev/null; }
    done
}

# The format and sample-key plugins dsort_spec and ishard_msg load, built
# with $FUZZ_CC into $out/lib/shale (FUZZ_PLUGIN_DIR, fuzz_node.h): the
# build's own plugins carry its sanitizer runtime when configured with
# --enable-asan (gcc's), which a clang fuzzer cannot load beside its own.
fuzz_plugins() {
    mkdir -p "$out/lib/shale"
    for s in "$SHALE_SRC"/formats/fmt_*.c "$SHALE_SRC"/plugins/key_*.c; do
        case $s in */fmt_*) extra="$SHALE_SRC/formats/common_*.c $arch_libs -llz4" ;; *) extra="" ;; esac
        # shellcheck disable=SC2086
        $FUZZ_CC -std=gnu11 -O1 -g -D_GNU_SOURCE -fPIC -fvisibility=hidden $arch_cflags -I"$SHALE_SRC/plugins" \
            -I"$SHALE_SRC/formats" -shared -o "$out/lib/shale/$(basename "${s%.c}").so" "$s" $extra || return 1
    done
}

# ---- one target: build, replay the seeds, fuzz ----

build() { # build T BIN
    if is_format "$1"; then
        # shellcheck disable=SC2086
        $FUZZ_CC $cflags -fsanitize=fuzzer,address,undefined -I"$SHALE_SRC/plugins" -I"$SHALE_SRC/formats" \
            $arch_cflags -o "$2" "$SHALE_SRC/tests/fuzz/fuzz_$1.c" "$SHALE_SRC/formats/fmt_$1.c" \
            "$SHALE_SRC"/formats/common_*.c $arch_libs -llz4
    else
        # shellcheck disable=SC2086
        $FUZZ_CC $cflags -fsanitize=fuzzer,address,undefined -D_FILE_OFFSET_BITS=64 $node_cflags \
            -I"$SHALE_SRC/tests/fuzz" -o "$2" "$SHALE_SRC/tests/fuzz/fuzz_$1.c" "$SHALE_SRC/tests/fuzz/fuzz_node.c" \
            "$out/libnode.a" $node_libs || { node_errs; return 1; }
    fi
}

# run_target T: writes its summary line to $out/result_T (and what to show
# of a failure to $out/result_T.tail)
run_target() {
    t=$1
    bin="$out/fuzz_$t"
    seeds="$SHALE_SRC/tests/fuzz/corpus/$t"
    corpus="$out/corpus_$t"
    res="$out/result_$t"
    mkdir -p "$corpus"
    rm -f "$res" "$res.tail"
    if is_format "$t"; then time_s=${FUZZ_TIME:-20}; else time_s=${FUZZ_TIME:-10}; fi
    if ! build "$t" "$bin" >"$out/build_$t.log" 2>&1; then
        cp "$out/build_$t.log" "$res.tail"
        echo "FAIL fuzz/$t: build (log: $out/build_$t.log)" >"$res"
        return
    fi
    # 1. replay the seeds: every one must run clean
    if ! "$bin" -runs=0 -timeout=10 "$seeds" >"$out/replay_$t.log" 2>&1; then
        tail -40 "$out/replay_$t.log" >"$res.tail"
        echo "FAIL fuzz/$t: seed replay (log: $out/replay_$t.log)" >"$res"
        return
    fi
    # 2. bounded fuzzing; new inputs go to the build-side corpus
    if ! "$bin" -max_total_time="$time_s" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$out/$t-" -print_final_stats=1 "$corpus" "$seeds" >"$out/fuzz_$t.log" 2>&1; then
        tail -60 "$out/fuzz_$t.log" >"$res.tail"
        echo "FAIL fuzz/$t: crash or sanitizer report (log: $out/fuzz_$t.log, artifacts: $out/$t-*)" >"$res"
        return
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz_$t.log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$out/fuzz_$t.log" | tail -1)
    echo "PASS fuzz/$t: ${runs:-?} runs in ${time_s}s, $cov, corpus $(ls "$corpus" | wc -l) inputs" >"$res"
}

case "${1:-}" in
_cc) cc_node "$2"; exit 0 ;;
_one) run_target "$2"; exit 0 ;;
esac

mkdir -p "$out"
targets=${FUZZ_TARGETS:-$formats $parsers}
for t in $targets; do
    is_format "$t" || { node_lib; break; }
done
case " $targets " in *" dsort_spec "* | *" ishard_msg "*)
    fuzz_plugins >"$out/plugins.log" 2>&1 || { echo "fuzz: building the plugins failed:"; cat "$out/plugins.log"; }
    FUZZ_PLUGIN_DIR="$out/lib/shale"
    export FUZZ_PLUGIN_DIR ;;
esac
echo "$targets" | tr ' ' '\n' | grep . | xargs -P "$jobs" -n 1 sh "$self" _one
fail=0
summary=""
for t in $targets; do
    [ -s "$out/result_$t.tail" ] && cat "$out/result_$t.tail"
    line=$(cat "$out/result_$t" 2>/dev/null) || line="FAIL fuzz/$t: no result"
    case $line in FAIL*) fail=1 ;; esac
    summary="$summary\n$line"
done
printf "%b\n" "$summary"
exit $fail
