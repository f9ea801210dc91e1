// Multimodal wrappers of vLLM 0.33's registry whose language model is a mapped family and whose
// tower is a CLIP, SigLIP or InternViT: LLaVA-NeXT-Video (llava_next_video.py), LLaVA-OneVision
// (llava_onevision.py), PaliGemma (paligemma.py), Idefics3 and SmolVLM (idefics3.py,
// smolvlm.py), InternVL (internvl.py; interns1.py for transformers' format). Per tower type the
// parameters are derived by hand against the tower's published count (CLIP ViT-L/14-336 303.5 M,
// SigLIP so400m 428 M, InternViT-300M 304 M), then against what vLLM builds of it (layers up to the
// feature layer, no post-LayerNorm, no pooling head); per checkpoint the text KV bytes per token by
// hand and the whole count against the published one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "test_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/knobs.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::config_json;
using vramplan_test::config_path;
using vramplan_test::expect_published;
using vramplan_test::kv_bf16;
using vramplan_test::linear;

namespace {

// A LayerNorm's weight and bias.
std::int64_t layer_norm(std::int64_t width) { return 2 * width; }

// One ViT block: biased q/k/v/o (4h^2 + 4h), biased fc1/fc2 (2 h inter + inter + h), two
// LayerNorms (4h).
std::int64_t vit_block(std::int64_t h, std::int64_t inter) {
  return 4 * h * h + 4 * h + 2 * h * inter + inter + h + 4 * h;
}

// CLIP embeddings: class vector, unbiased patch convolution, (patches + 1) positions,
// pre-LayerNorm.
std::int64_t clip_embeddings(std::int64_t h, std::int64_t image, std::int64_t patch) {
  const std::int64_t side = image / patch;
  return h + 3 * patch * patch * h + (side * side + 1) * h + 2 * h;
}

// SigLIP embeddings: biased patch convolution, one position per patch.
std::int64_t siglip_embeddings(std::int64_t h, std::int64_t image, std::int64_t patch) {
  const std::int64_t side = image / patch;
  return 3 * patch * patch * h + h + side * side * h;
}

// SigLIP's attention-pooling head (vLLM does not build it): probe, in/out projections with
// biases, LayerNorm, biased MLP.
std::int64_t siglip_head(std::int64_t h, std::int64_t inter) {
  return h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (2 * h * inter + inter + h);
}

// A Llama-layout decoder (no biases, SwiGLU, two RMSNorms a layer, final norm).
std::int64_t llama_text(std::int64_t vocab, std::int64_t h, std::int64_t layers, std::int64_t heads,
                        std::int64_t kv_heads, std::int64_t head_dim, std::int64_t inter,
                        bool tied) {
  const std::int64_t layer = h * heads * head_dim + 2 * h * kv_heads * head_dim +
                             heads * head_dim * h + 3 * h * inter + 2 * h;
  return (tied ? 1 : 2) * vocab * h + layers * layer + h;
}

}  // namespace

// CLIP ViT-L/14-336 (openai/clip-vit-large-patch14-336, 303.5 M in its vision model): 24 blocks
// of width 1024, MLP 4096; 24 x 24 patches + CLS. The llava-1.5-7b-hf config takes
// vision_feature_layer -2: vLLM builds 23 blocks and no post-LayerNorm (llava.py
// init_vision_tower_for_llava, require_post_norm=False), then linear_1 [1024 -> 4096] and
// linear_2 [4096 -> 4096], both biased (multimodal_projector_bias defaults to true).
TEST(RegistryMultimodal, ClipTowerOfLlava15ByHand) {
  const std::int64_t clip_l_336 =
      24 * vit_block(1024, 4096) + clip_embeddings(1024, 336, 14) + layer_norm(1024);
  expect_published(clip_l_336, 303.5e6, 4);
  const std::int64_t projector = linear(1024, 4096, true) + linear(4096, 4096, true);
  const std::int64_t vllm_tower = 23 * vit_block(1024, 4096) + clip_embeddings(1024, 336, 14);
  const ModelSpec spec = load_hf_config(config_path("llava-hf__llava-1.5-7b-hf.json"));
  EXPECT_EQ(spec.vision.num_parameters, vllm_tower + projector);
  // The checkpoint holds the whole CLIP: Vicuna-7B (vocab 32064) + CLIP + projector is the
  // model card's 7.06 B.
  const std::int64_t text = llama_text(32064, 4096, 32, 32, 32, 128, 11008, false);
  expect_published(text + clip_l_336 + projector, 7.06e9);
  EXPECT_EQ(parameter_count(spec), text + vllm_tower + projector);
}

