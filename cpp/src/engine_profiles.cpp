// vLLM engine profiles from model_specs/engines.yaml (compiled in): version -> defaults and
// accounting rules.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "vramplan/engine.hpp"
#include "vramplan/engines_yaml.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/text_scan.hpp"
#include "vramplan/version.hpp"
#include "yaml_load.hpp"

namespace vramplan {
namespace {

Version version_of(const EngineProfile& p) { return {p.from_major, p.from_minor, p.from_patch}; }

// A list of lower-case names (large_gpu_names, large_gpu_excluded_names).
std::vector<std::string> name_list(const YAML::Node& list, const std::string& file,
                                   const std::string& field) {
  if (!list.IsSequence()) throw SpecError(file, field, "not a list", "expected a list of names");
  std::vector<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    if (!list[i].IsScalar()) throw SpecError(file, at, "not a name", "expected a name");
    const std::string name = list[i].Scalar();
    const bool lower_case = std::none_of(name.begin(), name.end(), [](unsigned char c) {
      return std::isupper(c) || std::isspace(c);
    });
    if (name.empty() || name.size() > 64 || !lower_case) {
      throw SpecError(file, at, "'" + name + "'", "expected a lower-case name without spaces");
    }
    names.push_back(name);
  }
  return names;
}

class Row {
 public:
  Row(const YAML::Node& node, std::string file, std::size_t index)
      : Row(node, std::move(file), "engines[" + std::to_string(index) + "].") {}
  Row(const YAML::Node& node, std::string file, std::string prefix)
      : node_(node), file_(std::move(file)), prefix_(std::move(prefix)) {
    // yaml-cpp finds a map's key by converting every key before it to a string: the ~100
    // fields asked of each row made that most of the rows' walk. One pass indexes them.
    for (const auto& kv : node_) fields_.emplace(kv.first.Scalar(), kv.second);
  }

  [[noreturn]] void fail(const std::string& key, const std::string& value,
                         const std::string& problem) const {
    throw SpecError(file_, prefix_ + key, value, problem);
  }
  YAML::Node get(const std::string& key) const {
    asked(key);
    const YAML::Node value = field(key);
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
  bool has(const std::string& key) const {
    asked(key);
    return static_cast<bool>(field(key));
  }
  // Every key of the row must be one the parser asked for: a misspelt or retired field (say
  // `non_torch_single_rank_byte`, or one a profile of an older vramplan wrote) is an error
  // naming it, never a row that silently keeps the value it meant to change.
  void no_unread_keys() const {
    for (const auto& kv : node_) {
      const std::string key = kv.first.Scalar();
      if (std::find(asked_.begin(), asked_.end(), key) != asked_.end()) continue;
      std::string nearest;
      std::size_t nearest_common = 0;
      for (const std::string& known : asked_) {
        const std::size_t common = text::common_prefix(key, known);
        if (common > nearest_common) {
          nearest_common = common;
          nearest = known;
        }
      }
      fail(key.substr(0, 64), "present",
           "not a field of an engine row" +
               (nearest_common >= 4 ? " (did you mean " + nearest + "?)" : std::string()));
    }
  }
  YAML::Node list(const std::string& key) const {
    const YAML::Node l = field(key);
    if (!l || !l.IsSequence()) fail(key, l ? "not a list" : "missing", "expected a list");
    return l;
  }
  std::vector<std::string> names(const std::string& key) const {
    const YAML::Node list = field(key);
    if (!list || list.IsNull()) fail(key, "missing", "required field is missing");
    return name_list(list, file_, prefix_ + key);
  }
  std::vector<std::string> sub_names(const std::string& map_key, const std::string& key) const {
    const YAML::Node v = map(map_key)[key];
    if (!v) fail(map_key + "." + key, "missing", "required field is missing");
    return name_list(v, file_, prefix_ + map_key + "." + key);
  }
  bool flag(const std::string& key) const { return scalar<bool>(key, get(key)); }
  std::string text(const std::string& key) const { return scalar<std::string>(key, get(key)); }
  YAML::Node map(const std::string& key) const {
    const YAML::Node m = get(key);
    if (!m.IsMap()) fail(key, "not a map", "expected a map");
    return m;
  }
  // A map's keys must be among `known`: a field this version does not read (one a calibration
  // profile of an older vramplan wrote, say) is an error, not silently dropped.
  void only_keys(const std::string& map_key, std::initializer_list<const char*> known) const {
    for (const auto& kv : map(map_key)) {
      const std::string key = kv.first.Scalar();
      const bool ok =
          std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; });
      if (!ok) {
        std::string names;
        for (const char* k : known) names += (names.empty() ? "" : ", ") + std::string(k);
        fail(map_key + "." + key.substr(0, 64), "present",
             "not a field here (known: " + names + ")");
      }
    }
  }
  YAML::Node entry(const std::string& map_key, const YAML::Node& m, const std::string& key) const {
    const YAML::Node v = m[key];
    if (!v || !v.IsScalar()) fail(map_key + "." + key, "missing", "required field is missing");
    return v;
  }
  std::int64_t sub_integer(const std::string& map_key, const std::string& key, std::int64_t low,
                           std::int64_t high) const {
    return integer(map_key + "." + key, entry(map_key, map(map_key), key), low, high);
  }
  double sub_number(const std::string& map_key, const std::string& key, double low,
                    double high) const {
    const double v = scalar<double>(map_key + "." + key, entry(map_key, map(map_key), key));
    if (!(v >= low && v <= high)) fail(map_key + "." + key, std::to_string(v), "out of range");
    return v;
  }
  bool sub_flag(const std::string& map_key, const std::string& key) const {
    return scalar<bool>(map_key + "." + key, entry(map_key, map(map_key), key));
  }
  // A field the row omits keeps the previous row's value; the first row must give them all.
  bool inherits(const std::string& key, bool first_row) const {
    if (has(key)) return false;
    if (first_row) fail(key, "missing", "required field is missing (the first row gives all)");
    return true;
  }

