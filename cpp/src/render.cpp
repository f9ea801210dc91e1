#include "vramplan/render.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <utility>
#include <vector>

#include "vramplan/knobs.hpp"
#include "vramplan/solver.hpp"

namespace vramplan {

nlohmann::json to_json(const ModelSpec& s) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& layer : s.layers) {
    layers.push_back({{"attention", attention_kind_name(layer.attention)},
                      {"mlp", layer.mlp},
                      {"moe", layer.moe},
                      {"num_key_value_heads", layer.num_key_value_heads},
                      {"head_dim", layer.head_dim},
                      {"sliding_window", layer.sliding_window},
                      {"attention_chunk_size", layer.attention_chunk_size}});
  }
  return {{"id", s.id},
          {"aliases", s.aliases},
          {"source", s.source},
          {"config_defaults", s.config_defaults},
          {"generic_assumptions", s.generic_assumptions},
          {"model_type", s.model_type},
          {"hidden_size", s.hidden_size},
          {"num_hidden_layers", s.num_hidden_layers},
          {"num_attention_heads", s.num_attention_heads},
          {"num_key_value_heads", s.num_key_value_heads},
          {"head_dim", s.head_dim},
          {"intermediate_size", s.intermediate_size},
          {"vocab_size", s.vocab_size},
          {"max_position_embeddings", s.max_position_embeddings},
          {"tie_word_embeddings", s.tie_word_embeddings},
          {"torch_dtype", dtype_info(s.torch_dtype).name},
          {"quantization", quant_method_name(s.quantization.method)},
          {"has_mla", s.has_mla},
          {"has_moe", s.has_moe},
          {"num_experts", s.has_moe ? s.moe.num_experts : 0},
          {"parameter_count", parameter_count(s)},
          {"layers", layers}};
}

nlohmann::json to_json(const GpuSpec& g) {
  return {{"id", g.id},
          {"aliases", g.aliases},
          {"shared_aliases", g.shared_aliases},
          {"name", g.name},
          {"vendor", g.vendor},
          {"total_memory_bytes", g.total_memory_bytes},
          {"total_memory_source", g.total_memory_source},
          {"total_memory_derived", g.total_memory_derived},
          {"compute_capability", g.compute_capability},
          {"num_sms", g.num_sms},
          {"unified_memory", g.unified_memory},
          {"pcie_only", g.pcie_only},
          {"mig_parent", g.mig_parent},
          {"mig_profile", g.mig_profile}};
}

nlohmann::json terms_json(const std::vector<Term>& terms) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : terms) {
    out.push_back({{"name", std::string(t.name)},
                   {"bytes", t.bytes},
                   {"provenance", std::string(t.provenance)}});
  }
  return out;
}

