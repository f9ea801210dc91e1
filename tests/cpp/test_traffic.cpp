// Planning for traffic: max_num_seqs as a scheduler cap, workloads in KV blocks, the overflow
// probability behind preemption, and the remedies' order. Every expected figure is derived in
// the test (vLLM's allocation rules quoted beside it), never read back from the code.
#include <gtest/gtest.h>

#include <cmath>

#include "test_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/solver.hpp"
#include "vramplan/spec_db.hpp"
#include "vramplan/workload.hpp"

using namespace vramplan;
using vramplan_test::kGiB;
using vramplan_test::shipped_database;
using vramplan_test::spec_from_yaml;

namespace {

CompiledLaunch compiled(const ModelSpec& spec, const GpuSpec& gpu, EngineConfig config,
                        std::int64_t others_bytes = 0) {
  HardwareConfig hardware;
  hardware.gpu = gpu;
  hardware.memory_used_by_others_bytes = others_bytes;
  return CompiledLaunch(std::make_shared<const ModelSpec>(spec), hardware, std::move(config));
}

// C(n, k) p^k (1-p)^(n-k) summed over k >= k0, written out term by term.
double binomial_tail_by_hand(int n, double p, int k0) {
  double sum = 0.0;
  for (int k = k0; k <= n; ++k) {
    double coefficient = 1.0;
    for (int i = 1; i <= k; ++i) coefficient = coefficient * (n - k + i) / i;
    sum += coefficient * std::pow(p, k) * std::pow(1.0 - p, n - k);
  }
  return sum;
}

}  // namespace

// The README's launch: Llama-3.1-8B on one H100 at the model's 131072 tokens, newest release.
// vLLM's `serve` default on a >= 70 GiB card whose name has no "a100" is 1024 sequences
// (EngineArgs.get_batch_defaults); the KV cache holds under 4 full-length requests, which vLLM
// reports as "Maximum concurrency for 131072 tokens per request: 3.82x" and which is no reason
// to cap the scheduler at 3.
TEST(TrafficSemantics, ReadmeLaunchKeepsTheReleaseDefaultSequences) {
  const ModelSpec spec = spec_from_yaml(vramplan_test::kLlama31_8B);
  const CompiledLaunch launch = compiled(spec, vramplan_test::h100(), EngineConfig{});
  const Plan plan = solve(launch, 0, 0, std::int64_t{512} << 20);
  ASSERT_TRUE(plan.fits) << plan.verdict;
  EXPECT_GE(plan.max_num_seqs, 128);
  EXPECT_EQ(plan.max_num_seqs, 1024);
  EXPECT_EQ(plan.max_model_len, 131072);
  // One request of 131072 tokens needs cdiv(131072, 16) = 8192 blocks: the concurrency is the
  // pool over that, and the full-length requests held its floor.
  const double by_hand = static_cast<double>(plan.breakdown.num_blocks) / 8192.0;
  EXPECT_NEAR(plan.max_concurrency, by_hand, 1e-9);
  EXPECT_EQ(plan.concurrent_sequences, static_cast<std::int64_t>(std::floor(by_hand)));
  EXPECT_NE(plan.verdict.find("Maximum concurrency for 131072 tokens per request"),
            std::string::npos)
      << plan.verdict;
  EXPECT_NE(plan.binding_max_num_seqs.find("scheduler cap"), std::string::npos);
}

