// What a checkpoint is: dimensions, per-layer attention geometry, MoE, optional Mamba /
// linear-attention mixers, towers and MTP layers, and the stored weight format. One schema
// for all sources (YAML database, config.json import, header readers).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vramplan/dtype.hpp"

namespace vramplan {

// How a decoder layer mixes tokens, which decides its KV-cache spec in vLLM.
enum class AttentionKind : std::uint8_t {
  Full,             // FullAttentionSpec
  SlidingWindow,    // SlidingWindowSpec, window = LayerSpec::sliding_window
  ChunkedLocal,     // ChunkedLocalAttentionSpec (Llama-4 local layers)
  Mla,              // MLAAttentionSpec: one latent of kv_lora_rank + qk_rope_head_dim
  Mamba,            // MambaSpec (Mamba-1 or Mamba2 state)
  LinearAttention,  // MambaSpec-like GatedDeltaNet state (Qwen3-Next)
  // CrossAttentionSpec: an encoder-decoder's attention to the encoder output (Whisper), a cache
  // filled once per request with the encoder's tokens, not growing with the request's own
  CrossAttention,
  None,  // no KV (MLP-only layer or a layer sharing another layer's KV)
};

const char* attention_kind_name(AttentionKind kind) noexcept;

struct LayerSpec {
  AttentionKind attention = AttentionKind::Full;
  bool mlp = true;                        // layer has an MLP (Nemotron-H mixer-only layers: false)
  bool moe = false;                       // MLP of this layer is routed experts
  std::int32_t num_key_value_heads = 0;   // total over TP
  std::int32_t head_dim = 0;              // K head size
  std::int32_t head_dim_v = 0;            // V head size (= head_dim unless the model differs)
  std::int32_t sliding_window = 0;        // tokens, SlidingWindow only
  std::int32_t attention_chunk_size = 0;  // tokens, ChunkedLocal only
  // Attends with the KV of an earlier layer (vLLM's kv_sharing_target_layer_name, Gemma-4's
  // last num_kv_shared_layers): no KV cache of its own, no k/v projections.
  bool kv_shared = false;
  std::int32_t intermediate_size = 0;  // dense MLP width of this layer; 0: the model's
  // A second cache the layer keeps beside its attention KV, which vLLM registers as a layer of
  // its own in the hybrid KV-cache manager: Mamba (Falcon-H1's Mamba2 mixer running in parallel
  // with the attention, with its weights), SlidingWindow (IQuest-Coder-Loop's second pass:
  // the same projections, its own KV of the layer's heads over beside_window tokens), or
  // CrossAttention (Whisper's encoder_attn: q/kv/o projections of the layer's shape, a KV of
  // the layer's heads over the encoder's beside_window output tokens).
  AttentionKind beside = AttentionKind::None;
  std::int32_t beside_window = 0;  // tokens, beside == SlidingWindow or CrossAttention only
  // Query heads where the layers' counts differ (Laguna's num_attention_heads_per_layer); 0: the
  // model's num_attention_heads.
  std::int32_t num_attention_heads = 0;
};

struct MlaSpec {
  std::int32_t q_lora_rank = 0;  // 0: q_proj is a plain column-parallel Linear
  std::int32_t kv_lora_rank = 0;
  std::int32_t qk_nope_head_dim = 0;
  std::int32_t qk_rope_head_dim = 0;
  std::int32_t v_head_dim = 0;
  // The KV cache holds the latent (MLAAttentionSpec, one kv_lora_rank + qk_rope_head_dim row a
  // token). false: the layers keep MLA's projections but cache K and V per head like standard
  // attention (vLLM's minicpm3.py: num_attention_heads KV heads of qk_nope + qk_rope dims, V
  // padded to that size); the layers are then full_attention layers.
  bool latent_kv_cache = true;
  // DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): every MLA layer also runs a lightning
  // indexer of index_n_heads x index_head_dim with its own key cache; 0 for dense MLA.
  std::int32_t index_head_dim = 0;
  std::int32_t index_n_heads = 0;
};

struct MoeSpec {
  std::int32_t num_experts = 0;
  std::int32_t num_experts_per_tok = 0;
  std::int32_t moe_intermediate_size = 0;
  std::int32_t num_shared_experts = 0;               // each of shared_expert_intermediate_size
  std::int32_t shared_expert_intermediate_size = 0;  // per shared expert
  bool shared_expert_gate = false;                   // Qwen2-MoE style sigmoid gate [1, hidden]
  bool expert_bias = false;                          // gpt-oss: biases on expert projections
  bool router_bias = false;
  bool router_quantizable = false;  // vLLM passes quant_config to the router Linear
  // The MoE layer keeps its dense MLP beside the experts (Gemma-4: both run, outputs summed).
  bool dense_mlp_beside_experts = false;
  // Zero-computation experts the router also scores (LongCat-Flash's zero_expert_num): router
  // rows and router-bias entries, no expert weights.
  std::int32_t zero_experts = 0;
};

// A Mamba mixer. Version 2 (Nemotron-H, Granite-4): vLLM's MambaMixer2, in_proj, conv1d,
// A/D/dt, gated norm, out_proj; state per head. Version 1 (Jamba, Mamba, FalconMamba): vLLM's
// MambaMixer, in_proj, conv1d, x_proj, dt_proj, A_log, D, out_proj; state per channel.
struct MambaSpec {
  std::int32_t version = 2;
  std::int32_t num_heads = 0;  // Mamba2 only
  std::int32_t head_dim = 0;   // Mamba2 only
  std::int32_t state_size = 0;
  std::int32_t n_groups = 1;  // Mamba2 only
  std::int32_t conv_kernel = 4;
  // The SSM state's dtype under --mamba-ssm-cache-dtype auto: the model's override (Nemotron-H's
  // float32), or nullopt (spec "auto") for the conv state's dtype, vLLM's rule without one.
  std::optional<DType> ssm_state_dtype = DType::F32;
  // Mamba-1 only: d_inner (expand x hidden), dt_rank, the conv1d and in/out_proj biases, and
  // the RMSNorms on dt, B and C (Jamba: with weights; FalconMamba: without; Mamba: none).
  std::int32_t intermediate_size = 0;
  std::int32_t time_step_rank = 0;
  bool conv_bias = true;
  bool proj_bias = false;
  bool dt_bc_norm_weights = false;
  // Mamba2 only: the gated RMSNorm's weight [inner] (vLLM's Mixer2RMSNormGated registers none
  // under use_rms_norm false: Falcon-H1's mamba_rms_norm).
  bool gated_norm = true;
};

// vLLM's ShortConv (LFM2's conv layers, layers/mamba/short_conv.py): in_proj [3 x dim, hidden]
// into gates B, C and x, a depthwise conv of conv_kernel taps (config conv_L_cache) over B * x,
// C times the result, out_proj [hidden, dim]. Its layers are AttentionKind::Mamba layers (vLLM
// sizes them with a MambaSpec): the state is the conv's alone, dim / TP x (conv_kernel - 1) in
// the conv state's dtype.
struct ShortConvSpec {
  std::int32_t dim = 0;
  std::int32_t conv_kernel = 3;
  bool bias = false;  // conv, in_proj and out_proj biases
};

// Gated DeltaNet linear attention (Qwen3-Next): state (Hv, dv, dk) and a conv over q/k/v.
struct LinearAttentionSpec {
  std::int32_t num_key_heads = 0;
  std::int32_t key_head_dim = 0;
  std::int32_t num_value_heads = 0;
  std::int32_t value_head_dim = 0;
  std::int32_t conv_kernel = 4;
  // The config's SSM state dtype (Qwen3.5 / 3.6 `mamba_ssm_dtype`, which vLLM's
  // Qwen3_5ForConditionalGenerationConfig copies into an unset --mamba-ssm-cache-dtype);
  // nullopt: the conv state's dtype.
  std::optional<DType> ssm_state_dtype;
  // Kimi Delta Attention (vLLM's KimiGatedDeltaNetAttention, Kimi-Linear) instead of Gated
  // DeltaNet: num_key_heads x key_head_dim = num_value_heads x value_head_dim = the projection,
  // separate q/k/v projections and low-rank (head_dim) f and g gates; the same state shapes.
  bool kimi_delta = false;
};

// Vision/audio encoder and projector, counted by parameters (stored unquantized), and what
// vLLM's startup profile of it needs (GPUModelRunner.profile_run runs the encoder on a batch of
// dummy images of the processor's largest size and keeps the outputs in the encoder cache).
// image_tokens_per_item 0: the profile facts are unknown for this model.
// Which MRotaryEmbedding a model builds: the standard one (Qwen2-VL, Qwen2.5-VL) or the one
// whose cache follows video pruning from 0.32 (Qwen3-VL, Qwen3-VL-MoE, Qwen3.5).
enum class MropeKind : std::uint8_t { None, Standard, Qwen3Vl };

// A vision tower's attention as vLLM writes it: Qwen2-VL's (q/k/v split, all-gathered over TP
// in every release) or Qwen2.5-VL's (also Qwen3-VL's and Qwen3.5's, gathered only until the
// fused q/k rotary of 0.12).
enum class EncoderAttention : std::uint8_t { Unmodelled, Qwen2Vl, Qwen25Vl };

struct TowerSpec {
  std::int64_t num_parameters = 0;
  // The modality vLLM profiles through this tower: "image", or "audio" for an audio-only model
  // (Qwen2-Audio), whose encoder profile is not modelled.
  std::string modality = "image";
  // Of num_parameters, an audio encoder's beside the vision tower (Qwen2.5-Omni): vLLM builds
  // each tower only while one of its modalities is enabled.
  std::int64_t audio_parameters = 0;
  std::int64_t image_tokens_per_item = 0;    // LM embeddings of one largest image
  std::int64_t encoder_tokens_per_item = 0;  // tokens the encoder runs per image (patches, CLS)
  std::int64_t pixel_values_per_item = 0;    // elements of one image's pixel_values
  std::int32_t encoder_hidden_size = 0;
  std::int32_t encoder_intermediate_size = 0;
  bool encoder_gated_mlp = false;  // SwiGLU MLP (Qwen2.5-VL) vs fc1/fc2
  // The encoder's attention whose temporaries the profile counts (engines.yaml
  // vit_rotary_attention says how a release lays them out); Unmodelled: the MLP's peak only.
  EncoderAttention encoder_attention = EncoderAttention::Unmodelled;
  // Modalities vLLM also accepts for this model whose profile is not modelled (Qwen-VL video).
  std::vector<std::string> unmodelled_modalities;
  // vLLM builds it whatever --limit-mm-per-prompt allows (Gemma-4 Unified's embedders, outside
  // _mark_tower_model): its parameters count with every modality off.
  bool always_built = false;
};

enum class QuantMethod : std::uint8_t {
  None,         // weights stored in torch_dtype
  Fp8,          // serialized or online fp8 (strategy below)
  Int8,         // compressed-tensors W8A8 int8
  Awq,          // AWQ GEMM 4-bit
  Gptq,         // GPTQ (AutoGPTQ / GPTQModel)
  PackedWNA16,  // compressed-tensors pack-quantized W4A16/W8A16
  BnbNf4,       // bitsandbytes 4-bit
  BnbInt8,      // bitsandbytes LLM.int8
  Mxfp4,        // gpt-oss experts
  Nvfp4,        // ModelOpt / compressed-tensors NVFP4
  Gguf,         // llama.cpp block types per tensor role
};

const char* quant_method_name(QuantMethod method) noexcept;

enum class ScaleStrategy : std::uint8_t { Tensor, Channel, Block };

struct QuantSpec {
  QuantMethod method = QuantMethod::None;
  std::int32_t bits = 16;
  std::int32_t group_size = 128;  // -1: one group over the whole input dim
  bool desc_act = false;          // GPTQ act-order (g_idx used)
  bool sym = true;
  ScaleStrategy scale_strategy = ScaleStrategy::Tensor;  // fp8 / int8
  std::int32_t block_n = 128;                            // Block strategy
  std::int32_t block_k = 128;
  bool static_activation_scale = false;  // input_scale stored
  // fp8 / int8 weight and input scales stored in torch_dtype (compressed-tensors keeps the
  // observed weight's dtype) instead of float32 (vLLM fp8, AutoFP8, ModelOpt); checkpoint only:
  // vLLM loads them into float32 parameters.
  bool scales_in_torch_dtype = false;
  bool double_quant = true;  // bitsandbytes nested absmax in the checkpoint
  bool online = false;       // quantized at load from a 16-bit checkpoint
  // Tensor roles left in torch_dtype (names as tensor_role_name, e.g. "lm_head", "router").
  std::vector<std::string> unquantized_roles;
  // Decoder layers where a role is kept in torch_dtype while the other layers quantize it (a
  // skip list naming model.layers.0.self_attn or model.layers.3.mlp.down_proj): role name ->
  // layer indices, ascending.
  std::map<std::string, std::vector<std::int32_t>, std::less<>> unquantized_layers;
  // Tensor roles stored in per-tensor fp8 with a static input scale (ModelOpt FP8 layout) while
  // `method` covers the rest: ModelOpt MIXED_PRECISION checkpoints (FP8 attention, NVFP4 MLP).
  std::vector<std::string> fp8_roles;
  // NVFP4 roles stored weight-only (ModelOpt W4A16_NVFP4): no input_scale per module, in the
  // checkpoint or on the GPU (vLLM's W4A16 linear method registers none; routed experts keep
  // theirs, so expert roles are never listed).
  std::vector<std::string> nvfp4_weight_only_roles;
  // The lm_head stored in `method` (ModelOpt MIXED_PRECISION may list it; vLLM 0.33 builds the
  // ParallelLMHead with that layer's algorithm) instead of torch_dtype.
  bool quantized_lm_head = false;
  // Expert matrices rounded up at load by the MoE kernel backend (the engine sets these from
  // the GPU: MXFP4 under Marlin pads H to 256 and I to 128); 1 = no padding.
  std::int32_t expert_hidden_multiple = 1;
  std::int32_t expert_intermediate_multiple = 1;
  // GGUF: block type per tensor role ("default" covers every role not listed).
  std::map<std::string, DType> gguf_types;
};

struct ModelSpec {
  std::string id;                    // canonical database id, e.g. "meta-llama/Llama-3.1-8B"
  std::vector<std::string> aliases;  // other HF ids that resolve to this spec
  std::string source;                // file the spec was read from
  std::string model_type;            // HF model_type / family, e.g. "llama"
  // Keys the config.json omits that took their config class's default, as transformers fills
  // them when vLLM loads the config ("text_config.hidden_size = 4096 (LlamaConfig)").
  std::vector<std::string> config_defaults;
  // Set when the config's model_type has no row in the architecture table and the importer
  // planned it as a standard decoder from transformers' standard fields: what it assumed
  // ("full attention on every layer", ...). Empty for a mapped family.
  std::vector<std::string> generic_assumptions;

