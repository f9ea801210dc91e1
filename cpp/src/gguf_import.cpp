#include "vramplan/gguf_import.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"

namespace vramplan {
namespace {

using nlohmann::json;

// llama.cpp tensor name (after "blk.N.") -> our tensor role; "" for tensors never quantized
// by a format choice (norms), nullptr-like "?" for names we do not know.
std::string role_of(const std::string& name) {
  static const std::map<std::string, std::string> kRoles = {
      {"token_embd", "embedding"},
      {"output", "lm_head"},
      {"attn_q", "attn_q"},
      {"attn_k", "attn_kv"},
      {"attn_v", "attn_kv"},
      {"attn_output", "attn_o"},
      {"ffn_gate", "mlp_gate_up"},
      {"ffn_up", "mlp_gate_up"},
      {"ffn_down", "mlp_down"},
      {"ffn_gate_exps", "expert_gate_up"},
      {"ffn_up_exps", "expert_gate_up"},
      {"ffn_down_exps", "expert_down"},
      {"ffn_gate_shexp", "shared_expert_gate_up"},
      {"ffn_up_shexp", "shared_expert_gate_up"},
      {"ffn_down_shexp", "shared_expert_down"},
      {"ffn_gate_inp", "router"}};
  std::string base = name;
  if (base.rfind("blk.", 0) == 0) {
    const std::size_t dot = base.find('.', 4);
    base = dot == std::string::npos ? "" : base.substr(dot + 1);
  }
  const std::size_t suffix = base.rfind('.');
  if (suffix != std::string::npos) base = base.substr(0, suffix);  // ".weight" / ".bias"
  const auto it = kRoles.find(base);
  return it != kRoles.end() ? it->second : "";
}

bool has_tensor(const GgufHeader& h, const std::string& name) {
  for (const auto& t : h.tensors) {
    if (t.name == name) return true;
  }
  return false;
}

const TensorInfo* find_tensor(const GgufHeader& h, const std::string& name) {
  for (const auto& t : h.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace

ModelSpec model_spec_from_gguf(const GgufHeader& h) {
  const std::string file = h.file;
  const std::string arch = h.architecture().value_or("");
  static const std::set<std::string> kArchitectures = {"llama",    "mistral",  "qwen2",  "qwen3",
                                                       "qwen2moe", "qwen3moe", "phi3",   "gemma",
                                                       "gemma2",   "gemma3",   "granite"};
  if (!kArchitectures.count(arch)) {
    throw SpecError(file, "general.architecture", arch.empty() ? "missing" : arch,
                    "unknown cache layout; supported: llama, mistral, qwen2, qwen3, qwen2moe, "
                    "qwen3moe, phi3, gemma, gemma2, gemma3, granite");
  }
  auto required = [&](const std::string& key) {
    const auto v = h.get_int(arch + "." + key);
    if (!v || *v <= 0) {
      throw SpecError(file, arch + "." + key, v ? std::to_string(*v) : "missing",
                      "required positive integer");
    }
    return *v;
  };
  auto optional = [&](const std::string& key, std::int64_t fallback) {
    return h.get_int(arch + "." + key).value_or(fallback);
  };
  json doc;
  doc["id"] = h.get_string("general.name").value_or(file);
  doc["source"] = file;
  doc["model_type"] = arch == "qwen2moe"   ? "qwen2_moe"
                      : arch == "qwen3moe" ? "qwen3_moe"
                      : arch == "gemma3"   ? "gemma3_text"
                                           : arch;
  const std::int64_t hidden = required("embedding_length");
  const std::int64_t heads = required("attention.head_count");
  doc["hidden_size"] = hidden;
  doc["num_hidden_layers"] = required("block_count");
  doc["num_attention_heads"] = heads;
  // head_count_kv may be a per-layer array in recent files; a uniform one is accepted.
  std::int64_t kv_heads = heads;
  if (const GgufValue* v = h.find(arch + ".attention.head_count_kv")) {
    if (v->is_array()) {
      if (!v->items_stored || v->items.empty()) {
        throw SpecError(file, arch + ".attention.head_count_kv", "array", "unreadable array");
      }
      kv_heads = v->items.front().as_int().value_or(-1);
      for (const auto& item : v->items) {
        if (item.as_int().value_or(-2) != kv_heads) {
          throw SpecError(file, arch + ".attention.head_count_kv", "per-layer values",
                          "layers with different KV head counts are not expressible");
        }
      }
    } else {
      kv_heads = v->as_int().value_or(-1);
    }
    if (kv_heads <= 0)
      throw SpecError(file, arch + ".attention.head_count_kv", "", "must be positive");
  }
  doc["num_key_value_heads"] = kv_heads;
  const std::int64_t head_dim = optional("attention.key_length", hidden / heads);
  doc["head_dim"] = head_dim;
  doc["intermediate_size"] = required("feed_forward_length");
  std::int64_t vocab = optional("vocab_size", 0);
  if (vocab == 0) {
    const GgufValue* tokens = h.find("tokenizer.ggml.tokens");
    if (tokens != nullptr && tokens->is_array()) vocab = static_cast<std::int64_t>(tokens->length);
  }
  if (const TensorInfo* embd = find_tensor(h, "token_embd.weight")) {
    if (!embd->shape.empty()) vocab = embd->shape.front();  // rows of the embedding
  }
  if (vocab <= 0)
    throw SpecError(file, "tokenizer.ggml.tokens", "missing", "vocabulary size unknown");
  doc["vocab_size"] = vocab;
  doc["max_position_embeddings"] = required("context_length");
  doc["tie_word_embeddings"] = !has_tensor(h, "output.weight");
  doc["torch_dtype"] = "bfloat16";  // vLLM serves the dequantized parts in the model dtype
  const std::int64_t rope = optional("rope.dimension_count", head_dim);
  if (rope != head_dim) doc["rotary_dim"] = rope;
  if (has_tensor(h, "blk.0.attn_q.bias")) doc["qkv_bias"] = true;
  if (has_tensor(h, "blk.0.attn_output.bias")) doc["o_proj_bias"] = true;
  if (has_tensor(h, "blk.0.attn_q_norm.weight")) doc["qk_norm"] = true;
  const std::int64_t window = optional("attention.sliding_window", 0);
  if (arch == "gemma2" || arch == "gemma3") {
    doc["norms_per_layer"] = 4;
    json pattern = arch == "gemma2"
                       ? json::array({"sliding_attention", "full_attention"})
                       : json::array({"sliding_attention", "sliding_attention", "sliding_attention",
                                      "sliding_attention", "sliding_attention", "full_attention"});
    doc["layer_pattern"] = pattern;
    if (window <= 0)
      throw SpecError(file, arch + ".attention.sliding_window", "missing", "required");
    doc["sliding_window"] = window;
  }
  const std::int64_t experts = optional("expert_count", 0);
  if (experts > 0) {
    json moe = {{"num_experts", experts},
                {"num_experts_per_tok", required("expert_used_count")},
                {"moe_intermediate_size", optional("expert_feed_forward_length",
                                                   doc["intermediate_size"].get<std::int64_t>())},
                {"router_quantizable", arch == "qwen3moe"}};
    if (const TensorInfo* shared = find_tensor(h, "blk.0.ffn_up_shexp.weight")) {
      moe["num_shared_experts"] = 1;
      moe["shared_expert_intermediate_size"] = shared->shape.empty() ? 0 : shared->shape.front();
      moe["shared_expert_gate"] = has_tensor(h, "blk.0.ffn_gate_inp_shexp.weight");
    }
    doc["moe"] = moe;
  }
  // The storage types: per role the type holding most bytes; the overall majority as default.
  std::map<std::string, std::map<std::string, std::int64_t>> bytes_by_role;
  std::map<std::string, std::int64_t> bytes_by_type;
  for (const auto& t : h.tensors) {
    const std::string role = role_of(t.name);
    if (role.empty() || t.shape.size() < 2) continue;
    const std::string type(dtype_info(t.dtype).name);
    bytes_by_role[role][type] += t.bytes;
    bytes_by_type[type] += t.bytes;
  }
  auto majority = [](const std::map<std::string, std::int64_t>& counts) {
    std::string best;
    std::int64_t most = -1;
    for (const auto& [type, bytes] : counts) {
      if (bytes > most) {
        most = bytes;
        best = type;
      }
    }
    return best;
  };
  if (bytes_by_type.empty())
    throw SpecError(file, "tensors", "none", "no weight tensors in the file");
  json types = {{"default", majority(bytes_by_type)}};
  for (const auto& [role, counts] : bytes_by_role) {
    const std::string type = majority(counts);
    if (type != types["default"]) types[role] = type;
  }
  doc["quantization"] = {{"method", "gguf"}, {"gguf_types", types}};
  ModelSpec spec = parse_model_spec_yaml(doc.dump(), file);
  // Layers whose types differ from their role's majority (llama.cpp's mixes) are exact
  // through the file's own byte count.
  spec.checkpoint_bytes = h.tensor_bytes();
  return spec;
}

}  // namespace vramplan
