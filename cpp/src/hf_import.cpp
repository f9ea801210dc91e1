#include "vramplan/hf_import.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
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

// How a skip list names modules, as vLLM matches each: compressed-tensors `ignore` and fp8
// `modules_to_not_convert` (exact names, "re:" regexes matched from the start, re.match), AWQ
// `modules_to_not_convert` (substrings of the module name, is_layer_skipped "substring"),
// ModelOpt `exclude_modules` (fnmatch globs), bitsandbytes `llm_int8_skip_modules` (an entry
// equal to one dot-separated component of the name or to a leading run of components,
// is_layer_skipped_bnb in vLLM 0.27; 0.29 and later ship no bitsandbytes method).
// AutoRound `extra_config` keys (INCConfigParser): the exact name or a dotted suffix of it, or,
// for a key holding regex characters, re.search.
enum class NameMatch : std::uint8_t { CompressedTensors, Substring, Glob, Bitsandbytes, AutoRound };

// The Linear modules vLLM builds, by tensor role, as the names a skip list is matched against.
// A role is one or more naming variants (families name shared experts and routers apart; vLLM's
// fused qkv_proj / gate_up_proj beside the checkpoint's shards, which vLLM's skip checks also
// match first); a variant lists every module of the role (fused layers: all shards), with "{L}"
// for the layer prefix and "{E}" for an expert index.
struct RoleNames {
  const char* role;
  std::vector<std::vector<const char*>> variants;
};

const std::vector<RoleNames>& role_module_names() {
  static const std::vector<RoleNames> table = {
      {"attn_q", {{"{L}self_attn.q_proj"}, {"{L}self_attn.qkv_proj"}}},
      {"attn_kv", {{"{L}self_attn.k_proj", "{L}self_attn.v_proj"}, {"{L}self_attn.qkv_proj"}}},
      {"attn_o", {{"{L}self_attn.o_proj"}}},
      {"mla_q_a", {{"{L}self_attn.q_a_proj"}}},
      {"mla_q_b", {{"{L}self_attn.q_b_proj"}}},
      {"mla_kv_a", {{"{L}self_attn.kv_a_proj_with_mqa"}}},
      {"mla_kv_b", {{"{L}self_attn.kv_b_proj"}}},
      {"mlp_gate_up", {{"{L}mlp.gate_proj", "{L}mlp.up_proj"}, {"{L}mlp.gate_up_proj"}}},
      {"mlp_down", {{"{L}mlp.down_proj"}}},
      {"expert_gate_up",
       {{"{L}mlp.experts.{E}.gate_proj", "{L}mlp.experts.{E}.up_proj"},
        {"{L}block_sparse_moe.experts.{E}.w1", "{L}block_sparse_moe.experts.{E}.w3"},
        {"{L}mlp.experts.gate_up_proj"}}},
      {"expert_down",
       {{"{L}mlp.experts.{E}.down_proj"},
        {"{L}block_sparse_moe.experts.{E}.w2"},
        {"{L}mlp.experts.down_proj"}}},
      {"shared_expert_gate_up",
       {{"{L}mlp.shared_expert.gate_proj", "{L}mlp.shared_expert.up_proj"},
        {"{L}mlp.shared_experts.gate_proj", "{L}mlp.shared_experts.up_proj"}}},
      {"shared_expert_down",
       {{"{L}mlp.shared_expert.down_proj"}, {"{L}mlp.shared_experts.down_proj"}}},
      {"router", {{"{L}mlp.gate"}, {"{L}block_sparse_moe.gate"}, {"{L}mlp.router"}}},
      {"mixer_in",
       {{"{L}mixer.in_proj"},
        {"{L}linear_attn.in_proj_qkvz"},
        {"{L}linear_attn.in_proj_qkv", "{L}linear_attn.in_proj_z"}}},
      {"mixer_in_ba",
       {{"{L}linear_attn.in_proj_ba"}, {"{L}linear_attn.in_proj_b", "{L}linear_attn.in_proj_a"}}},
      {"mixer_out", {{"{L}mixer.out_proj"}, {"{L}linear_attn.out_proj"}}},
  };
  return table;
}

// Modules no method quantizes here (norms, embeddings, encoders, small mixer tensors): a skip
// entry naming only such modules changes nothing.
bool names_never_quantized_module(const std::string& entry) {
  for (const char* word :
       {"norm", "embed_tokens", "embedding", "vision", "visual", "vit", "image", "audio",
        "mm_projector", "multi_modal_projector", "merger", "modality_projection", "patch_embed",
        // InternVL's projector and Idefics3's connector: plain nn.Linear in vLLM (internvl.py,
        // idefics3.py), never quantized.
        "mlp1", "connector", "shared_expert_gate", "conv1d", "a_log", "dt_bias", "rotary_emb",
        // DeepSeek sparse attention's indexer: vLLM fuses wk and weights_proj into
        // wk_weights_proj, built without a quant_config (vllm/models/deepseek_v32/attention.py).
        "indexer.wk", "indexer.weights_proj"}) {
    std::string lower = entry;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

std::string glob_to_regex(const std::string& glob) {
  std::string out;
  for (const char c : glob) {
    if (c == '*') {
      out += ".*";
    } else if (c == '?') {
      out += '.';
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      out += c;
    } else {
      out += '\\';
      out += c;
    }
  }
  return out;
}

// A group holding * or + and itself followed by a repetition ("(.*)*", "(a+)+", "(x*){2,}").
bool has_nested_repetition(const std::string& pattern) {
  std::vector<bool> repeats_inside;  // per open group: does it contain * or +
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;
    } else if (c == '(') {
      repeats_inside.push_back(false);
    } else if ((c == '*' || c == '+' || c == '{') && !repeats_inside.empty()) {
      repeats_inside.back() = true;
    } else if (c == ')' && !repeats_inside.empty()) {
      const bool inner = repeats_inside.back();
      repeats_inside.pop_back();
      const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
      if (inner && (next == '*' || next == '+' || next == '{')) return true;
      if (!repeats_inside.empty()) repeats_inside.back() = repeats_inside.back() || inner;
    }
  }
  return false;
}

// "\1" (a backreference, which no module name needs) or a "{n,m}" count of over 4 digits.
bool has_backreference_or_long_count(const std::string& pattern) {
  std::size_t digits = 0;
  bool in_count = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      if (std::isdigit(static_cast<unsigned char>(pattern[i + 1])) && pattern[i + 1] != '0') {
        return true;
      }
      ++i;
      continue;
    }
    if (c == '{') in_count = true;
    if (c == '}') in_count = false;
    digits = in_count && std::isdigit(static_cast<unsigned char>(c)) ? digits + 1 : 0;
    if (digits > 4) return true;
  }
  return false;
}

