#include "vramplan/model_spec.hpp"

#include <algorithm>

namespace vramplan {

const char* attention_kind_name(AttentionKind kind) noexcept {
  switch (kind) {
    case AttentionKind::Full:
      return "full_attention";
    case AttentionKind::SlidingWindow:
      return "sliding_attention";
    case AttentionKind::ChunkedLocal:
      return "chunked_attention";
    case AttentionKind::Mla:
      return "mla";
    case AttentionKind::Mamba:
      return "mamba";
    case AttentionKind::LinearAttention:
      return "linear_attention";
    case AttentionKind::CrossAttention:
      return "cross_attention";
    case AttentionKind::None:
      return "none";
  }
  return "none";
}

const char* quant_method_name(QuantMethod method) noexcept {
  switch (method) {
    case QuantMethod::None:
      return "none";
    case QuantMethod::Fp8:
      return "fp8";
    case QuantMethod::Int8:
      return "int8";
    case QuantMethod::Awq:
      return "awq";
    case QuantMethod::Gptq:
      return "gptq";
    case QuantMethod::PackedWNA16:
      return "packed_wna16";
    case QuantMethod::BnbNf4:
      return "bnb_nf4";
    case QuantMethod::BnbInt8:
      return "bnb_int8";
    case QuantMethod::Mxfp4:
      return "mxfp4";
    case QuantMethod::Nvfp4:
      return "nvfp4";
    case QuantMethod::Gguf:
      return "gguf";
  }
  return "none";
}

const char* tensor_role_name(TensorRole role) noexcept {
  switch (role) {
    case TensorRole::Embedding:
      return "embedding";
    case TensorRole::LmHead:
      return "lm_head";
    case TensorRole::AttnQ:
      return "attn_q";
    case TensorRole::AttnKV:
      return "attn_kv";
    case TensorRole::AttnO:
      return "attn_o";
    case TensorRole::MlaQA:
      return "mla_q_a";
    case TensorRole::MlaQB:
      return "mla_q_b";
    case TensorRole::MlaKVA:
      return "mla_kv_a";
    case TensorRole::MlaKVB:
      return "mla_kv_b";
    case TensorRole::MlpGateUp:
      return "mlp_gate_up";
    case TensorRole::MlpDown:
      return "mlp_down";
    case TensorRole::ExpertGateUp:
      return "expert_gate_up";
    case TensorRole::ExpertDown:
      return "expert_down";
    case TensorRole::SharedExpertGateUp:
      return "shared_expert_gate_up";
    case TensorRole::SharedExpertDown:
      return "shared_expert_down";
    case TensorRole::Router:
      return "router";
    case TensorRole::MixerIn:
      return "mixer_in";
    case TensorRole::MixerInBA:
      return "mixer_in_ba";
    case TensorRole::MixerOut:
      return "mixer_out";
    case TensorRole::MixerSmall:
      return "mixer_small";
    case TensorRole::Norm:
      return "norm";
    case TensorRole::Bias:
      return "bias";
    case TensorRole::RowBias:
      return "row_bias";
    case TensorRole::Vision:
      return "vision";
  }
  return "unknown";
}

namespace {

class GroupBuilder {
 public:
  explicit GroupBuilder(std::vector<TensorGroup>& out) : out_(out) {}
  void add(TensorRole role, TensorSplit split, int layer, std::int64_t rows, std::int64_t cols,
           bool is_linear, std::int64_t count = 1, std::int64_t heads = 0,
           std::int32_t modules = 1) {
    if (rows <= 0 || cols <= 0 || count <= 0) return;
    out_.push_back(
        TensorGroup{role, split, layer, rows, cols, count, heads, is_linear, mtp_, modules});
  }
  void set_mtp(bool mtp) { mtp_ = mtp; }

