// ops::shape_input_slots: the op inputs whose values fix output shapes (op_registry.h).
#include "compiler/ops/op_registry.h"

namespace tessel::ops {

const std::map<std::string, std::vector<int>>& shape_input_slots() {
  static const std::map<std::string, std::vector<int>> slots = {
      {"Reshape", {1}},
      {"Slice", {1, 2, 3, 4}},
      {"Expand", {1}},
      {"Tile", {1}},
      {"ConstantOfShape", {0}},
      {"Range", {0, 1, 2}},
      {"Pad", {1}},
      {"Resize", {1, 2, 3}},
      {"Upsample", {1}},
      {"TopK", {1}},
      {"Split", {1}},
      {"Squeeze", {1}},
      {"Unsqueeze", {1}},
      {"ReduceSum", {1}},
      {"OneHot", {1}},
      {"NonZero", {0}},
      {"HannWindow", {0}},
      {"HammingWindow", {0}},
      {"BlackmanWindow", {0}},
      {"MaxUnpool", {2}},
      {"DFT", {1}},
      {"STFT", {1, 3}},
      {"MelWeightMatrix", {0, 1, 2, 3, 4}},
      {"Compress", {1}},
      // CumSum: the axis is a tensor input; the compiled targets need it at compile time.
      {"CumSum", {1}},
      {"Unique", {0}},
      {"NonMaxSuppression", {0, 1, 2, 3, 4}},
      // Loop: M and cond fix the trip count, the length of its scan outputs.
      {"Loop", {0, 1}},
  };
  return slots;
}

}  // namespace tessel::ops
