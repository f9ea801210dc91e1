// SGLang release rows from model_specs/sglang.yaml (compiled in): strict parsing, version lookup.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "vramplan/errors.hpp"
#include "vramplan/sglang.hpp"
#include "vramplan/sglang_yaml.hpp"
#include "vramplan/version.hpp"
#include "yaml_load.hpp"

namespace vramplan {
namespace {

Version version_of(const SglangRules& r) { return {r.major, r.minor, r.patch}; }

class Row {
 public:
  Row(const YAML::Node& node, std::string file, std::string prefix)
      : node_(node), file_(std::move(file)), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& value,
                         const std::string& problem) const {
    throw SpecError(file_, prefix_ + key, value, problem);
  }
  YAML::Node get(const std::string& key) const {
    const YAML::Node value = node_[key];
    if (!value || value.IsNull()) fail(key, "missing", "required field is missing");
    return value;
  }
  std::string scalar_text(const std::string& key, const YAML::Node& value) const {
    if (!value.IsScalar()) fail(key, "not a scalar", "expected a value");
    return value.Scalar();
  }
  std::string text(const std::string& key) const { return scalar_text(key, get(key)); }
  double number(const std::string& key, const YAML::Node& value, double low, double high) const {
    const std::string raw = scalar_text(key, value);
    double v = 0.0;
    try {
      v = value.as<double>();
    } catch (const YAML::Exception&) {
      fail(key, raw, "expected a number");
    }
    if (!(v >= low && v <= high)) {
      fail(key, raw, "out of range [" + std::to_string(low) + ", " + std::to_string(high) + "]");
    }
    return v;
  }
  double number(const std::string& key, double low, double high) const {
    return number(key, get(key), low, high);
  }
  std::int64_t integer(const std::string& key, const YAML::Node& value, std::int64_t low,
                       std::int64_t high) const {
    const std::string raw = scalar_text(key, value);
    std::int64_t v = 0;
    try {
      v = value.as<std::int64_t>();
    } catch (const YAML::Exception&) {
      fail(key, raw, "expected an integer");
    }
    if (v < low || v > high) {
      fail(key, raw, "out of range [" + std::to_string(low) + ", " + std::to_string(high) + "]");
    }
    return v;
  }
  std::int64_t integer(const std::string& key, std::int64_t low, std::int64_t high) const {
    return integer(key, get(key), low, high);
  }
  bool flag(const std::string& key) const {
    const YAML::Node value = get(key);
    const std::string raw = scalar_text(key, value);
    if (raw == "true") return true;
    if (raw == "false") return false;
    fail(key, raw, "expected true or false");
  }
  YAML::Node list(const std::string& key) const {
    const YAML::Node value = get(key);
    if (!value.IsSequence()) fail(key, "not a list", "expected a list");
    return value;
  }
  const std::string& file() const { return file_; }
  const std::string& prefix() const { return prefix_; }

 private:
  YAML::Node node_;
  std::string file_;
  std::string prefix_;
};

constexpr std::int64_t kMaxMib = std::int64_t{1} << 24;     // 16 TiB in MiB
constexpr std::int64_t kMaxBytes = std::int64_t{64} << 30;  // 64 GiB
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 24;

std::vector<SglangLadderStep> ladder(const Row& row, const std::string& key) {
  const YAML::Node list = row.list(key);
  std::vector<SglangLadderStep> steps;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = key + "[" + std::to_string(i) + "]";
    if (!list[i].IsSequence() || list[i].size() != 3) {
      row.fail(at, "not [start, end, step]", "expected a list of three integers");
    }
    SglangLadderStep s;
    s.start = row.integer(at + "[0]", list[i][0], 1, kMaxTokens);
    s.end = row.integer(at + "[1]", list[i][1], s.start, kMaxTokens);
    s.step = row.integer(at + "[2]", list[i][2], 1, kMaxTokens);
    if (!steps.empty() && s.start <= steps.back().end) {
      row.fail(at, std::to_string(s.start), "steps must ascend without overlap");
    }
    steps.push_back(s);
  }
  return steps;
}

