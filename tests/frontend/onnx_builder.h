// Small helpers to build ONNX ModelProtos in tests with the protobuf API.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstring>
#include <string>
#include <variant>
#include <vector>

namespace tessel::testing {

/// A dim of a graph input: a static size or a dim_param name ("" = neither is set).
using OnnxDim = std::variant<int64_t, std::string>;

inline onnx::ModelProto make_model(int64_t opset, const std::string& graph_name = "g") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  m.mutable_graph()->set_name(graph_name);
  return m;
}

inline onnx::ValueInfoProto* add_input(onnx::ModelProto& m, const std::string& name, int elem_type,
                                       const std::vector<OnnxDim>& dims) {
  auto* vi = m.mutable_graph()->add_input();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (const auto* v = std::get_if<int64_t>(&d)) {
      dim->set_dim_value(*v);
    } else if (!std::get<std::string>(d).empty()) {
      dim->set_dim_param(std::get<std::string>(d));
    }
  }
  return vi;
}

inline void add_output(onnx::ModelProto& m, const std::string& name) {
  m.mutable_graph()->add_output()->set_name(name);
}

inline onnx::NodeProto* add_node(onnx::ModelProto& m, const std::string& op,
                                 const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs,
                                 const std::string& name = "") {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

inline onnx::AttributeProto* new_attr(onnx::NodeProto* n, const std::string& name,
                                      onnx::AttributeProto::AttributeType type) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
inline void attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  new_attr(n, name, onnx::AttributeProto::INT)->set_i(v);
}
inline void attr_float(onnx::NodeProto* n, const std::string& name, float v) {
  new_attr(n, name, onnx::AttributeProto::FLOAT)->set_f(v);
}
inline void attr_string(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  new_attr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}
inline void attr_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = new_attr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void attr_floats(onnx::NodeProto* n, const std::string& name, const std::vector<float>& v) {
  auto* a = new_attr(n, name, onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}
inline void attr_strings(onnx::NodeProto* n, const std::string& name,
                         const std::vector<std::string>& v) {
  auto* a = new_attr(n, name, onnx::AttributeProto::STRINGS);
  for (const auto& x : v) a->add_strings(x);
}

/// A TensorProto with raw_data holding `values` (whose C++ type must match elem_type's storage).
template <class T>
onnx::TensorProto raw_tensor(const std::string& name, int elem_type,
                             const std::vector<int64_t>& dims, const std::vector<T>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(elem_type);
  for (int64_t d : dims) t.add_dims(d);
  std::string raw(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  t.set_raw_data(raw);
  return t;
}

inline onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

inline onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

inline void add_initializer(onnx::ModelProto& m, const onnx::TensorProto& t) {
  *m.mutable_graph()->add_initializer() = t;
}

inline std::string serialize(const onnx::ModelProto& m) { return m.SerializeAsString(); }

}  // namespace tessel::testing
