// The KV block size an MLA model gets by default, per GPU: vLLM's CUDA platform forces the
// MLA backend's own page size (vllm/platforms/cuda.py, check_and_update_config: "Forcing kv
// cache block size to 64 for FlashMLA backend." when FlashMLA's dense kernel is supported,
// i.e. on Hopper; CUTLASS MLA's 128 on data-centre Blackwell). Elsewhere Triton MLA runs
// with the default 16. V0 pages MLA at 16 everywhere.
#include <gtest/gtest.h>

#include "vramplan/engine.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;

namespace {

const SpecDatabase& database() {
  static const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return db;
}

std::int32_t default_block_size(const std::string& model, const std::string& gpu,
                                const std::string& version) {
  HardwareConfig hw;
  hw.gpu = database().gpu(gpu);
  hw.num_gpus = 1;
  EngineConfig c;
  c.engine_version = version;
  c.max_model_len = 4096;
  c.enforce_eager = true;
  return compute_breakdown(database().model(model), hw, c).config.block_size;
}

}  // namespace

TEST(MlaBlockSize, FollowsTheBackendEachGpuRuns) {
  const std::string mla = "deepseek-ai/DeepSeek-V2-Lite-Chat";
  EXPECT_EQ(default_block_size(mla, "H100-80GB", "0.19.0"), 64);  // Hopper 9.0: FlashMLA
  EXPECT_EQ(default_block_size(mla, "H200", "0.10.1"), 64);       // Hopper 9.0: FlashMLA
  EXPECT_EQ(default_block_size(mla, "B200", "0.19.0"), 128);      // Blackwell 10.0: CUTLASS MLA
  EXPECT_EQ(default_block_size(mla, "A100-80GB", "0.19.0"), 16);  // Ampere 8.0: Triton MLA
  EXPECT_EQ(default_block_size(mla, "L40S", "0.19.0"), 16);       // Ada 8.9: Triton MLA
  EXPECT_EQ(default_block_size(mla, "RTX-5090", "0.19.0"), 16);   // consumer Blackwell 12.0
  EXPECT_EQ(default_block_size(mla, "MI300X", "0.19.0"), 16);     // ROCm, no AITER
  EXPECT_EQ(default_block_size(mla, "H100-80GB", "0.6.4"), 16);   // V0
  // A model without MLA keeps 16 on Hopper.
  EXPECT_EQ(default_block_size("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", "0.19.0"), 16);
}
