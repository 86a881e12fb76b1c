// Matrix products: MatMul (numpy matmul semantics: batched with broadcasting, 1-D operands
// promoted and the promoted dim removed), Gemm (alpha, beta, transA, transB, C unidirectionally
// broadcast to [M, N]) and Einsum (explicit and implicit output, ellipsis, repeated labels =
// diagonals); ONNX operator docs, opset 17.
//
// Kernels accumulate in the compute type (fp32 for f16/f32, f64, int64) with an i-k-j loop order
// so the innermost loop streams rows of B and C (vectorisable); no BLAS.
#include <algorithm>
#include <array>

#include "compiler/ops/op_util.h"

namespace tessel::ops {
namespace {

// ---------------------------------------------------------------------------------------------
// MatMul
// ---------------------------------------------------------------------------------------------

struct MatMulShapes {
  int64_t M, K, N;
  Shape batch;             // broadcast batch dims
  Shape a_batch, b_batch;  // each operand's batch dims (may be shorter / contain 1s)
  Shape out;
};

MatMulShapes matmul_shapes(const Node& node, const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) node_fail(node, "MatMul operands must have rank >= 1");
  MatMulShapes r;
  Shape a2 = a, b2 = b;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a2.insert(a2.begin(), 1);
  if (b_vec) b2.push_back(1);
  r.M = a2[a2.size() - 2];
  r.K = a2[a2.size() - 1];
  if (b2[b2.size() - 2] != r.K)
    node_fail(node, "inner dims differ: A {} and B {}", shape_to_string(a), shape_to_string(b));
  r.N = b2[b2.size() - 1];
  r.a_batch.assign(a2.begin(), a2.end() - 2);
  r.b_batch.assign(b2.begin(), b2.end() - 2);
  r.batch = broadcast_shapes(r.a_batch, r.b_batch, node.describe());
  r.out = r.batch;
  if (!a_vec) r.out.push_back(r.M);
  if (!b_vec) r.out.push_back(r.N);
  return r;
}

/// C[M, N] (+)= A[M, K] * B[K, N] for one batch, row-major, leading dims lda/ldb/ldc.
template <class C>
void gemm_block(int64_t M, int64_t N, int64_t K, const C* a, int64_t lda_row, int64_t lda_col,
                const C* b, int64_t ldb_row, int64_t ldb_col, C* c) {
  for (int64_t i = 0; i < M; ++i) {
    C* crow = c + i * N;
    for (int64_t k = 0; k < K; ++k) {
      const C av = a[i * lda_row + k * lda_col];
      const C* brow = b + k * ldb_row;
      if (ldb_col == 1) {
        for (int64_t j = 0; j < N; ++j) crow[j] += av * brow[j];
      } else {
        for (int64_t j = 0; j < N; ++j) crow[j] += av * brow[j * ldb_col];
      }
    }
  }
}

void matmul_infer(Node& node) {
  check_arity(node, 2, 2, 1, 1);
  const Value& a = required_input(node, 0, "A");
  const Value& b = required_input(node, 1, "B");
  expect_numeric(node, a.dtype, "input A");
  expect_same_dtype(node, 0, 1);
  set_output(node, 0, a.dtype, matmul_shapes(node, a.shape, b.shape).out);
}

std::vector<Tensor> matmul_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 2, 2, 1, 1);
  const Tensor& a = kernel_input(node, inputs, 0, "A");
  const Tensor& b = kernel_input(node, inputs, 1, "B");
  if (a.dtype() != b.dtype()) node_fail(node, "A and B have different dtypes");
  const MatMulShapes s = matmul_shapes(node, a.shape(), b.shape());
  return dispatch_numeric(node, a.dtype(), [&](auto tag) {
    using C = decltype(tag);
    InputView<C> va(a), vb(b);
    std::vector<C> acc(static_cast<size_t>(shape_numel(s.out)), C(0));
    const int64_t mat_a = s.M * s.K, mat_b = s.K * s.N, mat_c = s.M * s.N;
    // Offsets of each operand's matrix for every broadcast batch index.
    const auto sa = broadcast_strides(s.a_batch, s.batch);
    const auto sb = broadcast_strides(s.b_batch, s.batch);
    const Shape batch = s.batch.empty() ? Shape{1} : s.batch;
    StridedLoop<2> loop(batch, {s.batch.empty() ? std::vector<int64_t>{0} : sa,
                                s.batch.empty() ? std::vector<int64_t>{0} : sb});
    loop.run([&](int64_t i, const std::array<int64_t, 2>& off) {
      gemm_block<C>(s.M, s.N, s.K, va.data() + off[0] * mat_a, s.K, 1, vb.data() + off[1] * mat_b,
                    s.N, 1, acc.data() + i * mat_c);
    });
    OutputBuffer<C> out(a.dtype(), s.out);
    std::copy(acc.begin(), acc.end(), out.data());
    return one_output(out.finish());
  });
}

