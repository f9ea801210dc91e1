// Weight bytes against independently known numbers: parameter counts derived by hand from
// each config, published checkpoint sizes (reference/sizes.md) and "Model loading took"
// lines of shared/measured/dev.jsonl.
#include <gtest/gtest.h>

#include "test_support.hpp"
#include "vramplan/weights.hpp"

using namespace vramplan;
using vramplan_test::kGiB;
using vramplan_test::spec_from_yaml;

namespace {

QuantSpec none() { return QuantSpec{}; }

}  // namespace

TEST(Weights, Llama31_8B_ParameterCountByHand) {
  const ModelSpec s = spec_from_yaml(vramplan_test::kLlama31_8B);
  // Per layer: q 4096*4096 + k,v 2*1024*4096 + o 4096*4096 + gate,up 2*14336*4096
  //            + down 4096*14336 = 218,103,808 linear params; two RMSNorms 2*4096.
  const std::int64_t per_layer = 4096LL * 4096 + 2LL * 1024 * 4096 + 4096LL * 4096 +
                                 2LL * 14336 * 4096 + 4096LL * 14336 + 2 * 4096;
  const std::int64_t embed = 128256LL * 4096;  // = untied lm_head
  const std::int64_t expected = 32 * per_layer + 2 * embed + 4096;
  EXPECT_EQ(expected, 8030261248LL);  // the published figure
  EXPECT_EQ(parameter_count(s), expected);
  EXPECT_EQ(checkpoint_tensor_bytes(s), 2 * expected);  // 16,060,522,496 bytes in bf16
}

TEST(Weights, Llama31_8B_Bf16MatchesModelLoadingLine) {
  const ModelSpec s = spec_from_yaml(vramplan_test::kLlama31_8B);
  const WeightBytes w = weight_bytes_per_rank(s, none(), DType::BF16, RankPlacement{});
  // Parameters in bf16 plus the rotary cos/sin cache [131072, 128] bf16 = 32 MiB.
  EXPECT_EQ(w.rotary_cache, 131072LL * 128 * 2);
  EXPECT_EQ(w.total(), 16060522496LL + 33554432LL);
  // dev-015/021: "Model loading took 14.99 GiB" (rounded to 0.01 GiB).
  EXPECT_NEAR(w.total() / kGiB, 14.99, 0.005);
  // dev-018: --dtype float32 -> 29.98 GiB (4 B/param, fp32 rotary cache).
  const WeightBytes w32 = weight_bytes_per_rank(s, none(), DType::F32, RankPlacement{});
  EXPECT_NEAR(w32.total() / kGiB, 29.98, 0.005);
}

TEST(Weights, Llama31_8B_OnlineFp8KeepsEmbeddingsInBf16) {
  const ModelSpec s = spec_from_yaml(vramplan_test::kLlama31_8B);
  QuantSpec fp8;
  fp8.method = QuantMethod::Fp8;
  fp8.online = true;
  const WeightBytes w = weight_bytes_per_rank(s, fp8, DType::BF16, RankPlacement{});
  // Linear params 6,979,321,856 at 1 B + one fp32 scale per Linear (7 per layer);
  // embed + lm_head + norms (1,050,939,392) at 2 B; rotary cache 32 MiB.
  const std::int64_t linear = 6979321856LL;
  const std::int64_t rest = 2LL * 525336576 + 266240;
  EXPECT_EQ(w.total(), linear + 32 * 5 * 4 + 2 * rest + 33554432LL);
  EXPECT_NEAR(w.total() / kGiB, 8.49, 0.01);  // dev-016 "Model loading took 8.49 GiB"
}

