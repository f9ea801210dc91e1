// The few constants vramplan cannot derive from first principles, fitted to the vLLM 0.19
// development records in shared/measured/dev.jsonl (H100 80GB, llm-d-planner logs) unless
// noted. Each is a physical quantity with a unit; none is per model. docs/accounting.md
// lists the records behind each value and the fit residuals.
#pragma once

#include <cstdint>

namespace vramplan::calibration {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// The CUDA context, NCCL communicators, forward hidden buffers, non-torch memory (per release)
// and the CUDA-graph pool coefficients are fitted per vLLM version: they are data in
// model_specs/engines.yaml (and calibration profiles), with the records they come from.

// MXFP4 experts are repacked (swizzled) for their kernels after loading; the freed checkpoint
// layout stays reserved by torch's allocator in pieces it cannot reuse for the sampler
// warm-up's large blocks. The OOM lines of dev-032/033 (gpt-oss-20b, 0.19, TP=1/2) report
// 1.78 and 1.62 GiB "reserved by PyTorch but unallocated".
constexpr std::int64_t kRepackedWeightsUnreusable = 1700 * kMiB;

// Host RAM (reference/host-ram.md section 6): per-process baselines, x86.
constexpr std::int64_t kHostApiServer = 1536 * kMiB;
constexpr std::int64_t kHostEngineCore = 1536 * kMiB;
constexpr std::int64_t kHostWorker = 3 * kGiB;
// HF save_pretrained's default max_shard_size "5GB" (eager loading holds one shard per worker).
constexpr std::int64_t kHostShardBytes = 5'000'000'000;

}  // namespace vramplan::calibration