 private:
  std::vector<TensorGroup>& out_;
  bool mtp_ = false;
};

// Families whose checkpoints store q, k and v as one Linear (Phi-3 qkv_proj, Falcon, Ling and
// Sarvam query_key_value, InternLM2 wqkv), or gate and up as one (Phi-3 and GLM-4 gate_up_proj,
// gpt-oss experts' gate_up_proj); the rest store them apart, as Llama does.
bool checkpoint_fuses_qkv(const ModelSpec& s) {
  return s.model_type == "phi3" || s.model_type == "falcon" || s.model_type == "internlm2" ||
         s.model_type == "bailing_moe" || s.model_type == "sarvam_moe";
}

bool checkpoint_fuses_gate_up(const ModelSpec& s) {
  return s.model_type == "phi3" || s.model_type == "glm4" || s.model_type == "gpt_oss";
}

// Modules the checkpoint stores for a gate+up group: gate_proj and up_proj apart when gated.
std::int32_t gate_up_modules(const ModelSpec& s) {
  return s.gated_mlp && !checkpoint_fuses_gate_up(s) ? 2 : 1;
}

void add_attention(const ModelSpec& s, const LayerSpec& layer, int index, GroupBuilder& b) {
  const std::int64_t h = s.hidden_size;
  const std::int64_t hq =
      layer.num_attention_heads > 0 ? layer.num_attention_heads : s.num_attention_heads;
  const std::int64_t d = layer.head_dim;
  const std::int64_t dv = layer.head_dim_v > 0 ? layer.head_dim_v : d;
  const std::int64_t hkv = layer.num_key_value_heads;
  const std::int64_t q_rows = hq * d * (s.attn_output_gate ? 2 : 1);
  // A KV-shared layer (Gemma-4) builds q_proj and o_proj only, and a q_norm without a k_norm.
  const std::int64_t kv_rows = layer.kv_shared ? 0 : hkv * (d + dv);
  if (s.share_q_dim > 0) {
    // Step3's shared query (step3_text.py): a ReplicatedLinear qkv_proj whole on every rank (the
    // checkpoint's q_proj, k_proj and v_proj), inter_norm, then the column-parallel wq.
    b.add(TensorRole::AttnQ, TensorSplit::Replicated, index, s.share_q_dim + kv_rows, h, true, 1, 0,
          3);
    b.add(TensorRole::Norm, TensorSplit::Replicated, index, s.share_q_dim, 1, false);
    b.add(TensorRole::AttnQ, TensorSplit::Column, index, q_rows, s.share_q_dim, true);
  } else {
    b.add(TensorRole::AttnQ, TensorSplit::Column, index, q_rows, h, true);
    b.add(TensorRole::AttnKV, TensorSplit::KvHeads, index, kv_rows, h, true, 1, hkv,
          checkpoint_fuses_qkv(s) ? 1 : 2);
  }
  b.add(TensorRole::AttnO, TensorSplit::Row, index, h, hq * dv, true);
  // Laguna's g_proj: a ColumnParallelLinear [heads, hidden] built with the quant config.
  if (s.attn_head_gate) b.add(TensorRole::AttnQ, TensorSplit::Column, index, hq, h, true);
  if (s.qkv_bias) {
    b.add(TensorRole::Bias, TensorSplit::Column, index, hq * d, 1, false);
    b.add(TensorRole::Bias, TensorSplit::KvHeads, index, kv_rows, 1, false, 1, hkv);
  }
  if (s.o_proj_bias) b.add(TensorRole::RowBias, TensorSplit::Replicated, index, h, 1, false);
  if (s.qk_norm) {
    b.add(TensorRole::Norm, TensorSplit::Replicated, index, layer.kv_shared ? d : 2 * d, 1, false);
  }
  if (s.attention_sinks) b.add(TensorRole::Bias, TensorSplit::Column, index, hq, 1, false);
}

// DeepSeek sparse attention's lightning indexer (vllm/models/deepseek_v32/attention.py,
// DeepseekV32Indexer): wq_b [index_n_heads x index_head_dim, q_lora_rank], a replicated Linear
// built with the quant_config; wk and weights_proj fused as wk_weights_proj [index_head_dim +
// index_n_heads, hidden], replicated and built without one (bf16); k_norm, a LayerNorm's weight
// and bias [index_head_dim] (vLLM keeps them in float32: 2 x index_head_dim x 2 bytes more per
// layer than counted here, under 1 KiB).
void add_indexer(const ModelSpec& s, int index, GroupBuilder& b) {
  const MlaSpec& m = s.mla;
  const std::int64_t d = m.index_head_dim;
  const std::int64_t n = m.index_n_heads;
  b.add(TensorRole::MlaQA, TensorSplit::Replicated, index, n * d, m.q_lora_rank, true);
  b.add(TensorRole::MlaKVA, TensorSplit::Replicated, index, d + n, s.hidden_size, false);
  b.add(TensorRole::Norm, TensorSplit::Replicated, index, 2 * d, 1, false);
}

void add_mla(const ModelSpec& s, int index, GroupBuilder& b) {
  const std::int64_t h = s.hidden_size;
  const std::int64_t hq = s.num_attention_heads;
  const MlaSpec& m = s.mla;
  const std::int64_t qk_head = m.qk_nope_head_dim + m.qk_rope_head_dim;
  if (m.q_lora_rank > 0) {
    b.add(TensorRole::MlaQA, TensorSplit::Replicated, index, m.q_lora_rank, h, true);
    b.add(TensorRole::Norm, TensorSplit::Replicated, index, m.q_lora_rank, 1, false);
    b.add(TensorRole::MlaQB, TensorSplit::Column, index, hq * qk_head, m.q_lora_rank, true);
  } else {
    b.add(TensorRole::AttnQ, TensorSplit::Column, index, hq * qk_head, h, true);
  }
  b.add(TensorRole::MlaKVA, TensorSplit::Replicated, index, m.kv_lora_rank + m.qk_rope_head_dim, h,
        true);
  b.add(TensorRole::Norm, TensorSplit::Replicated, index, m.kv_lora_rank, 1, false);
  b.add(TensorRole::MlaKVB, TensorSplit::Column, index, hq * (m.qk_nope_head_dim + m.v_head_dim),
        m.kv_lora_rank, true);
  b.add(TensorRole::AttnO, TensorSplit::Row, index, h, hq * m.v_head_dim, true);
  if (m.index_head_dim > 0) add_indexer(s, index, b);
}

// vLLM 0.33's MambaMixer (mamba_mixer.py), whose Linears take no quant_config (never
// quantized): in_proj [2 x inner, h], conv1d [inner, d_conv] (+ bias), x_proj [dt_rank + 2 x
// d_state, inner] (row), dt_proj [inner, dt_rank] + bias, A [inner, d_state], D [inner],
// out_proj [h, inner] (row); with weights, RMSNorms of dt_rank, d_state and d_state.
void add_mamba1(const ModelSpec& s, int index, GroupBuilder& b) {
  const MambaSpec& m = s.mamba;
  const std::int64_t inner = m.intermediate_size;
  const std::int64_t h = s.hidden_size;
  b.add(TensorRole::MixerIn, TensorSplit::Column, index, 2 * inner, h, false);
  b.add(TensorRole::MixerSmall, TensorSplit::Column, index, inner,
        m.conv_kernel + (m.conv_bias ? 1 : 0), false);
  b.add(TensorRole::MixerOut, TensorSplit::Row, index, m.time_step_rank + 2LL * m.state_size, inner,
        false);
  b.add(TensorRole::MixerSmall, TensorSplit::Column, index, inner, m.time_step_rank + 1, false);
  b.add(TensorRole::MixerSmall, TensorSplit::Column, index, inner, m.state_size + 1, false);
  b.add(TensorRole::MixerOut, TensorSplit::Row, index, h, inner, false);
  if (m.proj_bias) {
    b.add(TensorRole::Bias, TensorSplit::Column, index, 2 * inner, 1, false);
    b.add(TensorRole::RowBias, TensorSplit::Replicated, index, h, 1, false);
  }
  if (m.dt_bc_norm_weights) {
    b.add(TensorRole::Norm, TensorSplit::Replicated, index, m.time_step_rank + 2LL * m.state_size,
          1, false);
  }
}

// vLLM 0.33's ShortConv (layers/mamba/short_conv.py): conv [dim, conv_kernel] (+ bias), a
// ColumnParallelLinear built without quant_config; in_proj [3 x dim, hidden] and out_proj
// [hidden, dim], quantizable, biased with `bias`.
void add_short_conv(const ModelSpec& s, int index, GroupBuilder& b) {
  const ShortConvSpec& c = s.short_conv;
  const std::int64_t h = s.hidden_size;
  b.add(TensorRole::MixerSmall, TensorSplit::Column, index, c.dim, c.conv_kernel + (c.bias ? 1 : 0),
        false);
  b.add(TensorRole::MixerIn, TensorSplit::Column, index, 3LL * c.dim, h, true);
  b.add(TensorRole::MixerOut, TensorSplit::Row, index, h, c.dim, true);
  if (c.bias) {
    b.add(TensorRole::Bias, TensorSplit::Column, index, 3LL * c.dim, 1, false);
    b.add(TensorRole::RowBias, TensorSplit::Replicated, index, h, 1, false);
  }
}

void add_mamba(const ModelSpec& s, int index, GroupBuilder& b) {
  if (s.has_short_conv) {
    add_short_conv(s, index, b);
    return;
  }
  const MambaSpec& m = s.mamba;
  if (m.version == 1) {
    add_mamba1(s, index, b);
    return;
  }
  const std::int64_t inner = static_cast<std::int64_t>(m.num_heads) * m.head_dim;
  const std::int64_t groups_state = 2LL * m.n_groups * m.state_size;
  const std::int64_t conv_dim = inner + groups_state;
  b.add(TensorRole::MixerIn, TensorSplit::Column, index, 2 * inner + groups_state + m.num_heads,
        s.hidden_size, true);
  // conv1d weight [conv_dim, kernel] + bias [conv_dim]; A_log, D, dt_bias [heads]; the gated
  // norm [inner] where it has a weight.
  b.add(TensorRole::MixerSmall, TensorSplit::Column, index, conv_dim, m.conv_kernel + 1, false);
  b.add(TensorRole::MixerSmall, TensorSplit::Column, index,
        3LL * m.num_heads + (m.gated_norm ? inner : 0), 1, false);
  b.add(TensorRole::MixerOut, TensorSplit::Row, index, s.hidden_size, inner, true);
}

// vLLM 0.33's KimiGatedDeltaNetAttention (kimi_gdn_linear_attn.py, Kimi-Linear): one merged
// in_proj of q, k, v [3 x H*D] and b [H] (column-split) and f_a [D] (replicated), f_b_proj
// [H*D, D], g_a_proj [D, h] (replicated) and g_b_proj [H*D, D]: the low-rank f and g gates;
// dt_bias [H*D], conv1d over q, k and v [3 x H*D, kernel] and A_log [H]; o_norm [D]; o_proj.
void add_kimi_delta(const ModelSpec& s, int index, GroupBuilder& b) {
  const LinearAttentionSpec& g = s.linear_attention;
  const std::int64_t d = g.key_head_dim;
  const std::int64_t proj = static_cast<std::int64_t>(g.num_key_heads) * d;
  b.add(TensorRole::MixerIn, TensorSplit::Column, index, 3 * proj + g.num_key_heads, s.hidden_size,
        true);
  b.add(TensorRole::MixerIn, TensorSplit::Replicated, index, 2 * d, s.hidden_size, true);
  b.add(TensorRole::MixerIn, TensorSplit::Column, index, 2 * proj, d, true);
  b.add(TensorRole::MixerSmall, TensorSplit::Column, index, 3 * proj, g.conv_kernel, false);
  b.add(TensorRole::MixerSmall, TensorSplit::Column, index, proj + g.num_key_heads, 1, false);
  b.add(TensorRole::Norm, TensorSplit::Replicated, index, d, 1, false);
  b.add(TensorRole::MixerOut, TensorSplit::Row, index, s.hidden_size, proj, true);
}

void add_linear_attention(const ModelSpec& s, int index, GroupBuilder& b) {
  const LinearAttentionSpec& g = s.linear_attention;
  if (g.kimi_delta) {
    add_kimi_delta(s, index, b);
    return;
  }
  const std::int64_t key_dim = static_cast<std::int64_t>(g.num_key_heads) * g.key_head_dim;
  const std::int64_t value_dim = static_cast<std::int64_t>(g.num_value_heads) * g.value_head_dim;
  // in_proj_qkvz [2*key + 2*value, h] and in_proj_ba [2*Hv, h]: two Linears in vLLM, which a
  // quantization config may treat apart (Qwen3.5 NVFP4 keeps in_proj_a/b in bf16). Qwen3-Next
  // checkpoints store each as one module; Qwen3.5 / 3.6 store in_proj_qkv and in_proj_z, and
  // in_proj_b and in_proj_a, apart (their weight maps list a weight_shape for each).
  const std::int32_t modules = s.model_type.rfind("qwen3_5", 0) == 0 ? 2 : 1;
  b.add(TensorRole::MixerIn, TensorSplit::Column, index, 2 * key_dim + 2 * value_dim, s.hidden_size,
        true, 1, 0, modules);
  b.add(TensorRole::MixerInBA, TensorSplit::Column, index, 2LL * g.num_value_heads, s.hidden_size,
        true, 1, 0, modules);
  // conv1d over q,k,v [2*key + value, kernel]; dt_bias and A_log [Hv].
  b.add(TensorRole::MixerSmall, TensorSplit::Column, index, 2 * key_dim + value_dim, g.conv_kernel,
        false);
  b.add(TensorRole::MixerSmall, TensorSplit::Column, index, 2LL * g.num_value_heads, 1, false);
  b.add(TensorRole::Norm, TensorSplit::Replicated, index, g.value_head_dim, 1, false);
  b.add(TensorRole::MixerOut, TensorSplit::Row, index, s.hidden_size, value_dim, true);
}

void add_dense_mlp(const ModelSpec& s, const LayerSpec& layer, int index, GroupBuilder& b) {
  const std::int64_t h = s.hidden_size;
  const std::int64_t gate_factor = s.gated_mlp ? 2 : 1;
  const std::int64_t width =
      layer.intermediate_size > 0 ? layer.intermediate_size : s.intermediate_size;
  const std::int64_t mlps = s.dense_mlps_per_layer;  // LongCat-Flash: two a layer
  b.add(TensorRole::MlpGateUp, TensorSplit::Column, index, gate_factor * width, h, true, mlps, 0,
        gate_up_modules(s));
  b.add(TensorRole::MlpDown, TensorSplit::Row, index, h, width, true, mlps);
  if (s.mlp_bias)
    b.add(TensorRole::Bias, TensorSplit::Column, index, gate_factor * width, 1, false, mlps);
  if (s.mlp_bias || s.mlp_down_bias)
    b.add(TensorRole::RowBias, TensorSplit::Replicated, index, h, 1, false, mlps);
}

void add_mlp(const ModelSpec& s, const LayerSpec& layer, int index, GroupBuilder& b) {
  const std::int64_t h = s.hidden_size;
  const std::int64_t gate_factor = s.gated_mlp ? 2 : 1;
  if (!layer.moe || s.moe.dense_mlp_beside_experts) add_dense_mlp(s, layer, index, b);
  if (!layer.moe) return;
  const MoeSpec& m = s.moe;
  // The router scores the zero-computation experts too (LongCat-Flash), which hold no weights.
  const std::int64_t scored = static_cast<std::int64_t>(m.num_experts) + m.zero_experts;
  b.add(TensorRole::Router, TensorSplit::Replicated, index, scored, h, m.router_quantizable);
  if (m.router_bias) b.add(TensorRole::RowBias, TensorSplit::Replicated, index, scored, 1, false);
  b.add(TensorRole::ExpertGateUp, TensorSplit::Column, index, gate_factor * m.moe_intermediate_size,
        h, true, m.num_experts, 0, gate_up_modules(s));
  b.add(TensorRole::ExpertDown, TensorSplit::Row, index, h, m.moe_intermediate_size, true,
        m.num_experts);
  if (m.expert_bias) {
    b.add(TensorRole::Bias, TensorSplit::Column, index, gate_factor * m.moe_intermediate_size, 1,
          false, m.num_experts);
    b.add(TensorRole::RowBias, TensorSplit::Replicated, index, h, 1, false, m.num_experts);
  }
  if (m.num_shared_experts > 0) {
    const std::int64_t shared =
        static_cast<std::int64_t>(m.num_shared_experts) * m.shared_expert_intermediate_size;
    b.add(TensorRole::SharedExpertGateUp, TensorSplit::Column, index, gate_factor * shared, h, true,
          1, 0, gate_up_modules(s));
    b.add(TensorRole::SharedExpertDown, TensorSplit::Row, index, h, shared, true);
    if (m.shared_expert_gate)
      b.add(TensorRole::Router, TensorSplit::Replicated, index, 1, h, false);
  }
}

// Gemma-3n's per-layer AltUp (gemma3n.py Gemma3nAltUp: correction_coefs [n, n], prediction_coefs
// [n^2, n] and modality_router [n, hidden], ReplicatedLinears built with the quant config;
// router_norm and correct_output_scale [hidden], the latter a float32 Parameter counted here at
// the served dtype, hidden x 2 bytes a layer) and LAuReL block (Gemma3nLaurelBlock: linear_left
// column-parallel [rank, hidden], linear_right row-parallel [hidden, rank], post_laurel_norm).
void add_altup_laurel(const ModelSpec& s, int index, GroupBuilder& b) {
  const std::int64_t h = s.hidden_size;
  const std::int64_t n = s.altup_num_inputs;
  if (n > 0) {
    b.add(TensorRole::MlpDown, TensorSplit::Replicated, index, n, n, true);
    b.add(TensorRole::MlpDown, TensorSplit::Replicated, index, n * n, n, true);
    b.add(TensorRole::MlpDown, TensorSplit::Replicated, index, n, h, true);
    b.add(TensorRole::Norm, TensorSplit::Replicated, index, 2 * h, 1, false);
  }
  if (s.laurel_rank > 0) {
    b.add(TensorRole::MlpGateUp, TensorSplit::Column, index, s.laurel_rank, h, true);
    b.add(TensorRole::MlpDown, TensorSplit::Row, index, h, s.laurel_rank, true);
    b.add(TensorRole::Norm, TensorSplit::Replicated, index, h, 1, false);
  }
}

// Zamba2's shared transformer blocks (zamba2.py Zamba2AttentionDecoderLayer), held once each:
// input_layernorm [2h] and pre_ff_layernorm [h]; qkv_proj over the 2h-wide concatenation of the
// hidden states and the embeddings, num_attention_heads heads of head_dim for q, k and v alike
// (QKVParallelLinear given no KV head count); o_proj [h, 2h]; the gated MLP.
void add_shared_blocks(const ModelSpec& s, GroupBuilder& b) {
  const std::int64_t h = s.hidden_size;
  const std::int64_t in = 2 * h;
  const std::int64_t n = s.shared_blocks;
  const std::int64_t heads = s.num_attention_heads;
  const std::int64_t qkv = heads * s.head_dim;
  b.add(TensorRole::Norm, TensorSplit::Replicated, -1, in + h, 1, false, n);
  b.add(TensorRole::AttnQ, TensorSplit::Column, -1, qkv, in, true, n);
  b.add(TensorRole::AttnKV, TensorSplit::KvHeads, -1, 2 * qkv, in, true, n, heads, 2);
  b.add(TensorRole::AttnO, TensorSplit::Row, -1, h, qkv, true, n);
  // The checkpoint stores gate_up_proj fused (transformers' Zamba2MLP), q, k and v apart.
  b.add(TensorRole::MlpGateUp, TensorSplit::Column, -1, 2LL * s.intermediate_size, h, true, n);
  b.add(TensorRole::MlpDown, TensorSplit::Row, -1, h, s.intermediate_size, true, n);
}

// One use of a Zamba2 shared block (Zamba2HybridLayer): its own linear [h, h] (a
// ReplicatedLinear), the gate_up LoRA pair of its MLP (Zamba2LoRA: A a ColumnParallelLinear [rank,
// h], B a MergedColumnParallelLinear [2 x intermediate, rank]) and, with attention adapters, one
// pair on each of q, k and v over the 2h-wide input.
void add_shared_block_use(const ModelSpec& s, int index, GroupBuilder& b) {
  const std::int64_t h = s.hidden_size;
  const std::int64_t rank = s.shared_block_adapter_rank;
  b.add(TensorRole::MlpDown, TensorSplit::Replicated, index, h, h, true);
  b.add(TensorRole::MlpGateUp, TensorSplit::Column, index, rank, h, true);
  b.add(TensorRole::MlpGateUp, TensorSplit::Column, index, 2LL * s.intermediate_size, rank, true);
  if (s.shared_block_attention_adapters) {
    const std::int64_t qkv = static_cast<std::int64_t>(s.num_attention_heads) * s.head_dim;
    b.add(TensorRole::AttnQ, TensorSplit::Column, index, rank, 2 * h, true, 3);
    b.add(TensorRole::AttnQ, TensorSplit::Column, index, qkv, rank, true, 3);
  }
}

void add_layer(const ModelSpec& s, const LayerSpec& layer, int index, GroupBuilder& b) {
  if (s.shared_blocks > 0) {
    // Zamba2: every layer is a Mamba2 layer (one norm, the mixer); a full_attention layer also
    // runs a shared block, whose weights add_shared_blocks counts once.
    b.add(TensorRole::Norm, TensorSplit::Replicated, index, s.hidden_size, 1, false);
    add_mamba(s, index, b);
    if (layer.attention == AttentionKind::Full) add_shared_block_use(s, index, b);
    return;
  }
  const std::int64_t norms =
      s.norm_per_block ? (layer.attention != AttentionKind::None ? 1 : 0) + (layer.mlp ? 1 : 0)
                       : s.norms_per_layer;
  b.add(TensorRole::Norm, TensorSplit::Replicated, index, norms * s.hidden_size, 1, false);
  switch (layer.attention) {
    case AttentionKind::Full:
    case AttentionKind::SlidingWindow:
    case AttentionKind::ChunkedLocal:
      // MLA projections over a per-head KV cache (MlaSpec::latent_kv_cache false: MiniCPM3).
      if (s.has_mla) {
        add_mla(s, index, b);
      } else {
        add_attention(s, layer, index, b);
      }
      break;
    case AttentionKind::Mla:
      add_mla(s, index, b);
      break;
    case AttentionKind::Mamba:
      add_mamba(s, index, b);
      break;
    case AttentionKind::LinearAttention:
      add_linear_attention(s, index, b);
      break;
    case AttentionKind::CrossAttention:  // only ever beside a layer's own attention
    case AttentionKind::None:
      break;
  }
  if (layer.beside == AttentionKind::Mamba) add_mamba(s, index, b);  // Falcon-H1's parallel mixer
  if (layer.beside == AttentionKind::Mla) add_mla(s, index, b);  // LongCat-Flash's second attention
  // Whisper's encoder_attn (WhisperCrossAttention): q_proj, kv_proj over the encoder output of
  // hidden_size, out_proj, shaped and biased as the layer's self-attention.
  if (layer.beside == AttentionKind::CrossAttention) add_attention(s, layer, index, b);
  if (layer.beside == AttentionKind::SlidingWindow) {
    // IQuest-Coder-Loop's gate_projections: a biased ColumnParallelLinear [heads, hidden /
    // heads] a layer, mixing the second pass's windowed attention with the first's.
    const std::int64_t hq = s.num_attention_heads;
    b.add(TensorRole::AttnQ, TensorSplit::Column, index, hq, s.hidden_size / hq, true);
    b.add(TensorRole::Bias, TensorSplit::Column, index, hq, 1, false);
  }
  if (layer.mlp) add_mlp(s, layer, index, b);
  if (s.per_layer_input_size > 0) {
    // Gemma-4 per_layer_input_gate [size, hidden] and per_layer_projection [hidden, size]:
    // ReplicatedLinears built with the quant config.
    b.add(TensorRole::MlpDown, TensorSplit::Replicated, index, s.per_layer_input_size,
          s.hidden_size, true);
    b.add(TensorRole::MlpDown, TensorSplit::Replicated, index, s.hidden_size,
          s.per_layer_input_size, true);
  }
  if (s.altup_num_inputs > 0 || s.laurel_rank > 0) add_altup_laurel(s, index, b);
}

// Gemma-4 per-layer input embeddings: embed_tokens_per_layer (a VocabParallelEmbedding of
// layers x size columns), per_layer_model_projection (a ColumnParallelLinear hidden -> layers x
// size) and per_layer_projection_norm [size].
void add_per_layer_inputs(const ModelSpec& s, GroupBuilder& b) {
  const std::int64_t width =
      static_cast<std::int64_t>(s.num_hidden_layers) * s.per_layer_input_size;
  b.add(TensorRole::Embedding, TensorSplit::Vocab, -1, s.per_layer_input_vocab_size, width, false);
  b.add(TensorRole::MlpGateUp, TensorSplit::Column, -1, width, s.hidden_size, true);
  b.add(TensorRole::Norm, TensorSplit::Replicated, -1, s.per_layer_input_size, 1, false);
}

}  // namespace

std::vector<TensorGroup> model_tensor_groups(const ModelSpec& spec, bool include_mtp) {
  std::vector<TensorGroup> groups;
  groups.reserve(spec.layers.size() * 16 + 16);
  GroupBuilder b(groups);
  const std::int64_t h = spec.hidden_size;
  b.add(TensorRole::Embedding,
        spec.replicated_token_embedding ? TensorSplit::Replicated : TensorSplit::Vocab, -1,
        spec.vocab_size, h, false);
  if (spec.position_embeddings > 0) {
    b.add(TensorRole::Embedding, TensorSplit::Replicated, -1, spec.position_embeddings, h, false);
  }
  if (spec.per_layer_input_size > 0) add_per_layer_inputs(spec, b);
  if (spec.altup_num_inputs > 1) {
    // Gemma-3n's altup_projections and altup_unembed_projections: n - 1 ColumnParallelLinears
    // [hidden, hidden] each (gather_output).
    b.add(TensorRole::MlpGateUp, TensorSplit::Column, -1, h, h, true,
          2 * (static_cast<std::int64_t>(spec.altup_num_inputs) - 1));
  }
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    add_layer(spec, spec.layers[i], static_cast<int>(i), b);
  }
  if (spec.shared_blocks > 0) add_shared_blocks(spec, b);
  b.add(TensorRole::Norm, TensorSplit::Replicated, -1, h, 1, false);  // final norm
  if (!spec.tie_word_embeddings) {
    b.add(TensorRole::LmHead, TensorSplit::Vocab, -1, spec.vocab_size, h, false);
  }
  if (spec.vision.num_parameters > 0) {
    // vLLM builds the encoders (SigLIP, Llama-4 vision, Qwen-VL) from parallel Linears, so the
    // tower shards with TP like the decoder; its few replicated embeddings are neglected.
    b.add(TensorRole::Vision, TensorSplit::Column, -1, spec.vision.num_parameters, 1, false);
  }
  if (include_mtp && !spec.layers.empty()) {
    // DeepSeek-style MTP layer: one more decoder layer (shaped like the last one) plus
    // enorm/hnorm, eh_proj [h, 2h] and the shared head's norm; embeddings/lm_head shared.
    // vLLM builds eh_proj (DeepSeek, Kimi, GLM-4.5) and input_proj (MiMo) as a plain torch
    // nn.Linear, which no quantization method touches, so checkpoints store it in torch_dtype;
    // only Qwen3-Next / Qwen3.5 build theirs (fc) as a quantizable ColumnParallelLinear.
    const bool projection_quantizable =
        spec.model_type.rfind("qwen3_next", 0) == 0 || spec.model_type.rfind("qwen3_5", 0) == 0;
    b.set_mtp(true);
    for (int i = 0; i < spec.num_nextn_predict_layers; ++i) {
      const int index = static_cast<int>(spec.layers.size()) + i;
      add_layer(spec, spec.layers.back(), index, b);
      b.add(TensorRole::Norm, TensorSplit::Replicated, index, 3 * h, 1, false);
      b.add(TensorRole::MlpDown, TensorSplit::Replicated, index, h, 2 * h, projection_quantizable);
    }
  }
  return groups;
}

