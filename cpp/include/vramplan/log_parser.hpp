// Reads the figures a vLLM startup log prints (launch settings, the memory profile, the KV
// cache size, and how the launch ended) so measured launches can be compared with plans.
//
// The input is untrusted text. Parsing never throws for bad input (only std::bad_alloc can
// escape) and runs in time linear in the input: it scans line by line without regular
// expressions, splits on '\n' and '\r' (CRLF logs and progress bars redrawn with '\r'),
// removes ANSI colour codes (ESC[...m, and the "^[[...m" form left when such logs are pasted
// into issues) and the "(EngineCore pid=N)" / "(Worker_TP1 pid=N)" process prefixes. Bytes
// that are not valid UTF-8 become U+FFFD, so every string in the result is valid UTF-8.
//
// Caps: a line longer than kVllmLogMaxLineBytes is skipped, and only the first
// kVllmLogMaxBytes of a log are read (`truncated` says so). Reading a file or feeding chunks
// keeps at most one line in memory, whatever the log's size.
//
// Figures printed by several ranks or processes keep their FIRST occurrence (for TP/PP logs,
// the first worker that logged it, as dev.jsonl records them). gpu_total_gib is taken from the
// first memory line of any kind that states the device total. Launch settings come from
// "non-default args: {...}" first, then the engine config line ("Initializing a V1 LLM engine
// (v0.19.0) with config: ..."), then lines that state the effective value (e.g. "Using max
// model len 8192", "Defaulting max_num_seqs to 1024", "Requested memory: 0.95 (util)").
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

inline constexpr std::size_t kVllmLogMaxLineBytes = std::size_t{64} * 1024;
// A startup is printed in a log's first megabytes; past this a long-running server's log is
// request traffic, not worth the time.
inline constexpr std::int64_t kVllmLogMaxBytes = std::int64_t{1} << 30;  // 1 GiB

// Every field is optional: absent when the log does not print it. GiB = 2^30 bytes (vLLM's
// older "GB" labels are GiB too).
struct VllmLogFigures : LogEnding {
  // Launch.
  std::optional<std::string> vllm_version;
  std::optional<std::string> model;
  std::optional<std::string> dtype;  // "bfloat16" ("torch." prefix removed)
  std::optional<std::string> quantization;
  std::optional<std::string> kv_cache_dtype;
  std::optional<int> tensor_parallel_size;
  std::optional<int> pipeline_parallel_size;
  std::optional<int> data_parallel_size;
  std::optional<double> gpu_memory_utilization;
  std::optional<std::int64_t> max_model_len;
  std::optional<std::int64_t> max_num_seqs;
  std::optional<std::int64_t> max_num_batched_tokens;
  std::optional<std::int64_t> block_size;
  std::optional<bool> enforce_eager;
  std::optional<bool> enable_prefix_caching;
  std::optional<double> gpu_total_gib;

  // Measured figures.
  std::optional<double> weights_gib;
  std::optional<double> activation_peak_gib;
  std::optional<double> non_torch_gib;
  std::optional<double> total_non_kv_gib;
  std::optional<double> kv_cache_gib;  // can be negative (a failed launch)
  std::optional<std::int64_t> kv_tokens;
  std::optional<std::int64_t> num_gpu_blocks;
  std::optional<double> max_concurrency;
  std::optional<std::int64_t> max_concurrency_tokens;
  std::optional<double> cudagraph_gib;
  std::optional<double> cudagraph_estimate_gib;
  std::optional<std::int64_t> padding_layers;
  // vLLM 0.27+: "Using V2 Model Runner" at worker init (Model Runner V2 ran; absent: the V1
  // runner, or an older release); the post-capture suggestion line's "X GiB for consumed memory
  // (weights + non-torch)" and its `--kv-cache-memory=N` "to fit into requested memory" (its
  // "peak activation" includes the graph estimate, so it is not read as activation_peak_gib).
  std::optional<bool> model_runner_v2;
  // vLLM 0.8+ V1: "Using FlashInfer for top-p & top-k sampling" (true) or the PyTorch-native
  // fallback warning (false); absent: the log does not say.
  std::optional<bool> flashinfer_sampler;
  std::optional<double> consumed_gib;
  std::optional<std::int64_t> suggested_kv_cache_memory_bytes;
  std::optional<double> startup_free_gib;     // the failed startup check's free figure
  std::optional<double> startup_desired_gib;  // and its requested budget
  // The free figure of any startup line, passed or failed ("Free memory on device (78.57/79.18
  // GiB) on startup. Desired ..." at 0.10 INFO, 0.19 DEBUG): total - free is this process's
  // CUDA context plus what other processes held.
  std::optional<double> free_at_startup_gib;
  std::optional<std::int64_t> estimated_max_model_len;
  std::optional<double> needed_kv_gib;
  // 0.20+: the KV pool's blocks a model with Mamba state refused max_num_seqs above.
  std::optional<std::int64_t> state_blocks;
  std::optional<double> oom_tried_gib;
  std::optional<double> oom_total_gib;
  std::optional<double> oom_free_gib;

  // LogEnding's outcome: "started", "insufficient_kv_for_max_model_len", "oom_kv_alloc",
  // "oom_at_load", "startup_free_memory" or "unknown". Its error_lines keep generic exception
  // lines ("XyzError: ...") only when the launch did not start.
};

// vLLM's incremental parser (its byte cap: kVllmLogMaxBytes).
extern template class StreamingLogParser<VllmLogFigures>;
using VllmLogParser = StreamingLogParser<VllmLogFigures>;

VllmLogFigures parse_vllm_log(std::string_view text);

// Streams the file at `path` through VllmLogParser in 1 MiB chunks. A file that cannot be
// opened or read is a ParseError; its content never is.
VllmLogFigures read_vllm_log_file(const std::string& path);

// Keys are exactly the field names above; an absent field is null.
nlohmann::json to_json(const VllmLogFigures& figures);

}  // namespace vramplan