void parse_from_version(SglangRules& r, const Row& row, const char* key) {
  r.from_version = row.text(key);
  const auto version = Version::read(r.from_version);
  if (!version) row.fail(key, r.from_version, "expected major.minor[.patch]");
  r.major = version->major;
  r.minor = version->minor;
  r.patch = version->patch;
}

void parse_cuda_graph_max_bs_flag(SglangRules& r, const Row& row, const char* key) {
  r.cuda_graph_max_bs_flag = row.text(key);
  if (r.cuda_graph_max_bs_flag != "--cuda-graph-max-bs" &&
      r.cuda_graph_max_bs_flag != "--cuda-graph-max-bs-decode") {
    row.fail(key, r.cuda_graph_max_bs_flag,
             "expected --cuda-graph-max-bs or --cuda-graph-max-bs-decode");
  }
}

void parse_release(SglangRules& r, const Row& row, const char* key) {
  r.release = row.text(key);
  if (r.release.empty() || r.release.size() > 32) row.fail(key, r.release, "expected a version");
}

void parse_default_fraction_rule(SglangRules& r, const Row& row, const char* key) {
  r.fraction_rule =
      choice<SglangFractionRule>(row, key,
                                 {{"parallel_steps", SglangFractionRule::ParallelSteps},
                                  {"tiered_reserve", SglangFractionRule::TieredReserve},
                                  {"reserve", SglangFractionRule::Reserve}},
                                 "expected parallel_steps, tiered_reserve or reserve");
}

// [min_parallel_size, fraction] pairs by descending size; the parallel_steps rule needs a last
// step of size 1.
void parse_parallel_steps(SglangRules& r, const Row& row, const char* key) {
  const YAML::Node steps = row.list(key);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
    if (!steps[i].IsSequence() || steps[i].size() != 2) {
      row.fail(at, "not [min_parallel_size, fraction]", "expected a pair");
    }
    SglangParallelStep s;
    s.min_parallel_size =
        static_cast<std::int32_t>(row.integer(at + "[0]", steps[i][0], 1, 1 << 16));
    s.fraction = row.number(at + "[1]", steps[i][1], 0.01, 0.99);
    if (!r.parallel_steps.empty() &&
        s.min_parallel_size >= r.parallel_steps.back().min_parallel_size) {
      row.fail(at, std::to_string(s.min_parallel_size), "steps must descend");
    }
    r.parallel_steps.push_back(s);
  }
  if (r.fraction_rule == SglangFractionRule::ParallelSteps &&
      (r.parallel_steps.empty() || r.parallel_steps.back().min_parallel_size != 1)) {
    row.fail(key, "no step for size 1", "the parallel_steps rule needs a last step of 1");
  }
}

void parse_reserve_base_mib(SglangRules& r, const Row& row, const char* key) {
  r.reserve_base_mib = row.number(key, 0.0, 1e6);
  if (r.fraction_rule == SglangFractionRule::Reserve && r.reserve_base_mib <= 0.0) {
    row.fail(key, "0", "the reserve rule needs a positive base");
  }
}

// One memory tier (`at` is "memory_tiers[i]"); the per-tier reserve belongs to the
// tiered_reserve rule only.
SglangMemoryTier memory_tier(const SglangRules& r, const Row& row, const YAML::Node& node,
                             const std::string& at) {
  if (!node.IsMap()) row.fail(at, "not a map", "expected a map");
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    if (key != "below_mib" && key != "chunked_prefill_size" && key != "graph_max_bs_small_tp" &&
        key != "graph_max_bs_large_tp" && key != "reserve_gib" &&
        key != "reserve_gib_per_parallel") {
      std::string field = at;
      field += ".";
      field += key;
      row.fail(field, key, "unknown field");
    }
  }
  const Row tier(node, row.file(), row.prefix() + at + ".");
  SglangMemoryTier t;
  t.below_mib = tier.integer("below_mib", 0, kMaxMib);
  t.chunked_prefill_size = tier.integer("chunked_prefill_size", 1, kMaxTokens);
  t.graph_max_bs_small_tp =
      static_cast<std::int32_t>(tier.integer("graph_max_bs_small_tp", 1, 1 << 16));
  t.graph_max_bs_large_tp =
      static_cast<std::int32_t>(tier.integer("graph_max_bs_large_tp", 1, 1 << 16));
  if (r.fraction_rule == SglangFractionRule::TieredReserve) {
    t.reserve_gib = tier.number("reserve_gib", 0.0, 1024.0);
    t.reserve_gib_per_parallel = tier.number("reserve_gib_per_parallel", 0.0, 64.0);
  } else if (node["reserve_gib"] || node["reserve_gib_per_parallel"]) {
    row.fail(at + ".reserve_gib", "present", "only the tiered_reserve rule has a per-tier reserve");
  }
  return t;
}