// Over the shipped models and GPUs at four contexts: each plan's max_num_seqs is either the cap
// it names (the release default) or the largest that starts (one more does not), and the
// full-length concurrency it reports is exactly floor(blocks / blocks per request).
TEST(TrafficSemantics, SequencesAreTheLargestThatStartOrTheCap) {
  const SpecDatabase& db = shipped_database();
  int checked = 0;
  for (const char* model : {"meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B"}) {
    for (const char* gpu : {"H100-80GB", "L4", "L40S", "RTX-4090", "A100-40GB"}) {
      for (std::int64_t context : {4096, 16384, 32768}) {
        const CompiledLaunch launch = compiled(db.model(model), db.gpu(gpu), EngineConfig{});
        const Plan plan = solve(launch, context, 0, std::int64_t{512} << 20);
        if (!plan.fits) continue;
        ++checked;
        ResolvedKnobs defaults;
        LaunchKnobs unset;
        unset.max_model_len = plan.max_model_len;
        ASSERT_EQ(launch.try_resolve(unset, defaults), KnobProblem::None);
        if (plan.max_num_seqs < defaults.max_num_seqs) {
          LaunchKnobs more = launch_knobs(plan.config);
          more.max_num_seqs = plan.max_num_seqs + 1;
          ResolvedKnobs r;
          const bool starts = launch.try_resolve(more, r) == KnobProblem::None &&
                              launch.evaluate(r).outcome == Outcome::Started;
          EXPECT_FALSE(starts) << model << " on " << gpu << " at " << context;
        }
        const std::int64_t per_request = launch.blocks_per_request(
            launch.resolve(launch_knobs(plan.config)), plan.max_model_len);
        EXPECT_EQ(plan.concurrent_sequences,
                  std::min(plan.max_num_seqs, plan.breakdown.num_blocks / per_request))
            << model << " on " << gpu << " at " << context;
      }
    }
  }
  EXPECT_GT(checked, 20);
}

// --concurrency C keeps C requests resident by lowering max_num_seqs first: the batched-token
// budget stays at the release default (2048 for `vllm serve` below 70 GiB).
TEST(TrafficSemantics, ConcurrencyTargetLowersSequencesBeforeBatchedTokens) {
  const SpecDatabase& db = shipped_database();
  struct Case {
    const char* gpu;
    std::int64_t context;
    std::int64_t concurrency;
  };
  for (const Case& c : {Case{"L4", 16384, 2}, Case{"L40S", 32768, 6}, Case{"RTX-4090", 16384, 3}}) {
    const CompiledLaunch launch =
        compiled(db.model("Qwen/Qwen3-8B"), db.gpu(c.gpu), EngineConfig{});
    const Plan plan = solve(launch, c.context, c.concurrency, std::int64_t{512} << 20);
    ASSERT_TRUE(plan.fits) << c.gpu << ": " << plan.verdict;
    EXPECT_EQ(plan.max_num_batched_tokens, 2048) << c.gpu;
    EXPECT_GE(plan.concurrent_sequences, c.concurrency) << c.gpu;
    EXPECT_GE(plan.max_num_seqs, c.concurrency) << c.gpu;
  }
}

// Fixed requests of 2048 prompt + 512 output tokens at block 16 hold, at their peak,
// cdiv(2048 + 512 - 1, 16) = 160 blocks (the last sampled token is never fed back), so a pool
// of N usable blocks holds exactly floor(N / 160) of them.
TEST(TrafficWorkload, FixedRequestsHoldThePoolOver160Blocks) {
  const ModelSpec spec = spec_from_yaml(vramplan_test::kLlama31_8B);
  const CompiledLaunch launch = compiled(spec, vramplan_test::h100(), EngineConfig{});
  SolveTargets targets;
  targets.context_tokens = 8192;
  targets.workload = workload_from_requests({{2048, 512, 1.0}}, "test");
  const Plan plan = solve(launch, EngineConfig{}, targets);
  ASSERT_TRUE(plan.workload.present);
  EXPECT_EQ(plan.workload.blocks_p50, 160);
  EXPECT_EQ(plan.workload.blocks_p99, 160);
  // vLLM keeps one block as its null block.
  EXPECT_EQ(plan.workload.pool_blocks, plan.breakdown.num_blocks - 1);
  EXPECT_EQ(plan.workload.requests_held_p50, (plan.breakdown.num_blocks - 1) / 160);
  // One shape: slots x 160 blocks either fit or not, so max_num_seqs is the pool over 160,
  // capped by the release default.
  EXPECT_EQ(plan.max_num_seqs, std::min<std::int64_t>(1024, plan.workload.requests_held_p50));
}

