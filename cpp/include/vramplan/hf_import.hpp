// Hugging Face config.json (+ hf_quant_config.json) -> ModelSpec, offline. The config is
// translated into the spec schema of model_specs/ and read by the same validating parser, so
// a config and a hand-written YAML spec of the same checkpoint give the same numbers.
// Fails closed: a model_type whose cache layout is unknown, a missing or mistyped field, or a
// quantization it cannot express is an Error naming the file, the field and the value.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "vramplan/model_spec.hpp"

namespace vramplan {

// The spec-schema document (JSON) for a parsed config; `quant_config` is the parsed
// hf_quant_config.json (ModelOpt) or nullptr.
nlohmann::json hf_config_to_spec_document(const nlohmann::json& config,
                                          const nlohmann::json* quant_config,
                                          const std::string& source);

ModelSpec model_spec_from_hf_config(const nlohmann::json& config,
                                    const nlohmann::json* quant_config, const std::string& source);

// Reads a config.json file, or a folder holding config.json and optionally hf_quant_config.json
// (ModelOpt) or quantize_config.json / quant_config.json (older GPTQ / AWQ exports). Files are
// bounded (16 MiB, 128 levels of nesting); Python-style Infinity/NaN parse, and reading such a
// value for a field the spec needs is a named error.
ModelSpec load_hf_config(const std::string& path);

}  // namespace vramplan