// Tiers by ascending below_mib; only the last is unbounded (below_mib 0).
void parse_memory_tiers(SglangRules& r, const Row& row, const char* key) {
  const YAML::Node tiers = row.list(key);
  if (tiers.size() == 0) row.fail(key, "empty", "expected at least one tier");
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
    const SglangMemoryTier t = memory_tier(r, row, tiers[i], at);
    const bool last = i + 1 == tiers.size();
    if (last != (t.below_mib == 0)) {
      row.fail(at + ".below_mib", std::to_string(t.below_mib),
               "only the last tier, and it must, have below_mib 0 (no bound)");
    }
    if (!r.memory_tiers.empty() && !last && t.below_mib <= r.memory_tiers.back().below_mib) {
      row.fail(at + ".below_mib", std::to_string(t.below_mib), "tiers must ascend");
    }
    r.memory_tiers.push_back(t);
  }
}

void parse_decode_graph_ladder(SglangRules& r, const Row& row, const char* key) {
  r.decode_graph_ladder = ladder(row, key);
  if (r.decode_graph_ladder.empty()) row.fail(key, "empty", "expected steps");
}

void parse_prefill_graph_ladder(SglangRules& r, const Row& row, const char* key) {
  r.prefill_graph_ladder = ladder(row, key);
  if (r.prefill_graphs && r.prefill_graph_ladder.empty()) {
    row.fail(key, "empty", "prefill_graphs needs a ladder");
  }
}

void parse_running_requests_rule(SglangRules& r, const Row& row, const char* key) {
  r.running_requests_rule =
      choice<SglangRunningRequestsRule>(row, key,
                                        {{"pool_bound", SglangRunningRequestsRule::PoolBound},
                                         {"half_tokens", SglangRunningRequestsRule::HalfTokens}},
                                        "expected pool_bound or half_tokens");
}

void parse_req_pool_max_requests(SglangRules& r, const Row& row, const char* key) {
  r.req_pool_max_requests = row.integer(key, r.req_pool_min_requests, kMaxTokens);
}

void parse_weights_error(SglangRules& r, const Row& row, const char* key) {
  r.weights_error =
      choice<SglangWeightsError>(row, key,
                                 {{"not_enough_memory", SglangWeightsError::NotEnoughMemory},
                                  {"leave_no_memory", SglangWeightsError::LeaveNoMemory}},
                                 "expected not_enough_memory or leave_no_memory");
}

void parse_hicache_rule(SglangRules& r, const Row& row, const char* key) {
  r.hicache_rule = choice<SglangHicacheRule>(row, key,
                                             {{"whole_host", SglangHicacheRule::WholeHost},
                                              {"per_host_rank", SglangHicacheRule::PerHostRank}},
                                             "expected whole_host or per_host_rank");
}

// --hicache-mem-layout's choices as SGLang spells them, the default first; [] for none.
void parse_hicache_mem_layouts(SglangRules& r, const Row& row, const char* key) {
  const YAML::Node layouts = row.list(key);
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
    const std::string layout = row.scalar_text(at, layouts[i]);
    const bool word = !layout.empty() && std::all_of(layout.begin(), layout.end(), [](char ch) {
      return (ch >= 'a' && ch <= 'z') || ch == '_';
    });
    if (!word) row.fail(at, layout, "expected a layout name (lower case and '_')");
    r.hicache_mem_layouts.push_back(layout);
  }
}

