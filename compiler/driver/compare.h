// Comparing a target's outputs with expected values, and the tolerances used.
#pragma once

#include <map>
#include <set>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/ir/tensor.h"
#include "npu_model/hw_config.h"

namespace tessel::driver {

/// Pass when |actual - expected| <= atol + rtol * |expected| for every element (numpy.allclose).
struct Tolerance {
  double atol = 0, rtol = 0;
  std::string basis;  // one line saying where the numbers come from
};

/// Tolerance for the fp32 reference interpreter against independent expected values (ONNX test
/// data, ONNX Runtime): rtol 1e-3 as the ONNX backend tests use, atol 1e-5 for float
/// summation-order differences near zero.
Tolerance reference_tolerance();

/// The NPU's roundings to its storage format per output element of `node`, along the longest
/// chain of instructions that computes it: counted on the node's tensor expression
/// (lower::op_compute) as passes/loop/tensorize_vector.cpp turns it into vector instructions --
/// one per arithmetic operation, exp, log, sqrt and reciprocal; 3 for sigmoid, 4 for tanh, 14
/// for erf, 2 for rsqrt; none for min, max, abs, neg, relu and selects, whose result is one of
/// their fp16 operands; one per reduction (fp32 accumulation, one rounding at the end) plus
/// K / 8192 for a K-term fp32 sum (its error, K 2^-24, in units of u = 2^-11). 0 for views
/// (Reshape, ...); 1 for an op without a compute of its own (a copy or a per-tap convolution).
double npu_roundings(const Node& node);

/// The roundings of an fp32 implementation (ONNX Runtime's CPU kernels, the CPU backend) per
/// output element of `node`: as npu_roundings, but a K-term sum is an fp32 accumulator rounding
/// at each of its K - 1 additions (in whatever order the implementation sums), so it counts
/// max(1, K - 1) instead of 1 + K / 8192.
double fp32_roundings(const Node& node);

/// Tolerances of an fp32 target (the reference interpreter, the CPU backend) against independent
/// fp32 data (ONNX Runtime's outputs in a golden case), one per output of `graph` run on
/// `inputs`: reference_tolerance(), with its atol widened to 3 D + n (n = 2^-126) where D, the
/// Monte Carlo deviation of npu_tolerances at fp32, is larger: every node's result perturbed by its
/// fp32_roundings r, times (1 + sqrt(r) 2u d) with u = 2^-24 -- two implementations each within u
/// per rounding differ by up to 2u, and a perturbation stored in fp32 must reach an ulp to
/// survive -- inputs and constants exact; capped at rtol x max|expected| (0.1% of the output's
/// scale: a model whose rounding moves an output further, e.g. a QuantizeLinear turning a
/// perturbation into a flipped integer step, is not given a bound that says less). Two correct
/// fp32 implementations
/// differ by their roundings, which a model can amplify: M-LSD's `offsets` (tests/data/cases/
/// mlsd_tiny_320) move by 5e-3 when ONNX Runtime's own input is perturbed by 1e-7 relative, and
/// by 1.4e-2 between ORT's graph optimization levels, while every node of the model agrees with
/// ORT to rounding on ORT's own inputs. Where the model does not amplify (D below 1e-5 / 3),
/// the fixed tolerance stands unchanged. Each run costs one reference run of the graph.
std::map<std::string, Tolerance> fp32_tolerances(const Graph& graph,
                                                 const std::map<std::string, Tensor>& inputs);

/// Tolerances of the NPU's values of `graph` (as compiled: after the graph passes) run on `inputs`,
/// one per graph output, derived from the computation by Monte Carlo arithmetic (D. S. Parker,
/// "Monte Carlo Arithmetic", 1997; the method of Verificarlo and CADNA): the fp32 reference
/// interpreter is rerun with the NPU's roundings put in --
///   * every graph input and every constant (weights, biases) rounded to the storage format
///     (cube.input_dtype), exactly as the compiler and the input copy store them;
///   * every node's result perturbed as its r = npu_roundings(node) roundings perturb it: times
///     (1 + sqrt(r) u d), d uniform in [-1, 1] and independent per element and run (rounding to
///     nearest errs by at most u relative and is modelled as uniform; r independent ones add up
///     like a random walk, as sqrt(r) -- Higham & Mary, SIAM J. Sci. Comput. 41(5), 2019), plus
///     sqrt(r) q d / 2 for the absolute spacing q of the format's subnormals --
/// and D, the largest deviation of an output element from the unperturbed run over all runs, is
/// how far the NPU's rounding moves that output. So the bound follows the number of roundings on
/// every path and how the model propagates them: accumulation lengths, cancellation, a sigmoid of
/// large logits amplifying their error, a softmax damping it. Runs: enough that runs x elements of
/// the smallest output >= 64, at most 16 (one for an output of 64 elements or more). The bound is
///   atol = min(3 D + n, 128 u max|expected| + 128 q),  rtol = u,
/// with n the format's smallest normal (below it the format keeps no relative precision):
/// 3 D covers the NPU's own draw of the rounding errors (the largest of >= 64 sampled deviations
/// is near the top of their distribution, so the NPU's largest is below it three times over, a
/// false failure odds of < 0.1% even for a one-element output with 16 runs) and the model's
/// approximations (in-kernel roundings take the size of the node's result, not of the
/// intermediate); u |expected| is the output's own rounding to the format. For fp16 u = 2^-11,
/// q = 2^-24, n = 2^-14; for fp32 storage u = 2^-24, q = 2^-149, n = 2^-126. The ceiling, 128 u
/// of the output's scale (6.25% for fp16), is where a bound stops saying anything: when the
/// derivation finds that storage alone moves an output further (a softmax of inputs 10000 and
/// 10001, which fp16 cannot tell apart), the NPU cannot compute that output, and its result is
/// not accepted as if it could. An error of 1% fails wherever 3 D + n +
/// u max|expected| < 1% of max|expected|, which holds for every golden case but the PP-OCRv4
/// detector on a text-like image, whose final sigmoid turns the logits' rounding into 4% of its
/// range (docs/architecture.md, Numerics). Deterministic: the runs are seeded. Each run costs one
/// reference run of the graph. The graph is first put in the form the NPU compiles
/// (driver::compiled_form: recurrent layers unrolled, losses expanded, multi-output nodes split),
/// whose nodes are the ones that round. `reference`, if given, receives the unperturbed outputs.
///
/// Mixed precision (fp16 target): the values the NPU keeps in fp32 (`plan`, else
/// npu_backend::float_storage_plan of the compiled form; compiler/backend/npu/precision.h) are
/// not rounded to fp16 and their nodes round at fp32's 2u = 2^-23 per rounding (as
/// fp32_tolerances: two implementations each within u differ by up to 2u); an fp16 node reading
/// an fp32 value counts one more rounding (its conversion kernel); an output stored in fp32 has
/// u = 2^-23, q = 2^-149, n = 2^-126 in the bound above.
std::map<std::string, Tolerance> npu_tolerances(const npu::HwConfig& hw, const Graph& graph,
                                                const std::map<std::string, Tensor>& inputs,
                                                std::map<std::string, Tensor>* reference = nullptr,
                                                const std::map<std::string, DType>* plan = nullptr);

/// Tolerance for the GPU against the fp32 reference. With `fp16` (some contraction ran on the
/// tensor cores: fp16 operands, fp32 accumulation) a fixed fp16 bound: rtol 128 u = 0.0625 and
/// atol 128 u x max|expected| + 128 q (u = 2^-11, q = 2^-24), the ceiling of npu_tolerances,
/// which allows fp16 rounding of every stored value; the GPU rounds only the contraction
/// operands (activations stay fp32 in memory). Not derived per model as the NPU's is (the
/// golden models' error / bound on gpu-emu: 0.001 to 0.11, docs/gpu_backend.md). Without:
/// reference_tolerance() (fp32 throughout; FMA contraction and summation order differ).
Tolerance gpu_tolerance(bool fp16, const Tensor& expected);

struct OutputCheck {
  std::string name;
  bool shape_ok = true;
  double max_abs_error = 0;
  double max_rel_error = 0;  // over elements with |expected| >= 1e-3 * max|expected|
  double max_expected = 0;   // max |expected|
  /// The tested quantity: max over elements of |actual - expected| / (atol + rtol |expected|);
  /// <= 1 passes, so it says how far below its bound the output is. +inf for a NaN or infinity
  /// mismatch, a shape mismatch, or an error against a zero bound.
  double worst_ratio = 0;
  Tolerance tolerance;
  bool pass = false;
};

/// Compares one output. NaN in either (where the other is not NaN) fails.
OutputCheck compare_output(const std::string& name, const Tensor& actual, const Tensor& expected,
                           const Tolerance& tolerance);

/// One NPU kernel checked on its own (kernel_checks).
struct KernelCheck {
  std::string node;   // the node computing `value`
  std::string ops;    // op types of the kernel's nodes in order, '+'-joined ("Conv+HardSwish")
  std::string value;  // the kernel's result
  OutputCheck check;  // the NPU's result vs the reference on the kernel's own NPU inputs
};

/// Checks every kernel of a model run on the NPU on its own, so that an op's error cannot hide in
/// the rounding noise of a deep model: for every value the NPU stored (`npu_values`: the run with
/// RunOptions::read_all_values; values known at compile time are skipped), the nodes computing
/// it from stored values, graph inputs and constants -- one kernel, or a fusion group, whose
/// intermediates stay on chip -- are run on the reference interpreter on exactly the inputs the
/// NPU read (its fp16 values; graph inputs rounded as the NPU rounds them), and its result is
/// compared with the NPU's within that kernel's own npu_tolerances (the same derivation, over the
/// kernel's few roundings: a few u). A 1% error of one op fails its kernel's check however deep
/// in the model it is. Kernels are listed in graph order. `only`, when given, names the values to
/// check (the others still bound the kernels: each checked kernel is the same as without it).
/// Throws tessel::Error from the reference.
std::vector<KernelCheck> kernel_checks(const npu::HwConfig& hw, const Graph& graph,
                                       const std::map<std::string, Tensor>& graph_inputs,
                                       const std::map<std::string, Tensor>& npu_values,
                                       const std::set<std::string>* only = nullptr);

}  // namespace tessel::driver
