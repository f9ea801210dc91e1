// The evaluation split along the utilization (CompiledLaunch::prepare / finish) and the sweep
// built on it: a point prepared at one utilization and finished at another must equal the point
// evaluated at the second, which holds only because every rank requests the same
// ceil(total x utilization) and so the worst and tightest ranks do not move with it.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "test_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/solver.hpp"

using namespace vramplan;

namespace {

constexpr double kUtilizations[] = {0.3, 0.5, 0.62, 0.8, 0.9, 0.95, 0.99, 1.0};

CompiledLaunch llama_launch(std::int32_t pipeline_parallel_size,
                            std::optional<std::int64_t> kv_cache_memory_bytes = std::nullopt) {
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  hw.num_gpus = pipeline_parallel_size;
  EngineConfig config;
  config.pipeline_parallel_size = pipeline_parallel_size;
  config.kv_cache_memory_bytes = kv_cache_memory_bytes;
  return CompiledLaunch(
      std::make_shared<const ModelSpec>(vramplan_test::spec_from_yaml(vramplan_test::kLlama31_8B)),
      hw, config);
}

ResolvedKnobs at(const CompiledLaunch& launch, double utilization, std::int64_t max_model_len,
                 std::int64_t max_num_seqs) {
  LaunchKnobs knobs;
  knobs.gpu_memory_utilization = utilization;
  knobs.max_model_len = max_model_len;
  knobs.max_num_seqs = max_num_seqs;
  return launch.resolve(knobs);
}

// Every field: evaluate() runs prepare()'s and finish()'s steps in one pass, so this also checks
// that the single pass and the split one agree.
void expect_same(const Evaluation& a, const Evaluation& b) {
  EXPECT_EQ(a.knobs.max_model_len, b.knobs.max_model_len);
  EXPECT_EQ(a.knobs.max_num_seqs, b.knobs.max_num_seqs);
  EXPECT_EQ(a.knobs.max_num_batched_tokens, b.knobs.max_num_batched_tokens);
  EXPECT_EQ(a.knobs.block_size, b.knobs.block_size);
  EXPECT_EQ(a.knobs.kv_element_bytes, b.knobs.kv_element_bytes);
  EXPECT_EQ(a.knobs.num_cudagraph_sizes, b.knobs.num_cudagraph_sizes);
  EXPECT_EQ(a.knobs.max_cudagraph_capture_size, b.knobs.max_cudagraph_capture_size);
  EXPECT_EQ(a.max_weights_bytes, b.max_weights_bytes);
  EXPECT_EQ(a.max_post_allocation_bytes, b.max_post_allocation_bytes);
  EXPECT_EQ(a.max_graph_profiling_bytes, b.max_graph_profiling_bytes);
  EXPECT_EQ(a.host_required_bytes, b.host_required_bytes);
  EXPECT_EQ(a.kv_empty, b.kv_empty);
  EXPECT_EQ(a.outcome, b.outcome);
  EXPECT_EQ(a.num_blocks, b.num_blocks);
  EXPECT_EQ(a.kv_tokens, b.kv_tokens);
  EXPECT_EQ(a.max_concurrency, b.max_concurrency);
  EXPECT_EQ(a.min_kv_cache_bytes, b.min_kv_cache_bytes);
  EXPECT_EQ(a.request_kv_bytes, b.request_kv_bytes);
  EXPECT_EQ(a.worst_rank, b.worst_rank);
  EXPECT_EQ(a.tightest_rank, b.tightest_rank);
  EXPECT_EQ(a.knobs.gpu_memory_utilization, b.knobs.gpu_memory_utilization);
}

}  // namespace

