// llama.cpp startup logs (tests/data/llamacpp_logs, provenance in tests/data/README.md): the
// buffers each prints per device, the resolved context, the hyper-parameters, and which buffer
// an out-of-memory start failed on. Expected values are the logs' own printed figures.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "vramplan/errors.hpp"
#include "vramplan/llamacpp.hpp"
#include "vramplan/llamacpp_log.hpp"

using namespace vramplan;

namespace {

// A figure printed "%8.2f MiB", in bytes.
std::int64_t mib(double printed) { return std::llround(printed * 1024.0 * 1024.0); }

LlamacppLogFigures log_named(const std::string& name) {
  return read_llamacpp_log_file(std::string(VRAMPLAN_TEST_DATA_DIR) + "/llamacpp_logs/" + name);
}

}  // namespace

TEST(LlamacppLog, CiPythiaStartReadsBuffersContextAndHparams) {
  const LlamacppLogFigures f = log_named("ci_v100_4343_pythia_2_8b_f16.log");
  EXPECT_EQ(f.outcome, "started");
  EXPECT_EQ(f.build, "4343 (0006f5a74)");
  ASSERT_EQ(f.devices.size(), 1U);
  EXPECT_EQ(f.devices[0], "Tesla V100-PCIE-16GB");
  EXPECT_EQ(f.architecture, "gptneox");
  EXPECT_EQ(f.n_vocab, 50304);
  EXPECT_EQ(f.n_ctx_train, 2048);  // not read as n_ctx
  EXPECT_EQ(f.n_embd, 2560);
  EXPECT_EQ(f.n_layer, 32);
  EXPECT_EQ(f.n_head, 32);
  EXPECT_EQ(f.n_head_kv, 32);
  EXPECT_EQ(f.head_dim_k, 80);
  EXPECT_EQ(f.n_ff, 10240);
  EXPECT_EQ(f.n_ctx, 2048);
  EXPECT_EQ(f.n_ctx_seq, 2048);  // the older "n_ctx_per_seq"
  EXPECT_EQ(f.n_batch, 2048);
  EXPECT_EQ(f.n_ubatch, 512);
  EXPECT_EQ(f.flash_attn, false);
  EXPECT_EQ(f.layers_offloaded, 33);
  EXPECT_EQ(f.layers_total, 33);
  EXPECT_EQ(f.model_buffers.at("CUDA0"), mib(5049.71));
  EXPECT_EQ(f.model_buffers.at("CPU_Mapped"), mib(245.62));
  EXPECT_EQ(f.kv_buffers.at("CUDA0"), mib(640.00));
  EXPECT_EQ(f.compute_buffers.at("CUDA0"), mib(162.00));
  EXPECT_EQ(f.compute_buffers.at("CUDA_Host"), mib(9.01));
  EXPECT_EQ(f.output_buffers.at("CUDA_Host"), mib(0.19));
  EXPECT_FALSE(f.failed_buffer.has_value());
}

TEST(LlamacppLog, KvFromTheLogMatchesThePrintedBuffer) {
  // The log's hyper-parameters through the planner's KV rule: 32 layers x (K + V) x 32 heads x
  // 80 x 2048 cells x 2 B = 640 MiB, the "CUDA0 KV buffer size" it prints.
  const LlamacppLogFigures f = log_named("ci_v100_4343_pythia_2_8b_f16.log");
  const LlamacppMemory m = llamacpp_memory(llamacpp_model_from_log(f), llamacpp_launch_from_log(f));
  EXPECT_EQ(m.gpu_kv_bytes, f.kv_buffers.at("CUDA0"));
  EXPECT_FALSE(m.flash_attn);
  EXPECT_EQ(m.layers_on_gpu, 32);
}

