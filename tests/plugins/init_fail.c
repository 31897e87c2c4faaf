/* SPDX-License-Identifier: MIT
 * init_fail.c: a plugin whose init fails; the loader must refuse it, not
 * call fini, and dlclose it. */
#define TEST_NAME "test_init_fail"
#define FAIL_INIT 1
#include "good.c"
