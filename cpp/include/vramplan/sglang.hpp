// SGLang, the second engine: how an SGLang server sizes GPU memory at startup, per rank.
//
// SGLang runs no profiling forward pass. It takes a free-memory baseline B after distributed
// init, loads the weights, and gives the KV pool what is free then minus a fixed slack
// B * (1 - f), f = --mem-fraction-static. CUDA graphs, the req_to_token table and the
// activations of a chunked prefill must then fit in that slack. The rules that changed across
// releases (the default f, the tier defaults, the running-request rule) are rows of
// model_specs/sglang.yaml; docs/sglang.md derives each term and its accuracy.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vramplan/engine.hpp"
#include "vramplan/hardware.hpp"
#include "vramplan/model_spec.hpp"
#include "vramplan/remedy.hpp"

namespace vramplan {

// --------------------------------------------------------------------------------------------
// Rules (one row of model_specs/sglang.yaml)
// --------------------------------------------------------------------------------------------

enum class SglangFractionRule : std::uint8_t {
  ParallelSteps,  // 0.4.0-0.4.7: a step table by TP x PP, boosted on large GPUs
  TieredReserve,  // 0.4.8-0.5.3: (gpu - reserve) / gpu, the reserve a per-tier constant + TP x PP
  Reserve,        // 0.5.23: (gpu - reserve) / gpu with a reserve for activations and graphs
};

enum class SglangRunningRequestsRule : std::uint8_t {
  PoolBound,   // read from 0.4.6.post5 and 0.4.10.post2: min(user or N // 2, req pool size)
  HalfTokens,  // read from 0.5.23: min(user or the pool estimate, N // 2)
};

// How a release sizes and checks HiCache's host pools (--enable-hierarchical-cache).
enum class SglangHicacheRule : std::uint8_t {
  // 0.4.x (mem_cache/memory_pool*.py:HostKVCache): tokens floored to a page, more tokens than
  // the device pool asserted, each rank checks its pool against the host's MemAvailable less
  // the reserve, MHA and MLA pools only (hiradix_cache.py).
  WholeHost,
  // 0.5.23 (mem_cache/pool_host/base.py:HostKVCache): a padding page added, each rank checks its
  // pools against (MemAvailable - reserve) // ranks on the host, hybrid pools mirrored too.
  PerHostRank,
};

enum class SglangWeightsError : std::uint8_t {
  NotEnoughMemory,  // 0.4.x: "Not enough memory. Please try to increase --mem-fraction-static."
  LeaveNoMemory,    // 0.5.23: "Loaded weights leave no GPU memory for the KV cache ..."
};

struct SglangParallelStep {
  std::int32_t min_parallel_size = 1;
  double fraction = 0.0;
};

// Defaults that depend on nvidia-smi's memory total. below_mib 0: no upper bound (last tier).
struct SglangMemoryTier {
  std::int64_t below_mib = 0;
  std::int64_t chunked_prefill_size = 0;
  std::int32_t graph_max_bs_small_tp = 0;
  std::int32_t graph_max_bs_large_tp = 0;
  double reserve_gib = 0.0;               // TieredReserve: the tier's constant reserve
  double reserve_gib_per_parallel = 0.0;  // TieredReserve: and per TP x PP rank
};

// Captured sizes start, start + step, ... up to end (inclusive).
struct SglangLadderStep {
  std::int64_t start = 0;
  std::int64_t end = 0;
  std::int64_t step = 1;
};

struct SglangRules {
  std::int32_t major = 0;
  std::int32_t minor = 0;
  std::int32_t patch = 0;
  std::string from_version;
  std::string release;  // the wheel the row was read from

  SglangFractionRule fraction_rule = SglangFractionRule::Reserve;
  std::vector<SglangParallelStep> parallel_steps;  // largest min_parallel_size first
  std::int64_t parallel_steps_max_gpu_mib = 0;
  double large_gpu_fraction = 0.0;
  std::int64_t boost_above_gpu_mib = 0;
  std::int64_t boost_headroom_mib = 0;
  std::int64_t boost_cap_reserve_mib = 0;
  double reserve_base_mib = 0.0;
  double reserve_per_activation_token_mib = 0.0;
  std::int64_t min_activation_tokens = 0;
  double reserve_per_parallel_rank_mib = 0.0;
  double reserve_per_decode_graph_bs_mib = 0.0;
  double reserve_per_prefill_graph_mib = 0.0;
  double reserve_mla_prefill_graphs_mib = 0.0;
  double reserve_floor_mib = 0.0;
  std::int64_t reserve_floor_above_gpu_mib = 0;

