// vLLM engine profiles from model_specs/engines.yaml (compiled in): version -> defaults and
// accounting rules.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "vramplan/engine.hpp"
#include "vramplan/engines_yaml.hpp"
#include "vramplan/errors.hpp"

namespace vramplan {
namespace {

// 0.<minor> of a version string ("0.19.0", "v0.6.4.post2", "0.10.1.x"); -1 if unreadable.
int parse_minor(const std::string& version) {
  std::size_t pos = 0;
  while (pos < version.size() && !std::isdigit(static_cast<unsigned char>(version[pos]))) ++pos;
  if (pos == version.size()) return -1;
  std::istringstream in(version.substr(pos));
  int major = -1;
  int minor = -1;
  char dot = 0;
  in >> major >> dot >> minor;
  if (in.fail() || dot != '.' || major != 0 || minor < 0 || minor > 1000) return -1;
  return minor;
}

class Row {
 public:
  Row(const YAML::Node& node, std::string file, std::size_t index)
      : node_(node), file_(std::move(file)), prefix_("engines[" + std::to_string(index) + "].") {}

  [[noreturn]] void fail(const std::string& key, const std::string& value,
                         const std::string& problem) const {
    throw SpecError(file_, prefix_ + key, value, problem);
  }
  YAML::Node get(const std::string& key) const {
    const YAML::Node value = node_[key];
    if (!value || value.IsNull()) fail(key, "missing", "required field is missing");
    if (!value.IsScalar() && !value.IsMap()) fail(key, "not a scalar", "expected a value");
    return value;
  }
  template <typename T>
  T scalar(const std::string& key, const YAML::Node& value) const {
    try {
      return value.as<T>();
    } catch (const YAML::Exception&) {
      fail(key, value.IsScalar() ? value.Scalar() : "a map", "wrong type");
    }
  }
  double number(const std::string& key, double low, double high) const {
    const double v = scalar<double>(key, get(key));
    if (!(v >= low && v <= high)) fail(key, std::to_string(v), "out of range");
    return v;
  }
  std::int64_t integer(const std::string& key, const YAML::Node& value, std::int64_t low,
                       std::int64_t high) const {
    const auto v = scalar<std::int64_t>(key, value);
    if (v < low || v > high) fail(key, std::to_string(v), "out of range");
    return v;
  }
  bool flag(const std::string& key) const { return scalar<bool>(key, get(key)); }
  std::string text(const std::string& key) const { return scalar<std::string>(key, get(key)); }
  std::int64_t sub_integer(const std::string& map, const std::string& key) const {
    const YAML::Node m = get(map);
    if (!m.IsMap()) fail(map, "not a map", "expected a map");
    const YAML::Node v = m[key];
    if (!v || !v.IsScalar()) fail(map + "." + key, "missing", "required field is missing");
    return integer(map + "." + key, v, 1, std::int64_t{1} << 24);
  }

 private:
  YAML::Node node_;
  std::string file_;
  std::string prefix_;
};

const std::vector<EngineProfile>& compiled_profiles() {
  static const std::vector<EngineProfile> profiles =
      parse_engine_profiles(detail::kEnginesYaml, "model_specs/engines.yaml");
  return profiles;
}

}  // namespace

std::vector<EngineProfile> parse_engine_profiles(const std::string& yaml_text,
                                                 const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw SpecError(file, "<document>", "unparsable", e.what());
  }
  if (!root.IsMap() || !root["engines"] || !root["engines"].IsSequence() || root.size() != 1) {
    throw SpecError(file, "engines", "missing", "expected one top-level `engines:` list");
  }
  const YAML::Node list = root["engines"];
  if (list.size() == 0 || list.size() > 1000) {
    throw SpecError(file, "engines", std::to_string(list.size()) + " rows",
                    "expected 1..1000 rows");
  }
  std::vector<EngineProfile> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].IsMap())
      throw SpecError(file, "engines[" + std::to_string(i) + "]", "", "expected a map");
    const Row row(list[i], file, i);
    EngineProfile p;
    const std::string from = row.text("from_version");
    p.from_minor = parse_minor(from);
    if (p.from_minor < 0) row.fail("from_version", from, "expected 0.<minor>");
    if (!out.empty() && p.from_minor <= out.back().from_minor) {
      row.fail("from_version", from, "rows must be in ascending version order");
    }
    const std::string era = row.text("era");
    if (era == "v0") {
      p.era = EngineEra::V0;
    } else if (era == "v1-early") {
      p.era = EngineEra::V1Early;
    } else if (era == "v1") {
      p.era = EngineEra::V1Mid;
    } else if (era == "v1-latest") {
      p.era = EngineEra::V1Latest;
    } else {
      row.fail("era", era, "expected v0, v1-early, v1 or v1-latest");
    }
    p.default_gpu_memory_utilization = row.number("default_gpu_memory_utilization", 0.01, 1.0);
    p.cudagraph_in_budget = row.flag("cudagraph_in_budget");
    p.chunked_prefill_default = row.flag("chunked_prefill_default");
    const std::string report = row.text("kv_tokens_report");
    if (report != "blocks" && report != "concurrency") {
      row.fail("kv_tokens_report", report, "expected blocks or concurrency");
    }
    p.tokens_from_concurrency = report == "concurrency";
    p.sampler_bytes_per_logit = row.number("sampler_bytes_per_logit", 0.0, 1000.0);
    p.non_torch_single_rank_bytes =
        row.integer("non_torch_single_rank_bytes", row.get("non_torch_single_rank_bytes"), 0,
                    std::int64_t{64} << 30);
    p.max_num_seqs_large_gpu = row.sub_integer("max_num_seqs", "large_gpu");
    p.max_num_seqs_other_gpu = row.sub_integer("max_num_seqs", "other_gpu");
    p.max_num_batched_tokens_serve_large_gpu =
        row.sub_integer("max_num_batched_tokens", "serve_large_gpu");
    p.max_num_batched_tokens_serve_other_gpu =
        row.sub_integer("max_num_batched_tokens", "serve_other_gpu");
    p.max_num_batched_tokens_llm_large_gpu =
        row.sub_integer("max_num_batched_tokens", "llm_large_gpu");
    p.max_num_batched_tokens_llm_other_gpu =
        row.sub_integer("max_num_batched_tokens", "llm_other_gpu");
    out.push_back(p);
  }
  return out;
}

EngineProfile engine_profile(const std::string& version) {
  const std::vector<EngineProfile>& rows = compiled_profiles();
  const int minor = version.empty() ? rows.back().from_minor : parse_minor(version);
  if (minor < rows.front().from_minor) {
    throw ConfigError("engine_version", "'" + version + "'",
                      "0." + std::to_string(rows.front().from_minor) + " or later",
                      "not a vLLM version this planner knows");
  }
  EngineProfile p = rows.front();
  for (const EngineProfile& row : rows) {
    if (row.from_minor <= minor) p = row;
  }
  p.version = version.empty() ? "0." + std::to_string(minor) + ".0" : version;
  return p;
}

}  // namespace vramplan
