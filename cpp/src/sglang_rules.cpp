// SGLang release rows from model_specs/sglang.yaml (compiled in): strict parsing, version lookup.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "vramplan/errors.hpp"
#include "vramplan/sglang.hpp"
#include "vramplan/sglang_yaml.hpp"
#include "vramplan/version.hpp"
#include "yaml_load.hpp"

namespace vramplan {
namespace {

Version version_of(const SglangRules& r) { return {r.major, r.minor, r.patch}; }

// Every field a row must give; anything else is an unknown field.
const std::set<std::string>& row_keys() {
  static const std::set<std::string> keys = {
      "from_version",
      "release",
      "default_fraction_rule",
      "parallel_steps",
      "parallel_steps_max_gpu_mib",
      "large_gpu_fraction",
      "boost_above_gpu_mib",
      "boost_headroom_mib",
      "boost_cap_reserve_mib",
      "reserve_base_mib",
      "reserve_per_activation_token_mib",
      "min_activation_tokens",
      "reserve_per_parallel_rank_mib",
      "reserve_per_decode_graph_bs_mib",
      "reserve_per_prefill_graph_mib",
      "reserve_mla_prefill_graphs_mib",
      "reserve_floor_mib",
      "reserve_floor_above_gpu_mib",
      "memory_tiers",
      "large_tp_size",
      "decode_graph_ladder",
      "prefill_graphs",
      "prefill_graph_ladder",
      "mla_prefill_graph_max_tokens",
      "running_requests_rule",
      "req_pool_requests_per_context",
      "req_pool_min_requests",
      "req_pool_max_requests",
      "req_to_token_extra_columns",
      "req_to_token_element_bytes",
      "page_size_default",
      "kv_padding_page",
      "weights_error",
      "swa_full_tokens_ratio_default",
      "mamba_full_memory_ratio_default",
      "mamba_slots_per_request",
      "decode_graph_estimate_mib_per_bs",
      "prefill_graph_estimate_mib_per_size",
      "cuda_context_bytes",
      "nccl_pcie_bytes",
      "nccl_nvlink_bytes",
  };
  return keys;
}

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

SglangRules parse_row(const YAML::Node& node, const std::string& file, std::size_t index) {
  const std::string prefix = "sglang[" + std::to_string(index) + "].";
  if (!node.IsMap())
    throw SpecError(file, "sglang[" + std::to_string(index) + "]", "", "expected a map");
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    if (row_keys().count(key) == 0) {
      throw SpecError(file, prefix + key, key, "unknown field");
    }
  }
  const Row row(node, file, prefix);
  SglangRules r;
  r.from_version = row.text("from_version");
  const auto version = Version::read(r.from_version);
  if (!version) row.fail("from_version", r.from_version, "expected major.minor[.patch]");
  r.major = version->major;
  r.minor = version->minor;
  r.patch = version->patch;
  r.release = row.text("release");
  if (r.release.empty() || r.release.size() > 32)
    row.fail("release", r.release, "expected a version");

  const std::string rule = row.text("default_fraction_rule");
  if (rule == "parallel_steps") {
    r.fraction_rule = SglangFractionRule::ParallelSteps;
  } else if (rule == "tiered_reserve") {
    r.fraction_rule = SglangFractionRule::TieredReserve;
  } else if (rule == "reserve") {
    r.fraction_rule = SglangFractionRule::Reserve;
  } else {
    row.fail("default_fraction_rule", rule, "expected parallel_steps, tiered_reserve or reserve");
  }
  const YAML::Node steps = row.list("parallel_steps");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::string at = "parallel_steps[" + std::to_string(i) + "]";
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
    row.fail("parallel_steps", "no step for size 1",
             "the parallel_steps rule needs a last step of 1");
  }
  r.parallel_steps_max_gpu_mib = row.integer("parallel_steps_max_gpu_mib", 0, kMaxMib);
  r.large_gpu_fraction = row.number("large_gpu_fraction", 0.0, 0.99);
  r.boost_above_gpu_mib = row.integer("boost_above_gpu_mib", 0, kMaxMib);
  r.boost_headroom_mib = row.integer("boost_headroom_mib", 0, kMaxMib);
  r.boost_cap_reserve_mib = row.integer("boost_cap_reserve_mib", 0, kMaxMib);
  r.reserve_base_mib = row.number("reserve_base_mib", 0.0, 1e6);
  r.reserve_per_activation_token_mib = row.number("reserve_per_activation_token_mib", 0.0, 64.0);
  r.min_activation_tokens = row.integer("min_activation_tokens", 0, kMaxTokens);
  r.reserve_per_parallel_rank_mib = row.number("reserve_per_parallel_rank_mib", 0.0, 1e5);
  r.reserve_per_decode_graph_bs_mib = row.number("reserve_per_decode_graph_bs_mib", 0.0, 1e3);
  r.reserve_per_prefill_graph_mib = row.number("reserve_per_prefill_graph_mib", 0.0, 1e3);
  r.reserve_mla_prefill_graphs_mib = row.number("reserve_mla_prefill_graphs_mib", 0.0, 1e6);
  r.reserve_floor_mib = row.number("reserve_floor_mib", 0.0, 1e6);
  r.reserve_floor_above_gpu_mib = row.integer("reserve_floor_above_gpu_mib", 0, kMaxMib);
  if (r.fraction_rule == SglangFractionRule::Reserve && r.reserve_base_mib <= 0.0) {
    row.fail("reserve_base_mib", "0", "the reserve rule needs a positive base");
  }