// LLaVA-NeXT-Video-7B: the same CLIP up to layer -2 and projector, and no image_newline
// (llava_next_video.py builds none, unlike LLaVA-Next). Vicuna-7B: 32 layers of 32 KV heads x
// 128: 2 x 32 x 128 x 2 B = 16,384 B a layer, 524,288 B a token.
TEST(RegistryMultimodal, LlavaNextVideo7bByHand) {
  const ModelSpec spec = load_hf_config(config_path("llava-hf__LLaVA-NeXT-Video-7B-hf.json"));
  const std::int64_t projector = linear(1024, 4096, true) + linear(4096, 4096, true);
  const std::int64_t vllm_tower = 23 * vit_block(1024, 4096) + clip_embeddings(1024, 336, 14);
  EXPECT_EQ(spec.vision.num_parameters, vllm_tower + projector);
  const std::int64_t text = llama_text(32064, 4096, 32, 32, 32, 128, 11008, false);
  EXPECT_EQ(parameter_count(spec), text + vllm_tower + projector);
  // Published 7.06 B: the checkpoint's whole CLIP (24 blocks + post-LayerNorm), the projector
  // and transformers' image_newline [4096].
  const std::int64_t clip_l_336 =
      24 * vit_block(1024, 4096) + clip_embeddings(1024, 336, 14) + layer_norm(1024);
  expect_published(text + clip_l_336 + projector + 4096, 7.06e9);
  EXPECT_EQ(kv_bf16(spec), 32 * 2 * 32 * 128 * 2);
}

// SigLIP so400m/14-384 (google/siglip-so400m-patch14-384, 428 M in its vision model with the
// pooling head): 27 blocks of width 1152, MLP 4304, 27 x 27 patches.
TEST(RegistryMultimodal, SiglipSo400mTowerByHand) {
  const std::int64_t with_head = 27 * vit_block(1152, 4304) + siglip_embeddings(1152, 384, 14) +
                                 layer_norm(1152) + siglip_head(1152, 4304);
  expect_published(with_head, 428e6);
}

// LLaVA-OneVision-0.5B: SigLIP so400m cut to 26 blocks in the checkpoint, feature layer -1 (all
// 26), no post-LayerNorm in vLLM; projector [1152 -> 896 -> 896] biased; image_newline [896].
// Qwen2-0.5B: 24 layers of 2 KV heads x 64: 2 x 2 x 64 x 2 B = 512 B a layer, 12,288 B a token.
TEST(RegistryMultimodal, LlavaOnevision05bByHand) {
  const ModelSpec spec = load_hf_config(
      config_path("published_values/llava-hf__llava-onevision-qwen2-0.5b-ov-hf.json"));
  const std::int64_t encoder = 26 * vit_block(1152, 4304) + siglip_embeddings(1152, 384, 14);
  const std::int64_t projector = linear(1152, 896, true) + linear(896, 896, true);
  EXPECT_EQ(spec.vision.num_parameters, encoder + projector + 896);
  // Qwen2: q/k/v biased; tied embedding [151936, 896].
  const std::int64_t layer = linear(896, 896, true) + 2 * linear(896, 128, true) +
                             linear(896, 896, false) + 3 * linear(896, 4864, false) +
                             std::int64_t{2} * 896;
  const std::int64_t text = linear(896, 151936, false) + 24 * layer + 896;
  EXPECT_EQ(parameter_count(spec), text + encoder + projector + 896);
  // Published 894 M: the checkpoint also holds the post-LayerNorm vLLM skips.
  expect_published(text + encoder + layer_norm(1152) + projector + 896, 894e6);
  EXPECT_EQ(kv_bf16(spec), 24 * 2 * 2 * 64 * 2);
}

