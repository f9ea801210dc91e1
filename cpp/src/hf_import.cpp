#include "vramplan/hf_import.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "vramplan/architectures.hpp"
#include "vramplan/bounded_read.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"

namespace vramplan {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxConfigBytes = 16 << 20;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A module a quantization config leaves unquantized, as a tensor role: "" when the role is
// never quantized anyway (norms, embeddings), nullopt-like "?" when it cannot be expressed.
std::string unquantized_role(const std::string& entry, const std::string& method) {
  // compressed-tensors writes patterns as "re:<regex>"; the common ones name a module suffix.
  std::string module = entry;
  if (module.rfind("re:", 0) == 0) module = module.substr(3);
  while (!module.empty() && (module.back() == '$' || module.back() == '*' || module.back() == '.'))
    module.pop_back();
  if (module == "lm_head" || ends_with(module, ".lm_head")) return "lm_head";
  if (ends_with(module, "layernorm") || ends_with(module, "norm") ||
      ends_with(module, "embed_tokens") || ends_with(module, "shared_expert_gate")) {
    return "";
  }
  // The vision tower and projector are counted unquantized in any case.
  for (const char* tower :
       {"vision_tower", "vision_model", "multi_modal_projector", "visual", "mm_projector"}) {
    if (module.find(tower) != std::string::npos) return "";
  }
  if (ends_with(module, "mlp.gate") || ends_with(module, "mlp.router") ||
      ends_with(module, "block_sparse_moe.gate")) {
    return "router";
  }
  if (method == "mxfp4" && ends_with(module, "self_attn")) return "";  // MXFP4 is experts-only
  return "?";
}

// Adds the roles of a config's ignore list to out["unquantized"]; an entry naming a module
// the spec cannot keep unquantized on its own (one layer's projection) fails closed.
void add_unquantized(const ConfigFields& q, const char* key, const std::string& method, json& out) {
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
    const ConfigFields root(*modelopt, file, "hf_quant_config.");
    if (!root.has("quantization") || !root.at("quantization").is_object()) {
      root.fail("quantization", "missing", "expected the ModelOpt quantization object");
    }
    const ConfigFields q(root.at("quantization"), file, "hf_quant_config.quantization.");
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
  const ConfigFields root(config, file, "");
  if (!root.has("quantization_config")) return json();
  const json& qc = root.at("quantization_config");
  if (!qc.is_object()) root.fail("quantization_config", qc.dump(), "expected an object");
  const ConfigFields q(qc, file, "quantization_config.");
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
    const std::int64_t group = q.integer_or("group_size", 128);
    out = {{"method", "gptq"},
           {"bits", q.integer("bits")},
           {"group_size", group},
           {"desc_act", q.boolean_or("desc_act", false)},
           {"sym", q.boolean_or("sym", true)}};
  } else if (method == "auto-round" || method == "intel/auto-round") {
    // AutoRound exports GPTQ-packed (default) or AWQ-packed weights; vLLM loads either through
    // the matching kernel, so the stored layout is the packing format's.
    const std::string packing = q.string_or("packing_format", "auto_round:auto_gptq");
    const bool awq = packing.find("awq") != std::string::npos;
    out = {{"method", awq ? "awq" : "gptq"},
           {"bits", q.integer("bits")},
           {"group_size", q.integer_or("group_size", 128)},
           {"sym", q.boolean_or("sym", true)}};
    if (awq && out["bits"] != 4) q.fail("bits", out["bits"].dump(), "AWQ packing is 4-bit");
    if (!awq) out["desc_act"] = false;
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
    const ConfigFields g(group, file, "quantization_config.config_groups.*.");
    if (!g.has("weights") || !g.at("weights").is_object())
      g.fail("weights", "missing", "expected the weight scheme");
    const ConfigFields w(g.at("weights"), file, "quantization_config.config_groups.*.weights.");
    const std::int64_t bits = w.integer("num_bits");
    const std::string type = w.string_or("type", "int");
    const std::string strategy = w.string_or("strategy", "tensor");
    const bool activations = g.has("input_activations");
    if (type == "float" && bits == 8) {
      out = {{"method", "fp8"}, {"scale_strategy", strategy == "channel" ? "channel" : "tensor"}};
      if (activations && g.at("input_activations").is_object()) {
        const ConfigFields a(g.at("input_activations"), file,
                             "quantization_config.config_groups.*.input_activations.");
        out["static_activation_scale"] = !a.boolean_or("dynamic", true);
      }
    } else if (type == "float" && bits == 4) {
      // NVFP4: e2m1 values, an fp8 scale per 16-element group, a global fp32 scale.
      out = {{"method", "nvfp4"}, {"group_size", w.integer_or("group_size", 16)}};
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
           "quantization not supported (fp8, awq, gptq, auto-round, mxfp4, bitsandbytes, "
           "compressed-tensors, ModelOpt via hf_quant_config.json)");
  }
  if (q.has("modules_to_not_convert")) add_unquantized(q, "modules_to_not_convert", method, out);
  return out;
}

}  // namespace