  std::vector<SglangMemoryTier> memory_tiers;
  std::int32_t large_tp_size = 4;
  std::vector<SglangLadderStep> decode_graph_ladder;
  bool prefill_graphs = false;
  std::vector<SglangLadderStep> prefill_graph_ladder;
  std::int64_t mla_prefill_graph_max_tokens = 0;

  SglangRunningRequestsRule running_requests_rule = SglangRunningRequestsRule::HalfTokens;
  std::int64_t req_pool_requests_per_context = 512;
  std::int64_t req_pool_min_requests = 2048;
  std::int64_t req_pool_max_requests = 4096;
  std::int64_t req_to_token_extra_columns = 4;
  std::int64_t req_to_token_element_bytes = 4;
  std::int32_t page_size_default = 1;
  bool kv_padding_page = true;
  SglangWeightsError weights_error = SglangWeightsError::LeaveNoMemory;
  double swa_full_tokens_ratio_default = 0.8;
  double mamba_full_memory_ratio_default = 0.9;
  std::int64_t mamba_slots_per_request = 3;
  double decode_graph_estimate_mib_per_bs = 0.0;
  double prefill_graph_estimate_mib_per_size = 0.0;
  // The flag that sets the decode graphs' largest batch (0.5.23: --cuda-graph-max-bs-decode).
  std::string cuda_graph_max_bs_flag = "--cuda-graph-max-bs";

  std::int64_t cuda_context_bytes = 0;
  std::int64_t nccl_pcie_bytes = 0;
  std::int64_t nccl_nvlink_bytes = 0;

