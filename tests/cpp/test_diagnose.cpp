// The failed-launch classifier, one test per cause bucket on a real log excerpt (most) or a
// faithfully reconstructed one (said in the test). Provenance of every file:
// tests/data/diagnose/README.md.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "vramplan/diagnose.hpp"

namespace {

using vramplan::diagnose_launch;
using vramplan::Diagnosis;

std::string read_fixture(const std::string& name) {
  const std::string path = std::string(VRAMPLAN_TEST_DATA_DIR) + "/diagnose/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string cause(const Diagnosis& d) { return vramplan::cause_name(d.cause); }

bool evidence_has(const Diagnosis& d, const std::string& fragment) {
  for (const std::string& line : d.evidence) {
    if (line.find(fragment) != std::string::npos) return true;
  }
  return false;
}

// Real: vLLM 0.19.0, dev-032 (gpt-oss-20b, H100): the OOM in _dummy_sampler_run called from
// compile_or_warm_up_model, after "Available KV cache memory: 58.47 GiB".
TEST(Diagnose, SamplerWarmupOomDev032) {
  const Diagnosis d = diagnose_launch(read_fixture("v019_gpt_oss_20b_sampler_warmup.log"), "");
  EXPECT_EQ(cause(d), "sampler_warmup_oom");
  EXPECT_EQ(d.oom_phase, "sampler_warmup");
  EXPECT_TRUE(evidence_has(d, "warming up sampler with 1024 dummy requests"));
  EXPECT_TRUE(evidence_has(d, "_dummy_sampler_run"));
  // "Tried to allocate 786.00 MiB" as the torch message states it.
  EXPECT_NE(d.explanation.find("0.77 GiB"), std::string::npos) << d.explanation;
  EXPECT_EQ(d.figures.model.value_or(""), "openai/gpt-oss-20b");
}

// Seed 003 (tests/data/seeds/003_burst.log, verbatim): an OOM "during forward pass" with no
// startup lines or traceback, then "Request req_12345 failed: OOM". A failed request means the
// engine was serving traffic, so the OOM is placed at run time, with both lines as evidence;
// without the request line the place stays unknown.
TEST(Diagnose, FailedRequestPlacesAnUnplacedOomAtRunTime) {
  std::ifstream in(std::string(VRAMPLAN_TEST_DATA_DIR) + "/seeds/003_burst.log", std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string log = buffer.str();
  const Diagnosis d = diagnose_launch(log, "");
  EXPECT_EQ(cause(d), "runtime_oom");
  EXPECT_EQ(d.oom_phase, "runtime");
  EXPECT_TRUE(evidence_has(d, "Request req_12345 failed: OOM"));
  const std::string oom_only = log.substr(0, log.find('\n') + 1);
  EXPECT_EQ(cause(diagnose_launch(oom_only, "")), "unknown");
}

// Real: vLLM 0.19.0 Llama-4-Scout TP4: "Free memory on device cuda:1 (60.33/79.19 GiB) on
// startup is less than desired GPU memory utilization (0.95, 75.23 GiB)".
TEST(Diagnose, StartupFreeMemoryIsUtilizationOvershoot) {
  const Diagnosis d = diagnose_launch(read_fixture("v019_llama4_scout_startup_free.log"), "");
  EXPECT_EQ(cause(d), "gpu_memory_utilization_overshoot");
  EXPECT_TRUE(evidence_has(d, "Free memory on device cuda:1 (60.33/79.19 GiB)"));
  // Others hold 79.19 - 60.33 = 18.86 GiB.
  EXPECT_NE(d.explanation.find("18.86 GiB"), std::string::npos) << d.explanation;
}

// Real: a public GitHub log of RedHatAI/Qwen3.6-35B-A3B-NVFP4 (hybrid GDN, vLLM 0.19.2rc1):
// CUDA error in _allocate_kv_cache_tensors called from _init_minimal_kv_cache_for_profiling,
// called from profile_cudagraph_memory. The KV-allocation frames below must not win.
TEST(Diagnose, CudagraphProfilingOomOnRealHybridLog) {
  const Diagnosis d =
      diagnose_launch(read_fixture("github_qwen36_35b_nvfp4_cudagraph_profiling.log"), "");
  EXPECT_EQ(cause(d), "cudagraph_profiling_oom");
  EXPECT_TRUE(evidence_has(d, "_init_minimal_kv_cache_for_profiling"));
  EXPECT_TRUE(evidence_has(d, "CUDA error: out of memory"));
  // The minimal cache: 512 blocks (num_gpu_blocks_override) of 2096-token attention blocks.
  EXPECT_NE(d.explanation.find("512 blocks"), std::string::npos) << d.explanation;
  EXPECT_NE(d.explanation.find("2096 tokens"), std::string::npos) << d.explanation;
  EXPECT_NE(d.explanation.find("cannot help"), std::string::npos);
}

// Reconstructed from issue 12's description: Qwen3.6-27B AWQ, MTP 2, fp8 KV, 16384 tokens,
// utilization 0.8 on an RTX 5090; the frames are the real ones of the test above.
TEST(Diagnose, CudagraphProfilingOomQwen36Rtx5090Reconstructed) {
  const Diagnosis d =
      diagnose_launch(read_fixture("reconstructed_qwen36_27b_rtx5090_cudagraph_profiling.log"), "");
  EXPECT_EQ(cause(d), "cudagraph_profiling_oom");
  EXPECT_EQ(d.figures.max_model_len.value_or(0), 16384);
  EXPECT_DOUBLE_EQ(d.figures.gpu_memory_utilization.value_or(0.0), 0.8);
}

// Real: vllm-project/vllm#28143, "Failed to create unquantized linear weights: CUDA out of
// memory" from linear.py create_weights.
TEST(Diagnose, WeightsDoNotFit) {
  const Diagnosis d = diagnose_launch(read_fixture("vllm28143_weights_create_oom.log"), "");
  EXPECT_EQ(cause(d), "weights_do_not_fit");
  EXPECT_EQ(d.oom_phase, "loading");
  EXPECT_NE(d.explanation.find("0.88 GiB"), std::string::npos) << d.explanation;  // 896 MiB
}

// Real: vllm-project/vllm#23278 (dev-008), "Available KV cache memory: -2.14 GiB".
TEST(Diagnose, NegativeKvIsBudgetExhausted) {
  std::ifstream in(std::string(VRAMPLAN_TEST_DATA_DIR) +
                   "/vllm_logs/v1_010_dev008_negative_kv.log");
  std::ostringstream text;
  text << in.rdbuf();
  const Diagnosis d = diagnose_launch(text.str(), "");
  EXPECT_EQ(cause(d), "kv_budget_exhausted");
  EXPECT_TRUE(evidence_has(d, "Available KV cache memory: -2.14 GiB"));
  EXPECT_NE(d.explanation.find("65.97 GiB"), std::string::npos) << d.explanation;  // weights
}

// Real: vllm-project/vllm#16199, V0: "The model's max seq len (4096) is larger than the
// maximum number of tokens that can be stored in KV cache (3584)".
TEST(Diagnose, MaxModelLenExceedsKv) {
  const Diagnosis d = diagnose_launch(read_fixture("vllm16199_v0_insufficient_kv.log"), "");
  EXPECT_EQ(cause(d), "max_model_len_exceeds_kv");
  EXPECT_EQ(d.figures.max_model_len.value_or(0), 4096);
  EXPECT_TRUE(evidence_has(d, "(3584)"));
}

// Frames real (vllm-project/vllm#7854: determine_num_available_blocks -> profile_run ->
// execute_model); the final OOM line is reconstructed in torch's wording.
TEST(Diagnose, ActivationPeakOomInProfileRun) {
  const Diagnosis d =
      diagnose_launch(read_fixture("vllm7854_v0_profile_run.reconstructed_oom_line.log"), "");
  EXPECT_EQ(cause(d), "activation_peak_oom");
  EXPECT_EQ(d.oom_phase, "profile_run");  // execute_model under profile_run is not runtime
}

// Real: vllm-project/vllm#16199, V0: "RuntimeError: CUDA error: out of memory" in
// torch/cuda/graphs.py capture_end.
TEST(Diagnose, CudagraphCaptureOom) {
  const Diagnosis d = diagnose_launch(read_fixture("vllm16199_capture_oom.log"), "");
  EXPECT_EQ(cause(d), "cudagraph_capture_oom");
  EXPECT_TRUE(evidence_has(d, "capture_end"));
}

// Real: vllm-project/vllm#34643, an OOM in compute_logprobs while serving. torch lists three
// processes but not "this process", so the others cannot be told apart from this one.
TEST(Diagnose, RuntimeOom) {
  const Diagnosis d = diagnose_launch(read_fixture("vllm34643_runtime_logprobs_oom.log"), "");
  EXPECT_EQ(cause(d), "runtime_oom");
  EXPECT_FALSE(d.oom_other_processes_bytes.has_value());
}

// Real kernel lines from AMD-AGI/GEAK#398, a memory-cgroup kill written over several lines,
// with the start of a real vLLM 0.19.0 log that ends without an error.
TEST(Diagnose, HostOomKillerMemcgAcrossLines) {
  const Diagnosis d =
      diagnose_launch(read_fixture("v019_llama4_scout_startup_free.log").substr(0, 200),
                      read_fixture("geak398_memcg_kill.dmesg"));
  EXPECT_EQ(cause(d), "host_ram_oom_killer");
  ASSERT_EQ(d.oom_kills.size(), 1u);
  EXPECT_EQ(d.oom_kills[0].pid, 1703792);
  EXPECT_EQ(d.oom_kills[0].process, "ray::IDLE");
  EXPECT_TRUE(d.oom_kills[0].cgroup);
  EXPECT_EQ(d.oom_kills[0].anon_rss_bytes.value_or(0), 37760LL * 1024);
  EXPECT_EQ(d.oom_kills[0].file_rss_bytes.value_or(0), 77744LL * 1024);
}

// Real kernel lines from vllm-project/vllm#54237: a global (not cgroup) OOM kill.
TEST(Diagnose, HostOomKillerGlobal) {
  const Diagnosis d = diagnose_launch("", read_fixture("vllm54237_global_oom.dmesg"));
  EXPECT_EQ(cause(d), "host_ram_oom_killer");
  ASSERT_EQ(d.oom_kills.size(), 1u);
  EXPECT_FALSE(d.oom_kills[0].cgroup);
  EXPECT_EQ(d.oom_kills[0].anon_rss_bytes.value_or(0), 2111980LL * 1024);
  EXPECT_TRUE(evidence_has(d, "VLLM::EngineCor invoked oom-killer"));
}

// Reconstructed in the kernel's one-line format: "Memory cgroup out of memory: Killed
// process 2417 (VLLM::EngineCor) ... anon-rss:30408704kB ... shmem-rss:2097152kB".
TEST(Diagnose, HostOomKillerOneLineReconstructed) {
  const Diagnosis d = diagnose_launch("", read_fixture("reconstructed_memcg_engine_kill.dmesg"));
  EXPECT_EQ(cause(d), "host_ram_oom_killer");
  ASSERT_EQ(d.oom_kills.size(), 1u);
  EXPECT_EQ(d.oom_kills[0].process, "VLLM::EngineCor");
  EXPECT_TRUE(d.oom_kills[0].cgroup);
  // 30408704 kB = 29.0 GiB anonymous; 2097152 kB = 2.00 GiB shared.
  EXPECT_NE(d.explanation.find("29.00 GiB anonymous"), std::string::npos) << d.explanation;
  EXPECT_NE(d.explanation.find("2.00 GiB shared"), std::string::npos) << d.explanation;
}

// A GPU failure in the log wins over a kill in the kernel excerpt.
TEST(Diagnose, LogFailureWinsOverKernelKill) {
  const Diagnosis d = diagnose_launch(read_fixture("v019_llama4_scout_startup_free.log"),
                                      read_fixture("reconstructed_memcg_engine_kill.dmesg"));
  EXPECT_EQ(cause(d), "gpu_memory_utilization_overshoot");
  EXPECT_EQ(d.oom_kills.size(), 1u);
}

// Real: vLLM 0.19.0 logs that failed for other reasons (a 403 from the Hub, a data-parallel
// rank without a GPU).
TEST(Diagnose, NotMemory) {
  Diagnosis d = diagnose_launch(read_fixture("v019_gemma2_hf_forbidden.log"), "");
  EXPECT_EQ(cause(d), "not_memory");
  EXPECT_TRUE(evidence_has(d, "403 Client Error"));
  d = diagnose_launch(read_fixture("v019_llama8b_dp2_local_rank.log"), "");
  EXPECT_EQ(cause(d), "not_memory");
  EXPECT_TRUE(evidence_has(d, "AssertionError: DP adjusted local rank 1 is out of bounds"));
}

// Real: the end of a vLLM 0.19.0 log that started.
TEST(Diagnose, StartedLogIsUnknown) {
  const Diagnosis d = diagnose_launch(read_fixture("v019_llama8b_started.log"), "");
  EXPECT_EQ(cause(d), "unknown");
  EXPECT_TRUE(d.evidence.empty());
  EXPECT_EQ(d.figures.outcome, "started");
}

// Without a traceback, the startup phase the log reached places the OOM.
TEST(Diagnose, BareOomPlacedByStartupPhase) {
  const std::string oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.";
  EXPECT_EQ(cause(diagnose_launch("Starting to load model x...\n" + oom, "")),
            "weights_do_not_fit");
  EXPECT_EQ(cause(diagnose_launch("Model loading took 5.00 GiB memory\n" + oom, "")),
            "activation_peak_oom");
  EXPECT_EQ(cause(diagnose_launch(
                "GPU KV cache size: 10 tokens\nCapturing CUDA graphs (decode)\n" + oom, "")),
            "cudagraph_capture_oom");
  EXPECT_EQ(cause(diagnose_launch("Graph capturing finished in 4 secs, took 1 GiB\n" + oom, "")),
            "sampler_warmup_oom");
  EXPECT_EQ(cause(diagnose_launch("Application startup complete.\n" + oom, "")), "runtime_oom");
  EXPECT_EQ(cause(diagnose_launch("GPU KV cache size: 10 tokens\n" + oom, "")),
            "gpu_memory_utilization_overshoot");
  EXPECT_EQ(cause(diagnose_launch(oom, "")), "unknown");
}

// torch names this process apart from the others: only the others are summed.
TEST(Diagnose, OtherTenantsFromTorchMessage) {
  const std::string text =
      "Application startup complete.\n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total "
      "capacity of 22.05 GiB of which 100.00 MiB is free. Process 77 has 3.50 GiB memory in use. "
      "Including non-PyTorch memory, this process has 18.40 GiB memory in use.";
  const Diagnosis d = diagnose_launch(text, "");
  EXPECT_EQ(cause(d), "runtime_oom");
  EXPECT_EQ(d.oom_other_processes_bytes.value_or(0), 3758096384);  // 3.5 x 2^30
}

// The advice is data that agrees with the words: each knob it names appears in the
// explanation as vLLM's flag, and the values are the ones the log or vLLM's docs state.
std::string flag_of(const std::string& knob) {
  std::string flag = "--" + knob;
  for (char& c : flag) c = c == '_' ? '-' : c;
  return flag;
}

nlohmann::json advice_of(const Diagnosis& d) { return vramplan::to_json(d)["advice"]; }

TEST(DiagnoseAdvice, MaxModelLenLowersToVllmsOwnEstimate) {
  // vLLM 0.19's wording (kv_cache_utils.py), as in LogParserFailures: the estimate 9936 is
  // the log's number, the largest max_model_len vLLM says fits.
  const Diagnosis d = diagnose_launch(
      "ValueError: To serve at least one request with the models's max seq len (32768), 16.00 "
      "GiB KV cache is needed, which is larger than the available KV cache memory (4.85 GiB). "
      "Based on the available memory, the estimated maximum model length is 9936.",
      "");
  ASSERT_EQ(cause(d), "max_model_len_exceeds_kv");
  const nlohmann::json expected = nlohmann::json::parse(R"([
    {"knob": "max_model_len", "flag": "--max-model-len", "action": "lower", "value": 9936,
     "why": null},
    {"knob": "gpu_memory_utilization", "flag": "--gpu-memory-utilization", "action": "raise",
     "value": null, "why": null},
    {"knob": "kv_cache_dtype", "flag": "--kv-cache-dtype", "action": "set", "value": "fp8",
     "why": null}])");
  EXPECT_EQ(advice_of(d), expected);
}

TEST(DiagnoseAdvice, GraphFailuresAdviseEagerModeAndOthersDoNot) {
  const Diagnosis capture = diagnose_launch(read_fixture("vllm16199_capture_oom.log"), "");
  ASSERT_EQ(cause(capture), "cudagraph_capture_oom");
  EXPECT_EQ(advice_of(capture)[0],
            nlohmann::json::parse(R"({"knob": "enforce_eager", "flag": "--enforce-eager",
                                      "action": "set", "value": true, "why": null})"));
  const Diagnosis sampler =
      diagnose_launch(read_fixture("v019_gpt_oss_20b_sampler_warmup.log"), "");
  ASSERT_EQ(cause(sampler), "sampler_warmup_oom");
  for (const auto& a : advice_of(sampler)) EXPECT_NE(a["knob"], "enforce_eager");
  const Diagnosis weights = diagnose_launch(read_fixture("vllm28143_weights_create_oom.log"), "");
  ASSERT_EQ(cause(weights), "weights_do_not_fit");
  for (const auto& a : advice_of(weights)) {
    EXPECT_NE(a["knob"], "gpu_memory_utilization");  // "No --gpu-memory-utilization fixes this"
  }
}

TEST(DiagnoseAdvice, EveryAdvisedKnobIsInTheExplanation) {
  const char* fixtures[] = {
      "v019_gpt_oss_20b_sampler_warmup.log", "vllm28143_weights_create_oom.log",
      "vllm16199_v0_insufficient_kv.log",    "vllm7854_v0_profile_run.reconstructed_oom_line.log",
      "vllm16199_capture_oom.log",           "vllm34643_runtime_logprobs_oom.log",
      "v019_llama4_scout_startup_free.log"};
  for (const char* name : fixtures) {
    const Diagnosis d = diagnose_launch(read_fixture(name), "");
    EXPECT_FALSE(d.advice.empty()) << name;
    for (const vramplan::Advice& a : d.advice) {
      // How the prose says the knobs it names in words rather than flags.
      const std::string said = a.knob == "kv_cache_dtype"           ? "fp8 KV"
                               : a.knob == "tensor_parallel_size"   ? "more tensor"
                               : a.knob == "pipeline_parallel_size" ? "pipeline parallelism"
                                                                    : flag_of(a.knob);
      EXPECT_NE(d.explanation.find(said), std::string::npos) << name << ": " << said;
    }
  }
  EXPECT_TRUE(diagnose_launch("Application startup complete.", "").advice.empty());
}

// Hostile input: random bytes, long lines, NULs, ANSI fragments; never throws, output is
// valid UTF-8 JSON.
TEST(Diagnose, RandomBytesNeverThrow) {
  std::mt19937_64 rng(12);
  const std::string alphabet[] = {"CUDA out of memory",
                                  "Killed process ",
                                  "Traceback (most recent call last)",
                                  "\x1b[",
                                  "^[[",
                                  "(",
                                  "pid=",
                                  "\n",
                                  "\r",
                                  "anon-rss:",
                                  "Process ",
                                  " has ",
                                  "Tried to allocate ",
                                  "99999999999999999999",
                                  "Free memory on device",
                                  "\xff\xfe",
                                  std::string(1, '\0')};
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int pieces = static_cast<int>(rng() % 200);
    for (int i = 0; i < pieces; ++i) {
      if (rng() % 3 == 0) {
        text += alphabet[rng() % (sizeof alphabet / sizeof alphabet[0])];
      } else {
        const std::size_t n = rng() % 40;
        for (std::size_t k = 0; k < n; ++k) text.push_back(static_cast<char>(rng() & 0xff));
      }
    }
    Diagnosis d;
    ASSERT_NO_THROW(d = diagnose_launch(text, text));
    const nlohmann::json j = vramplan::to_json(d);
    for (const auto& line : j["evidence"]) ASSERT_NO_THROW((void)nlohmann::json(line).dump());
    ASSERT_NO_THROW((void)j["explanation"].dump());
  }
  std::string long_line(3 * vramplan::kMaxDiagnoseLineBytes, 'x');
  long_line += "CUDA out of memory";  // beyond the examined part of the line
  EXPECT_EQ(cause(diagnose_launch(long_line, "")), "unknown");
}

}  // namespace

TEST(Diagnose, StateBlocksBelowMaxNumSeqsOnRealLog) {
  // vllm#38632: a Qwen3.5 run with the default max_num_seqs 1024 and 600 state blocks.
  const Diagnosis d =
      diagnose_launch(read_fixture("vllm38632_state_blocks_below_max_num_seqs.log"), "");
  EXPECT_EQ(d.cause, vramplan::FailureCause::StateBlocksBelowMaxNumSeqs);
  EXPECT_EQ(cause(d), "state_blocks_below_max_num_seqs");
  EXPECT_EQ(d.figures.outcome, "state_blocks_below_max_num_seqs");
  EXPECT_EQ(d.figures.state_blocks, 600);
  EXPECT_EQ(d.figures.max_num_seqs, 1024);
  ASSERT_FALSE(d.advice.empty());
  EXPECT_EQ(d.advice[0].knob, "max_num_seqs");
  EXPECT_EQ(d.advice[0].value, 600);
  EXPECT_NE(d.explanation.find("(600)"), std::string::npos) << d.explanation;
}
