// An optional value as JSON, one form for every JSON the core writes (internal to the core).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

namespace vramplan {

// `value` as JSON; null where it is absent (a figure a log does not print, a bound not known).
template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace vramplan
