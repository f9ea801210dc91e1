// Host RAM per node while loading and serving: process baselines, loader staging, pinned
// buffers, the input batch and the (reclaimable) page cache.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "launch_internal.hpp"
#include "vramplan/calibration.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/knobs.hpp"
#include "vramplan/saturating.hpp"
#include "vramplan/weights.hpp"

namespace vramplan {
namespace {

// LMCache's max_local_cpu_size default, 5.0 "GB" read as GiB (LMCache 0.5.6 v1/config.py;
// cache_engine.py sizes the pool int(size * 1024**3)).
constexpr std::int64_t kLmcacheLocalCpuDefaultBytes = std::int64_t{5} << 30;

std::string gib_text(std::int64_t bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2)
      << static_cast<double>(bytes) / static_cast<double>(std::int64_t{1} << 30);
  return out.str();
}

// The first release (engines.yaml row) whose startup check counts MemAvailable on `gpu`.
std::string first_release_counting_available(const GpuSpec& gpu) {
  for (const EngineProfile& row : engine_profile_rows()) {
    if (counts_mem_available(row, gpu)) return engine_row_version(row);
  }
  return "";
}

}  // namespace

// MemorySnapshot.measure's UMA branch: the 0.11.1-0.19 wheels list the compute capabilities
// of Orin (8.7), Thor (11.0) and Spark (12.1); from 0.20 torch's is_integrated decides, which
// gpus.yaml's unified_memory stands for. ROCm's platform never overrides is_integrated_gpu.
bool counts_mem_available(const EngineProfile& profile, const GpuSpec& gpu) noexcept {
  if (!gpu.unified_memory || gpu.vendor != "nvidia") return false;
  switch (profile.unified_memory_free) {
    case UnifiedMemoryFree::CudaFree:
      return false;
    case UnifiedMemoryFree::AvailableOrinThorSpark: {
      const long tenths = std::lround(gpu.compute_capability * 10.0);
      return tenths == 87 || tenths == 110 || tenths == 121;
    }
    case UnifiedMemoryFree::AvailableIntegrated:
      return true;
  }
  return false;
}

// On a unified-memory NVIDIA GPU with the host's meminfo given: the figure the release's
// snapshot counts (MemAvailable, or cudaMemGetInfo's free, which is MemFree there), less the
// CUDA context and NCCL made before the snapshot. nullopt: the GPU's total less other
// tenants applies (a discrete GPU, AMD's hipMemGetInfo, or the figure not given).
std::optional<std::int64_t> unified_startup_free_bytes(const GpuSpec& gpu,
                                                       const EngineProfile& profile,
                                                       const EngineConfig& knobs,
                                                       std::int64_t cuda_context_bytes) noexcept {
  if (!gpu.unified_memory || gpu.vendor != "nvidia") return std::nullopt;
  const std::optional<std::int64_t>& counted = counts_mem_available(profile, gpu)
                                                   ? knobs.host_mem_available_bytes
                                                   : knobs.host_mem_free_bytes;
  if (!counted) return std::nullopt;
  return *counted - cuda_context_bytes;
}

