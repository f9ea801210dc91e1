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

enum class KnobType : std::uint8_t {
  Fraction,  // a real number in [minimum, maximum]
  Integer,   // an integer in [minimum, maximum], or one of `choices`
  Bytes,     // an integer byte count; flags render it in GiB (vLLM's unit for these flags)
  Boolean,   // a store-true flag
  Text,      // one of `choices`, or free text where `choices` is empty
};
const char* knob_type_name(KnobType type) noexcept;

using KnobValue = std::variant<bool, std::int64_t, double, std::string>;

struct KnobSpec {
  std::string_view name;  // as vLLM's EngineArgs names it (or the planner's own, see `flag`)
  KnobType type;
  std::string_view unit;
  double minimum;                   // numeric knobs, inclusive
  double maximum;                   // numeric knobs, inclusive
  std::string_view choices;         // comma-separated closed set ("" = any value in range)
  std::string_view default_source;  // what an unset knob becomes
  std::string_view help;
  std::string_view flag;         // `vllm serve` flag; "" for planner-only knobs
  std::string_view kwarg;        // `vllm.LLM(...)` keyword; "" where there is none
  std::int64_t flag_unit_bytes;  // Bytes knobs: the flag's unit (2^30 for the GiB flags, or 1)
  // Reads and writes the EngineConfig member; nullopt = unset.
  std::optional<KnobValue> (*get)(const EngineConfig&);
  void (*set)(EngineConfig&, const std::optional<KnobValue>&);
};

// Knobs a compiled launch evaluates per point without recompiling (compiled.hpp LaunchKnobs):
// utilization, context, sequences, batched tokens, block size, KV dtype.
bool is_evaluated_knob(std::string_view name) noexcept;
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
