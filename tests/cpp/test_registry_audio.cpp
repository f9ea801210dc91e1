// Audio (speech) models of vLLM 0.33's registry (issue 36): the Whisper-style audio encoder and
// its projector counted as the spec's tower (modality audio), the language model a mapped
// family. Per checkpoint: the encoder, the projector and the text model by hand from the module
// shapes vLLM 0.33 builds, the whole count against the published one, and the text KV bytes per
// token by hand. Then what a plan does with an audio tower whose profile is not modelled.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "test_support.hpp"
#include "vramplan/architectures.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::config_error_of;
using vramplan_test::config_path;
using vramplan_test::h100;
using vramplan_test::kv_bf16;
using vramplan_test::linear;
using vramplan_test::qwen3_tied_text;

namespace {

// A Whisper-style encoder as transformers' Qwen2AudioEncoder builds it: conv1 [d, mels, 3] and
// conv2 [d, d, 3] with biases, positions x d embeddings, per layer q/v/out_proj biased and k_proj
// unbiased, fc1/fc2 biased, self_attn_layer_norm and final_layer_norm (weight and bias); a final
// layer_norm.
std::int64_t whisper_encoder(std::int64_t d, std::int64_t ffn, std::int64_t layers,
                             std::int64_t mels, std::int64_t positions) {
  const std::int64_t conv1 = d * mels * 3 + d;
  const std::int64_t conv2 = d * d * 3 + d;
  const std::int64_t layer = linear(d, d, true) + linear(d, d, false) + linear(d, d, true) +
                             linear(d, d, true) + linear(d, ffn, true) + linear(ffn, d, true) +
                             2 * (2 * d);
  return conv1 + conv2 + positions * d + layers * layer + 2 * d;
}

// A Qwen2 decoder: biased q/k/v, unbiased o, SwiGLU MLP, two RMSNorms a layer, a final norm,
// untied embeddings and head.
std::int64_t qwen2_text(std::int64_t h, std::int64_t layers, std::int64_t heads,
                        std::int64_t kv_heads, std::int64_t inter, std::int64_t vocab) {
  constexpr std::int64_t kHead = 128;
  const std::int64_t layer = linear(h, heads * kHead, true) +
                             2 * linear(h, kv_heads * kHead, true) +
                             linear(heads * kHead, h, false) + 3 * h * inter + 2 * h;
  return layers * layer + h + 2 * vocab * h;
}

// The Qwen3-Omni audio encoder as qwen3_omni_moe_thinker.py builds it: conv2d1 [c, 1, 3, 3],
// conv2d2 and conv2d3 [c, c, 3, 3], all biased; conv_out [d, c x 16] unbiased (128 mel bins
// halved three times, rounding up: 64, 32, 16); per layer a biased fused qkv [3d, d] and
// out_proj, biased fc1 / fc2 and two LayerNorms; ln_post, proj1 [d, d] and proj2 [out, d], biased.
std::int64_t qwen3_omni_encoder(std::int64_t d, std::int64_t ffn, std::int64_t layers,
                                std::int64_t channels, std::int64_t out) {
  const std::int64_t convs = (channels * 9 + channels) + 2 * (channels * channels * 9 + channels);
  const std::int64_t layer = linear(d, 3 * d, true) + linear(d, d, true) + linear(d, ffn, true) +
                             linear(ffn, d, true) + 2 * (2 * d);
  return convs + channels * 16 * d + layers * layer + 2 * d + linear(d, d, true) +
         linear(d, out, true);
}

// Qwen2.5-VL's vision transformer (qwen2_5_vl.py) at width e: the unbiased 3-D patch conv
// [e, 3 x 2 x 14 x 14], per block a biased fused qkv and proj, a biased gated MLP and two
// RMSNorms; the merger's RMSNorm over e and its biased [4e -> 4e] and [4e -> out].
std::int64_t qwen25_vl_vision(std::int64_t e, std::int64_t depth, std::int64_t inter,
                              std::int64_t out) {
  const std::int64_t block = linear(e, 3 * e, true) + linear(e, e, true) +
                             2 * linear(e, inter, true) + linear(inter, e, true) + 2 * e;
  return std::int64_t{3} * 2 * 14 * 14 * e + depth * block + e + linear(4 * e, 4 * e, true) +
         linear(4 * e, out, true);
}

std::shared_ptr<const ModelSpec> audio_spec(const std::string& name) {
  return std::make_shared<const ModelSpec>(load_hf_config(config_path(name)));
}

CompiledLaunch launch_of(std::shared_ptr<const ModelSpec> spec, EngineConfig config) {
  HardwareConfig hw;
  hw.gpu = h100();
  return CompiledLaunch(std::move(spec), hw, std::move(config));
}

}  // namespace

