/* Op dispatch (dispatch.c): runs one op of a loaded plan on the buffers in `tensor_ptr`. */
#ifndef TGR_DISPATCH_H
#define TGR_DISPATCH_H

#include "tgr_internal.h"

void tgr_dispatch(const tgr_plan *p, uint32_t op, uint8_t *const *tensor_ptr);

#endif