// One field of an SGLang row: its key, the SglangRules member it sets and the bounds it must lie
// in (an integer's bounds are exact in a double), or the parser of a field with a vocabulary, a
// shape or a rule tying it to a field before it.
using SglangFieldParser = void (*)(SglangRules&, const Row&, const char* key);
struct SglangField {
  const char* key;
  std::variant<std::int64_t SglangRules::*, std::int32_t SglangRules::*, double SglangRules::*,
               bool SglangRules::*, SglangFieldParser>
      target;
  double low = 0.0;
  double high = 0.0;
};

// Every field of a row, in the order a row is read (so a row's first error is the one
// reported); any other key is an unknown field.
const std::vector<SglangField>& sglang_fields() {
  using R = SglangRules;
  constexpr auto kMib = static_cast<double>(kMaxMib);
  constexpr auto kTokens = static_cast<double>(kMaxTokens);
  constexpr auto kBytes = static_cast<double>(kMaxBytes);
  static const std::vector<SglangField> fields = {
      {"from_version", parse_from_version},
      {"release", parse_release},
      {"default_fraction_rule", parse_default_fraction_rule},
      {"parallel_steps", parse_parallel_steps},
      {"parallel_steps_max_gpu_mib", &R::parallel_steps_max_gpu_mib, 0.0, kMib},
      {"large_gpu_fraction", &R::large_gpu_fraction, 0.0, 0.99},
      {"boost_above_gpu_mib", &R::boost_above_gpu_mib, 0.0, kMib},
      {"boost_headroom_mib", &R::boost_headroom_mib, 0.0, kMib},
      {"boost_cap_reserve_mib", &R::boost_cap_reserve_mib, 0.0, kMib},
      {"reserve_base_mib", parse_reserve_base_mib},
      {"reserve_per_activation_token_mib", &R::reserve_per_activation_token_mib, 0.0, 64.0},
      {"min_activation_tokens", &R::min_activation_tokens, 0.0, kTokens},
      {"reserve_per_parallel_rank_mib", &R::reserve_per_parallel_rank_mib, 0.0, 1e5},
      {"reserve_per_decode_graph_bs_mib", &R::reserve_per_decode_graph_bs_mib, 0.0, 1e3},
      {"reserve_per_prefill_graph_mib", &R::reserve_per_prefill_graph_mib, 0.0, 1e3},
      {"reserve_mla_prefill_graphs_mib", &R::reserve_mla_prefill_graphs_mib, 0.0, 1e6},
      {"reserve_floor_mib", &R::reserve_floor_mib, 0.0, 1e6},
      {"reserve_floor_above_gpu_mib", &R::reserve_floor_above_gpu_mib, 0.0, kMib},
      {"memory_tiers", parse_memory_tiers},
      {"large_tp_size", &R::large_tp_size, 1.0, 1 << 16},
      {"decode_graph_ladder", parse_decode_graph_ladder},
      {"prefill_graphs", &R::prefill_graphs},
      {"prefill_graph_ladder", parse_prefill_graph_ladder},
      {"mla_prefill_graph_max_tokens", &R::mla_prefill_graph_max_tokens, 0.0, kTokens},
      {"running_requests_rule", parse_running_requests_rule},
      {"req_pool_requests_per_context", &R::req_pool_requests_per_context, 1.0, kTokens},
      {"req_pool_min_requests", &R::req_pool_min_requests, 1.0, kTokens},
      {"req_pool_max_requests", parse_req_pool_max_requests},
      {"req_to_token_extra_columns", &R::req_to_token_extra_columns, 0.0, 1 << 16},
      {"req_to_token_element_bytes", &R::req_to_token_element_bytes, 1.0, 8.0},
      {"page_size_default", &R::page_size_default, 1.0, 1024.0},
      {"kv_padding_page", &R::kv_padding_page},
      {"weights_error", parse_weights_error},
      {"swa_full_tokens_ratio_default", &R::swa_full_tokens_ratio_default, 0.01, 1.0},
      {"mamba_full_memory_ratio_default", &R::mamba_full_memory_ratio_default, 0.01, 100.0},
      {"mamba_slots_per_request", &R::mamba_slots_per_request, 1.0, 64.0},
      {"decode_graph_estimate_mib_per_bs", &R::decode_graph_estimate_mib_per_bs, 0.0, 1e3},
      {"prefill_graph_estimate_mib_per_size", &R::prefill_graph_estimate_mib_per_size, 0.0, 1e3},
      {"cuda_graph_max_bs_flag", parse_cuda_graph_max_bs_flag},
      {"cuda_context_bytes", &R::cuda_context_bytes, 0.0, kBytes},
      {"nccl_pcie_bytes", &R::nccl_pcie_bytes, 0.0, kBytes},
      {"nccl_nvlink_bytes", &R::nccl_nvlink_bytes, 0.0, kBytes},
      {"hicache_rule", parse_hicache_rule},
      {"hicache_ratio_default", &R::hicache_ratio_default, 0.01, 1000.0},
      {"hicache_mem_layouts", parse_hicache_mem_layouts},
      {"hicache_host_reserve_bytes", &R::hicache_host_reserve_bytes, 0.0, kBytes},
      {"hicache_error_free_after_reserve", &R::hicache_error_free_after_reserve},
      {"hicache_pinned_power_of_two", &R::hicache_pinned_power_of_two},
      {"hicache_size_split", &R::hicache_size_split},
      {"hicache_host_memory_fraction_default", &R::hicache_host_memory_fraction_default, 0.0, 1.0},
  };
  return fields;
}