// PaliGemma-3B-224: every SigLIP so400m block, 16 x 16 patches, the post-LayerNorm, and a biased
// linear [1152 -> 2048] (paligemma.py). The vision config omits image_size: SiglipVisionConfig's
// 224 applies and the spec says so. Gemma-2B: 18 layers of 1 KV head x 256: 2 x 256 x 2 B =
// 1,024 B a layer, 18,432 B a token. Each 224 x 224 image is 256 encoder tokens and 256 LM
// embeddings.
TEST(RegistryMultimodal, PaliGemma3bByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/google__paligemma-3b-pt-224.json"));
  const std::int64_t tower = 27 * vit_block(1152, 4304) + siglip_embeddings(1152, 224, 14) +
                             layer_norm(1152) + linear(1152, 2048, true);
  EXPECT_EQ(spec.vision.num_parameters, tower);
  // Gemma: tied embedding [257216, 2048], 8 query heads x 256, 1 KV head, GeGLU 16384.
  const std::int64_t text = llama_text(257216, 2048, 18, 8, 1, 256, 16384, true);
  EXPECT_EQ(parameter_count(spec), text + tower);
  expect_published(text + tower, 2.92e9);
  EXPECT_EQ(kv_bf16(spec), 18 * 2 * 1 * 256 * 2);
  EXPECT_EQ(spec.vision.image_tokens_per_item, 256);
  EXPECT_EQ(spec.vision.encoder_tokens_per_item, 256);
  EXPECT_EQ(spec.vision.pixel_values_per_item, 3 * 224 * 224);
  EXPECT_EQ(spec.vision.encoder_hidden_size, 1152);
  EXPECT_EQ(spec.vision.encoder_intermediate_size, 4304);
  EXPECT_FALSE(spec.vision.encoder_gated_mlp);
  const auto& d = spec.config_defaults;
  EXPECT_NE(std::find(d.begin(), d.end(), "vision_config.image_size = 224 (SiglipVisionConfig)"),
            d.end());
}

// PaliGemma's image profile in a vLLM 0.19 launch served in bfloat16 (2 B): per image the
// encoder cache holds 256 embeddings of the text width 2048 (1,048,576 B), pixel_values
// 3 x 224 x 224 values (301,056 B), and the SigLIP forward peaks in its MLP: 256 patches x 2 B x
// (fc1 and GELU 2 x 4304 + residual and normed input 2 x 1152) = 5,586,944 B.
TEST(RegistryMultimodal, PaliGemmaEncoderProfileByHand) {
  const auto spec = std::make_shared<const ModelSpec>(
      load_hf_config(config_path("published_values/google__paligemma-3b-pt-224.json")));
  EngineConfig config;
  config.engine_version = "0.19.0";
  config.dtype = "bfloat16";
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  const CompiledLaunch launch(spec, hw, config);
  const EncoderProfileModel& encoder = launch.ranks().front().encoder;
  EXPECT_EQ(encoder.tokens_per_item, 256);
  EXPECT_EQ(encoder.cache_bytes_per_item, 256 * 2048 * 2);
  EXPECT_EQ(encoder.input_bytes_per_item, 3 * 224 * 224 * 2);
  EXPECT_EQ(encoder.forward_bytes_per_item, 256 * 2 * (2 * 4304 + 2 * 1152));
}

// Idefics3-8B: the SigLIP-style encoder at 364 px (26 x 26 patches) with its post-LayerNorm, and
// the connector's pixel shuffle (scale_factor 2: 4 patches a token) into an unbiased linear
// [4 x 1152 -> 4096] (idefics3.py). Llama-3-8B with vocab 128259: 32 layers of 8 KV heads x
// 128: 2 x 8 x 128 x 2 B = 4,096 B a layer, 131,072 B a token.
TEST(RegistryMultimodal, Idefics3_8bByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/HuggingFaceM4__Idefics3-8B-Llama3.json"));
  const std::int64_t tower = 27 * vit_block(1152, 4304) + siglip_embeddings(1152, 364, 14) +
                             layer_norm(1152) + linear(std::int64_t{4} * 1152, 4096, false);
  EXPECT_EQ(spec.vision.num_parameters, tower);
  const std::int64_t text = llama_text(128259, 4096, 32, 32, 8, 128, 14336, false);
  EXPECT_EQ(parameter_count(spec), text + tower);
  expect_published(text + tower, 8.46e9);
  EXPECT_EQ(kv_bf16(spec), 32 * 2 * 8 * 128 * 2);
}

