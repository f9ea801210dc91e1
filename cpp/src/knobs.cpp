#include "vramplan/knobs.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/model_spec.hpp"
#include "vramplan/sglang_knobs.hpp"

namespace vramplan {
namespace {

constexpr double kNoLimit = 9.0e15;  // below 2^53: every int64 in range converts exactly
// Token counts fit in int32 so that tokens x bytes per token stays inside int64 (2.8e14 batched
// tokens overflowed the activation peak; found by fuzz_plan).
constexpr double kMaxTokens = 2147483647.0;
constexpr std::int64_t kGiBUnit = std::int64_t{1} << 30;

// Member access by pointer-to-member: one getter and setter shape for every knob. A plain
// member at its default reads as unset, so the set knobs are exactly those a user changed.
std::optional<KnobValue> as_value(double v) { return KnobValue{v}; }
std::optional<KnobValue> as_value(std::int64_t v) { return KnobValue{v}; }
std::optional<KnobValue> as_value(std::int32_t v) { return KnobValue{std::int64_t{v}}; }
std::optional<KnobValue> as_value(bool v) { return KnobValue{v}; }
std::optional<KnobValue> as_value(const std::string& v) { return KnobValue{v}; }
template <typename T>
std::optional<KnobValue> as_value(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return as_value(*v);
}

template <typename T>
void assign(T& member, const KnobValue& v) {
  if constexpr (std::is_same_v<T, bool>) {
    member = std::get<bool>(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    member = std::get<std::string>(v);
  } else if constexpr (std::is_same_v<T, double>) {
    member = std::get<double>(v);
  } else {
    member = static_cast<T>(std::get<std::int64_t>(v));
  }
}
template <typename T>
void assign(std::optional<T>& member, const KnobValue& v) {
  T value{};
  assign(value, v);
  member = value;
}

// Defaults, built once (comparing against a fresh EngineConfig{} would build its strings per
// call).
const EngineConfig& defaults() {
  static const EngineConfig config;
  return config;
}

template <auto Member>
std::optional<KnobValue> get_member(const EngineConfig& c) {
  const auto& value = c.*Member;
  using T = std::decay_t<decltype(value)>;
  if constexpr (!std::is_same_v<T, std::optional<double>> &&
                !std::is_same_v<T, std::optional<std::int64_t>> &&
                !std::is_same_v<T, std::optional<std::int32_t>>) {
    if (value == defaults().*Member) return std::nullopt;
  }
  return as_value(value);
}
template <auto Member>
void set_member(EngineConfig& c, const std::optional<KnobValue>& v) {
  if (!v) {
    c.*Member = defaults().*Member;
    return;
  }
  assign(c.*Member, *v);
}

std::optional<KnobValue> get_draft(const EngineConfig& c) {
  if (!c.draft_model) return std::nullopt;
  return KnobValue{c.draft_model->id};
}
void set_draft(EngineConfig& c, const std::optional<KnobValue>& v) {
  if (!v) {
    c.draft_model.reset();
    return;
  }
  // Only the bindings (which resolve an id or path to a ModelSpec) can set the drafter.
  throw ConfigError("speculative_model", knob_value_text(*v), "a resolved model spec",
                    "the drafter must be loaded before it is set");
}

#define VRAMPLAN_KNOB_ACCESS(member) \
  &get_member<&EngineConfig::member>, &set_member<&EngineConfig::member>

const std::vector<KnobSpec> kKnobs = {
    {"engine_version", KnobType::Text, "vLLM version", 0, 0, "", KnobDefault::NewestRow,
     "the newest row of model_specs/engines.yaml",
     "vLLM release whose memory accounting applies (e.g. 0.10.1, 0.19.0)", "", "", 1,
     VRAMPLAN_KNOB_ACCESS(engine_version), false},
    {"gpu_memory_utilization", KnobType::Fraction, "fraction of the GPU's total memory", 0.001, 1.0,
     "", KnobDefault::RowUtilization, "the version's row (default_gpu_memory_utilization)",
     "share of each GPU vLLM may use for weights, activations, graphs and the KV cache",
     "--gpu-memory-utilization", "gpu_memory_utilization", 1,
     VRAMPLAN_KNOB_ACCESS(gpu_memory_utilization), true, "", true},
    {"max_model_len", KnobType::Integer, "tokens", 1, kMaxTokens, "", KnobDefault::ModelContext,
     "the model's max_position_embeddings",
     "longest request (prompt + output); one such request must fit in the KV cache",
     "--max-model-len", "max_model_len", 1, VRAMPLAN_KNOB_ACCESS(max_model_len), true, "", true},
    {"max_num_seqs", KnobType::Integer, "sequences", 1, 1 << 20, "", KnobDefault::RowBatchSeqs,
     "the version's row by GPU tier (max_num_seqs large / other GPU)",
     "sequences scheduled at once; sizes the sampler warm-up and the CUDA-graph capture sizes",
     "--max-num-seqs", "max_num_seqs", 1, VRAMPLAN_KNOB_ACCESS(max_num_seqs), true, "", true},
    {"max_num_batched_tokens", KnobType::Integer, "tokens", 1, kMaxTokens, "",
     KnobDefault::RowBatchTokens,
     "the version's row by GPU tier (max_num_batched_tokens large / other [/ huge] GPU)",
     "tokens per scheduler step; the profile run's activation peak grows with it",
     "--max-num-batched-tokens", "max_num_batched_tokens", 1,
     VRAMPLAN_KNOB_ACCESS(max_num_batched_tokens), true, "", true},
    {"tensor_parallel_size", KnobType::Integer, "GPUs", 1, 1024, "", KnobDefault::Stated, "1",
     "GPUs each layer is split over (must divide the attention heads)", "--tensor-parallel-size",
     "tensor_parallel_size", 1, VRAMPLAN_KNOB_ACCESS(tensor_parallel_size), false},
    {"pipeline_parallel_size", KnobType::Integer, "GPUs", 1, 1024, "", KnobDefault::Stated, "1",
     "pipeline stages the layers are split into", "--pipeline-parallel-size",
     "pipeline_parallel_size", 1, VRAMPLAN_KNOB_ACCESS(pipeline_parallel_size), false},
    {"data_parallel_size", KnobType::Integer, "replicas", 1, 1024, "", KnobDefault::Stated, "1",
     "replicas of the TP x PP group (each plans the same per GPU; host RAM multiplies)",
     "--data-parallel-size", "data_parallel_size", 1, VRAMPLAN_KNOB_ACCESS(data_parallel_size),
     false},
    {"enable_expert_parallel", KnobType::Boolean, "", 0, 0, "", KnobDefault::Stated,
     "false: each expert split over TP x DP",
     "routed experts spread whole over TP x DP ranks instead of split over TP",
     "--enable-expert-parallel", "enable_expert_parallel", 1,
     VRAMPLAN_KNOB_ACCESS(enable_expert_parallel), false},
    {"enable_eplb", KnobType::Boolean, "", 0, 0, "", KnobDefault::Stated, "false",
     "expert-parallel load balancing: a load window and a one-layer expert buffer per rank",
     "--enable-eplb", "enable_eplb", 1, VRAMPLAN_KNOB_ACCESS(enable_eplb), false},
    {"num_redundant_experts", KnobType::Integer, "experts", 0, 65536, "", KnobDefault::Stated, "0",
     "EPLB's redundant experts: (experts + redundant) spread over the EP ranks; --eplb-config "
     "'{\"num_redundant_experts\": R}' from 0.11",
     "--num-redundant-experts", "num_redundant_experts", 1,
     VRAMPLAN_KNOB_ACCESS(num_redundant_experts), false},
    {"all2all_backend", KnobType::Text, "", 0, 0,
     "naive,allgather_reducescatter,pplx,deepep_high_throughput,deepep_low_latency,deepep_v2,"
     "flashinfer_all2allv,flashinfer_nvlink_two_sided,flashinfer_nvlink_one_sided,"
     "mori_high_throughput,mori_low_latency,nixl_ep",
     KnobDefault::RowAll2allBackend, "the version's row (all2all_backend_default)",
     "how MoE layers exchange tokens under data parallelism: all-gather activations (naive, "
     "allgather_reducescatter) or fixed DeepEP / pplx buffers; VLLM_ALL2ALL_BACKEND before 0.12",
     "--all2all-backend", "all2all_backend", 1, VRAMPLAN_KNOB_ACCESS(all2all_backend), false,
     "VLLM_ALL2ALL_BACKEND"},
    {"kv_cache_dtype", KnobType::Text, "", 0, 0,
     "auto,fp8,fp8_e4m3,fp8_e5m2,fp8_inc,bfloat16,float16,half", KnobDefault::Stated,
     "auto: the served dtype", "KV-cache element type; fp8 halves the bytes per token",
     "--kv-cache-dtype", "kv_cache_dtype", 1, VRAMPLAN_KNOB_ACCESS(kv_cache_dtype), true},
    {"dtype", KnobType::Text, "", 0, 0, "auto,half,float16,bfloat16,float32", KnobDefault::Stated,
     "auto: the checkpoint's dtype (fp32 checkpoints served in bf16)",
     "activation and unquantized weight dtype", "--dtype", "dtype", 1, VRAMPLAN_KNOB_ACCESS(dtype),
     false},
    {"quantization", KnobType::Text, "", 0, 0, "", KnobDefault::Stated,
     "the checkpoint's own format",
     "weight format: fp8 or bitsandbytes quantizes a 16-bit checkpoint at load", "--quantization",
     "quantization", 1, VRAMPLAN_KNOB_ACCESS(quantization), false},
    {"block_size", KnobType::Integer, "tokens per KV block", 1, 256, "1,8,16,32,64,128,256",
     KnobDefault::Stated, "16; 64 for MLA on Hopper, 128 on Blackwell",
     "tokens per KV-cache block (hybrid models raise it so a page holds a Mamba state)",
     "--block-size", "block_size", 1, VRAMPLAN_KNOB_ACCESS(block_size), true},
    {"enforce_eager", KnobType::Boolean, "", 0, 0, "", KnobDefault::Stated,
     "false: CUDA graphs are captured", "no CUDA graphs: saves their memory, costs decode speed",
     "--enforce-eager", "enforce_eager", 1, VRAMPLAN_KNOB_ACCESS(enforce_eager), false},
    {"llm_class", KnobType::Boolean, "", 0, 0, "", KnobDefault::Stated,
     "false: `vllm serve` defaults",
     "plan for vllm.LLM(...) (offline batch) defaults instead of the server's", "", "", 1,
     VRAMPLAN_KNOB_ACCESS(llm_class), false},
    {"num_speculative_tokens", KnobType::Integer, "tokens", 0, 64, "", KnobDefault::Stated,
     "0: no speculation", "draft tokens per step (speculative decoding)", "--speculative-config",
     "speculative_config", 1, VRAMPLAN_KNOB_ACCESS(num_speculative_tokens), false},
    {"speculative_method", KnobType::Text, "", 0, 0,
     "mtp,deepseek_mtp,eagle,eagle3,draft_model,ngram,suffix", KnobDefault::Stated,
     "mtp when the model ships MTP layers", "how draft tokens are proposed", "--speculative-config",
     "speculative_config", 1, VRAMPLAN_KNOB_ACCESS(speculative_method), false},
    {"speculative_model", KnobType::Text, "", 0, 0, "", KnobDefault::Stated, "none",
     "the drafter for eagle / eagle3 / draft_model: an id, alias or path", "--speculative-config",
     "speculative_config", 1, &get_draft, &set_draft, false},
    {"max_loras", KnobType::Integer, "adapters", 0, 1024, "", KnobDefault::Stated, "0: LoRA off",
     "LoRA adapters resident on the GPU at once (--enable-lora)", "--max-loras", "max_loras", 1,
     VRAMPLAN_KNOB_ACCESS(max_loras), false},
    {"max_lora_rank", KnobType::Integer, "rank", 1, 512, "1,8,16,32,64,128,256,320,512",
     KnobDefault::Stated, "16", "largest LoRA rank served", "--max-lora-rank", "max_lora_rank", 1,
     VRAMPLAN_KNOB_ACCESS(max_lora_rank), false},
    {"limit_mm_per_prompt", KnobType::Text, "items per modality", 0, 0, "", KnobDefault::Stated,
     "999 per modality (multimodal models only)",
     "vLLM's JSON, e.g. '{\"image\": 2, \"video\": 0}': images the encoder profile and encoder "
     "cache are sized for; 0 for every modality skips them and the encoder weights",
     "--limit-mm-per-prompt", "limit_mm_per_prompt", 1, VRAMPLAN_KNOB_ACCESS(limit_mm_per_prompt),
     false},
    {"language_model_only", KnobType::Boolean, "", 0, 0, "", KnobDefault::Stated,
     "false: the encoder is loaded",
     "serve a multimodal model as text only: every modality limited to 0 (no encoder weights, "
     "profile or cache)",
     "--language-model-only", "language_model_only", 1, VRAMPLAN_KNOB_ACCESS(language_model_only),
     false},
    {"cpu_offload_bytes", KnobType::Bytes, "bytes per GPU", 0, kNoLimit, "", KnobDefault::Stated,
     "0", "weight bytes kept in host RAM and streamed over PCIe each step", "--cpu-offload-gb",
     "cpu_offload_gb", kGiBUnit, VRAMPLAN_KNOB_ACCESS(cpu_offload_bytes), false},
    {"enable_sleep_mode", KnobType::Boolean, "", 0, 0, "", KnobDefault::Stated, "false",
     "sleep mode (CuMem allocator): asleep at level 1, each rank keeps its weights in pinned "
     "host RAM",
     "--enable-sleep-mode", "enable_sleep_mode", 1, VRAMPLAN_KNOB_ACCESS(enable_sleep_mode), false},
    {"sleep_level", KnobType::Integer, "", 0, 2, "", KnobDefault::Stated,
     "1 (POST /sleep without ?level)",
     "the level the server is put to sleep at with --enable-sleep-mode (0: paused, nothing "
     "freed; 1: weights backed up in pinned host RAM; 2: weights discarded)",
     "", "", 1, VRAMPLAN_KNOB_ACCESS(sleep_level), false},
    {"kv_offloading_bytes", KnobType::Bytes, "bytes over the TP ranks", 0, kNoLimit, "",
     KnobDefault::Stated, "0", "KV cache offloaded to pinned host RAM", "--kv-offloading-size",
     "kv_offloading_size", kGiBUnit, VRAMPLAN_KNOB_ACCESS(kv_offloading_bytes), false},
    {"safetensors_load_strategy", KnobType::Text, "", 0, 0, "lazy,eager,prefetch",
     KnobDefault::Stated, "lazy (memory-mapped)",
     "how workers read checkpoint shards: host RAM while loading", "--safetensors-load-strategy",
     "safetensors_load_strategy", 1, VRAMPLAN_KNOB_ACCESS(safetensors_load_strategy), false},
    {"swap_space_bytes", KnobType::Bytes, "bytes per GPU", 0, kNoLimit, "",
     KnobDefault::RowSwapSpace, "the version's row (swap_space_default_bytes; 0: none pinned)",
     "pinned host swap space for preempted requests (V0)", "--swap-space", "swap_space", kGiBUnit,
     VRAMPLAN_KNOB_ACCESS(swap_space_bytes), false},
    {"kv_transfer_config", KnobType::Text, "", 0, 0, "", KnobDefault::Stated,
     "unset: no KV connector",
     "vLLM's JSON, e.g. '{\"kv_connector\": \"LMCacheConnectorV1\", \"kv_role\": "
     "\"kv_both\"}': an LMCache connector pins a CPU pool in every worker",
     "--kv-transfer-config", "kv_transfer_config", 1, VRAMPLAN_KNOB_ACCESS(kv_transfer_config),
     false},
    {"lmcache_local_cpu_bytes", KnobType::Bytes, "bytes per worker", 0, kNoLimit, "",
     KnobDefault::Stated, "5 GiB (LMCache's max_local_cpu_size) where an LMCache connector is set",
     "LMCACHE_MAX_LOCAL_CPU_SIZE (environment, GiB): the pinned CPU pool of LMCache in each "
     "worker",
     "", "", kGiBUnit, VRAMPLAN_KNOB_ACCESS(lmcache_local_cpu_bytes), false,
     "LMCACHE_MAX_LOCAL_CPU_SIZE"},
    {"host_mem_free_bytes", KnobType::Bytes, "bytes on the host", 0, kNoLimit, "",
     KnobDefault::Stated, "unset: not known",
     "the host's /proc/meminfo MemFree before the launch: on a unified-memory GPU (GB10, GH200) "
     "what releases up to 0.11.0 take as the startup check's free memory",
     "", "", kGiBUnit, VRAMPLAN_KNOB_ACCESS(host_mem_free_bytes), false},
    {"host_mem_available_bytes", KnobType::Bytes, "bytes on the host", 0, kNoLimit, "",
     KnobDefault::Stated, "unset: not known",
     "the host's /proc/meminfo MemAvailable before the launch: on a unified-memory GPU what "
     "later releases take as the startup check's free memory (page cache counted free)",
     "", "", kGiBUnit, VRAMPLAN_KNOB_ACCESS(host_mem_available_bytes), false},
    {"kv_cache_memory_bytes", KnobType::Bytes, "bytes per GPU", 1, kNoLimit, "",
     KnobDefault::Stated, "unset: the budget from gpu_memory_utilization",
     "a fixed KV-cache size instead of the utilization budget", "--kv-cache-memory-bytes",
     "kv_cache_memory_bytes", 1, VRAMPLAN_KNOB_ACCESS(kv_cache_memory_bytes), false},
    {"mamba_cache_dtype", KnobType::Text, "", 0, 0, "auto,float32,float16,bfloat16",
     KnobDefault::Stated, "auto: the served dtype",
     "hybrid models: dtype of the Mamba / linear-attention conv and SSM state",
     "--mamba-cache-dtype", "mamba_cache_dtype", 1, VRAMPLAN_KNOB_ACCESS(mamba_cache_dtype), false},
    {"mamba_ssm_cache_dtype", KnobType::Text, "", 0, 0, "auto,float32,float16,bfloat16",
     KnobDefault::Stated,
     "auto: the model config's (Qwen3.5 mamba_ssm_dtype, Nemotron-H float32), else "
     "mamba_cache_dtype",
     "hybrid models: dtype of the SSM (recurrent) state only", "--mamba-ssm-cache-dtype",
     "mamba_ssm_cache_dtype", 1, VRAMPLAN_KNOB_ACCESS(mamba_ssm_cache_dtype), false},
    {"vllm_use_v2_model_runner", KnobType::Text, "", 0, 0, "auto,0,1", KnobDefault::Stated,
     "auto: the release's routing (Model Runner V2 for every model from 0.29)",
     "VLLM_USE_V2_MODEL_RUNNER (environment): 1 forces Model Runner V2, 0 the V1 runner", "", "", 1,
     VRAMPLAN_KNOB_ACCESS(vllm_use_v2_model_runner), false, "VLLM_USE_V2_MODEL_RUNNER"},
    {"enable_chunked_prefill", KnobType::Boolean, "", 0, 0, "", KnobDefault::Stated,
     "unset: V1 (0.8+) always chunks; V0 chunks above 32768 tokens of max_model_len (text "
     "models without a sliding window, speculative decoding or LoRA)",
     "chunk prompts at max_num_batched_tokens; off, a whole prompt is one batch and the "
     "profile run covers max_model_len tokens",
     "--enable-chunked-prefill", "enable_chunked_prefill", 1,
     VRAMPLAN_KNOB_ACCESS(enable_chunked_prefill), false},
    {"vllm_use_flashinfer_sampler", KnobType::Text, "", 0, 0, "auto,0,1", KnobDefault::Stated,
     "auto: the PyTorch-native sampler (0.8-0.16: a full sort of the logits; 0.17+: Triton), "
     "which 0.8-0.12 run only where FlashInfer is not installed",
     "VLLM_USE_FLASHINFER_SAMPLER (environment): 1 samples with FlashInfer's top-k/top-p "
     "kernels on the V1 runner (0.8-0.12 also do so wherever FlashInfer is installed; the log "
     "says \"Using FlashInfer for top-p & top-k sampling\")",
     "", "", 1, VRAMPLAN_KNOB_ACCESS(vllm_use_flashinfer_sampler), false,
     "VLLM_USE_FLASHINFER_SAMPLER"},
};

#undef VRAMPLAN_KNOB_ACCESS

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool in_choices(std::string_view choices, const std::string& value) {
  std::size_t start = 0;
  while (start <= choices.size()) {
    const std::size_t comma = std::min(choices.find(',', start), choices.size());
    if (choices.substr(start, comma - start) == value) return true;
    start = comma + 1;
  }
  return false;
}

std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", v);
  return text;
}

std::string allowed_text(const KnobSpec& k) {
  if (!k.choices.empty()) return "one of " + std::string(k.choices);
  switch (k.type) {
    case KnobType::Fraction:
      return "a number in [" + number_text(k.minimum) + ", " + number_text(k.maximum) + "]";
    case KnobType::Integer:
    case KnobType::Bytes:
      return "an integer in [" + number_text(k.minimum) + ", " + number_text(k.maximum) + "]";
    case KnobType::Boolean:
      return "true or false";
    case KnobType::Text:
      return "text";
  }
  return "?";
}

}  // namespace

const char* knob_type_name(KnobType type) noexcept {
  switch (type) {
    case KnobType::Fraction:
      return "float";
    case KnobType::Integer:
      return "int";
    case KnobType::Bytes:
      return "bytes";
    case KnobType::Boolean:
      return "bool";
    case KnobType::Text:
      return "str";
  }
  return "?";
}

const std::vector<KnobSpec>& knob_specs() { return kKnobs; }

bool is_evaluated_knob(std::string_view name) noexcept {
  return std::any_of(kKnobs.begin(), kKnobs.end(),
                     [name](const KnobSpec& k) { return k.evaluated && k.name == name; });
}

std::string evaluated_knob_names() {
  std::string names;
  for (const KnobSpec& k : kKnobs) {
    if (k.evaluated) names += (names.empty() ? "" : ", ") + std::string(k.name);
  }
  return names;
}

namespace {

// "a from 0.6.4, b from 0.21.0": a row field's value where it changes, oldest first.
template <typename Value>
std::string row_history(Value (*value)(const EngineProfile&)) {
  std::string out;
  std::string previous;
  for (const EngineProfile& row : engine_profile_rows()) {
    std::string text = value(row);
    if (!out.empty() && text == previous) continue;
    out += (out.empty() ? "" : ", ") + text + " from " + engine_row_version(row);
    previous = std::move(text);
  }
  return out;
}

std::string tier_text(std::int64_t huge_min_bytes, std::int64_t huge, std::int64_t large,
                      std::int64_t other) {
  std::string text = std::to_string(large) + " / " + std::to_string(other);
  if (huge_min_bytes > 0) text += " / " + std::to_string(huge);
  return text;
}

std::string rows_text(KnobDefault rule) {
  switch (rule) {
    case KnobDefault::Stated:
    case KnobDefault::ModelContext:
    case KnobDefault::SglangRow:  // by the knob's name: knob_default_text
      return "";
    case KnobDefault::NewestRow:
      return newest_known_vllm_version();
    case KnobDefault::RowUtilization:
      return row_history(
          +[](const EngineProfile& r) { return number_text(r.default_gpu_memory_utilization); });
    case KnobDefault::RowBatchSeqs:
      return row_history(+[](const EngineProfile& r) {
        return std::to_string(r.max_num_seqs_large_gpu) + " / " +
               std::to_string(r.max_num_seqs_other_gpu);
      });
    case KnobDefault::RowBatchTokens:
      return row_history(+[](const EngineProfile& r) {
        return "serve " +
               tier_text(r.huge_gpu_min_memory_bytes, r.max_num_batched_tokens_serve_huge_gpu,
                         r.max_num_batched_tokens_serve_large_gpu,
                         r.max_num_batched_tokens_serve_other_gpu) +
               ", LLM " +
               tier_text(r.huge_gpu_min_memory_bytes, r.max_num_batched_tokens_llm_huge_gpu,
                         r.max_num_batched_tokens_llm_large_gpu,
                         r.max_num_batched_tokens_llm_other_gpu);
      });
    case KnobDefault::RowAll2allBackend:
      return row_history(+[](const EngineProfile& r) { return r.all2all_backend_default; });
    case KnobDefault::RowSwapSpace:
      return row_history(+[](const EngineProfile& r) {
        return number_text(static_cast<double>(r.swap_space_default_bytes) /
                           static_cast<double>(kGiBUnit)) +
               " GiB";
      });
  }
  return "";
}

}  // namespace

std::string knob_default_text(const KnobSpec& knob) {
  const std::string rows = knob.default_rule == KnobDefault::SglangRow
                               ? sglang_rows_text(knob.name)
                               : rows_text(knob.default_rule);
  if (rows.empty()) return std::string(knob.default_source);
  return std::string(knob.default_source) + ": " + rows;
}

KnobBounds knob_bounds(const KnobSpec& knob, const ModelSpec& model) {
  KnobBounds bounds{knob.minimum, knob.maximum};
  if (knob.default_rule == KnobDefault::ModelContext && !model.max_position_embeddings_assumed) {
    bounds.maximum = std::min(bounds.maximum, static_cast<double>(model.max_position_embeddings));
  }
  return bounds;
}

const KnobSpec& knob_spec(std::string_view name) {
  for (const KnobSpec& k : kKnobs) {
    if (k.name == name) return k;
  }
  std::string names;
  for (const KnobSpec& k : kKnobs) names += (names.empty() ? "" : ", ") + std::string(k.name);
  throw ConfigError(std::string(name), "", names, "unknown engine knob");
}

std::string knob_value_text(const KnobValue& value) {
  if (const bool* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&value)) return number_text(*d);
  return "'" + std::get<std::string>(value) + "'";
}

