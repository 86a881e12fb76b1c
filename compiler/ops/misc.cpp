// Smaller ops: window functions (HannWindow, HammingWindow, BlackmanWindow; opset 17), Det,
// ReverseSequence, MaxUnpool; ONNX operator docs.
#include <cmath>

#include "compiler/ops/op_util.h"

namespace tessel::ops {
namespace {

// ---------------------------------------------------------------------------------------------
// Window functions: w[n] for n in [0, N), with N' = N (periodic=1, default) or N - 1 (symmetric):
//   Hann:     0.5 - 0.5 cos(2 pi n / N')
//   Hamming:  25/46 - (21/46) cos(2 pi n / N')
//   Blackman: 0.42 - 0.5 cos(2 pi n / N') + 0.08 cos(4 pi n / N')
// ---------------------------------------------------------------------------------------------

enum class Window { hann, hamming, blackman };

DType window_dtype(const Node& node) {
  const int64_t dt = node.attrs.get_int_or("output_datatype", 1, node.name);
  const DType t = static_cast<DType>(dt);
  if (!(dtype_is_float(t) || dtype_is_integer(t)) || dt > static_cast<int64_t>(DType::u64))
    node_unsupported(node, "output_datatype {} is not supported", dt);
  return t;
}

int64_t window_size(const Node& node, const Tensor& t) {
  if (t.numel() != 1) node_fail(node, "size must be a scalar");
  const int64_t n = tensor_to_int64s(node, t, "size")[0];
  if (n < 0) node_fail(node, "size {} is negative", n);
  return n;
}

void register_window(const char* name, Window kind) {
  register_op({name,
               [](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 expect_dtype(node, required_input(node, 0, "size").dtype, {DType::i32, DType::i64},
                              "input size");
                 set_output(node, 0, window_dtype(node),
                            {window_size(node, constant_input(node, 0, "size"))});
               },
               [kind](const Node& node, const std::vector<const Tensor*>& inputs) {
                 const int64_t n = window_size(node, kernel_input(node, inputs, 0, "size"));
                 const bool periodic = node.attrs.get_int_or("periodic", 1, node.name) != 0;
                 const double denom = static_cast<double>(periodic ? n : n - 1);
                 Tensor out(window_dtype(node), {n});
                 const double pi = 3.14159265358979323846;
                 for (int64_t i = 0; i < n; ++i) {
                   const double a = denom > 0 ? 2 * pi * static_cast<double>(i) / denom : 0.0;
                   double v = 0;
                   switch (kind) {
                     case Window::hann:
                       v = 0.5 - 0.5 * std::cos(a);
                       break;
                     case Window::hamming:
                       v = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(a);
                       break;
                     case Window::blackman:
                       v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
                       break;
                   }
                   // Computed in double and stored as fp32 first, like the ONNX reference.
                   store_as<double>(out.raw(), out.dtype(), i,
                                    static_cast<double>(static_cast<float>(v)));
                 }
                 return one_output(std::move(out));
               }});
}

// ---------------------------------------------------------------------------------------------
// Det: determinant of the trailing M x M matrices, by Gaussian elimination with partial pivoting
// in double.
// ---------------------------------------------------------------------------------------------

void register_det() {
  auto out_shape = [](const Node& node, const Shape& x) {
    if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2])
      node_fail(node, "input must be [*, M, M], got {}", shape_to_string(x));
    return Shape(x.begin(), x.end() - 2);
  };
  register_op({"Det",
               [out_shape](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "X");
                 expect_float(node, x.dtype, "input X");
                 set_output(node, 0, x.dtype, out_shape(node, x.shape));
               },
               [out_shape](const Node& node, const std::vector<const Tensor*>& inputs) {
                 const Tensor& x = kernel_input(node, inputs, 0, "X");
                 const Shape os = out_shape(node, x.shape());
                 const int64_t M = x.shape().back();
                 const int64_t batch = shape_numel(os);
                 Tensor out(x.dtype(), os);
                 std::vector<double> a(static_cast<size_t>(M * M));
                 for (int64_t b = 0; b < batch; ++b) {
                   for (int64_t i = 0; i < M * M; ++i) a[i] = x.get_as_double(b * M * M + i);
                   double det = 1;
                   for (int64_t col = 0; col < M && det != 0; ++col) {
                     int64_t piv = col;
                     for (int64_t r = col + 1; r < M; ++r)
                       if (std::abs(a[r * M + col]) > std::abs(a[piv * M + col])) piv = r;
                     if (a[piv * M + col] == 0) {
                       det = 0;
                       break;
                     }
                     if (piv != col) {
                       for (int64_t k = 0; k < M; ++k) std::swap(a[piv * M + k], a[col * M + k]);
                       det = -det;
                     }
                     det *= a[col * M + col];
                     for (int64_t r = col + 1; r < M; ++r) {
                       const double f = a[r * M + col] / a[col * M + col];
                       for (int64_t k = col; k < M; ++k) a[r * M + k] -= f * a[col * M + k];
                     }
                   }
                   out.set_from_double(b, det);
                 }
                 return one_output(std::move(out));
               }});
}

