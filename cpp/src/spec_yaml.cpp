// The YAML schema for model and GPU specs: one key table (kSchema) drives validation,
// error messages and the generated documentation.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "vramplan/bounded_read.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"
#include "vramplan/utf8.hpp"
#include "yaml_load.hpp"

namespace vramplan {
namespace {

constexpr std::int64_t kMaxSpecFileBytes = 1 << 20;  // specs are tiny; refuse anything huge
// Token counts fit int32, as the knobs' do (max_model_len), so tokens x bytes per token fits
// int64: the widths below keep a KV token under 2^32 bytes (4096 layers x 256 KV heads x
// (512 + 512) dims x 4 bytes).
constexpr std::int64_t kMaxTokens = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kMaxHeadDim = std::int64_t{1} << 9;

// clang-format off
const std::vector<SchemaKey> kSchema = {
  {"model", "id", "string", true, "Canonical id, usually the Hugging Face repo id."},
  {"model", "aliases", "list[string]", false, "Other HF ids that resolve to this spec (fine-tunes with identical shapes, mirrors)."},
  {"model", "source", "string", false, "Where the numbers come from (config.json copy, model card)."},
  {"model", "config_defaults", "list[string]", false, "Keys the config.json omits that took their config class's default (\"text_config.hidden_size = 4096 (LlamaConfig)\"), as transformers fills them when vLLM loads the config; written by the config.json importer."},
  {"model", "generic_assumptions", "list[string]", false, "Set by the config.json importer when the model_type has no row in the architecture table: what the generic path assumed to plan it as a standard decoder (every plan says so)."},
  {"model", "model_type", "string", true, "HF model_type (llama, qwen3, gemma2, deepseek_v2, ...)."},
  {"model", "hidden_size", "int", true, "Residual width.", std::int64_t{1} << 17},
  {"model", "num_hidden_layers", "int", true, "Decoder layers (MTP layers excluded).", 4096},
  {"model", "num_attention_heads", "int", false, "Query heads; required unless every layer is a mamba / linear_attention / mlp_only layer (attention-free).", std::int64_t{1} << 8},
  {"model", "num_key_value_heads", "int", false, "KV heads (GQA/MQA); default num_attention_heads.", std::int64_t{1} << 8},
  {"model", "head_dim", "int", false, "Per-head size; default hidden_size / num_attention_heads.", kMaxHeadDim},
  {"model", "head_dim_v", "int", false, "V head size where it differs from head_dim.", kMaxHeadDim},
  {"model", "intermediate_size", "int", true, "Dense MLP width (used by dense layers of MoE models too).", std::int64_t{1} << 20},
  {"model", "vocab_size", "int", true, "Vocabulary rows of embed_tokens / lm_head.", std::int64_t{1} << 22},
  {"model", "max_position_embeddings", "int", true, "Model's maximum context (after rope scaling, as vLLM derives max_model_len).", kMaxTokens},
  {"model", "max_position_embeddings_assumed", "bool", false, "The config names no context key (Mamba): max_position_embeddings is vLLM's assumed 2048, the default context, and any --max-model-len is served. Set by the config.json importer."},
  {"model", "tie_word_embeddings", "bool", false, "lm_head shares the embedding tensor. Default false."},
  {"model", "torch_dtype", "dtype", true, "Stored dtype of unquantized tensors (bfloat16, float16, float32)."},
  {"model", "mlp", "string", false, "gated (gate+up+down, default) or plain (up+down)."},
  {"model", "qkv_bias", "bool", false, "q/k/v projections have biases (Qwen2)."},
  {"model", "o_proj_bias", "bool", false, "o_proj has a bias."},
  {"model", "mlp_bias", "bool", false, "MLP projections have biases."},
  {"model", "mlp_down_bias", "bool", false, "down_proj alone has a bias, gate/up none (TeleChat2)."},
  {"model", "qk_norm", "bool", false, "Per-head q/k RMSNorm weights (Qwen3, Gemma-3)."},
  {"model", "attention_sinks", "bool", false, "Per-head attention sink logits (gpt-oss)."},
  {"model", "attn_output_gate", "bool", false, "q_proj also emits an output gate (Qwen3-Next)."},
  {"model", "attn_head_gate", "bool", false, "Every attention layer has a g_proj [heads, hidden_size]: one output gate a query head (Laguna)."},
  {"model", "share_q_dim", "int", false, "Step3's low-rank shared query: a replicated qkv_proj [share_q_dim + 2 x KV heads x head_dim, hidden_size], an RMSNorm [share_q_dim] and a column-parallel wq [heads x head_dim, share_q_dim] instead of q_proj; 0: none.", std::int64_t{1} << 16},
  {"model", "norms_per_layer", "int", false, "hidden_size-wide norms per layer; default 2 (Gemma-2/3: 4).", 16},
  {"model", "position_embeddings", "int", false, "Rows of a learned absolute position table (GPT-2 wpe, OPT embed_positions), replicated and unquantized; 0: none.", kMaxTokens},
  {"model", "replicated_token_embedding", "bool", false, "The token embedding is a plain nn.Embedding held whole and unpadded on every tensor-parallel rank (Whisper's embed_tokens) instead of a VocabParallelEmbedding (rows padded to 64, split over TP)."},
  {"model", "rotary_dim", "int", false, "Rotated dims per head; default head_dim (MLA: qk_rope_head_dim).", std::int64_t{1} << 9},
  {"model", "rotary_cache_positions", "int", false, "Positions vLLM's cos/sin caches hold together; default max_position_embeddings (linear rope scaling: x its factor; Gemma-3: + an unscaled sliding-layer rope).", std::int64_t{1} << 36},
  {"model", "mrope", "string", false, "Multimodal rotary embedding (rope settings with mrope_section): standard (Qwen2-VL, Qwen2.5-VL) or qwen3_vl (Qwen3-VL, Qwen3.5); vLLM's cos/sin cache then covers more positions (engines.yaml mrope_cache_positions_factor)."},
  {"model", "sliding_window", "int", false, "Window of sliding_attention layers, tokens.", kMaxTokens},
  {"model", "attention_chunk_size", "int", false, "Chunk of chunked_attention layers, tokens (Llama-4).", kMaxTokens},
  {"model", "layer_types", "list[string]", false, "Per-layer kind, num_hidden_layers long: full_attention, sliding_attention, chunked_attention, mla, mamba, linear_attention, mlp_only."},
  {"model", "layer_num_key_value_heads", "list[int]", false, "Per-layer KV heads, num_hidden_layers long, where layers differ (DeciLM / Nemotron-NAS: heads / n_heads_in_group); 0 for a layer without attention.", std::int64_t{1} << 8},
  {"model", "layer_num_attention_heads", "list[int]", false, "Per-layer query heads, num_hidden_layers long, where layers differ (Laguna num_attention_heads_per_layer); each a multiple of the layer's KV heads.", std::int64_t{1} << 8},
  {"model", "layer_intermediate_sizes", "list[int]", false, "Per-layer dense MLP width, num_hidden_layers long, where layers differ (DeciLM / Nemotron-NAS); 0: the layer has no MLP.", std::int64_t{1} << 20},
  {"model", "norm_per_block", "bool", false, "One hidden_size-wide norm before each block a layer has (attention, MLP) instead of norms_per_layer (DeciLM / Nemotron-NAS, whose no-op blocks have none)."},
  {"model", "layer_pattern", "list[string]", false, "Like layer_types, repeated cyclically (Gemma-3: 5 x sliding_attention, full_attention)."},
  {"model", "hybrid_override_pattern", "string", false, "Nemotron-H pattern: M = Mamba2 mixer only, * = attention only, - = MLP only, E = MoE only."},
  {"model", "full_attention_head_dim", "int", false, "Head size of full_attention layers where it differs from head_dim (Gemma-4 global_head_dim).", kMaxHeadDim},
  {"model", "full_attention_num_key_value_heads", "int", false, "KV heads of full_attention layers where they differ (Gemma-4 num_global_key_value_heads).", std::int64_t{1} << 8},
  {"model", "mamba_beside_attention", "bool", false, "Every attention layer also runs a Mamba2 mixer side by side, with its own weights and state (Falcon-H1); needs a mamba: block."},
  {"model", "dual_mla", "bool", false, "Every MLA layer runs a second MLA attention with its own weights and latent cache beside the first (LongCat-Flash's two attention sublayers); needs an mla: block."},
  {"model", "dense_mlps_per_layer", "int", false, "Dense MLPs of the layer's width each layer builds (LongCat-Flash: 2, one after each attention sublayer); default 1.", 8},
  {"model", "loop_window", "int", false, "Every attention layer also keeps a second KV cache of its heads over the last loop_window tokens, and a gate [heads, hidden / heads] + bias (IQuest-Coder-Loop's second pass); 0: none.", kMaxTokens},
  {"model", "cross_attention_encoder_tokens", "int", false, "Every full_attention layer also attends to the encoder's output (an encoder-decoder's cross-attention, Whisper's encoder_attn): q/kv/o projections shaped and biased as its self-attention, and a KV cache of its heads that each request fills once with this many encoder tokens (Whisper: max_source_positions), which vLLM's startup check and concurrency size by the encoder budget, max_num_batched_tokens; 0: none.", kMaxTokens},
  {"model", "num_kv_shared_layers", "int", false, "The last n layers attend with the KV of the last earlier layer of their kind: no KV cache, q/o projections only (Gemma-4). Below num_hidden_layers.", 4095},
  {"model", "kv_shared_double_wide_mlp", "bool", false, "The KV-shared layers' MLP is 2 x intermediate_size (Gemma-4 use_double_wide_mlp)."},
  {"model", "per_layer_input_size", "int", false, "Per-layer input embedding width (Gemma-4 hidden_size_per_layer_input); 0: none.", std::int64_t{1} << 12},
  {"model", "per_layer_input_vocab_size", "int", false, "Rows of the per-layer input embedding table; default vocab_size.", std::int64_t{1} << 22},
  {"model", "altup_num_inputs", "int", false, "Gemma-3n AltUp streams n: per layer correction [n, n], prediction [n^2, n] and router [n, hidden_size] coefficients and two hidden_size vectors; per model 2 x (n - 1) hidden_size x hidden_size projections. 0: none.", 64},
  {"model", "laurel_rank", "int", false, "Gemma-3n LAuReL rank r: per layer [r, hidden_size] and [hidden_size, r] projections and a norm. 0: none.", std::int64_t{1} << 14},
  {"model", "shared_blocks", "int", false, "Zamba2 num_mem_blocks n: every full_attention layer runs one of n shared transformer blocks (weights held once: a 2 x hidden_size input norm, q/k/v and o_proj over 2 x hidden_size, a norm and a gated MLP) and adds its own hidden_size x hidden_size projection and LoRA adapters; 0: none.", 64},
  {"model", "shared_block_adapter_rank", "int", false, "Zamba2 adapter_rank: the rank of each use's LoRA adapters on the shared block's gate_up (and q/k/v with shared_block_attention_adapters); needs shared_blocks.", std::int64_t{1} << 14},
  {"model", "shared_block_attention_adapters", "bool", false, "Zamba2 use_shared_attention_adapter: each use also has LoRA adapters on q, k and v of the shared block; needs shared_blocks."},
  {"model", "mla", "map", false, "Multi-head latent attention geometry (DeepSeek V2/V3); makes every attention layer MLA."},
  {"model", "short_conv", "map", false, "vLLM's ShortConv mixer (LFM2): its mamba layers are gated depthwise convs whose state is the conv's alone; excludes a mamba: block."},
  {"model", "moe", "map", false, "Routed experts."},
  {"model", "mamba", "map", false, "Mamba mixer geometry (Mamba2, or Mamba-1 with version 1)."},
  {"model", "linear_attention", "map", false, "Gated DeltaNet geometry (Qwen3-Next)."},
  {"model", "vision", "map", false, "Vision/audio tower and projector."},
  {"model", "num_nextn_predict_layers", "int", false, "MTP layers shipped in the checkpoint (DeepSeek-V3: 1).", 16},
  {"model", "quantization", "map", false, "Stored weight format; absent = torch_dtype."},
  {"mla", "q_lora_rank", "int", false, "0 or absent: plain q_proj (DeepSeek-V2-Lite).", std::int64_t{1} << 14},
  {"mla", "kv_lora_rank", "int", true, "Latent KV width (512).", std::int64_t{1} << 12},
  {"mla", "qk_nope_head_dim", "int", true, "Non-rotary q/k head dims (128).", std::int64_t{1} << 10},
  {"mla", "qk_rope_head_dim", "int", true, "Rotary q/k head dims (64); cached beside the latent.", std::int64_t{1} << 10},
  {"mla", "v_head_dim", "int", true, "V head dims (128).", std::int64_t{1} << 10},
  {"mla", "latent_kv_cache", "bool", false, "Default true: the KV cache holds the latent. false (MiniCPM3): the attention layers keep the MLA projections but cache K and V per head (num_key_value_heads x head_dim), as full_attention layers."},
  {"mla", "index_head_dim", "int", false, "DeepSeek sparse attention: the lightning indexer's head size (128), whose key cache every MLA layer keeps; 0 or absent: dense MLA.", std::int64_t{1} << 10},
  {"mla", "index_n_heads", "int", false, "DeepSeek sparse attention: the indexer's query heads (DeepSeek-V3.2 64, GLM-5 32); read with index_head_dim.", std::int64_t{1} << 10},
  {"moe", "num_experts", "int", true, "Routed experts per MoE layer.", std::int64_t{1} << 13},
  {"moe", "num_experts_per_tok", "int", true, "Experts each token is routed to (top-k).", std::int64_t{1} << 8},
  {"moe", "moe_intermediate_size", "int", true, "Width of one routed expert.", std::int64_t{1} << 18},
  {"moe", "num_shared_experts", "int", false, "Always-on shared experts. Default 0.", std::int64_t{1} << 6},
  {"moe", "shared_expert_intermediate_size", "int", false, "Width of one shared expert; default moe_intermediate_size.", std::int64_t{1} << 20},
  {"moe", "shared_expert_gate", "bool", false, "Sigmoid gate on the shared expert (Qwen2-MoE)."},
  {"moe", "expert_bias", "bool", false, "Expert projections have biases (gpt-oss)."},
  {"moe", "router_bias", "bool", false, "Router has a bias (gpt-oss)."},
  {"moe", "router_quantizable", "bool", false, "vLLM hands the router the quant config (Qwen3-MoE true; Mixtral, DeepSeek false)."},
  {"moe", "first_k_dense", "int", false, "The first k layers use a dense MLP (DeepSeek first_k_dense_replace).", 4096},
  {"moe", "moe_layer_step", "int", false, "Every n-th layer is MoE (decoder_sparse_step / interleave_moe_layer_step). Default 1.", 4096},
  {"moe", "dense_layers", "list[int]", false, "Explicit dense-MLP layers (mlp_only_layers).", 4095},
  {"moe", "dense_mlp_beside_experts", "bool", false, "MoE layers keep their dense MLP of intermediate_size beside the experts (Gemma-4)."},
  {"moe", "zero_experts", "int", false, "Zero-computation experts the router also scores (LongCat-Flash zero_expert_num): router rows and router-bias entries without weights; default 0.", std::int64_t{1} << 16},
  {"short_conv", "dim", "int", true, "ShortConv channels (LFM2 conv_dim, the hidden size); its in_proj is [3 x dim, hidden_size].", std::int64_t{1} << 17},
  {"short_conv", "conv_kernel", "int", false, "Depthwise conv taps (LFM2 conv_L_cache); the state keeps conv_kernel - 1 columns. Default 3.", 64},
  {"short_conv", "bias", "bool", false, "conv, in_proj and out_proj biases (LFM2 conv_bias). Default false."},
  {"mamba", "version", "int", false, "1: Mamba-1 mixer (Jamba, Mamba, FalconMamba; per-channel state); 2: Mamba2. Default 2.", 2},
  {"mamba", "num_heads", "int", false, "Mamba2 heads (required for version 2).", std::int64_t{1} << 10},
  {"mamba", "head_dim", "int", false, "Mamba2 head dim (required for version 2).", std::int64_t{1} << 8},
  {"mamba", "state_size", "int", true, "SSM state size.", std::int64_t{1} << 9},
  {"mamba", "n_groups", "int", false, "Mamba2 B/C groups. Default 1.", std::int64_t{1} << 10},
  {"mamba", "conv_kernel", "int", false, "Causal conv width. Default 4.", 64},
  {"mamba", "ssm_state_dtype", "dtype", false, "SSM state cache dtype, or auto: the conv state's (the served dtype; Jamba, Granite-4, Mamba, Mamba2). Default float32 (Nemotron-H)."},
  {"mamba", "intermediate_size", "int", false, "Mamba-1 d_inner (expand x hidden_size; required for version 1).", std::int64_t{1} << 17},
  {"mamba", "time_step_rank", "int", false, "Mamba-1 dt_rank (required for version 1).", std::int64_t{1} << 14},
  {"mamba", "conv_bias", "bool", false, "Mamba-1 conv1d bias. Default true."},
  {"mamba", "proj_bias", "bool", false, "Mamba-1 in_proj / out_proj biases. Default false."},
  {"mamba", "dt_bc_norm_weights", "bool", false, "Mamba-1 RMSNorms with weights on dt, B and C (Jamba). Default false."},
  {"mamba", "gated_norm", "bool", false, "Mamba2 gated RMSNorm with a weight of num_heads x head_dim (Falcon-H1 mamba_rms_norm false: none). Default true."},
  {"linear_attention", "num_key_heads", "int", true, "linear_num_key_heads.", std::int64_t{1} << 10},
  {"linear_attention", "ssm_state_dtype", "dtype", false, "SSM state cache dtype (config mamba_ssm_dtype). Default: the conv state's (the served dtype)."},
  {"linear_attention", "key_head_dim", "int", true, "linear_key_head_dim.", std::int64_t{1} << 8},
  {"linear_attention", "num_value_heads", "int", true, "linear_num_value_heads.", std::int64_t{1} << 10},
  {"linear_attention", "value_head_dim", "int", true, "linear_value_head_dim.", std::int64_t{1} << 8},
  {"linear_attention", "conv_kernel", "int", false, "linear_conv_kernel_dim. Default 4.", 64},
  {"linear_attention", "kimi_delta", "bool", false, "Kimi Delta Attention (Kimi-Linear): q/k/v projections with low-rank f and g gates instead of Gated DeltaNet's fused ones; key and value heads and dims equal. Default false."},
  {"vision", "num_parameters", "int", true, "Parameters of the encoder + projector (kept unquantized).", std::int64_t{1} << 42},
  {"vision", "modality", "string", false, "image (default) or audio: the modality vLLM profiles through the tower; an audio tower (Qwen2-Audio, Qwen3-ASR) has no encoder-profile facts: a plan warns while audio is enabled and refuses an explicit audio limit."},
  {"vision", "audio_parameters", "int", false, "Of num_parameters, an audio encoder's beside the vision tower (Qwen2.5-Omni): vLLM builds it only while audio is enabled, the vision part only while image or video is.", std::int64_t{1} << 42},
  {"vision", "image_tokens_per_item", "int", false, "LM embeddings one image of the processor's largest size becomes (vLLM get_mm_max_tokens_per_item); with the encoder keys it enables the encoder-profile term.", std::int64_t{1} << 24},
  {"vision", "encoder_tokens_per_item", "int", false, "Tokens the encoder transformer runs per such image (patches per tile x tiles, CLS included).", std::int64_t{1} << 24},
  {"vision", "pixel_values_per_item", "int", false, "Elements of one such image's pixel_values tensor.", kMaxTokens},
  {"vision", "encoder_hidden_size", "int", false, "Encoder width.", std::int64_t{1} << 20},
  {"vision", "encoder_intermediate_size", "int", false, "Encoder MLP width.", std::int64_t{1} << 20},
  {"vision", "encoder_mlp", "string", false, "gated (SwiGLU) or plain (fc1/fc2, default)."},
  {"vision", "encoder_attention", "string", false, "qwen2_vl or qwen2_5_vl (also Qwen3-VL, Qwen3.5): the encoder attention whose temporaries the profile counts (engines.yaml vit_rotary_attention); absent: the MLP's peak only."},
  {"vision", "unmodelled_modalities", "list[string]", false, "Other modalities vLLM accepts for the model whose profile is not modelled (Qwen-VL video): a plan warns while they are enabled."},
  {"vision", "always_built", "bool", false, "vLLM builds the tower whatever --limit-mm-per-prompt allows (Gemma-4 Unified's encoder-free embedders, outside _mark_tower_model): its parameters count with every modality off. Default false."},
  {"quantization", "method", "string", true, "none, fp8, int8, awq, gptq, packed_wna16, bnb_nf4, bnb_int8, mxfp4, nvfp4, gguf."},
  {"quantization", "bits", "int", false, "Weight bits (gptq 2/3/4/8, packed_wna16 4/8).", 16},
  {"quantization", "group_size", "int", false, "Quantization group along the input dim; -1 = whole row. Default 128.", std::int64_t{1} << 20},
  {"quantization", "desc_act", "bool", false, "GPTQ act-order (g_idx kept and sorted)."},
  {"quantization", "sym", "bool", false, "Symmetric quantization. Default true."},
  {"quantization", "scale_strategy", "string", false, "fp8/int8 weight scales: tensor, channel or block."},
  {"quantization", "block_size", "list[int]", false, "Block scale shape [n, k] (fp8 block); default [128, 128].", std::int64_t{1} << 20},
  {"quantization", "static_activation_scale", "bool", false, "An input_scale is stored per layer."},
  {"quantization", "double_quant", "bool", false, "bitsandbytes nested absmax in the checkpoint. Default true."},
  {"quantization", "scales_in_torch_dtype", "bool", false, "fp8/int8 scales stored in torch_dtype, not float32 (compressed-tensors)."},
  {"quantization", "online", "bool", false, "Quantized at load from a 16-bit checkpoint (--quantization fp8)."},
  {"quantization", "unquantized", "list[string]", false, "Tensor roles kept in torch_dtype (lm_head, router, attn_q, mixer_in_ba, ...; mtp: every MTP-layer tensor)."},
  {"quantization", "unquantized_layers", "map[string,list[int]]", false, "Tensor roles kept in torch_dtype in some decoder layers only (a skip list naming model.layers.0.self_attn): role -> layer indices."},
  {"quantization", "fp8_roles", "list[string]", false, "Tensor roles stored in per-tensor fp8 with a static input scale beside an nvfp4 method (ModelOpt MIXED_PRECISION)."},
  {"quantization", "nvfp4_weight_only_roles", "list[string]", false, "NVFP4 tensor roles stored weight-only, without an input_scale (ModelOpt W4A16_NVFP4; not routed experts)."},
  {"quantization", "quantized_lm_head", "bool", false, "The lm_head is stored in the quantization method (ModelOpt MIXED_PRECISION listing lm_head); default false."},
  {"quantization", "gguf_types", "map[string,dtype]", false, "GGUF block type per tensor role; key default covers the rest."},
  {"gpu", "id", "string", true, "Database id (H100-80GB)."},
  {"gpu", "aliases", "list[string]", false, "Other names (nvidia-smi names, short names)."},
  {"gpu", "shared_aliases", "list[string]", false, "Names several memory sizes share (NVIDIA A100): the first GPU listing one is assumed, with a warning."},
  {"gpu", "name", "string", true, "Product name."},
  {"gpu", "vendor", "string", true, "nvidia or amd."},
  {"gpu", "family", "string", false, "GPU family of the error band (model_specs/error_bands.json): H100/H200, A100, L40S/L4, RTX consumer, MI300X, T4/V100; absent: no measured band."},
  {"gpu", "total_memory_bytes", "int", true, "Total memory as cudaMemGetInfo / torch report it (bytes), not the marketing figure.", std::int64_t{1} << 45},
  {"gpu", "total_memory_source", "string", true, "Where the total comes from."},
  {"gpu", "total_memory_derived", "bool", false, "The total is derived from the published capacity (rule in gpus.yaml), not measured."},
  {"gpu", "compute_capability", "float", false, "CUDA compute capability (9.0 Hopper)."},
  {"gpu", "num_sms", "int", false, "Streaming multiprocessors.", std::int64_t{1} << 16},
  {"gpu", "unified_memory", "bool", false, "Integrated/UMA device (GH200): free memory is host RAM."},
  {"gpu", "pcie_only", "bool", false, "No NVLink between the node's GPUs: NCCL over PCIe, a smaller non-torch charge at TP>=2."},
  {"gpu", "nvidia_smi_memory_mib", "int", false, "nvidia-smi's memory total (MiB), where recorded: SGLang's defaults read it.", std::int64_t{1} << 24},
  {"gpu", "mig", "map", false, "MIG slices of this GPU: each profile becomes a GPU of its own (id <id>-MIG-<profile>, NVML's name '<name> MIG <profile>')."},
  {"mig", "source", "string", true, "Where the profiles, memory fractions and SM counts come from."},
  {"mig", "profiles", "list[map]", true, "The GPU instance profiles (mig_profile records)."},
  {"mig_profile", "profile", "string", true, "Profile as NVML names it after 'MIG ' (3g.40gb)."},
  {"mig_profile", "memory_eighths", "int", true, "Fraction of the GPU's memory in eighths (NVIDIA MIG user guide, 'Fraction of Memory').", 8},
  {"mig_profile", "num_sms", "int", false, "SMs of the slice (nvidia-smi mig -lgip's SM column); absent: the parent's SMs x compute slices / 7.", std::int64_t{1} << 16},
  {"mig_profile", "lgip_memory_gib", "float", false, "Memory of the slice as `nvidia-smi mig -lgip` prints it (GiB); absent: derived from memory_eighths."},
};
// clang-format on

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string node_text(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  return "?";
}

// Walks one YAML map against the schema table of its record, tracking the dotted path.
class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string file, std::string path, std::string record)
      : node_(node), file_(std::move(file)), path_(std::move(path)), record_(std::move(record)) {
    if (!node_.IsMap()) fail(path_.empty() ? "<root>" : path_, node_text(node_), "expected a map");
    std::set<std::string> allowed;
    for (const auto& k : kSchema) {
      if (record_ == k.record) allowed.insert(k.key);
    }
    for (const auto& kv : node_) {
      if (!kv.first.IsScalar()) fail(path_, node_text(kv.first), "keys must be plain strings");
      const std::string key = kv.first.Scalar();
      if (allowed.count(key) == 0) {
        std::string keys;
        for (const auto& a : allowed) keys += (keys.empty() ? "" : ", ") + a;
        fail(field(key), "'" + key + "'", "unknown key in " + record_ + " (allowed: " + keys + ")");
      }
    }
    for (const auto& k : kSchema) {
      if (record_ == k.record && k.required && !has(k.key)) {
        fail(field(k.key), "nothing", "missing required key");
      }
    }
  }

