/*
 * The operator contract of plan schemas 2-10: names, runtime-tensor input/output counts,
 * whether a weight/bias operand is required, and which attribute kinds an op may carry.
 * These are facts of the wire format (tigris-ml 0.12.1 operator contract); whether this
 * runtime has a kernel for an op is decided separately by the kernel validators.
 */
#include "plan/optable.h"

#define OP_CONTRACTS(X) \
    X(1, "Conv", 1, 1, 1, 1, 2, 1, 0x00000u, 0x00000u)                                                      \
    X(2, "DepthwiseConv", 1, 1, 1, 1, 2, 1, 0x00000u, 0x00000u)                                             \
    X(3, "Relu", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                      \
    X(4, "Relu6", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                     \
    X(5, "MaxPool", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                   \
    X(6, "AveragePool", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                               \
    X(7, "Add", 1, 2, 1, 1, 1, 0, 0x00280u, 0x00000u)                                                       \
    X(8, "Mul", 1, 2, 1, 1, 1, 0, 0x00200u, 0x00000u)                                                       \
    X(9, "Gemm", 1, 1, 1, 1, 2, 1, 0x00000u, 0x00000u)                                                      \
    X(10, "Softmax", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                  \
    X(11, "Clip", 1, 1, 1, 1, 0, 0, 0x00010u, 0x00000u)                                                     \
    X(12, "Sigmoid", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                  \
    X(13, "Concat", 1, 255, 1, 1, 1, 0, 0x00000u, 0x00000u)                                                 \
    X(14, "Pad", 1, 1, 1, 1, 1, 0, 0x00020u, 0x00000u)                                                      \
    X(15, "GlobalAveragePool", 1, 1, 1, 1, 0, 0, 0x00100u, 0x00000u)                                        \
    X(16, "Flatten", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                  \
    X(17, "Reshape", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                  \
    X(18, "Sub", 1, 2, 1, 1, 1, 0, 0x00280u, 0x00000u)                                                      \
    X(19, "Div", 1, 2, 1, 1, 1, 0, 0x00200u, 0x00000u)                                                      \
    X(20, "Tanh", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                     \
    X(21, "LeakyRelu", 1, 1, 1, 1, 0, 0, 0x00008u, 0x00000u)                                                \
    X(22, "BatchNormalization", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                       \
    X(23, "InstanceNormalization", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                    \
    X(24, "ConvTranspose", 1, 1, 1, 1, 2, 1, 0x00000u, 0x00000u)                                            \
    X(25, "MatMul", 2, 2, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                   \
    X(26, "ReduceMean", 1, 1, 1, 1, 0, 0, 0x00040u, 0x00040u)                                               \
    X(27, "Squeeze", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                  \
    X(28, "Unsqueeze", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                \
    X(29, "Transpose", 1, 1, 1, 1, 0, 0, 0x00002u, 0x00002u)                                                \
    X(30, "Resize", 1, 1, 1, 1, 0, 0, 0x00400u, 0x00000u)                                                   \
    X(31, "GlobalMaxPool", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                            \
    X(32, "Conv1D", 1, 1, 1, 1, 2, 1, 0x00000u, 0x00000u)                                                   \
    X(33, "LayerNormalization", 1, 1, 1, 1, 2, 1, 0x00004u, 0x00004u)                                       \
    X(34, "Erf", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                      \
    /* The contract says "none", but the writer stores the split sizes here (as float32). */                \
    X(35, "Split", 1, 1, 2, 255, 1, 0, 0x00000u, 0x00000u)                                                  \
    X(36, "ResizeLinear", 1, 1, 1, 1, 0, 0, 0x00400u, 0x00000u)                                             \
    X(37, "HardSwish", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                \
    X(38, "Abs", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                      \
    X(39, "Rsqrt", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                    \
    X(40, "SquaredDifference", 1, 2, 1, 1, 1, 0, 0x00200u, 0x00000u)                                        \
    X(41, "Max", 1, 2, 1, 1, 1, 0, 0x00200u, 0x00000u)                                                      \
    X(42, "Min", 1, 2, 1, 1, 1, 0, 0x00200u, 0x00000u)                                                      \
    X(43, "Neg", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                      \
    X(44, "Exp", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                      \
    X(45, "Log", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                      \
    X(46, "Sqrt", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                     \
    X(47, "Square", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                   \
    X(48, "Floor", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                    \
    X(49, "Ceil", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                     \
    X(50, "Round", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                    \
    X(51, "Sin", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                      \
    X(52, "Cos", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                      \
    X(53, "FloorDiv", 1, 2, 1, 1, 1, 0, 0x00200u, 0x00000u)                                                 \
    X(54, "FloorMod", 1, 2, 1, 1, 1, 0, 0x00200u, 0x00000u)                                                 \
    X(55, "PRelu", 1, 2, 1, 1, 1, 0, 0x00200u, 0x00000u)                                                    \
    X(56, "Elu", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                      \
    X(57, "LogSoftmax", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                               \
    X(58, "L2Normalization", 1, 1, 1, 1, 0, 0, 0x00004u, 0x00004u)                                          \
    X(59, "L2Pool", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                   \
    X(60, "ReduceMax", 1, 1, 1, 1, 0, 0, 0x00040u, 0x00040u)                                                \
    X(61, "ReduceMin", 1, 1, 1, 1, 0, 0, 0x00040u, 0x00040u)                                                \
    X(62, "ReduceSum", 1, 1, 1, 1, 0, 0, 0x00040u, 0x00040u)                                                \
    X(63, "CumSum", 1, 1, 1, 1, 0, 0, 0x00840u, 0x00840u)                                                   \
    X(64, "ArgMax", 1, 1, 1, 1, 0, 0, 0x00040u, 0x00040u)                                                   \
    X(65, "ArgMin", 1, 1, 1, 1, 0, 0, 0x00040u, 0x00040u)                                                   \
    X(66, "Gather", 0, 2, 1, 1, 1, 0, 0x101000u, 0x00000u)                                                  \
    X(67, "GatherND", 0, 2, 1, 1, 1, 0, 0x101000u, 0x00000u) /* indices constant: the reference loads it */ \
    X(68, "StridedSlice", 1, 1, 1, 1, 0, 0, 0x01000u, 0x00000u)                                             \
    X(69, "MirrorPad", 1, 1, 1, 1, 0, 0, 0x01000u, 0x00000u)                                                \
    X(70, "ReverseV2", 1, 1, 1, 1, 0, 0, 0x01000u, 0x00000u)                                                \
    X(71, "EmbeddingLookup", 0, 2, 1, 1, 0, 0, 0x101000u, 0x00000u)                                         \
    X(72, "DynamicUpdateSlice", 1, 3, 1, 1, 1, 0, 0x01000u, 0x00000u)                                       \
    X(73, "Equal", 1, 2, 1, 1, 1, 0, 0x02200u, 0x00000u)                                                    \
    X(74, "Less", 1, 2, 1, 1, 1, 0, 0x02200u, 0x00000u)                                                     \
    X(75, "LessOrEqual", 1, 2, 1, 1, 1, 0, 0x02200u, 0x00000u)                                              \
    X(76, "Greater", 1, 2, 1, 1, 1, 0, 0x02200u, 0x00000u)                                                  \
    X(77, "GreaterOrEqual", 1, 2, 1, 1, 1, 0, 0x02200u, 0x00000u)                                           \
    X(78, "And", 1, 2, 1, 1, 1, 0, 0x00200u, 0x00000u)                                                      \
    X(79, "Or", 1, 2, 1, 1, 1, 0, 0x00200u, 0x00000u)                                                       \
    X(80, "Not", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                      \
    X(81, "Where", 2, 3, 1, 1, 1, 0, 0x00200u, 0x00000u)                                                    \
    X(82, "Cast", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                     \
    X(83, "Sum", 1, 255, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                    \
    X(84, "ReduceAll", 1, 1, 1, 1, 0, 0, 0x00040u, 0x00040u)                                                \
    X(85, "Svdf", 2, 2, 2, 2, 3, 3, 0x0c000u, 0x00000u)                                                     \
    X(86, "Lstm", 3, 3, 3, 3, 3, 3, 0x14000u, 0x00000u)                                                     \
    X(87, "If", 1, 255, 1, 255, 0, 0, 0x20000u, 0x00000u)                                                   \
    X(88, "While", 1, 255, 1, 255, 3, 3, 0x24000u, 0x00000u)                                                \
    X(89, "DetectionPostProcess", 2, 2, 5, 5, 3, 3, 0x44000u, 0x00000u)                                     \
    X(90, "Quantize", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                                 \
    X(91, "Dequantize", 1, 1, 1, 1, 0, 0, 0x00000u, 0x00000u)                                               \
    X(92, "Gelu", 1, 1, 1, 1, 0, 0, 0x80000u, 0x00000u)

/* 12 bytes an entry: the required kinds all fit in 16 bits (checked below). */
#define CONTRACT(code, name, in_min, in_max, out_min, out_max, weight, bias, allowed, required) \
    [code] = {in_min, in_max, out_min, out_max, weight, bias, (uint16_t)(required), allowed},
#define REQUIRED_FITS(code, name, in_min, in_max, out_min, out_max, weight, bias, allowed, required) \
    typedef char required_kinds_fit_##code[(required) <= 0xFFFFu ? 1 : -1];
OP_CONTRACTS(REQUIRED_FITS)
const tgr_op_contract tgr_op_contracts[OP_MAX_CODE + 1] = {OP_CONTRACTS(CONTRACT)};

/* Names only for messages: a messages=0 build never references this table. */
#define NAME(code, name, ...) [code] = name,
static const char *const op_names[OP_MAX_CODE + 1] = {OP_CONTRACTS(NAME)};

const char *tgr_op_name(uint32_t opcode)
{
    if (opcode == 0u || opcode > OP_MAX_CODE) {
        return "unknown";
    }
    return op_names[opcode] != NULL ? op_names[opcode] : "unknown";
}