// One skip-list entry, compiled once.
class SkipEntry {
 public:
  SkipEntry(const ConfigFields& q, const char* key, const std::string& text, NameMatch how)
      : text_(text) {
    std::string pattern;
    if (how == NameMatch::CompressedTensors && text.rfind("re:", 0) == 0) {
      pattern = text.substr(3);
      mode_ = Mode::RegexFromStart;
    } else if (how == NameMatch::Glob) {
      pattern = glob_to_regex(text);
      mode_ = Mode::RegexWhole;
    } else if (how == NameMatch::AutoRound &&
               text.find_first_of(R"(*+?^$()[]{}|\)") != std::string::npos) {
      pattern = text;
      mode_ = Mode::RegexSearch;
    }
    if (pattern.empty()) {
      if (how == NameMatch::Substring) mode_ = Mode::Substring;
      if (how == NameMatch::Bitsandbytes) mode_ = Mode::Components;
      if (how == NameMatch::AutoRound) mode_ = Mode::DottedSuffix;
      return;
    }
    if (pattern.size() > 1000) q.fail(key, text.substr(0, 80), "pattern longer than 1000 bytes");
    if (has_nested_repetition(pattern)) {
      // std::regex backtracks: "(a*)*" could take exponential time on a module name.
      q.fail(key, text.substr(0, 80), "a repeated group that itself repeats is not supported");
    }
    if (has_backreference_or_long_count(pattern)) {
      // libstdc++ parses "\3333..." and "{99999...}" into a long that overflows (fuzzing).
      q.fail(key, text.substr(0, 80),
             "backreferences and repetition counts over 4 digits are not supported");
    }
    try {
      regex_ = std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      q.fail(key, text, "not a valid regular expression");
    }
  }
  // An exact name: equal strings match, nothing else.
  bool exact() const { return mode_ == Mode::Exact; }
  bool matches(const std::string& name) const {
    switch (mode_) {
      case Mode::Exact:
        return name == text_;
      case Mode::Substring:
        return name.find(text_) != std::string::npos;
      case Mode::DottedSuffix:
        return name == text_ ||
               (name.size() > text_.size() &&
                name.compare(name.size() - text_.size(), text_.size(), text_) == 0 &&
                name[name.size() - text_.size() - 1] == '.');
      case Mode::Components: {
        // A leading run of components ("model.layers.1.mlp") or any one component ("mlp").
        if (name.compare(0, text_.size(), text_) == 0 &&
            (name.size() == text_.size() || name[text_.size()] == '.')) {
          return true;
        }
        std::size_t begin = 0;
        while (begin <= name.size()) {
          const std::size_t dot = std::min(name.find('.', begin), name.size());
          if (name.compare(begin, dot - begin, text_) == 0) return true;
          begin = dot + 1;
        }
        return false;
      }
      case Mode::RegexFromStart:
        return std::regex_search(name, regex_, std::regex_constants::match_continuous);
      case Mode::RegexWhole:
        return std::regex_match(name, regex_);  // fnmatch: the whole name
      case Mode::RegexSearch:
        return std::regex_search(name, regex_);
    }
    return false;
  }
  const std::string& text() const { return text_; }

 private:
  // Exact: compressed-tensors / fp8 names. Substring: AWQ. DottedSuffix: AutoRound keys
  // ("lm_head" matches "model.lm_head"). Components: bitsandbytes. RegexFromStart: "re:"
  // (re.match). RegexWhole: fnmatch globs. RegexSearch: AutoRound keys holding regex
  // characters (re.search).
  enum class Mode : std::uint8_t {
    Exact,
    Substring,
    DottedSuffix,
    Components,
    RegexFromStart,
    RegexWhole,
    RegexSearch
  };
  std::string text_;
  std::regex regex_;
  Mode mode_ = Mode::Exact;
};

std::string expand(const char* pattern, const std::string& layer_prefix, const char* expert) {
  std::string out = pattern;
  const auto l = out.find("{L}");
  if (l != std::string::npos) out.replace(l, 3, layer_prefix);
  const auto e = out.find("{E}");
  if (e != std::string::npos) out.replace(e, 3, expert);
  return out;
}

// The whole skip list, matched entry by entry: exact names through a hash lookup, the rest
// (substrings, regexes, globs, bitsandbytes components) one by one. Records which entries hit.
class SkipList {
 public:
  SkipList(const ConfigFields& q, const char* key, NameMatch how) {
    const json& list = q.at(key);
    if (!list.is_array()) q.fail(key, list.dump().substr(0, 80), "expected a list of module names");
    if (list.size() > 10000) q.fail(key, std::to_string(list.size()) + " entries", "too many");
    for (const auto& m : list) {
      if (!m.is_string()) q.fail(key, m.dump().substr(0, 80), "expected module names");
      const std::string text = m.get<std::string>();
      entries_.emplace_back(q, key, text, how);
      if (entries_.back().exact()) {
        exact_[text].push_back(entries_.size() - 1);
      } else {
        patterns_.push_back(entries_.size() - 1);
      }
    }
    hits_.assign(entries_.size(), 0);
  }
  bool matches(const std::string& name) {
    bool any = false;
    const auto it = exact_.find(name);
    if (it != exact_.end()) {
      for (const std::size_t i : it->second) hits_[i] = 1;
      any = true;
    }
    for (const std::size_t i : patterns_) {
      if (entries_[i].matches(name)) {
        hits_[i] = 1;
        any = true;
      }
    }
    return any;
  }
  std::size_t pattern_count() const { return patterns_.size(); }
  const std::vector<SkipEntry>& entries() const { return entries_; }
  bool hit(std::size_t i) const { return hits_[i] != 0; }

 private:
  std::vector<SkipEntry> entries_;
  std::map<std::string, std::vector<std::size_t>> exact_;
  std::vector<std::size_t> patterns_;
  std::vector<char> hits_;
};

// Does the skip list cover `module` (a {L}/{E} pattern) at this layer, in any of the layer
// prefix styles, for both sampled experts? 2: yes, 1: for one expert only, 0: no.
int coverage(SkipList& list, const char* module, const std::vector<std::string>& prefixes) {
  const bool per_expert = std::string(module).find("{E}") != std::string::npos;
  int matched = 0;
  int samples = 0;
  for (const char* expert : {"0", "5"}) {
    if (!per_expert && samples == 1) break;
    ++samples;
    bool any = false;
    for (const auto& prefix : prefixes) any = list.matches(expand(module, prefix, expert)) || any;
    matched += any ? 1 : 0;
  }
  return matched == 0 ? 0 : (matched == samples ? 2 : 1);
}

