// Checkpoint formats a vLLM release can no longer load (get_quantization_config's method table in
// vllm/model_executor/layers/quantization/__init__.py, read from the 0.22.0-0.33.0 wheels): GGUF
// leaves at 0.24.0, bitsandbytes at 0.28.0, and 0.33.0 refuses GPTQ group activation ordering
// (utils/gptq_utils.py: desc_act with a group size is "no longer supported"). Planning such a
// launch is vLLM's startup error, named, not a plan for a checkpoint vLLM would not serve.
#include <gtest/gtest.h>

#include <string>

#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;

namespace {

const SpecDatabase& database() {
  static const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return db;
}

// The ConfigError's field, or "" when the launch plans.
std::string refusal(const ModelSpec& spec, const char* version, const char* quantization = "") {
  HardwareConfig hardware;
  hardware.gpu = database().gpu("H100-80GB");
  EngineConfig config;
  config.engine_version = version;
  config.quantization = quantization;
  config.max_model_len = 4096;
  try {
    compute_breakdown(spec, hardware, config);
  } catch (const ConfigError& e) {
    return e.field();
  }
  return "";
}

}  // namespace

TEST(QuantReleases, GgufUntilPoint23) {
  const ModelSpec gguf = database().model("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M");
  EXPECT_EQ(refusal(gguf, "0.23.0"), "");
  EXPECT_EQ(refusal(gguf, "0.24.0"), "quantization");
}

TEST(QuantReleases, BitsandbytesUntilPoint27) {
  // In-flight --quantization bitsandbytes of a 16-bit checkpoint uses the same loader.
  const ModelSpec llama = database().model("meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(refusal(llama, "0.27.0", "bitsandbytes"), "");
  EXPECT_EQ(refusal(llama, "0.28.0", "bitsandbytes"), "quantization");
}

TEST(QuantReleases, GptqGroupActOrderUntilPoint32) {
  // TheBloke's act-order branch: desc_act true, group_size 128 (its config.json).
  const ModelSpec act_order =
      load_hf_config(std::string(VRAMPLAN_TEST_DATA_DIR) +
                     "/configs/TheBloke__MythoMax-L2-13B-GPTQ__gptq-4bit-128g-actorder_True.json");
  EXPECT_EQ(refusal(act_order, "0.32.0"), "");
  EXPECT_EQ(refusal(act_order, "0.33.0"), "quantization.desc_act");
  // One group per output channel makes act order a no-op: 0.33 loads it.
  const ModelSpec per_channel =
      load_hf_config(std::string(VRAMPLAN_TEST_DATA_DIR) +
                     "/configs/TheBloke__MythoMax-L2-13B-GPTQ__gptq-8bit--1g-actorder_True.json");
  EXPECT_EQ(refusal(per_channel, "0.33.0"), "");
}
