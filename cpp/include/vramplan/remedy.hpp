// What the solvers of every engine share: the default safety margin, a knob change as data
// (solver choices and remedies) and a remedy, with its JSON form. Each engine spells the knob and
// the flags in its own names (vLLM's keywords and `vllm serve` flags, SGLang's ServerArgs and
// launch_server flags).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vramplan {

// Bytes kept free beyond the engine's own accounting on each GPU (allocator fragmentation,
// estimation error) where neither the user nor an error band sets a margin: 0.5 GiB.
inline constexpr std::int64_t kDefaultSafetyMarginBytes = std::int64_t{512} << 20;

// One knob set to a value, under the engine's keyword (vLLM: the `LLM(**kwargs)` name) and in the
// text its flag takes ("fp8", "2", "true"): remedies and solver choices as data.
struct KnobChange {
  std::string knob;    // engine keyword: kv_cache_dtype, quantization, tensor_parallel_size, ...
  std::string value;   // the new value, as the flag writes it
  std::string before;  // the value as written (empty: unset, vLLM's default)
  std::string reason;  // why (solver choices; empty for remedies)
};

struct Remedy {
  // fp8_kv_cache, enforce_eager, shorter_context, quantized_weights, tensor_parallel,
  // cpu_offload; a combination of two joins them with '+', cheaper first.
  std::string kind;
  std::string change;  // the flag(s) that change, as the engine's launch line spells them
  std::vector<KnobChange> changes;  // the same as data
  // Engine keywords of settings the user gave that this remedy does not keep (the context it
  // shortens, the tensor-parallel size it raises); empty: every user setting is kept.
  std::vector<std::string> drops;
  bool fits = false;   // whether the launch then meets the target, replayed through the engine
  std::string detail;  // numbers: resulting KV tokens, weights per rank, ...
  std::string flags;   // the whole flag line of the remedied plan
};

nlohmann::json to_json(const KnobChange& change);
nlohmann::json to_json(const Remedy& remedy);
nlohmann::json to_json(const std::vector<Remedy>& remedies);

}  // namespace vramplan