// Why a unified-memory GPU fails the startup check and what clears it; "" elsewhere.
std::string unified_startup_note(const GpuSpec& gpu, const EngineProfile& profile,
                                 const EngineConfig& knobs, std::int64_t cuda_context_bytes,
                                 std::int64_t requested_bytes) {
  if (!unified_startup_free_bytes(gpu, profile, knobs, cuda_context_bytes)) return "";
  const std::string release = "vLLM " + profile.version;
  const std::optional<std::int64_t>& available = knobs.host_mem_available_bytes;
  if (counts_mem_available(profile, gpu)) {
    return release + " counts the host's MemAvailable (" + gib_text(*available) +
           " GiB) as this unified-memory GPU's free memory, page cache already counted free: "
           "dropping caches cannot raise it (vllm#48140). Free host memory other processes "
           "hold, or lower --gpu-memory-utilization.";
  }
  const std::int64_t mem_free = *knobs.host_mem_free_bytes;
  std::string note = release +
                     " takes cudaMemGetInfo's free memory on this unified-memory GPU, the host's "
                     "MemFree (" +
                     gib_text(mem_free) + " GiB): page cache counts as used.";
  std::string after_drop;
  if (available) {
    const std::int64_t cache = std::max<std::int64_t>(0, *available - mem_free);
    note = release +
           " takes cudaMemGetInfo's free memory on this unified-memory GPU, the host's MemFree "
           "(" +
           gib_text(mem_free) + " GiB): the " + gib_text(cache) +
           " GiB of page cache that MemAvailable (" + gib_text(*available) +
           " GiB) counts free makes the startup check fail.";
    const std::int64_t free_after = *available - cuda_context_bytes;
    after_drop = free_after >= requested_bytes
                     ? " (about " + gib_text(free_after) + " GiB free then, enough for the " +
                           gib_text(requested_bytes) + " GiB requested)"
                     : " (about " + gib_text(free_after) + " GiB free then, still short of the " +
                           gib_text(requested_bytes) +
                           " GiB requested: lower --gpu-memory-utilization too)";
  }
  const std::string newer = first_release_counting_available(gpu);
  return note + " Fix: drop the page cache before the launch, `sync; echo 1 > " +
         "/proc/sys/vm/drop_caches`" + after_drop +
         (newer.empty() ? "" : ", or vLLM " + newer + " or later, which counts MemAvailable") + ".";
}

// vLLM's LMCache connector (LMCacheConnectorV1; LMCacheConnector in V0) starts one LMCache
// engine in every worker, and each pins its own local CPU pool (LMCache 0.5.6
// cache_engine.py: MixedMemoryAllocator through cudaHostAlloc, unrounded): TP x PP x DP pools
// on the node (LMCache#2901). LMCacheMPConnector keeps the pool in the LMCache server instead.
std::int64_t lmcache_pinned_bytes(const EngineConfig& knobs, std::int64_t workers) {
  const std::string connector = kv_connector_of(knobs.kv_transfer_config);
  if (connector != "LMCacheConnectorV1" && connector != "LMCacheConnector") return 0;
  return saturating_mul(workers,
                        knobs.lmcache_local_cpu_bytes.value_or(kLmcacheLocalCpuDefaultBytes));
}

// Host RAM while loading and serving, per node, without the input batch (it grows with the
// evaluated knobs; see CompiledLaunch::host).
HostBreakdown host_model(const ModelSpec& spec, std::int64_t workers, std::int64_t engine_cores,
                         const EngineProfile& profile, const EngineConfig& knobs) {
  HostBreakdown h;
  // One API server; one engine core per data-parallel replica; one process per GPU.
  h.process_baseline_bytes = calibration::kHostApiServer +
                             engine_cores * calibration::kHostEngineCore +
                             workers * calibration::kHostWorker;
  // Every rank reads every shard and keeps its slice. Memory-mapped (lazy) loading holds about
  // one tensor per worker in anonymous memory, eager loading a whole shard, prefetch only
  // warms the page cache. The rest is file-backed page cache, shared and reclaimable.
  std::int64_t largest_tensor = 0;
  std::int64_t checkpoint_bytes = 0;
  for (const auto& g : model_tensor_groups(spec)) {
    const std::int64_t bytes = tensor_group_bytes(g, spec.quantization, spec.torch_dtype, 1, true);
    checkpoint_bytes += bytes;
    largest_tensor = std::max(largest_tensor, bytes / std::max<std::int64_t>(1, g.count));
  }
  h.page_cache_bytes = spec.checkpoint_bytes > 0 ? spec.checkpoint_bytes : checkpoint_bytes;
  const std::string strategy = lower(knobs.safetensors_load_strategy);
  if (strategy == "eager") {
    // save_pretrained's default shard cap is 5 GB; a smaller checkpoint is one file.
    const std::int64_t shard = std::min(h.page_cache_bytes, calibration::kHostShardBytes);
    h.loader_anonymous_bytes = workers * std::max(shard, largest_tensor);
  } else {
    h.loader_anonymous_bytes = workers * largest_tensor;
  }
  // Pinned memory: V0 pinned its swap space per GPU (default 4 GiB). The compiled launch adds
  // the weight offload (cpu_offload_per_rank) and the KV offload (kv_offload_pinned_bytes),
  // which need the ranks' tensors.
  const std::int64_t swap =
      profile.swap_space_default_bytes > 0
          ? workers * knobs.swap_space_bytes.value_or(profile.swap_space_default_bytes)
          : 0;
  h.pinned_bytes = swap + lmcache_pinned_bytes(knobs, workers);
  h.required_bytes = h.process_baseline_bytes + h.loader_anonymous_bytes + h.pinned_bytes;
  return h;
}

