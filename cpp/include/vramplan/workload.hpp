// The traffic a server sees, as a distribution of request shapes, and what it asks of a KV
// cache: blocks per request as vLLM allocates them, how many requests the cache holds, and the
// probability that `max_num_seqs` busy slots need more blocks than it has (preemption).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace vramplan {

// One request shape and how often it occurs.
struct RequestShape {
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  double probability = 0.0;
};

// Shapes a workload keeps: more distinct ones are binned (workload_from_requests).
constexpr std::size_t kMaxWorkloadShapes = 64;
// Requests a workload file may hold, and tokens one request may have.
constexpr std::int64_t kMaxWorkloadRequests = 10'000'000;
constexpr std::int64_t kMaxRequestTokens = std::int64_t{1} << 40;

struct Workload {
  std::vector<RequestShape> shapes;  // probabilities sum to 1; at most kMaxWorkloadShapes
  std::int64_t prefix_tokens = 0;    // a prefix every request shares (prefix caching)
  double preemption_target = 0.01;   // the largest acceptable overflow probability
  double request_seconds = 0.0;      // mean seconds a request holds its slot (0: not given)
  std::string description;           // where the shapes came from, in words
  bool empty() const noexcept { return shapes.empty(); }
};

// Observed requests (prompt, output, count): each distinct shape with its frequency. Beyond
// kMaxWorkloadShapes distinct shapes, equal-count bins of the requests sorted by total tokens,
// each shape the largest prompt and output of its bin (every request rounded up). Throws
// ConfigError naming `field` for a negative or oversized count or token figure.
Workload workload_from_requests(const std::vector<RequestShape>& observed,
                                const std::string& field);

// Prompt and output tokens given as (p50, p99): a log-normal through both percentiles for each,
// prompt and output at the same quantile (long prompts with long answers: the sum's upper tail
// is not thinned), in kPercentileBins equal-probability bins, each at its middle quantile.
constexpr int kPercentileBins = 32;
Workload workload_from_percentiles(std::int64_t prompt_p50, std::int64_t prompt_p99,
                                   std::int64_t output_p50, std::int64_t output_p99);

// The workload in a launch's KV blocks: blocks one request holds at its peak, per shape.
struct BlockDistribution {
  std::array<std::int64_t, kMaxWorkloadShapes> blocks{};
  std::array<double, kMaxWorkloadShapes> probability{};
  std::size_t count = 0;
  std::int64_t shared_blocks = 0;  // full prefix blocks held once for every request
};

// Probability that `slots` requests drawn independently from `d`, each at its peak, need more
// than `pool_blocks` blocks (the shared prefix counted once). Exact (a binomial sum) when the
// distribution has at most two distinct block counts; otherwise the normal approximation of the
// sum with a continuity correction (docs/traffic.md).
double overflow_probability(const BlockDistribution& d, std::int64_t slots,
                            std::int64_t pool_blocks) noexcept;

// The block count at quantile q of `d` (smallest b with P(blocks <= b) >= q).
std::int64_t block_quantile(const BlockDistribution& d, double q) noexcept;

// The standard normal quantile (Acklam's rational approximation, |error| < 1.2e-9).
double normal_quantile(double p) noexcept;

}  // namespace vramplan