// Two shapes, 100 blocks (70%) and 300 blocks (30%), 20 busy slots, 3000 free blocks: the pool
// overflows when 20 x 100 + 200 k > 3000, i.e. k >= 6 long requests.
TEST(TrafficWorkload, TwoPointOverflowIsTheBinomialSum) {
  BlockDistribution d;
  d.blocks[0] = 100;
  d.probability[0] = 0.7;
  d.blocks[1] = 300;
  d.probability[1] = 0.3;
  d.count = 2;
  EXPECT_NEAR(overflow_probability(d, 20, 3000), binomial_tail_by_hand(20, 0.3, 6), 1e-12);
  // A shared prefix of 500 blocks leaves 2500 for the requests' own: k >= 3.
  d.shared_blocks = 500;
  EXPECT_NEAR(overflow_probability(d, 20, 3000), binomial_tail_by_hand(20, 0.3, 3), 1e-12);
  // From the lower side of the mean (k0 = 1 <= 20 x 0.3) the complement is summed instead.
  d.shared_blocks = 0;
  EXPECT_NEAR(overflow_probability(d, 20, 2100), binomial_tail_by_hand(20, 0.3, 1), 1e-12);
  EXPECT_DOUBLE_EQ(overflow_probability(d, 20, 6000), 0.0);
  EXPECT_DOUBLE_EQ(overflow_probability(d, 20, 1999), 1.0);
}

// Three shapes: the normal approximation of the sum, mean 20 x (50 + 60 + 80) = 3800 blocks
// and variance 20 x (0.5 x 100^2 + 0.3 x 200^2 + 0.2 x 400^2 - 190^2) = 20 x 12900.
TEST(TrafficWorkload, ManyShapesUseTheNormalApproximation) {
  BlockDistribution d;
  d.blocks = {100, 200, 400};
  d.probability = {0.5, 0.3, 0.2};
  d.count = 3;
  const double z = (4000 + 0.5 - 3800) / std::sqrt(20.0 * 12900.0);
  EXPECT_NEAR(overflow_probability(d, 20, 4000), 0.5 * std::erfc(z / std::sqrt(2.0)), 1e-12);
}

// Gemma-2's sliding layers keep cdiv(min(4095 + T, L), 16) + 1 blocks per request however long
// it grows (T = 2048: 385), its full layers cdiv(L, 16): a 32000 + 1000-token request holds
// cdiv(32999, 16) = 2063 + 385 blocks, not 2 x 2063.
TEST(TrafficWorkload, SlidingWindowBlocksAreCappedAtTheWindow) {
  const ModelSpec spec = spec_from_yaml(R"(
id: test/gemma-2-9b-long
model_type: gemma2
hidden_size: 3584
num_hidden_layers: 42
num_attention_heads: 16
num_key_value_heads: 8
head_dim: 256
intermediate_size: 14336
vocab_size: 256000
max_position_embeddings: 65536
tie_word_embeddings: true
torch_dtype: bfloat16
norms_per_layer: 4
sliding_window: 4096
layer_pattern: [sliding_attention, full_attention]
)");
  EngineConfig config;
  config.max_num_batched_tokens = 2048;
  config.max_model_len = 65536;
  const CompiledLaunch launch = compiled(spec, vramplan_test::h100(), config);
  SolveTargets targets;
  targets.workload = workload_from_requests({{32000, 1000, 1.0}}, "test");
  const Plan plan = solve(launch, config, targets);
  ASSERT_TRUE(plan.workload.present) << plan.verdict;
  EXPECT_EQ(plan.workload.blocks_p50, 2063 + 385);
}

