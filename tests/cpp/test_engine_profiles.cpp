// Engine profiles are data (model_specs/engines.yaml, compiled in): versions map to their
// rows, and a malformed engines document is a named error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"

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
  EXPECT_EQ(engine_profile("0.26.9").from_minor, 26);
  EXPECT_EQ(engine_profile("").era, EngineEra::V1Latest);  // newest when unset
  // 0.15/0.16 kept the larger sampler temporaries and 0.13 GiB of TP=1 non-torch memory.
  EXPECT_DOUBLE_EQ(engine_profile("0.15.1").sampler_bytes_per_logit, 36.9);
  EXPECT_EQ(engine_profile("0.16.0").non_torch_single_rank_bytes, 133 << 20);
  EXPECT_DOUBLE_EQ(engine_profile("0.17.0").sampler_bytes_per_logit, 13.2);
  // FlashInfer's sampler from the first V1 row on (fp32 logits, top-k masked copy,
  // probabilities: 3 x 4 B); none on the V0 rows.
  EXPECT_DOUBLE_EQ(engine_profile("0.8.0").flashinfer_sampler_bytes_per_logit, 12.0);
  EXPECT_DOUBLE_EQ(engine_profile("0.17.0").flashinfer_sampler_bytes_per_logit, 12.0);
  EXPECT_DOUBLE_EQ(engine_profile("0.6.4").flashinfer_sampler_bytes_per_logit, 0.0);
  // V0: no chunked prefill by default, 256 sequences everywhere.
  const EngineProfile v0 = engine_profile("v0.6.4.post2");
  EXPECT_EQ(v0.era, EngineEra::V0);
  EXPECT_FALSE(v0.chunked_prefill_default);
  EXPECT_EQ(v0.max_num_seqs_large_gpu, 256);
  EXPECT_EQ(engine_profile("0.10.1.x").era, EngineEra::V1Early);
  // Versions parse as (major, minor, patch): a 1.x release takes the newest row, a missing
  // patch is .0 and whatever follows the patch is ignored.
  EXPECT_EQ(engine_profile("1.0.0").from_minor, engine_profile("").from_minor);
  EXPECT_EQ(engine_profile("1.2").from_minor, engine_profile("").from_minor);
  EXPECT_EQ(engine_profile("1.0.0").version, "1.0.0");
  EXPECT_EQ(engine_profile("").version, newest_known_vllm_version());  // the newest row's
  EXPECT_EQ(engine_profile("0.9").from_patch, 0);  // 0.9.0, before the 0.9.1 row
  EXPECT_EQ(engine_profile("0.8.5.post1").from_patch, 5);
  EXPECT_EQ(engine_profile("v0.9.1rc2").from_patch, 1);
  for (const char* bad : {"0.4.0", "0.4.99", "banana", "0", "0.", "1.x", "v"}) {
    try {
      (void)engine_profile(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.field(), "engine_version") << bad;
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

namespace {

const SpecDatabase& database() {
  static const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return db;
}

// What each release's rules should be, written from the fact table of docs/engine-versions.md
// (fact numbers in the comments), not from engines.yaml.
struct Expected {
  const char* version;
  EngineEra era;
  double default_utilization;  // 0.90 through 0.20 (fact 1), 0.92 from 0.21 (fact 2)
  bool chunked_prefill;        // V0 (before 0.8) without it (fact 22); V1 with it (fact 5)
  bool startup_check;          // from 0.9.1 (fact 23)
  bool post_allocation_check;  // V1 captures graphs, then warms the sampler, after KV (facts 7, 15)
  bool graphs_in_budget;       // the estimate applied from 0.21 (facts 15, 16)
  // Capture sizes at max_num_seqs 256 / 4 / 4 with 3 speculative tokens, 8192 batched tokens:
  // V0: 1, 2, 4, 8..256 step 8 cut at max_num_seqs: 35 / 3 (1, 2, 4) / 3 (fact 9).
  // 0.8-0.9: 1, 2, 4, 8..512 step 8, no max_num_seqs cut: 67 / 67 / 67 (fact 10).
  // 0.10-0.11.0: cut at min(2 x 256, 512) = 512: 67; at 2 x 4 = 8: 4 (1, 2, 4, 8), speculative
  //   tokens not counted: 4 (fact 11).
  // 0.11.1+: 3 + 31 (8..248) + 17 (256..512) = 51; cut at 8: 4; at 2 x 4 x (1 + 3) = 32:
  //   1, 2, 4, 8, 16, 24, 32 = 7, the 7 graphs of pub-017 (fact 12).
  std::int32_t sizes_256;
  std::int32_t sizes_4;
  std::int32_t sizes_4_spec3;
  // Batch defaults, max_num_seqs / `vllm serve` max_num_batched_tokens, on A100-80GB,
  // H100-80GB and L40S (model_specs/gpus.yaml), facts 17-19 and 22:
  // V0: 256 / 2048 everywhere. 0.8.0-0.8.3: 1024 seqs everywhere, 8192 tokens only on H100/H200
  // by name. 0.8.4: 256 seqs except on H100/H200. 0.8.5: every GPU >= 70 GiB large (A100
  // too). 0.9.0+: >= 70 GiB and not A100.
  std::int64_t a100_seqs, a100_tokens, h100_seqs, h100_tokens, l40s_seqs, l40s_tokens;
};

// Tiers as {A100 seqs, A100 tokens, H100 seqs, H100 tokens, L40S seqs, L40S tokens}.
constexpr std::int64_t kV0[] = {256, 2048, 256, 2048, 256, 2048};
constexpr std::int64_t kV1ByName[] = {1024, 2048, 1024, 8192, 1024, 2048};
constexpr std::int64_t kReverted[] = {256, 2048, 1024, 8192, 256, 2048};
constexpr std::int64_t kByMemory[] = {1024, 8192, 1024, 8192, 256, 2048};
constexpr std::int64_t kNotA100[] = {256, 2048, 1024, 8192, 256, 2048};

Expected row(const char* version, EngineEra era, double util, bool chunked, bool startup, bool post,
             bool in_budget, std::int32_t s256, std::int32_t s4, std::int32_t s4k,
             const std::int64_t (&tier)[6]) {
  return {version, era, util,    chunked, startup, post,    in_budget, s256,
          s4,      s4k, tier[0], tier[1], tier[2], tier[3], tier[4],   tier[5]};
}

std::vector<Expected> expected_rows() {
  std::vector<Expected> rows;
  for (const char* v : {"0.5", "0.6", "0.6.4", "0.7"}) {
    rows.push_back(row(v, EngineEra::V0, 0.90, false, false, false, false, 35, 3, 3, kV0));
  }
  for (const char* v : {"0.8", "0.8.3"}) {
    rows.push_back(
        row(v, EngineEra::V1Early, 0.90, true, false, true, false, 67, 67, 67, kV1ByName));
  }
  rows.push_back(
      row("0.8.4", EngineEra::V1Early, 0.90, true, false, true, false, 67, 67, 67, kReverted));
  rows.push_back(
      row("0.8.5", EngineEra::V1Early, 0.90, true, false, true, false, 67, 67, 67, kByMemory));
  for (const char* v : {"0.9", "0.9.0"}) {
    rows.push_back(
        row(v, EngineEra::V1Early, 0.90, true, false, true, false, 67, 67, 67, kNotA100));
  }
  rows.push_back(
      row("0.9.1", EngineEra::V1Early, 0.90, true, true, true, false, 67, 67, 67, kNotA100));
  rows.push_back(
      row("0.10", EngineEra::V1Early, 0.90, true, true, true, false, 67, 4, 4, kNotA100));
  rows.push_back(row("0.11", EngineEra::V1Mid, 0.90, true, true, true, false, 67, 4, 4, kNotA100));
  rows.push_back(
      row("0.11.1", EngineEra::V1Mid, 0.90, true, true, true, false, 51, 4, 7, kNotA100));
  for (const char* v : {"0.12", "0.13", "0.14", "0.15", "0.16", "0.17", "0.18", "0.19", "0.20"}) {
    rows.push_back(row(v, EngineEra::V1Mid, 0.90, true, true, true, false, 51, 4, 7, kNotA100));
  }
  for (const char* v : {"0.21", "0.22", "0.23", "0.24", "0.25", "0.26"}) {
    rows.push_back(row(v, EngineEra::V1Latest, 0.92, true, true, true, true, 51, 4, 7, kNotA100));
  }
  return rows;
}

}  // namespace

TEST(EngineProfiles, VersionsNewerThanTheNewestRowAreNamed) {
  // The newest release the rows describe, read from the rows: a new row moves it.
  const std::string newest = newest_known_vllm_version();
  const EngineProfile newest_row = engine_profile(newest);
  const std::string minor_prefix =
      std::to_string(newest_row.from_major) + "." + std::to_string(newest_row.from_minor) + ".";
  // No version: the newest release, named.
  const EngineProfile unset = engine_profile("");
  EXPECT_EQ(unset.version, newest);
  EXPECT_TRUE(unset.version_warning.empty());
  EXPECT_TRUE(newest_row.version_warning.empty());
  // Newer than the newest row: planned with it, and said so.
  const std::string newer = std::to_string(newest_row.from_major) + "." +
                            std::to_string(newest_row.from_minor + 7) + ".0";
  const EngineProfile later = engine_profile(newer);
  EXPECT_EQ(later.version, newer);
  EXPECT_EQ(later.from_minor, newest_row.from_minor);
  EXPECT_NE(later.version_warning.find(kVersionWarningName), std::string::npos);
  EXPECT_NE(later.version_warning.find(newer), std::string::npos);
  EXPECT_NE(later.version_warning.find(newest), std::string::npos);
  EXPECT_FALSE(engine_profile("1.0.0").version_warning.empty());
  EXPECT_FALSE(engine_profile(minor_prefix + std::to_string(newest_row.from_patch + 1))
                   .version_warning.empty());
  // The breakdown carries it.
  HardwareConfig hardware;
  hardware.gpu = database().gpu("H100-80GB");
  EngineConfig config;
  config.engine_version = newer;
  const Breakdown b =
      compute_breakdown(database().model("meta-llama/Llama-3.1-8B-Instruct"), hardware, config);
  EXPECT_EQ(b.profile().version_warning, later.version_warning);
  // Unparsable or older than the oldest row: a named error.
  for (const char* bad : {"banana", "0.4.9"}) {
    try {
      (void)engine_profile(bad);
      ADD_FAILURE() << bad;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.field(), "engine_version");
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos);
    }
  }
}

