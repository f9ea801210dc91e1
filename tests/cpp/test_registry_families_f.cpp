// Architectures of vLLM 0.33's registry mapped in issue 36 (helper f): Gemma-3n (its text model
// and the wrapper with its MobileNet-V5 and USM Conformer towers) and Qwen3-Omni's thinker. Per
// checkpoint: the KV bytes per token by hand from the attention layers vLLM builds, the
// parameters by hand from the module shapes, checked against published counts.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "vramplan/architectures.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::config_json;
using vramplan_test::config_path;
using vramplan_test::expect_published;
using vramplan_test::kv_bf16;
using vramplan_test::spec_error_of;

namespace {

// Gemma-3n's text model as vLLM 0.33's gemma3n.py builds it (h 2048, 8 query heads and 2 KV heads
// of 256, per-layer inputs 256, AltUp of 4 streams, LAuReL rank 64, vocabularies 262,400 and
// 262,144, the head tied to the embeddings):
//   embed_tokens 262,400 x 2,048; embed_tokens_per_layer 262,144 x (layers x 256);
//   per_layer_model_projection [layers x 256, 2,048]; per_layer_projection_norm [256];
//   altup_projections and altup_unembed_projections 2 x 3 x [2,048, 2,048]; the final norm.
//   Per layer: q_proj [2,048, 2,048] and o_proj [2,048, 2,048], q_norm [256]; a layer with its
//   own KV adds k/v_proj 2 x [512, 2,048] and k_norm [256] (v_norm has no weight); the GeGLU MLP
//   3 x 2,048 x width; per_layer_input_gate [256, 2,048] and per_layer_projection [2,048, 256];
//   AltUp correction_coefs [4, 4], prediction_coefs [16, 4], modality_router [4, 2,048],
//   router_norm and correct_output_scale [2,048]; LAuReL linear_left [64, 2,048], linear_right
//   [2,048, 64], post_laurel_norm [2,048]; input, post-attention, pre- and post-feedforward and
//   post-per-layer-input norms [2,048].
constexpr std::int64_t kH = 2048;
constexpr std::int64_t kKvWeights = 2 * kH * 512 + 256;  // k/v_proj and k_norm

std::int64_t gemma3n_layer(std::int64_t width, bool own_kv) {
  const std::int64_t attention = 2 * kH * kH + 256 + (own_kv ? kKvWeights : 0);
  const std::int64_t mlp = 3 * kH * width;
  const std::int64_t per_layer_input = 2 * kH * 256;
  const std::int64_t altup = 4 * 4 + 16 * 4 + 4 * kH + 2 * kH;
  const std::int64_t laurel = 2 * kH * 64 + kH;
  return attention + mlp + per_layer_input + altup + laurel + 5 * kH;
}

std::int64_t gemma3n_text(std::int64_t layers, std::int64_t width, std::int64_t shared) {
  const std::int64_t embeddings = std::int64_t{262400} * kH + std::int64_t{262144} * layers * 256 +
                                  layers * 256 * kH + 256 + 6 * kH * kH + kH;
  return embeddings + (layers - shared) * gemma3n_layer(width, true) +
         shared * gemma3n_layer(width, false);
}

ModelSpec gemma3n_with(const char* name, const char* key, const nlohmann::json& value) {
  nlohmann::json config = config_json(name);
  config[key] = value;
  return model_spec_from_hf_config(config, nullptr, "<gemma3n>");
}

}  // namespace

