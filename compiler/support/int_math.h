// Integer rounding shared by the tiling passes, the kernels' shape arithmetic and the reference
// ops: ceil / floor division and rounding up to a multiple, for a positive divisor and either
// sign of the dividend (C++'s `/` truncates towards zero, which is neither for a negative one).
#pragma once

#include <cstdint>

namespace tessel {

/// ceil(a / b) for b > 0 and any sign of a (ceil_div(-7, 2) = -3).
constexpr int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/// floor(a / b) for b > 0 and any sign of a (floor_div(-7, 2) = -4).
constexpr int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// The smallest multiple of b (b > 0) that is >= a.
constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

static_assert(ceil_div(7, 2) == 4 && ceil_div(8, 2) == 4 && ceil_div(-7, 2) == -3);
static_assert(floor_div(7, 2) == 3 && floor_div(-7, 2) == -4 && floor_div(-8, 2) == -4);
static_assert(round_up(17, 16) == 32 && round_up(16, 16) == 16 && round_up(0, 16) == 0);

}  // namespace tessel
