// SGLang's failed-launch diagnosis on real startup excerpts (tests/data/sglang/logs, provenance
// in tests/data/README.md), each cause with its advice values derived by hand from the logged
// figures. Where no excerpt shows a cause's failure line, the startup is a real excerpt cut where
// the failure struck and the failure line is quoted from a real report (named at the test).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "vramplan/sglang_diagnose.hpp"

namespace {

using namespace vramplan;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string sglang_log(const std::string& name) {
  return read_file(std::string(VRAMPLAN_TEST_DATA_DIR) + "/sglang/logs/" + name);
}

// The first `lines` lines of a log: a real startup cut where the failure struck.
std::string head(const std::string& text, std::size_t lines) {
  std::size_t end = 0;
  for (std::size_t n = 0; n < lines; ++n) {
    const std::size_t newline = text.find('\n', end);
    if (newline == std::string::npos) return text;
    end = newline + 1;
  }
  return text.substr(0, end);
}

// PyTorch's CUDA OOM message as vLLM 0.19 logged it (tests/data/diagnose), the same allocator's
// wording in SGLang.
constexpr const char* kTorchOom =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 786.00 MiB. GPU 0 has a total "
    "capacity of 79.19 GiB of which 552.50 MiB is free.\n";

const SglangAdvice& advice_for(const SglangDiagnosis& d, const std::string& knob) {
  for (const SglangAdvice& a : d.advice) {
    if (a.knob == knob) return a;
  }
  ADD_FAILURE() << "no advice for " << knob;
  static const SglangAdvice none;
  return none;
}

TEST(SglangDiagnose, WeightsLeaveNoMemoryRaisesTheFractionPastTheLoggedMinimum) {
  // sgl-r08 (0.5.23): "avail mem=12.25 GB, mem usage=125.65 GB", then "Loaded weights leave
  // no GPU memory". B ~ 12.25 + 125.65 = 137.90 GiB; the pool needs f > 1 - 12.25 / 137.90 =
  // 0.91117; 0.02 of margin is 0.93117, up to the hundredth: 0.94. No server_args line: TP 1.
  const SglangDiagnosis d = diagnose_sglang_launch(sglang_log("sgl-r08.log"));
  EXPECT_EQ(d.cause, SglangFailureCause::WeightsLeaveNoMemory);
  ASSERT_EQ(d.advice.size(), 3U);
  const SglangAdvice& f = d.advice[0];
  EXPECT_EQ(f.knob, "mem_fraction_static");
  EXPECT_EQ(f.flag, "--mem-fraction-static");
  EXPECT_EQ(f.action, AdviceAction::Raise);
  EXPECT_DOUBLE_EQ(f.value.get<double>(), 0.94);
  EXPECT_NE(f.why.find("0.9112"), std::string::npos) << f.why;
  EXPECT_EQ(d.advice[1].flag, "--tp-size");
  EXPECT_EQ(d.advice[1].value, 2);
  EXPECT_EQ(d.advice[2].flag, "--kv-cache-dtype");
  EXPECT_EQ(d.advice[2].value, "fp8_e4m3");
  const nlohmann::json j = to_json(d);
  EXPECT_EQ(j["engine"], "sglang");
  EXPECT_EQ(j["cause"], "weights_leave_no_memory");
  EXPECT_EQ(j["advice"][0]["action"], "raise");
  EXPECT_EQ(j["evidence"], j["figures"]["error_lines"]);
  EXPECT_TRUE(j["oom_kills"].is_array());
}

TEST(SglangDiagnose, NotEnoughMemoryWithoutWeightsGivesNoFractionValue) {
  // sgl-r10 (0.4.x): the one error line and nothing else, so no weights to derive f from.
  const SglangDiagnosis d = diagnose_sglang_launch(sglang_log("sgl-r10.log"));
  EXPECT_EQ(d.cause, SglangFailureCause::KvPoolTooSmall);
  EXPECT_STREQ(sglang_cause_name(d.cause), "kv_pool_too_small");
  ASSERT_EQ(d.advice.size(), 3U);
  EXPECT_EQ(d.advice[0].knob, "mem_fraction_static");
  EXPECT_TRUE(d.advice[0].value.is_null());
  EXPECT_EQ(d.advice[0].why, "the log prints no weights");
  EXPECT_EQ(advice_for(d, "tp_size").value, 2);
}

TEST(SglangDiagnose, GraphCaptureOomWidensTheSlackByTheFailedAllocation) {
  // sgl-r01 (0.4.3.post4, 4x L4, f=0.85) up to "Capture cuda graph begin" (line 27), then the
  // capture failure sgl-project/sglang#5285 reported: "Capture cuda graph failed: CUDA out of
  // memory. Tried to allocate 448.00 MiB". Baseline 21.63 GiB (TP3's line, first); the step is
  // (0.4375 + 0.5) / 21.63 = 0.04334, and 0.85 - 0.04334 = 0.80666 floors to 0.80.
  const std::string log = head(sglang_log("sgl-r01.log"), 27) +
                          "Exception: Capture cuda graph failed: CUDA out of memory. Tried to "
                          "allocate 448.00 MiB\n";
  const SglangDiagnosis d = diagnose_sglang_launch(log);
  EXPECT_EQ(d.cause, SglangFailureCause::OomCudaGraphCapture);
  const SglangAdvice& f = advice_for(d, "mem_fraction_static");
  EXPECT_EQ(f.action, AdviceAction::Lower);
  EXPECT_DOUBLE_EQ(f.value.get<double>(), 0.80);
  // r01 prints no cuda_graph_max_bs: nothing to halve.
  EXPECT_TRUE(advice_for(d, "cuda_graph_max_bs").value.is_null());
  EXPECT_EQ(advice_for(d, "disable_cuda_graph").flag, "--disable-cuda-graph");
  EXPECT_EQ(advice_for(d, "disable_cuda_graph").value, true);
}

TEST(SglangDiagnose, GraphCaptureOomHalvesTheLoggedGraphBatch) {
  // The same failure after a server_args line with cuda_graph_max_bs=256 and no baseline line:
  // 256 / 2 = 128, and f steps down by the fixed 0.02: 0.9 - 0.02 = 0.88.
  const SglangDiagnosis d = diagnose_sglang_launch(
      "server_args=ServerArgs(model_path='m', tp_size=1, mem_fraction_static=0.9, "
      "cuda_graph_max_bs=256)\n"
      "Capture cuda graph begin. This can take up to several minutes. avail mem=1.45 GB\n"
      "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB\n");
  EXPECT_EQ(d.cause, SglangFailureCause::OomCudaGraphCapture);
  EXPECT_EQ(advice_for(d, "cuda_graph_max_bs").value, 128);
  EXPECT_DOUBLE_EQ(advice_for(d, "mem_fraction_static").value.get<double>(), 0.88);
}

TEST(SglangDiagnose, OomAfterTheGraphsIsTheFirstPrefill) {
  // sgl-r06 (0.5.x, B200): "Capture cuda graph end ... mem usage=1.44 GB", then a CUDA OOM.
  // No server_args line: the chunk advised is 4096 and no fraction is advised.
  const SglangDiagnosis d = diagnose_sglang_launch(sglang_log("sgl-r06.log") + kTorchOom);
  EXPECT_EQ(d.cause, SglangFailureCause::OomFirstPrefill);
  ASSERT_EQ(d.advice.size(), 1U);
  EXPECT_EQ(d.advice[0].flag, "--chunked-prefill-size");
  EXPECT_EQ(d.advice[0].action, AdviceAction::Lower);
  EXPECT_EQ(d.advice[0].value, 4096);
}

TEST(SglangDiagnose, OomBeforeThePoolHalvesTheLoggedChunk) {
  // sgl-r01 up to "Load weight end" (line 18): chunked_prefill_size=2048, f=0.85. A CUDA OOM
  // there is outside the pool sizing: 2048 / 2 = 1024, and 0.85 - 0.03 = 0.82.
  const SglangDiagnosis d = diagnose_sglang_launch(head(sglang_log("sgl-r01.log"), 18) + kTorchOom);
  EXPECT_EQ(d.cause, SglangFailureCause::Oom);
  EXPECT_EQ(advice_for(d, "chunked_prefill_size").value, 1024);
  EXPECT_DOUBLE_EQ(advice_for(d, "mem_fraction_static").value.get<double>(), 0.82);
}

TEST(SglangDiagnose, HicacheRefusalAdvisesTheHostPoolFlags) {
  // HostKVCache's ValueError (SGLang 0.5.23 mem_cache/pool_host/base.py) as the scheduler logs
  // it (tests/cpp/test_sglang_hicache.cpp derives its figures).
  const SglangDiagnosis d = diagnose_sglang_launch(
      "[2026-11-28 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
      "ValueError: Not enough host memory available. Requesting 117.96 GB but only have 102.01 GB "
      "free. Please reduce the size of the hierarchical cache.\n");
  EXPECT_EQ(d.cause, SglangFailureCause::HicacheRefused);
  ASSERT_EQ(d.advice.size(), 2U);
  EXPECT_EQ(d.advice[0].flag, "--hicache-ratio");
  EXPECT_EQ(d.advice[0].action, AdviceAction::Lower);
  EXPECT_EQ(d.advice[1].flag, "--hicache-size");
  EXPECT_EQ(d.advice[1].action, AdviceAction::Set);
}

TEST(SglangDiagnose, HostOomKillReadsTheKernelReport) {
  // sgl-r01 while loading (up to line 18), then the kernel's lines of vllm-project/vllm#54237
  // (tests/data/diagnose/vllm54237_global_oom.dmesg): "Killed process 16014 (cicc) ...
  // anon-rss:2111980kB". The host OOM outranks the outcome; TP 4 is kept (not the fix).
  const std::string kernel =
      read_file(std::string(VRAMPLAN_TEST_DATA_DIR) + "/diagnose/vllm54237_global_oom.dmesg");
  const SglangDiagnosis d = diagnose_sglang_launch(head(sglang_log("sgl-r01.log"), 18) + kernel);
  EXPECT_EQ(d.cause, SglangFailureCause::HostOom);
  ASSERT_EQ(d.advice.size(), 1U);
  EXPECT_EQ(d.advice[0].knob, "tp_size");
  EXPECT_EQ(d.advice[0].action, AdviceAction::Keep);
  EXPECT_EQ(d.advice[0].value, 4);
  EXPECT_EQ(to_json(d)["advice"][0]["action"], "keep");
  ASSERT_FALSE(d.oom_kills.empty());
  EXPECT_EQ(d.oom_kills[0].pid, 16014);
  EXPECT_EQ(d.oom_kills[0].process, "cicc");
  EXPECT_EQ(d.oom_kills[0].anon_rss_bytes, std::int64_t{2111980} * 1024);
}

TEST(SglangDiagnose, ShellKillNoticeIsAHostOom) {
  // The shell's "Killed" line alone, as vLLM's diagnosis reads it.
  const SglangDiagnosis d =
      diagnose_sglang_launch(head(sglang_log("sgl-r01.log"), 18) + "Killed\n");
  EXPECT_EQ(d.cause, SglangFailureCause::HostOom);
  EXPECT_TRUE(d.oom_kills.empty());
}

TEST(SglangDiagnose, StartedAndUnknownGiveNoAdvice) {
  // sgl-r01 is the one full startup ("The server is fired up and ready to roll!").
  const SglangDiagnosis started = diagnose_sglang_launch(sglang_log("sgl-r01.log"));
  EXPECT_EQ(started.cause, SglangFailureCause::Started);
  EXPECT_TRUE(started.advice.empty());
  // sgl-r02 is one "KV Cache is allocated" line: no failure and no end.
  const SglangDiagnosis unknown = diagnose_sglang_launch(sglang_log("sgl-r02.log"));
  EXPECT_EQ(unknown.cause, SglangFailureCause::Unknown);
  EXPECT_TRUE(unknown.advice.empty());
  EXPECT_EQ(to_json(unknown)["cause"], "unknown");
}

}  // namespace