// ---------------------------------------------------------------------------------------------
// Gemm
// ---------------------------------------------------------------------------------------------

struct GemmShapes {
  int64_t M, K, N;
  bool trans_a, trans_b;
};

GemmShapes gemm_shapes(const Node& node, const Shape& a, const Shape& b, const Shape* c) {
  if (a.size() != 2 || b.size() != 2)
    node_fail(node, "A and B must be 2-D, got {} and {}", shape_to_string(a), shape_to_string(b));
  GemmShapes r;
  r.trans_a = node.attrs.get_int_or("transA", 0, node.name) != 0;
  r.trans_b = node.attrs.get_int_or("transB", 0, node.name) != 0;
  r.M = r.trans_a ? a[1] : a[0];
  r.K = r.trans_a ? a[0] : a[1];
  const int64_t kb = r.trans_b ? b[1] : b[0];
  r.N = r.trans_b ? b[0] : b[1];
  if (kb != r.K)
    node_fail(node, "inner dims differ: op(A) is [{}, {}], op(B) is [{}, {}]", r.M, r.K, kb, r.N);
  if (c && !unidirectional_broadcastable(*c, {r.M, r.N}))
    node_fail(node, "C shape {} does not broadcast to [{}, {}]", shape_to_string(*c), r.M, r.N);
  return r;
}

void gemm_infer(Node& node) {
  check_arity(node, 2, 3, 1, 1);
  const Value& a = required_input(node, 0, "A");
  const Value& b = required_input(node, 1, "B");
  const Value* c = node.input(2);
  expect_numeric(node, a.dtype, "input A");
  expect_same_dtype(node, 0, 1);
  if (c) expect_same_dtype(node, 0, 2);
  const GemmShapes g = gemm_shapes(node, a.shape, b.shape, c ? &c->shape : nullptr);
  set_output(node, 0, a.dtype, {g.M, g.N});
}

/// Y = alpha * op(A) op(B) + beta * C.
std::vector<Tensor> gemm_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  check_arity(node, 2, 3, 1, 1);
  const Tensor& a = kernel_input(node, inputs, 0, "A");
  const Tensor& b = kernel_input(node, inputs, 1, "B");
  const Tensor* c = inputs.size() > 2 ? inputs[2] : nullptr;
  if (a.dtype() != b.dtype() || (c && c->dtype() != a.dtype()))
    node_fail(node, "A, B and C must have the same dtype");
  const GemmShapes g = gemm_shapes(node, a.shape(), b.shape(), c ? &c->shape() : nullptr);
  const double alpha = node.attrs.get_float_or("alpha", 1.0f, node.name);
  const double beta = node.attrs.get_float_or("beta", 1.0f, node.name);
  return dispatch_numeric(node, a.dtype(), [&](auto tag) {
    using C = decltype(tag);
    InputView<C> va(a), vb(b);
    std::vector<C> acc(static_cast<size_t>(g.M * g.N), C(0));
    gemm_block<C>(g.M, g.N, g.K, va.data(), g.trans_a ? 1 : g.K, g.trans_a ? g.M : 1, vb.data(),
                  g.trans_b ? 1 : g.N, g.trans_b ? g.K : 1, acc.data());
    OutputBuffer<C> out(a.dtype(), {g.M, g.N});
    const C calpha = static_cast<C>(alpha), cbeta = static_cast<C>(beta);
    for (int64_t i = 0; i < g.M * g.N; ++i) out[i] = calpha * acc[i];
    if (c) {
      InputView<C> vc(*c);
      const Shape mn = {g.M, g.N};
      C* po = out.data();
      const C* pc = vc.data();
      for_each_broadcast<1>(mn, {&c->shape()}, [&](int64_t i, const std::array<int64_t, 1>& o) {
        po[i] += cbeta * pc[o[0]];
      });
    }
    return one_output(out.finish());
  });
}