 private:
  void asked(const std::string& key) const {
    if (std::find(asked_.begin(), asked_.end(), key) == asked_.end()) asked_.push_back(key);
  }
  // The row's value under `key`; an undefined node (false) when the row omits it.
  YAML::Node field(const std::string& key) const {
    const auto it = fields_.find(key);
    return it == fields_.end() ? YAML::Node(YAML::NodeType::Undefined) : it->second;
  }

  YAML::Node node_;
  std::string file_;
  std::string prefix_;
  // Built by emplace, never assigned: assigning a YAML::Node rewrites the node it refers to.
  std::map<std::string, YAML::Node, std::less<>> fields_;
  mutable std::vector<std::string> asked_;  // the fields read so far, for no_unread_keys
};

// A list of model_types into its shared form: at most ModelTypeList::kCapacity names of at most
// kMaxLength characters each.
ModelTypeList model_type_list(const Row& row, const std::string& field,
                              const std::vector<std::string>& names) {
  if (names.size() > ModelTypeList::kCapacity) {
    row.fail(field, std::to_string(names.size()) + " names",
             "at most " + std::to_string(ModelTypeList::kCapacity) + " model_types");
  }
  for (const std::string& name : names) {
    if (name.size() > ModelTypeList::kMaxLength) {
      row.fail(
          field, name.substr(0, 64),
          "a model_type of at most " + std::to_string(ModelTypeList::kMaxLength) + " characters");
    }
  }
  ModelTypeList list;
  list.names = std::make_shared<const std::vector<std::string>>(names);
  return list;
}

// A capture ladder, 1..4 ascending [start, end, step] segments, under `key`.ladder; returns
// how many.
std::int32_t parse_ladder(const Row& row, const char* key,
                          std::array<CaptureSegment, 4>& ladder_out) {
  const YAML::Node ladder = row.map(key)["ladder"];
  if (!ladder || !ladder.IsSequence() || ladder.size() == 0 || ladder.size() > ladder_out.size()) {
    row.fail(std::string(key) + ".ladder", ladder ? "wrong shape" : "missing",
             "expected 1..4 [start, end, step] segments");
  }
  std::int32_t previous_end = 0;
  for (std::size_t s = 0; s < ladder.size(); ++s) {
    const std::string name = std::string(key) + ".ladder[" + std::to_string(s) + "]";
    const YAML::Node seg = ladder[s];
    if (!seg.IsSequence() || seg.size() != 3)
      row.fail(name, "wrong shape", "expected [start, end, step]");
    CaptureSegment c;
    c.start = static_cast<std::int32_t>(row.integer(name, seg[0], 1, 1 << 16));
    c.end = static_cast<std::int32_t>(row.integer(name, seg[1], c.start, 1 << 16));
    c.step = static_cast<std::int32_t>(row.integer(name, seg[2], 1, 1 << 16));
    if (c.start <= previous_end) row.fail(name, std::to_string(c.start), "segments must ascend");
    previous_end = c.end;
    ladder_out[s] = c;
  }
  return static_cast<std::int32_t>(ladder.size());
}