std::int64_t parameter_count(const ModelSpec& spec, bool include_mtp) {
  std::int64_t total = 0;
  for (const auto& g : model_tensor_groups(spec, include_mtp)) total += g.rows * g.cols * g.count;
  return total;
}

// Attention heads split evenly (vLLM's QKVParallelLinear); the state-space mixers as vLLM shards
// them: ShortConv's and Mamba-1's ColumnParallelLinear over their width (divide() asserts),
// MambaMixer2's heads, and its groups unless one group is replicated to every rank
// (mamba_mixer2.py's asserts).
std::optional<TensorParallelSplitProblem> tensor_parallel_split_problem(
    const ModelSpec& spec, std::int32_t tensor_parallel_size) {
  const std::int32_t tp = std::max(1, tensor_parallel_size);
  const auto problem = [](const char* field, std::int64_t value) {
    return TensorParallelSplitProblem{
        field, value,
        std::string(field).find("num_attention_heads") != std::string::npos
            ? "attention heads do not split evenly"
            : "the state-space mixer does not split evenly"};
  };
  if (spec.num_attention_heads % tp != 0) {
    return problem("num_attention_heads", spec.num_attention_heads);
  }
  for (const LayerSpec& layer : spec.layers) {
    if (layer.num_attention_heads % tp != 0) {
      return problem("layer_num_attention_heads", layer.num_attention_heads);
    }
  }
  if (spec.has_short_conv) {
    if (spec.short_conv.dim % tp != 0) return problem("short_conv.dim", spec.short_conv.dim);
  } else if (spec.has_mamba && spec.mamba.version == 1) {
    if (spec.mamba.intermediate_size % tp != 0) {
      return problem("mamba.intermediate_size", spec.mamba.intermediate_size);
    }
  } else if (spec.has_mamba) {
    if (spec.mamba.num_heads % tp != 0) return problem("mamba.num_heads", spec.mamba.num_heads);
    if (spec.mamba.n_groups != 1 && spec.mamba.n_groups % tp != 0) {
      return problem("mamba.n_groups (or 1)", spec.mamba.n_groups);
    }
  }
  return std::nullopt;
}

}  // namespace vramplan
