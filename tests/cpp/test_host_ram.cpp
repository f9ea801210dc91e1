// Host RAM at load, per node, against the cases of shared/reference/host-ram.md and
// shared/measured/host_ram.jsonl; each expected number is derived here.
#include <gtest/gtest.h>

#include "test_support.hpp"
#include "vramplan/diagnose.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/weights.hpp"

using namespace vramplan;
using vramplan_test::spec_from_yaml;

namespace {

constexpr std::int64_t kGiBBytes = std::int64_t{1} << 30;

// Qwen3-8B's shape (36 layers of 32 query and 8 KV heads x 128, q/k norms).
constexpr const char* kQwen3_8B = R"(
id: test/qwen3-8b
model_type: qwen3
hidden_size: 4096
num_hidden_layers: 36
num_attention_heads: 32
num_key_value_heads: 8
head_dim: 128
intermediate_size: 12288
vocab_size: 151936
max_position_embeddings: 40960
torch_dtype: bfloat16
qk_norm: true
)";

Breakdown run(const EngineConfig& config, std::int64_t host_ram_bytes, int gpus = 1) {
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  hw.num_gpus = gpus;
  hw.host_ram_bytes = host_ram_bytes;
  return compute_breakdown(spec_from_yaml(vramplan_test::kLlama31_8B), hw, config);
}

}  // namespace

TEST(HostRam, CpuOffloadInASmallContainerIsKilled) {
  // host_ram.jsonl (vllm#9339): --cpu-offload-gb 12 in a 12 GB container is OOM-killed.
  // vLLM's offloader walks the decoder layers' parameters in module order, checking the total
  // before each one, and pins each on its own (torch's host allocator: next power of two).
  // Llama-3.1-8B per layer, bf16: qkv_proj (4096 + 2 x 1024) x 4096 x 2 B = 48 MiB (pinned
  // 64), o_proj 32 MiB (32), gate_up_proj 2 x 14336 x 4096 x 2 B = 224 MiB (256), down_proj
  // 112 MiB (128), the two norms 2 x 8 KiB: 416 MiB + 16 KiB, pinned 480 MiB + 16 KiB.
  // 29 layers take 12,064 MiB + 29 x 16 KiB; layer 30's qkv, o and gate_up reach 12,368 MiB,
  // past 12,288: the walk stops there.
  constexpr std::int64_t kMiBBytes = std::int64_t{1} << 20;
  constexpr std::int64_t kNorms = 16 * 1024;
  EngineConfig config;
  config.cpu_offload_bytes = 12 * kGiBBytes;
  const Breakdown b = run(config, 12 * kGiBBytes);
  EXPECT_EQ(b.host.pinned_bytes, (29 * 480 + 64 + 32 + 256) * kMiBBytes + 29 * kNorms);
  const Breakdown whole = run(EngineConfig{}, 0);
  EXPECT_EQ(whole.ranks[0].weights_bytes - b.ranks[0].weights_bytes,
            (29 * 416 + 48 + 32 + 224) * kMiBBytes + 29 * kNorms);
  EXPECT_EQ(b.outcome, Outcome::HostOomKilled);
  EXPECT_STREQ(outcome_name(b.outcome), "host_oom_killed");
  // The same launch on a 64 GiB host loads.
  EXPECT_EQ(run(config, 64 * kGiBBytes).outcome, Outcome::Started);
}

TEST(HostRam, CpuOffloadPinsEachTpRanksShardAndNeverTheEmbeddings) {
  // Qwen3-8B, --cpu-offload-gb 20 per GPU: its 36 layers hold 36 x (368 MiB + 512 B q/k norms
  // + 16 KiB norms) = 13,248.6 MiB, under the budget, so every layer moves and the embeddings
  // and head stay on the GPU (make_layers wraps only the decoder layers). Pinned per layer:
  // 64 + 32 + 256 + 128 MiB + 512 B + 16 KiB = 1.30x the bytes moved, not a flat 1.9x.
  constexpr std::int64_t kMiBBytes = std::int64_t{1} << 20;
  constexpr std::int64_t kSmall = 512 + 16 * 1024;
  const ModelSpec spec = spec_from_yaml(kQwen3_8B);
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  EngineConfig config;
  config.max_model_len = 4096;
  const std::int64_t resident = compute_breakdown(spec, hw, config).ranks[0].weights_bytes;
  config.cpu_offload_bytes = 20 * kGiBBytes;
  const Breakdown b = compute_breakdown(spec, hw, config);
  EXPECT_EQ(b.host.pinned_bytes, 36 * (480 * kMiBBytes + kSmall));
  EXPECT_EQ(resident - b.ranks[0].weights_bytes, 36 * (368 * kMiBBytes + kSmall));
  // TP 2: each rank pins its own halves (qkv 24 -> 32, o 16, gate_up 96 -> 128, down 48 -> 64
  // MiB; norms replicated), two ranks.
  config.tensor_parallel_size = 2;
  hw.num_gpus = 2;
  EXPECT_EQ(compute_breakdown(spec, hw, config).host.pinned_bytes,
            2 * 36 * (240 * kMiBBytes + kSmall));
}

