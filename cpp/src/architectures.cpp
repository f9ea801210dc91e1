#include "vramplan/architectures.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "vramplan/architectures_yaml.hpp"
#include "vramplan/errors.hpp"
#include "yaml_load.hpp"

namespace vramplan {

using nlohmann::json;

namespace {

constexpr std::int64_t kMaxDimension = std::int64_t{1} << 40;  // absurd above this
constexpr const char* kArchitecturesFile = "model_specs/architectures.yaml";

std::string number_text(const json& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  }
  return v.dump();
}

}  // namespace

ConfigFields::ConfigFields(const json& object, std::string file, std::string prefix,
                           const json* applied, std::string config_class)
    : object_(object),
      file_(std::move(file)),
      prefix_(std::move(prefix)),
      applied_(applied),
      config_class_(std::move(config_class)) {}

bool ConfigFields::has(const char* key) const {
  return object_.is_object() && object_.contains(key) && !object_.at(key).is_null();
}

void ConfigFields::fail(const char* key, const std::string& value,
                        const std::string& problem) const {
  throw SpecError(file_, prefix_ + key, value, problem);
}

const json* ConfigFields::lookup(const char* key) const {
  if (has(key)) return &object_.at(key);
  const bool written_null = object_.is_object() && object_.contains(key);
  if (written_null || applied_ == nullptr || !applied_->contains(key)) return nullptr;
  if (std::find(defaults_used_.begin(), defaults_used_.end(), key) == defaults_used_.end()) {
    defaults_used_.emplace_back(key);
  }
  return &applied_->at(key);
}

void ConfigFields::check_finite(const char* key, const json& v) const {
  if (v.is_number_float() && !std::isfinite(v.get<double>())) {
    fail(key, number_text(v), "non-finite number; expected a finite value");
  }
}

std::int64_t ConfigFields::integer(const char* key) const {
  if (const json* v = lookup(key)) return integer_value(key, *v);
  fail(key, "missing",
       config_class_.empty()
           ? "required field is missing"
           : "required field is missing, and " + config_class_ + " gives it no default");
}

std::int64_t ConfigFields::integer_or(const char* key, std::int64_t fallback) const {
  const json* v = lookup(key);
  return v != nullptr ? integer_value(key, *v) : fallback;
}

double ConfigFields::number_or(const char* key, double fallback) const {
  const json* v = lookup(key);
  if (v == nullptr) return fallback;
  if (!v->is_number()) fail(key, v->dump(), "expected a number");
  check_finite(key, *v);
  return v->get<double>();
}

bool ConfigFields::boolean_or(const char* key, bool fallback) const {
  const json* v = lookup(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) fail(key, number_text(*v), "expected true or false");
  return v->get<bool>();
}

std::string ConfigFields::string_or(const char* key, const std::string& fallback) const {
  const json* v = lookup(key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) fail(key, number_text(*v), "expected a string");
  return v->get<std::string>();
}

const json& ConfigFields::at(const char* key) const { return object_.at(key); }

std::int64_t ConfigFields::integer_value(const char* key, const json& v) const {
  check_finite(key, v);
  if (v.is_number_integer() || v.is_number_unsigned()) {
    if (v.is_number_unsigned() &&
        v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxDimension)) {
      fail(key, v.dump(), "value out of range");
    }
    const std::int64_t n = v.get<std::int64_t>();
    if (n < 0 || n > kMaxDimension) fail(key, v.dump(), "value out of range");
    return n;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= 0 && d <= static_cast<double>(kMaxDimension) && d == std::floor(d)) {
      return static_cast<std::int64_t>(d);
    }
  }
  fail(key, number_text(v), "expected a non-negative integer");
}

namespace {

// How layers without an explicit layer_types list get their sliding windows.
enum class Sliding : std::uint8_t {
  IfSet,          // a sliding_window below max_position_embeddings applies to every layer
  QwenGated,      // only when use_sliding_window is true (Qwen), then every layer
  Never,          // the family's attention never slides (a sliding_window key is ignored)
  Alternate,      // Gemma-2: sliding, full, sliding, full, ...
  PatternKey,     // sliding_window_pattern (Gemma-3 6, Cohere-2 4): n-1 sliding then 1 full
  ExaonePattern,  // EXAONE-4 sliding_window_pattern "LLLG" string or integer
  // Never without layer_types; a layer_types list may carry num_nextn_predict_layers trailing
  // MTP entries, which the config class trims (transformers' Step3p7TextConfig for step3p5).
  MtpPadded,
};

// The vision tower a multimodal wrapper carries (counted by parameters, stored unquantized).
enum class Vision : std::uint8_t {
  None,
  Vit,
  Siglip,
  Llava,
  Qwen2Vl,
  Qwen25Vl,
  Qwen3Vl,
  Pixtral,
  Gemma4,
  PaliGemma,    // SigLIP, all layers and the post-LayerNorm, + a biased linear projector
  Idefics3,     // Idefics3 / SmolVLM: SigLIP-style ViT + pixel-shuffle linear connector
  InternVit,    // InternVL (remote code): InternViT + pixel-shuffle mlp1 projector
  InternVlHf,   // InternVL in transformers' format: InternS1 ViT + pixel-shuffle projector
  Blip2,        // BLIP-2: EVA ViT-g, a Q-Former over learned queries, a linear projection
  Lfm2Vl,       // LFM2-VL: SigLIP2 NaFlex + pixel-unshuffle two-layer projector
  Glm4v,        // GLM-4.1V / 4.5V: 3-D patch ViT with SwiGLU blocks, a downsample conv, a merger
  KimiK25,      // Kimi-K2.5: MoonViT3d + patch-merger projector
  MiniCpmV,     // MiniCPM-V 2.0 / 2.5 (MiniCPMV): SigLIP ViT (timm or Idefics2) + resampler
  MiniCpmV46,   // MiniCPM-V 4.6: SigLIP-style ViT, a window-attention merger, an MLP merger
  DeepseekOcr,  // DeepSeek-OCR: SAM ViT-B + CLIP-L (fixed sizes) + a linear projector
  Exaone45,     // EXAONE 4.5: Qwen2.5-VL's ViT with grouped K/V heads in its attention
  Ovis25,       // Ovis2.5: SigLIP2-NaViT visual tokenizer, its head and a visual embedding table
  DotsOcr,      // dots.ocr: 2-D patch ViT with RMSNorms and SwiGLU blocks + LayerNorm patch merger
  Gemma4Unified,  // Gemma-4 Unified: encoder-free patch embedder + projector, audio projector
  Keye,           // Keye-VL: SigLIP with a packing position table + LayerNorm 2 x 2 MLP projector
  OpenVla,        // OpenVLA: timm DINOv2 ViT-L/14 (4 registers) + SigLIP So400m/14, GELU projector
  PaddleOcrVl,    // PaddleOCR-VL: Keye's SigLIP without the packing table, the same projector
  Cohere2Vision,  // Command A Vision: SigLIP + pixel-shuffle SwiGLU projector
  Phi3V,          // Phi-3-vision: fixed CLIP ViT-L/14-336 to img_processor.layer_idx + HD projector
  Qwen3Omni,      // Qwen3-Omni's thinker: Qwen3-VL's ViT, positions from image_size / patch_size
  Gemma3n,        // Gemma-3n: timm's MobileNet-V5 (by architecture name) + embed_vision
  StepPe,  // Step-3.7 (step3p7.py): step_vl.py's Perception Encoder, two stride-2 convs, a linear
  Radio,   // Nemotron Nano VL / Omni (nano_nemotron_vl.py): vLLM's RADIO ViT + ReLU^2 mlp1
};

// The audio encoder a multimodal wrapper carries (read from audio_config; counted by parameters,
// stored unquantized, beside or instead of a vision tower).
enum class Audio : std::uint8_t {
  None,
  Qwen2Audio,  // Qwen2-Audio: transformers' Qwen2AudioEncoder + a biased linear projector
  Qwen3Asr,    // Qwen3-ASR: the Qwen3-Omni audio encoder (conv2d stem, proj1 / proj2)
  Qwen25Omni,  // Qwen2.5-Omni's thinker: a Whisper-style encoder with ln_post and proj
  Qwen3Omni,   // Qwen3-Omni's thinker: the Qwen3-Omni audio encoder (as Qwen3-ASR's)
  Gemma3n,     // Gemma-3n: the USM Conformer (Gemma3nAudioEncoder) + embed_audio
  MossTranscribeDiarize,  // MOSS-Transcribe-Diarize: vLLM's Whisper encoder + the VQ adaptor
  Parakeet,               // Nemotron Omni: sound_config's Parakeet Conformer + ReLU^2 projection
  // Granite Speech (Plus): a Conformer CTC encoder (encoder_config) + a windowed Q-Former
  // projector (projector_config), read from those keys rather than audio_config
  GraniteSpeech,
};

struct Context {
  const ConfigFields& f;  // the text config, family defaults applied
  const ConfigFields& top;
  json& doc;
};

// A named translation step a row selects (`rules:` in model_specs/architectures.yaml).
using Rule = void (*)(Context&);

struct Row {
  ArchitectureInfo info;
  json applied = json::object();  // remote-code classes' defaults for omitted keys
  Sliding sliding = Sliding::IfSet;
  std::vector<std::pair<std::string, std::string>> renames;  // {spec key, this family's key}
  json set = json::object();       // spec fields every checkpoint of the family has
  std::vector<std::string> erase;  // spec fields the family never has
  std::vector<Rule> rules;
  // Every layer a state-space mixer (vLLM's IsAttentionFree models): the config names no
  // attention heads and, usually, no context length.
  bool attention_free = false;
};

// One transformers config class's defaults for the keys a config omits (config_class_defaults).
struct ClassDefaults {
  std::string config_class;  // "LlamaConfig"
  json values = json::object();
};

struct Wrapper {
  std::string model_type;       // top-level model_type of the multimodal checkpoint
  std::string text_model_type;  // when text_config names none (or there is none)
  Vision vision = Vision::None;
  Audio audio = Audio::None;
};

// --- named rules: family-specific translation that reads further config keys --------------

void qkv_bias_only(Context& c) {
  c.doc["qkv_bias"] = c.f.boolean_or("attention_bias", true);
  c.doc.erase("o_proj_bias");
}

json qwen_style_moe(const ConfigFields& f, bool router_quantizable) {
  json moe = {{"num_experts", f.integer("num_experts")},
              {"num_experts_per_tok", f.integer("num_experts_per_tok")},
              {"moe_intermediate_size", f.integer("moe_intermediate_size")},
              {"router_quantizable", router_quantizable}};
  const std::int64_t shared = f.integer_or("shared_expert_intermediate_size", 0);
  if (shared > 0) {
    moe["num_shared_experts"] = 1;
    moe["shared_expert_intermediate_size"] = shared;
    moe["shared_expert_gate"] = true;
  }
  const std::int64_t step = f.integer_or("decoder_sparse_step", 1);
  if (step != 1) moe["moe_layer_step"] = step;
  if (f.has("mlp_only_layers")) {
    const json& dense = f.at("mlp_only_layers");
    if (!dense.is_array()) f.fail("mlp_only_layers", dense.dump(), "expected a list of layers");
    if (!dense.empty()) moe["dense_layers"] = dense;
  }
  return moe;
}

json mixtral_style_moe(const ConfigFields& f) {
  return {{"num_experts", f.integer("num_local_experts")},
          {"num_experts_per_tok", f.integer("num_experts_per_tok")},
          {"moe_intermediate_size", f.integer("intermediate_size")}};
}

json linear_attention_block(const ConfigFields& f) {
  return {{"num_key_heads", f.integer("linear_num_key_heads")},
          {"key_head_dim", f.integer("linear_key_head_dim")},
          {"num_value_heads", f.integer("linear_num_value_heads")},
          {"value_head_dim", f.integer("linear_value_head_dim")},
          {"conv_kernel", f.integer_or("linear_conv_kernel_dim", 4)}};
}

// vLLM 0.33's deepseek_v2.py DeepseekV2MoE: n_routed_experts + n_shared_experts (one MLP of
// n_shared_experts x moe_intermediate_size) after first_k_dense_replace dense layers.
void deepseek_moe(Context& c) {
  const ConfigFields& f = c.f;
  json moe = {{"num_experts", f.integer("n_routed_experts")},
              {"num_experts_per_tok", f.integer("num_experts_per_tok")},
              {"moe_intermediate_size", f.integer("moe_intermediate_size")},
              {"num_shared_experts", f.integer_or("n_shared_experts", 0)},
              {"first_k_dense", f.integer_or("first_k_dense_replace", 0)}};
  if (f.integer_or("moe_layer_freq", 1) != 1) moe["moe_layer_step"] = f.integer("moe_layer_freq");
  if (f.string_or("topk_method", "") == "noaux_tc") moe["router_bias"] = true;
  c.doc["moe"] = moe;
}

// deepseek_v2.py's DeepseekV2MLAAttention dimensions (q_lora_rank 0 or null: a plain q_proj).
json mla_dimensions(const ConfigFields& f) {
  return {{"q_lora_rank", f.integer_or("q_lora_rank", 0)},
          {"kv_lora_rank", f.integer("kv_lora_rank")},
          {"qk_nope_head_dim", f.integer("qk_nope_head_dim")},
          {"qk_rope_head_dim", f.integer("qk_rope_head_dim")},
          {"v_head_dim", f.integer("v_head_dim")}};
}

void deepseek_moe_mla(Context& c) {
  deepseek_moe(c);
  c.doc["mla"] = mla_dimensions(c.f);
}

// DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): the indexer's geometry. vLLM builds an
// indexer in every layer unless index_topk_freq / index_topk_pattern let some layers share the
// previous layer's top-k (vllm/models/deepseek_v32/attention.py, skip_topk); those layers keep no
// indexer cache, so the layers' pages differ in size: refused by name.
void dsa_indexer(Context& c) {
  const ConfigFields& f = c.f;
  c.doc["mla"]["index_head_dim"] = f.integer("index_head_dim");
  c.doc["mla"]["index_n_heads"] = f.integer("index_n_heads");
  if (f.integer_or("index_topk_freq", 1) > 1) {
    f.fail("index_topk_freq", std::to_string(f.integer("index_topk_freq")),
           "layers sharing the previous layer's indexer (IndexShare) keep no indexer cache; "
           "pages of two sizes are not modelled");
  }
  if (f.string_or("index_topk_pattern", "").find('S') != std::string::npos) {
    f.fail("index_topk_pattern", f.string_or("index_topk_pattern", ""),
           "layers sharing the previous layer's indexer (S) are not modelled");
  }
}

void nemotron_h(Context& c) {
  const ConfigFields& f = c.f;
  if (!f.has("hybrid_override_pattern"))
    f.fail("hybrid_override_pattern", "missing", "required for nemotron_h");
  const std::string pattern = f.string_or("hybrid_override_pattern", "");
  c.doc["hybrid_override_pattern"] = pattern;
  c.doc["mlp"] = "plain";  // squared-ReLU up/down
  c.doc["norms_per_layer"] = 1;
  c.doc["mamba"] = {{"num_heads", f.integer("mamba_num_heads")},
                    {"head_dim", f.integer("mamba_head_dim")},
                    {"state_size", f.integer("ssm_state_size")},
                    {"n_groups", f.integer_or("n_groups", 1)},
                    {"conv_kernel", f.integer_or("conv_kernel", 4)}};
  if (pattern.find('E') != std::string::npos) {
    json moe = {{"num_experts", f.integer("n_routed_experts")},
                {"num_experts_per_tok", f.integer("num_experts_per_tok")},
                {"moe_intermediate_size", f.integer("moe_intermediate_size")},
                {"router_bias", true}};  // e_score_correction_bias
    const std::int64_t shared = f.integer_or("n_shared_experts", 0);
    if (shared > 0) {
      moe["num_shared_experts"] = shared;
      moe["shared_expert_intermediate_size"] = f.integer("moe_shared_expert_intermediate_size");
    }
    c.doc["moe"] = moe;
  }
}

// Qwen3-Next: Gated DeltaNet every full_attention_interval (unless layer_types), gated attention.
void qwen3_next_hybrid(Context& c) {
  const ConfigFields& f = c.f;
  c.doc["attn_output_gate"] = true;
  if (!c.doc.contains("layer_types")) {
    const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
    const std::int64_t interval = f.integer("full_attention_interval");
    if (interval <= 0 || interval > layers)
      f.fail("full_attention_interval", std::to_string(interval), "out of range");
    json kinds = json::array();
    for (std::int64_t i = 0; i + 1 < interval; ++i) kinds.push_back("linear_attention");
    kinds.push_back("full_attention");
    c.doc["layer_pattern"] = kinds;
  }
  c.doc["linear_attention"] = linear_attention_block(f);
}

// Qwen3.5 / 3.6: Gated DeltaNet and gated full attention per layer_types (or
// full_attention_interval).
void qwen3_5_hybrid(Context& c) {
  const ConfigFields& f = c.f;
  c.doc["attn_output_gate"] = f.boolean_or("attn_output_gate", true);
  if (!c.doc.contains("layer_types")) {
    const std::int64_t interval = f.integer("full_attention_interval");
    if (interval <= 0) f.fail("full_attention_interval", std::to_string(interval), "out of range");
    json kinds = json::array();
    for (std::int64_t i = 0; i + 1 < interval; ++i) kinds.push_back("linear_attention");
    kinds.push_back("full_attention");
    c.doc["layer_pattern"] = kinds;
  }
  c.doc["linear_attention"] = linear_attention_block(f);
}

void llama4(Context& c) {
  const ConfigFields& f = c.f;
  const std::int64_t inter = f.integer("intermediate_size");
  c.doc["intermediate_size"] = f.integer_or("intermediate_size_mlp", inter);
  json moe = {{"num_experts", f.integer("num_local_experts")},
              {"num_experts_per_tok", f.integer("num_experts_per_tok")},
              {"moe_intermediate_size", inter},
              {"num_shared_experts", 1},
              {"shared_expert_intermediate_size", inter}};
  const std::int64_t step = f.integer_or("interleave_moe_layer_step", 1);
  if (step != 1) moe["moe_layer_step"] = step;
  c.doc["moe"] = moe;
  // Local layers attend within chunks; every 4th layer (no RoPE) is global.
  const std::int64_t chunk = f.integer_or("attention_chunk_size", 0);
  if (chunk > 0) {
    c.doc["attention_chunk_size"] = chunk;
    c.doc["layer_pattern"] = {"chunked_attention", "chunked_attention", "chunked_attention",
                              "full_attention"};
  }
}

// Gemma-4 as vLLM 0.33's gemma4.py builds it from transformers' Gemma4TextConfig: full-attention
// layers take global_head_dim and, with attention_k_eq_v, num_global_key_value_heads
// (per_layer_config); the last num_kv_shared_layers read the KV of the last earlier layer of
// their kind (q/o projections only) and, with use_double_wide_mlp, a 2x MLP; an MoE block
// (num_experts not null) runs beside the dense MLP; hidden_size_per_layer_input > 0 adds
// per-layer input embeddings. Norms per layer: input, post-attention, pre- and post-feedforward,
// with MoE three more and the router's scale, with per-layer inputs the post-PLE norm.
void gemma4(Context& c) {
  const ConfigFields& f = c.f;
  c.doc["full_attention_head_dim"] = f.integer("global_head_dim");
  if (f.boolean_or("attention_k_eq_v", false) && f.has("num_global_key_value_heads")) {
    c.doc["full_attention_num_key_value_heads"] = f.integer("num_global_key_value_heads");
  }
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  const std::int64_t shared = f.integer_or("num_kv_shared_layers", 0);
  if (shared >= layers) {
    f.fail("num_kv_shared_layers", std::to_string(shared),
           "must be below num_hidden_layers (" + std::to_string(layers) + ")");
  }
  if (shared > 0) {
    c.doc["num_kv_shared_layers"] = shared;
    if (f.boolean_or("use_double_wide_mlp", false)) c.doc["kv_shared_double_wide_mlp"] = true;
  }
  std::int64_t norms = 4;
  if (f.has("num_experts")) {
    const std::int64_t expert_width = f.has("moe_intermediate_size")
                                          ? f.integer("moe_intermediate_size")
                                          : f.integer("expert_intermediate_size");
    c.doc["moe"] = {{"num_experts", f.integer("num_experts")},
                    {"num_experts_per_tok", f.integer("top_k_experts")},
                    {"moe_intermediate_size", expert_width},
                    {"dense_mlp_beside_experts", true}};
    norms += 4;
  }
  const std::int64_t per_layer_input = f.integer_or("hidden_size_per_layer_input", 0);
  if (per_layer_input > 0) {
    c.doc["per_layer_input_size"] = per_layer_input;
    c.doc["per_layer_input_vocab_size"] = f.integer("vocab_size_per_layer_input");
    norms += 1;
  }
  c.doc["norms_per_layer"] = norms;
}

// Gemma3nTextConfig's intermediate_size: one width, or a list of one per layer (MatFormer);
// a list of one width is that width, a mixed list per-layer widths.
void gemma3n_mlp_widths(Context& c) {
  const ConfigFields& f = c.f;
  const json* widths = f.value("intermediate_size");
  if (widths == nullptr || !widths->is_array()) return;  // an integer: read already
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  if (static_cast<std::int64_t>(widths->size()) != layers) {
    f.fail("intermediate_size", std::to_string(widths->size()) + " entries",
           "a list needs num_hidden_layers (" + std::to_string(layers) + ") entries");
  }
  json sizes = json::array();
  for (const json& w : *widths) {
    if (!w.is_number_integer() || w.get<std::int64_t>() <= 0) {
      f.fail("intermediate_size", w.dump(), "expected positive integers");
    }
    sizes.push_back(w);
  }
  c.doc["intermediate_size"] = sizes.front();
  if (std::any_of(sizes.begin(), sizes.end(), [&](const json& w) { return w != sizes.front(); })) {
    c.doc["layer_intermediate_sizes"] = sizes;
  }
}

// Gemma-3n's text model as vLLM 0.33's gemma3n.py builds it from transformers'
// Gemma3nTextConfig: the last num_kv_shared_layers read an earlier layer's KV (q_proj, o_proj
// and q_norm only; v_norm has no weight), per-layer input embeddings, an AltUp of
// altup_num_inputs streams and a LAuReL block of laurel_rank in every layer. Norms per layer:
// input, post-attention, pre- and post-feedforward, post-per-layer-input (AltUp's router norm
// and output scale and LAuReL's norm are counted with their blocks). vLLM raises on another
// hidden_activation and asserts altup_correct_scale.
void gemma3n(Context& c) {
  const ConfigFields& f = c.f;
  gemma3n_mlp_widths(c);
  const std::string activation = f.string_or("hidden_activation", "gelu_pytorch_tanh");
  if (activation != "gelu_pytorch_tanh") {
    f.fail("hidden_activation", activation, "vLLM's gemma3n.py builds gelu_pytorch_tanh only");
  }
  if (!f.boolean_or("altup_correct_scale", true)) {
    f.fail("altup_correct_scale", "false", "vLLM's gemma3n.py requires it");
  }
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  const std::int64_t shared = f.integer("num_kv_shared_layers");
  if (shared < 0 || shared >= layers) {
    f.fail("num_kv_shared_layers", std::to_string(shared),
           "must be in [0, num_hidden_layers (" + std::to_string(layers) + "))");
  }
  if (shared > 0) c.doc["num_kv_shared_layers"] = shared;
  c.doc["per_layer_input_size"] = f.integer("hidden_size_per_layer_input");
  c.doc["per_layer_input_vocab_size"] = f.integer("vocab_size_per_layer_input");
  const std::int64_t streams = f.integer("altup_num_inputs");
  const std::int64_t active = f.integer_or("altup_active_idx", 0);
  if (streams < 1 || active < 0 || active >= streams) {
    f.fail("altup_num_inputs", std::to_string(streams),
           "must be positive and above altup_active_idx (" + std::to_string(active) + ")");
  }
  c.doc["altup_num_inputs"] = streams;
  c.doc["laurel_rank"] = f.integer("laurel_rank");
  c.doc["norms_per_layer"] = 5;
}

// Granite-4 hybrids as vLLM 0.33's granitemoehybrid.py builds them: each layer a MambaMixer2
// (layer_types "mamba") or attention ("attention", head_dim = hidden / heads), then the MoE block
// (num_local_experts > 0: a router and experts of intermediate_size) and the shared MLP of
// shared_intermediate_size. Without experts (Granite-4 Micro, H-1B) the shared MLP is the only
// MLP. Conv and SSM states take the model dtype (mamba_ssm_cache_dtype auto; no model override).
void granite_moe_hybrid(Context& c) {
  const ConfigFields& f = c.f;
  // Without layer_types transformers fills "linear_attention", a layer vLLM's model cannot build.
  if (!f.has("layer_types")) {
    f.fail("layer_types", "missing", "required for granitemoehybrid (mamba / attention per layer)");
  }
  if (f.boolean_or("mamba_proj_bias", false)) {
    f.fail("mamba_proj_bias", "true", "Mamba2 in_proj / out_proj biases are not modelled");
  }
  if (!f.boolean_or("mamba_conv_bias", true)) {
    f.fail("mamba_conv_bias", "false", "a Mamba2 conv1d without bias is not modelled");
  }
  const std::int64_t hidden = c.doc["hidden_size"].get<std::int64_t>();
  const std::int64_t heads = f.integer_or("mamba_n_heads", 128);
  if (heads <= 0) f.fail("mamba_n_heads", std::to_string(heads), "must be positive");
  // mamba_d_head "auto" (the class default): mamba_expand x hidden_size / mamba_n_heads.
  const bool auto_head = !f.has("mamba_d_head") || f.at("mamba_d_head").is_string();
  const std::int64_t head_dim =
      auto_head ? f.integer_or("mamba_expand", 2) * hidden / heads : f.integer("mamba_d_head");
  if (head_dim * heads != f.integer_or("mamba_expand", 2) * hidden) {
    f.fail("mamba_d_head", std::to_string(head_dim),
           "mamba_d_head x mamba_n_heads must equal mamba_expand x hidden_size");
  }
  c.doc["mamba"] = {{"num_heads", heads},
                    {"head_dim", head_dim},
                    {"state_size", f.integer_or("mamba_d_state", 256)},
                    {"n_groups", f.integer_or("mamba_n_groups", 1)},
                    {"conv_kernel", f.integer_or("mamba_d_conv", 4)},
                    {"ssm_state_dtype", "auto"}};
  const std::int64_t shared = f.integer_or("shared_intermediate_size", 1024);
  if (f.integer_or("num_local_experts", 8) > 0) {
    json moe = mixtral_style_moe(f);
    if (shared > 0) {
      moe["num_shared_experts"] = 1;
      moe["shared_expert_intermediate_size"] = shared;
    }
    c.doc["moe"] = moe;
  } else {
    if (shared <= 0) {
      f.fail("shared_intermediate_size", std::to_string(shared),
             "a Granite-4 hybrid without experts needs its shared MLP");
    }
    c.doc["intermediate_size"] = shared;
  }
}

void glm4_moe(Context& c) {
  const ConfigFields& f = c.f;
  c.doc["moe"] = {{"num_experts", f.integer("n_routed_experts")},
                  {"num_experts_per_tok", f.integer("num_experts_per_tok")},
                  {"moe_intermediate_size", f.integer("moe_intermediate_size")},
                  {"num_shared_experts", f.integer_or("n_shared_experts", 0)},
                  {"first_k_dense", f.integer_or("first_k_dense_replace", 0)},
                  {"router_bias", true}};  // e_score_correction_bias
}

// vLLM 0.33's glm4_moe_lite.py (GLM-4.7-Flash): DeepseekV2MLAAttention (latent KV) in every
// layer, glm4_moe.py's experts (router bias, shared experts) from first_k_dense_replace on,
// every moe_layer_freq-th layer. With index_topk the layers run DeepSeek sparse attention
// through an index group this row does not size: refused by name.
void glm4_moe_lite(Context& c) {
  glm4_moe(c);
  const ConfigFields& f = c.f;
  // Glm4MoeLiteConfig has no such field (it writes mlp_layer_types, which vLLM does not read):
  // vLLM reads the checkpoint's own key, so a config without it cannot load.
  c.doc["moe"]["first_k_dense"] = f.integer("first_k_dense_replace");
  if (f.integer_or("moe_layer_freq", 1) != 1) {
    c.doc["moe"]["moe_layer_step"] = f.integer("moe_layer_freq");
  }
  if (f.has("index_topk") && !f.at("index_topk").is_null()) {
    f.fail("index_topk", f.at("index_topk").dump(),
           "glm4_moe_lite's sparse-attention index group is not modelled");
  }
  c.doc["mla"] = mla_dimensions(f);
}

void falcon(Context& c) {
  const ConfigFields& f = c.f;
  const std::int64_t heads = c.doc["num_attention_heads"].get<std::int64_t>();
  const bool new_arch = f.boolean_or("new_decoder_architecture", false);
  std::int64_t kv = heads;
  if (new_arch) {
    kv = f.integer_or("num_kv_heads", heads);
  } else if (f.boolean_or("multi_query", true)) {
    kv = 1;
  }
  c.doc["num_key_value_heads"] = kv;
  const std::int64_t hidden = c.doc["hidden_size"].get<std::int64_t>();
  c.doc["intermediate_size"] = f.integer_or("ffn_hidden_size", 4 * hidden);
  c.doc["mlp"] = "plain";
  const bool bias = f.boolean_or("bias", false);
  if (bias) {
    c.doc["qkv_bias"] = true;
    c.doc["o_proj_bias"] = true;
    c.doc["mlp_bias"] = true;
  }
  // LayerNorms (weight + bias): one before parallel attention/MLP in Falcon-7B, two in the
  // new decoder architecture and in sequential blocks.
  const bool parallel = f.boolean_or("parallel_attn", true);
  const std::int64_t norms = new_arch   ? f.integer_or("num_ln_in_parallel_attn", 2)
                             : parallel ? 1
                                        : 2;
  c.doc["norms_per_layer"] = 2 * norms;
  if (f.boolean_or("alibi", false))
    f.fail("alibi", "true", "ALiBi Falcon checkpoints are not modelled");
}

// head_dim = hidden_size / heads, for the families whose vLLM model divides them (no head_dim
// key is read); set into the spec and returned.
std::int64_t head_dim_from_hidden(Context& c) {
  const std::int64_t hidden = c.doc["hidden_size"].get<std::int64_t>();
  const std::int64_t heads = c.doc["num_attention_heads"].get<std::int64_t>();
  if (hidden % heads != 0) {
    c.f.fail("num_attention_heads", std::to_string(heads), "must divide hidden_size");
  }
  c.doc["head_dim"] = hidden / heads;
  return hidden / heads;
}

// vLLM 0.33's chatglm.py GLMTransformer: config.num_layers GLMBlocks; GLMAttention's head is
// hidden / heads with multi_query_group_num KV heads under multi_query_attention, its
// query_key_value biased under add_bias_linear or add_qkv_bias and dense under add_bias_linear;
// get_rope over the whole head with partial_rotary_factor 0.5 and max_position seq_length (8192
// when absent); GLMMLP a gated dense_h_to_4h of ffn_hidden_size; the embedding and output_layer
// hold padded_vocab_size rows. LayerNorm blocks (rmsnorm false), no final norm and GLM-4V's
// vision tower are refused by name.
void chatglm(Context& c) {
  const ConfigFields& f = c.f;
  if (f.has("vision_config")) {
    f.fail("vision_config", "present", "GLM-4V's vision tower (glm4v.py) is not modelled");
  }
  if (!f.boolean_or("rmsnorm", true)) {
    f.fail("rmsnorm", "false", "ChatGLM's LayerNorm blocks are not modelled");
  }
  if (!f.boolean_or("post_layer_norm", true)) {
    f.fail("post_layer_norm", "false", "a ChatGLM without its final norm is not modelled");
  }
  c.doc["num_hidden_layers"] = f.integer("num_layers");
  const std::int64_t heads = c.doc["num_attention_heads"].get<std::int64_t>();
  const std::int64_t head_dim = head_dim_from_hidden(c);
  c.doc["num_key_value_heads"] =
      f.boolean_or("multi_query_attention", false) ? f.integer("multi_query_group_num") : heads;
  c.doc["intermediate_size"] = f.integer("ffn_hidden_size");
  c.doc["vocab_size"] = f.integer("padded_vocab_size");
  const bool linear_bias = f.boolean_or("add_bias_linear", false);
  c.doc["qkv_bias"] = linear_bias || f.boolean_or("add_qkv_bias", false);
  c.doc["o_proj_bias"] = linear_bias;
  c.doc["mlp_bias"] = linear_bias;
  c.doc["rotary_dim"] = head_dim / 2;
  c.doc["rotary_cache_positions"] = f.integer_or("seq_length", 8192);
}

// One DeciLM block's sub-block object ("attention" or "ffn"), refusing a linear replacement
// (vLLM's nemotron_nas.py builds none, so such a checkpoint does not load).
const json& decilm_sub_block(const ConfigFields& f, const json& block, std::size_t i,
                             const char* name) {
  const std::string where = "block_configs[" + std::to_string(i) + "]." + name;
  if (!block.is_object() || !block.contains(name) || !block.at(name).is_object()) {
    f.fail(where.c_str(), "missing", "expected an object");
  }
  const json& sub = block.at(name);
  if (sub.value("replace_with_linear", false)) {
    f.fail((where + ".replace_with_linear").c_str(), "true",
           "a linear replacement block is not built by vLLM's nemotron_nas.py");
  }
  return sub;
}

// vLLM 0.33's nemotron_nas.py (DeciLMForCausalLM: Llama-3.x-Nemotron Super / Ultra / 51B): one
// block_configs entry per layer. attention.no_op drops the attention and its norm, else
// num_attention_heads // n_heads_in_group KV heads; ffn.no_op drops the MLP and its norm, else a
// LlamaMLP of _ffn_mult_to_intermediate_size (int(2 x ffn_mult x hidden / 3) rounded up to 256)
// or the block's intermediate_size.
void nemotron_nas(Context& c) {
  const ConfigFields& f = c.f;
  if (!f.has("block_configs") || !f.at("block_configs").is_array()) {
    f.fail("block_configs", "missing", "required: one block per layer");
  }
  const json& blocks = f.at("block_configs");
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  if (static_cast<std::int64_t>(blocks.size()) != layers) {
    f.fail("block_configs", std::to_string(blocks.size()) + " blocks",
           "must list num_hidden_layers (" + std::to_string(layers) + ") blocks");
  }
  const std::int64_t hidden = c.doc["hidden_size"].get<std::int64_t>();
  const std::int64_t heads = c.doc["num_attention_heads"].get<std::int64_t>();
  json kinds = json::array();
  json kv_heads = json::array();
  json widths = json::array();
  std::int64_t widest = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const json& attention = decilm_sub_block(f, blocks[i], i, "attention");
    const json& ffn = decilm_sub_block(f, blocks[i], i, "ffn");
    const std::string where = "block_configs[" + std::to_string(i) + "].";
    if (attention.value("no_op", false)) {
      kinds.push_back("mlp_only");
      kv_heads.push_back(0);
    } else {
      const json group = attention.value("n_heads_in_group", json());
      if (!group.is_number_integer() || group.get<std::int64_t>() < 1 ||
          group.get<std::int64_t>() > heads) {
        f.fail((where + "attention.n_heads_in_group").c_str(), group.dump(),
               "expected heads per KV head, 1 .. num_attention_heads");
      }
      kinds.push_back("full_attention");
      kv_heads.push_back(heads / group.get<std::int64_t>());
    }
    std::int64_t width = 0;
    if (!ffn.value("no_op", false)) {
      if (ffn.contains("ffn_mult") && ffn.at("ffn_mult").is_number()) {
        const double mult = ffn.at("ffn_mult").get<double>();
        if (!(mult > 0.0 && mult <= 64.0)) {
          f.fail((where + "ffn.ffn_mult").c_str(), ffn.at("ffn_mult").dump(), "expected 0 .. 64");
        }
        width = static_cast<std::int64_t>(2.0 * mult * static_cast<double>(hidden) / 3.0);
        width = (width + 255) / 256 * 256;
      } else if (ffn.contains("intermediate_size") &&
                 ffn.at("intermediate_size").is_number_integer()) {
        width = ffn.at("intermediate_size").get<std::int64_t>();
      } else {
        f.fail((where + "ffn").c_str(), ffn.dump(), "expected ffn_mult or intermediate_size");
      }
    }
    widths.push_back(width);
    widest = std::max(widest, width);
  }
  c.doc["layer_types"] = kinds;
  c.doc["layer_num_key_value_heads"] = kv_heads;
  c.doc["layer_intermediate_sizes"] = widths;
  c.doc["norm_per_block"] = true;
  c.doc["intermediate_size"] = widest;
}

// Gemma-3's sliding layers build their own unscaled rope (rope_local_base_freq; vLLM gemma3.py),
// a second cos/sin cache of max_position_embeddings positions beside the global one.
void local_rope_cache(Context& c) {
  const std::int64_t positions = c.doc["max_position_embeddings"].get<std::int64_t>();
  c.doc["rotary_cache_positions"] = c.doc.value("rotary_cache_positions", positions) + positions;
}

void use_qk_norm(Context& c) {
  if (c.f.boolean_or("use_qk_norm", false)) c.doc["qk_norm"] = true;
}

void use_bias(Context& c) {
  if (c.f.boolean_or("use_bias", true)) {
    c.doc["qkv_bias"] = true;
    c.doc["o_proj_bias"] = true;
    c.doc["mlp_bias"] = true;
  }
}

