// libFuzzer target for the safetensors header parser. Any input must either parse into a
// self-consistent table or throw vramplan::ParseError; anything else (another exception, a
// sanitizer report, a timeout, an out-of-memory) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "vramplan/errors.hpp"
#include "vramplan/tensor_headers.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void run(std::string_view bytes, std::int64_t file_bytes) {
  try {
    const auto h = vramplan::parse_safetensors_header(bytes, file_bytes, "<fuzz>");
    check(h.file_bytes == file_bytes);
    check(h.header_bytes >= 8 && h.header_bytes <= file_bytes);
    std::int64_t prev_end = h.header_bytes;
    for (const auto& t : h.tensors) {
      check(t.bytes >= 0);
      check(t.offset >= h.header_bytes);
      check(t.bytes <= file_bytes - t.offset);
      if (t.bytes > 0) {
        check(t.offset >= prev_end);  // sorted, disjoint
        prev_end = t.offset + t.bytes;
      }
    }
    check(h.tensor_bytes() <= file_bytes - h.header_bytes);
  } catch (const vramplan::ParseError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto n = static_cast<std::int64_t>(size);
  run(bytes, n);          // the whole file
  run(bytes, 2 * n + 7);  // a prefix of a longer file
  return 0;
}