TEST(HostRam, KvOffloadPinsPerKvTensorUntil026AndOneSharedRegionAfter) {
  // PR#48436 (TP=2, --kv-offloading-size 80, a 32-layer Llama-3.1-8B): up to 0.26 each worker
  // pins its 40 GiB as one tensor per GPU KV tensor, 40 / 32 = 1.25 GiB each, rounded up to
  // 2 GiB by torch's host allocator: 32 x 2 = 64 GiB per worker, as the PR measured (~67 GB RSS
  // with the 3 GiB worker baseline).
  EngineConfig config;
  config.tensor_parallel_size = 2;
  config.kv_offloading_bytes = 80 * kGiBBytes;
  config.engine_version = "0.26.0";
  EXPECT_EQ(run(config, 0, 2).host.pinned_bytes, 2 * 32 * 2 * kGiBBytes);
  // From 0.27 one /dev/shm region of G, mapped and registered without rounding.
  config.engine_version = "0.27.0";
  EXPECT_EQ(run(config, 0, 2).host.pinned_bytes, 80 * kGiBBytes);
  config.engine_version = "0.33.0";
  EXPECT_EQ(run(config, 0, 2).host.pinned_bytes, 80 * kGiBBytes);
}

TEST(HostRam, KvOffloadOnRocmIsBackOnThePinnedPathAt033) {
  // vllm#53042's shape on one GPU: Qwen3-8B-like 36 layers, --kv-offloading-size 75: 75 / 36 =
  // 2.08 GiB per tensor -> 4 GiB, 36 x 4 = 144 GiB. 0.29 maps the shared region on ROCm too
  // (is_cuda_alike), 0.33 not (is_cuda_alike() and not is_rocm()).
  const ModelSpec spec = spec_from_yaml(kQwen3_8B);
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  hw.gpu.vendor = "amd";
  EngineConfig config;
  config.kv_offloading_bytes = 75 * kGiBBytes;
  config.engine_version = "0.29.0";
  EXPECT_EQ(compute_breakdown(spec, hw, config).host.pinned_bytes, 75 * kGiBBytes);
  config.engine_version = "0.33.0";
  EXPECT_EQ(compute_breakdown(spec, hw, config).host.pinned_bytes, 36 * 4 * kGiBBytes);
  hw.gpu.vendor = "nvidia";
  EXPECT_EQ(compute_breakdown(spec, hw, config).host.pinned_bytes, 75 * kGiBBytes);
  config.engine_version = "0.26.0";
  EXPECT_EQ(compute_breakdown(spec, hw, config).host.pinned_bytes, 36 * 4 * kGiBBytes);
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

TEST(HostRam, AnOomKillIsReadAgainstThePlansHostNeed) {
  // A plan of 10 GiB (4 baseline + 5 staging + 1 pinned) beside a 40 GiB checkpoint.
  HostBreakdown planned;
  planned.process_baseline_bytes = 4 * kGiBBytes;
  planned.loader_anonymous_bytes = 5 * kGiBBytes;
  planned.pinned_bytes = kGiBBytes;
  planned.required_bytes = 10 * kGiBBytes;
  planned.page_cache_bytes = 40 * kGiBBytes;
  OomKill kill;
  // 4 workers, 121 GiB anonymous: 3.025 checkpoints, within 0.1 of 3 copies (3 <= 4 workers).
  kill.anon_rss_bytes = 121 * kGiBBytes;
  HostOomReading r = read_host_oom(kill, planned, 4);
  EXPECT_EQ(r.gap_bytes, 111 * kGiBBytes);
  EXPECT_DOUBLE_EQ(r.checkpoint_copies, 121.0 / 40.0);
  EXPECT_NE(r.explanation.find("3 x 40.00 GiB = 120.00 GiB matches the 4-worker launch"),
            std::string::npos)
      << r.explanation;
  // 5 copies cannot come from 4 workers: no match is claimed.
  kill.anon_rss_bytes = 200 * kGiBBytes;
  r = read_host_oom(kill, planned, 4);
  EXPECT_EQ(r.explanation.find("matches"), std::string::npos) << r.explanation;
  // Under the plan: the limit is too small for the launch itself.
  kill.anon_rss_bytes = 8 * kGiBBytes;
  r = read_host_oom(kill, planned, 4);
  EXPECT_EQ(r.gap_bytes, -2 * kGiBBytes);
  EXPECT_NE(r.explanation.find("within the plan"), std::string::npos) << r.explanation;
  EXPECT_NE(r.explanation.find("above 10.00 GiB"), std::string::npos) << r.explanation;
  // No anonymous figure in the kernel line: nothing is claimed about it.
  kill.anon_rss_bytes.reset();
  r = read_host_oom(kill, planned, 4);
  EXPECT_NE(r.explanation.find("no anonymous RSS"), std::string::npos) << r.explanation;
}

TEST(HostRam, LmcachePinsOnePoolPerWorker) {
  // LMCache#2901: with LMCacheConnectorV1 every worker starts its own LMCache engine, and each
  // pins max_local_cpu_size (5.0 by default, int(5.0 * 1024**3) bytes in cache_engine.py): at
  // TP 4, 4 x 5 GiB = 20 GiB, not one 5 GiB pool.
  EngineConfig config;
  config.tensor_parallel_size = 4;
  config.kv_transfer_config = R"({"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"})";
  EXPECT_EQ(run(config, 0, 4).host.pinned_bytes, 4 * 5 * kGiBBytes);
  // LMCACHE_MAX_LOCAL_CPU_SIZE=20: 4 x 20 GiB.
  config.lmcache_local_cpu_bytes = 20 * kGiBBytes;
  EXPECT_EQ(run(config, 0, 4).host.pinned_bytes, 4 * 20 * kGiBBytes);
  // The multi-process connector keeps the pool in the LMCache server, outside the workers.
  config.kv_transfer_config = R"({"kv_connector": "LMCacheMPConnector"})";
  EXPECT_EQ(run(config, 0, 4).host.pinned_bytes, 0);
  // Anything but a JSON object naming a connector is refused under the flag's name.
  for (const char* bad : {"LMCacheConnectorV1", "[1]", R"({"kv_role": "kv_both"})"}) {
    config.kv_transfer_config = bad;
    try {
      (void)run(config, 0, 4);
      ADD_FAILURE() << bad;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.field(), "kv_transfer_config");
    }
  }
}

