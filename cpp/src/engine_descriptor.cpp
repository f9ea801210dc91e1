#include "vramplan/engine_descriptor.hpp"

#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/render.hpp"

namespace vramplan {

const std::vector<EngineDescriptor>& engine_descriptors() {
  static const std::vector<EngineDescriptor> engines = {
      {"vllm", "vLLM", "vllm serve", "vllm.LLM", "model_specs/engines.yaml", LogVocabulary::Vllm,
       &knob_specs, &newest_known_vllm_version, &to_vllm_argv, &to_llm_kwargs, &to_vllm_env},
  };
  return engines;
}

const EngineDescriptor& engine_descriptor(std::string_view name) {
  std::string names;
  for (const EngineDescriptor& engine : engine_descriptors()) {
    if (engine.name == name) return engine;
    names += (names.empty() ? "" : ", ") + std::string(engine.name);
  }
  throw ConfigError("engine", "'" + std::string(name) + "'", names, "unknown serving engine");
}

}  // namespace vramplan
