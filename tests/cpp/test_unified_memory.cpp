// Unified-memory GPUs (GB10, GH200): the free memory of vLLM's startup check is the host's,
// MemFree (cudaMemGetInfo) or MemAvailable by release (engines.yaml unified_memory_free), and
// the page cache between them decides the launch. Every figure is derived here.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "test_support.hpp"
#include "vramplan/engine.hpp"

using namespace vramplan;

namespace {

constexpr double kGiB = 1073741824.0;

// vllm#48140, the reporter's GB10 on vLLM 0.24.0 at --gpu-memory-utilization 0.5, recorded
// when the check failed: "MemFree=27812140 kB", "MemAvailable=59063644 kB", and the check's
// line "Free memory on device cuda:0 (55.87/119.56 GiB)". MemFree = 26.52 GiB, MemAvailable
// = 56.33 GiB; the page cache MemAvailable counts free and MemFree does not is 31,251,504 kB
// = 29.80 GiB. The check's total, 119.56 GiB, is CUDA's total on that machine (MemTotal on a
// GB10; the catalogue's 121.69 GiB is another machine's).
constexpr std::int64_t kMemFreeBytes = std::int64_t{27812140} * 1024;
constexpr std::int64_t kMemAvailableBytes = std::int64_t{59063644} * 1024;
const auto kThreadTotalBytes = static_cast<std::int64_t>(std::llround(119.56 * kGiB));

// The thread's GB10 and host, at one release and utilization. The startup check comes before
// the weights load, so the model (here Qwen3-8B, whose 15.3 GiB fit either budget) does not
// move it.
vramplan_test::ReleaseLaunch gb10_launch(const char* version, double utilization) {
  auto l = vramplan_test::release_launch("Qwen/Qwen3-8B", "GB10", version);
  l.hardware.gpu.total_memory_bytes = kThreadTotalBytes;
  l.config.gpu_memory_utilization = utilization;
  l.config.max_model_len = 8192;
  l.config.host_mem_free_bytes = kMemFreeBytes;
  l.config.host_mem_available_bytes = kMemAvailableBytes;
  return l;
}

std::string messages(const Breakdown& b) {
  std::string all;
  for (const std::string& m : b.messages) all += m + "\n";
  return all;
}

}  // namespace