// --- sleep mode ---------------------------------------------------------------------------------

TEST(CachingAllocatorSegments, CutAsTorchsAllocatorCutsThem) {
  constexpr std::int64_t kMiB = std::int64_t{1} << 20;
  // Requests up to 1 MiB share 2 MiB segments: two of 1000 B (each rounded up to 1024 B).
  EXPECT_EQ(caching_allocator_segments({1000, 1000}), std::vector<std::int64_t>{2 * kMiB});
  // 1-10 MiB requests share 20 MiB segments, best fit: four of 5 MiB fill one exactly.
  EXPECT_EQ(caching_allocator_segments({5 * kMiB, 5 * kMiB, 5 * kMiB, 5 * kMiB}),
            std::vector<std::int64_t>{20 * kMiB});
  // Three of 7 MiB: two fit in 20 MiB (6 MiB left), the third opens a second segment.
  EXPECT_EQ(caching_allocator_segments({7 * kMiB, 7 * kMiB, 7 * kMiB}),
            (std::vector<std::int64_t>{20 * kMiB, 20 * kMiB}));
  // From 10 MiB a request gets its own segment rounded up to 2 MiB: 10 MiB + 1 B -> 12 MiB;
  // the 2 MiB - 512 B left over (> 1 MiB) serves a later 1.5 MiB request.
  EXPECT_EQ(caching_allocator_segments({10 * kMiB + 1, 3 * kMiB / 2}),
            std::vector<std::int64_t>{12 * kMiB});
  // A 1 MiB + 1 B request is a large-pool one (20 MiB segment), a 1 MiB one a small-pool one.
  EXPECT_EQ(caching_allocator_segments({kMiB + 1, kMiB}),
            (std::vector<std::int64_t>{20 * kMiB, 2 * kMiB}));
  EXPECT_TRUE(caching_allocator_segments({0, -5}).empty());
}

