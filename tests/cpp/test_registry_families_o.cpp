// Architectures of vLLM 0.33's registry mapped in issue 36 (helper o): Granite Speech and Granite
// Speech Plus. Per checkpoint, the audio tower and the language model counted by hand from the
// module shapes vLLM's granite_speech.py / blip2.py / granite.py build, and the text KV bytes per
// token by hand from its attention layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::config_json;
using vramplan_test::config_path;
using vramplan_test::kv_bf16;
using vramplan_test::linear;
using vramplan_test::spec_error_of;

namespace {

constexpr std::int64_t kVocab = 100353;  // text_config.vocab_size
constexpr std::int64_t kText = 2048;     // text_config.hidden_size
constexpr std::int64_t kHeadDim = 128;   // the text's and the encoder's attention heads

// GraniteForCausalLM over both checkpoints' text_config (granite-4.0-1b-base's layout): 40
// layers of 16 query and 4 KV heads x 128 (2048 / 16), unbiased q/k/v/o, a SwiGLU MLP of 4096,
// two RMSNorms a layer, the final norm, the 100,353-token table and, untied, an lm_head of the
// same shape.
std::int64_t granite_text(bool tied) {
  const std::int64_t layer =
      linear(kText, 16 * kHeadDim, false) + 2 * linear(kText, 4 * kHeadDim, false) +
      linear(16 * kHeadDim, kText, false) + 3 * linear(kText, 4096, false) + 2 * kText;
  return (tied ? 1 : 2) * kVocab * kText + 40 * layer + kText;
}

// granite_speech.py GraniteSpeechCTCEncoder over encoder_config: h = hidden_dim 1024, 16 blocks,
// input_dim 160, feedforward_mult 4, 8 heads x dim_head 128 (inner 1024), output_dim 348,
// max_pos_emb 512, conv_kernel_size 15, conv_expansion_factor 2 (conv width 2048).
//   input_linear [1024, 160] + bias
//   block: ff1 and ff2, each LayerNorm (2h) + up_proj [4096, 1024] + bias + down_proj
//          [1024, 4096] + bias; attn: LayerNorm, to_q [1024, 1024] and to_kv [2048, 1024] without
//          bias, to_out [1024, 1024] + bias, rel_pos_emb [2 x 512 + 1, 128]; conv: LayerNorm,
//          up_conv [4096, 1024, 1] + bias, depth_conv [2048, 1, 15] without bias, BatchNorm1d
//          weight and bias [2048], down_conv [1024, 2048, 1] + bias; post_norm LayerNorm.
//   out [348, 1024] + bias, out_mid [1024, 348] + bias.
std::int64_t granite_speech_encoder() {
  const std::int64_t h = 1024;
  const std::int64_t feed_forward = 2 * h + linear(h, 4 * h, true) + linear(4 * h, h, true);
  const std::int64_t inner = 8 * kHeadDim;
  const std::int64_t attention = 2 * h + linear(h, inner, false) + linear(h, 2 * inner, false) +
                                 linear(inner, h, true) + (2 * 512 + 1) * kHeadDim;
  const std::int64_t c = 2 * h;  // the convolution width
  const std::int64_t conv = 2 * h + linear(h, 2 * c, true) + c * 15 + 2 * c + linear(c, h, true);
  const std::int64_t block = 2 * feed_forward + attention + conv + 2 * h;
  return linear(160, h, true) + 16 * block + linear(h, 348, true) + linear(348, h, true);
}

// GraniteSpeechEncoderProjector over projector_config: 15 / 5 = 3 learned queries of 1024; the
// Q-Former (its LayerNorm; 2 layers, cross_attention_frequency 1 so both cross-attend: a biased
// self-attention query/key/value and output dense [1024, 1024] with a LayerNorm, a
// cross-attention whose biased key/value read encoder_hidden_size `encoder_width`, its biased
// query and dense [1024, 1024] and a LayerNorm, intermediate_query [4096, 1024] + bias and
// output_query [1024, 4096] + bias with a LayerNorm); linear [2048, 1024] + bias to the text.
std::int64_t granite_speech_projector(std::int64_t encoder_width) {
  const std::int64_t q = 1024;
  const std::int64_t self_attention = 4 * linear(q, q, true) + 2 * q;
  const std::int64_t cross_attention =
      2 * linear(q, q, true) + 2 * linear(encoder_width, q, true) + 2 * q;
  const std::int64_t mlp = linear(q, 4096, true) + linear(4096, q, true) + 2 * q;
  const std::int64_t qformer = 2 * q + 2 * (self_attention + cross_attention + mlp);
  return 3 * q + qformer + linear(q, kText, true);
}

// The published size of ibm-granite/granite-speech-4.1-2b (model.safetensors.index.json
// metadata.total_size at revision de575db64086, 954 tensors, BF16 but for 16 int64
// num_batches_tracked), as kadirnar/voicehub pins it (voicehub/models/asr_granite_speech/
// native/SOURCE.json @ ada419e27d97).
constexpr std::int64_t kGraniteSpeech41TotalSize = 4626414392;
// The checkpoint's non-parameter tensors: each of the 16 conv modules' BatchNorm running mean and
// variance (2 x 2048, BF16) and num_batches_tracked (one int64).
constexpr std::int64_t kRunningStats = std::int64_t{16} * 2 * 2048;
constexpr std::int64_t kBatchesTrackedBytes = std::int64_t{16} * 8;

}  // namespace