// Percentiles become a log-normal through both: the median bin sits at p50 and the 99th
// percentile of the bins below p99, in 32 equal-probability bins.
TEST(TrafficWorkload, PercentilesBecomeALogNormal) {
  EXPECT_NEAR(normal_quantile(0.99), 2.326347874, 1e-8);
  EXPECT_NEAR(normal_quantile(0.025), -1.959963985, 1e-8);
  const Workload w = workload_from_percentiles(1000, 4000, 200, 200);
  ASSERT_EQ(w.shapes.size(), 32U);
  double total = 0.0;
  for (const RequestShape& s : w.shapes) {
    total += s.probability;
    EXPECT_EQ(s.output_tokens, 200);
  }
  EXPECT_NEAR(total, 1.0, 1e-12);
  // Bins 15 and 16 straddle the median: 1000 x exp(sigma x z(15.5/32)), sigma = ln 4 / z99.
  const double sigma = std::log(4.0) / normal_quantile(0.99);
  EXPECT_EQ(w.shapes[16].prompt_tokens,
            std::llround(1000.0 * std::exp(sigma * normal_quantile(16.5 / 32))));
  EXPECT_LT(w.shapes.back().prompt_tokens, 4000 * 1.01);
  EXPECT_THROW(workload_from_percentiles(4000, 1000, 1, 1), ConfigError);
  EXPECT_THROW(workload_from_requests({}, "f.csv"), ConfigError);
  EXPECT_THROW(workload_from_requests({{0, 5, 1.0}}, "f.csv"), ConfigError);
}

// More distinct shapes than a workload keeps: equal-count bins, each at its largest request.
TEST(TrafficWorkload, ManyDistinctRequestsAreBinnedUpward) {
  std::vector<RequestShape> observed;
  for (int i = 1; i <= 640; ++i) observed.push_back({i, 10, 1.0});
  const Workload w = workload_from_requests(observed, "trace.csv");
  ASSERT_EQ(w.shapes.size(), kMaxWorkloadShapes);
  EXPECT_EQ(w.shapes.front().prompt_tokens, 10);  // requests 1..10, at 10
  EXPECT_EQ(w.shapes.back().prompt_tokens, 640);
  EXPECT_NEAR(w.shapes.front().probability, 10.0 / 640.0, 1e-12);
}

// A workload sizes max_num_seqs: the most slots whose overflow probability stays under the
// target, and one more exceeds it.
TEST(TrafficWorkload, SequencesKeepPreemptionUnderTheTarget) {
  const ModelSpec spec = spec_from_yaml(vramplan_test::kLlama31_8B);
  GpuSpec l4 = vramplan_test::h100();
  l4.id = "L4";
  l4.name = "NVIDIA L4";
  l4.total_memory_bytes = static_cast<std::int64_t>(22.05 * kGiB);
  l4.compute_capability = 8.9;
  EngineConfig config;
  config.max_model_len = 16384;
  const CompiledLaunch launch = compiled(spec, l4, config);
  SolveTargets targets;
  targets.workload = workload_from_percentiles(1000, 8000, 200, 1000);
  const Plan plan = solve(launch, config, targets);
  ASSERT_TRUE(plan.fits) << plan.verdict;
  const std::int64_t seqs = plan.max_num_seqs;
  EXPECT_LT(seqs, 256);
  EXPECT_LE(preemption_probability(launch, plan.config, targets.workload, seqs), 0.01);
  EXPECT_GT(preemption_probability(launch, plan.config, targets.workload, seqs + 1), 0.01);
  EXPECT_EQ(plan.workload.max_num_seqs_for_target, seqs);
  EXPECT_NE(plan.binding_max_num_seqs.find("the workload"), std::string::npos);
}

