// The CPU backend's int8 matrix product with requantisation (QLinearMatMul's arithmetic, the
// core of QLinearConv after im2col), generated as LLVM IR and JIT-compiled for the host:
//
//   Y[m][n] = requant(sum_k (A[m][k] - a_zp) * (B[k][n] - b_zp[n]) + bias[n], scale[n], y_zp)
//
// A: u8 or s8, M x K row-major; B: s8 or u8, K x N row-major; Y: u8 or s8 (y_zp's dtype).
// Accumulation is exact in int32. Two code paths, the same integers:
//   - plain: scalar int32 multiply-adds (compiled with the host's features minus AVX-VNNI, i.e.
//     what a host without VNNI runs; LLVM may vectorise it with ordinary SIMD);
//   - vnni: AVX-512 VNNI `vpdpbusd` (llvm.x86.avx512.vpdpbusd.512: 16 lanes of 4 u8 x s8
//     products summed into s32), 16 output columns per vector.
// vpdpbusd multiplies unsigned A bytes by signed B bytes, so an s8 A is offset by +128 (bits
// flipped: a + 128 as u8, a_zp + 128) and a u8 B by -128 (b - 128 as s8, b_zp - 128); the zero
// points then enter as exact int32 corrections with precomputed sums:
//   acc = sum a'b' - a_zp' * colsum(b')[n] - b_zp'[n] * rowsum(a')[m] + K * a_zp' * b_zp'[n].
// B is packed at prepare time (QGemmWeights) into [K/4][Npad][4] bytes, K and N padded with 0.
//
// Requantisation: bit for bit ONNX Runtime's MlasRequantizeOutput, as ops::requantize_fp32:
// scale[n] = fp32 a_scale * b_scale[n] / y_scale (fp32, in that order); v = fp32(acc) * scale[n]
// in fp32; clamped to [qmin - y_zp, qmax - y_zp]; rounded half to even (llvm.nearbyint: vrndscaleps
// in the default rounding mode); + y_zp; stored as the output dtype.
//
// Which path runs is chosen at run time from the host's features (qgemm_host_path:
// __builtin_cpu_supports("avx512vnni") and "avx512bw"); both are compiled and tested on a host
// that has VNNI (tests/cpu/test_cpu_qgemm.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/tensor.h"

namespace llvm::orc {
class LLJIT;
}

namespace tessel::cpu_backend {

enum class QGemmPath { plain, vnni };

/// "plain" or "vnni".
const char* qgemm_path_name(QGemmPath p);
/// The path this host runs: vnni when it has AVX-512 VNNI (and BW), else plain.
QGemmPath qgemm_host_path();

/// The host assembly of the kernels (both paths on a VNNI host, else plain): tests and docs
/// check which instructions each path uses.
std::string qgemm_assembly();

/// The packed constant operand (B) of a quantised matrix product: bytes as s8 in the [K/4][Npad][4]
/// layout vpdpbusd reads (Kpad = K rounded up to 4, Npad = N rounded up to 16), its column sums,
/// and the effective (offset) zero points.
struct QGemmWeights {
  int64_t K = 0, N = 0, Kpad = 0, Npad = 0;
  std::vector<int8_t> packed;       // Kpad/4 * Npad * 4
  std::vector<int32_t> col_sum;     // Npad: sum_k b'[k][n]
  std::vector<int32_t> zero_point;  // Npad: b_zp' per column
};

/// Packs B (K x N, u8 or s8) with zero point(s) `b_zp` (1 or N entries, B's dtype).
QGemmWeights pack_qgemm_weights(const Tensor& b, const Tensor& b_zp);

/// The JIT-compiled kernels (both paths), compiled once per process on first use. Throws
/// tessel::Error with LLVM's diagnostic when the host target is unavailable.
class QGemmKernels {
 public:
  static const QGemmKernels& get();
  ~QGemmKernels();

  /// The kernel's signature (the generated function's): A' (u8, M x Kpad, zero padded), packed
  /// B, B's column sums and zero points, bias (Npad int32), scale (Npad fp32), Y (M x Npad bytes),
  /// M, Npad, Kpad, K, a_zp', y_zp, qmin, qmax.
  using Fn = void (*)(const uint8_t*, const int8_t*, const int32_t*, const int32_t*, const int32_t*,
                      const float*, uint8_t*, int64_t, int64_t, int64_t, int64_t, int32_t, int32_t,
                      int32_t, int32_t);
  /// The kernel of `path`, requantising (false) or storing the int32 accumulators (true: Y is
  /// then M x Npad int32; scale, y_zp, qmin, qmax unused). Null for vnni on a host without it.
  Fn fn(QGemmPath path, bool int32_out = false) const {
    return path == QGemmPath::vnni ? vnni_[int32_out] : plain_[int32_out];
  }

