// ONNX frontend: ModelProto -> Graph IR, with opset canonicalisation (see onnx_import.h).
//
// Canonicalisation rewrites older/newer opset forms into the opset-17 form of each op, so that the
// op library implements one semantics per op (ONNX operator docs, https://onnx.ai/onnx/operators/,
// and the ONNX version converter adapters are the reference for each rewrite).
#include "compiler/frontend/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <fmt/ranges.h>

#include "compiler/ops/op_registry.h"

namespace tessel::frontend {

namespace {

constexpr int64_t kMinOpset = 6;  // opset 6: legacy forms upgraded to 7 on import
constexpr int64_t kMaxOpset = 18;

std::string onnx_dtype_name(int elem_type) {
  if (onnx::TensorProto_DataType_IsValid(elem_type)) {
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type));
  }
  return std::to_string(elem_type);
}

/// ONNX TensorProto.DataType -> DType (same numbering); `what` names the tensor/input for errors.
DType dtype_from_onnx(int elem_type, const std::string& what) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::BOOL:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      return static_cast<DType>(elem_type);
    case onnx::TensorProto::UNDEFINED:
      fail("{} has no element type (TensorProto.DataType UNDEFINED)", what);
    default:
      throw Unsupported(fmt::format("{} has element type {}, which tessel does not support", what,
                                    onnx_dtype_name(elem_type)));
  }
}

/// TensorProto -> Tensor: raw_data or the typed field for the dtype (float_data, int32_data for
/// 8/16-bit types, bool and f16 bits, int64_data, double_data, uint64_data for u32/u64).
Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& what) {
  if (p.data_location() == onnx::TensorProto::EXTERNAL || p.external_data_size() > 0) {
    std::string location = "?";
    for (const auto& kv : p.external_data()) {
      if (kv.key() == "location") location = kv.value();
    }
    throw Unsupported(
        fmt::format("{} keeps its data in an external file ('{}'); tessel reads only "
                    "tensors stored inside the .onnx file",
                    what, location));
  }
  if (p.has_segment()) {
    throw Unsupported(
        fmt::format("{} is a segment of a larger tensor, which tessel does not support", what));
  }
  const DType dtype = dtype_from_onnx(p.data_type(), what);
  Shape shape;
  for (int64_t d : p.dims()) {
    if (d < 0) fail("{} has a negative dimension in its dims", what);
    shape.push_back(d);
  }
  // The data must match the shape; checked before the tensor is allocated, so that a few bytes
  // of protobuf claiming a huge shape are an error, not gigabytes of zeros. (Shapes over
  // kMaxTensorBytes are left to the Tensor constructor, which names the limit.)
  const int64_t n = shape_numel(shape);
  if (n <= kMaxTensorBytes / dtype_size(dtype)) {
    const int64_t nbytes = n * dtype_size(dtype);
    if (p.has_raw_data()) {
      if (static_cast<int64_t>(p.raw_data().size()) != nbytes) {
        fail("{}: raw_data holds {} bytes, but {}{} needs {}", what, p.raw_data().size(),
             dtype_to_string(dtype), shape_to_string(shape), nbytes);
      }
    } else {
      // The typed field of each dtype (onnx.proto: 8/16-bit types, bool and f16 bits in
      // int32_data; u32 and u64 in uint64_data).
      const auto [count, field] = [&]() -> std::pair<int, const char*> {
        switch (dtype) {
          case DType::f32:
            return {p.float_data_size(), "float_data"};
          case DType::f64:
            return {p.double_data_size(), "double_data"};
          case DType::i64:
            return {p.int64_data_size(), "int64_data"};
          case DType::u32:
          case DType::u64:
            return {p.uint64_data_size(), "uint64_data"};
          default:
            return {p.int32_data_size(), "int32_data"};
        }
      }();
      if (count != n) {
        fail("{}: {} holds {} values, but {}{} has {} elements", what, field, count,
             dtype_to_string(dtype), shape_to_string(shape), n);
      }
    }
  }
  Tensor t(dtype, shape);
  if (p.has_raw_data()) {
    if (t.nbytes()) std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());
    return t;
  }
  switch (dtype) {
    case DType::f32:
      std::copy(p.float_data().begin(), p.float_data().end(), t.data<float>());
      break;
    case DType::f64:
      std::copy(p.double_data().begin(), p.double_data().end(), t.data<double>());
      break;
    case DType::i64:
      std::copy(p.int64_data().begin(), p.int64_data().end(), t.data<int64_t>());
      break;
    case DType::u32:
      for (int64_t i = 0; i < n; ++i)
        t.data<uint32_t>()[i] = static_cast<uint32_t>(p.uint64_data(i));
      break;
    case DType::u64:
      std::copy(p.uint64_data().begin(), p.uint64_data().end(), t.data<uint64_t>());
      break;
    case DType::i32:
      std::copy(p.int32_data().begin(), p.int32_data().end(), t.data<int32_t>());
      break;
    case DType::i16:
      for (int64_t i = 0; i < n; ++i) t.data<int16_t>()[i] = static_cast<int16_t>(p.int32_data(i));
      break;
    case DType::u16:
    case DType::f16:  // the f16 bit patterns, one per int32
      for (int64_t i = 0; i < n; ++i) {
        t.data<uint16_t>()[i] = static_cast<uint16_t>(p.int32_data(i));
      }
      break;
    case DType::i8:
      for (int64_t i = 0; i < n; ++i) t.data<int8_t>()[i] = static_cast<int8_t>(p.int32_data(i));
      break;
    case DType::u8:
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(p.int32_data(i));
      break;
    case DType::boolean:
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = p.int32_data(i) != 0 ? 1 : 0;
      break;
    default:
      internal_fail("tensor_from_proto: unhandled dtype {}", dtype_to_string(dtype));
  }
  return t;
}

