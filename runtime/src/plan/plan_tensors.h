/*
 * Tensor views (plan_tensors.c): axis order, quantization, and what part of a tensor a buffer
 * holds in tiled execution. `region`, where given, holds 4 entries per tensor: rows [0],[1)
 * and cols [2],[3); NULL means whole tensors.
 */
#ifndef TGR_PLAN_TENSORS_H
#define TGR_PLAN_TENSORS_H

#include "kernels/kernels.h"
#include "plan/plan.h"

/* Model-order tensors state their own axis order (LINEAR, or rank <= 2 or >= 5); rank 3/4
 * tensors without LINEAR are stored channels-last. */
int tgr_model_order(const tgr_plan *p, uint32_t t);
int tgr_is_nhwc(const tgr_plan *p, uint32_t t);
tgr_qparams tgr_qparams_of(const tgr_plan *p, uint32_t t);
int tgr_same_qparams(const tgr_plan *p, uint32_t a, uint32_t b);
int tgr_same_shape(const tgr_plan *p, uint32_t a, uint32_t b);
/* Rows [0],[1) and cols [2],[3) of rank-4 tensor t held by its buffer: its region, else all. */
void tgr_extent_of(const tgr_plan *p, uint32_t t, const int32_t *region, int32_t out[4]);
/* Row bands (path_rows.c) split a tensor along its band axis. A multi-op band stage bands the
 * outermost axis longer than 1, so every band is contiguous, and its region holds the band as
 * rows [0],[1) of the row axis, which is the band axis, except for rank-4 tensors: there rows are
 * always axis 1 (H) and cols axis 2 (W), as in spatial tiles, and a band along W (H == 1) is
 * expressed as cols. A single-op band stage may band any axis: its region is [0],[1) along axis
 * [2], marked by [3] == TGR_REGION_ALONG. */
#define TGR_REGION_ALONG (-1)
uint32_t tgr_band_axis(const tgr_plan *p, uint32_t t);
uint32_t tgr_row_axis(const tgr_plan *p, uint32_t t);
/* Rows of the row axis t's buffer holds (all when region is NULL). */
int32_t tgr_row_count(const tgr_plan *p, uint32_t t, const int32_t *region);
/* Extents, and bytes, of what t's buffer holds (the whole tensor when region is NULL). */
void tgr_band_dims(const tgr_plan *p, uint32_t t, const int32_t *region, int32_t *dims);
uint32_t tgr_band_bytes(const tgr_plan *p, uint32_t t, const int32_t *region);
/* What t's buffer holds seen as [outer][extent][inner] around `axis`: returns the extent. */
uint32_t tgr_axis_split(const tgr_plan *p, uint32_t t, const int32_t *region, uint32_t axis, uint32_t *outer,
                        uint32_t *inner);

#endif /* TGR_PLAN_TENSORS_H */
