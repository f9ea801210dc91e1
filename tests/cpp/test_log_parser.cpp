// The vLLM log parser against real log text: the 42 vLLM 0.19.0 startup logs in
// shared/measured/logs (checked against the figures shared/measured/dev.jsonl records for
// them), excerpts of V0 and V1 logs in tests/data/vllm_logs (see its README for sources),
// and hostile input that must neither throw nor hang.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "vramplan/errors.hpp"
#include "vramplan/log_parser.hpp"
#include "vramplan/utf8.hpp"

using vramplan::parse_vllm_log;
using vramplan::VllmLogFigures;

namespace {

const std::string kLogDir = std::string(VRAMPLAN_COPIED_DATA_DIR) + "/measured/logs/vllm-0.19.0/";
const std::string kDevJsonl = std::string(VRAMPLAN_COPIED_DATA_DIR) + "/measured/dev.jsonl";
const std::string kExcerptDir = std::string(VRAMPLAN_TEST_DATA_DIR) + "/vllm_logs/";

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Reads a log or excerpt committed under tests/data; a missing one fails the test.
#define READ_OR_SKIP(var, path)                             \
  const auto var##_opt = read_file(path);                   \
  if (!var##_opt) FAIL() << "missing test data " << (path); \
  const std::string& var = *var##_opt

std::string excerpt(const std::string& name) {
  const auto text = read_file(kExcerptDir + name);
  EXPECT_TRUE(text.has_value()) << "missing test data " << kExcerptDir + name;
  return text.value_or("");
}

constexpr double kMiB = 1.0 / 1024.0;

bool has_line(const VllmLogFigures& f, const std::string& fragment) {
  for (const auto& line : f.error_lines) {
    if (line.find(fragment) != std::string::npos) return true;
  }
  return false;
}

// The 42 logs of shared/measured/logs/vllm-0.19.0.
const std::vector<std::string> kSharedLogs = {
    "deepseek-ai-deepseek-v2---h100-80gb--tp1pp1dp1--8192.log",
    "fp8dyn-llama-3-3-70b--h100-80gb--tp2pp1dp1--8192.log",
    "google-gemma-2-9b-it--h100-80gb--tp1pp1dp1--8192.FAILED.log",
    "google-gemma-2-9b-it--h100-80gb--tp1pp1dp1--8192.log",
    "google-gemma-3-12b-it--h100-80gb--tp1pp1dp1--8192.FAILED.log",
    "google-gemma-3-12b-it--h100-80gb--tp1pp1dp1--8192.log",
    "meta-llama---h100-80gb--tp1pp1dp1--8192-dtbf16-kvfp8.log",
    "meta-llama-llama---h100-80gb--tp1pp1dp1--8192-dtbf16.log",
    "meta-llama-llama-3---h100-80gb--tp1pp1dp1--8192-qfp8.log",
    "meta-llama-llama-3--h100-80gb--tp1pp1dp1--8192-dtf16.log",
    "meta-llama-llama-3--h100-80gb--tp1pp1dp1--8192-dtf32.log",
    "meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp1--2048.log",
    "meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp1--4096.log",
    "meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp1--8192.log",
    "meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp2--8192.FAILED.log",
    "meta-llama-llama-3-1-8b---h100-80gb--tp1pp2dp1--8192.log",
    "meta-llama-llama-3-1-8b---h100-80gb--tp1pp4dp1--8192.log",
    "meta-llama-llama-3-1-8b---h100-80gb--tp2pp1dp1--8192.log",
    "meta-llama-llama-3-1-8b---h100-80gb--tp4pp1dp1--8192.log",
    "meta-llama-llama-3-1-8b--h100-80gb--tp1pp1dp1--16384.log",
    "meta-llama-llama-3-1-8b--h100-80gb--tp1pp1dp1--32768.log",
    "meta-llama-llama-4-scout--h100-80gb--tp4pp1dp1--8192.FAILED.log",
    "meta-llama-llama-4-scout--h100-80gb--tp4pp1dp1--8192.log",
    "microsoft-phi-4--h100-80gb--tp1pp1dp1--8192.log",
    "mistralai-mixtral-8x7b-i--h100-80gb--tp2pp1dp1--8192.log",
    "openai-gpt-oss-20b--h100-80gb--tp1pp1dp1--8192.FAILED.log",
    "openai-gpt-oss-20b--h100-80gb--tp2pp1dp1--8192.FAILED.log",
    "openai-gpt-oss-20b--h100-80gb--tp2pp1dp1--8192.log",
    "qwen-qwen2---h100-80gb--tp1pp1dp1--8192-dtbf16-kvfp8.log",
    "qwen-qwen2-5-7b-i--h100-80gb--tp1pp1dp1--8192-dtbf16.log",
    "qwen-qwen2-5-7b-instruc--h100-80gb--tp1pp1dp1--16384.log",
    "qwen-qwen2-5-7b-instruc--h100-80gb--tp1pp1dp1--32768.log",
    "qwen-qwen2-5-7b-instruct--h100-80gb--tp1pp1dp1--2048.log",
    "qwen-qwen2-5-7b-instruct--h100-80gb--tp1pp1dp1--4096.log",
    "qwen-qwen2-5-7b-instruct--h100-80gb--tp1pp1dp1--8192.log",
    "qwen-qwen2-5-7b-instruct--h100-80gb--tp2pp1dp1--8192.log",
    "qwen-qwen2-5-7b-instruct--h100-80gb--tp4pp1dp1--8192.log",
    "qwen-qwen3-30b-a3b--h100-80gb--tp1pp1dp1--8192.log",
    "qwen-qwen3-8b--h100-80gb--tp1pp1dp1--8192.log",
    "redhatai-llama-3-3-70b-i--h100-80gb--tp2pp1dp1--8192.log",
    "w4a16-redhatai-lla--h100-80gb--tp1pp1dp1--8192-dtf16.log",
    "w8a8-redhatai-llam--h100-80gb--tp1pp1dp1--8192-dtf16.log",
};

}  // namespace

// ---------------------------------------------------------------------------------------
// V0 era.

TEST(LogParserV0, MemoryProfilingResultsLine) {
  // dev-001 (late 2024, RTX 3090).
  const VllmLogFigures f = parse_vllm_log(excerpt("v0_dev001_memory_profiling_results.log"));
  ASSERT_TRUE(f.weights_gib);
  EXPECT_DOUBLE_EQ(*f.weights_gib, 14.9888);  // "14.9888 GB": vLLM's GB label is GiB
  ASSERT_TRUE(f.gpu_total_gib);
  EXPECT_DOUBLE_EQ(*f.gpu_total_gib, 23.58);
  ASSERT_TRUE(f.non_torch_gib);
  EXPECT_DOUBLE_EQ(*f.non_torch_gib, 0.35);
  ASSERT_TRUE(f.kv_cache_gib);
  EXPECT_DOUBLE_EQ(*f.kv_cache_gib, 3.81);
  ASSERT_TRUE(f.num_gpu_blocks);
  EXPECT_EQ(*f.num_gpu_blocks, 1952);
  // peak_torch_memory=17.06GiB includes the weights: it is not the activation peak.
  EXPECT_FALSE(f.activation_peak_gib);
  EXPECT_FALSE(f.kv_tokens);
  EXPECT_EQ(f.outcome, "started");
  EXPECT_TRUE(f.error_lines.empty());
}

TEST(LogParserV0, MemoryProfilingTakesLines) {
  // dev-006 (vLLM 0.6.6 dev, H100-80G).
  const VllmLogFigures f = parse_vllm_log(excerpt("v0_dev006_memory_profiling_takes.log"));
  EXPECT_EQ(f.gpu_total_gib, 79.22);
  EXPECT_EQ(f.gpu_memory_utilization, 0.90);
  EXPECT_EQ(f.weights_gib, 19.86);
  EXPECT_EQ(f.non_torch_gib, 0.16);
  EXPECT_EQ(f.activation_peak_gib, 36.63);
  EXPECT_EQ(f.kv_cache_gib, 14.65);
  EXPECT_EQ(f.num_gpu_blocks, 6001);
  EXPECT_EQ(f.outcome, "started");
}

TEST(LogParserV0, InsufficientKvForMaxModelLen) {
  // dev-007 (~0.5.3, 8xH100, Llama-3.1-405B-FP8).
  const VllmLogFigures f = parse_vllm_log(excerpt("v0_dev007_insufficient_kv.log"));
  EXPECT_EQ(f.weights_gib, 57.752);
  EXPECT_EQ(f.max_model_len, 131072);
  EXPECT_EQ(f.outcome, "insufficient_kv_for_max_model_len");
  ASSERT_EQ(f.error_lines.size(), 1u);
  EXPECT_EQ(f.error_lines[0],
            "ValueError: The model's max seq len (131072) is larger than the maximum number of "
            "tokens that can be stored in KV cache (79392).");
  // V0 does not print an estimated length.
  EXPECT_FALSE(f.estimated_max_model_len);
}

TEST(LogParserV0, InsufficientKvFromDev002ErrorText) {
  // dev-002 error_text, as given.
  const VllmLogFigures f = parse_vllm_log(
      "The model's max seq len (29000) is larger than the maximum number of tokens that can be "
      "stored in KV cache (23648).");
  EXPECT_EQ(f.outcome, "insufficient_kv_for_max_model_len");
  EXPECT_EQ(f.max_model_len, 29000);
}

// ---------------------------------------------------------------------------------------
// V1, 0.10 era.

TEST(LogParserV1_010, NegativeKvBudgetFailsTheLaunch) {
  // dev-008 (0.10.1, gpt-oss-120b on one H100).
  const VllmLogFigures f = parse_vllm_log(excerpt("v1_010_dev008_negative_kv.log"));
  EXPECT_EQ(f.weights_gib, 65.9651);
  EXPECT_EQ(f.kv_cache_gib, -2.14);
  EXPECT_EQ(f.outcome, "oom_kv_alloc");  // as dev-008 records it
  ASSERT_FALSE(f.error_lines.empty());
  EXPECT_EQ(f.error_lines[0], "Available KV cache memory: -2.14 GiB");
}

TEST(LogParserV1_010, KvLinesWithoutPrefix) {
  // dev-005 (Qwen3-235B-A22B-FP8, 4xH100).
  const VllmLogFigures f = parse_vllm_log(excerpt("v1_dev005_kv_lines.log"));
  EXPECT_EQ(f.kv_cache_gib, 8.11);
  EXPECT_EQ(f.kv_tokens, 178880);
  EXPECT_EQ(f.outcome, "started");  // KV figures and no failure
}

TEST(LogParserV1, NoAvailableMemoryForCacheBlocks) {
  const VllmLogFigures f = parse_vllm_log(
      "(EngineCore_0 pid=5839) ERROR 08-20 18:04:22 [core.py:700] ValueError: No available "
      "memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
      "the engine.\n");
  EXPECT_EQ(f.outcome, "oom_kv_alloc");
  ASSERT_EQ(f.error_lines.size(), 1u);
  EXPECT_EQ(f.error_lines[0].rfind("ValueError: No available memory for the cache blocks", 0), 0u);
}

// ---------------------------------------------------------------------------------------
// V1 failure kinds written in vLLM's message formats (shared/reference/vllm-memory.md §2.4
// and §3); no shared log shows them.

TEST(LogParserFailures, InsufficientKvWithEstimatedLength) {
  const std::string text =
      "(EngineCore pid=243) INFO 04-22 01:07:53 [v1/worker/gpu_worker.py:436] Available KV cache "
      "memory: 10.27 GiB\n"
      "(EngineCore pid=243) ERROR 04-22 01:07:53 [v1/engine/core.py:1108] ValueError: To serve "
      "at least one request with the model's max seq len (131072), (16.00 GiB KV cache is "
      "needed, which is larger than the available KV cache memory (10.27 GiB). Based on the "
      "available memory, the estimated maximum model length is 84112. Try increasing "
      "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n";
  const VllmLogFigures f = parse_vllm_log(text);
  EXPECT_EQ(f.outcome, "insufficient_kv_for_max_model_len");
  EXPECT_EQ(f.needed_kv_gib, 16.00);
  EXPECT_EQ(f.estimated_max_model_len, 84112);
  EXPECT_EQ(f.kv_cache_gib, 10.27);
  EXPECT_EQ(f.max_model_len, 131072);
  ASSERT_EQ(f.error_lines.size(), 1u);
  EXPECT_EQ(f.error_lines[0].rfind("ValueError: To serve at least one request", 0), 0u);

  // Older wording: "models's" and no parenthesis before the needed size.
  const VllmLogFigures g = parse_vllm_log(
      "ValueError: To serve at least one request with the models's max seq len (32768), 16.00 "
      "GiB KV cache is needed, which is larger than the available KV cache memory (4.85 GiB). "
      "Based on the available memory, the estimated maximum model length is 9936.");
  EXPECT_EQ(g.outcome, "insufficient_kv_for_max_model_len");
  EXPECT_EQ(g.needed_kv_gib, 16.00);
  EXPECT_EQ(g.estimated_max_model_len, 9936);
  EXPECT_EQ(g.max_model_len, 32768);
}

TEST(LogParserFailures, PaddingLayers) {
  const VllmLogFigures f = parse_vllm_log(
      "(EngineCore_DP0 pid=590168) INFO 01-16 14:20:25 [gpu_worker.py:375] Available KV cache "
      "memory: 25.39 GiB\n"
      "(EngineCore_DP0 pid=590168) WARNING 01-16 14:20:25 [kv_cache_utils.py:1033] Add 2 "
      "padding layers, may waste at most 9.09% KV cache memory\n"
      "(EngineCore_DP0 pid=590168) INFO 01-16 14:20:25 [kv_cache_utils.py:1291] GPU KV cache "
      "size: 950,864 tokens\n");
  EXPECT_EQ(f.padding_layers, 2);
  EXPECT_EQ(f.kv_cache_gib, 25.39);
  EXPECT_EQ(f.kv_tokens, 950864);
  EXPECT_EQ(f.outcome, "started");
  // No padding warning, no figure.
  EXPECT_FALSE(parse_vllm_log("Add padding layers later").padding_layers);
}

TEST(LogParserFailures, CudaOomBeforeKvIsAtLoad) {
  // Newer and older torch OOM wording, before any KV figure.
  const VllmLogFigures f = parse_vllm_log(
      "(EngineCore pid=1) INFO 04-22 00:04:02 [default_loader.py:384] Loading weights took 13.49 "
      "seconds\n"
      "(EngineCore pid=1) ERROR 04-22 00:04:03 [core.py:1108] torch.OutOfMemoryError: CUDA out of "
      "memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 23.56 GiB of which "
      "1.03 GiB is free. Including non-PyTorch memory, this process has 22.51 GiB memory in "
      "use.\n");
  EXPECT_EQ(f.outcome, "oom_at_load");
  EXPECT_EQ(f.oom_tried_gib, 1.96);
  EXPECT_EQ(f.oom_total_gib, 23.56);
  EXPECT_EQ(f.oom_free_gib, 1.03);
  EXPECT_EQ(f.gpu_total_gib, 23.56);
  EXPECT_FALSE(f.weights_gib);  // "Loading weights took 13.49 seconds" is a time

  const VllmLogFigures g = parse_vllm_log(
      "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB (GPU 0; "
      "79.15 GiB total capacity; 77.50 GiB already allocated; 10.81 MiB free; 78.01 GiB reserved "
      "in total by PyTorch)");
  EXPECT_EQ(g.outcome, "oom_at_load");
  EXPECT_DOUBLE_EQ(*g.oom_tried_gib, 224.0 * kMiB);
  EXPECT_DOUBLE_EQ(*g.oom_total_gib, 79.15);
  EXPECT_DOUBLE_EQ(*g.oom_free_gib, 10.81 * kMiB);
}

// ---------------------------------------------------------------------------------------
// vLLM 0.19.0: excerpts and full logs.

TEST(LogParserV019, SamplerWarmupOomExcerpt) {
  const VllmLogFigures f = parse_vllm_log(excerpt("v019_gpt_oss_20b_sampler_oom.log"));
  EXPECT_EQ(f.kv_cache_gib, 58.47);
  EXPECT_EQ(f.kv_tokens, 1277184);
  EXPECT_EQ(f.max_concurrency, 155.75);
  EXPECT_EQ(f.max_concurrency_tokens, 8192);
  EXPECT_EQ(f.cudagraph_gib, 1.84);
  EXPECT_EQ(f.outcome, "oom_kv_alloc");
  ASSERT_TRUE(f.oom_tried_gib && f.oom_total_gib && f.oom_free_gib);
  EXPECT_DOUBLE_EQ(*f.oom_tried_gib, 786.00 * kMiB);
  EXPECT_DOUBLE_EQ(*f.oom_total_gib, 79.19);
  EXPECT_DOUBLE_EQ(*f.oom_free_gib, 552.50 * kMiB);
  EXPECT_EQ(f.error_lines.size(), 2u);
  EXPECT_TRUE(has_line(f, "RuntimeError: CUDA out of memory occurred when warming up sampler"));
  EXPECT_TRUE(has_line(f, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 786.00"));
}

TEST(LogParserV019, StartupFreeMemoryExcerpt) {
  const VllmLogFigures f = parse_vllm_log(excerpt("v019_llama4_scout_startup_free_memory.log"));
  EXPECT_EQ(f.outcome, "startup_free_memory");
  EXPECT_EQ(f.startup_free_gib, 60.33);
  EXPECT_EQ(f.startup_desired_gib, 75.23);
  EXPECT_EQ(f.gpu_total_gib, 79.19);
  EXPECT_EQ(f.gpu_memory_utilization, 0.95);
  ASSERT_EQ(f.error_lines.size(), 1u);
  EXPECT_EQ(f.error_lines[0].rfind("ValueError: Free memory on device cuda:1 (60.33/79.19 GiB)", 0),
            0u);
}

// vLLM 0.10.2 prints the same check without the device (pub-416, an H100 NVL whose other
// processes held 93.0 - 16.01 = 76.99 GiB): the free figure, total and desired budget still read.
TEST(LogParserV0102, StartupFreeMemoryWithoutDeviceName) {
  const VllmLogFigures f = parse_vllm_log(excerpt("v0102_qwen3_14b_startup_free_memory.log"));
  EXPECT_EQ(f.outcome, "startup_free_memory");
  EXPECT_EQ(f.startup_free_gib, 16.01);
  EXPECT_EQ(f.startup_desired_gib, 74.4);
  EXPECT_EQ(f.free_at_startup_gib, 16.01);
  EXPECT_EQ(f.gpu_total_gib, 93.0);
  EXPECT_EQ(f.vllm_version, "0.10.2");
  ASSERT_EQ(f.error_lines.size(), 1u);
  EXPECT_EQ(f.error_lines[0].rfind("ValueError: Free memory on device (16.01/93.0 GiB)", 0), 0u);
}

// A startup line that passed the check (0.10.2 INFO; pub-315's log line 13, figures only): the
// free figure is read as free_at_startup_gib, not as a failed check's.
TEST(LogParserV0102, PassedStartupLineGivesTheFreeFigureOnly) {
  const VllmLogFigures f = parse_vllm_log(
      "INFO 09-20 19:08:37 [gpu_worker.py:391] Free memory on device (78.57/79.18 GiB) on "
      "startup. Desired GPU memory utilization is (0.9, 71.26 GiB).\n");
  EXPECT_EQ(f.free_at_startup_gib, 78.57);
  EXPECT_EQ(f.gpu_total_gib, 79.18);
  EXPECT_FALSE(f.startup_free_gib.has_value());
  EXPECT_NE(f.outcome, "startup_free_memory");
}

TEST(LogParserV019, FullLogLlama31_8B) {
  READ_OR_SKIP(text, kLogDir + "meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp1--8192.log");
  const VllmLogFigures f = parse_vllm_log(text);
  EXPECT_EQ(f.vllm_version, "0.19.0");
  EXPECT_EQ(f.model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(f.dtype, "bfloat16");  // engine config: dtype=torch.bfloat16
  EXPECT_FALSE(f.quantization);    // quantization=None
  EXPECT_EQ(f.kv_cache_dtype, "auto");
  EXPECT_EQ(f.tensor_parallel_size, 1);
  EXPECT_EQ(f.pipeline_parallel_size, 1);
  EXPECT_EQ(f.data_parallel_size, 1);
  EXPECT_EQ(f.gpu_memory_utilization, 0.95);  // non-default args
  EXPECT_EQ(f.max_model_len, 8192);
  EXPECT_EQ(f.max_num_seqs, 1024);  // "Defaulting max_num_seqs to 1024"
  EXPECT_EQ(f.max_num_batched_tokens, 8192);
  EXPECT_FALSE(f.block_size);
  EXPECT_EQ(f.enforce_eager, false);
  EXPECT_EQ(f.enable_prefix_caching, false);
  EXPECT_EQ(f.gpu_total_gib, 79.19);
  EXPECT_EQ(f.weights_gib, 14.99);
  EXPECT_EQ(f.activation_peak_gib, 1.89);
  EXPECT_EQ(f.non_torch_gib, 0.25);
  EXPECT_EQ(f.total_non_kv_gib, 17.12);
  EXPECT_EQ(f.kv_cache_gib, 58.11);
  EXPECT_EQ(f.kv_tokens, 476016);
  EXPECT_FALSE(f.num_gpu_blocks);
  EXPECT_EQ(f.max_concurrency, 58.11);
  EXPECT_EQ(f.max_concurrency_tokens, 8192);
  EXPECT_EQ(f.cudagraph_gib, 0.91);
  EXPECT_EQ(f.cudagraph_estimate_gib, 0.84);
  EXPECT_FALSE(f.padding_layers);
  EXPECT_FALSE(
      f.startup_free_gib);  // the DEBUG "Free memory on device (...) on startup." is no failure
  EXPECT_FALSE(f.oom_tried_gib);
  EXPECT_EQ(f.outcome, "started");
  EXPECT_TRUE(f.error_lines.empty());
}

TEST(LogParserV019, Tp2KeepsTheFirstRanksFigures) {
  READ_OR_SKIP(text, kLogDir + "meta-llama-llama-3-1-8b---h100-80gb--tp2pp1dp1--8192.log");
  const VllmLogFigures f = parse_vllm_log(text);
  EXPECT_EQ(f.tensor_parallel_size, 2);
  EXPECT_EQ(f.weights_gib, 7.51);
  EXPECT_EQ(f.non_torch_gib, 2.07);
  EXPECT_EQ(f.total_non_kv_gib, 11.47);
  EXPECT_EQ(f.kv_cache_gib, 63.76);
  EXPECT_EQ(f.kv_tokens, 1044688);
  EXPECT_EQ(f.max_concurrency, 127.53);
  EXPECT_EQ(f.cudagraph_estimate_gib, 1.69);
  EXPECT_EQ(f.cudagraph_gib, 0.76);
  EXPECT_EQ(f.outcome, "started");
}

TEST(LogParserV019, Pp4WeightsAreTheFirstStagesLoadLine) {
  // dev-024: "Model loading took 4.26 GiB" (first stage, with the embeddings) comes first; the
  // profile line of another rank says "weights memory: 3.28GiB".
  READ_OR_SKIP(text, kLogDir + "meta-llama-llama-3-1-8b---h100-80gb--tp1pp4dp1--8192.log");
  const VllmLogFigures f = parse_vllm_log(text);
  EXPECT_EQ(f.pipeline_parallel_size, 4);
  EXPECT_EQ(f.weights_gib, 4.26);
  EXPECT_EQ(f.kv_cache_gib, 69.8);
  EXPECT_EQ(f.kv_tokens, 2257264);
}

TEST(LogParserV019, LaunchSettingsFromNonDefaultArgsWinOverConfig) {
  // DP=2: non-default args say data_parallel_size 2; each engine's config line says 1.
  READ_OR_SKIP(text, kLogDir + "meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp2--8192.FAILED.log");
  const VllmLogFigures f = parse_vllm_log(text);
  EXPECT_EQ(f.data_parallel_size, 2);
  EXPECT_EQ(f.weights_gib, 14.99);
  EXPECT_FALSE(f.kv_cache_gib);
  // The launch failed for a reason that is not memory (a DP rank assertion).
  EXPECT_EQ(f.outcome, "unknown");
  EXPECT_TRUE(has_line(f, "AssertionError: DP adjusted local rank 1 is out of bounds."));
}

TEST(LogParserV019, QuantizedAndKvFp8Settings) {
  READ_OR_SKIP(q, kLogDir + "meta-llama-llama-3---h100-80gb--tp1pp1dp1--8192-qfp8.log");
  EXPECT_EQ(parse_vllm_log(q).quantization, "fp8");
  READ_OR_SKIP(kv, kLogDir + "qwen-qwen2---h100-80gb--tp1pp1dp1--8192-dtbf16-kvfp8.log");
  const VllmLogFigures f = parse_vllm_log(kv);
  EXPECT_EQ(f.kv_cache_dtype, "fp8");
  EXPECT_EQ(f.dtype, "bfloat16");
  EXPECT_EQ(f.kv_tokens, 2192000);
  READ_OR_SKIP(f32, kLogDir + "meta-llama-llama-3--h100-80gb--tp1pp1dp1--8192-dtf32.log");
  EXPECT_EQ(parse_vllm_log(f32).dtype, "float32");
  READ_OR_SKIP(oss, kLogDir + "openai-gpt-oss-20b--h100-80gb--tp2pp1dp1--8192.log");
  const VllmLogFigures o = parse_vllm_log(oss);
  EXPECT_EQ(o.quantization, "mxfp4");
  // Not among the non-default args: the effective value from "Requested memory: 0.900000 (util)".
  EXPECT_EQ(o.gpu_memory_utilization, 0.9);
}

TEST(LogParserV019, SamplerWarmupOomFullLogTp2) {
  READ_OR_SKIP(text, kLogDir + "openai-gpt-oss-20b--h100-80gb--tp2pp1dp1--8192.FAILED.log");
  const VllmLogFigures f = parse_vllm_log(text);
  EXPECT_EQ(f.outcome, "oom_kv_alloc");
  EXPECT_EQ(f.kv_cache_gib, 63.28);
  ASSERT_TRUE(f.oom_free_gib && f.oom_tried_gib && f.oom_total_gib);
  EXPECT_DOUBLE_EQ(*f.oom_tried_gib, 786.00 * kMiB);
  EXPECT_DOUBLE_EQ(*f.oom_total_gib, 79.19);
  EXPECT_DOUBLE_EQ(*f.oom_free_gib, 298.50 * kMiB);  // the first OOM (GPU 1)
  EXPECT_TRUE(has_line(f, "RuntimeError: CUDA out of memory occurred when warming up sampler"));
}

TEST(LogParserV019, StartupFreeMemoryFullLog) {
  READ_OR_SKIP(text, kLogDir + "meta-llama-llama-4-scout--h100-80gb--tp4pp1dp1--8192.FAILED.log");
  const VllmLogFigures f = parse_vllm_log(text);
  EXPECT_EQ(f.outcome, "startup_free_memory");
  EXPECT_EQ(f.startup_free_gib, 60.33);
  EXPECT_EQ(f.startup_desired_gib, 75.23);
  EXPECT_EQ(f.tensor_parallel_size, 4);
  EXPECT_EQ(f.model, "meta-llama/Llama-4-Scout-17B-16E-Instruct");
  EXPECT_FALSE(f.weights_gib);
}

TEST(LogParserV019, HubDownloadFailureIsUnknown) {
  READ_OR_SKIP(text, kLogDir + "google-gemma-2-9b-it--h100-80gb--tp1pp1dp1--8192.FAILED.log");
  const VllmLogFigures f = parse_vllm_log(text);
  EXPECT_EQ(f.outcome, "unknown");
  EXPECT_EQ(f.model, "google/gemma-2-9b-it");
  EXPECT_TRUE(has_line(f, "OSError: We couldn't connect to 'https://huggingface.co'"));
}

// ---------------------------------------------------------------------------------------
// Every shared 0.19.0 log against its dev.jsonl record.

class SharedLog : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedLog, FiguresEqualTheDevRecord) {
  const std::string name = GetParam();
  READ_OR_SKIP(text, kLogDir + name);
  READ_OR_SKIP(jsonl, kDevJsonl);
  std::optional<nlohmann::json> record;
  std::istringstream lines(jsonl);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    nlohmann::json r = nlohmann::json::parse(line);
    const std::string source = r.value("source", "");
    if (source.size() >= name.size() &&
        source.compare(source.size() - name.size(), name.size(), name) == 0) {
      ASSERT_FALSE(record) << "two dev.jsonl records for " << name;
      record = r;
    }
  }
  const VllmLogFigures f = parse_vllm_log(text);
  // No record: the log must not show these figures either (launches that never got there).
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& r = record ? *record : empty;
  auto expect_gib = [&](const char* key, const std::optional<double>& got) {
    const nlohmann::json want = r.value(key, nlohmann::json());
    if (want.is_null()) {
      EXPECT_FALSE(got) << key << " = " << got.value_or(0);
    } else {
      ASSERT_TRUE(got) << key << " missing, record has " << want;
      EXPECT_EQ(std::llround(*got * 100), std::llround(want.get<double>() * 100)) << key;
    }
  };
  expect_gib("kv_cache_gib", f.kv_cache_gib);
  expect_gib("weights_gib", f.weights_gib);
  const nlohmann::json tokens = r.value("kv_tokens", nlohmann::json());
  if (tokens.is_null()) {
    EXPECT_FALSE(f.kv_tokens);
  } else {
    EXPECT_EQ(f.kv_tokens, tokens.get<std::int64_t>());
  }
  if (record) {
    expect_gib("activation_peak_gib", f.activation_peak_gib);
    expect_gib("non_torch_gib", f.non_torch_gib);
    expect_gib("cudagraph_gib", f.cudagraph_gib);
    expect_gib("gpu_total_gib", f.gpu_total_gib);
    EXPECT_EQ(f.tensor_parallel_size, r.value("tensor_parallel_size", -1));
    EXPECT_EQ(f.vllm_version, r.value("vllm_version", std::string()));
  }
}

INSTANTIATE_TEST_SUITE_P(Vllm0190, SharedLog, ::testing::ValuesIn(kSharedLogs),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string id;
                           for (char c : param_info.param)
                             id.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
                           return id;
                         });

TEST(SharedLogs, ListIsComplete) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(kLogDir, ec)) GTEST_SKIP() << "missing " << kLogDir;
  std::set<std::string> on_disk;
  for (const auto& entry : fs::directory_iterator(kLogDir, ec)) {
    if (entry.path().extension() == ".log") on_disk.insert(entry.path().filename().string());
  }
  EXPECT_EQ(on_disk, std::set<std::string>(kSharedLogs.begin(), kSharedLogs.end()));
}

