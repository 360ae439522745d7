/*
 * DetectionPostProcess (kernels_detection.c): SSD box decoding against constant anchors and
 * non-maximum suppression, int8 box encodings and class scores in, float32 detections out.
 */
#ifndef TGR_KERNELS_DETECTION_H
#define TGR_KERNELS_DETECTION_H

#include <stdint.h>

typedef struct tgr_detection_params {
    uint32_t boxes;          /* anchors, box encodings and score rows */
    uint32_t columns;        /* score columns per box: the classes after an optional background */
    uint32_t classes;
    uint32_t max_detections;
    uint32_t per_class;      /* regular NMS: at most this many per class */
    int regular;             /* per-class NMS, merged; else one NMS over each box's best class */
    float score_threshold, iou_threshold;
    float scales[4];         /* y, x, h, w */
    float box_scale, score_scale;
    int32_t box_zp, score_zp;
} tgr_detection_params;

/* Bytes of working memory tgr_detection_s8 takes (the plan's scratch output must hold them). */
uint64_t tgr_detection_scratch_bytes(const tgr_detection_params *q);

/* anchors: [boxes][4] float32 (y centre, x centre, h, w), any alignment. Outputs: boxes
 * [max_detections][4] (ymin, xmin, ymax, xmax), classes and scores [max_detections], count [1],
 * every float32; rows past the count are zero. `scratch` is 4-byte aligned. */
void tgr_detection_s8(const tgr_detection_params *q, const int8_t *encodings, const int8_t *scores,
                      const uint8_t *anchors, float *boxes_out, float *classes_out, float *scores_out,
                      float *count_out, uint8_t *scratch);

#endif /* TGR_KERNELS_DETECTION_H */
