// The few constants vramplan cannot derive from first principles, fitted to the vLLM 0.19
// development records in shared/measured/dev.jsonl (H100 80GB, llm-d-planner logs) unless
// noted. Each is a physical quantity with a unit; none is per model. docs/accounting.md
// lists the records behind each value and the fit residuals.
#pragma once

#include <cstdint>

namespace vramplan::calibration {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// Activation peak of the profile run.
// Hidden-size-wide activation buffers alive at the forward peak (residual, normed input,
// attention input/output, q/k/v slices): Llama-3.1-8B PP=2/4 first stages (dev-023/024,
// no sampler) peak at 1.05-1.10 GiB = T * 2 B * (3 * I + k * h) with k ~ 6.
constexpr double kForwardHiddenBuffers = 6.0;
// Sampler bytes per logit and the TP=1 non-torch memory change between vLLM releases: they
// are per-version data in model_specs/engines.yaml, with the records they come from.

// Memory outside torch's allocator grown during the profile run.
// PP>1 with TP=1 (0.07 GiB, dev-023/024): the workspaces are created before the snapshot.
constexpr std::int64_t kNonTorchPipelineOnly = 72 * kMiB;
// TP>=2: custom all-reduce IPC buffers and lazily created NCCL buffers: 2.06-2.17 GiB at
// TP=2/4 (dev-025/026/031/042/043/011/046/029).
constexpr std::int64_t kNonTorchTensorParallel = 2110 * kMiB;

// CUDA-graph pool: a fixed part (the largest capture's activations and the graph pool's
// first segments) plus a per-captured-piece cost (each piecewise graph is one decoder layer
// at one batch size: its exec nodes and the outputs it keeps in the pool, which grow with the
// rank's hidden width h/TP). Fitted on the 0.19 records with 51 capture sizes: Llama-3.1-8B
// TP=1/2/4 (0.91/0.76/0.67 GiB, dev-021/025/026: 0.326/0.232/0.165 MiB per piece) give the
// slope and intercept, PP=2/4 (0.65/0.51, dev-023/024) confirm the per-layer count, and
// Llama-3.3-70B TP=2 (1.79/1.85, dev-011/046) the width (0.36 MiB per piece at h/TP 4096).
constexpr std::int64_t kCudagraphBase = 400 * kMiB;
constexpr double kCudagraphPieceBytesFixed = 0.111 * kMiB;
constexpr double kCudagraphPieceBytesPerHidden = 5.24e-5 * kMiB;  // x hidden_size / TP
// Extra per captured piece for a routed-expert layer (routing, align/sort kernels) and for an
// MLA layer: Qwen3-30B-A3B 1.41, Mixtral TP=2 0.93, DeepSeek-V2-Lite 1.57, gpt-oss-20b 1.84 GiB.
constexpr double kCudagraphPieceBytesMoe = 0.15 * kMiB;
constexpr double kCudagraphPieceBytesMla = 0.40 * kMiB;
// MXFP4 expert layers (gpt-oss) keep their kernels' intermediates per captured piece on top of
// the MoE cost: gpt-oss-20b 1.84 / 1.55 GiB at TP=1/2 (dev-032/033) against 0.95 / 0.84 GiB
// without this term, over 24 layers x 51 sizes: 0.75 / 0.59 MiB per piece, mean 0.67.
constexpr double kCudagraphPieceBytesMxfp4Moe = 0.67 * kMiB;

// CUDA context created before the init snapshot: 0.51 GiB on H100 with vLLM 0.19
// (`cuda_memory=0.51GiB` at worker init, reference/gpus.md); NCCL communicators add to it
// when the rank talks to others.
constexpr std::int64_t kCudaContext = 522 * kMiB;
constexpr std::int64_t kNcclCommunicators = 256 * kMiB;

// MXFP4 experts are repacked (swizzled) for their kernels after loading; the freed checkpoint
// layout stays reserved by torch's allocator in pieces it cannot reuse for the sampler
// warm-up's large blocks. The OOM lines of dev-032/033 (gpt-oss-20b, 0.19, TP=1/2) report
// 1.78 and 1.62 GiB "reserved by PyTorch but unallocated".
constexpr std::int64_t kRepackedWeightsUnreusable = 1700 * kMiB;

// Host RAM (reference/host-ram.md section 6): per-process baselines, x86.
constexpr std::int64_t kHostApiServer = 1536 * kMiB;
constexpr std::int64_t kHostEngineCore = 1536 * kMiB;
constexpr std::int64_t kHostWorker = 3 * kGiB;
// Pinned allocations round up to a power of two in torch's CachingHostAllocator; 1.9x is
// the reference's planning ratio for cpu_offload_gb when the build is unknown.
constexpr double kPinnedOverhead = 1.9;
// V0's default --swap-space, pinned per GPU.
constexpr std::int64_t kHostV0SwapSpace = 4 * kGiB;
// HF save_pretrained's default max_shard_size "5GB" (eager loading holds one shard per worker).
constexpr std::int64_t kHostShardBytes = 5'000'000'000;

}  // namespace vramplan::calibration
