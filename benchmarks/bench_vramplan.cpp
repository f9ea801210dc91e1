// How fast the planner answers: one breakdown from scratch, the compile step, one plan and
// one evaluation on a compiled launch, and a sweep of a million launch configurations. Heap
// allocations per call are counted with a replacement operator new, so the "allocation-light" claim
// has a number.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/solver.hpp"
#include "vramplan/spec_db.hpp"

namespace {

std::atomic<std::int64_t> g_allocations{0};

const vramplan::SpecDatabase& database() {
  static const vramplan::SpecDatabase db =
      vramplan::SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return db;
}

struct Launch {
  const char* model;
  const char* gpu;
  int tensor_parallel_size;
};

constexpr Launch kLaunches[] = {{"meta-llama/Llama-3.1-8B", "H100-80GB", 1},
                                {"Qwen/Qwen3-30B-A3B", "H100-80GB", 2},
                                {"deepseek-ai/DeepSeek-V3", "H200", 8}};

vramplan::HardwareConfig hardware(const Launch& launch) {
  vramplan::HardwareConfig hw;
  hw.gpu = database().gpu(launch.gpu);
  hw.num_gpus = launch.tensor_parallel_size;
  return hw;
}

void report_allocations(benchmark::State& state, std::int64_t before) {
  state.counters["allocs_per_call"] = benchmark::Counter(
      static_cast<double>(g_allocations.load() - before), benchmark::Counter::kAvgIterations);
}

std::shared_ptr<const vramplan::CompiledLaunch> compiled(const Launch& launch) {
  vramplan::EngineConfig config;
  config.tensor_parallel_size = launch.tensor_parallel_size;
  return std::make_shared<const vramplan::CompiledLaunch>(
      std::make_shared<const vramplan::ModelSpec>(database().model(launch.model)), hardware(launch),
      config);
}

// One breakdown from scratch: compile + evaluate + the full report (the per-call API).
void BM_Breakdown(benchmark::State& state) {
  const Launch& launch = kLaunches[state.range(0)];
  const vramplan::ModelSpec& spec = database().model(launch.model);
  const vramplan::HardwareConfig hw = hardware(launch);
  vramplan::EngineConfig config;
  config.tensor_parallel_size = launch.tensor_parallel_size;
  config.max_model_len = 8192;
  const std::int64_t before = g_allocations.load();
  for (auto _ : state) {
    benchmark::DoNotOptimize(vramplan::compute_breakdown(spec, hw, config).kv_tokens);
  }
  report_allocations(state, before);
  state.SetLabel(launch.model);
}
BENCHMARK(BM_Breakdown)->DenseRange(0, 2);

// The compile step alone: what a knob cannot change, worked out once.
void BM_Compile(benchmark::State& state) {
  const Launch& launch = kLaunches[state.range(0)];
  const auto spec = std::make_shared<const vramplan::ModelSpec>(database().model(launch.model));
  const vramplan::HardwareConfig hw = hardware(launch);
  vramplan::EngineConfig config;
  config.tensor_parallel_size = launch.tensor_parallel_size;
  const std::int64_t before = g_allocations.load();
  for (auto _ : state) {
    const vramplan::CompiledLaunch compiled(spec, hw, config);
    benchmark::DoNotOptimize(compiled.startup_free_bytes());
  }
  report_allocations(state, before);
  state.SetLabel(launch.model);
}
BENCHMARK(BM_Compile)->DenseRange(0, 2);

// One plan on a compiled launch: the four knobs solved for a 32k context, with the full
// breakdown and verdict at the chosen values.
void BM_Plan(benchmark::State& state) {
  const Launch& launch = kLaunches[state.range(0)];
  const auto compiled_launch = compiled(launch);
  const std::int64_t before = g_allocations.load();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        vramplan::solve(*compiled_launch, 32768, 0, vramplan::kDefaultSafetyMarginBytes)
            .max_num_seqs);
  }
  report_allocations(state, before);
  state.SetLabel(launch.model);
}
BENCHMARK(BM_Plan)->DenseRange(0, 2);