  bool has(const char* key) const { return node_[key].IsDefined() && !node_[key].IsNull(); }
  YAML::Node child(const char* key) const { return node_[key]; }
  std::string field(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  const std::string& file() const { return file_; }

  [[noreturn]] void fail(const std::string& field_path, const std::string& value,
                         const std::string& problem) const {
    throw SpecError(file_, field_path, value, problem);
  }

  std::string get_string(const char* key, const std::string& fallback = "") const {
    if (!has(key)) return fallback;
    const YAML::Node n = node_[key];
    if (!n.IsScalar()) fail(field(key), node_text(n), "expected a string");
    return n.Scalar();
  }

  std::int64_t parse_int(const YAML::Node& n, const std::string& where, std::int64_t min_value,
                         std::int64_t max_value) const {
    if (!n.IsScalar()) fail(where, node_text(n), "expected an integer");
    const std::string& text = n.Scalar();
    std::int64_t value = 0;
    const char* begin = text.data();
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc() || ptr != end) fail(where, "'" + text + "'", "expected an integer");
    if (value < min_value || value > max_value) {
      fail(where, "'" + text + "'",
           "out of range [" + std::to_string(min_value) + ", " + std::to_string(max_value) + "]");
    }
    return value;
  }

  // Bounded by the schema table's max_value for the key.
  std::int64_t get_int(const char* key, std::int64_t fallback, std::int64_t min_value = 0) const {
    if (!has(key)) return fallback;
    return parse_int(node_[key], field(key), min_value, schema_max(key));
  }