TEST(EngineProfiles, EveryReleaseFrom05To026FollowsTheFactTable) {
  const ModelSpec llama = vramplan_test::spec_from_yaml(vramplan_test::kLlama31_8B);
  for (const Expected& x : expected_rows()) {
    SCOPED_TRACE(x.version);
    const EngineProfile p = engine_profile(x.version);
    EXPECT_EQ(p.era, x.era);
    EXPECT_DOUBLE_EQ(p.default_gpu_memory_utilization, x.default_utilization);
    EXPECT_EQ(p.chunked_prefill_default, x.chunked_prefill);
    EXPECT_EQ(p.startup_free_memory_check, x.startup_check);
    EXPECT_EQ(p.post_allocation_check, x.post_allocation_check);
    EXPECT_EQ(p.cudagraph_in_budget, x.graphs_in_budget);
    EXPECT_EQ(p.graph_profiling_minimal_kv_cache, x.graphs_in_budget);
    EXPECT_EQ(cudagraph_capture_sizes(p, 256, 8192, 0).count, x.sizes_256);
    EXPECT_EQ(cudagraph_capture_sizes(p, 4, 8192, 0).count, x.sizes_4);
    EXPECT_EQ(cudagraph_capture_sizes(p, 4, 8192, 3).count, x.sizes_4_spec3);
    // The batch defaults as a launch resolves them; max_model_len 1024 keeps V0's
    // max(max_model_len, 2048) and the max_num_seqs x max_model_len cap out of the way.
    const struct {
      const char* gpu;
      std::int64_t seqs, tokens;
    } gpus[] = {{"A100-80GB", x.a100_seqs, x.a100_tokens},
                {"H100-80GB", x.h100_seqs, x.h100_tokens},
                {"L40S", x.l40s_seqs, x.l40s_tokens}};
    for (const auto& g : gpus) {
      HardwareConfig hw;
      hw.gpu = database().gpu(g.gpu);
      EngineConfig c;
      c.engine_version = x.version;
      c.max_model_len = 1024;
      const Breakdown b = compute_breakdown(llama, hw, c);
      EXPECT_EQ(b.config.max_num_seqs, g.seqs) << g.gpu;
      EXPECT_EQ(b.config.max_num_batched_tokens, g.tokens) << g.gpu;
    }
  }
}

