/*
 * Schema 10 extensions, full support (load/extensions.h): the control-flow graph table
 * (SEC_SUBGRAPHS) and the state variables (SEC_STATE), bound and checked at load.
 */
#include "load/extensions.h"

/* ---- state variables (schema 10) --------------------------------------------------------- */

/* SEC_STATE's header and entries fit the section; what they say is checked with the tensors
 * (tgr_full_check_state). The header's buffer size may exceed what the variables take (the
 * reference accepts that): the session's state buffer is only what they take, so a header of
 * 4 GiB does not make a host allocate it. */
tgr_status tgr_full_bind_state(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err)
{
    const uint32_t len = end - start;
    uint32_t header_bytes, i;
    uint64_t need = 0u;
    if (len < 8u || rd_u16(p->data + start + 2u) != 0u) {
        return tgr_fail(err, TGR_ERR_RANGE, "state section header is invalid");
    }
    p->state = p->data + start;
    p->num_state = rd_u16(p->state);
    header_bytes = rd_u32(p->state + 4);
    if (header_bytes == 0u || 8u + STATE_ENTRY_SIZE * (uint32_t)p->num_state > len) {
        return tgr_fail(err, TGR_ERR_RANGE, "state section holds %u variables of %u bytes in %u bytes", p->num_state,
                        header_bytes, len);
    }
    for (i = 0; i < p->num_state; ++i) {
        need += ((uint64_t)state_size(p, i) + 3u) & ~(uint64_t)3u;
    }
    if (need > header_bytes) {
        return tgr_fail(err, TGR_ERR_RANGE, "state variables need %u bytes, the buffer has %u",
                        need > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)need, header_bytes);
    }
    p->state_bytes = (uint32_t)need;
    return TGR_OK;
}

/* Each variable: a STATE tensor holding the previous value and one holding the next (or none,
 * when no STATE tensor is left for it), alike in size and dtype, at the next 4-byte-aligned
 * offset of the state buffer, with its initial value inside the section; every STATE tensor is
 * one of them. */
tgr_status tgr_full_check_state(const tgr_plan *p, uint32_t section_len, tgr_error *err)
{
    uint32_t i, t, next = 0;
    for (i = 0; i < p->num_state; ++i) {
        uint32_t in = state_input(p, i), out = state_output(p, i), bytes = state_size(p, i);
        uint32_t initial = rd_u32(state_entry(p, i) + 12);
        if (in >= p->num_tensors || !(tensor_flags(p, in) & TF_STATE) ||
            (out != NONE16 && (out >= p->num_tensors || !(tensor_flags(p, out) & TF_STATE) ||
                               tensor_dtype(p, out) != tensor_dtype(p, in)))) {
            return tgr_fail(err, TGR_ERR_TENSOR, "state variable %u names tensors that are not its STATE tensors", i);
        }
        if (state_offset(p, i) != next || bytes != tensor_bytes(p, in) ||
            (out != NONE16 && tensor_bytes(p, out) != bytes) || initial > section_len || bytes > section_len - initial) {
            return tgr_fail(err, TGR_ERR_RANGE, "state variable %u offset, size or initial value is out of place", i);
        }
        next += (bytes + 3u) & ~3u;
    }
    for (t = 0; t < p->num_tensors; ++t) {
        int listed = 0;
        for (i = 0; i < p->num_state && !listed; ++i) {
            listed = state_input(p, i) == t || state_output(p, i) == t;
        }
        if (((tensor_flags(p, t) & TF_STATE) != 0u) != listed) {
            return tgr_fail(err, TGR_ERR_TENSOR, "tensor %u: the STATE flag disagrees with the state section", t);
        }
    }
    return TGR_OK;
}

/* ---- control-flow graphs (schema 10) ------------------------------------------------------- */

/* SEC_SUBGRAPHS: u16 count, u16 reserved, then 12-byte entries. Graph 0 is the main graph and
 * starts at stage 0; each graph is a non-empty stage range right after the one before, and the
 * ranges cover the stage table. Their input and output lists are index-pool runs of tensors. */
tgr_status tgr_full_bind_graphs(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err)
{
    const uint32_t len = end - start;
    uint32_t count, g, next = 0;
    if (len < 4u || rd_u16(p->data + start + 2u) != 0u) {
        return tgr_fail(err, TGR_ERR_RANGE, "subgraph table header is invalid");
    }
    count = rd_u16(p->data + start);
    if (count < 2u || 4u + GRAPH_ENTRY_SIZE * count > len) {
        return tgr_fail(err, TGR_ERR_RANGE, "subgraph table holds %u graphs in %u bytes", count, len);
    }
    p->graphs = p->data + start + 4u;
    p->num_graphs = (uint16_t)count;
    for (g = 0; g < count; ++g) {
        uint32_t first = graph_field(p, g, 0), n = graph_field(p, g, 1), side, i;
        if (first != next || n == 0u || first + n > p->num_stages) {
            return tgr_fail(err, TGR_ERR_STAGE, "graph %u stage range [%u, %u) is not the next of the stage table", g,
                            first, first + n);
        }
        next = first + n;
        for (side = 0; side < 2u; ++side) {
            uint32_t off = graph_field(p, g, 2u + 2u * side), items = graph_field(p, g, 3u + 2u * side);
            if (off + items > p->index_pool_count) {
                return tgr_fail(err, TGR_ERR_RANGE, "graph %u tensor list outside the index pool", g);
            }
            for (i = 0; i < items; ++i) {
                if (pool_index(p, off + i) >= p->num_tensors) {
                    return tgr_fail(err, TGR_ERR_RANGE, "graph %u lists tensor %u of %u", g, pool_index(p, off + i),
                                    p->num_tensors);
                }
            }
        }
    }
    if (next != p->num_stages) {
        return tgr_fail(err, TGR_ERR_STAGE, "stages %u..%u belong to no graph", next, p->num_stages - 1u);
    }
    return TGR_OK;
}