// ---------------------------------------------------------------------------------------------
// Einsum
// ---------------------------------------------------------------------------------------------

/// A parsed einsum equation: per input, the label of each axis; the output labels; the size of
/// every label. Labels: 0..51 for letters, 52+i for the i-th (right-aligned) ellipsis dim.
struct EinsumPlan {
  std::vector<std::vector<int>> in_labels;
  std::vector<int> out_labels;
  std::vector<int64_t> label_size;  // indexed by label, -1 = unused
};

int letter_label(const Node& node, char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
  node_fail(node, "invalid character '{}' in the equation", ch);
}

/// Parses one term ("ab...c") into labels for an operand of rank `rank` (or for the output, when
/// rank < 0, with `ellipsis_rank` dims for "...").
std::vector<int> parse_term(const Node& node, const std::string& term, int64_t rank,
                            int64_t ellipsis_rank, int64_t* ellipsis_used) {
  std::vector<int> letters_before, letters_after;
  bool seen_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char ch = term[i];
    if (ch == ' ') continue;
    if (ch == '.') {
      if (seen_ellipsis || term.compare(i, 3, "...") != 0)
        node_fail(node, "malformed ellipsis in term '{}'", term);
      seen_ellipsis = true;
      i += 2;
      continue;
    }
    (seen_ellipsis ? letters_after : letters_before).push_back(letter_label(node, ch));
  }
  const int64_t n_letters = static_cast<int64_t>(letters_before.size() + letters_after.size());
  int64_t e = 0;
  if (rank >= 0) {
    e = rank - n_letters;
    if (e < 0 || (!seen_ellipsis && e != 0))
      node_fail(node, "term '{}' does not match an operand of rank {}", term, rank);
  } else {
    e = seen_ellipsis ? ellipsis_rank : 0;
  }
  if (ellipsis_used) *ellipsis_used = seen_ellipsis ? e : 0;
  std::vector<int> labels = letters_before;
  for (int64_t k = 0; k < e; ++k)
    labels.push_back(static_cast<int>(52 + (ellipsis_rank - e) + k));  // right-aligned
  labels.insert(labels.end(), letters_after.begin(), letters_after.end());
  return labels;
}

EinsumPlan einsum_plan(const Node& node, const std::vector<const Shape*>& shapes) {
  std::string eq = node.attrs.get_string_or("equation", "", node.name);
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  if (eq.empty()) node_fail(node, "attribute equation is required");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size())
    node_fail(node, "equation '{}' has {} operands, node has {} inputs", eq, terms.size(),
              shapes.size());
  // Ellipsis rank: the largest number of dims any operand's "..." covers.
  int64_t ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t used = 0;
    parse_term(node, terms[i], static_cast<int64_t>(shapes[i]->size()), 64, &used);
    ellipsis_rank = std::max(ellipsis_rank, used);
  }
  EinsumPlan p;
  p.label_size.assign(52 + ellipsis_rank, -1);
  std::vector<int> count(52 + ellipsis_rank, 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    p.in_labels.push_back(parse_term(node, terms[i], static_cast<int64_t>(shapes[i]->size()),
                                     ellipsis_rank, nullptr));
    for (size_t k = 0; k < p.in_labels[i].size(); ++k) {
      const int l = p.in_labels[i][k];
      const int64_t d = (*shapes[i])[k];
      int64_t& size = p.label_size[l];
      if (l < 52) {  // letters: every occurrence has the same size
        if (size == -1)
          size = d;
        else if (size != d)
          node_fail(node, "equation '{}': a label has sizes {} and {}", eq, size, d);
      } else {  // ellipsis dims broadcast (size 1 stretches)
        if (size == -1 || size == 1)
          size = d;
        else if (d != 1 && d != size)
          node_fail(node, "equation '{}': ellipsis dims {} and {} do not broadcast", eq, size, d);
      }
      ++count[l];
    }
  }
  if (arrow != std::string::npos) {
    p.out_labels = parse_term(node, eq.substr(arrow + 2), -1, ellipsis_rank, nullptr);
    std::vector<int> sorted_labels = p.out_labels;
    std::sort(sorted_labels.begin(), sorted_labels.end());
    if (std::adjacent_find(sorted_labels.begin(), sorted_labels.end()) != sorted_labels.end())
      node_fail(node, "equation '{}' repeats a label in the output", eq);
    for (int l : p.out_labels)
      if (p.label_size[l] < 0) node_fail(node, "output label not present in any input of '{}'", eq);
  } else {
    // Implicit output: ellipsis dims, then the letters that appear exactly once, alphabetically.
    for (int64_t k = 0; k < ellipsis_rank; ++k) p.out_labels.push_back(static_cast<int>(52 + k));
    std::vector<int> once;
    for (int l = 0; l < 52; ++l)
      if (count[l] == 1) once.push_back(l);
    // Alphabetical order sorts upper-case before lower-case (ASCII), as numpy does.
    std::sort(once.begin(), once.end(), [](int x, int y) {
      auto key = [](int l) { return l < 26 ? 'a' + l : 'A' + (l - 26); };
      return key(x) < key(y);
    });
    p.out_labels.insert(p.out_labels.end(), once.begin(), once.end());
  }
  return p;
}