void parse_era(EngineProfile& p, const Row& row, const char* key) {
  p.era = choice<EngineEra>(row, key,
                            {{"v0", EngineEra::V0},
                             {"v1-early", EngineEra::V1Early},
                             {"v1", EngineEra::V1Mid},
                             {"v1-latest", EngineEra::V1Latest}},
                            "expected v0, v1-early, v1 or v1-latest");
}

void parse_vit_rotary_attention(EngineProfile& p, const Row& row, const char* key) {
  p.vit_rotary_attention =
      choice<VitRotaryAttention>(row, key,
                                 {{"split_fp32", VitRotaryAttention::SplitFp32},
                                  {"concat_fp32", VitRotaryAttention::ConcatFp32},
                                  {"fused_qk", VitRotaryAttention::FusedQk}},
                                 "expected split_fp32, concat_fp32 or fused_qk");
}

void parse_unified_memory_free(EngineProfile& p, const Row& row, const char* key) {
  p.unified_memory_free = choice<UnifiedMemoryFree>(
      row, key,
      {{"cuda_free", UnifiedMemoryFree::CudaFree},
       {"available_orin_thor_spark", UnifiedMemoryFree::AvailableOrinThorSpark},
       {"available_integrated", UnifiedMemoryFree::AvailableIntegrated}},
      "expected cuda_free, available_orin_thor_spark or available_integrated");
}

void parse_mrope_cache_positions_factor(EngineProfile& p, const Row& row, const char* key) {
  row.only_keys(key, {"standard", "qwen3_vl"});
  p.mrope_cache_positions_factor_standard =
      static_cast<std::int32_t>(row.sub_integer(key, "standard", 1, 64));
  p.mrope_cache_positions_factor_qwen3_vl =
      static_cast<std::int32_t>(row.sub_integer(key, "qwen3_vl", 1, 64));
}

void parse_kv_tokens_report(EngineProfile& p, const Row& row, const char* key) {
  p.tokens_from_concurrency = choice<bool>(row, key, {{"blocks", false}, {"concurrency", true}},
                                           "expected blocks or concurrency");
}

// Ascending [compute capability, threads] pairs, 1..16 of them.
void parse_max_resident_threads_per_sm(EngineProfile& p, const Row& row, const char* key) {
  const YAML::Node table = row.list(key);
  if (table.size() == 0 || table.size() > p.max_resident_threads_per_sm.size()) {
    row.fail(key, "wrong shape", "expected 1..16 [compute capability, threads] pairs");
  }
  double previous = 0.0;
  for (std::size_t i = 0; i < table.size(); ++i) {
    const std::string name = std::string(key) + "[" + std::to_string(i) + "]";
    const YAML::Node pair = table[i];
    if (!pair.IsSequence() || pair.size() != 2)
      row.fail(name, "wrong shape", "expected [compute capability, threads]");
    ResidentThreadsPerSm entry;
    entry.compute_capability = row.scalar<double>(name, pair[0]);
    if (!(entry.compute_capability > previous && entry.compute_capability < 100.0))
      row.fail(name, std::to_string(entry.compute_capability), "capabilities must ascend");
    previous = entry.compute_capability;
    entry.threads = static_cast<std::int32_t>(row.integer(name, pair[1], 32, 1 << 16));
    p.max_resident_threads_per_sm[i] = entry;
  }
  p.max_resident_threads_per_sm_entries = static_cast<std::int32_t>(table.size());
}