TEST(LlamacppLog, ModelBufferOomNamesTheModelAndLowerNgl) {
  // llama.cpp#20431: alloc_tensor_range, then "error loading model: unable to allocate CUDA0".
  const LlamacppLogFigures f = log_named("oom_model_llamacpp_20431.log");
  EXPECT_EQ(f.outcome, "oom");
  EXPECT_EQ(f.failed_buffer, "model");
  EXPECT_EQ(f.failed_device, "CUDA0");
  EXPECT_EQ(f.failed_bytes, 151'851'674'624);  // the exact byte count the log prints
  const LlamacppDiagnosis d = diagnose_llamacpp_log(f);
  EXPECT_EQ(d.buffer, "model");
  EXPECT_NE(d.summary.find("CUDA0"), std::string::npos);
  ASSERT_FALSE(d.remedies.empty());
  EXPECT_NE(d.remedies[0].find("-ngl"), std::string::npos);
}

TEST(LlamacppLog, KvOomOnTheFourthGpuNamesTheKvCache) {
  // gpustack#1269: three KV buffers allocated, the fourth (device 3, 4480 MiB) fails.
  const LlamacppLogFigures f = log_named("oom_kv_gpustack_1269.log");
  EXPECT_EQ(f.outcome, "oom");
  EXPECT_EQ(f.failed_buffer, "kv");
  EXPECT_EQ(f.failed_device, "CUDA3");
  EXPECT_EQ(f.failed_bytes, mib(4480.00));
  EXPECT_EQ(f.kv_buffers.size(), 3U);
  const LlamacppDiagnosis d = diagnose_llamacpp_log(f);
  EXPECT_EQ(d.buffer, "kv");
  EXPECT_NE(d.remedies[0].find("-c"), std::string::npos);
  EXPECT_NE(d.remedies[1].find("q8_0"), std::string::npos);
}

TEST(LlamacppLog, ComputeOomWithPipelineParallelismNamesTheComputeBuffer) {
  // ollama#6860: "pipeline parallelism enabled (n_copies=4)", then ggml_gallocr fails on CUDA4.
  const LlamacppLogFigures f = log_named("oom_compute_ollama_6860.log");
  EXPECT_EQ(f.failed_buffer, "compute");
  EXPECT_EQ(f.failed_device, "CUDA4");
  EXPECT_EQ(f.failed_bytes, 150'995'968);
  const LlamacppDiagnosis d = diagnose_llamacpp_log(f);
  EXPECT_NE(d.remedies[0].find("-ub"), std::string::npos);
}

TEST(LlamacppLog, ComputeOomRetriedWithoutPipelineParallelismIsNotAFailure) {
  // llama.cpp#26297: the compute buffers fail with 4 copies, the retry with one succeeds.
  const LlamacppLogFigures f = log_named("oom_compute_retry_llamacpp_26297.log");
  EXPECT_EQ(f.outcome, "started");
  EXPECT_TRUE(f.pipeline_parallel_retried);
  EXPECT_FALSE(f.failed_buffer.has_value());
  EXPECT_EQ(diagnose_llamacpp_log(f).buffer, "");
}

TEST(LlamacppLog, OldOllamaBufferLinesAreModelBuffers) {
  // Ollama 0.1.32 (ollama#3711) printed llm_load_tensors' "CUDA0 buffer size" without "model".
  const LlamacppLogFigures f = log_named("ollama_0_1_32_old_format_3711.log");
  EXPECT_EQ(f.devices.size(), 2U);
  EXPECT_EQ(f.layers_offloaded, 39);
  EXPECT_EQ(f.layers_total, 41);
  EXPECT_EQ(f.model_buffers.at("CPU"), mib(70752.49));
  EXPECT_EQ(f.model_buffers.at("CUDA0"), mib(45460.59));
}

TEST(LlamacppLog, HostileInputIsBounded) {
  std::string text(kLlamacppLogMaxLineBytes + 10, 'x');  // one over-long line, skipped
  text += "\nllama_context:      CUDA0 compute buffer size = 1,2 MiB\n";  // malformed number
  text += "load_tensors: offloaded 7/ layers to GPU\n";
  const LlamacppLogFigures f = parse_llamacpp_log(text);
  EXPECT_TRUE(f.compute_buffers.empty());
  EXPECT_EQ(f.layers_offloaded, 7);
  EXPECT_FALSE(f.layers_total.has_value());
  EXPECT_EQ(f.outcome, "unknown");
  EXPECT_THROW(llamacpp_model_from_log(f), ConfigError);  // no print_info lines
}

TEST(LlamacppLog, MetalStartResolvesFlashAttentionAuto) {
  // A Metal log (Apple M4, Qwen2.5-0.5B): "flash_attn = auto", then "Flash Attention was auto,
  // set to enabled"; buffers named MTL0 and MTL0_Mapped. KV by the planner's rule: 24 layers x
  // (K + V) x 2 heads x 64 x 512 cells x 2 B = 6 MiB, the "MTL0 KV buffer size" printed.
  const LlamacppLogFigures f = log_named("metal_m4_qwen2_5_0_5b_q4_k_m.log");
  EXPECT_EQ(f.flash_attn, true);
  EXPECT_EQ(f.n_ctx_seq, 512);
  EXPECT_EQ(f.model_buffers.at("MTL0_Mapped"), mib(462.96));
  EXPECT_EQ(f.compute_buffers.at("MTL0"), mib(300.25));
  EXPECT_EQ(f.outcome, "started");
  const LlamacppMemory m = llamacpp_memory(llamacpp_model_from_log(f), llamacpp_launch_from_log(f));
  EXPECT_EQ(m.gpu_kv_bytes, f.kv_buffers.at("MTL0"));
  EXPECT_TRUE(m.flash_attn);
}
