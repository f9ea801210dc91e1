// libFuzzer target for the YAML readers (model spec, gpus.yaml, engines.yaml). Any input must
// either give a finalized spec or throw a vramplan::Error (SpecError/ParseError); anything else (a
// yaml-cpp exception escaping, a sanitizer report, a timeout, an out-of-memory) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const vramplan::ModelSpec spec = vramplan::parse_model_spec_yaml(text, "<fuzz>");
    if (static_cast<std::int64_t>(spec.layers.size()) != spec.num_hidden_layers) std::abort();
  } catch (const vramplan::Error&) {
  }
  try {
    for (const auto& gpu : vramplan::parse_gpus_yaml(text, "<fuzz>")) {
      if (gpu.total_memory_bytes <= 0) std::abort();
    }
  } catch (const vramplan::Error&) {
  }
  try {
    for (const auto& profile : vramplan::parse_engine_profiles(text, "<fuzz>")) {
      if (profile.default_gpu_memory_utilization <= 0.0) std::abort();
    }
  } catch (const vramplan::Error&) {
  }
  return 0;
}
