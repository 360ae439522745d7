/*
 * Plan lookups that need a loop: an op's attribute payload, and how much fast memory a stage
 * may use. Everything above this layer reads the plan through here and plan.h.
 */
#include "plan/plan.h"

const uint8_t *tgr_attr_find(const tgr_plan *p, uint32_t op, uint32_t kind, uint32_t *len)
{
    uint32_t a;
    for (a = 0; a < p->num_attrs; ++a) {
        const uint8_t *e = p->attr_entries + a * ATTR_ENTRY_SIZE;
        if (rd_u16(e) == op && e[2] == kind) {
            if (len != NULL) {
                *len = e[3];
            }
            return p->attr_data + rd_u32(e + 4);
        }
    }
    return NULL;
}

static uint32_t boundary_bytes(const tgr_plan *p, uint32_t s)
{
    uint32_t i, total = 0;
    for (i = 0; i < stage_in_count(p, s); ++i) {
        total += tensor_bytes(p, stage_input(p, s, i));
    }
    for (i = 0; i < stage_out_count(p, s); ++i) {
        total += tensor_bytes(p, stage_output(p, s, i));
    }
    return total;
}

uint32_t tgr_stage_fast_limit(const tgr_plan *p, uint32_t stage, uint32_t available)
{
    uint32_t limit = stage_peak(p, stage);
    const uint8_t *r;
    if (p->version <= 3u) {
        return available;
    }
    r = stage_tile_rec(p, stage);
    if (r != NULL && r[0] != 0u) {
        limit = rd_u32(r + (p->version >= 10u ? 28u : 12u));
    }
    return (limit == 0u || limit > available) ? available : limit;
}

int tgr_stage_needs_tiling(const tgr_plan *p, uint32_t stage, uint32_t limit)
{
    return boundary_bytes(p, stage) > limit;
}
