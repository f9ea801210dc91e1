// libFuzzer target for the whole plan from a spec YAML: text -> validated ModelSpec -> a launch
// compiled on one H100 -> the solver (every knob search and the remedies). Any input must give
// a plan or a vramplan::Error; a sanitizer report (an overflow in a width product, say), an
// abort, a timeout or an out-of-memory is a bug. Seeds: every spec in model_specs/ and each
// numeric key at its schema bound (scripts/fuzz.sh writes them).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/solver.hpp"
#include "vramplan/spec_db.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto spec = std::make_shared<const vramplan::ModelSpec>(
        vramplan::parse_model_spec_yaml(text, "<fuzz>"));
    vramplan::HardwareConfig hw;
    hw.gpu.id = "H100-80GB";
    hw.gpu.name = "H100";
    hw.gpu.total_memory_bytes = 85029158912;  // 79.19 GiB, as vLLM logs an H100 80GB
    hw.gpu.compute_capability = 9.0;
    hw.num_gpus = 1;
    const vramplan::CompiledLaunch launch(spec, hw, vramplan::EngineConfig{});
    const vramplan::Plan plan = vramplan::solve(launch, 0, 0, 0);
    for (const auto& rank : plan.breakdown.ranks) {
      if (rank.weights_bytes < 0) std::abort();
    }
    if (plan.breakdown.kv_tokens < 0) std::abort();
  } catch (const vramplan::Error&) {
  }
  return 0;
}
