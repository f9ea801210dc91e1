// The solver: the largest safe gpu_memory_utilization, max_model_len, max_num_seqs and
// max_num_batched_tokens for a launch, which constraint binds each, and remedies when nothing
// fits. Deterministic; every search is over a monotone function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"

namespace vramplan {

struct SolveRequest {
  EngineConfig pinned;  // knobs the user fixed (unset = solver chooses)
  HardwareConfig hardware;
  std::int64_t target_context_tokens = 0;  // context to serve (0: model maximum)
  std::int64_t target_concurrency = 0;     // sequences of that context to hold at once (0: none)
  // Bytes kept free beyond vLLM's own accounting on each GPU (allocator fragmentation,
  // estimation error). Default 0.5 GiB; stated in the plan.
  std::int64_t safety_margin_bytes = std::int64_t{512} << 20;
};

// One knob set to a value, under vLLM's keyword (`LLM(**kwargs)` name) and in the text its
// `vllm serve` flag takes ("fp8", "2", "true"): remedies and solver choices as data.
struct KnobChange {
  std::string knob;    // vLLM keyword: kv_cache_dtype, quantization, tensor_parallel_size, ...
  std::string value;   // the new value, as the flag writes it
  std::string before;  // the value as written (empty: unset, vLLM's default)
  std::string reason;  // why (solver choices; empty for remedies)
};

struct Remedy {
  // fp8_kv_cache, enforce_eager, shorter_context, quantized_weights, tensor_parallel,
  // cpu_offload; a combination of two joins them with '+', cheaper first.
  std::string kind;
  std::string change;               // the flag(s) that change, as `vllm serve` spells them
  std::vector<KnobChange> changes;  // the same as data
  // vLLM keywords of settings the user gave that this remedy does not keep (the context it
  // shortens, the tensor-parallel size it raises); empty: every user setting is kept.
  std::vector<std::string> drops;
  bool fits = false;   // whether the launch then meets the target, replayed through the engine
  std::string detail;  // numbers: resulting KV tokens, weights per rank, ...
  std::string flags;   // the whole `vllm serve` flag line of the remedied plan
};

struct Plan {
  // The launch exactly as written: every knob the user gave, the others at vLLM's defaults
  // (no solver choice), judged first.
  bool as_written_fits = false;
  std::string as_written_verdict;  // one line: fits, or which check fails with its numbers
  Outcome as_written_outcome = Outcome::Started;
  bool fits = false;
  std::string verdict;  // one line
  // The knobs the solver set that the user did not, each with the default it replaced and why.
  std::vector<KnobChange> changed;
  double gpu_memory_utilization = 0.0;
  std::int64_t max_model_len = 0;
  std::int64_t max_num_seqs = 0;
  std::int64_t max_num_batched_tokens = 0;
  std::int64_t concurrent_sequences = 0;  // sequences of the target context served at once
  std::string binding_gpu_memory_utilization;
  std::string binding_max_model_len;
  std::string binding_max_num_seqs;
  std::string binding_max_num_batched_tokens;
  std::int64_t safety_margin_bytes = 0;
  EngineConfig config;  // the full knob set the flags render
  Breakdown breakdown;  // at the chosen values
  std::vector<Remedy> remedies;
};

// The largest safe knobs for a compiled launch: its config's evaluated knobs that are set are
// pinned, the others chosen. Remedies (when it does not fit) compile the changed launches.
Plan solve(const CompiledLaunch& launch, std::int64_t target_context_tokens,
           std::int64_t target_concurrency, std::int64_t safety_margin_bytes);
// The same with the evaluated knobs (knobs.hpp is_evaluated_knob) taken from `pinned` instead
// of the launch's config: one compiled launch serves every value of those knobs.
Plan solve(const CompiledLaunch& launch, const EngineConfig& pinned,
           std::int64_t target_context_tokens, std::int64_t target_concurrency,
           std::int64_t safety_margin_bytes);
// `base` with its evaluated knobs replaced by those of `from`.
EngineConfig with_evaluated_knobs(EngineConfig base, const EngineConfig& from);
Plan solve(const ModelSpec& spec, const SolveRequest& request);

// A grid of launches evaluated in one call (notebook sweeps): the cartesian product of the
// listed utilizations, context lengths, sequence limits and batched-token limits over a
// base set of knobs (an empty list = the base value). Rows are in that nesting order
// (utilization outermost). A launch the engine refuses outright reports outcome -1.
struct SweepGrid {
  std::vector<double> gpu_memory_utilization;
  std::vector<std::int64_t> max_model_len;
  std::vector<std::int64_t> max_num_seqs;
  std::vector<std::int64_t> max_num_batched_tokens;
};
// Grids beyond this many points are refused (ConfigError): 50 M rows of output columns take
// about 2.5 GB.
constexpr std::int64_t kMaxSweepPoints = 50'000'000;
// Rows the grid has; throws ConfigError past kMaxSweepPoints.
std::int64_t sweep_size(const SweepGrid& grid);
// Output columns the caller owns, each with sweep_size(grid) elements. Resolved values are
// written (an unset knob shows the engine default it resolved to).
struct SweepColumns {
  double* gpu_memory_utilization = nullptr;
  std::int64_t* max_model_len = nullptr;
  std::int64_t* max_num_seqs = nullptr;
  std::int64_t* max_num_batched_tokens = nullptr;
  std::int64_t* kv_cache_bytes = nullptr;  // worst rank
  std::int64_t* kv_tokens = nullptr;
  double* max_concurrency = nullptr;
  std::int8_t* outcome = nullptr;  // static_cast<int8_t>(Outcome), -1 = refused knobs
};
// Evaluates every row without heap allocation; `base` gives the knobs no axis lists.
void sweep(const CompiledLaunch& launch, const LaunchKnobs& base, const SweepGrid& grid,
           const SweepColumns& out) noexcept;

// `vllm serve` flags for the plan (model not included), e.g. "--gpu-memory-utilization 0.91 ...",
// each word quoted for a POSIX shell where it needs it (render.cpp).
std::string to_vllm_args(const Plan& plan);

}  // namespace vramplan