void internlm_bias(Context& c) {
  if (c.f.boolean_or("bias", false) || c.f.boolean_or("qkv_bias", false)) c.doc["qkv_bias"] = true;
  if (c.f.boolean_or("bias", false)) c.doc["o_proj_bias"] = true;
}

void mixtral_moe(Context& c) { c.doc["moe"] = mixtral_style_moe(c.f); }

void granite_moe(Context& c) {
  json moe = mixtral_style_moe(c.f);
  const std::int64_t shared = c.f.integer_or("shared_intermediate_size", 0);
  if (shared > 0) {
    moe["num_shared_experts"] = 1;
    moe["shared_expert_intermediate_size"] = shared;
  }
  c.doc["moe"] = moe;
}

// vLLM 0.33's granite_layer_attn_params (granite.py, shared by granitemoe.py): the sliding layers
// layer_types names, which GraniteSWAConfig / GraniteMoeSWAConfig fill when a config omits it
// (full attention on layers i % 4 == 0, sliding on the others); a sink logit per query head on
// every layer, since those classes always set layer_types, unless attention_sinks is false.
void granite_swa(Context& c) {
  if (!c.f.has("layer_types")) {
    const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
    json kinds = json::array();
    for (std::int64_t i = 0; i < layers; ++i) {
      kinds.push_back(i % 4 == 0 ? "full_attention" : "sliding_attention");
    }
    c.doc["layer_types"] = kinds;
    if (layers > 1) {
      const std::int64_t window = c.f.integer("sliding_window");
      if (window <= 0) c.f.fail("sliding_window", std::to_string(window), "must be positive");
      c.doc["sliding_window"] = window;
    }
  }
  c.doc["attention_sinks"] = c.f.boolean_or("attention_sinks", true);
}

void gpt_oss_moe(Context& c) {
  json moe = mixtral_style_moe(c.f);
  moe["expert_bias"] = true;
  moe["router_bias"] = true;
  c.doc["moe"] = moe;
}

void qwen_moe(Context& c) { c.doc["moe"] = qwen_style_moe(c.f, false); }

void qwen_moe_quantizable_router(Context& c) { c.doc["moe"] = qwen_style_moe(c.f, true); }

// The layers a config's mlp_layer_types (one "dense" or "sparse" a layer) marks dense, for
// moe.dense_layers.
json mlp_layer_types_dense(const ConfigFields& f, std::int64_t layers) {
  const json& types = f.at("mlp_layer_types");
  if (!types.is_array() || static_cast<std::int64_t>(types.size()) != layers) {
    f.fail("mlp_layer_types", types.dump().substr(0, 80),
           "expected a list of num_hidden_layers entries");
  }
  json dense = json::array();
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (types[i] == "dense") {
      dense.push_back(i);
    } else if (types[i] != "sparse") {
      f.fail("mlp_layer_types", types[i].dump(), "expected dense or sparse");
    }
  }
  return dense;
}

// vLLM 0.33's exaone_moe.py: per mlp_layer_types (ExaoneMoeConfig: dense below
// first_k_dense_replace when omitted) a gated MLP or ExaoneMoe: a GateLinear router built
// without quant_config, an fp32 e_score_correction_bias, num_experts experts of
// moe_intermediate_size and one shared MLP of num_shared_experts x moe_intermediate_size (its
// parameters those of num_shared_experts such experts). q/k/v/o biased with attention_bias or
// bias. Per-layer sliding_windows (K-EXAONE 2.0) are not modelled.
void exaone_moe(Context& c) {
  const ConfigFields& f = c.f;
  if (f.has("sliding_windows")) {
    f.fail("sliding_windows", "a per-layer list",
           "per-layer sliding windows (K-EXAONE 2.0) are not modelled");
  }
  if (f.boolean_or("bias", false)) {
    c.doc["qkv_bias"] = true;
    c.doc["o_proj_bias"] = true;
  }
  const std::int64_t width = f.integer("moe_intermediate_size");
  json moe = {{"num_experts", f.integer("num_experts")},
              {"num_experts_per_tok", f.integer("num_experts_per_tok")},
              {"moe_intermediate_size", width},
              {"router_bias", true}};
  const std::int64_t shared = f.integer_or("num_shared_experts", 0);
  if (shared > 0) {
    moe["num_shared_experts"] = shared;
    moe["shared_expert_intermediate_size"] = width;
  }
  if (!f.has("mlp_layer_types")) {
    moe["first_k_dense"] = f.integer_or("first_k_dense_replace", 1);
    c.doc["moe"] = moe;
    return;
  }
  const json dense = mlp_layer_types_dense(f, c.doc["num_hidden_layers"].get<std::int64_t>());
  if (!dense.empty()) moe["dense_layers"] = dense;
  c.doc["moe"] = moe;
}

// vLLM 0.33's stablelm.py: q/k/v bias from use_qkv_bias; it builds no q/k LayerNorms, so
// AutoWeightsLoader refuses a checkpoint that stores them (qk_layernorm: StableLM-2-12B).
void stablelm(Context& c) {
  if (c.f.boolean_or("qk_layernorm", false)) {
    c.f.fail("qk_layernorm", "true",
             "vLLM 0.33's stablelm.py builds no per-head q/k LayerNorms and cannot load them");
  }
  if (c.f.boolean_or("use_qkv_bias", false)) c.doc["qkv_bias"] = true;
}

// vLLM 0.33's olmoe.py: num_experts routed experts of intermediate_size (no shared expert),
// q_norm over num_heads x head_dim and k_norm over num_key_value_heads x head_dim, counted as
// two more hidden-wide norms (norms_per_layer 4), which holds only with as many KV heads as heads.
void olmoe(Context& c) {
  c.doc["moe"] = {{"num_experts", c.f.integer("num_experts")},
                  {"num_experts_per_tok", c.f.integer("num_experts_per_tok")},
                  {"moe_intermediate_size", c.f.integer("intermediate_size")}};
  const std::int64_t heads = c.doc["num_attention_heads"].get<std::int64_t>();
  const std::int64_t kv_heads = c.doc["num_key_value_heads"].get<std::int64_t>();
  if (kv_heads != heads) {
    c.f.fail("num_key_value_heads", std::to_string(kv_heads),
             "OLMoE's k_norm spans the KV heads; only num_key_value_heads = num_attention_heads "
             "is modelled");
  }
}

// A rotary_dim key (MiniMax-M2, Ling): the rotary size, over partial_rotary_factor.
void rotary_dim_key(Context& c) {
  if (!c.f.has("rotary_dim")) return;
  const std::int64_t rotary = c.f.integer("rotary_dim");
  const std::int64_t head_dim = c.doc["head_dim"].get<std::int64_t>();
  if (rotary <= 0 || rotary > head_dim) {
    c.f.fail("rotary_dim", std::to_string(rotary), "expected 1 .. head_dim");
  }
  if (rotary < head_dim) {
    c.doc["rotary_dim"] = rotary;
  } else {
    c.doc.erase("rotary_dim");
  }
}

// vLLM 0.33's minimax_m2.py: every layer full attention (attn_type_list is not read) and
// num_local_experts routed experts of intermediate_size behind a sigmoid router with an fp32
// e_score_correction_bias (use_routing_bias); q_norm / k_norm span all heads (counted as the
// per-head q/k norm, 6,912 parameters a layer fewer at 48 / 8 heads of 128); rotary_dim is the
// partial rotary size. The MTP modules (num_mtp_modules) are dropped at load.
void minimax_m2(Context& c) {
  json moe = mixtral_style_moe(c.f);
  if (c.f.boolean_or("use_routing_bias", false)) moe["router_bias"] = true;
  c.doc["moe"] = moe;
  if (c.f.boolean_or("use_qk_norm", false)) c.doc["qk_norm"] = true;
  rotary_dim_key(c);
}

// vLLM 0.33's bailing_moe.py (Ling / Ring, BailingMoeForCausalLM and BailingMoeV2ForCausalLM):
// fused query_key_value biased with use_bias or use_qkv_bias; with use_bias also the dense
// projection and every MLP, shared experts included (refused by name, as ERNIE 4.5 MoE's);
// per-head q/k norms with use_qk_norm (RMSNorms with use_rmsnorm, else LayerNorms whose two
// biases of head_dim a layer are not counted); rotary_dim, else partial_rotary_factor. Layers
// from first_k_dense_replace on hold num_experts routed experts of moe_intermediate_size and one
// shared MLP of num_shared_experts x moe_shared_expert_intermediate_size (moe_intermediate_size
// when absent), the router's expert bias with moe_router_enable_expert_bias. vLLM reads
// first_k_dense_replace and num_shared_experts from the checkpoint's config (remote code).
void bailing_moe(Context& c) {
  const ConfigFields& f = c.f;
  if (f.boolean_or("use_bias", true)) {
    f.fail("use_bias", "true",
           "biased dense and shared-expert projections are not modelled (BailingMoeConfig's "
           "default is true)");
  }
  if (f.boolean_or("use_qkv_bias", false)) c.doc["qkv_bias"] = true;
  if (f.boolean_or("use_qk_norm", false)) c.doc["qk_norm"] = true;
  rotary_dim_key(c);
  json moe = {{"num_experts", f.integer("num_experts")},
              {"num_experts_per_tok", f.integer("num_experts_per_tok")},
              {"moe_intermediate_size", f.integer("moe_intermediate_size")},
              {"first_k_dense", f.integer("first_k_dense_replace")}};
  const std::int64_t shared = f.integer("num_shared_experts");
  if (shared > 0) {
    moe["num_shared_experts"] = shared;
    moe["shared_expert_intermediate_size"] =
        f.integer_or("moe_shared_expert_intermediate_size", f.integer("moe_intermediate_size"));
  }
  if (f.boolean_or("moe_router_enable_expert_bias", false)) moe["router_bias"] = true;
  c.doc["moe"] = moe;
}

// vLLM 0.33's ernie45_moe.py: routed experts (moe_num_experts of moe_intermediate_size, top
// moe_k) behind a router with an fp32 e_score_correction_bias, plus moe_num_shared_experts
// shared experts of moe_intermediate_size, on layers from moe_layer_start_index to
// moe_layer_end_index (-1: the last) every moe_layer_interval; the others keep the dense MLP.
// use_bias puts biases on q/k/v and on every MLP, shared experts included: refused by name.
void ernie45_moe(Context& c) {
  const ConfigFields& f = c.f;
  if (f.boolean_or("use_bias", false)) {
    f.fail("use_bias", "true", "biased MoE and shared-expert projections are not modelled");
  }
  const std::int64_t experts = f.integer_or("moe_num_experts", 0);
  if (experts <= 0 || !f.boolean_or("use_moe", true)) return;
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  const std::int64_t start = f.integer_or("moe_layer_start_index", 0);
  // Ernie4_5_MoeConfig.__post_init__ turns the default -1 into the last layer.
  const bool last = !f.has("moe_layer_end_index") || f.at("moe_layer_end_index") == -1;
  const std::int64_t end = last ? layers - 1 : f.integer("moe_layer_end_index");
  const std::int64_t interval = f.integer_or("moe_layer_interval", 1);
  if (start < 0 || start >= layers) {
    f.fail("moe_layer_start_index", std::to_string(start), "expected 0 .. num_hidden_layers - 1");
  }
  if (end < start || end >= layers) {
    f.fail("moe_layer_end_index", std::to_string(end),
           "expected -1 or moe_layer_start_index .. num_hidden_layers - 1");
  }
  if (interval <= 0) f.fail("moe_layer_interval", std::to_string(interval), "must be positive");
  json moe = {{"num_experts", experts},
              {"num_experts_per_tok", f.integer("moe_k")},
              {"moe_intermediate_size", f.integer("moe_intermediate_size")},
              {"router_bias", true},
              {"first_k_dense", start}};
  if (interval != 1) moe["moe_layer_step"] = interval;
  const std::int64_t shared = f.integer_or("moe_num_shared_experts", 0);
  if (shared > 0) {
    moe["num_shared_experts"] = shared;
    moe["shared_expert_intermediate_size"] = f.integer("moe_intermediate_size");
  }
  json dense = json::array();
  for (std::int64_t i = end + 1; i < layers; ++i) dense.push_back(i);
  if (!dense.empty()) moe["dense_layers"] = dense;
  c.doc["moe"] = moe;
}

// vLLM 0.33's dbrx.py: d_model / n_heads / n_layers / max_seq_len (the row's renames), KV heads
// from attn_config.kv_n_heads (fused Wqkv, no biases), ffn_config.moe_num_experts routed experts
// of ffn_config.ffn_hidden_size (top moe_top_k); norm_1 / norm_2 / norm_f are nn.LayerNorms,
// built with a bias (norms_per_layer 4) although the checkpoint stores none.
void dbrx(Context& c) {
  const ConfigFields& f = c.f;
  for (const char* key : {"attn_config", "ffn_config"}) {
    if (!f.has(key) || !f.at(key).is_object()) {
      f.fail(key, f.has(key) ? f.at(key).dump().substr(0, 80) : "missing", "expected an object");
    }
  }
  const ConfigFields attn(f.at("attn_config"), f.file(), f.prefix() + "attn_config.");
  const ConfigFields ffn(f.at("ffn_config"), f.file(), f.prefix() + "ffn_config.");
  const std::int64_t kv_heads = attn.integer("kv_n_heads");
  const std::int64_t heads = c.doc["num_attention_heads"].get<std::int64_t>();
  if (kv_heads <= 0 || kv_heads > heads) {
    attn.fail("kv_n_heads", std::to_string(kv_heads), "expected 1 .. n_heads");
  }
  c.doc["num_key_value_heads"] = kv_heads;
  c.doc["moe"] = {{"num_experts", ffn.integer("moe_num_experts")},
                  {"num_experts_per_tok", ffn.integer("moe_top_k")},
                  {"moe_intermediate_size", ffn.integer("ffn_hidden_size")}};
}

// vLLM 0.33's bloom.py: dense_h_to_4h is always 4 x hidden_size (n_inner is not read).
void bloom(Context& c) {
  c.doc["intermediate_size"] = 4 * c.doc["hidden_size"].get<std::int64_t>();
}

// vLLM 0.33's gpt_j.py: fc_in of n_inner (4 x n_embd when null), partial rotary of rotary_dim;
// it asserts rotary embeddings and an untied lm_head (which carries a bias, not counted: vocab
// parameters).
void gptj(Context& c) {
  const ConfigFields& f = c.f;
  if (!f.boolean_or("rotary", true)) {
    f.fail("rotary", "false", "vLLM 0.33's gpt_j.py requires rotary embeddings");
  }
  if (c.doc["tie_word_embeddings"].get<bool>()) {
    f.fail("tie_word_embeddings", "true", "vLLM 0.33's gpt_j.py requires an untied lm_head");
  }
  if (c.doc["intermediate_size"].get<std::int64_t>() == 0) {
    c.doc["intermediate_size"] = 4 * c.doc["hidden_size"].get<std::int64_t>();
  }
  const std::int64_t rotary = f.integer("rotary_dim");
  const std::int64_t head_dim = c.doc["head_dim"].get<std::int64_t>();
  if (rotary <= 0 || rotary > head_dim || rotary % 2 != 0) {
    f.fail("rotary_dim", std::to_string(rotary), "expected an even size in 2 .. head_dim");
  }
  if (rotary < head_dim) c.doc["rotary_dim"] = rotary;
}

// vLLM 0.33's gpt2.py: c_fc of n_inner (4 x n_embd when null) and the learned position table
// wpe of n_positions rows.
void gpt2(Context& c) {
  if (c.doc["intermediate_size"].get<std::int64_t>() == 0) {
    c.doc["intermediate_size"] = 4 * c.doc["hidden_size"].get<std::int64_t>();
  }
  c.doc["position_embeddings"] = c.doc["max_position_embeddings"];
}

// vLLM 0.33's opt.py: fc1 of ffn_dim, q/k/v/out_proj and fc1/fc2 biased with enable_bias, the
// learned position table of max_position_embeddings + 2 rows (OPT's offset). A
// word_embed_proj_dim apart from hidden_size (OPT-350m's project_in / project_out) is refused.
void opt(Context& c) {
  const ConfigFields& f = c.f;
  const std::int64_t hidden = c.doc["hidden_size"].get<std::int64_t>();
  const std::int64_t projection = f.integer_or("word_embed_proj_dim", hidden);
  if (projection != hidden) {
    f.fail("word_embed_proj_dim", std::to_string(projection),
           "project_in / project_out (a word_embed_proj_dim apart from hidden_size) are not "
           "modelled");
  }
  if (f.boolean_or("enable_bias", true)) {
    c.doc["qkv_bias"] = true;
    c.doc["o_proj_bias"] = true;
    c.doc["mlp_bias"] = true;
  }
  c.doc["position_embeddings"] = c.doc["max_position_embeddings"].get<std::int64_t>() + 2;
}

std::int64_t bounded(const ConfigFields& where, const char* key, std::int64_t limit);
std::int64_t whisper_style_encoder(const ConfigFields& a);

// vLLM 0.33's whisper.py (WhisperForConditionalGeneration): the decoder is the text model,
// decoder_layers layers (WhisperConfig's num_hidden_layers is encoder_layers) of
// decoder_attention_heads heads, each with a self-attention, a cross-attention to the encoder's
// max_source_positions output tokens and an fc1 / fc2 MLP of decoder_ffn_dim, all biased (k too:
// the fused qkv_proj / kv_proj hold the zero k bias the loader adds), three LayerNorms with
// biases; a learned position table of max_target_positions rows; embed_tokens a plain
// nn.Embedding (whole on every TP rank), proj_out tied to it.
// The encoder (WhisperEncoder, built while audio is enabled) is the audio tower: Whisper's
// convs, position table, encoder_layers layers and final LayerNorm, plus the zero k bias of each
// layer's fused qkv_proj.
void whisper(Context& c) {
  const ConfigFields& f = c.f;
  constexpr std::int64_t kLayers = 1 << 12;
  constexpr std::int64_t kPositions = 1 << 20;
  c.doc["num_hidden_layers"] = bounded(f, "decoder_layers", kLayers);
  c.doc["position_embeddings"] = bounded(f, "max_target_positions", kPositions);
  c.doc["cross_attention_encoder_tokens"] = bounded(f, "max_source_positions", kPositions);
  c.doc["tie_word_embeddings"] = true;  // proj_out.tie_weights(embed_tokens), whatever the flag
  c.doc["replicated_token_embedding"] = true;  // embed_tokens is a plain nn.Embedding
  const std::int64_t d = c.doc["hidden_size"].get<std::int64_t>();
  const std::int64_t encoder_heads = bounded(f, "encoder_attention_heads", d);
  if (d % encoder_heads != 0) {
    f.fail("encoder_attention_heads", std::to_string(encoder_heads),
           "whisper.py needs d_model a multiple of the encoder's heads");
  }
  c.doc["vision"] = {
      {"num_parameters", whisper_style_encoder(f) + bounded(f, "encoder_layers", kLayers) * d},
      {"modality", "audio"}};
}

// vLLM 0.33's minicpm.py: head_dim = hidden_size / heads (a head_dim or kv_channels key is not
// read); num_experts > 0 makes every MLP num_experts routed experts of intermediate_size.
void minicpm(Context& c) {
  head_dim_from_hidden(c);
  if (c.f.integer_or("num_experts", 0) > 0) {
    c.doc["moe"] = {{"num_experts", c.f.integer("num_experts")},
                    {"num_experts_per_tok", c.f.integer("num_experts_per_tok")},
                    {"moe_intermediate_size", c.f.integer("intermediate_size")}};
  }
}

// vLLM 0.33's minicpm3.py: MiniCPM's layers (minicpm above: its MLP or experts) with
// MiniCPM3Attention, DeepSeek-V2's MLA projections (q_a_proj of q_lora_rank, kv_a_proj_with_mqa,
// kv_b_proj, o_proj of heads x v_head_dim) over a standard Attention of num_attention_heads KV
// heads of qk_nope_head_dim + qk_rope_head_dim, V padded to that size: the cache is per head,
// not the latent (minicpm3 is not among vLLM's is_deepseek_mla model_types). MiniCPM3Config
// (transformers 5.20.2) derives an absent v_head_dim as hidden_size / num_attention_heads.
void minicpm3(Context& c) {
  const ConfigFields& f = c.f;
  minicpm(c);
  // MiniCPM3Config allows null (a plain q_proj); vLLM's MiniCPM3Attention does not.
  if (f.integer("q_lora_rank") <= 0) {
    f.fail("q_lora_rank", std::to_string(f.integer("q_lora_rank")),
           "minicpm3.py always builds q_a_proj of q_lora_rank (a positive integer)");
  }
  const std::int64_t heads = c.doc["num_attention_heads"].get<std::int64_t>();
  const bool derived_v = !f.has("v_head_dim") || f.at("v_head_dim").is_null();
  const std::int64_t v_head_dim =
      derived_v ? c.doc["hidden_size"].get<std::int64_t>() / heads : f.integer("v_head_dim");
  const std::int64_t qk_head = f.integer("qk_nope_head_dim") + f.integer("qk_rope_head_dim");
  if (v_head_dim <= 0 || v_head_dim > qk_head) {
    f.fail("v_head_dim", std::to_string(v_head_dim),
           "must be in [1, qk_nope_head_dim + qk_rope_head_dim] (V is padded to that size)");
  }
  c.doc["mla"] = {{"q_lora_rank", f.integer("q_lora_rank")},
                  {"kv_lora_rank", f.integer("kv_lora_rank")},
                  {"qk_nope_head_dim", f.integer("qk_nope_head_dim")},
                  {"qk_rope_head_dim", f.integer("qk_rope_head_dim")},
                  {"v_head_dim", v_head_dim},
                  {"latent_kv_cache", false}};
  c.doc["num_key_value_heads"] = heads;
  c.doc["head_dim"] = qk_head;
}

// vLLM 0.33's lfm2.py: per layer_types (else full_attn_idxs; Lfm2Config: every layer attention
// without either) a ShortConv of conv_dim channels and conv_L_cache taps ("conv") or attention
// with per-head q/k RMSNorms (head_dim = hidden / heads), each followed by a gated w13 / w2
// MLP; two RMSNorms a layer; lm_head always tied to embed_tokens. The MLP width: with
// block_auto_adjust_ff_dim, int(2 x intermediate_size / 3), times block_ffn_dim_multiplier,
// rounded up to block_multiple_of (Lfm2MLP). Lfm2Config reads block_ff_dim as intermediate_size.
// LFM2's layer kinds: per layer_types ("conv" -> a ShortConv, sized as a mamba layer;
// "full_attention"), else full_attn_idxs (Lfm2Config; every layer attention without either, or
// a named error when `layer_types_required`).
json lfm2_layer_kinds(const Context& c, bool layer_types_required) {
  const ConfigFields& f = c.f;
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  json kinds = json::array();
  if (c.doc.contains("layer_types")) {
    for (const auto& t : c.doc["layer_types"]) {
      if (t != "conv" && t != "full_attention") {
        f.fail("layer_types", t.dump(), "lfm2 layers are conv or full_attention");
      }
      kinds.push_back(t == "conv" ? "mamba" : "full_attention");
    }
    return kinds;
  }
  if (layer_types_required) f.fail("layer_types", "missing", "required: it places the layers");
  std::vector<bool> attention(static_cast<std::size_t>(layers), !f.has("full_attn_idxs"));
  if (f.has("full_attn_idxs")) {
    if (!f.at("full_attn_idxs").is_array()) f.fail("full_attn_idxs", "", "expected a list");
    for (const auto& i : f.at("full_attn_idxs")) {
      if (!i.is_number_integer() || i.get<std::int64_t>() < 0 || i.get<std::int64_t>() >= layers)
        f.fail("full_attn_idxs", i.dump(), "expected layer indices below num_hidden_layers");
      attention[i.get<std::size_t>()] = true;
    }
  }
  for (const bool a : attention) kinds.push_back(a ? "full_attention" : "mamba");
  return kinds;
}

// LFM2's attention layers: per-head q/k RMSNorms over head_dim = hidden / heads; the lm_head
// always tied to embed_tokens (both lfm2.py and lfm2_moe.py tie it unconditionally).
void lfm2_attention(Context& c) {
  head_dim_from_hidden(c);
  c.doc["tie_word_embeddings"] = true;
}

void lfm2(Context& c) {
  const ConfigFields& f = c.f;
  const std::int64_t hidden = c.doc["hidden_size"].get<std::int64_t>();
  c.doc["layer_types"] = lfm2_layer_kinds(c, false);
  for (const char* key : {"conv_dim", "block_dim"}) {
    // vLLM reads both from the config (no Lfm2Config field holds them).
    if (f.integer(key) != hidden) {
      f.fail(key, std::to_string(f.integer(key)), "must equal hidden_size (others not modelled)");
    }
  }
  c.doc["short_conv"] = {{"dim", f.integer("conv_dim")},
                         {"conv_kernel", f.integer_or("conv_L_cache", 3)},
                         {"bias", f.boolean_or("conv_bias", false)}};
  lfm2_attention(c);
  std::int64_t width =
      f.has("block_ff_dim") ? f.integer("block_ff_dim") : f.integer("intermediate_size");
  if (f.boolean_or("block_auto_adjust_ff_dim", true)) {
    width = 2 * width / 3;
    if (f.has("block_ffn_dim_multiplier") && !f.at("block_ffn_dim_multiplier").is_null()) {
      width = static_cast<std::int64_t>(f.number_or("block_ffn_dim_multiplier", 1.0) *
                                        static_cast<double>(width));
    }
    const std::int64_t multiple = f.integer_or("block_multiple_of", 256);
    if (multiple <= 0) f.fail("block_multiple_of", std::to_string(multiple), "must be positive");
    width = multiple * ((width + multiple - 1) / multiple);
  }
  c.doc["intermediate_size"] = width;
}

// vLLM 0.33's lfm2_moe.py: lfm2's layers per layer_types (no other layout key), the ShortConv
// over hidden_size (get_mamba_state_shape_from_config), Lfm2MoeMlp of intermediate_size (no
// width adjustment) on layers below num_dense_layers, then Lfm2MoeSparseMoeBlock: a GateLinear
// router given the quant config, an fp32 e_score_correction_bias under use_expert_bias, and
// num_experts experts of moe_intermediate_size; no shared expert.
void lfm2_moe(Context& c) {
  const ConfigFields& f = c.f;
  c.doc["layer_types"] = lfm2_layer_kinds(c, true);
  c.doc["short_conv"] = {{"dim", c.doc["hidden_size"]},
                         {"conv_kernel", f.integer_or("conv_L_cache", 3)},
                         {"bias", f.boolean_or("conv_bias", false)}};
  lfm2_attention(c);
  json moe = {{"num_experts", f.integer("num_experts")},
              {"num_experts_per_tok", f.integer("num_experts_per_tok")},
              {"moe_intermediate_size", f.integer("moe_intermediate_size")},
              {"first_k_dense", f.integer("num_dense_layers")},
              {"router_quantizable", true}};
  if (f.boolean_or("use_expert_bias", true)) moe["router_bias"] = true;
  c.doc["moe"] = moe;
}

// A list of 0 / 1 flags, one a layer (MiMo-V2's hybrid_layer_pattern, moe_layer_freq).
std::vector<bool> layer_flags(const ConfigFields& f, const char* key, std::int64_t layers) {
  const json& flags = f.at(key);
  if (!flags.is_array() || static_cast<std::int64_t>(flags.size()) != layers) {
    f.fail(key, flags.dump().substr(0, 80), "expected a list of num_hidden_layers 0 / 1 flags");
  }
  std::vector<bool> out;
  for (const json& v : flags) {
    if (!v.is_number_integer() || (v.get<std::int64_t>() != 0 && v.get<std::int64_t>() != 1)) {
      f.fail(key, v.dump(), "expected 0 or 1");
    }
    out.push_back(v.get<std::int64_t>() == 1);
  }
  return out;
}

// vLLM 0.33's mimo_v2.py (MiMoV2FlashForCausalLM; MiMoV2ForCausalLM the same layers with a fused
// qkv checkpoint): hybrid_layer_pattern 1 marks a sliding layer over sliding_window_size tokens
// with swa_num_key_value_heads, 0 a full layer with num_key_value_heads; both of head_dim for
// q / k and v_head_dim for v (o_proj reads heads x v_head_dim); a sink per query head on the
// sliding layers under add_swa_attention_sink_bias (counted on every layer here: the spec's sinks
// are per model, heads x full layers more); moe_layer_freq 1 marks a layer of n_routed_experts
// experts of moe_intermediate_size behind a GateLinear router with e_score_correction_bias, 0 (or
// no list) a gated MLP of intermediate_size. Query heads or head sizes that differ between the
// two kinds are refused.
void mimo_v2(Context& c) {
  const ConfigFields& f = c.f;
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  if (!f.has("hybrid_layer_pattern")) {
    f.fail("hybrid_layer_pattern", "missing", "required: it places the sliding layers");
  }
  const std::vector<bool> sliding = layer_flags(f, "hybrid_layer_pattern", layers);
  const std::int64_t head_dim = c.doc["head_dim"].get<std::int64_t>();
  const std::int64_t v_head_dim = f.integer_or("v_head_dim", head_dim);
  const std::pair<const char*, std::int64_t> same[] = {
      {"swa_num_attention_heads", c.doc["num_attention_heads"].get<std::int64_t>()},
      {"swa_head_dim", head_dim},
      {"swa_v_head_dim", v_head_dim}};
  for (const auto& [key, expected] : same) {
    if (f.has(key) && f.integer(key) != expected) {
      f.fail(key, std::to_string(f.integer(key)),
             "sliding layers whose heads differ from the full layers' are not modelled");
    }
  }
  if (v_head_dim != head_dim) c.doc["head_dim_v"] = v_head_dim;
  json kinds = json::array();
  bool any_sliding = false;
  for (const bool s : sliding) {
    kinds.push_back(s ? "sliding_attention" : "full_attention");
    any_sliding |= s;
  }
  c.doc["layer_types"] = kinds;
  if (any_sliding) {
    const std::int64_t window = f.integer("sliding_window_size");
    if (window <= 0) f.fail("sliding_window_size", std::to_string(window), "must be positive");
    c.doc["sliding_window"] = window;
    c.doc["full_attention_num_key_value_heads"] = c.doc["num_key_value_heads"];
    c.doc["num_key_value_heads"] = f.integer("swa_num_key_value_heads");
    if (f.boolean_or("add_swa_attention_sink_bias", false)) c.doc["attention_sinks"] = true;
    // The sliding layers' rope of swa_rope_theta is a second cos/sin cache.
    if (f.has("swa_rope_theta") &&
        f.number_or("swa_rope_theta", 0) != f.number_or("rope_theta", 0)) {
      local_rope_cache(c);
    }
  }
  if (!f.has("moe_layer_freq") || !f.at("moe_layer_freq").is_array()) return;
  const std::vector<bool> sparse = layer_flags(f, "moe_layer_freq", layers);
  json dense = json::array();
  for (std::size_t i = 0; i < sparse.size(); ++i) {
    if (!sparse[i]) dense.push_back(i);
  }
  if (static_cast<std::int64_t>(dense.size()) == layers) return;
  json moe = {{"num_experts", f.integer("n_routed_experts")},
              {"num_experts_per_tok", f.integer("num_experts_per_tok")},
              {"moe_intermediate_size", f.integer("moe_intermediate_size")},
              {"router_bias", true}};
  if (!dense.empty()) moe["dense_layers"] = dense;
  c.doc["moe"] = moe;
}

// vLLM 0.33's openpangu.py for PanguEmbeddedForCausalLM: OpenPanguEmbeddedAttention's q/k/v
// biased with qkv_bias when the config names it, else with attention_bias or bias, which also
// bias o_proj; the MLP with mlp_bias; pre_mlp / post_mlp RMSNorms under sandwich_norm; a window
// per layer from interleaved_sliding_window (one for all, or a list cycled over the layers,
// null for full attention). The MLA (kv_lora_rank), sink-attention (param_sink_number) and MoE
// (n_routed_experts) layers openpangu.py also builds are other checkpoints' and are refused.
void pangu_embedded(Context& c) {
  const ConfigFields& f = c.f;
  for (const char* key : {"kv_lora_rank", "param_sink_number", "n_routed_experts"}) {
    if (f.has(key)) {
      f.fail(key, c.f.at(key).dump(),
             "openPangu's MLA, sink-attention and MoE layers are not modelled under "
             "PanguEmbedded");
    }
  }
  const bool bias = f.boolean_or("attention_bias", false) || f.boolean_or("bias", false);
  c.doc["qkv_bias"] = f.boolean_or("qkv_bias", bias);
  c.doc["o_proj_bias"] = bias;
  c.doc["mlp_bias"] = f.boolean_or("mlp_bias", false);
  if (f.boolean_or("sandwich_norm", false)) c.doc["norms_per_layer"] = 4;
  if (!f.has("interleaved_sliding_window")) return;
  const json& windows = f.at("interleaved_sliding_window");
  const json cycle = windows.is_array() ? windows : json::array({windows});
  std::int64_t window = 0;
  for (const json& w : cycle) {
    if (w.is_null()) continue;
    if (!w.is_number_integer() || w.get<std::int64_t>() <= 0 ||
        (window != 0 && w.get<std::int64_t>() != window)) {
      f.fail("interleaved_sliding_window", windows.dump().substr(0, 80),
             "expected one positive window (or null for full attention) per layer");
    }
    window = w.get<std::int64_t>();
  }
  if (cycle.empty() || window == 0) return;
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  json kinds = json::array();
  for (std::int64_t i = 0; i < layers; ++i) {
    const json& w = cycle[static_cast<std::size_t>(i) % cycle.size()];
    kinds.push_back(w.is_null() ? "full_attention" : "sliding_attention");
  }
  c.doc["layer_types"] = kinds;
  c.doc["sliding_window"] = window;
}

// vLLM 0.33's afmoe.py (Arcee Trinity): the sliding layers layer_types names, which AfmoeConfig
// fills when omitted (full attention where (i + 1) % global_attn_every_n_layers == 0); a
// gate_proj of heads x head_dim on the attention output (q_proj's rows doubled, as Qwen3-Next's
// gate is counted); the dense MLP below num_dense_layers, then AfmoeMoE: a GateLinear router
// with expert_bias, num_experts experts of moe_intermediate_size and one shared MLP of
// num_shared_experts x moe_intermediate_size.
void afmoe(Context& c) {
  const ConfigFields& f = c.f;
  if (!f.has("layer_types")) {
    const std::int64_t every = f.integer("global_attn_every_n_layers");
    if (every <= 0) f.fail("global_attn_every_n_layers", std::to_string(every), "must be positive");
    const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
    json kinds = json::array();
    for (std::int64_t i = 0; i < layers; ++i) {
      kinds.push_back((i + 1) % every != 0 ? "sliding_attention" : "full_attention");
    }
    c.doc["layer_types"] = kinds;
    if (every > 1) {
      const std::int64_t window = f.integer("sliding_window");
      if (window <= 0) f.fail("sliding_window", std::to_string(window), "must be positive");
      c.doc["sliding_window"] = window;
    }
  }
  c.doc["attn_output_gate"] = true;
  const std::int64_t width = f.integer("moe_intermediate_size");
  json moe = {{"num_experts", f.integer("num_experts")},
              {"num_experts_per_tok", f.integer("num_experts_per_tok")},
              {"moe_intermediate_size", width},
              {"first_k_dense", f.integer("num_dense_layers")},
              {"router_bias", true}};
  const std::int64_t shared = f.integer_or("num_shared_experts", 0);
  if (shared > 0) {
    moe["num_shared_experts"] = shared;
    moe["shared_expert_intermediate_size"] = width;
  }
  c.doc["moe"] = moe;
}

// Jamba as vLLM 0.33's jamba.py builds it: attention (head_dim = hidden / heads, no biases)
// on layers i % attn_layer_period == attn_layer_offset, a Mamba-1 mixer (MambaMixer with
// weighted RMSNorms on dt, B and C; d_inner = mamba_expand x hidden) on the others; each layer
// then an MoE of num_experts experts of intermediate_size where i % expert_layer_period ==
// expert_layer_offset (JambaMLP where num_experts is 1). Conv and SSM states take the model
// dtype (MambaStateDtypeCalculator.mamba1_state_dtype; no config override).
void jamba(Context& c) {
  const ConfigFields& f = c.f;
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  const std::int64_t hidden = c.doc["hidden_size"].get<std::int64_t>();
  const auto period_offset = [&f](const char* period_key, const char* offset_key) {
    const std::int64_t period = f.integer(period_key);
    if (period <= 0) f.fail(period_key, std::to_string(period), "must be positive");
    const std::int64_t offset = f.integer(offset_key);
    if (offset < 0 || offset >= period) {
      f.fail(offset_key, std::to_string(offset), std::string("must be in [0, ") + period_key + ")");
    }
    return std::pair<std::int64_t, std::int64_t>{period, offset};
  };
  const auto [attn_period, attn_offset] = period_offset("attn_layer_period", "attn_layer_offset");
  const auto [expert_period, expert_offset] =
      period_offset("expert_layer_period", "expert_layer_offset");
  json kinds = json::array();
  json dense_layers = json::array();
  for (std::int64_t i = 0; i < layers; ++i) {
    kinds.push_back(i % attn_period == attn_offset ? "full_attention" : "mamba");
    if (i % expert_period != expert_offset) dense_layers.push_back(i);
  }
  c.doc["layer_types"] = kinds;
  // JambaConfig: mamba_dt_rank "auto" is ceil(hidden_size / 16).
  const bool auto_rank = !f.has("mamba_dt_rank") || f.at("mamba_dt_rank").is_string();
  const std::int64_t dt_rank = auto_rank ? (hidden + 15) / 16 : f.integer("mamba_dt_rank");
  const std::int64_t inner = f.integer("mamba_expand") * hidden;
  c.doc["mamba"] = {{"version", 1},
                    {"intermediate_size", inner},
                    {"time_step_rank", dt_rank},
                    {"state_size", f.integer("mamba_d_state")},
                    {"conv_kernel", f.integer("mamba_d_conv")},
                    {"conv_bias", f.boolean_or("mamba_conv_bias", true)},
                    {"proj_bias", f.boolean_or("mamba_proj_bias", false)},
                    {"dt_bc_norm_weights", true},
                    {"ssm_state_dtype", "auto"}};
  const std::int64_t experts = f.integer("num_experts");
  if (experts > 1 && static_cast<std::int64_t>(dense_layers.size()) < layers) {
    json moe = {{"num_experts", experts},
                {"num_experts_per_tok", f.integer("num_experts_per_tok")},
                {"moe_intermediate_size", f.integer("intermediate_size")}};
    if (!dense_layers.empty()) moe["dense_layers"] = dense_layers;
    c.doc["moe"] = moe;
  }
}

