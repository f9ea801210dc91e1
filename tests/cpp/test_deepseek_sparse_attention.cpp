// DeepSeek sparse attention (DeepSeek-V3.2 `deepseek_v32`, GLM-5 / 5.1 `glm_moe_dsa`) as vLLM 0.33
// builds it (vllm/models/deepseek_v32/attention.py): MLA plus a lightning indexer in every layer,
// whose key cache (DeepseekV32IndexerCache, head_dim index_head_dim + index_head_dim / 128 * 4,
// uint8: fp8 keys and one fp32 scale per 128) sits beside the latent in each layer's page.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"
#include "vramplan/weights.hpp"

using namespace vramplan;
using nlohmann::json;

namespace {

const std::string kGlm51 = std::string(VRAMPLAN_TEST_DATA_DIR) + "/configs/zai-org__GLM-5.1.json";

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// DeepSeek-V3.2-Exp's config.json is DeepSeek-V3's with the DSA keys: a reconstruction from the
// copied DeepSeek-V3 config plus the values vLLM's indexer comments and two public abridged
// copies give (index_head_dim 128, index_n_heads 64, index_topk 2048; tests/data/README.md).
json deepseek_v32_config() {
  json c = read_json(std::string(VRAMPLAN_COPIED_DATA_DIR) +
                     "/reference/configs/deepseek-ai__DeepSeek-V3.json");
  c["model_type"] = "deepseek_v32";
  c["architectures"] = {"DeepseekV32ForCausalLM"};
  c["index_head_dim"] = 128;
  c["index_n_heads"] = 64;
  c["index_topk"] = 2048;
  c.erase("quantization_config");
  return c;
}

KvCacheOptions kv_options(std::int32_t element_bytes) {
  KvCacheOptions o;
  o.kv_element_bytes = element_bytes;
  o.block_size = 64;
  return o;
}

}  // namespace

// KV bytes per token by hand (GLM-5.1: 78 layers, kv_lora_rank 512, qk_rope_head_dim 64,
// index_head_dim 128):
//   bf16 KV ("auto"): latent (512 + 64) x 2 = 1,152 + indexer 128 + 128 / 128 x 4 = 132
//     -> 1,284 per layer, x 78 = 100,152 bytes per token.
//   fp8 KV: vLLM serves sparse MLA as fp8_ds_mla, 512 fp8 + 4 fp32 scales (16) + 64 bf16 rope
//     (128) = 656, + 132 -> 788 per layer, x 78 = 61,464.
// One 64-token block costs every layer's page: 64 x 100,152 = 6,409,728 bytes.
TEST(DeepseekSparseAttention, Glm51KvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(kGlm51);
  EXPECT_EQ(spec.mla.index_head_dim, 128);
  EXPECT_EQ(spec.mla.index_n_heads, 32);
  EXPECT_EQ(kv_bytes_per_token(spec, kv_options(2)), 100152);
  EXPECT_EQ(kv_bytes_per_token(spec, kv_options(1)), 61464);
  const KvGeometry geometry = kv_geometry(spec, kv_options(2));
  const KvPage bf16 = kv_page(geometry, 64, 2);
  EXPECT_EQ(bf16.bytes_per_token, 100152);
  EXPECT_EQ(bf16.page_bytes * geometry.group_size, 6409728);
  const KvPage fp8 = kv_page(geometry, 64, 1);
  EXPECT_EQ(fp8.bytes_per_token, 61464);
  EXPECT_EQ(fp8.page_bytes * geometry.group_size, 64 * 61464);
  // A 10 GiB budget buys floor(10,737,418,240 / 6,409,728) = 1,675 blocks.
  EXPECT_EQ(kv_num_blocks(geometry, bf16, std::int64_t{10} << 30), 1675);
}

