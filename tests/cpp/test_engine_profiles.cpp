// Engine profiles are data (model_specs/engines.yaml, compiled in): versions map to their
// rows, and a malformed engines document is a named error.
#include <gtest/gtest.h>

#include <string>

#include "test_support.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"

using namespace vramplan;

TEST(EngineProfiles, VersionsMapToTheirRows) {
  // 0.19: graphs captured after the KV allocation, outside the 0.90 budget; tokens from blocks.
  const EngineProfile v019 = engine_profile("0.19.0");
  EXPECT_EQ(v019.era, EngineEra::V1Mid);
  EXPECT_DOUBLE_EQ(v019.default_gpu_memory_utilization, 0.90);
  EXPECT_FALSE(v019.cudagraph_in_budget);
  EXPECT_FALSE(v019.tokens_from_concurrency);
  EXPECT_EQ(v019.non_torch_single_rank_bytes, 256 << 20);
  EXPECT_EQ(v019.max_num_seqs_large_gpu, 1024);
  // >= 0.21: the CUDA-graph estimate is inside the budget, default utilization 0.92.
  const EngineProfile v021 = engine_profile("0.21.0");
  EXPECT_EQ(v021.era, EngineEra::V1Latest);
  EXPECT_DOUBLE_EQ(v021.default_gpu_memory_utilization, 0.92);
  EXPECT_TRUE(v021.cudagraph_in_budget);
  EXPECT_TRUE(v021.tokens_from_concurrency);
  EXPECT_EQ(engine_profile("0.27.1").from_minor, 21);
  EXPECT_EQ(engine_profile("").era, EngineEra::V1Latest);  // newest when unset
  // 0.15/0.16 kept the larger sampler temporaries and 0.13 GiB of TP=1 non-torch memory.
  EXPECT_DOUBLE_EQ(engine_profile("0.15.1").sampler_bytes_per_logit, 36.9);
  EXPECT_EQ(engine_profile("0.16.0").non_torch_single_rank_bytes, 133 << 20);
  EXPECT_DOUBLE_EQ(engine_profile("0.17.0").sampler_bytes_per_logit, 13.2);
  // V0: no chunked prefill by default, 256 sequences everywhere.
  const EngineProfile v0 = engine_profile("v0.6.4.post2");
  EXPECT_EQ(v0.era, EngineEra::V0);
  EXPECT_FALSE(v0.chunked_prefill_default);
  EXPECT_EQ(v0.max_num_seqs_large_gpu, 256);
  EXPECT_EQ(engine_profile("0.10.1.x").era, EngineEra::V1Early);
  // Versions parse as (major, minor): a 1.x release takes the newest row.
  EXPECT_EQ(engine_profile("1.0.0").from_minor, engine_profile("").from_minor);
  EXPECT_EQ(engine_profile("1.0.0").version, "1.0.0");
  for (const char* bad : {"0.4.0", "banana", "0"}) {
    EXPECT_THROW(engine_profile(bad), ConfigError) << bad;
  }
}