nlohmann::json to_json(const Breakdown& b) {
  const ResolvedConfig& c = b.config;
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : b.ranks) {
    ranks.push_back({{"pipeline_rank", r.pipeline_rank},
                     {"total_memory_bytes", r.total_memory_bytes},
                     {"requested_memory_bytes", r.requested_memory_bytes},
                     {"weights_bytes", r.weights_bytes},
                     {"lora_bytes", r.lora_bytes},
                     {"activation_peak_bytes", r.activation_peak_bytes},
                     {"non_torch_bytes", r.non_torch_bytes},
                     {"cudagraph_bytes", r.cudagraph_bytes},
                     {"cuda_context_bytes", r.cuda_context_bytes},
                     {"kv_cache_bytes", r.kv_cache_bytes},
                     {"kv_bytes_per_token", r.kv_bytes_per_token},
                     {"num_blocks", r.num_blocks},
                     {"block_size", r.kv_layout.block_size},
                     {"kv_page_bytes", r.kv_layout.page_bytes},
                     {"kv_group_size", r.kv_layout.group_size},
                     {"kv_num_groups", r.kv_layout.groups.size()},
                     {"kv_padding_layers", r.kv_layout.padding_layers},
                     {"headroom_bytes", r.headroom_bytes},
                     {"post_allocation_bytes", r.post_allocation_bytes},
                     {"terms", terms_json(r.terms)}});
  }
  const RankBreakdown& first = b.ranks.front();
  // "engine" names whose breakdown this is, as SGLang's JSON does: a reader picks the
  // engine's fields by it.
  return {{"engine", "vllm"},
          {"model", b.model_id},
          {"gpu", b.gpu_id},
          {"engine_version", b.profile().version},
          {"engine_version_warning", b.profile().version_warning.empty()
                                         ? nlohmann::json(nullptr)
                                         : nlohmann::json(b.profile().version_warning)},
          {"newest_known_vllm_version", b.profile().newest_known_version},
          {"engine_era", engine_era_name(b.profile().era)},
          {"model_runner", b.model_runner_v2 ? "v2" : "v1"},
          {"config",
           {{"gpu_memory_utilization", c.gpu_memory_utilization},
            {"max_model_len", c.max_model_len},
            {"max_num_seqs", c.max_num_seqs},
            {"max_num_batched_tokens", c.max_num_batched_tokens},
            {"block_size", c.block_size},
            {"kv_element_bytes", c.kv_element_bytes},
            {"dtype", dtype_info(c.served_dtype).name},
            {"quantization", quant_method_name(c.quantization.method)},
            {"tensor_parallel_size", c.tensor_parallel_size},
            {"pipeline_parallel_size", c.pipeline_parallel_size},
            {"enforce_eager", c.enforce_eager},
            {"num_cudagraph_sizes", c.num_cudagraph_sizes},
            {"max_cudagraph_capture_size", c.max_cudagraph_capture_size}}},
          {"weights_bytes", first.weights_bytes},
          {"kv_bytes_per_token", first.kv_bytes_per_token},
          {"activation_peak_bytes", first.activation_peak_bytes},
          {"non_torch_bytes", first.non_torch_bytes},
          {"cudagraph_bytes", first.cudagraph_bytes},
          {"kv_cache_bytes", first.kv_cache_bytes},
          {"num_blocks", b.num_blocks},
          {"kv_tokens", b.kv_tokens},
          {"max_concurrency", b.max_concurrency},
          {"request_kv_bytes", b.request_kv_bytes},
          {"estimated_max_model_len", b.estimated_max_model_len},
          {"startup_free_bytes", b.startup_free_bytes},
          {"outcome", outcome_name(b.outcome)},
          {"messages", b.messages},
          {"ranks", ranks},
          {"host",
           {{"process_baseline_bytes", b.host.process_baseline_bytes},
            {"loader_anonymous_bytes", b.host.loader_anonymous_bytes},
            {"page_cache_bytes", b.host.page_cache_bytes},
            {"pinned_bytes", b.host.pinned_bytes},
            {"input_batch_bytes", b.host.input_batch_bytes},
            {"sleep_backup_bytes", b.host.sleep_backup_bytes},
            {"required_bytes", b.host.required_bytes},
            {"terms", terms_json(b.host.terms)}}}};
}