// The same plan for a workload given as p50/p99 percentiles (32 request shapes): max_num_seqs
// searched by the KV overflow probability, the report beside it.
void BM_PlanWorkload(benchmark::State& state) {
  const Launch& launch = kLaunches[state.range(0)];
  const auto compiled_launch = compiled(launch);
  vramplan::SolveTargets targets;
  targets.context_tokens = 32768;
  targets.workload = vramplan::workload_from_percentiles(1000, 8000, 200, 1500);
  const std::int64_t before = g_allocations.load();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        vramplan::solve(*compiled_launch, compiled_launch->config(), targets).max_num_seqs);
  }
  report_allocations(state, before);
  state.SetLabel(launch.model);
}
BENCHMARK(BM_PlanWorkload)->DenseRange(0, 2);

// One evaluation of the knobs on a compiled launch (the sweep's inner step).
void BM_Evaluate(benchmark::State& state) {
  const Launch& launch = kLaunches[state.range(0)];
  const auto compiled_launch = compiled(launch);
  vramplan::LaunchKnobs knobs;
  knobs.max_model_len = 8192;
  const std::int64_t before = g_allocations.load();
  for (auto _ : state) {
    knobs.gpu_memory_utilization = 0.9;
    benchmark::DoNotOptimize(compiled_launch->evaluate(compiled_launch->resolve(knobs)).kv_tokens);
  }
  report_allocations(state, before);
  state.SetLabel(launch.model);
}
BENCHMARK(BM_Evaluate)->DenseRange(0, 2);

// A grid of 1,016,000 points: 100 utilizations x 1016 context lengths x 10 sequence limits.
vramplan::SweepGrid sweep_grid(const vramplan::CompiledLaunch& launch) {
  vramplan::SweepGrid grid;
  for (int u = 0; u < 100; ++u) grid.gpu_memory_utilization.push_back(0.80 + 0.001 * u);
  for (std::int64_t len = 1024; len <= 131072 && len <= launch.spec().max_position_embeddings;
       len += 128) {
    grid.max_model_len.push_back(len);
  }
  grid.max_num_seqs = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  return grid;
}

// The output columns of one sweep, allocated and first touched once (outside the timing).
struct SweepOutput {
  explicit SweepOutput(std::size_t rows)
      : util(rows),
        concurrency(rows),
        len(rows),
        seqs(rows),
        tokens(rows),
        kv(rows),
        kv_tokens(rows),
        outcome(rows) {}
  vramplan::SweepColumns columns() {
    return {util.data(), len.data(),       seqs.data(),        tokens.data(),
            kv.data(),   kv_tokens.data(), concurrency.data(), outcome.data()};
  }
  std::vector<double> util, concurrency;
  std::vector<std::int64_t> len, seqs, tokens, kv, kv_tokens;
  std::vector<std::int8_t> outcome;
};

// The grid through sweep(): one compiled launch, output columns preallocated.
void BM_Sweep(benchmark::State& state) {
  const Launch& launch = kLaunches[state.range(0)];
  const auto compiled_launch = compiled(launch);
  const vramplan::SweepGrid grid = sweep_grid(*compiled_launch);
  const std::size_t rows = static_cast<std::size_t>(vramplan::sweep_size(grid));
  SweepOutput output(rows);
  const vramplan::SweepColumns out = output.columns();
  const vramplan::LaunchKnobs base;
  const std::int64_t before = g_allocations.load();
  for (auto _ : state) {
    vramplan::sweep(*compiled_launch, base, grid, out);
    benchmark::DoNotOptimize(out.outcome);
    benchmark::ClobberMemory();
  }
  report_allocations(state, before);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(rows));
  state.SetLabel(launch.model);
}
BENCHMARK(BM_Sweep)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