  std::int64_t schema_max(const char* key) const {
    for (const auto& k : kSchema) {
      if (record_ == k.record && std::string_view(key) == k.key) return k.max_value;
    }
    return 0;  // not an int key of this record: every value is out of range
  }

  std::int32_t get_i32(const char* key, std::int32_t fallback, std::int32_t min_value = 0) const {
    return static_cast<std::int32_t>(get_int(key, fallback, min_value));
  }

  double get_double(const char* key, double fallback, double min_value, double max_value) const {
    if (!has(key)) return fallback;
    const YAML::Node n = node_[key];
    if (!n.IsScalar()) fail(field(key), node_text(n), "expected a number");
    std::istringstream in(n.Scalar());
    double value = 0;
    in >> value;
    if (in.fail() || !in.eof() || !(value >= min_value && value <= max_value)) {
      fail(field(key), "'" + n.Scalar() + "'",
           "expected a number in [" + std::to_string(min_value) + ", " + std::to_string(max_value) +
               "]");
    }
    return value;
  }

  bool get_bool(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const YAML::Node n = node_[key];
    if (n.IsScalar()) {
      const std::string t = lower(n.Scalar());
      if (t == "true") return true;
      if (t == "false") return false;
    }
    fail(field(key), node_text(n), "expected true or false");
  }

  DType parse_dtype_node(const YAML::Node& n, const std::string& where) const {
    if (!n.IsScalar()) fail(where, node_text(n), "expected a dtype name");
    const auto dtype = parse_dtype(n.Scalar());
    if (!dtype) fail(where, "'" + n.Scalar() + "'", "unknown dtype");
    return *dtype;
  }

  DType get_dtype(const char* key, DType fallback) const {
    if (!has(key)) return fallback;
    return parse_dtype_node(node_[key], field(key));
  }

  std::vector<std::string> get_string_list(const char* key) const {
    std::vector<std::string> out;
    if (!has(key)) return out;
    const YAML::Node n = node_[key];
    if (!n.IsSequence()) fail(field(key), node_text(n), "expected a list of strings");
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::string where = field(key) + "[" + std::to_string(i) + "]";
      if (!n[i].IsScalar()) fail(where, node_text(n[i]), "expected a string");
      out.push_back(n[i].Scalar());
    }
    return out;
  }

  std::vector<std::int64_t> get_int_list(const char* key, std::int64_t min_value) const {
    std::vector<std::int64_t> out;
    if (!has(key)) return out;
    const YAML::Node n = node_[key];
    if (!n.IsSequence()) fail(field(key), node_text(n), "expected a list of integers");
    for (std::size_t i = 0; i < n.size(); ++i) {
      out.push_back(
          parse_int(n[i], field(key) + "[" + std::to_string(i) + "]", min_value, schema_max(key)));
    }
    return out;
  }

 private:
  YAML::Node node_;
  std::string file_;
  std::string path_;
  std::string record_;
};

std::optional<AttentionKind> parse_layer_kind(const std::string& name, bool& has_mlp) {
  has_mlp = true;
  if (name == "full_attention" || name == "attention") return AttentionKind::Full;
  if (name == "sliding_attention") return AttentionKind::SlidingWindow;
  if (name == "chunked_attention") return AttentionKind::ChunkedLocal;
  if (name == "mla") return AttentionKind::Mla;
  if (name == "mamba") return AttentionKind::Mamba;
  if (name == "linear_attention") return AttentionKind::LinearAttention;
  if (name == "mlp_only") return AttentionKind::None;
  return std::nullopt;
}