// ibm-granite/granite-speech-4.1-2b: the parameters vLLM 0.33 builds, closed on the published
// total_size: 2 B x (parameters + running statistics) + 16 x 8 B. KV: GraniteForCausalLM's 40
// layers x 2 (K, V) x 4 KV heads x 128 x 2 B = 81,920 B a token; the encoder keeps none.
TEST(RegistryFamiliesO, GraniteSpeech41ClosesOnPublishedTotalSize) {
  const ModelSpec spec = load_hf_config(config_path("ibm-granite__granite-speech-4.1-2b.json"));
  EXPECT_EQ(spec.model_type, "granite");
  const std::int64_t tower = granite_speech_encoder() + granite_speech_projector(1024);
  EXPECT_EQ(spec.vision.num_parameters, tower);
  EXPECT_EQ(spec.vision.modality, "audio");
  const std::int64_t text = granite_text(false);
  EXPECT_EQ(parameter_count(spec), text + tower);
  EXPECT_EQ(2 * (text + tower + kRunningStats) + kBatchesTrackedBytes, kGraniteSpeech41TotalSize);
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_EQ(kv_bf16(spec), 40 * 2 * 4 * 128 * 2);
  ASSERT_EQ(spec.layers.size(), 40U);
  for (const LayerSpec& layer : spec.layers) EXPECT_EQ(layer.attention, AttentionKind::Full);
}

// ibm-granite/granite-speech-4.1-2b-plus: vLLM 0.33's granite_speech_plus.py builds the same
// modules, but the encoder concatenates block 3's hidden states with the last
// (cat_hidden_layers [3]), so the Q-Former's cross-attention key and value read 2 x 1024 (2 layers
// x 2 x 1024 x 1024 more weights), and the head is tied (one 100,353 x 2048 table less). Closed on
// the 4.1-2b checkpoint's published size by those two differences. KV as 4.1-2b: 81,920 B.
TEST(RegistryFamiliesO, GraniteSpeech41PlusByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("ibm-granite__granite-speech-4.1-2b-plus.json"));
  EXPECT_EQ(spec.model_type, "granite");
  const std::int64_t tower = granite_speech_encoder() + granite_speech_projector(2048);
  EXPECT_EQ(spec.vision.num_parameters, tower);
  EXPECT_EQ(spec.vision.modality, "audio");
  EXPECT_TRUE(spec.tie_word_embeddings);
  EXPECT_EQ(parameter_count(spec), granite_text(true) + tower);
  const std::int64_t base = (kGraniteSpeech41TotalSize - kBatchesTrackedBytes) / 2 - kRunningStats;
  EXPECT_EQ(parameter_count(spec), base - kVocab * kText + std::int64_t{2} * 2 * 1024 * 1024);
  EXPECT_EQ(kv_bf16(spec), 40 * 2 * 4 * 128 * 2);
}

