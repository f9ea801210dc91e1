// vLLM startup-log parser: a single pass over the lines, each matched against fixed phrases
// with string_view::find (no regular expressions, so no backtracking on hostile input).
#include "vramplan/log_parser.hpp"

#include <charconv>
#include <cstddef>
#include <map>
#include <set>
#include <utility>

#include "vramplan/bounded_read.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/utf8.hpp"

namespace vramplan {
namespace {

constexpr std::size_t kMaxErrorLines = 32;
constexpr std::size_t kMaxErrorLineBytes = 2000;
constexpr std::size_t kMaxNumberChars = 40;
constexpr std::size_t npos = std::string_view::npos;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }
bool is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (is_space(s.front()) || s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (is_space(s.back()) || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}
bool contains(std::string_view s, std::string_view p) { return s.find(p) != npos; }

std::size_t skip_spaces(std::string_view s, std::size_t pos) {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  return pos;
}

// Removes ANSI escape sequences (ESC '[' params final-byte, and the two-byte ESC forms) and
// their caret-escaped copy "^[[...m" found in logs pasted into issues.
std::string strip_ansi(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  std::size_t i = 0;
  while (i < in.size()) {
    const char c = in[i];
    std::size_t csi_start = npos;
    if (c == '\x1b') {
      if (i + 1 < in.size() && in[i + 1] == '[') {
        csi_start = i + 2;
      } else {
        i += (i + 1 < in.size()) ? 2 : 1;  // ESC x: drop both
        continue;
      }
    } else if (c == '^' && i + 2 < in.size() && in[i + 1] == '[' && in[i + 2] == '[') {
      csi_start = i + 3;
    }
    if (csi_start != npos) {
      std::size_t j = csi_start;
      // Parameter and intermediate bytes, bounded so a lone "ESC[" cannot swallow a line.
      while (j < in.size() && j - csi_start < 32 && static_cast<unsigned char>(in[j]) >= 0x20 &&
             static_cast<unsigned char>(in[j]) <= 0x3f) {
        ++j;
      }
      if (j < in.size() && static_cast<unsigned char>(in[j]) >= 0x40 &&
          static_cast<unsigned char>(in[j]) <= 0x7e) {
        i = j + 1;
        continue;
      }
      if (c == '\x1b') {  // malformed CSI: drop the ESC only
        ++i;
        continue;
      }
    }
    out.push_back(c);
    ++i;
  }
  return out;
}

// "(EngineCore pid=242) ", "(Worker_TP1 pid=445) " (possibly nested) and "[rank0]: ".
std::string_view strip_process_prefix(std::string_view s) {
  for (int round = 0; round < 4; ++round) {
    s = trim(s);
    if (starts_with(s, "(")) {
      const std::size_t close = s.find(')');
      if (close == npos || close > 120) break;
      const std::string_view inside = s.substr(1, close - 1);
      if (!contains(inside, "pid=")) break;
      s.remove_prefix(close + 1);
    } else if (starts_with(s, "[rank")) {
      const std::size_t close = s.find("]:");
      if (close == npos || close > 16) break;
      s.remove_prefix(close + 2);
    } else {
      break;
    }
  }
  return trim(s);
}

// "INFO 04-22 00:04:02 [v1/worker/gpu_model_runner.py:4820] msg" -> "msg";
// V0 "INFO 01-16 09:40:00 worker.py:238] msg" -> "msg".
std::string_view strip_log_header(std::string_view s) {
  static constexpr std::string_view kLevels[] = {"DEBUG ", "INFO ",     "WARNING ",
                                                 "ERROR ", "CRITICAL ", "WARN "};
  for (std::string_view level : kLevels) {
    if (!starts_with(s, level)) continue;
    const std::size_t close = s.find("] ");
    if (close != npos && close < 240) return trim(s.substr(close + 2));
    return s;
  }
  return s;
}

struct Number {
  double value = 0.0;
  std::size_t end = 0;  // one past the last character used
  bool integral = true;
};

bool digit_at(std::string_view s, std::size_t i) { return i < s.size() && is_digit(s[i]); }

// A decimal number at s[pos] (after optional spaces): optional sign, digits with optional
// thousands commas in groups of three ("1,234,560"), optional fraction. No exponent. A number
// running on into more number text ("1,23", "1.2.3", "1e5", "12-3") is malformed: none, never
// a prefix of it read as something else.
std::optional<Number> parse_number(std::string_view s, std::size_t pos) {
  pos = skip_spaces(s, pos);
  std::string buf;
  std::size_t i = pos;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
    if (s[i] == '-') buf.push_back('-');
    ++i;
  }
  std::size_t digits = 0;
  bool integral = true;
  while (i < s.size() && buf.size() < kMaxNumberChars) {
    const char c = s[i];
    if (is_digit(c)) {
      buf.push_back(c);
      ++digits;
      ++i;
    } else if (c == ',' && digits > 0 && integral && digit_at(s, i + 1)) {
      // A thousands separator: exactly three digits follow.
      if (!digit_at(s, i + 2) || !digit_at(s, i + 3) || digit_at(s, i + 4)) return std::nullopt;
      ++i;
    } else if (c == '.' && integral && i + 1 < s.size() && is_digit(s[i + 1])) {
      buf.push_back('.');
      integral = false;
      ++i;
    } else {
      break;
    }
  }
  if (digits == 0 || buf.size() >= kMaxNumberChars) return std::nullopt;
  if (i < s.size()) {
    const char next = s[i];
    const bool signed_exponent = i + 1 < s.size() && (s[i + 1] == '-' || s[i + 1] == '+');
    if (((next == '.' || next == ',' || next == '-') && digit_at(s, i + 1)) ||
        ((next == 'e' || next == 'E') && digit_at(s, i + (signed_exponent ? 2 : 1)))) {
      return std::nullopt;
    }
  }
  Number n;
  const auto res = std::from_chars(buf.data(), buf.data() + buf.size(), n.value);
  if (res.ec != std::errc{}) return std::nullopt;
  n.end = i;
  n.integral = integral;
  return n;
}

// Counts (tokens, blocks, lengths, sizes of a launch): a negative one is malformed.
std::optional<std::int64_t> to_int64(const Number& n) {
  if (!n.integral || n.value > 9.0e18 || n.value < 0.0) return std::nullopt;
  return static_cast<std::int64_t>(n.value);
}

std::optional<std::int64_t> parse_int(std::string_view s, std::size_t pos) {
  const auto n = parse_number(s, pos);
  if (!n) return std::nullopt;
  return to_int64(*n);
}

// A size "X GiB" / "X.XXGiB" / "X GB" / "X MiB" at s[pos]; converted to GiB.
struct Size {
  double gib = 0.0;
  std::size_t end = 0;
};

std::optional<Size> parse_size(std::string_view s, std::size_t pos) {
  const auto n = parse_number(s, pos);
  if (!n) return std::nullopt;
  const std::size_t u = skip_spaces(s, n->end);
  struct Unit {
    std::string_view name;
    double to_gib;
  };
  static constexpr Unit kUnits[] = {
      {"GiB", 1.0},
      {"Gib", 1.0},
      {"GB", 1.0},
      {"MiB", 1.0 / 1024.0},
      {"MB", 1.0 / 1024.0},
      {"KiB", 1.0 / 1048576.0},
      {"KB", 1.0 / 1048576.0},
      {"TiB", 1024.0},
      {"bytes", 1.0 / 1073741824.0},
  };
  const std::string_view rest = s.substr(u);
  for (const Unit& unit : kUnits) {
    if (starts_with(rest, unit.name)) {
      return Size{n->value * unit.to_gib, u + unit.name.size()};
    }
  }
  return std::nullopt;
}

// The size right after `key` in `line`, if the line holds it.
std::optional<double> size_after(std::string_view line, std::string_view key) {
  const std::size_t at = line.find(key);
  if (at == npos) return std::nullopt;
  const auto sz = parse_size(line, at + key.size());
  if (!sz) return std::nullopt;
  return sz->gib;
}

std::optional<std::int64_t> int_after(std::string_view line, std::string_view key) {
  const std::size_t at = line.find(key);
  if (at == npos) return std::nullopt;
  return parse_int(line, at + key.size());
}

std::optional<double> number_after(std::string_view line, std::string_view key) {
  const std::size_t at = line.find(key);
  if (at == npos) return std::nullopt;
  const auto n = parse_number(line, at + key.size());
  if (!n) return std::nullopt;
  return n->value;
}

// The number that ends right before s[end] ("(16.00 GiB KV cache is needed": end at " GiB").
std::optional<Number> number_before(std::string_view s, std::size_t end) {
  std::size_t begin = end;
  while (begin > 0 && end - begin < kMaxNumberChars &&
         (is_digit(s[begin - 1]) || s[begin - 1] == '.' || s[begin - 1] == ',')) {
    --begin;
  }
  if (begin > 0 && s[begin - 1] == '-') --begin;
  if (begin == end) return std::nullopt;
  auto n = parse_number(s, begin);
  if (!n || n->end != end) return std::nullopt;
  return n;
}

template <typename T>
void set_first(std::optional<T>& field, const std::optional<T>& value) {
  if (!field && value) field = value;
}
template <typename T, typename U>
void set_first_value(std::optional<T>& field, U&& value) {
  if (!field) field = std::forward<U>(value);
}

// ---------------------------------------------------------------------------------------
// Launch settings: "non-default args: {'model': 'x', 'max_model_len': 8192, ...}" (Python dict
// text) and "with config: model='x', dtype=torch.bfloat16, ..." (key=value list).

struct RawValue {
  std::string text;
  bool quoted = false;
  bool nested = false;  // a dict/list/tuple/call: not a scalar
};
using KeyValues = std::map<std::string, RawValue>;

// Reads a quoted string starting at s[pos] (s[pos] is the quote). Returns the end (one past
// the closing quote, or s.size() if unterminated).
std::size_t read_quoted(std::string_view s, std::size_t pos, std::string* out) {
  const char q = s[pos];
  std::size_t i = pos + 1;
  while (i < s.size() && s[i] != q) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      if (out) out->push_back(s[i + 1]);
      i += 2;
      continue;
    }
    if (out) out->push_back(s[i]);
    ++i;
  }
  return i < s.size() ? i + 1 : s.size();
}

