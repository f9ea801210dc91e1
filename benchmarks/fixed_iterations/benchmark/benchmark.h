// The part of Google Benchmark's API that bench_vramplan.cpp uses, running each benchmark for a
// fixed number of iterations and timing nothing: built in place of the library by
// benchmarks/compare_callgrind.sh, so that instructions counted under callgrind with N and M
// iterations differ by exactly N - M calls (Google Benchmark 1.7 has no fixed iteration count
// on its command line). Run: vramplan_bench_fixed REGEX ITERATIONS; prints each matching
// benchmark's name and its counters per call, in the order run.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace benchmark {

enum TimeUnit { kNanosecond, kMicrosecond, kMillisecond };

struct Counter {
  enum Flags { kDefaults = 0, kAvgIterations = 1 };
  Counter(double v = 0.0, Flags f = kDefaults) : value(v), flags(f) {}  // NOLINT: as the library
  double value;
  Flags flags;
};

template <class T>
inline void DoNotOptimize(const T& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}
inline void ClobberMemory() { asm volatile("" : : : "memory"); }

class State {
 public:
  State(std::int64_t arg, std::int64_t iterations) : arg_(arg), iterations_(iterations) {}
  std::int64_t range(int) const { return arg_; }
  std::int64_t iterations() const { return iterations_; }
  void SetLabel(const std::string&) {}
  void SetItemsProcessed(std::int64_t) {}
  std::map<std::string, Counter> counters;

  struct __attribute__((unused)) Value {};  // as the library: `for (auto _ : state)` warns not
  struct Iterator {
    std::int64_t left;
    bool operator!=(const Iterator& other) const { return left != other.left; }
    Iterator& operator++() {
      --left;
      return *this;
    }
    Value operator*() const { return {}; }
  };
  Iterator begin() const { return {iterations_}; }
  Iterator end() const { return {0}; }

 private:
  std::int64_t arg_;
  std::int64_t iterations_;
};

struct Benchmark {
  std::string name;
  void (*run)(State&);
  std::vector<std::int64_t> args;
  Benchmark* DenseRange(std::int64_t lo, std::int64_t hi) {
    for (std::int64_t a = lo; a <= hi; ++a) args.push_back(a);
    return this;
  }
  Benchmark* Arg(std::int64_t a) { return DenseRange(a, a); }
  Benchmark* Unit(TimeUnit) { return this; }
};

inline std::vector<Benchmark>& registry() {
  static std::vector<Benchmark> benchmarks;
  return benchmarks;
}

// The pointer serves only the builder calls of the registering statement (the vector may grow).
inline Benchmark* Register(const char* name, void (*run)(State&)) {
  registry().push_back({name, run, {}});
  return &registry().back();
}

}  // namespace benchmark

// One benchmark's run, kept out of line and uncloned (noipa: LTO made a .constprop copy):
// callgrind's --dump-before on this name starts a new profile part per benchmark, so one
// process measures every benchmark apart.
extern "C" [[gnu::noipa]] inline void vramplan_fixed_iterations_run(void (*run)(benchmark::State&),
                                                                    benchmark::State* state) {
  run(*state);
}

namespace benchmark {

inline int RunFixed(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s REGEX ITERATIONS\n", argv[0]);
    return 2;
  }
  const std::regex filter(argv[1]);
  const std::int64_t iterations = std::atoll(argv[2]);
  for (const Benchmark& b : registry()) {
    for (const std::int64_t arg : b.args) {
      const std::string name = b.name + "/" + std::to_string(arg);
      if (!std::regex_search(name, filter)) continue;
      // One call first, so that what a process initialises once (the spec database, engine
      // rows) is counted by neither run nor the allocation counter.
      State warm_up(arg, 1);
      b.run(warm_up);
      State state(arg, iterations);
      vramplan_fixed_iterations_run(b.run, &state);
      std::printf("%s", name.c_str());
      for (const auto& [counter, c] : state.counters) {
        const double per_call = c.flags == Counter::kAvgIterations
                                    ? c.value / static_cast<double>(iterations)
                                    : c.value;
        std::printf(" %s=%.2f", counter.c_str(), per_call);
      }
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace benchmark

#define VRAMPLAN_BENCH_CAT2(a, b) a##b
#define VRAMPLAN_BENCH_CAT(a, b) VRAMPLAN_BENCH_CAT2(a, b)
#define BENCHMARK(fn)                                                                         \
  [[maybe_unused]] static ::benchmark::Benchmark* VRAMPLAN_BENCH_CAT(registered_, __LINE__) = \
      ::benchmark::Register(#fn, fn)
#define BENCHMARK_MAIN() \
  int main(int argc, char** argv) { return ::benchmark::RunFixed(argc, argv); }
