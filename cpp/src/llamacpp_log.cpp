// llama.cpp startup-log parser: one pass over the lines, each matched against llama.cpp's fixed
// phrases with string_view::find (no regular expressions). The phrases are the format strings
// of src/llama-model.cpp (load_tensors), src/llama-kv-cache.cpp, src/llama-context.cpp,
// src/llama-model-loader.cpp (print_info) and ggml-cuda's and ggml-alloc's failure messages,
// in their current and older spellings (llm_load_tensors, llama_kv_cache_init,
// llama_new_context_with_model).
#include "vramplan/llamacpp_log.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "log_file.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/text_scan.hpp"
#include "vramplan/utf8.hpp"

namespace vramplan {
namespace {

namespace t = text;

constexpr std::size_t kMaxErrorLines = 32;
constexpr std::size_t kMaxErrorLineBytes = 2000;
constexpr std::size_t kMaxDevices = 64;
constexpr double kMiB = 1024.0 * 1024.0;

constexpr std::string_view kBufferSize = " buffer size =";
constexpr std::string_view kCudaMallocFailed = "cudaMalloc failed: out of memory";
constexpr std::string_view kAllocating = "allocating ";
constexpr std::string_view kOnDevice = " MiB on device ";
constexpr std::string_view kFailedToAllocate = "failed to allocate ";
constexpr std::string_view kBufferOfSize = " buffer of size ";
constexpr std::string_view kOffloaded = "offloaded ";
constexpr std::string_view kNewModel = "llama_model_loader: loaded meta data";

std::string_view word_before(std::string_view line, std::size_t end) {
  while (end > 0 && t::is_space(line[end - 1])) --end;
  std::size_t begin = end;
  while (begin > 0 && !t::is_space(line[begin - 1])) --begin;
  return line.substr(begin, end - begin);
}

std::optional<std::int64_t> mib_bytes_after(std::string_view line, std::string_view phrase) {
  const std::optional<t::Number> n = t::number_after(line, phrase);
  if (!n || n->value < 0) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(n->value * kMiB));
}

// The value of "KEY<spaces>= VALUE" after ": KEY" (print_info's and llama_context's lines); an
// array's ("[8, 8, 4]") first element. Only an exact key: "n_ctx" never reads "n_ctx_train".
std::optional<std::string_view> keyed(std::string_view line, std::string_view key) {
  const std::string prefix = ": " + std::string(key);
  for (std::size_t at = line.find(prefix); at != t::npos; at = line.find(prefix, at + 1)) {
    std::size_t pos = t::skip_spaces(line, at + prefix.size());
    if (pos >= line.size() || line[pos] != '=') continue;
    pos = t::skip_spaces(line, pos + 1);
    if (pos < line.size() && line[pos] == '[') pos = t::skip_spaces(line, pos + 1);
    return t::trim(line.substr(pos));
  }
  return std::nullopt;
}

std::optional<std::int64_t> keyed_count(std::string_view line, std::string_view key) {
  const std::optional<std::string_view> value = keyed(line, key);
  if (!value) return std::nullopt;
  const std::optional<t::Number> n = t::read_number(value->substr(0, value->find(',')), 0);
  return n ? t::to_count(*n) : std::nullopt;
}

std::optional<bool> flag_word(std::string_view value) {
  for (std::string_view on : {"1", "true", "enabled", "on"}) {
    if (t::starts_with(value, on)) return true;
  }
  for (std::string_view off : {"0", "false", "disabled", "off"}) {
    if (t::starts_with(value, off)) return false;
  }
  return std::nullopt;  // "auto": resolved by a later line
}

template <typename T>
void first(std::optional<T>& slot, const std::optional<T>& value) {
  if (!slot && value) slot = value;
}

}  // namespace

template <>
struct LogReader<LlamacppLogFigures> {
  LogLines lines{kLlamacppLogMaxBytes, kLlamacppLogMaxLineBytes};
  bool started = false;
  LlamacppLogFigures figures;
  std::optional<std::string> oom_device;  // from "allocating X MiB on device N: cudaMalloc failed"
  std::optional<std::int64_t> oom_bytes;

  void new_model() {
    LlamacppLogFigures fresh;
    fresh.build = figures.build;
    fresh.devices = figures.devices;
    figures = std::move(fresh);
    started = false;
    oom_device.reset();
    oom_bytes.reset();
  }

  void error(std::string_view line) {
    if (figures.error_lines.size() >= kMaxErrorLines) return;
    figures.error_lines.emplace_back(utf8::truncate(t::trim(line), kMaxErrorLineBytes));
  }