// Reads an unquoted value up to the first `stop` character at bracket depth 0. Brackets and
// quotes inside are skipped over; depth is capped so a hostile line cannot overflow anything.
std::size_t read_bare(std::string_view s, std::size_t pos, std::string_view stops, RawValue* v) {
  int depth = 0;
  std::size_t i = pos;
  while (i < s.size()) {
    const char c = s[i];
    if (depth == 0 && stops.find(c) != npos) break;
    if (c == '\'' || c == '"') {
      i = read_quoted(s, i, nullptr);
      if (v) v->nested = true;
      continue;
    }
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (depth < 1000) ++depth;
      if (v) v->nested = true;
    } else if ((c == ')' || c == ']' || c == '}' || c == '>') && depth > 0) {
      --depth;
    }
    ++i;
  }
  if (v) v->text = std::string(trim(s.substr(pos, i - pos)));
  return i;
}

// Python dict text after '{'. Stops at the matching '}' or end of line.
KeyValues parse_python_dict(std::string_view s, std::size_t pos) {
  KeyValues out;
  std::size_t i = pos;
  while (i < s.size()) {
    i = skip_spaces(s, i);
    if (i >= s.size() || s[i] == '}') break;
    if (s[i] == ',') {
      ++i;
      continue;
    }
    std::string key;
    if (s[i] == '\'' || s[i] == '"') {
      i = read_quoted(s, i, &key);
    } else {  // not a string key: skip this entry
      i = read_bare(s, i, ",}", nullptr);
      continue;
    }
    i = skip_spaces(s, i);
    if (i >= s.size() || s[i] != ':') continue;
    i = skip_spaces(s, i + 1);
    if (i >= s.size()) break;
    RawValue v;
    if (s[i] == '\'' || s[i] == '"') {
      i = read_quoted(s, i, &v.text);
      v.quoted = true;
    } else {
      i = read_bare(s, i, ",}", &v);
    }
    out.emplace(std::move(key), std::move(v));
  }
  return out;
}