// ---------------------------------------------------------------------------------------------
// ReverseSequence: for each batch entry b, the first sequence_lens[b] elements along time_axis
// are reversed; the rest are copied.
// ---------------------------------------------------------------------------------------------

void register_reverse_sequence() {
  auto axes = [](const Node& node, const Shape& x, const Shape& lens) {
    const int64_t t = node.attrs.get_int_or("time_axis", 0, node.name);
    const int64_t b = node.attrs.get_int_or("batch_axis", 1, node.name);
    if (x.size() < 2) node_fail(node, "input must have rank >= 2");
    if (!((t == 0 && b == 1) || (t == 1 && b == 0)))
      node_fail(node, "time_axis={} and batch_axis={} must be 0 and 1 in some order", t, b);
    if (lens.size() != 1 || lens[0] != x[b])
      node_fail(node, "sequence_lens has shape {}, expected [{}]", shape_to_string(lens), x[b]);
    return std::make_pair(t, b);
  };
  register_op({"ReverseSequence",
               [axes](Node& node) {
                 check_arity(node, 2, 2, 1, 1);
                 const Value& x = required_input(node, 0, "input");
                 const Value& lens = required_input(node, 1, "sequence_lens");
                 expect_dtype(node, lens.dtype, {DType::i64}, "input sequence_lens");
                 axes(node, x.shape, lens.shape);
                 set_output(node, 0, x.dtype, x.shape);
               },
               [axes](const Node& node, const std::vector<const Tensor*>& inputs) {
                 const Tensor& x = kernel_input(node, inputs, 0, "input");
                 const Tensor& lens = kernel_input(node, inputs, 1, "sequence_lens");
                 auto [ta, ba] = axes(node, x.shape(), lens.shape());
                 const auto st = row_major_strides(x.shape());
                 const int64_t T = x.shape()[ta], B = x.shape()[ba];
                 const int64_t inner = x.rank() > 2 ? st[1] : 1;
                 const int64_t es = dtype_size(x.dtype());
                 if (es == 0) node_unsupported(node, "dtype is not supported");
                 Tensor out(x.dtype(), x.shape());
                 for (int64_t b = 0; b < B; ++b) {
                   const int64_t len = lens.data<int64_t>()[b];
                   if (len < 0 || len > T)
                     node_fail(node, "sequence_lens[{}] = {} is out of [0, {}]", b, len, T);
                   for (int64_t t = 0; t < T; ++t) {
                     const int64_t src_t = t < len ? len - 1 - t : t;
                     const int64_t dst = t * st[ta] + b * st[ba];
                     const int64_t src = src_t * st[ta] + b * st[ba];
                     std::memcpy(out.raw() + dst * es, x.raw() + src * es,
                                 static_cast<size_t>(inner * es));
                   }
                 }
                 return one_output(std::move(out));
               }});
}

// ---------------------------------------------------------------------------------------------
// MaxUnpool: scatters X into zeros at the flat indices I (as produced by MaxPool). The output
// shape is output_shape (input 2, compile-time) or, per spatial axis,
// (in - 1) * stride + kernel - pad_begin - pad_end.
// ---------------------------------------------------------------------------------------------

