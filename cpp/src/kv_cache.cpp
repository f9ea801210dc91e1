#include "vramplan/kv_cache.hpp"

#include <algorithm>
#include <map>

namespace vramplan {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept { return (a + b - 1) / b; }

bool is_token_attention(AttentionKind kind) noexcept {
  return kind == AttentionKind::Full || kind == AttentionKind::SlidingWindow ||
         kind == AttentionKind::ChunkedLocal || kind == AttentionKind::Mla;
}

LayerRange effective_range(const ModelSpec& spec, const KvCacheOptions& o) noexcept {
  if (o.layers.begin == 0 && o.layers.end == 0) return LayerRange{0, spec.num_hidden_layers};
  return o.layers;
}

// Blocks one layer of a group needs for one request.
std::int64_t group_blocks(const KvGroup& g, std::int32_t block_size, std::int64_t max_model_len,
                          std::int64_t max_num_batched_tokens, std::int32_t speculative) noexcept {
  switch (g.kind) {
    case AttentionKind::Full:
    case AttentionKind::Mla:
      return ceil_div(max_model_len, block_size);
    case AttentionKind::SlidingWindow:
      return ceil_div(std::min<std::int64_t>(g.window - 1 + max_num_batched_tokens, max_model_len),
                      block_size) +
             1;
    case AttentionKind::ChunkedLocal:
      return ceil_div(std::min<std::int64_t>(g.window + max_num_batched_tokens, max_model_len),
                      block_size);
    case AttentionKind::Mamba:
    case AttentionKind::LinearAttention:
      return 1 + speculative;
    case AttentionKind::None:
      return 0;
  }
  return 0;
}

}  // namespace

std::int64_t kv_layer_bytes_per_token(const ModelSpec& spec, const LayerSpec& layer,
                                      const KvCacheOptions& o) noexcept {
  if (layer.attention == AttentionKind::Mla) {
    // One latent "head" of kv_lora_rank + qk_rope_head_dim, not divided by TP.
    return static_cast<std::int64_t>(spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim) *
           o.kv_element_bytes;
  }
  if (!is_token_attention(layer.attention)) return 0;
  const std::int64_t heads =
      std::max<std::int64_t>(1, layer.num_key_value_heads / std::max(1, o.tensor_parallel_size));
  return heads * (layer.head_dim + layer.head_dim_v) * o.kv_element_bytes;
}

std::int64_t kv_bytes_per_token(const ModelSpec& spec, const KvCacheOptions& o) noexcept {
  const LayerRange range = effective_range(spec, o);
  std::int64_t total = 0;
  for (std::int32_t i = range.begin; i < range.end; ++i) {
    total += kv_layer_bytes_per_token(spec, spec.layers[static_cast<std::size_t>(i)], o);
  }
  return total;
}

std::int64_t mamba_state_bytes(const ModelSpec& spec, const LayerSpec& layer,
                               const KvCacheOptions& o) noexcept {
  const std::int64_t tp = std::max(1, o.tensor_parallel_size);
  if (layer.attention == AttentionKind::Mamba) {
    const MambaSpec& m = spec.mamba;
    const std::int64_t inner = static_cast<std::int64_t>(m.num_heads) * m.head_dim;
    // n_groups is padded up to a multiple of TP so heads shard evenly.
    const std::int64_t groups = ceil_div(m.n_groups, tp) * tp;
    const std::int64_t conv_dim = (inner + 2 * groups * m.state_size) / tp;
    const std::int64_t conv =
        conv_dim * (m.conv_kernel - 1 + o.num_speculative_tokens) * o.state_element_bytes;
    const std::int64_t ssm =
        (m.num_heads / tp) * m.head_dim * m.state_size * dtype_info(m.ssm_state_dtype).block_bytes;
    return conv + ssm;
  }
  if (layer.attention == AttentionKind::LinearAttention) {
    const LinearAttentionSpec& g = spec.linear_attention;
    const std::int64_t conv_dim =
        (2LL * g.num_key_heads * g.key_head_dim +
         static_cast<std::int64_t>(g.num_value_heads) * g.value_head_dim) /
        tp;
    const std::int64_t conv =
        conv_dim * (g.conv_kernel - 1 + o.num_speculative_tokens) * o.state_element_bytes;
    const std::int64_t ssm = (g.num_value_heads / tp) *
                             static_cast<std::int64_t>(g.value_head_dim) * g.key_head_dim *
                             o.state_element_bytes;
    return conv + ssm;
  }
  return 0;
}