// "key=value, key=value, ..." (vLLM's engine config line).
KeyValues parse_key_equals_list(std::string_view s, std::size_t pos) {
  KeyValues out;
  std::size_t i = pos;
  while (i < s.size()) {
    i = skip_spaces(s, i);
    std::size_t k = i;
    while (k < s.size() && is_ident(s[k])) ++k;
    if (k == i || k >= s.size() || s[k] != '=') {  // not "key=": skip to the next entry
      i = read_bare(s, i, ",", nullptr);
      if (i < s.size()) ++i;
      continue;
    }
    std::string key(s.substr(i, k - i));
    i = k + 1;
    RawValue v;
    if (i < s.size() && (s[i] == '\'' || s[i] == '"')) {
      i = read_quoted(s, i, &v.text);
      v.quoted = true;
      i = read_bare(s, i, ",", nullptr);  // anything trailing the quote
    } else {
      i = read_bare(s, i, ",", &v);
    }
    if (i < s.size()) ++i;  // the comma
    out.emplace(std::move(key), std::move(v));
  }
  return out;
}

std::optional<std::string> as_string(const RawValue& v) {
  if (v.nested && !v.quoted) return std::nullopt;
  if (!v.quoted && (v.text == "None" || v.text.empty())) return std::nullopt;
  if (v.text.size() > 512) return std::nullopt;
  return v.text;
}

std::optional<std::int64_t> as_int(const RawValue& v) {
  if (v.quoted || v.nested) return std::nullopt;
  const auto n = parse_number(v.text, 0);
  if (!n || n->end != v.text.size()) return std::nullopt;
  return to_int64(*n);
}

std::optional<int> as_small_int(const RawValue& v) {
  const auto n = as_int(v);
  if (!n || *n < 0 || *n > 1000000) return std::nullopt;
  return static_cast<int>(*n);
}

std::optional<double> as_double(const RawValue& v) {
  if (v.quoted || v.nested) return std::nullopt;
  const auto n = parse_number(v.text, 0);
  if (!n || n->end != v.text.size()) return std::nullopt;
  return n->value;
}

std::optional<bool> as_bool(const RawValue& v) {
  if (v.quoted || v.nested) return std::nullopt;
  if (v.text == "True" || v.text == "true") return true;
  if (v.text == "False" || v.text == "false") return false;
  return std::nullopt;
}

std::string strip_torch(std::string s) {
  if (starts_with(s, "torch.")) s.erase(0, 6);
  return s;
}