// Qwen2-Audio-7B (published 8,397,094,912 parameters): the encoder of width 1280, MLP 5120, 32
// layers over 128 mel bins and 1500 positions; the projector a biased Linear [4096, 1280]
// (qwen2_audio.py Qwen2AudioMultiModalProjector); the text Qwen2Config's defaults for what its
// text_config omits (hidden 4096, 32 layers, 32 heads, 32 KV heads) with MLP 11008 and a
// 156,032-token vocabulary, untied. KV: 32 layers x 2 x 32 x 128 x 2 B = 524,288 B a token.
TEST(RegistryAudio, Qwen2Audio7bByHand) {
  const auto spec = audio_spec("Qwen__Qwen2-Audio-7B.json");
  const std::int64_t encoder = whisper_encoder(1280, 5120, 32, 128, 1500);
  const std::int64_t projector = linear(1280, 4096, true);
  const std::int64_t text = qwen2_text(4096, 32, 32, 32, 11008, 156032);
  EXPECT_EQ(spec->vision.num_parameters, encoder + projector);
  EXPECT_EQ(spec->vision.modality, "audio");
  EXPECT_EQ(parameter_count(*spec), text + encoder + projector);
  EXPECT_EQ(text + encoder + projector, 8397094912);
  EXPECT_EQ(kv_bf16(*spec), 32 * 2 * 32 * 128 * 2);
}

// Qwen3-ASR-0.6B (published 782,426,112 parameters): its config nests audio and text under
// thinker_config. The encoder of width 896, 18 layers, MLP 3584, 480 conv channels, output 1024;
// the text Qwen3 of width 1024, 28 layers, 16 heads and 8 KV heads x 128, MLP 3072, vocabulary
// 151,936, tied. KV: 28 layers x 2 x 8 x 128 x 2 B = 114,688 B a token.
TEST(RegistryAudio, Qwen3Asr06bByHand) {
  const auto spec = audio_spec("Qwen__Qwen3-ASR-0.6B.json");
  const std::int64_t encoder = qwen3_omni_encoder(896, 3584, 18, 480, 1024);
  const std::int64_t text = qwen3_tied_text(1024, 28, 16, 8, 3072, 151936);
  EXPECT_EQ(spec->vision.num_parameters, encoder);
  EXPECT_EQ(spec->vision.modality, "audio");
  EXPECT_EQ(parameter_count(*spec), text + encoder);
  EXPECT_EQ(text + encoder, 782426112);
  EXPECT_EQ(kv_bf16(*spec), 28 * 2 * 8 * 128 * 2);
  EXPECT_EQ(spec->max_position_embeddings, 65536);
}

// Qwen3-ASR-1.7B (published 2,038,052,480): the encoder of width 1024, 24 layers, MLP 4096,
// output 2048; the text Qwen3-1.7B's shape (width 2048, 28 layers, 16 heads, 8 KV heads, MLP
// 6144, tied), as public copies of its config quote them.
TEST(RegistryAudio, Qwen3Asr17bByHand) {
  EXPECT_EQ(qwen3_omni_encoder(1024, 4096, 24, 480, 2048) +
                qwen3_tied_text(2048, 28, 16, 8, 6144, 151936),
            2038052480);
}

// Qwen2.5-Omni's thinker, as vLLM builds it (no talker), in a thinker-only checkpoint
// (TimeChat-Captioner-GRPO-7B, a Qwen2.5-Omni-7B fine-tune; its index gives 8,931,813,888
// parameters). Audio: Whisper's convs and 32 layers of width 1280 (MLP 5120, 128 mel bins), the
// [2, 3584] audio_bos_eos_token, ln_post and proj [3584, 1280], no position weights. Vision:
// Qwen2.5-VL's ViT, 32 blocks of 1280, MLP 3420, merged to 3584. Text: Qwen2.5-7B (28 layers,
// 28 heads and 4 KV heads x 128, MLP 18944, vocabulary 152,064, untied).
// KV: 28 x 2 x 4 x 128 x 2 B = 57,344 B a token.
TEST(RegistryAudio, Qwen25OmniThinkerByHand) {
  const auto spec = audio_spec("yaolily__TimeChat-Captioner-GRPO-7B.json");
  const std::int64_t d = 1280;
  const std::int64_t whisper_layer = linear(d, d, true) + linear(d, d, false) + linear(d, d, true) +
                                     linear(d, d, true) + linear(d, 5120, true) +
                                     linear(5120, d, true) + 2 * (2 * d);
  const std::int64_t audio = (d * 128 * 3 + d) + (d * d * 3 + d) + 2 * 3584 + 32 * whisper_layer +
                             2 * d + linear(d, 3584, true);
  const std::int64_t vision = qwen25_vl_vision(1280, 32, 3420, 3584);
  const std::int64_t text = qwen2_text(3584, 28, 28, 4, 18944, 152064);
  EXPECT_EQ(spec->vision.num_parameters, audio + vision);
  EXPECT_EQ(spec->vision.audio_parameters, audio);
  EXPECT_EQ(spec->vision.modality, "image");
  EXPECT_EQ(parameter_count(*spec), text + audio + vision);
  EXPECT_EQ(text + audio + vision, 8931813888);
  EXPECT_EQ(kv_bf16(*spec), 28 * 2 * 4 * 128 * 2);
}