void parse_cudagraph_capture(EngineProfile& p, const Row& row, const char* key) {
  row.only_keys(key, {"ladder", "bounded_by_max_num_seqs", "seq_multiplier",
                      "counts_speculative_tokens", "max_size", "bounded_by_batched_tokens"});
  p.capture_ladder_segments = parse_ladder(row, key, p.capture_ladder);
  p.capture_bounded_by_max_num_seqs = row.sub_flag(key, "bounded_by_max_num_seqs");
  p.capture_seq_multiplier =
      static_cast<std::int32_t>(row.sub_integer(key, "seq_multiplier", 1, 64));
  p.capture_counts_speculative_tokens = row.sub_flag(key, "counts_speculative_tokens");
  p.capture_max_size = static_cast<std::int32_t>(row.sub_integer(key, "max_size", 1, 1 << 16));
  p.capture_bounded_by_batched_tokens = row.sub_flag(key, "bounded_by_batched_tokens");
}

void parse_model_cudagraph_capture(EngineProfile& p, const Row& row, const char* key) {
  row.only_keys(key, {"model_types", "ladder"});
  p.model_capture_model_types =
      model_type_list(row, std::string(key) + ".model_types", row.sub_names(key, "model_types"));
  p.model_capture_ladder_segments =
      p.model_capture_model_types.empty() ? 0 : parse_ladder(row, key, p.model_capture_ladder);
}

void parse_cudagraph_pool_mib(EngineProfile& p, const Row& row, const char* key) {
  row.only_keys(key, {"base", "piece", "piece_moe", "piece_mla", "piece_mxfp4_moe"});
  p.cudagraph_base_mib = row.sub_number(key, "base", 0.0, 65536.0);
  p.cudagraph_piece_mib = row.sub_number(key, "piece", 0.0, 1024.0);
  p.cudagraph_piece_mib_moe = row.sub_number(key, "piece_moe", 0.0, 1024.0);
  p.cudagraph_piece_mib_mla = row.sub_number(key, "piece_mla", 0.0, 1024.0);
  p.cudagraph_piece_mib_mxfp4_moe = row.sub_number(key, "piece_mxfp4_moe", 0.0, 1024.0);
}

void parse_mm_prefix_lm_model_types(EngineProfile& p, const Row& row, const char* key) {
  p.mm_prefix_lm_model_types = model_type_list(row, key, row.names(key));
}

void parse_max_num_seqs(EngineProfile& p, const Row& row, const char* key) {
  row.only_keys(key, {"large_gpu", "other_gpu"});
  p.max_num_seqs_large_gpu = row.sub_integer(key, "large_gpu", 1, 1 << 24);
  p.max_num_seqs_other_gpu = row.sub_integer(key, "other_gpu", 1, 1 << 24);
}

void parse_max_num_batched_tokens(EngineProfile& p, const Row& row, const char* key) {
  row.only_keys(key, {"serve_large_gpu", "serve_other_gpu", "llm_large_gpu", "llm_other_gpu"});
  p.max_num_batched_tokens_serve_large_gpu = row.sub_integer(key, "serve_large_gpu", 1, 1 << 24);
  p.max_num_batched_tokens_serve_other_gpu = row.sub_integer(key, "serve_other_gpu", 1, 1 << 24);
  p.max_num_batched_tokens_llm_large_gpu = row.sub_integer(key, "llm_large_gpu", 1, 1 << 24);
  p.max_num_batched_tokens_llm_other_gpu = row.sub_integer(key, "llm_other_gpu", 1, 1 << 24);
}

void parse_all2all_backend_default(EngineProfile& p, const Row& row, const char* key) {
  const std::string backend = row.text(key);
  if (backend != "naive" && backend != "allgather_reducescatter") {
    row.fail(key, backend, "expected naive or allgather_reducescatter");
  }
  p.all2all_backend_default = backend;
}

void parse_all2all_backend_flag_from(EngineProfile& p, const Row& row, const char* key) {
  const std::string from = row.text(key);
  const auto version = Version::read(from);
  if (!version) row.fail(key, from, "expected <major>.<minor>");
  p.all2all_backend_flag_from_major = version->major;
  p.all2all_backend_flag_from_minor = version->minor;
}

void parse_eplb_config_flag_from(EngineProfile& p, const Row& row, const char* key) {
  const std::string from = row.text(key);
  const auto version = Version::read(from);
  if (!version) row.fail(key, from, "expected <major>.<minor>");
  p.eplb_config_flag_from_major = version->major;
  p.eplb_config_flag_from_minor = version->minor;
}

