// SGLang startup log lines -> figures. Phrases and their wordings per release are in
// shared/reference/sglang-memory.md sections 2 and 6.
#include "vramplan/sglang_log_parser.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "log_file.hpp"
#include "vramplan/sglang_vocabulary.hpp"
#include "vramplan/text_scan.hpp"
#include "vramplan/utf8.hpp"

namespace vramplan {
namespace {

namespace t = text;
namespace vocab = sglang_vocabulary;

constexpr std::size_t kMaxErrorLines = 32;
constexpr std::size_t kMaxErrorLineBytes = 2000;

// A size after `phrase` ("avail mem=12.25 GB"), in GiB (SGLang's "GB" is GiB).
std::optional<double> gib_after(std::string_view line, std::string_view phrase) {
  const auto size = t::size_after(line, phrase);
  if (!size) return std::nullopt;
  return size->gib();
}

std::optional<std::int64_t> count_after(std::string_view line, std::string_view phrase) {
  return t::count_after(line, phrase);
}

// An integer at the start of `text`, sign allowed ("-1": chunking off), within int32's range
// of what these fields hold.
std::optional<std::int64_t> leading_integer(std::string_view text) {
  const auto n = t::read_number(text, 0);
  if (!n || !n->integral || n->value < -1.0e15 || n->value > 1.0e15) return std::nullopt;
  if (n->end < text.size() && t::is_ident(text[n->end])) return std::nullopt;
  return static_cast<std::int64_t>(n->value);
}

std::optional<std::int64_t> integer_after(std::string_view line, std::string_view phrase) {
  const std::size_t at = t::after(line, phrase);
  if (at == t::npos) return std::nullopt;
  return leading_integer(line.substr(at));
}

std::optional<double> leading_double(std::string_view text) {
  const auto n = t::read_number(text, 0);
  if (!n || n->value < -1e15 || n->value > 1e15) return std::nullopt;
  return n->value;
}

// A ServerArgs field "key=value" where the key is preceded by '(' or ' ' (so "tp_size=" does
// not match "attn_tp_size="). The value runs to the next ", " (or ')'); None gives nullopt.
std::optional<std::string_view> server_arg(std::string_view line, std::string_view key) {
  std::size_t from = 0;
  while (true) {
    const std::size_t at = line.find(key, from);
    if (at == std::string_view::npos) return std::nullopt;
    if (at > 0 && (line[at - 1] == '(' || line[at - 1] == ' ')) {
      std::string_view value = line.substr(at + key.size());
      std::size_t end = 0;
      if (!value.empty() && value[0] == '\'') {
        end = value.find('\'', 1);
        if (end == std::string_view::npos) return std::nullopt;
        return value.substr(1, end - 1);
      }
      end = std::min(value.find(','), value.find(')'));
      value = value.substr(0, end);
      if (value == vocab::kNone) return std::nullopt;
      return value;
    }
    from = at + 1;
  }
}

// The message without "[2025-03-08 12:29:21 TP0] " (or a docker timestamp before it), trimmed.
std::string message_of(std::string_view line) {
  const std::size_t close = line.find("] ");
  if (close != std::string_view::npos && close < 80 && line.find('[') < close) {
    line = line.substr(close + 2);
  }
  return std::string(utf8::truncate(t::trim(line), kMaxErrorLineBytes));
}

}  // namespace

template <>
struct LogReader<SglangLogFigures> {
  LogLines lines{kSglangLogMaxBytes, kSglangLogMaxLineBytes};
  SglangLogFigures figures;
  bool in_graph_capture = false;
  bool started = false;
  std::string failure;  // the first failing outcome, "" if none

  bool any_figure() const {
    return figures.weights_gib || figures.kv_tokens || figures.max_total_num_tokens ||
           figures.avail_after_pool_gib || figures.model_path;
  }

  void new_launch() {
    const std::int32_t launches = figures.launches + 1;
    figures = SglangLogFigures{};
    figures.launches = launches;
    in_graph_capture = false;
    started = false;
    failure.clear();
  }

  template <typename T>
  static void first(std::optional<T>& slot, const std::optional<T>& value) {
    if (!slot && value) slot = value;
  }

  void fail(const std::string& outcome, std::string_view line) {
    if (failure.empty()) failure = outcome;
    error(line);
  }

  void error(std::string_view line) {
    std::string message = message_of(line);
    if (message.empty() || figures.error_lines.size() >= kMaxErrorLines) return;
    if (std::find(figures.error_lines.begin(), figures.error_lines.end(), message) ==
        figures.error_lines.end()) {
      figures.error_lines.push_back(std::move(message));
    }
  }