// The layers of vLLM 0.33's attention-free Mamba models (mamba.py, mamba2.py): each an RMSNorm
// and a mixer, no MLP; then norm_f, and lm_head unless tie_word_embeddings. No config key
// overrides the state dtypes (MambaModelConfig sets none): the SSM state takes the conv
// state's, the served dtype unless --mamba-cache-dtype / --mamba-ssm-cache-dtype say otherwise.
void mamba_layers(Context& c) {
  c.doc["hybrid_override_pattern"] =
      std::string(static_cast<std::size_t>(c.doc["num_hidden_layers"].get<std::int64_t>()), 'M');
  c.doc["norms_per_layer"] = 1;
}

// MambaForCausalLM / FalconMambaForCausalLM (mamba.py): MambaMixer of config.intermediate_size
// (MambaConfig's __post_init__ sets expand x hidden_size, and a config.json that writes
// intermediate_size overrides it: falcon-mamba-7b writes 8192 beside expand 16),
// time_step_rank "auto" = ceil(hidden_size / 16), in/out_proj biases from use_bias, the conv1d
// bias from use_conv_bias. FalconMamba's mixer RMS-normalizes dt, B and C without weights
// (rms_norm_has_weight false); Mamba's has no such norms.
void mamba1_attention_free(Context& c) {
  const ConfigFields& f = c.f;
  mamba_layers(c);
  const std::int64_t hidden = c.doc["hidden_size"].get<std::int64_t>();
  std::int64_t dt_rank = (hidden + 15) / 16;
  if (f.has("time_step_rank")) {
    const json& rank = f.at("time_step_rank");
    if (rank.is_string() && rank.get<std::string>() != "auto") {
      f.fail("time_step_rank", rank.dump(), "expected an integer or \"auto\"");
    }
    if (!rank.is_string()) dt_rank = f.integer("time_step_rank");
  }
  const std::int64_t inner =
      f.has("intermediate_size") ? f.integer("intermediate_size") : f.integer("expand") * hidden;
  if (inner <= 0 || dt_rank <= 0) {
    f.fail(inner <= 0 ? "intermediate_size" : "time_step_rank", "0", "must be positive");
  }
  c.doc["mamba"] = {{"version", 1},
                    {"intermediate_size", inner},
                    {"time_step_rank", dt_rank},
                    {"state_size", f.integer("state_size")},
                    {"conv_kernel", f.integer("conv_kernel")},
                    {"conv_bias", f.boolean_or("use_conv_bias", true)},
                    {"proj_bias", f.boolean_or("use_bias", false)},
                    {"dt_bc_norm_weights", false},
                    {"ssm_state_dtype", "auto"}};
}

// Mamba2ForCausalLM (mamba2.py): MambaMixer2 of num_heads x head_dim (Mamba2Config requires it
// to equal expand x hidden_size, the width vLLM sizes the conv state by), n_groups groups of
// state_size. vLLM builds the mixer with intermediate_size where the config writes one: a
// value other than num_heads x head_dim cannot load.
void mamba2_attention_free(Context& c) {
  const ConfigFields& f = c.f;
  mamba_layers(c);
  const std::int64_t hidden = c.doc["hidden_size"].get<std::int64_t>();
  const std::int64_t heads = f.integer("num_heads");
  const std::int64_t head_dim = f.integer("head_dim");
  const std::int64_t inner = f.integer("expand") * hidden;
  if (heads <= 0 || heads * head_dim != inner) {
    f.fail("num_heads", std::to_string(heads),
           "num_heads x head_dim must equal expand x hidden_size (" + std::to_string(inner) + ")");
  }
  if (f.has("intermediate_size") && f.integer("intermediate_size") != inner) {
    f.fail("intermediate_size", std::to_string(f.integer("intermediate_size")),
           "must equal num_heads x head_dim (" + std::to_string(inner) + ")");
  }
  if (f.boolean_or("use_bias", false)) {
    f.fail("use_bias", "true", "Mamba2 in_proj / out_proj biases are not modelled");
  }
  if (!f.boolean_or("use_conv_bias", true)) {
    f.fail("use_conv_bias", "false", "a Mamba2 conv1d without bias is not modelled");
  }
  c.doc["mamba"] = {{"num_heads", heads},
                    {"head_dim", head_dim},
                    {"state_size", f.integer("state_size")},
                    {"n_groups", f.integer("n_groups")},
                    {"conv_kernel", f.integer("conv_kernel")},
                    {"ssm_state_dtype", "auto"}};
}

// vLLM 0.33's falcon_h1.py (Falcon-H1): every layer runs attention (q/k/v/o without bias) and
// a MambaMixer2 side by side on input_layernorm's output, then pre_ff_layernorm and a gated MLP
// without bias; the muP multipliers are scalars, not weights. The mixer's inner width is
// mamba_d_ssm (mamba_expand x hidden_size when written null) over mamba_n_heads x mamba_d_head;
// its gated norm has a weight only under mamba_rms_norm; both states take the model dtype.
// vLLM's hybrid KV-cache manager holds each layer's KV and its Mamba state as two layers.
void falcon_h1(Context& c) {
  const ConfigFields& f = c.f;
  if (f.has("attn_layer_indices")) {
    f.fail("attn_layer_indices", f.at("attn_layer_indices").dump(),
           "attention on some layers only is not what vLLM's falcon_h1.py builds");
  }
  if (f.boolean_or("mamba_proj_bias", false)) {
    f.fail("mamba_proj_bias", "true", "Mamba2 in_proj / out_proj biases are not modelled");
  }
  if (!f.boolean_or("mamba_conv_bias", true)) {
    f.fail("mamba_conv_bias", "false", "a Mamba2 conv1d without bias is not modelled");
  }
  const std::int64_t hidden = c.doc["hidden_size"].get<std::int64_t>();
  const std::int64_t written = f.integer_or("mamba_d_ssm", -1);
  const std::int64_t inner = written >= 0 ? written : f.integer("mamba_expand") * hidden;
  const std::int64_t heads = f.integer("mamba_n_heads");
  if (heads <= 0 || inner % heads != 0) {
    f.fail("mamba_n_heads", std::to_string(heads), "must divide the Mamba2 inner width");
  }
  // mamba_d_head "auto" (FalconH1Config's default): the inner width over the heads.
  const bool auto_head = !f.has("mamba_d_head") || f.at("mamba_d_head").is_string();
  const std::int64_t head_dim = auto_head ? inner / heads : f.integer("mamba_d_head");
  if (head_dim * heads != inner) {
    f.fail("mamba_d_head", std::to_string(head_dim),
           "mamba_d_head x mamba_n_heads must equal mamba_d_ssm (" + std::to_string(inner) + ")");
  }
  c.doc["mamba_beside_attention"] = true;
  c.doc["mamba"] = {{"num_heads", heads},
                    {"head_dim", head_dim},
                    {"state_size", f.integer("mamba_d_state")},
                    {"n_groups", f.integer("mamba_n_groups")},
                    {"conv_kernel", f.integer("mamba_d_conv")},
                    {"ssm_state_dtype", "auto"},
                    {"gated_norm", f.boolean_or("mamba_rms_norm", false)}};
}

// vLLM 0.33's zamba2.py (Zamba2): a Mamba2 mixer (MambaMixer2 of mamba_expand x hidden_size over
// n_mamba_heads, mamba_ngroups groups of mamba_d_state) on every layer of layers_block_type; a
// "hybrid" layer first runs one of num_mem_blocks shared transformer blocks, round-robin, over
// the 2 x hidden_size concatenation of its input and the embeddings (num_attention_heads heads of
// attention_head_dim for q, k and v alike: vLLM's QKVParallelLinear takes no KV head count, so
// num_key_value_heads is not read), and keeps a KV cache of its own (an Attention per use). The
// block's weights are held once; each use adds a linear [hidden, hidden] and adapter_rank LoRA
// adapters. lm_head is tied whatever the config says; the MLP is GELU-gated (vLLM raises on any
// other hidden_act); both Mamba states take the model dtype.
void zamba2(Context& c) {
  const ConfigFields& f = c.f;
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  const std::int64_t hidden = c.doc["hidden_size"].get<std::int64_t>();
  const std::int64_t heads = c.doc["num_attention_heads"].get<std::int64_t>();
  if (!f.has("layers_block_type")) {
    f.fail("layers_block_type", "missing", "required for zamba2 (mamba / hybrid per layer)");
  }
  const json& types = f.at("layers_block_type");
  if (!types.is_array() || static_cast<std::int64_t>(types.size()) != layers) {
    f.fail("layers_block_type", types.dump().substr(0, 80),
           "a list needs num_hidden_layers (" + std::to_string(layers) + ") entries");
  }
  json kinds = json::array();
  for (const json& t : types) {
    const std::string kind = t.is_string() ? t.get<std::string>() : t.dump();
    if (kind != "mamba" && kind != "hybrid") {
      f.fail("layers_block_type", kind, "expected mamba or hybrid");
    }
    kinds.push_back(kind == "hybrid" ? "full_attention" : "mamba");
  }
  const std::int64_t attention_hidden = f.integer_or("attention_hidden_size", 2 * hidden);
  if (attention_hidden != 2 * hidden) {
    f.fail("attention_hidden_size", std::to_string(attention_hidden),
           "must be 2 x hidden_size: the shared block attends over the hidden states and the "
           "embeddings concatenated");
  }
  const std::int64_t head_dim = f.integer_or("attention_head_dim", attention_hidden / heads);
  if (heads <= 0 || head_dim * heads != attention_hidden) {
    f.fail("attention_head_dim", std::to_string(head_dim),
           "attention_head_dim x num_attention_heads must equal attention_hidden_size");
  }
  if (f.string_or("hidden_act", "gelu") != "gelu") {
    f.fail("hidden_act", f.string_or("hidden_act", ""), "vLLM's Zamba2MLP runs GELU only");
  }
  if (f.boolean_or("add_bias_linear", false)) {
    f.fail("add_bias_linear", "true", "the Mamba2 and MLP biases are not modelled");
  }
  if (!f.boolean_or("use_conv_bias", true)) {
    f.fail("use_conv_bias", "false", "a Mamba2 conv1d without bias is not modelled");
  }
  const std::int64_t inner = f.integer("mamba_expand") * hidden;
  const std::int64_t mamba_heads = f.integer("n_mamba_heads");
  const std::int64_t mamba_head_dim = f.integer("mamba_headdim");
  // The mixer's heads are inner / n_mamba_heads wide, its state mamba_headdim: one width.
  if (mamba_heads <= 0 || mamba_heads * mamba_head_dim != inner) {
    f.fail("mamba_headdim", std::to_string(mamba_head_dim),
           "n_mamba_heads x mamba_headdim must equal mamba_expand x hidden_size (" +
               std::to_string(inner) + ")");
  }
  c.doc["layer_types"] = kinds;
  c.doc["head_dim"] = head_dim;
  c.doc["num_key_value_heads"] = heads;
  c.doc["intermediate_size"] = f.integer("intermediate_size");
  c.doc["tie_word_embeddings"] = true;
  c.doc["norms_per_layer"] = 1;
  c.doc["mamba_beside_attention"] = true;
  const std::int64_t blocks = f.integer("num_mem_blocks");
  if (blocks <= 0) f.fail("num_mem_blocks", std::to_string(blocks), "must be positive");
  c.doc["shared_blocks"] = blocks;
  c.doc["shared_block_adapter_rank"] = f.integer("adapter_rank");
  c.doc["shared_block_attention_adapters"] = f.boolean_or("use_shared_attention_adapter", false);
  c.doc["mamba"] = {{"num_heads", mamba_heads},
                    {"head_dim", mamba_head_dim},
                    {"state_size", f.integer("mamba_d_state")},
                    {"n_groups", f.integer("mamba_ngroups")},
                    {"conv_kernel", f.integer("mamba_d_conv")},
                    {"ssm_state_dtype", "auto"}};
}

// vLLM 0.33's iquest_loopcoder.py (IQuest-Coder-Loop): Llama's layers run twice (loop_num 2,
// vLLM's getattr default); the first pass attends with full attention and keeps its KV, the
// second with the same projections over its own KV of the last loop_window_size tokens (64 by
// default), gated per head against the first pass's by gate_projections [heads, hidden /
// heads] + bias. Every Linear is bias-free and head_dim is hidden_size / heads whatever the
// config says. vLLM registers the two passes' attentions as layers of their own.
void iquest_loop(Context& c) {
  const ConfigFields& f = c.f;
  const std::int64_t loops = f.integer_or("loop_num", 2);
  if (loops != 2) {
    f.fail("loop_num", std::to_string(loops),
           "each further pass keeps a windowed KV of its own; only the second (loop_num 2) is "
           "modelled");
  }
  const std::int64_t window = f.integer_or("loop_window_size", 64);
  if (window <= 0) f.fail("loop_window_size", std::to_string(window), "must be positive");
  const std::int64_t heads = c.doc["num_attention_heads"].get<std::int64_t>();
  c.doc["head_dim"] = c.doc["hidden_size"].get<std::int64_t>() / heads;
  c.doc["loop_window"] = window;
}

// vLLM 0.33's param2moe.py (BharatGen Param2): Ling's layout under its own keys and vLLM's
// getattr defaults. q/k/v biased with use_qkv_bias, o_proj with use_bias, MLPs bias-free,
// per-head q/k RMSNorms with use_qk_norm; a dense MLP of intermediate_size below
// first_k_dense_replace (1), then num_experts experts of moe_intermediate_size behind a router
// with an fp32 expert bias (moe_router_enable_expert_bias, true) and one shared MLP whose width
// moe_shared_expert_intermediate_size gives in total (else moe_intermediate_size x
// num_shared_experts).
void param2_moe(Context& c) {
  const ConfigFields& f = c.f;
  if (f.boolean_or("use_qkv_bias", false)) c.doc["qkv_bias"] = true;
  if (f.boolean_or("use_bias", false)) c.doc["o_proj_bias"] = true;
  if (f.boolean_or("use_qk_norm", false)) c.doc["qk_norm"] = true;
  const std::int64_t width = f.integer("moe_intermediate_size");
  json moe = {{"num_experts", f.integer("num_experts")},
              {"num_experts_per_tok", f.integer("num_experts_per_tok")},
              {"moe_intermediate_size", width},
              {"first_k_dense", f.integer_or("first_k_dense_replace", 1)},
              {"router_bias", f.boolean_or("moe_router_enable_expert_bias", true)}};
  const std::int64_t shared = f.integer_or("num_shared_experts", 1);
  if (shared > 0) {
    moe["num_shared_experts"] = 1;
    moe["shared_expert_intermediate_size"] =
        f.integer_or("moe_shared_expert_intermediate_size", width * shared);
  }
  c.doc["moe"] = moe;
}

// vLLM 0.33's longcat_flash.py (Meituan LongCat-Flash), its config read through transformers'
// LongcatFlashConfig: num_layers decoder layers (vLLM's layer count; the class's
// num_hidden_layers is twice it), each two DeepseekV2 MLA attentions with their own latent caches
// (dual_mla), two dense MLPs of ffn_hidden_size, four RMSNorms and one MoE of n_routed_experts
// experts of expert_ffn_hidden_size whose fp32 router and e_score_correction_bias also score
// zero_expert_num zero-computation experts; logits from an lm_head of its own. The n-gram
// embedding variant (LongcatFlashNgramForCausalLM, ngram_vocab_size_ratio), modules kept out of
// quantization (disable_quant_module) and the MTP drafter (longcat_flash_mtp.py's layer) are not
// modelled: the first two refused by name, the drafter not counted.
void longcat_flash(Context& c) {
  const ConfigFields& f = c.f;
  if (f.has("ngram_vocab_size_ratio")) {
    f.fail("ngram_vocab_size_ratio", f.at("ngram_vocab_size_ratio").dump(),
           "LongCat-Flash's hashed n-gram embedding tables (longcat_flash_ngram.py) are not "
           "modelled");
  }
  if (f.has("disable_quant_module") && !f.at("disable_quant_module").empty()) {
    f.fail("disable_quant_module", f.at("disable_quant_module").dump().substr(0, 80),
           "none: modules kept out of quantization are not modelled");
  }
  const std::int64_t layers = f.integer("num_layers");
  // LongcatFlashConfig's num_hidden_layers setter keeps num_layers = num_hidden_layers / 2 (the
  // file's key: the row's rename copies num_layers into the text config's).
  const ConfigFields& file = c.top;
  if (file.has("num_hidden_layers") && file.integer("num_hidden_layers") != 2 * layers) {
    file.fail("num_hidden_layers", std::to_string(file.integer("num_hidden_layers")),
              "2 x num_layers (" + std::to_string(2 * layers) +
                  ": LongcatFlashConfig counts two attention sublayers a layer)");
  }
  if (layers <= 0 || layers > 100000) f.fail("num_layers", std::to_string(layers), "1 to 100000");
  c.doc["num_hidden_layers"] = layers;
  c.doc["mla"] = mla_dimensions(f);
  // As in DeepseekV3Config, the spec's head_dim is qk_rope_head_dim (MLA layers: sized by mla).
  c.doc["head_dim"] = f.integer("qk_rope_head_dim");
  c.doc["dual_mla"] = true;
  c.doc["dense_mlps_per_layer"] = 2;
  c.doc["norms_per_layer"] = 4;
  c.doc["tie_word_embeddings"] = false;
  c.doc.erase("num_nextn_predict_layers");
  c.doc["moe"] = {{"num_experts", f.integer("n_routed_experts")},
                  {"num_experts_per_tok", f.integer("moe_topk")},
                  {"moe_intermediate_size", f.integer("expert_ffn_hidden_size")},
                  {"zero_experts", f.integer("zero_expert_num")},
                  {"router_bias", true},
                  {"dense_mlp_beside_experts", true}};
}

// vLLM 0.33's sarvam.py SarvamMLAForCausalLM (Sarvam-105B): deepseek_v2.py-style MLA through
// MultiHeadLatentAttentionWrapper (its MLAAttention layer caches the latent, whatever the
// model_type), a dense MLP of intermediate_size below first_k_dense_replace, then on every layer
// (moe_layer_freq 1) num_experts experts of moe_intermediate_size behind a router with an
// fp32 expert bias (moe_router_enable_expert_bias) and one shared MLP of
// moe_shared_expert_intermediate_size (else moe_intermediate_size) x num_shared_experts.
void sarvam_mla(Context& c) {
  const ConfigFields& f = c.f;
  c.doc["mla"] = mla_dimensions(f);
  // The config's head_dim (576) is the latent's width, which sarvam.py never reads; as in
  // DeepseekV3Config, the spec's head_dim is qk_rope_head_dim (MLA layers are sized by mla).
  c.doc["head_dim"] = f.integer("qk_rope_head_dim");
  if (!f.has("num_experts")) return;  // vLLM builds every layer's dense MLP then
  const std::int64_t width = f.integer("moe_intermediate_size");
  json moe = {{"num_experts", f.integer("num_experts")},
              {"num_experts_per_tok", f.integer("num_experts_per_tok")},
              {"moe_intermediate_size", width},
              {"first_k_dense", f.integer_or("first_k_dense_replace", 1)},
              {"router_bias", f.boolean_or("moe_router_enable_expert_bias", true)}};
  if (f.integer_or("moe_layer_freq", 1) != 1) {
    f.fail("moe_layer_freq", std::to_string(f.integer("moe_layer_freq")),
           "1 (sarvam.py's experts on (layer - first_k_dense_replace) % moe_layer_freq == 0 are "
           "not modelled)");
  }
  const std::int64_t shared = f.integer_or("num_shared_experts", 1);
  if (shared > 0) {
    moe["num_shared_experts"] = 1;
    moe["shared_expert_intermediate_size"] =
        f.integer_or("moe_shared_expert_intermediate_size", width) * shared;
  }
  c.doc["moe"] = moe;
}

// vLLM 0.33's AXK1.py (SK Telecom A.X K1): DeepSeek-V3's MLA attention and MoE (routed +
// n_shared_experts x moe_intermediate_size shared, an fp32 e_score_correction_bias under
// topk_method noaux_tc) with a third RMSNorm a layer: post_mlp_layernorm, which every layer
// builds and the MoE layers apply. Its MoE layers follow mlp_layer_types where the config lists
// them (transformers' AXK1Config), else first_k_dense_replace and moe_layer_freq.
void axk1(Context& c) {
  deepseek_moe_mla(c);
  c.doc["norms_per_layer"] = 3;
  json& moe = c.doc["moe"];
  // AXK1Config's default topk_method.
  if (c.f.string_or("topk_method", "noaux_tc") == "noaux_tc") moe["router_bias"] = true;
  if (!c.f.has("mlp_layer_types")) return;
  moe.erase("first_k_dense");
  moe.erase("moe_layer_step");
  const json dense = mlp_layer_types_dense(c.f, c.doc["num_hidden_layers"].get<std::int64_t>());
  if (!dense.empty()) moe["dense_layers"] = dense;
}

// Laguna's rope per layer type (laguna.py): rope_parameters keyed by full_attention /
// sliding_attention (or one flat dict for every layer), partial_rotary_factor from the dict else
// the config. vLLM's get_rope builds one cos/sin cache per distinct rope: YaRN's of
// original_max_position_embeddings x factor positions, the default's of max_position_embeddings,
// each head_dim x partial_rotary_factor wide. Written as rotary_dim head_dim over the positions
// that give the caches' sum.
void laguna_rope_cache(Context& c, const std::set<std::string>& types, std::int64_t head_dim) {
  const ConfigFields& f = c.f;
  if (f.has("swa_rope_parameters")) {
    f.fail("swa_rope_parameters", f.at("swa_rope_parameters").dump().substr(0, 80),
           "a separate sliding-layer rope of the legacy schema is not modelled");
  }
  const json none = json::object();
  // LagunaConfig.__post_init__'s rope where the config gives none (the table's defaults hold
  // plain values only).
  const json class_default = {
      {"full_attention", {{"rope_type", "default"}, {"partial_rotary_factor", 0.5}}},
      {"sliding_attention", {{"rope_type", "default"}, {"partial_rotary_factor", 1.0}}}};
  const json* given = f.value("rope_parameters");
  const json& rope = given == nullptr ? class_default : given->is_object() ? *given : none;
  bool nested = false;
  for (const auto& item : rope.items()) nested |= item.value().is_object();
  const std::int64_t positions = c.doc["max_position_embeddings"].get<std::int64_t>();
  std::int64_t cached = 0;  // positions x rotary dims over the distinct ropes
  for (const std::string& type : types) {
    const json& params = !nested               ? rope
                         : rope.contains(type) ? rope.at(type)
                                               : rope.value("full_attention", none);
    const std::string prefix = f.prefix() + "rope_parameters." + (nested ? type + "." : "");
    const ConfigFields p(params, f.file(), prefix);
    const double partial =
        p.number_or("partial_rotary_factor", f.number_or("partial_rotary_factor", 1.0));
    if (partial <= 0 || partial > 1) {
      p.fail("partial_rotary_factor", std::to_string(partial), "expected (0, 1]");
    }
    const std::string kind = p.string_or("rope_type", p.string_or("type", "default"));
    std::int64_t rows = positions;
    if (kind == "yarn") {
      rows = static_cast<std::int64_t>(
          static_cast<double>(p.integer("original_max_position_embeddings")) *
          p.number_or("factor", 1.0));
    } else if (kind != "default") {
      p.fail("rope_type", kind, "Laguna's rope is modelled as default or yarn");
    }
    cached += rows * static_cast<std::int64_t>(static_cast<double>(head_dim) * partial);
    if (!nested) break;  // one rope for every layer
  }
  c.doc["rotary_dim"] = head_dim;
  c.doc["rotary_cache_positions"] = (cached + head_dim - 1) / head_dim;
}

// Laguna's routed experts (laguna.py LagunaMoE): num_experts of moe_intermediate_size behind a
// GateLinear router with an fp32 e_score_correction_bias, one shared MLP of
// shared_expert_intermediate_size when above 0, on the layers mlp_layer_types marks sparse
// (LagunaConfig: layer 0 dense, the rest sparse, when omitted); num_experts 0: dense layers.
void laguna_moe(Context& c, std::int64_t layers) {
  const ConfigFields& f = c.f;
  if (f.integer("num_experts") == 0) return;
  json moe = {{"num_experts", f.integer("num_experts")},
              {"num_experts_per_tok", f.integer("num_experts_per_tok")},
              {"moe_intermediate_size", f.integer("moe_intermediate_size")},
              {"router_bias", true}};
  const std::int64_t shared = f.integer_or("shared_expert_intermediate_size", 0);
  if (shared > 0) {
    moe["num_shared_experts"] = 1;
    moe["shared_expert_intermediate_size"] = shared;
  }
  if (f.has("mlp_layer_types")) {
    const json dense = mlp_layer_types_dense(f, layers);
    if (!dense.empty()) moe["dense_layers"] = dense;
  } else {
    moe["first_k_dense"] = 1;
  }
  c.doc["moe"] = moe;
}

// Refuses, by key, what vLLM 0.33's kimi_k3 model builds for Kimi-K3 beyond Kimi-Linear.
void refuse_kimi_k3_blocks(const ConfigFields& f, const ConfigFields& linear) {
  if (linear.boolean_or("use_full_rank_gate", false)) {
    linear.fail("use_full_rank_gate", "true",
                "Kimi-K3's full-rank-gate KDA (KimiK3DeltaAttention) is not modelled");
  }
  if (f.has("attn_res_block_size")) {
    f.fail("attn_res_block_size", f.at("attn_res_block_size").dump(),
           "Kimi-K3's block attention residuals are not modelled");
  }
  if (f.has("routed_expert_hidden_size")) {
    f.fail("routed_expert_hidden_size", f.at("routed_expert_hidden_size").dump(),
           "latent MoE (experts behind down / up projections) is not modelled");
  }
  if (f.boolean_or("mla_use_output_gate", false)) {
    f.fail("mla_use_output_gate", "true", "the MLA output gate (g_proj) is not modelled");
  }
  if (f.integer_or("moe_layer_freq", 1) != 1) {
    f.fail("moe_layer_freq", std::to_string(f.integer("moe_layer_freq")),
           "1 (kimi_k3 places experts where layer % moe_layer_freq == 0, not modelled)");
  }
}

// vLLM 0.33's KimiLinearForCausalLM (vllm/models/kimi_k3, Kimi-Linear): 1-based
// linear_attn_config.kda_layers build Kimi Delta Attention mixers (KimiGatedDeltaNetAttention:
// num_heads x head_dim, a short convolution over q, k and v, kda_state_shape's states with an
// fp32 recurrent one), every other layer DeepSeek-style MLA caching the latent; a dense MLP of
// intermediate_size below first_k_dense_replace, then num_experts experts of
// moe_intermediate_size (num_experts_per_token), a router with its e_score_correction_bias and
// one shared MLP of num_shared_experts x moe_intermediate_size.
void kimi_linear(Context& c) {
  const ConfigFields& f = c.f;
  if (!f.has("linear_attn_config") || !f.at("linear_attn_config").is_object()) {
    f.fail("linear_attn_config", f.has("linear_attn_config") ? "not an object" : "missing",
           "an object with kda_layers, num_heads, head_dim and short_conv_kernel_size");
  }
  const ConfigFields linear(f.at("linear_attn_config"), f.file(),
                            f.prefix() + "linear_attn_config.");
  refuse_kimi_k3_blocks(f, linear);
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  json kinds = json::array();
  for (std::int64_t i = 0; i < layers; ++i) kinds.push_back("full_attention");
  // KimiLinearConfig asserts both lists are given; is_kda_layer reads kda_layers alone.
  if (!linear.has("kda_layers")) linear.fail("kda_layers", "missing", "a list of 1-based layers");
  const json& kda = f.at("linear_attn_config").at("kda_layers");
  if (!kda.is_array()) linear.fail("kda_layers", kda.dump(), "expected a list of layers");
  for (const json& one_based : kda) {
    if (!one_based.is_number_integer() || one_based.get<std::int64_t>() < 1 ||
        one_based.get<std::int64_t>() > layers) {
      linear.fail("kda_layers", one_based.dump(), "1-based layers up to num_hidden_layers");
    }
    kinds[static_cast<std::size_t>(one_based.get<std::int64_t>() - 1)] = "linear_attention";
  }
  c.doc["layer_types"] = kinds;
  const std::int64_t heads = linear.integer("num_heads");
  const std::int64_t head_dim = linear.integer("head_dim");
  c.doc["linear_attention"] = {{"num_key_heads", heads},
                               {"key_head_dim", head_dim},
                               {"num_value_heads", heads},
                               {"value_head_dim", head_dim},
                               {"conv_kernel", linear.integer("short_conv_kernel_size")},
                               {"kimi_delta", true}};
  c.doc["mla"] = mla_dimensions(f);
  // head_dim (hidden / heads) is read by neither mixer; as in DeepseekV3Config, the spec's
  // head_dim is qk_rope_head_dim (MLA layers are sized by mla).
  c.doc["head_dim"] = f.integer("qk_rope_head_dim");
  if (!f.has("num_experts")) return;  // every layer's MLP dense
  c.doc["moe"] = {{"num_experts", f.integer("num_experts")},
                  {"num_experts_per_tok", f.integer("num_experts_per_token")},
                  {"moe_intermediate_size", f.integer("moe_intermediate_size")},
                  {"num_shared_experts", f.integer_or("num_shared_experts", 0)},
                  {"first_k_dense", f.integer_or("first_k_dense_replace", 0)},
                  {"router_bias", true}};  // e_score_correction_bias
}

// vLLM 0.33's laguna.py (poolside Laguna): per-layer query heads (num_attention_heads_per_layer)
// over shared KV heads, per-head q/k RMSNorms, q/k/v/o biased with attention_bias, an output
// gate per query head (g_proj [heads, hidden], gating true or "per-head"), sliding / full
// layers per layer_types, a dense MLP or routed + shared experts per layer. Per-element gating
// and the sliding layers' attention sinks (swa_attention_sink_enabled) are refused.
void laguna(Context& c) {
  const ConfigFields& f = c.f;
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  // gating written as null builds no gate, as vLLM tests config.gating for truth.
  const json* gating = f.value("gating");
  if (gating != nullptr && (*gating == true || *gating == "per-head")) {
    c.doc["attn_head_gate"] = true;
  } else if (gating != nullptr && *gating != false) {
    f.fail("gating", gating->dump(),
           "per-element output gating is not modelled (true or per-head)");
  }
  if (f.boolean_or("swa_attention_sink_enabled", false)) {
    f.fail("swa_attention_sink_enabled", "true",
           "sinks on the sliding layers only are not modelled");
  }
  if (f.has("num_attention_heads_per_layer")) {
    const json& heads = f.at("num_attention_heads_per_layer");
    if (!heads.is_array() || static_cast<std::int64_t>(heads.size()) != layers) {
      f.fail("num_attention_heads_per_layer", heads.dump().substr(0, 80),
             "expected a list of num_hidden_layers head counts");
    }
    c.doc["layer_num_attention_heads"] = heads;
  }
  std::set<std::string> types = {"full_attention"};
  if (c.doc.contains("layer_types")) {
    types.clear();
    for (const auto& t : c.doc["layer_types"]) types.insert(t.get<std::string>());
  }
  laguna_rope_cache(c, types, c.doc["head_dim"].get<std::int64_t>());
  laguna_moe(c, layers);
}

// The layers a Step config's moe_layers_enum (a comma-separated string or a list of layer
// indices, which may name the MTP layers past the decoder) leaves dense, for moe.dense_layers.
// Without the key: every layer from `first_moe_layer` on routed (Step3p7TextConfig: 3).
json step_dense_layers(const ConfigFields& f, std::int64_t layers, std::int64_t first_moe_layer) {
  std::set<std::int64_t> routed;
  if (!f.has("moe_layers_enum")) {
    for (std::int64_t i = first_moe_layer; i < layers; ++i) routed.insert(i);
  } else {
    const json& given = f.at("moe_layers_enum");
    std::vector<std::string> items;
    if (given.is_string()) {
      std::stringstream text(given.get<std::string>());
      for (std::string item; std::getline(text, item, ',');) items.push_back(item);
    } else if (given.is_array()) {
      for (const json& item : given) items.push_back(item.dump());
    } else {
      f.fail("moe_layers_enum", given.dump().substr(0, 80), "expected \"3,4,...\" or a list");
    }
    for (const std::string& item : items) {
      std::size_t used = 0;
      std::int64_t layer = -1;
      try {
        layer = std::stoll(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || layer < 0) f.fail("moe_layers_enum", item, "non-negative layer indices");
      routed.insert(layer);  // an index past the decoder (an MTP layer's) routes no decoder layer
    }
  }
  json dense = json::array();
  for (std::int64_t i = 0; i < layers; ++i) {
    if (routed.count(i) == 0) dense.push_back(i);
  }
  return dense;
}

// vLLM 0.33's step3_text.py (StepFun Step3's text model, vLLM's Step3TextConfig): one K and one
// V head of head_dim whatever num_attention_groups says, kept whole on every rank, beside the
// shared query (share_q_dim); no q/k norm; logits from an lm_head of their own
// whatever tie_word_embeddings says. A dense MLP of intermediate_size off the moe_layers_enum
// layers, on them moe_num_experts experts of moe_intermediate_size behind a bias-free router and
// one shared MLP of share_expert_dim. Its rope caches max_position_embedding positions.
void step3_text(Context& c) {
  const ConfigFields& f = c.f;
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  c.doc["num_key_value_heads"] = 1;
  const std::int64_t share_q = f.integer_or("share_q_dim", 0);
  c.doc["share_q_dim"] = share_q > 0 ? share_q : c.doc["head_dim"].get<std::int64_t>();
  c.doc["tie_word_embeddings"] = false;
  c.doc["rotary_cache_positions"] = f.integer("max_position_embedding");
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (!f.has(key) || !f.at(key).is_object()) continue;
    const ConfigFields rope(f.at(key), f.file(), f.prefix() + key + ".");
    const std::string kind = rope.string_or("rope_type", rope.string_or("type", "default"));
    if (kind != "default" && kind != "llama3") {
      rope.fail("rope_type", kind, "Step3's rope is modelled as default or llama3");
    }
  }
  // Step3TextConfig's default moe_layers_enum is a tuple, which step3_text.py's split() fails on.
  if (!f.has("moe_layers_enum") || !f.at("moe_layers_enum").is_string()) {
    f.fail("moe_layers_enum", f.has("moe_layers_enum") ? f.at("moe_layers_enum").dump() : "missing",
           "a comma-separated string of MoE layers (step3_text.py splits it)");
  }
  json moe = {{"num_experts", f.integer("moe_num_experts")},
              {"num_experts_per_tok", f.integer("moe_top_k")},
              {"moe_intermediate_size", f.integer("moe_intermediate_size")},
              {"num_shared_experts", 1},
              {"shared_expert_intermediate_size", f.integer("share_expert_dim")}};
  const json dense = step_dense_layers(f, layers, 1);
  if (!dense.empty()) moe["dense_layers"] = dense;
  c.doc["moe"] = moe;
}

// Step-3.5's sliding layers' query heads as vLLM reads them through transformers'
// Step3p7TextConfig: num_sliding_attention_heads, else attention_other_setting's
// num_attention_heads (copied whatever its attention_type), else num_attention_heads. Every
// layer builds num_attention_groups KV heads of head_dim (step3p5.py reads no other): a sliding
// setting of its own KV heads or head size is refused.
std::int64_t step3p5_sliding_heads(const ConfigFields& f, const json& doc) {
  const std::int64_t heads = doc["num_attention_heads"].get<std::int64_t>();
  if (f.has("num_sliding_attention_heads")) return f.integer("num_sliding_attention_heads");
  if (!f.has("attention_other_setting")) return heads;
  const json& other = f.at("attention_other_setting");
  if (!other.is_object()) {
    f.fail("attention_other_setting", other.dump().substr(0, 80), "expected an object");
  }
  const ConfigFields o(other, f.file(), f.prefix() + "attention_other_setting.");
  for (const char* key : {"num_attention_groups", "head_dim"}) {
    const char* global = std::string(key) == "head_dim" ? "head_dim" : "num_key_value_heads";
    if (o.has(key) && o.integer(key) != doc[global].get<std::int64_t>()) {
      o.fail(key, std::to_string(o.integer(key)),
             "the global value: step3p5.py builds every layer's KV heads and head size from "
             "num_attention_groups and head_dim");
    }
  }
  return o.integer_or("num_attention_heads", heads);
}