// Launch fields from a key/value source, first value wins within the source.
void apply_launch(const KeyValues& kv, VllmLogFigures& f) {
  auto get = [&kv](const char* key) -> const RawValue* {
    const auto it = kv.find(key);
    return it == kv.end() ? nullptr : &it->second;
  };
  if (const RawValue* v = get("model")) set_first(f.model, as_string(*v));
  if (const RawValue* v = get("dtype")) {
    if (auto s = as_string(*v)) set_first_value(f.dtype, strip_torch(*s));
  }
  if (const RawValue* v = get("quantization")) set_first(f.quantization, as_string(*v));
  if (const RawValue* v = get("kv_cache_dtype")) {
    if (auto s = as_string(*v)) set_first_value(f.kv_cache_dtype, strip_torch(*s));
  }
  if (const RawValue* v = get("tensor_parallel_size")) {
    set_first(f.tensor_parallel_size, as_small_int(*v));
  }
  if (const RawValue* v = get("pipeline_parallel_size")) {
    set_first(f.pipeline_parallel_size, as_small_int(*v));
  }
  if (const RawValue* v = get("data_parallel_size")) {
    set_first(f.data_parallel_size, as_small_int(*v));
  }
  if (const RawValue* v = get("gpu_memory_utilization")) {
    set_first(f.gpu_memory_utilization, as_double(*v));
  }
  if (const RawValue* v = get("max_model_len")) set_first(f.max_model_len, as_int(*v));
  if (const RawValue* v = get("max_seq_len")) set_first(f.max_model_len, as_int(*v));
  if (const RawValue* v = get("max_num_seqs")) set_first(f.max_num_seqs, as_int(*v));
  if (const RawValue* v = get("max_num_batched_tokens")) {
    set_first(f.max_num_batched_tokens, as_int(*v));
  }
  if (const RawValue* v = get("block_size")) set_first(f.block_size, as_int(*v));
  if (const RawValue* v = get("enforce_eager")) set_first(f.enforce_eager, as_bool(*v));
  if (const RawValue* v = get("enable_prefix_caching")) {
    set_first(f.enable_prefix_caching, as_bool(*v));
  }
}

// A version token "0.19.0" / "0.6.4.post2.dev123+g1234" starting at s[pos].
std::optional<std::string> version_at(std::string_view s, std::size_t pos) {
  pos = skip_spaces(s, pos);
  if (pos < s.size() && s[pos] == 'v') ++pos;
  std::size_t end = pos;
  while (end < s.size() && end - pos < 64 &&
         (is_ident(s[end]) || s[end] == '.' || s[end] == '+' || s[end] == '-')) {
    ++end;
  }
  if (end == pos || !is_digit(s[pos])) return std::nullopt;
  return std::string(s.substr(pos, end - pos));
}

// A generic Python exception line: "ValueError: ...", "torch.OutOfMemoryError: ...",
// "Exception: ...".
bool is_exception_line(std::string_view msg) {
  std::size_t i = 0;
  while (i < msg.size() && i < 100 && (is_ident(msg[i]) || msg[i] == '.')) ++i;
  if (i == 0 || i >= msg.size() || msg[i] != ':') return false;
  const std::string_view name = msg.substr(0, i);
  return ends_with(name, "Error") || ends_with(name, "Exception");
}

// ---------------------------------------------------------------------------------------

class Parser {
 public:
  void line(std::string_view raw);
  VllmLogFigures finish();

 private:
  void launch_line(std::string_view line);
  void memory_line(std::string_view line);
  void failure_line(std::string_view line, std::string_view msg);
  void add_error(std::string_view msg, std::vector<std::string>& into);
  bool kv_seen() const { return f_.kv_cache_gib || f_.kv_tokens || f_.num_gpu_blocks; }

  VllmLogFigures f_;       // measured figures, gpu_total_gib, version
  VllmLogFigures args_;    // launch settings from "non-default args"
  VllmLogFigures config_;  // ... from the engine config line
  VllmLogFigures other_;   // ... from lines stating the effective value

  std::int32_t launches_ = 1;
  bool server_seen_ = false;  // "vLLM API server version": once per launch
  bool args_seen_ = false;    // "non-default args: {": once per launch
  bool started_ = false;
  bool startup_free_fail_ = false;
  bool insufficient_ = false;
  std::optional<bool> first_oom_after_kv_;
  bool no_kv_memory_ = false;
  bool generic_failure_ = false;
  std::vector<std::string> error_lines_;
  std::vector<std::string> exception_lines_;
  std::set<std::string> seen_errors_;
};

void Parser::line(std::string_view raw) {
  if (raw.size() > kVllmLogMaxLineBytes) return;
  std::string cleaned;
  std::string_view text = raw;
  if (contains(raw, "\x1b") || contains(raw, "^[[")) {
    cleaned = strip_ansi(raw);
    text = cleaned;
  }
  // Text from here on may be reported back (error lines, names): repair it once, after the
  // ANSI removal (which can drop a lead byte and leave its continuation bytes).
  if (utf8::find_invalid(text) != npos) {
    cleaned = utf8::replace_invalid(text);
    text = cleaned;
  }
  const std::string_view line = strip_process_prefix(text);
  if (line.empty()) return;
  const std::string_view msg = strip_log_header(line);

  // A second launch in the same file starts the parse over: its figures alone are reported.
  const bool server_line = contains(line, "vLLM API server version ");
  const bool args_line = contains(line, "non-default args: {");
  if ((server_line && server_seen_) || (args_line && args_seen_)) {
    const std::int32_t launches = launches_ + 1;
    *this = Parser();
    launches_ = launches;
  }
  server_seen_ |= server_line;
  args_seen_ |= args_line;
  if (contains(line, "Application startup complete") ||
      contains(line, "Starting vLLM API server") || contains(line, "Starting vLLM server on")) {
    started_ = true;
  }
  launch_line(line);
  memory_line(line);
  failure_line(line, msg);
}

