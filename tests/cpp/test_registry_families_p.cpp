// Audio architectures of vLLM 0.33's registry looked at in issue 36 (helper p): MOSS-Transcribe-
// Diarize plans (vLLM's Whisper encoder, the VQ adaptor and a Qwen3 text model, each counted by
// hand from the module shapes moss_transcribe_diarize.py builds, the text KV bytes by hand); the
// others stay refused with the reason that names what a plan would need.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>

#include "test_support.hpp"
#include "vramplan/architectures.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::config_json;
using vramplan_test::config_path;
using vramplan_test::kv_bf16;
using vramplan_test::linear;
using vramplan_test::qwen3_tied_text;

namespace {

constexpr const char* kMoss = "OpenMOSS-Team__MOSS-Transcribe-Diarize.json";

// A Whisper encoder of width d as vLLM 0.33's whisper.py WhisperEncoder holds the checkpoint's
// weights: conv1 [d, mels, 3] and conv2 [d, d, 3], biased; the position table [positions, d] (an
// nn.Embedding); per layer q/v/out_proj biased, k_proj unbiased (the bias vLLM adds is zeros,
// not a checkpoint weight), fc1 / fc2 biased, two LayerNorms; the final LayerNorm.
std::int64_t whisper_encoder(std::int64_t d, std::int64_t ffn, std::int64_t layers,
                             std::int64_t mels, std::int64_t positions) {
  const std::int64_t layer = 3 * linear(d, d, true) + linear(d, d, false) + linear(d, ffn, true) +
                             linear(ffn, d, true) + 2 * (2 * d);
  return linear(mels * 3, d, true) + linear(d * 3, d, true) + positions * d + layers * layer +
         2 * d;
}

// Whisper's decoder of width d (transformers' WhisperDecoder): the token table [vocab, d] (the
// head tied to it), learned positions [positions, d]; per layer self-attention and
// cross-attention (q/v/out biased, k unbiased), fc1 / fc2 biased and three LayerNorms; the final
// LayerNorm. Used only to close the encoder on a published whole-model count.
std::int64_t whisper_decoder(std::int64_t d, std::int64_t ffn, std::int64_t layers,
                             std::int64_t vocab, std::int64_t positions) {
  const std::int64_t attention = 3 * linear(d, d, true) + linear(d, d, false);
  const std::int64_t layer =
      2 * attention + linear(d, ffn, true) + linear(ffn, d, true) + 3 * (2 * d);
  return vocab * d + positions * d + layers * layer + 2 * d;
}

std::string reason_of(const std::string& architecture) {
  for (const VllmArchitecture& a : vllm_registry_architectures()) {
    if (a.architecture == architecture) return a.refused_reason;
  }
  return "<not in the registry>";
}

}  // namespace

// whisper-medium's published count, 763,857,920 (KerasHub's whisper_medium_multi preset; the
// Hub checkpoint's count quoted alike), is its encoder (width 1024, MLP 4096, 24 layers, 80 mel
// bins, 1500 positions) and decoder (24 layers, 51,865 tokens, 448 positions) by hand: the
// encoder MOSS-Transcribe-Diarize's audio_config describes is that one.
TEST(RegistryFamiliesP, WhisperMediumEncoderClosesOnThePublishedCount) {
  const std::int64_t encoder = whisper_encoder(1024, 4096, 24, 80, 1500);
  EXPECT_EQ(encoder + whisper_decoder(1024, 4096, 24, 51865, 448), 763857920);
  EXPECT_EQ(encoder, 307216384);
}