// Step-3.5's rope caches: transformers' Step3p7TextConfig keeps one rope per layer type, from
// the type's first layer (rope_theta and partial_rotary_factors lists, or scalars), rope_scaling
// on full_attention only; vLLM's get_rope builds one cos/sin cache per distinct rope, of
// head_dim x partial_rotary_factor columns over max_position_embeddings rows (default, llama3)
// or original_max_position_embeddings x factor (yarn). Written as rotary_dim head_dim over the
// positions that give the caches' sum.
void step3p5_rope_cache(Context& c, const json& types) {
  const ConfigFields& f = c.f;
  const std::int64_t head_dim = c.doc["head_dim"].get<std::int64_t>();
  const std::int64_t positions = c.doc["max_position_embeddings"].get<std::int64_t>();
  const auto per_layer = [&f](const char* key, std::size_t layer, double fallback) {
    const json* v = f.value(key);
    if (v == nullptr) return fallback;
    const json& one = v->is_array() && layer < v->size() ? (*v)[layer] : *v;
    if (!one.is_number()) f.fail(key, v->dump().substr(0, 80), "numbers (one a layer) or one");
    return one.get<double>();
  };
  std::set<std::string> ropes;
  std::int64_t cached = 0;  // positions x rotary dims over the distinct ropes
  for (const char* type : {"full_attention", "sliding_attention"}) {
    std::size_t first = 0;
    while (first < types.size() && types[first] != type) ++first;
    if (first == types.size()) continue;
    const double partial = per_layer("partial_rotary_factors", first, 1.0);
    if (partial != 1.0 && partial != 0.5) {
      f.fail("partial_rotary_factors", std::to_string(partial), "1 or 0.5 (step3p5.py asserts)");
    }
    std::int64_t rows = positions;
    std::string scaling = "none";
    if (std::string(type) == "full_attention" && f.has("rope_scaling") &&
        f.at("rope_scaling").is_object()) {
      const ConfigFields s(f.at("rope_scaling"), f.file(), f.prefix() + "rope_scaling.");
      const std::string kind = s.string_or("rope_type", s.string_or("type", "default"));
      if (kind == "yarn") {
        rows = static_cast<std::int64_t>(
            static_cast<double>(s.integer("original_max_position_embeddings")) *
            s.number_or("factor", 1.0));
      } else if (kind != "default" && kind != "llama3") {
        s.fail("rope_type", kind, "Step-3.5's rope is modelled as default, llama3 or yarn");
      }
      scaling = f.at("rope_scaling").dump();
    }
    const auto dims = static_cast<std::int64_t>(static_cast<double>(head_dim) * partial);
    const std::string key = std::to_string(per_layer("rope_theta", first, 10000.0)) + "/" +
                            std::to_string(dims) + "/" + scaling;
    if (ropes.insert(key).second) cached += rows * dims;
  }
  c.doc["rotary_dim"] = head_dim;
  c.doc["rotary_cache_positions"] = (cached + head_dim - 1) / head_dim;
}

// vLLM 0.33's step3p5.py (StepFun Step-3.5-Flash), its config read through transformers'
// Step3p7TextConfig (registry: step3p5): GQA of num_attention_groups KV heads on every layer,
// query heads per layer type (sliding: step3p5_sliding_heads), GemmaRMSNorm q/k norms, a g_proj
// gate a query head (use_head_wise_attn_gate), sliding / full per layer_types; a dense MLP of
// intermediate_size off the moe_layers_enum layers, on them moe_num_experts experts behind an
// fp32 router with its router_bias and one shared MLP of share_expert_dim. The MTP layers
// (num_nextn_predict_layers) load only as step3p5_mtp.py's drafter, whose layers (their own
// layer types, dense MLPs) are not the copy of the last decoder layer the planner's MTP
// models: not counted.
void step3p5(Context& c) {
  const ConfigFields& f = c.f;
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  if (f.string_or("att_impl_type", "GQA") != "GQA") {
    f.fail("att_impl_type", f.string_or("att_impl_type", ""), "GQA (step3p5.py builds no other)");
  }
  if (!f.boolean_or("use_moe_router_bias", true)) {
    f.fail("use_moe_router_bias", "false", "true (step3p5.py asserts it)");
  }
  if (f.boolean_or("use_head_wise_attn_gate", false)) c.doc["attn_head_gate"] = true;
  json types = json::array();
  for (std::int64_t i = 0; i < layers; ++i) types.push_back("full_attention");
  if (c.doc.contains("layer_types")) types = c.doc["layer_types"];
  const std::int64_t full = c.doc["num_attention_heads"].get<std::int64_t>();
  const std::int64_t sliding = step3p5_sliding_heads(f, c.doc);
  if (sliding != full) {
    json heads = json::array();
    for (const auto& t : types) heads.push_back(t == "sliding_attention" ? sliding : full);
    c.doc["layer_num_attention_heads"] = heads;
  }
  step3p5_rope_cache(c, types);
  c.doc.erase("num_nextn_predict_layers");
  const json* experts =
      f.has("moe_num_experts") ? f.value("moe_num_experts") : f.value("n_routed_experts");
  const json* top_k = f.has("moe_top_k") ? f.value("moe_top_k") : f.value("num_experts_per_tok");
  if (experts == nullptr || top_k == nullptr) {
    f.fail(experts == nullptr ? "moe_num_experts" : "moe_top_k", "missing", "required");
  }
  json moe = {{"num_experts", *experts},
              {"num_experts_per_tok", *top_k},
              {"moe_intermediate_size", f.integer("moe_intermediate_size")},
              {"num_shared_experts", 1},
              {"shared_expert_intermediate_size", f.integer("share_expert_dim")},
              {"router_bias", true}};
  const json dense =
      f.has("mlp_layer_types") ? mlp_layer_types_dense(f, layers) : step_dense_layers(f, layers, 3);
  if (!dense.empty()) moe["dense_layers"] = dense;
  c.doc["moe"] = moe;
}

// vLLM 0.33's cohere2_moe.py (Cohere North): Cohere's parallel block (one norm a layer feeding
// attention and MLP, an RMSNorm with rms_norm_eps else a weight-only LayerNorm; no q/k norm),
// logits from the embedding (tied whatever the config says), sliding layers per layer_types
// attending over sliding_window + 1 tokens (Cohere's training convention), and per
// mlp_layer_types a dense MLP of prefix_dense_intermediate_size or num_experts experts of
// intermediate_size behind a bias-free GateLinear router, with one shared MLP of
// intermediate_size x num_shared_experts. Cohere2MoeConfig derives the two lists from
// first_k_dense_replace and the sliding patterns when a config omits them.
void cohere2_moe(Context& c) {
  const ConfigFields& f = c.f;
  if (!f.boolean_or("use_parallel_block", true)) {
    f.fail("use_parallel_block", "false",
           "vLLM 0.33's cohere2_moe.py builds the parallel block only");
  }
  if (f.boolean_or("use_qk_norm", false)) {
    f.fail("use_qk_norm", "true", "vLLM 0.33's cohere2_moe.py builds no q/k norms");
  }
  c.doc["tie_word_embeddings"] = true;  // compute_logits reads model.embed_tokens
  const std::int64_t layers = c.doc["num_hidden_layers"].get<std::int64_t>();
  const std::int64_t first_dense = f.integer_or("first_k_dense_replace", 0);
  if (!f.has("layer_types")) {
    const std::int64_t prefix_period = f.integer_or("prefix_dense_sliding_window_pattern", 1);
    const std::int64_t period = f.integer_or("sliding_window_pattern", 4);
    if (prefix_period <= 0 || period <= 0 || first_dense > layers) {
      f.fail("sliding_window_pattern", std::to_string(period), "expected positive patterns");
    }
    json kinds = json::array();
    for (std::int64_t i = 0; i < layers; ++i) {
      const bool prefix = i < first_dense;
      const std::int64_t step = prefix ? i + 1 : i - first_dense + 1;
      kinds.push_back(step % (prefix ? prefix_period : period) != 0 ? "sliding_attention"
                                                                    : "full_attention");
    }
    c.doc["layer_types"] = kinds;
    c.doc["sliding_window"] = f.integer("sliding_window");
  }
  if (c.doc.contains("sliding_window")) {
    c.doc["sliding_window"] = c.doc["sliding_window"].get<std::int64_t>() + 1;
  }
  c.doc["intermediate_size"] =
      f.integer_or("prefix_dense_intermediate_size", f.integer("intermediate_size"));
  json moe = {{"num_experts", f.integer("num_experts")},
              {"num_experts_per_tok", f.integer("num_experts_per_tok")},
              {"moe_intermediate_size", f.integer("intermediate_size")}};
  const std::int64_t shared = f.integer_or("num_shared_experts", 0);
  if (shared > 0) {
    moe["num_shared_experts"] = 1;
    moe["shared_expert_intermediate_size"] = f.integer("intermediate_size") * shared;
  }
  if (f.has("mlp_layer_types")) {
    const json dense = mlp_layer_types_dense(f, layers);
    if (!dense.empty()) moe["dense_layers"] = dense;
  } else {
    moe["first_k_dense"] = first_dense;
  }
  c.doc["moe"] = moe;
}

// vLLM 0.33's k2_horizon.py (IFM K2-Horizon): Qwen2-MoE's layer placement (decoder_sparse_step,
// mlp_only_layers) under K2HorizonConfig's keys. q/k/v and o_proj biased with attention_bias;
// grouped RMSNorms (layernorm_num_groups) hold one hidden_size weight each, as a plain RMSNorm;
// attention_gate_func adds a gate_proj [heads x head_dim, hidden], the weight of a q_proj output
// gate; rope_head_dim rotates part of each head. Sparse layers: num_experts experts of
// moe_intermediate_size behind a router built with the quant config (moe_gate_bias: an fp32
// bias), one shared MLP of moe_intermediate_size x num_shared_experts. query_key_norm's norms
// span every head of the rank (weights of heads x head_dim) and MoVA's value experts
// (mova_num_experts) replace v_proj: neither is in the spec.
void k2_horizon(Context& c) {
  const ConfigFields& f = c.f;
  if (f.boolean_or("query_key_norm", true)) {
    f.fail("query_key_norm", "true",
           "K2HorizonRMSNorm's q/k norms weigh heads x head_dim (every head of the rank), not "
           "the per-head q/k norm the planner counts: not modelled");
  }
  if (f.integer_or("mova_num_experts", 0) > 0) {
    f.fail("mova_num_experts", std::to_string(f.integer("mova_num_experts")),
           "MoVA's routed value experts (K2HorizonMoVAAttention, replacing v_proj on sparse "
           "layers) are not modelled");
  }
  if (f.has("attention_gate_func")) c.doc["attn_output_gate"] = true;
  const std::int64_t head_dim = c.doc["head_dim"].get<std::int64_t>();
  if (f.has("rope_head_dim") && f.integer("rope_head_dim") != head_dim) {
    c.doc["rotary_dim"] = f.integer("rope_head_dim");
  }
  if (f.integer("num_experts") == 0) return;
  json moe = qwen_style_moe(f, true);
  const std::int64_t shared = f.integer_or("num_shared_experts", 0);
  if (shared > 0) {
    moe["num_shared_experts"] = 1;
    moe["shared_expert_intermediate_size"] = f.integer("moe_intermediate_size") * shared;
  }
  if (f.boolean_or("moe_gate_bias", false)) moe["router_bias"] = true;
  c.doc["moe"] = moe;
}

// vLLM 0.33's step1.py (Step-Audio's LM): Llama layers with sqrt-ALiBi attention, KV heads from
// num_attention_groups (else num_key_value_heads, else 1) and head_dim hidden / heads whatever
// the config's head_dim; q/k/v and o_proj biased with attention_bias, the MLP with mlp_bias (the
// generic import's reading). No rotary embedding is built: the spec's cos/sin cache term
// (max_seq_len x head_dim x 2 bytes, 4 MiB for Step-Audio-EditX) is counted as for BLOOM.
void step1(Context& c) {
  const ConfigFields& f = c.f;
  const std::int64_t groups =
      f.integer_or("num_attention_groups", f.integer_or("num_key_value_heads", 1));
  c.doc["num_key_value_heads"] = groups > 0 ? groups : 1;
  const std::int64_t hidden = c.doc["hidden_size"].get<std::int64_t>();
  const std::int64_t heads = c.doc["num_attention_heads"].get<std::int64_t>();
  if (hidden % heads != 0) {
    f.fail("num_attention_heads", std::to_string(heads),
           "step1.py's head_dim is hidden_size / num_attention_heads: it must divide");
  }
  c.doc["head_dim"] = hidden / heads;
}

// vLLM 0.33's hy_v3.py (Tencent Hy3): bias-free q/k/v/o with per-head q/k RMSNorms under qk_norm,
// a dense MLP of intermediate_size below first_k_dense_replace (required: vLLM raises without
// it), then num_experts experts of expert_hidden_dim behind a router built without the quant
// config, an fp32 expert_bias always, and one shared MLP of expert_hidden_dim x
// num_shared_experts. vLLM holds that router's weight in float32 (GateLinear params_dtype): the
// spec counts it at the served dtype, num_experts x hidden x 2 bytes a MoE layer fewer.
void hy_v3(Context& c) {
  const ConfigFields& f = c.f;
  if (f.boolean_or("qk_norm", false)) c.doc["qk_norm"] = true;
  const std::int64_t width = f.integer("expert_hidden_dim");
  json moe = {{"num_experts", f.integer("num_experts")},
              {"num_experts_per_tok", f.integer("num_experts_per_tok")},
              {"moe_intermediate_size", width},
              {"first_k_dense", f.integer("first_k_dense_replace")},
              {"router_bias", true}};
  const std::int64_t shared = f.integer_or("num_shared_experts", 0);
  if (shared > 0) {
    moe["num_shared_experts"] = 1;
    moe["shared_expert_intermediate_size"] = width * shared;
  }
  c.doc["moe"] = moe;
}

struct NamedRule {
  const char* name;
  Rule rule;
};

// The rules a row may name; model_specs/architectures.yaml's header says what each does.
constexpr NamedRule kRules[] = {
    {"qkv_bias_only", qkv_bias_only},
    {"use_qk_norm", use_qk_norm},
    {"local_rope_cache", local_rope_cache},
    {"use_bias", use_bias},
    {"internlm_bias", internlm_bias},
    {"mixtral_moe", mixtral_moe},
    {"granite_moe", granite_moe},
    {"granite_swa", granite_swa},
    {"gpt_oss_moe", gpt_oss_moe},
    {"qwen_moe", qwen_moe},
    {"qwen_moe_quantizable_router", qwen_moe_quantizable_router},
    {"deepseek_moe", deepseek_moe},
    {"deepseek_moe_mla", deepseek_moe_mla},
    {"dsa_indexer", dsa_indexer},
    {"glm4_moe", glm4_moe},
    {"glm4_moe_lite", glm4_moe_lite},
    {"llama4", llama4},
    {"mamba1_attention_free", mamba1_attention_free},
    {"mamba2_attention_free", mamba2_attention_free},
    {"qwen3_next_hybrid", qwen3_next_hybrid},
    {"qwen3_5_hybrid", qwen3_5_hybrid},
    {"nemotron_h", nemotron_h},
    {"falcon", falcon},
    {"gemma4", gemma4},
    {"gemma3n", gemma3n},
    {"granite_moe_hybrid", granite_moe_hybrid},
    {"jamba", jamba},
    {"exaone_moe", exaone_moe},
    {"stablelm", stablelm},
    {"olmoe", olmoe},
    {"minimax_m2", minimax_m2},
    {"bailing_moe", bailing_moe},
    {"ernie45_moe", ernie45_moe},
    {"dbrx", dbrx},
    {"bloom", bloom},
    {"gptj", gptj},
    {"gpt2", gpt2},
    {"opt", opt},
    {"whisper", whisper},
    {"minicpm", minicpm},
    {"minicpm3", minicpm3},
    {"lfm2", lfm2},
    {"lfm2_moe", lfm2_moe},
    {"afmoe", afmoe},
    {"pangu_embedded", pangu_embedded},
    {"mimo_v2", mimo_v2},
    {"chatglm", chatglm},
    {"nemotron_nas", nemotron_nas},
    {"falcon_h1", falcon_h1},
    {"zamba2", zamba2},
    {"iquest_loop", iquest_loop},
    {"param2_moe", param2_moe},
    {"sarvam_mla", sarvam_mla},
    {"kimi_linear", kimi_linear},
    {"axk1", axk1},
    {"laguna", laguna},
    {"step3p5", step3p5},
    {"longcat_flash", longcat_flash},
    {"step3_text", step3_text},
    {"cohere2_moe", cohere2_moe},
    {"k2_horizon", k2_horizon},
    {"hy_v3", hy_v3},
    {"step1", step1},
};

// --- the table, loaded from model_specs/architectures.yaml ----------------------------------

struct Table {
  std::vector<Row> rows;
  std::vector<Wrapper> wrappers;
  std::vector<RefusedArchitecture> refused;
  std::map<std::string, ClassDefaults> class_defaults;  // by text model_type
  std::map<std::string, json> vision_class_defaults;    // by transformers vision-config class
};

struct NamedSliding {
  const char* name;
  Sliding sliding;
};
constexpr NamedSliding kSlidings[] = {
    {"if_set", Sliding::IfSet},
    {"qwen_gated", Sliding::QwenGated},
    {"never", Sliding::Never},
    {"alternate", Sliding::Alternate},
    {"pattern_key", Sliding::PatternKey},
    {"exaone_pattern", Sliding::ExaonePattern},
    {"mtp_padded", Sliding::MtpPadded},
};

// The names of a (name, value) table, comma-separated: the choices an error lists, read from
// the table itself so that a new entry is listed where it is accepted.
template <typename Entry, std::size_t N>
std::string names_of(const Entry (&table)[N]) {
  std::string out;
  for (const Entry& entry : table) out += (out.empty() ? "" : ", ") + std::string(entry.name);
  return out;
}

struct NamedVision {
  const char* name;
  Vision vision;
};
constexpr NamedVision kVisions[] = {
    {"vit", Vision::Vit},
    {"siglip", Vision::Siglip},
    {"llava", Vision::Llava},
    {"qwen2_vl", Vision::Qwen2Vl},
    {"qwen2_5_vl", Vision::Qwen25Vl},
    {"qwen3_vl", Vision::Qwen3Vl},
    {"pixtral", Vision::Pixtral},
    {"gemma4", Vision::Gemma4},
    {"paligemma", Vision::PaliGemma},
    {"idefics3", Vision::Idefics3},
    {"intern_vit", Vision::InternVit},
    {"internvl_hf", Vision::InternVlHf},
    {"blip2", Vision::Blip2},
    {"lfm2_vl", Vision::Lfm2Vl},
    {"glm4v", Vision::Glm4v},
    {"kimi_k25", Vision::KimiK25},
    {"minicpmv", Vision::MiniCpmV},
    {"minicpmv4_6", Vision::MiniCpmV46},
    {"deepseek_ocr", Vision::DeepseekOcr},
    {"exaone4_5", Vision::Exaone45},
    {"ovis2_5", Vision::Ovis25},
    {"dots_ocr", Vision::DotsOcr},
    {"gemma4_unified", Vision::Gemma4Unified},
    {"keye", Vision::Keye},
    {"openvla", Vision::OpenVla},
    {"paddleocr_vl", Vision::PaddleOcrVl},
    {"cohere2_vision", Vision::Cohere2Vision},
    {"phi3_v", Vision::Phi3V},
    {"qwen3_omni", Vision::Qwen3Omni},
    {"gemma3n", Vision::Gemma3n},
    {"step_vl", Vision::StepPe},
    {"radio", Vision::Radio},
};

struct NamedAudio {
  const char* name;
  Audio audio;
};
constexpr NamedAudio kAudios[] = {
    {"qwen2_audio", Audio::Qwen2Audio},  {"qwen3_asr", Audio::Qwen3Asr},
    {"qwen2_5_omni", Audio::Qwen25Omni}, {"qwen3_omni", Audio::Qwen3Omni},
    {"gemma3n", Audio::Gemma3n},         {"moss_transcribe_diarize", Audio::MossTranscribeDiarize},
    {"parakeet", Audio::Parakeet},       {"granite_speech", Audio::GraniteSpeech},
};

// Spec fields a row may set or erase (a typo is a named error, not a silently ignored key).
const std::set<std::string> kSettable = {"qkv_bias",        "o_proj_bias",    "mlp_bias",
                                         "mlp_down_bias",   "qk_norm",        "mlp",
                                         "norms_per_layer", "attention_sinks"};

// Reads one map of the table, naming "<prefix><key>" and the file in errors.
class TableEntry {
 public:
  TableEntry(const YAML::Node& node, const std::string& file, std::string prefix,
             const std::set<std::string>& allowed)
      : node_(node), file_(file), prefix_(std::move(prefix)) {
    if (!node_.IsMap()) throw SpecError(file_, prefix_, "not a map", "expected a map");
    for (const auto& kv : node_) {
      const std::string key = kv.first.Scalar();
      if (allowed.count(key) == 0) fail(key, "'" + key + "'", "unknown field");
    }
  }

  [[noreturn]] void fail(const std::string& key, const std::string& value,
                         const std::string& problem) const {
    throw SpecError(file_, prefix_ + "." + key, value, problem);
  }
  bool has(const char* key) const { return static_cast<bool>(node_[key]); }
  std::string text(const char* key, bool required) const {
    const YAML::Node v = node_[key];
    if (!v) {
      if (required) fail(key, "missing", "required field is missing");
      return "";
    }
    if (!v.IsScalar() || v.Scalar().empty()) fail(key, "not text", "expected a non-empty string");
    return v.Scalar();
  }
  std::vector<std::string> names(const char* key, bool required) const {
    const YAML::Node v = node_[key];
    std::vector<std::string> out;
    if (!v) {
      if (required) fail(key, "missing", "required field is missing");
      return out;
    }
    if (!v.IsSequence()) fail(key, "not a list", "expected a list of names");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
      if (!v[i].IsScalar() || v[i].Scalar().empty()) fail(at, "not a name", "expected a name");
      out.push_back(v[i].Scalar());
    }
    if (required && out.empty()) fail(key, "[]", "expected at least one name");
    return out;
  }
  // A map of config keys to plain values: true / false, integers, numbers, or (when `strings`)
  // unquoted words.
  json values(const char* key, bool strings) const {
    json out = json::object();
    const YAML::Node m = node_[key];
    if (!m) return out;
    if (!m.IsMap()) fail(key, "not a map", "expected a map of config keys to values");
    for (const auto& kv : m) {
      const std::string name = kv.first.Scalar();
      const std::string at = std::string(key) + "." + name;
      if (!kv.second.IsScalar()) fail(at, "not a value", "expected a plain value");
      const std::string& s = kv.second.Scalar();
      if (s == "true" || s == "false") {
        out[name] = s == "true";
        continue;
      }
      std::size_t used = 0;
      try {
        if (s.find_first_of(".eE") == std::string::npos) {
          const long long n = std::stoll(s, &used);
          if (used == s.size()) {
            out[name] = static_cast<std::int64_t>(n);
            continue;
          }
        } else {
          const double d = std::stod(s, &used);
          if (used == s.size() && std::isfinite(d)) {
            out[name] = d;
            continue;
          }
        }
      } catch (const std::exception&) {
        // not a number: a word below, or an error
      }
      if (!strings) fail(at, "'" + s + "'", "expected true, false or a number");
      out[name] = s;
    }
    return out;
  }

 private:
  YAML::Node node_;  // a handle: the entry a caller indexes may be a temporary
  std::string file_;
  std::string prefix_;
};

Row read_row(const YAML::Node& node, const std::string& file, std::size_t index) {
  static const std::set<std::string> kFields = {
      "family",        "model_types",  "wrapper_model_types",
      "gguf",          "config_class", "attention",
      "moe",           "vision",       "mtp",
      "applied",       "sliding",      "renames",
      "set",           "erase",        "rules",
      "attention_free"};
  const TableEntry e(node, file, "architectures[" + std::to_string(index) + "]", kFields);
  Row row;
  row.info.family = e.text("family", true);
  row.info.model_types = e.names("model_types", true);
  row.info.wrapper_model_types = e.names("wrapper_model_types", false);
  row.info.gguf_architectures = e.names("gguf", false);
  row.info.config_class = e.text("config_class", true);
  row.info.attention = e.text("attention", true);
  row.info.moe = e.text("moe", false);
  row.info.vision = e.text("vision", false);
  row.info.mtp = e.text("mtp", false);
  row.applied = e.values("applied", false);
  const std::string attention_free = e.text("attention_free", false);
  if (!attention_free.empty() && attention_free != "true" && attention_free != "false") {
    e.fail("attention_free", "'" + attention_free + "'", "expected true or false");
  }
  row.attention_free = attention_free == "true";
  const std::string sliding = e.text("sliding", true);
  const auto* s = std::find_if(std::begin(kSlidings), std::end(kSlidings),
                               [&](const NamedSliding& n) { return sliding == n.name; });
  if (s == std::end(kSlidings)) {
    e.fail("sliding", "'" + sliding + "'", "unknown (" + names_of(kSlidings) + ")");
  }
  row.sliding = s->sliding;
  const json renames = e.values("renames", true);
  for (const auto& [key, alias] : renames.items()) {
    if (!alias.is_string()) e.fail("renames." + key, alias.dump(), "expected a config key");
    row.renames.emplace_back(key, alias.get<std::string>());
  }
  row.set = e.values("set", true);
  for (const auto& item : row.set.items()) {
    if (kSettable.count(item.key()) == 0) e.fail("set." + item.key(), item.key(), "not settable");
  }
  row.erase = e.names("erase", false);
  for (const std::string& key : row.erase) {
    if (kSettable.count(key) == 0) e.fail("erase", key, "not a spec field a row may erase");
  }
  for (const std::string& name : e.names("rules", false)) {
    const auto* r = std::find_if(std::begin(kRules), std::end(kRules),
                                 [&](const NamedRule& n) { return name == n.name; });
    if (r == std::end(kRules)) e.fail("rules", "'" + name + "'", "unknown rule");
    row.rules.push_back(r->rule);
  }
  return row;
}

// config_class_defaults: each entry's defaults and post_init values, filed under every
// model_type it names (a planned text model_type, named once).
void read_class_defaults(const YAML::Node& list, const std::string& file, Table& t) {
  if (!list) return;
  if (!list.IsSequence())
    throw SpecError(file, "config_class_defaults", "not a list", "expected a list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const TableEntry e(list[i], file, "config_class_defaults[" + std::to_string(i) + "]",
                       {"class", "model_types", "file", "defaults", "post_init"});
    ClassDefaults entry;
    entry.config_class = e.text("class", true);
    (void)e.text("file", true);  // provenance for the reader
    entry.values = e.values("defaults", true);
    const json post_init = e.values("post_init", true);
    for (const auto& [key, value] : post_init.items()) {
      if (entry.values.contains(key)) e.fail("post_init." + key, key, "also under defaults");
      entry.values[key] = value;
    }
    for (const std::string& model_type : e.names("model_types", true)) {
      const bool planned = std::any_of(t.rows.begin(), t.rows.end(), [&](const Row& r) {
        const auto& m = r.info.model_types;
        return std::find(m.begin(), m.end(), model_type) != m.end();
      });
      if (!planned) e.fail("model_types", model_type, "not a row's model_type");
      if (!t.class_defaults.emplace(model_type, entry).second)
        e.fail("model_types", model_type, "model_type listed twice");
    }
  }
}

// vision_config_class_defaults: each transformers vision-config class's defaults, by class.
void read_vision_class_defaults(const YAML::Node& list, const std::string& file, Table& t) {
  if (!list) return;
  if (!list.IsSequence())
    throw SpecError(file, "vision_config_class_defaults", "not a list", "expected a list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const TableEntry e(list[i], file, "vision_config_class_defaults[" + std::to_string(i) + "]",
                       {"class", "file", "defaults"});
    const std::string name = e.text("class", true);
    (void)e.text("file", true);  // provenance for the reader
    if (!t.vision_class_defaults.emplace(name, e.values("defaults", true)).second)
      e.fail("class", name, "class listed twice");
  }
}

// One wrappers entry: its text row and the towers it carries (a vision tower, an audio encoder,
// or both).
Wrapper read_wrapper(const TableEntry& e, const Table& t) {
  Wrapper w;
  w.model_type = e.text("model_type", true);
  w.text_model_type = e.text("text_model_type", true);
  const bool text_planned = std::any_of(t.rows.begin(), t.rows.end(), [&](const Row& r) {
    const auto& m = r.info.model_types;
    return std::find(m.begin(), m.end(), w.text_model_type) != m.end();
  });
  if (!text_planned) e.fail("text_model_type", w.text_model_type, "not a row's model_type");
  if (!e.has("vision") && !e.has("audio")) {
    e.fail("vision", "missing", "a wrapper names its vision tower, its audio encoder, or both");
  }
  if (e.has("vision")) {
    const std::string vision = e.text("vision", true);
    const auto* v = std::find_if(std::begin(kVisions), std::end(kVisions),
                                 [&](const NamedVision& n) { return vision == n.name; });
    if (v == std::end(kVisions)) {
      e.fail("vision", "'" + vision + "'", "unknown vision tower (" + names_of(kVisions) + ")");
    }
    w.vision = v->vision;
  }
  if (e.has("audio")) {
    const std::string audio = e.text("audio", true);
    const auto* a = std::find_if(std::begin(kAudios), std::end(kAudios),
                                 [&](const NamedAudio& n) { return audio == n.name; });
    if (a == std::end(kAudios)) {
      e.fail("audio", "'" + audio + "'", "unknown audio encoder (" + names_of(kAudios) + ")");
    }
    w.audio = a->audio;
  }
  return w;
}

YAML::Node sequence(const YAML::Node& root, const char* key, const std::string& file) {
  YAML::Node list = root[key];
  if (!list || !list.IsSequence()) throw SpecError(file, key, "missing", "expected a list");
  return list;
}

Table parse_table(const std::string& yaml_text, const std::string& file) {
  const YAML::Node root = load_yaml_checked(yaml_text, file);
  if (!root.IsMap()) throw SpecError(file, "<root>", "not a map", "expected a map");
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (key != "architectures" && key != "config_class_defaults" &&
        key != "vision_config_class_defaults" && key != "wrappers" &&
        key != "refused_model_types" && key != "vllm_registry") {
      throw SpecError(file, key, "'" + key + "'",
                      "unknown section (architectures, config_class_defaults, "
                      "vision_config_class_defaults, wrappers, refused_model_types, "
                      "vllm_registry)");
    }
  }
  Table t;
  std::set<std::string> planned;  // every model_type a config.json may name
  auto claim = [&](const std::string& model_type, const std::string& where) {
    if (!planned.insert(model_type).second) {
      throw SpecError(file, where, model_type, "model_type listed twice");
    }
  };
  const YAML::Node rows = sequence(root, "architectures", file);
  std::set<std::string> gguf;
  std::set<std::string> wrapped;  // wrapper model_types the rows name
  for (std::size_t i = 0; i < rows.size(); ++i) {
    Row row = read_row(rows[i], file, i);
    const std::string where = "architectures[" + std::to_string(i) + "]";
    for (const auto& m : row.info.model_types) claim(m, where + ".model_types");
    for (const auto& m : row.info.wrapper_model_types) {
      claim(m, where + ".wrapper_model_types");
      wrapped.insert(m);
    }
    for (const auto& g : row.info.gguf_architectures) {
      if (!gguf.insert(g).second) throw SpecError(file, where + ".gguf", g, "listed twice");
    }
    t.rows.push_back(std::move(row));
  }
  read_class_defaults(root["config_class_defaults"], file, t);
  read_vision_class_defaults(root["vision_config_class_defaults"], file, t);
  const YAML::Node wrappers = sequence(root, "wrappers", file);
  for (std::size_t i = 0; i < wrappers.size(); ++i) {
    const TableEntry e(wrappers[i], file, "wrappers[" + std::to_string(i) + "]",
                       {"model_type", "text_model_type", "vision", "audio"});
    const std::string model_type = e.text("model_type", true);
    if (wrapped.erase(model_type) == 0) {
      e.fail("model_type", model_type,
             "not in one architecture row's wrapper_model_types (or listed twice)");
    }
    t.wrappers.push_back(read_wrapper(e, t));
  }
  if (!wrapped.empty()) {
    throw SpecError(file, "wrappers", *wrapped.begin(),
                    "a row's wrapper_model_types entry has no wrappers entry");
  }
  const YAML::Node refused = sequence(root, "refused_model_types", file);
  for (std::size_t i = 0; i < refused.size(); ++i) {
    const std::string where = "refused_model_types[" + std::to_string(i) + "]";
    const TableEntry e(refused[i], file, where, {"model_type", "reason"});
    RefusedArchitecture r{e.text("model_type", true), e.text("reason", true)};
    claim(r.model_type, where + ".model_type");
    t.refused.push_back(std::move(r));
  }
  return t;
}

// model_specs/architectures.yaml as compiled in, its pieces joined once.
const std::string& architectures_yaml() {
  static const std::string text = [] {
    std::string joined;
    for (const char* piece : detail::kArchitecturesYamlPieces) joined += piece;
    return joined;
  }();
  return text;
}

// Parsed at the first import of a config: without its comment lines and without the registry
// section (a third of the file, read by vllm_registry_architectures when asked).
const Table& table() {
  static const Table t =
      parse_table(without_comment_lines(without_section(architectures_yaml(), "vllm_registry")),
                  kArchitecturesFile);
  return t;
}

const std::vector<Row>& rows() { return table().rows; }

const std::vector<Wrapper>& wrappers() { return table().wrappers; }

const Row* find_row(const std::string& model_type) {
  for (const Row& r : rows()) {
    if (std::find(r.info.model_types.begin(), r.info.model_types.end(), model_type) !=
        r.info.model_types.end()) {
      return &r;
    }
  }
  return nullptr;
}

const Wrapper* find_wrapper(const std::string& model_type) {
  for (const Wrapper& w : wrappers()) {
    if (w.model_type == model_type) return &w;
  }
  return nullptr;
}

// A model_type the table lists as refused: its reason (the generic path never plans it).
void refuse_if_known(const ConfigFields& where, const char* key, const std::string& model_type) {
  for (const RefusedArchitecture& r : refused_architectures()) {
    if (r.model_type == model_type) {
      where.fail(key, model_type,
                 "known but not modelled: " + r.reason +
                     "; to plan it, write a spec YAML under model_specs/models/ (see "
                     "docs/models.md)");
    }
  }
}

// --- vision towers ------------------------------------------------------------------------

// ViT encoder with biased q/k/v/o and two-matrix MLP, two LayerNorms per layer, a biased patch
// convolution, learned positions and a post-LayerNorm (SigLIP / CLIP / Llama-4 style).
std::int64_t vit_encoder(const ConfigFields& v) {
  const std::int64_t h = v.integer("hidden_size");
  const std::int64_t inter = v.integer("intermediate_size");
  const std::int64_t layers = v.integer("num_hidden_layers");
  const std::int64_t patch = v.integer("patch_size");
  const std::int64_t image = v.integer("image_size");
  const std::int64_t channels = v.integer_or("num_channels", 3);
  if (patch <= 0 || image < patch)
    v.fail("patch_size", std::to_string(patch), "patch larger than the image");
  const std::int64_t positions = (image / patch) * (image / patch);
  const std::int64_t per_layer = 4 * h * h + 2 * h * inter + 9 * h + inter;
  return layers * per_layer + channels * patch * patch * h + h + positions * h + 2 * h;
}

// Gemma-4's vision tower (transformers Gemma4VisionModel, which vLLM 0.33's gemma4_mm.py loads):
// patch_embedder.input_proj [hidden, 3 x patch^2], a [2, position_embedding_size, hidden]
// position table, per layer q/k/v/o [hidden, hidden], q_norm and k_norm [head_dim], a gated MLP
// and four norms; with `standardize` a bias and a scale [hidden]. The embedder projects the
// pooled soft tokens to the text width (embed_vision.embedding_projection, its norm unweighted).
std::int64_t gemma4_tower(const ConfigFields& v, std::int64_t text_hidden) {
  const std::int64_t h = v.integer("hidden_size");
  const std::int64_t inter = v.integer("intermediate_size");
  const std::int64_t layers = v.integer("num_hidden_layers");
  const std::int64_t patch = v.integer("patch_size");
  const std::int64_t head_dim = v.integer("head_dim");
  const std::int64_t positions = v.integer_or("position_embedding_size", 10240);
  const std::int64_t per_layer = 4 * h * h + 3 * h * inter + 4 * h + 2 * head_dim;
  const std::int64_t standardize = v.boolean_or("standardize", false) ? 2 * h : 0;
  return layers * per_layer + 3 * patch * patch * h + 2 * positions * h + standardize +
         text_hidden * h;
}

