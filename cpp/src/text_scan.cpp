#include "vramplan/text_scan.hpp"

#include <charconv>

#include "vramplan/utf8.hpp"

namespace vramplan::text {
namespace {

bool digit_at(std::string_view s, std::size_t i) { return i < s.size() && is_digit(s[i]); }
bool is_blank(char c) { return is_space(c) || c == '\n' || c == '\r'; }
// A control byte other than a tab or line end (those end a number like a space).
bool is_control(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return (byte < 0x20 && c != '\t' && c != '\r' && c != '\n') || byte == 0x7f;
}

// Whether `text` ends in number text: a digit, or a ',' / '.' right after one.
bool ends_in_number(std::string_view text) {
  if (text.empty()) return false;
  if (is_digit(text.back())) return true;
  return (text.back() == ',' || text.back() == '.') && text.size() > 1 &&
         is_digit(text[text.size() - 2]);
}
// Whether s[pos] starts number text: a digit, or a ',' / '.' followed by one.
bool starts_number(std::string_view s, std::size_t pos) {
  return digit_at(s, pos) ||
         (pos < s.size() && (s[pos] == ',' || s[pos] == '.') && digit_at(s, pos + 1));
}

// ANSI escape sequences removed; everything else kept byte for byte. A sequence between two
// pieces of number text ("47 ESC 6,016", "47 ESC[0m 6,016") leaves kSplitNumber in its place,
// so the digits around it never join into one number: a control byte there hides what the
// number is, as a NUL does. A sequence around a number ("ESC[32m 476,016 ESC[0m") just goes.
std::string strip_ansi(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  std::size_t i = 0;
  const auto drop = [&](std::size_t next) {
    if (ends_in_number(out) && starts_number(in, next)) out.push_back(kSplitNumber);
    i = next;
  };
  while (i < in.size()) {
    const char c = in[i];
    std::size_t csi_start = npos;
    if (c == '\x1b') {
      if (i + 1 < in.size() && in[i + 1] == '[') {
        csi_start = i + 2;
      } else {
        drop(i + ((i + 1 < in.size()) ? 2 : 1));  // ESC x: drop both
        continue;
      }
    } else if (c == '^' && starts_with(in.substr(i), "^[[")) {
      csi_start = i + std::string_view("^[[").size();
    }
    if (csi_start != npos) {
      std::size_t j = csi_start;
      // Parameter and intermediate bytes, bounded so a lone "ESC[" cannot swallow a line.
      while (j < in.size() && j - csi_start < 32 && static_cast<unsigned char>(in[j]) >= 0x20 &&
             static_cast<unsigned char>(in[j]) <= 0x3f) {
        ++j;
      }
      if (j < in.size() && static_cast<unsigned char>(in[j]) >= 0x40 &&
          static_cast<unsigned char>(in[j]) <= 0x7e) {
        drop(j + 1);
        continue;
      }
      if (c == '\x1b') {  // malformed CSI: drop the ESC only
        drop(i + 1);
        continue;
      }
    }
    out.push_back(c);
    ++i;
  }
  return out;
}

struct Unit {
  std::string_view name;
  double bytes;  // powers of two: a conversion to GiB and back is exact
};
constexpr Unit kUnits[] = {
    {"GiB", 1073741824.0},    {"Gib", 1073741824.0}, {"GB", 1073741824.0}, {"MiB", 1048576.0},
    {"MB", 1048576.0},        {"KiB", 1024.0},       {"kB", 1024.0},       {"KB", 1024.0},
    {"TiB", 1099511627776.0}, {"bytes", 1.0},
};

}  // namespace

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

std::size_t skip_spaces(std::string_view s, std::size_t pos) noexcept {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  return pos;
}

std::size_t after(std::string_view s, std::string_view phrase, std::size_t from) noexcept {
  const std::size_t at = s.find(phrase, from);
  return at == npos ? npos : at + phrase.size();
}

std::size_t after_last(std::string_view s, std::string_view phrase, std::size_t before) noexcept {
  if (before == 0 || before == npos) return npos;
  const std::size_t at = s.rfind(phrase, before - 1);
  return at == npos ? npos : at + phrase.size();
}

std::string_view clean_line(std::string_view raw, std::string& storage) {
  std::string_view text = raw;
  if (contains(raw, "\x1b") || contains(raw, "^[[")) {
    storage = strip_ansi(raw);
    text = storage;
  }
  // Repaired after the ANSI removal, which can drop a lead byte and leave its continuation.
  if (utf8::find_invalid(text) != npos) {
    storage = utf8::replace_invalid(text);
    text = storage;
  }
  return text;
}

std::string printable(std::string_view raw) {
  std::string storage;
  std::string out(clean_line(raw, storage));
  for (char& c : out) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) c = ' ';
  }
  return out;
}

