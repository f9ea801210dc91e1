// Renderers shared by C++, Python and the CLI, so every surface prints identical output.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vramplan/engine.hpp"
#include "vramplan/model_spec.hpp"
#include "vramplan/solver.hpp"

namespace vramplan {

nlohmann::json to_json(const ModelSpec& spec);
nlohmann::json to_json(const GpuSpec& gpu);
// A breakdown's terms (any engine's): [{name, bytes, provenance}, ...] in their order.
nlohmann::json terms_json(const std::vector<Term>& terms);
// Every term in bytes; `weights_bytes` and `kv_bytes_per_token` are those of rank 0.
nlohmann::json to_json(const Breakdown& breakdown);
// The plan: fits, the four knobs, binding constraint per knob, remedies, breakdown, flags.
nlohmann::json to_json(const Plan& plan);
// What a workload asks of the planned KV cache (Plan::workload); null when the plan has none.
nlohmann::json to_json(const WorkloadReport& report);
// Environment variables the launch needs (knobs older versions take only from the
// environment: VLLM_ALL2ALL_BACKEND before 0.12).
nlohmann::json to_vllm_env(const Plan& plan);
// The `vllm serve` flags as argv words (model not included): JSON values compact, one word
// each, so the words survive `$(...)`'s splitting unquoted.
std::vector<std::string> to_vllm_argv(const Plan& plan);
// One argv word quoted for a POSIX shell (single quotes where it needs any).
std::string shell_word(const std::string& word);
// Keyword arguments for vllm.LLM(**kwargs), vLLM's names.
nlohmann::json to_llm_kwargs(const Plan& plan);

}  // namespace vramplan
