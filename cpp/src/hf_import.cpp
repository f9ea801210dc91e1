#include "vramplan/hf_import.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"

namespace vramplan {
namespace {

using nlohmann::json;

constexpr std::uintmax_t kMaxConfigBytes = 16u << 20;
constexpr std::int64_t kMaxDimension = std::int64_t{1} << 40;  // absurd above this

// Reads fields of one config object, naming "<prefix><key>" in errors.
class Fields {
 public:
  Fields(const json& object, std::string file, std::string prefix)
      : object_(object), file_(std::move(file)), prefix_(std::move(prefix)) {}

  bool has(const char* key) const { return object_.contains(key) && !object_.at(key).is_null(); }

  [[noreturn]] void fail(const char* key, const std::string& value,
                         const std::string& problem) const {
    throw SpecError(file_, prefix_ + key, value, problem);
  }

  std::int64_t integer(const char* key) const {
    if (!has(key)) fail(key, "missing", "required field is missing");
    return integer_value(key, object_.at(key));
  }
  std::int64_t integer_or(const char* key, std::int64_t fallback) const {
    return has(key) ? integer_value(key, object_.at(key)) : fallback;
  }
  double number_or(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    const json& v = object_.at(key);
    if (!v.is_number()) fail(key, v.dump(), "expected a number");
    return v.get<double>();
  }
  bool boolean_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& v = object_.at(key);
    if (!v.is_boolean()) fail(key, v.dump(), "expected true or false");
    return v.get<bool>();
  }
  std::string string_or(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    const json& v = object_.at(key);
    if (!v.is_string()) fail(key, v.dump(), "expected a string");
    return v.get<std::string>();
  }
  const json& at(const char* key) const { return object_.at(key); }

 private:
  std::int64_t integer_value(const char* key, const json& v) const {
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
      if (std::isfinite(d) && d >= 0 && d <= static_cast<double>(kMaxDimension) &&
          d == std::floor(d)) {
        return static_cast<std::int64_t>(d);
      }
    }
    fail(key, v.dump(), "expected a non-negative integer");
  }

  const json& object_;
  std::string file_;
  std::string prefix_;
};

// Families whose decoder and KV cache layout this importer knows.
const std::set<std::string>& dense_families() {
  static const std::set<std::string> kinds = {"llama",       "mistral",    "qwen2",      "qwen3",
                                              "phi3",        "granite",    "gemma",      "gemma2",
                                              "gemma3_text", "olmo2",      "internlm2",  "exaone",
                                              "cohere",      "starcoder2", "llama4_text"};
  return kinds;
}

std::string supported_list() {
  return "llama, mistral, qwen2, qwen3, phi3, granite, gemma, gemma2, gemma3, mixtral, "
         "qwen2_moe, qwen3_moe, qwen3_next, deepseek_v2, deepseek_v3, gpt_oss, llama4, "
         "nemotron_h";
}

json dtype_name(const Fields& f) {
  // Newer transformers write "dtype"; older "torch_dtype".
  std::string dtype = f.string_or("torch_dtype", f.string_or("dtype", "bfloat16"));
  if (dtype.rfind("torch.", 0) == 0) dtype = dtype.substr(6);
  return dtype;
}

