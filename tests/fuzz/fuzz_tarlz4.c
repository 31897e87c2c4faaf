/* SPDX-License-Identifier: MIT
 * fuzz_tarlz4.c: libFuzzer harness for the "tar.lz4" shard reader. Built by
 * tests/fuzz/run.sh with formats/fmt_tarlz4.c and formats/common_*.c.
 */
#define FUZZ_FORMAT "tar.lz4"
#include "fuzz_reader.h"
