// KV-cache geometry as vLLM's KV-cache manager sees it: page (block) bytes per layer kind,
// grouping of hybrid models, per-request need, blocks from a budget, reported tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vramplan/model_spec.hpp"
#include "vramplan/weights.hpp"

namespace vramplan {

struct KvCacheOptions {
  std::int32_t tensor_parallel_size = 1;
  std::int32_t block_size = 16;  // tokens per block for attention layers (before hybrid alignment)
  std::int32_t kv_element_bytes = 2;     // 2 for bf16/fp16 ("auto"), 1 for fp8, 4 for fp32 models
  std::int32_t state_element_bytes = 2;  // Mamba conv / linear-attention state dtype bytes
  std::int32_t num_speculative_tokens = 0;
  LayerRange layers{0, 0};  // layers on this rank (pipeline stage); {0,0} = all
};

// One KV group of the hybrid allocator: layers sharing a spec and a page size.
struct KvGroup {
  AttentionKind kind;
  std::int32_t window = 0;      // sliding window / chunk, tokens
  std::int32_t num_layers = 0;  // layers of this kind in the group (<= group_size)
};

// The rank's KV layout.
struct KvLayout {
  std::int32_t block_size = 16;       // tokens per block after hybrid alignment
  std::int64_t page_bytes = 0;        // bytes of one block of one layer (uniform after unification)
  std::int32_t group_size = 0;        // tensors in the shared pool (layers for a uniform model)
  std::vector<KvGroup> groups;        // uniform model: one group
  std::int32_t padding_layers = 0;    // "Add N padding layers" slots
  std::int64_t bytes_per_token = 0;   // attention layers only, for display (Mamba state excluded)
  std::int64_t mamba_page_bytes = 0;  // real (unpadded) state bytes per slot, 0 without Mamba
  bool uniform = true;
  std::int32_t num_speculative_tokens = 0;  // extra Mamba state slots per request
};

// Per-layer attention bytes per token on a rank: Hkv_rank * (D + Dv) * s, MLA latent * s.
std::int64_t kv_layer_bytes_per_token(const ModelSpec& spec, const LayerSpec& layer,
                                      const KvCacheOptions& options) noexcept;
// Bytes per token summed over the rank's attention layers (the planner's headline figure).
std::int64_t kv_bytes_per_token(const ModelSpec& spec, const KvCacheOptions& options) noexcept;
// State bytes of one Mamba / linear-attention layer per request slot.
std::int64_t mamba_state_bytes(const ModelSpec& spec, const LayerSpec& layer,
                               const KvCacheOptions& options) noexcept;

KvLayout kv_layout(const ModelSpec& spec, const KvCacheOptions& options);

// Blocks one request of `max_model_len` tokens needs, summed over groups
// (SWA/chunked groups capped as vLLM caps them, Mamba = 1 + k slots).
std::int64_t kv_blocks_per_request(const KvLayout& layout, std::int64_t max_model_len,
                                   std::int64_t max_num_batched_tokens) noexcept;
// Bytes one request needs: the "enough memory for one max_model_len request" figure.
std::int64_t kv_request_bytes(const KvLayout& layout, std::int64_t max_model_len,
                              std::int64_t max_num_batched_tokens) noexcept;
// Blocks a KV budget buys: floor(budget / (page * group_size)).
std::int64_t kv_num_blocks(const KvLayout& layout, std::int64_t kv_budget_bytes) noexcept;
// Largest max_model_len in [1, upper] whose request fits in `kv_budget_bytes` (vLLM's
// estimate_max_model_len binary search); 0 if not even one token fits.
std::int64_t kv_max_model_len_that_fits(const KvLayout& layout, std::int64_t kv_budget_bytes,
                                        std::int64_t upper,
                                        std::int64_t max_num_batched_tokens) noexcept;

}  // namespace vramplan
