// The engine seam: vLLM's KV budget rule as a free function over the shared terms, and the
// engine descriptor. Expected values are derived by hand in the comments.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "vramplan/engine_descriptor.hpp"
#include "vramplan/engine_rules.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/sglang.hpp"
#include "vramplan/sglang_knobs.hpp"

namespace vramplan {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// An 80 GiB GPU; 16 GiB of weights, 2 GiB activation peak, 1 GiB non-torch, 512 MiB of graphs,
// 256 MiB of persistent (MRV2) buffers.
BudgetTerms h100_terms() {
  return BudgetTerms{80 * kGiB, 16 * kGiB, 2 * kGiB, 1 * kGiB, 512 * kMiB, 256 * kMiB};
}

EngineProfile rule(bool graph_in_budget, bool consumed, bool cached_activations) {
  EngineProfile row;
  row.cudagraph_in_budget = graph_in_budget;
  row.consumed_budget_formula = consumed;
  row.non_torch_counts_cached_activations = cached_activations;
  return row;
}

TEST(EngineSeam, VllmBudgetGraphEstimateInside) {
  // 0.21+: ceil(80 GiB x 0.9) = 72 GiB requested; 72 - 16 - 2 - 1 - 0.5 = 52.5 GiB.
  const KvBudget b = kv_budget(EngineRules{rule(true, false, false)}, h100_terms(), 0.9, {});
  EXPECT_EQ(b.requested_memory_bytes, 72 * kGiB);
  EXPECT_EQ(b.kv_cache_bytes, 52 * kGiB + 512 * kMiB);
  EXPECT_EQ(b.cudagraph_in_budget_bytes, 512 * kMiB);
  EXPECT_EQ(b.persistent_in_budget_bytes, 0);
}

TEST(EngineSeam, VllmBudgetGraphsOutsideAndConsumedFormula) {
  // Graphs outside (<= 0.20, MRV2 before 0.29), consumed formula on: 72 - 16 - 2 - 1 - 0.25.
  const KvBudget b = kv_budget(EngineRules{rule(false, true, false)}, h100_terms(), 0.9, {});
  EXPECT_EQ(b.kv_cache_bytes, 52 * kGiB + 768 * kMiB);
  EXPECT_EQ(b.cudagraph_in_budget_bytes, 0);
  EXPECT_EQ(b.persistent_in_budget_bytes, 256 * kMiB);
}

TEST(EngineSeam, VllmBudgetCountsCachedActivationsTwice) {
  // PR #10511 era: the freed activation blocks count as non-torch too: 72 - 16 - 2 - 1 - 2.
  const KvBudget b = kv_budget(EngineRules{rule(false, false, true)}, h100_terms(), 0.9, {});
  EXPECT_EQ(b.kv_cache_bytes, 51 * kGiB);
}

TEST(EngineSeam, FixedKvCacheReplacesTheBudget) {
  // --kv-cache-memory-bytes: the KV cache is what was asked, whatever the utilization says.
  const KvBudget b = kv_budget(EngineRules{rule(true, false, false)}, h100_terms(), 0.5,
                               std::optional<std::int64_t>{10 * kGiB});
  EXPECT_EQ(b.kv_cache_bytes, 10 * kGiB);
  EXPECT_EQ(b.requested_memory_bytes, 40 * kGiB);
}

TEST(EngineSeam, RequestedMemoryRoundsUp) {
  // 1001 B x 0.5 = 500.5 B: vLLM takes math.ceil.
  BudgetTerms terms;
  terms.total_memory_bytes = 1001;
  const KvBudget b = kv_budget(EngineRules{rule(true, false, false)}, terms, 0.5, {});
  EXPECT_EQ(b.requested_memory_bytes, 501);
}

TEST(EngineSeam, DescriptorNamesVllmAndItsSurface) {
  const EngineDescriptor& vllm = engine_descriptor("vllm");
  EXPECT_EQ(vllm.display_name, "vLLM");
  EXPECT_EQ(vllm.serve_command, "vllm serve");
  EXPECT_EQ(vllm.log_vocabulary, LogVocabulary::Vllm);
  EXPECT_EQ(&vllm.knobs(), &knob_specs());
  EXPECT_EQ(vllm.newest_known_version(), newest_known_vllm_version());
  // Every engine is found by its own name.
  for (const EngineDescriptor& d : engine_descriptors()) EXPECT_EQ(&engine_descriptor(d.name), &d);
}

TEST(EngineSeam, UnknownEngineIsAConfigErrorListingTheEngines) {
  try {
    (void)engine_descriptor("tgi");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "engine");
    EXPECT_EQ(e.value(), "'tgi'");
    std::string every_engine;
    for (const EngineDescriptor& d : engine_descriptors()) {
      every_engine += (every_engine.empty() ? "" : ", ") + std::string(d.name);
    }
    EXPECT_EQ(e.allowed(), every_engine);
  }
}