void parse_budget_formula(EngineProfile& p, const Row& row, const char* key) {
  p.consumed_budget_formula = choice<bool>(row, key, {{"components", false}, {"consumed", true}},
                                           "expected components or consumed");
}

void parse_model_runner_v2(EngineProfile& p, const Row& row, const char* key) {
  p.model_runner_v2 =
      choice<ModelRunnerV2Routing>(row, key,
                                   {{"none", ModelRunnerV2Routing::None},
                                    {"qwen3_dense", ModelRunnerV2Routing::Qwen3Dense},
                                    {"dense", ModelRunnerV2Routing::Dense},
                                    {"all", ModelRunnerV2Routing::All}},
                                   "expected none, qwen3_dense, dense or all");
}

void parse_huge_gpu_max_num_batched_tokens(EngineProfile& p, const Row& row, const char* key) {
  row.only_keys(key, {"serve", "llm"});
  p.max_num_batched_tokens_serve_huge_gpu = row.sub_integer(key, "serve", 1, 1 << 24);
  p.max_num_batched_tokens_llm_huge_gpu = row.sub_integer(key, "llm", 1, 1 << 24);
}

// One field of an engine row: its key, the EngineProfile member it sets and the bounds it must
// lie in (an integer's bounds are exact in a double), or the parser of a field with a vocabulary
// or a shape (a map, a list, a ladder).
using EngineFieldParser = void (*)(EngineProfile&, const Row&, const char* key);
struct EngineField {
  const char* key;
  std::variant<bool EngineProfile::*, double EngineProfile::*, std::int64_t EngineProfile::*,
               std::int32_t EngineProfile::*, std::vector<std::string> EngineProfile::*,
               EngineFieldParser>
      target;
  double low = 0.0;
  double high = 0.0;
};

constexpr double kMaxRowBytes = static_cast<double>(std::int64_t{64} << 30);
constexpr double kMaxGpuBytes = static_cast<double>(std::int64_t{1} << 50);
constexpr double kMaxRowTokens = 1 << 24;