  // HiCache's host pools (docs/sglang.md, "Host memory: HiCache").
  SglangHicacheRule hicache_rule = SglangHicacheRule::PerHostRank;
  double hicache_ratio_default = 2.0;
  // --hicache-mem-layout's choices, the default first; empty: the release has no such flag.
  std::vector<std::string> hicache_mem_layouts;
  std::int64_t hicache_host_reserve_bytes = 0;  // MemAvailable SGLang leaves to the host
  // The refusal's "only have X GB free" is MemAvailable less the reserve (0.4.6: MemAvailable).
  bool hicache_error_free_after_reserve = true;
  // torch pin_memory=True: the caching host allocator pins the next power of two of the pool;
  // false: an anonymous mmap rounded to 4 KiB pages, then cudaHostRegister.
  bool hicache_pinned_power_of_two = false;
  // A fixed --hicache-size is split across a hybrid model's host pools by their device bytes;
  // false: each pool takes the whole size (sglang#29034: 2x host memory for hybrid models).
  bool hicache_size_split = true;
  // Without --hicache-ratio or --hicache-size the default ratio shrinks until the pools fit this
  // fraction of the rank's share of the host (0: no auto-sizing).
  double hicache_host_memory_fraction_default = 0.0;
};

// How far the model is from logged SGLang startups (sglang.yaml `accuracy`, from the records
// docs/sglang.md's accuracy table lists): what a plan's error band states.
struct SglangAccuracy {
  std::int64_t kv_pool_records = 0;            // logged pools the cell arithmetic was checked on
  std::int64_t kv_tokens_records = 0;          // whole-model KV token figures
  double kv_tokens_over_prediction_max = 0.0;  // largest over-prediction, a fraction of the log's
  std::int64_t graph_records = 0;              // logged CUDA-graph captures
  double graph_under_estimate_max = 0.0;       // largest shortfall of the reserve, a fraction
};

struct SglangTable {
  std::vector<SglangRules> rows;  // ascending by version
  SglangAccuracy accuracy;
};

// One sentence stating the accuracy, for a plan.
std::string sglang_error_band(const SglangAccuracy& accuracy);

// Parses a sglang.yaml document; `file` names it in errors. SpecError naming the file and the
// field for an unknown, missing or out-of-range field, a row out of order, or broken YAML.
SglangTable parse_sglang_yaml(const std::string& yaml_text, const std::string& file);
// The table compiled in from model_specs/sglang.yaml (parsed once).
const SglangTable& sglang_table();
// The row for an SGLang version ("0.5.23", "0.4.6.post5"; empty: the newest row). ConfigError
// for a version before the first row or one that does not parse.
const SglangRules& sglang_rules(const SglangTable& table, const std::string& version);
// What was assumed when `version` is not the release its row was read from (the row's rules
// are taken for it); empty when it is.
std::string sglang_version_note(const SglangTable& table, const std::string& version);

// --------------------------------------------------------------------------------------------
// The launch: SGLang's knobs under SGLang's names and units
// --------------------------------------------------------------------------------------------

struct SglangConfig {
  std::string model_path;                     // as the user wrote it (for the launch line)
  std::optional<double> mem_fraction_static;  // nullopt: the row's default formula
  std::optional<std::int64_t> max_running_requests;
  std::optional<std::int64_t> context_length;        // nullopt: the model's maximum
  std::optional<std::int64_t> chunked_prefill_size;  // -1 disables chunking
  std::optional<std::int32_t> cuda_graph_max_bs;
  std::optional<std::int64_t> max_total_tokens;
  std::int64_t max_prefill_tokens = 16384;
  std::optional<std::int32_t> page_size;
  std::string kv_cache_dtype = "auto";  // auto, bf16, fp16, fp8_e4m3, fp8_e5m2
  std::int32_t tp_size = 1;
  std::int32_t pp_size = 1;
  std::int32_t dp_size = 1;  // replicas: each has its own GPUs and sizes alike
  bool disable_cuda_graph = false;
  std::optional<double> swa_full_tokens_ratio;
  std::optional<double> mamba_full_memory_ratio;
  // HiCache: a host-RAM tier behind the KV pool (--enable-hierarchical-cache).
  bool enable_hierarchical_cache = false;
  std::optional<double> hicache_ratio;  // host tokens per device token; nullopt: the row's
  std::int64_t hicache_size_gb = 0;     // --hicache-size, decimal GB (1e9 bytes); 0: ratio
  std::string hicache_mem_layout;       // empty: the release's default
  std::int32_t nnodes = 1;              // --nnodes: the ranks share this many hosts
  // The host's MemAvailable before the launch (planner input, not a flag); nullopt: unknown,
  // SGLang's host-memory check is not reproduced.
  std::optional<std::int64_t> host_mem_available_bytes;
};

// The byte terms the KV budget is made of, per rank (what the engine seam passes).
struct SglangByteTerms {
  std::int64_t baseline_free_bytes = 0;       // B: free after distributed init (world minimum)
  std::int64_t free_after_weights_bytes = 0;  // free when the pool is sized
  double mem_fraction_static = 0.0;
  std::int64_t reserved_bytes = 0;  // multimodal caches carved out before the pool
};

struct SglangKvBudget {
  std::int64_t slack_bytes = 0;  // B * (1 - f)
  std::int64_t rest_bytes = 0;   // free - slack - reserved; <= 0: the weights leave nothing
};

// KV bytes SGLang gives the pools: free - B * (1 - f) - reserved. Allocation-free.
SglangKvBudget sglang_kv_budget(const SglangRules& rules, const SglangByteTerms& terms) noexcept;

// The default --mem-fraction-static of a release for a GPU of `gpu_mib` (nvidia-smi MiB).
struct SglangFractionInputs {
  std::int64_t gpu_mib = 0;
  std::int32_t tp_size = 1;
  std::int32_t pp_size = 1;
  std::int64_t chunked_prefill_size = 0;  // resolved; -1 when chunking is off
  std::int64_t max_prefill_tokens = 16384;
  std::int32_t decode_graph_max_bs = 0;  // resolved
  bool decode_graphs = true;
  std::int64_t prefill_graph_count = 0;
  bool mla = false;
};
double sglang_default_mem_fraction_static(const SglangRules& rules,
                                          const SglangFractionInputs& in) noexcept;
// The memory tier of a GPU of `gpu_mib` (nvidia-smi MiB).
const SglangMemoryTier& sglang_memory_tier(const SglangRules& rules, std::int64_t gpu_mib) noexcept;
// Captured sizes of a ladder up to `max_size`.
std::vector<std::int64_t> sglang_ladder(const std::vector<SglangLadderStep>& ladder,
                                        std::int64_t max_size);

// --------------------------------------------------------------------------------------------
// HiCache's host pools, per rank
// --------------------------------------------------------------------------------------------

// The device pools HiCache mirrors (one rank's), as the breakdown sized them.
struct SglangHicacheDevice {
  std::int64_t full_tokens = 0;  // max_total_num_tokens
  std::int64_t full_bytes_per_token = 0;
  std::int64_t full_pool_bytes = 0;  // K + V buffers, padding page included
  std::int64_t swa_tokens = 0;
  std::int64_t swa_bytes_per_token = 0;
  std::int64_t swa_pool_bytes = 0;
  std::int64_t mamba_slots = 0;
  std::int64_t mamba_bytes_per_slot = 0;
  std::int64_t mamba_pool_bytes = 0;
  std::int32_t page_size = 1;
  std::int32_t ranks_per_node = 1;  // SGLang's ranks on one host (world size // nnodes)
};

enum class SglangHicacheRefusal : std::uint8_t {
  None,
  HybridModel,          // 0.4.x: "HiRadixCache only supports MHA and MLA yet"
  NotLargerThanDevice,  // 0.4.x: the host pool must hold more tokens than the device pool
  NoHostMemoryLeft,     // 0.5.23 auto-sizing: nothing left after the reserve
  NotEnoughHostMemory,  // "Not enough host memory available. Requesting X GB but only have Y"
};

struct SglangHicachePool {
  std::int64_t tokens = 0;  // Mamba: state slots
  std::int64_t bytes_per_token = 0;
  std::int64_t bytes = 0;         // tokens x bytes_per_token: what SGLang requests and logs
  std::int64_t pinned_bytes = 0;  // what the host pins for it (allocator rounding)
};

struct SglangHicache {
  bool enabled = false;
  double ratio = 0.0;  // resolved: given, the row's default, or auto-sized
  bool auto_sized = false;
  std::int64_t size_gb = 0;
  SglangHicachePool full;  // full-attention (MLA: latent) pool
  SglangHicachePool swa;
  SglangHicachePool mamba;
  std::int64_t host_bytes_per_rank = 0;    // sum of the pools' bytes
  std::int64_t pinned_bytes_per_rank = 0;  // sum of the pools' pinned bytes
  std::int32_t ranks_per_node = 1;
  std::int64_t pinned_bytes_per_node = 0;
  std::int64_t budget_bytes = -1;  // what SGLang compares the pools with; -1: host unknown
  SglangHicacheRefusal refusal = SglangHicacheRefusal::None;
  std::int64_t refused_request_bytes = 0;  // the pool that did not fit
  std::int64_t refused_free_bytes = 0;     // the figure SGLang's message prints
};

// HiCache's host pools as `rules`' release allocates them; disabled (all zero) without
// --enable-hierarchical-cache. Allocation-free.
SglangHicache sglang_hicache(const SglangRules& rules, const SglangConfig& config,
                             const SglangHicacheDevice& device) noexcept;
// SGLang's own text for a refusal; "" for none.
std::string sglang_hicache_error(const SglangHicache& hicache);
// ConfigError for HiCache knobs the release refuses (the layout outside its choices, a flag it
// does not have) or out of range.
void check_sglang_hicache_config(const SglangRules& rules, const SglangConfig& config);

// --------------------------------------------------------------------------------------------
// The breakdown (per rank) and the verdict
// --------------------------------------------------------------------------------------------

enum class SglangVerdict : std::uint8_t {
  Started,
  WeightsLeaveNoMemory,  // rest <= 0 (releases before 0.5.23's row report "Not enough memory")
  NotEnoughMemory,       // tokens <= 0 after the cell division / the hybrid state pool
  OomGraphCapture,       // the slack cannot hold req_to_token and the decode graphs
  OomFirstPrefill,       // graphs fit, a chunked-prefill forward does not
  HicacheRefused,        // SGLang refuses the HiCache host pools (host memory, shape, model)
};
const char* sglang_verdict_name(SglangVerdict verdict) noexcept;

struct SglangBreakdown {
  std::string release;
  std::string model;
  std::string gpu;
  std::int32_t tp_size = 1;
  std::int32_t pp_size = 1;
  std::int32_t dp_size = 1;
  // The pipeline stage reported: the first that fails, else the one with the smallest pool
  // (the ranks agree on it).
  std::int32_t pipeline_rank = 0;

