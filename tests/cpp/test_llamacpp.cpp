// llama.cpp's buffers from header-only GGUF files written here: KV bytes as llama_kv_cache
// allocates them, model bytes per device under -ngl / --n-cpu-moe, and the solver. Every
// expected number is derived by hand in the comments from llama.cpp's rules (docs/llamacpp.md).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gguf_test_writer.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/llamacpp.hpp"
#include "vramplan/spec_db.hpp"
#include "vramplan/tensor_headers.hpp"
#include "vramplan/weights.hpp"

using namespace vramplan;

namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::uint32_t kF32 = 0, kF16 = 1, kQ4K = 12, kQ6K = 14;

// A GGUF v3 header; the data region is only declared (the file size given to the parser).
struct HeaderWriter : vramplan_test::GgufTestWriter {
  GgufHeader parse() const {
    const std::string bytes = header();
    const auto file_bytes = static_cast<std::int64_t>(bytes.size()) + data_bytes;
    return parse_gguf_header(bytes, file_bytes, "<test.gguf>");
  }
};

// Q4_K: 144 B per 256 values; Q6_K: 210 B per 256.
std::int64_t q4k(std::int64_t elements) { return elements / 256 * 144; }
std::int64_t q6k(std::int64_t elements) { return elements / 256 * 210; }

// A Llama-3.x-shaped GGUF: every linear Q4_K, output Q6_K, norms F32 (a uniform stand-in for
// the Q4_K_M / Q4_K_S mixes, so the bytes can be derived by hand).
LlamacppModel llama_shaped(std::uint32_t n_layer, std::uint32_t n_embd, std::uint32_t n_ff,
                           std::uint32_t n_head) {
  const std::uint64_t n_head_kv = 8, head_dim = 128, vocab = 128256;
  HeaderWriter w;
  w.kv_str("general.architecture", "llama");
  w.kv_u32("llama.block_count", n_layer);
  w.kv_u32("llama.context_length", 131072);
  w.kv_u32("llama.embedding_length", n_embd);
  w.kv_u32("llama.feed_forward_length", n_ff);
  w.kv_u32("llama.attention.head_count", n_head);
  w.kv_u32("llama.attention.head_count_kv", static_cast<std::uint32_t>(n_head_kv));
  const std::int64_t e = n_embd, ff = n_ff;
  const auto kv = static_cast<std::int64_t>(n_head_kv * head_dim);
  const auto n_vocab = static_cast<std::int64_t>(vocab);
  w.tensor("token_embd.weight", {n_embd, vocab}, kQ4K, q4k(e * n_vocab));
  for (std::uint32_t i = 0; i < n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    w.tensor(p + "attn_norm.weight", {n_embd}, kF32, e * 4);
    w.tensor(p + "attn_q.weight", {n_embd, n_embd}, kQ4K, q4k(e * e));
    w.tensor(p + "attn_k.weight", {n_embd, n_head_kv * head_dim}, kQ4K, q4k(e * kv));
    w.tensor(p + "attn_v.weight", {n_embd, n_head_kv * head_dim}, kQ4K, q4k(e * kv));
    w.tensor(p + "attn_output.weight", {n_embd, n_embd}, kQ4K, q4k(e * e));
    w.tensor(p + "ffn_norm.weight", {n_embd}, kF32, e * 4);
    w.tensor(p + "ffn_gate.weight", {n_embd, n_ff}, kQ4K, q4k(e * ff));
    w.tensor(p + "ffn_up.weight", {n_embd, n_ff}, kQ4K, q4k(e * ff));
    w.tensor(p + "ffn_down.weight", {n_ff, n_embd}, kQ4K, q4k(e * ff));
  }
  w.tensor("output_norm.weight", {n_embd}, kF32, e * 4);
  w.tensor("output.weight", {n_embd, vocab}, kQ6K, q6k(e * n_vocab));
  return llamacpp_model_from_gguf(w.parse());
}

LlamacppModel llama_31_8b() { return llama_shaped(32, 4096, 14336, 32); }
LlamacppModel llama_31_70b() { return llama_shaped(80, 8192, 28672, 64); }

}  // namespace

TEST(LlamacppKv, Llama31At8kHolds1024MiBInF16And544MiBInQ8) {
  // 32 layers x (K + V) x 8 KV heads x 128 x 8192 cells: f16 2 B -> 32 x 2 x 16 MiB = 1024 MiB;
  // q8_0 34 B per 32 values: 1024 / 32 x 34 = 1088 B per cell row -> 32 x 2 x 8.5 MiB = 544 MiB.
  const LlamacppModel model = llama_31_8b();
  LlamacppLaunch launch;
  launch.ctx_size = 8192;
  EXPECT_EQ(llamacpp_memory(model, launch).gpu_kv_bytes, 1024 * kMiB);
  launch.cache_type_k = launch.cache_type_v = llamacpp_cache_type("q8_0");
  const LlamacppMemory q8 = llamacpp_memory(model, launch);
  EXPECT_EQ(q8.gpu_kv_bytes, 544 * kMiB);
  EXPECT_TRUE(q8.flash_attn);  // auto turns flash attention on for a quantized V cache
  EXPECT_EQ(q8.host_kv_bytes, 0);
}

