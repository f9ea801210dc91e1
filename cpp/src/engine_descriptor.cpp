#include "vramplan/engine_descriptor.hpp"

#include <initializer_list>

#include "vramplan/diagnose.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/log_parser.hpp"
#include "vramplan/render.hpp"
#include "vramplan/sglang.hpp"
#include "vramplan/sglang_diagnose.hpp"
#include "vramplan/sglang_knobs.hpp"
#include "vramplan/sglang_log_parser.hpp"
#include "vramplan/version.hpp"

namespace vramplan {
namespace {

// The figures a log prints under the knob's own name, copied where the log prints them.
void copy_printed(const nlohmann::json& figures, std::initializer_list<const char*> keys,
                  nlohmann::json& launch) {
  for (const char* key : keys) {
    const auto found = figures.find(key);
    if (found != figures.end() && !found->is_null()) launch[key] = *found;
  }
}

// The release a log's version text names, where it reads as one: at its patch ("0.10.2" is
// judged by 0.10.2's row), or as printed where the engine's rows tell builds of a patch apart
// ("0.4.6.post5").
void copy_version(const nlohmann::json& figures, const char* figure, const char* knob,
                  bool as_printed, nlohmann::json& launch) {
  const auto found = figures.find(figure);
  if (found == figures.end() || !found->is_string()) return;
  const std::string& text = found->get_ref<const std::string&>();
  const auto version = Version::read(text);
  if (version) launch[knob] = as_printed ? text : version->text();
}

// --- vLLM ---

EngineRelease vllm_release(const std::string& version) {
  const EngineProfile p = engine_profile(version);
  return {p.version, Version{p.from_major, p.from_minor, p.from_patch}.text(), p.version_warning};
}

nlohmann::json vllm_launch_from_figures(const nlohmann::json& figures) {
  nlohmann::json launch = nlohmann::json::object();
  copy_printed(
      figures,
      {"tensor_parallel_size", "pipeline_parallel_size", "dtype", "enforce_eager",
       "gpu_memory_utilization", "max_model_len", "max_num_seqs", "max_num_batched_tokens"},
      launch);
  // "auto" is the model's dtype: the launch left the knob unset.
  const auto kv = figures.find("kv_cache_dtype");
  if (kv != figures.end() && kv->is_string() && !kv->get<std::string>().empty() &&
      kv->get<std::string>() != "auto") {
    launch["kv_cache_dtype"] = *kv;
  }
  copy_version(figures, "vllm_version", "engine_version", false, launch);
  return launch;
}

// --- SGLang ---

EngineRelease sglang_release(const std::string& version) {
  const SglangTable& table = sglang_table();
  return {version.empty() ? newest_known_sglang_version() : version,
          sglang_rules(table, version).release, sglang_version_note(table, version)};
}

nlohmann::json sglang_launch_from_figures(const nlohmann::json& figures) {
  nlohmann::json launch = nlohmann::json::object();
  // Not max_running_requests: the scheduler prints the value it derived, not the setting.
  copy_printed(figures,
               {"tp_size", "pp_size", "dp_size", "mem_fraction_static", "chunked_prefill_size",
                "context_length", "cuda_graph_max_bs"},
               launch);
  const auto kv = figures.find("kv_cache_dtype");
  if (kv != figures.end() && kv->is_string() && kv->get<std::string>() != "auto") {
    launch["kv_cache_dtype"] = *kv;
  }
  copy_version(figures, "sglang_version", "sglang_version", true, launch);
  return launch;
}

nlohmann::json sglang_diagnose(std::string_view log_text, std::string_view kernel_text) {
  // SGLang's diagnosis reads kernel OOM-killer lines wherever they stand in its text.
  if (kernel_text.empty()) return to_json(diagnose_sglang_launch(log_text));
  std::string text(log_text);
  text += '\n';
  text += kernel_text;
  return to_json(diagnose_sglang_launch(text));
}

}  // namespace

const std::vector<EngineDescriptor>& engine_descriptors() {
  static const std::vector<EngineDescriptor> engines = {
      {"vllm", "vLLM", "vllm serve", "vllm.LLM", "model_specs/engines.yaml", LogVocabulary::Vllm,
       &knob_specs, &newest_known_vllm_version,
       +[](EnginePlanRef p) { return to_vllm_argv(*std::get<const Plan*>(p)); },
       +[](EnginePlanRef p) { return to_llm_kwargs(*std::get<const Plan*>(p)); },
       +[](EnginePlanRef p) { return to_vllm_env(*std::get<const Plan*>(p)); }, &vllm_release,
       +[](std::string_view text) { return to_json(parse_vllm_log(text)); },
       +[](const std::string& path) { return to_json(read_vllm_log_file(path)); },
       &vllm_launch_from_figures,
       +[](std::string_view log, std::string_view kernel) {
         return to_json(diagnose_launch(log, kernel));
       }},
      {"sglang", "SGLang", "python -m sglang.launch_server", "sglang.Engine",
       "model_specs/sglang.yaml", LogVocabulary::Sglang, &sglang_knob_specs,
       &newest_known_sglang_version,
       +[](EnginePlanRef p) { return std::get<const SglangPlan*>(p)->launch_argv; },
       +[](EnginePlanRef p) {
         const SglangPlan& plan = *std::get<const SglangPlan*>(p);
         return sglang_engine_kwargs(plan.planned_config.model_path, plan.launch_argv);
       },
       // SGLang takes every modelled knob as a flag: no environment is needed.
       +[](EnginePlanRef /*plan*/) { return nlohmann::json::object(); }, &sglang_release,
       +[](std::string_view text) { return to_json(parse_sglang_log(text)); },
       +[](const std::string& path) { return to_json(read_sglang_log_file(path)); },
       &sglang_launch_from_figures, &sglang_diagnose},
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
