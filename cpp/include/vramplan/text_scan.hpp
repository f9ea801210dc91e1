// One engine-neutral scanner for the text an engine prints (startup logs, tracebacks, kernel
// lines): line cleaning, and "find a phrase, read the number right after it" with the offset
// taken from the phrase itself, never counted by hand. The phrases are the engine's data (see
// vllm_vocabulary.hpp); nothing here knows one engine's wording.
//
// Everything is bounded: a number is at most kMaxNumberChars characters, a prefix or header
// is looked for only in a line's first bytes, and no function allocates more than its input.
// No regular expressions, so no backtracking on hostile input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vramplan::text {

inline constexpr std::size_t npos = std::string_view::npos;
inline constexpr std::size_t kMaxNumberChars = 40;
// What clean_line leaves where it removes an escape sequence from inside a number (U+001A
// SUBSTITUTE): a control byte, so that the number is not one.
inline constexpr char kSplitNumber = '\x1a';

constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
constexpr bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }
constexpr bool is_ident(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}
constexpr bool starts_with(std::string_view s, std::string_view p) noexcept {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}
constexpr bool ends_with(std::string_view s, std::string_view p) noexcept {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}
constexpr bool contains(std::string_view s, std::string_view p) noexcept {
  return s.find(p) != npos;
}
constexpr char ascii_lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
// Equal but for ASCII letter case (a dtype, a flag value), without a lowered copy.
constexpr bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}
// How many leading characters a and b share (the "did you mean" score of a misspelt name).
constexpr std::size_t common_prefix(std::string_view a, std::string_view b) noexcept {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// Without leading and trailing blanks (spaces, tabs, line ends).
std::string_view trim(std::string_view s) noexcept;
// The first index at or after `pos` that is not a space or tab (s.size() at the end).
std::size_t skip_spaces(std::string_view s, std::size_t pos) noexcept;

// The index just past the first `phrase` in `s` at or after `from`, or npos: where the value
// the phrase introduces begins.
std::size_t after(std::string_view s, std::string_view phrase, std::size_t from = 0) noexcept;
// The index just past the last `phrase` that starts before `before`, or npos.
std::size_t after_last(std::string_view s, std::string_view phrase, std::size_t before) noexcept;

// --- line cleaning --------------------------------------------------------------------

// `raw` without ANSI escape sequences (ESC '[' params final-byte, the two-byte ESC forms, and
// the caret-escaped "^[[...m" copy left when coloured logs are pasted into issues), with bytes
// that are not valid UTF-8 replaced by U+FFFD. A sequence inside a number ("47 ESC[0m 6,016")
// becomes kSplitNumber, so that its digits do not join. `storage` holds the result when it
// differs.
std::string_view clean_line(std::string_view raw, std::string& storage);
// As clean_line, and control characters become spaces: text fit to show a person.
std::string printable(std::string_view raw);

// Without the process prefixes Python's multiprocessing and torch.distributed put before a
// message: "(EngineCore pid=242) ", "(Worker_TP1 pid=445) " (possibly nested) and "[rank0]: ".
std::string_view strip_process_prefix(std::string_view s) noexcept;
// "2026-04-19 11:40:35.639 | msg" (docker compose's timestamp column) -> "msg".
std::string_view strip_compose_timestamp(std::string_view s) noexcept;
// "LEVEL <anything>] msg" -> "msg" when `s` starts with one of `levels` (the logger's level
// words, each followed by a space) and "] " closes the header within its first 240 bytes.
template <typename Levels>
std::string_view strip_level_header(std::string_view s, const Levels& levels) noexcept {
  for (std::string_view level : levels) {
    if (!starts_with(s, level)) continue;
    const std::size_t close = s.find("] ");
    if (close != npos && close < 240) return trim(s.substr(close + 2));
    return s;
  }
  return s;
}

// --- numbers --------------------------------------------------------------------------

struct Number {
  double value = 0.0;
  std::size_t end = 0;  // one past the last character used
  bool integral = true;
};

// A decimal number at s[pos] (after optional spaces): optional sign, digits with optional
// thousands commas in groups of three ("1,234,560"), optional fraction. No exponent. A number
// running on into more number text ("1,23", "1.2.3", "1e5", "12-3") is malformed: none, never
// a prefix of it read as something else; so is one with a control byte (other than a tab or
// line end) against its digits ("47\0" "6,016").
std::optional<Number> read_number(std::string_view s, std::size_t pos);
// The number that ends right before s[end] ("(16.00 GiB KV cache is needed": end at " GiB").
std::optional<Number> read_number_before(std::string_view s, std::size_t end);
// A count (tokens, blocks, bytes, a pid): integral, not negative, within int64.
std::optional<std::int64_t> to_count(const Number& n) noexcept;

// A size "X GiB" / "X.XXGiB" / "X GB" / "X MiB" / "37760kB" / "0 bytes" at s[pos]. Binary
// units throughout (the "GB" and "kB" these logs print are GiB and KiB).
struct Size {
  double bytes = 0.0;
  std::size_t end = 0;
  double gib() const noexcept;
};
std::optional<Size> read_size(std::string_view s, std::size_t pos);

// The value right after the first `phrase` in `line`, if the line holds both.
std::optional<Number> number_after(std::string_view line, std::string_view phrase);
std::optional<std::int64_t> count_after(std::string_view line, std::string_view phrase);
std::optional<Size> size_after(std::string_view line, std::string_view phrase);

}  // namespace vramplan::text