void einsum_infer(Node& node) {
  if (node.inputs.empty()) node_fail(node, "expected at least one input");
  check_arity(node, 1, node.inputs.size(), 1, 1);
  std::vector<const Shape*> shapes;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value& v = required_input(node, i, "Inputs");
    expect_numeric(node, v.dtype, "input");
    expect_same_dtype(node, 0, i);
    shapes.push_back(&v.shape);
  }
  const EinsumPlan p = einsum_plan(node, shapes);
  Shape out;
  for (int l : p.out_labels) out.push_back(p.label_size[l]);
  set_output(node, 0, node.inputs[0]->dtype, out);
}

/// out[output labels] = sum over the other labels of prod_i input_i[its labels]; a label repeated
/// within one operand walks its diagonal; ellipsis dims of size 1 broadcast.
std::vector<Tensor> einsum_kernel(const Node& node, const std::vector<const Tensor*>& inputs) {
  std::vector<const Shape*> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    shapes.push_back(&kernel_input(node, inputs, i, "Inputs").shape());
    if (inputs[i]->dtype() != inputs[0]->dtype()) node_fail(node, "inputs have different dtypes");
  }
  const EinsumPlan p = einsum_plan(node, shapes);
  // Loop order: output labels, then summed labels.
  std::vector<int> loop_labels = p.out_labels;
  for (size_t l = 0; l < p.label_size.size(); ++l)
    if (p.label_size[l] >= 0 && std::find(p.out_labels.begin(), p.out_labels.end(),
                                          static_cast<int>(l)) == p.out_labels.end())
      loop_labels.push_back(static_cast<int>(l));
  const size_t L = loop_labels.size();
  Shape dims(L);
  for (size_t k = 0; k < L; ++k) dims[k] = p.label_size[loop_labels[k]];
  // Per input, stride of each loop label (summed over repeated labels; 0 for broadcast dims).
  std::vector<std::vector<int64_t>> strides(inputs.size(), std::vector<int64_t>(L, 0));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto st = row_major_strides(*shapes[i]);
    for (size_t a = 0; a < p.in_labels[i].size(); ++a) {
      if ((*shapes[i])[a] == 1 && p.label_size[p.in_labels[i][a]] != 1) continue;  // broadcast
      const size_t k = std::find(loop_labels.begin(), loop_labels.end(), p.in_labels[i][a]) -
                       loop_labels.begin();
      strides[i][k] += st[a];
    }
  }
  Shape out_shape;
  for (int l : p.out_labels) out_shape.push_back(p.label_size[l]);
  const int64_t n_out = shape_numel(out_shape);
  const int64_t n_red = shape_numel(Shape(dims.begin() + p.out_labels.size(), dims.end()));
  return dispatch_numeric(node, inputs[0]->dtype(), [&](auto tag) {
    using C = decltype(tag);
    std::vector<std::unique_ptr<InputView<C>>> views;
    for (const Tensor* t : inputs) views.push_back(std::make_unique<InputView<C>>(*t));
    OutputBuffer<C> out(inputs[0]->dtype(), out_shape);
    std::vector<int64_t> idx(L, 0);
    std::vector<int64_t> off(inputs.size(), 0);
    for (int64_t o = 0; o < n_out; ++o) {
      C sum = 0;
      for (int64_t r = 0; r < n_red; ++r) {
        C prod = 1;
        for (size_t i = 0; i < inputs.size(); ++i) prod *= (*views[i])[off[i]];
        sum += prod;
        // Advance the odometer over all labels (the output labels roll over after the summed
        // ones, exactly when r wraps).
        for (size_t k = L; k-- > 0;) {
          ++idx[k];
          for (size_t i = 0; i < inputs.size(); ++i) off[i] += strides[i][k];
          if (idx[k] < dims[k]) break;
          for (size_t i = 0; i < inputs.size(); ++i) off[i] -= strides[i][k] * dims[k];
          idx[k] = 0;
        }
      }
      out[o] = sum;
    }
    return one_output(out.finish());
  });
}