TEST(Weights, Llama31_8B_TensorParallelSplitsAndReplicatesKvHeads) {
  const ModelSpec s = spec_from_yaml(vramplan_test::kLlama31_8B);
  const WeightBytes tp2 = weight_bytes_per_rank(s, none(), DType::BF16, RankPlacement{2, 1, 0});
  // Everything but norms and the rotary cache halves at TP=2: dev-025 logs 7.51 GiB.
  EXPECT_NEAR(tp2.total() / kGiB, 7.51, 0.01);
  // TP=16 > 8 KV heads: each rank keeps 1 full KV head (2*128*4096 per layer) instead of 1/2.
  const WeightBytes tp16 = weight_bytes_per_rank(s, none(), DType::BF16, RankPlacement{16, 1, 0});
  const WeightBytes tp8 = weight_bytes_per_rank(s, none(), DType::BF16, RankPlacement{8, 1, 0});
  const std::int64_t kv_per_rank_tp8 = 32LL * 2 * 1 * 128 * 4096 * 2;
  const std::int64_t q_o_mlp_tp8 = tp8.attention - kv_per_rank_tp8;
  EXPECT_EQ(tp16.attention, q_o_mlp_tp8 / 2 + kv_per_rank_tp8);
}

TEST(Weights, Llama31_8B_PipelineStagesSplitLayersAndEnds) {
  const ModelSpec s = spec_from_yaml(vramplan_test::kLlama31_8B);
  // dev-023 (PP=2): 7.51 GiB on the first stage; dev-024 (PP=4): 4.26 GiB.
  const WeightBytes pp2 = weight_bytes_per_rank(s, none(), DType::BF16, RankPlacement{1, 2, 0});
  EXPECT_NEAR(pp2.total() / kGiB, 7.51, 0.01);
  EXPECT_EQ(pp2.lm_head, 0);
  const WeightBytes pp4 = weight_bytes_per_rank(s, none(), DType::BF16, RankPlacement{1, 4, 0});
  EXPECT_NEAR(pp4.total() / kGiB, 4.26, 0.01);
  const WeightBytes last = weight_bytes_per_rank(s, none(), DType::BF16, RankPlacement{1, 4, 3});
  EXPECT_EQ(last.embedding, 0);
  EXPECT_EQ(last.lm_head, 128256LL * 4096 * 2);
}

TEST(Weights, PipelineSplitFollowsVllm) {
  // vLLM get_pp_indices: 61 layers over 4 stages -> [15, 15, 16, 15]: the remainder goes
  // one layer each to the stages just before the last.
  EXPECT_EQ(pipeline_layer_range(61, 4, 0).end, 15);
  EXPECT_EQ(pipeline_layer_range(61, 4, 1).begin, 15);
  EXPECT_EQ(pipeline_layer_range(61, 4, 1).end, 30);
  EXPECT_EQ(pipeline_layer_range(61, 4, 2).end, 46);
  EXPECT_EQ(pipeline_layer_range(61, 4, 3).end, 61);
  EXPECT_EQ(pipeline_layer_range(62, 4, 2).end - pipeline_layer_range(62, 4, 2).begin, 16);
}

TEST(Weights, VocabPaddingToMultipleOf64) {
  EXPECT_EQ(padded_vocab_size(50257), 50304);
  EXPECT_EQ(padded_vocab_size(49153), 49216);
  EXPECT_EQ(padded_vocab_size(128256), 128256);
}

TEST(Weights, Qwen25_7B_ByHandAndMeasured) {
  // Qwen2.5-7B-Instruct config.json: h 3584, 28 layers, 28 heads, 4 KV heads, I 18944,
  // vocab 152064, untied, q/k/v biases, max_position 32768.
  const ModelSpec s = spec_from_yaml(R"(
id: test/qwen2.5-7b
model_type: qwen2
hidden_size: 3584
num_hidden_layers: 28
num_attention_heads: 28
num_key_value_heads: 4
intermediate_size: 18944
vocab_size: 152064
max_position_embeddings: 32768
torch_dtype: bfloat16
qkv_bias: true
)");
  const std::int64_t per_layer = 3584LL * 3584 + 2LL * 512 * 3584 + (3584 + 1024) + 3584LL * 3584 +
                                 3LL * 18944 * 3584 + 2 * 3584;
  const std::int64_t expected = 28 * per_layer + 2LL * 152064 * 3584 + 3584;
  EXPECT_EQ(parameter_count(s), expected);
  EXPECT_NEAR(expected / 1e9, 7.62, 0.005);  // "7.62B" on the model card
  // dev-036: "Model loading took 14.25 GiB"; we hold 14.19 (0.4% below: an unexplained
  // ~58 MiB buffer in the Qwen2 path, kept visible rather than fitted away).
  const WeightBytes w = weight_bytes_per_rank(s, none(), DType::BF16, RankPlacement{});
  EXPECT_NEAR(w.total() / kGiB, 14.25, 0.07);
}