// One field's value from the row into `r`.
void apply_field(SglangRules& r, const Row& row, const SglangField& field) {
  const char* key = field.key;
  const auto whole = [&] {
    return row.integer(key, static_cast<std::int64_t>(field.low),
                       static_cast<std::int64_t>(field.high));
  };
  if (const auto* wide = std::get_if<std::int64_t SglangRules::*>(&field.target)) {
    r.** wide = whole();
  } else if (const auto* narrow = std::get_if<std::int32_t SglangRules::*>(&field.target)) {
    r.** narrow = static_cast<std::int32_t>(whole());
  } else if (const auto* number = std::get_if<double SglangRules::*>(&field.target)) {
    r.** number = row.number(key, field.low, field.high);
  } else if (const auto* flag = std::get_if<bool SglangRules::*>(&field.target)) {
    r.** flag = row.flag(key);
  } else {
    std::get<SglangFieldParser>(field.target)(r, row, key);
  }
}

SglangRules parse_row(const YAML::Node& node, const std::string& file, std::size_t index) {
  const std::string prefix = "sglang[" + std::to_string(index) + "].";
  if (!node.IsMap())
    throw SpecError(file, "sglang[" + std::to_string(index) + "]", "", "expected a map");
  const std::vector<SglangField>& fields = sglang_fields();
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const bool known = std::any_of(fields.begin(), fields.end(),
                                   [&key](const SglangField& field) { return key == field.key; });
    if (!known) throw SpecError(file, prefix + key, key, "unknown field");
  }
  const Row row(node, file, prefix);
  SglangRules r;
  for (const SglangField& field : fields) apply_field(r, row, field);
  return r;
}

}  // namespace

namespace {

SglangAccuracy parse_accuracy(const YAML::Node& node, const std::string& file) {
  if (!node.IsMap()) throw SpecError(file, "accuracy", "not a map", "expected a map of figures");
  SglangAccuracy a;
  const auto count = [&](const char* key, std::int64_t& out) {
    const YAML::Node v = node[key];
    if (!v) throw SpecError(file, std::string("accuracy.") + key, "missing", "a record count");
    out = v.as<std::int64_t>(-1);
    if (out < 0 || out > 100000) {
      throw SpecError(file, std::string("accuracy.") + key, v.Scalar(), "a count in 0..100000");
    }
  };
  const auto fraction = [&](const char* key, double& out) {
    const YAML::Node v = node[key];
    if (!v) throw SpecError(file, std::string("accuracy.") + key, "missing", "a fraction");
    out = v.as<double>(-1.0);
    if (!(out >= 0.0 && out <= 1.0)) {
      throw SpecError(file, std::string("accuracy.") + key, v.Scalar(), "a fraction in [0, 1]");
    }
  };
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    if (key != "kv_pool_records" && key != "kv_tokens_records" &&
        key != "kv_tokens_over_prediction_max" && key != "graph_records" &&
        key != "graph_under_estimate_max") {
      throw SpecError(file, "accuracy." + key, key, "unknown field");
    }
  }
  count("kv_pool_records", a.kv_pool_records);
  count("kv_tokens_records", a.kv_tokens_records);
  fraction("kv_tokens_over_prediction_max", a.kv_tokens_over_prediction_max);
  count("graph_records", a.graph_records);
  fraction("graph_under_estimate_max", a.graph_under_estimate_max);
  return a;
}