void Parser::launch_line(std::string_view line) {
  // Version.
  if (!f_.vllm_version) {
    std::size_t at;
    if ((at = line.find("vLLM API server version ")) != npos) {
      f_.vllm_version = version_at(line, at + 24);
    } else if ((at = line.find("LLM engine (v")) != npos) {
      f_.vllm_version = version_at(line, at + 12);
    } else if (contains(line, "\xE2\x96") && (at = line.find(" version ")) != npos) {
      f_.vllm_version = version_at(line, at + 9);  // the ASCII-art banner
    }
  }
  std::size_t at;
  if ((at = line.find("non-default args: {")) != npos) {
    apply_launch(parse_python_dict(line, at + 19), args_);
  }
  if (contains(line, "LLM engine") && (at = line.find("with config: ")) != npos) {
    apply_launch(parse_key_equals_list(line, at + 13), config_);
  }
  // Effective values stated elsewhere.
  set_first(other_.max_model_len, int_after(line, "Using max model len "));
  set_first(other_.max_num_seqs, int_after(line, "Defaulting max_num_seqs to "));
  set_first(other_.max_num_batched_tokens,
            int_after(line, "Defaulting max_num_batched_tokens to "));
  set_first(other_.max_num_batched_tokens,
            int_after(line, "Chunked prefill is enabled with max_num_batched_tokens="));
  set_first(other_.block_size, int_after(line, "Setting attention block size to "));
  set_first(other_.gpu_memory_utilization, number_after(line, "Requested memory: "));
  set_first(other_.gpu_memory_utilization, number_after(line, "x gpu_memory_utilization ("));
  set_first(other_.gpu_memory_utilization,
            number_after(line, "Desired GPU memory utilization is ("));
  set_first(other_.gpu_memory_utilization, number_after(line, "desired GPU memory utilization ("));
  if (contains(line, "Memory profiling results")) {
    set_first(other_.gpu_memory_utilization, number_after(line, "gpu_memory_utilization="));
  }
  if (!other_.model && (at = line.find("Starting to load model ")) != npos) {
    std::string_view name = trim(line.substr(at + 23));
    while (!name.empty() && name.back() == '.') name.remove_suffix(1);
    if (!name.empty() && name.size() < 512 && !contains(name, " "))
      other_.model = std::string(name);
  }
}

void Parser::memory_line(std::string_view line) {
  // Device total, from whichever memory line states it first.
  set_first(f_.gpu_total_gib, size_after(line, "total_memory="));
  set_first(f_.gpu_total_gib, size_after(line, "total_gpu_memory ("));
  set_first(f_.gpu_total_gib, size_after(line, "total_gpu_memory="));
  set_first(f_.gpu_total_gib, size_after(line, "total capacity of "));
  std::size_t at;
  if ((at = line.find("Free memory on device")) != npos) {
    const std::size_t open = line.find('(', at);
    const std::size_t slash = open == npos ? npos : line.find('/', open);
    if (open != npos && slash != npos && slash - open < 48) {
      if (const auto t = parse_size(line, slash + 1)) set_first_value(f_.gpu_total_gib, t->gib);
    }
  }
  // Older torch OOM text: "(GPU 0; 79.15 GiB total capacity; ...)".
  if ((at = line.find(" total capacity;")) != npos) {
    const std::size_t semi = line.rfind(';', at);
    const std::size_t start = semi == npos ? line.rfind('(', at) : semi;
    if (start != npos && at - start < 48) {
      const auto sz = parse_size(line, start + 1);
      if (sz && sz->end == at) set_first_value(f_.gpu_total_gib, sz->gib);
    }
  }

  // Weights.
  set_first(f_.weights_gib, size_after(line, "Model loading took "));
  set_first(f_.weights_gib, size_after(line, "Loading model weights took "));
  set_first(f_.weights_gib, size_after(line, "model weights take "));
  // Profile.
  set_first(f_.activation_peak_gib, size_after(line, "torch peak memory increase: "));
  if ((at = line.find("PyTorch activation peak memory")) != npos) {
    std::size_t p = skip_spaces(line, at + 30);
    if (starts_with(line.substr(p), "takes")) p += 5;
    const auto sz = parse_size(line, p);
    if (sz) set_first_value(f_.activation_peak_gib, sz->gib);
  }
  set_first(f_.non_torch_gib, size_after(line, "non-torch forward increase memory: "));
  set_first(f_.non_torch_gib, size_after(line, "non_torch_memory takes "));
  set_first(f_.total_non_kv_gib, size_after(line, "Total non KV cache memory: "));
  if (contains(line, "Memory profiling results")) {  // V0, late 2024
    set_first(f_.non_torch_gib, size_after(line, "non_torch_memory="));
    set_first(f_.kv_cache_gib, size_after(line, "kv_cache_size="));
  }
  // KV cache.
  set_first(f_.kv_cache_gib, size_after(line, "Available KV cache memory: "));
  set_first(f_.kv_cache_gib, size_after(line, "the rest of the memory reserved for KV Cache is "));
  set_first(f_.kv_tokens, int_after(line, "GPU KV cache size: "));
  set_first(f_.num_gpu_blocks, int_after(line, "# GPU blocks: "));
  set_first(f_.num_gpu_blocks, int_after(line, "# CUDA blocks: "));
  set_first(f_.num_gpu_blocks, int_after(line, "# cuda blocks: "));
  if (!f_.max_concurrency && (at = line.find("Maximum concurrency for ")) != npos) {
    const auto tokens = parse_number(line, at + 24);
    if (tokens) {
      const std::size_t colon = line.find("per request: ", tokens->end);
      if (colon != npos && colon - tokens->end < 32) {
        const auto x = parse_number(line, colon + 13);
        if (x) {
          f_.max_concurrency = x->value;
          f_.max_concurrency_tokens = to_int64(*tokens);
        }
      }
    }
  }
  // "Add 3 padding layers, may waste at most 10.00% KV cache memory".
  if (!f_.padding_layers && (at = line.find(" padding layers")) != npos) {
    const auto n = number_before(line, at);
    const std::size_t digits_begin = line.rfind("Add ", at);
    if (n && n->integral && digits_begin != npos && at - digits_begin <= 4 + kMaxNumberChars) {
      f_.padding_layers = to_int64(*n);
    }
  }
  // CUDA graphs. Model Runner V2 (0.29+) estimates by capturing before the KV budget: a
  // capture it logs before the KV cache is sized is that estimate, not the real capture.
  if ((at = line.find("Graph capturing finished in ")) != npos) {
    const std::size_t took = line.find(", took ", at);
    if (took != npos) {
      const auto taken = size_after(line.substr(took), ", took ");
      if (f_.model_runner_v2 && !kv_seen()) {
        set_first(f_.cudagraph_estimate_gib, taken);
      } else {
        set_first(f_.cudagraph_gib, taken);
      }
    }
  }
  set_first(f_.cudagraph_estimate_gib, size_after(line, "Estimated CUDA graph memory: "));
  // vLLM 0.27+ lines.
  if (contains(line, "Using V2 Model Runner")) f_.model_runner_v2 = true;
  if ((at = line.find(" GiB for consumed memory")) != npos) {
    if (const auto consumed = number_before(line, at)) {
      set_first_value(f_.consumed_gib, consumed->value);
    }
    const std::size_t flag = line.find("`--kv-cache-memory=", at);
    if (flag != npos && !f_.suggested_kv_cache_memory_bytes) {
      const auto bytes = parse_number(line, flag + 19);
      if (bytes && bytes->integral) f_.suggested_kv_cache_memory_bytes = to_int64(*bytes);
    }
  }
}