  const YAML::Node tiers = row.list("memory_tiers");
  if (tiers.size() == 0) row.fail("memory_tiers", "empty", "expected at least one tier");
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    const std::string at = "memory_tiers[" + std::to_string(i) + "]";
    if (!tiers[i].IsMap()) row.fail(at, "not a map", "expected a map");
    for (const auto& entry : tiers[i]) {
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
    const Row tier(tiers[i], file, prefix + at + ".");
    SglangMemoryTier t;
    t.below_mib = tier.integer("below_mib", 0, kMaxMib);
    t.chunked_prefill_size = tier.integer("chunked_prefill_size", 1, kMaxTokens);
    t.graph_max_bs_small_tp =
        static_cast<std::int32_t>(tier.integer("graph_max_bs_small_tp", 1, 1 << 16));
    t.graph_max_bs_large_tp =
        static_cast<std::int32_t>(tier.integer("graph_max_bs_large_tp", 1, 1 << 16));
    // The per-tier reserve belongs to the tiered_reserve rule only.
    if (r.fraction_rule == SglangFractionRule::TieredReserve) {
      t.reserve_gib = tier.number("reserve_gib", 0.0, 1024.0);
      t.reserve_gib_per_parallel = tier.number("reserve_gib_per_parallel", 0.0, 64.0);
    } else if (tiers[i]["reserve_gib"] || tiers[i]["reserve_gib_per_parallel"]) {
      row.fail(at + ".reserve_gib", "present",
               "only the tiered_reserve rule has a per-tier reserve");
    }
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
  r.large_tp_size = static_cast<std::int32_t>(row.integer("large_tp_size", 1, 1 << 16));
  r.decode_graph_ladder = ladder(row, "decode_graph_ladder");
  if (r.decode_graph_ladder.empty()) row.fail("decode_graph_ladder", "empty", "expected steps");
  r.prefill_graphs = row.flag("prefill_graphs");
  r.prefill_graph_ladder = ladder(row, "prefill_graph_ladder");
  if (r.prefill_graphs && r.prefill_graph_ladder.empty()) {
    row.fail("prefill_graph_ladder", "empty", "prefill_graphs needs a ladder");
  }
  r.mla_prefill_graph_max_tokens = row.integer("mla_prefill_graph_max_tokens", 0, kMaxTokens);

  const std::string running = row.text("running_requests_rule");
  if (running == "pool_bound") {
    r.running_requests_rule = SglangRunningRequestsRule::PoolBound;
  } else if (running == "half_tokens") {
    r.running_requests_rule = SglangRunningRequestsRule::HalfTokens;
  } else {
    row.fail("running_requests_rule", running, "expected pool_bound or half_tokens");
  }
  r.req_pool_requests_per_context = row.integer("req_pool_requests_per_context", 1, kMaxTokens);
  r.req_pool_min_requests = row.integer("req_pool_min_requests", 1, kMaxTokens);
  r.req_pool_max_requests =
      row.integer("req_pool_max_requests", r.req_pool_min_requests, kMaxTokens);
  r.req_to_token_extra_columns = row.integer("req_to_token_extra_columns", 0, 1 << 16);
  r.req_to_token_element_bytes = row.integer("req_to_token_element_bytes", 1, 8);
  r.page_size_default = static_cast<std::int32_t>(row.integer("page_size_default", 1, 1024));
  r.kv_padding_page = row.flag("kv_padding_page");
  const std::string weights_error = row.text("weights_error");
  if (weights_error == "not_enough_memory") {
    r.weights_error = SglangWeightsError::NotEnoughMemory;
  } else if (weights_error == "leave_no_memory") {
    r.weights_error = SglangWeightsError::LeaveNoMemory;
  } else {
    row.fail("weights_error", weights_error, "expected not_enough_memory or leave_no_memory");
  }
  r.swa_full_tokens_ratio_default = row.number("swa_full_tokens_ratio_default", 0.01, 1.0);
  r.mamba_full_memory_ratio_default = row.number("mamba_full_memory_ratio_default", 0.01, 100.0);
  r.mamba_slots_per_request = row.integer("mamba_slots_per_request", 1, 64);
  r.decode_graph_estimate_mib_per_bs = row.number("decode_graph_estimate_mib_per_bs", 0.0, 1e3);
  r.prefill_graph_estimate_mib_per_size =
      row.number("prefill_graph_estimate_mib_per_size", 0.0, 1e3);
  r.cuda_context_bytes = row.integer("cuda_context_bytes", 0, kMaxBytes);
  r.nccl_pcie_bytes = row.integer("nccl_pcie_bytes", 0, kMaxBytes);
  r.nccl_nvlink_bytes = row.integer("nccl_nvlink_bytes", 0, kMaxBytes);
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
