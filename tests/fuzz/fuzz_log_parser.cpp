// libFuzzer target for the vLLM log parser, which is documented never to throw for any text.
// Checks, for every input: no exception at all; every string in the result is valid UTF-8 and
// to_json(...).dump() succeeds (it threw type_error.316 on an error line cut inside a
// character); the caps on error lines hold; and feeding the same bytes in two chunks, split
// where the input's first byte says, gives the same figures as one string.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "vramplan/log_parser.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const vramplan::VllmLogFigures whole = vramplan::parse_vllm_log(text);
  check(whole.error_lines.size() <= 32);
  for (const auto& line : whole.error_lines) check(!line.empty() && line.size() <= 2000);
  check(!whole.truncated);
  const nlohmann::json j = vramplan::to_json(whole);
  fuzz_support::check_strings_utf8(j);
  (void)j.dump();

  const std::size_t split = size == 0 ? 0 : data[0] * size / 256;
  vramplan::VllmLogParser chunked;
  chunked.feed(text.substr(0, split));
  chunked.feed(text.substr(split));
  check(vramplan::to_json(chunked.finish()) == j);
  return 0;
}
