// The CPU plan's int8 kernels (see int8_kernels.h).
#include "compiler/backend/cpu/int8_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "compiler/support/error.h"

namespace tessel::cpu_backend {

std::vector<std::string> int8_ops() {
  return {"ConvInteger", "DequantizeLinear", "MatMulInteger",
          "QLinearConv", "QLinearMatMul",    "QuantizeLinear"};
}

QGemmPath default_qgemm_path() {
  const char* env = std::getenv("TESSEL_CPU_QGEMM");
  if (!env || !*env) return qgemm_host_path();
  const std::string v = env;
  if (v == "plain") return QGemmPath::plain;
  if (v == "vnni") {
    if (qgemm_host_path() != QGemmPath::vnni)
      fail("TESSEL_CPU_QGEMM=vnni: this host has no AVX-512 VNNI");
    return QGemmPath::vnni;
  }
  fail("TESSEL_CPU_QGEMM='{}': expected plain or vnni", v);
}

namespace {

[[noreturn]] void unsupported(const Node& node, const std::string& what) {
  throw Unsupported(fmt::format("{}: {} (the CPU's int8 kernels)", node.describe(), what));
}

/// One input of the node: a constant captured at plan time, an argument, or absent.
struct Slot {
  bool present = false;
  std::shared_ptr<const Tensor> constant;  // kept alive with the kernel
  int arg = -1;
  DType dtype = DType::f32;
  Shape shape;
};

/// A node's kernel: its inputs' slots, the op's parameters, the qgemm path.
class NodeKernel : public ExternKernel {
 public:
  NodeKernel(const Node& node, QGemmPath path) : op_(node.op_type), name_(node.name), path_(path) {
    int arg = 0;
    for (const Value* in : node.inputs) {
      Slot s;
      if (in) {
        s.present = true;
        s.dtype = in->dtype;
        s.shape = in->shape;
        if (in->constant)
          s.constant = in->constant;
        else
          s.arg = arg++;
      }
      slots_.push_back(s);
    }
    out_arg_ = arg;
    const Value* out = node.outputs.at(0);
    out_dtype_ = out->dtype;
    out_shape_ = out->shape;
    const std::string& nn = node.name;
    if (op_ == "QuantizeLinear" || op_ == "DequantizeLinear") {
      axis_ = node.attrs.get_int_or("axis", 1, nn);
      if (node.attrs.get_int_or("block_size", 0, nn) != 0)
        unsupported(node, "blocked quantisation (block_size)");
      if (!dtype_is_float(slots_[0].dtype) && op_ == "QuantizeLinear")
        unsupported(node, "QuantizeLinear of a non-float input");
      if (op_ == "QuantizeLinear" && slots_[0].dtype != DType::f32)
        unsupported(
            node, fmt::format("QuantizeLinear of {} (f32 only)", dtype_to_string(slots_[0].dtype)));
      if (op_ == "QuantizeLinear" && out_dtype_ != DType::u8 && out_dtype_ != DType::i8)
        unsupported(
            node, fmt::format("QuantizeLinear to {} (u8 or s8 only)", dtype_to_string(out_dtype_)));
      if (op_ == "DequantizeLinear" && slots_[0].dtype != DType::u8 &&
          slots_[0].dtype != DType::i8 && slots_[0].dtype != DType::i32)
        unsupported(node, fmt::format("DequantizeLinear of {} (u8, s8 or i32 only)",
                                      dtype_to_string(slots_[0].dtype)));
      if (op_ == "DequantizeLinear" && out_dtype_ != DType::f32)
        unsupported(node, "DequantizeLinear to a float type other than f32");
      if (slots_.size() < 2 || !slots_[1].present || slots_[1].dtype != DType::f32)
        unsupported(node, "a scale that is not f32");
      return;
    }
    const bool conv = op_ == "QLinearConv" || op_ == "ConvInteger";
    const size_t w_slot = op_ == "QLinearConv" ? 3 : (op_ == "QLinearMatMul" ? 3 : 1);
    if (conv) {
      const Slot& x = slots_[0];
      const Slot& w = slots_[w_slot];
      if (x.shape.size() != 3 && x.shape.size() != 4)
        unsupported(node, fmt::format("x of shape {} (1-D or 2-D convolutions only)",
                                      shape_to_string(x.shape)));
      const size_t n = x.shape.size() - 2;
      one_d_ = n == 1;
      geo_.strides = node.attrs.get_ints_or("strides", Shape(n, 1), nn);
      geo_.dilations = node.attrs.get_ints_or("dilations", Shape(n, 1), nn);
      Shape pads = node.attrs.get_ints_or("pads", Shape(2 * n, 0), nn);
      geo_.group = node.attrs.get_int_or("group", 1, nn);
      const std::string auto_pad = node.attrs.get_string_or("auto_pad", "NOTSET", nn);
      if (auto_pad == "VALID") pads.assign(2 * n, 0);
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        for (size_t i = 0; i < n; ++i) {
          const int64_t k = (w.shape[2 + i] - 1) * geo_.dilations[i] + 1;
          const int64_t total =
              std::max<int64_t>(0, (out_shape_[2 + i] - 1) * geo_.strides[i] + k - x.shape[2 + i]);
          pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
          pads[i + n] = total - pads[i];
        }
      }
      if (one_d_) {  // [begin, end] -> [top, left, bottom, right] of a height-1 image
        geo_.strides = {1, geo_.strides[0]};
        geo_.dilations = {1, geo_.dilations[0]};
        geo_.pads = {0, pads[0], 0, pads[1]};
      } else {
        geo_.pads = pads;
      }
    } else {
      const Slot& a = slots_[0];
      const Slot& b = slots_[w_slot];
      const bool batched = b.shape.size() > 2 && a.shape.size() == b.shape.size() &&
                           std::equal(a.shape.begin(), a.shape.end() - 2, b.shape.begin());
      if (a.shape.size() < 2 || (b.shape.size() != 2 && !batched))
        unsupported(node,
                    fmt::format("A {} x B {} (A of rank >= 2 with a 2-D B, or equal batch dims)",
                                shape_to_string(a.shape), shape_to_string(b.shape)));
    }
  }

