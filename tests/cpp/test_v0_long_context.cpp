// V0's long-context chunked prefill (vllm/engine/arg_utils.py create_engine_config and
// vllm/config.py SchedulerConfig, read from the 0.5.4, 0.6.4 and 0.7.1 wheels): above 32768
// tokens of max_model_len a text model without a sliding window, speculative decoding or LoRA
// chunks its prompts, and max_num_batched_tokens defaults to 512 (0.5-0.6) or 2048 (0.7) instead
// of max(max_model_len, 2048). Each expectation is vLLM's rule applied by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;

namespace {

const SpecDatabase& database() {
  static const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return db;
}

ResolvedConfig resolved(const char* model, const char* gpu, const char* version,
                        std::int64_t max_model_len, std::int32_t max_loras = 0,
                        std::optional<bool> enable_chunked_prefill = std::nullopt) {
  HardwareConfig hardware;
  hardware.gpu = database().gpu(gpu);
  EngineConfig config;
  config.engine_version = version;
  config.max_model_len = max_model_len;
  config.max_loras = max_loras;
  config.enable_chunked_prefill = enable_chunked_prefill;
  return compute_breakdown(database().model(model), hardware, config).config;
}

constexpr const char* kLlama = "meta-llama/Llama-3.1-8B-Instruct";  // text, no sliding window

}  // namespace

TEST(V0LongContext, AboveThirtyTwoKChunksAtTheReleaseDefault) {
  // 0.6.4: 131072 > 32768 -> chunked prefill, SchedulerConfig's 512 tokens.
  const ResolvedConfig v064 = resolved(kLlama, "A10", "0.6.4", 131072);
  EXPECT_TRUE(v064.chunked_prefill);
  EXPECT_EQ(v064.max_num_batched_tokens, 512);
  // 0.7.1: the same rule with 2048 tokens (pub-425's "Chunked prefill is enabled with
  // max_num_batched_tokens=2048").
  const ResolvedConfig v071 = resolved(kLlama, "A10", "0.7.1", 131072);
  EXPECT_TRUE(v071.chunked_prefill);
  EXPECT_EQ(v071.max_num_batched_tokens, 2048);
}

TEST(V0LongContext, AtThirtyTwoKAWholePromptIsOneBatch) {
  // 32768 is not > 32768: no chunking, max(32768, 2048) tokens, the profile runs a whole prompt.
  const ResolvedConfig r = resolved(kLlama, "A10", "0.6.4", 32768);
  EXPECT_FALSE(r.chunked_prefill);
  EXPECT_EQ(r.max_num_batched_tokens, 32768);
}

TEST(V0LongContext, ExclusionsKeepWholePrompts) {
  // LoRA turns the rule off: max(131072, 2048).
  const ResolvedConfig lora = resolved(kLlama, "A10", "0.6.4", 131072, 1);
  EXPECT_FALSE(lora.chunked_prefill);
  EXPECT_EQ(lora.max_num_batched_tokens, 131072);
  // 0.7 leaves ROCm out; 0.6 did not.
  EXPECT_FALSE(resolved(kLlama, "MI300X", "0.7.1", 131072).chunked_prefill);
  EXPECT_TRUE(resolved(kLlama, "MI300X", "0.6.4", 131072).chunked_prefill);
}

TEST(V0LongContext, V1AlwaysChunks) {
  // 0.8+ (V1): chunked prefill whatever the context; the batch default is the row's table
  // (2048 for `vllm serve` on a GPU that is not "large").
  const ResolvedConfig v1 = resolved(kLlama, "A10", "0.8.5", 8192);
  EXPECT_TRUE(v1.chunked_prefill);
  EXPECT_EQ(v1.max_num_batched_tokens, 2048);
}

TEST(V0LongContext, TheFlagIsHonoredWhereTheReleaseHonorsIt) {
  // V0 takes --enable-chunked-prefill both ways: on at 16384 -> SchedulerConfig's 512 (0.6);
  // off at 131072 -> max(131072, 2048).
  const ResolvedConfig on = resolved(kLlama, "A10", "0.6.4", 16384, 0, true);
  EXPECT_TRUE(on.chunked_prefill);
  EXPECT_EQ(on.max_num_batched_tokens, 512);
  const ResolvedConfig off = resolved(kLlama, "A10", "0.6.4", 131072, 0, false);
  EXPECT_FALSE(off.chunked_prefill);
  EXPECT_EQ(off.max_num_batched_tokens, 131072);
  // 0.8-0.11's V1 sets it true for generative models whatever the flag: the serve default,
  // 2048 on an A10.
  const ResolvedConfig ignored = resolved(kLlama, "A10", "0.10.1", 16384, 0, false);
  EXPECT_TRUE(ignored.chunked_prefill);
  EXPECT_EQ(ignored.max_num_batched_tokens, 2048);
  {
    // ... and the breakdown says that the flag was overridden.
    HardwareConfig a10;
    a10.gpu = database().gpu("A10");
    EngineConfig config;
    config.engine_version = "0.10.1";
    config.max_model_len = 16384;
    config.enable_chunked_prefill = false;
    const Breakdown b = compute_breakdown(database().model(kLlama), a10, config);
    EXPECT_TRUE(std::any_of(b.messages.begin(), b.messages.end(), [](const std::string& m) {
      return m.find("sets enable_chunked_prefill=True") != std::string::npos;
    }));
  }
  // 0.12+ keeps it: an unset batch becomes max(max_model_len, 2048) = 16384.
  const ResolvedConfig honored = resolved(kLlama, "A10", "0.19.0", 16384, 0, false);
  EXPECT_FALSE(honored.chunked_prefill);
  EXPECT_EQ(honored.max_num_batched_tokens, 16384);
}

TEST(V0Fallback, TuringAndVoltaRunV0FromPoint8ToPoint10Point1) {
  // _is_v1_supported_oracle (0.8.0 - 0.10.1.1): "Compute Capability < 8.0" falls back to V0.
  // A T4 (7.5) at 0.9.2 is planned with the V0 rules under its own version label: no chunked
  // prefill at 8192 tokens of context, so a whole prompt is one batch (max(8192, 2048)).
  HardwareConfig t4;
  t4.gpu = database().gpu("T4");
  EngineConfig config;
  config.engine_version = "0.9.2";
  config.max_model_len = 8192;
  const Breakdown v0 = compute_breakdown(database().model(kLlama), t4, config);
  EXPECT_EQ(v0.profile().era, EngineEra::V0);
  EXPECT_EQ(v0.profile().version, "0.9.2");
  EXPECT_FALSE(v0.config.chunked_prefill);
  EXPECT_EQ(v0.config.max_num_batched_tokens, 8192);
  EXPECT_TRUE(std::any_of(v0.messages.begin(), v0.messages.end(), [](const std::string& m) {
    return m.find("runs the V0 engine on T4") != std::string::npos;
  }));
  // 0.10.2 runs V1 on the T4; an A100 (8.0) never falls back.
  config.engine_version = "0.10.2";
  EXPECT_EQ(compute_breakdown(database().model(kLlama), t4, config).profile().era,
            EngineEra::V1Early);
  HardwareConfig a100;
  a100.gpu = database().gpu("A100-80GB");
  config.engine_version = "0.9.2";
  EXPECT_EQ(compute_breakdown(database().model(kLlama), a100, config).profile().era,
            EngineEra::V1Early);
}