// Qwen3-VL's learned position table: num_position_embeddings rows (none without it); Qwen3-Omni's
// (qwen3_omni_moe_thinker.py Qwen3Omni_VisionTransformer) (image_size / patch_size)^2 rows.
std::int64_t qwen3_vl_positions(const ConfigFields& v, Vision style) {
  if (style != Vision::Qwen3Omni) return v.integer_or("num_position_embeddings", 0);
  if (!v.has("image_size")) {
    v.fail("image_size", "missing",
           "vLLM's Qwen3-Omni vision tower sizes its position table from image_size / patch_size");
  }
  const std::int64_t side = v.integer("image_size") / v.integer("patch_size");
  if (side <= 0 || side > 4096) {
    v.fail("image_size", std::to_string(v.integer("image_size")),
           "image_size / patch_size must be in [1, 4096]");
  }
  return side * side;
}

// Qwen-VL vision transformers: 3-D patch convolution, blocks, and a patch merger MLP over
// spatial_merge_size^2 patches into the text width. Versions differ in norms and MLP.
std::int64_t qwen_vl_tower(const ConfigFields& v, Vision style, std::int64_t text_hidden) {
  const bool v2 = style == Vision::Qwen2Vl;
  const std::int64_t e = v.integer(v2 ? "embed_dim" : "hidden_size");
  const std::int64_t depth = v.integer("depth");
  const std::int64_t patch = v.integer("patch_size");
  const std::int64_t temporal = v.integer_or("temporal_patch_size", 2);
  const std::int64_t channels = v.integer_or("in_channels", v.integer_or("in_chans", 3));
  const std::int64_t merge = v.integer_or("spatial_merge_size", 2);
  const std::int64_t out =
      v2 ? v.integer_or("hidden_size", text_hidden) : v.integer_or("out_hidden_size", text_hidden);
  const std::int64_t merged = e * merge * merge;
  const std::int64_t attention = 4 * e * e + 4 * e;  // qkv and proj with biases
  std::int64_t per_layer = attention;
  std::int64_t total = channels * temporal * patch * patch * e;
  std::int64_t merger = merged * merged + merged + out * merged + out;
  if (style == Vision::Qwen2Vl) {
    const std::int64_t inter = e * v.integer_or("mlp_ratio", 4);
    per_layer += 2 * e * inter + inter + e + 4 * e;  // fc1/fc2 + two LayerNorms
    merger += 2 * e;
  } else if (style == Vision::Qwen25Vl) {
    const std::int64_t inter = v.integer("intermediate_size");
    per_layer += 3 * e * inter + 2 * inter + e + 2 * e;  // gated MLP with biases + RMSNorms
    merger += e;
  } else {
    const std::int64_t inter = v.integer("intermediate_size");
    per_layer += 2 * e * inter + inter + e + 4 * e;
    total += e + qwen3_vl_positions(v, style) * e;  // conv bias, positions
    std::int64_t deepstack = 0;
    if (style == Vision::Qwen3Omni && !v.has("deepstack_visual_indexes")) {
      v.fail("deepstack_visual_indexes", "missing",
             "Qwen3-Omni's deepstack mergers are counted from it; write it into config.json");
    }
    if (v.has("deepstack_visual_indexes")) {
      const json& idx = v.at("deepstack_visual_indexes");
      if (!idx.is_array()) v.fail("deepstack_visual_indexes", idx.dump(), "expected a list");
      deepstack = static_cast<std::int64_t>(idx.size());
    }
    total += deepstack * (merger + 2 * merged);  // post-shuffle LayerNorm per deepstack merger
    merger += 2 * e;
  }
  return total + depth * per_layer + merger;
}

// Pixtral encoder (Mistral-3): RMSNorms, gated MLP, no biases; projector with patch merger.
std::int64_t pixtral_tower(const ConfigFields& v, const ConfigFields& top,
                           std::int64_t text_hidden) {
  const std::int64_t h = v.integer("hidden_size");
  const std::int64_t inter = v.integer("intermediate_size");
  const std::int64_t layers = v.integer("num_hidden_layers");
  const std::int64_t patch = v.integer("patch_size");
  const std::int64_t channels = v.integer_or("num_channels", 3);
  const std::int64_t merge = top.integer_or("spatial_merge_size", 2);
  const std::int64_t encoder =
      layers * (4 * h * h + 3 * h * inter + 2 * h) + channels * patch * patch * h + h;
  const bool bias = top.boolean_or("multimodal_projector_bias", false);
  const std::int64_t projector = h + h * h * merge * merge + text_hidden * h +
                                 text_hidden * text_hidden + (bias ? 2 * text_hidden : 0);
  return encoder + projector;
}

// The first name of a config's `architectures`, or `fallback` where it names none.
std::string first_architecture(const ConfigFields& top, const std::string& fallback) {
  if (top.has("architectures") && top.at("architectures").is_array() &&
      !top.at("architectures").empty() && top.at("architectures")[0].is_string()) {
    return top.at("architectures")[0].get<std::string>();
  }
  return fallback;
}

// A vision_config size a tower's parameter count or profile multiplies: refused outside
// [1, limit] so the products stay far inside int64.
std::int64_t bounded(const ConfigFields& where, const char* key, std::int64_t value,
                     std::int64_t limit) {
  if (value < 1 || value > limit) {
    where.fail(key, std::to_string(value), "out of range [1, " + std::to_string(limit) + "]");
  }
  return value;
}
// The same for the integer field `key` of `where`.
std::int64_t bounded(const ConfigFields& where, const char* key, std::int64_t limit) {
  return bounded(where, key, where.integer(key), limit);
}

constexpr std::int64_t kMaxSide = 1 << 16;   // pixels per image side
constexpr std::int64_t kMaxWidth = 1 << 20;  // encoder widths
constexpr std::int64_t kMaxLayers = 1 << 12;

// A CLIP or SigLIP vision encoder as vLLM 0.33 builds it (clip.py CLIPVisionTransformer,
// siglip.py SiglipVisionTransformer, idefics2_vision_model.py): `layers` blocks of biased q/k/v/o,
// a biased fc1/fc2 MLP and two LayerNorms (4h^2 + 2h*inter + 9h + inter); CLIP embeds with a
// class vector, an unbiased patch convolution, one position per patch plus the class token and a
// pre-LayerNorm; SigLIP with a biased convolution and one position per patch. `post_norm`: the
// final LayerNorm. vLLM builds no pooling head for these wrappers (use_head false).
std::int64_t clip_siglip_encoder(const ConfigFields& v, bool clip, std::int64_t layers,
                                 bool post_norm) {
  const std::int64_t h = bounded(v, "hidden_size", kMaxWidth);
  const std::int64_t inter = bounded(v, "intermediate_size", kMaxWidth);
  const std::int64_t image = bounded(v, "image_size", kMaxSide);
  const std::int64_t patch = bounded(v, "patch_size", image);
  const std::int64_t channels = bounded(v, "num_channels", 16);
  const std::int64_t patches = (image / patch) * (image / patch);
  const std::int64_t conv = channels * patch * patch * h;
  const std::int64_t embeddings =
      clip ? h + conv + (patches + 1) * h + 2 * h : conv + h + patches * h;
  const std::int64_t per_layer = 4 * h * h + 2 * h * inter + 9 * h + inter;
  return layers * per_layer + embeddings + (post_norm ? 2 * h : 0);
}

// The encoder layers a LLaVA-style wrapper builds: up to the deepest vision_feature_layer (vLLM
// llava.py _get_num_hidden_layers with utils.py get_layer_index: index i >= 0 needs i layers,
// a negative one counts from the end, -1 being all of them).
std::int64_t llava_layers_built(const ConfigFields& top, std::int64_t layers,
                                std::int64_t default_feature_layer) {
  auto built = [&](const json& index) {
    if (!index.is_number_integer()) {
      top.fail("vision_feature_layer", index.dump(), "expected an integer or a list of them");
    }
    const std::int64_t i = index.get<std::int64_t>();
    const std::int64_t n = i < 0 ? layers + i + 1 : i;
    if (n < 0 || n > layers) {
      top.fail("vision_feature_layer", std::to_string(i),
               "outside the encoder's " + std::to_string(layers) + " layers");
    }
    return n;
  };
  if (!top.has("vision_feature_layer")) return built(json(default_feature_layer));
  const json& feature = top.at("vision_feature_layer");
  if (!feature.is_array()) return built(feature);
  if (feature.empty()) top.fail("vision_feature_layer", "[]", "expected at least one layer");
  std::int64_t deepest = 0;
  for (const json& index : feature) deepest = std::max(deepest, built(index));
  return deepest;
}

// LLaVA, LLaVA-Next, LLaVA-NeXT-Video and LLaVA-OneVision as vLLM 0.33 builds them (llava.py,
// llava_next.py, llava_next_video.py, llava_onevision.py): the CLIP or SigLIP encoder up to the
// deepest feature layer without its post-LayerNorm (require_post_norm=False), a linear_1 / GELU
// / linear_2 projector (biased unless multimodal_projector_bias is false), and the
// image_newline vector of LLaVA-Next and OneVision. LLaVA-Next alone widens linear_1 by the
// number of feature layers it concatenates (Granite-Vision).
std::int64_t llava_tower(const ConfigFields& v, const ConfigFields& top,
                         const std::string& model_type, bool clip, std::int64_t text_hidden) {
  // bee.py and rvl.py subclass LLaVA-OneVision with projectors of their own (a LayerNorm first;
  // Bee's four times the text width): refused by name, not sized as OneVision's.
  const std::string architecture = first_architecture(top, "");
  if (architecture == "BeeForConditionalGeneration" ||
      architecture == "RForConditionalGeneration") {
    top.fail("architectures", architecture,
             "its projector (bee.py / rvl.py: a LayerNorm before linear_1) is not LLaVA's; not "
             "modelled");
  }
  const std::int64_t layers = bounded(v, "num_hidden_layers", kMaxLayers);
  const bool onevision = model_type == "llava_onevision";
  const std::int64_t built = llava_layers_built(top, layers, onevision ? -1 : -2);
  const std::int64_t h = v.integer("hidden_size");
  std::int64_t stacked = 1;
  if (model_type == "llava_next" && top.has("vision_feature_layer") &&
      top.at("vision_feature_layer").is_array()) {
    stacked = static_cast<std::int64_t>(top.at("vision_feature_layer").size());
  }
  const bool bias = top.boolean_or("multimodal_projector_bias", true);
  const bool newline = model_type == "llava_next" || onevision;
  return clip_siglip_encoder(v, clip, built, false) + stacked * h * text_hidden +
         text_hidden * text_hidden + (bias ? 2 * text_hidden : 0) + (newline ? text_hidden : 0);
}

// A boolean the tower's size depends on, where the config class is remote code (no defaults
// the table can read): the file must name it.
bool required_flag(const ConfigFields& v, const char* key) {
  if (!v.has(key) || !v.at(key).is_boolean()) {
    v.fail(key, v.has(key) ? v.at(key).dump() : "missing",
           "true or false required (remote-code config class: no default is read)");
  }
  return v.at(key).get<bool>();
}

// InternVL as vLLM 0.33 builds it (internvl.py InternVLChatModel, intern_vit.py): InternViT up
// to select_layer (i < 0: layers + i + 1; i >= 0: i + 1) with a class vector, a biased patch
// convolution, patches + 1 positions; per block qkv (biased with qkv_bias), a biased proj,
// q/k RMSNorms over the width with qk_normalization, a biased fc1/fc2 MLP, two LayerNorms (or
// RMSNorms with norm_type rms_norm) and the two layer scales; no post-norm. mlp1: a LayerNorm
// over the pixel-shuffled width (1/downsample_ratio)^2 x hidden, a biased linear to the text
// width and a biased text-width linear. No dummy heads (those are NVLM-D's).
std::int64_t intern_vit_tower(const ConfigFields& v, const ConfigFields& top,
                              std::int64_t text_hidden) {
  const std::int64_t h = bounded(v, "hidden_size", kMaxWidth);
  const std::int64_t inter = bounded(v, "intermediate_size", kMaxWidth);
  const std::int64_t layers = bounded(v, "num_hidden_layers", kMaxLayers);
  const std::int64_t image = bounded(v, "image_size", kMaxSide);
  const std::int64_t patch = bounded(v, "patch_size", image);
  const std::string norm = v.string_or("norm_type", "");
  if (norm != "layer_norm" && norm != "rms_norm") {
    v.fail("norm_type", norm.empty() ? "missing" : norm, "expected layer_norm or rms_norm");
  }
  std::int64_t select = -1;  // InternVLChatConfig's default
  if (top.has("select_layer")) {
    if (!top.at("select_layer").is_number_integer()) {
      top.fail("select_layer", top.at("select_layer").dump(), "expected an integer");
    }
    select = top.at("select_layer").get<std::int64_t>();
  }
  const std::int64_t built = select < 0 ? layers + select + 1 : select + 1;
  if (built < 1 || built > layers) {
    top.fail("select_layer", std::to_string(select),
             "outside the encoder's " + std::to_string(layers) + " layers");
  }
  const double ratio = top.number_or("downsample_ratio", 0.5);
  if (!(ratio > 0.0 && ratio <= 1.0)) {
    top.fail("downsample_ratio", std::to_string(ratio), "expected (0, 1]");
  }
  const auto shuffle = static_cast<std::int64_t>(1.0 / ratio);  // vLLM: int(1 / ratio)
  const std::int64_t shuffled = h * shuffle * shuffle;
  const std::int64_t per_layer = 3 * h * h + (required_flag(v, "qkv_bias") ? 3 * h : 0) + h * h +
                                 h + (required_flag(v, "qk_normalization") ? 2 * h : 0) +
                                 2 * h * inter + inter + h +
                                 (norm == "layer_norm" ? 4 * h : 2 * h) + 2 * h;
  const std::int64_t side = image / patch;
  const std::int64_t embeddings = h + 3 * patch * patch * h + h + (side * side + 1) * h;
  const std::int64_t mlp1 =
      2 * shuffled + shuffled * text_hidden + text_hidden + text_hidden * text_hidden + text_hidden;
  return built * per_layer + embeddings + mlp1;
}

// An image or patch size written as one integer or as [height, width] (transformers'
// InternVLVisionConfig): {height, width}, each in [1, limit].
std::pair<std::int64_t, std::int64_t> side_pair(const ConfigFields& v, const char* key,
                                                std::int64_t limit) {
  if (v.has(key) && v.at(key).is_array()) {
    const json& pair = v.at(key);
    if (pair.size() != 2 || !pair[0].is_number_integer() || !pair[1].is_number_integer()) {
      v.fail(key, pair.dump(), "expected an integer or [height, width]");
    }
    return {bounded(v, key, pair[0].get<std::int64_t>(), limit),
            bounded(v, key, pair[1].get<std::int64_t>(), limit)};
  }
  const std::int64_t side = bounded(v, key, v.integer(key), limit);
  return {side, side};
}

// InternVL in transformers' format as vLLM 0.33 builds it (interns1.py, interns1_vit.py): every
// encoder layer, with a class vector (and a mask vector with use_mask_token), a biased patch
// convolution, patches + 1 positions (use_absolute_position_embeddings); per block q/k/v
// (biased with attention_bias), q/k RMSNorms over the width with use_qk_norm, a biased
// projection, a biased fc1/fc2 MLP, two LayerNorms (RMSNorms with norm_type rms_norm) and two
// layer scales; a final LayerNorm unless use_mean_pooling. The projector: a LayerNorm over the
// pixel-shuffled width, a biased linear to the text width and a biased text-width linear.
std::int64_t internvl_hf_tower(const ConfigFields& v, const ConfigFields& top,
                               std::int64_t text_hidden) {
  const std::int64_t h = bounded(v, "hidden_size", kMaxWidth);
  const std::int64_t inter = bounded(v, "intermediate_size", kMaxWidth);
  const std::int64_t layers = bounded(v, "num_hidden_layers", kMaxLayers);
  const std::int64_t channels = bounded(v, "num_channels", 16);
  const auto image = side_pair(v, "image_size", kMaxSide);
  const auto patch = side_pair(v, "patch_size", kMaxSide);
  if (patch.first > image.first || patch.second > image.second) {
    v.fail("patch_size", v.at("patch_size").dump(), "patch larger than the image");
  }
  const std::string norm = v.string_or("norm_type", "");
  if (norm != "layer_norm" && norm != "rms_norm") {
    v.fail("norm_type", norm.empty() ? "missing" : norm, "expected layer_norm or rms_norm");
  }
  const double ratio = top.number_or("downsample_ratio", 0.5);
  if (!(ratio > 0.0 && ratio <= 1.0)) {
    top.fail("downsample_ratio", std::to_string(ratio), "expected (0, 1]");
  }
  const auto shuffle = static_cast<std::int64_t>(1.0 / ratio);  // vLLM: int(1 / ratio)
  const std::int64_t shuffled = h * shuffle * shuffle;
  const std::int64_t per_layer = 3 * h * h + (v.boolean_or("attention_bias", false) ? 3 * h : 0) +
                                 (v.boolean_or("use_qk_norm", false) ? 2 * h : 0) + h * h + h +
                                 2 * h * inter + inter + h +
                                 (norm == "layer_norm" ? 4 * h : 2 * h) + 2 * h;
  const std::int64_t patches = (image.first / patch.first) * (image.second / patch.second);
  const std::int64_t embeddings =
      h + (v.boolean_or("use_mask_token", false) ? h : 0) +
      channels * patch.first * patch.second * h + h +
      (v.boolean_or("use_absolute_position_embeddings", true) ? (patches + 1) * h : 0);
  const std::int64_t post = v.boolean_or("use_mean_pooling", true) ? 0 : 2 * h;
  const std::int64_t projector =
      2 * shuffled + shuffled * text_hidden + text_hidden + text_hidden * text_hidden + text_hidden;
  return layers * per_layer + embeddings + post + projector;
}

// blip2.py's Blip2QFormerModel over a Blip2QFormerConfig: a LayerNorm; per layer a biased
// self-attention q/k/v and dense with a LayerNorm, every cross_attention_frequency-th layer
// (0, f, 2f, ...) a cross-attention whose k and v read `encoder_width`, a biased intermediate and
// output with a LayerNorm; no word embeddings.
std::int64_t qformer_parameters(const ConfigFields& q, std::int64_t encoder_width) {
  const std::int64_t qh = bounded(q, "hidden_size", kMaxWidth);
  const std::int64_t qi = bounded(q, "intermediate_size", kMaxWidth);
  const std::int64_t q_layers = bounded(q, "num_hidden_layers", kMaxLayers);
  const std::int64_t frequency = bounded(q, "cross_attention_frequency", kMaxLayers);
  const std::int64_t self_attention = 4 * (qh * qh + qh) + 2 * qh;
  const std::int64_t cross_attention = 2 * (qh * qh + qh) + 2 * (encoder_width * qh + qh) + 2 * qh;
  const std::int64_t mlp = qh * qi + qi + qi * qh + qh + 2 * qh;
  const std::int64_t crossing = (q_layers + frequency - 1) / frequency;
  return 2 * qh + q_layers * (self_attention + mlp) + crossing * cross_attention;
}

// BLIP-2 as vLLM 0.33 builds it (blip2.py, blip.py BlipVisionModel): every vision layer and the
// post-LayerNorm, with a class vector, a biased patch convolution over 3 channels and patches + 1
// positions; per layer a fused qkv (biased with qkv_bias), a biased projection, a biased
// fc1/fc2 and two LayerNorms. Then num_query_tokens learned queries, the Q-Former
// (qformer_parameters, its cross-attention reading the vision width) and a biased projection to
// the text width.
std::int64_t blip2_tower(const ConfigFields& v, const ConfigFields& q, const ConfigFields& top,
                         std::int64_t text_hidden) {
  const std::int64_t h = bounded(v, "hidden_size", kMaxWidth);
  const std::int64_t inter = bounded(v, "intermediate_size", kMaxWidth);
  const std::int64_t layers = bounded(v, "num_hidden_layers", kMaxLayers);
  const std::int64_t image = bounded(v, "image_size", kMaxSide);
  const std::int64_t patch = bounded(v, "patch_size", image);
  const std::int64_t side = image / patch;
  const std::int64_t vision_layer = 3 * h * h + (v.boolean_or("qkv_bias", true) ? 3 * h : 0) +
                                    h * h + h + 2 * h * inter + inter + h + 4 * h;
  const std::int64_t vision =
      h + 3 * patch * patch * h + h + (side * side + 1) * h + layers * vision_layer + 2 * h;
  const std::int64_t qh = bounded(q, "hidden_size", kMaxWidth);
  // Blip2Config sets the Q-Former's encoder_hidden_size to the vision width.
  const std::int64_t queries =
      bounded(top, "num_query_tokens", top.integer_or("num_query_tokens", 32), 1 << 16) * qh;
  return vision + queries + qformer_parameters(q, h) + qh * text_hidden + text_hidden;
}

// LFM2-VL as vLLM 0.33 builds it (lfm2_vl.py, lfm2_siglip2.py): SigLIP2 NaFlex, every layer and
// the post-LayerNorm, embedding patches with a biased linear over num_channels x patch^2 and a
// num_patches position table; per layer biased q/k/v/o, a biased fc1/fc2 and two LayerNorms.
// The projector: pixel unshuffle by downsample_factor, a LayerNorm over the unshuffled width with
// projector_use_layernorm, then linear_1 to projector_hidden_size and linear_2 to the text
// width, biased with projector_bias (Lfm2VlConfig's defaults: 2, true, 2560, true).
std::int64_t lfm2_vl_tower(const ConfigFields& v, const ConfigFields& top,
                           std::int64_t text_hidden) {
  const std::string vision_type = v.string_or("model_type", "siglip2_vision_model");
  if (vision_type != "siglip2_vision_model") {
    v.fail("model_type", vision_type, "vLLM's lfm2_vl.py builds siglip2_vision_model only");
  }
  const std::int64_t h = bounded(v, "hidden_size", kMaxWidth);
  const std::int64_t inter = bounded(v, "intermediate_size", kMaxWidth);
  const std::int64_t layers = bounded(v, "num_hidden_layers", kMaxLayers);
  const std::int64_t channels = bounded(v, "num_channels", 16);
  const std::int64_t patch = bounded(v, "patch_size", kMaxSide);
  const std::int64_t patches = bounded(v, "num_patches", kMaxSide);
  const std::int64_t embeddings = channels * patch * patch * h + h + patches * h;
  const std::int64_t per_layer = 4 * h * h + 2 * h * inter + 9 * h + inter;
  const std::int64_t factor =
      bounded(top, "downsample_factor", top.integer_or("downsample_factor", 2), 64);
  const std::int64_t unshuffled = h * factor * factor;
  const std::int64_t hidden = bounded(top, "projector_hidden_size",
                                      top.integer_or("projector_hidden_size", 2560), kMaxWidth);
  const bool bias = top.boolean_or("projector_bias", true);
  const std::int64_t projector =
      (top.boolean_or("projector_use_layernorm", true) ? 2 * unshuffled : 0) + unshuffled * hidden +
      hidden * text_hidden + (bias ? hidden + text_hidden : 0);
  return embeddings + layers * per_layer + 2 * h + projector;
}

// GLM-4.1V's vision transformer as vLLM 0.33 builds it (glm4_1v.py Glm4vVisionTransformer): a
// biased 3-D patch convolution (in_channels x temporal_patch_size x patch^2), an RMSNorm after
// it, (image_size / patch)^2 learned positions; `depth` blocks of two RMSNorms, unbiased q/k/v
// and proj, and an unbiased SwiGLU MLP of out_hidden_size; a final RMSNorm; a biased
// spatial_merge_size^2 downsample convolution to out_hidden_size; the merger: an unbiased
// out x out projection, a LayerNorm and an unbiased SwiGLU of intermediate_size. GLM-OCR's
// (glm_ocr.py, `ocr`) drops the post-convolution norm and the positions, biases q/k/v and proj,
// adds q/k RMSNorms over the head size, runs a biased SwiGLU of intermediate_size in each block,
// and sizes the merger's SwiGLU by the text model's intermediate size.
std::int64_t glm4v_tower(const ConfigFields& v, bool ocr, std::int64_t text_intermediate) {
  const std::int64_t h = bounded(v, "hidden_size", kMaxWidth);
  const std::int64_t out = bounded(v, "out_hidden_size", kMaxWidth);
  const std::int64_t inter = bounded(v, "intermediate_size", kMaxWidth);
  const std::int64_t depth = bounded(v, "depth", kMaxLayers);
  const std::int64_t channels = bounded(v, "in_channels", 16);
  const std::int64_t image = bounded(v, "image_size", kMaxSide);
  const std::int64_t patch = bounded(v, "patch_size", image);
  const std::int64_t temporal = bounded(v, "temporal_patch_size", 64);
  const std::int64_t merge = bounded(v, "spatial_merge_size", 64);
  const std::int64_t side = image / patch;
  const std::int64_t convolution = channels * temporal * patch * patch * h + h;
  std::int64_t embeddings = convolution + h + side * side * h;
  std::int64_t block = 2 * h + 4 * h * h + 3 * h * out;
  std::int64_t merger_width = inter;
  if (ocr) {
    const std::int64_t heads = bounded(v, "num_heads", h);
    embeddings = convolution;
    block = 2 * h + 4 * h * h + 4 * h + 2 * (h / heads) + 3 * h * inter + 2 * inter + h;
    merger_width = text_intermediate;
  }
  const std::int64_t downsample = h * merge * merge * out + out;
  const std::int64_t merger = out * out + 2 * out + 3 * out * merger_width;
  return embeddings + depth * block + h + downsample + merger;
}

// Kimi-K2.5's MoonViT3d as vLLM 0.33 builds it (kimi_k25_vit.py) from transformers'
// Kimi_K25VisionConfig (hidden_size, intermediate_size, num_hidden_layers, patch_size: the
// class's fields; the hub's vt_* keys are not read): a biased patch convolution over 3 channels,
// a learned pos_emb_height x pos_emb_width position table (init_pos_emb_* where the config
// writes them; the time table is a fixed buffer), blocks of two LayerNorms, a biased wqkv and wo
// and a biased fc0 / fc1 MLP, a final LayerNorm. The projector merges merge_kernel_size patches:
// patchmerger, a LayerNorm over the vision width and biased [m -> m], [m -> text] linears;
// patchmergerv2, unbiased linears and an RMSNorm over the text width.
std::int64_t kimi_k25_tower(const ConfigFields& v, std::int64_t text_hidden) {
  const std::int64_t h = bounded(v, "hidden_size", kMaxWidth);
  const std::int64_t inter = bounded(v, "intermediate_size", kMaxWidth);
  const std::int64_t layers = bounded(v, "num_hidden_layers", kMaxLayers);
  const std::int64_t patch = bounded(v, "patch_size", kMaxSide);
  auto table_side = [&](const char* legacy, const char* key) {
    return v.has(legacy) ? bounded(v, legacy, v.integer(legacy), kMaxSide)
                         : bounded(v, key, v.integer(key), kMaxSide);
  };
  const std::int64_t positions = table_side("init_pos_emb_height", "pos_emb_height") *
                                 table_side("init_pos_emb_width", "pos_emb_width");
  std::int64_t merged = h * 4;  // Kimi_K25VisionConfig's merge_kernel_size (2, 2)
  if (v.has("merge_kernel_size")) {
    const json& kernel = v.at("merge_kernel_size");
    if (!kernel.is_array() || kernel.size() != 2 || !kernel[0].is_number_integer() ||
        !kernel[1].is_number_integer()) {
      v.fail("merge_kernel_size", kernel.dump(), "expected [height, width]");
    }
    merged = h * bounded(v, "merge_kernel_size", kernel[0].get<std::int64_t>(), 64) *
             bounded(v, "merge_kernel_size", kernel[1].get<std::int64_t>(), 64);
  }
  const std::string projector_type = v.string_or("mm_projector_type", "patchmerger");
  std::int64_t projector = 0;
  if (projector_type == "patchmerger") {
    projector = 2 * h + merged * merged + merged + merged * text_hidden + text_hidden;
  } else if (projector_type == "patchmergerv2") {
    projector = merged * merged + merged * text_hidden + text_hidden;
  } else {
    v.fail("mm_projector_type", projector_type, "expected patchmerger or patchmergerv2");
  }
  const std::int64_t block = 4 * h + 3 * h * h + 3 * h + h * h + h + 2 * h * inter + inter + h;
  return 3 * patch * patch * h + h + positions * h + layers * block + 2 * h + projector;
}

// The MiniCPM-V version vLLM 0.33's minicpmv.py dispatches on: config.version as written (a
// string or a number), else 2.0 where hidden_size is 2304 and query_num 64, else 2.5.
std::string minicpmv_version(const ConfigFields& top) {
  if (top.has("version")) {
    const json& version = top.at("version");
    if (version.is_string()) return version.get<std::string>();
    if (version.is_number()) return version.dump();
    top.fail("version", version.dump(), "expected a version such as \"2.5\"");
  }
  const bool v2_0 =
      top.integer_or("hidden_size", 0) == 2304 && top.integer_or("query_num", 0) == 64;
  return v2_0 ? "2.0" : "2.5";
}

// A size the tower depends on, where the config class is remote code (no defaults the table can
// read): the file must name it.
std::int64_t required_count(const ConfigFields& top, const char* key, std::int64_t limit) {
  if (!top.has(key) || !top.at(key).is_number_integer()) {
    top.fail(key, top.has(key) ? top.at(key).dump() : "missing",
             "an integer required (remote-code config class: no default is read)");
  }
  return bounded(top, key, limit);
}

// The text model_type of a MiniCPMV checkpoint, by the version vLLM 0.33's minicpmv.py builds:
// 2.0 over MiniCPMForCausalLM, 2.5 over LlamaForCausalLM (both from the top-level keys). The other
// versions (2.6 over Qwen2, 4.0, 4.5 with Resampler4_5 over Qwen3) are refused by name.
std::string minicpmv_text_model_type(const ConfigFields& top) {
  const std::string version = minicpmv_version(top);
  if (version == "2.0") return "minicpm";
  if (version == "2.5") return "llama";
  top.fail("version", version,
           "MiniCPM-V 2.0 and 2.5 are the versions modelled; no config.json of the 2.6 / 4.0 / "
           "4.5 checkpoints was found to test their text model and resampler against");
}

// BaseResampler (vLLM 0.33 resampler.py) at the text width d over a `kv` wide tower: the
// learned queries [queries, d], an unbiased kv_proj [kv -> d], nn.MultiheadAttention (in_proj
// [3d, d] and out_proj [d, d], biased), LayerNorms ln_q, ln_kv and ln_post, and proj [d, d].
std::int64_t minicpmv_resampler(std::int64_t queries, std::int64_t kv, std::int64_t d) {
  return queries * d + kv * d + 4 * d * d + 4 * d + 6 * d + d * d;  // 3 LayerNorms: 6 d
}

// MiniCPM-V 2.5 (MiniCPM-Llama3-V 2.5) as vLLM 0.33 builds it (minicpmv.py MiniCPMV2_5): the
// Idefics2VisionTransformer of vision_config (SigLIP's blocks, a biased patch convolution,
// (image_size / patch_size)^2 positions, the post-LayerNorm), less its last layer under
// drop_vision_last_layer; then Resampler2_5 over query_num queries at the text width, its 2-D
// sin-cos positions a buffer.
std::int64_t minicpmv_tower(const ConfigFields& v, const ConfigFields& top,
                            std::int64_t text_hidden) {
  const std::int64_t layers = bounded(v, "num_hidden_layers", kMaxLayers);
  const std::int64_t built = required_flag(top, "drop_vision_last_layer") ? layers - 1 : layers;
  const std::int64_t queries = required_count(top, "query_num", 1 << 16);
  return clip_siglip_encoder(v, false, built, true) +
         minicpmv_resampler(queries, v.integer("hidden_size"), text_hidden);
}

// MiniCPM-V 2.0 as vLLM 0.33 builds it (minicpmv.py MiniCPMV2_0), whatever vision_encoder says:
// timm's vit_so400m_patch14_siglip_384 (a biased 14 x 14 patch convolution to 1152, 27 x 27
// positions and no class token, 27 blocks of two LayerNorms, a biased qkv and proj and a biased
// fc1 / fc2 of 4304, the final LayerNorm; the attention-pooling head replaced by Identity), less
// its last block under drop_vision_last_layer; then Resampler2 over sqrt(query_num)^2 queries at
// the text width, whose 2-D sin-cos position table [queries, d] is an nn.Parameter.
std::int64_t minicpmv2_0_tower(const ConfigFields& top, std::int64_t text_hidden) {
  constexpr std::int64_t w = 1152;
  constexpr std::int64_t inter = 4304;
  constexpr std::int64_t block = 4 * w * w + 2 * w * inter + 9 * w + inter;
  constexpr std::int64_t side = 384 / 14;  // 27 patches a side
  constexpr std::int64_t embeddings = w * 3 * 14 * 14 + w + side * side * w;
  const std::int64_t blocks = required_flag(top, "drop_vision_last_layer") ? 26 : 27;
  const auto grid = static_cast<std::int64_t>(
      std::sqrt(static_cast<double>(required_count(top, "query_num", 1 << 16))));
  const std::int64_t queries = grid * grid;  // vLLM: int(math.sqrt(query_num)) ** 2
  return embeddings + blocks * block + 2 * w + minicpmv_resampler(queries, w, text_hidden) +
         queries * text_hidden;
}

// MiniCPM-V 4.6 as vLLM 0.33 builds it (minicpmv4_6.py; 4.7 subclasses it): the SigLIP-style
// Idefics2VisionTransformer with its post-LayerNorm, less its last layer under the top-level
// drop_vision_last_layer (MiniCPMV4_6Config's default: false); the ViT window-attention
// merger over 2 x 2 patches (a LayerNorm, a biased fused qkv and out_proj at the vision width,
// then a LayerNorm over 4 x width, a biased [4 x width -> 4 x intermediate] and [4 x
// intermediate -> width]); the merger's one downsample MLP over 2 x 2 merged patches (a
// LayerNorm over 4 x width, a biased [4 x width -> 4 x width] and [4 x width -> text]).
std::int64_t minicpmv4_6_tower(const ConfigFields& v, const ConfigFields& top,
                               std::int64_t text_hidden) {
  const std::int64_t layers = bounded(v, "num_hidden_layers", kMaxLayers);
  const std::int64_t built = top.boolean_or("drop_vision_last_layer", false) ? layers - 1 : layers;
  const std::int64_t h = bounded(v, "hidden_size", kMaxWidth);
  const std::int64_t inter = bounded(v, "intermediate_size", kMaxWidth);
  const std::int64_t window = 4 * h;
  const std::int64_t window_merger = 2 * h + 3 * h * h + 3 * h + h * h + h + 2 * window +
                                     window * 4 * inter + 4 * inter + 4 * inter * h + h;
  const std::int64_t merger =
      2 * window + window * window + window + window * text_hidden + text_hidden;
  return clip_siglip_encoder(v, false, built, true) + window_merger + merger;
}

// DeepSeek-OCR as vLLM 0.33 builds it (deepseek_ocr.py, deepencoder.py), whatever its
// vision_config says: build_sam_vit_b() (a biased 16 x 16 patch convolution to 768, a 64 x 64
// position table, 12 blocks of two LayerNorms, a biased qkv and proj, a biased lin1 / lin2 of
// 3072 and relative positions per head dimension 64: 2 x (2 x 64 - 1) rows on the global
// blocks 2, 5, 8, 11, 2 x (2 x 14 - 1) = 2 x 27 on the windowed ones; a neck of an unbiased 1 x 1
// and a 3 x 3 convolution to 256, each followed by a LayerNorm, then unbiased 3 x 3 convolutions to
// 512 and 1024) and a CLIP-L/14-224 (a class vector, an unbiased patch convolution, 257 positions,
// a pre-LayerNorm, 24 blocks of width 1024 with biased fused qkv, out_proj and fc1 / fc2 of 4096,
// two LayerNorms, no post-norm); then projector_config's linear [input_dim -> n_embed] and the
// image_newline and view_seperator vectors of n_embed.
std::int64_t deepseek_ocr_tower(const ConfigFields& projector) {
  const std::string type = projector.string_or("projector_type", "");
  if (type != "linear") {
    projector.fail("projector_type", type.empty() ? "missing" : type,
                   "DeepSeek-OCR's linear projector is the one modelled");
  }
  const std::int64_t input = bounded(projector, "input_dim", kMaxWidth);
  const std::int64_t embed = bounded(projector, "n_embed", kMaxWidth);
  constexpr std::int64_t s = 768;  // SAM ViT-B's width
  constexpr std::int64_t head = 64;
  constexpr std::int64_t neck = 256;
  constexpr std::int64_t sam_block = s * 4 + s * s * 3 + s * 3 + s * s + s + s * s * 8 + s * 4 + s;
  constexpr std::int64_t sam_rel_pos = head * (2 * head - 1) * 2 * 4 + head * 27 * 2 * 8;
  constexpr std::int64_t sam = s * 3 * 16 * 16 + s + s * 64 * 64 + sam_block * 12 + sam_rel_pos +
                               neck * s + neck * 2 + neck * neck * 9 + neck * 2 + neck * 512 * 9 +
                               neck * 2 * 1024 * 9;
  constexpr std::int64_t c = 1024;  // CLIP-L's width
  constexpr std::int64_t clip_block = c * 4 + c * c * 3 + c * 3 + c * c + c + c * c * 8 + c * 5;
  constexpr std::int64_t clip = c + c * 3 * 14 * 14 + c * 257 + c * 2 + clip_block * 24;
  return sam + clip + input * embed + embed + 2 * embed;
}