TEST(EngineProfiles, LargeBatchDefaultsFollowTheGpuAndTheRelease) {
  const ModelSpec llama = vramplan_test::spec_from_yaml(vramplan_test::kLlama31_8B);
  // (seqs, serve tokens, LLM-class tokens) from facts 17, 19, 21: large 1024 / 8192 / 16384,
  // other 256 / 2048 / 8192.
  struct Case {
    const char* gpu;
    const char* version;
    std::int64_t seqs, serve_tokens, llm_tokens;
  };
  const Case cases[] = {
      {"A100-80GB", "0.8.5", 1024, 8192, 16384},  // PR #17073: >= 70 GiB, A100 included
      {"A100-80GB", "0.9.0", 256, 2048, 8192},    // PR #17885: A100 excluded again
      {"A100-80GB", "0.10", 256, 2048, 8192},
      {"L40S", "0.8.5", 256, 2048, 8192},  // 44.52 GiB: small in every release
      {"L40S", "0.10", 256, 2048, 8192},
      {"L40S", "0.19.0", 256, 2048, 8192},
      {"H100-80GB", "0.8.4", 1024, 8192, 16384},  // by name
      {"H100-80GB", "0.9.0", 1024, 8192, 16384},  // by memory (79.19 GiB)
      {"H100-80GB", "0.21.0", 1024, 8192, 16384},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(std::string(k.gpu) + " " + k.version);
    HardwareConfig hw;
    hw.gpu = database().gpu(k.gpu);
    EngineConfig c;
    c.engine_version = k.version;
    c.max_model_len = 1024;
    const Breakdown serve = compute_breakdown(llama, hw, c);
    EXPECT_EQ(serve.config.max_num_seqs, k.seqs);
    EXPECT_EQ(serve.config.max_num_batched_tokens, k.serve_tokens);
    c.llm_class = true;
    EXPECT_EQ(compute_breakdown(llama, hw, c).config.max_num_batched_tokens, k.llm_tokens);
  }
  // The rule reads the GPU's name and memory: an unnamed 72 GiB card is large only once the
  // memory rule exists (0.8.5); a card CUDA names "NVIDIA A100 80GB PCIe" is excluded by name.
  GpuSpec unnamed;
  unnamed.id = "custom";
  unnamed.name = "Custom Accelerator";
  unnamed.total_memory_bytes = std::int64_t{72} << 30;
  EXPECT_FALSE(uses_large_batch_defaults(engine_profile("0.8.4"), unnamed));
  EXPECT_TRUE(uses_large_batch_defaults(engine_profile("0.8.5"), unnamed));
  EXPECT_TRUE(uses_large_batch_defaults(engine_profile("0.19.0"), unnamed));
  unnamed.total_memory_bytes = (std::int64_t{70} << 30) - 1;  // one byte under 70 GiB
  EXPECT_FALSE(uses_large_batch_defaults(engine_profile("0.19.0"), unnamed));
  GpuSpec a100_pcie;
  a100_pcie.id = "my-card";
  a100_pcie.name = "NVIDIA A100 80GB PCIe";
  a100_pcie.total_memory_bytes = std::int64_t{80} << 30;
  EXPECT_TRUE(uses_large_batch_defaults(engine_profile("0.8.5"), a100_pcie));
  EXPECT_FALSE(uses_large_batch_defaults(engine_profile("0.9.0"), a100_pcie));
  // 0.8.0-0.8.4 go by name only: an H200 (139.72 GiB) is large, an MI300X (191.98 GiB) is not.
  EXPECT_TRUE(uses_large_batch_defaults(engine_profile("0.8.4"), database().gpu("H200")));
  EXPECT_FALSE(uses_large_batch_defaults(engine_profile("0.8.4"), database().gpu("MI300X")));
  EXPECT_TRUE(uses_large_batch_defaults(engine_profile("0.9.0"), database().gpu("MI300X")));
}