// google/gemma-3n-E2B: 30 layers, 4 sliding then 1 full (x6), the last 10 reading the KV of
// layers 18 (sliding) and 19 (full). Layers 0-19 keep 2 KV heads x 256: 2 x 2 x 256 x 2 B =
// 2,048 B each, 40,960 B a token; TP 2 (one KV head a rank): 20,480.
TEST(RegistryFamiliesF, Gemma3nE2bKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("google__gemma-3n-E2B-it.text_config.json"));
  EXPECT_EQ(spec.model_type, "gemma3n_text");
  ASSERT_EQ(spec.layers.size(), 30U);
  EXPECT_EQ(spec.layers[18].attention, AttentionKind::SlidingWindow);
  EXPECT_EQ(spec.layers[19].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[19].sliding_window, 0);
  EXPECT_EQ(spec.layers[18].sliding_window, 512);
  EXPECT_FALSE(spec.layers[19].kv_shared);
  EXPECT_TRUE(spec.layers[20].kv_shared);
  EXPECT_TRUE(spec.layers[29].kv_shared);
  EXPECT_EQ(kv_bf16(spec), 20 * 2 * 2 * 256 * 2);
  EXPECT_EQ(kv_bf16(spec, 2), 20 * 2 * 1 * 256 * 2);
}

// The groups vLLM forms from the 20 layers with a cache: 16 sliding and 4 full, one page size
// (16 x 2,048 = 32,768 B) -> group size 4, four sliding groups and one full. One 4,096-token
// request with 2,048 batched tokens: sliding ceil((511 + 2,048) / 16) + 1 = 161 blocks per group
// (x4 = 644), full 4,096 / 16 = 256: 900 blocks.
TEST(RegistryFamiliesF, Gemma3nE2bKvGroupsByHand) {
  const ModelSpec spec = load_hf_config(config_path("google__gemma-3n-E2B-it.text_config.json"));
  KvCacheOptions o;
  o.kv_element_bytes = 2;
  const KvGeometry geometry = kv_geometry(spec, o);
  EXPECT_EQ(geometry.group_size, 4);
  EXPECT_EQ(geometry.groups.size(), 5U);
  const KvPage page = kv_page(geometry, 16, 2);
  EXPECT_EQ(page.page_bytes, 32768);
  EXPECT_EQ(kv_blocks_per_request(geometry, page, 4096, 2048), 900);
}

// google/gemma-3n-E4B: 35 layers, the last 15 KV-shared; the same 20 layers with a cache.
TEST(RegistryFamiliesF, Gemma3nE4bKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("google__gemma-3n-E4B-it.text_config.json"));
  ASSERT_EQ(spec.layers.size(), 35U);
  EXPECT_FALSE(spec.layers[19].kv_shared);
  EXPECT_TRUE(spec.layers[20].kv_shared);
  EXPECT_EQ(kv_bf16(spec), 20 * 2 * 2 * 256 * 2);
}

// Parameters by hand (gemma3n_text above): E2B 4,435,182,688 as vLLM builds it; its checkpoint
// also stores k_proj, v_proj and k_norm of the 10 KV-shared layers (gemma3n.py drops them at
// load): 10 x 2,097,408 more, 4,456,156,768 (the published "4.46b text parameters" of an export
// of google/gemma-3n-E2B-it's language model). E4B: 6,835,235,568, its checkpoint 15 x 2,097,408
// more, 6,866,696,688. KerasHub publishes the whole checkpoints (towers included, the same
// MobileNet-V5 and audio tower in both) as 5,439,595,456 and 7,850,135,376 parameters: their
// difference is the text models' exactly.
TEST(RegistryFamiliesF, Gemma3nParametersByHandAgainstPublishedTotals) {
  const ModelSpec e2b = load_hf_config(config_path("google__gemma-3n-E2B-it.text_config.json"));
  const ModelSpec e4b = load_hf_config(config_path("google__gemma-3n-E4B-it.text_config.json"));
  EXPECT_EQ(parameter_count(e2b), gemma3n_text(30, 8192, 10));
  EXPECT_EQ(parameter_count(e2b), std::int64_t{4435182688});
  EXPECT_EQ(parameter_count(e4b), gemma3n_text(35, 16384, 15));
  EXPECT_EQ(parameter_count(e4b), std::int64_t{6835235568});
  const std::int64_t e2b_checkpoint = parameter_count(e2b) + 10 * kKvWeights;
  const std::int64_t e4b_checkpoint = parameter_count(e4b) + 15 * kKvWeights;
  expect_published(e2b_checkpoint, 4.46e9);
  EXPECT_EQ(e4b_checkpoint - e2b_checkpoint, std::int64_t{7850135376} - std::int64_t{5439595456});
}

