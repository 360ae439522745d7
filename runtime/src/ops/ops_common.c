/*
 * What every op family shares: the checks and messages that refuse an op the same way whichever
 * family it belongs to, and the band rule of the ops that work element by element.
 */
#include "ops/ops.h"

int tgr_valid_pair(int32_t multiplier, int32_t shift)
{
    return (multiplier == 0 || multiplier >= 0x40000000) && shift >= -31 && shift <= 31;
}

tgr_status tgr_check_rescale(const tgr_plan *p, uint32_t o, uint32_t in, uint32_t out, tgr_error *err)
{
    double ratio = (double)tgr_qparams_of(p, in).scale / (double)tgr_qparams_of(p, out).scale;
    if (!(ratio < TGR_MAX_RESCALE)) {
        return tgr_fail(err, TGR_ERR_QUANT, "op %u (%s): scale ratio of tensor %u to tensor %u is 2^23 or more", o,
                        tgr_op_name(op_type(p, o)), in, out);
    }
    return TGR_OK;
}

#if TGR_MESSAGES
tgr_status tgr_bad_op(tgr_error *err, const tgr_plan *p, uint32_t o, const char *what)
{
    return tgr_fail(err, TGR_ERR_OP, "op %u (%s): %s", o, tgr_op_name(op_type(p, o)), what);
}

tgr_status tgr_unsupported_op(tgr_error *err, const tgr_plan *p, uint32_t o, const char *what)
{
    return tgr_fail(err, TGR_ERR_UNSUPPORTED, "op %u (%s): %s is not supported by this runtime", o,
                    tgr_op_name(op_type(p, o)), what);
}
#endif

int tgr_neutral_activation(const op_spatial *sp)
{
    return sp->fused_act == ACT_NONE && sp->act_min == -128 && sp->act_max == 127;
}

const char *tgr_band_any_axis(const tgr_plan *p, uint32_t o, uint32_t axis)
{
    /* An element's result depends only on the elements at its own position, so a band of the
     * output needs exactly the same band of every input, whichever axis cuts it. */
    (void)p;
    (void)o;
    (void)axis;
    return NULL;
}