Shape maxunpool_shape(const Node& node, const Shape& x, const Tensor* output_shape) {
  if (x.size() < 3) node_fail(node, "input X must be [N, C, D1, ...]");
  const size_t n = x.size() - 2;
  if (output_shape) {
    const auto s = tensor_to_int64s(node, *output_shape, "output_shape");
    if (s.size() != x.size()) node_fail(node, "output_shape must have {} entries", x.size());
    return Shape(s.begin(), s.end());
  }
  const auto k = node.attrs.get_ints_or("kernel_shape", {}, node.name);
  const auto s = node.attrs.get_ints_or("strides", std::vector<int64_t>(n, 1), node.name);
  const auto p = node.attrs.get_ints_or("pads", std::vector<int64_t>(2 * n, 0), node.name);
  if (k.size() != n || s.size() != n || p.size() != 2 * n)
    node_fail(node, "kernel_shape/strides need {} entries and pads {}", n, 2 * n);
  Shape out = {x[0], x[1]};
  for (size_t i = 0; i < n; ++i) out.push_back((x[i + 2] - 1) * s[i] + k[i] - p[i] - p[i + n]);
  return out;
}

void register_maxunpool() {
  register_op({"MaxUnpool",
               [](Node& node) {
                 check_arity(node, 2, 3, 1, 1);
                 const Value& x = required_input(node, 0, "X");
                 const Value& idx = required_input(node, 1, "I");
                 expect_float(node, x.dtype, "input X");
                 expect_dtype(node, idx.dtype, {DType::i64}, "input I");
                 if (idx.shape != x.shape) node_fail(node, "I must have X's shape");
                 const Tensor* os =
                     node.input(2) ? &constant_input(node, 2, "output_shape") : nullptr;
                 set_output(node, 0, x.dtype, maxunpool_shape(node, x.shape, os));
               },
               [](const Node& node, const std::vector<const Tensor*>& inputs) {
                 const Tensor& x = kernel_input(node, inputs, 0, "X");
                 const Tensor& idx = kernel_input(node, inputs, 1, "I");
                 const Tensor* os = inputs.size() > 2 ? inputs[2] : nullptr;
                 Tensor out(x.dtype(), maxunpool_shape(node, x.shape(), os));
                 // Indices are flat offsets in the unpadded shape (the MaxPool input); with a
                 // larger output_shape each element keeps its coordinates.
                 const Shape base = maxunpool_shape(node, x.shape(), nullptr);
                 const auto base_strides = row_major_strides(base);
                 const auto out_strides = row_major_strides(out.shape());
                 const int64_t es = dtype_size(x.dtype());
                 for (int64_t i = 0; i < x.numel(); ++i) {
                   const int64_t flat = idx.data<int64_t>()[i];
                   if (flat < 0 || flat >= shape_numel(base))
                     node_fail(node, "index {} is outside the unpooled shape {}", flat,
                               shape_to_string(base));
                   int64_t at = 0;
                   for (size_t k = 0; k < base.size(); ++k) {
                     const int64_t coord = (flat / base_strides[k]) % base[k];
                     if (coord >= out.shape()[k])
                       node_fail(node, "output_shape {} is smaller than the unpooled shape {}",
                                 shape_to_string(out.shape()), shape_to_string(base));
                     at += coord * out_strides[k];
                   }
                   std::memcpy(out.raw() + at * es, x.raw() + i * es, static_cast<size_t>(es));
                 }
                 return one_output(std::move(out));
               }});
}

// ---------------------------------------------------------------------------------------------
// TfIdfVectorizer (opset 9, integer inputs): counts the n-grams of pool_int64s (grouped by length,
// ngram_counts[k] = start of the (k+1)-grams) in each row of X, for lengths min..max_gram_length
// and element gaps 0..max_skip_count (1-grams counted once); output index ngram_indexes[p] for
// pool n-gram p. mode TF: counts; IDF: weight if count > 0; TFIDF: count * weight.
// ---------------------------------------------------------------------------------------------

struct TfIdf {
  int64_t min_n, max_n, max_skip, out_size;
  std::string mode;
  std::vector<int64_t> counts, indexes, pool;
  std::vector<float> weights;
};

