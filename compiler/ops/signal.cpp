// Signal ops (opset 17): DFT and STFT; ONNX operator docs. Direct O(n^2) transforms in double.
//
// DFT: input [batch, ..., n, ..., 1 | 2] (real or complex, last dim), transformed along `axis`
// (default 1), zero-padded / truncated to dft_length (input 1, compile-time) when given;
// X[k] = sum_m x[m] exp(-2 pi i k m / N) (inverse: exp(+...) / N); onesided keeps
// floor(N/2) + 1 bins. Output [..., N or N/2+1, ..., 2].
// STFT: signal [batch, length, 1 | 2], frame_step (compile-time scalar), window [L] and/or
// frame_length (compile-time scalar); frames = 1 + floor((length - L) / step); each frame is
// multiplied by the window and transformed; onesided (default 1) keeps L/2 + 1 bins. Output
// [batch, frames, bins, 2].
#include <cmath>

#include "compiler/ops/op_util.h"

namespace tessel::ops {
namespace {

constexpr double kPi = 3.14159265358979323846;

int64_t scalar_int(const Node& node, const Tensor& t, const char* role) {
  if (t.numel() != 1) node_fail(node, "{} must be a scalar", role);
  return tensor_to_int64s(node, t, role)[0];
}

struct DftShape {
  int64_t axis, n_in, n, bins;
  Shape out;
};

DftShape dft_shape(const Node& node, const Shape& x, const Tensor* length) {
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank < 3 || (x.back() != 1 && x.back() != 2))
    node_fail(node, "input must be [batch, ..., 1 or 2], got {}", shape_to_string(x));
  DftShape d;
  d.axis =
      normalize_axis(node, node.attrs.get_int_or("axis", 1, node.name), rank - 1, "attribute axis");
  if (d.axis == 0) node_fail(node, "axis 0 is the batch axis");
  d.n_in = x[d.axis];
  d.n = length ? scalar_int(node, *length, "dft_length") : d.n_in;
  if (d.n < 1) node_fail(node, "dft_length {} must be >= 1", d.n);
  const bool onesided = node.attrs.get_int_or("onesided", 0, node.name) != 0;
  const bool inverse = node.attrs.get_int_or("inverse", 0, node.name) != 0;
  if (onesided && inverse) node_unsupported(node, "onesided inverse DFT is not supported");
  d.bins = onesided ? d.n / 2 + 1 : d.n;
  d.out = x;
  d.out[d.axis] = d.bins;
  d.out.back() = 2;
  return d;
}

/// Transforms `n_in` complex samples (re, im at stride `stride` pairs) into `bins` outputs.
void dft_1d(const double* re, const double* im, int64_t n_in, int64_t n, int64_t bins, bool inverse,
            double* out_re, double* out_im) {
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < bins; ++k) {
    double sr = 0, si = 0;
    for (int64_t m = 0; m < std::min(n_in, n); ++m) {
      const double a = sign * 2 * kPi * static_cast<double>((k * m) % n) / static_cast<double>(n);
      const double c = std::cos(a), s = std::sin(a);
      sr += re[m] * c - im[m] * s;
      si += re[m] * s + im[m] * c;
    }
    if (inverse) {
      sr /= static_cast<double>(n);
      si /= static_cast<double>(n);
    }
    out_re[k] = sr;
    out_im[k] = si;
  }
}

std::vector<Tensor> dft_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 1, 2, 1, 1);
  const Tensor& x = kernel_input(node, inputs, 0, "input");
  const Tensor* len = inputs.size() > 1 ? inputs[1] : nullptr;
  const DftShape d = dft_shape(node, x.shape(), len);
  const bool inverse = node.attrs.get_int_or("inverse", 0, node.name) != 0;
  const bool complex_in = x.shape().back() == 2;
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d.axis; ++k) outer *= x.shape()[k];
  for (int64_t k = d.axis + 1; k < x.rank() - 1; ++k) inner *= x.shape()[k];
  const int64_t comps = x.shape().back();
  Tensor out(x.dtype(), d.out);
  std::vector<double> re(d.n_in), im(d.n_in), ore(d.bins), oim(d.bins);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t m = 0; m < d.n_in; ++m) {
        const int64_t at = ((o * d.n_in + m) * inner + i) * comps;
        re[m] = x.get_as_double(at);
        im[m] = complex_in ? x.get_as_double(at + 1) : 0.0;
      }
      dft_1d(re.data(), im.data(), d.n_in, d.n, d.bins, inverse, ore.data(), oim.data());
      for (int64_t k = 0; k < d.bins; ++k) {
        const int64_t at = ((o * d.bins + k) * inner + i) * 2;
        out.set_from_double(at, ore[k]);
        out.set_from_double(at + 1, oim[k]);
      }
    }
  return one_output(std::move(out));
}