// ---------------------------------------------------------------------------------------
// Text shape: CRLF, ANSI colours, process prefixes.

// Log lines of vLLM 0.27+: the one-line KV line (0.28), "Using V2 Model Runner" (worker init),
// and the post-capture suggestion line whose wording changed with the 0.27 budget formula.
TEST(LogParserBudgetLines, OneLineKvLineAndConsumedMemory) {
  // pub-103: vLLM 0.31.0 (tests/data/public_logs/pub-103.log, verbatim).
  READ_OR_SKIP(log, std::string(VRAMPLAN_TEST_DATA_DIR) + "/public_logs/pub-103.log");
  const VllmLogFigures f = parse_vllm_log(log);
  ASSERT_TRUE(f.kv_tokens && f.max_concurrency && f.max_concurrency_tokens);
  EXPECT_EQ(*f.kv_tokens, 460496);
  EXPECT_DOUBLE_EQ(*f.max_concurrency, 3.51);
  EXPECT_EQ(*f.max_concurrency_tokens, 131072);
  ASSERT_TRUE(f.consumed_gib);
  EXPECT_DOUBLE_EQ(*f.consumed_gib, 15.26);
  // Its "1.44 GiB for peak activation" includes the graph estimate: not the activation peak.
  EXPECT_FALSE(f.activation_peak_gib);
  EXPECT_DOUBLE_EQ(*f.kv_cache_gib, 56.21);
}

