// Mamba state sizes of hybrid (attention + Mamba2) models, hand-derived, and the V0 engine's
// preallocated Mamba cache they imply (docs/engine-versions.md fact 28). On V0 (hybrids up to
// 0.10.1) vLLM's MambaCacheManager allocates, per Mamba layer, conv + SSM state for
// max_num_seqs slots (256 by default; 256 is itself a CUDA-graph capture size, so no padding)
// in the model's first forward, i.e. inside the profile run. The planner does not model that
// path yet; these tests pin the per-slot shapes it will reuse (kv_cache.cpp's
// mamba_state_bytes, the one formula) against pub-008's real OOM.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;

namespace {

ModelSpec nvidia_spec(const std::string& file) {
  return load_model_spec_file(std::string(VRAMPLAN_MODEL_SPECS_DIR) + "/models/nvidia/" + file);
}

std::int32_t count_mamba_layers(const ModelSpec& spec) {
  std::int32_t n = 0;
  for (const LayerSpec& layer : spec.layers) n += layer.attention == AttentionKind::Mamba ? 1 : 0;
  return n;
}

std::int64_t first_mamba_state_bytes(const ModelSpec& spec, const KvCacheOptions& options) {
  for (const LayerSpec& layer : spec.layers) {
    if (layer.attention == AttentionKind::Mamba) return mamba_state_bytes(spec, layer, options);
  }
  return 0;
}

constexpr std::int64_t kMiB = 1LL << 20;
constexpr std::int64_t kV0DefaultSlots = 256;  // max_num_seqs default

}  // namespace

TEST(HybridV0, NemotronNano9Bv2Pub008StateIs33Point75GiB) {
  const ModelSpec spec = nvidia_spec("nvidia-nemotron-nano-9b-v2.yaml");
  // hybrid_override_pattern "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-":
  // 56 layers, 27 'M' (Mamba2), 4 '*' (attention), 25 '-' (MLP).
  ASSERT_EQ(count_mamba_layers(spec), 27);
  KvCacheOptions options;  // TP 1, bf16 conv state, no speculative slots
  // Mamba2 (config.json): 128 heads x head_dim 80 (inner 10240), 8 groups, state 128, conv 4.
  // conv state: (inner + 2 * groups * state) x (conv - 1) x 2 B = 12288 x 3 x 2 = 73,728 B.
  // SSM state: heads x head_dim x state x 4 B (float32) = 128 x 80 x 128 x 4 = 5,242,880 B.
  const std::int64_t conv_bytes = 12288LL * 3 * 2;
  const std::int64_t ssm_bytes = 128LL * 80 * 128 * 4;
  EXPECT_EQ(first_mamba_state_bytes(spec, options), conv_bytes + ssm_bytes);
  EXPECT_EQ(first_mamba_state_bytes(spec, options), 5'316'608);
  // pub-008 (vLLM 0.10.1, one L40S, V0 path): "CUDA out of memory. Tried to allocate 33.75 GiB"
  // is the SSM tensor for all Mamba layers and slots: 27 x 256 x 5,242,880 B = 33.75 GiB.
  EXPECT_EQ(27 * kV0DefaultSlots * ssm_bytes, 33'792LL * kMiB + 768 * kMiB);
  EXPECT_EQ(27 * kV0DefaultSlots * ssm_bytes * 4, 135LL << 30);  // 33.75 GiB exactly
  // The conv tensor is allocated just before it and succeeded: 27 x 256 x 73,728 B = 486 MiB.
  // The log's "17.03 GiB is allocated by PyTorch" = weights 16.5557 GiB ("Model loading took")
  // + 0.4746 GiB conv state = 17.0303 GiB, an independent check of the conv shape.
  EXPECT_EQ(27 * kV0DefaultSlots * conv_bytes, 486 * kMiB);
}

TEST(HybridV0, NemotronH56BStateHandDerived) {
  const ModelSpec spec = nvidia_spec("nemotron-h-56b-base-8k.yaml");
  // hybrid_override_pattern of 118 layers: 54 'M', 10 '*', 54 '-'.
  ASSERT_EQ(count_mamba_layers(spec), 54);
  KvCacheOptions options;
  // Mamba2: 256 heads x 64 (inner 16384), 8 groups, state 256, conv 4.
  // conv: (16384 + 2 x 8 x 256) x 3 x 2 B = 20480 x 6 = 122,880 B.
  // SSM: 256 x 64 x 256 x 4 B = 16,777,216 B (16 MiB).
  EXPECT_EQ(first_mamba_state_bytes(spec, options), 122'880 + 16'777'216);
  // On V0 at the default 256 slots the SSM cache alone is 54 x 256 x 16 MiB = 216 GiB.
  EXPECT_EQ(54 * kV0DefaultSlots * 16 * kMiB, 216LL << 30);
  // TP 4: heads 64 per rank, groups 8 (already a multiple of 4), conv dim 20480 / 4 = 5120.
  options.tensor_parallel_size = 4;
  EXPECT_EQ(first_mamba_state_bytes(spec, options), 5120 * 3 * 2 + 64LL * 64 * 256 * 4);
}