// Every field of an engine row, in the order a row is read (so a row's first error is the one
// reported, and a misspelt key's "did you mean" looks through them in this order).
const std::vector<EngineField>& engine_fields() {
  using P = EngineProfile;
  static const std::vector<EngineField> fields = {
      {"era", parse_era},
      {"default_gpu_memory_utilization", &P::default_gpu_memory_utilization, 0.01, 1.0},
      {"cudagraph_in_budget", &P::cudagraph_in_budget},
      {"chunked_prefill_default", &P::chunked_prefill_default},
      {"startup_free_memory_check", &P::startup_free_memory_check},
      {"post_allocation_check", &P::post_allocation_check},
      {"graph_profiling_minimal_kv_cache", &P::graph_profiling_minimal_kv_cache},
      {"mla_backend_block_size", &P::mla_backend_block_size},
      {"non_torch_counts_cached_activations", &P::non_torch_counts_cached_activations},
      {"moe_exchange_tokens_from_batch", &P::moe_exchange_tokens_from_batch},
      {"state_blocks_bound_max_num_seqs", &P::state_blocks_bound_max_num_seqs},
      {"skips_encoder_without_modalities", &P::skips_encoder_without_modalities},
      {"vit_rotary_attention", parse_vit_rotary_attention},
      {"mrope_cache_positions_factor", parse_mrope_cache_positions_factor},
      {"long_context_chunked_prefill_rocm", &P::long_context_chunked_prefill_rocm},
      {"negated_boolean_flags", &P::negated_boolean_flags},
      {"chunked_prefill_flag_honored", &P::chunked_prefill_flag_honored},
      {"loads_gguf", &P::loads_gguf},
      {"loads_bitsandbytes", &P::loads_bitsandbytes},
      {"gptq_group_act_order", &P::gptq_group_act_order},
      {"kv_offload_shared_region", &P::kv_offload_shared_region},
      {"kv_offload_shared_region_rocm", &P::kv_offload_shared_region_rocm},
      {"unified_memory_free", parse_unified_memory_free},
      {"kv_tokens_report", parse_kv_tokens_report},
      {"kv_group_size_close_ratio", &P::kv_group_size_close_ratio, 0.0, 4.0},
      {"sampler_bytes_per_logit", &P::sampler_bytes_per_logit, 0.0, 1000.0},
      {"v0_below_compute_capability", &P::v0_below_compute_capability, 0.0, 100.0},
      {"flashinfer_sampler_bytes_per_logit", &P::flashinfer_sampler_bytes_per_logit, 0.0, 1000.0},
      {"sampler_full_sort_below_rows", &P::sampler_full_sort_below_rows, 0.0, 1 << 20},
      {"sampler_full_sort_bytes_per_logit", &P::sampler_full_sort_bytes_per_logit, 0.0, 1000.0},
      {"non_torch_single_rank_bytes", &P::non_torch_single_rank_bytes, 0.0, kMaxRowBytes},
      {"non_torch_pipeline_only_bytes", &P::non_torch_pipeline_only_bytes, 0.0, kMaxRowBytes},
      {"non_torch_tensor_parallel_bytes", &P::non_torch_tensor_parallel_bytes, 0.0, kMaxRowBytes},
      {"non_torch_tensor_parallel_pcie_bytes", &P::non_torch_tensor_parallel_pcie_bytes, 0.0,
       kMaxRowBytes},
      {"swap_space_default_bytes", &P::swap_space_default_bytes, 0.0, kMaxRowBytes},
      {"cuda_context_bytes", &P::cuda_context_bytes, 0.0, kMaxRowBytes},
      {"nccl_communicator_bytes", &P::nccl_communicator_bytes, 0.0, kMaxRowBytes},
      {"cuda_context_reference_threads", &P::cuda_context_reference_threads, 1.0, 1 << 30},
      {"max_resident_threads_per_sm", parse_max_resident_threads_per_sm},
      {"forward_hidden_buffers", &P::forward_hidden_buffers, 0.0, 1000.0},
      {"cudagraph_capture", parse_cudagraph_capture},
      {"model_cudagraph_capture", parse_model_cudagraph_capture},
      {"cudagraph_pool_mib", parse_cudagraph_pool_mib},
      {"full_cudagraph_attention_splits", &P::full_cudagraph_attention_splits, 0.0, 1024.0},
      {"mm_prefix_lm_model_types", parse_mm_prefix_lm_model_types},
      {"large_gpu_names", &P::large_gpu_names},
      {"large_gpu_min_memory_bytes", &P::large_gpu_min_memory_bytes, 0.0, kMaxGpuBytes},
      {"large_gpu_excluded_names", &P::large_gpu_excluded_names},
      {"max_num_seqs", parse_max_num_seqs},
      {"max_num_batched_tokens", parse_max_num_batched_tokens},
      {"all2all_backend_default", parse_all2all_backend_default},
      {"all2all_backend_flag_from", parse_all2all_backend_flag_from},
      {"eplb_config_flag_from", parse_eplb_config_flag_from},
      {"long_context_chunked_prefill_above", &P::long_context_chunked_prefill_above, 0.0,
       kMaxRowTokens},
      {"long_context_batched_tokens", &P::long_context_batched_tokens, 0.0, kMaxRowTokens},
      {"fused_moe_chunk_tokens", &P::fused_moe_chunk_tokens, 0.0, kMaxRowTokens},
      {"budget_formula", parse_budget_formula},
      {"model_runner_v2", parse_model_runner_v2},
      {"model_runner_v2_moe_model_types", &P::model_runner_v2_moe_model_types},
      {"model_runner_v2_unsupported_speculative_methods",
       &P::model_runner_v2_unsupported_speculative_methods},
      {"model_runner_v2_cudagraph_estimate", &P::model_runner_v2_cudagraph_estimate},
      {"graph_profiling_blocks_bounded_by_max_num_seqs",
       &P::graph_profiling_blocks_bounded_by_max_num_seqs},
      {"capture_max_size_datacenter_blackwell", &P::capture_max_size_datacenter_blackwell, 0.0,
       1 << 16},
      {"capture_speculative_request_grid", &P::capture_speculative_request_grid},
      {"capture_includes_max_num_seqs", &P::capture_includes_max_num_seqs},
      {"huge_gpu_min_memory_bytes", &P::huge_gpu_min_memory_bytes, 0.0, kMaxGpuBytes},
      {"huge_gpu_max_num_batched_tokens", parse_huge_gpu_max_num_batched_tokens},
  };
  return fields;
}