  void server_args(std::string_view line) {
    if (any_figure()) new_launch();
    SglangLogFigures& f = figures;
    if (const auto v = server_arg(line, vocab::kModelPath)) f.model_path = std::string(*v);
    auto integer = [&](std::string_view key) -> std::optional<std::int64_t> {
      const auto v = server_arg(line, key);
      return v ? leading_integer(*v) : std::nullopt;
    };
    auto small = [&](std::string_view key) -> std::optional<int> {
      const auto v = integer(key);
      if (!v || *v < -1 || *v > (1 << 20)) return std::nullopt;
      return static_cast<int>(*v);
    };
    f.tp_size = small(vocab::kTpSize);
    f.pp_size = small(vocab::kPpSize);
    f.dp_size = small(vocab::kDpSize);
    f.cuda_graph_max_bs = small(vocab::kCudaGraphMaxBs);
    if (const auto v = server_arg(line, vocab::kMemFractionStatic))
      f.mem_fraction_static = leading_double(*v);
    first(f.chunked_prefill_size, integer(vocab::kChunkedPrefillSize));
    first(f.max_prefill_tokens, integer(vocab::kMaxPrefillTokens));
    first(f.max_running_requests, integer(vocab::kMaxRunningRequests));
    first(f.context_length, integer(vocab::kContextLength));
    if (const auto v = server_arg(line, vocab::kKvCacheDtype)) f.kv_cache_dtype = std::string(*v);
  }

  void line(std::string_view raw) {
    if (raw.empty()) return;
    std::string storage;
    const std::string_view l = t::clean_line(raw, storage);
    SglangLogFigures& f = figures;

    if (t::contains(l, vocab::kServerArgs)) {
      server_args(l);
      return;
    }
    if (!f.sglang_version) {
      const std::string message = message_of(l);
      const std::size_t at = vocab::kVersionLine.size();
      if (t::starts_with(message, vocab::kVersionLine) && message.size() > at &&
          t::is_digit(message[at])) {
        f.sglang_version = std::string(std::string_view(message).substr(at, 32));
      }
    }
    if (t::contains(l, vocab::kInitDistributedEnds) ||
        t::contains(l, vocab::kMemoryBaselineTaken)) {
      first(f.baseline_usage_gib, gib_after(l, vocab::kMemUsage));
      return;
    }
    if (t::contains(l, vocab::kLoadWeightBegin)) {
      // A restart: weights load again after a completed startup.
      if (f.max_total_num_tokens || started) new_launch();
      first(figures.load_begin_avail_gib, gib_after(l, vocab::kAvailMem));
      return;
    }
    if (t::contains(l, vocab::kLoadWeightEnd)) {
      if (!f.avail_after_weights_gib) {
        f.avail_after_weights_gib = gib_after(l, vocab::kAvailMem);
        f.weights_gib = gib_after(l, vocab::kMemUsage);
        // Early 0.4 releases print no "mem usage": the drop across loading.
        if (!f.weights_gib && f.load_begin_avail_gib && f.avail_after_weights_gib) {
          f.weights_gib = *f.load_begin_avail_gib - *f.avail_after_weights_gib;
        }
      }
      return;
    }
    if (t::contains(l, vocab::kKvCacheAllocated) && !t::contains(l, vocab::kVirtualKv) &&
        !f.k_size_gib && !f.kv_size_gib) {
      first(f.kv_tokens, count_after(l, vocab::kTokens));
      f.k_size_gib = gib_after(l, vocab::kKSize);
      f.v_size_gib = gib_after(l, vocab::kVSize);
      f.kv_size_gib = gib_after(l, vocab::kKvSize);
      return;
    }
    if (t::contains(l, vocab::kSlidingWindowPool)) {
      first(f.full_layer_tokens, count_after(l, vocab::kFullLayerTokens));
      first(f.swa_layer_tokens, count_after(l, vocab::kSwaLayerTokens));
      return;
    }
    if (t::contains(l, vocab::kMambaCacheAllocated)) {
      first(f.mamba_cache_size, count_after(l, vocab::kMaxMambaCacheSize));
      return;
    }
    if (t::contains(l, vocab::kMemoryPoolEnd)) {
      first(f.avail_after_pool_gib, gib_after(l, vocab::kAvailMem));
      return;
    }
    if (t::contains(l, vocab::kCaptureGraphBegin) ||
        (t::contains(l, vocab::kCaptureTarget) && t::contains(l, vocab::kTargetGraphBegin))) {
      in_graph_capture = true;
      return;
    }
    const bool old_graph_end = t::contains(l, vocab::kCaptureGraphEnd);
    const bool target_graph_end =
        t::contains(l, vocab::kCaptureTarget) && t::contains(l, vocab::kTargetGraphEnd);
    if (old_graph_end || target_graph_end) {
      in_graph_capture = false;
      const auto usage = gib_after(l, vocab::kMemUsage);
      if (t::contains(l, vocab::kCaptureTargetPrefill)) {
        first(f.prefill_graph_gib, usage);
      } else {
        first(f.decode_graph_gib, usage);
      }
      const auto avail = gib_after(l, vocab::kAvailMem);
      if (avail) f.avail_after_graphs_gib = avail;  // the last capture's
      return;
    }
    if (const std::size_t at = t::after(l, vocab::kMaxTotalNumTokens); at != t::npos) {
      if (!f.max_total_num_tokens) {
        f.max_total_num_tokens = leading_integer(l.substr(at));
        first(f.chunked_prefill_size, integer_after(l, vocab::kChunkedPrefillSize));
        first(f.max_prefill_tokens, integer_after(l, vocab::kMaxPrefillTokens));
        if (const auto r = integer_after(l, vocab::kMaxRunningRequests)) f.max_running_requests = r;
        if (const auto c = integer_after(l, vocab::kContextLen)) f.context_length = c;
        f.available_gpu_mem_gib = gib_after(l, vocab::kAvailableGpuMem);
      }
      return;
    }
    if (t::contains(l, vocab::kServerReady) || t::contains(l, vocab::kStartupComplete)) {
      started = true;
      return;
    }
    // Failures.
    const bool cuda_oom =
        t::contains(l, vocab::kCudaOutOfMemory) || t::contains(l, vocab::kOutOfMemoryError);
    if (t::contains(l, vocab::kWeightsLeaveNoMemory)) {
      fail("weights_leave_no_memory", l);
    } else if (t::contains(l, vocab::kNotEnoughHostMemory)) {
      fail("hicache_refused", l);
    } else if (t::contains(l, vocab::kNotEnoughMemory) ||
               t::contains(l, vocab::kNotEnoughMemoryHybrid)) {
      fail("not_enough_memory", l);
    } else if (t::contains(l, vocab::kCaptureGraphFailed) || (in_graph_capture && cuda_oom)) {
      fail("oom_cuda_graph_capture", l);
    } else if (cuda_oom) {
      fail("oom", l);
    }
    if (t::contains(l, vocab::kTriedToAllocate)) {
      first(f.oom_tried_gib, gib_after(l, vocab::kTriedToAllocate));
    }
  }

