// Figures appended to text as printf's %lld and %.2f print them, for the verdicts and remedies a
// plan writes on every call: printf's format parsing, and to_chars' general path for a double
// (about 700 instructions a figure), cost a plan more than its arithmetic.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

namespace vramplan {

inline void append_integer(std::string& out, std::int64_t value) {
  char text[24];
  out.append(text, std::to_chars(text, text + sizeof text, value).ptr);
}

// `value` with two decimals, rounded as printf's "%.2f" rounds the exact binary value (to
// nearest, ties to even), sign kept ("-0.00"). Below 1e13 the value x 100 splits exactly into
// its rounded product and fma's residual, which decides the rounding; beyond, and for inf and
// nan, to_chars.
inline void append_fixed2(std::string& out, double value) {
  const double magnitude = std::fabs(value);
  if (!(magnitude < 1e13)) {
    char text[400];  // the longest double in fixed notation, 2 decimals
    out.append(text,
               std::to_chars(text, text + sizeof text, value, std::chars_format::fixed, 2).ptr);
    return;
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
  if (std::signbit(value)) out += '-';
  append_integer(out, hundredths / 100);
  const auto cents = static_cast<char>(hundredths % 100);
  out += '.';
  out += static_cast<char>('0' + cents / 10);
  out += static_cast<char>('0' + cents % 10);
}

}  // namespace vramplan
