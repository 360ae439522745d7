/*
 * Movement family. Ops are added to this file's table as their kernels land; until then it
 * knows no opcode and the loader refuses those ops by name.
 */
#include "ops.h"

const tgr_op_impl *tgr_ops_movement(uint32_t opcode)
{
    (void)opcode;
    return NULL;
}