// vLLM builds Qwen2.5-Omni's audio encoder only while audio is enabled and its vision tower
// only while image or video is: the loaded weights drop by each tower's bf16 bytes.
TEST(RegistryAudio, OmniTowersLoadWithTheirModalities) {
  const auto spec = audio_spec("yaolily__TimeChat-Captioner-GRPO-7B.json");
  auto weights = [&](const char* limits) {
    EngineConfig config;
    config.max_model_len = 8192;
    config.limit_mm_per_prompt = limits;
    return launch_of(spec, config).breakdown(launch_knobs(config)).ranks.front().weights_bytes;
  };
  const std::int64_t all = weights(R"({"image": 0, "video": 0, "audio": 1})") +
                           2 * (spec->vision.num_parameters - spec->vision.audio_parameters);
  EXPECT_EQ(weights(R"({"audio": 0})"), all - 2 * spec->vision.audio_parameters);
  EXPECT_EQ(weights(R"({"image": 0, "video": 0, "audio": 0})"),
            all - 2 * spec->vision.num_parameters);
}

TEST(RegistryAudio, RegistryPlansTheAudioWrappers) {
  const std::map<std::string, std::string> expected = {
      {"Qwen2AudioForConditionalGeneration", "qwen2_audio"},
      {"Qwen3ASRForConditionalGeneration", "qwen3_asr"},
      {"Qwen3ASRRealtimeGeneration", "qwen3_asr"},
      {"Qwen2_5OmniModel", "qwen2_5_omni"},
      {"Qwen2_5OmniForConditionalGeneration", "qwen2_5_omni"},
  };
  std::size_t found = 0;
  for (const VllmArchitecture& a : vllm_registry_architectures()) {
    const auto it = expected.find(a.architecture);
    if (it == expected.end()) continue;
    EXPECT_EQ(a.model_type, it->second) << a.architecture;
    ++found;
  }
  EXPECT_EQ(found, expected.size());
}

// The audio profile is not modelled: the default limit plans with a note naming it, an explicit
// audio limit is refused, and audio limited to 0 leaves the tower unbuilt (vLLM 0.33's
// _mark_tower_model skips it), so the weights drop by the tower's bf16 bytes.
TEST(RegistryAudio, AudioProfileWarnsOrRefuses) {
  const auto spec = audio_spec("Qwen__Qwen2-Audio-7B.json");
  auto audio_notes = [](const Breakdown& b) {
    return std::count_if(b.messages.begin(), b.messages.end(), [](const std::string& m) {
      return m.find("vLLM's audio profile") != std::string::npos;
    });
  };
  EngineConfig config;
  config.max_model_len = 8192;
  const Breakdown b = launch_of(spec, config).breakdown(launch_knobs(config));
  EXPECT_EQ(b.ranks.front().mm_encoder_bytes, 0);
  EXPECT_EQ(audio_notes(b), 1);
  EngineConfig asked = config;
  asked.limit_mm_per_prompt = R"({"audio": 1})";
  EXPECT_EQ(config_error_of([&] { (void)launch_of(spec, asked); }).field(), "limit_mm_per_prompt");
  EngineConfig off = config;
  off.limit_mm_per_prompt = R"({"audio": 0})";
  const Breakdown zero = launch_of(spec, off).breakdown(launch_knobs(off));
  EXPECT_EQ(audio_notes(zero), 0);
  EXPECT_EQ(b.ranks.front().weights_bytes - zero.ranks.front().weights_bytes,
            2 * spec->vision.num_parameters);
}

// An audio_config naming another encoder than the one vLLM builds is refused by name.
TEST(RegistryAudio, ForeignAudioEncoderIsRefused) {
  nlohmann::json config = vramplan_test::config_json("Qwen__Qwen2-Audio-7B.json");
  config["audio_config"]["model_type"] = "whisper";
  try {
    (void)architecture_spec_document(config, "config.json");
    ADD_FAILURE() << "no SpecError";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("audio_config.model_type"), std::string::npos) << e.what();
  }
}

// A spec's vision.modality is image or audio, and an audio tower takes no image-profile facts.
TEST(RegistryAudio, SpecModalityIsChecked) {
  const std::string base =
      std::string(vramplan_test::kLlama31_8B) + "vision:\n  num_parameters: 1000\n";
  EXPECT_EQ(vramplan_test::spec_from_yaml(base + "  modality: audio\n").vision.modality, "audio");
  EXPECT_EQ(vramplan_test::spec_from_yaml(base).vision.modality, "image");
  for (const std::string& bad :
       {std::string("  modality: video\n"),
        std::string("  modality: audio\n  image_tokens_per_item: 256\n")}) {
    try {
      (void)vramplan_test::spec_from_yaml(base + bad);
      ADD_FAILURE() << "no SpecError for " << bad;
    } catch (const SpecError& e) {
      EXPECT_NE(e.field_path().find("vision."), std::string::npos) << e.what();
    }
  }
}
