/*
 * Weights read in place only (weights.h): what a firmware whose plan has no LZ4-compressed blocks
 * links instead of weights.c and the decoder. Its loader refuses a plan that has blocks.
 */
#include "memory/weights.h"

tgr_status tgr_plain_bind_weight_blocks(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err)
{
    (void)p;
    (void)start;
    (void)end;
    return tgr_fail(err, TGR_ERR_UNSUPPORTED,
                    "the plan's weights are LZ4-compressed and the LZ4 decoder is not built into this firmware");
}

tgr_status tgr_plain_check_weight_blocks(tgr_plan *p, tgr_error *err)
{
    (void)err;
    p->weight_reserve = 0u; /* no blocks: nothing to decompress into the fast arena */
    return TGR_OK;
}

uint32_t tgr_plain_stage_weight_bytes(const tgr_plan *p, uint32_t stage)
{
    (void)p;
    (void)stage;
    return 0u;
}

tgr_status tgr_plain_unpack_stage_weights(tgr_session *s, uint32_t stage, const uint8_t **base, tgr_error *err)
{
    (void)stage;
    (void)err;
    *base = s->plan->weight_blob;
    return TGR_OK;
}