// The Plus encoder config class derives dim_head from hidden_dim / num_heads when the config
// omits it (1024 / 8 = 128: the same tower); the other omitted keys take the class defaults,
// reported by name.
TEST(RegistryFamiliesO, GraniteSpeechPlusDerivesDimHead) {
  nlohmann::json config = config_json("ibm-granite__granite-speech-4.1-2b-plus.json");
  config["encoder_config"].erase("dim_head");
  config.erase("window_size");
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "<plus>");
  EXPECT_EQ(spec.vision.num_parameters, granite_speech_encoder() + granite_speech_projector(2048));
  EXPECT_NE(std::find(spec.config_defaults.begin(), spec.config_defaults.end(),
                      "window_size = 15 (GraniteSpeechPlusConfig)"),
            spec.config_defaults.end());
}

// What the tower cannot be sized from is refused by name: no projector_config, a projector vLLM
// would not build as blip2.py's Q-Former, a block-attention context wider than the relative
// position table (vLLM's own check), fewer window frames than the downsample rate.
TEST(RegistryFamiliesO, GraniteSpeechRefusesWhatItCannotSize) {
  const auto with = [](const char* part, const char* key, const nlohmann::json& value) {
    nlohmann::json config = config_json("ibm-granite__granite-speech-4.1-2b.json");
    if (std::string(part).empty()) {
      config[key] = value;
    } else {
      config[part][key] = value;
    }
    return spec_error_of([&] { (void)model_spec_from_hf_config(config, nullptr, "<gs>"); });
  };
  nlohmann::json missing = config_json("ibm-granite__granite-speech-4.1-2b.json");
  missing.erase("projector_config");
  const SpecError no_projector =
      spec_error_of([&] { (void)model_spec_from_hf_config(missing, nullptr, "<gs>"); });
  EXPECT_EQ(no_projector.field_path(), "projector_config");
  EXPECT_EQ(with("projector_config", "model_type", "bert").field_path(),
            "projector_config.model_type");
  EXPECT_EQ(with("encoder_config", "context_size", 513).field_path(),
            "encoder_config.context_size");
  EXPECT_EQ(with("", "window_size", 4).field_path(), "window_size");
}

// The Plus encoder's cat_hidden_layers as transformers' GraniteSpeechPlusConfig checks them: a
// layer index outside the encoder, or a projector width other than the concatenated
// hidden_dim x (len + 1) = 2 x 1024, is refused by name.
TEST(RegistryFamiliesO, GraniteSpeechPlusChecksTheConcatenatedWidth) {
  const auto with = [](const char* part, const char* key, const nlohmann::json& value) {
    nlohmann::json config = config_json("ibm-granite__granite-speech-4.1-2b-plus.json");
    config[part][key] = value;
    return spec_error_of([&] { (void)model_spec_from_hf_config(config, nullptr, "<plus>"); });
  };
  EXPECT_EQ(with("encoder_config", "cat_hidden_layers", nlohmann::json::array({16})).field_path(),
            "encoder_config.cat_hidden_layers");
  EXPECT_EQ(with("encoder_config", "cat_hidden_layers", nlohmann::json::array({3, 7})).field_path(),
            "projector_config.encoder_hidden_size");
  EXPECT_EQ(with("projector_config", "encoder_hidden_size", 1024).field_path(),
            "projector_config.encoder_hidden_size");
}
