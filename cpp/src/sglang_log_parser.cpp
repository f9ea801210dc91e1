// SGLang startup log lines -> figures. Phrases and their wordings per release are in
// shared/reference/sglang-memory.md sections 2 and 6.
#include "vramplan/sglang_log_parser.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vramplan/bounded_read.hpp"
#include "vramplan/utf8.hpp"

namespace vramplan {
namespace {

constexpr std::size_t kMaxErrorLines = 32;
constexpr std::size_t kMaxErrorLineBytes = 2000;

bool contains(std::string_view line, std::string_view phrase) {
  return line.find(phrase) != std::string_view::npos;
}

// The text right after the first `key` in `line` (npos-safe: empty when absent).
std::optional<std::string_view> after(std::string_view line, std::string_view key,
                                      std::size_t from = 0) {
  const std::size_t at = line.find(key, from);
  if (at == std::string_view::npos) return std::nullopt;
  return line.substr(at + key.size());
}

// A number at the start of `text` ("15.54", "-0.01", "46611"): nullopt if none, or not finite.
std::optional<double> leading_double(std::string_view text) {
  std::size_t end = 0;
  if (end < text.size() && (text[end] == '-' || text[end] == '+')) ++end;
  bool digits = false;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) != 0 || text[end] == '.')) {
    digits = digits || text[end] != '.';
    ++end;
  }
  // "1e999999", "12abc": not a figure SGLang prints.
  if (!digits || end > 32 ||
      (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end])) != 0 &&
       text.substr(end, 1) != "G" && text.substr(end, 1) != "M")) {
    return std::nullopt;
  }
  double value = 0.0;
  const std::string copy(text.substr(text[0] == '+' ? 1 : 0, end - (text[0] == '+' ? 1 : 0)));
  const auto result = std::from_chars(copy.data(), copy.data() + copy.size(), value);
  if (result.ec != std::errc() || result.ptr != copy.data() + copy.size()) return std::nullopt;
  if (!(value > -1e15 && value < 1e15)) return std::nullopt;
  return value;
}

std::optional<std::int64_t> leading_integer(std::string_view text) {
  std::size_t end = 0;
  bool negative = false;
  if (end < text.size() && text[end] == '-') {
    negative = true;
    ++end;
  }
  const std::size_t start = end;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) != 0) ++end;
  if (end == start || end - start > 15) return std::nullopt;
  if (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end])) != 0)
    return std::nullopt;
  std::int64_t value = 0;
  std::from_chars(text.data() + start, text.data() + end, value);
  return negative ? -value : value;
}

std::optional<std::int64_t> integer_after(std::string_view line, std::string_view key) {
  const auto rest = after(line, key);
  if (!rest) return std::nullopt;
  return leading_integer(*rest);
}

// "X GB" / "X GiB" / "X MiB" / "X MB" after `key`, in GiB.
std::optional<double> gib_after(std::string_view line, std::string_view key) {
  const auto rest = after(line, key);
  if (!rest) return std::nullopt;
  const auto value = leading_double(*rest);
  if (!value) return std::nullopt;
  const std::size_t unit_at = rest->find_first_not_of("0123456789.-+ ");
  if (unit_at != std::string_view::npos &&
      (rest->substr(unit_at, 2) == "Mi" || rest->substr(unit_at, 2) == "MB")) {
    return *value / 1024.0;
  }
  return *value;
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
      if (value == "None") return std::nullopt;
      return value;
    }
    from = at + 1;
  }
}

// Removes ESC[...m and the "^[[...m" form pasted logs carry.
std::string strip_ansi(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  std::size_t i = 0;
  while (i < line.size()) {
    std::size_t skip = 0;
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      skip = 2;
    } else if (line[i] == '^' && i + 2 < line.size() && line[i + 1] == '[' && line[i + 2] == '[') {
      skip = 3;
    }
    if (skip > 0) {
      std::size_t j = i + skip;
      while (j < line.size() && j - i < 16 &&
             (std::isdigit(static_cast<unsigned char>(line[j])) != 0 || line[j] == ';')) {
        ++j;
      }
      if (j < line.size() && line[j] == 'm') {
        i = j + 1;
        continue;
      }
    }
    out += line[i];
    ++i;
  }
  return out;
}