TEST(LogParserBudgetLines, SuggestedKvCacheMemoryAndTheV2Runner) {
  // A public 0.27+ log (code-search index file id 61222544093; the index does not name the
  // repository): the suggestion line, verbatim.
  const std::string suggestion =
      "(EngineCore pid=492078) INFO 08-23 09:40:11 [gpu_worker.py:789] Free memory on device "
      "(112.26/119.63 GiB) on startup. Desired GPU memory utilization is (0.92, 110.06 GiB). "
      "Actual usage is 55.99 GiB for consumed memory (weights + non-torch), 3.78 GiB for peak "
      "activation, and 0.94 GiB for CUDAGraph memory. Replace gpu_memory_utilization config "
      "with `--kv-cache-memory=52830620611` (49.2 GiB) to fit into requested memory, or "
      "`--kv-cache-memory=55188796928` (51.4 GiB) to fully utilize gpu memory. Current kv cache "
      "memory in use is 50.29 GiB.\n";
  // vLLM 0.27.0 gpu_worker.py:385 logs "Using V2 Model Runner" (logger.info_once) when MRV2 runs;
  // the line below is written in vLLM's log format around that message.
  const std::string runner =
      "(EngineCore pid=492078) INFO 08-23 09:38:02 [gpu_worker.py:385] Using V2 Model Runner\n";
  const VllmLogFigures f = parse_vllm_log(runner + suggestion);
  ASSERT_TRUE(f.model_runner_v2);
  EXPECT_TRUE(*f.model_runner_v2);
  ASSERT_TRUE(f.suggested_kv_cache_memory_bytes);
  EXPECT_EQ(*f.suggested_kv_cache_memory_bytes, 52830620611);
  EXPECT_DOUBLE_EQ(*f.consumed_gib, 55.99);
  EXPECT_DOUBLE_EQ(*f.gpu_memory_utilization, 0.92);
  EXPECT_DOUBLE_EQ(*f.gpu_total_gib, 119.63);
  // Without the worker-init line nothing says which runner ran.
  EXPECT_FALSE(parse_vllm_log(suggestion).model_runner_v2);
}

