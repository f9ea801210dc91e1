// KV-cache geometry as vLLM's KV-cache manager sees it: page (block) bytes per layer kind,
// grouping of hybrid models, per-request need, blocks from a budget, reported tokens.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "vramplan/model_spec.hpp"
#include "vramplan/weights.hpp"

namespace vramplan {

struct KvCacheOptions {
  std::int32_t tensor_parallel_size = 1;
  std::int32_t block_size = 16;  // tokens per block for attention layers (before hybrid alignment)
  std::int32_t kv_element_bytes = 2;  // 2 for bf16/fp16 ("auto"), 1 for fp8, 4 for fp32 models
  // Hybrid state widths: the conv state (--mamba-cache-dtype; auto = the served dtype) and the
  // SSM state (--mamba-ssm-cache-dtype); 0 = the model's default (Mamba: its ssm_state_dtype;
  // linear attention: the config's mamba_ssm_dtype, else the conv width).
  std::int32_t state_element_bytes = 2;
  std::int32_t ssm_state_element_bytes = 0;
  std::int32_t num_speculative_tokens = 0;
  LayerRange layers{0, 0};  // layers on this rank (pipeline stage); {0,0} = all
  // Hybrid groups: the largest spec's layer count becomes the group size when it is below this
  // multiple of the smallest's (0: always the smallest); a release's row
  // (kv_group_size_close_ratio).
  double group_size_close_ratio = 1.5;
};

// One KV group of the hybrid allocator: layers sharing a spec and a page size.
struct KvGroup {
  AttentionKind kind;
  std::int32_t window = 0;      // sliding window / chunk, tokens; cross-attention: encoder tokens
  std::int32_t num_layers = 0;  // layers of this kind in the group (<= group_size)
  // Tokens per block as a multiple of the page's block size: vLLM's
  // unify_kv_cache_spec_page_size gives layers with a smaller page (fewer KV bytes per token,
  // Gemma-4's full-attention layers beside its sliding ones) a block that many times larger,
  // so every page holds the same bytes.
  std::int32_t block_multiplier = 1;
};

// What a rank's KV cache is made of, fixed by the model, parallelism and speculation: the
// groups of the hybrid allocator and the bytes per token per KV element byte. Block size and
// KV dtype are applied later (kv_page), so one geometry serves every value of those knobs.
struct KvGeometry {
  std::vector<KvGroup> groups;      // uniform model: one group; none without attention/state
  std::int32_t group_size = 0;      // tensors in the shared pool (layers for a uniform model)
  std::int32_t padding_layers = 0;  // "Add N padding layers" slots
  bool uniform = true;
  std::int64_t max_layer_token_bytes_per_element = 0;  // largest attention layer
  std::int64_t token_bytes_per_element = 0;            // summed over attention layers
  std::int64_t state_bytes = 0;  // real (unpadded) Mamba / linear-attention state per slot
  // DeepSeek sparse attention: MLA layers with an indexer, each adding its key cache (bytes per
  // token whatever the KV dtype) and, under an fp8 KV cache, the fp8_ds_mla layout's extra bytes.
  std::int32_t sparse_mla_layers = 0;
  std::int64_t indexer_token_bytes = 0;     // per sparse layer
  std::int64_t fp8_ds_mla_extra_bytes = 0;  // per sparse layer, at one byte per KV element
  std::int32_t num_speculative_tokens = 0;  // extra Mamba state slots per request
};

// The page at one block size and KV element width.
struct KvPage {
  std::int32_t block_size = 16;      // tokens per block after hybrid alignment
  std::int64_t page_bytes = 0;       // bytes of one block of one layer (uniform after unification)
  std::int64_t bytes_per_token = 0;  // attention layers only, for display (Mamba state excluded)
};

// The rank's KV layout: geometry and page together (what a breakdown reports).
struct KvLayout {
  std::int32_t block_size = 16;
  std::int64_t page_bytes = 0;
  std::int32_t group_size = 0;
  std::vector<KvGroup> groups;
  std::int32_t padding_layers = 0;
  std::int64_t bytes_per_token = 0;
  std::int64_t mamba_page_bytes = 0;  // real (unpadded) state bytes per slot, 0 without Mamba
  bool uniform = true;
  std::int32_t num_speculative_tokens = 0;
};

// DeepSeek sparse attention, per MLA layer and token (0 for dense MLA). The indexer's key cache
// (vllm/models/deepseek_v32/attention.py: DeepseekV32IndexerCache of head_dim index_head_dim +
// index_head_dim / 128 * 4, uint8): fp8 keys plus one fp32 scale per 128, whatever the KV dtype.
std::int64_t dsa_indexer_token_bytes(const ModelSpec& spec) noexcept;
// Under an fp8 KV cache vLLM serves sparse MLA in its fp8_ds_mla layout (656 B for DeepSeek:
// kv_lora_rank fp8 + an fp32 scale per 128 + qk_rope_head_dim in bf16;
// model_executor/layers/attention/mla_attention.py, _canonicalize_sparse_mla_kv_cache_dtype):
// the bytes above the plain fp8 latent.
std::int64_t dsa_fp8_ds_mla_extra_bytes(const ModelSpec& spec) noexcept;

// The second cache a layer keeps beside its attention (LayerSpec::beside) as a layer of its
// own: the layer's heads under the beside kind and window (a cross-attention cache: the encoder's
// output tokens in sliding_window), no further beside cache; a layer of kind None where it has
// none.
LayerSpec beside_cache(const LayerSpec& layer) noexcept;

// Per-layer attention bytes per token on a rank: Hkv_rank * (D + Dv) * s, MLA latent * s (plus
// the sparse-attention bytes above); a cross-attention cache's per encoder token.
std::int64_t kv_layer_bytes_per_token(const ModelSpec& spec, const LayerSpec& layer,
                                      const KvCacheOptions& options) noexcept;
// Bytes per token summed over the rank's attention layers (the planner's headline figure): the
// caches that grow with the request's tokens (not a cross-attention cache, a fixed cost per
// request).
std::int64_t kv_bytes_per_token(const ModelSpec& spec, const KvCacheOptions& options) noexcept;
// State bytes of one Mamba / linear-attention layer per request slot.
std::int64_t mamba_state_bytes(const ModelSpec& spec, const LayerSpec& layer,
                               const KvCacheOptions& options) noexcept;

// The geometry of the rank's layers (options.block_size and kv_element_bytes are not used).
KvGeometry kv_geometry(const ModelSpec& spec, const KvCacheOptions& options);
// The page at `block_size` tokens of `kv_element_bytes`-wide elements: hybrid models with a
// Mamba state raise the block size until one page holds a state.
KvPage kv_page(const KvGeometry& geometry, std::int32_t block_size,
               std::int32_t kv_element_bytes) noexcept;
KvLayout kv_layout(const KvGeometry& geometry, const KvPage& page);
KvLayout kv_layout(const ModelSpec& spec, const KvCacheOptions& options);

// Blocks one request of `max_model_len` tokens needs, summed over groups
// (SWA/chunked groups capped as vLLM caps them, Mamba = 1 + k slots, cross-attention the
// encoder budget of max_num_batched_tokens).
std::int64_t kv_blocks_per_request(const KvGeometry& geometry, const KvPage& page,
                                   std::int64_t max_model_len,
                                   std::int64_t max_num_batched_tokens) noexcept;
std::int64_t kv_blocks_per_request(const KvLayout& layout, std::int64_t max_model_len,
                                   std::int64_t max_num_batched_tokens) noexcept;
// Bytes of `blocks` blocks in every group's pool (each block costs page x group_size).
std::int64_t kv_blocks_bytes(const KvGeometry& geometry, const KvPage& page,
                             std::int64_t blocks) noexcept;
// Bytes one request needs: the "enough memory for one max_model_len request" figure.
std::int64_t kv_request_bytes(const KvGeometry& geometry, const KvPage& page,
                              std::int64_t max_model_len,
                              std::int64_t max_num_batched_tokens) noexcept;
std::int64_t kv_request_bytes(const KvLayout& layout, std::int64_t max_model_len,
                              std::int64_t max_num_batched_tokens) noexcept;
// Bytes one block costs across a group's pool (page x group_size); for a layout without one, the
// largest int64, which no budget buys.
inline std::int64_t kv_block_bytes(std::int64_t page_bytes, std::int32_t group_size) noexcept {
  return page_bytes > 0 && group_size > 0 ? page_bytes * group_size
                                          : std::numeric_limits<std::int64_t>::max();
}
// Blocks a KV budget buys: floor(budget / block bytes) = floor(floor(b / page) / group).
// Inline: a sweep row counts them.
inline std::int64_t kv_blocks_in_budget(std::int64_t block_bytes,
                                        std::int64_t kv_budget_bytes) noexcept {
  return kv_budget_bytes > 0 ? kv_budget_bytes / block_bytes : 0;
}
inline std::int64_t kv_blocks_in_budget(std::int64_t page_bytes, std::int32_t group_size,
                                        std::int64_t kv_budget_bytes) noexcept {
  return kv_blocks_in_budget(kv_block_bytes(page_bytes, group_size), kv_budget_bytes);
}
inline std::int64_t kv_num_blocks(const KvGeometry& geometry, const KvPage& page,
                                  std::int64_t kv_budget_bytes) noexcept {
  return kv_blocks_in_budget(page.page_bytes, geometry.group_size, kv_budget_bytes);
}
inline std::int64_t kv_num_blocks(const KvLayout& layout, std::int64_t kv_budget_bytes) noexcept {
  return kv_blocks_in_budget(layout.page_bytes, layout.group_size, kv_budget_bytes);
}
// Largest max_model_len in [1, upper] whose request fits in `kv_budget_bytes` (vLLM's
// estimate_max_model_len binary search); 0 if not even one token fits.
std::int64_t kv_max_model_len_that_fits(const KvGeometry& geometry, const KvPage& page,
                                        std::int64_t kv_budget_bytes, std::int64_t upper,
                                        std::int64_t max_num_batched_tokens) noexcept;

}  // namespace vramplan
