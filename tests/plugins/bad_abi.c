/* SPDX-License-Identifier: MIT
 * bad_abi.c: claims plugin ABI major 99; the loader must refuse it. */
#define TEST_NAME "test_bad_abi"
#define BAD_ABI_MAJOR 99
#include "good.c"
