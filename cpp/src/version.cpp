// Engine version strings read once for every engine (see version.hpp).
#include "vramplan/version.hpp"

#include <cctype>
#include <string>

#include "vramplan/errors.hpp"

namespace vramplan {
namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The digits at `pos` as a number, `pos` moved past them; nullopt if there are none or more
// than six (every engine release number so far has at most three).
std::optional<std::int32_t> number_at(std::string_view text, std::size_t& pos) {
  std::int32_t value = 0;
  const std::size_t start = pos;
  while (pos < text.size() && is_digit(text[pos])) {
    if (pos - start >= 6) return std::nullopt;
    value = value * 10 + (text[pos] - '0');
    ++pos;
  }
  if (pos == start) return std::nullopt;
  return value;
}

bool dot_then_digit(std::string_view text, std::size_t pos) {
  return pos + 1 < text.size() && text[pos] == '.' && is_digit(text[pos + 1]);
}

}  // namespace

std::optional<Version> Version::read(std::string_view text) noexcept {
  std::size_t pos = 0;
  while (pos < text.size() && !is_digit(text[pos])) ++pos;
  const auto major = number_at(text, pos);
  if (!major || !dot_then_digit(text, pos)) return std::nullopt;
  ++pos;
  const auto minor = number_at(text, pos);
  if (!minor) return std::nullopt;
  std::optional<std::int32_t> patch = 0;
  if (dot_then_digit(text, pos)) {
    ++pos;
    patch = number_at(text, pos);
    if (!patch) return std::nullopt;
  }
  return Version{*major, *minor, *patch};
}

std::optional<Version> Version::find(std::string_view text) noexcept {
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    if (!is_digit(text[pos]) || (pos > 0 && is_digit(text[pos - 1]))) continue;
    if (const auto version = read(text.substr(pos))) return version;
  }
  return std::nullopt;
}

Version Version::parse(const std::string& text, const std::string& field) {
  const auto version = read(text);
  if (!version) {
    throw ConfigError(field, "'" + text + "'",
                      "<major>.<minor>[.<patch>] (\"0.10.2\", \"v0.11.0\", \"0.4.6.post5\")",
                      "not a version");
  }
  return *version;
}

std::string Version::text() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace vramplan
