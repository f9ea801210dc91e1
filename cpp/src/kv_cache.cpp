#include "vramplan/kv_cache.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace vramplan {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept { return (a + b - 1) / b; }

// Layers that cache K and V (or a latent) per token: the request's own tokens, or the encoder's
// (cross-attention).
bool is_token_attention(AttentionKind kind) noexcept {
  return kind == AttentionKind::Full || kind == AttentionKind::SlidingWindow ||
         kind == AttentionKind::ChunkedLocal || kind == AttentionKind::Mla ||
         kind == AttentionKind::CrossAttention;
}

// Of those, the caches that grow with the request's tokens: what "KV bytes per token" counts.
bool grows_with_tokens(AttentionKind kind) noexcept {
  return is_token_attention(kind) && kind != AttentionKind::CrossAttention;
}

LayerRange effective_range(const ModelSpec& spec, const KvCacheOptions& o) noexcept {
  if (o.layers.begin == 0 && o.layers.end == 0) return LayerRange{0, spec.num_hidden_layers};
  return o.layers;
}

// Blocks one layer of a group needs for one request.
std::int64_t group_blocks(const KvGroup& g, std::int32_t page_block_size,
                          std::int64_t max_model_len, std::int64_t max_num_batched_tokens,
                          std::int32_t speculative) noexcept {
  const std::int64_t block_size = std::int64_t{page_block_size} * g.block_multiplier;
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
    case AttentionKind::CrossAttention:
      // CrossAttentionSpec.max_memory_usage_bytes: cdiv(max_num_encoder_input_tokens,
      // block_size) pages, whatever max_model_len; SchedulerConfig sets that budget to
      // max_num_batched_tokens (the encoder's g.window output tokens a request actually fills
      // are fewer: vLLM's startup check and concurrency reserve the budget).
      return ceil_div(max_num_batched_tokens, block_size);
    case AttentionKind::None:
      return 0;
  }
  return 0;
}

}  // namespace

std::int64_t dsa_indexer_token_bytes(const ModelSpec& spec) noexcept {
  const std::int64_t d = spec.mla.index_head_dim;
  return d > 0 ? d + d / 128 * 4 : 0;
}

std::int64_t dsa_fp8_ds_mla_extra_bytes(const ModelSpec& spec) noexcept {
  if (spec.mla.index_head_dim == 0) return 0;
  return static_cast<std::int64_t>(spec.mla.kv_lora_rank) / 128 * 4 + spec.mla.qk_rope_head_dim;
}

std::int64_t kv_layer_bytes_per_token(const ModelSpec& spec, const LayerSpec& layer,
                                      const KvCacheOptions& o) noexcept {
  if (layer.attention == AttentionKind::Mla) {
    // One latent "head" of kv_lora_rank + qk_rope_head_dim, not divided by TP.
    const std::int64_t latent =
        static_cast<std::int64_t>(spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim) *
        o.kv_element_bytes;
    return latent + dsa_indexer_token_bytes(spec) +
           (o.kv_element_bytes == 1 ? dsa_fp8_ds_mla_extra_bytes(spec) : 0);
  }
  if (!is_token_attention(layer.attention) || layer.kv_shared) return 0;
  const std::int64_t heads =
      std::max<std::int64_t>(1, layer.num_key_value_heads / std::max(1, o.tensor_parallel_size));
  return heads * (layer.head_dim + layer.head_dim_v) * o.kv_element_bytes;
}

LayerSpec beside_cache(const LayerSpec& layer) noexcept {
  LayerSpec view = layer;
  view.attention = layer.beside;
  view.sliding_window =
      layer.beside == AttentionKind::SlidingWindow || layer.beside == AttentionKind::CrossAttention
          ? layer.beside_window
          : 0;
  view.kv_shared = false;
  view.beside = AttentionKind::None;
  view.beside_window = 0;
  return view;
}

