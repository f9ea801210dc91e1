#include "vramplan/workload.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "vramplan/errors.hpp"

namespace vramplan {
namespace {

void check_tokens(const std::string& field, const char* what, std::int64_t tokens,
                  std::int64_t lowest) {
  if (tokens < lowest || tokens > kMaxRequestTokens) {
    throw ConfigError(field + "." + what, std::to_string(tokens),
                      std::to_string(lowest) + " .. " + std::to_string(kMaxRequestTokens),
                      "token count out of range");
  }
}

// P(X >= k0) for X ~ Binomial(n, q), summed from k0 away from the mean (or its complement from
// k0 - 1 down), so the loop stops once the terms vanish.
double binomial_upper_tail(std::int64_t n, double q, std::int64_t k0) noexcept {
  if (k0 <= 0) return 1.0;
  if (k0 > n) return 0.0;
  if (q <= 0.0) return 0.0;
  if (q >= 1.0) return 1.0;
  const auto log_pmf = [&](std::int64_t k) {
    const double nd = static_cast<double>(n);
    const double kd = static_cast<double>(k);
    return std::lgamma(nd + 1.0) - std::lgamma(kd + 1.0) - std::lgamma(nd - kd + 1.0) +
           kd * std::log(q) + (nd - kd) * std::log1p(-q);
  };
  const double ratio = q / (1.0 - q);
  const bool upper = static_cast<double>(k0) >= static_cast<double>(n) * q;
  // Upper side: sum pmf(k0..n). Lower side: 1 - sum pmf(0..k0-1), summed from k0-1 down.
  std::int64_t k = upper ? k0 : k0 - 1;
  double term = std::exp(log_pmf(k));
  double sum = 0.0;
  while (term > 0.0) {
    sum += term;
    if (term < sum * 1e-17) break;
    if (upper) {
      if (k == n) break;
      term *= static_cast<double>(n - k) / static_cast<double>(k + 1) * ratio;
      ++k;
    } else {
      if (k == 0) break;
      term *= static_cast<double>(k) / static_cast<double>(n - k + 1) / ratio;
      --k;
    }
  }
  return upper ? std::min(1.0, sum) : std::max(0.0, 1.0 - sum);
}

double standard_normal_upper_tail(double z) noexcept { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace

double normal_quantile(double p) noexcept {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double low = 0.02425;
  if (!(p > 0.0 && p < 1.0)) return p <= 0.0 ? -INFINITY : INFINITY;
  const auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  };
  if (p < low) return tail(std::sqrt(-2.0 * std::log(p)));
  if (p > 1.0 - low) return -tail(std::sqrt(-2.0 * std::log1p(-p)));
  const double q = p - 0.5;
  const double r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
}

Workload workload_from_requests(const std::vector<RequestShape>& observed,
                                const std::string& field) {
  if (observed.empty()) {
    throw ConfigError(field, "no requests", "at least one request", "empty workload");
  }
  if (static_cast<std::int64_t>(observed.size()) > kMaxWorkloadRequests) {
    throw ConfigError(field, std::to_string(observed.size()) + " rows",
                      "<= " + std::to_string(kMaxWorkloadRequests), "too many requests");
  }
  std::vector<RequestShape> shapes = observed;
  double total = 0.0;
  for (const RequestShape& s : shapes) {
    check_tokens(field, "prompt_tokens", s.prompt_tokens, 1);
    check_tokens(field, "output_tokens", s.output_tokens, 0);
    if (!std::isfinite(s.probability) || s.probability < 0.0 ||
        s.probability > static_cast<double>(kMaxWorkloadRequests)) {
      throw ConfigError(field + ".count", std::to_string(s.probability),
                        "0 .. " + std::to_string(kMaxWorkloadRequests), "request count");
    }
    total += s.probability;
  }
  if (!(total > 0.0)) throw ConfigError(field + ".count", "0", "> 0", "no request counted");
  // Distinct shapes, ordered by total tokens (then prompt) so that bins hold neighbours.
  std::sort(shapes.begin(), shapes.end(), [](const RequestShape& x, const RequestShape& y) {
    const std::int64_t tx = x.prompt_tokens + x.output_tokens;
    const std::int64_t ty = y.prompt_tokens + y.output_tokens;
    return tx != ty ? tx < ty : x.prompt_tokens < y.prompt_tokens;
  });
  std::vector<RequestShape> merged;
  for (const RequestShape& s : shapes) {
    if (s.probability <= 0.0) continue;
    if (!merged.empty() && merged.back().prompt_tokens == s.prompt_tokens &&
        merged.back().output_tokens == s.output_tokens) {
      merged.back().probability += s.probability;
    } else {
      merged.push_back(s);
    }
  }
  Workload w;
  if (merged.size() <= kMaxWorkloadShapes) {
    for (RequestShape& s : merged) s.probability /= total;
    w.shapes = std::move(merged);
    w.description = std::to_string(w.shapes.size()) + " request shapes";
    return w;
  }
  // Equal-weight bins: each takes requests until it holds total / kMaxWorkloadShapes.
  const double per_bin = total / static_cast<double>(kMaxWorkloadShapes);
  RequestShape bin;
  for (const RequestShape& s : merged) {
    bin.prompt_tokens = std::max(bin.prompt_tokens, s.prompt_tokens);
    bin.output_tokens = std::max(bin.output_tokens, s.output_tokens);
    bin.probability += s.probability;
    if (bin.probability >= per_bin * (1.0 - 1e-12) && w.shapes.size() + 1 < kMaxWorkloadShapes) {
      w.shapes.push_back(bin);
      bin = RequestShape{};
    }
  }
  if (bin.probability > 0.0) w.shapes.push_back(bin);
  for (RequestShape& s : w.shapes) s.probability /= total;
  w.description = std::to_string(merged.size()) + " request shapes in " +
                  std::to_string(w.shapes.size()) + " bins, each at its largest request";
  return w;
}

Workload workload_from_percentiles(std::int64_t prompt_p50, std::int64_t prompt_p99,
                                   std::int64_t output_p50, std::int64_t output_p99) {
  const std::string field = "workload";
  check_tokens(field, "prompt_tokens p50", prompt_p50, 1);
  check_tokens(field, "prompt_tokens p99", prompt_p99, prompt_p50);
  check_tokens(field, "output_tokens p50", output_p50, 1);
  check_tokens(field, "output_tokens p99", output_p99, output_p50);
  const double z99 = normal_quantile(0.99);
  const double prompt_sigma =
      std::log(static_cast<double>(prompt_p99) / static_cast<double>(prompt_p50)) / z99;
  const double output_sigma =
      std::log(static_cast<double>(output_p99) / static_cast<double>(output_p50)) / z99;
  std::vector<RequestShape> bins;
  for (int i = 0; i < kPercentileBins; ++i) {
    const double z = normal_quantile((i + 0.5) / kPercentileBins);
    const auto at = [z](std::int64_t p50, double sigma) {
      const double tokens = static_cast<double>(p50) * std::exp(sigma * z);
      return std::clamp<std::int64_t>(std::llround(tokens), 1, kMaxRequestTokens);
    };
    bins.push_back({at(prompt_p50, prompt_sigma), at(output_p50, output_sigma), 1.0});
  }
  Workload w = workload_from_requests(bins, field);
  w.description = "prompt tokens p50 " + std::to_string(prompt_p50) + " / p99 " +
                  std::to_string(prompt_p99) + ", output tokens p50 " + std::to_string(output_p50) +
                  " / p99 " + std::to_string(output_p99) + " (log-normal through both, " +
                  std::to_string(kPercentileBins) + " equal-probability bins)";
  return w;
}

double overflow_probability(const BlockDistribution& d, std::int64_t slots,
                            std::int64_t pool_blocks) noexcept {
  if (slots <= 0 || d.count == 0) return 0.0;
  const std::int64_t room = pool_blocks - d.shared_blocks;  // for the requests' own blocks
  if (room < 0) return 1.0;
  // Two distinct block counts at most: the exact binomial sum over the larger one's count.
  std::int64_t low = d.blocks[0];
  std::int64_t high = d.blocks[0];
  double high_probability = 0.0;
  bool two_point = true;
  for (std::size_t i = 0; i < d.count; ++i) {
    low = std::min(low, d.blocks[i]);
    high = std::max(high, d.blocks[i]);
  }
  for (std::size_t i = 0; i < d.count; ++i) {
    if (d.blocks[i] == high && high != low) {
      high_probability += d.probability[i];
    } else if (d.blocks[i] != low) {
      two_point = false;
    }
  }
  if (low == high) return slots * low > room ? 1.0 : 0.0;
  if (two_point) {
    // slots x low + k x (high - low) > room  <=>  k >= floor((room - slots x low) / step) + 1.
    const std::int64_t spare = room - slots * low;
    if (spare < 0) return 1.0;
    return binomial_upper_tail(slots, high_probability, spare / (high - low) + 1);
  }
  double mean = 0.0;
  double second = 0.0;
  for (std::size_t i = 0; i < d.count; ++i) {
    const double b = static_cast<double>(d.blocks[i]);
    mean += d.probability[i] * b;
    second += d.probability[i] * b * b;
  }
  const double n = static_cast<double>(slots);
  const double sd = std::sqrt(std::max(0.0, second - mean * mean) * n);
  if (sd <= 0.0) return n * mean > static_cast<double>(room) ? 1.0 : 0.0;
  // P(sum >= room + 1) with the continuity correction: the sum is an integer.
  return standard_normal_upper_tail((static_cast<double>(room) + 0.5 - n * mean) / sd);
}

std::int64_t block_quantile(const BlockDistribution& d, double q) noexcept {
  std::array<std::size_t, kMaxWorkloadShapes> order{};
  std::iota(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(d.count), std::size_t{0});
  std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(d.count),
            [&](std::size_t x, std::size_t y) { return d.blocks[x] < d.blocks[y]; });
  double cumulative = 0.0;
  for (std::size_t i = 0; i < d.count; ++i) {
    cumulative += d.probability[order[i]];
    if (cumulative >= q - 1e-12) return d.blocks[order[i]];
  }
  return d.count > 0 ? d.blocks[order[d.count - 1]] : 0;
}

}  // namespace vramplan