namespace {

// The launch flags of a plan, in the knob registry's order, with vLLM's keyword names: the one
// list both the flag line and the LLM(...) kwargs are rendered from.
std::vector<std::pair<std::string, nlohmann::json>> launch_flags(const Plan& plan) {
  const EngineConfig& c = plan.config;
  std::vector<std::pair<std::string, nlohmann::json>> flags;
  for (const KnobSpec& knob : knob_specs()) {
    if (knob.kwarg.empty()) continue;  // planner-only knobs
    if (knob.kwarg == "speculative_config") {
      // The speculative knobs render together, once, as one JSON object.
      if (knob.name != "num_speculative_tokens" || c.num_speculative_tokens == 0) continue;
      nlohmann::json speculative = {{"num_speculative_tokens", c.num_speculative_tokens}};
      if (!c.speculative_method.empty()) speculative["method"] = c.speculative_method;
      if (c.draft_model) speculative["model"] = c.draft_model->id;
      flags.emplace_back("speculative_config", speculative);
      continue;
    }
    if (knob.name == "num_redundant_experts") {
      if (c.num_redundant_experts == 0) continue;
      if (plan.breakdown.profile().eplb_config_flag) {
        flags.emplace_back("eplb_config",
                           nlohmann::json{{"num_redundant_experts", c.num_redundant_experts}});
      } else {
        flags.emplace_back("num_redundant_experts", c.num_redundant_experts);
      }
      continue;
    }
    const std::optional<KnobValue> value = knob.get(c);
    if (!value) continue;
    // Before --all2all-backend existed the backend is an environment variable (to_vllm_env).
    if (knob.name == "all2all_backend" && !plan.breakdown.profile().all2all_backend_flag) continue;
    const std::string kwarg(knob.kwarg);
    if (knob.name == "max_loras") flags.emplace_back("enable_lora", true);
    if (const bool* flag = std::get_if<bool>(&*value)) {
      flags.emplace_back(kwarg, *flag);  // false only where a knob is unset by default
    } else if (const auto* integer = std::get_if<std::int64_t>(&*value)) {
      if (knob.type == KnobType::Bytes && knob.flag_unit_bytes > 1) {
        // GiB flags are rounded up to 0.01 so the offload is never smaller than planned.
        const double units =
            static_cast<double>(*integer) / static_cast<double>(knob.flag_unit_bytes);
        flags.emplace_back(kwarg, std::ceil(units * 100.0) / 100.0);
      } else {
        flags.emplace_back(kwarg, *integer);
      }
    } else if (const double* real = std::get_if<double>(&*value)) {
      flags.emplace_back(kwarg, *real);
    } else if (knob.name == "limit_mm_per_prompt" || knob.name == "kv_transfer_config") {
      // A dict for LLM(...), one quoted JSON word on the command line.
      flags.emplace_back(kwarg, nlohmann::json::parse(std::get<std::string>(*value)));
    } else {
      flags.emplace_back(kwarg, std::get<std::string>(*value));
    }
  }
  return flags;
}

// A flag's number with two decimals, as vLLM's docs write them, unless that changes the value
// (a pinned utilization of 0.34375 printed as 0.34 no longer starts): then the shortest text
// that reads back as the same double.
std::string flag_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  for (int digits = 3; digits <= 17 && std::strtod(text, nullptr) != value; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
  }
  return text;
}

}  // namespace

nlohmann::json to_vllm_env(const Plan& plan) {
  nlohmann::json out = nlohmann::json::object();
  const auto env_var = [](std::string_view knob) { return std::string(knob_spec(knob).env_var); };
  if (!plan.config.all2all_backend.empty() && !plan.breakdown.profile().all2all_backend_flag) {
    out[env_var("all2all_backend")] = plan.config.all2all_backend;
  }
  if (plan.config.vllm_use_v2_model_runner != "auto") {
    out[env_var("vllm_use_v2_model_runner")] = plan.config.vllm_use_v2_model_runner;
  }
  if (plan.config.vllm_use_flashinfer_sampler != "auto") {
    out[env_var("vllm_use_flashinfer_sampler")] = plan.config.vllm_use_flashinfer_sampler;
  }
  if (plan.config.lmcache_local_cpu_bytes) {
    out[env_var("lmcache_local_cpu_bytes")] =
        flag_number(static_cast<double>(*plan.config.lmcache_local_cpu_bytes) / (1 << 30));
  }
  return out;
}

nlohmann::json to_llm_kwargs(const Plan& plan) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : launch_flags(plan)) out[name] = value;
  return out;
}

std::vector<std::string> to_vllm_argv(const Plan& plan) {
  std::vector<std::string> argv;
  for (const auto& [name, value] : launch_flags(plan)) {
    std::string flag = "--" + name;
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (value.is_boolean()) {
      if (value.get<bool>()) {
        argv.push_back(flag);  // store_true flags
      } else if (plan.breakdown.profile().negated_boolean_flags) {
        argv.push_back("--no-" + flag.substr(2));
      } else {
        argv.push_back(flag);
        argv.push_back("False");
      }
      continue;
    }
    argv.push_back(flag);
    if (value.is_number_float()) {
      argv.push_back(flag_number(value.get<double>()));
    } else if (value.is_string()) {
      argv.push_back(value.get<std::string>());
    } else {
      argv.push_back(value.dump());  // compact JSON: one word, no spaces
    }
  }
  return argv;
}

