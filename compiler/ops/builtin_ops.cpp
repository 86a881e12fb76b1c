// The list of built-in op families: register_builtin_ops() calls each family's registration
// (declared in compiler/ops/op_util.h, defined in compiler/ops/<family>.cpp).
#include "compiler/ops/op_registry.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/tessel_ext.h"

namespace tessel::ops {

void register_builtin_ops() {
  register_elementwise_ops();     // elementwise.cpp
  register_shape_ops();           // shape_ops.cpp
  register_conv_ops();            // conv.cpp
  register_pool_ops();            // pool.cpp
  register_matmul_ops();          // matmul.cpp
  register_norm_ops();            // norm.cpp
  register_reduce_ops();          // reduce.cpp
  register_resize_ops();          // resize.cpp
  register_loss_ops();            // loss.cpp
  register_quant_ops();           // quant.cpp
  register_misc_ops();            // misc.cpp
  register_rnn_ops();             // rnn.cpp
  register_sample_ops();          // sample.cpp
  register_signal_ops();          // signal.cpp
  register_data_dependent_ops();  // data_dependent.cpp
  register_control_flow_ops();    // control_flow.cpp (If, Loop, Scan)
  register_tessel_ext_ops();      // tessel_ext.cpp (Silu)
}

}  // namespace tessel::ops