// The message without "[2025-03-08 12:29:21 TP0] " (or a docker timestamp before it), trimmed.
std::string message_of(std::string_view line) {
  const std::size_t close = line.find("] ");
  if (close != std::string_view::npos && close < 80 && line.find('[') < close) {
    line = line.substr(close + 2);
  }
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front())) != 0)
    line.remove_prefix(1);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())) != 0)
    line.remove_suffix(1);
  return std::string(utf8::truncate(line, kMaxErrorLineBytes));
}

}  // namespace

struct SglangLogParser::State {
  std::string pending;  // the current line so far
  bool skipping_long_line = false;
  std::int64_t bytes_read = 0;
  bool truncated = false;
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
    if (const auto v = server_arg(line, "model_path=")) f.model_path = utf8::replace_invalid(*v);
    auto integer = [&](std::string_view key) -> std::optional<std::int64_t> {
      const auto v = server_arg(line, key);
      return v ? leading_integer(*v) : std::nullopt;
    };
    auto small = [&](std::string_view key) -> std::optional<int> {
      const auto v = integer(key);
      if (!v || *v < -1 || *v > (1 << 20)) return std::nullopt;
      return static_cast<int>(*v);
    };
    f.tp_size = small("tp_size=");
    f.pp_size = small("pp_size=");
    f.dp_size = small("dp_size=");
    f.cuda_graph_max_bs = small("cuda_graph_max_bs=");
    if (const auto v = server_arg(line, "mem_fraction_static="))
      f.mem_fraction_static = leading_double(*v);
    first(f.chunked_prefill_size, integer("chunked_prefill_size="));
    first(f.max_prefill_tokens, integer("max_prefill_tokens="));
    first(f.max_running_requests, integer("max_running_requests="));
    first(f.context_length, integer("context_length="));
    if (const auto v = server_arg(line, "kv_cache_dtype="))
      f.kv_cache_dtype = utf8::replace_invalid(*v);
  }

  void line(std::string_view raw) {
    if (raw.empty()) return;
    const std::string cleaned = strip_ansi(raw);
    const std::string_view l = cleaned;
    SglangLogFigures& f = figures;

    if (contains(l, "server_args=ServerArgs(")) {
      server_args(l);
      return;
    }
    if (!f.sglang_version) {
      const std::string message = message_of(l);
      if (message.rfind("sglang: ", 0) == 0 && message.size() > 8 &&
          std::isdigit(static_cast<unsigned char>(message[8])) != 0) {
        f.sglang_version = utf8::replace_invalid(std::string_view(message).substr(8, 32));
      }
    }
    if (contains(l, "Init torch distributed ends. mem usage=") ||
        contains(l, "Memory baseline taken. mem usage=")) {
      first(f.baseline_usage_gib, gib_after(l, "mem usage="));
      return;
    }
    if (contains(l, "Load weight begin. avail mem=")) {
      // A restart: weights load again after a completed startup.
      if (f.max_total_num_tokens || started) new_launch();
      first(figures.load_begin_avail_gib, gib_after(l, "avail mem="));
      return;
    }
    if (contains(l, "Load weight end.")) {
      if (!f.avail_after_weights_gib) {
        f.avail_after_weights_gib = gib_after(l, "avail mem=");
        f.weights_gib = gib_after(l, "mem usage=");
        // Early 0.4 releases print no "mem usage": the drop across loading.
        if (!f.weights_gib && f.load_begin_avail_gib && f.avail_after_weights_gib) {
          f.weights_gib = *f.load_begin_avail_gib - *f.avail_after_weights_gib;
        }
      }
      return;
    }
    if (contains(l, "KV Cache is allocated.") && !contains(l, "VirtualKV") && !f.k_size_gib &&
        !f.kv_size_gib) {
      first(f.kv_tokens, integer_after(l, "#tokens: "));
      f.k_size_gib = gib_after(l, "K size: ");
      f.v_size_gib = gib_after(l, "V size: ");
      f.kv_size_gib = gib_after(l, "KV size: ");
      return;
    }
    if (contains(l, "Use sliding window memory pool.")) {
      first(f.full_layer_tokens, integer_after(l, "full_layer_tokens="));
      first(f.swa_layer_tokens, integer_after(l, "swa_layer_tokens="));
      return;
    }
    if (contains(l, "Mamba Cache is allocated.")) {
      first(f.mamba_cache_size, integer_after(l, "max_mamba_cache_size: "));
      return;
    }
    if (contains(l, "Memory pool end. avail mem=")) {
      first(f.avail_after_pool_gib, gib_after(l, "avail mem="));
      return;
    }
    if (contains(l, "Capture cuda graph begin") ||
        (contains(l, "Capture target ") && contains(l, "CUDA graph begin"))) {
      in_graph_capture = true;
      return;
    }
    const bool old_graph_end = contains(l, "Capture cuda graph end.");
    const bool target_graph_end = contains(l, "Capture target ") && contains(l, "CUDA graph end.");
    if (old_graph_end || target_graph_end) {
      in_graph_capture = false;
      const auto usage = gib_after(l, "mem usage=");
      if (contains(l, "Capture target prefill")) {
        first(f.prefill_graph_gib, usage);
      } else {
        first(f.decode_graph_gib, usage);
      }
      const auto avail = gib_after(l, "avail mem=");
      if (avail) f.avail_after_graphs_gib = avail;  // the last capture's
      return;
    }
    if (const auto rest = after(l, "max_total_num_tokens=")) {
      if (!f.max_total_num_tokens) {
        f.max_total_num_tokens = leading_integer(*rest);
        first(f.chunked_prefill_size, integer_after(l, "chunked_prefill_size="));
        first(f.max_prefill_tokens, integer_after(l, "max_prefill_tokens="));
        if (const auto r = integer_after(l, "max_running_requests=")) f.max_running_requests = r;
        if (const auto c = integer_after(l, "context_len=")) f.context_length = c;
        f.available_gpu_mem_gib = gib_after(l, "available_gpu_mem=");
      }
      return;
    }
    if (contains(l, "The server is fired up and ready to roll") ||
        contains(l, "Application startup complete")) {
      started = true;
      return;
    }
    // Failures.
    if (contains(l, "Loaded weights leave no GPU memory")) {
      fail("weights_leave_no_memory", l);
    } else if (contains(l, "Not enough memory. Please try to increase --mem-fraction-static") ||
               contains(l, "Not enough GPU memory for hybrid")) {
      fail("not_enough_memory", l);
    } else if (contains(l, "Capture cuda graph failed") ||
               (in_graph_capture &&
                (contains(l, "CUDA out of memory") || contains(l, "OutOfMemoryError")))) {
      fail("oom_cuda_graph_capture", l);
    } else if (contains(l, "CUDA out of memory") || contains(l, "OutOfMemoryError")) {
      fail("oom", l);
    }
    if (contains(l, "Tried to allocate "))
      first(f.oom_tried_gib, gib_after(l, "Tried to allocate "));
  }

  void feed(std::string_view chunk) {
    if (truncated) return;
    const std::int64_t room = kSglangLogMaxBytes - bytes_read;
    if (static_cast<std::int64_t>(chunk.size()) > room) {
      chunk = chunk.substr(0, static_cast<std::size_t>(room));
      truncated = true;
    }
    bytes_read += static_cast<std::int64_t>(chunk.size());
    std::size_t start = 0;
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      if (chunk[i] != '\n' && chunk[i] != '\r') continue;
      append(chunk.substr(start, i - start));
      end_line();
      start = i + 1;
    }
    append(chunk.substr(start));
  }

  void append(std::string_view part) {
    if (skipping_long_line) return;
    if (pending.size() + part.size() > kSglangLogMaxLineBytes) {
      skipping_long_line = true;
      pending.clear();
      return;
    }
    pending.append(part);
  }

  void end_line() {
    if (!skipping_long_line) line(utf8::replace_invalid(pending));
    skipping_long_line = false;
    pending.clear();
  }

  SglangLogFigures finish() {
    end_line();
    figures.truncated = truncated;
    if (!failure.empty()) {
      figures.outcome = failure;
    } else if (started || figures.max_total_num_tokens) {
      figures.outcome = "started";
    }
    return std::move(figures);
  }
};

