// The architecture table against real config.json files (tests/data/configs, sources in
// SOURCES.md): parameters within 0.5% of a count derived by hand from the architecture, and
// KV bytes per token derived by hand. Then the table's refusals and named errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "test_support.hpp"
#include "vramplan/architectures.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/weights.hpp"

using namespace vramplan;
namespace fs = std::filesystem;

namespace {

const fs::path kConfigs = fs::path(VRAMPLAN_TEST_DATA_DIR) / "configs";

// Hand-derivation helpers, written from the published architectures (not from model_spec.cpp).
// Attention: q (doubled by an output gate), k, v, o; optional q/k/v biases and per-head q/k norm.
std::int64_t attention(std::int64_t h, std::int64_t hq, std::int64_t hkv, std::int64_t d,
                       bool gate = false, bool qkv_bias = false, bool qk_norm = false) {
  std::int64_t p = (gate ? 2 : 1) * hq * d * h + 2 * hkv * d * h + h * hq * d;
  if (qkv_bias) p += hq * d + 2 * hkv * d;
  if (qk_norm) p += 2 * d;
  return p;
}
std::int64_t swiglu(std::int64_t h, std::int64_t i) { return 3 * h * i; }
// Gated DeltaNet: in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, conv1d, dt_bias, A_log,
// gated RMSNorm over a value head, out_proj.
std::int64_t gated_deltanet(std::int64_t h, std::int64_t hk, std::int64_t dk, std::int64_t hv,
                            std::int64_t dv) {
  const std::int64_t key = hk * dk;
  const std::int64_t value = hv * dv;
  return (2 * key + value) * h + value * h + 2 * hv * h + (2 * key + value) * 4 + 2 * hv + dv +
         h * value;
}
// Qwen3-VL vision (also Qwen3.5's): biased Conv3d patch embedding, learned positions, blocks of
// two LayerNorms + biased qkv/proj + biased fc1/fc2, a patch merger over m x m patches, and
// `deepstack` more mergers whose LayerNorm is over the merged width.
std::int64_t qwen3_vl_vision(std::int64_t e, std::int64_t depth, std::int64_t inter,
                             std::int64_t out, std::int64_t deepstack) {
  const std::int64_t merged = e * 4;
  const std::int64_t block =
      4 * e + (3 * e * e + 3 * e) + (e * e + e) + (e * inter + inter) + (inter * e + e);
  const std::int64_t mlp = merged * merged + merged + merged * out + out;
  return 3 * 2 * 16 * 16 * e + e + 2304 * e + depth * block + (2 * e + mlp) +
         deepstack * (2 * merged + mlp);
}

ModelSpec load(const std::string& name) { return load_hf_config((kConfigs / name).string()); }

std::int64_t kv_per_token(const ModelSpec& spec) {
  KvCacheOptions kv;
  return kv_bytes_per_token(spec, kv);
}

double relative_error(std::int64_t got, std::int64_t want) {
  return std::fabs(static_cast<double>(got - want)) / static_cast<double>(want);
}

void expect_parameters(const ModelSpec& spec, std::int64_t hand, const char* what) {
  const std::int64_t got = parameter_count(spec);
  const double error = relative_error(got, hand);
  EXPECT_LT(error, 0.005) << what << ": spec " << got << " vs hand " << hand;
  std::cout << "[params] " << what << ": spec " << got << ", hand " << hand << ", error "
            << error * 100 << " %\n";
}

}  // namespace

TEST(Architectures, Phi1) {
  // PhiForCausalLM: parallel block with one LayerNorm (weight+bias), biased q/k/v/dense and
  // fc1/fc2 (gelu, no gate), final LayerNorm, biased lm_head. h 2048, 24 layers, V 50295.
  const ModelSpec s = load("microsoft__phi-1.json");
  const std::int64_t h = 2048;
  const std::int64_t v = 50295;
  const std::int64_t i = 8192;
  const std::int64_t hand =
      v * h + 24 * (2 * h + 3 * (h * h + h) + (h * h + h) + (i * h + i) + (h * i + h)) + 2 * h +
      (v * h + v);
  expect_parameters(s, hand, "phi-1");
  EXPECT_EQ(s.rotary_dim, 32);                       // partial_rotary_factor 0.5 of 64
  EXPECT_EQ(kv_per_token(s), 24 * 2 * 32 * 64 * 2);  // 196,608 B: MHA, bf16
}