TEST(EngineProfiles, MalformedDocumentsAreNamedErrors) {
  const std::string row =
      "  - from_version: \"0.19\"\n    era: v1\n    default_gpu_memory_utilization: 0.9\n"
      "    cudagraph_in_budget: false\n    chunked_prefill_default: true\n"
      "    kv_tokens_report: blocks\n    sampler_bytes_per_logit: 13.2\n"
      "    flashinfer_sampler_bytes_per_logit: 12.0\n"
      "    sampler_full_sort_below_rows: 0\n    sampler_full_sort_bytes_per_logit: 48.0\n"
      "    non_torch_single_rank_bytes: 268435456\n"
      "    startup_free_memory_check: true\n    post_allocation_check: true\n"
      "    graph_profiling_minimal_kv_cache: false\n"
      "    mla_backend_block_size: true\n    non_torch_counts_cached_activations: false\n"
      "    moe_exchange_tokens_from_batch: false\n"
      "    state_blocks_bound_max_num_seqs: false\n"
      "    kv_group_size_close_ratio: 0\n"
      "    skips_encoder_without_modalities: false\n"
      "    vit_rotary_attention: fused_qk\n"
      "    mrope_cache_positions_factor: {standard: 4, qwen3_vl: 1}\n"
      "    long_context_chunked_prefill_rocm: true\n    negated_boolean_flags: true\n"
      "    chunked_prefill_flag_honored: true\n    v0_below_compute_capability: 0.0\n"
      "    loads_gguf: true\n    loads_bitsandbytes: true\n    gptq_group_act_order: true\n"
      "    kv_offload_shared_region: false\n    kv_offload_shared_region_rocm: false\n"
      "    unified_memory_free: available_integrated\n"
      "    long_context_chunked_prefill_above: 0\n    long_context_batched_tokens: 0\n"
      "    non_torch_pipeline_only_bytes: 75497472\n"
      "    non_torch_tensor_parallel_bytes: 2212495360\n"
      "    non_torch_tensor_parallel_pcie_bytes: 402653184\n    swap_space_default_bytes: "
      "0\n"
      "    cuda_context_bytes: 547356672\n    nccl_communicator_bytes: 268435456\n"
      "    cuda_context_reference_threads: 270336\n"
      "    max_resident_threads_per_sm: [[7.5, 1024], [9.0, 2048]]\n"
      "    forward_hidden_buffers: 6.0\n"
      "    cudagraph_capture: {ladder: [[1, 2, 1], [4, 4, 1], [8, 248, 8], [256, 512, 16]], "
      "bounded_by_max_num_seqs: true, seq_multiplier: 2, counts_speculative_tokens: true, "
      "max_size: 512, bounded_by_batched_tokens: true}\n"
      "    cudagraph_pool_mib: {base: 107, piece: 0.36, "
      "piece_moe: 0.076, piece_mla: 0.285, piece_mxfp4_moe: 0.357}\n"
      "    model_cudagraph_capture: {model_types: []}\n"
      "    full_cudagraph_attention_splits: 32\n    mm_prefix_lm_model_types: []\n"
      "    large_gpu_names: []\n    large_gpu_min_memory_bytes: 75161927680\n"
      "    large_gpu_excluded_names: [a100]\n"
      "    max_num_seqs: {large_gpu: 1024, other_gpu: 256}\n"
      "    max_num_batched_tokens: {serve_large_gpu: 8192, serve_other_gpu: 2048, "
      "llm_large_gpu: 16384, llm_other_gpu: 8192}\n"
      "    all2all_backend_default: naive\n    all2all_backend_flag_from: \"0.12\"\n    "
      "eplb_config_flag_from: \"0.11\"\n"
      "    fused_moe_chunk_tokens: 32768\n"
      "    budget_formula: components\n    model_runner_v2: none\n"
      "    model_runner_v2_moe_model_types: []\n"
      "    model_runner_v2_unsupported_speculative_methods: []\n"
      "    model_runner_v2_cudagraph_estimate: false\n"
      "    graph_profiling_blocks_bounded_by_max_num_seqs: false\n"
      "    capture_max_size_datacenter_blackwell: 0\n"
      "    capture_speculative_request_grid: false\n    capture_includes_max_num_seqs: false\n"
      "    huge_gpu_min_memory_bytes: 0\n"
      "    huge_gpu_max_num_batched_tokens: {serve: 16384, llm: 16384}\n";
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
      {replace("unified_memory_free: available_integrated", "unified_memory_free: memfree"),
       "unified_memory_free"},
      {replace("    sampler_bytes_per_logit: 13.2\n", ""), "sampler_bytes_per_logit"},
      {replace("large_gpu: 1024,", "large_gpu: -3,"), "max_num_seqs.large_gpu"},
      {replace("\"0.19\"", "\"nineteen\""), "from_version"},
      {"engines:\n" + row + row, "from_version"},  // not ascending
      {replace("default: naive", "default: pplx"), "all2all_backend_default"},
      {replace("from: \"0.12\"", "from: soon"), "all2all_backend_flag_from"},
      {replace("from: \"0.11\"", "from: later"), "eplb_config_flag_from"},
      {replace("tokens: 32768", "tokens: -1"), "fused_moe_chunk_tokens"},
      {replace("[8, 248, 8], [256", "[8, 248, 8], [200"), "cudagraph_capture.ladder[3]"},
      {replace("[[7.5, 1024], [9.0", "[[9.5, 1024], [9.0"), "max_resident_threads_per_sm[1]"},
      {replace("[7.5, 1024]", "[7.5, 0]"), "max_resident_threads_per_sm[0]"},
      {replace("[7.5, 1024]", "[7.5]"), "max_resident_threads_per_sm[0]"},
      {replace("per_sm: [[7.5, 1024], [9.0, 2048]]", "per_sm: 7.5"), "max_resident_threads_per_sm"},
      {replace("reference_threads: 270336", "reference_threads: 0"),
       "cuda_context_reference_threads"},
      {replace("piece_moe: 0.076", "piece_moe: -1"), "cudagraph_pool_mib.piece_moe"},
      {replace("full_cudagraph_attention_splits: 32", "full_cudagraph_attention_splits: -1"),
       "full_cudagraph_attention_splits"},
      {replace("mm_prefix_lm_model_types: []", "mm_prefix_lm_model_types: gemma3"),
       "mm_prefix_lm_model_types"},
      // An older calibration profile's width term is refused, not dropped.
      {replace("piece: 0.36, ", "piece: 0.36, piece_per_hidden: 5.24e-5, "),
       "cudagraph_pool_mib.piece_per_hidden"},
      {replace("mm_prefix_lm_model_types: []",
               "mm_prefix_lm_model_types: [a, b, c, d, e, f, g, h, i]"),
       "mm_prefix_lm_model_types"},
      {replace("mm_prefix_lm_model_types: []",
               "mm_prefix_lm_model_types: [" + std::string(32, 'x') + "]"),
       "mm_prefix_lm_model_types"},
      {replace("model_cudagraph_capture: {model_types: []}",
               "model_cudagraph_capture: {model_types: [gpt_oss]}"),
       "model_cudagraph_capture.ladder"},
      {replace("    post_allocation_check: true\n", ""), "post_allocation_check"},
      {replace("attention: fused_qk", "attention: fused"), "vit_rotary_attention"},
      {replace("qwen3_vl: 1}", "qwen3_vl: 0}"), "mrope_cache_positions_factor.qwen3_vl"},
      {replace("{standard: 4, ", "{"), "mrope_cache_positions_factor.standard"},
      {replace("bounded_by_max_num_seqs: true, ", ""), "cudagraph_capture.bounded_by_max_num_seqs"},
      {replace("excluded_names: [a100]", "excluded_names: [A100]"), "large_gpu_excluded_names[0]"},
      {replace("large_gpu_names: []", "large_gpu_names: h100"), "large_gpu_names"},
      {replace("    large_gpu_names: []\n", ""), "large_gpu_names"},
      {replace("bytes: 75161927680", "bytes: -1"), "large_gpu_min_memory_bytes"},
      {replace("\"0.19\"", "\"0\""), "from_version"},
      {replace("formula: components", "formula: measured"), "budget_formula"},
      {replace("model_runner_v2: none", "model_runner_v2: some"), "model_runner_v2"},
      {replace("blackwell: 0", "blackwell: -1"), "capture_max_size_datacenter_blackwell"},
      {replace("full_sort_below_rows: 0", "full_sort_below_rows: -128"),
       "sampler_full_sort_below_rows"},
      {replace("{serve: 16384, llm", "{llm"), "huge_gpu_max_num_batched_tokens.serve"},
      {"engines: [unclosed\n", "line 2"},  // the line YAML stopped at
      // Every field of a row is one the parser reads: a misspelt one is named, not dropped.
      {"engines:\n" + row + "  - from_version: \"0.19.2\"\n    fused_moe_chunk_token: 1\n",
       "engines[1].fused_moe_chunk_token: not a field of an engine row (did you mean "
       "fused_moe_chunk_tokens?)"},
      {replace("{standard: 4, ", "{standard: 4, qwen2_vl: 2, "),
       "mrope_cache_positions_factor.qwen2_vl"},
      {replace("bounded_by_max_num_seqs: true, ", "bounded_by_max_num_seqs: true, max: 512, "),
       "cudagraph_capture.max"},
      {replace("large_gpu: 1024,", "large_gpu: 1024, huge_gpu: 2048,"), "max_num_seqs.huge_gpu"},
      {replace("{serve_large_gpu", "{serve_huge_gpu: 1, serve_large_gpu"),
       "max_num_batched_tokens.serve_huge_gpu"},
      {replace("{serve: 16384,", "{serve: 16384, generate: 1,"),
       "huge_gpu_max_num_batched_tokens.generate"},
  };
  // A later row keeps what it omits from the row before; a patch row sorts after its minor.
  const auto two = parse_engine_profiles(
      "engines:\n" + row + "  - from_version: \"0.19.2\"\n    cudagraph_in_budget: true\n",
      "e.yaml");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].from_patch, 2);
  EXPECT_TRUE(two[1].cudagraph_in_budget);
  EXPECT_DOUBLE_EQ(two[1].sampler_bytes_per_logit, 13.2);
  EXPECT_EQ(two[1].capture_ladder_segments, 4);
  EXPECT_EQ(two[1].large_gpu_excluded_names, std::vector<std::string>{"a100"});
  try {
    (void)parse_engine_profiles(
        "engines:\n" + row + "  - from_version: \"0.19.0\"\n    cudagraph_in_budget: true\n",
        "e.yaml");
    ADD_FAILURE() << "accepted 0.19.0 after 0.19";  // "0.19" is 0.19.0
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("engines[1].from_version"), std::string::npos) << e.what();
  }
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

