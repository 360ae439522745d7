/* Operator contract table (see optable.c). */
#ifndef TGR_OPTABLE_H
#define TGR_OPTABLE_H

#include "plan/plan.h"

enum { OPERAND_NONE = 0, OPERAND_OPTIONAL = 1, OPERAND_REQUIRED = 2, OPERAND_SPECIFIC = 3 };

typedef struct tgr_op_contract {
    uint8_t inputs_min, inputs_max, outputs_min, outputs_max;
    uint8_t weight, bias;          /* OPERAND_* */
    uint16_t attrs_required;       /* bit k set: attribute kind k must appear (kinds 0..15 only) */
    uint32_t attrs_allowed;        /* bit k set: attribute kind k may appear */
} tgr_op_contract;

extern const tgr_op_contract tgr_op_contracts[OP_MAX_CODE + 1];

#endif