// SmolVLM-256M (Idefics3ForConditionalGeneration) and SmolVLM2-256M (SmolVLMForConditional-
// Generation, the same modules): SigLIP-B/16 at 512 px (32 x 32 patches, 12 blocks of 768, MLP
// 3072) with its post-LayerNorm, pixel shuffle by 4 (16 patches a token) into [16 x 768 -> 576].
// SmolLM2-135M text, untied: 30 layers of 3 KV heads x 64: 2 x 3 x 64 x 2 B = 768 B a layer,
// 23,040 B a token.
TEST(RegistryMultimodal, SmolVlm256mByHand) {
  for (const char* name : {"published_values/HuggingFaceTB__SmolVLM-256M-Instruct.json",
                           "published_values/HuggingFaceTB__SmolVLM2-256M-Video-Instruct.json"}) {
    SCOPED_TRACE(name);
    const ModelSpec spec = load_hf_config(config_path(name));
    const std::int64_t tower = 12 * vit_block(768, 3072) + siglip_embeddings(768, 512, 16) +
                               layer_norm(768) + linear(std::int64_t{16} * 768, 576, false);
    EXPECT_EQ(spec.vision.num_parameters, tower);
    const std::int64_t text = llama_text(49280, 576, 30, 9, 3, 64, 1536, false);
    EXPECT_EQ(parameter_count(spec), text + tower);
    expect_published(text + tower, 256e6);
    EXPECT_EQ(kv_bf16(spec), 30 * 2 * 3 * 64 * 2);
  }
}

// InternViT-300M-448px (OpenGVLab, 304 M): 24 blocks of width 1024, MLP 4096, biased qkv and
// proj, two LayerNorms and two layer scales a block; a class vector, a biased 14 x 14 patch
// convolution, 32 x 32 + 1 positions. InternVL3-1B (internvl.py): select_layer -1 builds all
// 24; mlp1 = LayerNorm [4096] (pixel shuffle by 2: 4 x 1024), [4096 -> 896] and [896 -> 896],
// biased. Its llm_config is Qwen2.5-0.5B (vocab 151674, untied as the top-level flag says): 24
// layers of 2 KV heads x 64: 2 x 2 x 64 x 2 B = 512 B a layer, 12,288 B a token.
TEST(RegistryMultimodal, InternVl3_1bByHand) {
  const std::int64_t block = linear(1024, std::int64_t{3} * 1024, true) + linear(1024, 1024, true) +
                             linear(1024, 4096, true) + linear(4096, 1024, true) +
                             2 * layer_norm(1024) + std::int64_t{2} * 1024;
  const std::int64_t embeddings = 1024 + linear(std::int64_t{3} * 14 * 14, 1024, true) +
                                  linear(std::int64_t{32} * 32 + 1, 1024, false);
  const std::int64_t intern_vit_300m = 24 * block + embeddings;
  expect_published(intern_vit_300m, 304e6);
  const std::int64_t mlp1 = layer_norm(4096) + linear(4096, 896, true) + linear(896, 896, true);
  const ModelSpec spec = load_hf_config(config_path("OpenGVLab__InternVL3-1B.json"));
  EXPECT_EQ(spec.vision.num_parameters, intern_vit_300m + mlp1);
  const std::int64_t layer = linear(896, 896, true) + 2 * linear(896, 128, true) +
                             linear(896, 896, false) + 3 * linear(896, 4864, false) +
                             std::int64_t{2} * 896;
  const std::int64_t text = 2 * linear(896, 151674, false) + 24 * layer + 896;
  EXPECT_EQ(parameter_count(spec), text + intern_vit_300m + mlp1);
  expect_published(text + intern_vit_300m + mlp1, 938e6);
  EXPECT_EQ(kv_bf16(spec), 24 * 2 * 2 * 64 * 2);
}

