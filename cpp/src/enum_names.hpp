// Enum values to their fixed names, one table form for every vocabulary the core prints (the
// engines' failure causes, launch phases, advice actions) (internal to the core).
#pragma once

#include <array>
#include <cstddef>
#include <utility>

namespace vramplan {

// The name `names` gives `value`; `otherwise` for a value the table leaves out (the enum's
// "none"/"unknown").
template <typename Enum, std::size_t N>
constexpr const char* name_in(const std::array<std::pair<Enum, const char*>, N>& names, Enum value,
                              const char* otherwise) noexcept {
  for (const auto& [named, name] : names) {
    if (named == value) return name;
  }
  return otherwise;
}

}  // namespace vramplan