QuantSpec read_quantization(const MapReader& parent) {
  const MapReader r(parent.child("quantization"), parent.file(), parent.field("quantization"),
                    "quantization");
  QuantSpec q;
  const std::string method = r.get_string("method");
  static const std::map<std::string, QuantMethod> kMethods = {
      {"none", QuantMethod::None},      {"fp8", QuantMethod::Fp8},
      {"int8", QuantMethod::Int8},      {"awq", QuantMethod::Awq},
      {"gptq", QuantMethod::Gptq},      {"packed_wna16", QuantMethod::PackedWNA16},
      {"bnb_nf4", QuantMethod::BnbNf4}, {"bnb_int8", QuantMethod::BnbInt8},
      {"mxfp4", QuantMethod::Mxfp4},    {"nvfp4", QuantMethod::Nvfp4},
      {"gguf", QuantMethod::Gguf}};
  const auto it = kMethods.find(method);
  if (it == kMethods.end()) {
    r.fail(r.field("method"), "'" + method + "'",
           "unknown quantization method (allowed: none, fp8, int8, awq, gptq, packed_wna16, "
           "bnb_nf4, bnb_int8, mxfp4, nvfp4, gguf)");
  }
  q.method = it->second;
  const std::int32_t default_bits = q.method == QuantMethod::Fp8 || q.method == QuantMethod::Int8 ||
                                            q.method == QuantMethod::BnbInt8
                                        ? 8
                                        : (q.method == QuantMethod::None ? 16 : 4);
  q.bits = r.get_i32("bits", default_bits, 1);
  if (q.method == QuantMethod::Gptq && q.bits != 2 && q.bits != 3 && q.bits != 4 && q.bits != 8) {
    r.fail(r.field("bits"), std::to_string(q.bits), "GPTQ bits must be 2, 3, 4 or 8");
  }
  if (q.method == QuantMethod::PackedWNA16 && q.bits != 4 && q.bits != 8) {
    r.fail(r.field("bits"), std::to_string(q.bits), "packed_wna16 bits must be 4 or 8");
  }
  if (q.method == QuantMethod::Awq && q.bits != 4) {
    r.fail(r.field("bits"), std::to_string(q.bits), "AWQ bits must be 4");
  }
  q.group_size = static_cast<std::int32_t>(r.get_int("group_size", 128, -1));
  if (q.group_size == 0) r.fail(r.field("group_size"), "0", "group_size must be -1 or positive");
  q.desc_act = r.get_bool("desc_act", false);
  q.sym = r.get_bool("sym", true);
  const std::string strategy =
      r.get_string("scale_strategy", r.has("block_size") ? "block" : "tensor");
  if (strategy == "tensor") {
    q.scale_strategy = ScaleStrategy::Tensor;
  } else if (strategy == "channel") {
    q.scale_strategy = ScaleStrategy::Channel;
  } else if (strategy == "block") {
    q.scale_strategy = ScaleStrategy::Block;
  } else {
    r.fail(r.field("scale_strategy"), "'" + strategy + "'", "expected tensor, channel or block");
  }
  const auto block = r.get_int_list("block_size", 1);
  if (!block.empty()) {
    if (block.size() != 2) r.fail(r.field("block_size"), "a list", "expected [n, k]");
    q.block_n = static_cast<std::int32_t>(block[0]);
    q.block_k = static_cast<std::int32_t>(block[1]);
  }
  q.static_activation_scale = r.get_bool("static_activation_scale", false);
  q.double_quant = r.get_bool("double_quant", true);
  q.scales_in_torch_dtype = r.get_bool("scales_in_torch_dtype", false);
  q.online = r.get_bool("online", false);
  q.unquantized_roles = r.get_string_list("unquantized");
  for (std::size_t i = 0; i < q.unquantized_roles.size(); ++i) {
    bool known = q.unquantized_roles[i] == "mtp";  // every tensor of the MTP layers
    for (int role = 0; role <= static_cast<int>(TensorRole::Vision); ++role) {
      known |= q.unquantized_roles[i] == tensor_role_name(static_cast<TensorRole>(role));
    }
    if (!known) {
      r.fail(r.field("unquantized") + "[" + std::to_string(i) + "]",
             "'" + q.unquantized_roles[i] + "'", "unknown tensor role");
    }
  }
  if (r.has("unquantized_layers")) {
    const YAML::Node n = r.child("unquantized_layers");
    if (!n.IsMap()) {
      r.fail(r.field("unquantized_layers"), node_text(n), "expected a map role -> layer list");
    }
    for (const auto& kv : n) {
      const std::string role = kv.first.Scalar();
      const std::string where = r.field("unquantized_layers") + "." + role;
      bool known = false;
      for (int i = 0; i <= static_cast<int>(TensorRole::Vision); ++i) {
        known |= role == tensor_role_name(static_cast<TensorRole>(i));
      }
      if (!known) r.fail(where, "'" + role + "'", "unknown tensor role");
      if (!kv.second.IsSequence() || kv.second.size() == 0) {
        r.fail(where, node_text(kv.second), "expected a non-empty list of layer indices");
      }
      std::vector<std::int32_t> layers;
      for (std::size_t i = 0; i < kv.second.size(); ++i) {
        layers.push_back(static_cast<std::int32_t>(
            r.parse_int(kv.second[i], where + "[" + std::to_string(i) + "]", 0, 1 << 20)));
      }
      std::sort(layers.begin(), layers.end());
      layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
      q.unquantized_layers[role] = layers;
    }
  }
  q.fp8_roles = r.get_string_list("fp8_roles");
  for (std::size_t i = 0; i < q.fp8_roles.size(); ++i) {
    bool known = false;
    for (int role = 0; role <= static_cast<int>(TensorRole::Vision); ++role) {
      known |= q.fp8_roles[i] == tensor_role_name(static_cast<TensorRole>(role));
    }
    if (!known) {
      r.fail(r.field("fp8_roles") + "[" + std::to_string(i) + "]", "'" + q.fp8_roles[i] + "'",
             "unknown tensor role");
    }
  }
  if (!q.fp8_roles.empty() && q.method != QuantMethod::Nvfp4) {
    r.fail(r.field("fp8_roles"), "a list", "fp8_roles go with method nvfp4 (ModelOpt mixed)");
  }
  q.nvfp4_weight_only_roles = r.get_string_list("nvfp4_weight_only_roles");
  for (std::size_t i = 0; i < q.nvfp4_weight_only_roles.size(); ++i) {
    const std::string& name = q.nvfp4_weight_only_roles[i];
    bool known = false;
    for (int role = 0; role <= static_cast<int>(TensorRole::Vision); ++role) {
      known |= name == tensor_role_name(static_cast<TensorRole>(role));
    }
    if (!known || name == "expert_gate_up" || name == "expert_down") {
      r.fail(r.field("nvfp4_weight_only_roles") + "[" + std::to_string(i) + "]", "'" + name + "'",
             known ? "routed experts keep their input scales" : "unknown tensor role");
    }
  }
  if (!q.nvfp4_weight_only_roles.empty() && q.method != QuantMethod::Nvfp4) {
    r.fail(r.field("nvfp4_weight_only_roles"), "a list", "goes with method nvfp4");
  }
  q.quantized_lm_head = r.get_bool("quantized_lm_head", false);
  if (q.quantized_lm_head && q.method != QuantMethod::Nvfp4 && q.method != QuantMethod::Fp8) {
    r.fail(r.field("quantized_lm_head"), "true",
           "a quantized lm_head is modelled for nvfp4 and fp8");
  }
  if (r.has("gguf_types")) {
    const YAML::Node n = r.child("gguf_types");
    if (!n.IsMap()) r.fail(r.field("gguf_types"), node_text(n), "expected a map role -> type");
    for (const auto& kv : n) {
      const std::string role = kv.first.Scalar();
      bool known = role == "default";
      for (int i = 0; i <= static_cast<int>(TensorRole::Vision); ++i) {
        known |= role == tensor_role_name(static_cast<TensorRole>(i));
      }
      const std::string where = r.field("gguf_types") + "." + role;
      if (!known) r.fail(where, "'" + role + "'", "unknown tensor role");
      q.gguf_types[role] = r.parse_dtype_node(kv.second, where);
    }
    if (q.gguf_types.count("default") == 0) {
      r.fail(r.field("gguf_types"), "a map", "needs a 'default' entry");
    }
  } else if (q.method == QuantMethod::Gguf) {
    r.fail(r.field("gguf_types"), "nothing", "gguf needs gguf_types");
  }
  return q;
}

}  // namespace

const std::vector<SchemaKey>& schema_keys() { return kSchema; }

std::string schema_markdown() {
  std::ostringstream out;
  std::string record;
  for (const auto& k : kSchema) {
    if (record != k.record) {
      record = k.record;
      out << (out.tellp() > 0 ? "\n" : "") << "### `" << record << "`\n\n"
          << "| key | type | required | at most | meaning |\n|---|---|---|---|---|\n";
    }
    out << "| `" << k.key << "` | " << k.type << " | " << (k.required ? "yes" : "no") << " | "
        << (k.max_value > 0 ? std::to_string(k.max_value) : "") << " | " << k.doc << " |\n";
  }
  return out.str();
}

namespace {

// One walk over the loaded tree, aliases expanded, bounded in nodes and depth: refuses
// duplicate and non-scalar keys, and returns the dotted path of the first key or scalar that is
// not valid UTF-8.
class TreeCheck {
 public:
  explicit TreeCheck(const std::string& file) : file_(file) {}

  std::optional<std::string> walk(const YAML::Node& node, const std::string& path, int depth) {
    if (++nodes_ > kMaxYamlNodes) {
      throw SpecError(file_, path.empty() ? "<document>" : path,
                      "over " + std::to_string(kMaxYamlNodes) + " nodes",
                      "YAML expands to too many nodes (aliases counted each time used)");
    }
    if (depth > kMaxYamlDepth) {
      throw SpecError(file_, path.empty() ? "<document>" : path,
                      "over " + std::to_string(kMaxYamlDepth) + " levels", "YAML nested too deep");
    }
    std::optional<std::string> bad;
    if (node.IsScalar()) {
      if (utf8::find_invalid(node.Scalar()) != std::string::npos) bad = path;
    } else if (node.IsSequence()) {
      for (std::size_t i = 0; i < node.size(); ++i) {
        auto f = walk(node[i], path + "[" + std::to_string(i) + "]", depth + 1);
        if (!bad) bad = std::move(f);
      }
    } else if (node.IsMap()) {
      std::set<std::string> keys;
      for (const auto& kv : node) {
        const std::string where_map = path.empty() ? "<root>" : path;
        if (!kv.first.IsScalar()) {
          throw SpecError(file_, where_map, node_text(kv.first), "keys must be plain strings");
        }
        const std::string& key = kv.first.Scalar();
        std::string key_path = path;
        if (!key_path.empty()) key_path += ".";
        key_path += key;
        if (!keys.insert(key).second) {
          throw SpecError(file_, key_path, "'" + key + "' twice", "duplicate key in one map");
        }
        if (!bad && utf8::find_invalid(key) != std::string::npos) bad = key_path;
        auto f = walk(kv.second, key_path, depth + 1);
        if (!bad) bad = std::move(f);
      }
    }
    return bad;
  }