void Parser::add_error(std::string_view msg, std::vector<std::string>& into) {
  std::string text(utf8::truncate(trim(msg), kMaxErrorLineBytes));
  if (text.empty() || error_lines_.size() + exception_lines_.size() >= 4 * kMaxErrorLines) return;
  if (!seen_errors_.insert(text).second) return;
  into.push_back(std::move(text));
}

void Parser::failure_line(std::string_view line, std::string_view msg) {
  bool failure = false;
  std::size_t at;

  // Startup free-memory check (V1 >= 0.9): "Free memory on device cuda:1 (60.33/79.19 GiB) on
  // startup is less than desired GPU memory utilization (0.95, 75.23 GiB)."
  if ((at = line.find("Free memory on device")) != npos && contains(line, "is less than desired")) {
    failure = true;
    if (!started_) startup_free_fail_ = true;
    const std::size_t open = line.find('(', at);
    if (open != npos && !f_.startup_free_gib) {
      const auto free_n = parse_number(line, open + 1);
      if (free_n) f_.startup_free_gib = free_n->value;
    }
    const std::size_t util = line.find("utilization (", at);
    if (util != npos && !f_.startup_desired_gib) {
      const auto u = parse_number(line, util + 13);
      if (u && u->end < line.size() && line[u->end] == ',') {
        const auto r = parse_size(line, u->end + 1);
        if (r) f_.startup_desired_gib = r->gib;
      }
    }
  }

  // Not enough KV cache for one max_model_len request (V1).
  if ((at = line.find(" GiB KV cache is needed")) != npos) {
    failure = true;
    if (!started_) insufficient_ = true;
    if (const auto needed = number_before(line, at))
      set_first_value(f_.needed_kv_gib, needed->value);
    set_first(f_.estimated_max_model_len, int_after(line, "estimated maximum model length is "));
    const std::size_t seq = line.find("max seq len (");
    if (seq != npos) set_first(other_.max_model_len, parse_int(line, seq + 13));
  }
  // ... and its V0 form.
  if (contains(line,
               "is larger than the maximum number of tokens that can be stored in KV cache")) {
    failure = true;
    if (!started_) insufficient_ = true;
    const std::size_t seq = line.find("max seq len (");
    if (seq != npos) set_first(other_.max_model_len, parse_int(line, seq + 13));
  }

  // CUDA out of memory (torch allocator), and vLLM's rewrap of it at sampler warm-up.
  if (contains(line, "CUDA out of memory") || contains(line, "OutOfMemoryError")) {
    failure = true;
    if (!started_ && !first_oom_after_kv_) first_oom_after_kv_ = kv_seen();
    if (!f_.oom_tried_gib && (at = line.find("Tried to allocate ")) != npos) {
      const auto tried = parse_size(line, at + 18);
      if (tried) {
        f_.oom_tried_gib = tried->gib;
        set_first(f_.oom_total_gib, size_after(line, "total capacity of "));
        set_first(f_.oom_free_gib, size_after(line, "of which "));
        if (!f_.oom_total_gib) {  // older torch: "(GPU 0; 79.15 GiB total capacity; ...)"
          const std::size_t cap = line.find(" total capacity;");
          const std::size_t semi = cap == npos ? npos : line.rfind(';', cap);
          if (semi != npos && cap - semi < 48) {
            const auto sz = parse_size(line, semi + 1);
            if (sz) f_.oom_total_gib = sz->gib;
          }
        }
        if (!f_.oom_free_gib) {  // older torch: "; 10.81 MiB free;"
          const std::size_t fr = line.find(" free;");
          const std::size_t semi = fr == npos ? npos : line.rfind(';', fr);
          if (semi != npos && fr - semi < 48) {
            const auto sz = parse_size(line, semi + 1);
            if (sz && sz->end == fr) f_.oom_free_gib = sz->gib;
          }
        }
      }
    }
  }

  // No room at all for KV blocks (V1), or a negative KV budget printed before it.
  if (contains(line, "No available memory for the cache blocks")) {
    failure = true;
    if (!started_) no_kv_memory_ = true;
  }
  if ((at = line.find("Available KV cache memory: ")) != npos) {
    const auto sz = parse_size(line, at + 27);
    if (sz && sz->gib < 0) {
      failure = true;
      if (!started_) no_kv_memory_ = true;
    }
  }

  if (failure) {
    add_error(msg, error_lines_);
    return;
  }
  if (started_) return;
  if (contains(line, "EngineCore failed to start") ||
      contains(line, "Engine core initialization failed") ||
      contains(line, "WorkerProc failed to start")) {
    generic_failure_ = true;
  }
  if (is_exception_line(msg)) {
    generic_failure_ = true;
    add_error(msg, exception_lines_);
  }
}