TEST(Architectures, Qwen35DenseHybridWithMtpAndVision) {
  // 64 layers: 16 gated full-attention (24 q heads, 4 KV heads of 256, output gate) and 48 Gated
  // DeltaNet (16 key heads, 48 value heads of 128); SwiGLU 17408; untied V 248320; MTP 1.
  const ModelSpec s = load("Qwen__Qwen3.5-27B.json");
  const std::int64_t h = 5120;
  const std::int64_t full = attention(h, 24, 4, 256, true, false, true) + swiglu(h, 17408) + 2 * h;
  const std::int64_t linear = gated_deltanet(h, 16, 128, 48, 128) + swiglu(h, 17408) + 2 * h;
  const std::int64_t text = 2 * 248320 * h + h + 16 * full + 48 * linear;
  const std::int64_t vision = qwen3_vl_vision(1152, 27, 4304, h, 0);
  expect_parameters(s, text + vision, "Qwen3.5-27B (text + vision)");
  EXPECT_EQ(s.vision.num_parameters, vision);
  EXPECT_EQ(s.num_nextn_predict_layers, 1);
  int linear_layers = 0;
  for (const auto& layer : s.layers)
    linear_layers += layer.attention == AttentionKind::LinearAttention;
  EXPECT_EQ(linear_layers, 48);
  EXPECT_EQ(kv_per_token(s), 16 * 2 * 4 * 256 * 2);  // 65,536 B: full-attention layers only
}

TEST(Architectures, Qwen35MoeHybrid) {
  // 40 layers (10 full, 30 DeltaNet), 256 experts of 512 + a gated shared expert of 512.
  const ModelSpec s = load("Qwen__Qwen3.5-35B-A3B.json");
  const std::int64_t h = 2048;
  const std::int64_t moe = 256 * h + 256 * 3 * 512 * h + 3 * 512 * h + h;
  const std::int64_t full = attention(h, 16, 2, 256, true, false, true) + moe + 2 * h;
  const std::int64_t linear = gated_deltanet(h, 16, 128, 32, 128) + moe + 2 * h;
  const std::int64_t text = 2 * 248320 * h + h + 10 * full + 30 * linear;
  expect_parameters(s, text + qwen3_vl_vision(1152, 27, 4304, h, 0), "Qwen3.5-35B-A3B");
  EXPECT_EQ(kv_per_token(s), 10 * 2 * 2 * 256 * 2);  // 20,480 B
}

TEST(Architectures, Qwen3VlWithDeepstackMergers) {
  const ModelSpec s = load("Qwen__Qwen3-VL-8B-Instruct.json");
  const std::int64_t h = 4096;
  const std::int64_t text =
      2 * 151936 * h + h +
      36 * (attention(h, 32, 8, 128, false, false, true) + swiglu(h, 12288) + 2 * h);
  // Published: 8.77B parameters (model page); the derivation gives 8,767,123,696.
  expect_parameters(s, text + qwen3_vl_vision(1152, 27, 4304, h, 3), "Qwen3-VL-8B");
  EXPECT_EQ(kv_per_token(s), 36 * 2 * 8 * 128 * 2);  // 147,456 B
}

TEST(Architectures, Qwen25VlFlatConfig) {
  // Text keys at the top level (older transformers); vision: RMSNorm blocks, gated biased MLP,
  // bias-free Conv3d patches, RMSNorm + 2-layer merger into 3584.
  const ModelSpec s = load("Qwen__Qwen2.5-VL-7B-Instruct.json");
  const std::int64_t h = 3584;
  const std::int64_t text =
      2 * 152064 * h + h + 28 * (attention(h, 28, 4, 128, false, true) + swiglu(h, 18944) + 2 * h);
  const std::int64_t e = 1280;
  const std::int64_t merged = 4 * e;
  const std::int64_t vision =
      3 * 2 * 14 * 14 * e +
      32 * (2 * e + 3 * e * e + 3 * e + e * e + e + 3 * e * 3420 + 2 * 3420 + e) + e +
      merged * merged + merged + merged * h + h;
  // Published: 8.29B parameters (model page); the derivation gives 8,292,166,656.
  expect_parameters(s, text + vision, "Qwen2.5-VL-7B");
  EXPECT_EQ(kv_per_token(s), 28 * 2 * 4 * 128 * 2);  // 57,344 B
}