// transformers' Gemma3nTextConfig keeps one MLP width a layer (MatFormer): a mixed list plans
// each layer's width; a list of the wrong length or holding a non-integer is a named error.
TEST(RegistryFamiliesF, Gemma3nPerLayerMlpWidths) {
  nlohmann::json widths = nlohmann::json::array();
  for (int i = 0; i < 30; ++i) widths.push_back(i < 15 ? 8192 : 16384);
  const ModelSpec mixed =
      gemma3n_with("google__gemma-3n-E2B-it.text_config.json", "intermediate_size", widths);
  EXPECT_EQ(mixed.layers[14].intermediate_size, 8192);
  EXPECT_EQ(mixed.layers[15].intermediate_size, 16384);
  const ModelSpec plain = load_hf_config(config_path("google__gemma-3n-E2B-it.text_config.json"));
  EXPECT_EQ(parameter_count(mixed) - parameter_count(plain), kH * 15 * 3 * 8192);
  const ModelSpec scalar =
      gemma3n_with("google__gemma-3n-E2B-it.text_config.json", "intermediate_size", 8192);
  EXPECT_EQ(parameter_count(scalar), parameter_count(plain));

  const SpecError short_list = spec_error_of([] {
    (void)gemma3n_with("google__gemma-3n-E2B-it.text_config.json", "intermediate_size",
                       nlohmann::json::array({8192, 8192}));
  });
  EXPECT_EQ(short_list.field_path(), "intermediate_size");
  const SpecError text = spec_error_of([] {
    (void)gemma3n_with("google__gemma-3n-E2B-it.text_config.json", "intermediate_size",
                       nlohmann::json::array({"wide"}));
  });
  EXPECT_EQ(text.field_path(), "intermediate_size");
}

// Only Gemma-3n's rule reads an intermediate_size list; another family's list is a named error.
TEST(RegistryFamiliesF, IntermediateSizeListOutsideGemma3nIsRefused) {
  const SpecError e = spec_error_of([] {
    (void)model_spec_from_hf_config(
        nlohmann::json::parse(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": [128, 128], "vocab_size": 100,
            "max_position_embeddings": 64})"),
        nullptr, "<llama>");
  });
  EXPECT_EQ(e.field_path(), "intermediate_size");
}

// What vLLM's gemma3n.py refuses (another activation; altup_correct_scale false) and a KV-shared
// count that leaves no layer its own KV are refused by name; without layer_types the config
// class's 4 sliding + 1 full pattern applies.
TEST(RegistryFamiliesF, Gemma3nRefusalsAndDefaults) {
  const char* e2b = "google__gemma-3n-E2B-it.text_config.json";
  EXPECT_EQ(
      spec_error_of([&] { (void)gemma3n_with(e2b, "hidden_activation", "silu"); }).field_path(),
      "hidden_activation");
  EXPECT_EQ(
      spec_error_of([&] { (void)gemma3n_with(e2b, "altup_correct_scale", false); }).field_path(),
      "altup_correct_scale");
  EXPECT_EQ(
      spec_error_of([&] { (void)gemma3n_with(e2b, "num_kv_shared_layers", 30); }).field_path(),
      "num_kv_shared_layers");
  nlohmann::json config = config_json(e2b);
  config.erase("layer_types");
  const ModelSpec derived = model_spec_from_hf_config(config, nullptr, "<gemma3n>");
  const ModelSpec listed = load_hf_config(config_path(e2b));
  for (std::size_t i = 0; i < listed.layers.size(); ++i) {
    EXPECT_EQ(derived.layers[i].attention, listed.layers[i].attention) << i;
  }
}

