/* Sliding-window helpers shared by the convolution and pooling families (ops_window.c). */
#ifndef TGR_OPS_WINDOW_H
#define TGR_OPS_WINDOW_H

#include "ops/ops.h"

/* Plans write dilation 0 for an undilated window. */
static inline uint32_t tgr_effective_dilation(uint32_t dilation) { return dilation == 0u ? 1u : dilation; }

/* NHWC in and out, equal batch, and kernel/stride/pads/dilation producing the output extent. */
tgr_status tgr_check_window_geometry(const tgr_plan *p, uint32_t o, const op_spatial *sp, tgr_error *err);

/* Kernel geometry of a window op on the buffers it is given (whole tensors or tile regions). */
void tgr_window_of(const tgr_plan *p, uint32_t o, const op_spatial *sp, const int32_t *region, tgr_window *w);

#endif