TEST(Weights, DeepSeekV3_MlaMoeByHand) {
  // DeepSeek-V3 config.json: h 7168, 61 layers (3 dense, 58 MoE), 128 heads, MLA q_lora 1536,
  // kv_lora 512, nope 128, rope 64, v 128; dense I 18432; 256 experts of 2048, 1 shared,
  // top-8; vocab 129280 untied; e_score_correction_bias per MoE layer.
  const ModelSpec s = spec_from_yaml(R"(
id: test/deepseek-v3
model_type: deepseek_v3
hidden_size: 7168
num_hidden_layers: 61
num_attention_heads: 128
intermediate_size: 18432
vocab_size: 129280
max_position_embeddings: 163840
torch_dtype: bfloat16
mla: {q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64, v_head_dim: 128}
moe: {num_experts: 256, num_experts_per_tok: 8, moe_intermediate_size: 2048, num_shared_experts: 1, first_k_dense: 3, router_bias: true}
num_nextn_predict_layers: 1
)");
  const std::int64_t attn = 1536LL * 7168 + 1536 + 128LL * 192 * 1536 + 576LL * 7168 + 512 +
                            128LL * 256 * 512 + 7168LL * 128 * 128;
  const std::int64_t dense_mlp = 3LL * 7168 * 18432;
  const std::int64_t moe_mlp = 256LL * 7168 + 256 + 256LL * 3 * 7168 * 2048 + 3LL * 7168 * 2048;
  const std::int64_t expected =
      61 * (attn + 2 * 7168) + 3 * dense_mlp + 58 * moe_mlp + 2LL * 129280 * 7168 + 7168;
  EXPECT_EQ(expected, 671026419200LL);  // DeepSeek's published parameter count (671B)
  EXPECT_EQ(parameter_count(s), expected);
}

namespace {

// The MTP layer's [h, 2h] input projection, the one group of that shape in the MTP layer.
TensorGroup mtp_projection(const ModelSpec& spec) {
  for (const auto& g : model_tensor_groups(spec, true)) {
    if (g.layer == spec.num_hidden_layers && g.rows == spec.hidden_size &&
        g.cols == 2LL * spec.hidden_size) {
      return g;
    }
  }
  ADD_FAILURE() << "no MTP projection in " << spec.id;
  return TensorGroup{};
}

}  // namespace