TEST(Architectures, Mistral3PixtralFp8) {
  // Devstral-Small-2: ministral3 text (40 layers, 8 KV heads of 128), Pixtral encoder (24 layers,
  // RMSNorm, gated MLP, no biases) and projector (norm, 2x2 patch merger, two linears); FP8
  // per-tensor weights with vision tower, projector and lm_head left in bf16.
  const ModelSpec s = load("mistralai__Devstral-Small-2-24B-Instruct.json");
  const std::int64_t h = 5120;
  const std::int64_t v = 131072;
  const std::int64_t linear = 40 * (attention(h, 32, 8, 128) + swiglu(h, 32768));
  const std::int64_t other = 2 * v * h + h + 40 * 2 * h;
  const std::int64_t e = 1024;
  const std::int64_t vision =
      24 * (4 * e * e + 3 * e * 4096 + 2 * e) + 3 * 14 * 14 * e + e + e + 4 * e * e + h * e + h * h;
  expect_parameters(s, linear + other + vision, "Devstral-Small-2-24B");
  EXPECT_EQ(s.quantization.method, QuantMethod::Fp8);
  // Stored bytes: fp8 linears (1 B), everything else bf16 (2 B); scales are a few KB.
  const std::int64_t hand_bytes = linear + 2 * other + 2 * vision;
  // (The rotary cos/sin buffer vLLM allocates is not a checkpoint tensor.)
  const WeightBytes w = weight_bytes_per_rank(s, s.quantization, s.torch_dtype, {});
  const std::int64_t got = w.total() - w.rotary_cache;
  EXPECT_LT(relative_error(got, hand_bytes), 0.0001) << got << " vs " << hand_bytes;
  std::cout << "[bytes] Devstral-Small-2 FP8: spec " << got << ", hand " << hand_bytes << "\n";
  EXPECT_EQ(kv_per_token(s), 40 * 2 * 8 * 128 * 2);
}

TEST(Architectures, Exaone4SlidingPattern) {
  const ModelSpec s = load("LGAI-EXAONE__EXAONE-4.0-32B.json");
  const std::int64_t h = 5120;
  const std::int64_t hand =
      2 * 102400 * h + h +
      64 * (attention(h, 40, 8, 128, false, false, true) + swiglu(h, 27392) + 2 * h);
  expect_parameters(s, hand, "EXAONE-4.0-32B");
  EXPECT_EQ(s.layers[0].attention, AttentionKind::SlidingWindow);
  EXPECT_EQ(s.layers[0].sliding_window, 4096);
  EXPECT_EQ(s.layers[3].attention, AttentionKind::Full);
  EXPECT_EQ(kv_per_token(s), 64 * 2 * 8 * 128 * 2);  // every attention layer, 262,144 B
}

TEST(Architectures, MimoIsQwen2WithMtp) {
  const ModelSpec s = load("XiaomiMiMo__MiMo-7B-Base.json");
  const std::int64_t h = 4096;
  const std::int64_t hand =
      2 * 151680 * h + h + 36 * (attention(h, 32, 8, 128, false, true) + swiglu(h, 11008) + 2 * h);
  expect_parameters(s, hand, "MiMo-7B-Base");
  EXPECT_EQ(s.num_nextn_predict_layers, 1);
  EXPECT_TRUE(s.qkv_bias);
  EXPECT_FALSE(s.o_proj_bias);
  EXPECT_EQ(kv_per_token(s), 36 * 2 * 8 * 128 * 2);
}

TEST(Architectures, KimiK2IsDeepseekV3) {
  // MLA: q_a 1536, q_b 64 x 192, kv_a 512 + 64, kv_b 64 x (128 + 128), o; layer 0 dense, 60 MoE
  // layers of 384 experts of 2048 + 1 shared, router with a correction bias.
  const ModelSpec s = load("moonshotai__Kimi-K2-Instruct.json");
  const std::int64_t h = 7168;
  const std::int64_t mla =
      1536 * h + 1536 + 64 * 192 * 1536 + 576 * h + 512 + 64 * 256 * 512 + h * 64 * 128;
  const std::int64_t dense = mla + swiglu(h, 18432) + 2 * h;
  const std::int64_t moe = mla + 384 * h + 384 + 384 * swiglu(h, 2048) + swiglu(h, 2048) + 2 * h;
  // Published: "1T" total parameters (model card); the derivation gives 1,026,408,232,448.
  expect_parameters(s, 2 * 163840 * h + h + dense + 60 * moe, "Kimi-K2");
  EXPECT_EQ(kv_per_token(s), 61 * (512 + 64) * 2);  // one latent per layer, 70,272 B
}

TEST(Architectures, Nemotron3NanoHybridMoe) {
  // hybrid_override_pattern: 23 Mamba2 (64 heads x 64, 8 groups, state 128), 6 attention
  // (32 q / 2 KV heads of 128), 23 MoE (128 squared-ReLU experts of 1856 + shared 3712).
  const ModelSpec s = load("nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json");
  const std::int64_t h = 2688;
  const std::int64_t inner = 64 * 64;
  const std::int64_t conv = inner + 2 * 8 * 128;
  const std::int64_t mamba =
      (2 * inner + 2 * 8 * 128 + 64) * h + conv * 4 + conv + 3 * 64 + inner + h * inner + h;
  const std::int64_t attn = attention(h, 32, 2, 128) + h;
  const std::int64_t moe = 128 * h + 128 + 128 * 2 * 1856 * h + 2 * 3712 * h + h;
  // Published: 31.6B total parameters (model card); the derivation gives 31,577,940,288.
  expect_parameters(s, 2 * 131072 * h + h + 23 * mamba + 6 * attn + 23 * moe, "Nemotron-3-Nano");
  EXPECT_EQ(kv_per_token(s), 6 * 2 * 2 * 128 * 2);  // attention layers only, 6,144 B
}