// Seed 001's checklist, step 2: a desktop card with 2 GiB taken by the display cannot give
// 0.95 x 23.64 GiB; the first remedy lowers the utilization to what is free:
// (23.64 - 2 - CUDA context - 0.5 margin - runtime headroom) / 23.64, in hundredths.
TEST(TrafficRemedies, LowerUtilizationComesFirstWhenTheFreeMemoryCheckFails) {
  const SpecDatabase& db = shipped_database();
  EngineConfig config;
  config.gpu_memory_utilization = 0.95;
  config.max_model_len = 8192;
  const CompiledLaunch launch = compiled(db.model("meta-llama/Meta-Llama-3-8B-Instruct"),
                                         db.gpu("RTX-4090"), config, std::int64_t{2} << 30);
  const Plan plan = solve(launch, 0, 0, std::int64_t{512} << 20);
  ASSERT_EQ(plan.breakdown.outcome, Outcome::StartupFreeMemory);
  ASSERT_FALSE(plan.remedies.empty());
  const Remedy& first = plan.remedies.front();
  EXPECT_EQ(first.kind, "lower_utilization");
  EXPECT_TRUE(first.fits) << first.detail;
  const double total = static_cast<double>(db.gpu("RTX-4090").total_memory_bytes);
  const double free = total - static_cast<double>(std::int64_t{2} << 30) -
                      static_cast<double>(launch.cuda_context_bytes()) -
                      static_cast<double>(std::int64_t{512} << 20) -
                      static_cast<double>(runtime_headroom_bytes(launch, 256));
  char expected[16];
  std::snprintf(expected, sizeof expected, "%.2f", std::floor(free / total * 100.0) / 100.0);
  ASSERT_EQ(first.changes.size(), 1U);
  EXPECT_EQ(first.changes.front().value, expected);
  // Every remedy states its cost in concurrency and batched tokens.
  for (const Remedy& r : plan.remedies) {
    EXPECT_NE(r.detail.find("Maximum concurrency"), std::string::npos) << r.detail;
    EXPECT_NE(r.detail.find("max_num_batched_tokens"), std::string::npos) << r.detail;
  }
}

// The V1 runner's dummy sampler runs without logprobs or grammars: at runtime the fp32
// log-softmax of every logit (4 B) and an int32 bitmask per 32 tokens come on top, per
// sequence: Llama-3.1's 128256-token vocabulary at 256 sequences = 256 x (513024 + 16032) B.
TEST(TrafficHeadroom, RuntimeHeadroomIsTheUnprofiledSamplerBuffers) {
  const ModelSpec spec = spec_from_yaml(vramplan_test::kLlama31_8B);
  EngineConfig v1;
  v1.engine_version = "0.19.0";
  EXPECT_EQ(runtime_headroom_bytes(compiled(spec, vramplan_test::h100(), v1), 256),
            256 * (128256 * 4 + 4008 * 4));
  EngineConfig mrv2;
  mrv2.engine_version = "0.33.0";
  const CompiledLaunch newest = compiled(spec, vramplan_test::h100(), mrv2);
  ASSERT_TRUE(newest.model_runner_v2());
  EXPECT_EQ(runtime_headroom_bytes(newest, 256), 0);
  // A headroom the user states (a runtime_oom diagnosis) is kept free: the utilization drops by
  // at least its share of the card.
  SolveTargets targets;
  targets.context_tokens = 8192;
  const Plan plain = solve(newest, EngineConfig{}, targets);
  targets.runtime_headroom_bytes = std::int64_t{4} << 30;
  const Plan kept = solve(newest, EngineConfig{}, targets);
  EXPECT_EQ(kept.runtime_headroom_bytes, std::int64_t{4} << 30);
  const double share = 4.0 * kGiB / static_cast<double>(vramplan_test::h100().total_memory_bytes);
  EXPECT_LE(kept.gpu_memory_utilization, plain.gpu_memory_utilization - share + 0.01);
  EXPECT_THROW(solve(newest, EngineConfig{}, SolveTargets{0, 0, 0, -2, {}}), ConfigError);
}