VllmLogFigures Parser::finish() {
  VllmLogFigures out = std::move(f_);
  out.launches = launches_;
  // Launch settings: non-default args, then the engine config line, then effective values.
  auto pick = [](auto& dst, const auto& a, const auto& b, const auto& c) {
    if (a) {
      dst = a;
    } else if (b) {
      dst = b;
    } else {
      dst = c;
    }
  };
  pick(out.model, args_.model, config_.model, other_.model);
  pick(out.dtype, args_.dtype, config_.dtype, other_.dtype);
  pick(out.quantization, args_.quantization, config_.quantization, other_.quantization);
  pick(out.kv_cache_dtype, args_.kv_cache_dtype, config_.kv_cache_dtype, other_.kv_cache_dtype);
  pick(out.tensor_parallel_size, args_.tensor_parallel_size, config_.tensor_parallel_size,
       other_.tensor_parallel_size);
  pick(out.pipeline_parallel_size, args_.pipeline_parallel_size, config_.pipeline_parallel_size,
       other_.pipeline_parallel_size);
  pick(out.data_parallel_size, args_.data_parallel_size, config_.data_parallel_size,
       other_.data_parallel_size);
  pick(out.gpu_memory_utilization, args_.gpu_memory_utilization, config_.gpu_memory_utilization,
       other_.gpu_memory_utilization);
  pick(out.max_model_len, args_.max_model_len, config_.max_model_len, other_.max_model_len);
  pick(out.max_num_seqs, args_.max_num_seqs, config_.max_num_seqs, other_.max_num_seqs);
  pick(out.max_num_batched_tokens, args_.max_num_batched_tokens, config_.max_num_batched_tokens,
       other_.max_num_batched_tokens);
  pick(out.block_size, args_.block_size, config_.block_size, other_.block_size);
  pick(out.enforce_eager, args_.enforce_eager, config_.enforce_eager, other_.enforce_eager);
  pick(out.enable_prefix_caching, args_.enable_prefix_caching, config_.enable_prefix_caching,
       other_.enable_prefix_caching);

  const bool negative_kv = out.kv_cache_gib && *out.kv_cache_gib < 0;
  const bool kv_printed = out.kv_cache_gib || out.kv_tokens || out.num_gpu_blocks;
  if (startup_free_fail_) {
    out.outcome = "startup_free_memory";
  } else if (insufficient_) {
    out.outcome = "insufficient_kv_for_max_model_len";
  } else if (first_oom_after_kv_) {
    out.outcome = *first_oom_after_kv_ ? "oom_kv_alloc" : "oom_at_load";
  } else if (no_kv_memory_ || negative_kv) {
    out.outcome = "oom_kv_alloc";
  } else if (started_ || (kv_printed && !generic_failure_)) {
    out.outcome = "started";
  } else {
    out.outcome = "unknown";
  }

  out.error_lines = std::move(error_lines_);
  if (out.outcome != "started") {
    for (std::string& e : exception_lines_) out.error_lines.push_back(std::move(e));
  }
  if (out.error_lines.size() > kMaxErrorLines) out.error_lines.resize(kMaxErrorLines);
  return out;
}

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

struct VllmLogParser::State {
  Parser parser;
  std::string partial;    // the line begun in an earlier chunk, not yet ended
  bool overlong = false;  // that line is past kVllmLogMaxLineBytes: skip to its end
  std::int64_t bytes_fed = 0;
  bool truncated = false;

  void carry(std::string_view piece) {
    if (overlong) return;
    if (partial.size() + piece.size() > kVllmLogMaxLineBytes) {
      overlong = true;
      std::string().swap(partial);
      return;
    }
    partial.append(piece);
  }
};