TEST(Architectures, Gemma3SparseTextConfigTakesTransformersDefaults) {
  // google/gemma-3-4b-it's config.json names only a few text keys; transformers' Gemma3TextConfig
  // supplies vocab_size 262208, head_dim 256, 8 heads / 4 KV heads, tie_word_embeddings,
  // sliding_window_pattern 6. Values as quoted from the published file (see SOURCES.md).
  const ModelSpec s = load("google__gemma-3-4b-it.json");
  EXPECT_EQ(s.vocab_size, 262208);
  EXPECT_EQ(s.head_dim, 256);
  EXPECT_TRUE(s.tie_word_embeddings);
  const std::int64_t h = 2560;
  const std::int64_t text =
      262208 * h + h +
      34 * (attention(h, 8, 4, 256, false, false, true) + swiglu(h, 10240) + 4 * h);
  // SigLIP (27 layers of 1152, MLP 4304, patch 14 on 896 px) + projector [1152 -> 2560] + norm.
  const std::int64_t e = 1152;
  const std::int64_t siglip = 27 * (4 * e * e + 4 * e + 2 * e * 4304 + 4304 + e + 4 * e) +
                              3 * 14 * 14 * e + e + 64 * 64 * e + 2 * e;
  // Published: 4.30B parameters (model page); the derivation gives 4,300,079,472.
  expect_parameters(s, text + siglip + e * h + e, "gemma-3-4b-it");
  EXPECT_EQ(s.layers[0].attention, AttentionKind::SlidingWindow);
  EXPECT_EQ(s.layers[0].sliding_window, 1024);
  EXPECT_EQ(s.layers[5].attention, AttentionKind::Full);
  EXPECT_EQ(kv_per_token(s), 34 * 2 * 4 * 256 * 2);  // 139,264 B over all attention layers
}

// --- errors -----------------------------------------------------------------------------

namespace {

std::string import_error(const std::string& json_text) {
  const vramplan_test::TempDir dir("arch");
  const fs::path path = dir.path() / "config.json";
  std::ofstream(path) << json_text;
  try {
    (void)load_hf_config(path.string());
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

// ERNIE 4.5 dense (vLLM: its Llama model without the o_proj bias): 18 layers of q/k/v/o (16 q
// heads and 2 KV heads of 128, so q is 2048 wide on a 1024 model), SwiGLU 3072 and two RMSNorms;
// embeddings tied, vocabulary 103424. The model card states 0.36B parameters.
TEST(Architectures, Ernie45DenseIsLlamaWithoutOutputBias) {
  const ModelSpec s = load("baidu__ERNIE-4.5-0.3B-PT.json");
  const std::int64_t h = 1024;
  const std::int64_t hand =
      103424 * h + h + 18 * (attention(h, 16, 2, 128) + swiglu(h, 3072) + 2 * h);
  EXPECT_EQ(hand, 360748032);
  expect_parameters(s, hand, "ERNIE-4.5-0.3B-PT");
  EXPECT_LT(relative_error(parameter_count(s), 360000000), 0.005);  // published 0.36B
  EXPECT_EQ(kv_per_token(s), 18 * 2 * 2 * 128 * 2);
  // A config that sets attention_bias gets q/k/v biases but still no o_proj bias.
  const vramplan_test::TempDir dir("ernie");
  std::ofstream(dir.path() / "config.json")
      << R"({"model_type": "ernie4_5", "hidden_size": 1024, "intermediate_size": 3072,
          "num_hidden_layers": 18, "num_attention_heads": 16, "num_key_value_heads": 2,
          "head_dim": 128, "vocab_size": 103424, "max_position_embeddings": 131072,
          "attention_bias": true})";
  const std::int64_t with_bias = parameter_count(load_hf_config(dir.path().string()));
  EXPECT_EQ(with_bias - hand, 18 * (16 * 128 + 2 * 2 * 128));
}

// An unmapped model_type takes the generic path (tests/cpp/test_generic_path.cpp), which names
// the standard field it lacks.
TEST(Architectures, UnknownModelTypeWithoutTheStandardFieldsNamesTheField) {
  const std::string message = import_error(R"({"model_type": "mpt", "hidden_size": 64})");
  EXPECT_NE(message.find("num_hidden_layers"), std::string::npos) << message;
  EXPECT_NE(message.find("the generic path (model_type mpt is not mapped)"), std::string::npos)
      << message;
}

TEST(Architectures, RefusedFamilySaysWhy) {
  const std::string message = import_error(R"({"model_type": "phi3small", "hidden_size": 64})");
  EXPECT_NE(message.find("block-sparse attention"), std::string::npos) << message;
}

// vLLM loads the config through transformers, so an omitted key is LlamaConfig's default
// (vocab_size: int = 32000 in transformers 5.20.2's configuration_llama.py), and the spec says so.
TEST(Architectures, MissingShapeKeyTakesTheTransformersDefault) {
  const ModelSpec spec = model_spec_from_hf_config(
      nlohmann::json::parse(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 128, "max_position_embeddings": 64})"),
      nullptr, "config.json");
  EXPECT_EQ(spec.vocab_size, 32000);
  ASSERT_FALSE(spec.config_defaults.empty());
  EXPECT_EQ(spec.config_defaults.front(), "vocab_size = 32000 (LlamaConfig)");
}