// DeepSeek-V3.2: 61 layers of the same geometry: 61 x 1,284 = 78,324 bytes per token (bf16 KV),
// 61 x 788 = 48,068 (fp8).
TEST(DeepseekSparseAttention, DeepseekV32KvBytesPerTokenByHand) {
  const ModelSpec spec = model_spec_from_hf_config(deepseek_v32_config(), nullptr, "v32.json");
  EXPECT_EQ(spec.mla.index_n_heads, 64);
  EXPECT_EQ(kv_bytes_per_token(spec, kv_options(2)), 78324);
  EXPECT_EQ(kv_bytes_per_token(spec, kv_options(1)), 48068);
}

// Weights against the published header sum: the GLM-5.1 checkpoint listing a public report
// prints (tests/data/configs/SOURCES.md) totals 753,864,139,008 parameters, its 78 layers plus
// the MTP layer 78; per layer the indexer holds wq_b [4096, 2048], wk [128, 6144], weights_proj
// [32, 6144] and k_norm weight and bias [128] (9,371,904 parameters, 79 layers: 740,380,416).
TEST(DeepseekSparseAttention, Glm51ParametersMatchThePublishedCheckpoint) {
  const ModelSpec spec = load_hf_config(kGlm51);
  EXPECT_EQ(parameter_count(spec, true), 753864139008);
  ModelSpec dense = spec;
  dense.mla.index_head_dim = 0;
  dense.mla.index_n_heads = 0;
  EXPECT_EQ(parameter_count(spec, true) - parameter_count(dense, true), 740380416);
}

// Layers that share the previous layer's top-k (GLM-5.2's IndexShare, index_topk_freq > 1 or an
// index_topk_pattern with S) keep no indexer cache, so pages differ by layer: refused by name.
TEST(DeepseekSparseAttention, SharedIndexerLayersAreRefusedByName) {
  json config = read_json(kGlm51);
  config["index_topk_freq"] = 4;
  try {
    (void)model_spec_from_hf_config(config, nullptr, "glm52.json");
    FAIL() << "accepted index_topk_freq 4";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field_path(), "index_topk_freq");
  }
}

// What the plan does not count it says: the indexer's top-k buffer vLLM allocates at load.
TEST(DeepseekSparseAttention, ThePlanNamesTheTopkBufferItDoesNotCount) {
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  hw.num_gpus = 8;
  EngineConfig config;
  config.tensor_parallel_size = 8;
  config.max_model_len = 8192;
  const CompiledLaunch launch(std::make_shared<const ModelSpec>(load_hf_config(kGlm51)), hw,
                              config);
  const Breakdown b = launch.breakdown(launch_knobs(config));
  EXPECT_TRUE(std::any_of(b.messages.begin(), b.messages.end(), [](const std::string& m) {
    return m.find("top-k index buffer") != std::string::npos;
  }));
}

// A block-FP8 DSA checkpoint (DeepSeek-V3's quantization_config on GLM-5.1's shapes) whose skip
// list names the indexer's wk and weights_proj plans as without it: vLLM builds those two as
// wk_weights_proj without a quant_config, so naming them changes nothing.
TEST(DeepseekSparseAttention, SkippingTheIndexersUnquantizedProjectionsIsANoOp) {
  json config = read_json(kGlm51);
  config["quantization_config"] = {{"quant_method", "fp8"},
                                   {"fmt", "e4m3"},
                                   {"activation_scheme", "dynamic"},
                                   {"weight_block_size", {128, 128}}};
  const ModelSpec plain = model_spec_from_hf_config(config, nullptr, "glm5-fp8.json");
  json skips = json::array();
  for (int layer = 0; layer < 78; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".self_attn.indexer.";
    skips.push_back(p + "wk");
    skips.push_back(p + "weights_proj");
  }
  config["quantization_config"]["modules_to_not_convert"] = skips;
  const ModelSpec listed = model_spec_from_hf_config(config, nullptr, "glm5-fp8.json");
  EXPECT_EQ(checkpoint_tensor_bytes(listed, true), checkpoint_tensor_bytes(plain, true));
  EXPECT_EQ(kv_bytes_per_token(listed, kv_options(2)), 100152);
}
