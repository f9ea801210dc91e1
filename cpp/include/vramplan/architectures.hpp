// The one architecture table (model_specs/architectures.yaml, compiled in): for every Hugging
// Face model_type (and llama.cpp architecture) vramplan can plan, how its config fields map to
// the spec schema, which transformers defaults fill keys a config omits, and what is modelled
// (attention kinds, MoE, vision tower, MTP). The config.json importer, the GGUF importer and
// docs/models.md all read this table.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vramplan {

// Reads the fields of one config object, naming "<prefix><key>" and the file in errors.
// Keys the object omits take `applied` (the config class's defaults, as transformers fills them
// when vLLM loads the config); a key written as null stays unset, as transformers keeps an
// explicit None. A non-finite number (NaN / Infinity in the file) is an error whenever a field
// is read.
class ConfigFields {
 public:
  ConfigFields(const nlohmann::json& object, std::string file, std::string prefix,
               const nlohmann::json* applied = nullptr, std::string config_class = "");

  bool has(const char* key) const;  // present in the file and not null
  [[noreturn]] void fail(const char* key, const std::string& value,
                         const std::string& problem) const;

  // Required: the file's value, else the class default, else a named error.
  std::int64_t integer(const char* key) const;
  std::int64_t integer_or(const char* key, std::int64_t fallback) const;
  double number_or(const char* key, double fallback) const;
  bool boolean_or(const char* key, bool fallback) const;
  std::string string_or(const char* key, const std::string& fallback) const;
  const nlohmann::json& at(const char* key) const;  // the file's value (has(key) checked)
  // The file's value, else the class default; null when neither gives one.
  const nlohmann::json* value(const char* key) const { return lookup(key); }
  const std::string& file() const { return file_; }
  const std::string& prefix() const { return prefix_; }
  // The keys read so far whose value came from `applied`, in the order first read.
  const std::vector<std::string>& defaults_used() const { return defaults_used_; }

 private:
  const nlohmann::json* lookup(const char* key) const;  // file value, else default, else null
  std::int64_t integer_value(const char* key, const nlohmann::json& v) const;
  void check_finite(const char* key, const nlohmann::json& v) const;

  const nlohmann::json& object_;
  std::string file_;
  std::string prefix_;
  const nlohmann::json* applied_;
  std::string config_class_;
  mutable std::vector<std::string> defaults_used_;
};

// What the table says about one family, for docs and error messages.
struct ArchitectureInfo {
  std::string family;                            // "Llama 2/3/3.x"
  std::vector<std::string> model_types;          // config.json (text) model_type values
  std::vector<std::string> wrapper_model_types;  // multimodal model_types holding a text_config
  std::vector<std::string> gguf_architectures;   // llama.cpp general.architecture values
  std::string config_class;                      // transformers class whose defaults apply
  std::string attention;                         // attention kinds modelled
  std::string moe;                               // "" when dense
  std::string vision;                            // "" when text-only
  std::string mtp;                               // "" when no MTP layers
};

struct RefusedArchitecture {
  std::string model_type;
  std::string reason;
};

// One entry of vLLM 0.33's architecture registry (model_specs/architectures.yaml, compiled in):
// planned through `model_type` (a row of the table), or refused with `refused_reason`.
struct VllmArchitecture {
  std::string architecture;  // config.json "architectures" entry, e.g. "LlamaForCausalLM"
  std::string model_type;    // "" when refused
  std::string refused_reason;
};
// Throws SpecError naming model_specs/architectures.yaml for a malformed entry or a model_type
// the table does not plan.
const std::vector<VllmArchitecture>& vllm_registry_architectures();

// Loads an architecture table written as model_specs/architectures.yaml and checks it: SpecError
// naming `file`, the field and the value for a malformed entry (an unknown field, rule, sliding
// kind or vision tower; a non-numeric default; a model_type listed twice; a multimodal wrapper
// without its row). The compiled-in table passes the same check on first use.
void check_architecture_table(const std::string& yaml_text, const std::string& file);

const std::vector<ArchitectureInfo>& architecture_infos();
const std::vector<RefusedArchitecture>& refused_architectures();

// Comma-separated list of every accepted model_type (text and multimodal wrappers).
std::string supported_model_types();

// The spec-schema document (JSON, without quantization) for a parsed config.json: the
// decoder from the config (or its text_config), the vision tower from vision_config.
// Throws SpecError naming the file and field for an unknown or refused model_type.
nlohmann::json architecture_spec_document(const nlohmann::json& config, const std::string& file);

// The model_type whose table row covers a llama.cpp architecture ("" when none does).
std::string model_type_for_gguf(const std::string& gguf_architecture);

// docs/models.md body: one row per family.
std::string architectures_markdown();

}  // namespace vramplan
