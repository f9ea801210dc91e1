// The solver: the largest safe gpu_memory_utilization, max_model_len, max_num_seqs and
// max_num_batched_tokens for a launch, which constraint binds each, and remedies when nothing
// fits. Deterministic; every search is over a monotone function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

struct Remedy {
  std::string
      kind;  // fp8_kv_cache, shorter_context, quantized_weights, tensor_parallel, cpu_offload
  std::string change;  // the flag(s) to add, as `vllm serve` spells them
  bool fits = false;   // whether the launch fits with this change alone
  std::string detail;  // numbers: resulting KV tokens, weights per rank, ...
};

struct Plan {
  bool fits = false;
  std::string verdict;  // one line
  double gpu_memory_utilization = 0.0;
  std::int64_t max_model_len = 0;
  std::int64_t max_num_seqs = 0;
  std::int64_t max_num_batched_tokens = 0;
  std::string binding_gpu_memory_utilization;
  std::string binding_max_model_len;
  std::string binding_max_num_seqs;
  std::string binding_max_num_batched_tokens;
  std::int64_t safety_margin_bytes = 0;
  EngineConfig config;  // the full knob set the flags render
  Breakdown breakdown;  // at the chosen values
  std::vector<Remedy> remedies;
};

Plan solve(const ModelSpec& spec, const SolveRequest& request);

// A grid of launches evaluated in one call (notebook sweeps): the cartesian product of the
// listed utilizations, context lengths and sequence limits over `base` (empty list = base's
// value). Rows are in that nesting order; a launch the engine rejects outright (an invalid
// knob) reports outcome -1.
struct SweepGrid {
  std::vector<double> gpu_memory_utilization;
  std::vector<std::int64_t> max_model_len;
  std::vector<std::int64_t> max_num_seqs;
};
struct SweepPoint {
  double gpu_memory_utilization = 0.0;
  std::int64_t max_model_len = 0;
  std::int64_t max_num_seqs = 0;
  std::int64_t kv_cache_bytes = 0;  // worst rank
  std::int64_t kv_tokens = 0;
  double max_concurrency = 0.0;
  int outcome = -1;  // static_cast<int>(Outcome), -1 = rejected knobs
};
std::vector<SweepPoint> sweep(const ModelSpec& spec, const HardwareConfig& hardware,
                              const EngineConfig& base, const SweepGrid& grid);

// `vllm serve` flags for the plan (model not included), e.g. "--gpu-memory-utilization 0.91 ...".
std::string to_vllm_args(const Plan& plan);

}  // namespace vramplan
