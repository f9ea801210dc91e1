#include "vramplan/fit_options.hpp"

#include <string_view>

#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/knobs.hpp"
#include "vramplan/render.hpp"
#include "vramplan/solver.hpp"

namespace vramplan {
namespace {

bool is_split_field(const std::string& field) {
  return field == "tensor_parallel_size" || field == "pipeline_parallel_size" ||
         field == "data_parallel_size";
}

FitOptionRow invalid_split(const std::string& why) {
  FitOptionRow row;
  row.valid_split = false;
  row.verdict = "invalid split: " + why;
  return row;
}

// The plan of one option at the target, with what it can stretch to.
FitOptionRow plan_option(const std::shared_ptr<const ModelSpec>& spec, const FitKnobs& knobs,
                         const HardwareConfig& node, const FitOption& option,
                         const FitTarget& target, const ErrorBandTable& bands) {
  const std::int64_t dp = option.data_parallel_size;
  const std::int64_t per_replica = (target.concurrency + dp - 1) / dp;
  SolveTargets at_target;
  at_target.context_tokens = target.context_tokens;
  at_target.concurrency = per_replica;
  HardwareConfig hardware = node;
  hardware.gpu = *option.gpu;
  hardware.num_gpus = option.num_gpus;
  // The split knobs in the order the Python launch sets them (its knobs sorted by name).
  EngineConfig config = knobs.compiled;
  Plan plan;
  std::shared_ptr<const CompiledLaunch> launch;
  try {
    set_knob(config, "data_parallel_size", KnobValue{std::int64_t{option.data_parallel_size}});
    set_knob(config, "pipeline_parallel_size",
             KnobValue{std::int64_t{option.pipeline_parallel_size}});
    set_knob(config, "tensor_parallel_size", KnobValue{std::int64_t{option.tensor_parallel_size}});
    launch = std::make_shared<const CompiledLaunch>(spec, std::move(hardware), std::move(config));
    at_target.safety_margin_bytes =
        safety_margin_with_band(bands.lookup(*launch), kDefaultSafetyMarginBytes);
    plan = solve_knobs(*launch, knobs.evaluated, at_target);
  } catch (const ConfigError& err) {
    if (!is_split_field(err.field())) throw;
    return invalid_split(err.what());
  }
  const bool started = plan.breakdown.outcome == Outcome::Started;
  FitOptionRow row;
  row.fits = plan.fits;
  row.verdict = plan.verdict;
  row.max_concurrency = started ? plan.concurrent_sequences * dp : 0;
  row.kv_tokens = started ? plan.breakdown.kv_tokens * dp : 0;
  row.gpu_memory_utilization = plan.gpu_memory_utilization;
  row.max_model_len = plan.max_model_len;
  row.max_num_seqs = plan.max_num_seqs;
  row.max_num_batched_tokens = plan.max_num_batched_tokens;
  row.vllm_args = to_vllm_args(plan);
  const nlohmann::json env = to_vllm_env(plan);
  for (auto it = env.begin(); it != env.end(); ++it) {
    row.vllm_env.emplace_back(it.key(), it.value().get<std::string>());
  }
  if (plan.fits) {
    // Context 0: the solver's longest that holds the replica's sequences, on the same launch.
    SolveTargets longest_targets = at_target;
    longest_targets.context_tokens = 0;
    const Plan longest = solve_knobs(*launch, knobs.evaluated, longest_targets);
    row.max_context = longest.fits ? longest.max_model_len : 0;
  }
  return row;
}

}  // namespace

std::vector<FitOptionRow> fit_options(const std::shared_ptr<const ModelSpec>& spec,
                                      const FitKnobs& knobs, const HardwareConfig& node,
                                      const std::vector<FitOption>& options,
                                      const FitTarget& target, const ErrorBandTable& bands) {
  std::vector<FitOptionRow> rows;
  rows.reserve(options.size());
  for (const FitOption& option : options) {
    if (!option.refused.empty()) {
      rows.push_back(invalid_split(option.refused));
    } else {
      rows.push_back(plan_option(spec, knobs, node, option, target, bands));
    }
  }
  return rows;
}

}  // namespace vramplan