std::int64_t kv_bytes_per_token(const ModelSpec& spec, const KvCacheOptions& o) noexcept {
  const LayerRange range = effective_range(spec, o);
  std::int64_t total = 0;
  for (std::int32_t i = range.begin; i < range.end; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    total += kv_layer_bytes_per_token(spec, layer, o);
    if (grows_with_tokens(layer.beside)) {
      total += kv_layer_bytes_per_token(spec, beside_cache(layer), o);
    }
  }
  return total;
}

std::int64_t mamba_state_bytes(const ModelSpec& spec, const LayerSpec& layer,
                               const KvCacheOptions& o) noexcept {
  const std::int64_t tp = std::max(1, o.tensor_parallel_size);
  if (layer.attention == AttentionKind::Mamba && spec.has_short_conv) {
    // vLLM's short_conv_state_shape: (dim / TP, conv_kernel - 1), no speculative columns (LFM2
    // passes none); the conv state's dtype (short_conv_state_dtype).
    const ShortConvSpec& c = spec.short_conv;
    return c.dim / tp * (c.conv_kernel - 1) * o.state_element_bytes;
  }
  if (layer.attention == AttentionKind::Mamba) {
    const MambaSpec& m = spec.mamba;
    // vLLM's _mamba_state_dtype: --mamba-ssm-cache-dtype, else the model's override, else
    // (auto) the conv state's dtype.
    const std::int64_t ssm_bytes = o.ssm_state_element_bytes > 0 ? o.ssm_state_element_bytes
                                   : m.ssm_state_dtype ? dtype_info(*m.ssm_state_dtype).block_bytes
                                                       : o.state_element_bytes;
    if (m.version == 1) {
      // vLLM's mamba1_state_shape: conv (inner / TP, d_conv - 1), no speculative columns;
      // SSM (inner / TP, d_state).
      const std::int64_t channels = m.intermediate_size / tp;
      return channels * (m.conv_kernel - 1) * o.state_element_bytes +
             channels * m.state_size * ssm_bytes;
    }
    const std::int64_t inner = static_cast<std::int64_t>(m.num_heads) * m.head_dim;
    // n_groups is padded up to a multiple of TP so heads shard evenly.
    const std::int64_t groups = ceil_div(m.n_groups, tp) * tp;
    const std::int64_t conv_dim = (inner + 2 * groups * m.state_size) / tp;
    const std::int64_t conv =
        conv_dim * (m.conv_kernel - 1 + o.num_speculative_tokens) * o.state_element_bytes;
    const std::int64_t ssm = (m.num_heads / tp) * m.head_dim * m.state_size * ssm_bytes;
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
    // vLLM's gated_delta_net_state_dtype: the SSM state takes --mamba-ssm-cache-dtype, else
    // (auto) the conv state's dtype; Qwen3.5 configs fill it from mamba_ssm_dtype. Kimi Delta
    // Attention asks kda_state_dtype without the SSM flag: its recurrent state is fp32.
    const std::int64_t ssm_bytes = g.kimi_delta                    ? 4
                                   : o.ssm_state_element_bytes > 0 ? o.ssm_state_element_bytes
                                   : g.ssm_state_dtype ? dtype_info(*g.ssm_state_dtype).block_bytes
                                                       : o.state_element_bytes;
    const std::int64_t ssm = (g.num_value_heads / tp) *
                             static_cast<std::int64_t>(g.value_head_dim) * g.key_head_dim *
                             ssm_bytes;
    return conv + ssm;
  }
  return 0;
}

