// The solver: the largest safe gpu_memory_utilization, max_model_len, max_num_seqs and
// max_num_batched_tokens for a launch, which constraint binds each, and remedies when nothing
// fits. Deterministic; every search is over a monotone function.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/remedy.hpp"
#include "vramplan/workload.hpp"

namespace vramplan {

struct SolveRequest {
  EngineConfig pinned;  // knobs the user fixed (unset = solver chooses)
  HardwareConfig hardware;
  std::int64_t target_context_tokens = 0;  // context to serve (0: model maximum)
  std::int64_t target_concurrency = 0;     // sequences of that context to hold at once (0: none)
  // Bytes kept free on each GPU beyond vLLM's own accounting; stated in the plan.
  std::int64_t safety_margin_bytes = kDefaultSafetyMarginBytes;
};

// What a plan serves beyond the launch's own knobs.
struct SolveTargets {
  std::int64_t context_tokens = 0;  // 0: the model maximum
  std::int64_t concurrency = 0;     // sequences of that context kept resident (0: none)
  std::int64_t safety_margin_bytes = kDefaultSafetyMarginBytes;
  // Bytes kept free for what the running server allocates beyond vLLM's startup profile
  // (-1: runtime_headroom_bytes() at the launch's default max_num_seqs; a runtime_oom
  // diagnosis gives the figure its log proves was missing).
  std::int64_t runtime_headroom_bytes = -1;
  Workload workload;  // empty: max_num_seqs is not sized from traffic
};

// What a workload asks of the planned KV cache (Plan::workload).
struct WorkloadReport {
  bool present = false;
  std::string description;                   // the workload's source, in words
  std::int64_t pool_blocks = 0;              // usable KV blocks (vLLM keeps one as its null block)
  std::int64_t shared_prefix_blocks = 0;     // full prefix blocks held once under prefix caching
  std::int64_t blocks_p50 = 0;               // blocks one request holds at its peak, median
  std::int64_t blocks_p99 = 0;               // the same at the 99th percentile
  std::int64_t requests_held_p50 = 0;        // requests of the median shape the pool holds
  std::int64_t requests_held_p99 = 0;        // the same at the 99th percentile
  double preemption_target = 0.0;            // the acceptable overflow probability
  double preemption_probability = 0.0;       // at the plan's max_num_seqs
  std::int64_t max_num_seqs_for_target = 0;  // the largest with preemption under the target
  double request_seconds = 0.0;              // the user's figure (0: not given)
  double requests_per_second_bound = 0.0;    // Little's law: resident requests / request_seconds
  std::int64_t activation_peak_bytes = 0;    // what max_num_batched_tokens costs on the worst rank
  std::int64_t activation_kv_tokens = 0;     // the same in KV tokens
  std::int64_t prefill_steps_p50 = 0;        // steps to prefill a median prompt
  std::int64_t prefill_steps_p99 = 0;        // ... a 99th-percentile prompt
};

// Bytes the running server allocates beyond what vLLM's startup profile measured, at
// `max_num_seqs`: on the V1 runner, whose dummy sampler runs without logprobs or grammars, the
// fp32 log-softmax of every logit (4 B) and the int32 structured-output bitmask (one bit per
// token); 0 on Model Runner V2, whose warm-up runs every sampler feature (docs/traffic.md).
std::int64_t runtime_headroom_bytes(const CompiledLaunch& launch,
                                    std::int64_t max_num_seqs) noexcept;

// The probability that `max_num_seqs` busy slots of `workload` overflow the KV cache of the
// launch at `evaluated` knobs with that many sequences (1 where the launch does not start).
double preemption_probability(const CompiledLaunch& launch, const EngineConfig& evaluated,
                              const Workload& workload, std::int64_t max_num_seqs);

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
  // Sequences of the target context served at once: what the KV cache holds, up to
  // max_num_seqs.
  std::int64_t concurrent_sequences = 0;
  // vLLM's "Maximum concurrency for max_model_len tokens per request": KV blocks over one
  // max_model_len request's blocks. A capacity figure, not a limit on max_num_seqs.
  double max_concurrency = 0.0;
  std::int64_t runtime_headroom_bytes = 0;  // kept free beside the safety margin
  WorkloadReport workload;                  // present with a workload
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
// The same for a workload, a runtime headroom and the other targets.
Plan solve(const CompiledLaunch& launch, const EngineConfig& pinned, const SolveTargets& targets);
// The solved knobs, verdict and breakdown alone: solve() without the as-written judgement
// (as_written_*, changed stay empty) and without remedies, which compile a changed launch
// each and are most of a failing solve's cost. The same plan otherwise, field for field.
Plan solve_knobs(const CompiledLaunch& launch, const EngineConfig& pinned,
                 const SolveTargets& targets);
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
// A share of the grid's points: the (length, sequences, tokens) combinations in
// [begin, end) of their nesting order, each under every utilization. A sweep in chunks of
// points prepares each point once however many utilizations the grid lists.
struct SweepPointRange {
  std::size_t begin = 0;
  std::size_t end = std::numeric_limits<std::size_t>::max();  // clamped to the grid's points
};
// Evaluates the rows of `points` without heap allocation (row u x points + point of the
// whole grid: `out` spans every row); `base` gives the knobs no axis lists.
void sweep(const CompiledLaunch& launch, const LaunchKnobs& base, const SweepGrid& grid,
           const SweepColumns& out, SweepPointRange points = {}) noexcept;

// `vllm serve` flags for the plan (model not included), e.g. "--gpu-memory-utilization 0.91 ...",
// each word quoted for a POSIX shell where it needs it (render.cpp).
std::string to_vllm_args(const Plan& plan);

}  // namespace vramplan