TEST(Architectures, NonFiniteNumberIsANamedErrorNotMissing) {
  const std::string message = import_error(
      R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": NaN,
          "max_position_embeddings": 64})");
  EXPECT_NE(message.find("vocab_size"), std::string::npos) << message;
  EXPECT_NE(message.find("NaN"), std::string::npos) << message;
  EXPECT_NE(message.find("non-finite"), std::string::npos) << message;
  const std::string partial = import_error(
      R"({"model_type": "phi", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 10,
          "num_attention_heads": 4, "intermediate_size": 128, "max_position_embeddings": 64,
          "partial_rotary_factor": -Infinity})");
  EXPECT_NE(partial.find("partial_rotary_factor"), std::string::npos) << partial;
  EXPECT_NE(partial.find("-Infinity"), std::string::npos) << partial;
}

TEST(Architectures, DeepNestingIsRefusedQuickly) {
  // 12 MB of '[' nested 12M deep: refused by the depth scan before the recursive parser.
  const vramplan_test::TempDir dir("arch");
  const fs::path path = dir.path() / "config.json";
  {
    std::ofstream out(path);
    out << std::string(12'000'000, '[');
  }
  try {
    (void)load_hf_config(path.string());
    FAIL() << "accepted";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
  }
}

TEST(Architectures, EveryFixtureImports) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(kConfigs)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".json" || name.find(".hf_quant_config") != std::string::npos)
      continue;
    SCOPED_TRACE(name);
    EXPECT_NO_THROW((void)load_hf_config(entry.path().string()));
    ++count;
  }
  EXPECT_GE(count, 20);
}

TEST(Architectures, MarkdownListsEveryFamilyAndRefusal) {
  const std::string md = architectures_markdown();
  for (const auto& a : architecture_infos()) EXPECT_NE(md.find(a.family), std::string::npos);
  for (const auto& r : refused_architectures())
    EXPECT_NE(md.find("`" + r.model_type + "`"), std::string::npos);
}

// --- families from published config values (tests/data/configs/published_values) ---------
// Each case: the hand derivation of the parameters vLLM holds, the checkpoint's published
// count (model page), and KV bytes per token in bf16 at TP 1.