TfIdf tfidf_params(const Node& node) {
  TfIdf p;
  const std::string& nn = node.name;
  p.min_n = node.attrs.get_int("min_gram_length", nn);
  p.max_n = node.attrs.get_int("max_gram_length", nn);
  p.max_skip = node.attrs.get_int("max_skip_count", nn);
  p.mode = node.attrs.get_string_or("mode", "", nn);
  p.counts = node.attrs.get_ints_or("ngram_counts", {}, nn);
  p.indexes = node.attrs.get_ints_or("ngram_indexes", {}, nn);
  p.pool = node.attrs.get_ints_or("pool_int64s", {}, nn);
  p.weights = node.attrs.get_floats_or("weights", {}, nn);
  if (node.attrs.has("pool_strings")) node_unsupported(node, "string pools are not supported");
  if (p.mode != "TF" && p.mode != "IDF" && p.mode != "TFIDF")
    node_fail(node, "mode '{}', expected TF, IDF or TFIDF", p.mode);
  if (p.min_n < 1 || p.max_n < p.min_n || p.max_skip < 0)
    node_fail(node, "gram lengths [{}, {}] / max_skip_count {} are invalid", p.min_n, p.max_n,
              p.max_skip);
  if (static_cast<int64_t>(p.counts.size()) < p.max_n)
    node_fail(node, "ngram_counts has {} entries for max_gram_length {}", p.counts.size(), p.max_n);
  p.out_size = 0;
  for (int64_t i : p.indexes) p.out_size = std::max(p.out_size, i + 1);
  return p;
}

Shape tfidf_shape(const Node& node, const Shape& x, const TfIdf& p) {
  if (x.size() == 1) return {p.out_size};
  if (x.size() == 2) return {x[0], p.out_size};
  node_fail(node, "X must be [N] or [B, N], got {}", shape_to_string(x));
}

std::vector<Tensor> tfidf_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = kernel_input(node, inputs, 0, "X");
  const TfIdf p = tfidf_params(node);
  const Shape os = tfidf_shape(node, x.shape(), p);
  const int64_t rows = x.rank() == 2 ? x.shape()[0] : 1, len = x.shape().back();
  const auto xs = tensor_to_int64s(node, x.rank() == 2 ? copy_reshaped(x, {x.numel()}) : x, "X");
  std::vector<double> y(static_cast<size_t>(rows * p.out_size), 0.0);
  int64_t pool_index = 0;  // index of the first n-gram of length n in pool order
  for (int64_t n = 1; n <= p.max_n; ++n) {
    const int64_t start = p.counts[n - 1];
    const int64_t end = n < static_cast<int64_t>(p.counts.size())
                            ? p.counts[n]
                            : static_cast<int64_t>(p.pool.size());
    const int64_t grams = (end - start) / n;
    if (n >= p.min_n) {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t skip = 0; skip <= (n == 1 ? 0 : p.max_skip); ++skip)
          for (int64_t s = 0; s + (n - 1) * (skip + 1) < len; ++s)
            for (int64_t g = 0; g < grams; ++g) {
              bool match = true;
              for (int64_t k = 0; k < n && match; ++k)
                match = xs[r * len + s + k * (skip + 1)] == p.pool[start + g * n + k];
              if (match) y[r * p.out_size + p.indexes[pool_index + g]] += 1;
            }
    }
    pool_index += grams;
  }
  Tensor out(DType::f32, os);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < static_cast<int64_t>(p.indexes.size()); ++g) {
      const int64_t o = p.indexes[g];
      double& v = y[r * p.out_size + o];
      const double w = g < static_cast<int64_t>(p.weights.size()) ? p.weights[g] : 1.0;
      if (p.mode == "IDF") v = v > 0 ? w : 0;
      if (p.mode == "TFIDF") v = v * w;
    }
  for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = static_cast<float>(y[i]);
  return one_output(std::move(out));
}

}  // namespace

void register_misc_ops() {
  register_op({"TfIdfVectorizer",
               [](Node& node) {
                 check_arity(node, 1, 1, 1, 1);
                 const Value& x = required_input(node, 0, "X");
                 expect_dtype(node, x.dtype, {DType::i32, DType::i64}, "input X");
                 set_output(node, 0, DType::f32, tfidf_shape(node, x.shape, tfidf_params(node)));
               },
               tfidf_kernel});
  register_window("HannWindow", Window::hann);
  register_window("HammingWindow", Window::hamming);
  register_window("BlackmanWindow", Window::blackman);
  register_det();
  register_reverse_sequence();
  register_maxunpool();
}

}  // namespace tessel::ops
