// llama.cpp's allocation, per device: model buffers from the GGUF tensor list under -ngl and
// --n-cpu-moe, KV buffers from the cache shape, a compute-buffer approximation, and the solver.
// Rules from model_specs/llamacpp.yaml (read from llama.cpp's source, cited there).
#include "vramplan/llamacpp.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vramplan/errors.hpp"
#include "vramplan/llamacpp_yaml.hpp"
#include "vramplan/model_spec.hpp"
#include "yaml_load.hpp"

namespace vramplan {

namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

struct SwaPattern {
  std::int64_t n_pattern = 0;
  bool dense_first = false;
};

struct LlamacppRules {
  std::int64_t context_padding = 0;
  std::int64_t swa_cache_padding = 0;
  std::int64_t cuda_buffer_alignment = 0;
  std::int64_t cuda_matrix_row_padding = 0;
  std::int64_t host_buffer_alignment = 0;
  std::vector<std::string> cache_types;
  std::map<std::string, SwaPattern> swa_patterns;
  LlamacppDefaults defaults;
};

constexpr const char* kRulesFile = "model_specs/llamacpp.yaml";

std::int64_t positive_int(const YAML::Node& root, const std::string& key) {
  const YAML::Node node = root[key];
  if (!node || !node.IsScalar()) throw SpecError(kRulesFile, key, "missing", "a positive integer");
  const auto value = node.as<std::int64_t>();
  if (value <= 0) throw SpecError(kRulesFile, key, node.Scalar(), "a positive integer");
  return value;
}

const LlamacppRules& rules() {
  static const LlamacppRules table = [] {
    const YAML::Node root = load_yaml_checked(detail::kLlamacppYaml, kRulesFile);
    LlamacppRules r;
    r.context_padding = positive_int(root, "context_padding");
    r.swa_cache_padding = positive_int(root, "swa_cache_padding");
    r.cuda_buffer_alignment = positive_int(root, "cuda_buffer_alignment");
    r.cuda_matrix_row_padding = positive_int(root, "cuda_matrix_row_padding");
    r.host_buffer_alignment = positive_int(root, "host_buffer_alignment");
    for (const YAML::Node& type : root["cache_types"]) r.cache_types.push_back(type.Scalar());
    if (!root["source"] || !root["source"].IsScalar()) {
      throw SpecError(kRulesFile, "source", "missing", "the llama.cpp release read");
    }
    r.defaults = {root["source"].Scalar(), r.cache_types,
                  positive_int(root, "fit_target_mib") * kMiB,
                  positive_int(root, "server_auto_parallel")};
    for (const auto& entry : root["swa_patterns"]) {
      SwaPattern pattern{entry.second["n_pattern"].as<std::int64_t>(),
                         entry.second["dense_first"].as<bool>()};
      r.swa_patterns[entry.first.Scalar()] = pattern;
    }
    return r;
  }();
  return table;
}

std::int64_t pad_to(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// ggml_row_size for `elements` values of `type` (whole blocks; llama.cpp asserts divisibility).
std::int64_t row_bytes(DType type, std::int64_t elements) {
  const DTypeInfo& info = dtype_info(type);
  return elements / info.block_elements * info.block_bytes;
}

// ggml-cuda's get_alloc_size for a tensor of `nbytes` whose innermost dimension is `ne0`,
// aligned as the CUDA buffer aligns each tensor.
std::int64_t cuda_alloc_bytes(DType type, std::int64_t nbytes, std::int64_t ne0) {
  const LlamacppRules& r = rules();
  std::int64_t size = nbytes;
  if (dtype_info(type).block_elements > 1 && ne0 % r.cuda_matrix_row_padding != 0) {
    size += row_bytes(type, r.cuda_matrix_row_padding - ne0 % r.cuda_matrix_row_padding);
  }
  return pad_to(size, r.cuda_buffer_alignment);
}

std::string arch_key(const std::string& arch, const std::string& key) { return arch + "." + key; }

std::int64_t required_int(const GgufHeader& header, const std::string& key) {
  const std::optional<std::int64_t> value = header.get_int(key);
  if (!value || *value <= 0) {
    throw SpecError(header.file, key, value ? std::to_string(*value) : "missing",
                    "a positive integer (llama.cpp reads it to size its buffers)");
  }
  return *value;
}

// A per-layer key that is either one integer or an array with one per layer.
std::vector<std::int64_t> per_layer_ints(const GgufHeader& header, const std::string& key,
                                         std::int64_t n_layer, std::int64_t fallback) {
  std::vector<std::int64_t> values(static_cast<std::size_t>(n_layer), fallback);
  const GgufValue* value = header.find(key);
  if (value == nullptr) return values;
  if (!value->is_array()) {
    const std::optional<std::int64_t> one = value->as_int();
    if (!one || *one < 0) throw SpecError(header.file, key, "not a count", "an integer >= 0");
    std::fill(values.begin(), values.end(), *one);
    return values;
  }
  if (!value->items_stored || static_cast<std::int64_t>(value->items.size()) != n_layer) {
    throw SpecError(header.file, key, "array of " + std::to_string(value->length),
                    "one value per layer (" + std::to_string(n_layer) + ")");
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::optional<std::int64_t> one = value->items[i].as_int();
    const std::optional<bool> flag = value->items[i].as_bool();
    if (!one && !flag) throw SpecError(header.file, key, "a non-integer", "integers per layer");
    values[i] = one ? *one : (*flag ? 1 : 0);
  }
  return values;
}

std::vector<bool> swa_layers(const GgufHeader& header, const std::string& arch,
                             std::int64_t n_layer) {
  std::vector<bool> swa(static_cast<std::size_t>(n_layer), false);
  const std::string key = arch_key(arch, "attention.sliding_window_pattern");
  const GgufValue* value = header.find(key);
  if (value != nullptr && value->is_array()) {
    const std::vector<std::int64_t> flags = per_layer_ints(header, key, n_layer, 0);
    for (std::size_t i = 0; i < swa.size(); ++i) swa[i] = flags[i] != 0;
    return swa;
  }
  SwaPattern pattern;
  const auto known = rules().swa_patterns.find(arch);
  if (known != rules().swa_patterns.end()) pattern = known->second;
  if (value != nullptr) pattern.n_pattern = value->as_int().value_or(pattern.n_pattern);
  if (known == rules().swa_patterns.end() && value == nullptr) {
    // An architecture with a window but no pattern: llama.cpp's n_pattern 0 (every layer SWA).
    std::fill(swa.begin(), swa.end(), true);
    return swa;
  }
  for (std::int64_t il = 0; il < n_layer; ++il) {
    const std::int64_t n = pattern.n_pattern;
    swa[static_cast<std::size_t>(il)] =
        n == 0 || (pattern.dense_first ? il % n != 0 : il % n < n - 1);
  }
  return swa;
}

// Hybrids whose recurrent state follows llama_hparams' Mamba-style n_embd_r / n_embd_s, and
// how each marks its recurrent layers (src/models/<arch>.cpp load_arch_hparams).
bool hybrid_by_zero_kv_heads(const std::string& arch) {
  return arch == "granitehybrid" || arch == "jamba";
}
bool hybrid_by_attention_interval(const std::string& arch) {
  return arch == "qwen3next" || arch == "qwen35" || arch == "qwen35moe";
}

void refuse_unmodelled(const GgufHeader& header, const std::string& arch) {
  const auto refuse = [&](const std::string& what) {
    throw ConfigError("architecture", "'" + arch + "' (" + header.file + ")",
                      "attention models with a per-layer K/V cache, and the hybrids "
                      "granitehybrid, jamba, qwen3next, qwen35, qwen35moe",
                      what + " is not modelled for llama.cpp yet");
  };
  if (header.find(arch_key(arch, "attention.kv_lora_rank")) != nullptr) refuse("MLA");
  const bool hybrid = hybrid_by_zero_kv_heads(arch) || hybrid_by_attention_interval(arch);
  if (header.find(arch_key(arch, "wkv.head_size")) != nullptr ||
      (header.find(arch_key(arch, "ssm.state_size")) != nullptr && !hybrid)) {
    refuse("this recurrent state");
  }
  if (arch == "gemma3n" || arch == "gemma4") refuse("KV shared across layers");
}

// Which layers hold recurrent state and its size per sequence, as llama_hparams computes it:
// n_embd_r = (d_conv - 1) x (d_inner + 2 x n_group x d_state), n_embd_s = d_state x d_inner.
void read_recurrent(const GgufHeader& header, LlamacppModel& m) {
  const std::string& arch = m.architecture;
  const auto n = static_cast<std::size_t>(m.n_layer);
  m.recurrent_layer.assign(n, false);
  if (hybrid_by_zero_kv_heads(arch)) {
    for (std::size_t i = 0; i < n; ++i) m.recurrent_layer[i] = m.n_head_kv[i] == 0;
  } else if (hybrid_by_attention_interval(arch)) {
    const std::string listed = arch_key(arch, "attention.recurrent_layers");
    if (header.find(listed) != nullptr) {
      const std::vector<std::int64_t> flags = per_layer_ints(header, listed, m.n_layer, 0);
      for (std::size_t i = 0; i < n; ++i) m.recurrent_layer[i] = flags[i] != 0;
    } else {
      const std::int64_t interval = required_int(header, arch_key(arch, "full_attention_interval"));
      for (std::size_t i = 0; i < n; ++i) {
        m.recurrent_layer[i] = (static_cast<std::int64_t>(i) + 1) % interval != 0;
      }
    }
  } else {
    return;
  }
  const auto key = [&](const std::string& k) { return arch_key(arch, k); };
  const std::int64_t d_conv = required_int(header, key("ssm.conv_kernel"));
  const std::int64_t d_inner = required_int(header, key("ssm.inner_size"));
  const std::int64_t d_state = required_int(header, key("ssm.state_size"));
  const std::int64_t n_group = header.get_int(key("ssm.group_count")).value_or(0);
  m.n_embd_r = (d_conv - 1) * (d_inner + 2 * n_group * d_state);
  m.n_embd_s = d_state * d_inner;
}

LlamacppTensor placed_tensor(const TensorInfo& info) {
  static const std::regex kBlock(R"(^blk\.(\d+)\.)");
  static const std::regex kExpert(R"(\.ffn_(up|down|gate|gate_up)_(ch|)exps)");
  LlamacppTensor t;
  t.name = info.name;
  t.bytes = info.bytes;
  t.file_offset = info.offset;
  std::smatch match;
  if (std::regex_search(info.name, match, kBlock)) t.layer = std::stoi(match[1].str());
  t.is_output = info.name.rfind("output.", 0) == 0 || info.name.rfind("output_norm.", 0) == 0;
  t.per_layer = info.name.rfind("rope_freqs.", 0) == 0;
  t.is_expert = t.layer >= 0 && std::regex_search(info.name, kExpert);
  const std::int64_t ne0 = info.shape.empty() ? 1 : info.shape.back();
  t.cuda_bytes = cuda_alloc_bytes(info.dtype, info.bytes, ne0);
  t.host_bytes = pad_to(info.bytes, rules().host_buffer_alignment);
  return t;
}

}  // namespace

const LlamacppDefaults& llamacpp_defaults() { return rules().defaults; }

std::string llamacpp_type_name(DType type) {
  std::string name(dtype_info(type).name);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

DType llamacpp_cache_type(const std::string& name) {
  std::string allowed;
  for (const std::string& type : rules().cache_types) {
    if (type == name) {
      if (const std::optional<DType> dtype = parse_dtype(name)) return *dtype;
    }
    allowed += (allowed.empty() ? "" : ", ") + type;
  }
  throw ConfigError("--cache-type-k/--cache-type-v", "'" + name + "'", allowed,
                    "not a KV cache type llama.cpp accepts");
}

LlamacppModel llamacpp_model_from_gguf(const GgufHeader& header) {
  LlamacppModel m;
  m.file = header.file;
  const std::optional<std::string> arch = header.architecture();
  if (!arch) throw SpecError(header.file, "general.architecture", "missing", "an architecture");
  m.architecture = *arch;
  refuse_unmodelled(header, m.architecture);
  const auto key = [&](const std::string& k) { return arch_key(m.architecture, k); };
  m.n_layer = required_int(header, key("block_count"));
  m.n_layer_nextn = header.get_int(key("nextn_predict_layers")).value_or(0);
  if (m.n_layer_nextn < 0 || m.n_layer_nextn >= m.n_layer) {
    throw SpecError(header.file, key("nextn_predict_layers"), std::to_string(m.n_layer_nextn),
                    "fewer than block_count (" + std::to_string(m.n_layer) + ")");
  }
  m.n_ctx_train = required_int(header, key("context_length"));
  m.n_embd = required_int(header, key("embedding_length"));
  const std::vector<std::int64_t> heads =
      per_layer_ints(header, key("attention.head_count"), m.n_layer, 0);
  m.n_head = *std::max_element(heads.begin(), heads.end());
  if (m.n_head <= 0) {
    throw SpecError(header.file, key("attention.head_count"), "missing", "a positive integer");
  }
  m.n_head_kv = per_layer_ints(header, key("attention.head_count_kv"), m.n_layer, m.n_head);
  m.head_dim_k = header.get_int(key("attention.key_length")).value_or(m.n_embd / m.n_head);
  m.head_dim_v = header.get_int(key("attention.value_length")).value_or(m.n_embd / m.n_head);
  m.n_ff = header.get_int(key("feed_forward_length")).value_or(0);
  m.n_expert = header.get_int(key("expert_count")).value_or(0);
  m.n_swa = header.get_int(key("attention.sliding_window")).value_or(0);
  m.swa_layer = m.n_swa > 0 ? swa_layers(header, m.architecture, m.n_layer)
                            : std::vector<bool>(static_cast<std::size_t>(m.n_layer), false);
  bool has_output = false;
  for (const TensorInfo& info : header.tensors) {
    m.tensors.push_back(placed_tensor(info));
    has_output = has_output || info.name == "output.weight";
    if (info.name == "token_embd.weight" && !info.shape.empty()) m.n_vocab = info.shape.front();
    if (m.tensors.back().layer >= m.n_layer) {
      throw SpecError(header.file, "tensor " + info.name, "layer out of range",
                      "blk.N with N < block_count (" + std::to_string(m.n_layer) + ")");
    }
  }
  m.tied_output = !has_output;
  read_recurrent(header, m);
  if (m.n_vocab == 0) {
    throw SpecError(header.file, "token_embd.weight", "missing", "the token embedding tensor");
  }
  return m;
}

namespace {

// GGUF's default general.alignment (gguf.c GGUF_DEFAULT_ALIGNMENT): each tensor's data starts on
// it.
constexpr std::int64_t kGgufAlignment = 32;

// Refuses what a database entry describes but the llama tensor list below does not build.
void refuse_spec(const ModelSpec& spec, const std::string& what) {
  throw ConfigError("model", "'" + spec.id + "' (" + spec.source + ")",
                    "a database GGUF entry of the llama architecture (model_type llama or "
                    "mistral: dense, full attention, gated MLP, no biases), or the .gguf file",
                    what + " is not built from a database entry for llama.cpp yet");
}

void check_llama_shaped(const ModelSpec& spec) {
  if (spec.quantization.method != QuantMethod::Gguf) {
    throw ConfigError(
        "model",
        "'" + spec.id + "' (quantization " + quant_method_name(spec.quantization.method) + ")",
        "a GGUF entry (quantization.method gguf) or a .gguf file", "llama.cpp loads GGUF files");
  }
  // convert_hf_to_gguf.py writes LlamaForCausalLM and MistralForCausalLM as general.architecture
  // llama.
  if (spec.model_type != "llama" && spec.model_type != "mistral") {
    refuse_spec(spec, "model_type '" + spec.model_type + "'");
  }
  const std::vector<std::pair<bool, const char*>> features = {
      {spec.has_moe, "MoE"},
      {spec.has_mla, "MLA"},
      {spec.has_mamba || spec.has_linear_attention || spec.has_short_conv, "a recurrent mixer"},
      {spec.vision.num_parameters > 0, "a vision tower"},
      {spec.num_nextn_predict_layers > 0, "MTP layers"},
      {spec.qkv_bias || spec.o_proj_bias || spec.mlp_bias || spec.mlp_down_bias, "biases"},
      {spec.qk_norm || spec.attn_output_gate || spec.attn_head_gate || spec.attention_sinks ||
           spec.share_q_dim > 0,
       "extra attention tensors"},
      {!spec.gated_mlp, "an ungated MLP"},
      {spec.per_layer_input_size > 0 || spec.position_embeddings > 0, "extra embeddings"},
      {spec.altup_num_inputs > 0 || spec.laurel_rank > 0, "AltUp / LAuReL blocks"}};
  for (const auto& [present, name] : features) {
    if (present) refuse_spec(spec, name);
  }
  for (const LayerSpec& layer : spec.layers) {
    if (layer.beside != AttentionKind::None) {
      refuse_spec(spec,
                  "a second cache beside the attention (a parallel Mamba2 mixer, a loop pass)");
    }
    if (layer.attention != AttentionKind::Full || !layer.mlp || layer.kv_shared ||
        (layer.intermediate_size != 0 && layer.intermediate_size != spec.intermediate_size) ||
        layer.num_attention_heads != 0) {
      refuse_spec(spec, std::string("a layer of ") + attention_kind_name(layer.attention) +
                            " attention or its own MLP width or query heads");
    }
  }
}

// The database's one GGUF type per role, as "default Q4_K, lm_head Q6_K, attn_kv Q5_K".
std::string gguf_types_text(const QuantSpec& q) {
  std::string text = "default " + std::string(dtype_info(q.gguf_types.at("default")).name);
  for (const auto& [role, type] : q.gguf_types) {
    if (role != "default") text += ", " + role + " " + std::string(dtype_info(type).name);
  }
  return text;
}

// Appends one tensor [rows, cols] of `type` at the next aligned offset, placed as the loader
// places a file's tensor.
class SpecTensorWriter {
 public:
  SpecTensorWriter(const ModelSpec& spec, LlamacppModel& model) : spec_(spec), model_(model) {}

  void add(const std::string& name, std::int64_t rows, std::int64_t cols, TensorRole role) {
    const auto& types = spec_.quantization.gguf_types;
    const auto it = types.find(tensor_role_name(role));
    const DType type = it != types.end() ? it->second : types.at("default");
    if (cols % dtype_info(type).block_elements != 0) {
      throw SpecError(spec_.source,
                      "quantization.gguf_types." + std::string(tensor_role_name(role)),
                      std::string(dtype_info(type).name),
                      "a type whose block divides the row of " + name + " (" +
                          std::to_string(cols) + " values)");
    }
    add_typed(name, rows, cols, type);
  }
  // 1-D tensors (norms) stay F32: llama.cpp's quantizer only quantizes 2-D weights.
  void add_norm(const std::string& name, std::int64_t width) {
    add_typed(name, 1, width, DType::F32);
  }

 private:
  void add_typed(const std::string& name, std::int64_t rows, std::int64_t cols, DType type) {
    TensorInfo info;
    info.name = name;
    info.dtype = type;
    info.shape =
        rows == 1 ? std::vector<std::int64_t>{cols} : std::vector<std::int64_t>{rows, cols};
    info.bytes = rows * row_bytes(type, cols);
    info.offset = offset_;
    offset_ = pad_to(offset_ + info.bytes, kGgufAlignment);
    model_.tensors.push_back(placed_tensor(info));
  }

  const ModelSpec& spec_;
  LlamacppModel& model_;
  std::int64_t offset_ = 0;
};

}  // namespace

LlamacppModel llamacpp_model_from_spec(const ModelSpec& spec) {
  check_llama_shaped(spec);
  LlamacppModel m;
  m.file = spec.id;
  m.architecture = "llama";
  m.n_layer = spec.num_hidden_layers;
  m.n_ctx_train = spec.max_position_embeddings;
  m.n_embd = spec.hidden_size;
  m.n_head = spec.num_attention_heads;
  m.n_ff = spec.intermediate_size;
  m.n_vocab = spec.vocab_size;
  m.head_dim_k = spec.head_dim > 0 ? spec.head_dim : m.n_embd / std::max<std::int64_t>(1, m.n_head);
  m.head_dim_v = m.head_dim_k;
  m.swa_layer.assign(static_cast<std::size_t>(m.n_layer), false);
  m.tied_output = spec.tie_word_embeddings;
  for (std::int64_t il = 0; il < m.n_layer; ++il) {
    const auto i = static_cast<std::size_t>(il);
    const std::int64_t heads = i < spec.layers.size() && spec.layers[i].num_key_value_heads > 0
                                   ? spec.layers[i].num_key_value_heads
                                   : spec.num_key_value_heads;
    m.n_head_kv.push_back(heads > 0 ? heads : m.n_head);
  }
  // The tensors llama.cpp's llama architecture loads (llm_build_llama's LLM_TENSOR_* set), in
  // the converter's order: token_embd, blk.0 .. blk.N-1, output_norm, output.
  const std::int64_t e = m.n_embd;
  const std::int64_t q = m.n_head * m.head_dim_k;
  SpecTensorWriter w(spec, m);
  w.add("token_embd.weight", m.n_vocab, e, TensorRole::Embedding);
  for (std::int64_t il = 0; il < m.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const std::int64_t kv = m.n_head_kv[static_cast<std::size_t>(il)] * m.head_dim_k;
    w.add_norm(p + "attn_norm.weight", e);
    w.add(p + "attn_q.weight", q, e, TensorRole::AttnQ);
    w.add(p + "attn_k.weight", kv, e, TensorRole::AttnKV);
    w.add(p + "attn_v.weight", kv, e, TensorRole::AttnKV);
    w.add(p + "attn_output.weight", e, q, TensorRole::AttnO);
    w.add_norm(p + "ffn_norm.weight", e);
    w.add(p + "ffn_gate.weight", m.n_ff, e, TensorRole::MlpGateUp);
    w.add(p + "ffn_up.weight", m.n_ff, e, TensorRole::MlpGateUp);
    w.add(p + "ffn_down.weight", e, m.n_ff, TensorRole::MlpDown);
  }
  w.add_norm("output_norm.weight", e);
  if (!m.tied_output) w.add("output.weight", m.n_vocab, e, TensorRole::LmHead);
  m.approximation = "tensors built from the database entry '" + spec.id +
                    "' with one GGUF type per role (" + gguf_types_text(spec.quantization) +
                    ", norms F32), which stands in for the file's per-layer type mix, and no "
                    "rope_freqs: model buffers are approximate; plan the .gguf file for "
                    "llama.cpp's exact figures";
  return m;
}

std::int64_t llamacpp_kv_tensor_bytes(DType type, std::int64_t width, std::int64_t cells,
                                      std::int64_t streams, bool cuda) {
  const std::int64_t nbytes = row_bytes(type, width) * cells * streams;
  return cuda ? cuda_alloc_bytes(type, nbytes, width)
              : pad_to(nbytes, rules().host_buffer_alignment);
}

namespace {

// Context, streams and the SWA cache as llama_context and llama_kv_cache_iswa resolve them.
void resolve_context(const LlamacppModel& model, const LlamacppLaunch& launch,
                     LlamacppMemory& out) {
  const std::int64_t pad = rules().context_padding;
  const std::int64_t n_seq = std::max<std::int64_t>(1, launch.parallel);
  const std::int64_t requested = launch.ctx_size == 0 ? model.n_ctx_train : launch.ctx_size;
  const std::int64_t n_batch = std::min(requested, launch.batch);
  out.n_ubatch = std::min(n_batch, launch.ubatch == 0 ? n_batch : launch.ubatch);
  out.n_ctx = pad_to(requested, pad);
  if (launch.kv_unified) {
    out.n_ctx_seq = out.n_ctx;
    out.n_stream = 1;
  } else {
    out.n_ctx_seq = pad_to(out.n_ctx / n_seq, pad);
    out.n_ctx = out.n_ctx_seq * n_seq;
    out.n_stream = n_seq;
  }
  const std::int64_t swa_cells = model.n_swa * (launch.kv_unified ? n_seq : 1) + out.n_ubatch;
  out.kv_size_swa = launch.swa_full
                        ? out.n_ctx_seq
                        : pad_to(std::min(out.n_ctx_seq, swa_cells), rules().swa_cache_padding);
}

// Which device (true: the GPU) holds repeating layer `il`, or the output layer at il = n_layer.
bool layer_on_gpu(std::int64_t il, std::int64_t n_layer, std::int64_t n_gpu_layers) {
  const std::int64_t i_gpu_start = std::max<std::int64_t>(n_layer + 1 - n_gpu_layers, 0);
  const std::int64_t act = std::min(n_gpu_layers, n_layer + 1);
  return il >= i_gpu_start && il - i_gpu_start < act;
}

// The GPU (index into -ts) holding layer il, or -1 for the CPU: with -sm layer llama.cpp puts
// offloaded layer il on the first GPU whose cumulative split share exceeds
// (il - i_gpu_start) / act_gpu_layers (llama_model::load_tensors, std::upper_bound).
std::vector<int> layer_devices(std::int64_t n_layer, std::int64_t n_gpu_layers,
                               const std::vector<double>& tensor_split) {
  // In float, as llama.cpp sums and normalizes them, so that a layer on a boundary lands alike.
  std::vector<float> splits(tensor_split.begin(), tensor_split.end());
  if (splits.empty()) splits.push_back(1.0F);
  float sum = 0.0F;
  for (float& share : splits) {
    sum += share;
    share = sum;
  }
  for (float& share : splits) share /= sum;
  const std::int64_t i_gpu_start = std::max<std::int64_t>(n_layer + 1 - n_gpu_layers, 0);
  const std::int64_t act = std::min(n_gpu_layers, n_layer + 1);
  std::vector<int> device(static_cast<std::size_t>(n_layer + 1), -1);
  for (std::int64_t il = 0; il <= n_layer; ++il) {
    if (!layer_on_gpu(il, n_layer, n_gpu_layers)) continue;
    const float at = static_cast<float>(il - i_gpu_start) / static_cast<float>(act);
    const auto next = std::upper_bound(splits.begin(), splits.end(), at);
    device[static_cast<std::size_t>(il)] = static_cast<int>(std::min<std::ptrdiff_t>(
        next - splits.begin(), static_cast<std::ptrdiff_t>(splits.size()) - 1));
  }
  return device;
}

void place_weights(const LlamacppModel& model, const LlamacppLaunch& launch,
                   const std::vector<int>& device, LlamacppMemory& out) {
  const std::int64_t n_layer = model.n_layer;
  bool cpu_has_layer = false;
  for (std::int64_t il = 0; il < n_layer; ++il) {
    const int dev = device[static_cast<std::size_t>(il)];
    if (dev < 0) {
      cpu_has_layer = true;
    } else {
      ++out.gpus[static_cast<std::size_t>(dev)].layers;
    }
  }
  const int output_dev = device[static_cast<std::size_t>(n_layer)];
  std::int64_t span_begin = INT64_MAX;
  std::int64_t span_end = 0;
  std::int64_t cpu_alloc = 0;
  const auto on_cpu = [&](const LlamacppTensor& t) {
    out.host_weight_bytes += t.bytes;
    cpu_alloc += t.host_bytes;
    span_begin = std::min(span_begin, t.file_offset);
    span_end = std::max(span_end, t.file_offset + t.bytes);
  };
  const auto on_gpu = [&](const LlamacppTensor& t, int dev) {
    out.gpus[static_cast<std::size_t>(dev)].model_bytes += t.cuda_bytes;
    out.gpu_model_bytes += t.cuda_bytes;
  };
  for (const LlamacppTensor& t : model.tensors) {
    if (t.per_layer) {
      // One copy in each buffer type that holds a layer (TENSOR_DUPLICATED for il > 0).
      for (std::size_t d = 0; d < out.gpus.size(); ++d) {
        if (out.gpus[d].layers > 0) on_gpu(t, static_cast<int>(d));
      }
      if (cpu_has_layer) on_cpu(t);
      continue;
    }
    int dev = -1;
    if (t.layer >= 0) {
      const bool expert_on_cpu = t.is_expert && t.layer < launch.n_cpu_moe;
      dev = expert_on_cpu ? -1 : device[static_cast<std::size_t>(t.layer)];
    } else if (t.is_output) {
      dev = output_dev;
    }
    if (dev >= 0) {
      on_gpu(t, dev);
    } else {
      on_cpu(t);
    }
    // Tied output: token_embd is duplicated into the output layer's buffer when that is a GPU.
    if (model.tied_output && t.name == "token_embd.weight" && output_dev >= 0) {
      on_gpu(t, output_dev);
    }
  }
  out.host_model_bytes =
      launch.no_mmap ? cpu_alloc : (span_end > span_begin ? span_end - span_begin : 0);
}

void place_kv(const LlamacppModel& model, const LlamacppLaunch& launch,
              const std::vector<int>& device, LlamacppMemory& out) {
  // The trunk's cache leaves out the NextN/MTP layers (llama_model::create_memory's filter).
  for (std::int64_t il = 0; il < model.n_layer - model.n_layer_nextn; ++il) {
    const auto i = static_cast<std::size_t>(il);
    const int dev = launch.no_kv_offload ? -1 : device[i];
    const bool gpu = dev >= 0;
    if (!model.recurrent_layer.empty() && model.recurrent_layer[i]) {
      // llama_memory_recurrent: r and s f32 tensors of max(1, -np) rows, on the layer's device.
      const std::int64_t rows = std::max<std::int64_t>(1, launch.parallel);
      const std::int64_t rs = llamacpp_kv_tensor_bytes(DType::F32, model.n_embd_r, rows, 1, gpu) +
                              llamacpp_kv_tensor_bytes(DType::F32, model.n_embd_s, rows, 1, gpu);
      if (gpu) {
        out.gpus[static_cast<std::size_t>(dev)].rs_bytes += rs;
        out.gpu_rs_bytes += rs;
      } else {
        out.host_rs_bytes += rs;
      }
      continue;
    }
    if (model.n_head_kv[i] == 0) continue;
    const std::int64_t cells = model.swa_layer[i] ? out.kv_size_swa : out.n_ctx_seq;
    const std::int64_t k = llamacpp_kv_tensor_bytes(
        launch.cache_type_k, model.head_dim_k * model.n_head_kv[i], cells, out.n_stream, gpu);
    const std::int64_t v = llamacpp_kv_tensor_bytes(
        launch.cache_type_v, model.head_dim_v * model.n_head_kv[i], cells, out.n_stream, gpu);
    if (gpu) {
      out.gpus[static_cast<std::size_t>(dev)].kv_bytes += k + v;
      out.gpu_kv_bytes += k + v;
    } else {
      out.host_kv_bytes += k + v;
    }
  }
}

// The graph allocator's peak (ggml-alloc.c: a tensor's memory is reused once its last consumer
// has run; norms, adds, softmax and activations run in place) for the graph llama_context
// reserves: n_ubatch tokens, every one an output, attending to the whole cache. The peak falls
// in one of three phases, each the f32 tensors alive at once, per token:
// - attention without flash attention: the KQ scores n_head x n_kv and the mask n_kv, with the
//   residual, the Q/K/V projections (n_embd_q + 2 n_embd_kv) and, for a fused QKV, the roped Q
//   copy and KQV; the pythia-2.8B record (162.00 MiB = 128 + 4 + 6 x 5) and the open-llama-7B
//   one at -c 2048 (164.00 MiB = 128 + 4 + 4 x 8, separate projections) are this phase exactly;
// - attention with flash attention: the same without the scores (the kernel's scratch lives in
//   the backend's own pool, not in this buffer);
// - the FFN: residual, norm, up and gate (2 n_embd + 2 n_ff);
// - the output (on the output's device): logits n_vocab plus the normed hidden state (the
//   pythia-2.8B flash-attention record, 103.25 MiB = 98.25 + 5, is this phase exactly).
// A GPU also runs the large-batch ops whose weights stay on the CPU (ggml-cuda's offload_op,
// batch >= 32): the weight is copied into its compute buffer while the op runs, so with the
// output on the CPU the first GPU's output phase holds the output matrix as well (pythia-2.8B
// at -ngl 10: 98.25 + 100.74 + 5 = 203.99 MiB).
// Whether attention projects Q, K and V in one matmul (blk.N.attn_qkv.weight); a model read from a
// log has no tensor list, so its architecture decides: those assumed to ship a fused attn_qkv
// (gptneox is the one a record checks; the others are not checked one by one).
bool fused_qkv(const LlamacppModel& model) {
  if (!model.tensors.empty()) {
    return std::any_of(model.tensors.begin(), model.tensors.end(), [](const LlamacppTensor& t) {
      return t.name.size() > 15 && t.name.compare(t.name.size() - 15, 15, "attn_qkv.weight") == 0;
    });
  }
  static const std::array<std::string_view, 11> kFusedArchitectures = {
      "gptneox", "bloom", "falcon", "mpt",  "gpt2",   "starcoder",
      "phi2",    "phi3",  "qwen",   "dbrx", "chatglm"};
  return std::find(kFusedArchitectures.begin(), kFusedArchitectures.end(), model.architecture) !=
         kFusedArchitectures.end();
}

void estimate_compute(const LlamacppModel& model, LlamacppMemory& out) {
  constexpr std::int64_t kF32 = 4;
  constexpr std::int64_t kOffloadMinBatch = 32;  // ggml-cuda GGML_OP_OFFLOAD_MIN_BATCH default
  const std::int64_t ub = out.n_ubatch;
  std::int64_t n_kv = 0;
  std::int64_t n_embd_kv = 0;
  for (std::size_t i = 0; i < model.n_head_kv.size(); ++i) {
    if (model.n_head_kv[i] == 0) continue;
    const bool swa = !model.swa_layer.empty() && model.swa_layer[i];
    n_kv = std::max(n_kv, swa ? out.kv_size_swa : out.n_ctx_seq);
    n_embd_kv =
        std::max(n_embd_kv, model.n_head_kv[i] * std::max(model.head_dim_k, model.head_dim_v));
  }
  const std::int64_t n_embd_q = model.n_head * model.head_dim_k;
  const std::int64_t n_embd_out = model.n_head * model.head_dim_v;
  const std::int64_t hidden = model.n_embd * ub * kF32;
  // Rows alive under the scores. A fused QKV output lives until its Q/K/V views are copied
  // out, below the roped Q copy and KQV (pythia-2.8B, 6 rows). Separate projections rope in
  // place (ggml-alloc reuses a lone parent): 4 rows, the residual, Q, K and V, as the
  // open-llama-7B record at -c 2048 prints (164.00 MiB = 128 + 4 + 4 x 8); a walk of the
  // allocator's reuse by hand finds 3, so that record, not the walk, sets the fourth.
  const std::int64_t attn_vectors =
      (fused_qkv(model) ? model.n_embd + n_embd_q + 2 * n_embd_kv + n_embd_q + n_embd_out
                        : model.n_embd + n_embd_q + 2 * n_embd_kv) *
      ub * kF32;
  const std::int64_t scores = out.flash_attn ? 0 : model.n_head * n_kv * ub * kF32;
  const std::int64_t attention = scores + n_kv * ub * kF32 + attn_vectors;
  const std::int64_t ffn = (2 * model.n_embd + 2 * model.n_ff) * ub * kF32;
  const std::int64_t layer_peak = std::max(attention, ffn);
  const std::int64_t output = model.n_vocab * ub * kF32 + hidden;
  // The largest CPU-resident weight a GPU op reads: the output matrix when it stays on the CPU.
  std::int64_t cpu_output_weight = 0;
  if (!out.output_on_gpu && ub >= kOffloadMinBatch) {
    for (const LlamacppTensor& t : model.tensors) {
      if (t.name == "output.weight" || (model.tied_output && t.name == "token_embd.weight")) {
        cpu_output_weight = std::max(cpu_output_weight, t.bytes);
      }
    }
  }
  bool first_gpu = true;
  for (LlamacppGpu& g : out.gpus) {
    // With the output on the CPU the first GPU runs the output ops even when it holds no layer.
    if (g.layers == 0 && !g.output && !(first_gpu && cpu_output_weight > 0)) continue;
    const std::int64_t own_output = g.output ? output : 0;
    const std::int64_t borrowed_output = first_gpu ? cpu_output_weight + output : 0;
    g.compute_bytes = std::max(
        {g.layers > 0 ? layer_peak : 0, own_output, cpu_output_weight > 0 ? borrowed_output : 0});
    out.gpu_compute_bytes += g.compute_bytes;
    first_gpu = false;
  }
  const bool cpu_work = out.layers_on_gpu < model.n_layer || !out.output_on_gpu;
  out.host_compute_bytes = cpu_work ? std::max(out.output_on_gpu ? 0 : output, layer_peak) : hidden;
}

}  // namespace

LlamacppMemory llamacpp_memory(const LlamacppModel& model, const LlamacppLaunch& launch) {
  if (launch.n_cpu_moe < 0 || launch.parallel < 1 || launch.ctx_size < 0 || launch.ubatch < 0 ||
      launch.batch < 1) {
    throw ConfigError("llama.cpp launch", "a negative -ncmoe, -c or -ub, or -np/-b below 1",
                      "-np >= 1, -b >= 1, -c/-ub/-ncmoe >= 0", "out of range");
  }
  const bool quantized_v = dtype_info(launch.cache_type_v).block_elements > 1;
  LlamacppMemory out;
  // auto resolves to on wherever the layer's device runs FLASH_ATTN_EXT (CUDA and the CPU do:
  // llama_context's fused-op probe); grok forces it off.
  out.flash_attn = launch.flash_attn == LlamacppFlashAttn::On ||
                   (launch.flash_attn == LlamacppFlashAttn::Auto && model.architecture != "grok");
  if (quantized_v && launch.flash_attn == LlamacppFlashAttn::Off) {
    throw ConfigError("--cache-type-v", llamacpp_type_name(launch.cache_type_v),
                      "f16, bf16 or f32 with --flash-attn off",
                      "llama.cpp: quantized V cache requires flash_attn to be enabled");
  }
  // llama_init_from_model: with flash attention not off, a quantized cache type's block has to
  // divide the head size (phi-2's 80 refuses q8_0 and q4_0).
  const auto check_blocks = [&](DType type, std::int64_t head_dim, const char* flag, char kv) {
    const std::int64_t block = dtype_info(type).block_elements;
    if (launch.flash_attn != LlamacppFlashAttn::Off && block > 1 && head_dim % block != 0) {
      throw ConfigError(
          flag, llamacpp_type_name(type), "a cache type whose block divides the head size, or f16",
          std::string("llama.cpp: ") + kv + " cache type with block size " + std::to_string(block) +
              " does not divide n_embd_head_" + kv + "=" + std::to_string(head_dim));
    }
  };
  check_blocks(launch.cache_type_k, model.head_dim_k, "--cache-type-k", 'k');
  check_blocks(launch.cache_type_v, model.head_dim_v, "--cache-type-v", 'v');
  resolve_context(model, launch, out);
  out.n_gpu_layers = launch.n_gpu_layers < 0 ? model.n_layer + 1
                                             : std::min(launch.n_gpu_layers, model.n_layer + 1);
  out.n_cpu_moe = launch.n_cpu_moe;
  for (const double share : launch.tensor_split) {
    if (!(share >= 0.0) || share > 1e12) {
      throw ConfigError("--tensor-split", std::to_string(share), "shares >= 0, not all 0",
                        "not a split llama.cpp takes");
    }
  }
  const bool all_zero = std::all_of(launch.tensor_split.begin(), launch.tensor_split.end(),
                                    [](double share) { return share == 0.0; });
  if (!launch.tensor_split.empty() && all_zero) {
    throw ConfigError("--tensor-split", "all 0", "shares >= 0, not all 0",
                      "llama.cpp then splits by free memory, which a plan does not know");
  }
  out.gpus.resize(std::max<std::size_t>(1, launch.tensor_split.size()));
  const std::vector<int> device =
      layer_devices(model.n_layer, out.n_gpu_layers, launch.tensor_split);
  out.output_on_gpu = device[static_cast<std::size_t>(model.n_layer)] >= 0;
  if (out.output_on_gpu) {
    out.gpus[static_cast<std::size_t>(device[static_cast<std::size_t>(model.n_layer)])].output =
        true;
  }
  for (std::int64_t il = 0; il < model.n_layer; ++il) {
    out.layers_on_gpu += device[static_cast<std::size_t>(il)] >= 0 ? 1 : 0;
  }
  place_weights(model, launch, device, out);
  place_kv(model, launch, device, out);
  estimate_compute(model, out);
  out.host_output_bytes = model.n_vocab * std::max<std::int64_t>(1, launch.parallel) * 4;
  const bool mapped_in_ram = launch.no_mmap || launch.mlock;
  out.host_ram_bytes = (mapped_in_ram ? out.host_model_bytes : 0) + out.host_kv_bytes +
                       out.host_rs_bytes + out.host_compute_bytes + out.host_output_bytes;
  if (!model.approximation.empty()) out.notes.push_back(model.approximation);
  out.notes.push_back(
      "compute buffers are a phase model of the graph allocator's peak (attention, FFN, "
      "output), dense models only: MoE routing and recurrent layers are not in it");
  if (!mapped_in_ram && out.host_model_bytes > 0) {
    out.notes.push_back("mmap: " + std::to_string(out.host_weight_bytes / kMiB) +
                        " MiB of CPU-resident weights live in the page cache, not counted in "
                        "host_ram_bytes; --mlock or --no-mmap pins them");
  }
  return out;
}

std::int64_t llamacpp_max_context(const LlamacppModel& model, const LlamacppLaunch& launch,
                                  std::int64_t gpu_budget_bytes) {
  // -c grows in steps of one padded cell block per stream, up to the trained context per stream.
  const std::int64_t streams = launch.kv_unified ? 1 : std::max<std::int64_t>(1, launch.parallel);
  const std::int64_t step = rules().context_padding * streams;
  const auto fits = [&](std::int64_t steps) {
    LlamacppLaunch trial = launch;
    trial.ctx_size = steps * step;
    return llamacpp_memory(model, trial).max_gpu_total_bytes() <= gpu_budget_bytes;
  };
  if (!fits(1)) return 0;
  std::int64_t lo = 1;
  std::int64_t hi = std::max<std::int64_t>(1, model.n_ctx_train * streams / step);
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo * step;
}

LlamacppFit llamacpp_solve(const LlamacppModel& model, const LlamacppLaunch& launch,
                           std::int64_t gpu_budget_bytes, bool pinned_ngl, bool pinned_n_cpu_moe) {
  LlamacppFit fit;
  fit.launch = launch;
  const auto fits_with = [&](std::int64_t ngl, std::int64_t n_cpu_moe) {
    LlamacppLaunch trial = launch;
    trial.n_gpu_layers = ngl;
    trial.n_cpu_moe = n_cpu_moe;
    return llamacpp_memory(model, trial).max_gpu_total_bytes() <= gpu_budget_bytes;
  };
  const std::int64_t all = model.n_layer + 1;
  std::int64_t ngl = pinned_ngl ? launch.n_gpu_layers : all;
  std::int64_t ncmoe = launch.n_cpu_moe;
  const bool moe = model.n_expert > 0 && !pinned_n_cpu_moe;
  if (moe && !fits_with(ngl, ncmoe)) {
    // Experts to the CPU first, layer by layer from the front (--n-cpu-moe), at full offload.
    std::int64_t lo = ncmoe;
    std::int64_t hi = model.n_layer;
    if (fits_with(ngl, hi)) {
      while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        if (fits_with(ngl, mid)) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      ncmoe = lo;
    } else {
      ncmoe = model.n_layer;
    }
  }
  if (!pinned_ngl && !fits_with(ngl, ncmoe)) {
    std::int64_t lo = 0;  // fits or nothing does
    std::int64_t hi = all;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo + 1) / 2;
      if (fits_with(mid, ncmoe)) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    ngl = lo;
  }
  fit.launch.n_gpu_layers = ngl < 0 ? all : ngl;
  fit.launch.n_cpu_moe = ncmoe;
  fit.memory = llamacpp_memory(model, fit.launch);
  fit.fits = fit.memory.max_gpu_total_bytes() <= gpu_budget_bytes;
  const std::int64_t on_cpu = model.n_layer - fit.memory.layers_on_gpu;
  fit.verdict = std::string(fit.fits ? "fits" : "does not fit") + ": -ngl " +
                std::to_string(fit.launch.n_gpu_layers) + " (" +
                std::to_string(fit.memory.layers_on_gpu) + "/" + std::to_string(model.n_layer) +
                " layers" + (fit.memory.output_on_gpu ? " + output" : "") + " on the GPU, " +
                std::to_string(on_cpu) + " on the CPU)" +
                (model.n_expert > 0 ? ", --n-cpu-moe " + std::to_string(ncmoe) : "") +
                (fit.memory.gpus.size() > 1 ? ", fullest GPU " : ", GPU ") +
                std::to_string(fit.memory.max_gpu_total_bytes() / kMiB) + " of " +
                std::to_string(gpu_budget_bytes / kMiB) + " MiB";
  return fit;
}

}  // namespace vramplan