 private:
  const std::string& file_;
  std::int64_t nodes_ = 0;
};

}  // namespace

// Spec text ends up in JSON and Python strings, so a byte that is not UTF-8 is refused up
// front, named by the key or value it sits in (or its line, in a comment) and its offset.
YAML::Node load_yaml_checked(const std::string& text, const std::string& file) {
  YAML::Node root;
  std::string yaml_problem;
  std::int64_t yaml_line = 0;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    yaml_problem = e.msg;
    yaml_line = e.mark.line + 1;
  }
  std::optional<std::string> bad_field;
  if (yaml_problem.empty()) bad_field = TreeCheck(file).walk(root, "", 0);
  const std::size_t bad = utf8::find_invalid(text);
  if (bad != std::string::npos) {
    const std::size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    const std::size_t column = bad - (line_start == std::string::npos ? 0 : line_start + 1) + 1;
    const auto line =
        1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    static const char* kHex = "0123456789abcdef";
    const auto byte = static_cast<unsigned char>(text[bad]);
    throw SpecError(file, bad_field ? *bad_field : "line " + std::to_string(line),
                    std::string("byte 0x") + kHex[byte >> 4] + kHex[byte & 0xF],
                    "not valid UTF-8 at byte offset " + std::to_string(bad) + " (line " +
                        std::to_string(line) + ", column " + std::to_string(column) + ")");
  }
  if (!yaml_problem.empty()) {
    throw SpecError(file, "line " + std::to_string(yaml_line), "YAML text",
                    "not valid YAML: " + yaml_problem);
  }
  return root;
}

namespace {

// Calls `line(text, in_section)` for each line of `text` (its newline included), in_section
// telling whether it lies in the top-level `key:` section: from that key's line up to the next
// line that starts a top-level key (a comment or blank line does not end it).
template <typename Line>
void for_each_line(std::string_view text, std::string_view key, const Line& line) {
  bool in_section = false;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    end = end == std::string_view::npos ? text.size() : end + 1;
    const std::string_view l = text.substr(start, end - start);
    const char first = l.front();
    if (first != ' ' && first != '#' && first != '\n' && first != '\r' && first != '-') {
      in_section = !key.empty() && l.substr(0, key.size()) == key && l.size() > key.size() &&
                   l[key.size()] == ':';
    }
    line(l, in_section);
    start = end;
  }
}

std::string kept_lines(std::string_view text, std::string_view key, bool keep_section) {
  std::string out;
  out.reserve(text.size());
  for_each_line(text, key, [&](std::string_view l, bool in_section) {
    if (in_section == keep_section) {
      out += l;
    } else if (l.back() == '\n') {
      out += '\n';
    }
  });
  return out;
}

}  // namespace

std::string without_comment_lines(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_line(text, "", [&](std::string_view l, bool) {
    const std::size_t first = l.find_first_not_of(' ');
    if (first != std::string_view::npos && l[first] == '#') {
      if (l.back() == '\n') out += '\n';
    } else {
      out += l;
    }
  });
  return out;
}

std::string without_section(std::string_view text, std::string_view key) {
  return kept_lines(text, key, false);
}

std::string only_section(std::string_view text, std::string_view key) {
  return kept_lines(text, key, true);
}

