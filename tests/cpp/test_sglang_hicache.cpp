// SGLang's HiCache host pools (--enable-hierarchical-cache), derived by hand from SGLang's code:
// 0.4.6.post5 mem_cache/memory_pool.py:HostKVCache.__init__ (0.4.10.post2 memory_pool_host.py
// the same), 0.5.23 mem_cache/pool_host/base.py:HostKVCache.__init__ / host_memory_budget_bytes,
// hicache_auto_size.py, hybrid_pool_assembler.py:_split_hicache_size. The device pools are
// pinned through --max-total-tokens, so every figure below follows from the arithmetic in the
// comments alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "vramplan/errors.hpp"
#include "vramplan/sglang.hpp"
#include "vramplan/sglang_knobs.hpp"
#include "vramplan/sglang_log_parser.hpp"
#include "vramplan/spec_db.hpp"

namespace {

using namespace vramplan;

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

const SpecDatabase& db() {
  static const SpecDatabase database = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return database;
}

const SglangRules& rules(const char* version) { return sglang_rules(sglang_table(), version); }

// Qwen3-8B on H100s with HiCache on and the device pool fixed at `tokens` (page 1).
SglangBreakdown qwen3_8b(const SglangRules& r, SglangConfig config, std::int64_t tokens = 300000) {
  config.enable_hierarchical_cache = true;
  config.mem_fraction_static = 0.85;
  config.max_total_tokens = tokens;
  return sglang_breakdown(db().model("Qwen/Qwen3-8B"), db().gpu("H100-80GB"), r, config);
}

// Qwen3-8B: 36 layers x 8 KV heads x (128 + 128) x 2 B = 147 456 B per token on one rank
// (MHATokenToKVPoolHost.get_size_per_token); TP 2 halves the heads: 73 728 B.
constexpr std::int64_t kCell = std::int64_t{36} * 8 * 256 * 2;

// 0.5.23, --hicache-ratio 2: size = int(300 000 x 2) = 600 000, page_num = 600 000 // 1 + 1,
// size = 600 001 tokens; 600 001 x 147 456 B. The device pool is (300 000 + 1) x 147 456 (its
// padding page): the host pool is twice it less one token. The mmap is rounded to 4 KiB and
// 147 456 = 36 x 4096, so the pinned bytes are the requested bytes.
TEST(SglangHicache, RatioTwiceTheDevicePoolIn0523) {
  SglangConfig c;
  c.hicache_ratio = 2.0;
  const SglangBreakdown b = qwen3_8b(rules("0.5.23"), c);
  ASSERT_EQ(b.verdict, SglangVerdict::Started) << b.error;
  EXPECT_EQ(b.k_size_bytes + b.v_size_bytes, 300001 * kCell);
  EXPECT_EQ(b.hicache.full.bytes_per_token, kCell);
  EXPECT_EQ(b.hicache.full.tokens, 600001);
  EXPECT_EQ(b.hicache.host_bytes_per_rank, 600001 * kCell);
  EXPECT_EQ(b.hicache.host_bytes_per_rank, std::int64_t{2} * 300001 * kCell - kCell);
  EXPECT_EQ(b.hicache.pinned_bytes_per_rank, 600001 * kCell);
  EXPECT_EQ(b.hicache.ranks_per_node, 1);
  EXPECT_EQ(b.hicache.pinned_bytes_per_node, 600001 * kCell);
  EXPECT_EQ(b.hicache_mem_layout, "page_first");  // fields/memory.py default
  EXPECT_EQ(b.hicache.budget_bytes, -1);          // host unknown: no check
}

// 0.4.6.post5, the same launch: 600 000 tokens floored to the page, no padding page:
// 600 000 x 147 456 = 88 473 600 000 B, one torch.empty(pin_memory=True) tensor, which torch's
// caching host allocator rounds to the next power of two: 2^36 = 68.7e9 < 88.47e9 <= 2^37.
TEST(SglangHicache, TorchPinnedPoolRoundsToAPowerOfTwoIn04) {
  SglangConfig c;
  c.hicache_ratio = 2.0;
  const SglangBreakdown b = qwen3_8b(rules("0.4.6.post5"), c);
  ASSERT_EQ(b.verdict, SglangVerdict::Started) << b.error;
  EXPECT_EQ(b.hicache.full.tokens, 600000);
  EXPECT_EQ(b.hicache.host_bytes_per_rank, 88473600000);
  EXPECT_EQ(b.hicache.pinned_bytes_per_rank, std::int64_t{1} << 37);
  const bool said = std::any_of(b.notes.begin(), b.notes.end(), [](const std::string& n) {
    return n.find("power of two") != std::string::npos;
  });
  EXPECT_TRUE(said);
}

// --hicache-size is decimal GB (host_size * 1e9): 100 -> floor(1e11 / 147 456) = 678 168
// tokens (678 168 x 147 456 = 99 999 940 608 <= 1e11 < 678 169 x 147 456), then 0.5.23's
// padding page: 678 169 tokens = 100 000 088 064 B; 100 GiB would be 107 374 182 400.
TEST(SglangHicache, SizeIsDecimalGigabytes) {
  SglangConfig c;
  c.hicache_size_gb = 100;
  const SglangBreakdown b = qwen3_8b(rules("0.5.23"), c);
  EXPECT_EQ(b.hicache.full.tokens, 678169);
  EXPECT_EQ(b.hicache.host_bytes_per_rank, 100000088064);
  const SglangBreakdown old = qwen3_8b(rules("0.4.10.post2"), c);
  EXPECT_EQ(old.hicache.full.tokens, 678168);
  EXPECT_EQ(old.hicache.host_bytes_per_rank, 99999940608);
}

// TP 2: each rank holds 4 KV heads (73 728 B per token) and its own pool; both on one host.
// Ratio 2 over 400 000 device tokens: 800 001 x 73 728 per rank, twice that per node.
TEST(SglangHicache, TensorParallelRanksEachPinAPool) {
  SglangConfig c;
  c.tp_size = 2;
  c.hicache_ratio = 2.0;
  const SglangBreakdown b = qwen3_8b(rules("0.5.23"), c, 400000);
  EXPECT_EQ(b.hicache.full.bytes_per_token, kCell / 2);
  EXPECT_EQ(b.hicache.host_bytes_per_rank, 800001 * (kCell / 2));
  EXPECT_EQ(b.hicache.ranks_per_node, 2);
  EXPECT_EQ(b.hicache.pinned_bytes_per_node, std::int64_t{2} * 800001 * (kCell / 2));
  // Two hosts: one rank each.
  c.nnodes = 2;
  EXPECT_EQ(qwen3_8b(rules("0.5.23"), c, 400000).hicache.pinned_bytes_per_node,
            800001 * (kCell / 2));
}

// 0.5.23 refuses a pool over the rank's share: TP 2, 800 000 device tokens, ratio 2 ->
// 1 600 001 x 73 728 = 117 964 873 728 B per rank; MemAvailable 200 GiB -> share
// (200 - 10) GiB // 2 = 95 GiB = 102 005 473 280 B: "Requesting 117.96 GB but only have
// 102.01 GB free". With 240 GiB the share is 115 GiB = 123 480 309 760 B: it starts.
TEST(SglangHicache, HostShareRefusalIn0523) {
  SglangConfig c;
  c.tp_size = 2;
  c.hicache_ratio = 2.0;
  c.host_mem_available_bytes = 200 * kGiB;
  const SglangBreakdown b = qwen3_8b(rules("0.5.23"), c, 800000);
  EXPECT_EQ(b.hicache.budget_bytes, 95 * kGiB);
  EXPECT_EQ(b.verdict, SglangVerdict::HicacheRefused);
  EXPECT_EQ(b.error,
            "Not enough host memory available. Requesting 117.96 GB but only have 102.01 GB "
            "free. Please reduce the size of the hierarchical cache.");
  EXPECT_STREQ(sglang_verdict_name(b.verdict), "hicache_refused");
  c.host_mem_available_bytes = 240 * kGiB;
  EXPECT_EQ(qwen3_8b(rules("0.5.23"), c, 800000).verdict, SglangVerdict::Started);
}

// 0.4.x: each rank checks its pool against the whole host, MemAvailable - 10 GiB. TP 2, 800 000
// device tokens, ratio 2: 1 600 000 x 73 728 = 117 964 800 000 B per rank.
// MemAvailable 100 GiB = 107 374 182 400: 117.96e9 > 96 636 764 160 -> refused; 0.4.6 prints
// MemAvailable ("107.37 GB"), 0.4.10 MemAvailable - 10 GiB ("96.64 GB").
// MemAvailable 200 GiB: each rank passes (117.96e9 <= 204.01e9), but the two pools pin
// 2 x 2^37 = 274.9e9 B: the plan says so.
TEST(SglangHicache, WholeHostCheckIn04) {
  SglangConfig c;
  c.tp_size = 2;
  c.hicache_ratio = 2.0;
  c.host_mem_available_bytes = 100 * kGiB;
  const SglangBreakdown b046 = qwen3_8b(rules("0.4.6.post5"), c, 800000);
  EXPECT_EQ(b046.verdict, SglangVerdict::HicacheRefused);
  EXPECT_EQ(b046.error,
            "Not enough host memory available. Requesting 117.96 GB but only have 107.37 GB "
            "free. Please reduce the size of the hierarchical cache.");
  const SglangBreakdown b0410 = qwen3_8b(rules("0.4.10.post2"), c, 800000);
  EXPECT_NE(b0410.error.find("only have 96.64 GB free"), std::string::npos) << b0410.error;
  c.host_mem_available_bytes = 200 * kGiB;
  const SglangBreakdown ok = qwen3_8b(rules("0.4.10.post2"), c, 800000);
  ASSERT_EQ(ok.verdict, SglangVerdict::Started) << ok.error;
  EXPECT_EQ(ok.hicache.pinned_bytes_per_node, 2 * (std::int64_t{1} << 37));
  const bool said = std::any_of(ok.notes.begin(), ok.notes.end(), [](const std::string& n) {
    return n.find("together they exhaust the host") != std::string::npos;
  });
  EXPECT_TRUE(said);
}

// 0.4.x asserts more host tokens than device tokens: ratio 1 gives 300 000 = the device's 300 000.
// 0.5.23 only warns (300 001 tokens with its padding page).
TEST(SglangHicache, HostPoolNoLargerThanTheDeviceIn04) {
  SglangConfig c;
  c.hicache_ratio = 1.0;
  const SglangBreakdown old = qwen3_8b(rules("0.4.10.post2"), c);
  EXPECT_EQ(old.verdict, SglangVerdict::HicacheRefused);
  EXPECT_NE(old.error.find("The host memory should be larger than the device memory"),
            std::string::npos);
  const SglangBreakdown now = qwen3_8b(rules("0.5.23"), c);
  EXPECT_EQ(now.verdict, SglangVerdict::Started);
  EXPECT_EQ(now.hicache.full.tokens, 300001);
}

// 0.5.23 auto-sizing (hicache_auto_size.py): no --hicache-ratio / --hicache-size and
// MemAvailable 100 GiB, one rank: budget = int((107 374 182 400 - 10 737 418 240) x 0.8)
// = 77 309 411 328; device bytes = 300 001 x 147 456 = 44 236 947 456;
// ratio = min(2, 77 309 411 328 x 0.95 / 44 236 947 456) = 1.66024...;
// tokens = int(300 000 x ratio) + 1.
TEST(SglangHicache, DefaultRatioShrinksToTheHostIn0523) {
  SglangConfig c;
  c.host_mem_available_bytes = 100 * kGiB;
  const SglangBreakdown b = qwen3_8b(rules("0.5.23"), c);
  const double ratio = 77309411328.0 * 0.95 / 44236947456.0;
  EXPECT_NEAR(ratio, 1.66024, 1e-5);
  EXPECT_TRUE(b.hicache.auto_sized);
  EXPECT_DOUBLE_EQ(b.hicache.ratio, ratio);
  EXPECT_EQ(b.hicache.full.tokens, static_cast<std::int64_t>(std::floor(300000 * ratio)) + 1);
  EXPECT_EQ(b.verdict, SglangVerdict::Started);
  // Without MemAvailable the default 2.0 stands.
  c.host_mem_available_bytes.reset();
  EXPECT_DOUBLE_EQ(qwen3_8b(rules("0.5.23"), c).hicache.ratio, 2.0);
  // 8 GiB available: nothing is left after the 10 GiB reserve.
  c.host_mem_available_bytes = 8 * kGiB;
  const SglangBreakdown none = qwen3_8b(rules("0.5.23"), c);
  EXPECT_EQ(none.verdict, SglangVerdict::HicacheRefused);
  EXPECT_NE(none.error.find("No host memory is left for HiCache"), std::string::npos);
}

// A Mamba hybrid (Nemotron-Nano-9B-v2) mirrors its KV pool and its state pool. 0.5.23 splits a
// fixed --hicache-size 20 by device bytes (_split_hicache_size): KV share = 20 x KV / (KV + M),
// state share = 20 x M / (KV + M), each int(share x 1e9 // bytes per token) + 1. Before
// sglang#32915 each pool took the whole 20 GB (sglang#29034): about twice the host memory.
TEST(SglangHicache, HybridSizeSplitAndTheDoubling) {
  SglangConfig c;
  c.enable_hierarchical_cache = true;
  c.mem_fraction_static = 0.88;
  c.hicache_size_gb = 20;
  const ModelSpec& spec = db().model("nvidia/NVIDIA-Nemotron-Nano-9B-v2");
  const SglangBreakdown b = sglang_breakdown(spec, db().gpu("H100-80GB"), rules("0.5.23"), c);
  ASSERT_EQ(b.verdict, SglangVerdict::Started) << b.error;
  const auto kv = static_cast<double>(b.k_size_bytes + b.v_size_bytes);
  const auto m = static_cast<double>(b.mamba_pool_bytes);
  const auto tokens = [](double share_gb, std::int64_t per_token) {
    return static_cast<std::int64_t>(std::floor(share_gb * 1e9 / static_cast<double>(per_token))) +
           1;
  };
  const std::int64_t kv_tokens = tokens(20 * kv / (kv + m), b.cell_bytes);
  const std::int64_t slots = tokens(20 * m / (kv + m), b.mamba_state_bytes_per_slot);
  EXPECT_EQ(b.hicache.full.tokens, kv_tokens);
  EXPECT_EQ(b.hicache.mamba.tokens, slots);
  const std::int64_t split = kv_tokens * b.cell_bytes + slots * b.mamba_state_bytes_per_slot;
  EXPECT_EQ(b.hicache.host_bytes_per_rank, split);
  EXPECT_NEAR(static_cast<double>(split), 20e9, 1e8);
  // The same launch under a release that hands each pool the whole size.
  SglangRules doubling = rules("0.5.23");
  doubling.hicache_size_split = false;
  const SglangBreakdown d = sglang_breakdown(spec, db().gpu("H100-80GB"), doubling, c);
  EXPECT_EQ(d.hicache.full.tokens, tokens(20, b.cell_bytes));
  EXPECT_EQ(d.hicache.mamba.tokens, tokens(20, b.mamba_state_bytes_per_slot));
  EXPECT_NEAR(static_cast<double>(d.hicache.host_bytes_per_rank), 40e9, 2e8);
  // The ratio sizes each pool from its own device pool: int(slots x 2) + 1 state slots.
  c.hicache_size_gb = 0;
  c.hicache_ratio = 2.0;
  const SglangBreakdown r = sglang_breakdown(spec, db().gpu("H100-80GB"), rules("0.5.23"), c);
  EXPECT_EQ(r.hicache.mamba.tokens, 2 * r.mamba_slots + 1);
  EXPECT_EQ(r.hicache.full.tokens, 2 * r.max_total_num_tokens + 1);
}

// 0.4.x's HiRadixCache takes MHA and MLA pools only: a sliding-window (Gemma-2) or Mamba hybrid
// pool stops the launch.
TEST(SglangHicache, HybridModelsRefusedIn04) {
  SglangConfig c;
  c.enable_hierarchical_cache = true;
  c.mem_fraction_static = 0.85;
  const SglangBreakdown b = sglang_breakdown(db().model("google/gemma-2-9b-it"),
                                             db().gpu("H100-80GB"), rules("0.4.10.post2"), c);
  EXPECT_EQ(b.verdict, SglangVerdict::HicacheRefused);
  EXPECT_EQ(b.error, "HiRadixCache only supports MHA and MLA yet");
}

// --hicache-mem-layout: 0.4.6.post5 has no such flag, 0.4.10.post2 takes layer_first and
// page_first (argparse choices), 0.5.23 five layouts; a layout changes no byte.
TEST(SglangHicache, LayoutsAreTheReleases) {
  SglangConfig c;
  c.hicache_ratio = 2.0;
  c.hicache_mem_layout = "page_first";
  EXPECT_THROW((void)qwen3_8b(rules("0.4.6.post5"), c), ConfigError);
  const SglangBreakdown b = qwen3_8b(rules("0.4.10.post2"), c);
  EXPECT_EQ(b.hicache_mem_layout, "page_first");
  c.hicache_mem_layout = "page_head";
  try {
    (void)qwen3_8b(rules("0.4.10.post2"), c);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "hicache_mem_layout");
    EXPECT_EQ(e.allowed(), "layer_first, page_first");
  }
  const SglangBreakdown now = qwen3_8b(rules("0.5.23"), c);
  EXPECT_EQ(now.hicache.host_bytes_per_rank, 600001 * kCell);
  c.hicache_mem_layout.clear();
  EXPECT_EQ(qwen3_8b(rules("0.4.10.post2"), c).hicache_mem_layout, "layer_first");
}