TEST(LogParserBudgetLines, Mrv2ProfilingCaptureIsTheEstimate) {
  // MRV2 from 0.29 captures graphs into a throw-away pool before the KV budget and logs
  // "Graph capturing finished" for it, then again for the real capture after the KV cache
  // (shared/reference/vllm-0.27-0.33.md section 6). Lines written in vLLM's format for this test,
  // not a record.
  const std::string log =
      "INFO 10-06 17:00:02 [gpu_worker.py:385] Using V2 Model Runner\n"
      "INFO 10-06 17:00:30 [cudagraph_utils.py:300] Graph capturing finished in 3 secs, took "
      "0.25 GiB\n"
      "INFO 10-06 17:00:33 [gpu_worker.py:692] Available KV cache memory: 56.21 GiB\n"
      "INFO 10-06 17:00:40 [model_runner.py:800] Graph capturing finished in 6 secs, took "
      "0.23 GiB\n";
  const VllmLogFigures f = parse_vllm_log(log);
  ASSERT_TRUE(f.cudagraph_estimate_gib && f.cudagraph_gib);
  EXPECT_DOUBLE_EQ(*f.cudagraph_estimate_gib, 0.25);
  EXPECT_DOUBLE_EQ(*f.cudagraph_gib, 0.23);
  // The V1 runner (no "Using V2 Model Runner") captures only after the KV cache: the first
  // capture line is the real one, as before.
  const VllmLogFigures v1 = parse_vllm_log(log.substr(log.find('\n') + 1));
  EXPECT_DOUBLE_EQ(*v1.cudagraph_gib, 0.25);
}

