// The NPU's float precision plan: which float graph values the NPU keeps in fp32 and which in
// fp16 (docs/architecture.md, "Numerics").
//
// The cube takes fp16 operands (core.cube.input_dtype) and the vector unit computes fp16 and fp32
// alike, an fp32 element costing twice an fp16 one (the vector unit moves core.vector.width_bytes
// per cycle: 128 fp16 or 64 fp32 lanes on a 256-byte unit; DaVinci's "2048bit INT8/FP16/FP32
// vector", Hot Chips 31). The plan is the rule of CANN's `allow_fp32_to_fp16` precision mode
// (ATC --precision_mode: cube operators take float16, vector operators keep the original float32
// where they support it): a value whose source is fp32 stays fp32 through the vector kernels
// until a cube kernel, whose operands are fp16 and whose output is fp16 (as today); a vector
// kernel that reads only fp16 values computes in fp16 (so a CNN's chain after its first
// convolution is unchanged). float64 sources are computed in fp32 (the NPU's widest float).
#pragma once

#include <map>
#include <string>

#include "compiler/ir/graph.h"

namespace tessel::npu_backend {

/// True when `node` runs on the cube (Conv, ConvTranspose, MatMul, Gemm, and the int8 ops of
/// int8_ops.h): its float operands and its output are in the activation dtype (fp16 by default).
bool is_cube_node(const Node& node);

/// The storage dtype (DType::f16 or DType::f32) of every float value of `graph` that the NPU
/// keeps in GM, by value name, for activation dtype `act` (the cube input dtype):
///   - act == f32: every float value is f32.
///   - a float graph input is f32 when it is float64 or some consumer, directly or through
///     views, is not a cube node (a vector kernel reads it); an input only cube nodes read stays
///     f16 (packed by the host as before the plan);
///   - the output of a cube node is f16;
///   - the output of a view (Reshape, Squeeze, ...) has its input's storage;
///   - the output of a node marked graph_passes::kNpuFp32Attr (fp16_range: it reaches 2^15 on
///     calibration data) is f32;
///   - the output of any other node is f32 when one of its non-constant float inputs is f32,
///     f16 when all of them are f16, and f32 when it has none (a Gather from a constant table, a
///     Cast from int: the source is fp32); a value the model types float16 is f16;
///   - a float constant is f32 when every float node reading it computes in f32, else f16 (the
///     backend stores a copy per dtype that its readers need; this entry is what the tolerance
///     model rounds it to).
/// A node's compute dtype (node_compute_dtype) is the dtype its kernel runs in; an input stored
/// in the other dtype is converted by a vconv kernel before it (compile.cpp).
std::map<std::string, DType> float_storage_plan(const Graph& graph, DType act);

/// The dtype the kernel of `node` computes its float values in under `plan` (f16 or f32): a
/// cube node's, and a node's with a float16-typed output, is the activation dtype; a node marked
/// graph_passes::kNpuFp32Attr computes in f32; otherwise
/// f32 when one of its non-constant float inputs is stored f32 or it has none, f16 when all of
/// them are f16.
DType node_compute_dtype(const Node& node, const std::map<std::string, DType>& plan, DType act);

}  // namespace tessel::npu_backend
