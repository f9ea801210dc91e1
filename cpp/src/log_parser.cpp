// vLLM startup-log parser: a single pass over the lines, each matched against fixed phrases
// with string_view::find (no regular expressions, so no backtracking on hostile input).
#include "vramplan/log_parser.hpp"

#include <cstddef>
#include <map>
#include <set>
#include <utility>

#include "log_file.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/runtime_vocabulary.hpp"
#include "vramplan/text_scan.hpp"
#include "vramplan/utf8.hpp"
#include "vramplan/vllm_vocabulary.hpp"

namespace vramplan {
namespace {

namespace vocab = vllm_vocabulary;
namespace torch = runtime_vocabulary;

constexpr std::size_t kMaxErrorLines = 32;
constexpr std::size_t kMaxErrorLineBytes = 2000;

using text::after;
using text::after_last;
using text::contains;
using text::ends_with;
using text::is_digit;
using text::is_ident;
using text::npos;
using text::read_number;
using text::read_size;
using text::skip_spaces;
using text::starts_with;
using text::to_count;
using text::trim;

// The size after `phrase`, in GiB.
std::optional<double> gib_after(std::string_view line, std::string_view phrase) {
  const auto size = text::size_after(line, phrase);
  if (!size) return std::nullopt;
  return size->gib();
}

std::optional<double> value_after(std::string_view line, std::string_view phrase) {
  const auto n = text::number_after(line, phrase);
  if (!n) return std::nullopt;
  return n->value;
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
  const auto n = read_number(v.text, 0);
  if (!n || n->end != v.text.size()) return std::nullopt;
  return to_count(*n);
}

std::optional<int> as_small_int(const RawValue& v) {
  const auto n = as_int(v);
  if (!n || *n < 0 || *n > 1000000) return std::nullopt;
  return static_cast<int>(*n);
}

std::optional<double> as_double(const RawValue& v) {
  if (v.quoted || v.nested) return std::nullopt;
  const auto n = read_number(v.text, 0);
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
  void read_oom_sizes(std::string_view line);
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
  bool state_blocks_short_ = false;  // max_num_seqs above the Mamba state blocks
  std::optional<bool> first_oom_after_kv_;
  bool no_kv_memory_ = false;
  bool generic_failure_ = false;
  std::vector<std::string> error_lines_;
  std::vector<std::string> exception_lines_;
  std::set<std::string> seen_errors_;
};

void Parser::line(std::string_view raw) {
  if (raw.size() > kVllmLogMaxLineBytes) return;
  // Text from here on may be reported back (error lines, names): cleaned once.
  std::string cleaned;
  const std::string_view line = text::strip_process_prefix(text::clean_line(raw, cleaned));
  if (line.empty()) return;
  const std::string_view msg = text::strip_level_header(line, vocab::kLogLevels);

  // A second launch in the same file starts the parse over: its figures alone are reported.
  const bool server_line = contains(line, vocab::kApiServerVersion);
  const bool args_line = contains(line, vocab::kNonDefaultArgs);
  if ((server_line && server_seen_) || (args_line && args_seen_)) {
    const std::int32_t launches = launches_ + 1;
    *this = Parser();
    launches_ = launches;
  }
  server_seen_ |= server_line;
  args_seen_ |= args_line;
  if (contains(line, vocab::kApplicationStartupComplete) ||
      contains(line, vocab::kStartingApiServer) || contains(line, vocab::kStartingServerOn)) {
    started_ = true;
  }
  launch_line(line);
  memory_line(line);
  failure_line(line, msg);
}

void Parser::launch_line(std::string_view line) {
  // Version: the API server's line, the engine config line, or the ASCII-art banner.
  if (!f_.vllm_version) {
    std::size_t version = after(line, vocab::kApiServerVersion);
    if (version == npos) version = after(line, vocab::kLlmEngineVersion);
    if (version == npos && contains(line, vocab::kBannerGlyph)) {
      version = after(line, vocab::kBannerVersion);
    }
    if (version != npos) f_.vllm_version = version_at(line, version);
  }
  std::size_t at;
  if ((at = after(line, vocab::kNonDefaultArgs)) != npos) {
    apply_launch(parse_python_dict(line, at), args_);
  }
  if (contains(line, vocab::kLlmEngine) && (at = after(line, vocab::kWithConfig)) != npos) {
    apply_launch(parse_key_equals_list(line, at), config_);
  }
  // Effective values stated elsewhere.
  set_first(other_.max_model_len, text::count_after(line, vocab::kUsingMaxModelLen));
  set_first(other_.max_num_seqs, text::count_after(line, vocab::kDefaultingMaxNumSeqs));
  set_first(other_.max_num_batched_tokens,
            text::count_after(line, vocab::kDefaultingMaxNumBatchedTokens));
  set_first(other_.max_num_batched_tokens,
            text::count_after(line, vocab::kChunkedPrefillMaxNumBatchedTokens));
  set_first(other_.block_size, text::count_after(line, vocab::kSettingAttentionBlockSize));
  set_first(other_.gpu_memory_utilization, value_after(line, vocab::kRequestedMemory));
  set_first(other_.gpu_memory_utilization, value_after(line, vocab::kTimesGpuMemoryUtilization));
  set_first(other_.gpu_memory_utilization, value_after(line, vocab::kDesiredUtilizationIs));
  set_first(other_.gpu_memory_utilization, value_after(line, vocab::kDesiredUtilizationLower));
  if (contains(line, vocab::kMemoryProfilingResults)) {
    set_first(other_.gpu_memory_utilization, value_after(line, vocab::kGpuMemoryUtilizationEquals));
  }
  if (!other_.model && (at = after(line, vocab::kStartingToLoadModel)) != npos) {
    std::string_view name = trim(line.substr(at));
    while (!name.empty() && name.back() == '.') name.remove_suffix(1);
    if (!name.empty() && name.size() < 512 && !contains(name, " "))
      other_.model = std::string(name);
  }
}

void Parser::memory_line(std::string_view line) {
  // Device total, from whichever memory line states it first.
  set_first(f_.gpu_total_gib, gib_after(line, vocab::kTotalMemoryEquals));
  set_first(f_.gpu_total_gib, gib_after(line, vocab::kTotalGpuMemoryParen));
  set_first(f_.gpu_total_gib, gib_after(line, vocab::kTotalGpuMemoryEquals));
  set_first(f_.gpu_total_gib, gib_after(line, torch::kTotalCapacityOf));
  std::size_t at;
  if ((at = line.find(vocab::kFreeMemoryOnDevice)) != npos) {  // "(60.33/79.19 GiB)"
    const std::size_t open = after(line, "(", at);
    const std::size_t total = open == npos ? npos : after(line, "/", open);
    if (total != npos && total - open < 48) {
      if (const auto t = read_size(line, total)) set_first_value(f_.gpu_total_gib, t->gib());
      const auto free_n = read_number(line, open);
      if (free_n && free_n->end + 1 == total)
        set_first_value(f_.free_at_startup_gib, free_n->value);
    }
  }
  // Older torch OOM text: "(GPU 0; 79.15 GiB total capacity; ...)".
  if ((at = line.find(torch::kOldTotalCapacity)) != npos) {
    const std::size_t semi = after_last(line, ";", at);
    const std::size_t start = semi == npos ? after_last(line, "(", at) : semi;
    if (start != npos && at - start < 47) {
      const auto sz = read_size(line, start);
      if (sz && sz->end == at) set_first_value(f_.gpu_total_gib, sz->gib());
    }
  }

  // Weights.
  set_first(f_.weights_gib, gib_after(line, vocab::kModelLoadingTook));
  set_first(f_.weights_gib, gib_after(line, vocab::kLoadingModelWeightsTook));
  set_first(f_.weights_gib, gib_after(line, vocab::kModelWeightsTake));
  // Profile.
  set_first(f_.activation_peak_gib, gib_after(line, vocab::kTorchPeakMemoryIncrease));
  if ((at = after(line, vocab::kPytorchActivationPeakMemory)) != npos) {
    std::size_t p = skip_spaces(line, at);
    if (starts_with(line.substr(p), vocab::kTakes)) p += vocab::kTakes.size();
    const auto sz = read_size(line, p);
    if (sz) set_first_value(f_.activation_peak_gib, sz->gib());
  }
  set_first(f_.non_torch_gib, gib_after(line, vocab::kNonTorchForwardIncrease));
  set_first(f_.non_torch_gib, gib_after(line, vocab::kNonTorchMemoryTakes));
  set_first(f_.total_non_kv_gib, gib_after(line, vocab::kTotalNonKvCacheMemory));
  if (contains(line, vocab::kMemoryProfilingResults)) {  // V0, late 2024
    set_first(f_.non_torch_gib, gib_after(line, vocab::kNonTorchMemoryEquals));
    set_first(f_.kv_cache_gib, gib_after(line, vocab::kKvCacheSizeEquals));
  }
  // KV cache.
  set_first(f_.kv_cache_gib, gib_after(line, vocab::kAvailableKvCacheMemory));
  set_first(f_.kv_cache_gib, gib_after(line, vocab::kRestReservedForKvCache));
  set_first(f_.kv_tokens, text::count_after(line, vocab::kGpuKvCacheSize));
  set_first(f_.num_gpu_blocks, text::count_after(line, vocab::kGpuBlocks));
  set_first(f_.num_gpu_blocks, text::count_after(line, vocab::kCudaBlocks));
  set_first(f_.num_gpu_blocks, text::count_after(line, vocab::kCudaBlocksLower));
  if (!f_.max_concurrency && (at = after(line, vocab::kMaximumConcurrencyFor)) != npos) {
    const auto tokens = read_number(line, at);
    if (tokens) {
      const std::size_t ratio = after(line, vocab::kPerRequest, tokens->end);
      if (ratio != npos && ratio - tokens->end < 32 + vocab::kPerRequest.size()) {
        const auto x = read_number(line, ratio);
        if (x) {
          f_.max_concurrency = x->value;
          f_.max_concurrency_tokens = to_count(*tokens);
        }
      }
    }
  }
  // "Add 3 padding layers, may waste at most 10.00% KV cache memory".
  if (!f_.padding_layers && (at = line.find(vocab::kPaddingLayers)) != npos) {
    const auto n = text::read_number_before(line, at);
    const std::size_t digits_begin = after_last(line, vocab::kAdd, at);
    if (n && n->integral && digits_begin != npos && at - digits_begin <= text::kMaxNumberChars) {
      f_.padding_layers = to_count(*n);
    }
  }
  // CUDA graphs. Model Runner V2 (0.29+) estimates by capturing before the KV budget: a
  // capture it logs before the KV cache is sized is that estimate, not the real capture.
  if ((at = line.find(vocab::kGraphCapturingFinishedIn)) != npos) {
    const auto taken = gib_after(line.substr(at), vocab::kCommaTook);
    if (f_.model_runner_v2 && !kv_seen()) {
      set_first(f_.cudagraph_estimate_gib, taken);
    } else {
      set_first(f_.cudagraph_gib, taken);
    }
  }
  set_first(f_.cudagraph_estimate_gib, gib_after(line, vocab::kEstimatedCudaGraphMemory));
  // vLLM 0.27+ lines.
  if (contains(line, vocab::kUsingV2ModelRunner)) f_.model_runner_v2 = true;
  if (contains(line, vocab::kUsingFlashInferSampling)) f_.flashinfer_sampler = true;
  if (contains(line, vocab::kNativeSamplingFallback)) f_.flashinfer_sampler = false;
  if ((at = line.find(vocab::kGibForConsumedMemory)) != npos) {
    if (const auto consumed = text::read_number_before(line, at)) {
      set_first_value(f_.consumed_gib, consumed->value);
    }
    const std::size_t flag = after(line, vocab::kKvCacheMemoryFlag, at);
    if (flag != npos && !f_.suggested_kv_cache_memory_bytes) {
      const auto bytes = read_number(line, flag);
      if (bytes && bytes->integral) f_.suggested_kv_cache_memory_bytes = to_count(*bytes);
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
  // startup is less than desired GPU memory utilization (0.95, 75.23 GiB)."; 0.10.2 leaves the
  // device out ("on device (16.01/93.0 GiB)"): the figures follow the first "(".
  if ((at = line.find(vocab::kFreeMemoryOnDevice)) != npos &&
      contains(line, vocab::kIsLessThanDesired)) {
    failure = true;
    if (!started_) startup_free_fail_ = true;
    const std::size_t free_at = after(line, "(", at);
    if (free_at != npos && !f_.startup_free_gib) {
      const auto free_n = read_number(line, free_at);
      if (free_n) f_.startup_free_gib = free_n->value;
    }
    const std::size_t util = after(line, vocab::kUtilizationOpen, at);
    if (util != npos && !f_.startup_desired_gib) {
      const auto u = read_number(line, util);
      if (u && starts_with(line.substr(u->end), ",")) {
        const auto r = read_size(line, after(line, ",", u->end));
        if (r) f_.startup_desired_gib = r->gib();
      }
    }
  }

  // Not enough KV cache for one max_model_len request (V1).
  if ((at = line.find(vocab::kGibKvCacheIsNeeded)) != npos) {
    failure = true;
    if (!started_) insufficient_ = true;
    if (const auto needed = text::read_number_before(line, at))
      set_first_value(f_.needed_kv_gib, needed->value);
    set_first(f_.estimated_max_model_len,
              text::count_after(line, vocab::kEstimatedMaximumModelLength));
    set_first(other_.max_model_len, text::count_after(line, vocab::kMaxSeqLenOpen));
  }
  // Mamba / linear-attention state: one block per decode sequence (0.20+).
  if (contains(line, vocab::kExceedsAvailableMambaCacheBlocks)) {
    failure = true;
    if (!started_) state_blocks_short_ = true;
    set_first(f_.state_blocks, text::count_after(line, vocab::kExceedsAvailableMambaCacheBlocks));
    set_first(other_.max_num_seqs, text::count_after(line, vocab::kMaxNumSeqsOpen));
  }
  // ... and its V0 form.
  if (contains(line, vocab::kLargerThanKvTokens)) {
    failure = true;
    if (!started_) insufficient_ = true;
    set_first(other_.max_model_len, text::count_after(line, vocab::kMaxSeqLenOpen));
  }

  // CUDA out of memory (torch allocator), and vLLM's rewrap of it at sampler warm-up.
  if (contains(line, torch::kCudaOutOfMemory) || contains(line, torch::kOutOfMemoryError)) {
    failure = true;
    if (!started_ && !first_oom_after_kv_) first_oom_after_kv_ = kv_seen();
    if (!f_.oom_tried_gib) read_oom_sizes(line);
  }

  // No room at all for KV blocks (V1), or a negative KV budget printed before it.
  if (contains(line, vocab::kNoAvailableMemoryForCacheBlocks)) {
    failure = true;
    if (!started_) no_kv_memory_ = true;
  }
  if (const auto kv = text::size_after(line, vocab::kAvailableKvCacheMemory); kv && kv->bytes < 0) {
    failure = true;
    if (!started_) no_kv_memory_ = true;
  }

  if (failure) {
    add_error(msg, error_lines_);
    return;
  }
  if (started_) return;
  if (contains(line, vocab::kEngineCoreFailedToStart) ||
      contains(line, vocab::kEngineCoreInitializationFailed) ||
      contains(line, vocab::kWorkerProcFailedToStart)) {
    generic_failure_ = true;
  }
  if (is_exception_line(msg)) {
    generic_failure_ = true;
    add_error(msg, exception_lines_);
  }
}

// "Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 22.05 GiB of which 100.00 MiB is
// free", or older torch's "(GPU 0; 79.15 GiB total capacity; 10.81 MiB free; ...)".
void Parser::read_oom_sizes(std::string_view line) {
  const auto tried = text::size_after(line, torch::kTriedToAllocate);
  if (!tried) return;
  f_.oom_tried_gib = tried->gib();
  set_first(f_.oom_total_gib, gib_after(line, torch::kTotalCapacityOf));
  set_first(f_.oom_free_gib, gib_after(line, torch::kOfWhich));
  if (!f_.oom_total_gib) {
    const std::size_t cap = line.find(torch::kOldTotalCapacity);
    const std::size_t semi = cap == npos ? npos : after_last(line, ";", cap);
    if (semi != npos && cap - semi < 47) {
      const auto sz = read_size(line, semi);
      if (sz) f_.oom_total_gib = sz->gib();
    }
  }
  if (!f_.oom_free_gib) {
    const std::size_t fr = line.find(torch::kOldFree);
    const std::size_t semi = fr == npos ? npos : after_last(line, ";", fr);
    if (semi != npos && fr - semi < 47) {
      const auto sz = read_size(line, semi);
      if (sz && sz->end == fr) f_.oom_free_gib = sz->gib();
    }
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
  } else if (state_blocks_short_) {
    out.outcome = "state_blocks_below_max_num_seqs";
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

}  // namespace

template <>
struct LogReader<VllmLogFigures> {
  Parser parser;
  LogLines lines{kVllmLogMaxBytes, kVllmLogMaxLineBytes};

  void feed(std::string_view chunk) {
    lines.feed(chunk, [this](std::string_view l) { parser.line(l); });
  }

  VllmLogFigures finish() {
    lines.finish([this](std::string_view l) { parser.line(l); });
    VllmLogFigures out = parser.finish();
    out.truncated = lines.truncated();
    return out;
  }
};

template class StreamingLogParser<VllmLogFigures>;

VllmLogFigures parse_vllm_log(std::string_view text) { return parse_log_text<VllmLogParser>(text); }

VllmLogFigures read_vllm_log_file(const std::string& path) {
  return read_log_file<VllmLogParser>(path);
}

nlohmann::json to_json(const VllmLogFigures& f) {
  nlohmann::json j = nlohmann::json::object();
  j["vllm_version"] = optional_json(f.vllm_version);
  j["model"] = optional_json(f.model);
  j["dtype"] = optional_json(f.dtype);
  j["quantization"] = optional_json(f.quantization);
  j["kv_cache_dtype"] = optional_json(f.kv_cache_dtype);
  j["tensor_parallel_size"] = optional_json(f.tensor_parallel_size);
  j["pipeline_parallel_size"] = optional_json(f.pipeline_parallel_size);
  j["data_parallel_size"] = optional_json(f.data_parallel_size);
  j["gpu_memory_utilization"] = optional_json(f.gpu_memory_utilization);
  j["max_model_len"] = optional_json(f.max_model_len);
  j["max_num_seqs"] = optional_json(f.max_num_seqs);
  j["max_num_batched_tokens"] = optional_json(f.max_num_batched_tokens);
  j["block_size"] = optional_json(f.block_size);
  j["enforce_eager"] = optional_json(f.enforce_eager);
  j["enable_prefix_caching"] = optional_json(f.enable_prefix_caching);
  j["gpu_total_gib"] = optional_json(f.gpu_total_gib);
  j["weights_gib"] = optional_json(f.weights_gib);
  j["activation_peak_gib"] = optional_json(f.activation_peak_gib);
  j["non_torch_gib"] = optional_json(f.non_torch_gib);
  j["total_non_kv_gib"] = optional_json(f.total_non_kv_gib);
  j["kv_cache_gib"] = optional_json(f.kv_cache_gib);
  j["kv_tokens"] = optional_json(f.kv_tokens);
  j["num_gpu_blocks"] = optional_json(f.num_gpu_blocks);
  j["max_concurrency"] = optional_json(f.max_concurrency);
  j["max_concurrency_tokens"] = optional_json(f.max_concurrency_tokens);
  j["cudagraph_gib"] = optional_json(f.cudagraph_gib);
  j["cudagraph_estimate_gib"] = optional_json(f.cudagraph_estimate_gib);
  j["padding_layers"] = optional_json(f.padding_layers);
  j["model_runner_v2"] = optional_json(f.model_runner_v2);
  j["flashinfer_sampler"] = optional_json(f.flashinfer_sampler);
  j["consumed_gib"] = optional_json(f.consumed_gib);
  j["suggested_kv_cache_memory_bytes"] = optional_json(f.suggested_kv_cache_memory_bytes);
  j["startup_free_gib"] = optional_json(f.startup_free_gib);
  j["startup_desired_gib"] = optional_json(f.startup_desired_gib);
  j["free_at_startup_gib"] = optional_json(f.free_at_startup_gib);
  j["estimated_max_model_len"] = optional_json(f.estimated_max_model_len);
  j["needed_kv_gib"] = optional_json(f.needed_kv_gib);
  j["oom_tried_gib"] = optional_json(f.oom_tried_gib);
  j["oom_total_gib"] = optional_json(f.oom_total_gib);
  j["oom_free_gib"] = optional_json(f.oom_free_gib);
  put_log_ending(j, f);
  return j;
}

}  // namespace vramplan
