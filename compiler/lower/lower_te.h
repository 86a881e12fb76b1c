// Generic lowering of a tensor expression (compiler/te) to a naive loop-IR nest: one perfect loop
// nest per compute stage over plain buffers, scalar Store statements, no tiling. This is the
// starting point of target schedules that work on loops rather than on the TE (the CPU backend's
// passes in passes/loop/cpu_*.cpp) and a readable statement of what a kernel computes.
//
// For a stage t[i0..in] = body (element stage) the nest is
//   for i0 .. for in: t[i0..in] = body'
// and for a reduction t[i] = combine_{r}(source) (sum / max / min, compiler/loop/expr.h)
//   for i0 .. for in: { t[i] = identity; for r0 .. for rk: t[i] = combine(t[i], source') }
// where body' / source' read buffers (Load) in place of tensors (TensorRead), padding preserved.
// Axes of extent 1 get no loop (the variable is replaced by 0). Stages run in TE post order
// (producers first); stages other than the output get a dense row-major temporary of the stage's
// dtype in `temp_scope`, allocated around the statements that use it. A stage whose dtype differs
// from its body's value type (a conversion: ONNX Cast on a typed target) is never inlined: the
// store into its temporary is where the values are converted.
#pragma once

#include <map>
#include <string>

#include "compiler/loop/loop.h"
#include "compiler/te/te.h"

namespace tessel::lower {

struct LowerTeOptions {
  /// Scope of the temporaries that hold intermediate stages.
  loop::MemScope temp_scope = loop::MemScope::host;
  /// Inline element stages (no reduction, no tag) that are read by exactly one other stage into
  /// that reader (TVM's compute_inline): no temporary, no extra pass over memory. A padded read of
  /// an inlined stage becomes select(in_bounds, value, pad).
  bool inline_elementwise = true;
};

/// The buffer of every placeholder `out` reads and of `out` itself (any scope, views allowed).
using TensorBuffers = std::map<const te::TensorNode*, loop::Buffer>;

/// Lowers the TE DAG ending in `out` to a loop nest (see the file comment). Throws
/// tessel::InternalError when a placeholder or `out` has no buffer in `bound`.
loop::Stmt lower_te(const te::Tensor& out, const TensorBuffers& bound,
                    const LowerTeOptions& options = {});

/// `e` with every TensorRead of a tensor in `buffers` replaced by a Load of its buffer (padding
/// preserved). TensorReads of other tensors are left as they are.
loop::Expr reads_to_loads(const loop::Expr& e, const TensorBuffers& buffers);

/// The stages of `out` that lower_te inlines into their single reader (see LowerTeOptions).
std::map<const te::TensorNode*, bool> inlinable_stages(const te::Tensor& out);

/// `e` with every read of a stage in `inlined` replaced by that stage's body at the read's
/// indices (recursively); a padded read becomes select(in_bounds, body, pad_value).
loop::Expr inline_stages(const loop::Expr& e, const std::map<const te::TensorNode*, bool>& inlined);

}  // namespace tessel::lower