TEST(Weights, DeepSeekMtpEhProjStaysBf16InAnFp8Checkpoint) {
  // DeepSeek-V3's model.layers.61.eh_proj.weight is [7168, 14336] bf16 in the fp8 checkpoint
  // (no weight_scale_inv beside it): vLLM's deepseek_mtp.py builds it as a plain nn.Linear.
  const std::string shapes = R"(
model_type: deepseek_v3
hidden_size: 7168
num_hidden_layers: 61
num_attention_heads: 128
intermediate_size: 18432
vocab_size: 129280
max_position_embeddings: 163840
torch_dtype: bfloat16
mla: {q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64, v_head_dim: 128}
moe: {num_experts: 256, num_experts_per_tok: 8, moe_intermediate_size: 2048, num_shared_experts: 1, first_k_dense: 3, router_bias: true}
num_nextn_predict_layers: 1
quantization: {method: fp8, scale_strategy: block, block_size: [128, 128], unquantized: [router]}
)";
  const ModelSpec deepseek = spec_from_yaml("id: test/deepseek-v3\n" + shapes);
  const TensorGroup eh_proj = mtp_projection(deepseek);
  const std::int64_t bf16_bytes = 7168LL * 14336 * 2;
  EXPECT_EQ(bf16_bytes, 205520896LL);
  EXPECT_EQ(tensor_group_bytes(eh_proj, deepseek.quantization, DType::BF16, 1, true), bf16_bytes);
  // On the GPU it is replicated and unquantized too: each of 8 TP ranks holds all of it.
  EXPECT_EQ(tensor_group_bytes(eh_proj, deepseek.quantization, DType::BF16, 8, false), bf16_bytes);
  // Qwen3-Next's MTP fc is a ColumnParallelLinear built with the quant config: an fp8 block
  // checkpoint stores it in fp8 with 56 x 112 fp32 block scales.
  std::string qwen_next_shapes = shapes;
  qwen_next_shapes.replace(qwen_next_shapes.find("deepseek_v3"), 11, "qwen3_next");
  const ModelSpec qwen_next = spec_from_yaml("id: test/qwen3-next-like\n" + qwen_next_shapes);
  EXPECT_EQ(
      tensor_group_bytes(mtp_projection(qwen_next), qwen_next.quantization, DType::BF16, 1, true),
      7168LL * 14336 + 56LL * 112 * 4);
}

TEST(Weights, BitsandbytesNf4CheckpointStoresItsQuantStateAsJsonBytes) {
  // A public listing of a bnb-nf4 Gemma-3 checkpoint (google/gemma.cpp issue 533) shows, per
  // quantized Linear, weight uint8 [n*k/2, 1], absmax [n*k/64], quant_map [16] and
  // quant_state.bitsandbytes__nf4 [81] for q_proj (n 1024, k 1152), [80] for k_proj (n 256):
  // the bytes of json.dumps({"quant_type": "nf4", "blocksize": 64, "dtype": "float16",
  // "shape": [1024, 1152]}), 66 fixed characters + "float16" + the digits of n and k.
  QuantSpec nf4;
  nf4.method = QuantMethod::BnbNf4;
  nf4.double_quant = false;
  TensorGroup q_proj{};
  q_proj.role = TensorRole::AttnQ;
  q_proj.split = TensorSplit::Column;
  q_proj.rows = 1024;
  q_proj.cols = 1152;
  q_proj.count = 1;
  q_proj.is_linear = true;
  const std::int64_t packed = 1024LL * 1152 / 2;         // 589,824 uint8
  const std::int64_t absmax = 4LL * (1024 * 1152 / 64);  // 18,432 fp32
  EXPECT_EQ(tensor_group_bytes(q_proj, nf4, DType::F16, 1, true), packed + absmax + 64 + 81);
  TensorGroup k_proj = q_proj;
  k_proj.rows = 256;
  EXPECT_EQ(tensor_group_bytes(k_proj, nf4, DType::F16, 1, true),
            256LL * 1152 / 2 + 4LL * (256 * 1152 / 64) + 64 + 80);
  // "bfloat16" is one character longer; on the GPU vLLM holds no JSON state.
  EXPECT_EQ(tensor_group_bytes(q_proj, nf4, DType::BF16, 1, true), packed + absmax + 64 + 82);
  EXPECT_EQ(tensor_group_bytes(q_proj, nf4, DType::BF16, 1, false), packed + absmax + 64);
}

