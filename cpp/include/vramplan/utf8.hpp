// UTF-8 checks for hostile text: where an input is refused, the first bad byte's offset names
// it in the error; where text is only reported (log lines), bad bytes become U+FFFD; where
// text is cut, the cut never splits a character. Everything that reaches JSON or Python
// passes through one of these, so nlohmann's dump() and pybind11's str conversion never see
// invalid UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vramplan::utf8 {

// Index of the first byte that is not part of a well-formed UTF-8 sequence (overlongs,
// surrogates and code points above U+10FFFF rejected), or npos when `text` is valid.
std::size_t find_invalid(std::string_view text) noexcept;

// `text` with every byte that is not part of a well-formed sequence replaced by U+FFFD.
std::string replace_invalid(std::string_view text);

// The longest prefix of valid UTF-8 `text` that is at most `max_bytes` long and ends on a
// character boundary.
std::string_view truncate(std::string_view text, std::size_t max_bytes) noexcept;

}  // namespace vramplan::utf8