TEST(EngineSeam, SglangBudgetThroughTheSeam) {
  // SGLang: total_memory_bytes is the baseline B. B = 80 GiB, W = 16 GiB, f = 0.8:
  // slack = 80 x 0.2 = 16 GiB; KV = (80 - 16) - 16 = 48 GiB. The activation, non-torch and
  // graph terms are not subtracted: they must fit in the slack instead.
  const EngineRules rules{sglang_table().rows.back()};
  const KvBudget b = kv_budget(rules, h100_terms(), 0.8, {});
  EXPECT_EQ(b.kv_cache_bytes, 48 * kGiB);
  EXPECT_EQ(b.requested_memory_bytes, 64 * kGiB);  // B - slack = B x f
  EXPECT_EQ(b.cudagraph_in_budget_bytes, 0);
  // A fixed size caps the pool (SGLang's --max-total-tokens in bytes), never raises it.
  EXPECT_EQ(
      kv_budget(rules, h100_terms(), 0.8, std::optional<std::int64_t>{10 * kGiB}).kv_cache_bytes,
      10 * kGiB);
  EXPECT_EQ(
      kv_budget(rules, h100_terms(), 0.8, std::optional<std::int64_t>{90 * kGiB}).kv_cache_bytes,
      48 * kGiB);
  // f = 0.2: slack 64 GiB, KV = 64 - 64 = 0 (the weights leave nothing).
  EXPECT_EQ(kv_budget(rules, h100_terms(), 0.2, {}).kv_cache_bytes, 0);
}

TEST(EngineSeam, SglangDescriptorRendersItsOwnPlan) {
  const EngineDescriptor& sglang = engine_descriptor("sglang");
  EXPECT_EQ(sglang.serve_command, "python -m sglang.launch_server");
  EXPECT_EQ(sglang.log_vocabulary, LogVocabulary::Sglang);
  EXPECT_EQ(&sglang.knobs(), &sglang_knob_specs());
  EXPECT_EQ(sglang.newest_known_version(), sglang_table().rows.back().release);
  SglangPlan plan;
  plan.planned_config.model_path = "Qwen/Qwen3-8B";
  plan.planned_config.tp_size = 2;
  plan.planned_config.mem_fraction_static = 0.8125;
  plan.planned_config.chunked_prefill_size = -1;
  plan.planned_config.disable_cuda_graph = true;
  plan.launch_argv = sglang_launch_argv(plan.planned_config, sglang_table().rows.back());
  const std::vector<std::string> argv = sglang.launch_argv(&plan);
  const std::vector<std::string> expected = {
      "--tp-size",           "2", "--mem-fraction-static", "0.812", "--chunked-prefill-size", "-1",
      "--disable-cuda-graph"};
  EXPECT_EQ(argv, expected);
  const nlohmann::json kwargs = sglang.launch_kwargs(&plan);
  EXPECT_EQ(kwargs["model_path"], "Qwen/Qwen3-8B");
  EXPECT_EQ(kwargs["tp_size"], 2);
  EXPECT_EQ(kwargs["chunked_prefill_size"], -1);
  EXPECT_EQ(kwargs["disable_cuda_graph"], true);
  EXPECT_TRUE(sglang.launch_env(&plan).empty());
}

TEST(EngineSeam, SglangKnobTableSpeaksSglang) {
  // Every flag is SGLang's own spelling; defaults of row knobs come from the rows.
  for (const KnobSpec& k : sglang_knob_specs()) {
    if (!k.flag.empty()) {
      EXPECT_EQ(k.flag.substr(0, 2), "--") << k.name;
    }
  }
  EXPECT_EQ(knob_default_text(sglang_knob_spec("page_size")),
            "the release's page_size_default: 1 from 0.4.0");
  EXPECT_EQ(knob_default_text(sglang_knob_spec("sglang_version")),
            "the newest release model_specs/sglang.yaml was read from: 0.5.23");
  // A vLLM name is refused, naming SGLang's knob.
  try {
    (void)sglang_knob_spec("gpu_memory_utilization");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "gpu_memory_utilization");
    EXPECT_EQ(e.allowed(), "mem_fraction_static");
  }
  SglangConfig c;
  set_sglang_knob(c, "mem_fraction_static", KnobValue{0.85});
  set_sglang_knob(c, "tp_size", KnobValue{std::int64_t{4}});
  EXPECT_EQ(c.mem_fraction_static, 0.85);
  EXPECT_EQ(c.tp_size, 4);
  EXPECT_THROW(set_sglang_knob(c, "mem_fraction_static", KnobValue{1.5}), ConfigError);
  EXPECT_THROW(set_sglang_knob(c, "chunked_prefill_size", KnobValue{std::int64_t{0}}), ConfigError);
  EXPECT_THROW(set_sglang_knob(c, "kv_cache_dtype", KnobValue{std::string("fp4")}), ConfigError);
}