namespace {

// The fields every layer shares, read from the top level of a model spec.
struct SharedLayerFields {
  std::int32_t head_dim_v = 0;
  std::int32_t sliding_window = 0;
  std::int32_t attention_chunk_size = 0;
  std::int32_t full_attention_head_dim = 0;             // 0: head_dim
  std::int32_t full_attention_num_key_value_heads = 0;  // 0: num_key_value_heads
  std::int32_t num_kv_shared_layers = 0;
  bool kv_shared_double_wide_mlp = false;
};

// The model's own scalars (not its blocks, not its layers).
SharedLayerFields read_model_scalars(const MapReader& r, ModelSpec& s) {
  SharedLayerFields layer;
  s.id = r.get_string("id");
  if (s.id.empty()) r.fail("id", "''", "id must not be empty");
  s.aliases = r.get_string_list("aliases");
  // Provenance for whoever reads the file: checked to be text, not kept (s.source names the
  // file). Unread, `source: {a: 1}` used to load silently.
  (void)r.get_string("source", "");
  s.config_defaults = r.get_string_list("config_defaults");
  s.generic_assumptions = r.get_string_list("generic_assumptions");
  s.model_type = r.get_string("model_type");
  s.hidden_size = r.get_i32("hidden_size", 0, 1);
  s.num_hidden_layers = r.get_i32("num_hidden_layers", 0, 1);
  s.num_attention_heads = r.get_i32("num_attention_heads", 0, 1);
  s.num_key_value_heads = r.get_i32("num_key_value_heads", s.num_attention_heads, 1);
  s.head_dim = r.get_i32("head_dim", 0, 1);
  layer.head_dim_v = r.get_i32("head_dim_v", 0, 1);
  s.intermediate_size = r.get_i32("intermediate_size", 0, 0);
  s.vocab_size = r.get_i32("vocab_size", 0, 1);
  s.max_position_embeddings = r.get_int("max_position_embeddings", 0, 1);
  s.max_position_embeddings_assumed = r.get_bool("max_position_embeddings_assumed", false);
  s.tie_word_embeddings = r.get_bool("tie_word_embeddings", false);
  s.torch_dtype = r.get_dtype("torch_dtype", DType::BF16);
  if (s.torch_dtype != DType::BF16 && s.torch_dtype != DType::F16 && s.torch_dtype != DType::F32) {
    r.fail("torch_dtype", std::string(dtype_info(s.torch_dtype).name),
           "torch_dtype must be bfloat16, float16 or float32");
  }
  const std::string mlp = r.get_string("mlp", "gated");
  if (mlp != "gated" && mlp != "plain") r.fail("mlp", "'" + mlp + "'", "expected gated or plain");
  s.gated_mlp = mlp == "gated";
  s.qkv_bias = r.get_bool("qkv_bias", false);
  s.o_proj_bias = r.get_bool("o_proj_bias", false);
  s.mlp_bias = r.get_bool("mlp_bias", false);
  s.mlp_down_bias = r.get_bool("mlp_down_bias", false);
  s.qk_norm = r.get_bool("qk_norm", false);
  s.attention_sinks = r.get_bool("attention_sinks", false);
  s.attn_output_gate = r.get_bool("attn_output_gate", false);
  s.attn_head_gate = r.get_bool("attn_head_gate", false);
  s.share_q_dim = r.get_i32("share_q_dim", 0, 0);
  s.norms_per_layer = r.get_i32("norms_per_layer", 2, 0);
  s.norm_per_block = r.get_bool("norm_per_block", false);
  s.dense_mlps_per_layer = r.get_i32("dense_mlps_per_layer", 1, 1);
  s.rotary_dim = r.get_i32("rotary_dim", 0, 0);
  s.rotary_cache_positions = r.get_int("rotary_cache_positions", 0, 1);
  const std::string mrope = r.get_string("mrope", "none");
  if (mrope != "none" && mrope != "standard" && mrope != "qwen3_vl") {
    r.fail("mrope", "'" + mrope + "'", "expected none, standard or qwen3_vl");
  }
  s.mrope = mrope == "standard"   ? MropeKind::Standard
            : mrope == "qwen3_vl" ? MropeKind::Qwen3Vl
                                  : MropeKind::None;
  layer.sliding_window = r.get_i32("sliding_window", 0, 1);
  layer.attention_chunk_size = r.get_i32("attention_chunk_size", 0, 1);
  s.num_nextn_predict_layers = r.get_i32("num_nextn_predict_layers", 0, 0);
  layer.full_attention_head_dim = r.get_i32("full_attention_head_dim", 0, 1);
  layer.full_attention_num_key_value_heads = r.get_i32("full_attention_num_key_value_heads", 0, 1);
  layer.num_kv_shared_layers = r.get_i32("num_kv_shared_layers", 0, 0);
  if (layer.num_kv_shared_layers >= s.num_hidden_layers && layer.num_kv_shared_layers > 0) {
    r.fail("num_kv_shared_layers", std::to_string(layer.num_kv_shared_layers),
           "must be below num_hidden_layers (" + std::to_string(s.num_hidden_layers) + ")");
  }
  layer.kv_shared_double_wide_mlp = r.get_bool("kv_shared_double_wide_mlp", false);
  s.position_embeddings = r.get_i32("position_embeddings", 0, 0);
  s.replicated_token_embedding = r.get_bool("replicated_token_embedding", false);
  s.per_layer_input_size = r.get_i32("per_layer_input_size", 0, 0);
  s.per_layer_input_vocab_size = r.get_i32("per_layer_input_vocab_size", s.vocab_size, 1);
  s.altup_num_inputs = r.get_i32("altup_num_inputs", 0, 0);
  s.laurel_rank = r.get_i32("laurel_rank", 0, 0);
  s.shared_blocks = r.get_i32("shared_blocks", 0, 0);
  s.shared_block_adapter_rank = r.get_i32("shared_block_adapter_rank", 0, 0);
  s.shared_block_attention_adapters = r.get_bool("shared_block_attention_adapters", false);
  if (s.shared_blocks == 0 &&
      (s.shared_block_adapter_rank > 0 || s.shared_block_attention_adapters)) {
    r.fail("shared_block_adapter_rank", std::to_string(s.shared_block_adapter_rank),
           "adapters of shared blocks need shared_blocks");
  }
  return layer;
}

void read_mla(const MapReader& r, ModelSpec& s) {
  const std::string& file = r.file();
  const MapReader m(r.child("mla"), file, "mla", "mla");
  s.has_mla = true;
  s.mla.q_lora_rank = m.get_i32("q_lora_rank", 0, 0);
  s.mla.kv_lora_rank = m.get_i32("kv_lora_rank", 0, 1);
  s.mla.qk_nope_head_dim = m.get_i32("qk_nope_head_dim", 0, 1);
  s.mla.qk_rope_head_dim = m.get_i32("qk_rope_head_dim", 0, 1);
  s.mla.v_head_dim = m.get_i32("v_head_dim", 0, 1);
  s.mla.latent_kv_cache = m.get_bool("latent_kv_cache", true);
  s.mla.index_head_dim = m.get_i32("index_head_dim", 0, 0);
  s.mla.index_n_heads = m.get_i32("index_n_heads", 0, 0);
  // vLLM's indexer quantizes its keys in blocks of 128 (one fp32 scale each).
  if (s.mla.index_head_dim % 128 != 0) {
    m.fail(m.field("index_head_dim"), std::to_string(s.mla.index_head_dim),
           "a multiple of 128 (the indexer's fp8 quantization block)");
  }
}

// Which layers of a MoE model are dense (read from the moe: block, applied per layer).
struct MoeLayout {
  std::vector<std::int64_t> dense_layers;
  std::int32_t first_k_dense = 0;
  std::int32_t moe_layer_step = 1;
};

MoeLayout read_moe(const MapReader& r, ModelSpec& s) {
  const std::string& file = r.file();
  MoeLayout layout;
  const MapReader m(r.child("moe"), file, "moe", "moe");
  s.has_moe = true;
  s.moe.num_experts = m.get_i32("num_experts", 0, 1);
  s.moe.num_experts_per_tok = m.get_i32("num_experts_per_tok", 0, 1);
  if (s.moe.num_experts_per_tok > s.moe.num_experts) {
    m.fail("moe.num_experts_per_tok", std::to_string(s.moe.num_experts_per_tok),
           "more than num_experts (" + std::to_string(s.moe.num_experts) + ")");
  }
  s.moe.moe_intermediate_size = m.get_i32("moe_intermediate_size", 0, 1);
  s.moe.num_shared_experts = m.get_i32("num_shared_experts", 0, 0);
  s.moe.shared_expert_intermediate_size =
      m.get_i32("shared_expert_intermediate_size", s.moe.moe_intermediate_size, 1);
  s.moe.shared_expert_gate = m.get_bool("shared_expert_gate", false);
  s.moe.expert_bias = m.get_bool("expert_bias", false);
  s.moe.router_bias = m.get_bool("router_bias", false);
  s.moe.router_quantizable = m.get_bool("router_quantizable", false);
  s.moe.dense_mlp_beside_experts = m.get_bool("dense_mlp_beside_experts", false);
  s.moe.zero_experts = m.get_i32("zero_experts", 0, 0);
  layout.first_k_dense = m.get_i32("first_k_dense", 0, 0);
  layout.moe_layer_step = m.get_i32("moe_layer_step", 1, 1);
  layout.dense_layers = m.get_int_list("dense_layers", 0);
  return layout;
}

void read_mamba(const MapReader& r, ModelSpec& s) {
  const std::string& file = r.file();
  const MapReader m(r.child("mamba"), file, "mamba", "mamba");
  s.has_mamba = true;
  s.mamba.version = m.get_i32("version", 2, 1);
  s.mamba.state_size = m.get_i32("state_size", 0, 1);
  s.mamba.conv_kernel = m.get_i32("conv_kernel", 4, 1);
  s.mamba.ssm_state_dtype = m.has("ssm_state_dtype") && m.get_string("ssm_state_dtype") == "auto"
                                ? std::nullopt
                                : std::optional<DType>(m.get_dtype("ssm_state_dtype", DType::F32));
  const char* const mamba2_keys[] = {"num_heads", "head_dim", "n_groups"};
  const char* const mamba1_keys[] = {"intermediate_size", "time_step_rank", "conv_bias",
                                     "proj_bias", "dt_bc_norm_weights"};
  if (s.mamba.version == 1 && m.has("gated_norm")) {
    m.fail(m.field("gated_norm"), "given", "a Mamba2 key; version is 1");
  }
  if (s.mamba.version == 1) {
    for (const char* key : mamba2_keys) {
      if (m.has(key)) m.fail(m.field(key), "given", "a Mamba2 key; version is 1");
    }
    for (const char* key : {"intermediate_size", "time_step_rank"}) {
      if (!m.has(key)) m.fail(m.field(key), "nothing", "required with version 1");
    }
    s.mamba.intermediate_size = m.get_i32("intermediate_size", 0, 1);
    s.mamba.time_step_rank = m.get_i32("time_step_rank", 0, 1);
    s.mamba.conv_bias = m.get_bool("conv_bias", true);
    s.mamba.proj_bias = m.get_bool("proj_bias", false);
    s.mamba.dt_bc_norm_weights = m.get_bool("dt_bc_norm_weights", false);
    return;
  }
  for (const char* key : mamba1_keys) {
    if (m.has(key)) m.fail(m.field(key), "given", "a Mamba-1 key; version is 2");
  }
  for (const char* key : {"num_heads", "head_dim"}) {
    if (!m.has(key)) m.fail(m.field(key), "nothing", "required with version 2");
  }
  s.mamba.num_heads = m.get_i32("num_heads", 0, 1);
  s.mamba.head_dim = m.get_i32("head_dim", 0, 1);
  s.mamba.n_groups = m.get_i32("n_groups", 1, 1);
  s.mamba.gated_norm = m.get_bool("gated_norm", true);
}

void read_short_conv(const MapReader& r, ModelSpec& s) {
  const std::string& file = r.file();
  const MapReader m(r.child("short_conv"), file, "short_conv", "short_conv");
  if (s.has_mamba) m.fail("short_conv", "given", "a model has a mamba: or a short_conv: block");
  s.has_short_conv = true;
  s.short_conv.dim = m.get_i32("dim", 0, 1);
  s.short_conv.conv_kernel = m.get_i32("conv_kernel", 3, 2);
  s.short_conv.bias = m.get_bool("bias", false);
}

void read_linear_attention(const MapReader& r, ModelSpec& s) {
  const std::string& file = r.file();
  const MapReader m(r.child("linear_attention"), file, "linear_attention", "linear_attention");
  s.has_linear_attention = true;
  s.linear_attention.num_key_heads = m.get_i32("num_key_heads", 0, 1);
  s.linear_attention.key_head_dim = m.get_i32("key_head_dim", 0, 1);
  s.linear_attention.num_value_heads = m.get_i32("num_value_heads", 0, 1);
  s.linear_attention.value_head_dim = m.get_i32("value_head_dim", 0, 1);
  s.linear_attention.conv_kernel = m.get_i32("conv_kernel", 4, 1);
  s.linear_attention.kimi_delta = m.get_bool("kimi_delta", false);
  if (s.linear_attention.kimi_delta &&
      (s.linear_attention.num_key_heads != s.linear_attention.num_value_heads ||
       s.linear_attention.key_head_dim != s.linear_attention.value_head_dim)) {
    m.fail(m.field("kimi_delta"), "true",
           "Kimi Delta Attention has as many key as value heads, of one head_dim");
  }
  if (m.has("ssm_state_dtype")) {
    s.linear_attention.ssm_state_dtype = m.get_dtype("ssm_state_dtype", DType::F32);
  }
}

void read_vision(const MapReader& r, ModelSpec& s) {
  const std::string& file = r.file();
  const MapReader m(r.child("vision"), file, "vision", "vision");
  s.vision.num_parameters = m.get_int("num_parameters", 0, 1);
  s.vision.modality = m.get_string("modality", "image");
  s.vision.audio_parameters = m.get_int("audio_parameters", 0, 0);
  if (s.vision.audio_parameters > s.vision.num_parameters) {
    m.fail(m.field("audio_parameters"), std::to_string(s.vision.audio_parameters),
           "must not exceed num_parameters (the vision tower's share is the rest)");
  }
  if (s.vision.modality != "image" && s.vision.modality != "audio") {
    m.fail(m.field("modality"), "'" + s.vision.modality + "'", "expected image or audio");
  }
  if (s.vision.modality == "audio" && m.has("image_tokens_per_item")) {
    m.fail(m.field("image_tokens_per_item"), "set",
           "an audio tower's encoder profile is not modelled (image facts only)");
  }
  if (m.has("image_tokens_per_item")) {
    // The encoder-profile facts come together: each one is needed by the term.
    for (const char* key : {"encoder_tokens_per_item", "pixel_values_per_item",
                            "encoder_hidden_size", "encoder_intermediate_size"}) {
      if (!m.has(key)) m.fail(m.field(key), "nothing", "required with image_tokens_per_item");
    }
    // The schema's bounds keep the per-image bytes (tokens x widths x 4 B) inside int64.
    TowerSpec& v = s.vision;
    v.image_tokens_per_item = m.get_int("image_tokens_per_item", 0, 1);
    v.encoder_tokens_per_item = m.get_int("encoder_tokens_per_item", 0, 1);
    v.pixel_values_per_item = m.get_int("pixel_values_per_item", 0, 1);
    v.encoder_hidden_size = static_cast<std::int32_t>(m.get_int("encoder_hidden_size", 0, 1));
    v.encoder_intermediate_size =
        static_cast<std::int32_t>(m.get_int("encoder_intermediate_size", 0, 1));
    const std::string encoder_mlp = m.get_string("encoder_mlp", "plain");
    if (encoder_mlp != "gated" && encoder_mlp != "plain") {
      m.fail(m.field("encoder_mlp"), "'" + encoder_mlp + "'", "expected gated or plain");
    }
    v.encoder_gated_mlp = encoder_mlp == "gated";
    const std::string attention = m.get_string("encoder_attention", "");
    if (!attention.empty() && attention != "qwen2_vl" && attention != "qwen2_5_vl") {
      m.fail(m.field("encoder_attention"), "'" + attention + "'",
             "expected qwen2_vl or qwen2_5_vl");
    }
    v.encoder_attention = attention == "qwen2_vl"     ? EncoderAttention::Qwen2Vl
                          : attention == "qwen2_5_vl" ? EncoderAttention::Qwen25Vl
                                                      : EncoderAttention::Unmodelled;
  } else {
    for (const char* key :
         {"encoder_tokens_per_item", "pixel_values_per_item", "encoder_hidden_size",
          "encoder_intermediate_size", "encoder_mlp", "encoder_attention"}) {
      if (m.has(key)) m.fail(m.field(key), "set", "needs image_tokens_per_item beside it");
    }
  }
  s.vision.unmodelled_modalities = m.get_string_list("unmodelled_modalities");
  s.vision.always_built = m.get_bool("always_built", false);
}

// Per-layer kinds: explicit list, cyclic pattern, Nemotron-H pattern, or uniform.
struct LayerKinds {
  std::vector<std::string> kinds;
  std::vector<bool> mlp;       // the pattern gives the layer an MLP
  std::vector<bool> moe_only;  // ... an MoE MLP whatever the moe: block says
};

LayerKinds read_layer_kinds(const MapReader& r, const ModelSpec& s) {
  const int n = s.num_hidden_layers;
  LayerKinds out;
  out.mlp.assign(static_cast<std::size_t>(n), true);
  out.moe_only.assign(static_cast<std::size_t>(n), false);
  const int sources = (r.has("layer_types") ? 1 : 0) + (r.has("layer_pattern") ? 1 : 0) +
                      (r.has("hybrid_override_pattern") ? 1 : 0);
  if (sources > 1) {
    r.fail("layer_types", "several",
           "give only one of layer_types, layer_pattern, hybrid_override_pattern");
  }
  if (r.has("layer_types")) {
    out.kinds = r.get_string_list("layer_types");
    if (static_cast<int>(out.kinds.size()) != n) {
      r.fail("layer_types", std::to_string(out.kinds.size()) + " entries",
             "must have num_hidden_layers (" + std::to_string(n) + ") entries");
    }
  } else if (r.has("layer_pattern")) {
    const auto pattern = r.get_string_list("layer_pattern");
    if (pattern.empty()) r.fail("layer_pattern", "[]", "must not be empty");
    for (int i = 0; i < n; ++i)
      out.kinds.push_back(pattern[static_cast<std::size_t>(i) % pattern.size()]);
  } else if (r.has("hybrid_override_pattern")) {
    const std::string pattern = r.get_string("hybrid_override_pattern");
    if (static_cast<int>(pattern.size()) != n) {
      r.fail("hybrid_override_pattern", "'" + pattern + "'",
             "must have num_hidden_layers (" + std::to_string(n) + ") characters");
    }
    for (int i = 0; i < n; ++i) {
      const char c = pattern[static_cast<std::size_t>(i)];
      const auto idx = static_cast<std::size_t>(i);
      switch (c) {
        case 'M':
          out.kinds.emplace_back("mamba");
          out.mlp[idx] = false;
          break;
        case '*':
          out.kinds.emplace_back("full_attention");
          out.mlp[idx] = false;
          break;
        case '-':
          out.kinds.emplace_back("mlp_only");
          break;
        case 'E':
          out.kinds.emplace_back("mlp_only");
          out.moe_only[idx] = true;
          break;
        default:
          r.fail("hybrid_override_pattern[" + std::to_string(i) + "]", std::string("'") + c + "'",
                 "expected M, *, - or E");
      }
    }
  } else {
    const bool latent = s.has_mla && s.mla.latent_kv_cache;
    out.kinds.assign(static_cast<std::size_t>(n), latent ? "mla" : "full_attention");
  }

  return out;
}

void build_layers(const MapReader& r, const LayerKinds& layout, const SharedLayerFields& shared,
                  const MoeLayout& moe, ModelSpec& s) {
  const int n = s.num_hidden_layers;
  s.layers.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto idx = static_cast<std::size_t>(i);
    LayerSpec& layer = s.layers[idx];
    bool has_mlp = true;
    const auto kind = parse_layer_kind(layout.kinds[idx], has_mlp);
    if (!kind) {
      r.fail("layer_types[" + std::to_string(i) + "]", "'" + layout.kinds[idx] + "'",
             "unknown layer kind (allowed: full_attention, sliding_attention, chunked_attention, "
             "mla, mamba, linear_attention, mlp_only)");
    }
    layer.attention = *kind;
    if (s.has_mla && s.mla.latent_kv_cache && layer.attention == AttentionKind::Full)
      layer.attention = AttentionKind::Mla;
    layer.mlp = layout.mlp[idx] && has_mlp;
    layer.num_key_value_heads = s.num_key_value_heads;
    layer.head_dim_v = shared.head_dim_v;
    if (layer.attention == AttentionKind::Full) {
      layer.head_dim = shared.full_attention_head_dim;
      if (shared.full_attention_num_key_value_heads > 0)
        layer.num_key_value_heads = shared.full_attention_num_key_value_heads;
    }
    if (i >= n - shared.num_kv_shared_layers) {
      layer.kv_shared = true;
      if (shared.kv_shared_double_wide_mlp) layer.intermediate_size = 2 * s.intermediate_size;
    }
    layer.sliding_window =
        layer.attention == AttentionKind::SlidingWindow ? shared.sliding_window : 0;
    layer.attention_chunk_size =
        layer.attention == AttentionKind::ChunkedLocal ? shared.attention_chunk_size : 0;
    if (layer.attention == AttentionKind::SlidingWindow && shared.sliding_window <= 0) {
      r.fail("sliding_window", "nothing", "sliding_attention layers need sliding_window");
    }
    if (layer.attention == AttentionKind::ChunkedLocal && shared.attention_chunk_size <= 0) {
      r.fail("attention_chunk_size", "nothing",
             "chunked_attention layers need attention_chunk_size");
    }
    if (layer.attention == AttentionKind::Mla && !(s.has_mla && s.mla.latent_kv_cache)) {
      r.fail("layer_types[" + std::to_string(i) + "]", "'mla'",
             "mla layers need an mla: block with a latent KV cache");
    }
    if (layer.attention == AttentionKind::Mamba && !s.has_mamba && !s.has_short_conv) {
      r.fail("layer_types[" + std::to_string(i) + "]", "'mamba'",
             "mamba layers need a mamba: block (or a short_conv: block)");
    }
    if (layer.attention == AttentionKind::LinearAttention && !s.has_linear_attention) {
      r.fail("layer_types[" + std::to_string(i) + "]", "'linear_attention'",
             "linear_attention layers need a linear_attention: block");
    }
    if (s.has_moe && layer.mlp) {
      const bool dense =
          i < moe.first_k_dense || (i % moe.moe_layer_step) != (moe.moe_layer_step - 1) ||
          std::find(moe.dense_layers.begin(), moe.dense_layers.end(), i) != moe.dense_layers.end();
      layer.moe = layout.moe_only[idx] || !dense;
    }
  }
}

