// HiCache's host pools (--enable-hierarchical-cache) as SGLang sizes, checks and allocates them.
// Sources (wheels read, not installed): 0.4.6.post5 mem_cache/memory_pool.py:HostKVCache and
// 0.4.10.post2 mem_cache/memory_pool_host.py:HostKVCache (the WholeHost rule); 0.5.23
// mem_cache/pool_host/base.py:HostKVCache / host_memory_budget_bytes, pool_host/mamba.py,
// hicache_auto_size.py, hybrid_cache/hybrid_pool_assembler.py:_split_hicache_size,
// pool_host/common.py:alloc_with_host_register, storage/mmap/mmap_allocator.py:alloc_mmap and
// arg_groups/hicache_hook.py (the PerHostRank rule).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "vramplan/errors.hpp"
#include "vramplan/sglang.hpp"

namespace vramplan {
namespace {

// hicache_auto_size.py:_ALLOCATION_SLACK_FRACTION: page rounding and staging buffers the
// auto-sized ratio leaves room for.
constexpr double kAutoSizeSlackFraction = 0.05;
// alloc_mmap rounds the mapping to mmap.PAGESIZE.
constexpr std::int64_t kHostPageBytes = 4096;
constexpr double kDecimalGb = 1e9;

std::int64_t power_of_two_ceil(std::int64_t bytes) noexcept {
  std::int64_t out = 1;
  while (out < bytes) out <<= 1;
  return out;
}

// Python's a // b for a possibly negative a.
std::int64_t floor_div(std::int64_t a, std::int64_t b) noexcept {
  const std::int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// One host pool's tokens: a fixed share of --hicache-size (decimal GB) or the ratio of the
// device pool's, then SGLang's page rounding.
std::int64_t host_tokens(const SglangRules& rules, double size_gb, double ratio,
                         std::int64_t device_tokens, std::int64_t bytes_per_token,
                         std::int64_t page) noexcept {
  const double raw = size_gb > 0.0
                         ? std::floor(size_gb * kDecimalGb / static_cast<double>(bytes_per_token))
                         : std::floor(static_cast<double>(device_tokens) * ratio);
  const auto tokens = static_cast<std::int64_t>(raw);
  if (rules.hicache_rule == SglangHicacheRule::WholeHost) return tokens - tokens % page;
  return (tokens / page + 1) * page;  // page_num = size // page_size + 1 (a padding page)
}

SglangHicachePool host_pool(const SglangRules& rules, std::int64_t tokens,
                            std::int64_t bytes_per_token) noexcept {
  SglangHicachePool pool;
  pool.tokens = tokens;
  pool.bytes_per_token = bytes_per_token;
  pool.bytes = tokens * bytes_per_token;
  pool.pinned_bytes = rules.hicache_pinned_power_of_two
                          ? power_of_two_ceil(pool.bytes)
                          : (pool.bytes + kHostPageBytes - 1) / kHostPageBytes * kHostPageBytes;
  return pool;
}

// The pools' fixed sizes: the whole --hicache-size for the full pool; with the split, each
// pool's share by device bytes, else each pool the whole size (sglang#29034).
struct FixedShares {
  double full = 0.0;
  double swa = 0.0;
  double mamba = 0.0;
};
FixedShares fixed_shares(const SglangRules& rules, double size_gb,
                         const SglangHicacheDevice& d) noexcept {
  FixedShares s{size_gb, d.swa_tokens > 0 ? size_gb : 0.0, d.mamba_slots > 0 ? size_gb : 0.0};
  const auto total =
      static_cast<double>(d.full_pool_bytes + (d.swa_tokens > 0 ? d.swa_pool_bytes : 0) +
                          (d.mamba_slots > 0 ? d.mamba_pool_bytes : 0));
  if (!rules.hicache_size_split || total <= 0.0 || (s.swa == 0.0 && s.mamba == 0.0)) return s;
  s.full = size_gb * static_cast<double>(d.full_pool_bytes) / total;
  if (s.swa > 0.0) s.swa = size_gb * static_cast<double>(d.swa_pool_bytes) / total;
  if (s.mamba > 0.0) s.mamba = size_gb * static_cast<double>(d.mamba_pool_bytes) / total;
  return s;
}

// The ratio: given, else the row's default, auto-sized down to the host in releases that do.
// False when auto-sizing finds no host memory left.
bool resolve_ratio(const SglangRules& rules, const SglangConfig& c, const SglangHicacheDevice& d,
                   SglangHicache& h) noexcept {
  h.ratio = c.hicache_ratio.value_or(rules.hicache_ratio_default);
  const bool auto_size = rules.hicache_host_memory_fraction_default > 0.0 && !c.hicache_ratio &&
                         c.hicache_size_gb <= 0 && c.host_mem_available_bytes.has_value();
  if (!auto_size) return true;
  const std::int64_t share =
      floor_div(*c.host_mem_available_bytes - rules.hicache_host_reserve_bytes, d.ranks_per_node);
  h.budget_bytes = static_cast<std::int64_t>(static_cast<double>(share) *
                                             rules.hicache_host_memory_fraction_default);
  const auto device_bytes =
      static_cast<double>(d.full_pool_bytes + d.swa_pool_bytes + d.mamba_pool_bytes);
  h.ratio = std::min(
      h.ratio, static_cast<double>(h.budget_bytes) * (1.0 - kAutoSizeSlackFraction) / device_bytes);
  h.auto_sized = true;
  return h.ratio > 0.0;
}

// SGLang's host-memory check of each pool in allocation order (full, SWA, Mamba); false at the
// first refused pool.
bool check_host_memory(const SglangRules& rules, const SglangConfig& c,
                       const SglangHicacheDevice& d, SglangHicache& h) noexcept {
  if (!c.host_mem_available_bytes) return true;
  const std::int64_t available = *c.host_mem_available_bytes;
  const std::int64_t after_reserve = available - rules.hicache_host_reserve_bytes;
  if (rules.hicache_rule == SglangHicacheRule::WholeHost) {
    // Each rank checks its one pool against the whole host, unaware of the other ranks.
    h.budget_bytes = after_reserve;
    if (h.full.bytes <= after_reserve) return true;
    h.refusal = SglangHicacheRefusal::NotEnoughHostMemory;
    h.refused_request_bytes = h.full.bytes;
    h.refused_free_bytes = rules.hicache_error_free_after_reserve ? after_reserve : available;
    return false;
  }
  // The rank's share of the host; each pool books against what the earlier ones left.
  if (!h.auto_sized) h.budget_bytes = floor_div(after_reserve, d.ranks_per_node);
  std::int64_t left = h.budget_bytes;
  for (const SglangHicachePool* pool : {&h.full, &h.swa, &h.mamba}) {
    if (pool->tokens == 0) continue;
    if (pool->bytes > left) {
      h.refusal = SglangHicacheRefusal::NotEnoughHostMemory;
      h.refused_request_bytes = pool->bytes;
      h.refused_free_bytes = left;
      return false;
    }
    left -= pool->bytes;
  }
  return true;
}

std::string gb_text(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(bytes) / kDecimalGb);
  return text;
}

}  // namespace

SglangHicache sglang_hicache(const SglangRules& rules, const SglangConfig& c,
                             const SglangHicacheDevice& d) noexcept {
  SglangHicache h;
  if (!c.enable_hierarchical_cache) return h;
  h.enabled = true;
  h.size_gb = c.hicache_size_gb;
  h.ranks_per_node = d.ranks_per_node;
  const bool hybrid = d.swa_tokens > 0 || d.mamba_slots > 0;
  if (hybrid && rules.hicache_rule == SglangHicacheRule::WholeHost) {
    h.refusal = SglangHicacheRefusal::HybridModel;
    return h;
  }
  if (!resolve_ratio(rules, c, d, h)) {
    h.refusal = SglangHicacheRefusal::NoHostMemoryLeft;
    return h;
  }
  const FixedShares shares = fixed_shares(rules, static_cast<double>(c.hicache_size_gb), d);
  h.full = host_pool(
      rules,
      host_tokens(rules, shares.full, h.ratio, d.full_tokens, d.full_bytes_per_token, d.page_size),
      d.full_bytes_per_token);
  if (d.swa_tokens > 0) {
    h.swa = host_pool(
        rules,
        host_tokens(rules, shares.swa, h.ratio, d.swa_tokens, d.swa_bytes_per_token, d.page_size),
        d.swa_bytes_per_token);
  }
  if (d.mamba_slots > 0) {
    // MambaPoolHost pages one slot at a time.
    h.mamba = host_pool(
        rules, host_tokens(rules, shares.mamba, h.ratio, d.mamba_slots, d.mamba_bytes_per_slot, 1),
        d.mamba_bytes_per_slot);
  }
  h.host_bytes_per_rank = h.full.bytes + h.swa.bytes + h.mamba.bytes;
  h.pinned_bytes_per_rank = h.full.pinned_bytes + h.swa.pinned_bytes + h.mamba.pinned_bytes;
  h.pinned_bytes_per_node = h.pinned_bytes_per_rank * d.ranks_per_node;
  if (rules.hicache_rule == SglangHicacheRule::WholeHost && h.full.tokens <= d.full_tokens) {
    h.refusal = SglangHicacheRefusal::NotLargerThanDevice;
    return h;
  }
  check_host_memory(rules, c, d, h);
  return h;
}

std::string sglang_hicache_error(const SglangHicache& h) {
  switch (h.refusal) {
    case SglangHicacheRefusal::None:
      return "";
    case SglangHicacheRefusal::HybridModel:
      return "HiRadixCache only supports MHA and MLA yet";
    case SglangHicacheRefusal::NotLargerThanDevice:
      return "AssertionError: The host memory should be larger than the device memory with the "
             "current protocol";
    case SglangHicacheRefusal::NoHostMemoryLeft:
      return "No host memory is left for HiCache after the 10 GiB reserve; set --hicache-ratio "
             "or --hicache-size explicitly.";
    case SglangHicacheRefusal::NotEnoughHostMemory:
      return "Not enough host memory available. Requesting " + gb_text(h.refused_request_bytes) +
             " GB but only have " + gb_text(h.refused_free_bytes) +
             " GB free. Please reduce the size of the hierarchical cache.";
  }
  return "";
}

void check_sglang_hicache_config(const SglangRules& rules, const SglangConfig& c) {
  if (c.hicache_ratio && !(*c.hicache_ratio > 0.0 && *c.hicache_ratio <= 1000.0)) {
    throw ConfigError("hicache_ratio", std::to_string(*c.hicache_ratio), "(0, 1000]",
                      "out of range");
  }
  if (c.hicache_size_gb < 0 || c.hicache_size_gb > 1000000) {
    throw ConfigError("hicache_size", std::to_string(c.hicache_size_gb), "0..1000000 (GB)",
                      "out of range");
  }
  if (c.nnodes < 1 || c.nnodes > 1024) {
    throw ConfigError("nnodes", std::to_string(c.nnodes), "1..1024", "out of range");
  }
  if (c.host_mem_available_bytes && *c.host_mem_available_bytes < 0) {
    throw ConfigError("host_mem_available_bytes", std::to_string(*c.host_mem_available_bytes),
                      ">= 0", "out of range");
  }
  if (c.hicache_mem_layout.empty()) return;
  if (rules.hicache_mem_layouts.empty()) {
    throw ConfigError("hicache_mem_layout", "'" + c.hicache_mem_layout + "'", "",
                      "SGLang " + rules.release + " has no --hicache-mem-layout");
  }
  const auto& layouts = rules.hicache_mem_layouts;
  if (std::find(layouts.begin(), layouts.end(), c.hicache_mem_layout) == layouts.end()) {
    std::string choices;
    for (const std::string& layout : layouts) choices += (choices.empty() ? "" : ", ") + layout;
    throw ConfigError(
        "hicache_mem_layout", "'" + c.hicache_mem_layout + "'", choices,
        "argument --hicache-mem-layout: invalid choice (SGLang " + rules.release + ")");
  }
}

}  // namespace vramplan