  void feed(std::string_view chunk) {
    lines.feed(chunk, [this](std::string_view l) { line(l); });
  }

  SglangLogFigures finish() {
    lines.finish([this](std::string_view l) { line(l); });
    figures.truncated = lines.truncated();
    if (!failure.empty()) {
      figures.outcome = failure;
    } else if (started || figures.max_total_num_tokens) {
      figures.outcome = "started";
    }
    return std::move(figures);
  }
};

template class StreamingLogParser<SglangLogFigures>;

SglangLogFigures parse_sglang_log(std::string_view text) {
  return parse_log_text<SglangLogParser>(text);
}

SglangLogFigures read_sglang_log_file(const std::string& path) {
  return read_log_file<SglangLogParser>(path);
}

nlohmann::json to_json(const SglangLogFigures& f) {
  nlohmann::json j = nlohmann::json::object();
  j["sglang_version"] = optional_json(f.sglang_version);
  j["model_path"] = optional_json(f.model_path);
  j["tp_size"] = optional_json(f.tp_size);
  j["pp_size"] = optional_json(f.pp_size);
  j["dp_size"] = optional_json(f.dp_size);
  j["mem_fraction_static"] = optional_json(f.mem_fraction_static);
  j["chunked_prefill_size"] = optional_json(f.chunked_prefill_size);
  j["max_prefill_tokens"] = optional_json(f.max_prefill_tokens);
  j["max_running_requests"] = optional_json(f.max_running_requests);
  j["context_length"] = optional_json(f.context_length);
  j["cuda_graph_max_bs"] = optional_json(f.cuda_graph_max_bs);
  j["kv_cache_dtype"] = optional_json(f.kv_cache_dtype);
  j["baseline_usage_gib"] = optional_json(f.baseline_usage_gib);
  j["load_begin_avail_gib"] = optional_json(f.load_begin_avail_gib);
  j["weights_gib"] = optional_json(f.weights_gib);
  j["avail_after_weights_gib"] = optional_json(f.avail_after_weights_gib);
  j["kv_tokens"] = optional_json(f.kv_tokens);
  j["k_size_gib"] = optional_json(f.k_size_gib);
  j["v_size_gib"] = optional_json(f.v_size_gib);
  j["kv_size_gib"] = optional_json(f.kv_size_gib);
  j["full_layer_tokens"] = optional_json(f.full_layer_tokens);
  j["swa_layer_tokens"] = optional_json(f.swa_layer_tokens);
  j["mamba_cache_size"] = optional_json(f.mamba_cache_size);
  j["avail_after_pool_gib"] = optional_json(f.avail_after_pool_gib);
  j["decode_graph_gib"] = optional_json(f.decode_graph_gib);
  j["prefill_graph_gib"] = optional_json(f.prefill_graph_gib);
  j["avail_after_graphs_gib"] = optional_json(f.avail_after_graphs_gib);
  j["max_total_num_tokens"] = optional_json(f.max_total_num_tokens);
  j["available_gpu_mem_gib"] = optional_json(f.available_gpu_mem_gib);
  j["oom_tried_gib"] = optional_json(f.oom_tried_gib);
  put_log_ending(j, f);
  return j;
}

}  // namespace vramplan
