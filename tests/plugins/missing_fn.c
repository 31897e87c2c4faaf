/* SPDX-License-Identifier: MIT
 * missing_fn.c: a sample-key plugin whose required key() is NULL; refused. */
#define TEST_NAME "test_missing_fn"
#define MISSING_KEY_FN 1
#include "good.c"
