/*
 * Detection family: DetectionPostProcess (89), whole tensors. Inputs: box encodings
 * [1, boxes, 4] and class scores [1, boxes, columns], int8; OP_ATTR_CONSTANTS names the float32
 * anchors [boxes, 4]; OP_ATTR_DETECTION the limits, thresholds and scales. Outputs, float32 model
 * outputs handed over as stored: boxes [1, detections, 4], classes and scores [1, detections],
 * the count [1], and the working memory the compiler sizes for the runtime (ours fits in it;
 * checked at load). Refused: compressed weights, limits or thresholds the arithmetic cannot
 * take (docs/execution.md#detectionpostprocess).
 */
#include "kernels/kernels_detection.h"
#include "ops/ops.h"

enum { DETECTION_ATTR_BYTES = 32 };

/* The working memory tigris-ml gives the op, in whole float32 values, which the reference
 * requires exactly: 4 (9 boxes + max(boxes, candidates) + 2 candidates + detections) + boxes
 * bytes, candidates being the detections plus, for regular NMS, the detections per class. */
static uint64_t compiler_scratch_bytes(const tgr_detection_params *q)
{
    const uint64_t candidates = (uint64_t)q->max_detections + (q->regular ? q->per_class : 0u);
    const uint64_t bytes = 4u * (9ull * q->boxes + (q->boxes > candidates ? q->boxes : candidates) + 2u * candidates +
                                 q->max_detections) + q->boxes;
    return (bytes + 3u) / 4u * 4u;
}

static int finite(float v) { return v == v && v <= 3.4028235e38f && v >= -3.4028235e38f; }

/* The op's parameters and anchors from the plan; NULL, or what is wrong. */
static const char *detection_params(const tgr_plan *p, uint32_t o, tgr_detection_params *q, const uint8_t **anchors)
{
    uint32_t len = 0, k, encodings, scores, anchor;
    const uint8_t *constants = tgr_attr_find(p, o, ATTR_CONSTANTS, &len);
    const uint8_t *attr;
    int usable;
    if (op_num_inputs(p, o) != 2u || op_num_outputs(p, o) != 5u || constants == NULL || len != 2u) {
        return TGR_TEXT("its operands or constants are not a DetectionPostProcess's");
    }
    attr = tgr_attr_find(p, o, ATTR_DETECTION, &len);
    if (attr == NULL || len != DETECTION_ATTR_BYTES) {
        return TGR_TEXT("its DETECTION attribute is missing");
    }
    q->max_detections = rd_u16(attr);
    q->per_class = rd_u16(attr + 2);
    q->classes = rd_u16(attr + 4);
    q->regular = attr[6];
    q->score_threshold = rd_f32(attr + 8);
    q->iou_threshold = rd_f32(attr + 12);
    usable = q->max_detections > 0u && q->classes > 0u && attr[6] <= 1u && attr[7] == 0u &&
             (q->per_class > 0u || !q->regular) && finite(q->score_threshold) && q->iou_threshold > 0.0f &&
             q->iou_threshold <= 1.0f;
    for (k = 0; k < 4u; ++k) {
        q->scales[k] = rd_f32(attr + 16u + 4u * k);
        usable = usable && finite(q->scales[k]) && q->scales[k] != 0.0f;
    }
    if (!usable) {
        return TGR_TEXT("its limits, thresholds or scales are out of range");
    }
    encodings = op_input(p, o, 0);
    scores = op_input(p, o, 1);
    q->boxes = tensor_ndim(p, encodings) == 3u ? (uint32_t)tensor_dim(p, encodings, 1) : 0u;
    q->columns = tensor_ndim(p, scores) == 3u ? (uint32_t)tensor_dim(p, scores, 2) : 0u;
    anchor = rd_u16(constants);
    if (q->boxes == 0u || tensor_bytes(p, encodings) != 4u * q->boxes || q->columns < q->classes ||
        q->columns > q->classes + 1u || (uint64_t)tensor_bytes(p, scores) != (uint64_t)q->boxes * q->columns ||
        anchor >= p->num_weights || (uint64_t)weight_size(p, anchor) != 16ull * q->boxes) {
        return TGR_TEXT("its box encodings, scores and anchors do not agree");
    }
    if ((uint64_t)tensor_bytes(p, op_output(p, o, 0)) != 16ull * q->max_detections ||
        (uint64_t)tensor_bytes(p, op_output(p, o, 1)) != 4ull * q->max_detections ||
        (uint64_t)tensor_bytes(p, op_output(p, o, 2)) != 4ull * q->max_detections ||
        tensor_bytes(p, op_output(p, o, 3)) != 4u || tensor_bytes(p, op_output(p, o, 4)) != compiler_scratch_bytes(q) ||
        (uint64_t)tensor_bytes(p, op_output(p, o, 4)) < tgr_detection_scratch_bytes(q)) {
        return TGR_TEXT("its outputs or working memory do not match its detections");
    }
    q->box_scale = tgr_qparams_of(p, encodings).scale;
    q->box_zp = tgr_qparams_of(p, encodings).zero_point;
    q->score_scale = tgr_qparams_of(p, scores).scale;
    q->score_zp = tgr_qparams_of(p, scores).zero_point;
    *anchors = weight_data(p, anchor);
    return NULL;
}

static tgr_status check_detection(const tgr_plan *p, uint32_t o, tgr_error *err)
{
    tgr_detection_params q;
    const uint8_t *anchors;
    const char *why = detection_params(p, o, &q, &anchors);
    if (why != NULL) {
        return tgr_bad_op(err, p, o, why);
    }
    if (p->num_blocks > 0u) {
        return tgr_unsupported_op(err, p, o, "compressed weights");
    }
    return TGR_OK;
}

static void run_detection(const tgr_plan *p, uint32_t o, uint8_t *const *tensor_ptr, const int32_t *region)
{
    tgr_detection_params q;
    const uint8_t *anchors;
    (void)region; /* whole tensors only */
    detection_params(p, o, &q, &anchors);
    tgr_detection_s8(&q, (const int8_t *)tensor_ptr[op_input(p, o, 0)], (const int8_t *)tensor_ptr[op_input(p, o, 1)],
                     anchors, (float *)(void *)tensor_ptr[op_output(p, o, 0)],
                     (float *)(void *)tensor_ptr[op_output(p, o, 1)], (float *)(void *)tensor_ptr[op_output(p, o, 2)],
                     (float *)(void *)tensor_ptr[op_output(p, o, 3)], tensor_ptr[op_output(p, o, 4)]);
}

TGR_OP_IMPL(OP_DETECTION_POSTPROCESS, TILING_NONE, check_detection, run_detection);