// Per-layer query heads (Laguna): every attention layer's count a multiple of its KV heads.
void apply_layer_query_heads(const MapReader& r, ModelSpec& s) {
  const std::vector<std::int64_t> heads = r.get_int_list("layer_num_attention_heads", 1);
  if (heads.empty()) return;
  if (heads.size() != s.layers.size()) {
    r.fail("layer_num_attention_heads", std::to_string(heads.size()) + " values",
           "must list num_hidden_layers (" + std::to_string(s.layers.size()) + ") values");
  }
  for (std::size_t i = 0; i < heads.size(); ++i) {
    LayerSpec& layer = s.layers[i];
    if (layer.attention != AttentionKind::Full && layer.attention != AttentionKind::SlidingWindow) {
      r.fail("layer_num_attention_heads[" + std::to_string(i) + "]", std::to_string(heads[i]),
             "per-layer query heads apply to full and sliding attention layers only");
    }
    if (heads[i] % layer.num_key_value_heads != 0) {
      r.fail("layer_num_attention_heads[" + std::to_string(i) + "]", std::to_string(heads[i]),
             "must be a multiple of the layer's KV heads (" +
                 std::to_string(layer.num_key_value_heads) + ")");
    }
    layer.num_attention_heads = static_cast<std::int32_t>(heads[i]);
  }
}

// Heterogeneous layers (DeciLM / Nemotron-NAS): per-layer KV heads and MLP widths over the
// layers build_layers laid out.
void apply_layer_lists(const MapReader& r, ModelSpec& s) {
  const std::vector<std::int64_t> kv_heads = r.get_int_list("layer_num_key_value_heads", 0);
  const std::vector<std::int64_t> widths = r.get_int_list("layer_intermediate_sizes", 0);
  const auto n = static_cast<std::size_t>(s.num_hidden_layers);
  for (const auto& [key, list] : {std::pair{"layer_num_key_value_heads", &kv_heads},
                                  std::pair{"layer_intermediate_sizes", &widths}}) {
    if (!list->empty() && list->size() != n) {
      r.fail(key, std::to_string(list->size()) + " values",
             "must list num_hidden_layers (" + std::to_string(n) + ") values");
    }
  }
  for (std::size_t i = 0; i < n && !kv_heads.empty(); ++i) {
    LayerSpec& layer = s.layers[i];
    const std::string where = "layer_num_key_value_heads[" + std::to_string(i) + "]";
    const bool per_head_kv = layer.attention == AttentionKind::Full ||
                             layer.attention == AttentionKind::SlidingWindow ||
                             layer.attention == AttentionKind::ChunkedLocal;
    if (!per_head_kv) {
      if (kv_heads[i] != 0)
        r.fail(where, std::to_string(kv_heads[i]), "0: the layer has no attention");
      continue;
    }
    if (kv_heads[i] < 1 || s.num_attention_heads % kv_heads[i] != 0) {
      r.fail(where, std::to_string(kv_heads[i]),
             "must divide num_attention_heads (" + std::to_string(s.num_attention_heads) + ")");
    }
    layer.num_key_value_heads = static_cast<std::int32_t>(kv_heads[i]);
  }
  for (std::size_t i = 0; i < n && !widths.empty(); ++i) {
    LayerSpec& layer = s.layers[i];
    if (widths[i] == 0) {
      layer.mlp = false;
    } else if (!layer.mlp || layer.moe) {
      r.fail("layer_intermediate_sizes[" + std::to_string(i) + "]", std::to_string(widths[i]),
             "0: the layer has no dense MLP");
    } else {
      layer.intermediate_size = static_cast<std::int32_t>(widths[i]);
    }
  }
}

// Caches beside the attention (LayerSpec::beside): Falcon-H1's parallel Mamba2 mixer,
// IQuest-Coder-Loop's second-pass window (every full or sliding attention layer gets one),
// LongCat-Flash's second MLA attention (every MLA layer), or an encoder-decoder's cross-attention
// (every full attention layer).
void apply_beside_caches(const MapReader& r, ModelSpec& s) {
  const bool mamba = r.get_bool("mamba_beside_attention", false);
  const std::int32_t window = r.get_i32("loop_window", 0, 0);
  const std::int32_t encoder_tokens = r.get_i32("cross_attention_encoder_tokens", 0, 0);
  if (encoder_tokens > 0) {
    if (mamba || window > 0 || r.get_bool("dual_mla", false)) {
      r.fail("cross_attention_encoder_tokens", std::to_string(encoder_tokens),
             "a layer keeps one cache beside its attention");
    }
    for (LayerSpec& layer : s.layers) {
      if (layer.attention != AttentionKind::Full) continue;
      layer.beside = AttentionKind::CrossAttention;
      layer.beside_window = encoder_tokens;
    }
    return;
  }
  if (s.shared_blocks > 0 && !mamba) {
    r.fail("shared_blocks", std::to_string(s.shared_blocks),
           "needs mamba_beside_attention (Zamba2: a Mamba2 mixer on every layer)");
  }
  if (r.get_bool("dual_mla", false)) {
    if (mamba || window > 0) {
      r.fail("dual_mla", "true", "a layer keeps one cache beside its attention");
    }
    if (!s.has_mla) r.fail("dual_mla", "true", "needs an mla: block");
    // LongCat-Flash's second MLA attention: its own latent cache, a layer of its own in vLLM.
    for (LayerSpec& layer : s.layers) {
      if (layer.attention == AttentionKind::Mla) layer.beside = AttentionKind::Mla;
    }
    return;
  }
  if (mamba && window > 0) {
    r.fail("loop_window", std::to_string(window), "a layer keeps one cache beside its attention");
  }
  if (mamba && (!s.has_mamba || s.mamba.version != 2)) {
    r.fail("mamba_beside_attention", "true", "needs a mamba: block of version 2");
  }
  if (!mamba && window == 0) return;
  for (LayerSpec& layer : s.layers) {
    if (layer.attention != AttentionKind::Full && layer.attention != AttentionKind::SlidingWindow)
      continue;
    layer.beside = mamba ? AttentionKind::Mamba : AttentionKind::SlidingWindow;
    layer.beside_window = mamba ? 0 : window;
  }
}

}  // namespace

