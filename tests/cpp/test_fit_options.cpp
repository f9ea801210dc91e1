// fit's option loop (fit_options) and the remedy-free solve it runs (solve_knobs): the same
// plan as solve() field for field, each option's row from the plan of its launch, the
// data-parallel replicas counted as the test derives them, invalid splits as rows.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/error_band.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/fit_options.hpp"
#include "vramplan/knobs.hpp"
#include "vramplan/render.hpp"
#include "vramplan/solver.hpp"

using namespace vramplan;
using vramplan_test::h100;
using vramplan_test::kLlama31_8B;
using vramplan_test::spec_from_yaml;

namespace {

std::shared_ptr<const ModelSpec> llama_8b() {
  static const auto spec = std::make_shared<const ModelSpec>(spec_from_yaml(kLlama31_8B));
  return spec;
}

const ErrorBandTable& bands() {
  static const ErrorBandTable table =
      ErrorBandTable::load_file(std::string(VRAMPLAN_MODEL_SPECS_DIR) + "/error_bands.json");
  return table;
}

CompiledLaunch launch_of(std::int32_t tp, std::int32_t dp, std::int64_t others_bytes = 0) {
  HardwareConfig hardware;
  hardware.gpu = h100();
  hardware.num_gpus = tp * dp;
  hardware.memory_used_by_others_bytes = others_bytes;
  EngineConfig config;
  config.tensor_parallel_size = tp;
  config.data_parallel_size = dp;
  return CompiledLaunch(llama_8b(), hardware, config);
}

SolveTargets targets_of(std::int64_t context, std::int64_t concurrency, std::int64_t margin) {
  SolveTargets t;
  t.context_tokens = context;
  t.concurrency = concurrency;
  t.safety_margin_bytes = margin;
  return t;
}

}  // namespace

// Fitting, too many sequences or too long a context (solve() adds remedies), other processes
// leaving no KV room (the utilization hint judged), no target context (the longest for 8):
// solve_knobs gives solve()'s knobs, verdict and breakdown each time.
TEST(FitOptions, SolveKnobsIsSolveWithoutTheAsWrittenJudgementAndRemedies) {
  struct Case {
    std::int64_t context, concurrency, others_bytes;
  };
  const std::int64_t gib = std::int64_t{1} << 30;
  for (const Case c : {Case{32768, 8, 0}, Case{32768, 16, 0}, Case{8192, 300, 0},
                       Case{131072, 64, 0}, Case{32768, 1, 66 * gib}, Case{0, 8, 0}}) {
    const CompiledLaunch launch = launch_of(1, 1, c.others_bytes);
    const SolveTargets t = targets_of(c.context, c.concurrency, kDefaultSafetyMarginBytes);
    const Plan full = solve(launch, launch.config(), t);
    const Plan knobs = solve_knobs(launch, launch.config(), t);
    SCOPED_TRACE(full.verdict);
    EXPECT_EQ(knobs.fits, full.fits);
    EXPECT_EQ(knobs.verdict, full.verdict);
    EXPECT_EQ(knobs.gpu_memory_utilization, full.gpu_memory_utilization);
    EXPECT_EQ(knobs.max_model_len, full.max_model_len);
    EXPECT_EQ(knobs.max_num_seqs, full.max_num_seqs);
    EXPECT_EQ(knobs.max_num_batched_tokens, full.max_num_batched_tokens);
    EXPECT_EQ(knobs.concurrent_sequences, full.concurrent_sequences);
    EXPECT_EQ(knobs.breakdown.kv_tokens, full.breakdown.kv_tokens);
    EXPECT_EQ(knobs.breakdown.outcome, full.breakdown.outcome);
    EXPECT_EQ(to_vllm_args(knobs), to_vllm_args(full));
    EXPECT_TRUE(knobs.remedies.empty());
    EXPECT_TRUE(knobs.as_written_verdict.empty());
  }
  // The cases cover both answers.
  const CompiledLaunch launch = launch_of(1, 1);
  EXPECT_TRUE(solve_knobs(launch, launch.config(), targets_of(32768, 8, 0)).fits);
  EXPECT_FALSE(solve_knobs(launch, launch.config(), targets_of(131072, 64, 0)).fits);
}

