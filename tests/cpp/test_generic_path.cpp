// The generic path: a config whose model_type has no row in model_specs/architectures.yaml is
// planned as a standard decoder from transformers' standard fields, and says so; a config whose
// keys signal a layout it cannot size is refused by the key's name. Real configs of mapped
// families, their model_type renamed, must agree with their rows; every expected number below
// is derived by hand from the config, the mapped result only cross-checks it.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
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

// A config as the importer reads it (Python-style Infinity included), model_type renamed
// where `rename` is given.
ModelSpec load(const std::string& name, const std::string& rename = "") {
  std::ifstream in(std::string(VRAMPLAN_TEST_DATA_DIR) + "/configs/" + name);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const vramplan_test::TempDir dir("generic");
  if (!rename.empty()) {
    const std::size_t key = text.find("\"model_type\"");
    const std::size_t open = text.find('"', text.find(':', key));
    const std::size_t close = text.find('"', open + 1);
    text.replace(open + 1, close - open - 1, rename);
  }
  std::ofstream(dir.path() / "config.json") << text;
  return load_hf_config(dir.path().string());
}

ModelSpec mapped(const std::string& name) { return load(name); }

// The same config with its row out of reach: model_type renamed to one no row names.
ModelSpec generic(const std::string& name) {
  const ModelSpec m = mapped(name);
  return load(name, "unmapped_" + m.model_type);
}

std::int64_t kv_per_token(const ModelSpec& s) { return kv_bytes_per_token(s, KvCacheOptions{}); }

// One request of `tokens` tokens in the KV pools (sliding layers capped as vLLM caps them).
std::int64_t request_bytes(const ModelSpec& s, std::int64_t tokens) {
  return kv_request_bytes(kv_layout(s, KvCacheOptions{}), tokens, 8192);
}

std::int64_t rank_weights(const ModelSpec& s) {
  return weight_bytes_per_rank(s, s.quantization, s.torch_dtype, {}).total();
}

std::string refusal(json config) {
  try {
    (void)model_spec_from_hf_config(config, nullptr, "unmapped/config.json");
  } catch (const SpecError& e) {
    return e.what();
  }
  return "accepted";
}

json tiny(const json& extra) {
  json config = {{"model_type", "unmapped_tiny"},
                 {"hidden_size", 64},
                 {"num_hidden_layers", 4},
                 {"num_attention_heads", 4},
                 {"num_key_value_heads", 2},
                 {"intermediate_size", 128},
                 {"vocab_size", 100},
                 {"max_position_embeddings", 4096},
                 {"tie_word_embeddings", false},
                 {"torch_dtype", "bfloat16"}};
  config.update(extra);
  return config;
}

}  // namespace

// Llama-3.1-8B: the llama row adds nothing to the standard fields, so the generic path gives
// the same spec. By hand: KV 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B/token;
// weights embed + lm_head 2 x 128256 x 4096 = 1,050,673,152, per layer q/o 2 x 4096^2, k/v
// 2 x 1024 x 4096, gate/up/down 3 x 4096 x 14336, two norms 2 x 4096 = 218,112,000 x 32, final
// norm 4096: 8,030,261,248 parameters, 16,060,522,496 B in bf16.
TEST(GenericPath, Llama31AgreesWithItsRow) {
  const ModelSpec g = generic("meta-llama__Meta-Llama-3.1-8B.json");
  const ModelSpec m = mapped("meta-llama__Meta-Llama-3.1-8B.json");
  EXPECT_EQ(g.model_type, "unmapped_llama");
  EXPECT_FALSE(g.generic_assumptions.empty());
  EXPECT_TRUE(m.generic_assumptions.empty());
  EXPECT_EQ(kv_per_token(g), 2 * 32 * 8 * 128 * 2);
  EXPECT_EQ(kv_per_token(g), kv_per_token(m));
  EXPECT_EQ(request_bytes(g, 131072), request_bytes(m, 131072));
  EXPECT_EQ(checkpoint_tensor_bytes(g), 2 * 8030261248LL);
  EXPECT_EQ(checkpoint_tensor_bytes(g), checkpoint_tensor_bytes(m));
  EXPECT_EQ(rank_weights(g), rank_weights(m));
}