json hf_config_to_spec_document(const json& config, const json* quant_config,
                                const std::string& source) {
  json doc = architecture_spec_document(config, source);
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

constexpr int kMaxJsonDepth = 128;  // real configs nest a handful of levels
constexpr const char* kNonFinite = "\\u0001vramplan-nonfinite:";  // JSON escape of 0x01

// Python's json writes Infinity / -Infinity / NaN (Nemotron-H time_step_limit); strict JSON has
// no such tokens. Outside strings they become marker strings, turned back into non-finite
// numbers after parsing, so reading such a field is a named error and never "missing". The
// same pass refuses nesting deeper than kMaxJsonDepth before the recursive parser sees it.
std::string prepare_json_text(const std::string& text, const std::string& file) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  int depth = 0;
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
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw ParseError(file, static_cast<std::int64_t>(i),
                         "JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                             " levels; not a config.json");
      }
      out += c;
    } else if (c == ']' || c == '}') {
      --depth;
      out += c;
    } else if (text.compare(i, 9, "-Infinity") == 0) {
      out += std::string("\"") + kNonFinite + "-Infinity\"";
      i += 8;
    } else if (text.compare(i, 8, "Infinity") == 0) {
      out += std::string("\"") + kNonFinite + "Infinity\"";
      i += 7;
    } else if (text.compare(i, 3, "NaN") == 0) {
      out += std::string("\"") + kNonFinite + "NaN\"";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

void restore_nonfinite(json& value) {
  if (value.is_string()) {
    static const std::string marker = "\x01vramplan-nonfinite:";
    const std::string& s = value.get_ref<const std::string&>();
    if (s.rfind(marker, 0) != 0) return;
    const std::string token = s.substr(marker.size());
    const double inf = std::numeric_limits<double>::infinity();
    value = token == "NaN"        ? std::numeric_limits<double>::quiet_NaN()
            : token == "Infinity" ? inf
                                  : -inf;
  } else if (value.is_structured()) {
    for (auto& child : value) restore_nonfinite(child);
  }
}

json read_json_file(const std::filesystem::path& path) {
  const std::string text = prepare_json_text(
      read_regular_file(path.string(), "config file", kMaxConfigBytes), path.string());
  // A key twice in one object is refused: nlohmann would keep the last, Python's json too,
  // and the spec must not depend on which reader saw the file.
  std::vector<std::set<std::string>> keys_seen;
  const json::parser_callback_t refuse_duplicates = [&](int, json::parse_event_t event,
                                                        json& parsed) {
    if (event == json::parse_event_t::object_start) keys_seen.emplace_back();
    if (event == json::parse_event_t::object_end && !keys_seen.empty()) keys_seen.pop_back();
    if (event == json::parse_event_t::key && !keys_seen.empty() &&
        !keys_seen.back().insert(parsed.get<std::string>()).second) {
      throw SpecError(path.string(), parsed.get<std::string>(), "a second value",
                      "duplicate key in one JSON object");
    }
    return true;
  };
  try {
    json parsed = json::parse(text, refuse_duplicates);
    restore_nonfinite(parsed);
    return parsed;
  } catch (const json::parse_error& e) {
    throw ParseError(path.string(), static_cast<std::int64_t>(e.byte),
                     "not valid JSON: " + std::string(e.what()));
  } catch (const json::exception& e) {  // 1e400: a number no double holds
    throw ParseError(path.string(), 0, "not valid JSON: " + std::string(e.what()));
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
  json config = read_json_file(config_path);
  // Older AutoGPTQ / AutoAWQ checkpoints keep the scheme in a side file, not in config.json.
  if (config.is_object() && !config.contains("quantization_config") &&
      config_path.filename() == "config.json") {
    for (const char* side : {"quantize_config.json", "quant_config.json"}) {
      const fs::path side_path = config_path.parent_path() / side;
      if (!fs::is_regular_file(side_path, ec)) continue;
      json scheme = read_json_file(side_path);
      if (!scheme.is_object()) {
        throw SpecError(side_path.string(), "<root>", scheme.type_name(), "expected an object");
      }
      if (!scheme.contains("quant_method"))
        scheme["quant_method"] = scheme.contains("w_bit") ? "awq" : "gptq";
      config["quantization_config"] = scheme;
      break;
    }
  }
  json quant;
  const bool has_quant = !quant_path.empty() && fs::is_regular_file(quant_path, ec);
  if (has_quant) quant = read_json_file(quant_path);
  return model_spec_from_hf_config(config, has_quant ? &quant : nullptr, config_path.string());
}

}  // namespace vramplan