std::vector<std::string> prefixes_of_layer(const std::string& layer) {
  return {"model.layers." + layer + ".", "model.language_model.layers." + layer + ".",
          "language_model.model.layers." + layer + ".", "model.decoder.layers." + layer + "."};
}

// What a skip list is matched against: the decoder layers, whether vLLM builds q, k and v as
// one qkv_proj (every family but the MLA ones), and which layers build attention (hybrids list
// linear_attention layers in layer_types: those build a mixer instead; empty: every layer).
struct SkipScope {
  std::int64_t num_layers = 1;
  bool qkv_fused = true;
  std::vector<bool> attention_layers;
};

// Does `layer` build `role`? Attention projections only in attention layers, the linear-
// attention mixer only in the others, every other role in every layer.
bool layer_builds(const SkipScope& scope, const std::string& role, std::int64_t layer) {
  if (scope.attention_layers.empty()) return true;
  const bool attention = scope.attention_layers[static_cast<std::size_t>(layer)];
  if (role.rfind("attn_", 0) == 0) return attention;
  if (role.rfind("mixer_", 0) == 0) return !attention;
  return true;
}

// Is every layer that builds `role` among `layers`?
bool every_layer_with_role(const SkipScope& scope, const std::string& role,
                           const std::vector<std::int64_t>& layers) {
  for (std::int64_t layer = 0; layer < scope.num_layers; ++layer) {
    if (layer_builds(scope, role, layer) &&
        !std::binary_search(layers.begin(), layers.end(), layer)) {
      return false;
    }
  }
  return true;
}

// Skip lists are matched against every decoder layer's module names; these bound that work.
constexpr std::int64_t kMaxSkipListLayers = 4096;
constexpr std::int64_t kMaxSkipPatternLayerPairs = 50000;

// Adds the tensor roles a skip list leaves unquantized: out["unquantized"] for a role skipped in
// every decoder layer, out["unquantized_layers"][role] for the layers where only some skip it.
// Each entry is matched as vLLM matches it against the module names vLLM builds
// (role_module_names) at every layer, in the checkpoint's unfused names and vLLM's fused ones
// (qkv_proj, gate_up_proj). A layer whose list covers some but not all shards of one of vLLM's
// fused Linears (q_proj without k_proj and v_proj, gate_proj without up_proj) is refused, as
// vLLM refuses it ("All shards of fused layers to have the same precision"); so is an entry
// that names no module vLLM builds and no never-quantized one. "mtp" stands for every tensor
// of the MTP layers ("mtp.layers.0." in Qwen3.5 / Qwen3-Next checkpoints). `qkv_fused`: vLLM
// builds q, k and v as one Linear (every family but MLA ones).
void add_unquantized(const ConfigFields& q, const char* key, NameMatch how, const SkipScope& scope,
                     json& out) {
  const std::int64_t num_layers = scope.num_layers;
  const bool qkv_fused = scope.qkv_fused;
  SkipList list(q, key, how);
  if (num_layers > kMaxSkipListLayers && !list.entries().empty()) {
    q.fail(key, std::to_string(num_layers) + " layers",
           "a skip list is matched layer by layer, up to " + std::to_string(kMaxSkipListLayers) +
               " layers");
  }
  if (static_cast<std::int64_t>(list.pattern_count()) * num_layers > kMaxSkipPatternLayerPairs) {
    q.fail(key, std::to_string(list.pattern_count()) + " patterns",
           "too many patterns for " + std::to_string(num_layers) + " layers (at most " +
               std::to_string(kMaxSkipPatternLayerPairs) + " pattern-layer pairs)");
  }
  if (!out.contains("unquantized")) out["unquantized"] = json::array();
  json& roles = out["unquantized"];
  auto add_role = [&roles](const std::string& role) {
    if (std::find(roles.begin(), roles.end(), role) == roles.end()) roles.push_back(role);
  };
  const std::string shown_list = q.at(key).dump().substr(0, 200);
  std::map<std::string, std::vector<std::int64_t>> skipped_layers;
  for (std::int64_t layer = 0; layer < num_layers; ++layer) {
    const std::string index = std::to_string(layer);
    const auto prefixes = prefixes_of_layer(index);
    for (const auto& [role, variants] : role_module_names()) {
      bool full = false;
      std::string partial;
      for (const auto& variant : variants) {
        bool all = true;
        for (const char* module : variant) {
          const int c = coverage(list, module, prefixes);
          all = all && c == 2;
          if (c != 0 && partial.empty()) partial = expand(module, prefixes[0], "K");
        }
        full = full || all;
      }
      if (full) {
        skipped_layers[role].push_back(layer);
      } else if (!partial.empty()) {
        std::string problem = "covers part of the ";
        problem += role;
        problem += " tensors at layer " + index;
        problem += " (e.g. " + partial;
        problem +=
            " without its fused siblings, or some experts only); vLLM needs every shard of a "
            "fused Linear kept at one precision";
        q.fail(key, shown_list, problem);
      }
    }
    if (qkv_fused) {
      const auto q_it = skipped_layers.find("attn_q");
      const auto kv_it = skipped_layers.find("attn_kv");
      const bool q_skipped = q_it != skipped_layers.end() && q_it->second.back() == layer;
      const bool kv_skipped = kv_it != skipped_layers.end() && kv_it->second.back() == layer;
      if (q_skipped != kv_skipped) {
        std::string problem = "skips ";
        problem +=
            q_skipped ? "q_proj but not k_proj and v_proj" : "k_proj and v_proj but not q_proj";
        problem += " at layer " + index;
        problem += "; vLLM fuses them into one qkv_proj and refuses shards of different precision";
        q.fail(key, shown_list, problem);
      }
    }
  }
  if (!out.contains("unquantized_layers")) out["unquantized_layers"] = json::object();
  json& per_layer = out["unquantized_layers"];
  for (const auto& info : role_module_names()) {
    const auto found = skipped_layers.find(info.role);
    if (found == skipped_layers.end()) continue;
    const std::string role = info.role;
    const std::vector<std::int64_t>& layers = found->second;
    if (every_layer_with_role(scope, role, layers)) {
      add_role(role);
      per_layer.erase(role);
    } else if (std::find(roles.begin(), roles.end(), role) == roles.end()) {
      json merged = per_layer.contains(role) ? per_layer[role] : json::array();
      for (const std::int64_t layer : layers) {
        if (std::find(merged.begin(), merged.end(), layer) == merged.end()) merged.push_back(layer);
      }
      std::sort(merged.begin(), merged.end());
      per_layer[role] = merged;
    }
  }
  if (per_layer.empty()) out.erase("unquantized_layers");
  // The MTP layers: covered when their attention, MLP/experts and fc are all skipped.
  // Qwen's MTP block: "mtp.layers.0.*" plus "mtp.fc" beside the layers.
  if (coverage(list, "{L}self_attn.q_proj", {"mtp.layers.0."}) == 2 &&
      coverage(list, "{L}mlp.experts.{E}.gate_proj", {"mtp.layers.0."}) == 2 &&
      coverage(list, "{L}fc", {"mtp."}) == 2) {
    add_role("mtp");
  }
  if (list.matches("lm_head")) add_role("lm_head");
  // Entries no sampled name matched: a layer past the model's last names nothing vLLM builds
  // (a no-op there); one expert of many ("experts.17.") is part of a role, as the sampled
  // experts 0 and 5 show when it is not refused above.
  static const std::regex layer_index(R"(layers\.(\d+)\.)");
  static const std::regex expert_index(R"(experts\.\d+\.)");
  for (std::size_t i = 0; i < list.entries().size(); ++i) {
    const std::string& text = list.entries()[i].text();
    if (list.hit(i) || names_never_quantized_module(text)) continue;
    if (text.find("lm_head") != std::string::npos) continue;
    std::smatch m;
    if (std::regex_search(text, m, layer_index) && m[1].length() < 9 &&
        std::stoll(m[1].str()) >= num_layers) {
      continue;
    }
    if (std::regex_search(text, expert_index)) {
      // Fine when the sampled experts 0 and 5 of the same layer are skipped too.
      const SkipEntry first_expert(q, key, std::regex_replace(text, expert_index, "experts.0."),
                                   how);
      const std::int64_t layer = m.empty() || m[1].length() >= 9 ? -1 : std::stoll(m[1].str());
      bool skipped = false;
      for (const auto& [role, variants] : role_module_names()) {
        const auto it = skipped_layers.find(role);
        const bool role_skipped =
            it != skipped_layers.end() && layer >= 0 &&
            std::find(it->second.begin(), it->second.end(), layer) != it->second.end();
        for (const auto& variant : variants) {
          for (const char* module : variant) {
            for (const auto& prefix :
                 prefixes_of_layer(std::to_string(std::max<std::int64_t>(0, layer)))) {
              if (first_expert.matches(expand(module, prefix, "0")))
                skipped = skipped || role_skipped;
            }
          }
        }
      }
      if (skipped) continue;
      q.fail(key, text,
             "names some experts of a layer only: vramplan keeps a layer's experts at one "
             "precision");
    }
    q.fail(key, text,
           "names no module vLLM builds that vramplan can keep unquantized (matched against "
           "model.layers.N.self_attn.q_proj, mlp.experts.K.gate_proj, linear_attn.in_proj_a, "
           "mtp.layers.0.*, lm_head, ...)");
  }
}