TEST(LogParserText, CrlfAnsiAndPrefixesGiveTheSameFigures) {
  const std::string plain = excerpt("v019_gpt_oss_20b_sampler_oom.log");
  const VllmLogFigures base = parse_vllm_log(plain);
  std::string decorated;
  std::istringstream lines(plain);
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    // Colour the process prefix as vLLM does on a terminal, alternating the two escape forms
    // (real ESC, and "^[[" as pasted into issues), and end lines with CRLF.
    const std::string esc = (n++ % 2 == 0) ? "\x1b" : "^[";
    const std::size_t close = line.find(") ");
    if (close != std::string::npos) {
      line = esc + "[0;36m" + line.substr(0, close + 1) + esc + "[0;0m" + line.substr(close + 1);
    }
    decorated += line + "\r\n";
  }
  const VllmLogFigures f = parse_vllm_log(decorated);
  EXPECT_EQ(vramplan::to_json(f), vramplan::to_json(base));
  EXPECT_EQ(f.kv_cache_gib, 58.47);
  EXPECT_EQ(f.outcome, "oom_kv_alloc");

  // Worker prefixes and a bare line give the same figure.
  EXPECT_EQ(parse_vllm_log("(Worker_TP1 pid=445) INFO 04-22 01:36:06 [x.py:1] Model loading took "
                           "7.51 GiB memory and 10.5 seconds")
                .weights_gib,
            7.51);
  EXPECT_EQ(parse_vllm_log("Model loading took 7.51 GiB memory").weights_gib, 7.51);
}