// The knobs under SGLang's names, and SGLang's flags in the launch line.
TEST(SglangHicache, KnobsAndLaunchLine) {
  SglangConfig c;
  set_sglang_knob(c, "enable_hierarchical_cache", KnobValue{true});
  set_sglang_knob(c, "hicache_ratio", KnobValue{1.5});
  set_sglang_knob(c, "hicache_size", KnobValue{std::int64_t{64}});
  set_sglang_knob(c, "hicache_mem_layout", KnobValue{std::string("layer_first")});
  set_sglang_knob(c, "host_mem_available_bytes", KnobValue{std::int64_t{512} * kGiB});
  EXPECT_TRUE(c.enable_hierarchical_cache);
  EXPECT_EQ(c.hicache_size_gb, 64);
  EXPECT_EQ(c.host_mem_available_bytes, 512 * kGiB);
  EXPECT_THROW(set_sglang_knob(c, "hicache_ratio", KnobValue{0.0}), ConfigError);
  const std::vector<std::string> argv = sglang_launch_argv(c, rules("0.5.23"));
  const std::vector<std::string> expected = {
      "--enable-hierarchical-cache", "--hicache-ratio", "1.5", "--hicache-size", "64",
      "--hicache-mem-layout",        "layer_first"};
  EXPECT_EQ(argv, expected);
  EXPECT_EQ(knob_default_text(sglang_knob_spec("hicache_ratio")),
            "the release's hicache_ratio_default: 2 from 0.4.0");
  // Without --enable-hierarchical-cache the knobs plan no pool, and say so.
  SglangConfig off;
  off.hicache_ratio = 2.0;
  off.mem_fraction_static = 0.85;
  const SglangBreakdown b =
      sglang_breakdown(db().model("Qwen/Qwen3-8B"), db().gpu("H100-80GB"), rules("0.5.23"), off);
  EXPECT_FALSE(b.hicache.enabled);
  EXPECT_EQ(b.hicache.host_bytes_per_rank, 0);
  EXPECT_TRUE(to_json(b)["hicache"].is_null());
}