SglangLogParser::SglangLogParser() : state_(std::make_unique<State>()) {}
SglangLogParser::~SglangLogParser() = default;
void SglangLogParser::feed(std::string_view chunk) { state_->feed(chunk); }
bool SglangLogParser::truncated() const noexcept { return state_->truncated; }
SglangLogFigures SglangLogParser::finish() { return state_->finish(); }

SglangLogFigures parse_sglang_log(std::string_view text) {
  SglangLogParser parser;
  parser.feed(text);
  return parser.finish();
}

SglangLogFigures read_sglang_log_file(const std::string& path) {
  RegularFile in(path, "log", std::numeric_limits<std::int64_t>::max());
  constexpr std::size_t kChunkBytes = 1 << 20;
  std::string chunk(kChunkBytes, '\0');
  SglangLogParser parser;
  while (!parser.truncated()) {
    const std::size_t got = in.read(chunk.data(), chunk.size());
    parser.feed(std::string_view(chunk.data(), got));
    if (got < chunk.size()) break;
  }
  return parser.finish();
}

nlohmann::json to_json(const SglangLogFigures& f) {
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json j = nlohmann::json::object();
  j["sglang_version"] = opt(f.sglang_version);
  j["model_path"] = opt(f.model_path);
  j["tp_size"] = opt(f.tp_size);
  j["pp_size"] = opt(f.pp_size);
  j["dp_size"] = opt(f.dp_size);
  j["mem_fraction_static"] = opt(f.mem_fraction_static);
  j["chunked_prefill_size"] = opt(f.chunked_prefill_size);
  j["max_prefill_tokens"] = opt(f.max_prefill_tokens);
  j["max_running_requests"] = opt(f.max_running_requests);
  j["context_length"] = opt(f.context_length);
  j["cuda_graph_max_bs"] = opt(f.cuda_graph_max_bs);
  j["kv_cache_dtype"] = opt(f.kv_cache_dtype);
  j["baseline_usage_gib"] = opt(f.baseline_usage_gib);
  j["load_begin_avail_gib"] = opt(f.load_begin_avail_gib);
  j["weights_gib"] = opt(f.weights_gib);
  j["avail_after_weights_gib"] = opt(f.avail_after_weights_gib);
  j["kv_tokens"] = opt(f.kv_tokens);
  j["k_size_gib"] = opt(f.k_size_gib);
  j["v_size_gib"] = opt(f.v_size_gib);
  j["kv_size_gib"] = opt(f.kv_size_gib);
  j["full_layer_tokens"] = opt(f.full_layer_tokens);
  j["swa_layer_tokens"] = opt(f.swa_layer_tokens);
  j["mamba_cache_size"] = opt(f.mamba_cache_size);
  j["avail_after_pool_gib"] = opt(f.avail_after_pool_gib);
  j["decode_graph_gib"] = opt(f.decode_graph_gib);
  j["prefill_graph_gib"] = opt(f.prefill_graph_gib);
  j["avail_after_graphs_gib"] = opt(f.avail_after_graphs_gib);
  j["max_total_num_tokens"] = opt(f.max_total_num_tokens);
  j["available_gpu_mem_gib"] = opt(f.available_gpu_mem_gib);
  j["oom_tried_gib"] = opt(f.oom_tried_gib);
  j["outcome"] = f.outcome;
  j["error_lines"] = f.error_lines;
  j["truncated"] = f.truncated;
  j["launches"] = f.launches;
  return j;
}

}  // namespace vramplan
