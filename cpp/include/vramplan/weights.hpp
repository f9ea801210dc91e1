// Weight bytes, exact per storage format, per GPU rank under tensor and pipeline parallelism.
#pragma once

#include <cstdint>
#include <vector>

#include "vramplan/model_spec.hpp"

namespace vramplan {

// Where a rank sits: TP degree and its pipeline stage.
struct RankPlacement {
  std::int32_t tensor_parallel_size = 1;
  std::int32_t pipeline_parallel_size = 1;
  std::int32_t pipeline_rank = 0;
  // --enable-expert-parallel: routed experts spread whole over this many ranks (TP x DP)
  // instead of each being split over TP; 1 = off.
  std::int32_t expert_parallel_size = 1;
  // Without expert parallelism vLLM's fused-MoE layers shard each expert over TP x DP ranks
  // (FusedMoEParallelConfig flattens TP across DP); 0 = tensor_parallel_size.
  std::int32_t expert_tensor_parallel_size = 0;
  // EPLB's redundant experts: under expert parallelism each rank holds (E + R) / EP experts.
  std::int32_t redundant_experts = 0;
};

// Decoder layers [begin, end) held by a pipeline stage, as vLLM's get_pp_indices splits them:
// an even split, the remainder going one layer each to the stages before the last.
struct LayerRange {
  std::int32_t begin = 0;
  std::int32_t end = 0;
};
LayerRange pipeline_layer_range(std::int32_t num_layers, std::int32_t pipeline_parallel_size,
                                std::int32_t pipeline_rank) noexcept;

// vLLM pads vocab rows of VocabParallelEmbedding / ParallelLMHead to a multiple of 64.
std::int64_t padded_vocab_size(std::int64_t vocab_size) noexcept;

// Bytes one rank holds for a tensor group. `quant` is the effective weight format (the
// checkpoint's, or online fp8 applied to a 16-bit checkpoint); unquantized tensors are held
// in `served_dtype`. `checkpoint_layout` gives the safetensors bytes instead (tensors vLLM
// drops or repacks at load, e.g. GPTQ qzeros/g_idx under Marlin, count as stored).
std::int64_t tensor_group_bytes(const TensorGroup& group, const QuantSpec& quant,
                                DType served_dtype, std::int32_t tensor_parallel_size,
                                bool checkpoint_layout) noexcept;

// Bytes one rank holds for a tensor group under its placement (experts whole under EP, else
// split over the expert TP degree; everything else over TP).
std::int64_t tensor_group_bytes_on_rank(const TensorGroup& group, const QuantSpec& quant,
                                        DType served_dtype,
                                        const RankPlacement& placement) noexcept;

// What one rank's weights are made of, in bytes.
struct WeightBytes {
  std::int64_t embedding = 0;
  std::int64_t lm_head = 0;
  std::int64_t attention = 0;     // attention / MLA / mixer projections, their norms and biases
  std::int64_t mlp = 0;           // dense MLP, routed and shared experts, routers
  std::int64_t other = 0;         // norms, vision tower, MTP extras
  std::int64_t rotary_cache = 0;  // cos/sin buffer [max_position, rotary_dim] in served dtype
  std::int64_t total() const noexcept {
    return embedding + lm_head + attention + mlp + other + rotary_cache;
  }
};

// GPU bytes of the weights one rank holds after vLLM loads them ("Model loading took").
WeightBytes weight_bytes_per_rank(const ModelSpec& spec, const QuantSpec& quant, DType served_dtype,
                                  const RankPlacement& placement, bool include_mtp = false);

// Host bytes torch's CachingHostAllocator takes for one pinned allocation: the request rounded
// up to a power of two.
std::int64_t pinned_block_bytes(std::int64_t bytes) noexcept;

// The segments torch's CUDA caching allocator maps to serve `requests` (bytes, in order; none
// freed), as c10's CUDACachingAllocator cuts them with expandable segments off: a request is
// rounded up to 512 B and served best-fit from a free block of its pool, else from a new segment
// (2 MiB for requests up to 1 MiB, 20 MiB below 10 MiB, else the request rounded up to 2 MiB),
// and the rest of the block stays free when it is worth splitting (small pool: >= 512 B,
// large pool: > 1 MiB). Each segment is one allocation of the pool's allocator.
std::vector<std::int64_t> caching_allocator_segments(const std::vector<std::int64_t>& requests);

// --cpu-offload-gb on one rank (vLLM's UVAOffloader / 0.11's maybe_offload_to_cpu, called by
// make_layers): the stage's decoder-layer parameters move to pinned host memory one by one, in
// module order, while fewer than `budget_bytes` are offloaded. Each is pinned on its own, so
// torch's host allocator rounds each up to a power of two. Embeddings and the head stay.
struct CpuOffload {
  std::int64_t offloaded_bytes = 0;  // leaves the GPU ("Total CPU offloaded parameters")
  std::int64_t pinned_bytes = 0;     // host memory the pinned blocks take
  std::int64_t parameters = 0;
};
CpuOffload cpu_offload_per_rank(const ModelSpec& spec, const QuantSpec& quant, DType served_dtype,
                                const RankPlacement& placement, std::int64_t budget_bytes);

// Pinned host bytes one rank's weights take while vLLM sleeps at level 1 (--enable-sleep-mode;
// CuMemAllocator.sleep): the weights are loaded into a CuMem pool, whose allocations are the
// caching allocator's segments (caching_allocator_segments over the parameters in module order,
// as loaded), and each allocation is copied into its own pinned host tensor, which torch's host
// allocator rounds up to a power of two. The first `cpu_offloaded_parameters` decoder parameters
// live on the host already (cpu_offload_per_rank) and are not in the pool.
std::int64_t sleep_weights_backup_bytes(const ModelSpec& spec, const QuantSpec& quant,
                                        DType served_dtype, const RankPlacement& placement,
                                        std::int64_t cpu_offloaded_parameters);

// GPU bytes of the LoRA slots one rank preallocates (--enable-lora): per slot and per adapted
// Linear slice, A [rank, in] and B [out, rank] in the served dtype, the TP-split side sharded
// (column layers split B, row layers split A). Attention and dense-MLP projections only.
std::int64_t lora_bytes_per_rank(const ModelSpec& spec, std::int32_t max_loras,
                                 std::int32_t max_lora_rank, DType served_dtype,
                                 const RankPlacement& placement);

// Total bytes of the checkpoint's tensors as stored (the safetensors total_size).
std::int64_t checkpoint_tensor_bytes(const ModelSpec& spec, bool include_mtp = true);

}  // namespace vramplan
