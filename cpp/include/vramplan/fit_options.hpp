// `vramplan fit`'s option loop for vLLM: one model and target over many GPU type x GPU count x
// TP/PP/DP split options, each launch compiled once and solved on it, in one call (Python
// enumerates the options and orders the rows; the numbers come from here).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vramplan/engine.hpp"
#include "vramplan/error_band.hpp"
#include "vramplan/model_spec.hpp"

namespace vramplan {

struct FitOption {
  const GpuSpec* gpu = nullptr;  // the caller's, alive for the call
  std::int32_t num_gpus = 1;
  std::int32_t tensor_parallel_size = 1;
  std::int32_t pipeline_parallel_size = 1;
  std::int32_t data_parallel_size = 1;
  // Not empty: the split is refused before compiling (the caller's check, e.g. TP or PP on a
  // MIG slice); the row is that invalid split with this text.
  std::string refused;
};

// What every option is asked to serve: `concurrency` sequences of `context_tokens` over all
// its data-parallel replicas (each replica ceil(concurrency / DP) of them).
struct FitTarget {
  std::int64_t context_tokens = 0;
  std::int64_t concurrency = 0;
};

// The knobs every option shares: the compiled ones (without the split) and the evaluated
// ones, as a `vramplan.plan` call takes them.
struct FitKnobs {
  EngineConfig compiled;
  EngineConfig evaluated;
};

struct FitOptionRow {
  // False: a split the model or the GPU cannot take; `verdict` is "invalid split: " and the
  // refusal, and no other field is set.
  bool valid_split = true;
  bool fits = false;
  std::string verdict;
  std::int64_t max_concurrency = 0;  // sequences of the target context, all replicas
  std::int64_t kv_tokens = 0;        // all replicas
  double gpu_memory_utilization = 0.0;
  std::int64_t max_model_len = 0;
  std::int64_t max_num_seqs = 0;
  std::int64_t max_num_batched_tokens = 0;
  // Fitting rows: the longest context that still holds a replica's sequences (0: none).
  std::int64_t max_context = 0;
  std::string vllm_args;  // the `vllm serve` flags, shell-quoted
  std::vector<std::pair<std::string, std::string>> vllm_env;  // variables the launch needs
};

// One row per option, in order. The safety margin of each launch is its error band's
// (safety_margin_with_band). A ConfigError about a split field (from compiling or solving at
// the target) makes that option's invalid-split row; any other error is thrown.
std::vector<FitOptionRow> fit_options(const std::shared_ptr<const ModelSpec>& spec,
                                      const FitKnobs& knobs, const HardwareConfig& node,
                                      const std::vector<FitOption>& options,
                                      const FitTarget& target, const ErrorBandTable& bands);

}  // namespace vramplan