// Seed 002 (a forum thread): a Qwen3.6-27B-class hybrid as AWQ int4 with MTP 2, fp8 KV, 16k, at
// the user's 0.8 on an RTX 5090, on the 0.21-0.26 rules its log's 512-block override pins and
// on 0.33's. The user's flags stay; max_num_seqs is the largest whose graph profiling passes
// (one more fails it); and the launch as written is told the utilization cannot help.
TEST(TrafficSemantics, Seed002KeepsTheUserFlagsAndLowersSequencesToPassGraphProfiling) {
  ModelSpec spec =
      load_hf_config(std::string(VRAMPLAN_TEST_DATA_DIR) + "/configs/Qwen__Qwen3.5-27B.json");
  spec.quantization.method = QuantMethod::Awq;
  spec.quantization.bits = 4;
  spec.quantization.group_size = 128;
  spec.quantization.sym = false;
  for (const char* version : {"0.21.0", "0.33.0"}) {
    EngineConfig config;
    config.engine_version = version;
    config.kv_cache_dtype = "fp8";
    config.max_model_len = 16384;
    config.gpu_memory_utilization = 0.8;
    config.num_speculative_tokens = 2;
    const CompiledLaunch launch = compiled(spec, shipped_database().gpu("RTX-5090"), config);
    const Plan plan = solve(launch, 0, 0, std::int64_t{512} << 20);
    EXPECT_EQ(plan.as_written_outcome, Outcome::CudagraphProfilingOom) << version;
    EXPECT_NE(plan.as_written_verdict.find("Changing --gpu-memory-utilization cannot help"),
              std::string::npos)
        << plan.as_written_verdict;
    ASSERT_TRUE(plan.fits) << version << ": " << plan.verdict;
    EXPECT_DOUBLE_EQ(plan.gpu_memory_utilization, 0.8);
    EXPECT_EQ(plan.max_model_len, 16384);
    EXPECT_LT(plan.max_num_seqs, 256);
    // One more sequence fails graph profiling, or (a count it passes) the check that each
    // decoding sequence has a Gated DeltaNet state block.
    LaunchKnobs more = launch_knobs(plan.config);
    more.max_num_seqs = plan.max_num_seqs + 1;
    const Outcome one_more = launch.evaluate(launch.resolve(more)).outcome;
    EXPECT_TRUE(one_more == Outcome::CudagraphProfilingOom ||
                one_more == Outcome::StateBlocksBelowMaxNumSeqs)
        << version << " at " << plan.max_num_seqs + 1 << ": " << outcome_name(one_more);
  }
}

// A pinned 0.99 leaves 0.8 GiB beside the budget: on 0.19 the sampler warm-up after the KV
// allocation (max_num_seqs x vocab logits, outside the budget) does not fit at the default 1024
// sequences. The plan keeps the user's utilization and takes the largest count that starts.
TEST(TrafficSemantics, SamplerWarmupLowersSequencesToTheLargestThatStarts) {
  const ModelSpec spec = spec_from_yaml(vramplan_test::kLlama31_8B);
  EngineConfig config;
  config.engine_version = "0.19.0";
  config.gpu_memory_utilization = 0.99;
  config.max_model_len = 4096;
  const CompiledLaunch launch = compiled(spec, vramplan_test::h100(), config);
  const Plan plan = solve(launch, 0, 0, std::int64_t{512} << 20);
  ASSERT_EQ(plan.as_written_outcome, Outcome::SamplerWarmupOom);
  ASSERT_TRUE(plan.fits) << plan.verdict;
  EXPECT_DOUBLE_EQ(plan.gpu_memory_utilization, 0.99);
  EXPECT_LT(plan.max_num_seqs, 1024);
  LaunchKnobs more = launch_knobs(plan.config);
  more.max_num_seqs = plan.max_num_seqs + 1;
  EXPECT_NE(launch.evaluate(launch.resolve(more)).outcome, Outcome::Started);
  EXPECT_EQ(plan.binding_max_num_seqs.rfind("the largest that starts", 0), 0U);
}