  void hparams(std::string_view l) {
    LlamacppLogFigures& f = figures;
    if (const auto arch = keyed(l, "arch"); arch && !f.architecture) {
      f.architecture = std::string(arch->substr(0, std::min<std::size_t>(arch->size(), 64)));
    }
    first(f.n_ctx_train, keyed_count(l, "n_ctx_train"));
    first(f.n_embd, keyed_count(l, "n_embd"));
    first(f.n_layer, keyed_count(l, "n_layer"));
    first(f.n_head, keyed_count(l, "n_head"));
    first(f.n_head_kv, keyed_count(l, "n_head_kv"));
    first(f.n_ff, keyed_count(l, "n_ff"));
    first(f.n_vocab, keyed_count(l, "n_vocab"));
    first(f.n_expert, keyed_count(l, "n_expert"));
    first(f.n_swa, keyed_count(l, "n_swa"));
    first(f.head_dim_k, keyed_count(l, "n_embd_head_k"));
    first(f.head_dim_v, keyed_count(l, "n_embd_head_v"));
  }

  void context(std::string_view l) {
    LlamacppLogFigures& f = figures;
    first(f.n_seq_max, keyed_count(l, "n_seq_max"));
    first(f.n_ctx, keyed_count(l, "n_ctx"));
    first(f.n_ctx_seq, keyed_count(l, "n_ctx_seq"));
    first(f.n_ctx_seq, keyed_count(l, "n_ctx_per_seq"));
    first(f.n_batch, keyed_count(l, "n_batch"));
    first(f.n_ubatch, keyed_count(l, "n_ubatch"));
    if (const auto fa = keyed(l, "flash_attn")) first(f.flash_attn, flag_word(*fa));
    // auto's outcome: "Flash Attention enabled", "Flash Attention was auto, set to enabled",
    // "Flash Attention not supported, set to disabled".
    if (t::contains(l, "Flash Attention")) {
      f.flash_attn = !t::contains(l, "disabled");
    }
  }

  void buffer(std::string_view l) {
    const std::size_t at = l.find(kBufferSize);
    const std::optional<std::int64_t> bytes = mib_bytes_after(l, kBufferSize);
    if (at == t::npos || !bytes) return;
    const std::string_view kind = word_before(l, at);
    std::string_view device = word_before(l, static_cast<std::size_t>(kind.data() - l.data()));
    LlamacppBufferBytes* slot = nullptr;
    if (kind == "model") {
      slot = &figures.model_buffers;
    } else if (kind == "KV") {
      slot = &figures.kv_buffers;
    } else if (kind == "compute") {
      slot = &figures.compute_buffers;
    } else if (kind == "output") {
      slot = &figures.output_buffers;
    } else if (t::contains(l, "load_tensors:")) {
      device = kind;  // llm_load_tensors' "CUDA0 buffer size": a model buffer
      slot = &figures.model_buffers;
    }
    if (slot == nullptr || device.empty() || t::ends_with(device, ":")) return;
    (*slot)[std::string(device.substr(0, 32))] = *bytes;  // a later retry replaces the figure
  }

  // Which allocation failed, from the line naming the stage (the lines right after ggml-cuda's
  // "cudaMalloc failed" say which caller asked).
  void failure(std::string_view l) {
    if (t::contains(l, kCudaMallocFailed)) {
      figures.outcome = "oom";
      if (const auto dev = t::count_after(l, kOnDevice)) oom_device = "CUDA" + std::to_string(*dev);
      oom_bytes = mib_bytes_after(l, kAllocating);
      error(l);
      return;
    }
    if (const std::size_t at = t::after(l, kFailedToAllocate); at != t::npos) {
      const std::size_t of = l.find(kBufferOfSize, at);
      if (of != t::npos) {
        figures.failed_device = std::string(l.substr(at, std::min<std::size_t>(of - at, 32)));
        figures.failed_bytes = t::count_after(l, kBufferOfSize);
      }
    }
    if (figures.outcome != "oom" || figures.failed_buffer) return;
    if (t::contains(l, "compute buffers") || t::contains(l, "gallocr")) {
      figures.failed_buffer = "compute";
    } else if (t::contains(l, "kv cache") || t::contains(l, "KV cache")) {
      figures.failed_buffer = "kv";
    } else if (t::contains(l, "error loading model") || t::contains(l, "unable to allocate")) {
      figures.failed_buffer = "model";
    }
    if (figures.failed_buffer) error(l);
  }