// ViT-style encoder + projector parameters from vision_config (SigLIP in Gemma-3): per layer
// qkv/o with biases, two-matrix MLP with biases, two LayerNorms; patch and position embeddings;
// post-LayerNorm; a projector to the text width plus its norm.
std::int64_t vision_parameters(const json& vision, std::int64_t text_hidden,
                               const std::string& file) {
  const Fields v(vision, file, "vision_config.");
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
  return layers * per_layer + channels * patch * patch * h + h + positions * h + 2 * h +
         h * text_hidden + h;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A module a quantization config leaves unquantized, as a tensor role: "" when the role is
// never quantized anyway (norms, embeddings), nullopt-like "?" when it cannot be expressed.
std::string unquantized_role(const std::string& module, const std::string& method) {
  if (module == "lm_head") return "lm_head";
  if (ends_with(module, "layernorm") || ends_with(module, "norm") ||
      ends_with(module, "embed_tokens")) {
    return "";
  }
  if (ends_with(module, "mlp.gate") || ends_with(module, "mlp.router")) return "router";
  if (method == "mxfp4" && ends_with(module, "self_attn")) return "";  // MXFP4 is experts-only
  return "?";
}

// Adds the roles of a config's ignore list to out["unquantized"]; an entry naming a module
// the spec cannot keep unquantized on its own (one layer's projection) fails closed.
void add_unquantized(const Fields& q, const char* key, const std::string& method, json& out) {
  const json& list = q.at(key);
  if (!list.is_array()) q.fail(key, list.dump().substr(0, 80), "expected a list of module names");
  if (!out.contains("unquantized")) out["unquantized"] = json::array();
  json& roles = out["unquantized"];
  for (const auto& m : list) {
    if (!m.is_string()) q.fail(key, m.dump(), "expected module names");
    const std::string role = unquantized_role(m.get<std::string>(), method);
    if (role == "?") q.fail(key, m.get<std::string>(), "module not expressible as a tensor role");
    if (!role.empty() && std::find(roles.begin(), roles.end(), role) == roles.end()) {
      roles.push_back(role);
    }
  }
}

json quantization_document(const json& config, const json* modelopt, const std::string& file) {
  if (modelopt != nullptr) {
    const Fields root(*modelopt, file, "hf_quant_config.");
    if (!root.has("quantization") || !root.at("quantization").is_object()) {
      root.fail("quantization", "missing", "expected the ModelOpt quantization object");
    }
    const Fields q(root.at("quantization"), file, "hf_quant_config.quantization.");
    const std::string algo = q.string_or("quant_algo", "");
    json out;
    if (algo == "FP8") {
      out = {{"method", "fp8"}, {"scale_strategy", "tensor"}, {"static_activation_scale", true}};
    } else if (algo == "NVFP4") {
      out = {{"method", "nvfp4"}, {"group_size", 16}};
    } else {
      q.fail("quant_algo", algo, "ModelOpt algorithm not supported (FP8, NVFP4)");
    }
    json unquantized = json::array();
    if (q.has("exclude_modules")) {
      for (const auto& m : q.at("exclude_modules")) {
        if (!m.is_string()) q.fail("exclude_modules", m.dump(), "expected module names");
        const std::string name = m.get<std::string>();
        if (name == "lm_head") {
          unquantized.push_back("lm_head");
        } else {
          q.fail("exclude_modules", name, "excluded module not expressible as a tensor role");
        }
      }
    }
    out["unquantized"] = unquantized;
    return out;
  }
  const Fields root(config, file, "");
  if (!root.has("quantization_config")) return json();
  const json& qc = root.at("quantization_config");
  if (!qc.is_object()) root.fail("quantization_config", qc.dump(), "expected an object");
  const Fields q(qc, file, "quantization_config.");
  const std::string method = q.string_or("quant_method", "");
  json out;
  if (method == "fp8") {
    if (q.has("weight_block_size")) {
      const json& block = q.at("weight_block_size");
      if (!block.is_array() || block.size() != 2 || !block[0].is_number_integer() ||
          !block[1].is_number_integer() || block[0].get<std::int64_t>() <= 0 ||
          block[1].get<std::int64_t>() <= 0) {
        q.fail("weight_block_size", block.dump(), "expected [n, k] positive integers");
      }
      // Block-fp8 checkpoints (DeepSeek, Qwen) store routers and lm_head in bf16.
      out = {{"method", "fp8"},
             {"block_size", block},
             {"unquantized", json::array({"lm_head", "router"})}};
    } else {
      out = {{"method", "fp8"},
             {"scale_strategy", "tensor"},
             {"static_activation_scale", q.string_or("activation_scheme", "dynamic") == "static"}};
    }
  } else if (method == "awq") {
    out = {{"method", "awq"},
           {"bits", q.integer_or("bits", q.integer_or("w_bit", 4))},
           {"group_size", q.integer_or("group_size", q.integer_or("q_group_size", 128))},
           {"sym", !q.boolean_or("zero_point", true)}};
    if (out["bits"] != 4) q.fail("bits", out["bits"].dump(), "AWQ is 4-bit");
  } else if (method == "gptq") {
    const std::int64_t group =
        q.has("group_size") ? static_cast<std::int64_t>(q.number_or("group_size", 128)) : 128;
    out = {{"method", "gptq"},
           {"bits", q.integer("bits")},
           {"group_size", group},
           {"desc_act", q.boolean_or("desc_act", false)},
           {"sym", q.boolean_or("sym", true)}};
  } else if (method == "mxfp4") {
    out = {{"method", "mxfp4"}};
  } else if (method == "bitsandbytes") {
    if (q.boolean_or("load_in_4bit", false)) {
      if (q.string_or("bnb_4bit_quant_type", "nf4") != "nf4") {
        q.fail("bnb_4bit_quant_type", q.string_or("bnb_4bit_quant_type", ""),
               "only nf4 is modelled");
      }
      out = {{"method", "bnb_nf4"},
             {"double_quant", q.boolean_or("bnb_4bit_use_double_quant", false)}};
    } else if (q.boolean_or("load_in_8bit", false)) {
      out = {{"method", "bnb_int8"}};
    } else {
      q.fail("load_in_4bit", "false", "bitsandbytes config loads neither 4-bit nor 8-bit");
    }
  } else if (method == "compressed-tensors") {
    if (!q.has("config_groups") || !q.at("config_groups").is_object() ||
        q.at("config_groups").size() != 1) {
      q.fail("config_groups",
             q.has("config_groups") ? q.at("config_groups").dump().substr(0, 200) : "missing",
             "expected exactly one quantization group");
    }
    const json& group = q.at("config_groups").begin().value();
    const Fields g(group, file, "quantization_config.config_groups.*.");
    if (!g.has("weights") || !g.at("weights").is_object())
      g.fail("weights", "missing", "expected the weight scheme");
    const Fields w(g.at("weights"), file, "quantization_config.config_groups.*.weights.");
    const std::int64_t bits = w.integer("num_bits");
    const std::string type = w.string_or("type", "int");
    const std::string strategy = w.string_or("strategy", "tensor");
    const bool activations = g.has("input_activations");
    if (type == "float" && bits == 8) {
      out = {{"method", "fp8"}, {"scale_strategy", strategy == "channel" ? "channel" : "tensor"}};
      if (activations && g.at("input_activations").is_object()) {
        const Fields a(g.at("input_activations"), file,
                       "quantization_config.config_groups.*.input_activations.");
        out["static_activation_scale"] = !a.boolean_or("dynamic", true);
      }
    } else if (type == "int" && bits == 8 && activations) {
      out = {{"method", "int8"}, {"scale_strategy", strategy == "channel" ? "channel" : "tensor"}};
    } else if (type == "int" && (bits == 4 || bits == 8)) {
      out = {{"method", "packed_wna16"},
             {"bits", bits},
             {"group_size", w.integer_or("group_size", 128)},
             {"sym", w.boolean_or("symmetric", true)}};
    } else {
      w.fail("num_bits", std::to_string(bits) + " " + type,
             "compressed-tensors scheme not modelled");
    }
    if (q.has("ignore")) add_unquantized(q, "ignore", method, out);
  } else {
    q.fail("quant_method", method.empty() ? "missing" : method,
           "quantization not supported (fp8, awq, gptq, mxfp4, bitsandbytes, compressed-tensors, "
           "ModelOpt via hf_quant_config.json)");
  }
  if (q.has("modules_to_not_convert")) add_unquantized(q, "modules_to_not_convert", method, out);
  return out;
}

}  // namespace

