// index_divisor: a divisor every value of an integer index expression has -- the alignment
// analysis of the GPU passes and code generator (a vector access is 16-byte aligned when its
// first element offset is always a multiple of 16 / element bytes).
#include <numeric>

#include "passes/loop/gpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;

int64_t index_divisor(const L::Expr& e) {
  switch (e->kind) {
    case L::ExprKind::Int:
      return std::abs(e->int_value);  // 0: divisible by anything
    case L::ExprKind::Add:
    case L::ExprKind::Sub:
    case L::ExprKind::Min:
    case L::ExprKind::Max:
      return std::gcd(index_divisor(e->args[0]), index_divisor(e->args[1]));
    case L::ExprKind::Mul:
      return index_divisor(e->args[0]) * index_divisor(e->args[1]);
    case L::ExprKind::FloorMod:  // x mod c = x - c floor(x / c): a multiple of gcd(d(x), c)
      return std::gcd(index_divisor(e->args[0]), e->args[1]->int_value);
    case L::ExprKind::Select:
      return std::gcd(index_divisor(e->args[1]), index_divisor(e->args[2]));
    default:  // variables, floordiv, conditions: any integer
      return 1;
  }
}

}  // namespace tessel::passes
