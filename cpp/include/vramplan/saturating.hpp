// Byte sums and products that saturate at INT64_MAX instead of overflowing: specs and knobs
// are bounded one by one, not their products over layers, experts and ranks.
#pragma once

#include <cstdint>
#include <limits>

namespace vramplan {

constexpr std::int64_t kSaturatedBytes = std::numeric_limits<std::int64_t>::max();

inline std::int64_t saturating_mul(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? kSaturatedBytes : out;
}

inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? kSaturatedBytes : out;
}

}  // namespace vramplan