// The store-bound floor for BM_Sweep: the same grid, the same eight output columns in row order,
// and the same closed form per point, with everything the utilization cannot change worked out
// before the timed loop (one rank): each (length, sequences) point's reserved bytes (weights,
// activation, graphs, non-torch: requested - KV at that point) and blocks per request. Per row:
// requested = ceil(total x u); kv = requested - reserved; blocks = kv / block bytes; tokens;
// concurrency = blocks / blocks per request; the outcome by thresholds. Because the reserved
// bytes differ per point, the divisions stay in the inner loop, as in the sweep: BM_Sweep /
// BM_SweepFloor is what the general evaluation costs beyond this closed form and its stores.
void BM_SweepFloor(benchmark::State& state) {
  const Launch& launch = kLaunches[state.range(0)];
  const auto compiled_launch = compiled(launch);
  const vramplan::SweepGrid grid = sweep_grid(*compiled_launch);
  const std::size_t rows = static_cast<std::size_t>(vramplan::sweep_size(grid));
  SweepOutput output(rows);
  const vramplan::SweepColumns out = output.columns();
  const std::int64_t total = compiled_launch->hardware().gpu.total_memory_bytes;
  const std::int64_t free_bytes = compiled_launch->startup_free_bytes();
  struct Point {
    std::int64_t len, seqs, batched_tokens, reserved, per_request;
  };
  std::vector<Point> points;
  std::int64_t block_bytes = 0;
  std::int64_t block_size = 0;
  for (const std::int64_t len : grid.max_model_len) {
    for (const std::int64_t seqs : grid.max_num_seqs) {
      vramplan::LaunchKnobs knobs;
      knobs.max_model_len = len;
      knobs.max_num_seqs = seqs;
      const vramplan::ResolvedKnobs resolved = compiled_launch->resolve(knobs);
      const vramplan::RankEvaluation rank = compiled_launch->evaluate_rank(0, resolved);
      block_bytes = rank.page.page_bytes * compiled_launch->ranks().front().kv.group_size;
      block_size = rank.page.block_size;
      points.push_back({len, seqs, resolved.max_num_batched_tokens,
                        rank.requested_memory_bytes - rank.kv_cache_bytes,
                        (len + block_size - 1) / block_size});
    }
  }
  for (auto _ : state) {
    std::size_t i = 0;
    for (const double u : grid.gpu_memory_utilization) {
      const auto requested = static_cast<std::int64_t>(std::ceil(static_cast<double>(total) * u));
      for (const Point& p : points) {
        const std::int64_t kv = requested - p.reserved;
        const std::int64_t blocks = kv > 0 ? kv / block_bytes : 0;
        vramplan::Outcome outcome = vramplan::Outcome::Started;
        if (requested > free_bytes) {
          outcome = vramplan::Outcome::StartupFreeMemory;
        } else if (kv <= 0) {
          outcome = vramplan::Outcome::NoKvMemory;
        } else if (p.per_request * block_bytes > kv) {
          outcome = vramplan::Outcome::InsufficientKvForMaxModelLen;
        }
        const double concurrency = static_cast<double>(blocks) / static_cast<double>(p.per_request);
        out.gpu_memory_utilization[i] = u;
        out.max_model_len[i] = p.len;
        out.max_num_seqs[i] = p.seqs;
        out.max_num_batched_tokens[i] = p.batched_tokens;
        out.kv_cache_bytes[i] = kv;
        out.kv_tokens[i] = static_cast<std::int64_t>(concurrency * static_cast<double>(p.len));
        out.max_concurrency[i] = concurrency;
        out.outcome[i] = static_cast<std::int8_t>(outcome);
        ++i;
      }
    }
    benchmark::DoNotOptimize(out.outcome);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(rows));
  state.SetLabel(launch.model);
}
BENCHMARK(BM_SweepFloor)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

}  // namespace

// Count every heap allocation of the process (single-threaded benchmarks).
void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

BENCHMARK_MAIN();