/// Reads a whole file; `what` says what it is for the error message.
std::string read_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail("cannot open {} '{}': no such file", what, path);
  if (!std::filesystem::is_regular_file(path, ec)) {
    fail("cannot open {} '{}': not a regular file", what, path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open {} '{}': {}", what, path, std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("cannot read {} '{}': {}", what, path, std::strerror(errno));
  return ss.str();
}

/// AttributeProto -> AttrValue. `where` is "node 'x' (Op)".
AttrValue convert_attribute(const onnx::AttributeProto& a, const std::string& where) {
  if (!a.ref_attr_name().empty()) {
    throw Unsupported(
        fmt::format("{}: attribute '{}' refers to the function attribute '{}', which "
                    "tessel does not support",
                    where, a.name(), a.ref_attr_name()));
  }
  auto type = a.type();
  if (type == onnx::AttributeProto::UNDEFINED) {
    // Models from before the `type` field existed: infer the kind from the field that is set.
    if (a.has_f())
      type = onnx::AttributeProto::FLOAT;
    else if (a.has_i())
      type = onnx::AttributeProto::INT;
    else if (a.has_s())
      type = onnx::AttributeProto::STRING;
    else if (a.has_t())
      type = onnx::AttributeProto::TENSOR;
    else if (a.has_g())
      type = onnx::AttributeProto::GRAPH;
    else if (a.floats_size())
      type = onnx::AttributeProto::FLOATS;
    else if (a.ints_size())
      type = onnx::AttributeProto::INTS;
    else if (a.strings_size())
      type = onnx::AttributeProto::STRINGS;
    else
      fail("{}: attribute '{}' has no type and no value", where, a.name());
  }
  switch (type) {
    case onnx::AttributeProto::FLOAT:
      return a.f();
    case onnx::AttributeProto::INT:
      return static_cast<int64_t>(a.i());
    case onnx::AttributeProto::STRING:
      return a.s();
    case onnx::AttributeProto::TENSOR:
      return tensor_from_proto(a.t(), fmt::format("{}: attribute '{}'", where, a.name()));
    case onnx::AttributeProto::FLOATS:
      return std::vector<float>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto::INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto::STRINGS:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case onnx::AttributeProto::GRAPH:
    case onnx::AttributeProto::GRAPHS:
      throw Unsupported(
          fmt::format("{}: attribute '{}' holds a list of subgraphs, which tessel does not "
                      "support (If, Loop and Scan take one subgraph per attribute)",
                      where, a.name()));
    default:
      throw Unsupported(
          fmt::format("{}: attribute '{}' is of kind {}, which tessel does not support", where,
                      a.name(), onnx::AttributeProto_AttributeType_Name(type)));
  }
}

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// ReduceX ops whose axes moved from an attribute to an input in opset 18 (ReduceSum did in 13).
bool is_reduce_with_axes_input_since_18(const std::string& op) {
  static const std::set<std::string> ops = {"ReduceL1",        "ReduceL2",   "ReduceLogSum",
                                            "ReduceLogSumExp", "ReduceMax",  "ReduceMean",
                                            "ReduceMin",       "ReduceProd", "ReduceSumSquare"};
  return ops.count(op) != 0;
}

/// A node being imported, before it is added to the graph.
struct PendingNode {
  std::string op;
  std::string name;
  std::vector<Value*> inputs;
  std::vector<std::string> output_names;  // ONNX names; "" = omitted
  Attributes attrs;

  std::string where() const { return fmt::format("node '{}' ({})", name, op); }
  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
};

class Importer {
 public:
  Importer(const onnx::ModelProto& model, const ImportOptions& options)
      : model_(model), options_(options) {}

  /// How to bind input `name` whose model dims are `dims` (ImportOptions::bind_hint).
  std::string bind_hint(const std::string& name, const std::string& dims) const {
    if (options_.bind_hint) return options_.bind_hint(name, dims);
    return fmt::format("--input-shape {}={}", name, dims);
  }

  std::unique_ptr<Graph> run() {
    read_opset();
    const onnx::GraphProto& gp = model_.graph();
    g_ = std::make_unique<Graph>();
    g_->name = gp.name().empty() ? "main" : gp.name();
    g_->opset = opset_;
    collect_names(gp);
    if (gp.sparse_initializer_size() > 0) {
      throw Unsupported(fmt::format("sparse initializer '{}' is not supported",
                                    gp.sparse_initializer(0).values().name()));
    }
    import_initializers(gp);
    import_inputs(gp);
    for (int i : sort_nodes(gp)) import_node(gp.node(i));
    import_outputs(gp);
    verify_graph(*g_);
    return std::move(g_);
  }

 private:
  // ---------------------------------------------------------------------------------------------
  // Model-level parts

  void read_opset() {
    bool found = false;
    for (const auto& os : model_.opset_import()) {
      if (!is_default_domain(os.domain())) continue;
      opset_ = os.version();
      found = true;
    }
    // Both are valid models tessel does not handle: tessel::Unsupported (a tessel::Error).
    if (!found) {
      std::vector<std::string> others;
      for (const auto& os : model_.opset_import()) {
        others.push_back(fmt::format("{} {}", os.domain(), os.version()));
      }
      throw Unsupported(
          fmt::format("the model declares no default-domain opset (opset_import: "
                      "[{}]); tessel supports only the default ONNX domain",
                      fmt::join(others, ", ")));
    }
    if (opset_ < kMinOpset || opset_ > kMaxOpset) {
      throw Unsupported(
          fmt::format("the model uses default-domain opset {}; tessel supports "
                      "opsets {} to {}",
                      opset_, kMinOpset, kMaxOpset));
    }
  }

  void collect_names(const onnx::GraphProto& gp) {
    for (const auto& t : gp.initializer()) onnx_value_names_.insert(t.name());
    for (const auto& vi : gp.input()) onnx_value_names_.insert(vi.name());
    for (const auto& n : gp.node()) {
      if (!n.name().empty()) onnx_node_names_.insert(n.name());
      for (const auto& o : n.output()) onnx_value_names_.insert(o);
      for (const auto& i : n.input()) used_names_.insert(i);
    }
    for (const auto& vi : gp.output()) used_names_.insert(vi.name());
  }

  void import_initializers(const onnx::GraphProto& gp) {
    for (const auto& tp : gp.initializer()) {
      if (tp.name().empty()) fail("an initializer has no name");
      if (values_.count(tp.name())) fail("initializer '{}' is defined twice", tp.name());
      Tensor t = tensor_from_proto(tp, fmt::format("initializer '{}'", tp.name()));
      define(tp.name(), g_->add_constant(tp.name(), std::move(t)));
    }
  }

  void import_inputs(const onnx::GraphProto& gp) {
    std::vector<std::string> runtime_inputs;
    std::set<std::string> constant_inputs;
    // Names given in input_shapes must be runtime inputs: report a wrong name before anything
    // else (a misspelt name would otherwise surface as "dim unbound").
    for (const auto& vi : gp.input())
      (values_.count(vi.name()) ? constant_inputs.insert(vi.name()),
       void()                   : runtime_inputs.push_back(vi.name()));
    for (const auto& [name, shape] : options_.input_shapes) {
      if (std::find(runtime_inputs.begin(), runtime_inputs.end(), name) != runtime_inputs.end()) {
        continue;
      }
      if (constant_inputs.count(name) || values_.count(name)) {
        fail(
            "an input shape is given for '{}', which is an initializer (a constant), not a "
            "runtime input (runtime inputs: {})",
            name, fmt::join(runtime_inputs, ", "));
      }
      fail(
          "an input shape is given for '{}', which is not an input of the model (runtime inputs: "
          "{})",
          name, fmt::join(runtime_inputs, ", "));
    }
    for (const auto& [name, values] : options_.input_values) {
      if (std::find(runtime_inputs.begin(), runtime_inputs.end(), name) == runtime_inputs.end())
        fail(
            "a value is given for '{}', which is not a runtime input of the model (runtime "
            "inputs: {})",
            name, fmt::join(runtime_inputs, ", "));
    }
    runtime_inputs.clear();
    constant_inputs.clear();
    for (const auto& vi : gp.input()) {
      const std::string& name = vi.name();
      if (values_.count(name)) {  // also an initializer: a constant
        constant_inputs.insert(name);
        continue;
      }
      runtime_inputs.push_back(name);
      if (!vi.type().has_tensor_type()) {
        throw Unsupported(
            fmt::format("graph input '{}' is not a tensor (sequences, maps and "
                        "optionals are not supported)",
                        name));
      }
      const auto& tt = vi.type().tensor_type();
      const DType dtype = dtype_from_onnx(tt.elem_type(), fmt::format("graph input '{}'", name));
      auto bound = options_.input_shapes.find(name);
      Shape shape;
      if (bound != options_.input_shapes.end()) {
        shape = bound->second;
        for (int64_t d : shape) {
          if (d <= 0) {
            fail("input shape {} given for graph input '{}' has a non-positive dimension",
                 shape_to_string(shape), name);
          }
        }
      }
      if (!tt.has_shape()) {
        if (bound == options_.input_shapes.end()) {
          fail("graph input '{}' has no shape in the model; give its static shape with {}", name,
               bind_hint(name, "D0,D1,..."));
        }
      } else {
        const auto& sp = tt.shape();
        std::vector<std::string> dims_text;  // for messages: static dims, '?' for dynamic ones
        for (const auto& d : sp.dim()) {
          dims_text.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : "?");
        }
        const std::string model_shape = "[" + fmt::format("{}", fmt::join(dims_text, ",")) + "]";
        if (bound != options_.input_shapes.end()) {
          if (static_cast<int>(shape.size()) != sp.dim_size()) {
            fail(
                "input shape {} given for graph input '{}' has rank {}, but the model's input has "
                "rank {} (shape {})",
                shape_to_string(shape), name, shape.size(), sp.dim_size(), model_shape);
          }
          for (int a = 0; a < sp.dim_size(); ++a) {
            const auto& d = sp.dim(a);
            if (d.has_dim_value() && d.dim_value() != shape[static_cast<size_t>(a)]) {
              fail(
                  "input shape {} given for graph input '{}' conflicts with the model at axis {}: "
                  "the model fixes it to {} (model shape {})",
                  shape_to_string(shape), name, a, d.dim_value(), model_shape);
            }
          }
        } else {
          for (int a = 0; a < sp.dim_size(); ++a) {
            const auto& d = sp.dim(a);
            if (d.has_dim_value()) {
              if (d.dim_value() < 0) {
                fail("graph input '{}' has a negative dimension at axis {}", name, a);
              }
              shape.push_back(d.dim_value());
              continue;
            }
            const std::string dim_name = d.has_dim_param() && !d.dim_param().empty()
                                             ? fmt::format("dim '{}'", d.dim_param())
                                             : std::string("an unnamed dim");
            fail(
                "graph input '{}' axis {} is dynamic ({}); bind it with {}, replacing each ? by "
                "a positive size",
                name, a, dim_name, bind_hint(name, fmt::format("{}", fmt::join(dims_text, ","))));
          }
        }
      }
      auto bound_value = options_.input_values.find(name);
      if (bound_value != options_.input_values.end()) {
        define(name, g_->add_constant(name, bound_input(name, dtype, shape, bound_value->second)));
        continue;
      }
      Value* v = g_->add_value(name, dtype, shape);
      define(name, v);
      g_->inputs.push_back(v);
    }
  }

  // The constant an input bound to `values` becomes (ImportOptions::input_values).
  static Tensor bound_input(const std::string& name, DType dtype, const Shape& shape,
                            const std::vector<double>& values) {
    Tensor t(dtype, shape);
    if (static_cast<int64_t>(values.size()) != t.numel())
      fail("input '{}' is {}{} ({} elements) but {} values are given for it", name,
           dtype_to_string(dtype), shape_to_string(shape), t.numel(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      t.set_from_double(static_cast<int64_t>(i), values[i]);
      const double back = t.get_as_double(static_cast<int64_t>(i));
      if (!dtype_is_float(dtype) && back != values[i])
        fail("input '{}' is {}: the value {} given for it is not one ({})", name,
             dtype_to_string(dtype), values[i],
             dtype == DType::boolean ? "use 0 or 1" : "an integer in its range");
    }
    return t;
  }

  // Names a subgraph (and the subgraphs inside it) reads but does not define.
  static void free_names(const onnx::GraphProto& g, std::set<std::string>& out) {
    std::set<std::string> defined;
    for (const auto& t : g.initializer()) defined.insert(t.name());
    for (const auto& vi : g.input()) defined.insert(vi.name());
    for (const auto& nd : g.node())
      for (const auto& o : nd.output()) defined.insert(o);
    std::set<std::string> reads;
    for (const auto& nd : g.node()) {
      reads.insert(nd.input().begin(), nd.input().end());
      for (const auto& a : nd.attribute())
        if (a.has_g()) free_names(a.g(), reads);
    }
    for (const auto& vi : g.output()) reads.insert(vi.name());
    for (const auto& r : reads)
      if (!r.empty() && !defined.count(r)) out.insert(r);
  }

  // Node indices in a topological order (the model's order when it already is one).
  std::vector<int> sort_nodes(const onnx::GraphProto& gp) {
    const int n = gp.node_size();
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < n; ++i) {
      for (const auto& o : gp.node(i).output()) {
        if (o.empty()) continue;
        auto [it, fresh] = producer.emplace(o, i);
        if (!fresh) {
          fail("value '{}' is produced by two nodes ('{}' and '{}')", o, gp.node(it->second).name(),
               gp.node(i).name());
        }
      }
    }
    std::vector<int> pending(static_cast<size_t>(n), 0);
    std::vector<std::vector<int>> consumers(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> reads(gp.node(i).input().begin(), gp.node(i).input().end());
      std::set<std::string> implicit;  // what its subgraphs read from this scope
      for (const auto& a : gp.node(i).attribute())
        if (a.has_g()) free_names(a.g(), implicit);
      reads.insert(reads.end(), implicit.begin(), implicit.end());
      for (const auto& in : reads) {
        auto it = producer.find(in);
        if (in.empty() || it == producer.end() || values_.count(in)) continue;
        ++pending[static_cast<size_t>(i)];
        consumers[static_cast<size_t>(it->second)].push_back(i);
      }
    }
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (int i = 0; i < n; ++i) {
      if (pending[static_cast<size_t>(i)] == 0) ready.push(i);
    }
    std::vector<int> order;
    while (!ready.empty()) {
      const int i = ready.top();
      ready.pop();
      order.push_back(i);
      for (int c : consumers[static_cast<size_t>(i)]) {
        if (--pending[static_cast<size_t>(c)] == 0) ready.push(c);
      }
    }
    if (static_cast<int>(order.size()) != n) {
      for (int i = 0; i < n; ++i) {
        if (pending[static_cast<size_t>(i)] > 0) {
          fail("the graph's nodes form a cycle (node '{}' ({}) is on or after it)",
               gp.node(i).name(), gp.node(i).op_type());
        }
      }
    }
    return order;
  }

  void import_outputs(const onnx::GraphProto& gp) {
    bool model_fully_static = options_.input_shapes.empty();
    for (const auto& vi : gp.output()) {
      auto it = values_.find(vi.name());
      if (it == values_.end()) {
        fail("graph output '{}' is not produced by any node, initializer or input", vi.name());
      }
      Value* v = it->second;
      if (vi.type().has_tensor_type()) {
        const auto& tt = vi.type().tensor_type();
        if (tt.elem_type() != onnx::TensorProto::UNDEFINED &&
            tt.elem_type() != static_cast<int>(v->dtype)) {
          fail("graph output '{}' is declared {} in the model, but shape inference gives {}",
               vi.name(), onnx_dtype_name(tt.elem_type()), dtype_to_string(v->dtype));
        }
        // Static output dims are checked only when no input dim was bound by the user (a bound
        // batch size may legitimately differ from a static dim the exporter wrote).
        if (model_fully_static && tt.has_shape()) {
          const auto& sp = tt.shape();
          bool mismatch = sp.dim_size() != static_cast<int>(v->shape.size());
          for (int a = 0; !mismatch && a < sp.dim_size(); ++a) {
            mismatch = sp.dim(a).has_dim_value() &&
                       sp.dim(a).dim_value() != v->shape[static_cast<size_t>(a)];
          }
          if (mismatch) {
            std::vector<std::string> dims;
            for (const auto& d : sp.dim()) {
              dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : "?");
            }
            fail(
                "graph output '{}' is declared with shape [{}] in the model, but shape inference "
                "gives {}",
                vi.name(), fmt::join(dims, ","), shape_to_string(v->shape));
          }
        }
      }
      g_->outputs.push_back(v);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Nodes

  void define(const std::string& onnx_name, Value* v) {
    auto [it, fresh] = values_.emplace(onnx_name, v);
    if (!fresh) {
      fail("value '{}' is defined twice (by an initializer, graph input or node output)",
           onnx_name);
    }
  }

  std::string fresh_value_name(const std::string& base) {
    std::string name = base;
    for (int64_t k = 1; g_->find_value(name) || onnx_value_names_.count(name); ++k) {
      name = base + "_" + std::to_string(k);
    }
    return name;
  }

  std::string fresh_node_name(const std::string& base, bool numbered) {
    int64_t& k = node_counter_[base];
    std::string name = numbered ? base + "_" + std::to_string(k++) : base;
    while (g_->find_node(name) || onnx_node_names_.count(name)) {
      name = base + "_" + std::to_string(k++);
    }
    return name;
  }

  Value* const_i64(const std::string& base, const std::vector<int64_t>& values) {
    return g_->add_constant(fresh_value_name(base),
                            Tensor::from_int64s({static_cast<int64_t>(values.size())}, values));
  }

  Value* const_scalar(const std::string& base, DType dtype, double value) {
    Tensor t(dtype, {});
    t.set_from_double(0, value);
    return g_->add_constant(fresh_value_name(base), std::move(t));
  }

  // Adds a node and runs its shape rule with data propagation.
  // Inside a subgraph, a node whose shape rule cannot run yet (an input typed only per iteration,
  // or a shape input that is the iteration number) keeps untyped outputs (`?`): the body is typed
  // again when it is instantiated for an iteration (compiler/ops/control_flow.h).
  Node* emit(const std::string& op, const std::string& name, std::vector<Value*> inputs,
             std::vector<Value*> outputs, Attributes attrs) {
    Node* n = g_->add_node(op, name, std::move(inputs), std::move(outputs), std::move(attrs));
    if (outer_.empty()) {
      ops::infer_and_propagate(*n);
      return n;
    }
    bool typed = true;
    for (const Value* in : n->inputs) typed = typed && (!in || in->dtype != DType::undefined);
    try {
      if (typed) {
        ops::infer_and_propagate(*n);
        return n;
      }
    } catch (const Error&) {
      bool iteration_dependent = false;  // only then may the shape rule succeed per iteration
      for (const Value* in : n->inputs) iteration_dependent |= in && !in->constant;
      if (!iteration_dependent || ops::find_op(op) == nullptr) throw;
    }
    for (Value* out : n->outputs) {
      out->dtype = DType::undefined;
      out->shape.clear();
      out->constant.reset();
    }
    return n;
  }

  // ---------------------------------------------------------------------------------------------
  // Subgraphs (If, Loop, Scan)

  // The value an ONNX name denotes in the current scope; a name of an enclosing scope becomes a
  // capture of every scope in between (graph.h). Null when no scope defines it.
  Value* lookup(const std::string& name) {
    auto it = values_.find(name);
    if (it != values_.end()) return it->second;
    if (outer_.empty()) return nullptr;
    Value* outer = lookup_in(outer_.size() - 1, name);
    if (!outer) return nullptr;
    return add_capture(*g_, values_, captures_, name, outer);
  }

  Value* lookup_in(size_t level, const std::string& name) {
    Scope& sc = outer_[level];
    auto it = sc.values.find(name);
    if (it != sc.values.end()) return it->second;
    if (level == 0) return nullptr;
    Value* outer = lookup_in(level - 1, name);
    if (!outer) return nullptr;
    return add_capture(*sc.g, sc.values, sc.captures, name, outer);
  }

  static Value* add_capture(Graph& g, std::unordered_map<std::string, Value*>& values,
                            std::vector<std::pair<Value*, Value*>>& captures,
                            const std::string& name, Value* outer) {
    Value* inner = g.add_value(name, outer->dtype, outer->shape);
    inner->constant = outer->constant;  // a known enclosing value is known inside too
    captures.push_back({outer, inner});
    values[name] = inner;
    return inner;
  }

  // Imports subgraph `gp` whose formal inputs the op binds to `formal` types, in a new scope.
  // Returns it with its captures (enclosing value, value in the subgraph).
  std::pair<GraphAttr, std::vector<std::pair<Value*, Value*>>> import_subgraph(
      const onnx::GraphProto& gp, const std::vector<std::pair<DType, Shape>>& formal,
      const std::string& where) {
    outer_.push_back({std::move(g_), std::move(values_), std::move(captures_)});
    g_ = std::make_unique<Graph>();
    values_.clear();
    captures_.clear();
    g_->name = gp.name().empty() ? "body" : gp.name();
    g_->opset = opset_;
    collect_names(gp);
    if (gp.sparse_initializer_size() > 0)
      throw Unsupported(fmt::format("{}: subgraph '{}' has a sparse initializer", where, g_->name));
    import_initializers(gp);
    if (gp.input_size() != static_cast<int>(formal.size()))
      fail("{}: subgraph '{}' declares {} inputs, but the op binds {}", where, g_->name,
           gp.input_size(), formal.size());
    for (int i = 0; i < gp.input_size(); ++i) {
      const auto& vi = gp.input(i);
      if (vi.type().has_sequence_type() || vi.type().has_optional_type() ||
          vi.type().has_map_type())
        throw Unsupported(
            fmt::format("{}: subgraph input '{}' is not a tensor (sequences, maps and "
                        "optionals are not supported)",
                        where, vi.name()));
      const int declared = vi.type().has_tensor_type() ? vi.type().tensor_type().elem_type() : 0;
      if (declared != onnx::TensorProto::UNDEFINED && declared != static_cast<int>(formal[i].first))
        fail("{}: subgraph '{}' input '{}' is declared {} but is bound to {}", where, g_->name,
             vi.name(), onnx_dtype_name(declared), dtype_to_string(formal[i].first));
      Value* v = g_->add_value(vi.name(), formal[i].first, formal[i].second);
      define(vi.name(), v);
      g_->inputs.push_back(v);
    }
    for (int i : sort_nodes(gp)) import_node(gp.node(i));
    for (const auto& vi : gp.output()) {
      Value* v = lookup(vi.name());
      if (!v) fail("{}: subgraph '{}' output '{}' is not defined", where, g_->name, vi.name());
      g_->outputs.push_back(v);
    }
    GraphAttr result(std::move(g_));
    auto caps = std::move(captures_);
    Scope sc = std::move(outer_.back());
    outer_.pop_back();
    g_ = std::move(sc.g);
    values_ = std::move(sc.values);
    captures_ = std::move(sc.captures);
    return {result, caps};
  }

  // The types an op binds its subgraph's formal inputs to.
  std::vector<std::pair<DType, Shape>> formal_types(const PendingNode& n) {
    std::vector<std::pair<DType, Shape>> f;
    if (n.op == "Loop") {
      f.push_back({DType::i64, {}});
      f.push_back({DType::boolean, {}});
      for (size_t k = 2; k < n.inputs.size(); ++k) {
        Value* v = required(n, k, "v_initial");
        f.push_back({v->dtype, v->shape});
      }
    } else if (n.op == "Scan") {
      const int64_t m = n.attrs.get_int("num_scan_inputs", n.name);
      const int64_t count = static_cast<int64_t>(n.inputs.size());
      if (m < 1 || m > count) fail("{}: num_scan_inputs = {} with {} inputs", n.where(), m, count);
      const auto axes = n.attrs.get_ints_or("scan_input_axes", std::vector<int64_t>(m, 0), n.name);
      if (static_cast<int64_t>(axes.size()) != m)
        fail("{}: scan_input_axes has {} entries for {} scan inputs", n.where(), axes.size(), m);
      for (int64_t k = 0; k < count; ++k) {
        Value* v = required(n, k, "input");
        Shape shape = v->shape;
        if (k >= count - m) {
          int64_t a = axes[k - (count - m)];
          const auto rank = static_cast<int64_t>(shape.size());
          if (a < -rank || a >= rank) fail("{}: scan axis {} out of range", n.where(), a);
          if (a < 0) a += rank;
          shape.erase(shape.begin() + a);
        }
        f.push_back({v->dtype, shape});
      }
    } else if (n.op != "If") {
      throw Unsupported(
          fmt::format("{}: has a subgraph attribute; tessel runs the subgraphs of "
                      "If, Loop and Scan only",
                      n.where()));
    }
    return f;
  }

  // Imports the subgraph attributes of a control-flow node and appends the enclosing values they
  // capture to its inputs, giving every subgraph the same capture list (graph.h).
  void import_subgraphs(PendingNode& n, const std::vector<const onnx::AttributeProto*>& attrs) {
    const auto formal = formal_types(n);
    std::vector<Value*> captured;  // enclosing values, in first-capture order
    std::vector<std::pair<GraphAttr, std::vector<std::pair<Value*, Value*>>>> subs;
    for (const onnx::AttributeProto* a : attrs) {
      subs.push_back(import_subgraph(a->g(), n.op == "If" ? decltype(formal){} : formal,
                                     fmt::format("{} attribute '{}'", n.where(), a->name())));
      for (const auto& [outer, inner] : subs.back().second)
        if (std::find(captured.begin(), captured.end(), outer) == captured.end())
          captured.push_back(outer);
    }
    for (size_t i = 0; i < attrs.size(); ++i) {
      Graph& g = *subs[i].first;
      for (Value* outer : captured) {
        Value* inner = nullptr;
        for (const auto& [o, in] : subs[i].second)
          if (o == outer) inner = in;
        if (!inner) {  // not read by this subgraph: an unused capture keeps the lists aligned
          inner = g.add_value(outer->name, outer->dtype, outer->shape);
          inner->constant = outer->constant;
        }
        g.captures.push_back(inner);
      }
      n.attrs.set(attrs[i]->name(), subs[i].first);
    }
    n.inputs.insert(n.inputs.end(), captured.begin(), captured.end());
  }

  // Scan-8 (a batch axis 0 before the scan axis, optional sequence_lens) -> one Scan-9 per batch
  // element on Squeeze(Slice(x, b)) slices, the results stacked back along axis 0.
  void import_scan_8(PendingNode& n, const std::vector<const onnx::AttributeProto*>& attrs) {
    if (n.input(0))
      throw Unsupported(fmt::format("{}: Scan-8 with sequence_lens is not supported", n.where()));
    if (attrs.size() != 1 || attrs[0]->name() != "body")
      fail("{}: Scan-8 takes one subgraph attribute 'body'", n.where());
    const int64_t m = n.attrs.get_int("num_scan_inputs", n.name);
    const auto dirs = n.attrs.get_ints_or("directions", std::vector<int64_t>(m, 0), n.name);
    std::vector<Value*> ins(n.inputs.begin() + 1, n.inputs.end());
    if (ins.empty() || m < 1 || m > static_cast<int64_t>(ins.size()))
      fail("{}: num_scan_inputs = {} with {} state and scan inputs", n.where(), m, ins.size());
    const int64_t batch = required(n, 1, "input")->shape.at(0);
    std::vector<std::vector<Value*>> per_output(n.output_names.size());
    for (int64_t b = 0; b < batch; ++b) {
      PendingNode s;
      s.op = "Scan";
      s.name = fresh_node_name(n.name + "_b" + std::to_string(b), false);
      for (Value* v : ins) {
        if (!v || v->shape.empty() || v->shape[0] != batch)
          fail("{}: every Scan-8 input needs the batch axis 0 of size {}", n.where(), batch);
        Value* sl = g_->add_value(fresh_value_name(v->name + "_b" + std::to_string(b) + "_slice"),
                                  DType::undefined, {});
        emit("Slice", fresh_node_name(s.name + "_slice", false),
             {v, const_i64(s.name + "_start", {b}), const_i64(s.name + "_end", {b + 1}),
              const_i64(s.name + "_axis", {0})},
             {sl}, {});
        Value* out = g_->add_value(fresh_value_name(v->name + "_b" + std::to_string(b)),
                                   DType::undefined, {});
        emit("Squeeze", fresh_node_name(s.name + "_squeeze", false),
             {sl, const_i64(s.name + "_axis", {0})}, {out}, {});
        s.inputs.push_back(out);
      }
      s.attrs.set("num_scan_inputs", m);
      s.attrs.set("scan_input_directions", dirs);
      s.attrs.set("body", GraphAttr{});
      import_subgraphs(s, attrs);
      std::vector<Value*> outs;
      for (size_t k = 0; k < n.output_names.size(); ++k)
        outs.push_back(g_->add_value(fresh_value_name(s.name + "_out" + std::to_string(k)),
                                     DType::undefined, {}));
      emit("Scan", s.name, std::move(s.inputs), outs, std::move(s.attrs));
      for (size_t k = 0; k < outs.size(); ++k) {
        Value* u = g_->add_value(fresh_value_name(outs[k]->name + "_batch"), DType::undefined, {});
        emit("Unsqueeze", fresh_node_name(s.name + "_unsqueeze", false),
             {outs[k], const_i64(s.name + "_axes", {0})}, {u}, {});
        per_output[k].push_back(u);
      }
    }
    for (size_t k = 0; k < n.output_names.size(); ++k) {
      const std::string& o = n.output_names[k];
      Value* v =
          g_->add_value(o.empty() ? fresh_value_name(n.name + "_unused") : o, DType::undefined, {});
      if (!o.empty()) define(o, v);
      Attributes a;
      a.set("axis", int64_t{0});
      emit("Concat", fresh_node_name(n.name + "_concat" + std::to_string(k), false), per_output[k],
           {v}, std::move(a));
    }
  }

  void import_node(const onnx::NodeProto& np) {
    PendingNode n;
    n.op = np.op_type();
    n.name = np.name().empty() ? fresh_node_name(n.op, /*numbered=*/true) : np.name();
    if (!is_default_domain(np.domain())) {
      throw Unsupported(
          fmt::format("{} is in domain '{}'; tessel supports only the default ONNX "
                      "domain",
                      n.where(), np.domain()));
    }
    std::vector<const onnx::AttributeProto*> graph_attrs;
    for (const auto& a : np.attribute()) {
      if (n.attrs.has(a.name())) fail("{}: attribute '{}' is given twice", n.where(), a.name());
      if (a.type() == onnx::AttributeProto::GRAPH ||
          (a.type() == onnx::AttributeProto::UNDEFINED && a.has_g())) {
        graph_attrs.push_back(&a);  // imported below, once the node's input types are known
        n.attrs.set(a.name(), GraphAttr{});
        continue;
      }
      n.attrs.set(a.name(), convert_attribute(a, n.where()));
    }
    if (n.op == "Constant") {
      import_constant(np, n);
      return;
    }
    for (const auto& in : np.input()) {
      if (in.empty()) {
        n.inputs.push_back(nullptr);
        continue;
      }
      Value* v = lookup(in);
      if (!v) {
        fail("{}: input '{}' is not produced by any node, initializer or graph input", n.where(),
             in);
      }
      n.inputs.push_back(v);
    }
    n.output_names.assign(np.output().begin(), np.output().end());
    // Trailing omitted outputs are dropped; omitted ones in the middle get a placeholder value.
    while (!n.output_names.empty() && n.output_names.back().empty()) n.output_names.pop_back();
    if (n.output_names.empty()) fail("{} has no outputs", n.where());

    if (!graph_attrs.empty()) {
      if (n.op == "Scan" && opset_ < 9) {
        import_scan_8(n, graph_attrs);
        return;
      }
      import_subgraphs(n, graph_attrs);
    }
    canonicalize(n);

    std::vector<Value*> outputs;
    for (size_t k = 0; k < n.output_names.size(); ++k) {
      const std::string& o = n.output_names[k];
      if (o.empty()) {
        outputs.push_back(g_->add_value(fresh_value_name(n.name + "_unused_" + std::to_string(k)),
                                        DType::undefined, {}));
        continue;
      }
      if (values_.count(o)) {
        fail("{}: output '{}' is already defined (by an initializer, graph input or another node)",
             n.where(), o);
      }
      Value* v = g_->add_value(o, DType::undefined, {});
      define(o, v);
      outputs.push_back(v);
    }
    emit(n.op, n.name, std::move(n.inputs), std::move(outputs), std::move(n.attrs));
  }

  // Constant -> a constant value (value, value_float(s), value_int(s)).
  void import_constant(const onnx::NodeProto& np, const PendingNode& n) {
    if (np.output_size() != 1 || np.output(0).empty()) fail("{} must have one output", n.where());
    if (np.input_size() != 0) fail("{} must have no inputs", n.where());
    const auto& all = n.attrs.all();
    if (all.size() != 1) {
      fail(
          "{} must have exactly one of the attributes value, value_float, value_floats, "
          "value_int, value_ints (has {})",
          n.where(), all.size());
    }
    const auto& [key, attr] = *all.begin();
    Tensor t;
    if (key == "value") {
      const Tensor* p = std::get_if<Tensor>(&attr);
      if (!p) fail("{}: attribute 'value' must be a tensor", n.where());
      t = *p;
    } else if (key == "value_float") {
      t = Tensor::scalar_f32(n.attrs.get_float_or(key, 0.0f, n.name));
    } else if (key == "value_floats") {
      auto v = n.attrs.get_floats_or(key, {}, n.name);
      t = Tensor::from_floats({static_cast<int64_t>(v.size())}, v);
    } else if (key == "value_int") {
      t = Tensor::from_int64s({}, {n.attrs.get_int(key, n.name)});
    } else if (key == "value_ints") {
      auto v = n.attrs.get_ints_or(key, {}, n.name);
      t = Tensor::from_int64s({static_cast<int64_t>(v.size())}, v);
    } else if (key == "value_string" || key == "value_strings") {
      throw Unsupported(fmt::format("{}: string constants are not supported", n.where()));
    } else {
      fail(
          "{}: unknown attribute '{}' (expected value, value_float, value_floats, value_int or "
          "value_ints)",
          n.where(), key);
    }
    const std::string& name = np.output(0);
    if (values_.count(name)) fail("{}: output '{}' is already defined", n.where(), name);
    define(name, g_->add_constant(name, std::move(t)));
  }

  // ---------------------------------------------------------------------------------------------
  // Canonicalisation to the opset-17 forms

  Value* required(const PendingNode& n, size_t i, const char* role) {
    Value* v = n.input(i);
    if (!v) fail("{}: missing input {} ({})", n.where(), i, role);
    return v;
  }

  void set_input(PendingNode& n, size_t i, Value* v, const char* attr) {
    if (n.inputs.size() <= i) n.inputs.resize(i + 1, nullptr);
    if (n.inputs[i]) {
      fail("{}: has both the attribute '{}' (opset {} form) and input {}", n.where(), attr, opset_,
           i);
    }
    n.inputs[i] = v;
  }

  // Moves ints attribute `attr` to input `index` as a 1-D i64 constant.
  void ints_attr_to_input(PendingNode& n, const char* attr, size_t index, bool required_attr) {
    if (!n.attrs.has(attr)) {
      if (required_attr) fail("{}: missing required attribute '{}'", n.where(), attr);
      return;
    }
    const auto values = n.attrs.get_ints_or(attr, {}, n.name);
    n.attrs.erase(attr);
    set_input(n, index, const_i64(n.name + "_" + attr, values), attr);
  }

  // A compile-time known input as int64s (for rewrites that need the values).
  std::vector<int64_t> known_ints(const PendingNode& n, size_t i, const char* role) {
    Value* v = required(n, i, role);
    if (!v->constant) {
      throw Unsupported(
          fmt::format("{}: input {} ({}) must be known at compile time", n.where(), i, role));
    }
    return v->constant->to_int64_vector();
  }

  void canonicalize(PendingNode& n) {
    const std::string op = n.op;
    if (opset_ < 7) canonicalize_6(n);
    if (op == "Clip" && opset_ < 11) {
      // Clip-6: min/max attributes -> optional inputs 1/2 (scalars of the input's dtype).
      const DType dtype = required(n, 0, "input")->dtype;
      if (!dtype_is_float(dtype)) {
        fail("{}: Clip-6 takes a float input, got {}", n.where(), dtype_to_string(dtype));
      }
      for (auto [attr, index] : {std::pair<const char*, size_t>{"min", 1}, {"max", 2}}) {
        if (!n.attrs.has(attr)) continue;
        const float v = n.attrs.get_float_or(attr, 0.0f, n.name);
        n.attrs.erase(attr);
        set_input(n, index, const_scalar(n.name + "_" + attr, dtype, v), attr);
      }
    } else if (op == "Slice" && opset_ < 10) {
      // Slice-1: starts/ends/axes attributes -> inputs 1/2/3 (steps default to 1).
      ints_attr_to_input(n, "starts", 1, true);
      ints_attr_to_input(n, "ends", 2, true);
      ints_attr_to_input(n, "axes", 3, false);
    } else if ((op == "Squeeze" || op == "Unsqueeze") && opset_ < 13) {
      ints_attr_to_input(n, "axes", 1, op == "Unsqueeze");
    } else if (op == "ReduceSum" && opset_ < 13) {
      ints_attr_to_input(n, "axes", 1, false);
    } else if (is_reduce_with_axes_input_since_18(op) && opset_ >= 18) {
      canonicalize_reduce_18(n);
    } else if (op == "Split") {
      if (opset_ < 13) ints_attr_to_input(n, "split", 1, false);
      if (opset_ >= 18) canonicalize_split_18(n);
    } else if (op == "Pad") {
      if (opset_ < 11) canonicalize_pad_2(n);
      if (opset_ >= 18) canonicalize_pad_18(n);
    } else if (op == "TopK" && opset_ < 10) {
      // TopK-1: k attribute -> input 1 (a 1-element i64 tensor).
      if (!n.attrs.has("k")) fail("{}: missing required attribute 'k'", n.where());
      const int64_t k = n.attrs.get_int("k", n.name);
      n.attrs.erase("k");
      set_input(n, 1, const_i64(n.name + "_k", {k}), "k");
    } else if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset_ < 13) {
      canonicalize_softmax_1(n);
    } else if (op == "Resize") {
      if (opset_ == 10) canonicalize_resize_10(n);
      if (opset_ >= 18) canonicalize_resize_18(n);
    } else if (op == "Upsample") {
      canonicalize_upsample(n);
    } else if (op == "BatchNormalization") {
      canonicalize_batchnorm(n);
    } else if (op == "Dropout" && opset_ < 12) {
      // Inference: Dropout is the identity; its ratio/is_test attributes do not matter.
      n.attrs.erase("ratio");
      n.attrs.erase("is_test");
    }
  }

  // Opset 6 -> 7 (ONNX Changelog.md, the version converter's adapters for 6 -> 7): the ops whose
  // version 7 changed semantics or attributes. The rest of opset 6 has the opset-7 semantics (the
  // other rewrites below take the older forms of Clip, Slice, Squeeze, Pad, Softmax, ...).
  //   Add/Sub/Mul/Div/Pow, And/Or/Xor, Equal/Greater/Less (version 1/6): `broadcast` and `axis`
  //     (legacy broadcasting: B's dims align with A's from `axis`, or as a suffix without `axis`;
  //     without broadcast=1 the shapes are equal) -> numpy broadcasting, B reshaped with trailing
  //     1s when `axis` places it before A's last dims.
  //   Gemm-6: `broadcast` on C -> dropped (Gemm-7 always broadcasts C unidirectionally).
  //   PRelu-6: a 1-D slope of X's channel count is per channel (axis 1) -> slope [C, 1, ..., 1].
  //   BatchNormalization-6 / Dropout-6: is_test=1 (inference) -> dropped (below); is_test=0, the
  //     default, is training mode: Unsupported (Dropout with ratio 0 is the identity either way).
  //   Upsample-1 (height_scale/width_scale): not supported.
  void canonicalize_6(PendingNode& n) {
    static const std::set<std::string> legacy_broadcast = {
        "Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"};
    const std::string& op = n.op;
    if (legacy_broadcast.count(op)) {
      const int64_t broadcast = n.attrs.get_int_or("broadcast", 0, n.name);
      const bool has_axis = n.attrs.has("axis");
      const int64_t axis_attr = n.attrs.get_int_or("axis", 0, n.name);
      n.attrs.erase("broadcast");
      n.attrs.erase("axis");
      Value* a = required(n, 0, "A");
      Value* b = required(n, 1, "B");
      const auto ra = static_cast<int64_t>(a->shape.size());
      const auto rb = static_cast<int64_t>(b->shape.size());
      if (!broadcast) {
        if (a->shape != b->shape)
          fail("{}: without broadcast=1 (opset {}) A and B must have the same shape, got {} and {}",
               n.where(), opset_, shape_to_string(a->shape), shape_to_string(b->shape));
        return;
      }
      if (rb > ra)
        fail("{}: broadcast=1 needs rank(B) <= rank(A), got {} and {}", n.where(), rb, ra);
      if (!has_axis) return;  // suffix alignment = numpy broadcasting of B into A
      const int64_t axis = axis_attr < 0 ? axis_attr + ra : axis_attr;
      if (axis < 0 || axis + rb > ra)
        fail("{}: axis={} places B {} outside A {}", n.where(), axis_attr,
             shape_to_string(b->shape), shape_to_string(a->shape));
      for (int64_t k = 0; k < rb; ++k) {
        const int64_t da = a->shape[axis + k], db = b->shape[k];
        if (db != da && db != 1)
          fail("{}: B {} does not broadcast into A {} from axis {}", n.where(),
               shape_to_string(b->shape), shape_to_string(a->shape), axis);
      }
      const int64_t trailing = ra - axis - rb;
      if (trailing > 0 && rb > 0) {
        Shape target = b->shape;
        target.insert(target.end(), trailing, 1);
        n.inputs[1] = reshaped(b, target, n.name + "_B");
      }
    } else if (op == "Gemm") {
      n.attrs.erase("broadcast");
    } else if (op == "BatchNormalization" || op == "Dropout") {
      // Version 6 runs in training mode (batch statistics, random mask) unless is_test=1, and
      // is_test defaults to 0; tessel imports inference graphs only.
      const bool zero_ratio =
          op == "Dropout" && n.attrs.get_float_or("ratio", 0.5f, n.name) == 0.0f;
      if (n.attrs.get_int_or("is_test", 0, n.name) != 1 && !zero_ratio)
        throw Unsupported(fmt::format(
            "{}: {}-6 without is_test=1 runs in training mode ({}); tessel imports inference "
            "graphs only",
            n.where(), op, op == "Dropout" ? "a random mask" : "batch statistics"));
    } else if (op == "PRelu") {
      Value* x = required(n, 0, "X");
      Value* slope = required(n, 1, "slope");
      if (x->shape.size() > 2 && slope->shape.size() == 1 && slope->shape[0] > 1 &&
          slope->shape[0] == x->shape[1]) {
        Shape target(x->shape.size() - 1, 1);
        target[0] = slope->shape[0];
        n.inputs[1] = reshaped(slope, target, n.name + "_slope");
      }
    } else if (op == "Upsample") {
      throw Unsupported(
          fmt::format("{}: Upsample-1 (opset {}; height_scale/width_scale) is not supported; "
                      "opset 7 and later are",
                      n.where(), opset_));
    } else if (op == "LSTM" || op == "GRU" || op == "RNN") {
      n.attrs.erase("output_sequence");  // RNN-1: every output is optional since version 7
    }
  }

  // `v` with shape `target` (the same element count): a new constant when `v` is one, otherwise
  // a Reshape node.
  Value* reshaped(Value* v, const Shape& target, const std::string& base) {
    if (v->constant && !v->producer) {
      Tensor t = *v->constant;
      return g_->add_constant(fresh_value_name(base), t.reshaped(target));
    }
    Value* out = g_->add_value(fresh_value_name(base), DType::undefined, {});
    emit("Reshape", fresh_node_name(base + "_reshape", false),
         {v, const_i64(base + "_shape", std::vector<int64_t>(target.begin(), target.end()))}, {out},
         {});
    return out;
  }

  // ReduceX-18: axes input -> axes attribute (the opset-13..17 form).
  void canonicalize_reduce_18(PendingNode& n) {
    const int64_t noop = n.attrs.get_int_or("noop_with_empty_axes", 0, n.name);
    n.attrs.erase("noop_with_empty_axes");
    std::vector<int64_t> axes;
    if (n.input(1)) axes = known_ints(n, 1, "axes");
    n.inputs.resize(1);
    if (!axes.empty()) {
      n.attrs.set("axes", axes);
    } else if (noop) {
      // Empty axes with noop_with_empty_axes=1: the input is passed through.
      n.op = "Identity";
      n.attrs = Attributes{};
    }
  }

  // Split-18: num_outputs attribute -> explicit split sizes when the split is uneven (the last
  // chunk is smaller: ceil(dim / num_outputs) each, the rest last).
  void canonicalize_split_18(PendingNode& n) {
    if (!n.attrs.has("num_outputs")) return;
    const int64_t k = n.attrs.get_int("num_outputs", n.name);
    n.attrs.erase("num_outputs");
    if (n.input(1))
      fail("{}: has both the 'split' input and the 'num_outputs' attribute", n.where());
    if (k <= 0 || k != static_cast<int64_t>(n.output_names.size())) {
      fail("{}: num_outputs={} but the node has {} outputs", n.where(), k, n.output_names.size());
    }
    const Value* x = required(n, 0, "input");
    const auto rank = static_cast<int64_t>(x->shape.size());
    int64_t axis = n.attrs.get_int_or("axis", 0, n.name);
    if (axis < -rank || axis >= rank)
      fail("{}: axis {} out of range for rank {}", n.where(), axis, rank);
    if (axis < 0) axis += rank;
    const int64_t dim = x->shape[static_cast<size_t>(axis)];
    if (dim % k == 0) return;  // the opset-17 default: equal parts
    const int64_t chunk = (dim + k - 1) / k;
    if (chunk * (k - 1) >= dim) {
      fail("{}: cannot split a dimension of {} into {} outputs", n.where(), dim, k);
    }
    std::vector<int64_t> sizes(static_cast<size_t>(k), chunk);
    sizes.back() = dim - chunk * (k - 1);
    set_input(n, 1, const_i64(n.name + "_split", sizes), "num_outputs");
  }

  // Pad-2: pads/value attributes -> inputs 1 (i64 pads) and 2 (constant_value of the input dtype).
  void canonicalize_pad_2(PendingNode& n) {
    const DType dtype = required(n, 0, "data")->dtype;
    ints_attr_to_input(n, "pads", 1, true);
    if (n.attrs.has("value")) {
      const float v = n.attrs.get_float_or("value", 0.0f, n.name);
      n.attrs.erase("value");
      set_input(n, 2, const_scalar(n.name + "_value", dtype, v), "value");
    }
  }

  // Pad-18: optional axes input -> pads over all axes (zeros on the axes not listed).
  void canonicalize_pad_18(PendingNode& n) {
    if (!n.input(3)) return;
    const auto axes = known_ints(n, 3, "axes");
    const auto pads = known_ints(n, 1, "pads");
    const auto rank = static_cast<int64_t>(required(n, 0, "data")->shape.size());
    const auto na = static_cast<int64_t>(axes.size());
    if (static_cast<int64_t>(pads.size()) != 2 * na) {
      fail("{}: pads has {} values for {} axes (expected {})", n.where(), pads.size(), na, 2 * na);
    }
    std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
    for (int64_t i = 0; i < na; ++i) {
      int64_t a = axes[static_cast<size_t>(i)];
      if (a < -rank || a >= rank) fail("{}: axis {} out of range for rank {}", n.where(), a, rank);
      if (a < 0) a += rank;
      full[static_cast<size_t>(a)] = pads[static_cast<size_t>(i)];
      full[static_cast<size_t>(a + rank)] = pads[static_cast<size_t>(i + na)];
    }
    n.inputs[1] = const_i64(n.name + "_pads", full);
    n.inputs.resize(3);
    while (!n.inputs.empty() && !n.inputs.back()) n.inputs.pop_back();
  }

  // Softmax/LogSoftmax/Hardmax-1/11: the input is coerced to 2-D [prod(d[:axis]), prod(d[axis:])]
  // and the op runs on the rows. The same as the opset-13 op over the last axis when axis is the
  // last axis; otherwise Reshape(2-D) -> op(axis=1) -> Reshape(back).
  void canonicalize_softmax_1(PendingNode& n) {
    Value* x = required(n, 0, "input");
    const auto rank = static_cast<int64_t>(x->shape.size());
    int64_t axis = n.attrs.get_int_or("axis", 1, n.name);
    if (rank == 0) fail("{}: input must have rank >= 1", n.where());
    if (axis < -rank || axis >= rank)
      fail("{}: axis {} out of range for rank {}", n.where(), axis, rank);
    if (axis < 0) axis += rank;
    if (axis == rank - 1) {
      n.attrs.set("axis", axis);
      return;
    }
    int64_t rows = 1, cols = 1;
    for (int64_t a = 0; a < rank; ++a) (a < axis ? rows : cols) *= x->shape[static_cast<size_t>(a)];
    Value* shape_2d = const_i64(n.name + "_shape_2d", {rows, cols});
    Value* shape_back = const_i64(n.name + "_shape_nd", x->shape);
    Value* x2d = g_->add_value(fresh_value_name(n.name + "_in_2d"), DType::undefined, {});
    emit("Reshape", fresh_node_name(n.name + "_to_2d", false), {x, shape_2d}, {x2d}, {});
    Value* y2d = g_->add_value(fresh_value_name(n.name + "_out_2d"), DType::undefined, {});
    Attributes attrs;
    attrs.set("axis", int64_t{1});
    emit(n.op, n.name, {x2d}, {y2d}, std::move(attrs));
    // The final node (created by import_node) restores the shape and defines the ONNX output.
    n.op = "Reshape";
    n.name = fresh_node_name(n.name + "_to_nd", false);
    n.inputs = {y2d, shape_back};
    n.attrs = Attributes{};
  }

  // Resize-10 (X, scales; mode) -> Resize-11 form (X, roi, scales) with the opset-10 sampling:
  // asymmetric coordinates and, for nearest, floor rounding (as ONNX's resize_10_11 adapter).
  void canonicalize_resize_10(PendingNode& n) {
    Value* x = required(n, 0, "X");
    Value* scales = required(n, 1, "scales");
    const std::string mode = n.attrs.get_string_or("mode", "nearest", n.name);
    n.inputs = {x, g_->add_constant(fresh_value_name(n.name + "_roi"), Tensor(DType::f32, {0})),
                scales};
    n.attrs.set("mode", mode);
    n.attrs.set("coordinate_transformation_mode", std::string("asymmetric"));
    if (mode == "nearest") n.attrs.set("nearest_mode", std::string("floor"));
  }

  // Resize-18: antialias/axes/keep_aspect_ratio_policy have no opset-17 form unless default.
  void canonicalize_resize_18(PendingNode& n) {
    if (n.attrs.get_int_or("antialias", 0, n.name) != 0) {
      throw Unsupported(fmt::format("{}: antialias=1 is not supported", n.where()));
    }
    if (n.attrs.has("axes")) {
      throw Unsupported(fmt::format("{}: the 'axes' attribute is not supported", n.where()));
    }
    if (n.attrs.get_string_or("keep_aspect_ratio_policy", "stretch", n.name) != "stretch") {
      throw Unsupported(
          fmt::format("{}: keep_aspect_ratio_policy other than 'stretch' is not "
                      "supported",
                      n.where()));
    }
    n.attrs.erase("antialias");
    n.attrs.erase("keep_aspect_ratio_policy");
  }

  // Upsample-7 (scales attribute) / -9 (scales input) -> Resize(X, roi, scales) with asymmetric
  // coordinates; nearest uses floor rounding, linear/bilinear become linear.
  void canonicalize_upsample(PendingNode& n) {
    Value* x = required(n, 0, "X");
    Value* scales = nullptr;
    if (n.attrs.has("scales")) {
      if (n.input(1)) fail("{}: has both the 'scales' attribute and a scales input", n.where());
      const auto s = n.attrs.get_floats_or("scales", {}, n.name);
      scales = g_->add_constant(fresh_value_name(n.name + "_scales"),
                                Tensor::from_floats({static_cast<int64_t>(s.size())}, s));
    } else {
      scales = required(n, 1, "scales");
    }
    std::string mode = n.attrs.get_string_or("mode", "nearest", n.name);
    if (mode == "bilinear") mode = "linear";
    if (mode != "nearest" && mode != "linear") {
      fail("{}: mode '{}' (expected nearest, linear or bilinear)", n.where(), mode);
    }
    Attributes attrs;
    attrs.set("mode", mode);
    attrs.set("coordinate_transformation_mode", std::string("asymmetric"));
    if (mode == "nearest") attrs.set("nearest_mode", std::string("floor"));
    n.op = "Resize";
    n.inputs = {x, g_->add_constant(fresh_value_name(n.name + "_roi"), Tensor(DType::f32, {0})),
                scales};
    n.attrs = std::move(attrs);
  }

  // BatchNormalization: inference form only. spatial (<9) must be 1; is_test/consumed_inputs and
  // training_mode=0 are dropped; training statistics outputs must be unused (they are dropped).
  void canonicalize_batchnorm(PendingNode& n) {
    if (opset_ < 9) {
      if (n.attrs.get_int_or("spatial", 1, n.name) != 1) {
        throw Unsupported(
            fmt::format("{}: spatial=0 (per-activation statistics) is not supported", n.where()));
      }
      n.attrs.erase("spatial");
    }
    n.attrs.erase("is_test");
    n.attrs.erase("consumed_inputs");
    if (n.attrs.get_int_or("training_mode", 0, n.name) != 0) {
      throw Unsupported(
          fmt::format("{}: training_mode=1 is not supported (inference only)", n.where()));
    }
    n.attrs.erase("training_mode");
    for (size_t k = 1; k < n.output_names.size(); ++k) {
      if (!n.output_names[k].empty() && used_names_.count(n.output_names[k])) {
        throw Unsupported(
            fmt::format("{}: output '{}' (training statistics) is used; tessel imports "
                        "inference graphs only",
                        n.where(), n.output_names[k]));
      }
    }
    n.output_names.resize(1);
  }

  const onnx::ModelProto& model_;
  const ImportOptions& options_;
  int64_t opset_ = 0;
  std::unique_ptr<Graph> g_;
  std::unordered_map<std::string, Value*> values_;  // ONNX value name -> value
  // Enclosing scopes while a subgraph is imported (outermost first), and the current scope's
  // captures (enclosing value, value in the subgraph).
  struct Scope {
    std::unique_ptr<Graph> g;
    std::unordered_map<std::string, Value*> values;
    std::vector<std::pair<Value*, Value*>> captures;
  };
  std::vector<Scope> outer_;
  std::vector<std::pair<Value*, Value*>> captures_;
  std::unordered_set<std::string> onnx_value_names_;
  std::unordered_set<std::string> onnx_node_names_;
  std::unordered_set<std::string> used_names_;  // read by a node or a graph output
  std::unordered_map<std::string, int64_t> node_counter_;
};

}  // namespace