// Llama-3.1-8B, 32 layers: pipeline stages of unequal layer counts (and the sampler on the
// last) reserve different bytes and hold different block costs; 6 stages also take the path
// for ranks beyond the inline ones.
TEST(SweepIncremental, RankChoicesDoNotDependOnUtilization) {
  for (std::int32_t pp : {2, 3, 6}) {
    const CompiledLaunch launch = llama_launch(pp);
    ASSERT_EQ(launch.ranks().size(), static_cast<std::size_t>(pp));
    for (std::int64_t len : {2048, 32768, 131072}) {
      for (std::int64_t seqs : {1, 256}) {
        const PreparedEvaluation prepared = launch.prepare(at(launch, 0.9, len, seqs));
        for (double u : kUtilizations) {
          SCOPED_TRACE("pp " + std::to_string(pp) + " len " + std::to_string(len) + " seqs " +
                       std::to_string(seqs) + " u " + std::to_string(u));
          const ResolvedKnobs k = at(launch, u, len, seqs);
          // Every rank requests ceil(total x u), the only term the utilization moves.
          const auto requested = static_cast<std::int64_t>(std::ceil(85029158912.0 * u));
          std::int64_t worst_need = 0;
          std::int64_t min_kv = 0;
          std::int64_t tightest_margin = 0;
          std::int32_t worst = 0;
          std::int32_t tightest = 0;
          for (std::size_t i = 0; i < launch.ranks().size(); ++i) {
            const RankEvaluation r = launch.evaluate_rank(i, k);
            EXPECT_EQ(r.requested_memory_bytes, requested);
            // The choices as the evaluation made them per utilization before the split.
            const std::int64_t need =
                kv_request_bytes(launch.ranks()[i].kv, r.page, len, k.max_num_batched_tokens);
            min_kv = i == 0 ? r.kv_cache_bytes : std::min(min_kv, r.kv_cache_bytes);
            if (need - r.kv_cache_bytes >= worst_need - min_kv) {
              worst_need = need;
              worst = static_cast<std::int32_t>(i);
            }
            const std::int64_t margin = r.post_allocation_bytes - r.headroom_bytes;
            if (i == 0 || margin > tightest_margin) {
              tightest_margin = margin;
              tightest = static_cast<std::int32_t>(i);
            }
          }
          const Evaluation direct = launch.evaluate(k);
          EXPECT_EQ(direct.worst_rank, worst);
          EXPECT_EQ(direct.tightest_rank, tightest);
          EXPECT_EQ(direct.min_kv_cache_bytes, min_kv);
          EXPECT_EQ(direct.request_kv_bytes, worst_need);
          // Prepared at 0.9, finished at u: the same as evaluated at u.
          expect_same(launch.finish(prepared, u), direct);
        }
      }
    }
  }
}

// By hand, one rank (PP 1), bf16 KV: a block is 16 tokens x 8 KV heads x (128 + 128) x 2 bytes
// = 65,536 bytes per layer, x 32 layers = 2 MiB; requested = ceil(85,029,158,912 x u). Between
// two utilizations the KV cache moves by exactly the requested bytes, blocks are floor(KV /
// 2 MiB), tokens 16 per block and concurrency blocks / ceil(len / 16).
TEST(SweepIncremental, UtilizationMovesKvByTheRequestedBytes) {
  const CompiledLaunch launch = llama_launch(1);
  const PreparedEvaluation prepared = launch.prepare(at(launch, 0.9, 8192, 64));
  const FinishedPoint base = launch.finish_point(prepared, 0.9);
  const std::int64_t requested_at_90 = 76526243021;  // ceil(85,029,158,912 x 0.9)
  for (double u : {0.5, 0.75, 0.85, 0.95}) {
    SCOPED_TRACE(u);
    const FinishedPoint f = launch.finish_point(prepared, u);
    const auto requested = static_cast<std::int64_t>(std::ceil(85029158912.0 * u));
    EXPECT_EQ(f.min_kv_cache_bytes - base.min_kv_cache_bytes, requested - requested_at_90);
    EXPECT_EQ(f.num_blocks, f.min_kv_cache_bytes / 2097152);
    EXPECT_EQ(f.kv_tokens, f.num_blocks * 16);
    EXPECT_EQ(f.max_concurrency, static_cast<double>(f.num_blocks) / 512.0);
  }
}

// A fixed --kv-cache-memory-bytes does not move with the utilization; the startup free-memory
// check still does: all of the 79.19 GiB is more than an idle H100 has free beside the CUDA
// context; 0.99 of it leaves 0.79 GiB, more than the context takes.
TEST(SweepIncremental, FixedKvCacheIgnoresUtilizationButNotTheFreeMemoryCheck) {
  const std::int64_t fixed = std::int64_t{20} << 30;
  const CompiledLaunch launch = llama_launch(1, fixed);
  const PreparedEvaluation prepared = launch.prepare(at(launch, 0.9, 8192, 64));
  for (double u : kUtilizations) {
    SCOPED_TRACE(u);
    const FinishedPoint f = launch.finish_point(prepared, u);
    EXPECT_EQ(f.min_kv_cache_bytes, fixed);
    EXPECT_EQ(f.num_blocks, fixed / 2097152);
    EXPECT_EQ(f.outcome == Outcome::StartupFreeMemory, u == 1.0);
    expect_same(launch.finish(prepared, u), launch.evaluate(at(launch, u, 8192, 64)));
  }
}

