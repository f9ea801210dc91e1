// libFuzzer target for the config.json importer: bytes -> JSON (with the importer's own
// Infinity/NaN tolerance not involved) -> spec document -> validated ModelSpec. Any input must
// give a spec or a vramplan::Error; nlohmann parse errors are caught before the importer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json config = nlohmann::json::parse(text, nullptr, false);
  if (config.is_discarded()) return 0;
  try {
    const vramplan::ModelSpec spec = vramplan::model_spec_from_hf_config(config, nullptr, "<fuzz>");
    if (static_cast<std::int64_t>(spec.layers.size()) != spec.num_hidden_layers) std::abort();
  } catch (const vramplan::Error&) {
  }
  return 0;
}
