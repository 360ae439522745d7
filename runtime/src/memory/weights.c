/*
 * LZ4-compressed weight blocks (`tigris compile -c lz4`, docs/plan-format.md#lz4-weight-blocks):
 * one block per stage that owns weights, decompressed into the fast arena when its execution unit starts and
 * released when the unit ends. Weight entries then hold offsets into their stage's block.
 *
 * Uncompressed plans need none of this: their weights are read in place from the plan (XIP), and
 * a firmware whose plan has no blocks links weights_plain.c instead (weights.h).
 */
#include "memory/weights.h"

#include "base/lz4.h"
#include "memory/pools.h"

#define BLOCK_ENTRY(p, b) ((p)->block_entries + (b) * BLOCK_ENTRY_SIZE)

static uint32_t block_stage(const tgr_plan *p, uint32_t b) { return rd_u16(BLOCK_ENTRY(p, b)); }
static uint32_t block_offset(const tgr_plan *p, uint32_t b) { return rd_u32(BLOCK_ENTRY(p, b) + 8); }
static uint32_t block_packed(const tgr_plan *p, uint32_t b) { return rd_u32(BLOCK_ENTRY(p, b) + 12); }
static uint32_t block_unpacked(const tgr_plan *p, uint32_t b) { return rd_u32(BLOCK_ENTRY(p, b) + 16); }

tgr_status tgr_lz4_bind_weight_blocks(tgr_plan *p, uint32_t start, uint32_t end, tgr_error *err)
{
    uint32_t b;
    if (end - start < 4u) {
        return tgr_fail(err, TGR_ERR_SECTION, "weight block section too small for its header");
    }
    p->num_blocks = rd_u16(p->data + start);
    if (rd_u16(p->data + start + 2) != 1u) {
        return tgr_fail(err, TGR_ERR_UNSUPPORTED, "weight compression type %u is not supported (only LZ4, 1)",
                        rd_u16(p->data + start + 2));
    }
    if ((uint64_t)4u + (uint64_t)BLOCK_ENTRY_SIZE * p->num_blocks > end - start) {
        return tgr_fail(err, TGR_ERR_SECTION, "section offset out of bounds: weight block entries");
    }
    /* With the section present the weights live in its blocks only: there is no blob to fall
     * back on, so a section without blocks would leave every weight pointing nowhere. */
    if (p->num_blocks == 0u) {
        return tgr_fail(err, TGR_ERR_WEIGHT, "weight block section lists no blocks");
    }
    p->block_entries = p->data + start + 4u;
    p->block_blobs = p->block_entries + BLOCK_ENTRY_SIZE * p->num_blocks;
    p->block_blobs_len = end - (start + 4u + BLOCK_ENTRY_SIZE * p->num_blocks);
    for (b = 0; b < p->num_blocks; ++b) {
        uint32_t offset = block_offset(p, b);
        uint32_t packed = block_packed(p, b);
        /* The reference reads a block's weight range too: at least one weight, inside the table. */
        if (rd_u16(BLOCK_ENTRY(p, b) + 4) == 0u ||
            (uint32_t)rd_u16(BLOCK_ENTRY(p, b) + 2) + rd_u16(BLOCK_ENTRY(p, b) + 4) > p->num_weights) {
            return tgr_fail(err, TGR_ERR_WEIGHT, "weight block %u names weights %u..+%u of %u", b,
                            rd_u16(BLOCK_ENTRY(p, b) + 2), rd_u16(BLOCK_ENTRY(p, b) + 4), p->num_weights);
        }
        if (block_stage(p, b) >= p->num_stages || (b > 0u && block_stage(p, b) <= block_stage(p, b - 1u))) {
            return tgr_fail(err, TGR_ERR_WEIGHT, "weight block %u names stage %u out of order or range", b,
                            block_stage(p, b));
        }
        if ((uint64_t)offset + packed > p->block_blobs_len || block_unpacked(p, b) == 0u) {
            return tgr_fail(err, TGR_ERR_WEIGHT, "weight block %u lies outside its section", b);
        }
        if (block_unpacked(p, b) > 0x7FFFFFFFu) {
            return tgr_fail(err, TGR_ERR_LIMIT, "plan exceeds executor limits: weight block %u of %u bytes", b,
                            block_unpacked(p, b));
        }
        if (!tgr_lz4_decode(p->block_blobs + offset, packed, NULL, block_unpacked(p, b))) {
            return tgr_fail(err, TGR_ERR_WEIGHT, "weight block %u is not an LZ4 block of %u bytes", b,
                            block_unpacked(p, b));
        }
    }
    return TGR_OK;
}

