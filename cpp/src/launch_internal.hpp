// Helpers shared by the files that compile and evaluate a launch (compiled_launch.cpp,
// activation.cpp, multimodal.cpp, host_ram.cpp, compiled_evaluate.cpp); not installed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "vramplan/compiled.hpp"

namespace vramplan {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept { return (a + b - 1) / b; }
std::string lower(std::string s);

// Peak torch allocation of the profile run per token on one stage (activation.cpp).
ActivationModel activation_model(const ModelSpec& spec, const QuantSpec& quant,
                                 std::int64_t act_bytes, std::int64_t tp, std::int64_t expert_tp,
                                 const LayerRange& layers, bool last_stage,
                                 double forward_hidden_buffers);

// Host RAM while loading and serving, per node, without the input batch (host_ram.cpp).
HostBreakdown host_model(const ModelSpec& spec, std::int64_t workers, std::int64_t engine_cores,
                         const EngineProfile& profile, const EngineConfig& knobs);
// The pinned host bytes of LMCache's CPU pools on one node (host_ram.cpp).
std::int64_t lmcache_pinned_bytes(const EngineConfig& knobs, std::int64_t workers);
// The pinned host bytes of --kv-offloading-size on one node: `stage_kv_tensors` holds each
// pipeline stage's KV tensors per rank (host_ram.cpp).
std::int64_t kv_offload_pinned_bytes(std::int64_t offload_bytes, std::int64_t engine_cores,
                                     std::int32_t tp,
                                     const std::vector<std::int64_t>& stage_kv_tensors,
                                     const EngineProfile& profile, bool rocm) noexcept;

// Whether the release's startup snapshot counts MemAvailable on `gpu` (a unified-memory
// NVIDIA GPU, engines.yaml unified_memory_free), not cudaMemGetInfo's MemFree (host_ram.cpp).
bool counts_mem_available(const EngineProfile& profile, const GpuSpec& gpu) noexcept;
// The startup check's free memory on a unified-memory GPU from the host's meminfo knobs;
// nullopt where the GPU's total less other tenants applies (host_ram.cpp).
std::optional<std::int64_t> unified_startup_free_bytes(const GpuSpec& gpu,
                                                       const EngineProfile& profile,
                                                       const EngineConfig& knobs,
                                                       std::int64_t cuda_context_bytes) noexcept;
// Why a unified-memory GPU fails the startup check, and the fix; "" elsewhere (host_ram.cpp).
std::string unified_startup_note(const GpuSpec& gpu, const EngineProfile& profile,
                                 const EngineConfig& knobs, std::int64_t cuda_context_bytes,
                                 std::int64_t requested_bytes);

}  // namespace vramplan
