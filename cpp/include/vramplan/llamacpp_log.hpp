// llama.cpp (llama-server, llama-cli, Ollama's runner) startup logs: the buffers llama.cpp prints
// per device (model, KV, compute, output), the context it resolved, the model's hyper-parameters
// (print_info / llm_load_print_meta) and, for a failed start, which buffer's allocation ran out
// of memory on which device. A single bounded pass without regular expressions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vramplan/llamacpp.hpp"
#include "vramplan/log_stream.hpp"

namespace vramplan {

inline constexpr std::size_t kLlamacppLogMaxLineBytes = std::size_t{64} * 1024;
inline constexpr std::int64_t kLlamacppLogMaxBytes = std::int64_t{1} << 30;  // 1 GiB

// Bytes per buffer name ("CUDA0", "CPU_Mapped", "CUDA_Host"), as printed in MiB with two
// decimals: each is good to +-0.005 MiB (5,243 B).
using LlamacppBufferBytes = std::map<std::string, std::int64_t>;

struct LlamacppLogFigures {
  std::optional<std::string> build;  // "build: 4701 (be3bbd62)"
  std::vector<std::string> devices;  // "Device 0: NVIDIA GeForce RTX 4090, ..."
  // Model hyper-parameters as print_info (llm_load_print_meta before) prints them.
  std::optional<std::string> architecture;
  std::optional<std::int64_t> n_ctx_train, n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab,
      n_expert, n_swa;
  std::optional<std::int64_t> head_dim_k, head_dim_v;  // n_embd_head_k / n_embd_head_v
  // The context llama_context resolved.
  std::optional<std::int64_t> n_seq_max, n_ctx, n_ctx_seq, n_batch, n_ubatch;
  std::optional<bool> flash_attn;  // the resolved state (auto's outcome when printed)
  std::optional<std::int64_t> layers_offloaded, layers_total;  // "offloaded 33/33 layers"
  LlamacppBufferBytes model_buffers, kv_buffers, compute_buffers, output_buffers;
  // A failed allocation: "model", "kv" or "compute" (from the lines around the cudaMalloc
  // failure), the device ("CUDA0") and the bytes asked for.
  std::optional<std::string> failed_buffer;
  std::optional<std::string> failed_device;
  std::optional<std::int64_t> failed_bytes;
  std::string outcome = "unknown";         // started, oom, unknown
  bool pipeline_parallel_retried = false;  // a compute-buffer OOM llama.cpp retried with 1 copy
  std::vector<std::string> error_lines;
  bool truncated = false;
};

// llama.cpp's incremental parser (its byte cap: kLlamacppLogMaxBytes).
extern template class StreamingLogParser<LlamacppLogFigures>;
using LlamacppLogParser = StreamingLogParser<LlamacppLogFigures>;

LlamacppLogFigures parse_llamacpp_log(std::string_view text);
LlamacppLogFigures read_llamacpp_log_file(const std::string& path);
nlohmann::json to_json(const LlamacppLogFigures& figures);

// The model as far as a log describes it (hyper-parameters, no tensors) and the launch it
// resolved, for the parts of the plan that need no tensor list: KV and the compute estimate.
// ConfigError naming the missing line when the log lacks one.
LlamacppModel llamacpp_model_from_log(const LlamacppLogFigures& figures);
LlamacppLaunch llamacpp_launch_from_log(const LlamacppLogFigures& figures);

// What ran out and how to get out of it, in llama.cpp's flags: one sentence naming the buffer,
// the device and the bytes, then the remedies in order of cost.
struct LlamacppDiagnosis {
  std::string buffer;  // model, kv, compute, or "" when the log shows no allocation failure
  std::string summary;
  std::vector<std::string> remedies;
};
LlamacppDiagnosis diagnose_llamacpp_log(const LlamacppLogFigures& figures);

}  // namespace vramplan