TEST(LlamacppKv, ContextPadsTo256PerStream) {
  const LlamacppModel model = llama_31_8b();
  LlamacppLaunch launch;
  launch.ctx_size = 8000;  // padded to 8192: the same 1024 MiB
  EXPECT_EQ(llamacpp_memory(model, launch).n_ctx, 8192);
  EXPECT_EQ(llamacpp_memory(model, launch).gpu_kv_bytes, 1024 * kMiB);
  // -np 3, not unified: n_ctx_seq = pad(8192 / 3 = 2730, 256) = 2816, n_ctx = 3 x 2816 = 8448;
  // KV = 1024 MiB x 8448 / 8192 = 1056 MiB.
  launch.ctx_size = 8192;
  launch.parallel = 3;
  const LlamacppMemory three = llamacpp_memory(model, launch);
  EXPECT_EQ(three.n_ctx_seq, 2816);
  EXPECT_EQ(three.n_stream, 3);
  EXPECT_EQ(three.gpu_kv_bytes, 1056 * kMiB);
  // Unified: one stream of 8192 cells shared by the 3 slots: 1024 MiB.
  launch.kv_unified = true;
  EXPECT_EQ(llamacpp_memory(model, launch).gpu_kv_bytes, 1024 * kMiB);
}

TEST(LlamacppKv, QuantizedVWithFlashAttentionOffIsRefused) {
  LlamacppLaunch launch;
  launch.ctx_size = 8192;
  launch.cache_type_v = llamacpp_cache_type("q4_0");
  launch.flash_attn = LlamacppFlashAttn::Off;
  EXPECT_THROW(llamacpp_memory(llama_31_8b(), launch), ConfigError);
  EXPECT_THROW(llamacpp_cache_type("q4_k"), ConfigError);  // not in kv_cache_types
}

TEST(LlamacppKv, SlidingWindowLayersHoldTheWindowUnlessSwaFull) {
  // gemma2: pattern 2, so layers 0 and 2 are SWA. Window 4096, -c 32768, -ub 512: SWA cells =
  // pad(min(32768, 4096 + 512), 256) = 4608. Width 8 heads x 256 = 2048, f16:
  // full layers 2 x 2048 x 32768 x 2 B = 256 MiB each; SWA 2 x 2048 x 4608 x 2 B = 36 MiB each.
  HeaderWriter w;
  w.kv_str("general.architecture", "gemma2");
  w.kv_u32("gemma2.block_count", 4);
  w.kv_u32("gemma2.context_length", 8192);
  w.kv_u32("gemma2.embedding_length", 2048);
  w.kv_u32("gemma2.attention.head_count", 8);
  w.kv_u32("gemma2.attention.head_count_kv", 8);
  w.kv_u32("gemma2.attention.key_length", 256);
  w.kv_u32("gemma2.attention.value_length", 256);
  w.kv_u32("gemma2.attention.sliding_window", 4096);
  w.tensor("token_embd.weight", {2048, 1000}, kF16, 4'096'000);
  const LlamacppModel model = llamacpp_model_from_gguf(w.parse());
  EXPECT_EQ(model.swa_layer, (std::vector<bool>{true, false, true, false}));
  LlamacppLaunch launch;
  launch.ctx_size = 32768;
  const LlamacppMemory windowed = llamacpp_memory(model, launch);
  EXPECT_EQ(windowed.kv_size_swa, 4608);
  EXPECT_EQ(windowed.gpu_kv_bytes, kMiB * 2 * 256 + kMiB * 2 * 36);
  launch.swa_full = true;
  EXPECT_EQ(llamacpp_memory(model, launch).gpu_kv_bytes, kMiB * 4 * 256);
}

TEST(LlamacppKv, NextnLayersHoldNoCache) {
  // 3 blocks, the last a NextN (MTP) layer: KV for 2 layers only. 2 KV heads x 128 = 256 wide,
  // f16 at -c 4096: 2 layers x (K + V) x 256 x 4096 x 2 B = 8 MiB.
  HeaderWriter w;
  w.kv_str("general.architecture", "glm4moe");
  w.kv_u32("glm4moe.block_count", 3);
  w.kv_u32("glm4moe.nextn_predict_layers", 1);
  w.kv_u32("glm4moe.context_length", 4096);
  w.kv_u32("glm4moe.embedding_length", 1024);
  w.kv_u32("glm4moe.attention.head_count", 8);
  w.kv_u32("glm4moe.attention.head_count_kv", 2);
  w.kv_u32("glm4moe.attention.key_length", 128);
  w.kv_u32("glm4moe.attention.value_length", 128);
  w.tensor("token_embd.weight", {1024, 1000}, kF16, 2'048'000);
  LlamacppLaunch launch;
  launch.ctx_size = 4096;
  EXPECT_EQ(llamacpp_memory(llamacpp_model_from_gguf(w.parse()), launch).gpu_kv_bytes, kMiB * 8);
}

