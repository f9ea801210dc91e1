// vLLM's startup memory accounting, per GPU rank: the engine's knobs (named as vLLM names
// them), version profiles, the non-KV terms, the KV budget and the breakdown it produces.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vramplan/hardware.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"
#include "vramplan/weights.hpp"

namespace vramplan {

// vLLM releases whose memory accounting differs (vllm-memory.md section 9). A label for
// reports: every rule that differs between releases is a field of EngineProfile.
enum class EngineEra : std::uint8_t {
  V0,        // <= 0.7: V0 worker, "memory profiling results" line, no chunked prefill default
  V1Early,   // 0.8 - 0.10: V1, snapshot before NCCL init, piecewise graphs, old token formula
  V1Mid,     // 0.11 - 0.20: FULL_AND_PIECEWISE graphs captured after KV allocation
  V1Latest,  // >= 0.21: CUDA-graph estimate inside the budget, default utilization 0.92
};

const char* engine_era_name(EngineEra era) noexcept;

// One run of CUDA-graph capture sizes: start, start + step, ... up to `end`.
// A short list of HF model_types, shared between copies: engine rows are copied per launch, and
// copying a list of strings would cost allocations on the planner's hot path.
struct ModelTypeList {
  static constexpr std::size_t kCapacity = 8;
  static constexpr std::size_t kMaxLength = 31;
  std::shared_ptr<const std::vector<std::string>> names;
  bool contains(const std::string& model_type) const noexcept {
    if (!names) return false;
    for (const std::string& name : *names) {
      if (name == model_type) return true;
    }
    return false;
  }
  bool empty() const noexcept { return !names || names->empty(); }
};

struct CaptureSegment {
  std::int32_t start = 0;
  std::int32_t end = 0;
  std::int32_t step = 1;
};

// An NVIDIA architecture's most resident threads per SM (engines.yaml
// max_resident_threads_per_sm), by compute capability.
struct ResidentThreadsPerSm {
  double compute_capability = 0.0;
  std::int32_t threads = 0;
};

// Version-specific rules as data: one row of model_specs/engines.yaml.
// Which launches use Model Runner V2 when VLLM_USE_V2_MODEL_RUNNER is unset
// (VllmConfig.use_v2_model_runner per release).
enum class ModelRunnerV2Routing : std::uint8_t {
  None,        // the V1 runner for every model
  Qwen3Dense,  // 0.22: unquantized Qwen3ForCausalLM only
  Dense,       // 0.26-0.28: generate models that are not hybrid or MoE, plus a MoE whitelist
  All,         // 0.29+: every model unless a feature it does not support is set
};

// How a release lays out the Qwen vision attention's temporaries around its rotary embedding
// (engines.yaml vit_rotary_attention; vLLM qwen2_5_vl.py / qwen2_vl.py Qwen*VisionAttention).
enum class VitRotaryAttention : std::uint8_t {
  SplitFp32,   // <= 0.10: contiguous q, k, v, each of q and k rotated through fp32 copies
  ConcatFp32,  // 0.11: q and k concatenated, then rotated through fp32 copies
  FusedQk,     // 0.12+: one contiguous q/k copy rotated in the served dtype
};

// What vLLM's init snapshot (vllm/utils/mem_utils.py MemorySnapshot.measure) takes as the free
// memory of a unified-memory GPU, where cudaMemGetInfo's free is the host's free pages
// (/proc/meminfo MemFree): reclaimable page cache counts as used there, not in MemAvailable.
enum class UnifiedMemoryFree : std::uint8_t {
  CudaFree,                // cudaMemGetInfo's free (MemFree) on every GPU (0.11 wheels)
  AvailableOrinThorSpark,  // psutil MemAvailable on compute capability 8.7, 11.0, 12.1 (0.11.1)
  AvailableIntegrated,     // psutil MemAvailable where the device is integrated (PR #35356, 0.20)
};

struct EngineProfile {
  std::string version;  // as given, e.g. "0.19.0"; the newest known release when none given
  // The newest vLLM release this planner's rows describe, and a warning when `version` is newer
  // (planned with the newest row): empty when the version is known.
  std::string newest_known_version;
  std::string version_warning;
  EngineEra era = EngineEra::V1Latest;
  // The row this profile comes from: from_major.from_minor.from_patch.
  std::int32_t from_major = 0;
  std::int32_t from_minor = 21;
  std::int32_t from_patch = 0;
  double default_gpu_memory_utilization = 0.92;
  bool cudagraph_in_budget = true;  // estimate subtracted from the KV budget
  bool chunked_prefill_default = true;
  bool tokens_from_concurrency = true;    // "GPU KV cache size" = int(concurrency * max_model_len)
  bool startup_free_memory_check = true;  // "Free memory on device ... less than desired"
  // CUDA OOM checks after the KV allocation: graphs captured then and the sampler warm-up.
  bool post_allocation_check = true;
  // CUDA-graph memory profiled before the KV budget on a minimal KV cache of
  // max_cudagraph_capture_size blocks (profile_cudagraph_memory).
  bool graph_profiling_minimal_kv_cache = true;
  bool mla_backend_block_size = true;  // MLA backends pick 64 (Hopper) / 128 (Blackwell)
  // Non-torch memory measured as device use minus torch-allocated bytes after the profile run,
  // so the caching allocator's freed activation blocks count again (vLLM PR #10511 until
  // PR #11809 measured against memory_reserved()).
  bool non_torch_counts_cached_activations = false;
  // 0.20+: FusedMoEConfig.max_num_tokens is the scheduler's max_num_batched_tokens (was
  // VLLM_MOE_DP_CHUNK_SIZE): DeepEP low latency's RDMA buffer is sized for the batch, whose
  // default under batched DP (low latency, EP, DP > 1) is 256.
  bool moe_exchange_tokens_from_batch = false;
  // 0.20+: with FULL decode CUDA graphs a model with Mamba / linear-attention state refuses
  // max_num_seqs above the KV pool's blocks (one state block per decode sequence;
  // CompilationConfig's check after the KV allocation, vllm#34094). 0.18-0.19 capped the
  // capture sizes instead.
  bool state_blocks_bound_max_num_seqs = false;
  // limit_mm_per_prompt 0 for every modality leaves the encoder tower unbuilt (its weights
  // are not loaded), not only unprofiled.
  bool skips_encoder_without_modalities = true;
  VitRotaryAttention vit_rotary_attention = VitRotaryAttention::FusedQk;
  // MRotaryEmbedding's cos/sin cache covers max_position_embeddings x this many positions
  // (video positions run past the token count), per MropeKind: standard, Qwen3-VL's family.
  std::int32_t mrope_cache_positions_factor_standard = 4;
  std::int32_t mrope_cache_positions_factor_qwen3_vl = 1;
  // _get_kv_cache_groups_uniform_page_size: a hybrid model's group size is the largest layer
  // type's count when it is below this multiple of the smallest's (0: always the smallest).
  double kv_group_size_close_ratio = 1.5;
  double sampler_bytes_per_logit = 0.0;  // fitted: peak sampler bytes per (request x vocab entry)
  // The V1 runner's sampler on FlashInfer's top-k/top-p kernels (VLLM_USE_FLASHINFER_SAMPLER=1,
  // or FlashInfer installed on 0.8-0.12): bytes per logit beside the served-dtype logits. 0: the
  // release's V1 runner has no FlashInfer sampler (V0).
  double flashinfer_sampler_bytes_per_logit = 0.0;
  // torch's CUDA sort of fewer than 128 rows sorts them all at once (index, segment) pairs
  // (SortStable.cu segmented_sort_pairs_by_full_sort): from 2 rows up to `below_rows` (0: the
  // release's sampler does not sort) the sort-path sampler costs this many bytes per logit
  // instead of sampler_bytes_per_logit.
  std::int32_t sampler_full_sort_below_rows = 0;
  double sampler_full_sort_bytes_per_logit = 0.0;
  std::int64_t non_torch_single_rank_bytes = 0;      // TP=1, no PP: cuBLAS/attention workspaces
  std::int64_t non_torch_pipeline_only_bytes = 0;    // PP>1 at TP=1
  std::int64_t non_torch_tensor_parallel_bytes = 0;  // TP>=2 over NVLink: NCCL channels
  // TP>=2 on PCIe-only cards (gpus.yaml pcie_only): NCCL's few PCIe channels and, where it
  // runs, custom all-reduce's few IPC buffers.
  std::int64_t non_torch_tensor_parallel_pcie_bytes = 0;
  std::int64_t swap_space_default_bytes = 0;  // pinned swap per GPU (V0); 0 = none pinned
  // Fitted: CUDA context made before the init snapshot, NCCL communicators when ranks talk,
  // and the hidden-size-wide buffers alive at the forward's activation peak.
  // The context is cuda_context_bytes on a GPU with cuda_context_reference_threads resident
  // threads (SMs x max_resident_threads_per_sm); an NVIDIA GPU whose architecture is listed
  // scales by its own resident threads (the driver's per-thread local-memory reservation),
  // any other GPU keeps cuda_context_bytes.
  std::int64_t cuda_context_bytes = 547356672;
  std::int64_t cuda_context_reference_threads = 270336;
  std::array<ResidentThreadsPerSm, 16> max_resident_threads_per_sm{};
  std::int32_t max_resident_threads_per_sm_entries = 0;
  std::int64_t nccl_communicator_bytes = 268435456;
  double forward_hidden_buffers = 6.0;
  // CUDA-graph capture sizes: the ladder cut at min([max_num_seqs x seq_multiplier
  // [x (1 + speculative tokens)],] max_size [, max_num_batched_tokens]).
  std::array<CaptureSegment, 4> capture_ladder{};
  std::int32_t capture_ladder_segments = 0;
  bool capture_bounded_by_max_num_seqs = true;
  std::int32_t capture_seq_multiplier = 2;
  bool capture_counts_speculative_tokens = true;
  std::int32_t capture_max_size = 512;
  bool capture_bounded_by_batched_tokens = true;
  // Models that set their own capture list (VerifyAndUpdateConfig): this ladder, not bounded
  // by max_num_seqs.
  ModelTypeList model_capture_model_types;
  std::array<CaptureSegment, 4> model_capture_ladder{};
  std::int32_t model_capture_ladder_segments = 0;
  // CUDA-graph pool: base + per captured piece (one layer at one size); fitted, in MiB.
  double cudagraph_base_mib = 400.0;
  double cudagraph_piece_mib = 0.111;
  double cudagraph_piece_mib_moe = 0.15;
  double cudagraph_piece_mib_mla = 0.40;
  double cudagraph_piece_mib_mxfp4_moe = 0.67;
  // FULL graphs with FlashAttention 3 bound its split-KV search to this many splits, and the
  // first capture allocates out and log-sum-exp accumulators of [splits, heads, tokens,
  // head_size_v + 1] fp32 at the largest captured size (0: no such bound).
  std::int32_t full_cudagraph_attention_splits = 0;
  // model_types vLLM serves with prefix (bidirectional image-token) attention, which
  // FlashAttention cannot run: the Triton backend takes them.
  ModelTypeList mm_prefix_lm_model_types;
  // Which GPUs get the large batch defaults (uses_large_batch_defaults): a name in
  // large_gpu_names, or >= large_gpu_min_memory_bytes (0: no memory rule), unless a name in
  // large_gpu_excluded_names. Names are lower case, matched inside the GPU's id and name.
  std::vector<std::string> large_gpu_names;
  std::int64_t large_gpu_min_memory_bytes = std::int64_t{70} << 30;
  std::vector<std::string> large_gpu_excluded_names{"a100"};
  // Batch defaults on large and other GPUs; `llm` is vllm.LLM(...).
  std::int64_t max_num_seqs_large_gpu = 1024;
  std::int64_t max_num_seqs_other_gpu = 256;
  std::int64_t max_num_batched_tokens_serve_large_gpu = 8192;
  std::int64_t max_num_batched_tokens_serve_other_gpu = 2048;
  std::int64_t max_num_batched_tokens_llm_large_gpu = 16384;
  std::int64_t max_num_batched_tokens_llm_other_gpu = 8192;
  // Expert-parallel all-to-all: the backend an unset --all2all-backend means, whether this
  // version takes the CLI flag (else the VLLM_ALL2ALL_BACKEND environment variable), and the
  // fused-MoE kernel's token chunk (VLLM_FUSED_MOE_CHUNK_SIZE; 0 = unchunked).
  std::string all2all_backend_default = "allgather_reducescatter";
  std::int32_t all2all_backend_flag_from_major = 0;  // first version with --all2all-backend
  std::int32_t all2all_backend_flag_from_minor = 12;
  bool all2all_backend_flag = true;              // resolved for `version` by engine_profile()
  std::int32_t eplb_config_flag_from_major = 0;  // first version with --eplb-config
  std::int32_t eplb_config_flag_from_minor = 11;
  bool eplb_config_flag = true;  // resolved for `version` by engine_profile()
  std::int64_t fused_moe_chunk_tokens = 0;
  // V0 (EngineArgs.create_engine_config, 0.5-0.7): chunked prefill turns itself on when
  // max_model_len exceeds long_context_chunked_prefill_above (32768) for a text model without a
  // sliding window, speculative decoding or LoRA; max_num_batched_tokens then defaults to
  // long_context_batched_tokens instead of max(max_model_len, 2048). 0: no such rule.
  std::int64_t long_context_chunked_prefill_above = 0;
  std::int64_t long_context_batched_tokens = 0;
  bool long_context_chunked_prefill_rocm = true;  // 0.7 excluded ROCm GPUs from the rule
  // A boolean flag set false is written --no-NAME (argparse.BooleanOptionalAction, 0.8.5+)
  // instead of --NAME False (vLLM's StoreBoolean before).
  bool negated_boolean_flags = true;
  // --enable-chunked-prefill is honored in both directions (V0, and V1 from 0.12); 0.8-0.11's
  // V1 sets it true for every generative model whatever the flag says.
  bool chunked_prefill_flag_honored = true;
  // 0.8-0.10.1 run the V0 engine on NVIDIA GPUs below this compute capability (V1 needed
  // FlashAttention, Ampere+); 0: the release's own engine on every GPU.
  double v0_below_compute_capability = 0.0;
  // Quantization loaders the release still has (vllm/model_executor/layers/quantization
  // get_quantization_config): GGUF until 0.23, bitsandbytes until 0.27; GPTQ with group
  // activation ordering (desc_act with a group size) until 0.32.
  bool loads_gguf = true;
  bool loads_bitsandbytes = true;
  bool gptq_group_act_order = true;
  // --kv-offloading-size's host buffer (v1/kv_offload/cpu/spec.py CPUOffloadingSpec
  // create_worker): until 0.26 each worker pins one tensor per GPU KV tensor through torch's
  // host allocator, which rounds each up to a power of two; from 0.27 one /dev/shm region,
  // mapped and cudaHostRegister'ed unrounded, on CUDA (and on ROCm until 0.32).
  bool kv_offload_shared_region = false;
  bool kv_offload_shared_region_rocm = false;
  // The startup check's free memory on a unified-memory GPU (engines.yaml unified_memory_free).
  UnifiedMemoryFree unified_memory_free = UnifiedMemoryFree::AvailableIntegrated;
  // 0.27+: non-KV = (free at the init snapshot - free after the profile) + (torch peak - torch
  // allocated after it): buffers made between the snapshot and the profile (Model Runner V2's
  // persistent sampler state) now count inside the budget ("consumed" formula).
  bool consumed_budget_formula = false;
  // Model Runner V2: default routing, MoE model types routed as dense (0.26-0.28), speculative
  // methods that keep the V1 runner, and whether MRV2 has a CUDA-graph estimate (0.29+; before
  // it profile_cudagraph_memory returns 0 on MRV2 and graphs are captured outside the budget).
  ModelRunnerV2Routing model_runner_v2 = ModelRunnerV2Routing::None;
  std::vector<std::string> model_runner_v2_moe_model_types;
  std::vector<std::string> model_runner_v2_unsupported_speculative_methods;
  bool model_runner_v2_cudagraph_estimate = false;
  // Graph profiling's minimal KV cache: min(max_num_seqs, largest capture size) blocks (MRV2's
  // _init_minimal_kv_cache_for_profiling) instead of the largest capture size.
  bool graph_profiling_blocks_bounded_by_max_num_seqs = false;
  // Capture ceiling on data-centre Blackwell (compute capability 10.x); 0: capture_max_size.
  std::int32_t capture_max_size_datacenter_blackwell = 0;
  // Capture list extras: with speculation, n x (1 + k) for the request-count grid (0.29); without,
  // max_num_seqs itself when off the ladder (0.31).
  bool capture_speculative_request_grid = false;
  bool capture_includes_max_num_seqs = false;
  // A third batch tier: >= huge_gpu_min_memory_bytes (0: none) gets these token budgets.
  std::int64_t huge_gpu_min_memory_bytes = 0;
  std::int64_t max_num_batched_tokens_serve_huge_gpu = 16384;
  std::int64_t max_num_batched_tokens_llm_huge_gpu = 16384;
};

// The rows of an engines YAML document (model_specs/engines.yaml), validated: eras known,
// versions ascending, every field present with a sane value. Throws SpecError naming `file`.
std::vector<EngineProfile> parse_engine_profiles(const std::string& yaml_text,
                                                 const std::string& file);

// A calibration profile applied over `base`: a YAML document whose `overrides:` map holds any
// subset of an engines.yaml row's fields (not from_version or era). Throws SpecError naming
// `file` and the field.
EngineProfile apply_profile_overrides(const EngineProfile& base, const std::string& yaml_text,
                                      const std::string& file);

// Parse "0.19.0", "v0.6.4.post2", "0.10.1.x", "0.9" (= 0.9.0), "1.0.2" as (major, minor,
// patch); empty -> the newest known release (its version text is set). The profile is the
// compiled-in engines.yaml row for that version: the last row at or below it. A version newer
// than the newest row plans with that row and carries `version_warning`. Throws ConfigError for
// an unparsable version or one older than the oldest row.
EngineProfile engine_profile(const std::string& version);
// The newest V0 row's rules under `requested`'s version label: the engine a V1-era release
// falls back to (v0_below_compute_capability).
EngineProfile v0_fallback_profile(const EngineProfile& requested);
// Whether vLLM of `requested`'s release runs the V0 engine on `gpu` (an NVIDIA compute
// capability below the row's v0_below_compute_capability).
bool runs_v0_fallback(const EngineProfile& requested, const GpuSpec& gpu);
// The newest vLLM release the compiled-in rows describe ("0.33.0").
std::string newest_known_vllm_version();
// The warning's name, as stderr prints it ("engine-version-newer-than-known").
inline constexpr const char* kVersionWarningName = "engine-version-newer-than-known";

// Whether `gpu` gets the profile's large batch defaults (EngineArgs.get_batch_defaults for that
// release): by the GPU's lower-cased id and CUDA device name, and its total memory.
bool uses_large_batch_defaults(const EngineProfile& profile, const GpuSpec& gpu);
// The batch defaults an unset --max-num-seqs / --max-num-batched-tokens take on `gpu`
// (EngineArgs.get_batch_defaults): the row's huge (>= huge_gpu_min_memory_bytes), large or
// other tier, `vllm serve`'s or vllm.LLM's (`llm_class`) token budget.
struct BatchDefaults {
  std::int64_t max_num_seqs = 0;
  std::int64_t max_num_batched_tokens = 0;
};
BatchDefaults batch_defaults(const EngineProfile& profile, const GpuSpec& gpu, bool llm_class);

// Every compiled-in engines.yaml row, oldest first (the knob table generates its default text
// from them), and a row's from_version as text ("0.21.0").
const std::vector<EngineProfile>& engine_profile_rows();
std::string engine_row_version(const EngineProfile& row);
// Whether vLLM `version` is `from` or later, both read as engine_profile reads a version;
// nullopt when either is unreadable.
std::optional<bool> vllm_version_at_least(const std::string& version, const std::string& from);

// The knobs, with vLLM's names; the knob registry (knobs.hpp) declares each one's type, range,
// default and flag. An unset optional takes the engine's default for this version and GPU.
struct EngineConfig {
  std::string engine_version;  // empty: newest
  std::optional<double> gpu_memory_utilization;
  std::optional<std::int64_t> max_model_len;
  std::optional<std::int64_t> max_num_seqs;
  std::optional<std::int64_t> max_num_batched_tokens;
  std::optional<std::int32_t> block_size;
  std::string kv_cache_dtype = "auto";  // auto, fp8, fp8_e4m3, fp8_e5m2, bfloat16, float16
  std::string dtype = "auto";           // auto, bfloat16, float16, float32
  std::string quantization;             // empty: checkpoint's; "fp8": online fp8
  std::int32_t tensor_parallel_size = 1;
  std::int32_t pipeline_parallel_size = 1;
  std::int32_t data_parallel_size = 1;  // replicas of the TP x PP group, one engine core each
  bool enable_expert_parallel = false;  // routed experts over TP x DP ranks, unsplit
  bool enable_eplb = false;             // --enable-eplb: expert-parallel load balancing
  // EPLB's redundant (physical) experts: --num-redundant-experts up to 0.16, --eplb-config's
  // num_redundant_experts from 0.11.
  std::int32_t num_redundant_experts = 0;
  std::string all2all_backend;  // --all2all-backend; empty: the version's default
  bool enforce_eager = false;
  bool llm_class = false;              // vllm.LLM(...) defaults instead of `vllm serve`
  std::int64_t cpu_offload_bytes = 0;  // --cpu-offload-gb, per GPU
  // --enable-sleep-mode, and the level the server is put to sleep at (POST /sleep?level=N;
  // unset: 1, POST /sleep's default): level 1 keeps a pinned host copy of the weights. A level
  // without sleep mode is refused (the server cannot sleep).
  bool enable_sleep_mode = false;
  std::optional<std::int32_t> sleep_level;
  std::string safetensors_load_strategy = "lazy";  // lazy (mmap), eager, prefetch
  std::int64_t kv_offloading_bytes = 0;            // --kv-offloading-size, total over TP ranks
  std::optional<std::int64_t> swap_space_bytes;    // V0 --swap-space per GPU (unset: 4 GiB)
  // --kv-transfer-config as vLLM's JSON ('{"kv_connector": "LMCacheConnectorV1", ...}').
  std::string kv_transfer_config;
  // LMCACHE_MAX_LOCAL_CPU_SIZE: the LMCache CPU pool each worker pins (unset: LMCache's 5 GiB).
  std::optional<std::int64_t> lmcache_local_cpu_bytes;
  // The host's /proc/meminfo MemFree and MemAvailable before vLLM starts. On a unified-memory
  // GPU (gpus.yaml unified_memory) they replace the GPU's total less memory_used_by_others as
  // the free memory of vLLM's startup check, whichever the release counts; unset: not known.
  std::optional<std::int64_t> host_mem_free_bytes;
  std::optional<std::int64_t> host_mem_available_bytes;
  std::optional<std::int64_t> kv_cache_memory_bytes;  // --kv-cache-memory-bytes, per GPU
  std::int32_t num_speculative_tokens = 0;
  // "mtp" (the checkpoint's own MTP layers), "eagle" / "eagle3" / "draft_model" (a separate
  // drafter: draft_model), "ngram" (no GPU memory). Empty with num_speculative_tokens > 0:
  // "mtp" when the model ships MTP layers.
  std::string speculative_method;
  std::shared_ptr<const ModelSpec> draft_model;  // the drafter's spec for eagle/draft_model
  std::int32_t max_loras = 0;                    // --max-loras with --enable-lora (0: LoRA off)
  std::int32_t max_lora_rank = 16;               // --max-lora-rank
  // --limit-mm-per-prompt as vLLM's JSON ('{"image": 2, "video": 0}'); empty: 999 per modality.
  std::string limit_mm_per_prompt;
  bool language_model_only = false;  // --language-model-only: every modality limited to 0
  // Hybrid state dtypes: --mamba-cache-dtype (conv and SSM state; auto = the served dtype) and
  // --mamba-ssm-cache-dtype (SSM state only; auto = the model's config, else the conv dtype).
  std::string mamba_cache_dtype = "auto";
  std::string mamba_ssm_cache_dtype = "auto";
  // VLLM_USE_V2_MODEL_RUNNER (environment): "auto" (unset) lets the release route the model,
  // "1" forces Model Runner V2, "0" the V1 runner.
  std::string vllm_use_v2_model_runner = "auto";
  // VLLM_USE_FLASHINFER_SAMPLER (environment): "1" the V1 runner samples with FlashInfer's
  // top-k/top-p kernels (also 0.8-0.12's default wherever FlashInfer is installed), "0" and
  // "auto" the PyTorch-native (0.8-0.16: full sort) or Triton (0.17+) path.
  std::string vllm_use_flashinfer_sampler = "auto";
  // --enable-chunked-prefill / --no-enable-chunked-prefill; unset: the release's rule (V1
  // always chunks; V0 only above long_context_chunked_prefill_above tokens).
  std::optional<bool> enable_chunked_prefill;
  // A calibrated profile (apply_profile_overrides) used instead of the engines.yaml row of
  // engine_version; not a vLLM knob.
  std::shared_ptr<const EngineProfile> profile;
};

// The machine: GPU as CUDA reports it, what else occupies it, and the host.
struct HardwareConfig {
  GpuSpec gpu;
  std::int32_t num_gpus = 1;                     // GPUs on the node (>= TP x PP)
  std::int64_t memory_used_by_others_bytes = 0;  // per GPU, before vLLM starts
  std::int64_t host_ram_bytes = 0;               // 0 = unknown (host check skipped)
};

// Knobs after vLLM's defaulting (the evaluated ones: utilization, context, sequences, batched
// tokens, block size, KV element width, capture sizes).
struct ResolvedKnobs {
  double gpu_memory_utilization = 0.0;
  std::int64_t max_model_len = 0;
  std::int64_t max_num_seqs = 0;
  std::int64_t max_num_batched_tokens = 0;
  std::int32_t block_size = 16;
  std::int32_t kv_element_bytes = 2;
  std::int32_t num_cudagraph_sizes = 0;  // 0 with enforce_eager
  std::int32_t max_cudagraph_capture_size = 0;
  // The profile run chunks prompts at max_num_batched_tokens (V1 always; V0 only where its
  // long-context rule turns chunked prefill on), else it runs whole max_model_len prompts.
  bool chunked_prefill = true;
};

// The values a breakdown is computed at: the evaluated knobs and what the launch fixed.
struct ResolvedConfig : ResolvedKnobs {
  DType served_dtype = DType::BF16;
  QuantSpec quantization;  // effective weight format
  std::int32_t tensor_parallel_size = 1;
  std::int32_t pipeline_parallel_size = 1;
  bool enforce_eager = false;
};

// One term of the breakdown, with how we know it.
// Names and provenance are static text (no allocation per breakdown).
struct Term {
  std::string_view name;
  std::int64_t bytes = 0;
  std::string_view provenance;
};

struct RankBreakdown {
  std::int32_t pipeline_rank = 0;
  std::int64_t total_memory_bytes = 0;
  std::int64_t requested_memory_bytes = 0;  // ceil(total * gpu_memory_utilization)
  std::int64_t weights_bytes = 0;
  std::int64_t lora_bytes = 0;  // LoRA slots, part of weights_bytes
  std::int64_t activation_peak_bytes = 0;
  // What the multimodal encoder profile adds to activation_peak_bytes (its forward, or the
  // encoder cache and pixel inputs held under the language model's peak).
  std::int64_t mm_encoder_bytes = 0;
  std::int64_t non_torch_bytes = 0;
  std::int64_t cudagraph_bytes = 0;     // graph pool (estimate where in budget)
  std::int64_t cuda_context_bytes = 0;  // outside the budget: context + NCCL init
  std::int64_t kv_cache_bytes = 0;      // "Available KV cache memory" (may be negative)
  std::int64_t kv_bytes_per_token = 0;
  std::int64_t num_blocks = 0;
  std::int64_t headroom_bytes =
      0;  // total - R - others - context: room for graphs outside the budget
  // What must still fit in the headroom after the KV cache is allocated (0.11+): graphs
  // captured outside the budget, the sampler warm-up and unusable repacked segments, less the
  // profile activations (and in-budget graph estimate) freed by then. <= 0: nothing extra.
  std::int64_t post_allocation_bytes = 0;
  // Model Runner V2's persistent sampler state (penalty bin counts and prompt masks), made
  // between the init snapshot and the profile: inside the budget from 0.27, else uncounted.
  std::int64_t persistent_buffers_bytes = 0;
  KvLayout kv_layout;
  std::vector<Term> terms;
};

// What the startup will do.
enum class Outcome : std::uint8_t {
  Started,
  InsufficientKvForMaxModelLen,  // "To serve at least one request with the model's max seq len"
  NoKvMemory,         // "No available memory for the cache blocks" (reported as oom_kv_alloc)
  StartupFreeMemory,  // "Free memory on device ... less than desired"
  OomAtLoad,          // weights alone exceed the device
  HostOomKilled,      // host RAM exhausted while loading (the silent `Killed`)
  // CUDA OOM after the KV cache is allocated, outside the budget: graph capture (0.11-0.20)
  // or the sampler warm-up on max_num_seqs dummy requests.
  CudagraphCaptureOom,
  SamplerWarmupOom,
  // CUDA OOM while CUDA-graph memory is profiled (>= 0.21), before the budget applies: a
  // minimal KV cache of max_cudagraph_capture_size blocks beside the weights and the graphs.
  // Lowering gpu_memory_utilization cannot help.
  CudagraphProfilingOom,
  // 0.20+: max_num_seqs above the KV pool's blocks on a model with Mamba / linear-attention
  // state and FULL decode CUDA graphs ("max_num_seqs (N) exceeds available Mamba cache
  // blocks (M)"): refused after the KV allocation, before capture.
  StateBlocksBelowMaxNumSeqs,
};
const char* outcome_name(Outcome outcome) noexcept;
const char* model_runner_v2_routing_name(ModelRunnerV2Routing routing) noexcept;

struct HostBreakdown {
  std::int64_t process_baseline_bytes = 0;  // API server + engine core + workers
  std::int64_t loader_anonymous_bytes = 0;  // staging copies (anonymous)
  std::int64_t page_cache_bytes = 0;        // mmap'd safetensors pages (reclaimable)
  std::int64_t pinned_bytes = 0;            // pinned buffers + cpu offload
  std::int64_t input_batch_bytes = 0;       // token ids [max_num_seqs, max_model_len] per worker
  std::int64_t sleep_backup_bytes = 0;      // host copies while asleep (--enable-sleep-mode)
  std::int64_t required_bytes = 0;          // anonymous + pinned: what must fit in RAM
  std::vector<Term> terms;
};

struct Breakdown {
  std::string model_id;
  std::string gpu_id;
  // The release's rules the launch was planned under, shared with its compiled launch (a copy
  // per breakdown cost a plan a tenth of its instructions); profile() reads them.
  std::shared_ptr<const EngineProfile> rules;
  const EngineProfile& profile() const noexcept;
  bool model_runner_v2 = false;  // the launch runs on Model Runner V2
  ResolvedConfig config;
  std::vector<RankBreakdown> ranks;   // one per pipeline stage (TP ranks are symmetric)
  std::int64_t num_blocks = 0;        // min over ranks
  std::int64_t kv_tokens = 0;         // "GPU KV cache size: N tokens" as this version reports
  double max_concurrency = 0.0;       // "Maximum concurrency for max_model_len tokens"
  std::int64_t request_kv_bytes = 0;  // one max_model_len request, worst rank
  std::int64_t estimated_max_model_len = 0;  // largest length that fits (vLLM's estimate)
  std::int64_t startup_free_bytes = 0;       // free memory at the startup check
  HostBreakdown host;
  Outcome outcome = Outcome::Started;
  std::vector<std::string> messages;  // what vLLM would print for a failure, and warnings
};

// One launch, compiled and evaluated at its own knobs (CompiledLaunch, compiled.hpp, does the
// work; keep a CompiledLaunch to evaluate many knob values). Throws ConfigError.
Breakdown compute_breakdown(const ModelSpec& spec, const HardwareConfig& hardware,
                            const EngineConfig& config);

}  // namespace vramplan