// A group size as vLLM needs it: an integer (128.0 is 128; 1.99 is an error, not 1), -1 for one
// group over the whole input, else positive. Whether it divides each layer's input width is
// checked once the spec is built (check_group_size_divides).
std::int64_t group_size_field(const ConfigFields& q, const char* key, std::int64_t fallback) {
  if (!q.has(key)) return fallback;
  const json& v = q.at(key);
  double value = 0.0;
  if (v.is_number()) value = v.get<double>();
  if (!v.is_number() || !std::isfinite(value) || std::floor(value) != value ||
      (value != -1.0 && (value < 1.0 || value > 1048576.0))) {
    q.fail(key, v.dump().substr(0, 40), "group size must be -1 or a positive integer");
  }
  return static_cast<std::int64_t>(value);
}

std::int64_t num_layers_of(const json& config) {
  for (const json* c :
       {&config, config.contains("text_config") ? &config["text_config"] : nullptr}) {
    if (c != nullptr && c->is_object() && c->contains("num_hidden_layers") &&
        (*c)["num_hidden_layers"].is_number_integer()) {
      const auto layers = (*c)["num_hidden_layers"].get<std::int64_t>();
      if (layers > 0 && layers < 100000) return layers;
    }
  }
  return 1;
}

// Which decoder layers build attention, from the (text) config's layer_types: a
// linear_attention entry builds a Gated DeltaNet mixer instead. Empty without layer_types.
std::vector<bool> attention_layers_of(const json& config) {
  const json& text = config.contains("text_config") && config["text_config"].is_object()
                         ? config["text_config"]
                         : config;
  std::vector<bool> out;
  if (!text.contains("layer_types") || !text["layer_types"].is_array()) return out;
  for (const auto& type : text["layer_types"]) out.push_back(type != "linear_attention");
  if (static_cast<std::int64_t>(out.size()) != num_layers_of(config)) out.clear();
  return out;
}

// MLA families (DeepSeek-V2/V3, Kimi) build q_proj apart, and no k_proj / v_proj.
bool uses_mla(const json& config) {
  for (const json* c :
       {&config, config.contains("text_config") ? &config["text_config"] : nullptr}) {
    if (c != nullptr && c->is_object() && c->contains("kv_lora_rank") &&
        !(*c)["kv_lora_rank"].is_null()) {
      return true;
    }
  }
  return false;
}

// The roles (whole, or in some layers) a list of ModelOpt quantized_layers names covers.
json modelopt_cover(const ConfigFields& q, const SkipScope& scope, const json& names) {
  if (names.empty()) return json::object();
  const json listed = {{"quantized_layers", names}};
  const ConfigFields layers(listed, q.file(), q.prefix());
  json covered;
  add_unquantized(layers, "quantized_layers", NameMatch::CompressedTensors, scope, covered);
  return covered;
}

bool role_covered(const json& covered, const std::string& role) {
  const json roles = covered.value("unquantized", json::array());
  return std::find(roles.begin(), roles.end(), role) != roles.end() ||
         (covered.contains("unquantized_layers") && covered["unquantized_layers"].contains(role));
}