// EXAONE 4.5's vision transformer as vLLM 0.33 builds it (exaone4_5.py): Qwen2.5-VL's
// (qwen2_5_vl.py: unbiased 3-D patch convolution, RMSNorms, a biased gated MLP, the patch
// merger) whose blocks attend with num_key_value_heads K/V heads of hidden / num_heads: each
// biased qkv narrows from 3 x hidden to hidden + 2 x those heads.
std::int64_t exaone4_5_tower(const ConfigFields& v, std::int64_t text_hidden) {
  const std::int64_t e = bounded(v, "hidden_size", kMaxWidth);
  const std::int64_t heads = bounded(v, "num_heads", e);
  const std::int64_t kv_heads = bounded(v, "num_key_value_heads", heads);
  const std::int64_t depth = bounded(v, "depth", kMaxLayers);
  const std::int64_t kv_width = kv_heads * (e / heads);
  return qwen_vl_tower(v, Vision::Qwen25Vl, text_hidden) - depth * 2 * (e - kv_width) * (e + 1);
}

// dots.ocr's vision transformer as vLLM 0.33 builds it (dots_ocr.py DotsVisionTransformer): a
// biased 2-D patch convolution (Conv2dLayer) to embed_dim and its RMSNorm; blocks of two
// RMSNorms, a fused qkv and proj and a SwiGLU fc13 / fc2 of intermediate_size, biased with
// use_bias; a final RMSNorm with post_norm (every layer is built); the PatchMerger: a LayerNorm
// over embed_dim, then biased [m -> m] and [m -> hidden_size] over m = spatial_merge_size^2
// patches.
std::int64_t dots_ocr_tower(const ConfigFields& v) {
  const std::int64_t e = bounded(v, "embed_dim", kMaxWidth);
  const std::int64_t out = bounded(v, "hidden_size", kMaxWidth);
  const std::int64_t inter = bounded(v, "intermediate_size", kMaxWidth);
  const std::int64_t layers = bounded(v, "num_hidden_layers", kMaxLayers);
  const std::int64_t patch = bounded(v, "patch_size", kMaxSide);
  const std::int64_t channels = bounded(v, "num_channels", 16);
  const std::int64_t merge = bounded(v, "spatial_merge_size", 64);
  const std::int64_t bias = v.boolean_or("use_bias", false) ? 1 : 0;
  const std::int64_t block =
      2 * e + 4 * e * e + bias * 4 * e + 3 * e * inter + bias * (2 * inter + e);
  const std::int64_t post_norm = v.boolean_or("post_norm", true) ? e : 0;
  const std::int64_t merged = e * merge * merge;
  const std::int64_t merger = 2 * e + merged * merged + merged + merged * out + out;
  return channels * patch * patch * e + e + e + layers * block + post_norm + merger;
}

// Gemma-4 Unified's image path as vLLM 0.33 builds it (gemma4_unified.py): the encoder-free
// Gemma4UnifiedVisionEmbedder over raw patches of model_patch_size = patch_size x
// pooling_kernel_size pixels a side and 3 channels (a LayerNorm over the patch, a biased dense to
// mm_embed_dim, a LayerNorm, a factorized position table [mm_posemb_size, 2, mm_embed_dim] and
// its LayerNorm), then embed_vision (gemma4_mm.py Gemma4MultimodalEmbedder: an RMSNorm without
// weight and an unbiased [output_proj_dims -> text hidden]).
std::int64_t gemma4_unified_vision(const ConfigFields& v, std::int64_t text_hidden) {
  const std::int64_t side = bounded(v, "patch_size", 1024) * bounded(v, "pooling_kernel_size", 16);
  if (v.has("model_patch_size") && v.integer("model_patch_size") != side) {
    v.fail("model_patch_size", std::to_string(v.integer("model_patch_size")),
           "must equal patch_size x pooling_kernel_size (" + std::to_string(side) + ")");
  }
  const std::int64_t pixels = side * side * 3;
  const std::int64_t e = bounded(v, "mm_embed_dim", kMaxWidth);
  const std::int64_t positions = bounded(v, "mm_posemb_size", kMaxSide);
  const std::int64_t out = bounded(v, "output_proj_dims", kMaxWidth);
  return 2 * pixels + pixels * e + e + 2 * e + positions * 2 * e + 2 * e + out * text_hidden;
}

// Keye-VL's tower as vLLM 0.33 builds it (keye.py KeyeSiglipVisionModel and Projector): the
// SigLIP encoder (biased patch convolution, (image_size / patch_size)^2 positions, every layer,
// the post-LayerNorm; the pooling head is dropped on load) plus a packing_position_embedding
// table of 32,768 positions; the projector merges 2 x 2 patches: a LayerNorm over the vision
// width, biased [4 w -> 4 w] and [4 w -> text hidden]. PaddleOCR-VL (paddleocr_vl.py
// SiglipVisionModel and Projector) builds the same without the packing table (its checkpoint's
// copy is dropped on load). Keye-VL-1.5 (keye_vl1_5.py) widens the projector's LayerNorm to the
// merged 4 w: refused by name, no config of it having been checked.
std::int64_t keye_tower(const ConfigFields& v, const ConfigFields& top, bool packing_table,
                        std::int64_t text_hidden) {
  constexpr std::int64_t kPackingPositions = 32768;
  constexpr std::int64_t kMerged = 4;  // 2 x 2 patches
  const std::string architecture = first_architecture(top, "");
  if (architecture == "KeyeVL1_5ForConditionalGeneration") {
    top.fail("architectures", architecture,
             "Keye-VL-1.5's projector (a LayerNorm over the merged 2 x 2 width, keye_vl1_5.py) "
             "is not modelled; KeyeForConditionalGeneration's is");
  }
  const std::int64_t layers = bounded(v, "num_hidden_layers", kMaxLayers);
  const std::int64_t w = bounded(v, "hidden_size", kMaxWidth);
  const std::int64_t m = kMerged * w;
  const std::int64_t projector = 2 * w + m * m + m + m * text_hidden + text_hidden;
  return clip_siglip_encoder(v, false, layers, true) + (packing_table ? kPackingPositions * w : 0) +
         projector;
}

// Command A Vision's tower as vLLM 0.33 builds it (cohere2_vision.py): SiglipVisionModel over
// vision_config (every layer, the post-LayerNorm, no pooling head), then
// Cohere2VisionMultiModalProjector: a pixel shuffle of downsample_factor^2 patches, a biased
// linear_1 [w d^2 -> alignment_intermediate_size] (the SwiGLU gate and up halves) and a biased
// linear_2 [alignment_intermediate_size / 2 -> text hidden]. Cohere2VisionConfig's defaults:
// downsample_factor 2, alignment_intermediate_size 36864.
std::int64_t cohere2_vision_tower(const ConfigFields& v, const ConfigFields& top,
                                  std::int64_t text_hidden) {
  const std::int64_t layers = bounded(v, "num_hidden_layers", kMaxLayers);
  const std::int64_t w = bounded(v, "hidden_size", kMaxWidth);
  const std::int64_t d =
      bounded(top, "downsample_factor", top.integer_or("downsample_factor", 2), 16);
  const std::int64_t align =
      bounded(top, "alignment_intermediate_size",
              top.integer_or("alignment_intermediate_size", 36864), kMaxWidth);
  if (align % 2 != 0) {
    top.fail("alignment_intermediate_size", std::to_string(align),
             "an even width (the SwiGLU gate and up halves)");
  }
  const std::int64_t in = w * d * d;
  const std::int64_t projector = in * align + align + (align / 2) * text_hidden + text_hidden;
  return clip_siglip_encoder(v, false, layers, true) + projector;
}

// gemma3n_mm.py's Gemma3nMultimodalEmbedder over a tower config: embedding [vocab_size, width],
// hard and soft RMSNorms [width], embedding_projection [text hidden, width] (its post-projection
// RMSNorm has no weight).
std::int64_t gemma3n_embedder(const ConfigFields& c, std::int64_t text_hidden) {
  const std::int64_t width = bounded(c, "hidden_size", kMaxWidth);
  return bounded(c, "vocab_size", kMaxWidth) * width + 2 * width + width * text_hidden;
}

// Gemma-3n's vision tower: timm builds the MobileNet-V5 vision_config.architecture names, whose
// block shapes config.json does not hold; mobilenetv5_300m_enc, the one Gemma-3n ships, has
// 294,284,096 parameters (KerasHub's mobilenetv5_300m_enc_gemma3n preset). Another name is
// refused. Then embed_vision.
std::int64_t gemma3n_vision(const ConfigFields& v, std::int64_t text_hidden) {
  constexpr std::int64_t kMobileNetV5_300mEnc = 294284096;
  const std::string architecture = v.string_or("architecture", "");
  if (architecture != "mobilenetv5_300m_enc") {
    v.fail("architecture", "'" + architecture + "'",
           "the timm vision tower sized is mobilenetv5_300m_enc");
  }
  return kMobileNetV5_300mEnc + gemma3n_embedder(v, text_hidden);
}

// The Perception Encoder as vLLM 0.33's step_vl.py builds it (PerceptionEncoder, which
// step3p7.py's Step3p7ForConditionalGeneration reuses), with the wrapper's vit_large_projector:
// an unbiased patch convolution from 3 channels to width; a class vector under use_cls_token
// (the remote class's ues_cls_token where the file names no use_cls_token); a learned position
// table of (class +) (image_size / patch_size)^2 rows under use_abs_posemb; ln_pre and ln_post
// LayerNorms under their flags; `layers` blocks of two LayerNorms, a biased fused qkv and
// out_proj, two layer scales unless ls_init_value is null, and a biased fc1 / fc2 of
// int(width x mlp_ratio); then vit_downsampler1 (width -> 2 width) and vit_downsampler2 (2 width
// -> 4 width), biased 3 x 3 convolutions; vit_large_projector [4 width -> text hidden], biased
// under the top-level projector_bias. The 2-D RoPE tables are buffers. use_rope2d false is
// refused, as step_vl.py refuses it.
std::int64_t step_pe_tower(const ConfigFields& v, const ConfigFields& top,
                           std::int64_t text_hidden) {
  if (!v.boolean_or("use_rope2d", true)) {
    v.fail("use_rope2d", "false", "vLLM 0.33's step_vl.py PerceptionEncoder requires true");
  }
  const std::int64_t w = bounded(v, "width", kMaxWidth);
  const std::int64_t layers = bounded(v, "layers", kMaxLayers);
  const std::int64_t heads = bounded(v, "heads", w);
  if (w % heads != 0) {
    v.fail("heads", std::to_string(heads),
           "must divide width (" + std::to_string(w) + "): the fused qkv splits it per head");
  }
  const std::int64_t patch = bounded(v, "patch_size", kMaxSide);
  const std::int64_t side = bounded(v, "image_size", kMaxSide) / patch;
  const double ratio = v.number_or("mlp_ratio", 0.0);
  // step_vl.py: hidden_dim = int(d_model * mlp_ratio), the same double product truncated.
  const double product = static_cast<double>(w) * ratio;
  const std::int64_t inter = bounded(v, "mlp_ratio",
                                     product >= 1.0 && product <= static_cast<double>(kMaxWidth)
                                         ? static_cast<std::int64_t>(product)
                                         : 0,
                                     kMaxWidth);
  const bool cls = v.has("use_cls_token") ? v.boolean_or("use_cls_token", false)
                                          : v.boolean_or("ues_cls_token", false);
  const bool scales = v.value("ls_init_value") != nullptr;
  const std::int64_t block = 4 * w * w + 2 * w * inter + 9 * w + inter + (scales ? 2 * w : 0);
  std::int64_t embeddings = 3 * patch * patch * w + (cls ? w : 0);
  if (v.boolean_or("use_abs_posemb", true)) embeddings += ((cls ? 1 : 0) + side * side) * w;
  if (v.boolean_or("use_ln_pre", true)) embeddings += 2 * w;
  if (v.boolean_or("use_ln_post", false)) embeddings += 2 * w;
  const std::int64_t downsamplers = (2 * w * w * 9 + 2 * w) + (4 * w * 2 * w * 9 + 4 * w);
  const std::int64_t projector =
      4 * w * text_hidden + (top.boolean_or("projector_bias", false) ? text_hidden : 0);
  return embeddings + layers * block + downsamplers + projector;
}

std::int64_t vision_parameters(const ConfigFields& v, const ConfigFields& top, Vision style,
                               const std::string& model_type, bool clip, std::int64_t text_hidden) {
  switch (style) {
    case Vision::Qwen2Vl:
    case Vision::Qwen25Vl:
    case Vision::Qwen3Vl:
    case Vision::Qwen3Omni:
      return qwen_vl_tower(v, style, text_hidden);
    case Vision::Pixtral:
      return pixtral_tower(v, top, text_hidden);
    case Vision::Gemma4:
      return gemma4_tower(v, text_hidden);
    case Vision::Gemma3n:
      return gemma3n_vision(v, text_hidden);
    case Vision::Llava:
      return llava_tower(v, top, model_type, clip, text_hidden);
    case Vision::PaliGemma: {
      // vLLM paligemma.py: every SigLIP layer and the post-LayerNorm, then a biased linear to
      // projection_dim (PaliGemmaConfig writes its projection_dim, default 2048, into the
      // vision config).
      const std::int64_t layers = bounded(v, "num_hidden_layers", kMaxLayers);
      const std::int64_t projection =
          bounded(top, "projection_dim", top.integer_or("projection_dim", 2048), kMaxWidth);
      const std::int64_t h = v.integer("hidden_size");
      return clip_siglip_encoder(v, false, layers, true) + h * projection + projection;
    }
    case Vision::Idefics3: {
      // vLLM idefics3.py: the SigLIP-style encoder with its post-LayerNorm, then the connector's
      // pixel shuffle (scale_factor^2 patches per token) into an unbiased linear.
      const std::int64_t layers = bounded(v, "num_hidden_layers", kMaxLayers);
      const std::int64_t scale =
          bounded(top, "scale_factor", top.integer_or("scale_factor", 2), 64);
      const std::int64_t h = v.integer("hidden_size");
      return clip_siglip_encoder(v, false, layers, true) + h * scale * scale * text_hidden;
    }
    case Vision::InternVit:
      return intern_vit_tower(v, top, text_hidden);
    case Vision::InternVlHf:
      return internvl_hf_tower(v, top, text_hidden);
    case Vision::Lfm2Vl:
      return lfm2_vl_tower(v, top, text_hidden);
    case Vision::Glm4v:
      return glm4v_tower(v, false, 0);
    case Vision::KimiK25:
      return kimi_k25_tower(v, text_hidden);
    case Vision::MiniCpmV:
      return minicpmv_tower(v, top, text_hidden);
    case Vision::MiniCpmV46:
      return minicpmv4_6_tower(v, top, text_hidden);
    case Vision::Exaone45:
      return exaone4_5_tower(v, text_hidden);
    case Vision::DotsOcr:
      return dots_ocr_tower(v);
    case Vision::Gemma4Unified:
      return gemma4_unified_vision(v, text_hidden);
    case Vision::Keye:
      return keye_tower(v, top, true, text_hidden);
    case Vision::PaddleOcrVl:
      return keye_tower(v, top, false, text_hidden);
    case Vision::Cohere2Vision:
      return cohere2_vision_tower(v, top, text_hidden);
    case Vision::StepPe:
      return step_pe_tower(v, top, text_hidden);
    case Vision::DeepseekOcr:  // reads projector_config, not vision_config: add_deepseek_ocr
    case Vision::Ovis25:       // reads vit_config and visual_vocab_size: add_ovis2_5
    case Vision::OpenVla:      // fixed timm towers, no vision_config: openvla_tower
    case Vision::Phi3V:        // reads img_processor and embd_layer: add_phi3v
    case Vision::Blip2:        // needs the Q-Former's config too: blip2_tower, from add_vision
    case Vision::Radio:        // reads vision_config.args and the wrapper's keys: add_radio
    case Vision::Siglip:
    case Vision::Vit:
    case Vision::None:
      break;
  }
  // Gemma-3 projector: mm_input_projection [vision, text] and its soft-embedding norm.
  const std::int64_t h = v.integer("hidden_size");
  return vit_encoder(v) + h * text_hidden + h;
}

// What vLLM's startup profile of the encoder needs (TowerSpec), where config.json and the
// processor's defaults fix it. Families not derived here get no facts: a plan then warns that
// the encoder-profile term is missing, and refuses an explicit image limit.
void vision_profile_facts(const ConfigFields& v, const ConfigFields& top, Vision style,
                          const std::string& model_type, json& out) {
  // OpenCUA (opencua.py) builds its Qwen2VLImageProcessor from the checkpoint's
  // preprocessor_config.json, whose max_pixels config.json does not carry, and takes images
  // only: no facts.
  if (model_type == "opencua") return;
  std::int64_t image_tokens = 0;
  std::int64_t encoder_tokens = 0;
  std::int64_t pixels = 0;
  std::int64_t width = 0;
  std::int64_t inter = 0;
  bool gated = false;
  const std::int64_t channels =
      bounded(v, "num_channels", v.integer_or("num_channels", v.integer_or("in_chans", 3)), 16);
  if (model_type == "gemma3" || model_type == "llama4" || style == Vision::PaliGemma) {
    const std::int64_t image = bounded(v, "image_size", kMaxSide);
    const std::int64_t side = image / bounded(v, "patch_size", image);
    width = bounded(v, "hidden_size", kMaxWidth);
    inter = bounded(v, "intermediate_size", kMaxWidth);
    if (model_type == "gemma3") {
      // One 896 x 896 crop (pan-and-scan off by default) -> mm_tokens_per_image soft tokens
      // (vLLM gemma3_mm.py); SigLIP runs every patch.
      image_tokens = bounded(top, "mm_tokens_per_image", top.integer_or("mm_tokens_per_image", 256),
                             side * side);
      encoder_tokens = side * side;
      pixels = channels * image * image;
    } else if (style == Vision::PaliGemma) {
      // One image_size x image_size image, each SigLIP patch one LM embedding (vLLM
      // paligemma.py through SiglipEncoderInfo.get_num_image_tokens).
      image_tokens = side * side;
      encoder_tokens = side * side;
      pixels = channels * image * image;
    } else {
      // The largest image is 16 tiles tall (Llama4ImageProcessor max_patches 16, vLLM
      // mllama4.py get_image_size_with_most_features) plus the global tile: 17 tiles, each
      // (image/patch)^2 patches + CLS in the encoder and x pixel_shuffle_ratio^2 LM embeddings.
      constexpr std::int64_t kTiles = 16 + 1;
      const double ratio = v.number_or("pixel_shuffle_ratio", 0.5);
      if (!(ratio > 0.0 && ratio <= 1.0)) {
        v.fail("pixel_shuffle_ratio", std::to_string(ratio), "expected (0, 1]");
      }
      image_tokens =
          kTiles * static_cast<std::int64_t>(static_cast<double>(side * side) * ratio * ratio);
      encoder_tokens = kTiles * (side * side + 1);
      pixels = kTiles * channels * image * image;
    }
  } else if (style == Vision::Qwen2Vl || style == Vision::Qwen25Vl || style == Vision::Qwen3Vl) {
    // The processor's largest image: Qwen2-VL/2.5-VL max_pixels 12845056 (3584 x 3584);
    // Qwen3-VL and Qwen3.5 size.longest_edge 16777216 (4096 x 4096) in their
    // preprocessor_config.json. One patch per patch_size^2 pixels, spatial_merge_size^2 patches
    // per LM embedding (vLLM qwen2_vl.py get_image_size_with_most_features, which qwen3_vl.py
    // and qwen3_5.py inherit). Qwen2/2.5-VL video grows with max_model_len; Qwen3-VL's
    // two-frame dummy video (12288 embeddings) is below its image: not modelled either way.
    const std::int64_t max_pixels = style == Vision::Qwen3Vl ? 16777216 : 12845056;
    const std::int64_t patch = bounded(v, "patch_size", 4096);
    const std::int64_t merge =
        bounded(v, "spatial_merge_size", v.integer_or("spatial_merge_size", 2), 64);
    const std::int64_t temporal =
        bounded(v, "temporal_patch_size", v.integer_or("temporal_patch_size", 2), 64);
    image_tokens = max_pixels / (patch * patch * merge * merge);
    if (image_tokens == 0) {
      v.fail("patch_size", std::to_string(patch), "merged patch exceeds the largest image");
    }
    encoder_tokens = image_tokens * merge * merge;
    pixels = encoder_tokens * channels * temporal * patch * patch;
    if (style == Vision::Qwen2Vl) {
      width = bounded(v, "embed_dim", kMaxWidth);
      inter = width * bounded(v, "mlp_ratio", v.integer_or("mlp_ratio", 4), 64);
    } else {
      width = bounded(v, "hidden_size", kMaxWidth);
      inter = bounded(v, "intermediate_size", kMaxWidth);
      gated = style == Vision::Qwen25Vl;  // Qwen3-VL: linear_fc1, GELU, linear_fc2
    }
    // Qwen3-VL and Qwen3.5 build Qwen2_5_VisionAttention (vLLM qwen3_vl.py Qwen3_VisionBlock).
    out["encoder_attention"] = style == Vision::Qwen2Vl ? "qwen2_vl" : "qwen2_5_vl";
    out["unmodelled_modalities"] = {"video"};
  } else {
    // Qwen3-Omni's thinker also takes video through its vision tower (no profile facts either).
    if (style == Vision::Qwen3Omni) out["unmodelled_modalities"] = {"video"};
    return;
  }
  out["image_tokens_per_item"] = image_tokens;
  out["encoder_tokens_per_item"] = encoder_tokens;
  out["pixel_values_per_item"] = pixels;
  out["encoder_hidden_size"] = width;
  out["encoder_intermediate_size"] = inter;
  out["encoder_mlp"] = gated ? "gated" : "plain";
}

// --- audio encoders ------------------------------------------------------------------------

// A Whisper-style encoder without its position table: conv1, conv2, the layers (Whisper's
// attention, k unbiased) and the final LayerNorm.
std::int64_t whisper_convs_and_layers(const ConfigFields& a) {
  const std::int64_t d = bounded(a, "d_model", kMaxWidth);
  const std::int64_t ffn = bounded(a, "encoder_ffn_dim", kMaxWidth);
  const std::int64_t layers = bounded(a, "encoder_layers", kMaxLayers);
  const std::int64_t mels = bounded(a, "num_mel_bins", 1 << 12);
  const std::int64_t convs = d * mels * 3 + d + d * d * 3 + d;
  const std::int64_t attention = 4 * d * d + 3 * d;  // q, k, v, out; k unbiased
  const std::int64_t mlp = 2 * d * ffn + ffn + d;
  const std::int64_t per_layer = attention + mlp + 4 * d;  // two LayerNorms, weight and bias
  return convs + layers * per_layer + 2 * d;
}

// A Whisper-style audio encoder as transformers' Qwen2AudioEncoder builds it (vLLM 0.33's
// qwen2_audio.py loads that class): conv1 [d, num_mel_bins, 3] and conv2 [d, d, 3] with biases,
// a max_source_positions x d position table (an nn.Embedding, stored in the checkpoint), per
// layer q_proj, v_proj and out_proj with biases and k_proj without (Whisper's attention), fc1
// [ffn, d] and fc2 [d, ffn] with biases and two LayerNorms, then a final LayerNorm; the average
// pooling has no weights.
std::int64_t whisper_style_encoder(const ConfigFields& a) {
  const std::int64_t positions = bounded(a, "max_source_positions", 1 << 20);
  return whisper_convs_and_layers(a) + positions * bounded(a, "d_model", kMaxWidth);
}

// Qwen2.5-Omni's audio encoder (transformers' Qwen2_5OmniAudioEncoder, which vLLM 0.33's
// qwen2_5_omni_thinker.py loads): Whisper's convs and layers with sinusoidal positions (a
// buffer, not a weight), an audio_bos_eos_token embedding [2, output_dim], ln_post (the final
// LayerNorm) and a biased proj [output_dim, d_model] to the text width; no projector.
std::int64_t qwen25_omni_audio_encoder(const ConfigFields& a) {
  const std::int64_t d = bounded(a, "d_model", kMaxWidth);
  const std::int64_t out = bounded(a, "output_dim", kMaxWidth);
  return whisper_convs_and_layers(a) + 2 * out + out * d + out;
}

// The Qwen3-Omni audio encoder as vLLM 0.33 builds it (qwen3_omni_moe_thinker.py
// Qwen3OmniMoeAudioEncoder, which qwen3_asr.py loads): three biased 3 x 3 Conv2d of
// downsample_hidden_size channels (the first over one channel), each halving the mel axis, an
// unbiased conv_out from channels x the remaining mel bins to d_model, per layer a biased fused
// qkv and out_proj, biased fc1 / fc2 and two LayerNorms, then ln_post and the biased proj1
// [d, d] and proj2 [output_dim, d]; the sinusoidal positions are a buffer, not a weight.
std::int64_t qwen3_omni_audio_encoder(const ConfigFields& a) {
  const std::int64_t d = bounded(a, "d_model", kMaxWidth);
  const std::int64_t ffn = bounded(a, "encoder_ffn_dim", kMaxWidth);
  const std::int64_t layers = bounded(a, "encoder_layers", kMaxLayers);
  const std::int64_t mels = bounded(a, "num_mel_bins", 1 << 12);
  const std::int64_t channels = bounded(a, "downsample_hidden_size", kMaxWidth);
  const std::int64_t out = bounded(a, "output_dim", kMaxWidth);
  const std::int64_t remaining = (((mels + 1) / 2 + 1) / 2 + 1) / 2;
  const std::int64_t convs = channels * 9 + channels + 2 * (channels * channels * 9 + channels);
  // Fused biased qkv and out, the MLP, two LayerNorms (weight and bias).
  const std::int64_t per_layer = 4 * d * d + 4 * d + 2 * d * ffn + ffn + d + 4 * d;
  return convs + channels * remaining * d + layers * per_layer + 2 * d + d * d + d + out * d + out;
}

// One entry of Gemma3nAudioConfig's two-entry sscp_* lists, which a config.json writes out in
// full: sscp_conv_channel_size [c0, c1]; sscp_conv_kernel_size / sscp_conv_stride_size
// [[time, frequency], [time, frequency]] (axis 0 or 1; -1 for a plain entry).
std::int64_t sscp_entry(const ConfigFields& a, const char* key, std::size_t index, int axis) {
  if (!a.has(key)) {
    a.fail(key, "missing",
           "the subsampling convolutions are sized from it; write it into config.json");
  }
  const json& list = a.at(key);
  const json* value = nullptr;
  if (list.is_array() && list.size() == 2) {
    const json& entry = list.at(index);
    if (axis < 0) {
      value = &entry;
    } else if (entry.is_array() && entry.size() == 2) {
      value = &entry.at(static_cast<std::size_t>(axis));
    }
  }
  if (value == nullptr || !value->is_number_integer() || value->get<std::int64_t>() <= 0 ||
      value->get<std::int64_t>() > kMaxWidth) {
    a.fail(key, list.dump().substr(0, 80),
           axis < 0 ? "expected two positive integers" : "expected two [time, frequency] pairs");
  }
  return value->get<std::int64_t>();
}

// Gemma-3n's USM Conformer (transformers' Gemma3nAudioEncoder, which vLLM 0.33's gemma3n_mm.py
// builds with AutoModel): two bias-free Conv2d of sscp_conv_channel_size over 1 input channel,
// each with a CumulativeGroupNorm weight per channel, frequency padded by 1 a side; an unbiased
// input_proj_linear [hidden, channels x frequencies]. A block: two feed-forwards (RMSNorm,
// [4h, h], [h, 4h], RMSNorm), attention (RMSNorm, q/k/v and the relative-position pos_proj
// [h, h], per_dim_scale [h / heads], post [h, h], RMSNorm), a light conv (RMSNorm, linear_start
// [2h, h], depthwise conv [h, kernel], RMSNorm, linear_end [h, h]) and a final RMSNorm.
std::int64_t gemma3n_audio_encoder(const ConfigFields& a) {
  const std::int64_t h = bounded(a, "hidden_size", kMaxWidth);
  const std::int64_t heads = bounded(a, "conf_num_attention_heads", kMaxLayers);
  const std::int64_t layers = bounded(a, "conf_num_hidden_layers", kMaxLayers);
  const std::int64_t kernel = bounded(a, "conf_conv_kernel_size", kMaxLayers);
  std::int64_t frequencies = bounded(a, "input_feat_size", kMaxWidth);
  std::int64_t convs = 0;
  std::int64_t in = 1;
  for (std::size_t i = 0; i < 2; ++i) {
    const std::int64_t out = sscp_entry(a, "sscp_conv_channel_size", i, -1);
    const std::int64_t kernel_t = sscp_entry(a, "sscp_conv_kernel_size", i, 0);
    const std::int64_t kernel_f = sscp_entry(a, "sscp_conv_kernel_size", i, 1);
    const std::int64_t stride_f = sscp_entry(a, "sscp_conv_stride_size", i, 1);
    (void)sscp_entry(a, "sscp_conv_stride_size", i, 0);
    convs += out * in * kernel_t * kernel_f + out;
    frequencies = (frequencies + 2 - kernel_f) / stride_f + 1;
    if (frequencies <= 0) a.fail("sscp_conv_kernel_size", "too wide", "no frequencies remain");
    in = out;
  }
  const std::int64_t feed_forward = 2 * h + 8 * h * h;  // two RMSNorms, [4h, h] and [h, 4h]
  const std::int64_t attention = 2 * h + 5 * h * h + h / heads;
  const std::int64_t light_conv = 2 * h + 2 * h * h + h * kernel + h * h;
  const std::int64_t block = 2 * feed_forward + attention + light_conv + h;
  return convs + in * frequencies * h + layers * block;
}

// MOSS-Transcribe-Diarize's VQ adaptor over audio_merge_size merged encoder frames
// (moss_transcribe_diarize.py MossTranscribeDiarizeVQAdaptor): a biased Linear [text,
// adaptor_input_dim], a biased Linear [text, text] and a LayerNorm (weight and bias).
// adaptor_input_dim, read from the wrapper's keys, is d_model x audio_merge_size where absent,
// as vLLM's MossTranscribeDiarizeConfig sets it.
std::int64_t moss_vq_adaptor(const ConfigFields& a, const ConfigFields& outer,
                             std::int64_t text_hidden) {
  const std::int64_t merge =
      bounded(outer, "audio_merge_size", outer.integer_or("audio_merge_size", 4), kMaxLayers);
  const std::int64_t input = outer.has("adaptor_input_dim")
                                 ? bounded(outer, "adaptor_input_dim", kMaxWidth)
                                 : bounded(a, "d_model", kMaxWidth) * merge;
  return input * text_hidden + text_hidden + text_hidden * text_hidden + text_hidden +
         2 * text_hidden;
}

// Nemotron Omni's sound encoder and projection as vLLM 0.33 builds them (parakeet.py
// ProjectedParakeet over sound_config, a remote-code SoundConfig whose defaults are not read, so
// every size is required): transformers' ParakeetEncoder with attention_bias forced false
// (ParakeetConfig.from_hf_config). Subsampling: a biased k x k Conv2d from one channel, then
// log2(subsampling_factor) - 1 pairs of a biased depthwise k x k and a biased pointwise 1 x 1
// Conv2d, and a biased linear from channels x (num_mel_bins / stride^log2(factor)) to d. A
// Conformer block: two feed-forwards [d -> ffn -> d], q/k/v/o and relative_k_proj [d, d] with
// bias_u and bias_v [heads, d / heads], a convolution module (pointwise [2d, d], depthwise
// [d, kernel], biased with convolution_bias; a BatchNorm's weight and bias; pointwise [d, d]) and
// five LayerNorms; the relative positions are a buffer. The projection: an RMSNorm [d], linear1
// [d -> projection_hidden_size] and linear2 [-> text width], biased with projection_bias.
std::int64_t parakeet_parameters(const ConfigFields& a, std::int64_t text_hidden) {
  // ParakeetConfig.from_hf_config passes these beside **sound_config.to_dict(): a duplicate
  // stops vLLM (TypeError).
  for (const char* key :
       {"attention_bias", "scale_input", "llm_hidden_size", "max_position_embeddings"}) {
    if (a.has(key)) {
      a.fail(key, a.at(key).dump().substr(0, 40),
             "parakeet.py passes ParakeetConfig this keyword itself: vLLM 0.33 stops on the "
             "duplicate");
    }
  }
  const std::int64_t d = required_count(a, "hidden_size", kMaxWidth);
  const std::int64_t heads = required_count(a, "num_attention_heads", kMaxLayers);
  const std::int64_t layers = required_count(a, "num_hidden_layers", kMaxLayers);
  const std::int64_t ffn = required_count(a, "intermediate_size", kMaxWidth);
  const std::int64_t kernel = required_count(a, "conv_kernel_size", kMaxLayers);
  const std::int64_t channels = required_count(a, "subsampling_conv_channels", kMaxWidth);
  const std::int64_t k = required_count(a, "subsampling_conv_kernel_size", kMaxLayers);
  const std::int64_t factor = required_count(a, "subsampling_factor", kMaxLayers);
  const std::int64_t stride = required_count(a, "subsampling_conv_stride", kMaxLayers);
  const std::int64_t mels = required_count(a, "num_mel_bins", 1 << 12);
  const std::int64_t projection = required_count(a, "projection_hidden_size", kMaxWidth);
  const bool conv_bias = required_flag(a, "convolution_bias");
  const bool projection_bias = required_flag(a, "projection_bias");
  if (d % heads != 0) {
    a.fail("num_attention_heads", std::to_string(heads),
           "must divide hidden_size (" + std::to_string(d) + "): the head width is d / heads");
  }
  std::int64_t convs = 0;  // int(math.log2(subsampling_factor)) stride-2 stages
  while ((std::int64_t{2} << convs) <= factor) ++convs;
  if (convs < 1) a.fail("subsampling_factor", std::to_string(factor), "expected at least 2");
  std::int64_t remaining = mels;
  for (std::int64_t i = 0; i < convs; ++i) remaining /= stride;
  if (remaining < 1) a.fail("num_mel_bins", std::to_string(mels), "no mel bins remain");
  const std::int64_t first = channels * k * k + channels;
  const std::int64_t pair = channels * k * k + channels + channels * channels + channels;
  const std::int64_t subsampling = first + (convs - 1) * pair + channels * remaining * d + d;
  const std::int64_t feed_forward = 2 * d * ffn;
  const std::int64_t attention = 5 * d * d + 2 * d;
  const std::int64_t convolution = 3 * d * d + d * kernel + 2 * d + (conv_bias ? 2 * d + d + d : 0);
  const std::int64_t block = 2 * feed_forward + attention + convolution + 10 * d;  // 5 LayerNorms
  const std::int64_t head = d + d * projection + projection * text_hidden +
                            (projection_bias ? projection + text_hidden : 0);
  return subsampling + layers * block + head;
}

// Granite Speech's Conformer CTC encoder as vLLM 0.33 builds it (granite_speech.py
// GraniteSpeechCTCEncoder, which granite_speech_plus.py subclasses with the same modules): a
// biased input_linear [h, input_dim]; per block two feed-forwards (LayerNorm, biased up
// [mult h, h] and down [h, mult h]), attention (LayerNorm, unbiased to_q [inner, h] and to_kv
// [2 inner, h], a biased to_out [h, inner], Shaw's relative-position table
// [2 max_pos_emb + 1, dim_head]; inner = num_heads x dim_head), a convolution module (LayerNorm,
// biased pointwise up_conv [2 e h, h], an unbiased depthwise conv [e h, kernel], BatchNorm weight
// and bias over e h, biased pointwise down_conv [h, e h]; e = conv_expansion_factor) and a
// post-LayerNorm; then the biased self-conditioning pair out [output_dim, h] and out_mid
// [h, output_dim]. BatchNorm's running mean and variance are buffers, not parameters (2 e h
// values a block). dim_head absent and without a class default (the Plus encoder config) is
// hidden_dim / num_heads, as that class derives it.
std::int64_t granite_speech_encoder(const ConfigFields& e) {
  const std::int64_t h = bounded(e, "hidden_dim", kMaxWidth);
  const std::int64_t heads = bounded(e, "num_heads", kMaxLayers);
  const std::int64_t dim_head =
      e.value("dim_head") != nullptr ? bounded(e, "dim_head", kMaxWidth) : h / heads;
  const std::int64_t mult = bounded(e, "feedforward_mult", kMaxLayers);
  const std::int64_t out = bounded(e, "output_dim", kMaxWidth);
  const std::int64_t max_pos = bounded(e, "max_pos_emb", kMaxWidth);
  const std::int64_t context = bounded(e, "context_size", kMaxWidth);
  if (context > max_pos) {
    e.fail("context_size", std::to_string(context),
           "vLLM requires 0 < context_size <= max_pos_emb (" + std::to_string(max_pos) + ")");
  }
  const std::int64_t kernel = bounded(e, "conv_kernel_size", kMaxLayers);
  const std::int64_t conv = bounded(e, "conv_expansion_factor", kMaxLayers) * h;
  const std::int64_t inner = heads * dim_head;
  const std::int64_t feed_forward = 2 * h + (h * mult * h + mult * h) + (mult * h * h + h);
  const std::int64_t attention =
      2 * h + 3 * h * inner + (inner * h + h) + (2 * max_pos + 1) * dim_head;
  const std::int64_t conv_module =
      2 * h + (h * 2 * conv + 2 * conv) + conv * kernel + 2 * conv + (conv * h + h);
  const std::int64_t block = 2 * feed_forward + attention + conv_module + 2 * h;
  const std::int64_t input = bounded(e, "input_dim", kMaxWidth) * h + h;
  return input + bounded(e, "num_layers", kMaxLayers) * block + (h * out + out) + (out * h + h);
}