std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 ||
           std::string_view("-_.,:/=+@%").find(static_cast<char>(c)) != std::string_view::npos;
  });
  if (plain) return word;
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string to_vllm_args(const Plan& plan) {
  std::string out;
  for (const std::string& word : to_vllm_argv(plan)) {
    out += (out.empty() ? "" : " ") + shell_word(word);
  }
  return out;
}

nlohmann::json to_json(const KnobChange& change) {
  return {{"knob", change.knob},
          {"value", change.value},
          {"before", change.before},
          {"reason", change.reason}};
}

namespace {

nlohmann::json changes_json(const std::vector<KnobChange>& changes) {
  nlohmann::json out = nlohmann::json::array();
  for (const KnobChange& c : changes) out.push_back(to_json(c));
  return out;
}

}  // namespace

nlohmann::json to_json(const Remedy& remedy) {
  return {
      {"kind", remedy.kind},   {"change", remedy.change}, {"changes", changes_json(remedy.changes)},
      {"drops", remedy.drops}, {"fits", remedy.fits},     {"detail", remedy.detail},
      {"flags", remedy.flags}};
}

nlohmann::json to_json(const std::vector<Remedy>& remedies) {
  nlohmann::json out = nlohmann::json::array();
  for (const Remedy& r : remedies) out.push_back(to_json(r));
  return out;
}

nlohmann::json to_json(const WorkloadReport& w) {
  if (!w.present) return nullptr;
  return {{"description", w.description},
          {"pool_blocks", w.pool_blocks},
          {"shared_prefix_blocks", w.shared_prefix_blocks},
          {"blocks_p50", w.blocks_p50},
          {"blocks_p99", w.blocks_p99},
          {"requests_held_p50", w.requests_held_p50},
          {"requests_held_p99", w.requests_held_p99},
          {"preemption_target", w.preemption_target},
          {"preemption_probability", w.preemption_probability},
          {"max_num_seqs_for_target", w.max_num_seqs_for_target},
          {"request_seconds", w.request_seconds},
          {"requests_per_second_bound", w.requests_per_second_bound},
          {"activation_peak_bytes", w.activation_peak_bytes},
          {"activation_kv_tokens", w.activation_kv_tokens},
          {"prefill_steps_p50", w.prefill_steps_p50},
          {"prefill_steps_p99", w.prefill_steps_p99}};
}

nlohmann::json to_json(const Plan& plan) {
  const nlohmann::json remedies = to_json(plan.remedies);
  const EngineProfile& engine = plan.breakdown.profile();
  return {{"as_written",
           {{"fits", plan.as_written_fits},
            {"verdict", plan.as_written_verdict},
            {"outcome", outcome_name(plan.as_written_outcome)}}},
          {"fits", plan.fits},
          {"verdict", plan.verdict},
          {"engine_version", engine.version},
          {"engine_version_warning", engine.version_warning.empty()
                                         ? nlohmann::json(nullptr)
                                         : nlohmann::json(engine.version_warning)},
          {"changed", changes_json(plan.changed)},
          {"gpu_memory_utilization", plan.gpu_memory_utilization},
          {"max_model_len", plan.max_model_len},
          {"max_num_seqs", plan.max_num_seqs},
          {"max_num_batched_tokens", plan.max_num_batched_tokens},
          {"concurrent_sequences", plan.concurrent_sequences},
          {"max_concurrency", plan.max_concurrency},
          {"runtime_headroom_bytes", plan.runtime_headroom_bytes},
          {"workload", to_json(plan.workload)},
          {"binding",
           {{"gpu_memory_utilization", plan.binding_gpu_memory_utilization},
            {"max_model_len", plan.binding_max_model_len},
            {"max_num_seqs", plan.binding_max_num_seqs},
            {"max_num_batched_tokens", plan.binding_max_num_batched_tokens}}},
          {"safety_margin_bytes", plan.safety_margin_bytes},
          {"vllm_args", to_vllm_args(plan)},
          {"vllm_argv", to_vllm_argv(plan)},
          {"vllm_env", to_vllm_env(plan)},
          {"llm_kwargs", to_llm_kwargs(plan)},
          {"remedies", remedies},
          {"breakdown", to_json(plan.breakdown)}};
}

}  // namespace vramplan
