// What the libFuzzer targets share: reading structured input field by field, picking from a
// comma-separated choice list, and checking that every string of a JSON result is valid UTF-8.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "vramplan/utf8.hpp"

namespace fuzz_support {

// Reads the input front to back; past its end every field is zero.
class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  template <typename T>
  T take() {
    unsigned char bytes[sizeof(T)] = {};
    for (unsigned char& b : bytes) {
      if (pos_ < size_) b = data_[pos_++];
    }
    T value;
    std::memcpy(&value, bytes, sizeof(T));
    return value;
  }
  std::string text() {
    const std::size_t length = take<std::uint8_t>();
    std::string out;
    while (out.size() < length && pos_ < size_) out.push_back(static_cast<char>(data_[pos_++]));
    return out;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// The n-th item (modulo their count) of "a,b,c".
inline std::string nth_choice(std::string_view choices, std::size_t n) {
  std::vector<std::string_view> items;
  std::size_t start = 0;
  while (start <= choices.size()) {
    const std::size_t comma = std::min(choices.find(',', start), choices.size());
    items.push_back(choices.substr(start, comma - start));
    start = comma + 1;
  }
  return std::string(items[n % items.size()]);
}

// Aborts unless every string in `j` is valid UTF-8.
inline void check_strings_utf8(const nlohmann::json& j) {
  if (j.is_string()) {
    if (vramplan::utf8::find_invalid(j.get_ref<const std::string&>()) != std::string::npos) {
      std::abort();
    }
  } else if (j.is_structured()) {
    for (const auto& v : j) check_strings_utf8(v);
  }
}

}  // namespace fuzz_support