ModelSpec parse_model_spec_yaml(const std::string& yaml_text, const std::string& file) {
  YAML::Node root = load_yaml_checked(yaml_text, file);
  const MapReader r(root, file, "", "model");
  ModelSpec s;
  s.source = file;
  const SharedLayerFields shared = read_model_scalars(r, s);
  if (r.has("mla")) read_mla(r, s);
  MoeLayout moe;
  if (r.has("moe")) moe = read_moe(r, s);
  if (r.has("mamba")) read_mamba(r, s);
  if (r.has("linear_attention")) read_linear_attention(r, s);
  if (r.has("short_conv")) read_short_conv(r, s);
  if (r.has("vision")) read_vision(r, s);
  if (r.has("quantization")) s.quantization = read_quantization(r);
  const LayerKinds kinds = read_layer_kinds(r, s);
  build_layers(r, kinds, shared, moe, s);
  apply_layer_lists(r, s);
  apply_layer_query_heads(r, s);
  apply_beside_caches(r, s);
  finalize_model_spec(s);
  return s;
}

void finalize_model_spec(ModelSpec& s) {
  auto fail = [&](const std::string& field, const std::string& value, const std::string& problem) {
    throw SpecError(s.source, field, value, problem);
  };
  if (s.hidden_size <= 0) fail("hidden_size", std::to_string(s.hidden_size), "must be positive");
  const bool attention_free =
      std::none_of(s.layers.begin(), s.layers.end(), [](const LayerSpec& l) {
        return l.attention == AttentionKind::Full || l.attention == AttentionKind::SlidingWindow ||
               l.attention == AttentionKind::ChunkedLocal || l.attention == AttentionKind::Mla;
      });
  if (s.num_attention_heads <= 0 && !attention_free) {
    fail("num_attention_heads", std::to_string(s.num_attention_heads),
         "must be positive (the model has attention layers)");
  }
  if (s.num_attention_heads > 0 &&
      (s.num_key_value_heads <= 0 || s.num_attention_heads % s.num_key_value_heads != 0)) {
    fail("num_key_value_heads", std::to_string(s.num_key_value_heads),
         "must divide num_attention_heads (" + std::to_string(s.num_attention_heads) + ")");
  }
  if (s.head_dim == 0 && s.num_attention_heads > 0) {
    if (s.hidden_size % s.num_attention_heads != 0) {
      fail("head_dim", "nothing",
           "hidden_size is not a multiple of num_attention_heads; give head_dim");
    }
    s.head_dim = s.hidden_size / s.num_attention_heads;
    if (s.head_dim > kMaxHeadDim) {
      fail("head_dim", "nothing",
           "hidden_size / num_attention_heads = " + std::to_string(s.head_dim) + " is over " +
               std::to_string(kMaxHeadDim) + "; give head_dim");
    }
  }
  if (s.rotary_dim == 0) s.rotary_dim = s.has_mla ? s.mla.qk_rope_head_dim : s.head_dim;
  if (static_cast<int>(s.layers.size()) != s.num_hidden_layers) {
    fail("layers", std::to_string(s.layers.size()),
         "per-layer list does not match num_hidden_layers");
  }
  bool any_dense_mlp = false;
  for (auto& layer : s.layers) {
    if (layer.num_key_value_heads == 0) layer.num_key_value_heads = s.num_key_value_heads;
    if (layer.head_dim == 0) layer.head_dim = s.head_dim;
    if (layer.head_dim_v == 0) layer.head_dim_v = layer.head_dim;
    any_dense_mlp |= layer.mlp && !layer.moe;
  }
  if (any_dense_mlp && s.intermediate_size <= 0) {
    fail("intermediate_size", std::to_string(s.intermediate_size),
         "dense MLP layers need a positive width");
  }
  if (s.max_position_embeddings <= 0) {
    fail("max_position_embeddings", std::to_string(s.max_position_embeddings), "must be positive");
  }
  if (s.vocab_size <= 0) fail("vocab_size", std::to_string(s.vocab_size), "must be positive");
  for (const auto& [role, layers] : s.quantization.unquantized_layers) {
    if (!layers.empty() && layers.back() >= s.num_hidden_layers) {
      fail("quantization.unquantized_layers." + role, std::to_string(layers.back()),
           "past the last decoder layer (num_hidden_layers " + std::to_string(s.num_hidden_layers) +
               ")");
    }
  }
}

ModelSpec load_model_spec_file(const std::string& path) {
  return parse_model_spec_yaml(read_regular_file(path, "spec file", kMaxSpecFileBytes), path);
}

namespace {

constexpr std::int64_t kMib = std::int64_t{1} << 20;
// gpus.yaml's header rule: CUDA's total sits a median 450 MiB under nvidia-smi's.
constexpr std::int64_t kNvidiaSmiAboveCudaMib = 450;
// A slice with no `nvidia-smi mig -lgip` figure: memory_eighths/8 of the parent's CUDA total
// less 640 MiB. On the H100 80GB, whose lgip table is known, eighths x 79.19 GiB sits 389-631
// MiB above the lgip figure less 450 MiB (1g 602, 2-eighths 631, 4-eighths 547, 7g 389): 640
// MiB (the largest, rounded up) puts every derived slice 9-251 MiB low, on the safe side there.
constexpr std::int64_t kMigDerivedGapMib = 640;

// One GPU per MIG profile of `parent`: named as NVML names a MIG device ("<name> MIG
// <profile>"), every alias of the parent likewise, and the parent's other facts kept.
std::vector<GpuSpec> read_mig_slices(const MapReader& r, const GpuSpec& parent) {
  const MapReader mig(r.child("mig"), r.file(), r.field("mig"), "mig");
  const std::string source = mig.get_string("source");
  const YAML::Node list = mig.child("profiles");
  if (!list.IsSequence() || list.size() == 0) {
    mig.fail(mig.field("profiles"), node_text(list), "expected a non-empty list of profiles");
  }
  std::vector<GpuSpec> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const MapReader p(list[i], r.file(), mig.field("profiles[" + std::to_string(i) + "]"),
                      "mig_profile");
    const std::string profile = p.get_string("profile");
    const std::size_t g_at = profile.find("g.");
    if (g_at == std::string::npos || g_at == 0 || profile.size() < g_at + 5 ||
        profile.compare(profile.size() - 2, 2, "gb") != 0 ||
        !std::all_of(profile.begin(), profile.begin() + static_cast<std::ptrdiff_t>(g_at),
                     [](unsigned char c) { return std::isdigit(c) != 0; })) {
      p.fail(p.field("profile"), "'" + profile + "'", "expected <N>g.<M>gb, as NVML names it");
    }
    const std::int64_t eighths = p.get_int("memory_eighths", 0, 1);
    const int compute_slices = std::stoi(profile.substr(0, g_at));
    if (compute_slices > 7) p.fail(p.field("profile"), "'" + profile + "'", "over 7 slices");
    GpuSpec s = parent;
    s.id = parent.id + "-MIG-" + profile;
    const std::string suffix = " MIG " + profile;
    s.name = parent.name + suffix;
    s.aliases.clear();
    s.aliases.push_back(s.name);
    for (const auto& alias : parent.aliases) s.aliases.push_back(alias + suffix);
    s.shared_aliases.clear();
    for (const auto& alias : parent.shared_aliases) s.shared_aliases.push_back(alias + suffix);
    s.mig_parent = parent.id;
    s.mig_profile = profile;
    s.nvidia_smi_memory_mib = 0;
    s.total_memory_derived = true;
    const double lgip_gib = p.get_double("lgip_memory_gib", 0.0, 0.0, 4096.0);
    if (lgip_gib > 0) {
      const auto lgip_mib = static_cast<std::int64_t>(std::llround(lgip_gib * 1024));
      s.total_memory_bytes = (lgip_mib - kNvidiaSmiAboveCudaMib) * kMib;
      s.total_memory_source = "nvidia-smi mig -lgip: " + p.child("lgip_memory_gib").Scalar() +
                              " GiB less 450 MiB (DERIVED, not measured on a slice; " + source +
                              ")";
    } else {
      s.total_memory_bytes =
          (parent.total_memory_bytes / kMib * eighths / 8 - kMigDerivedGapMib) * kMib;
      s.total_memory_source = std::to_string(eighths) + "/8 of " + parent.id +
                              "'s total less 640 MiB (DERIVED by gpus.yaml's MIG rule, not "
                              "measured; " +
                              source + ")";
    }
    s.num_sms = p.get_i32("num_sms", parent.num_sms * compute_slices / 7, 1);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::vector<GpuSpec> parse_gpus_yaml(const std::string& yaml_text, const std::string& file,
                                     std::size_t first_index) {
  YAML::Node root = load_yaml_checked(yaml_text, file);
  if (!root.IsMap() || !root["gpus"].IsSequence() || root.size() != 1) {
    throw SpecError(file, "gpus", node_text(root), "expected a single top-level 'gpus:' list");
  }
  std::vector<GpuSpec> out;
  const YAML::Node list = root["gpus"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const MapReader r(list[i], file, "gpus[" + std::to_string(first_index + i) + "]", "gpu");
    GpuSpec g;
    g.id = r.get_string("id");
    g.aliases = r.get_string_list("aliases");
    g.shared_aliases = r.get_string_list("shared_aliases");
    g.name = r.get_string("name");
    g.vendor = r.get_string("vendor");
    if (g.vendor != "nvidia" && g.vendor != "amd") {
      r.fail(r.field("vendor"), "'" + g.vendor + "'", "expected nvidia or amd");
    }
    g.family = r.get_string("family");
    g.total_memory_bytes = r.get_int("total_memory_bytes", 0, std::int64_t{1} << 30);
    g.total_memory_source = r.get_string("total_memory_source");
    g.total_memory_derived = r.get_bool("total_memory_derived", false);
    g.compute_capability = r.get_double("compute_capability", 0.0, 0.0, 20.0);
    g.num_sms = r.get_i32("num_sms", 0, 0);
    g.unified_memory = r.get_bool("unified_memory", false);
    g.pcie_only = r.get_bool("pcie_only", false);
    g.nvidia_smi_memory_mib = r.get_int("nvidia_smi_memory_mib", 0, 1024);
    std::vector<GpuSpec> slices;
    if (r.has("mig")) slices = read_mig_slices(r, g);
    out.push_back(std::move(g));
    for (auto& slice : slices) out.push_back(std::move(slice));
  }
  return out;
}

}  // namespace vramplan
