// How fast the planner answers: one breakdown, one full solve, and a sweep of one million
// launch configurations (the use that needs the core in C++). Heap allocations per call are
// counted with a replacement operator new, so the "allocation-light" claim has a number.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>

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

void BM_Solve(benchmark::State& state) {
  const Launch& launch = kLaunches[state.range(0)];
  const vramplan::ModelSpec& spec = database().model(launch.model);
  vramplan::SolveRequest request;
  request.hardware = hardware(launch);
  request.pinned.tensor_parallel_size = launch.tensor_parallel_size;
  request.target_context_tokens = 32768;
  const std::int64_t before = g_allocations.load();
  for (auto _ : state) {
    benchmark::DoNotOptimize(vramplan::solve(spec, request).max_num_seqs);
  }
  report_allocations(state, before);
  state.SetLabel(launch.model);
}
BENCHMARK(BM_Solve)->DenseRange(0, 2);

// One million launch points for Qwen3-30B-A3B on H100s: 16 utilizations x 8 context lengths
// (256 .. 32768, the model's 40960 caps them) x 8 sequence limits x 4 TP degrees = 4,096
// points per pass, 245 passes (1,003,520 points).
void BM_Sweep1M(benchmark::State& state) {
  const vramplan::ModelSpec& spec = database().model("Qwen/Qwen3-30B-A3B");
  vramplan::HardwareConfig hw;
  hw.gpu = database().gpu("H100-80GB");
  hw.num_gpus = 8;
  std::int64_t points = 0;
  std::int64_t fitting = 0;
  for (auto _ : state) {
    for (int pass = 0; pass < 245; ++pass) {
      for (int tp : {1, 2, 4, 8}) {
        vramplan::EngineConfig config;
        config.engine_version = "0.19.0";
        config.tensor_parallel_size = tp;
        for (int u = 0; u < 16; ++u) {
          config.gpu_memory_utilization = 0.80 + 0.01 * u;
          for (std::int64_t len = 256; len <= 32768; len *= 2) {
            config.max_model_len = len;
            for (std::int64_t seqs = 8; seqs <= 1024; seqs *= 2) {
              config.max_num_seqs = seqs;
              const vramplan::Breakdown b = vramplan::compute_breakdown(spec, hw, config);
              fitting += b.outcome == vramplan::Outcome::Started;
              ++points;
            }
          }
        }
      }
    }
  }
  state.SetItemsProcessed(points);
  state.counters["fitting_fraction"] =
      static_cast<double>(fitting) / static_cast<double>(points > 0 ? points : 1);
}
BENCHMARK(BM_Sweep1M)->Iterations(1)->Unit(benchmark::kMillisecond);

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