// Qwen3-Omni-30B-A3B's thinker as vLLM 0.33's qwen3_omni_moe_thinker.py builds it (talker and
// code2wav are not built):
//   text (Qwen3MoeLLMForCausalLM, h 2048, 48 layers): q [4096, 2048], k/v [512, 2048] each, o
//     [2048, 4096], q/k norms 2 x 128 = 18,874,624; router [128, 2048] 262,144; experts 128 x 3 x
//     768 x 2048 = 603,979,776; two norms 4,096 -> 623,120,640 a layer, 29,909,790,720; untied
//     embeddings and head 2 x 152,064 x 2,048 = 622,854,144; final norm 2,048: 30,532,646,912 (the
//     published Qwen3-30B-A3B's 30,532,122,624 with 128 more vocabulary rows in each table).
//   audio (Qwen3OmniMoeAudioEncoder, d 1280, 32 layers, 480 channels): conv2d1 480 x 9 + 480,
//     conv2d2 / conv2d3 480 x 480 x 9 + 480 each = 4,152,960; conv_out [1280, 480 x 16] 9,830,400;
//     a layer: qkv 3 x 1280^2 + 3,840, out_proj 1280^2 + 1,280, fc1 1280 x 5120 + 5,120, fc2 +
//     1,280, two LayerNorms 5,120 = 19,677,440 (x32 = 629,678,080); ln_post 2,560; proj1 1280^2 +
//     1,280; proj2 [2048, 1280] + 2,048: 647,927,168.
//   vision (Qwen3Omni_VisionTransformer, e 1152, 27 blocks, patch 16): patch conv 3 x 2 x 16 x 16 x
//     1152 + 1,152; positions (768 / 16)^2 x 1152 = 2,654,208; a block: qkv 3 x 1152^2 + 3,456,
//     proj 1152^2 + 1,152, fc1 1152 x 4304 + 4,304, fc2 + 1,152, two LayerNorms 4,608 =
//     15,239,504; the merger: LayerNorm 2,304, [4608 -> 4608] and [4608 -> 2048] biased =
//     30,679,808; three deepstack mergers, their LayerNorm over 4608: 3 x 30,686,720:
//     538,631,408.
//   31,719,205,488 in all: the published n_parameters of Qwen/Qwen3-Omni-30B-A3B-Thinking, the
//   thinker-only checkpoint of the same shapes.
// KV: 48 layers x 2 x 4 x 128 x 2 B = 98,304 B a token.
TEST(RegistryFamiliesF, Qwen3OmniThinkerByHandAgainstPublished) {
  const ModelSpec spec = load_hf_config(config_path("Qwen__Qwen3-Omni-30B-A3B-Instruct.json"));
  EXPECT_EQ(spec.model_type, "qwen3_omni_moe_text");
  const std::int64_t audio = 647927168;
  const std::int64_t vision = 538631408;
  EXPECT_EQ(spec.vision.audio_parameters, audio);
  EXPECT_EQ(spec.vision.num_parameters, audio + vision);
  EXPECT_EQ(parameter_count(spec) - spec.vision.num_parameters, std::int64_t{30532646912});
  EXPECT_EQ(parameter_count(spec), std::int64_t{31719205488});
  EXPECT_EQ(kv_bf16(spec), 48 * 2 * 4 * 128 * 2);
  EXPECT_EQ(spec.mrope, MropeKind::Standard);  // Qwen3MoeLLMForCausalLM's MRotaryEmbedding
  // The thinker takes video through its vision tower and audio through its encoder, neither
  // profile modelled.
  EXPECT_EQ(spec.vision.unmodelled_modalities, (std::vector<std::string>{"video", "audio"}));
}

// vLLM sizes the vision position table from image_size / patch_size and builds the deepstack
// mergers the list names: a config without either is refused by name.
TEST(RegistryFamiliesF, Qwen3OmniVisionKeysAreRequired) {
  for (const char* key : {"image_size", "deepstack_visual_indexes"}) {
    nlohmann::json config = config_json("Qwen__Qwen3-Omni-30B-A3B-Instruct.json");
    config["thinker_config"]["vision_config"].erase(key);
    const SpecError e =
        spec_error_of([&] { (void)model_spec_from_hf_config(config, nullptr, "<o>"); });
    EXPECT_EQ(e.field_path(), std::string("thinker_config.vision_config.") + key);
  }
}