// Qwen3-8B: its row adds per-head q/k RMSNorms the standard fields do not name, so from the
// fields alone the generic path counts 2 x 36 layers x 128 x 2 B = 18,432 B fewer (the stated
// "no q/k norms"). With the tensor headers read, the plan takes their sum and agrees exactly:
// 1,244,659,712 (embed + lm_head 2 x 151936 x 4096) + 36 x 192,946,432 (q/o 2 x 4096^2, k/v
// 2 x 1024 x 4096, MLP 3 x 4096 x 12288, norms 2 x 4096 + 2 x 128) + 4096 = 8,190,735,360
// parameters, 16,381,470,720 B. KV: 2 x 36 x 8 x 128 x 2 = 147,456 B/token.
TEST(GenericPath, Qwen3AgreesWithItsRowFromTheHeaders) {
  ModelSpec g = generic("Qwen__Qwen3-8B.json");
  ModelSpec m = mapped("Qwen__Qwen3-8B.json");
  EXPECT_EQ(kv_per_token(g), 2 * 36 * 8 * 128 * 2);
  EXPECT_EQ(kv_per_token(g), kv_per_token(m));
  EXPECT_EQ(request_bytes(g, 40960), request_bytes(m, 40960));
  EXPECT_EQ(checkpoint_tensor_bytes(m), 16381470720LL);
  EXPECT_EQ(checkpoint_tensor_bytes(m) - checkpoint_tensor_bytes(g), 2 * 36 * 128 * 2);
  // What load_model_path sets from the safetensors headers.
  g.checkpoint_bytes = 16381470720LL;
  m.checkpoint_bytes = 16381470720LL;
  EXPECT_EQ(rank_weights(g), rank_weights(m));
  const WeightBytes w = weight_bytes_per_rank(g, g.quantization, g.torch_dtype, {});
  EXPECT_EQ(w.total() - w.rotary_cache, 16381470720LL);
}

// EXAONE-4.0-32B: sliding and full layers from layer_types (48 slide within 4096 tokens, 16
// attend fully). KV: 2 x 64 x 8 x 128 x 2 = 262,144 B/token; a 131,072-token request keeps
// every token in the 16 full layers and at most the window in the 48 sliding ones, as the row.
TEST(GenericPath, Exaone4SlidingLayersAgreeWithItsRow) {
  const ModelSpec g = generic("LGAI-EXAONE__EXAONE-4.0-32B.json");
  const ModelSpec m = mapped("LGAI-EXAONE__EXAONE-4.0-32B.json");
  ASSERT_EQ(g.layers.size(), 64u);
  const auto sliding = std::count_if(g.layers.begin(), g.layers.end(), [](const LayerSpec& l) {
    return l.attention == AttentionKind::SlidingWindow && l.sliding_window == 4096;
  });
  EXPECT_EQ(sliding, 48);
  EXPECT_EQ(kv_per_token(g), 2 * 64 * 8 * 128 * 2);
  EXPECT_EQ(kv_per_token(g), kv_per_token(m));
  EXPECT_EQ(request_bytes(g, 131072), request_bytes(m, 131072));
  EXPECT_LT(request_bytes(g, 131072), 131072LL * 2 * 64 * 8 * 128 * 2);
  // The row's q/k norms (2 x 64 layers x 128 x 2 B) are the only weights apart.
  EXPECT_EQ(checkpoint_tensor_bytes(m) - checkpoint_tensor_bytes(g), 2 * 64 * 128 * 2);
}

// Routed experts from the standard fields (Qwen3-30B-A3B: 128 experts of 768, top 8).
TEST(GenericPath, StandardMoeFieldsAgreeWithTheRow) {
  const ModelSpec g = generic("Qwen__Qwen3-30B-A3B.json");
  const ModelSpec m = mapped("Qwen__Qwen3-30B-A3B.json");
  EXPECT_EQ(g.moe.num_experts, 128);
  EXPECT_EQ(g.moe.num_experts_per_tok, 8);
  EXPECT_EQ(g.moe.moe_intermediate_size, 768);
  EXPECT_EQ(kv_per_token(g), 2 * 48 * 4 * 128 * 2);
  EXPECT_EQ(kv_per_token(g), kv_per_token(m));
  // q/k norms again: 2 x 48 x 128 x 2 B.
  EXPECT_EQ(checkpoint_tensor_bytes(m) - checkpoint_tensor_bytes(g), 2 * 48 * 128 * 2);
}