namespace {

// One spec of the hybrid allocator over the whole model, and where this rank's layers sit in it.
struct KvBucket {
  std::int32_t count = 0;           // layers of the whole model with this spec
  std::int32_t first_on_rank = -1;  // ordinal of the rank's first layer among them
  std::int32_t on_rank = 0;         // layers on this rank (contiguous ordinals)
};

// Ordinals below `end` that fall in group `group` of `num_groups` (vLLM deals a spec's layers
// round-robin: group i holds layers[i::num_groups], so every stage fills its groups evenly).
std::int32_t dealt_below(std::int32_t end, std::int32_t group, std::int32_t num_groups) noexcept {
  return end > group ? (end - group + num_groups - 1) / num_groups : 0;
}

std::int32_t layers_of_group_on_rank(const KvBucket& b, std::int32_t group,
                                     std::int32_t num_groups) noexcept {
  if (b.on_rank == 0) return 0;
  return dealt_below(b.first_on_rank + b.on_rank, group, num_groups) -
         dealt_below(b.first_on_rank, group, num_groups);
}

using KvBuckets = std::map<std::tuple<int, int, std::int64_t>, KvBucket>;

// Adds one cache layer (a decoder layer's attention or mixer, or the cache beside it) to its
// bucket and to the geometry's token and state bytes.
void bucket_layer(const ModelSpec& spec, const LayerSpec& layer, bool on_rank,
                  const KvCacheOptions& o, KvBuckets& buckets, KvGeometry& geometry) {
  if (layer.attention == AttentionKind::None || layer.kv_shared) return;
  // Token bytes are linear in the element width: measure them at one byte per element.
  KvCacheOptions per_element = o;
  per_element.kv_element_bytes = 1;
  int window = 0;
  if (layer.attention == AttentionKind::SlidingWindow) window = layer.sliding_window;
  if (layer.attention == AttentionKind::CrossAttention) window = layer.sliding_window;
  if (layer.attention == AttentionKind::ChunkedLocal) window = layer.attention_chunk_size;
  std::int64_t token_bytes = kv_layer_bytes_per_token(spec, layer, per_element);
  if (layer.attention == AttentionKind::Mla && spec.mla.index_head_dim > 0) {
    // The sparse-attention bytes do not scale with the KV dtype: kept apart for kv_page.
    geometry.sparse_mla_layers += on_rank ? 1 : 0;
    geometry.indexer_token_bytes = dsa_indexer_token_bytes(spec);
    geometry.fp8_ds_mla_extra_bytes = dsa_fp8_ds_mla_extra_bytes(spec);
    token_bytes -= geometry.indexer_token_bytes + geometry.fp8_ds_mla_extra_bytes;
  }
  const bool attention = is_token_attention(layer.attention);
  KvBucket& bucket =
      buckets[{static_cast<int>(layer.attention), window, attention ? token_bytes : 0}];
  if (on_rank) {
    if (bucket.on_rank == 0) bucket.first_on_rank = bucket.count;
    bucket.on_rank += 1;
    if (grows_with_tokens(layer.attention)) geometry.token_bytes_per_element += token_bytes;
  }
  bucket.count += 1;
  geometry.max_layer_token_bytes_per_element =
      std::max(geometry.max_layer_token_bytes_per_element, token_bytes);
  geometry.state_bytes = std::max(geometry.state_bytes, mamba_state_bytes(spec, layer, o));
}

}  // namespace

