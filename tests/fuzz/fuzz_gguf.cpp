// libFuzzer target for the GGUF header parser. Any input must either parse into a
// self-consistent table or throw vramplan::ParseError; anything else (another exception, a
// sanitizer report, a timeout, an out-of-memory) is a bug.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

#include "vramplan/errors.hpp"
#include "vramplan/gguf_import.hpp"
#include "vramplan/tensor_headers.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void run(std::string_view bytes, std::int64_t file_bytes) {
  try {
    const auto h = vramplan::parse_gguf_header(bytes, file_bytes, "<fuzz>");
    check(h.version == 2 || h.version == 3);
    check(h.alignment > 0 && (h.alignment & (h.alignment - 1)) == 0);
    check(h.data_offset % h.alignment == 0);
    check(h.metadata.size() <= vramplan::kGgufMaxKvs);
    std::vector<std::pair<std::int64_t, std::int64_t>> spans;
    for (const auto& t : h.tensors) {
      check(t.bytes > 0 && t.shape.size() <= 4);
      check(t.offset >= h.data_offset);
      check((t.offset - h.data_offset) % h.alignment == 0);
      check(t.bytes <= file_bytes - t.offset);
      spans.emplace_back(t.offset, t.offset + t.bytes);
    }
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) check(spans[i].first >= spans[i - 1].second);
    for (const auto& [key, value] : h.metadata) {
      check(!key.empty());
      if (value.is_array()) {
        check(!value.items_stored || value.items.size() == value.length);
        check(value.items.size() <= vramplan::kGgufMaxStoredArray);
      }
    }
    (void)h.architecture();
    (void)h.get_int("general.alignment");
    try {  // the metadata -> ModelSpec importer must fail closed too
      const vramplan::ModelSpec spec = vramplan::model_spec_from_gguf(h);
      check(static_cast<std::int64_t>(spec.layers.size()) == spec.num_hidden_layers);
    } catch (const vramplan::SpecError&) {
    }
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