  // Resolved knobs.
  std::int64_t gpu_total_bytes = 0;  // CUDA total
  std::int64_t gpu_mib = 0;          // nvidia-smi total, the defaults' input
  bool gpu_mib_assumed = false;      // not in sglang.yaml: the CUDA total was used
  double mem_fraction_static = 0.0;
  bool mem_fraction_static_default = false;
  std::int64_t chunked_prefill_size = 0;
  std::int32_t cuda_graph_max_bs = 0;  // 0: graphs disabled
  std::int64_t prefill_graph_count = 0;
  std::int64_t context_length = 0;
  std::int32_t page_size = 1;
  std::int32_t kv_element_bytes = 2;

  // Memory, bytes per rank.
  std::int64_t cuda_context_bytes = 0;
  std::int64_t nccl_bytes = 0;
  std::int64_t baseline_free_bytes = 0;  // B
  std::int64_t weights_bytes = 0;
  std::int64_t free_after_weights_bytes = 0;
  std::int64_t slack_bytes = 0;  // B * (1 - f)
  std::int64_t rest_bytes = 0;   // the KV budget before the hybrid state pool
  std::int64_t mamba_state_bytes_per_slot = 0;
  std::int64_t mamba_slots = 0;
  std::int64_t mamba_pool_bytes = 0;
  std::int64_t cell_bytes = 0;         // bytes per token over the rank's layers (SWA: weighted)
  std::int64_t k_bytes_per_token = 0;  // full-attention layers; MLA: the latent
  std::int64_t v_bytes_per_token = 0;  // 0 for MLA
  bool mla = false;
  std::int64_t max_total_num_tokens = 0;  // full-attention tokens
  std::int64_t swa_tokens = 0;            // sliding-window pool tokens, 0 without SWA layers
  std::int64_t kv_pool_bytes = 0;         // allocated, padding page included
  std::int64_t k_size_bytes = 0;          // the "K size" log figure (MLA: "KV size")
  std::int64_t v_size_bytes = 0;
  std::int64_t max_running_requests = 0;
  std::int64_t req_to_token_bytes = 0;
  std::int64_t free_after_pool_bytes = 0;  // slack - req_to_token: "Memory pool end. avail mem"
  std::int64_t decode_graph_bytes = 0;     // estimate (SGLang's reserve heuristic)
  std::int64_t prefill_graph_bytes = 0;    // estimate
  std::int64_t activation_bytes = 0;       // estimate of one chunked-prefill forward
  std::int64_t free_after_graphs_bytes = 0;