KnobValue check_knob(const KnobSpec& k, const KnobValue& value) {
  const std::string name(k.name);
  auto fail = [&](const std::string& problem) {
    throw ConfigError(name, knob_value_text(value), allowed_text(k), problem);
  };
  switch (k.type) {
    case KnobType::Fraction: {
      double v = 0.0;
      if (const double* d = std::get_if<double>(&value)) {
        v = *d;
      } else if (const auto* i = std::get_if<std::int64_t>(&value)) {
        v = static_cast<double>(*i);
      } else {
        fail("expected a number");
      }
      if (!std::isfinite(v)) fail("not a finite number");
      if (v < k.minimum || v > k.maximum) fail("out of range");
      return KnobValue{v};
    }
    case KnobType::Integer:
    case KnobType::Bytes: {
      const auto* i = std::get_if<std::int64_t>(&value);
      if (i == nullptr) fail("expected an integer");
      if (static_cast<double>(*i) < k.minimum || static_cast<double>(*i) > k.maximum) {
        fail("out of range");
      }
      if (!k.choices.empty() && !in_choices(k.choices, std::to_string(*i))) {
        fail("not a value vLLM accepts");
      }
      return value;
    }
    case KnobType::Boolean:
      if (!std::holds_alternative<bool>(value)) fail("expected true or false");
      return value;
    case KnobType::Text: {
      const auto* s = std::get_if<std::string>(&value);
      if (s == nullptr) fail("expected text");
      if (k.name == "limit_mm_per_prompt") (void)parse_limit_mm_per_prompt(*s);
      if (k.name == "kv_transfer_config") (void)kv_connector_of(*s);
      if (k.choices.empty()) return value;
      const std::string canonical = lower(*s);
      if (!in_choices(k.choices, canonical)) fail("not a value vLLM accepts");
      return KnobValue{canonical};
    }
  }
  return value;
}

