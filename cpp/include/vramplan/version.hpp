// An engine release as (major, minor, patch): the one reader of version strings for every
// engine ("0.10.1.1", "v0.11.0", "0.4.6.post5", "v0.9.1rc2") and their one order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

namespace vramplan {

struct Version {
  std::int32_t major = 0;
  std::int32_t minor = 0;
  std::int32_t patch = 0;

  // Leading non-digits are skipped ("v0.6.4", "vllm-0.6.4"), then <major>.<minor> must follow;
  // a patch is read when digits follow the next dot (else 0) and anything after it (".post5",
  // "rc2", ".1", ".dev12+g0abc") is ignored. Each number has at most 6 digits. nullopt when
  // unreadable.
  static std::optional<Version> read(std::string_view text) noexcept;
  // The first version in free text, as read() takes it from each run of digits in turn ("0.8.x,
  // not printed", "stated 'vllm 0.6.6'", "worker.py:267 lines of a 0.8.3 build"); nullopt if none.
  static std::optional<Version> find(std::string_view text) noexcept;
  // As read(), with a ConfigError naming `field` and the text when it is unreadable.
  static Version parse(const std::string& text, const std::string& field = "version");

  std::string text() const;  // "<major>.<minor>.<patch>"
};

inline bool operator<(const Version& a, const Version& b) noexcept {
  return std::tie(a.major, a.minor, a.patch) < std::tie(b.major, b.minor, b.patch);
}
inline bool operator==(const Version& a, const Version& b) noexcept {
  return a.major == b.major && a.minor == b.minor && a.patch == b.patch;
}
inline bool operator!=(const Version& a, const Version& b) noexcept { return !(a == b); }
inline bool operator>(const Version& a, const Version& b) noexcept { return b < a; }
inline bool operator<=(const Version& a, const Version& b) noexcept { return !(b < a); }
inline bool operator>=(const Version& a, const Version& b) noexcept { return !(a < b); }

}  // namespace vramplan