TEST(SleepMode, LevelOneBacksEachWeightSegmentUpInItsOwnPinnedBlock) {
  // Llama-3.1-8B, bf16, one H100, --enable-sleep-mode, asleep at level 1: CuMemAllocator.sleep
  // copies every allocation of the weights pool into torch.empty(size, pin_memory=True), and
  // torch's host allocator rounds each up to a power of two. The allocations are the caching
  // allocator's segments, parameter by parameter in module order:
  //   embed_tokens 128256 x 4096 x 2 B = 1,050,673,152 B = 501 x 2 MiB: pinned 1 GiB;
  //   per layer qkv_proj 48 MiB (64), o_proj 32 MiB (32), gate_up_proj 224 MiB (256),
  //   down_proj 112 MiB (128): 480 MiB pinned, x 32 layers;
  //   the layers' norms (16 KiB each) and the final norm (8 KiB) share one 2 MiB segment;
  //   the rotary cache 131072 positions x 128 x 2 B = 32 MiB (32);
  //   lm_head as embed_tokens (untied): 1 GiB.
  // 18,289,262,592 B in all, 1.14x the 16,060,522,496 B of weights.
  constexpr std::int64_t kMiB = std::int64_t{1} << 20;
  const std::int64_t expected = kGiBBytes + 32 * 480 * kMiB + 2 * kMiB + 32 * kMiB + kGiBBytes;
  EngineConfig config;
  config.enable_sleep_mode = true;
  const Breakdown asleep = run(config, 0);
  EXPECT_EQ(asleep.host.sleep_backup_bytes, expected);
  EXPECT_EQ(asleep.host.required_bytes - run(EngineConfig{}, 0).host.required_bytes, expected);
  // Level 2 discards the weights and keeps a copy of the buffers (the rotary cache); level 0
  // only pauses the scheduler.
  config.sleep_level = 2;
  EXPECT_EQ(run(config, 0).host.sleep_backup_bytes, 32 * kMiB);
  config.sleep_level = 0;
  EXPECT_EQ(run(config, 0).host.sleep_backup_bytes, 0);
  // Without sleep mode there is no backup.
  EXPECT_EQ(run(EngineConfig{}, 0).host.sleep_backup_bytes, 0);
  // A level without sleep mode would plan a server that never sleeps: refused by name.
  EngineConfig level_only;
  level_only.sleep_level = 2;
  try {
    run(level_only, 0);
    ADD_FAILURE() << "sleep_level without enable_sleep_mode planned";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "sleep_level");
    EXPECT_EQ(e.value(), "2");
  }
}

TEST(SleepMode, EveryTpRankBacksUpItsOwnShards) {
  // TP 2: qkv 24 MiB (32), o 16 MiB (16), gate_up 112 MiB (128), down 56 MiB (64): 240 MiB
  // pinned per layer; embed_tokens and lm_head split by vocabulary, 64128 x 4096 x 2 B =
  // 525,336,576 B, a 526,385,152 B segment (251 x 2 MiB), pinned 512 MiB; norms one 2 MiB
  // segment; the rotary cache replicated (32 MiB). Two ranks.
  constexpr std::int64_t kMiB = std::int64_t{1} << 20;
  EngineConfig config;
  config.enable_sleep_mode = true;
  config.tensor_parallel_size = 2;
  const Breakdown b = run(config, 0, 2);
  EXPECT_EQ(b.host.sleep_backup_bytes,
            2 * (512 * kMiB + 32 * 240 * kMiB + 2 * kMiB + 32 * kMiB + 512 * kMiB));
}

TEST(SleepMode, CpuOffloadedParametersAreNotBackedUpAgain) {
  // --cpu-offload-gb 12 moves the first 29 layers and layer 30's qkv, o and gate_up (see
  // CpuOffloadInASmallContainerIsKilled) to the host before the pool sees them: the backup
  // keeps layer 30's down_proj (128), layers 31-32 (2 x 480 MiB), the norms' segment, the
  // rotary cache and the embeddings.
  constexpr std::int64_t kMiB = std::int64_t{1} << 20;
  EngineConfig config;
  config.enable_sleep_mode = true;
  config.cpu_offload_bytes = 12 * kGiBBytes;
  EXPECT_EQ(run(config, 0).host.sleep_backup_bytes,
            kGiBBytes + (128 + 2 * 480) * kMiB + 2 * kMiB + 32 * kMiB + kGiBBytes);
}