// The CUDA context scales with the GPU's resident threads (SMs x threads per SM) from the
// H100 SXM's 522 MiB (132 x 2048 threads, `cuda_memory=0.51GiB` at 0.19 worker init). Hand
// ratios: A100 108 x 2048 = 9/11 of it, 0.417 GiB (pub-103 logs 79.25 - 78.84 = 0.41 GiB free
// at startup); T4 40 x 1024 = 5/33, 79 MiB (pub-415's whole non-torch use was 0.14 GiB);
// RTX 4090 128 x 1536 = 8/11, 0.371 GiB (pub-307: 0.44 GiB used at startup). An AMD GPU and a
// GPU of unknown SM count keep 522 MiB.
TEST(EngineProfiles, CudaContextFollowsResidentThreads) {
  const ModelSpec s = vramplan_test::spec_from_yaml(vramplan_test::kLlama31_8B);
  EngineConfig c;
  c.engine_version = "0.19.0";
  auto context = [&](const GpuSpec& gpu) {
    HardwareConfig hw;
    hw.gpu = gpu;
    return compute_breakdown(s, hw, c).ranks.front().cuda_context_bytes;
  };
  constexpr std::int64_t kH100 = 547356672;
  EXPECT_EQ(context(database().gpu("H100-80GB")), kH100);
  EXPECT_EQ(context(database().gpu("A100-80GB")), 447837277);  // kH100 x 9 / 11
  EXPECT_EQ(context(database().gpu("T4")), 82932829);          // kH100 x 5 / 33
  EXPECT_EQ(context(database().gpu("RTX-4090")), 398077580);   // kH100 x 8 / 11
  EXPECT_EQ(context(database().gpu("MI300X")), kH100);         // not NVIDIA
  EXPECT_EQ(context(vramplan_test::h100()), kH100);            // no SM count
  GpuSpec unlisted = database().gpu("H100-80GB");
  unlisted.compute_capability = 6.1;  // Pascal: not in max_resident_threads_per_sm
  EXPECT_EQ(context(unlisted), kH100);
  // TP=2 adds the NCCL communicators on top of the GPU's own context.
  HardwareConfig two;
  two.gpu = database().gpu("T4");
  two.num_gpus = 2;
  c.tensor_parallel_size = 2;
  EXPECT_EQ(compute_breakdown(s, two, c).ranks.front().cuda_context_bytes,
            82932829 + engine_profile("0.19.0").nccl_communicator_bytes);
}

TEST(EngineProfiles, CalibrationProfileOverridesARow) {
  const EngineProfile base = engine_profile("0.10.1");
  const EngineProfile calibrated = apply_profile_overrides(
      base,
      "fitted_on: [a.log, b.log]\noverrides:\n  cuda_context_bytes: 600000000\n"
      "  cudagraph_pool_mib: {base: 300, piece: 0.2, piece_moe: 0.1,"
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
  // A field the planner does not read (misspelt here) would leave the row's value in force
  // while the user believes it changed: refused, naming it and the field it resembles.
  try {
    (void)apply_profile_overrides(base, "overrides: {cuda_context_byte: 600000000}\n", "p.yaml");
    ADD_FAILURE() << "accepted an override the planner does not read";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "p.yaml");
    EXPECT_EQ(e.field_path(), "overrides.cuda_context_byte");
    EXPECT_NE(std::string(e.what()).find("did you mean cuda_context_bytes?"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(apply_profile_overrides(base, "overrides: {zz: 1}\n", "p.yaml"), SpecError);
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
