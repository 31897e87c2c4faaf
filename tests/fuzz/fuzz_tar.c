/* SPDX-License-Identifier: MIT
 * fuzz_tar.c: libFuzzer harness for the "tar" shard reader. Built by
 * tests/fuzz/run.sh with formats/fmt_tar.c and formats/common_*.c.
 */
#define FUZZ_FORMAT "tar"
#include "fuzz_reader.h"
