// Host RAM at load, per node, against the cases of shared/reference/host-ram.md and
// shared/measured/host_ram.jsonl; each expected number is derived here.
#include <gtest/gtest.h>

#include "test_support.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"

using namespace vramplan;
using vramplan_test::spec_from_yaml;

namespace {

constexpr std::int64_t kGiBBytes = std::int64_t{1} << 30;

Breakdown run(const EngineConfig& config, std::int64_t host_ram_bytes, int gpus = 1) {
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  hw.num_gpus = gpus;
  hw.host_ram_bytes = host_ram_bytes;
  return compute_breakdown(spec_from_yaml(vramplan_test::kLlama31_8B), hw, config);
}

}  // namespace

TEST(HostRam, CpuOffloadInASmallContainerIsKilled) {
  // host_ram.jsonl (vllm#9339): --cpu-offload-gb 12 in a 12 GB container is OOM-killed. The
  // pinned term alone, 12 GiB x 1.9 (power-of-two rounding of pinned blocks), exceeds it.
  EngineConfig config;
  config.cpu_offload_bytes = 12 * kGiBBytes;
  const Breakdown b = run(config, 12 * kGiBBytes);
  EXPECT_EQ(b.host.pinned_bytes, static_cast<std::int64_t>(1.9 * 12 * kGiBBytes));
  EXPECT_EQ(b.outcome, Outcome::HostOomKilled);
  EXPECT_STREQ(outcome_name(b.outcome), "host_oom_killed");
  // The same launch on a 64 GiB host loads.
  EXPECT_EQ(run(config, 64 * kGiBBytes).outcome, Outcome::Started);
}

TEST(HostRam, KvOffloadBufferRoundsToAPowerOfTwoPerWorker) {
  // reference/host-ram.md 4 (PR#48436): an 80 GiB KV offload over TP=2 is 40 GiB per worker,
  // pinned as 64 GiB each.
  EngineConfig config;
  config.tensor_parallel_size = 2;
  config.kv_offloading_bytes = 80 * kGiBBytes;
  const Breakdown b = run(config, 0, 2);
  EXPECT_EQ(b.host.pinned_bytes, 2 * 64 * kGiBBytes);
}

TEST(HostRam, BaselineAndLazyStagingPerWorker) {
  // API server 1.5 + engine core 1.5 + 3 GiB per worker; the lazy loader holds about the
  // largest tensor per worker: Llama-3.1-8B's embedding, 128256 x 4096 x 2 B = 1,050,673,152 B.
  EngineConfig config;
  config.tensor_parallel_size = 2;
  config.max_model_len = 8192;
  config.max_num_seqs = 256;
  const Breakdown b = run(config, 0, 2);
  EXPECT_EQ(b.host.process_baseline_bytes, 3 * kGiBBytes + 2 * 3 * kGiBBytes);
  EXPECT_EQ(b.host.loader_anonymous_bytes, 2 * std::int64_t{1'050'673'152});
  // Token-id buffers: 5 B x 256 x 8192 per worker.
  EXPECT_EQ(b.host.input_batch_bytes, 2 * 5 * 256 * 8192);
  // The checkpoint itself is page cache: 8,030,261,248 parameters x 2 B.
  EXPECT_EQ(b.host.page_cache_bytes, std::int64_t{16'060'522'496});
  EXPECT_EQ(b.host.pinned_bytes, 0);
}

TEST(HostRam, EagerLoadingHoldsAShardPerWorker) {
  EngineConfig config;
  config.tensor_parallel_size = 4;
  config.safetensors_load_strategy = "eager";
  const Breakdown b = run(config, 0, 4);
  EXPECT_EQ(b.host.loader_anonymous_bytes, 4 * std::int64_t{5'000'000'000});
  config.safetensors_load_strategy = "mmap-please";
  EXPECT_THROW(run(config, 0, 4), ConfigError);
}

TEST(HostRam, V0PinsItsSwapSpacePerGpu) {
  // reference/host-ram.md 4: V0's default swap_space is 4 GiB per GPU, pinned.
  EngineConfig config;
  config.engine_version = "0.6.4";
  config.tensor_parallel_size = 4;
  EXPECT_EQ(run(config, 0, 4).host.pinned_bytes, 4 * 4 * kGiBBytes);
  config.swap_space_bytes = 0;
  EXPECT_EQ(run(config, 0, 4).host.pinned_bytes, 0);
}