TEST(LlamacppWeights, NglPlacesOutputFirstThenTheLastLayers) {
  // 8B shape: per layer q 4096^2 and o: 9,437,184 B each (Q4_K); k, v 4096 x 1024: 2,359,296
  // each; gate/up/down 4096 x 14336: 33,030,144 each; two norms 16,384 each ->
  // 2 x 9,437,184 + 2 x 2,359,296 + 3 x 33,030,144 + 32,768 = 122,716,160 B per layer.
  // output 4096 x 128256 Q6_K = 430,940,160 B, output_norm 16,384; token_embd Q4_K 295,501,824.
  const LlamacppModel model = llama_31_8b();
  const std::int64_t layer = 122'716'160, output = 430'940'160 + 16'384, embd = 295'501'824;
  LlamacppLaunch launch;
  launch.ctx_size = 8192;
  launch.n_gpu_layers = 1;  // -ngl 1: the output layer only
  LlamacppMemory one = llamacpp_memory(model, launch);
  EXPECT_EQ(one.layers_on_gpu, 0);
  EXPECT_TRUE(one.output_on_gpu);
  EXPECT_EQ(one.gpu_model_bytes, output);
  EXPECT_EQ(one.host_weight_bytes, embd + 32 * layer);
  EXPECT_EQ(one.host_kv_bytes, 1024 * kMiB);  // every layer's KV with its layer, on the CPU
  launch.n_gpu_layers = 11;                   // output + layers 22..31
  const LlamacppMemory eleven = llamacpp_memory(model, launch);
  EXPECT_EQ(eleven.layers_on_gpu, 10);
  EXPECT_EQ(eleven.gpu_model_bytes, output + 10 * layer);
  EXPECT_EQ(eleven.gpu_kv_bytes, kMiB * 10 * 32);
  EXPECT_EQ(eleven.host_kv_bytes, kMiB * 22 * 32);
  // mmap: the CPU_Mapped span runs from token_embd (first in the file) to blk.21's end.
  EXPECT_EQ(eleven.host_model_bytes, embd + 22 * layer);
  launch.n_gpu_layers = 0;  // everything on the CPU: the span is the whole data region
  EXPECT_EQ(llamacpp_memory(model, launch).host_model_bytes, embd + 32 * layer + output);
  EXPECT_EQ(llamacpp_memory(model, launch).gpu_model_bytes, 0);
}