std::string kv_connector_of(const std::string& kv_transfer_config) {
  if (kv_transfer_config.empty()) return "";
  auto fail = [&](const std::string& problem) {
    throw ConfigError("kv_transfer_config", "'" + kv_transfer_config + "'",
                      "vLLM's JSON object with a kv_connector name, e.g. {\"kv_connector\": "
                      "\"LMCacheConnectorV1\", \"kv_role\": \"kv_both\"}",
                      problem);
  };
  const nlohmann::json doc = nlohmann::json::parse(kv_transfer_config, nullptr, false);
  if (doc.is_discarded()) fail("not valid JSON");
  if (!doc.is_object()) fail("not a JSON object");
  const auto connector = doc.find("kv_connector");
  if (connector == doc.end() || !connector->is_string() || connector->get<std::string>().empty())
    fail("kv_connector must be a connector's name");
  return connector->get<std::string>();
}

std::vector<ModalityLimit> parse_limit_mm_per_prompt(const std::string& text) {
  std::vector<ModalityLimit> limits;
  if (text.empty()) return limits;
  auto fail = [&](const std::string& problem) {
    throw ConfigError("limit_mm_per_prompt", "'" + text + "'",
                      "a JSON object of modality: count >= 0, e.g. {\"image\": 2, \"video\": 0} "
                      "or {\"image\": {\"count\": 2}}",
                      problem);
  };
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) fail("not valid JSON");
  if (!doc.is_object()) fail("not a JSON object");
  for (const auto& [modality, entry] : doc.items()) {
    // vLLM's configurable form {"count": n, "width": ..} sizes dummy items too: only the plain
    // count is modelled.
    const nlohmann::json* count = &entry;
    if (entry.is_object()) {
      if (entry.size() != 1 || !entry.contains("count")) {
        fail("'" + modality + "': only {\"count\": n} is modelled (dummy sizes are not)");
      }
      count = &entry.at("count");
    }
    if (!count->is_number_integer()) fail("'" + modality + "': the count must be an integer");
    constexpr std::int64_t kMaxCount = 1000000;  // vLLM's own default is 999
    if (count->is_number_unsigned()
            ? count->get<std::uint64_t>() > kMaxCount
            : count->get<std::int64_t>() < 0 || count->get<std::int64_t>() > kMaxCount) {
      fail("'" + modality + "': the count must be in [0, 1000000]");
    }
    // Modalities are short identifiers (image, video, audio): anything else cannot be one, and
    // would not survive the flag line's quoting.
    const bool identifier = !modality.empty() && modality.size() <= 32 &&
                            std::all_of(modality.begin(), modality.end(), [](unsigned char c) {
                              return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
                            });
    if (!identifier) fail("a modality is a lower-case name such as image, video or audio");
    limits.push_back({modality, count->get<std::int64_t>()});
  }
  return limits;
}

void set_knob(EngineConfig& config, std::string_view name, const KnobValue& value) {
  const KnobSpec& k = knob_spec(name);
  k.set(config, check_knob(k, value));
}

void validate_knobs(const EngineConfig& config) {
  for (const KnobSpec& k : kKnobs) {
    if (const auto value = k.get(config)) check_knob(k, *value);
  }
}

}  // namespace vramplan