json hf_config_to_spec_document(const json& config, const json* quant_config,
                                const std::string& source) {
  if (!config.is_object())
    throw SpecError(source, "<root>", config.type_name(), "config.json must be an object");
  const Fields top(config, source, "");
  const std::string model_type = top.string_or("model_type", "");
  if (model_type.empty()) top.fail("model_type", "missing", "required to know the cache layout");
  const bool nested = top.has("text_config");
  if (nested && !config.at("text_config").is_object())
    top.fail("text_config", "not an object", "expected an object");
  const json& text = nested ? config.at("text_config") : config;
  const Fields f(text, source, nested ? "text_config." : "");
  std::string family = model_type;
  if (family == "gemma3" || family == "llama4" || family == "mistral3") {
    family = f.string_or("model_type", family + "_text");
  }

  static const std::set<std::string> kSpecial = {"mixtral",    "qwen2_moe",   "qwen3_moe",
                                                 "qwen3_next", "deepseek_v2", "deepseek_v3",
                                                 "gpt_oss",    "nemotron_h"};
  if (!dense_families().count(family) && !kSpecial.count(family)) {
    top.fail("model_type", model_type,
             "unknown cache layout; supported model types: " + supported_list());
  }

  json doc;
  doc["id"] = top.string_or("_name_or_path", source);
  doc["source"] = source;
  doc["model_type"] = family;
  const std::int64_t hidden = f.integer("hidden_size");
  const std::int64_t layers = f.integer("num_hidden_layers");
  const std::int64_t heads = f.integer("num_attention_heads");
  if (hidden <= 0 || layers <= 0 || heads <= 0) {
    f.fail(hidden <= 0   ? "hidden_size"
           : layers <= 0 ? "num_hidden_layers"
                         : "num_attention_heads",
           "0", "must be positive");
  }
  if (layers > 100000) f.fail("num_hidden_layers", std::to_string(layers), "absurd layer count");
  doc["hidden_size"] = hidden;
  doc["num_hidden_layers"] = layers;
  doc["num_attention_heads"] = heads;
  doc["num_key_value_heads"] = f.integer_or("num_key_value_heads", heads);
  std::int64_t head_dim = f.integer_or("head_dim", f.integer_or("attention_head_dim", 0));
  if (head_dim == 0) {
    if (hidden % heads != 0)
      f.fail("head_dim", "missing", "hidden_size is not a multiple of num_attention_heads");
    head_dim = hidden / heads;
  }
  doc["head_dim"] = head_dim;
  doc["intermediate_size"] = f.integer_or("intermediate_size_mlp", f.integer("intermediate_size"));
  const std::int64_t vocab = f.integer("vocab_size");
  if (vocab <= 0) f.fail("vocab_size", std::to_string(vocab), "must be positive");
  doc["vocab_size"] = vocab;
  // vLLM derives max_model_len from max_position_embeddings (rope_scaling already folded in
  // by the checkpoints in use: Llama-3.1 131072, DeepSeek-V3 163840 = 4096 x yarn 40).
  doc["max_position_embeddings"] = f.integer("max_position_embeddings");
  doc["tie_word_embeddings"] =
      top.boolean_or("tie_word_embeddings", f.boolean_or("tie_word_embeddings", false));
  doc["torch_dtype"] = dtype_name(nested && !f.has("torch_dtype") && !f.has("dtype") ? top : f);

  const double partial_rotary = f.number_or("partial_rotary_factor", 1.0);
  if (partial_rotary <= 0 || partial_rotary > 1) {
    f.fail("partial_rotary_factor", std::to_string(partial_rotary), "expected (0, 1]");
  }
  if (partial_rotary < 1.0)
    doc["rotary_dim"] = static_cast<std::int64_t>(head_dim * partial_rotary);

  const bool attention_bias = f.boolean_or("attention_bias", false);
  if (family == "qwen2" || family == "qwen2_moe") {
    doc["qkv_bias"] = true;
  } else if (attention_bias) {
    doc["qkv_bias"] = true;
    doc["o_proj_bias"] = true;
  }
  if (f.boolean_or("mlp_bias", false)) doc["mlp_bias"] = true;
  if (family == "qwen3" || family == "qwen3_moe" || family == "qwen3_next" ||
      family == "gemma3_text") {
    doc["qk_norm"] = true;
  }
  if (family == "gemma2" || family == "gemma3_text") doc["norms_per_layer"] = 4;

  // Sliding windows: explicit layer_types win; Gemma patterns; Qwen only when enabled.
  const bool qwen = family.rfind("qwen", 0) == 0;
  const bool window_enabled = qwen ? f.boolean_or("use_sliding_window", false) : true;
  const std::int64_t window = f.integer_or("sliding_window", 0);
  if (f.has("layer_types")) {
    const json& types = f.at("layer_types");
    if (!types.is_array()) f.fail("layer_types", types.dump().substr(0, 80), "expected a list");
    if (static_cast<std::int64_t>(types.size()) != layers) {
      f.fail("layer_types", std::to_string(types.size()) + " entries",
             "must have num_hidden_layers entries");
    }
    for (const auto& t : types) {
      if (!t.is_string() || (t != "full_attention" && t != "sliding_attention")) {
        f.fail("layer_types", t.dump(), "unknown layer type (full_attention, sliding_attention)");
      }
    }
    doc["layer_types"] = types;
    if (window > 0) doc["sliding_window"] = window;
  } else if (family == "gemma2") {
    doc["layer_pattern"] = {"sliding_attention", "full_attention"};
    doc["sliding_window"] = window;
  } else if (family == "gemma3_text") {
    const std::int64_t pattern = f.integer_or("sliding_window_pattern", 6);
    json kinds = json::array();
    for (std::int64_t i = 0; i + 1 < pattern; ++i) kinds.push_back("sliding_attention");
    kinds.push_back("full_attention");
    doc["layer_pattern"] = kinds;
    doc["sliding_window"] = window;
  } else if (window > 0 && window_enabled &&
             window < doc["max_position_embeddings"].get<std::int64_t>() &&
             family != "llama4_text" && family != "nemotron_h") {
    doc["sliding_window"] = window;
    doc["layer_pattern"] = {"sliding_attention"};
  }

  // Mixture of experts, per family.
  json moe;
  if (family == "mixtral") {
    moe = {{"num_experts", f.integer("num_local_experts")},
           {"num_experts_per_tok", f.integer("num_experts_per_tok")},
           {"moe_intermediate_size", f.integer("intermediate_size")}};
  } else if (family == "qwen2_moe" || family == "qwen3_moe" || family == "qwen3_next") {
    moe = {{"num_experts", f.integer("num_experts")},
           {"num_experts_per_tok", f.integer("num_experts_per_tok")},
           {"moe_intermediate_size", f.integer("moe_intermediate_size")},
           {"router_quantizable", family == "qwen3_moe"}};
    const std::int64_t shared = f.integer_or("shared_expert_intermediate_size", 0);
    if (shared > 0) {
      moe["num_shared_experts"] = 1;
      moe["shared_expert_intermediate_size"] = shared;
      moe["shared_expert_gate"] = true;
    }
    const std::int64_t step = f.integer_or("decoder_sparse_step", 1);
    if (step != 1) moe["moe_layer_step"] = step;
    if (f.has("mlp_only_layers") && !f.at("mlp_only_layers").empty())
      moe["dense_layers"] = f.at("mlp_only_layers");
  } else if (family == "deepseek_v2" || family == "deepseek_v3") {
    moe = {{"num_experts", f.integer("n_routed_experts")},
           {"num_experts_per_tok", f.integer("num_experts_per_tok")},
           {"moe_intermediate_size", f.integer("moe_intermediate_size")},
           {"num_shared_experts", f.integer_or("n_shared_experts", 0)},
           {"first_k_dense", f.integer_or("first_k_dense_replace", 0)}};
    if (f.integer_or("moe_layer_freq", 1) != 1) moe["moe_layer_step"] = f.integer("moe_layer_freq");
    if (f.string_or("topk_method", "") == "noaux_tc") moe["router_bias"] = true;
    doc["mla"] = {{"q_lora_rank", f.integer_or("q_lora_rank", 0)},
                  {"kv_lora_rank", f.integer("kv_lora_rank")},
                  {"qk_nope_head_dim", f.integer("qk_nope_head_dim")},
                  {"qk_rope_head_dim", f.integer("qk_rope_head_dim")},
                  {"v_head_dim", f.integer("v_head_dim")}};
  } else if (family == "gpt_oss") {
    moe = {{"num_experts", f.integer("num_local_experts")},
           {"num_experts_per_tok", f.integer("num_experts_per_tok")},
           {"moe_intermediate_size", f.integer("intermediate_size")},
           {"expert_bias", true},
           {"router_bias", true}};
    doc["attention_sinks"] = true;
  } else if (family == "llama4_text") {
    const std::int64_t experts = f.integer("num_local_experts");
    moe = {{"num_experts", experts},
           {"num_experts_per_tok", f.integer("num_experts_per_tok")},
           {"moe_intermediate_size", f.integer("intermediate_size")},
           {"num_shared_experts", 1},
           {"shared_expert_intermediate_size", f.integer("intermediate_size")}};
    const std::int64_t step = f.integer_or("interleave_moe_layer_step", 1);
    if (step != 1) moe["moe_layer_step"] = step;
    // Local layers attend within chunks; every no_rope_layers-th (default 4th) is global.
    const std::int64_t chunk = f.integer_or("attention_chunk_size", 0);
    if (chunk > 0) {
      doc["attention_chunk_size"] = chunk;
      doc["layer_pattern"] = {"chunked_attention", "chunked_attention", "chunked_attention",
                              "full_attention"};
    }
  }
  if (!moe.is_null()) doc["moe"] = moe;

  if (family == "qwen3_next") {
    doc["attn_output_gate"] = true;
    const std::int64_t interval = f.integer("full_attention_interval");
    if (interval <= 0 || interval > layers)
      f.fail("full_attention_interval", std::to_string(interval), "out of range");
    json kinds = json::array();
    for (std::int64_t i = 0; i + 1 < interval; ++i) kinds.push_back("linear_attention");
    kinds.push_back("full_attention");
    doc["layer_pattern"] = kinds;
    doc["linear_attention"] = {{"num_key_heads", f.integer("linear_num_key_heads")},
                               {"key_head_dim", f.integer("linear_key_head_dim")},
                               {"num_value_heads", f.integer("linear_num_value_heads")},
                               {"value_head_dim", f.integer("linear_value_head_dim")},
                               {"conv_kernel", f.integer_or("linear_conv_kernel_dim", 4)}};
  }
  if (family == "nemotron_h") {
    if (!f.has("hybrid_override_pattern"))
      f.fail("hybrid_override_pattern", "missing", "required for nemotron_h");
    doc["hybrid_override_pattern"] = f.string_or("hybrid_override_pattern", "");
    doc["mlp"] = "plain";
    doc["norms_per_layer"] = 1;
    doc["mamba"] = {{"num_heads", f.integer("mamba_num_heads")},
                    {"head_dim", f.integer("mamba_head_dim")},
                    {"state_size", f.integer("ssm_state_size")},
                    {"n_groups", f.integer_or("n_groups", 1)},
                    {"conv_kernel", f.integer_or("conv_kernel", 4)}};
  }
  if (f.integer_or("num_nextn_predict_layers", 0) > 0) {
    doc["num_nextn_predict_layers"] = f.integer("num_nextn_predict_layers");
  }
  if (top.has("vision_config")) {
    if (!config.at("vision_config").is_object())
      top.fail("vision_config", "not an object", "expected an object");
    doc["vision"] = {
        {"num_parameters", vision_parameters(config.at("vision_config"), hidden, source)}};
  }
  const json quant = quantization_document(config, quant_config, source);
  if (!quant.is_null()) doc["quantization"] = quant;
  return doc;
}