  void line(std::string_view raw) {
    std::string storage;
    const std::string_view l = t::clean_line(raw, storage);
    if (t::contains(l, kNewModel)) new_model();
    if (const std::size_t at = t::after(l, "build: "); at != t::npos && !figures.build) {
      const std::string_view rest = l.substr(at);
      figures.build =
          std::string(t::trim(rest.substr(0, std::min(rest.find(" with "), std::size_t{80}))));
    }
    if (const std::size_t at = t::after(l, "Device "); at != t::npos &&
                                                       t::contains(l, "compute capability") &&
                                                       figures.devices.size() < kMaxDevices) {
      std::string_view rest = l.substr(at);
      if (const std::size_t colon = rest.find(": "); colon != t::npos && colon < 8) {
        rest = rest.substr(colon + 2);  // "Device 0: NAME, compute capability ..."
      }
      figures.devices.emplace_back(
          t::trim(rest.substr(0, std::min(rest.find(','), std::size_t{120}))));
    }
    if (const std::size_t at = t::after(l, kOffloaded); at != t::npos) {
      const std::optional<t::Number> done = t::read_number(l, at);
      if (done && done->end < l.size() && l[done->end] == '/') {
        figures.layers_offloaded = t::to_count(*done);
        if (const auto all = t::read_number(l, done->end + 1))
          figures.layers_total = t::to_count(*all);
      }
    }
    hparams(l);
    context(l);
    buffer(l);
    failure(l);
    if (t::contains(l, "retrying without pipeline parallelism")) {
      // llama.cpp retries the compute buffers with one copy: the failure above is not final.
      figures.outcome = "unknown";
      figures.failed_buffer.reset();
      figures.failed_device.reset();
      figures.failed_bytes.reset();
      oom_device.reset();
      oom_bytes.reset();
      figures.pipeline_parallel_retried = true;
    }
    if (t::contains(l, "CUDA error: out of memory")) {
      figures.outcome = "oom";
      if (!figures.failed_buffer) figures.failed_buffer = "runtime";
      error(l);
    }
    if (t::contains(l, "graph splits") || t::contains(l, "model loaded") ||
        t::contains(l, "load_model: initializing")) {
      started = true;
    }
  }

  void feed(std::string_view chunk) {
    lines.feed(chunk, [this](std::string_view l) { line(l); });
  }

  LlamacppLogFigures finish() {
    lines.finish([this](std::string_view l) { line(l); });
    LlamacppLogFigures& f = figures;
    f.truncated = lines.truncated();
    if (f.outcome == "oom") {
      first(f.failed_device, oom_device);
      first(f.failed_bytes, oom_bytes);
      if (!f.failed_buffer) {
        // No line named the caller: the stage reached says which buffer was being allocated.
        f.failed_buffer = f.model_buffers.empty() ? "model"
                          : f.kv_buffers.empty()  ? "kv"
                                                  : "compute";
      }
    } else if (started) {
      f.outcome = "started";
    }
    return std::move(figures);
  }
};

template class StreamingLogParser<LlamacppLogFigures>;

LlamacppLogFigures parse_llamacpp_log(std::string_view text) {
  return parse_log_text<LlamacppLogParser>(text);
}

LlamacppLogFigures read_llamacpp_log_file(const std::string& path) {
  return read_log_file<LlamacppLogParser>(path);
}

namespace {

std::int64_t required(const std::optional<std::int64_t>& value, const std::string& key) {
  if (!value || *value <= 0) {
    throw ConfigError("log", key + (value ? " = " + std::to_string(*value) : " missing"),
                      "a print_info / llama_context line with " + key,
                      "the log does not describe the model or context enough to plan it");
  }
  return *value;
}

std::string mib_text(std::int64_t bytes) {
  return std::to_string((bytes + (1 << 19)) >> 20) + " MiB";
}

}  // namespace

nlohmann::json to_json(const LlamacppLogFigures& f) {
  nlohmann::json j;
  j["build"] = optional_json(f.build);
  j["devices"] = f.devices;
  j["architecture"] = optional_json(f.architecture);
  for (const auto& [key, value] : {std::pair{"n_ctx_train", &f.n_ctx_train},
                                   {"n_embd", &f.n_embd},
                                   {"n_layer", &f.n_layer},
                                   {"n_head", &f.n_head},
                                   {"n_head_kv", &f.n_head_kv},
                                   {"n_ff", &f.n_ff},
                                   {"n_vocab", &f.n_vocab},
                                   {"n_expert", &f.n_expert},
                                   {"n_swa", &f.n_swa},
                                   {"n_seq_max", &f.n_seq_max},
                                   {"n_ctx", &f.n_ctx},
                                   {"n_ctx_seq", &f.n_ctx_seq},
                                   {"n_batch", &f.n_batch},
                                   {"n_ubatch", &f.n_ubatch},
                                   {"layers_offloaded", &f.layers_offloaded},
                                   {"layers_total", &f.layers_total},
                                   {"failed_bytes", &f.failed_bytes}}) {
    j[key] = optional_json(*value);
  }
  j["flash_attn"] = optional_json(f.flash_attn);
  j["model_buffers"] = f.model_buffers;
  j["kv_buffers"] = f.kv_buffers;
  j["compute_buffers"] = f.compute_buffers;
  j["output_buffers"] = f.output_buffers;
  j["failed_buffer"] = optional_json(f.failed_buffer);
  j["failed_device"] = optional_json(f.failed_device);
  j["outcome"] = f.outcome;
  j["error_lines"] = f.error_lines;
  j["pipeline_parallel_retried"] = f.pipeline_parallel_retried;
  j["truncated"] = f.truncated;
  return j;
}

