// Fuzz target `tensor_pb`: a serialized ONNX TensorProto (the backend-test input_K.pb /
// output_K.pb files `tessel check` and experiment inputs read) through the frontend's tensor
// reader (compiler/frontend/onnx_import.h) and the conversion to fp32 every consumer applies.
// Property checked on an accepted tensor: its byte size is numel x element size, and the fp32
// copy keeps the shape.
#include "compiler/frontend/onnx_import.h"
#include "tests/fuzz/fuzz_target.h"

TESSEL_FUZZ_TARGET(tensor_pb) {
  using namespace tessel;
  const Tensor t = frontend::parse_tensor_pb(std::string(data), "fuzz.pb");
  fuzz::fuzz_check(t.nbytes() == static_cast<size_t>(t.numel()) * dtype_size(t.dtype()),
                   "tensor of shape {} holds {} bytes", shape_to_string(t.shape()), t.nbytes());
  const Tensor f = t.dtype() == DType::f32 ? t : t.cast(DType::f32);
  fuzz::fuzz_check(f.shape() == t.shape(), "cast to f32 changed the shape");
  return true;
}
