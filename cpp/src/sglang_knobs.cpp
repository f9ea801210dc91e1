// SGLang's knob table (sglang_knobs.hpp): ServerArgs names and launch_server flags, ranges as
// sglang_breakdown checks them, defaults from the model_specs/sglang.yaml rows.
#include "vramplan/sglang_knobs.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

#include "vramplan/errors.hpp"

namespace vramplan {
namespace {

constexpr double kMaxRequests = 1 << 24;
constexpr double kMaxTokens = static_cast<double>(std::int64_t{1} << 40);

// SGLang's knobs set SglangConfig (set_sglang_knob), so the EngineConfig accessors are null.
#define VRAMPLAN_SGLANG_KNOB nullptr, nullptr, false

const std::vector<KnobSpec> kSglangKnobs = {
    {"sglang_version", KnobType::Text, "SGLang version", 0, 0, "", KnobDefault::SglangRow,
     "the newest release model_specs/sglang.yaml was read from",
     "SGLang release whose memory rules apply (e.g. 0.4.10, 0.5.23)", "", "", 1,
     VRAMPLAN_SGLANG_KNOB},
    {"tp_size", KnobType::Integer, "GPUs", 1, 1024, "", KnobDefault::Stated, "1",
     "GPUs each layer is split over", "--tp-size", "tp_size", 1, VRAMPLAN_SGLANG_KNOB},
    {"pp_size", KnobType::Integer, "GPUs", 1, 1024, "", KnobDefault::Stated, "1",
     "pipeline stages (the layers are split over them)", "--pp-size", "pp_size", 1,
     VRAMPLAN_SGLANG_KNOB},
    {"dp_size", KnobType::Integer, "replicas", 1, 1024, "", KnobDefault::Stated, "1",
     "data-parallel replicas, each on its own tp_size x pp_size GPUs", "--dp-size", "dp_size", 1,
     VRAMPLAN_SGLANG_KNOB},
    {"mem_fraction_static", KnobType::Fraction, "fraction of the free memory baseline", 0.001,
     0.999, "", KnobDefault::SglangRow,
     "the release's formula of GPU memory, chunk, graphs, TP x PP",
     "share of the baseline B for weights and the KV pool; B x (1 - f) is the slack left for "
     "CUDA graphs, activations and the req_to_token table",
     "--mem-fraction-static", "mem_fraction_static", 1, VRAMPLAN_SGLANG_KNOB},
    {"context_length", KnobType::Integer, "tokens", 1, kMaxTokens, "", KnobDefault::ModelContext,
     "the model's max_position_embeddings", "longest request (prompt + output)", "--context-length",
     "context_length", 1, VRAMPLAN_SGLANG_KNOB},
    {"max_running_requests", KnobType::Integer, "requests", 1, kMaxRequests, "",
     KnobDefault::SglangRow, "the release's request rule from the pool size",
     "requests decoded at once; sizes the req_to_token table", "--max-running-requests",
     "max_running_requests", 1, VRAMPLAN_SGLANG_KNOB},
    {"max_total_tokens", KnobType::Integer, "tokens", 1, kMaxTokens, "", KnobDefault::Stated,
     "unset: the tokens the KV budget holds", "caps the KV pool's tokens", "--max-total-tokens",
     "max_total_tokens", 1, VRAMPLAN_SGLANG_KNOB},
    {"chunked_prefill_size", KnobType::Integer, "tokens", -1, kMaxRequests, "",
     KnobDefault::SglangRow, "the release's memory tier of the GPU",
     "tokens per prefill chunk (-1: no chunking); sizes the prefill activations",
     "--chunked-prefill-size", "chunked_prefill_size", 1, VRAMPLAN_SGLANG_KNOB},
    {"max_prefill_tokens", KnobType::Integer, "tokens", 1, kMaxRequests, "", KnobDefault::Stated,
     "16384", "tokens of one prefill batch", "--max-prefill-tokens", "max_prefill_tokens", 1,
     VRAMPLAN_SGLANG_KNOB},
    {"cuda_graph_max_bs", KnobType::Integer, "requests", 1, 1 << 16, "", KnobDefault::SglangRow,
     "the release's memory tier of the GPU (and TP)",
     "largest decode batch captured as a CUDA graph", "--cuda-graph-max-bs", "cuda_graph_max_bs", 1,
     VRAMPLAN_SGLANG_KNOB},
    {"page_size", KnobType::Integer, "tokens", 1, 1024, "", KnobDefault::SglangRow,
     "the release's page_size_default", "tokens per KV page", "--page-size", "page_size", 1,
     VRAMPLAN_SGLANG_KNOB},
    {"kv_cache_dtype", KnobType::Text, "", 0, 0,
     "auto,bf16,bfloat16,fp16,float16,fp8_e4m3,fp8_e5m2", KnobDefault::Stated,
     "auto: the served dtype", "KV cache element type", "--kv-cache-dtype", "kv_cache_dtype", 1,
     VRAMPLAN_SGLANG_KNOB},
    {"swa_full_tokens_ratio", KnobType::Fraction, "SWA tokens per full-attention token", 0.001, 1.0,
     "", KnobDefault::SglangRow, "the release's swa_full_tokens_ratio_default",
     "sliding-window models: the SWA pool's tokens per full-attention token",
     "--swa-full-tokens-ratio", "swa_full_tokens_ratio", 1, VRAMPLAN_SGLANG_KNOB},
    {"mamba_full_memory_ratio", KnobType::Fraction, "Mamba state bytes per KV byte", 0.001, 100.0,
     "", KnobDefault::SglangRow, "the release's mamba_full_memory_ratio_default",
     "hybrid Mamba / linear-attention models: the state pool's share against the KV pool",
     "--mamba-full-memory-ratio", "mamba_full_memory_ratio", 1, VRAMPLAN_SGLANG_KNOB},
    {"disable_cuda_graph", KnobType::Boolean, "", 0, 0, "", KnobDefault::Stated, "false",
     "no CUDA graphs: the slack need not hold them", "--disable-cuda-graph", "disable_cuda_graph",
     1, VRAMPLAN_SGLANG_KNOB},
    {"enable_hierarchical_cache", KnobType::Boolean, "", 0, 0, "", KnobDefault::Stated, "false",
     "HiCache: a host-RAM tier behind the KV pool, pinned per rank", "--enable-hierarchical-cache",
     "enable_hierarchical_cache", 1, VRAMPLAN_SGLANG_KNOB},
    {"hicache_ratio", KnobType::Fraction, "host tokens per device KV token", 0.001, 1000.0, "",
     KnobDefault::SglangRow, "the release's hicache_ratio_default",
     "HiCache host pool size as a multiple of the device KV pool", "--hicache-ratio",
     "hicache_ratio", 1, VRAMPLAN_SGLANG_KNOB},
    {"hicache_size", KnobType::Integer, "GB (1e9 bytes) per rank", 0, 1000000, "",
     KnobDefault::Stated, "0: sized by hicache_ratio",
     "HiCache host pool size per rank in decimal GB; overrides hicache_ratio", "--hicache-size",
     "hicache_size", 1, VRAMPLAN_SGLANG_KNOB},
    {"hicache_mem_layout", KnobType::Text, "", 0, 0, "", KnobDefault::SglangRow,
     "the release's first hicache_mem_layouts entry",
     "HiCache host pool layout (the same bytes in every layout)", "--hicache-mem-layout",
     "hicache_mem_layout", 1, VRAMPLAN_SGLANG_KNOB},
    {"nnodes", KnobType::Integer, "hosts", 1, 1024, "", KnobDefault::Stated, "1",
     "hosts the ranks are spread over (per-node host memory)", "--nnodes", "nnodes", 1,
     VRAMPLAN_SGLANG_KNOB},
    {"host_mem_available_bytes", KnobType::Bytes, "bytes on the host", 0,
     static_cast<double>(std::int64_t{1} << 50), "", KnobDefault::Stated, "unset: not known",
     "the host's /proc/meminfo MemAvailable before the launch: what SGLang checks the HiCache "
     "pools against",
     "", "", 1, VRAMPLAN_SGLANG_KNOB},
};

#undef VRAMPLAN_SGLANG_KNOB

// vLLM's knob names and the SGLang knob nearest in meaning.
constexpr std::array<std::pair<std::string_view, std::string_view>, 11> kVllmEquivalents = {{
    {"engine_version", "sglang_version"},
    {"gpu_memory_utilization", "mem_fraction_static"},
    {"max_model_len", "context_length"},
    {"max_num_seqs", "max_running_requests"},
    {"max_num_batched_tokens", "chunked_prefill_size"},
    {"tensor_parallel_size", "tp_size"},
    {"pipeline_parallel_size", "pp_size"},
    {"data_parallel_size", "dp_size"},
    {"block_size", "page_size"},
    {"enforce_eager", "disable_cuda_graph"},
    {"kv_cache_memory_bytes", "max_total_tokens"},
}};

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// "a from 0.4.0, b from 0.4.8": a row value where it changes, oldest first.
template <typename Value>
std::string row_history(const Value& value) {
  std::string out;
  std::string previous;
  for (const SglangRules& row : sglang_table().rows) {
    std::string text = value(row);
    if (!out.empty() && text == previous) continue;
    out += (out.empty() ? "" : ", ") + text + " from " + row.from_version;
    previous = std::move(text);
  }
  return out;
}

const char* fraction_rule_text(SglangFractionRule rule) {
  switch (rule) {
    case SglangFractionRule::ParallelSteps:
      return "a step table by TP x PP";
    case SglangFractionRule::TieredReserve:
      return "(gpu - tier reserve) / gpu";
    case SglangFractionRule::Reserve:
      return "(gpu - reserve for chunk, graphs, TP x PP) / gpu";
  }
  return "";
}

std::string tiers_text(const SglangRules& row, bool chunk) {
  std::string out;
  for (const SglangMemoryTier& tier : row.memory_tiers) {
    out += out.empty() ? "" : " / ";
    out += chunk ? std::to_string(tier.chunked_prefill_size)
                 : std::to_string(tier.graph_max_bs_small_tp) +
                       (tier.graph_max_bs_large_tp != tier.graph_max_bs_small_tp
                            ? "|" + std::to_string(tier.graph_max_bs_large_tp)
                            : "");
    out += tier.below_mib > 0 ? " below " + std::to_string(tier.below_mib) + " MiB" : " above";
  }
  return "[" + out + "]";
}

}  // namespace

const std::vector<KnobSpec>& sglang_knob_specs() { return kSglangKnobs; }

std::string_view sglang_equivalent_of_vllm_knob(std::string_view vllm_name) noexcept {
  for (const auto& [vllm, sglang] : kVllmEquivalents) {
    if (vllm == vllm_name) return sglang;
  }
  return "";
}

namespace {

// The SGLang knob called `name`; ConfigError naming `value_text` otherwise.
const KnobSpec& find_knob(std::string_view name, const std::string& value_text) {
  for (const KnobSpec& k : kSglangKnobs) {
    if (k.name == name) return k;
  }
  const std::string_view equivalent = sglang_equivalent_of_vllm_knob(name);
  if (!equivalent.empty()) {
    throw ConfigError(std::string(name), value_text, std::string(equivalent),
                      "a vLLM knob; SGLang's is " + std::string(equivalent));
  }
  std::string names;
  for (const KnobSpec& k : kSglangKnobs) names += (names.empty() ? "" : ", ") + std::string(k.name);
  throw ConfigError(std::string(name), value_text, names, "unknown SGLang knob");
}

}  // namespace

const KnobSpec& sglang_knob_spec(std::string_view name) { return find_knob(name, ""); }

void set_sglang_knob(SglangConfig& c, std::string_view name, const KnobValue& given) {
  const KnobSpec& k = find_knob(name, knob_value_text(given));
  KnobSpec unchecked_choices = k;
  unchecked_choices.choices = "";
  const KnobValue value = check_knob(unchecked_choices, given);
  const auto integer = [&value] { return std::get<std::int64_t>(value); };
  const auto fraction = [&value] { return std::get<double>(value); };
  if (name == "tp_size") {
    c.tp_size = static_cast<std::int32_t>(integer());
  } else if (name == "pp_size") {
    c.pp_size = static_cast<std::int32_t>(integer());
  } else if (name == "dp_size") {
    c.dp_size = static_cast<std::int32_t>(integer());
  } else if (name == "mem_fraction_static") {
    c.mem_fraction_static = fraction();
  } else if (name == "context_length") {
    c.context_length = integer();
  } else if (name == "max_running_requests") {
    c.max_running_requests = integer();
  } else if (name == "max_total_tokens") {
    c.max_total_tokens = integer();
  } else if (name == "chunked_prefill_size") {
    if (integer() == 0) {
      throw ConfigError("chunked_prefill_size", "0", "-1 (no chunking) or 1..16777216",
                        "out of range");
    }
    c.chunked_prefill_size = integer();
  } else if (name == "max_prefill_tokens") {
    c.max_prefill_tokens = integer();
  } else if (name == "cuda_graph_max_bs") {
    c.cuda_graph_max_bs = static_cast<std::int32_t>(integer());
  } else if (name == "page_size") {
    c.page_size = static_cast<std::int32_t>(integer());
  } else if (name == "kv_cache_dtype") {
    const std::string& text = std::get<std::string>(value);
    std::string allowed(k.choices);
    bool known = false;
    for (std::size_t start = 0; start <= allowed.size();) {
      const std::size_t comma = std::min(allowed.find(',', start), allowed.size());
      known = known || allowed.compare(start, comma - start, text) == 0;
      start = comma + 1;
    }
    if (!known) {
      throw ConfigError("kv_cache_dtype", "'" + text + "'", allowed,
                        "not a KV cache dtype vramplan models for SGLang");
    }
    c.kv_cache_dtype = text;
  } else if (name == "swa_full_tokens_ratio") {
    c.swa_full_tokens_ratio = fraction();
  } else if (name == "mamba_full_memory_ratio") {
    c.mamba_full_memory_ratio = fraction();
  } else if (name == "disable_cuda_graph") {
    c.disable_cuda_graph = std::get<bool>(value);
  } else if (name == "enable_hierarchical_cache") {
    c.enable_hierarchical_cache = std::get<bool>(value);
  } else if (name == "hicache_ratio") {
    c.hicache_ratio = fraction();
  } else if (name == "hicache_size") {
    c.hicache_size_gb = integer();
  } else if (name == "hicache_mem_layout") {
    c.hicache_mem_layout = std::get<std::string>(value);
  } else if (name == "nnodes") {
    c.nnodes = static_cast<std::int32_t>(integer());
  } else if (name == "host_mem_available_bytes") {
    c.host_mem_available_bytes = integer();
  } else {
    // sglang_version selects the row; it is not a field of the launch.
    throw ConfigError(std::string(name), knob_value_text(given), "",
                      "selects the SGLang release, not a launch setting");
  }
}

std::string newest_known_sglang_version() {
  const SglangTable& table = sglang_table();
  return table.rows.empty() ? std::string() : table.rows.back().release;
}

std::string sglang_rows_text(std::string_view knob_name) {
  if (knob_name == "sglang_version") return newest_known_sglang_version();
  if (knob_name == "mem_fraction_static") {
    return row_history(
        [](const SglangRules& r) { return std::string(fraction_rule_text(r.fraction_rule)); });
  }
  if (knob_name == "max_running_requests") {
    return row_history([](const SglangRules& r) {
      return std::string(r.running_requests_rule == SglangRunningRequestsRule::PoolBound
                             ? "min(N / 2, the request pool + 1)"
                             : "min(the request pool estimate, N / 2)");
    });
  }
  if (knob_name == "chunked_prefill_size") {
    return row_history([](const SglangRules& r) { return tiers_text(r, true); });
  }
  if (knob_name == "cuda_graph_max_bs") {
    return row_history([](const SglangRules& r) { return tiers_text(r, false); });
  }
  if (knob_name == "page_size") {
    return row_history([](const SglangRules& r) { return std::to_string(r.page_size_default); });
  }
  if (knob_name == "swa_full_tokens_ratio") {
    return row_history(
        [](const SglangRules& r) { return number_text(r.swa_full_tokens_ratio_default); });
  }
  if (knob_name == "hicache_ratio") {
    return row_history([](const SglangRules& r) { return number_text(r.hicache_ratio_default); });
  }
  if (knob_name == "hicache_mem_layout") {
    return row_history([](const SglangRules& r) {
      return r.hicache_mem_layouts.empty() ? std::string("no flag") : r.hicache_mem_layouts.front();
    });
  }
  if (knob_name == "mamba_full_memory_ratio") {
    return row_history(
        [](const SglangRules& r) { return number_text(r.mamba_full_memory_ratio_default); });
  }
  return "";
}

}  // namespace vramplan
