// SGLang's knobs, declared once: SGLang's ServerArgs names, types, units, ranges, default rules
// (read from the model_specs/sglang.yaml rows) and `python -m sglang.launch_server` flags. The
// same KnobSpec rows as vLLM's table (knobs.hpp); they set an SglangConfig, not an EngineConfig,
// so their EngineConfig accessors are null.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vramplan/knobs.hpp"
#include "vramplan/sglang.hpp"

namespace vramplan {

// Every SGLang knob, in the order the launch line renders them.
const std::vector<KnobSpec>& sglang_knob_specs();
// The SGLang knob called `name`; ConfigError listing SGLang's knobs when there is none (and,
// for a vLLM knob name, naming SGLang's equivalent).
const KnobSpec& sglang_knob_spec(std::string_view name);
// SGLang's knob for a vLLM knob name ("gpu_memory_utilization" -> "mem_fraction_static"), or
// "" where SGLang has none.
std::string_view sglang_equivalent_of_vllm_knob(std::string_view vllm_name) noexcept;
// check_knob, then store the value in `config` (the release is `sglang_version`, kept apart).
void set_sglang_knob(SglangConfig& config, std::string_view name, const KnobValue& value);
// The values the SGLang rows give a SglangRow knob, where they change, oldest row first
// ("1 from 0.4.0"); "" for other knobs.
std::string sglang_rows_text(std::string_view knob_name);
// The newest SGLang release the rows were read from ("0.5.23").
std::string newest_known_sglang_version();

}  // namespace vramplan
