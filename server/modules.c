/* SPDX-License-Identifier: MIT
 * modules.c: the one list of job modules this node is built with. A new job
 * (dsort, get-batch, ...) defines its struct sl_module (api/module.h) in its
 * own file under jobs/ and is added here; nothing else in the tree names
 * it. Order matters only where two modules could claim the same request:
 * the first one wins.
 */
#include "modules.h"
#include "arch_job.h"
#include "dsort.h"
#include "ec_job.h"
#include "etl.h"
#include "ishard.h"
#include "lifecycle.h"
#include "lrit.h"
#include "lru.h"
#include "cleanup.h"
#include "blob.h"
#include "download.h"
#include "nbi.h"
#include "mirror_job.h"
#include "moss.h"
#include "mvb.h"
#include "plan.h"
#include "promote.h"
#include "resilver_job.h"
#include "scrub.h"
#include "tcb.h"
#include "mvo.h"

const struct sl_module *const sl_modules[] = {
    &sl_etl_module,
    &sl_ishard_module,
    &sl_tcb_module,
    &sl_arch_job_module,
    &sl_dsort_module,
    &sl_moss_module,
    &sl_plan_module,
    &sl_lrit_module,
    &sl_promote_module,
    &sl_mvb_module,
    &sl_lru_module,
    &sl_cleanup_module,
    &sl_blob_module,
    &sl_mvo_module,
    &sl_download_module,
    &sl_nbi_module,
    &sl_mirror_module,
    &sl_ec_module,
    &sl_resilver_module,
    &sl_scrub_module,
    &sl_lifecycle_module,
    NULL,
};