TEST(Weights, CheckpointBytesTheSpecDoesNotExplainAreSharedLikeLayers) {
  ModelSpec spec = vramplan_test::spec_from_yaml(vramplan_test::kLlama31_8B);
  const RankPlacement tp2{2, 1, 0};
  const std::int64_t formula =
      weight_bytes_per_rank(spec, spec.quantization, DType::BF16, tp2).total();
  // Headers list 1 GiB more than the spec's tensors (e.g. an extra head the spec lacks): each
  // of 2 TP ranks holds half; with PP=2 as well, each stage a quarter (16 of 32 layers).
  spec.checkpoint_bytes = checkpoint_tensor_bytes(spec, true) + (std::int64_t{1} << 30);
  EXPECT_EQ(weight_bytes_per_rank(spec, spec.quantization, DType::BF16, tp2).total() - formula,
            std::int64_t{1} << 29);
  const RankPlacement tp2_pp2{2, 2, 1};
  spec.checkpoint_bytes = 0;
  const std::int64_t stage =
      weight_bytes_per_rank(spec, spec.quantization, DType::BF16, tp2_pp2).total();
  spec.checkpoint_bytes = checkpoint_tensor_bytes(spec, true) + (std::int64_t{1} << 30);
  EXPECT_EQ(weight_bytes_per_rank(spec, spec.quantization, DType::BF16, tp2_pp2).total() - stage,
            std::int64_t{1} << 28);
}

namespace {

// Llama-2-13B shapes (h 5120, 40 heads of 128, no GQA, SwiGLU 13824, vocab 32000, fp16).
const char* kLlama2_13B = R"(
id: test/llama-2-13b
model_type: llama
hidden_size: 5120
num_hidden_layers: 40
num_attention_heads: 40
num_key_value_heads: 40
intermediate_size: 13824
vocab_size: 32000
max_position_embeddings: 4096
torch_dtype: float16
)";

}  // namespace

TEST(Weights, GptqCheckpointStoresOneGIdxPerModule) {
  // AutoGPTQ writes qweight, qzeros, scales and g_idx [k] int32 for every quantized Linear:
  // k_proj and v_proj (one AttnKV group) and gate_proj and up_proj (one MlpGateUp group) keep
  // a g_idx each. Per Llama-2-13B layer, by hand for 8-bit, group 128, act-order:
  //   per module [n, k]: qweight k*n*8/8, qzeros (k/128)*(n*8/32)*4, scales (k/128)*n*2, 4k
  const ModelSpec spec = spec_from_yaml(std::string(kLlama2_13B) +
                                        "quantization: {method: gptq, bits: 8, group_size: 128, "
                                        "desc_act: true}\n");
  auto module = [](std::int64_t n, std::int64_t k) {
    return k * n + (k / 128) * n + (k / 128) * n * 2 + 4 * k;
  };
  const std::int64_t h = 5120;
  const std::int64_t i = 13824;
  const std::int64_t layer = 4 * module(h, h) + 2 * module(i, h) + module(h, i) + 2 * h * 2;
  EXPECT_EQ(layer, 324827136);
  const std::int64_t expected = 40 * layer + 2 * 32000 * h * 2 + h * 2;
  // = 13,652,715,520 tensor bytes of TheBloke/MythoMax-L2-13B-GPTQ's 8-bit 128g act-order
  // file less its 4,259,840 bytes of zero fp16 biases (tests/python/test_published_quantized.py).
  EXPECT_EQ(expected, 13648455680);
  EXPECT_EQ(checkpoint_tensor_bytes(spec), expected);
  // Counting one g_idx per merged group (the rule before) missed v_proj's and up_proj's.
  const TensorGroup kv = [&] {
    for (const auto& g : model_tensor_groups(spec))
      if (g.role == TensorRole::AttnKV) return g;
    return TensorGroup{};
  }();
  EXPECT_EQ(kv.modules, 2);
  EXPECT_EQ(tensor_group_bytes(kv, spec.quantization, DType::F16, 1, true), 2 * module(h, h));
  // On the GPU vLLM merges k and v into one QKVParallelLinear: one g_idx (plus Marlin's sort
  // indices under act-order), so the per-rank figure is unchanged by the checkpoint's layout.
  EXPECT_EQ(tensor_group_bytes(kv, spec.quantization, DType::F16, 1, false),
            2 * h * h + 2 * (h / 128) * h * 2 + 2 * 4 * h);
}