namespace {

struct PublishedCase {
  const char* file;
  std::int64_t hand;      // derived below, per family
  double published;       // parameters the model page states
  std::int64_t kv_bytes;  // per token, derived by hand
};

std::int64_t gemma2_9b() {
  // 42 layers: q/k/v/o (16 q, 8 KV heads of 256), GeGLU 14336, four RMSNorms; tied V 256000.
  const std::int64_t h = 3584;
  return 256000 * h + h + 42 * (attention(h, 16, 8, 256) + swiglu(h, 14336) + 4 * h);
}
std::int64_t qwen15_moe() {
  // 24 layers: biased q/k/v, 60 experts of 1408, a shared expert of 5632 with a sigmoid gate.
  const std::int64_t h = 2048;
  const std::int64_t moe = 60 * h + 60 * swiglu(h, 1408) + swiglu(h, 5632) + h;
  return 2 * 151936 * h + h + 24 * (attention(h, 16, 16, 128, false, true) + moe + 2 * h);
}
std::int64_t granite_moe() {
  // 32 layers: 24 q / 8 KV heads of 64, 40 experts of 512; tied V 49155.
  const std::int64_t h = 1536;
  return 49155 * h + h + 32 * (attention(h, 24, 8, 64) + 40 * h + 40 * swiglu(h, 512) + 2 * h);
}
std::int64_t olmo2_1b() {
  // 16 layers: MHA, q_norm and k_norm over all 16 heads (2 x 2048), post-attention and
  // post-MLP RMSNorms; untied V 100352.
  const std::int64_t h = 2048;
  return 2 * 100352 * h + h + 16 * (attention(h, 16, 16, 128) + 2 * h + swiglu(h, 8192) + 2 * h);
}
std::int64_t falcon_7b() {
  // 32 parallel blocks: fused qkv (71 heads + 1 shared K + 1 shared V, head 64), dense, 4h
  // GELU MLP, one LayerNorm (weight+bias); tied V 65024; final LayerNorm.
  const std::int64_t h = 4544;
  return 65024 * h + 32 * ((71 + 2) * 64 * h + h * h + 2 * h * 4 * h + 2 * h) + 2 * h;
}
std::int64_t starcoder2_7b() {
  // 32 layers: biased q/k/v/o (36 q, 4 KV heads of 128), biased c_fc/c_proj (GELU, 18432),
  // two LayerNorms with biases; tied V 49152; final LayerNorm.
  const std::int64_t h = 4608;
  const std::int64_t i = 18432;
  return 49152 * h +
         32 * (attention(h, 36, 4, 128, false, true) + h + (i * h + i) + (h * i + h) + 4 * h) +
         2 * h;
}
std::int64_t command_r() {
  // 40 parallel blocks: MHA 64 x 128, SwiGLU 22528, one LayerNorm (weight only); tied V 256000.
  const std::int64_t h = 8192;
  return 256000 * h + h + 40 * (attention(h, 64, 64, 128) + swiglu(h, 22528) + h);
}
std::int64_t internlm25_7b() {
  const std::int64_t h = 4096;
  return 2 * 92544 * h + h + 32 * (attention(h, 32, 8, 128) + swiglu(h, 14336) + 2 * h);
}
std::int64_t glm4_9b() {
  // 40 layers: biased q/k/v (32 q, 2 KV heads of 128), o, SwiGLU 13696, four RMSNorms.
  const std::int64_t h = 4096;
  return 2 * 151552 * h + h +
         40 * (attention(h, 32, 2, 128, false, true) + swiglu(h, 13696) + 4 * h);
}
std::int64_t phi35_moe() {
  // 32 layers: biased q/k/v/o, 16 experts of 6400, two LayerNorms with biases; untied V 32064
  // with a biased lm_head; final LayerNorm with bias.
  const std::int64_t h = 4096;
  return 32064 * h + (32064 * h + 32064) + 2 * h +
         32 * (attention(h, 32, 8, 128, false, true) + h + 16 * h + 16 * swiglu(h, 6400) + 4 * h);
}
std::int64_t deepseek_v2_lite() {
  // MLA without q LoRA: q 16 x 192, kv_a 512 + 64 (+ norm 512), kv_b 16 x 256, o; layer 0 dense
  // (10944), 26 MoE layers of 64 experts of 1408 + 2 shared.
  const std::int64_t h = 2048;
  const std::int64_t mla = 16 * 192 * h + 576 * h + 512 + 16 * 256 * 512 + h * 16 * 128;
  const std::int64_t moe = 64 * h + 64 * swiglu(h, 1408) + 2 * swiglu(h, 1408);
  return 2 * 102400 * h + h + (mla + swiglu(h, 10944) + 2 * h) + 26 * (mla + moe + 2 * h);
}
std::int64_t qwen2_vl_7b() {
  // Text as Qwen2-7B; ViT: 32 blocks of 1280 (two LayerNorms with biases, biased qkv/proj,
  // biased fc1/fc2 of 4 x 1280), bias-free Conv3d, LayerNorm + two-layer merger into 3584.
  const std::int64_t h = 3584;
  const std::int64_t text =
      2 * 152064 * h + h + 28 * (attention(h, 28, 4, 128, false, true) + swiglu(h, 18944) + 2 * h);
  const std::int64_t e = 1280;
  const std::int64_t block =
      4 * e + 3 * e * e + 3 * e + e * e + e + (e * 4 * e + 4 * e) + (4 * e * e + e);
  const std::int64_t merger = 2 * e + (16 * e * e + 4 * e) + (4 * e * h + h);
  return text + 3 * 2 * 14 * 14 * e + 32 * block + merger;
}

}  // namespace

