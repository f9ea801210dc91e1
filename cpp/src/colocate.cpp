#include "vramplan/colocate.hpp"

#include <algorithm>
#include <string>

#include "vramplan/errors.hpp"

namespace vramplan {

std::int64_t resident_bytes(const Breakdown& started) {
  if (started.outcome != Outcome::Started) {
    throw ConfigError("instance", started.model_id, "a launch that starts",
                      std::string("it does not start (") + outcome_name(started.outcome) +
                          "), so it holds no memory to count");
  }
  const bool graphs_in_budget = started.profile().cudagraph_in_budget;
  std::int64_t fullest = 0;
  for (const RankBreakdown& rank : started.ranks) {
    const std::int64_t in_budget_graphs = graphs_in_budget ? rank.cudagraph_bytes : 0;
    const std::int64_t workspaces =
        std::max(rank.activation_peak_bytes + in_budget_graphs +
                     std::max<std::int64_t>(0, rank.post_allocation_bytes),
                 rank.cudagraph_bytes);
    const std::int64_t held = rank.cuda_context_bytes + rank.weights_bytes + rank.non_torch_bytes +
                              std::max<std::int64_t>(0, rank.kv_cache_bytes) + workspaces;
    fullest = std::max(fullest, held);
  }
  return fullest;
}

}  // namespace vramplan