// Granite Speech's projector (granite_speech.py GraniteSpeechEncoderProjector): window_size /
// downsample_rate learned queries of the Q-Former width, the Q-Former over projector_config
// (qformer_parameters, its cross-attention reading encoder_hidden_size) and a biased linear to the
// text width. `g`: the top-level config with GraniteSpeechConfig's defaults.
std::int64_t granite_speech_projector(const ConfigFields& q, const ConfigFields& g,
                                      std::int64_t text_hidden) {
  const std::int64_t window = bounded(g, "window_size", kMaxWidth);
  const std::int64_t rate = bounded(g, "downsample_rate", kMaxWidth);
  if (window < rate) {
    g.fail("window_size", std::to_string(window),
           "window_size / downsample_rate (" + std::to_string(rate) +
               ") learned queries: at least one is needed");
  }
  const std::int64_t qh = bounded(q, "hidden_size", kMaxWidth);
  return (window / rate) * qh +
         qformer_parameters(q, bounded(q, "encoder_hidden_size", kMaxWidth)) + qh * text_hidden +
         text_hidden;
}

// The transformers class an audio_config is built as (its defaults fill omitted keys) and the
// model_type it carries.
struct AudioConfigClass {
  const char* config_class;
  const char* model_type;
};
AudioConfigClass audio_config_class(Audio audio) {
  if (audio == Audio::Qwen3Asr) return {"Qwen3ASRAudioEncoderConfig", "qwen3_asr_audio_encoder"};
  if (audio == Audio::Qwen3Omni) {
    return {"Qwen3OmniMoeAudioEncoderConfig", "qwen3_omni_moe_audio_encoder"};
  }
  if (audio == Audio::Gemma3n) return {"Gemma3nAudioConfig", "gemma3n_audio"};
  if (audio == Audio::MossTranscribeDiarize) return {"WhisperConfig", "whisper"};
  if (audio == Audio::Parakeet) return {"SoundConfig", "parakeet"};
  if (audio == Audio::Qwen25Omni) {
    return {"Qwen2_5OmniAudioEncoderConfig", "qwen2_5_omni_audio_encoder"};
  }
  return {"Qwen2AudioEncoderConfig", "qwen2_audio_encoder"};
}

// The encoder and projector parameters of a wrapper's audio tower, as vLLM 0.33 builds them.
std::int64_t audio_parameters(const ConfigFields& a, const ConfigFields& outer, Audio audio,
                              std::int64_t text_hidden) {
  switch (audio) {
    case Audio::Qwen2Audio:
      // qwen2_audio.py Qwen2AudioMultiModalProjector: a biased Linear [text, d_model].
      return whisper_style_encoder(a) + bounded(a, "d_model", kMaxWidth) * text_hidden +
             text_hidden;
    case Audio::Qwen3Asr:
    case Audio::Qwen3Omni:
      // No projector: proj2 maps to output_dim, the text width.
      return qwen3_omni_audio_encoder(a);
    case Audio::Qwen25Omni:
      return qwen25_omni_audio_encoder(a);
    case Audio::Gemma3n:
      return gemma3n_audio_encoder(a) + gemma3n_embedder(a, text_hidden);
    case Audio::MossTranscribeDiarize:
      // vLLM's WhisperEncoder (whisper.py) holds the same weights as Qwen2AudioEncoder: a
      // max_source_positions x d_model position table, k_proj unbiased in the checkpoint.
      return whisper_style_encoder(a) + moss_vq_adaptor(a, outer, text_hidden);
    case Audio::Parakeet:
      return parakeet_parameters(a, text_hidden);
    case Audio::GraniteSpeech:  // no audio_config: add_granite_speech counts it
    case Audio::None:
      break;
  }
  return 0;
}

// --- shared decoder translation ------------------------------------------------------------

json sliding_pattern(std::int64_t period) {
  json kinds = json::array();
  for (std::int64_t i = 0; i + 1 < period; ++i) kinds.push_back("sliding_attention");
  kinds.push_back("full_attention");
  return kinds;
}

void translate_layers(const ConfigFields& f, const Row& row, json& doc) {
  const std::int64_t layers = doc["num_hidden_layers"].get<std::int64_t>();
  const std::int64_t window = f.integer_or("sliding_window", 0);
  const bool qwen_enabled = f.boolean_or("use_sliding_window", false);
  if (f.has("layer_types")) {
    json types = f.at("layer_types");
    if (!types.is_array()) f.fail("layer_types", types.dump().substr(0, 80), "expected a list");
    const std::int64_t mtp =
        row.sliding == Sliding::MtpPadded ? f.integer_or("num_nextn_predict_layers", 0) : 0;
    if (mtp > 0 && static_cast<std::int64_t>(types.size()) == layers + mtp) {
      types.erase(types.begin() + layers, types.end());  // the MTP layers' entries
    }
    if (static_cast<std::int64_t>(types.size()) != layers) {
      f.fail("layer_types", std::to_string(types.size()) + " entries",
             "must have num_hidden_layers entries");
    }
    // "attention" and "mamba": Granite-4 hybrids (a mamba layer needs the row's mamba block);
    // "conv": LFM2's ShortConv layers (its rule maps them).
    static const std::set<std::string> kKnown = {"full_attention",
                                                 "sliding_attention",
                                                 "linear_attention",
                                                 "chunked_attention",
                                                 "attention",
                                                 "mamba",
                                                 "conv"};
    bool any_sliding = false;
    for (const auto& t : types) {
      if (!t.is_string() || kKnown.count(t.get<std::string>()) == 0) {
        f.fail("layer_types", t.dump(),
               "unknown layer type (full_attention, sliding_attention, linear_attention, "
               "chunked_attention, attention, mamba, conv)");
      }
      any_sliding |= t == "sliding_attention";
    }
    // Qwen configs list sliding layers but vLLM slides them only with use_sliding_window.
    if (row.sliding == Sliding::QwenGated && !qwen_enabled) {
      json full = json::array();
      for (const auto& t : types) full.push_back(t == "sliding_attention" ? "full_attention" : t);
      doc["layer_types"] = full;
    } else {
      doc["layer_types"] = types;
      if (any_sliding) {
        if (window <= 0) f.fail("sliding_window", "missing", "sliding_attention layers need it");
        doc["sliding_window"] = window;
      }
    }
    return;
  }
  const std::int64_t max_positions = doc["max_position_embeddings"].get<std::int64_t>();
  switch (row.sliding) {
    case Sliding::Never:
    case Sliding::MtpPadded:
      return;
    case Sliding::Alternate:
      doc["layer_pattern"] = {"sliding_attention", "full_attention"};
      doc["sliding_window"] = f.integer("sliding_window");
      return;
    case Sliding::PatternKey: {
      const std::int64_t period =
          f.integer_or("sliding_window_pattern", f.integer_or("_sliding_window_pattern", 6));
      if (period <= 0) f.fail("sliding_window_pattern", std::to_string(period), "must be positive");
      doc["layer_pattern"] = sliding_pattern(period);
      doc["sliding_window"] = f.integer("sliding_window");
      return;
    }
    case Sliding::ExaonePattern: {
      if (window <= 0) return;
      json kinds = json::array();
      if (f.has("sliding_window_pattern") && f.at("sliding_window_pattern").is_string()) {
        for (char ch : f.at("sliding_window_pattern").get<std::string>()) {
          if (ch != 'L' && ch != 'G')
            f.fail("sliding_window_pattern", std::string(1, ch), "expected L or G letters");
          kinds.push_back(ch == 'L' ? "sliding_attention" : "full_attention");
        }
        if (kinds.empty()) f.fail("sliding_window_pattern", "\"\"", "must not be empty");
      } else {
        kinds = sliding_pattern(f.integer_or("sliding_window_pattern", 4));
      }
      doc["layer_pattern"] = kinds;
      doc["sliding_window"] = window;
      return;
    }
    case Sliding::QwenGated:
      if (!qwen_enabled) return;
      break;
    case Sliding::IfSet:
      break;
  }
  if (window > 0 && window < max_positions) {
    doc["sliding_window"] = window;
    doc["layer_pattern"] = {"sliding_attention"};
  }
}

json dtype_name(const ConfigFields& f) {
  // Newer transformers write "dtype"; older "torch_dtype".
  std::string dtype = f.string_or("torch_dtype", f.string_or("dtype", "bfloat16"));
  if (dtype.rfind("torch.", 0) == 0) dtype = dtype.substr(6);
  return dtype;
}

// num_attention_heads, num_key_value_heads and head_dim (else hidden_size / heads); returns
// head_dim.
std::int64_t attention_heads(const ConfigFields& f, json& doc) {
  const std::int64_t hidden = doc["hidden_size"].get<std::int64_t>();
  const std::int64_t heads = f.integer("num_attention_heads");
  if (heads <= 0) f.fail("num_attention_heads", "0", "must be positive");
  doc["num_attention_heads"] = heads;
  doc["num_key_value_heads"] = f.integer_or("num_key_value_heads", heads);
  std::int64_t head_dim = f.integer_or("head_dim", f.integer_or("attention_head_dim", 0));
  if (head_dim == 0) {
    if (hidden % heads != 0)
      f.fail("head_dim", "missing", "hidden_size is not a multiple of num_attention_heads");
    head_dim = hidden / heads;
  }
  doc["head_dim"] = head_dim;
  return head_dim;
}

// vLLM 0.33's max_model_len for a config (ModelArchConfigConvertorBase.derive_max_model_len_and_key
// and _get_and_verify_max_len): the smallest context key the config names, model_max_length
// overriding; 0 when it names none.
std::int64_t derived_max_model_len(const ConfigFields& f) {
  std::int64_t derived = 0;
  for (const char* key :
       {"max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
        "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len"}) {
    if (!f.has(key)) continue;
    const std::int64_t value = f.integer(key);
    derived = derived == 0 ? value : std::min(derived, value);
  }
  if (f.has("model_max_length") && f.integer("model_max_length") > 0) {
    derived = f.integer("model_max_length");
  }
  return std::max<std::int64_t>(derived, 0);
}

// The rotary fields: rotary_dim from partial_rotary_factor, and the cos/sin cache of linear rope
// scaling.
void rotary_fields(const ConfigFields& f, const std::string& file, const std::string& prefix,
                   std::int64_t head_dim, json& doc) {
  double partial_rotary = f.number_or("partial_rotary_factor", 1.0);
  if (f.has("rope_parameters") && f.at("rope_parameters").is_object()) {
    const ConfigFields rope(f.at("rope_parameters"), file, prefix + "rope_parameters.");
    partial_rotary = rope.number_or("partial_rotary_factor", partial_rotary);
  }
  if (partial_rotary <= 0 || partial_rotary > 1) {
    f.fail("partial_rotary_factor", std::to_string(partial_rotary), "expected (0, 1]");
  }
  if (partial_rotary < 1.0)
    doc["rotary_dim"] = static_cast<std::int64_t>(static_cast<double>(head_dim) * partial_rotary);
  // vLLM's LinearScalingRotaryEmbedding caches max_position_embeddings x factor positions.
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (!f.has(key) || !f.at(key).is_object()) continue;
    const ConfigFields rope(f.at(key), file, prefix + key + ".");
    if (rope.string_or("rope_type", rope.string_or("type", "")) != "linear") continue;
    const double factor = rope.number_or("factor", 1.0);
    if (!(factor >= 1.0 && factor <= 1024.0)) {
      rope.fail("factor", std::to_string(factor), "expected [1, 1024] for linear rope scaling");
    }
    doc["rotary_cache_positions"] = static_cast<std::int64_t>(std::ceil(
        static_cast<double>(doc["max_position_embeddings"].get<std::int64_t>()) * factor));
  }
}

json decoder_document(const json& text, const ConfigFields& top, const Row& row,
                      const std::string& model_type, const std::string& prefix,
                      const std::string& file) {
  json renamed = text;
  for (const auto& [key, alias] : row.renames) {
    if (!renamed.contains(key) && renamed.contains(alias)) renamed[key] = renamed[alias];
  }
  const auto found = table().class_defaults.find(model_type);
  const bool transformers_class = found != table().class_defaults.end();
  json applied = transformers_class ? found->second.values : json::object();
  for (const auto& [key, value] : row.applied.items()) applied[key] = value;
  const std::string config_class =
      transformers_class ? found->second.config_class : row.info.config_class;
  const ConfigFields f(renamed, file, prefix, &applied, config_class);
  json doc;
  doc["model_type"] = model_type;
  const std::int64_t hidden = f.integer("hidden_size");
  const std::int64_t layers = f.integer("num_hidden_layers");
  if (hidden <= 0 || layers <= 0) {
    f.fail(hidden <= 0 ? "hidden_size" : "num_hidden_layers", "0", "must be positive");
  }
  if (layers > 100000) f.fail("num_hidden_layers", std::to_string(layers), "absurd layer count");
  doc["hidden_size"] = hidden;
  doc["num_hidden_layers"] = layers;
  // Attention-free families have no heads; their rule sets the mixer and the layer pattern.
  const std::int64_t head_dim = row.attention_free ? 0 : attention_heads(f, doc);
  // Families whose MLP width lives elsewhere (Falcon's ffn_hidden_size, MoE-only models) set it
  // in their extra step; a present intermediate_size is always read (a per-layer list by the
  // family's rule, else a named error below).
  const json* width = f.value("intermediate_size");
  const bool width_list = width != nullptr && width->is_array();
  doc["intermediate_size"] =
      row.attention_free || width_list ? 0 : f.integer_or("intermediate_size", 0);
  const std::int64_t vocab = f.integer("vocab_size");
  if (vocab <= 0) f.fail("vocab_size", std::to_string(vocab), "must be positive");
  doc["vocab_size"] = vocab;
  // vLLM derives max_model_len from max_position_embeddings (rope scaling already folded in by
  // the checkpoints in use: Llama-3.1 131072, DeepSeek-V3 163840 = 4096 x yarn 40), else from
  // the other context keys it reads (attention-free configs: the smallest of them).
  const std::int64_t named = row.attention_free ? 0 : f.integer_or("max_position_embeddings", 0);
  const std::int64_t derived = named != 0 ? named : derived_max_model_len(f);
  if (derived != 0) {
    doc["max_position_embeddings"] = derived;
  } else {
    // Without a context key vLLM warns, defaults to 2048 and serves any --max-model-len given.
    constexpr std::int64_t kAssumedWithoutKeys = 2048;
    doc["max_position_embeddings"] = kAssumedWithoutKeys;
    doc["max_position_embeddings_assumed"] = true;
  }
  // A wrapper's top-level flag, when given, is the one the ForConditionalGeneration reads (the
  // text class's default applies only when neither names it).
  doc["tie_word_embeddings"] = f.has("tie_word_embeddings") || !top.has("tie_word_embeddings")
                                   ? f.boolean_or("tie_word_embeddings", false)
                                   : top.boolean_or("tie_word_embeddings", false);
  doc["torch_dtype"] = dtype_name(!f.has("torch_dtype") && !f.has("dtype") ? top : f);

  if (!row.attention_free) rotary_fields(f, file, prefix, head_dim, doc);
  if (f.boolean_or("attention_bias", false)) {
    doc["qkv_bias"] = true;
    doc["o_proj_bias"] = true;
  }
  if (f.boolean_or("mlp_bias", false)) doc["mlp_bias"] = true;
  translate_layers(f, row, doc);
  const std::int64_t mtp =
      f.integer_or("num_nextn_predict_layers", f.integer_or("mtp_num_hidden_layers", 0));
  if (mtp > 0) doc["num_nextn_predict_layers"] = mtp;
  for (const auto& item : row.set.items()) doc[item.key()] = item.value();
  for (const std::string& key : row.erase) doc.erase(key);
  Context context{f, top, doc};
  for (const Rule rule : row.rules) rule(context);
  // A dense model without an MLP width, or a width list no rule read: a named error.
  if (doc["intermediate_size"].get<std::int64_t>() == 0 && (width_list || !doc.contains("moe")) &&
      !row.attention_free) {
    (void)f.integer("intermediate_size");
  }
  json defaults = json::array();
  for (const std::string& key : f.defaults_used()) {
    std::string line = prefix;
    line.append(key).append(" = ").append(applied.at(key).dump());
    line.append(" (").append(config_class).append(")");
    defaults.push_back(std::move(line));
  }
  if (doc.value("max_position_embeddings_assumed", false)) {
    defaults.push_back(prefix +
                       "max_position_embeddings = 2048 (vLLM's assumption: the config names no "
                       "context key; any --max-model-len is served)");
  }
  if (!defaults.empty()) doc["config_defaults"] = defaults;
  return doc;
}

// --- the generic path: a model_type with no row ----------------------------------------------

// A config key that names a layout the generic path cannot size. The key signals when the
// config writes it with a value other than null, false, 0, "" or an empty list (and, for a
// layer step, other than 1): MoE configs write decoder_sparse_step 1 and mlp_only_layers [] to
// say "none".
struct UnsizedKey {
  const char* key;
  bool prefix;       // every key that starts with `key`
  bool one_is_none;  // a step of 1 (every layer) signals nothing
  const char* layout;
};

// In the order a refusal names them: the most telling key of a layout first.
constexpr UnsizedKey kUnsizedKeys[] = {
    {"hybrid_override_pattern", false, false, "a hybrid Mamba / attention layer pattern"},
    {"layers_block_type", false, false, "a hybrid layer pattern"},
    {"attn_layer_period", false, false, "a hybrid Mamba / attention layer pattern"},
    {"attn_type_list", false, false, "per-layer linear or softmax attention"},
    {"full_attention_interval", false, false, "linear-attention layers between full ones"},
    {"linear_", true, false, "linear attention (a recurrent state, not a KV cache)"},
    {"mamba", true, false, "state-space (Mamba) mixers"},
    {"loop_num", false, true, "layers run again in a looped pass that keeps a KV cache of its own"},
    {"ssm_", true, false, "state-space mixers"},
    {"conv_kernel", false, false, "a convolution state (state-space mixers)"},
    {"conv_L_cache", false, false, "short-convolution mixers"},
    {"kv_lora_rank", false, false, "latent (compressed) KV: multi-head latent attention"},
    {"q_lora_rank", false, false, "multi-head latent attention"},
    {"qk_rope_head_dim", false, false, "multi-head latent attention"},
    {"index_head_dim", false, false, "a sparse-attention indexer cache"},
    {"v_head_dim", false, false, "a V head size apart from head_dim"},
    {"num_kv_shared_layers", false, false, "KV shared across layers"},
    {"kv_sharing", true, false, "KV shared across layers"},
    {"global_head_dim", false, false, "per-layer head sizes"},
    {"num_global_key_value_heads", false, false, "per-layer KV heads"},
    {"num_attention_groups", false, false, "KV heads under Step's num_attention_groups"},
    {"per_layer_config", false, false, "per-layer head sizes"},
    {"block_configs", false, false, "per-layer block shapes"},
    {"hidden_size_per_layer_input", false, false, "per-layer input embeddings"},
    {"attention_chunk_size", false, false, "chunked local attention"},
    {"is_encoder_decoder", false, false, "an encoder-decoder"},
    {"encoder_layers", false, false, "an encoder-decoder"},
    {"decoder_layers", false, false, "an encoder-decoder"},
    {"num_decoder_layers", false, false, "an encoder-decoder"},
    {"n_routed_experts", false, false, "an MoE layout beyond num_experts (shared experts)"},
    {"n_shared_experts", false, false, "shared experts"},
    {"num_shared_experts", false, false, "shared experts"},
    {"shared_expert_intermediate_size", false, false, "shared experts"},
    {"first_k_dense_replace", false, false, "dense layers before the MoE layers"},
    {"mlp_only_layers", false, false, "dense layers among the MoE layers"},
    {"decoder_sparse_step", false, true, "MoE on every n-th layer"},
    {"moe_layer_freq", false, true, "MoE on every n-th layer"},
    {"interleave_moe_layer_step", false, true, "MoE on every n-th layer"},
    {"num_nextn_predict_layers", false, false, "multi-token-prediction layers"},
    {"mtp_num_hidden_layers", false, false, "multi-token-prediction layers"},
    {"vision_config", false, false, "a vision tower"},
    {"audio_config", false, false, "an audio tower"},
};

bool signals(const json& v, bool one_is_none) {
  if (v.is_null() || v == false || v.empty() || (v.is_string() && v.get<std::string>().empty()))
    return false;
  if (v.is_number()) return v.get<double>() != 0.0 && !(one_is_none && v.get<double>() == 1.0);
  return true;
}

[[noreturn]] void refuse_generic(const ConfigFields& where, const std::string& key,
                                 const std::string& value, const std::string& model_type,
                                 const std::string& layout) {
  where.fail(key.c_str(), value,
             layout + ": model_type " + model_type +
                 " is not mapped, and the generic path (a standard decoder from transformers' "
                 "standard fields) cannot size it; to plan it, write a spec YAML under "
                 "model_specs/models/ (see docs/models.md)");
}

// Refuses by name a config whose keys signal a layout the generic path cannot size.
void check_generic_layout(const json& object, const ConfigFields& where,
                          const std::string& model_type) {
  for (const UnsizedKey& u : kUnsizedKeys) {
    for (const auto& [key, value] : object.items()) {
      const bool match = u.prefix ? key.rfind(u.key, 0) == 0 : key == u.key;
      if (match && signals(value, u.one_is_none)) {
        refuse_generic(where, key, value.dump().substr(0, 80), model_type, u.layout);
      }
    }
  }
  for (const char* key : {"num_key_value_heads", "head_dim", "intermediate_size"}) {
    if (where.has(key) && where.at(key).is_array())
      refuse_generic(where, key, "a list", model_type, "per-layer sizes");
  }
  if (where.has("layer_types") && where.at("layer_types").is_array()) {
    for (const json& kind : where.at("layer_types")) {
      if (kind != "full_attention" && kind != "sliding_attention") {
        refuse_generic(where, "layer_types", kind.dump(), model_type,
                       "a layer kind other than full_attention / sliding_attention");
      }
    }
  } else {
    for (const char* key : {"sliding_window_pattern", "_sliding_window_pattern"}) {
      if (where.has(key)) {
        refuse_generic(where, key, where.at(key).dump(), model_type,
                       "a sliding pattern without layer_types (which layers slide is not stated)");
      }
    }
  }
  if (where.boolean_or("use_sliding_window", false) && where.has("max_window_layers")) {
    refuse_generic(where, "max_window_layers", where.at("max_window_layers").dump(), model_type,
                   "sliding on some layers only");
  }
}

// Routed experts in the standard fields: num_experts (or num_local_experts) of
// moe_intermediate_size each, num_experts_per_tok per token, on every layer. The generic row's
// one rule.
void generic_moe(Context& c) {
  const ConfigFields& f = c.f;
  const std::string model_type = c.doc["model_type"].get<std::string>();
  const std::int64_t experts = f.integer_or("num_experts", f.integer_or("num_local_experts", 0));
  if (f.has("num_experts") && f.has("num_local_experts") &&
      f.integer("num_local_experts") != experts) {
    refuse_generic(f, "num_local_experts", f.at("num_local_experts").dump(), model_type,
                   "two expert counts (num_experts differs)");
  }
  if (experts == 0) return;
  if (!f.has("moe_intermediate_size")) {
    refuse_generic(f, "moe_intermediate_size", "missing", model_type,
                   "routed experts without a stated width");
  }
  c.doc["moe"] = {{"num_experts", experts},
                  {"num_experts_per_tok", f.integer("num_experts_per_tok")},
                  {"moe_intermediate_size", f.integer("moe_intermediate_size")}};
}

// What the generic path assumed, in words every plan prints. `tie_stated`: the config writes
// tie_word_embeddings (transformers' base class defaults it per model; without a class, false).
json generic_assumptions(const json& doc, bool tie_stated) {
  const std::int64_t layers = doc["num_hidden_layers"].get<std::int64_t>();
  const std::string kv = std::to_string(doc["num_key_value_heads"].get<std::int64_t>()) +
                         " KV heads x head_dim " +
                         std::to_string(doc["head_dim"].get<std::int64_t>());
  std::int64_t sliding = 0;
  if (doc.contains("layer_types")) {
    for (const json& kind : doc["layer_types"]) sliding += kind == "sliding_attention" ? 1 : 0;
  } else if (doc.contains("layer_pattern")) {
    sliding = layers;  // if_set: one sliding_attention entry for every layer
  }
  std::string attention = "attention on every one of the " + std::to_string(layers) +
                          " layers, K and V of " + kv + " per layer, ";
  if (sliding == 0) {
    attention += "all full attention";
  } else {
    attention += std::to_string(sliding) + " sliding within " +
                 std::to_string(doc["sliding_window"].get<std::int64_t>()) + " tokens" +
                 (doc.contains("layer_types") ? " per layer_types"
                                              : " (sliding_window below max_position_embeddings)");
  }
  std::string mlp = "a gated MLP (gate, up, down) of intermediate_size " +
                    std::to_string(doc["intermediate_size"].get<std::int64_t>()) +
                    " in every layer";
  if (doc.contains("moe")) {
    const json& m = doc["moe"];
    mlp = "routed experts in every layer (" + m["num_experts"].dump() + " of width " +
          m["moe_intermediate_size"].dump() + ", " + m["num_experts_per_tok"].dump() +
          " per token, gated, no shared expert)";
  }
  const bool tied = doc["tie_word_embeddings"].get<bool>();
  const std::string head = std::string(tied ? "lm_head tied to" : "lm_head apart from") +
                           " the embeddings" +
                           (tie_stated ? "" : " (tie_word_embeddings not in the config)");
  return json::array({attention, mlp,
                      "2 RMSNorms per layer and no q/k norms; biases only where attention_bias / "
                      "mlp_bias say",
                      head});
}

json generic_document(const json& config, const json& text, const ConfigFields& top,
                      const std::string& model_type, const std::string& prefix,
                      const std::string& file) {
  const ConfigFields raw(text, file, prefix);
  check_generic_layout(config, top, model_type);
  if (&text != &config) check_generic_layout(text, raw, model_type);
  Row row;
  row.info.family = "generic";
  // Named in "required field is missing, and <class> gives it no default".
  row.info.config_class = "the generic path (model_type " + model_type + " is not mapped)";
  // A config that states use_sliding_window slides only when it is true (Qwen's convention).
  row.sliding = raw.has("use_sliding_window") ? Sliding::QwenGated : Sliding::IfSet;
  row.rules = {generic_moe};
  json doc = decoder_document(text, top, row, model_type, prefix, file);
  doc["generic_assumptions"] =
      generic_assumptions(doc, raw.has("tie_word_embeddings") || top.has("tie_word_embeddings"));
  return doc;
}

}  // namespace

const std::vector<ArchitectureInfo>& architecture_infos() {
  static const std::vector<ArchitectureInfo> infos = [] {
    std::vector<ArchitectureInfo> out;
    for (const Row& r : rows()) out.push_back(r.info);
    return out;
  }();
  return infos;
}

const std::vector<RefusedArchitecture>& refused_architectures() { return table().refused; }

void check_architecture_table(const std::string& yaml_text, const std::string& file) {
  (void)parse_table(yaml_text, file);
}

