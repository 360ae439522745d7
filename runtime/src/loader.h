/* Loader-side hooks implemented by other units. */
#ifndef TGR_LOADER_H
#define TGR_LOADER_H

#include "tgr_internal.h"

/* Check every op has a kernel in this runtime and that its tensors, weights and parameters
 * are exactly what that kernel expects (dispatch.c). */
tgr_status tgr_check_kernels(const tgr_plan *p, tgr_error *err);

#endif
