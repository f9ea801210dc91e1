// The engine seam, surface half: how one serving engine is named, which knobs it takes and how
// they are spelled, where its rule rows come from, how a plan renders as its launch line, and
// which log vocabulary reads its startup. The rules half is engine_rules.hpp.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "vramplan/knobs.hpp"

namespace vramplan {

struct Plan;
struct SglangPlan;

// Which phrase table reads an engine's startup log: a handle only (vllm_vocabulary.hpp,
// sglang_vocabulary.hpp).
enum class LogVocabulary : std::uint8_t {
  Vllm,
  Sglang,
};

// The plan a launch renderer reads: each engine's own plan type. A renderer is only handed its
// own engine's plan (std::bad_variant_access otherwise).
using EnginePlanRef = std::variant<const Plan*, const SglangPlan*>;

struct EngineDescriptor {
  std::string_view name;           // as `--engine` takes it: "vllm"
  std::string_view display_name;   // as users write it: "vLLM"
  std::string_view serve_command;  // the launch line's head: "vllm serve"
  std::string_view python_entry;   // the offline class: "vllm.LLM"
  std::string_view rules_file;     // its rule rows, compiled in: "model_specs/engines.yaml"
  LogVocabulary log_vocabulary;
  // Its knobs (name, type, range, default rule, spellings, JSON key), in the order flags render.
  const std::vector<KnobSpec>& (*knobs)();
  // The newest release its rows describe.
  std::string (*newest_known_version)();
  // A plan as the launch line's argv words (model not included), as keyword arguments for
  // python_entry, and as the environment variables it needs.
  std::vector<std::string> (*launch_argv)(EnginePlanRef);
  nlohmann::json (*launch_kwargs)(EnginePlanRef);
  nlohmann::json (*launch_env)(EnginePlanRef);
};

// Every engine the planner models.
const std::vector<EngineDescriptor>& engine_descriptors();
// The engine called `name`; throws ConfigError("engine", ...) listing the engines when none is.
const EngineDescriptor& engine_descriptor(std::string_view name);

}  // namespace vramplan