TEST(LogParserText, ToJsonHasEveryFieldAndNulls) {
  const nlohmann::json j = vramplan::to_json(parse_vllm_log(""));
  const std::vector<std::string> keys = {"vllm_version",
                                         "model",
                                         "dtype",
                                         "quantization",
                                         "kv_cache_dtype",
                                         "tensor_parallel_size",
                                         "pipeline_parallel_size",
                                         "data_parallel_size",
                                         "gpu_memory_utilization",
                                         "max_model_len",
                                         "max_num_seqs",
                                         "max_num_batched_tokens",
                                         "block_size",
                                         "enforce_eager",
                                         "enable_prefix_caching",
                                         "gpu_total_gib",
                                         "weights_gib",
                                         "activation_peak_gib",
                                         "non_torch_gib",
                                         "total_non_kv_gib",
                                         "kv_cache_gib",
                                         "kv_tokens",
                                         "num_gpu_blocks",
                                         "max_concurrency",
                                         "max_concurrency_tokens",
                                         "cudagraph_gib",
                                         "cudagraph_estimate_gib",
                                         "padding_layers",
                                         "model_runner_v2",
                                         "flashinfer_sampler",
                                         "consumed_gib",
                                         "suggested_kv_cache_memory_bytes",
                                         "startup_free_gib",
                                         "startup_desired_gib",
                                         "free_at_startup_gib",
                                         "estimated_max_model_len",
                                         "needed_kv_gib",
                                         "oom_tried_gib",
                                         "oom_total_gib",
                                         "oom_free_gib",
                                         "outcome",
                                         "error_lines",
                                         "truncated",
                                         "launches"};
  EXPECT_EQ(j.size(), keys.size());
  for (const auto& k : keys) {
    ASSERT_TRUE(j.contains(k)) << k;
    if (k == "outcome") {
      EXPECT_EQ(j[k], "unknown");
    } else if (k == "error_lines") {
      EXPECT_TRUE(j[k].is_array() && j[k].empty());
    } else if (k == "truncated") {
      EXPECT_EQ(j[k], false);
    } else if (k == "launches") {
      EXPECT_EQ(j[k], 1);
    } else {
      EXPECT_TRUE(j[k].is_null()) << k;
    }
  }
  const nlohmann::json k = vramplan::to_json(parse_vllm_log(excerpt("v1_dev005_kv_lines.log")));
  EXPECT_EQ(k["kv_cache_gib"], 8.11);
  EXPECT_EQ(k["kv_tokens"], 178880);
  EXPECT_EQ(k["outcome"], "started");
}