struct StftShape {
  int64_t step, frame_length, frames, bins;
  Shape out;
};

StftShape stft_shape(const Node& node, const Shape& signal, const Tensor& step, const Shape* window,
                     const Tensor* frame_length) {
  if (signal.size() != 3 || (signal[2] != 1 && signal[2] != 2))
    node_fail(node, "signal must be [batch, length, 1 or 2], got {}", shape_to_string(signal));
  StftShape s;
  s.step = scalar_int(node, step, "frame_step");
  if (s.step < 1) node_fail(node, "frame_step {} must be >= 1", s.step);
  if (window) {
    if (window->size() != 1) node_fail(node, "window must be 1-D");
    s.frame_length = (*window)[0];
    if (frame_length && scalar_int(node, *frame_length, "frame_length") != s.frame_length)
      node_fail(node, "frame_length differs from the window length {}", s.frame_length);
  } else if (frame_length) {
    s.frame_length = scalar_int(node, *frame_length, "frame_length");
  } else {
    node_fail(node, "either window or frame_length must be given");
  }
  if (s.frame_length < 1 || s.frame_length > signal[1])
    node_fail(node, "frame length {} must be in [1, {}]", s.frame_length, signal[1]);
  s.frames = 1 + (signal[1] - s.frame_length) / s.step;
  const bool onesided = node.attrs.get_int_or("onesided", 1, node.name) != 0;
  s.bins = onesided ? s.frame_length / 2 + 1 : s.frame_length;
  s.out = {signal[0], s.frames, s.bins, 2};
  return s;
}

std::vector<Tensor> stft_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 2, 4, 1, 1);
  const Tensor& sig = kernel_input(node, inputs, 0, "signal");
  const Tensor& step = kernel_input(node, inputs, 1, "frame_step");
  const Tensor* window = inputs.size() > 2 ? inputs[2] : nullptr;
  const Tensor* flen = inputs.size() > 3 ? inputs[3] : nullptr;
  const StftShape s =
      stft_shape(node, sig.shape(), step, window ? &window->shape() : nullptr, flen);
  const bool complex_in = sig.shape()[2] == 2;
  const int64_t len = sig.shape()[1], comps = sig.shape()[2];
  Tensor out(sig.dtype(), s.out);
  std::vector<double> re(s.frame_length), im(s.frame_length), ore(s.bins), oim(s.bins);
  for (int64_t b = 0; b < sig.shape()[0]; ++b)
    for (int64_t f = 0; f < s.frames; ++f) {
      for (int64_t m = 0; m < s.frame_length; ++m) {
        const int64_t at = (b * len + f * s.step + m) * comps;
        const double w = window ? window->get_as_double(m) : 1.0;
        re[m] = sig.get_as_double(at) * w;
        im[m] = complex_in ? sig.get_as_double(at + 1) * w : 0.0;
      }
      dft_1d(re.data(), im.data(), s.frame_length, s.frame_length, s.bins, false, ore.data(),
             oim.data());
      for (int64_t k = 0; k < s.bins; ++k) {
        const int64_t at = ((b * s.frames + f) * s.bins + k) * 2;
        out.set_from_double(at, ore[k]);
        out.set_from_double(at + 1, oim[k]);
      }
    }
  return one_output(std::move(out));
}

