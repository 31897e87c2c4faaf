/* SPDX-License-Identifier: MIT
 * fuzz_tgz.c: libFuzzer harness for the "tgz" shard reader. Built by
 * tests/fuzz/run.sh with formats/fmt_tgz.c and formats/common_*.c.
 */
#define FUZZ_FORMAT "tgz"
#include "fuzz_reader.h"