// ---------------------------------------------------------------------------------------------
// Quantized matrix products: MatMulInteger and QLinearMatMul (opset 10), per-tensor zero points
// and scales (a 1-element tensor); QLinearMatMul's b_scale / b_zero_point may also be per column
// of a 2-D b (1-D of N elements, ONNX QLinearMatMul, as ONNX Runtime takes them); other
// per-row/column parameters are unsupported.
// ---------------------------------------------------------------------------------------------

int64_t scalar_param(const Node& node, const Tensor* t, const char* role) {
  if (t == nullptr) return 0;
  if (t->numel() != 1)
    node_unsupported(node, "{} of shape {} is not supported (per-tensor only)", role,
                     shape_to_string(t->shape()));
  return load_as<int64_t>(t->raw(), t->dtype(), 0);
}

void expect_scalar_param(const Node& node, size_t i, const char* role) {
  const Value* v = node.input(i);
  if (v && shape_numel(v->shape) != 1)
    node_unsupported(node, "{} of shape {} is not supported (per-tensor only)", role,
                     shape_to_string(v->shape));
}

/// (A - a_zp) @ (B - b_zp) accumulated in int64, numpy matmul shapes; `bzp_per_column` (when
/// not null, N entries) replaces `bzp` per column of B.
std::vector<int64_t> integer_matmul(const Node& node, const MatMulShapes& s, const Tensor& a,
                                    int64_t azp, const Tensor& b, int64_t bzp,
                                    const Tensor* bzp_per_column = nullptr) {
  std::vector<int64_t> va(static_cast<size_t>(a.numel())), vb(static_cast<size_t>(b.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) va[i] = load_as<int64_t>(a.raw(), a.dtype(), i) - azp;
  for (int64_t i = 0; i < b.numel(); ++i)
    vb[i] =
        load_as<int64_t>(b.raw(), b.dtype(), i) -
        (bzp_per_column ? load_as<int64_t>(bzp_per_column->raw(), bzp_per_column->dtype(), i % s.N)
                        : bzp);
  std::vector<int64_t> acc(static_cast<size_t>(shape_numel(s.out)), 0);
  const int64_t mat_a = s.M * s.K, mat_b = s.K * s.N, mat_c = s.M * s.N;
  const auto sa = broadcast_strides(s.a_batch, s.batch);
  const auto sb = broadcast_strides(s.b_batch, s.batch);
  const Shape batch = s.batch.empty() ? Shape{1} : s.batch;
  StridedLoop<2> loop(batch, {s.batch.empty() ? std::vector<int64_t>{0} : sa,
                              s.batch.empty() ? std::vector<int64_t>{0} : sb});
  loop.run([&](int64_t i, const std::array<int64_t, 2>& off) {
    gemm_block<int64_t>(s.M, s.N, s.K, va.data() + off[0] * mat_a, s.K, 1,
                        vb.data() + off[1] * mat_b, s.N, 1, acc.data() + i * mat_c);
  });
  return acc;
}

void matmul_integer_infer(Node& node) {
  check_arity(node, 2, 4, 1, 1);
  const Value& a = required_input(node, 0, "A");
  const Value& b = required_input(node, 1, "B");
  expect_dtype(node, a.dtype, {DType::u8, DType::i8}, "input A");
  expect_dtype(node, b.dtype, {DType::u8, DType::i8}, "input B");
  expect_scalar_param(node, 2, "a_zero_point");
  expect_scalar_param(node, 3, "b_zero_point");
  set_output(node, 0, DType::i32, matmul_shapes(node, a.shape, b.shape).out);
}

std::vector<Tensor> matmul_integer_kernel(const Node& node,
                                          const std::vector<const Tensor*>& inputs) {
  const Tensor& a = kernel_input(node, inputs, 0, "A");
  const Tensor& b = kernel_input(node, inputs, 1, "B");
  const MatMulShapes s = matmul_shapes(node, a.shape(), b.shape());
  const auto acc = integer_matmul(
      node, s, a, scalar_param(node, inputs.size() > 2 ? inputs[2] : nullptr, "a_zero_point"), b,
      scalar_param(node, inputs.size() > 3 ? inputs[3] : nullptr, "b_zero_point"));
  Tensor y(DType::i32, s.out);
  for (size_t i = 0; i < acc.size(); ++i) y.data<int32_t>()[i] = static_cast<int32_t>(acc[i]);
  return one_output(std::move(y));
}

/// Whether a QLinearMatMul b parameter of shape `param` is per column of a 2-D b: [N].
bool per_column_param(const Shape& b, const Shape& param) {
  return b.size() == 2 && param.size() == 1 && param[0] == b[1] && b[1] != 1;
}

// QLinearMatMul: y = saturate(round((A - a_zp) @ (B - b_zp) * a_scale * b_scale / y_scale) + y_zp).
void qlinear_matmul_infer(Node& node) {
  check_arity(node, 8, 8, 1, 1);
  const Value& a = required_input(node, 0, "a");
  const Value& b = required_input(node, 3, "b");
  const Value& yzp = required_input(node, 7, "y_zero_point");
  expect_dtype(node, a.dtype, {DType::u8, DType::i8}, "input a");
  expect_dtype(node, b.dtype, {DType::u8, DType::i8}, "input b");
  expect_dtype(node, yzp.dtype, {DType::u8, DType::i8}, "input y_zero_point");
  const char* roles[] = {"",        "a_scale",      "a_zero_point", "",
                         "b_scale", "b_zero_point", "y_scale",      "y_zero_point"};
  for (size_t i : {1, 2, 6, 7}) expect_scalar_param(node, i, roles[i]);
  for (size_t i : {4, 5})
    if (!node.input(i) || !per_column_param(b.shape, node.input(i)->shape))
      expect_scalar_param(node, i, roles[i]);
  set_output(node, 0, yzp.dtype, matmul_shapes(node, a.shape, b.shape).out);
}

std::vector<Tensor> qlinear_matmul_kernel(const Node& node,
                                          const std::vector<const Tensor*>& inputs) {
  const Tensor& a = kernel_input(node, inputs, 0, "a");
  const Tensor& b = kernel_input(node, inputs, 3, "b");
  const Tensor& yzp = kernel_input(node, inputs, 7, "y_zero_point");
  const Tensor& bs = kernel_input(node, inputs, 4, "b_scale");
  const Tensor& bzp = kernel_input(node, inputs, 5, "b_zero_point");
  const MatMulShapes s = matmul_shapes(node, a.shape(), b.shape());
  const bool per_col_scale = per_column_param(b.shape(), bs.shape());
  const bool per_col_zp = per_column_param(b.shape(), bzp.shape());
  const auto acc = integer_matmul(node, s, a, scalar_param(node, inputs[2], "a_zero_point"), b,
                                  per_col_zp ? 0 : scalar_param(node, &bzp, "b_zero_point"),
                                  per_col_zp ? &bzp : nullptr);
  if (!per_col_scale) scalar_param(node, &bs, "b_scale");
  // fp32, in this order, as ONNX Runtime (requantize_fp32).
  const float as = kernel_input(node, inputs, 1, "a_scale").data<float>()[0];
  const float ys = kernel_input(node, inputs, 6, "y_scale").data<float>()[0];
  const int64_t z = scalar_param(node, &yzp, "y_zero_point");
  const auto [lo, hi] = quantized_range(node, yzp.dtype());
  Tensor y(yzp.dtype(), s.out);
  for (size_t i = 0; i < acc.size(); ++i) {
    const float scale = as * bs.data<float>()[per_col_scale ? i % s.N : 0] / ys;
    store_as<int64_t>(y.raw(), y.dtype(), static_cast<int64_t>(i),
                      requantize_fp32(acc[i], scale, z, lo, hi));
  }
  return one_output(std::move(y));
}

}  // namespace

void register_matmul_ops() {
  register_op({"MatMulInteger", matmul_integer_infer, matmul_integer_kernel});
  register_op({"QLinearMatMul", qlinear_matmul_infer, qlinear_matmul_kernel});
  register_op({"MatMul", matmul_infer, matmul_kernel});
  register_op({"Gemm", gemm_infer, gemm_kernel});
  register_op({"Einsum", einsum_infer, einsum_kernel});
}

}  // namespace tessel::ops