// The per-layer algorithms of a MIXED_PRECISION map, upper-cased: names by algorithm. vLLM 0.33's
// ModelOpt config also accepts FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO and MXFP8 per layer; those
// are refused by name.
std::map<std::string, json> modelopt_layer_algos(const ConfigFields& q) {
  if (!q.has("quantized_layers") || !q.at("quantized_layers").is_object() ||
      q.at("quantized_layers").empty()) {
    q.fail("quantized_layers", q.has("quantized_layers") ? "not a non-empty map" : "missing",
           "MIXED_PRECISION needs the per-layer quantized_layers map");
  }
  std::map<std::string, json> names_by_algo;
  for (const auto& [name, recipe] : q.at("quantized_layers").items()) {
    if (!recipe.is_object() || !recipe.contains("quant_algo") ||
        !recipe["quant_algo"].is_string()) {
      q.fail("quantized_layers", name, "each layer needs a quant_algo string");
    }
    std::string algo = recipe["quant_algo"].get<std::string>();
    std::transform(algo.begin(), algo.end(), algo.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    if (algo != "FP8" && algo != "NVFP4" && algo != "W4A16_NVFP4") {
      q.fail("quantized_layers", std::string(name).append(": ").append(algo),
             "per-layer algorithm not supported (FP8, NVFP4, W4A16_NVFP4)");
    }
    if (algo != "FP8" && recipe.contains("group_size") && recipe["group_size"] != json(16)) {
      q.fail("quantized_layers", name + ": group_size " + recipe["group_size"].dump(),
             "NVFP4 groups are 16 wide");
    }
    names_by_algo[algo].push_back(name);
  }
  return names_by_algo;
}

// MIXED_PRECISION: the NVFP4 family (NVFP4 and W4A16_NVFP4 share packing and group size; vLLM's
// W4A16 linear method drops the input_scale) or FP8 as the method, FP8 roles beside NVFP4, bf16
// per layer, and the lm_head, which vLLM 0.33 quantizes when the map lists it.
json modelopt_mixed_document(const ConfigFields& q, const SkipScope& scope) {
  std::map<std::string, json> names_by_algo = modelopt_layer_algos(q);
  json nvfp4_names = names_by_algo["NVFP4"];
  for (const auto& name : names_by_algo["W4A16_NVFP4"]) nvfp4_names.push_back(name);
  const json w4a4 = modelopt_cover(q, scope, names_by_algo["NVFP4"]);
  const json w4a16 = modelopt_cover(q, scope, names_by_algo["W4A16_NVFP4"]);
  std::map<std::string, json> covered_by_algo = {
      {"NVFP4", modelopt_cover(q, scope, nvfp4_names)},
      {"FP8", modelopt_cover(q, scope, names_by_algo["FP8"])}};
  const std::string algo = nvfp4_names.empty() ? "FP8" : "NVFP4";
  const std::string other = algo == "NVFP4" ? "FP8" : "NVFP4";
  auto full_in = [&covered_by_algo](const std::string& which, const std::string& role) {
    const json roles = covered_by_algo[which].value("unquantized", json::array());
    return std::find(roles.begin(), roles.end(), role) != roles.end();
  };
  auto layers_in = [&covered_by_algo](const std::string& which, const std::string& role) {
    const json& c = covered_by_algo[which];
    return c.contains("unquantized_layers") && c["unquantized_layers"].contains(role)
               ? c["unquantized_layers"][role]
               : json::array();
  };
  json out = {{"unquantized", json::array()}};
  json unquantized_layers = json::object();
  json fp8_roles = json::array();
  json weight_only = json::array();
  std::vector<std::string> roles;
  for (const auto& info : role_module_names()) roles.emplace_back(info.role);
  roles.emplace_back("lm_head");
  for (const auto& role : roles) {
    const bool main_full = full_in(algo, role);
    const bool other_full = full_in(other, role);
    const json main_layers = layers_in(algo, role);
    if (main_full && other_full) {
      q.fail("quantized_layers", role, "a tensor role listed under both FP8 and NVFP4");
    }
    if (!layers_in(other, role).empty() || (other_full && !main_layers.empty())) {
      q.fail("quantized_layers", role,
             "FP8 in some layers of a tensor role beside NVFP4 or bf16 in others is not "
             "modelled (one format per role, bf16 per layer)");
    }
    if (role_covered(w4a4, role) && role_covered(w4a16, role)) {
      q.fail("quantized_layers", role,
             "NVFP4 in some layers of a tensor role beside W4A16_NVFP4 in others is not modelled");
    }
    if (role == "lm_head" && (main_full || other_full)) {
      if (other_full)
        q.fail("quantized_layers", "lm_head", "an FP8 lm_head beside NVFP4 is not modelled");
      out["quantized_lm_head"] = true;
    } else if (!main_full && !other_full && main_layers.empty()) {
      out["unquantized"].push_back(role);
    } else if (!main_layers.empty()) {
      json rest = json::array();  // quantized in the listed layers, bf16 in the others
      for (std::int64_t layer = 0; layer < scope.num_layers; ++layer) {
        if (std::find(main_layers.begin(), main_layers.end(), layer) == main_layers.end()) {
          rest.push_back(layer);
        }
      }
      unquantized_layers[role] = rest;
    } else if (other_full) {
      fp8_roles.push_back(role);
    }
    // Routed experts keep their input scales under W4A16 (vLLM's fused-MoE method registers them).
    if (role_covered(w4a16, role) && role != "expert_gate_up" && role != "expert_down") {
      weight_only.push_back(role);
    }
  }
  if (!unquantized_layers.empty()) out["unquantized_layers"] = unquantized_layers;
  if (!fp8_roles.empty()) out["fp8_roles"] = fp8_roles;
  if (!weight_only.empty()) out["nvfp4_weight_only_roles"] = weight_only;
  out["modelopt_algo"] = algo;
  return out;
}

// ModelOpt's quantization object, from hf_quant_config.json or config.json (quant_method
// "modelopt"): FP8, NVFP4, W4A16_NVFP4, or MIXED_PRECISION of those per layer.
json modelopt_document(const ConfigFields& q, const SkipScope& scope) {
  std::string algo = q.string_or("quant_algo", "");
  std::transform(algo.begin(), algo.end(), algo.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  json out = {{"unquantized", json::array()}};
  if (algo == "MIXED_PRECISION") {
    out = modelopt_mixed_document(q, scope);
    algo = out["modelopt_algo"].get<std::string>();
    out.erase("modelopt_algo");
  } else if (algo == "W4A16_NVFP4") {
    // Weight-only NVFP4 everywhere but the routed experts (see modelopt_mixed_document).
    json weight_only = json::array();
    for (const auto& info : role_module_names()) {
      const std::string role = info.role;
      if (role != "expert_gate_up" && role != "expert_down") weight_only.push_back(role);
    }
    out["nvfp4_weight_only_roles"] = weight_only;
    algo = "NVFP4";
  }
  if (algo == "FP8") {
    out.update(
        {{"method", "fp8"}, {"scale_strategy", "tensor"}, {"static_activation_scale", true}});
  } else if (algo == "NVFP4") {
    const std::int64_t group = group_size_field(q, "group_size", 16);
    if (group != 16) q.fail("group_size", std::to_string(group), "NVFP4 groups are 16 wide");
    out.update({{"method", "nvfp4"}, {"group_size", 16}});
  } else {
    q.fail("quant_algo", algo.empty() ? "missing" : algo,
           "ModelOpt algorithm not supported (FP8, NVFP4, W4A16_NVFP4, MIXED_PRECISION of those)");
  }
  if (q.has("exclude_modules")) {
    add_unquantized(q, "exclude_modules", NameMatch::Glob, scope, out);
  }
  return out;
}

// The scheme of one compressed-tensors config group, as the spec's quantization document.
json compressed_tensors_scheme(const ConfigFields& g, const std::string& where) {
  if (!g.has("weights") || !g.at("weights").is_object())
    g.fail("weights", "missing", "expected the weight scheme");
  const ConfigFields w(g.at("weights"), g.file(), where + "weights.");
  const std::int64_t bits = w.integer("num_bits");
  const std::string type = w.string_or("type", "int");
  const std::string strategy = w.string_or("strategy", "tensor");
  const bool activations = g.has("input_activations");
  json out;
  if (type == "float" && bits == 8) {
    if (strategy == "block") {
      const json block =
          w.has("block_structure") ? w.at("block_structure") : json::array({128, 128});
      if (!block.is_array() || block.size() != 2 || !block[0].is_number_integer() ||
          !block[1].is_number_integer() || block[0].get<std::int64_t>() <= 0 ||
          block[1].get<std::int64_t>() <= 0) {
        w.fail("block_structure", block.dump(), "expected [n, k] positive integers");
      }
      out = {{"method", "fp8"}, {"block_size", block}};
    } else {
      out = {{"method", "fp8"}, {"scale_strategy", strategy == "channel" ? "channel" : "tensor"}};
    }
    if (activations && g.at("input_activations").is_object()) {
      const ConfigFields a(g.at("input_activations"), g.file(), where + "input_activations.");
      out["static_activation_scale"] = !a.boolean_or("dynamic", true);
    }
  } else if (type == "float" && bits == 4) {
    // NVFP4: e2m1 values, an fp8 scale per 16-element group, a global fp32 scale.
    const std::int64_t group = group_size_field(w, "group_size", 16);
    if (group != 16) w.fail("group_size", std::to_string(group), "NVFP4 groups are 16 wide");
    out = {{"method", "nvfp4"}, {"group_size", 16}};
  } else if (type == "int" && bits == 8 && activations) {
    out = {{"method", "int8"}, {"scale_strategy", strategy == "channel" ? "channel" : "tensor"}};
  } else if (type == "int" && (bits == 4 || bits == 8)) {
    const std::int64_t group = strategy == "channel" ? -1 : group_size_field(w, "group_size", 128);
    out = {{"method", "packed_wna16"},
           {"bits", bits},
           {"group_size", group},
           {"sym", w.boolean_or("symmetric", true)},
           {"desc_act", w.string_or("actorder", "") == "group"}};
  } else {
    w.fail("num_bits", std::to_string(bits) + " " + type, "compressed-tensors scheme not modelled");
  }
  if (out["method"] == "fp8" || out["method"] == "int8") {
    // compressed-tensors' initialize_qparams makes weight_scale / input_scale in the observed
    // weight's dtype (bf16 / fp16), not float32.
    out["scales_in_torch_dtype"] = true;
  }
  return out;
}

// quant_method fp8: block-wise (weight_block_size [n, k]) or per-tensor scales.
json fp8_document(const ConfigFields& q) {
  if (q.has("weight_block_size")) {
    const json& block = q.at("weight_block_size");
    if (!block.is_array() || block.size() != 2 || !block[0].is_number_integer() ||
        !block[1].is_number_integer() || block[0].get<std::int64_t>() <= 0 ||
        block[1].get<std::int64_t>() <= 0) {
      q.fail("weight_block_size", block.dump().substr(0, 80), "expected [n, k] positive integers");
    }
    // Block-fp8 checkpoints (DeepSeek, Qwen) store routers and lm_head in bf16.
    return {{"method", "fp8"},
            {"block_size", block},
            {"unquantized", json::array({"lm_head", "router"})}};
  }
  return {{"method", "fp8"},
          {"scale_strategy", "tensor"},
          {"static_activation_scale", q.string_or("activation_scheme", "dynamic") == "static"}};
}

// quant_method awq / awq_marlin: 4-bit groups.
json awq_document(const ConfigFields& q) {
  json out = {{"method", "awq"},
              {"bits", q.integer_or("bits", q.integer_or("w_bit", 4))},
              {"group_size", q.has("group_size") ? group_size_field(q, "group_size", 128)
                                                 : group_size_field(q, "q_group_size", 128)},
              {"sym", !q.boolean_or("zero_point", true)}};
  if (out["bits"] != 4) q.fail("bits", out["bits"].dump(), "AWQ is 4-bit");
  return out;
}

// GPTQModel per-module rules: "-:regex" skips modules (kept fp16); "+:regex" / "regex"
// overrides bits or group size, which one method per role cannot express unless equal.
void add_gptq_dynamic_rules(const ConfigFields& q, const SkipScope& scope, const std::string& file,
                            json& out) {
  const json& dynamic = q.at("dynamic");
  if (!dynamic.is_object()) q.fail("dynamic", dynamic.dump().substr(0, 80), "expected a map");
  json skips = json::array();
  for (const auto& [rule, overrides] : dynamic.items()) {
    if (rule.rfind("-:", 0) == 0) {
      skips.push_back("re:" + rule.substr(2));
      continue;
    }
    if (!overrides.is_object()) q.fail("dynamic", rule, "expected a map of overrides");
    for (const auto& [field, value] : overrides.items()) {
      const bool same = out.contains(field) && out[field] == value;
      if (!same) {
        std::string shown = rule;
        shown += ": " + field;
        shown += "=" + value.dump().substr(0, 20);
        q.fail("dynamic", shown,
               "per-module bits/group_size overrides are not modelled (one scheme per role)");
      }
    }
  }
  if (!skips.empty()) {
    json holder = {{"dynamic", skips}};
    const ConfigFields d(holder, file, "quantization_config.");
    add_unquantized(d, "dynamic", NameMatch::CompressedTensors, scope, out);
  }
}

// quant_method gptq / gptq_marlin (lm_head unquantized; `dynamic` rules may skip modules).
json gptq_document(const ConfigFields& q, const SkipScope& scope, const std::string& file) {
  json out = {{"method", "gptq"},
              {"bits", q.integer("bits")},
              {"group_size", group_size_field(q, "group_size", 128)},
              {"desc_act", q.boolean_or("desc_act", false)},
              {"sym", q.boolean_or("sym", true)}};
  if (q.boolean_or("lm_head", false)) {
    q.fail("lm_head", "true", "a GPTQ-quantized lm_head is not modelled");
  }
  if (q.has("dynamic")) add_gptq_dynamic_rules(q, scope, file, out);
  return out;
}

// Per-module overrides (vLLM's INCConfigParser): {"bits": 16} keeps a module unquantized;
// other bits, group sizes or symmetry per module are more than one scheme per role.
void add_auto_round_extra_config(const ConfigFields& q, const SkipScope& scope,
                                 const std::string& file, json& out) {
  const json& extra = q.at("extra_config");
  if (!extra.is_object()) q.fail("extra_config", extra.dump().substr(0, 80), "expected a map");
  json skips = json::array();
  for (const auto& [name, overrides] : extra.items()) {
    if (!overrides.is_object()) q.fail("extra_config", name, "expected a map of overrides");
    const json bits = overrides.value("bits", out["bits"]);
    if (!bits.is_number_integer()) q.fail("extra_config", name + ": bits", "expected an integer");
    if (bits.get<std::int64_t>() >= 16) {
      skips.push_back(name);
      continue;
    }
    for (const char* field : {"bits", "group_size", "sym"}) {
      if (overrides.contains(field) && overrides[field] != out[field]) {
        std::string shown = name;
        shown += std::string(": ") + field + "=" + overrides[field].dump().substr(0, 20);
        q.fail("extra_config", shown,
               "per-module bits/group_size/sym overrides are not modelled (one scheme per "
               "role)");
      }
    }
  }
  if (!skips.empty()) {
    json holder = {{"extra_config", skips}};
    const ConfigFields e(holder, file, "quantization_config.");
    add_unquantized(e, "extra_config", NameMatch::AutoRound, scope, out);
  }
}

// AutoRound exports GPTQ-packed (default) or AWQ-packed weights; vLLM loads either through the
// matching kernel, so the stored layout is the packing format's.
json auto_round_document(const ConfigFields& q, const SkipScope& scope, const std::string& file) {
  const std::string packing = q.string_or("packing_format", "auto_round:auto_gptq");
  const bool awq = packing.find("awq") != std::string::npos;
  json out = {{"method", awq ? "awq" : "gptq"},
              {"bits", q.integer("bits")},
              {"group_size", group_size_field(q, "group_size", 128)},
              {"sym", q.boolean_or("sym", true)}};
  if (awq && out["bits"] != 4) q.fail("bits", out["bits"].dump(), "AWQ packing is 4-bit");
  if (!awq) out["desc_act"] = false;
  if (q.has("extra_config") && !q.at("extra_config").is_null()) {
    add_auto_round_extra_config(q, scope, file, out);
  }
  return out;
}

// quant_method bitsandbytes: NF4 (optionally double-quantized) or int8, with skipped modules.
json bitsandbytes_document(const ConfigFields& q, const SkipScope& scope) {
  json out;
  if (q.boolean_or("load_in_4bit", false)) {
    if (q.string_or("bnb_4bit_quant_type", "nf4") != "nf4") {
      q.fail("bnb_4bit_quant_type", q.string_or("bnb_4bit_quant_type", ""), "only nf4 is modelled");
    }
    out = {{"method", "bnb_nf4"},
           {"double_quant", q.boolean_or("bnb_4bit_use_double_quant", false)}};
  } else if (q.boolean_or("load_in_8bit", false)) {
    out = {{"method", "bnb_int8"}};
  } else {
    q.fail("load_in_4bit", "false", "bitsandbytes config loads neither 4-bit nor 8-bit");
  }
  if (q.has("llm_int8_skip_modules") && !q.at("llm_int8_skip_modules").is_null()) {
    add_unquantized(q, "llm_int8_skip_modules", NameMatch::Bitsandbytes, scope, out);
  }
  return out;
}

// quant_method compressed-tensors: several groups (one per target set) must share one scheme,
// one method per model; `ignore` lists the unquantized modules.
json compressed_tensors_document(const ConfigFields& q, const SkipScope& scope,
                                 const std::string& file) {
  if (!q.has("config_groups") || !q.at("config_groups").is_object() ||
      q.at("config_groups").empty()) {
    q.fail("config_groups",
           q.has("config_groups") ? q.at("config_groups").dump().substr(0, 200) : "missing",
           "expected at least one quantization group");
  }
  json out;
  std::string first_name;
  for (const auto& [name, group] : q.at("config_groups").items()) {
    const std::string where = "quantization_config.config_groups." + name + ".";
    if (!group.is_object()) q.fail("config_groups", name, "expected a group object");
    const ConfigFields g(group, file, where);
    const json scheme = compressed_tensors_scheme(g, where);
    if (first_name.empty()) {
      out = scheme;
      first_name = name;
    } else if (scheme != out) {
      std::string value = name;
      value += " (" + scheme.dump();
      value += ") beside " + first_name;
      q.fail("config_groups", value,
             "groups with different schemes are not modelled (one method per model)");
    }
  }
  if (q.has("ignore")) add_unquantized(q, "ignore", NameMatch::CompressedTensors, scope, out);
  return out;
}

// vLLM matches modules_to_not_convert exactly for fp8 and as substrings for AWQ; its MXFP4
// config does not read the list (only experts are quantized there anyway), nor does its GPTQ
// config (GPTQModel writes skips as `dynamic` "-:" rules): a GPTQ list that keeps a module
// unquantized describes a checkpoint vLLM would load as quantized, so it is refused.
void add_modules_to_not_convert(const ConfigFields& q, const std::string& method,
                                const SkipScope& scope, json& out) {
  if (method == "mxfp4" || !q.has("modules_to_not_convert") ||
      q.at("modules_to_not_convert").is_null()) {
    return;
  }
  const NameMatch how = method == "fp8" ? NameMatch::CompressedTensors : NameMatch::Substring;
  const bool gptq = out.value("method", "") == "gptq" && method.find("gptq") != std::string::npos;
  json skipped;
  add_unquantized(q, "modules_to_not_convert", how, scope, gptq ? skipped : out);
  if (gptq && (skipped.contains("unquantized_layers") ||
               std::any_of(skipped["unquantized"].begin(), skipped["unquantized"].end(),
                           [](const json& role) { return role != "lm_head"; }))) {
    q.fail("modules_to_not_convert", q.at("modules_to_not_convert").dump().substr(0, 200),
           "vLLM's GPTQ config does not read this list and would load these modules as "
           "quantized; GPTQ checkpoints name unquantized modules in `dynamic` (\"-:regex\")");
  }
}

json quantization_document(const json& config, const json* modelopt, const std::string& file) {
  const SkipScope scope{num_layers_of(config), !uses_mla(config), attention_layers_of(config)};
  if (modelopt != nullptr) {
    const ConfigFields root(*modelopt, file, "hf_quant_config.");
    if (!root.has("quantization") || !root.at("quantization").is_object()) {
      root.fail("quantization", "missing", "expected the ModelOpt quantization object");
    }
    const ConfigFields q(root.at("quantization"), file, "hf_quant_config.quantization.");
    return modelopt_document(q, scope);
  }
  const ConfigFields root(config, file, "");
  if (!root.has("quantization_config")) return json();
  const json& qc = root.at("quantization_config");
  if (!qc.is_object())
    root.fail("quantization_config", qc.dump().substr(0, 80), "expected an object");
  const ConfigFields q(qc, file, "quantization_config.");
  const std::string method = q.string_or("quant_method", "");
  json out;
  if (method == "modelopt" || method == "modelopt_fp4" || method == "modelopt_mixed") {
    return modelopt_document(q, scope);
  } else if (method == "fp8") {
    out = fp8_document(q);
  } else if (method == "awq" || method == "awq_marlin") {
    out = awq_document(q);
  } else if (method == "gptq" || method == "gptq_marlin") {
    out = gptq_document(q, scope, file);
  } else if (method == "auto-round" || method == "intel/auto-round" || method == "auto_round") {
    out = auto_round_document(q, scope, file);
  } else if (method == "mxfp4") {
    out = {{"method", "mxfp4"}};
  } else if (method == "bitsandbytes") {
    out = bitsandbytes_document(q, scope);
  } else if (method == "compressed-tensors") {
    out = compressed_tensors_document(q, scope, file);
  } else {
    q.fail("quant_method", method.empty() ? "missing" : method,
           "quantization not supported (fp8, awq, awq_marlin, gptq, gptq_marlin, auto-round, "
           "mxfp4, bitsandbytes, compressed-tensors, modelopt, ModelOpt via "
           "hf_quant_config.json)");
  }
  add_modules_to_not_convert(q, method, scope, out);
  return out;
}

// vLLM's grouped kernels (AWQ, GPTQ, compressed-tensors WNA16) need every quantized Linear's
// input width to be a whole number of groups; a checkpoint whose group size does not divide one
// cannot have been written by its quantizer, so the config is wrong, not the model.
void check_group_size_divides(const ModelSpec& spec, const std::string& source) {
  const QuantSpec& q = spec.quantization;
  const bool grouped = q.method == QuantMethod::Awq || q.method == QuantMethod::Gptq ||
                       q.method == QuantMethod::PackedWNA16;
  if (!grouped || q.group_size <= 0) return;
  for (const auto& g : model_tensor_groups(spec, true)) {
    if (!g.is_linear || g.cols % q.group_size == 0) continue;
    const char* role = tensor_role_name(g.role);
    if (std::find(q.unquantized_roles.begin(), q.unquantized_roles.end(), role) !=
        q.unquantized_roles.end()) {
      continue;
    }
    const auto per_layer = q.unquantized_layers.find(role);
    if (per_layer != q.unquantized_layers.end() &&
        std::binary_search(per_layer->second.begin(), per_layer->second.end(), g.layer)) {
      continue;
    }
    throw SpecError(source, "quantization_config.group_size", std::to_string(q.group_size),
                    "does not divide the input width " + std::to_string(g.cols) + " of the " +
                        role + " tensors (groups must tile each quantized Linear's input)");
  }
}

}  // namespace

namespace {

// The SSM state dtype a config asks vLLM for when --mamba-ssm-cache-dtype is unset: Qwen3.5 /
// 3.6 write `mamba_ssm_dtype` (Qwen3_5ForConditionalGenerationConfig copies it), Nemotron-H
// `mamba_ssm_cache_dtype` (NemotronHForCausalLMConfig; float32 when absent, the spec's
// default). vLLM reads no config key for the conv state (--mamba-cache-dtype only).
void add_state_dtypes(const json& config, const std::string& source, json& doc) {
  const json& text = config.contains("text_config") && config["text_config"].is_object()
                         ? config["text_config"]
                         : config;
  std::string architectures;
  if (config.contains("architectures") && config["architectures"].is_array()) {
    for (const json& a : config["architectures"]) architectures += a.dump();
  }
  auto read = [&](const char* key, const char* block, const char* family) {
    if (architectures.find(family) == std::string::npos) return;
    if (!text.contains(key) || !doc.contains(block)) return;
    const json& value = text[key];
    const std::string name = value.is_string() ? value.get<std::string>() : value.dump();
    if (name != "float32" && name != "float16" && name != "bfloat16") {
      throw SpecError(source, key, name, "expected float32, float16 or bfloat16");
    }
    doc[block]["ssm_state_dtype"] = name;
  };
  read("mamba_ssm_dtype", "linear_attention", "Qwen3_5");
  read("mamba_ssm_cache_dtype", "mamba", "NemotronH");
}

}  // namespace

json hf_config_to_spec_document(const json& config, const json* quant_config,
                                const std::string& source) {
  json doc = architecture_spec_document(config, source);
  add_state_dtypes(config, source, doc);
  const json quant = quantization_document(config, quant_config, source);
  if (!quant.is_null()) doc["quantization"] = quant;
  return doc;
}

ModelSpec model_spec_from_hf_config(const json& config, const json* quant_config,
                                    const std::string& source) {
  const json doc = hf_config_to_spec_document(config, quant_config, source);
  // JSON is YAML: the schema parser validates and expands it like a hand-written spec. The
  // document carries the file's path, which need not be UTF-8: such bytes become U+FFFD.
  ModelSpec spec =
      parse_model_spec_yaml(doc.dump(-1, ' ', false, json::error_handler_t::replace), source);
  check_group_size_divides(spec, source);
  return spec;
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