// "95%", "8.8%": one decimal where the figure has one.
std::string percent(double fraction) {
  const double tenths = std::round(fraction * 1000.0);
  std::ostringstream out;
  out << std::fixed << std::setprecision(std::fmod(tenths, 10.0) == 0.0 ? 0 : 1) << tenths / 10.0
      << "%";
  return out.str();
}

}  // namespace

std::string sglang_error_band(const SglangAccuracy& a) {
  return "KV pool cells exact on " + std::to_string(a.kv_pool_records) +
         " logged pools; whole-model KV tokens over-predicted by up to " +
         percent(a.kv_tokens_over_prediction_max) + " (" + std::to_string(a.kv_tokens_records) +
         " records); the CUDA-graph reserve fell short of measured captures by up to " +
         percent(a.graph_under_estimate_max) + " (" + std::to_string(a.graph_records) +
         " records), which the margin covers only in part (docs/sglang.md)";
}

SglangTable parse_sglang_yaml(const std::string& yaml_text, const std::string& file) {
  const YAML::Node root = load_yaml_checked(yaml_text, file);
  if (!root.IsMap()) throw SpecError(file, "", "not a map", "expected `sglang:`");
  for (const auto& entry : root) {
    const std::string key = entry.first.Scalar();
    // nvidia-smi totals are GPU facts: gpus.yaml nvidia_smi_memory_mib.
    if (key != "sglang" && key != "accuracy") throw SpecError(file, key, key, "unknown field");
  }
  SglangTable table;
  if (root["accuracy"]) table.accuracy = parse_accuracy(root["accuracy"], file);
  const YAML::Node rows = root["sglang"];
  if (!rows || !rows.IsSequence() || rows.size() == 0) {
    throw SpecError(file, "sglang", "missing", "expected a non-empty `sglang:` list of rows");
  }
  if (rows.size() > 64)
    throw SpecError(file, "sglang", std::to_string(rows.size()) + " rows", "at most 64");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SglangRules r = parse_row(rows[i], file, i);
    if (!table.rows.empty()) {
      const SglangRules& prev = table.rows.back();
      if (version_of(r) <= version_of(prev)) {
        throw SpecError(file, "sglang[" + std::to_string(i) + "].from_version", r.from_version,
                        "rows must ascend by version");
      }
    }
    table.rows.push_back(std::move(r));
  }
  return table;
}

const SglangTable& sglang_table() {
  static const SglangTable table =
      parse_sglang_yaml(detail::kSglangYaml, "model_specs/sglang.yaml");
  return table;
}

const SglangRules& sglang_rules(const SglangTable& table, const std::string& version) {
  if (table.rows.empty()) throw ConfigError("sglang_version", version, "", "no SGLang rows loaded");
  if (version.empty()) return table.rows.back();
  const auto parsed = Version::read(version);
  const std::string allowed = table.rows.front().from_version + " or later";
  if (!parsed)
    throw ConfigError("sglang_version", version, allowed, "not a version (major.minor[.patch])");
  const SglangRules* found = nullptr;
  for (const SglangRules& r : table.rows) {
    if (version_of(r) <= *parsed) found = &r;
  }
  if (found == nullptr) {
    throw ConfigError("sglang_version", version, allowed, "older than every SGLang row");
  }
  return *found;
}

std::string sglang_version_note(const SglangTable& table, const std::string& version) {
  if (table.rows.empty() || version.empty()) return "";
  const auto asked = Version::read(version);
  if (!asked) return "";
  const SglangRules* row = nullptr;
  for (const SglangRules& r : table.rows) {
    if (version_of(r) <= *asked) row = &r;
  }
  if (row == nullptr) return "";
  const auto read = Version::read(row->release);
  if (read && *read == *asked) return "";
  return "SGLang " + version + ": the rules read from the " + row->release +
         " wheel are assumed (this release itself was not read)";
}

}  // namespace vramplan
