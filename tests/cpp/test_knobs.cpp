// The knob registry: one declaration per engine knob, every value checked at the boundary.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/knobs.hpp"

using namespace vramplan;

TEST(Knobs, EveryNumericKnobRefusesMinusOneNanAndText) {
  int numeric = 0;
  for (const KnobSpec& k : knob_specs()) {
    if (k.type == KnobType::Boolean || k.type == KnobType::Text) continue;
    ++numeric;
    EngineConfig c;
    SCOPED_TRACE(std::string(k.name));
    // -1 was "unset" before the registry; now it is a value, and out of every range.
    EXPECT_THROW(set_knob(c, k.name, std::int64_t{-1}), ConfigError);
    EXPECT_THROW(set_knob(c, k.name, std::nan("")), ConfigError);
    EXPECT_THROW(set_knob(c, k.name, std::numeric_limits<double>::infinity()), ConfigError);
    EXPECT_THROW(set_knob(c, k.name, std::string("4096")), ConfigError);
    EXPECT_THROW(set_knob(c, k.name, true), ConfigError);
    try {
      set_knob(c, k.name, std::int64_t{-1});
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.field(), std::string(k.name));  // the error names the knob
      EXPECT_EQ(e.value(), "-1");
    }
  }
  // The loop covered the numeric knobs, byte knobs among them.
  EXPECT_GT(numeric, 0);
  EXPECT_EQ(knob_spec("cpu_offload_bytes").type, KnobType::Bytes);
}

TEST(Knobs, ValuesRoundTripThroughTheConfig) {
  EngineConfig c;
  set_knob(c, "gpu_memory_utilization", 0.85);
  set_knob(c, "max_model_len", std::int64_t{32768});
  set_knob(c, "block_size", std::int64_t{32});
  set_knob(c, "kv_cache_dtype", std::string("FP8"));  // canonical lower case
  set_knob(c, "enforce_eager", true);
  set_knob(c, "cpu_offload_bytes", std::int64_t{4} << 30);
  EXPECT_DOUBLE_EQ(*c.gpu_memory_utilization, 0.85);
  EXPECT_EQ(*c.max_model_len, 32768);
  EXPECT_EQ(*c.block_size, 32);
  EXPECT_EQ(c.kv_cache_dtype, "fp8");
  EXPECT_TRUE(c.enforce_eager);
  EXPECT_EQ(c.cpu_offload_bytes, std::int64_t{4} << 30);
  for (const KnobSpec& k : knob_specs()) {
    const auto value = k.get(c);
    if (!value || k.name == "speculative_model") continue;
    EngineConfig copy;
    set_knob(copy, k.name, *value);
    EXPECT_EQ(k.get(copy), value) << k.name;
  }
  // An integer is a fine utilization (1 -> 1.0); unset returns a knob to its default.
  set_knob(c, "gpu_memory_utilization", std::int64_t{1});
  EXPECT_DOUBLE_EQ(*c.gpu_memory_utilization, 1.0);
  knob_spec("max_model_len").set(c, std::nullopt);
  EXPECT_FALSE(c.max_model_len.has_value());
}

TEST(Knobs, VllmRefusesTheseValues) {
  EngineConfig c;
  for (std::int64_t bad : {0, 7, 12, 512}) {  // vLLM's block sizes: 1, 8, 16, ..., 256
    EXPECT_THROW(set_knob(c, "block_size", bad), ConfigError) << bad;
  }
  EXPECT_THROW(set_knob(c, "gpu_memory_utilization", 0.0), ConfigError);
  EXPECT_THROW(set_knob(c, "gpu_memory_utilization", 1.01), ConfigError);
  EXPECT_THROW(set_knob(c, "max_lora_rank", std::int64_t{24}), ConfigError);
  EXPECT_THROW(set_knob(c, "kv_cache_dtype", std::string("int4")), ConfigError);
  EXPECT_THROW(set_knob(c, "max_num_seqs", std::int64_t{0}), ConfigError);
  EXPECT_THROW(set_knob(c, "no_such_knob", std::int64_t{1}), ConfigError);
  // A C++ caller that fills the struct directly is checked when the launch compiles.
  c = EngineConfig{};
  c.max_num_batched_tokens = -4;
  EXPECT_THROW(validate_knobs(c), ConfigError);
  c.max_num_batched_tokens.reset();
  c.cpu_offload_bytes = -(std::int64_t{1} << 62);
  EXPECT_THROW(validate_knobs(c), ConfigError);
}

TEST(Knobs, EveryKnobIsDocumented) {
  for (const KnobSpec& k : knob_specs()) {
    EXPECT_FALSE(k.help.empty()) << k.name;
    EXPECT_FALSE(k.default_source.empty()) << k.name;
    if (!k.flag.empty()) {
      EXPECT_EQ(k.flag.substr(0, 2), "--") << k.name;
      EXPECT_FALSE(k.kwarg.empty()) << k.name;
    }
  }
}

