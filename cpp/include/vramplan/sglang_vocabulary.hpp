// SGLang's vocabulary: every phrase of an SGLang startup log that vramplan reads, written once
// and named (the engine descriptor's LogVocabulary::Sglang), as vllm_vocabulary.hpp is vLLM's.
// Where a phrase introduces a value, the value starts right after it: readers take the offset
// from the phrase (text::after), never count it. Wordings per release:
// shared/reference/sglang-memory.md sections 2 and 6 (0.4.x through 0.5.23).
#pragma once

#include <string_view>

namespace vramplan::sglang_vocabulary {

// --- the launch ---------------------------------------------------------------------------
inline constexpr std::string_view kServerArgs = "server_args=ServerArgs(";
inline constexpr std::string_view kVersionLine = "sglang: ";  // an environment dump's line
inline constexpr std::string_view kModelPath = "model_path=";
inline constexpr std::string_view kTpSize = "tp_size=";
inline constexpr std::string_view kPpSize = "pp_size=";
inline constexpr std::string_view kDpSize = "dp_size=";
inline constexpr std::string_view kCudaGraphMaxBs = "cuda_graph_max_bs=";
inline constexpr std::string_view kMemFractionStatic = "mem_fraction_static=";
inline constexpr std::string_view kChunkedPrefillSize = "chunked_prefill_size=";
inline constexpr std::string_view kMaxPrefillTokens = "max_prefill_tokens=";
inline constexpr std::string_view kMaxRunningRequests = "max_running_requests=";
inline constexpr std::string_view kContextLength = "context_length=";
inline constexpr std::string_view kKvCacheDtype = "kv_cache_dtype=";
inline constexpr std::string_view kNone = "None";

// --- memory -------------------------------------------------------------------------------
inline constexpr std::string_view kInitDistributedEnds = "Init torch distributed ends. mem usage=";
inline constexpr std::string_view kMemoryBaselineTaken = "Memory baseline taken. mem usage=";
inline constexpr std::string_view kLoadWeightBegin = "Load weight begin. avail mem=";
inline constexpr std::string_view kLoadWeightEnd = "Load weight end.";
inline constexpr std::string_view kAvailMem = "avail mem=";
inline constexpr std::string_view kMemUsage = "mem usage=";
inline constexpr std::string_view kKvCacheAllocated = "KV Cache is allocated.";
inline constexpr std::string_view kVirtualKv = "VirtualKV";  // not the token pool: skipped
inline constexpr std::string_view kTokens = "#tokens: ";
inline constexpr std::string_view kKSize = "K size: ";
inline constexpr std::string_view kVSize = "V size: ";
inline constexpr std::string_view kKvSize = "KV size: ";  // MLA / fused pools
inline constexpr std::string_view kSlidingWindowPool = "Use sliding window memory pool.";
inline constexpr std::string_view kFullLayerTokens = "full_layer_tokens=";
inline constexpr std::string_view kSwaLayerTokens = "swa_layer_tokens=";
inline constexpr std::string_view kMambaCacheAllocated = "Mamba Cache is allocated.";
inline constexpr std::string_view kMaxMambaCacheSize = "max_mamba_cache_size: ";
inline constexpr std::string_view kMemoryPoolEnd = "Memory pool end. avail mem=";
inline constexpr std::string_view kCaptureGraphBegin = "Capture cuda graph begin";
inline constexpr std::string_view kCaptureTarget = "Capture target ";  // 0.5.x: decode|prefill
inline constexpr std::string_view kTargetGraphBegin = "CUDA graph begin";
inline constexpr std::string_view kCaptureGraphEnd = "Capture cuda graph end.";
inline constexpr std::string_view kTargetGraphEnd = "CUDA graph end.";
inline constexpr std::string_view kCaptureTargetPrefill = "Capture target prefill";
inline constexpr std::string_view kMaxTotalNumTokens = "max_total_num_tokens=";
inline constexpr std::string_view kContextLen = "context_len=";  // the scheduler's summary
inline constexpr std::string_view kAvailableGpuMem = "available_gpu_mem=";

// --- how it ended -------------------------------------------------------------------------
inline constexpr std::string_view kServerReady = "The server is fired up and ready to roll";
inline constexpr std::string_view kStartupComplete = "Application startup complete";
inline constexpr std::string_view kWeightsLeaveNoMemory = "Loaded weights leave no GPU memory";
inline constexpr std::string_view kNotEnoughMemory =
    "Not enough memory. Please try to increase --mem-fraction-static";  // 0.4.x
inline constexpr std::string_view kNotEnoughMemoryHybrid = "Not enough GPU memory for hybrid";
// HiCache's host pool refused (every release's HostKVCache: memory_pool.py,
// memory_pool_host.py, pool_host/base.py).
inline constexpr std::string_view kNotEnoughHostMemory = "Not enough host memory available";
inline constexpr std::string_view kCaptureGraphFailed = "Capture cuda graph failed";
inline constexpr std::string_view kCudaOutOfMemory = "CUDA out of memory";
inline constexpr std::string_view kOutOfMemoryError = "OutOfMemoryError";
inline constexpr std::string_view kTriedToAllocate = "Tried to allocate ";

}  // namespace vramplan::sglang_vocabulary