TEST(LlamacppSolve, Llama70BQ4KOnA24GBCardKeeps43LayersOnTheGpu) {
  // 70B shape: q, o 8192^2 Q4_K: 37,748,736 B each; k, v 8192 x 1024: 4,718,592 each;
  // gate/up/down 8192 x 28672: 132,120,576 each; norms 32,768 each -> 481,361,920 B a layer.
  // f16 KV at -c 8192: 2 x 1024 x 8192 x 2 B = 32 MiB = 33,554,432 B a layer.
  // output Q6_K 8192 x 128256 = 861,880,320 B + output_norm 32,768 = 861,913,088 B.
  // Compute (the stated approximation, flash attention on): logits 128256 x 512 x 4 B =
  // 262,668,288 B beats the FFN's 2 x 28672 x 512 x 4; + hidden 8192 x 512 x 4 = 16,777,216
  // -> 279,445,504 B.
  // Budget 22 GiB = 23,622,320,128 B (a 24 GB card less the CUDA context and the 1 GiB margin):
  // (23,622,320,128 - 861,913,088 - 279,445,504) / (481,361,920 + 33,554,432) = 43.66
  // -> 43 layers + output = -ngl 44, GPU 23,282,761,728 B.
  const LlamacppModel model = llama_31_70b();
  LlamacppLaunch launch;
  launch.ctx_size = 8192;
  launch.flash_attn = LlamacppFlashAttn::On;
  launch.no_mmap = true;
  const LlamacppFit fit = llamacpp_solve(model, launch, kMiB * 22 * 1024, false, false);
  EXPECT_TRUE(fit.fits);
  EXPECT_EQ(fit.launch.n_gpu_layers, 44);
  EXPECT_EQ(fit.memory.layers_on_gpu, 43);
  EXPECT_EQ(fit.memory.gpu_total_bytes(), 23'282'761'728);
  // Host: 37 layers + token_embd Q4_K (128256 x 8192 / 256 x 144 = 591,003,648 B) in the
  // no-mmap host buffer, and those 37 layers' KV (37 x 32 MiB).
  EXPECT_EQ(fit.memory.host_model_bytes, 37 * std::int64_t{481'361'920} + 591'003'648);
  EXPECT_EQ(fit.memory.host_kv_bytes, kMiB * 37 * 32);
  // One layer more does not fit.
  LlamacppLaunch more = fit.launch;
  more.n_gpu_layers = 45;
  EXPECT_GT(llamacpp_memory(model, more).gpu_total_bytes(), kMiB * 22 * 1024);
}

TEST(LlamacppSolve, MoeMovesTheFirstLayersExpertsToTheCpu) {
  // qwen3moe shape, all F16 (no CUDA row padding): 4 layers, h 1024, 16 heads, 4 KV heads of
  // 64, 8 experts of 512. Per layer: q, o 1024^2 x 2 B = 2,097,152 each; k, v 1024 x 256 x 2 =
  // 524,288 each; norms 4096 each; router F32 8 x 1024 x 4 = 32,768 -> dense 5,283,840 B;
  // experts gate/up/down 8 x 512 x 1024 x 2 B = 8,388,608 each -> 25,165,824 B.
  // KV f16 at -c 4096: 2 x 256 x 4096 x 2 B = 4,194,304 a layer. Output 1000 x 1024 x 2 B =
  // 2,048,000 + norm 4096. Compute, the attention phase (flash attention, separate Q/K/V
  // projections): mask 4096 x 512 x 4 = 8,388,608 + (residual 1024 + Q 1024 + K/V 2 x 256)
  // x 512 x 4 = 5,242,880 -> 13,631,488 (over the output phase 1000 x 2048 + 1024 x 2048 =
  // 4,145,152). GPU with every layer and --n-cpu-moe k: 2,052,096 + 4 x 9,478,144 + 13,631,488
  // + (4 - k) x 25,165,824 = 53,596,160 + (4 - k) x 25,165,824: k = 2 -> 103,927,808,
  // k = 3 -> 78,761,984. Budget 100,000,000: --n-cpu-moe 3.
  HeaderWriter w;
  w.kv_str("general.architecture", "qwen3moe");
  w.kv_u32("qwen3moe.block_count", 4);
  w.kv_u32("qwen3moe.context_length", 40960);
  w.kv_u32("qwen3moe.embedding_length", 1024);
  w.kv_u32("qwen3moe.attention.head_count", 16);
  w.kv_u32("qwen3moe.attention.head_count_kv", 4);
  w.kv_u32("qwen3moe.attention.key_length", 64);
  w.kv_u32("qwen3moe.attention.value_length", 64);
  w.kv_u32("qwen3moe.expert_count", 8);
  w.tensor("token_embd.weight", {1024, 1000}, kF16, 2'048'000);
  for (int i = 0; i < 4; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    w.tensor(p + "attn_norm.weight", {1024}, kF32, 4096);
    w.tensor(p + "attn_q.weight", {1024, 1024}, kF16, 2'097'152);
    w.tensor(p + "attn_k.weight", {1024, 256}, kF16, 524'288);
    w.tensor(p + "attn_v.weight", {1024, 256}, kF16, 524'288);
    w.tensor(p + "attn_output.weight", {1024, 1024}, kF16, 2'097'152);
    w.tensor(p + "ffn_norm.weight", {1024}, kF32, 4096);
    w.tensor(p + "ffn_gate_inp.weight", {1024, 8}, kF32, 32'768);
    w.tensor(p + "ffn_gate_exps.weight", {1024, 512, 8}, kF16, 8'388'608);
    w.tensor(p + "ffn_up_exps.weight", {1024, 512, 8}, kF16, 8'388'608);
    w.tensor(p + "ffn_down_exps.weight", {512, 1024, 8}, kF16, 8'388'608);
  }
  w.tensor("output_norm.weight", {1024}, kF32, 4096);
  w.tensor("output.weight", {1024, 1000}, kF16, 2'048'000);
  const LlamacppModel model = llamacpp_model_from_gguf(w.parse());
  LlamacppLaunch launch;
  launch.ctx_size = 4096;
  launch.flash_attn = LlamacppFlashAttn::On;
  const LlamacppFit fit = llamacpp_solve(model, launch, 100'000'000, false, false);
  EXPECT_TRUE(fit.fits);
  EXPECT_EQ(fit.launch.n_cpu_moe, 3);
  EXPECT_EQ(fit.memory.layers_on_gpu, 4);
  EXPECT_EQ(fit.memory.gpu_total_bytes(), 78'761'984);
  EXPECT_EQ(fit.memory.host_weight_bytes, 2'048'000 + 3 * 25'165'824);
  // The CPU_Mapped span: token_embd through blk.2's last expert, blk.0-2's attention included.
  EXPECT_EQ(fit.memory.host_model_bytes, 2'048'000 + 3 * (5'283'840 + 25'165'824));
}

TEST(LlamacppModelImport, RecurrentStateIsRefusedByName) {
  HeaderWriter w;
  w.kv_str("general.architecture", "mamba");
  w.kv_u32("mamba.block_count", 2);
  w.kv_u32("mamba.ssm.state_size", 16);
  EXPECT_THROW(llamacpp_model_from_gguf(w.parse()), ConfigError);
  HeaderWriter missing;
  missing.kv_str("general.architecture", "llama");
  EXPECT_THROW(llamacpp_model_from_gguf(missing.parse()), SpecError);
}

namespace {

// Q5_K: 176 B per 256 values.
std::int64_t q5k(std::int64_t elements) { return elements / 256 * 176; }

// Llama-3.3-70B-Instruct at Q4_K_S as llama.cpp's quantizer types it (src/llama-quant.cpp
// llama_tensor_get_type_impl, LLAMA_FTYPE_MOSTLY_Q4_K_S, default Q4_K): output.weight Q6_K
// (8192 % 256 == 0); attn_v Q5_K everywhere (layers 0-3 by "Q4_K_S && i_attention_wv < 4", the
// rest by the LLM_TYPE_70B bump of Q4_K to Q5_K; 80 layers with n_head != n_head_kv is 70B);
// ffn_down Q5_K for i_layer < n_layer / 8 = 10, Q4_K after; token_embd, q, k, o, gate, up Q4_K;
// norms and rope_freqs (llama3 rope scaling, 64 values) F32.
LlamacppModel llama_33_70b_q4_k_s() {
  constexpr std::uint32_t kQ5K = 13;
  constexpr std::uint64_t n_layer = 80, e = 8192, ff = 28672, kv = 1024, vocab = 128256;
  HeaderWriter w;
  w.kv_str("general.architecture", "llama");
  w.kv_u32("llama.block_count", n_layer);
  w.kv_u32("llama.context_length", 131072);
  w.kv_u32("llama.embedding_length", e);
  w.kv_u32("llama.feed_forward_length", ff);
  w.kv_u32("llama.attention.head_count", 64);
  w.kv_u32("llama.attention.head_count_kv", 8);
  const auto n = [](std::uint64_t a, std::uint64_t b) { return static_cast<std::int64_t>(a * b); };
  w.tensor("rope_freqs.weight", {64}, kF32, 256);
  w.tensor("token_embd.weight", {e, vocab}, kQ4K, q4k(n(e, vocab)));
  for (std::uint64_t i = 0; i < n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    w.tensor(p + "attn_norm.weight", {e}, kF32, n(e, 4));
    w.tensor(p + "attn_q.weight", {e, e}, kQ4K, q4k(n(e, e)));
    w.tensor(p + "attn_k.weight", {e, kv}, kQ4K, q4k(n(e, kv)));
    w.tensor(p + "attn_v.weight", {e, kv}, kQ5K, q5k(n(e, kv)));
    w.tensor(p + "attn_output.weight", {e, e}, kQ4K, q4k(n(e, e)));
    w.tensor(p + "ffn_norm.weight", {e}, kF32, n(e, 4));
    w.tensor(p + "ffn_gate.weight", {e, ff}, kQ4K, q4k(n(e, ff)));
    w.tensor(p + "ffn_up.weight", {e, ff}, kQ4K, q4k(n(e, ff)));
    if (i < n_layer / 8) {
      w.tensor(p + "ffn_down.weight", {ff, e}, kQ5K, q5k(n(e, ff)));
    } else {
      w.tensor(p + "ffn_down.weight", {ff, e}, kQ4K, q4k(n(e, ff)));
    }
  }
  w.tensor("output_norm.weight", {e}, kF32, n(e, 4));
  w.tensor("output.weight", {e, vocab}, kQ6K, q6k(n(e, vocab)));
  return llamacpp_model_from_gguf(w.parse());
}

// Seed 001's card: an RTX 3090, 25,318,916,096 B as CUDA reports it (model_specs/gpus.yaml),
// less llama.cpp's 1024 MiB --fit-target: 24,245,174,272 B for llama.cpp's buffers.
constexpr std::int64_t kRtx3090Budget = 25'318'916'096 - 1024 * kMiB;

}  // namespace

TEST(LlamacppSeed001, Llama70BQ4KSFileSumsToThePublishedSize) {
  // Per layer: q, o Q4_K 8192^2 / 256 x 144 = 37,748,736 each; k Q4_K 8192 x 1024: 4,718,592;
  // v Q5_K: 32,768 blocks x 176 = 5,767,168; gate, up Q4_K 8192 x 28672: 132,120,576 each;
  // down Q4_K 132,120,576 or Q5_K 917,504 x 176 = 161,480,704; norms 2 x 32,768.
  // Layers 10-79: 482,410,496 B; layers 0-9: + 29,360,128 = 511,770,624 B.
  // 10 x 511,770,624 + 70 x 482,410,496 = 38,886,440,960; token_embd Q4_K 591,003,648;
  // output Q6_K 128256 x 8192 / 256 x 210 = 861,880,320; output_norm 32,768; rope_freqs 256:
  // 40,339,357,952 B (bartowski's Llama-3.3-70B-Instruct-Q4_K_S.gguf: 40.35 GB with metadata).
  const LlamacppModel model = llama_33_70b_q4_k_s();
  std::int64_t total = 0;
  for (const LlamacppTensor& t : model.tensors) total += t.bytes;
  EXPECT_EQ(total, 40'339'357'952);
}

TEST(LlamacppSeed001, DatabaseEntryIsWithinHalfAPercentOfTheQuantizersMix) {
  // The database stores one type per role (attn_kv Q5_K, mlp_down Q4_K): K's Q5_K overcounts
  // 80 x 1,048,576 B and the ten Q5_K ffn_down layers go uncounted (10 x 29,360,128 B), so the
  // entry is 209,715,200 B (0.52%) under the 40,339,357,952 B derived from the quantizer above.
  const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  const ModelSpec spec = db.model("bartowski/Llama-3.3-70B-Instruct-GGUF:Q4_K_S");
  const std::int64_t bytes = checkpoint_tensor_bytes(spec);
  EXPECT_NEAR(static_cast<double>(bytes), 40'339'357'952.0 - 209'715'200.0, 40e6);
}

TEST(LlamacppSeed001, Llama70BQ4KSOnA24GBCardKeeps44LayersAt8k) {
  // -c 8192 -np 1, f16 KV, --flash-attn auto (on with CUDA). The GPU holds the output layer
  // (output 861,880,320 + output_norm 32,768) and rope_freqs (256): 861,913,344 B; compute (the
  // stated approximation with flash attention): logits 128256 x 512 x 4 = 262,668,288 + hidden
  // 8192 x 512 x 4 = 16,777,216 -> 279,445,504. Fixed: 1,141,358,848 B.
  // A layer from 10-79 with its KV (2 x 1024 x 8192 x 2 B = 33,554,432): 515,964,928 B.
  // (24,245,174,272 - 1,141,358,848) / 515,964,928 = 44.78 -> 44 layers (36-79) + output:
  // -ngl 45, GPU 1,141,358,848 + 44 x 515,964,928 = 23,843,815,680 B.
  const LlamacppModel model = llama_33_70b_q4_k_s();
  LlamacppLaunch launch;
  launch.ctx_size = 8192;
  const LlamacppFit fit = llamacpp_solve(model, launch, kRtx3090Budget, false, false);
  EXPECT_TRUE(fit.fits);
  EXPECT_EQ(fit.launch.n_gpu_layers, 45);
  EXPECT_EQ(fit.memory.layers_on_gpu, 44);
  EXPECT_EQ(fit.memory.gpu_total_bytes(), 23'843'815'680);
  LlamacppLaunch more = fit.launch;
  more.n_gpu_layers = 46;  // + 515,964,928 = 24,359,780,608 > the budget
  EXPECT_EQ(llamacpp_memory(model, more).gpu_total_bytes(), 24'359'780'608);
  // Host: layers 0-35 stay on the CPU. mmap's CPU_Mapped span runs from rope_freqs through
  // blk.35: 256 + 591,003,648 + 10 x 511,770,624 + 26 x 482,410,496 = 18,251,383,040 B, every
  // byte of it CPU-resident; their KV is a CPU buffer of 36 x 32 MiB = 1,207,959,552 B.
  EXPECT_EQ(fit.memory.host_model_bytes, 18'251'383'040);
  EXPECT_EQ(fit.memory.host_weight_bytes, 18'251'383'040);
  EXPECT_EQ(fit.memory.host_kv_bytes, 1'207'959'552);
  // Anonymous host RAM: that KV, the CPU compute estimate (the FFN phase: residual, norm, up and
  // gate (2 x 8192 + 2 x 28672) x 512 x 4 = 150,994,944) and the logits output buffer (128256 x
  // 4 = 513,024): 1,359,467,520 B; --no-mmap adds the 18,251,383,040 B host buffer.
  EXPECT_EQ(fit.memory.host_ram_bytes, 1'359'467'520);
  launch.no_mmap = true;
  EXPECT_EQ(llamacpp_solve(model, launch, kRtx3090Budget, false, false).memory.host_ram_bytes,
            1'359'467'520 + 18'251'383'040);
}

TEST(LlamacppSeed001, Llama70BQ4KSFourSlotsAt32kKeep37Layers) {
  // -c 32768 -np 4 (not unified): 4 streams of 8192 cells, KV 4 x 32 MiB = 134,217,728 B a
  // layer -> 616,628,224 B with its weights. (24,245,174,272 - 1,141,358,848) / 616,628,224 =
  // 37.47 -> 37 layers, -ngl 38, GPU 1,141,358,848 + 37 x 616,628,224 = 23,956,603,136 B;
  // the 43 CPU layers' KV: 43 x 128 MiB = 5,771,362,304 B of host RAM.
  LlamacppLaunch launch;
  launch.ctx_size = 32768;
  launch.parallel = 4;
  const LlamacppFit fit =
      llamacpp_solve(llama_33_70b_q4_k_s(), launch, kRtx3090Budget, false, false);
  EXPECT_EQ(fit.launch.n_gpu_layers, 38);
  EXPECT_EQ(fit.memory.gpu_total_bytes(), 23'956'603'136);
  EXPECT_EQ(fit.memory.host_kv_bytes, 5'771'362'304);
}

TEST(LlamacppSeed001, Llama70BQ4KSLargestContextAtNgl40) {
  // -ngl 40: output + layers 41-79 (39 x 482,410,496 = 18,814,009,344 B) + the fixed
  // 1,141,358,848 leave 4,289,806,080 B for f16 KV at 39 x 2 x 1024 x 2 B = 159,744 B a cell:
  // 26,854 cells -> 104 blocks of 256 = -c 26624 (26,880 would need 4,293,918,720 B).
  LlamacppLaunch launch;
  launch.n_gpu_layers = 40;
  EXPECT_EQ(llamacpp_max_context(llama_33_70b_q4_k_s(), launch, kRtx3090Budget), 26624);
  launch.n_gpu_layers = 81;  // the whole model (40 GB) fits no context at all
  EXPECT_EQ(llamacpp_max_context(llama_33_70b_q4_k_s(), launch, kRtx3090Budget), 0);
}

TEST(LlamacppHybrid, Qwen35StyleLayersHoldRecurrentStatePerSequence) {
  // qwen35 with full_attention_interval 4: layers 0-2 gated delta-net (recurrent), layer 3
  // attention (is_recr = (il + 1) % 4 != 0, src/models/qwen35.cpp). Qwen3-Next's shapes:
  // d_conv 4, d_inner 4096 (32 v-heads x 128), d_state 128, n_group 16 (k-heads).
  // n_embd_r = 3 x (4096 + 2 x 16 x 128) = 24,576 f32 = 98,304 B a row; n_embd_s = 128 x 4096
  // = 524,288 f32 = 2,097,152 B a row. One row per sequence (llama_memory_recurrent, mem_size
  // max(1, n_seq_max)): -np 1 -> 3 layers x 2,195,456 = 6,586,368 B; -np 4 -> 26,345,472 B.
  // The attention layer's KV: 2 KV heads x 256 = 512 wide, f16 at -c 8192: 2 x 512 x 8192 x 2
  // = 16 MiB, the same for 4 streams of 2048.
  HeaderWriter w;
  w.kv_str("general.architecture", "qwen35");
  w.kv_u32("qwen35.block_count", 4);
  w.kv_u32("qwen35.context_length", 262144);
  w.kv_u32("qwen35.embedding_length", 2048);
  w.kv_u32("qwen35.attention.head_count", 16);
  w.kv_u32("qwen35.attention.head_count_kv", 2);
  w.kv_u32("qwen35.attention.key_length", 256);
  w.kv_u32("qwen35.attention.value_length", 256);
  w.kv_u32("qwen35.full_attention_interval", 4);
  w.kv_u32("qwen35.ssm.conv_kernel", 4);
  w.kv_u32("qwen35.ssm.inner_size", 4096);
  w.kv_u32("qwen35.ssm.state_size", 128);
  w.kv_u32("qwen35.ssm.group_count", 16);
  w.kv_u32("qwen35.ssm.time_step_rank", 32);
  w.tensor("token_embd.weight", {2048, 1000}, kF16, 4'096'000);
  const LlamacppModel model = llamacpp_model_from_gguf(w.parse());
  EXPECT_EQ(model.recurrent_layer, (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(model.n_embd_r, 24'576);
  EXPECT_EQ(model.n_embd_s, 524'288);
  LlamacppLaunch launch;
  launch.ctx_size = 8192;
  const LlamacppMemory one = llamacpp_memory(model, launch);
  EXPECT_EQ(one.gpu_rs_bytes, 6'586'368);
  EXPECT_EQ(one.gpu_kv_bytes, 16 * kMiB);
  launch.parallel = 4;
  const LlamacppMemory four = llamacpp_memory(model, launch);
  EXPECT_EQ(four.gpu_rs_bytes, 26'345'472);
  EXPECT_EQ(four.gpu_kv_bytes, 16 * kMiB);
  launch.n_gpu_layers = 2;  // output + layer 3: layers 0-2's state goes to the host
  EXPECT_EQ(llamacpp_memory(model, launch).host_rs_bytes, 26'345'472);
}

TEST(LlamacppSplit, Llama70BQ4KSOnTwo24GBCardsSplitsTheLayersEvenly) {
  // -sm layer -ts 1,1, every layer offloaded (-ngl 81, i_gpu_start 0, act 81): layer il goes
  // to GPU 0 while il / 81 < 0.5, so layers 0-40 (41) on GPU 0, layers 41-79 (39) and the
  // output on GPU 1 (llama_model::load_tensors' upper_bound over the cumulative split).
  // GPU 0: layers 0-9 10 x 511,770,624 + layers 10-40 31 x 482,410,496 = 20,072,431,616;
  // rope_freqs 256; f16 KV at -c 8192 41 x 33,554,432 = 1,375,731,712; compute (no output
  // here, flash attention on): the FFN phase (2 x 8192 + 2 x 28672) x 512 x 4 = 150,994,944
  // -> 21,599,158,528 B. GPU 1: 39 x 482,410,496 = 18,814,009,344 + output 861,913,088 + 256
  // + KV 39 x 33,554,432 = 1,308,622,848 + compute logits 262,668,288 + 16,777,216 ->
  // 21,263,991,040 B. Both under 24,245,174,272: everything fits on two cards.
  LlamacppLaunch launch;
  launch.ctx_size = 8192;
  launch.tensor_split = {1.0, 1.0};
  const LlamacppFit fit =
      llamacpp_solve(llama_33_70b_q4_k_s(), launch, kRtx3090Budget, false, false);
  EXPECT_TRUE(fit.fits);
  EXPECT_EQ(fit.launch.n_gpu_layers, 81);
  ASSERT_EQ(fit.memory.gpus.size(), 2U);
  EXPECT_EQ(fit.memory.gpus[0].layers, 41);
  EXPECT_EQ(fit.memory.gpus[1].layers, 39);
  EXPECT_FALSE(fit.memory.gpus[0].output);
  EXPECT_TRUE(fit.memory.gpus[1].output);
  EXPECT_EQ(fit.memory.gpus[0].total_bytes(), 21'599'158'528);
  EXPECT_EQ(fit.memory.gpus[1].total_bytes(), 21'263'991'040);
  EXPECT_EQ(fit.memory.host_weight_bytes, 591'003'648);  // token_embd stays on the CPU
  launch.tensor_split = {0.0, 0.0};
  EXPECT_THROW(llamacpp_memory(llama_33_70b_q4_k_s(), launch), ConfigError);
}

namespace {

// The database's GGUF entries as llama.cpp would load them (llamacpp_model_from_spec).
LlamacppModel database_entry(const std::string& id) {
  const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return llamacpp_model_from_spec(db.model(id));
}

std::int64_t tensor_bytes(const LlamacppModel& model) {
  std::int64_t total = 0;
  for (const LlamacppTensor& t : model.tensors) total += t.bytes;
  return total;
}

bool notes_contain(const LlamacppMemory& memory, const std::string& text) {
  for (const std::string& note : memory.notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST(LlamacppDatabaseEntry, Llama31Q4KMAt8kHolds1024MiBInF16And544MiBInQ8) {
  // bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M at -c 8192: 32 layers x (K + V) x 8 KV
  // heads x 128 x 8192 cells x 2 B (f16) = 32 x 2 x 16 MiB = 1024 MiB; q8_0 stores 34 B per 32
  // values: 1024 values a cell row -> 1088 B, 32 x 2 x 8192 x 1088 B = 544 MiB (llama.cpp's own
  // "KV buffer size" lines for this model at -c 8192).
  const LlamacppModel model = database_entry("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M");
  EXPECT_EQ(model.architecture, "llama");
  EXPECT_EQ(model.n_layer, 32);
  EXPECT_EQ(model.n_ctx_train, 131072);
  LlamacppLaunch launch;
  launch.ctx_size = 8192;
  const LlamacppMemory f16 = llamacpp_memory(model, launch);
  EXPECT_EQ(f16.gpu_kv_bytes, 1024 * kMiB);
  EXPECT_TRUE(notes_contain(f16, "one GGUF type per role"));
  launch.cache_type_k = launch.cache_type_v = llamacpp_cache_type("q8_0");
  EXPECT_EQ(llamacpp_memory(model, launch).gpu_kv_bytes, 544 * kMiB);
}

TEST(LlamacppDatabaseEntry, Llama31Q4KMTensorsAreTheSpecsCheckpointWithF32Norms) {
  // The entry's types: default Q4_K (token_embd, q, o, gate, up: 144 B per 256), attn_kv Q5_K
  // (k, v: 176 B per 256), mlp_down Q5_K, lm_head Q6_K (210 B per 256), norms F32.
  // Per layer: q, o 4096^2 / 256 x 144 = 9,437,184 each; k, v 4096 x 1024 / 256 x 176 =
  // 2,883,584 each; gate, up 4096 x 14336 / 256 x 144 = 33,030,144 each; down x 176 =
  // 40,370,176; norms 2 x 16,384 -> 131,104,768 B. 32 layers 4,195,352,576; token_embd
  // 128256 x 4096 / 256 x 144 = 295,501,824; output x 210 = 430,940,160; output_norm 16,384:
  // 4,921,810,944 B (the published Q4_K_M file: 4.92 GB with metadata).
  const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  const ModelSpec spec = db.model("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M");
  const LlamacppModel model = llamacpp_model_from_spec(spec);
  EXPECT_EQ(tensor_bytes(model), 4'921'810'944);
  // The spec's checkpoint formula counts the 65 norms in torch_dtype (bf16, 2 B) where the GGUF
  // stores F32: 65 x 4096 x 2 B = 532,480 B less.
  EXPECT_EQ(tensor_bytes(model), checkpoint_tensor_bytes(spec) + 532'480);
}

TEST(LlamacppDatabaseEntry, Llama70BQ4KSOnA3090At8kKeeps44LayersAndSaysItApproximates) {
  // bartowski/Llama-3.3-70B-Instruct-GGUF:Q4_K_S, one type per role: attn_kv Q5_K (k and v
  // 8192 x 1024 / 256 x 176 = 5,767,168 each), everything else Q4_K (q, o 37,748,736 each;
  // gate, up, down 132,120,576 each), norms 2 x 32,768: 483,459,072 B a layer.
  // 80 layers 38,676,725,760 + token_embd 591,003,648 + output Q6_K 861,880,320 + output_norm
  // 32,768 = 40,129,642,496 B: the quantizer's file (40,339,357,952 B, LlamacppSeed001) less the
  // 209,715,200 B the per-role types miss and its 256 B rope_freqs.
  const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  const ModelSpec spec = db.model("bartowski/Llama-3.3-70B-Instruct-GGUF:Q4_K_S");
  const LlamacppModel model = llamacpp_model_from_spec(spec);
  EXPECT_EQ(tensor_bytes(model), 40'129'642'496);
  EXPECT_EQ(tensor_bytes(model), 40'339'357'952 - 209'715'200 - 256);
  // checkpoint_tensor_bytes counts the 161 norms in bf16: 161 x 8192 x 2 B = 2,637,824 B less.
  EXPECT_EQ(tensor_bytes(model), checkpoint_tensor_bytes(spec) + 2'637'824);
  // -c 8192 on an RTX 3090: fixed GPU bytes output 861,880,320 + output_norm 32,768 + compute
  // (flash attention on: logits 128256 x 512 x 4 + hidden 8192 x 512 x 4 = 279,445,504) =
  // 1,141,358,592; a layer with its f16 KV (2 x 1024 x 8192 x 2 B = 33,554,432): 517,013,504.
  // (24,245,174,272 - 1,141,358,592) / 517,013,504 = 44.69 -> 44 layers + output: -ngl 45,
  // GPU 1,141,358,592 + 44 x 517,013,504 = 23,889,952,768 B.
  LlamacppLaunch launch;
  launch.ctx_size = 8192;
  const LlamacppFit fit = llamacpp_solve(model, launch, kRtx3090Budget, false, false);
  EXPECT_TRUE(fit.fits);
  EXPECT_EQ(fit.launch.n_gpu_layers, 45);
  EXPECT_EQ(fit.memory.gpu_total_bytes(), 23'889'952'768);
  EXPECT_TRUE(notes_contain(fit.memory, "stands in for the file's per-layer type mix"));
  EXPECT_TRUE(notes_contain(fit.memory, "attn_kv Q5_K"));
}

TEST(LlamacppDatabaseEntry, OtherEntriesAreRefusedByName) {
  const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  ModelSpec spec = db.model("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M");
  spec.model_type = "qwen2";
  try {
    llamacpp_model_from_spec(spec);
    FAIL() << "a qwen2 entry is not built";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model_type 'qwen2'"), std::string::npos) << e.what();
  }
  spec.quantization = QuantSpec{};  // not a GGUF entry
  EXPECT_THROW(llamacpp_model_from_spec(spec), ConfigError);
}