TEST(Architectures, PublishedValueFamilies) {
  const PublishedCase cases[] = {
      {"google__gemma-2-9b.json", gemma2_9b(), 9.24e9, 42 * 2 * 8 * 256 * 2},
      {"Qwen__Qwen1.5-MoE-A2.7B.json", qwen15_moe(), 14.3e9, 24 * 2 * 16 * 128 * 2},
      {"ibm-granite__granite-3.1-3b-a800m-instruct.json", granite_moe(), 3.3e9,
       32 * 2 * 8 * 64 * 2},
      {"allenai__OLMo-2-0425-1B.json", olmo2_1b(), 1.48e9, 16 * 2 * 16 * 128 * 2},
      // Published 7.22B counts the checkpoint's stored copy of the tied lm_head (V x h).
      {"tiiuae__falcon-7b.json", falcon_7b(), 7.22e9 - 65024.0 * 4544, 32 * 2 * 1 * 64 * 2},
      {"bigcode__starcoder2-7b.json", starcoder2_7b(), 7.17e9, 32 * 2 * 4 * 128 * 2},
      {"CohereForAI__c4ai-command-r-v01.json", command_r(), 34.98e9, 40 * 2 * 64 * 128 * 2},
      {"internlm__internlm2_5-7b-chat.json", internlm25_7b(), 7.74e9, 32 * 2 * 8 * 128 * 2},
      {"THUDM__GLM-4-9B-0414.json", glm4_9b(), 9.40e9, 40 * 2 * 2 * 128 * 2},
      {"microsoft__Phi-3.5-MoE-instruct.json", phi35_moe(), 41.9e9, 32 * 2 * 8 * 128 * 2},
      {"deepseek-ai__DeepSeek-V2-Lite.json", deepseek_v2_lite(), 15.7e9, 27 * (512 + 64) * 2},
      {"Qwen__Qwen2-VL-7B-Instruct.json", qwen2_vl_7b(), 8.29e9, 28 * 2 * 4 * 128 * 2},
  };
  for (const PublishedCase& c : cases) {
    SCOPED_TRACE(c.file);
    const ModelSpec s = load(std::string("published_values/") + c.file);
    expect_parameters(s, c.hand, c.file);
    // The hand derivation itself agrees with the published (rounded) count.
    EXPECT_LT(std::fabs(static_cast<double>(c.hand) - c.published) / c.published, 0.005)
        << c.hand << " vs published " << c.published;
    std::cout << "[published] " << c.file << ": spec " << parameter_count(s) << " vs "
              << c.published << " ("
              << relative_error(parameter_count(s), static_cast<std::int64_t>(c.published)) * 100
              << " %)\n";
    EXPECT_EQ(kv_per_token(s), c.kv_bytes);
  }
}