// vLLM groups the layers of every pipeline stage together (get_kv_cache_configs merges the
// workers' specs) and projects the groups onto each stage: a stage keeps every group, holding
// its own layers of it, and its pool has as many tensors as its fullest group. So the grouping
// and the page are the whole model's, the layer counts this rank's.
KvGeometry kv_geometry(const ModelSpec& spec, const KvCacheOptions& o) {
  const LayerRange range = effective_range(spec, o);
  KvGeometry geometry;
  geometry.num_speculative_tokens = o.num_speculative_tokens;
  // Bucket layers by spec: (kind, window, attention bytes per token) -> count.
  KvBuckets buckets;
  for (std::int32_t i = 0; i < spec.num_hidden_layers; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    const bool on_rank = i >= range.begin && i < range.end;
    bucket_layer(spec, layer, on_rank, o, buckets, geometry);
    if (layer.beside != AttentionKind::None) {
      bucket_layer(spec, beside_cache(layer), on_rank, o, buckets, geometry);
    }
  }
  std::int32_t layers_on_rank = 0;
  for (const auto& bucket : buckets) layers_on_rank += bucket.second.on_rank;
  if (layers_on_rank == 0) {
    KvGeometry none;
    none.num_speculative_tokens = o.num_speculative_tokens;
    return none;
  }
  const auto& first_key = buckets.begin()->first;
  if (std::all_of(buckets.begin(), buckets.end(), [&first_key](const auto& bucket) {
        return std::get<0>(bucket.first) == std::get<0>(first_key) &&
               std::get<1>(bucket.first) == std::get<1>(first_key);
      })) {
    // One attention type whatever the page sizes: vLLM's UniformTypeKVCacheSpecs, one group
    // whose block costs the sum of the layers' pages. Equal pages: the page times the layers;
    // pages that differ (DeciLM's per-layer KV heads): one page of the summed token bytes.
    const bool equal_pages = buckets.size() == 1;
    geometry.group_size = equal_pages ? layers_on_rank : 1;
    if (!equal_pages) geometry.max_layer_token_bytes_per_element = geometry.token_bytes_per_element;
    geometry.groups.push_back(KvGroup{static_cast<AttentionKind>(std::get<0>(first_key)),
                                      std::get<1>(first_key), layers_on_rank, 1});
    return geometry;
  }
  // A layer whose page is a divisor of the largest takes a proportionally larger block
  // (unify_kv_cache_spec_page_size); otherwise its page is padded to the largest.
  const auto multiplier = [&geometry](std::int64_t token_bytes) {
    const std::int64_t largest = geometry.max_layer_token_bytes_per_element;
    if (token_bytes <= 0 || largest % token_bytes != 0) return 1;
    return static_cast<std::int32_t>(largest / token_bytes);
  };
  geometry.uniform = false;
  std::int32_t smallest = buckets.begin()->second.count;
  std::int32_t largest = smallest;
  for (const auto& [key, bucket] : buckets) {
    smallest = std::min(smallest, bucket.count);
    largest = std::max(largest, bucket.count);
  }
  // vLLM takes the smallest bucket as group size, or the largest when they are close.
  const std::int32_t group_size =
      static_cast<double>(largest) < smallest * o.group_size_close_ratio ? largest : smallest;
  for (const auto& [key, bucket] : buckets) {
    const std::int32_t num_groups = static_cast<std::int32_t>(ceil_div(bucket.count, group_size));
    for (std::int32_t g = 0; g < num_groups; ++g) {
      const std::int32_t on_rank = layers_of_group_on_rank(bucket, g, num_groups);
      geometry.group_size = std::max(geometry.group_size, on_rank);
      geometry.groups.push_back(KvGroup{static_cast<AttentionKind>(std::get<0>(key)),
                                        std::get<1>(key), on_rank, multiplier(std::get<2>(key))});
    }
    if (bucket.count % group_size != 0) {
      geometry.padding_layers += group_size - bucket.count % group_size;
    }
  }
  return geometry;
}

KvPage kv_page(const KvGeometry& g, std::int32_t block_size,
               std::int32_t kv_element_bytes) noexcept {
  KvPage page;
  page.block_size = block_size;
  // Each sparse MLA layer's page also holds its indexer keys (vLLM's UniformTypeKVCacheSpecs:
  // one block id across every layer's tensor, so a block costs the sum of their pages).
  const std::int64_t sparse_bytes =
      g.indexer_token_bytes + (kv_element_bytes == 1 ? g.fp8_ds_mla_extra_bytes : 0);
  page.bytes_per_token =
      g.token_bytes_per_element * kv_element_bytes + g.sparse_mla_layers * sparse_bytes;
  if (g.groups.empty()) return page;
  const std::int64_t attn_token_bytes = g.max_layer_token_bytes_per_element * kv_element_bytes +
                                        (g.sparse_mla_layers > 0 ? sparse_bytes : 0);
  if (g.state_bytes > 0 && attn_token_bytes > 0) {
    // Hybrid with Mamba: raise the attention block size until one page holds a state.
    const std::int64_t align = std::max<std::int64_t>(16, block_size);
    page.block_size =
        static_cast<std::int32_t>(align * ceil_div(g.state_bytes, align * attn_token_bytes));
  }
  page.page_bytes = attn_token_bytes > 0 ? attn_token_bytes * page.block_size : g.state_bytes;
  return page;
}

