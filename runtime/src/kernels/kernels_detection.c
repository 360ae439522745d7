/*
 * DetectionPostProcess (kernels_detection.h), measured against the reference on the compiler's
 * detection_fast and detection_regular fixtures and on variants of their thresholds, limits and
 * inputs (docs/execution.md#detectionpostprocess). What the bytes depend on:
 *   - decoding in double from the float32 dequantized encodings, anchors and scales: the centre
 *     `e / scale * anchor_extent + anchor_centre` and the half extent
 *     `0.5 * exp(e / scale) * anchor_extent` are each rounded to float32, then subtracted and
 *     added in float32;
 *   - scores dequantized in float32, kept when >= the threshold;
 *   - candidates ordered by decreasing score, ties by box index (a stable sort), a candidate
 *     suppressed by an earlier kept one when their float32 IoU is > the IoU threshold;
 *   - regular NMS merges the classes in class order, stably, keeping the best max_detections.
 */
#include <math.h>
#include <string.h>

#include "kernels/kernels_detection.h"

/* One kept detection of regular NMS. */
typedef struct kept_detection {
    float score;
    uint32_t box, label;
} kept_detection;

/* Working memory, carved out of the scratch output in this order. */
typedef struct detection_scratch {
    float *decoded;          /* [boxes][4] */
    float *score;            /* [boxes]: the best class's score (fast) or one class's (regular) */
    uint32_t *label;         /* [boxes]: the best class (fast) */
    uint32_t *order;         /* [boxes]: candidates, then the selected ones */
    kept_detection *kept;    /* [max_detections + min(per_class, boxes)] (regular) */
    uint8_t *active;         /* [boxes] */
} detection_scratch;

static uint32_t per_class_limit(const tgr_detection_params *q)
{
    return q->per_class < q->boxes ? q->per_class : q->boxes;
}

uint64_t tgr_detection_scratch_bytes(const tgr_detection_params *q)
{
    return 4ull * (7ull * q->boxes) + (uint64_t)sizeof(kept_detection) * (q->max_detections + per_class_limit(q)) +
           q->boxes;
}

static detection_scratch carve(const tgr_detection_params *q, uint8_t *at)
{
    detection_scratch s;
    s.decoded = (float *)(void *)at;
    s.score = s.decoded + 4u * q->boxes;
    s.label = (uint32_t *)(void *)(s.score + q->boxes);
    s.order = s.label + q->boxes;
    s.kept = (kept_detection *)(void *)(s.order + q->boxes);
    s.active = (uint8_t *)(s.kept + q->max_detections + per_class_limit(q));
    return s;
}

static void decode(const tgr_detection_params *q, const int8_t *encodings, const uint8_t *anchors, float *decoded)
{
    uint32_t i;
    for (i = 0; i < q->boxes; ++i) {
        const int8_t *e = encodings + 4u * i;
        float a[4];
        double v[4];
        float centre_y, centre_x, half_h, half_w;
        uint32_t k;
        memcpy(a, anchors + 16u * i, sizeof a);
        for (k = 0; k < 4u; ++k) {
            v[k] = (double)((float)((int32_t)e[k] - q->box_zp) * q->box_scale) / (double)q->scales[k];
        }
        centre_y = (float)(v[0] * (double)a[2] + (double)a[0]);
        centre_x = (float)(v[1] * (double)a[3] + (double)a[1]);
        half_h = (float)(0.5 * exp(v[2]) * (double)a[2]);
        half_w = (float)(0.5 * exp(v[3]) * (double)a[3]);
        decoded[4u * i] = centre_y - half_h;
        decoded[4u * i + 1u] = centre_x - half_w;
        decoded[4u * i + 2u] = centre_y + half_h;
        decoded[4u * i + 3u] = centre_x + half_w;
    }
}