KvLayout kv_layout(const ModelSpec& spec, const KvCacheOptions& o) {
  const LayerRange range = effective_range(spec, o);
  KvLayout layout;
  layout.block_size = o.block_size;
  layout.num_speculative_tokens = o.num_speculative_tokens;
  // Bucket layers by spec: (kind, window) -> count; page bytes per token per kind.
  std::map<std::pair<int, int>, std::int32_t> buckets;
  std::int64_t attn_token_bytes = 0;  // per layer, the largest attention layer
  std::int64_t state_bytes = 0;
  for (std::int32_t i = range.begin; i < range.end; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    if (layer.attention == AttentionKind::None) continue;
    int window = 0;
    if (layer.attention == AttentionKind::SlidingWindow) window = layer.sliding_window;
    if (layer.attention == AttentionKind::ChunkedLocal) window = layer.attention_chunk_size;
    buckets[{static_cast<int>(layer.attention), window}] += 1;
    attn_token_bytes = std::max(attn_token_bytes, kv_layer_bytes_per_token(spec, layer, o));
    state_bytes = std::max(state_bytes, mamba_state_bytes(spec, layer, o));
    layout.bytes_per_token += kv_layer_bytes_per_token(spec, layer, o);
  }
  layout.mamba_page_bytes = state_bytes;
  if (buckets.empty()) return layout;
  if (state_bytes > 0 && attn_token_bytes > 0) {
    // Hybrid with Mamba: raise the attention block size until one page holds a state.
    const std::int64_t align = std::max<std::int64_t>(16, o.block_size);
    layout.block_size =
        static_cast<std::int32_t>(align * ceil_div(state_bytes, align * attn_token_bytes));
  }
  layout.page_bytes = attn_token_bytes > 0 ? attn_token_bytes * layout.block_size : state_bytes;
  if (buckets.size() == 1) {
    const auto& [key, count] = *buckets.begin();
    layout.group_size = count;
    layout.groups.push_back(KvGroup{static_cast<AttentionKind>(key.first), key.second, count});
    return layout;
  }
  layout.uniform = false;
  std::int32_t smallest = buckets.begin()->second;
  std::int32_t largest = smallest;
  for (const auto& [key, count] : buckets) {
    smallest = std::min(smallest, count);
    largest = std::max(largest, count);
  }
  // vLLM takes the smallest bucket as group size, or the largest when they are close.
  const std::int32_t group_size = largest * 2 < smallest * 3 ? largest : smallest;
  layout.group_size = group_size;
  for (const auto& [key, count] : buckets) {
    const std::int32_t num_groups = static_cast<std::int32_t>(ceil_div(count, group_size));
    for (std::int32_t g = 0; g < num_groups; ++g) {
      const std::int32_t in_group = std::min(group_size, count - g * group_size);
      layout.groups.push_back(KvGroup{static_cast<AttentionKind>(key.first), key.second, in_group});
    }
    if (count % group_size != 0) layout.padding_layers += group_size - count % group_size;
  }
  return layout;
}

std::int64_t kv_blocks_per_request(const KvLayout& layout, std::int64_t max_model_len,
                                   std::int64_t max_num_batched_tokens) noexcept {
  std::int64_t blocks = 0;
  for (const auto& g : layout.groups) {
    blocks += group_blocks(g, layout.block_size, max_model_len, max_num_batched_tokens,
                           layout.num_speculative_tokens);
  }
  return blocks;
}

std::int64_t kv_request_bytes(const KvLayout& layout, std::int64_t max_model_len,
                              std::int64_t max_num_batched_tokens) noexcept {
  // Groups share one pool of group_size tensors, so each block costs page * group_size.
  return kv_blocks_per_request(layout, max_model_len, max_num_batched_tokens) * layout.page_bytes *
         layout.group_size;
}

std::int64_t kv_num_blocks(const KvLayout& layout, std::int64_t kv_budget_bytes) noexcept {
  if (layout.page_bytes <= 0 || layout.group_size <= 0 || kv_budget_bytes <= 0) return 0;
  return kv_budget_bytes / layout.page_bytes / layout.group_size;
}

std::int64_t kv_max_model_len_that_fits(const KvLayout& layout, std::int64_t kv_budget_bytes,
                                        std::int64_t upper,
                                        std::int64_t max_num_batched_tokens) noexcept {
  std::int64_t lo = 0;
  std::int64_t hi = upper;
  while (lo < hi) {  // largest L with need(L) <= budget; need is monotone in L
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (kv_request_bytes(layout, mid, max_num_batched_tokens) <= kv_budget_bytes) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

}  // namespace vramplan