// The refusal in a log is read as the verdict's outcome: the scheduler's ValueError carries
// HostKVCache's f-string (0.4.10.post2 memory_pool_host.py, 0.5.23 pool_host/base.py).
TEST(SglangHicache, RefusalInALogIsTheOutcome) {
  const SglangLogFigures f = parse_sglang_log(
      "[2026-11-28 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
      "ValueError: Not enough host memory available. Requesting 117.96 GB but only have 102.01 "
      "GB free. Please reduce the size of the hierarchical cache.\n");
  EXPECT_EQ(f.outcome, "hicache_refused");
  ASSERT_FALSE(f.error_lines.empty());
}

// A hostile row names the row and the field.
void expect_field_named(const std::string& from, const std::string& to, const std::string& field) {
  std::ifstream in(std::string(VRAMPLAN_MODEL_SPECS_DIR) + "/sglang.yaml");
  std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = yaml.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  yaml.replace(at, from.size(), to);
  try {
    (void)parse_sglang_yaml(yaml, "sglang.yaml");
    FAIL() << "expected SpecError naming " << field;
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field_path(), field) << e.what();
  }
}

TEST(SglangHicache, HostileRowsAreNamed) {
  expect_field_named("hicache_rule: per_host_rank", "hicache_rule: everywhere",
                     "sglang[2].hicache_rule");
  expect_field_named("hicache_mem_layouts: [layer_first, page_first]",
                     "hicache_mem_layouts: [layer_first, Page-First]",
                     "sglang[1].hicache_mem_layouts[1]");
  expect_field_named("hicache_host_memory_fraction_default: 0.8",
                     "hicache_host_memory_fraction_default: 1.5",
                     "sglang[2].hicache_host_memory_fraction_default");
  expect_field_named("    hicache_size_split: true\n", "", "sglang[2].hicache_size_split");
}

}  // namespace