TEST(EngineProfiles, MalformedDocumentsAreNamedErrors) {
  const std::string row =
      "  - from_version: \"0.19\"\n    era: v1\n    default_gpu_memory_utilization: 0.9\n"
      "    cudagraph_in_budget: false\n    chunked_prefill_default: true\n"
      "    kv_tokens_report: blocks\n    sampler_bytes_per_logit: 13.2\n"
      "    non_torch_single_rank_bytes: 268435456\n"
      "    startup_free_memory_check: true\n    post_allocation_check: true\n"
      "    graph_profiling_minimal_kv_cache: false\n"
      "    mla_backend_block_size: true\n    non_torch_pipeline_only_bytes: 75497472\n"
      "    non_torch_tensor_parallel_bytes: 2212495360\n    swap_space_default_bytes: 0\n"
      "    cuda_context_bytes: 547356672\n    nccl_communicator_bytes: 268435456\n"
      "    forward_hidden_buffers: 6.0\n"
      "    cudagraph_capture: {ladder: [[1, 2, 1], [4, 4, 1], [8, 248, 8], [256, 512, 16]], "
      "seq_multiplier: 2, counts_speculative_tokens: true, max_size: 512, "
      "bounded_by_batched_tokens: true}\n"
      "    cudagraph_pool_mib: {base: 400, piece: 0.111, piece_per_hidden: 5.24e-5, "
      "piece_moe: 0.15, piece_mla: 0.40, piece_mxfp4_moe: 0.67}\n"
      "    max_num_seqs: {large_gpu: 1024, other_gpu: 256}\n"
      "    max_num_batched_tokens: {serve_large_gpu: 8192, serve_other_gpu: 2048, "
      "llm_large_gpu: 16384, llm_other_gpu: 8192}\n"
      "    all2all_backend_default: naive\n    all2all_backend_flag_from: \"0.12\"\n"
      "    fused_moe_chunk_tokens: 32768\n";
  EXPECT_EQ(parse_engine_profiles("engines:\n" + row, "e.yaml").size(), 1u);
  struct Case {
    std::string text;
    const char* field;
  };
  auto replace = [&row](const std::string& from, const std::string& to) {
    std::string r = row;
    r.replace(r.find(from), from.size(), to);
    return "engines:\n" + r;
  };
  const Case cases[] = {
      {"engines: []\n", "engines"},
      {"models: {}\n", "engines"},
      {replace("era: v1", "era: v2"), "era"},
      {replace("0.9\n", "1.7\n"), "default_gpu_memory_utilization"},
      {replace("cudagraph_in_budget: false", "cudagraph_in_budget: maybe"), "cudagraph_in_budget"},
      {replace("kv_tokens_report: blocks", "kv_tokens_report: pages"), "kv_tokens_report"},
      {replace("    sampler_bytes_per_logit: 13.2\n", ""), "sampler_bytes_per_logit"},
      {replace("large_gpu: 1024,", "large_gpu: -3,"), "max_num_seqs.large_gpu"},
      {replace("\"0.19\"", "\"nineteen\""), "from_version"},
      {"engines:\n" + row + row, "from_version"},  // not ascending
      {replace("default: naive", "default: pplx"), "all2all_backend_default"},
      {replace("from: \"0.12\"", "from: soon"), "all2all_backend_flag_from"},
      {replace("tokens: 32768", "tokens: -1"), "fused_moe_chunk_tokens"},
      {replace("[8, 248, 8], [256", "[8, 248, 8], [200"), "cudagraph_capture.ladder[3]"},
      {replace("piece_moe: 0.15", "piece_moe: -1"), "cudagraph_pool_mib.piece_moe"},
      {replace("    post_allocation_check: true\n", ""), "post_allocation_check"},
      {"engines: [unclosed\n", "<document>"},
  };
  // A later row keeps what it omits from the row before.
  const auto two = parse_engine_profiles(
      "engines:\n" + row + "  - from_version: \"0.21\"\n    cudagraph_in_budget: true\n", "e.yaml");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_TRUE(two[1].cudagraph_in_budget);
  EXPECT_DOUBLE_EQ(two[1].sampler_bytes_per_logit, 13.2);
  EXPECT_EQ(two[1].capture_ladder_segments, 4);
  for (const Case& c : cases) {
    try {
      (void)parse_engine_profiles(c.text, "e.yaml");
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(c.field), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("e.yaml"), std::string::npos) << e.what();
    }
  }
}

TEST(EngineProfiles, CalibrationProfileOverridesARow) {
  const EngineProfile base = engine_profile("0.10.1");
  const EngineProfile calibrated = apply_profile_overrides(
      base,
      "fitted_on: [a.log, b.log]\noverrides:\n  cuda_context_bytes: 600000000\n"
      "  cudagraph_pool_mib: {base: 300, piece: 0.2, piece_per_hidden: 1e-5, piece_moe: 0.1,"
      " piece_mla: 0.3, piece_mxfp4_moe: 0.5}\n",
      "p.yaml");
  EXPECT_EQ(calibrated.cuda_context_bytes, 600000000);
  EXPECT_DOUBLE_EQ(calibrated.cudagraph_base_mib, 300.0);
  // Everything it does not name stays the 0.10 row's.
  EXPECT_DOUBLE_EQ(calibrated.sampler_bytes_per_logit, base.sampler_bytes_per_logit);
  EXPECT_EQ(calibrated.era, base.era);
  for (const char* bad : {"overrides: {era: v1}\n", "overrides: {cuda_context_bytes: -4}\n",
                          "overrides: [1, 2]\n", "fitted_on: x\n"}) {
    EXPECT_THROW(apply_profile_overrides(base, bad, "p.yaml"), SpecError) << bad;
  }
  // A compiled launch takes the calibrated profile instead of the version's row.
  const ModelSpec s = vramplan_test::spec_from_yaml(vramplan_test::kLlama31_8B);
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  EngineConfig c;
  c.engine_version = "0.10.1";
  const Breakdown plain = compute_breakdown(s, hw, c);
  c.profile = std::make_shared<const EngineProfile>(calibrated);
  const Breakdown fitted = compute_breakdown(s, hw, c);
  EXPECT_EQ(fitted.ranks.front().cuda_context_bytes, 600000000);
  EXPECT_EQ(fitted.startup_free_bytes - plain.startup_free_bytes,
            plain.ranks.front().cuda_context_bytes - 600000000);
}