static float overlap(const float *a, const float *b)
{
    const float area_a = (a[2] - a[0]) * (a[3] - a[1]);
    const float area_b = (b[2] - b[0]) * (b[3] - b[1]);
    float h, w, inter;
    if (area_a <= 0.0f || area_b <= 0.0f) {
        return 0.0f;
    }
    h = (a[2] < b[2] ? a[2] : b[2]) - (a[0] > b[0] ? a[0] : b[0]);
    w = (a[3] < b[3] ? a[3] : b[3]) - (a[1] > b[1] ? a[1] : b[1]);
    inter = (h > 0.0f ? h : 0.0f) * (w > 0.0f ? w : 0.0f);
    return inter / (area_a + area_b - inter);
}

/* Greedy NMS over s.score: the selected box indices, best first, in s.order[0..return). */
static uint32_t suppress(const tgr_detection_params *q, const detection_scratch *s, uint32_t limit)
{
    uint32_t n = 0, kept = 0, i, a, b;
    for (i = 0; i < q->boxes; ++i) {
        if (s->score[i] >= q->score_threshold) {
            uint32_t at = n++;
            while (at > 0u && s->score[s->order[at - 1u]] < s->score[i]) { /* stable insertion */
                s->order[at] = s->order[at - 1u];
                --at;
            }
            s->order[at] = i;
        }
    }
    memset(s->active, 1, n);
    for (a = 0; a < n && kept < limit; ++a) {
        const uint32_t box = s->order[a];
        if (!s->active[a]) {
            continue;
        }
        s->order[kept++] = box; /* kept <= a: overwrites only candidates already visited */
        for (b = a + 1u; b < n; ++b) {
            if (s->active[b] && overlap(s->decoded + 4u * box, s->decoded + 4u * s->order[b]) > q->iou_threshold) {
                s->active[b] = 0;
            }
        }
    }
    return kept;
}

static float score_of(const tgr_detection_params *q, const int8_t *scores, uint32_t box, uint32_t label)
{
    const uint32_t column = q->columns - q->classes + label;
    return (float)((int32_t)scores[box * q->columns + column] - q->score_zp) * q->score_scale;
}

void tgr_detection_s8(const tgr_detection_params *q, const int8_t *encodings, const int8_t *scores,
                      const uint8_t *anchors, float *boxes_out, float *classes_out, float *scores_out,
                      float *count_out, uint8_t *scratch)
{
    const detection_scratch s = carve(q, scratch);
    uint32_t count = 0, i, c, k;
    memset(boxes_out, 0, 16u * q->max_detections);
    memset(classes_out, 0, 4u * q->max_detections);
    memset(scores_out, 0, 4u * q->max_detections);
    decode(q, encodings, anchors, s.decoded);
    if (!q->regular) {
        for (i = 0; i < q->boxes; ++i) {
            s.label[i] = 0;
            s.score[i] = score_of(q, scores, i, 0);
            for (c = 1; c < q->classes; ++c) {
                const float v = score_of(q, scores, i, c);
                if (v > s.score[i]) {
                    s.score[i] = v;
                    s.label[i] = c;
                }
            }
        }
        count = suppress(q, &s, q->max_detections);
        for (k = 0; k < count; ++k) {
            const uint32_t box = s.order[k];
            memcpy(boxes_out + 4u * k, s.decoded + 4u * box, 16u);
            classes_out[k] = (float)s.label[box];
            scores_out[k] = s.score[box];
        }
    } else {
        for (c = 0; c < q->classes; ++c) {
            uint32_t selected;
            for (i = 0; i < q->boxes; ++i) {
                s.score[i] = score_of(q, scores, i, c);
            }
            selected = suppress(q, &s, per_class_limit(q));
            for (k = 0; k < selected; ++k) { /* stable insertion after every equal score */
                uint32_t at = count++;
                const kept_detection d = {s.score[s.order[k]], s.order[k], c};
                while (at > 0u && s.kept[at - 1u].score < d.score) {
                    s.kept[at] = s.kept[at - 1u];
                    --at;
                }
                s.kept[at] = d;
            }
            if (count > q->max_detections) {
                count = q->max_detections;
            }
        }
        for (k = 0; k < count; ++k) {
            memcpy(boxes_out + 4u * k, s.decoded + 4u * s.kept[k].box, 16u);
            classes_out[k] = (float)s.kept[k].label;
            scores_out[k] = s.kept[k].score;
        }
    }
    *count_out = (float)count;
}