// MOSS-Transcribe-Diarize (OpenMOSS-Team, published as 0.9B; its encoder repackaged alone as
// 307 M parameters), as moss_transcribe_diarize.py builds it: the Whisper encoder above from
// audio_config; the VQ adaptor over audio_merge_size 4 merged frames
// (adaptor_input_dim 4096 = 1024 x 4): a biased Linear [1024, 4096], a biased Linear
// [1024, 1024] and a LayerNorm (weight and bias) of 1024; the text Qwen3ForCausalLM over
// text_config: Qwen3-0.6B's shape (width 1024, 28 layers, 16 heads and 8 KV heads x 128, MLP
// 3072, 151,936 tokens, tied), whose published count is 596,049,920.
// KV: 28 layers x 2 (K, V) x 8 heads x 128 x 2 B = 114,688 B a token.
TEST(RegistryFamiliesP, MossTranscribeDiarizeByHand) {
  const ModelSpec spec = load_hf_config(config_path(kMoss));
  const std::int64_t encoder = whisper_encoder(1024, 4096, 24, 80, 1500);
  const std::int64_t adaptor =
      linear(4096, 1024, true) + linear(1024, 1024, true) + std::int64_t{2} * 1024;
  const std::int64_t text = qwen3_tied_text(1024, 28, 16, 8, 3072, 151936);
  EXPECT_EQ(text, 596049920);
  EXPECT_EQ(spec.vision.num_parameters, encoder + adaptor);
  EXPECT_EQ(spec.vision.modality, "audio");
  EXPECT_EQ(parameter_count(spec), text + encoder + adaptor);
  EXPECT_EQ(text + encoder + adaptor, 908513280);
  vramplan_test::expect_published(encoder, 307e6);
  vramplan_test::expect_published(text + encoder + adaptor, 0.9e9, 1);
  EXPECT_EQ(kv_bf16(spec), 28 * 2 * 8 * 128 * 2);
  EXPECT_EQ(spec.max_position_embeddings, 131072);
  EXPECT_TRUE(spec.tie_word_embeddings);
}

// adaptor_input_dim absent: vLLM's MossTranscribeDiarizeConfig sets d_model x audio_merge_size
// (1024 x 2 = 2048 here), so the adaptor's first Linear narrows by 2048 x 1024 weights.
TEST(RegistryFamiliesP, MossAdaptorWidthFollowsTheMergeSize) {
  nlohmann::json config = config_json(kMoss);
  const std::int64_t full = load_hf_config(config_path(kMoss)).vision.num_parameters;
  config.erase("adaptor_input_dim");
  config["audio_merge_size"] = 2;
  const nlohmann::json doc = architecture_spec_document(config, "config.json");
  EXPECT_EQ(doc["vision"]["num_parameters"].get<std::int64_t>(), full - std::int64_t{2048} * 1024);
}

// An audio_config naming another encoder than Whisper is refused by name, and so is an
// adaptor_input_dim out of range.
TEST(RegistryFamiliesP, MossBadAudioKeysAreNamed) {
  nlohmann::json foreign = config_json(kMoss);
  foreign["audio_config"]["model_type"] = "qwen2_audio_encoder";
  nlohmann::json zero = config_json(kMoss);
  zero["adaptor_input_dim"] = 0;
  const std::map<std::string, nlohmann::json> cases = {{"audio_config.model_type", foreign},
                                                       {"adaptor_input_dim", zero}};
  for (const auto& [field, config] : cases) {
    try {
      (void)architecture_spec_document(config, "config.json");
      ADD_FAILURE() << "no SpecError for " << field;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

// The registry plans MOSS-Transcribe-Diarize; the other audio architectures looked at stay
// refused, each reason naming what a plan would need.
TEST(RegistryFamiliesP, RegistryMapsMossAndNamesTheRest) {
  std::string moss_type;
  for (const VllmArchitecture& a : vllm_registry_architectures()) {
    if (a.architecture == "MossTranscribeDiarizeForConditionalGeneration") moss_type = a.model_type;
  }
  EXPECT_EQ(moss_type, "moss_transcribe_diarize");
  const std::map<std::string, std::string> refused = {
      {"UltravoxModel", "text_model_id"},
      {"MoonshotKimiaForCausalLM", "whisper-large-v3/config.json"},
      {"MiDashengLMModel", "mispeech/midashenglm-7b"},
      {"FunASRForConditionalGeneration", "SenseVoiceEncoderSmall"},
      {"FireRedASR2ForConditionalGeneration", "ConformerEncoder"},
      {"AudioFlamingo3ForConditionalGeneration", "nvidia/audio-flamingo-3-hf"},
  };
  for (const auto& [architecture, fact] : refused) {
    EXPECT_NE(reason_of(architecture).find(fact), std::string::npos) << architecture;
  }
}