// --kv-offloading-size G is the total over one engine's workers, and each data-parallel
// replica takes its own G. Up to 0.26 a worker pins one tensor per GPU KV tensor, its share of
// G (G / world size / tensors), each rounded up to a power of two (Qwen3-8B, 36 layers, G 75
// GiB: 36 x 4 GiB); from 0.27 one shared region of G, unrounded, where the release maps it.
std::int64_t kv_offload_pinned_bytes(std::int64_t offload_bytes, std::int64_t engine_cores,
                                     std::int32_t tp,
                                     const std::vector<std::int64_t>& stage_kv_tensors,
                                     const EngineProfile& profile, bool rocm) noexcept {
  if (offload_bytes <= 0 || stage_kv_tensors.empty()) return 0;
  const bool shared =
      profile.kv_offload_shared_region && (!rocm || profile.kv_offload_shared_region_rocm);
  if (shared) return engine_cores * offload_bytes;
  const std::int64_t world = std::int64_t{tp} * static_cast<std::int64_t>(stage_kv_tensors.size());
  std::int64_t per_engine = 0;
  for (const std::int64_t tensors : stage_kv_tensors) {
    if (tensors <= 0) continue;
    per_engine += tp * tensors * pinned_block_bytes(offload_bytes / world / tensors);
  }
  return engine_cores * per_engine;
}

HostBreakdown CompiledLaunch::host(const ResolvedKnobs& k) const {
  HostBreakdown h = host_;
  h.input_batch_bytes = input_batch_bytes(k);
  h.required_bytes += h.input_batch_bytes;
  h.terms = {
      {"process_baseline", h.process_baseline_bytes,
       "calibrated: API server 1.5 GiB + 1.5 GiB per engine core (one per DP replica) + 3 GiB "
       "per worker (host-ram.md 6)"},
      {"loader_staging", h.loader_anonymous_bytes,
       lower(config_.safetensors_load_strategy) == "eager"
           ? "formula: one whole shard per worker (eager load, 5 GB shards)"
           : "formula: largest tensor per worker (memory-mapped safetensors)"},
      {"input_batch", h.input_batch_bytes,
       "formula: 5 B x max_num_seqs x max_model_len per worker"},
      {"pinned", h.pinned_bytes,
       profile().kv_offload_shared_region
           ? "formula: CPU-offloaded parameters, each pinned and rounded up to a power of two "
             "(per worker) + KV offload (one shared /dev/shm region, unrounded) + LMCache's CPU "
             "pool per worker + V0 swap space"
           : "formula: CPU-offloaded parameters, each pinned and rounded up to a power of two "
             "(per worker) + KV offload (per KV tensor, each rounded up to a power of two) + "
             "LMCache's CPU pool per worker + V0 swap space"},
      {"sleep_backup", h.sleep_backup_bytes,
       config_.sleep_level.value_or(1) == 1
           ? "formula: asleep at level 1 (--enable-sleep-mode), each worker's weights: one pinned "
             "copy per CUDA caching-allocator segment of its parameters, rounded up to a power "
             "of two"
           : "formula: asleep at level 2, the model's buffers (rotary cache) copied to the host"},
      {"page_cache", h.page_cache_bytes,
       "formula: checkpoint bytes, file-backed and reclaimable (not required)"},
  };
  return h;
}

}  // namespace vramplan