// ---------------------------------------------------------------------------------------
// Hostile input: must not throw, must not hang.

TEST(LogParserRobustness, EmptyInput) {
  VllmLogFigures f;
  EXPECT_NO_THROW(f = parse_vllm_log(""));
  EXPECT_EQ(f.outcome, "unknown");
  EXPECT_NO_THROW(f = parse_vllm_log("\n\r\n\r\r\n"));
  EXPECT_EQ(f.outcome, "unknown");
  EXPECT_FALSE(f.kv_cache_gib);
}

TEST(LogParserRobustness, BinaryGarbage) {
  std::mt19937 rng(12345);
  std::string garbage(1 << 20, '\0');
  for (char& c : garbage) c = static_cast<char>(rng() & 0xff);
  EXPECT_NO_THROW(parse_vllm_log(garbage));
  // Garbage salted with the parser's own key phrases, so the number/unit readers run on junk.
  const std::vector<std::string> keys = {"Model loading took ",
                                         "Available KV cache memory: ",
                                         "GPU KV cache size: ",
                                         "non-default args: {",
                                         "with config: ",
                                         "LLM engine (v",
                                         "Free memory on device (",
                                         "Tried to allocate ",
                                         " GiB KV cache is needed",
                                         "Maximum concurrency for ",
                                         "\x1b[",
                                         "^[[",
                                         "(EngineCore pid=",
                                         "Add ",
                                         " padding layers",
                                         "# GPU blocks: "};
  std::string salted;
  for (int i = 0; i < 20000; ++i) {
    salted += keys[rng() % keys.size()];
    for (int j = static_cast<int>(rng() % 12); j > 0; --j) {
      salted.push_back("0123456789.,-( )/:'{}=GiBMx\n\r"[rng() % 30]);
    }
  }
  EXPECT_NO_THROW(parse_vllm_log(salted));
}

TEST(LogParserRobustness, OneMegabyteLineIsSkipped) {
  std::string line = "(EngineCore pid=1) INFO Model loading took 3.00 GiB ";
  line += std::string(1 << 20, 'x');
  const std::string text = line + "\nAvailable KV cache memory: 5.00 GiB\n";
  VllmLogFigures f;
  EXPECT_NO_THROW(f = parse_vllm_log(text));
  EXPECT_FALSE(f.weights_gib);  // the over-long line is not read
  EXPECT_EQ(f.kv_cache_gib, 5.00);
  // A long line of nesting and open quotes under the limit.
  std::string nested = "non-default args: {'a': " + std::string(60000, '(') + "'unterminated";
  EXPECT_NO_THROW(f = parse_vllm_log(nested));
  std::string config =
      "Initializing a V1 LLM engine (v0.19.0) with config: model='x" + std::string(60000, ',');
  EXPECT_NO_THROW(f = parse_vllm_log(config));
  EXPECT_EQ(f.vllm_version, "0.19.0");
}

TEST(LogParserRobustness, TruncatedLines) {
  const std::string full = excerpt("v019_gpt_oss_20b_sampler_oom.log");
  // Every prefix of a few key lines, and the whole excerpt cut at every 7th byte.
  const std::vector<std::string> samples = {
      "Model loading took 14.99 GiB memory and 14.4 seconds",
      "Maximum concurrency for 8,192 tokens per request: 58.11x",
      "Free memory on device cuda:1 (60.33/79.19 GiB) on startup is less than desired GPU memory "
      "utilization (0.95, 75.23 GiB).",
      "non-default args: {'model': 'm', 'max_model_len': 8192, 'enforce_eager': True}",
      "To serve at least one request with the model's max seq len (8), (1.00 GiB KV cache is "
      "needed, which is larger than the available KV cache memory (0.5 GiB). Based on the "
      "available memory, the estimated maximum model length is 4.",
  };
  for (const auto& s : samples) {
    for (std::size_t n = 0; n <= s.size(); ++n) {
      EXPECT_NO_THROW(parse_vllm_log(std::string_view(s).substr(0, n))) << s.substr(0, n);
    }
  }
  for (std::size_t n = 0; n < full.size(); n += 7) {
    EXPECT_NO_THROW(parse_vllm_log(std::string_view(full).substr(0, n)));
  }
  // A number cut before its unit gives no figure rather than a wrong one.
  EXPECT_FALSE(parse_vllm_log("Model loading took 14.9").weights_gib);
  EXPECT_FALSE(parse_vllm_log("Available KV cache memory: ").kv_cache_gib);
  EXPECT_EQ(parse_vllm_log("non-default args: {'model': 'm', 'max_model_len': 8192, "
                           "'enforce_eager': True}")
                .enforce_eager,
            true);
}

