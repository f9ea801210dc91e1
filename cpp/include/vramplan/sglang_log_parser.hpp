// Reads the figures an SGLang server's startup log prints (0.4.x through 0.5.23 wordings:
// shared/reference/sglang-memory.md sections 2 and 6) so measured startups can be compared with
// sglang_breakdown().
//
// The input is untrusted text, handled like the vLLM parser's (log_parser.hpp): parsing never
// throws for bad input (only std::bad_alloc can escape) and is linear in the input, line by line
// without regular expressions; lines split on '\n' and '\r'; ANSI colour codes (ESC[...m and a
// pasted "^[[...m") are removed; invalid UTF-8 becomes U+FFFD. A line longer than
// kSglangLogMaxLineBytes is skipped and only the first kSglangLogMaxBytes are read
// (`truncated`). Figures printed by several ranks keep their first occurrence; a restart in
// the same file starts a new launch and only the last launch's figures are kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vramplan/log_stream.hpp"

namespace vramplan {

inline constexpr std::size_t kSglangLogMaxLineBytes = std::size_t{64} * 1024;
inline constexpr std::int64_t kSglangLogMaxBytes = std::int64_t{1} << 30;  // 1 GiB

// Every figure is optional: absent when the log does not print it. SGLang's "GB" is GiB.
struct SglangLogFigures : LogEnding {
  // Launch (from "server_args=ServerArgs(...)" and the scheduler's summary line).
  std::optional<std::string> sglang_version;  // an environment dump's "sglang: X" line
  std::optional<std::string> model_path;
  std::optional<int> tp_size;
  std::optional<int> pp_size;
  std::optional<int> dp_size;
  std::optional<double> mem_fraction_static;
  std::optional<std::int64_t> chunked_prefill_size;
  std::optional<std::int64_t> max_prefill_tokens;
  std::optional<std::int64_t> max_running_requests;
  std::optional<std::int64_t> context_length;
  std::optional<int> cuda_graph_max_bs;
  std::optional<std::string> kv_cache_dtype;

  // Memory.
  std::optional<double> baseline_usage_gib;       // "Init torch distributed ends. / Memory baseline
                                                  // taken. mem usage="
  std::optional<double> load_begin_avail_gib;     // "Load weight begin. avail mem="
  std::optional<double> weights_gib;              // "Load weight end. ... mem usage="
  std::optional<double> avail_after_weights_gib;  // "Load weight end. ... avail mem="
  std::optional<std::int64_t> kv_tokens;          // "KV Cache is allocated. ... #tokens:"
  std::optional<double> k_size_gib;
  std::optional<double> v_size_gib;
  std::optional<double> kv_size_gib;              // MLA / fused pools: "KV size:"
  std::optional<std::int64_t> full_layer_tokens;  // "Use sliding window memory pool."
  std::optional<std::int64_t> swa_layer_tokens;
  std::optional<std::int64_t>
      mamba_cache_size;                        // "Mamba Cache is allocated. max_mamba_cache_size:"
  std::optional<double> avail_after_pool_gib;  // "Memory pool end. avail mem="
  std::optional<double> decode_graph_gib;      // "Capture cuda graph end" / "Capture target
                                               // decode|verify CUDA graph end" mem usage
  std::optional<double> prefill_graph_gib;     // "Capture target prefill CUDA graph end" mem usage
  std::optional<double> avail_after_graphs_gib;
  std::optional<std::int64_t> max_total_num_tokens;  // "max_total_num_tokens="
  std::optional<double> available_gpu_mem_gib;       // the summary's "available_gpu_mem="
  std::optional<double> oom_tried_gib;               // "Tried to allocate X GiB/MiB"

  // LogEnding's outcome: "started", "weights_leave_no_memory", "not_enough_memory",
  // "oom_cuda_graph_capture", "hicache_refused" (HiCache's host pool), "oom" (a CUDA OOM
  // elsewhere) or "unknown".
};

// SGLang's incremental parser (its byte cap: kSglangLogMaxBytes).
extern template class StreamingLogParser<SglangLogFigures>;
using SglangLogParser = StreamingLogParser<SglangLogFigures>;

SglangLogFigures parse_sglang_log(std::string_view text);
// Streams a regular file through the parser in 1 MiB chunks; ParseError if it cannot be read.
SglangLogFigures read_sglang_log_file(const std::string& path);
// Keys are the field names above; an absent field is null.
nlohmann::json to_json(const SglangLogFigures& figures);

}  // namespace vramplan