// Hybrids and latent attention are refused by the key that signals them, never guessed.
TEST(GenericPath, HybridAndLatentConfigsAreRefusedByName) {
  struct Case {
    const char* file;
    const char* key;
  };
  for (const Case& c : {Case{"Qwen__Qwen3-Next-80B-A3B-Thinking.json", "full_attention_interval"},
                        Case{"nvidia__Nemotron-H-56B-Base-8K.json", "hybrid_override_pattern"},
                        Case{"deepseek-ai__DeepSeek-V3.json", "kv_lora_rank"}}) {
    std::string message = "accepted";
    try {
      (void)load(c.file, "unmapped");
    } catch (const SpecError& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(std::string(c.key) + ":"), std::string::npos) << message;
    EXPECT_NE(message.find("model_type unmapped is not mapped"), std::string::npos) << message;
  }
}

TEST(GenericPath, LayoutsItCannotSizeAreRefusedByName) {
  struct Case {
    const char* extra;  // JSON keys added to a tiny standard config
    const char* named;
  };
  const Case cases[] = {
      {R"({"layer_types": ["full_attention", "linear_attention", "full_attention",
          "full_attention"]})",
       "layer_types"},
      {R"({"num_kv_shared_layers": 2})", "num_kv_shared_layers"},
      {R"({"is_encoder_decoder": true})", "is_encoder_decoder"},
      {R"({"vision_config": {"hidden_size": 32}})", "vision_config"},
      {R"({"head_dim": [16, 32, 16, 32]})", "head_dim"},
      {R"({"sliding_window": 512, "sliding_window_pattern": 4})", "sliding_window_pattern"},
      {R"({"num_experts": 8, "num_experts_per_tok": 2})", "moe_intermediate_size"},
      {R"({"attn_type_list": [0, 1, 1, 1]})", "attn_type_list"},
      {R"({"q_lora_rank": 32})", "q_lora_rank"},
  };
  for (const Case& c : cases) {
    const std::string message = refusal(tiny(json::parse(c.extra)));
    EXPECT_NE(message.find(std::string(c.named) + ":"), std::string::npos) << message;
  }
  // The values MoE configs write for "none" signal nothing.
  EXPECT_EQ(refusal(tiny({{"decoder_sparse_step", 1},
                          {"mlp_only_layers", json::array()},
                          {"is_encoder_decoder", false}})),
            "accepted");
  // A required field the config omits has no class default to fall back on.
  json no_heads = tiny(json::object());
  no_heads.erase("num_attention_heads");
  EXPECT_NE(refusal(no_heads).find("the generic path (model_type unmapped_tiny is not mapped) "
                                   "gives it no default"),
            std::string::npos);
}

TEST(GenericPath, SlidingWindowFollowsTheStandardFields) {
  // Below max_position_embeddings without layer_types: every layer slides.
  const ModelSpec every = model_spec_from_hf_config(tiny({{"sliding_window", 512}}), nullptr, "a");
  for (const LayerSpec& l : every.layers) EXPECT_EQ(l.attention, AttentionKind::SlidingWindow);
  // use_sliding_window false keeps full attention (Qwen's convention).
  const ModelSpec off = model_spec_from_hf_config(
      tiny({{"sliding_window", 512}, {"use_sliding_window", false}}), nullptr, "b");
  for (const LayerSpec& l : off.layers) EXPECT_EQ(l.attention, AttentionKind::Full);
}

// Every plan says it took the generic path and what it assumed, and where its weights came
// from (the breakdown's messages feed the text, JSON, Python and HTML outputs).
TEST(GenericPath, ThePlanStatesTheAssumptions) {
  auto spec = std::make_shared<ModelSpec>(generic("meta-llama__Meta-Llama-3.1-8B.json"));
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  EngineConfig config;
  config.max_model_len = 4096;
  auto note = [&](const std::shared_ptr<const ModelSpec>& s) {
    const CompiledLaunch launch(s, hw, config);
    const Breakdown b = launch.breakdown(launch_knobs(config));
    for (const std::string& m : b.messages) {
      if (m.rfind("generic: model_type unmapped_llama is not mapped; assumed ", 0) == 0) return m;
    }
    return std::string();
  };
  const std::string fields = note(spec);
  EXPECT_NE(fields.find("K and V of 8 KV heads x head_dim 128 per layer, all full attention"),
            std::string::npos)
      << fields;
  EXPECT_NE(fields.find("no tensor headers read"), std::string::npos) << fields;
  spec->checkpoint_bytes = 2 * 8030261248LL;
  EXPECT_NE(note(spec).find("exact from the checkpoint's tensor headers"), std::string::npos);
}
