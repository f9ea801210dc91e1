// Host RAM per node while loading and serving: process baselines, loader staging, pinned
// buffers, the input batch and the (reclaimable) page cache.
#include <algorithm>

#include "launch_internal.hpp"
#include "vramplan/calibration.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/knobs.hpp"
#include "vramplan/saturating.hpp"
#include "vramplan/weights.hpp"

namespace vramplan {
namespace {

// LMCache's max_local_cpu_size default, 5.0 "GB" read as GiB (LMCache 0.5.6 v1/config.py;
// cache_engine.py sizes the pool int(size * 1024**3)).
constexpr std::int64_t kLmcacheLocalCpuDefaultBytes = std::int64_t{5} << 30;

}  // namespace

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
  const std::int64_t workers = std::int64_t{config_.tensor_parallel_size} *
                               config_.pipeline_parallel_size * config_.data_parallel_size;
  h.input_batch_bytes = workers * 5 * k.max_num_seqs * k.max_model_len;
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
      {"page_cache", h.page_cache_bytes,
       "formula: checkpoint bytes, file-backed and reclaimable (not required)"},
  };
  return h;
}

}  // namespace vramplan
