// The engine seam, surface half: how one serving engine is named, which knobs it takes and how
// they are spelled, where its rule rows come from and which release judges a version, how a plan
// renders as its launch line, and how its startup log is read, turned back into a launch and
// diagnosed. Every engine fills every entry; callers (the bindings) dispatch through
// engine_descriptor(name) once. The rules half is engine_rules.hpp.
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

// The release whose rule row judges a version an engine was asked for.
struct EngineRelease {
  std::string version;        // as asked; the newest known release when none was
  std::string rules_release;  // the release of the row that judges it
  std::string note;           // what was assumed in taking that row ("" when nothing was)
};

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
  // The rule row's release for `version` ("" the newest) and the note on what it assumes;
  // ConfigError for a version the engine's rows cannot judge.
  EngineRelease (*release)(const std::string& version);
  // Its startup log's figures as JSON (every field, null where the log prints none). The text is
  // untrusted and never makes it throw; read_log_file streams a file (ParseError when the file
  // cannot be read, never for its content).
  nlohmann::json (*read_log)(std::string_view text);
  nlohmann::json (*read_log_file)(const std::string& path);
  // The launch those figures state, as knobs under the engine's names (its version knob where
  // the log prints a release); what the log leaves unsaid is absent.
  nlohmann::json (*launch_from_figures)(const nlohmann::json& figures);
  // The cause of a failed launch from its log and a kernel excerpt (dmesg; may be empty), as
  // JSON: engine, cause, explanation, evidence (lines), advice ([{knob, flag, action, value,
  // why}] under its own names and flags), oom_kills, figures (read_log's). Never throws for bad
  // text.
  nlohmann::json (*diagnose)(std::string_view log_text, std::string_view kernel_text);
};

// Every engine the planner models.
const std::vector<EngineDescriptor>& engine_descriptors();
// The engine called `name`; throws ConfigError("engine", ...) listing the engines when none is.
const EngineDescriptor& engine_descriptor(std::string_view name);

}  // namespace vramplan
