#include "vramplan/utf8.hpp"

#include <cstdint>

namespace vramplan::utf8 {
namespace {

// Length of the well-formed sequence at text[i], or 0 when the byte there starts none.
std::size_t sequence_length(const unsigned char* s, std::size_t n, std::size_t i) noexcept {
  const unsigned char c = s[i];
  if (c < 0x80) return 1;
  std::size_t len = 0;
  std::uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1Fu;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0Fu;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07u;
  } else {
    return 0;  // continuation byte, overlong lead (C0/C1) or F5..FF
  }
  if (n - i < len) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const unsigned char cc = s[i + k];
    if ((cc & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (cc & 0x3Fu);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return len;
}

}  // namespace

std::size_t find_invalid(std::string_view text) noexcept {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    if (s[i] < 0x80) {  // ASCII: most of any log or header
      ++i;
      continue;
    }
    const std::size_t len = sequence_length(s, n, i);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string replace_invalid(std::string_view text) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::string out;
  out.reserve(n);
  std::size_t i = 0;
  while (i < n) {
    const std::size_t len = sequence_length(s, n, i);
    if (len == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(text.data() + i, len);
      i += len;
    }
  }
  return out;
}

std::string_view truncate(std::string_view text, std::size_t max_bytes) noexcept {
  if (text.size() <= max_bytes) return text;
  std::size_t cut = max_bytes;
  // Step back over continuation bytes (10xxxxxx) to the start of the character that the cut
  // would split; at most three of them precede a lead byte in valid UTF-8.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0u) == 0x80u) --cut;
  return text.substr(0, cut);
}

}  // namespace vramplan::utf8
