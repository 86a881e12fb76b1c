// IEEE 754 binary16 (fp16) conversions, used wherever the NPU stores half-precision data.
//
// Conversions round to nearest, ties to even (IEEE 754-2019 §4.3.1), handle subnormals, infinities
// and NaN, and are bit-exact and deterministic (no dependence on the host's F16C support).
#pragma once

#include <cstdint>
#include <cstring>

namespace tessel {

/// Converts an fp32 value to the fp16 bit pattern (round to nearest even; overflow -> +-inf).
inline uint16_t f32_to_f16_bits(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {                                                // fp16 subnormal or 0
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24 -> aligns to 2^-24 units
    uint32_t half = mantissa >> shift;
    const uint32_t rem = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = ((abs - 0x38000000u) >> 13);  // rebias exponent 127 -> 15
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

/// Converts an fp16 bit pattern to fp32 (exact).
inline float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t x;
  if (exponent == 0) {
    if (mantissa == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      x = sign | ((112u - static_cast<uint32_t>(e)) << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else if (exponent == 31) {
    x = sign | 0x7f800000u | (mantissa << 13);
  } else {
    x = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}

/// Rounds an fp32 value to the nearest fp16-representable value (returned as fp32).
inline float round_to_f16(float value) { return f16_bits_to_f32(f32_to_f16_bits(value)); }

}  // namespace tessel