  /// The QuantizeLinear / DequantizeLinear kernel `name` (tessel_quantize_{u8,s8},
  /// tessel_dequantize_{u8,s8,i32}; see quantize_linear_cpu).
  void* linear(const std::string& name) const { return linear_.at(name); }

 private:
  QGemmKernels();
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  Fn plain_[2] = {nullptr, nullptr}, vnni_[2] = {nullptr, nullptr};
  std::map<std::string, void*> linear_;
};

/// QLinearMatMul of 2-D operands on the CPU kernels: a (M x K, u8/s8) with per-tensor a_scale /
/// a_zp, b (K x N) with per-tensor or per-column b_scale / b_zp, y_scale / y_zp per tensor
/// (y_zp's dtype is the output's), optional int32 `bias` (N entries, added to the accumulator:
/// QLinearConv's B). Returns M x N. Adds the generated kernel's wall time (not the packing) to
/// `*kernel_seconds` when given. Throws tessel::Error on shapes or dtypes outside these forms.
Tensor qlinear_matmul_cpu(const Tensor& a, const Tensor& a_scale, const Tensor& a_zp,
                          const Tensor& b, const Tensor& b_scale, const Tensor& b_zp,
                          const Tensor& y_scale, const Tensor& y_zp, const Tensor* bias,
                          QGemmPath path, double* kernel_seconds = nullptr);

/// MatMulInteger of 2-D operands on the same kernels: (a - a_zp) @ (b - b_zp) as int32 (a_zp per
/// tensor, b_zp per tensor or per column), M x N.
Tensor matmul_integer_cpu(const Tensor& a, const Tensor& a_zp, const Tensor& b, const Tensor& b_zp,
                          QGemmPath path, double* kernel_seconds = nullptr);

/// The geometry of a 2-D convolution (explicit pads, ONNX order [top, left, bottom, right]).
struct QConvGeometry {
  std::vector<int64_t> strides = {1, 1}, pads = {0, 0, 0, 0}, dilations = {1, 1};
  int64_t group = 1;
};

/// QLinearConv of an NCHW x (u8/s8, per-tensor scale and zero point) with w (M x C/group x kh x
/// kw, s8/u8, per-tensor or per-output-channel scale and zero point), y per tensor, optional int32
/// bias (M): per image and group, the input windows are gathered into rows (im2col, padding with
/// x's zero point so that padded taps contribute 0) and multiplied on the qgemm kernels with the
/// output channels as columns (so per-channel scales are per-column), then written back NCHW.
/// `kernel_seconds` as for qlinear_matmul_cpu. Throws tessel::Error on other ranks, dtypes or
/// parameter shapes.
Tensor qlinear_conv_cpu(const Tensor& x, const Tensor& x_scale, const Tensor& x_zp, const Tensor& w,
                        const Tensor& w_scale, const Tensor& w_zp, const Tensor& y_scale,
                        const Tensor& y_zp, const Tensor* bias, const QConvGeometry& geometry,
                        QGemmPath path, double* kernel_seconds = nullptr);

/// ConvInteger (int32 output, no requantisation) the same way as qlinear_conv_cpu.
Tensor conv_integer_cpu(const Tensor& x, const Tensor& x_zp, const Tensor& w, const Tensor& w_zp,
                        const QConvGeometry& geometry, QGemmPath path,
                        double* kernel_seconds = nullptr);

/// QuantizeLinear on the generated kernels: y = saturate(nearbyint(x / scale[c]) + zp[c]) with
/// x / scale in fp32 (the ONNX reference's and ORT's division), per tensor or along `axis`; the
/// output has zp's dtype (u8 when `zp` is null). NaN becomes the zero point (the reference's).
Tensor quantize_linear_cpu(const Tensor& x, const Tensor& scale, const Tensor* zp,
                           int64_t axis = 1);
/// DequantizeLinear on the generated kernels: y = (fp32(x) - fp32(zp[c])) * scale[c] in fp32,
/// x u8, s8 or i32, per tensor or along `axis`.
Tensor dequantize_linear_cpu(const Tensor& x, const Tensor& scale, const Tensor* zp,
                             int64_t axis = 1);

}  // namespace tessel::cpu_backend
