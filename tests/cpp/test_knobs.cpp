// The knob registry: one declaration per engine knob, every value checked at the boundary.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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
  // utilization, context, sequences, batched tokens, TP, PP, DP, block size, speculative
  // tokens, LoRA slots and rank, CPU offload, KV offload, swap space, fixed KV bytes.
  EXPECT_EQ(numeric, 15);
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
