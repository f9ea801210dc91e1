// Figures appended to text as printf's %lld and %.2f print them, for the verdicts and remedies a
// plan writes on every call: printf's format parsing, and to_chars' general path for a double
// (about 700 instructions a figure), cost a plan more than its arithmetic.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace vramplan {

// The most characters write_integer and write_fixed2 write.
inline constexpr std::size_t kIntegerChars = 20;  // "-9223372036854775808"
inline constexpr std::size_t kFixed2Chars =
    400;  // the longest double in fixed notation, 2 decimals

// `value` as %lld prints it, at `at` (room for kIntegerChars); the end of what it wrote.
inline char* write_integer(char* at, std::int64_t value) noexcept {
  return std::to_chars(at, at + kIntegerChars, value).ptr;
}

// `value` with two decimals, rounded as printf's "%.2f" rounds the exact binary value (to
// nearest, ties to even), sign kept ("-0.00"), at `at` (room for kFixed2Chars); the end of what
// it wrote. Below 1e13 the value x 100 splits exactly into its rounded product and fma's
// residual, which decides the rounding; beyond, and for inf and nan, to_chars.
inline char* write_fixed2(char* at, double value) noexcept {
  const double magnitude = std::fabs(value);
  if (!(magnitude < 1e13)) {
    return std::to_chars(at, at + kFixed2Chars, value, std::chars_format::fixed, 2).ptr;
  }
  const double scaled = magnitude * 100.0;
  const double residual = std::fma(magnitude, 100.0, -scaled);  // exact: magnitude x 100 - scaled
  const double whole = std::floor(scaled);
  // Exact: scaled < 2^50, so its fraction and 0.5 are multiples of its ulp, and |residual| is at
  // most half an ulp: only a fraction of exactly 0.5 needs the residual.
  const double fraction = scaled - whole;
  auto hundredths = static_cast<std::int64_t>(whole);
  if (fraction > 0.5 ||
      (fraction == 0.5 && (residual > 0.0 || (residual == 0.0 && hundredths % 2 != 0)))) {
    ++hundredths;
  }
  if (std::signbit(value)) *at++ = '-';
  at = write_integer(at, hundredths / 100);
  const auto cents = static_cast<char>(hundredths % 100);
  *at++ = '.';
  *at++ = static_cast<char>('0' + cents / 10);
  *at++ = static_cast<char>('0' + cents % 10);
  return at;
}

inline void append_integer(std::string& out, std::int64_t value) {
  char text[kIntegerChars];
  out.append(text, static_cast<std::size_t>(write_integer(text, value) - text));
}

inline void append_fixed2(std::string& out, double value) {
  char text[kFixed2Chars];
  out.append(text, static_cast<std::size_t>(write_fixed2(text, value) - text));
}

// Text assembled in a stack buffer and made a std::string once: one allocation, no growth, no
// strlen, for the texts a plan writes on every call. What does not fit moves to the heap in
// order, so any length comes out whole.
class TextBuffer {
 public:
  TextBuffer& operator<<(std::string_view piece) {
    if (piece.size() > kCapacity - length_) {
      spill();
      if (piece.size() > kCapacity) {
        spilled_.append(piece);
        return *this;
      }
    }
    std::memcpy(buffer_ + length_, piece.data(), piece.size());
    length_ += piece.size();
    return *this;
  }
  TextBuffer& integer(std::int64_t value) {
    if (kCapacity - length_ < kIntegerChars) spill();
    length_ = static_cast<std::size_t>(write_integer(buffer_ + length_, value) - buffer_);
    return *this;
  }
  TextBuffer& fixed2(double value) {
    // Below 1e13 (every figure a plan writes) a sign, 13 digits and ".dd".
    const std::size_t room = std::fabs(value) < 1e13 ? kIntegerChars : kFixed2Chars;
    if (kCapacity - length_ < room) spill();
    length_ = static_cast<std::size_t>(write_fixed2(buffer_ + length_, value) - buffer_);
    return *this;
  }
  std::string str() && {
    if (spilled_.empty()) return std::string(buffer_, length_);
    spilled_.append(buffer_, length_);
    return std::move(spilled_);
  }

 private:
  static constexpr std::size_t kCapacity = 512;  // >= kFixed2Chars
  void spill() {
    spilled_.append(buffer_, length_);
    length_ = 0;
  }
  char buffer_[kCapacity];
  std::size_t length_ = 0;
  std::string spilled_;
};

}  // namespace vramplan
