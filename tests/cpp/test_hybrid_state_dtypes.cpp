// Hybrid state dtypes: the conv and SSM state of Gated DeltaNet / Mamba layers sized per dtype
// (the config's mamba_ssm_dtype, --mamba-cache-dtype, --mamba-ssm-cache-dtype), the attention
// page padded to the state page, and graph profiling's minimal KV cache on that page. Seed 002
// (tests/data/seeds/, see tests/data/README.md) is the launch that showed the 2-byte SSM state
// was wrong.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

#include "test_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/knobs.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;

namespace {

std::string seed_log() {
  std::ifstream in(std::string(VRAMPLAN_TEST_DATA_DIR) + "/seeds/002_vllm_excerpt.log");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first capture of `pattern` in seed 002's log, as text.
std::string seed_figure(const std::string& pattern) {
  std::smatch match;
  const std::string log = seed_log();
  if (!std::regex_search(log, match, std::regex(pattern))) return "";
  return match[1].str();
}

// Seed 002: cyankiwi/Qwen3.6-27B-AWQ-INT4 (Qwen3.5-27B's architecture: 48 Gated DeltaNet + 16
// full-attention layers, one MTP layer, mamba_ssm_dtype float32) on an RTX 5090 with the flags
// of 002_params.txt: --gpu-memory-utilization 0.8, --max-model-len 16384, --kv-cache-dtype fp8,
// MTP with 2 speculative tokens, --language-model-only. The log prints no vLLM version; its
// graph profiling (profile_cudagraph_memory, "default since v0.21.0") puts it at 0.21-0.26.
struct Seed002 {
  ModelSpec spec;
  HardwareConfig hardware;
  EngineConfig config;
};

Seed002 seed002() {
  Seed002 c;
  c.spec = load_hf_config(std::string(VRAMPLAN_TEST_DATA_DIR) + "/configs/Qwen__Qwen3.5-27B.json");
  c.spec.quantization.method = QuantMethod::Awq;  // W4A16 group 128, as the checkpoint's name says
  c.spec.quantization.bits = 4;
  c.spec.quantization.group_size = 128;
  c.spec.quantization.sym = false;
  const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  c.hardware.gpu = db.gpu("RTX-5090");
  c.config.engine_version = "0.26.0";
  c.config.kv_cache_dtype = "fp8";
  c.config.max_model_len = 16384;
  c.config.gpu_memory_utilization = 0.8;
  c.config.num_speculative_tokens = 2;
  c.config.speculative_method = "mtp";
  c.config.language_model_only = true;
  return c;
}

}  // namespace

TEST(HybridStateDtypes, ConfigMambaSsmDtypeIsRead) {
  const Seed002 c = seed002();
  ASSERT_TRUE(c.spec.linear_attention.ssm_state_dtype.has_value());
  EXPECT_EQ(*c.spec.linear_attention.ssm_state_dtype, DType::F32);
}

TEST(HybridStateDtypes, Seed002FiguresByHand) {
  const Seed002 c = seed002();
  const Breakdown b = compute_breakdown(c.spec, c.hardware, c.config);
  const RankBreakdown& r = b.ranks.front();
  // GDN state per layer: conv (2 x 16 x 128 + 48 x 128) = 10,240 channels x (kernel 4 - 1 + 2
  // speculative) x 2 B (bf16, the served dtype) = 102,400 B; SSM 48 x 128 x 128 x 4 B (float32,
  // the config's mamba_ssm_dtype) = 3,145,728 B; 3,248,128 B per layer and request.
  EXPECT_EQ(r.kv_layout.mamba_page_bytes, 3248128);
  // Full attention at fp8: 4 KV heads x (256 + 256) x 1 B = 2,048 B per token. The attention
  // block grows until its page holds a state (platforms/interface.py _align_hybrid_block_size):
  // 16 x ceil(3,248,128 / (16 x 2,048)) = 16 x 100 = 1,600 tokens; page 3,276,800 B, and the
  // state page is padded up to it.
  EXPECT_EQ(r.kv_layout.block_size, 1600);
  EXPECT_EQ(r.kv_layout.page_bytes, 3276800);
  // Groups: 16 + 1 MTP attention layers, 48 GDN layers; group size 17, so the GDN layers fill
  // 3 groups of 17 with 51 - 48 = 3 padding layers. The log: "Add 3 padding layers".
  EXPECT_EQ(r.kv_layout.group_size, 17);
  EXPECT_EQ(r.kv_layout.padding_layers, 3);
  EXPECT_EQ(seed_figure(R"(Add (\d+) padding layers)"), "3");
  // Capture sizes: min(256 sequences x (1 + 2) x 2, 512, 2048 tokens) = 512; the minimal KV
  // cache is that many blocks. The log: "num_gpu_blocks_override=512".
  EXPECT_EQ(b.config.max_cudagraph_capture_size, 512);
  EXPECT_EQ(seed_figure(R"(num_gpu_blocks_override=(\d+))"), "512");
  // One KV tensor (one layer of each group) holds 512 pages: 512 x 3,276,800 B =
  // 1,677,721,600 B = 1.5625 GiB. The log: "Tried to allocate 1.56 GiB". With a 2-byte SSM
  // state the page was 1,703,936 B and the tensor 0.81 GiB.
  const std::int64_t tensor_bytes = std::int64_t{512} * r.kv_layout.page_bytes;
  EXPECT_EQ(tensor_bytes, 1677721600);
  char gib[16];
  std::snprintf(gib, sizeof gib, "%.2f", static_cast<double>(tensor_bytes) / (1 << 30));
  EXPECT_EQ(seed_figure(R"(Tried to allocate ([0-9.]+) GiB)"), gib);
  // 17 such tensors (26.56 GiB) beside the weights cannot fit a 31.36 GiB card, before the
  // budget applies: the launch fails at 0.8 and at 0.95 alike.
  EXPECT_EQ(b.outcome, Outcome::CudagraphProfilingOom) << outcome_name(b.outcome);
  EngineConfig higher = c.config;
  higher.gpu_memory_utilization = 0.95;
  EXPECT_EQ(compute_breakdown(c.spec, c.hardware, higher).outcome, Outcome::CudagraphProfilingOom);
}

TEST(HybridStateDtypes, DroppingMtpDoesNotRescueSeed002) {
  // Without MTP: 16 attention + 48 GDN layers, group size 16, no padding. Conv 10,240 x 3 x
  // 2 B = 61,440 B + SSM 3,145,728 B = 3,207,168 B; block 16 x ceil(3,207,168 / 32,768) = 1,568
  // tokens (the block size club-3090#1047 logs for Qwen3.6-27B), page 3,211,264 B. 512 capture
  // sizes' blocks x 16 tensors = 26,306,674,688 B (24.5 GiB): still no room beside 17+ GiB of
  // weights. With the old 2-byte state (page 1,638,400 B, 12.5 GiB) it looked like it fit.
  Seed002 c = seed002();
  c.config.num_speculative_tokens = 0;
  c.config.speculative_method.clear();
  const Breakdown b = compute_breakdown(c.spec, c.hardware, c.config);
  const RankBreakdown& r = b.ranks.front();
  EXPECT_EQ(r.kv_layout.mamba_page_bytes, 3207168);
  EXPECT_EQ(r.kv_layout.block_size, 1568);
  EXPECT_EQ(r.kv_layout.page_bytes, 3211264);
  EXPECT_EQ(r.kv_layout.group_size, 16);
  EXPECT_EQ(r.kv_layout.padding_layers, 0);
  EXPECT_EQ(std::int64_t{512} * r.kv_layout.page_bytes * r.kv_layout.group_size, 26306674688);
  EXPECT_EQ(b.outcome, Outcome::CudagraphProfilingOom) << outcome_name(b.outcome);
}

TEST(HybridStateDtypes, FlagsOverrideTheConfig) {
  // --mamba-ssm-cache-dtype bfloat16 overrides the config's float32 (vLLM warns and uses the
  // flag): SSM 48 x 128 x 128 x 2 B = 1,572,864 B + conv 102,400 B = 1,675,264 B, block 832,
  // page 832 x 2,048 = 1,703,936 B.
  Seed002 c = seed002();
  c.config.mamba_ssm_cache_dtype = "bfloat16";
  Breakdown b = compute_breakdown(c.spec, c.hardware, c.config);
  EXPECT_EQ(b.ranks.front().kv_layout.mamba_page_bytes, 1675264);
  EXPECT_EQ(b.ranks.front().kv_layout.page_bytes, 1703936);
  // --mamba-cache-dtype float32 widens the conv state (10,240 x 5 x 4 B = 204,800 B); the SSM
  // state keeps the config's float32: 3,350,528 B, block 16 x ceil(3,350,528 / 32,768) = 1,648.
  c.config.mamba_ssm_cache_dtype = "auto";
  c.config.mamba_cache_dtype = "float32";
  b = compute_breakdown(c.spec, c.hardware, c.config);
  EXPECT_EQ(b.ranks.front().kv_layout.mamba_page_bytes, 3350528);
  EXPECT_EQ(b.ranks.front().kv_layout.block_size, 1648);
  // A checkpoint without mamba_ssm_dtype (Qwen3-Next style): the SSM state takes the conv
  // dtype, bf16.
  Seed002 plain = seed002();
  plain.spec.linear_attention.ssm_state_dtype.reset();
  b = compute_breakdown(plain.spec, plain.hardware, plain.config);
  EXPECT_EQ(b.ranks.front().kv_layout.mamba_page_bytes, 1675264);
}

TEST(HybridStateDtypes, BadStateDtypeIsANamedError) {
  EngineConfig c;
  try {
    set_knob(c, "mamba_ssm_cache_dtype", KnobValue{std::string("float8")});
    ADD_FAILURE() << "accepted float8";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "mamba_ssm_cache_dtype");
  }
}

