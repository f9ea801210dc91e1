#include "vramplan/gguf_import.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "vramplan/architectures.hpp"
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

std::string gguf_architecture_list() {
  std::string out;
  for (const ArchitectureInfo& a : architecture_infos()) {
    for (const auto& name : a.gguf_architectures) out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

}  // namespace

ModelSpec model_spec_from_gguf(const GgufHeader& h) {
  const std::string file = h.file;
  const std::string arch = h.architecture().value_or("");
  const std::int64_t experts = h.get_int(arch + ".expert_count").value_or(0);
  // llama.cpp files Mixtral under "llama" with experts; the table's row for the rest.
  const std::string model_type =
      arch == "llama" && experts > 0 ? "mixtral" : model_type_for_gguf(arch);
  if (model_type.empty()) {
    throw SpecError(file, "general.architecture", arch.empty() ? "missing" : arch,
                    "unknown architecture; GGUF architectures with a row in the architecture "
                    "table: " +
                        gguf_architecture_list());
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
  // The GGUF metadata, written as the config.json keys the architecture table reads.
  json config;
  config["model_type"] = model_type;
  config["_name_or_path"] = h.get_string("general.name").value_or(file);
  const std::int64_t hidden = required("embedding_length");
  const std::int64_t heads = required("attention.head_count");
  config["hidden_size"] = hidden;
  config["num_hidden_layers"] = required("block_count");
  config["num_attention_heads"] = heads;
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
  config["num_key_value_heads"] = kv_heads;
  const std::int64_t head_dim = optional("attention.key_length", hidden / heads);
  config["head_dim"] = head_dim;
  const std::int64_t ffn = required("feed_forward_length");
  config["intermediate_size"] = ffn;
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
  config["vocab_size"] = vocab;
  config["max_position_embeddings"] = required("context_length");
  config["tie_word_embeddings"] = !has_tensor(h, "output.weight");
  config["torch_dtype"] = "bfloat16";  // vLLM serves the dequantized parts in the model dtype
  const std::int64_t window = optional("attention.sliding_window", 0);
  if (window > 0) config["sliding_window"] = window;
  if (experts > 0) {
    const std::int64_t expert_ffn = optional("expert_feed_forward_length", ffn);
    config["num_experts"] = experts;
    config["num_local_experts"] = experts;
    config["n_routed_experts"] = experts;
    config["num_experts_per_tok"] = required("expert_used_count");
    config["moe_intermediate_size"] = expert_ffn;
    config["n_shared_experts"] = optional("expert_shared_count", 0);
    config["first_k_dense_replace"] = optional("leading_dense_block_count", 0);
    if (const TensorInfo* shared = find_tensor(h, "blk.0.ffn_up_shexp.weight")) {
      if (!shared->shape.empty()) config["shared_expert_intermediate_size"] = shared->shape.front();
    }
  }
  if (model_type == "deepseek_v2") {
    const std::int64_t rope = required("rope.dimension_count");
    config["kv_lora_rank"] = required("attention.kv_lora_rank");
    config["q_lora_rank"] = optional("attention.q_lora_rank", 0);
    config["qk_rope_head_dim"] = rope;
    config["qk_nope_head_dim"] = head_dim - rope;
    config["v_head_dim"] = required("attention.value_length");
  }
  json doc = architecture_spec_document(config, file);
  // The tensor table is the truth for optional tensors the metadata does not state.
  const std::int64_t rope = optional("rope.dimension_count", head_dim);
  if (rope != head_dim && model_type != "deepseek_v2") doc["rotary_dim"] = rope;
  if (has_tensor(h, "blk.0.attn_q.bias")) doc["qkv_bias"] = true;
  if (has_tensor(h, "blk.0.attn_output.bias")) doc["o_proj_bias"] = true;
  if (has_tensor(h, "blk.0.attn_q_norm.weight")) doc["qk_norm"] = true;
  if (doc.contains("moe") && doc["moe"].contains("num_shared_experts") &&
      !doc["moe"].contains("shared_expert_gate")) {
    doc["moe"]["shared_expert_gate"] = has_tensor(h, "blk.0.ffn_gate_inp_shexp.weight");
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