// InternVL3-1B in transformers' format (interns1.py with interns1_vit.py): the same shapes
// under other names (separate q/k/v, lambda_1/lambda_2, use_mean_pooling: no final LayerNorm),
// so the same tower and projector, and the same text.
TEST(RegistryMultimodal, InternVl3_1bHfMatchesTheRemoteCodeLayout) {
  const ModelSpec hf =
      load_hf_config(config_path("published_values/OpenGVLab__InternVL3-1B-hf.json"));
  const ModelSpec remote = load_hf_config(config_path("OpenGVLab__InternVL3-1B.json"));
  EXPECT_EQ(hf.vision.num_parameters, remote.vision.num_parameters);
  EXPECT_EQ(parameter_count(hf), parameter_count(remote));
  EXPECT_EQ(kv_bf16(hf), 24 * 2 * 2 * 64 * 2);
  // A final LayerNorm without mean pooling, a mask vector with use_mask_token.
  nlohmann::json config = config_json("published_values/OpenGVLab__InternVL3-1B-hf.json");
  config["vision_config"]["use_mean_pooling"] = false;
  config["vision_config"]["use_mask_token"] = true;
  const ModelSpec pooled = model_spec_from_hf_config(config, nullptr, "<internvl>");
  EXPECT_EQ(pooled.vision.num_parameters, remote.vision.num_parameters + layer_norm(1024) + 1024);
}

// AWQ checkpoints of these wrappers keep their projectors unquantized by name ("mlp1",
// "connector"): vLLM builds them as plain Linears, so the entries change nothing and the text
// stays 4-bit.
TEST(RegistryMultimodal, ProjectorSkipEntriesChangeNothing) {
  for (const auto& [name, projector] : std::vector<std::pair<std::string, std::string>>{
           {"OpenGVLab__InternVL3-1B.json", "mlp1"},
           {"published_values/HuggingFaceM4__Idefics3-8B-Llama3.json", "model.connector"}}) {
    SCOPED_TRACE(name);
    nlohmann::json config = config_json(name);
    config["quantization_config"] = {
        {"quant_method", "awq"}, {"bits", 4},
        {"group_size", 128},     {"zero_point", true},
        {"version", "gemm"},     {"modules_to_not_convert", {projector, "vision_model"}}};
    const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "<awq>");
    EXPECT_EQ(spec.quantization.method, QuantMethod::Awq);
    EXPECT_EQ(spec.quantization.bits, 4);
  }
}

// LLaVA-Next stacks the feature layers it selects (Granite-Vision's four): linear_1 takes
// 4 x 1024 inputs, and the encoder is built to the deepest of them.
TEST(RegistryMultimodal, LlavaNextStacksFeatureLayers) {
  nlohmann::json config = config_json("llava-hf__llava-1.5-7b-hf.json");
  config["model_type"] = "llava_next";
  config["vision_feature_layer"] = {-24, -20, -12, -1};
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "<llava_next>");
  const std::int64_t encoder = 24 * vit_block(1024, 4096) + clip_embeddings(1024, 336, 14);
  const std::int64_t projector =
      linear(std::int64_t{4} * 1024, 4096, true) + linear(4096, 4096, true);
  EXPECT_EQ(spec.vision.num_parameters, encoder + projector + 4096);  // + image_newline
}

// What the towers cannot size is refused by name, never guessed.
TEST(RegistryMultimodal, UnsizedTowersAreRefusedByName) {
  auto refused_at = [](const nlohmann::json& config) {
    try {
      (void)model_spec_from_hf_config(config, nullptr, "<wrapper>");
    } catch (const SpecError& e) {
      return e.field_path();
    }
    return std::string("accepted");
  };
  const nlohmann::json llava = config_json("llava-hf__llava-1.5-7b-hf.json");
  nlohmann::json pixtral = llava;
  pixtral["vision_config"]["model_type"] = "pixtral";
  EXPECT_EQ(refused_at(pixtral), "vision_config.model_type");
  nlohmann::json no_tower = llava;
  no_tower.erase("vision_config");
  EXPECT_EQ(refused_at(no_tower), "vision_config");
  nlohmann::json deep = llava;
  deep["vision_feature_layer"] = -30;
  EXPECT_EQ(refused_at(deep), "vision_feature_layer");
  nlohmann::json clip_paligemma = config_json("published_values/google__paligemma-3b-pt-224.json");
  clip_paligemma["vision_config"]["model_type"] = "clip_vision_model";
  EXPECT_EQ(refused_at(clip_paligemma), "vision_config.model_type");
  nlohmann::json internvl = config_json("OpenGVLab__InternVL3-1B.json");
  internvl["vision_config"].erase("qkv_bias");
  EXPECT_EQ(refused_at(internvl), "vision_config.qkv_bias");
}
