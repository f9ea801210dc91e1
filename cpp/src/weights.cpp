#include "vramplan/weights.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "vramplan/errors.hpp"
#include "vramplan/saturating.hpp"

namespace vramplan {
namespace {

// The schema's bounds keep each tensor's bytes inside int64, not a sum over thousands of
// layers of thousands of experts: those saturate here, and a model past this size is refused
// by name (no GPU holds 8 PiB; every later sum of a few such terms stays inside int64).
constexpr std::int64_t kMaxModelBytes = std::int64_t{1} << 53;

void check_model_bytes(const ModelSpec& spec, std::int64_t bytes, const char* what) {
  if (bytes > kMaxModelBytes) {
    throw SpecError(spec.source, "<tensors>",
                    bytes == kSaturatedBytes ? "over 2^63 bytes" : std::to_string(bytes) + " bytes",
                    std::string(what) + " add up to over 2^53 bytes (8 PiB): check the spec's " +
                        "layer, expert and width counts");
  }
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept { return (a + b - 1) / b; }

std::int64_t round_up(std::int64_t value, std::int64_t multiple) noexcept {
  return ceil_div(value, multiple) * multiple;
}

std::int64_t elem_bytes(DType dtype) noexcept { return dtype_info(dtype).block_bytes; }

bool role_listed(const QuantSpec& q, TensorRole role) noexcept {
  const char* name = tensor_role_name(role);  // compared in place: no string is built
  return std::any_of(q.unquantized_roles.begin(), q.unquantized_roles.end(),
                     [name](const std::string& listed) { return listed == name; });
}

// Is this decoder layer's copy of the role kept in torch_dtype by a per-layer skip entry?
bool layer_listed(const QuantSpec& q, const TensorGroup& g) noexcept {
  if (g.layer < 0 || q.unquantized_layers.empty()) return false;
  const auto it = q.unquantized_layers.find(tensor_role_name(g.role));
  return it != q.unquantized_layers.end() &&
         std::binary_search(it->second.begin(), it->second.end(), g.layer);
}

bool is_expert(TensorRole role) noexcept {
  return role == TensorRole::ExpertGateUp || role == TensorRole::ExpertDown;
}

// Does `quant` store this tensor quantized?
bool quantizes(const QuantSpec& q, const TensorGroup& g) noexcept {
  if (q.method == QuantMethod::None || role_listed(q, g.role) || layer_listed(q, g)) return false;
  if (g.mtp && std::find(q.unquantized_roles.begin(), q.unquantized_roles.end(), "mtp") !=
                   q.unquantized_roles.end()) {
    return false;  // a config that ignores the MTP modules stores them in torch_dtype
  }
  if (q.method == QuantMethod::Gguf) {
    // llama.cpp quantizes every 2-D weight (embeddings and output included), never 1-D ones.
    return g.cols > 1 && g.role != TensorRole::Vision;
  }
  if (q.method == QuantMethod::Mxfp4) return is_expert(g.role);
  if (g.role == TensorRole::LmHead) return q.quantized_lm_head;
  return g.is_linear;
}

DType gguf_type_for(const QuantSpec& q, TensorRole role) noexcept {
  const auto it = q.gguf_types.find(tensor_role_name(role));
  return it != q.gguf_types.end() ? it->second : q.gguf_types.at("default");
}

std::int64_t decimal_digits(std::int64_t value) noexcept {
  std::int64_t digits = 1;
  for (; value >= 10; value /= 10) ++digits;
  return digits;
}

// bitsandbytes stores a 4-bit weight's non-tensor state as a uint8 tensor
// "<name>.quant_state.bitsandbytes__nf4" holding json.dumps of {"quant_type": "nf4",
// "blocksize": 64, "dtype": <torch dtype>, "shape": [n, k]} (QuantState.as_dict(packed=True)),
// without double quantization; with it the dict also holds a float offset of unknown length.
std::int64_t bnb_nf4_quant_state_bytes(std::int64_t n, std::int64_t k, DType dtype) noexcept {
  constexpr std::int64_t kFixedJsonBytes = 66;  // the text without the dtype and the two dims
  std::int64_t dtype_name_bytes = 7;            // "float16", "float32" (bnb quantizes no other)
  if (dtype == DType::BF16) dtype_name_bytes = 8;
  return kFixedJsonBytes + dtype_name_bytes + decimal_digits(n) + decimal_digits(k);
}

// Bytes of one quantized Linear [n, k] (per rank), checkpoint or GPU layout.
std::int64_t quantized_linear_bytes(const QuantSpec& q, TensorRole role, std::int64_t n,
                                    std::int64_t k, DType served, bool checkpoint) noexcept {
  const std::int64_t nk = n * k;
  const std::int64_t groups = q.group_size > 0 ? ceil_div(k, q.group_size) : 1;
  switch (q.method) {
    case QuantMethod::None:
      return nk * elem_bytes(served);
    case QuantMethod::Fp8:
    case QuantMethod::Int8: {
      // fp32 scales, or the checkpoint's torch_dtype ones (compressed-tensors).
      const std::int64_t scale_bytes =
          checkpoint && q.scales_in_torch_dtype ? elem_bytes(served) : 4;
      std::int64_t scales = 1;  // one per-tensor scale
      if (q.scale_strategy == ScaleStrategy::Channel) scales = n;
      if (q.scale_strategy == ScaleStrategy::Block) {
        scales = ceil_div(n, q.block_n) * ceil_div(k, q.block_k);
      }
      return nk + scale_bytes * (scales + (q.static_activation_scale ? 1 : 0));
    }
    case QuantMethod::Awq:
      // qweight int32 [k, n/8], qzeros int32 [k/G, n/8], fp16 scales [k/G, n]; Marlin keeps all.
      return nk / 2 + groups * n / 2 + groups * n * 2;
    case QuantMethod::Gptq: {
      const std::int64_t packed = nk * q.bits / 8;
      const std::int64_t scales = groups * n * 2;
      const std::int64_t qzeros = groups * n * q.bits / 8;
      if (checkpoint) return packed + scales + qzeros + 4 * k;  // g_idx always stored
      const bool marlin = (q.bits == 4 || q.bits == 8) && q.sym;
      if (!marlin) return packed + scales + qzeros + 4 * k;  // exllama path keeps g_idx [k]
      return packed + scales +
             (q.desc_act ? std::int64_t{2} * 4 * k : 0);  // sorted g_idx + sort indices
    }
    case QuantMethod::PackedWNA16: {
      const std::int64_t packed = nk * q.bits / 8;
      const std::int64_t scales = groups * n * elem_bytes(served);
      const std::int64_t zeros = q.sym ? 0 : ceil_div(n * q.bits, 32) * groups * 4;
      const std::int64_t g_idx = q.desc_act ? 4 * k : 0;
      if (checkpoint) return packed + scales + zeros + g_idx + 16;  // + weight_shape int64[2]
      return packed + scales + (q.desc_act ? std::int64_t{2} * 4 * k : 0);
    }
    case QuantMethod::BnbNf4: {
      const std::int64_t blocks = ceil_div(nk, 64);
      if (!checkpoint) return nk / 2 + 4 * blocks + 64;  // fp32 absmax + code
      if (!q.double_quant)
        return nk / 2 + 4 * blocks + 64 + bnb_nf4_quant_state_bytes(n, k, served);
      // uint8 absmax, fp32 nested absmax per 256 blocks, fp32 code tables (16 + 256 entries);
      // the JSON state (~130 B, its float offset of unknown length) is not counted.
      return nk / 2 + blocks + 4 * ceil_div(blocks, 256) + 64 + 1024;
    }
    case QuantMethod::BnbInt8:
      return nk + 4 * n;
    case QuantMethod::Mxfp4:
      return nk / 2 + ceil_div(k, 32) * n;  // fp4 pairs + E8M0 per 32
    case QuantMethod::Nvfp4: {
      // fp4 pairs, an fp8 scale per 16 inputs, weight_scale_2, and an input_scale unless the
      // module is weight-only (W4A16_NVFP4).
      const char* name = tensor_role_name(role);
      const bool weight_only =
          std::any_of(q.nvfp4_weight_only_roles.begin(), q.nvfp4_weight_only_roles.end(),
                      [name](const std::string& listed) { return listed == name; });
      return nk / 2 + ceil_div(k, 16) * n + (weight_only ? 4 : 8);
    }
    case QuantMethod::Gguf: {
      const DType t = gguf_type_for(q, role);
      const auto& info = dtype_info(t);
      if (info.block_elements == 1 && !checkpoint) return nk * elem_bytes(served);
      return n * ceil_div(k, info.block_elements) * info.block_bytes;
    }
  }
  return nk * elem_bytes(served);
}

}  // namespace

LayerRange pipeline_layer_range(std::int32_t num_layers, std::int32_t pipeline_parallel_size,
                                std::int32_t pipeline_rank) noexcept {
  const std::int32_t pp = std::max(1, pipeline_parallel_size);
  const std::int32_t base = num_layers / pp;
  const std::int32_t remainder = num_layers % pp;
  // Stages pp-1-remainder .. pp-2 get one extra layer each.
  auto size_of = [&](std::int32_t rank) {
    return base + ((rank >= pp - 1 - remainder && rank <= pp - 2) ? 1 : 0);
  };
  std::int32_t begin = 0;
  for (std::int32_t r = 0; r < pipeline_rank && r < pp; ++r) begin += size_of(r);
  return LayerRange{begin, begin + size_of(pipeline_rank)};
}

std::int64_t padded_vocab_size(std::int64_t vocab_size) noexcept {
  return ceil_div(vocab_size, 64) * 64;
}

std::int64_t tensor_group_bytes(const TensorGroup& g, const QuantSpec& quant, DType served_dtype,
                                std::int32_t tensor_parallel_size,
                                bool checkpoint_layout) noexcept {
  const std::int64_t tp = checkpoint_layout ? 1 : std::max(1, tensor_parallel_size);
  std::int64_t rows = g.rows;
  std::int64_t cols = g.cols;
  switch (g.split) {
    case TensorSplit::Replicated:
      break;
    case TensorSplit::Column:
      rows = ceil_div(rows, tp);
      break;
    case TensorSplit::Row:
      cols = ceil_div(cols, tp);
      break;
    case TensorSplit::Vocab:
      rows = checkpoint_layout ? rows : ceil_div(padded_vocab_size(rows), tp);
      break;
    case TensorSplit::KvHeads: {
      // Each rank keeps max(1, Hkv / tp) heads; heads are replicated when Hkv < tp.
      const std::int64_t per_head = rows / std::max<std::int64_t>(1, g.heads);
      rows = per_head * std::max<std::int64_t>(1, g.heads / tp);
      break;
    }
  }
  if (!checkpoint_layout && is_expert(g.role)) {
    // Kernel backends round the per-rank expert dims up (reference weight-formats 7.1).
    const std::int64_t hidden_multiple = std::max(1, quant.expert_hidden_multiple);
    const std::int64_t inter_multiple = std::max(1, quant.expert_intermediate_multiple);
    if (g.role == TensorRole::ExpertGateUp) {
      rows = 2 * round_up(rows / 2, inter_multiple);
      cols = round_up(cols, hidden_multiple);
    } else {
      rows = round_up(rows, hidden_multiple);
      cols = round_up(cols, inter_multiple);
    }
  }
  // A checkpoint stores each module of the group apart (k_proj and v_proj, gate_proj and
  // up_proj), each with its own per-module tensors: g_idx, per-tensor scales, NVFP4 globals,
  // bitsandbytes state, compressed-tensors weight_shape. On the GPU vLLM merges them.
  const std::int64_t modules =
      checkpoint_layout && g.modules > 1 && rows % g.modules == 0 ? g.modules : 1;
  std::int64_t bytes = 0;
  if (g.is_linear && !role_listed(quant, g.role) && !layer_listed(quant, g) &&
      std::find(quant.fp8_roles.begin(), quant.fp8_roles.end(), tensor_role_name(g.role)) !=
          quant.fp8_roles.end()) {
    QuantSpec fp8;  // ModelOpt FP8: fp8 weight, fp32 weight_scale and input_scale
    fp8.method = QuantMethod::Fp8;
    fp8.bits = 8;
    fp8.scale_strategy = ScaleStrategy::Tensor;
    fp8.static_activation_scale = true;
    bytes = modules * quantized_linear_bytes(fp8, g.role, rows / modules, cols, served_dtype,
                                             checkpoint_layout);
  } else if (quantizes(quant, g)) {
    bytes = modules * quantized_linear_bytes(quant, g.role, rows / modules, cols, served_dtype,
                                             checkpoint_layout);
  } else {
    bytes = rows * cols * elem_bytes(served_dtype);
  }
  return saturating_mul(bytes, g.count);
}

std::int64_t tensor_group_bytes_on_rank(const TensorGroup& group, const QuantSpec& quant,
                                        DType served_dtype,
                                        const RankPlacement& placement) noexcept {
  if (placement.expert_parallel_size > 1 && is_expert(group.role)) {
    // Expert parallelism: whole experts, ceil((E + R) / EP) of them on this rank.
    TensorGroup local = group;
    local.count =
        ceil_div(group.count + placement.redundant_experts, placement.expert_parallel_size);
    return tensor_group_bytes(local, quant, served_dtype, 1, false);
  }
  if (is_expert(group.role) && placement.expert_tensor_parallel_size > 0) {
    return tensor_group_bytes(group, quant, served_dtype, placement.expert_tensor_parallel_size,
                              false);
  }
  return tensor_group_bytes(group, quant, served_dtype, placement.tensor_parallel_size, false);
}

WeightBytes weight_bytes_per_rank(const ModelSpec& spec, const QuantSpec& quant, DType served_dtype,
                                  const RankPlacement& placement, bool include_mtp) {
  const LayerRange range = pipeline_layer_range(
      spec.num_hidden_layers, placement.pipeline_parallel_size, placement.pipeline_rank);
  const bool first_stage = placement.pipeline_rank == 0;
  const bool last_stage = placement.pipeline_rank == placement.pipeline_parallel_size - 1;
  WeightBytes out;
  for (const auto& g : model_tensor_groups(spec, include_mtp)) {
    const bool model_level = g.layer < 0;
    const bool mtp_layer = g.layer >= spec.num_hidden_layers;
    if (!model_level && !mtp_layer && (g.layer < range.begin || g.layer >= range.end)) continue;
    if (mtp_layer && !last_stage) continue;
    const std::int64_t bytes = tensor_group_bytes_on_rank(g, quant, served_dtype, placement);
    switch (g.role) {
      case TensorRole::Embedding:
        if (first_stage) out.embedding = saturating_add(out.embedding, bytes);
        // A tied head on a later last stage needs its own copy of the embedding matrix (the
        // token table, not a replicated position table).
        if (spec.tie_word_embeddings && last_stage && !first_stage &&
            g.split != TensorSplit::Replicated)
          out.lm_head = saturating_add(out.lm_head, bytes);
        break;
      case TensorRole::LmHead:
        if (last_stage) out.lm_head = saturating_add(out.lm_head, bytes);
        break;
      case TensorRole::AttnQ:
      case TensorRole::AttnKV:
      case TensorRole::AttnO:
      case TensorRole::MlaQA:
      case TensorRole::MlaQB:
      case TensorRole::MlaKVA:
      case TensorRole::MlaKVB:
      case TensorRole::MixerIn:
      case TensorRole::MixerInBA:
      case TensorRole::MixerOut:
      case TensorRole::MixerSmall:
        out.attention = saturating_add(out.attention, bytes);
        break;
      case TensorRole::MlpGateUp:
      case TensorRole::MlpDown:
      case TensorRole::ExpertGateUp:
      case TensorRole::ExpertDown:
      case TensorRole::SharedExpertGateUp:
      case TensorRole::SharedExpertDown:
      case TensorRole::Router:
        out.mlp = saturating_add(out.mlp, bytes);
        break;
      case TensorRole::Norm:
        if (model_level && !last_stage) break;  // final norm lives on the last stage
        out.other = saturating_add(out.other, bytes);
        break;
      case TensorRole::Bias:
      case TensorRole::RowBias:
        out.attention = saturating_add(out.attention, bytes);
        break;
      case TensorRole::Vision:
        if (first_stage) out.other = saturating_add(out.other, bytes);
        break;
    }
  }
  const std::int64_t cached_positions =
      spec.rotary_cache_positions > 0 ? spec.rotary_cache_positions : spec.max_position_embeddings;
  out.rotary_cache = cached_positions * spec.rotary_dim * elem_bytes(served_dtype);
  if (spec.checkpoint_bytes > 0 && spec.num_hidden_layers > 0) {
    // Tensors the headers list but the spec does not describe: this rank's share of them.
    const std::int64_t unexplained = spec.checkpoint_bytes - checkpoint_tensor_bytes(spec, true);
    const std::int64_t layers = range.end - range.begin;
    // x * layers / n as q * layers + r * layers / n (exact, also for a negative x): header
    // byte counts times thousands of layers may pass int64, r * layers never does.
    const std::int64_t per_rank = unexplained / std::max(1, placement.tensor_parallel_size);
    const std::int64_t n = spec.num_hidden_layers;
    const std::int64_t share =
        saturating_add(saturating_mul(per_rank / n, layers), per_rank % n * layers / n);
    out.other = saturating_add(out.other, share);
  }
  std::int64_t total = 0;
  for (const std::int64_t part :
       {out.embedding, out.lm_head, out.attention, out.mlp, out.other, out.rotary_cache}) {
    total = saturating_add(total, part);
  }
  check_model_bytes(spec, total, "this rank's weights");
  return out;
}

std::int64_t lora_bytes_per_rank(const ModelSpec& spec, std::int32_t max_loras,
                                 std::int32_t max_lora_rank, DType served_dtype,
                                 const RankPlacement& placement) {
  if (max_loras <= 0 || max_lora_rank <= 0) return 0;
  const LayerRange range = pipeline_layer_range(
      spec.num_hidden_layers, placement.pipeline_parallel_size, placement.pipeline_rank);
  const std::int64_t tp = std::max(1, placement.tensor_parallel_size);
  std::int64_t elements_per_rank_unit = 0;  // sum of (A cols + B rows) over adapted slices
  for (const auto& g : model_tensor_groups(spec)) {
    if (g.layer < range.begin || g.layer >= range.end) continue;
    std::int64_t slices = 1;  // packed layers keep one A/B pair per packed projection
    switch (g.role) {
      case TensorRole::AttnQ:
      case TensorRole::AttnO:
      case TensorRole::MlpDown:
        break;
      case TensorRole::AttnKV:
        slices = 2;
        break;
      case TensorRole::MlpGateUp:
        slices = spec.gated_mlp ? 2 : 1;
        break;
      default:
        continue;
    }
    std::int64_t a_cols = g.cols;
    std::int64_t b_rows = g.rows;
    if (g.split == TensorSplit::Row) {
      a_cols = ceil_div(g.cols, tp);
    } else if (g.split == TensorSplit::KvHeads) {
      b_rows =
          g.rows / std::max<std::int64_t>(1, g.heads) * std::max<std::int64_t>(1, g.heads / tp);
    } else if (g.split == TensorSplit::Column) {
      b_rows = ceil_div(g.rows, tp);
    }
    elements_per_rank_unit =
        saturating_add(elements_per_rank_unit, saturating_mul(slices * a_cols + b_rows, g.count));
  }
  const std::int64_t bytes = saturating_mul(
      saturating_mul(saturating_mul(elements_per_rank_unit, max_lora_rank), max_loras),
      elem_bytes(served_dtype));
  check_model_bytes(spec, bytes, "the LoRA buffers (max_loras x max_lora_rank x widths)");
  return bytes;
}

std::int64_t checkpoint_tensor_bytes(const ModelSpec& spec, bool include_mtp) {
  std::int64_t total = 0;
  for (const auto& g : model_tensor_groups(spec, include_mtp)) {
    total =
        saturating_add(total, tensor_group_bytes(g, spec.quantization, spec.torch_dtype, 1, true));
  }
  check_model_bytes(spec, total, "the checkpoint's tensors");
  return total;
}

namespace {

// True for a group vLLM fuses into the parameter before it: k/v into QKVParallelLinear's
// weight (and the qkv bias), which the offloader pins as one block.
bool fused_with_previous(const TensorGroup& previous, const TensorGroup& group) noexcept {
  return group.layer == previous.layer &&
         ((group.role == TensorRole::AttnKV && previous.role == TensorRole::AttnQ) ||
          (group.role == TensorRole::Bias && group.split == TensorSplit::KvHeads &&
           previous.role == TensorRole::Bias));
}

// A stage's decoder-layer parameters in module order, each as one allocation: a layer's leading
// norm group (input and post-attention norms) is registered after its mixer and MLP, and a
// fused projection's shards (q with k and v, their biases) are one parameter.
std::vector<std::int64_t> stage_decoder_parameter_bytes(const ModelSpec& spec,
                                                        const QuantSpec& quant, DType served_dtype,
                                                        const RankPlacement& placement) {
  const LayerRange range = pipeline_layer_range(
      spec.num_hidden_layers, placement.pipeline_parallel_size, placement.pipeline_rank);
  std::vector<std::int64_t> parameters;
  std::vector<TensorGroup> layer_groups;
  const auto flush_layer = [&]() {
    if (layer_groups.empty()) return;
    const bool norm_first = layer_groups.front().role == TensorRole::Norm;
    for (std::size_t i = norm_first ? 1 : 0; i < layer_groups.size(); ++i) {
      const std::int64_t bytes =
          tensor_group_bytes_on_rank(layer_groups[i], quant, served_dtype, placement);
      if (i > 0 && fused_with_previous(layer_groups[i - 1], layer_groups[i]) && !parameters.empty())
        parameters.back() = saturating_add(parameters.back(), bytes);
      else if (bytes > 0)
        parameters.push_back(bytes);
    }
    if (norm_first) {
      parameters.push_back(
          tensor_group_bytes_on_rank(layer_groups.front(), quant, served_dtype, placement));
    }
    layer_groups.clear();
  };
  for (const TensorGroup& g : model_tensor_groups(spec)) {
    if (g.layer < range.begin || g.layer >= range.end) continue;
    if (!layer_groups.empty() && layer_groups.front().layer != g.layer) flush_layer();
    layer_groups.push_back(g);
  }
  flush_layer();
  return parameters;
}

}  // namespace

std::vector<std::int64_t> caching_allocator_segments(const std::vector<std::int64_t>& requests) {
  // c10/cuda/CUDACachingAllocator.cpp's constants (expandable segments off, no max_split_size).
  constexpr std::int64_t kMinBlockSize = 512;
  constexpr std::int64_t kSmallSize = std::int64_t{1} << 20;
  constexpr std::int64_t kSmallBuffer = std::int64_t{2} << 20;
  constexpr std::int64_t kLargeBuffer = std::int64_t{20} << 20;
  constexpr std::int64_t kMinLargeAlloc = std::int64_t{10} << 20;
  constexpr std::int64_t kRoundLarge = std::int64_t{2} << 20;
  constexpr std::int64_t kMaxRequest = std::int64_t{1} << 61;  // rounding stays inside int64
  const auto round_up = [](std::int64_t bytes, std::int64_t unit) {
    return (bytes + unit - 1) / unit * unit;
  };
  std::vector<std::int64_t> segments;
  std::multiset<std::int64_t> small_free;
  std::multiset<std::int64_t> large_free;
  for (const std::int64_t request : requests) {
    if (request <= 0) continue;
    const std::int64_t size = round_up(std::min(request, kMaxRequest), kMinBlockSize);
    const bool small = size <= kSmallSize;
    std::multiset<std::int64_t>& pool = small ? small_free : large_free;
    std::int64_t block = 0;
    // Best fit: the smallest free block at least as large.
    if (const auto it = pool.lower_bound(size); it != pool.end()) {
      block = *it;
      pool.erase(it);
    } else {
      block = small                   ? kSmallBuffer
              : size < kMinLargeAlloc ? kLargeBuffer
                                      : round_up(size, kRoundLarge);
      segments.push_back(block);
    }
    // The rest of the block stays free for later requests when it is worth splitting off.
    const std::int64_t rest = block - size;
    if (small ? rest >= kMinBlockSize : rest > kSmallSize) pool.insert(rest);
  }
  return segments;
}

std::int64_t pinned_block_bytes(std::int64_t bytes) noexcept {
  std::int64_t block = 1;
  while (block < bytes && block < (std::int64_t{1} << 62)) block <<= 1;
  return block;
}

CpuOffload cpu_offload_per_rank(const ModelSpec& spec, const QuantSpec& quant, DType served_dtype,
                                const RankPlacement& placement, std::int64_t budget_bytes) {
  CpuOffload out;
  if (budget_bytes <= 0) return out;
  // The offloader checks the running total before each parameter: the last one taken may
  // carry it past the budget.
  for (const std::int64_t bytes :
       stage_decoder_parameter_bytes(spec, quant, served_dtype, placement)) {
    if (out.offloaded_bytes >= budget_bytes) break;
    out.offloaded_bytes = saturating_add(out.offloaded_bytes, bytes);
    out.pinned_bytes = saturating_add(out.pinned_bytes, pinned_block_bytes(bytes));
    ++out.parameters;
  }
  return out;
}

std::int64_t sleep_weights_backup_bytes(const ModelSpec& spec, const QuantSpec& quant,
                                        DType served_dtype, const RankPlacement& placement,
                                        std::int64_t cpu_offloaded_parameters) {
  const WeightBytes weights = weight_bytes_per_rank(spec, quant, served_dtype, placement);
  const std::vector<std::int64_t> decoder =
      stage_decoder_parameter_bytes(spec, quant, served_dtype, placement);
  // Module order: the embedding, the decoder layers (less those --cpu-offload-gb moved to the
  // host, which are not in the pool), the rotary cache, the model-level tensors the spec keeps
  // as one sum (final norm, vision tower, MTP extras, tensors only the headers list), the head.
  // That sum is one request below 10 MiB, else taken as filling whole 20 MiB segments.
  constexpr std::int64_t kLargeBuffer = std::int64_t{20} << 20;
  constexpr std::int64_t kMinLargeAlloc = std::int64_t{10} << 20;
  std::vector<std::int64_t> requests;
  requests.reserve(decoder.size() + 4);
  requests.push_back(weights.embedding);
  const auto offloaded = static_cast<std::ptrdiff_t>(std::clamp<std::int64_t>(
      cpu_offloaded_parameters, 0, static_cast<std::int64_t>(decoder.size())));
  requests.insert(requests.end(), decoder.begin() + offloaded, decoder.end());
  requests.push_back(weights.rotary_cache);
  if (weights.other < kMinLargeAlloc) requests.push_back(weights.other);
  requests.push_back(weights.lm_head);
  std::int64_t backup = 0;
  for (const std::int64_t segment : caching_allocator_segments(requests))
    backup = saturating_add(backup, pinned_block_bytes(segment));
  const std::int64_t other_segments =
      weights.other < kMinLargeAlloc ? 0 : (weights.other + kLargeBuffer - 1) / kLargeBuffer;
  return saturating_add(backup, saturating_mul(other_segments, pinned_block_bytes(kLargeBuffer)));
}

}  // namespace vramplan