TEST(HybridStateDtypes, NewerReleasesProfileFewerBlocks) {
  // 0.27+ (_init_minimal_kv_cache_for_profiling): min(max_num_seqs 256, 512) = 256 blocks, so
  // the minimal cache halves to 256 x 3,276,800 x 17 = 14,260,633,600 B (13.28 GiB); beside
  // 17+ GiB of weights on a 31.36 GiB card it still does not fit. From 0.29 the hybrid runs on
  // Model Runner V2, whose sampler state (256 x (248,320 + 7,760) x 4 B = 262,225,920 B) is
  // held through the profiling too.
  Seed002 c = seed002();
  c.config.engine_version = "0.29.0";
  const CompiledLaunch launch(std::make_shared<const ModelSpec>(c.spec), c.hardware, c.config);
  EXPECT_TRUE(launch.model_runner_v2());
  const ResolvedKnobs k = launch.resolve(launch_knobs(c.config));
  EXPECT_EQ(launch.graph_profiling_blocks(k), 256);
  EXPECT_EQ(launch.persistent_buffers_bytes(k.max_num_seqs), 262225920);
  const Breakdown b = launch.breakdown(launch_knobs(c.config));
  EXPECT_EQ(b.outcome, Outcome::CudagraphProfilingOom) << outcome_name(b.outcome);
  EXPECT_NE(b.messages.front().find("256 blocks of 1600 tokens"), std::string::npos)
      << b.messages.front();
}