TEST(FitOptions, SolveKnobsChecksTheTargetsAsSolveDoes) {
  const CompiledLaunch launch = launch_of(1, 1);
  EXPECT_THROW(solve_knobs(launch, launch.config(), targets_of(131073, 1, 0)), ConfigError);
  EXPECT_THROW(solve_knobs(launch, launch.config(), targets_of(4096, -1, 0)), ConfigError);
}

// Two replicas of TP 1 asked for 5 sequences: each replica holds ceil(5 / 2) = 3, and the row
// counts both replicas' sequences and KV tokens, at the H100 band's margin.
TEST(FitOptions, DataParallelRowCountsEveryReplica) {
  const GpuSpec gpu = h100();
  FitOption option;
  option.gpu = &gpu;
  option.num_gpus = 2;
  option.data_parallel_size = 2;
  const std::vector<FitOptionRow> rows =
      fit_options(llama_8b(), FitKnobs{}, HardwareConfig{}, {option}, FitTarget{32768, 5}, bands());
  ASSERT_EQ(rows.size(), 1U);
  const FitOptionRow& row = rows.front();

  const CompiledLaunch launch = launch_of(1, 2);
  const std::int64_t margin =
      safety_margin_with_band(bands().lookup(launch), kDefaultSafetyMarginBytes);
  const Plan replica = solve_knobs(launch, launch.config(), targets_of(32768, 3, margin));
  ASSERT_TRUE(replica.fits) << replica.verdict;
  EXPECT_TRUE(row.valid_split);
  EXPECT_TRUE(row.fits);
  EXPECT_EQ(row.verdict, replica.verdict);
  EXPECT_EQ(row.max_concurrency, 2 * replica.concurrent_sequences);
  EXPECT_EQ(row.kv_tokens, 2 * replica.breakdown.kv_tokens);
  EXPECT_EQ(row.max_model_len, 32768);
  EXPECT_EQ(row.vllm_args, to_vllm_args(replica));
  EXPECT_NE(row.vllm_args.find("--data-parallel-size 2"), std::string::npos) << row.vllm_args;
  // max_context: the longest context that still holds a replica's 3 sequences.
  const Plan longest = solve_knobs(launch, launch.config(), targets_of(0, 3, margin));
  EXPECT_EQ(row.max_context, longest.max_model_len);
  EXPECT_GE(row.max_context, 32768);
}

// 32 attention heads split 3 ways is no tensor-parallel group: that option is a row saying so,
// and the options around it are planned; a caller's refusal is a row with its text.
TEST(FitOptions, InvalidSplitsAreRows) {
  const GpuSpec gpu = h100();
  std::vector<FitOption> options(3);
  for (FitOption& o : options) o.gpu = &gpu;
  options[0].num_gpus = 3;
  options[0].tensor_parallel_size = 3;
  options[1].refused = "not on this GPU";
  options[2].num_gpus = 2;
  options[2].tensor_parallel_size = 2;
  const std::vector<FitOptionRow> rows =
      fit_options(llama_8b(), FitKnobs{}, HardwareConfig{}, options, FitTarget{4096, 1}, bands());
  ASSERT_EQ(rows.size(), 3U);
  EXPECT_FALSE(rows[0].valid_split);
  EXPECT_FALSE(rows[0].fits);
  EXPECT_EQ(rows[0].verdict.rfind("invalid split: tensor_parallel_size", 0), 0U) << rows[0].verdict;
  EXPECT_EQ(rows[1].verdict, "invalid split: not on this GPU");
  EXPECT_TRUE(rows[2].valid_split);
  EXPECT_TRUE(rows[2].fits) << rows[2].verdict;
}

// A knob every option shares that the launch refuses is the caller's error, not a row.
TEST(FitOptions, OtherKnobErrorsAreThrown) {
  const GpuSpec gpu = h100();
  FitOption option;
  option.gpu = &gpu;
  FitKnobs knobs;
  knobs.compiled.kv_cache_dtype = "int3";
  EXPECT_THROW(
      fit_options(llama_8b(), knobs, HardwareConfig{}, {option}, FitTarget{4096, 1}, bands()),
      ConfigError);
}