std::string_view strip_process_prefix(std::string_view s) noexcept {
  for (int round = 0; round < 4; ++round) {
    s = trim(s);
    if (starts_with(s, "(")) {
      const std::size_t close = s.find(')');
      if (close == npos || close > 120) break;
      if (!contains(s.substr(1, close - 1), "pid=")) break;
      s.remove_prefix(close + 1);
    } else if (starts_with(s, "[rank")) {
      const std::size_t close = s.find("]:");
      if (close == npos || close > 16) break;
      s.remove_prefix(close + std::string_view("]:").size());
    } else {
      break;
    }
  }
  return trim(s);
}

std::string_view strip_compose_timestamp(std::string_view s) noexcept {
  s = trim(s);
  constexpr std::string_view kBar = " | ";
  const std::size_t bar = s.find(kBar);
  if (bar != npos && bar < 40 && bar >= 10 && is_digit(s[0])) s = trim(s.substr(bar + kBar.size()));
  return s;
}

std::optional<Number> read_number(std::string_view s, std::size_t pos) {
  pos = skip_spaces(s, pos);
  std::string buf;
  std::size_t i = pos;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
    if (s[i] == '-') buf.push_back('-');
    ++i;
  }
  std::size_t digits = 0;
  bool integral = true;
  while (i < s.size() && buf.size() < kMaxNumberChars) {
    const char c = s[i];
    if (is_digit(c)) {
      buf.push_back(c);
      ++digits;
      ++i;
    } else if (c == ',' && digits > 0 && integral && digit_at(s, i + 1)) {
      // A thousands separator: exactly three digits follow.
      if (!digit_at(s, i + 2) || !digit_at(s, i + 3) || digit_at(s, i + 4)) return std::nullopt;
      ++i;
    } else if (c == '.' && integral && digit_at(s, i + 1)) {
      buf.push_back('.');
      integral = false;
      ++i;
    } else {
      break;
    }
  }
  if (digits == 0 || buf.size() >= kMaxNumberChars) return std::nullopt;
  if (i < s.size()) {
    const char next = s[i];
    const bool signed_exponent = i + 1 < s.size() && (s[i + 1] == '-' || s[i + 1] == '+');
    if (((next == '.' || next == ',' || next == '-') && digit_at(s, i + 1)) ||
        ((next == 'e' || next == 'E') && digit_at(s, i + (signed_exponent ? 2 : 1)))) {
      return std::nullopt;
    }
    // A control byte against the digits (`47\x006,016`) hides what the number is: not one.
    if (is_control(next)) return std::nullopt;
  }
  Number n;
  const auto res = std::from_chars(buf.data(), buf.data() + buf.size(), n.value);
  if (res.ec != std::errc{}) return std::nullopt;
  n.end = i;
  n.integral = integral;
  return n;
}

std::optional<Number> read_number_before(std::string_view s, std::size_t end) {
  std::size_t begin = end;
  while (begin > 0 && end - begin < kMaxNumberChars &&
         (is_digit(s[begin - 1]) || s[begin - 1] == '.' || s[begin - 1] == ',')) {
    --begin;
  }
  if (begin > 0 && s[begin - 1] == '-') --begin;
  if (begin == end || (begin > 0 && is_control(s[begin - 1]))) return std::nullopt;
  auto n = read_number(s, begin);
  if (!n || n->end != end) return std::nullopt;
  return n;
}

std::optional<std::int64_t> to_count(const Number& n) noexcept {
  if (!n.integral || n.value > 9.0e18 || n.value < 0.0) return std::nullopt;
  return static_cast<std::int64_t>(n.value);
}

double Size::gib() const noexcept { return bytes / 1073741824.0; }

std::optional<Size> read_size(std::string_view s, std::size_t pos) {
  const auto n = read_number(s, pos);
  if (!n) return std::nullopt;
  const std::size_t u = skip_spaces(s, n->end);
  const std::string_view rest = s.substr(u);
  for (const Unit& unit : kUnits) {
    if (starts_with(rest, unit.name)) return Size{n->value * unit.bytes, u + unit.name.size()};
  }
  return std::nullopt;
}

std::optional<Number> number_after(std::string_view line, std::string_view phrase) {
  const std::size_t at = after(line, phrase);
  if (at == npos) return std::nullopt;
  return read_number(line, at);
}

std::optional<std::int64_t> count_after(std::string_view line, std::string_view phrase) {
  const auto n = number_after(line, phrase);
  if (!n) return std::nullopt;
  return to_count(*n);
}

std::optional<Size> size_after(std::string_view line, std::string_view phrase) {
  const std::size_t at = after(line, phrase);
  if (at == npos) return std::nullopt;
  return read_size(line, at);
}

}  // namespace vramplan::text