TEST(EngineSeam, EveryEngineFillsEveryEntry) {
  for (const EngineDescriptor& d : engine_descriptors()) {
    SCOPED_TRACE(std::string(d.name));
    EXPECT_NE(d.knobs, nullptr);
    EXPECT_NE(d.newest_known_version, nullptr);
    EXPECT_NE(d.launch_argv, nullptr);
    EXPECT_NE(d.launch_kwargs, nullptr);
    EXPECT_NE(d.launch_env, nullptr);
    EXPECT_NE(d.release, nullptr);
    EXPECT_NE(d.read_log, nullptr);
    EXPECT_NE(d.read_log_file, nullptr);
    EXPECT_NE(d.launch_from_figures, nullptr);
    EXPECT_NE(d.diagnose, nullptr);
  }
}

TEST(EngineSeam, EveryEngineDiagnosesInOneShape) {
  // The keys every engine's diagnosis has, whatever the text: callers read these for any engine.
  for (const EngineDescriptor& d : engine_descriptors()) {
    SCOPED_TRACE(std::string(d.name));
    const nlohmann::json j = d.diagnose("no failure here\n", "");
    EXPECT_EQ(j["engine"], std::string(d.name));
    for (const char* key : {"cause", "explanation", "evidence", "advice", "oom_kills", "figures"}) {
      EXPECT_TRUE(j.contains(key)) << key;
    }
    EXPECT_EQ(j["figures"], d.read_log("no failure here\n"));
    // The newest release is its own rules' release, with nothing assumed.
    const EngineRelease newest = d.release("");
    EXPECT_EQ(newest.version, d.newest_known_version());
    EXPECT_EQ(newest.rules_release, newest.version);
    EXPECT_EQ(newest.note, "");
  }
}

TEST(EngineSeam, VllmRebuildsTheLaunchItsLogStates) {
  // "auto" is the unset KV dtype; the model and measured figures are not knobs; the release is
  // read at its patch (0.10.2's row, not 0.10.0's).
  const nlohmann::json figures = {
      {"tensor_parallel_size", 2}, {"max_model_len", 8192}, {"kv_cache_dtype", "auto"},
      {"vllm_version", "0.10.2"},  {"model", "m"},          {"kv_tokens", 476016},
      {"max_num_seqs", nullptr}};
  const nlohmann::json expected = {
      {"tensor_parallel_size", 2}, {"max_model_len", 8192}, {"engine_version", "0.10.2"}};
  EXPECT_EQ(engine_descriptor("vllm").launch_from_figures(figures), expected);
  // A log printed by a release newer than the rows: planned with the newest, and said so.
  EXPECT_NE(engine_descriptor("vllm").release("99.0.0").note.find("newer"), std::string::npos);
}

TEST(EngineSeam, SglangRebuildsTheLaunchItsLogStates) {
  // max_running_requests is what the scheduler derived, not the launch's setting; the release
  // stays as printed (its rows tell .postN builds apart).
  const nlohmann::json figures = {{"tp_size", 4},
                                  {"mem_fraction_static", 0.9},
                                  {"max_running_requests", 2049},
                                  {"kv_cache_dtype", "fp8_e5m2"},
                                  {"sglang_version", "0.4.6.post5"},
                                  {"max_total_num_tokens", 46611}};
  const nlohmann::json expected = {{"tp_size", 4},
                                   {"mem_fraction_static", 0.9},
                                   {"kv_cache_dtype", "fp8_e5m2"},
                                   {"sglang_version", "0.4.6.post5"}};
  EXPECT_EQ(engine_descriptor("sglang").launch_from_figures(figures), expected);
  const std::string max_tokens_line =
      "[2025-03-08 12:29:29 TP0] max_total_num_tokens=46611, chunked_prefill_size=2048, "
      "max_prefill_tokens=16384, max_running_requests=2049, context_len=131072\n";
  EXPECT_EQ(engine_descriptor("sglang").read_log(max_tokens_line)["max_total_num_tokens"], 46611);
}

}  // namespace
}  // namespace vramplan