std::unique_ptr<Graph> import_onnx(const std::string& path, const ImportOptions& options) {
  return import_onnx_bytes(read_file(path, "ONNX model"), path, options);
}

std::unique_ptr<Graph> import_onnx_bytes(const std::string& bytes, const std::string& source_name,
                                         const ImportOptions& options) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    fail(
        "{}: not a valid ONNX model (the protobuf data cannot be parsed: is the file truncated or "
        "not an .onnx file?)",
        source_name);
  }
  if (!model.has_graph()) fail("{}: the ONNX model contains no graph", source_name);
  try {
    Importer importer(model, options);
    return importer.run();
  } catch (const Unsupported& e) {
    throw Unsupported(fmt::format("{}: {}", source_name, e.what()));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", source_name, e.what()));
  }
}

Tensor load_tensor_pb(const std::string& path) {
  return parse_tensor_pb(read_file(path, "tensor file"), path);
}

Tensor parse_tensor_pb(const std::string& bytes, const std::string& source_name) {
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    fail("{}: not a valid serialized ONNX TensorProto", source_name);
  }
  try {
    return tensor_from_proto(proto, fmt::format("tensor '{}'", proto.name()));
  } catch (const Unsupported& e) {
    throw Unsupported(fmt::format("{}: {}", source_name, e.what()));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", source_name, e.what()));
  }
}

Shape parse_dims(const std::string& text, const std::string& context) {
  auto bad = [&](const std::string& why) -> Error {
    return Error(
        fmt::format("{}: bad shape '{}': {} (expected positive integers separated by "
                    "commas, e.g. 1,3,48,192)",
                    context, text, why));
  };
  if (text.empty()) throw bad("it is empty");
  Shape out;
  size_t pos = 0;
  while (true) {
    const size_t comma = text.find(',', pos);
    std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const auto first = item.find_first_not_of(" \t");
    const auto last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
    if (item.empty()) throw bad(fmt::format("dimension {} is empty", out.size()));
    int64_t d = 0;
    auto res = std::from_chars(item.data(), item.data() + item.size(), d);
    if (res.ec != std::errc() || res.ptr != item.data() + item.size()) {
      throw bad(fmt::format("'{}' is not an integer", item));
    }
    if (d <= 0) throw bad(fmt::format("dimension {} is {}, must be positive", out.size(), d));
    out.push_back(d);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace tessel::frontend