// google/gemma-3n-E2B(-it) as vLLM 0.33's gemma3n_mm.py builds it: Gemma3nForCausalLM over
// text_config (4,435,182,688 above), and under _mark_tower_model
//   vision: timm's mobilenetv5_300m_enc, 294,284,096 parameters (KerasHub's preset of it), and
//     embed_vision: embedding [128, 2048], hard and soft RMSNorms [2048], embedding_projection
//     [2048, 2048] = 262,144 + 4,096 + 4,194,304 = 4,460,544;
//   audio: the USM Conformer (h 1536, 8 heads, 12 blocks, kernel 5): conv_0 128 x 1 x 3 x 3 and
//     its norm 128, conv_1 32 x 128 x 3 x 3 and its norm 32; 128 mel bins -> (130 - 3) / 2 + 1 =
//     64 -> (66 - 3) / 2 + 1 = 32 frequencies, input_proj [1536, 32 x 32]: 1,611,040. A block:
//     two feed-forwards 2 x (2 x 1,536 + 2 x 4 x 1,536^2) = 2 x 18,877,440; attention 2 x 1,536 +
//     5 x 1,536^2 (q, k, v, pos_proj, post) + 192 (per_dim_scale) = 11,799,744; light conv
//     2 x 1,536 + 2 x 1,536^2 + 1,536 x 5 + 1,536^2 = 7,088,640; the block norm 1,536:
//     56,644,800, x12 = 679,737,600 -> 681,348,640; embed_audio: [128, 1536], two norms, [2048,
//     1536] = 196,608 + 3,072 + 3,145,728 = 3,345,408.
// The checkpoint (the text model's 4,456,156,768 with the KV-shared layers' K/V) plus these
// towers is KerasHub's published total, 5,439,595,456, exactly.
TEST(RegistryFamiliesF, Gemma3nWrapperTowersByHandAgainstPublishedTotal) {
  const ModelSpec spec = load_hf_config(config_path("google__gemma-3n-E2B-it.json"));
  EXPECT_EQ(spec.model_type, "gemma3n_text");
  const std::int64_t vision = 294284096 + 4460544;
  const std::int64_t audio = 681348640 + 3345408;
  EXPECT_EQ(spec.vision.audio_parameters, audio);
  EXPECT_EQ(spec.vision.num_parameters, vision + audio);
  EXPECT_EQ(parameter_count(spec) - spec.vision.num_parameters, std::int64_t{4435182688});
  EXPECT_EQ(parameter_count(spec) + 10 * kKvWeights, std::int64_t{5439595456});
  EXPECT_EQ(kv_bf16(spec), 20 * 2 * 2 * 256 * 2);
}

// A timm architecture other than the one sized, or sscp lists not written out, are refused by
// name.
TEST(RegistryFamiliesF, Gemma3nWrapperRefusals) {
  nlohmann::json config = config_json("google__gemma-3n-E2B-it.json");
  config["vision_config"]["architecture"] = "mobilenetv5_base";
  EXPECT_EQ(
      spec_error_of([&] { (void)model_spec_from_hf_config(config, nullptr, "<g>"); }).field_path(),
      "vision_config.architecture");
  config = config_json("google__gemma-3n-E2B-it.json");
  config["audio_config"].erase("sscp_conv_kernel_size");
  EXPECT_EQ(
      spec_error_of([&] { (void)model_spec_from_hf_config(config, nullptr, "<g>"); }).field_path(),
      "audio_config.sscp_conv_kernel_size");
  config = config_json("google__gemma-3n-E2B-it.json");
  config["audio_config"]["sscp_conv_channel_size"] = nlohmann::json::array({128});
  EXPECT_EQ(
      spec_error_of([&] { (void)model_spec_from_hf_config(config, nullptr, "<g>"); }).field_path(),
      "audio_config.sscp_conv_channel_size");
}
