// The SGLang sweep: every row is the single breakdown at that point (each field compared with
// sglang_breakdown, one row also derived by hand), rows nest in the documented order, listed
// values are checked as single knobs, and a point allocates nothing (the heap allocations of a
// sweep do not grow with its points).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "allocation_counter.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/sglang.hpp"
#include "vramplan/spec_db.hpp"

namespace {

using namespace vramplan;

const SpecDatabase& db() {
  static const SpecDatabase database = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return database;
}

const SglangRules& rules_0523() { return sglang_rules(sglang_table(), "0.5.23"); }

struct Columns {
  explicit Columns(std::int64_t rows)
      : f(static_cast<std::size_t>(rows)),
        context(static_cast<std::size_t>(rows)),
        requests(static_cast<std::size_t>(rows)),
        chunk(static_cast<std::size_t>(rows)),
        pool(static_cast<std::size_t>(rows)),
        tokens(static_cast<std::size_t>(rows)),
        verdict(static_cast<std::size_t>(rows)) {}
  SglangSweepColumns into() {
    return {f.data(),    context.data(), requests.data(), chunk.data(),
            pool.data(), tokens.data(),  verdict.data()};
  }
  std::vector<double> f;
  std::vector<std::int64_t> context, requests, chunk, pool, tokens;
  std::vector<std::int8_t> verdict;
};

TEST(SglangSweep, EveryRowIsTheSingleBreakdown) {
  const ModelSpec& spec = db().model("meta-llama/Llama-3.1-8B-Instruct");
  const GpuSpec& gpu = db().gpu("H100-80GB");
  SglangConfig base;
  base.model_path = spec.id;
  // f from "weights leave nothing" (0.15) through started to a starved slack (0.99); a context
  // unset (the model's) and short; requests unset and capped; chunk unset and given.
  const SglangSweepGrid grid{{0.15, 0.5, 0.8, 0.99}, {}, {8, 1 << 20}, {4096, 16384}};
  ASSERT_EQ(sglang_sweep_size(grid), 4 * 1 * 2 * 2);
  Columns out(16);
  sglang_sweep(spec, gpu, rules_0523(), base, grid, out.into());
  std::int64_t row = 0;
  bool seen[5] = {};
  for (const double f : grid.mem_fraction_static) {
    for (const std::int64_t requests : grid.max_running_requests) {
      for (const std::int64_t chunk : grid.chunked_prefill_size) {
        SglangConfig c = base;
        c.mem_fraction_static = f;
        c.max_running_requests = requests;
        c.chunked_prefill_size = chunk;
        const SglangBreakdown b = sglang_breakdown(spec, gpu, rules_0523(), c);
        const auto i = static_cast<std::size_t>(row);
        SCOPED_TRACE("row " + std::to_string(row));
        EXPECT_EQ(out.f[i], b.mem_fraction_static);
        EXPECT_EQ(out.context[i], b.context_length);
        EXPECT_EQ(out.requests[i], b.max_running_requests);
        EXPECT_EQ(out.chunk[i], b.chunked_prefill_size);
        EXPECT_EQ(out.pool[i], b.kv_pool_bytes);
        EXPECT_EQ(out.tokens[i], b.max_total_num_tokens);
        EXPECT_EQ(out.verdict[i], static_cast<std::int8_t>(b.verdict));
        seen[static_cast<int>(b.verdict)] = true;
        ++row;
      }
    }
  }
  // The grid crosses more than one verdict, so the rows are not all alike.
  EXPECT_TRUE(seen[static_cast<int>(SglangVerdict::Started)]);
  EXPECT_TRUE(seen[static_cast<int>(SglangVerdict::WeightsLeaveNoMemory)]);
  EXPECT_TRUE(seen[static_cast<int>(SglangVerdict::OomGraphCapture)] ||
              seen[static_cast<int>(SglangVerdict::OomFirstPrefill)]);
}

// One row by hand: Llama-3.1-8B-Instruct on one H100 at f = 0.8, chunk 4096, 8 requests.
// B = 85 030 076 416 (CUDA total) - 311 385 129 (context, no NCCL at TP = 1) = 84 718 691 287;
// slack = round(0.2 B) = 16 943 738 257; weights = 8 030 261 248 parameters x 2 B =
// 16 060 522 496 (the checkpoint's bf16 size) + the rotary cos/sin cache [131 072, 128] bf16
// = 32 MiB: 16 094 076 928; rest = B - W - slack = 51 680 876 102; cell = 8 KV heads x
// (128 + 128) x 2 B x 32 layers = 131 072 B; tokens = floor(rest / cell) = 394 293; the pool
// holds one padding page more: 394 294 x 131 072 = 51 680 903 168 B.
TEST(SglangSweep, OneRowByHand) {
  const ModelSpec& spec = db().model("meta-llama/Llama-3.1-8B-Instruct");
  const SglangSweepGrid grid{{0.8}, {}, {8}, {4096}};
  Columns out(1);
  sglang_sweep(spec, db().gpu("H100-80GB"), rules_0523(), SglangConfig{}, grid, out.into());
  EXPECT_EQ(out.tokens[0], 394293);
  EXPECT_EQ(out.pool[0], std::int64_t{394294} * 131072);
  EXPECT_EQ(out.requests[0], 8);
  EXPECT_EQ(out.context[0], 131072);  // unset: the model's max_position_embeddings
  EXPECT_EQ(out.verdict[0], static_cast<std::int8_t>(SglangVerdict::Started));
}

TEST(SglangSweep, ListedValuesAreCheckedAsSingleKnobs) {
  const ModelSpec& spec = db().model("Qwen/Qwen3-8B");
  Columns out(2);
  const SglangSweepGrid bad_f{{0.8, 1.5}, {}, {}, {}};
  try {
    sglang_sweep(spec, db().gpu("H100-80GB"), rules_0523(), SglangConfig{}, bad_f, out.into());
    FAIL() << "mem_fraction_static 1.5 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("mem_fraction_static"), std::string::npos) << e.what();
  }
  const SglangSweepGrid bad_context{{}, {4096, 0}, {}, {}};
  EXPECT_THROW(sglang_sweep(spec, db().gpu("H100-80GB"), rules_0523(), SglangConfig{}, bad_context,
                            out.into()),
               ConfigError);
}

std::int64_t allocations_of_sweep(std::size_t fractions) {
  const ModelSpec& spec = db().model("Qwen/Qwen3-8B");
  SglangSweepGrid grid;
  for (std::size_t i = 0; i < fractions; ++i) {
    grid.mem_fraction_static.push_back(0.5 + 0.4 * static_cast<double>(i) /
                                                 static_cast<double>(fractions));
  }
  grid.context_length = {4096, 32768};
  Columns out(sglang_sweep_size(grid));
  // The rules table is parsed on first use: outside the count.
  const SglangRules& rules = rules_0523();
  const GpuSpec& gpu = db().gpu("L4");
  return vramplan_test::allocations_of(
      [&] { sglang_sweep(spec, gpu, rules, SglangConfig{}, grid, out.into()); });
}

TEST(SglangSweep, PointsAllocateNothing) {
  // Compiling the launch allocates; the points do not: 2 points and 2000 cost the same.
  EXPECT_EQ(allocations_of_sweep(1), allocations_of_sweep(1000));
}

}  // namespace