// ---------------------------------------------------------------------------------------
// UTF-8: every string the parser returns is valid, so to_json(...).dump() never throws.

namespace {

bool all_strings_valid_utf8(const nlohmann::json& j) {
  if (j.is_string()) return vramplan::utf8::find_invalid(j.get<std::string>()) == std::string::npos;
  if (j.is_structured()) {
    for (const auto& v : j) {
      if (!all_strings_valid_utf8(v)) return false;
    }
  }
  return true;
}

VllmLogFigures parse_in_chunks(std::string_view text, std::size_t chunk) {
  vramplan::VllmLogParser parser;
  for (std::size_t at = 0; at < text.size(); at += chunk) parser.feed(text.substr(at, chunk));
  return parser.finish();
}

}  // namespace

TEST(LogParserUtf8, LongErrorLineIsCutOnACharacterBoundary) {
  // The reproducer: 13 ASCII bytes, then 3000 two-byte characters; the 2000-byte cut
  // used to land inside the last "é" and dump() threw type_error.316.
  std::string text = "ValueError: x";
  for (int i = 0; i < 3000; ++i) text += "\xc3\xa9";
  VllmLogFigures f;
  ASSERT_NO_THROW(f = parse_vllm_log(text));
  ASSERT_EQ(f.error_lines.size(), 1u);
  // 13 + 2 x 993 = 1999 bytes is the longest whole-character prefix within 2000.
  EXPECT_EQ(f.error_lines[0].size(), 1999u);
  EXPECT_EQ(f.error_lines[0].substr(0, 14), "ValueError: x\xc3");
  const nlohmann::json j = vramplan::to_json(f);
  EXPECT_NO_THROW(j.dump());
  EXPECT_TRUE(all_strings_valid_utf8(j));
}

TEST(LogParserUtf8, InvalidBytesBecomeReplacementCharacters) {
  const VllmLogFigures f = parse_vllm_log(
      "non-default args: {'model': 'org/m\xff', 'dtype': 'bfloat16'}\n"
      "ValueError: bad \xfe\xff byte\n"
      "RuntimeError: \x1b\xc3\xa9 ESC then a lead byte\n");  // the ESC removal eats "\xc3"
  ASSERT_TRUE(f.model);
  EXPECT_EQ(*f.model, "org/m\xef\xbf\xbd");
  ASSERT_EQ(f.error_lines.size(), 2u);
  EXPECT_EQ(f.error_lines[0], "ValueError: bad \xef\xbf\xbd\xef\xbf\xbd byte");
  EXPECT_EQ(f.error_lines[1], "RuntimeError: \xef\xbf\xbd ESC then a lead byte");
  EXPECT_NO_THROW(vramplan::to_json(f).dump());
}

TEST(LogParserUtf8, RandomBytesAlwaysDump) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::string text = "ValueError: ";
    for (int i = static_cast<int>(rng() % 5000); i > 0; --i) {
      text.push_back(static_cast<char>(0x80 + rng() % 0x80));
    }
    const nlohmann::json j = vramplan::to_json(parse_vllm_log(text));
    ASSERT_NO_THROW(j.dump()) << round;
    ASSERT_TRUE(all_strings_valid_utf8(j)) << round;
  }
}

// ---------------------------------------------------------------------------------------
// Streaming: chunks of any size give the figures of the whole text; files are read in chunks.

TEST(LogParserStreaming, ChunkedEqualsWhole) {
  for (const char* name : {"v019_gpt_oss_20b_sampler_oom.log", "v1_dev005_kv_lines.log",
                           "v0_dev007_insufficient_kv.log"}) {
    const std::string text = excerpt(name) + "\r\nValueError: last line without an end";
    const nlohmann::json whole = vramplan::to_json(parse_vllm_log(text));
    for (std::size_t chunk : {1, 2, 3, 7, 64, 4096}) {
      EXPECT_EQ(vramplan::to_json(parse_in_chunks(text, chunk)), whole) << name << " / " << chunk;
    }
  }
}

TEST(LogParserStreaming, OverlongLineAcrossChunksIsSkipped) {
  // The over-long line starts with a figure; it must not be read however it is chunked.
  const std::string text = "Model loading took 3.00 GiB " +
                           std::string(vramplan::kVllmLogMaxLineBytes, 'x') +
                           "\nAvailable KV cache memory: 5.00 GiB\n";
  for (std::size_t chunk : {std::size_t{1000}, std::size_t{65536}, text.size()}) {
    const VllmLogFigures f = parse_in_chunks(text, chunk);
    EXPECT_FALSE(f.weights_gib) << chunk;
    EXPECT_EQ(f.kv_cache_gib, 5.00) << chunk;
  }
  // A line of exactly the cap is still read.
  const std::string at_cap = "Model loading took 3.00 GiB ";
  const std::string line =
      at_cap + std::string(vramplan::kVllmLogMaxLineBytes - at_cap.size(), 'x');
  EXPECT_EQ(parse_in_chunks(line + "\n", 1000).weights_gib, 3.00);
}

TEST(LogParserStreaming, StopsAtTheTotalCap) {
  vramplan::VllmLogParser parser;
  parser.feed("Model loading took 1.00 GiB\n");
  const std::string filler((1 << 20) - 1, 'x');
  std::int64_t fed = 28;
  while (!parser.truncated()) {
    parser.feed(filler + "\n");
    fed += 1 << 20;
    ASSERT_LE(fed, vramplan::kVllmLogMaxBytes + (1 << 20));
  }
  parser.feed("Available KV cache memory: 5.00 GiB\n");  // past the cap: ignored
  const VllmLogFigures f = parser.finish();
  EXPECT_TRUE(f.truncated);
  EXPECT_EQ(f.weights_gib, 1.00);
  EXPECT_FALSE(f.kv_cache_gib);
  EXPECT_EQ(vramplan::to_json(f)["truncated"], true);
}

TEST(LogParserStreaming, ReadsFiles) {
  const std::string path = kExcerptDir + "v019_gpt_oss_20b_sampler_oom.log";
  EXPECT_EQ(vramplan::to_json(vramplan::read_vllm_log_file(path)),
            vramplan::to_json(parse_vllm_log(excerpt("v019_gpt_oss_20b_sampler_oom.log"))));
  EXPECT_THROW(vramplan::read_vllm_log_file(kExcerptDir + "no_such.log"), vramplan::ParseError);
  EXPECT_THROW(vramplan::read_vllm_log_file(kExcerptDir), vramplan::ParseError);
}
