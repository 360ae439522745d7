/*
 * The plan binder: fills a tgr_plan from a plan tgr_plan_load accepted before, byte for byte,
 * without validating it again (tgr.h). A firmware built with `validate=digest` calls it after
 * checking the plan's digest against the plan the build validated with the same loader on the
 * host, so it links none of the loader's checks. It computes every field exactly as the loader
 * does; tests/runtime/test_binder.py compares the two on every plan the loader accepts.
 */
#include "memory/weights.h"

/* Where each present section starts and ends: the loader's directory walk without its checks. */
static void locate_sections(const uint8_t *d, uint32_t size, uint32_t *start, uint32_t *end)
{
    uint32_t off = rd_u32(d + 12);
    uint32_t k, j;
    for (k = 0; k <= SEC_COUNT; ++k) {
        start[k] = end[k] = 0u;
    }
    for (; rd_u32(d + off) != 0u; off += 8u) {
        start[rd_u32(d + off)] = rd_u32(d + off + 4);
        end[rd_u32(d + off)] = size;
    }
    for (k = 1; k <= SEC_COUNT; ++k) {
        for (j = 1; j <= SEC_COUNT; ++j) {
            if (end[k] != 0u && end[j] != 0u && start[j] > start[k] && start[j] < end[k]) {
                end[k] = start[j];
            }
        }
    }
}

tgr_status tgr_plan_bind(tgr_plan *plan, const void *data, uint32_t size, tgr_error *err)
{
    const uint8_t *d = (const uint8_t *)data;
    uint32_t start[SEC_COUNT + 1], end[SEC_COUNT + 1];
    tgr_plan p;
    tgr_status st = TGR_OK;
    uint32_t k;
    memset(&p, 0, sizeof p);
    p.data = d;
    p.size = size;
    p.version = rd_u32(d + 4);
    p.num_tensors = rd_u16(d + 16);
    p.num_ops = rd_u16(d + 18);
    p.num_stages = rd_u16(d + 20);
    p.num_tile_plans = rd_u16(d + 22);
    p.budget = rd_u32(d + 24);
    p.model_io_off = rd_u16(d + 36);
    p.num_inputs = d[38];
    p.num_outputs = d[39];
    p.num_weights = rd_u16(d + 40);
    p.num_quant = rd_u16(d + 42);
    p.flags = rd_u32(d + 44);
    p.is_int8 = 1u; /* the loader accepts int8 plans only */
    locate_sections(d, size, start, end);
    p.tensors = d + start[SEC_TENSORS];
    p.ops = d + start[SEC_OPS];
    p.stages = d + start[SEC_STAGES];
    p.tile_plans = end[SEC_TILE_PLANS] != 0u ? d + start[SEC_TILE_PLANS] : NULL;
    p.index_pool = d + start[SEC_INDEX_POOL];
    p.index_pool_count = (end[SEC_INDEX_POOL] - start[SEC_INDEX_POOL]) / 2u;
    p.shape_pool = d + start[SEC_SHAPE_POOL];
    p.shape_pool_count = (end[SEC_SHAPE_POOL] - start[SEC_SHAPE_POOL]) / 4u;
    p.strings = (const char *)(d + start[SEC_STRINGS]);
    p.strings_len = end[SEC_STRINGS] - start[SEC_STRINGS];
    if (end[SEC_QUANT_PARAMS] != 0u) {
        uint32_t first = start[SEC_QUANT_PARAMS] + 4u;
        p.quant_entries = d + first;
        p.quant_data = p.quant_entries + QUANT_ENTRY_SIZE * p.num_quant;
        p.quant_data_count = p.version >= 3u ? (end[SEC_QUANT_PARAMS] - (first + QUANT_ENTRY_SIZE * p.num_quant)) / 4u
                                             : rd_u16(d + start[SEC_QUANT_PARAMS] + 2);
    }
    if (p.num_weights > 0u) {
        p.weight_entries = d + start[SEC_WEIGHTS];
        if (end[SEC_WEIGHT_BLOCKS] != 0u) {
            st = tgr_bind_weight_blocks(&p, start[SEC_WEIGHT_BLOCKS], end[SEC_WEIGHT_BLOCKS], err);
        } else {
            p.weight_blob = p.weight_entries + WEIGHT_ENTRY_SIZE * p.num_weights;
            p.weight_blob_len = end[SEC_WEIGHTS] - (start[SEC_WEIGHTS] + WEIGHT_ENTRY_SIZE * p.num_weights);
        }
    }
    if (end[SEC_OP_ATTRIBUTES] != 0u) {
        p.num_attrs = rd_u16(d + start[SEC_OP_ATTRIBUTES]);
        p.attr_entries = d + start[SEC_OP_ATTRIBUTES] + 4u;
        p.attr_data = p.attr_entries + ATTR_ENTRY_SIZE * p.num_attrs;
        p.attr_data_len = end[SEC_OP_ATTRIBUTES] - (start[SEC_OP_ATTRIBUTES] + 4u + ATTR_ENTRY_SIZE * p.num_attrs);
    }
    if (end[SEC_STATE] != 0u) {
        p.state = d + start[SEC_STATE];
        p.num_state = rd_u16(p.state);
        p.state_bytes = 0u; /* what the variables take, as the loader binds it */
        for (k = 0; k < p.num_state; ++k) {
            p.state_bytes += (state_size(&p, k) + 3u) & ~3u;
        }
    }
    if (end[SEC_SUBGRAPHS] != 0u) {
        p.graphs = d + start[SEC_SUBGRAPHS] + 4u;
        p.num_graphs = rd_u16(d + start[SEC_SUBGRAPHS]);
    }
    if (st == TGR_OK) {
        st = tgr_check_weight_blocks(&p, err); /* sets the decompressed-weight reserve */
    }
    if (st == TGR_OK) {
        *plan = p;
    }
    return st;
}