  // Host memory: the HiCache pools (per rank and per node).
  SglangHicache hicache;
  std::string hicache_mem_layout;  // resolved; "" without HiCache

  SglangVerdict verdict = SglangVerdict::Started;
  std::string error;               // SGLang's own text for a failing verdict
  std::vector<std::string> notes;  // what was assumed
  // The rank's GPU memory as terms that add up to gpu_total_bytes (sglang_rank_terms).
  std::vector<Term> terms;
};

// The reported rank's GPU memory in SGLang's accounting order, from the breakdown's fields:
// cuda_context, nccl (ranks that talk), weights, kv_pool, mamba_pool (hybrid models),
// req_to_token, decode_cudagraph, prefill_cudagraph (releases that capture them), activation,
// free. They add up to gpu_total_bytes: free is what the slack keeps after the others
// (negative where they overrun it). Each term's provenance says whether it is SGLang's own
// arithmetic (exact), fitted to logs (calibrated) or an estimate.
std::vector<Term> sglang_rank_terms(const SglangBreakdown& breakdown);

// Computes the breakdown. ConfigError for knobs out of range (field, value, allowed range).
SglangBreakdown sglang_breakdown(const ModelSpec& spec, const GpuSpec& gpu,
                                 const SglangRules& rules, const SglangConfig& config);

// --------------------------------------------------------------------------------------------
// The sweep: a grid of launches, compiled once, each point evaluated without allocating
// --------------------------------------------------------------------------------------------

// The listed values of each knob; an empty list keeps the launch's own (given or default).
// Rows nest in this order, mem_fraction_static outermost.
struct SglangSweepGrid {
  std::vector<double> mem_fraction_static;
  std::vector<std::int64_t> context_length;
  std::vector<std::int64_t> max_running_requests;
  std::vector<std::int64_t> chunked_prefill_size;
};
// Rows the grid has; ConfigError past kMaxSweepPoints (solver.hpp).
std::int64_t sglang_sweep_size(const SglangSweepGrid& grid);
// Output columns the caller owns, each with sglang_sweep_size(grid) elements. Each row holds
// what sglang_breakdown reports at that point: the knobs as resolved (a default as computed,
// max_running_requests as SGLang caps it, 0 where the launch fails before it), the KV pool
// bytes, max_total_num_tokens and the verdict (SglangVerdict's value).
struct SglangSweepColumns {
  double* mem_fraction_static = nullptr;
  std::int64_t* context_length = nullptr;
  std::int64_t* max_running_requests = nullptr;
  std::int64_t* chunked_prefill_size = nullptr;
  std::int64_t* kv_pool_bytes = nullptr;
  std::int64_t* max_total_num_tokens = nullptr;
  std::int8_t* verdict = nullptr;
};
// Every listed value is checked as a single knob first (ConfigError naming it).
void sglang_sweep(const ModelSpec& spec, const GpuSpec& gpu, const SglangRules& rules,
                  const SglangConfig& config, const SglangSweepGrid& grid,
                  const SglangSweepColumns& out);

// --------------------------------------------------------------------------------------------
// The solver: the largest safe value of each knob, the others as given
// --------------------------------------------------------------------------------------------

// What an SGLang plan serves beyond the launch's own knobs (the solver's targets, as vLLM's
// SolveTargets are).
struct SglangTargets {
  std::int64_t context_tokens = 0;  // context to serve; 0: the launch's context_length
  std::int64_t concurrency = 0;     // sequences of that context the pool holds at once (0: none)
  // Bytes the slack keeps free after the CUDA graphs and the first chunked prefill (allocator
  // fragmentation and the graph estimate's error, docs/sglang.md).
  std::int64_t safety_margin_bytes = kDefaultSafetyMarginBytes;
  bool remedies = true;  // false: a remedy's replay, which offers none of its own
};

struct SglangPlan {
  SglangBreakdown launch;  // the launch as written
  // Largest values that start (nullopt: none does, e.g. the weights do not fit at f = 0.99).
  std::optional<double> max_mem_fraction_static;
  std::optional<std::int64_t> max_running_requests;
  std::optional<std::int64_t> max_context_length;
  std::optional<std::int64_t> max_chunked_prefill_size;
  std::optional<std::int32_t> max_cuda_graph_max_bs;
  // The largest mem_fraction_static that starts with the safety margin left in the slack: the
  // planned value unless the user gave one.
  std::optional<double> safe_mem_fraction_static;
  SglangBreakdown planned;               // the launch with the planned mem_fraction_static
  std::string launch_line;               // python -m sglang.launch_server ... (shell-safe)
  std::vector<std::string> launch_argv;  // its flags as argv words, as the release spells them
  SglangConfig planned_config;

