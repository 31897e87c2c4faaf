/* SPDX-License-Identifier: MIT
 * fuzz_zip.c: libFuzzer harness for the "zip" shard reader. Built by
 * tests/fuzz/run.sh with formats/fmt_zip.c and formats/common_*.c.
 */
#define FUZZ_FORMAT "zip"
#include "fuzz_reader.h"
