// libFuzzer target for SGLang's log parser and the diagnosis on it, both documented never to
// throw for any text. Checks, for every input: no exception at all; every string in either
// result is valid UTF-8 and to_json(...).dump() succeeds; feeding the same bytes in two chunks,
// split where the input's first byte says, gives the same figures as one string; and the
// diagnosis carries the parser's figures unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "vramplan/sglang_diagnose.hpp"
#include "vramplan/sglang_log_parser.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json j = vramplan::to_json(vramplan::parse_sglang_log(text));
  fuzz_support::check_strings_utf8(j);
  (void)j.dump();

  const std::size_t split = size == 0 ? 0 : data[0] * size / 256;
  vramplan::SglangLogParser chunked;
  chunked.feed(text.substr(0, split));
  chunked.feed(text.substr(split));
  check(vramplan::to_json(chunked.finish()) == j);

  const nlohmann::json diagnosis = vramplan::to_json(vramplan::diagnose_sglang_launch(text));
  fuzz_support::check_strings_utf8(diagnosis);
  (void)diagnosis.dump();
  check(diagnosis["figures"] == j);
  return 0;
}