// One field's value from the row into `p`.
void apply_field(EngineProfile& p, const Row& row, const EngineField& field) {
  const char* key = field.key;
  const auto whole = [&] {
    return row.integer(key, row.get(key), static_cast<std::int64_t>(field.low),
                       static_cast<std::int64_t>(field.high));
  };
  if (const auto* flag = std::get_if<bool EngineProfile::*>(&field.target)) {
    p.** flag = row.flag(key);
  } else if (const auto* number = std::get_if<double EngineProfile::*>(&field.target)) {
    p.** number = row.number(key, field.low, field.high);
  } else if (const auto* wide = std::get_if<std::int64_t EngineProfile::*>(&field.target)) {
    p.** wide = whole();
  } else if (const auto* narrow = std::get_if<std::int32_t EngineProfile::*>(&field.target)) {
    p.** narrow = static_cast<std::int32_t>(whole());
  } else if (const auto* names =
                 std::get_if<std::vector<std::string> EngineProfile::*>(&field.target)) {
    p.** names = row.names(key);
  } else {
    std::get<EngineFieldParser>(field.target)(p, row, key);
  }
}

// The fields of one row (or of a calibration profile) over `p`: a field the row omits keeps
// p's value unless `first` (then every field is required).
void apply_row(EngineProfile& p, const Row& row, bool first) {
  for (const EngineField& field : engine_fields()) {
    if (!row.inherits(field.key, first)) apply_field(p, row, field);
  }
  row.no_unread_keys();
}

// Two thirds of engines.yaml is comment lines, and the rows are parsed at every start of the CLI
// (_core's knob table needs the newest row): emptied, a third of that parse.
const std::vector<EngineProfile>& compiled_profiles() {
  static const std::vector<EngineProfile> profiles = parse_engine_profiles(
      without_comment_lines(detail::kEnginesYaml), "model_specs/engines.yaml");
  return profiles;
}

}  // namespace

std::vector<EngineProfile> parse_engine_profiles(const std::string& yaml_text,
                                                 const std::string& file) {
  YAML::Node root = load_yaml_checked(yaml_text, file);
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
    const bool first = out.empty();
    EngineProfile p = first ? EngineProfile{} : out.back();
    const std::string from = row.text("from_version");
    const auto version = Version::read(from);
    if (!version) row.fail("from_version", from, "expected <major>.<minor>[.<patch>]");
    if (!first && *version <= version_of(p)) {
      row.fail("from_version", from, "rows must be in ascending version order");
    }
    p.from_major = version->major;
    p.from_minor = version->minor;
    p.from_patch = version->patch;
    apply_row(p, row, first);
    out.push_back(p);
  }
  return out;
}

EngineProfile apply_profile_overrides(const EngineProfile& base, const std::string& yaml_text,
                                      const std::string& file) {
  YAML::Node root = load_yaml_checked(yaml_text, file);
  const YAML::Node overrides = root.IsMap() ? root["overrides"] : YAML::Node();
  if (!overrides || !overrides.IsMap()) {
    throw SpecError(file, "overrides", "missing", "expected an `overrides:` map of engine fields");
  }
  for (const auto& entry : overrides) {
    const std::string key = entry.first.as<std::string>();
    if (key == "from_version" || key == "era") {
      throw SpecError(file, "overrides." + key, key, "a profile cannot change the version row");
    }
  }
  EngineProfile p = base;
  apply_row(p, Row(overrides, file, "overrides."), false);
  return p;
}