VllmLogParser::VllmLogParser() : state_(std::make_unique<State>()) {}
VllmLogParser::~VllmLogParser() = default;

bool VllmLogParser::truncated() const noexcept { return state_->truncated; }

void VllmLogParser::feed(std::string_view chunk) {
  State& s = *state_;
  if (s.truncated) return;
  const auto room = static_cast<std::uint64_t>(kVllmLogMaxBytes - s.bytes_fed);
  if (chunk.size() > room) {
    chunk = chunk.substr(0, static_cast<std::size_t>(room));
    s.truncated = true;
  }
  s.bytes_fed += static_cast<std::int64_t>(chunk.size());
  std::size_t start = 0;
  while (start < chunk.size()) {
    std::size_t end = start;
    while (end < chunk.size() && chunk[end] != '\n' && chunk[end] != '\r') ++end;
    const std::string_view piece = chunk.substr(start, end - start);
    if (end == chunk.size()) {  // the line goes on in the next chunk
      s.carry(piece);
      break;
    }
    if (s.partial.empty() && !s.overlong) {
      s.parser.line(piece);  // the common case: the whole line is in this chunk, no copy
    } else {
      s.carry(piece);
      if (!s.overlong) s.parser.line(s.partial);
      s.partial.clear();
      s.overlong = false;
    }
    start = end + 1;
  }
}

VllmLogFigures VllmLogParser::finish() {
  State& s = *state_;
  if (!s.overlong) s.parser.line(s.partial);  // the last line, without a line end
  VllmLogFigures out = s.parser.finish();
  out.truncated = s.truncated;
  return out;
}

VllmLogFigures parse_vllm_log(std::string_view text) {
  VllmLogParser parser;
  parser.feed(text);
  return parser.finish();
}

VllmLogFigures read_vllm_log_file(const std::string& path) {
  // Any size: the parser stops reading at its own cap ('truncated').
  RegularFile in(path, "log", std::numeric_limits<std::int64_t>::max());
  constexpr std::size_t kChunkBytes = 1 << 20;
  std::string chunk(kChunkBytes, '\0');
  VllmLogParser parser;
  while (!parser.truncated()) {
    const std::size_t got = in.read(chunk.data(), chunk.size());
    parser.feed(std::string_view(chunk.data(), got));
    if (got < chunk.size()) break;  // end of file
  }
  return parser.finish();
}

nlohmann::json to_json(const VllmLogFigures& f) {
  nlohmann::json j = nlohmann::json::object();
  j["vllm_version"] = opt(f.vllm_version);
  j["model"] = opt(f.model);
  j["dtype"] = opt(f.dtype);
  j["quantization"] = opt(f.quantization);
  j["kv_cache_dtype"] = opt(f.kv_cache_dtype);
  j["tensor_parallel_size"] = opt(f.tensor_parallel_size);
  j["pipeline_parallel_size"] = opt(f.pipeline_parallel_size);
  j["data_parallel_size"] = opt(f.data_parallel_size);
  j["gpu_memory_utilization"] = opt(f.gpu_memory_utilization);
  j["max_model_len"] = opt(f.max_model_len);
  j["max_num_seqs"] = opt(f.max_num_seqs);
  j["max_num_batched_tokens"] = opt(f.max_num_batched_tokens);
  j["block_size"] = opt(f.block_size);
  j["enforce_eager"] = opt(f.enforce_eager);
  j["enable_prefix_caching"] = opt(f.enable_prefix_caching);
  j["gpu_total_gib"] = opt(f.gpu_total_gib);
  j["weights_gib"] = opt(f.weights_gib);
  j["activation_peak_gib"] = opt(f.activation_peak_gib);
  j["non_torch_gib"] = opt(f.non_torch_gib);
  j["total_non_kv_gib"] = opt(f.total_non_kv_gib);
  j["kv_cache_gib"] = opt(f.kv_cache_gib);
  j["kv_tokens"] = opt(f.kv_tokens);
  j["num_gpu_blocks"] = opt(f.num_gpu_blocks);
  j["max_concurrency"] = opt(f.max_concurrency);
  j["max_concurrency_tokens"] = opt(f.max_concurrency_tokens);
  j["cudagraph_gib"] = opt(f.cudagraph_gib);
  j["cudagraph_estimate_gib"] = opt(f.cudagraph_estimate_gib);
  j["padding_layers"] = opt(f.padding_layers);
  j["model_runner_v2"] = opt(f.model_runner_v2);
  j["consumed_gib"] = opt(f.consumed_gib);
  j["suggested_kv_cache_memory_bytes"] = opt(f.suggested_kv_cache_memory_bytes);
  j["startup_free_gib"] = opt(f.startup_free_gib);
  j["startup_desired_gib"] = opt(f.startup_desired_gib);
  j["estimated_max_model_len"] = opt(f.estimated_max_model_len);
  j["needed_kv_gib"] = opt(f.needed_kv_gib);
  j["oom_tried_gib"] = opt(f.oom_tried_gib);
  j["oom_total_gib"] = opt(f.oom_total_gib);
  j["oom_free_gib"] = opt(f.oom_free_gib);
  j["outcome"] = f.outcome;
  j["error_lines"] = f.error_lines;
  j["truncated"] = f.truncated;
  j["launches"] = f.launches;
  return j;
}

}  // namespace vramplan