LlamacppModel llamacpp_model_from_log(const LlamacppLogFigures& f) {
  LlamacppModel m;
  m.file = "<log>";
  m.architecture = f.architecture.value_or("");
  m.n_layer = required(f.n_layer, "n_layer");
  m.n_embd = required(f.n_embd, "n_embd");
  m.n_head = required(f.n_head, "n_head");
  m.n_vocab = required(f.n_vocab, "n_vocab");
  m.n_ctx_train = f.n_ctx_train.value_or(0);
  m.n_ff = f.n_ff.value_or(0);
  m.n_expert = f.n_expert.value_or(0);
  m.head_dim_k = f.head_dim_k.value_or(m.n_embd / m.n_head);
  m.head_dim_v = f.head_dim_v.value_or(m.n_embd / m.n_head);
  m.n_head_kv.assign(static_cast<std::size_t>(m.n_layer), f.n_head_kv.value_or(m.n_head));
  m.swa_layer.assign(static_cast<std::size_t>(m.n_layer), false);
  m.tied_output = false;
  return m;
}

LlamacppLaunch llamacpp_launch_from_log(const LlamacppLogFigures& f) {
  LlamacppLaunch launch;
  launch.ctx_size = required(f.n_ctx, "n_ctx");
  launch.parallel = f.n_seq_max.value_or(1);
  launch.kv_unified = launch.parallel > 1 && f.n_ctx_seq && *f.n_ctx_seq == launch.ctx_size;
  launch.batch = f.n_batch.value_or(launch.batch);
  launch.ubatch = f.n_ubatch.value_or(launch.ubatch);
  if (f.flash_attn)
    launch.flash_attn = *f.flash_attn ? LlamacppFlashAttn::On : LlamacppFlashAttn::Off;
  if (f.layers_offloaded) launch.n_gpu_layers = *f.layers_offloaded;
  return launch;
}

LlamacppDiagnosis diagnose_llamacpp_log(const LlamacppLogFigures& f) {
  LlamacppDiagnosis d;
  if (f.outcome != "oom" || !f.failed_buffer) {
    d.summary = f.outcome == "started" ? "llama.cpp started: every buffer was allocated"
                                       : "the log shows no llama.cpp allocation failure";
    return d;
  }
  d.buffer = *f.failed_buffer;
  const std::string device = f.failed_device.value_or("the GPU");
  const std::string asked = f.failed_bytes ? " (" + mib_text(*f.failed_bytes) + ")" : "";
  if (d.buffer == "model") {
    std::string layers;
    if (f.layers_offloaded) {
      layers = " with " + std::to_string(*f.layers_offloaded) +
               (f.layers_total ? "/" + std::to_string(*f.layers_total) : "") + " layers offloaded";
    }
    d.summary = "the model buffer" + asked + " on " + device + " does not fit" + layers;
    d.remedies = {
        "lower -ngl / --n-gpu-layers (each repeating layer's weights leave the GPU; "
        "`vramplan plan MODEL.gguf --engine llamacpp --gpu GPU` solves the largest)",
        "for an MoE model keep experts in host memory: --n-cpu-moe N",
        "a smaller quantization of the GGUF (Q4_K_M -> Q3_K_M / IQ3)"};
  } else if (d.buffer == "kv") {
    d.summary = "the KV cache buffer" + asked + " on " + device + " does not fit" +
                (f.n_ctx ? " at n_ctx = " + std::to_string(*f.n_ctx) : "");
    d.remedies = {"lower -c / --ctx-size (the KV cache is linear in it) or -np / --parallel",
                  "quantize the cache: -ctk q8_0 -ctv q8_0 (34/64 of f16; needs --flash-attn)",
                  "lower -ngl (a layer's KV lives with its layer) or --no-kv-offload"};
  } else if (d.buffer == "compute") {
    d.summary = "the compute buffer (the graph's scratch)" + asked + " on " + device +
                " does not fit, after the model and KV buffers";
    d.remedies = {"lower -ub / --ubatch-size (the buffer scales with it: -ub 256 about halves it)",
                  "--flash-attn on (without it the KQ scores grow with the context)",
                  "with several GPUs: 'pipeline parallelism enabled' keeps 4 copies of the "
                  "compute buffers; -sm none, or a build with GGML_SCHED_MAX_COPIES=1",
                  "lower -c or -ngl to leave room"};
  } else {
    d.summary = "CUDA ran out of memory after start-up (a larger batch or context at run time)";
    d.remedies = {"lower -ub / -b and -c, or -ngl by a layer or two to leave headroom"};
  }
  return d;
}

}  // namespace vramplan
