// vLLM's vocabulary: every phrase of a vLLM log that vramplan reads, written once and named,
// shared by the log parser (log_parser.cpp) and the failure classifier (diagnose.cpp). Where a
// phrase introduces a value, the value starts right after it (spaces skipped): readers take
// the offset from the phrase (text::after), never count it.
//
// Sources: "0.19 v1/worker/gpu_worker.py" names the release and file whose log header printed
// the phrase in the committed 0.19.0 logs; "(older)" marks wording of earlier releases kept
// for the logs users paste from them; no source means none was at hand to cite.
#pragma once

#include <string_view>

namespace vramplan::vllm_vocabulary {

// Logger format "INFO 04-22 00:04:02 [v1/worker/gpu_model_runner.py:4820] msg" (0.19
// logger.py); V0 "INFO 01-16 09:40:00 worker.py:238] msg". Each level with its space.
inline constexpr std::string_view kLogLevels[] = {"DEBUG ", "INFO ",     "WARNING ",
                                                  "ERROR ", "CRITICAL ", "WARN "};

// --- the launch ---------------------------------------------------------------------------
inline constexpr std::string_view kApiServerVersion = "vLLM API server version ";
inline constexpr std::string_view kLlmEngine = "LLM engine";            // 0.19 v1/engine/core.py
inline constexpr std::string_view kLlmEngineVersion = "LLM engine (v";  // ... "(v0.19.0)"
inline constexpr std::string_view kWithConfig = "with config: ";        // 0.19 v1/engine/core.py
inline constexpr std::string_view kBannerGlyph = "\xE2\x96";            // the ASCII-art banner
inline constexpr std::string_view kBannerVersion = " version ";         // ... "version 0.19.0"
inline constexpr std::string_view kNonDefaultArgs =
    "non-default args: {";  // 0.19 entrypoints/utils.py
inline constexpr std::string_view kUsingMaxModelLen =
    "Using max model len ";  // 0.19 config/model.py
inline constexpr std::string_view kDefaultingMaxNumSeqs =
    "Defaulting max_num_seqs to ";  // 0.19 engine/arg_utils.py
inline constexpr std::string_view kDefaultingMaxNumBatchedTokens =
    "Defaulting max_num_batched_tokens to ";  // 0.19 engine/arg_utils.py
inline constexpr std::string_view kChunkedPrefillMaxNumBatchedTokens =
    "Chunked prefill is enabled with max_num_batched_tokens=";  // 0.19 config/scheduler.py
inline constexpr std::string_view kSettingAttentionBlockSize = "Setting attention block size to";
inline constexpr std::string_view kRequestedMemory = "Requested memory: ";  // 0.19 gpu_worker.py
inline constexpr std::string_view kTimesGpuMemoryUtilization = "x gpu_memory_utilization (";
inline constexpr std::string_view kDesiredUtilizationIs =
    "Desired GPU memory utilization is (";  // 0.19 v1/worker/gpu_worker.py
inline constexpr std::string_view kDesiredUtilizationLower =
    "desired GPU memory utilization (";  // 0.19 v1/executor/multiproc_executor.py
inline constexpr std::string_view kStartingToLoadModel =
    "Starting to load model ";  // 0.19 v1/worker/gpu_model_runner.py

// --- the memory profile ------------------------------------------------------------------
inline constexpr std::string_view kTotalMemoryEquals = "total_memory=";  // 0.19 gpu_worker.py
inline constexpr std::string_view kTotalGpuMemoryParen = "total_gpu_memory (";  // (older)
inline constexpr std::string_view kTotalGpuMemoryEquals = "total_gpu_memory=";  // (older)
// "Free memory on device cuda:1 (60.33/79.19 GiB) on startup is less than desired GPU memory
// utilization (0.95, 75.23 GiB)." (0.19 v1/worker/gpu_worker.py); 0.10.2 leaves out the
// device: "Free memory on device (16.01/93.0 GiB) on startup is less than desired ..." (0.10.2).
// Both forms are read from the first "(" after the phrase.
inline constexpr std::string_view kFreeMemoryOnDevice = "Free memory on device";
inline constexpr std::string_view kIsLessThanDesired = "is less than desired";
inline constexpr std::string_view kUtilizationOpen = "utilization (";
inline constexpr std::string_view kModelLoadingTook =
    "Model loading took";  // 0.19 v1/worker/gpu_model_runner.py
inline constexpr std::string_view kLoadingModelWeightsTook =
    "Loading model weights took";                                            // (older)
inline constexpr std::string_view kModelWeightsTake = "model weights take";  // (older)
inline constexpr std::string_view kTorchPeakMemoryIncrease =
    "torch peak memory increase: ";  // 0.19 v1/worker/gpu_worker.py
inline constexpr std::string_view kPytorchActivationPeakMemory =
    "PyTorch activation peak memory";                // (older)
inline constexpr std::string_view kTakes = "takes";  // ... "takes 1.2 GiB"
inline constexpr std::string_view kNonTorchForwardIncrease =
    "non-torch forward increase memory: ";  // 0.19 v1/worker/gpu_worker.py
inline constexpr std::string_view kNonTorchMemoryTakes = "non_torch_memory takes ";  // (older)
inline constexpr std::string_view kTotalNonKvCacheMemory =
    "Total non KV cache memory: ";  // 0.19 v1/worker/gpu_worker.py
// V0, late 2024: "Memory profiling results: total_gpu_memory=79.10GiB ...
// gpu_memory_utilization=0.90 ... non_torch_memory=0.74GiB; kv_cache_size=57.69GiB".
inline constexpr std::string_view kMemoryProfilingResults = "Memory profiling results";
inline constexpr std::string_view kGpuMemoryUtilizationEquals = "gpu_memory_utilization=";
inline constexpr std::string_view kNonTorchMemoryEquals = "non_torch_memory=";
inline constexpr std::string_view kKvCacheSizeEquals = "kv_cache_size=";

// --- the KV cache ------------------------------------------------------------------------
inline constexpr std::string_view kAvailableKvCacheMemory =
    "Available KV cache memory:";  // 0.19 v1/worker/gpu_worker.py
inline constexpr std::string_view kRestReservedForKvCache =
    "the rest of the memory reserved for KV Cache is ";  // (older)
inline constexpr std::string_view kGpuKvCacheSize =
    "GPU KV cache size:";                                          // 0.19 v1/core/kv_cache_utils.py
inline constexpr std::string_view kGpuBlocks = "# GPU blocks:";    // V0
inline constexpr std::string_view kCudaBlocks = "# CUDA blocks:";  // V0
inline constexpr std::string_view kCudaBlocksLower = "# cuda blocks:";  // V0
// "Maximum concurrency for 8,192 tokens per request: 57.42x" (0.19 v1/core/kv_cache_utils.py)
inline constexpr std::string_view kMaximumConcurrencyFor = "Maximum concurrency for ";
inline constexpr std::string_view kPerRequest = "per request: ";
// "Add 3 padding layers, may waste at most 10.00% KV cache memory" (kv_cache_utils.py)
inline constexpr std::string_view kAdd = "Add ";
inline constexpr std::string_view kPaddingLayers = " padding layers";
inline constexpr std::string_view kNumGpuBlocksOverride =
    "with num_gpu_blocks_override=";  // 0.19 v1/core/kv_cache_utils.py

// --- CUDA graphs -------------------------------------------------------------------------
inline constexpr std::string_view kProfilingCudaGraphMemory =
    "Profiling CUDA graph memory";  // 0.19 v1/worker/gpu_model_runner.py
inline constexpr std::string_view kEstimatedCudaGraphMemory =
    "Estimated CUDA graph memory: ";  // 0.19 v1/worker/gpu_model_runner.py
inline constexpr std::string_view kCapturingCudaGraph =
    "Capturing CUDA graph";  // 0.19 v1/worker/gpu_model_runner.py
inline constexpr std::string_view kCapturingCudagraphs = "Capturing cudagraphs";
inline constexpr std::string_view kCapturingModelForCudaGraphs =
    "Capturing the model for CUDA graphs";  // V0
// "Graph capturing finished in 5 secs, took 0.53 GiB" (0.19 v1/worker/gpu_model_runner.py)
inline constexpr std::string_view kGraphCapturingFinished = "Graph capturing finished";
inline constexpr std::string_view kGraphCapturingFinishedIn = "Graph capturing finished in ";
inline constexpr std::string_view kCommaTook = ", took ";

// --- 0.8+ V1 sampler (topk_topp_sampler.py): which top-k/top-p implementation runs --------
inline constexpr std::string_view kUsingFlashInferSampling =
    "Using FlashInfer for top-p & top-k sampling";
// The two warnings of an install that samples on the PyTorch-native path ("FlashInfer is not
// available. Falling back to the PyTorch-native implementation of top-p & top-k sampling", or
// "... is available, but it is not enabled. Falling back ...").
inline constexpr std::string_view kNativeSamplingFallback =
    "Falling back to the PyTorch-native implementation of top-p & top-k sampling";

// --- 0.27+ -------------------------------------------------------------------------------
inline constexpr std::string_view kUsingV2ModelRunner = "Using V2 Model Runner";
// "... 12.34 GiB for consumed memory (weights + non-torch) ... `--kv-cache-memory=N` to fit
// into requested memory"
inline constexpr std::string_view kGibForConsumedMemory = " GiB for consumed memory";
inline constexpr std::string_view kKvCacheMemoryFlag = "`--kv-cache-memory=";

// --- how a launch ends -------------------------------------------------------------------
inline constexpr std::string_view kApplicationStartupComplete = "Application startup complete";
inline constexpr std::string_view kStartingApiServer = "Starting vLLM API server";
inline constexpr std::string_view kStartingServerOn =
    "Starting vLLM server on";  // 0.19 entrypoints/openai/api_server.py
inline constexpr std::string_view kAvgPromptThroughput =
    "Avg prompt throughput";  // 0.19 v1/metrics/loggers.py
inline constexpr std::string_view kEngineCoreFailedToStart =
    "EngineCore failed to start";  // 0.19 v1/engine/core.py
inline constexpr std::string_view kEngineCoreInitializationFailed =
    "Engine core initialization failed";
inline constexpr std::string_view kWorkerProcFailedToStart =
    "WorkerProc failed to start";  // 0.19 v1/executor/multiproc_executor.py
// V1: "To serve at least one request with the models's max seq len (131072), (16.00 GiB KV
// cache is needed, which is larger than the available KV cache memory (9.43 GiB). Based on the
// available memory, the estimated maximum model length is 77248."
inline constexpr std::string_view kGibKvCacheIsNeeded = " GiB KV cache is needed";
// 0.20+ (config/compilation.py): "max_num_seqs (1024) exceeds available Mamba cache blocks
// (482). Each decode sequence requires one Mamba cache block, ..."
inline constexpr std::string_view kExceedsAvailableMambaCacheBlocks =
    "exceeds available Mamba cache blocks (";
inline constexpr std::string_view kMaxNumSeqsOpen = "max_num_seqs (";
inline constexpr std::string_view kEstimatedMaximumModelLength =
    "estimated maximum model length is ";
inline constexpr std::string_view kMaxSeqLenOpen = "max seq len (";
// V0: "The model's max seq len (131072) is larger than the maximum number of tokens that can be
// stored in KV cache (59472)."
inline constexpr std::string_view kLargerThanKvTokens =
    "is larger than the maximum number of tokens that can be stored in KV";
inline constexpr std::string_view kNoAvailableMemoryForCacheBlocks =
    "No available memory for the cache blocks";
// vLLM's rewrap of a CUDA OOM at sampler warm-up (0.19 v1/worker/gpu_model_runner.py).
inline constexpr std::string_view kOomWarmingUpSampler =
    "out of memory occurred when warming up sampler";
// "Request req_1 failed: ..." (a request that failed while serving).
inline constexpr std::string_view kRequest = "Request ";
inline constexpr std::string_view kFailed = " failed";

// --- startup phases, in the order vLLM passes them (diagnose places an OOM by them) -------
inline constexpr std::string_view kPhaseLoading[] = {
    kStartingToLoadModel, "Loading safetensors checkpoint shards",
    "Loading weights on"};  // 0.19 model_executor/model_loader/base_loader.py
inline constexpr std::string_view kPhaseWeightsLoaded[] = {
    kModelLoadingTook, kLoadingModelWeightsTook, kModelWeightsTake};
inline constexpr std::string_view kPhaseCudagraphProfiling[] = {kProfilingCudaGraphMemory,
                                                                kNumGpuBlocksOverride};
inline constexpr std::string_view kPhaseKvAllocated[] = {
    kAvailableKvCacheMemory, kGpuKvCacheSize, kGpuBlocks,
    kCudaBlocksLower,        kCudaBlocks,     kRestReservedForKvCache};
inline constexpr std::string_view kPhaseCapturing[] = {kCapturingCudaGraph, kCapturingCudagraphs,
                                                       kCapturingModelForCudaGraphs};
inline constexpr std::string_view kPhaseCaptured[] = {kGraphCapturingFinished};
inline constexpr std::string_view kPhaseRunning[] = {
    kApplicationStartupComplete, kStartingApiServer, kStartingServerOn, kAvgPromptThroughput};

// --- traceback frames that place an OOM (function names in vLLM's worker code) ------------
inline constexpr std::string_view kFramesCudagraphProfiling[] = {
    "profile_cudagraph_memory", "_init_minimal_kv_cache_for_profiling"};
inline constexpr std::string_view kFramesCapture[] = {
    "capture_model", "capture_end", "_capture_cudagraphs", "torch/cuda/graphs.py"};
inline constexpr std::string_view kFramesSampler[] = {"_dummy_sampler_run", "warming up sampler"};
inline constexpr std::string_view kFramesProfileRun[] = {
    "in profile_run", "determine_available_memory", "determine_num_available_blocks"};
inline constexpr std::string_view kFramesWarmUp[] = {"compile_or_warm_up_model"};
inline constexpr std::string_view kFramesLoad[] = {"in load_model", "load_weights",
                                                   "create_weights", "_initialize_model",
                                                   "Failed to create unquantized linear weights"};
inline constexpr std::string_view kFramesKvAlloc[] = {"_allocate_kv_cache", "initialize_kv_cache",
                                                      "in initialize_cache"};
inline constexpr std::string_view kFramesRuntime[] = {"in execute_model", "in sample_tokens",
                                                      "compute_logprobs", "in engine_step",
                                                      "in step_with_batch_queue"};

}  // namespace vramplan::vllm_vocabulary