std::string supported_model_types() {
  std::vector<std::string> names;
  for (const Row& r : rows()) {
    names.insert(names.end(), r.info.model_types.begin(), r.info.model_types.end());
  }
  for (const Wrapper& w : wrappers()) names.push_back(w.model_type);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The transformers class a wrapper's vision_config is built as, where the table reads its
// defaults: by vision_config.model_type for LLaVA (CLIP unless named, SigLIP for OneVision) and
// PaliGemma (SigLIP), by the wrapper for Idefics3 / SmolVLM, InternVL (transformers' format) and
// Intern-S1; "" for the other towers.
std::string vision_config_class(const ConfigFields& v, Vision style,
                                const std::string& model_type) {
  if (style == Vision::Idefics3) {
    return model_type == "smolvlm" ? "SmolVLMVisionConfig" : "Idefics3VisionConfig";
  }
  if (style == Vision::Blip2) return "Blip2VisionConfig";
  if (style == Vision::Lfm2Vl) return "Siglip2VisionConfig";
  if (style == Vision::KimiK25) return "Kimi_K25VisionConfig";
  if (style == Vision::MiniCpmV) return "Idefics2VisionConfig";
  if (style == Vision::MiniCpmV46) return "MiniCPMV4_6VisionConfig";
  if (style == Vision::Exaone45) return "Exaone4_5_VisionConfig";
  if (style == Vision::DotsOcr) return "DotsVisionConfig";
  if (style == Vision::Gemma4Unified) return "Gemma4UnifiedVisionConfig";
  if (style == Vision::Gemma3n) return "Gemma3nVisionConfig";
  // Step-3.7's remote configuration_step3p7.py builds vision_config as its
  // StepRoboticsVisionEncoderConfig (trust_remote_code; the auto_map names it).
  if (style == Vision::StepPe) return "StepRoboticsVisionEncoderConfig";
  if (style == Vision::Radio) return "NemotronH_Nano_VL_V2 vision_config";
  // Keye's remote KeyeVisionConfig is SigLIP's (vision_config.model_type siglip_vision_model).
  if (style == Vision::Keye) return "SiglipVisionConfig";
  // Command A Vision's vision_config (transformers' Cohere2VisionConfig: siglip_vision_model
  // unless named); PaddleOCR-VL's PaddleOCRVisionConfig has no defaults table here: its
  // config must name every size.
  if (style == Vision::Cohere2Vision) {
    const std::string vision_type = v.string_or("model_type", "siglip_vision_model");
    if (vision_type != "siglip_vision_model") {
      v.fail("model_type", vision_type, "Command A Vision's tower modelled is siglip_vision_model");
    }
    return "SiglipVisionConfig";
  }
  if (style == Vision::Glm4v) {
    if (model_type == "glm_ocr") return "GlmOcrVisionConfig";
    return model_type == "glm4v_moe" ? "Glm4vMoeVisionConfig" : "Glm4vVisionConfig";
  }
  if (style == Vision::InternVlHf) {
    // Intern-S1's remote-code vision config class has InternVLVisionConfig's defaults.
    return model_type == "interns1" ? "InternS1VisionConfig" : "InternVLVisionConfig";
  }
  if (style != Vision::Llava && style != Vision::PaliGemma) return "";
  const bool siglip_default = style == Vision::PaliGemma || model_type == "llava_onevision";
  const std::string vision_type =
      v.string_or("model_type", siglip_default ? "siglip_vision_model" : "clip_vision_model");
  if (vision_type == "siglip_vision_model") return "SiglipVisionConfig";
  if (vision_type == "clip_vision_model" && style == Vision::Llava) return "CLIPVisionConfig";
  v.fail("model_type", vision_type,
         style == Vision::Llava
             ? "the LLaVA towers modelled are clip_vision_model and siglip_vision_model"
             : "PaliGemma's tower modelled is siglip_vision_model");
}

// A vision-side config class's defaults (vision_config_class_defaults), by class name.
const json& vision_class_defaults(const std::string& config_class) {
  const auto found = table().vision_class_defaults.find(config_class);
  if (found == table().vision_class_defaults.end()) {
    throw SpecError(kArchitecturesFile, "vision_config_class_defaults", config_class,
                    "no entry for this class");
  }
  return found->second;
}

// The class defaults `fields` read, as doc["config_defaults"] lines.
void report_defaults(const ConfigFields& fields, const json& defaults,
                     const std::string& config_class, json& doc) {
  for (const std::string& key : fields.defaults_used()) {
    std::string line = fields.prefix();
    line.append(key).append(" = ").append(defaults.at(key).dump());
    line.append(" (").append(config_class).append(")");
    doc["config_defaults"].push_back(std::move(line));
  }
}

// Gemma-4 Unified's audio path (gemma4_unified.py embed_audio): no encoder, raw frames of
// audio_embed_dim samples through Gemma4MultimodalEmbedder (an RMSNorm without weight and an
// unbiased [audio_embed_dim -> text hidden]); 0 without audio_config. Gemma4UnifiedAudioConfig's
// hidden_size, output_proj_dims and audio_samples_per_token are audio_embed_dim under other
// names: a config writing them apart is refused. The class defaults read go to
// doc["config_defaults"].
std::int64_t gemma4_unified_audio(const json& config, const ConfigFields& top,
                                  const std::string& file, std::int64_t text_hidden, json& doc) {
  if (!top.has("audio_config")) return 0;
  const json& object = config.at("audio_config");
  if (!object.is_object()) top.fail("audio_config", "not an object", "expected an object");
  const std::string config_class = "Gemma4UnifiedAudioConfig";
  const json& defaults = vision_class_defaults(config_class);
  const ConfigFields a(object, file, top.prefix() + "audio_config.", &defaults, config_class);
  const std::int64_t width = bounded(a, "audio_embed_dim", kMaxWidth);
  for (const char* alias : {"hidden_size", "output_proj_dims", "audio_samples_per_token"}) {
    if (a.has(alias) && a.integer(alias) != width) {
      a.fail(alias, std::to_string(a.integer(alias)),
             "must equal audio_embed_dim (" + std::to_string(width) + "), the field it names");
    }
  }
  report_defaults(a, defaults, config_class, doc);
  return width * text_hidden;
}

// vLLM 0.33's RadioConfig table VIT_TIMM_DIM_BY_NAME (transformers_utils/configs/radio.py): the
// timm ViT names a RADIO config may give as args.model, with the width, depth and MLP width each
// sizes (the head count sizes no weight).
struct RadioVit {
  const char* name;
  std::int64_t width;
  std::int64_t depth;
  std::int64_t mlp;
};
constexpr RadioVit kRadioVits[] = {
    {"vit_small_patch16_224", 384, 12, 1536},   {"vit_base_patch16_224", 768, 12, 3072},
    {"vit_large_patch16_224", 1024, 24, 4096},  {"vit_huge_patch16_224", 1280, 32, 5120},
    {"vit_so400m_patch16_224", 1152, 27, 4304},
};

const RadioVit& radio_vit(const ConfigFields& args) {
  const std::string model = args.string_or("model", "");
  for (const RadioVit& vit : kRadioVits) {
    if (model == vit.name) return vit;
  }
  std::string known;
  for (const RadioVit& vit : kRadioVits)
    known += (known.empty() ? "" : ", ") + std::string(vit.name);
  args.fail("model", model.empty() ? "missing" : model,
            "vLLM 0.33's RadioConfig sizes only " + known + " (VIT_TIMM_DIM_BY_NAME)");
}

// The class and register tokens of RADIO's ClsToken: one class token, or one per distinct
// teacher name under cls_token_per_teacher; register_multiple - (tokens % register_multiple)
// registers when register_multiple is set (a whole multiple when tokens divide it).
std::int64_t radio_prefix_tokens(const ConfigFields& args) {
  std::set<std::string> teachers;
  if (args.has("teachers")) {
    const json& list = args.at("teachers");
    if (!list.is_array()) args.fail("teachers", list.dump().substr(0, 60), "expected a list");
    for (const json& t : list) {
      if (!t.is_object() || !t.contains("name") || !t.at("name").is_string()) {
        args.fail("teachers", t.dump().substr(0, 60), "each teacher needs a string name");
      }
      teachers.insert(t.at("name").get<std::string>());
    }
  }
  const auto distinct = static_cast<std::int64_t>(teachers.size());
  const std::int64_t cls = args.boolean_or("cls_token_per_teacher", false) ? distinct : 1;
  const std::int64_t multiple = args.has("register_multiple")
                                    ? bounded(args, "register_multiple", 1 << 12)
                                    : 0;  // RadioConfig's None: no registers
  return cls + (multiple > 0 ? multiple - cls % multiple : 0);
}

// vLLM 0.33's RADIO tower (radio.py RadioModel, as nano_nemotron_vl.py's
// get_vit_model_from_radio_config configures it): the ViT of vision_config.args.model; an
// unbiased patch embedder [3 p^2 -> w] and, with video_temporal_patch_size T > 1, a separate
// unbiased video embedder [3 T p^2 -> w]; a position table of (round(cpe_max_size / p))^2
// entries; the class and register tokens; per block two LayerNorms (RMSNorms under norm_type
// rms_norm), qkv [3w, w] (biased with qkv_bias), a biased proj, q/k RMSNorms under
// qk_normalization, a biased fc1 / fc2 of the table's MLP width and the layer scales ls1 / ls2
// (built, though the checkpoint's are skipped at load); no final norm. `v`: vision_config with
// the getattr defaults of nano_nemotron_vl.py, `args`: its args with RadioConfig's defaults.
std::int64_t radio_tower(const ConfigFields& v, const ConfigFields& args) {
  // RadioConfig takes these as keywords beside **args: a duplicate stops vLLM (TypeError).
  for (const char* key : {"model_name", "image_size", "patch_size", "norm_mean", "norm_std",
                          "video_temporal_patch_size", "separate_video_embedder"}) {
    if (args.has(key)) {
      args.fail(key, args.at(key).dump().substr(0, 40),
                "nano_nemotron_vl.py passes RadioConfig this keyword itself: vLLM 0.33 stops on "
                "the duplicate");
    }
  }
  const RadioVit& vit = radio_vit(args);
  const std::int64_t w = vit.width;
  const std::int64_t patch = bounded(v, "patch_size", 1 << 10);
  const std::int64_t temporal = bounded(v, "video_temporal_patch_size", 1 << 6);
  if (temporal > 1 && !v.boolean_or("separate_video_embedder", true)) {
    v.fail("separate_video_embedder", "false",
           "vLLM 0.33's radio.py builds only a separate video embedder when "
           "video_temporal_patch_size > 1 (NotImplementedError otherwise)");
  }
  // max_img_size = int(round(cpe_max_size / patch_size) * patch_size): Python's round, halves
  // to even; the generator's rows and columns are that over the patch size.
  const std::int64_t cpe = bounded(args, "cpe_max_size", kMaxSide);
  std::int64_t side = cpe / patch;
  const std::int64_t rest = cpe % patch;
  if (2 * rest > patch || (2 * rest == patch && side % 2 == 1)) ++side;
  if (side < 1) args.fail("cpe_max_size", std::to_string(cpe), "below half a patch: no positions");
  const std::string norm = args.string_or("norm_type", "layer_norm");
  if (norm != "layer_norm" && norm != "rms_norm") {
    args.fail("norm_type", norm, "expected layer_norm or rms_norm (intern_vit.py NORM2FN)");
  }
  const std::int64_t norm_width = norm == "layer_norm" ? 2 * w : w;
  const std::int64_t block = 2 * norm_width + 3 * w * w +
                             (args.boolean_or("qkv_bias", true) ? 3 * w : 0) + w * w + w +
                             (args.boolean_or("qk_normalization", false) ? 2 * w : 0) +
                             2 * w * vit.mlp + vit.mlp + w + 2 * w;
  const std::int64_t embedders =
      3 * patch * patch * w + (temporal > 1 ? 3 * temporal * patch * patch * w : 0);
  return embedders + side * side * w + radio_prefix_tokens(args) * w + vit.depth * block;
}

// nano_nemotron_vl.py's projector: mlp1 (an RMSNorm over vit_hidden_size x round(1 /
// downsample_ratio)^2, unbiased [-> projector_hidden_size] and [-> text width]) and, where the
// text config has num_nextn_predict_layers > 0, vision_final_layernorm (a LayerNorm over
// vit_hidden_size). The wrapper's config class is remote code: its sizes are required.
std::int64_t nano_nemotron_vl_projector(const ConfigFields& top, const json& text,
                                        std::int64_t text_hidden) {
  const std::int64_t vit = required_count(top, "vit_hidden_size", kMaxWidth);
  const std::int64_t hidden = required_count(top, "projector_hidden_size", kMaxWidth);
  const json* ratio = top.value("downsample_ratio");
  if (ratio == nullptr || !ratio->is_number() || ratio->get<double>() <= 0.0 ||
      ratio->get<double>() > 1.0) {
    top.fail("downsample_ratio", ratio == nullptr ? "missing" : ratio->dump(),
             "a number in (0, 1] required (remote-code config class: no default is read)");
  }
  // int(round(1 / downsample_ratio)): nearbyint rounds halves to even, as Python's round.
  const auto scale = static_cast<std::int64_t>(std::nearbyint(1.0 / ratio->get<double>()));
  const std::int64_t in = vit * scale * scale;
  const json* mtp = text.is_object() && text.contains("num_nextn_predict_layers")
                        ? &text.at("num_nextn_predict_layers")
                        : nullptr;
  const bool final_norm =
      mtp != nullptr && mtp->is_number_integer() && mtp->get<std::int64_t>() > 0;
  return in + in * hidden + hidden * text_hidden + (final_norm ? 2 * vit : 0);
}

// Nemotron Nano VL / Omni's image path into `parameters`: the RADIO tower of vision_config and
// the projector; the defaults it took go to doc["config_defaults"].
std::int64_t add_radio(const json& config, const ConfigFields& top, const ConfigFields& v,
                       const std::string& file, json& doc) {
  if (!v.has("args") || !v.at("args").is_object()) {
    v.fail("args", v.has("args") ? "not an object" : "missing",
           "the RADIO ViT is named by vision_config.args.model");
  }
  const std::string args_class = "RadioConfig";
  const json& args_defaults = vision_class_defaults(args_class);
  const ConfigFields args(v.at("args"), file, v.prefix() + "args.", &args_defaults, args_class);
  const std::int64_t text_hidden = doc["hidden_size"].get<std::int64_t>();
  const json& text = config.contains("llm_config")    ? config.at("llm_config")
                     : config.contains("text_config") ? config.at("text_config")
                                                      : config;
  const std::int64_t parameters =
      radio_tower(v, args) + nano_nemotron_vl_projector(top, text, text_hidden);
  report_defaults(args, args_defaults, args_class, doc);
  return parameters;
}

// The wrapper's vision tower into doc["vision"]: its parameters and encoder-profile facts, and
// the vision-config class defaults it read into doc["config_defaults"].
void add_vision(const json& config, const ConfigFields& top, Vision style,
                const std::string& model_type, const std::string& file, json& doc) {
  const json& vision = config.at("vision_config");
  if (!vision.is_object()) top.fail("vision_config", "not an object", "expected an object");
  const std::string config_class = vision_config_class(
      ConfigFields(vision, file, top.prefix() + "vision_config."), style, model_type);
  const json no_defaults = json::object();
  const json& defaults = config_class.empty() ? no_defaults : vision_class_defaults(config_class);
  const ConfigFields v(vision, file, top.prefix() + "vision_config.", &defaults, config_class);
  const std::int64_t text_hidden = doc["hidden_size"].get<std::int64_t>();
  std::int64_t parameters = 0;
  if (style == Vision::Blip2) {
    // transformers builds Blip2QFormerConfig's defaults where the config omits qformer_config.
    const json omitted = json::object();
    const json& qformer = top.has("qformer_config") ? config.at("qformer_config") : omitted;
    if (!qformer.is_object()) top.fail("qformer_config", "not an object", "expected an object");
    const std::string qformer_class = "Blip2QFormerConfig";
    const json& qformer_defaults = vision_class_defaults(qformer_class);
    const ConfigFields q(qformer, file, "qformer_config.", &qformer_defaults, qformer_class);
    parameters = blip2_tower(v, q, top, text_hidden);
    report_defaults(q, qformer_defaults, qformer_class, doc);
  } else if (style == Vision::Glm4v && model_type == "glm_ocr") {
    parameters = glm4v_tower(v, true, doc["intermediate_size"].get<std::int64_t>());
  } else if (style == Vision::Radio) {
    parameters = add_radio(config, top, v, file, doc);
  } else {
    parameters = vision_parameters(v, top, style, model_type, config_class == "CLIPVisionConfig",
                                   text_hidden);
  }
  doc["vision"] = {{"num_parameters", parameters}};
  if (style == Vision::Gemma4Unified) {
    // Its audio projector beside the image path: one tower of both, the audio share apart.
    // No tower: the embedders are built whatever the modality limits, the audio frames'
    // projector beside the image path.
    const std::int64_t audio = gemma4_unified_audio(config, top, file, text_hidden, doc);
    doc["vision"]["always_built"] = true;
    if (audio > 0) {
      doc["vision"]["num_parameters"] = parameters + audio;
      doc["vision"]["unmodelled_modalities"] = {"audio"};
    }
  }
  vision_profile_facts(v, top, style, model_type, doc["vision"]);
  report_defaults(v, defaults, config_class, doc);
}

// DeepSeek-OCR's tower into doc["vision"]. Its model_type, deepseek_vl_v2, is also
// DeepSeek-VL2's and DeepSeek-OCR-2's (vLLM's DeepseekVLV2Config tells them apart by
// architectures, DeepseekVLV2ForCausalLM when none is written): only DeepSeek-OCR is sized.
void add_deepseek_ocr(const json& config, const ConfigFields& top, const std::string& file,
                      json& doc) {
  const std::string architecture = first_architecture(top, "DeepseekVLV2ForCausalLM");
  if (architecture != "DeepseekOCRForCausalLM") {
    top.fail("architectures", architecture,
             "DeepseekOCRForCausalLM: of the deepseek_vl_v2 checkpoints only DeepSeek-OCR's "
             "encoder is modelled (DeepSeek-VL2's SigLIP tower and DeepSeek-OCR-2's are not)");
  }
  if (!top.has("projector_config") || !config.at("projector_config").is_object()) {
    top.fail("projector_config", top.has("projector_config") ? "not an object" : "missing",
             "an object with projector_type, input_dim and n_embed");
  }
  const ConfigFields projector(config.at("projector_config"), file, "projector_config.");
  doc["vision"] = {{"num_parameters", deepseek_ocr_tower(projector)}};
}

// An object-valued key of a config with no vision_config (Phi-3-vision's img_processor and
// embd_layer): an error naming it where it is missing or not an object.
const json& sub_object(const json& config, const ConfigFields& top, const char* key,
                       const char* needed) {
  if (!top.has(key) || !config.at(key).is_object()) {
    top.fail(key, top.has(key) ? "not an object" : "missing", needed);
  }
  return config.at(key);
}

// Phi-3-vision's image embedding as vLLM 0.33 builds it (phi3v.py Phi3HDImageEmbedding): CLIP
// ViT-L/14-336 of fixed sizes (CLIP_VIT_LARGE_PATCH14_336_CONFIG: width 1024, MLP 4096, 24
// layers, 336-pixel images of 14-pixel patches; config.json names only the model) built up to
// img_processor.layer_idx (default -2: 23 layers; the post-LayerNorm only with all 24), then the
// HD transform's glb_GN and sub_GN separators [4 x image_dim_out] and img_projection, a biased
// [4 x image_dim_out -> hidden] and a biased [hidden -> hidden]. Its token table
// (vision_embed_tokens.wte) is the language model's own once loaded: the published checkpoints
// store model.embed_tokens.weight alone, and phi3v.py's load_weights then points embed_tokens at
// the language model's table (the copy it built first is freed before vLLM measures the weights).
std::int64_t phi3v_tower(const ConfigFields& processor, const ConfigFields& embedding,
                         std::int64_t text_hidden) {
  constexpr std::int64_t kClipLayers = 24;
  static const json kClip = {{"hidden_size", 1024},
                             {"intermediate_size", 4096},
                             {"image_size", 336},
                             {"patch_size", 14},
                             {"num_channels", 3}};
  const ConfigFields clip(kClip, processor.file(), "CLIP_VIT_LARGE_PATCH14_336_CONFIG.");
  for (const char* key : {"use_hd_transform", "with_learnable_separator"}) {
    if (!embedding.boolean_or(key, false)) {
      embedding.fail(key, embedding.has(key) ? embedding.at(key).dump() : "missing",
                     "true (phi3v.py builds the HD transform with its learnable separators only)");
    }
  }
  const std::int64_t out = processor.integer("image_dim_out");
  if (out != kClip.at("hidden_size").get<std::int64_t>()) {
    processor.fail("image_dim_out", std::to_string(out),
                   "1024, the width of the CLIP ViT-L/14-336 phi3v.py builds");
  }
  std::int64_t index = -2;  // phi3v.py's default; negative counts from the last layer
  if (processor.has("layer_idx")) {
    const json& given = processor.at("layer_idx");
    if (!given.is_number_integer())
      processor.fail("layer_idx", given.dump(), "expected an integer");
    index = given.get<std::int64_t>();
  }
  if (index < -kClipLayers || index >= kClipLayers) {
    processor.fail("layer_idx", std::to_string(index), "outside CLIP ViT-L/14-336's 24 layers");
  }
  const std::int64_t layers = index < 0 ? kClipLayers + index + 1 : index + 1;
  const std::int64_t separators = 2 * (4 * out);  // glb_GN and sub_GN
  const std::int64_t projection =
      4 * out * text_hidden + text_hidden + text_hidden * text_hidden + text_hidden;
  return clip_siglip_encoder(clip, true, layers, layers == kClipLayers) + separators + projection;
}

void add_phi3v(const json& config, const ConfigFields& top, const std::string& file, json& doc) {
  const ConfigFields processor(
      sub_object(config, top, "img_processor", "an object naming image_dim_out"), file,
      "img_processor.");
  const ConfigFields embedding(
      sub_object(config, top, "embd_layer", "an object with use_hd_transform"), file,
      "embd_layer.");
  doc["vision"] = {{"num_parameters",
                    phi3v_tower(processor, embedding, doc["hidden_size"].get<std::int64_t>())}};
}

// Ovis2.5's visual tokenizer and visual embedding table as vLLM 0.33 builds them (ovis2_5.py,
// siglip2navit.py): the SigLIP2-NaViT ViT of vit_config (num_patches <= 0: a biased patch
// convolution; preserve_original_pe: (image_size / patch_size)^2 positions; biased q/k/v/o and
// fc1 / fc2, two LayerNorms a block, the post-LayerNorm), the head (an unbiased Linear from
// hidden_stride^2 x hidden to visual_vocab_size - 4 indicator slots, and a LayerNorm over those)
// and the vte embedding [visual_vocab_size, hidden_size] at the top-level hidden_size.
std::int64_t ovis2_5_tower(const ConfigFields& vit, const ConfigFields& top) {
  constexpr std::int64_t kIndicatorSlots = 4;  // ovis.py INDICATOR_IDS
  const std::string backbone = vit.string_or("model_type", "");
  if (backbone != "siglip2_navit") {
    vit.fail("model_type", backbone.empty() ? "missing" : backbone,
             "siglip2_navit, the visual tokenizer vLLM's ovis2_5.py builds");
  }
  const std::int64_t h = bounded(vit, "hidden_size", kMaxWidth);
  const std::int64_t inter = bounded(vit, "intermediate_size", kMaxWidth);
  const std::int64_t layers = bounded(vit, "num_hidden_layers", kMaxLayers);
  const std::int64_t image = bounded(vit, "image_size", kMaxSide);
  const std::int64_t patch = bounded(vit, "patch_size", image);
  const std::int64_t channels = bounded(vit, "num_channels", 16);
  const std::int64_t stride = bounded(vit, "hidden_stride", 16);
  if (!vit.has("num_patches") || !vit.at("num_patches").is_number_integer() ||
      vit.at("num_patches").get<std::int64_t>() > 0) {
    vit.fail("num_patches", vit.has("num_patches") ? vit.at("num_patches").dump() : "missing",
             "-1 (the patch convolution of the checkpoints modelled; NaFlex's linear patch "
             "embedding is not)");
  }
  const bool positions = vit.boolean_or("preserve_original_pe", false);
  const std::int64_t embeddings =
      channels * patch * patch * h + h + (positions ? (image / patch) * (image / patch) * h : 0);
  const std::int64_t block = 4 * h * h + 2 * h * inter + 9 * h + inter;
  const std::int64_t vocab = bounded(top, "visual_vocab_size", kMaxWidth);
  if (vocab <= kIndicatorSlots) {
    top.fail("visual_vocab_size", std::to_string(vocab), "more than the 4 indicator slots");
  }
  const std::int64_t head_out = vocab - kIndicatorSlots;
  const std::int64_t head = stride * stride * h * head_out + 2 * head_out;
  const std::int64_t vte = vocab * bounded(top, "hidden_size", kMaxWidth);
  return embeddings + layers * block + 2 * h + head + vte;
}

// OpenVLA's fused backbone and projector as vLLM 0.33 builds them (openvla.py
// PrismaticVisionBackbone, PrismaticProjector), the only layout it accepts: every block of timm's
// vit_large_patch14_reg4_dinov2 at 224 px (width 1024, a biased 14 x 14 patch convolution, a
// class vector, 4 register tokens, 16^2 positions without prefix slots; 24 blocks of two
// LayerNorms, a biased qkv and proj, a biased fc1 / fc2 of 4096 and two layer scales; the final
// LayerNorm) and of vit_so400m_patch14_siglip_224 (width 1152, 16^2 positions, no class token;
// 27 blocks of two LayerNorms, a biased qkv and proj, a biased fc1 / fc2 of 4304; the final
// LayerNorm; its attention-pooling head: a latent vector, a biased q, kv and proj, a LayerNorm
// and a biased MLP of 4304); the projector fc1 [2176 -> 8704], fc2 [8704 -> text], fc3 [text ->
// text], all biased. A config naming another backbone, image size or activation is refused, as
// vLLM refuses it.
std::int64_t openvla_tower(const ConfigFields& top, std::int64_t text_hidden) {
  auto expect = [&](const char* key, const json& wanted) {
    if (top.has(key) && top.at(key) != wanted) {
      top.fail(
          key, top.at(key).dump(),
          "vLLM 0.33's openvla.py builds only " + wanted.dump() + " (dinosiglip-vit-so-224px)");
    }
  };
  expect("use_fused_vision_backbone", true);
  expect("image_sizes", json::array({224, 224}));
  expect("timm_model_ids",
         json::array({"vit_large_patch14_reg4_dinov2.lvd142m", "vit_so400m_patch14_siglip_224"}));
  expect("timm_override_act_layers", json::array({nullptr, nullptr}));
  constexpr std::int64_t side = 224 / 14;
  constexpr std::int64_t positions = side * side;
  constexpr std::int64_t d = 1024;
  constexpr std::int64_t dino_block = 12 * d * d + 15 * d;  // fc 4 d; ls1, ls2
  constexpr std::int64_t dino =
      d * 3 * 14 * 14 + d + d + 4 * d + positions * d + 24 * dino_block + 2 * d;
  constexpr std::int64_t s = 1152;
  constexpr std::int64_t mlp = 4304;
  constexpr std::int64_t siglip_block = 4 * s * s + 2 * s * mlp + 9 * s + mlp;
  constexpr std::int64_t pool = s + 4 * s * s + 4 * s + 2 * s + 2 * s * mlp + mlp + s;
  constexpr std::int64_t siglip =
      s * 3 * 14 * 14 + s + positions * s + 27 * siglip_block + 2 * s + pool;
  constexpr std::int64_t fused = d + s;
  const std::int64_t projector = fused * 4 * fused + 4 * fused + 4 * fused * text_hidden +
                                 text_hidden + text_hidden * text_hidden + text_hidden;
  return dino + siglip + projector;
}

void add_ovis2_5(const json& config, const ConfigFields& top, const std::string& file, json& doc) {
  if (!top.has("vit_config") || !config.at("vit_config").is_object()) {
    top.fail("vit_config", top.has("vit_config") ? "not an object" : "missing",
             "the visual tokenizer's ViT sizes are needed to count it");
  }
  const ConfigFields vit(config.at("vit_config"), file, "vit_config.");
  doc["vision"] = {{"num_parameters", ovis2_5_tower(vit, top)}};
}

// One of Granite Speech's sub-configs (encoder_config, projector_config) as an object.
const json& granite_speech_part(const json& config, const ConfigFields& top, const char* key) {
  if (!top.has(key)) {
    top.fail(key, "missing",
             "Granite Speech's audio encoder and projector are sized from encoder_config and "
             "projector_config; write both into config.json");
  }
  const json& object = config.at(key);
  if (!object.is_object()) top.fail(key, "not an object", "expected an object");
  return object;
}

// The Plus encoder's cat_hidden_layers (layer indices whose hidden states the encoder
// concatenates with its last) as GraniteSpeechPlusConfig checks them: each in [0, num_layers),
// and the projector's encoder_hidden_size the concatenated width, hidden_dim x (count + 1).
void check_cat_hidden_layers(const ConfigFields& e, const ConfigFields& q) {
  if (!e.has("cat_hidden_layers")) return;
  const json& list = e.at("cat_hidden_layers");
  const std::int64_t layers = bounded(e, "num_layers", kMaxLayers);
  if (!list.is_array()) e.fail("cat_hidden_layers", list.dump(), "expected a list of layers");
  for (const json& index : list) {
    if (!index.is_number_integer() || index.get<std::int64_t>() < 0 ||
        index.get<std::int64_t>() >= layers) {
      e.fail("cat_hidden_layers", index.dump(),
             "expected layer indices in [0, num_layers = " + std::to_string(layers) + ")");
    }
  }
  const auto concatenated =
      bounded(e, "hidden_dim", kMaxWidth) * (static_cast<std::int64_t>(list.size()) + 1);
  const std::int64_t width = bounded(q, "encoder_hidden_size", kMaxWidth);
  if (width != concatenated) {
    q.fail("encoder_hidden_size", std::to_string(width),
           "the Plus encoder hands the projector hidden_dim x (len(cat_hidden_layers) + 1) = " +
               std::to_string(concatenated) + " features");
  }
}

// Granite Speech (Plus)'s audio path into doc["vision"], a tower of modality audio: the encoder
// from encoder_config (GraniteSpeechEncoderConfig; GraniteSpeechPlusEncoderConfig for
// granite_speech_plus), the projector from projector_config (Blip2QFormerConfig, model_type
// blip_2_qformer) and the top-level window_size / downsample_rate (GraniteSpeechConfig,
// GraniteSpeechPlusConfig). The class defaults read go to doc["config_defaults"].
void add_granite_speech(const json& config, const ConfigFields& top, const std::string& file,
                        json& doc) {
  const bool plus = top.string_or("model_type", "") == "granite_speech_plus";
  const std::string top_class = plus ? "GraniteSpeechPlusConfig" : "GraniteSpeechConfig";
  const std::string encoder_class =
      plus ? "GraniteSpeechPlusEncoderConfig" : "GraniteSpeechEncoderConfig";
  const std::string projector_class = "Blip2QFormerConfig";
  const json& top_defaults = vision_class_defaults(top_class);
  const json& encoder_defaults = vision_class_defaults(encoder_class);
  const json& projector_defaults = vision_class_defaults(projector_class);
  const ConfigFields g(config, file, top.prefix(), &top_defaults, top_class);
  const ConfigFields e(granite_speech_part(config, top, "encoder_config"), file,
                       top.prefix() + "encoder_config.", &encoder_defaults, encoder_class);
  const ConfigFields q(granite_speech_part(config, top, "projector_config"), file,
                       top.prefix() + "projector_config.", &projector_defaults, projector_class);
  const std::string projector_type = q.string_or("model_type", "blip_2_qformer");
  if (projector_type != "blip_2_qformer") {
    q.fail("model_type", projector_type, "vLLM 0.33 builds this projector as blip2.py's Q-Former");
  }
  if (plus) check_cat_hidden_layers(e, q);
  const std::int64_t text_hidden = doc["hidden_size"].get<std::int64_t>();
  doc["vision"] = {
      {"num_parameters", granite_speech_encoder(e) + granite_speech_projector(q, g, text_hidden)},
      {"modality", "audio"}};
  report_defaults(g, top_defaults, top_class, doc);
  report_defaults(e, encoder_defaults, encoder_class, doc);
  report_defaults(q, projector_defaults, projector_class, doc);
}

// The wrapper's audio encoder into doc["vision"] (the spec's one tower): alone, a tower of
// modality audio; beside a vision tower, its share in audio_parameters and audio among the
// modalities whose profile is not modelled. The audio-config class defaults it read go to
// doc["config_defaults"].
void add_audio(const json& config, const ConfigFields& top, Audio audio, const std::string& file,
               json& doc) {  // config / top: the object holding audio_config (thinker_config)
  if (audio == Audio::GraniteSpeech) {
    add_granite_speech(config, top, file, doc);
    return;
  }
  // Nemotron Omni's encoder reads sound_config, and vLLM builds none without one.
  const char* key = audio == Audio::Parakeet ? "sound_config" : "audio_config";
  if (!top.has(key)) {
    if (audio == Audio::Parakeet) return;
    top.fail(key, "missing",
             "the audio encoder's sizes are needed to count it; write audio_config into "
             "config.json");
  }
  const json& object = config.at(key);
  if (!object.is_object()) top.fail(key, "not an object", "expected an object");
  const AudioConfigClass cls = audio_config_class(audio);
  const json& defaults = vision_class_defaults(cls.config_class);
  const ConfigFields a(object, file, top.prefix() + key + ".", &defaults, cls.config_class);
  const std::string audio_type = a.string_or("model_type", cls.model_type);
  if (audio_type != cls.model_type) {
    a.fail("model_type", audio_type,
           std::string("vLLM 0.33 builds this model's audio encoder as ") + cls.model_type);
  }
  const std::int64_t parameters =
      audio_parameters(a, top, audio, doc["hidden_size"].get<std::int64_t>());
  if (doc.contains("vision")) {
    // Beside a vision tower (Qwen2.5-Omni): one tower of both, the audio share apart.
    json& tower = doc["vision"];
    tower["num_parameters"] = tower["num_parameters"].get<std::int64_t>() + parameters;
    tower["audio_parameters"] = parameters;
    if (!tower.contains("unmodelled_modalities")) tower["unmodelled_modalities"] = json::array();
    tower["unmodelled_modalities"].push_back("audio");
  } else {
    doc["vision"] = {{"num_parameters", parameters}, {"modality", "audio"}};
  }
  report_defaults(a, defaults, cls.config_class, doc);
}

json architecture_spec_document(const json& config, const std::string& file) {
  if (!config.is_object())
    throw SpecError(file, "<root>", config.type_name(), "config.json must be an object");
  const ConfigFields top(config, file, "");
  std::string model_type = top.string_or("model_type", "");
  // vLLM's _ARCHITECTURE_TO_MODEL_TYPE: LongCat-Flash checkpoints name no model_type.
  if (model_type.empty() && top.has("architectures") && top.at("architectures").is_array() &&
      !top.at("architectures").empty()) {
    const json& first = top.at("architectures")[0];
    if (first == "LongcatFlashForCausalLM" || first == "LongcatFlashNgramForCausalLM") {
      model_type = "longcat_flash";
    }
  }
  if (model_type.empty()) top.fail("model_type", "missing", "required to know the cache layout");
  const Wrapper* wrapper = find_wrapper(model_type);
  // Qwen3-ASR nests its text and audio configs in thinker_config, which vLLM reads
  // (hf_config.thinker_config); its dtype and tie flag live there too.
  const bool thinker = wrapper != nullptr && top.has("thinker_config");
  if (thinker && !config.at("thinker_config").is_object())
    top.fail("thinker_config", "not an object", "expected an object");
  const json& body = thinker ? config.at("thinker_config") : config;
  const std::string body_prefix = thinker ? "thinker_config." : "";
  const ConfigFields outer(body, file, body_prefix);
  // vLLM reads a remote-code wrapper's llm_config as its text_config (transformers_utils/
  // config.py, InternVL), and DeepseekVLV2Config its language_config.
  const char* text_key = "text_config";
  if (!outer.has("text_config") && wrapper != nullptr) {
    if (outer.has("llm_config")) text_key = "llm_config";
    if (wrapper->vision == Vision::DeepseekOcr) text_key = "language_config";
  }
  const bool nested = outer.has(text_key);
  if (nested && !body.at(text_key).is_object())
    outer.fail(text_key, "not an object", "expected an object");
  const json& text = nested ? body.at(text_key) : body;
  const std::string prefix = body_prefix + (nested ? std::string(text_key) + "." : "");
  std::string text_type = model_type;
  if (wrapper != nullptr) {
    const ConfigFields t(text, file, prefix);
    text_type =
        nested ? t.string_or("model_type", wrapper->text_model_type) : wrapper->text_model_type;
    if (wrapper->vision == Vision::MiniCpmV) text_type = minicpmv_text_model_type(top);
  }
  const Row* row = find_row(text_type);
  json doc;
  if (row != nullptr) {
    doc = decoder_document(text, outer, *row, text_type, prefix, file);
  } else {
    refuse_if_known(ConfigFields(text, file, prefix), "model_type", text_type);
    refuse_if_known(top, "model_type", model_type);
    doc = generic_document(config, text, top, text_type, prefix, file);
  }
  doc["id"] = top.string_or("_name_or_path", file);
  doc["source"] = file;
  const Vision style = wrapper != nullptr ? wrapper->vision : Vision::Siglip;
  // vLLM's get_rope builds MRotaryEmbedding where the rope settings carry mrope_section;
  // Qwen3-VL's family passes its own cache factor from 0.32 (qwen3_vl.py mrope_positions_factor).
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const auto found = text.find(key);
    if (found != text.end() && found->is_object() && found->contains("mrope_section")) {
      doc["mrope"] = style == Vision::Qwen3Vl ? "qwen3_vl" : "standard";
    }
  }
  if (style == Vision::Gemma4 && top.has("audio_config")) {
    top.fail("audio_config", "an audio tower",
             "Gemma-4's audio encoder (the E2B / E4B checkpoints) is not counted; plan its "
             "text_config as model_type gemma4_text");
  }
  // An audio-only wrapper (Qwen2-Audio) builds no vision tower in vLLM: a vision_config there
  // is not read.
  const bool audio_only = wrapper != nullptr && wrapper->vision == Vision::None;
  if (style == Vision::DeepseekOcr) {
    add_deepseek_ocr(config, top, file, doc);
  } else if (style == Vision::Ovis25) {
    add_ovis2_5(config, top, file, doc);
  } else if (style == Vision::OpenVla) {
    doc["vision"] = {
        {"num_parameters", openvla_tower(top, doc["hidden_size"].get<std::int64_t>())}};
  } else if (style == Vision::MiniCpmV && minicpmv_version(top) == "2.0") {
    doc["vision"] = {
        {"num_parameters", minicpmv2_0_tower(top, doc["hidden_size"].get<std::int64_t>())}};
  } else if (style == Vision::Phi3V) {
    add_phi3v(config, top, file, doc);
  } else if (outer.has("vision_config") && !audio_only) {
    add_vision(body, outer, style, model_type, file, doc);
  } else if (style == Vision::Llava || style == Vision::PaliGemma || style == Vision::Idefics3 ||
             style == Vision::InternVit || style == Vision::InternVlHf || style == Vision::Blip2 ||
             style == Vision::Lfm2Vl || style == Vision::Glm4v || style == Vision::KimiK25 ||
             style == Vision::MiniCpmV || style == Vision::MiniCpmV46 ||
             style == Vision::Exaone45 || style == Vision::DotsOcr ||
             style == Vision::Gemma4Unified || style == Vision::Keye ||
             style == Vision::PaddleOcrVl || style == Vision::Cohere2Vision ||
             style == Vision::StepPe || style == Vision::Radio) {
    top.fail("vision_config", "missing",
             "the vision tower's sizes are needed to count it; write vision_config into "
             "config.json");
  }
  if (wrapper != nullptr && wrapper->audio != Audio::None) {
    add_audio(body, outer, wrapper->audio, file, doc);
  }
  // vLLM 0.33 applies Nemotron-H's float32 SSM-state default (NemotronHNanoVLV2Config) to the
  // NemotronH_Nano_VL_V2 architecture alone: the Omni architectures of the same class keep
  // mamba_ssm_cache_dtype auto, the conv state's dtype.
  if (style == Vision::Radio && doc.contains("mamba")) {
    const json* architectures = top.value("architectures");
    const bool v2 = architectures != nullptr && architectures->is_array() &&
                    !architectures->empty() && architectures->at(0) == "NemotronH_Nano_VL_V2";
    if (!v2) doc["mamba"]["ssm_state_dtype"] = "auto";
  }
  return doc;
}

std::string model_type_for_gguf(const std::string& gguf_architecture) {
  for (const Row& r : rows()) {
    const auto& names = r.info.gguf_architectures;
    if (std::find(names.begin(), names.end(), gguf_architecture) != names.end()) {
      return r.info.model_types.front();
    }
  }
  return "";
}

const std::vector<VllmArchitecture>& vllm_registry_architectures() {
  static const std::vector<VllmArchitecture> entries = [] {
    const std::string file = kArchitecturesFile;
    std::set<std::string> planned;
    for (const Row& r : rows()) {
      planned.insert(r.info.model_types.begin(), r.info.model_types.end());
      planned.insert(r.info.wrapper_model_types.begin(), r.info.wrapper_model_types.end());
    }
    YAML::Node root;
    try {
      root = YAML::Load(only_section(architectures_yaml(), "vllm_registry"));
    } catch (const YAML::Exception& e) {
      throw SpecError(file, "line " + std::to_string(e.mark.line + 1), "YAML text", e.msg);
    }
    const YAML::Node list = root["vllm_registry"];
    if (!list.IsSequence()) throw SpecError(file, "vllm_registry", "missing", "expected a list");
    std::vector<VllmArchitecture> out;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string where = "vllm_registry[" + std::to_string(i) + "]";
      const YAML::Node n = list[i];
      if (!n.IsMap() || !n["architecture"].IsScalar() ||
          (n["model_type"].IsDefined() == n["refused"].IsDefined())) {
        throw SpecError(file, where, "an entry",
                        "expected architecture and exactly one of model_type, refused");
      }
      VllmArchitecture a;
      a.architecture = n["architecture"].Scalar();
      if (n["model_type"].IsDefined()) a.model_type = n["model_type"].Scalar();
      if (n["refused"].IsDefined()) a.refused_reason = n["refused"].Scalar();
      if (!seen.insert(a.architecture).second) {
        throw SpecError(file, where + ".architecture", a.architecture, "listed twice");
      }
      if (!a.model_type.empty() && planned.count(a.model_type) == 0) {
        throw SpecError(file, where + ".model_type", a.model_type,
                        "not a model_type of the architecture table");
      }
      if (a.model_type.empty() && a.refused_reason.empty()) {
        throw SpecError(file, where + ".refused", "empty", "a refusal needs its reason");
      }
      out.push_back(std::move(a));
    }
    return out;
  }();
  return entries;
}

std::string architectures_markdown() {
  std::ostringstream out;
  auto list = [](const std::vector<std::string>& items) {
    std::string s;
    for (const auto& i : items) s += (s.empty() ? "" : ", ") + ("`" + i + "`");
    return s.empty() ? std::string("—") : s;
  };
  auto text = [](const std::string& s) { return s.empty() ? std::string("—") : s; };
  out << "| family | model_type | multimodal model_type | GGUF architecture | transformers "
         "defaults | attention | MoE | vision tower | MTP |\n"
      << "|---|---|---|---|---|---|---|---|---|\n";
  // The transformers class whose defaults each model_type takes (config_class_defaults); a
  // model_type without one loads through remote code, whose defaults the table does not read.
  auto classes = [](const Row& r) {
    std::string names;
    for (const std::string& model_type : r.info.model_types) {
      const auto found = table().class_defaults.find(model_type);
      const std::string name = found != table().class_defaults.end()
                                   ? "`" + found->second.config_class + "`"
                                   : "remote code (" + model_type + ")";
      if (names.find(name) == std::string::npos) names += (names.empty() ? "" : ", ") + name;
    }
    return names;
  };
  for (const Row& r : rows()) {
    const ArchitectureInfo& a = r.info;
    out << "| " << a.family << " | " << list(a.model_types) << " | " << list(a.wrapper_model_types)
        << " | " << list(a.gguf_architectures) << " | " << classes(r) << " | " << a.attention
        << " | " << text(a.moe) << " | " << text(a.vision) << " | " << text(a.mtp) << " |\n";
  }
  out << "\n## The generic path: a model_type with no row\n\n"
         "A config whose `model_type` has no row above (and is not refused below) is planned as a "
         "standard decoder from the fields transformers standardised: `hidden_size`, "
         "`num_hidden_layers`, `num_attention_heads`, `num_key_value_heads`, `head_dim` (else "
         "hidden_size / heads), `intermediate_size`, `vocab_size`, `max_position_embeddings`, "
         "`tie_word_embeddings`, `torch_dtype` / `dtype`, `attention_bias` / `mlp_bias`, "
         "`partial_rotary_factor`, `layer_types` (`full_attention` / `sliding_attention`) with "
         "`sliding_window` (without `layer_types`, a window below max_position_embeddings slides "
         "every layer, unless `use_sliding_window` is false), and routed experts from "
         "`num_experts` (or `num_local_experts`), `num_experts_per_tok` and "
         "`moe_intermediate_size`. It assumes attention and an MLP (gated) or routed experts (no "
         "shared expert) in every layer, two RMSNorms per layer and no q/k norms. KV bytes per "
         "token come from those fields; the weights are exact from the safetensors headers "
         "where vramplan reads them (a local folder, the Hugging Face cache, the Hub), else "
         "from the fields. Every output (text, JSON, Python, HTML) says \"generic: model_type X "
         "is not mapped; assumed ...\", with the assumptions and where the weights came "
         "from.\n\nA key that signals a layout the generic path cannot size refuses the config "
         "by the key's name (null, false, 0, an empty list, and a layer step of 1 signal "
         "nothing); so do per-layer sizes written as lists, a `layer_types` entry other than "
         "full / sliding attention, a `sliding_window_pattern` without `layer_types`, and "
         "`max_window_layers` with `use_sliding_window` true:\n\n"
         "| key | layout it signals |\n|---|---|\n";
  for (const UnsizedKey& u : kUnsizedKeys) {
    out << "| `" << u.key << (u.prefix ? "*" : "") << "` | " << u.layout << " |\n";
  }
  out << "\n## Refused, with why\n\n| model_type | why |\n|---|---|\n";
  for (const RefusedArchitecture& r : refused_architectures()) {
    out << "| `" << r.model_type << "` | " << r.reason << " |\n";
  }
  out << "\n## vLLM 0.33 architecture registry\n\nEvery text- and multimodal-generation "
         "architecture in vLLM 0.33.0's registry (a config.json's `architectures` entry), from "
         "`model_specs/architectures.yaml`: planned through a `model_type` above, or refused.\n\n"
         "| architecture | planned as model_type | refused, why |\n|---|---|---|\n";
  for (const VllmArchitecture& a : vllm_registry_architectures()) {
    out << "| `" << a.architecture << "` | "
        << (a.model_type.empty() ? std::string("—") : "`" + a.model_type + "`") << " | "
        << (a.refused_reason.empty() ? std::string("—") : a.refused_reason) << " |\n";
  }
  return out.str();
}

}  // namespace vramplan