ModelSpec model_spec_from_hf_config(const json& config, const json* quant_config,
                                    const std::string& source) {
  const json doc = hf_config_to_spec_document(config, quant_config, source);
  // JSON is YAML: the schema parser validates and expands it like a hand-written spec.
  return parse_model_spec_yaml(doc.dump(), source);
}

namespace {

// Python's json writes Infinity / -Infinity / NaN (Nemotron-H time_step_limit); strict JSON
// has no such tokens. Outside strings they become a large finite number or null.
std::string replace_nonfinite_tokens(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
    } else if (text.compare(i, 8, "Infinity") == 0) {
      out += "1e308";
      i += 7;
    } else if (text.compare(i, 3, "NaN") == 0) {
      out += "null";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

json read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw ParseError(path.string(), 0, "cannot read the file (" + ec.message() + ")");
  if (size > kMaxConfigBytes) {
    throw ParseError(path.string(), 0,
                     "file of " + std::to_string(size) + " bytes exceeds the 16 MiB limit");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = replace_nonfinite_tokens(buffer.str());
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw ParseError(path.string(), static_cast<std::int64_t>(e.byte),
                     "not valid JSON: " + std::string(e.what()));
  }
}

}  // namespace

ModelSpec load_hf_config(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path config_path(path);
  fs::path quant_path;
  if (fs::is_directory(config_path, ec)) {
    quant_path = config_path / "hf_quant_config.json";
    config_path /= "config.json";
  } else {
    // A sibling "<stem>.hf_quant_config.json" (copies) or hf_quant_config.json in the folder.
    const std::string stem = config_path.stem().string();
    const fs::path sibling = config_path.parent_path() / (stem + ".hf_quant_config.json");
    quant_path =
        fs::exists(sibling, ec) ? sibling : config_path.parent_path() / "hf_quant_config.json";
    if (config_path.filename() != "config.json" && !fs::exists(sibling, ec)) quant_path.clear();
  }
  if (!fs::is_regular_file(config_path, ec)) {
    throw ConfigError("model", config_path.string(), "a config.json file", "no such file");
  }
  const json config = read_json_file(config_path);
  json quant;
  const bool has_quant = !quant_path.empty() && fs::is_regular_file(quant_path, ec);
  if (has_quant) quant = read_json_file(quant_path);
  return model_spec_from_hf_config(config, has_quant ? &quant : nullptr, config_path.string());
}

}  // namespace vramplan