  void run(void* const* args) const override {
    std::vector<Tensor> runtime(slots_.size());
    std::vector<const Tensor*> in(slots_.size(), nullptr);
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      if (!s.present) continue;
      if (s.constant) {
        in[i] = s.constant.get();
        continue;
      }
      runtime[i] = Tensor(s.dtype, s.shape);
      std::memcpy(runtime[i].raw(), args[s.arg], runtime[i].numel() * dtype_size(s.dtype));
      in[i] = &runtime[i];
    }
    const Tensor y = compute(in);
    if (y.dtype() != out_dtype_ || y.numel() != shape_numel(out_shape_))
      fail("{}: the int8 kernel produced {}{}, the graph has {}{}", name_,
           dtype_to_string(y.dtype()), shape_to_string(y.shape()), dtype_to_string(out_dtype_),
           shape_to_string(out_shape_));
    std::memcpy(args[out_arg_], y.raw(), static_cast<size_t>(y.numel()) * dtype_size(y.dtype()));
  }

 private:
  /// A zero point: the input, or a scalar 0 of `dtype` when absent.
  static Tensor zero_or(const Tensor* t, DType dtype) { return t ? *t : Tensor(dtype, {}); }

  /// A rank-3 tensor as the 2-D convolution's rank 4 (height 1).
  static Tensor as_2d(const Tensor& t) {
    if (t.rank() != 3) return t;
    return t.reshaped({t.shape()[0], t.shape()[1], 1, t.shape()[2]});
  }

  /// A (rank >= 2) as rows x K.
  static Tensor as_rows(const Tensor& a) {
    const int64_t k = a.shape().back();
    return a.reshaped({a.numel() / std::max<int64_t>(k, 1), k});
  }

  /// Matrix `i` of a batched tensor (rank > 2) as a 2-D tensor.
  static Tensor batch_slice(const Tensor& t, int64_t i) {
    const int64_t r = t.shape()[t.rank() - 2], c = t.shape()[t.rank() - 1];
    Tensor s(t.dtype(), {r, c});
    const size_t bytes = static_cast<size_t>(r * c) * dtype_size(t.dtype());
    std::memcpy(s.raw(), t.raw() + static_cast<size_t>(i) * bytes, bytes);
    return s;
  }