KvLayout kv_layout(const KvGeometry& g, const KvPage& page) {
  KvLayout layout;
  layout.block_size = page.block_size;
  layout.page_bytes = page.page_bytes;
  layout.group_size = g.group_size;
  layout.groups = g.groups;
  layout.padding_layers = g.padding_layers;
  layout.bytes_per_token = page.bytes_per_token;
  layout.mamba_page_bytes = g.state_bytes;
  layout.uniform = g.uniform;
  layout.num_speculative_tokens = g.num_speculative_tokens;
  return layout;
}

KvLayout kv_layout(const ModelSpec& spec, const KvCacheOptions& o) {
  const KvGeometry geometry = kv_geometry(spec, o);
  return kv_layout(geometry, kv_page(geometry, o.block_size, o.kv_element_bytes));
}

namespace {

std::int64_t blocks_per_request(const std::vector<KvGroup>& groups, std::int32_t block_size,
                                std::int32_t speculative, std::int64_t max_model_len,
                                std::int64_t max_num_batched_tokens) noexcept {
  std::int64_t blocks = 0;
  for (const auto& g : groups) {
    blocks += group_blocks(g, block_size, max_model_len, max_num_batched_tokens, speculative);
  }
  return blocks;
}

}  // namespace

std::int64_t kv_blocks_per_request(const KvGeometry& g, const KvPage& page,
                                   std::int64_t max_model_len,
                                   std::int64_t max_num_batched_tokens) noexcept {
  return blocks_per_request(g.groups, page.block_size, g.num_speculative_tokens, max_model_len,
                            max_num_batched_tokens);
}

std::int64_t kv_blocks_per_request(const KvLayout& layout, std::int64_t max_model_len,
                                   std::int64_t max_num_batched_tokens) noexcept {
  return blocks_per_request(layout.groups, layout.block_size, layout.num_speculative_tokens,
                            max_model_len, max_num_batched_tokens);
}

// Groups share one pool of group_size tensors, so each block costs page * group_size.
std::int64_t kv_blocks_bytes(const KvGeometry& g, const KvPage& page,
                             std::int64_t blocks) noexcept {
  return blocks * page.page_bytes * g.group_size;
}

std::int64_t kv_request_bytes(const KvGeometry& g, const KvPage& page, std::int64_t max_model_len,
                              std::int64_t max_num_batched_tokens) noexcept {
  return kv_blocks_bytes(g, page,
                         kv_blocks_per_request(g, page, max_model_len, max_num_batched_tokens));
}

std::int64_t kv_request_bytes(const KvLayout& layout, std::int64_t max_model_len,
                              std::int64_t max_num_batched_tokens) noexcept {
  return kv_blocks_per_request(layout, max_model_len, max_num_batched_tokens) * layout.page_bytes *
         layout.group_size;
}

std::int64_t kv_max_model_len_that_fits(const KvGeometry& g, const KvPage& page,
                                        std::int64_t kv_budget_bytes, std::int64_t upper,
                                        std::int64_t max_num_batched_tokens) noexcept {
  // A launch that starts holds one request of its own length: no search (most breakdowns).
  if (kv_request_bytes(g, page, upper, max_num_batched_tokens) <= kv_budget_bytes) return upper;
  std::int64_t lo = 0;
  std::int64_t hi = upper;
  while (lo < hi) {  // largest L with need(L) <= budget; need is monotone in L
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (kv_request_bytes(g, page, mid, max_num_batched_tokens) <= kv_budget_bytes) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

}  // namespace vramplan