// A grid of more points than one tile of the sweep, with refused points inside it: every row is
// the launch evaluated at that row's knobs, in the documented row order, whether the grid is
// swept in one call or in ranges of points that cut through tiles.
TEST(SweepIncremental, SweepRowsMatchEvaluationAcrossTiles) {
  for (const auto& [pp, cuts] :
       {std::pair{1, std::vector<std::size_t>{}}, std::pair{6, std::vector<std::size_t>{}},
        std::pair{1, std::vector<std::size_t>{50, 130}}}) {
    const CompiledLaunch launch = llama_launch(pp);
    SweepGrid grid;
    grid.gpu_memory_utilization = {0.55, 0.9, 0.97};
    for (std::int64_t len = 1024; len <= 139264; len += 4096) grid.max_model_len.push_back(len);
    grid.max_num_seqs = {1, 96, 1024, 2048};
    grid.max_num_batched_tokens = {2048, 8192};
    const std::int64_t rows = sweep_size(grid);
    ASSERT_EQ(rows, 3 * 34 * 4 * 2);  // 272 points: more than one tile of 64, or of 256
    std::vector<double> util(rows), conc(rows);
    std::vector<std::int64_t> len(rows), seqs(rows), toks(rows), kv(rows), tokens(rows);
    std::vector<std::int8_t> outcome(rows);
    const SweepColumns columns{util.data(), len.data(),    seqs.data(), toks.data(),
                               kv.data(),   tokens.data(), conc.data(), outcome.data()};
    std::size_t begin = 0;
    for (std::size_t end : cuts) {
      sweep(launch, LaunchKnobs{}, grid, columns, SweepPointRange{begin, end});
      begin = end;
    }
    sweep(launch, LaunchKnobs{}, grid, columns, SweepPointRange{begin});
    std::int64_t refused = 0;
    for (std::int64_t i = 0; i < rows; ++i) {
      SCOPED_TRACE("pp " + std::to_string(pp) + " in " + std::to_string(cuts.size() + 1) +
                   " calls, row " + std::to_string(i));
      const auto row = static_cast<std::size_t>(i);
      const std::size_t point = row % (34 * 4 * 2);
      EXPECT_EQ(util[row], grid.gpu_memory_utilization[row / (34 * 4 * 2)]);
      EXPECT_EQ(len[row], grid.max_model_len[point / 8]);
      EXPECT_EQ(seqs[row], grid.max_num_seqs[point / 2 % 4]);
      EXPECT_EQ(toks[row], grid.max_num_batched_tokens[point % 2]);
      LaunchKnobs knobs;
      knobs.gpu_memory_utilization = util[row];
      knobs.max_model_len = len[row];
      knobs.max_num_seqs = seqs[row];
      knobs.max_num_batched_tokens = toks[row];
      ResolvedKnobs resolved;
      if (launch.try_resolve(knobs, resolved) != KnobProblem::None) {
        EXPECT_EQ(outcome[row], -1);
        ++refused;
        continue;
      }
      const Evaluation e = launch.evaluate(resolved);
      EXPECT_EQ(outcome[row], static_cast<std::int8_t>(e.outcome));
      EXPECT_EQ(kv[row], e.min_kv_cache_bytes);
      EXPECT_EQ(tokens[row], e.kv_tokens);
      EXPECT_EQ(conc[row], e.max_concurrency);
    }
    // Refused: the lengths 132096 and 136192, past the model's 131072.
    EXPECT_EQ(refused, 3 * 2 * 4 * 2);
  }
}

// A range of points writes its rows under every utilization and no other row.
TEST(SweepIncremental, PointRangeWritesOnlyItsRows) {
  const CompiledLaunch launch = llama_launch(1);
  SweepGrid grid;
  grid.gpu_memory_utilization = {0.8, 0.9};
  grid.max_model_len = {4096, 8192, 16384};
  grid.max_num_seqs = {1, 2};  // 6 points, 12 rows
  std::vector<double> util(12), conc(12);
  std::vector<std::int64_t> len(12), seqs(12, -7), toks(12), kv(12), tokens(12);
  std::vector<std::int8_t> outcome(12);
  sweep(launch, LaunchKnobs{}, grid,
        SweepColumns{util.data(), len.data(), seqs.data(), toks.data(), kv.data(), tokens.data(),
                     conc.data(), outcome.data()},
        SweepPointRange{1, 3});
  // Points 1 and 2 (4096 x 2 sequences, 8192 x 1): rows 1, 2 (u 0.8) and 7, 8 (u 0.9).
  EXPECT_EQ(seqs, (std::vector<std::int64_t>{-7, 2, 1, -7, -7, -7, -7, 2, 1, -7, -7, -7}));
  EXPECT_EQ(len[7], 4096);
  EXPECT_EQ(util[8], 0.9);
}