  /// QLinearMatMul / MatMulInteger with equal batch dims of A and B: one product per matrix.
  Tensor batched(const std::vector<const Tensor*>& v, size_t b_slot,
                 const std::function<Tensor(const Tensor&, const Tensor&)>& product) const {
    const Tensor& a = *v[0];
    const Tensor& b = *v[b_slot];
    const int64_t batches = a.numel() / (a.shape()[a.rank() - 2] * a.shape()[a.rank() - 1]);
    Tensor y(out_dtype_, out_shape_);
    const size_t step =
        static_cast<size_t>(y.numel() / std::max<int64_t>(batches, 1)) * dtype_size(out_dtype_);
    for (int64_t i = 0; i < batches; ++i) {
      const Tensor r = product(batch_slice(a, i), batch_slice(b, i));
      std::memcpy(y.raw() + static_cast<size_t>(i) * step, r.raw(), step);
    }
    return y;
  }

  Tensor compute(const std::vector<const Tensor*>& v) const {
    auto at = [&](size_t i) -> const Tensor* { return i < v.size() ? v[i] : nullptr; };
    if (op_ == "QLinearMatMul" && v[3]->rank() > 2)
      return batched(v, 3, [&](const Tensor& a, const Tensor& b) {
        return qlinear_matmul_cpu(a, *v[1], *v[2], b, *v[4], *v[5], *v[6], *v[7], nullptr, path_);
      });
    if (op_ == "MatMulInteger" && v[1]->rank() > 2) {
      const Tensor azp = zero_or(at(2), v[0]->dtype()), bzp = zero_or(at(3), v[1]->dtype());
      return batched(v, 1, [&](const Tensor& a, const Tensor& b) {
        return matmul_integer_cpu(a, azp, b, bzp, path_);
      });
    }
    if (op_ == "QuantizeLinear") return quantize_linear_cpu(*v[0], *v[1], at(2), axis_);
    if (op_ == "DequantizeLinear") return dequantize_linear_cpu(*v[0], *v[1], at(2), axis_);
    if (op_ == "QLinearMatMul")
      return qlinear_matmul_cpu(as_rows(*v[0]), *v[1], *v[2], *v[3], *v[4], *v[5], *v[6], *v[7],
                                nullptr, path_)
          .reshaped(out_shape_);
    if (op_ == "MatMulInteger") {
      const Tensor azp = zero_or(at(2), v[0]->dtype()), bzp = zero_or(at(3), v[1]->dtype());
      return matmul_integer_cpu(as_rows(*v[0]), azp, *v[1], bzp, path_).reshaped(out_shape_);
    }
    if (op_ == "QLinearConv")
      return qlinear_conv_cpu(as_2d(*v[0]), *v[1], *v[2], as_2d(*v[3]), *v[4], *v[5], *v[6], *v[7],
                              at(8), geo_, path_)
          .reshaped(out_shape_);
    if (op_ == "ConvInteger") {
      const Tensor xzp = zero_or(at(2), v[0]->dtype()), wzp = zero_or(at(3), v[1]->dtype());
      return conv_integer_cpu(as_2d(*v[0]), xzp, as_2d(*v[1]), wzp, geo_, path_)
          .reshaped(out_shape_);
    }
    internal_fail("int8 kernel for {}", op_);
  }

  std::string op_, name_;
  QGemmPath path_;
  std::vector<Slot> slots_;
  int out_arg_ = 0;
  DType out_dtype_ = DType::f32;
  Shape out_shape_;
  int64_t axis_ = 1;
  QConvGeometry geo_;
  bool one_d_ = false;
};

class CopyKernel : public ExternKernel {
 public:
  explicit CopyKernel(int64_t bytes) : bytes_(bytes) {}
  void run(void* const* args) const override {
    std::memcpy(args[1], args[0], static_cast<size_t>(bytes_));
  }

 private:
  int64_t bytes_;
};

}  // namespace

std::shared_ptr<const ExternKernel> make_int8_kernel(const Node& node, QGemmPath path) {
  const auto ops = int8_ops();
  if (std::find(ops.begin(), ops.end(), node.op_type) == ops.end()) return nullptr;
  if (path == QGemmPath::vnni && qgemm_host_path() != QGemmPath::vnni)
    fail("{}: the vnni path needs AVX-512 VNNI, which this host lacks", node.describe());
  return std::make_shared<NodeKernel>(node, path);
}

std::shared_ptr<const ExternKernel> make_copy_kernel(int64_t bytes) {
  return std::make_shared<CopyKernel>(bytes);
}

}  // namespace tessel::cpu_backend