// MelWeightMatrix (opset 17), as the ONNX reference computes it: with n = num_mel_bins,
// mel(f) = 2595 log10(1 + f / 700), n + 2 points spaced (mel_high - mel_low) / (n + 2) from
// mel_low, mapped back to Hz and to bins floor((dft_length + 1) * f / sample_rate); triangle
// filter i rises from point i to i+1 and falls to i+2. Output [dft_length / 2 + 1, n].
Tensor mel_weight_matrix(const Node& node, const std::vector<const Tensor*>& v) {
  const int64_t n = scalar_int(node, *v[0], "num_mel_bins");
  const int64_t dft = scalar_int(node, *v[1], "dft_length");
  const int64_t rate = scalar_int(node, *v[2], "sample_rate");
  if (n < 1 || dft < 1 || rate < 1)
    node_fail(node, "num_mel_bins, dft_length and sample_rate must be positive");
  const float lo = static_cast<float>(v[3]->get_as_double(0));
  const float hi = static_cast<float>(v[4]->get_as_double(0));
  const int64_t dt = node.attrs.get_int_or("output_datatype", 1, node.name);
  if (!dtype_is_float(static_cast<DType>(dt)) && !dtype_is_integer(static_cast<DType>(dt)))
    node_unsupported(node, "output_datatype {} is not supported", dt);
  const int64_t spec_bins = dft / 2 + 1;
  // fp32 mel bounds (the reference computes them from fp32 inputs), the rest in double.
  const float mel_lo = 2595.0f * std::log10(1.0f + lo / 700.0f);
  const float mel_hi = 2595.0f * std::log10(1.0f + hi / 700.0f);
  const double step = static_cast<double>(mel_hi - mel_lo) / static_cast<double>(n + 2);
  std::vector<int64_t> bins(static_cast<size_t>(n + 2));
  for (int64_t i = 0; i < n + 2; ++i) {
    const double mel = static_cast<double>(i) * step + mel_lo;
    const double hz = 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
    bins[i] = static_cast<int64_t>(
        std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate)));
  }
  std::vector<double> w(static_cast<size_t>(spec_bins * n), 0.0);
  auto set = [&](int64_t row, int64_t col, double val) {
    if (row < 0 || row >= spec_bins)
      node_fail(node, "mel filter bin {} is outside [0, {})", row, spec_bins);
    w[row * n + col] = val;
  };
  for (int64_t i = 0; i < n; ++i) {
    const int64_t l = bins[i], c = bins[i + 1], h = bins[i + 2];
    if (c == l) {
      set(c, i, 1.0);
    } else {
      for (int64_t j = l; j <= c; ++j)
        set(j, i, static_cast<double>(j - l) / static_cast<double>(c - l));
    }
    for (int64_t j = c; j < h; ++j)
      set(j, i, static_cast<double>(h - j) / static_cast<double>(h - c));
  }
  Tensor out(static_cast<DType>(dt), {spec_bins, n});
  for (int64_t i = 0; i < spec_bins * n; ++i) out.set_from_double(i, w[i]);
  return out;
}

}  // namespace

void register_signal_ops() {
  register_op({"MelWeightMatrix",
               [](Node& node) {
                 check_arity(node, 5, 5, 1, 1);
                 const char* roles[5] = {"num_mel_bins", "dft_length", "sample_rate",
                                         "lower_edge_hertz", "upper_edge_hertz"};
                 std::vector<const Tensor*> v;
                 for (size_t i = 0; i < 5; ++i) v.push_back(&constant_input(node, i, roles[i]));
                 const Tensor t = mel_weight_matrix(node, v);
                 set_output(node, 0, t.dtype(), t.shape());
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 for (size_t i = 0; i < 5; ++i) kernel_input(node, inputs, i, "input");
                 return one_output(mel_weight_matrix(node, inputs));
               }});
  register_op({"DFT",
               [](Node& node) {
                 check_arity(node, 1, 2, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 expect_float(node, x.dtype, "input");
                 const Tensor* len =
                     node.input(1) ? &constant_input(node, 1, "dft_length") : nullptr;
                 set_output(node, 0, x.dtype, dft_shape(node, x.shape, len).out);
               },
               dft_kernel});
  register_op(
      {"STFT",
       [](Node& node) {
         check_arity(node, 2, 4, 1, 1);
         const Value& sig = required_input(node, 0, "signal");
         expect_float(node, sig.dtype, "input signal");
         const Tensor& step = constant_input(node, 1, "frame_step");
         const Value* window = node.input(2);
         if (window) expect_same_dtype(node, 0, 2);
         const Tensor* flen = node.input(3) ? &constant_input(node, 3, "frame_length") : nullptr;
         set_output(node, 0, sig.dtype,
                    stft_shape(node, sig.shape, step, window ? &window->shape : nullptr, flen).out);
       },
       stft_kernel});
}

}  // namespace tessel::ops