  std::int32_t hidden_size = 0;
  std::int32_t num_hidden_layers = 0;
  std::int32_t num_attention_heads = 0;
  std::int32_t num_key_value_heads = 0;
  std::int32_t head_dim = 0;
  std::int32_t intermediate_size = 0;  // dense MLP width
  std::int32_t vocab_size = 0;
  std::int64_t max_position_embeddings = 0;
  // The config names none of vLLM's context keys: max_position_embeddings is the 2048 vLLM
  // assumes, and vLLM serves any --max-model-len given (_get_and_verify_max_len returns it).
  bool max_position_embeddings_assumed = false;
  bool tie_word_embeddings = false;
  DType torch_dtype = DType::BF16;

  bool gated_mlp = true;  // gate+up+down (SwiGLU/GeGLU) vs up+down
  bool qkv_bias = false;
  bool o_proj_bias = false;
  bool mlp_bias = false;
  // down_proj alone has a bias (TeleChat2: vLLM builds the MLP biased, then removes gate_up's).
  bool mlp_down_bias = false;
  bool qk_norm = false;           // per-head q/k RMSNorm weights (Qwen3, Gemma-3)
  bool attention_sinks = false;   // per-head sink logits (gpt-oss)
  bool attn_output_gate = false;  // q_proj also emits a gate of Hq*head_dim (Qwen3-Next)
  bool attn_head_gate = false;    // g_proj [Hq, hidden]: one output gate a query head (Laguna)
  // Step3's low-rank shared query (step3_text.py): q, k and v from one replicated qkv_proj
  // [share_q_dim + 2 x Hkv x head_dim, hidden], the query through an RMSNorm [share_q_dim] and a
  // column-parallel wq [Hq x head_dim, share_q_dim]; 0: q_proj [Hq x head_dim, hidden].
  std::int32_t share_q_dim = 0;
  std::int32_t norms_per_layer = 2;
  // Dense MLPs of the layer's width each layer builds (LongCat-Flash: 2, one after each of its
  // two attention sublayers).
  std::int32_t dense_mlps_per_layer = 1;
  // One norm before each block a layer has (attention, MLP) instead of norms_per_layer (DeciLM's
  // no-op blocks have none).
  bool norm_per_block = false;
  // Per-layer input embeddings (Gemma-4 E-variants' hidden_size_per_layer_input): a table of
  // per_layer_input_vocab_size x (layers x per_layer_input_size), a hidden -> layers x size
  // projection, and per layer a gate [size, hidden] and a projection [hidden, size]. 0: none.
  std::int32_t per_layer_input_size = 0;
  std::int32_t per_layer_input_vocab_size = 0;
  // Gemma-3n's AltUp (altup_num_inputs n > 0): per layer correction_coefs [n, n],
  // prediction_coefs [n^2, n] and modality_router [n, hidden] (replicated Linears), router_norm
  // and correct_output_scale [hidden]; per model 2 x (n - 1) ColumnParallelLinears [hidden,
  // hidden] (altup_projections, altup_unembed_projections). 0: none.
  std::int32_t altup_num_inputs = 0;
  // Gemma-3n's LAuReL block per layer (laurel_rank r > 0): linear_left [r, hidden] (column),
  // linear_right [hidden, r] (row), post_laurel_norm [hidden]. 0: none.
  std::int32_t laurel_rank = 0;
  // Zamba2's shared transformer blocks (zamba2.py, shared_blocks n > 0): every full_attention
  // layer runs one of n blocks, reused round-robin, whose weights are held once: per block an
  // input norm [2 x hidden], q/k/v [3 x 2 x hidden, 2 x hidden], o_proj [hidden, 2 x hidden], a
  // norm [hidden] and a gated MLP of intermediate_size. Each use (each such layer) has its own
  // projection [hidden, hidden] (replicated), a LoRA pair on gate_up (A [rank, hidden], B
  // [2 x intermediate, rank]) and, with shared_block_attention_adapters, one on each of q, k and
  // v (A [rank, 2 x hidden], B [2 x hidden, rank]), rank shared_block_adapter_rank. 0: none.
  std::int32_t shared_blocks = 0;
  std::int32_t shared_block_adapter_rank = 0;
  bool shared_block_attention_adapters = false;
  // Rows of a learned absolute position table, hidden_size wide, that vLLM builds as a plain
  // (replicated, unquantized) nn.Embedding: GPT-2's wpe, OPT's embed_positions. 0: none.
  std::int32_t position_embeddings = 0;
  // The token embedding is a plain nn.Embedding, whole on every TP rank and unpadded (Whisper's
  // embed_tokens), instead of a VocabParallelEmbedding (rows padded to 64, split over TP).
  bool replicated_token_embedding = false;
  std::int32_t rotary_dim = 0;  // 0: head_dim (partial rotary models set it)
  // Positions vLLM's cos/sin caches hold together (0: max_position_embeddings): one cache per
  // distinct rope, linear scaling caching max_position_embeddings x its factor.
  std::int64_t rotary_cache_positions = 0;
  // Multimodal rotary embedding (rope settings with mrope_section): vLLM's MRotaryEmbedding
  // keeps a cos/sin cache for more positions than max_position_embeddings, by a factor per
  // release and family (engines.yaml mrope_cache_positions_factor).
  MropeKind mrope = MropeKind::None;

