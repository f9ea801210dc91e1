// The multimodal encoder in vLLM's profile run, compiled: modality limits and the per-item facts
// of the encoder profile (its budget and peak at a point are in compiled_evaluate.cpp).
#include <algorithm>

#include "launch_internal.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/knobs.hpp"

namespace vramplan {

namespace {

// Elements per encoder token (served dtype; an fp32 value counts twice) alive at the Qwen
// vision attention's peak, read from the releases' Qwen2VisionAttention and
// Qwen2_5_VisionAttention (engines.yaml vit_rotary_attention). Every layout holds the
// residual stream and the normed input (full width) and this rank's qkv (3 partition widths).
std::int64_t vit_attention_peak_elements(EncoderAttention attention, VitRotaryAttention layout,
                                         std::int64_t hidden, std::int64_t tp) {
  if (attention == EncoderAttention::Unmodelled) return 0;
  const std::int64_t part = ceil_div(hidden, tp);
  // Over TP the qkv is all-gathered whole before q, k and v are cut back to this rank's heads
  // (Qwen2-VL in every release; Qwen2.5-VL until the fused layout): a list of TP shards, then
  // their concatenation, which the q/k/v views keep alive.
  const bool gathers =
      tp > 1 && (attention == EncoderAttention::Qwen2Vl || layout != VitRotaryAttention::FusedQk);
  const std::int64_t gathered = gathers ? 3 * hidden : 0;
  const std::int64_t while_gathering = gathers ? 2 * hidden + 3 * part + 6 * hidden : 0;
  std::int64_t rotating = 0;
  switch (layout) {
    case VitRotaryAttention::SplitFp32:
      // Contiguous q, k, v (3); rotating k beside the rotated q: its fp32 copy (2), the fp32
      // output (2) and the cast back (1).
      rotating = 2 * hidden + gathered + (3 + 3 + 5) * part;
      break;
    case VitRotaryAttention::ConcatFp32:
      // Contiguous q, k, v (3), q and k concatenated (2), its fp32 copy (4), the fp32 output
      // (4) and the cast back (2).
      rotating = 2 * hidden + gathered + (3 + 3 + 2 + 4 + 4 + 2) * part;
      break;
    case VitRotaryAttention::FusedQk:
      // One q/k copy (2) and its rotation (2) stay alive through the attention output (1) and
      // the projection's full-width output.
      rotating = 3 * hidden + gathered + (3 + 2 + 2 + 1) * part;
      break;
  }
  return std::max(rotating, while_gathering);
}

}  // namespace

// An audio tower (vision.modality audio) has no encoder-profile facts: vLLM's profile runs it on
// the longest dummy audio and keeps its output in the encoder cache, which the plan omits. An
// explicit audio limit asks for that profile, so it is refused; the default limit warns.
void CompiledLaunch::audio_profile_unmodelled() {
  const ModelSpec& s = *spec_;
  if (mm_limit("audio") == 0) return;
  // An encoder-decoder (Whisper) runs without chunked multimodal input: vLLM's
  // compute_mm_encoder_budget refuses a batch budget below one item's encoder tokens.
  const std::int32_t encoder_tokens =
      s.layers.empty() || s.layers.front().beside != AttentionKind::CrossAttention
          ? 0
          : s.layers.front().beside_window;
  if (config_.max_num_batched_tokens && *config_.max_num_batched_tokens < encoder_tokens) {
    throw ConfigError("max_num_batched_tokens", std::to_string(*config_.max_num_batched_tokens),
                      ">= " + std::to_string(encoder_tokens),
                      s.id + " runs one audio item's " + std::to_string(encoder_tokens) +
                          " encoder tokens in a batch (chunked multimodal input is off for "
                          "encoder-decoder models)");
  }
  if (encoder_tokens > 0) {
    launch_notes_.push_back(
        "vLLM's startup check and its logged maximum concurrency reserve each request "
        "max_num_batched_tokens encoder tokens of cross-attention KV (its encoder budget), and "
        "the plan reports those figures; a request of " +
        s.id + " fills " + std::to_string(encoder_tokens) +
        ", so more requests fit at once than that maximum concurrency says.");
    if (!config_.enforce_eager) {
      launch_notes_.push_back(
          "Not modelled: vLLM captures an encoder-decoder model's CUDA graphs FULL_DECODE_ONLY "
          "(no piecewise graphs); the cudagraph term of " +
          s.id + " is the release's default capture.");
    }
  }
  const bool asked = std::any_of(mm_limits_.begin(), mm_limits_.end(),
                                 [](const ModalityLimit& l) { return l.modality == "audio"; });
  if (asked) {
    throw ConfigError("limit_mm_per_prompt", "'" + config_.limit_mm_per_prompt + "'",
                      "{\"audio\": 0} or language_model_only",
                      s.id +
                          "'s audio encoder profile (its forward on the longest dummy audio and "
                          "the encoder cache it fills) is not modelled: its audio profile cannot "
                          "be counted");
  }
  launch_notes_.push_back(
      "Not modelled: the activation peak of " + s.id +
      " omits the forward and encoder cache of vLLM's audio profile (its audio encoder is "
      "counted in the weights only); language_model_only or limit_mm_per_prompt "
      "'{\"audio\": 0}' makes the plan exact.");
}

std::int64_t CompiledLaunch::mm_limit(const std::string& modality) const {
  constexpr std::int64_t kDefaultLimit = 999;  // MultiModalConfig.get_limit_per_prompt
  if (config_.language_model_only) return 0;
  for (const ModalityLimit& limit : mm_limits_) {
    if (limit.modality == modality) return limit.count;
  }
  return kDefaultLimit;
}

bool CompiledLaunch::multimodal_enabled() const {
  const TowerSpec& tower = spec_->vision;
  if (tower.num_parameters <= 0) return false;
  bool enabled = mm_limit(tower.modality) > 0;
  for (const std::string& modality : tower.unmodelled_modalities) {
    enabled |= mm_limit(modality) > 0;
  }
  return enabled;
}

// vLLM 0.33 builds each tower only while one of its modalities is enabled (_mark_tower_model):
// none without a modality, and of a vision tower beside an audio encoder (Qwen2.5-Omni) the
// parts whose modalities are on. A tower built outside _mark_tower_model (always_built) stays.
std::int64_t CompiledLaunch::loaded_tower_parameters() const {
  const TowerSpec& tower = spec_->vision;
  if (tower.num_parameters <= 0) return 0;
  if (tower.always_built) return tower.num_parameters;
  if (!multimodal_enabled()) return 0;
  if (tower.audio_parameters <= 0) return tower.num_parameters;
  bool vision = mm_limit("image") > 0;
  for (const std::string& modality : tower.unmodelled_modalities) {
    if (modality != "audio") vision |= mm_limit(modality) > 0;
  }
  return (mm_limit("audio") > 0 ? tower.audio_parameters : 0) +
         (vision ? tower.num_parameters - tower.audio_parameters : 0);
}

EncoderProfileModel CompiledLaunch::multimodal_profile(std::int64_t act_bytes) {
  const ModelSpec& s = *spec_;
  const EngineConfig& c = config_;
  const TowerSpec& tower = s.vision;
  mm_limits_ = parse_limit_mm_per_prompt(c.limit_mm_per_prompt);
  EncoderProfileModel encoder;
  if (tower.num_parameters <= 0) {
    // vLLM: "limit_mm_per_prompt is only supported for multimodal models".
    if (!mm_limits_.empty() || c.language_model_only) {
      const bool limits = !mm_limits_.empty();
      throw ConfigError(limits ? "limit_mm_per_prompt" : "language_model_only",
                        limits ? "'" + c.limit_mm_per_prompt + "'" : "true",
                        "unset for a text-only model",
                        s.id +
                            " has no vision/audio encoder; vLLM takes it only for multimodal "
                            "models");
    }
    return encoder;
  }
  for (const std::string& modality : tower.unmodelled_modalities) {
    if (mm_limit(modality) > 0) {
      std::string note = "Not modelled: vLLM may profile ";
      note += modality;
      note += " items of ";
      note += s.id;
      note +=
          " instead of images (where one has more tokens than the largest image, or images "
          "are limited to 0); the activation peak counts only the image profile. "
          "limit_mm_per_prompt '{\"";
      note += modality;
      note += "\": 0}' makes the plan exact.";
      launch_notes_.push_back(std::move(note));
    }
  }
  if (tower.modality == "audio") {
    audio_profile_unmodelled();
    return encoder;
  }
  const std::int64_t image_limit = mm_limit("image");
  if (image_limit == 0) return encoder;
  if (profile().era == EngineEra::V0) {
    launch_notes_.push_back(
        "Not modelled: vLLM V0 profiles images inside its dummy sequences; the activation "
        "peak of " +
        s.id + " omits the vision encoder.");
    return encoder;
  }
  if (tower.image_tokens_per_item <= 0) {
    const bool asked = std::any_of(mm_limits_.begin(), mm_limits_.end(),
                                   [](const ModalityLimit& l) { return l.modality == "image"; });
    if (asked) {
      throw ConfigError("limit_mm_per_prompt", "'" + c.limit_mm_per_prompt + "'",
                        "{\"image\": 0} or language_model_only",
                        s.id +
                            " has no encoder-profile facts (vision.image_tokens_per_item and "
                            "the encoder keys in its spec): its image profile cannot be "
                            "counted");
    }
    launch_notes_.push_back(
        "Not modelled: " + s.id +
        " has no encoder-profile facts (vision.image_tokens_per_item "
        "in its spec), so the activation peak omits the encoder forward and encoder cache of "
        "vLLM's image profile; language_model_only or limit_mm_per_prompt '{\"image\": 0}' "
        "makes the plan exact.");
    return encoder;
  }
  const std::int64_t tp = c.tensor_parallel_size;
  const std::int64_t hidden = tower.encoder_hidden_size;
  // The encoder's Linears are split over TP like the decoder's (mm_encoder_tp_mode "weights").
  const std::int64_t inter = ceil_div(tower.encoder_intermediate_size, tp);
  // A block peaks in its MLP or its attention, beside the residual stream and the normed input.
  // Gated: gate+up, the activation and down's output; plain: fc1 and the activation, then the
  // activation and fc2's output.
  const std::int64_t mlp = tower.encoder_gated_mlp
                               ? 2 * hidden + 3 * inter + hidden
                               : 2 * hidden + std::max(2 * inter, inter + hidden);
  const std::int64_t attention = vit_attention_peak_elements(
      tower.encoder_attention, profile().vit_rotary_attention, hidden, tp);
  encoder.tokens_per_item = tower.image_tokens_per_item;
  encoder.limit_per_prompt = image_limit;
  encoder.cache_bytes_per_item = tower.image_tokens_per_item * s.hidden_size * act_bytes;
  encoder.input_bytes_per_item = tower.pixel_values_per_item * act_bytes;
  encoder.forward_bytes_per_item =
      tower.encoder_tokens_per_item * act_bytes * std::max(mlp, attention);
  return encoder;
}

}  // namespace vramplan
