// The engine knobs, declared once: the name vLLM gives each, its type, unit, range, where its
// default comes from, help text, and how it renders as a `vllm serve` flag and an `LLM()`
// keyword. Bindings, the CLI, the validation replays and the flag renderers read this table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace vramplan {

struct EngineConfig;
struct ModelSpec;

// Where an unset knob's value comes from. The Row* rules read fields of the engine's version
// rows (model_specs/engines.yaml), so the text describing them is generated from those rows.
enum class KnobDefault : std::uint8_t {
  Stated,             // a constant or a code rule, described by `default_source`
  NewestRow,          // the newest row's version
  RowUtilization,     // default_gpu_memory_utilization
  RowBatchSeqs,       // max_num_seqs_{large,other}_gpu by GPU tier (batch_defaults)
  RowBatchTokens,     // max_num_batched_tokens_{serve,llm}_{huge,large,other}_gpu by GPU tier
  RowAll2allBackend,  // all2all_backend_default
  RowSwapSpace,       // swap_space_default_bytes
  ModelContext,       // the model's max_position_embeddings (also the knob's upper bound)
  SglangRow,          // a field of the SGLang rows (model_specs/sglang.yaml), by the knob's name
};

enum class KnobType : std::uint8_t {
  Fraction,  // a real number in [minimum, maximum]
  Integer,   // an integer in [minimum, maximum], or one of `choices`
  Bytes,     // an integer byte count; flags render it in GiB (vLLM's unit for these flags)
  Boolean,   // a store-true flag
  Text,      // one of `choices`, or free text where `choices` is empty
};
const char* knob_type_name(KnobType type) noexcept;

using KnobValue = std::variant<bool, std::int64_t, double, std::string>;

// One knob, declared once. Its JSON key (plans, breakdowns, KNOBS rows) is its name.
struct KnobSpec {
  std::string_view name;  // as vLLM's EngineArgs names it (or the planner's own, see `flag`)
  KnobType type;
  std::string_view unit;
  double minimum;            // numeric knobs, inclusive
  double maximum;            // numeric knobs, inclusive
  std::string_view choices;  // comma-separated closed set ("" = any value in range)
  KnobDefault default_rule;
  std::string_view default_source;  // the rule's wording; knob_default_text() adds the rows
  std::string_view help;
  std::string_view flag;         // `vllm serve` flag; "" for planner-only knobs
  std::string_view kwarg;        // `vllm.LLM(...)` keyword; "" where there is none
  std::int64_t flag_unit_bytes;  // Bytes knobs: the flag's unit (2^30 for the GiB flags, or 1)
  // Reads and writes the EngineConfig member; nullopt = unset.
  std::optional<KnobValue> (*get)(const EngineConfig&);
  void (*set)(EngineConfig&, const std::optional<KnobValue>&);
  // A compiled launch evaluates it per point without recompiling (compiled.hpp LaunchKnobs).
  bool evaluated;
  // The environment variable the engine (or its connector) reads the knob from, where it is
  // one ("" otherwise): read from a pasted launch's environment, written by to_vllm_env.
  std::string_view env_var = {};
  // An axis of a sweep grid (SweepGrid lists values of exactly these knobs).
  bool sweep_axis = false;
};

// The kv_connector named by --kv-transfer-config's JSON ("" when unset); ConfigError naming
// kv_transfer_config for anything else.
std::string kv_connector_of(const std::string& kv_transfer_config);

// Whether the knob called `name` is evaluated per point (KnobSpec::evaluated).
bool is_evaluated_knob(std::string_view name) noexcept;
// The evaluated knobs' names, comma-separated, in table order (for messages).
std::string evaluated_knob_names();
// What an unset knob becomes, as text: the rule's wording, and for row rules the values of the
// compiled-in engines.yaml rows from the release where each starts ("0.9 from 0.6.4, 0.92 from
// 0.21.0").
std::string knob_default_text(const KnobSpec& knob);
// The knob's range for `model`: its declared range, the upper bound lowered to the model's
// max_position_embeddings for the context knob (vLLM refuses a longer max_model_len).
struct KnobBounds {
  double minimum = 0.0;
  double maximum = 0.0;
};
KnobBounds knob_bounds(const KnobSpec& knob, const ModelSpec& model);
// Every knob, in the order flags render.
const std::vector<KnobSpec>& knob_specs();
// The knob called `name`; throws ConfigError listing the knobs when there is none.
const KnobSpec& knob_spec(std::string_view name);
// Checks `value` against the knob's type, range and choices (NaN, infinities, negative
// counts, block sizes vLLM refuses ...) and returns it in the knob's canonical type
// (Integer/Bytes -> int64, Fraction -> double). Throws ConfigError naming knob and value.
KnobValue check_knob(const KnobSpec& knob, const KnobValue& value);
// check_knob, then store it in `config`.
void set_knob(EngineConfig& config, std::string_view name, const KnobValue& value);
// Every set knob of `config` checked as set_knob would: for C++ callers that fill the struct.
void validate_knobs(const EngineConfig& config);
// One modality's limit from --limit-mm-per-prompt.
struct ModalityLimit {
  std::string modality;
  std::int64_t count = 0;
};
// limit_mm_per_prompt's JSON, checked (an object of modality: count >= 0, or {"count": n});
// empty text: no limits given. Throws ConfigError naming the knob and the value.
std::vector<ModalityLimit> parse_limit_mm_per_prompt(const std::string& text);

// The value as text ("0.9", "8192", "fp8", "true").
std::string knob_value_text(const KnobValue& value);

}  // namespace vramplan