  std::vector<LayerSpec> layers;  // expanded, size num_hidden_layers
  bool has_mla = false;
  MlaSpec mla;
  bool has_moe = false;
  MoeSpec moe;
  bool has_mamba = false;
  MambaSpec mamba;
  bool has_linear_attention = false;
  LinearAttentionSpec linear_attention;
  bool has_short_conv = false;  // the mamba layers are ShortConv mixers (no `mamba` block)
  ShortConvSpec short_conv;
  TowerSpec vision;                           // num_parameters 0: text-only
  std::int32_t num_nextn_predict_layers = 0;  // MTP layers shipped in the checkpoint
  QuantSpec quantization;
  // Exact stored bytes of the checkpoint's tensors when its headers were read (0: unknown).
  // Bytes the spec's tensors do not explain are spread over ranks like the layers.
  std::int64_t checkpoint_bytes = 0;
};

// Role of a weight tensor: decides how TP splits it and whether a format quantizes it.
enum class TensorRole : std::uint8_t {
  Embedding,
  LmHead,
  AttnQ,
  AttnKV,
  AttnO,
  MlaQA,   // q_a_proj (replicated)
  MlaQB,   // q_b_proj (column)
  MlaKVA,  // kv_a_proj_with_mqa (replicated)
  MlaKVB,  // kv_b_proj (column)
  MlpGateUp,
  MlpDown,
  ExpertGateUp,
  ExpertDown,
  SharedExpertGateUp,
  SharedExpertDown,
  Router,
  MixerIn,     // Mamba / linear-attention input projection (column)
  MixerInBA,   // linear-attention in_proj_ba (the b and a gates; a separate Linear in vLLM)
  MixerOut,    // Mamba / linear-attention output projection (row)
  MixerSmall,  // conv1d, A_log, D, dt_bias, gated norm: column-split small tensors
  Norm,        // replicated RMSNorm / LayerNorm weights, sinks
  Bias,        // column-split biases
  RowBias,     // replicated biases of row-parallel layers
  Vision,
};

const char* tensor_role_name(TensorRole role) noexcept;

enum class TensorSplit : std::uint8_t {
  Replicated,
  Column,   // output dim divided by TP
  Row,      // input dim divided by TP
  Vocab,    // rows padded to 64 then divided by TP
  KvHeads,  // output dim = 2 * max(1, Hkv / TP) * head_dim (heads replicated past Hkv)
};

// A group of identical logical Linear/parameter tensors [rows, cols] (rows = out features).
struct TensorGroup {
  TensorRole role;
  TensorSplit split;
  std::int32_t layer;  // decoder layer index, -1 for model-level tensors
  std::int64_t rows;   // full (TP=1) out features
  std::int64_t cols;   // full in features (1 for vectors)
  std::int64_t count;  // stacked copies (experts)
  std::int64_t heads;  // KvHeads split: KV heads in `rows` (rows / heads per head); else 0
  bool is_linear;      // a Linear weight a quantization method may quantize
  bool mtp = false;    // part of an MTP (next-token prediction) layer
  // Linear modules a checkpoint stores for one copy (k_proj and v_proj, gate_proj and up_proj:
  // 2), each with its own per-module tensors (GPTQ g_idx, per-tensor scales, NVFP4 globals).
  std::int32_t modules = 1;
};

// The model's weight tensors as vLLM builds them (no MTP layers unless asked).
std::vector<TensorGroup> model_tensor_groups(const ModelSpec& spec, bool include_mtp = false);

// Logical parameter count (TP=1, no padding), tied embeddings counted once.
std::int64_t parameter_count(const ModelSpec& spec, bool include_mtp = false);

// What does not split over `tensor_parallel_size` GPUs as vLLM shards the model: the field, its
// value and why; nullopt when every layer splits.
struct TensorParallelSplitProblem {
  std::string field;
  std::int64_t value = 0;
  std::string why;
};
std::optional<TensorParallelSplitProblem> tensor_parallel_split_problem(
    const ModelSpec& spec, std::int32_t tensor_parallel_size);

}  // namespace vramplan
