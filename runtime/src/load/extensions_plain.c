/*
 * Schema 10 extensions left out (load/extensions.h): what a firmware whose plan has neither
 * control flow nor state variables links. A plan with them is refused at load, naming what is
 * not built in.
 */
#include "load/extensions.h"

tgr_status tgr_plain_bind_graphs(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err)
{
    (void)p;
    (void)start;
    (void)end;
    return tgr_fail(err, TGR_ERR_UNSUPPORTED, "the plan's control-flow subgraphs are not built into this firmware");
}

tgr_status tgr_plain_bind_state(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err)
{
    (void)p;
    (void)start;
    (void)end;
    return tgr_fail(err, TGR_ERR_UNSUPPORTED, "the plan's state variables are not built into this firmware");
}

tgr_status tgr_plain_check_state(const tgr_plan *p, uint32_t section_len, tgr_error *err)
{
    uint32_t t;
    (void)section_len;
    for (t = 0; t < p->num_tensors; ++t) {
        if (tensor_flags(p, t) & TF_STATE) {
            return tgr_fail(err, TGR_ERR_TENSOR, "tensor %u: the STATE flag disagrees with the state section", t);
        }
    }
    return TGR_OK;
}