  // The planned launch judged against the targets: it starts, keeps the margin free in the
  // slack, and its pool holds `concurrency` sequences of the target context within
  // max_running_requests.
  bool fits = false;
  std::string verdict;  // one line: fits with its numbers, or what fails
  std::int64_t safety_margin_bytes = 0;
  std::int64_t target_context_tokens = 0;  // resolved: the planned context_length without one
  std::int64_t concurrent_sequences = 0;   // of the target context, up to max_running_requests
  std::int64_t spare_slack_bytes = 0;      // free after graphs and the first prefill
  std::vector<Remedy> remedies;            // when it does not fit, each replayed
  std::string error_band;                  // sglang_error_band of the compiled-in table
};

// Pinned knobs (those `config` sets) are kept; the others are chosen: mem_fraction_static the
// largest that leaves the margin (safe_mem_fraction_static), context_length the target's.
SglangPlan sglang_plan(const ModelSpec& spec, const GpuSpec& gpu, const SglangRules& rules,
                       const SglangConfig& config, const SglangTargets& targets = {});

// `python -m sglang.launch_server --model-path ... --tp-size ... --mem-fraction-static ...`
// with every value single-quoted where the shell would read it otherwise.
// Flags are spelled as the row's release takes them (its cuda_graph_max_bs_flag).
std::string sglang_launch_line(const SglangConfig& config, const SglangRules& rules);
// The launch line's flags as argv words (the model not included: it is --model-path's value).
std::vector<std::string> sglang_launch_argv(const SglangConfig& config, const SglangRules& rules);
// Keyword arguments for `sglang.Engine(**kwargs)` (ServerArgs names: the flags of `argv`), the
// model included.
nlohmann::json sglang_engine_kwargs(const std::string& model_path,
                                    const std::vector<std::string>& argv);

nlohmann::json to_json(const SglangBreakdown& breakdown);
nlohmann::json to_json(const SglangPlan& plan);

}  // namespace vramplan