TEST(Weights, PerTensorFp8CheckpointStoresScalesPerModule) {
  // A public header listing of a per-tensor fp8 Mistral-Small checkpoint (code-index hit
  // 69079498688) shows a float32 scalar weight_scale and input_scale beside each of q_proj,
  // k_proj, v_proj, o_proj, gate_proj, up_proj and down_proj: 7 pairs per layer, not 5.
  const ModelSpec spec = spec_from_yaml(std::string(kLlama2_13B) +
                                        "quantization: {method: fp8, scale_strategy: tensor, "
                                        "static_activation_scale: true, unquantized: [lm_head]}\n");
  const std::int64_t h = 5120;
  const std::int64_t i = 13824;
  const std::int64_t layer = 4 * h * h + 3 * h * i + 7 * (4 + 4) + 2 * h * 2;
  const std::int64_t expected = 40 * layer + 2 * 32000 * h * 2 + h * 2;
  EXPECT_EQ(expected, 13343961280);
  EXPECT_EQ(checkpoint_tensor_bytes(spec), expected);
}

TEST(Weights, FusedCheckpointLayoutsKeepOneModule) {
  // Phi-3 stores qkv_proj and gate_up_proj as single Linears: one module per group.
  ModelSpec spec = spec_from_yaml(kLlama2_13B);
  spec.model_type = "phi3";
  for (const auto& g : model_tensor_groups(spec))
    EXPECT_EQ(g.modules, 1) << tensor_role_name(g.role);
}

TEST(Weights, PackedWna16CheckpointStoresAWeightShapePerModule) {
  // compressed-tensors pack-quantized: per quantized Linear weight_packed int32 [n, k/8],
  // weight_scale [n, k/G] in torch_dtype and weight_shape int64 [2]; a public weight_map of a
  // W4A16 checkpoint (llm-compressor issue 2512) lists weight_shape for q_a_proj, kv_a_proj, ...
  // and each of gate_proj and up_proj. Llama-2-13B, 4-bit, group 128, symmetric, fp16:
  const ModelSpec spec = spec_from_yaml(std::string(kLlama2_13B) +
                                        "quantization: {method: packed_wna16, bits: 4, "
                                        "group_size: 128, unquantized: [lm_head]}\n");
  auto module = [](std::int64_t n, std::int64_t k) { return n * k / 2 + n * (k / 128) * 2 + 16; };
  const std::int64_t h = 5120;
  const std::int64_t i = 13824;
  const std::int64_t layer = 4 * module(h, h) + 2 * module(i, h) + module(h, i) + 2 * h * 2;
  const std::int64_t expected = 40 * layer + 2 * 32000 * h * 2 + h * 2;
  EXPECT_EQ(expected, 7198325120);
  EXPECT_EQ(checkpoint_tensor_bytes(spec), expected);
}

TEST(Weights, Nvfp4CheckpointStoresGlobalScalesPerModule) {
  // NVFP4 (ModelOpt and compressed-tensors): per quantized Linear e2m1 pairs [n, k/2], fp8
  // block scales [n, k/16], and two float32 scalars (weight_scale_2 and input_scale, or
  // weight_global_scale and input_global_scale): 7 pairs per Llama layer, not 5.
  const ModelSpec spec = spec_from_yaml(std::string(kLlama2_13B) +
                                        "quantization: {method: nvfp4, unquantized: [lm_head]}\n");
  auto module = [](std::int64_t n, std::int64_t k) { return n * k / 2 + n * (k / 16) + 8; };
  const std::int64_t h = 5120;
  const std::int64_t i = 13824;
  const std::int64_t layer = 4 * module(h, h) + 2 * module(i, h) + module(h, i) + 2 * h * 2;
  const std::int64_t expected = 40 * layer + 2 * 32000 * h * 2 + h * 2;
  EXPECT_EQ(expected, 7793062080);
  EXPECT_EQ(checkpoint_tensor_bytes(spec), expected);
}
