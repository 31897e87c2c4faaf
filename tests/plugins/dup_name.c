/* SPDX-License-Identifier: MIT
 * dup_name.c: a second plugin named "test_good"; whichever loads second
 * (file names are loaded in sorted order) is refused. */
#include "good.c"