EngineProfile engine_profile(const std::string& version) {
  const std::vector<EngineProfile>& rows = compiled_profiles();
  const EngineProfile& oldest = rows.front();
  const Version newest = version_of(rows.back());
  const auto parsed = version.empty() ? std::optional<Version>(newest) : Version::read(version);
  if (!parsed || *parsed < version_of(oldest)) {
    throw ConfigError("engine_version", "'" + version + "'",
                      version_of(oldest).text() + " .. " + newest.text() + " (newer plans with " +
                          newest.text() + "'s rules), as <major>.<minor>[.<patch>]",
                      "not a vLLM version this planner knows");
  }
  // The newest row at or below the version, copied once (each launch compiles through here).
  const EngineProfile* chosen = &oldest;
  for (const EngineProfile& row : rows) {
    if (version_of(row) <= *parsed) chosen = &row;
  }
  EngineProfile p = *chosen;
  p.version = version.empty() ? parsed->text() : version;
  p.newest_known_version = newest.text();
  if (newest < *parsed) {
    p.version_warning = std::string(kVersionWarningName) + ": vLLM " + version +
                        " is newer than the newest release this planner knows (" + newest.text() +
                        "); planned with the " + newest.text() + " rules, which may not match it";
  }
  p.all2all_backend_flag =
      Version{p.all2all_backend_flag_from_major, p.all2all_backend_flag_from_minor, 0} <= *parsed;
  p.eplb_config_flag =
      Version{p.eplb_config_flag_from_major, p.eplb_config_flag_from_minor, 0} <= *parsed;
  return p;
}

EngineProfile v0_fallback_profile(const EngineProfile& requested) {
  const std::vector<EngineProfile>& rows = compiled_profiles();
  const auto v0 = std::find_if(rows.rbegin(), rows.rend(),
                               [](const EngineProfile& row) { return row.era == EngineEra::V0; });
  EngineProfile p = v0 != rows.rend() ? *v0 : rows.front();
  p.version = requested.version;
  p.newest_known_version = requested.newest_known_version;
  p.version_warning = requested.version_warning;
  p.all2all_backend_flag = requested.all2all_backend_flag;
  return p;
}

bool runs_v0_fallback(const EngineProfile& requested, const GpuSpec& gpu) {
  return requested.v0_below_compute_capability > 0.0 && gpu.vendor == "nvidia" &&
         gpu.compute_capability > 0.0 &&
         gpu.compute_capability < requested.v0_below_compute_capability;
}

std::string newest_known_vllm_version() { return version_of(compiled_profiles().back()).text(); }

const std::vector<EngineProfile>& engine_profile_rows() { return compiled_profiles(); }

std::string engine_row_version(const EngineProfile& row) { return version_of(row).text(); }

std::optional<bool> vllm_version_at_least(const std::string& version, const std::string& from) {
  const auto v = Version::read(version);
  const auto f = Version::read(from);
  if (!v || !f) return std::nullopt;
  return *f <= *v;
}

bool uses_large_batch_defaults(const EngineProfile& profile, const GpuSpec& gpu) {
  std::string names = gpu.id + " " + gpu.name;
  std::transform(names.begin(), names.end(), names.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto named = [&names](const std::vector<std::string>& list) {
    return std::any_of(list.begin(), list.end(), [&names](const std::string& name) {
      return names.find(name) != std::string::npos;
    });
  };
  const bool by_memory = profile.large_gpu_min_memory_bytes > 0 &&
                         gpu.total_memory_bytes >= profile.large_gpu_min_memory_bytes;
  return (named(profile.large_gpu_names) || by_memory) && !named(profile.large_gpu_excluded_names);
}

BatchDefaults batch_defaults(const EngineProfile& profile, const GpuSpec& gpu, bool llm_class) {
  BatchDefaults d;
  if (profile.huge_gpu_min_memory_bytes > 0 &&
      gpu.total_memory_bytes >= profile.huge_gpu_min_memory_bytes) {
    // get_batch_defaults checks the >= 160 GiB tier before the large one (0.28+).
    d.max_num_seqs = profile.max_num_seqs_large_gpu;
    d.max_num_batched_tokens = llm_class ? profile.max_num_batched_tokens_llm_huge_gpu
                                         : profile.max_num_batched_tokens_serve_huge_gpu;
    return d;
  }
  const bool large = uses_large_batch_defaults(profile, gpu);
  d.max_num_seqs = large ? profile.max_num_seqs_large_gpu : profile.max_num_seqs_other_gpu;
  d.max_num_batched_tokens = llm_class ? (large ? profile.max_num_batched_tokens_llm_large_gpu
                                                : profile.max_num_batched_tokens_llm_other_gpu)
                                       : (large ? profile.max_num_batched_tokens_serve_large_gpu
                                                : profile.max_num_batched_tokens_serve_other_gpu);
  return d;
}

}  // namespace vramplan
