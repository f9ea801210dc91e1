#include "vramplan/engine_descriptor.hpp"

#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/render.hpp"
#include "vramplan/sglang.hpp"
#include "vramplan/sglang_knobs.hpp"

namespace vramplan {

const std::vector<EngineDescriptor>& engine_descriptors() {
  static const std::vector<EngineDescriptor> engines = {
      {"vllm", "vLLM", "vllm serve", "vllm.LLM", "model_specs/engines.yaml", LogVocabulary::Vllm,
       &knob_specs, &newest_known_vllm_version,
       +[](EnginePlanRef p) { return to_vllm_argv(*std::get<const Plan*>(p)); },
       +[](EnginePlanRef p) { return to_llm_kwargs(*std::get<const Plan*>(p)); },
       +[](EnginePlanRef p) { return to_vllm_env(*std::get<const Plan*>(p)); }},
      {"sglang", "SGLang", "python -m sglang.launch_server", "sglang.Engine",
       "model_specs/sglang.yaml", LogVocabulary::Sglang, &sglang_knob_specs,
       &newest_known_sglang_version,
       +[](EnginePlanRef p) { return std::get<const SglangPlan*>(p)->launch_argv; },
       +[](EnginePlanRef p) {
         const SglangPlan& plan = *std::get<const SglangPlan*>(p);
         return sglang_engine_kwargs(plan.planned_config.model_path, plan.launch_argv);
       },
       // SGLang takes every modelled knob as a flag: no environment is needed.
       +[](EnginePlanRef /*plan*/) { return nlohmann::json::object(); }},
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