// docs/models.md is generated from the table: scripts/gen_models_doc.sh reruns this test with
// VRAMPLAN_UPDATE_DOCS=1 to rewrite it; otherwise the test fails when the page is stale.
TEST(Architectures, DocsModelsPageIsGeneratedFromTheTable) {
  const fs::path page = fs::path(VRAMPLAN_SOURCE_DIR) / "docs" / "models.md";
  const std::string expected =
      "# Model families\n\n"
      "<!-- Generated from cpp/src/architectures.cpp and model_specs/architectures.yaml by "
      "scripts/gen_models_doc.sh; do not edit. "
      "-->\n\n"
      "Every `model_type` vramplan plans from a `config.json` (or a llama.cpp GGUF file), what "
      "is modelled, and the transformers configuration class whose defaults fill keys a config "
      "omits, as vLLM's config loading fills them (`config_class_defaults` in "
      "`model_specs/architectures.yaml`, read from transformers 5.20.2, the newest release vLLM "
      "0.33 accepts, per model_type; a plan from a config lists every default it used). A "
      "config whose `model_type` is not listed takes the generic path below, or is refused by "
      "the key that names a layout it cannot size; to plan such a model, write a spec YAML "
      "under `model_specs/models/` (schema: `vramplan schema`). "
      "Quantizations accepted for every family: compressed-tensors (fp8 per-tensor, channel "
      "or block, int8 W8A8, W4A16/W8A16 pack-quantized, NVFP4; several `config_groups` of one "
      "scheme; `ignore` lists of names and `re:` regexes), ModelOpt FP8/NVFP4/W4A16_NVFP4 and "
      "MIXED_PRECISION (FP8, NVFP4 and W4A16_NVFP4 per layer, the lm_head included when listed; "
      "`hf_quant_config.json` or `quant_method: modelopt`; "
      "glob `exclude_modules`), fp8 (per-tensor or block), AWQ / awq_marlin, GPTQ / "
      "gptq_marlin (incl. act-order and `dynamic` skip rules), AutoRound (GPTQ- or AWQ-packed), "
      "bitsandbytes nf4/int8, MXFP4 and GGUF block types. Skip lists (compressed-tensors "
      "`ignore`, AWQ / fp8 `modules_to_not_convert`, ModelOpt `exclude_modules`, GPTQModel "
      "`dynamic` \"-:\" rules, bitsandbytes `llm_int8_skip_modules`, AutoRound `extra_config` "
      "`{\"bits\": 16}` keys) are matched against the module names vLLM builds at every decoder "
      "layer (exact, regex, substring, glob or dotted components, as vLLM matches each method's "
      "list): a module skipped in some layers only is stored in the model dtype there "
      "(`quantization.unquantized_layers`); a list that skips some shards of one of vLLM's fused "
      "Linears (q_proj without k_proj and v_proj, gate_proj without up_proj) is refused by name, "
      "as vLLM refuses it, and so is a GPTQ `modules_to_not_convert` (vLLM's GPTQ config does "
      "not read it). Vision towers and projectors are always counted in the stored dtype.\n\n" +
      architectures_markdown();
  if (std::getenv("VRAMPLAN_UPDATE_DOCS") != nullptr) {
    std::ofstream(page, std::ios::binary) << expected;
  }
  std::ifstream in(page, std::ios::binary);
  const std::string actual((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(actual, expected) << "docs/models.md is stale: run scripts/gen_models_doc.sh";
}

// --- quantization as checkpoints declare it --------------------------------------------------

namespace {

ModelSpec import_text(const std::string& json_text, const std::string& side_name = "",
                      const std::string& side_text = "") {
  const vramplan_test::TempDir dir("quant");
  std::ofstream(dir.path() / "config.json") << json_text;
  if (!side_name.empty()) std::ofstream(dir.path() / side_name) << side_text;
  return load_hf_config(dir.path().string());
}

// Llama-3.1-8B's shapes (tests/data/configs/meta-llama__Meta-Llama-3.1-8B.json).
std::string llama8b(const std::string& extra) {
  return R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
      "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
      "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16")" +
         extra + "}";
}

// Llama-3.1-8B linear weights: 32 x (q 4096^2 + kv 2*1024*4096 + o 4096^2 + 3*4096*14336).
constexpr std::int64_t kLlamaLinear = 32LL * (2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 4096 * 14336);
constexpr std::int64_t kLlamaOther = 2LL * 128256 * 4096 + 65 * 4096;  // embed, lm_head, norms

std::int64_t stored_bytes(const ModelSpec& s) {
  const WeightBytes w = weight_bytes_per_rank(s, s.quantization, s.torch_dtype, {});
  return w.total() - w.rotary_cache;
}

}  // namespace

TEST(Architectures, AutoRoundIsGptqPacked) {
  const ModelSpec s = import_text(llama8b(R"(, "quantization_config": {"quant_method": "auto-round",
      "bits": 4, "group_size": 128, "sym": true, "packing_format": "auto_round:auto_gptq"})"));
  EXPECT_EQ(s.quantization.method, QuantMethod::Gptq);
  // 4-bit weights, an fp16 scale and a packed 4-bit zero per 128 inputs per output row.
  const double per_weight = 0.5 + 2.0 / 128 + 0.5 / 128;
  const double hand = kLlamaLinear * per_weight + 2.0 * kLlamaOther;
  EXPECT_LT(std::fabs(stored_bytes(s) - hand) / hand, 0.005) << stored_bytes(s) << " vs " << hand;
}

TEST(Architectures, OlderGptqSideFile) {
  const ModelSpec s =
      import_text(llama8b(""), "quantize_config.json",
                  R"({"bits": 4, "group_size": 128, "desc_act": true, "sym": true})");
  EXPECT_EQ(s.quantization.method, QuantMethod::Gptq);
  EXPECT_TRUE(s.quantization.desc_act);
}

TEST(Architectures, CompressedTensorsNvfp4WithIgnorePatterns) {
  const ModelSpec s = import_text(llama8b(R"(, "quantization_config": {
      "quant_method": "compressed-tensors", "ignore": ["lm_head", "re:.*mlp.gate$"],
      "config_groups": {"group_0": {"targets": ["Linear"],
        "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16},
        "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                              "group_size": 16, "dynamic": "local"}}}})"));
  EXPECT_EQ(s.quantization.method, QuantMethod::Nvfp4);
  // e2m1 (0.5 B) + one fp8 scale per 16 weights; lm_head (in kLlamaOther) stays bf16.
  const double hand = kLlamaLinear * (0.5 + 1.0 / 16) + 2.0 * kLlamaOther;
  EXPECT_LT(std::fabs(stored_bytes(s) - hand) / hand, 0.005) << stored_bytes(s) << " vs " << hand;
}