TEST(UnifiedMemory, TheThreadsLaunchFailsOnMemAvailableAndDroppingCachesCannotHelp) {
  // The thread's own launch: 0.24.0 counts MemAvailable (its retraction: "That's ~MemAvailable,
  // not MemFree"), 56.33 GiB less the CUDA context, against ceil(0.5 x 119.56 GiB) = 59.78
  // GiB requested: refused, and the page cache is already counted free.
  const Breakdown b = vramplan_test::breakdown_of(gb10_launch("0.24.0", 0.5));
  ASSERT_EQ(b.outcome, Outcome::StartupFreeMemory);
  EXPECT_EQ(b.ranks[0].requested_memory_bytes, (kThreadTotalBytes + 1) / 2);
  EXPECT_EQ(b.startup_free_bytes, kMemAvailableBytes - b.ranks[0].cuda_context_bytes);
  // The logged 55.87 GiB: MemAvailable less about 0.46 GiB of context at the snapshot.
  EXPECT_NEAR(static_cast<double>(b.startup_free_bytes) / kGiB, 55.87, 0.5);
  const std::string text = messages(b);
  EXPECT_NE(text.find("Free memory on device ("), std::string::npos) << text;
  EXPECT_NE(text.find("/119.56 GiB) on startup"), std::string::npos) << text;
  EXPECT_NE(text.find("59.78 GiB)"), std::string::npos) << text;
  EXPECT_NE(text.find("vLLM 0.24.0 counts the host's MemAvailable (56.33 GiB)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("dropping caches cannot raise it"), std::string::npos) << text;
}

TEST(UnifiedMemory, PageCacheFillsMemFreeBeforeTheReleaseThatCountsMemAvailable) {
  // The same GB10 and host at --gpu-memory-utilization 0.45: ceil(0.45 x 119.56 GiB) = 53.80
  // GiB requested. 0.11.0 takes cudaMemGetInfo's free, MemFree's 26.52 GiB: refused, the
  // 29.80 GiB of page cache counted as used; dropped, about MemAvailable is free (56.33 GiB
  // less the context), enough. 0.11.1 counts MemAvailable on compute capability 12.1: passes.
  const auto requested = static_cast<std::int64_t>(std::ceil(0.45 * 119.56 * kGiB));
  const Breakdown refused = vramplan_test::breakdown_of(gb10_launch("0.11.0", 0.45));
  ASSERT_EQ(refused.outcome, Outcome::StartupFreeMemory);
  EXPECT_NEAR(static_cast<double>(refused.ranks[0].requested_memory_bytes),
              static_cast<double>(requested), 1.0);
  EXPECT_EQ(refused.startup_free_bytes, kMemFreeBytes - refused.ranks[0].cuda_context_bytes);
  const std::string text = messages(refused);
  EXPECT_NE(text.find("vLLM 0.11.0 takes cudaMemGetInfo's free memory on this unified-memory "
                      "GPU, the host's MemFree (26.52 GiB): the 29.80 GiB of page cache that "
                      "MemAvailable (56.33 GiB) counts free makes the startup check fail."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sync; echo 1 > /proc/sys/vm/drop_caches"), std::string::npos) << text;
  EXPECT_NE(text.find("enough for the 53.80 GiB requested"), std::string::npos) << text;
  EXPECT_NE(text.find("or vLLM 0.11.1 or later, which counts MemAvailable"), std::string::npos)
      << text;

  for (const char* version : {"0.11.1", "0.19.0", "0.24.0", "0.33.0"}) {
    const Breakdown passes = vramplan_test::breakdown_of(gb10_launch(version, 0.45));
    EXPECT_EQ(passes.outcome, Outcome::Started) << version << "\n" << messages(passes);
    EXPECT_EQ(passes.startup_free_bytes, kMemAvailableBytes - passes.ranks[0].cuda_context_bytes)
        << version;
  }
}

TEST(UnifiedMemory, DroppedCachesStillShortSaysToLowerTheUtilizationToo) {
  // At 0.5 on 0.11.0: MemFree refuses, and MemAvailable's 56.33 GiB less the context is still
  // short of 59.78 GiB, so dropping caches alone does not clear it.
  const Breakdown b = vramplan_test::breakdown_of(gb10_launch("0.11.0", 0.5));
  ASSERT_EQ(b.outcome, Outcome::StartupFreeMemory);
  const std::string text = messages(b);
  EXPECT_NE(text.find("still short of the 59.78 GiB requested: lower --gpu-memory-utilization"),
            std::string::npos)
      << text;
}

TEST(UnifiedMemory, Gh200CountsMemAvailableFromTheIntegratedRule) {
  // GH200 is compute capability 9.0: outside 0.11.1-0.19's Orin/Thor/Spark list, so 0.19.0
  // takes MemFree; 0.20.0 asks is_integrated (PR #35356, for GH200's vllm#35313): MemAvailable.
  auto l = vramplan_test::release_launch("Qwen/Qwen3-8B", "GH200-144GB", "0.19.0");
  l.config.max_model_len = 8192;
  l.config.host_mem_free_bytes = std::int64_t{40} << 30;
  l.config.host_mem_available_bytes = std::int64_t{140} << 30;
  const Breakdown old_release = vramplan_test::breakdown_of(l);
  EXPECT_EQ(old_release.startup_free_bytes,
            (std::int64_t{40} << 30) - old_release.ranks[0].cuda_context_bytes);
  EXPECT_EQ(old_release.outcome, Outcome::StartupFreeMemory);
  l.config.engine_version = "0.20.0";
  const Breakdown new_release = vramplan_test::breakdown_of(l);
  EXPECT_EQ(new_release.startup_free_bytes,
            (std::int64_t{140} << 30) - new_release.ranks[0].cuda_context_bytes);
  EXPECT_EQ(new_release.outcome, Outcome::Started) << messages(new_release);
  // The refusal names the first release that counts MemAvailable on GH200: 0.20.0.
  EXPECT_NE(messages(old_release).find("or vLLM 0.20.0 or later"), std::string::npos)
      << messages(old_release);
}

TEST(UnifiedMemory, ADiscreteGpuIgnoresTheHostsMeminfo) {
  // An H100's free memory is its own: the host's MemFree does not enter the check.
  auto l = vramplan_test::release_launch("Qwen/Qwen3-8B", "H100-80GB", "0.24.0");
  l.config.max_model_len = 8192;
  const std::int64_t without = vramplan_test::breakdown_of(l).startup_free_bytes;
  l.config.host_mem_free_bytes = std::int64_t{1} << 30;
  l.config.host_mem_available_bytes = std::int64_t{2} << 30;
  const Breakdown with = vramplan_test::breakdown_of(l);
  EXPECT_EQ(with.startup_free_bytes, without);
  EXPECT_EQ(with.startup_free_bytes,
            l.hardware.gpu.total_memory_bytes - with.ranks[0].cuda_context_bytes);
}

TEST(UnifiedMemory, WithoutMeminfoTheGpuTotalApplies) {
  // No meminfo given: the catalogue's total less the context, as before.
  auto l = vramplan_test::release_launch("Qwen/Qwen3-8B", "GB10", "0.11.0");
  l.config.max_model_len = 8192;
  const Breakdown b = vramplan_test::breakdown_of(l);
  EXPECT_EQ(b.startup_free_bytes,
            l.hardware.gpu.total_memory_bytes - b.ranks[0].cuda_context_bytes);
  // Only MemAvailable given, on a release that counts MemFree: still the total.
  l.config.host_mem_available_bytes = kMemAvailableBytes;
  EXPECT_EQ(vramplan_test::breakdown_of(l).startup_free_bytes, b.startup_free_bytes);
}