// The default text of the row rules is generated from engines.yaml, so it moves with the rows:
// vLLM 0.21 raised the default utilization to 0.92 (vllm-0.21 EngineArgs), V1 (0.8) stopped
// pinning V0's 4 GiB swap space, and 0.11 made allgather_reducescatter the all-to-all default.
TEST(Knobs, RowDefaultsAreGeneratedFromTheRows) {
  EXPECT_NE(knob_default_text(knob_spec("gpu_memory_utilization")).find("0.92 from 0.21.0"),
            std::string::npos);
  EXPECT_NE(knob_default_text(knob_spec("swap_space_bytes")).find("4 GiB from"), std::string::npos);
  EXPECT_NE(
      knob_default_text(knob_spec("all2all_backend")).find("allgather_reducescatter from 0.11.0"),
      std::string::npos);
  EXPECT_EQ(knob_default_text(knob_spec("engine_version")),
            "the newest row of model_specs/engines.yaml: " + newest_known_vllm_version());
  // A stated rule is its own wording.
  EXPECT_EQ(knob_default_text(knob_spec("tensor_parallel_size")), "1");
}

// The evaluated knobs are exactly LaunchKnobs' members (compiled.hpp): utilization, context,
// sequences, batched tokens, block size and the KV dtype (read as an element width).
TEST(Knobs, EvaluatedFlagMatchesLaunchKnobs) {
  EXPECT_EQ(evaluated_knob_names(),
            "gpu_memory_utilization, max_model_len, max_num_seqs, max_num_batched_tokens, "
            "kv_cache_dtype, block_size");
  EXPECT_TRUE(is_evaluated_knob("max_num_seqs"));
  EXPECT_FALSE(is_evaluated_knob("tensor_parallel_size"));
  EXPECT_FALSE(is_evaluated_knob("no_such_knob"));
}

// The context bound is the model's: Llama 3.1 8B's max_position_embeddings is 131072.
TEST(Knobs, ContextBoundIsTheModelsMaximum) {
  ModelSpec llama;
  llama.max_position_embeddings = 131072;
  const KnobBounds context = knob_bounds(knob_spec("max_model_len"), llama);
  EXPECT_EQ(context.minimum, 1.0);
  EXPECT_EQ(context.maximum, 131072.0);
  const KnobBounds seqs = knob_bounds(knob_spec("max_num_seqs"), llama);
  EXPECT_EQ(seqs.maximum, knob_spec("max_num_seqs").maximum);
}

// EngineArgs.get_batch_defaults: vLLM 0.19 on an H100 (>= 70 GiB) takes 1024 sequences and 8192
// batched tokens for `vllm serve` (16384 for LLM); an A100 80GB is excluded by name (256 /
// 2048); from 0.28 a >= 160 GiB GPU takes 16384 tokens for serve too.
TEST(Knobs, BatchDefaultsByGpuTier) {
  GpuSpec h100;
  h100.id = "H100-80GB";
  h100.name = "NVIDIA H100 80GB HBM3";
  h100.total_memory_bytes = 85029158912;
  const EngineProfile v019 = engine_profile("0.19.0");
  EXPECT_EQ(batch_defaults(v019, h100, false).max_num_seqs, 1024);
  EXPECT_EQ(batch_defaults(v019, h100, false).max_num_batched_tokens, 8192);
  EXPECT_EQ(batch_defaults(v019, h100, true).max_num_batched_tokens, 16384);
  GpuSpec a100 = h100;
  a100.id = "A100-80GB";
  a100.name = "NVIDIA A100-SXM4-80GB";
  EXPECT_EQ(batch_defaults(v019, a100, false).max_num_seqs, 256);
  EXPECT_EQ(batch_defaults(v019, a100, false).max_num_batched_tokens, 2048);
  GpuSpec b200 = h100;
  b200.id = "B200";
  b200.name = "NVIDIA B200";
  b200.total_memory_bytes = std::int64_t{180} << 30;
  EXPECT_EQ(batch_defaults(engine_profile("0.28.0"), b200, false).max_num_batched_tokens, 16384);
  EXPECT_EQ(batch_defaults(v019, b200, false).max_num_batched_tokens, 8192);
}

// The sweep axes the knob table names are SweepGrid's members, in its nesting order, and each
// is evaluated per point (a grid point never recompiles the launch).
TEST(Knobs, SweepAxesAreTheGridsAxes) {
  std::vector<std::string> axes;
  for (const KnobSpec& k : knob_specs()) {
    if (!k.sweep_axis) continue;
    axes.emplace_back(k.name);
    EXPECT_TRUE(k.evaluated) << k.name;
  }
  EXPECT_EQ(axes, (std::vector<std::string>{"gpu_memory_utilization", "max_model_len",
                                            "max_num_seqs", "max_num_batched_tokens"}));
}