static int32_t block_of_stage(const tgr_plan *p, uint32_t stage)
{
    uint32_t b;
    for (b = 0; b < p->num_blocks; ++b) {
        if (block_stage(p, b) == stage) {
            return (int32_t)b;
        }
    }
    return -1;
}

uint32_t tgr_lz4_stage_weight_bytes(const tgr_plan *p, uint32_t stage)
{
    int32_t b = block_of_stage(p, stage);
    return b < 0 ? 0u : align_up(block_unpacked(p, (uint32_t)b), TGR_TENSOR_ALIGN);
}

static uint32_t stage_of_op(const tgr_plan *p, uint32_t op)
{
    uint32_t s = 0;
    while (s + 1u < p->num_stages && stage_op(p, s + 1u, 0) <= op) {
        ++s;
    }
    return s;
}

static tgr_status check_operand(const tgr_plan *p, uint32_t op, uint32_t w, tgr_error *err)
{
    int32_t b = block_of_stage(p, stage_of_op(p, op));
    if (w == NONE16 || p->num_blocks == 0u) {
        return TGR_OK;
    }
    if (b < 0 || weight_offset(p, w) % 4u != 0u ||
        (uint64_t)weight_offset(p, w) + weight_size(p, w) > block_unpacked(p, (uint32_t)b)) {
        return tgr_fail(err, TGR_ERR_WEIGHT, "op %u weight %u is not inside its stage's weight block", op, w);
    }
    return TGR_OK;
}

tgr_status tgr_lz4_check_weight_blocks(tgr_plan *p, tgr_error *err)
{
    uint32_t o, s;
    op_spatial sp;
    p->weight_reserve = 0u;
    for (o = 0; o < p->num_ops; ++o) {
        tgr_status st;
        op_decode(p, o, &sp);
        st = check_operand(p, o, sp.weight_idx, err);
        if (st == TGR_OK) {
            st = check_operand(p, o, sp.bias_idx, err);
        }
        if (st != TGR_OK) {
            return st;
        }
    }
    /* The fast arena must also hold the largest unit's blocks: a stage's own, or a chain's.
     * Summed in 64 bits: tgr_fast_arena_required() adds the reserve to the budget. */
    for (s = 0; s < p->num_stages; ++s) {
        uint64_t need = tgr_lz4_stage_weight_bytes(p, s);
        if (stage_chain_id(p, s) == s) {
            uint32_t m;
            for (m = s + 1u; m < s + stage_chain_len(p, s) && m < p->num_stages; ++m) {
                need += tgr_lz4_stage_weight_bytes(p, m);
            }
        }
        if (need + p->budget > 0xFFFFFFFFu) {
            return tgr_fail(err, TGR_ERR_LIMIT, "plan exceeds executor limits: budget and weight blocks of stage %u "
                            "exceed 4 GiB", s);
        }
        p->weight_reserve = need > p->weight_reserve ? (uint32_t)need : p->weight_reserve;
    }
    return TGR_OK;
}

tgr_status tgr_lz4_unpack_stage_weights(tgr_session *s, uint32_t stage, const uint8_t **base, tgr_error *err)
{
    const tgr_plan *p = s->plan;
    int32_t b = block_of_stage(p, stage);
    int32_t offset;
    *base = p->weight_blob;
    if (b < 0) {
        return TGR_OK;
    }
    offset = tgr_reserve_fast(s, block_unpacked(p, (uint32_t)b), s->fast.size, stage);
    if (offset < 0) {
        return tgr_fail(err, TGR_ERR_ARENA, "stage %u: its %u weight bytes do not fit the fast arena", stage,
                        block_unpacked(p, (uint32_t)b));
    }
    if (!tgr_lz4_decode(p->block_blobs + block_offset(p, (uint32_t)b), block_packed(p, (uint32_t)b),
                        s->fast.base + offset, block_unpacked(p, (uint32_t)b))) {
        return tgr_fail(err, TGR_ERR_EXEC, "weight block of stage %u failed to decompress", stage);
    }
    s->counters.weight_bytes += block_unpacked(p, (uint32_t)b);
    tgr_emit(s, TGR_EV_WEIGHTS, TGR_POOL_FAST, stage, NONE16, NONE16, (uint32_t)offset, block_packed(p, (uint32_t)b),
             block_unpacked(p, (uint32_t)b));
    *base = s->fast.base + offset;
    return TGR_OK;
}
